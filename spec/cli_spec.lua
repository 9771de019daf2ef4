--- The `moraine` command (scripts/moraine), run as a subprocess through
-- scripts/moraine-dev with the runtime of this busted run (lua5.4 or luajit),
-- on the real DuckLake fixtures. Expected values are computed independently
-- from the fixtures' NDJSON and DuckLake's own answers (expected/*.ndjson).
local moraine = require "moraine"
local support = require "support"

local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"
local FIX = support.FIXTURES
local S1 = FIX .. "/s1_evolution/catalog"
local S2 = FIX .. "/s2_multi_table/catalog"
local S3 = FIX .. "/s3_edge_values/catalog"
local ROOT = os.getenv("PWD") or "."

local q = support.q

--- Runs `moraine ARGS...` (each arg quoted); opts: stdin (text), env (table
-- name -> value, added to a clean MORAINE_* environment), cwd.
-- Returns {out =, err =, code =}.
local function run(args, opts)
  opts = opts or {}
  local dir = support.tmpdir("run")
  support.mkdir(dir)
  local inp = dir .. "/stdin"
  support.write(inp, opts.stdin or "")
  local env = { MORAINE_CATALOG = "", MORAINE_FORCE_TTY = "", MORAINE_LUA = RUNTIME }
  for k, v in pairs(opts.env or {}) do env[k] = v end
  local parts = {}
  for k, v in pairs(env) do parts[#parts + 1] = k .. "=" .. q(v) end
  local qargs = {}
  for i, a in ipairs(args) do qargs[i] = q(a) end
  local cmd = string.format("cd %s && %s sh %s %s >%s 2>%s <%s; echo $? >%s", q(opts.cwd or ROOT), table.concat(parts, " "),
    q(ROOT .. "/scripts/moraine-dev"), table.concat(qargs, " "), q(dir .. "/out"), q(dir .. "/err"), q(inp),
    q(dir .. "/rc"))
  os.execute(cmd)
  local r = { out = support.read(dir .. "/out"), err = support.read(dir .. "/err"),
    code = tonumber((support.read(dir .. "/rc"):match("%d+"))) }
  r.show = "exit " .. tostring(r.code) .. "\n--- stdout:\n" .. r.out:sub(1, 3000) .. "\n--- stderr:\n" .. r.err
  return r
end

local function ok_run(args, opts)
  local r = run(args, opts)
  assert(r.code == 0, r.show)
  return r
end

local function exists(p)
  local f = io.open(p, "rb")
  if f then f:close() return true end
  return os.rename(p, p) ~= nil
end

-- Lines of a tab-separated table (stdout when not a terminal): header, rows.
local function tsv(text)
  local rows, header = {}, nil
  for line in text:gmatch("[^\n]+") do
    local cells = {}
    for c in (line .. "\t"):gmatch("([^\t]*)\t") do cells[#cells + 1] = c end
    if not header then header = cells else
      local r = {}
      for i, h in ipairs(header) do r[h] = cells[i] end
      rows[#rows + 1] = r
    end
  end
  return rows, header
end

local function json(r) return moraine.json_decode(r.out) end
local function I(v) return moraine.int64(v) end

local function count(t) local n = 0 for _ in pairs(t) do n = n + 1 end return n end

-- ---- catalogs shared by the tests (imported once, through the command itself) --------

local catalogs = {}
local function catalog(dir_of_fixture)
  if not catalogs[dir_of_fixture] then
    local dir = support.tmpdir("cli")
    ok_run({ "-c", dir, "import", dir_of_fixture })
    catalogs[dir_of_fixture] = dir
  end
  return catalogs[dir_of_fixture]
end

local function rows_of(fixture_dir, name) return (moraine.read_ndjson(fixture_dir .. "/" .. name .. ".ndjson")) end

local COMMANDS = { "init", "import", "export", "snapshots", "tables", "show", "files", "history", "diff", "verify",
  "stats", "repl" }

describe("moraine command", function()
  teardown(function() support.cleanup() end)

  describe("help and usage", function()
    it("an empty catalog path or export destination is a usage error that says it is empty", function()
      local r = run({ "-c", "", "tables" })
      assert.are.equal(2, r.code, r.show)
      assert.truthy(r.err:find("the catalog path (-c/--catalog or MORAINE_CATALOG) is an empty string", 1, true), r.show)
      r = run({ "-c", support.tmpdir("emptydest"), "export", "" })
      assert.are.equal(2, r.code, r.show)
      assert.truthy(r.err:find("DEST is an empty string", 1, true), r.show)
    end)

    it("moraine --help and moraine help list every command and exit 0", function()
      for _, args in ipairs({ { "--help" }, { "help" }, { "-h" } }) do
        local r = ok_run(args)
        assert.truthy(r.out:find("usage: moraine [-c DIR | --catalog DIR] COMMAND", 1, true), r.show)
        for _, c in ipairs(COMMANDS) do
          assert.truthy(r.out:find("\n  " .. c .. " ", 1, true), c .. " missing from help:\n" .. r.out)
        end
      end
    end)

    it("every command has its own help (help COMMAND and COMMAND --help): synopsis, text, options, example", function()
      for _, c in ipairs(COMMANDS) do
        local a = ok_run({ "help", c })
        local b = ok_run({ c, "--help" })
        assert.are.equal(a.out, b.out)
        assert.truthy(a.out:match("^usage: moraine %[%-c DIR%] " .. c), a.out)
        assert.truthy(a.out:find("\noptions:\n", 1, true), c)
        assert.truthy(a.out:find("--catalog DIR", 1, true), c)
        assert.truthy(a.out:find("\nexample:\n  moraine", 1, true), c)
        assert.truthy(#a.out > 400, c .. ": help too short")
        assert.are.equal("", a.err)
      end
    end)

    it("every command that takes --json (moraine --help lists them) lists it among its options", function()
      local list = assert(ok_run({ "--help" }).out:gsub("%s+", " "):match("%-%-json %(([^)]+)%)"))
      local n = 0
      for c in list:gmatch("[%w_]+") do
        n = n + 1
        local out = ok_run({ c, "--help" }).out
        local options = assert(out:match("\noptions:\n(.-)\nexample:"), c)
        assert.truthy(options:find("^  %-%-json ") or options:find("\n  %-%-json "), c .. ": --json not among:\n" .. options)
      end
      assert.truthy(n >= 15, list)
    end)

    it("help of the read commands names --json, --at where it applies", function()
      for _, c in ipairs({ "snapshots", "tables", "show", "files", "history", "diff", "verify", "stats" }) do
        assert.truthy(ok_run({ c, "--help" }).out:find("--json", 1, true), c)
      end
      for _, c in ipairs({ "tables", "show", "files" }) do
        assert.truthy(ok_run({ c, "--help" }).out:find("--at S", 1, true), c)
      end
      assert.truthy(ok_run({ "init", "--help" }).out:find("--data-path PATH", 1, true))
      assert.truthy(ok_run({ "export", "--help" }).out:find("--format ndjson|sql", 1, true))
    end)

    it("the read commands' help examples run on the catalog make demo imports (s1_evolution)", function()
      local c = catalog(S1)
      for _, name in ipairs({ "snapshots", "tables", "show", "files", "history", "diff", "verify", "stats", "audit",
                              "layout", "clustering" }) do
        local example = assert(ok_run({ "help", name }).out:match("\nexample:\n  ([^\n]+)"), name)
        local dir = support.tmpdir("example")
        support.mkdir(dir)
        -- the example as a shell line, its moraine the command on that catalog
        local line = string.format("cd %s && moraine() { MORAINE_CATALOG= MORAINE_LUA=%s sh %s -c %s \"$@\"; } && "
          .. "{ %s\n} >%s 2>%s", q(dir), RUNTIME, q(ROOT .. "/scripts/moraine-dev"), q(c), example, q(dir .. "/out"),
          q(dir .. "/err"))
        local ok = os.execute(line)
        local err = support.read(dir .. "/err")
        assert(ok == true or ok == 0, name .. ": " .. example .. "\n" .. err)
        assert.are.equal("", err, name .. ": " .. example)
      end
    end)

    it("--version prints the module's version", function()
      local r = ok_run({ "--version" })
      assert.truthy(r.out:find("moraine " .. moraine.version, 1, true), r.show)
    end)

    it("no command: usage on stderr, exit 2", function()
      local r = run({})
      assert.are.equal(2, r.code)
      assert.truthy(r.err:find("usage: moraine", 1, true), r.show)
      assert.truthy(r.err:find("moraine: no command given\nhint: ", 1, true), r.show)
      assert.are.equal("", r.out)
    end)

    it("an unknown command is a usage error (exit 2) with a hint", function()
      local r = run({ "frobnicate" })
      assert.are.equal(2, r.code, r.show)
      assert.truthy(r.err:find("moraine: unknown command 'frobnicate'\nhint: see 'moraine --help'", 1, true), r.show)
      r = run({ "help", "frobnicate" })
      assert.are.equal(2, r.code, r.show)
    end)

    it("an unknown option is a usage error (exit 2) naming the option", function()
      local r = run({ "-c", catalog(S1), "tables", "--bogus" })
      assert.are.equal(2, r.code, r.show)
      assert.truthy(r.err:find("unknown option --bogus for 'tables'", 1, true), r.show)
      assert.truthy(r.err:find("hint: see 'moraine tables --help'", 1, true), r.show)
      r = run({ "--bogus" })
      assert.are.equal(2, r.code, r.show)
      r = run({ "-c", catalog(S1), "init", "--json" })
      assert.are.equal(2, r.code, r.show)
      assert.truthy(r.err:find("--json does not apply to 'init'", 1, true), r.show)
    end)

    it("a missing or extra argument is a usage error (exit 2)", function()
      local c = catalog(S1)
      for _, args in ipairs({ { "show" }, { "files" }, { "history" }, { "diff", "1" }, { "import" }, { "export" } }) do
        local full = { "-c", c }
        for _, a in ipairs(args) do full[#full + 1] = a end
        local r = run(full)
        assert.are.equal(2, r.code, r.show)
        assert.truthy(r.err:find("moraine: missing argument ", 1, true), r.show)
        assert.truthy(r.err:find("hint: see 'moraine " .. args[1] .. " --help'", 1, true), r.show)
      end
      local r = run({ "-c", c, "tables", "extra" })
      assert.are.equal(2, r.code, r.show)
      assert.truthy(r.err:find("unexpected argument 'extra'", 1, true), r.show)
      r = run({ "-c" })
      assert.are.equal(2, r.code, r.show)
      assert.truthy(r.err:find("option -c needs a value", 1, true), r.show)
    end)

    it("--at must be an integer (usage error), diff's snapshots too", function()
      local r = run({ "-c", catalog(S1), "tables", "--at", "nine" })
      assert.are.equal(2, r.code, r.show)
      assert.truthy(r.err:find("--at expects a snapshot id (an integer), got 'nine'", 1, true), r.show)
      r = run({ "-c", catalog(S1), "diff", "1", "2.5" })
      assert.are.equal(2, r.code, r.show)
      assert.truthy(r.err:find("got '2.5'", 1, true), r.show)
    end)
  end)

  describe("init", function()
    it("makes a DuckLake catalog at snapshot 0 with the data path given", function()
      local dir = support.tmpdir("init")
      local r = ok_run({ "-c", dir, "init", "--data-path", "s3://bucket/lake/" })
      assert.truthy(r.out:find("initialized", 1, true), r.show)
      local db = moraine.open(dir, { read_only = true })
      assert.are.equal(I(0), I(db:last_snapshot()))
      local dp
      for _, e in ipairs(db:scan("ducklake_metadata")) do if e.row.key == "data_path" then dp = e.row.value end end
      db:close()
      assert.are.equal("s3://bucket/lake/", dp)
      local s = tsv(ok_run({ "-c", dir, "snapshots" }).out)
      assert.are.equal(1, #s)
      assert.are.equal("0", s[1].snapshot_id)
      assert.are.equal('created_schema:"main"', s[1].changes_made)
      local t = tsv(ok_run({ "-c", dir, "tables" }).out)
      assert.are.equal(0, #t)
    end)

    it("stores the data path as DuckLake does, ending in one '/' (a file's path is the data path joined as text)", function()
      for given, want in pairs({ ["relative/path"] = "relative/path/", ["lake//"] = "lake/", ["s3://b/x\\"] = "s3://b/x/" }) do
        local dir = support.tmpdir("init")
        local r = ok_run({ "-c", dir, "init", "--data-path", given })
        assert.truthy(r.out:find("(data path '" .. want .. "',", 1, true), r.show)
        ok_run({ "-c", dir, "sql", "CREATE TABLE x (a INTEGER)" })
        local db = moraine.open(dir)
        db:transaction(function(tx) tx:add_data_files("x", { { path = "f1.parquet", record_count = 3, file_size_bytes = 10 } }) end)
        local dp
        for _, e in ipairs(db:scan("ducklake_metadata")) do if e.row.key == "data_path" then dp = e.row.value end end
        db:close()
        assert.are.equal(want, dp)
        local f = tsv(ok_run({ "-c", dir, "files", "x" }).out)
        assert.are.equal(want .. "main/x/f1.parquet", f[1].path)
      end
    end)

    it("defaults the data path to data/", function()
      local dir = support.tmpdir("init")
      ok_run({ "-c", dir, "init" })
      local db = moraine.open(dir, { read_only = true })
      local dp
      for _, e in ipairs(db:scan("ducklake_metadata")) do if e.row.key == "data_path" then dp = e.row.value end end
      db:close()
      assert.are.equal("data/", dp)
    end)

    it("refuses a catalog that is not empty (EEXIST, exit 1, nothing changed)", function()
      local dir = support.tmpdir("init")
      ok_run({ "-c", dir, "init" })
      local before = ok_run({ "-c", dir, "snapshots" }).out
      local r = run({ "-c", dir, "init", "--data-path", "other/" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("^moraine: EEXIST: "), r.show)
      assert.truthy(r.err:find("\nhint: ", 1, true), r.show)
      assert.are.equal(before, ok_run({ "-c", dir, "snapshots" }).out)
    end)
  end)

  it("push to a directory (an NDJSON export) says so, with no word of snapshots pushed", function()
    local r = run({ "-c", catalog(S1), "push", S1 })
    assert.are.equal(1, r.code, r.show)
    assert.truthy(r.err:find("is a directory, not a SQL DuckLake catalog", 1, true), r.show)
    assert.is_nil(r.err:find("run the push again", 1, true), r.show)
  end)

  it("history, layout and clustering refuse a sum of record_count past 2^53 instead of printing a wrapped count",
    function()
    local src = support.tmpdir("huge")
    assert.is_true(support.sh("cp -r " .. support.q(S1) .. " " .. support.q(src)))
    local path = src .. "/ducklake_data_file.ndjson"
    local lines, n = {}, 0
    for line in support.read(path):gmatch("([^\n]*)\n") do
      n = n + 1
      if n == 1 then line = line:gsub('"record_count":%d+', '"record_count":9223372036854775807')
      elseif n == 2 then line = line:gsub('"record_count":%d+', '"record_count":9007199254740993') end
      lines[#lines + 1] = line
    end
    support.write(path, table.concat(lines, "\n") .. "\n")
    local dir = support.tmpdir("huge-cat")
    ok_run({ "-c", dir, "import", src })
    for _, args in ipairs({ { "history", "events" }, { "layout", "events", "--where", "id > 5" },
      { "clustering", "events" } }) do
      local cmd = { "-c", dir }
      for _, a in ipairs(args) do cmd[#cmd + 1] = a end
      local r = run(cmd)
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("the sum of record_count reaches 2^53", 1, true), r.show)
      assert.is_nil(r.out:find("-92", 1, true), r.show)
    end
  end)

  describe("import", function()
    it("imports an NDJSON catalog directory: every row, 21 snapshots", function()
      local dir = support.tmpdir("imp")
      local r = ok_run({ "-c", dir, "import", S1 })
      assert.truthy(r.out:find("21 snapshots, last snapshot 20", 1, true), r.show)
      assert.are.equal("", r.err) -- no progress: stderr is not a terminal
      local db = moraine.open(dir, { read_only = true })
      assert.are.equal(I(20), I(db:last_snapshot()))
      assert.are.equal(#rows_of(S1, "ducklake_data_file"), #db:scan("ducklake_data_file", { at = moraine.ALL }))
      db:close()
    end)

    it("counts one snapshot in the singular (import and sync)", function()
      local src = support.tmpdir("one")
      ok_run({ "-c", src, "init" })
      local nd = support.tmpdir("one-nd")
      ok_run({ "-c", src, "export", nd })
      local r = ok_run({ "-c", support.tmpdir("imp"), "import", nd })
      assert.truthy(r.out:find(": 29 tables, 1 snapshot, last snapshot 0\n", 1, true), r.show)
      r = ok_run({ "-c", support.tmpdir("syn"), "sync", nd })
      assert.truthy(r.out:find(": 1 snapshot replayed, last snapshot 0 (was none)", 1, true), r.show)
    end)

    it("shows progress on stderr (snapshots, rate, time left, rewritten with \\r) when stderr is a terminal", function()
      local dir = support.tmpdir("imp")
      local r = ok_run({ "-c", dir, "import", S1 }, { env = { MORAINE_FORCE_TTY = "1" } })
      assert.truthy(r.err:find("\rimporting: ", 1, true), r.show)
      assert.truthy(r.err:find("snapshots/s", 1, true), r.show)
      assert.truthy(r.err:find(" elapsed", 1, true), r.show) -- wall-clock time from the start
      -- import is sync into an empty catalog: one step per snapshot replayed (s1: snapshots 0 to 20)
      local done = tonumber(r.err:match("importing: (%d+)/%1 snapshots %(100%%%)"))
      assert.truthy(done, "no final progress line:\n" .. r.show)
      assert.are.equal(#rows_of(S1, "ducklake_snapshot"), done, r.show)
      -- the small fixture is done before an estimate could be sane: no time left is guessed
      assert.is_nil(r.err:find(" left", 1, true), r.show)
      -- --progress shows it when stderr is not a terminal; without it nothing
      local dir2 = support.tmpdir("imp2")
      local r2 = ok_run({ "-c", dir2, "import", S1, "--progress" })
      assert.truthy(r2.err:find("\rimporting: ", 1, true), r2.show)
    end)

    it("import into a path whose parent directory is missing says which directory it cannot create", function()
      local parent = support.tmpdir("noparent")
      local r = run({ "-c", parent .. "/cat", "import", S1 })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("moraine: EIO: " .. parent .. "/cat: cannot create directory", 1, true), r.show)
      assert.is_nil(r.err:find("compact", 1, true), r.show)
      assert.is_false(exists(parent))
      -- a parent that is a file
      support.write(parent, "")
      r = run({ "-c", parent .. "/cat", "import", S1 })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("moraine: EIO: " .. parent .. "/cat: cannot create directory: Not a directory", 1, true),
        r.show)
    end)

    it("refuses a missing source (exit 1) and creates no catalog", function()
      local dir = support.tmpdir("imp")
      local r = run({ "-c", dir, "import", "/nonexistent/catalog" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("moraine: no such file or directory: /nonexistent/catalog\nhint: ", 1, true), r.show)
      assert.truthy(r.err:find("moraine import --help", 1, true), r.show)
      assert.is_false(exists(dir))
    end)

    it("refuses a directory that is not a catalog export (exit 1), creating nothing", function()
      local src = support.tmpdir("notcat")
      support.mkdir(src)
      support.write(src .. "/readme.txt", "hello")
      local dir = support.tmpdir("imp")
      local r = run({ "-c", dir, "import", src })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("is not a DuckLake catalog export", 1, true), r.show)
      assert.truthy(r.err:find("\nhint: ", 1, true), r.show)
      assert.is_false(exists(dir))
    end)

    it("refuses a file that is neither NDJSON directory nor SQLite (exit 1)", function()
      local dir = support.tmpdir("imp")
      local r = run({ "-c", dir, "import", S1 .. "/ducklake_table.ndjson" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("is neither a directory of <table>.ndjson files nor a SQLite database", 1, true), r.show)
      assert.is_false(exists(dir))
    end)

    it("refuses a catalog that is not empty with the engine's EEXIST, changing nothing", function()
      local dir = support.tmpdir("imp")
      ok_run({ "-c", dir, "import", S2 })
      local db = moraine.open(dir, { read_only = true })
      local before = support.dump(db)
      db:close()
      local r = run({ "-c", dir, "import", S1 })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("^moraine: EEXIST: "), r.show)
      assert.truthy(r.err:find("\nhint: nothing was changed", 1, true), r.show)
      db = moraine.open(dir, { read_only = true })
      assert.are.equal(before, support.dump(db))
      db:close()
    end)

    it("a bad NDJSON file fails the whole import and leaves no catalog behind", function()
      local src = support.tmpdir("badsrc")
      support.mkdir(src)
      for _, name in ipairs(support.tables_of(S1)) do
        support.write(src .. "/" .. name .. ".ndjson", support.read(S1 .. "/" .. name .. ".ndjson"))
      end
      support.write(src .. "/ducklake_table.ndjson", '{"table_id": 1, "oops\n')
      local dir = support.tmpdir("imp")
      local r = run({ "-c", dir, "import", src })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("^moraine: EJSON: "), r.show)
      assert.is_false(exists(dir))
    end)

    it("SQLite files (header 'SQLite format 3\\0') are read as SQLite: a damaged one imports nothing", function()
      local fake = support.tmpdir("fake") .. ".db"
      support.write(fake, "SQLite format 3\0" .. string.rep("\0", 100))
      local dir = support.tmpdir("imp")
      local r = run({ "-c", dir, "import", fake })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("^moraine: EINVAL: sync: .* is not a SQLite database"), r.show)
      assert.truthy(r.err:find("\nhint: nothing was imported", 1, true), r.show)
      assert.is_false(exists(dir))
      os.remove(fake)
    end)

    it("imports a SQLite DuckLake catalog (made by export --format sql and sqlite3) with the same rows", function()
      local sql = support.tmpdir("exp") .. ".sql"
      ok_run({ "-c", catalog(S1), "export", sql })
      local dbfile = support.tmpdir("sqlite") .. ".db"
      assert.truthy(os.execute("sqlite3 " .. q(dbfile) .. " < " .. q(sql)))
      local dir = support.tmpdir("imp")
      ok_run({ "-c", dir, "import", dbfile })
      local a = ok_run({ "-c", catalog(S1), "diff", "0", "20" }).out
      local b = ok_run({ "-c", dir, "diff", "0", "20" }).out
      assert.are.equal(a, b)
      os.remove(sql)
      os.remove(dbfile)
    end)
  end)

  describe("export", function()
    it("an NDJSON export into a directory another export holds is refused (ECONFLICT) with a hint to wait", function()
      local cat = catalog(S1)
      local dest = support.tmpdir("held")
      support.mkdir(dest)
      local out = support.tmpdir("held-run")
      support.mkdir(out)
      -- flock(1) holds the directory's lock as a running export does
      os.execute("flock " .. q(dest) .. " sh -c " .. q(support.moraine_cmd({ "-c", cat, "export", dest }) .. " >"
        .. q(out .. "/out") .. " 2>" .. q(out .. "/err") .. "; echo $? >" .. q(out .. "/rc")))
      local err = support.read(out .. "/err")
      assert.are.equal("1", support.read(out .. "/rc"):match("%d+"), err)
      assert.truthy(err:find("ECONFLICT: " .. dest .. ": another export into it is running", 1, true), err)
      assert.truthy(err:find("hint: another export into " .. dest .. " is running: run this one again once it has "
        .. "ended; nothing was written", 1, true), err)
      assert.are.same({}, support.tables_of(dest))
    end)

    it("writes an NDJSON directory byte for byte equal to the fixture", function()
      local out = support.tmpdir("exp")
      local r = ok_run({ "-c", catalog(S1), "export", out })
      assert.truthy(r.out:find("(ndjson)", 1, true), r.show)
      for _, name in ipairs(support.tables_of(S1)) do
        assert.are.equal(support.read(S1 .. "/" .. name .. ".ndjson"), support.read(out .. "/" .. name .. ".ndjson"), name)
      end
    end)

    it("refuses DEST '-' (it wrote a directory named '-'); output that cannot be written (a full disk) exits 1", function()
      local r = run({ "-c", catalog(S1), "export", "-" })
      assert.are.equal(2, r.code, r.show)
      assert.truthy(r.err:find("not to standard output", 1, true), r.show)
      assert.is_nil(io.open("-", "rb"))
      local full = io.open("/dev/full", "wb")
      if full then -- Linux: every write fails with ENOSPC
        full:close()
        local rcfile = support.tmpdir("rc")
        for _, args in ipairs({ { "-c", catalog(S1), "snapshots" }, { "-c", catalog(S1), "tables", "--json" } }) do
          os.execute(support.moraine_cmd(args) .. " >/dev/full 2>/dev/null; echo $? >" .. support.q(rcfile))
          assert.are.equal("1", support.read(rcfile):match("%d+"), table.concat(args, " ") .. " > /dev/full")
        end
      end
    end)

    it("writes a SQL script for a .sql destination", function()
      local out = support.tmpdir("exp") .. ".sql"
      local r = run({ "-c", catalog(S1), "export", out })
      assert.are.equal(0, r.code, r.show)
      local text = support.read(out)
      assert.truthy(text:find("ducklake_partition_info", 1, true))
      os.remove(out)
    end)

    it("--format ndjson wins over the .sql ending; an unknown format is a usage error", function()
      local out = support.tmpdir("exp") .. ".sql"
      ok_run({ "-c", catalog(S1), "export", out, "--format", "ndjson" })
      assert.truthy(exists(out .. "/ducklake_snapshot.ndjson"))
      local r = run({ "-c", catalog(S1), "export", out, "--format", "csv" })
      assert.are.equal(2, r.code, r.show)
      assert.truthy(r.err:find("--format must be ndjson, sql or sqlite", 1, true), r.show)
    end)
  end)

  describe("snapshots", function()
    it("lists the 21 snapshots with their changes (tab-separated when not a terminal)", function()
      local rows, header = tsv(ok_run({ "-c", catalog(S1), "snapshots" }).out)
      assert.are.same({ "snapshot_id", "snapshot_time", "schema_version", "next_catalog_id", "next_file_id",
        "changes_made", "author", "commit_message", "commit_extra_info" }, header)
      local want = rows_of(S1, "ducklake_snapshot")
      local changes = rows_of(S1, "ducklake_snapshot_changes")
      assert.are.equal(#want, #rows)
      for i, w in ipairs(want) do
        assert.are.equal(tostring(w.snapshot_id), rows[i].snapshot_id)
        assert.are.equal(w.snapshot_time, rows[i].snapshot_time)
        assert.are.equal(tostring(w.next_file_id), rows[i].next_file_id)
        assert.are.equal(changes[i].changes_made, rows[i].changes_made)
      end
    end)

    it("--json: 21 snapshot objects, keys in column order, exact values", function()
      local r = ok_run({ "-c", catalog(S1), "snapshots", "--json" })
      local doc = json(r)
      assert.are.equal(21, #doc)
      assert.truthy(r.out:match('^%[{"snapshot_id":0,"snapshot_time":"[^"]+","schema_version":0,"next_catalog_id":1,'
        .. '"next_file_id":0,"changes_made":"created_schema:\\"main\\"","author":null,"commit_message":null,"commit_extra_info":null}'), r.out)
      assert.are.equal(I(20), I(doc[21].snapshot_id))
      assert.are.equal(I(113), I(doc[21].next_file_id))
      assert.are.equal("\n", r.out:sub(-1))
    end)
  end)

  describe("tables", function()
    it("--at 9 --json: events with a partition spec of 0 keys (reset), no sort spec", function()
      local doc = json(ok_run({ "-c", catalog(S1), "tables", "--at", "9", "--json" }))
      assert.are.equal(1, #doc)
      local t = doc[1]
      assert.are.equal("main", t.schema)
      assert.are.equal("events", t.table)
      assert.are.equal(I(1), I(t.table_id))
      assert.are.equal(I(5), I(t.partition_id))
      assert.are.equal(I(0), I(t.partition_keys))
      assert.are.equal(moraine.null, t.partition)
      assert.are.equal("reset", t.partition_state)
      assert.are.equal(moraine.null, t.sort)
      assert.are.equal("none", t.sort_state)
      assert.are.equal(I(4), I(t.columns))
    end)

    it("words a reset spec one way in tables, show and history, text and --json", function()
      local c = catalog(S1)
      -- at 9 the live partition spec has no keys (RESET PARTITIONED BY) and no sort spec is set
      local specs = rows_of(S1, "ducklake_partition_info")
      local keys = {}
      for _, k in ipairs(rows_of(S1, "ducklake_partition_column")) do keys[tostring(k.partition_id)] = true end
      local reset_id
      for _, p in ipairs(specs) do
        if support.visible(p, 9) then reset_id = p.partition_id end
      end
      assert.is_nil(keys[tostring(reset_id)]) -- the fixture's spec at 9 has no partition columns
      local row = tsv(ok_run({ "-c", c, "tables", "--at", "9" }).out)[1]
      assert.are.equal("unpartitioned (reset)", row["partition spec"])
      assert.are.equal("unsorted", row["sort spec"])
      local sh = ok_run({ "-c", c, "show", "events", "--at", "9" }).out
      assert.truthy(sh:find("partition spec " .. tostring(reset_id) .. " (since snapshot 8): unpartitioned (reset)\n", 1, true), sh)
      assert.truthy(sh:find("\nsort spec: unsorted\n", 1, true), sh)
      local shj = json(ok_run({ "-c", c, "show", "events", "--at", "9", "--json" }))
      assert.are.equal("reset", shj.partition_state)
      assert.are.equal(moraine.null, shj.partition.sql)
      assert.are.equal("none", shj.sort_state)
      assert.are.equal(moraine.null, shj.sort)
      local h = ok_run({ "-c", c, "history", "events" }).out
      assert.truthy(h:find("\n" .. tostring(reset_id) .. "\t8\t16\tunpartitioned (reset)\t", 1, true), h)
      local hj = json(ok_run({ "-c", c, "history", "events", "--json" }))
      for _, p in ipairs(hj.partition_specs) do
        if I(p.partition_id) == I(reset_id) then
          assert.are.equal("reset", p.partition_state)
          assert.are.equal(moraine.null, p.keys)
        else
          assert.are.equal("partitioned", p.partition_state)
          assert.are.equal("string", type(p.keys))
        end
      end
      -- s2's tables were never partitioned nor sorted: "unpartitioned", state none
      local r2 = tsv(ok_run({ "-c", catalog(S2), "tables" }).out)
      local has_none = false
      for _, r in ipairs(r2) do if r["partition spec"] == "unpartitioned" then has_none = true end end
      assert.is_true(has_none)
      for _, t in ipairs(json(ok_run({ "-c", catalog(S2), "tables", "--json" }))) do
        if t.partition_id == moraine.null then assert.are.equal("none", t.partition_state) end
      end
      -- the help texts say it
      for _, cmdname in ipairs({ "tables", "show", "history" }) do
        local help = ok_run({ cmdname, "--help" }).out
        assert.truthy(help:find('"unpartitioned (reset)"', 1, true), cmdname)
      end
    end)

    it("names partition keys in SQL form with the column names of the snapshot asked for", function()
      local c = catalog(S1)
      local at = {
        [3] = "year(ts), month(ts), day(ts)", [5] = "year(ts), month(ts), day(ts), hour(ts)",
        [7] = "region, bucket(4, id)", [16] = "area", [20] = "hour(ts)",
      }
      for s, want in pairs(at) do
        local doc = json(ok_run({ "-c", c, "tables", "--at", tostring(s), "--json" }))
        assert.are.equal(want, doc[1].partition, "snapshot " .. s)
      end
      local doc = json(ok_run({ "-c", c, "tables", "--at", "12", "--json" }))
      assert.are.equal("amount DESC NULLS_LAST, region ASC NULLS_LAST", doc[1].sort)
      doc = json(ok_run({ "-c", c, "tables", "--at", "14", "--json" }))
      assert.are.equal("amount DESC NULLS_LAST, area ASC NULLS_LAST", doc[1].sort)
    end)

    it("counts the live files at S as DuckLake's list_files does, for every snapshot", function()
      local per = {}
      for _, f in ipairs(rows_of(FIX .. "/s1_evolution/expected", "list_files")) do
        local k = tostring(f.snapshot_id)
        per[k] = (per[k] or 0) + 1
      end
      for s = 2, 20 do
        local doc = json(ok_run({ "-c", catalog(S1), "tables", "--at", tostring(s), "--json" }))
        assert.are.equal(I(per[tostring(s)] or 0), I(doc[1].files), "snapshot " .. s)
      end
    end)

    it("lists the tables of every schema (s2) and none before the first CREATE TABLE", function()
      local rows = tsv(ok_run({ "-c", catalog(S2), "tables" }).out)
      local names = {}
      for _, r in ipairs(rows) do names[#names + 1] = r.schema .. "." .. r.table end
      assert.are.same({ "sales.clients", "sales.orders", "sales.tmp" }, names)
      assert.are.equal(0, #json(ok_run({ "-c", catalog(S2), "tables", "--at", "1", "--json" })))
    end)

    it("on a terminal: an aligned table with a header rule", function()
      local r = ok_run({ "-c", catalog(S1), "tables" }, { env = { MORAINE_FORCE_TTY = "1" } })
      assert.truthy(r.out:find("\nschema  table   table_id  columns  partition spec  sort spec  live files\n", 1, true), r.out)
      assert.truthy(r.out:find("\nmain    events         1        5  hour(ts)        unsorted           68\n", 1, true), r.out)
      assert.is_nil(r.out:find("\t", 1, true))
    end)

    it("a snapshot that does not exist: exit 1 naming the snapshots there are", function()
      local r = run({ "-c", catalog(S1), "tables", "--at", "21" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("moraine: snapshot 21 does not exist (snapshots: 0..20)\nhint: ", 1, true), r.show)
      assert.are.equal("", r.out)
      r = run({ "-c", catalog(S1), "tables", "--at", "-1", "--json" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("snapshot -1 does not exist (snapshots: 0..20)", 1, true), r.show)
    end)
  end)

  describe("show", function()
    it("shows columns, partition spec keys and sort spec at a snapshot (--json)", function()
      local doc = json(ok_run({ "-c", catalog(S1), "show", "events", "--at", "12", "--json" }))
      assert.are.equal("events", doc.table)
      assert.are.equal(I(12), I(doc.snapshot))
      local names = {}
      for i, c in ipairs(doc.columns) do names[i] = c.name end
      assert.are.same({ "id", "ts", "region", "amount" }, names)
      assert.are.equal("decimal(18,2)", doc.columns[4].type)
      assert.are.equal(true, doc.columns[1].nullable)
      assert.are.equal(I(5), I(doc.partition.partition_id))
      assert.are.equal(0, #doc.partition.keys)
      assert.are.equal(I(7), I(doc.sort.sort_id))
      assert.are.equal(2, #doc.sort.keys)
      assert.are.equal("amount", doc.sort.keys[1].expression)
      assert.are.equal("DESC", doc.sort.keys[1].direction)
      assert.are.equal("NULLS_LAST", doc.sort.keys[1].null_order)
      assert.are.equal("region", doc.sort.keys[2].expression)
    end)

    it("at the newest snapshot: five columns (note with its default), spec 11 hour(ts), no sort spec", function()
      local doc = json(ok_run({ "-c", catalog(S1), "show", "main.events", "--json" }))
      assert.are.equal(5, #doc.columns)
      assert.are.equal("note", doc.columns[5].name)
      assert.are.equal("n/a", doc.columns[5].default)
      assert.are.equal(I(11), I(doc.partition.partition_id))
      assert.are.equal(1, #doc.partition.keys)
      local k = doc.partition.keys[1]
      assert.are.equal(I(0), I(k.index))
      assert.are.equal("ts", k.column)
      assert.are.equal("hour", k.transform)
      assert.are.equal(moraine.null, doc.sort)
    end)

    it("prints readable sections", function()
      local r = ok_run({ "-c", catalog(S1), "show", "events", "--at", "7" }, { env = { MORAINE_FORCE_TTY = "1" } })
      assert.truthy(r.out:find("main.events (table_id 1) at snapshot 7", 1, true), r.out)
      assert.truthy(r.out:find("partition spec 4 (since snapshot 6): region, bucket(4, id)", 1, true), r.out)
      assert.truthy(r.out:find("      1  id      bucket(4)", 1, true), r.out)
      assert.truthy(r.out:find("sort spec: unsorted", 1, true), r.out)
    end)

    it("nests STRUCT fields (parent_column set) under their parent; tables counts top-level columns only", function()
      -- a table with a STRUCT column, written through the staged path as DuckLake writes it
      local dir = support.tmpdir("struct")
      ok_run({ "-c", dir, "init" })
      local db = moraine.open(dir, { no_sync = true })
      local N = moraine.null
      local cols = {
        { 1, "id", "int64", N }, { 2, "s", "struct", N }, { 3, "a", "int32", 2 }, { 4, "b", "struct", 2 },
        { 5, "c", "varchar", 4 }, { 6, "name", "varchar", N },
      }
      local function full(rel, vals)
        local row = {}
        for _, c in ipairs(db:relation(rel).columns) do row[c] = N end
        for k, v in pairs(vals) do row[k] = v end
        return row
      end
      db:commit(1, function(tx)
        tx:insert("ducklake_snapshot", full("ducklake_snapshot", { snapshot_id = 1, snapshot_time = "2026-01-01 00:00:00+00",
          schema_version = 1, next_catalog_id = 8, next_file_id = 0 }))
        tx:insert("ducklake_table", full("ducklake_table", { table_id = 1, table_uuid = "u1", begin_snapshot = 1, schema_id = 0,
          table_name = "t", path = "t/", path_is_relative = true }))
        for i, c in ipairs(cols) do
          tx:insert("ducklake_column", full("ducklake_column", { column_id = c[1], begin_snapshot = 1, table_id = 1,
            column_order = i, column_name = c[2], column_type = c[3], nulls_allowed = true, parent_column = c[4] }))
        end
      end)
      db:close()
      local top = 0
      for _, c in ipairs(cols) do if c[4] == N then top = top + 1 end end
      local t = json(ok_run({ "-c", dir, "tables", "--json" }))[1]
      assert.are.equal(I(top), I(t.columns))
      local d = json(ok_run({ "-c", dir, "show", "t", "--json" }))
      -- the tree from the rows: children of each column id, in column_order
      local function kids(parent)
        local l = {}
        for _, c in ipairs(cols) do if c[4] == parent then l[#l + 1] = c end end
        return l
      end
      local function check(got, parent)
        local want = kids(parent)
        assert.are.equal(#want, #got)
        for i, c in ipairs(want) do
          assert.are.equal(c[2], got[i].name)
          assert.are.equal(I(c[1]), I(got[i].column_id))
          assert.are.equal(c[3], got[i].type)
          check(got[i].children, c[1])
        end
      end
      check(d.columns, N)
      -- text: each field right after its parent, indented two spaces per level
      local out = ok_run({ "-c", dir, "show", "t" }).out
      local names = {}
      for line in out:gmatch("[^\n]+") do
        local id, name = line:match("^(%d+)\t([^\t]+)\t")
        if id then names[#names + 1] = name end
      end
      assert.are.same({ "id", "s", "  a", "  b", "    c", "name" }, names)
    end)

    it("resolves schema.name and names unique across schemas (s2)", function()
      local a = json(ok_run({ "-c", catalog(S2), "show", "sales.orders", "--json" }))
      local b = json(ok_run({ "-c", catalog(S2), "show", "orders", "--json" }))
      assert.are.equal("sales", a.schema)
      assert.are.same(a.columns[1].name, b.columns[1].name)
      assert.are.equal(I(a.table_id), I(b.table_id))
      -- before the rename at 19 the table is "customers"
      local c = json(ok_run({ "-c", catalog(S2), "show", "customers", "--at", "18", "--json" }))
      assert.are.equal(I(3), I(c.table_id))
    end)

    it("looks TABLE up as DuckDB does: exact spelling first, then a unique match without regard to case (show, files, history)", function()
      -- s2: sales.orders; DuckDB's catalog names are case-insensitive, case-preserving
      local a = json(ok_run({ "-c", catalog(S2), "show", "sales.orders", "--json" }))
      local b = json(ok_run({ "-c", catalog(S2), "show", "SALES.Orders", "--json" }))
      local c = json(ok_run({ "-c", catalog(S2), "show", "ORDERS", "--json" }))
      assert.are.equal(I(a.table_id), I(b.table_id))
      assert.are.equal(I(a.table_id), I(c.table_id))
      assert.are.equal("orders", b.name or b.table or c.name or c.table)
      assert.are.equal(ok_run({ "-c", catalog(S2), "files", "sales.orders" }).out, ok_run({ "-c", catalog(S2), "files", "Orders" }).out)
      assert.are.equal(ok_run({ "-c", catalog(S2), "history", "orders" }).out, ok_run({ "-c", catalog(S2), "history", "ORDERS" }).out)
      -- a dropped or renamed table is found by any case too (customers, renamed at 19)
      assert.are.equal(I(3), I(json(ok_run({ "-c", catalog(S2), "show", "CUSTOMERS", "--at", "18", "--json" })).table_id))
      -- two tables whose names differ only by case, in two schemas: the exact
      -- spelling picks one, any other spelling is ambiguous and names both
      local dir = support.tmpdir("cicli")
      ok_run({ "-c", dir, "init" })
      ok_run({ "-c", dir, "sql", "CREATE SCHEMA s1; CREATE SCHEMA s2; CREATE TABLE s1.Foo(a INTEGER); CREATE TABLE s2.FOO(b INTEGER);" })
      local f = json(ok_run({ "-c", dir, "show", "Foo", "--json" }))
      assert.are.equal("s1", f.schema)
      assert.are.equal("s2", json(ok_run({ "-c", dir, "show", "FOO", "--json" })).schema)
      assert.are.equal("s2", json(ok_run({ "-c", dir, "show", "S2.foo", "--json" })).schema)
      local r = run({ "-c", dir, "show", "foo" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("table name 'foo' is ambiguous", 1, true), r.show)
      assert.truthy(r.err:find("s1.Foo", 1, true) and r.err:find("s2.FOO", 1, true), r.show)
    end)

    it("an unknown table: exit 1 naming it and listing the tables there are", function()
      local r = run({ "-c", catalog(S2), "show", "nosuch" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find(
        "moraine: no table 'nosuch' at snapshot 25 (tables: sales.clients, sales.orders, sales.tmp)\nhint: ", 1, true), r.show)
      r = run({ "-c", catalog(S2), "show", "main.orders" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("no table 'main.orders'", 1, true), r.show)
      r = run({ "-c", catalog(S2), "show", "customers" }) -- renamed to clients at 19
      assert.are.equal(1, r.code, r.show)
    end)

    it("a snapshot that does not exist: exit 1", function()
      local r = run({ "-c", catalog(S1), "show", "events", "--at", "100" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("snapshot 100 does not exist (snapshots: 0..20)", 1, true), r.show)
    end)
  end)

  describe("files", function()
    local function expected_files(s)
      local list = {}
      for _, f in ipairs(rows_of(FIX .. "/s1_evolution/expected", "list_files")) do
        if I(f.snapshot_id) == I(s) then list[#list + 1] = f end
      end
      return list
    end

    it("--at 17: the files of DuckLake's list_files for snapshot 17, with their full paths", function()
      local doc = json(ok_run({ "-c", catalog(S1), "files", "events", "--at", "17", "--json" }))
      local want = expected_files(17)
      assert.are.equal(#want, #doc)
      local paths = {}
      for _, f in ipairs(doc) do paths[f.path] = true end
      for _, w in ipairs(want) do assert.truthy(paths[w.data_file], w.data_file) end
    end)

    it("delete files and partition values as the fixture has them (every snapshot, tab-separated)", function()
      local c = catalog(S1)
      for _, s in ipairs({ 3, 9, 17, 18, 20 }) do
        local rows = tsv(ok_run({ "-c", c, "files", "events", "--at", tostring(s) }).out)
        local want = expected_files(s)
        assert.are.equal(#want, #rows, "snapshot " .. s)
        local by_path = {}
        for _, r in ipairs(rows) do by_path[r.path] = r end
        for _, w in ipairs(want) do
          local r = by_path[w.data_file]
          assert.truthy(r, w.data_file)
          assert.are.equal(w.data_file_size_bytes, r.file_size_bytes)
          if w.delete_file == moraine.null then assert.are.equal("\\N", r.delete_file) -- NULL, piped
          else assert.are.equal(w.delete_file, r.delete_file) end
        end
      end
      -- partition values of file 0 (year, month, day)
      local doc = json(ok_run({ "-c", c, "files", "events", "--at", "3", "--json" }))
      assert.are.same({ "2025", "3", "25" }, doc[1].partition_values)
      assert.are.equal(I(2), I(doc[1].partition_id))
    end)

    it("keeps NULL and empty partition values apart (s3)", function()
      local doc = json(ok_run({ "-c", catalog(S3), "files", "edge", "--at", "8", "--json" }))
      local saw_null, saw_empty = false, false
      for _, f in ipairs(doc) do
        for _, v in ipairs(f.partition_values) do
          if v == moraine.null then saw_null = true elseif v == "" then saw_empty = true end
        end
      end
      assert.is_true(saw_null)
      assert.is_true(saw_empty)
      -- piped, too: NULL \N, the empty string empty, a tab and a newline escaped
      local by_id = {}
      for _, r in ipairs(tsv(ok_run({ "-c", catalog(S3), "files", "edge", "--at", "8" }).out)) do
        by_id[r.data_file_id] = r["partition values"]
      end
      for _, f in ipairs(doc) do
        local v = f.partition_values[1]
        local want = v == moraine.null and "\\N" or v == "" and ""
          or v == "tab\tand\nnewline" and "tab\\tand\\nnewline" or nil
        if want then assert.are.equal(want, by_id[tostring(f.data_file_id)], tostring(f.data_file_id)) end
      end
      assert.are.equal("\\N", by_id["0"])
      assert.are.equal("tab\\tand\\nnewline", by_id["5"])
    end)

    it("on a terminal pads by UTF-8 characters: every path starts in the same column", function()
      local r = ok_run({ "-c", catalog(S3), "files", "edge", "--at", "8" }, { env = { MORAINE_FORCE_TTY = "1" } })
      local col, n = nil, 0
      local function ulen(s) return #s - select(2, s:gsub("[\128-\191]", "")) end
      local multibyte = false
      for line in r.out:gmatch("[^\n]+") do
        local i = line:find("data/", 1, true)
        if i then
          n = n + 1
          if line:sub(1, i - 1):find("[\128-\255]") then multibyte = true end
          local c = ulen(line:sub(1, i - 1))
          col = col or c
          assert.are.equal(col, c, line)
        end
      end
      assert.truthy(n > 2, r.out)
      assert.is_true(multibyte, "s3 has non-ASCII partition values:\n" .. r.out)
      -- the 300-character value is cut on a terminal, whole in --json
      assert.truthy(r.out:find(string.rep("x", 119) .. "…", 1, true), r.out)
      assert.is_nil(r.out:find(string.rep("x", 120), 1, true))
      local doc = json(ok_run({ "-c", catalog(S3), "files", "edge", "--at", "8", "--json" }))
      local long = false
      for _, f in ipairs(doc) do if f.partition_values[1] == string.rep("x", 300) then long = true end end
      assert.is_true(long)
    end)

    it("an unknown table or snapshot: exit 1", function()
      local r = run({ "-c", catalog(S1), "files", "evnts", "--at", "17" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("no table 'evnts' at snapshot 17 (tables: main.events)", 1, true), r.show)
      r = run({ "-c", catalog(S1), "files", "events", "--at", "0" }) -- exists, but events does not yet
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("no table 'events' at snapshot 0 (tables: none)", 1, true), r.show)
    end)
  end)

  describe("history", function()
    it("lists every partition spec version with partition 10 never visible (--json)", function()
      local doc = json(ok_run({ "-c", catalog(S1), "history", "events", "--json" }))
      local want = rows_of(S1, "ducklake_partition_info")
      assert.are.equal(#want, #doc.partition_specs)
      local by = {}
      for _, p in ipairs(doc.partition_specs) do by[tostring(p.partition_id)] = p end
      for _, w in ipairs(want) do
        local p = by[tostring(w.partition_id)]
        assert.truthy(p, tostring(w.partition_id))
        assert.are.equal(I(w.begin_snapshot), I(p.begin_snapshot))
        assert.are.equal(w.end_snapshot == moraine.null and "null" or tostring(w.end_snapshot),
          p.end_snapshot == moraine.null and "null" or tostring(p.end_snapshot))
        assert.are.equal(w.end_snapshot ~= moraine.null and I(w.end_snapshot) == I(w.begin_snapshot), p.never_visible)
      end
      assert.is_true(by["10"].never_visible)
      assert.are.equal("day(ts)", by["10"].keys)
      assert.are.equal("region, bucket(4, id)", by["4"].keys) -- named as of the spec's own snapshot
      assert.are.equal(3, #doc.sort_specs)
    end)

    it("gives the mixed layout: live files, rows and bytes per partition spec, from the fixture", function()
      local live = {}
      for _, f in ipairs(rows_of(S1, "ducklake_data_file")) do
        if f.end_snapshot == moraine.null then
          local k = f.partition_id == moraine.null and "null" or tostring(f.partition_id)
          local g = live[k] or { files = 0, rows = 0, bytes = 0 }
          g.files, g.rows, g.bytes = g.files + 1, g.rows + f.record_count, g.bytes + f.file_size_bytes
          live[k] = g
        end
      end
      local doc = json(ok_run({ "-c", catalog(S1), "history", "events", "--json" }))
      assert.are.equal(count(live), #doc.layout)
      for _, g in ipairs(doc.layout) do
        local k = g.partition_id == moraine.null and "null" or tostring(g.partition_id)
        assert.truthy(live[k], k)
        assert.are.equal(I(live[k].files), I(g.files), k)
        assert.are.equal(I(live[k].rows), I(g.rows), k)
        assert.are.equal(I(live[k].bytes), I(g.bytes), k)
      end
      local eleven
      for _, g in ipairs(doc.layout) do if tostring(g.partition_id) == "11" then eleven = g end end
      assert.are.equal("live", eleven.state)
      assert.are.equal(I(live["11"].files), I(eleven.files))
    end)

    it("prints the timeline and the layout as text", function()
      local r = ok_run({ "-c", catalog(S1), "history", "events" })
      assert.truthy(r.out:find("\n10\t17\t17\tday(ts)\tnever visible\n", 1, true), r.out)
      assert.truthy(r.out:find("\n11\t17\tlive\thour(ts)\t\n", 1, true), r.out)
      -- RESET SORTED BY at 15 ended sort spec 8 with none after it
      assert.truthy(r.out:find("\n8\t13\t15\tamount DESC NULLS_LAST, area ASC NULLS_LAST\tthen unsorted (reset)\n", 1, true), r.out)
      local n11 = 0
      for _, f in ipairs(rows_of(S1, "ducklake_data_file")) do
        if f.end_snapshot == moraine.null and f.partition_id ~= moraine.null and I(f.partition_id) == I(11) then
          n11 = n11 + 1
        end
      end
      assert.truthy(r.out:find("\n11\thour(ts)\tlive\t" .. n11 .. "\t", 1, true), r.out)
    end)

    -- The keys of partition spec @pid of table @tid in DuckLake's SQL form, each
    -- column named as ducklake_column named it at snapshot @at (from the NDJSON).
    local function fixture_keys(src, tid, pid, at)
      local keys = {}
      for _, k in ipairs(rows_of(src, "ducklake_partition_column")) do
        if I(k.partition_id) == I(pid) and I(k.table_id) == I(tid) then keys[#keys + 1] = k end
      end
      table.sort(keys, function(a, b) return I(a.partition_key_index) < I(b.partition_key_index) end)
      local parts = {}
      for i, k in ipairs(keys) do
        local name
        for _, c in ipairs(rows_of(src, "ducklake_column")) do
          if I(c.table_id) == I(tid) and I(c.column_id) == I(k.column_id) and support.visible(c, at) then name = c.column_name end
        end
        local fn, arg = k.transform:match("^(%w+)%((.*)%)$")
        if k.transform == "identity" then parts[i] = name
        elseif fn then parts[i] = fn .. "(" .. arg .. ", " .. name .. ")"
        else parts[i] = k.transform .. "(" .. name .. ")" end
      end
      return #parts > 0 and table.concat(parts, ", ") or moraine.null
    end

    it("names a spec's columns as of the spec's own begin snapshot, the same in the timeline and the layout", function()
      local doc = json(ok_run({ "-c", catalog(S1), "history", "events", "--json" }))
      local begins = {}
      for _, p in ipairs(rows_of(S1, "ducklake_partition_info")) do begins[tostring(p.partition_id)] = p.begin_snapshot end
      local timeline = {}
      for _, p in ipairs(doc.partition_specs) do
        local want = fixture_keys(S1, 1, p.partition_id, begins[tostring(p.partition_id)])
        assert.are.equal(want, p.keys, "spec " .. tostring(p.partition_id))
        timeline[tostring(p.partition_id)] = p.keys
      end
      local renamed = 0
      for _, g in ipairs(doc.layout) do
        if g.partition_id ~= moraine.null then
          assert.are.equal(timeline[tostring(g.partition_id)], g.keys, "layout of spec " .. tostring(g.partition_id))
          -- a spec whose column was renamed after it was set keeps the old name (as of the last snapshot it differs)
          local now = fixture_keys(S1, 1, g.partition_id, doc.last_snapshot)
          if now ~= g.keys then renamed = renamed + 1 end
        end
      end
      assert.is_true(renamed > 0, "the fixture should hold a live file under a spec on a column renamed later")
      -- the text form: the layout line of such a spec uses the same words as its timeline line
      local out = ok_run({ "-c", catalog(S1), "history", "events" }).out
      for _, g in ipairs(doc.layout) do
        if g.partition_id ~= moraine.null then
          local k = tostring(g.partition_id)
          assert.truthy(out:find("\n" .. k .. "\t[^\n]*\t" .. g.keys:gsub("%p", "%%%0") .. "\t"), k .. "\n" .. out)
          assert.truthy(out:find("\n" .. k .. "\t" .. g.keys:gsub("%p", "%%%0") .. "\t"), k .. "\n" .. out)
        end
      end
    end)

    it("counts the unpartitioned group apart from the partition specs", function()
      local doc = json(ok_run({ "-c", catalog(S1), "history", "events", "--json" }))
      local last = doc.last_snapshot
      local files, unpart, specs = 0, 0, {}
      for _, f in ipairs(rows_of(S1, "ducklake_data_file")) do
        if support.visible(f, last) then
          files = files + 1
          if f.partition_id == moraine.null then unpart = unpart + 1 else specs[tostring(f.partition_id)] = true end
        end
      end
      assert.is_true(unpart > 0 and count(specs) > 0, "the fixture should have both kinds of live file")
      assert.are.equal(I(files), I(doc.layout_files))
      assert.are.equal(I(unpart), I(doc.unpartitioned_files))
      assert.are.equal(I(count(specs)), I(doc.layout_specs))
      for _, g in ipairs(doc.layout) do
        if g.partition_id == moraine.null then
          assert.are.equal("none", g.partition_state)
          assert.are.equal(moraine.null, g.keys)
        end
      end
      local out = ok_run({ "-c", catalog(S1), "history", "events" }).out
      local line = ("layout at snapshot %s: %d live files (%d under %d partition specs, %d unpartitioned)\n"):format(
        tostring(last), files, files - unpart, count(specs), unpart)
      assert.truthy(out:find(line, 1, true), line .. "\n" .. out)
      assert.truthy(out:find("\n\\N\tunpartitioned\t", 1, true), out) -- partition_id NULL, piped
    end)

    it("--at S: the timeline as known at S and the layout at S", function()
      local doc = json(ok_run({ "-c", catalog(S1), "history", "events", "--at", "12", "--json" }))
      assert.are.equal(I(12), I(doc.last_snapshot))
      assert.are.equal(I(12), I(doc.layout_snapshot))
      local want = 0
      for _, p in ipairs(rows_of(S1, "ducklake_partition_info")) do if I(p.begin_snapshot) <= 12 then want = want + 1 end end
      assert.are.equal(want, #doc.partition_specs)
      for _, p in ipairs(doc.partition_specs) do
        -- the spec live at 12 shows as live (its end comes later)
        local row
        for _, r in ipairs(rows_of(S1, "ducklake_partition_info")) do if I(r.partition_id) == I(p.partition_id) then row = r end end
        if support.visible(row, 12) then assert.are.equal(moraine.null, p.end_snapshot) end
      end
      local n = 0
      for _, f in ipairs(rows_of(S1, "ducklake_data_file")) do if support.visible(f, 12) then n = n + 1 end end
      assert.are.equal(I(n), I(doc.layout_files))
    end)

    describe("a dropped table (s2: sales.tmp dropped, then re-created under the same name)", function()
      -- the two tmp tables, from the fixture
      local function tmps()
        local old, new
        for _, t in ipairs(rows_of(S2, "ducklake_table")) do
          if t.table_name == "tmp" then
            if t.end_snapshot ~= moraine.null then old = t else new = t end
          end
        end
        return old, new
      end

      it("show and files reach it with --at S and by #ID, with its own columns and files", function()
        local old, new = tmps()
        assert.truthy(old and new and I(old.table_id) ~= I(new.table_id))
        local S = I(old.end_snapshot) - 1
        local want_cols, want_files = {}, {}
        for _, c in ipairs(rows_of(S2, "ducklake_column")) do
          if I(c.table_id) == I(old.table_id) and support.visible(c, S) then want_cols[#want_cols + 1] = c.column_name end
        end
        for _, f in ipairs(rows_of(S2, "ducklake_data_file")) do
          if I(f.table_id) == I(old.table_id) and support.visible(f, S) then want_files[#want_files + 1] = tostring(f.data_file_id) end
        end
        table.sort(want_files)
        for _, ref in ipairs({ "tmp", "sales.tmp", "#" .. tostring(old.table_id) }) do
          local d = json(ok_run({ "-c", catalog(S2), "show", ref, "--at", tostring(S), "--json" }))
          assert.are.equal(I(old.table_id), I(d.table_id), ref)
          local names = {}
          for i, c in ipairs(d.columns) do names[i] = c.name end
          table.sort(names)
          table.sort(want_cols)
          assert.are.same(want_cols, names, ref)
          local fl = json(ok_run({ "-c", catalog(S2), "files", ref, "--at", tostring(S), "--json" }))
          local ids = {}
          for i, f in ipairs(fl) do ids[i] = tostring(f.data_file_id) end
          table.sort(ids)
          assert.are.same(want_files, ids, ref)
        end
        -- at the newest snapshot the name is the re-created table
        assert.are.equal(I(new.table_id), I(json(ok_run({ "-c", catalog(S2), "show", "tmp", "--json" })).table_id))
        -- #ID where the table is not live: exit 1 saying when it was
        local r = run({ "-c", catalog(S2), "show", "#" .. tostring(old.table_id) })
        assert.are.equal(1, r.code, r.show)
        local span = tostring(old.begin_snapshot) .. ".." .. tostring(S)
        assert.truthy(r.err:find("is not live at snapshot", 1, true) and r.err:find("(it was live at " .. span .. ")", 1, true), r.show)
        -- --table-id ID is the same as #ID (which a shell would read as a comment unquoted)
        for _, c in ipairs({ "show", "files", "history" }) do
          local a = ok_run({ "-c", catalog(S2), c, "#" .. tostring(old.table_id), "--at", tostring(S), "--json" }).out
          local b = ok_run({ "-c", catalog(S2), c, "--table-id", tostring(old.table_id), "--at", tostring(S), "--json" }).out
          assert.are.equal(a, b, c)
        end
        r = run({ "-c", catalog(S2), "show", "tmp", "--table-id", tostring(old.table_id) })
        assert.are.equal(2, r.code, r.show)
        r = run({ "-c", catalog(S2), "show", "--table-id", "x" })
        assert.are.equal(2, r.code, r.show)
        r = run({ "-c", catalog(S2), "files", "#999" })
        assert.are.equal(1, r.code, r.show)
        assert.truthy(r.err:find("no table with table_id 999", 1, true), r.show)
      end)

      it("history reaches each tmp: by #ID, or by name with --at", function()
        local old, new = tmps()
        local S = I(old.end_snapshot) - 1
        local function pids(tid)
          local l = {}
          for _, p in ipairs(rows_of(S2, "ducklake_partition_info")) do
            if I(p.table_id) == I(tid) then l[#l + 1] = tostring(p.partition_id) end
          end
          table.sort(l)
          return l
        end
        local function got(doc)
          local l = {}
          for i, p in ipairs(doc.partition_specs) do l[i] = tostring(p.partition_id) end
          table.sort(l)
          return l
        end
        local a = json(ok_run({ "-c", catalog(S2), "history", "#" .. tostring(old.table_id), "--json" }))
        assert.are.equal(I(old.table_id), I(a.table_id))
        assert.are.same(pids(old.table_id), got(a))
        assert.are.equal(I(S), I(a.layout_snapshot)) -- its layout at the last snapshot it was live at
        local n = 0
        for _, f in ipairs(rows_of(S2, "ducklake_data_file")) do
          if I(f.table_id) == I(old.table_id) and support.visible(f, S) then n = n + 1 end
        end
        assert.are.equal(I(n), I(a.layout_files))
        local b = json(ok_run({ "-c", catalog(S2), "history", "tmp", "--at", tostring(S), "--json" }))
        assert.are.equal(I(old.table_id), I(b.table_id))
        local c = json(ok_run({ "-c", catalog(S2), "history", "tmp", "--json" }))
        assert.are.equal(I(new.table_id), I(c.table_id))
        assert.are.same(pids(new.table_id), got(c))
      end)

      it("a name not there at S says when a table of that name was (renamed customers)", function()
        local r = run({ "-c", catalog(S2), "show", "customers" })
        assert.are.equal(1, r.code, r.show)
        local cust
        for _, t in ipairs(rows_of(S2, "ducklake_table")) do if t.table_name == "customers" then cust = t end end
        local span = tostring(cust.begin_snapshot) .. ".." .. tostring(I(cust.end_snapshot) - 1)
        assert.truthy(r.err:find("#" .. tostring(cust.table_id) .. " at " .. span, 1, true), r.show)
      end)
    end)

    it("an unknown table: exit 1 listing the tables", function()
      local r = run({ "-c", catalog(S1), "history", "nosuch" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("no table 'nosuch' at snapshot 20 (tables: main.events)", 1, true), r.show)
    end)
  end)

  describe("diff", function()
    it("16 -> 17: partition specs 10 and 11 added (10 never visible), spec 9 ended (--json)", function()
      local doc = json(ok_run({ "-c", catalog(S1), "diff", "16", "17", "--json" }))
      local added, removed = {}, {}
      for _, p in ipairs(doc.added.ducklake_partition_info) do added[#added + 1] = tostring(p.partition_id) end
      for _, p in ipairs(doc.removed.ducklake_partition_info) do removed[#removed + 1] = tostring(p.partition_id) end
      table.sort(added)
      assert.are.same({ "10", "11" }, added)
      assert.are.same({ "9" }, removed)
      -- the data files DuckLake wrote at 17 (begin_snapshot 17 in the fixture)
      local n = 0
      for _, f in ipairs(rows_of(S1, "ducklake_data_file")) do if I(f.begin_snapshot) == I(17) then n = n + 1 end end
      assert.are.equal(n, #doc.added.ducklake_data_file)
      assert.is_nil(doc.removed.ducklake_data_file)
      assert.are.equal(1, #doc.added.ducklake_snapshot)
      assert.are.equal(I(17), I(doc.added.ducklake_snapshot[1].snapshot_id))
    end)

    it("prints the rows and then a summary", function()
      local r = ok_run({ "-c", catalog(S1), "diff", "16", "17" })
      assert.truthy(r.out:match("^diff 16 %-> 17 %(each row as it was at 17%)\n"), r.out)
      local first = r.out:match("([^\n]*)\n$")
      assert.truthy(first:find("+2 partition specs (1 never visible), -1 partition spec", 1, true), first)
      assert.truthy(first:find("+27 data files", 1, true), first)
      assert.truthy(r.out:find("\n+ never visible\t10\t1\t17\t17\n", 1, true), r.out)
      assert.truthy(r.out:find("\n+\t11\t1\t17\t\\N\n", 1, true), r.out) -- end_snapshot NULL, piped
      assert.truthy(r.out:find("\n-\t9\t1\t16\t17\n", 1, true), r.out)
      -- over a longer span, versions that came and went are told apart from never-visible ones
      local long = ok_run({ "-c", catalog(S1), "diff", "0", "20" }).out:match("([^\n]*)\n$")
      assert.truthy(long:find("+7 partition specs (1 never visible, 5 ended again by 20)", 1, true), long)
      assert.truthy(long:find("+6 columns (1 ended again by 20)", 1, true), long)
    end)

    it("swapping the snapshots swaps added and removed (versions that came and went count one way only)", function()
      local a = json(ok_run({ "-c", catalog(S1), "diff", "3", "7", "--json" }))
      local b = json(ok_run({ "-c", catalog(S1), "diff", "7", "3", "--json" }))
      assert.are.equal(15 + 16, #a.added.ducklake_data_file) -- the inserts of snapshots 5 and 7
      assert.are.equal(#a.added.ducklake_data_file, #b.removed.ducklake_data_file)
      assert.are.equal(#a.removed.ducklake_partition_info, #b.added.ducklake_partition_info)
      -- sort spec 6 lived from 10 to 12: added (never visible at 12) going forward, absent going back
      local f = json(ok_run({ "-c", catalog(S1), "diff", "8", "12", "--json" }))
      local g = json(ok_run({ "-c", catalog(S1), "diff", "12", "8", "--json" }))
      local ids = {}
      for _, x in ipairs(f.added.ducklake_sort_info) do ids[#ids + 1] = tostring(x.sort_id) end
      assert.are.same({ "6", "7" }, ids)
      assert.are.equal(1, #g.removed.ducklake_sort_info)
      assert.are.equal(I(7), I(g.removed.ducklake_sort_info[1].sort_id))
      local same = json(ok_run({ "-c", catalog(S1), "diff", "5", "5", "--json" }))
      assert.are.equal(0, count(same.added))
      assert.are.equal(0, count(same.removed))
      assert.truthy(ok_run({ "-c", catalog(S1), "diff", "5", "5" }).out:find("no change", 1, true))
    end)

    it("shows each row as it was at S2: an end_snapshot set after S2 reads NULL", function()
      for _, pair in ipairs({ { 16, 17 }, { 3, 7 }, { 0, 20 }, { 17, 16 } }) do
        local s1, s2 = pair[1], pair[2]
        local doc = json(ok_run({ "-c", catalog(S1), "diff", tostring(s1), tostring(s2), "--json" }))
        local fixture = {}
        for _, f in ipairs(rows_of(S1, "ducklake_data_file")) do fixture[tostring(f.data_file_id)] = f end
        local later = 0
        for kind, rows in pairs({ added = doc.added.ducklake_data_file or {}, removed = doc.removed.ducklake_data_file or {} }) do
          for _, f in ipairs(rows) do
            local want = fixture[tostring(f.data_file_id)]
            local e = want.end_snapshot
            -- as at s2 (a row not visible at s2: as at the later of the two)
            local as_of = support.visible(want, s2) and s2 or math.max(s1, s2)
            if e ~= moraine.null and I(e) > as_of then
              later = later + 1
              e = moraine.null
            end
            assert.are.equal(e == moraine.null and "NULL" or tostring(e),
              f.end_snapshot == moraine.null and "NULL" or tostring(f.end_snapshot), kind .. " file " .. tostring(f.data_file_id))
            assert.are.equal(I(want.begin_snapshot), I(f.begin_snapshot))
          end
        end
        if s1 == 16 then assert.is_true(later > 0, "the fixture ends some files added at 17 later on") end
      end
      -- the text form too: a file added at 17 and ended later reads NULL (\N, piped)
      local r = ok_run({ "-c", catalog(S1), "diff", "16", "17" })
      local late
      for _, f in ipairs(rows_of(S1, "ducklake_data_file")) do
        if I(f.begin_snapshot) == I(17) and f.end_snapshot ~= moraine.null and I(f.end_snapshot) > 17 then late = f end
      end
      assert.truthy(late, "the fixture ends a file added at 17 later on")
      assert.truthy(r.out:find("\n+\t" .. tostring(late.data_file_id) .. "\t1\t17\t\\N\t", 1, true), r.out)
    end)

    it("--summary: counts per table and kind, the same as the rows of the full diff", function()
      for _, pair in ipairs({ { 16, 17 }, { 0, 20 }, { 7, 3 } }) do
        local a, b = tostring(pair[1]), tostring(pair[2])
        local full = json(ok_run({ "-c", catalog(S1), "diff", a, b, "--json" }))
        local sum = json(ok_run({ "-c", catalog(S1), "diff", a, b, "--summary", "--json" }))
        assert.are.equal(I(pair[1]), I(sum.from))
        assert.are.equal(I(pair[2]), I(sum.to))
        local seen = {}
        for _, t in ipairs(sum.tables) do
          seen[t.table] = true
          assert.are.equal(#(full.added[t.table] or {}), tonumber(t.added), t.table)
          assert.are.equal(#(full.removed[t.table] or {}), tonumber(t.removed), t.table)
        end
        for name in pairs(full.added) do assert.is_true(seen[name], name) end
        for name in pairs(full.removed) do assert.is_true(seen[name], name) end
      end
      -- data files added at 17, from the fixture
      local n = 0
      for _, f in ipairs(rows_of(S1, "ducklake_data_file")) do if I(f.begin_snapshot) == I(17) then n = n + 1 end end
      local rows = tsv(ok_run({ "-c", catalog(S1), "diff", "16", "17", "--summary" }).out)
      local df
      for _, r in ipairs(rows) do if r.table == "ducklake_data_file" then df = r end end
      assert.are.equal(tostring(n), df.added)
      assert.are.equal("0", df.removed)
      local pi
      for _, r in ipairs(rows) do if r.table == "ducklake_partition_info" then pi = r end end
      assert.are.same({ "2", "1", "1" }, { pi.added, pi.removed, pi["never visible"] })
      -- no rows printed, only the counts and the summary line
      local out = ok_run({ "-c", catalog(S1), "diff", "16", "17", "--summary" }).out
      assert.is_nil(out:find("parquet", 1, true))
      assert.truthy(out:find("\ndiff 16 -> 17: +1 snapshot", 1, true), out)
    end)

    it("progress goes to stderr with --progress (wall-clock time), never to stdout", function()
      local plain = ok_run({ "-c", catalog(S1), "diff", "0", "20" })
      assert.are.equal("", plain.err)
      local r = ok_run({ "-c", catalog(S1), "diff", "0", "20", "--progress" })
      assert.are.equal(plain.out, r.out)
      assert.truthy(r.err:find("\rdiff 0 %-> 20: 0/%d+ entries %(0%%%)"), r.err)
      assert.truthy(r.err:match("\rdiff 0 %-> 20: [%d,]+ entries in %d+%.%ds%s*\n$"), r.err)
    end)

    it("a snapshot that does not exist: exit 1", function()
      local r = run({ "-c", catalog(S1), "diff", "16", "42" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("snapshot 42 does not exist (snapshots: 0..20)", 1, true), r.show)
    end)
  end)

  describe("verify", function()
    it("a sound catalog: ok with the number of entries, exit 0", function()
      local r = run({ "-c", catalog(S1), "verify" })
      assert.are.equal(0, r.code, r.show)
      local n = r.out:match("^ok: (%d+) entries checked, no violation\n$")
      assert.truthy(n, r.out)
      assert.truthy(tonumber(n) > 100)
      local doc = json(ok_run({ "-c", catalog(S1), "verify", "--json" }))
      assert.is_true(doc.ok)
      assert.are.equal(0, #doc.violations)
      assert.are.equal(I(tonumber(n)), I(doc.entries))
    end)

    it("a damaged catalog: each violation as KEY: problem, exit 1", function()
      local dir = support.tmpdir("damaged")
      ok_run({ "-c", dir, "import", S1 })
      -- flip a byte inside every copy of one data file's path in the LMDB file
      local f = assert(io.open(dir .. "/data.mdb", "rb"))
      local bytes = f:read("*a")
      f:close()
      local n
      bytes, n = bytes:gsub("day=26/ducklake", "day=26/duckXake")
      assert.truthy(n > 0)
      f = assert(io.open(dir .. "/data.mdb", "wb"))
      f:write(bytes)
      f:close()
      local r = run({ "-c", dir, "verify" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.out:find("^C%([%d,]+%): ducklake_data_file: [^\n]+\n"), r.out)
      assert.truthy(r.err:find("1 violation found", 1, true), r.show)
      local j = run({ "-c", dir, "verify", "--json" })
      assert.are.equal(1, j.code)
      local doc = json(j)
      assert.is_false(doc.ok)
      assert.are.equal(1, #doc.violations)
      -- reading the damaged row is refused, with a hint to verify
      r = run({ "-c", dir, "files", "events" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("ECORRUPT", 1, true), r.show)
      assert.truthy(r.err:find("moraine verify", 1, true), r.show)
    end)

    it("shows progress on stderr only on a terminal", function()
      local quiet = ok_run({ "-c", catalog(S1), "verify" })
      assert.are.equal("", quiet.err)
      local loud = ok_run({ "-c", catalog(S1), "verify" }, { env = { MORAINE_FORCE_TTY = "1" } })
      assert.truthy(loud.err:find("\rverifying: ", 1, true), loud.show)
      assert.truthy(loud.err:find("entries/s", 1, true), loud.show)
    end)
  end)

  describe("stats", function()
    it("entries and bytes per subspace and table, with totals that add up", function()
      local r = run({ "-c", catalog(S1), "stats", "--json" })
      assert.are.equal(0, r.code, r.show)
      local doc = json(r)
      local e, k, v = 0, 0, 0
      local subspaces = {}
      for _, s in ipairs(doc.stats) do
        e, k, v = e + s.entries, k + s.key_bytes, v + s.value_bytes
        subspaces[s.subspace] = true
      end
      assert.truthy(e > 0 and k > 0 and v > 0)
      assert.are.equal(I(e), I(doc.total.entries))
      assert.are.equal(I(k), I(doc.total.key_bytes))
      assert.are.equal(I(v), I(doc.total.value_bytes))
      for _, s in ipairs({ "C", "H", "S", "R", "M" }) do assert.truthy(subspaces[s], s) end
      -- the snapshot subspace holds one entry per snapshot
      for _, s in ipairs(doc.stats) do
        if s.subspace == "S" then assert.are.equal(I(21), I(s.entries)) end
      end
      local rows = tsv(ok_run({ "-c", catalog(S1), "stats" }).out)
      local total = rows[#rows]
      assert.are.equal("total", total.subspace)
      assert.are.equal(tostring(e), total.entries)
    end)
  end)

  describe("repl", function()
    it("evaluates expressions and statements from a piped stdin with db, moraine and the helpers", function()
      local input = table.concat({
        '#scan("ducklake_table")',
        '#scan("ducklake_snapshot")',
        'n = #scan("ducklake_partition_info", {at = moraine.ALL})',
        'n * 10',
        'db:last_snapshot()',
        'at(17)',
        '#files("events")',
        'spec("events").partition',
        'at(9)',
        'spec("events").partition_id',
        't = {}',
        'for i = 1, 3 do',
        '  t[i] = i * i',
        'end',
        '#t, t[3]',
        'error("boom")',
        'at(99)',
        '"still here"',
        'show(scan("ducklake_table"))',
        '.exit',
        '"not reached"',
      }, "\n") .. "\n"
      local r = run({ "-c", catalog(S1), "repl" }, { stdin = input })
      assert.are.equal(1, r.code, r.show) -- two lines failed: exit 1, as sqlite3 does
      local lines = {}
      for l in r.out:gmatch("[^\n]+") do lines[#lines + 1] = l end
      assert.are.equal("1", lines[1], r.show)
      assert.are.equal("21", lines[2], r.show)
      assert.are.equal("70", lines[3], r.show)
      assert.are.equal("20", lines[4], r.show)
      assert.are.equal("17", lines[5], r.show)
      assert.are.equal("67", lines[6], r.show) -- DuckLake's list_files count at 17
      assert.are.equal('"hour(ts)"', lines[7], r.show)
      assert.are.equal("9", lines[8], r.show)
      assert.are.equal("5", lines[9], r.show)
      assert.are.equal("3\t9", lines[10], r.show)
      assert.are.equal('"still here"', lines[11], r.show)
      assert.truthy(lines[12]:find("^table_id%s+table_uuid%s+begin_snapshot"), r.show)
      assert.truthy(r.out:find("events", 1, true))
      assert.is_nil(r.out:find("not reached", 1, true))
      local errs = {}
      for l in r.err:gmatch("[^\n]+") do errs[#errs + 1] = l end
      assert.are.equal(2, #errs, r.show)
      assert.truthy(errs[1]:match("^error: .*boom$"), r.show)
      assert.are.equal("error: snapshot 99 does not exist (snapshots: 0..20)", errs[2])
    end)

    it("files(T) and spec(T) refuse a second argument (a snapshot is chosen with at(S)) instead of ignoring it", function()
      local r = run({ "-c", catalog(S1), "repl" }, { stdin = 'files("events", 9)\nspec("events", 9)\nat(9)\n#files("events")\n' })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("files takes one argument, the table; choose the snapshot with at(S) first", 1, true), r.show)
      assert.truthy(r.err:find("spec takes one argument", 1, true), r.show)
      assert.are.equal("9\n38\n", r.out)
    end)

    it("files(ID) and spec(ID) refuse a table_id no table has, or one not live at at()'s snapshot, as files and show do",
      function()
      local r = run({ "-c", catalog(S1), "repl" }, { stdin = "spec(999)\nfiles(999)\n#files(1)\nspec(1).partition_state\n" })
      assert.are.equal(1, r.code, r.show)
      local _, n = r.err:gsub("no table with table_id 999 in the catalog", "")
      assert.are.equal(2, n, r.show)
      assert.truthy(r.out:find("68\n\"partitioned\"", 1, true), r.show)
    end)

    it("on a terminal, Ctrl-C at the prompt (or in the middle of a statement) cancels the line; the session goes on",
      function()
      -- stdin a FIFO this test holds open, MORAINE_FORCE_TTY=1 for the terminal; before, the first Ctrl-C at the
      -- prompt ended the session with exit 130 (a new user's report)
      local dir = support.tmpdir("repl-int")
      support.mkdir(dir)
      local fifo = dir .. "/in"
      assert.is_true(support.sh("mkfifo " .. q(fifo)))
      local cmd = support.moraine_cmd({ "-c", catalog(S1), "repl" }):gsub("MORAINE_FORCE_TTY= ", "MORAINE_FORCE_TTY=1 ")
      support.write(dir .. "/run.sh", "echo $$ > " .. q(dir .. "/pid") .. "\nexec " .. cmd .. "\n")
      os.execute("(sh " .. q(dir .. "/run.sh") .. " <" .. q(fifo) .. " >" .. q(dir .. "/out") .. " 2>" .. q(dir .. "/err")
        .. "; echo $? >" .. q(dir .. "/rc")  .. ") &")
      local w = assert(io.open(fifo, "w"))
      w:setvbuf("no")
      local function rd(name)
        local f = io.open(dir .. "/" .. name, "rb")
        if not f then return "" end
        local t = f:read("a")
        f:close()
        return t
      end
      local function out_has(text)
        for _ = 1, 300 do
          if rd("out"):find(text, 1, true) then return true end
          os.execute("sleep 0.02")
        end
        return false
      end
      w:write("1 + 41\n")
      assert.is_true(out_has("42\n"), rd("out"))
      local pid = rd("pid"):match("%d+")
      w:write("at(1\n") -- an unfinished statement: the prompt becomes '>> '
      assert.is_true(out_has(">> "), rd("out"))
      os.execute("kill -INT " .. pid)
      os.execute("sleep 0.2")
      os.execute("kill -INT " .. pid) -- and a second one at the fresh prompt
      os.execute("sleep 0.2")
      w:write("2 + 98\n")
      assert.is_true(out_has("100\n"), rd("out") .. rd("err"))
      w:close()
      for _ = 1, 300 do
        if rd("rc") ~= "" then break end
        os.execute("sleep 0.02")
      end
      assert.are.equal("0", (rd("rc"):match("%d+")), rd("err"))
    end)

    it("ends at end of input with exit 0", function()
      local r = ok_run({ "-c", catalog(S1), "repl" }, { stdin = "1 + 1\n" })
      assert.are.equal("2\n", r.out)
    end)

    it("piped input: exit 1 when any line failed (error, syntax error, unfinished statement), the rest still runs", function()
      for _, case in ipairs({
        { input = 'error("x")\n1 + 1\n', out = "2\n", errs = 1 },
        { input = '1 +* 2\n"after"\n', out = '"after"\n', errs = 1 },
        { input = '"first"\nfor i = 1, 2 do\n', out = '"first"\n', errs = 1 },
        { input = 'scan("no_such_table")\nat(99)\n3\n', out = "3\n", errs = 2 },
      }) do
        local r = run({ "-c", catalog(S1), "repl" }, { stdin = case.input })
        assert.are.equal(1, r.code, r.show)
        assert.are.equal(case.out, r.out, r.show)
        local n = 0
        for _ in r.err:gmatch("error: [^\n]+\n") do n = n + 1 end
        assert.are.equal(case.errs, n, r.show)
      end
      -- the same lines without the failing ones: exit 0
      assert.are.equal(0, run({ "-c", catalog(S1), "repl" }, { stdin = '1 + 1\n"after"\n' }).code)
    end)
  end)

  describe("the catalog directory", function()
    it("a read command on a directory that does not exist: exit 1, never created", function()
      local dir = support.tmpdir("nocat")
      for _, args in ipairs({ { "snapshots" }, { "tables" }, { "show", "events" }, { "files", "events" },
        { "history", "events" }, { "diff", "0", "1" }, { "verify" }, { "stats" }, { "repl" },
        { "export", dir .. "-out" } }) do
        local full = { "-c", dir }
        for _, a in ipairs(args) do full[#full + 1] = a end
        local r = run(full)
        assert.are.equal(1, r.code, args[1] .. ": " .. r.show)
        assert.truthy(r.err:find("moraine: no catalog at " .. dir .. "; run 'moraine init' or 'moraine import'\nhint: ",
          1, true), r.show)
        assert.is_false(exists(dir), args[1])
      end
      assert.is_false(exists(dir .. "-out"))
    end)

    it("comes from --catalog, then $MORAINE_CATALOG, then ./catalog.moraine", function()
      local c = catalog(S1)
      local r = ok_run({ "tables", "--json" }, { env = { MORAINE_CATALOG = c } })
      assert.are.equal("events", json(r)[1].table)
      r = ok_run({ "--catalog", c, "tables", "--json" }, { env = { MORAINE_CATALOG = "/nonexistent" } })
      assert.are.equal("events", json(r)[1].table)
      r = ok_run({ "tables", "--catalog=" .. c, "--at=9", "--json" })
      assert.are.equal(I(5), I(json(r)[1].partition_id))
      local cwd = support.tmpdir("cwd")
      support.mkdir(cwd)
      r = run({ "tables" }, { cwd = cwd })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("no catalog at catalog.moraine", 1, true), r.show)
      ok_run({ "-c", cwd .. "/catalog.moraine", "import", S2 })
      r = ok_run({ "tables", "--json" }, { cwd = cwd })
      assert.are.equal(3, #json(r))
    end)

    it("a catalog directory that holds no snapshot is refused for reads", function()
      local dir = support.tmpdir("emptycat")
      moraine.open(dir):close()
      local r = run({ "-c", dir, "tables" })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("is empty", 1, true), r.show)
    end)
  end)

  -- Tab-separated output (stdout not a terminal) is exact, in PostgreSQL's
  -- COPY text format; decoded here independently of moraine.cli.output.
  describe("text output of catalog values", function()
    -- a cell decoded as COPY text: \N alone is NULL, \\ \n \t \r \xNN escapes
    local function copy_decode(c)
      if c == "\\N" then return moraine.null end
      local out, i = {}, 1
      while i <= #c do
        local ch = c:sub(i, i)
        if ch ~= "\\" then
          out[#out + 1], i = ch, i + 1
        else
          local nx = c:sub(i + 1, i + 1)
          if nx == "x" then
            local hex = assert(c:match("^%x%x", i + 2), "bad \\x escape in " .. c)
            out[#out + 1], i = string.char(tonumber(hex, 16)), i + 4
          else
            local simple = ({ n = "\n", t = "\t", r = "\r", ["\\"] = "\\" })[nx]
            assert(simple, "unexpected escape \\" .. nx .. " in " .. c)
            out[#out + 1], i = simple, i + 2
          end
        end
      end
      return table.concat(out)
    end
    local function split(line)
      local cells = {}
      for c in (line .. "\t"):gmatch("([^\t]*)\t") do cells[#cells + 1] = c end
      return cells
    end

    -- commit messages of snapshots 1..#CASES (snapshot 0, made by init, has none: NULL)
    local CASES = {
      { what = "NULL", value = moraine.null, piped = "\\N", shown = "NULL" },
      { what = "the string 'NULL'", value = "NULL", piped = "NULL", shown = "NULL" },
      { what = "the empty string", value = "", piped = "", shown = "" },
      { what = "a newline", value = "a\nb", piped = "a\\nb", shown = "a\\nb" },
      { what = "a backslash and n", value = "a\\nb", piped = "a\\\\nb", shown = "a\\\\nb" },
      { what = "a tab", value = "a\tb", piped = "a\\tb", shown = "a\\tb" },
      { what = "a backslash and N", value = "\\N", piped = "\\\\N", shown = "\\\\N" },
      { what = "a trailing backslash", value = "x\\", piped = "x\\\\", shown = "x\\\\" },
      { what = "CR, other control bytes, DEL", value = "x\r\1\31\127y", piped = "x\\r\\x01\\x1f\\x7fy",
        shown = "x\\r\\x01\\x1f\\x7fy" },
      { what = "UTF-8", value = "grüße 東京", piped = "grüße 東京", shown = "grüße 東京" },
    }
    local cat
    local function messages_catalog()
      if cat then return cat end
      cat = support.tmpdir("cells")
      local db = moraine.open(cat)
      db:init()
      for i, c in ipairs(CASES) do
        db:exec("CREATE SCHEMA s" .. i, { author = "w" .. i, message = c.value ~= moraine.null and c.value or nil })
      end
      db:close()
      return cat
    end

    it("snapshots, piped: one line per row, NULL \\N, backslash \\\\, control bytes escaped, each value apart", function()
      local out = ok_run({ "-c", messages_catalog(), "snapshots" }).out
      local lines = {}
      for l in out:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
      assert.are.equal(#CASES + 2, #lines, out) -- title line, snapshot 0, one per case
      local header = split(lines[1])
      assert.are.equal("commit_message", header[8])
      local seen = {}
      for i, c in ipairs(CASES) do
        local cells = split(lines[i + 2])
        assert.are.equal(#header, #cells, c.what .. ": " .. lines[i + 2])
        assert.are.equal(tostring(i), cells[1])
        assert.are.equal("w" .. i, cells[7])
        assert.are.equal(c.piped, cells[8], c.what)
        assert.are.equal(c.value, copy_decode(cells[8]), c.what) -- decodes to the catalog's value
        assert.is_nil(seen[cells[8]], c.what .. " prints as " .. tostring(seen[cells[8]]) .. " does")
        seen[cells[8]] = c.what
        assert.are.equal("\\N", cells[9], c.what) -- commit_extra_info NULL
      end
      -- snapshot 0: author, message and extra info NULL
      local zero = split(lines[2])
      assert.are.same({ "\\N", "\\N", "\\N" }, { zero[7], zero[8], zero[9] })
    end)

    it("snapshots on a terminal: NULL shows as NULL (like 'NULL'), the escapes as when piped", function()
      local out = ok_run({ "-c", messages_catalog(), "snapshots" }, { env = { MORAINE_FORCE_TTY = "1" } }).out
      local lines = {}
      for l in out:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
      assert.are.equal(#CASES + 3, #lines, out) -- titles, rule, snapshot 0, one per case
      for i, c in ipairs(CASES) do
        local line = lines[i + 3]
        assert.truthy(line:match("^%s*" .. i .. "%s"), line)
        -- the message follows the author, padded
        local msg = line:match("  w" .. i .. "  +(.-)  +NULL$")
        assert.are.equal(c.shown, msg, c.what .. ": " .. line)
      end
    end)

    it("diff, piped: the rows' cells as snapshots prints them (spooled, not escaped twice)", function()
      local out = ok_run({ "-c", messages_catalog(), "diff", "0", tostring(#CASES) }).out
      local section = out:match("\nducklake_snapshot_changes:\n(.-)\n\n")
      assert.truthy(section, out)
      local lines = {}
      for l in (section .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
      assert.are.equal(#CASES + 1, #lines, section)
      local header = split(lines[1])
      local col = {}
      for i, h in ipairs(header) do col[h] = i end
      assert.truthy(col.commit_message and col.author, lines[1])
      for i, c in ipairs(CASES) do
        local cells = split(lines[i + 1])
        assert.are.equal(#header, #cells, c.what)
        assert.are.equal("w" .. i, cells[col.author])
        assert.are.equal(c.piped, cells[col.commit_message], c.what)
        assert.are.equal("\\N", cells[col.commit_extra_info], c.what)
      end
    end)

    it("show and tables, piped: names and sort expressions escaped once; --json exact", function()
      local dir = support.tmpdir("names")
      ok_run({ "-c", dir, "init" })
      ok_run({ "-c", dir, "sql", 'CREATE TABLE t("a\\b" INTEGER, "x\ny" INTEGER); '
        .. 'ALTER TABLE t SET SORTED BY ("a\\b", "x\ny" DESC)' })
      local sh = ok_run({ "-c", dir, "show", "t" }).out
      -- (default_value is the string 'NULL', as DuckDB writes it for no default)
      assert.truthy(sh:find("\n1\ta\\\\b\tint32\ttrue\tNULL\n", 1, true), sh)
      assert.truthy(sh:find("\n2\tx\\ny\tint32\ttrue\tNULL\n", 1, true), sh)
      assert.truthy(sh:find('\nsort spec 2 (since snapshot 2): "a\\\\b" ASC NULLS_LAST, "x\\ny" DESC NULLS_LAST\n', 1, true), sh)
      assert.truthy(sh:find('\n0\t"a\\\\b"\tASC\tNULLS_LAST\tduckdb\n', 1, true), sh)
      local rows = tsv(ok_run({ "-c", dir, "tables" }).out)
      assert.are.equal('"a\\\\b" ASC NULLS_LAST, "x\\ny" DESC NULLS_LAST', rows[1]["sort spec"])
      local doc = json(ok_run({ "-c", dir, "tables", "--json" }))
      assert.are.equal('"a\\b" ASC NULLS_LAST, "x\ny" DESC NULLS_LAST', doc[1].sort)
    end)
  end)
end)

describe("moraine.cli.output's cells", function()
  it("cell: the exact form as COPY text, the aligned one with NULL as NULL; nil empty in both", function()
    local output = require "moraine.cli.output"
    local cases = { -- value, exact, aligned
      { moraine.null, "\\N", "NULL" }, { "NULL", "NULL", "NULL" }, { "", "", "" }, { "\\N", "\\\\N", "\\\\N" },
      { "a\nb", "a\\nb", "a\\nb" }, { "a\\nb", "a\\\\nb", "a\\\\nb" }, { "\t\r", "\\t\\r", "\\t\\r" },
      { "\0\1\27\31\127", "\\x00\\x01\\x1b\\x1f\\x7f", "\\x00\\x01\\x1b\\x1f\\x7f" },
      { "é\255\128", "é\255\128", "é\255\128" }, -- bytes >= 0x80 as they are, UTF-8 or not
      { { json = '{"a":"b\\nc"}' }, '{"a":"b\\\\nc"}', '{"a":"b\\\\nc"}' }, -- a JSON value's text escaped too
      { 42, "42", "42" }, { true, "true", "true" },
    }
    for _, c in ipairs(cases) do
      local what = string.format("%q", type(c[1]) == "table" and c[1].json or tostring(c[1]))
      assert.are.equal(c[2], output.cell(c[1], true), what)
      assert.are.equal(c[3], output.cell(c[1]), what)
    end
    -- nil: a cell that does not apply to its row (not a catalog value)
    assert.are.equal("", output.cell(nil, true))
    assert.are.equal("", output.cell(nil))
  end)

  it("print_table piped: one line per row, exact cells; a text column printed as given", function()
    local output = require "moraine.cli.output"
    local f = io.tmpfile()
    output.print_table({ { key = "a" }, { key = "b", text = true } },
      { { a = moraine.null, b = "x\\y" }, { a = "NULL", b = "\\N" }, { a = "", b = nil }, { a = "1\n2\t3" } },
      { out = f, aligned = false })
    f:seek("set", 0)
    local text = f:read("a")
    f:close()
    assert.are.equal("a\tb\n\\N\tx\\y\nNULL\t\\N\n\t\n1\\n2\\t3\t\n", text)
  end)
end)

describe("moraine.cli.output's JSON", function()
  -- J's own writing of common scalars (no C call) must give moraine.json_encode's text
  it("writes every scalar exactly as moraine.json_encode does", function()
    local output = require "moraine.cli.output"
    output.json_ready()
    local has_ffi, ffi = pcall(require, "ffi")
    local values = { "", "a", "plain text 123", 'q"uote', "back\\slash", "tab\tnl\n", "\0nul", "del\127", "é", "日本",
      "/slash", "[x]", "~", " ", "9223372036854775807", 0, 1, -1, 42, 2 ^ 53, -2 ^ 53, 2 ^ 53 - 1, 1.5, -0.0, 0.1, 1e300, true,
      false, moraine.null }
    if math.type then
      for _, v in ipairs({ math.maxinteger, math.mininteger, 3.0, -7.0 }) do values[#values + 1] = v end
    elseif has_ffi then
      values[#values + 1] = ffi.new("int64_t", 2 ^ 60)
      values[#values + 1] = 3.0
    end
    for b = 0, 255 do values[#values + 1] = "x" .. string.char(b) .. "y" end
    for _, v in ipairs(values) do
      local ok, want = pcall(moraine.json_encode, v)
      if ok then
        assert.are.equal(want, output.J(v), string.format("%q", tostring(v)))
        assert.are.equal('{' .. moraine.json_encode("k" .. tostring(v)) .. ':' .. want .. '}',
          output.J(output.obj({ "k" .. tostring(v) }, { ["k" .. tostring(v)] = v })))
      else -- not valid UTF-8: refused the same way
        assert.has_error(function() output.J(v) end)
      end
    end
  end)
end)
