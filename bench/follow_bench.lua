--- bench/follow_bench.lua CATALOG_DIR OLD_SYNC_LUA [RUNS] — the cost of a
-- follower's round (issue #15), this sync against an older moraine/sync.lua
-- (e.g. `git show 4db8790:bindings/moraine/sync.lua > /tmp/old_sync.lua`, the
-- one that compared every version at or below L every round), interleaved.
--
-- CATALOG_DIR is a DuckLake catalog as NDJSON (bench/gen). It is loaded into
-- a SQLite file (the source) and imported into a moraine catalog (C import:
-- the same rows sync writes). Then RUNS times (default 5), alternating which
-- goes first: an idle round (no new snapshot) with each sync; and a round
-- with one new source snapshot (a data file inserted into table 1,
-- `inserted_into_table:1`) with each. Prints wall and CPU time per round and
-- the rows each read from the source (the source's read counters).
--
--     build/bench/gen /tmp/f --files 200000 --tables 20 --stats 3
--     git show 4db8790:bindings/moraine/sync.lua > /tmp/old_sync.lua
--     sh scripts/run-lua.sh lua5.4 build bench/follow_bench.lua /tmp/f/catalog /tmp/old_sync.lua
package.path = "spec/?.lua;" .. package.path
local moraine = require "moraine"
local sqlite = require "moraine.sqlite"
local sync = require "moraine.sync"
local support = require "support"

local dir = assert(arg[1], "usage: follow_bench.lua CATALOG_DIR OLD_SYNC_LUA [RUNS]")
local old_path = assert(arg[2], "usage: follow_bench.lua CATALOG_DIR OLD_SYNC_LUA [RUNS]")
local old = assert(loadfile(old_path))()
local RUNS = tonumber(arg[3] or "5")

local function timed(fn)
  local c0, t0 = os.clock(), moraine.clock()
  local r = fn()
  return moraine.clock() - t0, os.clock() - c0, r
end

local db = moraine.open(support.tmpdir("follow"), { no_sync = true })
local t = timed(function() return db:import_ndjson(dir) end)
print(string.format("catalog %s imported in %.1f s; %s", dir, t, _VERSION))
local script = support.tmpdir("sql") .. ".sql"
sqlite.export_sql(db, script)
local file = support.tmpdir("src") .. ".sqlite"
assert(support.sh("sqlite3 " .. support.q(file) .. " < " .. support.q(script)))
os.remove(script)
local nfiles = 0
db:read(function(rd) for _ in rd:scan("ducklake_data_file", { at = moraine.ALL }) do nfiles = nfiles + 1 end end)
print(string.format("%d ducklake_data_file rows (live and ended)", nfiles))

local env = require("luasql.sqlite3").sqlite3()
local con = assert(env:connect(file))
local function one(sql)
  local cur = assert(con:execute(sql))
  local r = cur:fetch({}, "n")
  cur:close()
  return r
end
local cols = {}
do
  local cur = assert(con:execute("PRAGMA table_info('ducklake_data_file')"))
  local r = cur:fetch({}, "n")
  while r do
    cols[#cols + 1] = r[2]
    r = cur:fetch({}, "n")
  end
  cur:close()
end
local next_file = 900000000
local function new_snapshot()
  local last = one("SELECT snapshot_id, schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot "
    .. "ORDER BY snapshot_id DESC LIMIT 1")
  local sid = tonumber(last[1]) + 1
  next_file = next_file + 1
  local sel = {}
  for i, c in ipairs(cols) do
    sel[i] = c == "data_file_id" and tostring(next_file) or c == "begin_snapshot" and tostring(sid)
      or c == "path" and ("'new-" .. next_file .. ".parquet'") or c
  end
  assert(con:execute("BEGIN"))
  assert(con:execute("INSERT INTO ducklake_data_file (" .. table.concat(cols, ", ") .. ") SELECT "
    .. table.concat(sel, ", ") .. " FROM ducklake_data_file WHERE table_id = 1 AND end_snapshot IS NULL LIMIT 1"))
  assert(con:execute(string.format("INSERT INTO ducklake_snapshot VALUES (%d, '2026-12-01 00:00:00+00', %s, %s, %s)",
    sid, last[2], last[3], last[4])))
  assert(con:execute(string.format("INSERT INTO ducklake_snapshot_changes VALUES (%d, 'inserted_into_table:1', "
    .. "NULL, NULL, NULL)", sid)))
  assert(con:execute("COMMIT"))
end

local function round(impl)
  local src = sync.source(file)
  local wall, cpu, r = timed(function() return impl.sync(db, src) end)
  local rows = 0
  for _, n in pairs(src.reads.rows) do rows = rows + n end
  src:close()
  return wall, cpu, rows, r
end

local acc = {}
local function add(k, wall, cpu, rows)
  local a = acc[k] or { wall = {}, cpu = {}, rows = rows }
  acc[k] = a
  a.wall[#a.wall + 1] = wall
  a.cpu[#a.cpu + 1] = cpu
end
local impls = { { "before", old }, { "after", sync } }
for run = 1, RUNS do
  local order = run % 2 == 1 and { 1, 2 } or { 2, 1 }
  for _, i in ipairs(order) do
    local name, impl = impls[i][1], impls[i][2]
    local w, c, rows = round(impl)
    add("idle round, " .. name, w, c, rows)
  end
  for _, i in ipairs(order) do
    local name, impl = impls[i][1], impls[i][2]
    new_snapshot()
    local w, c, rows, r = round(impl)
    assert(r.snapshots == 1, "the round did not replay the new snapshot")
    add("one new snapshot, " .. name, w, c, rows)
  end
end
local function median(l)
  table.sort(l)
  return l[math.floor((#l + 1) / 2)]
end
for _, k in ipairs({ "idle round, before", "idle round, after", "one new snapshot, before", "one new snapshot, after" }) do
  local a = acc[k]
  print(string.format("%-28s wall median %8.3f s (min %.3f, max %.3f)  CPU median %8.3f s  source rows read %d", k,
    median(a.wall), a.wall[1], a.wall[#a.wall], median(a.cpu), a.rows))
end
local d = sync.compare(db, file)
assert(#d == 0, "the catalog differs from the source after the rounds")
con:close()
env:close()
db:close()
support.cleanup()
