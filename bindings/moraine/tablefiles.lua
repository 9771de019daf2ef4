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
--
-- NULLs (DuckLake's schema allows NULL in most catalog columns, and
-- moraine keeps rows as written): a value these functions only pass on
-- (a bound, a count, a partition value, a path, a table or schema name)
-- stays NULL (`moraine.null`) or becomes nil, as each function says; a
-- NULL in a value they cannot work without (an id or key index, a
-- column's name, a spec's transform) raises EINVAL naming the table, the
-- row's key and the column, through @{null_error}.
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

--- @a + @b for the sums the reports print (rows, bytes): exact, or EINVAL.
-- Both runtimes add counts as Lua numbers, exact below 2^53 (LuaJIT's are
-- doubles; Lua 5.4's integers would wrap at 2^63 into a negative count):
-- a sum that reaches 2^53 (only a catalog with absurd counts, e.g. a
-- record_count near 2^63) is refused rather than shown wrong.
-- @param a a count (number, or an int64 cdata)
-- @param b a count (number, or an int64 cdata)
-- @tparam string what the column summed, for the message ("record_count")
-- @treturn number the sum
-- @raise EINVAL "the sum of record_count reaches 2^53 ..."
function M.add_count(a, b, what)
  a, b = num(a), num(b)
  local s = a + b
  if s >= 2 ^ 53 or s <= -2 ^ 53 or (b > 0 and s < a) or (b < 0 and s > a) then
    raise("EINVAL", string.format("the sum of %s reaches 2^53 (%s + %s): moraine adds counts exactly only below that; "
      .. "the catalog's counts are not a lake's", what, tostring(a), tostring(b)))
  end
  return s
end

local function key_text(v)
  if is_null(v) then return "NULL" end
  return (tostring(v):gsub("U?LL$", ""))
end

--- Raises the error for a NULL a report cannot work without:
-- EINVAL "`tbl` row (k1=v1, k2=v2) has NULL `col`: cannot `why`".
-- @tparam string tbl the catalog table, e.g. `"ducklake_column"`
-- @tparam table row the row
-- @tparam table keys the names of the row's key columns, e.g. `{"table_id", "column_id"}`
-- @tparam string col the column that is NULL
-- @tparam string why what the NULL prevents
-- @raise always: EINVAL
function M.null_error(tbl, row, keys, col, why)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = k .. "=" .. key_text(row[k]) end
  raise("EINVAL", tbl .. " row (" .. table.concat(parts, ", ") .. ") has NULL " .. col .. ": cannot " .. why)
end

--- `row[col]`, or the error of @{null_error} when it is NULL.
-- @tparam string tbl the catalog table
-- @tparam table row the row
-- @tparam table keys the names of the row's key columns
-- @tparam string col the column read
-- @tparam string why what a NULL would prevent
-- @return the value (never NULL or nil)
-- @raise EINVAL when the value is NULL (or absent)
function M.need(tbl, row, keys, col, why)
  local v = row[col]
  if is_null(v) then M.null_error(tbl, row, keys, col, why) end
  return v
end
local need = M.need

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
-- @treturn table array of `{id = table_id, schema = s, name = s}` in table_id order;
--   a NULL table_name or schema_name is `moraine.null` (such a table is
--   found by its id only), a schema_id naming no live schema gives `"?"`
function M.tables(rd, S)
  local schemas = {}
  for s in rd:scan("ducklake_schema", { at = S }) do schemas[num(s.schema_id)] = s.schema_name end
  local out = {}
  for t in rd:scan("ducklake_table", { at = S }) do
    out[#out + 1] = { id = num(need("ducklake_table", t, { "table_id" }, "table_id", "identify the table")),
      schema = schemas[num(t.schema_id)] or "?", name = t.table_name }
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
--   (a table whose table_name or schema_name is NULL matches no name: it is
--   found by its table_id)
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
    if not is_null(t.schema) and not is_null(t.name) and t.schema .. "." .. t.name == name then return t end
    if t.name == name then
      hits[#hits + 1] = t
      if t.schema == "main" then main = t end
    end
  end
  if #hits == 1 then return hits[1] end
  if main then return main end
  if #hits > 1 then raise("EINVAL", "table name '" .. name .. "' is ambiguous at snapshot " .. S .. ": name it as schema.table") end
  local names = {}
  for _, t in ipairs(tabs) do names[#names + 1] = tostring(t.schema) .. "." .. tostring(t.name) end
  raise("ENOTFOUND", "no table '" .. name .. "' at snapshot " .. S .. " (tables: " ..
    (#names > 0 and table.concat(names, ", ") or "none") .. ")")
end

--- Every column the table ever had, by column_id: the newest version's name
-- and type (a column dropped later keeps the type its files were written with).
-- @param rd a read transaction
-- @tparam integer T the table_id
-- @treturn table column_id -> `{id, name, type, begin (the version's begin_snapshot),
--   parent (true for a STRUCT field)}`; a NULL column_type is `moraine.null`
-- @raise EINVAL (@{null_error}) for a row with a NULL column_id or
--   column_name: the reports name columns by id
function M.columns(rd, T)
  local cols = {}
  local CK = { "table_id", "column_id", "begin_snapshot" }
  for c in rd:scan("ducklake_column", { at = moraine.ALL, table_id = T }) do
    local id = num(need("ducklake_column", c, CK, "column_id", "tell the table's columns apart"))
    need("ducklake_column", c, CK, "column_name", "name the column in a report")
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
-- @raise EINVAL (@{null_error}) for a NULL partition_key_index of a
--   ducklake_file_partition_value row or column_id of a
--   ducklake_file_column_stats row
function M.each_file(rd, T, S, fn)
  local PK, SK = { "table_id", "data_file_id", "partition_key_index" }, { "table_id", "data_file_id", "column_id" }
  for f, ch in rd:scan("ducklake_data_file", { at = S, table_id = T }) do
    local file = { id = num(f.data_file_id), table_id = T, path = f.path,
      records = not is_null(f.record_count) and num(f.record_count) or nil,
      bytes = not is_null(f.file_size_bytes) and num(f.file_size_bytes) or nil, values = {}, stats = {},
      partition_id = not is_null(f.partition_id) and num(f.partition_id) or nil }
    for _, pv in ipairs(ch.ducklake_file_partition_value or {}) do
      file.values[num(need("ducklake_file_partition_value", pv, PK, "partition_key_index",
        "tell which partition key the value is for"))] = pv.partition_value
    end
    for _, st in ipairs(ch.ducklake_file_column_stats or {}) do
      file.stats[num(need("ducklake_file_column_stats", st, SK, "column_id",
        "tell which column the statistics are for"))] = {
        min = not is_null(st.min_value) and st.min_value or nil,
        max = not is_null(st.max_value) and st.max_value or nil,
        null_count = not is_null(st.null_count) and num(st.null_count) or nil,
        value_count = not is_null(st.value_count) and num(st.value_count) or nil,
      }
    end
    fn(file)
  end
end

--- Checks that every file has a record_count: the reports that weigh
-- files by their rows (moraine.layout, moraine.clustering) cannot count a
-- file whose rows are unknown, and do not count it as none.
-- @tparam table files as @{files} gives them
-- @tparam string why what a NULL record_count prevents
-- @treturn table files
-- @raise EINVAL (@{null_error}) naming the first file whose record_count is NULL
function M.need_records(files, why)
  for _, f in ipairs(files) do
    if f.records == nil then
      M.null_error("ducklake_data_file", { table_id = f.table_id, data_file_id = f.id }, { "table_id", "data_file_id" },
        "record_count", why)
    end
  end
  return files
end

--- The live files of table T at S with what the reports need.
-- @param rd a read transaction
-- @tparam integer T the table_id
-- @tparam integer S the snapshot
-- @raise EINVAL as @{each_file}
-- @treturn table array of files in data_file_id order:
--   `{id = data_file_id, table_id, path, records = record_count or nil (NULL),
--   bytes = file_size_bytes or nil (NULL),
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
--   keys = {{index, column_id, transform}, ...} in key order}`; the function
--   raises EINVAL (@{null_error}) for a ducklake_partition_column row with a
--   NULL partition_key_index, column_id or transform
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
        local K, tbl = { "partition_id", "table_id", "partition_key_index" }, "ducklake_partition_column"
        for _, c in ipairs(row.columns or {}) do
          c.partition_id, c.table_id = c.partition_id or pid, c.table_id or T
          keys[#keys + 1] = { index = num(need(tbl, c, K, "partition_key_index", "order the spec's keys")),
            column_id = num(need(tbl, c, K, "column_id", "tell which column the key partitions by")),
            transform = need(tbl, c, K, "transform", "tell how the key partitions") }
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
