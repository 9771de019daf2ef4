-- Nested column types (STRUCT, LIST, MAP) through CREATE TABLE and ADD
-- COLUMN: db:exec and the verbs (moraine_tx_create_table / add_column /
-- add_field with a nested moraine_column_def.type), issue 16.
--
-- No fixture holds a nested column (tests/fixtures/ducklake/**: no
-- ducklake_column row has parent_column set), so the expected rows are the
-- ones DuckLake's source writes (duckdb/ducklake):
--   * DuckLakeFieldId::FieldIdFromType (src/storage/ducklake_field_data.cpp):
--     a column takes the next column id, then its children, depth first: a
--     STRUCT's fields in order, a LIST's child "element", a MAP's "key" and
--     "value"; a default on a nested type is refused ("Default value for
--     STRUCT type not supported", LIST, MAP). CREATE TABLE numbers from 1
--     (DuckLakeFieldData::FromColumns), ADD COLUMN from the table's next
--     column id (AddColumn, RequireNextColumnId: the largest ever + 1).
--   * DuckLakeTableEntry::ConvertColumn (src/storage/ducklake_table_entry.cpp),
--     which CREATE TABLE (GetTableColumns) and ADD COLUMN (GetAddColumnInfo)
--     write: nulls_allowed true (false for a top-level NOT NULL column,
--     GetTableColumns), the type as DuckLakeTypes::ToString spells it
--     ("struct", "list", "map"; src/common/ducklake_types.cpp); a nested row
--     gets no ExtractDefaultValue, so ColumnToSQLRecursive
--     (src/storage/ducklake_metadata_manager.cpp) writes initial_default
--     NULL, default_value 'NULL' and default_value_type '' (an empty
--     string); a non-nested child gets ExtractDefaultValue without a
--     default: NULL, 'NULL', 'literal'. column_order = column_id,
--     parent_column the enclosing row's column_id.
--   * AddNewColumns (ducklake_table_entry.cpp), which ADD COLUMN s.f writes:
--     ExtractDefaultValue for every row of the new field, nested or not
--     ('literal'), nulls_allowed left false.
--   * DuckLakeTypes::ToString refuses a STRUCT without fields and an ARRAY
--     ("Failed to convert DuckDB type to DuckLake - unsupported type ...");
--     DuckDB's parser (Transformer::TransformTypeName) refuses two fields
--     whose names differ only in case ("Duplicate struct entry name"), a MAP
--     without exactly two types and a stand-alone LIST.
local moraine = require "moraine"
local support = require "support"

local N = moraine.null
local expect_err = support.expect_err

local rows_of = support.rows_of

-- every version of every column row: "id|begin|end|table|order|name|type|
-- initial_default|default_value|nulls_allowed|parent|default_value_type|dialect",
-- SQL NULL as "null" (so the string 'NULL' reads "NULL")
local function shapes(db)
  local cols = rows_of(db, "ducklake_column", { at = moraine.ALL })
  table.sort(cols, function(a, b)
    if a.table_id ~= b.table_id then return a.table_id < b.table_id end
    if a.column_id ~= b.column_id then return a.column_id < b.column_id end
    return a.begin_snapshot < b.begin_snapshot
  end)
  local out = {}
  for i, r in ipairs(cols) do
    local function v(x) if x == N or x == nil then return "null" end return tostring(x) end
    out[i] = table.concat({ v(r.column_id), v(r.begin_snapshot), v(r.end_snapshot), v(r.table_id), v(r.column_order),
      v(r.column_name), v(r.column_type), v(r.initial_default), v(r.default_value), v(r.nulls_allowed),
      v(r.parent_column), v(r.default_value_type), v(r.default_value_dialect) }, "|")
  end
  return out
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

describe("nested column types", function()
  local dir, db

  before_each(function()
    dir = support.tmpdir("nested_types")
    db = moraine.open(dir, { no_sync = true })
    db:init("data/")
  end)

  after_each(function()
    if db then db:close() end
    db = nil
    support.cleanup()
  end)

  -- the issue's statement: its rows by the rules above
  local ISSUE = "CREATE TABLE t(s STRUCT(a INTEGER, b VARCHAR), l INTEGER[], m MAP(VARCHAR, INTEGER))"
  local ISSUE_ROWS = {
    "1|1|null|1|1|s|struct|null|NULL|true|null||duckdb",
    "2|1|null|1|2|a|int32|null|NULL|true|1|literal|duckdb",
    "3|1|null|1|3|b|varchar|null|NULL|true|1|literal|duckdb",
    "4|1|null|1|4|l|list|null|NULL|true|null||duckdb",
    "5|1|null|1|5|element|int32|null|NULL|true|4|literal|duckdb",
    "6|1|null|1|6|m|map|null|NULL|true|null||duckdb",
    "7|1|null|1|7|key|varchar|null|NULL|true|6|literal|duckdb",
    "8|1|null|1|8|value|int32|null|NULL|true|6|literal|duckdb",
  }

  it("CREATE TABLE with STRUCT, LIST and MAP columns: a row per node, ids depth first", function()
    assert.are.equal(1, db:exec(ISSUE))
    assert.are.same(ISSUE_ROWS, shapes(db))
    local s = newest(db)
    assert.are.equal(1, s.schema_version)
    assert.are.equal(2, s.next_catalog_id) -- the table's id only: child rows take no catalog id
    assert.are.equal('created_table:"main"."t"', changes(db, 1))
    -- the model sees the nested columns: a later ADD COLUMN takes id 9
    db:exec("ALTER TABLE t ADD COLUMN z INTEGER")
    assert.are.equal("9|2|null|1|9|z|int32|null|NULL|true|null|literal|duckdb", shapes(db)[9])
  end)

  it("the verbs write what db:exec writes (moraine_column_def.type in DuckLake's spelling)", function()
    db:transaction(function(tx)
      tx:create_table("t", {
        { name = "s", type = "struct(a int32, b varchar)" },
        { name = "l", type = "LIST ( int32 )" },
        { name = "m", type = 'map(varchar,int32)' },
      })
    end)
    assert.are.same(ISSUE_ROWS, shapes(db))
  end)

  it("NOT NULL on a nested column: its own row only; quoted field names, lists of lists, decimals", function()
    db:exec('CREATE TABLE t(id INTEGER, s STRUCT("Odd ""name""" DECIMAL(10,2), b INTEGER) NOT NULL, l VARCHAR[][])')
    assert.are.same({
      "1|1|null|1|1|id|int32|null|NULL|true|null|literal|duckdb",
      "2|1|null|1|2|s|struct|null|NULL|false|null||duckdb",
      '3|1|null|1|3|Odd "name"|decimal(10,2)|null|NULL|true|2|literal|duckdb',
      "4|1|null|1|4|b|int32|null|NULL|true|2|literal|duckdb",
      "5|1|null|1|5|l|list|null|NULL|true|null||duckdb",
      "6|1|null|1|6|element|list|null|NULL|true|5||duckdb", -- the inner list is a nested row too
      "7|1|null|1|7|element|varchar|null|NULL|true|6|literal|duckdb",
    }, shapes(db))
  end)

  it("ADD COLUMN of a nested type: ids from the table's largest column id ever + 1", function()
    db:exec("CREATE TABLE t(id INTEGER, x INTEGER)")
    db:exec("ALTER TABLE t DROP COLUMN x")
    assert.are.equal(3, db:exec("ALTER TABLE t ADD COLUMN m MAP(VARCHAR, STRUCT(p INTEGER, q DOUBLE))"))
    local got = shapes(db)
    assert.are.same({
      "3|3|null|1|3|m|map|null|NULL|true|null||duckdb",
      "4|3|null|1|4|key|varchar|null|NULL|true|3|literal|duckdb",
      "5|3|null|1|5|value|struct|null|NULL|true|3||duckdb",
      "6|3|null|1|6|p|int32|null|NULL|true|5|literal|duckdb",
      "7|3|null|1|7|q|float64|null|NULL|true|5|literal|duckdb",
    }, { got[3], got[4], got[5], got[6], got[7] })
    assert.are.equal(7, #got)
    assert.are.equal("altered_table:1", changes(db, 3))
    local sv = {}
    for _, r in ipairs(rows_of(db, "ducklake_schema_versions", { at = moraine.ALL })) do
      if r.begin_snapshot == 3 then sv[#sv + 1] = r.schema_version .. ":" .. r.table_id end
    end
    assert.are.same({ "3:1" }, sv)
  end)

  it("ADD COLUMN s.f of a nested type: AddNewColumns' values (literal, nulls_allowed false) for every row", function()
    db:exec("CREATE TABLE t(s STRUCT(a INTEGER))")
    assert.are.equal(2, db:exec("ALTER TABLE t ADD COLUMN s.n STRUCT(x INTEGER, y VARCHAR[])"))
    assert.are.same({
      "1|1|null|1|1|s|struct|null|NULL|true|null||duckdb",
      "2|1|null|1|2|a|int32|null|NULL|true|1|literal|duckdb",
      "3|2|null|1|3|n|struct|null|NULL|false|1|literal|duckdb",
      "4|2|null|1|4|x|int32|null|NULL|false|3|literal|duckdb",
      "5|2|null|1|5|y|list|null|NULL|false|3|literal|duckdb",
      "6|2|null|1|6|element|varchar|null|NULL|false|5|literal|duckdb",
    }, shapes(db))
    -- and a field of the new struct: the path leads through it
    db:exec("ALTER TABLE t ADD COLUMN s.n.z BIGINT DEFAULT 7")
    assert.are.equal("7|3|null|1|7|z|int64|7|7|false|3|literal|duckdb", shapes(db)[7])
  end)

  it("DROP COLUMN of a nested column ends every row under it (ColumnChangeInfo::DropField)", function()
    db:exec(ISSUE)
    assert.are.equal(2, db:exec("ALTER TABLE t DROP COLUMN m"))
    assert.are.equal(3, db:exec("ALTER TABLE t DROP COLUMN l"))
    local want = {}
    for i, r in ipairs(ISSUE_ROWS) do
      if i >= 6 then want[i] = r:gsub("^(%d+)|1|null|", "%1|1|2|")
      elseif i >= 4 then want[i] = r:gsub("^(%d+)|1|null|", "%1|1|3|")
      else want[i] = r end
    end
    assert.are.same(want, shapes(db))
    -- the dropped ids stay used: the next column is 9
    db:exec("ALTER TABLE t ADD COLUMN k BOOLEAN")
    assert.are.equal("9|4|null|1|9|k|boolean|null|NULL|true|null|literal|duckdb", shapes(db)[9])
  end)

  it("the field verbs work on a struct CREATE TABLE wrote; a list's or map's children are no struct fields", function()
    db:exec(ISSUE)
    assert.are.equal(2, db:exec("ALTER TABLE t RENAME COLUMN s.a TO z"))
    assert.are.equal(3, db:exec("ALTER TABLE t DROP COLUMN s.b"))
    assert.are.equal(4, db:exec("ALTER TABLE t ADD COLUMN s.c DATE"))
    local got = shapes(db)
    assert.are.same({
      "1|1|null|1|1|s|struct|null|NULL|true|null||duckdb",
      "2|1|2|1|2|a|int32|null|NULL|true|1|literal|duckdb",
      "2|2|null|1|2|z|int32|null|NULL|false|1||duckdb",
      "3|1|3|1|3|b|varchar|null|NULL|true|1|literal|duckdb",
    }, { got[1], got[2], got[3], got[4] })
    assert.are.equal("9|4|null|1|9|c|date|null|NULL|false|1|literal|duckdb", got[#got])
    local before = shapes(db)
    expect_err("EINVAL", "Cannot drop field 'element' from column 'l' - it's not a struct", db.exec, db,
      "ALTER TABLE t DROP COLUMN l.element")
    expect_err("EINVAL", "Cannot drop field 'key' from column 'm' - it's not a struct", db.exec, db,
      "ALTER TABLE t DROP COLUMN m.key")
    -- DuckLake's words: the type as DuckDB's LogicalType::ToString writes it
    expect_err("EINVAL", "Fields can only be added to structs - l is a INTEGER[]", db.exec, db, "ALTER TABLE t ADD COLUMN l.x INTEGER")
    expect_err("EINVAL", "Fields can only be added to structs - m is a MAP(VARCHAR, INTEGER)", db.exec, db,
      "ALTER TABLE t ADD COLUMN m.x INTEGER")
    assert.are.same(before, shapes(db))
    db:exec('ALTER TABLE t ADD COLUMN w STRUCT("my f" DECIMAL(9,3), g STRUCT(h BIGINT))[]')
    expect_err("EINVAL", 'Fields can only be added to structs - w is a STRUCT("my f" DECIMAL(9,3), g STRUCT(h BIGINT))[]', db.exec, db,
      "ALTER TABLE t ADD COLUMN w.x INTEGER")
    before = shapes(db)
    expect_err("EINVAL", "Only rename on top-level struct fields is supported currently", db.exec, db,
      "ALTER TABLE t RENAME COLUMN m.value TO v")
    assert.are.same(before, shapes(db))
  end)

  it("created and altered in one block: the table is written as it ends, its ids as they were given", function()
    assert.are.equal(1, db:exec("BEGIN; " .. ISSUE .. "; ALTER TABLE t DROP COLUMN s; ALTER TABLE t ADD COLUMN n INTEGER[]; COMMIT"))
    local want = {}
    for i = 4, 8 do want[#want + 1] = ISSUE_ROWS[i] end
    want[#want + 1] = "9|1|null|1|9|n|list|null|NULL|true|null||duckdb"
    want[#want + 1] = "10|1|null|1|10|element|int32|null|NULL|true|9|literal|duckdb"
    assert.are.same(want, shapes(db))
  end)

  describe("refusals change nothing", function()
    local function base()
      db:exec("CREATE TABLE t(id INTEGER, s STRUCT(a INTEGER))")
      return shapes(db), newest(db).snapshot_id
    end

    it("db:exec: types DuckDB or DuckLake refuse, defaults on nested types, type changes to or from them", function()
      local rows, snap = base()
      local function refused(needle, sql)
        expect_err("EINVAL", needle, db.exec, db, sql)
        assert.are.same(rows, shapes(db))
        assert.are.equal(snap, newest(db).snapshot_id)
      end
      refused("Failed to convert DuckDB type to DuckLake - unsupported type STRUCT()", "CREATE TABLE u(s STRUCT())")
      refused('Duplicate struct entry name "A"', "CREATE TABLE u(s STRUCT(a INTEGER, A VARCHAR))")
      refused('Duplicate struct entry name "x"', "ALTER TABLE t ADD COLUMN q MAP(INTEGER, STRUCT(x INTEGER, x INTEGER))")
      refused("LIST is not valid as a stand-alone type", "CREATE TABLE u(l LIST(INTEGER))")
      refused("Failed to convert DuckDB type to DuckLake - unsupported type INTEGER[3]", "CREATE TABLE u(a INTEGER[3])")
      refused("Map type needs exactly two entries, key and value type", "CREATE TABLE u(m MAP(INTEGER))")
      refused("Map type needs exactly two entries, key and value type", "CREATE TABLE u(m MAP(INTEGER, INTEGER, INTEGER))")
      refused("Struct needs a name and entries", "CREATE TABLE u(s STRUCT)")
      refused("moraine does not map the type FOO", "CREATE TABLE u(s STRUCT(a FOO))")
      refused("Default value for LIST type not supported", "ALTER TABLE t ADD COLUMN l INTEGER[] DEFAULT NULL")
      refused("Default value for STRUCT type not supported", "CREATE TABLE u(s STRUCT(a INTEGER) DEFAULT NULL)")
      refused("Default value for MAP type not supported", "ALTER TABLE t ADD COLUMN s.m MAP(INTEGER, INTEGER) DEFAULT NULL")
      refused("only between non-nested types", "ALTER TABLE t ALTER COLUMN s TYPE INTEGER")
      refused("only between non-nested types", "ALTER TABLE t ALTER COLUMN id TYPE INTEGER[]")
      refused("only between non-nested types", "ALTER TABLE t ALTER COLUMN id SET DATA TYPE STRUCT(a INTEGER)")
      refused("100 levels", "CREATE TABLE u(a INTEGER" .. string.rep("[]", 150) .. ")")
      refused("100 levels", "CREATE TABLE u(a " .. string.rep("STRUCT(a ", 150) .. "INTEGER" .. string.rep(")", 150) .. ")")
    end)

    it("the verbs: nested type texts that do not read, or that DuckLake refuses", function()
      local rows, snap = base()
      local function refused(needle, ty, verb)
        expect_err("EINVAL", needle, db.transaction, db, function(tx)
          if verb == "add_column" then tx:add_column("t", { name = "x", type = ty })
          elseif verb == "add_field" then tx:add_field("t", "s", { name = "x", type = ty })
          else tx:create_table("u", { { name = "x", type = ty } }) end
        end)
        assert.are.same(rows, shapes(db))
        assert.are.equal(snap, newest(db).snapshot_id)
      end
      for _, verb in ipairs({ "create_table", "add_column", "add_field" }) do
        refused("unsupported type STRUCT()", "struct()", verb)
        refused("unsupported type STRUCT()", "STRUCT ( )", verb)
        refused('Duplicate struct entry name "A"', 'struct(a int32, "A" varchar)', verb)
        refused("struct needs its fields", "struct", verb)
        refused("list needs its element type", "list", verb)
        refused("map needs its key and value types", "map", verb)
        refused("map needs its key and value types", "map(int32)", verb)
        refused("a map has two types", "map(int32, int32, int32)", verb)
        refused("a list has one element type", "list(int32, int32)", verb)
        refused("a '(' is not closed", "struct(a int32", verb)
        refused("expected ',' or ')' after a struct field", "struct(a int32 b varchar)", verb)
        refused("expected a type", "struct(a)", verb)
        refused("expected a struct field's name", "struct(1 int32)", verb)
        refused("a struct field needs a name", 'struct("" int32)', verb)
        refused("a quoted name is not closed", 'struct("a int32)', verb)
        refused("a '(' is not closed", "list(decimal(18,2)", verb)
        refused("unexpected text after the type", "list(int32) x", verb)
        refused("100 levels", string.rep("list(", 150) .. "int32" .. string.rep(")", 150), verb)
      end
      expect_err("EINVAL", "Default value for STRUCT type not supported", db.transaction, db, function(tx)
        tx:add_column("t", { name = "x", type = "struct(a int32)", default = "1" })
      end)
      assert.are.same(rows, shapes(db))
    end)

    it("a failed verb leaves the transaction usable, its model without the refused rows", function()
      base()
      db:transaction(function(tx)
        assert.is_false(pcall(tx.add_column, tx, "t", { name = "x", type = "struct(a int32, b)" }))
        tx:add_column("t", { name = "x", type = "list(int32)" })
      end)
      local got = shapes(db)
      assert.are.same({ "4|2|null|1|4|x|list|null|NULL|true|null||duckdb", "5|2|null|1|5|element|int32|null|NULL|true|4|literal|duckdb" },
        { got[4], got[5] })
      assert.are.equal(5, #got)
    end)
  end)
end)
