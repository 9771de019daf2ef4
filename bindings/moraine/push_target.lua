--- moraine.push_target — the SQL catalogs `moraine push` writes into (a SQLite
-- DuckLake catalog file, a PostgreSQL DuckLake catalog) and the value helpers
-- push's modules share: exact integers as text, row keys, snapshot ids,
-- changes_made lists. moraine.push has the whole story (docs/push.md).
-- @module moraine.push_target

local moraine = require "moraine"
local sqlite = require "moraine.sqlite"
local sync_source = require "moraine.sync_source"

local core = moraine.core
local NULL = moraine.null

local M = {}

local function raise(code, fmt, ...)
  core.raise(code, string.format(fmt, ...))
end

local is_int = sqlite.is_integer

local int_text = sqlite.int_text

-- a value in a form that compares equal for equal SQL values (SQLite keeps
-- booleans as 0/1)
local function vkey(v)
  if v == nil or v == NULL then return "n" end
  local t = type(v)
  if t == "boolean" then return v and "i1" or "i0" end
  if is_int(v) then return "i" .. int_text(v) end
  if t == "number" then return "f" .. string.format("%.17g", v) end
  if t == "table" and type(v.json) == "string" then return "s" .. v.json end
  return "s" .. tostring(v)
end

local function rowkey(vals, n)
  local parts = {}
  for i = 1, n do parts[i] = vkey(vals[i]) end
  return table.concat(parts, "\0|")
end

-- a snapshot id as a Lua table key
local function sid(v) return int_text(v) end

local function sid_less(a, b)
  if #a ~= #b then return #a < #b end -- non-negative ids: shorter is smaller
  return a < b
end

