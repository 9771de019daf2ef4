-- moraine.push into a real PostgreSQL DuckLake catalog: the server the sync
-- suite starts (tests/pg/pg-server.sh through spec/pg_support.lua), each
-- fixture loaded into it with DuckLake's column types and synced from it
-- into a new moraine catalog (moraine.sync), the example migrations run in moraine as
-- verbs, pushed, and the server's tables read back with plain SQL: every
-- table equal to moraine's, and DuckLake's SQL filter at every snapshot giving
-- moraine's rows. A DuckLake-shaped snapshot appended by a second connection
-- during the push exercises the conflict; a value PostgreSQL text cannot hold
-- is refused with nothing written.
local moraine = require "moraine"
local push = require "moraine.push"
local sync = require "moraine.sync"
local support = require "support"
local pg = require "pg_support"
local push_support = require "push_support"

local N = moraine.null
local FIX = support.FIXTURES

local function istr(v)
  if type(v) == "number" and not math.type then return string.format("%.0f", v) end
  return (tostring(v):gsub("U?LL$", ""))
end

-- a value as text: moraine's side as PostgreSQL's ::text writes it
local function vkey(v)
  if v == nil or v == N then return "NULL" end
  if type(v) == "boolean" then return v and "true" or "false" end
  if type(v) == "table" and v.json then return "'" .. v.json .. "'" end
  if type(v) == "string" then return "'" .. v .. "'" end
  return istr(v)
end

