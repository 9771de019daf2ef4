--- DuckLake's DDL as input: `db:exec(sql)` and `moraine sql "..."`.
--
-- The text is cut into statements by an LPeg lexer (strings, quoted
-- identifiers, `--` and `/* */` comments); each statement is parsed and run
-- through moraine's verbs (docs/verbs.md). Outside `BEGIN ... COMMIT` every
-- statement is its own transaction (one snapshot, or none for a no-op);
-- between `BEGIN` and `COMMIT` all statements are one transaction and one
-- snapshot. A failing statement raises; inside a block the whole block is
-- abandoned (DuckDB: an error aborts the transaction), and statements before
-- it outside blocks stay committed. DML (INSERT, UPDATE, DELETE, MERGE, COPY,
-- CALL) is refused: moraine writes no data.
--
-- Names follow DuckDB's rules (moraine.ident): looked up without regard to
-- case, stored as written, a second name differing only by case refused.
-- Column types are DuckDB's, nested ones too (STRUCT(name T, ...), T[],
-- MAP(K, V)), written as DuckLake spells them (@{column_type}).
-- `CREATE OR REPLACE TABLE/VIEW` drops the existing entry and creates the new
-- one in the statement's transaction, as DuckLake's HandleCreateConflict does.
-- @module moraine.sql
local lpeg = require "lpeg"
local ident = require "moraine.ident"
local expr = require "moraine.expr"
local types = require "moraine.sql_types"

local M = {}

local NULL = require("moraine.core").null

local P, R, S, C, Cs, Ct, Cp, Cc = lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Cs, lpeg.Ct, lpeg.Cp, lpeg.Cc

local space = S" \t\r\n\f\v" + P"--" * (1 - P"\n")^0 + P"/*" * (1 - P"*/")^0 * P"*/"
local istart = R("az", "AZ") + P"_" + R"\128\255"
local word = C(istart * (istart + R"09" + P"$")^0)
local qword = P'"' * Cs((P'""' / '"' + (1 - P'"'))^0) * P'"'
local str = S"eE"^-1 * P"'" * Cs((P"''" / "'" + (1 - P"'"))^0) * P"'"
local digits = R"09"^1
local num = C((digits * (P"." * R"09"^0)^-1 + P"." * digits) * (S"eE" * S"+-"^-1 * digits)^-1)
local op = C(P"::" + P"||" + P"<=" + P">=" + P"<>" + P"!=" + P"//" + S"(),.;+-*/%=<>[]:")
local token = Ct(Cp() * (
  Cc"qid" * qword + Cc"str" * str + Cc"num" * num + Cc"id" * word + Cc"op" * op))
local lexer = Ct((space^0 * token)^0) * space^0 * Cp()

local function fail(code, msg) error({ sql_error = true, code = code, message = msg }, 0) end

-- row[col], or EINVAL naming the row and the NULL column (the wording of
-- moraine.tablefiles.null_error): a statement cannot work without it
local function need(tbl, row, keys, col, why)
  local v = row[col]
  if v ~= nil and v ~= NULL then return v end
  local parts = {}
  for i, k in ipairs(keys) do
    local x = row[k]
    parts[i] = k .. "=" .. ((x == nil or x == NULL) and "NULL" or (tostring(x):gsub("U?LL$", "")))
  end
  fail("EINVAL", tbl .. " row (" .. table.concat(parts, ", ") .. ") has NULL " .. col .. ": cannot " .. why)
end

--- DuckLake's spelling (ducklake_column.column_type) of a DuckDB type name
-- (@{moraine.sql_types.ducklake_type}).
M.ducklake_type = types.ducklake_type
--- A column type read at a cursor, mapped to DuckLake's spelling
-- (@{moraine.sql_types.column_type}).
M.column_type = types.column_type
local default_of, column_of_def = types.default_of, types.column_of_def

--- Cuts SQL text into tokens.
-- @tparam string sql
-- @treturn {table,...} tokens `{kind = "id"|"qid"|"str"|"num"|"op", v = s, pos = n}` (pos: 1-based byte)
-- @raise `{sql_error = true, code = "EINVAL"}` naming the byte where lexing stopped
-- (an unterminated string or quoted name, a character SQL does not use)
function M.tokens(sql)
  local raw, stop = lexer:match(sql)
  if stop <= #sql then fail("EINVAL", "cannot read the SQL at byte " .. stop .. ": " .. sql:sub(stop, stop + 20)) end
  local out = {}
  for i, t in ipairs(raw) do out[i] = { pos = t[1], kind = t[2], v = t[3] } end
  return out
end

-- ---- statements ------------------------------------------------------------

local DATA = { INSERT = true, UPDATE = true, DELETE = true, MERGE = true, COPY = true, CALL = true, TRUNCATE = true }

local Parser = {}
Parser.__index = Parser

function Parser:peek(k) return self.toks[self.i + (k or 0)] end
function Parser:kw(w) local t = self:peek() if expr.is_kw(t, w) then self.i = self.i + 1 return true end return false end
function Parser:op(o) local t = self:peek() if expr.is_op(t, o) then self.i = self.i + 1 return true end return false end
function Parser:err(what)
  local t = self:peek()
  fail("EINVAL", what .. (t and (" at byte " .. t.pos .. " ('" .. t.v .. "')") or " at the end of the statement"))
end
function Parser:expect_kw(w) if not self:kw(w) then self:err("expected " .. w) end end
function Parser:expect_op(o) if not self:op(o) then self:err("expected '" .. o .. "'") end end
function Parser:name()
  local t = self:peek()
  if not t or (t.kind ~= "id" and t.kind ~= "qid") then self:err("expected a name") end
  self.i = self.i + 1
  return t.v
