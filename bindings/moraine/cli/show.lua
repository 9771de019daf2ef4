--- moraine.cli.show — `moraine show`: one table's columns, partition spec and
-- sort spec at a snapshot.
-- @module moraine.cli.show

local moraine = require "moraine"
local util = require "moraine.cli.util"
local output = require "moraine.cli.output"
local catalog = require "moraine.cli.catalog"
local tf = require "moraine.tablefiles"

local NULL = moraine.null
local istr = util.istr
local key = util.key
local is_null = util.is_null
local num = util.num
local cell = output.cell
local print_table = output.print_table
local cols_of = output.cols_of
local obj = output.obj
local print_json = output.print_json
local open_read = catalog.open_read
local snapshot_arg = catalog.snapshot_arg
local qualified = catalog.qualified
local resolve_table = catalog.resolve_table
local column_name = catalog.column_name
local partition_sql = catalog.partition_sql
local sort_sql = catalog.sort_sql
local partition_state = catalog.partition_state
local PART_RESET_TEXT = catalog.PART_RESET_TEXT
local PART_NONE_TEXT = catalog.PART_NONE_TEXT
local SORT_NONE_TEXT = catalog.SORT_NONE_TEXT

local M = {}

local HELP = {
  show = {
    synopsis = "moraine [-c DIR] show TABLE [--at S] [--table-id ID] [--json]",
    summary = "one table: columns, partition spec, sort spec",
    text = [[
Shows one table as of snapshot S (default: the newest): its columns
(column_id, name, type, nullable, default; the fields of a STRUCT column,
whose parent_column names it, follow it indented, and in --json sit in its
"children" array), its partition spec (partition_id and each key: index,
column, transform) and its sort spec (sort_id and each key: expression,
direction, null order, dialect). A partition spec with no keys reads
"unpartitioned (reset)", no partition spec "unpartitioned", no sort spec
"unsorted"; --json gives partition_state ("partitioned", "reset", "none")
and sort_state ("sorted", "none"). TABLE is "name" (schema main, or a name
unique across schemas), "schema.name", or "#ID" (a table_id; quote it in a
shell, or give --table-id ID). A dropped table is shown with --at S at a
snapshot where it was live.]],
    options = { { "--at S", "read the catalog as of snapshot S" },
      { "--table-id ID", "the table by its table_id, instead of TABLE (the same as #ID)" }, { "--json", "one JSON object" } },
    example = "moraine show events --at 12",
    flags = { ["--at"] = "at", ["--table-id"] = "table_id" },
    json = true,
    nargs = { 1, 1 },
    args = { "TABLE" },
  },
}

local COLUMN_COLS = { "column_id", "name", "type", "nullable", "default" }
local COLUMN_JSON_COLS = { "column_id", "name", "type", "nullable", "default", "children" }
local PKEY_COLS = { "index", "column_id", "column", "transform" }
local SKEY_COLS = { "index", "expression", "direction", "null_order", "dialect" }

