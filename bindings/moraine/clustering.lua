--- moraine.clustering — is a table's order doing anything? (seed 004)
--
-- A planner skips a file when its min/max on a filtered column miss the
-- filter's range. Seed 004 measures a layout in *rank space*: each column's
-- values replaced by their rank among the table's rows (0..1), so that a
-- range query selecting a share `s` of one column's rows is a slab of width
-- `s`, and a file whose bounds span a width `w` of that column is read with
-- probability `s + w`. The expected share of rows a range on the column
-- reads is then `s` plus the (row-weighted) average width of the files
-- along it; for `k` columns clustered together and `N` files no layout can
-- read less, averaged over the columns, than `s + N^(-1/k)` (files as
-- cubes of volume 1/N) when the columns vary independently; columns that
-- rise together (an id and its time) can read less, down to `s + 1/N`.
--
-- moraine has no rows, only each file's bounds
-- (`ducklake_file_column_stats`) and record_count, so the rank of a value is
-- estimated from the files: each file's rows are taken as spread evenly
-- between its min and max (for integers and dates over the integers from
-- min to max; decimals, timestamps and times by their smallest step;
-- strings by their position among the distinct string bounds). The width
-- of a file along a column is the estimated share of the table's rows whose
-- value lies within the file's bounds. A file without bounds for the column
-- has width 1 (it is always read).
--
-- Each column gets a verdict: "served" when its average width is below
-- 0.5 and within twice the bound's N^(-1/k), "not served" at 0.5 or more (a
-- range reads at least half the table), "partly served" between.
--
-- Advisory only: nothing here is on the serving path.
-- @module moraine.clustering

local moraine = require "moraine"
local typed = require "moraine.typed"
local tf = require "moraine.tablefiles"

local M = {}
local raise = moraine.core.raise
local floor = math.floor

-- ---- the estimated rank function of one column ------------------------------------------------

