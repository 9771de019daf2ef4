--- Helpers for the specs that need a real PostgreSQL: a throwaway server
-- (tests/pg/pg-server.sh) and a loader that puts a DuckLake catalog (an NDJSON
-- fixture) into it with DuckLake's schema, whole or as it stood after a given
-- snapshot.
--
-- Column types are DuckLake's (moraine.sqlite's `types` and `columns`, one
-- list for both SQL back ends): BIGINT, BIGINT PRIMARY KEY, VARCHAR, VARCHAR
-- NOT NULL, BOOLEAN, UUID, TIMESTAMP WITH TIME ZONE. The session runs with
-- TimeZone UTC, so a TIMESTAMPTZ reads back as DuckDB's NDJSON writes it
-- ("2026-11-30 15:51:38.293717+00").
local moraine = require "moraine"
local sqlite = require "moraine.sqlite"
local support = require "support"

local NULL = moraine.null

local pg = {}

--- Starts a server (tests/pg/pg-server.sh start) with its directory in
-- $TMPDIR. Returns a table
-- `{conninfo = "host=127.0.0.1 port=N dbname=postgres user=moraine", dir =,
-- stop = function}`; raises an error carrying the script's own explanation
-- when the server cannot start (nothing is skipped).
function pg.start()
  -- not under support.tmpdir: support.cleanup() (after each test) must not
  -- remove the server's directory while it runs
  local t = os.tmpname()
  os.remove(t)
  local tmp = os.getenv("TMPDIR")
  local dir = ((tmp and tmp ~= "") and tmp or "/tmp") .. "/moraine-pg-" .. t:match("([^/]*)$")
  local errf = dir .. ".err"
  local p = assert(io.popen("sh tests/pg/pg-server.sh start " .. support.q(dir) .. " 2>" .. support.q(errf)))
  local conninfo = p:read("*l")
  local ok = p:close()
  local err = ""
  local f = io.open(errf, "rb")
  if f then
    err = f:read("a")
    f:close()
    os.remove(errf)
  end
  if not ok or not conninfo then error("PostgreSQL did not start: " .. err, 2) end
  return {
    conninfo = conninfo,
    dir = dir,
    stop = function() return support.sh("sh tests/pg/pg-server.sh stop " .. support.q(dir)) end,
  }
end

--- A LuaSQL connection to the server (`luasql.postgres`), its session in UTC.
function pg.connect(conninfo)
  local env = require("luasql.postgres").postgres()
  local con = assert(env:connect(conninfo))
  assert(con:execute("SET TimeZone = 'UTC'"))
  return { env = env, con = con, close = function(self)
    self.con:close()
    self.env:close()
  end }
end

local function int_text(v)
  if type(v) == "cdata" then return (tostring(v):gsub("U?LL$", "")) end
  if math.type then return tostring(v) end
  return string.format("%.0f", v)
end

local function literal(v)
  if v == nil or v == NULL then return "NULL" end
  local t = type(v)
  if t == "boolean" then return v and "TRUE" or "FALSE" end
  if t == "table" and v.json then v = v.json end
  if type(v) == "string" then return "'" .. v:gsub("'", "''") .. "'" end
  if type(v) == "cdata" or (math.type and math.type(v) == "integer") or v == math.floor(v) then return int_text(v) end
  return string.format("%.17g", v)
end

local function exec(c, sql)
  local r, err = c.con:execute(sql)
  if not r then error("PostgreSQL: " .. tostring(err) .. " in: " .. sql:sub(1, 300), 2) end
  return r
end
pg.exec = exec

local function le(a, k) return a ~= NULL and moraine.int64(a) <= moraine.int64(k) end

