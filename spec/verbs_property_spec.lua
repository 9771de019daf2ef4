--- Property: random sequences of verbs (set/change/clear partitioning and
-- sorting, adding, deleting and rewriting files, renaming and dropping
-- columns) against a plain-Lua model of DuckLake's rules. After every commit,
-- at every earlier snapshot, the spec in force and every file's spec and
-- values equal the model's, and the catalog's invariants hold.
local moraine = require "moraine"
local support = require "support"
local tablex = require "pl.tablex"
local pretty = require "pl.pretty"

local CASES = tonumber(os.getenv("MORAINE_PROPERTY_CASES") or "") or 1000 -- fewer under valgrind (tests/run-all.sh)
local N = moraine.null
local TRANSFORMS = { "identity", "year", "bucket(4)", "epoch_day" }

local function live(list)
  for _, s in ipairs(list) do if s.e == nil then return s end end
end

-- ends a sort spec at S; one this same transaction wrote is taken back
-- instead (DuckLake writes only the last sort spec of a transaction)
local function end_sort(t, cur, S)
  if cur.b ~= S then cur.e = S return end
  for i, x in ipairs(t.sorts) do if x == cur then table.remove(t.sorts, i) return end end
end

local function visible(x, s) return x.b <= s and (x.e == nil or s < x.e) end

local function same_keys(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i].column_id ~= b[i].column_id or a[i].transform ~= b[i].transform then return false end
  end
  return true
end

local function expect_refusal(code, fn, ...)
  support.expect_err(code, nil, fn, ...)
end

