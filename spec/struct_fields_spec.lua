-- STRUCT fields through the verbs and db:exec: ALTER TABLE ADD COLUMN s.f,
-- RENAME COLUMN s.f TO g, DROP COLUMN s.f (moraine_tx_add_field /
-- rename_field / drop_field, issue 16 item 6).
--
-- No fixture holds a STRUCT column (tests/fixtures/ducklake has none), so the
-- expected rows are DuckLake's as its source writes them (duckdb/ducklake).
-- The struct is created by db:exec (ADD COLUMN s STRUCT(...)), whose rows
-- spec/nested_types_spec.lua checks. The field verbs:
--   * DuckLakeTableEntry::AlterTable(AddFieldInfo / RenameFieldInfo /
--     RemoveFieldInfo), AddNewColumns, RenameField, RemoveColumns
--     (src/storage/ducklake_table_entry.cpp): a CHANGE_COLUMN_TYPE change
--     whose ColumnChangeInfo lists new_fields and dropped_fields;
--   * HandleChangedFields (src/storage/ducklake_transaction_state.cpp): the
--     dropped fields' rows are ended, the new ones inserted; the struct's own
--     row is not touched, its column_type stays "struct"
--     (DuckLakeTypes::ToString, src/common/ducklake_types.cpp);
--   * ColumnToSQLRecursive (src/storage/ducklake_metadata_manager.cpp):
--     column_order = column_id, parent_column the struct's column_id,
--     nulls_allowed from DuckLakeColumnInfo (false unless set: AddNewColumns
--     and RenameField never set it), default_value_type as given ('' for a
--     renamed field, RenameField leaves it empty);
--   * GetTransactionTableChanges (src/storage/ducklake_transaction.cpp):
--     CHANGE_COLUMN_TYPE is altered_table:T with a schema_versions row.
local moraine = require "moraine"
local support = require "support"

local N = moraine.null
local expect_err = support.expect_err

local rows_of = support.rows_of

-- every version of the table's columns, ordered by column_id then begin_snapshot
local function all_columns(db)
  local cols = rows_of(db, "ducklake_column", { at = moraine.ALL })
  table.sort(cols, function(a, b)
    if a.column_id ~= b.column_id then return a.column_id < b.column_id end
    return a.begin_snapshot < b.begin_snapshot
  end)
  return cols
end

