--- tests/crash/sync_kill.lua KILLS [SEED] — kills `moraine sync` with SIGKILL
-- at random points, KILLS times, and checks after each kill that running
-- sync again converges (compare finds nothing) and that no snapshot a DuckLake
-- writer acknowledged is lost.
--
-- Run from the repository root: sh scripts/run-lua.sh lua5.4 build
-- tests/crash/sync_kill.lua 200 (spec/sync_crash_spec.lua runs 200 in make
-- test; make crash-long 10,000). The source is a SQLite DuckLake catalog (the
-- s1_evolution fixture). Before each kill a writer (this process) commits 1
-- to 3 snapshots to the source and records each as acknowledged after its
-- COMMIT: a data file inserted (`inserted_into_table:1`), or a DELETE that
-- replaces a delete file, a rewrite of the past (`deleted_from_table:1`: the
-- old delete file deleted, the new one inserted with its begin), which sync
-- replays in the first commit of its round; so kills land before, inside and
-- after the history-rewrite commit. The sync process is killed after a random
-- delay within 1.3 times a measured round (half of them in its later part),
-- and past KILLS (at most as many again) until one kill has landed between two
-- commits of a round. Then the catalog must hold a
-- prefix of the source's snapshots (its last snapshot is an acknowledged one
-- or older), a sync run here must finish, compare must find nothing, and
-- every acknowledged snapshot must be in the catalog. Prints one line at the
-- end, or the first failure (exit 1).
package.path = "spec/?.lua;" .. package.path
local moraine = require "moraine"
local sqlite = require "moraine.sqlite"
local sync = require "moraine.sync"
local support = require "support"

local KILLS = tonumber(arg[1] or "200")
local SEED = tonumber(arg[2] or os.getenv("MORAINE_SEED") or "15")
math.randomseed(SEED)
local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"
local ROOT = os.getenv("PWD") or "."
local q = support.q

local function fail(fmt, ...)
  io.stderr:write("sync_kill: FAILED: ", string.format(fmt, ...), " (seed ", SEED, ")\n")
  os.exit(1)
end

local work = support.tmpdir("sync-kill")
support.mkdir(work)
local src = work .. "/source.sqlite"
local catalog = work .. "/catalog"
local ref = support.import_fixture("s1_evolution")
sqlite.export_sqlite(ref, src)
ref:close()

local env = require("luasql.sqlite3").sqlite3()
local con = assert(env:connect(src))
do
  local cur = assert(con:execute("PRAGMA busy_timeout = 10000"))
  if type(cur) == "userdata" then cur:close() end
end
local function exec(sql)
  local r, err = con:execute(sql)
  if not r then fail("SQL: %s in %s", tostring(err), sql) end
  return r
end
local function row(sql)
  local cur = exec(sql)
  local r = cur:fetch({}, "n")
  cur:close()
  return r
