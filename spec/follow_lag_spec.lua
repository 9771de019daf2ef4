--- The follower's lag (issue #15): moraine.follow_state (the state file a
-- `moraine sync --follow` writes beside the catalog, atomically), and
-- moraine.http answering it under real nginx as `X-Moraine-Lag` and in
-- `/health` while a real follower process syncs a SQLite source that grows,
-- fails (the source taken away) and recovers.
local moraine = require "moraine"
local sqlite = require "moraine.sqlite"
local follow_state = require "moraine.follow_state"
local support = require "support"

local BUILD = os.getenv("MORAINE_BUILD") or "build"
local sh, q = support.sh, support.q

describe("moraine.follow_state", function()
  teardown(function() support.cleanup() end)

  it("writes the state whole through a renamed temporary file, reads it back, and computes the lag", function()
    local dir = support.tmpdir("state")
    support.mkdir(dir)
    assert.is_nil((follow_state.read(dir)))
    follow_state.write(dir, { source_kind = "sqlite", last_snapshot = 7, source_newest = 9, as_of = 1000.5,
      last_success = 1001, last_round = 1001, failing = false, interval = 1 })
    local st = follow_state.read(dir)
    assert.are.equal(1, st.version)
    assert.are.equal(7, st.last_snapshot)
    assert.are.equal(9, st.source_newest)
    assert.is_false(st.failing)
    assert.is_nil(st.error)
    local snaps, secs = follow_state.lag(st, nil, 1003)
    assert.are.equal(2, snaps)
    assert.are.equal(2.5, secs)
    snaps = follow_state.lag(st, 9, 1003) -- the reader's own last snapshot counts
    assert.are.equal(0, snaps)
    -- no temporary file is left behind
    local p = io.popen("ls -A " .. q(dir))
    local names = p:read("a")
    p:close()
    assert.are.equal("moraine-follow.json\n", names)
    -- a state written over another is the new one, whole
    follow_state.write(dir, { last_snapshot = 9, failing = true, error = "EIO: gone" })
    st = follow_state.read(dir)
    assert.is_true(st.failing)
    assert.are.equal("EIO: gone", st.error)
    assert.is_nil(st.as_of)
    assert.is_nil((follow_state.lag(st, nil, 5)))
    -- a directory that cannot be written: EIO, the old state kept
    support.expect_err("EIO", "cannot write", follow_state.write, dir .. "/missing", { last_snapshot = 1 })
    assert.are.equal(9, follow_state.read(dir).last_snapshot)
    -- a state file that is there but damaged (a follower ran): a failing state whose error says so, lag unknown
    for _, text in ipairs({ "", '{"last_snap', "[1]" }) do
      support.write(dir .. "/moraine-follow.json", text)
      st = follow_state.read(dir)
      assert.is_true(st.failing, text)
      assert.truthy(st.error:find("follower state unreadable", 1, true), st.error)
      assert.is_nil((follow_state.lag(st, 3, 1000)))
    end
    -- now() is wall-clock time
    assert.is_true(math.abs(follow_state.now() - os.time()) < 2)
  end)
end)

local function have_nginx()
  return sh("command -v nginx >/dev/null 2>&1") and sh("test -e /usr/lib/nginx/modules/ngx_http_lua_module.so || nginx -V 2>&1 | grep -q lua")
end

-- GET @path; returns status, headers (lower-case names), body text.
local function get(port, path)
  local h, b = support.tmpdir("headers"), support.tmpdir("body")
  support.write(h, "")
  support.write(b, "")
  local p = io.popen(("env -u LD_PRELOAD curl -s -m 10 -D %s -o %s -w '%%{http_code}' 'http://127.0.0.1:%d%s'"):format(h,
    b, port, path))
  local code = tonumber(p:read("a"))
  p:close()
  local headers = {}
  for line in io.lines(h) do
    local k, v = line:match("^([^:]+):%s*(.-)%s*$")
    if k then headers[k:lower()] = v end
  end
  local body = support.read(b)
  os.remove(h)
  os.remove(b)
  return code, headers, body
end

local moraine_cmd = support.moraine_cmd

-- /health's document once @pred(doc) holds (20 s at most), or the last one
local function health_until(port, pred)
  local t0, doc = moraine.clock(), nil
  repeat
    local code, _, body = get(port, "/health")
    if code == 200 then
      doc = moraine.json_decode(body)
      if pred(doc) then return doc, true end
    end
    sh("sleep 0.1")
  until moraine.clock() - t0 > 20
  return doc, false
end

