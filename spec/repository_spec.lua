--- The repository stands alone: a user clones only it, so no tracked file may
-- read a path beside it (the team's shared folder is where new real catalogs
-- arrive from; each one a test uses is copied into tests/fixtures/).
local support = require "support"

local function tracked_files()
  local p = io.popen("git ls-files -z 2>/dev/null")
  local out = p and p:read("a") or ""
  if p then p:close() end
  local files = {}
  for f in out:gmatch("([^%z]+)") do files[#files + 1] = f end
  return files
end

describe("the repository", function()
  it("has no tracked file that reads the shared folder beside the clone", function()
    local files = tracked_files()
    assert.is_true(#files > 50, "git ls-files listed only " .. #files .. " files (run from a clone)")
    local offenders = {}
    local needle = ".." .. "/shared"   -- split so this file does not name it
    for _, f in ipairs(files) do
      local h = io.open(f, "rb")
      if h then
        local text = h:read("a")
        h:close()
        if text:find(needle, 1, true) then offenders[#offenders + 1] = f end
      end
    end
    assert.are.same({}, offenders)
  end)

  it("carries every real DuckLake fixture the suites read", function()
    for _, s in ipairs({ "s1_evolution", "s2_multi_table", "s3_edge_values", "s4_encrypted" }) do
      for _, f in ipairs({ "/catalog/ducklake_snapshot.ndjson", "/expected/list_files.ndjson", "/scenario.sql" }) do
        local h = io.open(support.FIXTURES .. "/" .. s .. f, "rb")
        assert.is_truthy(h, support.FIXTURES .. "/" .. s .. f .. " is missing")
        h:close()
      end
    end
  end)
end)
