--- bench/sync_bench.lua CATALOG_DIR [SPLIT] — sync throughput, measured.
--
-- CATALOG_DIR is a DuckLake catalog as NDJSON (bench/gen writes one:
-- build/bench/gen DIR --files 20000 ...; its catalog is DIR/catalog). Run from
-- the repository root against the build, e.g.
--
--     sh scripts/run-lua.sh lua5.4 build bench/sync_bench.lua /tmp/b/catalog
--
-- Measures, wall-clock (moraine.clock), each into a new catalog:
-- 1. db:import_ndjson (the C one-shot import), for reference;
-- 2. sync from the NDJSON directory;
-- 3. sync from a SQLite file holding the catalog (sqlite.export_sql, sqlite3);
-- 4. sync from PostgreSQL (a throwaway server, tests/pg/pg-server.sh, loaded
--    with spec/pg_support.lua): a full sync, then an incremental one: the
--    source loaded as it stood after snapshot SPLIT (default: half of the
--    snapshots), synced, then loaded whole and synced again (the second
--    round timed).
-- Prints snapshots/s and rows/s (rows: every row of every table) per line.
package.path = "spec/?.lua;" .. package.path
local moraine = require "moraine"
local sqlite = require "moraine.sqlite"
local sync = require "moraine.sync"
local support = require "support"
local pg = require "pg_support"

local dir = assert(arg[1], "usage: sync_bench.lua CATALOG_DIR [SPLIT]")
local nrows, nsnaps, last = 0, 0, 0
for _, name in ipairs(support.tables_of(dir)) do
  local rows = moraine.read_ndjson(dir .. "/" .. name .. ".ndjson")
  nrows = nrows + #rows
  if name == "ducklake_snapshot" then
    nsnaps = #rows
    for _, r in ipairs(rows) do if r.snapshot_id > last then last = r.snapshot_id end end
  end
end
local split = tonumber(arg[2]) or math.floor(last / 2)

local function report(what, secs, snaps, rows)
  print(string.format("%-44s %8.2f s  %8.0f snapshots/s  %9.0f rows/s", what, secs, snaps / secs, rows / secs))
end

local function timed(fn)
  local t0 = moraine.clock()
  local r = fn()
  return moraine.clock() - t0, r
end

print(string.format("catalog %s: %d rows, %d snapshots (last %d); %s", dir, nrows, nsnaps, last,
  rawget(_G, "jit") and jit.version or _VERSION))

local function new_db(tag) return moraine.open(support.tmpdir(tag), { no_sync = true }) end

local db = new_db("import")
report("import_ndjson (C, one-shot)", timed(function() return db:import_ndjson(dir) end), nsnaps, nrows)
local ref = db

db = new_db("ndjson")
report("sync from NDJSON into an empty catalog", timed(function() return sync.sync(db, dir) end), nsnaps, nrows)
db:close()

local script = support.tmpdir("sql") .. ".sql"
sqlite.export_sql(ref, script)
local file = support.tmpdir("cat") .. ".sqlite"
assert(support.sh("sqlite3 " .. support.q(file) .. " < " .. support.q(script)))
os.remove(script)
db = new_db("sqlite")
report("sync from SQLite into an empty catalog", timed(function() return sync.sync(db, file) end), nsnaps, nrows)
db:close()
ref:close()

local server = pg.start()
local ok, err = pcall(function()
  local c = pg.connect(server.conninfo)
  local src = "postgres:" .. server.conninfo
  pg.load(c, dir, nil)
  db = new_db("pg")
  report("sync from PostgreSQL into an empty catalog", timed(function() return sync.sync(db, src) end), nsnaps, nrows)
  local t = timed(function() return sync.compare(db, src) end)
  print(string.format("%-44s %8.2f s", "compare with PostgreSQL (no difference)", t))
  db:close()
  pg.load(c, dir, split)
  db = new_db("pginc")
  sync.sync(db, src)
  local before = 0
  for _, name in ipairs(support.tables_of(dir)) do
    if db:relation(name) then before = before + #db:scan(name, { at = moraine.ALL }) end
  end
  pg.load(c, dir, nil)
  local secs, r = timed(function() return sync.sync(db, src) end)
  report(string.format("sync from PostgreSQL, snapshots %d..%d", split + 1, last), secs, r.snapshots, nrows - before)
  db:close()
  c:close()
end)
server.stop()
support.cleanup()
if not ok then error(err, 0) end
