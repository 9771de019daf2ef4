--- The examples and the demo run as documented, on both runtimes.
local support = require "support"

local RUNTIME = (jit and "luajit") or "lua5.4"
local BUILD = os.getenv("MORAINE_BUILD") or "build"

local function run(script, args)
  local out = support.tmpdir("ex") .. ".out"
  local cmd = ("MORAINE_DEMO_DIR=%s MORAINE_EXAMPLE_DIR=%s sh scripts/run-lua.sh %s %s %s %s > %s 2>&1"):format(
    support.tmpdir("demo"), support.tmpdir("example"), RUNTIME, BUILD, script, args or "", out)
  local ok = support.sh(cmd)
  local text = support.read(out)
  os.remove(out)
  return ok, text
end

describe("examples", function()
  after_each(support.cleanup)

  it("quickstart.lua runs and time-travels the partition spec", function()
    local ok, out = run("examples/quickstart.lua")
    assert(ok, out)
    assert.is_truthy(out:find("spec at snapshot 9: partition_id 5 with 0 columns", 1, true), out)
  end)

  it("the demo prints the spec history with the never-visible intermediate spec", function()
    local ok, out = run("scripts/demo.lua", "examples/catalogs/s1_evolution/catalog")
    assert(ok, out)
    assert.is_truthy(out:find("never visible", 1, true), out)
    assert.is_truthy(out:find("year(ts), month(ts), day(ts), hour(ts)", 1, true), out)
    assert.is_truthy(out:find("amount DESC NULLS_LAST, area ASC NULLS_LAST", 1, true), out)
  end)

  it("the demo explains a missing table instead of failing obscurely", function()
    local ok, out = run("scripts/demo.lua", "examples/catalogs/s1_evolution/catalog nonesuch")
    assert.is_false(ok)
    assert.is_truthy(out:find("no table nonesuch", 1, true), out)
  end)
end)

