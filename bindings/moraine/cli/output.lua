--- moraine.cli.output — how the `moraine` command prints: aligned tables on
-- a terminal (padded by UTF-8 character count; NULL shown as NULL), exact
-- tab-separated ones otherwise (PostgreSQL's COPY text format: NULL `\N`,
-- backslash and control bytes escaped), JSON documents whose objects keep
-- their keys in the order given, and the progress line of long work on
-- stderr (moraine.progress).
-- @module moraine.cli.output

local moraine = require "moraine"
local errors = require "moraine.cli.errors"
local util = require "moraine.cli.util"

local NULL = moraine.null
local concat = table.concat
local format, find, gsub = string.format, string.find, string.gsub
local istr = util.istr

local M = {}

local tty_cache = {}
local json_scalar -- moraine.json_encode of one scalar (set by json_ready)
-- progress is shown when stderr is a terminal, or with --progress (force_progress)
local force_progress = false

--- Whether a file descriptor is a terminal (MORAINE_FORCE_TTY=1: always).
-- @tparam integer fd 1 (stdout) or 2 (stderr)
-- @treturn boolean
function M.isatty(fd)
  if os.getenv("MORAINE_FORCE_TTY") == "1" then return true end
  if tty_cache[fd] == nil then tty_cache[fd] = util.sh_ok("test -t " .. fd) end
  return tty_cache[fd]
end
local isatty = M.isatty

local function utf8_len(s)
  -- count the bytes that start a character (not 10xxxxxx continuation bytes)
  local n = #s
  for _ in s:gmatch("[\128-\191]") do n = n - 1 end
  return n
end

-- The first @n characters of UTF-8 text @s.
local function utf8_prefix(s, n)
  local out, i = {}, 0
  for ch in s:gmatch("[^\128-\191][\128-\191]*") do
    i = i + 1
    if i > n then break end
    out[i] = ch
  end
  return concat(out)
end

-- Widest cell of a terminal table, in characters; longer values are cut with
-- an ellipsis (--json and the tab-separated form always give them whole).
local MAX_CELL = 120

-- ---- value formatting ----------------------------------------------------------------

