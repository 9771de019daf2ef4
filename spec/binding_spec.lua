-- Specs of the Lua binding (bindings/moraine.lua + bindings/moraine_core.c).
-- Run under both runtimes, e.g.
--   sh scripts/run-lua.sh lua5.4 build /usr/bin/busted spec/binding_spec.lua
--   sh scripts/run-lua.sh luajit build /usr/bin/busted spec/binding_spec.lua
local moraine = require "moraine"
local support = require "support"

local IS_JIT = rawget(_G, "jit") ~= nil
local IS_54 = _VERSION == "Lua 5.4" and not IS_JIT
local N = moraine.null

-- ---- helpers ------------------------------------------------------------------
local function tmppath() -- a unique path (not created) under $TMPDIR, else /tmp
  local p = os.tmpname()
  os.remove(p)
  local tmp = os.getenv("TMPDIR")
  if tmp and tmp ~= "" then p = tmp .. "/" .. p:match("([^/]*)$") end
  return p
end

local rmrf = support.remove

local function exists(p)
  local f = io.open(p, "rb")
  if f then f:close() return true end
  return false
end

local function write_file(p, text)
  local f = assert(io.open(p, "wb"))
  f:write(text)
  f:close()
end

-- decimal text of an integer (LuaJIT int64 cdata print with an LL suffix)
local function istr(v)
  return (tostring(v):gsub("LL$", ""))
end

-- calls fn(...) expecting a moraine error with @code; returns the error
local expect_err = support.expect_err

-- the definition order used by the fixtures (parents before children)
local ORDER = {
  "ducklake_snapshot", "ducklake_table", "ducklake_data_file", "ducklake_file_partition_value",
  "ducklake_partition_info", "ducklake_partition_column", "ducklake_sort_info",
  "ducklake_sort_expression", "ducklake_table_stats", "ducklake_metadata",
}
local COLS = {
  ducklake_snapshot = {"snapshot_id", "snapshot_time", "schema_version", "next_catalog_id", "next_file_id"},
  ducklake_table = {"table_id", "table_uuid", "begin_snapshot", "end_snapshot", "schema_id", "table_name",
                    "path", "path_is_relative"},
  -- partial_file_info is not in moraine's list: a column of type ANY
  ducklake_data_file = {"data_file_id", "table_id", "begin_snapshot", "end_snapshot", "file_order", "path",
                        "path_is_relative", "file_format", "record_count", "file_size_bytes", "footer_size",
                        "row_id_start", "partition_id", "encryption_key", "partial_file_info", "mapping_id"},
  ducklake_file_partition_value = {"data_file_id", "table_id", "partition_key_index", "partition_value"},
  ducklake_partition_info = {"partition_id", "table_id", "begin_snapshot", "end_snapshot"},
  ducklake_partition_column = {"partition_id", "table_id", "partition_key_index", "column_id", "transform"},
  ducklake_sort_info = {"sort_id", "table_id", "begin_snapshot", "end_snapshot"},
  ducklake_sort_expression = {"sort_id", "table_id", "sort_key_index", "expression", "dialect",
                              "sort_direction", "null_order"},
  ducklake_table_stats = {"table_id", "record_count", "next_row_id", "file_size_bytes"},
  ducklake_metadata = {"key", "value", "scope", "scope_id"},
}

local function define_all(tx)
  for _, name in ipairs(ORDER) do tx:define(name, COLS[name]) end
end

local function snapshot_row(s)
  return {snapshot_id = s, snapshot_time = "2025-01-0" .. s .. " 00:00:00+00", schema_version = s,
          next_catalog_id = 10, next_file_id = 100}
end

-- a staged commit carries its ducklake_snapshot row (a whole DuckLake snapshot)
local function insert_snapshot(tx, s) tx:insert("ducklake_snapshot", snapshot_row(s)) end

local function table_row(id, s, name)
  return {table_id = id, table_uuid = "uuid-" .. id, begin_snapshot = s, end_snapshot = N, schema_id = 0,
          table_name = name, path = name .. "/", path_is_relative = true}
end

local function file_row(id, tid, s, pid)
  return {data_file_id = id, table_id = tid, begin_snapshot = s, end_snapshot = N, file_order = N,
          path = "f" .. id .. ".parquet", path_is_relative = true, file_format = "parquet",
          record_count = 100, file_size_bytes = 1000, footer_size = 50, row_id_start = 0,
          partition_id = pid == nil and N or pid, encryption_key = N, partial_file_info = N, mapping_id = N}
end

-- rows of db:scan(name, opts), without ord/children
local rows_of = support.rows_of

-- A catalog with two snapshots:
--  1: tables 1 "t1" and 2 "t2"; file 10 of table 1 (two partition values, partition 0),
--     file 20 of table 2; partition spec 0 of table 1 (two columns); sort spec 0 of table 1
--  2: table 1 renamed "t1b" (version ended + new version); file 11 of table 1;
--     partition spec 0 ended, spec 1 (zero columns) begins; table stats rows
local function build_fixture(db)
  db:commit(1, function(tx)
    define_all(tx)
    tx:insert("ducklake_snapshot", snapshot_row(1))
    tx:insert("ducklake_table", table_row(1, 1, "t1"))
    tx:insert("ducklake_table", table_row(2, 1, "t2"))
    tx:insert("ducklake_data_file", file_row(10, 1, 1, 0))
    tx:insert("ducklake_file_partition_value",
              {data_file_id = 10, table_id = 1, partition_key_index = 0, partition_value = "2024"})
    tx:insert("ducklake_file_partition_value",
              {data_file_id = 10, table_id = 1, partition_key_index = 1, partition_value = "07"})
    tx:insert("ducklake_data_file", file_row(20, 2, 1))
    tx:insert("ducklake_partition_info", {partition_id = 0, table_id = 1, begin_snapshot = 1, end_snapshot = N})
    tx:insert("ducklake_partition_column",
              {partition_id = 0, table_id = 1, partition_key_index = 0, column_id = 5, transform = "year"})
    tx:insert("ducklake_partition_column",
              {partition_id = 0, table_id = 1, partition_key_index = 1, column_id = 5, transform = "month"})
    tx:insert("ducklake_sort_info", {sort_id = 0, table_id = 1, begin_snapshot = 1, end_snapshot = N})
    tx:insert("ducklake_sort_expression", {sort_id = 0, table_id = 1, sort_key_index = 0, expression = "a",
                                           dialect = "duckdb", sort_direction = "ASC", null_order = "NULLS_LAST"})
  end)
  db:commit(2, function(tx)
    tx:insert("ducklake_snapshot", snapshot_row(2))
    tx:end_row("ducklake_table", table_row(1, 1, "t1"))
    tx:insert("ducklake_table", table_row(1, 2, "t1b"))
    tx:insert("ducklake_data_file", file_row(11, 1, 2, 0))
    tx:end_row("ducklake_partition_info", {partition_id = 0, table_id = 1, begin_snapshot = 1, end_snapshot = N})
    tx:insert("ducklake_partition_info", {partition_id = 1, table_id = 1, begin_snapshot = 2, end_snapshot = N})
    tx:insert("ducklake_table_stats", {table_id = 1, record_count = 200, next_row_id = 200, file_size_bytes = 2000})
    tx:insert("ducklake_table_stats", {table_id = 2, record_count = 100, next_row_id = 100, file_size_bytes = 1000})
  end)
end

