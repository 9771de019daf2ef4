-- Specs of rd:files_batch (bindings/moraine_batch.c), the batch read of a
-- table's data files as column arrays. The oracle is the row-at-a-time read:
-- rd:files(T, S) with its children, and rd:scan("ducklake_delete_file") for
-- the delete files. On every fixture catalog and on a generated one (verb
-- commits with NULLs, empty strings, multibyte text, int64 extremes, a
-- repartition and ended files), at every snapshot, for every table, random
-- projections (columns in random order, partition values on or off, stats of
-- all, none or random column_ids with random stats columns, delete-file
-- columns) must give exactly what the row-at-a-time read gives, so a wrong
-- projection fails.
local moraine = require "moraine"
local support = require "support"

local has_ffi, ffi = pcall(require, "ffi")
-- a record_count past 2^53 (a cdata under LuaJIT); not near int64's end: the
-- verbs add record counts into next_row_id unchecked
local BIG = has_ffi and ffi.new("int64_t", 2 ^ 53) + 1 or math.tointeger(2 ^ 53) + 1

local function same(a, b)
  if type(a) == "table" and type(b) == "table" then return a.json == b.json end
  return a == b
end

local function show(v)
  if v == moraine.null then return "NULL" end
  if type(v) == "table" then return "json " .. tostring(v.json) end
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end

