--- moraine.cli.upgrade — `moraine upgrade`: migrate an old DuckLake catalog
-- to the current catalog version (the migration itself is moraine.upgrade's).
-- @module moraine.cli.upgrade

local upgrade = require "moraine.upgrade"
local output = require "moraine.cli.output"

local M = {}

local HELP = {
  synopsis = "moraine [-c DIR] upgrade [--dry-run] [--json]",
  summary = "migrate an old DuckLake catalog (v0.1 on) to the current catalog version",
  text = [[
Rewrites a catalog of an older DuckLake catalog version (0.1, 0.2,
0.3-dev1, 0.3, 0.4-dev1, 0.4, 1.0) to the current one, 1.1-dev1, writing
exactly the rows DuckLake's own migration writes when it attaches the
catalog with AUTOMATIC_MIGRATION: added columns with their defaults, new
tables, ducklake_file_column_statistics renamed, v0.1 partition column
positions turned into field ids, per-table schema versions, the version
row. No snapshot is added. The migrated catalog is built beside the old one
and swapped in by renames: a kill leaves the old catalog or the new one,
and a kill in the middle of the swap is finished by the next upgrade.
On a catalog that is already current: it says "nothing to do" and exits 0,
changing nothing (--json: "current":true). Refused on a catalog of an
unknown version, or in the middle of a sync round (finish it with moraine
sync first). No other process may have the catalog open meanwhile.
docs/upgrade.md.]],
  options = { { "--dry-run", "check that the catalog can be migrated and say what would be done; change nothing" },
    { "--json", "the result as one JSON object: from, to, tables, dry_run, current (already at the current version)" } },
  example = "moraine -c old.moraine upgrade --dry-run && moraine -c old.moraine upgrade",
  flags = {},
  switches = { ["--dry-run"] = "dry_run" },
  json = true,
  nargs = { 0, 0 },
}

local function run(ctx)
  local dry = ctx.opts.dry_run == true
  local r = upgrade.upgrade(ctx.dir, { dry_run = dry, if_needed = true })
  if ctx.json then
    return output.print_json(output.obj({ "from", "to", "tables", "dry_run", "current" },
      { from = r.from, to = r.to, tables = r.tables, dry_run = dry, current = r.current == true }))
  end
  for _, note in ipairs(r.notes) do io.stdout:write(note, "\n") end
  if r.current then
    io.stdout:write(string.format("%s: DuckLake catalog version %s is the current one: nothing to do\n", ctx.dir, r.from))
  elseif dry then
    io.stdout:write(string.format("%s: DuckLake catalog version %s can be upgraded to %s (%d tables after); "
      .. "nothing changed (--dry-run)\n", ctx.dir, r.from, r.to, r.tables))
  else
    io.stdout:write(string.format("upgraded %s from DuckLake catalog version %s to %s: %d tables, no new snapshot\n",
      ctx.dir, r.from, r.to, r.tables))
  end
end

--- The help of `moraine upgrade` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = { upgrade = HELP }

--- The command: name -> function(ctx) (ctx: `dir`, `json`, `opts.dry_run`),
-- returning the exit status (nil: 0); errors are moraine errors, raised.
-- @table run
M.run = { upgrade = run }

return M
