--- bench/sync_throughput.lua CATALOG_DIR [RUNS] [SPLIT] — sync throughput
-- (issue #15 item 7): an incremental `moraine sync` against a full re-import,
-- from SQLite and from PostgreSQL, as the `moraine` command runs them
-- (scripts/moraine-dev, a process per measurement, fsync on commit as the
-- command does), interleaved, medians.
--
-- CATALOG_DIR is a DuckLake catalog as NDJSON (bench/gen writes one). Setup
-- (not timed): a PostgreSQL server started on loopback (tests/pg/pg-server.sh
-- through spec/pg_support.lua) loaded with the catalog's rows as they stood
-- right after snapshot SPLIT (default: half of the snapshots), synced into
-- the PostgreSQL base catalog, exported as a SQLite DuckLake catalog (`moraine
-- export --format sqlite`) and imported from it into the SQLite base catalog;
-- then the server loaded with the whole catalog, synced into a catalog that is
-- exported as the SQLite source, full.sqlite. (Both SQLite files come from
-- PostgreSQL so that the two halves hold the same text for each value:
-- PostgreSQL prints a TIMESTAMPTZ without trailing zeros, bench/gen's NDJSON
-- with six digits.) Each run times, in a rotating order:
--
-- - `moraine import full.sqlite` into an empty directory (full re-import);
-- - `moraine sync full.sqlite` into a copy of the SQLite base catalog
--   (incremental: snapshots SPLIT+1..last);
-- - `moraine sync postgres:...` into an empty directory (`moraine import`
--   takes no PostgreSQL source; sync into an empty catalog is the import);
-- - `moraine sync postgres:...` into a copy of the PostgreSQL base catalog.
--
-- Wall time of the process (moraine.clock around it; copying the base is not
-- timed) and its CPU time (user + system, /usr/bin/time; the PostgreSQL
-- server's CPU is not included). Rows: every version of every row of every
-- table of the catalog (a row ended in the second half and begun in the first
-- counts in the first). The first run's incremental catalogs are compared
-- with their source (`moraine compare`, not timed): no difference allowed.
--
--     make -j2 && make -j2 build/bench/gen
--     build/bench/gen /tmp/sb --files 20000 --tables 4 --snapshots 2000 --stats 3
--     sh scripts/run-lua.sh lua5.4 build bench/sync_throughput.lua /tmp/sb/catalog 5
package.path = "spec/?.lua;" .. package.path
local moraine = require "moraine"
local support = require "support"
local pg = require "pg_support"

local USAGE = "usage: sync_throughput.lua CATALOG_DIR [RUNS] [SPLIT]"
local dir = assert(arg[1], USAGE)
local RUNS = tonumber(arg[2] or "5")
local q = support.q
local MORAINE = "sh scripts/moraine-dev"

local function sh(cmd)
  local ok = os.execute(cmd)
  if not ok then error("failed: " .. cmd, 2) end
end

-- runs the moraine command; returns wall seconds, CPU seconds (user + sys)
local tfile = os.tmpname()
local function moraine_cmd(args)
  local cmd = string.format("/usr/bin/time -f '%%U %%S' -o %s %s %s >/dev/null", q(tfile), MORAINE, args)
  local t0 = moraine.clock()
  sh(cmd)
  local wall = moraine.clock() - t0
  local f = assert(io.open(tfile))
  local u, s = f:read("a"):match("([%d.]+) ([%d.]+)")
  f:close()
  return wall, tonumber(u) + tonumber(s)
end

-- every version of every row of the catalog in directory d; its last snapshot
local function count_rows(d)
  local db = moraine.open(d)
  local n = 0
  db:read(function(rd)
    for _, rel in ipairs(db:relations()) do
      for _ in rd:scan(rel.name, { at = moraine.ALL }) do n = n + 1 end
    end
  end)
  local last = db:last_snapshot()
  db:close()
  return n, last
end

local work = support.tmpdir("sync-throughput")
support.mkdir(work)
local function path(n) return work .. "/" .. n end

print(string.format("catalog %s; driver %s, the moraine command on %s", dir, _VERSION,
  os.getenv("MORAINE_LUA") or "lua5.4"))
local server = pg.start()
local ok, err = pcall(function()
  local c = pg.connect(server.conninfo)
  local src = "postgres:" .. server.conninfo
  local split = tonumber(arg[3])
  if not split then
    local snaps = moraine.read_ndjson(dir .. "/ducklake_snapshot.ndjson")
    local top = 0
    for _, r in ipairs(snaps) do if r.snapshot_id > top then top = r.snapshot_id end end
    split = math.floor(top / 2)
  end
  pg.load(c, dir, split)
  moraine_cmd("-c " .. q(path("base_pg")) .. " sync " .. q(src))
  moraine_cmd("-c " .. q(path("base_pg")) .. " export " .. q(path("half.sqlite")) .. " --format sqlite")
  moraine_cmd("-c " .. q(path("base_sqlite")) .. " import " .. q(path("half.sqlite")))
  local brows, blast = count_rows(path("base_pg"))
  local srows, slast = count_rows(path("base_sqlite"))
  assert(blast == split and slast == split and brows == srows, "the base catalogs differ")
  pg.load(c, dir, nil)
  c:close()
  moraine_cmd("-c " .. q(path("full")) .. " sync " .. q(src))
  moraine_cmd("-c " .. q(path("full")) .. " export " .. q(path("full.sqlite")) .. " --format sqlite")
  local nrows, last = count_rows(path("full"))
  print(string.format("%d rows, snapshots 0..%d; incremental: snapshots %d..%d, %d rows (%d in the base)", nrows, last,
    split + 1, last, nrows - brows, brows))

  local cases = {
    { name = "import from SQLite (full)", base = nil, args = "import " .. q(path("full.sqlite")),
      snaps = last + 1, rows = nrows },
    { name = "sync from SQLite (incremental)", base = "base_sqlite", args = "sync " .. q(path("full.sqlite")),
      snaps = last - split, rows = nrows - brows, source = path("full.sqlite") },
    { name = "sync from PostgreSQL into empty (full)", base = nil, args = "sync " .. q(src),
      snaps = last + 1, rows = nrows },
    { name = "sync from PostgreSQL (incremental)", base = "base_pg", args = "sync " .. q(src),
      snaps = last - split, rows = nrows - brows, source = src },
  }
  for run = 1, RUNS do
    for k = 0, #cases - 1 do
      local case = cases[(run - 1 + k) % #cases + 1]
      local target = path("target")
      sh("rm -rf " .. q(target))
      if case.base then sh("cp -r " .. q(path(case.base)) .. " " .. q(target)) end
      local wall, cpu = moraine_cmd("-c " .. q(target) .. " " .. case.args)
      case.wall = case.wall or {}
      case.cpu = case.cpu or {}
      case.wall[run], case.cpu[run] = wall, cpu
      local _, tlast = count_rows(target)
      assert(tlast == last, case.name .. ": the catalog ends at " .. tostring(tlast))
      if run == 1 and case.source then
        local out = path("compare.out")
        local same = os.execute(MORAINE .. " -c " .. q(target) .. " compare " .. q(case.source) .. " >" .. q(out))
        if not same then
          sh("head -c 3000 " .. q(out) .. " >&2")
          error(case.name .. ": the catalog differs from its source")
        end
      end
      io.stderr:write(string.format("run %d: %-40s %7.2f s wall %7.2f s CPU\n", run, case.name, wall, cpu))
    end
  end
  local function median(l)
    local s = {}
    for i, v in ipairs(l) do s[i] = v end
    table.sort(s)
    local n = #s
    return n % 2 == 1 and s[(n + 1) / 2] or (s[n / 2] + s[n / 2 + 1]) / 2, s[1], s[n]
  end
  print(string.format("\n%d interleaved runs; median (min-max) wall, median CPU", RUNS))
  print("| measurement | snapshots | rows | wall, median (min–max) | CPU | snapshots/s | rows/s |")
  print("|---|---:|---:|---:|---:|---:|---:|")
  for _, case in ipairs(cases) do
    local m, lo, hi = median(case.wall)
    case.median = m
    print(string.format("| %s | %d | %d | %.2f s (%.2f–%.2f) | %.2f s | %.0f | %.0f |", case.name, case.snaps, case.rows,
      m, lo, hi, (median(case.cpu)), case.snaps / m, case.rows / m))
  end
  for i = 1, #cases, 2 do
    print(string.format("%s: incremental takes %.2f of the full re-import's time (%.2f× faster)",
      cases[i + 1].name, cases[i + 1].median / cases[i].median, cases[i].median / cases[i + 1].median))
  end
end)
server.stop()
os.remove(tfile)
support.cleanup()
if not ok then error(err, 0) end
