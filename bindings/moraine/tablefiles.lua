--- moraine.tablefiles — what the layout reports read: a table's live files
-- at a snapshot with their partition spec, partition values and column
-- bounds, through one read transaction (`rd`, from `db:read`).
--
-- Shared by moraine.audit, moraine.layout and moraine.clustering; every
-- number they report comes from the rows gathered here
-- (`ducklake_data_file`, its embedded `ducklake_file_partition_value` and
-- `ducklake_file_column_stats`, `ducklake_partition_info` with its
-- `ducklake_partition_column` rows, `ducklake_column`, `ducklake_table`,
-- `ducklake_schema`), never from the data files.
-- @module moraine.tablefiles

local moraine = require "moraine"

local M = {}
local NULL = moraine.null
local raise = moraine.core.raise

--- Whether a value is SQL NULL (`moraine.null`) or absent (nil).
-- @param v any value
-- @treturn boolean
function M.is_null(v) return v == nil or v == NULL end
local is_null = M.is_null

--- A catalog integer (a Lua integer, or on LuaJIT an int64_t cdata) as a
-- plain Lua number: ids and counts of a catalog are far below 2^53.
-- @param v an integer value (a string of digits is read too)
-- @treturn number|nil the number, nil when `v` is not an integer
function M.num(v) return tonumber(v) or tonumber(tostring(v):match("^(-?%d+)")) end
local num = M.num

--- The snapshot a report reads: `at` checked against the read's snapshots.
-- @param rd a read transaction
-- @tparam[opt] integer at a snapshot id (nil: the newest)
-- @treturn integer the snapshot
-- @raise ENOTFOUND when the catalog holds no snapshot, EINVAL when `at` is
--   not an integer or is above the newest snapshot
function M.snapshot(rd, at)
  local last = rd:last_snapshot()
  if last == nil then raise("ENOTFOUND", "the catalog holds no snapshot") end
  if at == nil then return num(last) end
  if type(at) ~= "number" or at ~= math.floor(at) then raise("EINVAL", "at: a snapshot id (an integer) expected") end
  if at < 0 or at > num(last) then
    raise("EINVAL", "snapshot " .. at .. " is not in the catalog (last snapshot " .. tostring(last) .. ")")
  end
  return at
end

