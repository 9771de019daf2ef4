--- moraine.audit — are a lake's files what their partition values say?
--
-- A DuckLake file stores one partition value per key of the spec it was
-- written under (`ducklake_file_partition_value`), one tuple for all its
-- rows; planners prune whole files by it. The invariant that makes this
-- safe is that every row of the file maps to that tuple under the file's
-- own spec (seed 003: a file whose rows span partitions is a writer bug, and
-- pruning then silently drops rows). The audit checks the invariant from
-- the metadata alone: for every live file and every key of its spec, the
-- partition value against the file's own column bounds
-- (`ducklake_file_column_stats`), parsed and compared by the column's type
-- (moraine.typed), never as text:
--
-- | transform | the file passes when |
-- |---|---|
-- | identity | min = max = value (strings: also when DuckDB cut the bounds to 256 bytes and the value lies between them with min as its prefix) |
-- | year, epoch_day, epoch_hour | transform(min) = transform(max) = value |
-- | month, day, hour | the same, and min and max in the same month / day / hour (these values repeat every year / month / day: when they do not share the period the file is `unchecked`) |
-- | bucket(N) | min = max and bucket(min) = value (int64 and int32 columns; otherwise, or when min < max, `unchecked`) |
-- | any | a NULL value: every row NULL (null_count = record_count, no bounds); a value: no NULL row (null_count = 0) |
--
-- A **violation** is a proof from the metadata that a row of the file lies
-- outside its partition (transform(min) ≠ transform(max), a value outside
-- the bounds, NULL rows under a value) or that the catalog is malformed (a
-- value that does not parse for its transform, a key without a value, an
-- unknown spec). **Unchecked** means the metadata cannot decide: no stats
-- for the column, a bucket of a range, a type with no order here. Advisory
-- only: nothing here is on the serving path.
-- @module moraine.audit

local moraine = require "moraine"
local typed = require "moraine.typed"
local tf = require "moraine.tablefiles"

local M = {}
local NULL = moraine.null
local is_null = tf.is_null

local function quote(s) return "'" .. tostring(s) .. "'" end

