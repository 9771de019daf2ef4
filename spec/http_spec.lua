--- moraine.http under real nginx (2 workers) while a separate process commits
-- verb snapshots in a loop: every response is one whole snapshot, the file
-- list and spec agree with what the catalog held at the snapshot the response
-- names, revalidation works, bad requests get 400/404 JSON, and nothing errors.
-- Pending (with the reason printed) only when nginx is not installed;
-- .ci/run installs it (scripts/install-deps.sh).
local moraine = require "moraine"
local support = require "support"

local BUILD = os.getenv("MORAINE_BUILD") or "build"
local WRITER = BUILD .. "/tests/crash_writer"

local sh = support.sh

local function have_nginx()
  return sh("command -v nginx >/dev/null 2>&1") and sh("test -e /usr/lib/nginx/modules/ngx_http_lua_module.so || nginx -V 2>&1 | grep -q lua")
end

-- GET @path; returns status, headers (lower-case names), body text.
local function get(port, path, extra)
  local h, b = support.tmpdir("headers"), support.tmpdir("body")
  support.write(h, "")   -- curl writes no body file for a 304
  support.write(b, "")
  -- curl must not inherit the ASan runtime preloaded for the interpreter (make asan): it hangs
  local p = io.popen(("env -u LD_PRELOAD curl -s -m 10 %s -D %s -o %s -w '%%{http_code}' 'http://127.0.0.1:%d%s'"):format(extra or "", h, b, port, path))
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

-- The spec the writer (tests/crash/writer.c) has live at snapshot s: it sets
-- one at every multiple of 7, identity on odd multiples, bucket(4) on even.
local function writer_transform(s)
  if s < 7 then return nil end
  local m = s - s % 7
  return m % 2 == 1 and "identity" or "bucket(4)"
end

