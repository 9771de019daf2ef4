--- A malformed DuckLake catalog is refused before anything is written, the
-- same way by `db:import_ndjson` (engine/ndjson.c), `moraine import` and
-- `moraine sync` (moraine.sync.check: the engine's checks run over the whole
-- source first), from an NDJSON directory and from a SQLite file: the error
-- names the file or table, the row and the column; the catalog is left as
-- it was, or absent when the command created it; the hint suggests no retry
-- that cannot succeed. Each case is one damage to a copy of the s1_evolution
-- fixture (an export of a real DuckLake catalog).
local moraine = require "moraine"
local sqlite = require "moraine.sqlite"
local support = require "support"
local pg = require "pg_support"

local S1 = support.FIXTURES .. "/s1_evolution/catalog"
local q = support.q

-- a copy of s1's directory
local function s1_copy()
  local dir = support.tmpdir("src")
  assert(support.sh("cp -r " .. q(S1) .. " " .. q(dir)))
  return dir
end

-- replaces line @n of @dir/@file by fn(line) (nil: deletes it)
local function edit_line(dir, file, n, fn)
  local path = dir .. "/" .. file
  local lines = {}
  for line in support.read(path):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  local new = fn(lines[n])
  if new == nil then table.remove(lines, n) else lines[n] = new end
  support.write(path, table.concat(lines, "\n") .. "\n")
end

-- removes key @key (and its value, an integer or null) from every row of @dir/@file
local function drop_key(dir, file, key)
  local path = dir .. "/" .. file
  local text, n = support.read(path):gsub('"' .. key .. '":%-?[%dnul]+,', "")
  local m
  text, m = text:gsub(',"' .. key .. '":%-?[%dnul]+}', "}")
  assert(n + m > 0, "no " .. key .. " in " .. path)
  support.write(path, text)
end

-- sets the catalog version of the copy @dir (its ducklake_metadata 'version' row)
local function set_version(dir, v)
  local path = dir .. "/ducklake_metadata.ndjson"
  local text, n = support.read(path):gsub('"key":"version","value":"[^"]*"', '"key":"version","value":"' .. v .. '"')
  assert(n == 1, text)
  support.write(path, text)
end

-- the fifth data file row (data file 4 of table 1, begun at snapshot 3):
-- @from replaced by @to, which must occur once
local function file4(from, to)
  return function(dir)
    edit_line(dir, "ducklake_data_file.ndjson", 5, function(line)
      assert(line:find('"data_file_id":4,', 1, true), line)
      local out, n = line:gsub(from:gsub("%p", "%%%0"), (to:gsub("%%", "%%%%")))
      assert(n == 1, "no " .. from .. " in " .. line)
      return out
    end)
  end
end