--- The rows of a fixture's tables as DuckLake left them right after snapshot
-- @upto (nil: all): snapshots and their changes up to it, versioned rows
-- begun by then (an end after it read as NULL: not ended yet), child rows
-- whose parent is there; the other tables whole. Returns {name -> {columns =,
-- rows =}} and the names in order.
function pg.fixture_state(dir, upto)
  local tables, names = {}, {}
  for _, name in ipairs(support.tables_of(dir)) do
    local rows, cols = moraine.read_ndjson(dir .. "/" .. name .. ".ndjson")
    if #cols == 0 then cols = sqlite.columns[name] or {} end
    tables[name] = { columns = cols, rows = rows }
    names[#names + 1] = name
  end
  if upto then
    local kept = {}
    for _, name in ipairs(names) do
      local t, out = tables[name], {}
      local has = {}
      for _, c in ipairs(t.columns) do has[c] = true end
      for _, r in ipairs(t.rows) do
        if name == "ducklake_snapshot" or name == "ducklake_snapshot_changes" then
          if le(r.snapshot_id, upto) then out[#out + 1] = r end
        elseif has.begin_snapshot then
          if le(r.begin_snapshot, upto) then
            local c = {}
            for k, v in pairs(r) do c[k] = v end
            if has.end_snapshot and c.end_snapshot ~= NULL and not le(c.end_snapshot, upto) then c.end_snapshot = NULL end
            out[#out + 1] = c
          end
        else
          out[#out + 1] = r
        end
      end
      kept[name] = out
    end
    -- children: only those whose parent is there
    local parents = {
      ducklake_file_column_stats = "ducklake_data_file", ducklake_file_variant_stats = "ducklake_data_file",
      ducklake_file_partition_value = "ducklake_data_file", ducklake_partition_column = "ducklake_partition_info",
      ducklake_sort_expression = "ducklake_sort_info",
    }
    local keycol = { ducklake_data_file = "data_file_id", ducklake_partition_info = "partition_id",
      ducklake_sort_info = "sort_id" }
    for child, parent in pairs(parents) do
      if kept[child] and kept[parent] then
        local present = {}
        for _, p in ipairs(kept[parent]) do present[int_text(p.table_id) .. "/" .. int_text(p[keycol[parent]])] = true end
        local out = {}
        for _, r in ipairs(kept[child]) do
          if present[int_text(r.table_id) .. "/" .. int_text(r[keycol[parent]])] then out[#out + 1] = r end
        end
        kept[child] = out
      end
    end
    for _, name in ipairs(names) do tables[name].rows = kept[name] end
  end
  return tables, names
end

--- Loads fixture directory @dir (NDJSON) into the server as DuckLake's
-- tables, in one transaction: the tables are created when missing (DuckLake's
-- types), emptied and filled with the fixture's state after snapshot @upto
-- (nil: the whole catalog; see fixture_state). A reader in REPEATABLE READ sees
-- the state before or after, never a mix. Returns the number of rows written.
function pg.load(c, dir, upto)
  local tables, names = pg.fixture_state(dir, upto)
  local n = 0
  exec(c, "BEGIN")
  for _, name in ipairs(names) do
    local t = tables[name]
    local types = sqlite.types[name] or {}
    local defs = {}
    for i, col in ipairs(t.columns) do defs[i] = '"' .. col .. '" ' .. (types[col] or "VARCHAR") end
    exec(c, "CREATE TABLE IF NOT EXISTS " .. name .. " (" .. table.concat(defs, ", ") .. ")")
    exec(c, "DELETE FROM " .. name)
    local batch = {}
    local function flush()
      if #batch > 0 then
        exec(c, "INSERT INTO " .. name .. " VALUES " .. table.concat(batch, ", "))
        batch = {}
      end
    end
    for _, r in ipairs(t.rows) do
      local vals = {}
      for i, col in ipairs(t.columns) do vals[i] = literal(r[col]) end
      batch[#batch + 1] = "(" .. table.concat(vals, ", ") .. ")"
      n = n + 1
      if #batch >= 200 then flush() end
    end
    flush()
  end
  exec(c, "COMMIT")
  return n
end

--- The setup and teardown of a PostgreSQL server for a busted describe
-- block, to pass to lazy_setup and lazy_teardown (busted's functions are the
-- spec file's, not this module's): setup starts a server and connects to it,
-- giving both to @set(server, connection); teardown closes and stops them.
function pg.server_hooks(set)
  local server, c
  local function setup()
    server = pg.start()
    c = pg.connect(server.conninfo)
    set(server, c)
  end
  local function teardown()
    if c then c:close() end
    if server then assert(server.stop(), "the PostgreSQL server did not stop") end
  end
  return setup, teardown
end

--- The tables of fixture catalog @dir as it stood after snapshot @upto (as
-- fixture_state), in the form db:import_rows takes (rows as arrays in column
-- order); a row for which @drop(name, row) is true is left out.
function pg.fixture_tables(dir, upto, drop)
  local state, names = pg.fixture_state(dir, upto)
  local tables = {}
  for _, name in ipairs(names) do
    local t = state[name]
    local rows = {}
    for _, r in ipairs(t.rows) do
      if not (drop and drop(name, r)) then
        local row = {}
        for i, c in ipairs(t.columns) do row[i] = r[c] end
        rows[#rows + 1] = row
      end
    end
    tables[#tables + 1] = { name = name, columns = t.columns, rows = rows }
  end
  return tables
end

return pg
