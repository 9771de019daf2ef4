-- sql_driver.lua — the Lua side of the sql fuzz target (fuzz_sql.c): DuckLake's
-- DDL as moraine reads it (moraine.sql's LPeg lexer and statement parser) and
-- DuckDB's expression rules (moraine.expr, moraine.ident).
--
-- Called with (input): the fuzz input, a byte string. Its first byte picks
-- what the rest is read as (byte % 3):
--   0: statements for `sql.parse` (split on ';', each parsed);
--   1: one expression (a sort key or partition key as a user writes it);
--   2: the same expression wrapped in `ALTER TABLE t SET SORTED BY (...)`.
--
-- Checks (a failed one raises a plain error; the C side abort()s):
--   * parsing either succeeds or raises moraine's refusal: a table
--     `{sql_error = true, code = "EINVAL", message = s}` from the parser or a
--     moraine error table (EINVAL) from the lexer, whose message names a byte
--     position or the end of the input; any other error (a Lua runtime error
--     in the parser) is a bug;
--   * an expression that parses renders (DuckDB's ToString form) to a text
--     that parses again, to a tree that renders to the same text: render is
--     a fixed point after one step (what DuckLake stores reads back as itself);
--   * every column reference of a parsed tree renders through DuckDB's quoting
--     rule and reads back (ident.render then the lexer) to the same name.
local sql = require "moraine.sql"
local expr = require "moraine.expr"
local ident = require "moraine.ident"
local moraine_core = require "moraine.core"

local input = ...

local function refusal(e)
  if type(e) == "table" and e.sql_error then return e.code == "EINVAL" and type(e.message) == "string" end
  if moraine_core.is_error(e) then return e.code == "EINVAL" end
  return false
end

local function check_refusal(e, what)
  if not refusal(e) then error(what .. ": not a refusal: " .. tostring(type(e) == "table" and e.message or e), 0) end
  local msg = e.message
  if not (msg:find("byte %d+") or msg:find("end")) then error(what .. ": refusal names no position: " .. msg, 0) end
end

-- parse one expression filling the whole token list; nil when refused
local function parse_expr(text, what)
  local ok, toks = pcall(sql.tokens, text)
  if not ok then check_refusal(toks, what .. " (lexer)") return nil end
  if #toks == 0 then return nil end
  local c = expr.cursor(toks)
  local okp, tree = pcall(expr.parse, c)
  if not okp then check_refusal(tree, what .. " (parser)") return nil end
  if c.i <= #toks then return nil end -- trailing tokens: not one expression
  return tree
end

local function round_trip(tree)
  local r1 = expr.render(tree)
  local t2 = parse_expr(r1, "rendered " .. r1)
  if not t2 then error("the rendering does not parse back: " .. r1, 0) end
  local r2 = expr.render(t2)
  if r2 ~= r1 then error("render is not a fixed point: " .. r1 .. " -> " .. r2, 0) end
  expr.each_column(tree, function(node)
    for _, name in ipairs(node.parts) do
      local text = ident.render(name)
      local toks = sql.tokens(text)
      if #toks ~= 1 or toks[1].v ~= name then error("a name does not read back: " .. name .. " -> " .. text, 0) end
    end
  end)
end

if #input == 0 then return end
local mode = input:byte(1) % 3
local text = input:sub(2)
if mode == 0 then
  local ok, e = pcall(sql.parse, text)
  if not ok then check_refusal(e, "statements") end
elseif mode == 1 then
  local tree = parse_expr(text, "expression")
  if tree then round_trip(tree) end
else
  local ok, e = pcall(sql.parse, "ALTER TABLE t SET SORTED BY (" .. text .. ")")
  if not ok then check_refusal(e, "SET SORTED BY") end
end
