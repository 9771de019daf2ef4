--- moraine.sync: sync from NDJSON, SQLite and a real PostgreSQL server
-- (tests/pg/pg-server.sh), compare, conflicts with other writers, and a sync
-- killed with SIGKILL then run again. Expected catalogs come from the real
-- fixtures (tests/fixtures/ducklake): the NDJSON import of the same fixture
-- and the fixture's own rows.
local moraine = require "moraine"
local sqlite = require "moraine.sqlite"
local sync = require "moraine.sync"
local support = require "support"
local pg = require "pg_support"

local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"
local FIX = support.FIXTURES
local function cat(sc) return FIX .. "/" .. sc .. "/catalog" end

-- the fixture's last snapshot id (its ducklake_snapshot rows)
local function fixture_last(sc)
  local last
  for _, r in ipairs(moraine.read_ndjson(cat(sc) .. "/ducklake_snapshot.ndjson")) do
    if last == nil or r.snapshot_id > last then last = r.snapshot_id end
  end
  return last
end

local function open_new(tag)
  return moraine.open(support.tmpdir(tag), { no_sync = true })
end

local function describe_diffs(d)
  local out = {}
  for i = 1, math.min(#d, 10) do
    out[#out + 1] = d[i].table .. " " .. d[i].side .. " "
      .. (d[i].row and sync.row_form(d[i].row, { "begin_snapshot", "end_snapshot", "snapshot_id" })
        or d[i].missing_column and ("(column " .. d[i].column .. ")") or "(table)")
  end
  return #d .. " differences: " .. table.concat(out, "; ")
end

local function assert_same(db, source)
  local d = sync.compare(db, source)
  assert.are.equal(0, #d, describe_diffs(d))
end

-- every row of every versioned table visible at snapshot s, as a sorted list
-- of row forms without end_snapshot (a row ended after s reads the same at s
-- whether its end is known yet or not)
local function state_at(db, s)
  local out = {}
  db:read(function(rd)
    for _, rel in ipairs(db:relations()) do
      if rel.placement ~= "rows" then
        local cols = {}
        for _, col in ipairs(rel.columns) do
          if col ~= "end_snapshot" then cols[#cols + 1] = col end
        end
        for row in rd:scan(rel.name, { at = s }) do out[#out + 1] = rel.name .. ":" .. sync.row_form(row, cols) end
      end
    end
  end)
  table.sort(out)
  return table.concat(out, "\n")
end

describe("moraine.sync", function()
  after_each(function() support.cleanup() end)

  describe("from NDJSON", function()
    for _, sc in ipairs({ "s1_evolution", "s2_multi_table", "s3_edge_values", "s4_encrypted" }) do
      it("replays " .. sc .. " into an empty catalog: the same catalog as the NDJSON import, compare finds nothing",
        function()
          local db = open_new("sync")
          local r = sync.sync(db, cat(sc))
          assert.is_nil(r.from)
          assert.are.equal("1.1-dev1", r.version)
          assert.are.equal(fixture_last(sc), r.to)
          assert.is_true(r.snapshots >= 1)
          assert_same(db, cat(sc))
          local ref = support.import_fixture(sc)
          assert.are.equal(support.dump(ref), support.dump(db))
          -- exported again: the fixture's files byte for byte
          local out = support.tmpdir("exp")
          db:export_ndjson(out)
          for _, name in ipairs(support.tables_of(cat(sc))) do
            assert.are.equal(support.read(cat(sc) .. "/" .. name .. ".ndjson"), support.read(out .. "/" .. name .. ".ndjson"),
              name)
          end
          -- a second sync has nothing to do
          local again = sync.sync(db, cat(sc))
          assert.are.equal(0, again.snapshots)
          assert.are.equal(0, again.rows_changed)
          assert.are.equal(r.to, again.from)
          ref:close()
          db:close()
        end)
    end

    for _, v in ipairs({ { "v01", "0.1" }, { "v04", "0.4" } }) do
      it("copies DuckLake's old catalog " .. v[1] .. " (version " .. v[2] .. ") row for row and reports its version",
        function()
          local src = FIX .. "/migrations/" .. v[1] .. "/before"
          local db = open_new("old")
          local r = sync.sync(db, src)
          assert.are.equal(v[2], r.version)
          assert.is_true(r.snapshots >= 1)
          assert_same(db, src)
          -- every file written back byte for byte (old table names and columns included)
          local out = support.tmpdir("oldexp")
          db:export_ndjson(out)
          for _, name in ipairs(support.tables_of(src)) do
            assert.are.equal(support.read(src .. "/" .. name .. ".ndjson"), support.read(out .. "/" .. name .. ".ndjson"),
              name)
          end
          db:close()
        end)
    end

    it("replays a catalog whose middle snapshot DuckLake expired (rows still begin at it): as the C import does",
      function()
        local src = support.tmpdir("expired")
        support.mkdir(src)
        for _, name in ipairs(support.tables_of(cat("s1_evolution"))) do
          local text = support.read(cat("s1_evolution") .. "/" .. name .. ".ndjson")
          if name == "ducklake_snapshot" or name == "ducklake_snapshot_changes" then
            text = text:gsub('[^\n]*"snapshot_id":3,[^\n]*\n', "")
          end
          support.write(src .. "/" .. name .. ".ndjson", text)
        end
        local db = open_new("expired-sync")
        local r = sync.sync(db, src)
        assert.are.equal(20, r.to)
        assert_same(db, src)
        local ref = open_new("expired-import")
        ref:import_ndjson(src)
        assert.are.equal(support.dump(ref), support.dump(db))
        ref:close()
        db:close()
      end)

    it("db:commit's partial option: a commit without its ducklake_snapshot row only when partial", function()
      local db = open_new("partial")
      sync.sync(db, cat("s1_evolution"))
      support.expect_err("ESNAPSHOT", "has no ducklake_snapshot row", db.commit, db, 21, function() end)
      support.expect_err("EINVAL", "the only option is partial", db.commit, db, 21, function() end, { bogus = true })
      support.expect_err("EINVAL", "the only option is partial", db.commit, db, 21, function() end, { partial = 1 })
      assert.are.equal(20, db:last_snapshot())
      assert.is_true(db:commit(21, function() end, { partial = true }))
      assert.are.equal(21, db:last_snapshot())
      db:close()
    end)

    it("compare names each row the catalog has and the source lacks, and the reverse", function()
      local db = open_new("cmp")
      sync.sync(db, cat("s1_evolution"))
      local d = sync.compare(db, cat("s2_multi_table"))
      assert.is_true(#d > 0)
      local sides = {}
      for _, x in ipairs(d) do sides[x.side] = true end
      assert.is_true(sides.catalog and sides.source)
      db:close()
    end)

    it("compare names a column of a table one side has and the other lacks, then compares rows on the columns both have",
      function()
        local db = open_new("cmpcol")
        sync.sync(db, cat("s1_evolution"))
        local src = support.tmpdir("cmpcol-src")
        support.mkdir(src)
        for _, f in ipairs(support.tables_of(cat("s1_evolution"))) do
          local text = support.read(cat("s1_evolution") .. "/" .. f .. ".ndjson")
          if f == "ducklake_column" then text = text:gsub(',"column_type":"[^"]*"', "") end
          if f == "ducklake_table" then text = text:gsub("}\n", ',"owner":"x"}\n') end
          support.write(src .. "/" .. f .. ".ndjson", text)
        end
        local d = sync.compare(db, src)
        assert.are.same({
          { table = "ducklake_column", side = "catalog", column = "column_type", missing_column = true },
          { table = "ducklake_table", side = "source", column = "owner", missing_column = true },
        }, d)
        -- the one difference left when only the columns differ is a row's: compared without column_type
        local text = support.read(src .. "/ducklake_column.ndjson")
        support.write(src .. "/ducklake_column.ndjson", (text:gsub('"column_name":"note"', '"column_name":"memo"')))
        d = sync.compare(db, src)
        assert.are.equal(4, #d, describe_diffs(d))
        assert.are.equal("column_type", d[1].column)
        for i, side in ipairs({ "source", "catalog" }) do
          local x = d[i + 1]
          assert.are.equal("ducklake_column", x.table)
          assert.are.equal(side, x.side)
          assert.are.equal(i == 1 and "memo" or "note", x.row.column_name)
          assert.are.equal(1, x.count)
          for _, c in ipairs(x.columns) do assert.are_not.equal("column_type", c) end
          assert.are.equal(12, #x.columns)
        end
        assert.are.equal("owner", d[4].column)
        db:close()
      end)

    it("refuses an unknown option, and a source that is neither a directory nor SQLite", function()
      local db = open_new("bad")
      support.expect_err("EINVAL", "unknown option 'bogus'", sync.sync, db, cat("s1_evolution"), { bogus = 1 })
      local f = support.tmpdir("notdb")
      support.write(f, "hello")
      support.expect_err("EINVAL", "neither a directory of NDJSON files nor a SQLite database", sync.sync, db, f)
      support.expect_err("EIO", "cannot open", sync.sync, db, support.tmpdir("missing"))
      assert.is_nil(db:last_snapshot())
      db:close()
    end)
  end)

  describe("from SQLite", function()
    for _, sc in ipairs({ "s1_evolution", "s2_multi_table", "s3_edge_values" }) do
      it("replays " .. sc .. " kept in SQLite: compare finds nothing, every table as the NDJSON import", function()
        local ref = support.import_fixture(sc)
        local script = support.tmpdir("sql") .. ".sql"
        sqlite.export_sql(ref, script)
        local file = support.tmpdir("cat") .. ".sqlite"
        assert.is_true(support.sh("sqlite3 " .. support.q(file) .. " < " .. support.q(script)))
        local db = open_new("fromsqlite")
        local r = sync.sync(db, file)
        assert.are.equal(fixture_last(sc), r.to)
        assert_same(db, file)
        assert_same(db, cat(sc))
        assert.are.equal(support.dump(ref), support.dump(db))
        assert.are.equal(0, sync.sync(db, file).snapshots)
        ref:close()
        db:close()
      end)
    end
  end)

  describe("from SQLite, sorted selects", function()
    -- a SQLite DuckLake file of fixture @sc as it stood after snapshot @upto
    -- (nil: whole), @drop_snapshot's ducklake_snapshot row (and its changes)
    -- removed when given (a snapshot DuckLake expired, its rows staying)
    local function sqlite_of(sc, upto, drop_snapshot)
      local tables = pg.fixture_tables(cat(sc), upto, function(name, r)
        return drop_snapshot and (name == "ducklake_snapshot" or name == "ducklake_snapshot_changes")
          and r.snapshot_id == drop_snapshot
      end)
      local ref = open_new("state")
      ref:import_rows(tables)
      return support.sqlite_of_catalog(ref), ref
    end

    it("reads each table once per round whatever the number of commit ids (batch = 1): the same catalog", function()
      local file, ref = sqlite_of("s2_multi_table")
      local src = sync.source(file)
      src:begin()
      local tables = #src:tables()
      src:finish()
      local before = src.reads.queries
      local db = open_new("streams")
      local r = sync.sync(db, src, { batch = 1 })
      src:close()
      assert.is_true(r.snapshots > 10)
      -- batches of one id would run a query per table per id; the sorted
      -- selects are at most three per table, the check of the whole source
      -- (a round into an empty catalog) one, plus the round's own queries
      assert.is_true(src.reads.queries - before <= 4 * tables + 10,
        (src.reads.queries - before) .. " queries for " .. r.snapshots .. " ids and " .. tables .. " tables")
      assert.are.equal(support.dump(ref), support.dump(db))
      ref:close()
      db:close()
    end)

    it("continues a catalog that holds the source's first snapshots: rows ended later end at their commit, "
      .. "children follow their parents, the same catalog as one import of the whole", function()
      local sc = "s1_evolution"
      local part, pref = sqlite_of(sc, 9)
      local whole, wref = sqlite_of(sc)
      local db = open_new("continue")
      assert.are.equal(9, sync.sync(db, part).to)
      assert.are.equal(support.dump(pref), support.dump(db))
      local r = sync.sync(db, whole)
      assert.are.equal(9, r.from)
      assert.are.equal(fixture_last(sc), r.to)
      assert_same(db, whole)
      assert.are.equal(support.dump(wref), support.dump(db))
      pref:close()
      wref:close()
      db:close()
    end)

    it("replays a snapshot DuckLake expired (rows begin at it, no ducklake_snapshot row) as the C import does",
      function()
        local file, ref = sqlite_of("s1_evolution", nil, 3)
        local db = open_new("expired-sqlite")
        local r = sync.sync(db, file)
        assert.are.equal(20, r.to)
        assert_same(db, file)
        assert.are.equal(support.dump(ref), support.dump(db))
        ref:close()
        db:close()
      end)

    -- runs @sql on the SQLite file @file (sqlite3 -bail)
    local function sqlite_exec(file, sql)
      assert.is_true(support.sh("sqlite3 -bail " .. support.q(file) .. " " .. support.q(sql)), sql)
    end

    -- bytes that are not UTF-8 (0xFF, 0xFE never are), as SQLite TEXT
    local BAD = "CAST(X'FF41FE' AS TEXT)"

    -- each: the table and column given bytes that are not UTF-8, the SQL that
    -- puts them in a row a later round (above snapshot 9) brings, and what
    -- that round would do with it: insert a version that begins above 9, a
    -- ducklake_snapshot row, a child row of each kind of parent, a row of a
    -- non-versioned table (made equal in the round's last commit); then the
    -- commit id the round refuses (the row's snapshot: the version's begin,
    -- the snapshot row's id, the child's parent's begin, the round's last)
    local LATER = {
      { "ducklake_data_file", "path", "UPDATE ducklake_data_file SET path = " .. BAD .. " WHERE data_file_id = 39", 14 },
      { "ducklake_table", "table_name", "INSERT INTO ducklake_table VALUES (99, 'b5b0e7b6-0000-4000-8000-000000000099', "
        .. "14, NULL, 0, " .. BAD .. ", 'x/', 1)", 14 },
      { "ducklake_snapshot", "snapshot_time", "UPDATE ducklake_snapshot SET snapshot_time = " .. BAD
        .. " WHERE snapshot_id = 15", 15 },
      { "ducklake_snapshot_changes", "changes_made", "UPDATE ducklake_snapshot_changes SET changes_made = " .. BAD
        .. " WHERE snapshot_id = 12", 12 },
      { "ducklake_file_column_stats", "max_value", "UPDATE ducklake_file_column_stats SET max_value = " .. BAD
        .. " WHERE rowid = (SELECT min(rowid) FROM ducklake_file_column_stats WHERE data_file_id = 40)", 17 },
      -- a non-versioned table's row is written (and refused) in the round's first commit
      { "ducklake_metadata", "value", "UPDATE ducklake_metadata SET value = " .. BAD .. " WHERE key = 'created_by'", 10 },
    }

    -- the message of sync.sync(db, file)'s EINVAL, which names @tbl, @col and
    -- the bytes as @holds shows them (default: BAD's)
    local function utf8_refusal(db, file, tbl, col, holds)
      local e = support.expect_err("EINVAL", { tbl .. " row ", "column '" .. col .. "' holds '"
        .. (holds or "\\xffA\\xfe") .. "'", "bytes that are not valid UTF-8" }, sync.sync, db, file)
      return e.message
    end

    -- expires snapshot 2 at SQLite source @src (a later round then compares
    -- the catalog's past with the source's and rewrites it) and puts BAD in
    -- data file @id's path
    local function expire_with_bad_path(src, id)
      sqlite_exec(src, "DELETE FROM ducklake_snapshot_changes WHERE snapshot_id = 2; "
        .. "DELETE FROM ducklake_snapshot WHERE snapshot_id = 2; "
        .. "UPDATE ducklake_data_file SET path = " .. BAD .. " WHERE data_file_id = " .. id)
    end

    -- mends data file @id's path at @src and syncs: the round rewrites the
    -- past (snapshot 2 expired) and the catalog equals the source; returns
    -- sync's result
    local function mended_round(db, src, id)
      sqlite_exec(src, "UPDATE ducklake_data_file SET path = 'ok' WHERE data_file_id = " .. id)
      local r = sync.sync(db, src)
      assert.are.same({ 2 }, r.expired_at_source)
      assert.is_true(r.history_inserted >= 1)
      assert_same(db, src)
      return r
    end

    -- the first import's message @m1, up to "UTF-8", follows "sync: " at the
    -- start of the later round's @m2 (the same row named the same way: the file's rows have no gaps, a
    -- row's number is its rowid), whose tail says that source snapshot
    -- @refused is not written and the catalog stays at @stays
    local function same_refusal(m1, m2, refused, stays)
      local head = m1:match("^(.-bytes that are not valid UTF%-8)")
      assert.is_truthy(head, m1)
      assert.are.equal("sync: " .. head, m2:sub(1, #head + 6), m2 .. "\n  does not begin as the first import's\n" .. m1)
      assert.is_truthy(m2:find("; source snapshot " .. refused .. " is refused, not written, nor any after it "
        .. "(the catalog stays at snapshot " .. stays .. ")", 1, true), m2)
    end

    -- syncs @db from @src after @mutate(src) puts BAD in @tbl.@col: the round
    -- refuses it (EINVAL naming them), its message says @says, and @db is as
    -- it was
    local function refused_writing_nothing(db, src, mutate, tbl, col, says)
      local before = support.dump(db)
      mutate(src)
      local m = utf8_refusal(db, src, tbl, col)
      assert.is_truthy(m:find(says, 1, true), m)
      assert.are.equal(before, support.dump(db))
    end
    local NOTHING_AT_20 = "; the round writes nothing (the catalog stays at snapshot 20)"

    -- the rows of the non-versioned tables of @db, as a sorted list of row forms
    local function loose_rows(db)
      local out = {}
      db:read(function(rd)
        for _, rel in ipairs(db:relations()) do
          if rel.placement == "rows" then
            for row in rd:scan(rel.name, { at = moraine.ALL }) do
              out[#out + 1] = rel.name .. ":" .. sync.row_form(row, rel.columns)
            end
          end
        end
      end)
      table.sort(out)
      return table.concat(out, "\n")
    end

    -- whether a row of @tbl in the catalog @db holds BAD's bytes in @col
    local function holds_bad(db, tbl, col)
      if not db:relation(tbl) then return false end
      for _, row in ipairs(support.rows_of(db, tbl, { at = moraine.ALL })) do
        if row[col] == "\255A\254" then return true end
      end
      return false
    end

    for _, case in ipairs(LATER) do
      local tbl, col, sql, refused = case[1], case[2], case[3], case[4]
      it("a later round that brings text that is not UTF-8 (" .. tbl .. "." .. col .. ") refuses it as the first "
        .. "import does, naming table, row and column, before the commit of snapshot " .. refused .. ": the "
        .. "snapshots before it stay", function()
        local part, pref = sqlite_of("s1_evolution", 9)
        local whole, wref = sqlite_of("s1_evolution")
        sqlite_exec(whole, sql)
        -- the first import of that source refuses it
        local first = open_new("utf8-first")
        local m1 = utf8_refusal(first, whole, tbl, col)
        assert.is_nil(first:last_snapshot())
        -- a catalog that follows the source's first snapshots refuses the
        -- commit that would write it; the round's commits before it stay
        -- (s1_evolution has every snapshot: the one before is refused - 1)
        local db = open_new("utf8-later")
        assert.are.equal(9, sync.sync(db, part).to)
        local loose = loose_rows(db)
        local m2 = utf8_refusal(db, whole, tbl, col)
        same_refusal(m1, m2, refused, refused - 1)
        assert.are.equal(refused - 1, db:last_snapshot())
        assert.is_false(holds_bad(db, tbl, col))
        -- what stays is the source's snapshots up to refused - 1, and the
        -- non-versioned rows as the source holds them (the round's first
        -- commit, 10, made them the source's), or, when that commit was
        -- refused, as the round to 9 left them
        local _, uref = sqlite_of("s1_evolution", refused - 1)
        assert.are.equal(state_at(uref, refused - 1), state_at(db, refused - 1))
        assert.are.equal(refused > 10 and loose_rows(wref) or loose, loose_rows(db))
        if refused > 10 then assert.are_not.equal(loose, loose_rows(db)) end
        -- once the source is mended the same catalog follows it from there
        sqlite_exec(whole, "UPDATE " .. tbl .. " SET " .. col .. " = 'ok' WHERE CAST(" .. col .. " AS BLOB) = X'FF41FE'")
        local r = sync.sync(db, whole)
        assert.are.equal(refused - 1, r.from)
        assert.are.equal(20, r.to)
        assert_same(db, whole)
        pref:close()
        wref:close()
        uref:close()
        first:close()
        db:close()
      end)
    end

    it("a later round shows the bytes as the first import does: 40 at most, a backslash as \\x5c", function()
      local part, pref = sqlite_of("s1_evolution", 9)
      local whole, wref = sqlite_of("s1_evolution")
      sqlite_exec(whole, "UPDATE ducklake_metadata SET value = CAST(X'5C41FF' || '" .. string.rep("0123456789", 5)
        .. "' AS TEXT) WHERE key = 'created_by'")
      local holds = "\\x5cA\\xff" .. ("0123456789"):rep(4):sub(1, 37) .. "..."
      local first = open_new("utf8-shown-first")
      local m1 = utf8_refusal(first, whole, "ducklake_metadata", "value", holds)
      local db = open_new("utf8-shown")
      assert.are.equal(9, sync.sync(db, part).to)
      local m2 = utf8_refusal(db, whole, "ducklake_metadata", "value", holds)
      -- refused in the round's first commit, which makes the non-versioned tables the source's
      same_refusal(m1, m2, 10, 9)
      assert.are.equal(9, db:last_snapshot())
      pref:close()
      wref:close()
      first:close()
      db:close()
    end)

    it("a later round keeps bytes that are not UTF-8 in a column moraine does not know (an inlined data table's), "
      .. "as a first import does", function()
      local part, pref = sqlite_of("s1_evolution", 9)
      local whole, wref = sqlite_of("s1_evolution")
      sqlite_exec(whole, "CREATE TABLE ducklake_inlined_data_1_9 (row_id BIGINT, begin_snapshot BIGINT, "
        .. "end_snapshot BIGINT, x VARCHAR); INSERT INTO ducklake_inlined_data_1_9 VALUES (0, 14, NULL, " .. BAD .. ")")
      local first = open_new("utf8-unknown-first")
      assert.are.equal(20, sync.sync(first, whole).to)
      local db = open_new("utf8-unknown")
      assert.are.equal(9, sync.sync(db, part).to)
      assert.are.equal(20, sync.sync(db, whole).to)
      assert.are.equal("\255A\254", support.rows_of(db, "ducklake_inlined_data_1_9")[1].x)
      assert_same(db, whole)
      pref:close()
      wref:close()
      first:close()
      db:close()
    end)

    it("a round without a new snapshot that brings text that is not UTF-8 in a non-versioned table refuses it; "
      .. "nothing is written", function()
      local whole, wref = sqlite_of("s1_evolution")
      local db = open_new("utf8-rows")
      assert.are.equal(20, sync.sync(db, whole).to)
      refused_writing_nothing(db, whole, function(src)
        sqlite_exec(src, "UPDATE ducklake_files_scheduled_for_deletion SET path = " .. BAD)
      end, "ducklake_files_scheduled_for_deletion", "path", NOTHING_AT_20)
      wref:close()
      db:close()
    end)

    it("a round that rewrites the past (snapshots expired at the source) refuses a version it would insert whose "
      .. "text is not UTF-8; nothing is written", function()
      local whole, wref = sqlite_of("s1_evolution")
      local db = open_new("utf8-rewrite")
      assert.are.equal(20, sync.sync(db, whole).to)
      -- snapshot 2 expired: the round compares every version at or below 20
      -- and would replace data file 39's version by the source's
      refused_writing_nothing(db, whole, function(src) expire_with_bad_path(src, 39) end, "ducklake_data_file", "path",
        NOTHING_AT_20)
      -- mended, the same round goes through (the refusal was the text's)
      mended_round(db, whole, 39)
      wref:close()
      db:close()
    end)

    it("a round with new snapshots that rewrites the past refuses a version it would insert whose text is not "
      .. "UTF-8 before its first commit, which writes the rewrites", function()
      local part, pref = sqlite_of("s1_evolution", 9)
      local whole, wref = sqlite_of("s1_evolution")
      local db = open_new("utf8-rewrite-new")
      assert.are.equal(9, sync.sync(db, part).to)
      -- snapshot 2 expired: the round compares every version at or below 9
      -- and would replace data file 0's version (snapshot 3) by the source's
      refused_writing_nothing(db, whole, function(src) expire_with_bad_path(src, 0) end, "ducklake_data_file", "path",
        "; source snapshot 10 is refused, not written, nor any after it (the catalog stays at snapshot 9)")
      assert.are.equal(20, mended_round(db, whole, 0).to)
      pref:close()
      wref:close()
      db:close()
    end)
  end)

  describe("with other writers", function()
    it("a verb writer committing during a sync: the sync stops with ECONFLICT naming the snapshot, "
      .. "the verb's acknowledged snapshot stays", function()
      local db = open_new("race")
      local acked
      local e = support.expect_err("ECONFLICT", { "expected 5", "source snapshot 6 not written" }, sync.sync, db,
        cat("s1_evolution"), {
          before_commit = function(id)
            if id == 6 and not acked then
              acked = db:transaction(function(tx) tx:create_schema("acked") end, { author = "other writer" })
            end
          end,
        })
      assert.are.equal(6, acked)
      assert.truthy(e.message:find("snapshot 6", 1, true))
      -- the other writer's snapshot and schema are there, nothing was removed
      assert.are.equal(6, db:last_snapshot())
      local names = {}
      for _, x in ipairs(db:scan("ducklake_schema")) do names[x.row.schema_name] = true end
      assert.is_true(names.acked)
      -- snapshots 0..5 of the source are there exactly
      local ref = support.import_fixture("s1_evolution")
      for s = 0, 5 do assert.are.equal(state_at(ref, s), state_at(db, s), "snapshot " .. s) end
      -- running it again refuses again (the catalog diverged), still losing nothing
      support.expect_err("ECONFLICT", { "last snapshot 6 is not snapshot 6", "another writer committed it" },
        sync.sync, db, cat("s1_evolution"))
      assert.are.equal(6, db:last_snapshot())
      ref:close()
      db:close()
    end)

    it("two syncs at once: the second to commit gets ECONFLICT, running it again converges", function()
      local db = open_new("two")
      local inner
      support.expect_err("ECONFLICT", "another writer committed snapshot 20", sync.sync, db, cat("s1_evolution"), {
        before_commit = function(id)
          if id == 3 and not inner then inner = sync.sync(db, cat("s1_evolution")) end
        end,
      })
      assert.are.equal(20, inner.to)
      local r = sync.sync(db, cat("s1_evolution"))
      assert.are.equal(0, r.snapshots)
      assert_same(db, cat("s1_evolution"))
      db:close()
    end)

    it("killed with SIGKILL in the middle of a sync, the same sync run again finishes the job", function()
      local dir = support.tmpdir("killed")
      local script = support.tmpdir("child") .. ".lua"
      support.write(script, string.format([[
        package.path = %q
        package.cpath = %q
        local moraine = require "moraine"
        local sync = require "moraine.sync"
        local f = io.open("/proc/self/stat")
        local pid = f:read("*l"):match("^(%%d+)")
        f:close()
        local db = moraine.open(%q)
        sync.sync(db, %q, { before_commit = function(id)
          if id == 13 then os.execute("kill -9 " .. pid) end
        end })
        print("not killed")
      ]], package.path, package.cpath, dir, cat("s2_multi_table")))
      local p = io.popen(RUNTIME .. " " .. support.q(script) .. " 2>&1")
      local out = p:read("a")
      p:close()
      assert.is_nil(out:find("not killed", 1, true), out)
      local db = moraine.open(dir, { no_sync = true })
      assert.are.equal(12, db:last_snapshot())
      -- what the kill left serves the non-versioned tables (no snapshot columns: ducklake_metadata,
      -- ducklake_schema_versions, ...) as the source holds them: they come in the round's first commit
      local ref = support.import_fixture("s2_multi_table")
      local nonversioned = 0
      for _, rel in ipairs(ref:relations()) do
        if rel.placement == "rows" then
          nonversioned = nonversioned + 1
          local all = { at = moraine.ALL }
          assert.are.same(support.rows_of(ref, rel.name, all), support.rows_of(db, rel.name, all), rel.name)
        end
      end
      assert.is_true(nonversioned >= 2)
      local r = sync.sync(db, cat("s2_multi_table"))
      assert.are.equal(12, r.from)
      assert.are.equal(fixture_last("s2_multi_table"), r.to)
      assert_same(db, cat("s2_multi_table"))
      assert.are.equal(support.dump(ref), support.dump(db))
      ref:close()
      db:close()
    end)
  end)

  describe("from a live PostgreSQL catalog", function()
    local server, c
    local pg_setup, pg_teardown = pg.server_hooks(function(s, conn) server, c = s, conn end)
    lazy_setup(pg_setup)
    lazy_teardown(pg_teardown)

    for _, case in ipairs({ { "s1_evolution", { 4, 9, 13, 17 } }, { "s2_multi_table", { 3, 11, 20 } } }) do
      local sc, steps = case[1], case[2]
      it("two replicas follow " .. sc .. " as its writers commit: equal to the source after every round, "
        .. "every snapshot reads as the fixture's", function()
        local conn = "postgres:" .. server.conninfo
        local a, b = open_new("replica-a"), open_new("replica-b")
        local ref = support.import_fixture(sc)
        local rounds = {}
        for _, k in ipairs(steps) do rounds[#rounds + 1] = k end
        rounds[#rounds + 1] = false -- the whole catalog
        local prev
        for _, k in ipairs(rounds) do
          pg.load(c, cat(sc), k or nil)
          for _, db in ipairs({ a, b }) do
            local r = sync.sync(db, conn)
            assert.are.equal(prev, r.from)
            assert.are.equal(k or fixture_last(sc), r.to)
            assert_same(db, conn)
          end
          prev = k or fixture_last(sc)
          -- every snapshot synced so far reads as the fixture's own import
          -- (rows ended after this round's snapshot read as live, as at the source)
          for s = 0, prev do
            assert.are.equal(state_at(a, s), state_at(b, s))
            assert.are.equal(state_at(ref, s), state_at(a, s), "snapshot " .. s)
          end
        end
        assert_same(a, cat(sc))
        a:close()
        b:close()
        ref:close()
      end)
    end

    it("an expiry at the source (snapshot rows and the rows only they saw deleted): sync reports the expired "
      .. "snapshots and replays the deletions, compare finds nothing", function()
      local conn = "postgres:" .. server.conninfo
      pg.load(c, cat("s1_evolution"), nil)
      local db = open_new("expiry")
      sync.sync(db, conn)
      assert_same(db, conn)
      pg.exec(c, "BEGIN")
      pg.exec(c, "DELETE FROM ducklake_snapshot_changes WHERE snapshot_id IN (1, 2)")
      pg.exec(c, "DELETE FROM ducklake_snapshot WHERE snapshot_id IN (1, 2)")
      pg.exec(c, "DELETE FROM ducklake_data_file WHERE end_snapshot IS NOT NULL AND end_snapshot <= 3")
      pg.exec(c, "COMMIT")
      local r = sync.sync(db, conn)
      assert.are.equal(0, r.snapshots)
      assert.are.same({ 1, 2 }, r.expired_at_source)
      assert.is_true(r.history_deleted >= 2)
      assert_same(db, conn)
      db:read(function(rd)
        for row in rd:scan("ducklake_snapshot", { at = moraine.ALL }) do assert.is_true(row.snapshot_id ~= 1 and row.snapshot_id ~= 2) end
      end)
      db:close()
    end)

    it("PostgreSQL's NaN, Infinity and -Infinity in an inlined data table's DOUBLE column are synced as those values",
      function()
        local conn = "postgres:" .. server.conninfo
        pg.load(c, cat("s1_evolution"), nil)
        local db = open_new("pg-special")
        assert.are.equal(20, sync.sync(db, conn).to)
        pg.exec(c, "BEGIN")
        pg.exec(c, "CREATE TABLE ducklake_inlined_data_1_12 (row_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, "
          .. "v DOUBLE PRECISION, s VARCHAR)")
        pg.exec(c, "INSERT INTO ducklake_inlined_data_1_12 VALUES (0, 21, NULL, 'NaN', 'a'), (1, 21, NULL, 'Infinity', 'b'), "
          .. "(2, 21, NULL, '-Infinity', 'c'), (3, 21, NULL, 1.5, 'd'), (4, 21, NULL, NULL, 'e')")
        pg.exec(c, "INSERT INTO ducklake_snapshot SELECT 21, snapshot_time + interval '1 second', schema_version, "
          .. "next_catalog_id, next_file_id FROM ducklake_snapshot WHERE snapshot_id = 20")
        pg.exec(c, "INSERT INTO ducklake_snapshot_changes (snapshot_id, changes_made) VALUES (21, 'inlined_insert:1')")
        pg.exec(c, "COMMIT")
        assert.are.equal(21, sync.sync(db, conn).to)
        local v = {}
        for _, row in ipairs(support.rows_of(db, "ducklake_inlined_data_1_12")) do v[row.s] = row.v end
        assert.is_true(v.a ~= v.a, tostring(v.a)) -- NaN
        assert.are.equal(math.huge, v.b)
        assert.are.equal(-math.huge, v.c)
        assert.are.equal(1.5, v.d)
        assert.are.equal(moraine.null, v.e)
        assert_same(db, conn)
        db:close()
      end)

    it("a later round that brings text that is not UTF-8 (a SQL_ASCII database holds any bytes) refuses it, naming "
      .. "the row by its integer columns (PostgreSQL rows have no position), before the commit of its snapshot: the "
      .. "snapshots before it stay", function()
      pg.exec(c, "CREATE DATABASE moraine_ascii ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
      local conninfo = server.conninfo:gsub("dbname=postgres", "dbname=moraine_ascii")
      local c2 = pg.connect(conninfo)
      local ok, err = pcall(function()
        local conn = "postgres:" .. conninfo
        pg.load(c2, cat("s1_evolution"), 9)
        local db = open_new("pg-utf8")
        assert.are.equal(9, sync.sync(db, conn).to)
        pg.load(c2, cat("s1_evolution"), nil)
        pg.exec(c2, "UPDATE ducklake_data_file SET path = E'\\xffA\\xfe' WHERE data_file_id = 39")
        support.expect_err("EINVAL", { "sync: ducklake_data_file row (data_file_id=39, table_id=1, begin_snapshot=14): "
          .. "column 'path' holds '\\xffA\\xfe', bytes that are not valid UTF-8",
          "; source snapshot 14 is refused, not written, nor any after it (the catalog stays at snapshot 13)" },
          sync.sync, db, conn)
        -- snapshots 10 to 13 stay; data file 39 (which begins at 14) is absent
        assert.are.equal(13, db:last_snapshot())
        for _, row in ipairs(support.rows_of(db, "ducklake_data_file", { at = moraine.ALL })) do
          assert.are_not.equal(39, tonumber(row.data_file_id))
        end
        -- the first import of the same source refuses it too (numbering the
        -- row by its place in PostgreSQL's order, which the UPDATE changed)
        local first = open_new("pg-utf8-first")
        support.expect_err("EINVAL", { "ducklake_data_file row ", ": column 'path' holds '\\xffA\\xfe'" }, sync.sync,
          first, conn)
        assert.is_nil(first:last_snapshot())
        pg.exec(c2, "UPDATE ducklake_data_file SET path = 'ok' WHERE data_file_id = 39")
        local r = sync.sync(db, conn)
        assert.are.equal(13, r.from)
        assert.are.equal(20, r.to)
        assert_same(db, conn)
        first:close()
        db:close()
      end)
      c2:close()
      pg.exec(c, "DROP DATABASE moraine_ascii")
      if not ok then error(err, 0) end
    end)

    it("a server that is not there: EIO naming the connection", function()
      local db = open_new("noserver")
      support.expect_err("EIO", "cannot connect to PostgreSQL", sync.sync, db,
        "postgres:host=127.0.0.1 port=1 dbname=postgres user=moraine connect_timeout=2")
      assert.is_nil(db:last_snapshot())
      -- a password in the connection string is never shown
      local ok, e = pcall(sync.sync, db, "postgres:host=127.0.0.1 port=1 dbname=postgres user=moraine "
        .. "password=s3cr3t connect_timeout=2")
      assert.is_false(ok)
      assert.truthy(e.message:find("password=...", 1, true), e.message)
      assert.is_nil(e.message:find("s3cr3t", 1, true), e.message)
      ok, e = pcall(sync.sync, db, "postgresql://moraine:s3cr3t@127.0.0.1:1/postgres?connect_timeout=2")
      assert.is_false(ok)
      assert.is_nil(e.message:find("s3cr3t", 1, true), e.message)
      -- every form libpq takes: blanks around '=', a quoted value with blanks and an escaped quote, a
      -- URI parameter, and a value with a blank libpq refuses while quoting its words back in its error
      for _, conninfo in ipairs({ "host=127.0.0.1 port=1 user=moraine password = s3cr3t connect_timeout=2",
        "host=127.0.0.1 port=1 password='s3cr3t horse\\'s' connect_timeout=2",
        "postgresql://127.0.0.1:1/postgres?password=s3cr3t&connect_timeout=2",
        "host=127.0.0.1 port=1 password=s3cr3t horse connect_timeout=2",
        "postgresql://127.0.0.1:1/postgres?pass%77ord=s3cr3t&connect_timeout=2",
        "host=127.0.0.1 port=1 sslpassword=s3cr3t connect_timeout=2",
        "postgresql://127.0.0.1:1/postgres?sslpassword=s3cr3t&connect_timeout=2" }) do
        ok, e = pcall(sync.sync, db, "postgres:" .. conninfo)
        assert.is_false(ok)
        assert.is_nil(e.message:find("s3cr3t", 1, true), e.message)
        assert.is_nil(e.message:find("horse", 1, true), e.message)
      end
      -- a short password hides only what libpq quotes back, not every letter of the message
      ok, e = pcall(sync.sync, db, "postgres:host=127.0.0.1 port=1 password=e connect_timeout=2")
      assert.is_false(ok)
      assert.truthy(e.message:find("Connection refused", 1, true), e.message)
      db:close()
    end)
  end)
end)
