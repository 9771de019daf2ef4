-- lua_bench.lua — moraine through its Lua module, the same workloads as
-- bench.c's moraine peer, on the store `bench moraine` imported.
--
--   sh scripts/run-lua.sh luajit|lua5.4 build bench/lua_bench.lua WORK
--
-- (with LUA_CPATH also finding bench's benchclock module). Reads
-- WORK/stores/moraine (a-d), commits on a copy (e), imports into a new
-- store (f) last, so the peak RSS before the import is the serving peak.
-- One warm-up run, then BENCH_RUNS runs (at least 5); median.
local moraine = require "moraine"
local clock = require "benchclock"

local work = assert(arg[1], "usage: lua_bench.lua WORK")
local runtime = rawget(_G, "jit") and "luajit" or "lua54"
local peer = "moraine_" .. runtime
local RUNS = math.max(5, tonumber(os.getenv("BENCH_RUNS") or "5") or 5)
local IMPORT_RUNS = tonumber(os.getenv("BENCH_LUA_IMPORT_RUNS") or os.getenv("BENCH_IMPORT_RUNS") or "") or RUNS

local function fail(msg)
  io.stderr:write("bench " .. peer .. ": FAILED: " .. tostring(msg) .. "\n")
  os.exit(1)
end

local function slurp(p)
  local f = assert(io.open(p, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local meta = moraine.json_decode(slurp(work .. "/meta.json"))
local T, LAST, OLD = meta.bench_table_id, meta.last_snapshot, meta.old_snapshot

local function median(v)
  local c = {}
  for i = 1, #v do c[i] = v[i] end
  table.sort(c)
  local n = #c
  if n % 2 == 1 then return c[(n + 1) / 2] end
  return (c[n / 2] + c[n / 2 + 1]) / 2
end

local results = { peer = peer, runs = RUNS, import_runs = IMPORT_RUNS, workloads = {} }

local function latency(name, fn)
  local check = fn()
  local r = {}
  for i = 1, RUNS do
    local t = clock.now()
    local c = fn()
    r[i] = clock.now() - t
    if c ~= check then fail(name .. ": run " .. i .. " answered " .. c .. " rows, the warm-up " .. check) end
  end
  results.workloads[name] = { runs = r, median = median(r), unit = "s", rows = check }
  io.stderr:write(string.format("  %-14s %10.6f s median (%d rows)\n", name, median(r), check))
end

local function throughput(name, unit, units, fn)
  fn()
  local r = {}
  for i = 1, RUNS do
    local t = clock.now()
    fn()
    r[i] = units / (clock.now() - t)
  end
  results.workloads[name] = { runs = r, median = median(r), unit = unit }
  io.stderr:write(string.format("  %-14s %12.1f %s median\n", name, median(r), unit))
end

local store = work .. "/stores/moraine"
local ok, err = pcall(function()
  local db = moraine.open(store, { read_only = true })

  -- (a), (b): files of one table at S with partition values and column stats,
  -- and the delete files, matched by data_file_id
  local deletes
  local function files(S)
    return db:read(function(rd)
      local dels = {}
      for d in rd:scan("ducklake_delete_file", { at = S, table_id = T }) do dels[d.data_file_id] = d end
      local n, matched = 0, 0
      for row, children in rd:files(T, S) do
        n = n + 1
        local pv = children.ducklake_file_partition_value
        local st = children.ducklake_file_column_stats
        if pv and st and dels[row.data_file_id] then matched = matched + 1 end
      end
      deletes = matched
      return n
    end)
  end
  latency("a_files_latest", function() return files(LAST) end)
  results.a_deletes = deletes
  latency("b_files_old", function() return files(OLD) end)
  results.b_deletes = deletes

  -- (c): the specs in force for every table at S
  latency("c_specs", function()
    return db:read(function(rd)
      local keys = 0
      for t in rd:scan("ducklake_table", { at = OLD }) do
        local p = rd:partition_spec(t.table_id, OLD)
        if p then keys = keys + #p.columns end
        local s = rd:sort_spec(t.table_id, OLD)
        if s then keys = keys + #s.expressions end
      end
      return keys
    end)
  end)

  -- (d): what ATTACH reads, every relation at S
  local rels = { "ducklake_metadata", "ducklake_snapshot", "ducklake_schema", "ducklake_table", "ducklake_tag",
    "ducklake_inlined_data_tables", "ducklake_column", "ducklake_column_tag", "ducklake_view", "ducklake_view_column_tag",
    "ducklake_macro", "ducklake_macro_impl", "ducklake_macro_parameters", "ducklake_partition_info", "ducklake_sort_info",
    "ducklake_table_stats", "ducklake_table_column_stats" }
  -- (the newest snapshot row by its key, as DuckLake reads WHERE snapshot_id =
  -- (SELECT MAX(snapshot_id) ...); the other relations row at a time)
  latency("d_attach", function()
    return db:read(function(rd)
      local n = 0
      for _, r in ipairs(rels) do
        if r == "ducklake_snapshot" then
          assert(rd:snapshot().snapshot_id == LAST)
          n = n + 1
        else
          for _, children in rd:scan(r, { at = LAST }) do
            n = n + 1
            for _, kids in pairs(children) do n = n + #kids end
          end
        end
      end
      return n
    end)
  end)
  db:close()
  results.peak_rss_serve_kb = clock.maxrss()

  -- (e): verb commits on a copy of the store
  local copy = work .. "/stores/moraine-" .. runtime .. "-commits"
  assert(os.execute("rm -rf '" .. copy .. "' && cp -r '" .. store .. "' '" .. copy .. "'"))
  local seq = 0
  local function mkfiles(n)
    seq = seq + 1
    local fs = {}
    for i = 0, n - 1 do
      local pv, st = {}, {}
      for k = 0, meta.pkeys - 1 do pv[k + 1] = tostring((i + k) % 16) end
      for c = 1, meta.stats do
        -- min/max are values of the column's type (the verbs refuse others: engine/statval.c), as bench.c writes them
        local ty = meta.column_types and meta.column_types[c] or "int64"
        local mn, mx
        if ty == "date" then
          mn, mx = string.format("2025-01-%02d", 1 + i % 28), string.format("2026-02-%02d", 1 + i % 28)
        elseif ty:sub(1, 9) == "timestamp" then
          mn = string.format("2025-01-%02d 00:%02d:%02d", 1 + i % 28, math.floor(i / 60) % 60, i % 60)
          mx = string.format("2026-02-%02d 12:%02d:%02d", 1 + i % 28, math.floor(i / 60) % 60, i % 60)
        else
          mn, mx = tostring(i), tostring(i + 100000)
        end
        st[c] = { column = meta.columns[c], column_size_bytes = 200000 + c, value_count = 100000 + i, null_count = c,
          min_value = mn, max_value = mx }
      end
      fs[i + 1] = { path = string.format("bench/lua-%s-%d-%d/ducklake-0197aaaa-bbbb-7ccc-8ddd-%012d.parquet", runtime, seq, i, i),
        record_count = 100000 + i, file_size_bytes = 1800000 + i, footer_size = 2048, partition_values = pv, stats = st }
    end
    return fs
  end
  local plan = {
    { "e_1file", false, 1, 200, "snapshots/s" }, { "e_1file_fsync", true, 1, 20, "snapshots/s" },
    { "e_10k", false, 10000, 1, "files/s" }, { "e_10k_fsync", true, 10000, 1, "files/s" },
  }
  for _, p in ipairs(plan) do
    local name, sync, nfiles, ncommits, unit = p[1], p[2], p[3], p[4], p[5]
    local cdb = moraine.open(copy, { no_sync = not sync })
    local batches = {}
    for run = 1, RUNS + 1 do
      batches[run] = {}
      for i = 1, ncommits do batches[run][i] = mkfiles(nfiles) end
    end
    local run = 0
    throughput(name, unit, nfiles == 1 and ncommits or nfiles * ncommits, function()
      run = run + 1
      for i = 1, ncommits do
        cdb:transaction(function(tx) tx:add_data_files(meta.bench_table, batches[run][i]) end)
      end
    end)
    cdb:close()
  end
  assert(os.execute("rm -rf '" .. copy .. "'"))

  -- (f): import into a new store
  local dir = work .. "/stores/moraine-" .. runtime .. "-import"
  local r = {}
  for run = 0, IMPORT_RUNS do
    assert(os.execute("rm -rf '" .. dir .. "'"))
    local idb = moraine.open(dir, { no_sync = true })
    local t = clock.now()
    idb:import_ndjson(work .. "/catalog")
    t = clock.now() - t
    idb:close()
    io.stderr:write(string.format("  f_import       run %d: %.2f s, %.0f rows/s\n", run, t, meta.total_rows / t))
    if run > 0 then r[#r + 1] = meta.total_rows / t end
  end
  assert(os.execute("rm -rf '" .. dir .. "'"))
  results.workloads.f_import = { runs = r, median = median(r), unit = "rows/s", rows = meta.total_rows }
  results.peak_rss_load_kb = clock.maxrss()
end)
if not ok then fail(moraine.is_error(err) and (err.code .. ": " .. err.message) or err) end

-- results as JSON
local function enc(v)
  local t = type(v)
  if t == "table" then
    if #v > 0 or next(v) == nil and false then
      local p = {}
      for i = 1, #v do p[i] = enc(v[i]) end
      return "[" .. table.concat(p, ",") .. "]"
    end
    local p = {}
    for k, x in pairs(v) do p[#p + 1] = string.format("%q:%s", tostring(k), enc(x)) end
    return "{" .. table.concat(p, ",") .. "}"
  elseif t == "number" then
    if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return string.format("%d", v) end
    return string.format("%.17g", v)
  elseif t == "string" then
    return string.format("%q", v)
  elseif t == "boolean" then
    return tostring(v)
  end
  return "null"
end
os.execute("mkdir -p '" .. work .. "/results'")
local f = assert(io.open(work .. "/results/" .. peer .. ".json", "w"))
f:write(enc(results), "\n")
f:close()
