--- Property: any row of any value types is stored and read back exactly,
-- byte for byte: int64 over the full range, NULL apart from "", strings of
-- any bytes, booleans; and through export and import again.
local moraine = require "moraine"
local support = require "support"

local CASES = tonumber(os.getenv("MORAINE_PROPERTY_CASES") or "") or 1000 -- fewer under valgrind (tests/run-all.sh)

local function random_value()
  local pick = math.random(1, 5)
  if pick == 1 then return moraine.null end
  if pick == 2 then return support.random_int64() end
  if pick == 3 then return support.random_bytes() end
  if pick == 4 then return math.random(0, 1) == 1 end
  return ""
end

describe("record codec (property, " .. CASES .. " cases)", function()
  after_each(support.cleanup)

  it("reads back every random row exactly as written", function()
    local seed = support.seed()
    local db = moraine.open(support.tmpdir("codec"), { no_sync = true })
    local cols = { "a", "b", "c", "d", "e", "f" }
    local rows = {}
    for i = 1, CASES do
      local r = {}
      for _, c in ipairs(cols) do r[c] = random_value() end
      rows[i] = r
    end
    db:commit(nil, function(tx)
      tx:define("custom_rows", cols)
      for i, r in ipairs(rows) do tx:insert("custom_rows", r, i - 1) end
    end)
    local got = db:scan("custom_rows", { at = moraine.ALL })
    assert.equal(CASES, #got, "seed " .. seed)
    for i, e in ipairs(got) do
      assert.equal(i - 1, e.ord, "seed " .. seed)
      assert(support.same_row(rows[i], e.row), "seed " .. seed .. ": row " .. i .. " differs: wrote " ..
        support.show(rows[i]) .. " read " .. support.show(e.row))
    end
    db:close()
  end)

  it("keeps valid-UTF-8 rows exact through export and import (byte-identical files)", function()
    local seed = support.seed()
    local db = moraine.open(support.tmpdir("codec-a"), { no_sync = true })
    local cols = { "k", "n", "s", "flag" }
    db:commit(nil, function(tx)
      tx:define("custom_text", cols)
      for i = 1, CASES do
        local t = {}
        for j = 1, math.random(0, 12) do t[j] = support.utf8_char(math.random(0, 0x2FFF)) end
        tx:insert("custom_text", { k = i, n = support.random_int64(), s = math.random(1, 4) == 1 and moraine.null or
          table.concat(t), flag = math.random(1, 3) == 1 and moraine.null or math.random(0, 1) == 1 })
      end
    end)
    local out1, out2 = support.tmpdir("x1"), support.tmpdir("x2")
    db:export_ndjson(out1)
    local db2 = moraine.open(support.tmpdir("codec-b"), { no_sync = true })
    db2:import_ndjson(out1)
    db2:export_ndjson(out2)
    assert.equal(support.read(out1 .. "/custom_text.ndjson"), support.read(out2 .. "/custom_text.ndjson"), "seed " .. seed)
    local a, b = db:scan("custom_text", { at = moraine.ALL }), db2:scan("custom_text", { at = moraine.ALL })
    for i = 1, CASES do assert(support.same_row(a[i].row, b[i].row), "seed " .. seed .. " row " .. i) end
    db:close()
    db2:close()
  end)
end)
