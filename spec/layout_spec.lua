--- Layout reports (issue 19): moraine.typed, moraine.audit, moraine.layout,
-- moraine.clustering, moraine.svg and their commands. Right answers come from
-- the real DuckLake catalogs (their NDJSON read here), from reference values
-- published with Iceberg's bucket transform (the hash DuckLake uses), or are
-- computed by hand in this file from the rows the tests generate; a headless
-- Chromium renders the pictures.
local moraine = require "moraine"
local support = require "support"
local typed = require "moraine.typed"
local audit = require "moraine.audit"
local layout = require "moraine.layout"
local clustering = require "moraine.clustering"
local svg = require "moraine.svg"

local NULL = moraine.null
local q = support.q

local run = support.moraine -- `moraine ARGS...` as a subprocess: {out, err, code, show}

local function new_catalog()
  local dir = support.tmpdir("layout")
  local db = moraine.open(dir, { no_sync = true })
  db:init()
  return db, dir
end

local function stat(column, min, max, nulls, values)
  return { column = column, min_value = min or NULL, max_value = max or NULL, null_count = nulls or 0,
    value_count = values or 1 }
end

local function file(path, rows, values, stats)
  return { path = path, record_count = rows, file_size_bytes = 100, partition_values = values, stats = stats }
end

local function near(a, b, eps) return math.abs(a - b) <= (eps or 1e-9) end

teardown(function() support.cleanup() end)

describe("moraine.typed", function()
  it("orders integers by value, not as text, HUGEINT beyond int64 included", function()
    local function cmp(t, a, b) return typed.compare(t, assert(typed.parse(t, a)), assert(typed.parse(t, b))) end
    assert.are.equal(1, cmp("int64", "10", "9"))   -- "10" < "9" as text
    assert.are.equal(-1, cmp("int64", "-2", "-1")) -- "-2" > "-1" as text
    assert.are.equal(1, cmp("int128", "170141183460469231731687303715884105727", "9223372036854775807"))
    assert.are.equal(-1, cmp("int128", "-170141183460469231731687303715884105728", "-9223372036854775808"))
    assert.are.equal(0, cmp("int64", "007", "7"))
    assert.are.equal(-1, cmp("decimal(18,2)", "76.22", "152.07"))
    assert.are.equal(0, cmp("decimal(18,2)", "1.5", "1.50"))
    assert.are.equal(-1, cmp("date", "1969-12-31", "1970-01-01"))
    assert.are.equal(-1, cmp("timestamp", "2025-03-25 23:55:00", "2025-03-26 00:02:00"))
    assert.are.equal(0, cmp("timestamptz", "2024-03-01 01:00:00+02", "2024-02-29 23:00:00+00"))
    assert.are.equal(-1, cmp("varchar", "Z", "a"))
    assert.is_nil(typed.parse("int64", "12x"))
    assert.is_nil(typed.parse("date", "2025-02-30"))
    assert.is_nil(typed.parse("interval", "1 day"))
  end)

  it("computes DuckLake's temporal transforms as the real catalogs store them", function()
    -- s1: every live file of spec 2 (year, month, day) and spec 3 (+ hour) at snapshot 3 and 5:
    -- the partition values DuckLake wrote against the file's ts bounds, read from the NDJSON
    local dir = support.FIXTURES .. "/s1_evolution/catalog/"
    local pvs, mins, checked = {}, {}, 0
    for _, r in ipairs(moraine.read_ndjson(dir .. "ducklake_file_partition_value.ndjson")) do
      pvs[r.data_file_id] = pvs[r.data_file_id] or {}
      pvs[r.data_file_id][r.partition_key_index] = r.partition_value
    end
    for _, r in ipairs(moraine.read_ndjson(dir .. "ducklake_file_column_stats.ndjson")) do
      if r.column_id == 2 then mins[r.data_file_id] = r.min_value end
    end
    for _, f in ipairs(moraine.read_ndjson(dir .. "ducklake_data_file.ndjson")) do
      if f.partition_id == 2 or f.partition_id == 3 then
        local v = assert(typed.parse("timestamp", mins[f.data_file_id]))
        local want = pvs[f.data_file_id]
        assert.are.equal(tonumber(want[0]), typed.transform("year", "timestamp", v))
        assert.are.equal(tonumber(want[1]), typed.transform("month", "timestamp", v))
        assert.are.equal(tonumber(want[2]), typed.transform("day", "timestamp", v))
        if f.partition_id == 3 then assert.are.equal(tonumber(want[3]), typed.transform("hour", "timestamp", v)) end
        checked = checked + 1
      end
    end
    assert.is_true(checked >= 20)
    -- s3: epoch_day(d) and epoch_hour(ts) of file 11 (2024-03-01, 2024-03-01 05:00:00)
    assert.are.equal(19783, typed.transform("epoch_day", "date", typed.parse("date", "2024-03-01")))
    assert.are.equal(474797, typed.transform("epoch_hour", "timestamp", typed.parse("timestamp", "2024-03-01 05:00:00")))
  end)

  it("hashes as Iceberg's bucket transform, the hash DuckLake's bucket uses", function()
    -- reference values of Iceberg's spec (murmur3_x86_32, seed 0): long 34, "iceberg", bytes 00 01 02 03
    local le34 = string.char(34, 0, 0, 0, 0, 0, 0, 0)
    assert.are.equal(2017239379, typed.murmur3_32(le34))
    assert.are.equal(1210000089, typed.murmur3_32("iceberg"))
    assert.are.equal(4106284089, typed.murmur3_32(string.char(0, 1, 2, 3))) -- -188683207 unsigned
    assert.are.equal(79, typed.bucket(100, "int64", typed.parse("int64", "34")))
    -- s3 wrote bucket(7, n) = 1 for n = 5 and 2 for n = 6
    assert.are.equal(1, typed.bucket(7, "int64", typed.parse("int64", "5")))
    assert.are.equal(2, typed.bucket(7, "int64", typed.parse("int64", "6")))
    assert.is_nil(typed.bucket(7, "varchar", "x"))
  end)

  it("buckets an int32 as an int64, as DuckLake wrote the corpus's int32 bucket keys", function()
    -- corpus seed 10: table 1's spec 3 is bucket(4, qty), identity(..) while qty is int32
    local dir = support.FIXTURES .. "/corpus/seed_0010/catalog/"
    local under, vals, n = {}, {}, 0
    for _, f in ipairs(moraine.read_ndjson(dir .. "ducklake_data_file.ndjson")) do
      if f.table_id == 1 and f.partition_id == 3 then under[f.data_file_id] = true end
    end
    for _, v in ipairs(moraine.read_ndjson(dir .. "ducklake_file_partition_value.ndjson")) do
      if under[v.data_file_id] and v.partition_key_index == 0 then vals[v.data_file_id] = v.partition_value end
    end
    for _, st in ipairs(moraine.read_ndjson(dir .. "ducklake_file_column_stats.ndjson")) do
      if under[st.data_file_id] and st.column_id == 3 and st.min_value ~= NULL and st.min_value == st.max_value then
        assert.are.equal(tonumber(vals[st.data_file_id]), typed.bucket(4, "int32", typed.parse("int32", st.min_value)), st.min_value)
        n = n + 1
      end
    end
    assert.is_true(n >= 100, n)
  end)
end)

