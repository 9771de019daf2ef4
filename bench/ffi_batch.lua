-- ffi_batch.lua — what a batch read API would buy the Lua side of workload (a).
--
--   LUA_PATH=... luajit bench/ffi_batch.lua BUILD WORK
--
-- A prototype, in the bench only (the binding is not changed): LuaJIT's FFI
-- calls libmoraine directly and fills column arrays (one Lua array per
-- field, as a batch API would return them) with what DuckLake's file-list
-- query returns — data file id, path, sizes, row_id_start, begin_snapshot,
-- record_count, partition_id, the partition values, min and max of every
-- column, the delete file's path — instead of one Lua table per row and per
-- child row. Same store, table and snapshots as lua_bench.lua; results go to
-- WORK/results/moraine_luajit_batch.json and are printed beside the table.
local ffi = require "ffi"
local build, work = arg[1], arg[2]
assert(build and work, "usage: luajit bench/ffi_batch.lua BUILD WORK")

ffi.cdef [[
typedef struct moraine_db moraine_db;
typedef struct moraine_read moraine_read;
typedef struct moraine_cursor moraine_cursor;
typedef struct { int type; int64_t i; double d; const char *s; size_t len; } moraine_value;
typedef struct { const char *name; uint32_t id; int placement; size_t ncols; const char *const *colnames;
                 const int *coltypes; int begin_col, end_col; const char *parent; } moraine_relation_info;
typedef struct { const moraine_relation_info *rel; size_t ncols; const moraine_value *vals; int64_t ord;
                 const uint8_t *children; size_t children_len; const uint8_t *raw; size_t raw_len; } moraine_row;
typedef struct { const uint8_t *p, *end; const moraine_relation_info *rel; uint64_t left; moraine_value *vals;
                 size_t cap; moraine_db *db; } moraine_children;
typedef struct { size_t map_size; size_t max_map_size; int read_only; int no_sync; int create; } moraine_options;
int moraine_open(const char *path, const moraine_options *opts, moraine_db **out);
void moraine_close(moraine_db *db);
const char *moraine_errmsg(void);
int moraine_relation(moraine_db *db, const char *name, moraine_relation_info *out);
int moraine_column_index(const moraine_relation_info *rel, const char *col);
int moraine_read_begin(moraine_db *db, moraine_read **out);
void moraine_read_end(moraine_read *rd);
int moraine_scan_open(moraine_read *rd, const char *name, int64_t scope, int64_t snapshot, moraine_cursor **out);
int moraine_cursor_next(moraine_cursor *cur, moraine_row *row);
void moraine_row_children(moraine_read *rd, const moraine_row *row, moraine_children *it);
int moraine_children_next(moraine_children *it, moraine_row *child);
void moraine_children_free(moraine_children *it);
]]
local C = ffi.load(build .. "/libmoraine.so")
local moraine = require "moraine"
local clock = require "benchclock"

