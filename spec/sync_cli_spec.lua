--- `moraine sync` and `moraine compare` as processes: their output and exit
-- status, a real PostgreSQL source, and real concurrency between processes
-- (two syncs at once, a verb writer beside a sync, a sync killed with
-- SIGKILL at random points). Each assertion holds in every interleaving:
-- nothing an acknowledged writer committed is lost, a refused sync says
-- ECONFLICT, and running sync again converges (compare finds nothing).
local moraine = require "moraine"
local support = require "support"
local pg = require "pg_support"

local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"
local FIX = support.FIXTURES
local S1 = FIX .. "/s1_evolution/catalog"
local S2 = FIX .. "/s2_multi_table/catalog"
local q = support.q

local run = support.moraine

local function ok_run(args)
  local r = run(args)
  assert.are.equal(0, r.code, r.show)
  return r
end

-- starts `moraine ARGS` in the background; returns {pid = the interpreter's
-- process id (the shell execs env, moraine-dev, run-lua.sh and the
-- interpreter in turn: one process), wait = fn() -> {out, err, code}}
-- true once file @path (maybe not there yet) holds @text, polled for 30 s at most
local function file_holds(path, text)
  local t0 = moraine.clock()
  repeat
    local f = io.open(path, "rb")
    local got = f and f:read("*a") or ""
    if f then f:close() end
    if got:find(text, 1, true) then return true end
    os.execute("sleep 0.05")
  until moraine.clock() - t0 > 30
  return false
end

-- starts `moraine ARGS` in the background; returns {pid, printed = fn(text), said = fn(text),
-- wait = fn() -> {out, err, code}}
local function spawn(args)
  local p = support.spawn_moraine(args)
  local dir = p.dir
  return {
    pid = p.pid,
    -- true once the process' stderr so far holds @text (30 s at most)
    said = function(text) return file_holds(dir .. "/err", text) end,
    -- true once the process' stdout so far holds @text (30 s at most)
    printed = function(text) return file_holds(dir .. "/out", text) end,
    wait = function()
      p.wait()
      return { out = support.read(dir .. "/out"), err = support.read(dir .. "/err"),
        code = tonumber((support.read(dir .. "/rc"):match("%d+"))) }
    end,
  }
end

-- whether @path exists (a file or a directory)
local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- waits (30 s at most) until @path exists
local function wait_for_path(path)
  local t0 = moraine.clock()
  while not exists(path) and moraine.clock() - t0 < 30 do os.execute("sleep 0.01") end
end

-- a new NDJSON source: S1 with its ducklake_column.ndjson a FIFO, which a reader waits on until something
-- writes it; returns the directory and the FIFO's path
local function fifo_source(tag)
  local src = support.tmpdir(tag)
  support.mkdir(src)
  for _, name in ipairs(support.tables_of(S1)) do
    if name ~= "ducklake_column" then support.write(src .. "/" .. name .. ".ndjson", support.read(S1 .. "/" .. name .. ".ndjson")) end
  end
  local fifo = src .. "/ducklake_column.ndjson"
  local rc = os.execute("mkfifo " .. q(fifo))
  assert.is_true(rc == true or rc == 0)
  return src, fifo
end

-- starts `moraine -c DIR VERB SRC` on a new catalog DIR and a fifo_source SRC; returns once DIR holds data.mdb
-- (the command then waits reading the FIFO): the process, DIR and the FIFO's path
local function spawn_on_fifo(tag, verb)
  local src, fifo = fifo_source(tag .. "-src")
  local dir = support.tmpdir(tag .. "-cat")
  local p = spawn({ "-c", dir, verb, src })
  wait_for_path(dir .. "/data.mdb")
  return p, dir, fifo
end

