--- moraine.cli.util — the values and files of the `moraine` command: the
-- text of an integer id (a Lua integer, a LuaJIT number or int64 cdata), a
-- map key for one, integers of command-line words, and file tests.
-- @module moraine.cli.util

local moraine = require "moraine"

local NULL = moraine.null

local M = {}

--- Runs a shell command.
-- @tparam string cmd the command
-- @treturn boolean whether it exited with status 0
function M.sh_ok(cmd)
  local r = os.execute(cmd)
  return r == true or r == 0
end

--- Decimal text of an integer (Lua integer, LuaJIT number or int64 cdata).
-- @param v the value
-- @treturn string
function M.istr(v)
  if type(v) == "cdata" then return (tostring(v):gsub("U?LL$", "")) end
  if type(v) == "number" then
    if math.type and math.type(v) == "integer" then return tostring(v) end
    if v == math.floor(v) and math.abs(v) < 2 ^ 63 then return string.format("%d", v) end
    return string.format("%.17g", v)
  end
  return tostring(v)
end

--- @n (an integer) and @noun, plural unless @n is 1: "1 snapshot", "21 snapshots".
-- @tparam integer n the count
-- @tparam string noun the singular noun ("snapshot", "row")
-- @tparam[opt] string plural its plural (default @noun .. "s")
-- @treturn string
function M.count(n, noun, plural)
  return string.format("%d %s", n, n == 1 and noun or (plural or noun .. "s"))
end

--- @s as one single-quoted shell word (each ' inside as '\''), for a
-- command a message tells the user to paste; a plain word (letters, digits,
-- / . _ - + : , @) stays as it is.
-- @tparam string s
-- @treturn string
function M.shell_word(s)
  if s:match("^[%w/%._%-%+:,@]+$") then return s end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

--- A map key for an id value (LuaJIT compares cdata integers by identity).
-- @param v the value (nil and NULL give "NULL")
-- @treturn string
function M.key(v)
  if v == NULL or v == nil then return "NULL" end
  return M.istr(v)
end

--- Whether a value is nil or moraine.null.
-- @param v the value
-- @treturn boolean
function M.is_null(v) return v == nil or v == NULL end

--- The integer a command-line word spells, or nil.
-- @tparam string s the word
-- @treturn ?integer
function M.parse_int(s)
  if type(s) ~= "string" or not s:match("^%-?%d+$") then return nil end
  local n = tonumber(s)
  if not n then return nil end
  if math.tointeger then n = math.tointeger(n) end
  if n == nil or (not math.tointeger and math.abs(n) >= 2 ^ 53) then return nil end
  return n
end

--- A number for arithmetic on a possibly-cdata integer.
-- @param v the value
-- @return v as a Lua number (cdata converted), else v
function M.num(v)
  if type(v) == "cdata" then return tonumber(v) end
  return v
end

--- Whether a path exists (a file or a directory).
-- @tparam string path
-- @treturn boolean
function M.exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return os.rename(path, path) ~= nil
end

--- Whether a path is a directory.
-- @tparam string path
-- @treturn boolean
function M.is_dir(path)
  local f = io.open(path, "rb")
  if not f then return false end
  local ok, _, code = f:read(1)
  f:close()
  return ok == nil and code == 21 -- EISDIR
end

return M
