--- moraine.http's access control and redaction under real nginx (2 workers
-- each), over the real encrypted catalog (tests/fixtures/ducklake/s4_encrypted):
-- one server with an access policy (a JSON file of SHA-256 token hashes made
-- by `moraine token-hash`), one without. Every endpoint is asked with no
-- token, a wrong token, a malformed header, a token scoped to another table, a
-- token without `keys`, a token with `keys` (on the token, and on a scope);
-- no answer carries a key of the fixture except the files of a `keys` token,
-- which carry each file's own key exactly. Pending only when nginx with the
-- Lua module is not installed (scripts/install-deps.sh installs it).
local moraine = require "moraine"
local support = require "support"

local BUILD = os.getenv("MORAINE_BUILD") or "build"
local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"
local S4 = support.FIXTURES .. "/s4_encrypted/catalog"

local function sh(cmd)
  local ok = os.execute(cmd)
  return ok == true or ok == 0
end

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function have_nginx()
  return sh("command -v nginx >/dev/null 2>&1") and sh("test -e /usr/lib/nginx/modules/ngx_http_lua_module.so || nginx -V 2>&1 | grep -q lua")
end

-- GET @path with an optional Authorization header; returns status, headers (lower-case names), body.
local function get(port, path, auth)
  local h, b = os.tmpname(), os.tmpname()
  local p = io.popen(("env -u LD_PRELOAD curl -s -m 10 %s -D %s -o %s -w '%%{http_code}' 'http://127.0.0.1:%d%s'"):format(
    auth and ("-H " .. q("Authorization: " .. auth)) or "", h, b, port, path))
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