-- a new SQLite catalog file: S1, plus a table ducklake_aapad of @rows rows (the fast import reads it first: it
-- then runs for seconds), plus the SQL @more (may be nil)
local function padded_sqlite(tag, rows, more)
  local ref, good, file = support.tmpdir(tag .. "-ref"), support.tmpdir(tag .. "-good") .. ".sqlite",
    support.tmpdir(tag) .. ".sqlite"
  ok_run({ "-c", ref, "import", S1 })
  ok_run({ "-c", ref, "export", good })
  assert.is_true(support.sh("cp " .. q(good) .. " " .. q(file) .. " && sqlite3 " .. q(file) .. " \"CREATE TABLE "
    .. "ducklake_aapad(x INTEGER); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < "
    .. rows .. ") INSERT INTO ducklake_aapad SELECT i FROM c; " .. (more or "") .. "\""))
  return file
end

describe("moraine sync and compare", function()
  teardown(function() support.cleanup() end)

  it("Ctrl-C (SIGINT) stops a follower in its wait: 'moraine: interrupted', exit 130, the catalog whole", function()
    local dir = support.tmpdir("sigint")
    local p = spawn({ "-c", dir, "sync", S1, "--follow", "--interval", "60s" })
    assert.is_true(p.printed("synced 21 snapshots"), "the follower never finished its first round")
    os.execute("sleep 0.2") -- into the wait between rounds
    os.execute("kill -INT " .. p.pid)
    local r = p.wait()
    assert.are.equal(130, r.code, r.out .. r.err)
    assert.are.equal("moraine: interrupted\n", r.err)
    assert.are.equal(0, run({ "-c", dir, "verify" }).code)
    assert.are.equal("no differences\n", ok_run({ "-c", dir, "compare", S1 }).out)
  end)

  it("a follower whose source cannot be read whole for a moment retries it, goes on when it is back, and ends on a "
    .. "source waiting does not mend", function()
    -- before, any error but EIO ended the follower (a SQLite file truncated while being replaced; a new user's report)
    local src = support.tmpdir("flaky-src")
    assert.is_true(support.sh("cp -r " .. q(S1) .. " " .. q(src)))
    local dir = support.tmpdir("flaky")
    local p = spawn({ "-c", dir, "sync", src, "--follow", "--interval", "0.1" })
    assert.is_true(p.printed("synced 21 snapshots"), "the follower never finished its first round")
    assert.is_true(support.sh("mv " .. q(src .. "/ducklake_delete_file.ndjson") .. " " .. q(src .. "/aside")))
    assert.is_true(p.said("the catalog has no ducklake_delete_file.ndjson"), "no round failed")
    assert.is_true(p.said("trying again in 0.1"), "the follower did not say it retries")
    assert.is_true(support.sh("mv " .. q(src .. "/aside") .. " " .. q(src .. "/ducklake_delete_file.ndjson")))
    os.execute("sleep 0.5")
    assert.is_true(support.sh("kill -0 " .. p.pid), "the follower ended")
    local state = moraine.json_decode(support.read(dir .. "/moraine-follow.json"))
    assert.is_false(state.failing)
    assert.are.equal("no differences\n", ok_run({ "-c", dir, "compare", S1 }).out)
    -- what waiting does not mend ends it: a column the catalog's table does not have (exit 1)
    local path = src .. "/ducklake_schema.ndjson"
    support.write(path, (support.read(path):gsub("\n{", "\n{\"extra_col\":1,"):gsub("^{", "{\"extra_col\":1,")))
    local r = p.wait()
    assert.are.equal(1, r.code, r.out .. r.err)
    assert.truthy(r.err:find("has columns", 1, true), r.err)
  end)

  it("sync prints what it replayed; compare prints 'no differences' (exit 0), or each differing row (exit 1)",
    function()
      local dir = support.tmpdir("cat")
      local r = ok_run({ "-c", dir, "sync", S1 })
      assert.truthy(r.out:find("21 snapshots replayed, last snapshot 20 (was none)", 1, true), r.show)
      r = ok_run({ "-c", dir, "sync", S1 })
      assert.truthy(r.out:find("0 snapshots replayed, last snapshot 20 (was 20)", 1, true), r.show)
      r = ok_run({ "-c", dir, "compare", S1 })
      assert.are.equal("no differences\n", r.out)
      r = run({ "-c", dir, "compare", S2 })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.out:find("ducklake_column\tcatalog\t1\t{", 1, true), r.show)
      r = run({ "-c", dir, "compare", S2, "--json" })
      assert.are.equal(1, r.code, r.show)
      local doc = moraine.json_decode(r.out)
      assert.is_true(#doc.differences > 0)
      assert.are.equal("ducklake_column", doc.differences[1].table)
      -- a source that is not there: refused, and no catalog is created for it
      local nowhere = support.tmpdir("nowhere")
      r = run({ "-c", nowhere, "sync", support.tmpdir("missing-source") })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("^moraine: EIO: sync: cannot open "), r.show)
      assert.is_nil(io.open(nowhere .. "/data.mdb"))
      -- the catalog no longer follows S2: refused, nothing changed
      r = run({ "-c", dir, "sync", S2 })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("^moraine: ECONFLICT: "), r.show)
      assert.are.equal("no differences\n", ok_run({ "-c", dir, "compare", S1 }).out)
    end)

  it("compare shows a column DROP COLUMN ended (its ducklake_column row's end_snapshot), on either side", function()
    local function note(end_snapshot)
      return '{"column_id":5,"begin_snapshot":19,"end_snapshot":' .. end_snapshot .. ',"table_id":1,"column_order":5,'
        .. '"column_name":"note","column_type":"varchar","initial_default":"n/a","default_value":"n/a",'
        .. '"nulls_allowed":true,"parent_column":null,"default_value_type":"literal","default_value_dialect":"duckdb"}'
    end
    -- the catalog dropped the column (snapshot 21), the source did not
    local dropped = support.tmpdir("dropped")
    ok_run({ "-c", dropped, "sync", S1 })
    assert.are.equal("committed; the newest snapshot is 21\n",
      ok_run({ "-c", dropped, "sql", "ALTER TABLE events DROP COLUMN note" }).out)
    local r = run({ "-c", dropped, "compare", S1 })
    assert.are.equal(1, r.code, r.show)
    assert.truthy(r.out:find("ducklake_column\tcatalog\t1\t" .. note("21") .. "\n", 1, true), r.show)
    assert.truthy(r.out:find("ducklake_column\tsource\t1\t" .. note("null") .. "\n", 1, true), r.show)
    -- the reverse: the source dropped it (the first catalog exported), the catalog did not
    local exported = support.tmpdir("dropped-export")
    ok_run({ "-c", dropped, "export", exported })
    local kept = support.tmpdir("kept")
    ok_run({ "-c", kept, "sync", S1 })
    r = run({ "-c", kept, "compare", exported })
    assert.are.equal(1, r.code, r.show)
    assert.truthy(r.out:find("ducklake_column\tsource\t1\t" .. note("21") .. "\n", 1, true), r.show)
    assert.truthy(r.out:find("ducklake_column\tcatalog\t1\t" .. note("null") .. "\n", 1, true), r.show)
    -- the end alone differs (the same snapshots: a past DuckLake rewrote): those two rows are the whole answer
    local ended = support.tmpdir("ended")
    support.mkdir(ended)
    for _, f in ipairs(support.tables_of(S1)) do
      local text = support.read(S1 .. "/" .. f .. ".ndjson")
      if f == "ducklake_column" then
        local n
        text, n = text:gsub(note("null"):gsub("%p", "%%%0"), note("20"))
        assert.are.equal(1, n)
      end
      support.write(ended .. "/" .. f .. ".ndjson", text)
    end
    r = run({ "-c", kept, "compare", ended })
    assert.are.equal(1, r.code, r.show)
    assert.are.equal("ducklake_column\tsource\t1\t" .. note("20") .. "\nducklake_column\tcatalog\t1\t" .. note("null")
      .. "\n", r.out)
    r = run({ "-c", kept, "compare", ended, "--json" })
    assert.are.equal(1, r.code, r.show)
    local doc = moraine.json_decode(r.out)
    assert.are.equal(2, #doc.differences, r.show)
    assert.are.equal("source", doc.differences[1].side)
    assert.are.equal(20, doc.differences[1].row.end_snapshot)
    assert.are.equal("catalog", doc.differences[2].side)
    assert.are.equal(moraine.null, doc.differences[2].row.end_snapshot)
  end)

  it("compare shows a column of a DuckLake table one side has and the other lacks (sync refuses such a source), "
    .. "then the rows on the columns both have", function()
    local dir = support.tmpdir("cols")
    ok_run({ "-c", dir, "sync", S1 })
    -- the source's ducklake_column lost column_type and has a column "extra" the catalog lacks (NULL in every row)
    local src = support.tmpdir("cols-src")
    support.mkdir(src)
    for _, f in ipairs(support.tables_of(S1)) do
      local text = support.read(S1 .. "/" .. f .. ".ndjson")
      if f == "ducklake_column" then
        local n1, n2
        text, n1 = text:gsub(',"column_type":"[^"]*"', "")
        text, n2 = text:gsub("}\n", ',"extra":null}\n')
        assert.are.equal(6, n1)
        assert.are.equal(6, n2)
      end
      support.write(src .. "/" .. f .. ".ndjson", text)
    end
    local r = run({ "-c", dir, "sync", src })
    assert.are.equal(1, r.code, r.show)
    assert.truthy(r.err:find("^moraine: EINVAL: sync: table ducklake_column has columns %("), r.show)
    r = run({ "-c", dir, "compare", src })
    assert.are.equal(1, r.code, r.show)
    assert.are.equal('ducklake_column\tcatalog\t(the other side has no column "column_type")\n'
      .. 'ducklake_column\tsource\t(the other side has no column "extra")\n', r.out)
    r = run({ "-c", dir, "compare", src, "--json" })
    assert.are.equal(1, r.code, r.show)
    assert.are.equal('{"differences":[{"table":"ducklake_column","side":"catalog","column":"column_type","count":1,'
      .. '"row":null},{"table":"ducklake_column","side":"source","column":"extra","count":1,"row":null}],'
      .. '"truncated":false}\n', r.out)
    -- a row that differs besides: shown as well, with the columns both sides have
    local text = support.read(src .. "/ducklake_column.ndjson")
    support.write(src .. "/ducklake_column.ndjson", (text:gsub('"column_name":"note"', '"column_name":"memo"')))
    r = run({ "-c", dir, "compare", src })
    assert.are.equal(1, r.code, r.show)
    local lines = {}
    for line in r.out:gmatch("[^\n]+") do lines[#lines + 1] = line end
    assert.are.equal(4, #lines, r.show)
    assert.are.equal('ducklake_column\tcatalog\t(the other side has no column "column_type")', lines[1])
    assert.are.equal('ducklake_column\tsource\t(the other side has no column "extra")', lines[2])
    local shared = '"table_id":1,"column_order":5,"column_name":"%s","initial_default":"n/a","default_value":"n/a",'
      .. '"nulls_allowed":true,"parent_column":null,"default_value_type":"literal","default_value_dialect":"duckdb"}'
    assert.are.equal('ducklake_column\tsource\t1\t{"column_id":5,"begin_snapshot":19,"end_snapshot":null,'
      .. shared:format("memo"), lines[3])
    assert.are.equal('ducklake_column\tcatalog\t1\t{"column_id":5,"begin_snapshot":19,"end_snapshot":null,'
      .. shared:format("note"), lines[4])
    -- a SQLite source whose ducklake_column lost a column (ALTER TABLE ... DROP COLUMN in SQLite)
    local script = support.tmpdir("cols-sql") .. ".sql"
    ok_run({ "-c", dir, "export", script })
    support.write(script, support.read(script) .. "\nALTER TABLE ducklake_column DROP COLUMN column_type;\n")
    local file = support.sqlite_from_script(script)
    r = run({ "-c", dir, "compare", file })
    assert.are.equal(1, r.code, r.show)
    assert.are.equal('ducklake_column\tcatalog\t(the other side has no column "column_type")\n', r.out)
  end)

  it("two syncs (or imports) at once, five times: each ends with success or ECONFLICT, running sync again converges",
    function()
      for round = 1, 5 do
        local dir = support.tmpdir("two" .. round)
        -- import is sync into an empty catalog: odd rounds race two imports
        local verb = round % 2 == 1 and "import" or "sync"
        local a, b = spawn({ "-c", dir, verb, S2 }), spawn({ "-c", dir, verb, S2 })
        for _, p in ipairs({ a, b }) do
          local r = p.wait()
          if r.code ~= 0 then
            assert.truthy(r.err:find("^moraine: ECONFLICT: ") or r.err:find("^moraine: ESNAPSHOT: "), r.err)
            -- the hint does not blame the source
            assert.is_nil(r.err:find("fails the same way", 1, true), r.err)
          end
        end
        ok_run({ "-c", dir, "sync", S2 })
        assert.are.equal("no differences\n", ok_run({ "-c", dir, "compare", S2 }).out)
        assert.are.equal(0, run({ "-c", dir, "verify" }).code)
      end
    end)

  it("a failed first sync or import removes nothing when another writer may have committed (catalog.others_there)",
    function()
      -- what decides whether `moraine sync`/`import` removes the catalog it
      -- created after failing: the test below races a writer against an
      -- import, this one pins the decision down
      local cat = require "moraine.cli.catalog"
      local dir = support.tmpdir("others")
      local db = moraine.open(dir)
      db:commit(1, function(tx) tx:define("t", { "a" }) end)
      local esnap = support.expect_err("ESNAPSHOT", nil, db.commit, db, 1, function(tx) tx:define("u", { "a" }) end)
      local plain = support.expect_err("ENOTFOUND", nil, db.scan, db, "no_such_table")
      assert.is_false(cat.others_there(db, plain))
      assert.is_false(cat.others_there(db, "a Lua error"))
      assert.is_true(cat.others_there(db, esnap))
      local release = support.hold_open(dir)
      assert.is_true(cat.others_there(db, plain))
      release()
      assert.is_false(cat.others_there(db, plain))
      db:close()
    end)

  it("a first sync that fails after another writer committed and exited removes nothing of that writer's", function()
    -- B's source is S1 with one table file a FIFO: B creates the catalog, opens it and waits on the FIFO; A syncs
    -- S1 into the same catalog and exits; then B reads a broken line and fails. Before, B removed the directory it
    -- had created, A's 21 snapshots with it (no other process had the catalog open by then)
    local b, dir, fifo = spawn_on_fifo("fifo", "sync")
    local a = ok_run({ "-c", dir, "sync", S1 })
    assert.truthy(a.out:find("21 snapshots replayed", 1, true), a.show)
    -- (a writer of the FIFO waits for its reader: 30 s at most, should B not be reading it)
    local rc = os.execute("timeout 30 sh -c 'printf \"{broken\\n\" > \"$1\"' sh " .. q(fifo))
    assert.is_true(rc == true or rc == 0)
    local r = b.wait()
    assert.are.equal(1, r.code, r.out .. r.err)
    assert.truthy(r.err:find("nothing of it was removed", 1, true), r.err)
    assert.are.equal("no differences\n", ok_run({ "-c", dir, "compare", S1 }).out)
  end)

  it("Ctrl-C during a fresh import's reading of its source removes the catalog directory it created", function()
    -- the source's ducklake_column.ndjson is a FIFO: the import has created the catalog and waits reading it when
    -- SIGINT comes (the wait ends with it; should it not, the FIFO is filled within 3 s and the interrupt is taken
    -- as soon as the reading returns)
    local p, dir, fifo = spawn_on_fifo("int", "import")
    os.execute("sleep 0.2")
    os.execute("kill -INT " .. p.pid)
    os.execute("timeout 3 sh -c 'cat \"$1\" > \"$2\"' sh " .. q(S1 .. "/ducklake_column.ndjson") .. " " .. q(fifo))
    local r = p.wait()
    assert.are.equal(130, r.code, r.out .. r.err)
    assert.truthy(r.err:find("moraine: interrupted", 1, true), r.err)
    assert.is_false(exists(dir))
  end)

  it("Ctrl-C during a fresh import of a SQLite file (its fast path, with --progress) removes the catalog directory", function()
    -- big.sqlite: S1 as a SQLite catalog plus a 3,000,000-row table the fast path reads first (seconds); SIGINT
    -- comes as soon as the fast path has begun, and is taken in its next progress call
    local big = padded_sqlite("int-fast-big", 3000000)
    local dir = support.tmpdir("int-fast-cat")
    local p = spawn({ "-c", dir, "import", big, "--progress" })
    wait_for_path(dir .. "/.moraine-import-sqlite.tmp")
    os.execute("kill -INT " .. p.pid)
    local r = p.wait()
    assert.are.equal(130, r.code, r.out .. r.err)
    assert.truthy(r.err:find("moraine: interrupted", 1, true), r.err)
    assert.is_false(exists(dir))
  end)

  it("Ctrl-C during a fresh import of a SQLite file without --progress stops it too: exit 130, nothing left", function()
    -- before, the fast path ran to its end (no Lua ran to take the interrupt), then the command said
    -- "interrupted" and left the whole import behind, uncompacted (a new user's report)
    local big = padded_sqlite("int-fast-quiet", 3000000)
    local dir = support.tmpdir("int-fast-quiet-cat")
    local p = spawn({ "-c", dir, "import", big })
    wait_for_path(dir .. "/.moraine-import-sqlite.tmp")
    os.execute("kill -INT " .. p.pid)
    local r = p.wait()
    assert.are.equal(130, r.code, r.out .. r.err)
    assert.truthy(r.err:find("moraine: interrupted", 1, true), r.err)
    assert.are.equal("", r.out)
    assert.is_false(exists(dir))
  end)

  it("a failed import of a SQLite file removes nothing another writer committed while its fast path ran", function()
    -- bad.sqlite: S1 as a SQLite catalog, plus a 2,000,000-row table the fast path reads first (it then runs for
    -- a second or more) and a ducklake_metadata value that is not UTF-8 (both paths refuse it). While the fast path
    -- runs, a library writer (moraine.sync: it does not look for the import's mark) syncs S1 into the catalog and
    -- exits; then the import fails. Before, the import took that writer's commits for its own and removed the
    -- directory with them
    local dir = support.tmpdir("fast-race")
    local bad = padded_sqlite("fast-bad", 2000000, "INSERT INTO ducklake_metadata VALUES ('bad', CAST(X'C3FF' AS TEXT), "
      .. "NULL, NULL)")
    local script = support.tmpdir("fast-writer") .. ".lua"
    support.write(script, string.format([[
      package.path = %q
      package.cpath = %q
      local moraine = require "moraine"
      local db = moraine.open(%q)
      print("synced to " .. tostring(require("moraine.sync").sync(db, %q).to))
      db:close()
    ]], package.path, package.cpath, dir, S1))
    local a = spawn({ "-c", dir, "import", bad })
    wait_for_path(dir .. "/.moraine-import-sqlite.tmp")
    local w = io.popen(RUNTIME .. " " .. q(script) .. " 2>&1")
    local out = w:read("a")
    w:close()
    assert.truthy(out:find("synced to 20", 1, true), out)
    local r = a.wait()
    assert.are.equal(1, r.code, r.out .. r.err)
    assert.truthy(r.err:find("not valid UTF-8", 1, true), r.err)
    assert.truthy(r.err:find("nothing was removed", 1, true), r.err)
    assert.are.equal("no differences\n", ok_run({ "-c", dir, "compare", S1 }).out)
  end)

  it("a verb writer committing while an import runs: every acknowledged snapshot of the writer stays", function()
    local dir = support.tmpdir("verbrace")
    local script = support.tmpdir("writer") .. ".lua"
    support.write(script, string.format([[
      package.path = %q
      package.cpath = %q
      local moraine = require "moraine"
      local db = moraine.open(%q)
      local acked, i = 0, 0
      local t0 = moraine.clock()
      while acked < 5 and moraine.clock() - t0 < 20 do
        i = i + 1
        local ok, s = pcall(db.transaction, db, function(tx) tx:create_schema("writer" .. i) end)
        if ok and s then
          print("ACK " .. tostring(s) .. " writer" .. i)
          io.stdout:flush()
          acked = acked + 1
        end
        os.execute("sleep 0.01")
      end
      db:close()
    ]], package.path, package.cpath, dir))
    local sync_p = spawn({ "-c", dir, "import", S2 })
    local w = io.popen(RUNTIME .. " " .. q(script) .. " 2>&1")
    local out = w:read("a")
    w:close()
    local r = sync_p.wait()
    if r.code ~= 0 then assert.truthy(r.err:find("^moraine: ECONFLICT: ") or r.err:find("^moraine: ESNAPSHOT: "), r.err) end
    local db = moraine.open(dir, { read_only = true })
    local schemas = {}
    for _, e in ipairs(db:scan("ducklake_schema", { at = moraine.ALL })) do
      schemas[e.row.schema_name] = e.row.begin_snapshot
    end
    local n = 0
    for s, name in out:gmatch("ACK (%d+) (writer%d+)") do
      n = n + 1
      assert.are.equal(tonumber(s), tonumber(tostring(schemas[name])), name .. " lost:\n" .. out .. "\n" .. r.err)
    end
    assert.is_true(n > 0, "the writer never committed:\n" .. out)
    db:close()
  end)

  it("killed with SIGKILL at 20 random points, the same sync or import run again finishes, compare finds nothing",
    function()
      support.seed(15)
      -- how long a whole run takes here (a sanitizer build is several times slower):
      -- the kills land at random within 1.2 times that
      local t0 = moraine.clock()
      ok_run({ "-c", support.tmpdir("timed"), "sync", S2 })
      local span = (moraine.clock() - t0) * 1.2
      local partial = 0 -- rounds killed with some snapshots committed, not all
      for round = 1, 20 do
        local dir = support.tmpdir("kill" .. round)
        local verb = round % 2 == 1 and "import" or "sync"
        local p = spawn({ "-c", dir, verb, S2 })
        os.execute(string.format("sleep %.3f", math.random() * span))
        os.execute("kill -9 " .. p.pid .. " 2>/dev/null")
        p.wait()
        -- a kill before LMDB wrote its first page leaves an empty data.mdb
        -- (read-only refuses it, EIO; the re-run below sets it up)
        local f = io.open(dir .. "/data.mdb", "rb")
        local size = f and f:seek("end") or 0
        if f then f:close() end
        if size > 0 then
          local db = moraine.open(dir, { read_only = true })
          local last = db:last_snapshot()
          db:close()
          if last ~= nil and last < 25 then partial = partial + 1 end
        end
        ok_run({ "-c", dir, verb, S2 })
        assert.are.equal("no differences\n", ok_run({ "-c", dir, "compare", S2 }).out, "round " .. round)
      end
      assert.is_true(partial >= 1, "no round was killed in the middle of the sync")
    end)

  it("import refuses a catalog that holds anything but an earlier import of its source (EEXIST), changing nothing",
    function()
      local dir = support.tmpdir("inited")
      ok_run({ "-c", dir, "init" })
      local r = run({ "-c", dir, "import", S1 })
      assert.are.equal(1, r.code, r.show)
      assert.truthy(r.err:find("^moraine: EEXIST: the catalog is not empty and is not an earlier import of "), r.show)
      local db = moraine.open(dir, { read_only = true })
      assert.are.equal(0, db:last_snapshot())
      db:close()
      -- an import of the same source again: nothing to do
      local dir2 = support.tmpdir("twice")
      ok_run({ "-c", dir2, "import", S1 })
      r = ok_run({ "-c", dir2, "import", S1 })
      assert.truthy(r.out:find("last snapshot 20 (it was complete: nothing to do)", 1, true), r.show)
    end)

  describe("from PostgreSQL", function()
    local server, c
    local pg_setup, pg_teardown = pg.server_hooks(function(s, conn) server, c = s, conn end)
    lazy_setup(pg_setup)
    lazy_teardown(pg_teardown)

    it("a replica follows the catalog through moraine sync; compare finds nothing after each round", function()
      local src = "postgres:" .. server.conninfo
      local dir = support.tmpdir("replica")
      for _, k in ipairs({ 5, 12, false }) do
        pg.load(c, S1, k or nil)
        local r = ok_run({ "-c", dir, "sync", src })
        assert.truthy(r.out:find("last snapshot " .. (k or 20), 1, true), r.show)
        assert.are.equal("no differences\n", ok_run({ "-c", dir, "compare", src }).out)
      end
      assert.are.equal("no differences\n", ok_run({ "-c", dir, "compare", S1 }).out)
      -- an expiry at the source: sync says so on stderr and replays it, compare finds nothing
      pg.exec(c, "BEGIN")
      pg.exec(c, "DELETE FROM ducklake_snapshot_changes WHERE snapshot_id IN (2, 3)")
      pg.exec(c, "DELETE FROM ducklake_snapshot WHERE snapshot_id IN (2, 3)")
      pg.exec(c, "COMMIT")
      local r = ok_run({ "-c", dir, "sync", src })
      assert.truthy(r.err:find("moraine: note: the source no longer has 2 snapshots this catalog holds (2, 3)", 1,
        true), r.show)
      assert.truthy(r.err:find("sync deletes them and the rows only they saw", 1, true), r.show)
      assert.are.equal("no differences\n", ok_run({ "-c", dir, "compare", src }).out)
      local db = moraine.open(dir, { read_only = true })
      db:read(function(rd)
        for row in rd:scan("ducklake_snapshot", { at = moraine.ALL }) do
          assert.is_true(row.snapshot_id ~= 2 and row.snapshot_id ~= 3)
        end
      end)
      db:close()
    end)

    it("sync --follow keeps a replica current while the source's writers commit", function()
      local src = "postgres:" .. server.conninfo
      local dir = support.tmpdir("follower")
      pg.load(c, S2, 4)
      local p = spawn({ "-c", dir, "sync", src, "--follow", "--interval", "100ms" })
      local function wait_for(last)
        local t0 = moraine.clock()
        while moraine.clock() - t0 < 30 do
          if io.open(dir .. "/data.mdb") then
            local db = moraine.open(dir, { read_only = true })
            local got = db:last_snapshot()
            db:close()
            if got == last then return true end
          end
          os.execute("sleep 0.05")
        end
        return false
      end
      assert.is_true(wait_for(4), "the follower never reached snapshot 4")
      pg.load(c, S2, 15)
      assert.is_true(wait_for(15), "the follower never reached snapshot 15")
      pg.load(c, S2, nil)
      assert.is_true(wait_for(25), "the follower never reached snapshot 25")
      -- the round's line comes after its last commit: wait for it before the kill
      assert.is_true(p.printed("last snapshot 25,"), "the follower never said it reached snapshot 25")
      os.execute("kill " .. p.pid)
      local r = p.wait()
      assert.truthy(r.out:find("last snapshot 4,", 1, true), r.out .. r.err)
      assert.truthy(r.out:find("last snapshot 25,", 1, true), r.out .. r.err)
      assert.are.equal("no differences\n", ok_run({ "-c", dir, "compare", src }).out)
      assert.are.equal("no differences\n", ok_run({ "-c", dir, "compare", S2 }).out)
    end)
  end)
end)
