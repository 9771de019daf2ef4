--- sync killed with SIGKILL at 200 random points while a DuckLake writer
-- commits to its source between kills (tests/crash/sync_kill.lua; make
-- crash-long runs 10,000): after each kill, running sync again converges,
-- compare finds nothing, and no acknowledged snapshot of the writer is lost.
local support = require "support"

local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"
local BUILD = os.getenv("MORAINE_BUILD") or "build"

describe("sync under SIGKILL", function()
  it("200 kills at random points (inside the history-rewrite commit too): every re-run converges, nothing "
    .. "acknowledged is lost", function()
    local kills = os.getenv("MORAINE_SYNC_KILLS") or "200"
    local p = io.popen("sh scripts/run-lua.sh " .. RUNTIME .. " " .. support.q(BUILD) .. " tests/crash/sync_kill.lua "
      .. kills .. " 2>&1; echo \"exit $?\"")
    local out = p:read("a")
    p:close()
    assert.truthy(out:find("exit 0\n", 1, true), out)
    local n, alive, partial = out:match("sync_kill: (%d+) kills %((%d+) while the sync ran, (%d+) left a partial round%)")
    -- (past KILLS, at most as many again, until one kill left a partial round)
    assert.is_true(tonumber(n) >= tonumber(kills) and tonumber(n) <= 2 * tonumber(kills), out)
    -- the kills did land in running syncs, some between two commits of a round
    assert.is_true(tonumber(alive) >= tonumber(kills) / 2, out)
    assert.is_true(tonumber(partial) >= 1, out)
  end)
end)
