--- moraine.sqlite — DuckLake catalogs kept in SQLite, into and out of moraine.
--
--     local moraine = require "moraine"
--     local sqlite = require "moraine.sqlite"
--     local db = moraine.open("/tmp/lake.moraine")
--     sqlite.import(db, "catalog.sqlite")      -- a DuckLake catalog kept in SQLite
--     sqlite.export_sql(db, "catalog.sql")     -- then: sqlite3 new.sqlite < catalog.sql
--
-- ## How SQLite is read: LuaSQL, every value exact
--
-- `import` reads the file with LuaSQL's SQLite driver (Debian package
-- `lua-sql-sqlite3`, `require "luasql.sqlite3"`), which works on Lua 5.4 and
-- LuaJIT alike, opened read-only (`file:<path>?mode=ro`, so a missing file is
-- never created). LuaSQL hands over TEXT and BLOB values with every byte (NUL
-- bytes and invalid UTF-8 included) and REAL values as doubles, but on LuaJIT
-- it turns INTEGER values into doubles, which loses int64 precision above
-- 2^53. So every column is selected as `typeof(col)` plus the value, with
-- INTEGER values cast to their decimal text in SQL (`CAST(col AS TEXT)`,
-- exact), and that text is turned back into an exact integer here (a Lua 5.4
-- integer; on LuaJIT a number within +-2^53, else an `int64_t` cdata, through
-- `moraine.json_decode`). The sqlite3 command line tool was the other choice:
-- its `-json` output loses bytes (NUL, invalid UTF-8) and its `.mode quote`
-- output would need a second parser; LuaSQL needs neither.
--
-- SQLite has no BOOLEAN: DuckLake's BOOLEAN columns hold the integers 0 and 1,
-- which `db:import_rows` turns into false/true for the columns moraine knows.
--
-- ## The SQL script of export_sql
--
-- `export_sql` writes one script that `sqlite3 new.db < script.sql` loads
-- (BEGIN; CREATE TABLE ...; INSERT ...; COMMIT;), every table of the catalog
-- with DuckLake's v1.0 column types (1.1-dev1 additions included) and every
-- row, all versions, in the catalog's original row order. Literals:
--
-- - NULL; integers in decimal, exact over int64 (`-9223372036854775808`
--   included, which SQLite reads as an integer); booleans as `TRUE`/`FALSE`
--   (keywords SQLite >= 3.23 and DuckDB both take; SQLite stores 1/0);
-- - reals with 17 significant digits (they read back as the same double);
--   infinities as `9e999`/`-9e999`; NaN is refused (EINVAL naming table,
--   row and column: SQLite has no NaN and would store NULL);
-- - strings as `'...'` with `'` doubled, newlines and any other valid UTF-8
--   kept as they are;
-- - a string holding a NUL byte or invalid UTF-8 as `CAST(X'<hex>' AS VARCHAR)`:
--   SQLite keeps the exact bytes as TEXT and `import` reads them back whole;
-- - a string in a column whose declared type has no TEXT affinity in SQLite
--   (UUID and TIMESTAMP WITH TIME ZONE have NUMERIC affinity) that SQLite
--   would turn into a number (`'12'`, `' 1e5 '`, `'1.'`), or that holds a NUL
--   byte, as a blob `X'<hex>'`: SQLite converts such text on INSERT, a blob it
--   keeps as it is, and `import` reads a blob as the string of its bytes;
-- - a nested JSON value (`{json = "..."}`) as its text (it comes back as a
--   string).
--
-- Limits, all about columns moraine does not know (e.g. inlined data tables),
-- whose types are inferred from their values: a real with an integral value
-- (2.0) comes back as an integer (LuaJIT cannot tell them apart, and
-- `db:import_rows` makes them integers on both runtimes); booleans come back
-- as 0/1; a column mixing value types is VARCHAR, and SQLite turns the
-- numbers in it into text. A table that has no rows and whose columns are not
-- known (an empty table moraine does not know, imported from NDJSON) cannot
-- be created in SQL: it is left out with a comment.
--
-- @module moraine.sqlite

local moraine = require "moraine"

local core = moraine.core
local NULL = moraine.null

local M = {}

