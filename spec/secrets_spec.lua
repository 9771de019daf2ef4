--- Keys stay in the catalog (issue 11, docs/security.md), over the real
-- encrypted catalog (tests/fixtures/ducklake/s4_encrypted, written by the
-- ducklake extension with ATTACH ... (ENCRYPTED)): every output path that
-- renders rows (the `moraine` command with and without --json, the repl's
-- helpers, rd:scan_json) shows no key of the fixture; export copies every key
-- exactly (NDJSON and SQL, and back in through import), says so and writes
-- its files 0600; new stores are private; verify
-- warns about a store others can read; the access policy of moraine.http
-- checks its input and matches names as documented. The keys looked for are
-- read from the fixture's own files. moraine.http under nginx:
-- spec/http_secrets_spec.lua.
local moraine = require "moraine"
local support = require "support"
local policy = require "moraine.policy"

local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"
local S4 = support.FIXTURES .. "/s4_encrypted/catalog"
local S1 = support.FIXTURES .. "/s1_evolution/catalog"
local ROOT = os.getenv("PWD") or "."

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Runs `moraine ARGS...`; opts: stdin (text), umask (octal text). Returns {out, err, code, show}.
local function run(args, opts)
  opts = opts or {}
  local dir = support.tmpdir("run")
  support.mkdir(dir)
  support.write(dir .. "/stdin", opts.stdin or "")
  local qargs = {}
  for i, a in ipairs(args) do qargs[i] = q(a) end
  os.execute(("cd %s && umask %s && MORAINE_CATALOG= MORAINE_FORCE_TTY= MORAINE_LUA=%s sh %s %s >%s 2>%s <%s; echo $? >%s"):format(
    q(ROOT), opts.umask or "022", RUNTIME, q(ROOT .. "/scripts/moraine-dev"), table.concat(qargs, " "), q(dir .. "/out"),
    q(dir .. "/err"), q(dir .. "/stdin"), q(dir .. "/rc")))
  local r = { out = support.read(dir .. "/out"), err = support.read(dir .. "/err"),
    code = tonumber((support.read(dir .. "/rc"):match("%d+"))) }
  r.show = "moraine " .. table.concat(args, " ") .. ": exit " .. tostring(r.code) .. "\n--- stdout:\n" .. r.out:sub(1, 2000)
    .. "\n--- stderr:\n" .. r.err
  return r
end

local function ok_run(args, opts)
  local r = run(args, opts)
  assert(r.code == 0, r.show)
  return r
end

-- Permission bits of a path as octal text ("600"), from stat(1).
local function mode(path)
  local p = io.popen("stat -c %a " .. q(path))
  local m = p:read("l")
  p:close()
  return m
end

