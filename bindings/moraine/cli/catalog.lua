--- moraine.cli.catalog — the catalog reads the `moraine` commands share:
-- opening a catalog read-only, checking a snapshot id, the tables visible at
-- a snapshot and every version of them, finding the table a TABLE argument
-- names, and partition and sort specs in DuckLake's SQL form.
-- @module moraine.cli.catalog

local moraine = require "moraine"
local errors = require "moraine.cli.errors"
local util = require "moraine.cli.util"

local ALL = moraine.ALL
local NULL = moraine.null
local concat = table.concat
local fail, with_hint = errors.fail, errors.with_hint
local istr, key, is_null, num, exists, is_dir = util.istr, util.key, util.is_null, util.num, util.exists, util.is_dir

local catalog_version = require "moraine.catalog_version"
local ident_rules = require "moraine.ident"
local M = {}

-- ---- opening the catalog -------------------------------------------------------------------

--- The hint of an error about the catalog directory.
-- @field NO_CATALOG_HINT
M.NO_CATALOG_HINT = "pass -c DIR (or set MORAINE_CATALOG) to use a catalog elsewhere"

--- The temporary directory a fresh import of a SQLite file keeps inside the
-- catalog directory while it runs (`moraine.sync.import_sqlite`): its NDJSON
-- files, and the mark of commits not all on disk yet (the import syncs once,
-- at its end, and removes the directory after that sync).
-- @field FAST_IMPORT_TMP
M.FAST_IMPORT_TMP = ".moraine-import-sqlite.tmp"

--- Whether an import of a SQLite file into `dir` is running (it holds its
-- temporary directory locked) or ended without finishing (a kill, a crash:
-- the directory is there, unlocked; the catalog's store may lack commits the
-- import made, or hold them torn).
-- @tparam string dir the catalog directory
-- @treturn ?string "running", "interrupted", or nil (neither)
-- @raise EIO when the directory cannot be opened or locked
function M.fast_import_state(dir)
  local held = moraine.core.dir_locked(dir .. "/" .. M.FAST_IMPORT_TMP)
  if held == nil then return nil end
  return held and "running" or "interrupted"
end

--- Fails (a CLI error) when an import of a SQLite file into `dir` is running
-- or did not end: the catalog is not to be read or written until it has
-- (`moraine import` of the same file again discards what the interrupted one
-- wrote and starts afresh).
-- @tparam string dir the catalog directory
-- @raise a CLI error naming the state and what to do
function M.refuse_unfinished_import(dir)
  local st = M.fast_import_state(dir)
  if st == "running" then
    fail("an import of a SQLite file into " .. dir .. " is running (it holds " .. M.FAST_IMPORT_TMP .. ")",
      "wait for it to end, then run the command again")
  elseif st == "interrupted" then
    fail("an import of a SQLite file into " .. dir .. " did not end (it left " .. M.FAST_IMPORT_TMP
      .. "): the catalog may lack commits it made", "run the same 'moraine import' again: it starts afresh")
  end
end

--- Whether another process may have written to the catalog while a command
-- that failed ran, so that what the command created is not its own alone:
-- it failed on another writer's snapshots (ECONFLICT, ESNAPSHOT), or a
-- process other than this one has the catalog open now (`db:open_elsewhere`;
-- when that cannot be told, as if one had). A failed first `moraine sync` or
-- `moraine import` then removes nothing of what it created: a concurrent
-- writer's acknowledged commits are data. Call it before `db:close()`.
-- @param db the open catalog
-- @param err the error the command failed with (a moraine error or any value)
-- @treturn boolean
function M.others_there(db, err)
  if moraine.is_error(err) and (err.code == "ECONFLICT" or err.code == "ESNAPSHOT") then return true end
  local ok, pid = pcall(db.open_elsewhere, db)
  return not ok or pid ~= false
end

--- Fails with "no catalog at DIR" and what to run: `moraine compact` when an
-- interrupted compaction left `DIR.compact-new` beside it (a swap killed
-- between its two renames: the catalog is there, under another name; a new
-- catalog made at DIR would hide it), else init or import.
-- @tparam string dir the catalog directory
-- @raise always: a CLI error
function M.no_catalog(dir)
  if exists(dir .. ".compact-new") then
    fail("no catalog at " .. dir .. ", but an interrupted compaction left " .. dir .. ".compact-new: run 'moraine -c "
      .. dir .. " compact' to put it back (do not init or import there)", M.NO_CATALOG_HINT)
  end
  fail("no catalog at " .. dir .. "; run 'moraine init' or 'moraine import'", M.NO_CATALOG_HINT)
