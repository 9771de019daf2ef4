--- What DuckLake refuses, the verbs refuse too, and nothing is committed
-- (found by review against DuckLake's source; each case fails on the code
-- before its fix).
local moraine = require "moraine"
local support = require "support"

local function fresh()
  local db = moraine.open(support.tmpdir("vrefuse"), { no_sync = true })
  db:init("data/")
  return db
end

-- runs f in a transaction that must be refused with code and a message holding msg; nothing committed
local function refused(db, code, msg, f)
  local before = db:last_snapshot()
  local ok, err = pcall(db.transaction, db, f)
  assert.is_false(ok, "committed")
  assert.are.equal(code, err.code, err.message)
  assert.is_truthy(err.message:find(msg, 1, true), err.message)
  assert.are.equal(before, db:last_snapshot())
end

local function live_names(db, rel, col)
  local names = {}
  for _, r in ipairs(db:scan(rel, { at = db:last_snapshot() })) do names[#names + 1] = r.row[col] end
  table.sort(names)
  return names
end

describe("verbs refuse what DuckLake refuses", function()
  after_each(support.cleanup)

  it("a table cannot take a view's name (create_table, rename_table, db:exec's ALTER TABLE RENAME): one set of names", function()
    local db = fresh()
    db:transaction(function(tx)
      tx:create_view("v", "SELECT 1")
      tx:create_table("t", { { name = "a", type = "int64" } })
    end)
    refused(db, "EEXIST", 'a view "v" already exists', function(tx) tx:create_table("V", { { name = "a", type = "int64" } }) end)
    refused(db, "EEXIST", 'a view "v" already exists', function(tx) tx:rename_table("t", "V") end)
    local ok, err = pcall(db.exec, db, "ALTER TABLE t RENAME TO V")
    assert.is_false(ok)
    assert.is_truthy(err.message:find("Cannot rename table t to V, since V already exists.", 1, true), err.message)
    ok, err = pcall(db.exec, db, "CREATE TABLE v (a BIGINT)")
    assert.is_false(ok)
    assert.is_truthy(err.message:find('View with name "v" already exists!', 1, true), err.message)
    assert.are.same({ "t" }, live_names(db, "ducklake_table", "table_name"))
    -- once the view is dropped the name is free again
    db:transaction(function(tx) tx:drop_view("v"); tx:rename_table("t", "v") end)
    assert.are.same({ "v" }, live_names(db, "ducklake_table", "table_name"))
    db:close()
  end)
end)
