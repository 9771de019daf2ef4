-- moraine.push into a real PostgreSQL DuckLake catalog: the server the sync
-- suite starts (tests/pg/pg-server.sh through spec/pg_support.lua), each
-- fixture loaded into it with DuckLake's column types and synced from it
-- into a new moraine catalog (moraine.sync), the example migrations run in moraine as
-- verbs, pushed, and the server's tables read back with plain SQL: every
-- table equal to moraine's, and DuckLake's SQL filter at every snapshot giving
-- moraine's rows. A DuckLake-shaped snapshot appended by a second connection
-- during the push exercises the conflict; a value PostgreSQL text cannot hold
-- is refused with nothing written.
local moraine = require "moraine"
local push = require "moraine.push"
local sync = require "moraine.sync"
local support = require "support"
local pg = require "pg_support"
local push_support = require "push_support"

local N = moraine.null
local FIX = support.FIXTURES

local function istr(v)
  if type(v) == "number" and not math.type then return string.format("%.0f", v) end
  return (tostring(v):gsub("U?LL$", ""))
end

-- a value as text: moraine's side as PostgreSQL's ::text writes it
local function vkey(v)
  if v == nil or v == N then return "NULL" end
  if type(v) == "boolean" then return v and "true" or "false" end
  if type(v) == "table" and v.json then return "'" .. v.json .. "'" end
  if type(v) == "string" then return "'" .. v .. "'" end
  return istr(v)
end

