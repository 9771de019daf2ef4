--- moraine.cli.tables — `moraine tables`: the tables at a snapshot with their
-- partition and sort specs.
-- @module moraine.cli.tables

local moraine = require "moraine"
local util = require "moraine.cli.util"
local output = require "moraine.cli.output"
local catalog = require "moraine.cli.catalog"
local catalog_version = require "moraine.catalog_version"

local NULL = moraine.null
local istr = util.istr
local is_null = util.is_null
local print_table = output.print_table
local obj = output.obj
local print_json = output.print_json
local isatty = output.isatty
local open_read = catalog.open_read
local snapshot_arg = catalog.snapshot_arg
local tables_at = catalog.tables_at
local partition_sql = catalog.partition_sql
local sort_sql = catalog.sort_sql
local partition_state = catalog.partition_state
local PART_RESET_TEXT = catalog.PART_RESET_TEXT
local PART_NONE_TEXT = catalog.PART_NONE_TEXT
local SORT_NONE_TEXT = catalog.SORT_NONE_TEXT

local M = {}

local HELP = {
  tables = {
    synopsis = "moraine [-c DIR] tables [--at S] [--json]",
    summary = "list the tables with their partition and sort specs",
    text = [[
Lists the tables visible at snapshot S (default: the newest): schema, table,
table_id, number of columns (top-level: the fields of a STRUCT column are
not counted), the partition spec in force in DuckLake's SQL form
("year(ts), bucket(4, id)", column names as of S), the sort spec ("amount
DESC NULLS_LAST, ..."), and the number of data files live at S.
A partition spec with no keys (RESET PARTITIONED BY) reads
"unpartitioned (reset)", no partition spec at all "unpartitioned", no sort
spec (never set, or RESET SORTED BY) "unsorted". In --json, partition and
sort are the SQL form or null, with partition_state "partitioned", "reset"
or "none" and sort_state "sorted" or "none".]],
    options = { { "--at S", "read the catalog as of snapshot S (an existing snapshot id)" },
      { "--json", "one JSON array of table objects" } },
    example = "moraine tables --at 9",
    flags = { ["--at"] = "at" },
    json = true,
    nargs = { 0, 0 },
  },
}

local TABLES_COLS = { "schema", "table", "table_id", "columns", "partition_id", "partition", "partition_keys",
  "partition_state", "sort_id", "sort", "sort_state", "files" }

local function table_summary(rd, t, S)
  local ncols = 0
  for c in rd:scan("ducklake_column", { at = S, table_id = t.id }) do
    if is_null(c.parent_column) then ncols = ncols + 1 end -- STRUCT fields are not columns of the table
  end
  local names = catalog.column_names(rd, t.id, S)
  local p = rd:partition_spec(t.id, S)
  local s = rd:sort_spec(t.id, S)
  -- counted by a batch read that decodes no column and no child row
  local nfiles = tonumber(rd:files_batch(t.id, S, { columns = {}, partition_values = false }).n)
  local pstate = partition_state(p)
  return { schema = t.schema, table = t.name, table_id = t.id, columns = ncols,
    partition_id = p and p.partition_id or NULL, partition = pstate == "partitioned" and partition_sql(p, names) or NULL,
    partition_keys = p and #p.columns or 0, partition_state = pstate, sort_id = s and s.sort_id or NULL,
    sort = s and sort_sql(s) or NULL, sort_state = s and "sorted" or "none", files = nfiles }
end

local function tables(ctx)
  local db = open_read(ctx.dir)
  local rows, S, ver = {}, nil, nil
  db:read(function(rd)
    S = snapshot_arg(ctx, rd)
    ver = catalog_version.of(rd)
    for _, t in ipairs(tables_at(rd, S)) do rows[#rows + 1] = table_summary(rd, t, S) end
  end)
  db:close()
  if catalog_version.compare(ver or "", catalog_version.CURRENT) ~= 0 then
    io.stderr:write("note: DuckLake catalog version ", catalog_version.describe(ver), "\n")
  end
  if ctx.json then
    local arr = {}
    for i, r in ipairs(rows) do arr[i] = obj(TABLES_COLS, r) end
    return print_json(arr)
  end
  for _, r in ipairs(rows) do
    if r.partition_state == "reset" then r.partition = PART_RESET_TEXT
    elseif r.partition_state == "none" then r.partition = PART_NONE_TEXT end
    if r.sort == NULL then r.sort = SORT_NONE_TEXT end
  end
  if isatty(1) then
    io.stdout:write("tables at snapshot ", istr(S), ", DuckLake catalog version ", catalog_version.describe(ver), "\n")
  end
  print_table({ { key = "schema" }, { key = "table" }, { key = "table_id" }, { key = "columns" },
    { key = "partition", title = "partition spec" }, { key = "sort", title = "sort spec" },
    { key = "files", title = "live files" } }, rows)
end

--- The help of `moraine tables` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = HELP

--- The command: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`,
-- `opts`; ... the positional arguments), returning the exit status (nil: 0).
-- @table run
M.run = { tables = tables }

return M
