--- moraine.cli.main — the `moraine` command line: parsed by lua-argparse
-- (`require "argparse"`; Debian: lua-argparse) from the help entries of the
-- command modules, then dispatched to the command; errors printed as
-- "moraine: MESSAGE" and "hint: HINT". scripts/moraine calls `main(arg)`.
--
--     moraine [-c DIR | --catalog DIR] COMMAND [ARGS] [--json] [--progress]
--
-- The catalog directory is `-c`/`--catalog`, else `$MORAINE_CATALOG`, else
-- ./catalog.moraine. Exit status: what the command returns (0 unless it
-- says otherwise), 1 for an error, 2 for a usage error, 130 when
-- interrupted (Ctrl-C), 70 for an internal error (a bug).
-- @module moraine.cli.main

local moraine = require "moraine"
local argparse = require "argparse"
local errors = require "moraine.cli.errors"
local util = require "moraine.cli.util"
local output = require "moraine.cli.output"
local help = require "moraine.cli.help"

local unpack = table.unpack or unpack
local usage_fail = errors.usage_fail

local M = {}

-- The commands in the order `moraine help` lists them, each with the module
-- that holds its help entry and its code.
local COMMANDS = {
  { "init", "moraine.cli.init_command" }, { "import", "moraine.cli.sync" }, { "upgrade", "moraine.cli.upgrade" },
  { "sync", "moraine.cli.sync" },
  { "compare", "moraine.cli.sync" }, { "export", "moraine.cli.export" }, { "push", "moraine.cli.push" },
  { "sql", "moraine.cli.sql" }, { "snapshots", "moraine.cli.snapshots" }, { "tables", "moraine.cli.tables" },
  { "show", "moraine.cli.show" }, { "files", "moraine.cli.files" }, { "history", "moraine.cli.history" },
  { "diff", "moraine.cli.diff" }, { "verify", "moraine.cli.verify" }, { "compact", "moraine.cli.compact" }, { "audit", "moraine.cli.layout" },
  { "layout", "moraine.cli.layout" }, { "clustering", "moraine.cli.layout" }, { "stats", "moraine.cli.stats" },
  { "repl", "moraine.cli.repl" }, { "token-hash", "moraine.cli.token_hash" },
}

local ORDER, HELP, RUN = {}, {}, {}
for i, c in ipairs(COMMANDS) do
  local mod = require(c[2])
  ORDER[i], HELP[c[1]], RUN[c[1]] = c[1], mod.help[c[1]], mod.run[c[1]]
end

-- ---- the parser ------------------------------------------------------------------------------

-- A word argparse must take as a value or a positional argument, not as an
-- option, carries this mark until the parse is done: the value of an option
-- ("--where -x"), a negative number ("--at -1", "diff -1 2"), and every word
-- after "--" that begins with "-" (argparse takes words after "--" as
-- positional only up to the command name).
local MARK = "\0"

local function unmark(v)
  if type(v) == "string" then return (v:gsub("^%z", "")) end
  if type(v) == "table" then for i, x in ipairs(v) do v[i] = unmark(x) end end
  return v
end

-- the options that take a value, of any command, and -c/--catalog
local VALUE_OPTS = { ["-c"] = true, ["--catalog"] = true }
for _, h in pairs(HELP) do for opt in pairs(h.flags) do VALUE_OPTS[opt] = true end end