-- Each case: what is damaged, the damage to a copy of the directory, the
-- SQL doing the same to the SQLite copy (nil: none), and what the message
-- names (NDJSON; SQLite).
local CASES = {
  { what = "a row with one column, its id a string", edit = function(dir)
      edit_line(dir, "ducklake_data_file.ndjson", 5, function() return '{"data_file_id":"notanint"}' end)
    end, needles = { "ducklake_data_file.ndjson:5:", "row is missing column 'table_id'" } },
  { what = "a begin_snapshot NULL", edit = file4('"begin_snapshot":3,', '"begin_snapshot":null,'),
    sql = "UPDATE ducklake_data_file SET begin_snapshot = NULL WHERE data_file_id = 4",
    needles = { "ducklake_data_file.ndjson:5:", "'begin_snapshot' must be an integer" },
    sql_needles = { "ducklake_data_file row 5:", "'begin_snapshot' must be an integer" } },
  { what = "a table_id naming no table", edit = file4('"table_id":1,', '"table_id":77,'),
    sql = "UPDATE ducklake_data_file SET table_id = 77 WHERE data_file_id = 4",
    needles = { "ducklake_data_file.ndjson:5:", "table_id=77 names no ducklake_table row" },
    sql_needles = { "ducklake_data_file row 5:", "table_id=77 names no ducklake_table row" } },
  { what = "ducklake_column left out", edit = function(dir) assert(os.remove(dir .. "/ducklake_column.ndjson")) end,
    sql = "DROP TABLE ducklake_column",
    needles = { "the catalog has no ducklake_column.ndjson", "a DuckLake catalog of version 1.1-dev1 has that table" },
    sql_needles = { "the catalog has no ducklake_column table", "a DuckLake catalog of version 1.1-dev1 has that table" } },
  -- a table with no row to name it: without the check it read as empty (no delete file anywhere)
  { what = "ducklake_delete_file left out", edit = function(dir) assert(os.remove(dir .. "/ducklake_delete_file.ndjson")) end,
    sql = "DROP TABLE ducklake_delete_file",
    needles = { "the catalog has no ducklake_delete_file.ndjson", "a DuckLake catalog of version 1.1-dev1 has that table" },
    sql_needles = { "the catalog has no ducklake_delete_file table", "a DuckLake catalog of version 1.1-dev1 has that table" } },
  { what = "ducklake_partition_column left out", edit = function(dir)
      assert(os.remove(dir .. "/ducklake_partition_column.ndjson"))
    end, sql = "DROP TABLE ducklake_partition_column",
    needles = { "the catalog has no ducklake_partition_column.ndjson" },
    sql_needles = { "the catalog has no ducklake_partition_column table" } },
  { what = "snapshot 2's row deleted (its changes row stays)", edit = function(dir)
      edit_line(dir, "ducklake_snapshot.ndjson", 3, function(line)
        assert(line:find('"snapshot_id":2,', 1, true), line)
        return nil
      end)
    end, sql = "DELETE FROM ducklake_snapshot WHERE snapshot_id = 2",
    needles = { "ducklake_snapshot_changes.ndjson:3:", "no ducklake_snapshot row has this row's (snapshot_id=2)" },
    sql_needles = { "ducklake_snapshot_changes row 3:", "no ducklake_snapshot row has this row's (snapshot_id=2)" } },
  { what = "a table_id that is a string", edit = file4('"table_id":1,', '"table_id":"1",'),
    -- (SQLite's INTEGER affinity makes '1' an integer: a text it cannot convert)
    sql = "UPDATE ducklake_data_file SET table_id = 'one' WHERE data_file_id = 4",
    needles = { "ducklake_data_file.ndjson:5:", "column 'table_id' is BIGINT but the value is a string" },
    sql_needles = { "ducklake_data_file row 5:", "column 'table_id' is BIGINT but the value is a string" } },
  { what = "a table_id written as a floating-point number", edit = file4('"table_id":1,', '"table_id":1.0,'),
    -- (SQLite's INTEGER affinity makes 1.0 an integer: a fraction stays REAL)
    sql = "UPDATE ducklake_data_file SET table_id = 1.5 WHERE data_file_id = 4",
    needles = { "ducklake_data_file.ndjson:5:", "column 'table_id' is BIGINT but the value is a floating-point number" },
    sql_needles = { "ducklake_data_file row 5:", "column 'table_id' is BIGINT but the value is a floating-point number" } },
  { what = "an end_snapshot below the begin_snapshot", edit = file4('"end_snapshot":null,', '"end_snapshot":2,'),
    sql = "UPDATE ducklake_data_file SET end_snapshot = 2 WHERE data_file_id = 4",
    needles = { "ducklake_data_file.ndjson:5:", "'end_snapshot' must be NULL or not below begin_snapshot" },
    sql_needles = { "ducklake_data_file row 5:", "'end_snapshot' must be NULL or not below begin_snapshot" } },
  { what = "an end_snapshot after the last snapshot", edit = file4('"end_snapshot":null,', '"end_snapshot":999,'),
    sql = "UPDATE ducklake_data_file SET end_snapshot = 999 WHERE data_file_id = 4",
    needles = { "ducklake_data_file.ndjson:5:", "'end_snapshot' names snapshot 999, after the last snapshot" },
    sql_needles = { "ducklake_data_file row 5:", "'end_snapshot' names snapshot 999, after the last snapshot" } },
  { what = "a negative end_snapshot", edit = file4('"end_snapshot":null,', '"end_snapshot":-5,'),
    sql = "UPDATE ducklake_data_file SET end_snapshot = -5 WHERE data_file_id = 4",
    needles = { "ducklake_data_file.ndjson:5:", "'end_snapshot' must be NULL or not below begin_snapshot" },
    sql_needles = { "ducklake_data_file row 5:", "'end_snapshot' must be NULL or not below begin_snapshot" } },
  { what = "a file column stats row whose data file is absent", edit = function(dir)
      edit_line(dir, "ducklake_file_column_stats.ndjson", 1, function(line)
        local out, n = line:gsub('"data_file_id":0,', '"data_file_id":4000,')
        assert(n == 1, line)
        return out
      end)
    end, sql = "UPDATE ducklake_file_column_stats SET data_file_id = 4000 WHERE rowid = "
      .. "(SELECT MIN(rowid) FROM ducklake_file_column_stats)",
    needles = { "ducklake_file_column_stats.ndjson:1:", "no ducklake_data_file row has this row's (table_id=1, "
      .. "data_file_id=4000)" },
    sql_needles = { "ducklake_file_column_stats row 1:", "no ducklake_data_file row has this row's (table_id=1, "
      .. "data_file_id=4000)" } },
  { what = "record_count left out of every data file row (a dropped column)", edit = function(dir)
      drop_key(dir, "ducklake_data_file.ndjson", "record_count")
    end, sql = "ALTER TABLE ducklake_data_file DROP COLUMN record_count",
    needles = { "ducklake_data_file.ndjson: column 'record_count' is missing (no row has it): a DuckLake catalog of "
      .. "version 1.1-dev1 has it" },
    sql_needles = { "ducklake_data_file: column 'record_count' is missing (the table has no such column)" } },
}

local function run(args)
  local r = support.moraine(args)
  r.show = r.show or ""
  return r
end

local function exists(p) return support.sh("test -e " .. q(p)) end

-- the catalog @dir as text (every table, every version), for "unchanged"
local function dump_of(dir)
  local db = moraine.open(dir)
  local d = support.dump(db)
  db:close()
  return d
end

describe("a malformed DuckLake catalog", function()
  after_each(function() support.cleanup() end)

  local good_sqlite
  -- s1 as a SQLite DuckLake catalog (moraine export), made once per case
  local function sqlite_copy()
    if not good_sqlite or not exists(good_sqlite) then
      local cat = support.tmpdir("s1cat")
      local r = run({ "-c", cat, "import", S1 })
      assert.are.equal(0, r.code, r.show)
      good_sqlite = support.tmpdir("s1") .. ".sqlite"
      r = run({ "-c", cat, "export", good_sqlite })
      assert.are.equal(0, r.code, r.show)
    end
    local file = support.tmpdir("bad") .. ".sqlite"
    assert(support.sh("cp " .. q(good_sqlite) .. " " .. q(file)))
    return file
  end

  for _, c in ipairs(CASES) do
    it(c.what .. ": db:import_ndjson, moraine import and moraine sync refuse it alike, naming file, line and column; "
      .. "nothing is written and no catalog directory is left", function()
      local src = s1_copy()
      c.edit(src)
      -- the Lua API: refused, the catalog as empty as it was
      local api_dir = support.tmpdir("api")
      local db = moraine.open(api_dir, { create = true })
      local e = support.expect_err("EINVAL", c.needles, db.import_ndjson, db, src)
      assert.is_nil(db:last_snapshot())
      assert.are.equal(0, #db:relations())
      db:close()
      -- moraine import and moraine sync into a new directory: the same error
      -- (the engine's message, path prefix aside), exit 1, no directory left
      local msg = e.message:gsub("^" .. src:gsub("%p", "%%%0") .. "/", "")
      for _, cmd in ipairs({ "import", "sync" }) do
        local dir = support.tmpdir(cmd)
        local r = run({ "-c", dir, cmd, src })
        assert.are.equal(1, r.code, r.show)
        assert.is_truthy(r.err:find("moraine: EINVAL: ", 1, true), r.show)
        assert.is_truthy(r.err:find(msg, 1, true), "'" .. msg .. "' not in: " .. r.show)
        assert.is_falsy(r.err:find("again to continue", 1, true), r.show)
        assert.is_false(exists(dir), dir .. " was left behind: " .. r.show)
        assert.is_truthy(r.err:find("was removed", 1, true), r.show)
      end
    end)

    if c.sql then
      it(c.what .. ", in a SQLite catalog: moraine import and sqlite.import (db:import_rows) refuse it alike, naming "
        .. "table, row and column; no catalog directory is left", function()
        local file = sqlite_copy()
        assert.is_true(support.sh("sqlite3 " .. q(file) .. " " .. q(c.sql)))
        local api_dir = support.tmpdir("api")
        local db = moraine.open(api_dir, { create = true })
        local e = support.expect_err("EINVAL", c.sql_needles, sqlite.import, db, file)
        assert.is_nil(db:last_snapshot())
        db:close()
        local dir = support.tmpdir("imp")
        local r = run({ "-c", dir, "import", file })
        assert.are.equal(1, r.code, r.show)
        assert.is_truthy(r.err:find("moraine: EINVAL: " .. e.message, 1, true), "'" .. e.message .. "' not in: "
          .. r.show)
        assert.is_false(exists(dir), r.show)
      end)
    end
  end

  it("a source without any snapshot row (every file or table empty): moraine import and moraine sync refuse it, "
    .. "nothing is written and no catalog directory is left", function()
    local src = s1_copy()
    for _, name in ipairs(support.tables_of(src)) do support.write(src .. "/" .. name .. ".ndjson", "") end
    local file = sqlite_copy()
    local names = {}
    local p = assert(io.popen("sqlite3 " .. q(file) .. " \"SELECT name FROM sqlite_master WHERE type = 'table'\""))
    for name in p:lines() do names[#names + 1] = "DELETE FROM " .. name .. ";" end
    p:close()
    assert.is_true(support.sh("sqlite3 " .. q(file) .. " " .. q(table.concat(names, " "))))
    for _, c in ipairs({ { "import", src }, { "sync", src }, { "import", file } }) do
      local dir = support.tmpdir("empty")
      local r = run({ "-c", dir, c[1], c[2] })
      assert.are.equal(1, r.code, r.show)
      assert.is_truthy(r.err:find("moraine: EINVAL: sync: " .. c[2] .. " holds no ducklake_snapshot row", 1, true), r.show)
      assert.is_false(exists(dir), r.show)
    end
  end)

  it("a column DuckLake added after the catalog's version may be missing (an old catalog imports as it is); one "
    .. "of its version may not", function()
    for _, c in ipairs({
      { version = "0.1", key = "mapping_id", ok = true },
      { version = "0.3-dev1", key = "partial_max", ok = true },
      { version = "1.0", key = "row_group_count", ok = true },
      { version = "1.1-dev1", key = "row_group_count", ok = true }, -- (a dev version: the step may be half done)
      { version = "0.2", key = "mapping_id", ok = false },
      { version = "1.0", key = "partial_max", ok = false },
      { version = "9.9", key = "mapping_id", ok = true }, -- (an unknown version: only what 0.1 had is required)
      { version = "9.9", key = "record_count", ok = false },
    }) do
      local src = s1_copy()
      set_version(src, c.version)
      drop_key(src, "ducklake_data_file.ndjson", c.key)
      local db = moraine.open(support.tmpdir("ver"), { create = true })
      if c.ok then
        db:import_ndjson(src)
        assert.are.equal(20, db:last_snapshot())
        for _, col in ipairs(db:relation("ducklake_data_file").columns) do assert.are_not.equal(c.key, col) end
      else
        support.expect_err("EINVAL", { "ducklake_data_file.ndjson: column '" .. c.key .. "' is missing",
          "version " .. c.version .. " has it" }, db.import_ndjson, db, src)
        assert.is_nil(db:last_snapshot())
      end
      db:close()
    end
  end)

  it("into a directory the user had: it stays, without what the import created; a catalog that was there is "
    .. "unchanged", function()
    local src = s1_copy()
    CASES[3].edit(src) -- table_id 77
    -- an empty directory: kept, and empty again
    local dir = support.tmpdir("mine")
    support.mkdir(dir)
    support.write(dir .. "/notes.txt", "mine")
    local r = run({ "-c", dir, "import", src })
    assert.are.equal(1, r.code, r.show)
    assert.is_true(exists(dir))
    assert.are.equal("mine", support.read(dir .. "/notes.txt"))
    assert.is_false(exists(dir .. "/data.mdb"), r.show)
    -- a catalog an import of the good source filled: the bad one is refused
    -- (the whole source is checked first) and the catalog is unchanged
    local cat = support.tmpdir("cat")
    r = run({ "-c", cat, "import", S1 })
    assert.are.equal(0, r.code, r.show)
    local before = dump_of(cat)
    r = run({ "-c", cat, "import", src })
    assert.are.equal(1, r.code, r.show)
    assert.is_truthy(r.err:find("table_id=77 names no ducklake_table row", 1, true), r.show)
    assert.is_truthy(r.err:find("nothing was changed", 1, true), r.show)
    assert.are.equal(before, dump_of(cat))
  end)

  it("an expired snapshot (its row and its changes row gone, as DuckLake's expiry leaves them; rows still begin "
    .. "at it) is no damage: db:import_ndjson and moraine import accept it alike", function()
    local src = s1_copy()
    edit_line(src, "ducklake_snapshot.ndjson", 3, function() return nil end)          -- snapshot 2
    edit_line(src, "ducklake_snapshot_changes.ndjson", 3, function(line)
      assert(line:find('"snapshot_id":2,', 1, true), line)
      return nil
    end)
    assert.is_truthy(support.read(src .. "/ducklake_partition_info.ndjson"):find('"begin_snapshot":2,', 1, true))
    local a, b = support.tmpdir("a"), support.tmpdir("b")
    local r = run({ "-c", a, "import", src })
    assert.are.equal(0, r.code, r.show)
    assert.is_truthy(r.out:find("20 snapshots, last snapshot 20", 1, true), r.show)
    local db = moraine.open(b, { create = true })
    db:import_ndjson(src)
    db:close()
    assert.are.equal(dump_of(b), dump_of(a))
  end)

  it("a valid catalog imports as before: moraine import, moraine sync and db:import_ndjson give the same catalog",
    function()
    local a, b, c = support.tmpdir("a"), support.tmpdir("b"), support.tmpdir("c")
    assert.are.equal(0, run({ "-c", a, "import", S1 }).code)
    assert.are.equal(0, run({ "-c", b, "sync", S1 }).code)
    local db = moraine.open(c, { create = true })
    db:import_ndjson(S1)
    db:close()
    local dc = dump_of(c)
    assert.are.equal(dc, dump_of(a))
    assert.are.equal(dc, dump_of(b))
  end)

  it("a later sync round whose source lost a table (dropped from the SQLite file, or its NDJSON file removed) is "
    .. "refused and changes nothing; before, it read as empty", function()
    local file = sqlite_copy()
    local dir = support.tmpdir("follower")
    assert.are.equal(0, run({ "-c", dir, "sync", file }).code)
    local orig = sqlite_copy()
    assert.is_true(support.sh("sqlite3 " .. q(file) .. " 'DROP TABLE ducklake_table_stats'"))
    local r = run({ "-c", dir, "sync", file })
    assert.are.equal(1, r.code, r.show)
    assert.is_truthy(r.err:find("the catalog has no ducklake_table_stats table: a DuckLake catalog of version 1.1-dev1 has "
      .. "that table", 1, true), r.show)
    local src = s1_copy()
    local ndir = support.tmpdir("nfollower")
    assert.are.equal(0, run({ "-c", ndir, "sync", src }).code)
    assert(os.remove(src .. "/ducklake_file_partition_value.ndjson"))
    r = run({ "-c", ndir, "sync", src })
    assert.are.equal(1, r.code, r.show)
    assert.is_truthy(r.err:find("the catalog has no ducklake_file_partition_value.ndjson", 1, true), r.show)
    assert.are.equal(0, run({ "-c", ndir, "compare", S1 }).code)
    r = run({ "-c", dir, "compare", orig })
    assert.are.equal(0, r.code, r.show)
  end)

  describe("from PostgreSQL", function()
    local server, c
    local pg_setup, pg_teardown = pg.server_hooks(function(s, conn) server, c = s, conn end)
    lazy_setup(pg_setup)
    lazy_teardown(pg_teardown)

    it("moraine sync into a new directory refuses a data file naming no table, naming table, row and column; no "
      .. "directory is left; the source repaired, it syncs", function()
      local src = "postgres:" .. server.conninfo
      pg.load(c, S1, nil)
      pg.exec(c, "UPDATE ducklake_data_file SET table_id = 77 WHERE data_file_id = 4")
      local dir = support.tmpdir("replica")
      local r = run({ "-c", dir, "sync", src })
      assert.are.equal(1, r.code, r.show)
      assert.is_truthy(r.err:find("moraine: EINVAL: ducklake_data_file row ", 1, true), r.show)
      assert.is_truthy(r.err:find("table_id=77 names no ducklake_table row", 1, true), r.show)
      assert.is_false(exists(dir), r.show)
      pg.exec(c, "UPDATE ducklake_data_file SET table_id = 1 WHERE data_file_id = 4")
      r = run({ "-c", dir, "sync", src })
      assert.are.equal(0, r.code, r.show)
      assert.are.equal(0, run({ "-c", dir, "compare", S1 }).code)
    end)
  end)
end)