describe("moraine.audit", function()
  it("finds no violation in any real DuckLake catalog, at any snapshot", function()
    for _, s in ipairs({ "s1_evolution", "s2_multi_table", "s3_edge_values", "s4_encrypted" }) do
      local db = support.import_fixture(s)
      local ok_total = 0
      for S = 0, db:last_snapshot() do
        local rep = audit.run(db, { at = S })
        assert.are.equal(0, rep.violations, s .. " at " .. S .. ": " .. moraine.json_encode(rep))
        assert.are.equal(rep.files, rep.ok + rep.violations + rep.unchecked)
        ok_total = ok_total + rep.ok
      end
      assert.is_true(ok_total > 0, s)
      db:close()
    end
  end)

  it("counts s1's live files at the last snapshot: its bucket files of ranges and its merged hour file of two dates unchecked, the rest ok", function()
    local dir = support.FIXTURES .. "/s1_evolution/catalog/"
    local live, ranges, idstats, tsstats, two_days = 0, 0, {}, {}, 0
    for _, r in ipairs(moraine.read_ndjson(dir .. "ducklake_file_column_stats.ndjson")) do
      if r.column_id == 1 then idstats[r.data_file_id] = r end
      if r.column_id == 2 then tsstats[r.data_file_id] = r end
    end
    for _, f in ipairs(moraine.read_ndjson(dir .. "ducklake_data_file.ndjson")) do
      if f.end_snapshot == NULL then
        live = live + 1
        local st = idstats[f.data_file_id]
        if f.partition_id == 4 and st.min_value ~= st.max_value then ranges = ranges + 1 end
        -- spec 11 is hour(ts) alone: a merged file whose bounds lie on two dates cannot be decided
        local ts = tsstats[f.data_file_id]
        if f.partition_id == 11 and ts.min_value:sub(1, 10) ~= ts.max_value:sub(1, 10) then two_days = two_days + 1 end
      end
    end
    local db = support.import_fixture("s1_evolution")
    local rep = audit.run(db, { table = "events" })
    db:close()
    assert.are.equal(live, rep.files)
    local bucket_unchecked = 0
    for _, f in ipairs(rep.tables[1].findings) do
      if f.transform == "bucket(4)" and f.status == "unchecked" then bucket_unchecked = bucket_unchecked + 1 end
    end
    assert.are.equal(ranges, bucket_unchecked)
    assert.is_true(ranges > 0)
    local hour_unchecked = 0
    for _, f in ipairs(rep.tables[1].findings) do
      if f.transform == "hour" then
        assert.are.equal("unchecked", f.status)
        assert.truthy(f.problem:find("different days", 1, true), f.problem)
        hour_unchecked = hour_unchecked + 1
      end
    end
    assert.are.equal(two_days, hour_unchecked)
    assert.are.equal(live - ranges - two_days, rep.ok)
  end)

  -- Adds a copy of live file @like named @path whose partition values are
  -- @values, through the staged path in a snapshot of its own: a value the
  -- verbs refuse (one DuckLake never writes), as a catalog imported from
  -- elsewhere may hold it.
  local function add_raw_file(db, like, path, values)
    local S = db:last_snapshot()
    local snap, f, kids
    db:read(function(rd)
      for row in rd:scan("ducklake_snapshot", { at = S }) do if row.snapshot_id == S then snap = row end end
      for row, children in rd:scan("ducklake_data_file", { at = S }) do
        if row.path == like then f, kids = row, children end
      end
    end)
    local id = snap.next_file_id
    db:commit(S + 1, function(tx)
      snap.snapshot_id, snap.next_file_id = S + 1, id + 1
      tx:insert("ducklake_snapshot", snap)
      f.data_file_id, f.path, f.begin_snapshot = id, path, S + 1
      tx:insert("ducklake_data_file", f)
      for k, v in ipairs(values) do
        tx:insert("ducklake_file_partition_value",
          { data_file_id = id, table_id = f.table_id, partition_key_index = k - 1, partition_value = v })
      end
      for _, st in ipairs(kids.ducklake_file_column_stats or {}) do
        st.data_file_id = id
        tx:insert("ducklake_file_column_stats", st)
      end
    end)
  end

  -- eleven files with known verdicts, written through the verb path (one,
  -- whose value the verbs refuse, through the staged path)
  local function audit_catalog()
    local db, dir = new_catalog()
    db:transaction(function(tx)
      tx:create_table("ev", { { name = "id", type = "int64" }, { name = "ts", type = "timestamp" },
        { name = "big", type = "int128" } })
      tx:set_partitioning("ev", { "year(ts)", "month(ts)", "day(ts)" })
    end)
    db:transaction(function(tx)
      tx:add_data_files("ev", {
        file("ok-day.parquet", 24, { "2025", "3", "25" }, { stat("ts", "2025-03-25 00:00:00", "2025-03-25 23:00:00", 0, 24) }),
        file("two-days.parquet", 5, { "2025", "3", "25" }, { stat("ts", "2025-03-25 22:00:00", "2025-03-26 02:00:00", 0, 5) }),
        file("wrong-day.parquet", 3, { "2025", "3", "28" }, { stat("ts", "2025-03-27 01:00:00", "2025-03-27 03:00:00", 0, 3) }),
        file("no-stats.parquet", 3, { "2025", "3", "27" }, {}),
        file("all-null.parquet", 4, { NULL, NULL, NULL }, { stat("ts", nil, nil, 4, 0) }),
      })
    end)
    add_raw_file(db, "wrong-day.parquet", "bad-value.parquet", { "2025", "03x", "27" })
    db:transaction(function(tx) tx:set_partitioning("ev", { "bucket(100, id)" }) end)
    db:transaction(function(tx)
      tx:add_data_files("ev", {
        file("bucket-ok.parquet", 2, { "79" }, { stat("id", "34", "34", 0, 2) }),
        file("bucket-wrong.parquet", 2, { "78" }, { stat("id", "34", "34", 0, 2) }),
        file("bucket-range.parquet", 2, { "1" }, { stat("id", "30", "40", 0, 2) }),
      })
    end)
    db:transaction(function(tx) tx:set_partitioning("ev", { "big" }) end)
    db:transaction(function(tx)
      tx:add_data_files("ev", {
        file("big-span.parquet", 3, { "10" }, { stat("big", "9", "11", 0, 3) }),
        file("big-ok.parquet", 1, { "170141183460469231731687303715884105727" },
          { stat("big", "170141183460469231731687303715884105727", "170141183460469231731687303715884105727", 0, 1) }),
      })
    end)
    return db, dir
  end

  it("reports a file spanning two days, wrong and unparseable values, and typed spans as violations", function()
    local db = audit_catalog()
    local rep = audit.run(db, { table = "ev" })
    db:close()
    assert.are.equal(11, rep.files)
    assert.are.equal(4, rep.ok)          -- ok-day, all-null, bucket-ok, big-ok
    assert.are.equal(5, rep.violations) -- two-days, wrong-day, bad-value, bucket-wrong, big-span
    assert.are.equal(2, rep.unchecked)  -- no-stats, bucket-range
    local by = {}
    for _, f in ipairs(rep.tables[1].findings) do
      by[f.path] = by[f.path] or {}
      table.insert(by[f.path], f)
    end
    -- two days: only the day key is broken (year and month hold)
    assert.are.equal(1, #by["two-days.parquet"])
    assert.are.equal(2, by["two-days.parquet"][1].key_index)
    assert.truthy(by["two-days.parquet"][1].problem:find("rows span partitions", 1, true))
    assert.truthy(by["wrong-day.parquet"][1].problem:find("partition value 28 but day(ts)", 1, true))
    assert.truthy(by["bad-value.parquet"][1].problem:find("not an integer", 1, true))
    assert.are.equal("unchecked", by["no-stats.parquet"][1].status)
    assert.truthy(by["bucket-wrong.parquet"][1].problem:find("is 79", 1, true))
    assert.are.equal("unchecked", by["bucket-range.parquet"][1].status)
    -- typed: 9 <= 10 <= 11 is a span; as text "10" < "9" would read "outside the bounds"
    assert.truthy(by["big-span.parquet"][1].problem:find("rows span partitions", 1, true))
    assert.is_nil(by["ok-day.parquet"])
    assert.is_nil(by["big-ok.parquet"])
  end)

  it("moraine audit exits 1 on a violation and 0 on a real catalog; --json gives the report", function()
    local _, dir = audit_catalog()
    local r = run({ "-c", dir, "audit" })
    assert.are.equal(1, r.code, r.show)
    assert.truthy(r.out:find("5 with violations", 1, true), r.show)
    assert.truthy(r.out:find("two-days.parquet", 1, true) == nil, r.show) -- files named by id
    local j = run({ "-c", dir, "audit", "ev", "--json" })
    local doc = moraine.json_decode(j.out)
    assert.are.equal(5, doc.violations)
    assert.are.equal(11, doc.files)
    local _, sdir = support.import_fixture("s3_edge_values")
    local ok = run({ "-c", sdir, "audit", "--at", "10" })
    assert.are.equal(0, ok.code, ok.show)
    assert.truthy(ok.out:find("0 with violations", 1, true), ok.show)
    local bad = run({ "-c", sdir, "audit", "nosuch" })
    assert.are.equal(1, bad.code)
    assert.truthy(bad.err:find("no table 'nosuch'", 1, true), bad.show)
  end)

  it("refuses malformed options", function()
    local db = new_catalog()
    support.expect_err("EINVAL", "unknown option 'tabel'", audit.run, db, { tabel = "x" })
    support.expect_err("EINVAL", "not in the catalog", audit.run, db, { at = 99 })
    db:close()
  end)
end)

-- day era then hour era: 3 day files of 24 rows (one per hour), 24 hour files of 10 rows
describe("BOOLEAN as DuckLake writes it: partition values true/false, stats bounds 1/0", function()
  it("parses both forms", function()
    assert.are.same({ true, false, true, false }, { typed.parse("boolean", "1"), typed.parse("boolean", "0"),
      typed.parse("boolean", "true"), typed.parse("boolean", "FALSE") })
    assert.is_nil(typed.parse("boolean", "2"))
    assert.is_nil(typed.parse("boolean", "yes"))
  end)

  it("audits the corpus's boolean identity keys against their 1/0 bounds (seed 18: none unchecked for that)", function()
    -- the files live at the last snapshot whose spec has an identity key on a boolean column
    local dir = support.FIXTURES .. "/corpus/seed_0018/catalog/"
    local booleans, keyed, n = {}, {}, 0
    for _, c in ipairs(moraine.read_ndjson(dir .. "ducklake_column.ndjson")) do
      if c.column_type == "boolean" then booleans[c.table_id .. ":" .. c.column_id] = true end
    end
    for _, k in ipairs(moraine.read_ndjson(dir .. "ducklake_partition_column.ndjson")) do
      if k.transform == "identity" and booleans[k.table_id .. ":" .. k.column_id] then keyed[k.partition_id] = true end
    end
    for _, f in ipairs(moraine.read_ndjson(dir .. "ducklake_data_file.ndjson")) do
      if f.end_snapshot == NULL and f.partition_id ~= NULL and keyed[f.partition_id] then n = n + 1 end
    end
    assert.is_true(n > 100, n)
    local db = moraine.open(support.tmpdir("seed18"), { no_sync = true })
    db:import_ndjson(dir)
    local rep = audit.run(db)
    db:close()
    assert.are.equal(0, rep.violations)
    for _, t in ipairs(rep.tables) do
      for _, f in ipairs(t.findings) do assert.falsy((f.problem or ""):find("boolean", 1, true), f.problem) end
    end
  end)

  it("moraine.layout prunes by 1/0 bounds, on true and on false", function()
    local db = new_catalog()
    db:transaction(function(tx) tx:create_table("t", { { name = "b", type = "boolean" } }) end)
    db:transaction(function(tx)
      tx:add_data_files("t", { file("f.parquet", 3, nil, { stat("b", "0", "0", 0, 3) }),
        file("m.parquet", 4, nil, { stat("b", "0", "1", 0, 4) }), file("t.parquet", 5, nil, { stat("b", "1", "1", 0, 5) }) })
    end)
    local rep = layout.run(db, { table = "t", where = "b = true" })
    assert.are.same({ 2, 9 }, { rep.total.read_files, rep.total.read_rows })
    -- a false bound is a bound (it was taken as none: every file read)
    for _, where in ipairs({ "b = 0", "b = false", "b <= false", "b BETWEEN false AND false" }) do
      rep = layout.run(db, { table = "t", where = where })
      assert.are.same({ 2, 7 }, { rep.total.read_files, rep.total.read_rows }, where)
    end
    db:close()
  end)
end)

local function evolution_catalog()
  local db, dir = new_catalog()
  db:transaction(function(tx)
    tx:create_table("ev", { { name = "ts", type = "timestamp" }, { name = "v", type = "int64" } })
    tx:set_partitioning("ev", { "year(ts)", "month(ts)", "day(ts)" })
  end)
  db:transaction(function(tx)
    local files = {}
    for d = 1, 3 do
      files[d] = file("day" .. d .. ".parquet", 24, { "2025", "3", tostring(d) }, {
        stat("ts", string.format("2025-03-%02d 00:00:00", d), string.format("2025-03-%02d 23:00:00", d), 0, 24),
        stat("v", tostring((d - 1) * 24), tostring(d * 24 - 1), 0, 24) })
    end
    tx:add_data_files("ev", files)
  end)
  db:transaction(function(tx) tx:set_partitioning("ev", { "year(ts)", "month(ts)", "day(ts)", "hour(ts)" }) end)
  db:transaction(function(tx)
    local files = {}
    for h = 0, 23 do
      files[h + 1] = file("hour" .. h .. ".parquet", 10, { "2025", "3", "4", tostring(h) }, {
        stat("ts", string.format("2025-03-04 %02d:00:00", h), string.format("2025-03-04 %02d:45:00", h), 0, 10),
        stat("v", tostring(100 + 10 * h), tostring(109 + 10 * h), 0, 10) })
    end
    tx:add_data_files("ev", files)
  end)
  return db, dir
end

describe("moraine.layout", function()
  it("parses range predicates", function()
    assert.are.same({ column = "ts", lo = "2025-01-01", hi = "2025-01-02" },
      layout.parse_where("ts between '2025-01-01' AND DATE '2025-01-02'"))
    assert.are.same({ column = "my col", lo = "5", hi = "5" }, layout.parse_where('"my col" = 5'))
    assert.are.same({ column = "v", lo = "3" }, layout.parse_where("v >= 3"))
    assert.are.same({ column = "v", hi = "3" }, layout.parse_where("v < 3"))
    assert.is_nil(layout.parse_where("v LIKE 'x'"))
    -- a lower and an upper bound joined by AND; an AND inside quotes is the value's
    assert.are.same({ column = "ts", lo = "2025-01-01", hi = "2025-02-01" },
      layout.parse_where("ts >= '2025-01-01' AND ts < '2025-02-01'"))
    assert.are.same({ column = "ts", lo = "1", hi = "9" }, layout.parse_where("ts <= 9 and ts > 1"))
    assert.are.same({ column = "a AND b", lo = "x AND y", hi = "x AND y" }, layout.parse_where([["a AND b" = 'x AND y']]))
    assert.are.same({ column = "brand", lo = "ANDROID", hi = "ANDROID" }, layout.parse_where("brand = ANDROID"))
    -- what cannot be one range on one column says so, not that a bound is not a timestamp
    local function refused(s, msg)
      local r, e = layout.parse_where(s)
      assert.is_nil(r)
      assert.is_truthy(e:find(msg, 1, true), e)
    end
    refused("ts >= 1 AND v < 2", "names two columns ('ts' and 'v')")
    refused("ts >= 1 AND ts > 2", "two lower bounds on 'ts'")
    refused("ts BETWEEN 1 AND 5 AND ts <= 3", "two upper bounds on 'ts'")
    refused("x = 1 AND x = 1", "two lower bounds on 'x'") -- always the lower first
    refused("ts >= 1 AND ts LIKE 3", "cannot parse 'ts LIKE 3'")
    refused("id <> 5", "'<>' in the predicate 'id <> 5' is no range")
    refused("id != 5", "'!=' in the predicate 'id != 5' is no range")
    assert.are.same({ column = "brand", lo = "a<>b", hi = "a<>b" }, layout.parse_where("brand = 'a<>b'"))
  end)

  it("prunes each era at its own granularity and estimates a rewrite under the live spec", function()
    local db = evolution_catalog()
    local rep = layout.run(db, { table = "ev", where = "ts BETWEEN '2025-03-02 10:00:00' AND '2025-03-02 10:59:59'" })
    local day, hour = rep.eras[1], rep.eras[2]
    assert.are.same({ 3, 72, 1, 24, 1, 24 }, { day.files, day.rows, day.partition_files, day.partition_rows, day.read_files, day.read_rows })
    assert.are.same({ 24, 240, 0, 0, 0 }, { hour.files, hour.rows, hour.partition_files, hour.read_files, hour.read_rows })
    assert.is_true(hour.live)
    assert.are.same({ 27, 312, 1, 24 }, { rep.total.files, rep.total.rows, rep.total.read_files, rep.total.read_rows })
    -- rewritten by hour, day 2's 24 rows (spread over [00:00, 23:00]) put
    -- 24 * 3600 / (23 * 3600 + 1e-6) ~ 1 row in hour 10
    local after = math.floor(24 * 3600 / (23 * 3600 + 1e-6) + 0.5)
    assert.are.equal(after, rep.rewrite.read_rows_after)
    assert.are.equal(24, rep.rewrite.read_rows_now)
    assert.are.equal(24 - after, rep.rewrite.saving)
    assert.is_true(near(72 / (24 - after), rep.rewrite.queries_to_pay))
    -- an hour of day 4: only the hour era has it
    rep = layout.run(db, { table = "ev", where = "ts BETWEEN '2025-03-04 10:00:00' AND '2025-03-04 10:59:59'" })
    assert.are.same({ 0, 0 }, { rep.eras[1].partition_files, rep.eras[1].read_files })
    assert.are.same({ 1, 10 }, { rep.eras[2].read_files, rep.eras[2].read_rows })
    -- a column no spec partitions: only min/max prunes (day files hold v 0-23, 24-47, 48-71,
    -- hour files 100-109, 110-119, ...); a rewrite saves nothing
    rep = layout.run(db, { table = "ev", where = "v BETWEEN 30 AND 105" })
    assert.are.same({ 3, 2, 48 }, { rep.eras[1].partition_files, rep.eras[1].read_files, rep.eras[1].read_rows })
    assert.are.same({ 24, 1, 10 }, { rep.eras[2].partition_files, rep.eras[2].read_files, rep.eras[2].read_rows })
    assert.is_nil(rep.rewrite.read_rows_after)
    support.expect_err("EINVAL", "no column 'nope'", layout.run, db, { table = "ev", where = "nope = 1" })
    support.expect_err("EINVAL", "is not a int64", layout.run, db, { table = "ev", where = "v = abc" })
    support.expect_err("EINVAL", "cannot parse the predicate", layout.run, db, { table = "ev", where = "v LIKE 1" })
    db:close()
  end)

  it("moraine layout prints the eras and writes the picture", function()
    local _, dir = evolution_catalog()
    local out = support.tmpdir("layout") .. ".svg"
    local r = run({ "-c", dir, "layout", "ev", "--where", "ts BETWEEN '2025-03-02 10:00:00' AND '2025-03-02 10:59:59'", "--svg", out })
    assert.are.equal(0, r.code, r.show)
    assert.truthy(r.out:find("read: 1 of 27 files, 24 of 312 rows", 1, true), r.show)
    assert.truthy(support.read(out):find("</svg>", 1, true))
    local miss = run({ "-c", dir, "layout", "ev" })
    assert.are.equal(2, miss.code, miss.show)
    assert.truthy(miss.err:find("--where", 1, true))
  end)
end)

describe("moraine.clustering", function()
  it("gives the Hilbert index: neighbours in order, aligned blocks as runs", function()
    for _, kb in ipairs({ { 2, 5 }, { 3, 3 } }) do
      local k, b = kb[1], kb[2]
      local side = 2 ^ b
      local at = {}
      local function each(prefix, d)
        if d > k then
          local i = clustering.hilbert_index(prefix, b)
          assert.is_nil(at[i])
          local cp = {}
          for j = 1, k do cp[j] = prefix[j] end
          at[i] = cp
          return
        end
        for v = 0, side - 1 do prefix[d] = v; each(prefix, d + 1) end
        prefix[d] = nil
      end
      each({}, 1)
      for i = 1, side ^ k - 1 do
        local dist = 0
        for j = 1, k do dist = dist + math.abs(at[i][j] - at[i - 1][j]) end
        assert.are.equal(1, dist, "positions " .. (i - 1) .. " and " .. i)
      end
      -- every run of 2^k positions starting at a multiple of 2^k is an aligned cube of side 2
      for s = 0, side ^ k - 1, 2 ^ k do
        for j = 1, k do
          local lo = at[s][j] - at[s][j] % 2
          for i = s, s + 2 ^ k - 1 do assert.is_true(at[i][j] == lo or at[i][j] == lo + 1) end
        end
      end
    end
    assert.has_error(function() clustering.hilbert_index({ 32, 0 }, 5) end)
    assert.has_error(function() clustering.hilbert_index({}, 5) end)
  end)

  -- the 32 x 32 grid written in three orders, 64 files of 16 rows
  local function grid_catalog()
    local db, dir = new_catalog()
    local cells = {}
    for x = 0, 31 do for y = 0, 31 do cells[#cells + 1] = { x, y } end end
    local orders = { sorted = {}, hilbert = {}, random = {} }
    for i, c in ipairs(cells) do orders.sorted[i], orders.hilbert[i], orders.random[i] = c, c, c end
    table.sort(orders.hilbert, function(a, b) return clustering.hilbert_index(a, 5) < clustering.hilbert_index(b, 5) end)
    math.randomseed(support.seed and support.seed(19) or 19)
    local rnd = orders.random
    for i = #rnd, 2, -1 do local j = math.random(i); rnd[i], rnd[j] = rnd[j], rnd[i] end
    local bounds = {}
    for name, order in pairs(orders) do
      db:transaction(function(tx) tx:create_table(name, { { name = "x", type = "int64" }, { name = "y", type = "int64" } }) end)
      bounds[name] = {}
      db:transaction(function(tx)
        local files = {}
        for f = 0, 63 do
          local b = { math.huge, -math.huge, math.huge, -math.huge }
          for r = 1, 16 do
            local c = order[f * 16 + r]
            b[1], b[2] = math.min(b[1], c[1]), math.max(b[2], c[1])
            b[3], b[4] = math.min(b[3], c[2]), math.max(b[4], c[2])
          end
          bounds[name][f + 1] = b
          files[f + 1] = file(name .. f .. ".parquet", 16, nil, {
            stat("x", string.format("%d", b[1]), string.format("%d", b[2]), 0, 16),
            stat("y", string.format("%d", b[3]), string.format("%d", b[4]), 0, 16) })
        end
        tx:add_data_files(name, files)
      end)
    end
    return db, dir, bounds
  end

  it("measures sorted, rank-Hilbert and random orders against the bound s + N^(-1/k)", function()
    local db, _, bounds = grid_catalog()
    local s = 0.01
    local bound = s + 64 ^ (-1 / 2) -- N = 64 files, k = 2 columns
    -- sorted by (x, y): each file holds one x (width 1/32) and half the ys (16 of 32)
    local r = clustering.run(db, { table = "sorted", columns = { "x", "y" } }).table_result
    assert.is_true(near(r.bound, bound))
    assert.is_true(near(r.columns[1].avg_width, 1 / 32))
    assert.is_true(near(r.columns[2].avg_width, 16 / 32))
    assert.is_true(near(r.columns[1].share, s + 1 / 32))
    assert.is_true(near(r.share, ((s + 1 / 32) + (s + 16 / 32)) / 2))
    assert.are.same({ "served", "not served" }, { r.columns[1].verdict, r.columns[2].verdict })
    -- rank-Hilbert: every 16 consecutive cells are an aligned 4 x 4 block: width 4/32 on both, the bound itself
    r = clustering.run(db, { table = "hilbert", columns = { "x", "y" } }).table_result
    assert.is_true(near(r.columns[1].avg_width, 4 / 32))
    assert.is_true(near(r.columns[2].avg_width, 4 / 32))
    assert.is_true(near(r.share, bound))
    -- random: the exact share of rows inside each file's bounds, counted from the grid (the
    -- module estimates it from the bounds alone, taking each file's rows as spread evenly
    -- between its bounds: close, not equal)
    local exact = { 0, 0 }
    for _, b in ipairs(bounds.random) do
      exact[1] = exact[1] + (b[2] - b[1] + 1) / 32 / 64
      exact[2] = exact[2] + (b[4] - b[3] + 1) / 32 / 64
    end
    r = clustering.run(db, { table = "random", columns = { "x", "y" } }).table_result
    for j = 1, 2 do
      assert.is_true(near(r.columns[j].avg_width, exact[j], 0.05), r.columns[j].avg_width .. " vs " .. exact[j])
      assert.are.equal("not served", r.columns[j].verdict)
    end
    assert.is_true(r.share > 0.8)
    support.expect_err("EINVAL", "no column 'z'", clustering.run, db, { table = "sorted", columns = { "z" } })
    support.expect_err("EINVAL", "share", clustering.run, db, { table = "sorted", share = 0 })
    db:close()
  end)

  it("takes the live sort spec's columns by default, named as they were at the snapshot", function()
    -- s1: SET SORTED BY (amount DESC, region ASC) at 10 and 12; region renamed area at 13; RESET SORTED BY at 15
    local db = support.import_fixture("s1_evolution")
    local r = clustering.run(db, { table = "events", at = 11 })
    assert.are.same({ "amount", "region" }, r.columns)
    assert.are.equal("the sort spec", r.columns_from)
    r = clustering.run(db, { table = "events", at = 14 })
    assert.are.same({ "amount", "area" }, r.columns)
    r = clustering.run(db, { table = "events", at = 20 })
    assert.are.equal("every column with bounds", r.columns_from)
    assert.are.same({ "id", "ts", "area", "amount", "note" }, r.columns)
    db:close()
  end)

  it("moraine clustering prints widths and shares, per era on a real catalog", function()
    local _, dir = grid_catalog()
    local r = run({ "-c", dir, "clustering", "hilbert", "x,y", "--json" })
    assert.are.equal(0, r.code, r.show)
    local doc = moraine.json_decode(r.out)
    assert.is_true(near(doc.table_result.share, 0.01 + 1 / 8))
    local _, s1 = support.import_fixture("s1_evolution")
    local t = run({ "-c", s1, "clustering", "events", "id,ts", "--share", "0.05" })
    assert.are.equal(0, t.code, t.show)
    for _, pid in ipairs({ "spec 2", "spec 3", "spec 4", "spec 11", "unpartitioned" }) do
      assert.truthy(t.out:find(pid, 1, true), t.show)
    end
  end)
end)

-- Runs headless Chromium with @args (a string, quoted; stdout to the file
-- @stdout, else discarded) in a short private
-- directory of its own (its profile and TMPDIR there: Chromium's singleton
-- socket path must stay under the 108 bytes of a Unix socket), removed after.
local chromium_serial = 0
-- ---- a text column partitioned by identity ----------------------------------------------------

-- DuckDB compares VARCHAR by bytes; so does this oracle, whatever the C
-- library's locale (Lua's `<` on strings goes through strcoll).
local function bytes_cmp(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = a:byte(i), b:byte(i)
    if x ~= y then return x < y and -1 or 1 end
  end
  if #a == #b then return 0 end
  return #a < #b and -1 or 1
end

-- What layout.run must report for `col BETWEEN lo AND hi` (lo or hi nil:
-- unbounded) on a text column at snapshot S, derived from the fixture's
-- NDJSON alone: per era (partition_id, or "none"), the live files and rows,
-- those whose identity value on the column lies in [lo, hi] (a NULL value
-- never does; keys on other columns do not prune), and of those the files
-- whose bounds on the column meet [lo, hi] (no bounds: read unless every row
-- is NULL). Also the column's name at S.
local function text_identity_oracle(scenario, table_id, column_id, S, lo, hi)
  local dir = support.FIXTURES .. "/" .. scenario .. "/catalog/"
  local function rows(name) return moraine.read_ndjson(dir .. name .. ".ndjson") end
  local function live(r) return r.begin_snapshot <= S and (r.end_snapshot == NULL or S < r.end_snapshot) end
  local function meets(min, max)
    return not (lo and bytes_cmp(max, lo) < 0) and not (hi and bytes_cmp(min, hi) > 0)
  end
  local name
  for _, c in ipairs(rows("ducklake_column")) do
    if c.table_id == table_id and c.column_id == column_id and live(c) then name = c.column_name end
  end
  local keys = {} -- partition_id -> key index of the identity key on the column
  for _, k in ipairs(rows("ducklake_partition_column")) do
    if k.table_id == table_id and k.column_id == column_id then
      assert(k.transform == "identity", "the oracle knows identity keys only")
      keys[k.partition_id] = k.partition_key_index
    end
  end
  local pv, st = {}, {}
  for _, v in ipairs(rows("ducklake_file_partition_value")) do
    if v.table_id == table_id then pv[v.data_file_id .. ":" .. v.partition_key_index] = v.partition_value end
  end
  for _, r in ipairs(rows("ducklake_file_column_stats")) do
    if r.table_id == table_id and r.column_id == column_id then st[r.data_file_id] = r end
  end
  local eras, total = {}, { files = 0, rows = 0, read_files = 0, read_rows = 0 }
  for _, f in ipairs(rows("ducklake_data_file")) do
    if f.table_id == table_id and live(f) then
      local k = f.partition_id == NULL and "none" or f.partition_id
      local e = eras[k] or { files = 0, rows = 0, partition_files = 0, partition_rows = 0, read_files = 0, read_rows = 0 }
      eras[k] = e
      e.files, e.rows = e.files + 1, e.rows + f.record_count
      local survives = true
      local ki = f.partition_id ~= NULL and keys[f.partition_id]
      if ki then
        local v = pv[f.data_file_id .. ":" .. ki]
        survives = v ~= NULL and v ~= nil and meets(v, v)
      end
      if survives then
        e.partition_files, e.partition_rows = e.partition_files + 1, e.partition_rows + f.record_count
        local b = st[f.data_file_id]
        local read
        if not b then read = true
        elseif b.min_value ~= NULL and b.max_value ~= NULL then read = meets(b.min_value, b.max_value)
        else read = not (b.null_count >= f.record_count and f.record_count > 0) end
        if read then e.read_files, e.read_rows = e.read_files + 1, e.read_rows + f.record_count end
      end
    end
  end
  for _, e in pairs(eras) do
    total.files, total.rows = total.files + e.files, total.rows + e.rows
    total.read_files, total.read_rows = total.read_files + e.read_files, total.read_rows + e.read_rows
  end
  return eras, total, name
end

-- The identity values (non-NULL) a fixture's table holds on a column, sorted by bytes.
local function identity_values(scenario, table_id, column_id)
  local dir = support.FIXTURES .. "/" .. scenario .. "/catalog/"
  local idx, pid = {}, {}
  for _, k in ipairs(moraine.read_ndjson(dir .. "ducklake_partition_column.ndjson")) do
    if k.table_id == table_id and k.column_id == column_id and k.transform == "identity" then idx[k.partition_id] = k.partition_key_index end
  end
  for _, f in ipairs(moraine.read_ndjson(dir .. "ducklake_data_file.ndjson")) do pid[f.data_file_id] = f.partition_id end
  local seen, out = {}, {}
  for _, v in ipairs(moraine.read_ndjson(dir .. "ducklake_file_partition_value.ndjson")) do
    local p = v.table_id == table_id and pid[v.data_file_id]
    if p and p ~= NULL and idx[p] == v.partition_key_index and v.partition_value ~= NULL and not seen[v.partition_value] then
      seen[v.partition_value] = true
      out[#out + 1] = v.partition_value
    end
  end
  table.sort(out, function(a, b) return bytes_cmp(a, b) < 0 end)
  return out
end

local function sql_text(v) return "'" .. v:gsub("'", "''") .. "'" end

describe("moraine.layout on a text column partitioned by identity", function()
  -- s1 events.region (renamed area at 13; identity in specs 4 and 9), s2
  -- sales.clients.country (spec 5, live to the end), s3's first table's k
  -- (spec 2: the empty string, quotes, UTF-8, a 300-byte value whose bounds
  -- DuckDB cut, tab and newline)
  local cases = {
    { scenario = "s1_evolution", table = "main.events", table_id = 1, column_id = 3 },
    { scenario = "s2_multi_table", table = "sales.clients", table_id = 3, column_id = 3 },
    { scenario = "s3_edge_values", table_id = 1, column_id = 1 },
  }

  it("counts equality, range and BETWEEN predicates as DuckLake prunes them, at every snapshot", function()
    local checked = 0
    for _, case in ipairs(cases) do
      local db = support.import_fixture(case.scenario)
      local values = identity_values(case.scenario, case.table_id, case.column_id)
      assert.is_true(#values >= 3, case.scenario)
      local probes = { { "=", values[1] }, { "=", values[#values] }, { "=", "zz-absent" }, { "=", "" } }
      for _, v in ipairs(values) do
        probes[#probes + 1] = { "=", v }
        probes[#probes + 1] = { ">=", v }
        probes[#probes + 1] = { "<=", v }
      end
      probes[#probes + 1] = { "BETWEEN", "a", "f" }
      probes[#probes + 1] = { "BETWEEN", values[1], values[2] }
      probes[#probes + 1] = { "BETWEEN", values[2], values[#values] }
      for S = 0, db:last_snapshot() do
        for _, pr in ipairs(probes) do
          local lo, hi
          if pr[1] == "=" then lo, hi = pr[2], pr[2]
          elseif pr[1] == ">=" then lo = pr[2]
          elseif pr[1] == "<=" then hi = pr[2]
          else lo, hi = pr[2], pr[3] end
          local eras, total, name = text_identity_oracle(case.scenario, case.table_id, case.column_id, S, lo, hi)
          if name then
            local where = '"' .. name .. '" ' .. pr[1] .. " " .. sql_text(pr[2]) .. (pr[3] and (" AND " .. sql_text(pr[3])) or "")
            local what = case.scenario .. " at " .. S .. ": " .. where
            local ok, rep = pcall(layout.run, db, { table = case.table_id, at = S, where = where })
            assert.is_true(ok, what .. ": " .. tostring(rep))
            local got = {}
            for _, e in ipairs(rep.eras) do
              got[e.partition_id or "none"] = { files = e.files, rows = e.rows, partition_files = e.partition_files,
                partition_rows = e.partition_rows, read_files = e.read_files, read_rows = e.read_rows }
            end
            assert.are.same(eras, got, what)
            assert.are.same(total, rep.total, what)
            assert.are.equal(name, rep.column, what)
            checked = checked + 1
          end
        end
      end
      db:close()
    end
    assert.is_true(checked > 500, "checked " .. checked)
  end)

  it("gives s1's numbers by hand: the live spec's 16 files by region and the older eras' estimate", function()
    -- s1 at 7: the day era (6 files, 1200 rows) and the hour era (15, 300) have no key on region
    -- and bounds ap..us; the live spec 4 (region, bucket(4, id)) holds 4 files per value: ap
    -- 14+25+16+20 = 75 rows, eu 17+22+22+14 = 75, us 20+18+18+19 = 75, NULL 24+19+12+20 = 75
    local db = support.import_fixture("s1_evolution")
    local function run_at(S, where) return layout.run(db, { table = "events", at = S, where = where }) end
    local rep = run_at(7, "region = 'eu'")
    assert.are.same({ 2, 3, 4 }, { rep.eras[1].partition_id, rep.eras[2].partition_id, rep.eras[3].partition_id })
    assert.are.same({ 16, 300, 4, 75, 4, 75 }, { rep.eras[3].files, rep.eras[3].rows, rep.eras[3].partition_files,
      rep.eras[3].partition_rows, rep.eras[3].read_files, rep.eras[3].read_rows })
    assert.are.same({ 37, 1800, 25, 1575 }, { rep.total.files, rep.total.rows, rep.total.read_files, rep.total.read_rows })
    -- rewritten by region, the older eras' 1500 rows (every file ap..us) spread over the three
    -- values known (ap, eu, us): 500 in eu
    assert.are.same({ 21, 1500, 1500, 500, 1000 }, { rep.rewrite.old_files, rep.rewrite.old_rows,
      rep.rewrite.read_rows_now, rep.rewrite.read_rows_after, rep.rewrite.saving })
    assert.is_true(near(1.5, rep.rewrite.queries_to_pay))
    rep = run_at(7, "region BETWEEN 'a' AND 'f'") -- ap and eu
    assert.are.same({ 8, 150, 29, 1650, 1000 }, { rep.eras[3].read_files, rep.eras[3].read_rows, rep.total.read_files,
      rep.total.read_rows, rep.rewrite.read_rows_after })
    rep = run_at(7, "region >= 'b'") -- eu and us; NULL never
    assert.are.same({ 8, 150, 1000 }, { rep.eras[3].read_files, rep.eras[3].read_rows, rep.rewrite.read_rows_after })
    rep = run_at(7, "region < 'b'") -- taken as <=: ap
    assert.are.same({ 4, 75, 500 }, { rep.eras[3].read_files, rep.eras[3].read_rows, rep.rewrite.read_rows_after })
    -- at 6 the live spec has no file yet: the values known are the bounds ap and us, and an
    -- equality's own value
    rep = run_at(6, "region = 'eu'")
    assert.are.same({ 4, 21, 1500, 500 }, { rep.live_partition_id, rep.total.read_files, rep.total.read_rows,
      rep.rewrite.read_rows_after })
    assert.are.equal(750, run_at(6, "region = 'ap'").rewrite.read_rows_after)
    assert.are.equal(750, run_at(6, "region BETWEEN 'a' AND 'f'").rewrite.read_rows_after)
    assert.are.equal(0, run_at(6, "region BETWEEN 'b' AND 'd'").rewrite.read_rows_after)
    -- at 16 the column is named area and spec 9 (area alone) is live
    rep = run_at(16, "area = 'eu'")
    assert.are.equal("area", rep.column)
    support.expect_err("EINVAL", "no column 'region'", run_at, 16, "region = 'eu'")
    db:close()
  end)

  it("estimates a rewrite over the values the catalog knows, NULL rows in no touched partition", function()
    local db = new_catalog()
    db:transaction(function(tx) tx:create_table("t", { { name = "r", type = "varchar" }, { name = "v", type = "int64" } }) end)
    db:transaction(function(tx)
      tx:add_data_files("t", {
        file("f1.parquet", 30, nil, { stat("r", "a", "c", 0, 30) }),
        file("f2.parquet", 20, nil, { stat("r", "b", "b", 0, 20) }),
        file("f3.parquet", 12, nil, { stat("r", "c", "e", 2, 10) }),
        file("f4.parquet", 5, nil, { stat("r", nil, nil, 5, 0) }),
        file("f5.parquet", 8, nil, { stat("v", "1", "8", 0, 8) }), -- no stats on r
      })
    end)
    db:transaction(function(tx) tx:set_partitioning("t", { "r" }) end)
    db:transaction(function(tx)
      tx:add_data_files("t", {
        file("a.parquet", 4, { "a" }, { stat("r", "a", "a", 0, 4) }),
        file("c.parquet", 6, { "c" }, { stat("r", "c", "c", 0, 6) }),
        file("n.parquet", 3, { NULL }, { stat("r", nil, nil, 3, 0) }),
      })
    end)
    local function run_where(where) return layout.run(db, { table = "t", where = where }) end
    -- values known: a, b, c, e. r = 'b': f1 (a..c: a, b, c) 30/3 = 10, f2 20, f3 (c..e) 0,
    -- f4 (all NULL) 0, f5 (no bounds, read) 8
    local rep = run_where("r = 'b'")
    local old, live = rep.eras[2], rep.eras[1]
    assert.is_nil(old.partition_id)
    assert.are.same({ 5, 75, 3, 58 }, { old.files, old.rows, old.read_files, old.read_rows })
    assert.are.same({ 3, 13, 0, 0 }, { live.files, live.rows, live.partition_files, live.read_files })
    assert.are.same({ 75, 58, 38, 20 }, { rep.rewrite.old_rows, rep.rewrite.read_rows_now, rep.rewrite.read_rows_after, rep.rewrite.saving })
    assert.is_true(near(75 / 20, rep.rewrite.queries_to_pay))
    -- BETWEEN 'b' AND 'd': f1 2/3 of 30 = 20, f2 20, f3 its 10 non-NULL rows over c, e: 5, f5 8
    rep = run_where("r BETWEEN 'b' AND 'd'")
    assert.are.same({ 1, 6 }, { rep.eras[1].read_files, rep.eras[1].read_rows })
    assert.are.same({ 70, 53 }, { rep.rewrite.read_rows_now, rep.rewrite.read_rows_after })
    -- r >= 'd': f3 (read now, 12 rows) puts 5 in e; f5 8
    rep = run_where("r >= 'd'")
    assert.are.same({ 0, 20, 13 }, { rep.eras[1].partition_files, rep.rewrite.read_rows_now, rep.rewrite.read_rows_after })
    -- a value nobody holds: only the file without bounds; nothing saved
    rep = run_where("r = 'zz'")
    assert.are.same({ 8, 8, 0 }, { rep.rewrite.read_rows_now, rep.rewrite.read_rows_after, rep.rewrite.saving })
    assert.is_nil(rep.rewrite.queries_to_pay)
    db:close()
  end)

  it("moraine layout answers on s1 and s2 (it exited 70 with an internal error)", function()
    local _, s1 = support.import_fixture("s1_evolution")
    local r = run({ "-c", s1, "layout", "events", "--where", "region = 'eu'", "--at", "7" })
    assert.are.equal(0, r.code, r.show)
    assert.truthy(r.out:find("read: 25 of 37 files, 1575 of 1800 rows", 1, true), r.show)
    assert.truthy(r.out:find("about 500 if rewritten under the live spec", 1, true), r.show)
    r = run({ "-c", s1, "layout", "events", "--where", "region >= 'b'", "--at", "7", "--json" })
    assert.are.equal(0, r.code, r.show)
    assert.are.equal(1650, moraine.json_decode(r.out).total.read_rows)
    local _, s2 = support.import_fixture("s2_multi_table")
    r = run({ "-c", s2, "layout", "sales.clients", "--where", "country = 'DE'" })
    assert.are.equal(0, r.code, r.show)
    assert.truthy(r.out:find("read: 2 of 7 files, 150 of 600 rows", 1, true), r.show)
  end)
end)

local function chromium(args, stdout)
  chromium_serial = chromium_serial + 1
  local tmp = os.getenv("TMPDIR")
  local dir = ((tmp and tmp ~= "") and tmp or "/tmp") .. "/cr" .. chromium_serial
  support.remove(dir)
  support.mkdir(dir)
  -- without the sanitizer runtime make asan preloads for the interpreter
  os.execute(string.format("cd %s && env -u LD_PRELOAD TMPDIR=%s HOME=%s timeout 120 chromium --headless --no-sandbox --disable-gpu " ..
    "--no-first-run --disable-breakpad --disable-crash-reporter --user-data-dir=%s %s >%s 2>/dev/null",
    q(dir), q(dir), q(dir), q(dir .. "/p"), args, q(stdout or "/dev/null")))
  support.remove(dir)
end

-- Renders an SVG document in headless Chromium through a canvas: returns
-- "rendered WxH nonwhite N" or "error" (the image did not load).
local function render(svg_text)
  local dir = support.tmpdir("page")
  support.mkdir(dir)
  local page = dir .. "/page.html"
  support.write(page, [[<!DOCTYPE html><html><body><div id="out">pending</div><script>
var img = new Image();
img.onload = function() {
  var c = document.createElement("canvas"); c.width = img.width; c.height = img.height;
  var g = c.getContext("2d"); g.drawImage(img, 0, 0);
  var d = g.getImageData(0, 0, c.width, c.height).data, n = 0;
  for (var i = 0; i < d.length; i += 4) { if (d[i] < 200 || d[i + 1] < 200 || d[i + 2] < 200) n++; }
  document.getElementById("out").textContent = "rendered " + c.width + "x" + c.height + " nonwhite " + n;
};
img.onerror = function() { document.getElementById("out").textContent = "error"; };
img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(]] .. moraine.json_encode(svg_text) .. [[);
</script></body></html>]])
  local out = dir .. "/dom"
  support.write(out, "")
  chromium("--virtual-time-budget=5000 --dump-dom " .. q("file://" .. page), out)
  return support.read(out):match('<div id="out">([^<]*)') or "no output"
end

describe("moraine.svg", function()
  it("escapes names and closes every document", function()
    assert.are.equal("a&lt;b&amp;c&quot;d&#39;&gt;", svg.escape("a<b&c\"d'>"))
    local doc = svg.history({ title = "t<&>", last = 3, specs = { { id = 1, label = "day(<ts>)", begin = 1 } },
      layout = { { label = "spec 1", files = 2, rows = 5 } } })
    assert.truthy(doc:find("t&lt;&amp;&gt;", 1, true))
    assert.is_nil(doc:find("<ts>", 1, true))
    assert.truthy(doc:match("^<%?xml") and doc:match("</svg>\n$"))
  end)

  it("renders the history, clustering and layout pictures of s1 in a real browser (headless Chromium)", function()
    local db = support.import_fixture("s1_evolution")
    local docs = {
      svg.history(layout.history(db, { table = "events" })),
      svg.clustering(clustering.run(db, { table = "events", columns = { "id", "ts" } })),
      svg.layout(layout.run(db, { table = "events", where = "ts BETWEEN '2025-03-27 10:00:00' AND '2025-03-27 10:59:59'" })),
    }
    db:close()
    for _, d in ipairs(docs) do
      local w, h = d:match('<svg [^>]*width="(%d+)" height="(%d+)"')
      local got = render(d)
      local rw, rh, n = got:match("^rendered (%d+)x(%d+) nonwhite (%d+)$")
      assert.truthy(rw, got)
      assert.are.same({ w, h }, { rw, rh })
      assert.is_true(tonumber(n) > 2000, got) -- bars, boxes and text, not a blank page
    end
    -- the check can fail: a broken document does not load, a white one has nothing drawn
    assert.are.equal("error", render("<svg xmlns='http://www.w3.org/2000/svg'><rect</svg>"))
    assert.are.equal("rendered 50x50 nonwhite 0", render(
      "<svg xmlns='http://www.w3.org/2000/svg' width='50' height='50'><rect width='50' height='50' fill='#fff'/></svg>"))
  end)

  it("takes a screenshot of a picture written by moraine history --svg", function()
    local _, dir = support.import_fixture("s1_evolution")
    local tmp = support.tmpdir("shot")
    support.mkdir(tmp)
    local r = run({ "-c", dir, "history", "events", "--svg", tmp .. "/h.svg" })
    assert.are.equal(0, r.code, r.show)
    chromium("--window-size=960,500 --screenshot=" .. q(tmp .. "/h.png") .. " " .. q("file://" .. tmp .. "/h.svg"))
    local png = support.read(tmp .. "/h.png")
    assert.are.equal("\137PNG\r\n\26\n", png:sub(1, 8))
    assert.is_true(#png > 5000, "a screenshot of " .. #png .. " bytes")
    assert.truthy(render(support.read(tmp .. "/h.svg")):match("nonwhite [1-9]"))
  end)
end)
