--- moraine.cli.init_command — `moraine init`: a new, empty DuckLake catalog
-- (the file is not named init.lua, which Lua's `?/init.lua` path would load
-- as the package `moraine.cli`).
-- @module moraine.cli.init_command

local moraine = require "moraine"
local errors = require "moraine.cli.errors"
local util = require "moraine.cli.util"
local catalog = require "moraine.cli.catalog"

local fail = errors.fail
local usage_fail = errors.usage_fail
local with_hint = errors.with_hint
local exists = util.exists
local NO_CATALOG_HINT = catalog.NO_CATALOG_HINT

local M = {}

local HELP = {
  init = {
    synopsis = "moraine [-c DIR] init [--data-path PATH]",
    summary = "make a new DuckLake catalog",
    text = [[
Makes a new, empty DuckLake catalog in the catalog directory (created if
missing): every ducklake_* table of catalog version 1.1-dev1, the
ducklake_metadata rows and snapshot 0 with schema "main", as DuckLake's
ATTACH does. Refused (EEXIST) when the directory already holds a catalog.]],
    options = { { "--data-path PATH", "the lake's DATA_PATH stored in ducklake_metadata (default \"data/\")" } },
    example = "moraine -c lake.moraine init --data-path s3://bucket/lake/",
    flags = { ["--data-path"] = "data_path" },
    nargs = { 0, 0 },
  },
}

local function init(ctx)
  local dp = ctx.opts.data_path or "data/"
  if dp == "" then usage_fail("--data-path must not be empty", "init") end
  local existed = exists(ctx.dir)
  for _, left in ipairs({ ".compact-new", ".compact-old" }) do
    if exists(ctx.dir .. left) then
      fail("an interrupted compaction left " .. ctx.dir .. left .. " beside " .. ctx.dir .. ": run 'moraine -c " .. ctx.dir
        .. " compact' to finish it first (a new catalog here would hide the one it is putting back)",
        "nothing was changed")
    end
  end
  local db = with_hint(NO_CATALOG_HINT, moraine.open, ctx.dir, { create = true })
  local ok, e = pcall(db.init, db, dp)
  if ok then -- the data path as stored (moraine_init keeps DuckLake's form: one '/' at the end)
    for _, m in ipairs(db:scan("ducklake_metadata")) do if m.row.key == "data_path" then dp = m.row.value end end
  end
  db:close()
  if not ok then
    if moraine.is_error(e) and e.code == "EEXIST" then
      fail("EEXIST: " .. e.message .. " (catalog " .. ctx.dir .. ")",
        "nothing was changed; use another directory with -c DIR")
    end
    if not existed then os.remove(ctx.dir .. "/data.mdb"); os.remove(ctx.dir .. "/lock.mdb"); os.remove(ctx.dir) end
    if moraine.is_error(e) then fail(e.code .. ": " .. e.message, "see 'moraine init --help'") end
    error(e, 0)
  end
  io.stdout:write("initialized a DuckLake catalog at ", ctx.dir, " (data path '", dp, "', snapshot 0)\n")
end

--- The help of `moraine init` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = HELP

--- The command: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`,
-- `opts`; ... the positional arguments), returning the exit status (nil: 0).
-- @table run
M.run = { init = init }

return M
