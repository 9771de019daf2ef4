--- moraine.cli.token_hash — `moraine token-hash`: the SHA-256 of a bearer
-- token, for a moraine.http access policy.
-- @module moraine.cli.token_hash

local errors = require "moraine.cli.errors"

local fail = errors.fail

local M = {}

local HELP = {
  ["token-hash"] = {
    synopsis = "moraine token-hash < TOKEN",
    summary = "the SHA-256 of a bearer token, for a moraine.http policy",
    text = [[
Reads one bearer token from stdin (its first line; a trailing newline is
not part of it) and prints its SHA-256 in hex: the "sha256" of a token in a
moraine.http access policy (docs/openresty.md), which stores no token, only
its hash. A token is 16 to 512 characters of RFC 6750's token alphabet
(letters, digits, - . _ ~ + / and trailing =); make one with
`openssl rand -hex 32`. The same hash: printf %s TOKEN | sha256sum.
Needs no catalog.]],
    options = {},
    example = "openssl rand -hex 32 > reader.token && moraine token-hash < reader.token",
    flags = {},
    nargs = { 0, 0 },
  },
}

local function token_hash()
  local line = io.stdin:read("*l")
  local tok = line and line:gsub("\r$", "") or ""
  if tok == "" then fail("no token on stdin", "moraine token-hash < FILE (make a token with: openssl rand -hex 32)") end
  if #tok < 16 or #tok > 512 or not tok:match("^[%w%-%._~%+/]+=*$") then
    fail("the token must be 16 to 512 characters of letters, digits, - . _ ~ + / and trailing = (RFC 6750)",
      "make one with: openssl rand -hex 32")
  end
  -- printf is the shell's builtin: the token is in no process's arguments; it holds no quote (checked above)
  local p = io.popen("printf %s '" .. tok .. "' | sha256sum")
  local out = p and p:read("*a") or ""
  if p then p:close() end
  local hex = out:match("^(%x+)")
  if not hex or #hex ~= 64 then fail("sha256sum did not answer", "install coreutils") end
  io.stdout:write(hex, "\n")
end

--- The help of `moraine token-hash` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = HELP

--- The command: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`,
-- `opts`; ... the positional arguments), returning the exit status (nil: 0).
-- @table run
M.run = { ["token-hash"] = token_hash }

return M
