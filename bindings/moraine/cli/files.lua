--- moraine.cli.files — `moraine files`: the data files of a table at a snapshot.
-- @module moraine.cli.files

local moraine = require "moraine"
local util = require "moraine.cli.util"
local output = require "moraine.cli.output"
local catalog = require "moraine.cli.catalog"
local columns_present = require("moraine.catalog_version").columns_present

local NULL = moraine.null
local concat = table.concat
local istr = util.istr
local cell = output.cell
local print_table = output.print_table
local obj = output.obj
local print_json = output.print_json
local isatty = output.isatty
local open_read = catalog.open_read
local snapshot_arg = catalog.snapshot_arg
local qualified = catalog.qualified
local resolve_table = catalog.resolve_table
local data_path = catalog.data_path
local join_path = catalog.join_path

local M = {}

local HELP = {
  files = {
    synopsis = "moraine [-c DIR] files TABLE [--at S] [--table-id ID] [--json]",
    summary = "the data files of a table at a snapshot",
    text = [[
Lists the data files of TABLE visible at snapshot S (default: the newest):
data_file_id, partition_id (the spec the file was written under), its
partition values (in text, each value as a cell, joined by ", ": a value
holding ", " blurs them; --json gives the array), record_count, file_size_bytes, the full path (data path,
schema and table folders, file) and its delete file and delete count, if
any. TABLE is "name", "schema.name" or "#ID" (a table_id; quote it in a
shell, or give --table-id ID); a dropped table is reached with --at S at a
snapshot where it was live.]],
    options = { { "--at S", "read the catalog as of snapshot S" },
      { "--table-id ID", "the table by its table_id, instead of TABLE (the same as #ID)" },
      { "--json", "one JSON array of file objects" } },
    example = "moraine files events --at 17",
    flags = { ["--at"] = "at", ["--table-id"] = "table_id" },
    json = true,
    nargs = { 1, 1 },
    args = { "TABLE" },
  },
}

local FILE_COLS = { "data_file_id", "partition_id", "partition_values", "record_count", "file_size_bytes", "path",
  "delete_file", "delete_count" }

local function files(ctx, tname)
  local db = open_read(ctx.dir)
  local rows, t, S = {}, nil, nil
  local fcols = columns_present(db, "ducklake_data_file",
    { "data_file_id", "partition_id", "record_count", "file_size_bytes", "path", "path_is_relative" })
  local dcols = columns_present(db, "ducklake_delete_file", { "path", "path_is_relative", "delete_count" })
  db:read(function(rd)
    S = snapshot_arg(ctx, rd)
    t = resolve_table(rd, tname, S, " --at " .. istr(S))
    local base = join_path(join_path(data_path(rd), t.srow or {}), t.row)
    -- one batch read: the files' columns, partition values and delete files
    -- as arrays (rd:files_batch), no table per file and no stats decoded
    local b = rd:files_batch(t.id, S, { columns = fcols, partition_values = true,
      delete_files = #dcols > 0 and dcols or nil })
    local f, pv, d = b.file, b.partition_values, b.delete_file
    local fr, dr = {}, {}
    for i = 1, tonumber(b.n) do
      local vals = {}
      for j = 1, #pv do
        local v = pv[j][i]
        if v ~= false then vals[#vals + 1] = v end
      end
      for _, c in ipairs(fcols) do fr[c] = f[c][i] end
      local del = NULL
      if d and d.path[i] ~= false then
        for _, c in ipairs(dcols) do dr[c] = d[c][i] end
        del = join_path(base, dr)
      end
      rows[#rows + 1] = { data_file_id = fr.data_file_id, partition_id = fr.partition_id, partition_values = vals,
        record_count = fr.record_count, file_size_bytes = fr.file_size_bytes, path = join_path(base, fr),
        delete_file = del, delete_count = del ~= NULL and dr.delete_count or NULL }
    end
  end)
  db:close()
  if ctx.json then
    local arr = {}
    for i, r in ipairs(rows) do arr[i] = obj(FILE_COLS, r) end
    return print_json(arr)
  end
  -- the partition values of a file: one cell, each value as a cell (NULL
  -- \N when piped), joined by ", "
  local aligned = isatty(1)
  for _, r in ipairs(rows) do
    local parts = {}
    for i, v in ipairs(r.partition_values) do parts[i] = cell(v, not aligned) end
    r.partition_values = concat(parts, ", ")
  end
  if aligned then
    io.stdout:write(qualified(t), " at snapshot ", istr(S), ": ", #rows, " data file", #rows == 1 and "" or "s", "\n")
  end
  print_table({ { key = "data_file_id" }, { key = "partition_id" },
    { key = "partition_values", title = "partition values", text = true },
    { key = "record_count" }, { key = "file_size_bytes" }, { key = "path" }, { key = "delete_file" },
    { key = "delete_count" } }, rows, { aligned = aligned })
end

--- The help of `moraine files` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = HELP

--- The command: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`,
-- `opts`; ... the positional arguments), returning the exit status (nil: 0).
-- @table run
M.run = { files = files }

return M