-- Builds F over intervals {lo, len, rows} (len > 0: rows spread over
-- [lo, lo+len); len == 0: all rows at the point lo). Returns
-- share(a, b): the share of all rows estimated in [a, b + unit), and
-- below(x): the share estimated below x (the rank of x).
local function rank_space(ivs, unit, total)
  -- piecewise-linear part: breakpoints with slope changes
  local ev = {}
  local points = {}
  for _, iv in ipairs(ivs) do
    if iv.len > 0 then
      local slope = iv.rows / iv.len
      ev[#ev + 1] = { x = iv.lo, d = slope }
      ev[#ev + 1] = { x = iv.lo + iv.len, d = -slope }
    else
      points[#points + 1] = { x = iv.lo, rows = iv.rows }
    end
  end
  table.sort(ev, function(p, q) return p.x < q.x end)
  local xs, fs, slopes = {}, {}, {}
  local f, slope = 0, 0
  local i = 1
  while i <= #ev do
    local x = ev[i].x
    if #xs > 0 then f = f + slope * (x - xs[#xs]) end
    while i <= #ev and ev[i].x == x do slope = slope + ev[i].d; i = i + 1 end
    xs[#xs + 1], fs[#fs + 1], slopes[#slopes + 1] = x, f, slope
  end
  table.sort(points, function(p, q) return p.x < q.x end)
  local px, pcum = {}, { [0] = 0 }
  for j, p in ipairs(points) do px[j] = p.x; pcum[j] = pcum[j - 1] + p.rows end
  -- last index j with arr[j] < x (strict) or <= x (inclusive)
  local function search(arr, x, inclusive)
    local lo, hi = 0, #arr
    while lo < hi do
      local mid = floor((lo + hi + 1) / 2)
      local v = arr[mid]
      if v < x or (inclusive and v == x) then lo = mid else hi = mid - 1 end
    end
    return lo
  end
  local function F(x) -- continuous rows below x
    local j = search(xs, x, true)
    if j == 0 then return 0 end
    return fs[j] + slopes[j] * (x - xs[j])
  end
  local function clamp(s)
    if s > 1 then return 1 elseif s < 0 then return 0 end
    return s
  end
  local function share(a, b)
    local c = F(b + unit) - F(a)
    local pts = pcum[search(px, b, true)] - pcum[search(px, a, false)]
    return clamp((c + pts) / total)
  end
  local function below(x) return clamp((F(x) + pcum[search(px, x, false)]) / total) end
  return share, below
end

-- Column c's numeric intervals of files: returns list (per file: {lo, len,
-- rows} or false when the file has no bounds for c), unit.
local function intervals(files, col)
  local ctype = col.type
  local fam = typed.family(ctype)
  if not fam then return nil, "type " .. tostring(ctype) .. " has no order here" end
  local out, unit = {}, 1
  local strpos
  if fam == "bytes" then
    local set, list = {}, {}
    for _, f in ipairs(files) do
      local st = f.stats[col.id]
      if st and st.min and st.max then
        for _, v in ipairs({ st.min, st.max }) do
          if not set[v] then set[v] = true; list[#list + 1] = v end
        end
      end
    end
    table.sort(list)
    strpos = {}
    for i, v in ipairs(list) do strpos[v] = i end
  end
  for i, f in ipairs(files) do
    local st = f.stats[col.id]
    local lo, hi
    if st and st.min and st.max then
      if strpos then
        lo, hi = strpos[st.min], strpos[st.max]
      else
        local a, b = typed.parse(ctype, st.min), typed.parse(ctype, st.max)
        if a ~= nil and b ~= nil then
          local u
          lo, u = typed.number(ctype, a)
          hi = typed.number(ctype, b)
          unit = u
          if lo ~= lo or hi ~= hi or lo == math.huge or hi == -math.huge then lo, hi = nil, nil end
        end
      end
    end
    out[i] = lo and { lo = lo, hi = hi, rows = f.records } or false
  end
  if fam == "float" then unit = 0 end
  for _, iv in ipairs(out) do if iv then iv.len = iv.hi - iv.lo + unit end end
  return out, unit
end

--- The rank-space widths of files along one column.
-- @tparam table files as `moraine.tablefiles.files` gives them
-- @tparam table col `{id = column_id, type = column_type}`
-- @treturn table|nil per file (same order) its width in [0, 1] (1 when it has no bounds),
--   or nil and a message (a type with no order)
-- @treturn nil
-- @treturn table the rank space: `share(a, b)` (estimated share of rows with a
--   value in [a, b], positions as numbers), `below(x)` (the rank of x), `ivs`
--   (per file `{lo, hi, len, rows}` or false)
function M.widths(files, col)
  local ivs, unit = intervals(files, col)
  if not ivs then return nil, unit end
  local total = 0
  local known = {}
  for i, iv in ipairs(ivs) do
    total = total + files[i].records
    if iv then known[#known + 1] = iv end
  end
  local out = {}
  if total == 0 then
    for i = 1, #files do out[i] = 1 end
    return out
  end
  local share, below = rank_space(known, unit, total)
  for i, iv in ipairs(ivs) do
    out[i] = iv and share(iv.lo, iv.hi) or 1
  end
  return out, nil, { share = share, below = below, ivs = ivs }
end

--- Seed 004's lower bound on the share of rows read, averaged over `k`
-- clustered columns, by a range selecting a share `s` of one column, with
-- `n` files: `s + n^(-1/k)` (capped at 1). A bound for columns that vary
-- independently: correlated columns can read less.
-- @tparam number s the selectivity (0..1)
-- @tparam integer n the number of files (>= 1)
-- @tparam integer k the number of clustered columns (>= 1)
-- @treturn number the bound
function M.bound(s, n, k)
  local b = s + n ^ (-1 / k)
  return b > 1 and 1 or b
end

-- the expected share of rows read: sum of rows_f * min(1, s + w_f) / rows
local function expected_share(files, widths, s)
  local rows, read = 0, 0
  for i, f in ipairs(files) do
    rows = rows + f.records
    local p = s + widths[i]
    read = read + f.records * (p > 1 and 1 or p)
  end
  if rows == 0 then return 0 end
  return read / rows
end

local function verdict(avg_width, n, k)
  local side = n ^ (-1 / k)
  if avg_width >= 0.5 then return "not served" end
  if avg_width <= 2 * side then return "served" end
  return "partly served"
end

-- the clustering of a group of files over columns
local function measure(files, cols, s)
  local n = #files
  local res = { files = n, rows = 0, columns = {} }
  for _, f in ipairs(files) do res.rows = tf.add_count(res.rows, f.records, "record_count") end
  local k = #cols
  local sum = 0
  for i, c in ipairs(cols) do
    local w, err = M.widths(files, c)
    local entry = { column = c.name }
    if not w then
      entry.error = err
      entry.avg_width, entry.share = 1, 1
    else
      local wsum, rows = 0, 0
      for j, f in ipairs(files) do wsum = wsum + w[j] * f.records; rows = rows + f.records end
      entry.avg_width = rows > 0 and wsum / rows or 1
      entry.share = expected_share(files, w, s)
    end
    entry.verdict = n > 0 and verdict(entry.avg_width, n, k) or "no files"
    res.columns[i] = entry
    sum = sum + entry.share
  end
  res.share = k > 0 and sum / k or 1
  res.bound = n > 0 and M.bound(s, n, k) or 1
  return res
end

-- default columns: the live sort spec's plain column names, else every
-- top-level column with an order and stats in some file; named as at S
local function default_columns(rd, t, S, cols, files)
  local live, byname = {}, {} -- the columns live at S, as named then
  for c in rd:scan("ducklake_column", { at = S, table_id = t.id }) do
    local id = tf.num(c.column_id)
    local known = cols[id]
    if known then
      local col = { id = id, name = c.column_name, type = known.type, parent = not tf.is_null(c.parent_column) }
      live[#live + 1] = col
      byname[col.name] = col
    end
  end
  local spec = rd:sort_spec(t.id, S)
  local out = {}
  if spec then
    for _, e in ipairs(spec.expressions or {}) do
      local name = e.expression:match('^"(.*)"$') or e.expression
      name = name:gsub('""', '"')
      if byname[name] then out[#out + 1] = byname[name] end
    end
    if #out > 0 then return out, "the sort spec" end
  end
  table.sort(live, function(a, b) return a.id < b.id end)
  for _, c in ipairs(live) do
    if not c.parent and typed.family(c.type) then
      for _, f in ipairs(files) do
        if f.stats[c.id] and f.stats[c.id].min then out[#out + 1] = c break end
      end
    end
  end
  return out, "every column with bounds"
end

--- Clustering health of one table at a snapshot, in one read transaction.
-- @param db a catalog handle
-- @tparam table opts `table` (name, `"schema.name"`, `"#ID"` or table_id;
--   required), `columns` (array of column names; default: the live sort
--   spec's columns, else every top-level column with an order and bounds),
--   `at` (snapshot; default the newest), `share` (the range's selectivity s,
--   0 < s <= 1; default 0.01)
-- @treturn table `{snapshot, schema, table, table_id, share = s, columns =
--   {names}, columns_from = "the sort spec"|"every column with bounds"|"the
--   caller", table_result = R, eras = {R per partition_id, with
--   partition_id (nil: written unpartitioned) and keys}}`, where each R is
--   `{files, rows, share (the average over the columns of the expected
--   share read), bound (s + N^(-1/k)), columns = {{column, avg_width,
--   share, verdict = "served"|"partly served"|"not served"}}}`; `files` and
--   `ranks` give every live file with its bounds in rank space per column
--   (`{data_file_id, partition_id, rows, ranks = {{lo, hi}, ...}}`), for
--   pictures
-- @raise EINVAL (no table given, a column the table does not have, a share
--   outside (0, 1], unknown option; a NULL the report cannot work without,
--   named by moraine.tablefiles.null_error: a file's record_count, a
--   column's id or name, a key index, column_id or transform of a partition
--   spec, a partition value's key index or a column statistic's column_id),
--   ENOTFOUND (table, snapshot)
function M.run(db, opts)
  if type(opts) ~= "table" or opts.table == nil then raise("EINVAL", "clustering: opts.table is required") end
  for k in pairs(opts) do
    if k ~= "table" and k ~= "at" and k ~= "columns" and k ~= "share" then
      raise("EINVAL", "clustering: unknown option '" .. tostring(k) .. "'")
    end
  end
  local s = opts.share or 0.01
  if type(s) ~= "number" or not (s > 0 and s <= 1) then raise("EINVAL", "clustering: share must be a number in (0, 1]") end
  return db:read(function(rd)
    local S = tf.snapshot(rd, opts.at)
    local t = tf.find(rd, S, opts.table)
    local cols = tf.columns(rd, t.id)
    local files = tf.need_records(tf.files(rd, t.id, S), "weigh the files by their rows")
    local chosen, from
    if opts.columns then
      if type(opts.columns) ~= "table" or #opts.columns == 0 then raise("EINVAL", "clustering: columns must be a non-empty array of names") end
      chosen, from = {}, "the caller"
      local live = {}
      for c in rd:scan("ducklake_column", { at = S, table_id = t.id }) do live[c.column_name] = tf.num(c.column_id) end
      for i, name in ipairs(opts.columns) do
        local id = live[name]
        if not id then raise("EINVAL", "clustering: table " .. tostring(t.schema) .. "." .. tostring(t.name) .. " has no column '" .. tostring(name) .. "' at snapshot " .. S) end
        chosen[i] = { id = id, name = name, type = cols[id].type }
      end
    else
      chosen, from = default_columns(rd, t, S, cols, files)
    end
    local rep = { snapshot = S, schema = t.schema, table = t.name, table_id = t.id, share = s, columns = {},
      columns_from = from, eras = {}, files = {} }
    for i, c in ipairs(chosen) do rep.columns[i] = c.name end
    rep.table_result = measure(files, chosen, s)
    -- eras: files grouped by partition_id (nil last)
    local groups, order = {}, {}
    for _, f in ipairs(files) do
      local k = f.partition_id or "none"
      if not groups[k] then groups[k] = {}; order[#order + 1] = k end
      local g = groups[k]
      g[#g + 1] = f
    end
    table.sort(order, function(a, b)
      if a == "none" then return false elseif b == "none" then return true end
      return a < b
    end)
    local spec_of = tf.spec_lookup(rd, t.id)
    for _, k in ipairs(order) do
      local r = measure(groups[k], chosen, s)
      r.partition_id = k ~= "none" and k or nil
      local spec = r.partition_id and spec_of(r.partition_id)
      r.keys = spec and tf.spec_sql(spec, cols) or nil
      rep.eras[#rep.eras + 1] = r
    end
    -- every file in rank space, for pictures
    local per_col = {}
    for i, c in ipairs(chosen) do
      local _, _, space = M.widths(files, c)
      per_col[i] = space or {}
    end
    for j, f in ipairs(files) do
      local ranks = {}
      for i = 1, #chosen do
        local pc = per_col[i]
        local iv = pc.ivs and pc.ivs[j]
        if pc.share and iv then
          local lo = pc.below(iv.lo)
          ranks[i] = { lo, math.min(1, lo + pc.share(iv.lo, iv.hi)) }
        else
          ranks[i] = { 0, 1 }
        end
      end
      rep.files[j] = { data_file_id = f.id, partition_id = f.partition_id, rows = f.records, ranks = ranks }
    end
    return rep
  end)
end

-- ---- the n-dimensional Hilbert index (J. Skilling, "Programming the Hilbert curve", 2004) ----------

local bxor = typed.bit.bxor

--- The position of a point on the n-dimensional Hilbert curve of `bits`
-- bits per coordinate: consecutive positions are cells that differ by 1 in
-- exactly one coordinate, and every aligned cube of 2^j cells a side is one
-- run of positions. A writer sorting rows by the index of their columns'
-- ranks (rank-Hilbert, seed 004) lays out files as near-cubes in rank space.
-- @tparam {integer,...} coords the point, each in [0, 2^bits)
-- @tparam integer bits bits per coordinate (1..26; #coords * bits <= 52, so
--   the index is an exact number on LuaJIT too)
-- @treturn integer the index, 0 .. 2^(#coords*bits) - 1
-- @raise a plain error naming the argument when coords is empty, a
--   coordinate is out of range, or the index would not fit in 52 bits
function M.hilbert_index(coords, bits)
  local n = type(coords) == "table" and #coords or 0
  if n == 0 then error("hilbert_index: coords must be a non-empty array of integers", 2) end
  if type(bits) ~= "number" or bits < 1 or bits ~= floor(bits) or n * bits > 52 then
    error("hilbert_index: bits must be an integer >= 1 with #coords * bits <= 52", 2)
  end
  local lim = 2 ^ bits
  local X = {}
  for i = 1, n do
    local v = coords[i]
    if type(v) ~= "number" or v ~= floor(v) or v < 0 or v >= lim then
      error("hilbert_index: coords[" .. i .. "] must be an integer in [0, " .. floor(lim) .. ")", 2)
    end
    X[i] = floor(v)
  end
  local function has(x, q) return floor(x / q) % 2 == 1 end
  local M0 = 2 ^ (bits - 1)
  -- inverse undo
  local Q = M0
  while Q > 1 do
    local P = Q - 1
    for i = 1, n do
      if has(X[i], Q) then
        X[1] = bxor(X[1], P)
      else
        local t = bxor(X[1], X[i]) % (P + 1)
        X[1] = bxor(X[1], t)
        X[i] = bxor(X[i], t)
      end
    end
    Q = Q / 2
  end
  -- Gray encode
  for i = 2, n do X[i] = bxor(X[i], X[i - 1]) end
  local t = 0
  Q = M0
  while Q > 1 do
    if has(X[n], Q) then t = bxor(t, Q - 1) end
    Q = Q / 2
  end
  for i = 1, n do X[i] = bxor(X[i], t) end
  -- interleave the transposed bits, most significant first
  local idx = 0
  for j = bits - 1, 0, -1 do
    local q = 2 ^ j
    for i = 1, n do idx = idx * 2 + (has(X[i], q) and 1 or 0) end
  end
  return idx
end

return M
