--- moraine — a DuckLake catalog on LMDB, from Lua.
--
-- `require "moraine"` loads the C module `moraine.core` (bindings/moraine_core.c,
-- a thin layer over engine/moraine.h) and gives the API below. It runs on
-- Lua 5.4 and on LuaJIT 2.1.
--
--     local moraine = require "moraine"
--     local db = moraine.open("/tmp/lake.moraine")
--     db:commit(1, function(tx)
--       tx:define("ducklake_snapshot", {"snapshot_id", "snapshot_time", ...})
--       tx:insert("ducklake_snapshot", {snapshot_id = 1, ...})
--     end)
--     for _, e in ipairs(db:scan("ducklake_table")) do print(e.row.table_name) end
--     db:close()
--
-- or, through moraine's own verbs (the rows DuckLake itself would write):
--
--     local db = moraine.open("/tmp/lake.moraine")
--     db:init("data/")
--     local snap = db:transaction(function(tx)
--       tx:create_table("events", {{name = "id", type = "int64"}, {name = "ts", type = "timestamp"}})
--       tx:set_partitioning("events", {"year(ts)", "month(ts)"})
--     end, {author = "me", message = "create events"})
--
-- ## Errors
--
-- Every failure raises a Lua error whose value is a table
--
--     { code = "EINVAL", message = "ducklake_table: missing column 'path'" }
--
-- `code` is the engine's error name without the `MORAINE_` prefix (as
-- `moraine_strerror` gives it: EINVAL, ENOTFOUND, EEXIST, ESNAPSHOT,
-- ENOTLIVE, ECORRUPT, ELMDB, ENOMEM, EIO, EJSON, EREADONLY, ETXN, EMAPFULL,
-- ECONFLICT, EFORK: a handle used in a process other than the one that
-- opened it, e.g. after fork; close it and open the catalog again there;
-- EFORMAT: the catalog is in a store format this build does not read or
-- write, an older one until `moraine compact` rewrites it); `message` is the engine's `moraine_errmsg()` text (it names the
-- table, row, column or key) or, for checks done by the binding, a message of
-- the same form. The table's metatable gives `tostring(e)` =
-- `"moraine: EINVAL: <message>"`; test for it with `moraine.is_error(e)`.
--
-- The one exception: an argument of the wrong Lua type (a number where a
-- string is needed, a missing function...) is caught by the standard
-- `luaL_check*` functions and raises a plain string error, like any Lua
-- library ("bad argument #1 to 'commit' (integer expected, got string)").
--
-- Errors raised by your own functions (the commit, transaction and read
-- functions, the import progress callback) are re-raised unchanged, whatever
-- their value.
--
-- ## Values
--
-- | SQL / engine value      | Lua value                                        |
-- |-------------------------|--------------------------------------------------|
-- | NULL (`MORAINE_NULL`)   | `moraine.null` (never `nil`, never `""`)         |
-- | BIGINT (`MORAINE_INT`)  | integer (see Integers)                           |
-- | VARCHAR/UUID/TIMESTAMPTZ (`MORAINE_STR`) | string, any bytes (NUL, invalid UTF-8), full length |
-- | BOOLEAN (`MORAINE_BOOL`)| boolean                                          |
-- | DOUBLE (`MORAINE_REAL`) | float (only columns moraine does not know)       |
-- | nested JSON (`MORAINE_JSON`) | `{json = "<compact JSON text>"}`            |
--
-- On input (`tx:insert` and friends) the same mapping is used backwards: a
-- number is an integer when it is integral (Lua 5.4: of subtype integer, or
-- a float with an integral value in a BIGINT column), otherwise a DOUBLE; a
-- non-integral or out-of-range number in a BIGINT column is an EINVAL error
-- naming the column. Any other value (a function, a table without a string
-- `json` field, ...) is an EINVAL error naming the column. Which value type a
-- column accepts is checked by the engine (EINVAL naming table, row, column).
--
-- ## Integers
--
-- Integers are exact int64 values. On Lua 5.4 they are native integers. On
-- LuaJIT, where numbers are doubles, an integer within +-2^53 is a plain
-- number and one outside that range is an `int64_t` cdata (compare such
-- values with `moraine.int64(a) == moraine.int64(b)`, or use `tostring`).
-- As input LuaJIT also accepts `int64_t` and `uint64_t` cdata (a `uint64_t`
-- above 2^63-1 is an error).
--
-- @module moraine

local core = require "moraine.core"

local M = {}

--- Sentinel for SQL NULL (a lightuserdata, the same as `moraine.core.null`).
-- Distinct from `""`, `false` and `nil`. Rows read from the catalog hold it
-- for every NULL cell; rows written must use it for NULL cells.
-- `tostring(moraine.null)` is `"NULL"` (a `__tostring` on the light userdata
-- metatable, which gives any other light userdata its usual
-- `"userdata: 0x..."` text; moraine_core.c, set_null_tostring).
M.null = core.null

--- Wall-clock seconds from a monotonic clock (`clock_gettime(CLOCK_MONOTONIC)`):
-- a number (nanosecond resolution) counted from an arbitrary fixed point, so
-- only differences mean something. Unlike `os.clock` it is not CPU time, and
-- unlike `os.time` it never jumps. Raises EIO if the clock cannot be read.
-- @treturn number seconds
-- @function clock
M.clock = core.clock

--- Sleeps @seconds in the calling thread (`nanosleep`); a signal cuts it
-- short, and the lua / luajit commands then raise "interrupted!" on Ctrl-C as
-- anywhere else. Blocks the thread: in nginx use `ngx.sleep`.
-- @tparam number seconds 0 to 1e6
-- @treturn boolean true, or false when a signal cut the sleep short
-- @raise EINVAL (negative, NaN or over 1e6 seconds)
-- @function sleep
M.sleep = core.sleep

--- Version of moraine, "0.1.0" (`MORAINE_VERSION_STRING`).
M.version = core.version

-- LuaJIT: int64 values outside +-2^53 travel as int64_t cdata. The C module
-- cannot create cdata, so it calls back into these two functions.
local ffi
if rawget(_G, "jit") then
  local ok, f = pcall(require, "ffi")
  if ok then ffi = f end
end
if ffi then
  local int64_t, uint64_t = ffi.typeof("int64_t"), ffi.typeof("uint64_t")
  -- hi is the signed upper 32 bits, lo the unsigned lower 32 bits
  core.set_int64_ctor(function(hi, lo)
    return ffi.cast(int64_t, hi) * 4294967296 + lo
  end)
  -- decimal text of an int64_t/uint64_t cdata (strtoll on the C side checks
  -- the range), nil for any other cdata
  core.set_cdata_conv(function(v)
    if ffi.istype(int64_t, v) or ffi.istype(uint64_t, v) then
      return (tostring(v):gsub("U?LL$", ""))
    end
    return nil
  end)
end

