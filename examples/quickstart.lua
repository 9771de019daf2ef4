--- Quickstart (the README's Lua tour): import a real DuckLake catalog, time
-- travel, a staged commit, export. Run: sh scripts/run-lua.sh lua5.4 build examples/quickstart.lua
local moraine = require "moraine"

-- a fresh directory under $TMPDIR (else /tmp) holding the catalog and its export; removed at the end
local work = os.getenv("MORAINE_EXAMPLE_DIR")
if not work then
  local p = assert(io.popen('mktemp -d "${TMPDIR:-/tmp}/moraine-quickstart.XXXXXX"'))
  work = assert(p:read("l"), "mktemp failed")
  p:close()
end
os.execute("mkdir -p '" .. work .. "'")
local dir = work .. "/catalog"
local db = moraine.open(dir, { no_sync = true })
db:import_ndjson("examples/catalogs/s1_evolution/catalog")

db:read(function(rd)
  local spec = rd:partition_spec(1, 9)           -- the spec in force for table_id 1 at snapshot 9
  print(("spec at snapshot 9: partition_id %d with %d columns"):format(spec.partition_id, #spec.columns))
  local n = 0
  for file, children in rd:files(1, 9) do        -- the files of table 1 visible at snapshot 9
    n = n + 1
    local values = children.ducklake_file_partition_value or {}
    if n <= 3 then print(file.data_file_id, file.partition_id, #values) end
  end
  print(("%d files at snapshot 9"):format(n))
end)

-- one staged DuckLake snapshot (verbs write its ducklake_snapshot row too): RESET PARTITIONED BY
local snap = db:transaction(function(tx) tx:clear_partitioning("events") end, { author = "me", message = "unpartition events" })
assert(snap == 21)
assert(#db:read(function(rd) return rd:partition_spec(1, 21) end).columns == 0) -- a zero-column spec
assert(db:read(function(rd) return rd:partition_spec(1, 20) end).partition_id == 11)

local out = work .. "/export"
db:export_ndjson(out)
print("exported to " .. out .. " (removed with the catalog when this example ends)")
db:close()
os.execute("rm -rf '" .. work .. "'")
