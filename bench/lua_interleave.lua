-- lua_interleave.lua — workload (a) through Lua beside indexed SQLite, in one
-- process, interleaved: every round runs every entry once (starting one
-- further along each round), so the ratios are measured under the same load.
--
--   sh scripts/run-lua.sh luajit|lua5.4 build bench/lua_interleave.lua WORK
--
-- (LUA_CPATH also finding bench's benchclock module, which runs the SQLite
-- queries in C exactly as bench.c's SQLite peer does.) Shapes: `pv`
-- (partition values and delete files, no stats), `1col` (and the min/max of
-- column 1), `all` (and the min/max of every column: DuckLake's file-list
-- query when a scan needs every column's stats). moraine answers each through
-- rd:files_batch (the columns DuckLake's query selects), and `all` also row
-- at a time (rd:files with its children, as bench/lua_bench.lua). Needs the
-- stores of `bench moraine` and `bench sqlite WORK indexed`. Min and median of
-- BENCH_INTERLEAVE_ROUNDS rounds (21); writes results/interleave_<runtime>.md.
local moraine = require "moraine"
local clock = require "benchclock"

local work = assert(arg[1], "usage: lua_interleave.lua WORK")
local runtime = rawget(_G, "jit") and "luajit" or "lua54"
local R = math.max(5, tonumber(os.getenv("BENCH_INTERLEAVE_ROUNDS") or "21") or 21)

local function slurp(p)
  local f = assert(io.open(p, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local meta = moraine.json_decode(slurp(work .. "/meta.json"))
local T, LAST = meta.bench_table_id, meta.last_snapshot
local db = moraine.open(work .. "/stores/moraine", { read_only = true })
local sq = clock.sqlite_open(work .. "/stores/sqlite-indexed.db")

local FILE_COLS = { "data_file_id", "path", "path_is_relative", "file_size_bytes", "footer_size", "row_id_start", "begin_snapshot",
  "partial_max", "mapping_id", "record_count", "partition_id" }
local DEL_COLS = { "path", "path_is_relative", "file_size_bytes", "footer_size", "format" }

local function batch(stats)
  local opts = { columns = FILE_COLS, delete_files = DEL_COLS, stats = stats }
  return function()
    return db:read(function(rd) return tonumber(rd:files_batch(T, LAST, opts).n) end)
  end
end

local function rows()
  return db:read(function(rd)
    local dels = {}
    for d in rd:scan("ducklake_delete_file", { at = LAST, table_id = T }) do dels[d.data_file_id] = d end
    local n = 0
    for row, children in rd:files(T, LAST) do
      n = n + 1
      local _, _, _ = children.ducklake_file_partition_value, children.ducklake_file_column_stats, dels[row.data_file_id]
    end
    return n
  end)
end

local function sql(name)
  local text = slurp(work .. "/sql/sqlite/" .. name .. ".sql")
  return function() return (clock.sqlite_run(sq, text)) end
end

local E = {
  { peer = "moraine_" .. runtime .. "_batch", shape = "pv", fn = batch(nil) },
  { peer = "sqlite_indexed", shape = "pv", fn = sql("a_pv") },
  { peer = "moraine_" .. runtime .. "_batch", shape = "1col", fn = batch({ 1 }) },
  { peer = "sqlite_indexed", shape = "1col", fn = sql("a_1col") },
  { peer = "moraine_" .. runtime .. "_batch", shape = "all", fn = batch(true) },
  { peer = "moraine_" .. runtime .. "_rows", shape = "all", fn = rows },
  { peer = "sqlite_indexed", shape = "all", fn = sql("a") },
}
for _, e in ipairs(E) do
  e.rows = e.fn() -- warm-up
  e.t = {}
  if e.rows ~= E[1].rows then error(string.format("%s/%s answered %d files, %s %d", e.peer, e.shape, e.rows, E[1].peer, E[1].rows)) end
end
for r = 1, R do
  for j = 1, #E do
    local e = E[(j + r - 2) % #E + 1]
    collectgarbage()
    local t = clock.now()
    local n = e.fn()
    e.t[r] = clock.now() - t
    if n ~= e.rows then error(string.format("%s/%s run %d answered %d rows, the warm-up %d", e.peer, e.shape, r, n, e.rows)) end
  end
end

local function sorted(v)
  local c = {}
  for i = 1, #v do c[i] = v[i] end
  table.sort(c)
  return c
end
local function median(v)
  local c = sorted(v)
  local n = #c
  if n % 2 == 1 then return c[(n + 1) / 2] end
  return (c[n / 2] + c[n / 2 + 1]) / 2
end
local function fmt(s)
  if s >= 1 then return string.format("%.2f s", s) end
  if s >= 1e-3 then return string.format("%.2f ms", s * 1e3) end
  return string.format("%.0f µs", s * 1e6)
end

local out = {}
out[#out + 1] = string.format("(a) through %s, table %d at snapshot %d (%d files), %d interleaved rounds; min / median\n", runtime, T, LAST,
  E[1].rows, R)
out[#out + 1] = "| shape | moraine batch (rd:files_batch) | moraine row at a time (rd:files) | SQLite indexed | SQLite idx ÷ batch |"
out[#out + 1] = "|---|---:|---:|---:|---:|"
local names = { pv = "partition values, no stats", ["1col"] = "partition values + min/max of one column",
  all = "partition values + min/max of every column" }
for _, shape in ipairs({ "pv", "1col", "all" }) do
  local b, w, s
  for _, e in ipairs(E) do
    if e.shape == shape then
      if e.peer:find("_batch$") then b = e elseif e.peer:find("_rows$") then w = e else s = e end
    end
  end
  out[#out + 1] = string.format("| %s | %s / %s | %s | %s / %s | %.2f× |", names[shape], fmt(sorted(b.t)[1]), fmt(median(b.t)),
    w and (fmt(sorted(w.t)[1]) .. " / " .. fmt(median(w.t))) or "—", fmt(sorted(s.t)[1]), fmt(median(s.t)), median(s.t) / median(b.t))
end
local text = table.concat(out, "\n") .. "\n"
io.stderr:write(text)
os.execute("mkdir -p '" .. work .. "/results'")
local f = assert(io.open(work .. "/results/interleave_" .. runtime .. ".md", "w"))
f:write(text)
f:close()
db:close()
