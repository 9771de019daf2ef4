-- lua_interleave.lua — workload (a) through Lua beside indexed SQLite, in one
-- process, interleaved: every round runs every entry once (in an order drawn
-- afresh each round), so the ratios are measured under the same load.
--
--   sh scripts/run-lua.sh luajit|lua5.4 build bench/lua_interleave.lua WORK
--
-- (LUA_CPATH also finding bench's benchclock module, which runs the SQLite
-- queries in C exactly as bench.c's SQLite peer does.) Shapes: `pv`
-- (partition values and delete files, no stats), `1col` (and the min/max of
-- column 1), `all` (and the min/max of every column: DuckLake's file-list
-- query when a scan needs every column's stats). moraine answers each through
-- rd:files_batch (the columns DuckLake's query selects), and `all` also row
-- at a time (rd:files with its children, as bench/lua_bench.lua); and (d), the
-- whole catalog at S as ATTACH reads it: the newest ducklake_snapshot row by
-- its key (rd:snapshot(), as DuckLake reads WHERE snapshot_id = (SELECT
-- MAX(snapshot_id) ...)) and every other relation through rd:scan_columns,
-- or row at a time (as bench/lua_bench.lua), or through rd:scan_columns with
-- every snapshot row up to S walked (the read before rd:snapshot), beside
-- SQLite's d.sql. Needs the
-- stores of `bench moraine` and `bench sqlite WORK indexed`. Min and median of
-- BENCH_INTERLEAVE_ROUNDS rounds (21); writes results/interleave_<runtime>.md and .json.
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

-- LuaJIT: rd:files_batch with raw = true, every value touched through its
-- cell as bench.c's SQLite peer touches SQLite's (a string's length and first
-- byte; any other value counted), no Lua string made
local function touch(col, sink)
  local c = col.cells
  for i = 0, col.n - 1 do
    local x = c[i]
    if x.type == 2 then
      local len = x.len
      sink = sink + len + (len > 0 and x.v.s[0] or 0)
    else
      sink = sink + 1
    end
  end
  return sink
end
local function batch_raw(stats)
  local opts = { columns = FILE_COLS, delete_files = DEL_COLS, stats = stats, raw = true }
  return function()
    return db:read(function(rd)
      local b = rd:files_batch(T, LAST, opts)
      local sink = 0
      for _, col in pairs(b.file) do sink = touch(col, sink) end
      for _, col in ipairs(b.partition_values) do sink = touch(col, sink) end
      for _, s in pairs(b.stats or {}) do
        for _, col in pairs(s) do sink = touch(col, sink) end
      end
      for _, col in pairs(b.delete_file) do sink = touch(col, sink) end
      assert(sink > 0)
      return tonumber(b.n)
    end)
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

-- (d): every relation ATTACH reads at S, as bench/lua_bench.lua reads them
-- (row at a time) and through rd:scan_columns with the children of the
-- partition and sort specs; the count is rows plus child rows, as lua_bench's
local RELS = { "ducklake_metadata", "ducklake_snapshot", "ducklake_schema", "ducklake_table", "ducklake_tag",
  "ducklake_inlined_data_tables", "ducklake_column", "ducklake_column_tag", "ducklake_view", "ducklake_view_column_tag",
  "ducklake_macro", "ducklake_macro_impl", "ducklake_macro_parameters", "ducklake_partition_info", "ducklake_sort_info",
  "ducklake_table_stats", "ducklake_table_column_stats" }
local have = {}
for _, r in ipairs(db:relations()) do have[r.name] = r end
local KIDS = {}
for _, r in ipairs(db:relations()) do
  if r.parent and r.parent ~= "ducklake_snapshot" and #r.columns > 0 then
    KIDS[r.parent] = KIDS[r.parent] or {}
    KIDS[r.parent][r.name] = true
  end
end
-- the newest snapshot row by its key: 1 row read
local function snapshot_row(rd)
  local row = rd:snapshot()
  assert(row and row.snapshot_id == LAST, "(d): the newest snapshot row is not LAST's")
  return 1
end
local function attach_rows()
  return db:read(function(rd)
    local n = 0
    for _, r in ipairs(RELS) do
      if r == "ducklake_snapshot" then
        n = n + snapshot_row(rd)
      elseif have[r] and #have[r].columns > 0 then
        for _, children in rd:scan(r, { at = LAST }) do
          n = n + 1
          for _, kids in pairs(children) do n = n + #kids end
        end
      end
    end
    return n
  end)
end
local function attach_batch(walk)
  return function()
    return db:read(function(rd)
      local n = 0
      for _, r in ipairs(RELS) do
        if r == "ducklake_snapshot" and not walk then
          n = n + snapshot_row(rd)
        elseif have[r] and #have[r].columns > 0 then
          local b = rd:scan_columns(r, { at = LAST, children = KIDS[r] })
          n = n + tonumber(b.n)
          for _, k in pairs(b.children or {}) do n = n + tonumber(k.n) end
        end
      end
      return n
    end)
  end
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
  { peer = "moraine_" .. runtime .. "_batch", shape = "d", fn = attach_batch(false) },
  { peer = "moraine_" .. runtime .. "_rows", shape = "d", fn = attach_rows },
  { peer = "sqlite_indexed", shape = "d", fn = sql("d") },
  { peer = "moraine_" .. runtime .. "_walk", shape = "d", fn = attach_batch(true) },
}
if runtime == "luajit" then
  table.insert(E, 2, { peer = "moraine_luajit_raw", shape = "pv", fn = batch_raw(nil) })
  table.insert(E, 5, { peer = "moraine_luajit_raw", shape = "1col", fn = batch_raw({ 1 }) })
  table.insert(E, 8, { peer = "moraine_luajit_raw", shape = "all", fn = batch_raw(true) })
end
local first = {}
for _, e in ipairs(E) do
  e.rows = e.fn() -- warm-up
  e.t = {}
  local f = first[e.shape] or e
  first[e.shape] = f
  -- the moraine reads of one shape answer the same count; SQL's (d) answers its own rows
  if e.shape ~= "d" and e.rows ~= f.rows then
    error(string.format("%s/%s answered %d files, %s %d", e.peer, e.shape, e.rows, f.peer, f.rows))
  end
end
local by = {}
for _, e in ipairs(E) do by[e.peer .. "/" .. e.shape] = e end
local d_batch, d_rows = by["moraine_" .. runtime .. "_batch/d"], by["moraine_" .. runtime .. "_rows/d"]
if d_batch.rows ~= d_rows.rows then
  error(string.format("(d): scan_columns counted %d rows, rd:scan %d", d_batch.rows, d_rows.rows))
end
-- each round runs the entries in an order drawn afresh (a fixed seed: the
-- same orders every run), so no entry always follows the same one and finds
-- the store's lines in the CPU's caches, or not, on that account
math.randomseed(7171)
local order = {}
for r = 1, R do
  for i = 1, #E do order[i] = i end
  for i = #E, 2, -1 do
    local j = math.random(i)
    order[i], order[j] = order[j], order[i]
  end
  for j = 1, #E do
    local e = E[order[j]]
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
out[#out + 1] = string.format("through %s: (a) table %d at snapshot %d (%d files), (d) at snapshot %d, %d interleaved rounds; min / median\n",
  runtime, T, LAST, E[1].rows, LAST, R)
out[#out + 1] = "| shape | moraine batch (rd:files_batch) | moraine row at a time (rd:files) | SQLite indexed | SQLite idx ÷ batch |"
out[#out + 1] = "|---|---:|---:|---:|---:|"
local names = { pv = "(a) partition values, no stats", ["1col"] = "(a) partition values + min/max of one column",
  all = "(a) partition values + min/max of every column", d = "(d) the whole catalog at S, as ATTACH reads it (rd:snapshot + rd:scan_columns)" }
for _, shape in ipairs({ "pv", "1col", "all", "d" }) do
  local b, w, s
  for _, e in ipairs(E) do
    if e.shape == shape then
      if e.peer:find("_batch$") then b = e elseif e.peer:find("_rows$") then w = e elseif e.peer:find("^sqlite") then s = e end
    end
  end
  out[#out + 1] = string.format("| %s | %s / %s | %s | %s / %s | %.2f× |", names[shape], fmt(sorted(b.t)[1]), fmt(median(b.t)),
    w and (fmt(sorted(w.t)[1]) .. " / " .. fmt(median(w.t))) or "—", fmt(sorted(s.t)[1]), fmt(median(s.t)), median(s.t) / median(b.t))
end
if runtime == "luajit" then
  out[#out + 1] = "\nLuaJIT, rd:files_batch with raw = true (cells in the read's pages through the FFI, every value touched):\n"
  out[#out + 1] = "| shape | moraine raw batch | SQLite indexed | SQLite idx ÷ raw batch |"
  out[#out + 1] = "|---|---:|---:|---:|"
  for _, shape in ipairs({ "pv", "1col", "all" }) do
    local b, s = by["moraine_luajit_raw/" .. shape], by["sqlite_indexed/" .. shape]
    out[#out + 1] = string.format("| %s | %s / %s | %s / %s | %.2f× |", names[shape], fmt(sorted(b.t)[1]), fmt(median(b.t)),
      fmt(sorted(s.t)[1]), fmt(median(s.t)), median(s.t) / median(b.t))
  end
end
local walk = by["moraine_" .. runtime .. "_walk/d"]
out[#out + 1] = string.format("\n(d) rows read: %d with the newest snapshot row by its key (rd:snapshot), %d walking every snapshot row up to S"
  .. " (rd:scan_columns of ducklake_snapshot, the read before rd:snapshot): %s / %s, SQLite idx ÷ that %.2f×",
  d_batch.rows, walk.rows, fmt(sorted(walk.t)[1]), fmt(median(walk.t)), median(by["sqlite_indexed/d"].t) / median(walk.t))
local text = table.concat(out, "\n") .. "\n"
io.stderr:write(text)
os.execute("mkdir -p '" .. work .. "/results'")
local f = assert(io.open(work .. "/results/interleave_" .. runtime .. ".md", "w"))
f:write(text)
f:close()
-- every entry's min and median (seconds) for bench/report.mjs's verdicts
local entries = {}
for _, e in ipairs(E) do
  entries[#entries + 1] = { peer = e.peer, shape = e.shape, rows = e.rows, min = sorted(e.t)[1], median = median(e.t) }
end
f = assert(io.open(work .. "/results/interleave_" .. runtime .. ".json", "w"))
f:write(moraine.json_encode({ runtime = runtime, rounds = R, entries = entries }), "\n")
f:close()
db:close()
