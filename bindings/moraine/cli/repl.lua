--- moraine.cli.repl — `moraine repl`: a Lua prompt with the catalog open and
-- helpers that read it (show, scan, at, files, spec).
-- @module moraine.cli.repl

local moraine = require "moraine"
local errors = require "moraine.cli.errors"
local util = require "moraine.cli.util"
local output = require "moraine.cli.output"
local catalog = require "moraine.cli.catalog"

local NULL = moraine.null
local concat = table.concat
local istr = util.istr
local sh_ok = util.sh_ok
local print_table = output.print_table
local cell = output.cell
local cols_of = output.cols_of
local is_json_value = output.is_json_value
local open_read = catalog.open_read
local relation_columns = catalog.relation_columns
local redacted = catalog.redacted
local check_snapshot = catalog.check_snapshot
local resolve_table = catalog.resolve_table
local column_names = catalog.column_names
local partition_sql = catalog.partition_sql
local sort_sql = catalog.sort_sql
local partition_state = catalog.partition_state

local M = {}

local function pack(...) return { n = select("#", ...), ... } end

local HELP = {
  repl = {
    synopsis = "moraine [-c DIR] repl",
    summary = "a Lua prompt with the catalog open",
    text = [[
Reads Lua, one line at a time (an unfinished statement continues on the
next line), evaluates it as an expression first and as a statement
otherwise, and prints the results. The catalog is open read-only as `db`,
the module as `moraine`, and these helpers use the default snapshot (the
newest unless set with at; their rows show encryption keys as "<redacted>",
while `db` itself reads the catalog as stored):
  show(rows)        print an array of rows as an aligned table
  scan(name, opts)  rows of a ducklake_* table (opts as db:scan: at, table_id)
  at(S)             set the default snapshot (at() returns it; at(nil) resets)
  files(T)          the data file rows of table T (name or table_id)
  spec(T)           T's partition and sort spec in SQL form, with
                    partition_state and sort_state as in 'moraine tables'
  T                 a table name, "schema.name", "#ID", or a table_id
Exits on end of input or ".exit". On a terminal Ctrl-C cancels the line
being typed, or stops what is running ("error: interrupted!"), and the
prompt comes back. Works with a piped stdin: each error is
printed to stderr as "error: ..." and the rest of the input still runs; the
exit status is then 1 if any line failed (a Lua error, a syntax error, or an
unfinished statement at the end), else 0, as with sqlite3.]],
    options = {},
    example = "moraine repl\n  moraine> at(17) show(files(\"events\"))\n  echo '#scan(\"ducklake_snapshot\")' | moraine repl",
    flags = {},
    nargs = { 0, 0 },
  },
}

-- tostring(v), or, when v's __tostring raises (or returns no string), a
-- description saying so: a value or error object the user made must not
-- end the repl
local function safe_tostring(v)
  local ok, s = pcall(tostring, v)
  if ok and type(s) == "string" then return s end
  return "(a " .. type(v) .. " whose __tostring failed: " .. (type(s) == "string" and s or type(s)) .. ")"
end