-- ---- specs ---------------------------------------------------------------------
describe("moraine module", function()
  it("exports version, null, ALL and the functions", function()
    assert.are.equal("0.1.0", moraine.version)
    assert.are.equal("userdata", type(moraine.null))
    assert.are.equal(moraine.core.null, moraine.null)
    assert.are_not.equal("", moraine.null)
    assert.are.equal("-9223372036854775808", istr(moraine.ALL))
    for _, f in ipairs({"open", "json_decode", "read_ndjson", "int64", "is_error"}) do
      assert.are.equal("function", type(moraine[f]), f)
    end
  end)

  it("tostring(moraine.null) is NULL, also for a NULL read back and after the C module is loaded again", function()
    assert.are.equal("NULL", tostring(moraine.null))
    assert.are.equal("NULL", string.format("%s", moraine.null))
    local rows = moraine.json_decode('[null, 1]')
    assert.are.equal(moraine.null, rows[1])
    assert.are.equal("NULL", tostring(rows[1]))
    -- a second luaopen of the C module (another require of a fresh copy) keeps it
    local path = assert(package.searchpath("moraine.core", package.cpath))
    local again = assert(package.loadlib(path, "luaopen_moraine_core"))()
    assert.are.equal(moraine.null, again.null)
    assert.are.equal("NULL", tostring(again.null))
    -- other values keep their usual text
    assert.truthy(tostring(io.stdout):match("^file %("))
    assert.are.equal("nil", tostring(nil))
  end)

  it("is_error recognises only moraine error tables", function()
    local ok, e = pcall(moraine.json_decode, "{")
    assert.is_false(ok)
    assert.is_true(moraine.is_error(e))
    assert.is_false(moraine.is_error("moraine: EJSON: x"))
    assert.is_false(moraine.is_error({code = "EJSON", message = "x"}))
    assert.is_false(moraine.is_error(nil))
    assert.are.equal("moraine: EJSON: " .. e.message, tostring(e))
  end)

  it("int64 normalises integers", function()
    assert.are.equal(5, moraine.int64(5))
    if IS_JIT then
      local ffi = require "ffi"
      local big = moraine.int64(2 ^ 60)
      assert.are.equal("cdata", type(big))
      assert.are.equal("1152921504606846976", istr(big))
      local small = moraine.int64(ffi.cast("int64_t", 42))
      assert.are.equal("number", type(small))
      assert.are.equal(42, small)
      assert.are.equal(moraine.int64(2 ^ 60), moraine.int64(ffi.cast("int64_t", 2 ^ 60)))
      assert.has_error(function() moraine.int64(1.5) end)
    else
      assert.are.equal(math.maxinteger, moraine.int64(math.maxinteger))
      assert.are.equal("integer", math.type(moraine.int64(3.0)))
    end
    -- not an exact int64 integer: refused the same way under both runtimes
    for _, bad in ipairs({ "12", 1.5, 2 ^ 63, {} }) do
      local ok, e = pcall(moraine.int64, bad)
      assert.is_false(ok, tostring(bad))
      assert.is_string(e)
      assert.truthy(e:find("bad argument #1", 1, true), e)
    end
  end)
end)