-- a random subset of @list in a random order
local function pick(list)
  local out = {}
  for _, v in ipairs(list) do
    if math.random(2) == 1 then out[#out + 1] = v end
  end
  for i = #out, 2, -1 do
    local j = math.random(i)
    out[i], out[j] = out[j], out[i]
  end
  return out
end

local function colnames(db, rel)
  local info = db:relation(rel)
  return info and info.columns or {}
end

-- what files_batch must answer, built from the row-at-a-time read
local function oracle(rd, T, S, o, file_cols)
  local want = { n = 0, file = {}, partition_values = {}, stats = {}, delete_file = {} }
  local cols = o.columns or file_cols
  for _, c in ipairs(cols) do want.file[c] = {} end
  local dels = {}
  if o.delete_files then
    for d in rd:scan("ducklake_delete_file", { at = S, table_id = T }) do
      local id = d.data_file_id
      local key = tostring(id)
      if not dels[key] then dels[key] = d end -- the first in key order
    end
  end
  local stat_ids
  if type(o.stats) == "table" then
    stat_ids = {}
    for _, id in ipairs(o.stats) do stat_ids[tostring(id)] = id end
  end
  local stcols = o.stats_columns or { "min_value", "max_value" }
  local n = 0
  local pv_max = -1
  local pv_rows, st_rows = {}, {}
  for row, children in rd:files(T, S) do
    n = n + 1
    for _, c in ipairs(cols) do want.file[c][n] = row[c] end
    local pv = {}
    for _, k in ipairs(children.ducklake_file_partition_value or {}) do
      local i = tonumber(k.partition_key_index)
      if pv[i] == nil then pv[i] = k.partition_value end
      if i > pv_max then pv_max = i end
    end
    pv_rows[n] = pv
    local st = {}
    for _, k in ipairs(children.ducklake_file_column_stats or {}) do
      local key = tostring(k.column_id)
      if (o.stats == true or (stat_ids and stat_ids[key] ~= nil)) and st[key] == nil then
        st[key] = k
        stat_ids = stat_ids or {}
        if o.stats == true then stat_ids[key] = k.column_id end
      end
    end
    st_rows[n] = st
    if o.delete_files then
      local d = dels[tostring(row.data_file_id)]
      for _, c in ipairs(o.delete_files) do
        want.delete_file[c] = want.delete_file[c] or {}
        want.delete_file[c][n] = d and d[c] or false
      end
    end
  end
  want.n = n
  for i = 0, pv_max do
    local a = {}
    for f = 1, n do
      local v = pv_rows[f][i]
      if v == nil then v = false end
      a[f] = v
    end
    want.partition_values[i + 1] = a
  end
  for key, id in pairs(stat_ids or {}) do
    local s = {}
    for _, c in ipairs(stcols) do
      s[c] = {}
      for f = 1, n do
        local r = st_rows[f][key]
        s[c][f] = r and r[c] or false
      end
    end
    want.stats[key] = { id = id, cols = s }
  end
  if o.delete_files then
    for _, c in ipairs(o.delete_files) do want.delete_file[c] = want.delete_file[c] or {} end
  end
  return want
end

-- a raw batch (LuaJIT) as the arrays rd:files_batch gives without raw: each
-- column read back through col:get, one past the end nil
local function materialize(raw)
  local function arrays(t)
    local out = {}
    for k, col in pairs(t) do
      local a = {}
      for i = 1, col.n + 1 do a[i] = col:get(i) end
      assert.equal(tonumber(raw.n), col.n)
      out[k] = a
    end
    return out
  end
  local stats
  if raw.stats then
    stats = {}
    for id, s in pairs(raw.stats) do stats[id] = arrays(s) end
  end
  return { n = raw.n, file = arrays(raw.file), partition_values = raw.partition_values and arrays(raw.partition_values),
    stats = stats, delete_file = raw.delete_file and arrays(raw.delete_file) }
end

local function check(got, want, o, file_cols, where)
  assert.equal(want.n, tonumber(got.n), where .. ": n")
  for c, a in pairs(want.file) do
    local g = got.file[c]
    assert.is_table(g, where .. ": column " .. c)
    for i = 1, want.n do
      assert.is_true(same(a[i], g[i]), string.format("%s: file %d column %s: %s, the row read %s", where, i, c, show(g[i]), show(a[i])))
    end
    assert.is_nil(g[want.n + 1])
  end
  local nfile = 0
  for _ in pairs(got.file) do nfile = nfile + 1 end
  assert.equal(#(o.columns or file_cols), nfile, where .. ": columns in the answer")
  if o.partition_values == false then
    assert.is_nil(got.partition_values)
  else
    assert.equal(#want.partition_values, #got.partition_values, where .. ": partition key indexes")
    for k, a in ipairs(want.partition_values) do
      for i = 1, want.n do
        assert.is_true(same(a[i], got.partition_values[k][i]),
          string.format("%s: file %d key %d: %s, the row read %s", where, i, k - 1, show(got.partition_values[k][i]), show(a[i])))
      end
    end
  end
  if not o.stats then
    assert.is_nil(got.stats)
  else
    local ngot = 0
    for id, s in pairs(got.stats) do
      ngot = ngot + 1
      local w = want.stats[tostring(id)]
      if w == nil and type(o.stats) == "table" then
        -- a column asked for that no file has stats of: all false
        for _, a in pairs(s) do
          for i = 1, want.n do assert.equal(false, a[i]) end
        end
      else
        assert.is_table(w, where .. ": stats of column " .. tostring(id) .. " not in the row read")
        for c, a in pairs(w.cols) do
          for i = 1, want.n do
            assert.is_true(same(a[i], s[c][i]), string.format("%s: file %d stats %s of column %s: %s, the row read %s", where, i, c,
              tostring(id), show(s[c][i]), show(a[i])))
          end
        end
      end
    end
    local nwant = 0
    for _ in pairs(want.stats) do nwant = nwant + 1 end
    assert.is_true(ngot >= nwant, where .. ": stats columns")
  end
  if o.delete_files then
    for c, a in pairs(want.delete_file) do
      for i = 1, want.n do
        assert.is_true(same(a[i], got.delete_file[c][i]), string.format("%s: file %d delete file %s: %s, the row read %s", where, i, c,
          show(got.delete_file[c][i]), show(a[i])))
      end
    end
  else
    assert.is_nil(got.delete_file)
  end
end

-- rd:files_batch against the row-at-a-time read; under LuaJIT its raw form too
local function compare(rd, T, S, o, file_cols)
  local want = oracle(rd, T, S, o, file_cols)
  local where = string.format("table %s at %s", tostring(T), tostring(S))
  check(rd:files_batch(T, S, o), want, o, file_cols, where)
  if has_ffi then
    local ro = { raw = true }
    for k, v in pairs(o) do ro[k] = v end
    check(materialize(rd:files_batch(T, S, ro)), want, o, file_cols, where .. " (raw)")
  end
end

local function random_opts(db)
  local o = {}
  if math.random(4) > 1 then o.columns = pick(colnames(db, "ducklake_data_file")) end
  if math.random(3) == 1 then o.partition_values = false end
  local r = math.random(4)
  if r == 1 then
    o.stats = true
  elseif r == 2 then
    o.stats = {}
    for _ = 1, math.random(0, 4) do o.stats[#o.stats + 1] = math.random(0, 12) end
  end
  if math.random(2) == 1 then o.stats_columns = pick(colnames(db, "ducklake_file_column_stats")) end
  if math.random(2) == 1 then o.delete_files = pick(colnames(db, "ducklake_delete_file")) end
  return o
end

local function everywhere(db, rounds)
  local file_cols = colnames(db, "ducklake_data_file")
  local last = db:last_snapshot() or 0
  local checked = 0
  db:read(function(rd)
    local tables = {}
    for t in rd:scan("ducklake_table", { at = moraine.ALL }) do tables[tostring(t.table_id)] = t.table_id end
    tables["none"] = 999999
    for S = 0, last do
      for _, T in pairs(tables) do
        for _ = 1, rounds do
          compare(rd, T, S, random_opts(db), file_cols)
          checked = checked + 1
        end
      end
    end
  end)
  return checked
end

-- rd:scan_columns against rd:scan: every relation that is not a child, at
-- every snapshot (and moraine.ALL), random columns, children random ones
local function scan_columns_everywhere(db)
  local rels = db:relations()
  local kids_of = {}
  for _, r in ipairs(rels) do
    if r.placement == "child" and r.parent and #r.columns > 0 then
      kids_of[r.parent] = kids_of[r.parent] or {}
      table.insert(kids_of[r.parent], r)
    end
  end
  local last = db:last_snapshot() or 0
  local checked = 0
  db:read(function(rd)
    for _, r in ipairs(rels) do
      if r.placement ~= "child" and #r.columns > 0 then
        for _, S in ipairs({ 0, math.floor(last / 2), last, moraine.ALL }) do
          local opts = { at = S }
          local cols = r.columns
          if math.random(3) > 1 then
            cols = pick(r.columns)
            opts.columns = cols
          end
          local kids = {}
          for _, k in ipairs(kids_of[r.name] or {}) do
            if math.random(3) > 1 then
              local kc = math.random(2) == 1 and true or pick(k.columns)
              opts.children = opts.children or {}
              opts.children[k.name] = kc
              kids[#kids + 1] = { name = k.name, cols = kc == true and k.columns or kc }
            end
          end
          local got = rd:scan_columns(r.name, opts)
          local n = 0
          local kn = {}
          for row, children in rd:scan(r.name, { at = S }) do
            n = n + 1
            for _, c in ipairs(cols) do
              assert.is_true(same(row[c], got.columns[c][n]), string.format("%s at %s row %d column %s: %s, the row read %s", r.name,
                tostring(S), n, c, show(got.columns[c][n]), show(row[c])))
            end
            for _, k in ipairs(kids) do
              for _, kr in ipairs(children[k.name] or {}) do
                kn[k.name] = (kn[k.name] or 0) + 1
                local m = kn[k.name]
                local g = got.children[k.name]
                assert.equal(n, tonumber(g.parent[m]), r.name .. " child " .. k.name .. " row " .. m .. ": parent")
                for _, c in ipairs(k.cols) do
                  assert.is_true(same(kr[c], g.columns[c][m]), string.format("%s child %s row %d column %s: %s, the row read %s", r.name,
                    k.name, m, c, show(g.columns[c][m]), show(kr[c])))
                end
              end
            end
          end
          assert.equal(n, tonumber(got.n), r.name .. " at " .. tostring(S) .. ": rows")
          for _, k in ipairs(kids) do
            assert.equal(kn[k.name] or 0, tonumber(got.children[k.name].n), r.name .. ": rows of " .. k.name)
          end
          local ncols = 0
          for _ in pairs(got.columns) do ncols = ncols + 1 end
          assert.equal(#cols, ncols, r.name .. ": columns in the answer")
          checked = checked + 1
        end
      end
    end
  end)
  return checked
end

describe("rd:scan_columns", function()
  local seed
  before_each(function() seed = support.seed() end)
  after_each(function() support.cleanup() end)

  for _, scenario in ipairs({ "s1_evolution", "s2_multi_table", "s3_edge_values", "s4_encrypted" }) do
    it("answers what rd:scan answers on fixture " .. scenario, function()
      local db = support.import_fixture(scenario)
      for _ = 1, 3 do assert.is_true(scan_columns_everywhere(db) > 0, "seed " .. seed) end
      db:close()
    end)
  end

  it("refuses bad options, naming them", function()
    local db = support.import_fixture("s1_evolution")
    db:read(function(rd)
      support.expect_err("EINVAL", "unknown option 'column'", rd.scan_columns, rd, "ducklake_table", { column = { "x" } })
      support.expect_err("ENOTFOUND", "no_such", rd.scan_columns, rd, "no_such_table")
      support.expect_err("ENOTFOUND", "nope", rd.scan_columns, rd, "ducklake_table", { columns = { "nope" } })
      support.expect_err("EINVAL", "child relation", rd.scan_columns, rd, "ducklake_partition_column")
      support.expect_err("ENOTFOUND", "ducklake_sort_expression", rd.scan_columns, rd, "ducklake_partition_info",
        { children = { ducklake_sort_expression = true } })
      support.expect_err("EINVAL", "children.ducklake_partition_column", rd.scan_columns, rd, "ducklake_partition_info",
        { children = { ducklake_partition_column = 3 } })
      support.expect_err("EINVAL", "'at'", rd.scan_columns, rd, "ducklake_table", { at = "x" })
    end)
    db:close()
  end)
end)

describe("rd:files_batch", function()
  local seed
  before_each(function() seed = support.seed() end)
  after_each(function() support.cleanup() end)

  for _, scenario in ipairs({ "s1_evolution", "s2_multi_table", "s3_edge_values", "s4_encrypted" }) do
    it("answers what the row-at-a-time read answers on fixture " .. scenario, function()
      local db = support.import_fixture(scenario)
      local n = everywhere(db, 3)
      assert.is_true(n > 0, "seed " .. seed)
      db:close()
    end)
  end

  it("merges the delete files past one whose data_file_id is NULL (it sorts first, matching no data file)", function()
    -- s1_evolution's table 1 has 40 live delete files; one more, live, whose
    -- data_file_id is NULL sorts before them all in key order
    local src = support.tmpdir("nulldel")
    assert.is_true(support.sh("cp -r " .. support.q(support.FIXTURES .. "/s1_evolution/catalog/.") .. " " .. support.q(src)))
    local f = src .. "/ducklake_delete_file.ndjson"
    support.write(f, support.read(f) .. '{"delete_file_id":900,"table_id":1,"begin_snapshot":18,"end_snapshot":null,'
      .. '"data_file_id":null,"path":"orphan-delete.parquet","path_is_relative":true,"format":"parquet","delete_count":1,'
      .. '"file_size_bytes":10,"footer_size":5,"encryption_key":null,"partial_max":null,"row_group_count":1}\n')
    local db = moraine.open(support.tmpdir("nulldelcat"), { no_sync = true })
    db:import_ndjson(src)
    local file_cols = colnames(db, "ducklake_data_file")
    db:read(function(rd)
      local o = { columns = { "data_file_id" }, partition_values = false, delete_files = { "delete_file_id", "path", "delete_count" } }
      local b = rd:files_batch(1, nil, o)
      local matched = 0
      for i = 1, tonumber(b.n) do
        if b.delete_file.path[i] ~= false then matched = matched + 1 end
      end
      assert.equal(40, matched, "data files with their live delete file")
      compare(rd, 1, rd:last_snapshot(), o, file_cols)
    end)
    db:close()
  end)

  it("answers what the row-at-a-time read answers on a generated catalog", function()
    local db = moraine.open(support.tmpdir("batch"), { no_sync = true })
    db:init("data/")
    db:transaction(function(tx)
      local cols = { { name = "a", type = "int64" }, { name = "b", type = "varchar" }, { name = "c", type = "timestamp" } }
      tx:create_table("t", cols)
      tx:create_table("u", cols)
      tx:set_partitioning("t", { "a", "day(c)" })
      tx:set_partitioning("u", { "b" })
    end)
    local strs = { "", "x", "a b", "9223372036854775807", "-9223372036854775808", "\u{e9}t\u{e9}" }
    local function s() return math.random(4) == 1 and moraine.null or strs[math.random(#strs)] end
    -- min/max texts must be values of their column's type (the verbs merge them into ducklake_table_column_stats)
    local typed = { a = { "0", "42", "9223372036854775807", "-9223372036854775808" },
                    c = { "2025-01-01 00:00:00", "1999-12-31 23:59:59.5", "2025-06-30 12:00:00" } }
    local function stat(c)
      local pool = typed[c]
      if not pool then return s() end
      return math.random(4) == 1 and moraine.null or pool[math.random(#pool)]
    end
    for round = 1, 14 do
      local tname = round % 2 == 1 and "u" or "t"
      if round == 7 then db:transaction(function(tx) tx:set_partitioning("t", { "b" }) end) end
      local files = {}
      for i = 1, 5 do
        local npv = (tname == "u" or round >= 7) and 1 or 2
        local pv = {}
        -- values of the key's transform and column (the verbs check them): t's a (int64) and day(c)
        -- before round 7, b (varchar, any text) on u and on t from round 7
        for k = 1, npv do
          if npv == 2 then pv[k] = math.random(4) == 1 and moraine.null or (k == 1 and typed.a[math.random(4)] or tostring(math.random(31)))
          else pv[k] = s() end
        end
        local stats = {}
        for _, c in ipairs({ "a", "b", "c" }) do
          if math.random(2) == 1 then
            stats[#stats + 1] = { column = c, column_size_bytes = math.random(1000), value_count = 7, null_count = 0,
              min_value = stat(c), max_value = stat(c) }
          end
        end
        files[i] = { path = string.format("f-%d-%d.parquet", round, i), record_count = i == 1 and BIG or i,
          file_size_bytes = 100 + i, footer_size = 7, partition_values = pv, stats = stats }
      end
      local first
      db:transaction(function(tx) first = tx:add_data_files(tname, files) end)
      if round % 3 == 0 then
        db:transaction(function(tx)
          tx:add_delete_files(tname, { { data_file_id = first + 1, path = "d" .. round .. ".parquet", delete_count = 1, file_size_bytes = 10, footer_size = 5 } })
        end)
      end
      if round % 4 == 0 then db:transaction(function(tx) tx:delete_files(tname, { first }) end) end
    end
    assert.is_true(everywhere(db, 6) > 0, "seed " .. seed)
    db:close()
  end)

  it("raw (LuaJIT): columns of cells in the read's pages, refused once the read ends, and under Lua 5.4", function()
    local db = support.import_fixture("s3_edge_values")
    if not has_ffi then
      db:read(function(rd)
        support.expect_err("EINVAL", "option 'raw' needs LuaJIT's FFI", rd.files_batch, rd, 1, nil, { raw = true })
      end)
      db:close()
      return
    end
    local kept, seen = {}, 0
    db:read(function(rd)
      support.expect_err("EINVAL", "option 'raw' must be a boolean", rd.files_batch, rd, 1, nil, { raw = "yes" })
      for t in rd:scan("ducklake_table") do
        local T = t.table_id
        local arrays = rd:files_batch(T, nil, { stats = true, delete_files = { "path" } })
        local raw = rd:files_batch(T, nil, { stats = true, delete_files = { "path" }, raw = true })
        arrays, raw = arrays.file.path, raw.file.path
        collectgarbage("collect") -- the column keeps its cells: only `raw.file.path` is still referenced
        for i = 1, raw.n do
          local v = raw:get(i)
          assert.equal(arrays[i], v)
          assert.equal(type(v) == "string" and "string" or "null", raw:kind(i))
          if type(v) == "string" then
            assert.equal(#v, raw:len(i))
            local p, len = raw:ptr(i)
            assert.equal(v, ffi.string(p, len))
          else
            assert.is_nil(raw:len(i))
            assert.is_nil(raw:ptr(i))
          end
          seen = seen + 1
        end
        assert.is_nil(raw:get(0))
        assert.is_nil(raw:get(raw.n + 1))
        assert.is_nil(raw:get(1.5))
        assert.is_nil(raw:kind(raw.n + 1))
        assert.is_true(raw:is_open())
        kept[#kept + 1] = raw
      end
    end)
    assert.is_true(seen > 0)
    support.expect_err("EINVAL", "col:get(i)", function() return kept[1][1] end)
    for _, col in ipairs(kept) do
      assert.is_false(col:is_open())
      support.expect_err("ETXN", "read transaction of this batch has ended", col.get, col, 1)
      support.expect_err("ETXN", "has ended", col.len, col, 1)
      support.expect_err("ETXN", "has ended", col.ptr, col, 1)
      support.expect_err("ETXN", "has ended", col.kind, col, 1)
    end
    db:close()
  end)

  it("raw (LuaJIT): a fork's child is refused the parent's columns (EFORK), the parent reads on", function()
    if not has_ffi then return end -- raw batches are LuaJIT's (the test above checks Lua 5.4 refuses them)
    pcall(ffi.cdef, "int fork(void); void _exit(int); int waitpid(int pid, int *status, int options);")
    local db = support.import_fixture("s3_edge_values")
    db:read(function(rd)
      local T
      for t in rd:scan("ducklake_table") do T = T or t.table_id end
      local arrays = rd:files_batch(T, nil, {})
      local col = rd:files_batch(T, nil, { raw = true }).file.path
      assert.is_true(col.n > 0)
      local pid = ffi.C.fork()
      assert.is_true(pid >= 0, "fork failed")
      if pid == 0 then
        -- the child: every method refuses with EFORK, is_open says false; exit at once (no busted output)
        local ok = not col:is_open()
        for _, m in ipairs({ "get", "len", "ptr", "kind" }) do
          local good, err = pcall(col[m], col, 1)
          ok = ok and not good and tostring(err):find("EFORK", 1, true) ~= nil
            and tostring(err):find("another process", 1, true) ~= nil
        end
        ffi.C._exit(ok and 0 or 1)
      end
      local st = ffi.new("int[1]")
      assert.equal(pid, ffi.C.waitpid(pid, st, 0))
      assert.equal(0, st[0], "the child's checks failed (status " .. st[0] .. ")")
      assert.is_true(col:is_open())
      for i = 1, col.n do assert.equal(arrays.file.path[i], col:get(i)) end
    end)
    db:close()
  end)

  it("names the old stats table of a catalog of DuckLake before 0.3 (ducklake_file_column_statistics)", function()
    local db = moraine.open(support.tmpdir("v02"), { no_sync = true })
    db:import_ndjson(support.FIXTURES .. "/migrations/v02/before")
    assert.is_nil(db:relation("ducklake_file_column_stats"))
    assert.is_table(db:relation("ducklake_file_column_statistics"))
    db:read(function(rd)
      support.expect_err("ENOTFOUND", { "ducklake_file_column_statistics", "moraine upgrade" }, rd.files_batch, rd, 1, nil, { stats = true })
      assert.equal(0, tonumber(rd:files_batch(1, nil, { stats = false }).n))
    end)
    db:close()
  end)

  it("refuses bad options, naming them", function()
    local db = support.import_fixture("s1_evolution")
    db:read(function(rd)
      support.expect_err("EINVAL", "unknown option 'colums'", rd.files_batch, rd, 1, 1, { colums = { "path" } })
      support.expect_err("ENOTFOUND", "no_such_column", rd.files_batch, rd, 1, 1, { columns = { "no_such_column" } })
      support.expect_err("EINVAL", "'columns'[2]", rd.files_batch, rd, 1, 1, { columns = { "path", 3 } })
      support.expect_err("EINVAL", "'stats'", rd.files_batch, rd, 1, 1, { stats = "min" })
      support.expect_err("EINVAL", "'stats'[1]", rd.files_batch, rd, 1, 1, { stats = { "x" } })
      support.expect_err("ENOTFOUND", "nope", rd.files_batch, rd, 1, 1, { stats = true, stats_columns = { "nope" } })
      support.expect_err("ENOTFOUND", "nope", rd.files_batch, rd, 1, 1, { delete_files = { "nope" } })
      support.expect_err("EINVAL", "'partition_values' must be a boolean", rd.files_batch, rd, 1, 1, { partition_values = "no" })
      support.expect_err("EINVAL", "options are named", rd.files_batch, rd, 1, 1, { 1 })
      support.expect_err("EINVAL", "options are named", rd.scan_columns, rd, "ducklake_table", { "x" })
      -- INT64_MIN is moraine's "every table" scope: as a table_id it would answer for all tables, so it is refused
      local MIN = math.mininteger or require("ffi").new("int64_t", -2 ^ 63)
      local every = "is moraine's 'every table' (MORAINE_ANY_SCOPE)"
      support.expect_err("EINVAL", "files_batch: table_id -9223372036854775808 " .. every, rd.files_batch, rd, MIN, 1)
      support.expect_err("EINVAL", "files: table_id", rd.files, rd, MIN, 1)
      support.expect_err("EINVAL", "scan: table_id", rd.scan, rd, "ducklake_data_file", { table_id = MIN })
      support.expect_err("EINVAL", "scan_json: table_id", rd.scan_json, rd, "ducklake_data_file", { table_id = MIN })
      support.expect_err("EINVAL", "scan_columns: table_id", rd.scan_columns, rd, "ducklake_data_file", { table_id = MIN })
      -- the default snapshot is the newest, the default projection every column
      local b = rd:files_batch(1)
      local n = 0
      for _ in rd:files(1) do n = n + 1 end
      assert.equal(n, tonumber(b.n))
      assert.is_table(b.file.path)
      assert.is_table(b.partition_values)
      assert.is_nil(b.stats)
    end)
    db:close()
  end)
end)
