--- Issue 12 from Lua: inputs that would poison a catalog are refused with the
-- store unchanged, and the hints send the user the right way. (Damaged
-- bytes, fork, double open, dead readers and stale descriptors are in
-- tests/c/test_adversarial.c.)
local moraine = require "moraine"
local support = require "support"

local N = moraine.null
local FIX = support.FIXTURES

local function err_of(fn, ...)
  local ok, e = pcall(fn, ...)
  assert.is_false(ok, "expected a refusal")
  assert.is_true(moraine.is_error(e), tostring(e))
  return e
end

-- a copy of fixture @name's NDJSON export, to damage
local function fixture_copy(name)
  local dir = support.tmpdir("src")
  support.mkdir(dir)
  os.execute("cp " .. FIX .. "/" .. name .. "/catalog/*.ndjson '" .. dir .. "'/")
  return dir
end

local function refused_import(src, code, needles)
  local dir = support.tmpdir("adv")
  local db = moraine.open(dir, { no_sync = true })
  local e = err_of(db.import_ndjson, db, src)
  assert.equal(code, e.code, tostring(e))
  for _, n in ipairs(needles) do assert.is_truthy(e.message:find(n, 1, true), e.message .. " should name " .. n) end
  assert.is_nil(db:last_snapshot())
  assert.equal(0, #db:relations()) -- nothing of the import remains
  db:close()
end

describe("poisoning inputs", function()
  after_each(support.cleanup)

  it("a staged commit without its ducklake_snapshot row is refused, the store unchanged (7)", function()
    local db = support.import_fixture("s1_evolution")
    local before = support.dump(db)
    local e = err_of(db.commit, db, 21, function() end)
    assert.equal("ESNAPSHOT", e.code)
    assert.is_truthy(e.message:find("no ducklake_snapshot row", 1, true), e.message)
    e = err_of(db.commit, db, moraine.json_decode("9223372036854775807"), function(tx) -- INT64_MAX, also on LuaJIT
      tx:end_row("ducklake_partition_info", { partition_id = 11, table_id = 1, begin_snapshot = 17, end_snapshot = N })
    end)
    assert.equal("ESNAPSHOT", e.code)
    -- counters that go back are refused too
    local last = db:scan("ducklake_snapshot", { at = 20 })
    local row = last[#last].row
    e = err_of(db.commit, db, 21, function(tx)
      tx:insert("ducklake_snapshot", { snapshot_id = 21, snapshot_time = row.snapshot_time, schema_version = row.schema_version,
        next_catalog_id = row.next_catalog_id, next_file_id = row.next_file_id - 1 })
    end)
    assert.equal("ESNAPSHOT", e.code)
    assert.is_truthy(e.message:find("next_file_id", 1, true), e.message)
    assert.equal(before, support.dump(db))
    -- verbs still build on the catalog
    assert.equal(21, db:transaction(function(tx) tx:clear_partitioning("events") end))
    assert.same({}, db:verify())
    db:close()
  end)

  it("verify reports a last snapshot without its ducklake_snapshot row (7)", function()
    -- such a catalog can only come from an older build: made here with raw
    -- rows in a catalog whose ducklake_snapshot table has no columns yet
    local dir = support.tmpdir("nosnap")
    local db = moraine.open(dir, { no_sync = true })
    db:commit(nil, function(tx) tx:define("ducklake_snapshot", {}) end)
    db:commit(3, function(tx) tx:define("t", { "a" }) tx:put_row("t", { a = 1 }, 0) end)
    db:commit(nil, function(tx)
      tx:define("ducklake_snapshot", { "snapshot_id", "snapshot_time", "schema_version", "next_catalog_id", "next_file_id" })
    end)
    local v = db:verify()
    assert.equal(1, #v)
    assert.is_truthy(v[1].problem:find("no ducklake_snapshot row", 1, true), v[1].problem)
    db:close()
  end)

  it("an import whose ducklake_snapshot.ndjson is empty is refused (8)", function()
    local src = fixture_copy("s1_evolution")
    support.write(src .. "/ducklake_snapshot.ndjson", "\n")
    refused_import(src, "EINVAL", { "ducklake_snapshot.ndjson has no rows" })
  end)

  it("an import whose rows begin past its snapshots is refused (8)", function()
    local src = fixture_copy("s1_evolution")
    local text = support.read(src .. "/ducklake_table.ndjson")
    support.write(src .. "/ducklake_table.ndjson", (text:gsub('"begin_snapshot":1,', '"begin_snapshot":999,', 1)))
    refused_import(src, "EINVAL", { "999", "ducklake_snapshot" })
  end)

  it("NDJSON with one key twice in an object is refused, naming file and line (9)", function()
    local src = fixture_copy("s1_evolution")
    local text = support.read(src .. "/ducklake_table.ndjson")
    support.write(src .. "/ducklake_table.ndjson", (text:gsub('"table_id":1,', '"table_id":1,"table_id":2,', 1)))
    refused_import(src, "EJSON", { "ducklake_table.ndjson:1", "twice" })
    local e = err_of(moraine.read_ndjson, src .. "/ducklake_table.ndjson")
    assert.equal("EJSON", e.code)
    assert.is_truthy(e.message:find("ducklake_table.ndjson:1", 1, true), e.message)
  end)

  it("verbs refuse text that is not UTF-8 and negative sizes, naming the argument, the store unchanged (10)", function()
    local db = support.import_fixture("s1_evolution")
    db:transaction(function(tx) tx:clear_partitioning("events") end) -- files then need no partition values
    local before = support.dump(db)
    local cases = {
      { { path = "bad\255name.parquet", record_count = 1, file_size_bytes = 10 }, "path" },
      { { path = "ok.parquet", record_count = 1, file_size_bytes = -5 }, "file_size_bytes" },
      { { path = "ok.parquet", record_count = -1, file_size_bytes = 5 }, "record_count" },
      { { path = "ok.parquet", record_count = 1, file_size_bytes = 5, footer_size = -2 }, "footer_size" },
    }
    for _, c in ipairs(cases) do
      local e = err_of(db.transaction, db, function(tx) tx:add_data_files("events", { c[1] }) end)
      assert.equal("EINVAL", e.code, tostring(e))
      assert.is_truthy(e.message:find(c[2], 1, true), e.message .. " should name " .. c[2])
    end
    local live = db:scan("ducklake_data_file", { table_id = 1 })[1].row
    local e = err_of(db.transaction, db, function(tx)
      tx:add_delete_files("events", { { data_file_id = live.data_file_id, path = "d.parquet", delete_count = -1, file_size_bytes = 1, footer_size = 1 } })
    end)
    assert.is_truthy(e.message:find("delete_count", 1, true), e.message)
    e = err_of(db.transaction, db, function(tx) tx:create_table("bad\255t", { { name = "a", type = "int64" } }) end)
    assert.is_truthy(e.message:find("UTF-8", 1, true), e.message)
    e = err_of(db.transaction, db, function(tx) tx:add_column("events", { name = "c\192", type = "int64" }) end)
    assert.is_truthy(e.message:find("UTF-8", 1, true), e.message)
    assert.equal(before, support.dump(db))
    -- the exporters and verify still work
    assert.same({}, db:verify())
    db:close()
  end)

  it("an empty table file gets DuckLake's columns, so verbs can write to it (11)", function()
    local db = support.import_fixture("s3_edge_values")
    for _, name in ipairs({ "ducklake_delete_file", "ducklake_column_tag", "ducklake_macro" }) do
      assert.is_true(#db:relation(name).columns > 0, name)
    end
    local file = db:scan("ducklake_data_file")[1].row
    local tname
    for _, e in ipairs(db:scan("ducklake_table")) do if e.row.table_id == file.table_id then tname = e.row.table_name end end
    local s = db:transaction(function(tx)
      tx:add_delete_files(tname, { { data_file_id = file.data_file_id, path = "d.parquet", delete_count = 1, file_size_bytes = 10, footer_size = 5 } })
    end)
    assert.is_truthy(s)
    local cols = db:scan("ducklake_column", { table_id = file.table_id })
    assert.is_truthy(db:transaction(function(tx) tx:set_sorting(tname, { cols[1].row.column_name }) end))
    assert.equal(1, #db:scan("ducklake_delete_file"))
    assert.same({}, db:verify())
    db:close()
  end)

  it("a failed export leaves nothing in DIR and names the value (13)", function()
    local dir = support.tmpdir("badexp")
    local db = moraine.open(dir, { no_sync = true })
    db:commit(nil, function(tx) tx:define("a_first", { "x" }) tx:put_row("a_first", { x = "fine" }, 0) end)
    db:commit(nil, function(tx) tx:define("z_last", { "x" }) tx:put_row("z_last", { x = "bad\255bytes" }, 0) end)
    local out = support.tmpdir("out")
    support.mkdir(out)
    local e = err_of(db.export_ndjson, db, out)
    assert.equal("EINVAL", e.code)
    assert.is_truthy(e.message:find("bad\\xffbytes", 1, true), e.message)
    assert.is_truthy(e.message:find("z_last", 1, true), e.message)
    local p = io.popen("ls -A '" .. out .. "'")
    assert.equal("", p:read("a")) -- not even a_first.ndjson, written before the bad row was met
    p:close()
    -- a directory the export made is removed again
    local fresh = support.tmpdir("fresh")
    err_of(db.export_ndjson, db, fresh)
    p = io.popen("test -e '" .. fresh .. "' && echo exists")
    assert.equal("", p:read("a"))
    p:close()
    db:close()
  end)

  it("db:reader_check clears nothing in a healthy catalog and returns a count (6)", function()
    local db = support.import_fixture("s1_evolution")
    assert.equal(0, db:reader_check())
    db:close()
  end)
end)

describe("hints of the moraine command (13)", function()
  after_each(support.cleanup)
  local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"
  local ROOT = os.getenv("PWD") or "."
  local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
  -- runs `moraine ARGS...`; returns exit status, stdout, stderr
  local function run(...)
    local dir = support.tmpdir("cli")
    support.mkdir(dir)
    local args = {}
    for i, a in ipairs({ ... }) do args[i] = q(a) end
    os.execute(("cd %s && MORAINE_CATALOG= MORAINE_LUA=%s sh scripts/moraine-dev %s >%s 2>%s </dev/null; echo $? >%s"):format(
      q(ROOT), RUNTIME, table.concat(args, " "), q(dir .. "/out"), q(dir .. "/err"), q(dir .. "/rc")))
    return tonumber(support.read(dir .. "/rc"):match("%d+")), support.read(dir .. "/out"), support.read(dir .. "/err")
  end

  it("a duplicate key in the source says so, not 'import into a new catalog'", function()
    local src = fixture_copy("s1_evolution")
    local text = support.read(src .. "/ducklake_table.ndjson")
    support.write(src .. "/ducklake_table.ndjson", text .. text)
    local code, _, err = run("-c", support.tmpdir("dupcat"), "import", src)
    assert.equal(1, code, err)
    assert.is_truthy(err:find("EEXIST", 1, true), err)
    assert.is_falsy(err:find("new catalog", 1, true), err)
    assert.is_truthy(err:find("same key", 1, true), err)
  end)

  it("an export that fails on a value names it and does not blame DIR", function()
    local cat = support.tmpdir("expcat")
    local db = moraine.open(cat, { no_sync = true })
    db:init("data/")
    db:commit(nil, function(tx) tx:put_row("ducklake_metadata", { key = "k\255", value = "v", scope = N, scope_id = N }, 10) end)
    db:close()
    local out = support.tmpdir("expout")
    local code, _, err = run("-c", cat, "export", out)
    assert.equal(1, code, err)
    assert.is_truthy(err:find("k\\xff", 1, true), err)
    assert.is_falsy(err:find("can be written", 1, true), err)
    local p = io.popen("test -e " .. q(out) .. " && echo exists")
    assert.equal("", p:read("a"))
    p:close()
  end)

  it("verify runs in a child process and reports a sound catalog", function()
    local _, dir = support.import_fixture("s1_evolution")
    local code, out = run("-c", dir, "verify")
    assert.equal(0, code, out)
    assert.is_truthy(out:find("no violation", 1, true), out)
    assert.same({}, moraine.verify_path(dir))
  end)
end)