local function slurp(p)
  local f = assert(io.open(p, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end
local meta = moraine.json_decode(slurp(work .. "/meta.json"))
local T, LAST, OLD, K = meta.bench_table_id, meta.last_snapshot, meta.old_snapshot, meta.stats
local RUNS = math.max(5, tonumber(os.getenv("BENCH_RUNS") or "5") or 5)

local function check(rc, what)
  if rc < 0 then error(what .. ": " .. ffi.string(C.moraine_errmsg())) end
  return rc
end

local dbp = ffi.new("moraine_db*[1]")
local opts = ffi.new("moraine_options")
opts.read_only = 1
check(C.moraine_open(work .. "/stores/moraine", opts, dbp), "open")
local db = dbp[0]
local ri = ffi.new("moraine_relation_info")
local function col(rel, name)
  check(C.moraine_relation(db, rel, ri), rel)
  return C.moraine_column_index(ri, name)
end
local F = {}
for _, c in ipairs { "data_file_id", "path", "file_size_bytes", "footer_size", "row_id_start", "begin_snapshot",
  "record_count", "partition_id" } do F[c] = col("ducklake_data_file", c) end
local DF = col("ducklake_delete_file", "data_file_id")
local DP = col("ducklake_delete_file", "path")
local SC, SMIN, SMAX = col("ducklake_file_column_stats", "column_id"), col("ducklake_file_column_stats", "min_value"),
    col("ducklake_file_column_stats", "max_value")
local PKI, PV = col("ducklake_file_partition_value", "partition_key_index"), col("ducklake_file_partition_value", "partition_value")
check(C.moraine_relation(db, "ducklake_file_column_stats", ri), "stats")
local stats_id = ri.id
check(C.moraine_relation(db, "ducklake_file_partition_value", ri), "pv")
local pv_id = ri.id

local function str(v) return v.type == 2 and ffi.string(v.s, v.len) or nil end
local function num(v) return v.type == 1 and tonumber(v.i) or nil end

local rdp = ffi.new("moraine_read*[1]")
local cp, dp = ffi.new("moraine_cursor*[1]"), ffi.new("moraine_cursor*[1]")
local row, d, kid = ffi.new("moraine_row"), ffi.new("moraine_row"), ffi.new("moraine_row")
local ch = ffi.new("moraine_children")

-- the batch: one array per field
local function files(S)
  local b = { id = {}, path = {}, size = {}, footer = {}, row_id_start = {}, begin = {}, records = {}, partition_id = {},
    del_path = {}, pv = {}, min = {}, max = {} }
  for k = 1, meta.pkeys do b.pv[k] = {} end
  for c = 1, K do b.min[c], b.max[c] = {}, {} end
  check(C.moraine_read_begin(db, rdp), "read_begin")
  local rd = rdp[0]
  check(C.moraine_scan_open(rd, "ducklake_data_file", T, S, cp), "scan")
  check(C.moraine_scan_open(rd, "ducklake_delete_file", T, S, dp), "scan deletes")
  local hd = check(C.moraine_cursor_next(dp[0], d), "next delete")
  local n, dels = 0, 0
  while check(C.moraine_cursor_next(cp[0], row), "next") == 1 do
    n = n + 1
    local v = row.vals
    local id = tonumber(v[F.data_file_id].i)
    b.id[n], b.path[n], b.size[n], b.footer[n] = id, str(v[F.path]), num(v[F.file_size_bytes]), num(v[F.footer_size])
    b.row_id_start[n], b.begin[n], b.records[n] = num(v[F.row_id_start]), num(v[F.begin_snapshot]), num(v[F.record_count])
    b.partition_id[n] = num(v[F.partition_id])
    C.moraine_row_children(rd, row, ch)
    while check(C.moraine_children_next(ch, kid), "children") == 1 do
      local kv = kid.vals
      if kid.rel.id == stats_id then
        local c = tonumber(kv[SC].i)
        if c <= K then b.min[c][n], b.max[c][n] = str(kv[SMIN]), str(kv[SMAX]) end
      elseif kid.rel.id == pv_id then
        b.pv[tonumber(kv[PKI].i) + 1][n] = str(kv[PV])
      end
    end
    C.moraine_children_free(ch)
    while hd == 1 and tonumber(d.vals[DF].i) < id do hd = check(C.moraine_cursor_next(dp[0], d), "next delete") end
    while hd == 1 and tonumber(d.vals[DF].i) == id do
      b.del_path[n] = str(d.vals[DP])
      dels = dels + 1
      hd = check(C.moraine_cursor_next(dp[0], d), "next delete")
    end
  end
  C.moraine_read_end(rd)
  return n, dels, b
end

local function median(v)
  table.sort(v)
  local m = #v
  return m % 2 == 1 and v[(m + 1) / 2] or (v[m / 2] + v[m / 2 + 1]) / 2
end
local out = { peer = "moraine_luajit_batch", runs = RUNS, workloads = {} }
for _, w in ipairs { { "a_files_latest", LAST }, { "b_files_old", OLD } } do
  local rows, dels = files(w[2])
  local r = {}
  for i = 1, RUNS do
    local t = clock.now()
    local n = files(w[2])
    r[i] = clock.now() - t
    if n ~= rows then error(w[1] .. ": answered " .. n .. " rows, the warm-up " .. rows) end
  end
  local m = median(r)
  out.workloads[w[1]] = { median = m, unit = "s", rows = rows, deletes = dels }
  io.stderr:write(string.format("  %-14s %10.6f s median (%d rows, %d deletes) — LuaJIT FFI batch prototype\n", w[1], m, rows, dels))
end
C.moraine_close(db)
local f = assert(io.open(work .. "/results/moraine_luajit_batch.json", "w"))
f:write(string.format('{"peer":"moraine_luajit_batch","workloads":{"a_files_latest":{"median":%.9f,"rows":%d},"b_files_old":{"median":%.9f,"rows":%d}}}\n',
  out.workloads.a_files_latest.median, out.workloads.a_files_latest.rows, out.workloads.b_files_old.median, out.workloads.b_files_old.rows))
f:close()