local function newest(db)
  local s = rows_of(db, "ducklake_snapshot")
  table.sort(s, function(a, b) return a.snapshot_id < b.snapshot_id end)
  return s[#s]
end

local function changes(db, id)
  for _, r in ipairs(rows_of(db, "ducklake_snapshot_changes")) do
    if r.snapshot_id == id then return r.changes_made end
  end
end

local function schema_versions(db)
  local out = {}
  for _, r in ipairs(rows_of(db, "ducklake_schema_versions", { at = moraine.ALL })) do
    out[#out + 1] = r.begin_snapshot .. ":" .. r.schema_version .. ":" .. r.table_id
  end
  table.sort(out)
  return out
end

-- the comparable part of a ducklake_column row
local function shape(r)
  local function v(x) if x == N or x == nil then return "NULL" end return tostring(x) end
  return table.concat({ v(r.column_id), v(r.begin_snapshot), v(r.end_snapshot), v(r.table_id), v(r.column_order),
    v(r.column_name), v(r.column_type), v(r.initial_default), v(r.default_value), v(r.nulls_allowed),
    v(r.parent_column), v(r.default_value_type), v(r.default_value_dialect) }, "|")
end

local function shapes(db)
  local out = {}
  for i, r in ipairs(all_columns(db)) do out[i] = shape(r) end
  return out
end

describe("STRUCT fields", function()
  local dir, db

  -- t (table_id 1): `CREATE TABLE t (id BIGINT)` (snapshot 1), then `ALTER
  -- TABLE t ADD COLUMN s STRUCT(a INTEGER, b STRUCT(c VARCHAR))` (snapshot
  -- 2), both through db:exec. DuckLake's rows for the struct (see
  -- spec/nested_types_spec.lua for the rules): ids depth first from the
  -- table's next column id (FieldIdFromType): s 2, a 3, b 4, c 5;
  -- column_order = column_id; parent_column the enclosing struct's id;
  -- ConvertColumn gives every row nulls_allowed true and a struct row no
  -- default (default_value_type '').
  before_each(function()
    dir = support.tmpdir("struct_fields")
    db = moraine.open(dir, { no_sync = true })
    db:init("data/")
    db:exec("CREATE TABLE t (id BIGINT)")
    assert.are.equal(2, db:exec("ALTER TABLE t ADD COLUMN s STRUCT(a INTEGER, b STRUCT(c VARCHAR))"))
  end)

  after_each(function()
    if db then db:close() end
    db = nil
    support.cleanup()
  end)

  local BASE = {
    "1|1|NULL|1|1|id|int64|NULL|NULL|true|NULL|literal|duckdb",
    "2|2|NULL|1|2|s|struct|NULL|NULL|true|NULL||duckdb",
    "3|2|NULL|1|3|a|int32|NULL|NULL|true|2|literal|duckdb",
    "4|2|NULL|1|4|b|struct|NULL|NULL|true|2||duckdb",
    "5|2|NULL|1|5|c|varchar|NULL|NULL|true|4|literal|duckdb",
  }

  -- the rows after @changes: BASE with the given rows replaced / appended
  local function expect_rows(replace, extra)
    local want = {}
    for i, r in ipairs(BASE) do want[i] = replace[i] or r end
    for _, r in ipairs(extra or {}) do want[#want + 1] = r end
    table.sort(want, function(a, b)
      local ia, ba = a:match("^(%d+)|(%d+)|")
      local ib, bb = b:match("^(%d+)|(%d+)|")
      if tonumber(ia) ~= tonumber(ib) then return tonumber(ia) < tonumber(ib) end
      return tonumber(ba) < tonumber(bb)
    end)
    assert.are.same(want, shapes(db))
  end

  local function expect_altered(snap)
    local s = newest(db)
    assert.are.equal(snap, s.snapshot_id)
    assert.are.equal(3, s.schema_version)
    assert.are.equal(2, s.next_catalog_id) -- no catalog id taken
    assert.are.equal("altered_table:1", changes(db, snap))
    assert.are.same({ "1:1:1", "2:2:1", "3:3:1" }, schema_versions(db))
  end

  it("ADD COLUMN s.f: a field row under the struct, the next column id, nulls_allowed false; the struct row untouched", function()
    assert.are.equal(3, db:exec("ALTER TABLE t ADD COLUMN s.f INTEGER"))
    -- AddNewColumns: ExtractDefaultValue without a default gives
    -- initial_default NULL, default_value 'NULL' literal
    expect_rows({}, { "6|3|NULL|1|6|f|int32|NULL|NULL|false|2|literal|duckdb" })
    expect_altered(3)
  end)

  it("ADD COLUMN s.f ... DEFAULT lit: the literal is initial_default and default_value", function()
    db:exec("ALTER TABLE t ADD COLUMN s.f VARCHAR DEFAULT 'x'")
    expect_rows({}, { "6|3|NULL|1|6|f|varchar|x|x|false|2|literal|duckdb" })
  end)

  it("ADD COLUMN s.b.d: a field of a nested struct (the path's last struct is the parent)", function()
    db:exec("ALTER TABLE t ADD COLUMN s.b.d BIGINT")
    expect_rows({}, { "6|3|NULL|1|6|d|int64|NULL|NULL|false|4|literal|duckdb" })
    expect_altered(3)
  end)

  it("RENAME COLUMN s.a TO g: the field's row ended, a new one with the same id and RenameField's defaults", function()
    assert.are.equal(3, db:exec("ALTER TABLE t RENAME COLUMN s.a TO g"))
    expect_rows({ [3] = "3|2|3|1|3|a|int32|NULL|NULL|true|2|literal|duckdb" },
      { "3|3|NULL|1|3|g|int32|NULL|NULL|false|2||duckdb" })
    expect_altered(3)
  end)

  it("RENAME COLUMN s.b TO bb: a nested struct's own fields stay as they are", function()
    db:exec("ALTER TABLE t RENAME s.b TO bb")
    expect_rows({ [4] = "4|2|3|1|4|b|struct|NULL|NULL|true|2||duckdb" },
      { "4|3|NULL|1|4|bb|struct|NULL|NULL|false|2||duckdb" })
  end)

  it("DROP COLUMN s.b: the field's row and its own fields' rows end", function()
    assert.are.equal(3, db:exec("ALTER TABLE t DROP COLUMN s.b"))
    expect_rows({ [4] = "4|2|3|1|4|b|struct|NULL|NULL|true|2||duckdb",
                  [5] = "5|2|3|1|5|c|varchar|NULL|NULL|true|4|literal|duckdb" })
    expect_altered(3)
  end)

  it("DROP COLUMN s (the struct itself) ends its fields too (ColumnChangeInfo::DropField)", function()
    db:exec("ALTER TABLE t DROP COLUMN s")
    local want = {}
    for i, r in ipairs(BASE) do want[i] = i == 1 and r or (r:gsub("^(%d+)|2|NULL|", "%1|2|3|")) end
    assert.are.same(want, shapes(db))
  end)

  it("add then rename then drop in one block: only the net rows (the added row is taken back)", function()
    assert.are.equal(3, db:exec("BEGIN; ALTER TABLE t ADD COLUMN s.f INTEGER; ALTER TABLE t RENAME COLUMN s.f TO g; COMMIT"))
    expect_rows({}, { "6|3|NULL|1|6|g|int32|NULL|NULL|false|2||duckdb" })
    db:exec("BEGIN; ALTER TABLE t ADD COLUMN s.h INTEGER; ALTER TABLE t DROP COLUMN s.h; COMMIT")
    expect_rows({}, { "6|3|NULL|1|6|g|int32|NULL|NULL|false|2||duckdb" })
  end)

  it("a field name is not a column name: ADD COLUMN a and DROP COLUMN c look at top-level columns only", function()
    db:exec("ALTER TABLE t ADD COLUMN a INTEGER")
    expect_rows({}, { "6|3|NULL|1|6|a|int32|NULL|NULL|true|NULL|literal|duckdb" })
    expect_err("ENOTFOUND", 'does not have a column with name "c"', db.exec, db, "ALTER TABLE t DROP COLUMN c")
  end)

  it("IF [NOT] EXISTS: an existing field or a missing one commits nothing", function()
    assert.is_nil(db:exec("ALTER TABLE t ADD COLUMN IF NOT EXISTS s.A INTEGER"))
    assert.is_nil(db:exec("ALTER TABLE t DROP COLUMN IF EXISTS s.zz"))
    assert.is_nil(db:exec("ALTER TABLE t DROP COLUMN IF EXISTS nope.zz"))
    assert.are.same(BASE, shapes(db))
    assert.are.equal(2, newest(db).snapshot_id)
  end)

  describe("refusals change nothing", function()
    local function refused(code, needle, sql)
      expect_err(code, needle, db.exec, db, sql)
      assert.are.same(BASE, shapes(db))
      assert.are.equal(2, newest(db).snapshot_id)
    end

    it("adding to a column that is not a struct", function()
      refused("EINVAL", "Fields can only be added to structs - id is a BIGINT", "ALTER TABLE t ADD COLUMN id.f INTEGER")
      refused("EINVAL", "Fields can only be added to structs - a is a INTEGER", "ALTER TABLE t ADD COLUMN s.a.f INTEGER")
    end)

    it("adding a field whose name is taken (names compared case-insensitively)", function()
      refused("EEXIST", 'Failed to add field - field "A" already exists in column "s"', "ALTER TABLE t ADD COLUMN s.A INTEGER")
    end)

    it("a path that does not exist", function()
      refused("ENOTFOUND", 'Column "s.q" does not exist', "ALTER TABLE t ADD COLUMN s.q.f INTEGER")
      refused("ENOTFOUND", 'Column "s.q" does not exist', "ALTER TABLE t DROP COLUMN s.q")
      refused("ENOTFOUND", 'Column "x.q" does not exist', "ALTER TABLE t RENAME COLUMN x.q TO r")
    end)

    it("renaming to a name a field of the struct has, its own included", function()
      refused("EEXIST", 'Failed to rename field "a" to "b" - field with this name already exists in column "s"',
        "ALTER TABLE t RENAME COLUMN s.a TO b")
      refused("EEXIST", 'Failed to rename field "a" to "a"', "ALTER TABLE t RENAME COLUMN s.a TO a")
    end)

    it("dropping a struct's last field (DuckLake refuses an empty STRUCT)", function()
      refused("EINVAL", "Failed to convert DuckDB type to DuckLake - unsupported type STRUCT()", "ALTER TABLE t DROP COLUMN s.b.c")
    end)

    it("the verbs: a path too short, a struct type without fields, NOT NULL", function()
      local function tx_refused(code, needle, fn)
        expect_err(code, needle, db.transaction, db, fn)
        assert.are.same(BASE, shapes(db))
      end
      tx_refused("EINVAL", "not a field", function(tx) tx:drop_field("t", { "s" }) end)
      tx_refused("EINVAL", "not a field", function(tx) tx:rename_field("t", "s", "z") end)
      tx_refused("EINVAL", "struct needs its fields", function(tx) tx:add_field("t", { "s" }, { name = "n", type = "struct" }) end)
      tx_refused("EINVAL", "NOT NULL", function(tx) tx:add_field("t", { "s" }, { name = "n", type = "int32", not_null = true }) end)
      tx_refused("EINVAL", "path", function(tx) tx:add_field("t", 7, { name = "n", type = "int32" }) end)
    end)
  end)

  it("the Lua verbs write what db:exec writes", function()
    db:transaction(function(tx)
      tx:add_field("t", { "s", "b" }, { name = "d", type = "int64" })
      tx:rename_field("t", { "s", "a" }, "g")
    end)
    expect_rows({ [3] = "3|2|3|1|3|a|int32|NULL|NULL|true|2|literal|duckdb" },
      { "3|3|NULL|1|3|g|int32|NULL|NULL|false|2||duckdb", "6|3|NULL|1|6|d|int64|NULL|NULL|false|4|literal|duckdb" })
    expect_altered(3)
  end)
end)
