--- DuckLake's rules the verbs follow, found by review against DuckLake's
-- source (each case fails on the code before its fix): what DuckLake
-- refuses, the verbs refuse too, and nothing is committed; the ids a
-- commit gives its files are DuckLake's.
local moraine = require "moraine"
local support = require "support"

local function fresh()
  local db = moraine.open(support.tmpdir("vrefuse"), { no_sync = true })
  db:init("data/")
  return db
end

-- runs f in a transaction that must be refused with code and a message holding msg; nothing committed
local function refused(db, code, msg, f)
  local before = db:last_snapshot()
  local ok, err = pcall(db.transaction, db, f)
  assert.is_false(ok, "committed")
  assert.are.equal(code, err.code, err.message)
  assert.is_truthy(err.message:find(msg, 1, true), err.message)
  assert.are.equal(before, db:last_snapshot())
end

local function live_names(db, rel, col)
  local names = {}
  for _, r in ipairs(db:scan(rel, { at = db:last_snapshot() })) do names[#names + 1] = r.row[col] end
  table.sort(names)
  return names
end

describe("verbs follow DuckLake's rules", function()
  after_each(support.cleanup)

  it("a table cannot take a view's name (create_table, rename_table, db:exec's ALTER TABLE RENAME): one set of names", function()
    local db = fresh()
    db:transaction(function(tx)
      tx:create_view("v", "SELECT 1")
      tx:create_table("t", { { name = "a", type = "int64" } })
    end)
    refused(db, "EEXIST", 'a view "v" already exists', function(tx) tx:create_table("V", { { name = "a", type = "int64" } }) end)
    refused(db, "EEXIST", 'a view "v" already exists', function(tx) tx:rename_table("t", "V") end)
    local ok, err = pcall(db.exec, db, "ALTER TABLE t RENAME TO V")
    assert.is_false(ok)
    assert.is_truthy(err.message:find("Cannot rename table t to V, since V already exists.", 1, true), err.message)
    ok, err = pcall(db.exec, db, "CREATE TABLE v (a BIGINT)")
    assert.is_false(ok)
    assert.is_truthy(err.message:find('View with name "v" already exists!', 1, true), err.message)
    assert.are.same({ "t" }, live_names(db, "ducklake_table", "table_name"))
    -- once the view is dropped the name is free again
    db:transaction(function(tx) tx:drop_view("v"); tx:rename_table("t", "v") end)
    assert.are.same({ "v" }, live_names(db, "ducklake_table", "table_name"))
    db:close()
  end)

  it("SET / DROP NOT NULL are checked as DuckLake checks them (alter_column and db:exec), in its words", function()
    local db = fresh()
    db:transaction(function(tx) tx:create_table("u", { { name = "a", type = "int32" } }) end)
    db:transaction(function(tx)
      tx:add_data_files("u", { { path = "f", record_count = 3, file_size_bytes = 5,
        stats = { { column = "a", value_count = 3, null_count = 2, min_value = "1", max_value = "1" } } } })
    end)
    refused(db, "EINVAL", "Cannot DROP NULL on column a - it has no NOT NULL constraint defined",
      function(tx) tx:alter_column("u", "a", { not_null = false }) end)
    refused(db, "EINVAL", "Cannot SET NOT NULL on column a - the column has NULL values",
      function(tx) tx:alter_column("u", "a", { not_null = true }) end)
    db:transaction(function(tx) tx:add_column("u", { name = "b", type = "int32" }) end)
    refused(db, "EINVAL", "Cannot SET NOT NULL on table u - no column stats are available",
      function(tx) tx:alter_column("u", "b", { not_null = true }) end)
    local ok, err = pcall(db.exec, db, "ALTER TABLE u ALTER COLUMN b SET NOT NULL")
    assert.is_false(ok)
    assert.is_truthy(err.message:find("no column stats are available", 1, true), err.message)
    -- a table created in this transaction, or given files before in it, has no stats DuckLake reads
    refused(db, "EINVAL", "Cannot SET NOT NULL on table n - the table has transaction-local changes or no stats are available",
      function(tx) tx:create_table("n", { { name = "a", type = "int32" } }); tx:alter_column("n", "a", { not_null = true }) end)
    db:transaction(function(tx) tx:create_table("w", { { name = "a", type = "int32" } }) end)
    local file = { path = "g", record_count = 3, file_size_bytes = 5,
      stats = { { column = "a", value_count = 3, null_count = 0, min_value = "1", max_value = "1" } } }
    refused(db, "EINVAL", "the table has transaction-local changes or no stats are available",
      function(tx) tx:add_data_files("w", { file }); tx:alter_column("w", "a", { not_null = true }) end)
    db:transaction(function(tx) tx:add_data_files("w", { file }) end)
    db:transaction(function(tx) tx:alter_column("w", "a", { not_null = true }) end)
    refused(db, "EINVAL", "Cannot SET NOT NULL on column a - it already has a NOT NULL constraint",
      function(tx) tx:alter_column("w", "a", { not_null = true }) end)
    ok, err = pcall(db.exec, db, "ALTER TABLE w ALTER COLUMN a SET NOT NULL")
    assert.is_false(ok)
    assert.is_truthy(err.message:find("it already has a NOT NULL constraint", 1, true), err.message)
    db:transaction(function(tx) tx:alter_column("w", "a", { not_null = false }) end)
    local wid
    for _, r in ipairs(db:scan("ducklake_table", { at = db:last_snapshot() })) do
      if r.row.table_name == "w" then wid = r.row.table_id end
    end
    local a = db:scan("ducklake_column", { at = db:last_snapshot(), table_id = wid })
    assert.are.equal(1, #a)
    assert.are.equal(true, a[1].row.nulls_allowed)
    db:close()
  end)

  it("ADD COLUMN ... NOT NULL is refused (verb and db:exec), as DuckDB's parser refuses any constraint there", function()
    local db = fresh()
    db:transaction(function(tx) tx:create_table("t", { { name = "a", type = "int64" } }) end)
    refused(db, "EINVAL", "Adding columns with constraints not yet supported",
      function(tx) tx:add_column("t", { name = "b", type = "int64", not_null = true }) end)
    local ok, err = pcall(db.exec, db, "ALTER TABLE t ADD COLUMN c INTEGER NOT NULL")
    assert.is_false(ok)
    assert.is_truthy(err.message:find("Adding columns with constraints not yet supported", 1, true), err.message)
    assert.are.equal(1, db:last_snapshot())
    db:close()
  end)
  it("file ids are given in DuckLake's commit order: new data files (table by table), then delete files, then "
    .. "compaction outputs, whatever the order of the verbs", function()
    local db = fresh()
    db:transaction(function(tx)
      tx:create_table("a", { { name = "x", type = "int32" } })
      tx:create_table("b", { { name = "x", type = "int32" } })
    end)
    local ids = {}
    for _, r in ipairs(db:scan("ducklake_table", { at = db:last_snapshot() })) do ids[r.row.table_name] = r.row.table_id end
    local lo, hi = ids.a < ids.b and "a" or "b", ids.a < ids.b and "b" or "a"
    local f = function(path) return { path = path, record_count = 4, file_size_bytes = 5 } end
    db:transaction(function(tx) tx:add_data_files(hi, { f(hi .. "0") }); tx:add_data_files(lo, { f(lo .. "0"), f(lo .. "00") }) end)
    local function id_of(rel, col, path)
      for _, r in ipairs(db:scan(rel, { at = db:last_snapshot() })) do if r.row.path == path then return r.row[col] end end
    end
    -- the lower table id's files first (DuckLake's table map), each table's in statement order
    assert.are.same({ 0, 1, 2 }, { id_of("ducklake_data_file", "data_file_id", lo .. "0"),
      id_of("ducklake_data_file", "data_file_id", lo .. "00"), id_of("ducklake_data_file", "data_file_id", hi .. "0") })
    -- an UPDATE written delete first: the new data files still take the ids below the delete file's,
    -- and a compaction's output comes last (the snapshot's next_file_id counts them all)
    local snap = db:transaction(function(tx)
      tx:rewrite_files(lo, { 0, 1 }, { f("merged") })
      tx:add_delete_files(hi, { { data_file_id = 2, path = "del", delete_count = 1, file_size_bytes = 1, footer_size = 1 } })
      tx:add_data_files(hi, { f("new_hi") })
      tx:add_data_files(lo, { f("new_lo") })
    end)
    assert.are.same({ 3, 4, 5, 6 }, { id_of("ducklake_data_file", "data_file_id", "new_lo"),
      id_of("ducklake_data_file", "data_file_id", "new_hi"), id_of("ducklake_delete_file", "delete_file_id", "del"),
      id_of("ducklake_data_file", "data_file_id", "merged") })
    assert.are.equal(7, db:scan("ducklake_snapshot", { at = moraine.ALL })[snap + 1].row.next_file_id)
    assert.same({}, db:verify())
    db:close()
  end)
  it("a column name starting with _ducklake_ (any case) is refused on a 1.1 catalog: create, add, rename", function()
    local db = fresh()
    local msg = 'is reserved by DuckLake for internal use: column names starting with "_ducklake_" are not allowed'
    refused(db, "EINVAL", 'Column name "_ducklake_x" ' .. msg,
      function(tx) tx:create_table("t", { { name = "_ducklake_x", type = "int64" } }) end)
    db:transaction(function(tx) tx:create_table("u", { { name = "a", type = "int64" } }) end)
    refused(db, "EINVAL", 'Column name "_DuckLake_y" ' .. msg,
      function(tx) tx:add_column("u", { name = "_DuckLake_y", type = "int64" }) end)
    refused(db, "EINVAL", 'Column name "_ducklake_z" ' .. msg, function(tx) tx:rename_column("u", "a", "_ducklake_z") end)
    local ok, err = pcall(db.exec, db, "ALTER TABLE u ADD COLUMN _ducklake_w INT")
    assert.is_false(ok)
    assert.is_truthy(err.message:find(msg, 1, true), err.message)
    -- other names are free: the prefix alone is reserved
    db:transaction(function(tx) tx:add_column("u", { name = "ducklake_x", type = "int64" }) end)
    db:close()
  end)
  it("COMMENT ... IS NULL ends the comment and writes a row whose value is NULL, as DuckLake's WriteNewTags does", function()
    local db = fresh()
    db:transaction(function(tx) tx:create_table("t", { { name = "a", type = "int64" } }) end)
    db:exec("COMMENT ON TABLE t IS 'x'; COMMENT ON COLUMN t.a IS 'y'")
    db:exec("COMMENT ON TABLE t IS NULL")
    db:transaction(function(tx) tx:set_comment("t", "a", nil) end)
    for _, rel in ipairs({ "ducklake_tag", "ducklake_column_tag" }) do
      local live = db:scan(rel, { at = db:last_snapshot() })
      assert.are.equal(1, #live, rel)
      assert.are.equal("comment", live[1].row.key)
      assert.are.equal(moraine.null, live[1].row.value)
      assert.are.equal(2, #db:scan(rel, { at = moraine.ALL }), rel)
    end
    db:close()
  end)
  it("dropped_view and dropped_schema changes are listed by ascending id, whatever the order of the drops", function()
    local db = fresh()
    db:exec("CREATE SCHEMA a; CREATE SCHEMA b")
    db:exec("CREATE VIEW v1 AS SELECT 1; CREATE VIEW v2 AS SELECT 2")
    local ids = {}
    for _, r in ipairs(db:scan("ducklake_view", { at = db:last_snapshot() })) do ids[r.row.view_name] = r.row.view_id end
    for _, r in ipairs(db:scan("ducklake_schema", { at = db:last_snapshot() })) do ids[r.row.schema_name] = r.row.schema_id end
    local function changes()
      local c = db:scan("ducklake_snapshot_changes", { at = db:last_snapshot() })
      return c[#c].row.changes_made
    end
    -- the higher id dropped first
    local first, second = ids.v1 > ids.v2 and "v1" or "v2", ids.v1 > ids.v2 and "v2" or "v1"
    db:exec(("BEGIN; DROP VIEW %s; DROP VIEW %s; COMMIT;"):format(first, second))
    assert.are.equal(("dropped_view:%d,dropped_view:%d"):format(ids[second], ids[first]), changes())
    first, second = ids.a > ids.b and "a" or "b", ids.a > ids.b and "b" or "a"
    db:exec(("BEGIN; DROP SCHEMA %s; DROP SCHEMA %s; COMMIT;"):format(first, second))
    assert.are.equal(("dropped_schema:%d,dropped_schema:%d"):format(ids[second], ids[first]), changes())
    db:close()
  end)
end)