local function pg_columns(c, name)
  local cur = assert(c.con:execute("SELECT column_name, data_type FROM information_schema.columns WHERE "
    .. "table_schema = current_schema() AND table_name = '" .. name .. "' ORDER BY ordinal_position"))
  local out, types = {}, {}
  local r = cur:fetch({}, "n")
  while r do
    out[#out + 1] = r[1]
    types[r[1]] = r[2]
    r = cur:fetch({}, "n")
  end
  cur:close()
  return out, types
end

-- sorted row texts of a plain SELECT (every column ::text, NULL as NULL)
local function pg_rows(c, name, cols, types, where)
  local sel = {}
  for i, col in ipairs(cols) do sel[i] = '"' .. col .. '"::text' end
  local cur = assert(c.con:execute("SELECT " .. table.concat(sel, ", ") .. " FROM " .. name
    .. (where and (" WHERE " .. where) or "")))
  local out = {}
  local r = cur:fetch({}, "n")
  while r do
    local parts = {}
    for i = 1, #cols do
      local v = r[i]
      if v == nil then parts[i] = "NULL"
      elseif types[cols[i]] == "boolean" or types[cols[i]] == "bigint" then parts[i] = v -- true/false, digits
      else parts[i] = "'" .. v .. "'" end
    end
    out[#out + 1] = table.concat(parts, "|")
    r = cur:fetch({}, "n")
  end
  cur:close()
  table.sort(out)
  return out
end

-- PostgreSQL writes a timestamptz's microseconds without trailing zeros (as
-- DuckDB does); moraine's verbs write six digits
local function trim_micros(v)
  if type(v) ~= "string" then return v end
  return (v:gsub("(%.%d-)0+([%+%-])", "%1%2"):gsub("%.([%+%-])", "%1"))
end

local function moraine_rows(entries, cols, types)
  local out = {}
  for _, e in ipairs(entries) do
    local row = e.row or e
    local parts = {}
    for i, col in ipairs(cols) do
      local v = row[col]
      if types[col] == "timestamp with time zone" then v = trim_micros(v) end
      parts[i] = vkey(v)
    end
    out[#out + 1] = table.concat(parts, "|")
  end
  table.sort(out)
  return out
end

local function same_list(a, b, what)
  assert.are.equal(#b, #a, what .. ": row count")
  for i = 1, #a do
    if a[i] ~= b[i] then assert.are.equal(b[i], a[i], what .. ": row " .. i) end
  end
end

local function check_target(db, c)
  local last = db:last_snapshot()
  for _, rel in ipairs(db:relations()) do
    local cols, types = pg_columns(c, rel.name)
    assert.is_true(#cols > 0, "PostgreSQL has table " .. rel.name)
    same_list(pg_rows(c, rel.name, cols, types), moraine_rows(db:scan(rel.name, { at = moraine.ALL }), cols, types),
      rel.name)
    local has = {}
    for _, col in ipairs(cols) do has[col] = true end
    if rel.placement ~= "child" and has.begin_snapshot and has.end_snapshot then
      for s = 0, last do
        local S = tostring(s)
        same_list(pg_rows(c, rel.name, cols, types, "begin_snapshot <= " .. S .. " AND (end_snapshot IS NULL OR "
          .. S .. " < end_snapshot)"), moraine_rows(db:scan(rel.name, { at = s }), cols, types),
          rel.name .. " at " .. S)
      end
    end
  end
end

local function count(c, sql)
  local cur = assert(c.con:execute(sql))
  local n = tonumber((cur:fetch()))
  cur:close()
  return n
end

-- Another DuckLake writer's snapshot, as DuckLake writes an INSERT: the
-- snapshot row with next_file_id taken by one data file of table @tid, the
-- file, the table's stats moved on, the change list.
local function foreign_insert(w, tid, path)
  local T = istr(tid)
  local head = "(SELECT max(snapshot_id) FROM ducklake_snapshot)"
  pg.exec(w, "BEGIN")
  pg.exec(w, "LOCK TABLE ducklake_snapshot IN SHARE ROW EXCLUSIVE MODE")
  pg.exec(w, "INSERT INTO ducklake_snapshot SELECT snapshot_id + 1, now(), schema_version, next_catalog_id, "
    .. "next_file_id + 1 FROM ducklake_snapshot WHERE snapshot_id = " .. head)
  pg.exec(w, "INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, end_snapshot, path, "
    .. "path_is_relative, file_format, record_count, file_size_bytes, footer_size, row_id_start) SELECT "
    .. "next_file_id - 1, " .. T .. ", snapshot_id, NULL, '" .. path .. "', true, 'parquet', 3, 30, 0, "
    .. "(SELECT next_row_id FROM ducklake_table_stats WHERE table_id = " .. T .. ") FROM ducklake_snapshot "
    .. "WHERE snapshot_id = " .. head)
  pg.exec(w, "UPDATE ducklake_table_stats SET record_count = record_count + 3, next_row_id = next_row_id + 3, "
    .. "file_size_bytes = file_size_bytes + 30 WHERE table_id = " .. T)
  pg.exec(w, "INSERT INTO ducklake_snapshot_changes VALUES (" .. head .. ", 'inserted_into_table:" .. T
    .. "', NULL, NULL, NULL)")
  pg.exec(w, "COMMIT")
end

local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"
local ROOT = os.getenv("PWD") or "."
local q = support.q

describe("moraine.push into PostgreSQL", function()
  local server, c
  local pg_setup, pg_teardown = pg.server_hooks(function(s, conn) server, c = s, conn end)
  lazy_setup(pg_setup)
  lazy_teardown(pg_teardown)
  after_each(function() support.cleanup() end)

  for _, scenario in ipairs({ "s1_evolution", "s2_multi_table", "s3_edge_values" }) do
    it("pushes the example migrations on " .. scenario .. ": the server's tables equal moraine at every snapshot",
      function()
        pg.load(c, FIX .. "/" .. scenario .. "/catalog")
        -- the admin workflow: sync from the server, migrate, push
        local db = moraine.open(support.tmpdir("synced"), { no_sync = true })
        sync.sync(db, "postgres:" .. server.conninfo)
        local before = db:last_snapshot()
        local snaps = push_support.migrate(db)
        local r = push.push(db, "postgres:" .. server.conninfo)
        assert.are.equal(istr(before), istr(r.from))
        assert.are.equal(#snaps, r.snapshots)
        assert.are.equal(istr(db:last_snapshot()), istr(r.to))
        check_target(db, c)
        assert.are.equal(1, count(c, "SELECT count(*) FROM ducklake_data_file WHERE path = 'h1.parquet' AND "
          .. "file_size_bytes = 9223372036854775807"))
        assert.are.equal(1, count(c, "SELECT count(*) FROM ducklake_snapshot_changes WHERE snapshot_id = "
          .. istr(snaps[5]) .. " AND author IS NULL AND commit_message = ''"))
        assert.are.equal(0, push.push(db, "postgres:" .. server.conninfo).snapshots)
        db:close()
      end)
  end

  it("refuses when another connection appended a DuckLake snapshot during the push: table and snapshot named", function()
    pg.load(c, FIX .. "/s1_evolution/catalog")
    local db = support.import_fixture("s1_evolution")
    local snaps = push_support.migrate(db)
    local w = pg.connect(server.conninfo)
    local e = support.expect_err("ECONFLICT", { "moved on", "events_2024", "altered_table" }, push.push, db,
      "postgres:" .. server.conninfo, { progress = function(done, _, s)
        if done == 1 then
          local tid = db:read(function(rd) return rd:table_id(nil, "events_2024") end)
          local nid = istr(s + 1)
          pg.exec(w, "BEGIN")
          pg.exec(w, "INSERT INTO ducklake_snapshot SELECT " .. nid .. ", now(), schema_version + 1, next_catalog_id, "
            .. "next_file_id FROM ducklake_snapshot WHERE snapshot_id = " .. istr(s))
          pg.exec(w, "INSERT INTO ducklake_snapshot_changes VALUES (" .. nid .. ", 'altered_table:" .. istr(tid)
            .. "', NULL, NULL, NULL)")
          pg.exec(w, "COMMIT")
        end
      end })
    assert.truthy(e.message:find("snapshot " .. istr(snaps[1] + 1), 1, true), e.message)
    assert.are.equal(2, count(c, "SELECT count(*) FROM ducklake_snapshot WHERE snapshot_id >= " .. istr(snaps[1])))
    assert.are.equal(2, count(c, "SELECT count(*) FROM ducklake_snapshot_changes WHERE snapshot_id >= "
      .. istr(snaps[1])))
    w:close()
    db:close()
  end)

  it("refuses a NUL byte or invalid UTF-8 PostgreSQL text cannot hold, naming table and column, writing nothing",
    function()
      for _, bad in ipairs({ "a\0b", "caf\xe9" }) do
        pg.load(c, FIX .. "/s1_evolution/catalog")
        local db = support.import_fixture("s1_evolution")
        local last = db:last_snapshot()
        local S = last + 1
        local prev = db:scan("ducklake_snapshot", { at = last })
        local snap
        for _, en in ipairs(prev) do if en.row.snapshot_id == last then snap = en.row end end
        db:commit(S, function(tx)
          tx:insert("ducklake_snapshot", { snapshot_id = S, snapshot_time = "2026-12-01 00:00:00+00",
            schema_version = snap.schema_version, next_catalog_id = snap.next_catalog_id,
            next_file_id = snap.next_file_id })
          tx:insert("ducklake_snapshot_changes", { snapshot_id = S, changes_made = "altered_table:1", author = N,
            commit_message = N, commit_extra_info = N })
          tx:insert("ducklake_tag", { object_id = 1, begin_snapshot = S, end_snapshot = N, key = "k", value = bad })
        end)
        local n0 = count(c, "SELECT count(*) FROM ducklake_snapshot")
        support.expect_err("EINVAL", { "ducklake_tag.value", "PostgreSQL text cannot hold", "snapshot " .. istr(S) },
          push.push, db, "postgres:" .. server.conninfo)
        assert.are.equal(n0, count(c, "SELECT count(*) FROM ducklake_snapshot"))
        db:close()
      end
    end)
  it("rebases onto other writers' snapshots of other tables, before and during the push; the catalog takes "
    .. "the target's ids", function()
    pg.load(c, FIX .. "/s2_multi_table/catalog")
    local target = "postgres:" .. server.conninfo
    local db = moraine.open(support.tmpdir("synced"), { no_sync = true })
    sync.sync(db, target)
    local orders = db:read(function(rd) return rd:table_id("sales", "orders") end)
    local snaps = {}
    snaps[1] = db:transaction(function(t) t:create_table("mine_t", push_support.EVENT_COLS) end)
    for i = 1, 3 do
      snaps[#snaps + 1] = db:transaction(function(t)
        t:add_data_files("mine_t", { { path = "m" .. i .. ".parquet", record_count = i, file_size_bytes = 10 * i,
          stats = { { column = "id", value_count = i, null_count = 0, min_value = "1", max_value = tostring(i) } } } })
      end)
    end
    snaps[#snaps + 1] = db:transaction(function(t) t:set_sorting({ schema = "sales", table = "clients" }, { "name" }) end)
    local w = pg.connect(server.conninfo)
    foreign_insert(w, orders, "f1.parquet")
    local r = push.push(db, target, { progress = function(done)
      if done == 1 then foreign_insert(w, orders, "f2.parquet") end
    end })
    w:close()
    assert.is_true(r.rebased)
    assert.are.equal(#snaps, r.snapshots)
    -- the catalog is the server's now: both writers' snapshots, moraine's renumbered
    assert.are.equal(istr(snaps[#snaps] + 2), istr(db:last_snapshot()))
    assert.are.equal(istr(db:last_snapshot()), istr(r.to))
    assert.are.same({}, db:verify())
    check_target(db, c)
    assert.are.equal(2, count(c, "SELECT count(*) FROM ducklake_data_file WHERE path IN ('f1.parquet', 'f2.parquet') "
      .. "AND table_id = " .. istr(orders)))
    assert.are.equal(3, count(c, "SELECT count(*) FROM ducklake_data_file WHERE path LIKE 'm_.parquet'"))
    -- orders' stats are the other writer's (moraine did not touch it), mine_t's moraine's
    assert.are.equal(1, count(c, "SELECT count(*) FROM ducklake_table_stats t JOIN ducklake_table n ON "
      .. "n.table_id = t.table_id AND n.end_snapshot IS NULL WHERE n.table_name = 'mine_t' AND t.record_count = 6"))
    assert.are.equal(0, push.push(db, target).snapshots)
    db:close()
  end)

  it("refuses to rebase onto another writer's snapshot of a table moraine also changed: table and snapshot named, "
    .. "nothing written", function()
    pg.load(c, FIX .. "/s2_multi_table/catalog")
    local target = "postgres:" .. server.conninfo
    local db = moraine.open(support.tmpdir("synced"), { no_sync = true })
    sync.sync(db, target)
    local clients = db:read(function(rd) return rd:table_id("sales", "clients") end)
    db:transaction(function(t) t:create_table("mine_t", push_support.EVENT_COLS) end)
    local S = db:transaction(function(t) t:set_sorting({ schema = "sales", table = "clients" }, { "name" }) end)
    local w = pg.connect(server.conninfo)
    foreign_insert(w, clients, "f1.parquet")
    w:close()
    local n0 = count(c, "SELECT count(*) FROM ducklake_snapshot")
    local before = support.dump(db)
    support.expect_err("ECONFLICT", { "moved on", "its snapshot " .. istr(n0 - 1), '"sales"."clients"',
      "inserted_into_table:" .. istr(clients), "unpushed snapshot " .. istr(S), "nothing written" }, push.push, db, target)
    assert.are.equal(n0, count(c, "SELECT count(*) FROM ducklake_snapshot"))
    assert.are.equal(0, count(c, "SELECT count(*) FROM ducklake_table WHERE table_name = 'mine_t'"))
    assert.are.same(before, support.dump(db))
    db:close()
  end)

  -- two catalogs synced from the server, pushed as two processes at once
  local function pushes(cats, target)
    local dir = support.tmpdir("raceout")
    support.mkdir(dir)
    local cmd = {}
    for i, cat in ipairs(cats) do
      cmd[#cmd + 1] = ("(MORAINE_CATALOG= MORAINE_LUA=%s sh scripts/moraine-dev -c %s push %s >%s/out%d 2>&1; "
        .. "echo $? >%s/rc%d) &"):format(RUNTIME, q(cat), q(target), q(dir), i, q(dir), i)
    end
    os.execute("cd " .. q(ROOT) .. " && " .. table.concat(cmd, " ") .. " wait")
    local out, rc = {}, {}
    for i = 1, #cats do
      out[i] = support.read(dir .. "/out" .. i)
      rc[i] = tonumber(support.read(dir .. "/rc" .. i):match("%d+"))
    end
    return rc, table.concat(out, "\n")
  end

  it("two pushes racing as processes: both land when their tables differ, one is refused when they share one; "
    .. "nothing written twice", function()
    for _, shared in ipairs({ false, true }) do
      pg.load(c, FIX .. "/s2_multi_table/catalog")
      local target = "postgres:" .. server.conninfo
      local cats = {}
      for i, name in ipairs({ "left", "right" }) do
        cats[i] = support.tmpdir(name)
        local db = moraine.open(cats[i], { no_sync = true })
        sync.sync(db, target)
        for j = 1, 30 do
          db:transaction(function(t)
            if j == 1 then t:create_table(name, push_support.EVENT_COLS) end
            t:add_data_files(name, { { path = name .. j .. ".parquet", record_count = j, file_size_bytes = j } })
          end)
        end
        if shared then
          db:transaction(function(t) t:set_sorting({ schema = "sales", table = "clients" }, { name == "left" and "name" or "country" }) end)
        end
        db:close()
      end
      local rc, out = pushes(cats, target)
      local won = { rc[1] == 0, rc[2] == 0 }
      local files = count(c, "SELECT count(*) FROM ducklake_data_file WHERE path LIKE 'left%' OR path LIKE 'right%'")
      assert.are.equal(files, count(c, "SELECT count(DISTINCT path) FROM ducklake_data_file WHERE path LIKE 'left%' "
        .. "OR path LIKE 'right%'"))
      if shared then
        table.sort(rc)
        assert.are.same({ 0, 1 }, rc, out)
        assert.truthy(out:find("ECONFLICT", 1, true), out)
        assert.truthy(out:find('"sales"."clients"', 1, true), out)
      else
        assert.are.same({ 0, 0 }, rc, out)
        assert.are.equal(60, files)
      end
      -- the catalog that pushed last is the server, table by table and at every snapshot
      local head = count(c, "SELECT max(snapshot_id) FROM ducklake_snapshot")
      local last
      for i = 1, 2 do
        local db = moraine.open(cats[i], { no_sync = true, read_only = true })
        if won[i] and istr(db:last_snapshot()) == istr(head) then last = db else db:close() end
      end
      assert.is_truthy(last, out)
      assert.are.same({}, last:verify())
      check_target(last, c)
      last:close()
    end
  end)

  it("a push that rebases, killed at random points and meeting another writer midway, leaves whole snapshots; "
    .. "a re-run finishes", function()
    pg.load(c, FIX .. "/s2_multi_table/catalog")
    local target = "postgres:" .. server.conninfo
    local cat = support.tmpdir("k")
    local db = moraine.open(cat, { no_sync = true })
    sync.sync(db, target)
    local base = db:last_snapshot()
    local orders = db:read(function(rd) return rd:table_id("sales", "orders") end)
    local NK = 300
    db:transaction(function(t) t:create_table("k", push_support.EVENT_COLS) end)
    for i = 1, NK do
      db:transaction(function(t)
        t:add_data_files("k", { { path = "k" .. i .. ".parquet", record_count = i, file_size_bytes = 1000 + i } })
      end)
    end
    db:close()
    local w = pg.connect(server.conninfo)
    foreign_insert(w, orders, "f0.parquet")
    local function kfiles() return count(c, "SELECT count(*) FROM ducklake_data_file WHERE path LIKE 'k%'") end
    local function whole()
      -- every snapshot has its changes row; each of moraine's inserts has exactly its file
      assert.are.equal(count(c, "SELECT count(*) FROM ducklake_snapshot WHERE snapshot_id > " .. istr(base)),
        count(c, "SELECT count(*) FROM ducklake_snapshot_changes WHERE snapshot_id > " .. istr(base)))
      assert.are.equal(kfiles(), count(c, "SELECT count(*) FROM ducklake_snapshot_changes sc WHERE sc.changes_made = "
        .. "'inserted_into_table:' || (SELECT table_id FROM ducklake_table WHERE table_name = 'k')"))
      assert.are.equal(kfiles(), count(c, "SELECT count(DISTINCT path) FROM ducklake_data_file WHERE path LIKE 'k%'"))
    end
    support.seed()
    local out = support.tmpdir("kout")
    local kills, mid, foreigns = 0, 0, 1
    local wait = 0.05
    local pidfile = out .. ".pid"
    for round = 1, 40 do
      if kfiles() == NK then break end
      local before = kfiles()
      -- odd rounds, the first among them, kill as soon as the target has grown: on a fast host
      -- a push may finish before a kill at a random time comes, which would end the loop with
      -- no kill mid-push
      if round % 2 == 0 then
        -- a kill at a random time (before the first write, during, or after the last)
        local delay = wait * (1 + math.random())
        os.execute(("cd %s && (MORAINE_CATALOG= MORAINE_LUA=%s sh scripts/moraine-dev -c %s push %s >%s 2>&1 & "
          .. "pid=$!; sleep %.3f; kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null) >/dev/null 2>&1"):format(
          q(ROOT), RUNTIME, q(cat), q(target), q(out), delay))
      else
        -- a kill as soon as the target has grown: in the middle of the push, whatever the machine's load
        os.execute(("cd %s && (MORAINE_CATALOG= MORAINE_LUA=%s exec sh scripts/moraine-dev -c %s push %s >%s 2>&1) "
          .. "& echo $! > %s"):format(q(ROOT), RUNTIME, q(cat), q(target), q(out), q(pidfile)))
        local pid = support.read(pidfile):match("%d+")
        local t0 = moraine.clock()
        while kfiles() == before and moraine.clock() - t0 < 60 do os.execute("sleep 0.01") end
        os.execute("kill -9 " .. pid .. " 2>/dev/null")
        -- (os.execute gives true/nil on Lua 5.4, the exit status on LuaJIT)
        local function alive()
          local r = os.execute("kill -0 " .. pid .. " 2>/dev/null")
          return r == true or r == 0
        end
        while alive() do os.execute("sleep 0.01") end
      end
      kills = kills + 1
      whole()
      local now = kfiles()
      if now ~= before and now ~= NK then
        mid = mid + 1
        -- another writer after a part of the push: the re-run rebases the rest onto it
        if foreigns < 3 then
          foreigns = foreigns + 1
          foreign_insert(w, orders, "f" .. foreigns .. ".parquet")
        end
      end
      -- a kill before anything was written: wait longer next time (in small steps: a PostgreSQL
      -- push is fast, the window between its first write and its last is narrow)
      if now == before then wait = math.min(wait * 1.3, 8) end
    end
    w:close()
    assert.is_true(kills > 0)
    db = moraine.open(cat, { no_sync = true })
    push.push(db, target)
    whole()
    assert.are.equal(NK, kfiles())
    assert.are.equal(foreigns, count(c, "SELECT count(*) FROM ducklake_data_file WHERE path LIKE 'f_.parquet'"))
    assert.are.equal(istr(count(c, "SELECT max(snapshot_id) FROM ducklake_snapshot")), istr(db:last_snapshot()))
    assert.are.equal(istr(base + 1 + NK + foreigns), istr(db:last_snapshot()))
    assert.are.same({}, db:verify())
    check_target(db, c)
    assert.are.equal(0, push.push(db, target).snapshots)
    db:close()
    assert.is_true(mid > 0, "kills " .. kills .. ", none mid-push")
  end)
end)
