--- moraine.sync.import_sqlite (db:import_sqlite, moraine_import_sqlite): a
-- fresh import of a SQLite DuckLake catalog read in C through a temporary
-- NDJSON directory. Each fixture kept in SQLite is imported both ways (the
-- staged path of sync.sync, and this one) and every relation compared: its
-- columns, and every version of every row with its position (ord); the
-- exports byte for byte; a later sync continuing; edge values; what the C
-- reader does not take falling back to the staged path; the CLI's errors;
-- cancellation leaving nothing.
local moraine = require "moraine"
local sync = require "moraine.sync"
local support = require "support"
local pg = require "pg_support"

local FIX = support.FIXTURES
local function cat(sc) return FIX .. "/" .. sc .. "/catalog" end

local function open_new(tag)
  return moraine.open(support.tmpdir(tag), { no_sync = true })
end

-- a SQLite file of the catalog @db (moraine.sqlite's SQL script, loaded by sqlite3)
local sqlite_file = support.sqlite_of_catalog

-- a SQLite file of fixture @name (imported into a scratch catalog first)
local function sqlite_of_fixture(name)
  local ref = open_new("ref")
  ref:import_ndjson(cat(name))
  local file = sqlite_file(ref)
  ref:close()
  return file
end

-- Asserts the fast import does not take @file: sync.import_sqlite gives nil
-- and writes nothing to a new catalog. Returns the temporary directory it was given.
local function not_taken(file)
  local fast = open_new("fast")
  local src = sync.source(file)
  local tmp = support.tmpdir("fasttmp")
  assert.is_nil(sync.import_sqlite(fast, src, tmp))
  src:close()
  assert.is_nil(fast:last_snapshot())
  assert.are.equal(0, #fast:relations())
  fast:close()
  return tmp
end

-- `moraine -c DIR ARGS...` as a subprocess ({out, err, code, show})
local function moraine_in(dir, args)
  local a = { "-c", dir }
  for _, x in ipairs(args) do a[#a + 1] = x end
  return support.moraine(a)
end

-- a SQLite file made by running @sql
local function sqlite_of_sql(sql)
  local script = support.tmpdir("sql") .. ".sql"
  support.write(script, sql)
  return support.sqlite_from_script(script)
end

-- every relation of @db: its name, placement and columns, then every version
-- of every row with its ord, in scan order
local function relations_dump(db)
  local out = {}
  db:read(function(rd)
    for _, rel in ipairs(db:relations()) do
      out[#out + 1] = "== " .. rel.name .. " " .. tostring(rel.placement) .. " (" .. table.concat(rel.columns, ",") .. ")"
      for row, _, ord in rd:scan(rel.name, { at = moraine.ALL }) do
        out[#out + 1] = tostring(ord) .. " " .. sync.row_form(row, rel.columns)
      end
    end
  end)
  out[#out + 1] = "last=" .. tostring(db:last_snapshot())
  return table.concat(out, "\n")
end

-- @file imported the staged way (sync.sync) and by sync.import_sqlite into
-- new catalogs; asserts both hold the same and returns both and the results
local function both_ways(file)
  local staged = open_new("staged")
  local r1 = sync.sync(staged, file)
  local fast, dir = open_new("fast")
  local src = sync.source(file)
  local tmp = support.tmpdir("fasttmp")
  local r2 = sync.import_sqlite(fast, src, tmp)
  src:close()
  assert.is_not_nil(r2, "the C import took the file")
  assert.is_false(support.sh("test -e " .. support.q(tmp)), "the temporary directory is removed")
  assert.are.equal(relations_dump(staged), relations_dump(fast))
  assert.are.equal(support.dump(staged), support.dump(fast))
  for _, k in ipairs({ "to", "snapshots", "rows_changed", "version", "source", "source_newest" }) do
    assert.are.equal(tostring(r1[k]), tostring(r2[k]), k)
  end
  assert.is_nil(r2.from)
  return staged, fast, r1, r2, dir
end

describe("sync.import_sqlite (C reader + NDJSON import)", function()
  after_each(support.cleanup)

  local scenarios = { "s1_evolution", "s2_multi_table", "s3_edge_values", "s4_encrypted" }
  for i = 1, 6 do scenarios[#scenarios + 1] = string.format("corpus/seed_%04d", i) end
  for _, sc in ipairs(scenarios) do
    it("imports " .. sc .. " kept in SQLite exactly as sync does (every relation, every version, ords)", function()
      local ref = open_new("ref")
      ref:import_ndjson(cat(sc))
      local file = sqlite_file(ref)
      local staged, fast = both_ways(file)
      -- a later sync of the same file has nothing to do on either
      assert.are.equal(0, sync.sync(fast, file).snapshots)
      assert.are.equal(0, #sync.compare(fast, file))
      ref:close()
      staged:close()
      fast:close()
    end)
  end

  it("a later sync continues from a fast import of an earlier state: the same as syncing all of it", function()
    local sc = "s2_multi_table"
    local function file_upto(upto)
      local tables = pg.fixture_tables(cat(sc), upto)
      local db = open_new("state")
      db:import_rows(tables)
      local f = sqlite_file(db)
      db:close()
      return f
    end
    local early, whole = file_upto(5), file_upto(nil)
    local staged, fast = both_ways(early)
    local r1, r2 = sync.sync(staged, whole), sync.sync(fast, whole)
    assert.is_true(r2.snapshots > 0)
    assert.are.equal(r1.snapshots, r2.snapshots)
    assert.are.equal(relations_dump(staged), relations_dump(fast))
    assert.are.equal(0, #sync.compare(fast, whole))
    staged:close()
    fast:close()
  end)

  local EDGE = [[
CREATE TABLE ducklake_metadata(key VARCHAR NOT NULL, value VARCHAR NOT NULL, scope VARCHAR, scope_id BIGINT);
CREATE TABLE ducklake_snapshot(snapshot_id BIGINT PRIMARY KEY, snapshot_time TIMESTAMPTZ, schema_version BIGINT, next_catalog_id BIGINT, next_file_id BIGINT);
CREATE TABLE ducklake_snapshot_changes(snapshot_id BIGINT PRIMARY KEY, changes_made VARCHAR, author VARCHAR, commit_message VARCHAR, commit_extra_info VARCHAR);
CREATE TABLE ducklake_schema(schema_id BIGINT PRIMARY KEY, schema_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_name VARCHAR, path VARCHAR, path_is_relative BOOLEAN);
CREATE TABLE ducklake_tag(object_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, key VARCHAR, value VARCHAR);
CREATE TABLE ducklake_inlined_data_1_1(row_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, a BIGINT, b VARCHAR, c DOUBLE, d BOOLEAN, e BLOB);
CREATE TABLE ducklake_files_scheduled_for_deletion(data_file_id BIGINT, path VARCHAR, path_is_relative BOOLEAN, schedule_start TIMESTAMPTZ);
CREATE TABLE ducklake_empty_unknown(x BIGINT, y VARCHAR);
INSERT INTO ducklake_metadata VALUES ('version', '1.1-dev1', NULL, NULL), ('data_path', 'data/', NULL, NULL);
INSERT INTO ducklake_snapshot VALUES (0, '2025-01-01 00:00:00+00', 0, 1, 0), (1, '2025-01-02 00:00:00+00', 1, 1, 0),
  (3, '2025-01-03 00:00:00+00', 1, 1, 0);
INSERT INTO ducklake_snapshot_changes VALUES (0, 'created_schema:"main"', NULL, NULL, NULL), (1, 'x', 'me', 'a "quoted"\nmessage	with tab', ''),
  (3, 'y', '', NULL, NULL);
INSERT INTO ducklake_schema VALUES (0, 'a4d3c2b1-0000-0000-0000-000000000000', 0, NULL, 'main', 'main/', 1);
INSERT INTO ducklake_tag VALUES (9223372036854775807, 1, 3, 'k', ''), (-9223372036854775808, 1, NULL, '', NULL),
  (0, 1, NULL, 'ünï', 'ⓜ𝄞');
DELETE FROM ducklake_tag WHERE rowid = 1;
INSERT INTO ducklake_tag VALUES (5, 3, NULL, 'after a gap', 'v');
INSERT INTO ducklake_inlined_data_1_1 VALUES (0, 1, NULL, 9223372036854775807, '', 2.5, 1, X'616263'),
  (1, 1, 3, -9223372036854775808, NULL, 3.0, 0, NULL), (2, 3, NULL, 0, 'x', -0.0, 2, X''),
  (3, 3, NULL, 7, 'nul' || char(0) || 'byte', 1e300, NULL, 'text in a blob column');
INSERT INTO ducklake_files_scheduled_for_deletion VALUES (1, 'a.parquet', 1, '2025-01-01 00:00:00+00'), (2, 'b.parquet', 0, NULL);
DELETE FROM ducklake_files_scheduled_for_deletion WHERE data_file_id = 1;
INSERT INTO ducklake_files_scheduled_for_deletion VALUES (3, 'c.parquet', NULL, NULL);
]]
  EDGE = EDGE .. support.rest_of_catalog_sql(EDGE, "1.1-dev1")

  it("edge values: int64 limits, NULL and '', NUL bytes, reals, booleans, BLOBs, rowid gaps, an empty unknown table", function()
    local file = sqlite_of_sql(EDGE)
    local staged, fast = both_ways(file)
    -- the values themselves (not only that both ways agree)
    local rows = support.rows_of(fast, "ducklake_inlined_data_1_1", { at = moraine.ALL })
    table.sort(rows, function(a, b) return a.row_id < b.row_id end)
    assert.are.equal(math.maxinteger or rows[1].a, rows[1].a)
    assert.are.equal("", rows[1].b)
    assert.are.equal(moraine.null, rows[2].b)
    assert.are.equal(2.5, rows[1].c)
    assert.are.equal(true, rows[1].d)
    assert.are.equal(false, rows[2].d)
    assert.are.equal(2, rows[3].d)
    assert.are.equal("abc", rows[1].e)
    assert.are.equal("nul\0byte", rows[4].b)
    -- rowid - 1 is the position: the gaps left by the DELETEs stay
    local ords = {}
    fast:read(function(rd)
      for row, _, ord in rd:scan("ducklake_files_scheduled_for_deletion", { at = moraine.ALL }) do
        ords[#ords + 1] = tostring(row.data_file_id) .. "@" .. tostring(ord)
      end
    end)
    table.sort(ords)
    assert.are.same({ "2@1", "3@2" }, ords)
    -- the empty table moraine does not know keeps its columns
    assert.are.same({ "x", "y" }, fast:relation("ducklake_empty_unknown").columns)
    staged:close()
    fast:close()
  end)

  it("a string that is not UTF-8 in a column DuckLake defines: not taken (nil, nothing written); the CLI refuses it "
    .. "as the NDJSON import would, naming table, row and column, and leaves no catalog", function()
    for _, bad in ipairs({ "CAST(X'ff00fe' AS TEXT)", "X'ff00fe'" }) do
      local file = sqlite_of_sql(EDGE .. "INSERT INTO ducklake_tag VALUES (7, 3, NULL, 'bad', " .. bad .. ");")
      not_taken(file)
      local dir = support.tmpdir("cli")
      local r = support.moraine({ "-c", dir, "import", file })
      assert.are.equal(1, r.code, r.show)
      assert.is_truthy(r.err:find("ducklake_tag row 4: column 'value' holds '\\xff\\x00\\xfe', bytes that are not valid UTF-8",
        1, true), r.show)
      assert.is_false(support.sh("test -e " .. support.q(dir)))
    end
  end)

  it("a string that is not UTF-8 in a column moraine does not know, an infinite REAL: not taken (nil, nothing "
    .. "written); the CLI imports it the staged way", function()
    for _, extra in ipairs({
      "INSERT INTO ducklake_inlined_data_1_1 VALUES (4, 3, NULL, 1, 'inf', 9e999, NULL, NULL);",
      "INSERT INTO ducklake_inlined_data_1_1 VALUES (4, 3, NULL, 1, 'blob', 1, NULL, X'80');",
    }) do
      local file = sqlite_of_sql(EDGE .. extra)
      local tmp = not_taken(file)
      assert.is_false(support.sh("test -e " .. support.q(tmp)))
      local staged = open_new("staged")
      sync.sync(staged, file)
      local dir = support.tmpdir("cli")
      local r = support.moraine({ "-c", dir, "import", file })
      assert.are.equal(0, r.code, r.show)
      local cli = moraine.open(dir, { read_only = true })
      assert.are.equal(relations_dump(staged), relations_dump(cli))
      cli:close()
      staged:close()
    end
  end)

  it("not taken: a catalog that is not empty, a source that is not SQLite", function()
    local file = sqlite_of_sql(EDGE)
    local db = open_new("full")
    sync.sync(db, file)
    local src = sync.source(file)
    assert.is_nil(sync.import_sqlite(db, src, support.tmpdir("t")))
    src:close()
    local nd = sync.source(cat("s1_evolution"))
    assert.is_nil(sync.import_sqlite(db, nd, support.tmpdir("t")))
    db:close()
  end)

  it("cancelled in either phase (reading and checking, replaying): EINVAL, the catalog empty, no temporary directory", function()
    local file = sqlite_of_fixture("s2_multi_table")
    for phase = 1, 2 do
      local db = open_new("cancel")
      local src = sync.source(file)
      local tmp = support.tmpdir("fasttmp")
      local seen = 1
      support.expect_err("EINVAL", "import cancelled", sync.import_sqlite, db, src, tmp, { progress = function(_, total)
        if total ~= 0 then seen = 2 end
        return seen == phase
      end })
      src:close()
      assert.are.equal(phase, seen)
      assert.is_nil(db:last_snapshot())
      assert.are.equal(0, #db:relations())
      assert.is_false(support.sh("test -e " .. support.q(tmp)))
      -- and the catalog takes an import afterwards
      local src2 = sync.source(file)
      assert.is_not_nil(sync.import_sqlite(db, src2, tmp))
      src2:close()
      db:close()
    end
  end)

  it("a value of the wrong type is refused as the staged import refuses it (the check's own words, then file:line)", function()
    local file = sqlite_of_sql(EDGE .. "INSERT INTO ducklake_tag VALUES ('seven', 3, NULL, 'k', 'v');")
    local db = open_new("bad")
    local src = sync.source(file)
    local ok, e = pcall(sync.import_sqlite, db, src, support.tmpdir("t"))
    src:close()
    assert.is_false(ok)
    assert.are.equal("EINVAL", e.code)
    assert.matches("ducklake_tag%.ndjson:4: .*object_id", e.message)
    assert.is_nil(db:last_snapshot())
    db:close()
  end)

  describe("moraine import FILE.sqlite", function()
    it("Ctrl-C in the fast import stops the command (exit 130): the staged way does not read the file again", function()
      -- the lua and luajit commands raise "interrupted!" on SIGINT, from the progress callback here; the CLI
      -- ran the staged import to the end after it and exited 0 (a new user's report)
      local file = sqlite_of_fixture("s2_multi_table")
      local dir = support.tmpdir("intr")
      local fast, staged = sync.import_sqlite, sync.sync
      local staged_runs = 0
      sync.import_sqlite = function(db, src, tmp, opts)
        return fast(db, src, tmp, { progress = function() error("interrupted!") end, opts = opts })
      end
      sync.sync = function(...)
        staged_runs = staged_runs + 1
        return staged(...)
      end
      local main = require "moraine.cli.main"
      local okc, status = pcall(main.main, { "-c", dir, "import", file })
      sync.import_sqlite, sync.sync = fast, staged
      assert(okc, status)
      assert.are.equal(130, status)
      assert.are.equal(0, staged_runs)
      -- the next import starts afresh and completes
      local r = moraine_in(dir, { "import", file })
      assert.are.equal(0, r.code, r.show)
      local db = moraine.open(dir, { read_only = true })
      local ref = open_new("ref2")
      ref:import_ndjson(cat("s2_multi_table"))
      assert.are.equal(ref:last_snapshot(), db:last_snapshot())
      ref:close()
      db:close()
    end)

    it("Ctrl-C in the compaction after a fresh import stops the command (exit 130); the imported catalog stays whole",
      function()
      -- before, the command went on, exit 0, with the interrupt's Lua location in its note (a new user's report)
      local file = sqlite_of_fixture("s2_multi_table")
      local dir = support.tmpdir("intc")
      local compact = require "moraine.compact"
      local real = compact.compact
      compact.compact = function() error("interrupted!") end
      local main = require "moraine.cli.main"
      local okc, status = pcall(main.main, { "-c", dir, "import", file })
      compact.compact = real
      assert(okc, status)
      assert.are.equal(130, status)
      local r = moraine_in(dir, { "compare", file })
      assert.are.equal(0, r.code, r.show)
    end)

    it("gives what the staged import gives, leaves no temporary directory, and a later sync has nothing to do", function()
      local file = sqlite_of_fixture("s1_evolution")
      local dir = support.tmpdir("cli")
      local r = support.moraine({ "-c", dir, "import", file })
      assert.are.equal(0, r.code, r.show)
      assert.matches("DuckLake catalog version 1.1%-dev1", r.out)
      assert.matches("21 snapshots, last snapshot 20", r.out)
      assert.are.same({ "data.mdb", "lock.mdb" }, (function()
        local l = moraine.core.dir_entries(dir)
        table.sort(l)
        return l
      end)())
      local staged = open_new("staged")
      sync.sync(staged, file)
      local db = moraine.open(dir, { read_only = true })
      assert.are.equal(relations_dump(staged), relations_dump(db))
      db:close()
      staged:close()
      r = support.moraine({ "-c", dir, "sync", file })
      assert.are.equal(0, r.code, r.show)
      assert.matches("0 snapshots replayed", r.out)
    end)

    it("an import that did not end (its temporary directory left, unlocked): other commands refuse the catalog; the "
      .. "same import discards what it wrote and starts afresh", function()
      local file = sqlite_of_fixture("s1_evolution")
      local dir = support.tmpdir("cli")
      local r = support.moraine({ "-c", dir, "import", file })
      assert.are.equal(0, r.code, r.show)
      -- what a crash before the import's end leaves: the mark, and a store that may lack commits
      support.mkdir(dir .. "/.moraine-import-sqlite.tmp")
      support.write(dir .. "/.moraine-import-sqlite.tmp/ducklake_snapshot.ndjson", "{}\n")
      for _, args in ipairs({ { "tables" }, { "snapshots" }, { "files", "events" }, { "sync", file }, { "compare", file },
        { "sql", "SELECT 1" }, { "compact" }, { "verify" } }) do
        r = moraine_in(dir, args)
        assert.are.equal(1, r.code, r.show)
        assert.is_truthy(r.err:find("did not end", 1, true), r.show)
        assert.is_truthy(r.err:find("run the same 'moraine import' again", 1, true), r.show)
      end
      r = support.moraine({ "-c", dir, "import", file })
      assert.are.equal(0, r.code, r.show)
      assert.is_truthy(r.err:find("did not end; what it wrote was removed and this import starts afresh", 1, true), r.show)
      local l = moraine.core.dir_entries(dir)
      table.sort(l)
      assert.are.same({ "data.mdb", "lock.mdb" }, l)
      r = support.moraine({ "-c", dir, "compare", file })
      assert.are.equal(0, r.code, r.show)
      assert.are.equal("no differences\n", r.out)
    end)

    it("an import running (its temporary directory locked): other commands and a second import refuse, nothing changed",
      function()
      local file = sqlite_of_fixture("s1_evolution")
      local dir = support.tmpdir("cli")
      local r = support.moraine({ "-c", dir, "import", file })
      assert.are.equal(0, r.code, r.show)
      local before = support.read(dir .. "/data.mdb")
      local tmp = dir .. "/.moraine-import-sqlite.tmp"
      support.mkdir(tmp)
      local pidfile = support.tmpdir("pid")
      -- a stand-in for the running import: flock(1) holding the directory as moraine_import_sqlite does
      assert.is_true(support.sh("flock -x " .. support.q(tmp) .. " sleep 30 >/dev/null 2>&1 & echo $! > " .. support.q(pidfile)))
      local pid = support.read(pidfile):match("%d+")
      for _ = 1, 200 do
        if moraine.core.dir_locked(tmp) then break end
        os.execute("sleep 0.05")
      end
      assert.is_true(moraine.core.dir_locked(tmp))
      for _, args in ipairs({ { "tables" }, { "import", file }, { "sync", file } }) do
        r = moraine_in(dir, args)
        assert.are.equal(1, r.code, r.show)
        assert.is_truthy(r.err:find("is running", 1, true), r.show)
      end
      os.execute("kill " .. pid)
      assert.are.equal(before, support.read(dir .. "/data.mdb"))
      assert.is_true(support.sh("test -d " .. support.q(tmp)))
    end)

    it("holds its temporary directory locked while it runs, and removes it at the end", function()
      local file = sqlite_of_fixture("s2_multi_table")
      local db = open_new("locked")
      local src = sync.source(file)
      local tmp = support.tmpdir("fasttmp")
      local calls, held = 0, 0
      assert.is_not_nil(sync.import_sqlite(db, src, tmp, { progress = function()
        calls = calls + 1
        if moraine.core.dir_locked(tmp) then held = held + 1 end
      end }))
      src:close()
      db:close()
      assert.is_true(calls > 0)
      assert.are.equal(calls, held)
      assert.is_nil(moraine.core.dir_locked(tmp))
    end)

    it("a malformed source: the staged import's refusal, word for word; nothing left", function()
      -- a data file's table_id names no table
      local file = sqlite_of_sql(EDGE .. [[
INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, end_snapshot, path) VALUES (1, 42, 1, NULL, 'x.parquet');
]])
      local staged = open_new("staged")
      local ok, e = pcall(sync.sync, staged, file)
      staged:close()
      assert.is_false(ok)
      local dir = support.tmpdir("cli")
      local r = support.moraine({ "-c", dir, "import", file })
      assert.are.equal(1, r.code, r.show)
      assert.is_truthy(r.err:find(e.code .. ": " .. e.message, 1, true), r.show)
      assert.matches("nothing was imported", r.err)
      assert.is_false(support.sh("test -e " .. support.q(dir)))
    end)

    it("a file that is not SQLite, a SQLite file that is not DuckLake: the same errors as before", function()
      local f = support.tmpdir("notdb")
      support.write(f, "hello, not a database at all")
      local r = support.moraine({ "-c", support.tmpdir("c1"), "import", f })
      assert.are.equal(1, r.code, r.show)
      assert.is_truthy(r.err:find("neither a directory of <table>.ndjson files nor a SQLite database", 1, true), r.show)
      local g = sqlite_of_sql("CREATE TABLE t(x);")
      r = support.moraine({ "-c", support.tmpdir("c2"), "import", g })
      assert.are.equal(1, r.code, r.show)
      assert.is_truthy(r.err:find("is not a DuckLake catalog: it has no ducklake_snapshot table", 1, true), r.show)
    end)
  end)
end)