end

--- Fails as `no_catalog` when `dir` holds no catalog: it does not exist, or
-- is a directory without data.mdb (a file at `dir` is left to the caller).
-- @tparam string dir the catalog directory
-- @raise a CLI error when there is no catalog at `dir`
function M.need_catalog(dir)
  if not exists(dir) or (is_dir(dir) and not exists(dir .. "/data.mdb")) then M.no_catalog(dir) end
end

--- Opens the catalog read-only.
-- @tparam string dir the catalog directory
-- @return the catalog (moraine.open)
-- @raise a CLI error when there is no catalog at `dir`, or it has no snapshot,
--   or an import of a SQLite file into it is running or did not end
function M.open_read(dir)
  if is_dir(dir) then M.refuse_unfinished_import(dir) end
  M.need_catalog(dir)
  if not is_dir(dir) then
    fail(dir .. " is not a catalog directory (it is a file)", M.NO_CATALOG_HINT)
  end
  local db = with_hint("is " .. dir .. " a moraine catalog? " .. M.NO_CATALOG_HINT, moraine.open, dir,
    { read_only = true, create = false })
  if db:last_snapshot() == nil then
    db:close()
    fail("the catalog at " .. dir .. " is empty (no snapshot); run 'moraine init' or 'moraine import'", M.NO_CATALOG_HINT)
  end
  return db
end

-- ---- catalog reads (all take a read transaction rd) -------------------------------------------

--- The columns of a relation, in order.
-- @param db the catalog
-- @tparam string name the relation (ducklake_...)
-- @treturn {string,...} its columns ({} for an unknown one)
function M.relation_columns(db, name)
  local r = db:relation(name)
  return r and r.columns or {}
end

--- A row of relation `name` as it may be shown: its secret columns (the
-- encryption keys of an encrypted lake, relation info secret_columns) read
-- "<redacted>"; only export copies them (docs/security.md).
-- @param db the catalog
-- @tparam string name the relation
-- @tparam table row the row
-- @treturn table the row to show
function M.redacted(db, name, row)
  return moraine.redact(db:relation(name), row)
end

--- The number of encryption keys the catalog holds (every version), 0 when the
-- build cannot count them.
-- @param db the catalog
-- @treturn number
function M.secret_count(db)
  local ok, n = pcall(db.read, db, function(rd) return rd:secret_count() end)
  return ok and num(n) or 0
end

