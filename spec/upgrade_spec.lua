--- moraine.upgrade: DuckLake's migrations of old catalogs, checked row for
-- row against DuckLake's own migrated catalogs. Each folder of
-- tests/fixtures/ducklake/migrations holds an old catalog as DuckLake's
-- repository keeps it (before/), the same catalog after the real ducklake
-- extension migrated it in place with AUTOMATIC_MIGRATION (after/), and
-- DuckLake's answers on the migrated catalog (expected/).
local moraine = require "moraine"
local support = require "support"
local upgrade = require "moraine.upgrade"
local cv = require "moraine.catalog_version"

local MIG = support.FIXTURES .. "/migrations"
local FOLDERS = { "v01", "v02", "v03", "v03-dev1", "v04", "v04-dev1", "per_table_schema" }

-- the non-blank lines of a file (an empty table is an empty file or one newline)
local function lines(path)
  local out = {}
  for line in support.read(path):gmatch("[^\n]+") do out[#out + 1] = line end
  return out
end

local function import(folder)
  local dir = support.tmpdir(folder)
  local db = moraine.open(dir, { no_sync = true })
  db:import_ndjson(MIG .. "/" .. folder .. "/before")
  db:close()
  return dir
end

local function version_in(dir)
  local m = {}
  for _, line in ipairs(lines(dir .. "/ducklake_metadata.ndjson")) do
    local row = moraine.json_decode(line)
    if row.key == "version" then m[#m + 1] = row.value end
  end
  return m[1]
end

local function exported(dir)
  local db = moraine.open(dir, { read_only = true })
  local out = support.tmpdir("export")
  db:export_ndjson(out)
  db:close()
  return out
end

describe("moraine upgrade, against DuckLake's own migrations", function()
  after_each(support.cleanup)

  for _, folder in ipairs(FOLDERS) do
    it(folder .. ": every table of the upgraded catalog equals DuckLake's migrated one, line for line", function()
      local before_version = version_in(MIG .. "/" .. folder .. "/before")
      local dir = import(folder)
      local r = upgrade.upgrade(dir)
      assert.are.equal(before_version, r.from)
      assert.are.equal(version_in(MIG .. "/" .. folder .. "/after"), r.to)
      local out = exported(dir)
      local after = MIG .. "/" .. folder .. "/after"
      -- the same set of tables
      assert.are.same(support.tables_of(after), support.tables_of(out))
      for _, name in ipairs(support.tables_of(after)) do
        assert.are.same(lines(after .. "/" .. name .. ".ndjson"), lines(out .. "/" .. name .. ".ndjson"), name)
      end
      -- a sound catalog, at the version DuckLake's migration writes
      local db = moraine.open(dir, { read_only = true })
      assert.are.same({}, db:verify())
      assert.are.equal(version_in(after), cv.of(db))
      db:close()
    end)

    it(folder .. ": DuckLake's snapshots and list_files answers hold on the upgraded catalog", function()
      local dir = import(folder)
      local db = moraine.open(dir, { read_only = true })
      local last_before = db:last_snapshot()
      db:close()
      upgrade.upgrade(dir)
      db = moraine.open(dir, { read_only = true })
      -- no snapshot added: the migration is snapshot-less
      assert.are.equal(tostring(last_before), tostring(db:last_snapshot()))
      local want = {}
      for _, line in ipairs(lines(MIG .. "/" .. folder .. "/expected/snapshots.ndjson")) do
        local s = moraine.json_decode(line)
        want[#want + 1] = tostring(s.snapshot_id) .. "|" .. s.snapshot_time .. "|" .. tostring(s.schema_version)
      end
      local got = {}
      for _, e in ipairs(db:scan("ducklake_snapshot", { at = moraine.ALL })) do
        local s = e.row
        got[#got + 1] = tostring(s.snapshot_id) .. "|" .. s.snapshot_time .. "|" .. tostring(s.schema_version)
      end
      assert.are.same(want, got)
      -- list_files of every table at the newest snapshot
      local files = 0
      db:read(function(rd)
        for _, e in ipairs(db:scan("ducklake_table")) do
          for _ in rd:files(e.row.table_id, rd:last_snapshot()) do files = files + 1 end
        end
      end)
      assert.are.equal(#lines(MIG .. "/" .. folder .. "/expected/list_files.ndjson"), files)
      db:close()
    end)
  end

  it("a verb on a catalog of a DuckLake version without a table it writes says to upgrade first, changing nothing", function()
    local dir = import("v02") -- 0.2: no ducklake_schema_versions
    local db = moraine.open(dir, { no_sync = true })
    local before = support.dump(db)
    support.expect_err("ENOTFOUND", { "ducklake_schema_versions", "older DuckLake version", "moraine upgrade" }, db.transaction, db,
      function(tx) tx:create_table("z", { { name = "a", type = "int32" } }) end)
    assert.equal(before, support.dump(db))
    db:close()
  end)

  it("refuses a catalog already at the current version, changing nothing", function()
    local dir = import("v04")
    upgrade.upgrade(dir)
    local db = moraine.open(dir, { read_only = true })
    local dump = support.dump(db)
    db:close()
    support.expect_err("EINVAL", { "already at version " .. cv.CURRENT, "nothing to do" }, upgrade.upgrade, dir)
    db = moraine.open(dir, { read_only = true })
    assert.are.equal(dump, support.dump(db))
    db:close()
    -- `if_needed` (what the command passes): no error, nothing changed
    local r = upgrade.upgrade(dir, { if_needed = true })
    assert.is_true(r.current)
    assert.are.equal(cv.CURRENT, r.from)
    -- the command: nothing to do is no failure
    local c = support.moraine({ "-c", dir, "upgrade" })
    assert.are.equal(0, c.code, c.show)
    assert.truthy(c.out:find("is the current one: nothing to do", 1, true), c.show)
    c = support.moraine({ "-c", dir, "upgrade", "--dry-run", "--json" })
    assert.are.equal(0, c.code, c.show)
    assert.truthy(c.out:find('"current":true', 1, true), c.show)
    db = moraine.open(dir, { read_only = true })
    assert.are.equal(dump, support.dump(db))
    db:close()
    -- and its help, the man page and docs/upgrade.md say so (they said refused)
    local h = support.moraine({ "upgrade", "--help" })
    local help = h.out:gsub("%s+", " ")
    assert.truthy(help:find("already current: it says \"nothing to do\" and exits 0", 1, true), h.show)
    assert.falsy(help:find("Refused on a catalog that is already current", 1, true), h.show)
    local man = support.read("moraine.1"):gsub("%s+", " ")
    assert.truthy(man:find('already current: it says "nothing to do" and exits 0', 1, true))
    local doc = support.read("docs/upgrade.md")
    assert.falsy(doc:find('already at the current version: "nothing to do" (EINVAL)', 1, true))
  end)

  it("refuses a catalog whose newest commit is a partial one of an interrupted sync round", function()
    local dir = import("v03")
    local db = moraine.open(dir, { no_sync = true })
    local last = db:last_snapshot()
    -- a sync round commits a snapshot DuckLake expired without its ducklake_snapshot row
    db:commit(last + 1, function(tx)
      tx:insert("ducklake_schema", { schema_id = 7, schema_uuid = "00000000-0000-0000-0000-000000000007",
        begin_snapshot = last + 1, end_snapshot = moraine.null, schema_name = "mid", path = "mid/",
        path_is_relative = true })
    end, { partial = true })
    assert.is_true(upgrade.mid_sync(db))
    local dump = support.dump(db)
    db:close()
    support.expect_err("EINVAL", { "middle of a sync round", "moraine sync" }, upgrade.upgrade, dir)
    db = moraine.open(dir, { read_only = true })
    assert.are.equal(dump, support.dump(db))
    assert.are.equal("0.3", cv.of(db))
    db:close()
  end)

  it("a catalog after a whole sync or import round is not mid-sync", function()
    local dir = import("v01")
    local db = moraine.open(dir, { read_only = true })
    assert.is_false(upgrade.mid_sync(db))
    db:close()
  end)

  it("--dry-run (opts.dry_run) reports and changes nothing", function()
    local dir = import("v01")
    local db = moraine.open(dir, { read_only = true })
    local dump = support.dump(db)
    db:close()
    local r = upgrade.upgrade(dir, { dry_run = true })
    assert.are.equal("0.1", r.from)
    assert.are.equal(cv.CURRENT, r.to)
    db = moraine.open(dir, { read_only = true })
    assert.are.equal(dump, support.dump(db))
    db:close()
    support.expect_err("EINVAL", "unknown option 'bogus'", upgrade.upgrade, dir, { bogus = true })
  end)

  describe("a kill during the swap", function()
    -- the states a kill leaves, made by hand from a whole migrated catalog
    -- (`.upgrade-new`) and the old one
    local function states(folder)
      local old = import(folder)
      local new = import(folder)
      upgrade.upgrade(new)
      return old, new
    end

    it("between the two renames (no catalog at the path): the next upgrade puts the new one in place", function()
      local old, new = states("v02")
      local path = support.tmpdir("swap")
      assert(os.rename(old, path .. ".upgrade-old"))
      assert(os.rename(new, path .. ".upgrade-new"))
      support.expect_err("EINVAL", "already at version", upgrade.upgrade, path)
      local db = moraine.open(path, { read_only = true, create = false })
      assert.are.equal(cv.CURRENT, cv.of(db))
      db:close()
      assert.is_nil(os.rename(path .. ".upgrade-old", path .. ".upgrade-old"))
      assert.is_nil(os.rename(path .. ".upgrade-new", path .. ".upgrade-new"))
    end)

    it("before the swap (old catalog still at the path): the leftover is dropped and the upgrade redone", function()
      local old, new = states("v02")
      local tmp = import("v02") -- an unfinished build
      assert(os.rename(new, old .. ".upgrade-new"))
      assert(os.rename(tmp, old .. ".upgrade-tmp"))
      local r = upgrade.upgrade(old)
      assert.are.equal("0.3-dev1", r.from)
      local db = moraine.open(old, { read_only = true })
      assert.are.equal(cv.CURRENT, cv.of(db))
      db:close()
      assert.is_nil(os.rename(old .. ".upgrade-new", old .. ".upgrade-new"))
      assert.is_nil(os.rename(old .. ".upgrade-tmp", old .. ".upgrade-tmp"))
    end)
  end)
end)

describe("moraine.upgrade.migrate (the steps, in memory)", function()
  local function model(tables)
    local m = { names = {}, t = {} }
    for _, t in ipairs(tables) do
      m.names[#m.names + 1] = t.name
      m.t[t.name] = { columns = t.columns, rows = t.rows or {} }
    end
    return m
  end

  it("v0.1: a partition column's position becomes the field id of the live top-level column there", function()
    local N = moraine.null
    local function col(id, order, name, parent, e)
      return { column_id = id, begin_snapshot = 1, end_snapshot = e or N, table_id = 1, column_order = order,
        column_name = name, column_type = "int32", initial_default = N, default_value = N, nulls_allowed = true,
        parent_column = parent or N }
    end
    local cols = { "column_id", "begin_snapshot", "end_snapshot", "table_id", "column_order", "column_name",
      "column_type", "initial_default", "default_value", "nulls_allowed", "parent_column" }
    local names = { "ducklake_metadata", "ducklake_schema", "ducklake_table", "ducklake_data_file",
      "ducklake_delete_file", "ducklake_snapshot", "ducklake_snapshot_changes", "ducklake_table_column_stats",
      "ducklake_inlined_data_tables", "ducklake_file_column_statistics" }
    local tables = {}
    for _, n in ipairs(names) do tables[#tables + 1] = { name = n, columns = {} } end
    tables[1].columns, tables[1].rows = { "key", "value" }, { { key = "version", value = "0.1" } }
    tables[#tables + 1] = { name = "ducklake_column", columns = cols, rows = {
      col(1, 1, "s"), col(2, 1, "a", 1), col(3, 2, "b", 1), col(9, 2, "gone", nil, 2), col(4, 3, "part_key") } }
    tables[#tables + 1] = { name = "ducklake_partition_column",
      columns = { "partition_id", "table_id", "partition_key_index", "column_id", "transform" },
      rows = { { partition_id = 5, table_id = 1, partition_key_index = 0, column_id = 1, transform = "identity" },
        { partition_id = 5, table_id = 1, partition_key_index = 1, column_id = 0, transform = "identity" },
        { partition_id = 5, table_id = 1, partition_key_index = 2, column_id = 2, transform = "identity" } } }
    local m = upgrade.migrate(model(tables), "0.1")
    local got = {}
    for i, r in ipairs(m.t.ducklake_partition_column.rows) do got[i] = r.column_id end
    -- live top-level columns by column_order: s (1), part_key (4); nothing at position 2
    assert.are.same({ 4, 1, N }, got)
    assert.are.equal("1.1-dev1", m.t.ducklake_metadata.rows[1].value)
  end)

  it("v0.3: partial_max comes out of partial_file_info, which is dropped", function()
    local N = moraine.null
    local function t(name, columns, rows) return { name = name, columns = columns, rows = rows or {} } end
    local m = model({
      t("ducklake_metadata", { "key", "value", "scope", "scope_id" }, { { key = "version", value = "0.3",
        scope = N, scope_id = N } }),
      t("ducklake_column", { "column_id", "default_value_type" }), t("ducklake_schema_versions",
        { "begin_snapshot", "schema_version" }), t("ducklake_table", { "table_id", "begin_snapshot", "end_snapshot" }),
      t("ducklake_delete_file", { "delete_file_id" }), t("ducklake_inlined_data_tables", { "table_name" }),
      t("ducklake_data_file", { "data_file_id", "partial_file_info", "mapping_id" }, {
        { data_file_id = 1, partial_file_info = "partial_max:17", mapping_id = N },
        { data_file_id = 2, partial_file_info = N, mapping_id = N },
        { data_file_id = 3, partial_file_info = "partial_max:x", mapping_id = N },
        { data_file_id = 4, partial_file_info = "partial_max:99999999999999999999", mapping_id = N },
        -- past 2^53 (a double would round it) and int64's largest: exact
        { data_file_id = 5, partial_file_info = "partial_max:9007199254740993", mapping_id = N },
        { data_file_id = 6, partial_file_info = "partial_max:9223372036854775807", mapping_id = N } }),
    })
    upgrade.migrate(m, "0.3")
    local df = m.t.ducklake_data_file
    assert.are.same({ "data_file_id", "mapping_id", "partial_max", "row_group_count" }, df.columns)
    local got = {}
    for i, r in ipairs(df.rows) do got[i] = r.partial_max end
    assert.are.same({ 17, N, N, N }, { got[1], got[2], got[3], got[4] })
    assert.are.equal("9007199254740993", (tostring(got[5]):gsub("LL$", "")))
    assert.are.equal("9223372036854775807", (tostring(got[6]):gsub("LL$", "")))
  end)

  it("refuses the current version and unknown ones", function()
    support.expect_err("EINVAL", "nothing to do", upgrade.migrate, { names = {}, t = {} }, cv.CURRENT)
    support.expect_err("EINVAL", "cannot migrate from catalog version 9.9", upgrade.migrate, { names = {}, t = {} },
      "9.9")
  end)
end)