-- The check of one key of one file. Returns "ok", or "violation"/"unchecked"
-- and the problem.
local function check_key(file, key, col, value)
  if value == nil then return "violation", "no partition value for key " .. key.index end
  if not col then return "violation", "the spec names column_id " .. key.column_id .. ", which the table never had" end
  local st = file.stats[key.column_id]
  if not st then return "unchecked", "no stats for column " .. quote(col.name) end
  local records = file.records
  if is_null(value) then
    if st.min ~= nil or st.max ~= nil then
      return "violation", "partition value NULL but column " .. quote(col.name) .. " has values (min " ..
        quote(st.min) .. ", max " .. quote(st.max) .. ")"
    end
    if st.null_count == nil then return "unchecked", "NULL partition value and no null_count for " .. quote(col.name) end
    if records == nil then return "unchecked", "NULL partition value and the file's record_count is NULL" end
    if st.null_count ~= records then
      return "violation", "partition value NULL but only " .. st.null_count .. " of " .. records .. " rows are NULL"
    end
    return "ok"
  end
  if st.null_count ~= nil and st.null_count > 0 then
    return "violation", st.null_count .. " row(s) with " .. quote(col.name) .. " NULL under partition value " .. quote(value)
  end
  if st.min == nil or st.max == nil then
    if records ~= nil and st.null_count == records and records > 0 then
      return "violation", "every row has " .. quote(col.name) .. " NULL under partition value " .. quote(value)
    end
    return "unchecked", "no min/max for column " .. quote(col.name)
  end
  local ctype, tr = col.type, key.transform
  if is_null(ctype) then return "unchecked", "the column_type of " .. quote(col.name) .. " is NULL" end
  if not typed.family(ctype) then return "unchecked", "column type " .. quote(ctype) .. " has no order here" end
  -- the bounds parsed once per file and column (a spec may have several keys on one column)
  if st.parsed_as ~= ctype then
    st.parsed_as = ctype
    st.lo, st.lo_err = typed.parse(ctype, st.min)
    st.hi, st.hi_err = typed.parse(ctype, st.max)
  end
  local lo, e1 = st.lo, st.lo_err
  local hi, e2 = st.hi, st.hi_err
  if lo == nil or hi == nil then
    return "unchecked", "stats of " .. quote(col.name) .. " do not parse as " .. ctype .. ": " .. (e1 or e2)
  end
  if tr == "identity" then
    local v, e = typed.parse(ctype, value)
    if v == nil then return "violation", "partition value " .. quote(value) .. " is not a " .. ctype .. ": " .. e end
    local cmin, cmax = typed.compare(ctype, lo, v), typed.compare(ctype, v, hi)
    if cmin > 0 or cmax > 0 then
      return "violation", "partition value " .. quote(value) .. " outside the bounds of " .. quote(col.name) ..
        " (min " .. quote(st.min) .. ", max " .. quote(st.max) .. ")"
    end
    if cmin == 0 and cmax == 0 then return "ok" end
    if typed.family(ctype) == "bytes" and #st.min == #st.max and #value > #st.min and value:sub(1, #st.min) == st.min then
      return "ok" -- DuckDB cut both bounds to the same length: the value fits them
    end
    return "violation", "rows span partitions: " .. quote(col.name) .. " from " .. quote(st.min) .. " to " ..
      quote(st.max) .. " under identity value " .. quote(value)
  end
  if typed.TEMPORAL[tr] then
    local want = tonumber(value)
    if not value:match("^%s*%-?%d+%s*$") or want == nil then
      return "violation", "partition value " .. quote(value) .. " is not an integer, as " .. tr .. "() gives"
    end
    local a, ea = typed.transform(tr, ctype, lo)
    if a == nil then return "unchecked", ea end
    local b = typed.transform(tr, ctype, hi)
    if a ~= b then
      return "violation", "rows span partitions: " .. tr .. "(" .. col.name .. ") is " .. a .. " at min " ..
        quote(st.min) .. " and " .. b .. " at max " .. quote(st.max)
    end
    if a ~= want then
      return "violation", "partition value " .. want .. " but " .. tr .. "(" .. col.name .. ") of every bound is " .. a ..
        " (min " .. quote(st.min) .. ", max " .. quote(st.max) .. ")"
    end
    if typed.period(tr, ctype, lo) ~= typed.period(tr, ctype, hi) then
      return "unchecked", tr .. "(" .. col.name .. ") is " .. a .. " at both bounds, but they lie in different " ..
        (tr == "month" and "years" or tr == "day" and "months" or "days") .. ": rows between may differ"
    end
    return "ok"
  end
  local n = tr:match("^bucket%((%d+)%)$")
  if n then
    n = tonumber(n)
    local want = tonumber(value)
    if not value:match("^%s*%d+%s*$") or want == nil or want >= n then
      return "violation", "partition value " .. quote(value) .. " is not a bucket of " .. tr
    end
    if typed.compare(ctype, lo, hi) ~= 0 then
      return "unchecked", tr .. " of a range (min " .. quote(st.min) .. ", max " .. quote(st.max) .. ") cannot be checked"
    end
    local got, e = typed.bucket(n, ctype, lo)
    if got == nil then return "unchecked", e end
    if got ~= want then
      return "violation", "partition value " .. want .. " but " .. tr .. " of " .. quote(st.min) .. " is " .. got
    end
    return "ok"
  end
  return "unchecked", "transform " .. quote(tr) .. " is not known to the audit"
end

local RANK = { ok = 0, unchecked = 1, violation = 2 }

