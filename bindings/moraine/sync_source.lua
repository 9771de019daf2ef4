--- moraine.sync_source — the DuckLake catalogs `moraine.sync` reads: a
-- directory of NDJSON files (DuckDB's export), a SQLite DuckLake catalog, or a
-- PostgreSQL DuckLake catalog; and the value forms sync and compare share.
--
-- ## Sources
--
-- `sync.source(spec)` opens one: `postgres:CONNINFO` (libpq's
-- `host=... port=... dbname=... user=...` string) or a `postgres://` /
-- `postgresql://` URI is PostgreSQL (LuaSQL's driver, Debian package
-- `lua-sql-postgres`); a directory is NDJSON; any other path is a SQLite file
-- (`lua-sql-sqlite3`, opened read-only). Every source has one interface
-- (`begin`, `finish`, `tables`, `commit_ids`, `select`, `close`), and a round
-- of `sync` or `compare` reads it between one `begin` and one `finish`:
--
-- - PostgreSQL: `BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY`: every query
--   of the round sees the catalog as of its first query (one snapshot of the
--   database, whatever DuckLake's writers commit meanwhile);
-- - SQLite: `BEGIN` (a read transaction: SQLite keeps its view, or in
--   rollback-journal mode keeps writers out, until `COMMIT`);
-- - NDJSON: the files, each read once per round when first needed and kept
--   for the round (a directory of files has no transactions; a file rewritten
--   during a round is read as it was when first opened). This source holds the
--   tables it has read in memory; the SQL sources do not.
--
-- Values are exact: PostgreSQL values are read as text and BIGINT turned into
-- exact integers (int64 on Lua 5.4; on LuaJIT a number within +-2^53, else an
-- int64_t cdata), BOOLEAN `t`/`f` into booleans; SQLite integers are read as
-- their decimal text (`CAST(col AS TEXT)`) for the same reason, its BOOLEAN
-- columns (0/1) become booleans where DuckLake's schema says BOOLEAN
-- (moraine.sqlite's `types`), TEXT and BLOB values are their bytes, whole.
--
-- @module moraine.sync_source

local moraine = require "moraine"
local sqlite = require "moraine.sqlite"

local core = moraine.core
local NULL = moraine.null

local M = {}

local function raise(code, fmt, ...)
  core.raise(code, string.format(fmt, ...))
end

-- ---- DuckLake's tables: placement --------------------------------------------------
-- The child tables of DuckLake's catalog, their parent and the columns that
-- match the parent's key (docs/keyspace.md; engine/tables.c).
local CHILD = {
  ducklake_snapshot_changes = { parent = "ducklake_snapshot", keys = { "snapshot_id" } },
  ducklake_file_column_stats = { parent = "ducklake_data_file", keys = { "table_id", "data_file_id" } },
  ducklake_file_variant_stats = { parent = "ducklake_data_file", keys = { "table_id", "data_file_id" } },
  ducklake_file_partition_value = { parent = "ducklake_data_file", keys = { "table_id", "data_file_id" } },
  ducklake_partition_column = { parent = "ducklake_partition_info", keys = { "table_id", "partition_id" } },
  ducklake_sort_expression = { parent = "ducklake_sort_info", keys = { "table_id", "sort_id" } },
}

-- "snapshot", "temporal", "child" or "rows", as the engine places the table
-- (a table it does not know: temporal when it has begin_snapshot and
-- end_snapshot, rows otherwise).
local function placement(name, columns)
  if name == "ducklake_snapshot" then return "snapshot" end
  if CHILD[name] then return "child" end
  local has = {}
  for _, c in ipairs(columns) do has[c] = true end
  if has.begin_snapshot and has.end_snapshot then return "temporal" end
  return "rows"
end


-- ---- values -------------------------------------------------------------------------

local is_int = sqlite.is_integer

local int_text = sqlite.int_text

-- decimal integer text -> an exact integer
-- a PostgreSQL float8 as its text (`::text`, extra_float_digits 3: exact) -> the number; the special values
-- PostgreSQL spells NaN, Infinity and -Infinity (tonumber knows neither spelling); EINVAL for text that is no number
local PG_SPECIAL = { NaN = 0 / 0, Infinity = math.huge, ["-Infinity"] = -math.huge }
local function pg_real(s)
  local v = tonumber(s)
  if v == nil then v = PG_SPECIAL[s] end
  if v == nil then raise("EINVAL", "sync: a PostgreSQL double precision value reads '%s', which is not a number", s) end
  return v
end

local function parse_int(s)
  if #s <= 15 then return math.tointeger and math.tointeger(tonumber(s)) or tonumber(s) end
  return moraine.json_decode(s)
end

-- One value as a canonical string: two values are the same DuckLake value
-- exactly when their forms are equal (NULL, integer, boolean, real, string
-- are told apart; an integral real and an integer are not, as LuaJIT cannot).
local function vform(v)
  if v == nil or v == NULL then return "N" end
  local t = type(v)
  if t == "boolean" then return v and "T" or "F" end
  if t == "string" then return "S" .. #v .. ":" .. v end
  if t == "table" and type(v.json) == "string" then return "S" .. #v.json .. ":" .. v.json end
  if is_int(v) then return "I" .. int_text(v) end
  if t == "number" then
    if v ~= v then return "RNaN" end
    return "R" .. string.format("%.17g", v)
  end
  return "?" .. tostring(v)
end


-- comparison of two exact integers (number or int64 cdata)
local function ilt(a, b)
  if type(a) == type(b) then return a < b end
  return moraine.int64(a) < moraine.int64(b)
end

local function inum(v) -- an exact integer to a key usable in a Lua table
  return int_text(v)
end

-- ---- SQL sources (SQLite, PostgreSQL) -------------------------------------------------

local function sql_ident(s) return '"' .. s:gsub('"', '""') .. '"' end

local function sql_int(v) return int_text(v) end

-- ` AND <alias>table_id IN (...)` for a filter's `table_ids` (an array of
-- exact integers), or ""
local function sql_table_ids(f, a)
  if not f or not f.table_ids then return "" end
  local l = {}
  for i, v in ipairs(f.table_ids) do l[i] = sql_int(v) end
  if #l == 0 then return " AND 1 = 0" end
  return " AND " .. a .. "table_id IN (" .. table.concat(l, ", ") .. ")"
end

-- `<col> > lo AND <col> <= hi` of a filter; `lo` nil: no lower bound (`<col>
-- IS NOT NULL`), `hi` nil: no upper bound
local function sql_range(col, f)
  local w = f.lo ~= nil and (col .. " > " .. sql_int(f.lo)) or (col .. " IS NOT NULL")
  if f.hi ~= nil then w = w .. " AND " .. col .. " <= " .. sql_int(f.hi) end
  return w
end

-- The WHERE clause of a filter (see source:select)
local function sql_where(f, alias)
  if not f then return "" end
  local a = alias and (alias .. ".") or ""
  if f.kind == "id" then
    return " WHERE " .. sql_range(a .. sql_ident(f.column), f) .. sql_table_ids(f, a)
  elseif f.kind == "versions" then
    return string.format(" WHERE (%sbegin_snapshot > %s AND %sbegin_snapshot <= %s) OR "
      .. "(%send_snapshot > %s AND %send_snapshot <= %s)", a, sql_int(f.lo), a, sql_int(f.hi), a, sql_int(f.lo), a,
      sql_int(f.hi))
  elseif f.kind == "ends" then
    return " WHERE " .. sql_range(a .. "end_snapshot", f) .. " AND " .. a .. "end_snapshot <> " .. a .. "begin_snapshot"
  end
  error("sql_where: unknown filter " .. tostring(f.kind))
end

-- The column a sorted filter's rows are ordered by (see source:select)
local function sql_sort_column(f, alias)
  if f.kind == "id" then return alias .. "." .. sql_ident(f.column) end
  if f.kind == "ends" then return alias .. ".end_snapshot" end
  if f.kind == "child" then return "p." .. sql_ident(f.parent_column) end
  error("sql_sort_column: filter " .. tostring(f.kind) .. " cannot be sorted")
end

-- A function (raw, NULL) -> the row of table @t keyed by column name from an
-- array of its values in column order (nil: NULL), one table constructor
-- naming every column (the row's table made at its size at once); and the
-- names of @t's BOOLEAN columns
local function row_maker(t)
  local fields, bools = {}, {}
  for j, c in ipairs(t.columns) do
    fields[j] = string.format("[%q] = r[%d] == nil and N or r[%d]", c, j, j)
    if t.kinds[c] == "bool" then bools[#bools + 1] = c end
  end
  local code = "local r, N = ...; return {" .. table.concat(fields, ", ") .. "}"
  return assert(load(code, "=row " .. t.name)), bools
end

-- Makes a SQL source from a LuaSQL connection and a dialect table:
-- dialect.list_tables(src) -> names; dialect.columns(src, name) -> {{name, kind}}
-- (kind "int", "bool", "real", "text", "any"); dialect.select_list(col, kind, alias)
-- -> SQL expressions; dialect.convert(raw, i, kind) -> value, consumed.
local function sql_source(kind, label, con, env, dialect)
  local src = { kind = kind, label = label, con = con, env = env, reads = { queries = 0, rows = {} } }

  function src:exec(sql)
    self.reads.queries = self.reads.queries + 1
    local cur, err = self.con:execute(sql)
    if not cur and tostring(err):find("not a database", 1, true) then
      raise("EINVAL", "sync: %s is not a SQLite database (%s)", self.label, tostring(err):gsub("^LuaSQL: ", ""))
    end
    if not cur then
      raise("EIO", "sync: %s source %s: %s (in: %s)", self.kind, self.label, tostring(err):gsub("^LuaSQL: ", ""),
        sql:sub(1, 200))
    end
    return cur
  end

  function src:all(sql)
    local cur = self:exec(sql)
    local rows = {}
    if type(cur) ~= "userdata" then return rows end
    local r = cur:fetch({}, "n")
    while r do
      rows[#rows + 1] = r
      r = cur:fetch({}, "n")
    end
    cur:close()
    return rows
  end

  function src:begin()
    self:exec(dialect.begin_sql)
    self.tables_cache = nil
  end

  -- the cursors of iterators not run to their end (a caller that stopped
  -- early): closed by finish, before its COMMIT (SQLite refuses to commit with
  -- a statement in progress, and would keep its read lock)
  src.open_cursors = {}

  function src:finish()
    for cur in pairs(self.open_cursors) do pcall(cur.close, cur) end
    self.open_cursors = {}
    self:exec("COMMIT")
    self.tables_cache = nil
  end

  function src:close()
    if self.con then pcall(self.con.close, self.con) end
    if self.env then pcall(self.env.close, self.env) end
    self.con, self.env = nil, nil
  end

  function src:tables()
    if self.tables_cache then return self.tables_cache end
    local list = {}
    for _, name in ipairs(dialect.list_tables(self)) do
      local cols, kinds = {}, {}
      for i, c in ipairs(dialect.columns(self, name)) do
        cols[i] = c[1]
        kinds[c[1]] = c[2]
      end
      list[#list + 1] = { name = name, columns = cols, kinds = kinds, placement = placement(name, cols) }
      list[name] = list[#list]
    end
    self.tables_cache = list
    return list
  end

  -- rows of @t for filter @f: an iterator of (row, pos, extra) where extra is
  -- the parent's begin_snapshot for a child filter. Filters (nil: every row):
  -- `{kind = "id", column = C, lo = L, hi = H}`, rows with L < C <= H;
  -- `{kind = "versions", lo = L, hi = H}`, rows that begin or end in (L, H];
  -- `{kind = "ends", lo = L, hi = H}`, rows that end in (L, H] at a snapshot
  -- other than their begin; `{kind = "child", parent = P, keys = K,
  -- parent_column = C, lo = L, hi = H}`, rows whose parent (the row of P
  -- with the same K) has L < C <= H. "id" and "child" also take `table_ids`
  -- (rows of those tables only). For "id", "ends" and "child", `lo` nil
  -- means no lower bound and `hi` nil no upper bound, and `sorted = true`
  -- orders the rows by the filtered column (the parent's, for "child"),
  -- then by their order in the table; else rows come in table order.
  function src:select(t, f)
    local sel = {}
    local alias = "t"
    for _, c in ipairs(t.columns) do
      for _, e in ipairs(dialect.select_list(c, t.kinds[c], alias)) do sel[#sel + 1] = e end
    end
    sel[#sel + 1] = dialect.position(alias)
    local sql
    if f and f.kind == "child" then
      local on = {}
      for i, k in ipairs(f.keys) do on[i] = "p." .. sql_ident(k) .. " = t." .. sql_ident(k) end
      local pcol = f.parent_column
      sel[#sel + 1] = dialect.native and ("p." .. sql_ident(pcol)) or ("CAST(p." .. sql_ident(pcol) .. " AS TEXT)")
      sql = "SELECT " .. table.concat(sel, ", ") .. " FROM " .. sql_ident(t.name) .. " t JOIN "
        .. sql_ident(f.parent) .. " p ON " .. table.concat(on, " AND ")
        .. " WHERE " .. sql_range("p." .. sql_ident(pcol), f) .. sql_table_ids(f, "p.")
    else
      sql = "SELECT " .. table.concat(sel, ", ") .. " FROM " .. sql_ident(t.name) .. " t" .. sql_where(f, alias)
    end
    sql = sql .. " ORDER BY " .. (f and f.sorted and (sql_sort_column(f, alias) .. ", ") or "") .. dialect.order(alias)
    local cur = self:exec(sql)
    local ncols = #t.columns
    local rows = self.reads.rows
    local open = self.open_cursors
    open[cur] = true
    if dialect.native then
      -- the driver's own values: exact integers, floats, strings, nil for NULL
      local make, bools = row_maker(t)
      local name, math_type, raw = t.name, math.type, {}
      return function()
        if not open[cur] then return nil end
        if not cur:fetch(raw, "n") then
          open[cur] = nil
          cur:close()
          return nil
        end
        rows[name] = (rows[name] or 0) + 1
        local row = make(raw, NULL)
        for _, c in ipairs(bools) do
          local v = row[c]
          if (v == 0 or v == 1) and math_type(v) == "integer" then row[c] = v == 1 end
        end
        return row, raw[ncols + 1] or -1, raw[ncols + 2]
      end
    end
    return function()
      if not open[cur] then return nil end
      local raw = cur:fetch({}, "n")
      if not raw then
        open[cur] = nil
        cur:close()
        return nil
      end
      rows[t.name] = (rows[t.name] or 0) + 1
      local row, i = {}, 1
      for _, c in ipairs(t.columns) do
        local v, used = dialect.convert(raw, i, t.kinds[c])
        row[c] = v
        i = i + used
      end
      local pos = -1
      if raw[i] ~= nil then pos = parse_int(raw[i]) end
      local extra = raw[i + 1] and parse_int(raw[i + 1]) or nil
      assert(ncols == #t.columns)
      return row, pos, extra
    end
  end

  -- sorted commit ids above @after (nil: all)
  function src:commit_ids(after)
    local parts = {}
    local cond = after and (" > " .. sql_int(after)) or " IS NOT NULL"
    for _, t in ipairs(self:tables()) do
      if t.placement == "snapshot" then
        parts[#parts + 1] = "SELECT snapshot_id AS id FROM " .. sql_ident(t.name) .. " WHERE snapshot_id" .. cond
      elseif t.placement == "temporal" then
        parts[#parts + 1] = "SELECT begin_snapshot AS id FROM " .. sql_ident(t.name) .. " WHERE begin_snapshot" .. cond
        parts[#parts + 1] = "SELECT end_snapshot AS id FROM " .. sql_ident(t.name) .. " WHERE end_snapshot" .. cond
      end
    end
    if #parts == 0 then return {} end
    local ids = {}
    for _, r in ipairs(self:all("SELECT CAST(id AS TEXT) FROM (" .. table.concat(parts, " UNION ")
      .. ") u ORDER BY u.id")) do
      ids[#ids + 1] = parse_int(r[1])
    end
    return ids
  end

  -- the newest snapshot id (nil: none), and the count and sum of the
  -- snapshot ids at or below @at (nil: 0, 0), as decimal text; one row read
  function src:snapshot_stats(at)
    local t = self:tables().ducklake_snapshot
    if not t then return nil, "0", "0" end
    local below = at and sql_int(at) or "-1"
    local r = self:all("SELECT CAST(MAX(snapshot_id) AS TEXT), CAST(COUNT(CASE WHEN snapshot_id <= " .. below
      .. " THEN 1 END) AS TEXT), CAST(COALESCE(SUM(CASE WHEN snapshot_id <= " .. below
      .. " THEN snapshot_id END), 0) AS TEXT) FROM " .. sql_ident(t.name))[1]
    return r[1] and parse_int(r[1]) or nil, r[2], r[3]
  end

  return src
end

-- SQL type name (lower case) -> value kind
local function kind_of_decl(decl)
  local u = (decl or ""):lower()
  if u == "bigint" or u == "int8" or u == "integer" or u == "int4" or u == "int" or u == "smallint"
    or u == "int2" or u:find("bigint", 1, true) then
    return "int"
  end
  if u == "boolean" or u == "bool" then return "bool" end
  if u == "double precision" or u == "float8" or u == "real" or u == "float4" or u == "double" then return "real" end
  return "text"
end

-- libpq's keywords whose value is a secret: the server password and the
-- client key's (sslpassword)
local SECRET_KEYS = { password = true, sslpassword = true }

-- the [first, last] byte span of each secret value in libpq `key = value`
-- text @s: a quoted value to its closing quote (\' and \\ escaped inside), an
-- unquoted one up to the next `key=` (so a value with a blank, which libpq
-- refuses, is hidden whole too), spaces around `=` allowed
local function password_spans(s)
  local spans, i, n = {}, 1, #s
  while i <= n do
    local a, b, key = s:find("([%w_]+)%s*=%s*", i)
    if not a then break end
    local j, last = b + 1
    local secret = SECRET_KEYS[key:lower()]
    if s:sub(j, j) == "'" then
      local k = j + 1
      while k <= n and s:sub(k, k) ~= "'" do k = k + (s:sub(k, k) == "\\" and 2 or 1) end
      last = math.min(k, n)
    elseif secret then
      local nxt = s:find("%s+[%w_]+%s*=", j)
      last = nxt and nxt - 1 or n
    else
      last = (s:find("%s", j) or n + 1) - 1
    end
    if secret then spans[#spans + 1] = { j, last } end
    i = math.max(last + 1, j)
  end
  return spans
end

-- a URI's %XX escapes decoded (libpq decodes parameter names and values)
local function pct_decode(t)
  return (t:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

--- A PostgreSQL connection string as it may be shown: every secret replaced
-- by `...`: a `password` or `sslpassword` value in libpq's `key = value` form
-- (quoted or not, blanks around `=` or not), and a URI's (`user:pw@`, or a
-- `password=` / `sslpassword=` parameter, its name %-escaped or not).
-- @tparam string conninfo libpq's `key=value` string or a postgres:// URI
-- @treturn string
function M.pg_label(conninfo)
  if conninfo:match("^%s*postgres[%w]*://") then
    local s = conninfo:gsub("://([^:@/]*):[^@/]*@", "://%1:...@")
    return (s:gsub("([?&])([^=&#]*)=([^&#]*)", function(sep, name, value)
      if SECRET_KEYS[pct_decode(name):lower()] then return sep .. name .. "=..." end
      return sep .. name .. "=" .. value
    end))
  end
  local spans, out, at = password_spans(conninfo), {}, 1
  for _, sp in ipairs(spans) do
    out[#out + 1] = conninfo:sub(at, sp[1] - 1) .. "..."
    at = sp[2] + 1
  end
  out[#out + 1] = conninfo:sub(at)
  return table.concat(out)
end

-- @msg (libpq's error) with the secrets of @conninfo it quotes back replaced by
-- `...`: libpq names a bad connection string's word in double quotes
-- ('missing "=" after "b"'); only such quoted words are replaced, so no
-- other text of the message is touched (a short password would match it)
local function hide_passwords(msg, conninfo)
  local words = {}
  for _, sp in ipairs(password_spans(conninfo)) do
    local v = conninfo:sub(sp[1], sp[2]):gsub("^'", ""):gsub("'$", "")
    for word in v:gmatch("%S+") do words[#words + 1] = word end
  end
  for name, value in conninfo:gmatch("[?&]([^=&#]*)=([^&#]*)") do
    if SECRET_KEYS[pct_decode(name):lower()] then words[#words + 1] = value; words[#words + 1] = pct_decode(value) end
  end
  local user_pw = conninfo:match("://[^:@/]*:([^@/]*)@")
  if user_pw and #user_pw > 0 then words[#words + 1] = user_pw; words[#words + 1] = pct_decode(user_pw) end
  for _, word in ipairs(words) do
    if #word > 0 then msg = msg:gsub('"' .. word:gsub("%p", "%%%0") .. '"', '"..."') end
  end
  return msg
end

--- Connects to PostgreSQL through LuaSQL (Debian: lua-sql-postgres).
-- @tparam string conninfo libpq's connection string or URI
-- @tparam string who the caller's name in messages ("sync", "push")
-- @tparam integer level the error level for a missing driver (as `error`)
-- @return con, env (LuaSQL's), label (`PostgreSQL (conninfo)`, password hidden)
-- @raise EIO "WHO: cannot connect to PostgreSQL (...): reason" (password
--   hidden); a plain string error when the driver is not installed
function M.pg_connect(conninfo, who, level)
  local label = "PostgreSQL (" .. M.pg_label(conninfo) .. ")"
  local ok, driver = pcall(require, "luasql.postgres")
  if not ok then
    error("moraine." .. who .. ": LuaSQL's PostgreSQL driver (luasql.postgres) is not installed "
      .. "(Debian: apt-get install lua-sql-postgres): " .. tostring(driver), level + 1)
  end
  local env = driver.postgres()
  local con, err = env:connect(conninfo)
  if not con then
    env:close()
    raise("EIO", "%s: cannot connect to %s: %s", who, label, hide_passwords((tostring(err):gsub("^LuaSQL: ", "")), conninfo))
  end
  return con, env, label
end

local function open_postgres(conninfo)
  local con, env = M.pg_connect(conninfo, "sync", 3)
  local label = M.pg_label(conninfo)
  local dialect = {
    begin_sql = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
  }
  function dialect.list_tables(src)
    local names = {}
    for _, r in ipairs(src:all("SELECT table_name FROM information_schema.tables WHERE table_schema = "
      .. "current_schema() AND table_type = 'BASE TABLE' AND table_name LIKE 'ducklake\\_%' ORDER BY table_name")) do
      names[#names + 1] = r[1]
    end
    return names
  end
  function dialect.columns(src, name)
    local cols = {}
    for _, r in ipairs(src:all("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = "
      .. "current_schema() AND table_name = '" .. name:gsub("'", "''") .. "' ORDER BY ordinal_position")) do
      cols[#cols + 1] = { r[1], kind_of_decl(r[2]) }
    end
    return cols
  end
  function dialect.select_list(col, _, alias)
    return { alias .. "." .. sql_ident(col) .. "::text" }
  end
  function dialect.position() return "NULL" end -- PostgreSQL has no row order: rows are appended (-1)
  function dialect.order(alias) return alias .. ".ctid" end
  function dialect.convert(raw, i, kind)
    local s = raw[i]
    if s == nil then return NULL, 1 end
    if kind == "int" then return parse_int(s), 1 end
    if kind == "bool" then return s == "t" or s == "true", 1 end
    if kind == "real" then return pg_real(s), 1 end
    return s, 1
  end
  local src = sql_source("postgres", label, con, env, dialect)
  src:exec("SET TimeZone = 'UTC'")
  src:exec("SET DateStyle = 'ISO, YMD'")
  src:exec("SET extra_float_digits = 3")
  return src
end

local function file_uri(path)
  return "file:" .. path:gsub("[%%?#]", function(c) return string.format("%%%02X", c:byte()) end) .. "?mode=ro"
end

local function open_sqlite(path)
  local ok, driver = pcall(require, "luasql.sqlite3")
  if not ok then
    error("moraine.sync: LuaSQL's SQLite driver (luasql.sqlite3) is not installed "
      .. "(Debian: apt-get install lua-sql-sqlite3): " .. tostring(driver), 3)
  end
  local f, ferr = io.open(path, "rb")
  if not f then raise("EIO", "sync: cannot open %s: %s", path, tostring(ferr)) end
  local head = f:read(16)
  f:close()
  if head ~= "SQLite format 3\0" then
    raise("EINVAL", "sync: %s is neither a directory of NDJSON files nor a SQLite database", path)
  end
  local env = driver.sqlite3()
  local con, err = env:connect(file_uri(path))
  if not con then
    env:close()
    raise("EIO", "sync: cannot open %s: %s", path, tostring(err):gsub("^LuaSQL: ", ""))
  end
  local types = sqlite.types
  local dialect = { begin_sql = "BEGIN" }
  function dialect.list_tables(src)
    local names = {}
    for _, r in ipairs(src:all("SELECT name FROM sqlite_master WHERE type = 'table' "
      .. "AND substr(name, 1, 9) = 'ducklake_' ORDER BY name")) do
      names[#names + 1] = r[1]
    end
    return names
  end
  function dialect.columns(src, name)
    local info = src:all("PRAGMA table_info('" .. name:gsub("'", "''") .. "')")
    table.sort(info, function(a, b) return tonumber(a[1]) < tonumber(b[1]) end)
    local cols = {}
    local known = types[name]
    for i, c in ipairs(info) do
      local decl = known and known[c[2]] or c[3]
      cols[i] = { c[2], kind_of_decl(decl) == "bool" and "bool" or "any" }
    end
    return cols
  end
  -- native: the driver gives SQLite's integers as exact Lua integers and its
  -- reals as floats (LuaSQL on Lua 5.3+), so columns are selected as they
  -- are; else (LuaJIT: a double cannot hold every int64) an integer is read
  -- as its decimal text, beside its typeof()
  if math.type then
    local cur = con:execute("SELECT 9007199254740993, 2.5, NULL")
    local r = type(cur) == "userdata" and cur:fetch({}, "n")
    if type(cur) == "userdata" then cur:close() end
    dialect.native = r and math.type(r[1]) == "integer" and tostring(r[1]) == "9007199254740993"
      and math.type(r[2]) == "float" and r[3] == nil or false
  end
  function dialect.select_list(col, _, alias)
    local q = alias .. "." .. sql_ident(col)
    if dialect.native then return { q } end
    return { "typeof(" .. q .. ")", "CASE typeof(" .. q .. ") WHEN 'integer' THEN CAST(" .. q .. " AS TEXT) ELSE "
      .. q .. " END" }
  end
  function dialect.position(alias)
    if dialect.native then return alias .. ".rowid" end
    return "CAST(" .. alias .. ".rowid AS TEXT)"
  end
  function dialect.order(alias) return alias .. ".rowid" end
  function dialect.convert(raw, i, kind)
    local ty, v = raw[i], raw[i + 1]
    if ty == "null" then return NULL, 2 end
    if ty == "integer" then
      local n = parse_int(v)
      if kind == "bool" and (n == 0 or n == 1) then return n == 1, 2 end
      return n, 2
    end
    if ty == "real" then return tonumber(v), 2 end
    return v, 2
  end
  local src = sql_source("sqlite", path, con, env, dialect)
  -- LuaSQL's SQLite cursors step through a result as it is fetched (SQLite
  -- sorts a sorted filter's rows in its own bounded memory and temporary
  -- files), so sync may keep one sorted select per table open for a whole
  -- round (moraine.sync: "How sync replays"); LuaSQL's PostgreSQL driver holds
  -- a query's whole result in memory, and the NDJSON source its tables
  src.streams = true
  -- positions: rowid - 1 (the file's row order, as sqlite.import keeps it)
  local select = src.select
  function src.select(self, t, filter)
    local it = select(self, t, filter)
    return function()
      local row, pos, extra = it()
      if row == nil then return nil end
      return row, pos - 1, extra
    end
  end
  return src
end

-- ---- NDJSON source ---------------------------------------------------------------------

-- what moraine_export_ndjson leaves in a directory it was killed while renaming its tables into
-- (MR_EXPORT_INCOMPLETE, engine/ndjson_internal.h)
local EXPORT_INCOMPLETE = ".moraine-export-incomplete"

local function open_ndjson(dir)
  local src = { kind = "ndjson", label = dir, reads = { queries = 0, rows = {} } }
  local function list()
    local names = {}
    for _, line in ipairs(moraine.core.dir_entries(dir)) do
      if line == EXPORT_INCOMPLETE then
        -- (as the engine's import refuses it: engine/ndjson_export.c, mr_export_complete)
        raise("EINVAL", "sync: %s: an export into it was killed while it renamed its tables (%s is there): they may "
          .. "be of two exports; export the catalog into it again", dir, EXPORT_INCOMPLETE)
      end
      local n = line:match("^(ducklake_[%w_]+)%.ndjson$") or line:match("^(ducklake_[%w_]+)%.json$")
      if n then names[#names + 1] = { n, line } end
    end
    table.sort(names, function(a, b) return a[1] < b[1] end)
    return names
  end
  local cache
  function src.begin()
    cache = {}
    src.tables_cache = nil
  end
  function src.finish()
    cache = nil
    src.tables_cache = nil
  end
  function src.close() cache = nil end
  local function load(t)
    if not cache[t.name] then
      local rows = moraine.read_ndjson(dir .. "/" .. t.file)
      cache[t.name] = rows
    end
    return cache[t.name]
  end
  function src.tables()
    if src.tables_cache then return src.tables_cache end
    local out = {}
    local columns = sqlite.columns
    for _, e in ipairs(list()) do
      local name = e[1]
      local rows, cols = moraine.read_ndjson(dir .. "/" .. e[2])
      cache[name] = rows
      if #cols == 0 and columns[name] then cols = columns[name] end
      local t = { name = name, file = e[2], columns = cols, kinds = {}, placement = placement(name, cols) }
      out[#out + 1] = t
      out[name] = t
    end
    if #out == 0 then raise("EIO", "sync: %s holds no ducklake_*.ndjson file", dir) end
    src.tables_cache = out
    return out
  end
  local function within(v, lo, hi)
    if v == nil or v == NULL then return false end
    return ilt(lo, v) and not ilt(hi, v)
  end
  local function in_ids(f, v)
    if not f.table_ids then return true end
    for _, id in ipairs(f.table_ids) do
      if v ~= nil and v ~= NULL and inum(v) == inum(id) then return true end
    end
    return false
  end
  local function select(t, f)
    local rows = load(t)
    local match
    if f and f.kind == "id" then
      match = function(r) return within(r[f.column], f.lo, f.hi) and in_ids(f, r.table_id) end
    elseif f and f.kind == "versions" then
      match = function(r) return within(r.begin_snapshot, f.lo, f.hi) or within(r.end_snapshot, f.lo, f.hi) end
    elseif f and f.kind == "child" then
      -- the child rows indexed by their parent key once per round; then each
      -- batch looks up the children of the parents that begin in it
      local idx = cache["#children:" .. t.name]
      if not idx then
        idx = {}
        for i, r in ipairs(rows) do
          local k = {}
          for j, c in ipairs(f.keys) do k[j] = vform(r[c]) end
          k = table.concat(k, "\0")
          local l = idx[k]
          if not l then
            l = {}
            idx[k] = l
          end
          l[#l + 1] = i
        end
        cache["#children:" .. t.name] = idx
      end
      local ptab = src.tables()[f.parent]
      local picked, begins = {}, {}
      for _, p in ipairs(ptab and load(ptab) or {}) do
        if within(p[f.parent_column], f.lo, f.hi) and in_ids(f, p.table_id) then
          local k = {}
          for i, c in ipairs(f.keys) do k[i] = vform(p[c]) end
          for _, i in ipairs(idx[table.concat(k, "\0")] or {}) do
            if not begins[i] then picked[#picked + 1] = i end
            begins[i] = p[f.parent_column]
          end
        end
      end
      table.sort(picked)
      local n = 0
      return function()
        n = n + 1
        local i = picked[n]
        if i == nil then return nil end
        local r = rows[i]
        for _, c in ipairs(t.columns) do
          if r[c] == nil then r[c] = NULL end
        end
        return r, i - 1, begins[i]
      end
    else
      match = function() return true end
    end
    local i = 0
    return function()
      while true do
        i = i + 1
        local r = rows[i]
        if r == nil then return nil end
        if match(r) then
          for _, c in ipairs(t.columns) do
            if r[c] == nil then r[c] = NULL end
          end
          return r, i - 1
        end
      end
    end
  end
  function src.select(_, t, f)
    src.reads.queries = src.reads.queries + 1
    local it = select(t, f)
    local rows = src.reads.rows
    return function()
      local row, pos, extra = it()
      if row ~= nil then rows[t.name] = (rows[t.name] or 0) + 1 end
      return row, pos, extra
    end
  end
  function src.snapshot_stats(_, at)
    local t = src.tables().ducklake_snapshot
    if not t then return nil, "0", "0" end
    local newest, n, sum = nil, 0, 0
    for _, r in ipairs(load(t)) do
      local id = r.snapshot_id
      if id ~= nil and id ~= NULL then
        if newest == nil or ilt(newest, id) then newest = id end
        if at ~= nil and not ilt(at, id) then
          n = n + 1
          sum = sum + id
        end
      end
    end
    return newest, tostring(n), int_text(sum)
  end
  function src.commit_ids(_, after)
    local seen, ids = {}, {}
    local function add(v)
      if v == nil or v == NULL then return end
      if after ~= nil and not ilt(after, v) then return end
      local k = inum(v)
      if not seen[k] then
        seen[k] = true
        ids[#ids + 1] = v
      end
    end
    for _, t in ipairs(src.tables()) do
      if t.placement == "snapshot" then
        for _, r in ipairs(load(t)) do add(r.snapshot_id) end
      elseif t.placement == "temporal" then
        for _, r in ipairs(load(t)) do
          add(r.begin_snapshot)
          add(r.end_snapshot)
        end
      end
    end
    table.sort(ids, ilt)
    return ids
  end
  return src
end

--- Opens a source (see "Sources").
-- @tparam string spec `postgres:CONNINFO`, a `postgres://` or
--   `postgresql://` URI, a directory of NDJSON files, or a SQLite file
-- @return a source object (methods `begin`, `finish`, `tables`,
--   `commit_ids`, `select`, `snapshot_stats`, `close`; fields `kind`
--   "postgres", "sqlite" or "ndjson", `label`, and `reads = {queries = n,
--   rows = {table name -> rows returned}}`, counted since the source was
--   opened: what a round read, for tests and benchmarks)
-- @raise EIO (cannot connect, open or read; the message names the source),
--   EINVAL (a file that is not a SQLite database); a plain string error when
--   the LuaSQL driver needed is not installed or `spec` is not a string
function M.open(spec)
  if type(spec) ~= "string" then
    error("bad argument #1 to 'source' (string expected, got " .. type(spec) .. ")", 2)
  end
  local conninfo = spec:match("^postgres:(.*)$")
  if spec:match("^postgres://") or spec:match("^postgresql://") then conninfo = spec end
  if conninfo then return open_postgres(conninfo) end
  local ok, lfs_or_dir = pcall(function()
    local p = io.open(spec .. "/.", "rb")
    if p then p:close() return true end
    return false
  end)
  if ok and lfs_or_dir then return open_ndjson(spec) end
  return open_sqlite(spec)
end

--- The child tables of DuckLake's catalog: name -> `{parent =, keys =}` (the
-- parent table and the columns that match the parent's key).
M.CHILD = CHILD
--- `placement(name, columns)`: "snapshot", "temporal", "child" or "rows", as
-- the engine places a table.
M.placement = placement
--- `vform(v)`: one value's canonical string (two values are the same DuckLake
-- value exactly when their forms are equal).
M.vform = vform
--- `ilt(a, b)`: a < b for two exact integers (number or int64 cdata).
M.ilt = ilt
--- `inum(v)`: an exact integer as a string usable as a Lua table key.
M.inum = inum
--- `parse_int(s)`: decimal integer text to an exact integer.
M.parse_int = parse_int

--- The canonical form of a row: its columns `cols` (array of names, in order)
-- each as `name=<value form>`, joined; equal for two rows exactly when every
-- value is the same DuckLake value (moraine.sync's compare).
-- @tparam table row column name -> value
-- @tparam table cols column names
-- @treturn string
function M.row_form(row, cols)
  local parts = {}
  for i, c in ipairs(cols) do parts[i] = c .. "=" .. vform(row[c]) end
  return table.concat(parts, "\0")
end

--- `same_int(a, b)`: two exact integers (or nils) are equal.
function M.same_int(a, b)
  if a == nil or b == nil then return a == b end
  return inum(a) == inum(b)
end

return M
