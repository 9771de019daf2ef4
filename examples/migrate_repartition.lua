--- A migration: repartition every table whose name matches a pattern, in ONE transaction.
--
-- A catalog holds events_2024 and events_2025 (partitioned by day(ts)) and
-- users (not partitioned). The migration lists the live tables, and for each
-- one whose name matches the Lua pattern "^events_" runs
-- `ALTER TABLE ... SET PARTITIONED BY (hour(ts))` — all inside one
-- db:transaction, so the change is one snapshot: every matched table is
-- repartitioned or none is (a failed verb raises, the transaction aborts,
-- nothing is written). Tables that do not match are left alone. The script
-- prints what changed — the snapshot's changes_made (one altered_table:<id>
-- per matched table), author and message — and the partition spec of every
-- table before and after, and checks it all with assert().
--
-- Run: sh scripts/run-lua.sh lua5.4 build examples/migrate_repartition.lua
--      (or luajit instead of lua5.4). The catalog is made in a new temporary
--      directory, removed at the end.
local moraine = require "moraine"

local PATTERN = "^events_"          -- which tables to migrate (a Lua pattern)
local NEW_KEYS = { "hour(ts)" }     -- their new partitioning, in DuckLake's SQL form

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

-- the catalog before the migration
local EVENT_COLS = { { name = "id", type = "int64" }, { name = "ts", type = "timestamp" }, { name = "kind", type = "varchar" } }
db:transaction(function(tx)
  tx:create_table("events_2024", EVENT_COLS)
  tx:create_table("events_2025", EVENT_COLS)
  tx:create_table("users", { { name = "id", type = "int64" }, { name = "name", type = "varchar" } })
  tx:set_partitioning("events_2024", { "day(ts)" })
  tx:set_partitioning("events_2025", { "day(ts)" })
end, { author = "setup", message = "initial schema" })

-- live tables at snapshot s: array of {id = , name = } in table_id order
local function live_tables(rd, s)
  local out = {}
  for t in rd:scan("ducklake_table", { at = s }) do out[#out + 1] = { id = t.table_id, name = t.table_name } end
  return out
end

-- "day(ts)" / "(none)" for the spec of table t at snapshot s
local function spec_text(rd, t, s)
  local spec = rd:partition_spec(t, s)
  if not spec or #spec.columns == 0 then return "(none)" end
  local names = {}
  for col in rd:scan("ducklake_column", { at = s, table_id = t }) do names[col.column_id] = col.column_name end
  local keys = {}
  for i, pc in ipairs(spec.columns) do keys[i] = pc.transform .. "(" .. tostring(names[pc.column_id]) .. ")" end
  return table.concat(keys, ", ")
end

local BASE = db:last_snapshot()

-- the migration: one transaction, one verb per matching table
local matched = {}
local SNAP = db:transaction(function(tx)
  local tables = db:read(function(rd) return live_tables(rd, tx:base()) end)
  for _, t in ipairs(tables) do
    if t.name:match(PATTERN) then
      tx:set_partitioning(t.name, NEW_KEYS)
      matched[#matched + 1] = t
    end
  end
end, { author = "migrate_repartition.lua", message = "repartition " .. PATTERN .. " by hour(ts)" })
assert(SNAP, "the migration changed nothing")

-- what changed: the snapshot's ducklake_snapshot_changes row
local changes
db:read(function(rd)
  for snap, children in rd:scan("ducklake_snapshot", { at = SNAP }) do
    if snap.snapshot_id == SNAP then changes = children.ducklake_snapshot_changes[1] end
  end
end)
print(("migration committed as snapshot %d (base %d)"):format(SNAP, BASE))
print(("  changes_made: %s"):format(changes.changes_made))
print(("  author: %s, message: %s"):format(changes.author, changes.commit_message))

print("\npartition specs, before -> after:")
local before, after = {}, {}
db:read(function(rd)
  for _, t in ipairs(live_tables(rd, SNAP)) do
    before[t.name], after[t.name] = spec_text(rd, t.id, BASE), spec_text(rd, t.id, SNAP)
    local mark = t.name:match(PATTERN) and "migrated" or "left alone"
    print(("  %-12s (table_id %d)  %-8s -> %-8s  %s"):format(t.name, t.id, before[t.name], after[t.name], mark))
  end
end)

-- the change list names every matched table, in table_id order, and nothing else
local expected = {}
for i, t in ipairs(matched) do expected[i] = "altered_table:" .. tostring(t.id) end
assert(#matched == 2, #matched)
assert(changes.changes_made == table.concat(expected, ","), changes.changes_made)
assert(changes.author == "migrate_repartition.lua")
assert(before.events_2024 == "day(ts)" and after.events_2024 == "hour(ts)")
assert(before.events_2025 == "day(ts)" and after.events_2025 == "hour(ts)")
assert(before.users == "(none)" and after.users == "(none)")
assert(db:last_snapshot() == BASE + 1)

-- running the migration again changes nothing: DuckLake commits no snapshot, nor does moraine
local again = db:transaction(function(tx)
  for _, t in ipairs(matched) do tx:set_partitioning(t.name, NEW_KEYS) end
end)
print(("\nrunning it again: %s"):format(again and ("snapshot " .. again) or "no snapshot (nothing changed)"))
assert(again == nil and db:last_snapshot() == SNAP)

db:close()
os.execute("rm -rf '" .. tmp .. "'")
print("\nok: " .. #matched .. " tables repartitioned in one snapshot, users untouched")