-- audits one table's files; appends findings
local function audit_table(rd, t, S)
  local cols = tf.columns(rd, t.id)
  local spec_of = tf.spec_lookup(rd, t.id)
  local r = { schema = t.schema, table = t.name, table_id = t.id, files = 0, ok = 0, violations = 0, unchecked = 0,
    unpartitioned = 0, findings = {} }
  tf.each_file(rd, t.id, S, function(f)
    r.files = r.files + 1
    local status = "ok"
    local function note(st, problem, key)
      if RANK[st] > RANK[status] then status = st end
      if st ~= "ok" then
        local c = key and cols[key.column_id]
        r.findings[#r.findings + 1] = { status = st, data_file_id = f.id, path = f.path, partition_id = f.partition_id or NULL,
          key_index = key and key.index or NULL, column = c and c.name or NULL, transform = key and key.transform or NULL,
          value = key and f.values[key.index] or NULL, problem = problem }
      end
    end
    if f.partition_id == nil then
      r.unpartitioned = r.unpartitioned + 1
    else
      local spec = spec_of(f.partition_id)
      if not spec then
        note("violation", "partition_id " .. f.partition_id .. " names no partition spec of the table")
      else
        for idx in pairs(f.values) do
          local known = false
          for _, k in ipairs(spec.keys) do if k.index == idx then known = true end end
          if not known then note("violation", "a partition value for key " .. idx .. ", which spec " .. spec.id .. " does not have") end
        end
        for _, key in ipairs(spec.keys) do
          local st, problem = check_key(f, key, cols[key.column_id], f.values[key.index])
          note(st, problem, key)
        end
      end
    end
    if status == "ok" then r.ok = r.ok + 1
    elseif status == "violation" then r.violations = r.violations + 1
    else r.unchecked = r.unchecked + 1 end
  end)
  return r
end

--- Audits the live files of one table, or of every table, at a snapshot, in
-- one read transaction.
-- @param db a catalog handle (`moraine.open`)
-- @tparam[opt] table opts `table` (a name, `"schema.name"`, `"#ID"` or a
--   table_id; nil: every table live at the snapshot), `at` (snapshot id;
--   nil: the newest)
-- @treturn table `{snapshot = S, files, ok, violations, unchecked (counts of
--   files), tables = {{schema, table, table_id, files, ok, violations,
--   unchecked, unpartitioned, findings = {{status = "violation"|"unchecked",
--   data_file_id, path, partition_id, key_index, column, transform, value,
--   problem}, ...}}, ...}}`; a file counts once, under its worst key; a
--   finding is one key of one file (NULL where it concerns no key)
-- A NULL record_count or column_type leaves the keys that need it
-- "unchecked", saying so; a NULL the audit cannot work without (a column's
-- id or name, a key index, column_id or transform of a partition spec, a
-- partition value's key index, a column statistic's column_id) is EINVAL
-- naming the table, the row's key and the column
-- (moraine.tablefiles.null_error). A table whose name is NULL is audited
-- with the rest (found by its id only).
-- @raise EINVAL (`opts` malformed, `at` not a snapshot of the catalog, a
--   NULL as above), ENOTFOUND (no such table at the snapshot; no snapshot at all), and the
--   read's own errors (ECORRUPT, ELMDB)
function M.run(db, opts)
  opts = opts or {}
  if type(opts) ~= "table" then moraine.core.raise("EINVAL", "audit: opts must be a table") end
  for k in pairs(opts) do
    if k ~= "table" and k ~= "at" then moraine.core.raise("EINVAL", "audit: unknown option '" .. tostring(k) .. "'") end
  end
  return db:read(function(rd)
    local S = tf.snapshot(rd, opts.at)
    local tabs = opts.table ~= nil and { tf.find(rd, S, opts.table) } or tf.tables(rd, S)
    local rep = { snapshot = S, files = 0, ok = 0, violations = 0, unchecked = 0, tables = {} }
    for _, t in ipairs(tabs) do
      local r = audit_table(rd, t, S)
      rep.tables[#rep.tables + 1] = r
      rep.files, rep.ok = rep.files + r.files, rep.ok + r.ok
      rep.violations, rep.unchecked = rep.violations + r.violations, rep.unchecked + r.unchecked
    end
    return rep
  end)
end

--- The check of one key of one file, for tests and other tools.
-- @tparam table file `{records (nil: NULL, unknown), stats = {[column_id] = {min, max, null_count}}}`
-- @tparam table key `{index, column_id, transform}`
-- @tparam table col `{name, type}`
-- @param value the partition value (text or moraine.null)
-- @treturn string "ok", "violation" or "unchecked"
-- @treturn string|nil the problem
M.check_key = check_key

return M