end
local function columns(name)
  local cur = exec("PRAGMA table_info('" .. name .. "')")
  local cols = {}
  local r = cur:fetch({}, "n")
  while r do
    cols[#cols + 1] = r[2]
    r = cur:fetch({}, "n")
  end
  cur:close()
  return cols
end
local DATA_COLS, DEL_COLS = columns("ducklake_data_file"), columns("ducklake_delete_file")

local acked = {} -- snapshot ids the writer committed
local next_id = 10000

-- one DuckLake snapshot at the source: an insert or a delete-file replacement
local function write_snapshot()
  local last = row("SELECT snapshot_id, schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot "
    .. "ORDER BY snapshot_id DESC LIMIT 1")
  local sid = tonumber(last[1]) + 1
  next_id = next_id + 1
  local changes
  exec("BEGIN IMMEDIATE")
  local victim = math.random() < 0.5 and row("SELECT delete_file_id FROM ducklake_delete_file x WHERE table_id = 1 "
    .. "AND end_snapshot IS NULL AND EXISTS (SELECT 1 FROM ducklake_data_file d WHERE d.data_file_id = "
    .. "x.data_file_id AND d.end_snapshot IS NULL) ORDER BY random() LIMIT 1")
  if victim then
    local sel = {}
    for i, c in ipairs(DEL_COLS) do
      sel[i] = c == "delete_file_id" and tostring(next_id) or c == "path" and ("'replaced-" .. next_id .. ".parquet'")
        or c == "delete_count" and "delete_count + 1" or c
    end
    exec("INSERT INTO ducklake_delete_file (" .. table.concat(DEL_COLS, ", ") .. ") SELECT " .. table.concat(sel, ", ")
      .. " FROM ducklake_delete_file WHERE delete_file_id = " .. victim[1])
    exec("DELETE FROM ducklake_delete_file WHERE delete_file_id = " .. victim[1])
    changes = "deleted_from_table:1"
  else
    local sel = {}
    for i, c in ipairs(DATA_COLS) do
      sel[i] = c == "data_file_id" and tostring(next_id) or c == "begin_snapshot" and tostring(sid)
        or c == "path" and ("'new-" .. next_id .. ".parquet'") or c
    end
    exec("INSERT INTO ducklake_data_file (" .. table.concat(DATA_COLS, ", ") .. ") SELECT " .. table.concat(sel, ", ")
      .. " FROM ducklake_data_file WHERE table_id = 1 AND end_snapshot IS NULL ORDER BY random() LIMIT 1")
    changes = "inserted_into_table:1"
  end
  exec(string.format("INSERT INTO ducklake_snapshot VALUES (%d, '2026-12-01 00:00:00+00', %s, %s, %s)", sid, last[2],
    last[3], last[4]))
  exec(string.format("INSERT INTO ducklake_snapshot_changes VALUES (%d, '%s', NULL, NULL, NULL)", sid, changes))
  exec("COMMIT")
  acked[#acked + 1] = sid
end

local function moraine_sync_cmd()
  return "MORAINE_CATALOG= MORAINE_FORCE_TTY= MORAINE_LUA=" .. RUNTIME .. " exec sh " .. q(ROOT .. "/scripts/moraine-dev")
    .. " -c " .. q(catalog) .. " sync " .. q(src)
end

-- starts the sync; returns its pid (the shell execs into the interpreter)
local function spawn()
  local pidf = work .. "/pid"
  os.remove(pidf)
  os.execute("(" .. moraine_sync_cmd() .. " >/dev/null 2>&1 </dev/null & echo $! > " .. q(pidf) .. ") ")
  local f = io.open(pidf)
  local pid = f and f:read("l")
  if f then f:close() end
  return pid
end

-- whether the process runs (a killed one not yet reaped by init is a zombie: not running)
local function alive(pid)
  local f = io.open("/proc/" .. pid .. "/stat")
  if not f then return false end
  local st = f:read("l") or ""
  f:close()
  local state = st:match("^%d+ %b() (%a)")
  return state ~= nil and state ~= "Z" and state ~= "X"
end

local function catalog_snapshots(db)
  local have = {}
  db:read(function(rd)
    for r in rd:scan("ducklake_snapshot", { at = moraine.ALL }) do have[tonumber(tostring(r.snapshot_id))] = true end
  end)
  return have
end

-- a first full sync, and how long a round takes (two snapshots' worth)
local t0 = moraine.clock()
assert(support.sh(moraine_sync_cmd() .. " >/dev/null 2>&1"), "the first sync failed")
write_snapshot()
write_snapshot()
local t1 = moraine.clock()
assert(support.sh(moraine_sync_cmd() .. " >/dev/null 2>&1"), "the second sync failed")
local span = math.max(moraine.clock() - t1, 0.05) * 1.3
local killed_alive, partial = 0, 0
-- the kills go on past KILLS (up to twice as many) until one has landed
-- between two commits of a round: that window is a few milliseconds of a
-- round's hundred, so KILLS kills alone miss it now and then under load
local k = 0
-- past KILLS the delay is searched for: a kill before the round's first
-- commit raises its lower bound, one after its last lowers its upper bound
local lo, hi
while k < KILLS or (partial == 0 and k < 2 * KILLS) do
  k = k + 1
  -- past KILLS, rounds of three snapshots killed late, where their commits are
  local extra = k > KILLS
  for _ = 1, extra and 3 or math.random(1, 3) do write_snapshot() end
  local before
  do
    local db = moraine.open(catalog, { read_only = true })
    before = db:last_snapshot()
    db:close()
  end
  local pid = spawn()
  if not pid then fail("could not start sync") end
  -- half the kills anywhere in the round, half late in it, where its commits are
  local delay = (not extra and math.random() < 0.5) and math.random() * span or (0.55 + 0.45 * math.random()) * span
  if extra then
    lo, hi = lo or 0.3 * span, hi or 1.3 * span
    delay = lo + (hi - lo) * math.random()
  end
  os.execute(string.format("sleep %.3f", delay))
  -- the span follows the machine's load: a kill after the sync ended shortens
  -- it, one that landed in a running sync lengthens it a little
  if alive(pid) then
    killed_alive = killed_alive + 1
    span = span * 1.1
  else
    span = math.max(span * 0.7, 0.01)
  end
  os.execute("kill -9 " .. pid .. " 2>/dev/null")
  while alive(pid) do os.execute("sleep 0.005") end
  local db = moraine.open(catalog, { no_sync = true })
  local last = db:last_snapshot()
  if last < before then fail("kill %d: the catalog went back from snapshot %d to %d", k, before, last) end
  if last > before and last < acked[#acked] then partial = partial + 1 end
  if extra and last == before then lo = math.min(delay, hi * 0.95) end -- too early: no commit yet
  if extra and last >= acked[#acked] then hi = math.max(delay, lo * 1.05) end -- too late: all committed
  local ok, r = pcall(sync.sync, db, src)
  if not ok then fail("kill %d: sync after the kill: %s", k, moraine.is_error(r) and r.message or tostring(r)) end
  if r.to ~= acked[#acked] then fail("kill %d: sync ended at %s, the writer's last is %d", k, tostring(r.to), acked[#acked]) end
  if k % 10 == 0 or k >= KILLS then
    local d = sync.compare(db, src)
    if #d > 0 then fail("kill %d: compare found %d differences, first in %s", k, #d, d[1].table) end
  end
  local have = catalog_snapshots(db)
  for _, s in ipairs(acked) do
    if not have[s] then fail("kill %d: acknowledged snapshot %d lost", k, s) end
  end
  db:close()
end
con:close()
env:close()
support.cleanup()
print(string.format("sync_kill: %d kills (%d while the sync ran, %d left a partial round), %d acknowledged snapshots "
  .. "kept, compare clean (seed %d, %.0f s)", k, killed_alive, partial, #acked, SEED, moraine.clock() - t0))
