--- Bad input: each case is either kept exactly or refused with an error that
-- names the table, row and column, and the store is left unchanged.
local moraine = require "moraine"
local support = require "support"

local INFO_COLS = { "partition_id", "table_id", "begin_snapshot", "end_snapshot" }

local function new_catalog()
  local db = moraine.open(support.tmpdir("bad"), { no_sync = true })
  db:commit(1, function(tx)
    tx:define("ducklake_partition_info", INFO_COLS)
    tx:insert("ducklake_partition_info", { partition_id = 1, table_id = 7, begin_snapshot = 1, end_snapshot = moraine.null })
  end)
  return db
end

-- Everything the catalog holds, as one comparable string.
local dump = support.dump

local function refused(db, fn, code, ...)
  local before = dump(db)
  local err = support.expect_err(code, { ... }, fn)
  assert.equal(before, dump(db), "the store changed")
  return err
end

describe("bad input", function()
  after_each(support.cleanup)

  it("refuses a snapshot id that goes backwards or repeats", function()
    local db = new_catalog()
    refused(db, function() db:commit(1, function() end) end, "ESNAPSHOT", "snapshot 1")
    refused(db, function() db:commit(0, function() end) end, "ESNAPSHOT", "last committed snapshot 1")
    db:close()
  end)

  it("refuses to end a row that is not live, naming table and row", function()
    local db = new_catalog()
    refused(db, function()
      db:commit(2, function(tx)
        tx:end_row("ducklake_partition_info", { partition_id = 2, table_id = 7, begin_snapshot = 1, end_snapshot = moraine.null })
      end)
    end, "ENOTLIVE", "ducklake_partition_info", "partition_id=2")
    -- ended once, it cannot be ended again
    db:commit(2, function(tx)
      tx:end_row("ducklake_partition_info", { partition_id = 1, table_id = 7, begin_snapshot = 1, end_snapshot = moraine.null })
    end)
    refused(db, function()
      db:commit(3, function(tx)
        tx:end_row("ducklake_partition_info", { partition_id = 1, table_id = 7, begin_snapshot = 1, end_snapshot = moraine.null })
      end)
    end, "ENOTLIVE", "partition_id=1")
    db:close()
  end)

  it("refuses a duplicate live key", function()
    local db = new_catalog()
    refused(db, function()
      db:commit(2, function(tx)
        tx:insert("ducklake_partition_info", { partition_id = 1, table_id = 7, begin_snapshot = 2, end_snapshot = moraine.null })
      end)
    end, "EEXIST", "ducklake_partition_info", "table_id=7", "partition_id=1")
    db:close()
  end)

  it("refuses a value of the wrong type, naming table, row and column", function()
    local db = new_catalog()
    refused(db, function()
      db:commit(2, function(tx)
        tx:insert("ducklake_partition_info", { partition_id = 3, table_id = "seven", begin_snapshot = 2, end_snapshot = moraine.null })
      end)
    end, "EINVAL", "ducklake_partition_info", "partition_id=3", "'table_id'", "BIGINT")
    db:close()
  end)

  it("refuses a row for a table the catalog does not have", function()
    local db = new_catalog()
    refused(db, function()
      db:commit(2, function(tx) tx:insert("ducklake_nonesuch", { a = 1 }) end)
    end, "ENOTFOUND", "ducklake_nonesuch")
    db:close()
  end)

  it("refuses a row with a missing column or an unknown column", function()
    local db = new_catalog()
    refused(db, function()
      db:commit(2, function(tx)
        tx:insert("ducklake_partition_info", { partition_id = 3, table_id = 7, begin_snapshot = 2 })
      end)
    end, "EINVAL", "end_snapshot")
    refused(db, function()
      db:commit(2, function(tx)
        tx:insert("ducklake_partition_info", { partition_id = 3, table_id = 7, begin_snapshot = 2, end_snapshot = moraine.null, extra = 1 })
      end)
    end, "EINVAL", "extra")
    db:close()
  end)

  it("ends a stored parent that gained a child in the same commit (it leaves current)", function()
    local db = new_catalog()
    db:commit(2, function(tx)
      tx:define("ducklake_partition_column", { "partition_id", "table_id", "partition_key_index", "column_id", "transform" })
      tx:insert("ducklake_partition_column", { partition_id = 1, table_id = 7, partition_key_index = 0, column_id = 3, transform = "day" })
      tx:end_row("ducklake_partition_info", { partition_id = 1, table_id = 7, begin_snapshot = 1, end_snapshot = moraine.null })
    end)
    assert.equal(0, #db:scan("ducklake_partition_info", { at = 2 }))
    assert.equal(1, #db:scan("ducklake_partition_info", { at = 1 }))
    assert.equal(1, #db:scan("ducklake_partition_info", { at = moraine.ALL }))
    db:close()
  end)

  it("refuses a live key too long to be ended later, naming table and limit", function()
    local db = new_catalog()
    refused(db, function()
      db:commit(2, function(tx)
        tx:define("ducklake_tag", { "object_id", "begin_snapshot", "end_snapshot", "key", "value" })
        tx:insert("ducklake_tag", { object_id = 1, begin_snapshot = 2, end_snapshot = moraine.null, key = string.rep("k", 480), value = "v" })
      end)
    end, "EINVAL", "ducklake_tag", "LMDB")
    db:close()
  end)

  it("keeps int64 extremes exactly", function()
    local db = new_catalog()
    local rows, cols = moraine.read_ndjson(support.FIXTURES .. "/s3_edge_values/catalog/ducklake_file_column_stats.ndjson")
    assert.is_true(#cols > 0)
    local max, min = moraine.json_decode("9223372036854775807"), moraine.json_decode("-9223372036854775808")
    db:commit(2, function(tx)
      tx:define("ducklake_table_stats", { "table_id", "record_count", "next_row_id", "file_size_bytes" })
      tx:insert("ducklake_table_stats", { table_id = max, record_count = min, next_row_id = 0, file_size_bytes = -1 })
    end)
    local r = db:scan("ducklake_table_stats", { at = moraine.ALL })[1].row
    assert.equal(max, r.table_id)
    assert.equal(min, r.record_count)
    assert.equal("9223372036854775807", tostring(r.table_id):gsub("LL$", ""))
    assert.equal("-9223372036854775808", tostring(r.record_count):gsub("LL$", ""))
    local found = false
    for _, row in ipairs(rows) do
      if row.min_value == "-9223372036854775808" then found = true end
    end
    assert.is_true(found, "the fixture carries -2^63 as a statistic")
    db:close()
  end)

  it("keeps a string with a NUL byte and invalid UTF-8 exactly, and refuses to export invalid UTF-8 as JSON", function()
    local db = new_catalog()
    local nul, bad = "a\0b", "\255\254x"
    db:commit(2, function(tx)
      tx:define("ducklake_metadata", { "key", "value", "scope", "scope_id" })
      tx:insert("ducklake_metadata", { key = nul, value = "", scope = moraine.null, scope_id = moraine.null })
      tx:insert("ducklake_metadata", { key = "bad", value = bad, scope = moraine.null, scope_id = 1 })
    end)
    local got = db:scan("ducklake_metadata", { at = moraine.ALL })
    assert.equal(nul, got[1].row.key)
    assert.equal("", got[1].row.value)
    assert.equal(moraine.null, got[1].row.scope)
    assert.equal(bad, got[2].row.value)
    local ok, err = pcall(db.export_ndjson, db, support.tmpdir("export"))
    assert.is_false(ok)
    assert.equal("EINVAL", err.code)
    assert.is_truthy(err.message:find("ducklake_metadata", 1, true))
    assert.is_truthy(err.message:find("'value'", 1, true))
    assert.is_truthy(err.message:find("UTF-8", 1, true))
    db:close()
  end)

  it("exports a NUL byte as \\u0000 and imports it back exactly", function()
    local db = moraine.open(support.tmpdir("nul"), { no_sync = true })
    db:commit(nil, function(tx)
      tx:define("ducklake_metadata", { "key", "value", "scope", "scope_id" })
      tx:insert("ducklake_metadata", { key = "k\0", value = "\0", scope = moraine.null, scope_id = moraine.null })
    end)
    local out = support.tmpdir("nul-out")
    db:export_ndjson(out)
    assert.equal('{"key":"k\\u0000","value":"\\u0000","scope":null,"scope_id":null}\n', support.read(out .. "/ducklake_metadata.ndjson"))
    local db2 = moraine.open(support.tmpdir("nul-in"), { no_sync = true })
    db2:import_ndjson(out)
    assert.equal("k\0", db2:scan("ducklake_metadata", { at = moraine.ALL })[1].row.key)
    db:close()
    db2:close()
  end)
end)

describe("bad import files", function()
  after_each(support.cleanup)

  local function import_dir(files)
    local dir = support.tmpdir("in")
    support.mkdir(dir)
    for name, text in pairs(files) do support.write(dir .. "/" .. name, text) end
    local db = moraine.open(support.tmpdir("cat"), { no_sync = true })
    local ok, err = pcall(db.import_ndjson, db, dir)
    local relations = #db:relations()
    local last = db:last_snapshot()
    db:close()
    return ok, err, relations, last
  end

  local SNAP = '{"snapshot_id":0,"snapshot_time":"t","schema_version":0,"next_catalog_id":1,"next_file_id":0}\n'

  it("refuses malformed JSON, naming file and line, and leaves the catalog empty", function()
    local ok, err, rels, last = import_dir({ ["ducklake_snapshot.ndjson"] = SNAP .. '{"snapshot_id":1,\n' })
    assert.is_false(ok)
    assert.equal("EJSON", err.code)
    assert.is_truthy(err.message:find("ducklake_snapshot.ndjson:2", 1, true), err.message)
    assert.equal(0, rels)
    assert.is_nil(last)
  end)

  it("refuses a wrong type, naming file, line and column", function()
    local ok, err, rels = import_dir({ ["ducklake_snapshot.ndjson"] = SNAP ..
      '{"snapshot_id":1,"snapshot_time":"t","schema_version":"one","next_catalog_id":1,"next_file_id":0}\n' })
    assert.is_false(ok)
    assert.equal("EINVAL", err.code)
    assert.is_truthy(err.message:find("ducklake_snapshot.ndjson:2", 1, true), err.message)
    assert.is_truthy(err.message:find("'schema_version'", 1, true), err.message)
    assert.equal(0, rels)
  end)

  it("refuses a row with a missing column", function()
    local ok, err = import_dir({ ["ducklake_snapshot.ndjson"] = SNAP ..
      '{"snapshot_id":1,"snapshot_time":"t","schema_version":1,"next_catalog_id":1}\n' })
    assert.is_false(ok)
    assert.is_truthy(err.message:find("missing column 'next_file_id'", 1, true), err.message)
  end)

  it("refuses an integer beyond int64 rather than rounding it", function()
    local ok, err = import_dir({ ["ducklake_snapshot.ndjson"] =
      '{"snapshot_id":9223372036854775808,"snapshot_time":"t","schema_version":0,"next_catalog_id":1,"next_file_id":0}\n' })
    assert.is_false(ok)
    assert.equal("EJSON", err.code)
  end)

  it("refuses a directory that holds no catalog", function()
    local ok, err = import_dir({ ["notes.txt"] = "hello" })
    assert.is_false(ok)
    assert.equal("EIO", err.code)
  end)

  it("undoes a replay that fails half way (an end_snapshot below begin_snapshot)", function()
    local ok, err, rels, last = import_dir({
      ["ducklake_snapshot.ndjson"] = SNAP,
      ["ducklake_partition_info.ndjson"] = '{"partition_id":1,"table_id":1,"begin_snapshot":3,"end_snapshot":2}\n',
    })
    assert.is_false(ok)
    assert.is_truthy(err.message:find("ducklake_partition_info.ndjson:1", 1, true), err.message)
    assert.equal(0, rels)
    assert.is_nil(last)
  end)

  it("undoes the import when a commit fails after earlier snapshots were written", function()
    local ok, err, rels, last = import_dir({
      ["ducklake_snapshot.ndjson"] = SNAP .. SNAP:gsub('"snapshot_id":0', '"snapshot_id":1'),
      ["ducklake_partition_info.ndjson"] = '{"partition_id":1,"table_id":1,"begin_snapshot":0,"end_snapshot":null}\n' ..
        '{"partition_id":1,"table_id":1,"begin_snapshot":1,"end_snapshot":null}\n',
    })
    assert.is_false(ok)
    assert.equal("EEXIST", err.code)
    assert.is_truthy(err.message:find("undone", 1, true), err.message)
    assert.equal(0, rels)
    assert.is_nil(last)
  end)

  it("refuses a second live partition spec for one table (fuzzer finding N3), and undoes the import", function()
    local ok, err, rels, last = import_dir({
      ["ducklake_snapshot.ndjson"] = SNAP .. SNAP:gsub('"snapshot_id":0', '"snapshot_id":1') .. SNAP:gsub('"snapshot_id":0', '"snapshot_id":2'),
      ["ducklake_partition_info.ndjson"] = '{"partition_id":1,"table_id":1,"begin_snapshot":1,"end_snapshot":null}\n' ..
        '{"partition_id":2,"table_id":1,"begin_snapshot":2,"end_snapshot":null}\n',
    })
    assert.is_false(ok)
    assert.equal("EEXIST", err.code)
    assert.is_truthy(err.message:find("already has a live spec", 1, true), err.message)
    assert.equal(0, rels)
    assert.is_nil(last)
  end)

  it("lets a catalog that holds only empty tables be imported into again", function()
    local empty = support.tmpdir("only-empty")
    support.mkdir(empty)
    support.write(empty .. "/ducklake_snapshot.ndjson", "")
    local db = moraine.open(support.tmpdir("only-empty-cat"), { no_sync = true })
    db:import_ndjson(empty)
    assert.is_nil(db:last_snapshot())
    db:import_ndjson(support.FIXTURES .. "/s3_edge_values/catalog")
    assert.equal(16, db:last_snapshot())
    local ok, err = pcall(db.import_ndjson, db, support.FIXTURES .. "/s3_edge_values/catalog")
    assert.is_false(ok)
    assert.equal("EEXIST", err.code)
    db:close()
  end)

  it("accepts a file holding one JSON array of objects", function()
    local dir = support.tmpdir("arr")
    support.mkdir(dir)
    support.write(dir .. "/ducklake_metadata.json", '[{"key":"version","value":"1.1-dev1","scope":null,"scope_id":null},\n' ..
      ' {"key":"data_path","value":"data/","scope":null,"scope_id":null}]\n')
    -- the other tables of a 1.1-dev1 catalog, empty (a catalog without one is refused)
    for _, name in ipairs(moraine.core.required_tables("1.1-dev1")) do
      if name ~= "ducklake_metadata" then support.write(dir .. "/" .. name .. ".ndjson", "") end
    end
    support.write(dir .. "/ducklake_snapshot.ndjson", SNAP)
    local db = moraine.open(support.tmpdir("arr-cat"), { no_sync = true })
    db:import_ndjson(dir)
    local rows = db:scan("ducklake_metadata", { at = moraine.ALL })
    assert.equal(2, #rows)
    assert.equal("data_path", rows[2].row.key)
    assert.equal(moraine.null, rows[2].row.scope_id)
    db:close()
  end)

  it("accepts gaps in snapshot ids, begin_snapshots of expired snapshots and unknown tables, and keeps them", function()
    local dir = support.tmpdir("gaps")
    support.mkdir(dir)
    support.write(dir .. "/ducklake_snapshot.ndjson", SNAP:gsub('"snapshot_id":0', '"snapshot_id":5') ..
      SNAP:gsub('"snapshot_id":0', '"snapshot_id":9'))
    local info = '{"partition_id":1,"table_id":1,"begin_snapshot":2,"end_snapshot":7}\n' ..
      '{"partition_id":2,"table_id":1,"begin_snapshot":7,"end_snapshot":null}\n'
    support.write(dir .. "/ducklake_partition_info.ndjson", info)
    local inlined = '{"row_id":0,"begin_snapshot":3,"end_snapshot":null,"x":1.5,"y":{"a":[1,2]}}\n' ..
      '{"row_id":1,"begin_snapshot":3,"end_snapshot":9,"x":-2.25,"y":null}\n'
    support.write(dir .. "/ducklake_inlined_data_1_1.ndjson", inlined)
    local db = moraine.open(support.tmpdir("gaps-cat"), { no_sync = true })
    db:import_ndjson(dir)
    assert.equal(1, #db:scan("ducklake_partition_info", { at = 6 }))
    assert.equal(2, db:scan("ducklake_partition_info", { at = 8 })[1].row.partition_id)
    assert.equal(2, #db:scan("ducklake_inlined_data_1_1", { at = 8 }))
    assert.equal(1, #db:scan("ducklake_inlined_data_1_1", { at = 9 }))
    local out = support.tmpdir("gaps-out")
    db:export_ndjson(out)
    assert.equal(info, support.read(out .. "/ducklake_partition_info.ndjson"))
    assert.equal(inlined, support.read(out .. "/ducklake_inlined_data_1_1.ndjson"))
    db:close()
  end)
end)