local function snapshot_list(rd)
  local ids = {}
  for row in rd:scan("ducklake_snapshot", { at = ALL }) do ids[#ids + 1] = row.snapshot_id end
  return ids
end

-- "0..20" or "0..5, 7, 9..20"
local function ranges(ids)
  local parts, i = {}, 1
  while i <= #ids do
    local j = i
    while j < #ids and num(ids[j + 1]) == num(ids[j]) + 1 do j = j + 1 end
    parts[#parts + 1] = (j > i) and (istr(ids[i]) .. ".." .. istr(ids[j])) or istr(ids[i])
    i = j + 1
  end
  return #parts > 0 and concat(parts, ", ") or "none"
end

--- Checks that snapshot `s` exists.
-- @param rd a read transaction
-- @param s the snapshot id
-- @return s
-- @raise a CLI error naming the snapshots there are
function M.check_snapshot(rd, s)
  local ids = snapshot_list(rd)
  for _, id in ipairs(ids) do if key(id) == key(s) then return s end end
  fail("snapshot " .. istr(s) .. " does not exist (snapshots: " .. ranges(ids) .. ")",
    "see 'moraine snapshots' for the snapshot ids")
end

local function schemas_at(rd, S)
  local m = {}
  for row in rd:scan("ducklake_schema", { at = S }) do m[key(row.schema_id)] = row end
  return m
end

--- The tables visible at a snapshot, sorted by schema and name.
-- @param rd a read transaction
-- @param S the snapshot
-- @treturn {table,...} each `{schema = name, name = table_name, id = table_id, row = ducklake_table row, srow = ducklake_schema row}`;
--   a NULL schema_name or table_name stays `moraine.null` (shown as NULL; it matches no TABLE name)
function M.tables_at(rd, S)
  local schemas = schemas_at(rd, S)
  local list = {}
  for row in rd:scan("ducklake_table", { at = S }) do
    local srow = schemas[key(row.schema_id)]
    list[#list + 1] = { schema = srow and srow.schema_name or ("schema " .. key(row.schema_id)),
      name = row.table_name, id = row.table_id, row = row, srow = srow }
  end
  table.sort(list, function(a, b)
    if a.schema ~= b.schema then return tostring(a.schema) < tostring(b.schema) end
    if a.name ~= b.name then return tostring(a.name) < tostring(b.name) end
    return key(a.id) < key(b.id)
  end)
  return list
end

--- "schema.name" of a table of `tables_at`.
-- @tparam table t the table
-- @treturn string
function M.qualified(t) return tostring(t.schema) .. "." .. tostring(t.name) end

local function list_names(tabs)
  local names = {}
  for i, t in ipairs(tabs) do names[i] = M.qualified(t) end
  return #names > 0 and concat(names, ", ") or "none"
end

-- One pass of @{find_table}: names compared with @{eq}.
local function find_with(tabs, name, eq)
  local hits = {}
  for i = 1, #name do
    if name:sub(i, i) == "." then
      local sch, tn = name:sub(1, i - 1), name:sub(i + 1)
      for _, t in ipairs(tabs) do
        if eq(t.schema, sch) and eq(t.name, tn) then hits[#hits + 1] = t end
      end
    end
  end
  if #hits == 1 then return hits[1] end
  if #hits > 1 then return nil, hits end
  local mains, named = {}, {}
  for _, t in ipairs(tabs) do
    if eq(t.name, name) then
      named[#named + 1] = t
      if t.schema == "main" then mains[#mains + 1] = t end
    end
  end
  if #mains == 1 then return mains[1] end
  if #mains > 1 then return nil, mains end
  if #named == 1 then return named[1] end
  if #named > 1 then return nil, named end
  return nil
end

local function exact(a, b) return a == b end

--- Finds TABLE in a list of tables: "name" (schema main, or unique
-- across schemas) or "schema.name". Names follow DuckDB's rule,
-- case-insensitive and case-preserving (`moraine.ident.same`: ASCII letters
-- folded): a match spelled exactly as stored wins; else a unique match
-- without regard to case; several such matches are ambiguous.
-- @tparam {table,...} tabs the tables (as `tables_at` or `table_versions` give them)
-- @tparam string name TABLE
-- @treturn ?table the table, or nil
-- @treturn ?{table,...} when the name is ambiguous: the tables it names
function M.find_table(tabs, name)
  local t, amb = find_with(tabs, name, exact)
  if t or amb then return t, amb end
  return find_with(tabs, name, ident_rules.same)
end

--- Whether table version @v is named TABLE (@{find_table}'s rule: exactly or
-- without regard to case, bare or as schema.name).
-- @tparam table v a table (as `tables_at` or `table_versions` give them)
-- @tparam string name TABLE
-- @treturn boolean
function M.named(v, name)
  return ident_rules.same(v.name, name) or ident_rules.same(M.qualified(v), name)
end

--- Every version of ducklake_table that some snapshot saw.
-- @param rd a read transaction
-- @treturn {table,...} each `{schema, name, id, row, srow, first, last}`
--   (first/last: the snapshots the version is visible at; last nil while live)
function M.table_versions(rd)
  local schemas = {}
  for row in rd:scan("ducklake_schema", { at = ALL }) do schemas[key(row.schema_id)] = row end
  local all = {}
  for row in rd:scan("ducklake_table", { at = ALL }) do
    local srow = schemas[key(row.schema_id)]
    -- a version no snapshot saw (begin == end) is left out
    if is_null(row.end_snapshot) or key(row.end_snapshot) ~= key(row.begin_snapshot) then
      all[#all + 1] = { schema = srow and srow.schema_name or ("schema " .. key(row.schema_id)), name = row.table_name,
        id = row.table_id, row = row, srow = srow, first = row.begin_snapshot,
        last = (not is_null(row.end_snapshot)) and num(row.end_snapshot) - 1 or nil }
    end
  end
  return all
end

--- The snapshots a list of versions of one table covers.
-- @tparam {table,...} versions versions of `table_versions`
-- @treturn string "12..15" or "17..now"
-- @treturn number the first snapshot
-- @treturn ?number the last one (nil while live)
function M.lifetime(versions)
  local lo, hi, live = nil, nil, false
  for _, v in ipairs(versions) do
    if lo == nil or num(v.first) < lo then lo = num(v.first) end
    if v.last == nil then live = true elseif hi == nil or v.last > hi then hi = v.last end
  end
  return istr(lo) .. ".." .. (live and "now" or istr(hi)), lo, live and nil or hi
end

--- The table TABLE names at snapshot S: "name", "schema.name" or "#ID" (a
-- table_id). A table not there at S is an error that says when it was there
-- and which `--at S` reaches it (a dropped table, by name or by its id).
-- @param rd a read transaction
-- @tparam string name TABLE
-- @param S the snapshot
-- @tparam[opt] string what the options of the hint's `moraine tables` (`" --at 7"`)
-- @treturn table the table (as `tables_at` gives it)
-- @raise a CLI error when no table or several have that name
function M.resolve_table(rd, name, S, what)
  local id = name:match("^#(%d+)$")
  if id then
    for _, t in ipairs(M.tables_at(rd, S)) do
      if key(t.id) == id then return t end
    end
    local versions = {}
    for _, v in ipairs(M.table_versions(rd)) do if key(v.id) == id then versions[#versions + 1] = v end end
    if #versions == 0 then
      fail("no table with table_id " .. id .. " in the catalog", "see 'moraine tables --at S' for the tables and their ids")
    end
    local span, _, hi = M.lifetime(versions)
    fail("table #" .. id .. " (" .. M.qualified(versions[#versions]) .. ") is not live at snapshot " .. istr(S) ..
      " (it was live at " .. span .. ")", "pass --at S with S in " .. span .. (hi and (", e.g. --at " .. istr(hi)) or ""))
  end
  local tabs = M.tables_at(rd, S)
  local t, ambiguous = M.find_table(tabs, name)
  if t then return t end
  if ambiguous then
    fail("table name '" .. name .. "' is ambiguous at snapshot " .. istr(S) .. ": " .. list_names(ambiguous),
      "name it as schema.table")
  end
  -- was it there at another snapshot? (a dropped or renamed table)
  local byid, order = {}, {}
  for _, v in ipairs(M.table_versions(rd)) do
    if M.named(v, name) then
      local k = key(v.id)
      if not byid[k] then byid[k] = {}; order[#order + 1] = k end
      local l = byid[k]
      l[#l + 1] = v
    end
  end
  local hint = "see 'moraine tables" .. (what or "") .. "' for the tables"
  if #order > 0 then
    local parts = {}
    for i, k in ipairs(order) do
      local vs = {}
      for _, v in ipairs(byid[k]) do if M.named(v, name) then vs[#vs + 1] = v end end
      local span, _, hi = M.lifetime(vs)
      parts[i] = "#" .. k .. " at " .. span .. (hi and (" (--at " .. istr(hi) .. ")") or "")
    end
    hint = "a table of that name was live at other snapshots: " .. concat(parts, ", ") ..
      "; pass --at S, or the table id as #ID"
  end
  fail("no table '" .. name .. "' at snapshot " .. istr(S) .. " (tables: " .. list_names(tabs) .. ")", hint)
end

--- The names a partition spec's stored `column_id`s stand for, for the
-- columns of a table visible at a snapshot: column_id -> name, except in a
-- DuckLake v0.1 catalog, where ducklake_partition_column.column_id is the
-- column's position (0-based) among the table's top-level columns
-- (moraine.catalog_version.partition_names).
-- @param rd a read transaction
-- @param T the table_id
-- @param S the snapshot
-- @treturn table stored column_id (as `util.key`) -> name
function M.column_names(rd, T, S)
  return catalog_version.partition_names(rd, T, S, catalog_version.of(rd))
end

local function ident(n)
  if type(n) == "string" and n:match("^[%a_][%w_]*$") then return n end
  return '"' .. tostring(n):gsub('"', '""') .. '"'
end

-- One partition key in DuckLake's SQL form: "ts", "year(ts)", "bucket(4, id)".
local function partition_key_sql(col, transform)
  if transform == "identity" then return col end
  local fn, params = tostring(transform):match("^([^()]-)%((.*)%)$")
  if fn then return fn .. "(" .. params .. ", " .. col .. ")" end
  return tostring(transform) .. "(" .. col .. ")"
end

--- The name of a column id: from the first map that has it, else "column#N".
-- @param id the column_id
-- @param ... maps as `column_names` gives them
-- @treturn string
function M.column_name(id, ...)
  for i = 1, select("#", ...) do
    local m = select(i, ...)
    if m and m[key(id)] then return m[key(id)] end
  end
  return "column#" .. key(id)
end

--- A partition spec's keys in DuckLake's SQL form: "year(ts), bucket(4, id)".
-- @tparam ?table spec the spec (rd:partition_spec)
-- @param ... the column name maps (as for `column_name`)
-- @treturn ?string nil without a spec
function M.partition_sql(spec, ...)
  if not spec then return nil end
  local keys = {}
  for i, c in ipairs(spec.columns or {}) do
    keys[i] = partition_key_sql(ident(M.column_name(c.column_id, ...)), c.transform)
  end
  return concat(keys, ", ")
end

local function sort_key_sql(e)
  local parts = { tostring(e.expression) } -- a NULL expression shows as NULL
  if not is_null(e.sort_direction) then parts[#parts + 1] = e.sort_direction end
  if not is_null(e.null_order) then parts[#parts + 1] = e.null_order end
  return concat(parts, " ")
end

--- A sort spec's keys in DuckLake's SQL form: "amount DESC NULLS_LAST, ts".
-- @tparam ?table spec the spec (rd:sort_spec)
-- @treturn ?string nil without a spec
function M.sort_sql(spec)
  if not spec then return nil end
  local keys = {}
  for i, e in ipairs(spec.expressions or {}) do keys[i] = sort_key_sql(e) end
  return concat(keys, ", ")
end

-- ---- one wording for specs that are not there ---------------------------------
-- A partition spec with no keys (DuckLake's RESET PARTITIONED BY) and no
-- partition spec at all both mean files are written unpartitioned; a table
-- has no sort spec before SET SORTED BY and after RESET SORTED BY. Text
-- output uses these words everywhere (tables, show, history); --json gives
-- the SQL form (null when there are no keys) plus a fixed state field:
-- partition_state "partitioned" | "reset" | "none", sort_state "sorted" | "none".

--- The text of a partition spec with no keys.
-- @field PART_RESET_TEXT
M.PART_RESET_TEXT = "unpartitioned (reset)"
--- The text of no partition spec.
-- @field PART_NONE_TEXT
M.PART_NONE_TEXT = "unpartitioned"
--- The text of no sort spec.
-- @field SORT_NONE_TEXT
M.SORT_NONE_TEXT = "unsorted"

--- The state of a partition spec.
-- @tparam ?table p the spec row
-- @treturn string "partitioned", "reset" (a spec with no keys) or "none" (no spec)
function M.partition_state(p)
  if not p then return "none" end
  if #(p.columns or {}) == 0 then return "reset" end
  return "partitioned"
end

--- The lake's DATA_PATH (ducklake_metadata).
-- @param rd a read transaction
-- @treturn string "" when it is not set, `moraine.null` when its value is NULL
function M.data_path(rd)
  for row in rd:scan("ducklake_metadata") do
    if row.key == "data_path" and is_null(row.scope) then return row.value end
  end
  return ""
end

--- The path of a schema, table or file row under `base`.
-- @tparam string base the path it is relative to (`moraine.null`: unknown)
-- @tparam table row the row (path, path_is_relative)
-- @treturn string the path; `moraine.null` when `base` is NULL and the row's path is relative (unknown)
function M.join_path(base, row)
  if is_null(base) then return NULL end
  if is_null(row.path) then return base end
  if row.path_is_relative == false then return row.path end
  return base .. row.path
end


--- The snapshot a read command works at: its at option (checked) or the newest.
-- @tparam table ctx the command's context (`at`)
-- @param rd a read transaction
-- @return the snapshot id
function M.snapshot_arg(ctx, rd)
  if ctx.at ~= nil then return M.check_snapshot(rd, ctx.at) end
  return rd:last_snapshot()
end

--- Checks that the catalog handle has a method (an older build may lack it).
-- @param db the catalog (closed when the method is missing)
-- @tparam string name the method
-- @tparam string what the command that needs it
-- @raise a CLI error when it is missing
function M.need_method(db, name, what)
  local ok, f = pcall(function() return db[name] end)
  if not ok or type(f) ~= "function" then
    db:close()
    fail(what .. " is not available in this build (db:" .. name .. " is missing)", "update moraine to a build that has db:" .. name)
  end
end

return M
