--- moraine.cli.export — `moraine export`: the catalog written out as NDJSON
-- files, a SQL script or a SQLite DuckLake catalog.
-- @module moraine.cli.export

local moraine = require "moraine"
local errors = require "moraine.cli.errors"
local util = require "moraine.cli.util"
local output = require "moraine.cli.output"
local catalog = require "moraine.cli.catalog"

local fail = errors.fail
local usage_fail = errors.usage_fail
local istr = util.istr
local num = util.num
local progress_meter = output.progress_meter
local open_read = catalog.open_read
local secret_count = catalog.secret_count

local M = {}

local HELP = {
  export = {
    synopsis = "moraine [-c DIR] export DEST [--format ndjson|sql|sqlite]",
    summary = "export the catalog as NDJSON files, a SQL script or a SQLite file",
    text = [[
Writes every row of the catalog back out. ndjson: DEST is a directory
(created if missing) that gets one <table>.ndjson per table, rows in their
original order, byte for byte what DuckDB's export wrote, encryption keys
included (an export is a copy of the catalog: when it holds keys, a note
says so on stderr and the files are written 0600). A <table>.ndjson already
in DEST for one of the catalog's tables is replaced (an earlier export of
any catalog there is overwritten); one for a table the catalog does not
have is refused, and DEST must be outside the catalog's directory. The
files appear all at once: an export killed part way leaves DEST's tables
as they were (and its <table>.ndjson.tmp files), or, killed during its
renames, marks DEST so that imports refuse it until an export into it
ends; one export into DEST at a time. sql: DEST is a SQL
script that recreates the catalog in SQLite. sqlite: DEST is a new SQLite
DuckLake catalog file that DuckLake can ATTACH (ducklake:sqlite:DEST),
written whole or not at all (an existing DEST is replaced). The format
defaults to sql when DEST ends in ".sql", sqlite when it ends in ".sqlite"
or ".db", else ndjson. Progress goes to stderr on a
terminal (or with --progress): tables written (ndjson), or the rows of each
table (sql, sqlite).]],
    progress = true,
    options = { { "--format ndjson|sql|sqlite", "the output format (default from DEST's ending)" } },
    example = "moraine -c lake.moraine export backup/ && moraine -c lake.moraine export lake.sql",
    flags = { ["--format"] = "format" },
    nargs = { 1, 1 },
    args = { "DEST" },
  },
}

local function run_export(ctx, dest)
  if dest == "" then usage_fail("DEST is an empty string: give the directory or file to write", "export") end
  if dest == "-" then -- (it wrote a directory or file named '-')
    usage_fail("DEST '-': an export is written to a directory or file, not to standard output; give its path "
      .. "(./- for a file of that name)", "export")
  end
  local format = ctx.opts.format
  if format == nil then
    local low = dest:lower()
    format = low:match("%.sql$") and "sql" or ((low:match("%.sqlite$") or low:match("%.db$")) and "sqlite")
      or "ndjson"
  end
  if format ~= "ndjson" and format ~= "sql" and format ~= "sqlite" then
    usage_fail("--format must be ndjson, sql or sqlite, not '" .. format .. "'", "export")
  end
  local sqlite
  if format ~= "ndjson" then
    local ok, mod = pcall(require, "moraine.sqlite")
    if not ok or type(mod) ~= "table" or type(mod.export_sql) ~= "function" then
      fail("exporting a SQL script is not available in this build (module moraine.sqlite is missing)",
        "export as NDJSON instead: moraine export DIR --format ndjson")
    end
    sqlite = mod
  end
  if format == "ndjson" and util.exists(dest .. "/data.mdb") then
    fail("export: " .. dest .. " is a moraine catalog directory: an NDJSON export goes to a directory of its own",
      "choose another directory, e.g. " .. dest:gsub("/+$", "") .. "-export")
  end
  local db = open_read(ctx.dir)
  if db:path_in_catalog(dest) then
    db:close()
    fail("export: " .. dest .. " is in the catalog directory " .. ctx.dir .. (format == "ndjson"
      and ": that directory holds the catalog alone (compact moves it whole and refuses other files)"
      or ": writing it there could replace the catalog's own files"), "choose a path outside the catalog directory, "
      .. "e.g. " .. ctx.dir:gsub("/+$", "") .. (format == "sql" and ".sql" or format == "sqlite" and ".sqlite"
      or "-export"))
  end
  local keys = secret_count(db)
  local meter, finish = progress_meter("exporting", format == "ndjson" and "tables" or "rows")
  local rows, cur = 0, 0
  local ok, e = pcall(function()
    if format == "ndjson" then db:export_ndjson(dest, { progress = meter })
    else
      -- the SQL script is written table by table: rows of each, with the table in the phase
      local write = format == "sql" and sqlite.export_sql or sqlite.export_sqlite
      write(db, dest, { progress = meter and function(done, total, name, i, n)
        if num(total) == 0 then -- reading the table's rows
          meter(done, 0, string.format("reading %s (%d/%d)", name, i, n))
          return
        end
        if done == 0 then rows = rows + cur end
        cur = done
        meter(done, total, string.format("exporting %s (%d/%d)", name, i, n))
      end })
    end
  end)
  finish(ok, format ~= "ndjson" and (rows + cur) or nil)
  db:close()
  if not ok then
    if moraine.is_error(e) then
      local said = e.code .. ": " .. e.message
      if e.code == "EIO" and e.message:find("while it renamed its files", 1, true) then
        fail(said, dest .. " is marked as a mix of two exports, which imports refuse: check that it can be written, "
          .. "then export into it again")
      end
      if e.code == "EIO" then fail(said, "check that " .. dest .. " can be written") end
      if e.code == "ECONFLICT" then
        fail(said, "another export into " .. dest .. " is running: run this one again once it has ended; nothing "
          .. "was written to " .. dest)
      end
      if e.code == "EEXIST" then
        fail(said, "export into an empty directory, or move the file it names away; nothing was written to " .. dest)
      end
      fail(said, "a stored value cannot be exported (the message names its table, row and column); "
        .. "correct that row with a verb, then export again; nothing was written to " .. dest)
    end
    error(e, 0)
  end
  io.stdout:write("exported ", ctx.dir, " to ", dest, " (", format, ")\n")
  if keys > 0 then
    io.stderr:write("moraine: note: ", dest, " holds the lake's encryption keys (", istr(keys), " in ",
      "ducklake_data_file/ducklake_delete_file.encryption_key): whoever reads it can read the lake's files; ",
      "it was written readable by its owner only (0600); keep it as private as the catalog\n")
  end
end

--- The help of `moraine export` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = HELP

--- The command: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`,
-- `opts`; ... the positional arguments), returning the exit status (nil: 0).
-- @table run
M.run = { export = run_export }

return M
