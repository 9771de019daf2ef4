--- The shared test helpers of spec/support.lua: a helper that passes what it
-- should refuse makes every spec that leans on it pass too.
local moraine = require "moraine"
local support = require "support"

describe("spec/support.lua", function()
  after_each(support.cleanup)

  it("same_row compares {json = ...} values by text and other tables by content", function()
    assert.is_true(support.same_row({ a = 1, j = { json = "[1]" } }, { a = 1, j = { json = "[1]" } }))
    assert.is_false(support.same_row({ j = { json = "[1]" } }, { j = { json = "[2]" } }))
    -- two tables without .json used to compare equal whatever they held
    assert.is_false(support.same_row({ t = { 1, 2 } }, { t = { 1, 3 } }))
    assert.is_false(support.same_row({ t = {} }, { t = { json = "{}" } }))
    assert.is_true(support.same_row({ t = { x = { 1 } } }, { t = { x = { 1 } } }))
    assert.is_false(support.same_row({ a = 1 }, { a = 1, b = moraine.null }))
    assert.is_false(support.same_row({ a = 1, b = moraine.null }, { a = 1 }))
  end)

  it("expect_err fails when fn returns, raises a non-moraine error, or another code or message", function()
    local db = moraine.open(support.tmpdir("sup"), { no_sync = true })
    local e = support.expect_err("ENOTFOUND", "ducklake_nope", db.scan, db, "ducklake_nope")
    assert.are.equal("ENOTFOUND", e.code)
    assert.is_false(pcall(support.expect_err, "ENOTFOUND", nil, function() end))
    assert.is_false(pcall(support.expect_err, "ENOTFOUND", nil, error, "plain"))
    assert.is_false(pcall(support.expect_err, "EINVAL", nil, db.scan, db, "ducklake_nope"))
    assert.is_false(pcall(support.expect_err, "ENOTFOUND", { "ducklake_nope", "absent" }, db.scan, db, "ducklake_nope"))
    db:close()
  end)

  it("mkdir, remove and cleanup handle paths with quotes and spaces", function()
    local base = support.tmpdir("it's a dir")
    local deep = base .. "/x 'y'/z"
    support.mkdir(deep)
    support.write(deep .. "/f", "text")
    assert.are.equal("text", support.read(deep .. "/f"))
    assert.is_true(support.sh("test -f " .. support.q(deep .. "/f")))
    support.cleanup()
    assert.is_false(support.sh("test -e " .. support.q(base)))
    support.remove(base) -- already gone: no error
  end)

  it("tables_of lists the .ndjson stems of a directory, sorted", function()
    local dir = support.tmpdir("tabs")
    support.mkdir(dir)
    for _, f in ipairs({ "b.ndjson", "a.ndjson", "c.txt", "d.ndjson.bak" }) do support.write(dir .. "/" .. f, "") end
    assert.are.same({ "a", "b" }, support.tables_of(dir))
  end)
end)
