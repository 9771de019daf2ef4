--- moraine_compact, moraine.compact and `moraine compact`: the store rewritten
-- in key order keeps every row (the NDJSON export before equals the export
-- after, byte for byte; verify clean), a compaction in place killed with
-- SIGKILL at random points leaves a catalog equal to the original and a
-- re-run finishes, and refusals (another process has the catalog open, a
-- destination that exists) leave everything as it was.
local moraine = require "moraine"
local support = require "support"
local compact = require "moraine.compact"

local q = support.q

local run, spawn = support.moraine, support.spawn_moraine

local function exists(p)
  local ok, _, code = os.rename(p, p)
  return ok ~= nil or code ~= 2
end

-- a process holding the catalog open (support.hold_open)
local hold = support.hold_open

local function size(path)
  local f = assert(io.open(path, "rb"))
  local n = f:seek("end")
  f:close()
  return n
end

-- every file of the NDJSON export of the catalog at `dir`, name -> bytes
local function export(dir)
  local db = moraine.open(dir, { read_only = true, create = false })
  local out = support.tmpdir("export")
  db:export_ndjson(out)
  db:close()
  local files = {}
  for _, name in ipairs(support.tables_of(out)) do files[name] = support.read(out .. "/" .. name .. ".ndjson") end
  return files
end

local function verify_clean(dir)
  assert.are.same({}, moraine.verify_path(dir))
end

-- the files beside catalog `dir` that compact uses, which must be gone
local function no_leftovers(dir)
  for _, s in ipairs({ ".compact-tmp", ".compact-new", ".compact-old" }) do
    assert.is_false(exists(dir .. s), dir .. s .. " is left")
  end
end

-- leaves catalog `dir` as a swap without RENAME_EXCHANGE killed between its
-- two renames does: nothing at `dir`, the catalog at .compact-old, its
-- verified copy at .compact-new
local function killed_between_renames(dir)
  local copy = support.tmpdir("copy")
  local db = moraine.open(dir, { read_only = true })
  db:compact(copy)
  db:close()
  assert(os.rename(dir, dir .. ".compact-old"))
  assert(os.rename(copy, dir .. ".compact-new"))
end

-- a catalog that grew by many small commits: a fixture imported, then one
-- commit per snapshot of a synthetic table with rows added and ended
local function fixture(scenario)
  local db, dir = support.import_fixture(scenario)
  db:close()
  return dir
end

local function grown(tag, commits)
  local dir = fixture("s2_multi_table")
  local db = moraine.open(dir, { no_sync = true })
  db:commit(nil, function(tx) tx:define("grown_rows", { "id", "payload" }) end)
  for i = 1, commits or 120 do
    db:commit(nil, function(tx)
      for j = 0, 9 do
        local ord = (i * 7919 + j * 104729) % 100003 -- keys scattered over the table
        tx:put_row("grown_rows", { id = ord, payload = string.rep(string.char(65 + (i + j) % 26), 200 + (i + j) % 700) }, ord)
      end
    end)
  end
  db:close()
  local path = support.tmpdir(tag or "grown")
  assert(os.rename(dir, path))
  return path
end

