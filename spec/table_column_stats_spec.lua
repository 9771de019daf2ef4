--- ducklake_table_column_stats written by the data verbs as DuckLake's commit
-- writes them (engine/verbs_colstats.c, docs/verbs.md "Table column statistics"):
-- the rules one at a time on small catalogs, and bad input. The ground truth
-- over DuckLake's own catalogs is spec/corpus_spec.lua (the 30 corpus
-- scenarios replayed with every data unit's files through the data verbs,
-- R.column_stats) and spec/verbs_fixtures_spec.lua (s2, s3).
local moraine = require "moraine"
local support = require "support"
local R = require "corpus_runner" -- R.canon

local N = moraine.null

local function rows_of(db, name)
  local out = {}
  for _, e in ipairs(db:scan(name, { at = moraine.ALL })) do out[#out + 1] = e.row end
  return out
end

local COLS = { "table_id", "column_id", "contains_null", "contains_nan", "min_value", "max_value", "extra_stats" }

local function lines(rows)
  local out = {}
  for _, r in ipairs(rows) do out[#out + 1] = R.canon(r, COLS) end
  table.sort(out)
  return out
end

describe("ducklake_table_column_stats through the data verbs", function()
  teardown(function() support.cleanup() end)

  describe("the rules", function()
    local db
    local function files(list)
      local out = {}
      for i, f in ipairs(list) do
        local stats = {}
        for j, s in ipairs(f.stats) do
          stats[j] = { column = s[1], column_size_bytes = 10, value_count = s[2], null_count = s[3],
                       min_value = s[4] ~= N and s[4] or nil, max_value = s[5] ~= N and s[5] or nil,
                       contains_nan = s[6] }
        end
        out[i] = { path = f.path, record_count = f.records or 10, file_size_bytes = 100, stats = stats }
      end
      return out
    end
    local function stats_rows()
      local out = {}
      for _, r in ipairs(rows_of(db, "ducklake_table_column_stats")) do
        out[r.column_id] = { r.contains_null, r.contains_nan, r.min_value, r.max_value }
      end
      return out
    end
    local function add(list) return db:transaction(function(tx) tx:add_data_files("t", files(list)) end) end

    before_each(function()
      db = moraine.open(support.tmpdir("tcs-rules"), { no_sync = true })
      db:init("data/")
      db:transaction(function(tx)
        tx:create_table("t", { { name = "i", type = "int32" }, { name = "d", type = "float64" },
                               { name = "m", type = "decimal(18,2)" }, { name = "ts", type = "timestamp" },
                               { name = "s", type = "varchar" } })
      end)
    end)
    after_each(function() db:close() end)

    it("merges values as values, strings as bytes; the first insert inserts one row per column with stats", function()
      add({ { path = "a.parquet", stats = { { "i", 10, 0, "9", "-2" }, { "d", 10, 0, "-1.5", "99.5", false },
                                            { "m", 10, 0, "9.50", "10.00" }, { "ts", 10, 0, "2024-01-01 00:00:00.5", "2024-01-02 00:00:00" },
                                            { "s", 10, 0, "b", "b" } } } })
      add({ { path = "b.parquet", stats = { { "i", 9, 1, "-10", "10" }, { "d", 10, 0, "-1.25", "100.0", false },
                                            { "m", 10, 0, "9.5", "10.5" }, { "ts", 10, 0, "2024-01-01 00:00:00.25", "2024-01-01 12:00:00" },
                                            { "s", 10, 0, "B", "ba" } } } })
      local r = stats_rows()
      assert.same({ true, N, "-10", "10" }, r[1])          -- "-10" < "9" as integers; a NULL in b: contains_null
      assert.same({ false, false, "-1.5", "100.0" }, r[2])
      assert.same({ false, N, "9.50", "10.5" }, r[3])       -- 9.5 = 9.50 keeps the first text; 10.5 > 10.00
      assert.same({ false, N, "2024-01-01 00:00:00.25", "2024-01-02 00:00:00" }, r[4])
      assert.same({ false, N, "B", "ba" }, r[5])
    end)

    it("an all-NULL file changes no min/max; a column without a row before never gets one", function()
      add({ { path = "a.parquet", stats = { { "i", 10, 0, "1", "5" } } } })
      db:transaction(function(tx) tx:add_column("t", { name = "late", type = "int64" }) end)
      add({ { path = "b.parquet", stats = { { "i", 0, 10, N, N }, { "s", 10, 0, "x", "y" }, { "late", 10, 0, "1", "2" } } } })
      local r = stats_rows()
      assert.same({ true, N, "1", "5" }, r[1])
      assert.is_nil(r[5])   -- UpdateGlobalTableStatsSql only UPDATEs rows that exist
      assert.is_nil(r[6])
    end)

    it("a file with values but no min leaves the column without a min", function()
      add({ { path = "a.parquet", stats = { { "i", 10, 0, "1", "5" } } } })
      add({ { path = "b.parquet", stats = { { "i", 10, 0, N, "7" } } } })
      assert.same({ false, N, N, "7" }, stats_rows()[1])
    end)

    it("files dropped whole with rows left delete the table's rows; the table emptied resets them", function()
      add({ { path = "a.parquet", records = 10, stats = { { "i", 10, 0, "1", "5" } } } })
      add({ { path = "b.parquet", records = 10, stats = { { "i", 10, 0, "6", "9" } } } })
      local ids = {}
      for _, e in ipairs(db:scan("ducklake_data_file", {})) do ids[#ids + 1] = e.row.data_file_id end
      table.sort(ids)
      db:transaction(function(tx) tx:delete_files("t", { ids[1] }) end)
      assert.same({}, rows_of(db, "ducklake_table_column_stats"))

      local db2 = moraine.open(support.tmpdir("tcs-empty"), { no_sync = true })
      db2:init("data/")
      db2:transaction(function(tx) tx:create_table("u", { { name = "i", type = "int32" } }) end)
      db2:transaction(function(tx) tx:add_data_files("u", files({ { path = "a.parquet", stats = { { "i", 10, 0, "1", "5" } } } })) end)
      local id = db2:scan("ducklake_data_file", {})[1].row.data_file_id
      db2:transaction(function(tx)
        tx:delete_files("u", { id })
        tx:add_data_files("u", files({ { path = "c.parquet", stats = { { "i", 10, 0, "7", "8" } } } }))
      end)
      local r = rows_of(db2, "ducklake_table_column_stats")
      db2:close()
      assert.equal(1, #r)
      -- reset (no null count, no NaN flag), then the new file's min/max
      assert.same({ N, N, "7", "8" }, { r[1].contains_null, r[1].contains_nan, r[1].min_value, r[1].max_value })
    end)

    it("DROP COLUMN and DROP TABLE leave the rows", function()
      add({ { path = "a.parquet", stats = { { "i", 10, 0, "1", "5" }, { "s", 10, 0, "a", "b" } } } })
      db:transaction(function(tx) tx:drop_column("t", "s") end)
      add({ { path = "b.parquet", stats = { { "i", 10, 0, "0", "3" } } } })
      local r = stats_rows()
      assert.same({ false, N, "0", "5" }, r[1])
      assert.same({ false, N, "a", "b" }, r[5])
      db:transaction(function(tx) tx:drop_table("t") end)
      assert.equal(2, #rows_of(db, "ducklake_table_column_stats"))
    end)

    it("a type change in the same transaction as an insert drops min/max (types differ)", function()
      add({ { path = "a.parquet", stats = { { "i", 10, 0, "1", "5" } } } })
      db:transaction(function(tx)
        tx:alter_column("t", "i", { type = "int64" })
        tx:add_data_files("t", files({ { path = "b.parquet", stats = { { "i", 10, 0, "0", "3" } } } }))
      end)
      assert.same({ false, N, N, N }, stats_rows()[1])
      -- a row without min and max reads back as "no valid value" (FromGlobalStats:
      -- any_valid = has_min or has_max), so the next file's min/max are taken whole
      add({ { path = "c.parquet", stats = { { "i", 10, 0, "-1", "30" } } } })
      assert.same({ false, N, "-1", "30" }, stats_rows()[1])
    end)

    -- A checking model merges each verb's files once (parsing every min/max
    -- for the check) and the commit takes that merge when it applies the verb
    -- to the same snapshot into a table whose merge has none of its columns;
    -- otherwise the commit parses and merges the files one by one. The cases
    -- below take each way and must give what merging file by file gives.
    it("merges several verbs of one transaction file by file, in verb order", function()
      db:transaction(function(tx)
        tx:add_data_files("t", files({ { path = "a.parquet", stats = { { "i", 10, 0, "5", "6" }, { "m", 10, 0, "9.50", "10.00" } } } }))
        tx:add_data_files("t", files({ { path = "b.parquet", stats = { { "m", 10, 0, "9.5", "10.5" }, { "i", 10, 0, "-3", "4" } } },
                                       { path = "c.parquet", stats = { { "i", 0, 10, N, N }, { "s", 10, 0, "x", "y" } } } }))
        tx:add_data_files("t", files({ { path = "d.parquet", stats = { { "i", 10, 0, "7", "100" } } } }))
      end)
      local r = stats_rows()
      assert.same({ true, N, "-3", "100" }, r[1])
      assert.same({ false, N, "9.50", "10.5" }, r[3]) -- 9.5 = 9.50: the earlier file's text
      assert.same({ false, N, "x", "y" }, r[5])
    end)

    it("a verb whose first file has no values merges as file by file, alone or after another verb", function()
      -- DuckLake's MergeStats: the first file's stats are taken whole (its min/max
      -- texts too); a later file without values changes no min/max
      local a = { path = "a.parquet", stats = { { "i", 0, 10, "50", "60" } } }
      local b = { path = "b.parquet", stats = { { "i", 10, 0, "55", "58" } } }
      db:transaction(function(tx) tx:add_data_files("t", files({ a, b })) end)
      assert.same({ true, N, "50", "60" }, stats_rows()[1])
      local db2 = moraine.open(support.tmpdir("tcs-verbs"), { no_sync = true })
      db2:init("data/")
      db2:transaction(function(tx) tx:create_table("t", { { name = "i", type = "int32" } }) end)
      db2:transaction(function(tx)
        tx:add_data_files("t", files({ b }))
        tx:add_data_files("t", files({ a }))
      end)
      local r2 = rows_of(db2, "ducklake_table_column_stats")
      db2:close()
      assert.same({ true, "55", "58" }, { r2[1].contains_null, r2[1].min_value, r2[1].max_value })
    end)

    it("a transaction committing on top of a newer snapshot merges its files into that snapshot's rows", function()
      add({ { path = "a.parquet", stats = { { "i", 10, 0, "0", "1" }, { "m", 10, 0, "3", "4" } } } })
      -- another writer inserts after this transaction's base (no conflict: both insert)
      db:transaction(function(tx)
        tx:add_data_files("t", files({ { path = "b.parquet", stats = { { "i", 10, 0, "5", "6" }, { "m", 10, 0, "9.50", "10" } } } }))
        db:transaction(function(tx2)
          tx2:add_data_files("t", files({ { path = "c.parquet", stats = { { "i", 10, 0, "-1", "2" }, { "m", 10, 0, "9.5", "11" } } } }))
        end)
      end)
      local r = stats_rows()
      assert.same({ false, N, "-1", "6" }, r[1])
      assert.same({ false, N, "3", "11" }, r[3])
      -- the same with a catalog verb after the files (the commit's id plan applies them at the newer snapshot)
      db:transaction(function(tx)
        tx:add_data_files("t", files({ { path = "d.parquet", stats = { { "i", 9, 1, "-7", "3" }, { "m", 10, 0, "3.00", "12" } } } }))
        db:transaction(function(tx2)
          tx2:add_data_files("t", files({ { path = "e.parquet", stats = { { "i", 10, 0, "-2", "20" } } } }))
        end)
        tx:create_table("u", { { name = "x", type = "int64" } })
      end)
      r = stats_rows()
      assert.same({ true, N, "-7", "20" }, r[1])
      assert.same({ false, N, "3", "12" }, r[3]) -- 3 = 3.00: the committed row's text
    end)

    -- The commit takes what the transaction's checking model read (the table,
    -- its stats rows) only when it reads the same LMDB snapshot from the same
    -- catalog snapshot; a commit by another writer in between makes it read
    -- the newest snapshot again. Stale reads would give the wrong row ids,
    -- table stats and min/max here.
    local function table_stats(id)
      for _, r in ipairs(rows_of(db, "ducklake_table_stats")) do
        if r.table_id == id then return { r.record_count, r.next_row_id } end
      end
    end
    local function row_id_start(path)
      for _, e in ipairs(db:scan("ducklake_data_file", {})) do
        if e.row.path == path then return e.row.row_id_start end
      end
    end
    it("another writer's commit between two verbs, or before the first, is read at commit", function()
      db:transaction(function(tx) tx:create_table("u", { { name = "i", type = "int32" } }) end)
      local u
      for _, e in ipairs(db:scan("ducklake_table", {})) do if e.row.table_name == "u" then u = e.row.table_id end end
      add({ { path = "a.parquet", records = 10, stats = { { "i", 10, 0, "1", "5" } } } })
      db:transaction(function(tx)
        tx:add_data_files("t", files({ { path = "b.parquet", records = 10, stats = { { "i", 10, 0, "-5", "0" } } } }))
        db:transaction(function(tx2)
          tx2:add_data_files("t", files({ { path = "c.parquet", records = 10, stats = { { "i", 10, 0, "7", "8" } } } }))
          tx2:add_data_files("u", files({ { path = "u1.parquet", records = 10, stats = { { "i", 10, 0, "3", "4" } } } }))
        end)
        tx:add_data_files("u", files({ { path = "u2.parquet", records = 10, stats = { { "i", 10, 0, "1", "9" } } } }))
      end)
      assert.same({ 30, 30 }, table_stats(1))
      assert.same({ 20, 20 }, table_stats(u))
      assert.equal(20, row_id_start("b.parquet"))
      assert.equal(10, row_id_start("u2.parquet"))
      local function col1(id)
        for _, r in ipairs(rows_of(db, "ducklake_table_column_stats")) do
          if r.table_id == id and r.column_id == 1 then return { r.contains_null, r.contains_nan, r.min_value, r.max_value } end
        end
      end
      assert.same({ false, N, "-5", "8" }, col1(1))
      assert.same({ false, N, "1", "9" }, col1(u))
      -- the other writer commits before this transaction's first verb
      db:transaction(function(tx)
        db:transaction(function(tx2)
          tx2:add_data_files("t", files({ { path = "d.parquet", records = 5, stats = { { "i", 5, 0, "100", "200" } } } }))
        end)
        tx:add_data_files("t", files({ { path = "e.parquet", records = 5, stats = { { "i", 5, 0, "-100", "0" } } } }))
      end)
      assert.same({ 40, 40 }, table_stats(1))
      assert.equal(35, row_id_start("e.parquet"))
      assert.same({ false, N, "-100", "200" }, col1(1))
    end)

    it("refuses a min/max that is not a value of the column's type, naming it, and commits nothing", function()
      add({ { path = "a.parquet", stats = { { "i", 10, 0, "1", "5" } } } })
      local before_rows = lines(rows_of(db, "ducklake_table_column_stats"))
      local before = db:last_snapshot()
      for _, case in ipairs({ { "i", "0", "1.5" }, { "i", "0", "2147483648" }, { "m", "0.00", "abc" },
                              { "ts", "2024-01-01 00:00:00", "2024-02-30 00:00:00" }, { "d", "0.0", "1e999" } }) do
        local ok, err = pcall(add, { { path = "bad.parquet", stats = { { case[1], 10, 0, case[2], case[3] } } } })
        assert.is_false(ok)
        assert.matches('table "t", column "' .. case[1] .. '": max_value "' .. case[3]:gsub("%p", "%%%0") .. '" is not a value', tostring(err))
      end
      assert.equal(before, db:last_snapshot())
      assert.same(before_rows, lines(rows_of(db, "ducklake_table_column_stats")))
      assert.equal(1, #db:scan("ducklake_data_file", {}))
    end)
  end)
end)
