--- The examples and the demo run as documented, on both runtimes.
local support = require "support"

local RUNTIME = (jit and "luajit") or "lua5.4"
local BUILD = os.getenv("MORAINE_BUILD") or "build"

local function run(script, args)
  local out = support.tmpdir("ex") .. ".out"
  local cmd = ("MORAINE_DEMO_DIR=%s MORAINE_EXAMPLE_DIR=%s sh scripts/run-lua.sh %s %s %s %s > %s 2>&1"):format(
    support.tmpdir("demo"), support.tmpdir("example"), RUNTIME, BUILD, script, args or "", out)
  local ok = os.execute(cmd)
  local text = support.read(out)
  os.remove(out)
  return ok == true or ok == 0, text
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
