--- moraine.cli.errors — the errors the `moraine` command reports itself.
--
-- A command that fails raises a CLI error `{cli = true, message, hint,
-- status}`; `moraine.cli.main` prints it on stderr as "moraine: MESSAGE"
-- and "hint: HINT" and exits with its status (1, or 2 for a usage error).
-- @module moraine.cli.errors

local moraine = require "moraine"

local M = {}

local CliError = {}
CliError.__index = CliError
CliError.__tostring = function(e) return "moraine: " .. e.message end

--- Raises a CLI error. A message saying the catalog is in an older store
-- format gets `M.format_hint` instead of `hint`: the catalog is what to fix,
-- whatever the command.
-- @tparam string message what went wrong (printed after "moraine: ")
-- @tparam[opt] string hint what to do about it (printed after "hint: ")
-- @tparam[opt=1] integer status the exit status
-- @raise always: the CLI error
function M.fail(message, hint, status)
  hint = M.format_hint(message) or hint
  error(setmetatable({ cli = true, message = message, hint = hint, status = status or 1 }, CliError), 0)
end

--- Raises a usage error (exit status 2) whose hint points to the help.
-- @tparam string message what is wrong with the command line
-- @tparam[opt] string cmd the command whose help the hint names (nil: `moraine --help`)
-- @raise always: the CLI error
function M.usage_fail(message, cmd)
  M.fail(message, cmd and ("see 'moraine " .. cmd .. " --help'") or "see 'moraine --help'", 2)
end

--- Whether a value is a CLI error (raised by `fail` or `usage_fail`).
-- @param e any value
-- @treturn boolean
function M.is_cli(e)
  return type(e) == "table" and getmetatable(e) == CliError
end

--- Runs `fn(...)`; a moraine error it raises becomes a CLI error with `hint`.
-- @tparam string hint the hint of that error
-- @tparam function fn the function
-- @param ... its arguments
-- @return what `fn` returns
-- @raise a CLI error for a moraine error; any other error as it is
function M.with_hint(hint, fn, ...)
  local function finish(ok, ...)
    if ok then return ... end
    local e = ...
    if moraine.is_error(e) then M.fail(e.code .. ": " .. tostring(e.message), hint) end
    error(e, 0)
  end
  return finish(pcall(fn, ...))
end

--- The hint for an error saying the catalog is in an older store format
-- (docs/codec.md, Versioning), or nil for any other message.
-- @tparam string message the error's message
-- @treturn ?string the hint: run `moraine compact` once; or, when compact
--   met a damaged value while rewriting an older format's catalog (which
--   this build cannot verify), to verify it with the moraine that wrote it
function M.format_hint(message)
  message = tostring(message)
  local old = message:match("this build neither reads nor verifies format (%d+)")
  if old then
    return "the catalog is damaged and in store format " .. old .. ", which this build cannot verify: run 'moraine verify' of the "
      .. "moraine that wrote it, repair the entries it lists (or import the lake again), then 'moraine compact'"
  end
  if message:find("`moraine compact` rewrites it in format", 1, true) then
    return "run 'moraine compact' once: it rewrites the catalog in this build's store format (docs/codec.md, Versioning)"
  end
end

--- The hint printed for a moraine error no command caught, by error code.
-- @table CODE_HINTS
M.CODE_HINTS = {
  ECORRUPT = "the catalog is damaged; 'moraine verify' lists every damaged entry",
  EFORMAT = "the catalog is in a store format this build does not read: 'moraine compact' rewrites an older one "
    .. "(formats 2 and 3); docs/codec.md, Versioning, says which builds read the others",
  ELMDB = "the catalog's LMDB files could not be read; 'moraine verify' checks them",
  ECONFLICT = "another writer committed a conflicting change first (DuckLake's conflict rules); run the command again "
    .. "on the catalog as it is now",
  EMAPFULL = "the commit did not fit in the catalog's map (1 GiB at first, doubled before each commit up to 64 GiB): "
    .. "commit in smaller parts, or open the catalog from Lua with a larger map_size or max_map_size",
  EREADONLY = "the catalog directory is read-only",
}

return M
