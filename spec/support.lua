--- Helpers shared by the busted specs: temporary catalogs, fixture access,
-- the SQL temporal filter written out in plain Lua, and row comparison.
local moraine = require "moraine"
local pl_dir = require "pl.dir"
local pl_path = require "pl.path"
local tablex = require "pl.tablex"
local luassert = require "luassert" -- busted's assert, for the helpers that assert

local support = {}

--- Directory of the real DuckLake fixtures, copied into the repository
-- (tests/fixtures/ducklake; the suite runs from the repository root).
support.FIXTURES = os.getenv("MORAINE_FIXTURES") or "tests/fixtures/ducklake"
support.SCENARIOS = { "s1_evolution", "s2_multi_table", "s3_edge_values" }

--- Runs shell command @cmd (a string the caller quoted, see support.q) with
-- os.execute. Returns true when it exited with status 0, false otherwise, on
-- both Lua 5.4 (true/nil, "exit", code) and LuaJIT (a status number).
function support.sh(cmd)
  local ok = os.execute(cmd)
  return ok == true or ok == 0
end

--- @s (any value, through tostring) as one single-quoted shell word: every '
-- inside becomes '\'' so a path with quotes or spaces stays one argument.
function support.q(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"
local ROOT = os.getenv("PWD") or "."

-- the tables every DuckLake catalog of @version has (`moraine.core.required_tables`) that
-- @present(name) does not, each with DuckLake's columns and their SQLite types
-- (`moraine.sqlite.columns` / `types`): what a hand-built catalog adds, empty, to
-- be whole (imports refuse a catalog without one of them)
local function rest_of_catalog(version, present)
  local sqlite = require "moraine.sqlite"
  local out = {}
  for _, name in ipairs(moraine.core.required_tables(version)) do
    if not present(name) then out[#out + 1] = { name = name, columns = sqlite.columns[name], types = sqlite.types[name] } end
  end
  return out
end

--- `CREATE TABLE` statements (SQLite) for the tables of DuckLake @version
-- that SQL script @sql does not create, empty (see rest_of_catalog).
function support.rest_of_catalog_sql(sql, version)
  local out = {}
  for _, t in ipairs(rest_of_catalog(version, function(name) return sql:find("CREATE TABLE " .. name .. "%s*%(") end)) do
    local cols = {}
    for i, c in ipairs(t.columns) do cols[i] = c .. " " .. t.types[c] end
    out[#out + 1] = "CREATE TABLE " .. t.name .. "(" .. table.concat(cols, ", ") .. ");\n"
  end
  return table.concat(out)
end

--- @tables (`db:import_rows`'s argument) with the tables of DuckLake
-- @version it lacks appended, empty (see rest_of_catalog). Returns @tables.
function support.with_rest_of_catalog(tables, version)
  local have = {}
  for _, t in ipairs(tables) do have[t.name] = true end
  for _, t in ipairs(rest_of_catalog(version, function(name) return have[name] end)) do
    tables[#tables + 1] = { name = t.name, columns = t.columns, rows = {} }
  end
  return tables
end

--- The rows of relation @name a scan gives (`db:scan(name, opts)`), without
-- their positions: an array of column name -> value tables.
function support.rows_of(db, name, opts)
  local out = {}
  for i, e in ipairs(db:scan(name, opts)) do out[i] = e.row end
  return out
end

--- The shell command that runs `moraine ARGS` (a list of strings, each quoted
-- here) through scripts/moraine-dev with this spec's runtime (the specs run
-- from the repository root), with no catalog or terminal taken from the
-- environment; one simple command, so `exec` may prefix it.
function support.moraine_cmd(args)
  local qargs = {}
  for i, a in ipairs(args) do qargs[i] = support.q(a) end
  return "env MORAINE_CATALOG= MORAINE_FORCE_TTY= MORAINE_LUA=" .. RUNTIME .. " sh "
    .. support.q(ROOT .. "/scripts/moraine-dev") .. " " .. table.concat(qargs, " ")
end

--- Runs `moraine ARGS` to its end, with @stdin (a string; default empty) as
-- its standard input. Returns {out, err, code, show}: stdout and stderr as
-- text, the exit status, and a summary for assertion messages.
function support.moraine(args, stdin)
  local dir = support.tmpdir("run")
  support.mkdir(dir)
  support.write(dir .. "/stdin", stdin or "")
  os.execute(support.moraine_cmd(args) .. " >" .. support.q(dir .. "/out") .. " 2>" .. support.q(dir .. "/err")
    .. " <" .. support.q(dir .. "/stdin") .. "; echo $? >" .. support.q(dir .. "/rc"))
  local r = { out = support.read(dir .. "/out"), err = support.read(dir .. "/err"),
    code = tonumber((support.read(dir .. "/rc"):match("%d+"))) }
  r.show = "exit " .. tostring(r.code) .. "\n--- stdout:\n" .. r.out:sub(1, 3000) .. "\n--- stderr:\n" .. r.err
  return r
end

--- Starts `moraine ARGS` in the background. Returns {pid, dir, wait}: its
-- process id (once it runs), the folder holding its out, err and (when it has
-- exited) rc files, and wait(), which returns once it has exited.
function support.spawn_moraine(args)
  local dir = support.tmpdir("bg")
  support.mkdir(dir)
  local q = support.q
  support.write(dir .. "/run.sh", "echo $$ > " .. q(dir .. "/pid") .. "\nexec " .. support.moraine_cmd(args) .. "\n")
  os.execute("(sh " .. q(dir .. "/run.sh") .. " >" .. q(dir .. "/out") .. " 2>" .. q(dir .. "/err")
    .. " </dev/null; echo $? >" .. q(dir .. "/rc.tmp") .. "; mv " .. q(dir .. "/rc.tmp") .. " " .. q(dir .. "/rc") .. ") &")
  local pid
  while not pid do
    local f = io.open(dir .. "/pid")
    if f then
      pid = f:read("*l")
      f:close()
      if pid == "" then pid = nil end
    end
    if not pid then os.execute("sleep 0.01") end
  end
  return { pid = pid, dir = dir, wait = function()
    while not io.open(dir .. "/rc") do os.execute("sleep 0.02") end
  end }
end

--- Serves catalog @catalog through examples/openresty/serve.sh (a real nginx
-- on a random loopback port, build @build) and waits until it answers
-- /health. Returns the nginx prefix directory and the port; fails the test
-- when nginx does not start.
function support.serve_catalog(catalog, build)
  local port = 20000 + math.random(0, 9999)
  local p = io.popen(("MORAINE_BUILD=%s sh examples/openresty/serve.sh %s %d 2>&1"):format(build, catalog, port))
  local out = p:read("a")
  p:close()
  local prefix = out:match("prefix ([^%)]+)%)")
  luassert(prefix, "nginx did not start: " .. out)
  for _ = 1, 50 do
    if support.sh(("env -u LD_PRELOAD curl -s -m 2 -o /dev/null 'http://127.0.0.1:%d/health'"):format(port)) then break end
    os.execute("sleep 0.1")
  end
  return prefix, port
end

--- Stops the nginx support.serve_catalog started under @prefix (nil: none)
-- and removes its prefix directory.
function support.stop_serving(prefix)
  if not prefix then return end
  support.sh(("nginx -p %s -c nginx.conf -s quit 2>/dev/null"):format(prefix))
  os.execute("sleep 0.3")
  support.remove(prefix)
end

--- Starts another process that opens catalog @dir read-only and holds it
-- open; returns once it has. Returns release(), which makes the process close
-- the catalog and returns once it has exited. The holder gives up by itself
-- after 60 s (a failed test never leaves it behind).
function support.hold_open(dir)
  local q = support.q
  local h = support.tmpdir("holder")
  support.mkdir(h)
  support.write(h .. "/hold.lua", [[
local m = require "moraine"
local db = m.open(arg[1], { read_only = true })
io.open(arg[2] .. "/ready", "w"):close()
for _ = 1, 3000 do
  local f = io.open(arg[2] .. "/go")
  if f then f:close() break end
  os.execute("sleep 0.02")
end
db:close()
]])
  local exists = pl_path.exists
  os.execute("(sh " .. q(ROOT .. "/scripts/run-lua.sh") .. " " .. RUNTIME .. " " .. q(os.getenv("MORAINE_BUILD") or "build")
    .. " " .. q(h .. "/hold.lua") .. " " .. q(dir) .. " " .. q(h) .. " >/dev/null 2>&1 </dev/null; touch " .. q(h .. "/done")
    .. ") &")
  while not exists(h .. "/ready") do os.execute("sleep 0.02") end
  return function()
    support.write(h .. "/go", "")
    while not exists(h .. "/done") do os.execute("sleep 0.02") end
  end
end

--- Calls fn(...) expecting it to raise a moraine error (moraine.is_error) with
-- code @code (a string such as "EINVAL"); @needles is nil, one string, or a list
-- of strings that must each occur in the error's message (plain find). Also
-- checks that tostring(e) is "moraine: CODE: message", the form the binding
-- documents (bindings/moraine.lua). Returns the error. Raises a luassert
-- failure when fn returns, raises something that is not a moraine error, or
-- raises another code or message.
function support.expect_err(code, needles, fn, ...)
  local ok, e = pcall(fn, ...)
  luassert.is_false(ok, "expected a " .. code .. " error")
  luassert.is_true(moraine.is_error(e), "not a moraine error: " .. tostring(e))
  luassert.are.equal(code, e.code, "wrong code; error: " .. tostring(e))
  if type(needles) == "string" then needles = { needles } end
  for _, needle in ipairs(needles or {}) do
    luassert.is_truthy(e.message:find(needle, 1, true), "message '" .. e.message .. "' lacks '" .. needle .. "'")
  end
  luassert.are.equal("moraine: " .. code .. ": " .. e.message, tostring(e))
  return e
end

--- A fresh temporary path (not created), named after @tag, inside one
-- directory of this process under $TMPDIR (else /tmp). support.cleanup()
-- removes that directory, so also whatever a test made beside the path
-- (`tmpdir("exp") .. ".sql"`). tests/run-all.sh fails a run that leaves
-- anything in its TMPDIR.
local base, serial
function support.tmpdir(tag)
  if not base then
    local t = os.tmpname()                  -- a unique name; the file itself goes at once
    os.remove(t)
    local tmp = os.getenv("TMPDIR")
    base = ((tmp and tmp ~= "") and tmp or "/tmp") .. "/moraine-spec-" .. t:match("([^/]*)$")
    assert(pl_dir.makepath(base), "cannot create " .. base)
    serial = 0
  end
  serial = serial + 1
  return base .. "/" .. serial .. "-" .. (tag or "moraine")
end

--- Creates directory @p and its missing parents (pl.dir.makepath); raises if
-- it cannot.
function support.mkdir(p) assert(pl_dir.makepath(p)) end

--- Removes @p whatever it is (a directory tree, through pl.dir.rmtree, or a
-- file); a path that does not exist is no error. Raises if a removal fails.
function support.remove(p)
  if pl_path.islink(p) or (pl_path.exists(p) and not pl_path.isdir(p)) then
    assert(os.remove(p))
  elseif pl_path.isdir(p) then
    assert(pl_dir.rmtree(p))
  end
end

--- Removes every path support.tmpdir() gave out (and its directory).
function support.cleanup()
  if base then support.remove(base) end
  base = nil
end

--- Writes @text to file @path.
function support.write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

function support.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

--- The temporary files an export to @path left beside it (moraine.create_temp_file's
-- `path .. ".tmp-XXXXXX"`, and SQLite's journal of one): a list of names, empty when
-- there are none or @path's directory does not exist.
function support.temps_beside(path)
  local dir, name0 = pl_path.splitpath(path)
  local found = {}
  if not pl_path.isdir(dir) then return found end
  for _, file in ipairs(pl_dir.getfiles(dir)) do
    local name = pl_path.basename(file)
    if name:sub(1, #name0 + 5) == name0 .. ".tmp-" then found[#found + 1] = name end
  end
  return found
end

--- Lists the table names (file stems) of an NDJSON catalog directory.
function support.tables_of(dir)
  local names = {}
  for _, file in ipairs(pl_dir.getfiles(dir, "*.ndjson")) do
    names[#names + 1] = pl_path.basename(file):match("^(.-)%.ndjson$")
  end
  table.sort(names)
  return names
end

--- A new SQLite file made by running the SQL script @script with sqlite3.
function support.sqlite_from_script(script)
  local file = support.tmpdir("cat") .. ".sqlite"
  luassert.is_true(support.sh("sqlite3 " .. support.q(file) .. " < " .. support.q(script)))
  return file
end

--- A new SQLite file holding catalog @db (moraine.sqlite's SQL script).
function support.sqlite_of_catalog(db)
  local script = support.tmpdir("sql") .. ".sql"
  require("moraine.sqlite").export_sql(db, script)
  return support.sqlite_from_script(script)
end

--- Opens a new catalog and imports fixture @scenario into it.
function support.import_fixture(scenario, opts)
  local dir = support.tmpdir(scenario)
  local db = moraine.open(dir, opts or { no_sync = true })
  db:import_ndjson(support.FIXTURES .. "/" .. scenario .. "/catalog")
  return db, dir
end

--- Everything a catalog holds (its NDJSON export and last snapshot) as one
-- string, to check that a refused operation changed nothing.
function support.dump(db)
  local out = support.tmpdir("dump")
  db:export_ndjson(out)
  local parts = {}
  for _, name in ipairs(support.tables_of(out)) do parts[#parts + 1] = name .. "\n" .. support.read(out .. "/" .. name .. ".ndjson") end
  return table.concat(parts, "\n") .. "\nlast=" .. tostring(db:last_snapshot())
end

--- Deep equality of two rows (tables of column -> value); NULL is moraine.null.
-- A nested JSON value is {json = "<text>"} on both sides and compares by its
-- text; any other table value compares by content (pl.tablex.deepcompare).
function support.same_row(a, b)
  for k, v in pairs(a) do
    local w = b[k]
    if type(v) == "table" and type(w) == "table" then
      if type(v.json) == "string" or type(w.json) == "string" then
        if v.json ~= w.json then return false end
      elseif not tablex.deepcompare(v, w) then
        return false
      end
    elseif w ~= v then
      return false
    end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

--- Renders a row for failure messages.
function support.show(row)
  local keys = {}
  for k in pairs(row) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = row[k]
    if v == moraine.null then v = "NULL" elseif type(v) == "string" then v = string.format("%q", v) end
    parts[#parts + 1] = k .. "=" .. tostring(v)
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

--- The SQL filter `begin_snapshot <= S AND (end_snapshot IS NULL OR S < end_snapshot)`,
-- written out in plain Lua: the reference the engine is checked against.
function support.visible(row, s)
  local b, e = row.begin_snapshot, row.end_snapshot
  if b == nil then return true end
  if b == moraine.null or b > s then return false end
  if e == nil or e == moraine.null then return true end
  return s < e
end

--- Seeded random generator with the seed printed when a test fails.
function support.seed(default)
  local s = tonumber(os.getenv("MORAINE_SEED") or "") or default or os.time()
  math.randomseed(s)
  return s
end

--- A random 64-bit integer over the full int64 range, exact on both runtimes
-- (a LuaJIT int64 cdata outside +-2^53, like the binding returns).
local has_ffi, ffi = pcall(require, "ffi")
function support.random_int64()
  local pick = math.random(1, 6)
  if not has_ffi then
    if pick == 1 then return math.mininteger end
    if pick == 2 then return math.maxinteger end
    if pick == 3 then return math.random(-1000, 1000) end
    return math.random(math.mininteger, math.maxinteger)
  end
  local one = ffi.new("int64_t", 1)
  local max = (one * 2 ^ 62 - 1) * 2 + 1
  if pick == 1 then return -max - 1 end
  if pick == 2 then return max end
  if pick == 3 then return math.random(-1000, 1000) end
  local hi = math.random(0, 0xFFFFFFFF)
  local lo = math.random(0, 0xFFFFFFFF)
  local v = ffi.cast("int64_t", ffi.cast("uint64_t", hi) * 4294967296 + lo)
  return moraine.int64(v)
end

--- UTF-8 encoding of code point @cp (LuaJIT has no utf8 library).
function support.utf8_char(cp)
  if cp < 0x80 then return string.char(cp) end
  if cp < 0x800 then return string.char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64) end
  if cp < 0x10000 then
    return string.char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
  end
  return string.char(0xF0 + math.floor(cp / 262144), 0x80 + math.floor(cp / 4096) % 64, 0x80 + math.floor(cp / 64) % 64,
    0x80 + cp % 64)
end

--- A random byte string: empty, ASCII, NUL bytes, invalid UTF-8, long.
function support.random_bytes()
  local pick = math.random(1, 6)
  if pick == 1 then return "" end
  local n = pick == 6 and math.random(200, 700) or math.random(1, 24)
  local t = {}
  for i = 1, n do
    if pick == 2 then t[i] = string.char(math.random(32, 126)) else t[i] = string.char(math.random(0, 255)) end
  end
  return table.concat(t)
end

return support
