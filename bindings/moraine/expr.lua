--- SQL expressions as DuckDB parses and renders them: the sort expressions
-- and partition keys of DuckLake's `SET SORTED BY` / `SET PARTITIONED BY`.
--
-- `parse` reads the SQL a user writes (column references, quoted
-- identifiers, function calls, `CAST(x AS t)` and `x::t`, unary minus,
-- arithmetic `+ - * / %`, `||`, comparisons, string/number/boolean/NULL
-- literals, typed literals such as `DATE '2024-01-01'`, parentheses) into a
-- tree; `render` writes the tree as DuckDB's ParsedExpression::ToString()
-- does, which is the text DuckLake stores in ducklake_sort_expression:
-- operators in parentheses with spaces (`((n * 2) - 1)`), unary minus as
-- `-(x)`, `CAST(x AS VARCHAR)`, COALESCE upper case, function names lower
-- case, every name through DuckDB's quoting rule (moraine.ident).
-- Tokens come from moraine.sql's LPeg lexer.
-- @module moraine.expr
local ident = require "moraine.ident"

local M = {}

-- an integral number as an integer (Lua 5.4) or as is (LuaJIT has no math.tointeger)
local function tointeger(x)
  if math.tointeger then return math.tointeger(x) end
  if type(x) == "number" and x == math.floor(x) and math.abs(x) < 2 ^ 53 then return x end
end

-- DuckDB's spellings of type names as LogicalType::ToString gives them.
local TYPE_ALIASES = {
  INT = "INTEGER", INT4 = "INTEGER", SIGNED = "INTEGER", INT8 = "BIGINT", LONG = "BIGINT",
  INT2 = "SMALLINT", SHORT = "SMALLINT", INT1 = "TINYINT", BOOL = "BOOLEAN", LOGICAL = "BOOLEAN",
  FLOAT8 = "DOUBLE", NUMERIC = "DECIMAL", FLOAT4 = "FLOAT", REAL = "FLOAT", TEXT = "VARCHAR",
  STRING = "VARCHAR", BPCHAR = "VARCHAR", CHAR = "VARCHAR", DATETIME = "TIMESTAMP",
  TIMESTAMPTZ = "TIMESTAMP WITH TIME ZONE", BYTEA = "BLOB",
}

local function perr(tok, what)
  local where = tok and ("at byte " .. tok.pos) or "at the end"
  error({ sql_error = true, code = "EINVAL", message = what .. " (" .. where .. ")" }, 0)
end

