--- moraine.cli.verify — `moraine verify`: every keyspace invariant checked,
-- in a child process when the build can (moraine.verify_path).
-- @module moraine.cli.verify

local moraine = require "moraine"
local errors = require "moraine.cli.errors"
local util = require "moraine.cli.util"
local output = require "moraine.cli.output"
local catalog = require "moraine.cli.catalog"
local stats_cmd = require "moraine.cli.stats"

local NULL = moraine.null
local fail = errors.fail
local istr = util.istr
local num = util.num
local is_dir = util.is_dir
local cell = output.cell
local obj = output.obj
local print_json = output.print_json
local progress_meter = output.progress_meter
local open_read = catalog.open_read
local secret_count = catalog.secret_count
local need_method = catalog.need_method
local NO_CATALOG_HINT = catalog.NO_CATALOG_HINT

local M = {}

local HELP = {
  verify = {
    synopsis = "moraine [-c DIR] verify [--json]",
    summary = "check every keyspace invariant",
    text = [[
Checks every entry of the catalog against the keyspace's invariants (keys
and values decode, live and history rows sit where their values say, at
most one live version per key and one live spec per table, children name
their parents, snapshots). Prints "ok: N entries checked, no violation", or
each violation as "KEY: problem". Exit status 1 when any violation is found.
Progress goes to stderr on a terminal (or with --progress).]],
    options = { { "--json", "one JSON object {ok, entries, violations = [{key, problem}]}" } },
    progress = true,
    example = "moraine verify || echo damaged",
    flags = {},
    json = true,
    nargs = { 0, 0 },
  },
}

local verify_output

-- The warnings of a catalog whose data.mdb others can read while it holds
-- encryption keys (docs/security.md); {} when it is private, holds no keys, or
-- cannot be opened.
local function store_warnings(dir)
  local warnings = {}
  local ok, db = pcall(moraine.open, dir, { read_only = true, create = false })
  if not ok then return warnings end
  local aok, acc = pcall(db.store_access, db)
  if aok and acc.exposed then
    local keys = secret_count(db)
    if keys > 0 then
      warnings[1] = string.format("%s/data.mdb is readable by group or others (mode %04o, directory %04o) and the catalog "
        .. "holds %s encryption keys: any local user who can read the file can read the lake; "
        .. "chmod 600 %s %s && chmod 700 %s", dir, acc.data_mode, acc.dir_mode, istr(keys),
        util.shell_word(dir .. "/data.mdb"), util.shell_word(dir .. "/lock.mdb"), util.shell_word(dir))
    end
  end
  db:close()
  return warnings
end

-- verify in a child process (moraine.verify_path): LMDB page damage that
-- makes LMDB fault kills the child, and is reported where the walk was.
local function cmd_verify_isolated(ctx)
  local dir = ctx.dir
  require("moraine.cli.catalog").need_catalog(dir)
  if not is_dir(dir) then fail(dir .. " is not a catalog directory (it is a file)", NO_CATALOG_HINT) end
  local progress, finish = progress_meter("verifying", "entries")
  local checked
  local function prog(done, total)
    checked = math.max(checked or 0, num(total) or 0, num(done) or 0)
    if progress then return progress(done, total) end
  end
  local ok, res = pcall(moraine.verify_path, dir, { progress = prog })
  finish(ok)
  if not ok then
    if moraine.is_error(res) then
      fail(res.code .. ": " .. res.message, res.code == "EIO" and NO_CATALOG_HINT or "the catalog could not be read to the end")
    end
    error(res, 0)
  end
  return verify_output(ctx, res, checked)
end

local function verify(ctx)
  -- an import of a SQLite file running or not ended: the store may lack its commits
  if require("moraine.cli.util").is_dir(ctx.dir) then catalog.refuse_unfinished_import(ctx.dir) end
  if moraine.verify_path then return cmd_verify_isolated(ctx) end
  local db = open_read(ctx.dir)
  need_method(db, "verify", "verify")
  local progress, finish = progress_meter("verifying", "entries")
  local checked
  local function prog(done, total)
    checked = math.max(checked or 0, num(total) or 0, num(done) or 0)
    if progress then return progress(done, total) end
  end
  local ok, res = pcall(db.verify, db, { progress = prog })
  finish(ok)
  if not ok then
    db:close()
    if moraine.is_error(res) then fail(res.code .. ": " .. res.message, "the catalog could not be read to the end") end
    error(res, 0)
  end
  if checked == nil and type(db.stats) == "function" then
    local sok, _, total = pcall(stats_cmd.collect, db)
    if sok then checked = total.entries end
  end
  db:close()
  return verify_output(ctx, res, checked)
end

function verify_output(ctx, res, checked)
  -- a store other users can read, holding the lake's keys: a warning, not a violation
  -- (looked at only in a sound catalog: counting keys reads every file row)
  local warnings = #res == 0 and store_warnings(ctx.dir) or {}
  for _, w in ipairs(warnings) do io.stderr:write("moraine: warning: ", w, "\n") end
  if ctx.json then
    local v = {}
    for i, x in ipairs(res) do v[i] = obj({ "key", "problem" }, x) end
    print_json(obj({ "ok", "entries", "violations", "warnings" },
      { ok = #res == 0, entries = checked or NULL, violations = v, warnings = warnings }))
  else
    if #res == 0 then
      io.stdout:write("ok: ", checked and istr(checked) or "all", " entries checked, no violation\n")
    else
      for _, x in ipairs(res) do io.stdout:write(cell(x.key), ": ", cell(x.problem), "\n") end
      io.stderr:write("moraine: ", #res, " violation", #res == 1 and "" or "s", " found",
        checked and (" in " .. istr(checked) .. " entries") or "", "\n",
        "hint: the catalog is damaged: keep a copy of its directory aside, then import it again from its DuckLake "
        .. "source (moraine import / sync) or restore a backup; other commands may stop on the damaged pages\n")
    end
  end
  if #res > 0 then os.exit(1) end
end

--- The help of `moraine verify` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = HELP

--- The command: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`,
-- `opts`; ... the positional arguments), returning the exit status (nil: 0).
-- @table run
M.run = { verify = verify }

return M
