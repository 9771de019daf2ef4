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

-- The names of the commands, in `order`, whose help entry passes `keep`,
-- as "a, b, c".
local function names(order, help, keep)
  local out = {}
  for _, name in ipairs(order) do
    if keep(help[name]) then out[#out + 1] = name end
  end
  return table.concat(out, ", ")
end

-- Wraps "WORD (a, b, ...) REST" at 76 columns (the lists are long).
local function wrap(text)
  local lines, line = {}, ""
  for word in text:gmatch("%S+") do
    if line ~= "" and #line + 1 + #word > 76 then
      lines[#lines + 1], line = line, word
    else
      line = line == "" and word or (line .. " " .. word)
    end
  end
  lines[#lines + 1] = line
  return table.concat(lines, "\n") .. "\n"
end

--- Writes the general help: the usage line, every command and its summary,
-- and which commands take `--progress`, `--json` and `--at`, listed from
-- their help entries (`progress`, `json`, an `--at` flag).
-- @param out a file (io.stdout, io.stderr)
-- @tparam {string,...} order the command names, in the order listed
-- @tparam table help name -> help entry
function M.general(out, order, help)
  out:write([[
usage: moraine [-c DIR | --catalog DIR] COMMAND [ARGS] [--json] [--progress]

moraine reads and writes a DuckLake catalog kept in a moraine (LMDB) catalog
directory: -c/--catalog DIR, else $MORAINE_CATALOG, else ./catalog.moraine.
]])
  out:write(wrap("Long work (" .. names(order, help, function(h) return h.progress end)
    .. ") shows its progress on stderr with the wall-clock time elapsed and, once it can be"
    .. " estimated, the time left: when stderr is a terminal, or always with --progress."))
  out:write("\ncommands:\n")
  for _, name in ipairs(order) do
    out:write(string.format("  %-10s %s\n", name, help[name].summary))
  end
  out:write("\n")
  out:write(wrap("--json (" .. names(order, help, function(h) return h.json end)
    .. "): one JSON document on stdout. --at S (" .. names(order, help, function(h) return h.flags["--at"] end)
    .. "): the catalog as of snapshot S. TABLE is \"name\", \"schema.name\" or \"#ID\" (a table_id,"
    .. " also --table-id ID); show and files reach a dropped table with --at S at a snapshot where it was"
    .. " live (by name or #ID), history by its id alone."))
  out:write([[

Tables print aligned on a terminal, for people: NULL shows as NULL, like
the string 'NULL', and cells past 120 characters are cut. Piped (stdout not
a terminal) they are tab-separated and exact, in PostgreSQL's COPY text
format: a title line, then one line per row, cells separated by tabs; NULL
is \N; in a value a backslash is \\, newline \n, tab \t, carriage return
\r, any other control byte or DEL \xNN, other bytes as stored (the aligned
table escapes the same way). An empty cell of a catalog value is the empty
string; in a column the command derives (stats' table, audit's key,
history's note) it means there is nothing to show for that row. show,
history, diff and the layout reports print heading lines around their
tables; files puts a file's partition values in one cell, joined by ", ".
--json is exact too.

NULL in the catalog (DuckLake allows it in most columns; rows are kept as
written): a value a command shows prints as NULL; a sum over a NULL is
NULL, not the sum of the rest (history's rows and bytes, with a note); a
NULL table or schema name matches no TABLE (give #ID). A NULL a command
cannot work without (an id or key index, a spec's transform, a column's
name, order or type where it computes with them, the record_count layout
and clustering weigh files by) is refused: EINVAL naming the table, the
row's key and the column ("ducklake_column row (table_id=1, column_id=3,
begin_snapshot=1) has NULL column_name: cannot ..."), exit 1.

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
  local json_listed = false
  for _, o in ipairs(h.options) do
    opts[#opts + 1] = o
    json_listed = json_listed or o[1] == "--json"
  end
  -- a command that takes --json lists it, if its entry forgot to
  if h.json and not json_listed then opts[#opts + 1] = { "--json", "one JSON document on stdout" } end
  opts[#opts + 1] = { "-c, --catalog DIR", "the catalog directory (default $MORAINE_CATALOG or ./catalog.moraine)" }
  if h.progress then opts[#opts + 1] = { "--progress", "show progress on stderr even when it is not a terminal" } end
  opts[#opts + 1] = { "-h, --help", "this help" }
  for _, o in ipairs(opts) do out:write(string.format("  %-22s %s\n", o[1], o[2])) end
  out:write("\nexample:\n  ", h.example, "\n")
end

return M