local function pretty(v, depth, seen)
  depth, seen = depth or 0, seen or {}
  local t = type(v)
  if v == NULL then return "NULL" end
  if t == "string" then return (string.format("%q", v):gsub("\\\n", "\\n")) end
  if t == "number" or t == "cdata" then return istr(v) end
  if t ~= "table" then return safe_tostring(v) end
  if getmetatable(v) and getmetatable(v).__tostring then return safe_tostring(v) end
  if seen[v] then return "<cycle>" end
  if depth > 3 then return "{...}" end
  seen[v] = true
  local parts, n = {}, #v
  local limit = 50
  for i = 1, math.min(n, limit) do parts[#parts + 1] = pretty(v[i], depth + 1, seen) end
  if n > limit then parts[#parts + 1] = "... (" .. (n - limit) .. " more)" end
  local keys = {}
  for k in pairs(v) do
    if not (type(k) == "number" and k >= 1 and k <= n and k == math.floor(k)) then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b)
    if type(a) == type(b) and (type(a) == "string" or type(a) == "number") then return a < b end
    return type(a) < type(b)
  end)
  for _, k in ipairs(keys) do
    local ks = (type(k) == "string" and k:match("^[%a_][%w_]*$")) and k or ("[" .. pretty(k, depth + 1, seen) .. "]")
    parts[#parts + 1] = ks .. " = " .. pretty(v[k], depth + 1, seen)
  end
  seen[v] = nil
  local one = "{" .. concat(parts, ", ") .. "}"
  if #one <= 120 then return one end
  local pad = string.rep("  ", depth + 1)
  return "{\n" .. pad .. concat(parts, ",\n" .. pad) .. "\n" .. string.rep("  ", depth) .. "}"
end

local function repl(ctx)
  local db = open_read(ctx.dir)
  local default_at = nil
  local colorder = setmetatable({}, { __mode = "k" })
  local env = setmetatable({}, { __index = _G })

  local function cur()
    if default_at ~= nil then return default_at end
    return db:last_snapshot()
  end
  -- a table by name or by id, live at at()'s snapshot (else the error says when it was, as the commands' do)
  local function table_id(T)
    if type(T) == "number" or type(T) == "cdata" then
      local n = tonumber(T)
      if n ~= n or n ~= math.floor(n) or n >= 2 ^ 63 or n < -2 ^ 63 then error("a table_id is an integer, not " .. tostring(T), 3) end
      T = "#" .. string.format("%d", n)
    end
    if type(T) ~= "string" then error("a table is a name or a table_id", 3) end
    local id
    db:read(function(rd) id = resolve_table(rd, T, cur()).id end)
    return id
  end
  env.db, env.moraine = db, moraine
  env.scan = function(name, opts)
    local o = {}
    for k, v in pairs(opts or {}) do o[k] = v end
    if o.at == nil then o.at = cur() end
    local rows = {}
    for i, e in ipairs(db:scan(name, o)) do rows[i] = redacted(db, name, e.row) end
    colorder[rows] = relation_columns(db, name)
    return rows
  end
  env.at = function(...)
    if select("#", ...) == 0 then return cur() end
    local s = ...
    if s == nil then default_at = nil return cur() end
    db:read(function(rd) check_snapshot(rd, s) end)
    default_at = s
    return s
  end
  -- files(T) and spec(T) read at at()'s snapshot: a second argument (a snapshot, as a user may guess) is refused,
  -- not ignored
  local function one_arg(name, ...)
    if select("#", ...) > 0 then
      error(name .. " takes one argument, the table; choose the snapshot with at(S) first", 3)
    end
  end
  env.files = function(T, ...)
    one_arg("files", ...)
    local id = table_id(T)
    local rows = {}
    db:read(function(rd) for f in rd:files(id, cur()) do rows[#rows + 1] = redacted(db, "ducklake_data_file", f) end end)
    colorder[rows] = relation_columns(db, "ducklake_data_file")
    return rows
  end
  env.spec = function(T, ...)
    one_arg("spec", ...)
    local id = table_id(T)
    local res
    db:read(function(rd)
      local S = cur()
      local names = column_names(rd, id, S)
      local p, s = rd:partition_spec(id, S), rd:sort_spec(id, S)
      res = { table_id = id, snapshot = S, partition_id = p and p.partition_id or NULL,
        partition = partition_state(p) == "partitioned" and partition_sql(p, names) or NULL,
        partition_state = partition_state(p), sort_id = s and s.sort_id or NULL,
        sort = s and sort_sql(s) or NULL, sort_state = s and "sorted" or "none" }
    end)
    return res
  end
  env.show = function(rows)
    if type(rows) ~= "table" then error("show expects an array of rows", 2) end
    if rows[1] == nil and next(rows) ~= nil then rows = { rows } end -- one row
    local list = {}
    for i, r in ipairs(rows) do list[i] = (type(r) == "table" and type(r.row) == "table") and r.row or r end
    if #list == 0 then io.stdout:write("(no rows)\n") return end
    local names = colorder[rows]
    if not names then
      names = {}
      local seen = {}
      for _, r in ipairs(list) do
        local ks = {}
        for k in pairs(r) do if not seen[k] and type(k) == "string" then ks[#ks + 1] = k end end
        table.sort(ks)
        for _, k in ipairs(ks) do seen[k] = true; names[#names + 1] = k end
      end
    end
    -- each cell as the aligned table shows it (a Lua table as `pretty`
    -- writes it, not escaped again); numbers to the right
    local cols, shown = cols_of(names), {}
    for i, r in ipairs(list) do
      local x = {}
      for k, v in pairs(r) do
        x[k] = (type(v) == "table" and not is_json_value(v)) and pretty(v) or cell(v)
      end
      shown[i] = x
    end
    for _, c in ipairs(cols) do
      c.text, c.right = true, true
      for _, r in ipairs(list) do
        local v = r[c.key]
        if not (type(v) == "number" or type(v) == "cdata" or v == nil or v == NULL) then c.right = false break end
      end
    end
    print_table(cols, shown, { aligned = true })
    io.stdout:write("(", #list, " row", #list == 1 and "" or "s", ")\n")
  end

  local interactive = sh_ok("test -t 0") or os.getenv("MORAINE_FORCE_TTY") == "1"
  local function compile(src)
    local f = load("return " .. src, "=repl", "t", env)
    if f then return f end
    return load(src, "=repl", "t", env)
  end
  local failed = 0 -- input lines that failed (piped input: the exit status)
  local function report(e)
    failed = failed + 1
    if type(e) == "table" and errors.is_cli(e) then e = e.message
    elseif moraine.is_error(e) then e = e.code .. ": " .. safe_tostring(e.message) end
    io.stderr:write("error: ", safe_tostring(e), "\n")
  end
  if interactive then
    io.stdout:write("moraine ", moraine.version, " repl on ", ctx.dir, " (last snapshot ", istr(db:last_snapshot()),
      "); helpers: show, scan, at, files, spec; .exit to quit\n")
  end
  local buffer = nil
  -- one line read and run; "quit" at end of input or .exit
  local function step()
    if interactive then io.stdout:write(buffer and ">> " or "moraine> ") io.stdout:flush() end
    local line = io.stdin:read("*l")
    if line == nil then return "quit" end
    if buffer == nil and line:match("^%s*%.exit%s*$") then return "quit" end
    local src = buffer and (buffer .. "\n" .. line) or line
    if src:match("^%s*$") then
      buffer = nil
    else
      local f, err = compile(src)
      if not f then
        if err and (err:match("<eof>'?$")) then
          buffer = src
        else
          buffer = nil
          report(err)
        end
      else
        buffer = nil
        local res = pack(pcall(f))
        if res[1] then
          local n = res.n
          if n > 1 then
            local out = {}
            for i = 2, n do out[#out + 1] = pretty(res[i]) end
            io.stdout:write(concat(out, "\t"), "\n")
          end
        else
          report(res[2])
        end
        io.stdout:flush()
      end
    end
  end
  -- on a terminal Ctrl-C cancels the line being typed (as in sqlite3 and psql) or stops what runs
  -- ("error: interrupted!"), every time; piped input stops at the first, as any command does
  if interactive then moraine.core.catch_interrupts() end
  while true do
    local ok, r = pcall(step)
    if not ok then
      if not (interactive and type(r) == "string" and r:match("interrupted!$")) then error(r, 0) end
      io.stdout:write("\n")
      buffer = nil
    elseif r == "quit" then
      break
    end
  end
  if buffer then report("unfinished input at end of file") end
  db:close()
  -- like sqlite3: with piped input, a failed line makes the exit status 1
  if not interactive and failed > 0 then return 1 end
  return 0
end

--- The help of `moraine repl` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = HELP

--- The command: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`,
-- `opts`; ... the positional arguments), returning the exit status (nil: 0).
-- @table run
M.run = { repl = repl }

return M
