--- moraine.cli.stats — `moraine stats`: entries and bytes per subspace and table.
-- @module moraine.cli.stats

local moraine = require "moraine"
local errors = require "moraine.cli.errors"
local util = require "moraine.cli.util"
local output = require "moraine.cli.output"
local catalog = require "moraine.cli.catalog"
local catalog_version = require "moraine.catalog_version"

local NULL = moraine.null
local with_hint = errors.with_hint
local is_null = util.is_null
local num = util.num
local print_table = output.print_table
local obj = output.obj
local print_json = output.print_json
local open_read = catalog.open_read
local need_method = catalog.need_method

local M = {}

local HELP = {
  stats = {
    synopsis = "moraine [-c DIR] stats [--json]",
    summary = "entries and bytes per subspace and table",
    text = [[
Walks the keyspace and shows, per subspace (C current, H history, S
snapshot, R rows, M meta, N counts: the entry counts kept per key range)
and table, the number of entries, key bytes and value bytes, then the
totals.]],
    options = { { "--json", "one JSON object {stats = [rows], total = {...}}" } },
    example = "moraine stats",
    flags = {},
    json = true,
    nargs = { 0, 0 },
  },
}

local STATS_COLS = { "subspace", "relation", "entries", "key_bytes", "value_bytes" }

local function collect_stats(db)
  local st = with_hint("see 'moraine stats --help'", db.stats, db)
  local rows, total = {}, { entries = 0, key_bytes = 0, value_bytes = 0 }
  for i, s in ipairs(st) do
    rows[i] = { subspace = s.subspace, relation = is_null(s.relation) and NULL or s.relation, entries = s.entries,
      key_bytes = s.key_bytes, value_bytes = s.value_bytes }
    total.entries = total.entries + num(s.entries)
    total.key_bytes = total.key_bytes + num(s.key_bytes)
    total.value_bytes = total.value_bytes + num(s.value_bytes)
  end
  return rows, total
end

local function stats(ctx)
  local db = open_read(ctx.dir)
  need_method(db, "stats", "stats")
  local rows, total = collect_stats(db)
  local ver = catalog_version.of(db)
  db:close()
  if catalog_version.compare(ver or "", catalog_version.CURRENT) ~= 0 then
    io.stderr:write("note: DuckLake catalog version ", catalog_version.describe(ver), "\n")
  end
  if ctx.json then
    local arr = {}
    for i, r in ipairs(rows) do arr[i] = obj(STATS_COLS, r) end
    return print_json(obj({ "stats", "total", "version" }, { stats = arr,
      total = obj({ "entries", "key_bytes", "value_bytes" }, total), version = ver or NULL }))
  end
  if output.isatty(1) then io.stdout:write("DuckLake catalog version ", catalog_version.describe(ver), "\n") end
  local SUB = { C = "current", H = "history", S = "snapshot", R = "rows", M = "meta", N = "counts" }
  for _, r in ipairs(rows) do
    r.sub_text = r.subspace .. (SUB[r.subspace] and (" (" .. SUB[r.subspace] .. ")") or "")
    if is_null(r.relation) then r.relation = "" end
  end
  rows[#rows + 1] = { sub_text = "total", relation = "", entries = total.entries, key_bytes = total.key_bytes,
    value_bytes = total.value_bytes }
  print_table({ { key = "sub_text", title = "subspace" }, { key = "relation", title = "table" }, { key = "entries" },
    { key = "key_bytes", title = "key bytes" }, { key = "value_bytes", title = "value bytes" } }, rows)
end

--- The help of `moraine stats` (moraine.cli.help prints it; moraine.cli.main parses
-- the command line by it).
-- @table help
M.help = HELP

--- The command: name -> function(ctx, ...) (ctx: `dir`, `json`, `at`,
-- `opts`; ... the positional arguments), returning the exit status (nil: 0).
-- @table run
M.run = { stats = stats }

--- The rows of `moraine stats` (verify counts its entries with them).
-- @param db the catalog
-- @treturn {table,...} per subspace and table: `subspace`, `relation`, `entries`, `key_bytes`, `value_bytes`
-- @treturn table the totals: `entries`, `key_bytes`, `value_bytes`
-- @raise a CLI error when db:stats fails
M.collect = collect_stats

return M
