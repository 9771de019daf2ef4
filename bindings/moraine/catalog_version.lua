--- moraine.catalog_version — which DuckLake catalog version a catalog holds,
-- and what that version means for reading it.
--
-- A DuckLake catalog records its version in `ducklake_metadata` (the row
-- with key `version` and no scope). moraine keeps an imported or synced
-- catalog row for row as stored, of whatever version, so the readers must
-- know the differences that change a row's meaning:
--
-- - v0.1: `ducklake_partition_column.column_id` is the partition column's
--   0-based *position* among the table's top-level columns (ordered by
--   `column_order`), not its field id; DuckLake's migration to v0.2 turns it
--   into the field id.
-- - before v0.4 (v0.1 to v0.3, and some v0.4-dev1 catalogs): no
--   `ducklake_sort_info` / `ducklake_sort_expression` tables: a table has no
--   sort spec.
-- - the table set grows with the versions (see `M.TABLES`).
--
-- The version ladder and the changes between versions follow DuckLake's own
-- migrations (the metadata manager's MigrateV01 ... MigrateV10, run on ATTACH
-- with AUTOMATIC_MIGRATION); `moraine.upgrade` replays them.
-- @module moraine.catalog_version

local moraine = require "moraine"

local M = {}
local NULL = moraine.null

local function is_null(v) return v == nil or v == NULL end
local function key(v) return tostring(v):match("^(-?%d+)") or tostring(v) end
local function num(v) return tonumber(v) or tonumber(key(v)) end

--- The catalog version moraine's own catalogs are at (`db:init` writes it),
-- and the version `moraine.upgrade` migrates to.
M.CURRENT = "1.1-dev1"

--- The DuckLake catalog versions moraine knows, oldest first (DuckLake's
-- `DuckLakeVersion` ladder, dev versions included).
M.ORDER = { "0.1", "0.2", "0.3-dev1", "0.3", "0.4-dev1", "0.4", "1.0", "1.1-dev1" }

local RANK = {}
for i, v in ipairs(M.ORDER) do RANK[v] = i end

local BASE = { "ducklake_metadata", "ducklake_snapshot", "ducklake_snapshot_changes", "ducklake_schema",
  "ducklake_table", "ducklake_view", "ducklake_tag", "ducklake_column_tag", "ducklake_data_file",
  "ducklake_delete_file", "ducklake_column", "ducklake_table_stats", "ducklake_table_column_stats",
  "ducklake_partition_info", "ducklake_partition_column", "ducklake_file_partition_value",
  "ducklake_files_scheduled_for_deletion", "ducklake_inlined_data_tables" }

