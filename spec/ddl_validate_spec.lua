-- DDL that DuckDB or DuckLake refuses is refused by moraine too, with their
-- words, and the store is left as it was; what they accept moraine writes as
-- they do. Through db:exec (moraine.sql) and, where a verb takes the same
-- input, through the verbs (tx:alter_column, tx:create_table, ...).
--
-- Where the expected answers come from (duckdb/ducklake and duckdb/duckdb,
-- August 2026, the versions the corpus was made with):
--   * ALTER COLUMN ... TYPE: DuckLakeTableEntry::TypePromotion
--     (src/storage/ducklake_table_entry.cpp) allows only "widening type
--     promotions": TypePromotionIsAllowed asks DuckDB's
--     LogicalType::DefaultTryGetMaxLogicalTypeUnchecked for the max of the
--     old and the new type and wants the new type; the same type changes
--     nothing. The cases are DuckLake's test/sql/alter/promote_type_all.test
--     and promote_type.test, plus ones that follow from DuckDB's rules
--     (src/common/types.cpp, src/function/cast_rules.cpp,
--     src/function/combine_types_rules.cpp).
--   * DECIMAL(w, s): DuckDB's BindDecimalType (src/catalog/default/default_types.cpp).
--   * VARCHAR(n): DuckDB's BindVarcharType ignores the length: VARCHAR, which
--     DuckLake stores as varchar (DuckLakeTypes::ToString).
--   * ENUM, UNION: DuckLakeTypes::ToString has no name for them ("Failed to
--     convert DuckDB type to DuckLake - unsupported type ...").
--   * CREATE OR REPLACE TABLE / VIEW: DuckLakeSchemaEntry::HandleCreateConflict
--     (src/storage/ducklake_schema_entry.cpp) drops the existing entry
--     through DropEntry, the function DROP TABLE / DROP VIEW runs, then
--     creates the new one in the same transaction; an entry of the other kind
--     is refused ("Existing object v1 is of type View, trying to replace with
--     type Table", DuckLake's test/sql/view/ducklake_view_table_conflict.test).
local moraine = require "moraine"
local support = require "support"

local expect_err = support.expect_err

local function open_db(tag)
  local db = moraine.open(support.tmpdir(tag), { no_sync = true })
  db:init()
  return db
end

-- @fn must fail with @code and every needle; the store must be as before
local function refused(db, code, needles, fn, ...)
  local before = support.dump(db)
  local e = expect_err(code, needles, fn, ...)
  assert.are.equal(before, support.dump(db))
  return e
end

local function live_columns(db)
  local out = {}
  for _, r in ipairs(db:scan("ducklake_column")) do out[r.row.column_name] = r.row.column_type end
  return out
end

local function column_versions(db)
  return #db:scan("ducklake_column", { at = moraine.ALL })
end

describe("ALTER COLUMN ... TYPE: DuckLake's widening type promotions only", function()
  after_each(support.cleanup)

  local function widening(from, to) return "Cannot change type of column c from " .. from .. " to " .. to
    .. " - only widening type promotions are allowed" end

  -- DuckLake's test/sql/alter/promote_type_all.test, statement by statement
  it("DuckLake's promote_type_all.test", function()
    local db = open_db("promote_all")
    local function ok(t, ty) db:exec("ALTER TABLE " .. t .. " ALTER COLUMN c SET DATA TYPE " .. ty) end
    local function no(t, ty, from, to)
      refused(db, "EINVAL", widening(from, to), db.exec, db, "ALTER TABLE " .. t .. " ALTER COLUMN c SET DATA TYPE " .. ty)
    end
    db:exec("CREATE TABLE ti(c TINYINT)")
    ok("ti", "SMALLINT") ok("ti", "INTEGER") ok("ti", "BIGINT") ok("ti", "HUGEINT")
    no("ti", "BIGINT", "HUGEINT", "BIGINT")
    no("ti", "INTEGER", "HUGEINT", "INTEGER")
    db:exec("CREATE TABLE ti_f(c TINYINT)")
    ok("ti_f", "FLOAT") ok("ti_f", "DOUBLE")
    no("ti_f", "FLOAT", "DOUBLE", "FLOAT")
    db:exec("CREATE TABLE uti(c UTINYINT)")
    ok("uti", "USMALLINT") ok("uti", "UINTEGER") ok("uti", "UBIGINT")
    no("uti", "UINTEGER", "UBIGINT", "UINTEGER")
    db:exec("CREATE TABLE uti2(c UTINYINT)")
    ok("uti2", "SMALLINT")
    db:exec("CREATE TABLE fl(c FLOAT)")
    ok("fl", "DOUBLE")
    no("fl", "FLOAT", "DOUBLE", "FLOAT")
    db:exec("CREATE TABLE ts(c TIMESTAMP)")
    ok("ts", "TIMESTAMPTZ")
    no("ts", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP")
    db:exec("CREATE TABLE rej(c INTEGER)")
    no("rej", "VARCHAR", "INTEGER", "VARCHAR")
    no("rej", "BOOLEAN", "INTEGER", "BOOLEAN")
    db:exec("CREATE TABLE same(c INTEGER)")
    ok("same", "INTEGER")
    -- the stored types
    local types = {}
    for _, r in ipairs(db:scan("ducklake_column")) do
      for _, t in ipairs(db:scan("ducklake_table")) do
        if t.row.table_id == r.row.table_id then types[t.row.table_name] = r.row.column_type end
      end
    end
    assert.are.same({ ti = "int128", ti_f = "float64", uti = "uint64", uti2 = "int16", fl = "float64", ts = "timestamptz",
                      rej = "int32", same = "int32" }, types)
    db:close()
  end)

  it("the tester's case: INTEGER -> BIGINT, then -> SMALLINT and VARCHAR -> INTEGER refused (promote_type.test's 'only widening')", function()
    local db = open_db("tester")
    db:exec("CREATE TABLE t(id INTEGER, name VARCHAR)")
    db:exec("ALTER TABLE t ALTER COLUMN id TYPE BIGINT")
    refused(db, "EINVAL", "Cannot change type of column id from BIGINT to SMALLINT - only widening type promotions are allowed",
      db.exec, db, "ALTER TABLE t ALTER COLUMN id TYPE SMALLINT")
    refused(db, "EINVAL", "Cannot change type of column name from VARCHAR to INTEGER - only widening type promotions are allowed",
      db.exec, db, "ALTER TABLE t ALTER COLUMN name TYPE INTEGER")
    -- a block with a refused change commits nothing
    refused(db, "EINVAL", "from BIGINT to INTEGER", db.exec, db,
      "BEGIN; ALTER TABLE t ALTER COLUMN name SET DEFAULT 'x'; ALTER TABLE t ALTER COLUMN id TYPE INTEGER; COMMIT")
    -- the verb path refuses it the same way
    refused(db, "EINVAL", "Cannot change type of column id from BIGINT to SMALLINT - only widening type promotions are allowed",
      db.transaction, db, function(tx) tx:alter_column("t", "id", { type = "int16" }) end)
    refused(db, "EINVAL", "Cannot change type of column name from VARCHAR to INTEGER", db.transaction, db,
      function(tx) tx:alter_column("t", "name", { type = "int32" }) end)
    assert.are.same({ id = "int64", name = "varchar" }, live_columns(db))
    db:close()
  end)

  -- DuckDB's rules (DefaultTryGetMaxLogicalTypeUnchecked) beyond DuckLake's tests
  it("follows DuckDB's max-type rules: decimals, booleans, dates and timestamps, signed and unsigned", function()
    local db = open_db("rules")
    local cases = {
      { "DECIMAL(10,2)", "DECIMAL(12,2)", "decimal(12,2)" },
      { "DECIMAL(10,2)", "DECIMAL(12,1)", nil, "DECIMAL(10,2)", "DECIMAL(12,1)" },
      { "DECIMAL(10,2)", "DOUBLE", "float64" },
      { "DOUBLE", "DECIMAL(38,10)", nil, "DOUBLE", "DECIMAL(38,10)" },
      { "INTEGER", "DECIMAL(10,0)", "decimal(10,0)" },
      { "INTEGER", "DECIMAL(12,3)", nil, "INTEGER", "DECIMAL(12,3)" },
      { "BOOLEAN", "INTEGER", "int32" },
      { "DATE", "TIMESTAMP", "timestamp" },
      { "TIMESTAMP", "DATE", nil, "TIMESTAMP", "DATE" },
      { "TIMESTAMP_S", "TIMESTAMP_MS", "timestamp_ms" },
      { "UINTEGER", "INTEGER", nil, "UINTEGER", "INTEGER" },
      { "UINTEGER", "BIGINT", "int64" },
      { "UUID", "VARCHAR", nil, "UUID", "VARCHAR" },
      { "TIME", "TIME WITH TIME ZONE", nil, "TIME", "TIME WITH TIME ZONE" },
    }
    for i, c in ipairs(cases) do
      local t = "r" .. i
      db:exec("CREATE TABLE " .. t .. "(c " .. c[1] .. ")")
      local q = "ALTER TABLE " .. t .. " ALTER COLUMN c TYPE " .. c[2]
      if c[3] then
        db:exec(q)
        local got
        for _, r in ipairs(db:scan("ducklake_column")) do
          for _, tr in ipairs(db:scan("ducklake_table")) do
            if tr.row.table_name == t and tr.row.table_id == r.row.table_id then got = r.row.column_type end
          end
        end
        assert.are.equal(c[3], got, q)
      else
        refused(db, "EINVAL", widening(c[4], c[5]), db.exec, db, q)
      end
    end
    db:close()
  end)

  it("the same type again: the table is altered (a snapshot, altered_table), no column row is written", function()
    local db = open_db("same")
    db:exec("CREATE TABLE t(c INTEGER, d DECIMAL(18,2))")
    local versions, snap = column_versions(db), db:last_snapshot()
    db:exec("ALTER TABLE t ALTER COLUMN c TYPE INT")
    db:exec("ALTER TABLE t ALTER COLUMN d SET DATA TYPE NUMERIC(18,2)")
    db:transaction(function(tx) tx:alter_column("t", "c", { type = "int32" }) end)
    assert.are.equal(snap + 3, db:last_snapshot())
    assert.are.equal(versions, column_versions(db))
    local changes = db:scan("ducklake_snapshot_changes", { at = moraine.ALL })
    assert.are.equal("altered_table:1", changes[#changes].row.changes_made)
    db:close()
  end)
end)

describe("DECIMAL(w, s): DuckDB's bounds and words", function()
  after_each(support.cleanup)

  it("refuses the tester's types through db:exec with DuckDB's message and the byte of the type", function()
    local db = open_db("dec_sql")
    db:exec("CREATE TABLE t(a INTEGER, s STRUCT(x INTEGER))")
    local cases = {
      { "DECIMAL(40,2)", "DECIMAL type width must be between 1 and 38" },
      { "DECIMAL(0,0)", "DECIMAL type width must be between 1 and 38" },
      { "DECIMAL(3,5)", "DECIMAL type scale cannot be greater than width" },
      { "DECIMAL(99999999999999999999,2)", "DECIMAL type width must be between 1 and 38" },
      { "DECIMAL(-1,2)", "DECIMAL type width must be between 1 and 38" },
      { "NUMERIC(39)", "DECIMAL type width must be between 1 and 38" },
      { "DECIMAL(10,256)", "DECIMAL type scale must be between 0 and 38" },
      { "DECIMAL(10,-1)", "DECIMAL type scale must be between 0 and 38" },
      { "DECIMAL(10.5,2)", "DECIMAL type width must be an integral type" },
      { "DECIMAL(10,'2')", "DECIMAL type scale must be an integral type" },
      { "DECIMAL(10,2,1)", "DECIMAL type can take at most two type modifiers, width and scale" },
      -- DuckDB's order: each modifier's cast to UTINYINT comes before the width's range
      { "DECIMAL(40,300)", "DECIMAL type scale must be between 0 and 38" },
      { "DECIMAL(3,5)[]", "DECIMAL type scale cannot be greater than width" },
      { "STRUCT(v DECIMAL(40,2))", "DECIMAL type width must be between 1 and 38", 27 },
    }
    for _, c in ipairs(cases) do
      refused(db, "EINVAL", { c[2], "(at byte " .. (c[3] or 18) .. ")" }, db.exec, db, "CREATE TABLE u(a " .. c[1] .. ")")
      refused(db, "EINVAL", c[2], db.exec, db, "ALTER TABLE t ADD COLUMN b " .. c[1])
      refused(db, "EINVAL", c[2], db.exec, db, "ALTER TABLE t ADD COLUMN s.y " .. c[1])
      refused(db, "EINVAL", c[2], db.exec, db, "ALTER TABLE t ALTER COLUMN a TYPE " .. c[1])
    end
    db:close()
  end)

  it("takes the bounds themselves and DECIMAL(w) as DECIMAL(w,0), stored as DuckLake spells them", function()
    local db = open_db("dec_ok")
    db:exec("CREATE TABLE t(a DECIMAL(1,0), b DECIMAL(38,38), c NUMERIC(5), d DECIMAL, e DECIMAL(0018,02))")
    assert.are.same({ a = "decimal(1,0)", b = "decimal(38,38)", c = "decimal(5,0)", d = "decimal(18,3)", e = "decimal(18,2)" },
      live_columns(db))
    db:close()
  end)

  it("the verbs refuse the same types (create_table, add_column, add_field, alter_column), nested too", function()
    local db = open_db("dec_verbs")
    db:transaction(function(tx) tx:create_table("t", { { name = "a", type = "int32" }, { name = "s", type = "struct(x int32)" } }) end)
    local cases = {
      { "decimal(40,2)", "DECIMAL type width must be between 1 and 38" },
      { "decimal(0,0)", "DECIMAL type width must be between 1 and 38" },
      { "decimal(3,5)", "DECIMAL type scale cannot be greater than width" },
      { "decimal(99999999999999999999,2)", "DECIMAL type width must be between 1 and 38" },
      { "list(decimal(3,5))", "DECIMAL type scale cannot be greater than width" },
      { "DECIMAL(18,2)", "is not spelled as DuckLake writes it: decimal(18,2)" },
      { "decimal(18, 2)", "is not DuckLake's decimal(width,scale)" },
    }
    for _, c in ipairs(cases) do
      local col = { name = "b", type = c[1] }
      refused(db, "EINVAL", c[2], db.transaction, db, function(tx) tx:create_table("u", { col }) end)
      refused(db, "EINVAL", c[2], db.transaction, db, function(tx) tx:add_column("t", col) end)
      refused(db, "EINVAL", c[2], db.transaction, db, function(tx) tx:add_field("t", { "s" }, col) end)
      if not c[1]:find("^list") then
        refused(db, "EINVAL", c[2], db.transaction, db, function(tx) tx:alter_column("t", "a", { type = c[1] }) end)
      end
    end
    db:close()
  end)
end)

describe("types DuckDB reads that moraine maps or refuses clearly", function()
  after_each(support.cleanup)

  it("VARCHAR(n), CHAR(n), TEXT(n): DuckDB ignores the length; DuckLake stores varchar", function()
    local db = open_db("varchar_n")
    db:exec("CREATE TABLE t(a VARCHAR(10), b CHAR(3), c TEXT(5)[], d VARCHAR)")
    assert.are.same({ a = "varchar", b = "varchar", c = "list", element = "varchar", d = "varchar" }, live_columns(db))
    db:exec("ALTER TABLE t ALTER COLUMN d TYPE VARCHAR(20)") -- the same type: nothing changes
    refused(db, "EINVAL", { "VARCHAR(n) with one integer length", "at byte 18" }, db.exec, db, "CREATE TABLE u(a VARCHAR(10, 2))")
    db:close()
  end)

  it("ENUM and UNION: DuckLake stores neither (DuckLakeTypes::ToString's words, the byte of the type)", function()
    local db = open_db("enum")
    refused(db, "EINVAL", { "Failed to convert DuckDB type to DuckLake - unsupported type ENUM", "(at byte 18)" },
      db.exec, db, "CREATE TABLE u(a ENUM('x','y'))")
    refused(db, "EINVAL", { "Failed to convert DuckDB type to DuckLake - unsupported type UNION", "(at byte 18)" },
      db.exec, db, "CREATE TABLE u(a UNION(n INTEGER, s VARCHAR))")
    refused(db, "EINVAL", "unsupported type ENUM", db.exec, db, "CREATE TABLE u(a STRUCT(e ENUM('x')))")
    db:close()
  end)

  it("SORTED BY / PARTITIONED BY: CASE, IS NULL, BETWEEN, IN, NOT, COLLATE, AND named as not supported, with their byte", function()
    local db = open_db("sortexpr")
    db:exec("CREATE TABLE t(a INTEGER, b BOOLEAN, v VARCHAR)")
    local cases = {
      { "CASE WHEN a > 0 THEN 1 ELSE 0 END", "CASE", 30 },
      { "a IS NULL", "IS", 32 },
      { "(a IS NOT NULL) DESC", "IS", 33 },
      { "a BETWEEN 1 AND 2", "BETWEEN", 32 },
      { "a IN (1, 2)", "IN", 32 },
      { "NOT b", "NOT", 30 },
      { "v COLLATE nocase", "COLLATE", 32 },
      { "a > 0 AND b", "AND", 36 },
      { "coalesce(a IS NULL, b)", "IS", 41 },
    }
    for _, c in ipairs(cases) do
      refused(db, "EINVAL", { c[2] .. " is not supported in moraine's SQL expressions", "(at byte " .. c[3] .. ")" },
        db.exec, db, "ALTER TABLE t SET SORTED BY (" .. c[1] .. ")")
    end
    refused(db, "EINVAL", "IS is not supported", db.exec, db, "ALTER TABLE t SET PARTITIONED BY (a IS NULL)")
    -- what moraine reads still works
    db:exec("ALTER TABLE t SET SORTED BY (CAST(a AS VARCHAR) DESC NULLS FIRST, (a * 2) - 1)")
    db:close()
  end)
end)

describe("CREATE OR REPLACE TABLE / VIEW: DuckLake's drop and create in one transaction", function()
  after_each(support.cleanup)

  -- the rows of a catalog with the parts that differ between runs left out
  local function shape(db)
    local out = {}
    for _, rel in ipairs({ "ducklake_table", "ducklake_view", "ducklake_column", "ducklake_snapshot_changes" }) do
      for _, r in ipairs(db:scan(rel, { at = moraine.ALL })) do
        local row = {}
        for k, v in pairs(r.row) do
          if not (k:find("uuid") or k == "path") then row[#row + 1] = k .. "=" .. tostring(v) end
        end
        table.sort(row)
        out[#out + 1] = rel .. " " .. table.concat(row, " ")
      end
    end
    table.sort(out)
    return out
  end

  it("writes what DROP and CREATE in one BEGIN ... COMMIT write (ids, ended rows, changes)", function()
    local a, b = open_db("replace_a"), open_db("replace_b")
    for _, db in ipairs({ a, b }) do
      db:exec("CREATE TABLE t(x INTEGER, y VARCHAR); COMMENT ON TABLE t IS 'old'; CREATE VIEW v AS SELECT 1")
    end
    a:exec("CREATE OR REPLACE TABLE t(z BIGINT)")
    b:exec("BEGIN; DROP TABLE t; CREATE TABLE t(z BIGINT); COMMIT")
    a:exec("CREATE OR REPLACE VIEW v AS SELECT 2")
    b:exec("BEGIN; DROP VIEW v; CREATE VIEW v AS SELECT 2; COMMIT")
    -- on a name nothing has: a plain CREATE
    a:exec("CREATE OR REPLACE TABLE n(a INTEGER)")
    b:exec("CREATE TABLE n(a INTEGER)")
    -- a table created earlier in the same block
    a:exec("BEGIN; CREATE TABLE w(a INTEGER); CREATE OR REPLACE TABLE w(b INTEGER); COMMIT")
    b:exec("BEGIN; CREATE TABLE w(a INTEGER); DROP TABLE w; CREATE TABLE w(b INTEGER); COMMIT")
    assert.are.same(shape(b), shape(a))
    local changes = a:scan("ducklake_snapshot_changes", { at = moraine.ALL })
    assert.are.equal(4, changes[5].row.snapshot_id)
    assert.are.equal('dropped_table:1,created_table:"main"."t"', changes[5].row.changes_made)
    a:close()
    b:close()
  end)

  it("refuses a table in place of a view and the reverse, and OR REPLACE with IF NOT EXISTS or on a schema", function()
    local db = open_db("replace_refused")
    db:exec("CREATE TABLE t(x INTEGER); CREATE VIEW v1 AS SELECT 42")
    -- DuckLake's test/sql/view/ducklake_view_table_conflict.test
    refused(db, "EEXIST", "Existing object v1 is of type View, trying to replace with type Table", db.exec, db,
      "CREATE OR REPLACE TABLE v1(i INTEGER)")
    refused(db, "EEXIST", "Existing object t is of type Table, trying to replace with type View", db.exec, db,
      "CREATE OR REPLACE VIEW t AS SELECT 1")
    refused(db, "EINVAL", "Existing object v1 is of type View, trying to drop type Table", db.exec, db, "DROP TABLE IF EXISTS v1")
    refused(db, "EINVAL", "Existing object t is of type Table, trying to drop type View", db.exec, db, "DROP VIEW t")
    -- HandleCreateConflict names the existing entry's kind
    refused(db, "EEXIST", 'View with name "v1" already exists!', db.exec, db, "CREATE TABLE v1(i INTEGER)")
    refused(db, "EEXIST", 'Table with name "t" already exists!', db.exec, db, "CREATE VIEW t AS SELECT 1")
    refused(db, "EINVAL", "Cannot specify both OR REPLACE and IF NOT EXISTS", db.exec, db,
      "CREATE OR REPLACE TABLE IF NOT EXISTS t(a INTEGER)")
    refused(db, "EINVAL", "CREATE OR REPLACE SCHEMA is not supported", db.exec, db, "CREATE OR REPLACE SCHEMA s")
    -- a refused OR REPLACE in a block takes back the whole block
    refused(db, "EINVAL", "DECIMAL type width", db.exec, db, "BEGIN; CREATE TABLE z(a INTEGER); CREATE OR REPLACE TABLE t(a DECIMAL(40,2)); COMMIT")
    db:close()
  end)
end)