local function mark_words(argv)
  local out, value_next = {}, false
  for i = 1, #argv do
    local a = argv[i]
    if a == "--" and not value_next then
      for j = i + 1, #argv do out[#out + 1] = (argv[j]:sub(1, 1) == "-" and MARK or "") .. argv[j] end
      break
    end
    -- a value, a negative number, or text no option looks like: SQL starting
    -- with a "-- comment", anything spanning lines
    if (value_next and a:sub(1, 1) == "-") or a:match("^%-%d") or a:match("^%-%-%s")
      or (a:sub(1, 1) == "-" and a:find("\n") and not a:match("^%-%-?[%w][%w-]*=")) then
      out[#out + 1] = MARK .. a
      value_next = false
    else
      out[#out + 1] = a
      value_next = not value_next and VALUE_OPTS[a] or false
    end
  end
  return out
end

-- option word ("--at S" -> "--at") -> its explanation, for argparse's help
local function explanations(h)
  local m = {}
  for _, o in ipairs(h.options) do m[o[1]:match("^(%S+)")] = o[2] end
  return m
end

local command_of = {} -- argparse parser -> command name

-- argparse's usage errors, in moraine's words (status 2 and a hint naming the help)
local function parse_error(parser, msg)
  local name = command_of[parser]
  msg = msg:gsub("%z", ""):gsub("\n.*", "") -- argparse's "Did you mean" tip is left out
  -- "--json=x": an option that takes no value, given one, is unknown in that form
  local opt = msg:match("^unknown option '(.-)'$") or msg:match("^option '(.-)' does not take arguments$")
  if opt then
    usage_fail("unknown option " .. opt .. (name and (" for '" .. name .. "'") or ""), name ~= "help" and name or nil)
  end
  local cmd = msg:match("^unknown command '(.-)'$")
  if cmd then usage_fail("unknown command '" .. cmd .. "'") end
  opt = msg:match("^option '(.-)' requires an argument$")
  if opt then usage_fail("option " .. opt .. " needs a value", name ~= "help" and name or nil) end
  usage_fail(msg, name ~= "help" and name or nil)
end

local function build_parser()
  local p = argparse("moraine", "the command-line tool of a moraine catalog (a DuckLake catalog on LMDB)")
    :add_help(false):usage("usage: moraine [-c DIR | --catalog DIR] COMMAND [ARGS] [--json] [--progress]")
    :command_target("command"):require_command(false)
  p.error = parse_error
  p:option("-c --catalog", "the catalog directory (default $MORAINE_CATALOG or ./catalog.moraine)"):argname("DIR")
  p:flag("--json", "one JSON document on stdout (the read commands)")
  p:flag("--progress", "show progress on stderr even when it is not a terminal")
  p:flag("-h --help", "this help")
  p:flag("-V --version", "the version")
  for _, name in ipairs(ORDER) do
    local h = HELP[name]
    local c = p:command(name, h.summary .. ".\n\n" .. h.text, "example:\n  " .. h.example)
      :summary(h.summary):usage("usage: " .. h.synopsis):add_help(false)
    command_of[c] = name
    local say = explanations(h)
    for opt, field in pairs(h.flags) do c:option(opt, say[opt]):target(field):args(1) end
    for opt, field in pairs(h.switches or {}) do c:flag(opt, say[opt]):target(field) end
    for i = 1, h.nargs[2] do
      -- optional to argparse: --help goes before a missing argument, which main reports
      c:argument(h.args[i]):args("?"):target("arg" .. i)
    end
    c:argument("extra"):args("*"):target("extra"):hidden(true)
  end
  local hc = p:command("help", "help for one command, or every command's summary"):add_help(false)
  command_of[hc] = "help"
  hc:argument("COMMAND"):args("?"):target("arg1")
  hc:argument("extra"):args("*"):target("extra"):hidden(true)
  return p
end

-- ---- running a command -----------------------------------------------------------------------

local current_command -- for the hint of an error no command caught

local function run(argv)
  local g = build_parser():parse(mark_words(argv))
  for k, v in pairs(g) do g[k] = unmark(v) end
  if g.progress then output.force_progress(true) end
  if g.version then
    io.stdout:write("moraine ", moraine.version, " (", (rawget(_G, "jit") and jit.version) or _VERSION, ")\n")
    return 0
  end
  local name, pos = g.command, {}
  local h = name and HELP[name]
  for i = 1, h and h.nargs[2] or 1 do pos[i] = g["arg" .. i] end
  if name == nil then
    if g.help then help.general(io.stdout, ORDER, HELP) return 0 end
    help.general(io.stderr, ORDER, HELP)
    usage_fail("no command given")
  end
  if name == "help" then
    local topic = pos[1]
    if topic == nil then help.general(io.stdout, ORDER, HELP) return 0 end
    if #g.extra > 0 then usage_fail("help takes one command name", nil) end
    if not HELP[topic] then usage_fail("unknown command '" .. topic .. "'") end
    help.command(HELP[topic], io.stdout)
    return 0
  end
  if g.help then help.command(h, io.stdout) return 0 end
  if g.json and not h.json then usage_fail("option --json does not apply to '" .. name .. "'", name) end
  local opts = {}
  for _, field in pairs(h.flags) do opts[field] = g[field] end
  for _, field in pairs(h.switches or {}) do opts[field] = g[field] or nil end
  if opts.table_id ~= nil then
    -- --table-id ID stands for the TABLE argument "#ID" (a shell reads a bare #ID as a comment)
    if not opts.table_id:match("^%d+$") then
      usage_fail("--table-id expects a table_id (a non-negative integer), got '" .. opts.table_id .. "'", name)
    end
    if #pos > 0 then usage_fail("give TABLE or --table-id, not both", name) end
    pos[1] = "#" .. opts.table_id
  end
  if #pos < h.nargs[1] then
    usage_fail("missing argument " .. h.args[#pos + 1] .. " (usage: " .. h.synopsis .. ")", name)
  end
  if #g.extra > 0 then usage_fail("unexpected argument '" .. g.extra[1] .. "'", name) end
  current_command = name
  local ctx = { json = g.json, opts = opts }
  if opts.at ~= nil then
    ctx.at = util.parse_int(opts.at)
    if ctx.at == nil then usage_fail("--at expects a snapshot id (an integer), got '" .. opts.at .. "'", name) end
  end
  local env_dir = os.getenv("MORAINE_CATALOG")
  ctx.dir = g.catalog or ((env_dir and env_dir ~= "") and env_dir) or "catalog.moraine"
  if ctx.dir == "" then usage_fail("the catalog path (-c/--catalog or MORAINE_CATALOG) is an empty string", name) end
  if ctx.json then output.json_ready() end
  local status = RUN[name](ctx, unpack(pos, 1, #pos))
  return type(status) == "number" and status or 0
end

--- Runs the `moraine` command line: parses it, runs the command and prints
-- its errors on stderr ("moraine: MESSAGE", "hint: HINT").
-- @tparam {string,...} argv the arguments (the global `arg` of a script)
-- @treturn integer the exit status: the command's (0 unless it says
--   otherwise), 1 for an error, 2 for a usage error, 130 when interrupted
--   (SIGINT), 70 for a bug
function M.main(argv)
  local INTERRUPTED = {}
  local ok, res = xpcall(run, function(e)
    if type(e) == "table" and (errors.is_cli(e) or moraine.is_error(e)) then return e end
    -- the lua and luajit commands raise "interrupted!" on SIGINT (Ctrl-C); an
    -- open write transaction has been aborted on the way out, as on any error
    if type(e) == "string" and e:match("interrupted!$") then return INTERRUPTED end
    return debug.traceback(tostring(e), 2)
  end, argv)
  io.stdout:flush()
  local out_ok, out_err = moraine.core.flush_stdout()
  if not out_ok then -- the output did not all reach standard output (a full disk, a closed pipe): not a success
    io.stderr:write("moraine: cannot write the output: ", tostring(out_err), "\n")
    if ok and (res or 0) == 0 then return 1 end
  end
  if ok then return res or 0 end
  if res == INTERRUPTED then
    io.stderr:write("moraine: interrupted\n")
    return 130 -- 128 + SIGINT, as a shell reports a command Ctrl-C stopped
  end
  if errors.is_cli(res) then
    io.stderr:write("moraine: ", res.message, "\n")
    if res.hint then io.stderr:write("hint: ", res.hint, "\n") end
    return res.status
  elseif moraine.is_error(res) then
    local hint = errors.format_hint(res.message) or errors.CODE_HINTS[res.code] or ("see 'moraine " .. (current_command and (current_command .. " ") or "") .. "--help'")
    io.stderr:write("moraine: ", res.code, ": ", tostring(res.message), "\n", "hint: ", hint, "\n")
    return 1
  end
  io.stderr:write("moraine: internal error: ", tostring(res), "\n",
    "hint: this is a bug in moraine; please report it with the command line\n")
  return 70
end

return M
