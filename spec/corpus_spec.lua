--- The differential suite: every scenario of the corpus of random DuckLake
-- runs (tests/fixtures/ducklake/corpus) replayed into a fresh catalog, DDL
-- through moraine's SQL path and data through the staged path, then compared
-- table by table with the catalog DuckLake wrote (spec/corpus_runner.lua);
-- ducklake_table_column_stats on a second replay with every data unit's files
-- through the data verbs, which write them (R.column_stats).
-- Each scenario prints "identical" or its first difference, and the suite
-- prints `corpus: N/30 identical`.
--
-- Every scenario must be identical (issue 16: "All must be identical").
local support = require "support"
local R = require "corpus_runner"

describe("corpus of random DuckLake scenarios", function()
  after_each(support.cleanup)

  local results, scenarios = {}, R.scenarios()

  it("holds the 30 scenarios, each with its steps and DuckLake's catalog", function()
    assert.are.equal(30, #scenarios)
    for _, s in ipairs(scenarios) do
      assert.truthy(io.open(R.CORPUS .. "/" .. s .. "/steps.ndjson")):close()
      assert.truthy(io.open(R.CORPUS .. "/" .. s .. "/catalog/ducklake_snapshot.ndjson")):close()
    end
  end)

  for _, s in ipairs(scenarios) do
    it(s .. " replays identically", function()
      local diff = R.run(s, support.tmpdir(s))
      results[s] = diff or "identical"
      io.stderr:write(("%s: %s\n"):format(s, results[s]))
      assert.is_nil(diff, s .. ": " .. tostring(diff))
    end)
  end

  it("reports the count: every scenario identical", function()
    local n = 0
    for _, s in ipairs(scenarios) do if results[s] == "identical" then n = n + 1 end end
    io.stderr:write(("corpus: %d/%d identical\n"):format(n, #scenarios))
    assert.are.equal(#scenarios, n, ("corpus: %d/%d identical"):format(n, #scenarios))
  end)
end)