-- ---- DuckLake's tables ------------------------------------------------------------
-- v1.0 (DuckLake's specification, "Tables") plus the 1.1-dev1 additions
-- (row_group_count, ducklake_view_column_tag). Codes: B BIGINT, P BIGINT
-- PRIMARY KEY, V VARCHAR, N VARCHAR NOT NULL, O BOOLEAN, U UUID, T TIMESTAMP
-- WITH TIME ZONE.
local SCHEMA_TEXT = {
  ducklake_metadata = "key:N,value:N,scope:V,scope_id:B",
  ducklake_snapshot = "snapshot_id:P,snapshot_time:T,schema_version:B,next_catalog_id:B,next_file_id:B",
  ducklake_snapshot_changes = "snapshot_id:P,changes_made:V,author:V,commit_message:V,commit_extra_info:V",
  ducklake_schema = "schema_id:P,schema_uuid:U,begin_snapshot:B,end_snapshot:B,schema_name:V,path:V,path_is_relative:O",
  ducklake_table = "table_id:B,table_uuid:U,begin_snapshot:B,end_snapshot:B,schema_id:B,table_name:V,path:V,"
    .. "path_is_relative:O",
  ducklake_view = "view_id:B,view_uuid:U,begin_snapshot:B,end_snapshot:B,schema_id:B,view_name:V,dialect:V,sql:V,"
    .. "column_aliases:V",
  ducklake_column = "column_id:B,begin_snapshot:B,end_snapshot:B,table_id:B,column_order:B,column_name:V,"
    .. "column_type:V,initial_default:V,default_value:V,nulls_allowed:O,parent_column:B,default_value_type:V,"
    .. "default_value_dialect:V",
  ducklake_macro = "schema_id:B,macro_id:B,macro_name:V,begin_snapshot:B,end_snapshot:B",
  ducklake_macro_impl = "macro_id:B,impl_id:B,dialect:V,sql:V,type:V",
  ducklake_macro_parameters = "macro_id:B,impl_id:B,column_id:B,parameter_name:V,parameter_type:V,default_value:V,"
    .. "default_value_type:V",
  ducklake_data_file = "data_file_id:P,table_id:B,begin_snapshot:B,end_snapshot:B,file_order:B,path:V,"
    .. "path_is_relative:O,file_format:V,record_count:B,file_size_bytes:B,footer_size:B,row_id_start:B,"
    .. "partition_id:B,encryption_key:V,mapping_id:B,partial_max:B,row_group_count:B",
  ducklake_delete_file = "delete_file_id:P,table_id:B,begin_snapshot:B,end_snapshot:B,data_file_id:B,path:V,"
    .. "path_is_relative:O,format:V,delete_count:B,file_size_bytes:B,footer_size:B,encryption_key:V,partial_max:B,"
    .. "row_group_count:B",
  ducklake_files_scheduled_for_deletion = "data_file_id:B,path:V,path_is_relative:O,schedule_start:T",
  ducklake_inlined_data_tables = "table_id:B,table_name:V,schema_version:B",
  ducklake_column_mapping = "mapping_id:B,table_id:B,type:V",
  ducklake_name_mapping = "mapping_id:B,column_id:B,source_name:V,target_field_id:B,parent_column:B,is_partition:O",
  ducklake_table_stats = "table_id:B,record_count:B,next_row_id:B,file_size_bytes:B",
  ducklake_table_column_stats = "table_id:B,column_id:B,contains_null:O,contains_nan:O,min_value:V,max_value:V,"
    .. "extra_stats:V",
  ducklake_file_column_stats = "data_file_id:B,table_id:B,column_id:B,column_size_bytes:B,value_count:B,"
    .. "null_count:B,min_value:V,max_value:V,contains_nan:O,extra_stats:V",
  ducklake_file_variant_stats = "data_file_id:B,table_id:B,column_id:B,variant_path:V,shredded_type:V,"
    .. "column_size_bytes:B,value_count:B,null_count:B,min_value:V,max_value:V,contains_nan:O,extra_stats:V",
  ducklake_partition_info = "partition_id:B,table_id:B,begin_snapshot:B,end_snapshot:B",
  ducklake_partition_column = "partition_id:B,table_id:B,partition_key_index:B,column_id:B,transform:V",
  ducklake_file_partition_value = "data_file_id:B,table_id:B,partition_key_index:B,partition_value:V",
  ducklake_sort_info = "sort_id:B,table_id:B,begin_snapshot:B,end_snapshot:B",
  ducklake_sort_expression = "sort_id:B,table_id:B,sort_key_index:B,expression:V,dialect:V,sort_direction:V,"
    .. "null_order:V",
  ducklake_tag = "object_id:B,begin_snapshot:B,end_snapshot:B,key:V,value:V",
  ducklake_column_tag = "table_id:B,column_id:B,begin_snapshot:B,end_snapshot:B,key:V,value:V",
  ducklake_schema_versions = "begin_snapshot:B,schema_version:B,table_id:B",
  ducklake_view_column_tag = "view_id:B,column_name:V,begin_snapshot:B,end_snapshot:B,key:V,value:V",
}

local TYPE_OF_CODE = {
  B = "BIGINT", P = "BIGINT PRIMARY KEY", V = "VARCHAR", N = "VARCHAR NOT NULL", O = "BOOLEAN", U = "UUID",
  T = "TIMESTAMP WITH TIME ZONE",
}

-- name -> { columns = {name, ...}, types = {column -> SQL type} }
local SCHEMA = {}
for name, text in pairs(SCHEMA_TEXT) do
  local t = { columns = {}, types = {} }
  for col, code in text:gmatch("([%w_]+):(%u)") do
    t.columns[#t.columns + 1] = col
    t.types[col] = assert(TYPE_OF_CODE[code])
  end
  SCHEMA[name] = t
end

--- The SQL types `export_sql` gives the columns of DuckLake's tables (v1.0
-- plus 1.1-dev1): `types["ducklake_snapshot"].snapshot_id` is
-- `"BIGINT PRIMARY KEY"`. For reading only.
M.types = {}
for name, t in pairs(SCHEMA) do M.types[name] = t.types end

--- The columns of DuckLake's tables (v1.0 plus 1.1-dev1) in DuckLake's order:
-- `columns["ducklake_partition_info"]` is `{"partition_id", "table_id",
-- "begin_snapshot", "end_snapshot"}`. For reading only.
M.columns = {}
for name, t in pairs(SCHEMA) do M.columns[name] = t.columns end

-- ---- values -----------------------------------------------------------------------

local function raise(code, fmt, ...)
  core.raise(code, string.format(fmt, ...))
end

local function is_integer(v)
  if type(v) == "cdata" then return true end
  if type(v) ~= "number" then return false end
  if math.type then return math.type(v) == "integer" end
  return v == math.floor(v) and v > -2 ^ 63 and v < 2 ^ 63 -- LuaJIT: any integral number
end

local function int_text(v)
  if type(v) == "cdata" then return (tostring(v):gsub("U?LL$", "")) end
  if math.type then return tostring(v) end
  if v == 0 then return "0" end
  return string.format("%.0f", v)
end

-- SQLite's decimal integer text (CAST(x AS TEXT)) -> an exact integer
local function parse_int(s)
  if #s <= 15 then return tonumber(s) end -- exact in a double; a Lua 5.4 integer
  return moraine.json_decode(s) -- exact int64 (LuaJIT: int64_t cdata when beyond 2^53)
end

-- Lua 5.4's utf8.len (strict: no overlong forms, no surrogates, nothing
-- above U+10FFFF; nil at the first bad byte) answers the same question in C,
-- five times faster than the loop below (a string of 55 ASCII bytes); Lua
-- 5.3's accepts surrogates, LuaJIT has none
local utf8_len = _VERSION == "Lua 5.4" and utf8 and utf8.len

