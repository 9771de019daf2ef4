--- moraine.svg — pictures of a table's layout as standalone SVG documents.
--
-- Three pictures, each drawn from the report of the same name (plain data,
-- so the command line and moraine.http draw the same bytes):
--
-- - `history(h)`: the spec timeline, one bar per partition spec from its
--   begin to its end snapshot, and beside it the live files and rows under
--   each spec (the mixed layout);
-- - `clustering(rep)`: every live file as a box in (column, column) rank
--   space, coloured by era, with a query band selecting a share s of the
--   first column: boxes the band meets are filled (read), the others
--   outlined (skipped), like seed 004's figures;
-- - `layout(rep)`: per era, files before pruning, after partition pruning
--   and after min/max pruning, for one predicate.
--
-- Every text is escaped (&, <, >, quotes); the documents carry width,
-- height and viewBox, and need no script, font or network.
-- @module moraine.svg

local M = {}

local COLORS = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f", "#bab0ac" }

--- Escapes text for SVG (XML) content and attribute values.
-- @tparam string s any text
-- @treturn string the text with &, <, >, " and ' escaped
function M.escape(s)
  return (tostring(s):gsub("[&<>\"']", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;",
    ["'"] = "&#39;" }))
end
local esc = M.escape

local function f(n) return string.format("%.2f", n) end

local function doc(w, h, title, body)
  return table.concat({
    '<?xml version="1.0" encoding="UTF-8"?>\n',
    '<svg xmlns="http://www.w3.org/2000/svg" width="', w, '" height="', h, '" viewBox="0 0 ', w, " ", h,
    '" font-family="sans-serif" font-size="12">\n',
    "<title>", esc(title), "</title>\n",
    '<rect x="0" y="0" width="', w, '" height="', h, '" fill="#ffffff"/>\n',
    table.concat(body), "</svg>\n" })
end

local function text(x, y, s, attrs)
  return '<text x="' .. f(x) .. '" y="' .. f(y) .. '"' .. (attrs or "") .. ">" .. esc(s) .. "</text>\n"
end

local function rect(x, y, w, h, attrs)
  return '<rect x="' .. f(x) .. '" y="' .. f(y) .. '" width="' .. f(math.max(w, 0)) .. '" height="' ..
    f(math.max(h, 0)) .. '"' .. (attrs or "") .. "/>\n"
end