-- The distinct non-NULL keys of the fixture, from its own NDJSON files.
local KEYS = {}
do
  local seen = {}
  for _, t in ipairs({ "ducklake_data_file", "ducklake_delete_file" }) do
    for _, row in ipairs((moraine.read_ndjson(S4 .. "/" .. t .. ".ndjson"))) do
      local k = row.encryption_key
      if k ~= moraine.null and not seen[k] then
        seen[k] = true
        KEYS[#KEYS + 1] = k
      end
    end
  end
end

-- The fixture keys found in @text.
local function keys_in(text)
  local found = {}
  for _, k in ipairs(KEYS) do
    if text:find(k, 1, true) then found[#found + 1] = k end
  end
  return found
end

local function count(text, s)
  local n, i = 0, 1
  while true do
    local a, b = text:find(s, i, true)
    if not a then return n end
    n, i = n + 1, b + 1
  end
end

describe("secrets of an encrypted DuckLake catalog (s4_encrypted)", function()
  local dir

  setup(function()
    assert.equal(3, #KEYS, "the fixture holds three distinct keys (two data files share one)")
    dir = support.tmpdir("s4")
    local r = ok_run({ "-c", dir, "import", S4 })
    assert.same({}, keys_in(r.out .. r.err), r.show)
  end)
  teardown(support.cleanup)

  it("flags exactly the encryption_key columns of data and delete files as secret", function()
    local db = moraine.open(dir, { read_only = true, create = false })
    local flagged = {}
    for _, rel in ipairs(db:relations()) do
      for _, c in ipairs(rel.secret_columns) do flagged[#flagged + 1] = rel.name .. "." .. c end
    end
    table.sort(flagged)
    assert.same({ "ducklake_data_file.encryption_key", "ducklake_delete_file.encryption_key" }, flagged)
    assert.equal(4, db:read(function(rd) return rd:secret_count() end))
    db:close()
  end)

  it("shows no key in any command's output, with or without --json", function()
    local cmds = {
      { "snapshots" }, { "tables" }, { "show", "secret" }, { "files", "secret" }, { "history", "secret" },
      { "verify" }, { "stats" },
    }
    for s = 3, 5 do
      cmds[#cmds + 1] = { "files", "main.secret", "--at", tostring(s) }
      cmds[#cmds + 1] = { "tables", "--at", tostring(s) }
    end
    for a = 0, 5 do
      for b = a + 1, 5 do cmds[#cmds + 1] = { "diff", tostring(a), tostring(b) } end
    end
    cmds[#cmds + 1] = { "diff", "5", "0" } -- removed rows too
    local runs, redacted = 0, 0
    for _, c in ipairs(cmds) do
      for _, json in ipairs({ false, true }) do
        local args = { "-c", dir }
        for _, a in ipairs(c) do args[#args + 1] = a end
        if json then args[#args + 1] = "--json" end
        local r = ok_run(args)
        assert.same({}, keys_in(r.out .. r.err), r.show)
        redacted = redacted + count(r.out, moraine.REDACTED)
        runs = runs + 1
      end
    end
    assert.equal(#cmds * 2, runs)
    -- diff 0 5 adds the three data files and the delete file: each key shows as redacted
    local d = moraine.json_decode(ok_run({ "-c", dir, "diff", "0", "5", "--json" }).out)
    local files = d.added.ducklake_data_file
    assert.equal(3, #files)
    for _, f in ipairs(files) do assert.equal(moraine.REDACTED, f.encryption_key) end
    assert.equal(moraine.REDACTED, d.added.ducklake_delete_file[1].encryption_key)
    assert.is_true(redacted >= 16, "redacted keys seen in diffs: " .. redacted)
  end)

  it("shows no key in compare's differing rows, with or without --json", function()
    -- a copy of the fixture with every data file's record_count changed: each
    -- data file row then differs on both sides, keys and all
    local copy = support.tmpdir("s4copy")
    support.mkdir(copy)
    for _, f in ipairs(support.tables_of(S4)) do
      local text = support.read(S4 .. "/" .. f .. ".ndjson")
      if f == "ducklake_data_file" then
        text = text:gsub('"record_count":(%d+)', function(n) return '"record_count":' .. (tonumber(n) + 1) end)
      end
      support.write(copy .. "/" .. f .. ".ndjson", text)
    end
    for _, json in ipairs({ false, true }) do
      local args = { "-c", dir, "compare", copy }
      if json then args[#args + 1] = "--json" end
      local r = run(args)
      assert.equal(1, r.code, r.show)
      assert.same({}, keys_in(r.out .. r.err), r.show)
      assert.is_true(count(r.out, moraine.REDACTED) >= 6, r.show) -- 3 files, each on both sides
    end
  end)

  it("shows no key in the repl's helpers", function()
    local r = ok_run({ "-c", dir, "repl" }, { stdin = table.concat({
      'show(scan("ducklake_data_file", {at = moraine.ALL}))',
      'show(scan("ducklake_delete_file", {at = moraine.ALL}))',
      'show(files("secret"))',
      'files("secret")[1].encryption_key',
      'scan("ducklake_data_file")',
    }, "\n") .. "\n" })
    assert.same({}, keys_in(r.out .. r.err), r.show)
    assert.is_true(count(r.out, moraine.REDACTED) >= 8, r.show)
  end)

  it("writes no key from rd:scan_json unless asked with secrets = true", function()
    local db = moraine.open(dir, { read_only = true, create = false })
    db:read(function(rd)
      local all, n = {}, 0
      for _, rel in ipairs(db:relations()) do
        if rel.placement ~= "child" then
          for chunk, k in rd:scan_json(rel.name, { at = moraine.ALL, children = true, partition_values = rel.name == "ducklake_data_file" }) do
            all[#all + 1] = chunk
            n = n + k
          end
        end
      end
      local text = table.concat(all, "\n")
      assert.is_true(n > 20)
      assert.same({}, keys_in(text))
      assert.equal(4, count(text, '"encryption_key":"<redacted>"'))
      local asked = {}
      for _, t in ipairs({ "ducklake_data_file", "ducklake_delete_file" }) do
        for chunk in rd:scan_json(t, { at = moraine.ALL, secrets = true }) do asked[#asked + 1] = chunk end
      end
      assert.equal(#KEYS, #keys_in(table.concat(asked)))
      -- each file's own key, exactly
      for chunk in rd:scan_json("ducklake_data_file", { secrets = true, rows = 1 }) do
        local f = moraine.json_decode(chunk)
        for row in rd:scan("ducklake_data_file", {}) do
          if row.data_file_id == f.data_file_id then assert.equal(row.encryption_key, f.encryption_key) end
        end
      end
      local ok, e = pcall(function() for _ in rd:scan_json("ducklake_data_file", { secrets = "yes" }) do end end)
      assert.is_false(ok)
      assert.equal("EINVAL", e.code)
      assert.is_truthy(e.message:find("secrets", 1, true))
    end)
    db:close()
  end)

  it("redacts with moraine.redact: a present key reads <redacted>, NULL stays NULL", function()
    local db = moraine.open(dir, { read_only = true, create = false })
    local rel = db:relation("ducklake_data_file")
    local row = { data_file_id = 1, encryption_key = "k" }
    local r = moraine.redact(rel, row)
    assert.equal(moraine.REDACTED, r.encryption_key)
    assert.equal("k", row.encryption_key, "the row itself is left alone")
    assert.equal(moraine.null, moraine.redact(rel, { encryption_key = moraine.null }).encryption_key)
    local snap = { snapshot_id = 1 }
    assert.equal(snap, moraine.redact(db:relation("ducklake_snapshot"), snap))
    db:close()
  end)

  it("exports every key exactly, says so on stderr and writes the files 0600", function()
    local out = support.tmpdir("export")
    local r = ok_run({ "-c", dir, "export", out })
    assert.is_truthy(r.err:find("encryption keys", 1, true), r.show)
    assert.same({}, keys_in(r.err), "the note names no key")
    assert.equal("700", mode(out))
    for _, t in ipairs(support.tables_of(out)) do assert.equal("600", mode(out .. "/" .. t .. ".ndjson"), t) end
    assert.equal(support.read(S4 .. "/ducklake_data_file.ndjson"), support.read(out .. "/ducklake_data_file.ndjson"))
    assert.equal(support.read(S4 .. "/ducklake_delete_file.ndjson"), support.read(out .. "/ducklake_delete_file.ndjson"))
    -- and an import of the export carries them on
    local again = support.tmpdir("again")
    ok_run({ "-c", again, "import", out })
    local db = moraine.open(again, { read_only = true, create = false })
    local got = {}
    for _, e in ipairs(db:scan("ducklake_data_file", { at = moraine.ALL })) do got[#got + 1] = e.row.encryption_key end
    db:close()
    assert.equal(3, #got)
    assert.equal(2, #keys_in(table.concat(got, " ")))
    -- SQL
    local sql = support.tmpdir("sql") .. ".sql"
    r = ok_run({ "-c", dir, "export", sql })
    assert.is_truthy(r.err:find("encryption keys", 1, true), r.show)
    assert.equal("600", mode(sql))
    assert.equal(#KEYS, #keys_in(support.read(sql)))
    -- SQL -> sqlite3 -> moraine.sqlite.import: the keys come back exactly
    local file = support.tmpdir("sqlite") .. ".db"
    local okx = os.execute("sqlite3 -bail " .. q(file) .. " < " .. q(sql))
    assert.is_true(okx == true or okx == 0, "sqlite3 refused the script")
    local back = support.tmpdir("back")
    local bdb = moraine.open(back, { no_sync = true })
    require("moraine.sqlite").import(bdb, file)
    for _, t in ipairs({ "ducklake_data_file", "ducklake_delete_file" }) do
      local want = {}
      for _, row in ipairs((moraine.read_ndjson(S4 .. "/" .. t .. ".ndjson"))) do want[#want + 1] = row.encryption_key end
      local have = {}
      for _, e in ipairs(bdb:scan(t, { at = moraine.ALL })) do have[#have + 1] = e.row.encryption_key end
      table.sort(want)
      table.sort(have)
      assert.same(want, have, t)
    end
    bdb:close()
    os.remove(sql)
    os.remove(file)
  end)

  it("exports an unencrypted catalog without a note, with the umask's modes", function()
    local d1 = support.tmpdir("s1")
    ok_run({ "-c", d1, "import", S1 })
    local out = support.tmpdir("export1")
    local r = ok_run({ "-c", d1, "export", out })
    assert.equal("", r.err)
    assert.equal("644", mode(out .. "/ducklake_data_file.ndjson"))
  end)

  it("creates new stores private: directory 0700, data.mdb and lock.mdb 0600, whatever the umask", function()
    for _, um in ipairs({ "022", "002", "000" }) do
      local d = support.tmpdir("init")
      ok_run({ "-c", d, "init" }, { umask = um })
      assert.equal("700", mode(d), "umask " .. um)
      assert.equal("600", mode(d .. "/data.mdb"), "umask " .. um)
      assert.equal("600", mode(d .. "/lock.mdb"), "umask " .. um)
    end
    local d = support.tmpdir("open")
    local db = moraine.open(d, { no_sync = true })
    local a = db:store_access()
    db:close()
    assert.equal(7 * 64, a.dir_mode)
    assert.equal(6 * 64, a.data_mode)
    assert.equal(6 * 64, a.lock_mode)
    assert.is_false(a.exposed)
  end)

  it("verify warns when others can read a store that holds keys, and only then", function()
    local r = ok_run({ "-c", dir, "verify" })
    assert.equal("", r.err)
    local ok = os.execute("chmod 644 " .. q(dir .. "/data.mdb"))
    assert.is_true(ok == true or ok == 0)
    r = ok_run({ "-c", dir, "verify" })
    assert.is_truthy(r.err:find("warning", 1, true), r.show)
    assert.is_truthy(r.err:find("0644", 1, true), r.show)
    assert.is_truthy(r.err:find("4 encryption keys", 1, true), r.show)
    local doc = moraine.json_decode(ok_run({ "-c", dir, "verify", "--json" }).out)
    assert.is_true(doc.ok)
    assert.equal(1, #doc.warnings)
    -- an unencrypted catalog readable by others: nothing to warn about
    local d1 = support.tmpdir("s1v")
    ok_run({ "-c", d1, "import", S1 })
    os.execute("chmod 644 " .. q(d1 .. "/data.mdb"))
    assert.equal("", ok_run({ "-c", d1, "verify" }).err)
    os.execute("chmod 600 " .. q(dir .. "/data.mdb"))
    assert.equal("", ok_run({ "-c", dir, "verify" }).err)
    -- the chmod the warning gives, pasted into a shell, fixes a catalog whose path has a space and a quote
    local odd = support.tmpdir("with space's")
    assert.is_true(support.sh("cp -r " .. q(dir) .. " " .. q(odd) .. " && chmod 644 " .. q(odd .. "/data.mdb")))
    r = ok_run({ "-c", odd, "verify" })
    local cmd = r.err:match("(chmod 600 .-)\n")
    assert.is_truthy(cmd, r.show)
    assert.is_true(support.sh(cmd), cmd)
    assert.equal("", ok_run({ "-c", odd, "verify" }).err)
  end)

  it("token-hash prints the SHA-256 sha256sum gives, and refuses what is not a token", function()
    local tok = "mX3-q_9.Zk~0+/aBcDeF="
    local r = ok_run({ "token-hash" }, { stdin = tok .. "\n" })
    local p = io.popen("printf %s " .. q(tok) .. " | sha256sum")
    local want = p:read("a"):match("^(%x+)")
    p:close()
    assert.equal(want .. "\n", r.out)
    for _, bad in ipairs({ "", "short", "has space inside it", "quote'quote'quote'" }) do
      local b = run({ "token-hash" }, { stdin = bad .. "\n" })
      assert.equal(1, b.code, b.show)
      assert.equal("", b.out)
    end
  end)
end)

describe("moraine.policy", function()
  local H1, H2 = ("a"):rep(64), ("B"):rep(64)
  local function spec(t) return { tokens = t } end

  it("loads tokens with scopes and answers may_see / may_read_keys / may_name / unrestricted", function()
    local p = policy.new(spec({
      { name = "planner", sha256 = H1, scopes = { { schema = "main", table = "sec*" }, { schema = "s?", table = "t", keys = true } } },
      { name = "admin", sha256 = H2, keys = true, scopes = { { schema = "*", table = "*" } } },
    }))
    local planner = p:authenticate(H1)
    assert.equal("planner", planner.name)
    assert.equal("admin", p:authenticate(("b"):rep(64)).name, "hex digits in any case")
    assert.is_nil(p:authenticate(("c"):rep(64)))
    assert.is_nil(p:authenticate(H1:sub(2)))
    assert.is_true(p.may_see(planner, "main", "secret"))
    assert.is_false(p.may_see(planner, "main", "other"))
    assert.is_false(p.may_see(planner, "mainx", "secret"))
    assert.is_false(p.may_read_keys(planner, "main", "secret"))
    assert.is_true(p.may_read_keys(planner, "s1", "t"))
    assert.is_false(p.may_see(planner, "s12", "t"))
    assert.is_true(p.may_name(planner, "secret"))
    assert.is_true(p.may_name(planner, "main.secret"))
    assert.is_false(p.may_name(planner, "other.secret"))
    assert.is_false(p.may_name(planner, "other"))
    assert.is_false(p.unrestricted(planner))
    local admin = p:authenticate(H2:lower())
    assert.is_true(p.unrestricted(admin))
    assert.is_true(p.may_read_keys(admin, "any", "table.with.dots"))
    -- pattern characters are literal
    local q2 = policy.new(spec({ { name = "x", sha256 = H1, scopes = { { schema = "m%a", table = "t.n" } } } }))
    local x = q2:authenticate(H1)
    assert.is_true(q2.may_see(x, "m%a", "t.n"))
    assert.is_false(q2.may_see(x, "mza", "tzn"))
  end)

  it("compares in constant time: consteq looks at every byte", function()
    assert.is_true(policy.consteq("abc", "abc"))
    assert.is_false(policy.consteq("abc", "abd"))
    assert.is_false(policy.consteq("abc", "ab"))
    assert.is_true(policy.consteq("", ""))
  end)

  it("refuses a policy that does not check, naming the token and the field", function()
    local cases = {
      { nil, "expected a table" },
      { {}, "'tokens'" },
      { spec({}), "'tokens'" },
      { spec({ { sha256 = H1, scopes = { { schema = "*", table = "*" } } } }), "'name'" },
      { spec({ { name = "a", sha256 = "abc", scopes = { { schema = "*", table = "*" } } } }), "tokens[1] (a): 'sha256'" },
      { spec({ { name = "a", sha256 = ("g"):rep(64), scopes = { { schema = "*", table = "*" } } } }), "'sha256'" },
      { spec({ { name = "a", sha256 = H1, scopes = {} } }), "'scopes'" },
      { spec({ { name = "a", sha256 = H1, scopes = { { table = "*" } } } }), "scopes[1]: 'schema'" },
      { spec({ { name = "a", sha256 = H1, scopes = { { schema = "*", table = "*", keys = "yes" } } } }), "'keys'" },
      { spec({ { name = "a", sha256 = H1, keys = 1, scopes = { { schema = "*", table = "*" } } } }), "'keys'" },
      { spec({ { name = "a", sha256 = H1, token = "plain", scopes = { { schema = "*", table = "*" } } } }), "unknown field 'token'" },
      { spec({ { name = "a", sha256 = H1, scopes = { { schema = "*", table = "*" } } },
        { name = "a", sha256 = H2, scopes = { { schema = "*", table = "*" } } } }), "tokens[2] (a): the name" },
      { spec({ { name = "a", sha256 = H1, scopes = { { schema = "*", table = "*" } } },
        { name = "b", sha256 = H1:upper(), scopes = { { schema = "*", table = "*" } } } }), "same sha256" },
      { { tokens = { { name = "a", sha256 = H1, scopes = { { schema = "*", table = "*" } } } }, realm = 'x"y' }, "'realm'" },
    }
    for i, c in ipairs(cases) do
      local ok, e = pcall(policy.new, c[1])
      assert.is_false(ok, "case " .. i)
      assert.equal("EINVAL", e.code, "case " .. i)
      assert.is_truthy(e.message:find(c[2], 1, true), "case " .. i .. ": " .. e.message)
    end
  end)

  it("reads a policy from a JSON file, and says which file is wrong", function()
    local d = support.tmpdir("policy")
    support.mkdir(d)
    support.write(d .. "/p.json", moraine.json_encode(spec({ { name = "a", sha256 = H1, scopes = { { schema = "main", table = "*" } } } })))
    local p = policy.new(d .. "/p.json")
    assert.equal("a", p:authenticate(H1).name)
    support.write(d .. "/bad.json", "{ not json")
    local ok, e = pcall(policy.new, d .. "/bad.json")
    assert.is_false(ok)
    assert.equal("EJSON", e.code)
    assert.is_truthy(e.message:find("bad.json", 1, true))
    ok, e = pcall(policy.new, d .. "/missing.json")
    assert.is_false(ok)
    assert.equal("EIO", e.code)
    support.cleanup()
  end)
end)
