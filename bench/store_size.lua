--- bench/store_size.lua CATALOG_DIR — data.mdb's size against SQLite's file for
-- the same catalog (issue 18, item 4), measured.
--
-- CATALOG_DIR is a DuckLake catalog as NDJSON (bench/gen writes one:
-- build/bench/gen DIR --files 40000 ...; its catalog is DIR/catalog). Run from
-- the repository root against the build, e.g.
--
--     sh scripts/run-lua.sh lua5.4 build bench/store_size.lua /tmp/b/catalog
--
-- Loads the catalog into new moraine catalogs two ways, each followed by
-- db:compact (moraine_compact: every entry copied in key order with
-- MDB_APPEND), and writes it as a SQLite DuckLake catalog (moraine.sqlite's
-- export_sqlite, what `moraine export --format sqlite` writes):
-- 1. sync from the NDJSON directory into an empty catalog, one LMDB commit per
--    snapshot (what `moraine import` does before its closing compaction);
-- 2. db:import_ndjson (the C one-shot import the benchmark's load times).
-- Prints each file's size, its ratio to SQLite's, and the time each step took.
package.path = "spec/?.lua;" .. package.path
local moraine = require "moraine"
local sqlite = require "moraine.sqlite"
local sync = require "moraine.sync"
local support = require "support"

local dir = assert(arg[1], "usage: store_size.lua CATALOG_DIR")

local function size(path)
  local f = assert(io.open(path, "rb"))
  local n = f:seek("end")
  f:close()
  return n
end

local function timed(fn)
  local t0 = moraine.clock()
  local r = fn()
  return moraine.clock() - t0, r
end

local function mib(n) return string.format("%.1f MiB", n / 1048576) end

local rows = {}
local function load(tag, fn)
  local path = support.tmpdir(tag)
  local db = moraine.open(path)
  local t_load = timed(function() return fn(db) end)
  local before = size(path .. "/data.mdb")
  local t_compact = timed(function() return db:compact(path .. "-compact") end)
  local after = size(path .. "-compact/data.mdb")
  rows[#rows + 1] = { tag = tag, t_load = t_load, before = before, t_compact = t_compact, after = after }
  return db
end

load("sync (moraine import)", function(db) return sync.sync(db, dir) end):close()
local db = load("import_ndjson (C)", function(d) return d:import_ndjson(dir) end)
local file = support.tmpdir("cat") .. ".sqlite"
local t_sqlite = timed(function() return sqlite.export_sqlite(db, file) end)
db:close()
local lite = size(file)

print(string.format("catalog %s; SQLite file %s (written in %.1f s)", dir, mib(lite), t_sqlite))
print("| load | load time | data.mdb after load | ÷ SQLite | compact time | after compact | ÷ SQLite |")
print("|---|---:|---:|---:|---:|---:|---:|")
for _, r in ipairs(rows) do
  print(string.format("| %s | %.1f s | %s | %.2f× | %.2f s | %s | %.2f× |", r.tag, r.t_load, mib(r.before),
    r.before / lite, r.t_compact, mib(r.after), r.after / lite))
end
support.cleanup()