--- The spec timeline and mixed layout of one table.
-- @tparam table h `{title = s, last = snapshot, specs = {{label = s,
--   begin = S, end_ = S or nil (live), id = partition_id}, ...},
--   layout = {{label = s, files = n, rows = n}, ...}}`
-- @treturn string the SVG document
function M.history(h)
  local specs, layout = h.specs or {}, h.layout or {}
  local rows = math.max(#specs, 1)
  local W, left, right = 960, 330, 700
  local H = 70 + rows * 28 + 40 + math.max(#layout, 1) * 24 + 30
  local last = math.max(h.last or 0, 1)
  local function sx(s) return left + (right - left) * s / last end
  local body = { text(10, 22, h.title or "spec history", ' font-size="15" font-weight="bold"') }
  body[#body + 1] = text(10, 44, "partition specs over snapshots 0.." .. (h.last or 0))
  for i, s in ipairs(specs) do
    local y = 50 + i * 28
    local e = s.end_ or last
    local color = COLORS[(i - 1) % #COLORS + 1]
    body[#body + 1] = text(10, y + 14, (s.id and ("#" .. s.id .. " ") or "") .. (s.label or ""))
    body[#body + 1] = rect(sx(s.begin), y, math.max(sx(e) - sx(s.begin), 2), 18,
      ' fill="' .. color .. '"' .. (s.end_ and ' fill-opacity="0.45"' or ""))
    body[#body + 1] = text(sx(e) + 4, y + 14, s.begin .. "–" .. (s.end_ and tostring(s.end_) or "live"))
  end
  if #specs == 0 then body[#body + 1] = text(10, 92, "(never partitioned)") end
  local y0 = 70 + rows * 28 + 20
  local total = 0
  for _, g in ipairs(layout) do total = total + g.rows end
  body[#body + 1] = text(10, y0, "live files at snapshot " .. (h.layout_snapshot or h.last or 0) .. ": rows per spec")
  for i, g in ipairs(layout) do
    local y = y0 + i * 24 - 10
    local share = total > 0 and g.rows / total or 0
    body[#body + 1] = text(10, y + 13, g.label or "")
    body[#body + 1] = rect(left, y, (right - left) * share, 16, ' fill="' .. COLORS[(i - 1) % #COLORS + 1] .. '"')
    body[#body + 1] = text(left + (right - left) * share + 6, y + 13,
      g.files .. " files, " .. g.rows .. " rows (" .. string.format("%.1f", share * 100) .. "%)")
  end
  return doc(W, H, h.title or "spec history", body)
end

--- Files as boxes in rank space, for the first two columns of a
-- moraine.clustering report (one column: boxes span the height).
-- @tparam table rep a report of `moraine.clustering.run`
-- @tparam[opt] number band_at where the query band starts along the first
--   column (0..1 - share; default centred)
-- @treturn string the SVG document
function M.clustering(rep, band_at)
  local cols = rep.columns or {}
  local size, ox, oy = 440, 70, 60
  local W, H = ox + size + 420, oy + size + 60
  local s = rep.share or 0.01
  local b0 = band_at or (0.5 - s / 2)
  local body = { text(10, 22, (rep.schema and (rep.schema .. ".") or "") .. (rep.table or "") ..
    ": files in rank space", ' font-size="15" font-weight="bold"') }
  body[#body + 1] = rect(ox, oy, size, size, ' fill="#fafafa" stroke="#333333"')
  local eras, idx = {}, 0
  for _, e in ipairs(rep.eras or {}) do
    idx = idx + 1
    eras[e.partition_id or "none"] = idx
  end
  local read = 0
  for _, file in ipairs(rep.files or {}) do
    local rx = file.ranks[1] or { 0, 1 }
    local ry = file.ranks[2] or { 0, 1 }
    local color = COLORS[((eras[file.partition_id or "none"] or 1) - 1) % #COLORS + 1]
    local hit = rx[2] >= b0 and rx[1] <= b0 + s
    if hit then read = read + 1 end
    local x, y = ox + rx[1] * size, oy + (1 - ry[2]) * size
    body[#body + 1] = rect(x, y, math.max((rx[2] - rx[1]) * size, 1), math.max((ry[2] - ry[1]) * size, 1),
      ' stroke="' .. color .. '" fill="' .. color .. '" fill-opacity="' .. (hit and "0.55" or "0.05") .. '"')
  end
  body[#body + 1] = rect(ox + b0 * size, oy, math.max(s * size, 2), size, ' fill="#222222" fill-opacity="0.25"')
  body[#body + 1] = text(ox + size / 2 - 60, oy + size + 30, (cols[1] or "?") .. " (rank)")
  body[#body + 1] = '<text x="20" y="' .. f(oy + size / 2) .. '" transform="rotate(-90 20 ' .. f(oy + size / 2) .. ')">' ..
    esc((cols[2] or "(none)") .. " (rank)") .. "</text>\n"
  local lx, ly = ox + size + 20, oy + 10
  local t = rep.table_result or {}
  local lines = {
    (t.files or 0) .. " files, " .. (t.rows or 0) .. " rows",
    "band: a range selecting s = " .. string.format("%.3g", s) .. " of " .. (cols[1] or "?"),
    read .. " of " .. #(rep.files or {}) .. " files meet the band",
    "expected share read: " .. string.format("%.3f", t.share or 1),
    "bound s + N^(-1/k): " .. string.format("%.3f", t.bound or 1),
  }
  for i, c in ipairs(t.columns or {}) do
    lines[#lines + 1] = c.column .. ": width " .. string.format("%.3f", c.avg_width) .. ", " .. c.verdict
    if i >= 6 then break end
  end
  for i, l in ipairs(lines) do body[#body + 1] = text(lx, ly + (i - 1) * 18, l) end
  for i, e in ipairs(rep.eras or {}) do
    local y = ly + (#lines + i) * 18
    body[#body + 1] = rect(lx, y - 10, 12, 12, ' fill="' .. COLORS[(i - 1) % #COLORS + 1] .. '"')
    body[#body + 1] = text(lx + 18, y, (e.partition_id and ("spec " .. e.partition_id) or "unpartitioned") ..
      (e.keys and (": " .. e.keys) or "") .. " (" .. e.files .. " files)")
  end
  return doc(W, H, "clustering of " .. (rep.table or "?"), body)
end

--- Files read per era for one predicate (a moraine.layout report).
-- @tparam table rep a report of `moraine.layout.run`
-- @treturn string the SVG document
function M.layout(rep)
  local eras = rep.eras or {}
  local W, left, right = 960, 330, 900
  local H = 80 + math.max(#eras, 1) * 60 + 40
  local maxf = 1
  for _, e in ipairs(eras) do maxf = math.max(maxf, e.files) end
  local body = { text(10, 22, (rep.schema or "") .. "." .. (rep.table or "") .. ": " .. (rep.where or ""),
    ' font-size="15" font-weight="bold"') }
  body[#body + 1] = text(10, 44, "files per spec: all (light), after partition pruning (mid), read (dark)")
  for i, e in ipairs(eras) do
    local y = 40 + i * 60
    local color = COLORS[(i - 1) % #COLORS + 1]
    local function bar(n, dy, op) return rect(left, y + dy, (right - left) * n / maxf, 14, ' fill="' .. color .. '" fill-opacity="' .. op .. '"') end
    body[#body + 1] = text(10, y + 12, (e.partition_id and ("spec " .. e.partition_id) or "unpartitioned") ..
      (e.live and " (live)" or ""))
    body[#body + 1] = text(10, y + 28, e.keys or "")
    body[#body + 1] = bar(e.files, 0, "0.25")
    body[#body + 1] = bar(e.partition_files, 16, "0.55")
    body[#body + 1] = bar(e.read_files, 32, "1")
    body[#body + 1] = text(left + 4, y + 58, e.read_files .. " of " .. e.files .. " files read, " .. e.read_rows ..
      " of " .. e.rows .. " rows", ' font-size="10"')
  end
  local T = rep.total or {}
  body[#body + 1] = text(10, H - 14, "read: " .. (T.read_files or 0) .. " of " .. (T.files or 0) .. " files, " ..
    (T.read_rows or 0) .. " of " .. (T.rows or 0) .. " rows")
  return doc(W, H, "layout read cost", body)
end

return M
