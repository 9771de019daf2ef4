--- moraine.http — DuckLake catalog answers over HTTP from nginx workers
-- (OpenResty, or nginx with Debian's libnginx-mod-http-lua), in the style of
-- the lua-resty-* modules.
--
--     init_worker_by_lua_block {
--         local ok, err = pcall(require("moraine.http").init_worker, "/var/lib/lake.moraine")
--         if not ok then ngx.log(ngx.ERR, "moraine.http: ", tostring(err)) end  -- (nginx logs a raised table as "unknown error")
--     }
--     location /catalog/ { content_by_lua_block { require("moraine.http").serve({ prefix = "/catalog" }) } }
--
-- Each worker opens the catalog read-only once (`init_worker`); each request
-- reads in one read transaction (`db:read`), which is closed when the handler
-- returns, raises, or the client goes away, so a response is always one whole
-- snapshot. LMDB readers never wait for the writer: nothing blocks a worker
-- longer than the scan it serves.
--
-- Endpoints (GET; JSON bodies; `at` defaults to the latest snapshot):
--
-- | path | answer |
-- |---|---|
-- | `/` | an index of these endpoints (`{"service", "version", "snapshot", "endpoints": [{"path", "method", "params", "answer"}]}`, paths with the prefix) |
-- | `/snapshots` | every snapshot row with its changes |
-- | `/tables?at=S` | tables visible at S, with their partition and sort spec |
-- | `/tables/NAME?at=S` | one table: columns, partition spec (keys with column names), sort spec |
-- | `/tables/NAME/files?at=S` | the table's files at S with partition values, streamed in chunks |
-- | `/tables/NAME/history?at=S` | every partition and sort spec version begun by S, and the mixed layout: files, rows and bytes live at S under each spec |
-- | `/tables/NAME/history.svg?at=S` | the same timeline and layout as an SVG picture (`image/svg+xml`, moraine.layout_http) |
-- | `/tables/NAME/clustering.svg?at=S&columns=a,b&share=s` | the live files as boxes in rank space with a query band (SVG) |
-- | `/health` | `{"status":"ok","last_snapshot":N}`, and with a follower (`moraine sync --follow`) `source_newest`, `lag_snapshots`, `lag_seconds`, `last_success`, `last_round`, `failing` (status "failing" then), `error`; open to every client, policy or not |
--
-- NAME is `table` (schema main, or unique) or `schema.table`. Every response
-- carries the snapshot it answers for, in the body (`"snapshot"`) and in the
-- header `X-Moraine-Snapshot`, and an `ETag` (`"S"`: an answer at a snapshot
-- never changes); a request with a matching `If-None-Match` gets 304. An
-- unknown table, snapshot or path is 404, a malformed parameter 400, both with
-- a JSON body `{"error": "...", "status": N}`.
--
-- Lag: when a follower (`moraine sync SOURCE --follow`) keeps the catalog,
-- it writes its state beside it (moraine.follow_state, `moraine-follow.json`,
-- read at most every 0.25 s per worker), and every answer carries
-- `X-Moraine-Lag: snapshots=N; seconds=S` (N: the source's newest snapshot as
-- of the follower's last round minus the catalog's last; S: seconds since the
-- start of the follower's last successful round; `; failing` appended while
-- its rounds fail). No state file: no header.
--
-- Secrets (docs/security.md): the secret columns of a row (the encryption
-- keys of an encrypted lake's data and delete files) are always answered as
-- `"<redacted>"` (null stays null), except to a bearer token whose policy
-- grants `keys` for that table.
--
-- Access control: `init_worker(path, {policy = P})` with P a policy table or
-- the path of a JSON policy file (moraine.policy: bearer tokens stored as
-- SHA-256 hashes, each with schema/table scopes and a `keys` permission).
-- With a policy every request but `/health` needs `Authorization: Bearer
-- TOKEN`: none, or a token the policy does not hold, is 401 with
-- `WWW-Authenticate: Bearer realm="..."` (and `error="invalid_token"` for a
-- wrong one); a table outside the token's scopes is 403 (decided on the name
-- asked, before the catalog is looked at); `/tables` lists only the tables in
-- scope; `/snapshots` gives each snapshot's `changes` (which name tables)
-- only to a token scoped to every table (`*`/`*`), else `"changes": null`.
-- Answers then carry `Cache-Control: private` and `Vary: Authorization`.
-- Tokens are hashed with SHA-256 (OpenResty's `ngx.sha256_bin`, else
-- lua-resty-string, else OpenSSL's through the FFI) and compared in constant
-- time; they are never logged. Without a policy every client reads every
-- table, keys redacted.
-- @module moraine.http

local moraine = require "moraine"
local catalog_version = require "moraine.catalog_version"
local policy_mod = require "moraine.policy"
local follow_state = require "moraine.follow_state"
local add_count = require("moraine.tablefiles").add_count

local ngx = ngx
local json = moraine.json_encode
local NULL = moraine.null

local _M = { _VERSION = "0.1.0" }

-- Hex of a binary string.
local function to_hex(b)
  return (b:gsub(".", function(c) return ("%02x"):format(c:byte()) end))
end

-- A function string -> hex SHA-256, from a well-kept implementation, or nil:
-- OpenResty's ngx.sha256_bin where the nginx has it, else lua-resty-string's
-- resty.sha256, else OpenSSL's SHA256() through LuaJIT's FFI (Debian's nginx
-- links libcrypto; resty.sha256 binds the same library the same way).
local function find_sha256()
  local ngx_sha256 = rawget(ngx, "sha256_bin") -- OpenResty has it; Debian's lua module does not
  if ngx_sha256 then return function(s) return to_hex(ngx_sha256(s)) end end
  local okr, rs = pcall(require, "resty.sha256")
  if okr and type(rs) == "table" then
    return function(s)
      local h = rs:new()
      h:update(s)
      return to_hex(h:final())
    end
  end
  local okf, ffi = pcall(require, "ffi")
  if not okf then return nil end
  pcall(ffi.cdef, "unsigned char *SHA256(const unsigned char *d, size_t n, unsigned char *md);")
  local lib
  if pcall(function() return ffi.C.SHA256 end) then lib = ffi.C
  else
    for _, name in ipairs({ "crypto", "libcrypto.so.3" }) do
      local okl, l = pcall(ffi.load, name)
      if okl and pcall(function() return l.SHA256 end) then lib = l break end
    end
  end
  if not lib then return nil end
  return function(s)
    local md = ffi.new("unsigned char[32]")
    lib.SHA256(s, #s, md)
    return to_hex(ffi.string(md, 32))
  end
end

local db      -- this worker's catalog handle
local catalog_dir -- its directory (the follower's state file is there: moraine.follow_state)
local sha256_hex -- string -> hex SHA-256 (find_sha256), set with a policy
local policy  -- this worker's access policy (moraine.policy), or nil: every client reads every table, keys redacted
local CHUNK = 500 -- file rows per flushed chunk

--- Opens the catalog read-only for this worker and loads its access policy.
-- Call from init_worker_by_lua. Fails closed: when the policy cannot be
-- loaded the worker keeps no catalog open and answers 503 to everything.
-- @tparam string path the catalog directory
-- @tparam[opt] table opts `map_size` (bytes) passed to moraine.open;
--   `policy`: a policy table or the path of a JSON policy file (see
--   moraine.policy; nil or "" for none)
-- @raise a moraine error table: EIO (no catalog at path, policy file
--   unreadable), EJSON (policy file not JSON), EINVAL (a policy that does not
--   check, naming token and field; a policy where no SHA-256 is found)
function _M.init_worker(path, opts)
  -- A handle opened before fork (init_by_lua in nginx's master) belongs to
  -- the master's process: moraine refuses to read through it here (EFORK),
  -- and closing it in the worker leaves the master's LMDB reader slots alone
  -- (moraine_close only frees this process's memory of it).
  if db then db:close() end
  db, policy = nil, nil
  local p = opts and opts.policy
  if p ~= nil and p ~= "" then
    sha256_hex = find_sha256()
    if not sha256_hex then
      moraine.core.raise("EINVAL", "moraine.http: an access policy needs SHA-256: ngx.sha256_bin (OpenResty), "
        .. "resty.sha256 (lua-resty-string) or OpenSSL's libcrypto (LuaJIT FFI)")
    end
    policy = policy_mod.new(p)
  end
  db = moraine.open(path, { read_only = true, create = false, map_size = opts and opts.map_size })
  catalog_dir = path
  return true
end

--- The worker's catalog handle (nil before init_worker).
function _M.db() return db end

-- A request error: status and message, raised as a table and turned into a response.
local function http_error(status, msg)
  error({ http_status = status, message = msg }, 0)
end

local function send_headers(status, snapshot)
  ngx.status = status
  ngx.header["Content-Type"] = "application/json"
  if snapshot then
    ngx.header["X-Moraine-Snapshot"] = tostring(snapshot)
    ngx.header["ETag"] = '"' .. tostring(snapshot) .. '"'
  end
end

-- The snapshot a request asks for (`at`), checked against the catalog.
local function snapshot_arg(rd, args)
  local last = rd:last_snapshot()
  if last == nil then http_error(404, "the catalog holds no snapshot") end
  local at = args.at
  if at == nil or at == true then return last end
  if type(at) ~= "string" or not at:match("^%d+$") or #at > 18 then
    http_error(400, "parameter 'at' must be a snapshot id (a non-negative integer)")
  end
  local s = math.tointeger and math.tointeger(tonumber(at)) or tonumber(at)
  if s > last then http_error(404, ("snapshot %s does not exist (the last is %s)"):format(at, tostring(last))) end
  for row in rd:scan("ducklake_snapshot", { at = s }) do
    if row.snapshot_id == s then return s end
  end
  http_error(404, ("snapshot %s does not exist"):format(at))
end

local function schemas_at(rd, s)
  local out = {}
  for row in rd:scan("ducklake_schema", { at = s }) do out[row.schema_id] = row end
  return out
end

-- What the request's token may see (acc.see(schema, table)), read unredacted
-- (acc.keys(schema, table)), ask for by name (acc.name_ok(name)), and whether
-- it sees every table (acc.all). Without a policy: everything but keys.
local OPEN = { see = function() return true end, keys = function() return false end,
  name_ok = function() return true end, all = true }

local function access_of(tok)
  return { see = function(schema, t) return policy.may_see(tok, schema, t) end,
    keys = function(schema, t) return policy.may_read_keys(tok, schema, t) end,
    name_ok = function(name) return policy.may_name(tok, name) end,
    all = policy.unrestricted(tok) }
end

local function schema_name_of(sch) return sch and sch.schema_name or "" end

-- The table NAME at snapshot s: its row and schema row, or a 404 (a 403 for a
-- name outside the token's scopes, whether or not it exists).
local function find_table(rd, name, s, acc)
  if not acc.name_ok(name) then http_error(403, ("this token may not read table %q"):format(name)) end
  local schema_name, table_name = name:match("^([^.]+)%.(.+)$")
  if not schema_name then table_name = name end
  local schemas = schemas_at(rd, s)
  local found
  for row in rd:scan("ducklake_table", { at = s }) do
    local sch = schemas[row.schema_id]
    if row.table_name == table_name and (not schema_name or (sch and sch.schema_name == schema_name))
      and acc.see(schema_name_of(sch), row.table_name) then
      if found then http_error(400, ("table name %q is in several schemas: write schema.table"):format(name)) end
      found = row
    end
  end
  if not found then http_error(404, ("no table %q at snapshot %s"):format(name, tostring(s))) end
  return found, schemas[found.schema_id]
end

local function columns_at(rd, table_id, s)
  local cols, by_id = {}, {}
  for row in rd:scan("ducklake_column", { at = s, table_id = table_id }) do
    cols[#cols + 1] = row
    by_id[row.column_id] = row.column_name
  end
  table.sort(cols, function(a, b) return a.column_order < b.column_order end)
  if catalog_version.of(rd) == "0.1" then
    -- v0.1: a partition key's column_id is the column's position (docs/upgrade.md)
    by_id = {}
    for i, c in ipairs(catalog_version.top_level_columns(rd, table_id, s)) do by_id[i - 1] = c.column_name end
  end
  return cols, by_id
end

local function partition_json(spec, names)
  if not spec then return "null" end
  local keys = {}
  for i, c in ipairs(spec.columns) do
    keys[i] = json({ partition_key_index = c.partition_key_index, column_id = c.column_id,
      column_name = names[c.column_id] or NULL, transform = c.transform },
      { "partition_key_index", "column_id", "column_name", "transform" })
  end
  return ('{"partition_id":%s,"begin_snapshot":%s,"end_snapshot":%s,"keys":[%s]}'):format(json(spec.partition_id),
    json(spec.begin_snapshot), json(spec.end_snapshot), table.concat(keys, ","))
end

local function sort_json(spec)
  if not spec then return "null" end
  local keys = {}
  for i, e in ipairs(spec.expressions) do
    keys[i] = json({ sort_key_index = e.sort_key_index, expression = e.expression, dialect = e.dialect,
      sort_direction = e.sort_direction, null_order = e.null_order },
      { "sort_key_index", "expression", "dialect", "sort_direction", "null_order" })
  end
  return ('{"sort_id":%s,"begin_snapshot":%s,"end_snapshot":%s,"keys":[%s]}'):format(json(spec.sort_id),
    json(spec.begin_snapshot), json(spec.end_snapshot), table.concat(keys, ","))
end

-- Row of relation @info as a JSON object in its table's column order, secret columns redacted.
local function row_json(info, row)
  return json(moraine.redact(info, row), info and info.columns or nil)
end

local function rel_info(name)
  return db:relation(name)
end

-- Writes a chunk; a client that went away ends the request (and its read).
local function emit(s)
  local ok, err = ngx.print(s)
  if not ok then error({ client_gone = true, message = err }, 0) end
end

-- ---- endpoints ------------------------------------------------------------

local function get_snapshots(rd, args, _, acc)
  local s = snapshot_arg(rd, args)
  local scols, ccols = rel_info("ducklake_snapshot"), rel_info("ducklake_snapshot_changes")
  local parts = {}
  for row, children in rd:scan("ducklake_snapshot", { at = s }) do
    -- changes name tables: only for a token that sees every table
    local ch = acc.all and (children.ducklake_snapshot_changes or {})[1] or nil
    parts[#parts + 1] = ('{"snapshot":%s,"changes":%s}'):format(row_json(scols, row), ch and row_json(ccols, ch) or "null")
  end
  return s, ('{"snapshot":%s,"snapshots":[%s]}'):format(json(s), table.concat(parts, ","))
end

local function get_tables(rd, args, _, acc)
  local s = snapshot_arg(rd, args)
  local schemas = schemas_at(rd, s)
  local parts = {}
  for t in rd:scan("ducklake_table", { at = s }) do
    local sch = schemas[t.schema_id]
    if acc.see(schema_name_of(sch), t.table_name) then
      local _, names = columns_at(rd, t.table_id, s)
      parts[#parts + 1] = ('{"schema":%s,"table":%s,"table_id":%s,"partition_spec":%s,"sort_spec":%s}'):format(
        json(sch and sch.schema_name or NULL), json(t.table_name), json(t.table_id),
        partition_json(rd:partition_spec(t.table_id, s), names), sort_json(rd:sort_spec(t.table_id, s)))
    end
  end
  return s, ('{"snapshot":%s,"tables":[%s]}'):format(json(s), table.concat(parts, ","))
end

local function get_table(rd, args, name, acc)
  local s = snapshot_arg(rd, args)
  local t, sch = find_table(rd, name, s, acc)
  local cols, names = columns_at(rd, t.table_id, s)
  local ccols = rel_info("ducklake_column")
  local cparts = {}
  for i, c in ipairs(cols) do cparts[i] = row_json(ccols, c) end
  return s, ('{"snapshot":%s,"schema":%s,"table":%s,"table_id":%s,"columns":[%s],"partition_spec":%s,"sort_spec":%s}'):format(
    json(s), json(sch and sch.schema_name or NULL), json(t.table_name), json(t.table_id), table.concat(cparts, ","),
    partition_json(rd:partition_spec(t.table_id, s), names), sort_json(rd:sort_spec(t.table_id, s)))
end

-- Streams the files: the body is written in chunks while the read is open.
local function stream_files(rd, args, name, if_none_match, acc)
  local s = snapshot_arg(rd, args)
  local t, sch = find_table(rd, name, s, acc)
  local keys = acc.keys(schema_name_of(sch), t.table_name) -- a `keys` token: encryption keys as stored
  if if_none_match == '"' .. tostring(s) .. '"' then
    send_headers(304, s)
    return
  end
  local _, names = columns_at(rd, t.table_id, s)
  send_headers(200, s)
  emit(('{"snapshot":%s,"table":%s,"table_id":%s,"partition_spec":%s,"files":['):format(json(s), json(t.table_name),
    json(t.table_id), partition_json(rd:partition_spec(t.table_id, s), names)))
  -- rows are written as JSON in C, CHUNK at a time, and flushed as they come
  local n = 0
  for chunk, k in rd:scan_json("ducklake_data_file", { at = s, table_id = t.table_id, rows = CHUNK, partition_values = true,
    secrets = keys }) do
    emit(n > 0 and ("," .. chunk) or chunk)
    n = n + k
    ngx.flush(false)
  end
  emit(('],"file_count":%d}'):format(n))
end

local function get_history(rd, args, name, acc)
  local s = snapshot_arg(rd, args)
  local t = find_table(rd, name, s, acc)
  local pparts, sparts = {}, {}
  -- the timeline as known at s: versions begun by s; one that ended after s is live then
  local function as_of(spec)
    if spec.begin_snapshot > s then return false end
    if spec.end_snapshot ~= NULL and spec.end_snapshot > s then spec.end_snapshot = NULL end
    return true
  end
  for spec, children in rd:scan("ducklake_partition_info", { at = moraine.ALL, table_id = t.table_id }) do
    if as_of(spec) then
      local _, names = columns_at(rd, t.table_id, spec.begin_snapshot)
      spec.columns = children.ducklake_partition_column or {}
      pparts[#pparts + 1] = partition_json(spec, names)
    end
  end
  for spec, children in catalog_version.scan_if_present(rd, "ducklake_sort_info",
      { at = moraine.ALL, table_id = t.table_id }) do
    if as_of(spec) then
      spec.expressions = children.ducklake_sort_expression or {}
      sparts[#sparts + 1] = sort_json(spec)
    end
  end
  -- the mixed layout: live files, rows and bytes under each spec
  local layout, order = {}, {}
  -- three columns of every live file in one batch read (no stats decoded);
  -- a catalog defined without partition_id reads it as NULL
  local want = catalog_version.columns_present(db, "ducklake_data_file", { "partition_id", "record_count", "file_size_bytes" })
  local b = rd:files_batch(t.table_id, s, { columns = want, partition_values = false })
  local pid, recs, bytes = b.file.partition_id, b.file.record_count, b.file.file_size_bytes
  for i = 1, tonumber(b.n) do
    local p = pid and pid[i] or NULL
    local k = p == NULL and "null" or tostring(p)
    local l = layout[k]
    if not l then
      l = { partition_id = p, files = 0, rows = 0, bytes = 0 }
      layout[k] = l
      order[#order + 1] = k
    end
    l.files = l.files + 1
    -- a NULL count is unknown: the group's sum is NULL (as `moraine history` gives it), not a sum of the known ones
    local r, y = recs[i], bytes[i]
    l.rows = (l.rows == NULL or r == NULL or r == nil) and NULL or add_count(l.rows, r, "record_count")
    l.bytes = (l.bytes == NULL or y == NULL or y == nil) and NULL or add_count(l.bytes, y, "file_size_bytes")
  end
  local lparts = {}
  for i, k in ipairs(order) do
    lparts[i] = json(layout[k], { "partition_id", "files", "rows", "bytes" })
  end
  return s, ('{"snapshot":%s,"table":%s,"table_id":%s,"partition_specs":[%s],"sort_specs":[%s],"mixed_layout":[%s]}'):format(
    json(s), json(t.table_name), json(t.table_id), table.concat(pparts, ","), table.concat(sparts, ","), table.concat(lparts, ","))
end

-- The endpoints, as `GET /` lists them (path, parameters, answer).
local ENDPOINTS = {
  { "/", "", "this index: the endpoints and the catalog's last snapshot" },
  { "/snapshots", "at", "every snapshot row (up to at) with its changes" },
  { "/tables", "at", "the tables visible at at, with their partition and sort spec" },
  { "/tables/NAME", "at", "one table: columns, partition spec (keys with column names), sort spec" },
  { "/tables/NAME/files", "at", "the table's data files at at with partition values, streamed in chunks" },
  { "/tables/NAME/history", "at",
    "every partition and sort spec version begun by at, and the mixed layout: files, rows and bytes under each spec" },
  { "/tables/NAME/history.svg", "at", "the spec timeline and rows per spec as an SVG picture (docs/layout.md)" },
  { "/tables/NAME/clustering.svg", "at", "the live files as boxes in rank space with a query band, an SVG picture "
    .. "(columns=a,b and share=s optional; docs/layout.md)" },
  { "/health", "", "{status, last_snapshot} and, with a follower, source_newest, lag_snapshots, lag_seconds, "
    .. "last_success, last_round, failing, error; open to every client, even under an access policy" },
}

-- GET /: a JSON index of the endpoints, with the location prefix in front
-- of each path, for the last snapshot (which is also its ETag).
local function get_index(rd, _, _, _, prefix)
  local s = rd:last_snapshot()
  if s == nil then http_error(404, "the catalog holds no snapshot") end
  local parts = {}
  for i, e in ipairs(ENDPOINTS) do
    local params = e[2] == "" and "[]" or ('["%s"]'):format(e[2])
    parts[i] = ('{"path":%s,"method":"GET","params":%s,"answer":%s}'):format(json(prefix .. e[1]), params, json(e[3]))
  end
  return s, ('{"service":"moraine.http","version":%s,"snapshot":%s,"name":"NAME is table (schema main, or unique) or schema.table",'
    .. '"endpoints":[%s]}'):format(json(_M._VERSION), json(s), table.concat(parts, ","))
end

local function route(path)
  if path == "" or path == "/" then return get_index end
  if path == "/snapshots" then return get_snapshots end
  if path == "/tables" then return get_tables end
  local name, rest = path:match("^/tables/([^/]+)(.*)$")
  if name then
    name = ngx.unescape_uri(name)
    if rest == "" then return get_table, name end
    if rest == "/files" then return "files", name end
    if rest == "/history" then return get_history, name end
    local pic = rest:match("^/(%a+)%.svg$") -- issue 19: moraine.layout_http
    if pic and require("moraine.layout_http").KINDS[pic] then return "svg", name, pic end
  end
end

-- Whether @s is text JSON can carry (valid UTF-8): moraine's encoder refuses the rest.
local function is_utf8(s) return (pcall(json, s)) end

-- A JSON error response. The message is made JSON-safe first (a request can
-- put any bytes into it, e.g. a table name that is not UTF-8).
local function fail(status, msg, headers)
  msg = tostring(msg)
  if not is_utf8(msg) then msg = (msg:gsub("[\128-\255]", "?")) end
  ngx.status = status
  ngx.header["Content-Type"] = "application/json"
  for k, v in pairs(headers or {}) do ngx.header[k] = v end
  ngx.say(json({ error = msg, status = status }, { "error", "status" }))
  return ngx.exit(status)
end

-- The token entry of the request's bearer token, or nil and the RFC 6750
-- error code of the WWW-Authenticate challenge (nil: no credentials at all).
local function authenticate()
  local auth = ngx.var.http_authorization
  if not auth then return nil, nil end
  local bearer = auth:match("^[Bb][Ee][Aa][Rr][Ee][Rr] +([%w%-%._~%+/]+=*) *$")
  if not bearer then return nil, "invalid_request" end
  local tok = policy:authenticate(sha256_hex(bearer))
  if not tok then return nil, "invalid_token" end
  return tok
end

-- The follower's state (moraine.follow_state), read at most every 0.25 s
-- per worker, or nil when no follower ever wrote one; and the time now.
local state_cache, state_read_at = nil, -1
local function follower()
  ngx.update_time()
  local now = ngx.now()
  if now - state_read_at >= 0.25 then
    state_cache = catalog_dir and follow_state.read(catalog_dir) or nil
    state_read_at = now
  end
  return state_cache, now
end

-- The X-Moraine-Lag value for a catalog whose last snapshot is @last:
-- "snapshots=N; seconds=S" (a part unknown is left out), "; failing" when
-- the follower's last round failed; nil without a follower.
local function lag_header(last)
  local st, now = follower()
  if not st then return nil end
  local snaps, secs = follow_state.lag(st, last, now)
  local parts = {}
  if snaps then parts[#parts + 1] = "snapshots=" .. string.format("%d", snaps) end
  if secs then parts[#parts + 1] = string.format("seconds=%.3f", secs) end
  if st.failing then parts[#parts + 1] = "failing" end
  return table.concat(parts, "; ")
end

local function health()
  local ok, last = pcall(db.last_snapshot, db)
  if not ok then
    ngx.log(ngx.ERR, "moraine.http: /health: ", tostring(last))
    ngx.status = 503
    ngx.header["Content-Type"] = "application/json"
    ngx.header["Cache-Control"] = "no-store"
    ngx.say('{"status":"unavailable","last_snapshot":null}')
    return ngx.exit(503)
  end
  ngx.status = 200
  ngx.header["Content-Type"] = "application/json"
  ngx.header["Cache-Control"] = "no-store"
  local st, now = follower()
  if not st then
    ngx.say(('{"status":"ok","last_snapshot":%s}'):format(last == nil and "null" or json(last)))
    return ngx.exit(200)
  end
  local snaps, secs = follow_state.lag(st, last, now)
  local lag = lag_header(last)
  if lag then ngx.header["X-Moraine-Lag"] = lag end
  local doc = { status = st.failing and "failing" or "ok", last_snapshot = last == nil and NULL or last,
    source_newest = st.source_newest or NULL, lag_snapshots = snaps or NULL, lag_seconds = secs or NULL,
    last_success = st.last_success or NULL, last_round = st.last_round or NULL, failing = st.failing == true,
    error = st.error or NULL }
  ngx.say(json(doc, { "status", "last_snapshot", "source_newest", "lag_snapshots", "lag_seconds", "last_success",
    "last_round", "failing", "error" }))
  return ngx.exit(200)
end

local function serve(opts)
  -- "/lake/" and "/lake" are one prefix; it matches whole path segments ("/lakes/x" is not under "/lake")
  local prefix = (opts and opts.prefix or ""):gsub("/+$", "")
  if not db then return fail(503, "the catalog is not open in this worker (init_worker)") end
  local method = ngx.req.get_method()
  if method ~= "GET" and method ~= "HEAD" then return fail(405, "only GET") end
  local uri = ngx.var.uri
  if prefix ~= "" then
    local rest = uri:sub(#prefix + 1)
    if uri:sub(1, #prefix) ~= prefix or (rest ~= "" and rest:sub(1, 1) ~= "/") then
      return fail(404, "no such path: " .. uri .. " (not under this location's prefix " .. prefix .. ")")
    end
    uri = rest
  end
  local shown = prefix .. uri -- the path as the client asked it, for a 404
  uri = uri:gsub("/+$", "")
  if not is_utf8(uri) then return fail(400, "the path is not valid UTF-8 (table names are UTF-8 text)") end
  if uri == "/health" then return health() end
  local acc = OPEN
  if policy then
    local tok, why = authenticate()
    if not tok then
      local challenge = ('Bearer realm="%s"'):format(policy.realm) .. (why and (', error="' .. why .. '"') or "")
      return fail(401, why == nil and "a bearer token is required (Authorization: Bearer TOKEN)"
        or why == "invalid_request" and "the Authorization header is not 'Bearer TOKEN'"
        or "the bearer token is not valid", { ["WWW-Authenticate"] = challenge })
    end
    acc = access_of(tok)
    -- answers differ per token: no shared cache may keep them
    ngx.header["Cache-Control"] = "private"
    ngx.header["Vary"] = "Authorization"
  end
  local lok, last = pcall(db.last_snapshot, db)
  local lag = lok and lag_header(last) or nil
  if lag then ngx.header["X-Moraine-Lag"] = lag end
  local handler, name, pic = route(uri)
  if name and not is_utf8(name) then return fail(400, "the table name is not valid UTF-8") end
  if not handler then
    return fail(404, "no such path: " .. shown .. " (GET " .. prefix .. "/ lists the endpoints"
      .. (prefix == "" and "; a location other than / passes its path as serve's prefix" or "") .. ")")
  end
  local args = ngx.req.get_uri_args()
  local inm = ngx.var.http_if_none_match
  if handler == "svg" then -- issue 19: the table found as the JSON endpoints find it (scopes: 403/404)
    local found, tid = pcall(db.read, db, function(rd)
      local s = snapshot_arg(rd, args)
      args.at = tostring(s)
      return find_table(rd, name, s, acc).table_id
    end)
    if not found then
      if type(tid) == "table" and tid.http_status then return fail(tid.http_status, tid.message) end
      ngx.log(ngx.ERR, "moraine.http: ", tostring(tid))
      return fail(500, "internal error: " .. tostring(tid))
    end
    return require("moraine.layout_http").serve(db, pic, "#" .. tostring(tid), args, inm, fail)
  end
  local ok, err = pcall(db.read, db, function(rd)
    if handler == "files" then return stream_files(rd, args, name, inm, acc) end
    local s, body = handler(rd, args, name, acc, prefix)
    if inm and inm == '"' .. tostring(s) .. '"' then
      send_headers(304, s)
      return
    end
    send_headers(200, s)
    ngx.print(body)
  end)
  if ok then return end
  if type(err) == "table" and err.http_status then
    if ngx.headers_sent then return ngx.exit(ngx.ERROR) end
    return fail(err.http_status, err.message)
  end
  if type(err) == "table" and err.client_gone then return ngx.exit(499) end
  ngx.log(ngx.ERR, "moraine.http: ", tostring(err))
  if ngx.headers_sent then return ngx.exit(ngx.ERROR) end
  return fail(500, "internal error: " .. tostring(err))
end

--- Serves one request. Call from content_by_lua.
-- @tparam[opt] table opts `prefix`: the location prefix to strip from the URI (default "";
--   "/lake" and "/lake/" alike; it matches whole path segments)
-- Responds 200/304 with JSON, 400/404 with a JSON error (a path or table
-- name that is not valid UTF-8 is 400), 401 (no valid bearer token while a
-- policy is set; with WWW-Authenticate) and 403 (a table outside the token's
-- scopes) with a JSON error, 405 for methods other than GET and HEAD, 503
-- before init_worker (or when its policy failed to load), 500 for an engine
-- error (logged; never with the token). `/health` answers 200
-- `{"status":"ok","last_snapshot":N}` to every client (with a follower's
-- state: its lag too, see the module's "Lag"); answers carry
-- `X-Moraine-Lag` when a follower keeps the catalog. Never raises: an error
-- escaping the handlers is logged and answered 500 when the headers are not
-- sent yet.
function _M.serve(opts)
  local ok, err = pcall(serve, opts)
  if ok then return err end
  ngx.log(ngx.ERR, "moraine.http: ", tostring(err))
  if ngx.headers_sent then return ngx.exit(ngx.ERROR) end
  local fok = pcall(fail, 500, "internal error")
  if not fok then return ngx.exit(500) end
end

return _M
