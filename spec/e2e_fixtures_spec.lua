--- End-to-end: every real DuckLake fixture, imported, answers like DuckLake
-- at every snapshot, for every ducklake_* table, and ducklake_list_files.
local moraine = require "moraine"
local support = require "support"

-- child table -> parent table and the columns naming the parent
local PARENT = {
  ducklake_snapshot_changes = { "ducklake_snapshot", { "snapshot_id" } },
  ducklake_partition_column = { "ducklake_partition_info", { "table_id", "partition_id" } },
  ducklake_sort_expression = { "ducklake_sort_info", { "table_id", "sort_id" } },
  ducklake_file_partition_value = { "ducklake_data_file", { "table_id", "data_file_id" } },
  ducklake_file_column_stats = { "ducklake_data_file", { "table_id", "data_file_id" } },
  ducklake_file_variant_stats = { "ducklake_data_file", { "table_id", "data_file_id" } },
}

local function keystr(row, cols)
  local t = {}
  for i, c in ipairs(cols) do t[i] = tostring(row[c]) end
  return table.concat(t, "|")
end

-- The rows of table @name that DuckLake's SQL returns at snapshot s, in the
-- fixture's own row order (the reference, computed without moraine).
local function expected_rows(fx, name, s)
  local rows = fx[name].rows
  local out = {}
  local parent = PARENT[name]
  if parent then
    local live = {}
    for _, p in ipairs(fx[parent[1]].rows) do
      local vis
      if parent[1] == "ducklake_snapshot" then vis = p.snapshot_id <= s else vis = support.visible(p, s) end
      if vis then live[keystr(p, parent[2])] = true end
    end
    for _, r in ipairs(rows) do
      if live[keystr(r, parent[2])] then out[#out + 1] = r end
    end
  elseif name == "ducklake_snapshot" then
    for _, r in ipairs(rows) do
      if r.snapshot_id <= s then out[#out + 1] = r end
    end
  else
    for _, r in ipairs(rows) do
      if support.visible(r, s) then out[#out + 1] = r end
    end
  end
  return out
end

local function by_ord(entries)
  table.sort(entries, function(a, b) return a.ord < b.ord end)
  local rows = {}
  for i, e in ipairs(entries) do rows[i] = e.row end
  return rows
end

local function compare(label, want, got)
  if #want ~= #got then
    return false, string.format("%s: %d rows expected, %d returned", label, #want, #got)
  end
  for i = 1, #want do
    if not support.same_row(want[i], got[i]) then
      return false, string.format("%s: row %d differs:\n  expected %s\n  returned %s", label, i, support.show(want[i]),
        support.show(got[i]))
    end
  end
  return true
end

local function load_fixture(scenario)
  local dir = support.FIXTURES .. "/" .. scenario .. "/catalog"
  local fx, max_snap = {}, 0
  for _, name in ipairs(support.tables_of(dir)) do
    local rows, cols = moraine.read_ndjson(dir .. "/" .. name .. ".ndjson")
    fx[name] = { rows = rows, cols = cols }
  end
  for _, r in ipairs(fx.ducklake_snapshot.rows) do
    if r.snapshot_id > max_snap then max_snap = r.snapshot_id end
  end
  return fx, max_snap
end

-- DuckLake's ducklake_list_files answer, rebuilt from moraine's reads.
local function list_files(rd, s, data_path)
  local out = {}
  local schemas = {}
  for row in rd:scan("ducklake_schema", { at = s }) do schemas[row.schema_id] = row end
  local function join(base, row)
    if row.path_is_relative then return base .. row.path end
    return row.path
  end
  for t in rd:scan("ducklake_table", { at = s }) do
    local schema = schemas[t.schema_id]
    local tpath = join(join(data_path, schema), t)
    local deletes = {}
    for d in rd:scan("ducklake_delete_file", { at = s, table_id = t.table_id }) do deletes[d.data_file_id] = d end
    for f in rd:files(t.table_id, s) do
      local d = deletes[f.data_file_id]
      local function str(v) return v == moraine.null and "NULL" or tostring(v) end
      out[#out + 1] = table.concat({ schema.schema_name, t.table_name, join(tpath, f), str(f.file_size_bytes),
        str(f.footer_size), str(f.encryption_key), d and join(tpath, d) or "NULL", d and str(d.file_size_bytes) or "NULL",
        d and str(d.footer_size) or "NULL", d and str(d.encryption_key) or "NULL" }, "|")
    end
  end
  return out
end

for _, scenario in ipairs(support.SCENARIOS) do
  describe("fixture " .. scenario, function()
    local fx, max_snap, db
    setup(function()
      fx, max_snap = load_fixture(scenario)
      db = support.import_fixture(scenario)
    end)
    teardown(function()
      if db then db:close() end
      support.cleanup()
    end)

    it("holds every table of the catalog with the catalog's columns in order", function()
      for name, t in pairs(fx) do
        local info = db:relation(name)
        assert.is_not_nil(info, name)
        if #t.cols > 0 then assert.same(t.cols, info.columns) end
      end
    end)

    it("returns every row of every table, all versions, in the catalog's row order", function()
      for name, t in pairs(fx) do
        local ok, msg = compare(name .. " (all versions)", t.rows, by_ord(db:scan(name, { at = moraine.ALL })))
        assert(ok, msg)
      end
    end)

    it("returns at every snapshot exactly the rows of DuckLake's temporal filter, for every table", function()
      local checked = 0
      for s = 0, max_snap do
        for name in pairs(fx) do
          local ok, msg = compare(name .. " at snapshot " .. s, expected_rows(fx, name, s), by_ord(db:scan(name, { at = s })))
          assert(ok, msg)
          checked = checked + 1
        end
      end
      assert.is_true(checked >= 29 * (max_snap + 1))
    end)

    it("answers ducklake_list_files like DuckLake for every table at every snapshot", function()
      local expected = {}
      for _, r in ipairs((moraine.read_ndjson(support.FIXTURES .. "/" .. scenario .. "/expected/list_files.ndjson"))) do
        local function str(v) return v == moraine.null and "NULL" or tostring(v) end
        local line = table.concat({ r.schema_name, r.table_name, r.data_file, str(r.data_file_size_bytes),
          str(r.data_file_footer_size), str(r.data_file_encryption_key), str(r.delete_file), str(r.delete_file_size_bytes),
          str(r.delete_file_footer_size), str(r.delete_file_encryption_key) }, "|")
        local s = r.snapshot_id
        expected[s] = expected[s] or {}
        table.insert(expected[s], line)
      end
      local data_path
      for _, m in ipairs(fx.ducklake_metadata.rows) do
        if m.key == "data_path" and m.scope == moraine.null then data_path = m.value end
      end
      assert.is_string(data_path)
      db:read(function(rd)
        for s = 0, max_snap do
          local want, got = expected[s] or {}, list_files(rd, s, data_path)
          table.sort(want)
          table.sort(got)
          assert.same(want, got, "list_files at snapshot " .. s)
        end
      end)
    end)

    it("gives each data file its own partition spec by partition_id, whatever its lifetime", function()
      db:read(function(rd)
        for _, f in ipairs(fx.ducklake_data_file.rows) do
          if f.partition_id ~= moraine.null then
            local spec = rd:partition_spec_by_id(f.table_id, f.partition_id)
            assert.is_not_nil(spec, "spec " .. tostring(f.partition_id))
            local nvals = 0
            for _, v in ipairs(fx.ducklake_file_partition_value.rows) do
              if v.data_file_id == f.data_file_id then nvals = nvals + 1 end
            end
            assert.equal(#spec.columns, nvals, "file " .. tostring(f.data_file_id))
          end
        end
      end)
    end)

    it("exports the catalog back byte for byte", function()
      local out = support.tmpdir("export")
      db:export_ndjson(out)
      local dir = support.FIXTURES .. "/" .. scenario .. "/catalog"
      for _, name in ipairs(support.tables_of(dir)) do
        assert.equal(support.read(dir .. "/" .. name .. ".ndjson"), support.read(out .. "/" .. name .. ".ndjson"), name)
      end
    end)
  end)
end