describe("moraine.http under nginx with a concurrent writer", function()
  if not have_nginx() then
    pending("nginx with the Lua module is not installed: apt-get install nginx-light libnginx-mod-http-lua")
    return
  end
  local prefix, port, writer_pid, catalog

  setup(function()
    assert(sh("test -x " .. WRITER), WRITER .. " is missing: run make")
    local root = support.tmpdir("http")
    support.mkdir(root)
    catalog = root .. "/catalog"
    assert(sh(WRITER .. " " .. catalog .. " 20 > /dev/null"), "the writer could not create the catalog")
    port = 20000 + math.random(0, 9999)
    local p = io.popen(("MORAINE_BUILD=%s sh examples/openresty/serve.sh %s %d 2>&1"):format(BUILD, catalog, port))
    local out = p:read("a")
    p:close()
    prefix = out:match("prefix ([^%)]+)%)")
    assert(prefix, "nginx did not start: " .. out)
    -- the writer commits a snapshot every 20 ms or so, each adding one file
    local pp = io.popen(("sh -c '%s %s -1 20 > /dev/null 2>&1 & echo $!'"):format(WRITER, catalog))
    writer_pid = tonumber(pp:read("l"))
    pp:close()
    -- wait for the workers to answer
    for _ = 1, 50 do
      if get(port, "/snapshots") == 200 then break end
      sh("sleep 0.1")
    end
  end)

  teardown(function()
    if writer_pid then sh("kill -9 " .. writer_pid .. " 2>/dev/null") end
    support.stop_serving(prefix)
    support.cleanup()
  end)

  it("answers every request with one whole snapshot while snapshots are committed", function()
    local seen, checked = {}, 0
    for i = 1, 120 do
      local path = i % 2 == 0 and "/tables/t/files" or "/tables/t"
      local code, headers, body = get(port, path)
      assert.equal(200, code, body)
      local doc = moraine.json_decode(body)
      local s = doc.snapshot
      assert.equal(tostring(s), headers["x-moraine-snapshot"])
      assert.equal('"' .. tostring(s) .. '"', headers["etag"])
      seen[s] = true
      local want = writer_transform(s)
      local spec = doc.partition_spec
      if want then
        assert.equal(want, spec.keys[1].transform, "spec at snapshot " .. s)
      else
        assert(spec == moraine.null or spec == nil, "no spec before snapshot 7, got one at " .. s)
      end
      if path == "/tables/t/files" then
        -- the writer adds one file per snapshot: s - 1 files at s
        assert.equal(s - 1, doc.file_count, "file count at snapshot " .. s)
        assert.equal(s - 1, #doc.files)
        for _, f in ipairs(doc.files) do
          assert.equal(f.partition_id == moraine.null and 0 or 1, #f.partition_values, "file " .. tostring(f.data_file_id))
          assert(f.begin_snapshot <= s and (f.end_snapshot == moraine.null or s < f.end_snapshot))
        end
      end
      checked = checked + 1
    end
    local n = 0
    for _ in pairs(seen) do n = n + 1 end
    assert.equal(120, checked)
    assert(n >= 2, "the writer committed nothing during the requests (" .. n .. " snapshot seen)")
  end)

  it("serves under a location prefix given with a trailing '/' (the example's /lake/), whole segments only", function()
    local code, _, body = get(port, "/lake/health")
    assert.equal(200, code, body)
    assert.equal("ok", moraine.json_decode(body).status)
    code, _, body = get(port, "/lake/tables/t?at=5")
    assert.equal(200, code, body)
    assert.equal(5, moraine.json_decode(body).snapshot)
    code, _, body = get(port, "/lake/")
    assert.equal(200, code, body)
    assert.truthy(body:find('"path":"/lake/health"', 1, true), body)
    code, _, body = get(port, "/lake/nope")
    assert.equal(404, code, body)
    assert.truthy(body:find("no such path: /lake/nope (GET /lake/ lists the endpoints", 1, true), body)
    -- whole segments: /lakes/... is not under /lake (it falls to the root location, which has no such path)
    code, _, body = get(port, "/lakes/health")
    assert.equal(404, code, body)
  end)

  it("revalidates with ETag: 304 for the snapshot asked, 200 for another", function()
    local code, headers = get(port, "/tables/t/files?at=5")
    assert.equal(200, code)
    local etag = headers["etag"]
    assert.equal('"5"', etag)
    assert.equal(304, (get(port, "/tables/t/files?at=5", "-H 'If-None-Match: " .. etag .. "'")))
    assert.equal(304, (get(port, "/tables/t?at=5", "-H 'If-None-Match: " .. etag .. "'")))
    assert.equal(200, (get(port, "/tables/t/files?at=6", "-H 'If-None-Match: " .. etag .. "'")))
  end)

  it("answers the other endpoints: snapshots, tables, history with the mixed layout", function()
    local code, _, body = get(port, "/snapshots?at=10")
    assert.equal(200, code)
    local doc = moraine.json_decode(body)
    assert.equal(11, #doc.snapshots)
    code, _, body = get(port, "/tables?at=10")
    assert.equal(200, code)
    doc = moraine.json_decode(body)
    assert.equal("t", doc.tables[1].table)
    code, _, body = get(port, "/tables/main.t/history?at=15")
    assert.equal(200, code)
    doc = moraine.json_decode(body)
    assert.equal(2, #doc.partition_specs) -- set at 7 and 14
    local files = 0
    for _, l in ipairs(doc.mixed_layout) do files = files + l.files end
    assert.equal(14, files)
    -- files, rows and bytes under each spec, as the row-at-a-time read sums them
    local db = moraine.open(catalog, { read_only = true })
    local want = {}
    db:read(function(rd)
      for f in rd:files(rd:table_id("main", "t", 15), 15) do
        local k = f.partition_id == moraine.null and "null" or tostring(f.partition_id)
        want[k] = want[k] or { files = 0, rows = 0, bytes = 0 }
        local w = want[k]
        w.files, w.rows, w.bytes = w.files + 1, w.rows + tonumber(f.record_count), w.bytes + tonumber(f.file_size_bytes)
      end
    end)
    db:close()
    local got = {}
    for _, l in ipairs(doc.mixed_layout) do
      local k = l.partition_id == moraine.null and "null" or tostring(l.partition_id)
      got[k] = { files = tonumber(l.files), rows = tonumber(l.rows), bytes = tonumber(l.bytes) }
    end
    assert.are.same(want, got)
  end)

  it("draws the spec history and clustering of a table as SVG, at a snapshot, with its ETag", function()
    local code, headers, body = get(port, "/tables/main.t/history.svg?at=15")
    assert.equal(200, code, body)
    assert.equal("image/svg+xml", headers["content-type"])
    assert.equal("15", headers["x-moraine-snapshot"])
    assert.equal('"15"', headers["etag"])
    -- the writer set a spec at 7 and at 14, both begun by 15: one bar each, the one of 14 live
    assert.is_truthy(body:find(">7–14<", 1, true), body)
    assert.is_truthy(body:find(">14–live<", 1, true), body)
    assert.equal(304, (get(port, "/tables/t/history.svg?at=15", "-H 'If-None-Match: \"15\"'")))
    code, headers, body = get(port, "/tables/t/clustering.svg?at=15&share=0.1")
    assert.equal(200, code, body)
    assert.equal("image/svg+xml", headers["content-type"])
    assert.is_truthy(body:find("s = 0.1 of", 1, true), body)
    code, headers, body = get(port, "/tables/nope/history.svg")
    assert.equal("application/json", headers["content-type"])
    assert.equal(404, code)
    assert.is_truthy(moraine.json_decode(body).error:find("nope", 1, true))
    assert.equal(400, (get(port, "/tables/t/clustering.svg?share=abc")))
    assert.equal(400, (get(port, "/tables/t/history.svg?at=abc")))
    assert.equal(404, (get(port, "/tables/t/other.svg")))
  end)

  it("refuses bad requests with a JSON error: unknown table or snapshot 404, malformed parameter 400", function()
    local code, _, body = get(port, "/tables/nope/files")
    assert.equal(404, code)
    assert.is_truthy(moraine.json_decode(body).error:find("nope", 1, true))
    code = get(port, "/tables/t/files?at=99999999")
    assert.equal(404, code)
    code, _, body = get(port, "/tables/t/files?at=abc")
    assert.equal(400, code)
    assert.equal(400, moraine.json_decode(body).status)
    code, _, body = get(port, "/nowhere")
    assert.equal(404, code)
    assert.is_truthy(moraine.json_decode(body).error:find("/nowhere", 1, true), body)
    -- bytes that are not UTF-8 in a table name: a JSON 400, never a 500 or a Lua error (issue 12)
    for _, path in ipairs({ "/tables/%ff%fe/files", "/tables/%ff%fe", "/tables/a%c3/history", "/%ff" }) do
      code, _, body = get(port, path)
      assert.equal(400, code, path .. ": " .. tostring(body))
      local doc = moraine.json_decode(body)
      assert.equal(400, doc.status, path)
      assert.is_truthy(doc.error:find("UTF-8", 1, true), path)
    end
  end)

  it("answers GET / (with or without the trailing slash) with a JSON index of its endpoints", function()
    for _, path in ipairs({ "/", "" }) do
      local code, headers, body = get(port, path)
      assert.equal(200, code, body)
      assert.equal("application/json", headers["content-type"])
      local doc = moraine.json_decode(body)
      assert.equal("moraine.http", doc.service)
      assert.equal(tostring(doc.snapshot), headers["x-moraine-snapshot"])
      local paths = {}
      for _, e in ipairs(doc.endpoints) do
        paths[#paths + 1] = e.path
        assert.equal("GET", e.method)
        assert.is_truthy(#e.answer > 10, e.path)
      end
      -- examples/openresty serves at location / (no prefix)
      assert.same({ "/", "/snapshots", "/tables", "/tables/NAME", "/tables/NAME/files", "/tables/NAME/history",
        "/tables/NAME/history.svg", "/tables/NAME/clustering.svg", "/health" }, paths)
      -- every listed endpoint (NAME as the writer's table t) answers 200 with JSON, or an SVG picture
      for _, p in ipairs(paths) do
        local rel = p:gsub("NAME", "t")
        local c, h, b = get(port, rel)
        assert.equal(200, c, rel)
        if rel:match("%.svg$") then
          assert.equal("image/svg+xml", h["content-type"], rel)
          assert.is_truthy(b:match("^<%?xml") and b:find("</svg>", 1, true), rel)
        else
          assert.equal("table", type(moraine.json_decode(b)), rel)
        end
      end
    end
  end)

  it("logged no error in the workers", function()
    local log = support.read(prefix .. "/logs/error.log")
    assert.is_falsy(log:find("%[error%]") or log:find("%[crit%]") or log:find("%[alert%]"), log)
  end)
end)

describe("moraine.http on a catalog with a NULL record_count", function()
  if not have_nginx() then
    pending("nginx with its Lua module is not installed")
    return
  end
  local prefix, port
  setup(function()
    local root = support.tmpdir("http-null")
    support.mkdir(root)
    local src = root .. "/src"
    assert(sh("cp -r " .. support.q(support.FIXTURES .. "/s1_evolution/catalog") .. " " .. support.q(src)))
    local path = src .. "/ducklake_data_file.ndjson"
    local text = support.read(path)
    support.write(path, (text:gsub('"record_count":%d+', '"record_count":null', 1)))
    local catalog = root .. "/catalog"
    local db = moraine.open(catalog, { no_sync = true })
    db:import_ndjson(src)
    db:close()
    prefix, port = support.serve_catalog(catalog, BUILD)
  end)
  teardown(function()
    support.stop_serving(prefix)
    support.cleanup()
  end)

  it("answers the history with that group's rows NULL (unknown), as moraine history does, not 500", function()
    local code, _, body = get(port, "/tables/events/history")
    assert.equal(200, code, body)
    local doc = moraine.json_decode(body)
    local nulls = 0
    for _, g in ipairs(doc.mixed_layout) do if g.rows == moraine.null then nulls = nulls + 1 end end
    assert.equal(1, nulls, body)
  end)
end)