-- Escapes of a value's text in a cell (PostgreSQL's COPY text format): a
-- backslash doubled, newline, tab and carriage return as \n \t \r, other
-- control bytes and DEL as \xNN; every other byte as it is (bytes that are
-- not valid UTF-8 too: the cell holds the value's bytes).
local ESCAPE = { ["\\"] = "\\\\", ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r" }
local function escape_byte(c) return ESCAPE[c] or format("\\x%02x", c:byte()) end
local function escape(s)
  if not find(s, "[%z\1-\31\127\\]") then return s end
  return (gsub(s, "[%z\1-\31\127\\]", escape_byte))
end

--- Text of a catalog value in a table cell. Strings (and the text of JSON
-- values) are escaped as in PostgreSQL's COPY text format: `\\` for a
-- backslash, `\n`, `\t`, `\r`, `\xNN` for the other control bytes and DEL;
-- other bytes (UTF-8 or not) unchanged. Integers in decimal, booleans as
-- true/false. SQL NULL (moraine.null) is `\N` in the exact form (the
-- tab-separated output), `NULL` in the aligned one (for people: there NULL
-- and the string 'NULL' look alike). nil (a cell that does not apply to
-- the row, not a catalog value) is empty in both.
-- @param v the value
-- @tparam[opt] boolean exact the exact (tab-separated) form
-- @treturn string
function M.cell(v, exact)
  if v == nil then return "" end
  if v == NULL then return exact and "\\N" or "NULL" end
  local t = type(v)
  if t == "string" then return escape(v) end
  if t == "boolean" then return tostring(v) end
  if t == "number" or t == "cdata" then return istr(v) end
  if t == "table" and type(v.json) == "string" then return escape(v.json) end
  return escape(tostring(v))
end
local cell = M.cell

local function is_numeric(v) return type(v) == "number" or type(v) == "cdata" end

-- The text of row @r's cell in column @c (`cell`; a `text` column's values as they are).
local function cell_text(c, r, exact)
  local v = r[c.key]
  if c.text then return v or "" end
  return cell(v, exact)
end

--- Prints a table. On a terminal: aligned, numbers to the right, cells cut
-- at 120 characters, NULL as `NULL`. Otherwise tab-separated and exact, as
-- PostgreSQL's COPY text format: a title line, then one line per row, its
-- cells (`cell` in the exact form: NULL `\N`, backslash `\\`, control
-- bytes escaped) separated by tabs, never cut.
-- @tparam {table,...} cols the columns, each `{key, title, right, text}`
--   (`text`: the values are strings already in the form printed, each made
--   by `cell` with `exact` = not aligned, printed as they are; nil is empty)
-- @tparam {table,...} rows the rows, tables keyed by column key
-- @tparam[opt] table opts `out` (a file, default stdout), `aligned`
--   (default: stdout is a terminal), `indent`; for a table printed in
--   chunks, `no_header` (skip the title lines) and `widths` (an array of
--   column widths kept from chunk to chunk: a column only grows)
function M.print_table(cols, rows, opts)
  opts = opts or {}
  local out = opts.out or io.stdout
  local aligned = opts.aligned
  if aligned == nil then aligned = isatty(1) end
  if not aligned then
    local t = {}
    for i, c in ipairs(cols) do t[i] = c.title or c.key end
    if not opts.no_header then out:write(concat(t, "\t"), "\n") end
    for _, r in ipairs(rows) do
      for i, c in ipairs(cols) do t[i] = cell_text(c, r, true) end
      out:write(concat(t, "\t"), "\n")
    end
    return
  end
  local w, right, text = opts.widths or {}, {}, {}
  for i, c in ipairs(cols) do
    w[i] = math.max(w[i] or 0, utf8_len(c.title or c.key))
    right[i] = c.right
    if right[i] == nil then
      right[i] = #rows > 0
      for _, r in ipairs(rows) do
        local v = r[c.key]
        if not (is_numeric(v) or v == nil or v == NULL) then right[i] = false break end
      end
    end
  end
  for j, r in ipairs(rows) do
    local tr = {}
    for i, c in ipairs(cols) do
      tr[i] = cell_text(c, r, false)
      local l = utf8_len(tr[i])
      if l > MAX_CELL then
        tr[i] = utf8_prefix(tr[i], MAX_CELL - 1) .. "…"
        l = MAX_CELL
      end
      if l > w[i] then w[i] = l end
    end
    text[j] = tr
  end
  local indent = opts.indent or ""
  local function line(tr)
    local parts = {}
    for i = 1, #cols do
      local pad = string.rep(" ", w[i] - utf8_len(tr[i]))
      if i == #cols and not right[i] then parts[i] = tr[i] else
        parts[i] = right[i] and (pad .. tr[i]) or (tr[i] .. pad)
      end
    end
    out:write(indent, (concat(parts, "  "):gsub("%s+$", "")), "\n")
  end
  local head, sep = {}, {}
  for i, c in ipairs(cols) do head[i], sep[i] = c.title or c.key, string.rep("-", w[i]) end
  if not opts.no_header then
    line(head)
    line(sep)
  end
  for _, tr in ipairs(text) do line(tr) end
end

--- The columns of `print_table` for an array of names.
-- @tparam {string,...} names the keys
-- @tparam[opt] {string,...} titles their titles (default: the names)
-- @treturn {table,...}
function M.cols_of(names, titles)
  local c = {}
  for i, n in ipairs(names) do c[i] = { key = n, title = titles and titles[i] or n } end
  return c
end


-- ---- JSON (moraine.json_encode for every value; structure assembled here so the
-- key order of every object is exactly the one given) ---------------------------------

local OBJ = {}

--- A JSON object whose keys print in the order given.
-- @tparam {string,...} keys the keys, in order
-- @tparam table vals the values by key (nil prints as null)
-- @treturn table the object, for `J` and `print_json`
function M.obj(keys, vals) return setmetatable({ keys = keys, vals = vals }, OBJ) end
local obj = M.obj

--- Makes JSON output ready (before a command with the json option runs).
-- @raise a CLI error when the build has no moraine.json_encode
function M.json_ready()
  if json_scalar then return end
  local enc = moraine.json_encode
  if type(enc) ~= "function" then
    errors.fail("--json is not available in this build (moraine.json_encode is missing)",
      "update moraine, or run the command without --json")
  end
  local ok, s = pcall(enc, 1)
  if ok and s == "1" then
    json_scalar = function(v) return enc(v) end
  else
    json_scalar = function(v) return (enc({ v }):sub(2, -2)) end
  end
end

--- Whether a table is a JSON value of the catalog (`{json = TEXT}` only).
-- @tparam table v
-- @treturn boolean
function M.is_json_value(v)
  return type(v.json) == "string" and next(v, next(v)) == nil
end
local is_json_value = M.is_json_value

-- The JSON text of a scalar: the common values written here, exactly as
-- moraine.json_encode writes them (a string of printable ASCII other than
-- '"' and '\\' needs no escape; an exact integer its decimal digits; null,
-- true, false), everything else through json_scalar (one C call each: at
-- 140,000 files, `files --json` spent two thirds of its time there).
local math_type, floor = math.type, math.floor
local function scalar(v)
  local t = type(v)
  if t == "string" then
    if not find(v, '[^ !#-%[%]-~]') then return '"' .. v .. '"' end
  elseif t == "number" then
    if math_type then
      if math_type(v) == "integer" then return tostring(v) end
    elseif v == floor(v) and v ~= 0 and v > -2 ^ 53 and v < 2 ^ 53 then
      return format("%d", v) -- LuaJIT: an integral number (0 left to jansson: -0)
    end
  elseif t == "boolean" then
    return v and "true" or "false"
  elseif v == NULL then
    return "null"
  end
  return json_scalar(v)
end

-- an object's key, written once per name
local key_text = setmetatable({}, { __mode = "k" })
local function key_json(k)
  local s = key_text[k]
  if not s then
    s = scalar(k)
    key_text[k] = s
  end
  return s
end

--- The JSON text of a value: an `obj`, an array, a catalog JSON value or a scalar.
-- @param v the value (nil is null)
-- @treturn string
function M.J(v)
  if type(v) == "table" then
    if getmetatable(v) == OBJ then
      local parts = {}
      for i, k in ipairs(v.keys) do
        local x = v.vals[k]
        if x == nil then x = NULL end
        parts[i] = key_json(k) .. ":" .. M.J(x)
      end
      return "{" .. concat(parts, ",") .. "}"
    end
    if is_json_value(v) then return v.json end
    local parts = {}
    for i = 1, #v do parts[i] = M.J(v[i]) end
    return "[" .. concat(parts, ",") .. "]"
  end
  if v == nil then v = NULL end
  return scalar(v)
end

--- Prints one JSON document and a newline on stdout.
-- @param doc the document (as for `J`)
function M.print_json(doc)
  io.stdout:write(M.J(doc), "\n")
end

--- One row as a JSON object in column order: one moraine.json_encode call
-- (key order given) when every value is a scalar, else through `J`.
-- @tparam {string,...} cols the columns
-- @tparam table row the row
-- @treturn string
function M.row_json(cols, row)
  for _, c in ipairs(cols) do
    local v = row[c]
    if v == nil or type(v) == "table" then return M.J(obj(cols, row)) end
  end
  return moraine.json_encode(row, cols)
end

-- ---- progress on stderr ------------------------------------------------------------------

--- Sets or reads whether progress shows when stderr is not a terminal (the
-- progress option).
-- @tparam[opt] boolean on the new setting (nil: leave it)
-- @treturn boolean the setting
function M.force_progress(on)
  if on ~= nil then force_progress = on end
  return force_progress
end

--- A progress meter on stderr (wall-clock time, moraine.progress).
-- @tparam string label what is being done ("exporting")
-- @tparam string unit what is counted ("tables")
-- @treturn ?function progress(done, total, phase), or nil when progress is not shown
-- @treturn function finish(ok, done)
function M.progress_meter(label, unit)
  if not (force_progress or isatty(2)) then return nil, function() end end
  local m = require("moraine.progress").meter({ label = label, unit = unit })
  return function(done, total, phase) m:update(done, total, phase) end, function(ok, done) m:finish(ok, done) end
end

return M