local function valid_utf8(s)
  if utf8_len then return utf8_len(s) ~= nil end
  if not s:find("[\128-\255]") then return true end
  local i, n = 1, #s
  while i <= n do
    local c = s:byte(i)
    if c < 0x80 then
      i = i + 1
    elseif c >= 0xC2 and c <= 0xDF then
      local c2 = s:byte(i + 1)
      if not c2 or c2 < 0x80 or c2 > 0xBF then return false end
      i = i + 2
    elseif c >= 0xE0 and c <= 0xEF then
      local c2, c3 = s:byte(i + 1, i + 2)
      if not c3 or c3 < 0x80 or c3 > 0xBF then return false end
      local lo, hi = 0x80, 0xBF
      if c == 0xE0 then lo = 0xA0 elseif c == 0xED then hi = 0x9F end
      if c2 < lo or c2 > hi then return false end
      i = i + 3
    elseif c >= 0xF0 and c <= 0xF4 then
      local c2, c3, c4 = s:byte(i + 1, i + 3)
      if not c4 or c3 < 0x80 or c3 > 0xBF or c4 < 0x80 or c4 > 0xBF then return false end
      local lo, hi = 0x80, 0xBF
      if c == 0xF0 then lo = 0x90 elseif c == 0xF4 then hi = 0x8F end
      if c2 < lo or c2 > hi then return false end
      i = i + 4
    else
      return false
    end
  end
  return true
end

-- Whether SQLite would store this text as a number in a column of NUMERIC,
-- INTEGER or REAL affinity: a decimal integer or real literal, optionally
-- signed, with an optional exponent, surrounded by ASCII whitespace.
local function looks_numeric(s)
  local body = s:match("^%s*(.-)%s*$")
  local mant, rest = body:match("^[+-]?([%d%.]+)(.*)$")
  if not mant then return false end
  if not (mant:match("^%d+%.?%d*$") or mant:match("^%.%d+$")) then return false end
  return rest == "" or rest:match("^[eE][+-]?%d+$") ~= nil
end

-- SQLite's affinity of a declared column type (its five rules, in order).
local function affinity(decl)
  local u = decl:upper()
  if u:find("INT", 1, true) then return "INTEGER" end
  if u:find("CHAR", 1, true) or u:find("CLOB", 1, true) or u:find("TEXT", 1, true) then return "TEXT" end
  if u == "" or u:find("BLOB", 1, true) then return "BLOB" end
  if u:find("REAL", 1, true) or u:find("FLOA", 1, true) or u:find("DOUB", 1, true) then return "REAL" end
  return "NUMERIC"
end

local function hex(s)
  return (s:gsub(".", function(c) return string.format("%02X", c:byte()) end))
end

local function string_literal(s, aff)
  local has_nul = s:find("\0", 1, true) ~= nil
  if aff ~= "TEXT" and aff ~= "BLOB" and (has_nul or looks_numeric(s)) then
    return "X'" .. hex(s) .. "'"
  end
  if has_nul or not valid_utf8(s) then return "CAST(X'" .. hex(s) .. "' AS VARCHAR)" end
  return "'" .. s:gsub("'", "''") .. "'"
end

local function literal(v, aff)
  if v == NULL then return "NULL" end
  local t = type(v)
  if t == "boolean" then return v and "TRUE" or "FALSE" end
  if t == "string" then return string_literal(v, aff) end
  if t == "table" and type(v.json) == "string" then return string_literal(v.json, aff) end
  if is_integer(v) then return int_text(v) end
  if t == "number" then
    if v ~= v then raise("EINVAL", "sqlite: NaN has no SQLite form (SQLite stores it as NULL, which reads back as NULL)") end
    if v == math.huge then return "9e999" end
    if v == -math.huge then return "-9e999" end
    local s = string.format("%.17g", v)
    if not s:find("[%.eEn]") then s = s .. ".0" end
    return s
  end
  raise("EINVAL", "sqlite.export_sql: a value of type %s has no SQL form", t)
