--- Builds a catalog holding one table "t" with N data files (default 50,000),
-- partitioned by day(ts) with one partition value each and 4 column stats per
-- file, through the verb path. Usage: make_table.lua CATALOG_DIR [N]
local moraine = require "moraine"
local dir, n = arg[1], tonumber(arg[2] or "50000")
assert(dir, "usage: make_table.lua CATALOG_DIR [N]")
local db = moraine.open(dir, { no_sync = true, map_size = 1073741824 })
db:init("data/")
db:transaction(function(tx)
  tx:create_table("t", { { name = "id", type = "int64" }, { name = "ts", type = "timestamp" },
    { name = "region", type = "varchar" }, { name = "amount", type = "float64" } })
  tx:set_partitioning("t", { "day(ts)" })
end)
local batch = 5000
for first = 0, n - 1, batch do
  db:transaction(function(tx)
    local files = {}
    for i = first, math.min(first + batch, n) - 1 do
      local day = tostring(i % 365)
      files[#files + 1] = { path = ("day=%s/f%07d.parquet"):format(day, i), record_count = 1000 + i % 97,
        file_size_bytes = 40000 + i % 1013, footer_size = 600, partition_values = { day },
        stats = { { column = "id", value_count = 1000, null_count = 0, min_value = tostring(i * 1000), max_value = tostring(i * 1000 + 999) },
          { column = "ts", value_count = 1000, null_count = 0, min_value = "2025-01-01 00:00:00", max_value = "2025-01-01 23:59:59" },
          { column = "region", value_count = 1000, null_count = 3, min_value = "ap", max_value = "us" },
          { column = "amount", value_count = 1000, null_count = 0, min_value = "0.5", max_value = "999.5", contains_nan = false } } }
    end
    tx:add_data_files("t", files)
  end)
end
db:close()
print(("catalog %s: table t with %d files"):format(dir, n))
