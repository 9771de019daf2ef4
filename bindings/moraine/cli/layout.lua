--- moraine.cli.layout — the advisory layout reports as commands: `moraine
-- audit`, `moraine layout` and `moraine clustering`, and the picture of
-- `moraine history --svg FILE`.
--
-- Each command opens the catalog read-only; the reports come from
-- moraine.audit, moraine.layout and moraine.clustering, the pictures from
-- moraine.svg.
-- @module moraine.cli.layout

local moraine = require "moraine"
local audit = require "moraine.audit"
local layout = require "moraine.layout"
local clustering = require "moraine.clustering"
local svg = require "moraine.svg"
local errors = require "moraine.cli.errors"
local output = require "moraine.cli.output"
local catalog = require "moraine.cli.catalog"
-- counts as exact integers (LuaJIT would print a large one as %.14g)
local istr = require("moraine.cli.util").istr

local M = {}
local NULL = moraine.null

local HELP = {
  audit = {
    synopsis = "moraine [-c DIR] audit [TABLE] [--at S] [--json]",
    summary = "check every live file's partition values against its own column bounds",
    text = [[
For every live file of TABLE (default: every table) at snapshot S (default:
the newest), checks each partition value against the file's own min/max
statistics under its own spec's transform, parsed and compared by the
column's type (never as text): identity min = max = value; year, month,
day, hour, epoch_day, epoch_hour: transform(min) = transform(max) = value;
bucket(N) only when min = max (int64 and int32 columns). A violation
proves from the metadata that rows of the file lie outside its partition (a
writer bug that makes pruning drop rows) or that a value cannot be parsed for its
transform; unchecked means the metadata cannot decide (no stats, a bucket
of a range, a month/day/hour whose bounds lie in different periods). Prints
the counts and every finding. Exit status 1 when a violation is found (run
it in a lake's CI). docs/layout.md explains each rule.]],
    options = { { "--at S", "audit the files live at snapshot S (default: the newest)" },
      { "--json", "the report as one JSON object" } },
    example = "moraine audit || echo 'files whose rows span partitions'",
    flags = { ["--at"] = "at" },
    json = true,
    nargs = { 0, 1 },
    args = { "TABLE" },
  },
  layout = {
    synopsis = "moraine [-c DIR] layout TABLE --where PREDICATE [--at S] [--svg FILE] [--json]",
    summary = "what a range predicate reads of a mixed layout, per spec era",
    text = [[
For a range predicate on one column ('col BETWEEN a AND b', 'col = v',
'col >= a', 'col <= b', or a lower and an upper bound joined by AND, as
'col >= a AND col < b'; values bare, quoted or typed as DATE '...'; '<' and
'>' are read as '<=' and '>=', so a file whose bound equals the value is
counted: the counts never miss a file a planner reads), counts
per partition spec era the live files and rows, those left after partition
pruning (DuckLake's transforms, each era at its own granularity), and those
left after min/max pruning too: the files a planner reads. Then estimates
what the older eras would read if rewritten under the live spec (rows
spread evenly between each file's bounds), the rows saved per query and the
number of such queries after which a rewrite pays. From the metadata
alone; docs/layout.md explains each number.]],
    options = { { "--where PREDICATE", "the range predicate (required)" },
      { "--at S", "the files live at snapshot S (default: the newest)" },
      { "--svg FILE", "also write the picture (files per era: all, after partition pruning, read)" },
      { "--json", "the report as one JSON object" } },
    example = "moraine layout events --where \"ts BETWEEN '2025-03-27 10:00:00' AND '2025-03-27 10:59:59'\"",
    flags = { ["--at"] = "at", ["--where"] = "where", ["--svg"] = "svg" },
    json = true,
    nargs = { 1, 1 },
    args = { "TABLE" },
  },
  clustering = {
    synopsis = "moraine [-c DIR] clustering TABLE [COLUMNS] [--share S] [--at S] [--svg FILE] [--json]",
    summary = "clustering health in rank space: share of rows a range reads, against s + N^(-1/k)",
    text = [[
From every live file's min/max on each column (COLUMNS, comma-separated;
default: the live sort spec's columns, else every column with bounds), in
rank space (each column's values replaced by their estimated rank among the
table's rows), the expected share of rows a range selecting a share s of
one column reads: s plus the average width of the files along it; beside
it seed 004's bound s + N^(-1/k) for k columns and N files (the least a
layout reads when the columns vary independently; columns that rise
together, as an id and its time, can read less), for the table
and for each spec era; and for each column whether the current order
serves it (average width below 0.5 and within twice the bound's
N^(-1/k)), partly, or not (width 0.5 or more).]],
    options = { { "--share S", "the range's selectivity s, 0 < s <= 1 (default 0.01)" },
      { "--at S", "the files live at snapshot S (default: the newest)" },
      { "--svg FILE", "also write the picture: files as boxes in rank space of the first two columns, with a query band" },
      { "--json", "the report as one JSON object" } },
    example = "moraine clustering events id,ts --svg events.svg",
    flags = { ["--at"] = "at", ["--svg"] = "svg", ["--share"] = "share" },
    json = true,
    nargs = { 1, 2 },
    args = { "TABLE", "COLUMNS" },
  },
}

local function write_file(path, text)
  local f, err = io.open(path, "wb")
  if not f then errors.fail("cannot write " .. path .. ": " .. tostring(err), "check the --svg path") end
  f:write(text)
  f:close()
end

local function pct(x) return string.format("%.1f%%", x * 100) end
local function num3(x) return string.format("%.3f", x) end

-- a key in DuckLake's SQL form: ts, year(ts), bucket(4, id)
local function key_sql(transform, column)
  column = tostring(column)
  if transform == "identity" then return column end
  local n = transform:match("^bucket%((%d+)%)$")
  if n then return "bucket(" .. n .. ", " .. column .. ")" end
  return transform .. "(" .. column .. ")"
end

local function table_arg(name)
  if name == nil then return nil end
  local id = name:match("^#(%d+)$")
  if id then return tonumber(id) end
  return name
end

local function cmd_audit(ctx, db, tname)
  local rep = errors.with_hint("see 'moraine tables' for the tables", audit.run, db, { table = table_arg(tname), at = ctx.at })
  if ctx.json then
    io.stdout:write(moraine.json_encode(rep, { "snapshot", "files", "ok", "violations", "unchecked", "tables" }), "\n")
  else
    local out = io.stdout
    out:write("audit at snapshot ", rep.snapshot, ": ", rep.files, " live file", rep.files == 1 and "" or "s", " in ",
      #rep.tables, " table", #rep.tables == 1 and "" or "s", ": ", rep.ok, " ok, ", rep.violations, " with violations, ",
      rep.unchecked, " unchecked\n")
    for _, t in ipairs(rep.tables) do
      out:write("\n", tostring(t.schema), ".", tostring(t.table), " (table_id ", t.table_id, "): ", t.files, " files: ", t.ok, " ok, ",
        t.violations, " with violations, ", t.unchecked, " unchecked, ", t.unpartitioned, " written unpartitioned\n")
      if #t.findings > 0 then
        local rows = {}
        for i, f in ipairs(t.findings) do
          rows[i] = { status = f.status, data_file_id = f.data_file_id, partition_id = f.partition_id,
            key = f.key_index ~= NULL and key_sql(f.transform, f.column) or nil, value = f.value, -- no key: empty
            problem = f.problem }
        end
        output.print_table({ { key = "status" }, { key = "data_file_id", title = "file" }, { key = "partition_id", title = "spec" },
          { key = "key" }, { key = "value" }, { key = "problem" } }, rows, { indent = "  " })
      end
    end
  end
  return rep.violations > 0 and 1 or 0
end

local function cmd_layout(ctx, db, tname)
  if not ctx.opts.where then errors.usage_fail("layout needs --where PREDICATE (e.g. \"ts BETWEEN '2025-03-27' AND '2025-03-28'\")", "layout") end
  local rep = errors.with_hint("see 'moraine layout --help' for the predicates it reads", layout.run, db,
    { table = table_arg(tname), where = ctx.opts.where, at = ctx.at })
  if ctx.opts.svg then write_file(ctx.opts.svg, svg.layout(rep)) end
  if ctx.json then
    io.stdout:write(moraine.json_encode(rep, { "snapshot", "schema", "table", "table_id", "column", "where",
      "live_partition_id", "eras", "total", "rewrite" }), "\n")
    return 0
  end
  local out = io.stdout
  out:write(tostring(rep.schema), ".", tostring(rep.table), " at snapshot ", rep.snapshot, ", where ", rep.where, "\n\n")
  local rows = {}
  for i, e in ipairs(rep.eras) do
    rows[i] = { spec = e.partition_id or NULL, keys = e.keys or "unpartitioned", live = e.live and "live" or "",
      files = e.files, rows = istr(e.rows), after_partition = e.partition_files .. " (" .. istr(e.partition_rows) .. " rows)",
      read = e.read_files .. " (" .. istr(e.read_rows) .. " rows)" }
  end
  output.print_table({ { key = "spec" }, { key = "keys" }, { key = "live" }, { key = "files" }, { key = "rows" },
    { key = "after_partition", title = "after partition pruning" }, { key = "read", title = "after min/max: read" } },
    rows, { indent = "  " })
  local T, rw = rep.total, rep.rewrite
  out:write("\nread: ", T.read_files, " of ", T.files, " files, ", istr(T.read_rows), " of ", istr(T.rows), " rows",
    T.rows > 0 and (" (" .. pct(T.read_rows / T.rows) .. ")") or "", "\n")
  if rw.old_files == 0 then
    out:write("every live file is under the live spec: nothing to rewrite\n")
  elseif rw.read_rows_after == nil then
    out:write("older eras: ", rw.old_files, " files, ", istr(rw.old_rows), " rows, ", istr(rw.read_rows_now),
      " read now; the live spec does not prune on ", rep.column, ", so a rewrite saves nothing here\n")
  else
    out:write("older eras: ", rw.old_files, " files, ", istr(rw.old_rows), " rows, ", istr(rw.read_rows_now), " read now, about ",
      istr(rw.read_rows_after), " if rewritten under the live spec (estimate)\n")
    if rw.queries_to_pay then
      out:write("a rewrite saves about ", istr(rw.saving), " rows per such query and pays after about ",
        string.format("%.0f", math.ceil(rw.queries_to_pay)), " of them (", istr(rw.old_rows), " rows rewritten)\n")
    else
      out:write("a rewrite saves nothing for this predicate\n")
    end
  end
  return 0
end

local function cmd_clustering(ctx, db, tname, columns)
  local cols
  if columns then
    cols = {}
    for c in columns:gmatch("[^,]+") do cols[#cols + 1] = c:match("^%s*(.-)%s*$") end
  end
  local share
  if ctx.opts.share then
    share = tonumber(ctx.opts.share)
    if not share or share <= 0 or share > 1 then errors.usage_fail("--share expects a number in (0, 1], got '" .. ctx.opts.share .. "'", "clustering") end
  end
  local rep = errors.with_hint("see 'moraine show TABLE' for its columns", clustering.run, db,
    { table = table_arg(tname), columns = cols, at = ctx.at, share = share })
  if ctx.opts.svg then write_file(ctx.opts.svg, svg.clustering(rep)) end
  if ctx.json then
    rep.files = nil
    io.stdout:write(moraine.json_encode(rep, { "snapshot", "schema", "table", "table_id", "share", "columns",
      "columns_from", "table_result", "eras" }), "\n")
    return 0
  end
  local out = io.stdout
  local t = rep.table_result
  out:write(tostring(rep.schema), ".", tostring(rep.table), " at snapshot ", rep.snapshot, ": ", t.files, " files, ", istr(t.rows), " rows; columns ",
    table.concat(rep.columns, ", "), " (", rep.columns_from, "); a range selecting s = ", tostring(rep.share), "\n\n")
  local rows = {}
  local function add(scope, r)
    for _, c in ipairs(r.columns) do
      rows[#rows + 1] = { scope = scope, files = r.files, column = c.column, width = num3(c.avg_width),
        share = pct(c.share), bound = pct(r.bound), verdict = c.verdict }
    end
  end
  add("table", t)
  for _, e in ipairs(rep.eras) do
    if #rep.eras > 1 then add(e.partition_id and ("spec " .. e.partition_id) or "unpartitioned", e) end
  end
  output.print_table({ { key = "scope" }, { key = "files" }, { key = "column" }, { key = "width", title = "avg width" },
    { key = "share", title = "share read" }, { key = "bound", title = "bound s+N^(-1/k)" }, { key = "verdict" } }, rows,
    { indent = "  " })
  out:write("\nexpected share of rows read, averaged over the columns: ", pct(t.share), " (bound for columns varying independently ",
    pct(t.bound), ")\n")
  return 0
end

-- runs fn(ctx, db, ...) with the catalog open read-only
local function with_catalog(fn)
  return function(ctx, ...)
    local db = catalog.open_read(ctx.dir)
    local ok, status = pcall(fn, ctx, db, ...)
    db:close()
    if not ok then error(status, 0) end
    return status
  end
end

--- The help of `moraine audit`, `moraine layout` and `moraine clustering`
-- (moraine.cli.help prints it; moraine.cli.main parses the command line by it).
-- @table help
M.help = HELP

--- The commands: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`, `opts`
-- with `where`, `svg`, `share`; ... TABLE, COLUMNS), returning the exit status
-- (audit: 1 when a violation is found).
-- @table run
M.run = { audit = with_catalog(cmd_audit), layout = with_catalog(cmd_layout), clustering = with_catalog(cmd_clustering) }

--- Writes the picture of `moraine history` with its svg option: the spec
-- timeline and mixed layout of table `T` (a table_id) at snapshot `S`.
-- @param db the catalog
-- @tparam integer T the table_id
-- @tparam integer S the snapshot
-- @tparam string path the file to write
-- @raise a CLI error when the file cannot be written
function M.history_svg(db, T, S, path)
  write_file(path, svg.history(layout.history(db, { table = T, at = S })))
end

return M