end

-- SQL type of a column moraine does not know, from its values
local function infer_type(entries, col)
  local kind
  for _, e in ipairs(entries) do
    local v = e.row[col]
    local k
    if v == NULL or v == nil then
      k = nil
    elseif type(v) == "boolean" then
      k = "BOOLEAN"
    elseif is_integer(v) then
      k = "BIGINT"
    elseif type(v) == "number" then
      k = "DOUBLE"
    else
      k = "VARCHAR"
    end
    if k then
      if kind == nil then
        kind = k
      elseif kind ~= k then
        if (kind == "BIGINT" and k == "DOUBLE") or (kind == "DOUBLE" and k == "BIGINT") then
          kind = "DOUBLE"
        else
          return "VARCHAR"
        end
      end
    end
  end
  return kind or "VARCHAR"
end

-- SQL keywords that cannot name a column or table unquoted (SQLite or DuckDB)
local RESERVED = {}
for w in ([[ALL ALTER ANALYSE ANALYZE AND ANY ARRAY AS ASC ASYMMETRIC AUTOINCREMENT BETWEEN BOTH CASE CAST CHECK
  COLLATE COLUMN COMMIT CONSTRAINT CREATE CROSS CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DEFAULT DEFERRABLE
  DELETE DESC DISTINCT DO DROP ELSE END ESCAPE EXCEPT EXISTS FALSE FETCH FOR FOREIGN FROM FULL GLOB GRANT GROUP
  HAVING IN INDEX INITIALLY INNER INSERT INTERSECT INTO IS ISNULL JOIN LATERAL LEADING LEFT LIKE LIMIT NATURAL NOT
  NOTHING NOTNULL NULL OFFSET ON ONLY OR ORDER OUTER PLACING PRIMARY REFERENCES REGEXP RETURNING RIGHT ROLLBACK
  SELECT SET SOME SYMMETRIC TABLE THEN TO TRAILING TRANSACTION TRUE UNION UNIQUE UPDATE USING VALUES WHEN WHERE
  WINDOW WITH]]):gmatch("%u[%u_]*") do
  RESERVED[w] = true
end

local function ident(name)
  if name:match("^[%a_][%w_]*$") and not RESERVED[name:upper()] then return name end
  return '"' .. name:gsub('"', '""') .. '"'
end

-- ---- export -------------------------------------------------------------------------

