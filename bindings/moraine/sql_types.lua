--- DuckDB's column types as DuckLake stores them, and column defaults, for
-- `moraine.sql` (db:exec): the type grammar's result mapped to DuckLake's
-- spelling (`ducklake_column.column_type`, nested types with their children),
-- DuckDB's refusals (DECIMAL limits, types DuckLake does not store), and the
-- literal defaults moraine writes as DuckLake does (default_value and
-- initial_default). Errors are `moraine.sql`'s: `{sql_error = true, code,
-- message}` tables that `db:exec` raises as moraine errors.
-- @module moraine.sql_types
local ident = require "moraine.ident"
local expr = require "moraine.expr"

local M = {}

local function fail(code, msg) error({ sql_error = true, code = code, message = msg }, 0) end

-- DuckDB's type as DuckLake writes it in ducklake_column.column_type
local DL_TYPES = {
  BOOLEAN = "boolean", TINYINT = "int8", SMALLINT = "int16", INTEGER = "int32", BIGINT = "int64",
  HUGEINT = "int128", UTINYINT = "uint8", USMALLINT = "uint16", UINTEGER = "uint32",
  UBIGINT = "uint64", UHUGEINT = "uint128", FLOAT = "float32", DOUBLE = "float64",
  VARCHAR = "varchar", DATE = "date", TIMESTAMP = "timestamp", ["TIMESTAMP WITH TIME ZONE"] = "timestamptz",
  TIME = "time", ["TIME WITH TIME ZONE"] = "timetz", BLOB = "blob", UUID = "uuid",
  INTERVAL = "interval", JSON = "json", TIMESTAMP_S = "timestamp_s", TIMESTAMP_MS = "timestamp_ms",
  TIMESTAMP_NS = "timestamp_ns",
}

--- DuckLake's spelling (ducklake_column.column_type) of a DuckDB type name.
-- @tparam string t as @{moraine.expr.parse_type} gives it ("DECIMAL(18,2)", "INTEGER")
-- @treturn ?string nil for a type moraine's SQL path does not map
function M.ducklake_type(t)
  local p, s = t:match("^DECIMAL%((%d+),(%d+)%)$")
  if p then return "decimal(" .. p .. "," .. s .. ")" end
  local p1 = t:match("^DECIMAL%((%d+)%)$")
  if p1 then return "decimal(" .. p1 .. ",0)" end
  if t == "DECIMAL" then return "decimal(18,3)" end
  return DL_TYPES[t]
end

-- DuckDB types DuckLake does not store (DuckLakeTypes::ToString refuses them)
local NOT_STORED = { ENUM = true, UNION = true, BIT = true, BITSTRING = true, BIGNUM = true, VARINT = true }

-- DuckDB's names of VARCHAR that take a length (moraine.expr's aliases)
local VARCHARS = { VARCHAR = true, CHAR = true, BPCHAR = true, TEXT = true, STRING = true }

-- A DECIMAL/NUMERIC type modifier (its tokens: an optional '-', a number or
-- a string): nil when it is not an integer, else whether DuckDB's cast to
-- UTINYINT fails (negative or above 255) and its value.
local function decimal_mod(m)
  if m.tok.kind ~= "num" or not m.tok.v:match("^%d+$") then return nil end
  local ds = m.tok.v:gsub("^0+", "")
  if ds == "" then return false, 0 end
  if m.neg or #ds > 3 or tonumber(ds) > 255 then return true end
  return false, tonumber(ds)
end

-- DECIMAL(w[, s]) / NUMERIC(...) at cursor @c (the word, then '('): the type
-- as "DECIMAL(w,s)", its modifiers checked as DuckDB's BindDecimalType does
-- (src/catalog/default/default_types.cpp), in its order, with its words.
local function decimal_type(c)
  local at = c.toks[c.i].pos
  local function peek(k) return c.toks[c.i + (k or 0)] end
  local function refuse(msg) fail("EINVAL", msg .. " (at byte " .. at .. ")") end
  c.i = c.i + 2
  local mods = {}
  while true do
    local neg = false
    if expr.is_op(peek(), "-") then neg = true c.i = c.i + 1 end
    local n = peek()
    if not n or (n.kind ~= "num" and n.kind ~= "str") then
      fail("EINVAL", "expected a number as a DECIMAL type modifier" .. (n and (" at byte " .. n.pos) or " at the end of the statement"))
    end
    mods[#mods + 1] = { neg = neg, tok = n }
    c.i = c.i + 1
    if expr.is_op(peek(), ")") then c.i = c.i + 1 break end
    if not expr.is_op(peek(), ",") then
      fail("EINVAL", "expected ',' or ')'" .. (peek() and (" at byte " .. peek().pos) or " at the end of the statement"))
    end
    c.i = c.i + 1
  end
  local bad, width = decimal_mod(mods[1])
  if bad == nil then refuse("DECIMAL type width must be an integral type") end
  if bad then refuse("DECIMAL type width must be between 1 and 38") end
  local scale = 0
  if mods[2] then
    local bads
    bads, scale = decimal_mod(mods[2])
    if bads == nil then refuse("DECIMAL type scale must be an integral type") end
    if bads then refuse("DECIMAL type scale must be between 0 and 38") end
  end
  if #mods > 2 then refuse("DECIMAL type can take at most two type modifiers, width and scale") end
  if width < 1 or width > 38 then refuse("DECIMAL type width must be between 1 and 38") end
  if scale > width then refuse("DECIMAL type scale cannot be greater than width") end
  return "DECIMAL(" .. width .. "," .. scale .. ")"
end

-- A name as moraine_column_def's nested type text takes it: double-quoted, '"' doubled.
local function dl_name(n) return '"' .. n:gsub('"', '""') .. '"' end

--- A column's type in a column definition (CREATE TABLE, ADD COLUMN): a
-- DuckDB type as @{moraine.expr.parse_type} reads it, or a nested one,
-- nested arbitrarily: `STRUCT(name type, ...)`, `type[]` (a list),
-- `MAP(key, value)`.
-- @tparam table c a cursor (@{moraine.expr.cursor})
-- @treturn table `{sql = s, dl = s?, top = s?, unmapped = s?}`: the type as
--   written (for messages), DuckLake's spelling as moraine_column_def.type
--   takes it (`struct("a" int32)`, `list(int64)`, `map(varchar, int32)`;
--   nil when a type in it has no DuckLake spelling moraine knows, then
--   `unmapped` names it), and the column_type of the column's own row
-- `VARCHAR(n)` (also CHAR, BPCHAR, TEXT, STRING) is VARCHAR: DuckDB's
-- BindVarcharType ignores the length. `DECIMAL(w[, s])` / `NUMERIC(...)` is
-- checked as DuckDB's BindDecimalType checks it.
-- @raise `{sql_error = true, code = "EINVAL"}` with DuckDB's words where
--   DuckDB refuses the type (`Duplicate struct entry name`, `Map type needs
--   exactly two entries, key and value type`, `LIST is not valid as a
--   stand-alone type`, `DECIMAL type width must be between 1 and 38`,
--   `DECIMAL type scale must be between 0 and 38`, `DECIMAL type scale
--   cannot be greater than width`, `DECIMAL type width must be an integral
--   type`, `DECIMAL type can take at most two type modifiers, width and
--   scale`), DuckLake's for a STRUCT without fields, an ARRAY, an ENUM, a
--   UNION, BIT and BIGNUM (`Failed to convert DuckDB type to DuckLake -
--   unsupported type ...`), each followed by `(at byte N)`; a VARCHAR length
--   that is not one integer is refused naming the byte
function M.column_type(c)
  local function peek(k) return c.toks[c.i + (k or 0)] end
  local function perr(what)
    local t = peek()
    fail("EINVAL", what .. (t and (" at byte " .. t.pos .. " ('" .. t.v .. "')") or " at the end of the statement"))
  end
  local function need(o, what) if not expr.is_op(peek(), o) then perr(what) end c.i = c.i + 1 end
  -- the position DuckDB's and DuckLake's words are followed by: the byte of token @tok
  local function at(tok) return " (at byte " .. tok.pos .. ")" end
  local depth = 0
  local parse
  local function base()
    local t = peek()
    local up = t and t.kind == "id" and t.v:upper()
    if up == "STRUCT" and expr.is_op(peek(1), "(") then
      c.i = c.i + 2
      -- DuckLake: a STRUCT without fields is no DuckLake type (DuckLakeTypes::ToString)
      if expr.is_op(peek(), ")") then fail("EINVAL", "Failed to convert DuckDB type to DuckLake - unsupported type STRUCT()" .. at(t)) end
      local sql, dl, unmapped, seen = {}, {}, nil, {}
      while true do
        local n = peek()
        if not n or (n.kind ~= "id" and n.kind ~= "qid") then perr("expected a struct field's name") end
        c.i = c.i + 1
        -- DuckDB's parser (Transformer::TransformTypeName): names unique without regard to case
        local key = ident.fold(n.v)
        if seen[key] then fail("EINVAL", 'Duplicate struct entry name "' .. n.v .. '"' .. at(n)) end
        seen[key] = true
        local ft = parse()
        sql[#sql + 1] = ident.render(n.v) .. " " .. ft.sql
        if ft.dl then dl[#dl + 1] = dl_name(n.v) .. " " .. ft.dl else unmapped = unmapped or ft.unmapped end
        if not expr.is_op(peek(), ",") then break end
        c.i = c.i + 1
      end
      need(")", "expected ',' or ')' in STRUCT(...)")
      return { sql = "STRUCT(" .. table.concat(sql, ", ") .. ")", dl = not unmapped and "struct(" .. table.concat(dl, ", ") .. ")" or nil,
               unmapped = unmapped, top = "struct" }
    elseif up == "STRUCT" then
      perr("Struct needs a name and entries")
    elseif up == "MAP" then
      c.i = c.i + 1
      if not expr.is_op(peek(), "(") then perr("Map type needs exactly two entries, key and value type") end
      c.i = c.i + 1
      local k = parse()
      if not expr.is_op(peek(), ",") then fail("EINVAL", "Map type needs exactly two entries, key and value type" .. at(t)) end
      c.i = c.i + 1
      local v = parse()
      if not expr.is_op(peek(), ")") then fail("EINVAL", "Map type needs exactly two entries, key and value type" .. at(t)) end
      c.i = c.i + 1
      local unmapped = k.unmapped or v.unmapped
      return { sql = "MAP(" .. k.sql .. ", " .. v.sql .. ")", dl = not unmapped and "map(" .. k.dl .. ", " .. v.dl .. ")" or nil,
               unmapped = unmapped, top = "map" }
    elseif up == "LIST" then
      -- DuckDB's transformer: a list is written T[]
      fail("EINVAL", "LIST is not valid as a stand-alone type" .. at(t))
    elseif NOT_STORED[up] then
      -- DuckLake: DuckLakeTypes::ToString has no name for these types
      fail("EINVAL", "Failed to convert DuckDB type to DuckLake - unsupported type " .. up .. at(t))
    elseif (up == "DECIMAL" or up == "NUMERIC") and expr.is_op(peek(1), "(") then
      local name = decimal_type(c)
      local r = { sql = name, dl = M.ducklake_type(name), top = M.ducklake_type(name) }
      while expr.is_op(peek(), "[") and expr.is_op(peek(1), "]") do
        c.i = c.i + 2
        r = { sql = r.sql .. "[]", dl = "list(" .. r.dl .. ")", top = "list" }
      end
      return r
    elseif VARCHARS[up] and expr.is_op(peek(1), "(") then
      -- DuckDB reads VARCHAR(n) (its grammar: one unsigned integer) and
      -- ignores the length (BindVarcharType): the type is VARCHAR, which
      -- DuckLake stores as varchar
      local n = peek(2)
      if not (n and n.kind == "num" and n.v:match("^%d+$") and expr.is_op(peek(3), ")")) then
        fail("EINVAL", "moraine reads " .. up .. "(n) with one integer length, as DuckDB's grammar does (at byte " .. t.pos .. ")")
      end
      c.i = c.i + 4
      local r = { sql = "VARCHAR", dl = "varchar", top = "varchar" }
      while expr.is_op(peek(), "[") and expr.is_op(peek(1), "]") do
        c.i = c.i + 2
        r = { sql = r.sql .. "[]", dl = "list(" .. r.dl .. ")", top = "list" }
      end
      return r
    end
    local name = expr.parse_type(c)
    local lists = 0
    while name:sub(-2) == "[]" do name, lists = name:sub(1, -3), lists + 1 end
    local dl = M.ducklake_type(name)
    local r = { sql = name, dl = dl, unmapped = not dl and name or nil, top = dl }
    for _ = 1, lists do
      r = { sql = r.sql .. "[]", dl = r.dl and "list(" .. r.dl .. ")", unmapped = r.unmapped, top = "list" }
    end
    return r
  end
  parse = function()
    depth = depth + 1
    if depth > 100 then perr("moraine reads a type nested 100 levels deep at most") end
    local r = base()
    while expr.is_op(peek(), "[") do
      if expr.is_op(peek(1), "]") then
        c.i = c.i + 2
        r = { sql = r.sql .. "[]", dl = r.dl and "list(" .. r.dl .. ")", unmapped = r.unmapped, top = "list" }
      elseif peek(1) and peek(1).kind == "num" and expr.is_op(peek(2), "]") then
        -- DuckDB: T[N] is an ARRAY, which DuckLake does not store (DuckLakeTypes::ToString)
        fail("EINVAL", "Failed to convert DuckDB type to DuckLake - unsupported type " .. r.sql .. "[" .. peek(1).v .. "]" .. at(peek()))
      else
        perr("expected ']'")
      end
    end
    depth = depth - 1
    return r
  end
  return parse()
end

--- A column default as the statement gives it.
-- @tparam table e the DEFAULT expression (a `moraine.expr` node)
-- @treturn string the text: a literal's value, or the expression as DuckDB renders it
-- @treturn string "literal" or "expression" (DuckLake's default_value_type)
-- @treturn ?string for a literal, what it was: "str", "num", "bool" or "null"
function M.default_of(e)
  if e.k == "const" then
    if e.str then return e.str, "literal", "str" end
    if e.text == "NULL" then return e.text, "literal", "null" end
    if e.text == "true" or e.text == "false" then return e.text, "literal", "bool" end
    return e.text, "literal", "num"
  end
  return expr.render(e), "expression"
end

-- DuckLake writes a literal DEFAULT of CREATE TABLE and ADD COLUMN twice: as
-- default_value, the constant as DuckDB parsed it, and as initial_default,
-- the constant cast to the column's type (DuckLakeFieldId::FieldIdFromType:
-- ExtractInitialValue; DuckLakeTableEntry ExtractDefaultValue;
-- ColumnToSQLRecursive writes both through Value's string cast). The verbs
-- write one text to both, so a literal is taken only where the cast leaves its
-- text as it is; otherwise the statement is refused saying how to write it.
local CANON_INT = "^%-?[1-9]%d*$"
local function canon_int(v) return v == "0" or v:match(CANON_INT) ~= nil end
local function canon_dec(v) return v:match("^%-?0%.%d+$") ~= nil or v:match("^%-?[1-9]%d*%.%d+$") ~= nil end

-- The largest magnitude of each integer type, as digits: negative values
-- may reach MIN, positive ones MAX (no float rounding in the comparison).
local INT_LIMIT = {
  int8 = { "128", "127" }, int16 = { "32768", "32767" }, int32 = { "2147483648", "2147483647" },
  int64 = { "9223372036854775808", "9223372036854775807" },
  int128 = { "170141183460469231731687303715884105728", "170141183460469231731687303715884105727" },
  uint8 = { "0", "255" }, uint16 = { "0", "65535" }, uint32 = { "0", "4294967295" },
  uint64 = { "0", "18446744073709551615" }, uint128 = { "0", "340282366920938463463374607431768211455" },
}
local function dec_le(a, b) return #a < #b or (#a == #b and a <= b) end
local function in_int_range(v, ty)
  local lim = INT_LIMIT[ty]
  local mag = v:gsub("^%-", "")
  return dec_le(mag, v:sub(1, 1) == "-" and lim[1] or lim[2])
end

local function valid_date(y, m, d)
  y, m, d = tonumber(y), tonumber(m), tonumber(d)
  if m < 1 or m > 12 or d < 1 then return false end
  local days = ({ 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 })[m]
  if m == 2 and (y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0)) then days = 29 end
  return d <= days
end
local function valid_time(h, mi, se) return tonumber(h) < 24 and tonumber(mi) < 60 and tonumber(se) < 60 end

-- nil when literal @v (of kind @kind) reads the same cast to DuckLake type
-- @ty; else an example of how to write such a value
local function cast_keeps(v, kind, ty)
  if kind == "null" then return nil end
  if ty == "varchar" or ty == "json" then
    if kind == "str" or kind == "bool" or (kind == "num" and (canon_int(v) or canon_dec(v))) then return nil end
    return "'" .. v .. "'"
  end
  local base = ty:match("^[%a_]+%d*")
  if INT_LIMIT[base] and base == ty then
    if (kind == "num" or kind == "str") and canon_int(v) and in_int_range(v, ty) then return nil end
    return "an integer in the type's range without leading zeros, e.g. 42"
  end
  if ty == "float32" or ty == "float64" then
    local sig = v:gsub("^%-", ""):gsub("%.", ""):gsub("^0+", "")
    if kind == "num" and canon_dec(v) and v:match("[1-9]$") and #sig <= (ty == "float32" and 6 or 15)
      and not v:match("^%-?0%.000") then return nil end
    return "a decimal with a fractional part ending in a non-zero digit, e.g. 1.5"
  end
  local p, sc = ty:match("^decimal%((%d+),(%d+)%)$")
  if p then
    p, sc = tonumber(p), tonumber(sc)
    if kind == "num" and (canon_int(v) or canon_dec(v)) then
      local int, frac = v:gsub("^%-", ""):match("^(%d+)%.?(%d*)$")
      if #frac == sc and #(int:gsub("^0+", "")) + sc <= p then return nil end
    end
    return ("a number with exactly %d decimal%s, e.g. %s"):format(sc, sc == 1 and "" or "s", sc > 0 and ("1." .. ("0"):rep(sc)) or "1")
  end
  if ty == "boolean" then
    if kind == "bool" then return nil end
    return "true or false"
  end
  if ty == "date" then
    local y, m, d = v:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)$")
    if kind == "str" and y and tonumber(y) >= 1000 and valid_date(y, m, d) then return nil end
    return "'YYYY-MM-DD', e.g. '2024-02-29'"
  end
  if ty == "timestamp" then
    local y, m, d, h, mi, se = v:match("^(%d%d%d%d)%-(%d%d)%-(%d%d) (%d%d):(%d%d):(%d%d)$")
    if kind == "str" and y and tonumber(y) >= 1000 and valid_date(y, m, d) and valid_time(h, mi, se) then return nil end
    return "'YYYY-MM-DD HH:MM:SS', e.g. '2024-01-01 12:00:00'"
  end
  if ty == "time" then
    local h, mi, se = v:match("^(%d%d):(%d%d):(%d%d)$")
    if kind == "str" and h and valid_time(h, mi, se) then return nil end
    return "'HH:MM:SS', e.g. '12:00:00'"
  end
  return "no literal: moraine does not render a " .. ty .. " constant as DuckDB does (use ALTER ... SET DEFAULT after adding the column)"
end

--- The verbs' column definition (`tx:create_table`'s column) of a parsed
-- column, its literal default checked: DuckLake writes the constant and the
-- constant cast to the column's type, so a literal is taken only where both
-- read the same.
-- @tparam table c the parsed column (`name`, `not_null`, `default`, `default_kind`, `default_lit`)
-- @tparam string ty its DuckLake type
-- @treturn table `{name, type, not_null, default, default_type}`
-- @raise `{sql_error = true, code = "EINVAL"}` for a literal the cast would change, saying how to write it
function M.column_of_def(c, ty)
  local def = { name = c.name, type = ty, not_null = c.not_null }
  local nested = ty:lower():match("^struct%(") or ty:lower():match("^list%(") or ty:lower():match("^map%(")
  -- DEFAULT NULL: DuckLake writes what no default writes (the verb refuses any default of a nested type)
  if c.default ~= nil and (c.default_lit ~= "null" or nested) then
    if c.default_kind == "literal" and not nested then
      local how = cast_keeps(c.default, c.default_lit, ty)
      if how then
        fail("EINVAL", ("DEFAULT %s of column %s (%s): DuckLake stores the constant and the constant cast to %s "
          .. "(initial_default); moraine writes a literal only where both read the same: write it as %s"):format(
          c.default_lit == "str" and ("'" .. c.default .. "'") or c.default, c.name, ty, ty, how))
      end
    end
    def.default, def.default_type = c.default, c.default_kind
  end
  return def
end

return M
