--- DuckLake's own answers, recorded beside every fixture (expected/, see
-- tests/fixtures/ducklake/README.md), checked against what moraine serves:
--   snapshots.ndjson   SELECT * FROM ducklake_snapshots('lake'), against the
--                      snapshot rows of the db API and `moraine snapshots --json`;
--   row_counts.ndjson  count(*) of every visible table at every snapshot (DuckLake
--                      read the Parquet files), against the sum of the live data
--                      files' record_count minus the live delete files' delete_count.
-- list_files.ndjson is checked by e2e_fixtures_spec.lua.
local moraine = require "moraine"
local support = require "support"

local N = moraine.null
local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"
local SCENARIOS = { "s1_evolution", "s2_multi_table", "s3_edge_values", "s4_encrypted" }

local function istr(v) return (tostring(v):gsub("U?LL$", "")) end

-- ---- ducklake_snapshots(): the `changes` column ------------------------------
-- DuckLake shows ducklake_snapshot_changes.changes_made as a MAP(VARCHAR,
-- VARCHAR[]) (ducklake_snapshots, DuckLake's functions/ducklake_snapshots.cpp):
-- each entry `kind:value` of changes_made goes under the key below, schema and
-- table names without their quotes unless a name needs them. The fixtures
-- record the map as DuckDB printed it: `{key=[a, b], ...}` (s1-s3) or as JSON
-- (s4).
local CHANGE_KEY = {
  created_schema = "schemas_created",
  created_table = "tables_created",
  created_view = "views_created",
  altered_table = "tables_altered",
  altered_view = "views_altered",
  inserted_into_table = "tables_inserted_into",
  deleted_from_table = "tables_deleted_from",
  dropped_table = "tables_dropped",
  dropped_schema = "schemas_dropped",
  dropped_view = "views_dropped",
  compacted_table = "tables_compacted",
  rewrite_delete = "rewrite_delete",
}

-- Names are compared without double quotes on both sides: DuckLake quotes only
-- names that need it (main."secret"), changes_made quotes every one.
local function unquoted(v) return (v:gsub('"', "")) end

-- A map key -> sorted list of values, rendered as one comparable string.
local function render(map)
  local keys = {}
  for k, vs in pairs(map) do
    table.sort(vs)
    keys[#keys + 1] = k .. "=[" .. table.concat(vs, ", ") .. "]"
  end
  table.sort(keys)
  return "{" .. table.concat(keys, ", ") .. "}"
end

-- changes_made as DuckLake's map; raises on a kind the table above lacks.
local function changes_map(changes_made)
  local map = {}
  if changes_made == N then return render(map) end
  -- entries are separated by commas outside double quotes
  local entries, cur, quoted = {}, {}, false
  for ch in changes_made:gmatch(".") do
    if ch == '"' then quoted = not quoted end
    if ch == "," and not quoted then
      entries[#entries + 1] = table.concat(cur)
      cur = {}
    else
      cur[#cur + 1] = ch
    end
  end
  entries[#entries + 1] = table.concat(cur)
  for _, e in ipairs(entries) do
    local kind, value = e:match("^([%w_]+):(.*)$")
    assert(kind, "changes_made entry without a kind: " .. e)
    local key = assert(CHANGE_KEY[kind], "a change kind the oracle does not map: " .. kind)
    map[key] = map[key] or {}
    table.insert(map[key], unquoted(value))
  end
  return render(map)
end

-- The `changes` text of one expected line, as the same rendering.
local function expected_changes(text)
  local map = {}
  if text:sub(1, 2) == '{"' then
    for k, vs in pairs(moraine.json_decode(text)) do
      map[k] = {}
      for i, v in ipairs(vs) do map[k][i] = unquoted(v) end
    end
  else
    local body = assert(text:match("^{(.*)}$"), "changes: " .. text)
    local rest = body:gsub("([%w_]+)=%[(.-)%]", function(k, list)
      map[k] = {}
      for v in (list .. ", "):gmatch("(.-), ") do map[k][#map[k] + 1] = unquoted(v) end
      return ""
    end)
    assert(rest:gsub("[, ]", "") == "", "unparsed changes text: " .. text)
  end
  return render(map)
end

-- expected/snapshots.ndjson: its `changes` is not JSON in s1-s3; it is cut out
-- and parsed on its own, the rest of the line decoded as JSON.
local function expected_snapshots(scenario)
  local out = {}
  for line in io.lines(support.FIXTURES .. "/" .. scenario .. "/expected/snapshots.ndjson") do
    local head, changes, tail = line:match('^(.-),"changes":(.-),("author":.*)$')
    assert(head, "unexpected line: " .. line)
    local row = moraine.json_decode(head .. "," .. tail)
    row.changes = expected_changes(changes)
    out[#out + 1] = row
  end
  return out
end

local SNAPSHOT_FIELDS = { "snapshot_id", "snapshot_time", "schema_version", "author", "commit_message", "commit_extra_info" }

-- Compares one served snapshot (@got: the fields above plus changes_made) with
-- DuckLake's row @want; returns nil or what differs.
local function snapshot_differs(want, got)
  for _, f in ipairs(SNAPSHOT_FIELDS) do
    if got[f] == nil then return f .. " is not served" end
    if istr(got[f]) ~= istr(want[f]) then
      return ("%s: DuckLake %s, moraine %s"):format(f, istr(want[f]), istr(got[f]))
    end
  end
  local changes = changes_map(got.changes_made)
  if changes ~= want.changes then return ("changes: DuckLake %s, moraine %s"):format(want.changes, changes) end
end

-- Runs `moraine -c DIR snapshots --json` under this busted run's runtime.
local function cli_snapshots(dir)
  local out = support.tmpdir("cli") .. ".json"
  local ok = support.sh(("MORAINE_CATALOG= MORAINE_LUA=%s sh scripts/moraine-dev -c %s snapshots --json > %s 2>&1"):format(
    RUNTIME, support.q(dir), support.q(out)))
  local text = support.read(out)
  os.remove(out)
  assert(ok, "moraine snapshots --json failed:\n" .. text)
  return moraine.json_decode(text)
end

-- ---- row counts ----------------------------------------------------------------
-- The rows of table @table_id at snapshot @s as the catalog knows them: the live
-- data files' record_count minus the live delete files' delete_count. A delete
-- file whose partial_max is above s was rewritten after s (DuckLake merges a
-- file's later deletes into one delete file, docs/ducklake-behaviour.md); the
-- catalog keeps only its total, so the count at s lies in a range:
-- returns the low and high bound (equal when no such file is live).
local function catalog_rows(rd, table_id, s)
  local records, deletes, partial = 0, 0, 0
  for f in rd:scan("ducklake_data_file", { at = s, table_id = table_id }) do records = records + f.record_count end
  for d in rd:scan("ducklake_delete_file", { at = s, table_id = table_id }) do
    if d.partial_max ~= N and d.partial_max > s then partial = partial + d.delete_count
    else deletes = deletes + d.delete_count end
  end
  return records - deletes - partial, records - deletes
end

for _, scenario in ipairs(SCENARIOS) do
  describe("DuckLake's answers for " .. scenario, function()
    local db, dir
    setup(function() db, dir = support.import_fixture(scenario) end)
    teardown(function()
      if db then db:close() end
      support.cleanup()
    end)

    it("ducklake_snapshots(): every snapshot's fields and changes, as the db API reads them", function()
      local want = expected_snapshots(scenario)
      local got = {}
      for _, e in ipairs(db:scan("ducklake_snapshot", { at = moraine.ALL })) do
        local row = {}
        for k, v in pairs(e.row) do row[k] = v end
        local ch = (e.children.ducklake_snapshot_changes or {})[1]
        assert(ch, "snapshot " .. istr(e.row.snapshot_id) .. " has no ducklake_snapshot_changes row")
        for k, v in pairs(ch) do if k ~= "snapshot_id" then row[k] = v end end
        got[#got + 1] = row
      end
      assert.is_true(#want > 0)
      assert.are.equal(#want, #got, "snapshot count")
      for i, w in ipairs(want) do
        local diff = snapshot_differs(w, got[i])
        assert(not diff, "snapshot " .. istr(w.snapshot_id) .. ": " .. tostring(diff))
      end
    end)

    it("ducklake_snapshots(): every snapshot's fields and changes, as `moraine snapshots --json` prints them", function()
      local want = expected_snapshots(scenario)
      local got = cli_snapshots(dir)
      assert.are.equal(#want, #got, "snapshot count")
      for i, w in ipairs(want) do
        local diff = snapshot_differs(w, got[i])
        assert(not diff, "snapshot " .. istr(w.snapshot_id) .. ": " .. tostring(diff))
      end
    end)

    it("count(*) at every snapshot of every visible table: live record_count minus live delete_count", function()
      local want = moraine.read_ndjson(support.FIXTURES .. "/" .. scenario .. "/expected/row_counts.ndjson")
      local exact, ranged = 0, 0
      -- rows inlined into the catalog (ducklake_inlined_data_tables) are in no data
      -- file: the sum holds only for tables without them, which is every table of
      -- the fixtures (DATA_INLINING_ROW_LIMIT 0)
      local inlined = {}
      for _, e in ipairs(db:scan("ducklake_inlined_data_tables")) do inlined[istr(e.row.table_id)] = true end
      assert.are.same({}, inlined)
      db:read(function(rd)
        for _, w in ipairs(want) do
          local s = w.snapshot_id
          local schemas, id = {}, nil
          for r in rd:scan("ducklake_schema", { at = s }) do schemas[istr(r.schema_id)] = r.schema_name end
          for t in rd:scan("ducklake_table", { at = s }) do
            if t.table_name == w.table_name and schemas[istr(t.schema_id)] == w.schema_name then
              assert(id == nil, "two tables " .. w.table_name .. " visible at " .. s)
              id = t.table_id
            end
          end
          local where = ("%s.%s at snapshot %s"):format(w.schema_name, w.table_name, istr(s))
          assert(id, where .. ": DuckLake counted rows of a table moraine does not show")
          local lo, hi = catalog_rows(rd, id, s)
          if lo == hi then
            assert.are.equal(istr(w.row_count), istr(lo), where)
            exact = exact + 1
          else
            assert(lo <= w.row_count and w.row_count <= hi,
              ("%s: DuckLake counted %s, outside the catalog's %s..%s"):format(where, istr(w.row_count), istr(lo), istr(hi)))
            ranged = ranged + 1
          end
        end
      end)
      assert.is_true(exact > 0)
      -- only s1 has a rewritten delete file (partial_max 20, begin 18): snapshots 18 and 19
      assert.are.equal(scenario == "s1_evolution" and 2 or 0, ranged)
      assert.are.equal(#want, exact + ranged)
    end)

    it("every visible table at every snapshot DuckLake answered for has a count", function()
      local want = moraine.read_ndjson(support.FIXTURES .. "/" .. scenario .. "/expected/row_counts.ndjson")
      local counted, first = {}, nil
      for _, w in ipairs(want) do
        counted[istr(w.snapshot_id) .. "|" .. w.schema_name .. "." .. w.table_name] = true
        if not first or w.snapshot_id < first then first = w.snapshot_id end
      end
      local seen = 0
      db:read(function(rd)
        for s = first, rd:last_snapshot() do
          local schemas = {}
          for r in rd:scan("ducklake_schema", { at = s }) do schemas[istr(r.schema_id)] = r.schema_name end
          for t in rd:scan("ducklake_table", { at = s }) do
            local k = istr(s) .. "|" .. schemas[istr(t.schema_id)] .. "." .. t.table_name
            assert(counted[k], "moraine shows " .. k .. ", DuckLake counted no rows for it")
            seen = seen + 1
          end
        end
      end)
      assert.are.equal(#want, seen)
    end)
  end)
end

describe("the snapshot oracle's parsing", function()
  it("maps changes_made entries to DuckLake's keys, quotes and order aside", function()
    assert.are.equal("{tables_altered=[1], tables_inserted_into=[1]}", changes_map("inserted_into_table:1,altered_table:1"))
    assert.are.equal("{tables_created=[a,b.c]}", changes_map('created_table:"a,b"."c"'))
    assert.are.equal(expected_changes("{tables_inserted_into=[1], tables_altered=[1]}"),
      changes_map("altered_table:1,inserted_into_table:1"))
    assert.are.equal(expected_changes('{"tables_created":["main.\\"secret\\""]}'), changes_map('created_table:"main"."secret"'))
    assert.are_not.equal(expected_changes("{tables_altered=[2]}"), changes_map("altered_table:1"))
    assert.has_error(function() changes_map("made_up:1") end)
  end)
end)
