--- moraine.cli.history — `moraine history`: a table's partition and sort spec
-- timeline and the mixed file layout partition evolution left.
-- @module moraine.cli.history

local moraine = require "moraine"
local errors = require "moraine.cli.errors"
local util = require "moraine.cli.util"
local output = require "moraine.cli.output"
local catalog = require "moraine.cli.catalog"
local catalog_version = require "moraine.catalog_version"
local layout_cmd = require "moraine.cli.layout"
local tf = require "moraine.tablefiles"

local NULL = moraine.null
local ALL = moraine.ALL
local concat = table.concat
local fail = errors.fail
local istr = util.istr
local key = util.key
local is_null = util.is_null
local num = util.num
local print_table = output.print_table
local obj = output.obj
local print_json = output.print_json
local open_read = catalog.open_read
local check_snapshot = catalog.check_snapshot
local tables_at = catalog.tables_at
local qualified = catalog.qualified
local find_table = catalog.find_table
local table_versions = catalog.table_versions
local lifetime = catalog.lifetime
local resolve_table = catalog.resolve_table
local column_names = catalog.column_names
local partition_sql = catalog.partition_sql
local sort_sql = catalog.sort_sql
local partition_state = catalog.partition_state
local PART_RESET_TEXT = catalog.PART_RESET_TEXT
local PART_NONE_TEXT = catalog.PART_NONE_TEXT
local SORT_NONE_TEXT = catalog.SORT_NONE_TEXT

local M = {}

local HELP = {
  history = {
    synopsis = "moraine [-c DIR] history TABLE [--at S] [--table-id ID] [--svg FILE] [--json]",
    summary = "partition and sort spec timeline, and the mixed file layout",
    text = [[
Shows every version of TABLE's partition spec and sort spec: id, the
snapshot it began at, the snapshot it ended at ("live" if it has not),
its keys, and "never visible" for a spec that began and ended in the same
snapshot (two partition changes in one transaction). A spec's columns are
named as they were named when the spec was set (its begin_snapshot), in
the timeline and in the layout alike. A partition spec with no keys reads
"unpartitioned (reset)"; a sort spec that ended with none after it is noted
"then unsorted (reset)". Then the mixed layout left by partition evolution:
for each partition spec that live files still use, the number of files,
their rows (sum of record_count) and bytes (sum of file_size_bytes); files
written with no spec (partition_id NULL) are one "unpartitioned" group,
counted apart from the specs. A file whose record_count or file_size_bytes
is NULL (unknown) makes its group's rows or bytes NULL (and the shares of
rows "unknown"), not a sum of the known ones; a note counts such files
(--json: unknown_record_count_files, unknown_file_size_files). A NULL
partition_key_index or sort_key_index is refused (EINVAL naming the row).
Files of an old spec can only be pruned at
that spec's granularity until they are rewritten or expire.
TABLE is "name", "schema.name" or "#ID" (a table_id; or --table-id ID).
With --at S, TABLE is the table so named at S, the timeline is as known
at S and the layout is at S: this reaches a dropped table, or one of two
tables that had the same name. A dropped table named by its id shows its
layout at the last snapshot it was live at. In --json each spec and layout group has
partition_state ("partitioned", "reset", "none"), keys null when it has
none, and layout_specs / unpartitioned_files count the groups.]],
    options = { { "--at S", "the table named TABLE at snapshot S; timeline and layout as of S" },
      { "--table-id ID", "the table by its table_id, instead of TABLE (the same as #ID)" },
      { "--svg FILE", "also write the picture: the spec timeline and rows per spec (docs/layout.md)" },
      { "--json", "one JSON object: partition_specs, sort_specs, layout" } },
    example = "moraine history events && moraine history --table-id 1",
    flags = { ["--at"] = "at", ["--table-id"] = "table_id", ["--svg"] = "svg" },
    json = true,
    nargs = { 1, 1 },
    args = { "TABLE" },
  },
}

local PSPEC_COLS = { "partition_id", "begin_snapshot", "end_snapshot", "keys", "key_count", "partition_state",
  "never_visible" }
local SSPEC_COLS = { "sort_id", "begin_snapshot", "end_snapshot", "keys", "never_visible", "reset_at_end" }
local LAYOUT_COLS = { "partition_id", "keys", "partition_state", "state", "files", "rows", "bytes" }