-- The verb examples, each run as its own process (they make their own
-- temporary directory with mktemp -d; TMPDIR points it into one of ours, so
-- we can check that they remove it).
local function run_example(name)
  local tmp = support.tmpdir("extmp")
  support.mkdir(tmp)
  local out = tmp .. ".out"
  local cmd = ("TMPDIR=%s sh scripts/run-lua.sh %s %s examples/%s > %s 2>&1"):format(tmp, RUNTIME, BUILD, name, out)
  local ok = support.sh(cmd)
  local text = support.read(out)
  os.remove(out)
  -- what the example left in its TMPDIR: the names, one a line ("" when none)
  local pl_dir, pl_path = require "pl.dir", require "pl.path"
  local names = {}
  for _, list in ipairs({ pl_dir.getfiles(tmp), pl_dir.getdirectories(tmp) }) do
    for _, p in ipairs(list) do names[#names + 1] = pl_path.basename(p) .. "\n" end
  end
  table.sort(names)
  return ok, text, table.concat(names)
end

local function has(out, line) assert.is_truthy(out:find(line, 1, true), "missing: " .. line .. "\n" .. out) end

describe("verb examples", function()
  after_each(support.cleanup)

  for _, name in ipairs({ "repartition_day_to_hour.lua", "sort_rename_reset.lua", "migrate_repartition.lua" }) do
    it(name .. " says in its header what it shows and how to run it", function()
      local head = support.read("examples/" .. name):sub(1, 2000)
      assert.is_truthy(head:match("^%-%-%-? ?%S"), head)
      has(head, "Run: sh scripts/run-lua.sh lua5.4 build examples/" .. name)
    end)
  end

  for _, name in ipairs({ "s1_evolution", "s2_multi_table", "s3_edge_values" }) do
    it("scenarios/" .. name .. ".lua run without a directory: builds under $TMPDIR and removes it", function()
      local ok, out, left = run_example("scenarios/" .. name .. ".lua")
      assert(ok, out)
      assert.equal("", left, "temporary directory left behind")
      has(out, "catalog built (last snapshot ")
      has(out, "removed as this example ends")
    end)
  end

  it("repartition_day_to_hour.lua: old files keep the day spec, new ones the hour spec", function()
    local ok, out, left = run_example("repartition_day_to_hour.lua")
    assert(ok, out)
    assert.equal("", left, "temporary directory left behind")
    local before, day = out:match("at snapshot (%d+): spec in force partition_id (%d+) = day%(ts%)")
    local after, hour = out:match("at snapshot (%d+): spec in force partition_id (%d+) = hour%(ts%)")
    assert(day and hour and day ~= hour, out)
    assert(tonumber(before) < tonumber(after), out)
    -- every file line of the "after" listing: its own partition_id and values
    local listing = out:match("at snapshot " .. after .. ": spec in force.-\n\n")
    local n_day, n_hour = 0, 0
    for pid, values, path in listing:gmatch("file %d+ +partition_id (%d+) +values %(([^)]*)%) +%d+ rows +(%S+)") do
      if path:match("^day=") then
        n_day = n_day + 1
        assert.equal(day, pid)
        assert.equal(path:match("^day=(%d+)/"), values)
      else
        n_hour = n_hour + 1
        assert.equal(hour, pid)
        assert.equal(path:match("^hour=(%d+)/"), values)
      end
    end
    assert.equal(3, n_day)
    assert.equal(4, n_hour)
    has(out, ("partition_id %s day(ts):  3 files, 75000 rows"):format(day))
    has(out, ("partition_id %s hour(ts): 4 files, 4006 rows"):format(hour))
    has(out, "ok: old files keep the day spec, new files the hour spec, nothing rewritten")
  end)

  it("sort_rename_reset.lua: the rename writes a new sort version, the reset leaves none", function()
    local ok, out, left = run_example("sort_rename_reset.lua")
    assert(ok, out)
    assert.equal("", left, "temporary directory left behind")
    local set, ren, reset = out:match("SET SORTED BY (%d+), RENAME COLUMN (%d+), RESET SORTED BY (%d+)")
    assert(set, out)
    assert.is_truthy(out:find(("sort_id %%d+  %%[%s, %s%%)  amount DESC NULLS_LAST, region ASC NULLS_LAST"):format(set, ren)), out)
    assert.is_truthy(out:find(("sort_id %%d+  %%[%s, %s%%)  amount DESC NULLS_LAST, area ASC NULLS_LAST"):format(ren, reset)), out)
    has(out, ("at snapshot %s: amount DESC NULLS_LAST, area ASC NULLS_LAST"):format(ren))
    has(out, ("at snapshot %s: (none)"):format(reset))
    assert.is_falsy(out:find("live)", 1, true), out)
  end)

  it("migrate_repartition.lua: one snapshot alters every matched table and nothing else", function()
    local ok, out, left = run_example("migrate_repartition.lua")
    assert(ok, out)
    assert.equal("", left, "temporary directory left behind")
    -- the setup creates events_2024, events_2025, users in one transaction: DuckLake
    -- numbers them newest first (docs/verbs.md), users 1, events_2025 2 (its spec 3),
    -- events_2024 4 (its spec 5)
    has(out, "changes_made: altered_table:2,altered_table:4\n")
    assert.is_truthy(out:find("events_2024 +%(table_id 4%) +day%(ts%) +%-> hour%(ts%) +migrated"), out)
    assert.is_truthy(out:find("events_2025 +%(table_id 2%) +day%(ts%) +%-> hour%(ts%) +migrated"), out)
    assert.is_truthy(out:find("users +%(table_id 1%) +%(none%) +%-> %(none%) +left alone"), out)
    has(out, "running it again: no snapshot (nothing changed)")
  end)
end)

-- The rockspec: lists every engine source, and `luarocks make` builds and
-- installs a module that loads (in a copy of the tree, so no objects are left
-- in the source tree).
describe("moraine-scm-1.rockspec", function()
  after_each(support.cleanup)

  local function rockspec()
    local env, text = {}, support.read("moraine-scm-1.rockspec")
    local chunk
    if setfenv then
      chunk = assert(loadstring(text, "rockspec"))
      setfenv(chunk, env)
    else
      chunk = assert(load(text, "rockspec", "t", env))
    end
    chunk()
    return env
  end

  it("names every engine/*.c and bindings/*.c, and the files it installs exist", function()
    local spec = rockspec()
    assert.equal("moraine", spec.package)
    local mod = spec.build.modules["moraine.core"]
    local listed = {}
    for _, s in ipairs(mod.sources) do listed[s] = true end
    local p = assert(io.popen("ls engine/*.c bindings/*.c"))
    for f in p:lines() do assert.is_true(listed[f] == true, f .. " is not in the rockspec's sources") end
    p:close()
    for s in pairs(listed) do assert(io.open(s), s .. " is listed but missing"):close() end
    -- every Lua module of bindings/ is installed, under its require name
    local p2 = assert(io.popen("cd bindings && ls moraine.lua moraine/*.lua moraine/cli/*.lua"))
    for f in p2:lines() do
      local name = f:gsub("%.lua$", ""):gsub("/", ".")
      assert.equal("bindings/" .. f, spec.build.modules[name], name .. " is not in the rockspec's modules")
    end
    p2:close()
    assert.equal("scripts/moraine", spec.build.install.bin.moraine)
    assert(io.open("scripts/moraine"), "scripts/moraine missing"):close()
    assert.same({ "lua >= 5.1" }, spec.dependencies)   -- LuaJIT is 5.1 to LuaRocks, and 5.4 is above it
  end)

  it("carries a licence, a homepage and a source that is a git URL, not a local path", function()
    local spec = rockspec()
    assert.equal("MIT", spec.description.license)
    assert.truthy(support.read("LICENSE"):find("MIT License", 1, true), "LICENSE is not the MIT licence")
    assert.truthy(spec.description.homepage:find("^https://"), spec.description.homepage)
    assert.truthy(spec.source.url:find("^git%+https://") or spec.source.url:find("^git://"), spec.source.url)
    assert.falsy(spec.source.url:find("file:", 1, true), spec.source.url)
  end)

  local has_luarocks = os.execute("command -v luarocks > /dev/null 2>&1")
  has_luarocks = has_luarocks == true or has_luarocks == 0
  if not has_luarocks then
    pending("luarocks make: luarocks is not installed (apt-get install luarocks)")
    return
  end

  it("luarocks make builds and installs moraine.core, moraine and the command, leaving nothing untracked", function()
    local src, tree = support.tmpdir("rocksrc"), support.tmpdir("rocktree")
    support.mkdir(src)
    -- a git tree of the sources with the repository's .gitignore, every file staged
    assert(os.execute(("cp -r bindings engine scripts moraine-scm-1.rockspec .gitignore '%s/' && cd '%s' && git init -q . && git add -A"):format(
      src, src)))
    local log = src .. ".log"
    local ok = os.execute(("cd '%s' && luarocks --lua-version 5.4 make --tree '%s' moraine-scm-1.rockspec > '%s' 2>&1"):format(
      src, tree, log))
    local text = support.read(log)
    os.remove(log)
    assert(ok == true or ok == 0, text)
    local p0 = assert(io.popen(("cd '%s' && git ls-files --others --exclude-standard"):format(src)))
    local untracked = p0:read("*a")
    p0:close()
    assert.equal("", untracked, "luarocks make left files .gitignore does not cover")
    local probe = ("lua5.4 -e 'package.path=\"%s/share/lua/5.4/?.lua;\"..package.path; " ..
      "package.cpath=\"%s/lib/lua/5.4/?.so;\"..package.cpath; local m = require(\"moraine\"); " ..
      "assert(package.searchpath(\"moraine.core\", package.cpath):find(\"%s\", 1, true)); print(m.version)'"):format(tree, tree, tree)
    local p = assert(io.popen(probe .. " 2>&1"))
    local out = p:read("*a")
    p:close()
    assert.equal(require("moraine").version .. "\n", out)
    assert(io.open(tree .. "/bin/moraine"), "bin/moraine not installed"):close()
    assert(io.open(tree .. "/share/lua/5.4/moraine/sqlite.lua"), "moraine/sqlite.lua not installed"):close()
  end)
end)
