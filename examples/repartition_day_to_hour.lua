--- Partition evolution without rewriting data: day(ts) -> hour(ts).
--
-- A table partitioned by day(ts) receives data files for a few days; then
-- `ALTER TABLE events SET PARTITIONED BY (hour(ts))` (tx:set_partitioning in a
-- db:transaction) and more files arrive, now one per hour. Nothing is
-- rewritten: every file keeps the partition_id of the spec that wrote it and
-- its own partition values, so the table holds two layouts at once. The
-- script time-travels to a snapshot before and after the change and prints
-- the spec in force, the files (each with its own partition_id and values)
-- and the mixed layout (files and rows under each spec still live). Every
-- fact it prints is also checked with assert().
--
-- DuckLake's day(ts) and hour(ts) give the day of the month and the hour of
-- the day; moraine stores transforms and values verbatim and never evaluates
-- them. The files are stated (moraine never reads data).
--
-- Run: sh scripts/run-lua.sh lua5.4 build examples/repartition_day_to_hour.lua
--      (or luajit instead of lua5.4). The catalog is made in a new temporary
--      directory, removed at the end.
local moraine = require "moraine"

-- a new, empty temporary directory of our own; the catalog lives inside it
local function new_tmpdir()
  local p = assert(io.popen("mktemp -d 2>/dev/null"))
  local dir = p:read("*l")
  p:close()
  assert(dir and dir ~= "", "mktemp -d failed")
  return dir
end

local tmp = new_tmpdir()
local db = moraine.open(tmp .. "/catalog", { no_sync = true })
db:init("data/")

local TABLE_ID
db:transaction(function(tx)
  TABLE_ID = tx:create_table("events", {
    { name = "id", type = "int64" }, { name = "ts", type = "timestamp" }, { name = "payload", type = "varchar" },
  })
  tx:set_partitioning("events", { "day(ts)" })
end, { author = "example", message = "CREATE TABLE events ... PARTITIONED BY (day(ts))" })

-- INSERT: one file per day, the day's number as its partition value
local BEFORE = db:transaction(function(tx)
  tx:add_data_files("events", {
    { path = "day=25/ducklake-day25.parquet", record_count = 24000, file_size_bytes = 512000, partition_values = { "25" } },
    { path = "day=26/ducklake-day26.parquet", record_count = 26000, file_size_bytes = 548000, partition_values = { "26" } },
    { path = "day=27/ducklake-day27.parquet", record_count = 25000, file_size_bytes = 530000, partition_values = { "27" } },
  })
end, { message = "INSERT INTO events (days 25-27)" })

-- the evolution: one metadata change, no file touched
local CHANGE = db:transaction(function(tx)
  tx:set_partitioning("events", { "hour(ts)" })
end, { message = "ALTER TABLE events SET PARTITIONED BY (hour(ts))" })

-- INSERT under the new spec: one file per hour of day 28
local hour_files = {}
for h = 0, 3 do
  hour_files[#hour_files + 1] = {
    path = ("hour=%d/ducklake-day28-hour%02d.parquet"):format(h, h),
    record_count = 1000 + h, file_size_bytes = 24000, partition_values = { tostring(h) },
  }
end
local AFTER = db:transaction(function(tx)
  tx:add_data_files("events", hour_files)
end, { message = "INSERT INTO events (day 28, hours 0-3)" })

print(("snapshots: days inserted %d, SET PARTITIONED BY (hour(ts)) %d, hours inserted %d"):format(BEFORE, CHANGE, AFTER))

-- "transform(column)" for each key of a spec, column names as of snapshot s
local function spec_text(rd, spec, s)
  local names = {}
  for col in rd:scan("ducklake_column", { at = s, table_id = TABLE_ID }) do names[col.column_id] = col.column_name end
  local keys = {}
  for i, pc in ipairs(spec.columns) do keys[i] = pc.transform .. "(" .. tostring(names[pc.column_id]) .. ")" end
  return table.concat(keys, ", ")
end

