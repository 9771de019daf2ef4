--- Property: over random sequences of staged commits (inserts, versions no
-- snapshot sees, ends, and refused bad commits), moraine's reads at every
-- snapshot equal a plain-Lua model of DuckLake's SQL filter.
local moraine = require "moraine"
local support = require "support"

local CASES = tonumber(os.getenv("MORAINE_PROPERTY_CASES") or "") or 1000 -- fewer under valgrind (tests/run-all.sh)
local INFO = "ducklake_partition_info"
local COLS = "ducklake_partition_column"

local function define(tx)
  tx:define(INFO, { "partition_id", "table_id", "begin_snapshot", "end_snapshot" })
  tx:define(COLS, { "partition_id", "table_id", "partition_key_index", "column_id", "transform" })
end

local function key(r) return r.table_id .. ":" .. r.partition_id end

local function sort_versions(list)
  table.sort(list, function(a, b)
    if a.table_id ~= b.table_id then return a.table_id < b.table_id end
    if a.partition_id ~= b.partition_id then return a.partition_id < b.partition_id end
    return a.begin_snapshot < b.begin_snapshot
  end)
  return list
end

-- One random case: returns nil on success, or a message.
local function run_case(seed)
  math.randomseed(seed)
  local db = moraine.open(support.tmpdir("tp"), { no_sync = true })
  local model = {} -- versions: {row=, children=}
  local snap = -1
  db:commit(nil, define)
  local ncommits = math.random(2, 7)
  for _ = 1, ncommits do
    local s = snap + math.random(1, 3)
    local bad = math.random(1, 8) == 1
    local staged = {}  -- model changes to apply if the commit succeeds
    local live = {}
    for _, v in ipairs(model) do
      if v.row.end_snapshot == moraine.null then live[key(v.row)] = v end
    end
    local ok, err = pcall(db.commit, db, bad and math.random(1, 2) == 1 and snap or s, function(tx)
      -- ends first, then inserts (DuckLake's order within a snapshot)
      for k, v in pairs(live) do
        if math.random(1, 3) == 1 then
          tx:end_row(INFO, v.row)
          staged[#staged + 1] = { kind = "end", v = v }
          live[k] = nil
        end
      end
      for _ = 1, math.random(0, 3) do
        local r = { table_id = math.random(1, 3), partition_id = math.random(1, 6), begin_snapshot = s,
          end_snapshot = moraine.null }
        if math.random(1, 5) == 1 then r.end_snapshot = s end
        -- a table has at most one live spec: end the one it has first (as DuckLake does);
        -- one this same commit inserted stays, and the new live row is not inserted
        local blocked = false
        if r.end_snapshot == moraine.null and not live[key(r)] then
          for k, v in pairs(live) do
            if v.row.table_id == r.table_id then
              if v.row.begin_snapshot == s then
                blocked = true
              else
                tx:end_row(INFO, v.row)
                staged[#staged + 1] = { kind = "end", v = v }
                live[k] = nil
              end
            end
          end
        end
        if not blocked and (r.end_snapshot ~= moraine.null or not live[key(r)]) then
          local dup = false
          for _, st in ipairs(staged) do
            if st.kind == "insert" and key(st.v.row) == key(r) and st.v.row.end_snapshot == r.end_snapshot then dup = true end
          end
          if not dup then
            local kids = {}
            tx:insert(INFO, r)
            for i = 1, math.random(0, 3) do
              kids[i] = { partition_id = r.partition_id, table_id = r.table_id, partition_key_index = i - 1,
                column_id = math.random(1, 9), transform = ({ "identity", "year", "bucket(4)", "" })[math.random(1, 4)] }
              tx:insert(COLS, kids[i])
            end
            local v = { row = r, children = kids }
            staged[#staged + 1] = { kind = "insert", v = v }
            if r.end_snapshot == moraine.null then live[key(r)] = v end
          end
        end
      end
      if bad then
        -- a refused operation: ending a key that is not live, or a duplicate live insert
        local r = { table_id = 9, partition_id = 99, begin_snapshot = s, end_snapshot = moraine.null }
        if math.random(1, 2) == 1 then tx:end_row(INFO, r) else tx:insert(INFO, r); tx:insert(INFO, r) end
      end
    end)
    if bad then
      if ok then return "a bad commit was accepted at snapshot " .. s end
      if not moraine.is_error(err) then return "bad commit raised a non-moraine error: " .. tostring(err) end
    else
      if not ok then return "commit " .. s .. " failed: " .. tostring(err) end
      snap = s
      for _, st in ipairs(staged) do
        if st.kind == "end" then st.v.row.end_snapshot = s else model[#model + 1] = st.v end
      end
    end
  end
  -- compare every snapshot, every table, and the spec lookups
  local msg
  db:read(function(rd)
    if snap >= 0 and rd:last_snapshot() ~= snap then msg = "last_snapshot " .. tostring(rd:last_snapshot()) return end
    for s = 0, snap + 1 do
      for _, t in ipairs({ false, 1, 2, 3 }) do
        local want = {}
        for _, v in ipairs(model) do
          if support.visible(v.row, s) and (not t or v.row.table_id == t) then want[#want + 1] = v.row end
        end
        sort_versions(want)
        local got, kids = {}, {}
        for row, children in rd:scan(INFO, { at = s, table_id = t or nil }) do
          got[#got + 1] = row
          kids[key(row) .. "@" .. row.begin_snapshot .. "@" .. tostring(row.end_snapshot)] = children[COLS] or {}
        end
        sort_versions(got)
        if #want ~= #got then msg = ("snapshot %d table %s: %d rows expected, %d read"):format(s, tostring(t), #want, #got) return end
        for i = 1, #want do
          if not support.same_row(want[i], got[i]) then
            msg = ("snapshot %d: expected %s read %s"):format(s, support.show(want[i]), support.show(got[i])) return
          end
        end
        for _, v in ipairs(model) do
          local k = key(v.row) .. "@" .. v.row.begin_snapshot .. "@" .. tostring(v.row.end_snapshot)
          if kids[k] then
            if #kids[k] ~= #v.children then msg = "children of " .. k .. " differ in count" return end
            for i = 1, #v.children do
              if not support.same_row(v.children[i], kids[k][i]) then msg = "child of " .. k .. " differs" return end
            end
          end
        end
        if t then
          local spec = rd:partition_spec(t, s)
          local first = want[1]
          if (spec == nil) ~= (first == nil) or (spec and spec.partition_id ~= first.partition_id) then
            msg = ("partition_spec(%d, %d) differs from the model"):format(t, s) return
          end
        end
      end
    end
    -- every version, including never-visible ones, is found by its id
    for _, v in ipairs(model) do
      if not rd:partition_spec_by_id(v.row.table_id, v.row.partition_id) then
        msg = "partition_spec_by_id lost " .. key(v.row) return
      end
    end
  end)
  db:close()
  return msg
end

describe("temporal reads (property, " .. CASES .. " random commit sequences)", function()
  after_each(support.cleanup)

  it("equal the SQL filter over a plain-Lua model at every snapshot", function()
    local base = support.seed()
    for i = 1, CASES do
      local msg = run_case(base + i)
      if msg then error(("case seed %d (MORAINE_SEED=%d, case %d): %s"):format(base + i, base, i, msg)) end
      if i % 50 == 0 then support.cleanup() end
    end
  end)
end)