describe("moraine.http answers the follower's lag", function()
  if not have_nginx() then
    pending("nginx with the Lua module is not installed: apt-get install nginx-light libnginx-mod-http-lua")
    return
  end
  local prefix, port, follower_pid, catalog, src, con, env

  setup(function()
    local root = support.tmpdir("lag")
    support.mkdir(root)
    catalog = root .. "/catalog"
    src = root .. "/source.sqlite"
    local ref = support.import_fixture("s2_multi_table")
    sqlite.export_sqlite(ref, src)
    ref:close()
    assert(sh(moraine_cmd({ "-c", catalog, "sync", src }) .. " >/dev/null"), "the first sync failed")
    prefix, port = support.serve_catalog(catalog, BUILD)
    env = require("luasql.sqlite3").sqlite3()
    con = assert(env:connect(src))
    -- the follower's read transactions hold SQLite's shared lock for a moment each round
    local cur = assert(con:execute("PRAGMA busy_timeout = 10000"))
    if type(cur) == "userdata" then cur:close() end
  end)

  teardown(function()
    if follower_pid then sh("kill " .. follower_pid .. " 2>/dev/null") end
    if con then con:close() end
    if env then env:close() end
    support.stop_serving(prefix)
    support.cleanup()
  end)

  it("without a follower: no X-Moraine-Lag, /health as before", function()
    local code, headers, body = get(port, "/tables")
    assert.are.equal(200, code, body)
    assert.is_nil(headers["x-moraine-lag"])
    code, headers, body = get(port, "/health")
    assert.are.equal(200, code)
    assert.are.equal('{"status":"ok","last_snapshot":25}\n', body)
    assert.is_nil(headers["x-moraine-lag"])
  end)

  it("with a follower: lag 0 when caught up, the new snapshot followed, failing rounds reported, recovery",
    function()
      local dir = support.tmpdir("follower")
      support.mkdir(dir)
      local p = io.popen("sh -c " .. q(moraine_cmd({ "-c", catalog, "sync", src, "--follow", "--interval", "100ms" })
        .. " >" .. q(dir .. "/out") .. " 2>" .. q(dir .. "/err") .. " </dev/null & echo $!"))
      follower_pid = tonumber(p:read("l"))
      p:close()
      local doc, ok = health_until(port, function(d) return d.source_newest == 25 end)
      assert.is_true(ok, "no follower state: " .. moraine.json_encode(doc))
      assert.are.equal("ok", doc.status)
      assert.are.equal(25, doc.last_snapshot)
      assert.are.equal(0, doc.lag_snapshots)
      assert.is_false(doc.failing)
      assert.is_true(doc.lag_seconds >= 0 and doc.lag_seconds < 10, tostring(doc.lag_seconds))
      assert.is_true(math.abs(doc.last_success - os.time()) < 10)
      local code, headers = get(port, "/tables")
      assert.are.equal(200, code)
      local n, s = (headers["x-moraine-lag"] or ""):match("^snapshots=(%d+); seconds=([%d%.]+)$")
      assert.are.equal("0", n, tostring(headers["x-moraine-lag"]))
      assert.is_true(tonumber(s) < 10)

      -- a new snapshot at the source: the follower replays it, the lag is 0 again
      local cur = con:execute("SELECT schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot "
        .. "ORDER BY snapshot_id DESC LIMIT 1")
      local last = cur:fetch({}, "n")
      cur:close()
      assert(con:execute("BEGIN IMMEDIATE"))
      assert(con:execute(string.format("INSERT INTO ducklake_snapshot VALUES (26, '2026-12-01 00:00:00+00', %s, %s, %s)",
        last[1], last[2], last[3])))
      assert(con:execute("INSERT INTO ducklake_snapshot_changes VALUES (26, 'created_schema:\"s26\"', NULL, NULL, NULL)"))
      assert(con:execute("COMMIT"))
      doc, ok = health_until(port, function(d) return d.last_snapshot == 26 and d.source_newest == 26 end)
      assert.is_true(ok, moraine.json_encode(doc))
      assert.are.equal(0, doc.lag_snapshots)
      assert.is_true(sh("grep -q 'last snapshot 26,.*behind the source: 0 snapshots' " .. q(dir .. "/out")),
        support.read(dir .. "/out"))

      -- the source taken away: rounds fail, /health and the header say so, the seconds grow
      assert(os.rename(src, src .. ".away"))
      doc, ok = health_until(port, function(d) return d.failing == true end)
      assert.is_true(ok, moraine.json_encode(doc))
      assert.are.equal("failing", doc.status)
      assert.truthy(doc.error:find("EIO", 1, true), doc.error)
      assert.are.equal(26, doc.last_snapshot)
      local first = doc.lag_seconds
      sh("sleep 0.6")
      doc = health_until(port, function() return true end)
      assert.is_true(doc.lag_seconds > first, doc.lag_seconds .. " <= " .. first)
      code, headers = get(port, "/snapshots")
      assert.are.equal(200, code)
      assert.truthy((headers["x-moraine-lag"] or ""):find("; failing$"), tostring(headers["x-moraine-lag"]))
      assert.truthy(support.read(dir .. "/err"):find("EIO", 1, true))

      -- back: the next round succeeds
      assert(os.rename(src .. ".away", src))
      doc, ok = health_until(port, function(d) return d.failing == false end)
      assert.is_true(ok, moraine.json_encode(doc))
      assert.are.equal("ok", doc.status)
      assert.is_true(doc.lag_seconds < first + 5)
      sh("kill " .. follower_pid)
      follower_pid = nil
    end)
end)
