--- DuckLake's DDL through db:exec (moraine.sql), each case a statement of
-- the corpus of real DuckLake runs (tests/fixtures/ducklake/corpus) with
-- DuckLake's own answer: the scenario is replayed up to the step before, the
-- step is run, and the rows of its snapshot must be DuckLake's (rows that
-- begin or end at it, its snapshot and changes rows, the children of specs
-- that begin at it), or, for a step DuckLake refused, moraine must refuse it
-- with DuckLake's message and commit nothing. Also the parts on their own:
-- identifiers (moraine.ident), expressions (moraine.expr), the parser.
local moraine = require "moraine"
local support = require "support"
local R = require "corpus_runner"
local ident = require "moraine.ident"
local expr = require "moraine.expr"
local sql = require "moraine.sql"

-- the rows of snapshot S in a set of tables; end_snapshot after S reads NULL
local CHILD_OF = { ducklake_sort_expression = { "ducklake_sort_info", "sort_id" },
                   ducklake_partition_column = { "ducklake_partition_info", "partition_id" } }
local function rows_of(tables, S)
  local out = {}
  for name, t in pairs(tables) do
    local parent = CHILD_OF[name]
    local began = {}
    if parent and tables[parent[1]] then
      for _, p in ipairs(tables[parent[1]].rows) do
        if p.begin_snapshot == S then began[p[parent[2]]] = true end
      end
    end
    for _, row in ipairs(t.rows) do
      local mine
      if name == "ducklake_snapshot" or name == "ducklake_snapshot_changes" then mine = row.snapshot_id == S
      elseif parent then mine = began[row[parent[2]]]
      elseif row.begin_snapshot ~= nil then mine = row.begin_snapshot == S or row.end_snapshot == S end
      if mine then
        local r = {}
        for k, v in pairs(row) do r[k] = v end
        if r.end_snapshot ~= nil and r.end_snapshot ~= moraine.null and r.end_snapshot > S then r.end_snapshot = moraine.null end
        out[#out + 1] = name .. " " .. R.canon(r, t.cols)
      end
    end
  end
  table.sort(out)
  return out
end

local function read_dir(db)
  local dir = support.tmpdir("export")
  db:export_ndjson(dir)
  local t = {}
  for _, name in ipairs(support.tables_of(dir)) do
    local rows, cols = moraine.read_ndjson(dir .. "/" .. name .. ".ndjson")
    t[name] = { rows = rows, cols = cols }
  end
  return t
end

local function step_of(seed, n)
  for _, st in ipairs(R.steps(seed)) do if st.step == n then return st end end
  error("no step " .. n .. " in " .. seed)
end

-- replays seed up to step n - 1, runs step n, checks it against DuckLake
local function check_step(seed, n, needle)
  local db, fx, problem = R.replay(seed, support.tmpdir(seed), n - 1)
  assert.is_nil(problem, problem)
  local st = step_of(seed, n)
  local before = db:last_snapshot()
  local ok, err = pcall(db.exec, db, st.sql)
  if st.ok then
    assert.is_true(ok, tostring(err))
    assert.are.equal(st.snapshot, db:last_snapshot())
    if st.snapshot ~= before then
      assert.are.same(rows_of(fx, st.snapshot), rows_of(read_dir(db), st.snapshot))
    end
  else
    assert.is_false(ok, "DuckLake refused: " .. tostring(st.error))
    assert.truthy(moraine.is_error(err))
    assert.truthy(tostring(st.error):find(needle, 1, true), "DuckLake's message names it: " .. tostring(st.error))
    assert.truthy(tostring(err.message):find(needle, 1, true), "moraine's message: " .. tostring(err.message))
    assert.are.equal(before, db:last_snapshot())
  end
  db:close()
end

describe("db:exec: DuckLake's DDL, each case DuckLake's own answer from the corpus", function()
  after_each(support.cleanup)

  local cases = {
    { "seed_0023", 18, "two SET SORTED BY in one transaction: only the last spec is written, the first's id stays used" },
    { "seed_0029", 31, "two SET SORTED BY: ((qty * 2) - 1), -(day4) rendered as DuckDB's ToString" },
    { "seed_0018", 28, 'RENAME COLUMN SCORE TO "a""b41" under a sort spec: the expression re-rendered with quotes' },
    { "seed_0008", 15, "SET PARTITIONED BY (..., bucket(04, \"ABC\")) stores bucket(4)" },
    { "seed_0008", 16, "RESET SORTED BY alters the table" },
    { "seed_0008", 17, "RESET SORTED BY on a table that has no sort spec still alters it" },
    { "seed_0008", 19, "ALTER COLUMN id SET DEFAULT true: the column row ended and begun with default_value 'true'" },
    { "seed_0008", 24, "COMMENT ON TABLE: a ducklake_tag row 'comment'" },
    { "seed_0015", 10, 'RENAME TO of table "My Col" (its path is its uuid)' },
    { "seed_0015", 35, "ALTER COLUMN Region TYPE BIGINT: column_type int64" },
    { "seed_0017", 2, "SET DEFAULT TIMESTAMP '...': an expression default CAST('...' AS TIMESTAMP)" },
    { "seed_0018", 2, "SET DEFAULT DATE '...' on a column created with its table: accepted, an expression default" },
    { "seed_0017", 8, "SET DEFAULT 3.25 and DROP TABLE in one block" },
    { "seed_0026", 18, "DROP DEFAULT on a column without one still writes a new column version" },
    { "seed_0029", 9, 'COMMENT ON COLUMN "day"."My Col": a ducklake_column_tag row' },
    { "seed_0029", 15, "CREATE VIEW: view_id from next_catalog_id, the query text" },
    { "seed_0029", 37, "CREATE SCHEMA Ops" },
    { "seed_0026", 33, "RENAME TO a name used before (MyCol)" },
    { "seed_0025", 9, "RENAME COLUMN on a sorted table, the column not in the sort spec: next_catalog_id + 1, no row" },
    { "seed_0019", 19, "RESET then SET PARTITIONED BY in one transaction: only the last spec is written, the first's id stays used" },
    { "seed_0011", 3, 'CREATE VIEW v1 AS SELECT * FROM "score": the query stored as DuckDB renders it (FROM score)' },
    { "seed_0005", 43, "DROP TABLE ends the table's comment (ducklake_tag)" },
    { "seed_0014", 4, "two CREATE TABLE and a SET PARTITIONED BY in one block: ids newest entry first, created_table in statement order" },
    { "seed_0003", 25, "SET PARTITIONED BY then SET SORTED BY on another table: the sort spec gets the lower id" },
    { "seed_0002", 26, "SET SORTED BY with the spec in force, every NULLS spelled out: altered_table, next_catalog_id + 1, no sort rows" },
    { "seed_0015", 34, "SET SORTED BY with the spec in force, a NULLS order left out: DuckLake writes a new spec" },
    { "seed_0022", 24, "SET PARTITIONED BY with the spec in force: no snapshot" },
    { "seed_0016", 7, "SET PARTITIONED BY (bucket(04, camelcase)) with bucket(4, camelCase) in force: no snapshot" },
    { "seed_0026", 28, 'SET PARTITIONED BY (bucket(4, "order"), EventTime) again on "qty": no snapshot' },
  }
  for _, c in ipairs(cases) do
    it(c[1] .. " step " .. c[2] .. ": " .. c[3], function() check_step(c[1], c[2]) end)
  end

  local refusals = {
    { "seed_0023", 20, 'Cannot drop column "TS" - the table is sorted by this column', "drop of a sorted-by column, names compared case-insensitively" },
    { "seed_0026", 8, "Column with name V2 already exists!", "ADD COLUMN V2 beside v2" },
    { "seed_0026", 31, 'Table with name "ORDER4" already exists!', "CREATE TABLE ORDER4 beside order4" },
    { "seed_0018", 9, "Unmatched columns were: nosuchcol", "SET SORTED BY (nosuchcol DESC)" },
    { "seed_0017", 11, "Column with name AMOUNT already exists!", "ADD COLUMN AMOUNT beside amount" },
    { "seed_0023", 37, "Bucket count must be positive", "bucket(0, ABC4)" },
    { "seed_0015", 20, "Cannot DROP NULL on column UserId - it has no NOT NULL constraint defined", "DROP NOT NULL of a nullable column" },
    { "seed_0007", 17, "Cannot SET NOT NULL on column camelCase - the column has NULL values", "SET NOT NULL where the stats say NULLs" },
    { "seed_0020", 36, "We cannot add a column with a non-literal default value", "SET DEFAULT DATE '...' on a table renamed since its column was created" },
  }
  for _, c in ipairs(refusals) do
    it(c[1] .. " step " .. c[2] .. " is refused as DuckLake refuses it: " .. c[4], function() check_step(c[1], c[2], c[3]) end)
  end

  -- the SET DEFAULT rule on the verb path itself (tx:alter_column), not only db:exec
  it("seed_0020 step 36 through tx:alter_column: an expression default on a table renamed since is refused", function()
    local db, _, problem = R.replay("seed_0020", support.tmpdir("s20"), 35)
    assert.is_nil(problem, problem)
    local before = db:last_snapshot()
    local ok, err = pcall(db.transaction, db, function(tx)
      tx:alter_column("camelcase", "camelCase", { default = "CAST('2024-02-29' AS DATE)", default_type = "expression" })
    end)
    assert.is_false(ok)
    assert.truthy(tostring(err.message):find("We cannot add a column with a non-literal default value", 1, true), tostring(err.message))
    assert.are.equal(before, db:last_snapshot())
    -- a literal default is not refused (DuckLake's rule is for expressions only)
    db:transaction(function(tx) tx:alter_column("camelcase", "camelCase", { default = "2024-02-29" }) end)
    assert.are.equal(before + 1, db:last_snapshot())
    db:close()
  end)

  it("seed_0018 step 2 through tx:alter_column: an expression default on a column created with its table is DuckLake's row", function()
    local db, fx, problem = R.replay("seed_0018", support.tmpdir("s18"), 1)
    assert.is_nil(problem, problem)
    db:transaction(function(tx)
      tx:alter_column("kind", "city4", { default = "CAST('2024-02-29' AS DATE)", default_type = "expression" })
    end)
    assert.are.equal(2, db:last_snapshot())
    assert.are.same(rows_of(fx, 2), rows_of(read_dir(db), 2))
    db:close()
  end)

  -- no corpus scenario drops a schema; the values are DuckLake's source:
  -- DuckLakeSchemaEntry::TryDropSchema (the refusal and its message),
  -- DuckLakeTransactionState::WriteSnapshotChanges (dropped_schema:ID first),
  -- DuckLakeMetadataManager::DropSchemas (the ducklake_schema row ended)
  it("DROP SCHEMA: refused while tables or views depend on it; CASCADE drops them; the schema row ended", function()
    local db = moraine.open(support.tmpdir("dropschema"), { no_sync = true })
    db:init()
    db:exec("BEGIN; CREATE SCHEMA s; CREATE TABLE s.t(a INTEGER); CREATE VIEW s.v AS SELECT 1; CREATE SCHEMA e; COMMIT")
    local before = db:last_snapshot()
    local ok, err = pcall(db.exec, db, "DROP SCHEMA s")
    assert.is_false(ok)
    assert.are.equal('Cannot drop schema "s" because there are entries that depend on it\ntable "t" depends on schema "s".\n'
      .. 'view "v" depends on schema "s".\nUse DROP...CASCADE to drop all dependents.', err.message)
    assert.are.equal(before, db:last_snapshot())
    db:exec("DROP SCHEMA e")
    db:exec("DROP SCHEMA S CASCADE")
    local t = read_dir(db)
    local changes = {}
    for _, r in ipairs(t.ducklake_snapshot_changes.rows) do changes[tonumber(r.snapshot_id)] = r.changes_made end
    local ids = {}
    for _, r in ipairs(t.ducklake_schema.rows) do ids[r.schema_name] = tostring(r.schema_id) end
    ids.t = tostring(t.ducklake_table.rows[1].table_id)
    ids.v = tostring(t.ducklake_view.rows[1].view_id)
    assert.are.equal("dropped_schema:" .. ids.e, changes[before + 1])
    assert.are.equal("dropped_schema:" .. ids.s .. ",dropped_table:" .. ids.t .. ",dropped_view:" .. ids.v, changes[before + 2])
    for _, r in ipairs(t.ducklake_schema.rows) do
      if r.schema_name == "s" then assert.are.equal(before + 2, tonumber(r.end_snapshot)) end
      if r.schema_name == "e" then assert.are.equal(before + 1, tonumber(r.end_snapshot)) end
    end
    for _, r in ipairs(t.ducklake_column.rows) do assert.are.equal(before + 2, tonumber(r.end_snapshot)) end
    assert.has_error(function() db:exec("DROP SCHEMA s") end)
    db:exec("DROP SCHEMA IF EXISTS s")
    assert.are.equal(before + 2, db:last_snapshot())
    db:close()
  end)

  it("DROP COLUMN ends the column's comment, and only that column's (DuckLake: WriteExpiredColumnTags, GH #1310)", function()
    local db = moraine.open(support.tmpdir("coltags"), { no_sync = true })
    db:init()
    db:exec("CREATE TABLE t(a INTEGER, b INTEGER)")
    db:exec("BEGIN; COMMENT ON COLUMN t.a IS 'about a'; COMMENT ON COLUMN t.b IS 'about b'; COMMENT ON TABLE t IS 'about t'; COMMIT")
    local commented = db:last_snapshot()
    db:exec("ALTER TABLE t RENAME COLUMN b TO c") -- the column lives on under another name: its comment stays
    db:exec("ALTER TABLE t DROP COLUMN a")
    local dropped = db:last_snapshot()
    local ends = {}
    for _, r in ipairs(db:scan("ducklake_column_tag", { at = moraine.ALL })) do
      ends[r.row.value] = r.row.end_snapshot
    end
    assert.are.equal(dropped, tonumber(ends["about a"]))
    assert.are.equal(moraine.null, ends["about b"])
    local tags = db:scan("ducklake_tag", { at = moraine.ALL })
    assert.are.equal(1, #tags)
    assert.are.equal(moraine.null, tags[1].row.end_snapshot)
    assert.are.equal(commented + 2, dropped)
    db:close()
  end)

  it("SET SORTED BY back to the committed spec in one transaction: the committed spec stays live, none written (DuckLake: WriteNewSortKeys compares only the final spec)", function()
    local db = moraine.open(support.tmpdir("sortfinal"), { no_sync = true })
    db:init()
    db:exec("CREATE TABLE t(a INTEGER, b INTEGER)")
    db:exec("ALTER TABLE t SET SORTED BY (a ASC NULLS LAST)")
    local function state()
      local sorts = {}
      for _, r in ipairs(db:scan("ducklake_sort_info", { at = moraine.ALL })) do
        sorts[#sorts + 1] = ("%s:%s-%s"):format(tostring(r.row.sort_id), tostring(r.row.begin_snapshot), tostring(r.row.end_snapshot))
      end
      local snaps = db:scan("ducklake_snapshot", { at = moraine.ALL })
      local last = snaps[#snaps].row
      return table.concat(sorts, " "), tonumber(last.next_catalog_id), tonumber(last.schema_version)
    end
    local sorts0, next0, sv0 = state()
    assert.are.equal("2:2-NULL", sorts0)
    -- SET then SET back: both take a catalog id, the table is altered, no sort row changes
    db:exec("BEGIN; ALTER TABLE t SET SORTED BY (b DESC NULLS FIRST); ALTER TABLE t SET SORTED BY (a ASC NULLS LAST); COMMIT")
    local sorts1, next1, sv1 = state()
    assert.are.equal(sorts0, sorts1)
    assert.are.equal(next0 + 2, next1)
    assert.are.equal(sv0 + 1, sv1)
    local changes = db:scan("ducklake_snapshot_changes", { at = moraine.ALL })
    assert.are.equal("altered_table:1", changes[#changes].row.changes_made)
    -- RESET then SET back: the same (RESET takes no id)
    db:exec("BEGIN; ALTER TABLE t RESET SORTED BY; ALTER TABLE t SET SORTED BY (a ASC NULLS LAST); COMMIT")
    local sorts2, next2 = state()
    assert.are.equal(sorts0, sorts2)
    assert.are.equal(next1 + 1, next2)
    -- back and away again: the last spec is written with the last id, the committed one ended
    db:exec("BEGIN; ALTER TABLE t SET SORTED BY (b); ALTER TABLE t SET SORTED BY (a ASC NULLS LAST); ALTER TABLE t SET SORTED BY (b DESC NULLS FIRST); COMMIT")
    local sorts3, next3 = state()
    local S = db:last_snapshot()
    assert.are.equal(("2:2-%d %d:%d-NULL"):format(S, next2 + 2, S), sorts3)
    assert.are.equal(next2 + 3, next3)
    -- a key without NULLS FIRST/LAST never equals a stored one: written anew
    db:exec("BEGIN; ALTER TABLE t SET SORTED BY (a); ALTER TABLE t SET SORTED BY (b DESC); COMMIT")
    assert.are.equal(("2:2-%d %d:%d-%d %d:%d-NULL"):format(S, next2 + 2, S, S + 1, next3 + 1, S + 1), (state()))
    assert.are.same({}, db:verify())
    db:close()
  end)

  it("column defaults: a literal is default_value and initial_default, an expression only default_value (DuckLake: FieldIdFromType, ExtractInitialValue, ExtractDefaultValue)", function()
    local db = moraine.open(support.tmpdir("defaults"), { no_sync = true })
    db:init()
    db:exec("CREATE TABLE t(a INTEGER DEFAULT 42, b TIMESTAMP DEFAULT now(), c DOUBLE DEFAULT 1.5, d DATE DEFAULT '2024-02-29', "
      .. "e VARCHAR DEFAULT NULL, f DECIMAL(18,2) DEFAULT 3.25, g BOOLEAN DEFAULT true, h VARCHAR DEFAULT 'it''s')")
    db:exec("ALTER TABLE t ADD COLUMN i BIGINT DEFAULT -9223372036854775808")
    local got = {}
    for _, r in ipairs(db:scan("ducklake_column", {})) do
      got[r.row.column_name] = { r.row.initial_default, r.row.default_value, r.row.default_value_type }
    end
    local N = moraine.null
    assert.are.same({
      a = { "42", "42", "literal" }, b = { N, "now()", "expression" }, c = { "1.5", "1.5", "literal" },
      d = { "2024-02-29", "2024-02-29", "literal" }, e = { N, "NULL", "literal" }, f = { "3.25", "3.25", "literal" },
      g = { "true", "true", "literal" }, h = { "it's", "it's", "literal" },
      i = { "-9223372036854775808", "-9223372036854775808", "literal" },
    }, got)
    -- a literal whose cast to the column's type reads otherwise, and an expression in ADD COLUMN: refused, nothing written
    local before = support.dump(db)
    for _, case in ipairs({
      { "ALTER TABLE t ADD COLUMN x DOUBLE DEFAULT 1", "EINVAL", "DEFAULT 1 of column x (float64)" },
      { "ALTER TABLE t ADD COLUMN x DECIMAL(18,2) DEFAULT 3.2", "EINVAL", "exactly 2 decimals" },
      { "ALTER TABLE t ADD COLUMN x TINYINT DEFAULT 300", "EINVAL", "in the type's range" },
      { "ALTER TABLE t ADD COLUMN x INTEGER DEFAULT 007", "EINVAL", "without leading zeros" },
      { "ALTER TABLE t ADD COLUMN x DATE DEFAULT '2023-02-29'", "EINVAL", "'YYYY-MM-DD'" },
      { "ALTER TABLE t ADD COLUMN x TIMESTAMP DEFAULT '2024-01-01'", "EINVAL", "'YYYY-MM-DD HH:MM:SS'" },
      { "CREATE TABLE u(x DOUBLE DEFAULT 1.50)", "EINVAL", "non-zero digit" },
      { "ALTER TABLE t ADD COLUMN y TIMESTAMP DEFAULT now()", "EINVAL", "non-literal default value" },
    }) do
      support.expect_err(case[2], case[3], db.exec, db, case[1])
      assert.are.equal(before, support.dump(db), case[1])
    end
    db:close()
  end)

  it("a failing statement after committed ones says what stays committed", function()
    local db = moraine.open(support.tmpdir("partial"), { no_sync = true })
    db:init()
    local e = support.expect_err("EEXIST", { 'Table with name "b5" already exists!',
      "the statements before this one were committed, up to snapshot 1" }, db.exec, db,
      "CREATE TABLE b5(a INTEGER); CREATE TABLE b5(a INTEGER)")
    assert.truthy(e)
    assert.are.equal(1, db:last_snapshot())
    -- nothing committed before it: the message is the verb's alone
    local alone = support.expect_err("EEXIST", 'Table with name "b5" already exists!', db.exec, db, "CREATE TABLE b5(a INTEGER)")
    assert.is_nil(alone.message:find("were committed", 1, true), alone.message)
    db:close()
  end)

  -- the SQL path and tx:* share the key rules (docs/verbs.md, Keys and values on the verb path);
  -- DuckLake's source: GetPartitionField, ValidateSortExpressionColumns (ducklake_table_entry.cpp)
  it("SET PARTITIONED BY / SORTED BY: what DuckLake refuses is refused with its words, nothing committed", function()
    local db = moraine.open(support.tmpdir("keys"), { no_sync = true })
    db:init()
    db:exec("CREATE TABLE t(id BIGINT, ts TIMESTAMP, name VARCHAR)")
    local keys_cases = {
      { "SET PARTITIONED BY (truncate(10, name))", 'Unsupported partition transform "truncate(10)"' },
      { "SET PARTITIONED BY (foo(ts))", 'Unsupported partition transform "foo"' },
      { "SET PARTITIONED BY (year(ts, id))", 'Unsupported partition transform "year(ts)"' },
      { "SET PARTITIONED BY (bucket(x, id))", "Bucket count must be an integer" },
      { "SET PARTITIONED BY (bucket(-3, id))", "Bucket count must be positive" },
      { "SET PARTITIONED BY (bucket(2147483648, id))", "Bucket count cannot exceed 2147483647" },
      { "SET PARTITIONED BY (year(t.ts))", "Unexpected qualified column reference" },
      { "SET PARTITIONED BY (bucket(0, nosuch))", "Bucket count must be positive" }, -- the transform first, as DuckLake
      { "SET PARTITIONED BY (bucket(4, nosuch))", 'Unexpected partition key - column "nosuch" does not exist' },
      { "SET SORTED BY (nosuch DESC, id + other, lower(nosuch))", "Unmatched columns were: nosuch, other" },
      { "SET SORTED BY (t.id)", "Unexpected qualified column reference" },
    }
    for _, c in ipairs(keys_cases) do
      local ok, err = pcall(db.exec, db, "ALTER TABLE t " .. c[1])
      assert.is_false(ok, c[1])
      assert.truthy(tostring(err.message):find(c[2], 1, true), c[1] .. ": " .. tostring(err.message))
    end
    assert.are.equal(1, db:last_snapshot())
    -- DuckLake 1.1's epoch transforms; bucket(2147483647) is the largest count
    db:exec("ALTER TABLE t SET PARTITIONED BY (epoch_day(ts), epoch_hour(ts), bucket(2147483647, id))")
    local spec = db:read(function(rd) return rd:partition_spec(1) end)
    local got = {}
    for i, c in ipairs(spec.columns) do got[i] = c.transform end
    assert.are.same({ "epoch_day", "epoch_hour", "bucket(2147483647)" }, got)
    db:close()
  end)

  it("refuses DML: moraine writes no data, and nothing is committed", function()
    local db = moraine.open(support.tmpdir("dml"), { no_sync = true })
    db:init()
    db:exec("CREATE TABLE t(a INTEGER)")
    for _, q in ipairs({ "INSERT INTO t VALUES (1)", "DELETE FROM t", "UPDATE t SET a = 2",
                         "CALL ducklake_merge_adjacent_files('lake')" }) do
      support.expect_err("EINVAL", { "moraine writes no data" }, db.exec, db, q)
    end
    assert.are.equal(1, db:last_snapshot())
    db:close()
  end)

  it("a BEGIN ... COMMIT block is one snapshot; a failing statement in it commits nothing", function()
    local db = moraine.open(support.tmpdir("block"), { no_sync = true })
    db:init()
    assert.are.equal(1, db:exec([[BEGIN; CREATE TABLE Events(id BIGINT, ts TIMESTAMP);
      ALTER TABLE events ADD COLUMN note VARCHAR DEFAULT 'n/a';
      ALTER TABLE EVENTS SET PARTITIONED BY (year(TS), bucket(04, id)); COMMIT;]]))
    local part = db:scan("ducklake_partition_column")
    assert.are.same({ "year", "bucket(4)" }, { part[1].row.transform, part[2].row.transform })
    support.expect_err("ENOTFOUND", { "nope" },
      db.exec, db, "BEGIN; ALTER TABLE events RENAME COLUMN id TO ident; ALTER TABLE nope ADD COLUMN x INTEGER; COMMIT;")
    assert.are.equal(1, db:last_snapshot())
    support.expect_err("EINVAL", { "cannot commit - no transaction is active" }, db.exec, db, "COMMIT")
    support.expect_err("EINVAL", { "BEGIN without COMMIT" }, db.exec, db, "BEGIN; DROP TABLE events")
    assert.are.equal(1, db:last_snapshot())
    db:close()
  end)

  it("names a statement that does not parse with its byte position, and commits nothing", function()
    local db = moraine.open(support.tmpdir("parse"), { no_sync = true })
    db:init()
    support.expect_err("EINVAL", { "expected a name at byte 26" }, db.exec, db, "CREATE TABLE t(a INTEGER,, b INT)")
    support.expect_err("EINVAL", { "at the end of the statement" }, db.exec, db, "CREATE TABLE t(")
    support.expect_err("EINVAL", { "unsupported statement" }, db.exec, db, "GRANT ALL ON t TO u")
    support.expect_err("EINVAL", { "cannot read the SQL at byte" }, db.exec, db, "CREATE TABLE 'x")
    assert.are.equal(0, db:last_snapshot())
    db:close()
  end)

  it("reads a quoted type name only when it is a plain word (fuzz_sql found x::\"a\"\"b\" rendered as no parser reads back)", function()
    local function render(text)
      local c = expr.cursor(sql.tokens(text))
      return expr.render(expr.parse(c))
    end
    assert.are.equal('CAST(x AS INTEGER)', render('x::"int"'))
    assert.are.equal('CAST(x AS VARCHAR)', render('CAST(x AS "text")'))
    local ok, e = pcall(render, '1::"a""b"')
    assert.is_false(ok)
    assert.are.equal("EINVAL", e.code)
    assert.truthy(e.message:find("unsupported type name (at byte 4)", 1, true), e.message)
    ok, e = pcall(render, 'CAST(x AS "my type")')
    assert.is_false(ok)
    assert.truthy(e.message:find("unsupported type name", 1, true), e.message)
  end)
end)

describe("moraine.ident: DuckDB's identifier rules", function()
  it("quotes exactly when DuckDB's WriteOptionallyQuoted does (the corpus' stored expressions)", function()
    local cases = { camelCase = "camelCase", MyCase = "MyCase", ["My Col"] = '"My Col"', ["1st"] = '"1st"',
                    ['a"b'] = '"a""b"', day = '"day"', year = '"year"', select = '"select"', abs = "abs",
                    ["naïve col"] = '"naïve col"', ["x-y5"] = '"x-y5"', Group38 = "Group38", ["group"] = '"group"' }
    for name, want in pairs(cases) do assert.are.equal(want, ident.render(name), name) end
  end)

  it("compares names case-insensitively (ASCII letters only)", function()
    assert.is_true(ident.same("MyCase", "mycase"))
    assert.is_false(ident.same("naïve", "NAÏVE"))
  end)
end)

describe("moraine.expr: sort expressions as DuckDB renders them", function()
  local function render(s) return expr.render(expr.parse(expr.cursor(sql.tokens(s)))) end
  it("renders what DuckLake stored for the corpus' SET SORTED BY expressions", function()
    local cases = {
      ['"MyCase"'] = "MyCase", ["(ABC4 * 2) - 1"] = "((ABC4 * 2) - 1)", ['-"UserId"'] = "-(UserId)",
      ['coalesce("camelCase", \'z\')'] = "COALESCE(camelCase, 'z')", ["year(Region5)"] = '"year"(Region5)',
      ['CAST("kind" AS VARCHAR)'] = "CAST(kind AS VARCHAR)", ["date_trunc('month', \"x-y5\")"] = "date_trunc('month', \"x-y5\")",
      ['"price8" + 1'] = "(price8 + 1)", ["flag || flag"] = "(flag || flag)", ["abs(\"1st5\")"] = 'abs("1st5")',
    }
    for src, want in pairs(cases) do assert.are.equal(want, render(src), src) end
  end)

  it("round-trips: what it renders parses back to the same text", function()
    for _, s in ipairs({ "((a * 2) - 1)", '-("1st5")', "CAST(COALESCE(a, 1) AS VARCHAR)", '"year"("select")' }) do
      assert.are.equal(s, render(render(s)))
    end
  end)
end)
