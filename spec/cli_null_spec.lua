--- The `moraine` command on catalogs holding NULL where a command expects a
-- value (DuckLake's schema allows NULL in most catalog columns, and import
-- keeps rows as written): each command either handles the NULL as its help
-- says (shown as NULL, a sum "unknown") or refuses with EINVAL naming the
-- table, the row's key and the column, exit 1; never an internal error.
-- Also a NUL byte in COMMENT ON's text (a clean EINVAL, exit 1), and the repl
-- given an error object whose __tostring raises (reported, not fatal).
local moraine = require "moraine"
local support = require "support"

local S1 = support.FIXTURES .. "/s1_evolution/catalog"

-- Runs `moraine ARGS...` with @stdin; returns {out, err, code, show}.
local run = support.moraine

-- A catalog imported from a copy of s1_evolution whose ducklake_TBL.ndjson
-- has COL set to null in its line number LINE (nil: every line).
local function null_catalog(tbl, col, line)
  local src = support.tmpdir("src")
  support.mkdir(src)
  for _, name in ipairs(support.tables_of(S1)) do
    local text = support.read(S1 .. "/" .. name .. ".ndjson")
    if name == "ducklake_" .. tbl then
      local out, n, hit = {}, 0, 0
      for l in text:gmatch("[^\n]+") do
        n = n + 1
        if line == nil or n == line then
          local k
          l, k = l:gsub('"' .. col .. '":"[^"]*"', '"' .. col .. '":null')
          if k == 0 then l, k = l:gsub('"' .. col .. '":[^,}]*', '"' .. col .. '":null') end
          hit = hit + k
        end
        out[#out + 1] = l
      end
      assert(hit > 0, "no " .. col .. " in ducklake_" .. tbl)
      text = table.concat(out, "\n") .. "\n"
    end
    support.write(src .. "/" .. name .. ".ndjson", text)
  end
  local dir = support.tmpdir("cat")
  local r = run({ "-c", dir, "import", src })
  assert(r.code == 0, r.show)
  return dir
end

local function no_internal(r)
  assert.is_nil(r.err:find("internal error", 1, true), r.show)
  assert.is_nil(r.err:find("traceback", 1, true), r.show)
end

-- the command ran (exit 0), no internal error
local function ok(r)
  no_internal(r)
  assert(r.code == 0, r.show)
  return r
end

-- the command refused: exit 1, EINVAL with `needle` (plain) in its message
local function refused(r, needle)
  no_internal(r)
  assert(r.code == 1, r.show)
  assert(r.err:find("EINVAL", 1, true), r.show)
  assert(r.err:find(needle, 1, true), r.show)
end

local WHERE = "ts BETWEEN '2025-03-25' AND '2025-03-26'"

describe("moraine commands on NULL catalog values", function()
  teardown(function() support.cleanup() end)

  describe("ducklake_data_file.record_count NULL (data_file_id 0, live)", function()
    local C
    setup(function() C = null_catalog("data_file", "record_count", 1) end)

    it("history: the group's rows read NULL, its share 'unknown', a note counts the file", function()
      local r = ok(run({ "-c", C, "history", "events" }))
      local line = r.out:match("\nlayout at snapshot.-(\n2\t[^\n]*)")
      assert(line, r.show)
      local cells = {}
      for c in (line:sub(2) .. "\t"):gmatch("([^\t]*)\t") do cells[#cells + 1] = c end
      -- partition_id, keys, state, files, rows, bytes, share
      assert.equal("\\N", cells[5], r.show)
      assert.equal("unknown", cells[7], r.show)
      assert.truthy(r.out:find("1 file with a NULL record_count", 1, true), r.show)
      local j = moraine.json_decode(ok(run({ "-c", C, "history", "events", "--json" })).out)
      assert.equal(1, tonumber(j.unknown_record_count_files))
      assert.equal(0, tonumber(j.unknown_file_size_files))
      local seen = false
      for _, g in ipairs(j.layout) do
        if tonumber(g.partition_id) == 2 then
          seen = true
          assert.equal(moraine.null, g.rows)
          assert.is_not.equal(moraine.null, g.bytes)
        else
          assert.is_not.equal(moraine.null, g.rows)
        end
      end
      assert.is_true(seen)
    end)

    it("layout and clustering refuse, naming the file and the column; audit and files run", function()
      local needle = "ducklake_data_file row (table_id=1, data_file_id=0) has NULL record_count"
      refused(run({ "-c", C, "layout", "events", "--where", WHERE }), needle)
      refused(run({ "-c", C, "layout", "events", "--where", WHERE, "--json" }), needle)
      refused(run({ "-c", C, "clustering", "events" }), needle)
      refused(run({ "-c", C, "clustering", "events", "--json" }), needle)
      -- the reports that do not weigh rows run (files shows the NULL)
      ok(run({ "-c", C, "audit", "events" }))
      ok(run({ "-c", C, "audit", "--json" }))
      local r = ok(run({ "-c", C, "files", "events", "--json" }))
      local j = moraine.json_decode(r.out)
      local found = false
      for _, f in ipairs(j.files or j) do
        if tonumber(f.data_file_id) == 0 then found = true assert.equal(moraine.null, f.record_count) end
      end
      assert.is_true(found, r.show)
    end)
  end)

  it("ducklake_data_file.file_size_bytes NULL: history's bytes of the group read NULL", function()
    local C = null_catalog("data_file", "file_size_bytes", 1)
    local j = moraine.json_decode(ok(run({ "-c", C, "history", "events", "--json" })).out)
    assert.equal(1, tonumber(j.unknown_file_size_files))
    for _, g in ipairs(j.layout) do
      if tonumber(g.partition_id) == 2 then assert.equal(moraine.null, g.bytes) assert.is_not.equal(moraine.null, g.rows) end
    end
    ok(run({ "-c", C, "history", "events" }))
  end)

  it("ducklake_file_column_stats.column_id NULL: audit, layout, clustering refuse naming the row", function()
    local C = null_catalog("file_column_stats", "column_id", 1)
    local needle = "ducklake_file_column_stats row (table_id=1, data_file_id=0, column_id=NULL) has NULL column_id"
    refused(run({ "-c", C, "audit" }), needle)
    refused(run({ "-c", C, "audit", "events", "--json" }), needle)
    refused(run({ "-c", C, "layout", "events", "--where", WHERE }), needle)
    refused(run({ "-c", C, "clustering", "events" }), needle)
  end)

  it("ducklake_file_partition_value.partition_key_index NULL: audit, layout, clustering refuse", function()
    local C = null_catalog("file_partition_value", "partition_key_index", 1)
    local needle = "ducklake_file_partition_value row (table_id=1, data_file_id=0, partition_key_index=NULL) has NULL "
      .. "partition_key_index"
    refused(run({ "-c", C, "audit" }), needle)
    refused(run({ "-c", C, "layout", "events", "--where", WHERE }), needle)
    refused(run({ "-c", C, "clustering", "events" }), needle)
  end)

  it("ducklake_partition_column.partition_key_index NULL: history, audit, layout, clustering refuse", function()
    local C = null_catalog("partition_column", "partition_key_index", 1)
    local needle = "ducklake_partition_column row (partition_id=2, table_id=1, partition_key_index=NULL) has NULL " ..
      "partition_key_index"
    refused(run({ "-c", C, "history", "events" }), needle)
    refused(run({ "-c", C, "audit" }), needle)
    refused(run({ "-c", C, "layout", "events", "--where", WHERE }), needle)
    refused(run({ "-c", C, "clustering", "events" }), needle)
  end)

  for _, col in ipairs({ "column_id", "transform" }) do
    it("ducklake_partition_column." .. col .. " NULL: audit, layout, clustering refuse naming the row", function()
      local C = null_catalog("partition_column", col, 1)
      local needle = "ducklake_partition_column row (partition_id=2, table_id=1, partition_key_index=0) has NULL " .. col
      refused(run({ "-c", C, "audit", "events" }), needle)
      refused(run({ "-c", C, "layout", "events", "--where", WHERE }), needle)
      refused(run({ "-c", C, "clustering", "events" }), needle)
      ok(run({ "-c", C, "history", "events" }))
    end)
  end

  it("ducklake_sort_expression.expression NULL: history, show, tables show it as NULL", function()
    local C = null_catalog("sort_expression", "expression", 1)
    local r = ok(run({ "-c", C, "history", "events" }))
    assert.truthy(r.out:find("\n6\t10\t12\tNULL DESC NULLS_LAST, region ASC NULLS_LAST", 1, true), r.show)
    ok(run({ "-c", C, "history", "events", "--json" }))
  end)

  it("ducklake_sort_expression.sort_key_index NULL: history refuses naming the row", function()
    local C = null_catalog("sort_expression", "sort_key_index", 1)
    refused(run({ "-c", C, "history", "events" }),
      "ducklake_sort_expression row (sort_id=6, table_id=1, sort_key_index=NULL) has NULL sort_key_index")
  end)

  describe("ducklake_column NULLs", function()
    it("column_name: show prints NULL; audit, layout, clustering refuse; sql names no such column", function()
      local C = null_catalog("column", "column_name", 1)
      local r = ok(run({ "-c", C, "show", "events" }))
      assert.truthy(r.out:find("\n1\t\\N\tint64\t", 1, true), r.show)
      ok(run({ "-c", C, "show", "events", "--json" }))
      local needle = "ducklake_column row (table_id=1, column_id=1, begin_snapshot=1) has NULL column_name"
      refused(run({ "-c", C, "audit" }), needle)
      refused(run({ "-c", C, "layout", "events", "--where", WHERE }), needle)
      refused(run({ "-c", C, "clustering", "events" }), needle)
      ok(run({ "-c", C, "sql", "ALTER TABLE events ADD COLUMN zz INTEGER" }))
      r = run({ "-c", C, "sql", "ALTER TABLE events RENAME COLUMN id TO id2" })
      no_internal(r)
      assert.equal(1, r.code, r.show)
    end)

    it("column_order: show and sql refuse naming the row", function()
      local C = null_catalog("column", "column_order", 1)
      local needle = "ducklake_column row (table_id=1, column_id=1, begin_snapshot=1) has NULL column_order"
      refused(run({ "-c", C, "show", "events" }), needle)
      refused(run({ "-c", C, "sql", "ALTER TABLE events ADD COLUMN zz INTEGER" }), needle)
    end)

    it("column_id: sql, audit refuse naming the row", function()
      local C = null_catalog("column", "column_id", 1)
      local needle = "ducklake_column row (table_id=1, column_id=NULL, begin_snapshot=1) has NULL column_id"
      refused(run({ "-c", C, "sql", "ALTER TABLE events ADD COLUMN zz INTEGER" }), needle)
      refused(run({ "-c", C, "audit" }), needle)
    end)

    it("column_type: layout on that column refuses; audit leaves its keys unchecked", function()
      local C = null_catalog("column", "column_type", 2)
      refused(run({ "-c", C, "layout", "events", "--where", WHERE }),
        "ducklake_column row (table_id=1, column_id=2, begin_snapshot=1) has NULL column_type")
      ok(run({ "-c", C, "audit" }))
    end)
  end)

  it("ducklake_table.table_name NULL: no name finds the table, its id does; listings show NULL", function()
    local C = null_catalog("table", "table_name", 1)
    for _, cmd in ipairs({ "files", "show", "history" }) do
      local r = run({ "-c", C, cmd, "events" })
      no_internal(r)
      assert(r.code == 1 and r.err:find("events", 1, true), r.show)
      ok(run({ "-c", C, cmd, "#1" }))
    end
    ok(run({ "-c", C, "audit" }))
    ok(run({ "-c", C, "layout", "#1", "--where", WHERE }))
    ok(run({ "-c", C, "clustering", "#1" }))
    ok(run({ "-c", C, "tables" }))
    local r = run({ "-c", C, "sql", "ALTER TABLE events ADD COLUMN zz INTEGER" })
    no_internal(r)
    assert.equal(1, r.code, r.show)
    ok(run({ "-c", C, "sql", "CREATE TABLE events2 (a INTEGER)" }))
  end)

  it("ducklake_schema.schema_name NULL: the tables in it are found by name and shown under NULL", function()
    local C = null_catalog("schema", "schema_name", 1)
    for _, cmd in ipairs({ "files", "show", "history", "clustering" }) do ok(run({ "-c", C, cmd, "events" })) end
    ok(run({ "-c", C, "audit" }))
    ok(run({ "-c", C, "layout", "events", "--where", WHERE }))
    local r = run({ "-c", C, "sql", "CREATE TABLE t9 (a INTEGER)" })
    no_internal(r)
  end)

  it("ducklake_metadata version value NULL: tables and stats say the version is NULL", function()
    local C = null_catalog("metadata", "value", 1)
    assert.truthy(ok(run({ "-c", C, "tables" })).err:find("DuckLake catalog version NULL", 1, true))
    assert.truthy(ok(run({ "-c", C, "stats" })).err:find("DuckLake catalog version NULL", 1, true))
  end)

  it("ducklake_metadata value NULL everywhere: files shows the path as NULL", function()
    local C = null_catalog("metadata", "value", nil)
    ok(run({ "-c", C, "files", "events" }))
  end)
end)

describe("COMMENT ON with a NUL byte", function()
  teardown(function() support.cleanup() end)
  it("is EINVAL naming the comment, exit 1, and nothing is committed", function()
    local C = support.tmpdir("cat")
    assert.equal(0, run({ "-c", C, "import", S1 }).code)
    local before = run({ "-c", C, "snapshots", "--json" }).out
    for _, stmt in ipairs({ "COMMENT ON TABLE events IS 'a\0b'", "COMMENT ON COLUMN events.id IS 'a\0b'" }) do
      refused(run({ "-c", C, "sql", "-" }, stmt), "set_comment: comment contains a NUL byte")
    end
    refused(run({ "-c", C, "sql", "-" }, "ALTER TABLE events RENAME COLUMN id TO \"a\0b\""),
      "rename_column: new column name contains a NUL byte")
    assert.equal(before, run({ "-c", C, "snapshots", "--json" }).out)
  end)
end)

describe("repl with an error object whose __tostring raises", function()
  teardown(function() support.cleanup() end)
  it("reports the error and goes on (exit 1 for the failed line), no internal error", function()
    local C = support.tmpdir("cat")
    assert.equal(0, run({ "-c", C, "import", S1 }).code)
    local r = run({ "-c", C, "repl" }, 'error(setmetatable({}, {__tostring = function() error("boom") end}))\n' ..
      'setmetatable({}, {__tostring = function() error("bang") end})\n"after"\n')
    no_internal(r)
    assert.equal(1, r.code, r.show)
    assert.truthy(r.err:find("error: (a table whose __tostring failed: repl:1: boom)", 1, true), r.show)
    assert.truthy(r.out:find("(a table whose __tostring failed: repl:1: bang)", 1, true), r.show)
    assert.truthy(r.out:find('"after"', 1, true), r.show)
  end)
end)