-- The statements that create every relation of the catalog and insert its
-- rows (every version, original order): emit("sql", text) without the
-- final ";", emit("comment", text) for a table left out. Shared by
-- export_sql (a script) and export_sqlite (a file); @who names the caller
-- in errors; @progress as export_sql's. Every table is read in one read
-- transaction (`db:read`): the export is the catalog at one point, a commit
-- landing while it runs in every table or in none.
local function each_statement(db, progress, who, emit)
  -- one read transaction for the whole export: a commit landing while it runs is in every table or in none
  db:read(function(rd)
    local relations = db:relations()
    for ri, rel in ipairs(relations) do
      local known = SCHEMA[rel.name]
      local cols = rel.columns
      if #cols == 0 and known then cols = known.columns end
      if #cols == 0 then
        emit("comment", rel.name .. ": no columns known and no rows; not created")
      else
        -- progress: (rows read, 0) every 4096 rows (the total is not known yet)
        local entries = {}
        for row, _, ord in rd:scan(rel.name, { at = moraine.ALL }) do
          entries[#entries + 1] = { row = row, ord = ord }
          if progress and #entries % 4096 == 0 and progress(#entries, 0, rel.name, ri, #relations) == true then
            raise("EINVAL", "%s: export cancelled", who)
          end
        end
        -- the original row order (by ord, stable). Positions are usually
        -- distinct and dense: then each entry goes straight to its place
        -- (linear, no silent sort of a large table); otherwise a stable sort.
        local placed, lo = {}, nil
        for _, en in ipairs(entries) do
          local o = tonumber(en.ord)
          if lo == nil or o < lo then lo = o end
        end
        local dense = lo ~= nil
        for _, en in ipairs(entries) do
          local i = tonumber(en.ord) - lo + 1
          if i > #entries or placed[i] then dense = false break end
          placed[i] = en
        end
        if dense then
          entries = placed
        else
          for i, en in ipairs(entries) do en.seq = i end
          table.sort(entries, function(a, b)
            if a.ord ~= b.ord then return a.ord < b.ord end
            return a.seq < b.seq
          end)
        end
        local defs, affs = {}, {}
        for i, c in ipairs(cols) do
          local ty = known and known.types[c] or infer_type(entries, c)
          defs[i] = ident(c) .. " " .. ty
          affs[i] = affinity(ty)
        end
        local tname = ident(rel.name)
        emit("sql", "CREATE TABLE " .. tname .. " (" .. table.concat(defs, ", ") .. ")")
        local lits = {}
        local total = #entries
        if progress and progress(0, total, rel.name, ri, #relations) == true then
          raise("EINVAL", "%s: export cancelled", who)
        end
        for n, en in ipairs(entries) do
          local row = en.row
          for i, c in ipairs(cols) do
            local v = row[c]
            if v == nil then v = NULL end
            if v ~= v then
              raise("EINVAL", "%s: %s row %s: column '%s' holds NaN, which SQLite cannot store (it would read back as "
                .. "NULL)", who, rel.name, tostring(en.ord), c)
            end
            lits[i] = literal(v, affs[i])
          end
          emit("sql", "INSERT INTO " .. tname .. " VALUES (" .. table.concat(lits, ", ", 1, #cols) .. ")")
          if progress and (n % 1000 == 0 or n == total) and progress(n, total, rel.name, ri, #relations) == true then
            raise("EINVAL", "%s: export cancelled", who)
          end
        end
      end
    end
  end)
end

-- the end of an export written into temporary file `tmp` (moraine.create_temp_file): its bytes synced, then
-- renamed to `path`, then the rename synced (the directory), so `path` holds the old file or the whole new one,
-- after a crash too; EIO naming `path` (the temporary file removed)
local function put_in_place(fname, tmp, path)
  local ok, err = pcall(moraine.sync_path, tmp)
  if ok then
    local renamed, rerr = os.rename(tmp, path)
    if renamed then
      ok, err = pcall(moraine.sync_path, path:match("^(.*)/[^/]*$") or ".")
      if not ok then
        raise("EIO", "%s: %s was written but its directory could not be synced: %s", fname, path,
          moraine.is_error(err) and err.message or tostring(err))
      end
      return
    end
    err = rerr
  end
  os.remove(tmp)
  raise("EIO", "%s: cannot write %s: %s", fname, path, moraine.is_error(err) and err.message or tostring(err))
end

--- Writes the catalog as a SQL script that creates DuckLake's tables in SQLite.
-- For each relation of the catalog (in `db:relations()` order) a
-- `CREATE TABLE name (col TYPE, ...)` with the columns in the catalog's order
-- and DuckLake's types for the tables and columns it defines (see `types`:
-- BIGINT, BIGINT PRIMARY KEY, VARCHAR, VARCHAR NOT NULL, BOOLEAN, UUID,
-- TIMESTAMP WITH TIME ZONE; an empty table whose columns the catalog does not
-- know gets DuckLake's), the types of other columns inferred from their
-- values (integers BIGINT, reals DOUBLE, booleans BOOLEAN, anything else or
-- nothing VARCHAR); then one `INSERT INTO name VALUES (...);` per row, every
-- version (`db:scan(name, {at = moraine.ALL})`), in the catalog's original row
-- order (by `ord`). All of it between `BEGIN;` and `COMMIT;`. Literals are
-- described in the module's doc ("The SQL script of export_sql"); the script
-- loads with `sqlite3 new.db < script.sql`. The file is written under a
-- temporary name beside `path` (`moraine.create_temp_file`, its own for each
-- export), synced, renamed at the end and the directory synced: it appears
-- whole or not at all, after a crash too, and two exports to one `path` at
-- once never write into each other's file (the later rename wins). Secret columns (encryption keys) are written exactly, as
-- stored (the script is a copy of the catalog); when the catalog holds any
-- (`rd:secret_count() > 0`) the file is created 0600 (docs/security.md).
-- @param db a catalog handle (`moraine.open`)
-- @tparam string path the script to write (replaced if it exists)
-- @tparam[opt] table opts `progress(done, total, table, i, n)`: for table
--   `table`, the `i`-th of `n`, first while its rows are read, with `total`
--   0 (not known yet) and `done` the rows read (every 4096 rows), then as
--   its rows are written, `done` of `total` (at the start, every 1000 rows
--   and at the end); returning `true` cancels the export (EINVAL "export
--   cancelled", no file written); an error it raises is re-raised unchanged
-- @return true
-- @raise EIO (the file cannot be written; the message names it), EINVAL
--   (cancelled, an unknown option, or `path` in the catalog's own directory:
--   `db:path_in_catalog`, nothing written), the errors of `db:scan` and
--   `db:relations`; a plain string error for arguments of the wrong type
function M.export_sql(db, path, opts)
  if type(db) ~= "userdata" then
    error("bad argument #1 to 'export_sql' (moraine catalog expected, got " .. type(db) .. ")", 2)
  end
  if type(path) ~= "string" then
    error("bad argument #2 to 'export_sql' (string expected, got " .. type(path) .. ")", 2)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error("bad argument #3 to 'export_sql' (table or nil expected, got " .. type(opts) .. ")", 2)
  end
  local progress
  for k, v in pairs(opts or {}) do
    if k ~= "progress" then raise("EINVAL", "sqlite.export_sql: unknown option '%s'", tostring(k)) end
    if type(v) ~= "function" then raise("EINVAL", "sqlite.export_sql: progress must be a function") end
    progress = v
  end
  if db:path_in_catalog(path) or db:path_in_catalog(path .. ".tmp-") then
    raise("EINVAL", "sqlite.export_sql: %s is in the catalog's own directory: the export would be written beside "
      .. "(or over) the catalog's data.mdb; write it outside the catalog directory", path)
  end
  -- a script holding keys is readable by its owner only: made 0600 before a byte is written
  local tmp = moraine.create_temp_file(path, db:read(function(rd) return rd:secret_count() end) > 0)
  local f, err = io.open(tmp, "wb")
  if not f then
    os.remove(tmp)
    raise("EIO", "sqlite.export_sql: cannot write %s: %s", path, tostring(err))
  end
  local function put(...)
    local ok, werr = f:write(...)
    if not ok then raise("EIO", "sqlite.export_sql: cannot write %s: %s", path, tostring(werr)) end
  end
  local ok, e = pcall(function()
    put("-- DuckLake catalog written by moraine ", moraine.version, " (moraine.sqlite.export_sql)\n", "BEGIN;\n")
    each_statement(db, progress, "sqlite.export_sql", function(kind, text)
      if kind == "comment" then put("-- ", text, "\n") else put(text, ";\n") end
    end)
    put("COMMIT;\n")
  end)
  if not ok then
    pcall(f.close, f)
    os.remove(tmp)
    error(e, 0)
  end
  local closed, cerr = f:close()
  if not closed then
    os.remove(tmp)
    raise("EIO", "sqlite.export_sql: cannot write %s: %s", path, tostring(cerr))
  end
  put_in_place("sqlite.export_sql", tmp, path)
  return true
end

-- ---- import -------------------------------------------------------------------------

local function sql_quote(s) return "'" .. s:gsub("'", "''") .. "'" end
local function sql_ident(s) return '"' .. s:gsub('"', '""') .. '"' end

-- file: URI of a path (percent-encoding what a URI gives a meaning to)
local function file_uri(path)
  return "file:" .. path:gsub("[%%?#]", function(c) return string.format("%%%02X", c:byte()) end) .. "?mode=ro"
end

local function load_driver()
  local ok, driver = pcall(require, "luasql.sqlite3")
  if not ok then
    error("moraine.sqlite: LuaSQL's SQLite driver (luasql.sqlite3) is not installed "
      .. "(Debian: apt-get install lua-sql-sqlite3): " .. tostring(driver), 3)
  end
  return driver
end

-- Runs @sql on @con and returns the rows (arrays, NULL as nil: use #cols).
local function query(con, path, sql)
  local cur, err = con:execute(sql)
  if not cur then
    err = tostring(err):gsub("^LuaSQL: ", "")
    if err:find("not a database", 1, true) then
      raise("EINVAL", "sqlite.import: %s is not a SQLite database (%s)", path, err)
    end
    raise("EIO", "sqlite.import: %s: %s", path, err)
  end
  local rows = {}
  local row = cur:fetch({}, "n")
  while row do
    rows[#rows + 1] = row
    row = cur:fetch({}, "n")
  end
  return rows
end

--- Reads rows of one table of an open LuaSQL SQLite connection, every value
-- exact (see "How SQLite is read"): each column selected as `typeof(col)`
-- and its value, INTEGER values as their decimal text made exact integers
-- again, NULL as `moraine.null`, TEXT and BLOB as the string of their bytes,
-- REAL as a float. `moraine.push` reads a target catalog with it.
-- @param con a LuaSQL SQLite connection
-- @tparam string tname the table
-- @tparam {string,...} cols the columns to read, in that order
-- @tparam[opt] string where a SQL condition (text after WHERE), or nil
-- @tparam[opt] function each called once per row read, no arguments
-- @tparam[opt] string path the file, named in errors (default "SQLite")
-- @return array of rows, each an array of values in `cols` order
-- @raise EINVAL (the file is not a SQLite database), EIO (any other SQLite
--   error, with SQLite's message)
function M.select_rows(con, tname, cols, where, each, path)
  local sel = {}
  for _, c in ipairs(cols) do
    local q = sql_ident(c)
    sel[#sel + 1] = "typeof(" .. q .. ")"
    sel[#sel + 1] = "CASE typeof(" .. q .. ") WHEN 'integer' THEN CAST(" .. q .. " AS TEXT) ELSE " .. q .. " END"
  end
  local n = #cols
  local rows = {}
  for r, raw in ipairs(query(con, path or "SQLite", "SELECT " .. table.concat(sel, ", ") .. " FROM " .. sql_ident(tname)
    .. (where and (" WHERE " .. where) or "") .. " ORDER BY rowid")) do
    if each then each() end
    local row = {}
    for c = 1, n do
      local ty, v = raw[2 * c - 1], raw[2 * c]
      if ty == "null" then
        row[c] = NULL
      elseif ty == "integer" then
        row[c] = parse_int(v)
      else -- real: a float; text, blob: the string of their bytes
        row[c] = v
      end
    end
    rows[r] = row
  end
  return rows
end

-- Reads every ducklake_* table of the open database: an array of
-- {name =, columns =, rows =} as db:import_rows takes them.
-- @progress (may be nil) gets (rows read so far, 0) every 4096 rows and at
-- the end, as moraine_import_ndjson reports its check phase; true cancels.
local function read_tables(con, path, progress)
  local nread = 0
  local function tick(last)
    if progress and (last or nread % 4096 == 0) and progress(nread, 0) == true then
      raise("EINVAL", "sqlite.import: import cancelled")
    end
  end
  local names = {}
  for _, r in ipairs(query(con, path, "SELECT name FROM sqlite_master WHERE type = 'table' "
    .. "AND substr(name, 1, 9) = 'ducklake_' ORDER BY rowid")) do
    names[#names + 1] = r[1]
  end
  local have = {}
  for _, n in ipairs(names) do have[n] = true end
  local missing = {}
  for _, need in ipairs({ "ducklake_metadata", "ducklake_snapshot" }) do
    if not have[need] then missing[#missing + 1] = need end
  end
  if #missing > 0 then
    raise("EINVAL", "sqlite.import: %s is not a DuckLake catalog: it has no %s table", path,
      table.concat(missing, " and no "))
  end
  local tables = {}
  for _, name in ipairs(names) do
    local info = query(con, path, "PRAGMA table_info(" .. sql_quote(name) .. ")")
    table.sort(info, function(a, b) return tonumber(a[1]) < tonumber(b[1]) end)
    local cols = {}
    for i, c in ipairs(info) do cols[i] = c[2] end
    local rows = {}
    if #cols > 0 then
      rows = M.select_rows(con, name, cols, nil, function()
        nread = nread + 1
        tick(false)
      end, path)
    end
    tables[#tables + 1] = { name = name, columns = cols, rows = rows }
  end
  tick(true)
  return tables
end

--- Imports a DuckLake catalog kept in SQLite into an empty moraine catalog.
-- Reads every table whose name starts with `ducklake_` (in the order SQLite
-- lists them), its columns in their declared order (`PRAGMA table_info`) and
-- its rows in rowid order, every value exact (see "How SQLite is read"), and
-- hands them to `db:import_rows` (snapshot by snapshot through the staged
-- path; nothing of a failed import remains). The file is opened read-only and
-- never changed.
-- @param db a catalog handle (`moraine.open`), empty
-- @tparam string path the SQLite file
-- @tparam[opt] table opts `progress(done, total)`: first `(rows read so far,
--   0)` while the SQLite tables are read (every 4096 rows and at the end; the
--   total is not known yet), then as for `db:import_rows`; `true` cancels
--   (EINVAL "import cancelled")
-- @return true
-- @raise EIO (the file is missing or cannot be read: "sqlite.import: cannot
--   open <path>: ..."), EINVAL (the file is not a SQLite database: "<path> is
--   not a SQLite database"; it has no ducklake_metadata or no
--   ducklake_snapshot table: "<path> is not a DuckLake catalog: it has no
--   ducklake_snapshot table"; a table every DuckLake catalog of its version
--   has is missing: "the catalog has no ducklake_delete_file table",
--   `catalog_version.require_tables`; an unknown option), and every error of
--   `db:import_rows` (EEXIST: the catalog is not empty; EINVAL naming table,
--   row and column for a value of the wrong type); a plain string error for
--   arguments of the wrong type or when LuaSQL's driver is not installed
function M.import(db, path, opts)
  if type(db) ~= "userdata" then
    error("bad argument #1 to 'import' (moraine catalog expected, got " .. type(db) .. ")", 2)
  end
  if type(path) ~= "string" then
    error("bad argument #2 to 'import' (string expected, got " .. type(path) .. ")", 2)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error("bad argument #3 to 'import' (table expected, got " .. type(opts) .. ")", 2)
  end
  local iopts = {}
  for k, v in pairs(opts or {}) do
    if k ~= "progress" then raise("EINVAL", "sqlite.import: unknown option '%s'", tostring(k)) end
    if type(v) ~= "function" then raise("EINVAL", "sqlite.import: progress must be a function, got %s", type(v)) end
    iopts.progress = v
  end
  local f, err = io.open(path, "rb")
  if not f then raise("EIO", "sqlite.import: cannot open %s: %s", path, tostring(err)) end
  local head, rerr = f:read(16)
  f:close()
  if head == nil and rerr then raise("EIO", "sqlite.import: cannot read %s: %s", path, tostring(rerr)) end
  if head and head ~= "SQLite format 3\0" then
    raise("EINVAL", "sqlite.import: %s is not a SQLite database (no SQLite header)", path)
  end
  local driver = load_driver()
  local env = driver.sqlite3()
  local con, cerr = env:connect(file_uri(path))
  if not con then
    env:close()
    raise("EIO", "sqlite.import: cannot open %s: %s", path, tostring(cerr):gsub("^LuaSQL: ", ""))
  end
  local ok, tables = pcall(read_tables, con, path, iopts.progress)
  con:close()
  env:close()
  if not ok then error(tables, 0) end
  -- every table of the catalog's DuckLake version is there (catalog_version.missing_table)
  local by_name, version = {}, nil
  for _, t in ipairs(tables) do by_name[t.name] = t end
  local meta = by_name.ducklake_metadata
  if meta then
    local ki, vi, si
    for i, c in ipairs(meta.columns) do
      if c == "key" then ki = i elseif c == "value" then vi = i elseif c == "scope" then si = i end
    end
    for _, r in ipairs(ki and vi and meta.rows or {}) do
      if r[ki] == "version" and (not si or r[si] == nil or r[si] == moraine.null) then version = r[vi] end
    end
  end
  require("moraine.catalog_version").require_tables(version, function(n) return by_name[n] ~= nil end, false)
  return db:import_rows(tables, iopts)
end

-- ---- a SQLite catalog file ----------------------------------------------------------

--- The SQL literal of a value for a column of declared type `decl_type`
-- (e.g. "BIGINT", "UUID"), written as `export_sql` writes it (see "The SQL
-- script of export_sql"): exact integers, NULL, TRUE/FALSE, strings whose
-- bytes SQLite keeps. `moraine.push` writes a target's rows with it.
-- @param v a row value (`moraine.null`, boolean, integer, float, string,
--   or `{json = s}`)
-- @tparam string decl_type the column's declared SQL type
-- @treturn string the literal
-- @raise EINVAL (a value with no SQL form: NaN, which SQLite would store as
--   NULL, or e.g. a function)
function M.literal(v, decl_type)
  return literal(v, affinity(decl_type))
end

--- Whether string `s` is valid UTF-8 (no overlong forms, no surrogates,
-- nothing above U+10FFFF): the text PostgreSQL can hold, NUL aside.
-- `moraine.push` refuses other bytes for a PostgreSQL target with it, and a
-- later `moraine.sync` round text that is not UTF-8. Under Lua 5.4 it is
-- `utf8.len` (strict), elsewhere a byte loop: the same answer.
-- @tparam string s
-- @treturn boolean
-- @function valid_utf8
M.valid_utf8 = valid_utf8

--- `is_integer(v)`: whether @v is an exact integer: a Lua 5.4 integer, an
-- int64_t cdata, or on LuaJIT an integral number within +-2^63. Shared with
-- moraine.sync_source and moraine.push_target.
M.is_integer = is_integer

--- `int_text(v)`: an exact integer (see @{is_integer}) as decimal text,
-- without LuaJIT's LL suffix. Shared with moraine.sync_source and
-- moraine.push_target.
M.int_text = int_text

--- A table or column name as SQL writes it: bare when it is a plain
-- identifier and no keyword, else double-quoted.
-- @tparam string name
-- @treturn string
-- @function ident
M.ident = ident

--- LuaSQL's SQLite driver (`require "luasql.sqlite3"`).
-- @return the driver module
-- @raise a plain string error naming the Debian package when it is not installed
function M.driver() return load_driver() end

--- Writes the catalog as a new SQLite DuckLake catalog file that DuckLake
-- can ATTACH (`ATTACH 'ducklake:sqlite:FILE'`): the statements of
-- `export_sql` (same tables, DuckLake's column types, every row, same
-- literals) run through LuaSQL's SQLite driver in one SQLite transaction on
-- a new file beside `path` (`moraine.create_temp_file`: `path .. ".tmp-"`
-- and six random characters, its own for each export), synced and renamed
-- to `path` at the end, the directory synced after, so the file appears
-- whole or not at all, after a crash too, and two exports to one `path` at
-- once each write their own file, the later rename winning (an existing
-- `path` is replaced). Secret
-- columns (encryption keys) are written exactly, as `export_sql` writes
-- them; when the catalog holds any the file is created 0600
-- (docs/security.md).
-- @param db a catalog handle (`moraine.open`)
-- @tparam string path the SQLite file to write
-- @tparam[opt] table opts `progress` as for `export_sql`
-- @return true
-- @raise EIO (the file cannot be written, or SQLite refused a statement:
--   the message names the file and SQLite's words), EINVAL (cancelled, an
--   unknown option, or `path` in the catalog's own directory:
--   `db:path_in_catalog`, nothing written), the errors of `db:scan` and `db:relations`; a plain
--   string error for arguments of the wrong type or when LuaSQL's driver is
--   not installed
function M.export_sqlite(db, path, opts)
  if type(db) ~= "userdata" then
    error("bad argument #1 to 'export_sqlite' (moraine catalog expected, got " .. type(db) .. ")", 2)
  end
  if type(path) ~= "string" then
    error("bad argument #2 to 'export_sqlite' (string expected, got " .. type(path) .. ")", 2)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error("bad argument #3 to 'export_sqlite' (table or nil expected, got " .. type(opts) .. ")", 2)
  end
  local progress
  for k, v in pairs(opts or {}) do
    if k ~= "progress" then raise("EINVAL", "sqlite.export_sqlite: unknown option '%s'", tostring(k)) end
    if type(v) ~= "function" then raise("EINVAL", "sqlite.export_sqlite: progress must be a function") end
    progress = v
  end
  if db:path_in_catalog(path) or db:path_in_catalog(path .. ".tmp-") then
    raise("EINVAL", "sqlite.export_sqlite: %s is in the catalog's own directory: the export would be written beside "
      .. "(or over) the catalog's data.mdb; write it outside the catalog directory", path)
  end
  local driver = load_driver()
  -- a file holding keys is readable by its owner only: created 0600 (empty: a valid SQLite
  -- database) before SQLite writes a byte; SQLite gives its journal the same mode
  local tmp = moraine.create_temp_file(path, db:read(function(rd) return rd:secret_count() end) > 0)
  local env = driver.sqlite3()
  local con, cerr = env:connect(tmp)
  if not con then
    env:close()
    os.remove(tmp)
    raise("EIO", "sqlite.export_sqlite: cannot write %s: %s", path, tostring(cerr):gsub("^LuaSQL: ", ""))
  end
  local function exec(sql)
    local r, err = con:execute(sql)
    if not r then
      raise("EIO", "sqlite.export_sqlite: %s: SQLite refused %s: %s", path, sql:sub(1, 120),
        tostring(err):gsub("^LuaSQL: ", ""))
    end
  end
  local ok, e = pcall(function()
    exec("BEGIN")
    each_statement(db, progress, "sqlite.export_sqlite", function(kind, text)
      if kind == "sql" then exec(text) end
    end)
    exec("COMMIT")
  end)
  con:close()
  env:close()
  if not ok then
    os.remove(tmp)
    os.remove(tmp .. "-journal")
    error(e, 0)
  end
  put_in_place("sqlite.export_sqlite", tmp, path)
  return true
end

return M
