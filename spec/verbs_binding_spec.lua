-- Specs of the verb layer of the Lua binding: db:init, db:transaction and the
-- methods of its tx (bindings/moraine.lua + bindings/moraine_core.c over
-- moraine_init / moraine_tx_* of engine/moraine.h). Run under both runtimes:
--   LUA_PATH="$PWD/bindings/?.lua;$PWD/spec/?.lua;;" LUA_CPATH="$PWD/build/lua54/?.so;;" \
--     lua5.4 /usr/bin/busted spec/verbs_binding_spec.lua
--   (the same with build/luajit and `luajit /usr/bin/busted`)
local moraine = require "moraine"
local support = require "support"

local N = moraine.null

-- calls fn(...) expecting a moraine error with @code (and @needle in its
-- message); returns the error
local expect_err = support.expect_err

-- calls fn(...) expecting a plain string error (a luaL_check* argument error)
local function expect_arg_err(needle, fn, ...)
  local ok, e = pcall(fn, ...)
  assert.is_false(ok, "expected an argument error")
  assert.are.equal("string", type(e), "not a string error: " .. tostring(e))
  if needle then assert.is_truthy(e:find(needle, 1, true), "'" .. e .. "' lacks '" .. needle .. "'") end
  return e
end

-- rows of relation @name visible at the newest snapshot (or opts.at)
local rows_of = support.rows_of

local function snapshot_row(db, id)
  for _, r in ipairs(rows_of(db, "ducklake_snapshot")) do
    if r.snapshot_id == id then return r end
  end
  return nil
end

local function count_snapshots(db)
  return #rows_of(db, "ducklake_snapshot")
end

local function find(rows, field, value)
  for _, r in ipairs(rows) do
    if r[field] == value then return r end
  end
  return nil
end

local function live_columns(db, table_id)
  local cols = rows_of(db, "ducklake_column", { table_id = table_id })
  table.sort(cols, function(a, b) return a.column_order < b.column_order end)
  return cols
end

local EVENTS = {
  { name = "id", type = "int64", not_null = true },
  { name = "ts", type = "timestamp" },
  { name = "region", type = "varchar" },
  { name = "amount", type = "decimal(18,2)" },
}

local function file(path, pvs)
  return { path = path, record_count = 10, file_size_bytes = 1000, footer_size = 100, partition_values = pvs }
end

