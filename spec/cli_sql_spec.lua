--- `moraine sql`: DuckLake's DDL from the command line (a migration in one
-- snapshot, statements from stdin, DML refused), run as a subprocess through
-- scripts/moraine-dev with this busted run's runtime.
local moraine = require "moraine"
local support = require "support"

local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"
local ROOT = os.getenv("PWD") or "."
local q = support.q

local function run(args, stdin)
  local dir = support.tmpdir("run")
  support.mkdir(dir)
  support.write(dir .. "/stdin", stdin or "")
  local qargs = {}
  for i, a in ipairs(args) do qargs[i] = q(a) end
  os.execute(string.format("cd %s && MORAINE_CATALOG= MORAINE_FORCE_TTY= MORAINE_LUA=%s sh %s %s >%s 2>%s <%s; echo $? >%s",
    q(ROOT), RUNTIME, q(ROOT .. "/scripts/moraine-dev"), table.concat(qargs, " "), q(dir .. "/out"), q(dir .. "/err"),
    q(dir .. "/stdin"), q(dir .. "/rc")))
  return { out = support.read(dir .. "/out"), err = support.read(dir .. "/err"),
           code = tonumber((support.read(dir .. "/rc"):match("%d+"))) }
end

describe("moraine sql", function()
  after_each(support.cleanup)

  it("runs a multi-statement migration as one snapshot", function()
    local cat = support.tmpdir("cat")
    assert.are.equal(0, run({ "-c", cat, "init" }).code)
    local r = run({ "-c", cat, "sql", [[CREATE TABLE Events(id BIGINT, ts TIMESTAMP, "My Col" VARCHAR);
      BEGIN;
      ALTER TABLE events RENAME COLUMN TS TO event_time;
      ALTER TABLE EVENTS SET PARTITIONED BY (day(event_time), bucket(04, ID));
      ALTER TABLE events SET SORTED BY ("My Col" DESC, year(event_time));
      COMMENT ON TABLE events IS 'the events';
      COMMIT;]] })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("committed; the newest snapshot is 2\n", r.out)
    local db = moraine.open(cat, { read_only = true })
    local changes = db:scan("ducklake_snapshot_changes", { at = 2 })
    assert.are.equal("altered_table:1", changes[#changes].row.changes_made)
    local exprs = {}
    for _, e in ipairs(db:scan("ducklake_sort_expression")) do exprs[#exprs + 1] = e.row.expression end
    assert.are.same({ '"My Col"', '"year"(event_time)' }, exprs)
    db:close()
  end)

  it("reads statements from stdin with '-', says when nothing was committed, --json", function()
    local cat = support.tmpdir("cat")
    assert.are.equal(0, run({ "-c", cat, "init" }).code)
    local r = run({ "-c", cat, "sql", "-" }, "CREATE SCHEMA stage; CREATE TABLE stage.t(a INTEGER);")
    assert.are.equal("committed; the newest snapshot is 2\n", r.out)
    r = run({ "-c", cat, "sql", "ALTER TABLE stage.T RESET PARTITIONED BY" })
    assert.are.equal("nothing to commit (no statement changed the catalog)\n", r.out)
    r = run({ "-c", cat, "sql", "--json", "DROP TABLE stage.t" })
    assert.are.equal('{"snapshot":3}\n', r.out)
  end)

  it("takes a migration that starts with a '-- comment' as its statements, not as an option", function()
    local cat = support.tmpdir("cat")
    assert.are.equal(0, run({ "-c", cat, "init" }).code)
    local r = run({ "-c", cat, "sql", "-- migration 1\nCREATE TABLE t (a INTEGER);\n" })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("committed; the newest snapshot is 1\n", r.out)
    r = run({ "-c", cat, "sql", "-- nothing but a comment" })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("nothing to commit (no statement changed the catalog)\n", r.out)
    r = run({ "-c", cat, "sql", "--bogus" })
    assert.are.equal(2, r.code, r.err)
    assert.truthy(r.err:find("unknown option --bogus", 1, true), r.err)
    -- an --option=value whose value spans lines stays an option
    r = run({ "-c", cat, "layout", "t", "--where=a >= 1\nAND a <= 2" })
    assert.are.equal(0, r.code, r.err)
    assert.truthy(r.out:find("where a >= 1\nAND a <= 2", 1, true), r.out)
  end)

  it("refuses DML with exit status 1: moraine writes no data", function()
    local cat = support.tmpdir("cat")
    assert.are.equal(0, run({ "-c", cat, "init" }).code)
    local r = run({ "-c", cat, "sql", "CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1)" })
    assert.are.equal(1, r.code)
    assert.truthy(r.err:find("moraine writes no data", 1, true), r.err)
    assert.truthy(r.err:find("hint: see 'moraine sql --help'", 1, true), r.err)
  end)
end)