local function with(list, add, drop)
  local out, gone = {}, {}
  for _, n in ipairs(drop or {}) do gone[n] = true end
  for _, n in ipairs(list) do if not gone[n] then out[#out + 1] = n end end
  for _, n in ipairs(add) do out[#out + 1] = n end
  return out
end

--- The ducklake_* tables a catalog of each released version holds (DuckLake's
-- CREATE statements and migrations), by version. Dev versions (`0.3-dev1`,
-- `0.4-dev1`) held varying sets in between their neighbours and are not listed.
M.TABLES = {}
M.TABLES["0.1"] = with(BASE, { "ducklake_file_column_statistics" })
M.TABLES["0.2"] = with(M.TABLES["0.1"], { "ducklake_column_mapping", "ducklake_name_mapping" })
M.TABLES["0.3"] = with(M.TABLES["0.2"], { "ducklake_file_column_stats", "ducklake_schema_versions" },
  { "ducklake_file_column_statistics" })
M.TABLES["0.4"] = with(M.TABLES["0.3"], { "ducklake_macro", "ducklake_macro_impl", "ducklake_macro_parameters",
  "ducklake_sort_info", "ducklake_sort_expression", "ducklake_file_variant_stats" })
M.TABLES["1.0"] = M.TABLES["0.4"]
M.TABLES["1.1-dev1"] = with(M.TABLES["1.0"], { "ducklake_view_column_tag" })

--- What a catalog version means for reading it.
-- @tparam string version a version string, e.g. `"0.1"`
-- @treturn ?table `{version =, rank = (position in M.ORDER), current = bool,
--   partition_column_is_position = bool (v0.1), sort_tables = bool (the
--   version always has the sort tables: v0.4 on), tables = {names} or nil (dev
--   versions)}`, or nil for a version moraine does not know
function M.info(version)
  local r = RANK[version]
  if not r then return nil end
  return { version = version, rank = r, current = version == M.CURRENT,
    partition_column_is_position = version == "0.1", sort_tables = r >= RANK["0.4"], tables = M.TABLES[version] }
end

--- The first table every DuckLake catalog of `version` has that `has(name)`
-- does not find: a source without it is incomplete (a table left out of an
-- export, or dropped), and would read as holding nothing. The tables are
-- `moraine.core.required_tables(version)` (`moraine_required_table`, among
-- those moraine knows: a dev version needs those of the release before it).
-- @tparam ?string version the source's version (nil, `moraine.null` or one
--   DuckLake never wrote: nothing is required)
-- @tparam function has `has(name)` true when the source has table `name`
-- @treturn ?string the missing table's name, or nil
function M.missing_table(version, has)
  if version == nil or version == NULL then return nil end
  for _, name in ipairs(moraine.core.required_tables(tostring(version))) do
    if not has(name) then return name end
  end
  return nil
end

--- Refuses a source that lacks a table every DuckLake catalog of its
-- version has (`missing_table`), in the words of the engine's NDJSON import.
-- @tparam ?string version the source's version
-- @tparam function has `has(name)` true when the source has table `name`
-- @tparam boolean files the source is a directory of `<table>.ndjson` files
--   (the message names the file), else a database (it names the table)
-- @raise EINVAL "the catalog has no ducklake_delete_file.ndjson: a DuckLake
--   catalog of version 1.1-dev1 has that table (...)"
function M.require_tables(version, has, files)
  local name = M.missing_table(version, has)
  if not name then return end
  moraine.core.raise("EINVAL", string.format("the catalog has no %s%s: a DuckLake catalog of version %s has that table "
    .. "(an export that left it out is incomplete; export the whole catalog again)", name, files and ".ndjson" or " table",
    tostring(version)))
end

--- Compares two known versions.
-- @tparam string a a version in M.ORDER
-- @tparam string b a version in M.ORDER
-- @treturn ?integer -1, 0 or 1 (a older, equal, newer), nil when either is unknown
function M.compare(a, b)
  local ra, rb = RANK[a], RANK[b]
  if not ra or not rb then return nil end
  return ra < rb and -1 or (ra > rb and 1 or 0)
end

-- the version value among ducklake_metadata rows (an iterator's rows)
local function version_of_rows(iter, state, init)
  local v
  for row in iter, state, init do
    if row.key == "version" and is_null(row.scope) then v = row.value end
  end
  return v
end

--- The catalog version a catalog records: the value of its `ducklake_metadata`
-- row with key `version` and no scope (v0.1 has no scope column: every row).
-- @param src a catalog handle (`moraine.open`) or a read (`rd` of `db:read`)
-- @treturn ?string the version, e.g. `"0.1"`, or nil when the catalog has no
--   ducklake_metadata table or no version row, `moraine.null` when the
--   row's value is NULL (a version moraine does not know, as @{compare} and
--   @{describe} take it)
-- @raise the scan's errors (ELMDB)
function M.of(src)
  if src.relation then -- a catalog handle
    if not src:relation("ducklake_metadata") then return nil end
    return src:read(function(rd) return version_of_rows(rd:scan("ducklake_metadata")) end)
  end
  local ok, v = pcall(function() return version_of_rows(src:scan("ducklake_metadata")) end)
  if ok then return v end
  if moraine.is_error(v) and v.code == "ENOTFOUND" then return nil end
  error(v, 0)
end

--- A version for people: `"1.1-dev1"`, `"0.1 (older than 1.1-dev1: moraine upgrade
-- migrates it)"`, `"none"`, or `"9.9 (unknown to moraine)"`.
-- @tparam ?string version as `M.of` gives it
-- @treturn string
function M.describe(version)
  if version == nil then return "none" end
  if version == moraine.null then return "NULL (unknown to moraine)" end
  local c = M.compare(version, M.CURRENT)
  if c == nil then return version .. " (unknown to moraine)" end
  if c < 0 then return version .. " (older than " .. M.CURRENT .. ": moraine upgrade migrates it)" end
  return version
end

--- Whether the catalog (a handle) or read holds relation `name`: an old
-- catalog lacks the tables of later versions, which then hold nothing
-- (no sort spec, no macros, ...).
-- @param src a catalog handle or a read (`rd`)
-- @tparam string name the relation
-- @treturn boolean
function M.has(src, name)
  if src.relation then return src:relation(name) ~= nil end
  local ok, e = pcall(function()
    local f, st, c = src:scan(name, { at = moraine.ALL })
    f(st, c)
  end)
  if ok then return true end
  if moraine.is_error(e) and e.code == "ENOTFOUND" then return false end
  error(e, 0)
end

--- Rows of `name` as `rd:scan(name, opts)` gives them, or no rows when the
-- catalog has no such table (an old version): for `for row, children in ...`.
-- @param rd a read (`rd` of `db:read`)
-- @tparam string name the relation
-- @tparam[opt] table opts as for `rd:scan`
-- @return an iterator
function M.scan_if_present(rd, name, opts)
  if not M.has(rd, name) then return function() return nil end end
  return rd:scan(name, opts)
end

--- The columns of relation `name` this catalog has, of those in `want`, in
-- `want`'s order (a catalog of an older DuckLake version, or one defined by
-- hand, may lack some): what a read may ask `rd:files_batch` for.
-- @param db the catalog (`db:relation` answers its columns)
-- @tparam string name the relation, e.g. `"ducklake_data_file"`
-- @tparam {string,...} want column names
-- @treturn {string,...} the ones present (empty when the relation is absent)
function M.columns_present(db, name, want)
  local info, have, out = db:relation(name), {}, {}
  for _, c in ipairs(info and info.columns or {}) do have[c] = true end
  for _, c in ipairs(want) do if have[c] then out[#out + 1] = c end end
  return out
end

--- The top-level columns of table `T` at snapshot `S` (no STRUCT fields), in
-- `column_order`.
-- @param rd a read
-- @param T the table_id
-- @param S the snapshot
-- @treturn {table,...} the ducklake_column rows
function M.top_level_columns(rd, T, S)
  local cols = {}
  for c in rd:scan("ducklake_column", { at = S, table_id = T }) do
    if is_null(c.parent_column) then cols[#cols + 1] = c end
  end
  table.sort(cols, function(a, b) return num(a.column_order) < num(b.column_order) end)
  return cols
end

--- The partition columns' names of table `T` at snapshot `S`, keyed by the
-- value `ducklake_partition_column.column_id` holds (as a string of digits):
-- the field id since v0.2, the 0-based position among the table's top-level
-- columns in v0.1 (`version`). Pass it as the first map where a partition key's
-- column is named; a stored id it lacks has no column at S.
-- @param rd a read
-- @param T the table_id
-- @param S the snapshot whose columns name the keys
-- @tparam ?string version the catalog's version (`M.of(rd)`; nil: current)
-- @treturn table stored column_id (string) -> column name
function M.partition_names(rd, T, S, version)
  local names = {}
  if version == "0.1" then
    for i, c in ipairs(M.top_level_columns(rd, T, S)) do names[tostring(i - 1)] = c.column_name end
  else
    for c in rd:scan("ducklake_column", { at = S, table_id = T }) do names[key(c.column_id)] = c.column_name end
  end
  return names
end

--- The field id a stored `ducklake_partition_column.column_id` stands for:
-- itself since v0.2; in v0.1 the field id of the top-level column at that
-- position at snapshot `S` (what DuckLake's migration writes), nil when no
-- column is there.
-- @param rd a read
-- @param T the table_id
-- @param S the snapshot
-- @param stored the stored column_id
-- @tparam ?string version the catalog's version
-- @return the field id, or nil
function M.partition_field_id(rd, T, S, stored, version)
  if version ~= "0.1" then return stored end
  local c = M.top_level_columns(rd, T, S)[num(stored) + 1]
  return c and c.column_id or nil
end

return M