-- "created_table:\"main\".\"t\",inserted_into_table:3" -> { {kind, value}, ... }
local function parse_changes(s)
  local out = {}
  if type(s) ~= "string" then return out end
  local i, n = 1, #s
  while i <= n do
    local j, inq = i, false
    while j <= n do
      local c = s:sub(j, j)
      if c == '"' then inq = not inq
      elseif c == "," and not inq then break end
      j = j + 1
    end
    local item = s:sub(i, j - 1)
    local kind, value = item:match("^([%w_]+):(.*)$")
    if kind then out[#out + 1] = { kind = kind, value = value } end
    i = j + 1
  end
  return out
end

-- ---- the target -------------------------------------------------------------

-- ---- SQLite ---------------------------------------------------------------------

local function open_sqlite(path)
  local f, err = io.open(path, "rb")
  if not f then raise("EIO", "push: cannot open %s: %s", path, tostring(err)) end
  local head = f:read(16)
  f:close()
  if head ~= "SQLite format 3\0" then
    raise("EINVAL", "push: %s is not a SQLite database (no SQLite header)", path)
  end
  local driver = sqlite.driver()
  local env = driver.sqlite3()
  local con, cerr = env:connect(path)
  if not con then
    env:close()
    raise("EIO", "push: cannot open %s: %s", path, (tostring(cerr):gsub("^LuaSQL: ", "")))
  end
  local t = { path = path, con = con, env = env, kind = "sqlite", rowid = "rowid" }
  function t.exec(sql)
    local r, e = con:execute(sql)
    if not r then
      raise("EIO", "push: %s: SQLite refused %s: %s", path, sql:sub(1, 160), (tostring(e):gsub("^LuaSQL: ", "")))
    end
    if type(r) == "userdata" then r:close() return 0 end
    return r
  end
  function t.close()
    pcall(con.close, con)
    pcall(env.close, env)
  end
  -- rows of a table, values exact (moraine.sqlite's reader); the pseudo-column rowid as an integer
  function t.select(name, cols, where)
    return sqlite.select_rows(con, name, cols, where, nil, path)
  end
  function t.tables()
    local out = {}
    for _, r in ipairs(t.select("sqlite_master", { "name" }, "type = 'table' AND substr(name, 1, 9) = 'ducklake_'")) do
      local cur = assert(con:execute("PRAGMA table_info('" .. r[1]:gsub("'", "''") .. "')"))
      local list = {}
      local row = cur:fetch({}, "a")
      while row do
        list[#list + 1] = { cid = tonumber(row.cid), name = row.name, type = row.type or "" }
        row = cur:fetch({}, "a")
      end
      cur:close()
      table.sort(list, function(x, y) return x.cid < y.cid end)
      out[r[1]] = list
    end
    return out
  end
  -- SQLite has no NaN (it would store NULL): refused, naming where it is
  function t.literal(v, decl, where)
    if v ~= v then
      raise("EINVAL", "push: %s: %s holds NaN, which SQLite cannot store (it would read back as NULL); nothing of its "
        .. "snapshot written", path, where or "a value")
    end
    return sqlite.literal(v, decl)
  end
  function t.eq(col, lit) return col .. " IS " .. lit end
  -- BEGIN IMMEDIATE takes SQLite's write lock at once: the head read next is the newest
  function t.begin() t.exec("BEGIN IMMEDIATE") end
  function t.delete_row(name, rid) t.exec("DELETE FROM " .. sqlite.ident(name) .. " WHERE rowid = " .. int_text(rid)) end
  t.exec("PRAGMA busy_timeout = 10000")
  return t
end

-- ---- PostgreSQL -----------------------------------------------------------------

local function pg_kind(decl)
  local u = (decl or ""):lower()
  if u == "bigint" or u == "integer" or u == "smallint" then return "int" end
  if u == "boolean" then return "bool" end
  if u == "double precision" or u == "real" then return "real" end
  return "text"
end

local function open_postgres(spec)
  local conninfo = spec:match("^postgres:(.*)$")
  if spec:match("^postgres://") or spec:match("^postgresql://") then conninfo = spec end
  local con, env, label = sync_source.pg_connect(conninfo, "push", 4)
  local t = { path = label, con = con, env = env, kind = "postgres", rowid = "ctid" }
  local kinds = {} -- table -> column -> kind, filled by t.tables
  function t.exec(sql)
    local r, e = con:execute(sql)
    if not r then
      raise("EIO", "push: %s refused %s: %s", label, sql:sub(1, 160), (tostring(e):gsub("^LuaSQL: ", "")))
    end
    if type(r) == "userdata" then r:close() return 0 end
    return tonumber(r) or 0
  end
  function t.close()
    pcall(con.close, con)
    pcall(env.close, env)
  end
  local function all(sql)
    local cur, e = con:execute(sql)
    if not cur then
      raise("EIO", "push: %s refused %s: %s", label, sql:sub(1, 160), (tostring(e):gsub("^LuaSQL: ", "")))
    end
    local rows = {}
    local row = cur:fetch({}, "n")
    while row do
      rows[#rows + 1] = row
      row = cur:fetch({}, "n")
    end
    cur:close()
    return rows
  end
  -- every value selected as text (exact), turned into moraine's values by the column's type:
  -- bigint an exact integer, boolean true/false, double a float, the rest strings; ctid its text
  function t.select(name, cols, where)
    local sel = {}
    for i, c in ipairs(cols) do sel[i] = (c == "ctid" and "ctid" or sqlite.ident(c)) .. "::text" end
    local rows = all("SELECT " .. table.concat(sel, ", ") .. " FROM " .. sqlite.ident(name)
      .. (where and (" WHERE " .. where) or "") .. " ORDER BY ctid")
    local k = kinds[name] or {}
    for _, r in ipairs(rows) do
      for i, c in ipairs(cols) do
        local v = r[i]
        if v == nil then
          r[i] = NULL
        elseif c ~= "ctid" then
          local kind = k[c]
          if kind == "int" then r[i] = #v <= 15 and tonumber(v) or moraine.json_decode(v)
          elseif kind == "bool" then r[i] = (v == "t" or v == "true")
          elseif kind == "real" then r[i] = tonumber(v) end
        end
      end
    end
    return rows
  end
  function t.tables()
    local out = {}
    for _, r in ipairs(all("SELECT table_name, column_name, data_type FROM information_schema.columns WHERE "
      .. "table_schema = current_schema() AND table_name LIKE 'ducklake\\_%' ORDER BY table_name, ordinal_position")) do
      out[r[1]] = out[r[1]] or {}
      table.insert(out[r[1]], { name = r[2], type = r[3] })
      kinds[r[1]] = kinds[r[1]] or {}
      kinds[r[1]][r[2]] = pg_kind(r[3])
    end
    return out
  end
  -- PostgreSQL text holds neither a NUL byte nor invalid UTF-8 (the server's encoding, UTF8):
  -- such a value is refused, naming where it is
  function t.literal(v, _, where)
    if v == nil or v == NULL then return "NULL" end
    local ty = type(v)
    if ty == "boolean" then return v and "TRUE" or "FALSE" end
    if ty == "table" and type(v.json) == "string" then v, ty = v.json, "string" end
    if ty == "string" then
      if v:find("\0", 1, true) then
        raise("EINVAL", "push: %s: %s holds a NUL byte, which PostgreSQL text cannot hold; nothing of its "
          .. "snapshot written", label, where or "a value")
      end
      if not sqlite.valid_utf8(v) then
        raise("EINVAL", "push: %s: %s holds bytes that are not valid UTF-8, which PostgreSQL text cannot hold; "
          .. "nothing of its snapshot written", label, where or "a value")
      end
      return "'" .. v:gsub("'", "''") .. "'"
    end
    if is_int(v) then return int_text(v) end
    if ty == "number" then
      if v ~= v then return "'NaN'" end
      if v == math.huge then return "'Infinity'" end
      if v == -math.huge then return "'-Infinity'" end
      return string.format("%.17g", v)
    end
    raise("EINVAL", "push: a value of type %s has no SQL form (%s)", ty, where or "?")
  end
  function t.eq(col, lit) return col .. " IS NOT DISTINCT FROM " .. lit end
  -- the lock keeps every other writer of ducklake_snapshot out until COMMIT (a DuckLake writer's
  -- INSERT waits, then fails on the primary key and retries on the new head)
  function t.begin()
    t.exec("BEGIN")
    t.exec("LOCK TABLE ducklake_snapshot IN SHARE ROW EXCLUSIVE MODE")
  end
  function t.delete_row(name, rid)
    t.exec("DELETE FROM " .. sqlite.ident(name) .. " WHERE ctid = '" .. tostring(rid):gsub("'", "''") .. "'::tid")
  end
  t.exec("SET TimeZone = 'UTC'")
  t.exec("SET DateStyle = 'ISO, YMD'")
  t.exec("SET extra_float_digits = 3")
  t.exec("SET standard_conforming_strings = on")
  return t
end

local function open_target(spec)
  if type(spec) ~= "string" or spec == "" then
    raise("EINVAL", "push: the target must be a SQLite DuckLake catalog file or postgres:CONNINFO, got %s",
      tostring(spec))
  end
  if spec:match("^postgres:") or spec:match("^postgresql://") then return open_postgres(spec) end
  return open_sqlite(spec)
end

-- ducklake_* tables of the target: name -> { columns = {...}, types = {col -> decl}, has = {col -> true} }
local function target_tables(t)
  local out = {}
  for name, list in pairs(t.tables()) do
    local info = { columns = {}, types = {}, has = {} }
    for i, c in ipairs(list) do
      info.columns[i] = c.name
      info.types[c.name] = c.type
      info.has[c.name] = true
    end
    out[name] = info
  end
  if not out.ducklake_snapshot or not out.ducklake_snapshot_changes then
    raise("EINVAL", "push: %s is not a DuckLake catalog: it has no ducklake_snapshot%s table", t.path,
      out.ducklake_snapshot and "_changes" or "")
  end
  return out
end

local SNAP_COLS = { "snapshot_id", "snapshot_time", "schema_version", "next_catalog_id", "next_file_id" }

-- the target's snapshots above @above (all when nil), ascending: rows keyed by column
local function target_snapshots(t, above)
  local rows = t.select("ducklake_snapshot", SNAP_COLS, above and ("snapshot_id > " .. int_text(above)) or nil)
  local out = {}
  for i, r in ipairs(rows) do
    local s = {}
    for c, name in ipairs(SNAP_COLS) do s[name] = r[c] end
    out[i] = s
  end
  table.sort(out, function(a, b) return sid_less(sid(a.snapshot_id), sid(b.snapshot_id)) end)
  return out
end

local function target_head(t)
  local r = t.select("ducklake_snapshot", { "snapshot_id" },
    "snapshot_id = (SELECT max(snapshot_id) FROM ducklake_snapshot)")
  return r[1] and r[1][1] or nil
end

local function target_changes(t, id)
  local r = t.select("ducklake_snapshot_changes", { "changes_made" }, "snapshot_id = " .. int_text(id))
  return r[1] and r[1][1] or nil
end

-- A snapshot_time as text without the trailing zeros of its fraction of a
-- second: DuckDB and PostgreSQL write "15:51:38.29435+00" where moraine's
-- verbs write "15:51:38.294350+00"; the same instant either way.
local function trim_micros(v)
  if type(v) ~= "string" then return v end
  return (v:gsub("(%.%d-)0+([%+%-])", "%1%2"):gsub("%.([%+%-])", "%1"))
end

local function same_snapshot(a, b)
  for _, c in ipairs(SNAP_COLS) do
    local x, y = a[c], b[c]
    if c == "snapshot_time" then x, y = trim_micros(x), trim_micros(y) end
    if vkey(x) ~= vkey(y) then return false end
  end
  return true
end

--- `raise(code, fmt, ...)`: raises a moraine error (`code`, formatted message).
M.raise = raise
--- `is_int(v)`: whether v is an exact integer (number or int64 cdata).
M.is_int = is_int
--- `int_text(v)`: an exact integer as decimal text.
M.int_text = int_text
--- `vkey(v)`: one value as a comparable string (NULL, integers, strings told apart).
M.vkey = vkey
--- `rowkey(vals, n)`: the first n values as one comparable string.
M.rowkey = rowkey
--- `sid(v)`: a snapshot id as a string key.
M.sid = sid
--- `sid_less(a, b)`: a < b for two snapshot id keys.
M.sid_less = sid_less
--- `parse_changes(s)`: a changes_made text as a list of `{kind =, value =}`.
M.parse_changes = parse_changes
--- `same_snapshot(a, b)`: whether two ducklake_snapshot rows are the same snapshot (times to the microsecond).
M.same_snapshot = same_snapshot
--- The columns of ducklake_snapshot push reads and writes.
M.SNAP_COLS = SNAP_COLS
--- `open_target(spec)`: opens a target (SQLite file or `postgres:` connection) for writing.
M.open_target = open_target
--- `target_tables(t)`: the target's DuckLake tables: name -> `{columns =, types =}`.
M.target_tables = target_tables
--- `target_snapshots(t, above)`: the target's ducklake_snapshot rows (above a snapshot id when given).
M.target_snapshots = target_snapshots
--- `target_head(t)`: the target's newest snapshot id, or nil.
M.target_head = target_head
--- `target_changes(t, id)`: the changes_made of the target's snapshot id.
M.target_changes = target_changes

return M
