-- verbs_driver.lua — the Lua side of the verbs fuzz target (fuzz_verbs.c).
--
-- Called with (input, work): `input` is the fuzz input (a byte string), `work`
-- a fresh, empty directory (the catalog is work/cat; the C side removes
-- everything in it after the run).
--
-- The input is read byte by byte (bytes past the end read as 0) as a
-- sequence of verb transactions on a new catalog (db:init). One transaction:
-- an options byte, then ops until a COMMIT op or the end of the input. An op
-- is one byte (op % NOPS) followed by its argument bytes. Besides the verbs
-- there are ops to commit, to abort the transaction (the function raises),
-- and to run a nested transaction (it commits first; the outer one then
-- commits on top of it: the conflict/replay path). Every verb runs in pcall:
-- a refusal (a moraine error table) is fine. Arguments come from the input:
-- mostly the tables, columns and data files live in the catalog (read at
-- the start of each transaction, then followed roughly through its verbs),
-- sometimes names from fixed pools that may not exist; partition transforms,
-- sort directions and null orders from pools that include invalid ones;
-- partition value counts usually those of the live spec, sometimes wrong.
--
-- Checks (a failed one raises a plain error; the C side abort()s):
--   * a transaction's base (tx:base()) never changes, whatever its verbs do
--     (a refused verb included);
--   * a commit whose verbs were all accepted succeeds when no snapshot was
--     committed since its base; after a nested commit it may only fail with
--     ECONFLICT or a refusal found on replay (EINVAL, ENOTFOUND, EEXIST);
--   * db:verify() returns an empty list;
--   * at every snapshot, at most one ducklake_partition_info and one
--     ducklake_sort_info version is in force per table; every spec, column
--     and data file in force belongs to a table in force; every delete file in
--     force belongs to a data file in force, at most one per data file;
--   * every data file version (live or ended) with a partition_id names a
--     spec of its table that has columns, and carries one partition value per
--     spec column (partition_key_index 0..n-1); a file without one carries none;
--   * export . import is idempotent on the catalog the verbs built: it
--     exports, the export imports into a fresh catalog that verifies clean,
--     and exporting that catalog gives the same files, byte for byte.
-- Any error that is not a moraine error table escaping a verb is re-raised:
-- that is a driver bug (or a binding bug), never a refusal.
--
-- Environment: MORAINE_FUZZ_VERBOSE=1 prints every transaction and verb with
-- its arguments and outcome.

local input, work = ...
local moraine = require "moraine"
local null = moraine.null

local function env_flag(name)
  local v = os.getenv(name)
  return v ~= nil and v ~= "" and v ~= "0"
end
local verbose = env_flag("MORAINE_FUZZ_VERBOSE")
local function say(...)
  if verbose then io.stderr:write(string.format(...), "\n") end
end
local function fail(fmt, ...)
  error("driver check failed: " .. string.format(fmt, ...), 0)
end

-- ---- input bytes -----------------------------------------------------------

local pos, len = 1, #input
local function more() return pos <= len end
local function byte()
  if pos > len then return 0 end
  local b = input:byte(pos)
  pos = pos + 1
  return b
