--- moraine demo: import a real DuckLake catalog and show one table's
-- partition and sort spec history and its files at a past snapshot.
--
-- Usage: demo.lua CATALOG_NDJSON_DIR [TABLE_NAME [SNAPSHOT]]
-- Run by `make demo` on the bundled catalog examples/catalogs/s1_evolution.
local moraine = require "moraine"

local src, want_table, want_snap = arg[1], arg[2], tonumber(arg[3] or "")
if not src then
  io.stderr:write("usage: demo.lua CATALOG_NDJSON_DIR [TABLE_NAME [SNAPSHOT]]\n")
  os.exit(2)
end

local function fmt_null(v)
  if v == moraine.null then return "NULL" end
  return tostring(v)
end

--- Prints rows (arrays of strings) as an aligned table under @header.
local function print_table(header, rows)
  local w = {}
  for i, h in ipairs(header) do w[i] = #h end
  for _, r in ipairs(rows) do
    for i, c in ipairs(r) do if utf8 and utf8.len(c) then w[i] = math.max(w[i], utf8.len(c)) else w[i] = math.max(w[i], #c) end end
  end
  local function line(r)
    local parts = {}
    for i, c in ipairs(r) do
      local len = (utf8 and utf8.len(c)) or #c
      parts[i] = c .. string.rep(" ", w[i] - len)
    end
    print("  " .. table.concat(parts, "  "))
  end
  line(header)
  local sep = {}
  for i = 1, #header do sep[i] = string.rep("-", w[i]) end
  line(sep)
  for _, r in ipairs(rows) do line(r) end
end

local dir = os.getenv("MORAINE_DEMO_DIR") or "build/demo-catalog"
os.execute("rm -rf '" .. dir .. "'")
local db = moraine.open(dir, { no_sync = true })
local t0 = moraine.clock() -- wall-clock time
db:import_ndjson(src)
local nrows = 0
for _, rel in ipairs(db:relations()) do nrows = nrows + #db:scan(rel.name, { at = moraine.ALL }) end
print(("Imported %s into %s: %d rows in %d tables, last snapshot %s (%.1f ms)"):format(src, dir, nrows, #db:relations(),
  fmt_null(db:last_snapshot()), (moraine.clock() - t0) * 1000))

db:read(function(rd)
  local last = rd:last_snapshot()
  -- the table: named, or the one with the most partition spec versions
  local tbl
  for row in rd:scan("ducklake_table", { at = moraine.ALL }) do
    if (want_table and row.table_name == want_table) or (not want_table and not tbl) then tbl = row end
  end
  if not tbl then
    io.stderr:write("demo: no table " .. tostring(want_table) .. " in the catalog\n")
    os.exit(1)
  end
  local T = tbl.table_id
  print(("\nTable %s (table_id %s)"):format(tbl.table_name, fmt_null(T)))

  -- column names by column_id as of a snapshot
  local function column_names(s)
    local names = {}
    for c in rd:scan("ducklake_column", { at = s, table_id = T }) do names[c.column_id] = c.column_name end
    return names
  end
  local function span(row)
    local e = row.end_snapshot == moraine.null and "(live)" or tostring(row.end_snapshot)
    local note = row.end_snapshot == row.begin_snapshot and "  never visible" or ""
    return tostring(row.begin_snapshot), e, note
  end

  -- files and rows per partition_id, over every version of every data file
  local per_spec = {}
  local live_per_spec = {}
  for f in rd:scan("ducklake_data_file", { at = moraine.ALL, table_id = T }) do
    local k = f.partition_id == moraine.null and "none" or tostring(f.partition_id)
    local p = per_spec[k] or { files = 0, rows = 0 }
    p.files, p.rows = p.files + 1, p.rows + f.record_count
    per_spec[k] = p
    if f.end_snapshot == moraine.null then
      local l = live_per_spec[k] or { files = 0, rows = 0 }
      l.files, l.rows = l.files + 1, l.rows + f.record_count
      live_per_spec[k] = l
    end
  end

  local rows = {}
  for spec, children in rd:scan("ducklake_partition_info", { at = moraine.ALL, table_id = T }) do
    local names = column_names(spec.begin_snapshot)
    local keys = {}
    for _, c in ipairs(children.ducklake_partition_column or {}) do
      local n = names[c.column_id] or ("column " .. tostring(c.column_id))
      local fn, param = c.transform:match("^([%w_]+)%((.*)%)$")
      if c.transform == "identity" then keys[#keys + 1] = n
      elseif fn then keys[#keys + 1] = fn .. "(" .. param .. ", " .. n .. ")"
      else keys[#keys + 1] = c.transform .. "(" .. n .. ")" end
    end
    local b, e, note = span(spec)
    local all = per_spec[tostring(spec.partition_id)] or { files = 0, rows = 0 }
    local live = live_per_spec[tostring(spec.partition_id)] or { files = 0, rows = 0 }
    rows[#rows + 1] = { tostring(spec.partition_id), b, e, #keys == 0 and "unpartitioned (reset)" or table.concat(keys, ", "),
      tostring(all.files), tostring(all.rows), tostring(live.files), tostring(live.rows) .. note }
  end
  table.sort(rows, function(a, b) return tonumber(a[2]) < tonumber(b[2]) or (a[2] == b[2] and tonumber(a[1]) < tonumber(b[1])) end)
  if per_spec.none then
    local live = live_per_spec.none or { files = 0, rows = 0 }
    rows[#rows + 1] = { "NULL", "", "", "unpartitioned (files with no partition_id)", tostring(per_spec.none.files),
      tostring(per_spec.none.rows), tostring(live.files), tostring(live.rows) }
  end
  print("\nPartition spec history (ducklake_partition_info, columns embedded):")
  print_table({ "partition_id", "begin", "end", "partition keys", "files", "rows", "live files", "live rows" }, rows)

  rows = {}
  for spec, children in rd:scan("ducklake_sort_info", { at = moraine.ALL, table_id = T }) do
    local keys = {}
    for _, e in ipairs(children.ducklake_sort_expression or {}) do
      keys[#keys + 1] = ("%s %s %s"):format(e.expression, e.sort_direction, e.null_order)
    end
    local b, e = span(spec)
    rows[#rows + 1] = { tostring(spec.sort_id), b, e, table.concat(keys, ", ") }
  end
  table.sort(rows, function(a, b) return tonumber(a[2]) < tonumber(b[2]) end)
  print("\nSort spec history (ducklake_sort_info, expressions embedded):")
  if #rows == 0 then print("  (never sorted)") else print_table({ "sort_id", "begin", "end", "sort keys" }, rows) end

  -- a past snapshot: where several specs' files coexist (or the one asked for)
  local S = want_snap
  if not S then
    local best = 0
    for s = 0, last do
      local seen, n = {}, 0
      for f in rd:files(T, s) do
        if not seen[f.partition_id] then seen[f.partition_id], n = true, n + 1 end
      end
      if n > best then best, S = n, s end
    end
  end
  local spec = rd:partition_spec(T, S)
  print(("\nFiles of %s at snapshot %d (spec in force: partition_id %s); each file names its own spec:"):format(
    tbl.table_name, S, spec and tostring(spec.partition_id) or "none"))
  rows = {}
  local shown, hidden = {}, {}
  for f, children in rd:files(T, S) do
    local k = fmt_null(f.partition_id)
    shown[k] = (shown[k] or 0) + 1
    if shown[k] > 3 then
      hidden[k] = (hidden[k] or 0) + 1
      goto continue
    end
    local vals = {}
    for _, v in ipairs(children.ducklake_file_partition_value or {}) do vals[#vals + 1] = fmt_null(v.partition_value) end
    rows[#rows + 1] = { tostring(f.data_file_id), fmt_null(f.partition_id), table.concat(vals, ", "), tostring(f.record_count),
      (f.path:gsub("ducklake%-.*", "…")) }
    ::continue::
  end
  for k, n in pairs(hidden) do rows[#rows + 1] = { "…", k, ("(%d more files under this spec)"):format(n), "", "" } end
  print_table({ "data_file_id", "partition_id", "partition values", "rows", "path" }, rows)
end)
db:close()
