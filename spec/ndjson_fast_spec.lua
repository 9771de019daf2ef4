--- moraine_import_ndjson's two readers of a line (engine/ndjson.c): the fast
-- path for DuckDB's flat rows (plain keys and strings, short integers, null,
-- true, false) and jansson for everything else. A line written with one
-- escape in its first key can only go through jansson; the same rows
-- written plainly go through the fast path; the two imports must be the
-- same catalog, value for value, and a line the fast path must not take
-- must be refused exactly as jansson refuses it.
local moraine = require "moraine"
local support = require "support"

local FIX = support.FIXTURES

-- a copy of catalog @src in which every line's first key has its first
-- letter written as a \u escape (the same key, read only by jansson)
local function escaped_copy(src)
  local out = support.tmpdir("escaped")
  support.mkdir(out)
  for _, name in ipairs(support.tables_of(src)) do
    local text = support.read(src .. "/" .. name .. ".ndjson")
    text = text:gsub('([^\n]*)', function(line)
      return (line:gsub('^(%s*{%s*")(%a)', function(pre, c) return pre .. string.format("\\u%04x", c:byte()) end, 1))
    end)
    support.write(out .. "/" .. name .. ".ndjson", text)
  end
  return out
end

local function copy_catalog(src)
  local out = support.tmpdir("copy")
  support.mkdir(out)
  for _, name in ipairs(support.tables_of(src)) do
    support.write(out .. "/" .. name .. ".ndjson", support.read(src .. "/" .. name .. ".ndjson"))
  end
  return out
end

local function import(dir)
  local db = moraine.open(support.tmpdir("cat"), { no_sync = true })
  db:import_ndjson(dir)
  return db
end

local function import_error(dir)
  local db = moraine.open(support.tmpdir("cat"), { no_sync = true })
  local ok, e = pcall(db.import_ndjson, db, dir)
  local dump = support.dump(db)
  db:close()
  return ok, e, dump
end

describe("moraine_import_ndjson's fast path for flat rows", function()
  after_each(function() support.cleanup() end)

  for _, sc in ipairs({ "s1_evolution", "s2_multi_table", "s3_edge_values", "s4_encrypted" }) do
    it("imports " .. sc .. " as jansson reads it (every line's first key escaped)", function()
      local src = FIX .. "/" .. sc .. "/catalog"
      local esc = escaped_copy(src)
      assert.are_not.equal(support.read(src .. "/ducklake_snapshot.ndjson"),
        support.read(esc .. "/ducklake_snapshot.ndjson"))
      local a, b = import(src), import(esc)
      assert.are.equal(support.dump(b), support.dump(a))
      a:close()
      b:close()
    end)
  end

  it("reads integers, null, booleans, UTF-8 strings, whitespace and keys in another order as jansson does", function()
    local src = copy_catalog(FIX .. "/s1_evolution/catalog")
    -- a table moraine does not know: its values are kept as given
    local rows = {
      '{"id":0,"a":-0,"b":null,"c":"x"}',
      '{"id":1,"a":999999999999999999,"b":true,"c":"Zürich ✓ 𝄞"}',
      '{"id":2,"a":-999999999999999999,"b":false,"c":""}',
      '{"id":3,"a":1000000000000000000,"b":null,"c":"19 digits: jansson"}',
      '{"id":4,"a":-9223372036854775808,"b":null,"c":"int64 min"}',
      '{"id":5,"a":2.5,"b":null,"c":"a real: jansson"}',
      '{"id":6,"a":1e3,"b":null,"c":"an exponent: jansson"}',
      ' { "c" : "keys out of order" , "b" : false , "a" : 7 , "id" : 9 } ',
      '{"id":7,"a":{"k":[1,2]},"b":null,"c":"nested: jansson"}',
      '{"id":8,"a":8,"b":null,"c":"tab\\there: jansson"}',
    }
    support.write(src .. "/extra_values.ndjson", table.concat(rows, "\n") .. "\n")
    local esc = escaped_copy(src)
    local a, b = import(src), import(esc)
    local dump = support.dump(a)
    assert.are.equal(support.dump(b), dump)
    local got = {}
    a:read(function(rd)
      for row in rd:scan("extra_values") do got[#got + 1] = row end
    end)
    assert.are.equal(#rows, #got)
    local by = {}
    for _, r in ipairs(got) do by[tostring(r.c)] = r end
    assert.are.equal(0, by.x.a)
    assert.are.equal(moraine.null, by.x.b)
    assert.are.equal("999999999999999999", tostring(by["Zürich ✓ 𝄞"].a):gsub("LL$", ""))
    assert.are.equal(true, by["Zürich ✓ 𝄞"].b)
    assert.are.equal(false, by[""].b)
    assert.are.equal("-9223372036854775808", tostring(by["int64 min"].a):gsub("LL$", ""))
    assert.are.equal(7, by["keys out of order"].a)
    assert.are.equal(2.5, by["a real: jansson"].a)
    assert.are.equal("tab\there: jansson", by["tab\there: jansson"].c)
    a:close()
    b:close()
  end)

  it("refuses what jansson refuses, with its message, and leaves the catalog empty", function()
    local cases = {
      { '{"id":1,"id":2}', "names the same key twice" },
      { '{"id":1} x', "malformed JSON" },
      { '{"id":01}', "malformed JSON" },
      { '{"id":nul}', "malformed JSON" },
      { '{"id":"a', "malformed JSON" },
      { '{"id":"\1"}', "malformed JSON" },
      { '{"id":"\255"}', "malformed JSON" },
      { '{"di":1}', "row is missing column 'id'" },
      { '{"id":1,"di":2}', "unknown column 'di'" },
    }
    for _, c in ipairs(cases) do
      local src = copy_catalog(FIX .. "/s1_evolution/catalog")
      support.write(src .. "/extra_values.ndjson", '{"id":0}\n' .. c[1] .. "\n")
      local ok, e, dump = import_error(src)
      assert.is_false(ok, c[1])
      assert.is_truthy(tostring(e):find("extra_values.ndjson:2", 1, true), tostring(e))
      assert.is_truthy(tostring(e):find(c[2], 1, true), c[1] .. " -> " .. tostring(e))
      assert.is_truthy(dump:find("last=nil", 1, true), c[1])
    end
  end)
end)