-- LuaJIT: rd:files_batch(T, S, {raw = true}) answers each array as a column
-- of cells that point into the read transaction's pages (no Lua string is
-- made until asked). The C side (bindings/moraine_batch.c, mb_cell) hands over
-- the cells' addresses; this wraps them. The layout must match mb_cell.
local BatchColumn
if ffi then
  ffi.cdef [[
typedef struct {
  union { int64_t i; double d; const char *s; } v;
  uint32_t len;
  int32_t type;
} moraine_batch_cell;
]]
  local cellp, openp, forkp = ffi.typeof("const moraine_batch_cell *"), ffi.typeof("void *const *"), ffi.typeof("const unsigned *")
  local NULL, TWO53, floor = core.null, 2 ^ 53, math.floor
  local T_ABSENT, T_NULL, T_INT, T_STR, T_BOOL, T_REAL, T_JSON = -1, 0, 1, 2, 3, 4, 5
  local KIND = { [T_NULL] = "null", [T_INT] = "integer", [T_STR] = "string", [T_BOOL] = "boolean", [T_REAL] = "real",
    [T_JSON] = "json" }
  BatchColumn = {}
  -- methods by name; a number (col[i], as on an array) is refused: a raw
  -- column is read with col:get(i)
  BatchColumn.__index = function(_, k)
    local m = rawget(BatchColumn, k)
    if m == nil and type(k) == "number" then
      core.raise("EINVAL", "files_batch: a raw column is read with col:get(i) (or col.cells[i - 1]), not col[i]")
    end
    return m
  end
  -- the cell of file @i (1-based), nil outside 1..n; ETXN once the read
  -- ended, EFORK in a fork's child (the cells lie in the parent's read)
  local function cell(col, i)
    if col._open[0] == nil then
      core.raise("ETXN", "files_batch: the read transaction of this batch has ended (its values lived in the read's pages)")
    end
    if col._forks[0] ~= col._fork0 then
      core.raise("EFORK", "files_batch: the batch was read in another process (before fork): its values lie in that process's "
        .. "read, which it may end at any time; read the batch again in this process (open the catalog here)")
    end
    if type(i) ~= "number" or i < 1 or i > col.n or floor(i) ~= i then return nil end
    return col.cells[i - 1]
  end
  function BatchColumn.get(col, i)
    local c = cell(col, i)
    if c == nil then return nil end
    local t = c.type
    if t == T_STR then return ffi.string(c.v.s, c.len) end
    if t == T_INT then
      local v = c.v.i
      if v >= -TWO53 and v <= TWO53 then return tonumber(v) end
      return v
    end
    if t == T_ABSENT then return false end
    if t == T_NULL then return NULL end
    if t == T_BOOL then return c.v.i ~= 0 end
    if t == T_REAL then return c.v.d end
    if t == T_JSON then return { json = ffi.string(c.v.s, c.len) } end
    core.raise("ECORRUPT", "files_batch: a value of unknown type " .. tostring(t))
  end
  function BatchColumn.kind(col, i)
    local c = cell(col, i)
    return c ~= nil and KIND[c.type] or nil
  end
  function BatchColumn.len(col, i)
    local c = cell(col, i)
    if c ~= nil and (c.type == T_STR or c.type == T_JSON) then return tonumber(c.len) end
    return nil
  end
  function BatchColumn.ptr(col, i)
    local c = cell(col, i)
    if c ~= nil and (c.type == T_STR or c.type == T_JSON) then return c.v.s, tonumber(c.len) end
    return nil
  end
  function BatchColumn.is_open(col) return col._open[0] ~= nil and col._forks[0] == col._fork0 end
  core.set_batch_wrap(function(res, rd, open, cells, forks, fork0)
    local n, o, f = tonumber(res.n), ffi.cast(openp, open), ffi.cast(forkp, forks)
    local function wrap(t)
      for k, p in pairs(t) do
        t[k] = setmetatable({ n = n, cells = ffi.cast(cellp, p), _open = o, _anchor = cells, _read = rd, _forks = f,
          _fork0 = fork0 }, BatchColumn)
      end
    end
    wrap(res.file)
    if res.partition_values then wrap(res.partition_values) end
    if res.stats then
      for _, s in pairs(res.stats) do wrap(s) end
    end
    if res.delete_file then wrap(res.delete_file) end
    return res
  end)
end

-- ---- SQL-form keys of set_partitioning / set_sorting / rename_column -------------

-- moraine.sql's reader (LPeg), loaded when a key needs it
local function sql_module() return require "moraine.sql" end

-- calls @fn(...), giving back its result, or nil and the message of a SQL error it raised
local function sql_call(fn, ...)
  local ok, r = pcall(fn, ...)
  if ok then return r end
  if type(r) == "table" and r.sql_error then return nil, r.message end
  error(r, 0)
end

--- Parses one partition key in DuckLake's SQL form (`SET PARTITIONED BY (...)`)
-- as `db:exec` does (moraine.sql: its lexer, moraine.expr's parser,
-- `moraine.sql.partition_key`): `"region"` is `{column = "region", transform =
-- "identity"}`; `"year(ts)"` is `{column = "ts", transform = "year"}` (function
-- names lower-cased, quoted or not); `"bucket(04, id)"` is `{column = "id",
-- transform = "bucket(4)"}` (an integer bucket count written as DuckLake
-- writes it); any other `fn(p, ..., col)` gives `transform = "fn(p, ...)"`, the
-- parameters rendered as DuckDB does. Which transforms exist (identity,
-- year, month, day, hour, bucket(N) with 1 <= N <= 2147483647) and whether
-- the column exists is checked by the verb (`moraine_tx_set_partitioning`),
-- not here. `tx:set_partitioning` applies it to every key given as a string.
-- @tparam string s the key
-- @return `{column = s, transform = s}`, or nil and a message (text that does
--   not parse, naming the byte; a qualified column, in DuckLake's words; an
--   expression that is neither a column nor `fn(..., column)`)
function M.parse_partition_key(s)
  if type(s) ~= "string" then return nil, "a partition key must be a string" end
  return sql_call(sql_module().parse_partition_key, s)
end

