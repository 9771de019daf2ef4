--- moraine.layout — what a mixed layout costs one query (seed 003).
--
-- After a partition evolution a table holds files written under several
-- specs ("eras"). A planner prunes each era at its own granularity: a
-- predicate on the source column narrows the files of a `day` era to days
-- and those of an `hour` era to hours, and the coarse era's files that
-- survive are read whole. For a range predicate `col BETWEEN a AND b` this
-- module counts, per era and from the metadata alone, the live files and
-- rows
--
-- 1. before pruning;
-- 2. after partition pruning: a file survives unless a key of its spec on
--    `col` proves no row can match. identity: the value lies in [a, b];
--    year, epoch_day, epoch_hour: transform(a) <= value <= transform(b);
--    month, day, hour: only as part of a chain year, month, day, hour on the
--    same column (the chain names one period; that period must meet
--    [a, b]), alone they do not prune; bucket(N): only an equality (a = b)
--    on an int64 or int32 column prunes (bucket(a) = value); a NULL value never
--    matches a range;
-- 3. after min/max pruning as well: the file's bounds on `col`
--    (`ducklake_file_column_stats`) must meet [a, b]; a file without bounds
--    survives, one whose rows are all NULL does not;
--
-- the union a planner reads (what survives 2 and 3, all eras), and an
-- estimate of what the same predicate would read if the files of the older
-- eras were rewritten under the live spec: each old file's rows taken as
-- spread evenly between its min and max, the rows falling in the live
-- spec's partitions the predicate touches (when the live spec has a
-- monotone key on `col`: identity, year, epoch_day, epoch_hour, or a
-- year..hour chain; otherwise a rewrite saves nothing here; on a text
-- column partitioned by identity, the rows spread evenly over the distinct
-- values the catalog knows between min and max). The saving per
-- query and the rows a rewrite would write give the number of such queries
-- after which a rewrite pays (seed 003: "queries are reading too many
-- files").
-- @module moraine.layout

local moraine = require "moraine"
local typed = require "moraine.typed"
local tf = require "moraine.tablefiles"
local add_count = tf.add_count

local M = {}
local raise = moraine.core.raise
local NULL = moraine.null
local floor = math.floor

-- ---- the predicate --------------------------------------------------------------------------

local function literal(s)
  s = s:match("^%s*(.-)%s*$")
  local q = s:match("^'(.*)'$")
  if q then return (q:gsub("''", "'")) end
  local typed_lit = s:match("^%a+%s+'(.*)'$") -- DATE '2025-01-01', TIMESTAMP '...'
  if typed_lit then return (typed_lit:gsub("''", "'")) end
  return s
end

local function ident(s)
  s = s:match("^%s*(.-)%s*$")
  local q = s:match('^"(.*)"$')
  if q then return (q:gsub('""', '"')) end
  return s
end

-- The predicate cut at its top-level ANDs (not inside a quoted string or
-- identifier), each piece with whether it holds a top-level BETWEEN.
local function split_and(s)
  local pieces, from, i, n, quote = {}, 1, 1, #s, nil
  local between = false
  local function word_at(j, w)
    return s:sub(j, j + #w - 1):upper() == w and not s:sub(j - 1, j - 1):match("[%w_]") and not s:sub(j + #w, j + #w):match("[%w_]")
  end
  while i <= n do
    local c = s:sub(i, i)
    if quote then
      if c == quote then
        if s:sub(i + 1, i + 1) == quote then i = i + 1 else quote = nil end
      end
    elseif c == "'" or c == '"' then
      quote = c
    elseif word_at(i, "BETWEEN") then
      between = true
    elseif word_at(i, "AND") then
      pieces[#pieces + 1] = { text = s:sub(from, i - 1), between = between }
      between, from, i = false, i + 3, i + 2
    end
    i = i + 1
  end
  pieces[#pieces + 1] = { text = s:sub(from), between = between }
  return pieces
end

-- one comparison or BETWEEN: column, lo, hi (text or nil)
local function parse_bound(s)
  local col, a, b = s:match("^%s*(.-)%s+[Bb][Ee][Tt][Ww][Ee][Ee][Nn]%s+(.-)%s+[Aa][Nn][Dd]%s+(.-)%s*$")
  if col then return ident(col), literal(a), literal(b) end
  local c, op, v = s:match("^%s*(.-)%s*([<>=]=?)%s*(.-)%s*$")
  if c and c ~= "" and v ~= "" then
    c, v = ident(c), literal(v)
    if op == "=" or op == "==" then return c, v, v end
    if op == ">=" or op == ">" then return c, v, nil end
    if op == "<=" or op == "<" then return c, nil, v end
  end
  return nil
end

--- Parses a range predicate on one column.
-- Accepted: `col BETWEEN a AND b`, `col = v`, `col >= a`, `col > a`,
-- `col <= b`, `col < b`, and two of these on the same column joined by
-- `AND` (`ts >= a AND ts < b`: one lower and one upper bound at most)
-- (keywords case-insensitive; `col` may be a
-- double-quoted identifier; a value may be a bare word or number, a
-- single-quoted string, or a typed literal such as `DATE '2025-03-27'`).
-- `<` and `>` are taken as `<=` and `>=`: pruning by bounds cannot tell them
-- apart on a continuous column, and the counts stay conservative.
-- @tparam string s the predicate
-- @return `{column = name, lo = text or nil, hi = text or nil}` (nil: unbounded), or nil and a message
-- naming what could not be parsed: a piece that is no comparison, two columns, two lower (or upper) bounds
function M.parse_where(s)
  if type(s) ~= "string" then return nil, "the predicate must be a string" end
  local usage = " (expected: col BETWEEN a AND b, col = v, col >= a, col <= b, or col >= a AND col <= b)"
  local raw, parts = split_and(s), {}
  local k = 1
  while k <= #raw do -- a BETWEEN takes the AND after it
    local piece = raw[k].text
    if raw[k].between and raw[k + 1] then
      piece, k = piece .. "AND" .. raw[k + 1].text, k + 1
    end
    parts[#parts + 1] = piece
    k = k + 1
  end
  local out = {}
  for _, piece in ipairs(parts) do
    local bare = piece:gsub("'[^']*'", ""):gsub('"[^"]*"', "") -- outside quoted values and names
    local op = bare:match("(<>)") or bare:match("(!=)")
    if op then
      return nil, "'" .. op .. "' in the predicate '" .. s .. "' is no range (it leaves out one value, which pruning by bounds "
        .. "cannot use)" .. usage
    end
    local c, lo, hi = parse_bound(piece)
    if not c then
      local what = #parts > 1 and "cannot parse '" .. piece:match("^%s*(.-)%s*$") .. "' in the predicate '" .. s .. "'"
        or "cannot parse the predicate '" .. s .. "'"
      return nil, what .. usage
    end
    if out.column and out.column ~= c then
      return nil, "the predicate '" .. s .. "' names two columns ('" .. out.column .. "' and '" .. c .. "'): layout prunes on one"
    end
    out.column = c
    local given = { lo = lo, hi = hi }
    for _, side in ipairs({ "lo", "hi" }) do
      local v = given[side]
      if v ~= nil and out[side] ~= nil then
        return nil, "the predicate '" .. s .. "' has two " .. (side == "lo" and "lower" or "upper") .. " bounds on '" .. c .. "'" .. usage
      end
      if v ~= nil then out[side] = v end
    end
  end
  return out
end

-- ---- pruning ---------------------------------------------------------------------------------


-- the period [start, next) in the source column's numbers (typed.number) of
-- a chain of calendar keys, or of a monotone key value
local function chain_interval(ctype, parts)
  local y, m, d, h = parts.year, parts.month, parts.day, parts.hour
  local fam = typed.family(ctype)
  local scale = fam == "date" and 1 or 86400 -- dates in days, timestamps in seconds
  local function at(days, hours) return fam == "date" and days or days * 86400 + (hours or 0) * 3600 end
  if parts.epoch_hour then
    if fam == "date" then return floor(parts.epoch_hour / 24), floor(parts.epoch_hour / 24) + 1 end
    return parts.epoch_hour * 3600, parts.epoch_hour * 3600 + 3600
  end
  if parts.epoch_day then return parts.epoch_day * scale, (parts.epoch_day + 1) * scale end
  if not y then return nil end
  if not m then return at(typed.days_from_civil(y, 1, 1)), at(typed.days_from_civil(y + 1, 1, 1)) end
  if m < 1 or m > 12 then return nil end
  local ny, nm = y, m + 1
  if nm == 13 then ny, nm = y + 1, 1 end
  if not d then return at(typed.days_from_civil(y, m, 1)), at(typed.days_from_civil(ny, nm, 1)) end
  local day0 = typed.days_from_civil(y, m, d)
  if not h or fam == "date" then return at(day0), at(day0 + 1) end
  return at(day0, h), at(day0, h + 1)
end

-- A compiled predicate: the column, its type, typed bounds and numbers.
local function compile(pred, col, T)
  if tf.is_null(col.type) then
    tf.null_error("ducklake_column", { table_id = T, column_id = col.id, begin_snapshot = col.begin },
      { "table_id", "column_id", "begin_snapshot" }, "column_type", "compare the column's values")
  end
  local P = { column = col, type = col.type }
  if not typed.family(col.type) then raise("EINVAL", "layout: column '" .. col.name .. "' has type " .. col.type .. ", which has no order") end
  for _, side in ipairs({ "lo", "hi" }) do
    if pred[side] ~= nil then
      local v, e = typed.parse(col.type, pred[side])
      if v == nil then raise("EINVAL", "layout: '" .. pred[side] .. "' is not a " .. col.type .. " (column '" .. col.name .. "'): " .. e) end
      P[side] = v
      P[side .. "_num"] = typed.number(col.type, v)
    end
  end
  if P.lo ~= nil and P.hi ~= nil and typed.compare(col.type, P.lo, P.hi) > 0 then raise("EINVAL", "layout: an empty range (lower bound above upper bound)") end
  return P
end

local function in_range(P, v)
  if P.lo ~= nil and typed.compare(P.type, v, P.lo) < 0 then return false end
  if P.hi ~= nil and typed.compare(P.type, v, P.hi) > 0 then return false end
  return true
end

-- does the predicate's number range meet [s, e) ?
local function meets_num(P, s, e)
  if P.lo_num and e <= P.lo_num then return false end
  if P.hi_num and s > P.hi_num then return false end
  return true
end

-- partition pruning of one file under its spec: true when it survives
local function partition_survives(P, spec, file)
  if not spec then return true end
  local parts, chain = {}, false
  for _, key in ipairs(spec.keys) do
    if key.column_id == P.column.id then
      local value = file.values[key.index]
      local tr = key.transform
      if value == NULL then return false end -- NULL never meets a range
      if value ~= nil then
        if tr == "identity" then
          local v = typed.parse(P.type, value)
          if v ~= nil and not in_range(P, v) then return false end
        elseif typed.TEMPORAL[tr] then
          local n = tonumber(value)
          if n then parts[tr] = n; chain = true end
        else
          local nb = tr:match("^bucket%((%d+)%)$")
          if nb and P.lo ~= nil and P.hi ~= nil and typed.compare(P.type, P.lo, P.hi) == 0 then
            local want = typed.bucket(tonumber(nb), P.type, P.lo)
            if want ~= nil and tonumber(value) ~= want then return false end
          end
        end
      end
    end
  end
  if chain then
    local s, e = chain_interval(P.type, parts)
    if s and not meets_num(P, s, e) then return false end
  end
  return true
end

-- min/max pruning: true when the file survives
local function bounds_survive(P, file)
  local st = file.stats[P.column.id]
  if not st then return true end
  if st.min == nil or st.max == nil then
    return not (st.null_count ~= nil and st.null_count >= file.records and file.records > 0)
  end
  local lo, hi = typed.parse(P.type, st.min), typed.parse(P.type, st.max)
  if lo == nil or hi == nil then return true end
  if P.lo ~= nil and typed.compare(P.type, hi, P.lo) < 0 then return false end
  if P.hi ~= nil and typed.compare(P.type, lo, P.hi) > 0 then return false end
  return true
end

-- The live spec's partitions the predicate touches, or nil when the live
-- spec cannot prune on the column. Two shapes:
--
-- * `{s = number, e = number}`: one interval [s, e) of the source column's
--   numbers (typed.number), for a monotone key on a column with numbers;
-- * `{values = {v, ...}}`: an identity key on a column without numbers
--   (varchar, blob, uuid, json: DuckLake compares the text, byte order). A
--   partition holds one value and the string line has no widths to
--   interpolate on, so the rows of a file are taken as spread evenly over
--   the distinct values the catalog knows in its [min, max]: `values` (sorted,
--   distinct) are the live files' non-NULL bounds on the column, the live
--   identity partition values on it, and an equality's value.
local function live_touch(P, spec, files)
  if not spec then return nil end
  local trs, idx = {}, {}
  for _, key in ipairs(spec.keys) do
    if key.column_id == P.column.id then
      trs[key.transform] = true
      if key.transform == "identity" then idx[#idx + 1] = key.index end
    end
  end
  local numeric = P.lo_num ~= nil or P.hi_num ~= nil
  if trs.identity and not numeric then
    local T, all = P.type, {}
    local function add(text)
      if text == nil or text == NULL then return end
      local v = typed.parse(T, text)
      if v ~= nil then all[#all + 1] = v end
    end
    for _, f in ipairs(files) do
      local st = f.stats[P.column.id]
      if st then add(st.min); add(st.max) end
      if f.partition_id == spec.id then
        for _, i in ipairs(idx) do add(f.values[i]) end
      end
    end
    if P.lo ~= nil and P.hi ~= nil and typed.compare(T, P.lo, P.hi) == 0 then all[#all + 1] = P.lo end
    table.sort(all, function(a, b) return typed.compare(T, a, b) < 0 end)
    local values = {}
    for _, v in ipairs(all) do
      if #values == 0 or typed.compare(T, values[#values], v) ~= 0 then values[#values + 1] = v end
    end
    return { values = values }
  end
  if trs.identity then
    local e = math.huge
    if P.hi ~= nil then
      local n, unit = typed.number(P.type, P.hi)
      e = n + (unit or 0)
    end
    return { s = P.lo_num or -math.huge, e = e }
  end
  if not numeric then return nil end -- a calendar key on a column without numbers: no estimate
  local kind
  if trs.epoch_hour or (trs.year and trs.month and trs.day and trs.hour) then kind = "epoch_hour"
  elseif trs.epoch_day or (trs.year and trs.month and trs.day) then kind = "epoch_day"
  elseif trs.year and trs.month then kind = "month"
  elseif trs.year then kind = "year" end
  if not kind then return nil end
  local function period(v)
    local parts = {}
    if kind == "month" then
      local y = typed.transform("year", P.type, v)
      parts.year, parts.month = y, typed.transform("month", P.type, v)
    else
      parts[kind] = typed.transform(kind, P.type, v)
    end
    return chain_interval(P.type, parts)
  end
  local s, e = -math.huge, math.huge
  if P.lo ~= nil then s = period(P.lo) end
  if P.hi ~= nil then
    local _, pe = period(P.hi)
    e = pe
  end
  if s == nil or e == nil then return nil end
  return { s = s, e = e }
end

-- The rows of an older era's file that a rewrite under the live spec would
-- put in the partitions `touch` (from live_touch) names: the file's non-NULL
-- rows spread evenly between its bounds (NULL rows go to the NULL
-- partition, which no range touches); a file without bounds counts whole
-- when it is read now, not at all otherwise.
local function rows_after(P, touch, f, read)
  local st = f.stats[P.column.id]
  local T = P.type
  local lo, hi -- parsed bounds (a BOOLEAN bound may be false)
  if st and st.min and st.max then lo, hi = typed.parse(T, st.min), typed.parse(T, st.max) end
  if lo == nil or hi == nil then return read and f.records or 0 end
  local rows = f.records
  if st.null_count and st.null_count > 0 then rows = math.max(0, rows - st.null_count) end
  if touch.values then
    if typed.compare(T, lo, hi) >= 0 then return in_range(P, lo) and rows or 0 end
    local n, k = 0, 0
    for _, v in ipairs(touch.values) do
      if typed.compare(T, v, lo) >= 0 and typed.compare(T, v, hi) <= 0 then
        n = n + 1
        if in_range(P, v) then k = k + 1 end
      end
    end
    return n > 0 and rows * k / n or 0
  end
  local a, unit = typed.number(T, lo)
  local b = typed.number(T, hi)
  if a == nil or b == nil then return read and f.records or 0 end
  b = b + (unit or 0)
  local s0, e0 = math.max(a, touch.s), math.min(b, touch.e)
  if b > a then
    return e0 > s0 and rows * (e0 - s0) / (b - a) or 0
  end
  return (a >= touch.s and a < touch.e) and rows or 0
end

--- The read cost of a range predicate on a table's mixed layout, at a
-- snapshot, in one read transaction.
-- @param db a catalog handle
-- @tparam table opts `table` (name, `"schema.name"`, `"#ID"` or table_id),
--   `where` (a predicate `moraine.layout.parse_where` accepts), `at`
--   (snapshot; default the newest)
-- @treturn table `{snapshot, schema, table, table_id, column, where,
--   live_partition_id (nil when the live spec is unpartitioned or reset),
--   eras = {{partition_id (nil: written unpartitioned), keys (SQL form or
--   nil), live (bool), files, rows, partition_files, partition_rows,
--   read_files, read_rows}, ...}, total = {files, rows, read_files,
--   read_rows}, rewrite = {old_files, old_rows (rows of the older eras),
--   read_rows_now (their rows read now), read_rows_after (estimated after a
--   rewrite under the live spec, nil when the live spec does not prune on
--   the column), saving (rows per query), queries_to_pay (old_rows /
--   saving, nil when nothing is saved)}}`
-- @raise EINVAL (missing table or where, a predicate that does not parse, a
--   column the table does not have at the snapshot, a bound that is not a
--   value of the column's type, an empty range, a type with no order; a NULL
--   the report cannot work without, named by moraine.tablefiles.null_error:
--   a file's record_count, the column's type, a column's id or name, a key
--   index, column_id or transform of a partition spec, a partition value's
--   key index or a column statistic's column_id), ENOTFOUND (table, snapshot)
function M.run(db, opts)
  if type(opts) ~= "table" or opts.table == nil then raise("EINVAL", "layout: opts.table is required") end
  if type(opts.where) ~= "string" then raise("EINVAL", "layout: opts.where (a predicate such as \"ts BETWEEN '2025-03-27' AND '2025-03-28'\") is required") end
  for k in pairs(opts) do
    if k ~= "table" and k ~= "at" and k ~= "where" then raise("EINVAL", "layout: unknown option '" .. tostring(k) .. "'") end
  end
  local pred, perr = M.parse_where(opts.where)
  if not pred then raise("EINVAL", "layout: " .. perr) end
  return db:read(function(rd)
    local S = tf.snapshot(rd, opts.at)
    local t = tf.find(rd, S, opts.table)
    -- every column by id, as it was at S (its name and type then; a column
    -- dropped before S as it was last): the predicate and the keys name
    -- columns as the table had them at the snapshot
    local cols = tf.columns(rd, t.id)
    local col
    for c in rd:scan("ducklake_column", { at = S, table_id = t.id }) do
      local id = tf.num(c.column_id)
      cols[id] = { id = id, name = c.column_name, type = c.column_type, begin = tf.num(c.begin_snapshot),
        parent = not tf.is_null(c.parent_column) }
      if c.column_name == pred.column then col = cols[id] end
    end
    if not col then raise("EINVAL", "layout: table " .. tostring(t.schema) .. "." .. tostring(t.name) .. " has no column '" .. pred.column .. "' at snapshot " .. S) end
    local P = compile(pred, col, t.id)
    local spec_of = tf.spec_lookup(rd, t.id)
    local live = rd:partition_spec(t.id, S)
    local live_pid = live and #(live.columns or {}) > 0 and tf.num(live.partition_id) or nil
    local live_spec = live_pid and spec_of(live_pid)
    local rep = { snapshot = S, schema = t.schema, table = t.name, table_id = t.id, column = col.name, where = opts.where,
      live_partition_id = live_pid, eras = {}, total = { files = 0, rows = 0, read_files = 0, read_rows = 0 } }
    local eras, order = {}, {}
    local files = tf.need_records(tf.files(rd, t.id, S), "count the rows a range reads")
    local touch = live_touch(P, live_spec, files)
    local rw = { old_files = 0, old_rows = 0, read_rows_now = 0, read_rows_after = touch and 0 or nil }
    for _, f in ipairs(files) do
      local k = f.partition_id or "none"
      local e = eras[k]
      if not e then
        local spec = f.partition_id and spec_of(f.partition_id)
        e = { partition_id = f.partition_id, keys = spec and #spec.keys > 0 and tf.spec_sql(spec, cols) or nil,
          live = f.partition_id ~= nil and f.partition_id == live_pid, files = 0, rows = 0, partition_files = 0,
          partition_rows = 0, read_files = 0, read_rows = 0, spec = spec }
        eras[k] = e
        order[#order + 1] = k
      end
      e.files, e.rows = e.files + 1, add_count(e.rows, f.records, "record_count")
      local read = false
      if partition_survives(P, e.spec, f) then
        e.partition_files, e.partition_rows = e.partition_files + 1, add_count(e.partition_rows, f.records, "record_count")
        if bounds_survive(P, f) then
          read = true
          e.read_files, e.read_rows = e.read_files + 1, add_count(e.read_rows, f.records, "record_count")
        end
      end
      if not e.live then
        rw.old_files, rw.old_rows = rw.old_files + 1, add_count(rw.old_rows, f.records, "record_count")
        if read then rw.read_rows_now = add_count(rw.read_rows_now, f.records, "record_count") end
        if touch then rw.read_rows_after = rw.read_rows_after + rows_after(P, touch, f, read) end
      end
    end
    table.sort(order, function(a, b)
      if a == "none" then return false elseif b == "none" then return true end
      return a < b
    end)
    for _, k in ipairs(order) do
      local e = eras[k]
      e.spec = nil
      rep.eras[#rep.eras + 1] = e
      local T = rep.total
      T.files, T.rows = T.files + e.files, add_count(T.rows, e.rows, "record_count")
      T.read_files, T.read_rows = T.read_files + e.read_files, add_count(T.read_rows, e.read_rows, "record_count")
    end
    if rw.read_rows_after then
      rw.read_rows_after = floor(rw.read_rows_after + 0.5)
      rw.saving = rw.read_rows_now - rw.read_rows_after
      if rw.saving > 0 then rw.queries_to_pay = rw.old_rows / rw.saving end
    end
    rep.rewrite = rw
    return rep
  end)
end

--- The partition spec timeline and mixed layout of a table, shaped for
-- `moraine.svg.history`: every partition spec version of the table begun
-- by the snapshot, and the live files and rows under each spec there.
-- @param db a catalog handle
-- @tparam table opts `table` (name, `"schema.name"`, `"#ID"` or table_id;
--   required), `at` (snapshot; default the newest)
-- @treturn table `{title, last, layout_snapshot, specs = {{id, label, begin,
--   end_}}, layout = {{label, files, rows}}}` (an end after the snapshot reads
--   as live, as it was known then)
-- @raise EINVAL, ENOTFOUND as `run` (a NULL record_count too)
function M.history(db, opts)
  if type(opts) ~= "table" or opts.table == nil then raise("EINVAL", "history: opts.table is required") end
  return db:read(function(rd)
    local S = tf.snapshot(rd, opts.at)
    local t = tf.find(rd, S, opts.table)
    local cols = tf.columns(rd, t.id)
    local spec_of = tf.spec_lookup(rd, t.id)
    local h = { title = tostring(t.schema) .. "." .. tostring(t.name) .. ": partition specs and the mixed layout", last = S,
      layout_snapshot = S, specs = {}, layout = {} }
    for p in rd:scan("ducklake_partition_info", { at = moraine.ALL, table_id = t.id }) do
      local b = tf.num(p.begin_snapshot)
      if b <= S then
        local e = not tf.is_null(p.end_snapshot) and tf.num(p.end_snapshot) or nil
        if e and e > S then e = nil end
        local spec = spec_of(tf.num(p.partition_id))
        local label = spec and #spec.keys > 0 and tf.spec_sql(spec, cols) or "unpartitioned (reset)"
        if e == b then label = label .. " (never visible)" end
        h.specs[#h.specs + 1] = { id = tf.num(p.partition_id), label = label, begin = b, end_ = e }
      end
    end
    table.sort(h.specs, function(a, b) if a.begin ~= b.begin then return a.begin < b.begin end return a.id < b.id end)
    local groups, order = {}, {}
    for _, f in ipairs(tf.need_records(tf.files(rd, t.id, S), "draw the rows under each spec")) do
      local k = f.partition_id or "none"
      if not groups[k] then
        local spec = f.partition_id and spec_of(f.partition_id)
        groups[k] = { label = f.partition_id and ("spec " .. f.partition_id .. (spec and #spec.keys > 0 and (": " .. tf.spec_sql(spec, cols)) or "")) or "unpartitioned",
          files = 0, rows = 0, key = k }
        order[#order + 1] = k
      end
      local g = groups[k]
      g.files, g.rows = g.files + 1, add_count(g.rows, f.records, "record_count")
    end
    table.sort(order, function(a, b)
      if a == "none" then return false elseif b == "none" then return true end
      return a < b
    end)
    for _, k in ipairs(order) do h.layout[#h.layout + 1] = groups[k] end
    return h
  end)
end

return M
