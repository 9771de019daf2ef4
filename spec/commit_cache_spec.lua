--- The handle's cache of the tables its last verb commit wrote
-- (engine/verbs_cache.c): a handle that commits add_data_files again and
-- again takes the table's rows (its columns, specs, ducklake_table_stats and
-- ducklake_table_column_stats rows) from what its last commit wrote instead
-- of reading them, while the store's last LMDB transaction is that commit's.
-- What it writes must be what a handle without the cache writes: each case
-- runs the same commits on two catalogs, one through one handle (the cache
-- used from the second commit on), the other opening a new handle for every
-- commit (nothing cached), and compares the rows they hold, row for row.
local moraine = require "moraine"
local support = require "support"

local N = moraine.null
local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"

-- every row of @name, in the store's order, as one line each (positions included)
local function lines(db, name)
  local out = {}
  for _, e in ipairs(db:scan(name, { at = moraine.ALL })) do
    local keys = {}
    for k in pairs(e.row) do
      if not k:find("uuid", 1, true) then keys[#keys + 1] = k end -- random in each catalog
    end
    table.sort(keys)
    local parts = { tostring(e.ord) }
    for _, k in ipairs(keys) do
      local v = e.row[k]
      parts[#parts + 1] = k .. "=" .. (v == N and "NULL" or tostring(v))
    end
    out[#out + 1] = table.concat(parts, " ")
  end
  return out
end

-- what both catalogs must hold alike (ducklake_snapshot has the commit times)
local RELS = { "ducklake_table_column_stats", "ducklake_table_stats", "ducklake_data_file", "ducklake_file_column_stats",
               "ducklake_snapshot_changes", "ducklake_column", "ducklake_table" }

-- a deterministic stream of files: values of each column's type, NULL min/max, NaN, nulls
local function file_stream(seed)
  local x = seed
  local function rnd(n)
    x = (x * 1103515245 + 12345) % 2147483648
    return x % n
  end
  local n = 0
  return function()
    n = n + 1
    local lo, hi = rnd(2000) - 1000, rnd(2000) - 1000
    if lo > hi then lo, hi = hi, lo end
    local nulls = rnd(4) == 0 and rnd(5) or 0
    local stats = {
      { column = "i", value_count = 10 - nulls, null_count = nulls, min_value = tostring(lo), max_value = tostring(hi) },
      { column = "d", value_count = 10, null_count = 0, min_value = ("%d.%d"):format(lo, rnd(10)), max_value = ("%d.25"):format(hi),
        contains_nan = rnd(7) == 0 },
      { column = "m", value_count = 10, null_count = 0, min_value = ("%d.%02d"):format(lo, rnd(100)), max_value = ("%d.5"):format(hi) },
      { column = "ts", value_count = 10, null_count = 0, min_value = ("2024-01-%02d 00:00:%02d.%d"):format(1 + rnd(28), rnd(60), rnd(10)),
        max_value = ("2024-02-%02d 12:00:00"):format(1 + rnd(28)) },
      { column = "s", value_count = 10, null_count = 0, min_value = string.char(65 + rnd(50)), max_value = string.char(65 + rnd(50), 97 + rnd(26)) },
    }
    if rnd(6) == 0 then stats[1].min_value, stats[1].max_value = nil, nil end -- all NULL in this file
    if rnd(5) == 0 then table.remove(stats, 5) end                          -- no stats for s
    return { { path = ("f%d.parquet"):format(n), record_count = 10, file_size_bytes = 100 + n, stats = stats } }
  end
end

local COLS = { { name = "i", type = "int32" }, { name = "d", type = "float64" }, { name = "m", type = "decimal(18,2)" },
               { name = "ts", type = "timestamp" }, { name = "s", type = "varchar" }, { name = "gone", type = "int64" } }

-- a new catalog with tables t and u, a first insert into each (ducklake_table_stats
-- and column stats rows inserted), then a column dropped (its row stays) and one
-- added (no row: an UPDATE never makes one)
local function new_catalog(tag)
  local dir = support.tmpdir(tag)
  local db = moraine.open(dir, { no_sync = true })
  db:init("data/")
  db:transaction(function(tx)
    tx:create_table("t", COLS)
    tx:create_table("u", COLS)
  end)
  db:transaction(function(tx)
    tx:add_data_files("t", { { path = "t0.parquet", record_count = 5, file_size_bytes = 50,
                               stats = { { column = "i", value_count = 5, null_count = 0, min_value = "0", max_value = "1" },
                                         { column = "gone", value_count = 5, null_count = 0, min_value = "7", max_value = "8" },
                                         { column = "s", value_count = 5, null_count = 0, min_value = "m", max_value = "m" } } } })
    tx:add_data_files("u", { { path = "u0.parquet", record_count = 5, file_size_bytes = 50,
                               stats = { { column = "d", value_count = 5, null_count = 0, min_value = "0.5", max_value = "1.5" } } } })
  end)
  db:transaction(function(tx)
    tx:drop_column("t", "gone")
    tx:add_column("t", { name = "late", type = "int64" })
  end)
  return db, dir
end

-- the table_id of table @tname and the column_id of its column @cname
local function ids_of(db, tname, cname)
  local tid, cid
  for _, row in ipairs(support.rows_of(db, "ducklake_table", { at = moraine.ALL })) do
    if row.table_name == tname then tid = row.table_id end
  end
  for _, row in ipairs(support.rows_of(db, "ducklake_column", { at = moraine.ALL })) do
    if row.table_id == tid and row.column_name == cname then cid = row.column_id end
  end
  return tid, cid
end

-- table @tname's ducklake_table_column_stats row of column @cname
local function column_stats(db, tname, cname)
  local tid, cid = ids_of(db, tname, cname)
  for _, row in ipairs(support.rows_of(db, "ducklake_table_column_stats", { at = moraine.ALL })) do
    if row.table_id == tid and row.column_id == cid then return row end
  end
end

-- add_data_files(@tbl, @files) committed through a new handle of the catalog at @dir
local function commit_new_handle(dir, tbl, files)
  local db = moraine.open(dir, { no_sync = true })
  db:transaction(function(tx) tx:add_data_files(tbl, files) end)
  db:close()
end

local function same_rows(a, b)
  for _, rel in ipairs(RELS) do
    local la, lb = lines(a, rel), lines(b, rel)
    assert.are.equal(#lb, #la, rel)
    for i = 1, #la do assert.are.equal(lb[i], la[i], rel .. " row " .. i) end
  end
end

describe("the handle's cache of the tables its last commit wrote", function()
  teardown(function() support.cleanup() end)

  it("writes what a new handle for every commit writes, row for row", function()
    local cached = new_catalog("cache-a")
    local fresh, fdir = new_catalog("cache-b")
    fresh:close()
    local fa, fb = file_stream(7), file_stream(7)
    for k = 1, 40 do
      local tbl = (k % 3 == 0) and "u" or "t"
      local ffa, ffb = fa(), fb()
      cached:transaction(function(tx) tx:add_data_files(tbl, ffa) end)
      commit_new_handle(fdir, tbl, ffb)
      if k == 20 then -- two tables in one commit, and two verbs on one table
        local x, y, z = fa(), fa(), fa()
        cached:transaction(function(tx)
          tx:add_data_files("t", x)
          tx:add_data_files("u", y)
          tx:add_data_files("t", z)
        end)
        x, y, z = fb(), fb(), fb()
        local db = moraine.open(fdir, { no_sync = true })
        db:transaction(function(tx)
          tx:add_data_files("t", x)
          tx:add_data_files("u", y)
          tx:add_data_files("t", z)
        end)
        db:close()
      end
    end
    fresh = moraine.open(fdir, { no_sync = true })
    same_rows(cached, fresh)
    -- the dropped column's row stays as it was; the column added after the first insert has none
    local gone = column_stats(cached, "t", "gone")
    assert.are.same({ "7", "8" }, { gone.min_value, gone.max_value })
    assert.is_nil(column_stats(cached, "t", "late"))
    -- a file without a min/max for i leaves the table's i without one until the next file has one
    local i = column_stats(cached, "t", "i")
    assert.is_truthy(i.min_value ~= N or i.max_value == N)
    cached:close()
    fresh:close()
  end)

  it("reads the store again after another handle's or another process's commit", function()
    local cached, cdir = new_catalog("cache-c")
    local fresh, fdir = new_catalog("cache-d")
    fresh:close()
    local fa, fb = file_stream(11), file_stream(11)
    for k = 1, 12 do
      local x, y = fa(), fb()
      if k % 4 == 2 then
        -- another handle of this process commits between two of the cached handle's commits
        commit_new_handle(cdir, "t", x)
      elseif k % 4 == 3 then
        -- another process commits (the same files, written by a child interpreter)
        local code = ([[
local moraine = require "moraine"
local db = moraine.open(%q, { no_sync = true })
db:transaction(function(tx) tx:add_data_files("t", { { path = %q, record_count = 10, file_size_bytes = 7,
  stats = { { column = "i", value_count = 10, null_count = 0, min_value = "-5000", max_value = "5000" },
            { column = "s", value_count = 10, null_count = 0, min_value = "!", max_value = "~~" } } } }) end)
db:close()]]):format(cdir, x[1].path)
        assert.is_true(support.sh(RUNTIME .. " -e " .. support.q(code)))
        y = { { path = y[1].path, record_count = 10, file_size_bytes = 7,
                stats = { { column = "i", value_count = 10, null_count = 0, min_value = "-5000", max_value = "5000" },
                          { column = "s", value_count = 10, null_count = 0, min_value = "!", max_value = "~~" } } } }
      else
        cached:transaction(function(tx) tx:add_data_files("t", x) end)
      end
      commit_new_handle(fdir, "t", y)
      -- the cached handle commits right after: its cache is of an older LMDB transaction then
      local x2, y2 = fa(), fb()
      cached:transaction(function(tx) tx:add_data_files("t", x2) end)
      commit_new_handle(fdir, "t", y2)
    end
    fresh = moraine.open(fdir, { no_sync = true })
    same_rows(cached, fresh)
    -- the other process's bounds for s (below and above every other file's) are in the
    -- merge: the cache did not hide its commit
    local r = column_stats(cached, "t", "s")
    assert.are.same({ "!", "~~" }, { r.min_value, r.max_value })
    cached:close()
    fresh:close()
  end)

  it("reads the store again after a write that made no snapshot (the LMDB transaction, not the snapshot, decides)", function()
    local cached, cdir = new_catalog("cache-e")
    local fresh, fdir = new_catalog("cache-f")
    fresh:close()
    local fa, fb = file_stream(5), file_stream(5)
    -- another handle sets t's row for s in place, in a commit of no snapshot
    local function widen(dir)
      local db = moraine.open(dir, { no_sync = true })
      local tid, cid = ids_of(db, "t", "s")
      local before = db:last_snapshot()
      for _, e in ipairs(db:scan("ducklake_table_column_stats", { at = moraine.ALL })) do
        if e.row.table_id == tid and e.row.column_id == cid then
          local row = {}
          for k, v in pairs(e.row) do row[k] = v end
          row.min_value, row.max_value = "!", "~~"
          db:commit(nil, function(tx) tx:put_row("ducklake_table_column_stats", row, e.ord) end)
        end
      end
      assert.are.equal(before, db:last_snapshot())
      db:close()
    end
    for k = 1, 6 do
      local x, y = fa(), fb()
      x[1].stats[5] = { column = "s", value_count = 10, null_count = 0, min_value = "K", max_value = "L" }
      y[1].stats[5] = x[1].stats[5]
      cached:transaction(function(tx) tx:add_data_files("t", x) end)
      commit_new_handle(fdir, "t", y)
      if k == 3 then
        widen(cdir)
        widen(fdir)
      end
    end
    fresh = moraine.open(fdir, { no_sync = true })
    same_rows(cached, fresh)
    local r = column_stats(cached, "t", "s")
    assert.are.same({ "!", "~~" }, { r.min_value, r.max_value })
    cached:close()
    fresh:close()
  end)
end)