local function show(ctx, tname)
  local db = open_read(ctx.dir)
  local info
  db:read(function(rd)
    local S = snapshot_arg(ctx, rd)
    local t = resolve_table(rd, tname, S, " --at " .. istr(S))
    local cols = {}
    for c in rd:scan("ducklake_column", { at = S, table_id = t.id }) do
      -- show lists the columns in their order: it cannot place one whose order is unknown
      tf.need("ducklake_column", c, { "table_id", "column_id", "begin_snapshot" }, "column_order", "place the column")
      cols[#cols + 1] = c
    end
    table.sort(cols, function(a, b) return num(a.column_order) < num(b.column_order) end)
    -- STRUCT fields (parent_column set) nest under their parent column
    local names, byid, crow = catalog.column_names(rd, t.id, S), {}, {}
    for _, c in ipairs(cols) do
      byid[key(c.column_id)] = { column_id = c.column_id, name = c.column_name, type = c.column_type,
        nullable = c.nulls_allowed, default = c.default_value, children = {} }
    end
    for _, c in ipairs(cols) do
      local parent = not is_null(c.parent_column) and byid[key(c.parent_column)]
      if parent then
        local kids = parent.children
        kids[#kids + 1] = byid[key(c.column_id)]
      else
        crow[#crow + 1] = byid[key(c.column_id)]
      end
    end
    local p, s = rd:partition_spec(t.id, S), rd:sort_spec(t.id, S)
    local pinfo, sinfo
    if p then
      local keys = {}
      for i, c in ipairs(p.columns) do
        keys[i] = { index = c.partition_key_index, column_id = c.column_id, column = column_name(c.column_id, names),
          transform = c.transform }
      end
      pinfo = { partition_id = p.partition_id, begin_snapshot = p.begin_snapshot, keys = keys,
        sql = partition_state(p) == "partitioned" and partition_sql(p, names) or NULL, state = partition_state(p) }
    end
    if s then
      local keys = {}
      for i, e in ipairs(s.expressions) do
        keys[i] = { index = e.sort_key_index, expression = e.expression, direction = e.sort_direction,
          null_order = e.null_order, dialect = e.dialect }
      end
      sinfo = { sort_id = s.sort_id, begin_snapshot = s.begin_snapshot, sql = sort_sql(s), keys = keys }
    end
    info = { t = t, S = S, columns = crow, partition = pinfo, sort = sinfo }
  end)
  db:close()
  local t = info.t
  if ctx.json then
    local function arr(rows, order)
      local a = {}
      for i, r in ipairs(rows) do a[i] = obj(order, r) end
      return a
    end
    local function col_arr(rows)
      local a = {}
      for i, r in ipairs(rows) do
        local x = {}
        for k, v in pairs(r) do x[k] = v end
        x.children = col_arr(r.children)
        a[i] = obj(COLUMN_JSON_COLS, x)
      end
      return a
    end
    local p, s = NULL, NULL
    if info.partition then
      p = obj({ "partition_id", "begin_snapshot", "sql", "keys" },
        { partition_id = info.partition.partition_id, begin_snapshot = info.partition.begin_snapshot,
          sql = info.partition.sql, keys = arr(info.partition.keys, PKEY_COLS) })
    end
    if info.sort then
      s = obj({ "sort_id", "begin_snapshot", "sql", "keys" },
        { sort_id = info.sort.sort_id, begin_snapshot = info.sort.begin_snapshot, sql = info.sort.sql,
          keys = arr(info.sort.keys, SKEY_COLS) })
    end
    return print_json(obj({ "schema", "table", "table_id", "snapshot", "columns", "partition", "partition_state", "sort",
      "sort_state" },
      { schema = t.schema, table = t.name, table_id = t.id, snapshot = info.S,
        columns = col_arr(info.columns), partition = p, partition_state = info.partition and info.partition.state or "none",
        sort = s, sort_state = info.sort and "sorted" or "none" }))
  end
  local out = io.stdout
  out:write(qualified(t), " (table_id ", istr(t.id), ") at snapshot ", istr(info.S), "\n\ncolumns:\n")
  -- a STRUCT's fields follow it, their names indented two spaces per level
  local flat = {}
  local function walk(rows, depth)
    for _, r in ipairs(rows) do
      local x = {}
      for k, v in pairs(r) do x[k] = v end
      -- escaped by print_table; a NULL name stays NULL
      x.name = is_null(r.name) and NULL or string.rep("  ", depth) .. r.name
      flat[#flat + 1] = x
      walk(r.children, depth + 1)
    end
  end
  walk(info.columns, 0)
  print_table(cols_of(COLUMN_COLS), flat, { indent = "  " })
  if info.partition then
    local p = info.partition
    out:write("\npartition spec ", istr(p.partition_id), " (since snapshot ", istr(p.begin_snapshot), "): ",
      p.state == "reset" and PART_RESET_TEXT or cell(p.sql), "\n")
    if #p.keys > 0 then print_table(cols_of(PKEY_COLS), p.keys, { indent = "  " }) end
  else
    out:write("\npartition spec: ", PART_NONE_TEXT, "\n")
  end
  if info.sort then
    local s = info.sort
    out:write("\nsort spec ", istr(s.sort_id), " (since snapshot ", istr(s.begin_snapshot), "): ", cell(s.sql), "\n")
    print_table(cols_of(SKEY_COLS), s.keys, { indent = "  " })
  else
    out:write("\nsort spec: ", SORT_NONE_TEXT, "\n")
  end
end

--- The help of `moraine show` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = HELP

--- The command: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`,
-- `opts`; ... the positional arguments), returning the exit status (nil: 0).
-- @table run
M.run = { show = show }

return M