-- DuckLake numbers a transaction's catalog ids at commit, the entries it
-- touched last first (engine/verbs_commit.c, plan_ids): the model hands out
-- placeholders and numbers them when the transaction commits.
local function touch(m, tname)
  m.touched = m.touched or {}
  for _, n in ipairs(m.touched) do if n == tname then return end end
  m.touched[#m.touched + 1] = tname
end

local function alloc(m, tname)
  m.allocs = m.allocs or {}
  local ph = -1000000 - #m.allocs
  m.allocs[#m.allocs + 1] = { tname = tname, ph = ph }
  return ph
end

-- a data file this transaction adds (@phase 0) or a rewrite writes (2) to table @t:
-- its id is given at commit (number_ids), in DuckLake's order
local function falloc(m, t, phase)
  m.fallocs = m.fallocs or {}
  local ph = -2000000 - #m.fallocs
  m.fallocs[#m.fallocs + 1] = { ph = ph, phase = phase, tid = t.id, seq = #m.fallocs }
  return ph
end

local function number_ids(m)
  -- DuckLake's file ids (DuckLakeTransactionState::CommitChanges): new data files, then
  -- compaction outputs, table by table in table-id order, each in statement order
  local fmap, fa = {}, m.fallocs or {}
  table.sort(fa, function(x, y)
    if x.phase ~= y.phase then return x.phase < y.phase end
    if x.tid ~= y.tid then return x.tid < y.tid end
    return x.seq < y.seq
  end)
  for _, a in ipairs(fa) do fmap[a.ph] = m.next_file_id; m.next_file_id = m.next_file_id + 1 end
  for _, t in pairs(m.tables) do
    for _, f in ipairs(t.files) do if fmap[f.id] then f.id = fmap[f.id] end end
  end
  m.fallocs = nil
  local map = {}
  for i = #(m.touched or {}), 1, -1 do
    for _, a in ipairs(m.allocs or {}) do
      if a.tname == m.touched[i] then map[a.ph] = m.next_catalog_id; m.next_catalog_id = m.next_catalog_id + 1 end
    end
  end
  for _, t in pairs(m.tables) do
    for _, x in ipairs(t.specs) do if map[x.id] then x.id = map[x.id] end end
    for _, x in ipairs(t.sorts) do if map[x.id] then x.id = map[x.id] end end
    for _, f in ipairs(t.files) do if map[f.pid] then f.pid = map[f.pid] end end
  end
  m.touched, m.allocs = nil, nil
end

-- One random verb applied to both the model m (snapshot S being written) and tx.
local function random_verb(m, tx, S)
  local names = {}
  for n in pairs(m.tables) do names[#names + 1] = n end
  table.sort(names)
  local tname = names[math.random(1, #names)]
  local t = m.tables[tname]
  local pick = math.random(1, 9)
  if pick <= 2 then -- set, change or reset partitioning
    local keys, spec = {}, {}
    if math.random(1, 4) > 1 then
      for i = 1, math.random(1, 2) do
        local c = t.cols[math.random(1, #t.cols)]
        local tr = TRANSFORMS[math.random(1, #TRANSFORMS)]
        keys[i] = { column = c.name, transform = tr }
        spec[i] = { column_id = c.id, transform = tr }
      end
    end
    tx:set_partitioning(tname, keys)
    touch(m, tname)
    local cur = live(t.specs)
    if cur and same_keys(cur.keys, spec) then return end -- DuckLake: nothing to commit
    if cur then
      -- DuckLake: a spec set in this transaction that no file added here names is not written
      local named = false
      for _, f in ipairs(t.files) do if f.b == S and f.pid == cur.id then named = true end end
      if cur.b == S and not named then
        for i, x in ipairs(t.specs) do if x == cur then table.remove(t.specs, i) break end end
      else
        cur.e = S
      end
    end
    t.specs[#t.specs + 1] = { id = alloc(m, tname), b = S, keys = spec }
  elseif pick == 3 then -- set or reset sorting
    local cur = live(t.sorts)
    if math.random(1, 3) == 1 then
      -- DuckLake: resetting an unsorted table still alters it (no sort rows)
      tx:clear_sorting(tname)
      touch(m, tname)
      if not cur then return end
      end_sort(t, cur, S)
    else
      local keys, exprs = {}, {}
      for i = 1, math.random(1, 2) do
        local c = t.cols[math.random(1, #t.cols)]
        local dir = math.random(1, 2) == 1 and "ASC" or "DESC"
        keys[i] = { expression = c.name, sort_direction = dir }
        exprs[i] = c.name .. " " .. dir
      end
      tx:set_sorting(tname, keys)
      touch(m, tname)
      if cur then end_sort(t, cur, S) end
      t.sorts[#t.sorts + 1] = { id = alloc(m, tname), b = S, exprs = exprs }
    end
  elseif pick <= 5 then -- add files under the live spec
    local spec = live(t.specs)
    local nkeys = spec and #spec.keys or 0
    if math.random(1, 10) == 1 then
      -- a value count that does not match the live spec is refused
      local vals = {}
      for k = 1, nkeys + 1 do vals[k] = "v" .. k end
      return expect_refusal("EINVAL", tx.add_data_files, tx, tname,
        { { path = "bad.parquet", record_count = 1, file_size_bytes = 1, partition_values = vals } })
    end
    local files = {}
    for i = 1, math.random(1, 3) do
      local vals = {}
      for k = 1, nkeys do vals[k] = math.random(1, 4) == 1 and N or tostring(math.random(0, 2)) end
      files[i] = { path = "f" .. i .. ".parquet", record_count = math.random(1, 100), file_size_bytes = 10, partition_values = vals }
      t.files[#t.files + 1] = { id = falloc(m, t, 0), b = S, pid = nkeys > 0 and spec.id or N, vals = vals }
    end
    tx:add_data_files(tname, files)
  elseif pick == 6 then -- rewrite the files of one partition; a merge across partitions is refused
    local groups, keys = {}, {}
    for _, f in ipairs(t.files) do
      if f.e == nil and f.b < S then
        local k = tostring(f.pid) .. "|"
        for _, v in ipairs(f.vals) do k = k .. tostring(v) .. "|" end
        if not groups[k] then groups[k] = {}; keys[#keys + 1] = k end
        table.insert(groups[k], f)
      end
    end
    if #keys == 0 then return end
    table.sort(keys)
    local g = groups[keys[math.random(1, #keys)]]
    if #keys > 1 and math.random(1, 4) == 1 then
      local other = groups[keys[1]] ~= g and groups[keys[1]] or groups[keys[2]]
      return expect_refusal("EINVAL", tx.rewrite_files, tx, tname, { g[1].id, other[1].id },
        { { path = "x.parquet", record_count = 1, file_size_bytes = 1 } })
    end
    local ids = {}
    for i, f in ipairs(g) do ids[i] = f.id; f.e = S end
    tx:rewrite_files(tname, ids, { { path = "merged.parquet", record_count = 5, file_size_bytes = 5 } })
    t.files[#t.files + 1] = { id = falloc(m, t, 2), b = S, pid = g[1].pid, vals = g[1].vals }
  elseif pick == 7 then -- delete whole files
    local cands = {}
    for _, f in ipairs(t.files) do if f.e == nil and f.b < S then cands[#cands + 1] = f end end
    if #cands == 0 then return end
    local f = cands[math.random(1, #cands)]
    tx:delete_files(tname, { f.id })
    f.e = S
  elseif pick == 8 then -- rename a column: a sort key that is exactly the column follows it
    local c = t.cols[math.random(1, #t.cols)]
    local new = c.name .. "r"
    tx:rename_column(tname, c.name, new)
    touch(m, tname)
    local cur = live(t.sorts)
    if cur then
      local exprs, hit = {}, false
      for i, e in ipairs(cur.exprs) do
        local name, dir = e:match("^(%S+) (%S+)$")
        if name == c.name then hit = true; name = new end
        exprs[i] = name .. " " .. dir
      end
      -- DuckLake: a rename on a sorted table takes a catalog id either way
      local id = alloc(m, tname)
      if hit then
        end_sort(t, cur, S)
        t.sorts[#t.sorts + 1] = { id = id, b = S, exprs = exprs }
      end
    end
    c.name = new
  else -- drop a column: refused when the live partition or sort spec uses it
    local c = t.cols[math.random(1, #t.cols)]
    local spec, sort = live(t.specs), live(t.sorts)
    local used = false
    for _, k in ipairs(spec and spec.keys or {}) do if k.column_id == c.id then used = true end end
    for _, e in ipairs(sort and sort.exprs or {}) do if e:match("^(%S+)") == c.name then used = true end end
    if used then return expect_refusal("EINVAL", tx.drop_column, tx, tname, c.name) end
    if #t.cols == 1 then return end
    tx:drop_column(tname, c.name)
    touch(m, tname)
    for i, x in ipairs(t.cols) do if x == c then table.remove(t.cols, i) break end end
  end
end

local function deep_copy(x)
  if type(x) ~= "table" then return x end
  local y = {}
  for k, v in pairs(x) do y[k] = deep_copy(v) end
  return y
end

-- Compares every snapshot with the model; returns nil or a message.
local function check(db, m)
  return db:read(function(rd)
    for s = 1, m.snap do
      for tname, t in pairs(m.tables) do
        local want
        for _, sp in ipairs(t.specs) do if visible(sp, s) then want = sp end end
        local got = rd:partition_spec(t.id, s)
        if (want == nil) ~= (got == nil) then
          return ("%s@%d: partition spec %s expected, %s read"):format(tname, s, tostring(want and want.id), tostring(got and got.partition_id))
        end
        if want then
          if got.partition_id ~= want.id or #got.columns ~= #want.keys then
            return ("%s@%d: spec %d expected, %d read"):format(tname, s, want.id, got.partition_id)
          end
          for i, k in ipairs(want.keys) do
            local c = got.columns[i]
            if c.column_id ~= k.column_id or c.transform ~= k.transform or c.partition_key_index ~= i - 1 then
              return tname .. ": partition columns differ"
            end
          end
        end
        local wsort
        for _, so in ipairs(t.sorts) do if visible(so, s) then wsort = so end end
        local gsort = rd:sort_spec(t.id, s)
        if (wsort == nil) ~= (gsort == nil) then return ("%s@%d: sort spec differs"):format(tname, s) end
        if wsort then
          if gsort.sort_id ~= wsort.id or #gsort.expressions ~= #wsort.exprs then
            return ("%s@%d: sort %d expected, %d read"):format(tname, s, wsort.id, gsort.sort_id)
          end
          for i, e in ipairs(wsort.exprs) do
            local x = gsort.expressions[i]
            if x.expression .. " " .. x.sort_direction ~= e then return tname .. ": sort expression differs" end
          end
        end
        local wf = {}
        for _, f in ipairs(t.files) do if visible(f, s) then wf[#wf + 1] = f end end
        table.sort(wf, function(a, b) return a.id < b.id end)
        local n = 0
        for row, children in rd:files(t.id, s) do
          n = n + 1
          local f = wf[n]
          if not f or f.id ~= row.data_file_id or f.pid ~= row.partition_id then
            return ("%s@%d: file %s differs from the model"):format(tname, s, tostring(row.data_file_id))
          end
          local vals = children.ducklake_file_partition_value or {}
          if #vals ~= #f.vals then return "partition value count differs" end
          for i, v in ipairs(vals) do
            if v.partition_value ~= f.vals[i] or v.partition_key_index ~= i - 1 then return "partition value differs" end
          end
          if row.partition_id ~= N then
            local spec = rd:partition_spec_by_id(t.id, row.partition_id)
            if not spec or #spec.columns ~= #vals then return "a file's value count differs from its spec's column count" end
          end
        end
        if n ~= #wf then return ("%s@%d: %d files expected, %d read"):format(tname, s, #wf, n) end
      end
    end
    for _, rel in ipairs({ "ducklake_partition_info", "ducklake_sort_info", "ducklake_data_file", "ducklake_column" }) do
      for row in rd:scan(rel, { at = moraine.ALL }) do
        if row.end_snapshot ~= N and row.end_snapshot < row.begin_snapshot then return rel .. ": a row ends before it begins" end
      end
    end
    for _, t in pairs(m.tables) do
      for _, rel in ipairs({ "ducklake_partition_info", "ducklake_sort_info" }) do
        local n = 0
        for _ in rd:scan(rel, { table_id = t.id }) do n = n + 1 end
        if n > 1 then return rel .. ": more than one live spec" end
      end
    end
  end)
end

local function run_case(seed)
  math.randomseed(seed)
  local db = moraine.open(support.tmpdir("vp"), { no_sync = true })
  db:init("data/")
  local m = { next_catalog_id = 3, next_file_id = 0, snap = 1, tables = {} }
  db:transaction(function(tx)
    for i, name in ipairs({ "a", "b" }) do
      local cols, mc = {}, {}
      for k = 1, 4 do
        cols[k] = { name = "c" .. k, type = "int64" }
        mc[k] = { id = k, name = "c" .. k }
      end
      tx:create_table(name, cols)
      -- DuckLake numbers the tables of one transaction newest first: b is 1, a is 2
      m.tables[name] = { id = 3 - i, cols = mc, specs = {}, sorts = {}, files = {} }
    end
  end)
  for _ = 1, math.random(2, 8) do
    local saved = deep_copy(m)
    local S = m.snap + 1
    local snap = db:transaction(function(tx)
      for _ = 1, math.random(1, 3) do random_verb(m, tx, S) end
    end)
    if snap then
      if snap ~= S then return "snapshot " .. tostring(snap) .. " committed, " .. S .. " expected" end
      number_ids(m)
      m.snap = snap
    else
      -- nothing committed: then nothing in the model may have changed either, not
      -- a file's or spec's end (delete_files, clear_sorting), a column name, a
      -- partition value, nor the id counters
      for name, t in pairs(m.tables) do
        if not tablex.deepcompare(t, saved.tables[name]) then
          return ("a transaction that changed table %s of the model committed nothing:\n  model before %s\n  model after  %s")
            :format(name, pretty.write(saved.tables[name], ""), pretty.write(t, ""))
        end
      end
      if m.next_catalog_id ~= saved.next_catalog_id or m.next_file_id ~= saved.next_file_id or m.allocs or m.fallocs then
        return "a transaction that took ids in the model committed nothing"
      end
      m = saved
    end
    local msg = check(db, m)
    if msg then return msg end
  end
  db:close()
end

describe("verb path (property, " .. CASES .. " random verb sequences)", function()
  after_each(support.cleanup)

  it("matches a plain-Lua model of DuckLake's rules at every snapshot", function()
    local base = support.seed()
    for i = 1, CASES do
      local ok, msg = pcall(run_case, base + i)
      if not ok or msg then
        error(("case seed %d (MORAINE_SEED=%d, case %d): %s"):format(base + i, base, i, tostring(msg)))
      end
      if i % 50 == 0 then support.cleanup() end
    end
  end)
end)
