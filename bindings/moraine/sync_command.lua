--- The `moraine sync` and `moraine compare` commands (scripts/moraine
-- registers them; this module holds their help and their code until the
-- command moves to its own file of the CLI package).
--
-- `commands(h)` returns `{help = {sync = ..., compare = ...}, run = {sync =
-- fn(ctx, source), compare = fn(ctx, source)}}`; `h` gives the command's
-- helpers: `fail(message, hint)`, `usage_fail(message, command)`, `open_catalog(ctx, create)`,
-- `progress_meter(label, unit)`, `print_json(doc)`, `istr(int)`, `json` (a
-- function making a JSON object with ordered keys: `json(keys, vals)`, vals
-- keyed by name).
-- @module moraine.sync_command

local moraine = require "moraine"
local sync = require "moraine.sync"

local M = {}

local HINT = "SOURCE is postgres:CONNINFO (or a postgres:// URI), a directory of <table>.ndjson files or a SQLite "
  .. "DuckLake catalog; see 'moraine sync --help'"

M.help = {
  sync = {
    synopsis = "moraine [-c DIR] sync SOURCE [--follow [--interval SECONDS]]",
    summary = "bring the catalog up to date with a DuckLake catalog (PostgreSQL, SQLite, NDJSON)",
    text = [[
Replays every snapshot of SOURCE newer than the catalog's last one, each
as one transaction, reading SOURCE in one consistent snapshot (PostgreSQL:
REPEATABLE READ; SQLite: one read transaction). SOURCE is postgres:CONNINFO
(libpq's "host=... port=... dbname=... user=..."), a postgres:// or
postgresql:// URI, a directory of <table>.ndjson files, or a SQLite DuckLake
catalog. The catalog (created if missing) must be empty or hold what an
earlier sync of the same SOURCE wrote: a catalog whose last snapshot is not
SOURCE's is refused (ECONFLICT), and so is a round during which another
writer commits; every snapshot already replayed stays, nothing another
writer committed is removed. Interrupted at any point, running the same
command again finishes the job. Rows SOURCE deleted or changed at or below
the catalog's last snapshot (expiry, cleanup, compaction) are not replayed
yet: 'moraine compare SOURCE' shows them. With --follow, sync runs again
every --interval (default 1 second) until it is stopped, printing one line
per round that replayed something; a source that cannot be read is
reported and tried again next round; a conflict ends it (exit 1).]],
    options = {
      { "--follow", "keep syncing, one round every --interval" },
      { "--interval SECONDS", "time between two rounds of --follow: 2, 0.5, 500ms, 1s (default 1s)" },
    },
    progress = true,
    example = "moraine -c replica.moraine sync 'postgres:host=db1 dbname=lake user=reader' --follow --interval 2s",
    flags = { ["--interval"] = "interval" },
    switches = { ["--follow"] = "follow" },
    nargs = { 1, 1 },
    args = { "SOURCE" },
  },
  compare = {
    synopsis = "moraine [-c DIR] compare SOURCE [--json]",
    summary = "the rows that differ between the catalog and a DuckLake catalog",
    text = [[
Compares every table of the catalog with SOURCE (as for sync), every
version of every row, exactly, and prints each row one side has and the
other lacks: table, side ("catalog" or "source"), how many copies, the row
as JSON. Row order is not compared. Exit status 0 when there is no
difference ("no differences"), 1 when there are.]],
    options = {},
    json = true,
    example = "moraine -c replica.moraine compare 'postgres:host=db1 dbname=lake user=reader'",
    flags = {},
    nargs = { 1, 1 },
    args = { "SOURCE" },
  },
}

local function row_json(row)
  local ok, s = pcall(moraine.json_encode, row)
  if ok then return s end
  return tostring(row)
end

--- The two commands' code (see the module's doc for `h`).
-- @tparam table h the command's helpers
-- @treturn table `{sync = fn(ctx, source), compare = fn(ctx, source)}`
function M.commands(h)
  local run = {}

  local function follow(ctx, source)
    local text = ctx.opts.interval or "1"
    local n, unit = text:match("^(%d*%.?%d+)(m?s?)$")
    local secs = tonumber(n)
    if secs and unit == "ms" then secs = secs / 1000 end
    if not secs or secs <= 0 or (unit ~= "" and unit ~= "s" and unit ~= "ms") then
      h.usage_fail("--interval expects a positive number of seconds (2, 0.5, 500ms, 1s), got '" .. text .. "'", "sync")
    end
    local db = h.open_catalog(ctx, true)
    while true do
      local t0 = moraine.clock()
      local ok, r = pcall(sync.sync, db, source)
      if ok then
        if r.snapshots > 0 or r.rows_changed > 0 then
          io.stdout:write(string.format("synced %d snapshots, last snapshot %s, %d rows of non-versioned tables "
            .. "changed, in %.3f s\n", r.snapshots, r.to and h.istr(r.to) or "none", r.rows_changed, moraine.clock() - t0))
          io.stdout:flush()
        end
      elseif moraine.is_error(r) and r.code ~= "EIO" then
        db:close()
        h.fail(r.code .. ": " .. r.message, "the catalog keeps every snapshot it had; nothing of another writer was removed")
      else
        io.stderr:write("moraine: ", moraine.is_error(r) and (r.code .. ": " .. r.message) or tostring(r),
          " (trying again in ", text, ")\n")
      end
      os.execute(string.format("sleep %.3f", secs))
    end
  end

  function run.sync(ctx, source)
    if ctx.opts.follow then return follow(ctx, source) end
    if ctx.opts.interval then h.usage_fail("--interval applies to --follow only", "sync") end
    local db = h.open_catalog(ctx, true)
    local meter, finish = h.progress_meter("syncing", "snapshots")
    local progress = meter and function(done, total) meter(done, total, "syncing") end
    local ok, r = pcall(sync.sync, db, source, { progress = progress })
    finish(ok)
    if not ok then
      local last = db:last_snapshot()
      db:close()
      if moraine.is_error(r) then
        local hint = "the catalog keeps every snapshot it had (last snapshot " .. (last and h.istr(last) or "none")
          .. "); run the same command again to continue"
        if r.code == "ECONFLICT" then hint = "another writer committed to the catalog; nothing of it was removed" end
        if r.code == "EIO" or r.code == "EINVAL" then hint = HINT end
        h.fail(r.code .. ": " .. r.message, hint)
      end
      error(r, 0)
    end
    db:close()
    io.stdout:write(string.format("synced %s into %s: %d snapshots replayed, last snapshot %s (was %s), "
      .. "%d rows of non-versioned tables changed\n", r.source, ctx.dir, r.snapshots, r.to and h.istr(r.to) or "none",
      r.from and h.istr(r.from) or "none", r.rows_changed))
  end

  function run.compare(ctx, source)
    local db = h.open_catalog(ctx, false)
    local ok, d = pcall(sync.compare, db, source)
    db:close()
    if not ok then
      if moraine.is_error(d) then h.fail(d.code .. ": " .. d.message, HINT) end
      error(d, 0)
    end
    if ctx.json then
      local list = {}
      for i, x in ipairs(d) do
        list[i] = h.json({ "table", "side", "count", "row" }, { table = x.table, side = x.side, count = x.count or 1,
          row = x.row and h.json(x.columns, x.row) or moraine.null })
      end
      h.print_json(h.json({ "differences", "truncated" }, { differences = list, truncated = d.truncated == true }))
    else
      for _, x in ipairs(d) do
        if x.missing_table then
          io.stdout:write(x.table, "\t", x.side, "\t(the other side has no such table)\n")
        else
          io.stdout:write(x.table, "\t", x.side, "\t", tostring(x.count), "\t", row_json(x.row), "\n")
        end
      end
      if #d == 0 then io.stdout:write("no differences\n") end
      if d.truncated then io.stdout:write("(more differences not shown)\n") end
    end
    return #d == 0 and 0 or 1
  end

  return run
end

return M
