--- moraine.sync replaying what DuckLake changes at or below the catalog's last
-- snapshot: ducklake_expire_snapshots, ducklake_merge_adjacent_files and
-- ducklake_cleanup_old_files, applied to a source catalog (SQLite, and the
-- real PostgreSQL server of tests/pg/pg-server.sh) as the statements DuckLake
-- runs for them (DuckLakeMetadataManager::DeleteSnapshots, WriteMergeAdjacent,
-- RemoveFilesScheduledForCleanup; docs/sync.md). After every sync compare
-- finds nothing and every read at every remaining snapshot equals DuckLake's
-- SQL filter over the source.
local moraine = require "moraine"
local sqlite = require "moraine.sqlite"
local sync = require "moraine.sync"
local support = require "support"
local pg = require "pg_support"

local NULL = moraine.null
local FIX = support.FIXTURES
local S1 = FIX .. "/s1_evolution/catalog"

local function describe_diffs(d)
  local out = {}
  for i = 1, math.min(#d, 10) do
    out[#out + 1] = d[i].table .. " " .. d[i].side .. " "
      .. (d[i].row and sync.row_form(d[i].row, { "begin_snapshot", "end_snapshot", "snapshot_id", "data_file_id" })
        or "(table)")
  end
  return #d .. " differences: " .. table.concat(out, "; ")
end

local function assert_same(db, source)
  local d = sync.compare(db, source)
  assert.are.equal(0, #d, describe_diffs(d))
end

-- A LuaSQL connection wrapper: exec(sql), rows(sql) -> arrays of text, and
-- the dialect's timestamp literal.
local function wrap(con, ts_literal)
  local w = { con = con, ts = ts_literal }
  function w.exec(sql)
    local r, err = con:execute(sql)
    if not r then error("SQL: " .. tostring(err) .. " in: " .. sql:sub(1, 300), 2) end
    return r
  end
  function w.rows(sql)
    local cur = w.exec(sql)
    local out = {}
    local r = cur:fetch({}, "n")
    while r do
      out[#out + 1] = r
      r = cur:fetch({}, "n")
    end
    cur:close()
    return out
  end
  return w
end

local function ids_of(rows)
  local l = {}
  for i, r in ipairs(rows) do l[i] = tostring(r[1]) end
  return table.concat(l, ", ")
end

local function columns(name)
  local _, cols = moraine.read_ndjson(S1 .. "/" .. name .. ".ndjson")
  return cols
end

-- ducklake_expire_snapshots of @ids (DeleteSnapshots, the tables s1 has rows in)
local function expire(c, ids)
  local list = table.concat(ids, ", ")
  c.exec("BEGIN")
  c.exec("DELETE FROM ducklake_snapshot WHERE snapshot_id IN (" .. list .. ")")
  c.exec("DELETE FROM ducklake_snapshot_changes WHERE snapshot_id IN (" .. list .. ")")
  local unseen = "end_snapshot IS NOT NULL AND NOT EXISTS (SELECT snapshot_id FROM ducklake_snapshot "
    .. "WHERE snapshot_id >= begin_snapshot AND snapshot_id < end_snapshot)"
  local files = ids_of(c.rows("SELECT data_file_id FROM ducklake_data_file WHERE " .. unseen))
  local file_filter = ""
  if files ~= "" then
    c.exec("INSERT INTO ducklake_files_scheduled_for_deletion SELECT data_file_id, path, path_is_relative, " .. c.ts
      .. " FROM ducklake_data_file WHERE data_file_id IN (" .. files .. ")")
    for _, t in ipairs({ "ducklake_data_file", "ducklake_file_column_stats", "ducklake_file_variant_stats",
      "ducklake_file_partition_value" }) do
      c.exec("DELETE FROM " .. t .. " WHERE data_file_id IN (" .. files .. ")")
    end
    file_filter = "data_file_id IN (" .. files .. ") OR "
  end
  local deletes = ids_of(c.rows("SELECT delete_file_id FROM ducklake_delete_file WHERE " .. file_filter .. unseen))
  if deletes ~= "" then
    c.exec("INSERT INTO ducklake_files_scheduled_for_deletion SELECT delete_file_id, path, path_is_relative, " .. c.ts
      .. " FROM ducklake_delete_file WHERE delete_file_id IN (" .. deletes .. ")")
    c.exec("DELETE FROM ducklake_delete_file WHERE delete_file_id IN (" .. deletes .. ")")
  end
  for _, t in ipairs({ "ducklake_schema", "ducklake_view", "ducklake_tag", "ducklake_macro" }) do
    c.exec("DELETE FROM " .. t .. " WHERE " .. unseen)
  end
  c.exec("COMMIT")
  return files, deletes
end

-- ducklake_merge_adjacent_files at snapshot @sid: the first two live files
-- of table 1 without deletes become file @new (WriteMergeAdjacent): the
-- sources deleted with their stats, partition values and delete files and
-- scheduled for deletion; the new file begins at the first source's
-- begin_snapshot, partial_max the second's, its stats and partition values
-- the first's.
local function merge(c, sid, new)
  local two = c.rows("SELECT data_file_id, begin_snapshot FROM ducklake_data_file d WHERE table_id = 1 AND "
    .. "end_snapshot IS NULL AND NOT EXISTS (SELECT 1 FROM ducklake_delete_file x WHERE x.data_file_id = "
    .. "d.data_file_id) ORDER BY begin_snapshot DESC, data_file_id LIMIT 2")
  assert.are.equal(2, #two)
  local a, b = two[1][1], two[2][1]
  local last = c.rows("SELECT schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot "
    .. "ORDER BY snapshot_id DESC LIMIT 1")[1]
  c.exec("BEGIN")
  local cols = columns("ducklake_data_file")
  local sel = {}
  for i, col in ipairs(cols) do
    if col == "data_file_id" then sel[i] = tostring(new)
    elseif col == "path" then sel[i] = "'merged-" .. new .. ".parquet'"
    elseif col == "partial_max" then sel[i] = "(SELECT begin_snapshot FROM ducklake_data_file WHERE data_file_id = "
      .. b .. ")"
    elseif col == "record_count" then sel[i] = "(SELECT SUM(record_count) FROM ducklake_data_file WHERE data_file_id IN ("
      .. a .. ", " .. b .. "))"
    else sel[i] = col end
  end
  c.exec("INSERT INTO ducklake_data_file (" .. table.concat(cols, ", ") .. ") SELECT " .. table.concat(sel, ", ")
    .. " FROM ducklake_data_file WHERE data_file_id = " .. a)
  for _, t in ipairs({ "ducklake_file_column_stats", "ducklake_file_partition_value" }) do
    local tc = columns(t)
    local ts = {}
    for i, col in ipairs(tc) do ts[i] = col == "data_file_id" and tostring(new) or col end
    c.exec("INSERT INTO " .. t .. " (" .. table.concat(tc, ", ") .. ") SELECT " .. table.concat(ts, ", ") .. " FROM "
      .. t .. " WHERE data_file_id = " .. a)
  end
  c.exec("INSERT INTO ducklake_files_scheduled_for_deletion SELECT data_file_id, path, path_is_relative, " .. c.ts
    .. " FROM ducklake_data_file WHERE data_file_id IN (" .. a .. ", " .. b .. ")")
  for _, t in ipairs({ "ducklake_data_file", "ducklake_file_column_stats", "ducklake_delete_file",
    "ducklake_file_partition_value", "ducklake_file_variant_stats" }) do
    c.exec("DELETE FROM " .. t .. " WHERE data_file_id IN (" .. a .. ", " .. b .. ")")
  end
  c.exec(string.format("INSERT INTO ducklake_snapshot VALUES (%d, %s, %s, %s, %d)", sid, c.ts, last[1], last[2],
    tonumber(last[3]) + 1))
  c.exec(string.format("INSERT INTO ducklake_snapshot_changes VALUES (%d, 'merge_adjacent:1', NULL, NULL, NULL)", sid))
  c.exec("COMMIT")
  return tonumber(a), tonumber(b), tonumber(two[1][2])
end

-- the last snapshot row's counters (schema_version, next_catalog_id, next_file_id)
local function last_counters(c)
  return c.rows("SELECT schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot "
    .. "ORDER BY snapshot_id DESC LIMIT 1")[1]
end

-- a snapshot @sid changing no row, its changes @changes
local function bare_snapshot(c, sid, changes)
  local last = last_counters(c)
  c.exec(string.format("INSERT INTO ducklake_snapshot VALUES (%d, %s, %s, %s, %s)", sid, c.ts, last[1], last[2],
    last[3]))
  c.exec(string.format("INSERT INTO ducklake_snapshot_changes VALUES (%d, '%s', NULL, NULL, NULL)", sid, changes))
end

-- A DELETE that replaces a delete file at snapshot @sid (changes @changes,
-- DuckLake writes deleted_from_table:1): the live delete file of a live data
-- file of table 1 is deleted outright and scheduled for deletion, the new one
-- (id @new) inserted with the old one's begin_snapshot. Returns the old id
-- and its begin.
local function replace_delete(c, sid, new, changes)
  local old = c.rows("SELECT delete_file_id, begin_snapshot FROM ducklake_delete_file x WHERE table_id = 1 AND "
    .. "end_snapshot IS NULL AND EXISTS (SELECT 1 FROM ducklake_data_file d WHERE d.data_file_id = x.data_file_id "
    .. "AND d.end_snapshot IS NULL) ORDER BY delete_file_id LIMIT 1")[1]
  assert.is_not_nil(old, "no live delete file to replace")
  local cols = columns("ducklake_delete_file")
  local sel = {}
  for i, col in ipairs(cols) do
    if col == "delete_file_id" then sel[i] = tostring(new)
    elseif col == "path" then sel[i] = "'replaced-" .. new .. ".parquet'"
    elseif col == "delete_count" then sel[i] = "delete_count + 1"
    else sel[i] = col end
  end
  c.exec("BEGIN")
  c.exec("INSERT INTO ducklake_delete_file (" .. table.concat(cols, ", ") .. ") SELECT " .. table.concat(sel, ", ")
    .. " FROM ducklake_delete_file WHERE delete_file_id = " .. old[1])
  c.exec("INSERT INTO ducklake_files_scheduled_for_deletion SELECT delete_file_id, path, path_is_relative, " .. c.ts
    .. " FROM ducklake_delete_file WHERE delete_file_id = " .. old[1])
  c.exec("DELETE FROM ducklake_delete_file WHERE delete_file_id = " .. old[1])
  bare_snapshot(c, sid, changes)
  c.exec("COMMIT")
  return tonumber(old[1]), tonumber(old[2])
end

-- the delete file @id as the catalog holds it (every version), or nil
local function catalog_delete_file(db, id)
  return db:read(function(rd)
    for row in rd:scan("ducklake_delete_file", { at = moraine.ALL }) do
      if row.delete_file_id == id then return row end
    end
  end)
end

-- ducklake_cleanup_old_files: the files it deleted leave the schedule
local function cleanup(c)
  c.exec("DELETE FROM ducklake_files_scheduled_for_deletion")
end

local VERSIONED = { "ducklake_data_file", "ducklake_delete_file", "ducklake_column", "ducklake_table",
  "ducklake_schema", "ducklake_partition_info", "ducklake_sort_info", "ducklake_tag", "ducklake_column_tag",
  "ducklake_view" }

-- every read at every snapshot the source has equals DuckLake's filter over
-- the source: the SQL count of `begin_snapshot <= S AND (end_snapshot IS NULL
-- OR S < end_snapshot)` and the rows themselves
local function assert_reads(db, c, source)
  local src = sync.source(source)
  src:begin()
  local tables = src:tables()
  local snaps = c.rows("SELECT snapshot_id FROM ducklake_snapshot ORDER BY snapshot_id")
  assert.is_true(#snaps > 0)
  local all = {}
  for _, name in ipairs(VERSIONED) do
    local t = tables[name]
    if t then
      local l = {}
      for row in src:select(t, nil) do l[#l + 1] = { row = row, form = sync.row_form(row, t.columns) } end
      all[name] = l
    end
  end
  src:finish()
  src:close()
  db:read(function(rd)
    for _, sr in ipairs(snaps) do
      local s = tonumber(sr[1])
      for _, name in ipairs(VERSIONED) do
        local t = tables[name]
        if t then
          local n = tonumber(c.rows(string.format("SELECT COUNT(*) FROM %s WHERE begin_snapshot <= %d AND "
            .. "(end_snapshot IS NULL OR %d < end_snapshot)", name, s, s))[1][1])
          local want = {}
          for _, e in ipairs(all[name]) do
            local b, en = e.row.begin_snapshot, e.row.end_snapshot
            if b <= s and (en == NULL or s < en) then want[#want + 1] = e.form end
          end
          assert.are.equal(n, #want, name .. " at " .. s)
          local got = {}
          for row in rd:scan(name, { at = s }) do got[#got + 1] = sync.row_form(row, t.columns) end
          table.sort(want)
          table.sort(got)
          assert.are.equal(table.concat(want, "\n"), table.concat(got, "\n"), name .. " at snapshot " .. s)
        end
      end
    end
  end)
end

-- the scenario on one source: sync, expire, sync, merge, sync, cleanup, sync
local function scenario(c, source, open_db)
  local db = open_db()
  local r = sync.sync(db, source)
  assert.are.equal(20, r.to)
  assert_same(db, source)

  local files, deletes = expire(c, { 17, 18, 19 })
  assert.are_not.equal("", files)
  r = sync.sync(db, source)
  assert.are.equal(0, r.snapshots)
  assert.are.same({ 17, 18, 19 }, r.expired_at_source)
  local nfiles = select(2, files:gsub(",", ",")) + 1
  local ndeletes = deletes == "" and 0 or select(2, deletes:gsub(",", ",")) + 1
  assert.are.equal(3 + nfiles + ndeletes, r.history_deleted)
  assert.are.equal(0, r.history_inserted)
  assert.is_true(r.rows_changed > 0) -- the schedule
  assert_same(db, source)
  assert_reads(db, c, source)
  db:read(function(rd)
    for row in rd:scan("ducklake_snapshot", { at = moraine.ALL }) do
      assert.is_true(row.snapshot_id < 17 or row.snapshot_id > 19)
    end
  end)
  assert.are.equal("all", r.history_compared)
  -- a second round finds nothing more, and reads no versioned row: no
  -- snapshot is new, none expired (the source's one snapshot row L aside)
  local so = sync.source(source)
  r = sync.sync(db, so)
  assert.are.same({}, r.expired_at_source)
  assert.are.same({}, r.history_compared)
  assert.are.equal(0, r.history_deleted + r.history_inserted + r.snapshots + r.rows_changed)
  so:begin()
  local stables = so:tables()
  so:finish()
  for name, n in pairs(so.reads.rows) do
    local t = stables[name]
    if t.placement == "snapshot" then
      assert.is_true(n <= 1, name .. ": " .. n .. " rows read")
    else
      assert.are.equal("rows", t.placement, name .. ": " .. n .. " rows read in an idle round")
    end
  end
  so:close()

  local a, b, begin_a = merge(c, 21, 200)
  r = sync.sync(db, source)
  assert.are.equal(1, r.snapshots)
  assert.are.equal(21, r.to)
  assert.are.equal(2, r.history_deleted)
  assert.are.equal(1, r.history_inserted)
  assert.are.same({ 1 }, r.history_compared) -- merge_adjacent:1 names table 1
  assert_same(db, source)
  assert_reads(db, c, source)
  db:read(function(rd)
    local seen = {}
    for row, children in rd:scan("ducklake_data_file", { at = moraine.ALL }) do
      seen[row.data_file_id] = true
      if row.data_file_id == 200 then
        assert.are.equal(begin_a, row.begin_snapshot)
        assert.are.equal(NULL, row.end_snapshot)
        assert.is_true(#(children.ducklake_file_column_stats or {}) > 0)
        assert.is_true(#(children.ducklake_file_partition_value or {}) > 0)
      end
    end
    assert.is_true(seen[200])
    assert.is_nil(seen[a])
    assert.is_nil(seen[b])
  end)
  assert.are.same({}, db:verify())

  cleanup(c)
  r = sync.sync(db, source)
  assert.are.equal(0, r.snapshots)
  assert.is_true(r.rows_changed > 0)
  assert_same(db, source)

  -- a DELETE replacing a delete file (deleted_from_table:1): the old one
  -- deleted, the new one inserted with its begin
  local old, old_begin = replace_delete(c, 22, 301, "deleted_from_table:1")
  r = sync.sync(db, source)
  assert.are.equal(1, r.snapshots)
  assert.are.same({ 1 }, r.history_compared)
  assert.are.equal(1, r.history_deleted)
  assert.are.equal(1, r.history_inserted)
  assert.is_nil(catalog_delete_file(db, old))
  assert.are.equal(old_begin, catalog_delete_file(db, 301).begin_snapshot)
  assert_same(db, source)
  assert_reads(db, c, source)

  -- the same in a snapshot whose changes name no table moraine knows: the
  -- whole past compared, the rewrite replayed
  old = replace_delete(c, 23, 302, "frobnicated_table:\"x,y\"")
  r = sync.sync(db, source)
  assert.are.equal("all", r.history_compared)
  assert.are.equal(1, r.history_deleted)
  assert.are.equal(1, r.history_inserted)
  assert.is_nil(catalog_delete_file(db, old))
  assert_same(db, source)

  -- a rewrite whose snapshot was expired at the source before the round
  -- (its changes gone with it, a gap in the ids above L): everything compared
  old = replace_delete(c, 24, 303, "deleted_from_table:1")
  c.exec("BEGIN")
  bare_snapshot(c, 25, "altered_view:7")
  c.exec("DELETE FROM ducklake_snapshot_changes WHERE snapshot_id = 24")
  c.exec("DELETE FROM ducklake_snapshot WHERE snapshot_id = 24")
  c.exec("COMMIT")
  r = sync.sync(db, source)
  assert.are.equal(25, r.to)
  assert.are.equal("all", r.history_compared)
  assert.are.equal(1, r.history_deleted)
  assert.are.equal(1, r.history_inserted)
  assert.is_nil(catalog_delete_file(db, old))
  assert_same(db, source)
  assert_reads(db, c, source)
  assert.are.same({}, db:verify())
  db:close()
end

describe("moraine.sync replays DuckLake's rewrites of the past", function()
  after_each(function() support.cleanup() end)

  it("from SQLite: expire_snapshots, merge_adjacent_files, cleanup_old_files; compare finds nothing, every read "
    .. "at every snapshot is the source's", function()
    local ref = support.import_fixture("s1_evolution")
    local file = support.tmpdir("src") .. ".sqlite"
    sqlite.export_sqlite(ref, file)
    ref:close()
    local env = require("luasql.sqlite3").sqlite3()
    local con = assert(env:connect(file))
    local c = wrap(con, "'2026-12-01 00:00:00+00'")
    local ok, err = pcall(scenario, c, file, function() return moraine.open(support.tmpdir("dst"), { no_sync = true }) end)
    con:close()
    env:close()
    if not ok then error(err, 0) end
  end)

  describe("from PostgreSQL", function()
    local server, pc
    local pg_setup, pg_teardown = pg.server_hooks(function(s, conn) server, pc = s, conn end)
    lazy_setup(pg_setup)
    lazy_teardown(pg_teardown)

    it("expire_snapshots, merge_adjacent_files, cleanup_old_files; compare finds nothing, every read at every "
      .. "snapshot is the source's", function()
      pg.load(pc, S1, nil)
      local c = wrap(pc.con, "TIMESTAMPTZ '2026-12-01 00:00:00+00'")
      scenario(c, "postgres:" .. server.conninfo,
        function() return moraine.open(support.tmpdir("dstpg"), { no_sync = true }) end)
    end)
  end)

  it("a round with one new snapshot compares only the table its changes name, on both sides: the rows read "
    .. "are that table's at or below the last snapshot and the new ones", function()
    local ref = support.import_fixture("s2_multi_table")
    local file = support.tmpdir("src2") .. ".sqlite"
    sqlite.export_sqlite(ref, file)
    ref:close()
    local env = require("luasql.sqlite3").sqlite3()
    local con = assert(env:connect(file))
    local c = wrap(con, "'2026-12-01 00:00:00+00'")
    local ok, err = pcall(function()
      local db = moraine.open(support.tmpdir("dst2"), { no_sync = true })
      assert.are.equal(25, sync.sync(db, file).to)
      -- snapshot 26 inserts a copy of a live file of table 3 (7 files, of 41)
      local cols = columns("ducklake_data_file")
      local sel = {}
      for i, col in ipairs(cols) do
        if col == "data_file_id" then sel[i] = "900"
        elseif col == "begin_snapshot" then sel[i] = "26"
        elseif col == "path" then sel[i] = "'new-900.parquet'"
        else sel[i] = col end
      end
      c.exec("BEGIN")
      c.exec("INSERT INTO ducklake_data_file (" .. table.concat(cols, ", ") .. ") SELECT " .. table.concat(sel, ", ")
        .. " FROM ducklake_data_file WHERE table_id = 3 AND end_snapshot IS NULL ORDER BY data_file_id LIMIT 1")
      -- (a DELETE's snapshot: a delete file of table 3 may have been replaced in the past)
      bare_snapshot(c, 26, "deleted_from_table:3")
      c.exec("COMMIT")
      local so = sync.source(file)
      local r = sync.sync(db, so)
      assert.are.equal(26, r.to)
      assert.are.same({ 3 }, r.history_compared)
      assert.are.equal(0, r.history_deleted + r.history_inserted)
      local want = tonumber(c.rows("SELECT COUNT(*) FROM ducklake_data_file WHERE table_id = 3 AND begin_snapshot <= 25")[1][1])
      local all = tonumber(c.rows("SELECT COUNT(*) FROM ducklake_data_file")[1][1])
      assert.is_true(want < all - 10)
      -- the comparison's rows of table 3, and the new file the replay reads
      assert.are.equal(want + 1, so.reads.rows.ducklake_data_file)
      local stats = tonumber(c.rows("SELECT COUNT(*) FROM ducklake_file_column_stats s JOIN ducklake_data_file d ON "
        .. "d.data_file_id = s.data_file_id AND d.table_id = s.table_id WHERE d.table_id = 3 AND d.begin_snapshot <= 25")[1][1])
      assert.are.equal(stats, so.reads.rows.ducklake_file_column_stats or 0)
      so:close()
      assert_same(db, file)
      -- snapshot 27 only inserts (an append: no past to compare): the round reads the new file only
      for i, col in ipairs(cols) do
        if col == "data_file_id" then sel[i] = "901"
        elseif col == "begin_snapshot" then sel[i] = "27"
        elseif col == "path" then sel[i] = "'new-901.parquet'"
        else sel[i] = col end
      end
      c.exec("BEGIN")
      c.exec("INSERT INTO ducklake_data_file (" .. table.concat(cols, ", ") .. ") SELECT " .. table.concat(sel, ", ")
        .. " FROM ducklake_data_file WHERE table_id = 3 AND end_snapshot IS NULL ORDER BY data_file_id LIMIT 1")
      bare_snapshot(c, 27, "inserted_into_table:3")
      c.exec("COMMIT")
      so = sync.source(file)
      r = sync.sync(db, so)
      assert.are.equal(27, r.to)
      assert.are.same({}, r.history_compared)
      assert.are.equal(1, so.reads.rows.ducklake_data_file)
      so:close()
      assert_same(db, file)
      db:close()
    end)
    con:close()
    env:close()
    if not ok then error(err, 0) end
  end)

  it("reads DuckLake's changes lists: commas inside quoted names, doubled quotes", function()
    assert.are.same({ 'created_table:"main"."a,b"', "inserted_into_table:3" },
      sync._change_tokens('created_table:"main"."a,b",inserted_into_table:3'))
    assert.are.same({ 'created_schema:"x"",y"', "altered_table:1" },
      sync._change_tokens('created_schema:"x"",y",altered_table:1'))
    assert.is_nil(sync._change_tokens('created_schema:"open'))
  end)

  it("a refused rewrite (a version that is not there, a begin above the last snapshot) changes nothing", function()
    local db = support.import_fixture("s1_evolution")
    local before = support.dump(db)
    local live
    db:read(function(rd)
      for row in rd:scan("ducklake_data_file", { at = moraine.ALL }) do
        if row.end_snapshot == NULL then live = row end
      end
    end)
    local ghost = {}
    for k, v in pairs(live) do ghost[k] = v end
    ghost.data_file_id = 9999
    support.expect_err("ENOTFOUND", "no such version", db.commit, db, nil, function(tx)
      tx:delete_version("ducklake_data_file", ghost)
    end)
    local future = {}
    for k, v in pairs(live) do future[k] = v end
    future.data_file_id, future.begin_snapshot = 9998, 21
    support.expect_err("ESNAPSHOT", "above the catalog's last snapshot 20", db.commit, db, nil, function(tx)
      tx:insert_version("ducklake_data_file", future)
    end)
    local changed = {}
    for k, v in pairs(live) do changed[k] = v end
    changed.path = "elsewhere"
    support.expect_err("EINVAL", "differs in column 'path'", db.commit, db, 21, function(tx)
      tx:delete_version("ducklake_data_file", changed)
    end)
    support.expect_err("ESNAPSHOT", "never expires", db.commit, db, nil, function(tx) tx:delete_snapshot(20) end)
    support.expect_err("ENOTFOUND", "no ducklake_snapshot row", db.commit, db, nil, function(tx)
      tx:delete_snapshot(1)
      tx:delete_snapshot(1)
    end)
    assert.are.equal(before, support.dump(db))
    assert.are.equal(20, db:last_snapshot())
    db:close()
  end)
end)