describe("verbs binding", function()
  local dir, db

  before_each(function()
    dir = support.tmpdir("verbs")
    db = moraine.open(dir, { no_sync = true })
  end)

  after_each(function()
    db:close()
    support.cleanup()
  end)

  -- init plus table "main"."events" (id, ts, region, amount); returns its id
  local function with_events()
    db:init("data/")
    local tid
    db:transaction(function(tx) tid = tx:create_table("events", EVENTS) end)
    return tid
  end

  describe("db:init", function()
    it("makes an empty catalog a DuckLake catalog at snapshot 0 with schema main", function()
      assert.is_nil(db:last_snapshot())
      assert.is_true(db:init("data/"))
      assert.are.equal(0, db:last_snapshot())
      local snap = snapshot_row(db, 0)
      assert.are.equal(0, snap.schema_version)
      assert.are.equal(1, snap.next_catalog_id)
      assert.are.equal(0, snap.next_file_id)
      local schemas = rows_of(db, "ducklake_schema")
      assert.are.equal(1, #schemas)
      assert.are.equal("main", schemas[1].schema_name)
      assert.are.equal(0, schemas[1].schema_id)
      local changes = rows_of(db, "ducklake_snapshot_changes")
      assert.are.equal('created_schema:"main"', changes[1].changes_made)
      local meta = rows_of(db, "ducklake_metadata")
      assert.are.equal("data/", find(meta, "key", "data_path").value)
    end)

    it("refuses a catalog that is not empty (EEXIST) and a non-string path", function()
      db:init("data/")
      expect_err("EEXIST", "not empty", db.init, db, "other/")
      expect_arg_err("bad argument", db.init, db, {})
      assert.are.equal(0, db:last_snapshot())
    end)

    it("must come before any transaction (EINVAL)", function()
      expect_err("EINVAL", "no snapshot", db.transaction, db, function() end)
    end)
  end)

  describe("schemas, tables and columns", function()
    it("take ids from next_catalog_id as DuckLake does", function()
      db:init("data/")
      local base, tid
      local s1 = db:transaction(function(tx)
        base = tx:base()
        tx:create_schema("sales")
        tid = tx:create_table("sales.orders", {
          { name = "id", type = "int64", not_null = true },
          { name = "region", type = "varchar", default = "eu" },
        })
      end)
      assert.are.equal(0, base)
      assert.are.equal(1, s1)
      assert.are.equal(1, db:last_snapshot())
      -- schema "sales" took catalog id 1, the table 2: next_catalog_id is 3
      local sales = find(rows_of(db, "ducklake_schema"), "schema_name", "sales")
      assert.are.equal(1, sales.schema_id)
      assert.are.equal(2, tid)
      local t = find(rows_of(db, "ducklake_table"), "table_name", "orders")
      assert.are.equal(2, t.table_id)
      assert.are.equal(1, t.schema_id)
      local snap = snapshot_row(db, 1)
      assert.are.equal(3, snap.next_catalog_id)
      assert.are.equal(1, snap.schema_version)
      local cols = live_columns(db, tid)
      assert.are.equal(2, #cols)
      assert.are.equal("id", cols[1].column_name)
      assert.are.equal(1, cols[1].column_id)
      assert.are.equal("int64", cols[1].column_type)
      assert.is_false(cols[1].nulls_allowed)
      assert.are.equal("NULL", cols[1].default_value)
      assert.are.equal("region", cols[2].column_name)
      assert.are.equal(2, cols[2].column_id)
      assert.is_true(cols[2].nulls_allowed)
      assert.are.equal("eu", cols[2].default_value)

      -- ADD COLUMN: the next column id of the table; no catalog id taken
      local s2 = db:transaction(function(tx)
        tx:add_column({ schema = "sales", table = "orders" }, { name = "note", type = "varchar", default = "n/a" })
      end)
      assert.are.equal(2, s2)
      local note = live_columns(db, tid)[3]
      assert.are.equal("note", note.column_name)
      assert.are.equal(3, note.column_id)
      assert.are.equal(2, note.begin_snapshot)
      snap = snapshot_row(db, 2)
      assert.are.equal(3, snap.next_catalog_id)
      assert.are.equal(2, snap.schema_version)
    end)

    it("names tables as 'table' (schema main), 'schema.table' (first dot) or {schema =, table =}", function()
      db:init("data/")
      db:transaction(function(tx)
        tx:create_schema("s")
        tx:create_table("plain", { { name = "a", type = "int64" } })
        tx:create_table("s.x.y", { { name = "a", type = "int64" } })
        tx:create_table({ schema = "s", table = "dotted.name" }, { { name = "a", type = "int64" } })
        tx:create_table({ table = "in_main" }, { { name = "a", type = "int64" } })
      end)
      local schemas = {}
      for _, r in ipairs(rows_of(db, "ducklake_schema")) do schemas[r.schema_id] = r.schema_name end
      local got = {}
      for _, r in ipairs(rows_of(db, "ducklake_table")) do got[r.table_name] = schemas[r.schema_id] end
      assert.are.same({ plain = "main", ["x.y"] = "s", ["dotted.name"] = "s", in_main = "main" }, got)
    end)

    it("records author, message and extra_info in ducklake_snapshot_changes", function()
      db:init("data/")
      local s = db:transaction(function(tx) tx:create_schema("a") end,
        { author = "ann", message = "make a", extra_info = '{"k":1}' })
      local ch = find(rows_of(db, "ducklake_snapshot_changes"), "snapshot_id", s)
      assert.are.equal("ann", ch.author)
      assert.are.equal("make a", ch.commit_message)
      assert.are.equal('{"k":1}', ch.commit_extra_info)
      assert.are.equal('created_schema:"a"', ch.changes_made)
      s = db:transaction(function(tx) tx:create_schema("b") end)
      ch = find(rows_of(db, "ducklake_snapshot_changes"), "snapshot_id", s)
      assert.are.equal(N, ch.author)
      assert.are.equal(N, ch.commit_message)
      expect_err("EINVAL", "unknown option 'autor'", db.transaction, db, function() end, { autor = "x" })
      expect_err("EINVAL", "'message' must be a string", db.transaction, db, function() end, { message = 1 })
    end)
  end)

  describe("set_partitioning", function()
    it("parses DuckLake's SQL-form keys into transform and column_id rows", function()
      local tid = with_events()
      db:transaction(function(tx)
        tx:set_partitioning("events", { "region", "year(ts)", " month ( ts ) ", "bucket(04, id)",
                                        "epoch_day(ts)", "day(ts)", "hour(ts)",
                                        { column = "amount", transform = "identity" } })
      end)
      local spec = db:read(function(rd) return rd:partition_spec(tid) end)
      assert.is_not_nil(spec)
      local got = {}
      for i, c in ipairs(spec.columns) do
        assert.are.equal(i - 1, c.partition_key_index)
        got[i] = c.column_id .. " " .. c.transform
      end
      -- column ids: id 1, ts 2, region 3, amount 4
      assert.are.same({ "3 identity", "2 year", "2 month", "1 bucket(4)", "2 epoch_day", "2 day", "2 hour",
                        "4 identity" }, got)
    end)

    it("an empty array resets the partitioning (zero-column spec)", function()
      local tid = with_events()
      db:transaction(function(tx) tx:set_partitioning("events", { "year(ts)" }) end)
      db:transaction(function(tx) tx:set_partitioning("events", {}) end)
      local spec = db:read(function(rd) return rd:partition_spec(tid) end)
      assert.is_not_nil(spec)
      assert.are.equal(0, #spec.columns)
    end)

    it("parse_partition_key follows DuckLake's SQL form", function()
      local p = moraine.parse_partition_key
      assert.are.same({ column = "region", transform = "identity" }, p("region"))
      assert.are.same({ column = "ts", transform = "year" }, p("year(ts)"))
      assert.are.same({ column = "id", transform = "bucket(4)" }, p("bucket(4, id)"))
      assert.are.same({ column = "id", transform = "bucket(4)" }, p("bucket(004, id)"))
      assert.are.same({ column = "id", transform = "bucket(-3)" }, p("bucket(-03, id)"))
      assert.are.same({ column = "id", transform = "bucket(x)" }, p("bucket(x, id)"))
      -- parsed as DuckLake's parser reads it; the verb refuses what DuckLake's catalog cannot load
      assert.are.same({ column = "name", transform = "truncate(10)" }, p(" truncate ( 10 ,  name ) "))
      assert.are.same({ column = "id", transform = "year(ts)" }, p("year(ts, id)"))
      assert.are.same({ column = "ts", transform = "myfn" }, p("myfn(ts)"))
      assert.are.same({ column = "My Col", transform = "day" }, p('DAY("My Col")'))
      assert.are.same({ column = "ts", transform = "identity" }, p("(ts)"))
      for _, bad in ipairs({ "", "   ", "year(ts", "year()", "bucket(, id)", "t.ts", "year(t.ts)", "ts + 1",
                             "year(ts) x", "a, b", "bucket(4, id + 1)" }) do
        local r, msg = p(bad)
        assert.is_nil(r, bad)
        assert.are.equal("string", type(msg), bad)
      end
    end)

    it("raises EINVAL for a key that does not parse, ENOTFOUND for an unknown column", function()
      with_events()
      local snap = db:last_snapshot()
      db:transaction(function(tx)
        expect_err("EINVAL", "year(ts", tx.set_partitioning, tx, "events", { "region", "year(ts" })
        expect_err("EINVAL", "key 1", tx.set_partitioning, tx, "events", { 42 })
        expect_err("EINVAL", "unknown field 'transfrom'", tx.set_partitioning, tx, "events",
                   { { column = "ts", transfrom = "year" } })
        expect_err("ENOTFOUND", "nope", tx.set_partitioning, tx, "events", { "year(nope)" })
      end)
      assert.are.equal(snap, db:last_snapshot())
    end)

    -- issue 16 item 7 on the verb path: what DuckLake's catalog loader refuses
    -- ("Unsupported partition transform") is refused, in SQL form and as a table
    it("refuses the transforms and bucket counts DuckLake refuses; the store is unchanged", function()
      local tid = with_events()
      local snap = db:last_snapshot()
      local cases = {
        { "bucket(x, id)", "Bucket count must be an integer" }, { "bucket(0, id)", "Bucket count must be positive" },
        { "bucket(-1, id)", "Bucket count must be positive" }, { "bucket(-3, id)", "Bucket count must be positive" },
        { "bucket(2147483648, id)", "Bucket count cannot exceed 2147483647" },
        { "bucket(1.5, id)", "Bucket count must be an integer" },
        { "nosuchfn(id)", 'Unsupported partition transform "nosuchfn"' },
        { "foo(ts)", 'Unsupported partition transform "foo"' },
        { "truncate(3, id)", 'Unsupported partition transform "truncate(3)"' },
        { "truncate(10, region)", 'Unsupported partition transform "truncate(10)"' },
        { "year(ts, id)", 'Unsupported partition transform "year(ts)"' },
        { { column = "id", transform = "bucket(04)" }, "not written as DuckLake writes it" },
        { { column = "id", transform = "truncate(3)" }, "Unsupported partition transform" },
        { { column = "id", transform = "" }, "needs a transform string" },
      }
      local n = count_snapshots(db)
      db:transaction(function(tx)
        for _, c in ipairs(cases) do expect_err("EINVAL", c[2], tx.set_partitioning, tx, "events", { "region", c[1] }) end
        expect_err("ENOTFOUND", 'Unexpected partition key - column "nope" does not exist', tx.set_partitioning, tx, "events",
                   { "bucket(4, nope)" })
      end)
      assert.are.equal(snap, db:last_snapshot())
      assert.are.equal(n, count_snapshots(db))
      assert.is_nil(db:read(function(rd) return rd:partition_spec(tid) end))
      -- bucket(04, id) is bucket(4): setting it under bucket(4, id) commits nothing (corpus seed_0016 step 7)
      db:transaction(function(tx) tx:set_partitioning("events", { "bucket(4, id)" }) end)
      snap = db:last_snapshot()
      assert.is_nil(db:transaction(function(tx) tx:set_partitioning("events", { "bucket(04, id)" }) end))
      assert.are.equal(snap, db:last_snapshot())
    end)

    it("add_data_files: partition values must fit their key's transform and column type", function()
      with_events()
      db:transaction(function(tx) tx:set_partitioning("events", { "bucket(4, id)", "year(ts)", "region", "amount" }) end)
      local snap = db:last_snapshot()
      local function pv(a, b, c, d) return { file("bad.parquet", { a, b, c, d }) } end
      db:transaction(function(tx)
        for _, bad in ipairs({ "999", "-1", "4", "abc", "1.5", "04", "" }) do
          expect_err("EINVAL", "is not a bucket of bucket(4)", tx.add_data_files, tx, "events", pv(bad, "2025", "eu", "1.00"))
        end
        for _, bad in ipairs({ "x", "2025.0", "02025" }) do
          expect_err("EINVAL", "is not an integer as DuckLake writes a year value", tx.add_data_files, tx, "events", pv("1", bad, "eu", "1.00"))
        end
        expect_err("EINVAL", "is not a value of type decimal(18,2)", tx.add_data_files, tx, "events", pv("1", "2025", "eu", "x"))
      end)
      assert.are.equal(snap, db:last_snapshot())
      db:transaction(function(tx)
        tx:add_data_files("events", { file("a.parquet", { "0", "2025", "eu", "1.25" }), file("b.parquet", { "3", "-44", "", N }),
                                      file("c.parquet", { N, N, N, N }) })
      end)
      assert.are.equal(snap + 1, db:last_snapshot())
    end)
  end)

  describe("set_sorting", function()
    it("parses 'amount DESC NULLS LAST' and leaves missing parts to the engine", function()
      local tid = with_events()
      db:transaction(function(tx)
        tx:set_sorting("events", { "amount DESC NULLS LAST", 'lower("region") asc', "ts nulls first", "id" })
      end)
      local spec = db:read(function(rd) return rd:sort_spec(tid) end)
      assert.is_not_nil(spec)
      local got = {}
      for i, e in ipairs(spec.expressions) do
        got[i] = table.concat({ e.expression, e.sort_direction, e.null_order, e.dialect }, "|")
      end
      assert.are.same({
        "amount|DESC|NULLS_LAST|duckdb",
        "lower(region)|ASC|NULLS_LAST|duckdb", -- as DuckDB renders it: region needs no quotes
        "ts|ASC|NULLS_FIRST|duckdb",
        "id|ASC|NULLS_LAST|duckdb",
      }, got)
    end)

    it("parse_sort_key passes no default for what the key leaves out", function()
      assert.are.same({ expression = "amount", sort_direction = "DESC", null_order = "NULLS_LAST", columns = { "amount" } },
                      moraine.parse_sort_key("amount DESC NULLS LAST"))
      assert.are.same({ expression = "region", columns = { "region" } }, moraine.parse_sort_key("  region "))
      -- rendered as DuckDB's ToString() does (what DuckLake stores)
      assert.are.same({ expression = "(a + b)", null_order = "NULLS_FIRST", columns = { "a", "b" } },
                      moraine.parse_sort_key("a + b NuLLs   FiRsT"))
      assert.are.same({ expression = 'lower("name")', sort_direction = "ASC", columns = { "name" } },
                      moraine.parse_sort_key('lower("name") ASC'))
      assert.are.same({ expression = '((n * 2) - 1)', sort_direction = "DESC", columns = { "n" } },
                      moraine.parse_sort_key('n*2-1 desc'))
      for _, bad in ipairs({ "x NULLS MIDDLE", "   ", "((", "amount; DROP TABLE x", "amount SIDEWAYS", "t.amount",
                             "a, b", "amount DESC DESC" }) do
        local r, msg = moraine.parse_sort_key(bad)
        assert.is_nil(r, bad)
        assert.are.equal("string", type(msg), bad)
      end
    end)

    -- issue 16 items 2-3 on the verb path: a key is read as db:exec reads it
    it("refuses keys that do not parse or name missing columns, as db:exec does; the store is unchanged", function()
      local tid = with_events()
      local snap, n = db:last_snapshot(), count_snapshots(db)
      db:transaction(function(tx)
        expect_err("ENOTFOUND", "Unmatched columns were: nosuch", tx.set_sorting, tx, "events", { "nosuch DESC" })
        expect_err("ENOTFOUND", "Unmatched columns were: nosuch, other", tx.set_sorting, tx, "events",
                   { "amount", "nosuch + other", "lower(nosuch)" })
        expect_err("ENOTFOUND", "Unmatched columns were: nosuch", tx.set_sorting, tx, "events", { { expression = "nosuch + 1" } })
        expect_err("EINVAL", "((", tx.set_sorting, tx, "events", { "((" })
        expect_err("EINVAL", "amount; DROP TABLE x", tx.set_sorting, tx, "events", { "amount; DROP TABLE x" })
        expect_err("EINVAL", "amount SIDEWAYS", tx.set_sorting, tx, "events", { "amount SIDEWAYS" })
        expect_err("EINVAL", "((", tx.set_sorting, tx, "events", { { expression = "((" } })
        expect_err("EINVAL", "Unexpected qualified column reference", tx.set_sorting, tx, "events", { "events.amount" })
        expect_err("EINVAL", "unknown field 'columns'", tx.set_sorting, tx, "events", { { expression = "nosuch", columns = {} } })
        -- rename_column's keys name the columns after the rename
        expect_err("ENOTFOUND", "Unmatched columns were: amount", tx.rename_column, tx, "events", "amount", "total",
                   { "amount + 1" })
      end)
      assert.are.equal(snap, db:last_snapshot())
      assert.are.equal(n, count_snapshots(db))
      assert.is_nil(db:read(function(rd) return rd:sort_spec(tid) end))
      -- a table key's duckdb expression is stored as DuckDB renders it; another dialect's verbatim
      db:transaction(function(tx)
        tx:set_sorting("events", { { expression = "AMOUNT*2" }, { expression = "whatever(x", dialect = "spark" } })
      end)
      local spec = db:read(function(rd) return rd:sort_spec(tid) end)
      assert.are.equal("(AMOUNT * 2)", spec.expressions[1].expression)
      assert.are.equal("whatever(x", spec.expressions[2].expression)
      db:transaction(function(tx) tx:rename_column("events", "amount", "total", { "total + 1 DESC" }) end)
      spec = db:read(function(rd) return rd:sort_spec(tid) end)
      assert.are.equal("(total + 1)", spec.expressions[1].expression)
    end)

    it("raises EINVAL for a bad sort direction and changes nothing", function()
      local tid = with_events()
      local snap = db:last_snapshot()
      local s = db:transaction(function(tx)
        expect_err("EINVAL", "UP", tx.set_sorting, tx, "events", { { expression = "amount", sort_direction = "UP" } })
        expect_err("EINVAL", "null_order", tx.set_sorting, tx, "events",
                   { { expression = "amount", null_order = "NULLS_SOMEWHERE" } })
        expect_err("EINVAL", "x NULLS MIDDLE", tx.set_sorting, tx, "events", { "x NULLS MIDDLE" })
      end)
      assert.is_nil(s)
      assert.are.equal(snap, db:last_snapshot())
      assert.is_nil(db:read(function(rd) return rd:sort_spec(tid) end))
    end)
  end)

  describe("transaction outcome", function()
    it("a transaction that changes nothing returns nil and writes no snapshot", function()
      with_events()
      local snap, n = db:last_snapshot(), count_snapshots(db)
      local ran = false
      local r = db:transaction(function(tx)
        ran = true
        assert.are.equal(snap, tx:base())
      end)
      assert.is_true(ran)
      assert.is_nil(r)
      assert.are.equal(snap, db:last_snapshot())
      assert.are.equal(n, count_snapshots(db))
      -- setting the partitioning a table already has changes nothing either
      db:transaction(function(tx) tx:set_partitioning("events", { "region" }) end)
      snap, n = db:last_snapshot(), count_snapshots(db)
      assert.is_nil(db:transaction(function(tx) tx:set_partitioning("events", { "region" }) end))
      assert.are.equal(snap, db:last_snapshot())
      assert.are.equal(n, count_snapshots(db))
    end)

    it("a raising fn aborts: no snapshot, its error re-raised unchanged", function()
      db:init("data/")
      local mine = { mine = true }
      local ok, e = pcall(db.transaction, db, function(tx)
        tx:create_table("t", { { name = "a", type = "int64" } })
        error(mine)
      end)
      assert.is_false(ok)
      assert.are.equal(mine, e)
      assert.are.equal(0, db:last_snapshot())
      assert.are.equal(1, count_snapshots(db))
      assert.are.equal(0, #rows_of(db, "ducklake_table"))
      ok, e = pcall(db.transaction, db, function() error("boom") end)
      assert.is_false(ok)
      assert.are.equal("string", type(e))
      assert.is_truthy(e:find("boom", 1, true))
      -- nothing was left open: the next transaction commits
      assert.are.equal(1, db:transaction(function(tx) tx:create_table("t", { { name = "a", type = "int64" } }) end))
    end)

    it("a failed verb raises ENOTFOUND naming the table; caught, the transaction goes on", function()
      db:init("data/")
      local err
      local s = db:transaction(function(tx)
        tx:create_table("kept", { { name = "a", type = "int64" } })
        local ok, e = pcall(tx.add_column, tx, "orderz", { name = "b", type = "int64" })
        assert.is_false(ok)
        err = e
        tx:add_column("kept", { name = "b", type = "varchar" })
      end)
      assert.is_true(moraine.is_error(err))
      assert.are.equal("ENOTFOUND", err.code)
      assert.is_truthy(err.message:find("orderz", 1, true), err.message)
      assert.are.equal("moraine: ENOTFOUND: " .. err.message, tostring(err))
      assert.are.equal(1, s)
      local t = find(rows_of(db, "ducklake_table"), "table_name", "kept")
      local names = {}
      for i, c in ipairs(live_columns(db, t.table_id)) do names[i] = c.column_name end
      assert.are.same({ "a", "b" }, names)
      -- uncaught, the verb's error aborts the transaction
      expect_err("ENOTFOUND", '"sales"', db.transaction, db, function(tx)
        tx:create_schema("x")
        tx:drop_table("sales.orders")
      end)
      assert.are.equal(1, db:last_snapshot())
      assert.is_nil(find(rows_of(db, "ducklake_schema"), "schema_name", "x"))
    end)

    it("the tx raises ETXN after the transaction committed or aborted", function()
      db:init("data/")
      local kept
      db:transaction(function(tx)
        kept = tx
        tx:create_schema("a")
      end)
      assert.is_truthy(tostring(kept):find("finished", 1, true))
      expect_err("ETXN", "finished", kept.create_schema, kept, "b")
      expect_err("ETXN", "finished", kept.base, kept)
      pcall(db.transaction, db, function(tx)
        kept = tx
        error("x")
      end)
      expect_err("ETXN", nil, kept.drop_table, kept, "t")
      expect_err("ETXN", nil, kept.add_data_files, kept, "t", {})
      assert.is_nil(find(rows_of(db, "ducklake_schema"), "schema_name", "b"))
    end)

    it("closing the catalog inside fn aborts the transaction (ETXN)", function()
      db:init("data/")
      expect_err("ETXN", "closed", db.transaction, db, function(tx)
        tx:create_schema("a")
        db:close()
      end)
      db = moraine.open(dir, { no_sync = true })
      assert.are.equal(0, db:last_snapshot())
    end)

    it("raises plain string errors for arguments of the wrong Lua type", function()
      db:init("data/")
      expect_arg_err("bad argument", db.transaction, db, "not a function")
      expect_arg_err("bad argument", db.transaction, db, function() end, "not a table")
      db:transaction(function(tx)
        expect_arg_err("bad argument", tx.create_table, tx, 42, { { name = "a", type = "int64" } })
        expect_arg_err("bad argument", tx.create_table, tx, "t", nil)
        expect_arg_err("bad argument", tx.set_sorting, tx, "t", "a DESC")
        expect_arg_err("bad argument", tx.create_schema, tx, {})
        expect_arg_err("NUL", tx.drop_table, tx, "a\0b")
        expect_err("EINVAL", "columns[1]: 'type'", tx.create_table, tx, "t", { { name = "a" } })
        expect_err("EINVAL", "unknown field 'nullable'", tx.create_table, tx, "t",
                   { { name = "a", type = "int64", nullable = false } })
        expect_err("EINVAL", "'table' must be a string", tx.drop_table, tx, { schema = "main" })
      end)
      assert.are.equal(0, db:last_snapshot())
    end)
  end)

  describe("data files", function()
    it("add_data_files returns the first data_file_id and writes the files", function()
      local tid = with_events()
      db:transaction(function(tx) tx:set_partitioning("events", { "region", "year(ts)" }) end)
      local first, second
      local s = db:transaction(function(tx)
        first = tx:add_data_files("events", {
          { path = "a.parquet", record_count = 10, file_size_bytes = 1000, partition_values = { "eu", "2025" },
            stats = { { column = "id", min_value = "1", max_value = "10", null_count = 0, value_count = 10,
                        contains_nan = false } } },
          file("b.parquet", { N, "2025" }),
        })
        second = tx:add_data_files("events", { file("c.parquet", { "us", "2024" }) })
      end)
      assert.are.equal(0, first)
      assert.are.equal(2, second)
      local entries = db:scan("ducklake_data_file", { table_id = tid })
      assert.are.equal(3, #entries)
      local by = {}
      for _, e in ipairs(entries) do by[e.row.path] = e end
      local a, b = by["a.parquet"], by["b.parquet"]
      assert.are.equal(0, a.row.data_file_id)
      assert.are.equal(s, a.row.begin_snapshot)
      assert.are.equal(N, a.row.footer_size)
      assert.are.equal(0, a.row.row_id_start)
      assert.are.equal(10, b.row.row_id_start)
      assert.are.equal(100, b.row.footer_size)
      local pv = b.children.ducklake_file_partition_value
      assert.are.equal(2, #pv)
      assert.are.equal(N, pv[1].partition_value)
      assert.are.equal("2025", pv[2].partition_value)
      local st = a.children.ducklake_file_column_stats[1]
      assert.are.equal(1, st.column_id)
      assert.are.equal("1", st.min_value)
      assert.are.equal(0, st.null_count)
      assert.is_false(st.contains_nan)
      assert.are.equal(N, st.column_size_bytes)
      assert.are.equal(3, snapshot_row(db, s).next_file_id)
    end)

    it("a partition value count that does not match the live spec is EINVAL", function()
      with_events()
      db:transaction(function(tx) tx:set_partitioning("events", { "region", "year(ts)" }) end)
      local snap = db:last_snapshot()
      local r = db:transaction(function(tx)
        expect_err("EINVAL", "partition values", tx.add_data_files, tx, "events", { file("a.parquet", { "eu" }) })
        expect_err("EINVAL", "partition values", tx.add_data_files, tx, "events", { file("a.parquet") })
        expect_err("EINVAL", "partition_values[2]", tx.add_data_files, tx, "events",
                   { file("a.parquet", { "eu", 2025 }) })
        expect_err("EINVAL", "'record_count'", tx.add_data_files, tx, "events",
                   { { path = "a.parquet", file_size_bytes = 1, partition_values = { "eu", "2025" } } })
      end)
      assert.is_nil(r)
      assert.are.equal(snap, db:last_snapshot())
      assert.are.equal(0, #rows_of(db, "ducklake_data_file"))
    end)

    it("a delete file and a whole-file delete end the file they name", function()
      local tid = with_events()
      local first
      db:transaction(function(tx)
        first = tx:add_data_files("events", { file("a.parquet"), file("b.parquet") })
      end)
      db:transaction(function(tx)
        tx:add_delete_files("events", { { data_file_id = first, path = "del-a.parquet", delete_count = 2,
                                          file_size_bytes = 50, footer_size = 10 } })
      end)
      local dels = rows_of(db, "ducklake_delete_file", { table_id = tid })
      assert.are.equal(1, #dels)
      assert.are.equal(first, dels[1].data_file_id)
      assert.are.equal(2, dels[1].delete_count)
      assert.are.equal("del-a.parquet", dels[1].path)
      db:transaction(function(tx) tx:delete_files("events", { first }) end)
      assert.are.equal(0, #rows_of(db, "ducklake_delete_file", { table_id = tid }))
      local live = rows_of(db, "ducklake_data_file", { table_id = tid })
      assert.are.equal(1, #live)
      assert.are.equal("b.parquet", live[1].path)
      db:transaction(function(tx)
        expect_err("ENOTFOUND", "data file " .. first, tx.delete_files, tx, "events", { first })
        expect_err("EINVAL", "ids[1]", tx.delete_files, tx, "events", { "0" })
      end)
    end)

    it("row_group_count: a positive count is written, left out, moraine.null or 0 is NULL, a negative one refused (data and delete files)", function()
      local tid = with_events()
      local first
      db:transaction(function(tx)
        local a, b, c = file("a.parquet"), file("b.parquet"), file("c.parquet")
        a.row_group_count, c.row_group_count = 4, 0
        local d = file("d.parquet")
        d.row_group_count = N
        first = tx:add_data_files("events", { a, b, c, d })
      end)
      db:transaction(function(tx)
        tx:add_delete_files("events", {
          { data_file_id = first, path = "del-a.parquet", delete_count = 1, file_size_bytes = 50, footer_size = 10,
            row_group_count = 1 },
          { data_file_id = first + 1, path = "del-b.parquet", delete_count = 1, file_size_bytes = 50, footer_size = 10 },
        })
        expect_err("EINVAL", "'row_group_count'", tx.add_data_files, tx, "events",
                   { { path = "e.parquet", record_count = 1, file_size_bytes = 1, row_group_count = "2" } })
        expect_err("EINVAL", "row_group_count -1 is negative", tx.add_data_files, tx, "events",
                   { { path = "e.parquet", record_count = 1, file_size_bytes = 1, row_group_count = -1 } })
        expect_err("EINVAL", "row_group_count -2 is negative", tx.add_delete_files, tx, "events",
                   { { data_file_id = first + 2, path = "del-c.parquet", delete_count = 1, file_size_bytes = 50, footer_size = 10,
                       row_group_count = -2 } })
      end)
      local got = {}
      for _, r in ipairs(rows_of(db, "ducklake_data_file", { table_id = tid })) do got[r.path] = r.row_group_count end
      assert.are.same({ ["a.parquet"] = 4, ["b.parquet"] = N, ["c.parquet"] = N, ["d.parquet"] = N }, got)
      got = {}
      for _, r in ipairs(rows_of(db, "ducklake_delete_file", { table_id = tid })) do got[r.path] = r.row_group_count end
      assert.are.same({ ["del-a.parquet"] = 1, ["del-b.parquet"] = N }, got)
    end)

    -- Fails while moraine_tx_delete_files/rewrite_files/add_delete_files only
    -- find the table's first live data file (engine/verbs_files.c live_files).
    it("delete_files, add_delete_files and rewrite_files find any live file of the table", function()
      local tid = with_events()
      local first
      db:transaction(function(tx)
        first = tx:add_data_files("events", { file("a.parquet"), file("b.parquet"), file("c.parquet"),
                                              file("d.parquet") })
      end)
      db:transaction(function(tx)
        tx:add_delete_files("events", { { data_file_id = first + 1, path = "del-b.parquet", delete_count = 1,
                                          file_size_bytes = 50, footer_size = 10 } })
      end)
      db:transaction(function(tx) tx:delete_files("events", { first + 3 }) end)
      db:transaction(function(tx)
        tx:rewrite_files("events", { first + 1, first + 2 }, { file("merged.parquet") })
      end)
      local paths = {}
      for i, r in ipairs(rows_of(db, "ducklake_data_file", { table_id = tid })) do paths[i] = r.path end
      table.sort(paths)
      assert.are.same({ "a.parquet", "merged.parquet" }, paths)
      assert.are.equal(0, #rows_of(db, "ducklake_delete_file", { table_id = tid }))
    end)
  end)
end)

describe("verb arguments", function()
  after_each(support.cleanup)

  it("a single file where a list of files is expected is refused, not read as an empty list", function()
    local cat = moraine.open(support.tmpdir("onefile"), { no_sync = true })
    cat:init()
    cat:transaction(function(tx) tx:create_table("ev", { { name = "a", type = "int64" } }) end)
    local before = cat:last_snapshot()
    support.expect_err("EINVAL", { "expected a list", "put a single item in a list" }, cat.transaction, cat, function(tx)
      tx:add_data_files("ev", { path = "k.parquet", record_count = 1, file_size_bytes = 1 })
    end)
    assert.are.equal(before, cat:last_snapshot())
    cat:close()
  end)
end)