--- Parses one sort key in DuckLake's SQL form (`SET SORTED BY (...)`) as
-- `db:exec` does: `expression [ASC|DESC] [NULLS FIRST|NULLS LAST]`, the
-- expression read by moraine.expr and rendered as DuckDB's ToString() does
-- (the text DuckLake stores: `"a+b"` is `(a + b)`, `'lower("region")'` is
-- `lower(region)`), with the column names it references in `columns` (the
-- verb looks them up: DuckLake's "Columns in the SET SORTED BY statement
-- were not found ..."). A direction or null order left out stays nil (the
-- engine defaults it: ASC, NULLS_LAST). `tx:set_sorting` and
-- `tx:rename_column` apply it to every key given as a string.
-- @tparam string s the key
-- @return `{expression = s, sort_direction = s or nil, null_order = s or nil,
--   columns = {s, ...}}`, or nil and a message (an empty key, text that does
--   not parse or is left over, naming the byte; `NULLS` followed by something
--   other than FIRST or LAST; a qualified column reference, in DuckLake's words)
function M.parse_sort_key(s)
  if type(s) ~= "string" then return nil, "a sort key must be a string" end
  return sql_call(sql_module().parse_sort_key, s)
end

-- The sort key the verbs receive for key @k (a string or a table, checked by
-- the binding): a string as parse_sort_key reads it; a table's expression,
-- when its dialect is duckdb (or left out), read the same way (rendered as
-- DuckDB does, its columns listed); another dialect's expression verbatim.
-- Returns the key, or nil and a message.
local function sort_key_for_verb(k)
  if type(k) == "string" then return M.parse_sort_key(k) end
  if type(k.expression) ~= "string" or (k.dialect ~= nil and k.dialect ~= "duckdb") then return k end
  local e, msg = sql_call(sql_module().parse_sort_expression, k.expression)
  if not e then return nil, "expression '" .. k.expression .. "': " .. msg end
  return { expression = e.expression, dialect = k.dialect, sort_direction = k.sort_direction,
           null_order = k.null_order, columns = e.columns }
end

core.set_key_parsers(M.parse_partition_key, sort_key_for_verb)

--- Pass as the `at` option of a scan to read every version of the rows, live
-- and ended (`MORAINE_ALL_VERSIONS`, i.e. INT64_MIN; on LuaJIT an int64_t
-- cdata).
M.ALL = core.all_versions()

--- Normalises an integer for comparisons.
-- Lua 5.4: an integer (an integral float such as `3.0` becomes `3`). LuaJIT:
-- an integral number or an int64_t/uint64_t cdata becomes a plain number when
-- within +-2^53, else an int64_t cdata, so that `moraine.int64(a) ==
-- moraine.int64(b)` compares exactly.
-- @param v an integer value
-- @return the normalised value
-- @raise a string error (`bad argument #1 ...`) if v is not an exact int64
--   integer (a string, `1.5`, `2^63`), under both runtimes
-- @function int64
M.int64 = core.int64

--- Whether `e` is a moraine error table (see Errors).
-- @param e any value (typically the second result of pcall)
-- @treturn boolean
-- @function is_error
M.is_error = core.is_error

--- Opens (or creates) a catalog.
-- @tparam string path directory holding LMDB's data.mdb and lock.mdb
-- @tparam[opt] table opts
--   `map_size` (bytes; default 1 GiB; less than 256 KiB is taken as 256 KiB; the map
--   doubles before a commit while more than half is in use),
--   `max_map_size` (bytes; default 64 GiB; a commit that cannot fit raises EMAPFULL),
--   `read_only` (boolean; writes then raise EREADONLY),
--   `no_sync` (boolean; no fsync on commit: a crash may lose recent commits),
--   `create` (boolean, default true; create the directory if missing).
--   Defaults come from `moraine_open` (engine/moraine.h).
-- @return a catalog handle `db`; closed by `db:close()`, by the garbage
--   collector, or by Lua 5.4's `<close>`.
-- @raise EINVAL (unknown option, or an option of the wrong type),
--   EIO (path missing and not creating), ELMDB, ECORRUPT (not a moraine
--   catalog), EFORMAT (a catalog of format 1 or of a newer format than this
--   build's; one of format 2, 3 or 4 opens, for `moraine compact`), ENOMEM.
-- @function open
M.open = core.open

-- `db:exec(sql, opts)`: DuckLake's DDL statements run through the verbs
-- (`moraine.sql.exec`, docs/verbs.md "SQL statements"); the module is loaded
-- on first use. Returns the newest snapshot committed or nil.
do
  local mt = debug.getregistry()["moraine.db"]
  if mt and type(mt.__index) == "table" then
    mt.__index.exec = function(db, sql, opts) return require("moraine.sql").exec(db, sql, opts) end
  end
end

--[[ (LDoc lists these from bindings/moraine.luadoc, which follows this text)
Catalog handle methods (all raise EINVAL "catalog is closed" after `db:close()`).

`db:close()` — closes the catalog. Idempotent. Ends every read transaction of
the catalog that is still open (their handles and scans then raise ETXN) and
aborts an open write transaction. Raises ETXN if called from an import/export
progress callback. Also run by the garbage collector and by `<close>`.

`db:last_snapshot()` — the newest committed snapshot id (integer), or nil
when the catalog has none (`moraine_last_snapshot`).

`db:reader_check()` — clears the LMDB reader slots of processes that died
with a read open (`moraine_reader_check`, LMDB's `mdb_reader_check`) and
returns how many it cleared. A writer also does this itself every 32
commits or once a second, and whenever a catalog is opened for writing;
dead slots keep old pages from being reused, so the file would grow.
Raises EFORK (handle opened by another process), ELMDB.

`db:release_pages()` — drops this process's mapping of data.mdb's pages
(`moraine_release_pages`, `madvise(MADV_DONTNEED)` over LMDB's read-only
map), so a bulk writer's resident set does not grow with the store; the next
access maps a page again. Returns true. `moraine.sync`'s rounds call it every
few hundred commits and `moraine_compact` after each batch. Raises EFORK, EIO.

`db:relations()` — array of relation info tables, in definition order:
`{name = "ducklake_table", id = 3, placement = "temporal"|"child"|"snapshot"|"rows",
columns = {"table_id", ...} (catalog column order), secret_columns = {"encryption_key"}
(the columns flagged `MORAINE_COL_SECRET`, in column order; empty when none),
parent = "ducklake_x" or nil}`.
Placement and parent come from the engine's DuckLake table list
(docs/keyspace.md); tables it does not know get a placement from their columns.

`db:relation(name)` — the info table of one relation, or nil if the catalog
has no such relation.

`db:commit(snapshot_id, fn, opts)` — one staged commit (`moraine_txn_begin` ...
`moraine_txn_commit`) for DuckLake snapshot `snapshot_id` (an integer above
every snapshot committed before, else ESNAPSHOT; nil means
`MORAINE_NO_SNAPSHOT`: a commit that only defines relations and puts/deletes
non-temporal rows). Calls `fn(tx)` inside one LMDB write transaction. If `fn`
raises, everything is aborted and its error re-raised unchanged. If any `tx`
call failed (even one whose error `fn` caught with pcall), everything is
aborted and the first such error is re-raised. Otherwise the commit is made
durable and `commit` returns true. `fn`'s results are discarded; `fn` must
not yield. The `tx` object raises ETXN when used after `fn` returned.
In a catalog that has the `ducklake_snapshot` table, a commit with a
snapshot id is one whole DuckLake snapshot: `fn` inserts that snapshot's
`ducklake_snapshot` row, whose schema_version, next_catalog_id and
next_file_id are not negative and not below the last snapshot's; else the
commit raises ESNAPSHOT and nothing is written (engine/commit.c,
whole_snapshot). Verbs (`db:transaction`) write that row themselves.
`opts` (optional table): `partial = true` marks an intermediate commit of a
replay (`moraine_txn_partial`), which may lack the ducklake_snapshot row of
its own id (DuckLake's expire_snapshots leaves rows that began at deleted
snapshots); any other commit with a snapshot id must carry that row.
Raises ESNAPSHOT (also: no ducklake_snapshot row for the id, counters below
the last snapshot's), EREADONLY, ETXN (a commit already open, e.g. a nested
commit), ELMDB, EMAPFULL (the commit does not fit in the map: the message names map_size or max_map_size),
EINVAL (an option other than `partial`, or not a boolean).

Methods of `tx` (each returns nothing; row tables are read with raw access):

- `tx:define(name, {colname, ...})` — declares relation `name` with its
  columns in the catalog's order (`moraine_txn_define`). Redefining with the
  same columns is a no-op; an empty list is allowed (an empty table whose
  columns are not known yet). Raises EEXIST (defined before with other
  columns), EINVAL (duplicate column, a known table lacking a column its
  placement needs, a non-string name).
- `tx:insert(name, row, ord)` — inserts one row (`moraine_txn_insert`). `row`
  is keyed by column name and must hold every column (use `moraine.null` for
  NULL): a missing column raises EINVAL "name: missing column 'c'", a key
  that is not a column raises EINVAL "name: unknown column 'k'". `ord` (optional, default -1)
  is the row's position in its table for export order; -1 appends. Where the
  row goes depends on the relation's placement: a temporal row needs
  `begin_snapshot` == this commit's snapshot; a child row is embedded in its
  live parent; a snapshot row needs `snapshot_id` == the commit's snapshot.
  Raises ENOTFOUND (relation not defined), EINVAL (wrong value type, see
  Values; begin/end not as above), EEXIST (a live row with the same key).
- `tx:end_row(name, row)` — ends the live version identified by `row`'s key
  columns at this commit's snapshot (`moraine_txn_end`; DuckLake's
  `UPDATE ... SET end_snapshot = S`). Columns missing from `row` are passed
  as NULL (key columns must be present; for a relation moraine does not know,
  every column but begin/end must match). Raises ENOTLIVE (no live row with
  that key), ENOTFOUND, EINVAL (not temporal; unknown column).
- `tx:put_row(name, row, ord)` — inserts or replaces the non-temporal row at
  position `ord` (>= 0, required) (`moraine_txn_put_row`). Every column
  required, as for insert. Raises EINVAL, ENOTFOUND.
- `tx:delete_row(name, ord)` — deletes the non-temporal row at position `ord`
  (`moraine_txn_delete_row`). Raises ENOTFOUND (no such row), EINVAL.

`db:init(data_path)` — (`data_path` optional, default `"data/"`, as `moraine init`) makes an empty catalog a DuckLake catalog, as
DuckLake's `ATTACH 'ducklake:...' (DATA_PATH data_path)` does
(`moraine_init`): every ducklake_* table of catalog version 1.1-dev1 defined,
the ducklake_metadata rows (version, created_by, data_path, encrypted) and
snapshot 0 with schema "main" (change `created_schema:"main"`). `data_path`
is a string such as `"data/"`. Returns true. Raises EEXIST (the catalog is
not empty), EINVAL (empty data path), EREADONLY, ELMDB; a plain string error
if `data_path` is not a string or holds a NUL byte.

`db:transaction(fn, opts)` — one verb transaction (`moraine_tx_begin`,
docs/verbs.md): moraine's own verbs, which write exactly the rows DuckLake
would write for the same statements (ids from next_catalog_id/next_file_id,
schema_version, ducklake_schema_versions and ducklake_snapshot_changes) as
one new snapshot. `opts` (optional table) gives `author`, `message` and
`extra_info` (strings, or nil for SQL NULL) for the snapshot's
ducklake_snapshot_changes row (`moraine_tx_set_info`; its columns author,
commit_message, commit_extra_info). Calls `fn(tx)`; the transaction's base is
the newest snapshot when it began.
- If `fn` raises, the transaction is aborted (`moraine_tx_abort`: nothing
  written) and the error re-raised unchanged, whatever its value.
- Otherwise it is committed (`moraine_tx_commit`, run exactly once) and
  `db:transaction` returns the new snapshot id, or nil when the verbs changed
  nothing (DuckLake commits no snapshot then, and nor does moraine).
- A verb that fails raises a moraine error table and changes nothing; if
  `fn` catches it (pcall), the transaction goes on without that verb and can
  still commit (unlike `db:commit`, where any failed call aborts).
- `fn`'s results are discarded; `fn` must not yield. `tx` raises ETXN when
  used after `fn` returned (the transaction is finished).
- Several verb transactions may be open at once (a nested `db:transaction`
  commits first; the outer one then commits on top of it, see ECONFLICT).
Raises: plain string errors for `fn` not a function or `opts` not a table;
EINVAL (unknown option, an option that is not a string or holds a NUL byte;
the catalog holds no snapshot: run `db:init` first); EREADONLY; ETXN (the
catalog was closed inside `fn`: nothing committed); and from the commit
ECONFLICT (a snapshot committed after the base made a conflicting change;
the message names the table and the snapshot; nothing written), any verb
error found when the verbs are replayed on a newer snapshot, EMAPFULL, ELMDB.

Methods of a verb transaction `tx`. `tbl` names a table: `"orders"` is table
"orders" of schema "main"; `"sales.orders"` is schema "sales", table
"orders" (split at the FIRST dot, so "a.b.c" is schema "a", table "b.c");
`{schema = "s", table = "t"}` (schema nil means "main") names tables whose
names contain dots. Argument tables (column, key, file tables) are read with
raw access and must not have fields other than those listed (EINVAL
"<verb>: ...: unknown field 'x'"); an optional field may be nil or
`moraine.null`. Integer fields take exact int64 integers (see Integers).
Every method raises:
- a plain string error (`luaL_check*` style, "bad argument #2 to
  'create_table' (table expected, got nil)") when an argument has the wrong
  Lua type: `tbl` not a string or table, a name not a string, an array
  argument not a table; or a string argument holds a NUL byte;
- EINVAL naming the verb, the element and the field for a malformed
  argument table (a table-form `tbl` without a string `table`, an element
  that is not a table, a missing required field, a field of the wrong type,
  a string with a NUL byte, a key in SQL form that does not parse);
- ETXN when used after `fn` returned;
- the engine's errors of that verb, listed below, with `moraine_errmsg()`
  as message (it names the schema, table, column or file). Every verb can
  also raise ENOMEM, ELMDB and ECORRUPT.

- `tx:base()` — the snapshot id the transaction reads (`moraine_tx_base`).
- `tx:create_schema(name)` — `CREATE SCHEMA name`
  (`moraine_tx_create_schema`). Raises EEXIST (a live schema of that name),
  EINVAL (empty name).
- `tx:drop_schema(name, cascade?)` — `DROP SCHEMA name [CASCADE]`
  (`moraine_tx_drop_schema`): ends the schema row, change `dropped_schema:ID`.
  Raises ENOTFOUND (no such schema), EINVAL (empty name, "main", tables or
  views left and no cascade: DuckLake's message; a schema created in this
  transaction).
- `tx:create_table(tbl, columns)` — `CREATE TABLE tbl (columns)`
  (`moraine_tx_create_table`). `columns` is an array of
  `{name = s, type = s, not_null = bool?, default = s?}`: `type` as DuckLake
  spells it ("int64", "varchar", "timestamp", "decimal(18,2)", ...);
  `not_null = true` writes nulls_allowed = false; `default` is the literal
  default text (none: DuckLake writes default_value 'NULL'). Returns the new
  table_id (the id it has if committed on the base snapshot). Raises
  ENOTFOUND (no such schema), EEXIST (a live table of that name), EINVAL (no
  columns, a duplicate column name, an empty name or type).
- `tx:add_column(tbl, column)` — `ALTER TABLE tbl ADD COLUMN`
  (`moraine_tx_add_column`); `column` as one element of create_table's
  `columns`. Raises ENOTFOUND (table), EEXIST (column name taken), EINVAL.
- `tx:rename_column(tbl, old, new, sort_keys)` — `ALTER TABLE tbl RENAME
  COLUMN old TO new` (`moraine_tx_rename_column`). A live sort spec naming
  the column is rewritten where an expression is exactly the column; when an
  expression uses it inside a larger expression the rename is refused
  (EINVAL) unless `sort_keys` (optional; an array like set_sorting's keys,
  read the same way, their columns looked up after the rename) gives the new
  sort spec. Without `sort_keys` NULL is passed. Raises ENOTFOUND (table or
  column; a key's column missing after the rename), EEXIST (new name taken),
  EINVAL.
- `tx:drop_column(tbl, name)` — `ALTER TABLE tbl DROP COLUMN name`
  (`moraine_tx_drop_column`). Raises ENOTFOUND (table or column), EINVAL
  (the live partition spec partitions on the column, or the live sort spec
  names it). A STRUCT column's field rows end with it.
- `tx:add_field(tbl, path, field)` — `ALTER TABLE tbl ADD COLUMN s.f TYPE`
  (`moraine_tx_add_field`): `path` is the struct, a name or an array of
  names (`{"s", "b"}` for s.b); `field` as one element of create_table's
  `columns` (not nested, no `not_null`). Raises ENOTFOUND (table, path),
  EEXIST (the field exists), EINVAL (not a struct, DuckLake's words).
- `tx:rename_field(tbl, path, new)` — `ALTER TABLE tbl RENAME COLUMN s.f TO
  new` (`moraine_tx_rename_field`); `path` names the field (two names at
  least). Raises ENOTFOUND, EEXIST (a field of the struct has the name),
  EINVAL.
- `tx:drop_field(tbl, path)` — `ALTER TABLE tbl DROP COLUMN s.f`
  (`moraine_tx_drop_field`): the field's rows and its own fields' end.
  Raises ENOTFOUND, EINVAL (the struct's last field; not a struct).
- `tx:rename_table(tbl, new_name)` — `ALTER TABLE tbl RENAME TO new_name`
  (`moraine_tx_rename_table`; the table keeps its id and path). Raises
  ENOTFOUND, EEXIST, EINVAL (empty new name).
- `tx:drop_table(tbl)` — `DROP TABLE tbl` (`moraine_tx_drop_table`: ends the
  table, its columns, specs, data and delete files). Raises ENOTFOUND.
- `tx:set_partitioning(tbl, keys)` — `ALTER TABLE tbl SET PARTITIONED BY
  (keys)` (`moraine_tx_set_partitioning`). Each key is
  `{column = s, transform = s}` (stored as given once the verb has checked
  them) or a string in DuckLake's SQL form, read as `db:exec` reads it by
  `moraine.parse_partition_key`: `"region"` (identity), `"year(ts)"`,
  `"month(ts)"`, `"day(ts)"`, `"hour(ts)"`, `"epoch_day(ts)"` (and
  epoch_year, epoch_month, epoch_hour), `"bucket(4, id)"` (transform
  "bucket(4)", column "id"; `bucket(04, id)` is the same key). The verb
  takes what DuckLake's catalog can load and nothing else (DuckLake's
  GetPartitionField; moraine_partition_key): `"truncate(10, name)"`,
  `"foo(ts)"`, `"year(ts, id)"`, `"bucket(0, id)"`, `"bucket(-3, id)"`,
  `"bucket(x, id)"` are refused. An empty array is `RESET PARTITIONED BY` (a
  zero-column spec goes live). Setting the spec the table already has does
  nothing. Raises ENOTFOUND (table; a column, "Unexpected partition key -
  column "x" does not exist"), EINVAL (a transform DuckLake does not read, a
  bucket count that is not an integer from 1 to 2147483647 as DuckLake
  writes it, a string key that does not parse, a qualified column).
- `tx:clear_partitioning(tbl)` — `ALTER TABLE tbl RESET PARTITIONED BY`
  (`moraine_tx_clear_partitioning`). Raises ENOTFOUND.
- `tx:set_sorting(tbl, keys)` — `ALTER TABLE tbl SET SORTED BY (keys)`
  (`moraine_tx_set_sorting`). Each key is `{expression = s, dialect = s?,
  sort_direction = s?, null_order = s?}` (left out: NULL, which the engine
  takes as "duckdb", "ASC", "NULLS_LAST") or a string in SQL form, read by
  `moraine.parse_sort_key`: `"amount DESC NULLS LAST"`, `"region"`,
  `'lower("name") ASC'`. Every key is read as `db:exec` reads it: its
  expression (when the dialect is duckdb) parsed by moraine.expr and stored
  as DuckDB renders it (`"a+b"` → `(a + b)`), its column references looked
  up by the verb among the table's columns (DuckLake's ValidateSortExpressionColumns);
  another dialect's expression is stored as given. Ends the live sort spec
  and inserts the new one, even when equal. Raises ENOTFOUND (table;
  "Columns in the SET SORTED BY statement were not found in the DuckLake
  table. Unmatched columns were: x"), EINVAL (no keys, a direction other
  than "ASC"/"DESC", a null order other than "NULLS_FIRST"/"NULLS_LAST", an
  expression that is empty, does not parse or leaves text over (`"(("`,
  `"amount; DROP TABLE x"`, `"amount SIDEWAYS"`), a qualified column
  reference, a field other than the four above).
- `tx:clear_sorting(tbl)` — `ALTER TABLE tbl RESET SORTED BY`
  (`moraine_tx_clear_sorting`). Raises ENOTFOUND; on a table with no sort
  spec it still alters the table (a snapshot, as DuckLake does).
- `tx:add_data_files(tbl, files)` — the data files an `INSERT INTO tbl`
  wrote (`moraine_tx_add_data_files`). `files` is an array of
  `{path = s, path_is_absolute = bool?, file_format = s? ("parquet"),
  record_count = int, file_size_bytes = int, footer_size = int? (nil: NULL),
  partition_values = {s or moraine.null, ...}?, stats = {...}?,
  row_group_count = int?}`.
  `path` is relative to the table's path unless `path_is_absolute`.
  `row_group_count` is the number of row groups in the Parquet file, which
  DuckLake writes for every file it adds (1 for each file of its fixtures,
  tests/fixtures/ducklake); nil, `moraine.null` or 0: NULL, as in a
  catalog upgraded from version 1.0 or older (docs/upgrade.md); a negative
  count: EINVAL.
  `partition_values` holds one value per key of the live partition spec
  (its length is `#partition_values`; `moraine.null` is SQL NULL; left out:
  none). `stats` is an array of `{column = s, column_size_bytes = int?,
  value_count = int?, null_count = int?, min_value = s?, max_value = s?,
  contains_nan = bool?}` (ducklake_file_column_stats; left out: NULL).
  Returns the first data_file_id (the files get consecutive ids, on the
  base snapshot), or nil for an empty `files`. Raises ENOTFOUND (table, or
  a column named in stats), EINVAL (partition values not one per key of the
  live spec, or a value DuckLake does not write for its key: outside 0..N-1
  for bucket(N), not an integer for year .. hour and epoch_*, not a value of
  the column's type for identity, see `moraine_tx_add_data_files`; an empty
  path, a negative record_count).
- `tx:add_delete_files(tbl, deletes)` — the delete files a `DELETE FROM
  tbl` wrote (`moraine_tx_add_delete_files`). `deletes` is an array of
  `{data_file_id = int, path = s, format = s? ("parquet"), delete_count =
  int, file_size_bytes = int, footer_size = int, row_group_count = int?}`
  (`row_group_count`: the delete file's Parquet row groups, as for
  add_data_files); a data file's live delete file is ended and replaced. Raises ENOTFOUND (table, or a data file not
  live in the table), EINVAL.
- `tx:delete_files(tbl, ids)` — a `DELETE` of whole files: ends the data
  files (array of data_file_id) and their delete files
  (`moraine_tx_delete_files`). Raises ENOTFOUND, EINVAL (an id named twice).
- `tx:rewrite_files(tbl, input_ids, outputs)` — compaction
  (`ducklake_merge_adjacent_files` / `ducklake_rewrite_data_files`,
  `moraine_tx_rewrite_files`): ends the input files (array of data_file_id)
  and their delete files, registers `outputs` (shaped like add_data_files'
  `files`; without partition_values they are written under the inputs'
  spec and values). Raises ENOTFOUND, EINVAL (no inputs; inputs of
  different partition specs or values: a merge must not cross partitions).

`db:read(fn)` — opens one read transaction (a consistent view as of the
newest commit, `moraine_read_begin`), calls `fn(rd)` and returns `fn`'s
results. The read is ALWAYS closed when `fn` returns or raises (an error is
then re-raised unchanged); `rd` and every scan iterator made from it raise
ETXN when used afterwards. Values are copied into Lua as rows are produced,
so rows stay valid after the read. Raises ELMDB.

Methods of `rd` (a snapshot argument left out or nil means the read's newest
snapshot, or only the live rows when the catalog has no snapshot yet):

- `rd:last_snapshot()` — newest snapshot id in this read's view, or nil.
- `rd:scan(name, opts)` — generic-for iterator `for row, children, ord in
  rd:scan(name, {at = S, table_id = T}) do ... end` over the rows of
  relation `name` visible at snapshot `S` (`moraine_scan_open`): exactly
  `begin_snapshot <= S AND (end_snapshot IS NULL OR S < end_snapshot)`.
  `at` defaults to the newest snapshot; `moraine.ALL` reads every version,
  live and ended. `table_id` restricts a table-scoped relation (first key
  column table_id) to one table; default all. Rows come in key order
  (docs/keyspace.md). `row` maps column name -> value (every column
  present); `children` maps child relation name -> array of child rows in
  stored order (e.g. `children.ducklake_file_partition_value`; an empty
  table when none); `ord` is the row's position in its table. On Lua 5.4 a
  `break` closes the cursor at once (to-be-closed fourth value). Raises
  ENOTFOUND (no such relation), EINVAL (`table_id` on a relation without
  scope, unknown option), ECORRUPT, ETXN (iterator used after its read ended).
- `rd:files(T, S)` — `rd:scan("ducklake_data_file", {at = S, table_id = T})`.
- `for chunk, n in rd:scan_json(name, opts) do ... end` — the same rows as
  `rd:scan`, written as JSON in C with no Lua table per row (the fast path
  for serving many rows, e.g. moraine.http's files endpoint): each `chunk`
  is up to `opts.rows` (default 256, 1..1000000) JSON objects joined by
  commas, in DuckDB's JSON-lines form (columns in the catalog's order, exact
  integers, `moraine_row_json`); `n` is how many. `opts`: `at`, `table_id`
  as for `rd:scan`; `partition_values = true` adds a data file's
  `"partition_values":[...]` (strings or null, partition_key_index order);
  `children = true` adds each child table's rows under the child table's
  name. Secret columns (`MORAINE_COL_SECRET`: the encryption keys of an
  encrypted lake's data and delete files) are written as `"<redacted>"`
  (`moraine.REDACTED`; a NULL stays null) unless `secrets = true` (an admin
  path: docs/security.md). Raises as `rd:scan`, and EINVAL for a string that
  is not valid UTF-8 (JSON cannot carry it), an unknown option, or a
  `secrets` that is not a boolean.
- `rd:secret_count()` — how many non-NULL secret values (encryption keys)
  the catalog holds in this read's view, over every version of every row
  (`moraine_secret_count`); 0 for an unencrypted lake. Raises ECORRUPT,
  ENOMEM, ETXN.
- `rd:partition_spec(T, S)` — the partition spec in force for table `T` at
  `S` (`moraine_partition_spec_at`): nil, or the ducklake_partition_info row
  with `row.columns` = array of its ducklake_partition_column rows in stored
  (partition_key_index) order; a zero-column spec (partitioning reset) has
  an empty `columns`.
- `rd:sort_spec(T, S)` — nil, or the ducklake_sort_info row with
  `row.expressions` = array of its ducklake_sort_expression rows
  (`moraine_sort_spec_at`).
- `rd:partition_spec_by_id(T, partition_id)` — nil or the partition spec
  `partition_id` of table `T` with `.columns`, whatever its lifetime (live,
  ended, or never visible: begin == end) (`moraine_partition_spec_by_id`).
- `rd:snapshot(id)` — the ducklake_snapshot row of snapshot `id` and its
  children (`{ducklake_snapshot_changes = {...}}`, as `rd:scan` gives them),
  or nil when there is no such row (never committed, expired, or no
  ducklake_snapshot table) (`moraine_read_snapshot`: one key lookup, not a
  scan of every snapshot row). `id` nil: the read's newest snapshot, the row
  DuckLake's ATTACH reads (`WHERE snapshot_id = (SELECT MAX(snapshot_id)
  ...)`); nil when the catalog has none. Raises EINVAL (`id` not an integer
  or nil), ECORRUPT (the stored row is damaged: its CRC-32C), ELMDB, ETXN.
- `rd:table_id(schema, name, S)` — the table_id of table `name` in schema
  `schema` (nil: "main") as named at snapshot `S` (default: the newest), or
  nil plus a message when there is none then (`moraine_table_id_at`: a table
  dropped or renamed later is found under the name it had at `S`). Raises
  EINVAL for a `name` that is not a string, a `schema` that is neither a
  string nor nil, or an `S` that is not an integer.

`db:scan(name, opts)` — convenience: opens its own read, returns an array of
`{row = , children = , ord = }` entries (as `rd:scan` gives them), closes the
read. Same options and errors as `rd:scan`.

`db:import_ndjson(dir, {progress = fn})` — replays a DuckLake catalog
exported as a directory of `<table>.ndjson` files into this (empty) catalog
(`moraine_import_ndjson`, docs/import-export.md). `progress(done, total)`
(optional) is called first while the files are read and checked, with
`total` 0 (not known yet) and `done` the rows read so far (every 4096 rows
and once at the end), then with counts of the engine's replay steps (one
per row, plus one per row version ended after the snapshot it began in;
every 4096 steps and at the end); returning `true` (exactly true) cancels the import, which
then raises the engine's EINVAL "import cancelled"; an error raised by
`progress` cancels it too and is re-raised unchanged. Nothing of a failed
import remains. Returns true. Raises EIO, EJSON (file and line), EINVAL
(file, line, column), EEXIST (catalog not empty), staged-path errors.

`db:export_ndjson(dir, {progress = fn})` — writes every relation to
`<dir>/<table>.ndjson` (`moraine_export_ndjson`): rows in original order,
columns in catalog order, DuckDB's JSON-lines form, secret columns exactly
as stored; creates `dir`. When the catalog holds keys (`rd:secret_count() >
0`) the files are created 0600 and a directory it creates 0700.
`progress(done, total)` (optional) counts relations; `true` cancels (EINVAL
"export cancelled"). Every file is written as `<table>.ndjson.tmp` and renamed
only when all are written: a failed export leaves nothing of itself in `dir`.
Returns true. Raises EIO, EINVAL (a string that is not valid UTF-8: the
message names the table, row, column and the bytes).

`db:import_rows(tables, {progress = fn})` — like `db:import_ndjson`, with the
tables given as rows instead of files (`moraine_import_rows`; this is how
`moraine.sqlite` imports a catalog kept in SQLite). `tables` is an array of

    { name = "ducklake_table", columns = {"table_id", "table_uuid", ...},
      rows = { {1, "0190...", 1, moraine.null, ...}, ... } }

one entry per table (a table named twice is EINVAL). `columns` lists the
column names in the table's own order; each row is an array of values in that
order (exactly `#columns` of them; `rows` may be left out or empty: an empty
table). Row order within a table is the order given. Values map as for
`tx:insert` (see Values): `moraine.null` for NULL, exact integers (LuaJIT
`int64_t`/`uint64_t` cdata too), strings of any bytes, booleans,
`{json = "<text>"}` for a nested JSON value; a number that is not an exact
int64 integer becomes a DOUBLE (`MORAINE_REAL`), while an integral float
(Lua 5.4 `2.0`) is an integer, as on LuaJIT where the two cannot be told
apart. An integer 0 or 1 in a BOOLEAN column moraine knows is taken as
false/true (SQLite keeps BOOLEAN as an integer). `progress(done, total)` is as for
`import_ndjson`: it counts the engine's replay steps (one per row, plus one
per row version ended after the snapshot it began in), every 4096 steps and
at the end; `true` cancels with EINVAL "import cancelled"; an error it raises
cancels too and is re-raised unchanged. The catalog must be empty;
nothing of a failed import remains. The values are copied into one C array
per table (a userdata owned by Lua) before the engine runs. Returns true.
Raises:
- a plain string error (`luaL_check*`) when `tables` is not a table, `opts`
  not a table or `progress` not a function;
- EINVAL from the binding, naming the table, the row (1-based) and the
  column: a malformed entry ("import_rows: tables[2]: 'name' (a string) is
  required", an unknown field, `columns` or `rows` not a table, a column name
  that is not a string), a row that is not a table, a missing value (`nil`:
  use `moraine.null`), more values than columns, a value of an unsupported
  type ("import_rows: ducklake_table row 3: column 'path': unsupported value
  of type function");
- from the engine (`moraine_errmsg()`, naming table, row and column): EINVAL
  (a value of the wrong type for a column moraine knows, a table given
  twice), EEXIST (the catalog is not empty), ESNAPSHOT and the other
  staged-path errors, EREADONLY, EMAPFULL, ELMDB, ENOMEM.

`db:import_sqlite(path, tmpdir, tables, {progress = fn, int_reals = b})` —
imports the SQLite DuckLake catalog file `path` into this (empty) catalog
(`moraine_import_sqlite`, docs/import-export.md "A fresh import of a SQLite
file, in C"): every table read in C into `<table>.ndjson` in the new
directory `tmpdir` (removed at the end, whatever happens), checked and
imported as `import_ndjson` does, in the order of `tables`, each with its
columns, each row at position rowid - 1. `tables` is an array of
`{name =, columns = {...}, kinds = {column = "bool", ...}}` (what
`moraine.sync_source`'s `src:tables()` gives: the file's `ducklake_*` tables
in name order, columns in `PRAGMA table_info` order; a column of kind
"bool" has its integers 0 and 1 read as false and true). `int_reals`: every
integral REAL is read as an integer (LuaJIT's numbers), else only in the
BIGINT columns moraine knows. `progress(done, total)`: (rows read and
checked, 0), then (replay steps done, in all); `true` cancels (EINVAL
"import cancelled"). Returns the number of commits made, or false when the
engine cannot take the file (a string that is not UTF-8, a REAL that is not
finite, tables other than `tables`, an error SQLite reports): nothing was
written, import it another way (`moraine.sync`). Raises a plain error for
malformed `tables`; EEXIST (the catalog is not empty), EREADONLY, EIO
(`tmpdir` cannot be made or written) and every error of `import_ndjson`
(messages naming `<table>.ndjson:line`); nothing of a failed import remains.

`db:verify({progress = fn})` — checks every keyspace invariant
(`moraine_verify`, docs/keyspace.md): every key and value decodes and has its
table's column count, current rows are live and under the key their values
give, history rows have begin <= end, at most one live version per key and
one live partition/sort spec per table, embedded children name their parent,
snapshot rows sit under their own id and none is above the last snapshot.
Returns an array of `{key = "<the damaged key, rendered>", problem = "<what
is wrong>"}`, one per violation in key order; `{}` when the catalog is sound.
`progress(done, total)` (optional) counts LMDB entries (every 4096 and at the
end); returning `true` stops the walk and raises EINVAL "verify cancelled";
an error it raises is re-raised unchanged. Raises ELMDB, ENOMEM (the store
cannot be read); plain string errors for an `opts` that is not a table or a
`progress` that is not a function.

`db:stats()` — entries and bytes of the keyspace (`moraine_stats`), one
walk: an array, in key order, of
`{subspace = "C"|"H"|"S"|"R"|"M"|"N", relation = "ducklake_data_file" or nil,
entries = n, key_bytes = n, value_bytes = n}` with one entry per (subspace,
table) pair that holds keys: "C" current (live temporal rows), "H" history
(ended versions), "S" snapshots, "R" rows of non-temporal tables, "M" meta
(moraine's own bookkeeping; `relation` is nil), "N" entry counts per key
range (docs/keyspace.md; `relation` is nil). Child tables have no entry of
their own: their rows are embedded in the parent's values. Counts are
integers (see Integers). Raises ELMDB, ENOMEM.

`db:store_access()` — the permission bits of the catalog's files
(`moraine_store_access_get`): `{dir_mode = n, data_mode = n, lock_mode = n,
exposed = bool}` (modes as integers, e.g. `0x1C0` = octal 700; `exposed`:
data.mdb, which holds every row and every key, is readable by group or
others). A store moraine creates is 0700/0600. Raises EIO (a file cannot be
stat'ed).

`db:compact(dest, {progress = fn})` — copies every entry of the store, in
key order, into the new catalog directory `dest` with MDB_APPEND
(`moraine_compact`): every leaf page filled, no free page, the smallest
data.mdb the same rows fit in. One read transaction (a consistent copy;
writers go on and are not in it), write transactions of about 64 MiB,
synced at the end; `dest` gets the modes of the catalog's directory and
data.mdb. Returns `{entries = n, src_bytes = n, dest_bytes = n, txnid = n}`
(entries copied, data.mdb's size and the copy's, the LMDB transaction id
the copy was read at, see `db:last_txnid`). `progress(done, total)` counts
entries (every 4096 and at the end); `true` cancels with EINVAL "compact
cancelled". Nothing is left at `dest` on failure. Raises EEXIST (`dest`
exists), EIO (`dest` cannot be created or synced), ECORRUPT (keys out of
order, entry counts that disagree), ELMDB, ENOMEM; plain string errors for a
`dest` that is not a string or an `opts` that is not a table.
`moraine.compact` compacts a catalog in place with it.

`db:open_elsewhere()` — the id of a process other than this one that has
the catalog open (any handle, read-only too), or `false` when there is none
(`moraine_open_elsewhere`: asks about LMDB's lock on lock.mdb, Linux only;
this process's own handles do not count). Raises EIO (/proc/self/fd or the
lock file cannot be read).

`db:last_txnid()` — the id of the last LMDB write transaction committed to
the catalog by any process (`moraine_last_txnid`); equal ids mean nothing
was written in between. Raises ELMDB.
]]

--- The text a redacted secret column shows: `"<redacted>"` (`MORAINE_REDACTED`).
M.REDACTED = "<redacted>"

--- A copy of `row` in which every secret column of relation `rel` that is not
-- NULL reads `moraine.REDACTED` (a NULL stays `moraine.null`, so NULL and
-- present stay apart). For renderers in Lua (the `moraine` command, moraine.http)
-- that show rows read with `rd:scan`; `rd:scan_json` redacts in C.
-- @tparam table rel a relation info table (`db:relation(name)`), or nil (no secrets)
-- @tparam table row a row as `rd:scan` gives it (column name -> value)
-- @treturn table the redacted copy (the row itself when `rel` has no secret column)
function M.redact(rel, row)
  local secret = rel and rel.secret_columns
  if not secret or #secret == 0 then return row end
  local out = {}
  for k, v in pairs(row) do out[k] = v end
  for _, c in ipairs(secret) do
    if out[c] ~= nil and out[c] ~= M.null then out[c] = M.REDACTED end
  end
  return out
end

--- Creates a new empty file beside `path` to write an export into before it
-- is renamed to `path`: named `path .. ".tmp-"` and six random letters or
-- digits, created exclusively (never a file another writer made or is
-- writing: two exports to one path never share their temporary file), mode
-- 0600 when `private` is true (what is written into it next, e.g. with
-- `io.open(name, "wb")`, which keeps the mode, is readable by its owner
-- only: how an export holding keys is written), else 0666 less the umask.
-- @tparam string path the file the export is for
-- @tparam[opt] boolean private mode 0600
-- @treturn string the temporary file's name
-- @raise EIO naming `path`; a plain string error when `path` is not a string
M.create_temp_file = core.create_temp_file

--- fsync(2) of the file or directory `path`: what was written into the
-- file, or the names made or renamed in the directory, is on the disk when
-- it returns (an export syncs its file before the rename and the directory
-- after it, so a crash leaves the old file or the new one, whole).
-- @tparam string path a file or directory
-- @treturn boolean true
-- @raise EIO naming `path`; a plain string error when `path` is not a string
M.sync_path = core.sync_path

--- Decodes JSON text with jansson (`json_loads` with
-- `JSON_DECODE_ANY | JSON_ALLOW_NUL`): objects become tables, arrays become
-- arrays (1-based), null becomes `moraine.null`, strings keep every byte
-- (`\u0000` included), integers are exact (see Integers), reals are floats.
-- @tparam string str JSON text (any JSON value at top level)
-- @return the decoded value
-- @raise EJSON (malformed JSON; the message gives line and column)
-- @function json_decode
M.json_decode = core.json_decode

--- Checks the catalog in directory `path` like `db:verify` (same result,
-- same `opts.progress`), in a child process (`moraine_verify_path`): damage
-- to LMDB's own pages that makes LMDB's cursor code fault kills the child,
-- not the caller, and is reported as one more violation whose key is the
-- last key the walk reached, `(at K)`, and whose problem names the signal.
-- `moraine verify` uses it.
-- @tparam string path the catalog directory
-- @tparam[opt] table opts `progress(done, total)` as for `db:verify`
-- @return array of `{key =, problem =}`, `{}` when the catalog is sound
-- @raise EIO (no catalog at path), ECORRUPT (not a moraine catalog, or a
-- damaged descriptor), ELMDB, ENOMEM; EINVAL "verify cancelled"
M.verify_path = core.verify_path

--- Encodes a Lua value as compact JSON text, built with jansson in C.
-- - `moraine.null` is `null`; booleans are `true`/`false`;
-- - integers are exact over int64 (Lua 5.4 integers, LuaJIT `int64_t` /
--   `uint64_t` cdata in int64 range, and integral floats such as `2.0`, which
--   LuaJIT cannot tell from `2`); any other number is a real, written with 17
--   significant digits so that it reads back exactly (`0.1` is
--   `0.10000000000000001`); NaN and infinities are refused;
-- - strings must be valid UTF-8 (jansson's `json_stringn` checks it); NUL bytes
--   are written as `\u0000`;
-- - a table whose only key is `json`, holding a string, is that raw JSON text
--   embedded as it is (parsed with jansson and written compactly), the form
--   nested values take in rows (`{json = "[1,2]"}`);
-- - a table with `t[1] ~= nil` is an array: its keys must be exactly 1..n
--   (no holes, no other keys); an empty table is `[]`;
-- - any other table is an object: its keys must be strings (valid UTF-8) and
--   are written in byte order, except that `key_order` (an array of key
--   names) puts those keys of the top-level object first, in its order (keys
--   the object lacks are skipped); the other keys follow sorted. Nested
--   objects are always sorted.
-- @param value the value to encode (any JSON value at top level)
-- @tparam[opt] {string,...} key_order key order of the top-level object
-- @treturn string the compact JSON text (no spaces, no newline)
-- @raise EINVAL naming the problem and where it is, as a path such as
--   `$.files[2].path` (array indexes 1-based, as in Lua): a string or object
--   key that is not valid UTF-8, a table that contains itself (a cycle), a
--   table that mixes array items with other keys or has holes, an object key
--   that is not a string, NaN or infinity, a `nil` inside (use `moraine.null`),
--   a value of another type (function, userdata, thread, other cdata), nesting
--   deeper than 200 levels; EJSON for a `{json = ...}` text that is not valid
--   JSON; a plain string error (`luaL_check*`) when `value` is missing or
--   `key_order` is not an array of strings.
-- @function json_encode
M.json_encode = core.json_encode

--- Reads an NDJSON file (one JSON object per line, as DuckDB exports tables).
-- Blank lines are skipped; a file holding one JSON array of objects is
-- accepted too. Values map as `json_decode` maps them, except that a field
-- holding a JSON object or array becomes `{json = "<compact text>"}` (the
-- form the catalog stores nested values in), so rows can be passed to
-- `tx:insert` and compared with rows read back.
-- @tparam string path the file
-- @return rows (array of tables field -> value),
--   colnames (array of the field names of the first object, in file order;
--   empty for an empty file)
-- @raise EIO (file unreadable; the message names the file),
--   EJSON ("<path>:<line>: <what>": malformed JSON, or a line that is not an object)
function M.read_ndjson(path)
  if type(path) ~= "string" then
    error("bad argument #1 to 'read_ndjson' (string expected, got " .. type(path) .. ")", 2)
  end
  local f, err = io.open(path, "rb")
  if not f then core.raise("EIO", err or path) end
  local text, rerr = f:read("*a")
  f:close()
  if not text then core.raise("EIO", path .. ": " .. tostring(rerr)) end
  return core.parse_ndjson(text, path)
end

--- The C module itself (for tools and tests).
M.core = core

return M