-- the spec in force at s and the files visible at s: {spec = , text = , files = {{id, partition_id, values, rows}}}
local function at(s)
  return db:read(function(rd)
    local spec = rd:partition_spec(TABLE_ID, s)
    local view = { spec = spec, text = spec_text(rd, spec, s), files = {} }
    for file, children in rd:files(TABLE_ID, s) do
      local values = {}
      for i, v in ipairs(children.ducklake_file_partition_value or {}) do values[i] = tostring(v.partition_value) end
      view.files[#view.files + 1] = {
        id = file.data_file_id, path = file.path, partition_id = file.partition_id,
        values = table.concat(values, ","), rows = file.record_count,
      }
    end
    return view
  end)
end

local function show(s, view)
  print(("\nat snapshot %d: spec in force partition_id %d = %s"):format(s, view.spec.partition_id, view.text))
  for _, f in ipairs(view.files) do
    print(("  file %-2d partition_id %d  values (%s)  %6d rows  %s"):format(f.id, f.partition_id, f.values, f.rows, f.path))
  end
end

local before, after = at(BEFORE), at(AFTER)
local DAY_SPEC, HOUR_SPEC = before.spec.partition_id, after.spec.partition_id
show(BEFORE, before)
show(AFTER, after)

-- the spec in force before the change is the day spec, after it the hour spec
assert(before.text == "day(ts)", before.text)
assert(after.text == "hour(ts)", after.text)
assert(DAY_SPEC ~= HOUR_SPEC)
assert(#before.files == 3 and #after.files == 7)
for _, f in ipairs(before.files) do assert(f.partition_id == DAY_SPEC) end
-- old files keep the day spec's partition_id and values; new ones name the hour spec
for _, f in ipairs(after.files) do
  if f.path:match("^day=") then
    assert(f.partition_id == DAY_SPEC, f.path)
    assert(f.path:match("^day=(%d+)/") == f.values, f.path)
  else
    assert(f.partition_id == HOUR_SPEC, f.path)
    assert(f.path:match("^hour=(%d+)/") == f.values, f.path)
  end
end

-- the day spec is ended at the change (history keeps it), the hour spec is live
db:read(function(rd)
  local day = rd:partition_spec_by_id(TABLE_ID, DAY_SPEC)
  local hour = rd:partition_spec_by_id(TABLE_ID, HOUR_SPEC)
  print(("\nspec history: partition_id %d = day(ts) [%d, %d), partition_id %d = hour(ts) [%d, live)"):format(
    DAY_SPEC, day.begin_snapshot, day.end_snapshot, HOUR_SPEC, hour.begin_snapshot))
  assert(day.end_snapshot == CHANGE and hour.begin_snapshot == CHANGE and hour.end_snapshot == moraine.null)
  assert(rd:partition_spec(TABLE_ID, CHANGE - 1).partition_id == DAY_SPEC)
  assert(rd:partition_spec(TABLE_ID, CHANGE).partition_id == HOUR_SPEC)
end)

-- the mixed layout: live files and rows under each spec
local per = {}
for _, f in ipairs(after.files) do
  local p = per[f.partition_id] or { files = 0, rows = 0 }
  p.files, p.rows = p.files + 1, p.rows + f.rows
  per[f.partition_id] = p
end
print("\nmixed layout at snapshot " .. AFTER .. ":")
print(("  partition_id %d day(ts):  %d files, %d rows (a query for one hour still reads its whole day)"):format(
  DAY_SPEC, per[DAY_SPEC].files, per[DAY_SPEC].rows))
print(("  partition_id %d hour(ts): %d files, %d rows"):format(HOUR_SPEC, per[HOUR_SPEC].files, per[HOUR_SPEC].rows))
assert(per[DAY_SPEC].files == 3 and per[DAY_SPEC].rows == 75000)
assert(per[HOUR_SPEC].files == 4 and per[HOUR_SPEC].rows == 4006)

db:close()
os.execute("rm -rf '" .. tmp .. "'")
print("\nok: old files keep the day spec, new files the hour spec, nothing rewritten")
