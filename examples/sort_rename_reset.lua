--- The life of a sort spec: SET SORTED BY, RENAME COLUMN, RESET SORTED BY.
--
-- `ALTER TABLE orders SET SORTED BY (amount DESC NULLS LAST, region)`, then
-- `ALTER TABLE orders RENAME COLUMN region TO area`: the live sort spec names
-- the column, so DuckLake (and moraine's rename_column verb) ends it and
-- writes a new version that says `area`; the old version, with its old text
-- `region`, stays in history. Then `ALTER TABLE orders RESET SORTED BY` ends
-- the live spec and writes none: no sort spec is in force any more, yet the
-- history still shows each version with its lifetime. The script prints that
-- timeline (every ducklake_sort_info version, read with moraine.ALL) and the
-- spec in force at each snapshot, and checks all of it with assert().
--
-- Run: sh scripts/run-lua.sh lua5.4 build examples/sort_rename_reset.lua
--      (or luajit instead of lua5.4). The catalog is made in a new temporary
--      directory, removed at the end.
local moraine = require "moraine"

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

local T
local CREATED = db:transaction(function(tx)
  T = tx:create_table("orders", {
    { name = "id", type = "int64" }, { name = "amount", type = "decimal(18,2)" }, { name = "region", type = "varchar" },
  })
end)
local SORTED = db:transaction(function(tx)
  tx:set_sorting("orders", { "amount DESC NULLS LAST", "region" })
end, { message = "SET SORTED BY (amount DESC NULLS LAST, region)" })
local RENAMED = db:transaction(function(tx)
  tx:rename_column("orders", "region", "area")
end, { message = "RENAME COLUMN region TO area" })
local RESET = db:transaction(function(tx)
  tx:clear_sorting("orders")
end, { message = "RESET SORTED BY" })

print(("snapshots: CREATE TABLE %d, SET SORTED BY %d, RENAME COLUMN %d, RESET SORTED BY %d"):format(
  CREATED, SORTED, RENAMED, RESET))

-- "amount DESC NULLS_LAST, region ASC NULLS_LAST"
local function keys_text(exprs)
  local parts = {}
  for i, e in ipairs(exprs) do parts[i] = ("%s %s %s"):format(e.expression, e.sort_direction, e.null_order) end
  return table.concat(parts, ", ")
end

local timeline, in_force = {}, {}
db:read(function(rd)
  -- every version of the table's sort spec, live and ended, in key order (sort_id)
  for info, children in rd:scan("ducklake_sort_info", { at = moraine.ALL, table_id = T }) do
    timeline[#timeline + 1] = {
      sort_id = info.sort_id, begin_snapshot = info.begin_snapshot,
      end_snapshot = info.end_snapshot ~= moraine.null and info.end_snapshot or nil,
      text = keys_text(children.ducklake_sort_expression or {}),
    }
  end
  for s = CREATED, RESET do
    local spec = rd:sort_spec(T, s)
    in_force[s] = spec and keys_text(spec.expressions) or "(none)"
  end
end)

print("\nsort spec history of orders:")
for _, v in ipairs(timeline) do
  print(("  sort_id %d  [%d, %s)  %s"):format(v.sort_id, v.begin_snapshot,
    v.end_snapshot and tostring(v.end_snapshot) or "live", v.text))
end
print("\nsort spec in force:")
for s = CREATED, RESET do print(("  at snapshot %d: %s"):format(s, in_force[s])) end

-- two versions: the one SET SORTED BY wrote (region) and the one the rename wrote (area)
assert(#timeline == 2, #timeline)
assert(timeline[1].text == "amount DESC NULLS_LAST, region ASC NULLS_LAST", timeline[1].text)
assert(timeline[1].begin_snapshot == SORTED and timeline[1].end_snapshot == RENAMED)
assert(timeline[2].text == "amount DESC NULLS_LAST, area ASC NULLS_LAST", timeline[2].text)
assert(timeline[2].begin_snapshot == RENAMED and timeline[2].end_snapshot == RESET)
-- the spec in force at each snapshot; none after the reset
assert(in_force[CREATED] == "(none)")
assert(in_force[SORTED] == timeline[1].text)
assert(in_force[RENAMED] == timeline[2].text)
assert(in_force[RESET] == "(none)")
assert(db:read(function(rd) return rd:sort_spec(T) end) == nil)

db:close()
os.execute("rm -rf '" .. tmp .. "'")
print("\nok: the rename wrote a new sort version, the reset left none live, history keeps both")
