-- Specs of moraine.push (bindings/moraine/push.lua), `moraine push` and
-- moraine.sqlite.export_sqlite / `moraine export --format sqlite`.
--
-- Each real fixture is taken into a SQLite DuckLake catalog file
-- (export_sqlite), that file is imported into a new moraine catalog, the
-- example migrations (examples/*.lua) run there as verbs, and the result is
-- pushed back into the file. The file is then read back with plain SQL
-- (LuaSQL) and checked, table by table, against moraine's rows, and DuckLake's
-- SQL filter (begin_snapshot <= S AND (end_snapshot IS NULL OR S <
-- end_snapshot)) is run in SQLite at every snapshot against moraine's answer
-- at that snapshot. A concurrent SQL writer appends a DuckLake-shaped
-- snapshot between two of the push's transactions; a kill loop runs `moraine
-- push` as a process and SIGKILLs it at random points.
local moraine = require "moraine"
local sqlite = require "moraine.sqlite"
local push = require "moraine.push"
local support = require "support"
local push_support = require "push_support"

local N = moraine.null
local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"
local ROOT = os.getenv("PWD") or "."
local FIX = support.FIXTURES
local q = support.q

local function istr(v)
  if type(v) == "number" and not math.type then return string.format("%.0f", v) end
  return (tostring(v):gsub("U?LL$", ""))
end

-- a value as text that is equal for equal SQL values (SQLite keeps booleans as 0/1)
local function vkey(v)
  if v == nil or v == N then return "NULL" end
  if type(v) == "boolean" then return v and "1" or "0" end
  if type(v) == "string" then return "'" .. v .. "'" end
  if type(v) == "number" and math.type and math.type(v) == "float" then return string.format("%.17g", v) end
  return istr(v)
end

local function env_con(path)
  local driver = require "luasql.sqlite3"
  local env = driver.sqlite3()
  local con = assert(env:connect(path))
  return con, env
end

-- column names of table @name in the SQLite file (declared order)
local function sql_columns(con, name)
  local cur = assert(con:execute("PRAGMA table_info('" .. name .. "')"))
  local out, types = {}, {}
  local row = cur:fetch({}, "a")
  while row do
    out[tonumber(row.cid) + 1] = row.name
    types[row.name] = row.type
    row = cur:fetch({}, "a")
  end
  cur:close()
  return out, types
end

-- sorted row texts of a SELECT in SQLite over @cols (plain SQL; moraine.sqlite's
-- exact reader turns integers into exact values)
local function sql_rows(con, name, cols, where)
  local out = {}
  for _, r in ipairs(sqlite.select_rows(con, name, cols, where)) do
    local parts = {}
    for i = 1, #cols do parts[i] = vkey(r[i]) end
    out[#out + 1] = table.concat(parts, "|")
  end
  table.sort(out)
  return out
end

local function moraine_rows(entries, cols)
  local out = {}
  for _, e in ipairs(entries) do
    local row = e.row or e
    local parts = {}
    for i, c in ipairs(cols) do parts[i] = vkey(row[c]) end
    out[#out + 1] = table.concat(parts, "|")
  end
  table.sort(out)
  return out
end

local function same_list(a, b, what)
  if #a ~= #b then
    assert.are.equal(#b, #a, what .. ": row count")
  end
  for i = 1, #a do
    if a[i] ~= b[i] then assert.are.equal(b[i], a[i], what .. ": row " .. i) end
  end
end

-- The whole check: every table of the target equals moraine's (every version),
-- and DuckLake's filter at every snapshot gives moraine's rows.
local function check_target(db, path)
  local con, env = env_con(path)
  local last = db:last_snapshot()
  local nchecked = 0
  for _, rel in ipairs(db:relations()) do
    local cols = sql_columns(con, rel.name)
    assert.is_true(#cols > 0, "target has table " .. rel.name)
    same_list(sql_rows(con, rel.name, cols), moraine_rows(db:scan(rel.name, { at = moraine.ALL }), cols), rel.name)
    local has = {}
    for _, c in ipairs(cols) do has[c] = true end
    if rel.placement ~= "child" and has.begin_snapshot and has.end_snapshot then
      for s = 0, last do
        local S = tostring(s)
        same_list(sql_rows(con, rel.name, cols, "begin_snapshot <= " .. S .. " AND (end_snapshot IS NULL OR "
          .. S .. " < end_snapshot)"), moraine_rows(db:scan(rel.name, { at = s }), cols), rel.name .. " at " .. S)
        nchecked = nchecked + 1
      end
    end
    if rel.parent == "ducklake_data_file" then
      for s = 0, last do
        local S = tostring(s)
        local mine = {}
        for _, e in ipairs(db:scan("ducklake_data_file", { at = s })) do
          for _, c in ipairs(e.children[rel.name] or {}) do mine[#mine + 1] = c end
        end
        same_list(sql_rows(con, rel.name, cols, "data_file_id IN (SELECT data_file_id FROM ducklake_data_file "
          .. "WHERE begin_snapshot <= " .. S .. " AND (end_snapshot IS NULL OR " .. S .. " < end_snapshot))"),
          moraine_rows(mine, cols), rel.name .. " at " .. S)
      end
    end
  end
  con:close()
  env:close()
  assert.is_true(nchecked > 0)
end

-- a SQLite DuckLake catalog file from fixture @scenario, and a moraine catalog imported from it
local function lake(scenario)
  local src = support.import_fixture(scenario)
  local file = support.tmpdir("lake") .. ".sqlite"
  sqlite.export_sqlite(src, file)
  src:close()
  local db = moraine.open(support.tmpdir("cat"), { no_sync = true })
  sqlite.import(db, file)
  return db, file
end

local EVENT_COLS = push_support.EVENT_COLS

-- a DuckLake-shaped snapshot @s + 1 committed by SQL on connection @con, as another writer's: its
-- ducklake_snapshot row copies @s's with schema_version, next_catalog_id and next_file_id moved by
-- @o.sv, @o.cat and @o.file (default 0), its changes row says @o.changes, and @o.sql (a list) runs in the same
-- transaction with "%S" standing for the new id; returns the new id's text
local function sql_snapshot(con, s, o)
  local nid = istr(s + 1)
  assert(con:execute("BEGIN IMMEDIATE"))
  assert(con:execute("INSERT INTO ducklake_snapshot SELECT " .. nid .. ", snapshot_time, schema_version + " .. (o.sv or 0)
    .. ", next_catalog_id + " .. (o.cat or 0) .. ", next_file_id + " .. (o.file or 0)
    .. " FROM ducklake_snapshot WHERE snapshot_id = " .. istr(s)))
  assert(con:execute("INSERT INTO ducklake_snapshot_changes VALUES (" .. nid .. ", '" .. o.changes:gsub("'", "''")
    .. "', NULL, NULL, NULL)"))
  for _, stmt in ipairs(o.sql or {}) do assert(con:execute((stmt:gsub("%%S", nid)))) end
  assert(con:execute("COMMIT"))
  return nid
end

-- the newest snapshot id of the SQLite catalog behind connection @con
local function target_head_of(con)
  local rows = sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id" },
    "snapshot_id = (SELECT max(snapshot_id) FROM ducklake_snapshot)")
  return rows[1][1]
end
local migrate = push_support.migrate

after_each(function() support.cleanup() end)

-- a new catalog imported from SQLite catalog @file, with the snapshots @commit(db) makes, their snapshot_time
-- then set (read back through SQLite, as a catalog made with a clock stepped back or assembled) to one minute from
-- now with the microseconds @fracs[k] for the k-th ("250000"); returns it and the last snapshot before them
local function retimed_catalog(file, tag, commit, fracs)
  local src = moraine.open(support.tmpdir(tag .. "-src"), { no_sync = true })
  sqlite.import(src, file)
  local C = src:last_snapshot()
  commit(src)
  local edited = support.tmpdir(tag) .. ".sqlite"
  sqlite.export_sqlite(src, edited)
  src:close()
  local T = os.date("!%Y-%m-%d %H:%M:%S", os.time() + 60)
  local con, env = env_con(edited)
  for k, frac in ipairs(fracs) do
    assert(con:execute("UPDATE ducklake_snapshot SET snapshot_time = '" .. T .. "." .. frac .. "+00' WHERE snapshot_id = "
      .. istr(C + k)))
  end
  con:close()
  env:close()
  local db = moraine.open(support.tmpdir(tag .. "-cat"), { no_sync = true })
  sqlite.import(db, edited)
  return db, C
end

describe("moraine.sqlite.export_sqlite", function()
  it("writes a SQLite DuckLake catalog file with DuckLake's schema that imports back to the same rows", function()
    for _, scenario in ipairs({ "s1_evolution", "s2_multi_table", "s3_edge_values", "s4_encrypted" }) do
      local src = support.import_fixture(scenario)
      local file = support.tmpdir("x") .. ".sqlite"
      assert.is_true(sqlite.export_sqlite(src, file))
      -- a catalog holding encryption keys gives a file readable by its owner only
      local p = assert(io.popen("stat -c %a " .. q(file)))
      local mode = p:read("*l")
      p:close()
      if scenario == "s4_encrypted" then assert.are.equal("600", mode) else assert.are_not.equal("600", mode) end
      local con, env = env_con(file)
      for name, types in pairs(sqlite.types) do
        local cols, decl = sql_columns(con, name)
        if #cols > 0 then
          for _, c in ipairs(cols) do
            -- PRAGMA table_info gives the type without the PRIMARY KEY constraint
            assert.are.equal((types[c]:gsub(" PRIMARY KEY$", ""):gsub(" NOT NULL$", "")), decl[c], scenario .. ": " .. name .. "." .. c)
          end
        end
      end
      -- DuckLake's own tables are all there
      for _, name in ipairs({ "ducklake_metadata", "ducklake_snapshot", "ducklake_snapshot_changes", "ducklake_table",
        "ducklake_column", "ducklake_data_file", "ducklake_schema_versions" }) do
        assert.is_true(#sql_columns(con, name) > 0, scenario .. ": " .. name)
      end
      con:close()
      env:close()
      check_target(src, file)
      local back = moraine.open(support.tmpdir("back"), { no_sync = true })
      sqlite.import(back, file)
      assert.are.same(support.dump(src), support.dump(back))
      src:close()
      back:close()
    end
  end)

  it("is the catalog at one point: a commit landing while it runs is in no table of the file", function()
    local src, dir = support.import_fixture("s3_edge_values")
    local before = support.dump(src)
    local last = src:last_snapshot()
    local writer = moraine.open(dir, { no_sync = true })
    local file = support.tmpdir("moving") .. ".sqlite"
    local late
    assert.is_true(sqlite.export_sqlite(src, file, { progress = function(done, total, name)
      if name == "ducklake_snapshot_changes" and done == total and not late then
        late = writer:transaction(function(tx) tx:create_table("late", { { name = "id", type = "int64" } }) end)
      end
    end }))
    assert.is_truthy(late)
    assert.are_not.equal(before, support.dump(src))
    local back = moraine.open(support.tmpdir("moving-back"), { no_sync = true })
    sqlite.import(back, file)
    assert.are.equal(last, back:last_snapshot())
    assert.are.equal(before, support.dump(back))
    back:close()
    writer:close()
    src:close()
  end)

  it("two exports to one file at once each write their own temporary file: the later rename gives a whole catalog", function()
    local src, other = support.import_fixture("s1_evolution"), support.import_fixture("s2_multi_table")
    local file = support.tmpdir("both") .. ".sqlite"
    local inner = false
    -- the second export runs whole inside the first one's progress callback: it starts after the first made its
    -- file and renames before the first ends
    assert.is_true(sqlite.export_sqlite(src, file, { progress = function()
      if not inner then
        inner = true
        assert.is_true(sqlite.export_sqlite(other, file))
        local back = moraine.open(support.tmpdir("inner"), { no_sync = true })
        sqlite.import(back, file)
        assert.are.same(support.dump(other), support.dump(back))
        back:close()
      end
    end }))
    assert.is_true(inner)
    local back = moraine.open(support.tmpdir("outer"), { no_sync = true })
    sqlite.import(back, file)
    assert.are.same(support.dump(src), support.dump(back))
    assert.are.same({}, support.temps_beside(file))
    back:close()
    src:close()
    other:close()
  end)

  it("refuses bad arguments and leaves no file behind on failure", function()
    local src = support.import_fixture("s1_evolution")
    assert.has_error(function() sqlite.export_sqlite(src, 3) end)
    support.expect_err("EINVAL", "unknown option 'x'", sqlite.export_sqlite, src, support.tmpdir("y") .. ".db", { x = 1 })
    local file = support.tmpdir("z") .. ".db"
    support.expect_err("EINVAL", "export cancelled", sqlite.export_sqlite, src, file,
      { progress = function() return true end })
    assert.is_nil(io.open(file, "rb"))
    assert.are.same({}, support.temps_beside(file))
    support.expect_err("EIO", "cannot write", sqlite.export_sqlite, src, "/nonexistent-dir/x.db")
    src:close()
  end)
end)

describe("moraine.push", function()
  for _, scenario in ipairs({ "s1_evolution", "s2_multi_table", "s3_edge_values", "s4_encrypted" }) do
    it("pushes the example migrations on " .. scenario .. ": the target equals moraine at every snapshot", function()
      local db, file = lake(scenario)
      local before = db:last_snapshot()
      local snaps = migrate(db)
      assert.is_true(#snaps >= 10)
      local seen = {}
      local r = push.push(db, file, { progress = function(done, total, s)
        seen[#seen + 1] = istr(s)
        assert.are.equal(#snaps, total)
        assert.are.equal(#seen, done)
      end })
      assert.are.equal(istr(before), istr(r.from))
      assert.are.equal(istr(db:last_snapshot()), istr(r.to))
      assert.are.equal(#snaps, r.snapshots)
      for i, s in ipairs(snaps) do assert.are.equal(istr(s), seen[i]) end
      check_target(db, file)
      -- the 2^63-1 file size went through exactly
      local con, env = env_con(file)
      local rows = sqlite.select_rows(con, "ducklake_data_file", { "file_size_bytes" }, "path = 'h1.parquet'")
      assert.are.equal("9223372036854775807", istr(rows[1][1]))
      -- NULL and the empty commit message stay apart
      local ch = sqlite.select_rows(con, "ducklake_snapshot_changes", { "author", "commit_message" },
        "snapshot_id = " .. istr(snaps[2]))
      assert.are.equal("admin", ch[1][1])
      ch = sqlite.select_rows(con, "ducklake_snapshot_changes", { "author", "commit_message" },
        "snapshot_id = " .. istr(snaps[5]))
      assert.are.equal(N, ch[1][1])
      assert.are.equal("", ch[1][2])
      con:close()
      env:close()
      -- pushing again writes nothing
      local again = push.push(db, file)
      assert.are.equal(0, again.snapshots)
      -- the pushed file imports back into the same catalog
      local back = moraine.open(support.tmpdir("back"), { no_sync = true })
      sqlite.import(back, file)
      assert.are.same(support.dump(db), support.dump(back))
      back:close()
      db:close()
    end)
  end

  it("refuses when a SQL writer appended a DuckLake snapshot during the push: table and snapshot named", function()
    local db, file = lake("s1_evolution")
    local snaps = migrate(db)
    local con, env = env_con(file)
    -- the writer: after moraine's first pushed snapshot, a DuckLake-shaped
    -- snapshot that alters table events_2024 (which moraine's next snapshot also alters)
    local e = support.expect_err("ECONFLICT", { "moved on", "events_2024", "altered_table" }, push.push, db, file,
      { progress = function(done, _, s)
        if done == 1 then
          local tid = db:read(function(rd) return rd:table_id(nil, "events_2024") end)
          local nid = istr(s + 1)
          assert(con:execute("BEGIN IMMEDIATE"))
          assert(con:execute("INSERT INTO ducklake_snapshot SELECT " .. nid .. ", '2026-01-01 00:00:00+00', "
            .. "schema_version + 1, next_catalog_id, next_file_id FROM ducklake_snapshot WHERE snapshot_id = " .. istr(s)))
          assert(con:execute("INSERT INTO ducklake_snapshot_changes VALUES (" .. nid .. ", 'altered_table:" .. istr(tid)
            .. "', NULL, NULL, NULL)"))
          assert(con:execute("COMMIT"))
        end
      end })
    assert.truthy(e.message:find("snapshot " .. istr(snaps[1] + 1), 1, true), e.message)
    -- the target: moraine's first snapshot and the writer's, each whole
    local heads = sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id" }, "snapshot_id >= " .. istr(snaps[1]))
    assert.are.equal(2, #heads)
    local changes = sqlite.select_rows(con, "ducklake_snapshot_changes", { "snapshot_id" },
      "snapshot_id >= " .. istr(snaps[1]))
    assert.are.equal(2, #changes)
    -- a second push now refuses before writing anything, naming the writer's snapshot
    support.expect_err("ECONFLICT", { "moved on", "snapshot " .. istr(snaps[1] + 1) }, push.push, db, file)
    assert.are.equal(2, #sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id" },
      "snapshot_id >= " .. istr(snaps[1])))
    con:close()
    env:close()
    db:close()
  end)

  it("a push that starts again after a SQL writer's snapshot leaves moraine's table stats for the tables its first "
    .. "snapshots changed, in the target and in the catalog", function()
    local db, file = lake("s2_multi_table")
    -- P1 inserts into sales.orders (its stats change), P2 changes only sales.tmp
    db:transaction(function(t)
      t:add_data_files({ schema = "sales", table = "orders" }, { { path = "new.parquet", record_count = 100,
        file_size_bytes = 1000 } })
    end)
    db:transaction(function(t) t:set_sorting({ schema = "sales", table = "tmp" }, { "x" }) end)
    local tid = db:read(function(rd) return rd:table_id("sales", "orders") end)
    local cols = { "table_id", "record_count", "next_row_id", "file_size_bytes" }
    -- orders' row of ducklake_table_stats (rows with named columns), as texts
    local function stats_of(rows)
      for _, r in ipairs(rows) do
        if vkey(r.table_id) == vkey(tid) then return { istr(r.record_count), istr(r.next_row_id), istr(r.file_size_bytes) } end
      end
      return "no row of table " .. istr(tid)
    end
    local function target_stats(con)
      local rows = {}
      for i, r in ipairs(sqlite.select_rows(con, "ducklake_table_stats", cols)) do
        rows[i] = {}
        for k, c in ipairs(cols) do rows[i][c] = r[k] end
      end
      return stats_of(rows)
    end
    local mine = stats_of(support.rows_of(db, "ducklake_table_stats"))
    local con, env = env_con(file)
    assert.are_not.same(mine, target_stats(con))
    -- after P1 is written, a DuckLake-shaped snapshot creating a schema (no table of moraine's touched): the
    -- push starts again and rebases P2 onto it
    local wrote = false
    local r = push.push(db, file, { progress = function(done, _, s)
      if done == 1 and not wrote then
        wrote = true
        local nid = istr(s + 1)
        assert(con:execute("BEGIN IMMEDIATE"))
        assert(con:execute("INSERT INTO ducklake_snapshot SELECT " .. nid .. ", snapshot_time, schema_version + 1, "
          .. "next_catalog_id + 1, next_file_id FROM ducklake_snapshot WHERE snapshot_id = " .. istr(s)))
        assert(con:execute("INSERT INTO ducklake_schema SELECT next_catalog_id, 'b5b0e7b6-0000-4000-8000-0000000000aa', "
          .. nid .. ", NULL, 'other', 'other/', 1 FROM ducklake_snapshot WHERE snapshot_id = " .. istr(s)))
        assert(con:execute("INSERT INTO ducklake_snapshot_changes VALUES (" .. nid .. ", 'created_schema:\"other\"', "
          .. "NULL, NULL, NULL)"))
        assert(con:execute("COMMIT"))
      end
    end })
    assert.is_true(wrote)
    assert.is_true(r.rebased)
    assert.are.same(mine, target_stats(con))
    assert.are.same(mine, stats_of(support.rows_of(db, "ducklake_table_stats")))
    con:close()
    env:close()
    db:close()
  end)

  it("a rebased snapshot's time goes on from the head it lands on, as DuckLake's retry writes NOW(): times follow ids",
    function()
      local db, file = lake("s2_multi_table")
      local db2 = moraine.open(support.tmpdir("cat2"), { no_sync = true })
      sqlite.import(db2, file)
      local C = db:last_snapshot()
      -- db2 commits first (earlier times), db after; db pushes first, so db2's snapshots land above db's
      db2:transaction(function(t) t:create_table("theirs_first", EVENT_COLS) end)
      db2:transaction(function(t) t:create_table("theirs_second", EVENT_COLS) end)
      db:transaction(function(t) t:create_table("mine", EVENT_COLS) end)
      local early = db2:read(function(rd) return rd:snapshot(db2:last_snapshot()).snapshot_time end)
      assert.are.equal(1, push.push(db, file).snapshots)
      local r = push.push(db2, file)
      assert.is_true(r.rebased)
      assert.are.equal(2, r.snapshots)
      local function micros(text) -- "... 12:34:56.5+00" -> "... 12:34:56.500000+00": comparable as text
        return (text:gsub("%.(%d+)", function(f) return "." .. (f .. "000000"):sub(1, 6) end))
      end
      local con, env = env_con(file)
      local rows = sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id", "snapshot_time" }, "snapshot_id > " .. istr(C))
      table.sort(rows, function(a, b) return a[1] < b[1] end)
      assert.are.equal(3, #rows)
      for i = 2, 3 do
        assert.is_true(micros(rows[i][2]) > micros(rows[i - 1][2]), rows[i - 1][2] .. " then " .. rows[i][2])
      end
      -- moved, not kept: db2's last snapshot was made before db's; and no further than it must: just above the
      -- head (the fixture's snapshot C is days older than the head; a time moved by that much would lie ahead of now)
      assert.is_true(micros(early) < micros(rows[1][2]))
      assert.are_not.equal(micros(early), micros(rows[3][2]))
      local soon = os.date("!%Y-%m-%d %H:%M:%S", os.time() + 5) .. ".000000+00"
      for _, row in ipairs(rows) do assert.is_true(micros(row[2]) < soon, row[2] .. " is ahead of now") end
      -- the catalog took the target's rows, times included; its push again writes nothing
      db2:read(function(rd)
        for _, row in ipairs(rows) do assert.are.equal(micros(row[2]), micros(rd:snapshot(row[1]).snapshot_time)) end
      end)
      assert.are.equal(0, push.push(db2, file).snapshots)
      con:close()
      env:close()
      db:close()
      db2:close()
    end)

  it("a rebased push whose file another writer deletes right after the push's last transaction: the catalog takes "
    .. "the pushed snapshots (the file live at them), and a sync brings the delete", function()
    local db, file = lake("s2_multi_table")
    local con, env = env_con(file)
    -- a DuckLake-shaped snapshot creating a schema: the push rebases
    sql_snapshot(con, db:last_snapshot(), { changes = 'created_schema:"first"', sv = 1, cat = 1, sql = {
      "INSERT INTO ducklake_schema SELECT next_catalog_id - 1, 'b5b0e7b6-0000-4000-8000-0000000000a3', %S, NULL, "
        .. "'first', 'first/', 1 FROM ducklake_snapshot WHERE snapshot_id = %S" } })
    db:transaction(function(t)
      t:add_data_files({ schema = "sales", table = "orders" }, { { path = "gone-soon.parquet", record_count = 5,
        file_size_bytes = 50 } })
    end)
    local ended
    local r = push.push(db, file, { progress = function(done, total, s)
      if done == total and not ended then
        -- after the push's last transaction, before the catalog takes the target's snapshots: a snapshot ending
        -- the pushed file
        ended = sql_snapshot(con, s, { changes = "deleted_from_table:1", sql = {
          "UPDATE ducklake_data_file SET end_snapshot = %S WHERE path = 'gone-soon.parquet'" } })
      end
    end })
    assert.is_truthy(ended)
    assert.is_true(r.rebased)
    assert.are.equal(istr(r.to), istr(db:last_snapshot()))
    local live = false
    for _, row in ipairs(support.rows_of(db, "ducklake_data_file")) do
      if row.path == "gone-soon.parquet" then live = row.end_snapshot == moraine.null end
    end
    assert.is_true(live)
    assert.are.same({}, db:verify())
    -- the next sync reads the writer's snapshot: the file ends there
    require("moraine.sync").sync(db, file)
    local ends
    for _, row in ipairs(support.rows_of(db, "ducklake_data_file", { at = moraine.ALL })) do
      if row.path == "gone-soon.parquet" then ends = istr(row.end_snapshot) end
    end
    assert.are.equal(ended, ends)
    con:close()
    env:close()
    db:close()
  end)

  it("refuses NaN for a SQLite target (SQLite would store NULL), naming table and column, writing nothing", function()
    local src = support.import_fixture("s1_evolution")
    local file = support.tmpdir("nan-lake") .. ".sqlite"
    sqlite.export_sqlite(src, file)
    src:close()
    assert.is_true(support.sh("sqlite3 " .. q(file) .. " 'CREATE TABLE ducklake_extra_reals (v DOUBLE)'"))
    local db = moraine.open(support.tmpdir("nan-cat"), { no_sync = true })
    sqlite.import(db, file)
    db:commit(nil, function(tx)
      tx:define("ducklake_extra_reals", { "v" })
      tx:put_row("ducklake_extra_reals", { v = 1.5 }, 0)
      tx:put_row("ducklake_extra_reals", { v = 0 / 0 }, 1)
    end)
    local head = db:last_snapshot()
    db:transaction(function(t) t:create_schema("s9") end)
    support.expect_err("EINVAL", { file, "ducklake_extra_reals.v", "holds NaN", "nothing of its snapshot written" },
      push.push, db, file)
    local con, env = env_con(file)
    local rows = sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id" }, "snapshot_id > " .. istr(head))
    assert.are.equal(0, #rows)
    assert.are.equal(0, #sqlite.select_rows(con, "ducklake_extra_reals", { "v" }))
    con:close()
    env:close()
    db:close()
  end)

  it("a rebase stopped after its first snapshot and run again writes the rest, each once, also when two of moraine's "
    .. "snapshots have the same time", function()
    local db, file = lake("s2_multi_table")
    -- db3: four snapshots (tables a, b, c, d) made from the target before db pushes m1; a and b with the same
    -- time, all later than m1's
    local db3, C = retimed_catalog(file, "same-time", function(db2)
      for _, name in ipairs({ "a", "b", "c", "d" }) do
        db2:transaction(function(t) t:create_table(name, EVENT_COLS) end)
      end
    end, { "250000", "250000", "300000", "400000" })
    db:transaction(function(t) t:create_table("m1", EVENT_COLS) end)
    assert.are.equal(1, push.push(db, file).snapshots)
    -- the first push of db3 stops after its first (rebased) snapshot, as a kill would
    support.expect_err("EINVAL", "push cancelled after snapshot", push.push, db3, file,
      { progress = function(done) return done == 1 end })
    local r = push.push(db3, file)
    assert.are.equal(3, r.snapshots)
    local con, env = env_con(file)
    for _, name in ipairs({ "m1", "a", "b", "c", "d" }) do
      local rows = sqlite.select_rows(con, "ducklake_table", { "table_id" }, "table_name = '" .. name .. "'")
      assert.are.equal(1, #rows, name)
    end
    assert.are.equal(istr(C + 5), istr(target_head_of(con)))
    con:close()
    env:close()
    assert.are.equal(0, push.push(db3, file).snapshots)
    db3:close()
    db:close()
  end)

  it("a rebased push keeps a DuckLake writer's table stats for a table moraine's written snapshot changed", function()
    local db, file = lake("s2_multi_table")
    local con, env = env_con(file)
    sql_snapshot(con, db:last_snapshot(), { changes = 'created_schema:"w1"', sv = 1, cat = 1, sql = {
      "INSERT INTO ducklake_schema SELECT next_catalog_id - 1, 'b5b0e7b6-0000-4000-8000-0000000000a1', %S, NULL, 'w1', "
        .. "'w1/', 1 FROM ducklake_snapshot WHERE snapshot_id = %S" } })
    local orders = { schema = "sales", table = "orders" }
    db:transaction(function(t)
      t:add_data_files(orders, { { path = "p1.parquet", record_count = 10, file_size_bytes = 100 } })
    end)
    db:transaction(function(t) t:set_sorting({ schema = "sales", table = "tmp" }, { "x" }) end)
    local tid = db:read(function(rd) return rd:table_id("sales", "orders") end)
    local function stats(rows_of)
      for _, r in ipairs(rows_of) do
        if vkey(r[1]) == vkey(tid) then return { istr(r[2]), istr(r[3]), istr(r[4]) } end
      end
    end
    local cols = { "table_id", "record_count", "next_row_id", "file_size_bytes" }
    local mine
    for _, row in ipairs(support.rows_of(db, "ducklake_table_stats")) do
      if vkey(row.table_id) == vkey(tid) then mine = { row.record_count, row.next_row_id, row.file_size_bytes } end
    end
    -- after moraine's first (rebased) snapshot, a DuckLake insert of 5 rows into orders
    local wrote = false
    local r = push.push(db, file, { progress = function(done, _, s)
      if done == 1 and not wrote then
        wrote = true
        sql_snapshot(con, s, { changes = "inserted_into_table:" .. istr(tid), sql = {
          "UPDATE ducklake_table_stats SET record_count = record_count + 5, next_row_id = next_row_id + 5, "
            .. "file_size_bytes = file_size_bytes + 50 WHERE table_id = " .. istr(tid) } })
      end
    end })
    assert.is_true(wrote)
    assert.is_true(r.rebased)
    local want = { istr(mine[1] + 5), istr(mine[2] + 5), istr(mine[3] + 50) }
    assert.are.same(want, stats(sqlite.select_rows(con, "ducklake_table_stats", cols)))
    local back = {}
    for i, row in ipairs(support.rows_of(db, "ducklake_table_stats")) do back[i] = { row.table_id, row.record_count,
      row.next_row_id, row.file_size_bytes } end
    assert.are.same(want, stats(back))
    con:close()
    env:close()
    db:close()
  end)

  it("a push gives no table stats to a table a later snapshot creates before that snapshot is written", function()
    local db, file = lake("s2_multi_table")
    local con, env = env_con(file)
    db:transaction(function(t)
      t:add_data_files({ schema = "sales", table = "orders" }, { { path = "p1.parquet", record_count = 10,
        file_size_bytes = 100 } })
    end)
    db:transaction(function(t)
      t:create_table("m2", EVENT_COLS)
      t:add_data_files("m2", { { path = "m2.parquet", record_count = 77, file_size_bytes = 7777 } })
    end)
    local m2 = db:read(function(rd) return rd:table_id(nil, "m2") end)
    local early, x
    local r = push.push(db, file, { progress = function(done, _, s)
      if done == 1 and not x then
        -- the target after moraine's first snapshot: no stats of m2 (its table does not exist there yet)
        early = #sqlite.select_rows(con, "ducklake_table_stats", { "table_id" }, "table_id = " .. istr(m2))
        -- a DuckLake writer creates table main.x, taking the next catalog id: m2's, before the rebase
        x = istr(m2)
        sql_snapshot(con, s, { changes = 'created_table:"main"."x"', sv = 1, cat = 1, sql = {
          "INSERT INTO ducklake_table VALUES (" .. x .. ", 'b5b0e7b6-0000-4000-8000-0000000000a2', %S, NULL, 0, 'x', "
            .. "'x/', 1)" } })
      end
    end })
    assert.are.equal(0, early)
    assert.is_true(r.rebased)
    -- x has no stats row; m2 (renumbered) has its own
    assert.are.equal(0, #sqlite.select_rows(con, "ducklake_table_stats", { "table_id" }, "table_id = " .. x))
    local m2now = db:read(function(rd) return rd:table_id(nil, "m2") end)
    local rows = sqlite.select_rows(con, "ducklake_table_stats", { "record_count", "file_size_bytes" },
      "table_id = " .. istr(m2now))
    assert.are.equal(1, #rows)
    assert.are.same({ "77", "7777" }, { istr(rows[1][1]), istr(rows[1][2]) })
    con:close()
    env:close()
    db:close()
  end)

  it("a target whose newest snapshot has no changes row (or a NULL one) still takes the push as moraine's, once",
    function()
      for _, edit in ipairs({ "DELETE FROM ducklake_snapshot_changes WHERE snapshot_id = %d",
        "UPDATE ducklake_snapshot_changes SET changes_made = NULL WHERE snapshot_id = %d" }) do
        local db, file = lake("s2_multi_table")
        local head = db:last_snapshot()
        assert.is_true(support.sh("sqlite3 " .. q(file) .. " " .. q(string.format(edit, tonumber(istr(head))))))
        db:transaction(function(t)
          t:add_data_files({ schema = "sales", table = "tmp" }, { { path = "once.parquet", record_count = 1,
            file_size_bytes = 10 } })
        end)
        local r = push.push(db, file)
        assert.are.equal(1, r.snapshots)
        assert.is_falsy(r.rebased)
        local con, env = env_con(file)
        assert.are.equal(1, #sqlite.select_rows(con, "ducklake_data_file", { "data_file_id" }, "path = 'once.parquet'"))
        con:close()
        env:close()
        db:close()
      end
    end)

  it("a rebase stopped after its first snapshot, whose next has the same time and changes, is finished by a re-run",
    function()
      local db, file = lake("s2_multi_table")
      local orders = { schema = "sales", table = "orders" }
      local db3, C = retimed_catalog(file, "twin", function(db2)
        for _, p in ipairs({ "p1.parquet", "p2.parquet" }) do
          db2:transaction(function(t) t:add_data_files(orders, { { path = p, record_count = 3, file_size_bytes = 30 } }) end)
        end
      end, { "250000", "250000" })
      db:transaction(function(t)
        t:add_data_files({ schema = "sales", table = "tmp" }, { { path = "f.parquet", record_count = 1, file_size_bytes = 9 } })
      end)
      assert.are.equal(1, push.push(db, file).snapshots)
      support.expect_err("EINVAL", "push cancelled after snapshot", push.push, db3, file,
        { progress = function(done) return done == 1 end })
      local r = push.push(db3, file)
      assert.are.equal(1, r.snapshots)
      assert.is_true(r.rebased)
      local con, env = env_con(file)
      for _, p in ipairs({ "f.parquet", "p1.parquet", "p2.parquet" }) do
        assert.are.equal(1, #sqlite.select_rows(con, "ducklake_data_file", { "data_file_id" }, "path = '" .. p .. "'"), p)
      end
      assert.are.equal(istr(C + 3), istr(target_head_of(con)))
      con:close()
      env:close()
      assert.are.equal(0, push.push(db3, file).snapshots)
      db3:close()
      db:close()
    end)

  it("a push restarted by another writer: the column mapping its written snapshot's file names went with it", function()
    -- the catalog follows file A and pushes to B, a copy of A; A's writer (DuckLake) adds two snapshots, the first
    -- with a file mapped by name (mapping 0)
    local db, A = lake("s1_evolution")
    local B = A .. ".mirror.sqlite"
    support.write(B, support.read(A))
    local acon, aenv = env_con(A)
    sql_snapshot(acon, 20, { changes = "inserted_into_table:1", file = 1, sql = {
      "INSERT INTO ducklake_column_mapping VALUES (0, 1, 'map_by_name')",
      "INSERT INTO ducklake_name_mapping VALUES (0, 1, 'id', 1, NULL, 0)",
      "INSERT INTO ducklake_data_file VALUES (113, 1, %S, NULL, NULL, 'm1.parquet', 1, 'parquet', 10, 100, 10, 2209, "
        .. "NULL, NULL, 0, NULL, 1)",
      "UPDATE ducklake_table_stats SET record_count = record_count + 10, next_row_id = next_row_id + 10 WHERE table_id = 1" } })
    sql_snapshot(acon, 21, { changes = "inserted_into_table:1", file = 1, sql = {
      "INSERT INTO ducklake_data_file VALUES (114, 1, %S, NULL, NULL, 'm2.parquet', 1, 'parquet', 10, 100, 10, 2219, "
        .. "NULL, NULL, NULL, NULL, 1)",
      "UPDATE ducklake_table_stats SET record_count = record_count + 10, next_row_id = next_row_id + 10 WHERE table_id = 1" } })
    acon:close()
    aenv:close()
    require("moraine.sync").sync(db, A)
    local con, env = env_con(B)
    local mapped_after_first
    local r = push.push(db, B, { progress = function(done, _, s)
      if done == 1 and mapped_after_first == nil then
        mapped_after_first = #sqlite.select_rows(con, "ducklake_column_mapping", { "mapping_id" }, "mapping_id = 0")
        sql_snapshot(con, s, { changes = 'created_schema:"w1"', sv = 1, cat = 1, sql = {
          "INSERT INTO ducklake_schema SELECT next_catalog_id - 1, 'b5b0e7b6-0000-4000-8000-0000000000a4', %S, NULL, 'w1', "
            .. "'w1/', 1 FROM ducklake_snapshot WHERE snapshot_id = %S" } })
      end
    end })
    assert.are.equal(1, mapped_after_first) -- with the file that names it, not after
    assert.is_true(r.rebased)
    assert.are.equal(1, #sqlite.select_rows(con, "ducklake_column_mapping", { "mapping_id" }))
    assert.are.equal(1, #sqlite.select_rows(con, "ducklake_name_mapping", { "mapping_id" }))
    con:close()
    env:close()
    db:close()
  end)

  it("a snapshot that inlines rows carries its table's stats and inlined data table row in its own transaction",
    function()
      local db, A = lake("s1_evolution")
      local acon, aenv = env_con(A)
      local h = tonumber(istr(target_head_of(acon)))
      assert(acon:execute("CREATE TABLE ducklake_inlined_data_1_9(row_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, "
        .. "id BIGINT)"))
      local B = A .. ".mirror.sqlite"
      support.write(B, support.read(A))
      sql_snapshot(acon, h, { changes = "inserted_into_table:1", sql = {
        "INSERT INTO ducklake_inlined_data_tables VALUES (1, 'ducklake_inlined_data_1_9', 9)",
        "INSERT INTO ducklake_inlined_data_1_9 SELECT next_row_id, %S, NULL, 7 FROM ducklake_table_stats WHERE table_id = 1",
        "UPDATE ducklake_table_stats SET record_count = record_count + 1, next_row_id = next_row_id + 1 WHERE table_id = 1" } })
      sql_snapshot(acon, h + 1, { changes = 'created_schema:"w1"', sv = 1, cat = 1, sql = {
        "INSERT INTO ducklake_schema SELECT next_catalog_id - 1, 'b5b0e7b6-0000-4000-8000-0000000000a5', %S, NULL, 'w1', "
          .. "'w1/', 1 FROM ducklake_snapshot WHERE snapshot_id = %S" } })
      local want = sqlite.select_rows(acon, "ducklake_table_stats", { "next_row_id" }, "table_id = 1")[1][1]
      acon:close()
      aenv:close()
      require("moraine.sync").sync(db, A)
      local con, env = env_con(B)
      local seen
      assert.are.equal(2, push.push(db, B, { progress = function(done)
        if done == 1 then
          seen = { istr(sqlite.select_rows(con, "ducklake_table_stats", { "next_row_id" }, "table_id = 1")[1][1]),
            #sqlite.select_rows(con, "ducklake_inlined_data_tables", { "table_id" }) }
        end
      end }).snapshots)
      assert.are.same({ istr(want), 1 }, seen)
      con:close()
      env:close()
      db:close()
    end)

  it("a catalog whose source expired snapshots the target still has pushes its own, not rebased", function()
    for _, expired in ipairs({ "0, 1", "5" }) do
      local db, A = lake("s1_evolution")
      local B = A .. ".mirror.sqlite"
      support.write(B, support.read(A))
      assert.is_true(support.sh("sqlite3 " .. q(A) .. " " .. q("DELETE FROM ducklake_snapshot WHERE snapshot_id IN ("
        .. expired .. "); DELETE FROM ducklake_snapshot_changes WHERE snapshot_id IN (" .. expired .. ")")))
      require("moraine.sync").sync(db, A)
      db:transaction(function(t) t:create_table("k", EVENT_COLS) end)
      local r = push.push(db, B)
      assert.are.equal(1, r.snapshots, expired)
      assert.is_falsy(r.rebased, expired)
      db:close()
    end
  end)

  it("two catalogs pushing to one target: the second rebases onto the first, nothing written twice", function()
    local db, file = lake("s2_multi_table")
    local db2 = moraine.open(support.tmpdir("cat2"), { no_sync = true })
    sqlite.import(db2, file)
    local C = db:last_snapshot()
    db:transaction(function(t) t:create_table("left_t", EVENT_COLS) end)
    db:transaction(function(t)
      t:add_data_files("left_t", { { path = "l1.parquet", record_count = 4, file_size_bytes = 40 } })
    end)
    -- db2: a table of its own, files into it, and a table of the fixture repartitioned
    db2:transaction(function(t) t:create_table("right_t", EVENT_COLS) end)
    db2:transaction(function(t)
      t:add_data_files("right_t", { { path = "r1.parquet", record_count = 7, file_size_bytes = 70,
        stats = { { column = "id", value_count = 7, null_count = 0, min_value = "1", max_value = "7" } } } })
    end)
    db2:transaction(function(t) t:set_sorting({ schema = "sales", table = "clients" }, { "name" }) end)
    local mine = db2:read(function(rd) return rd:table_id(nil, "right_t") end)
    assert.are.equal(2, push.push(db, file).snapshots)
    local r = push.push(db2, file)
    assert.are.equal(3, r.snapshots)
    assert.is_true(r.rebased)
    assert.are.equal(istr(C + 2), istr(r.from))
    assert.are.equal(istr(C + 5), istr(r.to))
    -- the catalog took the target's snapshots and the new ids: left_t's two, then its own three renumbered
    assert.are.equal(istr(C + 5), istr(db2:last_snapshot()))
    assert.are.same({}, db2:verify())
    local renumbered = db2:read(function(rd) return rd:table_id(nil, "right_t") end)
    local left = db2:read(function(rd) return rd:table_id(nil, "left_t") end)
    assert.are_not.equal(istr(mine), istr(renumbered))
    assert.are.equal(istr(mine), istr(left)) -- both took the first free catalog id; the first push kept it
    check_target(db2, file)
    local con, env = env_con(file)
    assert.are.equal(2, #sqlite.select_rows(con, "ducklake_table", { "table_name" },
      "table_name IN ('left_t', 'right_t')"))
    -- the snapshots' counters go on from the first push's head, as DuckLake's retry would write them
    local heads = sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id", "next_catalog_id", "next_file_id" },
      "snapshot_id > " .. istr(C))
    table.sort(heads, function(a, b) return a[1] < b[1] end)
    assert.are.equal(5, #heads)
    for i = 2, 5 do
      assert.is_true(heads[i][2] >= heads[i - 1][2])
      assert.is_true(heads[i][3] >= heads[i - 1][3])
    end
    con:close()
    env:close()
    -- both catalogs now read the same lake; a push of either writes nothing
    assert.are.equal(0, push.push(db2, file).snapshots)
    db:close()
    db2:close()
  end)

  it("refuses to rebase onto a target snapshot that changed a table moraine also changed, writing nothing", function()
    for _, both_insert in ipairs({ false, true }) do
      local db, file = lake("s2_multi_table")
      local db2 = moraine.open(support.tmpdir("cat2"), { no_sync = true })
      sqlite.import(db2, file)
      local orders = { schema = "sales", table = "orders" }
      if both_insert then
        -- DuckLake lets two inserts into one table commit; moraine does not re-run the insert (row ids)
        db:transaction(function(t) t:add_data_files(orders, { { path = "a.parquet", record_count = 1, file_size_bytes = 1 } }) end)
      else
        db:transaction(function(t) t:set_partitioning(orders, { "status" }) end)
      end
      db2:transaction(function(t) t:create_table("right_t", EVENT_COLS) end)
      local S2 = db2:transaction(function(t)
        t:add_data_files(orders, { { path = "b.parquet", record_count = 2, file_size_bytes = 2 } })
      end)
      assert.are.equal(1, push.push(db, file).snapshots)
      local con, env = env_con(file)
      local n0 = #sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id" })
      local before = support.dump(db2)
      local tid = db:read(function(rd) return rd:table_id("sales", "orders") end)
      support.expect_err("ECONFLICT", { "moved on", "its snapshot " .. istr(db:last_snapshot()),
        '"sales"."orders"', "table_id " .. istr(tid), "unpushed snapshot " .. istr(S2), "nothing written" },
        push.push, db2, file)
      assert.are.equal(n0, #sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id" }))
      assert.are.equal(0, #sqlite.select_rows(con, "ducklake_table", { "table_name" }, "table_name = 'right_t'"))
      assert.are.same(before, support.dump(db2))
      con:close()
      env:close()
      db:close()
      db2:close()
    end
  end)

  it("realign: a catalog whose own snapshot the target never took becomes equal to the target in one commit", function()
    local db, file = lake("s2_multi_table")
    local db2 = moraine.open(support.tmpdir("cat2"), { no_sync = true })
    sqlite.import(db2, file)
    local C = db:last_snapshot()
    db:transaction(function(t) t:create_table("left_t", EVENT_COLS) end)
    db:transaction(function(t) t:set_partitioning("left_t", { "year(ts)" }) end)
    db2:transaction(function(t) t:create_table("right_t", EVENT_COLS) end)
    assert.are.equal(2, push.push(db, file).snapshots)
    local before = support.dump(db2)
    -- a head that is not the target's: refused, the catalog unchanged
    support.expect_err("ECONFLICT", "has no snapshot", push.realign, db2, file, C, db:last_snapshot() + 5)
    assert.are.same(before, support.dump(db2))
    push.realign(db2, file, C, db:last_snapshot())
    assert.are.same(support.dump(db), support.dump(db2))
    assert.are.same({}, db2:verify())
    check_target(db2, file)
    db:close()
    db2:close()
  end)

  it("refuses bad targets and options, writing nothing", function()
    local db, file = lake("s1_evolution")
    migrate(db)
    assert.has_error(function() push.push(db, 7) end)
    assert.has_error(function() push.push(db, file, 7) end)
    support.expect_err("EINVAL", "unknown option 'zap'", push.push, db, file, { zap = true })
    support.expect_err("EIO", "cannot open", push.push, db, support.tmpdir("none") .. ".sqlite")
    local junk = support.tmpdir("junk")
    support.write(junk, "not a database at all\n")
    support.expect_err("EINVAL", "not a SQLite database", push.push, db, junk)
    support.expect_err("EIO", "cannot connect to PostgreSQL", push.push, db,
      "postgres:host=127.0.0.1 port=1 dbname=lake connect_timeout=5")
    -- a SQLite file that is no DuckLake catalog
    local other = support.tmpdir("other") .. ".sqlite"
    local con, env = env_con(other)
    assert(con:execute("CREATE TABLE t (a INTEGER)"))
    con:close()
    env:close()
    support.expect_err("EINVAL", "not a DuckLake catalog", push.push, db, other)
    -- a target lacking a column moraine's new rows use: refused before anything is written
    con, env = env_con(file)
    assert(con:execute("ALTER TABLE ducklake_snapshot_changes RENAME COLUMN author TO author_x"))
    local n0 = #sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id" })
    support.expect_err("EINVAL", { "no column author", "nothing written" }, push.push, db, file)
    assert.are.equal(n0, #sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id" }))
    con:close()
    env:close()
    -- a target whose row moraine ends is not live there any more: refused naming the row, nothing written
    local db3, file3 = lake("s1_evolution")
    db3:transaction(function(t) t:rename_column("events", "note", "remark") end)
    con, env = env_con(file3)
    assert(con:execute("UPDATE ducklake_column SET end_snapshot = 20 WHERE column_name = 'note' AND end_snapshot IS NULL"))
    n0 = #sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id" })
    support.expect_err("ECONFLICT", { "ducklake_column has 0 live rows", "column_id = ", "nothing of snapshot 21 written" },
      push.push, db3, file3)
    assert.are.equal(n0, #sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id" }))
    con:close()
    env:close()
    db3:close()
    -- a catalog that does not come from the target
    local stranger = support.import_fixture("s3_edge_values")
    stranger:transaction(function(t) t:create_table("s", EVENT_COLS) end)
    support.expect_err("ECONFLICT", "share no snapshot", push.push, stranger, file)
    stranger:close()
    db:close()
  end)
end)

describe("moraine push (the command)", function()
  local run = support.moraine

  it("exports --format sqlite, pushes, says up to date, refuses a missing target and an unknown format", function()
    local cat = support.tmpdir("c")
    local file = support.tmpdir("f") .. ".sqlite"
    local r = run({ "-c", cat, "import", FIX .. "/s1_evolution/catalog" })
    assert.are.equal(0, r.code, r.err)
    r = run({ "-c", cat, "export", file })
    assert.are.equal(0, r.code, r.err)
    assert.truthy(r.out:find("(sqlite)", 1, true), r.out)
    local db = moraine.open(cat, { no_sync = true })
    local n = #migrate(db)
    db:close()
    r = run({ "-c", cat, "push", file })
    assert.are.equal(0, r.code, r.err)
    assert.truthy(r.out:find("pushed " .. n .. " snapshots to ", 1, true), r.out)
    r = run({ "-c", cat, "push", file })
    assert.are.equal(0, r.code, r.err)
    assert.truthy(r.out:find("is up to date", 1, true), r.out)
    r = run({ "-c", cat, "push", support.tmpdir("missing") })
    assert.are.equal(1, r.code)
    assert.truthy(r.err:find("no such file", 1, true), r.err)
    r = run({ "-c", cat, "export", support.tmpdir("e") .. ".x", "--format", "parquet" })
    assert.are.equal(2, r.code)
    assert.truthy(r.err:find("ndjson, sql or sqlite", 1, true), r.err)
    db = moraine.open(cat, { no_sync = true })
    check_target(db, file)
    db:close()
  end)

  it("two pushes racing as processes: both land (the later one rebased), nothing written twice", function()
    local file = support.tmpdir("race") .. ".sqlite"
    local src = support.import_fixture("s2_multi_table")
    sqlite.export_sqlite(src, file)
    src:close()
    local cats = {}
    for i, name in ipairs({ "left", "right" }) do
      cats[i] = support.tmpdir(name)
      local db = moraine.open(cats[i], { no_sync = true })
      sqlite.import(db, file)
      for j = 1, 40 do
        db:transaction(function(t)
          if j == 1 then t:create_table(name, EVENT_COLS) end
          t:add_data_files(name, { { path = name .. j .. ".parquet", record_count = j, file_size_bytes = j } })
        end)
      end
      db:close()
    end
    local dir = support.tmpdir("raceout")
    support.mkdir(dir)
    os.execute(("cd %s && for i in 1 2; do c=$([ $i = 1 ] && echo %s || echo %s); "
      .. "(MORAINE_CATALOG= MORAINE_LUA=%s sh scripts/moraine-dev -c \"$c\" push %s >%s/out$i 2>&1; echo $? >%s/rc$i) & "
      .. "done; wait"):format(q(ROOT), q(cats[1]), q(cats[2]), RUNTIME, q(file), q(dir), q(dir)))
    local out = support.read(dir .. "/out1") .. support.read(dir .. "/out2")
    -- the two catalogs change different tables: the one that finds the other's snapshots rebases onto them
    assert.are.equal(0, tonumber(support.read(dir .. "/rc1"):match("%d+")), out)
    assert.are.equal(0, tonumber(support.read(dir .. "/rc2"):match("%d+")), out)
    local con, env = env_con(file)
    assert.are.equal(2, #sqlite.select_rows(con, "ducklake_table", { "table_name" }, "table_name IN ('left', 'right')"))
    -- each data file once, each snapshot whole
    local paths = sqlite.select_rows(con, "ducklake_data_file", { "path" }, "path LIKE 'left%' OR path LIKE 'right%'")
    assert.are.equal(80, #paths)
    local seen = {}
    for _, p in ipairs(paths) do
      assert.is_nil(seen[p[1]], p[1])
      seen[p[1]] = true
    end
    local head = sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id" },
      "snapshot_id = (SELECT max(snapshot_id) FROM ducklake_snapshot)")[1][1]
    con:close()
    env:close()
    -- the catalog that pushed last holds the whole target, renumbered snapshots and all
    local last
    for i = 1, 2 do
      local db = moraine.open(cats[i], { no_sync = true, read_only = true })
      if istr(db:last_snapshot()) == istr(head) then last = db else db:close() end
    end
    assert.is_truthy(last, out)
    assert.are.same({}, last:verify())
    check_target(last, file)
    last:close()
  end)

  it("a push killed at random points leaves whole snapshots and a re-run finishes the job", function()
    local cat = support.tmpdir("k")
    local file = support.tmpdir("kf") .. ".sqlite"
    local db = support.import_fixture("s1_evolution")
    sqlite.export_sqlite(db, file)
    db:close()
    db = moraine.open(cat, { no_sync = true })
    sqlite.import(db, file)
    local base = db:last_snapshot()
    db:transaction(function(t) t:create_table("k", EVENT_COLS) end)
    for i = 1, 120 do
      db:transaction(function(t)
        t:add_data_files("k", { { path = "k" .. i .. ".parquet", record_count = i, file_size_bytes = 1000 + i } })
      end)
    end
    local last = db:last_snapshot()
    db:close()
    support.seed()
    local kills, mid = 0, 0
    local con, env = env_con(file)
    local function head()
      local rows = sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id" },
        "snapshot_id = (SELECT max(snapshot_id) FROM ducklake_snapshot)")
      return rows[1][1]
    end
    local function whole()
      -- every snapshot has its changes row, and the data files are exactly one per snapshot pushed of table k
      local snaps = #sqlite.select_rows(con, "ducklake_snapshot", { "snapshot_id" }, "snapshot_id > " .. istr(base))
      local changes = #sqlite.select_rows(con, "ducklake_snapshot_changes", { "snapshot_id" },
        "snapshot_id > " .. istr(base))
      local files = #sqlite.select_rows(con, "ducklake_data_file", { "data_file_id" },
        "begin_snapshot > " .. istr(base))
      assert.are.equal(snaps, changes, "snapshot and changes rows")
      assert.are.equal(math.max(snaps - 1, 0), files, "one data file per snapshot after the first")
    end
    local out = support.tmpdir("kout")
    local original = support.read(file)
    -- the delay before SIGKILL is random in [wait, 2 * wait]; a kill that
    -- landed before the push wrote anything (a slow start: a loaded machine,
    -- a sanitizer build) doubles wait, up to 8 s; a push that finished before
    -- any kill landed mid-push (doubling stepped over the window) starts again
    -- on the original target with half the wait
    local wait = 0.05
    for _ = 1, 40 do
      if head() == last then
        if mid > 0 then break end
        con:close()
        env:close()
        for _, f in ipairs({ file, file .. "-journal", file .. "-wal", file .. "-shm" }) do os.remove(f) end
        support.write(file, original)
        con, env = env_con(file)
        wait = math.max(wait / 2, 0.01)
      end
      local before = head()
      local delay = wait * (1 + math.random())
      os.execute(("cd %s && (MORAINE_CATALOG= MORAINE_LUA=%s sh scripts/moraine-dev -c %s push %s >%s 2>&1 & "
        .. "pid=$!; sleep %.3f; kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null) >/dev/null 2>&1"):format(
        q(ROOT), RUNTIME, q(cat), q(file), q(out), delay))
      kills = kills + 1
      whole()
      local now = head()
      if now ~= before and now ~= last then mid = mid + 1 end
      if now == before then wait = math.min(wait * 2, 8) end
    end
    assert.is_true(kills > 0)
    local r = push.push(moraine.open(cat, { no_sync = true, read_only = true }), file)
    assert.is_true(r.snapshots >= 0)
    assert.are.equal(istr(last), istr(head()))
    whole()
    con:close()
    env:close()
    db = moraine.open(cat, { no_sync = true, read_only = true })
    check_target(db, file)
    db:close()
    -- at least one kill landed in the middle of a push (the target between its start and the end)
    assert.is_true(mid > 0, "kills " .. kills .. ", none mid-push")
  end)
end)
