--- moraine.cli.snapshots — `moraine snapshots`: every snapshot with its changes.
-- @module moraine.cli.snapshots

local moraine = require "moraine"
local output = require "moraine.cli.output"
local catalog = require "moraine.cli.catalog"

local NULL = moraine.null
local ALL = moraine.ALL
local print_table = output.print_table
local cols_of = output.cols_of
local obj = output.obj
local print_json = output.print_json
local open_read = catalog.open_read

local M = {}

local HELP = {
  snapshots = {
    synopsis = "moraine [-c DIR] snapshots [--json]",
    summary = "list every snapshot with its changes",
    text = [[
Lists every snapshot: snapshot_id, snapshot_time, schema_version,
next_catalog_id, next_file_id, and from ducklake_snapshot_changes
changes_made, author, commit_message and commit_extra_info (the fields of
DuckLake's ducklake_snapshots(), which shows changes_made as a map).]],
    options = { { "--json", "one JSON array of snapshot objects" } },
    example = "moraine snapshots --json",
    flags = {},
    json = true,
    nargs = { 0, 0 },
  },
}

local SNAPSHOT_COLS = { "snapshot_id", "snapshot_time", "schema_version", "next_catalog_id", "next_file_id",
  "changes_made", "author", "commit_message", "commit_extra_info" }

local function snapshots(ctx)
  local db = open_read(ctx.dir)
  local rows = {}
  db:read(function(rd)
    for row, children in rd:scan("ducklake_snapshot", { at = ALL }) do
      local ch = (children.ducklake_snapshot_changes or {})[1] or {}
      rows[#rows + 1] = { snapshot_id = row.snapshot_id, snapshot_time = row.snapshot_time,
        schema_version = row.schema_version, next_catalog_id = row.next_catalog_id, next_file_id = row.next_file_id,
        changes_made = ch.changes_made or NULL, author = ch.author or NULL, commit_message = ch.commit_message or NULL,
        commit_extra_info = ch.commit_extra_info or NULL }
    end
  end)
  db:close()
  if ctx.json then
    local arr = {}
    for i, r in ipairs(rows) do arr[i] = obj(SNAPSHOT_COLS, r) end
    return print_json(arr)
  end
  print_table(cols_of(SNAPSHOT_COLS), rows)
end

--- The help of `moraine snapshots` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = HELP

--- The command: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`,
-- `opts`; ... the positional arguments), returning the exit status (nil: 0).
-- @table run
M.run = { snapshots = snapshots }

return M
