-- Specs of moraine.sqlite (bindings/moraine/sqlite.lua) and of the binding
-- functions it rests on: db:import_rows, db:verify, db:stats, moraine.json_encode.
-- Needs the sqlite3 command line tool and LuaSQL's SQLite driver
-- (scripts/install-deps.sh installs both), and lmdb-utils (mdb_dump, mdb_load)
-- to damage a catalog for db:verify. Run under both runtimes, e.g.
--   LUA_PATH="$PWD/bindings/?.lua;$PWD/spec/?.lua;;" LUA_CPATH="$PWD/build/lua54/?.so;;" \
--     lua5.4 /usr/bin/busted spec/sqlite_spec.lua
-- and the same with build/luajit and `luajit /usr/bin/busted`.
local moraine = require "moraine"
local sqlite = require "moraine.sqlite"
local support = require "support"

local N = moraine.null
local IS_JIT = rawget(_G, "jit") ~= nil

-- ---- helpers ------------------------------------------------------------------
local sh, q = support.sh, support.q

-- exact int64 from its decimal text, on both runtimes
local function int(text) return moraine.json_decode(text) end
local MAX = int("9223372036854775807")
local MIN = int("-9223372036854775808")

-- decimal text of an integer (LuaJIT int64 cdata print with an LL suffix)
local function istr(v)
  if type(v) == "number" and not math.type then return string.format("%.0f", v) end
  return (tostring(v):gsub("U?LL$", ""))
end

local function exists(p)
  local f = io.open(p, "rb")
  if f then f:close() return true end
  return false
end

local function new_db(tag)
  local dir = support.tmpdir(tag)
  return moraine.open(dir, { no_sync = true }), dir
end

local function is_empty(db)
  return #db:relations() == 0 and db:last_snapshot() == nil
end

-- calls fn(...) expecting a moraine error with @code; returns the error
local expect_err = support.expect_err

