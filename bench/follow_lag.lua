--- bench/follow_lag.lua CATALOG_DIR [SECONDS] [INTERVAL] [WRITE_MS] — the lag
-- of a follower (`moraine sync SOURCE --follow`) under a writer committing a
-- DuckLake-shaped snapshot to a PostgreSQL catalog every WRITE_MS (default 10)
-- milliseconds, for SECONDS (default 30) seconds (issue #15 item 7). LuaJIT
-- (its FFI gives the driver a millisecond sleep).
--
-- Setup (not timed): a PostgreSQL server on loopback (tests/pg/pg-server.sh
-- through spec/pg_support.lua) loaded with CATALOG_DIR (NDJSON, bench/gen),
-- synced into a moraine catalog (`moraine sync`). Then the follower is
-- started as its own process, `moraine -c CAT sync postgres:... --follow
-- --interval INTERVAL` (default 10ms, the command's smallest sensible value;
-- scripts/moraine-dev, lua5.4 unless MORAINE_LUA says otherwise), and once it
-- has written its first state the writer starts. Each write is one
-- transaction as DuckLake's INSERT of one data file commits it: it reads the
-- newest snapshot row and table 1's stats, inserts the `ducklake_snapshot`
-- row (next_file_id + 1), its `ducklake_snapshot_changes` row
-- (`inserted_into_table:1`), one `ducklake_data_file` row (row_id_start =
-- the table's next_row_id) with its `ducklake_file_column_stats` and
-- `ducklake_file_partition_value` rows (the values of a live file of table 1,
-- read once),
-- and updates `ducklake_table_stats` (record_count, next_row_id,
-- file_size_bytes). Writes are scheduled every WRITE_MS on a fixed grid; a
-- write that would start late starts at once.
--
-- Between writes the driver samples, every millisecond, the catalog's last
-- snapshot (the catalog opened read-only in the driver: what a reader sees)
-- against the writer's last acknowledged snapshot (COMMIT returned): the lag
-- in snapshots is their difference, the lag in milliseconds the age of the
-- oldest acknowledged snapshot the catalog lacks (0 when it lacks none).
-- Also per snapshot: the time from its COMMIT returning to the first sample
-- that sees it in the catalog. And every 50 ms the follower's own account,
-- DIR/moraine-follow.json (moraine.follow_state: source_newest −
-- last_snapshot; now − as_of). After SECONDS the writer stops and the time the
-- follower takes to catch up is measured; then `moraine compare` must find no
-- difference.
--
--     build/bench/gen /tmp/fl --files 2000 --tables 4 --snapshots 200 --stats 3
--     sh scripts/run-lua.sh luajit build bench/follow_lag.lua /tmp/fl/catalog 30 10ms 10
package.path = "spec/?.lua;" .. package.path
local ffi = require "ffi"
local moraine = require "moraine"
local support = require "support"
local pg = require "pg_support"

ffi.cdef [[
int usleep(unsigned int usec);
int kill(int pid, int sig);
]]

local USAGE = "usage: follow_lag.lua CATALOG_DIR [SECONDS] [INTERVAL] [WRITE_MS]"
local dir = assert(arg[1], USAGE)
local SECONDS = tonumber(arg[2] or "30")
local INTERVAL = arg[3] or "10ms"
local PERIOD = tonumber(arg[4] or "10") / 1000
local q = support.q
local MORAINE = "sh scripts/moraine-dev"
local clock = moraine.clock

local function sh(cmd)
  if not os.execute(cmd) then error("failed: " .. cmd, 2) end
end

local work = support.tmpdir("follow-lag")
support.mkdir(work)
local cat = work .. "/catalog.moraine"
local log = work .. "/follow.log"

local function pct(l, p)
  if #l == 0 then return 0 end
  local s = {}
  for i, v in ipairs(l) do s[i] = v end
  table.sort(s)
  return s[math.max(1, math.ceil(p * #s))]
end

local server = pg.start()
local follower
local ok, err = pcall(function()
  local c = pg.connect(server.conninfo)
  local src = "postgres:" .. server.conninfo
  local n = pg.load(c, dir, nil)
  local t0 = clock()
  sh(MORAINE .. " -c " .. q(cat) .. " sync " .. q(src) .. " >/dev/null")
  print(string.format("catalog %s: %d rows loaded into PostgreSQL, synced into a new catalog in %.1f s; driver %s",
    dir, n, clock() - t0, jit.version))

  local function rows(sql)
    local cur = assert(c.con:execute(sql))
    local out, r = {}, cur:fetch({}, "n")
    while r do
      out[#out + 1] = r
      r = cur:fetch({}, "n")
    end
    cur:close()
    return out
  end
  local function exec(sql) return pg.exec(c, sql) end
  local function columns(t)
    local l = {}
    for _, r in ipairs(rows("SELECT column_name FROM information_schema.columns WHERE table_name = '" .. t
      .. "' ORDER BY ordinal_position")) do l[#l + 1] = r[1] end
    return l
  end
  -- the template: table 1's newest live data file (its spec is the one in force)
  local template = rows("SELECT data_file_id, record_count, file_size_bytes FROM ducklake_data_file WHERE table_id = 1 "
    .. "AND end_snapshot IS NULL ORDER BY data_file_id DESC LIMIT 1")[1]
  assert(template, "table 1 has no live data file")
  local tid, rc, size = template[1], template[2], template[3]
  -- the template's rows as SQL literals (column name -> text), fetched once:
  -- the writer's cost then does not grow with the catalog
  local function literals(t)
    local cols = columns(t)
    local sel = {}
    for i, col in ipairs(cols) do
      sel[i] = string.format("CASE WHEN \"%s\" IS NULL THEN 'NULL' ELSE quote_literal(\"%s\") END", col, col)
    end
    local out = {}
    for _, r in ipairs(rows("SELECT " .. table.concat(sel, ", ") .. " FROM " .. t .. " WHERE data_file_id = " .. tid)) do
      local m = {}
      for i, col in ipairs(cols) do m[col] = r[i] end
      out[#out + 1] = m
    end
    return cols, out
  end
  local function insert_sql(t, over)
    local cols, list = literals(t)
    local values = {}
    for k, m in ipairs(list) do
      local v = {}
      for i, col in ipairs(cols) do v[i] = over[col] or m[col] end
      values[k] = "(" .. table.concat(v, ", ") .. ")"
    end
    return "INSERT INTO " .. t .. " (" .. table.concat(cols, ", ") .. ") VALUES " .. table.concat(values, ", ")
  end
  -- @FID@, @SID@, @ROW@: the new file's id, its snapshot, its row_id_start
  local file_sql = insert_sql("ducklake_data_file", { data_file_id = "@FID@", begin_snapshot = "@SID@",
    end_snapshot = "NULL", path = "'bench-follow-@FID@.parquet'", row_id_start = "@ROW@" })
  local stats_sql = insert_sql("ducklake_file_column_stats", { data_file_id = "@FID@" })
  local pv_sql = insert_sql("ducklake_file_partition_value", { data_file_id = "@FID@" })
  local function fill(sql, fid, sid, row)
    return (sql:gsub("@FID@", tostring(fid)):gsub("@SID@", tostring(sid)):gsub("@ROW@", tostring(row)))
  end

  local function write()
    exec("BEGIN")
    local last = rows("SELECT snapshot_id, schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot "
      .. "WHERE snapshot_id = (SELECT MAX(snapshot_id) FROM ducklake_snapshot)")[1]
    local next_row = rows("SELECT next_row_id FROM ducklake_table_stats WHERE table_id = 1")[1][1]
    local sid, fid = tonumber(last[1]) + 1, last[4]
    exec(string.format("INSERT INTO ducklake_snapshot VALUES (%d, NOW(), %s, %s, %s + 1)", sid, last[2], last[3], fid))
    exec(string.format("INSERT INTO ducklake_snapshot_changes VALUES (%d, 'inserted_into_table:1', NULL, NULL, NULL)",
      sid))
    exec(fill(file_sql, fid, sid, next_row))
    exec(fill(stats_sql, fid, sid, next_row))
    exec(fill(pv_sql, fid, sid, next_row))
    exec(string.format("UPDATE ducklake_table_stats SET record_count = record_count + %s, next_row_id = next_row_id + %s, "
      .. "file_size_bytes = file_size_bytes + %s WHERE table_id = 1", rc, rc, size))
    exec("COMMIT")
    return sid
  end

  -- the follower, its own process (the pid is luajit's or lua5.4's: moraine-dev and run-lua.sh exec)
  local p = assert(io.popen(MORAINE .. " -c " .. q(cat) .. " sync " .. q(src) .. " --follow --interval " .. INTERVAL
    .. " >" .. q(log) .. " 2>&1 & echo $!"))
  follower = tonumber(p:read("l"))
  p:close()
  local state_file = cat .. "/moraine-follow.json"
  local waited = clock()
  while not io.open(state_file) do
    assert(clock() - waited < 60, "the follower wrote no state in 60 s (see " .. log .. ")")
    ffi.C.usleep(10000)
  end
  local db = moraine.open(cat, { read_only = true, create = false })
  local first = db:last_snapshot()

  local ack, seen = {}, {}
  local acked = first
  local lag_snaps, lag_ms, flw_snaps, flw_ms = {}, {}, {}, {}
  local writes, late, write_time = 0, 0, {}
  local next_state = 0
  local function sample(now)
    local cs = db:last_snapshot()
    for s = (seen.top or first) + 1, cs do seen[s] = now end
    if cs > (seen.top or first) then seen.top = cs end
    local behind = math.max(0, acked - cs)
    lag_snaps[#lag_snaps + 1] = behind
    lag_ms[#lag_ms + 1] = behind > 0 and (now - ack[cs + 1]) * 1000 or 0
    if now >= next_state then
      next_state = now + 0.05
      local f = io.open(state_file)
      if f then
        local okj, st = pcall(moraine.json_decode, f:read("a"))
        f:close()
        if okj and type(st) == "table" and type(st.as_of) == "number" then
          local wall = require("moraine.follow_state").now()
          flw_snaps[#flw_snaps + 1] = (tonumber(st.source_newest) or 0) - (tonumber(st.last_snapshot) or 0)
          flw_ms[#flw_ms + 1] = (wall - st.as_of) * 1000
        end
      end
    end
  end
  local start = clock()
  local deadline, next_write = start + SECONDS, start
  while true do
    local now = clock()
    if now >= deadline then break end
    if now >= next_write then
      if now - next_write > PERIOD then late = late + 1 end
      local w0 = clock()
      local sid = write()
      local w1 = clock()
      ack[sid], acked = w1, sid
      writes = writes + 1
      write_time[#write_time + 1] = (w1 - w0) * 1000
      next_write = math.max(next_write + PERIOD, w1 - PERIOD)
      now = w1
    end
    sample(now)
    ffi.C.usleep(1000)
  end
  local stop = clock()
  -- catch up
  while db:last_snapshot() < acked do
    assert(clock() - stop < 300, "the follower did not catch up in 300 s")
    sample(clock())
    ffi.C.usleep(1000)
  end
  local caught = clock() - stop
  for s = first + 1, db:last_snapshot() do if not seen[s] then seen[s] = clock() end end
  local vis = {}
  for s = first + 1, acked do vis[#vis + 1] = math.max(0, seen[s] - ack[s]) * 1000 end
  db:close()
  -- the follower's CPU time (user + system, clock ticks of 1/100 s) over the whole run
  local fcpu
  local sf = io.open("/proc/" .. follower .. "/stat")
  if sf then
    local fields = {}
    for x in sf:read("a"):gsub("^.*%) ", ""):gmatch("%S+") do fields[#fields + 1] = x end
    sf:close()
    fcpu = (tonumber(fields[12]) + tonumber(fields[13])) / 100
  end
  ffi.C.kill(follower, 15)
  follower = nil

  -- the follower's rounds, from its log: "synced N snapshots ... in T s"
  local rounds, round_snaps, round_secs = 0, {}, {}
  sh("grep -v '^synced' " .. q(log) .. " | head -5 >&2")
  for line in io.lines(log) do
    local ns, secs = line:match("^synced (%d+) snapshots, .* in ([%d.]+) s;")
    if ns then
      rounds = rounds + 1
      round_snaps[#round_snaps + 1] = tonumber(ns)
      round_secs[#round_secs + 1] = tonumber(secs) * 1000
    end
  end

  print(string.format("writer: %d snapshots in %.1f s (%.1f/s; target every %.0f ms, %d writes started more than a "
    .. "period late); commit time median %.1f ms, p95 %.1f ms", writes, stop - start, writes / (stop - start),
    PERIOD * 1000, late, pct(write_time, 0.5), pct(write_time, 0.95)))
  print(string.format("follower (--interval %s): %d rounds that replayed something; per round median %d snapshots "
    .. "(max %d), %.0f ms (p95 %.0f, max %.0f); caught up %.2f s after the writer stopped; its CPU time %s over "
    .. "%.1f s", INTERVAL, rounds, pct(round_snaps, 0.5), pct(round_snaps, 1), pct(round_secs, 0.5), pct(round_secs, 0.95),
    pct(round_secs, 1), caught, fcpu and string.format("%.1f s", fcpu) or "unknown", clock() - start))
  print("| lag (samples every ~1 ms while the writer ran) | median | p95 | max |")
  print("|---|---:|---:|---:|")
  print(string.format("| snapshots behind the writer's last acknowledged one (%d samples) | %d | %d | %d |", #lag_snaps,
    pct(lag_snaps, 0.5), pct(lag_snaps, 0.95), pct(lag_snaps, 1)))
  print(string.format("| ms since the oldest acknowledged snapshot the catalog lacks | %.0f | %.0f | %.0f |",
    pct(lag_ms, 0.5), pct(lag_ms, 0.95), pct(lag_ms, 1)))
  print(string.format("| ms from a snapshot's COMMIT to the catalog holding it (%d snapshots) | %.0f | %.0f | %.0f |",
    #vis, pct(vis, 0.5), pct(vis, 0.95), pct(vis, 1)))
  print(string.format("| the follower's state file: snapshots (source_newest − last_snapshot; %d reads) | %d | %d | %d |",
    #flw_snaps, pct(flw_snaps, 0.5), pct(flw_snaps, 0.95), pct(flw_snaps, 1)))
  print(string.format("| the follower's state file: ms (now − as_of) | %.0f | %.0f | %.0f |", pct(flw_ms, 0.5),
    pct(flw_ms, 0.95), pct(flw_ms, 1)))

  local out = work .. "/compare.out"
  if not os.execute(MORAINE .. " -c " .. q(cat) .. " compare " .. q(src) .. " >" .. q(out)) then
    sh("head -c 3000 " .. q(out) .. " >&2")
    error("the catalog differs from the source after following")
  end
  print("moraine compare: no differences")
  c:close()
end)
if follower then ffi.C.kill(follower, 15) end
server.stop()
support.cleanup()
if not ok then error(err, 0) end