--- The tables live at snapshot S.
-- @param rd a read transaction
-- @tparam integer S the snapshot
-- @treturn table array of `{id = table_id, schema = s, name = s}` in table_id order
function M.tables(rd, S)
  local schemas = {}
  for s in rd:scan("ducklake_schema", { at = S }) do schemas[num(s.schema_id)] = s.schema_name end
  local out = {}
  for t in rd:scan("ducklake_table", { at = S }) do
    out[#out + 1] = { id = num(t.table_id), schema = schemas[num(t.schema_id)] or "?", name = t.table_name }
  end
  table.sort(out, function(a, b) return a.id < b.id end)
  return out
end

--- Finds one table live at S by name.
-- @param rd a read transaction
-- @tparam integer S the snapshot
-- @param name `"table"` (unique among the schemas, or in schema main),
--   `"schema.table"`, `"#ID"`, or a table_id (integer)
-- @treturn table `{id, schema, name}`
-- @raise ENOTFOUND naming the table and the snapshot (and the tables there),
--   EINVAL for an ambiguous name or a name that is not a string or integer
function M.find(rd, S, name)
  local tabs = M.tables(rd, S)
  local id = type(name) == "number" and name or (type(name) == "string" and tonumber(name:match("^#(%d+)$")))
  if id then
    for _, t in ipairs(tabs) do if t.id == id then return t end end
    raise("ENOTFOUND", "no table with table_id " .. id .. " at snapshot " .. S)
  end
  if type(name) ~= "string" then raise("EINVAL", "table: a name, \"schema.name\", \"#ID\" or a table_id expected") end
  local hits, main = {}, nil
  for _, t in ipairs(tabs) do
    if t.schema .. "." .. t.name == name then return t end
    if t.name == name then
      hits[#hits + 1] = t
      if t.schema == "main" then main = t end
    end
  end
  if #hits == 1 then return hits[1] end
  if main then return main end
  if #hits > 1 then raise("EINVAL", "table name '" .. name .. "' is ambiguous at snapshot " .. S .. ": name it as schema.table") end
  local names = {}
  for _, t in ipairs(tabs) do names[#names + 1] = t.schema .. "." .. t.name end
  raise("ENOTFOUND", "no table '" .. name .. "' at snapshot " .. S .. " (tables: " ..
    (#names > 0 and table.concat(names, ", ") or "none") .. ")")
end

--- Every column the table ever had, by column_id: the newest version's name
-- and type (a column dropped later keeps the type its files were written with).
-- @param rd a read transaction
-- @tparam integer T the table_id
-- @treturn table column_id -> `{id, name, type, begin (the version's begin_snapshot),
--   parent (true for a STRUCT field)}`
function M.columns(rd, T)
  local cols = {}
  for c in rd:scan("ducklake_column", { at = moraine.ALL, table_id = T }) do
    local id = num(c.column_id)
    local old = cols[id]
    if not old or num(c.begin_snapshot) >= old.begin then
      cols[id] = { id = id, name = c.column_name, type = c.column_type, begin = num(c.begin_snapshot),
        parent = not is_null(c.parent_column) }
    end
  end
  return cols
end

--- Calls `fn(file)` for each live file of table T at S, in data_file_id
-- order, one at a time (nothing is kept: an audit of a million files holds
-- one file's rows at a time).
-- @param rd a read transaction
-- @tparam integer T the table_id
-- @tparam integer S the snapshot
-- @tparam function fn called with each file, shaped as `files` gives them
function M.each_file(rd, T, S, fn)
  for f, ch in rd:scan("ducklake_data_file", { at = S, table_id = T }) do
    local file = { id = num(f.data_file_id), path = f.path, records = num(f.record_count) or 0,
      bytes = num(f.file_size_bytes) or 0, values = {}, stats = {},
      partition_id = not is_null(f.partition_id) and num(f.partition_id) or nil }
    for _, pv in ipairs(ch.ducklake_file_partition_value or {}) do
      file.values[num(pv.partition_key_index)] = pv.partition_value
    end
    for _, st in ipairs(ch.ducklake_file_column_stats or {}) do
      file.stats[num(st.column_id)] = {
        min = not is_null(st.min_value) and st.min_value or nil,
        max = not is_null(st.max_value) and st.max_value or nil,
        null_count = not is_null(st.null_count) and num(st.null_count) or nil,
        value_count = not is_null(st.value_count) and num(st.value_count) or nil,
      }
    end
    fn(file)
  end
end

--- The live files of table T at S with what the reports need.
-- @param rd a read transaction
-- @tparam integer T the table_id
-- @tparam integer S the snapshot
-- @treturn table array of files in data_file_id order:
--   `{id = data_file_id, path, records = record_count, bytes = file_size_bytes,
--   partition_id = integer or nil (NULL: written unpartitioned),
--   values = {[key_index] = text or moraine.null},
--   stats = {[column_id] = {min = text or nil, max = text or nil,
--   null_count = integer or nil, value_count = integer or nil}}}`
function M.files(rd, T, S)
  local out = {}
  M.each_file(rd, T, S, function(file) out[#out + 1] = file end)
  -- the scan gives key order (table_id, data_file_id): sort only if not
  for i = 2, #out do
    if out[i - 1].id > out[i].id then
      table.sort(out, function(a, b) return a.id < b.id end)
      break
    end
  end
  return out
end

--- A partition spec by id (whatever its lifetime), cached per report.
-- @param rd a read transaction
-- @tparam integer T the table_id
-- @treturn function `spec(partition_id)` -> nil or `{id, begin, end_ (nil when live),
--   keys = {{index, column_id, transform}, ...} in key order}`
function M.spec_lookup(rd, T)
  local cache = {}
  return function(pid)
    if pid == nil then return nil end
    if cache[pid] == nil then
      local row = rd:partition_spec_by_id(T, pid)
      if not row then
        cache[pid] = false
      else
        local keys = {}
        for _, c in ipairs(row.columns or {}) do
          keys[#keys + 1] = { index = num(c.partition_key_index), column_id = num(c.column_id), transform = c.transform }
        end
        table.sort(keys, function(a, b) return a.index < b.index end)
        cache[pid] = { id = pid, begin = num(row.begin_snapshot),
          end_ = not is_null(row.end_snapshot) and num(row.end_snapshot) or nil, keys = keys }
      end
    end
    return cache[pid] or nil
  end
end

--- A spec's keys in DuckLake's SQL form, e.g. `"year(ts), bucket(4, id)"`.
-- @tparam table spec as `spec_lookup` returns it
-- @tparam table cols as `columns` returns it
-- @treturn string the keys ("" for a zero-key spec)
function M.spec_sql(spec, cols)
  local parts = {}
  for i, k in ipairs(spec.keys) do
    local c = cols[k.column_id]
    local name = c and c.name or ("#" .. k.column_id)
    local n = k.transform:match("^bucket%((%d+)%)$")
    if k.transform == "identity" then parts[i] = name
    elseif n then parts[i] = "bucket(" .. n .. ", " .. name .. ")"
    else parts[i] = k.transform .. "(" .. name .. ")" end
  end
  return table.concat(parts, ", ")
end

return M