describe("moraine_compact (db:compact)", function()
  after_each(support.cleanup)

  for _, scenario in ipairs(support.SCENARIOS) do
    it(scenario .. ": the copy exports byte for byte what the catalog exports, and verifies clean", function()
      local dir = fixture(scenario)
      local db = moraine.open(dir, { read_only = true })
      local dest = support.tmpdir("copy")
      local r = db:compact(dest)
      db:close()
      assert.is_true(r.entries > 0)
      assert.are.equal(size(dir .. "/data.mdb"), r.src_bytes)
      assert.are.equal(size(dest .. "/data.mdb"), r.dest_bytes)
      assert.is_true(r.dest_bytes <= r.src_bytes)
      assert.are.same(export(dir), export(dest))
      verify_clean(dest)
    end)
  end

  it("a store grown by many commits gets smaller, with the same rows and the same entry count", function()
    local dir = grown()
    local db = moraine.open(dir)
    local dest = support.tmpdir("copy")
    local r = db:compact(dest)
    db:close()
    assert.is_true(r.dest_bytes < r.src_bytes, ("copy %d bytes, catalog %d"):format(r.dest_bytes, r.src_bytes))
    assert.are.same(export(dir), export(dest))
    verify_clean(dest)
    local total = 0
    local cdb = moraine.open(dest, { read_only = true })
    for _, s in ipairs(cdb:stats()) do total = total + s.entries end
    cdb:close()
    assert.are.equal(r.entries, total)
  end)

  it("the copy is as private as the catalog, and a new catalog reads and writes it", function()
    local dir = grown()
    os.execute("chmod 750 " .. q(dir) .. " && chmod 640 " .. q(dir .. "/data.mdb"))
    local db = moraine.open(dir)
    local dest = support.tmpdir("copy")
    db:compact(dest)
    db:close()
    local cdb = moraine.open(dest)
    local acc = cdb:store_access()
    assert.are.equal(tonumber("750", 8), acc.dir_mode)
    assert.are.equal(tonumber("640", 8), acc.data_mode)
    cdb:commit(nil, function(tx) tx:put_row("grown_rows", { id = 1000, payload = "after" }, 1000) end)
    cdb:close()
    verify_clean(dest)
  end)

  it("the copy keeps the catalog's group and group-write bits whatever the umask (a catalog shared through its group)", function()
    local dir = grown()
    -- root (CI) can give any group; another user the first of its other groups, if it has one
    local function out(cmd) local f = io.popen(cmd); local s = f:read("a"); f:close(); return (s:gsub("%s+$", "")) end
    local mine, others = out("id -g"), {}
    for g in out("id -G"):gmatch("%d+") do if g ~= mine then others[#others + 1] = g end end
    local gid = out("id -u") == "0" and "4242" or others[1]
    if gid then os.execute("chgrp " .. gid .. " " .. q(dir) .. " " .. q(dir .. "/data.mdb") .. " " .. q(dir .. "/lock.mdb")) end
    os.execute("chmod 2770 " .. q(dir) .. " && chmod 660 " .. q(dir .. "/data.mdb") .. " && chmod 664 " .. q(dir .. "/lock.mdb"))
    local db = moraine.open(dir)
    local dest = support.tmpdir("copy")
    -- under the usual umask (022, 027, 077) a copy made with the umask loses group write
    db:compact(dest)
    db:close()
    local function stat(p) return out("stat -c '%a %g' " .. q(p)) end
    local g = gid or mine
    assert.are.equal("2770 " .. g, stat(dest))
    assert.are.equal("660 " .. g, stat(dest .. "/data.mdb"))
    assert.are.equal("664 " .. g, stat(dest .. "/lock.mdb"))
    verify_clean(dest)
  end)

  it("refuses a destination that exists (EEXIST) and leaves it as it was; a cancel leaves nothing", function()
    local dir = fixture("s1_evolution")
    local db = moraine.open(dir, { read_only = true })
    local dest = support.tmpdir("there")
    support.mkdir(dest)
    support.write(dest .. "/keep", "x")
    support.expect_err("EEXIST", "already exists", db.compact, db, dest)
    assert.are.equal("x", support.read(dest .. "/keep"))
    local gone = support.tmpdir("cancelled")
    support.expect_err("EINVAL", "compact cancelled", db.compact, db, gone, { progress = function() return true end })
    assert.is_false(exists(gone))
    db:close()
  end)

  it("open_elsewhere sees another process holding the catalog open, not this one's handles", function()
    local dir = fixture("s1_evolution")
    local db = moraine.open(dir)
    local db2 = moraine.open(dir, { read_only = true })
    assert.is_false(db:open_elsewhere())
    local p = spawn({ "-c", dir, "repl" }) -- holds the catalog open, reading stdin (/dev/null: ends at once)
    p.wait()
    assert.is_false(db:open_elsewhere())
    local release = hold(dir)
    local pid = db:open_elsewhere()
    release()
    assert.is_true(type(pid) == "number" and pid > 0, tostring(pid))
    db2:close()
    db:close()
  end)
end)

describe("moraine.compact in place", function()
  after_each(support.cleanup)

  it("compacts, keeps every row, leaves nothing beside the catalog", function()
    local dir = grown()
    local before = export(dir)
    local r = compact.compact(dir)
    assert.is_true(r.after < r.before)
    assert.are.same(before, export(dir))
    verify_clean(dir)
    no_leftovers(dir)
    -- again: nothing to gain, still the same rows
    compact.compact(dir .. "/")
    assert.are.same(before, export(dir))
    no_leftovers(dir)
  end)

  it("refuses a catalog directory holding files moraine did not write (the swap moves the directory); carries a follower's state", function()
    local dir = grown()
    local before = export(dir)
    local sz = size(dir .. "/data.mdb")
    support.write(dir .. "/readme.txt", "mine")
    support.expect_err("EINVAL", { "also holds readme.txt", "nothing was changed" }, compact.compact, dir)
    assert.are.equal("mine", support.read(dir .. "/readme.txt"))
    assert.are.equal(sz, size(dir .. "/data.mdb"))
    assert.are.same(before, export(dir))
    no_leftovers(dir)
    os.remove(dir .. "/readme.txt")
    support.write(dir .. "/moraine-follow.json", '{"last_snapshot":1}')
    -- what a follower killed while writing its state leaves (moraine.follow_state.write's temporary file): not
    -- carried, and removed with the old catalog; a name only like it is the user's and refused
    local stale = "/.moraine-follow.json.1733460000123456.tmp"
    support.write(dir .. stale, '{"last_snap')
    support.write(dir .. "/.moraine-follow.json.mine.tmp", "mine")
    support.expect_err("EINVAL", { "also holds .moraine-follow.json.mine.tmp", "nothing was changed" }, compact.compact, dir)
    assert.are.equal('{"last_snap', support.read(dir .. stale))
    os.remove(dir .. "/.moraine-follow.json.mine.tmp")
    local r = compact.compact(dir)
    assert.is_true(r.after < r.before)
    assert.are.equal('{"last_snapshot":1}', support.read(dir .. "/moraine-follow.json"))
    assert.is_nil(io.open(dir .. stale))
    assert.are.same(before, export(dir))
    no_leftovers(dir)
    -- an NDJSON export into a catalog directory is refused: it would be such a file
    local e = run({ "-c", dir, "export", dir })
    assert.are.equal(1, e.code, e.show)
    assert.truthy(e.err:find("is a moraine catalog directory", 1, true), e.show)
    -- so is one into a directory inside it (compact would then refuse the catalog's directory)
    e = run({ "-c", dir, "export", dir .. "/sub" })
    assert.are.equal(1, e.code, e.show)
    assert.truthy(e.err:find("is in the catalog directory", 1, true), e.show)
    assert.truthy(e.err:find("holds the catalog alone", 1, true), e.show)
    assert.is_false(exists(dir .. "/sub"))
    -- a SQL or SQLite export written into the catalog directory (over data.mdb, beside it, by another
    -- spelling of the directory) is refused: the rename over data.mdb lost the catalog (a user's report)
    for _, dest in ipairs({ dir .. "/data.mdb", dir .. "/lock.mdb", dir .. "/x.sql", dir .. "/../" .. dir:match("[^/]+$") .. "/y.sqlite" }) do
      for _, fmt in ipairs({ "sql", "sqlite" }) do
        local ex = run({ "-c", dir, "export", dest, "--format", fmt })
        assert.are.equal(1, ex.code, ex.show)
        assert.truthy(ex.err:find("is in the catalog directory", 1, true), ex.show)
      end
    end
    assert.are.same(before, export(dir))
    no_leftovers(dir)
    local sq = require "moraine.sqlite"
    local db = moraine.open(dir)
    support.expect_err("EINVAL", { "in the catalog's own directory" }, sq.export_sql, db, dir .. "/data.mdb")
    assert.is_true(db:path_in_catalog(dir .. "/data.mdb"))
    assert.is_false(db:path_in_catalog(dir .. "-elsewhere.sql"))
    db:close()
    assert.are.same(before, export(dir))
    no_leftovers(dir)
  end)

  it("refuses while another process has the catalog open, changing nothing", function()
    local dir = grown()
    local before = export(dir)
    local sz = size(dir .. "/data.mdb")
    local release = hold(dir)
    local ok, r = pcall(run, { "-c", dir, "compact" })
    release()
    assert(ok, r)
    assert.are.equal(1, r.code, r.show)
    assert.truthy(r.err:find("has the catalog " .. dir .. " open", 1, true), r.show)
    assert.truthy(r.err:find("nothing was changed", 1, true), r.show)
    assert.are.equal(sz, size(dir .. "/data.mdb"))
    assert.are.same(before, export(dir))
    no_leftovers(dir)
  end)

  it("reports the copy, then the check of the copy as its own phase: no phase's count goes backwards", function()
    local dir = grown()
    local calls = {}
    compact.compact(dir, { progress = function(done, total, phase) calls[#calls + 1] = { done, total, phase or "copy" } end })
    local phases, last = {}, {}
    for _, c in ipairs(calls) do
      if phases[#phases] ~= c[3] then phases[#phases + 1] = c[3] end
      assert.is_true(c[1] >= (last[c[3]] or 0), ("%s went from %d to %d"):format(c[3], last[c[3]] or 0, c[1]))
      last[c[3]] = c[1]
    end
    assert.are.same({ "copy", "verifying the copy" }, phases)
    no_leftovers(dir)
  end)

  it("refuses when a writer committed while the copy was made, changing nothing", function()
    local dir = grown()
    local db = moraine.open(dir)
    local n = 0
    -- the progress callback runs between the copy and the swap: commit there
    -- through a second handle of this process (open_elsewhere does not count it)
    local writer = moraine.open(dir)
    local ok, e = pcall(compact.compact, dir, { progress = function()
      n = n + 1
      if n == 1 then writer:commit(nil, function(tx) tx:put_row("grown_rows", { id = 5000, payload = "late" }, 5000) end) end
    end })
    writer:close()
    db:close()
    assert.is_false(ok)
    assert.are.equal("EINVAL", e.code)
    assert.truthy(e.message:find("another writer committed", 1, true), e.message)
    no_leftovers(dir)
    db = moraine.open(dir, { read_only = true })
    local found
    db:read(function(rd) for row in rd:scan("grown_rows") do if row.id == 5000 then found = row.payload end end end)
    db:close()
    assert.are.equal("late", found)
  end)

  it("recover finishes a swap killed between two renames, drops the old catalog after an exchange and a copy killed before the swap", function()
    local dir = grown()
    local before = export(dir)
    killed_between_renames(dir)
    local notes = compact.recover(dir)
    local db
    assert.truthy(notes[1] and notes[1]:find("finished an interrupted compact", 1, true))
    assert.are.same(before, export(dir))
    no_leftovers(dir)
    -- killed right after the exchange: the copy in place, the old catalog
    -- named .compact-new: it goes
    db = moraine.open(dir, { read_only = true })
    db:compact(dir .. ".compact-new")
    db:close()
    assert(moraine.core.rename_exchange(dir, dir .. ".compact-new"))
    assert.are.same({}, compact.recover(dir))
    assert.are.same(before, export(dir))
    verify_clean(dir)
    no_leftovers(dir)
    -- killed before the swap: the old catalog stays, the copy and a partial one go
    db = moraine.open(dir, { read_only = true })
    db:compact(dir .. ".compact-new")
    db:close()
    support.mkdir(dir .. ".compact-tmp")
    support.write(dir .. "/../" .. dir:match("[^/]+$") .. ".compact-tmp/data.mdb", "partial")
    assert.are.same({}, compact.recover(dir))
    assert.are.same(before, export(dir))
    no_leftovers(dir)
  end)

  it("through a symbolic link: compacts the directory the link names, the link kept (it emptied the directory)", function()
    local dir = grown()
    local before = export(dir)
    local links = support.tmpdir("links")
    support.mkdir(links)
    local link = links .. "/cat"
    assert(os.execute("ln -s " .. q(dir) .. " " .. q(link)))
    local r = run({ "-c", link, "compact" })
    assert.are.equal(0, r.code, r.show)
    local is_link = os.execute("test -L " .. q(link))
    assert.is_true(is_link == true or is_link == 0, link .. " is no longer a symbolic link")
    assert.are.same(before, export(dir))
    assert.are.same(before, export(link))
    verify_clean(dir)
    no_leftovers(dir)
    assert.are.same({ "cat" }, moraine.core.dir_entries(links))
  end)

  it("a catalog made where a swap killed between its renames left both copies: commands point to compact, init "
    .. "refuses, compact removes nothing", function()
    local dir = grown()
    local before = export(dir)
    killed_between_renames(dir)
    local r = run({ "-c", dir, "tables" })
    assert.are.equal(1, r.code, r.show)
    assert.truthy(r.err:find("interrupted compaction", 1, true) and r.err:find("compact' to put it back", 1, true), r.show)
    r = run({ "-c", dir, "init" })
    assert.are.equal(1, r.code, r.show)
    assert.truthy(r.err:find("interrupted compaction", 1, true), r.show)
    assert.is_false(exists(dir))
    -- made anyway (a program's open that creates): compact must not pick for the user
    moraine.open(dir, { create = true }):close()
    r = run({ "-c", dir, "compact" })
    assert.are.equal(1, r.code, r.show)
    assert.truthy(r.err:find("EEXIST", 1, true) and r.err:find("nothing was removed", 1, true), r.show)
    assert.are.same(before, export(dir .. ".compact-old"))
    assert.are.same(before, export(dir .. ".compact-new"))
    assert.is_true(exists(dir .. "/data.mdb"))
  end)

  it("one compaction beside a catalog at a time: one that finds the directory's lock held waits for it, changing "
    .. "nothing meanwhile", function()
    local dir = grown()
    local before = export(dir)
    local parent = dir:match("^(.*)/[^/]*$")
    local lk = assert(moraine.core.lock_dir(parent)) -- as another compaction (or recovery) running there
    local again, why = moraine.core.lock_dir(parent)
    assert.is_nil(again)
    assert.are.equal("busy", why)
    local p = spawn({ "-c", dir, "compact" })
    moraine.core.sleep(0.5)
    assert.is_false(exists(p.dir .. "/rc"), "compact did not wait for the lock")
    no_leftovers(dir) -- nothing done while it waits
    assert.are.same(before, export(dir))
    lk:release()
    p.wait()
    assert.are.equal("0", support.read(p.dir .. "/rc"):match("%d+"), support.read(p.dir .. "/err"))
    assert.are.same(before, export(dir))
    verify_clean(dir)
    no_leftovers(dir)
    again, why = moraine.core.lock_dir(parent) -- released when the command ended
    assert.is_not_nil(again, why)
    again:release()
  end)

  it("killed with SIGKILL at random points: the catalog opens and equals the original, and a re-run finishes",
    function()
      support.seed(18)
      local base = grown("base", 600)
      local before = export(base)
      local sz = size(base .. "/data.mdb")
      local t0 = moraine.clock()
      local timed = support.tmpdir("timed")
      os.execute("cp -r " .. q(base) .. " " .. q(timed))
      local r = run({ "-c", timed, "compact" })
      assert.are.equal(0, r.code, r.show)
      local span = moraine.clock() - t0
      -- the compaction is the end of the run (the interpreter's start, slow
      -- under a sanitizer, comes first): kills land in its last 80%, and
      -- rounds go on (up to 60) until at least 4 kills landed in the middle:
      -- leftovers beside the catalog, or the catalog compacted with the old
      -- one not yet removed
      local states, middle, round = {}, 0, 0
      while round < 12 or (middle < 4 and round < 60) do
        round = round + 1
        local dir = support.tmpdir("kill" .. round)
        os.execute("cp -r " .. q(base) .. " " .. q(dir))
        local p = spawn({ "-c", dir, "compact" })
        os.execute(string.format("sleep %.3f", span * (0.2 + math.random() * 0.9)))
        os.execute("kill -9 " .. p.pid .. " 2>/dev/null")
        p.wait()
        local state = exists(dir .. ".compact-new") and "new" or exists(dir .. ".compact-tmp") and "tmp"
          or exists(dir .. ".compact-old") and "old" or size(dir .. "/data.mdb") < sz and "done" or "untouched"
        states[state] = (states[state] or 0) + 1
        if state ~= "done" and state ~= "untouched" then middle = middle + 1 end
        -- the catalog is at the path, whole, with every row
        assert.is_true(exists(dir .. "/data.mdb"), "round " .. round .. ": no catalog at the path (" .. state .. ")")
        assert.are.same(before, export(dir), "round " .. round)
        verify_clean(dir)
        -- a re-run finishes
        r = run({ "-c", dir, "compact" })
        assert.are.equal(0, r.code, "round " .. round .. "\n" .. r.show)
        assert.are.same(before, export(dir), "round " .. round)
        verify_clean(dir)
        no_leftovers(dir)
        support.remove(dir)
      end
      local seen = {}
      for k, v in pairs(states) do seen[#seen + 1] = k .. "=" .. v end
      table.sort(seen)
      assert.is_true(middle >= 4, "too few kills landed in the middle of the compaction in " .. round .. " rounds: "
        .. table.concat(seen, " "))
    end)
end)

describe("moraine compact (the command)", function()
  after_each(support.cleanup)

  it("compacts in place and to --to DEST, with --json; refuses a DEST that exists and a missing catalog", function()
    local dir = grown()
    local before = export(dir)
    local dest = support.tmpdir("dest")
    local r = run({ "-c", dir, "compact", "--to", dest, "--json" })
    assert.are.equal(0, r.code, r.show)
    local j = moraine.json_decode(r.out)
    assert.are.equal(dest, j.to)
    assert.is_true(j.after < j.before)
    assert.are.same(before, export(dest))
    r = run({ "-c", dir, "compact", "--to", dest })
    assert.are.equal(1, r.code, r.show)
    assert.truthy(r.err:find("EEXIST", 1, true), r.show)
    r = run({ "-c", dir, "compact" })
    assert.are.equal(0, r.code, r.show)
    assert.truthy(r.out:find("^compacted " .. dir:gsub("%p", "%%%0") .. ": "), r.show)
    assert.are.same(before, export(dir))
    r = run({ "-c", support.tmpdir("none"), "compact" })
    assert.are.equal(1, r.code, r.show)
    assert.truthy(r.err:find("no catalog at", 1, true), r.show)
  end)

  it("a fresh import ends compacted: the same rows as the catalog imported without compaction", function()
    local src = support.FIXTURES .. "/s2_multi_table/catalog"
    local dir = support.tmpdir("imported")
    local r = run({ "-c", dir, "import", src })
    assert.are.equal(0, r.code, r.show)
    assert.are.equal("", r.err, r.show)
    local plain = fixture("s2_multi_table")
    assert.are.same(export(plain), export(dir))
    verify_clean(dir)
    no_leftovers(dir)
  end)
end)

describe("a catalog of an older store format (2, 3 or 4, an older moraine's) and `moraine compact`", function()
  after_each(support.cleanup)

  -- tests/fixtures/format<N>/<scenario>/data.mdb: the fixture imported by the
  -- build before format N + 1 (docs/codec.md, Versioning), copied to a new folder
  local function older(format, scenario)
    local dir = support.tmpdir("format" .. format)
    support.mkdir(dir)
    local fixtures = (os.getenv("MORAINE_FIXTURES") or "tests/fixtures/ducklake"):gsub("/ducklake$", "")
    support.write(dir .. "/data.mdb", support.read(fixtures .. "/format" .. format .. "/" .. scenario .. "/data.mdb"))
    return dir
  end
  local function format2(scenario) return older(2, scenario) end

  for _, case in ipairs({ { 2, "s1_evolution" }, { 2, "s3_edge_values" }, { 3, "s1_evolution" }, { 3, "s3_edge_values" },
    { 4, "s1_evolution" }, { 4, "s3_edge_values" } }) do
    local format, scenario = case[1], case[2]
    it("format " .. format .. ", " .. scenario .. ": reads and commits are refused with the reason, compact rewrites it, then it "
      .. "exports what a fresh import exports and is, byte for byte, the store a fresh import writes", function()
      local dir = older(format, scenario)
      local stored = support.read(dir .. "/data.mdb")
      local r = run({ "-c", dir, "tables" })
      assert.are.equal(1, r.code, r.show)
      assert.matches("format " .. format, r.err, 1, true)
      assert.matches("hint: run 'moraine compact' once", r.err, 1, true)
      r = run({ "-c", dir, "verify" })
      assert.are.equal(1, r.code, r.show)
      assert.matches("hint: run 'moraine compact' once", r.err, 1, true)
      -- Lua: the catalog opens; a read and a commit are refused; nothing is written
      local db = moraine.open(dir, { create = false })
      local ok, err = pcall(db.read, db, function() end)
      assert.is_false(ok)
      assert.are.equal("EFORMAT", err.code)
      assert.matches("`moraine compact` rewrites it in format 5", err.message, 1, true)
      ok, err = pcall(db.commit, db, nil, function(tx) tx:define("later", { "a" }) end)
      assert.is_false(ok)
      assert.matches("nothing was written", tostring(err.message or err), 1, true)
      db:close()
      assert.are.equal(stored, support.read(dir .. "/data.mdb"))

      r = run({ "-c", dir, "compact" })
      assert.are.equal(0, r.code, r.show)
      local fresh = fixture(scenario)
      assert.are.same(export(fresh), export(dir))
      -- and it is, byte for byte, the store a fresh `moraine import` of the same catalog writes
      local again = support.tmpdir("fresh-import")
      r = run({ "-c", again, "import", (os.getenv("MORAINE_FIXTURES") or "tests/fixtures/ducklake") .. "/" .. scenario .. "/catalog" })
      assert.are.equal(0, r.code, r.show)
      assert.are.equal(support.read(again .. "/data.mdb"), support.read(dir .. "/data.mdb"))
      verify_clean(dir)
      no_leftovers(dir)
      r = run({ "-c", dir, "tables" })
      assert.are.equal(0, r.code, r.show)
      db = moraine.open(dir, { create = false })
      db:commit(nil, function(tx) tx:define("later", { "a" }) end)
      db:close()
    end)
  end
  for _, format in ipairs({ 2, 3, 4 }) do
    it("a damaged value in a format-" .. format .. " catalog: compact refuses naming its key, the catalog is left as it was, "
      .. "and the hint does not send to this build's verify (which refuses format " .. format .. ")", function()
      local dir = older(format, "s1_evolution")
      -- one data file's path damaged in the file: its value's checksum fails
      local bytes, n = support.read(dir .. "/data.mdb"):gsub("day=26/ducklake", "day=26/duckXake")
      assert.are.equal(1, n)
      support.write(dir .. "/data.mdb", bytes)
      local r = run({ "-c", dir, "compact" })
      assert.are.equal(1, r.code, r.show)
      assert.matches("the value at key C(", r.err, 1, true)
      assert.matches("checksum", r.err, 1, true)
      assert.not_matches("'moraine verify' lists every damaged entry", r.err, 1, true)
      assert.matches("hint: the catalog is damaged and in store format " .. format .. ",", r.err, 1, true)
      assert.are.equal(bytes, support.read(dir .. "/data.mdb"))
      no_leftovers(dir)
    end)
  end
  it("moraine import (a continued import, a sync) on a format-2 catalog: refused with the hint to compact, not to fix the "
    .. "source; nothing written", function()
    local dir = format2("s1_evolution")
    local stored = support.read(dir .. "/data.mdb")
    local fixtures = os.getenv("MORAINE_FIXTURES") or "tests/fixtures/ducklake"
    local r = run({ "-c", dir, "import", fixtures .. "/s1_evolution/catalog" })
    assert.are.equal(1, r.code, r.show)
    assert.matches("format 2", r.err, 1, true)
    assert.matches("hint: run 'moraine compact' once", r.err, 1, true)
    assert.not_matches("and retry", r.err, 1, true)
    assert.are.equal(stored, support.read(dir .. "/data.mdb"))
  end)
  it("every command on a format-2 catalog gives the hint to compact, not its own (export: 'correct that row'; stats: "
    .. "'see --help')", function()
    local dir = format2("s3_edge_values")
    local stored = support.read(dir .. "/data.mdb")
    local out = support.tmpdir("format2-export")
    for _, argv in ipairs({ { "stats" }, { "export", out }, { "tables" }, { "snapshots" } }) do
      local cmd = { "-c", dir }
      for _, a in ipairs(argv) do cmd[#cmd + 1] = a end
      local r = run(cmd)
      assert.are.equal(1, r.code, r.show)
      assert.matches("hint: run 'moraine compact' once", r.err, 1, true)
    end
    assert.are.equal(stored, support.read(dir .. "/data.mdb"))
  end)
end)
