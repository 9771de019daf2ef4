--- Helpers shared by the push specs (spec/push_spec.lua, spec/push_pg_spec.lua):
-- the example migrations (examples/*.lua) as verbs on a catalog holding a
-- DuckLake fixture.
local moraine = require "moraine"

local N = moraine.null
local function int(text) return moraine.json_decode(text) end

local M = {}

--- The columns of the tables the migrations create.
M.EVENT_COLS = { { name = "id", type = "int64" }, { name = "ts", type = "timestamp" }, { name = "kind", type = "varchar" } }

--- The example migrations, as verbs on a catalog holding a fixture. Returns
-- the snapshots they committed.
function M.migrate(db)
  local snaps = {}
  local function tx(fn, opts)
    local s = db:transaction(fn, opts)
    if s then snaps[#snaps + 1] = s end
  end
  -- examples/migrate_repartition.lua: tables partitioned by day, then every
  -- table whose name matches ^events_ repartitioned by hour in ONE transaction
  tx(function(t)
    t:create_table("events_2024", M.EVENT_COLS)
    t:create_table("events_2025", M.EVENT_COLS)
    t:create_table("users", { { name = "id", type = "int64" }, { name = "name", type = "varchar" } })
    t:set_partitioning("events_2024", { "day(ts)" })
    t:set_partitioning("events_2025", { "day(ts)" })
  end)
  tx(function(t)
    for _, name in ipairs({ "events_2024", "events_2025" }) do t:set_partitioning(name, { "hour(ts)" }) end
  end, { author = "admin", message = "repartition events_* by hour" })
  -- examples/repartition_day_to_hour.lua: files before and after the change
  tx(function(t)
    t:add_data_files("events_2024", {
      { path = "h0.parquet", record_count = 3, file_size_bytes = 300, footer_size = 7,
        partition_values = { "2024010100" },
        stats = { { column = "id", value_count = 3, null_count = 0, min_value = "1", max_value = "3" } } },
    })
    -- 2^63-1 bytes: the table's stats reach the int64 limit exactly (alone in its table)
    t:add_data_files("events_2025", {
      { path = "h1.parquet", record_count = 10, file_size_bytes = int("9223372036854775807"), footer_size = 7,
        partition_values = { "2025010100" },
        stats = { { column = "id", value_count = 10, null_count = 0, min_value = "1", max_value = "10" } } },
    })
  end)
  tx(function(t) t:set_partitioning("events_2024", { "day(ts)" }) end)
  tx(function(t)
    t:add_data_files("events_2024", { { path = "d1.parquet", record_count = 5, file_size_bytes = 100,
      partition_values = { N } } })
  end, { message = "" })
  -- examples/sort_rename_reset.lua
  tx(function(t)
    t:create_table("orders_m", { { name = "id", type = "int64" }, { name = "amount", type = "decimal(18,2)" },
      { name = "region", type = "varchar" } })
  end)
  tx(function(t) t:set_sorting("orders_m", { "amount DESC NULLS LAST", "region" }) end)
  tx(function(t) t:rename_column("orders_m", "region", "area") end)
  tx(function(t) t:clear_sorting("orders_m") end)
  -- rows the fixture wrote, ended by moraine: a column added to, then the
  -- first live table of the fixture renamed; a file of it deleted
  local first = db:read(function(rd)
    for row in rd:scan("ducklake_table") do
      for srow in rd:scan("ducklake_schema") do
        if srow.schema_id == row.schema_id then return { schema = srow.schema_name, table = row.table_name } end
      end
    end
  end)
  tx(function(t) t:add_column(first, { name = "pushed_note", type = "varchar", default = "n/a" }) end)
  tx(function(t) t:rename_table(first, first.table .. "_renamed") end)
  tx(function(t) t:drop_table("users") end)
  return snaps
end


return M