end
local NIL = {} -- stands for nil in the pools
local function pick(list)
  local v = list[byte() % #list + 1]
  if v == NIL then return nil end
  return v
end
local function flag() return byte() % 2 == 1 end

local function opendb(path) return moraine.open(path, { map_size = 64 * 1024 * 1024, no_sync = true }) end
local db = opendb(work .. "/cat")
db:init("data/")

-- ---- pools -------------------------------------------------------------------

local TABLES = { { "main", "t0" }, { "main", "t1" }, { "main", "t2" }, { "s1", "t0" }, { "s1", "t9" }, { "nosuch", "t0" },
  { "main", "t.dot" } }
local NEW_TABLE_NAMES = { "t0", "t1", "t2", "t3", "", "t.dot" }
local SCHEMAS = { "s1", "s2", "main", "" }
local COLS = { "a", "b", "c", "ts", "id", "x y", "A", "" }
local TYPES = { "int64", "varchar", "timestamp", "date", "decimal(18,2)", "boolean", "int32", "" }
local DEFAULTS = { NIL, NIL, "0", "'x'", "NULL" }
local TRANSFORMS = { "identity", "year", "month", "day", "hour", "bucket(4)", "truncate(10)", "", "bucket(0)", "Year" }
local KEY_FORMS = { "%s", "year(%s)", "month(%s)", "day(%s)", "hour(%s)", "bucket(4, %s)", "truncate(10, %s)", '"%s"',
  "f(%s", "", "bucket(, %s)", "identity(%s)" }
local EXPR_FORMS = { "%s", '"%s"', 'lower("%s")', "%s + 1", "", "nosuch" }
local DIRECTIONS = { NIL, "ASC", "DESC", "asc", "", "UP" }
local NULL_ORDERS = { NIL, "NULLS_FIRST", "NULLS_LAST", "NULLS FIRST", "", "X" }
local DIALECTS = { NIL, NIL, "duckdb", "spark" }
local SORT_SUFFIXES = { "", " DESC", " ASC NULLS FIRST", " DESC NULLS LAST", " NULLS MIDDLE", " desc" }
local PVALUES = { "2025", "1", "", "x", null, "0" }

-- ---- a rough model of the catalog, only to make plausible arguments ----------
-- A table is {schema, name}; its key "schema\0name" indexes the maps below.

-- live.tables = {{schema, name}, ...} (in table_id order), live.all = every
-- live data_file_id, and per table key: live.cols[k] = {column names},
-- live.files[k] = {data_file_ids}, live.nkeys[k] = key count of its spec.
-- (Arrays only are iterated: the order of a hash walk varies between runs.)
local live

local function tkey(t) return t[1] .. "\0" .. t[2] end

local function refresh()
  live = { tables = {}, all = {}, cols = {}, files = {}, nkeys = {} }
  db:read(function(rd)
    local schemas, byid = {}, {}
    for row in rd:scan("ducklake_schema") do schemas[row.schema_id] = row.schema_name end
    for row in rd:scan("ducklake_table") do
      local t = { schemas[row.schema_id] or "main", row.table_name }
      local k = tkey(t)
      byid[row.table_id] = k
      live.tables[#live.tables + 1] = t
      live.cols[k], live.files[k] = {}, {}
      local spec = rd:partition_spec(row.table_id)
      if spec then live.nkeys[k] = #spec.columns end
    end
    for row in rd:scan("ducklake_column") do
      local k = byid[row.table_id]
      if k then table.insert(live.cols[k], row.column_name) end
    end
    for row in rd:scan("ducklake_data_file") do
      local k = byid[row.table_id]
      if k then table.insert(live.files[k], row.data_file_id) end
      live.all[#live.all + 1] = row.data_file_id
    end
  end)
end

local function pick_table()
  if byte() < 176 and #live.tables > 0 then return pick(live.tables) end
  return pick(TABLES)
end

-- the table argument as the binding takes it: "t", "s.t" or {schema =, table =}
-- (one byte, always read)
local function tref(t)
  local b = byte()
  if t[2]:find(".", 1, true) or b % 4 == 0 then return { schema = t[1], table = t[2] } end
  if t[1] == "main" then return t[2] end
  return t[1] .. "." .. t[2]
end

-- a table and its argument form: the first three bytes of every table verb
local function table_arg()
  local t = pick_table()
  return t, tref(t)
end

local function pick_col(t)
  local cols = live.cols[tkey(t)]
  if byte() < 192 and cols and #cols > 0 then return pick(cols) end
  return pick(COLS)
end

local function pick_id(t)
  local b = byte()
  local own = live.files[tkey(t)]
  if b < 160 and own and #own > 0 then return own[b % #own + 1] end
  if b < 224 and #live.all > 0 then return live.all[b % #live.all + 1] end -- a file of any table
  return b % 48 - 4 -- a made-up id (some negative)
end

local function ids(t, max)
  local r = {}
  for _ = 1, byte() % (max + 1) do r[#r + 1] = pick_id(t) end
  return r
end

local function column_def()
  local c = { name = pick(COLS), type = pick(TYPES) }
  local b = byte()
  if b % 3 == 1 then c.not_null = true end
  if b % 5 >= 3 then c.default = pick(DEFAULTS) end
  return c
end

local function partition_key(t)
  local col = pick_col(t)
  if flag() then return (string.format(pick(KEY_FORMS), col)) end
  return { column = col, transform = pick(TRANSFORMS) }
end

local function sort_key(t)
  local col = pick_col(t)
  local b = byte()
  if b % 2 == 1 then return string.format(pick(EXPR_FORMS), col) .. pick(SORT_SUFFIXES) end
  return { expression = string.format(pick(EXPR_FORMS), col), dialect = pick(DIALECTS), sort_direction = pick(DIRECTIONS),
    null_order = pick(NULL_ORDERS) }
end

local function sort_keys(t, max)
  local r = {}
  for _ = 1, byte() % (max + 1) do r[#r + 1] = sort_key(t) end
  return r
end

local file_counter = 0
local function data_file(t)
  file_counter = file_counter + 1
  local f = {
    path = "f" .. file_counter .. ".parquet",
    record_count = byte() - 2, -- sometimes negative: refused
    file_size_bytes = byte() * 100,
  }
  local b = byte()
  if b % 4 == 1 then f.footer_size = b end
  if b % 8 >= 6 then f.path_is_absolute = true; f.path = "/abs/" .. f.path end
  if b % 16 == 15 then f.path = "" end
  if b % 32 >= 28 then f.file_format = "parquet" end
  -- partition values: usually one per key of the live spec, sometimes a wrong count
  local v = byte()
  local n
  if v % 4 == 0 then n = (v // 4) % 4 else n = live.nkeys[tkey(t)] end
  if n and v % 8 ~= 7 then
    local pv = {}
    for i = 1, n do pv[i] = pick(PVALUES) end
    f.partition_values = pv
  end
  if byte() % 3 == 0 then
    local st = {}
    for i = 1, byte() % 3 do
      st[i] = { column = pick_col(t), value_count = byte(), null_count = byte() % 3, min_value = "1", max_value = "9" }
      if flag() then st[i].contains_nan = false end
    end
    f.stats = st
  end
  return f
end

local function data_files(t, max)
  local r = {}
  for i = 1, byte() % (max + 1) do r[i] = data_file(t) end
  return r
end

-- a short rendering of verb arguments, for MORAINE_FUZZ_VERBOSE
local function show(v, depth)
  depth = depth or 0
  if type(v) == "string" then return string.format("%q", v) end
  if v == null then return "null" end
  if type(v) ~= "table" then return tostring(v) end
  if depth > 3 then return "{...}" end
  local parts, n = {}, #v
  for i = 1, n do parts[#parts + 1] = show(v[i], depth + 1) end
  local keys = {}
  for k in pairs(v) do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = tostring(k) end
  end
  table.sort(keys)
  for _, k in ipairs(keys) do parts[#parts + 1] = k .. " = " .. show(v[k], depth + 1) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- pcall a verb (tx[name]): a moraine error is a refusal; anything else is
-- re-raised. Then the transaction's base must be the one it began with.
local base_of = setmetatable({}, { __mode = "k" })
local function call(tx, name, ...)
  local ok, res = pcall(tx[name], tx, ...)
  if verbose then
    local args = {}
    for i = 1, select("#", ...) do args[i] = show((select(i, ...))) end
    say("  tx:%s(%s) -> %s", name, table.concat(args, ", "), ok and ("ok " .. tostring(res)) or tostring(res))
  end
  if not ok and not moraine.is_error(res) then error(res, 0) end
  local b = tx:base()
  if b ~= base_of[tx] then
    fail("tx:%s %s and the transaction's base moved from snapshot %s to %s", name, ok and "succeeded" or "was refused",
      tostring(base_of[tx]), tostring(b))
  end
  return ok, res
end

local function remove(list, v)
  for i = #list, 1, -1 do if list[i] == v then table.remove(list, i) end end
end

-- ---- ops -----------------------------------------------------------------

local OP_COMMIT, OP_ABORT, OP_NESTED = 0, 1, 2
local ABORT = setmetatable({}, { __tostring = function() return "driver: transaction aborted on purpose" end })

local verbs = {
  function(tx) -- create_table: a new name (0 s n) or a known one (1.. i j), form, columns
    local t
    if byte() % 4 == 0 then t = { pick({ "main", "s1", "nosuch" }), pick(NEW_TABLE_NAMES) } else t = pick_table() end
    local ref = tref(t)
    local cols = {}
    for i = 1, byte() % 4 do cols[i] = column_def() end
    if call(tx, "create_table", ref, cols) then
      local k = tkey(t)
      live.tables[#live.tables + 1] = t
      live.cols[k], live.files[k], live.nkeys[k] = {}, {}, nil
      for _, c in ipairs(cols) do table.insert(live.cols[k], c.name) end
    end
  end,
  function(tx) call(tx, "create_schema", pick(SCHEMAS)) end,
  function(tx) -- add_column
    local t, ref = table_arg()
    local c = column_def()
    if call(tx, "add_column", ref, c) and live.cols[tkey(t)] then table.insert(live.cols[tkey(t)], c.name) end
  end,
  function(tx) -- rename_column, sometimes with new sort keys
    local t, ref = table_arg()
    local old, new = pick_col(t), pick(COLS)
    local ok
    if flag() then ok = call(tx, "rename_column", ref, old, new, sort_keys(t, 2))
    else ok = call(tx, "rename_column", ref, old, new) end
    local cols = live.cols[tkey(t)]
    if ok and cols then remove(cols, old); cols[#cols + 1] = new end
  end,
  function(tx) -- drop_column
    local t, ref = table_arg()
    local c = pick_col(t)
    if call(tx, "drop_column", ref, c) and live.cols[tkey(t)] then remove(live.cols[tkey(t)], c) end
  end,
  function(tx) -- rename_table
    local t, ref = table_arg()
    local new = pick(NEW_TABLE_NAMES)
    if call(tx, "rename_table", ref, new) then
      local k, nt = tkey(t), { t[1], new }
      local nk = tkey(nt)
      live.cols[nk], live.files[nk], live.nkeys[nk] = live.cols[k], live.files[k], live.nkeys[k]
      for i, e in ipairs(live.tables) do
        if tkey(e) == k then live.tables[i] = nt end
      end
    end
  end,
  function(tx) -- drop_table
    local t, ref = table_arg()
    if call(tx, "drop_table", ref) then live.files[tkey(t)] = {} end
  end,
  function(tx) -- set_partitioning (0 keys: reset)
    local t, ref = table_arg()
    local keys = {}
    for i = 1, byte() % 4 do keys[i] = partition_key(t) end
    if call(tx, "set_partitioning", ref, keys) then live.nkeys[tkey(t)] = #keys end
  end,
  function(tx) -- clear_partitioning
    local t, ref = table_arg()
    if call(tx, "clear_partitioning", ref) then live.nkeys[tkey(t)] = 0 end
  end,
  function(tx) -- set_sorting
    local t, ref = table_arg()
    call(tx, "set_sorting", ref, sort_keys(t, 3))
  end,
  function(tx) -- clear_sorting
    local _, ref = table_arg()
    call(tx, "clear_sorting", ref)
  end,
  function(tx) -- add_data_files
    local t, ref = table_arg()
    local fs = data_files(t, 3)
    local ok, first = call(tx, "add_data_files", ref, fs)
    local own = live.files[tkey(t)]
    if ok and first and own then
      for i = 0, #fs - 1 do own[#own + 1] = first + i end -- named later in this transaction: refused
    end
  end,
  function(tx) -- add_delete_files
    local t, ref = table_arg()
    local dels = {}
    for i = 1, byte() % 3 do
      file_counter = file_counter + 1
      dels[i] = { data_file_id = pick_id(t), path = "del" .. file_counter .. ".parquet", delete_count = byte() % 5,
        file_size_bytes = byte(), footer_size = byte() % 7 }
      if flag() then dels[i].format = "parquet" end
    end
    call(tx, "add_delete_files", ref, dels)
  end,
  function(tx) -- delete_files
    local t, ref = table_arg()
    call(tx, "delete_files", ref, ids(t, 3))
  end,
  function(tx) -- rewrite_files
    local t, ref = table_arg()
    local inputs = ids(t, 3)
    call(tx, "rewrite_files", ref, inputs, data_files(t, 2))
  end,
}
local NOPS = 3 + #verbs

-- Errors a commit may raise when a nested transaction committed on top of
-- its base: a conflict, or a verb refused when replayed on the newer snapshot.
local REPLAY_CODES = { ECONFLICT = true, EINVAL = true, ENOTFOUND = true, EEXIST = true }

local function transaction(depth)
  local opts
  local o = byte()
  if o % 4 == 1 then opts = { author = "fuzz", message = "m" .. o } end
  if o % 4 == 2 then opts = { extra_info = "" } end
  refresh()
  local base = db:last_snapshot()
  say("%stransaction (base %s)", depth > 0 and "nested " or "", tostring(base))
  local ok, err = pcall(db.transaction, db, function(tx)
    base_of[tx] = tx:base()
    while more() do
      local op = byte() % NOPS
      if op == OP_COMMIT then return end
      if op == OP_ABORT then error(ABORT, 0) end
      if op == OP_NESTED then
        if depth == 0 then
          transaction(1)
          refresh() -- the outer transaction goes on against the newer catalog (its base stays)
        end
      else
        verbs[op - 2](tx)
      end
    end
  end, opts)
  say("%s-> %s %s", depth > 0 and "nested " or "", ok and "committed" or "not committed:", tostring(err))
  if ok or err == ABORT then return end
  if not moraine.is_error(err) then error(err, 0) end
  -- A moraine error here comes from the commit (each verb's own refusal was
  -- caught in call). Every verb was accepted against the base plus the verbs
  -- before it, so with no snapshot committed since the base the commit must
  -- succeed; after a nested commit only a conflict or a replayed refusal may
  -- stop it.
  if db:last_snapshot() == base then
    fail("the commit of accepted verbs failed with no snapshot committed since the base %s: %s", tostring(base), tostring(err))
  end
  if not REPLAY_CODES[err.code] then
    fail("the commit on top of a nested commit failed with %s", tostring(err))
  end
end

while more() do transaction(0) end

-- ---- invariants ------------------------------------------------------------

local function verify_clean(d, what)
  local probs = d:verify()
  if #probs > 0 then
    local lines = {}
    for i, p in ipairs(probs) do lines[i] = tostring(p.key) .. ": " .. tostring(p.problem) end
    fail("%s: db:verify() reported %d violation(s):\n  %s", what, #probs, table.concat(lines, "\n  "))
  end
end
verify_clean(db, "the verb-built catalog")

local last = db:last_snapshot() or 0
db:read(function(rd)
  -- at every snapshot: one spec of each kind in force per table; what is in
  -- force belongs to a table in force; a delete file to a data file in force,
  -- and at most one per data file
  for s = 0, last do
    local tables = {}
    for row in rd:scan("ducklake_table", { at = s }) do tables[row.table_id] = true end
    for _, rel in ipairs({ "ducklake_partition_info", "ducklake_sort_info" }) do
      local seen = {}
      for row in rd:scan(rel, { at = s }) do
        local t = row.table_id
        local id = row.partition_id or row.sort_id
        if seen[t] then
          fail("%s: two versions in force for table %s at snapshot %d (ids %s and %s)", rel, tostring(t), s, tostring(seen[t]),
            tostring(id))
        end
        seen[t] = id
        if not tables[t] then fail("%s %s is in force at snapshot %d but its table %s is not", rel, tostring(id), s, tostring(t)) end
      end
    end
    for row in rd:scan("ducklake_column", { at = s }) do
      if not tables[row.table_id] then
        fail("column %s (%s) is in force at snapshot %d but its table %s is not", tostring(row.column_id), tostring(row.column_name), s,
          tostring(row.table_id))
      end
    end
    local files = {}
    for row in rd:scan("ducklake_data_file", { at = s }) do
      files[row.data_file_id] = true
      if not tables[row.table_id] then
        fail("data file %s is in force at snapshot %d but its table %s is not", tostring(row.data_file_id), s, tostring(row.table_id))
      end
    end
    local dels = {}
    for row in rd:scan("ducklake_delete_file", { at = s }) do
      local f = row.data_file_id
      if not files[f] then
        fail("delete file %s is in force at snapshot %d but its data file %s is not", tostring(row.delete_file_id), s, tostring(f))
      end
      if dels[f] then
        fail("data file %s has two delete files in force at snapshot %d (%s and %s)", tostring(f), s, tostring(dels[f]),
          tostring(row.delete_file_id))
      end
      dels[f] = row.delete_file_id
    end
  end
  -- every data file version carries its spec's partition values
  for row, children in rd:scan("ducklake_data_file", { at = moraine.ALL }) do
    local vals = children.ducklake_file_partition_value or {}
    local what = string.format("data file %s of table %s (snapshots %s..%s)", tostring(row.data_file_id), tostring(row.table_id),
      tostring(row.begin_snapshot), tostring(row.end_snapshot))
    if row.partition_id == null then
      if #vals ~= 0 then fail("%s has no partition_id but %d partition values", what, #vals) end
    else
      local spec = rd:partition_spec_by_id(row.table_id, row.partition_id)
      if not spec then fail("%s names partition spec %s, which its table does not have", what, tostring(row.partition_id)) end
      if #spec.columns == 0 then fail("%s names partition spec %s, which has no columns", what, tostring(row.partition_id)) end
      if #vals ~= #spec.columns then
        fail("%s has %d partition values for spec %s of %d columns", what, #vals, tostring(row.partition_id), #spec.columns)
      end
      for i, v in ipairs(vals) do
        if v.partition_key_index ~= i - 1 then
          fail("%s: partition value %d has partition_key_index %s", what, i, tostring(v.partition_key_index))
        end
      end
    end
  end
end)

-- export . import . export gives the same files, byte for byte
local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end
local ok, err = pcall(db.export_ndjson, db, work .. "/x1")
if not ok then fail("export of the verb-built catalog failed: %s", tostring(err)) end
local db2 = opendb(work .. "/cat2")
ok, err = pcall(db2.import_ndjson, db2, work .. "/x1")
if not ok then fail("the export of the verb-built catalog does not import: %s", tostring(err)) end
verify_clean(db2, "the re-imported catalog")
ok, err = pcall(db2.export_ndjson, db2, work .. "/x2")
if not ok then fail("re-export failed: %s", tostring(err)) end
if #db2:relations() ~= #db:relations() then
  fail("the re-imported catalog has %d relations, the original %d", #db2:relations(), #db:relations())
end
for _, rel in ipairs(db:relations()) do
  local a = slurp(work .. "/x1/" .. rel.name .. ".ndjson")
  local b = slurp(work .. "/x2/" .. rel.name .. ".ndjson")
  if a ~= b then
    fail("%s.ndjson differs after export . import . export:\n--- first export:\n%s\n--- re-export:\n%s", rel.name, a:sub(1, 3000),
      b:sub(1, 3000))
  end
end
db2:close()
db:close()