describe("moraine.open", function()
  local dir
  before_each(function() dir = tmppath() end)
  after_each(function() rmrf(dir) end)

  it("creates a catalog directory and closes idempotently", function()
    local db = moraine.open(dir)
    assert.is_true(exists(dir .. "/data.mdb"))
    assert.is_nil(db:last_snapshot())
    assert.are.same({}, db:relations())
    assert.is_truthy(tostring(db):find("moraine.db", 1, true))
    db:close()
    db:close()
    assert.is_truthy(tostring(db):find("closed", 1, true))
    expect_err("EINVAL", "closed", db.last_snapshot, db)
    expect_err("EINVAL", "closed", db.scan, db, "ducklake_table")
  end)

  it("raises EIO for a missing directory with create = false", function()
    expect_err("EIO", nil, moraine.open, dir, {create = false})
    assert.is_false(exists(dir .. "/data.mdb"))
  end)

  it("read-only on a catalog whose creation was killed before LMDB wrote a page: EIO saying data.mdb is empty; a write sets it up", function()
    -- (a SIGKILL during `moraine import` can leave this; LMDB alone says "Bad file descriptor")
    os.execute("mkdir -p '" .. dir .. "' && : > '" .. dir .. "/data.mdb'")
    expect_err("EIO", "its data.mdb is empty", moraine.open, dir, { read_only = true })
    local db = moraine.open(dir)
    assert.is_nil(db:last_snapshot())
    db:close()
    local ro = moraine.open(dir, { read_only = true })
    assert.is_nil(ro:last_snapshot())
    ro:close()
  end)

  it("rejects unknown options and options of the wrong type", function()
    expect_err("EINVAL", "mapsize", moraine.open, dir, {mapsize = 1})
    expect_err("EINVAL", "map_size", moraine.open, dir, {map_size = -1})
    expect_err("EINVAL", "map_size", moraine.open, dir, {map_size = 1.5})
    expect_err("EINVAL", "read_only", moraine.open, dir, {read_only = "yes"})
  end)

  it("raises plain string errors for arguments of the wrong type", function()
    local ok, e = pcall(moraine.open, {})
    assert.is_false(ok)
    assert.are.equal("string", type(e))
    assert.is_false(moraine.is_error(e))
    ok, e = pcall(moraine.open, dir, "not a table")
    assert.is_false(ok)
    assert.are.equal("string", type(e))
  end)

  it("persists commits across close and reopen, and honours read_only", function()
    local db = moraine.open(dir, {map_size = 16 * 1024 * 1024, no_sync = true})
    build_fixture(db)
    db:close()
    local ro = moraine.open(dir, {read_only = true})
    assert.are.equal(2, ro:last_snapshot())
    assert.are.equal(2, #rows_of(ro, "ducklake_table"))
    expect_err("EREADONLY", nil, ro.commit, ro, 3, function() end)
    ro:close()
  end)

  if IS_54 then
    it("closes on <close>", function()
      local chunk = assert(load([[
        local moraine, dir = ...
        local kept
        do
          local db <close> = moraine.open(dir)
          kept = db
          assert(db:last_snapshot() == nil)
        end
        return kept
      ]]))
      local db = chunk(moraine, dir)
      assert.is_truthy(tostring(db):find("closed", 1, true))
      expect_err("EINVAL", "closed", db.relations, db)
    end)
  end
end)

describe("catalog", function()
  local dir, db
  before_each(function()
    dir = tmppath()
    db = moraine.open(dir, {no_sync = true})
  end)
  after_each(function()
    db:close()
    rmrf(dir)
  end)

  describe("relations", function()
    it("lists relations in definition order with placement, columns and parent", function()
      db:commit(nil, function(tx)
        define_all(tx)
        tx:define("my_inlined", {"row_id", "begin_snapshot", "end_snapshot", "x"})
        tx:define("my_rows", {"a", "b"})
      end)
      local rels = db:relations()
      assert.are.equal(#ORDER + 2, #rels)
      local ids = {}
      for i, name in ipairs(ORDER) do
        assert.are.equal(name, rels[i].name)
        assert.are.same(COLS[name], rels[i].columns)
        assert.is_nil(ids[rels[i].id])
        ids[rels[i].id] = true
      end
      local by = {}
      for _, r in ipairs(rels) do by[r.name] = r end
      assert.are.equal("snapshot", by.ducklake_snapshot.placement)
      assert.are.equal("temporal", by.ducklake_table.placement)
      assert.are.equal("child", by.ducklake_file_partition_value.placement)
      assert.are.equal("ducklake_data_file", by.ducklake_file_partition_value.parent)
      assert.are.equal("ducklake_sort_info", by.ducklake_sort_expression.parent)
      assert.is_nil(by.ducklake_table.parent)
      assert.are.equal("rows", by.ducklake_table_stats.placement)
      assert.are.equal("temporal", by.my_inlined.placement)
      assert.are.equal("rows", by.my_rows.placement)
      assert.are.same(by.ducklake_data_file, db:relation("ducklake_data_file"))
      assert.is_nil(db:relation("ducklake_nope"))
    end)

    it("defining again with the same columns is a no-op, with others EEXIST", function()
      db:commit(nil, function(tx) tx:define("ducklake_metadata", COLS.ducklake_metadata) end)
      assert.is_true(db:commit(nil, function(tx) tx:define("ducklake_metadata", COLS.ducklake_metadata) end))
      expect_err("EEXIST", "ducklake_metadata", db.commit, db, nil, function(tx)
        tx:define("ducklake_metadata", {"key", "value"})
      end)
      assert.are.same(COLS.ducklake_metadata, db:relation("ducklake_metadata").columns)
    end)
  end)

  describe("commit", function()
    it("returns true and makes rows visible", function()
      assert.is_true(db:commit(1, function(tx)
        define_all(tx)
        insert_snapshot(tx, 1)
        tx:insert("ducklake_table", table_row(1, 1, "t"))
      end))
      assert.are.equal(1, db:last_snapshot())
      assert.are.same({table_row(1, 1, "t")}, rows_of(db, "ducklake_table"))
    end)

    it("aborts everything and re-raises fn's error value unchanged", function()
      local mine = {mine = true}
      local ok, e = pcall(db.commit, db, 1, function(tx)
        define_all(tx)
        tx:insert("ducklake_table", table_row(1, 1, "t"))
        error(mine)
      end)
      assert.is_false(ok)
      assert.are.equal(mine, e)
      assert.is_nil(db:last_snapshot())
      assert.is_nil(db:relation("ducklake_table"))
      ok, e = pcall(db.commit, db, 1, function() error("boom") end)
      assert.is_false(ok)
      assert.is_truthy(tostring(e):find("boom", 1, true))
      -- the failed commits left no transaction open
      assert.is_true(db:commit(1, function(tx) define_all(tx) insert_snapshot(tx, 1) end))
    end)

    it("aborts when a tx call failed even if fn caught the error", function()
      local inner_ok, caught
      local e = expect_err("EINVAL", "missing column 'table_uuid'", db.commit, db, 1, function(tx)
        define_all(tx)
        tx:insert("ducklake_table", table_row(2, 1, "ok"))
        inner_ok, caught = pcall(tx.insert, tx, "ducklake_table", {table_id = 1})
      end)
      -- checked here, not inside fn: an assertion failing in fn would only abort the commit
      assert.is_false(inner_ok)
      assert.are.equal(caught, e)
      assert.is_nil(db:relation("ducklake_table"))
      assert.is_nil(db:last_snapshot())
    end)

    it("aborts when a tx call raised an argument error that fn caught", function()
      local inner_ok, inner_err
      local ok, e = pcall(db.commit, db, nil, function(tx)
        tx:define("ducklake_metadata", COLS.ducklake_metadata)
        inner_ok, inner_err = pcall(tx.insert, tx, "ducklake_metadata", "not a table")
      end)
      -- the insert raised a plain argument error (luaL_checktype), which fn caught ...
      assert.is_false(inner_ok)
      assert.are.equal("string", type(inner_err), tostring(inner_err))
      assert.is_truthy(inner_err:find("table expected", 1, true), inner_err)
      -- ... and the commit still refused, with an error of its own
      assert.is_false(ok)
      assert.is_true(moraine.is_error(e), tostring(e))
      assert.are.equal("ETXN", e.code, tostring(e))
      assert.is_nil(db:relation("ducklake_metadata"))
    end)

    it("makes the tx unusable after commit returns or fails", function()
      local kept
      db:commit(nil, function(tx)
        kept = tx
        tx:define("ducklake_metadata", COLS.ducklake_metadata)
      end)
      expect_err("ETXN", nil, kept.insert, kept, "ducklake_metadata",
                 {key = "k", value = "v", scope = N, scope_id = N})
      pcall(db.commit, db, nil, function(tx) kept = tx error("x") end)
      expect_err("ETXN", nil, kept.define, kept, "x", {"a"})
      assert.are.equal(0, #rows_of(db, "ducklake_metadata"))
    end)

    it("raises ESNAPSHOT for a snapshot not above the last", function()
      db:commit(5, function(tx) define_all(tx) insert_snapshot(tx, 5) end)
      expect_err("ESNAPSHOT", nil, db.commit, db, 5, function() end)
      expect_err("ESNAPSHOT", nil, db.commit, db, 3, function() end)
      assert.are.equal(5, db:last_snapshot())
    end)

    it("raises ETXN for a nested commit", function()
      local inner_ok, inner
      local ok = pcall(db.commit, db, 1, function(tx)
        define_all(tx)
        insert_snapshot(tx, 1)
        inner_ok, inner = pcall(db.commit, db, 2, function() end)
      end)
      assert.is_true(ok)
      assert.is_false(inner_ok)
      assert.is_true(moraine.is_error(inner))
      assert.are.equal("ETXN", inner.code)
      assert.are.equal(1, db:last_snapshot())
    end)

    it("names missing and unknown columns", function()
      db:commit(nil, function(tx) define_all(tx) end)
      local row = table_row(1, 1, "t")
      row.table_nmae = "typo"
      expect_err("EINVAL", "ducklake_table: unknown column 'table_nmae'", db.commit, db, 1, function(tx)
        tx:insert("ducklake_table", row)
      end)
      row = table_row(1, 1, "t")
      row.path = nil
      expect_err("EINVAL", "ducklake_table: missing column 'path'", db.commit, db, 1, function(tx)
        tx:insert("ducklake_table", row)
      end)
      expect_err("ENOTFOUND", nil, db.commit, db, 1, function(tx)
        tx:insert("ducklake_nope", {a = 1})
      end)
    end)

    it("checks numbers against BIGINT columns, naming the column", function()
      db:commit(nil, function(tx) define_all(tx) end)
      local r = file_row(10, 1, 1)
      r.record_count = 1.5
      expect_err("EINVAL", "record_count", db.commit, db, 1, function(tx) tx:insert("ducklake_data_file", r) end)
      r.record_count = 2 ^ 63
      expect_err("EINVAL", "record_count", db.commit, db, 1, function(tx) tx:insert("ducklake_data_file", r) end)
      r.record_count = "100"
      expect_err("EINVAL", "record_count", db.commit, db, 1, function(tx) tx:insert("ducklake_data_file", r) end)
      r.record_count = function() end
      expect_err("EINVAL", "record_count", db.commit, db, 1, function(tx) tx:insert("ducklake_data_file", r) end)
      r.record_count = 3.0 -- a float with an integral value is an integer
      db:commit(1, function(tx) insert_snapshot(tx, 1) tx:insert("ducklake_data_file", r) end)
      local got = rows_of(db, "ducklake_data_file")[1].record_count
      assert.are.equal(3, got)
      if IS_54 then assert.are.equal("integer", math.type(got)) end
    end)

    it("round-trips strings of any bytes, booleans, NULL, reals and JSON", function()
      db:commit(nil, function(tx) define_all(tx) end)
      local r = file_row(10, 1, 1)
      r.path = "a\0b\255\254 c"
      r.encryption_key = ""
      r.path_is_relative = false
      r.file_order = N
      r.partial_file_info = 1.25
      db:commit(1, function(tx) insert_snapshot(tx, 1) tx:insert("ducklake_data_file", r) end)
      local r2 = file_row(11, 1, 2)
      r2.partial_file_info = {json = '{"a":[1,2,null]}'}
      db:commit(2, function(tx) insert_snapshot(tx, 2) tx:insert("ducklake_data_file", r2) end)
      local rows = rows_of(db, "ducklake_data_file")
      assert.are.equal(2, #rows)
      local got = rows[1]
      assert.are.equal("a\0b\255\254 c", got.path)
      assert.are.equal(7, #got.path)
      assert.are.equal("", got.encryption_key)
      assert.are.equal(N, got.file_order)
      assert.are.equal(N, got.mapping_id)
      assert.are.equal(false, got.path_is_relative)
      assert.are.equal(1.25, got.partial_file_info)
      assert.are.same({json = '{"a":[1,2,null]}'}, rows[2].partial_file_info)
      assert.are.same(r, got)
    end)

    it("rejects tables without a json string and other unsupported values", function()
      db:commit(nil, function(tx) define_all(tx) end)
      local r = file_row(10, 1, 1)
      r.partial_file_info = {1, 2}
      expect_err("EINVAL", "partial_file_info", db.commit, db, 1, function(tx) tx:insert("ducklake_data_file", r) end)
      r.partial_file_info = coroutine.create(function() end)
      expect_err("EINVAL", "partial_file_info", db.commit, db, 1, function(tx) tx:insert("ducklake_data_file", r) end)
    end)

    it("keeps int64 extremes exact", function()
      local MAX = moraine.json_decode("9223372036854775807")
      local MIN = moraine.json_decode("-9223372036854775808")
      local P53 = moraine.json_decode("9007199254740993") -- 2^53 + 1
      db:commit(nil, function(tx) define_all(tx) end)
      local r = file_row(10, 1, 1)
      r.record_count, r.file_size_bytes, r.row_id_start = MAX, MIN, P53
      db:commit(1, function(tx) insert_snapshot(tx, 1) tx:insert("ducklake_data_file", r) end)
      local got = rows_of(db, "ducklake_data_file")[1]
      assert.are.equal("9223372036854775807", istr(got.record_count))
      assert.are.equal("-9223372036854775808", istr(got.file_size_bytes))
      assert.are.equal("9007199254740993", istr(got.row_id_start))
      assert.are.equal(moraine.int64(MAX), moraine.int64(got.record_count))
      if IS_54 then
        assert.are.equal(math.maxinteger, got.record_count)
        assert.are.equal(math.mininteger, got.file_size_bytes)
      end
    end)

    if IS_JIT then
      it("accepts int64_t and uint64_t cdata under LuaJIT", function()
        local ffi = require "ffi"
        db:commit(nil, function(tx) define_all(tx) end)
        local r = file_row(10, 1, 1)
        r.record_count = ffi.cast("int64_t", 4611686018427387904) + 1 -- 2^62 + 1
        r.file_size_bytes = ffi.cast("uint64_t", 7)
        r.footer_size = ffi.cast("int64_t", -3)
        db:commit(1, function(tx) insert_snapshot(tx, 1) tx:insert("ducklake_data_file", r) end)
        local got = rows_of(db, "ducklake_data_file")[1]
        assert.are.equal("4611686018427387905", istr(got.record_count))
        assert.are.equal("cdata", type(got.record_count))
        assert.are.equal(7, got.file_size_bytes)
        assert.are.equal("number", type(got.file_size_bytes))
        assert.are.equal(-3, got.footer_size)
        r = file_row(11, 1, 2)
        r.record_count = ffi.cast("uint64_t", -1) -- 2^64 - 1: out of range
        expect_err("EINVAL", "record_count", db.commit, db, 2, function(tx) tx:insert("ducklake_data_file", r) end)
        r.record_count = ffi.new("double[1]")
        expect_err("EINVAL", "record_count", db.commit, db, 2, function(tx) tx:insert("ducklake_data_file", r) end)
        -- snapshot ids and scan options as cdata
        r.record_count = 1
        r.begin_snapshot = ffi.cast("int64_t", 2)
        db:commit(ffi.cast("int64_t", 2), function(tx) insert_snapshot(tx, 2) tx:insert("ducklake_data_file", r) end)
        assert.are.equal(2, db:last_snapshot())
        assert.are.equal(1, #rows_of(db, "ducklake_data_file", {at = ffi.cast("int64_t", 1)}))
      end)
    end

    it("puts, replaces and deletes non-temporal rows by position", function()
      db:commit(nil, function(tx)
        tx:define("ducklake_table_stats", COLS.ducklake_table_stats)
        tx:put_row("ducklake_table_stats", {table_id = 1, record_count = 1, next_row_id = 1, file_size_bytes = 1}, 0)
        tx:put_row("ducklake_table_stats", {table_id = 2, record_count = 2, next_row_id = 2, file_size_bytes = 2}, 1)
        tx:put_row("ducklake_table_stats", {table_id = 3, record_count = 3, next_row_id = 3, file_size_bytes = 3}, 5)
      end)
      db:commit(nil, function(tx)
        tx:put_row("ducklake_table_stats", {table_id = 2, record_count = 22, next_row_id = 2, file_size_bytes = 2}, 1)
        tx:delete_row("ducklake_table_stats", 0)
      end)
      local got = db:scan("ducklake_table_stats")
      assert.are.equal(2, #got)
      assert.are.equal(1, got[1].ord)
      assert.are.equal(22, got[1].row.record_count)
      assert.are.equal(5, got[2].ord)
      assert.are.equal(3, got[2].row.table_id)
      expect_err("ENOTFOUND", nil, db.commit, db, nil, function(tx) tx:delete_row("ducklake_table_stats", 0) end)
      expect_err("EINVAL", "missing column", db.commit, db, nil, function(tx)
        tx:put_row("ducklake_table_stats", {table_id = 9}, 9)
      end)
      assert.are.equal(2, #db:scan("ducklake_table_stats"))
    end)

    it("appends inserted rows in order, or places them at ord", function()
      db:commit(nil, function(tx)
        tx:define("ducklake_metadata", COLS.ducklake_metadata)
        tx:insert("ducklake_metadata", {key = "a", value = "1", scope = N, scope_id = N})
        tx:insert("ducklake_metadata", {key = "b", value = "2", scope = N, scope_id = N})
        tx:insert("ducklake_metadata", {key = "z", value = "0", scope = N, scope_id = N}, 100)
      end)
      local got = db:scan("ducklake_metadata")
      assert.are.equal(3, #got)
      assert.are.same({"a", "b", "z"}, {got[1].row.key, got[2].row.key, got[3].row.key})
      assert.is_true(got[1].ord < got[2].ord)
      assert.are.equal(100, got[3].ord)
    end)
  end)

  describe("reads", function()
    before_each(function() build_fixture(db) end)

    it("scans at the latest snapshot by default, at a given one, or every version", function()
      assert.are.same({table_row(1, 2, "t1b"), table_row(2, 1, "t2")}, rows_of(db, "ducklake_table"))
      local ended = table_row(1, 1, "t1")
      ended.end_snapshot = 2 -- the version visible at 1, as stored: ended at 2
      assert.are.same({ended, table_row(2, 1, "t2")}, rows_of(db, "ducklake_table", {at = 1}))
      local all = rows_of(db, "ducklake_table", {at = moraine.ALL})
      assert.are.equal(3, #all)
      local names = {}
      for _, r in ipairs(all) do names[#names + 1] = r.table_name end
      table.sort(names)
      assert.are.same({"t1", "t1b", "t2"}, names)
      for _, r in ipairs(all) do
        if r.table_name == "t1" then assert.are.equal(2, r.end_snapshot) end
      end
      assert.are.same({}, rows_of(db, "ducklake_table", {at = 0}))
    end)

    it("restricts a scan to one table with table_id", function()
      local files = rows_of(db, "ducklake_data_file", {table_id = 1})
      assert.are.equal(2, #files)
      for _, f in ipairs(files) do assert.are.equal(1, f.table_id) end
      assert.are.equal(1, #rows_of(db, "ducklake_data_file", {table_id = 2}))
      assert.are.equal(3, #rows_of(db, "ducklake_data_file"))
      assert.are.equal(2, #rows_of(db, "ducklake_data_file", {at = 1}))
    end)

    it("raises for unknown relations and options", function()
      expect_err("ENOTFOUND", nil, db.scan, db, "ducklake_nope")
      expect_err("EINVAL", "snapshot", db.scan, db, "ducklake_table", {snapshot = 1})
      expect_err("EINVAL", nil, db.scan, db, "ducklake_snapshot", {table_id = 1})
    end)

    it("groups embedded children by relation, in stored order", function()
      local got = db:scan("ducklake_data_file", {table_id = 1, at = 1})
      assert.are.equal(1, #got)
      local pv = got[1].children.ducklake_file_partition_value
      assert.are.equal(2, #pv)
      assert.are.same({data_file_id = 10, table_id = 1, partition_key_index = 0, partition_value = "2024"}, pv[1])
      assert.are.same({data_file_id = 10, table_id = 1, partition_key_index = 1, partition_value = "07"}, pv[2])
      -- the children are not copied into the row's own fields
      assert.is_nil(got[1].row.ducklake_file_partition_value)
      assert.is_nil(got[1].row.partition_value)
      local other = db:scan("ducklake_data_file", {table_id = 2})
      assert.are.same({}, other[1].children)
    end)

    it("rd:scan iterates row, children, ord", function()
      local n = db:read(function(rd)
        local count = 0
        for row, children, ord in rd:scan("ducklake_data_file", {at = moraine.ALL}) do
          count = count + 1
          assert.are.equal("table", type(row))
          assert.are.equal("table", type(children))
          assert.are.equal("number", type(ord))
          assert.are.equal("parquet", row.file_format)
        end
        return count
      end)
      assert.are.equal(3, n)
    end)

    it("rd:files is the data-file scan", function()
      db:read(function(rd)
        local ids = {}
        for row in rd:files(1, 1) do ids[#ids + 1] = row.data_file_id end
        assert.are.same({10}, ids)
        ids = {}
        for row in rd:files(1) do ids[#ids + 1] = row.data_file_id end
        table.sort(ids)
        assert.are.same({10, 11}, ids)
        ids = {}
        for row in rd:files() do ids[#ids + 1] = row.data_file_id end
        assert.are.equal(3, #ids)
      end)
    end)

    it("finds partition and sort specs", function()
      db:read(function(rd)
        assert.are.equal(2, rd:last_snapshot())
        local p1 = rd:partition_spec(1, 1)
        assert.are.equal(0, p1.partition_id)
        assert.are.equal(2, #p1.columns)
        assert.are.same({partition_id = 0, table_id = 1, partition_key_index = 0, column_id = 5, transform = "year"},
                        p1.columns[1])
        assert.are.equal("month", p1.columns[2].transform)
        assert.is_nil(p1.transform)
        assert.is_nil(p1.children)
        local p2 = rd:partition_spec(1, 2)
        assert.are.equal(1, p2.partition_id)
        assert.are.same({}, p2.columns)
        assert.are.equal(1, rd:partition_spec(1).partition_id)
        assert.is_nil(rd:partition_spec(2, 2))
        local byid = rd:partition_spec_by_id(1, 0)
        assert.are.equal(0, byid.partition_id)
        assert.are.equal(2, byid.end_snapshot)
        assert.are.equal(2, #byid.columns)
        assert.is_nil(rd:partition_spec_by_id(1, 7))
        local s = rd:sort_spec(1, 2)
        assert.are.equal(0, s.sort_id)
        assert.are.equal(1, #s.expressions)
        assert.are.equal("a", s.expressions[1].expression)
        assert.are.equal("NULLS_LAST", s.expressions[1].null_order)
        assert.is_nil(rd:sort_spec(2))
      end)
    end)

    it("returns fn's results and closes the read", function()
      local kept
      local a, b, c = db:read(function(rd)
        kept = rd
        return 1, nil, "x"
      end)
      assert.are.same({1, nil, "x"}, {a, b, c})
      assert.are.equal(3, select("#", db:read(function() return 1, nil, "x" end)))
      expect_err("ETXN", nil, kept.last_snapshot, kept)
      expect_err("ETXN", nil, kept.scan, kept, "ducklake_table")
      expect_err("ETXN", nil, kept.partition_spec, kept, 1)
    end)

    it("closes the read and re-raises when fn raises", function()
      local kept, mine = nil, {mine = 1}
      local ok, e = pcall(db.read, db, function(rd)
        kept = rd
        error(mine)
      end)
      assert.is_false(ok)
      assert.are.equal(mine, e)
      expect_err("ETXN", nil, kept.last_snapshot, kept)
    end)

    it("makes iterators raise, not crash, after their read ended", function()
      local it1, it2
      db:read(function(rd)
        it1 = rd:scan("ducklake_table")
        it2 = rd:scan("ducklake_data_file", {at = moraine.ALL})
        assert.is_table(it2()) -- consumed one row
      end)
      expect_err("ETXN", nil, it1)
      expect_err("ETXN", nil, it2)
      collectgarbage()
      collectgarbage()
      expect_err("ETXN", nil, it2)
    end)

    -- a C call on a read can run Lua code part way (an option table's __index,
    -- a finalizer run by an allocation); db:close() from there would free
    -- the read under the call (it crashed): it is refused, the call finishes
    it("refuses db:close() from an option's metamethod inside a read call, and answers", function()
      local want = #rows_of(db, "ducklake_table", {at = moraine.ALL})
      local refused = {}
      local opts = setmetatable({}, {__index = function(_, k)
        if k == "at" then
          local ok, e = pcall(db.close, db)
          refused[#refused + 1] = (not ok) and e.code or "closed"
          return moraine.ALL
        end
      end})
      db:read(function(rd)
        local n = 0
        for _ in rd:scan("ducklake_table", opts) do n = n + 1 end
        assert.are.equal(want, n)
        assert.are.equal(want, rd:scan_columns("ducklake_table", opts).n)
        local m = 0
        for _, k in rd:scan_json("ducklake_table", opts) do m = m + k end
        assert.are.equal(want, m)
      end)
      assert.are.equal(want, #db:scan("ducklake_table", opts))
      assert.is_true(#refused >= 4)
      for _, code in ipairs(refused) do assert.are.equal("ETXN", code) end
      assert.is_not_nil(db:last_snapshot()) -- still open
      db:close() -- outside any call: closes
      expect_err("EINVAL", "closed", db.relations, db)
      db = moraine.open(dir, {no_sync = true}) -- for after_each
    end)

    it("never crashes when a finalizer closes the catalog during its reads", function()
      db:commit(9, function(tx)
        insert_snapshot(tx, 9)
        for i = 1, 3000 do
          tx:insert("ducklake_metadata", {key = "k" .. i, value = string.rep("v", 40), scope = N, scope_id = N})
        end
      end)
      local function armed(h) -- garbage whose finalizer closes @h
        local fin = function() pcall(h.close, h) end
        if IS_JIT then
          local p = newproxy(true)
          getmetatable(p).__gc = fin
        else
          setmetatable({}, {__gc = fin})
        end
      end
      local answered, refused = 0, 0
      for _ = 1, 10 do
        local h = moraine.open(dir, {no_sync = true})
        for _ = 1, 200 do armed(h) end
        local ok, e = pcall(h.read, h, function(rd)
          local n = rd:scan_columns("ducklake_metadata").n
          local m = 0
          for _ in rd:scan("ducklake_metadata") do m = m + 1 end
          return n + m
        end)
        if ok then
          assert.are.equal(6000, e)
          answered = answered + 1
        else
          assert.is_true(moraine.is_error(e), tostring(e))
          -- closed before the read began (EINVAL "catalog is closed") or between two calls
          -- inside it (ETXN): the next call says so
          assert.is_true(e.code == "ETXN" or (e.code == "EINVAL" and tostring(e):find("closed", 1, true) ~= nil), tostring(e))
          refused = refused + 1
        end
        pcall(h.close, h)
      end
      collectgarbage()
      assert.are.equal(10, answered + refused)
    end)

    it("refuses a name or path with a NUL byte instead of reading it up to the NUL", function()
      db:read(function(rd)
        expect_err("EINVAL", "NUL byte", rd.table_id, rd, nil, "t1\0zz")
        expect_err("EINVAL", "NUL byte", rd.table_id, rd, "main\0x", "t1")
        assert.is_false(pcall(rd.scan_columns, rd, "ducklake_table\0junk"))
        expect_err("EINVAL", "NUL byte", rd.scan_columns, rd, "ducklake_table", {columns = {"table_id\0junk"}})
        expect_err("EINVAL", "NUL byte", rd.scan_columns, rd, "ducklake_data_file",
                   {children = {["ducklake_file_partition_value\0x"] = true}})
      end)
      local ok, e = pcall(moraine.open, dir .. "\0/elsewhere")
      assert.is_false(ok)
      assert.is_truthy(tostring(e):find("NUL byte", 1, true), tostring(e))
    end)

    it("keeps rows valid after the read and after later commits", function()
      local rows = rows_of(db, "ducklake_table")
      db:commit(3, function(tx)
        insert_snapshot(tx, 3)
        tx:end_row("ducklake_table", table_row(2, 1, "t2"))
      end)
      collectgarbage()
      assert.are.same({table_row(1, 2, "t1b"), table_row(2, 1, "t2")}, rows)
      assert.are.same({table_row(1, 2, "t1b")}, rows_of(db, "ducklake_table"))
    end)

    it("ends rows by key and raises ENOTLIVE for rows not live", function()
      db:commit(3, function(tx)
        insert_snapshot(tx, 3)
        tx:end_row("ducklake_table", {table_id = 2}) -- missing columns are NULL; the key decides
      end)
      assert.are.equal(1, #rows_of(db, "ducklake_table"))
      expect_err("ENOTLIVE", nil, db.commit, db, 4, function(tx)
        tx:end_row("ducklake_table", {table_id = 2})
      end)
      expect_err("EINVAL", "bogus", db.commit, db, 4, function(tx)
        tx:end_row("ducklake_table", {table_id = 1, bogus = 1})
      end)
      assert.are.equal(3, db:last_snapshot())
    end)

    it("supports db:close while a read and its iterators are open", function()
      local it
      local ok, e = pcall(db.read, db, function(rd)
        it = rd:scan("ducklake_table")
        db:close()
        return rd:last_snapshot()
      end)
      assert.is_false(ok)
      assert.are.equal("ETXN", e.code)
      expect_err("ETXN", nil, it)
      expect_err("EINVAL", "closed", db.read, db, function() end)
      collectgarbage()
      db = moraine.open(dir) -- for after_each
      assert.are.equal(2, db:last_snapshot())
    end)

    it("survives garbage collection of unfinished reads and iterators", function()
      for _ = 1, 50 do
        db:read(function(rd)
          local it = rd:scan("ducklake_data_file", {at = moraine.ALL})
          it()
          rd:scan("ducklake_table")
          rd:partition_spec(1, 1)
        end)
      end
      collectgarbage()
      collectgarbage()
      assert.are.equal(3, #db:scan("ducklake_data_file"))
    end)

    if IS_54 then
      it("closes the cursor on break (to-be-closed value) and keeps the read usable", function()
        db:read(function(rd)
          for _ = 1, 3 do
            for row in rd:scan("ducklake_data_file", {at = moraine.ALL}) do -- luacheck: ignore 512 (breaks on purpose)
              assert.is_table(row)
              break
            end
          end
          local n = 0
          for _ in rd:scan("ducklake_data_file", {at = moraine.ALL}) do n = n + 1 end
          assert.are.equal(3, n)
        end)
      end)
    end
  end)
end)

describe("json_decode", function()
  it("decodes objects, arrays, null, booleans, strings and numbers", function()
    local v = moraine.json_decode('{"a":[1,2.5,null,true,false],"b":{"c":"x\\u0000y"},"d":""}')
    assert.are.same({a = {1, 2.5, N, true, false}, b = {c = "x\0y"}, d = ""}, v)
    assert.are.equal(3, #v.b.c)
    assert.are.equal(N, moraine.json_decode("null"))
    assert.are.equal(7, moraine.json_decode("7"))
    assert.are.equal("s", moraine.json_decode('"s"'))
    if IS_54 then
      assert.are.equal("integer", math.type(moraine.json_decode("7")))
      assert.are.equal("float", math.type(moraine.json_decode("7.0")))
    end
  end)

  it("keeps integers exact", function()
    assert.are.equal("9223372036854775807", istr(moraine.json_decode("9223372036854775807")))
    assert.are.equal("-9007199254740993", istr(moraine.json_decode("-9007199254740993")))
    assert.are.equal(9007199254740992, moraine.json_decode("9007199254740992"))
    assert.are.equal("number", type(moraine.json_decode("9007199254740992")))
  end)

  it("raises EJSON with the position", function()
    expect_err("EJSON", "line 2", moraine.json_decode, '{"a":\n  x}')
    expect_err("EJSON", nil, moraine.json_decode, "")
    assert.has_error(function() moraine.json_decode({}) end)
  end)
end)

describe("read_ndjson", function()
  local path
  before_each(function() path = tmppath() end)
  after_each(function() os.remove(path) end)

  it("reads rows and the first object's column order, skipping blank lines", function()
    write_file(path, '{"z":1,"a":"x","m":null}\n\n  \n{"a":"y","z":2,"m":{"k":[1, 2]}}\r\n')
    local rows, cols = moraine.read_ndjson(path)
    assert.are.same({"z", "a", "m"}, cols)
    assert.are.same({{z = 1, a = "x", m = N}, {a = "y", z = 2, m = {json = '{"k":[1,2]}'}}}, rows)
  end)

  it("accepts a file holding one JSON array of objects", function()
    write_file(path, '[\n {"b":true,"a":1},\n {"a":2,"b":false}\n]\n')
    local rows, cols = moraine.read_ndjson(path)
    assert.are.same({"b", "a"}, cols)
    assert.are.same({{b = true, a = 1}, {a = 2, b = false}}, rows)
  end)

  it("returns empty arrays for an empty file or a lone newline", function()
    write_file(path, "")
    local rows, cols = moraine.read_ndjson(path)
    assert.are.same({}, rows)
    assert.are.same({}, cols)
    write_file(path, "\n")
    rows, cols = moraine.read_ndjson(path)
    assert.are.same({}, rows)
    assert.are.same({}, cols)
  end)

  it("names the file and line of malformed JSON", function()
    write_file(path, '{"a":1}\n{"a":2}\n{"a":\n')
    expect_err("EJSON", path .. ":3:", moraine.read_ndjson, path)
    write_file(path, '{"a":1}\n[1,2]\n')
    expect_err("EJSON", path .. ":2:", moraine.read_ndjson, path)
  end)

  it("raises EIO naming a missing file", function()
    os.remove(path)
    expect_err("EIO", path, moraine.read_ndjson, path)
  end)
end)

describe("import and export", function()
  local dir, dir2, out, db
  before_each(function()
    dir, dir2, out = tmppath(), tmppath(), tmppath()
    db = moraine.open(dir, {no_sync = true})
  end)
  after_each(function()
    db:close()
    rmrf(dir)
    rmrf(dir2)
    rmrf(out)
  end)

  local function all_entries(d, name)
    return d:scan(name, {at = moraine.ALL})
  end

  it("exports NDJSON files that read back as the rows, and imports them", function()
    build_fixture(db)
    local calls = {}
    assert.is_true(db:export_ndjson(out, {progress = function(done, total)
      calls[#calls + 1] = {done, total}
    end}))
    assert.is_true(#calls > 0)
    local rows, cols = moraine.read_ndjson(out .. "/ducklake_table.ndjson")
    assert.are.same(COLS.ducklake_table, cols)
    assert.are.equal(3, #rows)
    local t1 = table_row(1, 1, "t1")
    t1.end_snapshot = 2
    assert.are.same(t1, rows[1])
    local db2 = moraine.open(dir2, {no_sync = true})
    local progress = {}
    assert.is_true(db2:import_ndjson(out, {progress = function(done, total)
      progress[#progress + 1] = {done, total}
    end}))
    assert.is_true(#progress > 0)
    local last = progress[#progress]
    assert.are.equal(last[2], last[1])
    assert.are.equal(db:last_snapshot(), db2:last_snapshot())
    for _, name in ipairs(ORDER) do
      assert.are.same(all_entries(db, name), all_entries(db2, name), name)
    end
    db2:read(function(rd)
      assert.are.equal(2, #rd:partition_spec(1, 1).columns)
    end)
    db2:close()
  end)

  it("cancels an import when progress returns true, leaving the catalog empty", function()
    build_fixture(db)
    db:export_ndjson(out)
    local db2 = moraine.open(dir2, {no_sync = true})
    local e = expect_err("EINVAL", "cancel", db2.import_ndjson, db2, out, {progress = function() return true end})
    assert.is_true(moraine.is_error(e))
    assert.is_nil(db2:last_snapshot())
    assert.are.same({}, db2:relations())
    -- a non-true result does not cancel
    assert.is_true(db2:import_ndjson(out, {progress = function() return 1 end}))
    assert.are.equal(2, db2:last_snapshot())
    db2:close()
  end)

  it("re-raises an error raised by progress, unchanged", function()
    build_fixture(db)
    db:export_ndjson(out)
    local db2 = moraine.open(dir2, {no_sync = true})
    local mine = {mine = true}
    local ok, e = pcall(db2.import_ndjson, db2, out, {progress = function() error(mine) end})
    assert.is_false(ok)
    assert.are.equal(mine, e)
    assert.is_nil(db2:last_snapshot())
    -- closing from inside progress is refused
    ok, e = pcall(db2.import_ndjson, db2, out, {progress = function() db2:close() end})
    assert.is_false(ok)
    assert.are.equal("ETXN", e.code)
    assert.is_nil(db2:last_snapshot())
    db2:close()
  end)

  it("raises EEXIST importing into a non-empty catalog and EIO for a missing directory", function()
    build_fixture(db)
    db:export_ndjson(out)
    expect_err("EEXIST", nil, db.import_ndjson, db, out)
    local db2 = moraine.open(dir2, {no_sync = true})
    expect_err("EIO", nil, db2.import_ndjson, db2, out .. "/nope")
    db2:close()
  end)

  it("refuses to export into a directory holding a table file the catalog does not have, and overwrites its own", function()
    local db2 = support.import_fixture("s1_evolution")
    local sdir = support.tmpdir("stray")
    db2:export_ndjson(sdir)
    local snap = support.read(sdir .. "/ducklake_snapshot.ndjson")
    support.write(sdir .. "/ducklake_snapshot.ndjson", "stale\n")
    db2:export_ndjson(sdir) -- its own files: overwritten
    assert.equal(snap, support.read(sdir .. "/ducklake_snapshot.ndjson"))
    support.write(sdir .. "/ducklake_bogus.ndjson", "{}\n")
    support.write(sdir .. "/ducklake_snapshot.ndjson", "stale\n")
    expect_err("EEXIST", { "ducklake_bogus.ndjson", "empty directory" }, db2.export_ndjson, db2, sdir)
    assert.equal("stale\n", support.read(sdir .. "/ducklake_snapshot.ndjson")) -- nothing written
    db2:close()
  end)

  it("an export failing among its renames leaves the directory marked: imports refuse it until an export into it ends", function()
    local db2 = support.import_fixture("s1_evolution")
    local sdir = support.tmpdir("torn")
    db2:export_ndjson(sdir)
    local before = {}
    for _, name in ipairs(support.tables_of(sdir)) do before[name] = support.read(sdir .. "/" .. name .. ".ndjson") end
    -- the catalog moves on, and the rename of ducklake_table fails (a directory at its name): the tables renamed
    -- before it (in name order: ducklake_schema, ducklake_snapshot, ...) are the new export's, those after it the old
    -- one's
    db2:transaction(function(tx) tx:create_schema("later") end)
    local victim = "ducklake_table"
    os.remove(sdir .. "/" .. victim .. ".ndjson")
    support.mkdir(sdir .. "/" .. victim .. ".ndjson/in-the-way")
    expect_err("EIO", { victim .. ".ndjson: cannot rename", "while it renamed its files", ".moraine-export-incomplete" },
      db2.export_ndjson, db2, sdir)
    assert.is_true(exists(sdir .. "/.moraine-export-incomplete"))
    local renamed = 0
    for name, text in pairs(before) do
      if name ~= victim and support.read(sdir .. "/" .. name .. ".ndjson") ~= text then renamed = renamed + 1 end
    end
    assert.is_true(renamed > 0) -- a mix: some tables are the new export's
    local db3 = moraine.open(dir2, { no_sync = true })
    expect_err("EINVAL", { "an export into it was killed while it renamed its tables", ".moraine-export-incomplete" },
      db3.import_ndjson, db3, sdir)
    assert.is_nil(db3:last_snapshot())
    expect_err("EINVAL", { "an export into it was killed while it renamed its tables" }, require("moraine.sync").sync,
      db3, sdir)
    assert.is_nil(db3:last_snapshot())
    -- the next export into it ends the mix and the mark
    rmrf(sdir .. "/" .. victim .. ".ndjson")
    db2:export_ndjson(sdir)
    assert.is_false(exists(sdir .. "/.moraine-export-incomplete"))
    assert.is_true(db3:import_ndjson(sdir))
    assert.are.equal(db2:last_snapshot(), db3:last_snapshot())
    db3:close()
    db2:close()
  end)

  it("an export whose in-renames mark cannot be made fails whole: nothing renamed, no temporary file left", function()
    local db2 = support.import_fixture("s1_evolution")
    local sdir = support.tmpdir("no-mark")
    db2:export_ndjson(sdir)
    local before = {}
    for _, name in ipairs(support.tables_of(sdir)) do before[name] = support.read(sdir .. "/" .. name .. ".ndjson") end
    db2:transaction(function(tx) tx:create_schema("later") end)
    support.mkdir(sdir .. "/.moraine-export-incomplete/in-the-way") -- the mark's name taken by a directory
    expect_err("EIO", { ".moraine-export-incomplete: cannot write", "nothing was exported" }, db2.export_ndjson, db2, sdir)
    for name, text in pairs(before) do assert.are.equal(text, support.read(sdir .. "/" .. name .. ".ndjson"), name) end
    for _, f in ipairs(moraine.core.dir_entries(sdir)) do assert.is_nil(f:match("%.tmp$"), f) end
    db2:close()
  end)

  it("one export into a directory at a time: a second one while the first runs is refused (ECONFLICT), writing nothing", function()
    local db2 = support.import_fixture("s2_multi_table")
    local other = support.import_fixture("s1_evolution")
    local sdir = support.tmpdir("two-exports")
    local inner
    assert.is_true(db2:export_ndjson(sdir, { progress = function()
      if inner == nil then
        inner = expect_err("ECONFLICT", { "another export into it is running", "nothing was written" },
          other.export_ndjson, other, sdir)
      end
    end }))
    assert.is_truthy(inner)
    local db3 = moraine.open(dir2, { no_sync = true })
    assert.is_true(db3:import_ndjson(sdir))
    for _, rel in ipairs(db2:relations()) do
      assert.are.same(all_entries(db2, rel.name), all_entries(db3, rel.name), rel.name)
    end
    db3:close()
    other:close()
    db2:close()
  end)

  it("refuses to export strings that are not valid UTF-8", function()
    db:commit(1, function(tx)
      define_all(tx)
      insert_snapshot(tx, 1)
      tx:insert("ducklake_table", table_row(1, 1, "bad\255name"))
    end)
    expect_err("EINVAL", "ducklake_table", db.export_ndjson, db, out)
  end)

  it("refuses to export a double that is NaN or infinite (JSON has none: null would read back as NULL)", function()
    for i, case in ipairs({ { 0 / 0, "NaN" }, { math.huge, "Infinity" }, { -math.huge, "-Infinity" } }) do
      local cdir = support.tmpdir("nonfinite" .. i)
      local cdb = moraine.open(cdir, { no_sync = true })
      cdb:commit(nil, function(tx)
        tx:define("ducklake_extra_reals", { "v" })
        tx:put_row("ducklake_extra_reals", { v = 1.5 }, 0)
        tx:put_row("ducklake_extra_reals", { v = case[1] }, 1)
      end)
      local dest = support.tmpdir("nonfinite-out" .. i)
      expect_err("EINVAL", { "ducklake_extra_reals", "column 'v' holds " .. case[2], "JSON cannot carry",
        "nothing was exported" }, cdb.export_ndjson, cdb, dest)
      assert.is_false(exists(dest))
      cdb:close()
    end
  end)
end)

describe("rd:table_id", function()
  teardown(function() support.cleanup() end)

  it("finds a table's id by schema and name at a snapshot, dropped and re-created tables each in their lifetime (s2)", function()
    local db = support.import_fixture("s2_multi_table")
    local src = support.FIXTURES .. "/s2_multi_table/catalog/"
    local tables = moraine.read_ndjson(src .. "ducklake_table.ndjson")
    local schemas = moraine.read_ndjson(src .. "ducklake_schema.ndjson")
    local snaps = moraine.read_ndjson(src .. "ducklake_snapshot.ndjson")
    local checked, found, dropped = 0, 0, 0
    db:read(function(rd)
      for _, snap in ipairs(snaps) do
        local S = snap.snapshot_id
        for _, n in ipairs(tables) do
          local sname
          for _, sc in ipairs(schemas) do if sc.schema_id == n.schema_id then sname = sc.schema_name end end
          local want
          for _, t in ipairs(tables) do
            if support.visible(t, S) and t.table_name == n.table_name then
              for _, sc in ipairs(schemas) do
                if sc.schema_id == t.schema_id and sc.schema_name == sname and support.visible(sc, S) then want = t.table_id end
              end
            end
          end
          local got, msg = rd:table_id(sname, n.table_name, S)
          checked = checked + 1
          assert.are.equal(want, got, sname .. "." .. n.table_name .. " at " .. tostring(S))
          if want then
            found = found + 1
            if n.end_snapshot ~= moraine.null and n.table_id == want and n.table_name == "tmp" then dropped = dropped + 1 end
          else
            assert.truthy(msg:find(n.table_name, 1, true), msg)
          end
        end
      end
      -- schema nil is main (s2 keeps its tables in "sales"); S defaults to the newest
      local none, msg = rd:table_id(nil, "orders")
      assert.is_nil(none)
      assert.truthy(msg:find('"main"."orders"', 1, true), msg)
      assert.are.equal(rd:table_id("sales", "orders", rd:last_snapshot()), rd:table_id("sales", "orders"))
      local ok, e = pcall(rd.table_id, rd, "sales", 5, 1)
      assert.is_false(ok)
      assert.are.equal("EINVAL", e.code)
      ok, e = pcall(rd.table_id, rd, 5, "orders", 1)
      assert.is_false(ok)
      assert.are.equal("EINVAL", e.code)
    end)
    assert.is_true(found > 0 and found < checked)
    assert.is_true(dropped > 0, "the dropped tmp was never found while live")
    db:close()
  end)
end)

describe("rd:snapshot", function()
  teardown(function() support.cleanup() end)

  it("reads one snapshot row by its id: the scan's row and changes, nil for ids with no row (s2)", function()
    local db = support.import_fixture("s2_multi_table")
    local last = db:last_snapshot()
    local n, changes = 0, 0
    db:read(function(rd)
      for row, children in rd:scan("ducklake_snapshot", { at = moraine.ALL }) do
        local got, kids = rd:snapshot(row.snapshot_id)
        assert.are.same(row, got)
        assert.are.same(children, kids)
        n = n + 1
        if kids.ducklake_snapshot_changes then changes = changes + 1 end
      end
      -- nil: the newest, what DuckLake's ATTACH reads (MAX(snapshot_id))
      local newest = rd:snapshot()
      assert.are.equal(last, newest.snapshot_id)
      assert.are.same(rd:snapshot(last), newest)
      for _, id in ipairs({ last + 1, -1, math.maxinteger or 2 ^ 53, math.mininteger or -2 ^ 53 }) do
        assert.is_nil(rd:snapshot(id), tostring(id))
      end
      support.expect_err("EINVAL", "snapshot id must be an integer", rd.snapshot, rd, "5")
      support.expect_err("EINVAL", "snapshot id must be an integer", rd.snapshot, rd, 1.5)
    end)
    assert.are.equal(26, n)
    assert.is_true(changes > 0, "no snapshot row carried changes: children not compared")
    -- an expired snapshot has no row; its neighbours stay
    db:commit(nil, function(tx) tx:delete_snapshot(3) end)
    db:read(function(rd)
      assert.is_nil(rd:snapshot(3))
      assert.are.equal(2, rd:snapshot(2).snapshot_id)
      assert.are.equal(4, rd:snapshot(4).snapshot_id)
    end)
    local kept
    db:read(function(rd) kept = rd end)
    support.expect_err("ETXN", nil, kept.snapshot, kept, 1)
    db:close()
    -- a catalog with no snapshot (and no ducklake_snapshot table): nil, not an error
    local empty = moraine.open(support.tmpdir("empty"), { no_sync = true })
    empty:read(function(rd)
      assert.is_nil(rd:snapshot())
      assert.is_nil(rd:snapshot(0))
    end)
    empty:close()
  end)

  it("a snapshot row damaged in the file raises ECORRUPT (its CRC-32C); the other rows still read", function()
    local db, dir = support.import_fixture("s2_multi_table")
    local time = db:read(function(rd) return rd:snapshot(5).snapshot_time end)
    db:close()
    -- change the last digit of snapshot 5's snapshot_time wherever the file holds it
    local last = time:sub(-4, -4)
    assert.truthy(last:match("%d"), time)
    local damaged = time:sub(1, -5) .. (last == "0" and "1" or "0") .. time:sub(-3)
    local bytes = support.read(dir .. "/data.mdb")
    local k
    bytes, k = bytes:gsub(time:gsub("%p", "%%%0"), (damaged:gsub("%%", "%%%%")))
    assert.is_true(k > 0, "snapshot 5's time not found in the file")
    support.write(dir .. "/data.mdb", bytes)
    db = moraine.open(dir, { read_only = true })
    db:read(function(rd)
      support.expect_err("ECORRUPT", { "checksum", "ducklake_snapshot" }, rd.snapshot, rd, 5)
      assert.are.equal(6, rd:snapshot(6).snapshot_id)
      assert.are.equal(db:last_snapshot(), rd:snapshot().snapshot_id)
    end)
    db:close()
  end)
end)

describe("import progress", function()
  teardown(function() support.cleanup() end)

  it("reports the check phase first (rows read, total 0), then the rows written up to the total", function()
    local src = support.FIXTURES .. "/s1_evolution/catalog"
    local rows = 0
    for _, name in ipairs(support.tables_of(src)) do rows = rows + #moraine.read_ndjson(src .. "/" .. name .. ".ndjson") end
    local db = moraine.open(support.tmpdir("progress"), { no_sync = true })
    local calls = {}
    db:import_ndjson(src, { progress = function(done, total) calls[#calls + 1] = { done, total } end })
    db:close()
    -- the check phase: total 0, the last call of it with every row read
    local i = 1
    while calls[i] and calls[i][2] == 0 do i = i + 1 end
    assert.is_true(i > 1, "no check-phase call")
    assert.are.equal(rows, calls[i - 1][1])
    -- then the write phase, never back to total 0, ending at done == total
    for j = i, #calls do assert.is_true(calls[j][2] > 0) end
    assert.are.equal(calls[#calls][2], calls[#calls][1])
    assert.is_true(calls[#calls][1] >= rows)
    -- cancelling in the check phase leaves the catalog empty
    local db2 = moraine.open(support.tmpdir("progress2"), { no_sync = true })
    local ok, e = pcall(db2.import_ndjson, db2, src, { progress = function(_, total) return total == 0 end })
    assert.is_false(ok)
    assert.are.equal("EINVAL", e.code)
    assert.truthy(e.message:find("import cancelled", 1, true), e.message)
    assert.is_nil(db2:last_snapshot())
    db2:close()
  end)
end)

describe("moraine.sleep and core.dir_entries", function()
  after_each(support.cleanup)

  it("sleep waits about as long as asked and refuses a negative, NaN or over-long duration", function()
    local t0 = moraine.clock()
    assert.is_true(moraine.sleep(0.05))
    assert.is_true(moraine.clock() - t0 >= 0.04)
    support.expect_err("EINVAL", "sleep", moraine.sleep, -1)
    support.expect_err("EINVAL", "sleep", moraine.sleep, 0 / 0)
    support.expect_err("EINVAL", "sleep", moraine.sleep, 2e6)
  end)

  it("dir_entries lists a directory's names sorted, without . and ..; a missing one is EIO naming it", function()
    local dir = support.tmpdir("entries")
    support.mkdir(dir)
    support.write(dir .. "/b", "")
    support.write(dir .. "/a", "")
    assert.are.same({ "a", "b" }, moraine.core.dir_entries(dir))
    support.expect_err("EIO", dir .. "/none", moraine.core.dir_entries, dir .. "/none")
  end)
end)

describe("rd:scan with changed = {S1, S2}", function()
  after_each(function() support.cleanup() end)

  -- a row as text, every column in catalog order, to compare answers
  local function text(cols, row)
    local t = {}
    for i, c in ipairs(cols) do
      local v = row[c]
      t[i] = v == nil and "nil" or v == N and "NULL" or type(v) == "table" and ("json:" .. tostring(v.json)) or tostring(v)
    end
    return table.concat(t, "|")
  end

  for _, scenario in ipairs({ "s1_evolution", "s2_multi_table", "s3_edge_values" }) do
    it("gives exactly the versions that began or ended after the lower and by the higher snapshot, in rd:scan's order ("
      .. scenario .. ")", function()
      local db = support.import_fixture(scenario)
      local checked, kept = 0, 0
      db:read(function(rd)
        local last = tonumber(tostring(rd:last_snapshot()))
        for _, rel in ipairs(db:relations()) do
          if rel.placement ~= "child" then
            local has = {}
            for _, c in ipairs(rel.columns) do has[c] = true end
            local bcol = has.begin_snapshot and "begin_snapshot" or (rel.placement == "snapshot" and "snapshot_id") or nil
            local ecol = has.end_snapshot and "end_snapshot" or nil
            local all = {}
            for row in rd:scan(rel.name, { at = moraine.ALL }) do all[#all + 1] = row end
            for s1 = 0, last, 2 do
              for s2 = 0, last, 3 do
                local lo, hi = math.min(s1, s2), math.max(s1, s2)
                local function inside(v) return v ~= nil and v ~= N and tonumber(tostring(v)) > lo and tonumber(tostring(v)) <= hi end
                local want = {}
                for _, row in ipairs(all) do
                  if not bcol or inside(row[bcol]) or (ecol and inside(row[ecol])) then want[#want + 1] = text(rel.columns, row) end
                end
                local got = {}
                for row in rd:scan(rel.name, { at = moraine.ALL, changed = { s1, s2 } }) do got[#got + 1] = text(rel.columns, row) end
                assert.are.same(want, got, rel.name .. " changed " .. s1 .. ", " .. s2)
                checked = checked + 1
                kept = kept + #got
              end
            end
          end
        end
      end)
      assert.is_true(checked > 100 and kept > 0, checked .. " checks, " .. kept .. " rows kept")
      db:close()
    end)
  end

  it("composes with at and table_id, and db:scan takes it too", function()
    local db = support.import_fixture("s1_evolution")
    db:read(function(rd)
      local files = {}
      for f in rd:scan("ducklake_data_file", { at = 17, table_id = 1, changed = { 16, 17 } }) do files[#files + 1] = f end
      local want = {}
      for f in rd:scan("ducklake_data_file", { at = 17, table_id = 1 }) do
        if tonumber(tostring(f.begin_snapshot)) == 17 then want[#want + 1] = f end
      end
      assert.is_true(#want > 0)
      assert.are.equal(#want, #files)
      for i = 1, #want do assert.are.equal(tostring(want[i].data_file_id), tostring(files[i].data_file_id)) end
    end)
    local rows = db:scan("ducklake_snapshot", { at = moraine.ALL, changed = { 20, 18 } })
    assert.are.equal(2, #rows)
    assert.are.equal("19", tostring(rows[1].row.snapshot_id))
    assert.are.equal("20", tostring(rows[2].row.snapshot_id))
    db:close()
  end)

  it("refuses a changed that is not two integer snapshot ids, naming it", function()
    local db = support.import_fixture("s1_evolution")
    db:read(function(rd)
      for _, bad in ipairs({ 5, {}, { 1 }, { 1, 2, 3 }, { "a", 2 }, { 1, 2.5 } }) do
        support.expect_err("EINVAL", "option 'changed' must be {S1, S2}", rd.scan, rd, "ducklake_table", { changed = bad })
      end
      support.expect_err("EINVAL", "expected 'at', 'table_id' or 'changed'", rd.scan, rd, "ducklake_table", { change = { 1, 2 } })
    end)
    db:close()
  end)
end)

describe("moraine.create_temp_file and moraine.sync_path (how exports write their file)", function()
  teardown(function() support.cleanup() end)
  local function mode(p)
    local h = assert(io.popen("stat -c %a " .. support.q(p)))
    local m = h:read("*l")
    h:close()
    return m
  end

  it("creates a new empty file beside the path, its own each call, 0600 when private; sync_path syncs files and directories", function()
    local dir = support.tmpdir("temps")
    support.mkdir(dir)
    local path = dir .. "/out.sql"
    local seen = {}
    for i = 1, 50 do
      local name = moraine.create_temp_file(path, i % 2 == 0)
      assert.truthy(name:match("^" .. path:gsub("%p", "%%%0") .. "%.tmp%-[%w][%w][%w][%w][%w][%w]$"), name)
      assert.is_nil(seen[name], name)
      seen[name] = true
      assert.are.equal("", support.read(name))
      if i % 2 == 0 then assert.are.equal("600", mode(name)) else assert.are_not.equal("600", mode(name)) end
      assert.is_true(moraine.sync_path(name))
    end
    assert.are.equal(50, #support.temps_beside(path))
    assert.is_false(exists(path))
    assert.is_true(moraine.sync_path(dir))
    support.expect_err("EIO", { "cannot write " .. dir .. "/none/out.sql", "No such file" }, moraine.create_temp_file,
      dir .. "/none/out.sql")
    support.expect_err("EIO", { dir .. "/none", "cannot sync" }, moraine.sync_path, dir .. "/none")
    assert.has_error(function() moraine.create_temp_file(path .. "\0x") end)
  end)

  it("core.dir_entries lists a directory's names sorted, an empty one as {} (the ASan build checks the empty list)", function()
    local dir = support.tmpdir("entries")
    support.mkdir(dir)
    assert.are.same({}, moraine.core.dir_entries(dir))
    for _, n in ipairs({ "b", "a", ".c" }) do support.write(dir .. "/" .. n, "") end
    assert.are.same({ ".c", "a", "b" }, moraine.core.dir_entries(dir))
  end)
end)