-- The table history works on, and the snapshot its layout is taken at:
--   #ID            that table_id: its whole timeline; the layout at the newest
--                  snapshot, or at the last one it was live at if dropped;
--   TABLE --at S   the table so named at S: the timeline as known at S
--                  (versions begun by S; one that ended after S is live then)
--                  and the layout at S;
--   TABLE          named at the newest snapshot, else among every version of
--                  ducklake_table when the name was one table's only (a
--                  dropped table still has a history).
-- Returns t, layout snapshot, as_of (S with --at, else nil).
local function history_target(rd, ctx, name, last)
  if ctx.at ~= nil then
    local S = check_snapshot(rd, ctx.at)
    return resolve_table(rd, name, S, " --at " .. istr(S)), S, S
  end
  local id = name:match("^#(%d+)$")
  local versions = table_versions(rd)
  if id then
    local mine = {}
    for _, v in ipairs(versions) do if key(v.id) == id then mine[#mine + 1] = v end end
    if #mine == 0 then
      fail("no table with table_id " .. id .. " in the catalog", "see 'moraine tables --at S' for the tables and their ids")
    end
    local _, _, hi = lifetime(mine)
    local newest = mine[1]
    for _, v in ipairs(mine) do if num(v.first) > num(newest.first) then newest = v end end
    return newest, hi or last, nil
  end
  local t = find_table(tables_at(rd, last), name)
  if t then return t, last, nil end
  local ok, res = pcall(resolve_table, rd, name, last)
  if ok then return res, last, nil end
  local found, amb = find_table(versions, name)
  local ids = {}
  for _, x in ipairs(amb or { found }) do ids[key(x.id)] = x end
  if next(ids) ~= nil and next(ids, next(ids)) == nil then
    local k = next(ids)
    local mine = {}
    for _, v in ipairs(versions) do if key(v.id) == k then mine[#mine + 1] = v end end
    local _, _, hi = lifetime(mine)
    return ids[k], hi or last, nil
  end
  error(res, 0)
end

local function history(ctx, tname)
  local db = open_read(ctx.dir)
  local t, pspecs, sspecs, layout, last, at_layout, as_of = nil, {}, {}, {}, nil, nil, nil
  db:read(function(rd)
    last = rd:last_snapshot()
    t, at_layout, as_of = history_target(rd, ctx, tname, last)
    local T = t.id
    local names_cache = {}
    local function names_at(s)
      local k = key(s)
      if not names_cache[k] then names_cache[k] = column_names(rd, T, s) end
      return names_cache[k]
    end
    -- a spec's keys named with the column names in force at its own begin
    -- snapshot (when it was set), in the timeline and the layout alike
    local function spec_keys(p)
      if partition_state(p) ~= "partitioned" then return NULL end
      return partition_sql(p, names_at(p.begin_snapshot))
    end
    local function seen_by(row) -- the version as known at --at S (nil: not begun by S)
      if as_of == nil then return row end
      if num(row.begin_snapshot) > as_of then return nil end
      if not is_null(row.end_snapshot) and num(row.end_snapshot) > as_of then row.end_snapshot = NULL end
      return row
    end
    local function state_of(row)
      if is_null(row.end_snapshot) then return "live" end
      if key(row.end_snapshot) == key(row.begin_snapshot) then return "never visible" end
      return "ended"
    end
    for p, ch in rd:scan("ducklake_partition_info", { at = ALL, table_id = T }) do
      p.columns = ch.ducklake_partition_column or {}
      for _, c in ipairs(p.columns) do
        c.partition_id, c.table_id = c.partition_id or p.partition_id, c.table_id or T
        tf.need("ducklake_partition_column", c, { "partition_id", "table_id", "partition_key_index" },
          "partition_key_index", "order the spec's keys")
      end
      table.sort(p.columns, function(a, b) return num(a.partition_key_index) < num(b.partition_key_index) end)
      if seen_by(p) then
        pspecs[#pspecs + 1] = { partition_id = p.partition_id, begin_snapshot = p.begin_snapshot,
          end_snapshot = p.end_snapshot, keys = spec_keys(p), key_count = #p.columns, partition_state = partition_state(p),
          never_visible = state_of(p) == "never visible", state = state_of(p) }
      end
    end
    for s, ch in catalog_version.scan_if_present(rd, "ducklake_sort_info", { at = ALL, table_id = T }) do
      s.expressions = ch.ducklake_sort_expression or {}
      for _, e in ipairs(s.expressions) do
        e.sort_id, e.table_id = e.sort_id or s.sort_id, e.table_id or T
        tf.need("ducklake_sort_expression", e, { "sort_id", "table_id", "sort_key_index" }, "sort_key_index",
          "order the spec's keys")
      end
      table.sort(s.expressions, function(a, b) return num(a.sort_key_index) < num(b.sort_key_index) end)
      if seen_by(s) then
        sspecs[#sspecs + 1] = { sort_id = s.sort_id, begin_snapshot = s.begin_snapshot, end_snapshot = s.end_snapshot,
          keys = sort_sql(s), never_visible = state_of(s) == "never visible", state = state_of(s) }
      end
    end
    local function by_begin(id)
      return function(a, b)
        if num(a.begin_snapshot) ~= num(b.begin_snapshot) then return num(a.begin_snapshot) < num(b.begin_snapshot) end
        return num(a[id]) < num(b[id])
      end
    end
    table.sort(pspecs, by_begin("partition_id"))
    table.sort(sspecs, by_begin("sort_id"))
    -- a sort spec that ended with no successor and the table still there: RESET SORTED BY
    local table_end
    for _, v in ipairs(table_versions(rd)) do
      if key(v.id) == key(T) then
        if v.last == nil then table_end = false elseif table_end ~= false then
          table_end = math.max(table_end or 0, v.last + 1)
        end
      end
    end
    for _, s in ipairs(sspecs) do
      local reset = false
      if s.state == "ended" then
        reset = true
        for _, o in ipairs(sspecs) do
          if o ~= s and key(o.begin_snapshot) == key(s.end_snapshot) then reset = false end
        end
        if table_end and num(s.end_snapshot) == table_end then reset = false end
      end
      s.reset_at_end = reset
    end
    -- the mixed layout at the layout snapshot
    local groups, order = {}, {}
    for f in rd:files(T, at_layout) do
      local k = key(f.partition_id)
      local g = groups[k]
      if not g then
        g = { partition_id = f.partition_id, files = 0, rows = 0, bytes = 0, unknown_rows = 0, unknown_bytes = 0 }
        groups[k] = g
        order[#order + 1] = g
      end
      g.files = g.files + 1
      -- a NULL count is unknown: the group's sum is unknown (NULL), not a sum of the known ones
      if is_null(f.record_count) then g.unknown_rows = g.unknown_rows + 1 else g.rows = tf.add_count(g.rows, f.record_count, "record_count") end
      if is_null(f.file_size_bytes) then g.unknown_bytes = g.unknown_bytes + 1
      else g.bytes = tf.add_count(g.bytes, f.file_size_bytes, "file_size_bytes") end
    end
    for _, g in ipairs(order) do
      if g.unknown_rows > 0 then g.rows = NULL end
      if g.unknown_bytes > 0 then g.bytes = NULL end
      if is_null(g.partition_id) then
        g.keys, g.partition_state, g.state = NULL, "none", "no spec (written unpartitioned)"
      else
        local spec = rd:partition_spec_by_id(T, g.partition_id)
        if spec then
          g.keys, g.partition_state = spec_keys(spec), partition_state(spec)
          if as_of and not is_null(spec.end_snapshot) and num(spec.end_snapshot) > as_of then spec.end_snapshot = NULL end
          g.state = state_of(spec)
          if g.state == "ended" then g.state = "ended at " .. istr(spec.end_snapshot) end
        else
          g.keys, g.partition_state, g.state = NULL, "none", "unknown spec"
        end
      end
      layout[#layout + 1] = g
    end
    table.sort(layout, function(a, b)
      if is_null(a.partition_id) ~= is_null(b.partition_id) then return not is_null(a.partition_id) end
      if is_null(a.partition_id) then return false end
      return num(a.partition_id) < num(b.partition_id)
    end)
  end)
  if ctx.opts.svg then
    layout_cmd.history_svg(db, t.id, at_layout, ctx.opts.svg)
  end
  db:close()
  -- the layout's groups: files under each partition spec, and the files
  -- written with no spec (partition_id NULL), counted apart
  local spec_groups, total_files, total_rows, unpart_files = 0, 0, 0, 0
  local unknown_rows, unknown_bytes = 0, 0
  for _, g in ipairs(layout) do
    total_files = total_files + g.files
    unknown_rows, unknown_bytes = unknown_rows + g.unknown_rows, unknown_bytes + g.unknown_bytes
    if not is_null(total_rows) then total_rows = is_null(g.rows) and NULL or tf.add_count(total_rows, g.rows, "record_count") end
    if is_null(g.partition_id) then unpart_files = unpart_files + g.files else spec_groups = spec_groups + 1 end
  end
  if ctx.json then
    local function arr(rows, order)
      local a = {}
      for i, r in ipairs(rows) do a[i] = obj(order, r) end
      return a
    end
    return print_json(obj({ "schema", "table", "table_id", "last_snapshot", "layout_snapshot", "partition_specs",
      "sort_specs", "layout", "layout_files", "layout_specs", "unpartitioned_files", "unknown_record_count_files",
      "unknown_file_size_files" },
      { schema = t.schema, table = t.name, table_id = t.id, last_snapshot = as_of or last, layout_snapshot = at_layout,
        partition_specs = arr(pspecs, PSPEC_COLS), sort_specs = arr(sspecs, SSPEC_COLS), layout = arr(layout, LAYOUT_COLS),
        layout_files = total_files, layout_specs = spec_groups, unpartitioned_files = unpart_files,
        unknown_record_count_files = unknown_rows, unknown_file_size_files = unknown_bytes }))
  end
  local out = io.stdout
  local function timeline(rows)
    for _, r in ipairs(rows) do
      r.begin_text = istr(r.begin_snapshot)
      r.end_text = is_null(r.end_snapshot) and "live" or istr(r.end_snapshot)
      if r.partition_state == "reset" then r.keys = PART_RESET_TEXT end
      local notes = {}
      if r.never_visible then notes[#notes + 1] = "never visible" end
      if r.reset_at_end then notes[#notes + 1] = "then " .. SORT_NONE_TEXT .. " (reset)" end
      r.note = concat(notes, "; ")
    end
  end
  timeline(pspecs)
  timeline(sspecs)
  out:write(qualified(t), " (table_id ", istr(t.id), "): spec history up to snapshot ", istr(as_of or last), "\n\npartition specs:\n")
  if #pspecs == 0 then out:write("  (never partitioned)\n") else
    print_table({ { key = "partition_id" }, { key = "begin_text", title = "begin" }, { key = "end_text", title = "end" },
      { key = "keys" }, { key = "note" } }, pspecs, { indent = "  " })
  end
  out:write("\nsort specs:\n")
  if #sspecs == 0 then out:write("  (never sorted)\n") else
    print_table({ { key = "sort_id" }, { key = "begin_text", title = "begin" }, { key = "end_text", title = "end" },
      { key = "keys" }, { key = "note" } }, sspecs, { indent = "  " })
  end
  local parts = {}
  if spec_groups > 0 then
    parts[#parts + 1] = (total_files - unpart_files) .. " under " .. spec_groups .. " partition spec" ..
      (spec_groups == 1 and "" or "s")
  end
  if unpart_files > 0 then parts[#parts + 1] = unpart_files .. " " .. PART_NONE_TEXT end
  out:write("\nlayout at snapshot ", istr(at_layout), ": ", total_files, " live file", total_files == 1 and "" or "s",
    #parts > 0 and (" (" .. concat(parts, ", ") .. ")") or "", "\n")
  if #layout > 0 then
    for _, g in ipairs(layout) do
      if g.partition_state == "none" then g.keys = PART_NONE_TEXT
      elseif g.partition_state == "reset" then g.keys = PART_RESET_TEXT end
      if is_null(total_rows) then g.share = "unknown"
      else g.share = total_rows > 0 and string.format("%.1f%%", g.rows * 100 / total_rows) or "-" end
      if is_null(g.partition_id) then g.partition_id = NULL end
    end
    print_table({ { key = "partition_id" }, { key = "keys" }, { key = "state" }, { key = "files" },
      { key = "rows" }, { key = "bytes" }, { key = "share", title = "share of rows", right = true } }, layout,
      { indent = "  " })
    if #layout > 1 then
      out:write("  (files of older specs are pruned only at their own granularity until rewritten or expired)\n")
    end
    if unknown_rows > 0 or unknown_bytes > 0 then
      out:write("  (unknown: ", unknown_rows, " file", unknown_rows == 1 and "" or "s", " with a NULL record_count, ",
        unknown_bytes, " with a NULL file_size_bytes; a group's rows or bytes with one reads NULL, not the sum of the others)\n")
    end
  end
end

--- The help of `moraine history` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = HELP

--- The command: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`,
-- `opts`; ... the positional arguments), returning the exit status (nil: 0).
-- @table run
M.run = { history = history }

return M
