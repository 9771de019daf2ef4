--- moraine.cli.help — the help texts of the `moraine` command: `moraine help`
-- (every command with its summary) and `moraine help COMMAND` (one
-- command's synopsis, summary, text, options and example), from the help
-- entries of the command modules.
--
-- A help entry has `synopsis`, `summary`, `text`, `options` (pairs of option
-- and explanation), `example`, `flags` (option taking a value -> field of
-- ctx.opts), `switches` (option without a value -> field of ctx.opts),
-- `nargs` ({least, most} positional arguments), `args` (their names), and
-- `progress` / `json` when the command takes `--progress` / `--json`.
-- @module moraine.cli.help

local M = {}

--- Writes the general help: the usage line, every command and its summary.
-- @param out a file (io.stdout, io.stderr)
-- @tparam {string,...} order the command names, in the order listed
-- @tparam table help name -> help entry
function M.general(out, order, help)
  out:write([[
usage: moraine [-c DIR | --catalog DIR] COMMAND [ARGS] [--json] [--progress]

moraine reads and writes a DuckLake catalog kept in a moraine (LMDB) catalog
directory: -c/--catalog DIR, else $MORAINE_CATALOG, else ./catalog.moraine.
Long work (import, export, diff, verify) shows its progress on stderr with
the wall-clock time elapsed and, once it can be estimated, the time left:
when stderr is a terminal, or always with --progress.

commands:
]])
  for _, name in ipairs(order) do
    out:write(string.format("  %-10s %s\n", name, help[name].summary))
  end
  out:write([[

Read commands (snapshots, tables, show, files, history, diff, audit, layout,
clustering, verify, stats) take --json: one JSON document on stdout. TABLE
is "name", "schema.name" or "#ID" (a table_id, also --table-id ID); show,
files and history reach a dropped table with --at S, or by its id.

  moraine help COMMAND     help for one command (or: moraine COMMAND --help)
  moraine --version        the version
]])
end

--- Writes the help of one command.
-- @tparam table h its help entry
-- @param out a file
function M.command(h, out)
  out:write("usage: ", h.synopsis, "\n\n", h.summary, ".\n\n", h.text, "\n")
  out:write("\noptions:\n")
  local opts = {}
  for _, o in ipairs(h.options) do opts[#opts + 1] = o end
  opts[#opts + 1] = { "-c, --catalog DIR", "the catalog directory (default $MORAINE_CATALOG or ./catalog.moraine)" }
  if h.progress then opts[#opts + 1] = { "--progress", "show progress on stderr even when it is not a terminal" } end
  opts[#opts + 1] = { "-h, --help", "this help" }
  for _, o in ipairs(opts) do out:write(string.format("  %-22s %s\n", o[1], o[2])) end
  out:write("\nexample:\n  ", h.example, "\n")
end

return M