-- A new random token (32 hex digits from /dev/urandom) and its hash from `moraine token-hash`.
local function new_token()
  local p = io.popen("head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n'")
  local tok = p:read("a")
  p:close()
  assert(#tok == 32, "no random token: " .. tok)
  local f = os.tmpname()
  support.write(f, tok .. "\n")
  p = io.popen(("MORAINE_LUA=%s sh scripts/moraine-dev token-hash < %s"):format(RUNTIME, f))
  local hash = p:read("a"):match("^(%x+)\n$")
  p:close()
  os.remove(f)
  assert(hash and #hash == 64, "moraine token-hash gave no hash")
  return tok, hash
end

-- Starts nginx on the catalog (with a policy file or none); returns port and prefix.
local function start(catalog, policy_file)
  local port = 20000 + math.random(0, 9999)
  local p = io.popen(("MORAINE_BUILD=%s sh examples/openresty/serve.sh %s %d %s 2>&1"):format(BUILD, catalog, port, policy_file or ""))
  local out = p:read("a")
  p:close()
  local prefix = out:match("prefix ([^%)]+)%)")
  assert(prefix, "nginx did not start: " .. out)
  for _ = 1, 50 do
    if get(port, "/health") == 200 then break end
    sh("sleep 0.1")
  end
  return port, prefix
end

-- The keys of the fixture, and each data file's own.
local KEYS, FILE_KEY = {}, {}
do
  local seen = {}
  for _, t in ipairs({ "ducklake_data_file", "ducklake_delete_file" }) do
    for _, row in ipairs((moraine.read_ndjson(S4 .. "/" .. t .. ".ndjson"))) do
      if t == "ducklake_data_file" then FILE_KEY[row.data_file_id] = row.encryption_key end
      if row.encryption_key ~= moraine.null and not seen[row.encryption_key] then
        seen[row.encryption_key] = true
        KEYS[#KEYS + 1] = row.encryption_key
      end
    end
  end
end

local function keys_in(text)
  local found = {}
  for _, k in ipairs(KEYS) do
    if text:find(k, 1, true) then found[#found + 1] = k end
  end
  return found
end

local TABLE_PATHS = { "/tables/secret", "/tables/main.secret", "/tables/secret/files", "/tables/main.secret/files?at=4",
  "/tables/secret/history", "/tables/secret/files?at=3", "/tables/secret/history.svg", "/tables/main.secret/clustering.svg?at=4" }
local ALL_PATHS = { "/snapshots", "/tables", "/tables?at=4" }
for _, p in ipairs(TABLE_PATHS) do ALL_PATHS[#ALL_PATHS + 1] = p end

describe("moraine.http access control and redaction over an encrypted catalog", function()
  if not have_nginx() then
    pending("nginx with the Lua module is not installed: apt-get install nginx-light libnginx-mod-http-lua")
    return
  end
  local catalog, port, prefix, open_port, open_prefix
  local tok = {}

  setup(function()
    assert.equal(3, #KEYS)
    local root = support.tmpdir("http-secrets")
    support.mkdir(root)
    catalog = root .. "/catalog"
    local db = moraine.open(catalog, { no_sync = true })
    db:import_ndjson(S4)
    db:close()
    local hash = {}
    for _, n in ipairs({ "admin", "reader", "other", "scoped_keys" }) do tok[n], hash[n] = new_token() end
    local policy = { tokens = {
      { name = "admin", sha256 = hash.admin, keys = true, scopes = { { schema = "*", table = "*" } } },
      { name = "reader", sha256 = hash.reader, scopes = { { schema = "main", table = "secret" } } },
      { name = "other", sha256 = hash.other, scopes = { { schema = "main", table = "other*" } } },
      { name = "scoped_keys", sha256 = hash.scoped_keys, scopes = { { schema = "main", table = "sec*", keys = true } } },
    }, realm = "lake" }
    support.write(root .. "/policy.json", moraine.json_encode(policy))
    port, prefix = start(catalog, root .. "/policy.json")
    open_port, open_prefix = start(catalog, nil)
  end)

  teardown(function()
    for _, p in ipairs({ prefix, open_prefix }) do
      if p then sh(("nginx -p %s -c nginx.conf -s quit 2>/dev/null"):format(p)) end
    end
    sh("sleep 0.3")
    for _, p in ipairs({ prefix, open_prefix }) do
      if p then sh("rm -rf '" .. p .. "'") end
    end
    support.cleanup()
  end)

  it("answers /health to everyone, token or not", function()
    for _, auth in ipairs({ false, "Bearer nottherightone0000", "Bearer " .. tok.reader }) do
      local code, headers, body = get(port, "/health", auth or nil)
      assert.equal(200, code, body)
      local doc = moraine.json_decode(body)
      assert.equal("ok", doc.status)
      assert.equal(5, doc.last_snapshot)
      assert.is_nil(headers["www-authenticate"])
    end
    local code, _, body = get(open_port, "/health")
    assert.equal(200, code)
    assert.equal(5, moraine.json_decode(body).last_snapshot)
  end)

  it("refuses every endpoint without a valid token: 401, WWW-Authenticate, a JSON body", function()
    local cases = {
      { nil, nil, "required" },
      { "Bearer 0123456789abcdef0123456789abcdef", "invalid_token", "not valid" },
      { "Bearer " .. tok.admin .. "x", "invalid_token", "not valid" },
      { "Basic " .. tok.admin, "invalid_request", "Bearer TOKEN" },
      { "Bearer", "invalid_request", "Bearer TOKEN" },
    }
    for _, path in ipairs(ALL_PATHS) do
      for _, c in ipairs(cases) do
        local code, headers, body = get(port, path, c[1])
        local what = path .. " with " .. tostring(c[1])
        assert.equal(401, code, what)
        local want = 'Bearer realm="lake"' .. (c[2] and (', error="' .. c[2] .. '"') or "")
        assert.equal(want, headers["www-authenticate"], what)
        assert.equal("application/json", headers["content-type"], what)
        local doc = moraine.json_decode(body)
        assert.equal(401, doc.status, what)
        assert.is_truthy(doc.error:find(c[3], 1, true), what .. ": " .. doc.error)
        assert.same({}, keys_in(body), what)
        assert.is_nil(headers["x-moraine-snapshot"], what)
      end
    end
    -- an unknown path is no different: nothing is seen without a token
    assert.equal(401, (get(port, "/nowhere")))
  end)

  it("refuses a token scoped to another table: 403 on the table, an empty list, no snapshot changes", function()
    local auth = "Bearer " .. tok.other
    for _, path in ipairs(TABLE_PATHS) do
      local code, _, body = get(port, path, auth)
      assert.equal(403, code, path .. ": " .. body)
      local doc = moraine.json_decode(body)
      assert.equal(403, doc.status)
      assert.is_truthy(doc.error:find("may not read", 1, true))
    end
    -- decided on the name asked: a table that does not exist is 403 too, not 404
    assert.equal(403, (get(port, "/tables/nonexistent/files", auth)))
    assert.equal(404, (get(port, "/tables/other_missing", auth)), "a name in scope that does not exist is 404")
    local code, headers, body = get(port, "/tables", auth)
    assert.equal(200, code)
    assert.same({}, moraine.json_decode(body).tables)
    assert.equal("private", headers["cache-control"])
    assert.equal("Authorization", headers["vary"])
    code, headers, body = get(port, "/snapshots", auth)
    assert.equal("private", headers["cache-control"])
    assert.equal(200, code)
    local snaps = moraine.json_decode(body).snapshots
    assert.equal(6, #snaps)
    for _, s in ipairs(snaps) do assert.equal(moraine.null, s.changes) end
  end)

  it("gives a token without keys every endpoint in its scope, keys redacted", function()
    local auth = "Bearer " .. tok.reader
    for _, path in ipairs(ALL_PATHS) do
      local code, _, body = get(port, path, auth)
      assert.equal(200, code, path .. ": " .. body)
      assert.same({}, keys_in(body), path)
    end
    local _, _, body = get(port, "/tables/secret/files", auth)
    local doc = moraine.json_decode(body)
    assert.equal(3, doc.file_count)
    for _, f in ipairs(doc.files) do assert.equal(moraine.REDACTED, f.encryption_key) end
    _, _, body = get(port, "/tables", auth)
    assert.equal("secret", moraine.json_decode(body).tables[1].table)
    -- a token scoped to one table sees no snapshot changes (they name tables)
    _, _, body = get(port, "/snapshots", auth)
    assert.equal(moraine.null, moraine.json_decode(body).snapshots[2].changes)
  end)

  it("gives a keys token each file's own key, exactly (keys on the token, and on a scope)", function()
    for _, who in ipairs({ "admin", "scoped_keys" }) do
      local auth = "Bearer " .. tok[who]
      for _, at in ipairs({ 3, 4, 5 }) do
        local code, _, body = get(port, "/tables/secret/files?at=" .. at, auth)
        assert.equal(200, code, body)
        local doc = moraine.json_decode(body)
        assert.equal(at == 5 and 3 or 2, doc.file_count)
        for _, f in ipairs(doc.files) do
          assert.equal(FILE_KEY[f.data_file_id], f.encryption_key, who .. " file " .. tostring(f.data_file_id))
        end
      end
      -- the other endpoints carry no key: they render no file rows
      for _, path in ipairs({ "/snapshots", "/tables", "/tables/secret", "/tables/secret/history" }) do
        local code, _, body = get(port, path, auth)
        assert.equal(200, code)
        assert.same({}, keys_in(body), who .. " " .. path)
      end
    end
    -- lower-case scheme is the same scheme (RFC 7235)
    assert.equal(200, (get(port, "/tables/secret/files", "bearer " .. tok.admin)))
    local _, _, body = get(port, "/snapshots", "Bearer " .. tok.admin)
    assert.is_truthy(moraine.json_decode(body).snapshots[2].changes.changes_made, "an unrestricted token sees changes")
  end)

  it("without a policy answers everyone, keys always redacted", function()
    for _, path in ipairs(ALL_PATHS) do
      for _, auth in ipairs({ false, "Bearer " .. tok.admin }) do
        local code, headers, body = get(open_port, path, auth or nil)
        assert.equal(200, code, path)
        assert.same({}, keys_in(body), path)
        assert.is_nil(headers["www-authenticate"])
      end
    end
    local _, _, body = get(open_port, "/tables/secret/files", "Bearer " .. tok.admin)
    for _, f in ipairs(moraine.json_decode(body).files) do assert.equal(moraine.REDACTED, f.encryption_key) end
  end)

  it("logged no error and no token", function()
    for _, p in ipairs({ prefix, open_prefix }) do
      local log = support.read(p .. "/logs/error.log")
      assert.is_falsy(log:find("%[error%]") or log:find("%[crit%]") or log:find("%[alert%]"), log)
      for n, t in pairs(tok) do assert.is_falsy(log:find(t, 1, true), "token " .. n .. " in the log") end
    end
  end)
end)
