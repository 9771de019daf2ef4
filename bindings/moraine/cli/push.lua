--- moraine.cli.push — `moraine push`: the catalog's new snapshots written
-- into a SQLite or PostgreSQL DuckLake catalog (moraine.push).
-- @module moraine.cli.push

local moraine = require "moraine"
local errors = require "moraine.cli.errors"
local util = require "moraine.cli.util"
local output = require "moraine.cli.output"
local catalog = require "moraine.cli.catalog"

local fail = errors.fail
local istr = util.istr
local exists = util.exists
local progress_meter = output.progress_meter
local open_read = catalog.open_read

local M = {}

local HELP = {
  push = {
    synopsis = "moraine [-c DIR] push TARGET",
    summary = "write the catalog's new snapshots into a SQL DuckLake catalog",
    text = [[
Writes every snapshot the catalog committed after TARGET's newest snapshot
into TARGET, a SQLite DuckLake catalog file or a PostgreSQL one
(postgres:CONNINFO, e.g. "postgres:host=db dbname=lake user=admin", or a
postgres:// URI), one SQL transaction per snapshot, exactly the rows moraine's verbs wrote (ducklake_snapshot and its
changes, new rows, end_snapshot of ended rows, schema versions; the tables
without history made equal in the last). The catalog must share a snapshot
with TARGET (imported, synced, exported or pushed before). If DuckLake
writers committed to TARGET since (or during the push), the catalog's
snapshots are rebased onto TARGET's head as DuckLake retries a commit: new
snapshot ids, ids from the head's counters; the catalog then takes TARGET's
snapshots and ids. When both sides changed one table (two inserts included)
the push is refused (ECONFLICT) naming TARGET's snapshot, the table and the
catalog's snapshot, and nothing is written. A killed push leaves whole
snapshots only; run it again to finish (nothing is written twice). Progress goes to stderr on a terminal (or with
--progress): snapshots written.]],
    options = {},
    progress = true,
    example = "moraine -c lake.moraine push lake.sqlite && moraine -c lake.moraine push 'postgres:dbname=lake'",
    flags = {},
    nargs = { 1, 1 },
    args = { "TARGET" },
  },
}

local function push(ctx, target)
  local is_pg = target:match("^postgres:") or target:match("^postgresql://")
  if not is_pg and not exists(target) then
    fail("no such file: " .. target, "TARGET is a SQLite DuckLake catalog file (write one with 'moraine export "
      .. "FILE.sqlite') or postgres:CONNINFO")
  end
  if not is_pg and util.is_dir(target) then
    -- an NDJSON export is no catalog DuckLake writes to: nothing to push into
    fail("push: " .. target .. " is a directory, not a SQL DuckLake catalog", "TARGET is a SQLite DuckLake catalog "
      .. "file or postgres:CONNINFO; an NDJSON directory is written by 'moraine export DIR' instead")
  end
  local ok, pushmod = pcall(require, "moraine.push")
  if not ok or type(pushmod) ~= "table" then
    fail("push is not available in this build (module moraine.push is missing)", "install moraine's Lua modules")
  end
  -- read-write: a rebase makes the catalog take the target's new snapshots and ids (push.realign)
  open_read(ctx.dir):close()
  local db = moraine.open(ctx.dir, { create = false })
  local meter, finish = progress_meter("pushing", "snapshots")
  local shown = is_pg and "PostgreSQL" or target
  local pok, res = pcall(pushmod.push, db, target, { progress = meter and function(done, total, s)
    meter(done, total, "snapshot " .. istr(s))
  end })
  finish(pok)
  db:close()
  if not pok then
    if moraine.is_error(res) then
      if res.code == "ECONFLICT" then
        fail(res.code .. ": " .. res.message, "every snapshot in " .. shown .. " is whole; to push a migration "
          .. "that conflicts, sync its snapshots into a new catalog, run the migration again there, and push from it")
      end
      fail(res.code .. ": " .. res.message, "every snapshot already in " .. shown .. " is whole; fix the cause and "
        .. "run the push again to finish")
    end
    error(res, 0)
  end
  if res.snapshots == 0 then
    io.stdout:write(shown, " is up to date (snapshot ", istr(res.to), ")\n")
  else
    io.stdout:write("pushed ", tostring(res.snapshots), res.snapshots == 1 and " snapshot to " or " snapshots to ", shown, ": ", istr(res.from), " -> ",
      istr(res.to), res.rebased and " (rebased onto its new snapshots)" or "", "\n")
  end
end

--- The help of `moraine push` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = HELP

--- The command: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`,
-- `opts`; ... the positional arguments), returning the exit status (nil: 0).
-- @table run
M.run = { push = push }

return M
