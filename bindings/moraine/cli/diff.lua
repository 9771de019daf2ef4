--- moraine.cli.diff — `moraine diff`: what changed between two snapshots, table
-- by table, streamed through temporary files.
-- @module moraine.cli.diff

local moraine = require "moraine"
local errors = require "moraine.cli.errors"
local util = require "moraine.cli.util"
local output = require "moraine.cli.output"
local catalog = require "moraine.cli.catalog"

local NULL = moraine.null
local ALL = moraine.ALL
local concat = table.concat
local usage_fail = errors.usage_fail
local istr = util.istr
local key = util.key
local is_null = util.is_null
local num = util.num
local parse_int = util.parse_int
local cell = output.cell
local print_table = output.print_table
local obj = output.obj
local print_json = output.print_json
local isatty = output.isatty
local progress_meter = output.progress_meter
local J = output.J
local row_json = output.row_json
local open_read = catalog.open_read
local relation_columns = catalog.relation_columns
local check_snapshot = catalog.check_snapshot

local M = {}

local HELP = {
  diff = {
    synopsis = "moraine [-c DIR] diff S1 S2 [--summary] [--json]",
    summary = "what changed between two snapshots",
    text = [[
Compares two snapshots, table by table (every ducklake_* table): rows
visible at S2 but not at S1 are added, rows visible at S1 but not at S2 are
removed (ended by S2, when S1 < S2); a row version is identified by its key
and begin_snapshot. When S1 < S2, versions that began after S1 and ended by
S2 count as added too, marked "never visible" when they began and ended in
the same snapshot (like an intermediate partition spec of one
transaction), else "ended at E". Each row is shown as it was at S2: an
end_snapshot set after S2 was not known then and reads NULL. Prints the
rows, table by table, then a summary line ("+3 data files, -1 partition
spec"). Rows are streamed: whatever the range, the diff is never held in
memory (rows wait in temporary files until their table is printed).
Progress (catalog entries walked) goes to stderr on a terminal, or with
--progress; not while the rows themselves print to that terminal.]],
    options = { { "--summary", "only the counts per table: added, removed, never visible, ended again by S2" },
      { "--json", "one JSON object {from, to, added = {table = [rows]}, removed = {...}}; with --summary "
        .. "{from, to, tables = [{table, added, removed, never_visible, ended_again}]}" } },
    example = "moraine diff 16 17 && moraine diff 0 20 --summary",
    flags = {},
    switches = { ["--summary"] = "summary" },
    progress = true,
    json = true,
    nargs = { 2, 2 },
    args = { "S1", "S2" },
  },
}

local NOUNS = {
  ducklake_snapshot = "snapshot", ducklake_snapshot_changes = "change record", ducklake_schema = "schema",
  ducklake_table = "table", ducklake_view = "view", ducklake_column = "column", ducklake_data_file = "data file",
  ducklake_delete_file = "delete file", ducklake_partition_info = "partition spec",
  ducklake_partition_column = "partition key", ducklake_file_partition_value = "partition value",
  ducklake_sort_info = "sort spec", ducklake_sort_expression = "sort key",
  ducklake_file_column_stats = "file column stats row", ducklake_file_variant_stats = "file variant stats row",
  ducklake_schema_versions = "schema version", ducklake_tag = "tag", ducklake_column_tag = "column tag",
  ducklake_macro = "macro",
}

local DIFF_ORDER = { "ducklake_snapshot", "ducklake_snapshot_changes", "ducklake_schema", "ducklake_table",
  "ducklake_column", "ducklake_partition_info", "ducklake_partition_column", "ducklake_sort_info",
  "ducklake_sort_expression", "ducklake_data_file", "ducklake_file_partition_value", "ducklake_file_column_stats",
  "ducklake_file_variant_stats", "ducklake_delete_file", "ducklake_schema_versions" }

local function noun(rel, n)
  local w = NOUNS[rel] or (rel:gsub("^ducklake_", "") .. " row")
  if n == 1 then return w end
  if w:match("s$") then return w .. "es" end
  return w .. "s"
end



local function visible(b, e, S)
  if is_null(b) then return false end
  if num(b) > S then return false end
  return is_null(e) or S < num(e)
end

-- Walks every row version once (each relation with begin_snapshot, all
-- versions) and reports the ones that differ between s1 and s2, without
-- keeping them: on_row(rel, kind, row, note) for each, kind "added" (visible
-- at s2, not at s1; or begun after s1 and ended by s2, note "never visible"
-- or "ended at E") or "removed" (visible at s1, not at s2), child rows right
-- after their parent's; on_group(names) after each relation with the names
-- of it and its child relations; tick(n) after each relation, n the entries
-- walked so far (entries[rel], the relation's entries as diff_entries counts
-- them). Only the versions that began or ended between s1 and s2 reach Lua
-- (rd:scan's `changed` option decides from their cells in C): no other can be
-- visible at one and not at the other. Each row is shown as it was at s2: an
-- end_snapshot after s2 (after s1 too, for a row not visible at s2) was not
-- known then and reads NULL.
local function diff_walk(db, rd, s1, s2, on_row, on_group, tick, entries)
  local rels = db:relations()
  local kids, info = {}, {}
  for _, r in ipairs(rels) do
    info[r.name] = r
    if r.parent then
      kids[r.parent] = kids[r.parent] or {}
      local l = kids[r.parent]
      l[#l + 1] = r.name
    end
  end
  local hi = math.max(s1, s2)
  local function classify(rel, row, b, e, children)
    local v1, v2 = visible(b, e, s1), visible(b, e, s2)
    local kind, note
    if v2 and not v1 then kind = "added"
    elseif v1 and not v2 then kind = "removed"
    elseif not v1 and not v2 and s1 < s2 and not is_null(b) and num(b) > s1 and not is_null(e) and num(e) <= s2 then
      kind = "added"
      note = key(b) == key(e) and "never visible" or ("ended at " .. istr(e))
    end
    if not kind then return end
    if e ~= nil and not is_null(e) and ((v2 and num(e) > s2) or (not v2 and num(e) > hi)) then
      row.end_snapshot = NULL -- as at s2
    end
    -- shown rows: encryption keys redacted (docs/security.md)
    on_row(rel, kind, moraine.redact(info[rel], row), note)
    for _, child in ipairs(kids[rel] or {}) do
      for _, c in ipairs(children and children[child] or {}) do on_row(child, kind, moraine.redact(info[child], c), note) end
    end
  end
  local pos = {}
  for i, name in ipairs(DIFF_ORDER) do pos[name] = i end
  for i, rel in ipairs(rels) do pos[rel.name] = pos[rel.name] or (#DIFF_ORDER + i) end
  local order = {}
  for _, rel in ipairs(rels) do order[#order + 1] = rel end
  table.sort(order, function(a, b) return pos[a.name] < pos[b.name] end)
  local n = 0
  for _, rel in ipairs(order) do
    local cols = {}
    for _, c in ipairs(rel.columns) do cols[c] = true end
    local it, b_of, e_of
    if rel.placement == "temporal" and cols.begin_snapshot then
      b_of, e_of = "begin_snapshot", "end_snapshot"
    elseif rel.placement == "snapshot" then
      b_of = "snapshot_id"
    elseif rel.placement == "rows" and cols.begin_snapshot then
      b_of, e_of = "begin_snapshot", cols.end_snapshot and "end_snapshot" or nil
    end
    if b_of then
      it = rd:scan(rel.name, { at = ALL, changed = { s1, s2 } })
      for row, children in it do
        classify(rel.name, row, row[b_of], e_of and row[e_of] or nil, rel.placement ~= "rows" and children or nil)
      end
      n = n + (entries and entries[rel.name] or 0)
      if tick then tick(n) end
      local names = { rel.name }
      for _, c in ipairs(kids[rel.name] or {}) do names[#names + 1] = c end
      on_group(names)
    end
  end
  if tick then tick(n) end
end

-- Entries diff_walk reads (ducklake_* versions in the current, history,
-- snapshot and rows subspaces), from db:stats: the total of its progress, and
-- the entries of each relation walked (relation name -> count).
local function diff_entries(db)
  local ok, st = pcall(db.stats, db)
  if not ok then return 0, {} end
  local walked = {}
  for _, rel in ipairs(db:relations()) do
    local has_begin = false
    for _, c in ipairs(rel.columns) do if c == "begin_snapshot" then has_begin = true end end
    if rel.placement == "snapshot" or (has_begin and (rel.placement == "temporal" or rel.placement == "rows")) then
      walked[rel.name] = true
    end
  end
  local total, per = 0, {}
  for _, x in ipairs(st) do
    if not is_null(x.relation) and walked[x.relation] and x.subspace ~= "M" then
      total = total + num(x.entries)
      per[x.relation] = (per[x.relation] or 0) + num(x.entries)
    end
  end
  return total, per
end

-- "+3 data files (1 never visible), -1 partition spec" for counts[rel] = {added, removed, never, ended}
local function diff_summary_text(order, counts, s2)
  local parts = {}
  for _, rel in ipairs(order) do
    local c = counts[rel]
    if c.added > 0 then
      local notes = {}
      if c.never > 0 then notes[#notes + 1] = c.never .. " never visible" end
      if c.ended > 0 then notes[#notes + 1] = c.ended .. " ended again by " .. istr(s2) end
      parts[#parts + 1] = "+" .. c.added .. " " .. noun(rel, c.added) .. (#notes > 0 and (" (" .. concat(notes, ", ") .. ")") or "")
    end
    if c.removed > 0 then parts[#parts + 1] = "-" .. c.removed .. " " .. noun(rel, c.removed) end
  end
  return #parts > 0 and concat(parts, ", ") or "no change"
end

local SUMMARY_COLS = { "table", "added", "removed", "never_visible", "ended_again" }

local function diff(ctx, a, b)
  local s1, s2 = parse_int(a), parse_int(b)
  if not s1 then usage_fail("diff expects two snapshot ids (integers), got '" .. a .. "'", "diff") end
  if not s2 then usage_fail("diff expects two snapshot ids (integers), got '" .. b .. "'", "diff") end
  local summary_only = ctx.opts.summary ~= nil
  local db = open_read(ctx.dir)
  local out = io.stdout
  local counts, order = {}, {}
  local function count_of(rel)
    local c = counts[rel]
    if not c then
      c = { added = 0, removed = 0, never = 0, ended = 0 }
      counts[rel] = c
      order[#order + 1] = rel
    end
    return c
  end
  -- spools: rows wait in unnamed temporary files (io.tmpfile, gone when
  -- closed), never in memory; text: one per relation, printed when its
  -- relation group is done; JSON: one per relation and kind, printed at the end
  local spools = {}
  local function spool(k)
    local f = spools[k]
    if not f then
      f = assert(io.tmpfile())
      spools[k] = f
    end
    return f
  end
  local cols_of_rel = {}
  local function rel_cols(rel)
    if not cols_of_rel[rel] then cols_of_rel[rel] = relation_columns(db, rel) end
    return cols_of_rel[rel]
  end
  local heading_done = false
  -- the text spooled is each cell as printed: exact (NULL \N) when piped
  local aligned = isatty(1)
  local null_text = cell(NULL, not aligned)
  local function on_row(rel, kind, row, note)
    local c = count_of(rel)
    c[kind] = c[kind] + 1
    if note == "never visible" then c.never = c.never + 1 elseif note then c.ended = c.ended + 1 end
    if summary_only then return end
    if ctx.json then
      spool(kind .. "\0" .. rel):write(row_json(rel_cols(rel), row), "\n")
    else
      local cells = { kind == "added" and (note and ("+ " .. note) or "+") or "-" }
      for i, col in ipairs(rel_cols(rel)) do cells[i + 1] = cell(row[col], not aligned) end
      spool(rel):write(concat(cells, "\t"), "\n")
    end
  end
  local function print_spooled(rel)
    local f = spools[rel]
    if not f then return end
    spools[rel] = nil
    f:seek("set", 0)
    if not heading_done then
      out:write("diff ", istr(s1), " -> ", istr(s2), " (each row as it was at ", istr(s2), ")\n")
      heading_done = true
    end
    out:write("\n", rel, ":\n")
    local tc = { { key = 1, title = "change", text = true } }
    for i, c in ipairs(rel_cols(rel)) do tc[i + 1] = { key = i + 1, title = c, text = true } end
    local widths, first, chunk = {}, true, {}
    local function flush()
      if #chunk == 0 then return end
      for i, c in ipairs(tc) do
        local right = i > 1
        for _, r in ipairs(chunk) do
          local v = r[i]
          if not (v == "" or v == null_text or v:match("^%-?%d+$")) then right = false break end
        end
        c.right = right
      end
      print_table(tc, chunk, { indent = aligned and "  " or "", aligned = aligned, no_header = not first, widths = widths })
      first, chunk = false, {}
    end
    for line in f:lines() do
      local r = {}
      for v in (line .. "\t"):gmatch("([^\t]*)\t") do r[#r + 1] = v end
      chunk[#chunk + 1] = r
      if #chunk >= 1000 then flush() end
    end
    flush()
    f:close()
  end
  local function on_group(names)
    if summary_only or ctx.json then return end
    for _, rel in ipairs(names) do print_spooled(rel) end
  end
  local meter, finish = nil, function() end
  -- rows printed to a terminal show the progress themselves (a progress line
  -- on the same terminal would be torn by them), unless --progress asks
  if output.force_progress() or summary_only or ctx.json or not isatty(1) then
    meter, finish = progress_meter("diff " .. istr(s1) .. " -> " .. istr(s2), "entries")
  end
  local total, entries
  local ok, err = pcall(db.read, db, function(rd)
    check_snapshot(rd, s1)
    check_snapshot(rd, s2)
    if meter then
      total, entries = diff_entries(db)
      meter(0, total)
    end
    diff_walk(db, rd, s1, s2, on_row, on_group, meter and function(n) meter(n, math.max(total, n)) end, entries)
  end)
  finish(ok)
  if not ok then
    for _, f in pairs(spools) do f:close() end
    db:close()
    error(err, 0)
  end
  -- relations in the order diff_walk met them (main objects, each followed by its children)
  local changed = {}
  for _, rel in ipairs(order) do
    local c = counts[rel]
    if c.added + c.removed > 0 then changed[#changed + 1] = rel end
  end
  if ctx.json then
    if summary_only then
      local arr = {}
      for i, rel in ipairs(changed) do
        local c = counts[rel]
        arr[i] = obj(SUMMARY_COLS, { table = rel, added = c.added, removed = c.removed, never_visible = c.never,
          ended_again = c.ended })
      end
      db:close()
      return print_json(obj({ "from", "to", "tables" }, { from = s1, to = s2, tables = arr }))
    end
    out:write("{", J("from"), ":", J(s1), ",", J("to"), ":", J(s2))
    for _, kind in ipairs({ "added", "removed" }) do
      out:write(",", J(kind), ":{")
      local firstrel = true
      for _, rel in ipairs(changed) do
        local f = spools[kind .. "\0" .. rel]
        if f then
          spools[kind .. "\0" .. rel] = nil
          f:seek("set", 0)
          out:write(firstrel and "" or ",", J(rel), ":[")
          firstrel = false
          local firstrow = true
          for line in f:lines() do
            out:write(firstrow and "" or ",", line)
            firstrow = false
          end
          out:write("]")
          f:close()
        end
      end
      out:write("}")
    end
    out:write("}\n")
    db:close()
    return
  end
  db:close()
  if summary_only then
    local rows = {}
    for i, rel in ipairs(changed) do
      local c = counts[rel]
      rows[i] = { table = rel, added = c.added, removed = c.removed, never_visible = c.never, ended_again = c.ended }
    end
    if #rows > 0 then
      print_table({ { key = "table" }, { key = "added" }, { key = "removed" }, { key = "never_visible", title = "never visible" },
        { key = "ended_again", title = "ended again by " .. istr(s2) } }, rows)
      out:write("\n")
    end
  elseif heading_done then
    out:write("\n")
  end
  out:write("diff ", istr(s1), " -> ", istr(s2), ": ", diff_summary_text(changed, counts, s2), "\n")
end

--- The help of `moraine diff` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = HELP

--- The command: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`,
-- `opts`; ... the positional arguments), returning the exit status (nil: 0).
-- @table run
M.run = { diff = diff }

return M
