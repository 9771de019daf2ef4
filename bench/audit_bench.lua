--- bench/audit_bench.lua — `moraine audit` of a large generated catalog in one
-- read transaction, beside an SQLite query that checks the same invariant on
-- the same rows (docs/layout.md, bench/README.md "Audit").
--
--     sh scripts/run-lua.sh lua5.4 build bench/audit_bench.lua [FILES] [WORKDIR]
--
-- The catalog: one table `ev(id int64, ts timestamp)` partitioned by
-- (year(ts), month(ts), day(ts)), FILES data files (default 100000) written
-- through the verb path in batches of 20000, each with its ts bounds and its
-- three partition values; every 1000th file spans two days (a planted
-- violation of the day key). Both sides must find the same number of files.
-- SQLite gets the catalog through moraine.sqlite's SQL export (DuckLake's
-- tables as DuckLake's SQLite catalog has them) and answers with
-- strftime('%Y'/'%m'/'%d') on each file's min_value and max_value, once
-- without an index and once with an index on the children's data_file_id.
local moraine = require "moraine"
local audit = require "moraine.audit"
local msql = require "moraine.sqlite"

local N = tonumber(arg[1]) or 100000
local work = arg[2] or ((os.getenv("TMPDIR") or "/tmp") .. "/moraine-audit-bench")
local clock = moraine.clock
local function sh(cmd) local r = os.execute(cmd) return r == true or r == 0 end
assert(sh("rm -rf '" .. work .. "' && mkdir -p '" .. work .. "'"))

local db = moraine.open(work .. "/catalog", { no_sync = true, map_size = 4 * 1024 ^ 3 })
db:init()
db:transaction(function(tx)
  tx:create_table("ev", { { name = "id", type = "int64" }, { name = "ts", type = "timestamp" } })
  tx:set_partitioning("ev", { "year(ts)", "month(ts)", "day(ts)" })
end)
local typed = require "moraine.typed"
local planted = 0
local t0 = clock()
local BATCH = 20000
for first = 0, N - 1, BATCH do
  db:transaction(function(tx)
    local files = {}
    for i = first, math.min(N, first + BATCH) - 1 do
      local day = 19000 + math.floor(i / 40) -- 40 files a day
      local y, m, d = typed.civil_from_days(day)
      local lo = string.format("%04d-%02d-%02d %02d:00:00", y, m, d, i % 20)
      local hi = string.format("%04d-%02d-%02d %02d:59:00", y, m, d, i % 20 + 1)
      if i % 1000 == 999 then
        local y2, m2, d2 = typed.civil_from_days(day + 1)
        hi = string.format("%04d-%02d-%02d 01:00:00", y2, m2, d2)
        planted = planted + 1
      end
      files[#files + 1] = { path = "f" .. i .. ".parquet", record_count = 1000, file_size_bytes = 100000,
        partition_values = { tostring(y), tostring(m), tostring(d) },
        stats = { { column = "ts", min_value = lo, max_value = hi, null_count = 0, value_count = 1000 } } }
    end
    tx:add_data_files("ev", files)
  end)
end
local t_gen = clock() - t0

t0 = clock()
local rep = audit.run(db, { table = "ev" })
local t_audit = clock() - t0
assert(rep.files == N and rep.violations == planted, "audit found " .. rep.violations .. " of " .. planted)

t0 = clock()
msql.export_sql(db, work .. "/catalog.sql")
db:close()
assert(sh("sqlite3 '" .. work .. "/catalog.sqlite' < '" .. work .. "/catalog.sql'"))
local t_load = clock() - t0

local driver = require("luasql.sqlite3").sqlite3()
local conn = assert(driver:connect(work .. "/catalog.sqlite"))
local QUERY = [[
SELECT count(*) FROM ducklake_data_file f
JOIN ducklake_file_column_stats s ON s.data_file_id = f.data_file_id AND s.table_id = f.table_id
JOIN ducklake_column c ON c.column_id = s.column_id AND c.table_id = f.table_id AND c.column_name = 'ts' AND c.end_snapshot IS NULL
JOIN ducklake_file_partition_value y ON y.data_file_id = f.data_file_id AND y.table_id = f.table_id AND y.partition_key_index = 0
JOIN ducklake_file_partition_value m ON m.data_file_id = f.data_file_id AND m.table_id = f.table_id AND m.partition_key_index = 1
JOIN ducklake_file_partition_value d ON d.data_file_id = f.data_file_id AND d.table_id = f.table_id AND d.partition_key_index = 2
WHERE f.end_snapshot IS NULL
  AND (CAST(strftime('%Y', s.min_value) AS INTEGER) <> CAST(y.partition_value AS INTEGER)
    OR CAST(strftime('%Y', s.max_value) AS INTEGER) <> CAST(y.partition_value AS INTEGER)
    OR CAST(strftime('%m', s.min_value) AS INTEGER) <> CAST(m.partition_value AS INTEGER)
    OR CAST(strftime('%m', s.max_value) AS INTEGER) <> CAST(m.partition_value AS INTEGER)
    OR CAST(strftime('%d', s.min_value) AS INTEGER) <> CAST(d.partition_value AS INTEGER)
    OR CAST(strftime('%d', s.max_value) AS INTEGER) <> CAST(d.partition_value AS INTEGER))]]
local function count()
  local cur = assert(conn:execute(QUERY))
  local n = tonumber(cur:fetch())
  cur:close()
  return n
end
local plain_n, t_plain
if N <= 200000 then -- without an index SQLite's nested loops grow with N^2
  t0 = clock()
  plain_n = count()
  t_plain = clock() - t0
end
t0 = clock()
assert(conn:execute("CREATE INDEX IF NOT EXISTS fpv_file ON ducklake_file_partition_value(data_file_id)"))
assert(conn:execute("CREATE INDEX IF NOT EXISTS fcs_file ON ducklake_file_column_stats(data_file_id)"))
local t_index = clock() - t0
t0 = clock()
local indexed_n = count()
local t_indexed = clock() - t0
conn:close()
driver:close()
assert(indexed_n == planted and (plain_n == nil or plain_n == planted), "SQLite found " .. tostring(indexed_n))

print(string.format("files %d, planted violations %d (%s)", N, planted, rawget(_G, "jit") and jit.version or _VERSION))
print(string.format("generate (verb path, %d-file commits)   %8.2f s", BATCH, t_gen))
print(string.format("moraine audit, one read transaction     %8.2f s  (%d violations, %d ok)", t_audit, rep.violations, rep.ok))
print(string.format("export SQL + load into SQLite           %8.2f s", t_load))
if t_plain then print(string.format("SQLite query, DuckLake's tables as is   %8.2f s  (%d files)", t_plain, plain_n)) end
print(string.format("SQLite: index on the children           %8.2f s", t_index))
print(string.format("SQLite query, indexed                   %8.2f s  (%d files)", t_indexed, indexed_n))
assert(sh("rm -rf '" .. work .. "'"))