--- A cursor over a token array (as moraine.sql's lexer gives it).
-- @tparam {table,...} toks tokens `{kind = "id"|"qid"|"str"|"num"|"op", v = s, pos = n}`
-- @tparam[opt=1] integer i the first token
-- @treturn table the cursor: fields `toks`, `i`
function M.cursor(toks, i)
  return { toks = toks, i = i or 1 }
end

local function peek(c, k) return c.toks[c.i + (k or 0)] end

--- Whether token `t` is the keyword `w` (an unquoted word, any case).
-- @tparam ?table t a token, or nil
-- @tparam string w the keyword in upper case
-- @treturn boolean
function M.is_kw(t, w) return t ~= nil and t.kind == "id" and t.v:upper() == w end

--- Whether token `t` is the operator or punctuation `o`.
-- @tparam ?table t a token, or nil
-- @tparam string o e.g. `"("`, `"::"`
-- @treturn boolean
function M.is_op(t, o) return t ~= nil and t.kind == "op" and t.v == o end

local is_kw, is_op = M.is_kw, M.is_op

-- DuckDB's expression keywords moraine does not read (its parser takes
-- them; moraine would have to render them as DuckDB's ToString does)
local UNREAD = {
  CASE = "CASE", NOT = "NOT", EXISTS = "EXISTS", IS = "IS", ISNULL = "ISNULL", NOTNULL = "NOTNULL",
  BETWEEN = "BETWEEN", IN = "IN", COLLATE = "COLLATE", AND = "AND", OR = "OR", LIKE = "LIKE", ILIKE = "ILIKE",
  GLOB = "GLOB", SIMILAR = "SIMILAR TO",
}

--- The refusal for an expression keyword moraine does not read (CASE, NOT,
-- IS [NOT] NULL, BETWEEN, IN, COLLATE, AND, OR, LIKE, ...), when token `t`
-- is one (an unquoted word).
-- @tparam ?table t a token, or nil
-- @treturn ?string the message, naming the word and the byte; nil for any other token
function M.unread(t)
  local w = t and t.kind == "id" and UNREAD[t.v:upper()]
  if not w then return nil end
  return w .. " is not supported in moraine's SQL expressions (sort keys, partition keys, defaults): moraine reads "
    .. "column references, literals, function calls, CAST, unary minus, arithmetic, || and comparisons (at byte " .. t.pos .. ")"
end

-- fails at token @tok: with M.unread's message when it is such a keyword, else "@what (at byte N)"
local function perr_at(tok, what)
  local msg = M.unread(tok)
  if msg then error({ sql_error = true, code = "EINVAL", message = msg }, 0) end
  perr(tok, what)
end

--- Reads a type name at the cursor: a word (or two: DOUBLE PRECISION,
-- TIMESTAMP WITH TIME ZONE) with an optional `(n[, m])`, `[]` suffixes.
-- @tparam table c the cursor
-- @treturn string the type in DuckDB's upper-case spelling (aliases resolved)
function M.parse_type(c)
  local t = peek(c)
  if not t or (t.kind ~= "id" and t.kind ~= "qid") then perr(t, "expected a type name") end
  -- a quoted name is a type only when it is a plain word ("int" is INTEGER);
  -- anything else would render as text no parser reads back (found by fuzz_sql)
  if not t.v:match("^[%a_][%w_]*$") then perr(t, "unsupported type name") end
  c.i = c.i + 1
  local name = t.v:upper()
  if name == "DOUBLE" and is_kw(peek(c), "PRECISION") then c.i = c.i + 1 end
  if (name == "TIMESTAMP" or name == "TIME") and is_kw(peek(c), "WITH") and is_kw(peek(c, 1), "TIME")
     and is_kw(peek(c, 2), "ZONE") then
    c.i = c.i + 3
    name = name .. " WITH TIME ZONE"
  end
  name = TYPE_ALIASES[name] or name
  if is_op(peek(c), "(") then
    c.i = c.i + 1
    local args = {}
    repeat
      local n = peek(c)
      if not n or n.kind ~= "num" or not n.v:match("^%d+$") then perr(n, "expected an integer type parameter") end
      args[#args + 1] = tostring(tointeger(tonumber(n.v)) or n.v)
      c.i = c.i + 1
      local sep = peek(c)
      if is_op(sep, ",") then c.i = c.i + 1 elseif not is_op(sep, ")") then perr(sep, "expected ',' or ')'") end
    until is_op(peek(c), ")")
    c.i = c.i + 1
    name = name .. "(" .. table.concat(args, ",") .. ")"
  end
  while is_op(peek(c), "[") and is_op(peek(c, 1), "]") do
    c.i = c.i + 2
    name = name .. "[]"
  end
  return name
end

local parse_expr

local function parse_primary(c)
  local t = peek(c)
  if not t then perr(nil, "expected an expression") end
  if t.kind == "num" then
    c.i = c.i + 1
    return { k = "const", text = t.v }
  elseif t.kind == "str" then
    c.i = c.i + 1
    return { k = "const", str = t.v }
  elseif is_op(t, "(") then
    c.i = c.i + 1
    local e = parse_expr(c)
    if not is_op(peek(c), ")") then perr_at(peek(c), "expected ')'") end
    c.i = c.i + 1
    return e
  elseif t.kind == "id" or t.kind == "qid" then
    local up = t.kind == "id" and t.v:upper()
    -- reserved words of DuckDB that begin an expression moraine does not read
    if up == "CASE" or up == "NOT" or up == "EXISTS" then perr_at(t, "unsupported") end
    if up == "NULL" then c.i = c.i + 1 return { k = "const", text = "NULL" } end
    if up == "TRUE" or up == "FALSE" then c.i = c.i + 1 return { k = "const", text = up:lower() } end
    if (up == "CAST" or up == "TRY_CAST") and is_op(peek(c, 1), "(") then
      c.i = c.i + 2
      local e = parse_expr(c)
      if not is_kw(peek(c), "AS") then perr_at(peek(c), "expected AS in " .. up) end
      c.i = c.i + 1
      local ty = M.parse_type(c)
      if not is_op(peek(c), ")") then perr(peek(c), "expected ')'") end
      c.i = c.i + 1
      return { k = "cast", try = up == "TRY_CAST", child = e, type = ty }
    end
    if t.kind == "id" and peek(c, 1) and peek(c, 1).kind == "str"
       and (up == "DATE" or up == "TIMESTAMP" or up == "TIME" or up == "INTERVAL" or up == "TIMESTAMPTZ") then
      c.i = c.i + 2
      return { k = "cast", child = { k = "const", str = peek(c, -1).v }, type = TYPE_ALIASES[up] or up }
    end
    if is_op(peek(c, 1), "(") then
      c.i = c.i + 2
      local args = {}
      if not is_op(peek(c), ")") then
        repeat
          args[#args + 1] = parse_expr(c)
          local sep = peek(c)
          if is_op(sep, ",") then c.i = c.i + 1 elseif not is_op(sep, ")") then perr_at(sep, "expected ',' or ')'") end
        until is_op(peek(c), ")")
      end
      c.i = c.i + 1
      if up == "COALESCE" then return { k = "coalesce", args = args } end
      -- DuckDB's transformer lower-cases a function name, quoted or not
      return { k = "func", name = t.v:lower(), args = args }
    end
    c.i = c.i + 1
    local parts = { t.v }
    while is_op(peek(c), ".") and peek(c, 1) and (peek(c, 1).kind == "id" or peek(c, 1).kind == "qid") do
      parts[#parts + 1] = peek(c, 1).v
      c.i = c.i + 2
    end
    return { k = "col", parts = parts }
  end
  perr(t, "unexpected '" .. t.v .. "' in an expression")
end

local function parse_postfix(c)
  local e = parse_primary(c)
  while is_op(peek(c), "::") do
    c.i = c.i + 1
    e = { k = "cast", child = e, type = M.parse_type(c) }
  end
  return e
end

local function parse_unary(c)
  local t = peek(c)
  if is_op(t, "-") or is_op(t, "+") then
    c.i = c.i + 1
    local e = parse_unary(c)
    if t.v == "+" then return e end
    if e.k == "const" and e.text and e.text:match("^%d") then
      return { k = "const", text = "-" .. e.text }
    end
    return { k = "neg", child = e }
  end
  return parse_postfix(c)
end

local LEVELS = {
  { ["="] = true, ["<"] = true, [">"] = true, ["<="] = true, [">="] = true, ["<>"] = true, ["!="] = true },
  { ["||"] = true },
  { ["+"] = true, ["-"] = true },
  { ["*"] = true, ["/"] = true, ["%"] = true, ["//"] = true },
}

local function parse_level(c, n)
  if n > #LEVELS then return parse_unary(c) end
  local l = parse_level(c, n + 1)
  while true do
    local t = peek(c)
    if not (t and t.kind == "op" and LEVELS[n][t.v]) then return l end
    c.i = c.i + 1
    l = { k = "op", op = t.v == "!=" and "<>" or t.v, l = l, r = parse_level(c, n + 1) }
  end
end

parse_expr = function(c) return parse_level(c, 1) end

--- Parses one expression at the cursor (advancing it).
-- @tparam table c the cursor
-- @treturn table the expression tree
-- @raise a table `{sql_error = true, code = "EINVAL", message = s}` naming the byte position
function M.parse(c) return parse_expr(c) end

local function quote_str(s) return "'" .. s:gsub("'", "''") .. "'" end

--- Renders an expression tree as DuckDB's ToString() does.
-- @tparam table e the tree from @{parse}
-- @treturn string
function M.render(e)
  local k = e.k
  if k == "col" then
    local out = {}
    for i, p in ipairs(e.parts) do out[i] = ident.render(p) end
    return table.concat(out, ".")
  elseif k == "const" then
    return e.str and quote_str(e.str) or e.text
  elseif k == "cast" then
    return (e.try and "TRY_CAST(" or "CAST(") .. M.render(e.child) .. " AS " .. e.type .. ")"
  elseif k == "neg" then
    return "-(" .. M.render(e.child) .. ")"
  elseif k == "op" then
    return "(" .. M.render(e.l) .. " " .. e.op .. " " .. M.render(e.r) .. ")"
  elseif k == "coalesce" or k == "func" then
    local args = {}
    for i, a in ipairs(e.args) do args[i] = M.render(a) end
    local name = k == "coalesce" and "COALESCE" or ident.render(e.name)
    return name .. "(" .. table.concat(args, ", ") .. ")"
  end
  error("expr.render: unknown node " .. tostring(k))
end

--- Calls `fn(node)` for every column reference of the tree, depth first.
-- @tparam table e the tree
-- @tparam function fn receives each `{k = "col", parts = {...}}` node (may change `parts`)
function M.each_column(e, fn)
  if e.k == "col" then fn(e)
  elseif e.k == "cast" or e.k == "neg" then M.each_column(e.child, fn)
  elseif e.k == "op" then M.each_column(e.l, fn) M.each_column(e.r, fn)
  elseif e.args then for _, a in ipairs(e.args) do M.each_column(a, fn) end
  end
end

return M