-- Every file of two NDJSON export directories, byte for byte.
local function same_dirs(a, b)
  local ta, tb = support.tables_of(a), support.tables_of(b)
  assert.are.same(ta, tb)
  assert.is_true(#ta > 0)
  for _, name in ipairs(ta) do
    local x, y = support.read(a .. "/" .. name .. ".ndjson"), support.read(b .. "/" .. name .. ".ndjson")
    assert(x == y, name .. ".ndjson differs:\n" .. x .. "\n---- vs ----\n" .. y)
  end
end

-- export_sql -> sqlite3 -> sqlite.import into a new catalog; returns it and the SQLite file
local function through_sqlite(db, tag)
  local dir = support.tmpdir(tag or "sql")
  support.mkdir(dir)
  local script, file = dir .. "/catalog.sql", dir .. "/catalog.sqlite"
  assert.is_true(sqlite.export_sql(db, script))
  assert.is_true(sh("sqlite3 -bail " .. q(file) .. " < " .. q(script)), "sqlite3 refused " .. script)
  local db2 = new_db((tag or "sql") .. "-back")
  assert.is_true(sqlite.import(db2, file))
  return db2, file, script
end

-- A SQLite file made by the sqlite3 tool from @sql.
local function sqlite_file(sql, tag)
  local dir = support.tmpdir(tag or "sqlite")
  support.mkdir(dir)
  local file = dir .. "/x.sqlite"
  support.write(dir .. "/x.sql", sql)
  assert.is_true(sh("sqlite3 -bail " .. q(file) .. " < " .. q(dir .. "/x.sql")))
  return file
end

-- Rows of relation @name, every version, in the catalog's order.
local function rows_of(db, name)
  local es = db:scan(name, { at = moraine.ALL })
  table.sort(es, function(a, b) return a.ord < b.ord end)
  local out = {}
  for i, e in ipairs(es) do out[i] = e.row end
  return out
end

-- The tables of an NDJSON catalog directory, as db:import_rows takes them.
local function ndjson_tables(dir)
  local tables = {}
  for _, name in ipairs(support.tables_of(dir)) do
    local rows, cols = moraine.read_ndjson(dir .. "/" .. name .. ".ndjson")
    local arr = {}
    for i, r in ipairs(rows) do
      local a = {}
      for c, col in ipairs(cols) do a[c] = r[col] end
      arr[i] = a
    end
    tables[#tables + 1] = { name = name, columns = cols, rows = arr }
  end
  return tables
end

local META_COLS = { "key", "value", "scope", "scope_id" }
local SNAP_COLS = { "snapshot_id", "snapshot_time", "schema_version", "next_catalog_id", "next_file_id" }
local STATS_COLS = { "table_id", "record_count", "next_row_id", "file_size_bytes" }

after_each(function() support.cleanup() end)

-- ---- the round trip through SQLite ------------------------------------------------
describe("sqlite.valid_utf8", function()
  -- each runtime's answer (Lua 5.4: utf8.len; LuaJIT: the byte loop) on the
  -- edges of UTF-8: what PostgreSQL and the catalog's exports accept
  it("accepts UTF-8 up to U+10FFFF and NUL; refuses overlong forms, surrogates, beyond U+10FFFF, stray and "
    .. "missing continuation bytes", function()
    for _, s in ipairs({ "", "abc", "a\0b", "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80",
      "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF", "caf\xC3\xA9" }) do
      assert.is_true(sqlite.valid_utf8(s), ("%q"):format(s))
    end
    for _, s in ipairs({ "\x80", "\xBF", "\xC0\x80", "\xC1\xBF", "\xC2", "\xC2\x41", "\xE0\x9F\xBF", "\xED\xA0\x80",
      "\xED\xBF\xBF", "\xE1\x80", "\xF0\x8F\xBF\xBF", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xF8\x88\x80\x80\x80",
      "\xFE", "\xFF\x41\xFE", "ok\xC3" }) do
      assert.is_false(sqlite.valid_utf8(s), ("%q"):format(s))
    end
  end)
end)

describe("moraine.sqlite round trip", function()
  for _, scenario in ipairs(support.SCENARIOS) do
    it(scenario .. ": NDJSON -> export_sql -> sqlite3 -> sqlite.import gives back every file byte for byte",
      function()
        local db = support.import_fixture(scenario)
        local db2, _, script = through_sqlite(db, scenario)
        local text = support.read(script)
        assert.is_truthy(text:find("\nBEGIN;\n", 1, true))
        assert.is_truthy(text:find("\nCOMMIT;\n$"))
        assert.is_truthy(text:find("CREATE TABLE ducklake_snapshot (snapshot_id BIGINT PRIMARY KEY, "
          .. "snapshot_time TIMESTAMP WITH TIME ZONE,", 1, true))
        local a, b = support.tmpdir("a"), support.tmpdir("b")
        db:export_ndjson(a)
        db2:export_ndjson(b)
        same_dirs(a, b)
        same_dirs(support.FIXTURES .. "/" .. scenario .. "/catalog", b)
        assert.are.same({}, db2:verify())
        assert.are.equal(istr(db:last_snapshot()), istr(db2:last_snapshot()))
      end)
  end

  it("writes DuckLake's types, with the catalog's own column order, for every table", function()
    local db = support.import_fixture("s2_multi_table")
    local _, file = through_sqlite(db, "types")
    local p = assert(io.popen("sqlite3 " .. q(file) .. " \"SELECT name, type, pk FROM pragma_table_info('ducklake_data_file')\""))
    local out = p:read("a")
    p:close()
    assert.is_truthy(out:find("^data_file_id|BIGINT|1\ntable_id|BIGINT|0\n"))
    assert.is_truthy(out:find("\npath_is_relative|BOOLEAN|0\n", 1, true))
    p = assert(io.popen("sqlite3 " .. q(file) .. " \"SELECT type FROM pragma_table_info('ducklake_table') "
      .. "WHERE name = 'table_uuid'\""))
    assert.are.equal("UUID\n", p:read("a"))
    p:close()
  end)

  it("keeps exotic values exact: int64 extremes, NUL bytes, invalid UTF-8 in a column moraine does not know, "
    .. "numeric-looking text in UUID and TIMESTAMPTZ columns, quotes, reals, booleans", function()
    local times = { "12", " 1e5 ", "1.", "a\0b", "-.5e-3", "0x1A", "\127bad", "it's", "line\nbreak", "" }
    local snaps = {}
    for i, t in ipairs(times) do snaps[i] = { i - 1, t, 0, 1, 0 } end
    local db = new_db("exotic")
    db:import_rows(support.with_rest_of_catalog({
      { name = "ducklake_metadata", columns = META_COLS, rows = {
        { "version", "1.1-dev1", N, N },
        { "max", "\0", "table", MAX },
        { "min", "\1\2\127", "table", MIN },
        { "big", "é ünï", N, int("9007199254740993") },
      } },
      { name = "ducklake_snapshot", columns = SNAP_COLS, rows = snaps },
      { name = "ducklake_schema", columns = { "schema_id", "schema_uuid", "begin_snapshot", "end_snapshot",
        "schema_name", "path", "path_is_relative" }, rows = { { 0, "42", 0, N, "main", "main/", 1 } } },
      { name = "ducklake_inlined_data_1_1", columns = { "row_id", "begin_snapshot", "end_snapshot", "x", "y", "z" },
        rows = { { 0, 0, N, 2.5, true, "s\255" }, { 1, 0, N, -0.125, false, N } } },
    }, "1.1-dev1"))
    local db2 = through_sqlite(db, "exotic")
    local meta = rows_of(db2, "ducklake_metadata")
    assert.are.equal(4, #meta)
    assert.are.equal("\0", meta[2].value)
    assert.are.equal(istr(MAX), istr(meta[2].scope_id))
    assert.are.equal("\1\2\127", meta[3].value)
    assert.are.equal(istr(MIN), istr(meta[3].scope_id))
    assert.are.equal("é ünï", meta[4].value)
    assert.are.equal("9007199254740993", istr(meta[4].scope_id))
    local got = rows_of(db2, "ducklake_snapshot")
    assert.are.equal(#times, #got)
    for i, t in ipairs(times) do
      assert.are.equal(t, got[i].snapshot_time, "snapshot " .. (i - 1))
    end
    local schema = rows_of(db2, "ducklake_schema")[1]
    assert.are.equal("42", schema.schema_uuid)
    assert.are.equal(true, schema.path_is_relative)
    local inl = rows_of(db2, "ducklake_inlined_data_1_1")
    assert.are.equal(2.5, inl[1].x)
    assert.are.equal(-0.125, inl[2].x)
    assert.are.equal("s\255", inl[1].z)
    assert.are.equal(N, inl[2].z)
    -- booleans of a column moraine does not know come back as SQLite keeps them: 1/0
    assert.are.equal(1, inl[1].y)
    assert.are.equal(0, inl[2].y)
  end)

  it("export_sql reports the rows of each table to progress; true cancels and writes nothing", function()
    local db = support.import_fixture("s1_evolution")
    local rels = db:relations()
    local per, order = {}, {}
    local script = support.tmpdir("prog") .. ".sql"
    assert.is_true(sqlite.export_sql(db, script, { progress = function(done, total, name, i, n)
      assert.are.equal(#rels, n)
      assert.are.equal(rels[i].name, name)
      if not per[name] then per[name] = {}; order[#order + 1] = name end
      local l = per[name]
      if total == 0 and done > 0 then -- reading a large table (4096 rows at a time), before any write
        assert.are.equal(0, #l, name)
        return
      end
      l[#l + 1] = { done, total }
    end }))
    -- each table reported from 0 to its row count (all versions, as scanned)
    for _, name in ipairs(order) do
      local l = per[name]
      local rows = #db:scan(name, { at = moraine.ALL })
      assert.are.same({ 0, rows }, l[1], name)
      assert.are.same({ rows, rows }, l[#l], name)
    end
    os.remove(script)
    local again = support.tmpdir("prog2") .. ".sql"
    expect_err("EINVAL", { "export cancelled" }, sqlite.export_sql, db, again, { progress = function() return true end })
    assert.is_false(exists(again))
    assert.are.same({}, support.temps_beside(again))
    expect_err("EINVAL", { "unknown option 'nope'" }, sqlite.export_sql, db, again, { nope = 1 })
    db:close()
  end)

  it("export_sql: two exports to one file at once never write into each other's temporary file", function()
    local db = new_db("both")
    db:import_rows({ { name = "ducklake_metadata", columns = META_COLS, rows = { { "version", "1", N, N } } } })
    local other = new_db("both-other")
    other:import_rows({ { name = "ducklake_metadata", columns = META_COLS, rows = { { "version", "2", N, N } } } })
    local dir = support.tmpdir("both-out")
    support.mkdir(dir)
    local alone, other_alone, path = dir .. "/alone.sql", dir .. "/other.sql", dir .. "/catalog.sql"
    sqlite.export_sql(db, alone)
    sqlite.export_sql(other, other_alone)
    local inner = false
    -- the second export runs whole inside the first one's progress callback, after the first made its file
    sqlite.export_sql(db, path, { progress = function()
      if not inner then
        inner = true
        sqlite.export_sql(other, path)
        assert.are.equal(support.read(other_alone), support.read(path))
      end
    end })
    assert.is_true(inner)
    assert.are.equal(support.read(alone), support.read(path))
    assert.are.same({}, support.temps_beside(path))
    db:close()
    other:close()
  end)

  it("export_sql writes the infinities exactly and refuses NaN (SQLite would store NULL), naming table and column", function()
    local db = new_db("reals")
    db:commit(nil, function(tx)
      tx:define("ducklake_extra_reals", { "v" })
      tx:put_row("ducklake_extra_reals", { v = math.huge }, 0)
      tx:put_row("ducklake_extra_reals", { v = -math.huge }, 1)
    end)
    local dir = support.tmpdir("reals-out")
    support.mkdir(dir)
    sqlite.export_sql(db, dir .. "/inf.sql")
    local back = support.sqlite_from_script(dir .. "/inf.sql")
    local p = io.popen("sqlite3 " .. support.q(back) .. " 'SELECT v > 1e308, v < -1e308 FROM ducklake_extra_reals ORDER BY rowid'")
    assert.are.equal("1|0\n0|1\n", p:read("a"))
    p:close()
    db:commit(nil, function(tx) tx:put_row("ducklake_extra_reals", { v = 0 / 0 }, 2) end)
    expect_err("EINVAL", { "ducklake_extra_reals row 2", "column 'v' holds NaN", "read back as NULL" }, sqlite.export_sql,
      db, dir .. "/nan.sql")
    assert.is_false(exists(dir .. "/nan.sql"))
    assert.are.same({}, support.temps_beside(dir .. "/nan.sql"))
    db:close()
  end)

  it("export_sql refuses a path it cannot write, with EIO naming it, and leaves no file", function()
    local db = new_db("eio")
    db:import_rows({ { name = "ducklake_metadata", columns = META_COLS, rows = { { "version", "1", N, N } } } })
    local path = support.tmpdir("nodir") .. "/sub/catalog.sql"
    expect_err("EIO", { path }, sqlite.export_sql, db, path)
    assert.is_false(exists(path))
    assert.are.same({}, support.temps_beside(path))
  end)
end)

-- ---- sqlite.import --------------------------------------------------------------------
describe("sqlite.import", function()
  local SCHEMA_SQL = [[
CREATE TABLE ducklake_metadata (key VARCHAR NOT NULL, value VARCHAR NOT NULL, scope VARCHAR, scope_id BIGINT);
CREATE TABLE ducklake_snapshot (snapshot_id BIGINT PRIMARY KEY, snapshot_time TIMESTAMP WITH TIME ZONE,
  schema_version BIGINT, next_catalog_id BIGINT, next_file_id BIGINT);
INSERT INTO ducklake_snapshot VALUES (0, '2026-01-01 00:00:00+00', 0, 1, 0);
CREATE TABLE ducklake_schema (schema_id BIGINT PRIMARY KEY, schema_uuid UUID, begin_snapshot BIGINT,
  end_snapshot BIGINT, schema_name VARCHAR, path VARCHAR, path_is_relative BOOLEAN);
INSERT INTO ducklake_schema VALUES (0, 'u-0', 0, NULL, 'main', 'main/', 1);
CREATE TABLE not_ducklake (x INTEGER);
INSERT INTO not_ducklake VALUES (1);
]]
  SCHEMA_SQL = SCHEMA_SQL .. support.rest_of_catalog_sql(SCHEMA_SQL, "1.1-dev1")

  it("reads INTEGER values exactly (2^63-1, -2^63, 2^53+1), TEXT and BLOB bytes whole, 0/1 as booleans", function()
    local file = sqlite_file(SCHEMA_SQL .. [[
INSERT INTO ducklake_metadata VALUES ('version', '1.1-dev1', NULL, NULL);
INSERT INTO ducklake_metadata VALUES ('max', 'x', 'table', 9223372036854775807);
INSERT INTO ducklake_metadata VALUES ('min', 'y', 'table', -9223372036854775808);
INSERT INTO ducklake_metadata VALUES ('odd', 'z', 'table', 9007199254740993);
INSERT INTO ducklake_metadata VALUES ('nul', CAST(X'610062' AS TEXT), NULL, NULL);
INSERT INTO ducklake_metadata VALUES ('blob', X'00C3A9', NULL, NULL);
]])
    local before = support.read(file)
    local db = new_db("exact")
    assert.is_true(sqlite.import(db, file))
    local m = rows_of(db, "ducklake_metadata")
    assert.are.equal(6, #m)
    assert.are.equal("version", m[1].key)
    assert.are.equal(N, m[1].scope_id)
    assert.are.equal("9223372036854775807", istr(m[2].scope_id))
    assert.are.equal("-9223372036854775808", istr(m[3].scope_id))
    assert.are.equal("9007199254740993", istr(m[4].scope_id))
    if IS_JIT then assert.are.equal("cdata", type(m[4].scope_id)) end
    assert.are.equal("a\0b", m[5].value)
    assert.are.equal("\0\195\169", m[6].value)
    assert.are.equal(true, rows_of(db, "ducklake_schema")[1].path_is_relative)
    assert.is_nil(db:relation("not_ducklake"))
    assert.are.equal(0, db:last_snapshot())
    assert.are.equal(before, support.read(file), "the SQLite file changed")
  end)

  it("refuses text that is not UTF-8 in a text column DuckLake defines, TEXT or BLOB, naming table, row and column; "
    .. "the catalog stays empty", function()
    for _, bad in ipairs({ "CAST(X'FF41FE' AS TEXT)", "X'FF41FE'" }) do
      local file = sqlite_file(SCHEMA_SQL .. "INSERT INTO ducklake_metadata VALUES ('version', '1.1-dev1', NULL, NULL);\n"
        .. "INSERT INTO ducklake_metadata VALUES ('bad', " .. bad .. ", NULL, NULL);\n")
      local db = new_db("badutf8")
      expect_err("EINVAL", { "ducklake_metadata row 2", "column 'value'", "\\xffA\\xfe", "not valid UTF-8" },
        sqlite.import, db, file)
      assert.is_true(is_empty(db))
    end
  end)

  it("passes progress to db:import_rows", function()
    local file = sqlite_file(SCHEMA_SQL .. "INSERT INTO ducklake_metadata VALUES ('version', '1', NULL, NULL);\n")
    local db = new_db("progress")
    local calls = {}
    sqlite.import(db, file, { progress = function(done, total) calls[#calls + 1] = { done, total } end })
    -- first the rows read from SQLite (3: metadata, snapshot, schema; total not known yet), then the import
    assert.are.same({ 3, 0 }, calls[1])
    assert.are.same({ 3, 3 }, calls[#calls])
    local db2 = new_db("cancel")
    expect_err("EINVAL", { "import cancelled" }, sqlite.import, db2, file, { progress = function() return true end })
    assert.is_true(is_empty(db2))
    -- cancelled while reading: nothing imported either
    local db3 = new_db("cancel-read")
    expect_err("EINVAL", { "import cancelled" }, sqlite.import, db3, file,
      { progress = function(_, total) return total == 0 end })
    assert.is_true(is_empty(db3))
    expect_err("EINVAL", { "progress must be a function" }, sqlite.import, db3, file, { progress = 5 })
  end)

  it("refuses a file that is not SQLite, naming it; the catalog stays empty", function()
    local dir = support.tmpdir("notsql")
    support.mkdir(dir)
    local file = dir .. "/catalog.ndjson"
    support.write(file, '{"key":"version","value":"1.1-dev1"}\n')
    local db = new_db("notsql")
    expect_err("EINVAL", { file, "not a SQLite database" }, sqlite.import, db, file)
    assert.is_true(is_empty(db))
  end)

  it("refuses a SQLite file without DuckLake tables, naming the file and the missing tables", function()
    local db = new_db("nodl")
    local file = sqlite_file("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);\n")
    expect_err("EINVAL", { file, "not a DuckLake catalog", "ducklake_metadata", "ducklake_snapshot" },
      sqlite.import, db, file)
    assert.is_true(is_empty(db))
    local half = sqlite_file("CREATE TABLE ducklake_metadata (key VARCHAR, value VARCHAR, scope VARCHAR, "
      .. "scope_id BIGINT);\nINSERT INTO ducklake_metadata VALUES ('version', '1', NULL, NULL);\n")
    local e = expect_err("EINVAL", { half, "no ducklake_snapshot table" }, sqlite.import, db, half)
    assert.is_nil(e.message:find("no ducklake_metadata", 1, true))
    assert.is_true(is_empty(db))
  end)

  it("refuses a missing file with EIO, naming it, and does not create it", function()
    local db = new_db("missing")
    local file = support.tmpdir("missing") .. ".sqlite"
    expect_err("EIO", { file }, sqlite.import, db, file)
    assert.is_false(exists(file))
    assert.is_true(is_empty(db))
  end)

  it("refuses a catalog that is not empty (EEXIST) and a value of the wrong type (EINVAL naming table, row, "
    .. "column), leaving the catalog as it was", function()
    local file = sqlite_file(SCHEMA_SQL .. "INSERT INTO ducklake_metadata VALUES ('version', '1', NULL, NULL);\n")
    local db = new_db("full")
    sqlite.import(db, file)
    local before = support.dump(db)
    expect_err("EEXIST", nil, sqlite.import, db, file)
    assert.are.equal(before, support.dump(db))
    local bad = sqlite_file(SCHEMA_SQL .. "INSERT INTO ducklake_metadata VALUES ('version', '1', NULL, 'x');\n")
    local db2 = new_db("badval")
    expect_err("EINVAL", { "ducklake_metadata", "row 1", "scope_id" }, sqlite.import, db2, bad)
    assert.is_true(is_empty(db2))
  end)

  it("raises plain string errors for arguments of the wrong type", function()
    local db = new_db("args")
    local ok, e = pcall(sqlite.import, db, 42)
    assert.is_false(ok)
    assert.are.equal("string", type(e))
    assert.is_truthy(e:find("bad argument #2 to 'import'", 1, true))
    ok, e = pcall(sqlite.export_sql, "db", "x.sql")
    assert.is_false(ok)
    assert.is_truthy(e:find("bad argument #1 to 'export_sql'", 1, true))
  end)
end)

-- ---- db:import_rows ---------------------------------------------------------------------
describe("db:import_rows", function()
  for _, scenario in ipairs(support.SCENARIOS) do
    it(scenario .. ": the fixture's rows imported as rows export byte for byte as the fixture", function()
      local dir = support.FIXTURES .. "/" .. scenario .. "/catalog"
      local db = new_db("rows")
      assert.is_true(db:import_rows(ndjson_tables(dir)))
      local out = support.tmpdir("out")
      db:export_ndjson(out)
      same_dirs(dir, out)
    end)
  end

  it("takes 0/1 for BOOLEAN columns, int64 extremes, cdata on LuaJIT, reals and {json =} values", function()
    local db = new_db("values")
    local big = MAX
    if IS_JIT then big = require("ffi").cast("uint64_t", MAX) end -- a uint64_t cdata in int64 range
    db:import_rows({
      { name = "ducklake_metadata", columns = META_COLS, rows = { { "a", "b", N, big }, { "c", "d", N, MIN } } },
      { name = "ducklake_snapshot", columns = SNAP_COLS, rows = { { 0, "t", 0, 1, 0 } } },
      { name = "ducklake_schema", columns = { "schema_id", "schema_uuid", "begin_snapshot", "end_snapshot",
        "schema_name", "path", "path_is_relative" }, rows = { { 0, "u", 0, N, "main", "main/", 0 } } },
      { name = "ducklake_extra", columns = { "r", "j" }, rows = { { 0.25, { json = '{"a":[1,2]}' } } } },
    })
    local m = rows_of(db, "ducklake_metadata")
    assert.are.equal(istr(MAX), istr(m[1].scope_id))
    assert.are.equal(istr(MIN), istr(m[2].scope_id))
    assert.are.equal(false, rows_of(db, "ducklake_schema")[1].path_is_relative)
    local x = rows_of(db, "ducklake_extra")[1]
    assert.are.equal(0.25, x.r)
    assert.are.same({ json = '{"a":[1,2]}' }, x.j)
  end)

  it("refuses a value of the wrong type, naming table, row and column; the catalog stays empty", function()
    local db = new_db("wrongtype")
    local e = expect_err("EINVAL", { "ducklake_table_stats", "row 2", "record_count" }, db.import_rows, db, {
      { name = "ducklake_metadata", columns = META_COLS, rows = { { "version", "1", N, N } } },
      { name = "ducklake_table_stats", columns = STATS_COLS, rows = { { 1, 10, 10, 100 }, { 2, "ten", 10, 100 } } },
    })
    assert.is_nil(e.message:find("row 1", 1, true))
    assert.is_true(is_empty(db))
  end)

  it("refuses a value the binding cannot convert, a missing value, extra values and malformed tables", function()
    local db = new_db("badrows")
    local function rows(r) return { { name = "ducklake_metadata", columns = META_COLS, rows = r } } end
    expect_err("EINVAL", { "ducklake_metadata row 2", "column 'value'", "function" }, db.import_rows, db,
      rows({ { "a", "b", N, N }, { "a", print, N, N } }))
    expect_err("EINVAL", { "ducklake_metadata row 1", "column 'scope'", "moraine.null" }, db.import_rows, db,
      rows({ { "a", "b", nil, 1 } }))
    expect_err("EINVAL", { "ducklake_metadata row 1", "more values than the 4 columns" }, db.import_rows, db,
      rows({ { "a", "b", N, N, "extra" } }))
    expect_err("EINVAL", { "ducklake_metadata row 1", "array of values" }, db.import_rows, db, rows({ "abc" }))
    expect_err("EINVAL", { "tables[1]", "'name'" }, db.import_rows, db, { { columns = META_COLS } })
    expect_err("EINVAL", { "tables[1]", "unknown field 'colums'" }, db.import_rows, db,
      { { name = "ducklake_metadata", colums = META_COLS } })
    expect_err("EINVAL", { "ducklake_metadata", "column name 2" }, db.import_rows, db,
      { { name = "ducklake_metadata", columns = { "key", 7 } } })
    expect_err("EINVAL", { "given twice" }, db.import_rows, db, { { name = "ducklake_metadata", columns = META_COLS },
      { name = "ducklake_metadata", columns = META_COLS } })
    assert.is_true(is_empty(db))
    local ok, e = pcall(db.import_rows, db, "tables")
    assert.is_false(ok)
    assert.are.equal("string", type(e))
    assert.is_truthy(e:find("bad argument", 1, true))
  end)

  it("refuses a catalog that is not empty with EEXIST", function()
    local db = support.import_fixture("s1_evolution")
    local before = support.dump(db)
    expect_err("EEXIST", nil, db.import_rows, db,
      { { name = "ducklake_metadata", columns = META_COLS, rows = { { "version", "1", N, N } } } })
    assert.are.equal(before, support.dump(db))
  end)

  it("calls progress with step counts; true cancels and an error is re-raised unchanged", function()
    local tables = ndjson_tables(support.FIXTURES .. "/s2_multi_table/catalog")
    -- one step per row, plus one per version ended after the snapshot it began in
    local total = 0
    for _, t in ipairs(tables) do
      local b, e
      for i, c in ipairs(t.columns) do
        if c == "begin_snapshot" then b = i elseif c == "end_snapshot" then e = i end
      end
      for _, r in ipairs(t.rows) do
        total = total + 1
        if b and e and r[e] ~= N and r[e] > r[b] then total = total + 1 end
      end
    end
    local db = new_db("prog")
    local last
    db:import_rows(tables, { progress = function(done, tot) last = { done, tot } end })
    assert.are.same({ total, total }, last)
    local db2 = new_db("prog2")
    expect_err("EINVAL", { "import cancelled" }, db2.import_rows, db2, tables, { progress = function() return true end })
    assert.is_true(is_empty(db2))
    local boom = setmetatable({}, { __tostring = function() return "boom" end })
    local ok, e = pcall(db2.import_rows, db2, tables, { progress = function() error(boom) end })
    assert.is_false(ok)
    assert.are.equal(boom, e)
    assert.is_true(is_empty(db2))
  end)
end)

-- ---- db:verify and db:stats ---------------------------------------------------------------
describe("db:verify and db:stats", function()
  it("verify finds a sound catalog sound ({}) and reports progress up to the total", function()
    local db = support.import_fixture("s3_edge_values")
    local calls, last = 0, nil
    local found = db:verify({ progress = function(done, total)
      calls = calls + 1
      last = { done, total }
    end })
    assert.are.same({}, found)
    assert.is_true(calls >= 1)
    assert.are.equal(last[1], last[2])
    assert.is_true(last[2] > 0)
    assert.are.same({}, new_db("emptyv"):verify())
  end)

  it("verify reports a damaged value with its key and the problem", function()
    local db, dir = support.import_fixture("s1_evolution")
    db:close()
    -- damage the first current row's value with LMDB's own dump/load tools
    local p = assert(io.popen("mdb_dump " .. q(dir)))
    local lines, after_key = {}, false
    local damaged = false
    for line in p:lines() do
      if after_key and not damaged then
        line = " 00"
        damaged = true
      end
      after_key = line:match("^ 43") ~= nil and not damaged
      lines[#lines + 1] = line
    end
    p:close()
    assert.is_true(damaged)
    local dump = support.tmpdir("dump")
    support.write(dump, table.concat(lines, "\n") .. "\n")
    local broken = support.tmpdir("broken")
    support.mkdir(broken)
    assert.is_true(sh("mdb_load -f " .. q(dump) .. " " .. q(broken) .. " 2>/dev/null"))
    local bad = moraine.open(broken, { no_sync = true })
    local found = bad:verify()
    assert.are.equal(1, #found)
    assert.is_truthy(found[1].key:find("^C%("), found[1].key)
    assert.is_truthy(found[1].problem:find("does not decode", 1, true), found[1].problem)
  end)

  it("verify: progress returning true raises EINVAL, an error from it is re-raised unchanged", function()
    local db = support.import_fixture("s1_evolution")
    expect_err("EINVAL", { "verify cancelled" }, db.verify, db, { progress = function() return true end })
    local ok, e = pcall(db.verify, db, { progress = function() error({ mine = 1 }) end })
    assert.is_false(ok)
    assert.are.same({ mine = 1 }, e)
    ok, e = pcall(db.verify, db, { progress = 5 })
    assert.is_false(ok)
    assert.are.equal("string", type(e))
  end)

  it("stats lists the data files' subspaces with their entries and bytes", function()
    local db = support.import_fixture("s1_evolution")
    local st = db:stats()
    local by = {}
    for _, s in ipairs(st) do
      assert.is_truthy(("CHSRMN"):find(s.subspace, 1, true), s.subspace)
      assert.are.equal(s.subspace == "M" or s.subspace == "N", s.relation == nil)
      assert.is_true(s.entries > 0 and s.key_bytes > 0 and s.value_bytes > 0)
      by[s.subspace .. ":" .. tostring(s.relation)] = s
    end
    local live, ended = 0, 0
    for _, e in ipairs(db:scan("ducklake_data_file", { at = moraine.ALL })) do
      if e.row.end_snapshot == N then live = live + 1 else ended = ended + 1 end
    end
    assert.is_true(live > 0 and ended > 0)
    assert.are.equal(live, by["C:ducklake_data_file"].entries)
    assert.are.equal(ended, by["H:ducklake_data_file"].entries)
    assert.are.equal(#db:scan("ducklake_snapshot", { at = moraine.ALL }), by["S:ducklake_snapshot"].entries)
    assert.is_truthy(by["R:ducklake_metadata"])
    assert.is_truthy(by["M:nil"])
    assert.is_nil(by["C:ducklake_file_column_stats"]) -- embedded in the data files
    for _, s in ipairs(new_db("emptys"):stats()) do assert.are.equal("M", s.subspace) end
  end)
end)

-- ---- moraine.json_encode -----------------------------------------------------------------------
describe("moraine.json_encode", function()
  local enc = moraine.json_encode

  it("writes int64 extremes exactly, on both runtimes", function()
    assert.are.equal('{"max":9223372036854775807,"min":-9223372036854775808}', enc({ max = MAX, min = MIN }))
    assert.are.equal("9007199254740993", enc(int("9007199254740993")))
    assert.are.equal("[1,-2,0]", enc({ 1, -2, 0 }))
  end)

  it("writes null, booleans, reals, strings and nested values with sorted keys", function()
    assert.are.equal("null", enc(N))
    assert.are.equal('[true,false,null]', enc({ true, false, N }))
    assert.are.equal('{"a":[1,{"y":null,"z":0.5}],"b":{"c":"x","d":[]}}',
      enc({ b = { d = {}, c = "x" }, a = { 1, { z = 0.5, y = N } } }))
    assert.are.equal('"q\\"\\\\\\n\\u0000é"', enc('q"\\\n\0é'))
    assert.are.equal('{"x":[1,2],"y":"{\\"raw\\": 1}"}', enc({ x = { json = "[1, 2]" }, y = '{"raw": 1}' }))
    assert.are.equal(0.1, moraine.json_decode(enc(0.1)))
    assert.are.equal("[]", enc({}))
  end)

  it("orders the top-level object's keys by key_order, then the rest sorted; nested objects stay sorted", function()
    local v = { c = 1, a = 2, b = 3, d = { z = 1, y = 2 } }
    assert.are.equal('{"d":{"y":2,"z":1},"b":3,"a":2,"c":1}', enc(v, { "d", "missing", "b", "d" }))
    assert.are.equal('{"a":2,"b":3,"c":1,"d":{"y":2,"z":1}}', enc(v))
  end)

  it("refuses invalid UTF-8, naming the problem and where it is", function()
    expect_err("EINVAL", { "not valid UTF-8", "$.files[2].path" }, enc, { files = { { path = "ok" }, { path = "\255" } } })
    expect_err("EINVAL", { "object key is not valid UTF-8" }, enc, { ["\255"] = 1 })
  end)

  it("refuses cycles, mixed tables, non-string keys, NaN, functions and bad raw JSON", function()
    local t = { a = {} }
    t.a.back = t
    expect_err("EINVAL", { "cycle", "$.a.back" }, enc, t)
    expect_err("EINVAL", { "mixes array items" }, enc, { 1, 2, x = 3 })
    expect_err("EINVAL", { "mixes array items" }, enc, { [1] = 1, [3] = 3 })
    expect_err("EINVAL", { "keys must be strings" }, enc, { [2] = 1 })
    expect_err("EINVAL", { "NaN or infinity" }, enc, { x = 0 / 0 })
    expect_err("EINVAL", { "cannot encode a function", "$.f" }, enc, { f = print })
    expect_err("EJSON", { "not valid JSON" }, enc, { json = "{oops" })
    local ok, e = pcall(enc, { a = 1 }, { 1 })
    assert.is_false(ok)
    assert.are.equal("string", type(e))
    assert.is_truthy(e:find("key_order", 1, true))
  end)

  it("shares the same table twice without calling it a cycle", function()
    local shared = { 1 }
    assert.are.equal('{"a":[1],"b":[1]}', enc({ a = shared, b = shared }))
  end)
end)