end
function Parser:qname()
  local parts = { self:name() }
  while self:op(".") do parts[#parts + 1] = self:name() end
  return parts
end
function Parser:done() if self:peek() then self:err("unexpected text") end end
function Parser:expression()
  local c = expr.cursor(self.toks, self.i)
  local e = expr.parse(c)
  self.i = c.i
  return e
end
-- refuses an expression keyword moraine does not read at the cursor (moraine.expr.unread)
function Parser:unread()
  local msg = expr.unread(self:peek())
  if msg then fail("EINVAL", msg) end
end
function Parser:column_type()
  local c = expr.cursor(self.toks, self.i)
  local t = M.column_type(c)
  self.i = c.i
  return t
end

-- A column definition; @path_ok: the name may be a dotted path (ALTER TABLE
-- ADD COLUMN s.f: a STRUCT field), then col.path is the struct's path.
function Parser:column_def(path_ok)
  local col = { name = self:name() }
  if path_ok and expr.is_op(self:peek(), ".") then
    local parts = { col.name }
    while self:op(".") do parts[#parts + 1] = self:name() end
    col.name = table.remove(parts)
    col.path = parts
  end
  col.ctype = self:column_type()
  col.sqltype = col.ctype.sql
  while self:peek() and not expr.is_op(self:peek(), ",") and not expr.is_op(self:peek(), ")") do
    if self:kw("NOT") then self:expect_kw("NULL") col.not_null = true
    elseif self:kw("NULL") then col.not_null = false
    elseif self:kw("DEFAULT") then col.default, col.default_kind, col.default_lit = default_of(self:expression())
    else self:err("unsupported column option") end
  end
  return col
end

-- expression [ASC|DESC] [NULLS FIRST|LAST]
function Parser:sort_key()
  local k = { expr = self:expression() }
  self:unread()
  if self:kw("ASC") then k.sort_direction = "ASC" elseif self:kw("DESC") then k.sort_direction = "DESC" end
  if self:kw("NULLS") then
    if self:kw("FIRST") then k.null_order = "NULLS_FIRST"
    elseif self:kw("LAST") then k.null_order = "NULLS_LAST"
    else self:err("expected FIRST or LAST after NULLS") end
  end
  return k
end

function Parser:sort_keys()
  self:expect_op("(")
  local keys = {}
  repeat keys[#keys + 1] = self:sort_key() until not self:op(",")
  self:expect_op(")")
  return keys
end

function Parser:partition_keys()
  self:expect_op("(")
  local keys = {}
  repeat keys[#keys + 1] = self:expression() self:unread() until not self:op(",")
  self:expect_op(")")
  return keys
end

function Parser:alter_table(st)
  st.table = self:qname()
  if self:kw("ADD") then
    self:kw("COLUMN")
    if self:kw("IF") then self:expect_kw("NOT") self:expect_kw("EXISTS") st.if_not_exists = true end
    st.action, st.column = "add_column", self:column_def(true)
    if st.column.path then st.action = "add_field" end
  elseif self:kw("DROP") then
    self:kw("COLUMN")
    if self:kw("IF") then self:expect_kw("EXISTS") st.if_exists = true end
    st.action, st.name = "drop_column", self:name()
    if expr.is_op(self:peek(), ".") then
      st.action, st.path = "drop_field", { st.name }
      while self:op(".") do st.path[#st.path + 1] = self:name() end
    end
  elseif self:kw("RENAME") then
    if self:kw("TO") then st.action, st.new = "rename_table", self:name()
    else
      self:kw("COLUMN")
      st.action, st.name = "rename_column", self:name()
      if expr.is_op(self:peek(), ".") then
        st.action, st.path = "rename_field", { st.name }
        while self:op(".") do st.path[#st.path + 1] = self:name() end
      end
      self:expect_kw("TO")
      st.new = self:name()
    end
  elseif self:kw("SET") then
    if self:kw("PARTITIONED") then self:expect_kw("BY") st.action, st.keys = "set_partitioning", self:partition_keys()
    elseif self:kw("SORTED") then self:expect_kw("BY") st.action, st.keys = "set_sorting", self:sort_keys()
    else self:err("expected PARTITIONED BY or SORTED BY") end
  elseif self:kw("RESET") then
    if self:kw("PARTITIONED") then self:expect_kw("BY") st.action = "clear_partitioning"
    elseif self:kw("SORTED") then self:expect_kw("BY") st.action = "clear_sorting"
    else self:err("expected PARTITIONED BY or SORTED BY") end
  elseif self:kw("ALTER") then
    self:kw("COLUMN")
    st.name = self:name()
    if self:kw("SET") then
      if self:kw("DEFAULT") then st.action = "set_default" st.default, st.default_kind = default_of(self:expression())
      elseif self:kw("NOT") then self:expect_kw("NULL") st.action = "set_not_null"
      elseif self:kw("DATA") then self:expect_kw("TYPE") st.action, st.ctype = "set_type", self:column_type()
      else self:err("expected DEFAULT, NOT NULL or DATA TYPE") end
    elseif self:kw("DROP") then
      if self:kw("DEFAULT") then st.action = "drop_default"
      elseif self:kw("NOT") then self:expect_kw("NULL") st.action = "drop_not_null"
      else self:err("expected DEFAULT or NOT NULL") end
    elseif self:kw("TYPE") then st.action, st.ctype = "set_type", self:column_type()
    else self:err("expected SET, DROP or TYPE") end
  else
    self:err("unsupported ALTER TABLE form")
  end
end

--- Parses one statement (its tokens, without the `;`).
-- @tparam {table,...} toks tokens from @{tokens}
-- @tparam string text the statement's source text (kept for views)
-- @treturn table `{kind = "begin"|"commit"|"rollback"|"data"|"ddl", verb = s, ...}`
-- @raise `{sql_error = true, code = "EINVAL"}` naming the byte of what did not parse
function M.parse_statement(toks, text)
  local p = setmetatable({ toks = toks, i = 1 }, Parser)
  local first = toks[1]
  local up = first and first.kind == "id" and first.v:upper() or ""
  if DATA[up] then return { kind = "data", verb = up, text = text } end
  local st = { kind = "ddl", text = text }
  if p:kw("BEGIN") or p:kw("START") then
    p:kw("TRANSACTION") p:done() return { kind = "begin" }
  elseif p:kw("COMMIT") or p:kw("END") then
    p:kw("TRANSACTION") p:done() return { kind = "commit" }
  elseif p:kw("ROLLBACK") or p:kw("ABORT") then
    p:kw("TRANSACTION") p:done() return { kind = "rollback" }
  elseif p:kw("CREATE") then
    if p:kw("OR") then p:expect_kw("REPLACE") st.or_replace = true end
    local kind_tok = p:peek()
    if st.or_replace and expr.is_kw(kind_tok, "SCHEMA") then
      -- DuckLake replaces tables and views only (HandleCreateConflict)
      fail("EINVAL", "CREATE OR REPLACE SCHEMA is not supported: moraine replaces tables and views (at byte " .. kind_tok.pos .. ")")
    end
    if st.or_replace and expr.is_kw(p:peek(1), "IF") then
      -- DuckDB's parser (transform_create_table.cpp)
      fail("EINVAL", "Cannot specify both OR REPLACE and IF NOT EXISTS within single create statement (at byte " .. p:peek(1).pos .. ")")
    end
    if p:kw("SCHEMA") then
      if p:kw("IF") then p:expect_kw("NOT") p:expect_kw("EXISTS") st.if_not_exists = true end
      st.verb, st.name = "create_schema", p:name()
    elseif p:kw("TABLE") then
      if p:kw("IF") then p:expect_kw("NOT") p:expect_kw("EXISTS") st.if_not_exists = true end
      st.verb, st.table = "create_table", p:qname()
      p:expect_op("(")
      st.columns = {}
      repeat st.columns[#st.columns + 1] = p:column_def() until not p:op(",")
      p:expect_op(")")
    elseif p:kw("VIEW") then
      if p:kw("IF") then p:expect_kw("NOT") p:expect_kw("EXISTS") st.if_not_exists = true end
      st.verb, st.table = "create_view", p:qname()
      p:expect_kw("AS")
      local t = p:peek()
      if not t then p:err("expected the view's query") end
      st.query = text:sub(t.pos - toks[1].pos + 1)
      return st
    else
      p:err("expected SCHEMA, TABLE or VIEW after CREATE")
    end
  elseif p:kw("DROP") then
    local what = p:kw("SCHEMA") and "schema" or p:kw("TABLE") and "table" or p:kw("VIEW") and "view"
    if not what then p:err("expected SCHEMA, TABLE or VIEW after DROP") end
    if p:kw("IF") then p:expect_kw("EXISTS") st.if_exists = true end
    st.verb = "drop_" .. what
    if what == "schema" then st.name = p:name() else st.table = p:qname() end
    if p:kw("CASCADE") then st.cascade = true else p:kw("RESTRICT") end
  elseif p:kw("ALTER") then
    p:expect_kw("TABLE")
    if p:kw("IF") then p:expect_kw("EXISTS") st.if_exists = true end
    st.verb = "alter_table"
    p:alter_table(st)
  elseif p:kw("COMMENT") then
    p:expect_kw("ON")
    st.verb = "comment"
    if p:kw("TABLE") then st.on = "table" elseif p:kw("COLUMN") then st.on = "column"
    elseif p:kw("VIEW") then st.on = "view" else p:err("expected TABLE, VIEW or COLUMN") end
    st.target = p:qname()
    p:expect_kw("IS")
    local t = p:peek()
    if t and t.kind == "str" then st.comment = t.v p.i = p.i + 1
    elseif p:kw("NULL") then st.comment = nil
    else p:err("expected a string or NULL") end
  else
    p:err("unsupported statement")
  end
  p:done()
  return st
end

--- Parses SQL text into statements.
-- @tparam string sql one or more statements separated by `;`
-- @treturn {table,...} statements as @{parse_statement} gives them
-- @raise `{sql_error = true, code = "EINVAL", message = s}` naming the position
function M.parse(sql)
  local toks = M.tokens(sql)
  local out, cur = {}, {}
  local function flush(stop)
    if #cur > 0 then
      local text = sql:sub(cur[1].pos, stop - 1):gsub("%s+$", "")
      out[#out + 1] = M.parse_statement(cur, text)
    end
    cur = {}
  end
  for _, t in ipairs(toks) do
    if t.kind == "op" and t.v == ";" then flush(t.pos) else cur[#cur + 1] = t end
  end
  flush(#sql + 1)
  return out
end

--- A view's query as DuckDB's `SelectStatement::ToString()` writes it, which
-- is what DuckLake stores in ducklake_view.sql (DuckLakeSchemaEntry::CreateView).
-- moraine re-renders the form `SELECT * FROM [schema.]name` (names through
-- DuckDB's quoting rule: `FROM "score"` is stored `FROM score`, corpus
-- seed_0011); any other query is kept as written.
-- @tparam string q the query text after AS
-- @treturn string
function M.render_query(q)
  local ok, toks = pcall(M.tokens, q)
  if not ok then return q end
  if #toks >= 4 and expr.is_kw(toks[1], "SELECT") and expr.is_op(toks[2], "*") and expr.is_kw(toks[3], "FROM") then
    local parts, i = {}, 4
    while toks[i] and (toks[i].kind == "id" or toks[i].kind == "qid") do
      parts[#parts + 1] = ident.render(toks[i].v)
      if expr.is_op(toks[i + 1], ".") then i = i + 2 else i = i + 1 break end
    end
    if #parts > 0 and (toks[i] == nil or (expr.is_op(toks[i], ";") and toks[i + 1] == nil)) then
      return "SELECT * FROM " .. table.concat(parts, ".")
    end
  end
  return q
end

-- ---- the model: names as of the transaction's base plus its verbs -------------

local function load_model(db)
  local m = { schemas = {} }
  db:read(function(rd)
    local byid = {}
    for row in rd:scan("ducklake_schema") do
      local s = { id = row.schema_id, name = row.schema_name, tables = {}, views = {} }
      byid[row.schema_id] = s
      m.schemas[#m.schemas + 1] = s
    end
    local stats, nulls = {}, {}
    if db:relation("ducklake_table_stats") then
      for row in rd:scan("ducklake_table_stats") do stats[row.table_id] = true end
    end
    if db:relation("ducklake_table_column_stats") then
      for row in rd:scan("ducklake_table_column_stats") do
        if row.contains_null == true then nulls[row.table_id .. "@" .. row.column_id] = true end
      end
    end
    for row in rd:scan("ducklake_table") do
      local s = byid[row.schema_id]
      if s then
        local t = { id = row.table_id, name = row.table_name, columns = {} }
        local cols = {}
        for c in rd:scan("ducklake_column", { table_id = row.table_id }) do
          if c.parent_column == nil or c.parent_column == NULL then
            local CK = { "table_id", "column_id", "begin_snapshot" }
            need("ducklake_column", c, CK, "column_id", "tell the table's columns apart")
            need("ducklake_column", c, CK, "column_order", "order the table's columns")
            cols[#cols + 1] = c
          end
        end
        table.sort(cols, function(a, b) return a.column_order < b.column_order end)
        for _, c in ipairs(cols) do
          t.columns[#t.columns + 1] = { id = c.column_id, name = c.column_name, type = c.column_type,
                                        not_null = c.nulls_allowed == false,
                                        contains_null = nulls[row.table_id .. "@" .. c.column_id] }
        end
        local ss = rd:sort_spec(row.table_id)
        if ss then
          t.sort = {}
          for _, e in ipairs(ss.expressions) do
            local ok, tree = pcall(function()
              return expr.parse(expr.cursor(M.tokens(e.expression)))
            end)
            t.sort[#t.sort + 1] = { expr = ok and tree or nil, text = e.expression,
                                    sort_direction = e.sort_direction, null_order = e.null_order }
          end
        end
        t.has_stats = stats[row.table_id] == true
        local ps = rd:partition_spec(row.table_id)
        if ps then
          t.partition = {}
          for _, pc in ipairs(ps.columns) do t.partition[#t.partition + 1] = pc.column_id end
        end
        s.tables[#s.tables + 1] = t
      end
    end
    if rd.scan then
      local ok = pcall(function()
        for row in rd:scan("ducklake_view") do
          local s = byid[row.schema_id]
          if s then s.views[#s.views + 1] = { id = row.view_id, name = row.view_name } end
        end
      end)
      if not ok then m.no_views = true end
    end
  end)
  return m
end

local function find(list, name)
  for i, x in ipairs(list) do if ident.same(x.name, name) then return x, i end end
end

local function show(parts)
  local out = {}
  for i, p in ipairs(parts) do out[i] = ident.render(p) end
  return table.concat(out, ".")
end

local function schema_of(m, name)
  local s = find(m.schemas, name)
  if not s then fail("ENOTFOUND", "Schema with name " .. name .. " does not exist!") end
  return s
end

-- the table a qualified name gives: {schema, table} or raises ENOTFOUND
local function table_of(m, parts)
  if #parts > 2 then fail("EINVAL", "too many dots in the table name " .. show(parts)) end
  local sname, tname = "main", parts[#parts]
  if #parts == 2 then sname = parts[1] end
  local s = find(m.schemas, sname)
  local t = s and find(s.tables, tname)
  if not t then fail("ENOTFOUND", "Table with name " .. tname .. " does not exist!") end
  return s, t
end

local function ref(s, t) return { schema = s.name, table = t.name } end

-- The code of an error a verb raised (a moraine error), or nil.
local function code_of(e)
  local ok, c = pcall(function() return e.code end)
  return ok and c or nil
end

local function column_of(t, name, what)
  local c, i = find(t.columns, name)
  if not c then
    fail("ENOTFOUND", what or ('Table "' .. t.name .. '" does not have a column with name "' .. name .. '"'))
  end
  return c, i
end

local QUALIFIED = "Unexpected qualified column reference - only unqualified columns are supported"

--- The partition key a parsed `SET PARTITIONED BY` expression gives, as
-- DuckLake's GetPartitionField (ducklake_table_entry.cpp) reads it: a column
-- is its identity; `fn(column)` is transform `fn`; `fn(p, ..., column)` is
-- transform `fn(p, ...)`, the parameters rendered as DuckDB does, except a
-- bucket count that is an integer constant, which is written as DuckLake
-- writes the count it read (`bucket(04, c)` is `bucket(4)`, `bucket(-03, c)`
-- `bucket(-3)`). Which transforms exist, the bucket count's range and the
-- column's existence are the verb's to check (moraine_tx_set_partitioning,
-- engine/verbs_spec.c), so the SQL path, `tx:set_partitioning` and the C API
-- share one rule.
-- @tparam table e an expression tree from moraine.expr
-- @treturn table `{column = s, transform = s}`
-- @raise `{sql_error = true, code = "EINVAL"}`: a qualified column (DuckLake's
--   words), an expression that is neither a column nor a function call, a
--   call whose last argument is not a column
function M.partition_key(e)
  if e.k == "col" then
    if #e.parts ~= 1 then fail("EINVAL", QUALIFIED) end
    return { column = e.parts[1], transform = "identity" }
  end
  if e.k ~= "func" then
    fail("EINVAL", "Unsupported partition key " .. expr.render(e) .. " - only identity columns and year/month/day/hour/bucket are supported")
  end
  local last = e.args[#e.args]
  if not last or last.k ~= "col" then
    fail("EINVAL", "Expected " .. e.name .. "(column) or " .. e.name .. "(N, column), but got " .. expr.render(e))
  end
  if #last.parts ~= 1 then fail("EINVAL", QUALIFIED) end
  local params = {}
  for i = 1, #e.args - 1 do
    local a = e.args[i]
    local sign, ds
    if a.k == "const" and a.text then sign, ds = a.text:match("^(%-?)(%d+)$") end
    if e.name == "bucket" and sign then
      -- DuckLake casts the constant to BIGINT and writes to_string of it
      ds = ds:gsub("^0+", "")
      if ds == "" then sign, ds = "", "0" end
      params[i] = sign .. ds
    else
      params[i] = expr.render(a)
    end
  end
  local transform = #params == 0 and e.name or (e.name .. "(" .. table.concat(params, ", ") .. ")")
  return { column = last.parts[1], transform = transform }
end

--- The sort key a parsed `SET SORTED BY` key gives: the expression as
-- DuckDB's ParsedExpression::ToString() renders it (what DuckLake stores)
-- and the columns it references, for the verb to look up
-- (moraine_sort_key.columns; DuckLake's ValidateSortExpressionColumns).
-- @tparam table e an expression tree from moraine.expr
-- @tparam ?string dir "ASC" / "DESC" or nil
-- @tparam ?string nulls "NULLS_FIRST" / "NULLS_LAST" or nil
-- @treturn table `{expression = s, sort_direction = dir, null_order = nulls, columns = {s, ...}}`
-- @raise `{sql_error = true, code = "EINVAL"}` for a qualified column reference (DuckLake's words)
function M.sort_key(e, dir, nulls)
  local cols = {}
  expr.each_column(e, function(node)
    if #node.parts ~= 1 then fail("EINVAL", QUALIFIED) end
    cols[#cols + 1] = node.parts[1]
  end)
  return { expression = expr.render(e), sort_direction = dir, null_order = nulls, columns = cols }
end

-- The tokens of @text read by @fn(parser) to the end.
local function parse_text(text, fn)
  local p = setmetatable({ toks = M.tokens(text), i = 1 }, Parser)
  if not p:peek() then fail("EINVAL", "empty key") end
  local r = fn(p)
  p:done()
  return r
end

--- One partition key in SQL form (`"bucket(4, id)"`), read as
-- `SET PARTITIONED BY (...)` reads it: tokens, moraine.expr's parse, then
-- @{partition_key}.
-- @tparam string text
-- @treturn table `{column = s, transform = s}`
-- @raise `{sql_error = true, code = "EINVAL"}` naming the byte where it stopped
function M.parse_partition_key(text)
  return parse_text(text, function(p) return M.partition_key(p:expression()) end)
end

--- One sort key in SQL form (`"amount DESC NULLS LAST"`), read as
-- `SET SORTED BY (...)` reads one key, then @{sort_key}. A key that leaves out
-- the direction or null order leaves it nil.
-- @tparam string text
-- @treturn table as @{sort_key}
-- @raise `{sql_error = true, code = "EINVAL"}` naming the byte where it stopped
function M.parse_sort_key(text)
  return parse_text(text, function(p)
    local k = p:sort_key()
    return M.sort_key(k.expr, k.sort_direction, k.null_order)
  end)
end

--- A sort expression in SQL form (the `expression` of a table key), read as
-- one expression and given back as @{sort_key} gives it.
-- @tparam string text
-- @treturn table `{expression = s, columns = {s, ...}}`
-- @raise `{sql_error = true, code = "EINVAL"}` naming the byte where it stopped
function M.parse_sort_expression(text)
  return parse_text(text, function(p) return M.sort_key(p:expression()) end)
end

local function call(tx, verb, ...)
  local f = tx[verb]
  if not f then fail("EINVAL", "moraine has no verb for " .. verb .. " yet (DuckLake accepts it)") end
  return f(tx, ...)
end

-- The DuckLake type text (moraine_column_def.type) of column definition @c.
local function dl_type(c)
  if not c.ctype.dl then fail("EINVAL", "moraine does not map the type " .. c.ctype.unmapped .. " to DuckLake's") end
  return c.ctype.dl
end

-- A CREATE TABLE / CREATE VIEW of @name in schema @s where a table or view of
-- that name may exist, as DuckLake's DuckLakeSchemaEntry::HandleCreateConflict
-- decides (tables and views share one name space): false when IF NOT EXISTS
-- makes the statement a no-op; OR REPLACE drops the existing entry of the same
-- kind first, in this transaction, as DROP TABLE / DROP VIEW does
-- (DuckLakeSchemaEntry::DropEntry), so the rows are those of DROP and CREATE
-- in one transaction. @kind: "Table" or "View" (DuckDB's CatalogTypeToString).
local function create_conflict(tx, s, name, kind, st)
  local t, ti = find(s.tables, name)
  local w, wi = find(s.views, name)
  if not t and not w then return true end
  local have = t and "Table" or "View"
  if st.if_not_exists then return false end
  if not st.or_replace then fail("EEXIST", have .. ' with name "' .. name .. '" already exists!') end
  if have ~= kind then
    fail("EEXIST", "Existing object " .. name .. " is of type " .. have .. ", trying to replace with type " .. kind)
  end
  if t then
    tx:drop_table(ref(s, t))
    table.remove(s.tables, ti)
  else
    tx:drop_view({ schema = s.name, table = w.name })
    table.remove(s.views, wi)
  end
  return true
end

local function run(m, tx, st, on_data)
  local v = st.verb
  if st.kind == "data" then
    if on_data then return on_data(tx, st) end
    fail("EINVAL", "moraine writes no data: " .. st.verb .. " is DuckLake's to run (" .. st.text .. ")")
  end
  if v == "create_schema" then
    if find(m.schemas, st.name) then
      if st.if_not_exists then return end
      fail("EEXIST", 'Schema with name "' .. st.name .. '" already exists!')
    end
    tx:create_schema(st.name)
    m.schemas[#m.schemas + 1] = { name = st.name, tables = {}, views = {} }
  elseif v == "drop_schema" then
    local s = find(m.schemas, st.name)
    if not s then if st.if_exists then return end schema_of(m, st.name) end
    -- DuckLake (DuckLakeSchemaEntry::TryDropSchema): refused while the schema
    -- has tables or views, unless CASCADE, which drops them (the verb checks)
    call(tx, "drop_schema", s.name, st.cascade or false)
    local _, i = find(m.schemas, st.name)
    table.remove(m.schemas, i)
  elseif v == "create_table" then
    local parts = st.table
    local s = schema_of(m, #parts == 2 and parts[1] or "main")
    if not create_conflict(tx, s, parts[#parts], "Table", st) then return end
    local cols, t = {}, { name = parts[#parts], columns = {} }
    for i, c in ipairs(st.columns) do
      if find(t.columns, c.name) then fail("EEXIST", 'Column with name "' .. c.name .. '" already exists!') end
      local ty = dl_type(c)
      cols[i] = column_of_def(c, ty)
      t.columns[i] = { name = c.name, type = c.ctype.top, not_null = c.not_null }
    end
    tx:create_table(ref(s, t), cols)
    s.tables[#s.tables + 1] = t
  elseif v == "drop_table" then
    local sname = #st.table == 2 and st.table[1] or "main"
    local s = find(m.schemas, sname)
    local t, ti = nil, nil
    if s then t, ti = find(s.tables, st.table[#st.table]) end
    -- DuckLake (DuckLakeSchemaEntry::DropEntry): a view of that name is refused, IF EXISTS or not
    if not t and s and find(s.views, st.table[#st.table]) then
      fail("EINVAL", "Existing object " .. st.table[#st.table] .. " is of type View, trying to drop type Table")
    end
    if not t then if st.if_exists then return end table_of(m, st.table) end
    tx:drop_table(ref(s, t))
    table.remove(s.tables, ti)
  elseif v == "create_view" then
    local parts = st.table
    local s = schema_of(m, #parts == 2 and parts[1] or "main")
    if not create_conflict(tx, s, parts[#parts], "View", st) then return end
    tx:create_view({ schema = s.name, table = parts[#parts] }, M.render_query(st.query))
    s.views[#s.views + 1] = { name = parts[#parts] }
  elseif v == "drop_view" then
    local s = find(m.schemas, #st.table == 2 and st.table[1] or "main")
    local w, wi = nil, nil
    if s then w, wi = find(s.views, st.table[#st.table]) end
    if not w and s and find(s.tables, st.table[#st.table]) then
      fail("EINVAL", "Existing object " .. st.table[#st.table] .. " is of type Table, trying to drop type View")
    end
    if not w then
      if st.if_exists then return end
      fail("ENOTFOUND", "View with name " .. st.table[#st.table] .. " does not exist!")
    end
    tx:drop_view({ schema = s.name, table = w.name })
    table.remove(s.views, wi)
  elseif v == "comment" then
    local parts, col = st.target, nil
    if st.on == "column" then
      if #parts < 2 then fail("EINVAL", "COMMENT ON COLUMN needs table.column") end
      col = parts[#parts]
      parts = { (table.unpack or unpack)(parts, 1, #parts - 1) }
    end
    if st.on == "view" then
      local s = schema_of(m, #parts == 2 and parts[1] or "main")
      local w = find(s.views, parts[#parts])
      if not w then fail("ENOTFOUND", "View with name " .. parts[#parts] .. " does not exist!") end
      call(tx, "set_view_comment", { schema = s.name, table = w.name }, st.comment)
      return
    end
    local s, t = table_of(m, parts)
    if col then col = column_of(t, col).name end
    tx:set_comment(ref(s, t), col, st.comment)
  elseif v == "alter_table" then
    local sname = #st.table == 2 and st.table[1] or "main"
    local s0 = find(m.schemas, sname)
    if st.if_exists and not (s0 and find(s0.tables, st.table[#st.table])) then return end
    local s, t = table_of(m, st.table)
    local a = st.action
    local was_touched = t.touched
    t.touched = true
    t.touched_before = was_touched
    if a == "add_column" then
      local c = st.column
      if find(t.columns, c.name) then
        if st.if_not_exists then return end
        fail("EEXIST", "Column with name " .. c.name .. " already exists!")
      end
      if c.default_kind == "expression" then
        fail("EINVAL", "We cannot add a column with a non-literal default value. Add the column and then "
          .. 'explicitly set the default for new values using "ALTER ... SET DEFAULT"')
      end
      local ty = dl_type(c)
      tx:add_column(ref(s, t), column_of_def(c, ty))
      t.columns[#t.columns + 1] = { name = c.name, type = c.ctype.top, not_null = c.not_null }
    elseif a == "add_field" or a == "drop_field" or a == "rename_field" then
      -- STRUCT fields (DuckLake: DuckLakeTableEntry::AlterTable(AddFieldInfo /
      -- RemoveFieldInfo / RenameFieldInfo)); the verbs check the path and
      -- refuse with DuckLake's words
      local ok, e
      if a == "add_field" then
        local c = st.column
        if c.default_kind == "expression" then
          fail("EINVAL", "moraine adds a struct field with a literal default only (DuckLake keeps an expression "
            .. "as the field's default_value and no initial_default)")
        end
        local ty = dl_type(c)
        if c.not_null then
          fail("EINVAL", "moraine adds no NOT NULL struct field (DuckLake writes nulls_allowed false for every new field)")
        end
        ok, e = pcall(tx.add_field, tx, ref(s, t), c.path, column_of_def(c, ty))
        -- DuckLake: ADD COLUMN IF NOT EXISTS of a field that exists does nothing (if_field_not_exists)
        if not ok and st.if_not_exists and code_of(e) == "EEXIST" then return end
      elseif a == "drop_field" then
        -- DuckLake: DROP COLUMN IF EXISTS of a field that does not exist (or
        -- of a column that does not) does nothing (if_column_exists)
        ok, e = pcall(tx.drop_field, tx, ref(s, t), st.path)
        if not ok and st.if_exists and code_of(e) == "ENOTFOUND" then return end
      else
        ok, e = pcall(tx.rename_field, tx, ref(s, t), st.path, st.new)
      end
      if not ok then error(e, 0) end
    elseif a == "drop_column" then
      local c, i = find(t.columns, st.name)
      if not c then
        if st.if_exists then return end
        column_of(t, st.name)
      end
      -- DuckLake: refused when the live sort spec names the column, names
      -- compared case-insensitively (DuckLakeTableEntry's drop check)
      for _, k in ipairs(t.sort or {}) do
        local uses = false
        if k.expr then
          expr.each_column(k.expr, function(node) if ident.same(node.parts[#node.parts], c.name) then uses = true end end)
        end
        if uses then
          fail("EINVAL", 'Cannot drop column "' .. c.name .. '" - the table is sorted by this column. Reset or change '
            .. "the sort order on this table in order to drop this column")
        end
      end
      tx:drop_column(ref(s, t), c.name)
      table.remove(t.columns, i)
    elseif a == "rename_column" then
      local c = column_of(t, st.name, "Failed to rename column - column " .. st.name .. " does not exist")
      local other = find(t.columns, st.new)
      if other and other ~= c then fail("EEXIST", "Column with name " .. st.new .. " already exists!") end
      local keys
      if t.sort then
        local touched = false
        keys = {}
        for i, k in ipairs(t.sort) do
          if k.expr then
            expr.each_column(k.expr, function(node)
              if ident.same(node.parts[#node.parts], c.name) then node.parts[#node.parts] = st.new touched = true end
            end)
            k.text = expr.render(k.expr)
          end
          keys[i] = { expression = k.text, sort_direction = k.sort_direction, null_order = k.null_order }
        end
        if not touched then keys = nil end
      end
      tx:rename_column(ref(s, t), c.name, st.new, keys)
      c.name = st.new
    elseif a == "rename_table" then
      local other = find(s.tables, st.new)
      if other and other ~= t then fail("EEXIST", 'Table with name "' .. st.new .. '" already exists!') end
      -- DuckLake: tables and views share one set of names (DuckLakeSchemaEntry::Alter, RENAME_TABLE)
      if find(s.views, st.new) then
        fail("EEXIST", "Cannot rename table " .. t.name .. " to " .. st.new .. ", since " .. st.new .. " already exists.")
      end
      tx:rename_table(ref(s, t), st.new)
      t.name = st.new
    elseif a == "set_partitioning" then
      local keys = {}
      for i, e in ipairs(st.keys) do keys[i] = M.partition_key(e) end
      tx:set_partitioning(ref(s, t), keys)
      t.partition = keys
    elseif a == "clear_partitioning" then
      -- DuckLake: RESET PARTITIONED BY on a table without partition keys
      -- commits nothing (corpus seed_0002 step 13)
      if not t.partition or #t.partition == 0 then return end
      tx:clear_partitioning(ref(s, t))
      t.partition = {}
    elseif a == "set_sorting" then
      local keys = {}
      for i, k in ipairs(st.keys) do
        -- the verb's binding reads the expression again for its column references (moraine.lua)
        local sk = M.sort_key(k.expr, k.sort_direction, k.null_order)
        keys[i] = { expression = sk.expression, sort_direction = sk.sort_direction, null_order = sk.null_order }
      end
      tx:set_sorting(ref(s, t), keys)
      t.sort = {}
      for i, k in ipairs(st.keys) do
        t.sort[i] = { expr = k.expr, text = keys[i].expression, sort_direction = k.sort_direction or "ASC",
                      null_order = k.null_order or "NULLS_LAST" }
      end
    elseif a == "clear_sorting" then
      tx:clear_sorting(ref(s, t))
      t.sort = nil
    else
      local c = column_of(t, st.name, 'Failed to alter column - column "' .. st.name .. '" does not exist')
      local change
      if a == "set_default" then
        -- a non-constant default for a column DuckLake does not count as
        -- created with its table is refused by the alter_column verb
        -- (engine/verbs_column.c, DuckLake's IsColumnCreatedWithTable)
        change = { default = st.default, default_type = st.default_kind }
      elseif a == "drop_default" then change = { drop_default = true }
      elseif a == "set_not_null" then
        -- DuckLake checks the table's stats for NULLs; it refuses when it has
        -- none or the transaction changed the table before
        if not t.has_stats or t.touched_before then
          fail("EINVAL", "Cannot SET NOT NULL on table " .. ident.render(t.name)
            .. " - the table has transaction-local changes or no stats are available")
        end
        if c.contains_null then
          fail("EINVAL", "Cannot SET NOT NULL on column " .. ident.render(c.name) .. " - the column has NULL values")
        end
        change = { not_null = true }
        c.not_null = true
      elseif a == "drop_not_null" then
        if not c.not_null then
          fail("EINVAL", "Cannot DROP NULL on column " .. ident.render(c.name) .. " - it has no NOT NULL constraint defined")
        end
        change = { not_null = false }
        c.not_null = false
      else
        local ty = dl_type(st)
        change = { type = ty }
        c.type = st.ctype.top
      end
      tx:alter_column(ref(s, t), c.name, change)
    end
  else
    fail("EINVAL", "unsupported statement")
  end
end

local function raise(e)
  if type(e) == "table" and e.sql_error then require("moraine.core").raise(e.code, e.message) end
  error(e, 0)
end

--- Runs DuckLake DDL statements through the verbs (`db:exec(sql)`).
-- Outside BEGIN ... COMMIT each statement is one transaction; a block is one.
-- @param db an open catalog (moraine.open), initialised (db:init)
-- @tparam string sql the statements, separated by `;`
-- @tparam[opt] table opts `author`, `message`, `extra_info` (passed to
--   `db:transaction`), and `data`: a function `data(tx, statement)` called, in
--   the statement's transaction, for each INSERT/UPDATE/DELETE/MERGE/COPY/CALL
--   instead of refusing it (`statement.verb` is the statement's first word,
--   `statement.text` its text); it registers with the data verbs
--   (`tx:add_data_files`, ...) the files something else wrote
-- @treturn ?integer the newest snapshot any statement committed, or nil when none did
-- @raise EINVAL (a statement that does not parse, naming the byte; DML:
--   "moraine writes no data"; BEGIN inside a block, COMMIT outside one, a
--   block left open at the end), ENOTFOUND / EEXIST (names, DuckDB's rules:
--   case-insensitive; EEXIST also for OR REPLACE of a table by a view or the
--   reverse: "Existing object v is of type View, trying to replace with type
--   Table"), EINVAL (a statement moraine has no verb for yet; DROP TABLE of a
--   view or DROP VIEW of a table: "Existing object ... trying to drop type ..."),
--   and every error of the verbs it runs (docs/verbs.md); EINVAL naming the
--   row ("ducklake_column row (table_id=1, column_id=NULL, begin_snapshot=1)
--   has NULL column_id: cannot ...") when a top-level column of a table has a
--   NULL column_id or column_order (the statements need them). A NULL schema,
--   table or column name matches no name in a statement. Statements
--   committed before the failing one stay committed.
function M.exec(db, sql, opts)
  if type(sql) ~= "string" then error("bad argument #1 to 'exec' (string expected, got " .. type(sql) .. ")", 2) end
  local ok, stmts = pcall(M.parse, sql)
  if not ok then raise(stmts) end
  local last
  local i = 1
  local on_data, txopts = nil, opts
  if opts ~= nil then
    if type(opts) ~= "table" then error("bad argument #2 to 'exec' (table expected, got " .. type(opts) .. ")", 2) end
    on_data = opts.data
    if on_data ~= nil and type(on_data) ~= "function" then
      error("bad argument #2 to 'exec' (data must be a function, got " .. type(on_data) .. ")", 2)
    end
    txopts = {}
    for k, v in pairs(opts) do if k ~= "data" then txopts[k] = v end end
  end
  local function unit(list)
    local okm, m = pcall(load_model, db)
    if not okm then raise(m) end
    local okr, snap = pcall(db.transaction, db, function(tx)
      for _, st in ipairs(list) do run(m, tx, st, on_data) end
    end, txopts)
    if not okr then
      -- say what stays: the statements before this one are committed
      if last ~= nil and type(snap) == "table" and snap.code and snap.message then
        require("moraine.core").raise(snap.code, snap.message .. " (the statements before this one were committed, up to snapshot "
          .. tostring(last) .. ")")
      end
      raise(snap)
    end
    if snap then last = snap end
  end
  while i <= #stmts do
    local st = stmts[i]
    if st.kind == "begin" then
      local block = {}
      i = i + 1
      while true do
        local b = stmts[i]
        if not b then raise({ sql_error = true, code = "EINVAL", message = "BEGIN without COMMIT: the block was not committed" }) end
        if b.kind == "begin" then raise({ sql_error = true, code = "EINVAL", message = "cannot start a transaction within a transaction" }) end
        if b.kind == "rollback" then block = nil break end
        if b.kind == "commit" then break end
        block[#block + 1] = b
        i = i + 1
      end
      if block then unit(block) end
    elseif st.kind == "commit" then
      raise({ sql_error = true, code = "EINVAL", message = "cannot commit - no transaction is active" })
    elseif st.kind == "rollback" then
      raise({ sql_error = true, code = "EINVAL", message = "cannot rollback - no transaction is active" })
    else
      unit({ st })
    end
    i = i + 1
  end
  return last
end

return M