local function pg_columns(c, name)
  local cur = assert(c.con:execute("SELECT column_name, data_type FROM information_schema.columns WHERE "
    .. "table_schema = current_schema() AND table_name = '" .. name .. "' ORDER BY ordinal_position"))
  local out, types = {}, {}
  local r = cur:fetch({}, "n")
  while r do
    out[#out + 1] = r[1]
    types[r[1]] = r[2]
    r = cur:fetch({}, "n")
  end
  cur:close()
  return out, types
end

-- sorted row texts of a plain SELECT (every column ::text, NULL as NULL)
local function pg_rows(c, name, cols, types, where)
  local sel = {}
  for i, col in ipairs(cols) do sel[i] = '"' .. col .. '"::text' end
  local cur = assert(c.con:execute("SELECT " .. table.concat(sel, ", ") .. " FROM " .. name
    .. (where and (" WHERE " .. where) or "")))
  local out = {}
  local r = cur:fetch({}, "n")
  while r do
    local parts = {}
    for i = 1, #cols do
      local v = r[i]
      if v == nil then parts[i] = "NULL"
      elseif types[cols[i]] == "boolean" or types[cols[i]] == "bigint" then parts[i] = v -- true/false, digits
      else parts[i] = "'" .. v .. "'" end
    end
    out[#out + 1] = table.concat(parts, "|")
    r = cur:fetch({}, "n")
  end
  cur:close()
  table.sort(out)
  return out
end

-- PostgreSQL writes a timestamptz's microseconds without trailing zeros (as
-- DuckDB does); moraine's verbs write six digits
local function trim_micros(v)
  if type(v) ~= "string" then return v end
  return (v:gsub("(%.%d-)0+([%+%-])", "%1%2"):gsub("%.([%+%-])", "%1"))
end

local function moraine_rows(entries, cols, types)
  local out = {}
  for _, e in ipairs(entries) do
    local row = e.row or e
    local parts = {}
    for i, col in ipairs(cols) do
      local v = row[col]
      if types[col] == "timestamp with time zone" then v = trim_micros(v) end
      parts[i] = vkey(v)
    end
    out[#out + 1] = table.concat(parts, "|")
  end
  table.sort(out)
  return out
end

local function same_list(a, b, what)
  assert.are.equal(#b, #a, what .. ": row count")
  for i = 1, #a do
    if a[i] ~= b[i] then assert.are.equal(b[i], a[i], what .. ": row " .. i) end
  end
end

local function check_target(db, c)
  local last = db:last_snapshot()
  for _, rel in ipairs(db:relations()) do
    local cols, types = pg_columns(c, rel.name)
    assert.is_true(#cols > 0, "PostgreSQL has table " .. rel.name)
    same_list(pg_rows(c, rel.name, cols, types), moraine_rows(db:scan(rel.name, { at = moraine.ALL }), cols, types),
      rel.name)
    local has = {}
    for _, col in ipairs(cols) do has[col] = true end
    if rel.placement ~= "child" and has.begin_snapshot and has.end_snapshot then
      for s = 0, last do
        local S = tostring(s)
        same_list(pg_rows(c, rel.name, cols, types, "begin_snapshot <= " .. S .. " AND (end_snapshot IS NULL OR "
          .. S .. " < end_snapshot)"), moraine_rows(db:scan(rel.name, { at = s }), cols, types),
          rel.name .. " at " .. S)
      end
    end
  end
end

local function count(c, sql)
  local cur = assert(c.con:execute(sql))
  local n = tonumber((cur:fetch()))
  cur:close()
  return n
end

describe("moraine.push into PostgreSQL", function()
  local server, c
  lazy_setup(function()
    server = pg.start()
    c = pg.connect(server.conninfo)
  end)
  lazy_teardown(function()
    if c then c:close() end
    if server then server.stop() end
  end)
  after_each(function() support.cleanup() end)

  for _, scenario in ipairs({ "s1_evolution", "s2_multi_table", "s3_edge_values" }) do
    it("pushes the example migrations on " .. scenario .. ": the server's tables equal moraine at every snapshot",
      function()
        pg.load(c, FIX .. "/" .. scenario .. "/catalog")
        -- the admin workflow: sync from the server, migrate, push
        local db = moraine.open(support.tmpdir("synced"), { no_sync = true })
        sync.sync(db, "postgres:" .. server.conninfo)
        local before = db:last_snapshot()
        local snaps = push_support.migrate(db)
        local r = push.push(db, "postgres:" .. server.conninfo)
        assert.are.equal(istr(before), istr(r.from))
        assert.are.equal(#snaps, r.snapshots)
        assert.are.equal(istr(db:last_snapshot()), istr(r.to))
        check_target(db, c)
        assert.are.equal(1, count(c, "SELECT count(*) FROM ducklake_data_file WHERE path = 'h1.parquet' AND "
          .. "file_size_bytes = 9223372036854775807"))
        assert.are.equal(1, count(c, "SELECT count(*) FROM ducklake_snapshot_changes WHERE snapshot_id = "
          .. istr(snaps[5]) .. " AND author IS NULL AND commit_message = ''"))
        assert.are.equal(0, push.push(db, "postgres:" .. server.conninfo).snapshots)
        db:close()
      end)
  end

  it("refuses when another connection appended a DuckLake snapshot during the push: table and snapshot named", function()
    pg.load(c, FIX .. "/s1_evolution/catalog")
    local db = support.import_fixture("s1_evolution")
    local snaps = push_support.migrate(db)
    local w = pg.connect(server.conninfo)
    local e = support.expect_err("ECONFLICT", { "moved on", "events_2024", "altered_table" }, push.push, db,
      "postgres:" .. server.conninfo, { progress = function(done, _, s)
        if done == 1 then
          local tid = db:read(function(rd) return rd:table_id(nil, "events_2024") end)
          local nid = istr(s + 1)
          pg.exec(w, "BEGIN")
          pg.exec(w, "INSERT INTO ducklake_snapshot SELECT " .. nid .. ", now(), schema_version + 1, next_catalog_id, "
            .. "next_file_id FROM ducklake_snapshot WHERE snapshot_id = " .. istr(s))
          pg.exec(w, "INSERT INTO ducklake_snapshot_changes VALUES (" .. nid .. ", 'altered_table:" .. istr(tid)
            .. "', NULL, NULL, NULL)")
          pg.exec(w, "COMMIT")
        end
      end })
    assert.truthy(e.message:find("snapshot " .. istr(snaps[1] + 1), 1, true), e.message)
    assert.are.equal(2, count(c, "SELECT count(*) FROM ducklake_snapshot WHERE snapshot_id >= " .. istr(snaps[1])))
    assert.are.equal(2, count(c, "SELECT count(*) FROM ducklake_snapshot_changes WHERE snapshot_id >= "
      .. istr(snaps[1])))
    w:close()
    db:close()
  end)

  it("refuses a NUL byte or invalid UTF-8 PostgreSQL text cannot hold, naming table and column, writing nothing",
    function()
      for _, bad in ipairs({ "a\0b", "caf\xe9" }) do
        pg.load(c, FIX .. "/s1_evolution/catalog")
        local db = support.import_fixture("s1_evolution")
        local last = db:last_snapshot()
        local S = last + 1
        local prev = db:scan("ducklake_snapshot", { at = last })
        local snap
        for _, en in ipairs(prev) do if en.row.snapshot_id == last then snap = en.row end end
        db:commit(S, function(tx)
          tx:insert("ducklake_snapshot", { snapshot_id = S, snapshot_time = "2026-12-01 00:00:00+00",
            schema_version = snap.schema_version, next_catalog_id = snap.next_catalog_id,
            next_file_id = snap.next_file_id })
          tx:insert("ducklake_snapshot_changes", { snapshot_id = S, changes_made = "altered_table:1", author = N,
            commit_message = N, commit_extra_info = N })
          tx:insert("ducklake_tag", { object_id = 1, begin_snapshot = S, end_snapshot = N, key = "k", value = bad })
        end)
        local n0 = count(c, "SELECT count(*) FROM ducklake_snapshot")
        support.expect_err("EINVAL", { "ducklake_tag.value", "PostgreSQL text cannot hold", "snapshot " .. istr(S) },
          push.push, db, "postgres:" .. server.conninfo)
        assert.are.equal(n0, count(c, "SELECT count(*) FROM ducklake_snapshot"))
        db:close()
      end
    end)
end)
