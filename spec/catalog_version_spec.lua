--- moraine.catalog_version and the commands on old catalogs: the version a
-- catalog records, v0.1's partition column positions, catalogs without sort
-- tables. The old catalogs are DuckLake's own (tests/fixtures/ducklake/
-- migrations/*/before); the partitioned v0.1 catalog is DuckLake's v01
-- catalog with one more snapshot written the way v0.1 wrote partition keys
-- (ducklake_partition_column.column_id = the column's position, as DuckLake's
-- MigrateV01 reads it).
local moraine = require "moraine"
local support = require "support"
local cv = require "moraine.catalog_version"
local upgrade = require "moraine.upgrade"

local MIG = support.FIXTURES .. "/migrations"

local run = support.moraine -- `moraine ARGS...` as a subprocess: {out, err, code, show}

local function ok_run(args)
  local r = run(args)
  assert(r.code == 0, r.show)
  return r
end

-- DuckLake's v0.1 catalog plus snapshot 2: table events (s STRUCT(a, b),
-- part_key) partitioned by part_key, and table test partitioned by i, both
-- as v0.1 stores partition keys: by position among the top-level columns
local function v01_partitioned()
  local src = MIG .. "/v01/before"
  local dir = support.tmpdir("v01p")
  support.mkdir(dir)
  local extra = {
    ducklake_snapshot = { '{"snapshot_id":2,"snapshot_time":"2025-06-02 15:37:00.000+00","schema_version":2,'
      .. '"next_catalog_id":5,"next_file_id":0}' },
    ducklake_snapshot_changes = { '{"snapshot_id":2,"changes_made":"created_table:\\"main\\".\\"events\\",'
      .. 'altered_table:1"}' },
    ducklake_table = { '{"table_id":2,"table_uuid":"01973149-c000-7000-8000-000000000002","begin_snapshot":2,'
      .. '"end_snapshot":null,"schema_id":0,"table_name":"events"}' },
    ducklake_column = {},
    ducklake_partition_info = {
      '{"partition_id":3,"table_id":2,"begin_snapshot":2,"end_snapshot":null}',
      '{"partition_id":4,"table_id":1,"begin_snapshot":2,"end_snapshot":null}' },
    ducklake_partition_column = {
      '{"partition_id":3,"table_id":2,"partition_key_index":0,"column_id":1,"transform":"identity"}',
      '{"partition_id":4,"table_id":1,"partition_key_index":0,"column_id":0,"transform":"identity"}' },
  }
  local function col(id, order, name, typ, parent)
    return string.format('{"column_id":%d,"begin_snapshot":2,"end_snapshot":null,"table_id":2,"column_order":%d,'
      .. '"column_name":"%s","column_type":"%s","initial_default":null,"default_value":null,"nulls_allowed":true,'
      .. '"parent_column":%s}', id, order, name, typ, parent and tostring(parent) or "null")
  end
  extra.ducklake_column = { col(1, 1, "s", "struct"), col(2, 2, "a", "int32", 1), col(3, 3, "b", "varchar", 1),
    col(4, 4, "part_key", "varchar") }
  for _, name in ipairs(support.tables_of(src)) do
    local text = support.read(src .. "/" .. name .. ".ndjson")
    for _, line in ipairs(extra[name] or {}) do
      if text ~= "" and text:sub(-1) ~= "\n" then text = text .. "\n" end
      text = text .. line .. "\n"
    end
    support.write(dir .. "/" .. name .. ".ndjson", text)
  end
  local cat = support.tmpdir("v01p-catalog")
  local db = moraine.open(cat, { no_sync = true })
  db:import_ndjson(dir)
  db:close()
  return cat
end

describe("moraine.catalog_version", function()
  after_each(support.cleanup)

  it("reads the version every migration fixture records, and knows each one", function()
    for _, folder in ipairs({ "v01", "v02", "v03", "v03-dev1", "v04", "v04-dev1", "per_table_schema" }) do
      local want
      for line in support.read(MIG .. "/" .. folder .. "/before/ducklake_metadata.ndjson"):gmatch("[^\n]+") do
        local row = moraine.json_decode(line)
        if row.key == "version" then want = row.value end
      end
      local dir = support.tmpdir(folder)
      local db = moraine.open(dir, { no_sync = true })
      db:import_ndjson(MIG .. "/" .. folder .. "/before")
      assert.are.equal(want, cv.of(db), folder)
      assert.are.equal(want, db:read(function(rd) return cv.of(rd) end), folder)
      local info = cv.info(want)
      assert.truthy(info, folder)
      assert.are.equal(-1, cv.compare(want, cv.CURRENT))
      assert.are.equal(want == "0.1", info.partition_column_is_position)
      -- a released version's table list is the set of tables the fixture has
      if info.tables then
        local have = {}
        for _, rel in ipairs(db:relations()) do
          if not rel.name:match("^ducklake_inlined_data_%d") then have[#have + 1] = rel.name end
        end
        local want_tables = {}
        for i, n in ipairs(info.tables) do want_tables[i] = n end
        table.sort(have)
        table.sort(want_tables)
        assert.are.same(want_tables, have, folder)
      end
      -- the sort tables exist exactly when the version says they always do (dev: either)
      if info.sort_tables then assert.is_true(cv.has(db, "ducklake_sort_info"), folder) end
      if cv.compare(want, "0.4-dev1") < 0 then assert.is_false(cv.has(db, "ducklake_sort_info"), folder) end
      db:close()
    end
  end)

  it("columns_present keeps the wanted columns a relation has, in the order asked", function()
    local db = moraine.open(support.tmpdir("cols"), { no_sync = true })
    db:commit(nil, function(tx)
      tx:define("ducklake_data_file", { "data_file_id", "table_id", "begin_snapshot", "end_snapshot", "path" })
    end)
    assert.are.same({ "path", "data_file_id" },
      cv.columns_present(db, "ducklake_data_file", { "path", "partition_id", "data_file_id" }))
    assert.are.same({}, cv.columns_present(db, "ducklake_delete_file", { "path" }))
    db:close()
  end)

  it("a new catalog is at the current version", function()
    local db = moraine.open(support.tmpdir("init"), { no_sync = true })
    db:init()
    assert.are.equal(cv.CURRENT, cv.of(db))
    assert.is_nil(cv.info("9.9"))
    db:close()
  end)

  it("v0.1 partition keys are named by position; the same names as after DuckLake's migration", function()
    local cat = v01_partitioned()
    local db = moraine.open(cat, { read_only = true })
    local names = db:read(function(rd)
      local S = rd:last_snapshot()
      local v = cv.of(rd)
      local out = {}
      for _, T in ipairs({ 1, 2 }) do
        local p = rd:partition_spec(T, S)
        local n = cv.partition_names(rd, T, S, v)
        out[T] = { n[tostring(p.columns[1].column_id)], cv.partition_field_id(rd, T, S, p.columns[1].column_id, v) }
      end
      return out
    end)
    db:close()
    assert.are.equal("i", names[1][1])
    assert.are.equal("part_key", names[2][1])
    upgrade.upgrade(cat)
    db = moraine.open(cat, { read_only = true })
    db:read(function(rd)
      local S = rd:last_snapshot()
      local v = cv.of(rd)
      for T, want in ipairs(names) do
        local p = rd:partition_spec(T, S)
        -- the field id the old catalog's position stood for is what the migration stored
        assert.are.equal(tostring(want[2]), tostring(p.columns[1].column_id))
        assert.are.equal(want[1], cv.partition_names(rd, T, S, v)[tostring(p.columns[1].column_id)])
      end
    end)
    db:close()
  end)
end)

describe("the commands on old catalogs", function()
  after_each(support.cleanup)

  it("show, tables and history name v0.1 partition columns by position, and history needs no sort tables", function()
    local cat = v01_partitioned()
    local show = moraine.json_decode(ok_run({ "-c", cat, "show", "events", "--json" }).out)
    local key = show.partition.keys[1]
    assert.are.equal("part_key", key.column, ok_run({ "-c", cat, "show", "events" }).out)
    show = moraine.json_decode(ok_run({ "-c", cat, "show", "test", "--json" }).out)
    assert.are.equal("i", show.partition.keys[1].column)
    local tables = moraine.json_decode(ok_run({ "-c", cat, "tables", "--json" }).out)
    local by = {}
    for _, t in ipairs(tables) do by[t.table] = t end
    assert.are.equal("part_key", by.events.partition)
    assert.are.equal("i", by.test.partition)
    local r = ok_run({ "-c", cat, "history", "events", "--json" })
    local h = moraine.json_decode(r.out)
    assert.are.equal("part_key", h.partition_specs[1].keys)
    assert.are.equal(0, #h.sort_specs)
    -- the version is reported: a note for an old catalog, and in stats --json
    assert.truthy(ok_run({ "-c", cat, "tables" }).err:find("DuckLake catalog version 0.1", 1, true))
    local stats = ok_run({ "-c", cat, "stats", "--json" })
    assert.are.equal("0.1", moraine.json_decode(stats.out).version)
    assert.truthy(stats.err:find("moraine upgrade", 1, true), stats.show)
    -- after moraine upgrade: the same names, read as field ids
    local up = ok_run({ "-c", cat, "upgrade" })
    assert.truthy(up.out:find("from DuckLake catalog version 0.1 to " .. cv.CURRENT, 1, true), up.show)
    show = moraine.json_decode(ok_run({ "-c", cat, "show", "events", "--json" }).out)
    assert.are.equal("part_key", show.partition.keys[1].column)
    assert.are.equal(4, tonumber(tostring(show.partition.keys[1].column_id)))
    stats = ok_run({ "-c", cat, "stats", "--json" })
    assert.are.equal(cv.CURRENT, moraine.json_decode(stats.out).version)
    assert.are.equal("", stats.err)
    -- a second upgrade: nothing to do, and that is no failure
    r = run({ "-c", cat, "upgrade" })
    assert.are.equal(0, r.code, r.show)
    assert.truthy(r.out:find("is the current one: nothing to do", 1, true), r.show)
  end)

  it("upgrade --dry-run --json reports the versions and changes nothing", function()
    local cat = v01_partitioned()
    local doc = moraine.json_decode(ok_run({ "-c", cat, "upgrade", "--dry-run", "--json" }).out)
    assert.are.equal("0.1", doc.from)
    assert.are.equal(cv.CURRENT, doc.to)
    assert.is_true(doc.dry_run)
    local db = moraine.open(cat, { read_only = true })
    assert.are.equal("0.1", cv.of(db))
    db:close()
  end)
end)
