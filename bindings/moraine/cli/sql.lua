--- moraine.cli.sql — `moraine sql`: DuckLake DDL statements run through
-- moraine's verbs (db:exec, moraine.sql).
-- @module moraine.cli.sql

local moraine = require "moraine"
local errors = require "moraine.cli.errors"
local util = require "moraine.cli.util"
local catalog = require "moraine.cli.catalog"

local fail = errors.fail
local with_hint = errors.with_hint
local is_dir = util.is_dir
local NO_CATALOG_HINT = catalog.NO_CATALOG_HINT

local M = {}

local HELP = {
  sql = {
    synopsis = "moraine [-c DIR] sql STATEMENTS [--json]",
    summary = "run DuckLake DDL statements (a migration) through moraine's verbs",
    text = [[
Runs DuckLake's DDL statements, separated by ';', through moraine's verbs
(db:exec, docs/verbs.md "SQL statements"): CREATE/DROP SCHEMA, CREATE/DROP
TABLE and VIEW, ALTER TABLE (ADD/DROP/RENAME COLUMN, RENAME TO, SET/RESET
PARTITIONED BY, SET/RESET SORTED BY, ALTER COLUMN SET/DROP DEFAULT, SET/DROP
NOT NULL, TYPE), COMMENT ON TABLE/COLUMN. Each statement outside BEGIN ...
COMMIT is one snapshot; a BEGIN ... COMMIT block is one snapshot. Names are
looked up as DuckDB does (case-insensitively) and stored as written. INSERT,
UPDATE, DELETE, MERGE, COPY and CALL are refused: moraine writes no data.
STATEMENTS '-' reads them from standard input. Prints the newest snapshot
committed, or that nothing was committed. A failing statement stops the run
(exit status 1); statements committed before it stay committed.]],
    options = { { "--json", "one JSON object {snapshot = N or null}" } },
    example = "moraine sql 'BEGIN; ALTER TABLE events RENAME COLUMN ts TO event_time; "
      .. "ALTER TABLE events SET PARTITIONED BY (day(event_time)); COMMIT;'",
    flags = {},
    json = true,
    nargs = { 1, 1 },
    args = { "STATEMENTS" },
  },
}

local function sql(ctx, text)
  if text == "-" then text = io.stdin:read("*a") or "" end
  local dir = ctx.dir
  require("moraine.cli.catalog").need_catalog(dir)
  if is_dir(dir) then require("moraine.cli.catalog").refuse_unfinished_import(dir) end
  local db = with_hint(NO_CATALOG_HINT, moraine.open, dir, { create = false })
  if db:last_snapshot() == nil then
    db:close()
    fail("the catalog at " .. dir .. " is empty (no snapshot); run 'moraine init' first", NO_CATALOG_HINT)
  end
  local ok, res = pcall(db.exec, db, text)
  db:close()
  if not ok then error(res, 0) end
  if ctx.json then
    io.stdout:write(moraine.json_encode({ snapshot = res == nil and moraine.null or res }), "\n")
  elseif res then
    io.stdout:write("committed; the newest snapshot is ", tostring(res), "\n")
  else
    io.stdout:write("nothing to commit (no statement changed the catalog)\n")
  end
end

--- The help of `moraine sql` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = HELP

--- The command: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`,
-- `opts`; ... the positional arguments), returning the exit status (nil: 0).
-- @table run
M.run = { sql = sql }

return M
