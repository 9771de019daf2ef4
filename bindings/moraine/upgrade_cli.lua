--- moraine.upgrade_cli — the `moraine upgrade` command.
--
-- scripts/moraine parses the command line (`help` gives the synopsis,
-- options and argument count) and calls `run(ctx, tools)`; the migration
-- itself is moraine.upgrade's.
-- @module moraine.upgrade_cli

local upgrade = require "moraine.upgrade"

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
Refused on a catalog that is already current, of an unknown version, or in
the middle of a sync round (finish it with moraine sync first). No other
process may have the catalog open meanwhile. docs/upgrade.md.]],
  options = { { "--dry-run", "check that the catalog can be migrated and say what would be done; change nothing" },
    { "--json", "the result as one JSON object: from, to, tables, dry_run" } },
  example = "moraine -c old.moraine upgrade --dry-run && moraine -c old.moraine upgrade",
  flags = {},
  switches = { ["--dry-run"] = "dry_run" },
  json = true,
  nargs = { 0, 0 },
}

--- The help entry of `moraine upgrade`, in scripts/moraine's HELP form.
M.help = HELP

--- Runs `moraine upgrade` on `ctx.dir`.
-- @tparam table ctx scripts/moraine's context: `dir`, `json`, `opts.dry_run`
-- @tparam table tools `print_json(doc)` and `obj(keys, values)` of scripts/moraine
-- @return nil (exit status 0); errors are moraine errors, raised
function M.run(ctx, tools)
  local dry = ctx.opts.dry_run == true
  local r = upgrade.upgrade(ctx.dir, { dry_run = dry })
  if ctx.json then
    return tools.print_json(tools.obj({ "from", "to", "tables", "dry_run" },
      { from = r.from, to = r.to, tables = r.tables, dry_run = dry }))
  end
  for _, note in ipairs(r.notes) do io.stdout:write(note, "\n") end
  if dry then
    io.stdout:write(string.format("%s: DuckLake catalog version %s can be upgraded to %s (%d tables after); "
      .. "nothing changed (--dry-run)\n", ctx.dir, r.from, r.to, r.tables))
  else
    io.stdout:write(string.format("upgraded %s from DuckLake catalog version %s to %s: %d tables, no new snapshot\n",
      ctx.dir, r.from, r.to, r.tables))
  end
end

return M
