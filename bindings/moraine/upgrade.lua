--- moraine.upgrade — migrates an old DuckLake catalog to the current catalog
-- version (`moraine upgrade`, docs/upgrade.md).
--
-- DuckLake migrates an old catalog in place when it is attached with
-- `AUTOMATIC_MIGRATION TRUE`: its metadata manager runs one migration per
-- version step (MigrateV01: v0.1 to v0.2, MigrateV02: to v0.3, MigrateV03: to
-- v0.4, MigrateV04: to v1.0, MigrateV10: to v1.1-dev1; the dev versions
-- v0.3-dev1 and v0.4-dev1 rerun the step they were in the middle of with
-- `IF [NOT] EXISTS`). `M.migrate` applies the same steps to a catalog held in
-- memory (every table's columns and rows, every version of every row), so
-- the result is exactly the rows DuckLake's migration leaves: added columns
-- at the end of their table with DuckLake's defaults, renamed tables, the
-- v0.1 partition column positions turned into field ids, the per-table
-- `ducklake_schema_versions` rows, `partial_max` taken out of
-- `partial_file_info`, the renamed inlined-data columns, the new version.
--
-- `M.upgrade` applies it to a catalog directory. moraine's staged commits
-- cannot change a relation's columns, so the migrated catalog is built whole
-- in a new directory beside the old one and put in its place by renames; no
-- DuckLake snapshot is added (the migration is snapshot-less, as DuckLake's
-- is). A kill at any point leaves the old catalog or the new one at the
-- path, or (between the two renames of the swap) both beside it, which the
-- next `M.upgrade` on the path finishes: never a mix.
-- @module moraine.upgrade

local moraine = require "moraine"
local versions = require "moraine.catalog_version"

local M = {}
local NULL = moraine.null
local function raise(code, fmt, ...) moraine.core.raise(code, string.format(fmt, ...)) end

local function is_null(v) return v == nil or v == NULL end
local function key(v) return tostring(v):match("^(-?%d+)") or tostring(v) end
local function num(v) return tonumber(v) or tonumber(key(v)) end

-- ---- the catalog in memory ---------------------------------------------------
-- A model is {names = {table names in order}, t = {name -> {columns = {...},
-- rows = {row, ...}}}}; rows map column -> value (moraine.null for NULL), in
-- the table's row order (every version).

local function tbl(m, name, why)
  local t = m.t[name]
  if not t then
    raise("EINVAL", "upgrade: the catalog has no table '%s' (DuckLake's migration %s needs it)", name, why)
  end
  return t
end

local function has_column(t, col)
  for _, c in ipairs(t.columns) do if c == col then return true end end
  return false
end

-- ALTER TABLE name ADD COLUMN [IF NOT EXISTS] col DEFAULT default: appended,
-- every existing row gets the default. A column already there is left as it
-- is (DuckLake's step without IF NOT EXISTS would fail; moraine gives an
-- empty table it knows the current columns on import).
local function add_column(m, name, col, default, why)
  local t = tbl(m, name, why)
  if has_column(t, col) then return end
  t.columns[#t.columns + 1] = col
  for _, row in ipairs(t.rows) do row[col] = default end
end

local function drop_column(m, name, col, why)
  local t = tbl(m, name, why)
  for i, c in ipairs(t.columns) do
    if c == col then
      table.remove(t.columns, i)
      for _, row in ipairs(t.rows) do row[col] = nil end
      return
    end
  end
end

-- CREATE TABLE [IF NOT EXISTS]: a table already there stays as it is
local function create_table(m, name, columns)
  if m.t[name] then return end
  m.names[#m.names + 1] = name
  m.t[name] = { columns = columns, rows = {} }
end

local function rename_table(m, old, new)
  local t = m.t[old]
  if not t then return end
  if m.t[new] and #m.t[new].rows > 0 then
    raise("EINVAL", "upgrade: the catalog has both '%s' and '%s' (DuckLake's migration to 0.3 renames the first "
      .. "to the second)", old, new)
  end
  local names = {}
  for _, n in ipairs(m.names) do
    if n == old then names[#names + 1] = new elseif n ~= new then names[#names + 1] = n end
  end
  m.names = names
  m.t[old], m.t[new] = nil, t
end

-- INSERT: a row of `t` with the given values, NULL in every other column
local function insert(t, values)
  local row = {}
  for _, c in ipairs(t.columns) do
    local v = values[c]
    if v == nil then v = NULL end
    row[c] = v
  end
  t.rows[#t.rows + 1] = row
end

local function set_version(m, v)
  for _, row in ipairs(tbl(m, "ducklake_metadata", "to " .. v).rows) do
    if row.key == "version" then row.value = v end
  end
end

-- ---- DuckLake's migration steps ------------------------------------------------

-- MigrateV01 (v0.1 -> v0.2)
local function v01(m)
  local why = "from 0.1"
  add_column(m, "ducklake_schema", "path", "", why)
  add_column(m, "ducklake_schema", "path_is_relative", true, why)
  add_column(m, "ducklake_table", "path", "", why)
  add_column(m, "ducklake_table", "path_is_relative", true, why)
  add_column(m, "ducklake_metadata", "scope", NULL, why)
  add_column(m, "ducklake_metadata", "scope_id", NULL, why)
  add_column(m, "ducklake_data_file", "mapping_id", NULL, why)
  create_table(m, "ducklake_column_mapping", { "mapping_id", "table_id", "type" })
  create_table(m, "ducklake_name_mapping", { "mapping_id", "column_id", "source_name", "target_field_id",
    "parent_column" })
  -- column_id was the column's position among the table's live top-level
  -- columns (by column_order); it becomes that column's field id (NULL when
  -- there is no column at that position)
  local live = {}
  for _, c in ipairs(tbl(m, "ducklake_column", why).rows) do
    if is_null(c.parent_column) and is_null(c.end_snapshot) then
      local k = key(c.table_id)
      live[k] = live[k] or {}
      live[k][#live[k] + 1] = c
    end
  end
  for _, cols in pairs(live) do
    table.sort(cols, function(a, b) return num(a.column_order) < num(b.column_order) end)
  end
  for _, p in ipairs(tbl(m, "ducklake_partition_column", why).rows) do
    local cols = live[key(p.table_id)]
    local c = cols and not is_null(p.column_id) and cols[num(p.column_id) + 1]
    p.column_id = c and c.column_id or NULL
  end
  set_version(m, "0.2")
end

-- MigrateV02 (v0.2 -> v0.3; `dev`: from v0.3-dev1, every step IF [NOT] EXISTS)
local function v02(m, dev)
  local why = "to 0.3"
  add_column(m, "ducklake_name_mapping", "is_partition", false, why)
  add_column(m, "ducklake_snapshot_changes", "author", NULL, why)
  add_column(m, "ducklake_snapshot_changes", "commit_message", NULL, why)
  add_column(m, "ducklake_snapshot_changes", "commit_extra_info", NULL, why)
  set_version(m, "0.3")
  create_table(m, "ducklake_schema_versions", { "begin_snapshot", "schema_version" })
  local sv = m.t.ducklake_schema_versions
  if not dev or #sv.rows == 0 then
    -- the first snapshot of each schema version, by schema version
    local first, order = {}, {}
    for _, s in ipairs(tbl(m, "ducklake_snapshot", why).rows) do
      local k = key(s.schema_version)
      if first[k] == nil then
        order[#order + 1] = s.schema_version
        first[k] = s.snapshot_id
      elseif num(s.snapshot_id) < num(first[k]) then
        first[k] = s.snapshot_id
      end
    end
    table.sort(order, function(a, b) return num(a) < num(b) end)
    for _, v in ipairs(order) do insert(sv, { begin_snapshot = first[key(v)], schema_version = v }) end
  end
  rename_table(m, "ducklake_file_column_statistics", "ducklake_file_column_stats")
  add_column(m, "ducklake_file_column_stats", "extra_stats", NULL, why)
  add_column(m, "ducklake_table_column_stats", "extra_stats", NULL, why)
end

-- the BIGINT in `partial_max:<digits>` (DuckDB's TRY_CAST of the digits; NULL
-- when they overflow)
local function partial_max(info)
  if type(info) ~= "string" or not info:find("partial_max:", 1, true) then return nil end
  local digits = info:match("partial_max:(%d+)")
  if not digits then return NULL end
  digits = digits:gsub("^0+(%d)", "%1")
  if #digits > 19 or (#digits == 19 and digits > "9223372036854775807") then return NULL end
  -- beyond 15 digits a double may round: jansson's integer reader is exact over int64
  -- (LuaJIT: an int64_t cdata beyond 2^53)
  if #digits > 15 then return moraine.json_decode(digits) end
  return math.tointeger and math.tointeger(tonumber(digits)) or tonumber(digits)
end

-- MigrateV03 (v0.3 -> v0.4; `dev`: from v0.4-dev1)
local function v03(m)
  local why = "to 0.4"
  create_table(m, "ducklake_macro", { "schema_id", "macro_id", "macro_name", "begin_snapshot", "end_snapshot" })
  create_table(m, "ducklake_macro_impl", { "macro_id", "impl_id", "dialect", "sql", "type" })
  create_table(m, "ducklake_macro_parameters", { "macro_id", "impl_id", "column_id", "parameter_name",
    "parameter_type", "default_value", "default_value_type" })
  add_column(m, "ducklake_column", "default_value_type", "literal", why)
  for _, c in ipairs(m.t.ducklake_column.rows) do
    if is_null(c.default_value_type) then c.default_value_type = "literal" end
  end
  add_column(m, "ducklake_column", "default_value_dialect", NULL, why)
  create_table(m, "ducklake_sort_info", { "sort_id", "table_id", "begin_snapshot", "end_snapshot" })
  create_table(m, "ducklake_sort_expression", { "sort_id", "table_id", "sort_key_index", "expression", "dialect",
    "sort_direction", "null_order" })
  create_table(m, "ducklake_file_variant_stats", { "data_file_id", "table_id", "column_id", "variant_path",
    "shredded_type", "column_size_bytes", "value_count", "null_count", "min_value", "max_value", "contains_nan",
    "extra_stats" })
  add_column(m, "ducklake_schema_versions", "table_id", NULL, why)
  add_column(m, "ducklake_data_file", "partial_max", NULL, why)
  add_column(m, "ducklake_delete_file", "partial_max", NULL, why)
  local df = m.t.ducklake_data_file
  if has_column(df, "partial_file_info") then
    for _, row in ipairs(df.rows) do
      local pm = partial_max(row.partial_file_info)
      if pm ~= nil then row.partial_max = pm end
    end
    drop_column(m, "ducklake_data_file", "partial_file_info", why)
  end
  set_version(m, "0.4")
  -- schema versions per table: each catalog-wide row becomes one row per
  -- table version whose [begin_snapshot, end_snapshot] holds it
  local sv = m.t.ducklake_schema_versions
  local kept, added = {}, {}
  for _, r in ipairs(sv.rows) do
    if is_null(r.table_id) then
      local b = num(r.begin_snapshot)
      for _, t in ipairs(tbl(m, "ducklake_table", why).rows) do
        local e = is_null(t.end_snapshot) and b or num(t.end_snapshot)
        if b ~= nil and num(t.begin_snapshot) <= b and b <= e then
          added[#added + 1] = { table_id = t.table_id, begin_snapshot = r.begin_snapshot,
            schema_version = r.schema_version }
        end
      end
    else
      kept[#kept + 1] = r
    end
  end
  sv.rows = kept
  for _, a in ipairs(added) do insert(sv, a) end
end

-- MigrateV04 (v0.4 -> v1.0)
local function v04(m) set_version(m, "1.0") end

-- MigrateV10 (v1.0 -> v1.1-dev1): the inlined-data tables' row_id,
-- begin_snapshot and end_snapshot columns (always their first three) get the
-- prefix `_ducklake_`; new columns and table
local INLINED_OLD = { "row_id", "begin_snapshot", "end_snapshot" }
local function v10(m)
  local why = "to 1.1-dev1"
  for _, it in ipairs(tbl(m, "ducklake_inlined_data_tables", why).rows) do
    local name = it.table_name
    local t = m.t[name]
    if not t then
      raise("EINVAL", "upgrade: the catalog has no inlined-data table '%s' (listed in ducklake_inlined_data_tables)",
        tostring(name))
    end
    if #t.columns > 0 or #t.rows > 0 then -- an empty table moraine imported has no columns: nothing to rename
      if #t.columns < 3 then
        raise("EINVAL", "upgrade: the inlined-data table '%s' has an unexpected column layout", name)
      end
      local user = {}
      for i = 4, #t.columns do user[t.columns[i]:lower()] = true end
      for i, old in ipairs(INLINED_OLD) do
        local new = "_ducklake_" .. old
        local have = t.columns[i]
        if have:lower() ~= new then
          if have:lower() ~= old then
            raise("EINVAL", "upgrade: the inlined-data table '%s' has an unexpected column layout", name)
          end
          if user[new] then
            raise("EINVAL", "upgrade: the inlined-data table '%s' has a column '%s' colliding with the renamed "
              .. "metadata column", name, new)
          end
          t.columns[i] = new
          for _, row in ipairs(t.rows) do row[new], row[have] = row[have], nil end
        end
      end
    end
  end
  add_column(m, "ducklake_data_file", "row_group_count", NULL, why)
  add_column(m, "ducklake_delete_file", "row_group_count", NULL, why)
  create_table(m, "ducklake_view_column_tag", { "view_id", "column_name", "begin_snapshot", "end_snapshot", "key",
    "value" })
  set_version(m, "1.1-dev1")
end

-- the steps DuckLake's initializer runs from each version
local LADDER = {
  ["0.1"] = { v01, v02, v03, v04, v10 },
  ["0.2"] = { v02, v03, v04, v10 },
  ["0.3-dev1"] = { function(m) v02(m, true) end, v03, v04, v10 },
  ["0.3"] = { v03, v04, v10 },
  ["0.4-dev1"] = { v03, v04, v10 },
  ["0.4"] = { v04, v10 },
  ["1.0"] = { v10 },
}

--- Applies DuckLake's migrations from `version` to the current version
-- (`moraine.catalog_version.CURRENT`) to a catalog held in memory, in place.
-- @tparam table m the catalog: `{names = {table names, in order}, t = {name ->
--   {columns = {column names, in order}, rows = {rows: column -> value,
--   moraine.null for NULL}}}}` (every version of every row, in row order)
-- @tparam string version its catalog version
-- @treturn table `m`, migrated: columns added, tables created and renamed,
--   rows changed as DuckLake's migration changes them
-- @raise EINVAL (a version that is current, newer or unknown; a table a step
--   needs is missing; an inlined-data table DuckLake's migration refuses)
function M.migrate(m, version)
  local steps = LADDER[version]
  if not steps then
    if version == versions.CURRENT then
      raise("EINVAL", "upgrade: the catalog is already at version %s: nothing to do", version)
    end
    raise("EINVAL", "upgrade: cannot migrate from catalog version %s (moraine knows %s)", tostring(version),
      table.concat(versions.ORDER, ", "))
  end
  for _, step in ipairs(steps) do step(m) end
  return m
end

-- ---- files --------------------------------------------------------------------

-- whether path `p` exists (renaming it onto itself fails only when it does not)
local function exists(p)
  local ok, _, code = os.rename(p, p)
  return ok ~= nil or code ~= 2
end

-- removes a catalog directory moraine made (data.mdb, lock.mdb), or an
-- export directory of known file names
local function remove_dir(dir, files)
  for _, f in ipairs(files) do os.remove(dir .. "/" .. f) end
  return os.remove(dir)
end

local CATALOG_FILES = { "data.mdb", "lock.mdb" }

local function export_files(names)
  local files = {}
  for _, n in ipairs(names) do files[#files + 1] = n .. ".ndjson" end
  return files
end

-- the model of the catalog `db` holds, through its NDJSON export in `dir`
local function load_model(db, dir)
  db:export_ndjson(dir)
  local m = { names = {}, t = {} }
  for _, rel in ipairs(db:relations()) do
    local rows, cols = moraine.read_ndjson(dir .. "/" .. rel.name .. ".ndjson")
    if #rows == 0 then
      cols = {}
      for i, c in ipairs(rel.columns) do cols[i] = c end
    end
    m.names[#m.names + 1] = rel.name
    m.t[rel.name] = { columns = cols, rows = rows }
  end
  return m
end

--- Whether a catalog is in the middle of a sync (or import) round: a round
-- commits the snapshots DuckLake expired as partial commits without a
-- ducklake_snapshot row, and only its last commit is whole; so a catalog
-- whose newest commit has no ducklake_snapshot row is a round that was
-- interrupted (moraine records no other marker). `moraine sync` again ends it.
-- @param db a catalog handle
-- @treturn boolean
function M.mid_sync(db)
  local last = db:last_snapshot()
  if last == nil or not db:relation("ducklake_snapshot") then return false end
  return db:read(function(rd)
    for row in rd:scan("ducklake_snapshot", { at = moraine.ALL }) do
      if key(row.snapshot_id) == key(last) then return false end
    end
    return true
  end)
end

-- the columns moraine knows for each ducklake_* table (those `db:init` writes,
-- at the current version), through a scratch catalog at `dir`
local function known_columns(dir)
  local db = moraine.open(dir, { no_sync = true })
  local ok, res = pcall(function()
    db:init()
    local known = {}
    for _, rel in ipairs(db:relations()) do known[rel.name] = rel.columns end
    return known
  end)
  db:close()
  remove_dir(dir, CATALOG_FILES)
  if not ok then error(res, 0) end
  return res
end

-- the new catalog at `dir` from model `m`
local function build(m, dir)
  local known = known_columns(dir .. "-scratch")
  local db = moraine.open(dir)
  local ok, e = pcall(function()
    local tables = {}
    for _, name in ipairs(m.names) do
      local t = m.t[name]
      local rows = {}
      for i, r in ipairs(t.rows) do
        local arr = {}
        for j, c in ipairs(t.columns) do
          local v = r[c]
          if v == nil then v = NULL end
          arr[j] = v
        end
        rows[i] = arr
      end
      -- an empty table gets the columns moraine knows for it, as an empty
      -- file does on import (`moraine import` of DuckLake's migrated catalog)
      local cols = t.columns
      if #rows == 0 and known[name] then cols = known[name] end
      tables[#tables + 1] = { name = name, columns = cols, rows = rows }
    end
    db:import_rows(tables)
  end)
  db:close()
  if not ok then error(e, 0) end
end

-- Finishes a swap a kill interrupted. `path.upgrade-new` is a whole migrated
-- catalog (it gets that name only once built), `path.upgrade-old` the
-- catalog it replaces, `path.upgrade-tmp` a build that never finished.
local function recover(path)
  local new, old, tmp = path .. ".upgrade-new", path .. ".upgrade-old", path .. ".upgrade-tmp"
  local notes = {}
  if exists(tmp) then remove_dir(tmp, CATALOG_FILES) end
  if not exists(path) and exists(new) and exists(old) then
    assert(os.rename(new, path))            -- killed between the two renames of the swap
    notes[#notes + 1] = "finished an interrupted upgrade: the migrated catalog is in place"
  elseif exists(path) and exists(new) then
    remove_dir(new, CATALOG_FILES)          -- killed before the swap: the old catalog is still in place
  end
  if exists(path) and exists(old) then remove_dir(old, CATALOG_FILES) end
  return notes
end

--- Migrates the catalog in directory `path` to the current catalog version,
-- writing exactly the rows DuckLake's migration writes on ATTACH (see
-- `M.migrate`). The migrated catalog is built in `path .. ".upgrade-tmp"`,
-- renamed `path .. ".upgrade-new"` once whole, then, while this process holds
-- the old catalog's write lock, the old catalog is renamed `path ..
-- ".upgrade-old"` and the new one `path`; the old one is then removed. A run
-- on a path where a kill left these names first finishes or undoes that
-- swap. No other process may use the catalog meanwhile: a process that has
-- it open keeps reading (and would write) the old one.
-- @tparam string path the catalog directory
-- @tparam[opt] table opts `dry_run = true`: check and report, change nothing;
--   `if_needed = true`: a catalog already at the current version is no error
-- @treturn table `{from = old version, to = new version, tables = number of
--   tables of the new catalog, notes = {strings}}`; with `if_needed` and a
--   current catalog `{from = to = the version, current = true, notes}`
-- @raise EINVAL (already current, without `if_needed`: "nothing to do"; an unknown or newer
--   version; no version row; mid-sync: "finish it with moraine sync";
--   another writer committed during the upgrade; a table a migration step
--   needs is missing), EIO (a rename failed), the catalog's errors (ELMDB,
--   EREADONLY, ...)
function M.upgrade(path, opts)
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "dry_run" and k ~= "if_needed" then raise("EINVAL", "upgrade: unknown option '%s'", tostring(k)) end
  end
  local notes = opts.dry_run and {} or recover(path)
  if not exists(path) then raise("EIO", "upgrade: no catalog at %s", path) end
  local db = moraine.open(path, { create = false })
  local ok, res = pcall(function()
    local from = versions.of(db)
    if from == nil then raise("EINVAL", "upgrade: the catalog records no DuckLake catalog version") end
    if from == versions.CURRENT then
      if opts.if_needed then return { from = from, to = from, current = true, notes = notes } end
      raise("EINVAL", "upgrade: the catalog is already at version %s: nothing to do", from)
    end
    if not versions.info(from) then
      raise("EINVAL", "upgrade: the catalog's version %s is unknown to moraine (it knows %s)", from,
        table.concat(versions.ORDER, ", "))
    end
    if M.mid_sync(db) then
      raise("EINVAL", "upgrade: the catalog is in the middle of a sync round (its newest commit %s has no "
        .. "ducklake_snapshot row): finish it with moraine sync first", key(db:last_snapshot()))
    end
    local last = db:last_snapshot()
    local export = path .. ".upgrade-export"
    local m
    local okl, e = pcall(function() m = load_model(db, export) end)
    local names = {}
    for _, rel in ipairs(db:relations()) do names[#names + 1] = rel.name end
    remove_dir(export, export_files(names))
    if not okl then error(e, 0) end
    M.migrate(m, from)
    local result = { from = from, to = versions.CURRENT, tables = #m.names, notes = notes }
    if opts.dry_run then return result end
    local tmp, new, old = path .. ".upgrade-tmp", path .. ".upgrade-new", path .. ".upgrade-old"
    local okb, eb = pcall(build, m, tmp)
    if not okb then
      remove_dir(tmp, CATALOG_FILES)
      error(eb, 0)
    end
    local function mv(a, b)
      local done, err = os.rename(a, b)
      if not done then raise("EIO", "upgrade: cannot rename %s to %s: %s", a, b, tostring(err)) end
    end
    mv(tmp, new)
    -- the swap, under the old catalog's write lock: no writer slips in between
    local swapped = false
    local okc, ec = pcall(db.commit, db, nil, function()
      if key(db:last_snapshot()) ~= key(last) then
        raise("EINVAL", "upgrade: another writer committed snapshot %s during the upgrade: run it again",
          key(db:last_snapshot()))
      end
      mv(path, old)
      local done, err = os.rename(new, path)
      if not done then
        os.rename(old, path)                -- put the old catalog back
        raise("EIO", "upgrade: cannot rename %s to %s: %s", new, path, tostring(err))
      end
      swapped = true
    end)
    -- once swapped, the (empty) commit on the old catalog no longer matters
    if not okc and not swapped then error(ec, 0) end
    return result
  end)
  db:close()
  if not ok then
    if not opts.dry_run then pcall(remove_dir, path .. ".upgrade-new", CATALOG_FILES) end
    error(res, 0)
  end
  if not opts.dry_run then remove_dir(path .. ".upgrade-old", CATALOG_FILES) end
  return res
end

return M
