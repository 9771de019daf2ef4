--- moraine.cli.compact — `moraine compact`: rewrite a catalog's store in key
-- order, in place or to a new directory (the work is moraine.compact's).
-- @module moraine.cli.compact

local compact = require "moraine.compact"
local errors = require "moraine.cli.errors"
local util = require "moraine.cli.util"
local output = require "moraine.cli.output"
local catalog = require "moraine.cli.catalog"

local M = {}

local HELP = {
  synopsis = "moraine [-c DIR] compact [--to DEST] [--json]",
  summary = "rewrite the catalog's store in key order (smallest data.mdb)",
  text = [[
Copies every entry of the catalog, in key order, into a new LMDB file
written page after page (MDB_APPEND): no half-empty page, no free page, the
smallest data.mdb the same rows fit in. The rows, snapshots and history are
exactly the same (moraine export gives the same files). The copy is checked
as moraine verify checks a catalog, and must hold as many entries.
Without --to the catalog is compacted in place: the copy is built in
DIR.compact-tmp and swapped in by renames while compact holds the catalog's
write lock, so no writer commits in between. A kill leaves the old catalog
or the compacted one, and a kill in the middle of the swap is finished by
the next compact (or left as it was: either is whole). Refused, with
nothing changed, while another process has the catalog open (a server, a
sync, a reader: they would go on with the old files), or when a writer
committed during the copy (run it again).
With --to DEST the compacted copy is written to the new directory DEST and
the catalog is left as it is.
A catalog written by an older moraine in store format 2, 3 or 4 (which this
build opens but neither reads nor commits to) is rewritten in format 5 by
the copy: run compact once after upgrading moraine (docs/codec.md,
Versioning).]],
  options = { { "--to DEST", "write the compacted copy to the new directory DEST; leave the catalog as it is" },
    { "--json", "the result as one JSON object: entries, before, after (bytes of data.mdb), to" } },
  example = "moraine -c lake.moraine compact",
  progress = true,
  flags = { ["--to"] = "to" },
  json = true,
  nargs = { 0, 0 },
}

local function mib(n)
  if n < 1048576 then return string.format("%.1f KiB", n / 1024) end
  return string.format("%.1f MiB", n / 1048576)
end

local function run(ctx)
  local dir = ctx.dir
  -- (no catalog at DIR but DIR.compact-new beside it: a swap to finish)
  if (not util.exists(dir) and not util.exists(dir .. ".compact-new"))
      or (util.is_dir(dir) and not util.exists(dir .. "/data.mdb")) then
    errors.fail("no catalog at " .. dir .. "; run 'moraine init' or 'moraine import'", catalog.NO_CATALOG_HINT)
  end
  if util.is_dir(dir) then catalog.refuse_unfinished_import(dir) end
  local to = ctx.opts.to
  if to == "" then errors.usage_fail("--to expects a directory", "compact") end
  local progress, finish = output.progress_meter(to and "compacting" or "compacting in place", "entries")
  local ok, r = pcall(function()
    if to then return compact.compact_to(dir, to, { progress = progress }) end
    return compact.compact(dir, { progress = progress })
  end)
  finish(ok)
  if not ok then error(r, 0) end
  local before, after = tonumber(util.key(r.before)), tonumber(util.key(r.after))
  if ctx.json then
    return output.print_json(output.obj({ "entries", "before", "after", "to" },
      { entries = r.entries, before = r.before, after = r.after, to = to or dir }))
  end
  for _, note in ipairs(r.notes) do io.stdout:write(note, "\n") end
  io.stdout:write(string.format("compacted %s%s: %s entries, data.mdb %s -> %s (%.0f%%)\n", dir,
    to and (" to " .. to) or "", util.istr(r.entries), mib(before), mib(after), before > 0 and 100 * after / before or 100))
end

--- The help of `moraine compact` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = { compact = HELP }

--- The command: name -> function(ctx) (ctx: `dir`, `json`, `opts.to`),
-- returning the exit status (nil: 0); errors are moraine errors, raised.
-- @table run
M.run = { compact = run }

return M
