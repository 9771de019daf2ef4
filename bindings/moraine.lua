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
-- ## Errors
--
-- Every failure raises a Lua error whose value is a table
--
--     { code = "EINVAL", message = "ducklake_table: missing column 'path'" }
--
-- `code` is the engine's error name without the `MORAINE_` prefix (as
-- `moraine_strerror` gives it: EINVAL, ENOTFOUND, EEXIST, ESNAPSHOT,
-- ENOTLIVE, ECORRUPT, ELMDB, ENOMEM, EIO, EJSON, EREADONLY, ETXN, EMAPFULL,
-- ECONFLICT); `message` is the engine's `moraine_errmsg()` text (it names the
-- table, row, column or key) or, for checks done by the binding, a message of
-- the same form. The table's metatable gives `tostring(e)` =
-- `"moraine: EINVAL: <message>"`; test for it with `moraine.is_error(e)`.
--
-- The one exception: an argument of the wrong Lua type (a number where a
-- string is needed, a missing function...) is caught by the standard
-- `luaL_check*` functions and raises a plain string error, like any Lua
-- library ("bad argument #1 to 'commit' (integer expected, got string)").
--
-- Errors raised by your own functions (the commit and read functions, the
-- import progress callback) are re-raised unchanged, whatever their value.
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
M.null = core.null

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

--- Pass as the `at` option of a scan to read every version of the rows, live
-- and ended (`MORAINE_ALL_VERSIONS`, i.e. INT64_MIN; on LuaJIT an int64_t
-- cdata).
M.ALL = core.all_versions()

--- Normalises an integer for comparisons.
-- Lua 5.4: the identity. LuaJIT: an integral number or an int64_t/uint64_t
-- cdata becomes a plain number when within +-2^53, else an int64_t cdata, so
-- that `moraine.int64(a) == moraine.int64(b)` compares exactly.
-- @param v an integer value
-- @return the normalised value
-- @raise (LuaJIT) a string error if v is not an exact int64 integer
if ffi then
  M.int64 = core.int64
else
  function M.int64(v) return v end
end

--- Whether `e` is a moraine error table (see Errors).
-- @param e any value (typically the second result of pcall)
-- @treturn boolean
M.is_error = core.is_error

--- Opens (or creates) a catalog.
-- @tparam string path directory holding LMDB's data.mdb and lock.mdb
-- @tparam[opt] table opts
--   `map_size` (bytes; default 1 GiB; the map grows on demand),
--   `max_map_size` (bytes; default 64 GiB; a commit that cannot fit raises EMAPFULL),
--   `read_only` (boolean; writes then raise EREADONLY),
--   `no_sync` (boolean; no fsync on commit: a crash may lose recent commits),
--   `create` (boolean, default true; create the directory if missing).
--   Defaults come from `moraine_open` (engine/moraine.h).
-- @return a catalog handle `db`; closed by `db:close()`, by the garbage
--   collector, or by Lua 5.4's `<close>`.
-- @raise EINVAL (unknown option, or an option of the wrong type),
--   EIO (path missing and not creating), ELMDB, ECORRUPT (not a moraine
--   catalog, or a newer format), ENOMEM.
M.open = core.open

--[[--
Catalog handle methods (all raise EINVAL "catalog is closed" after `db:close()`).

`db:close()` — closes the catalog. Idempotent. Ends every read transaction of
the catalog that is still open (their handles and scans then raise ETXN) and
aborts an open write transaction. Raises ETXN if called from an import/export
progress callback. Also run by the garbage collector and by `<close>`.

`db:last_snapshot()` — the newest committed snapshot id (integer), or nil
when the catalog has none (`moraine_last_snapshot`).

`db:relations()` — array of relation info tables, in definition order:
`{name = "ducklake_table", id = 3, placement = "temporal"|"child"|"snapshot"|"rows",
columns = {"table_id", ...} (catalog column order), parent = "ducklake_x" or nil}`.
Placement and parent come from the engine's DuckLake table list
(docs/keyspace.md); tables it does not know get a placement from their columns.

`db:relation(name)` — the info table of one relation, or nil if the catalog
has no such relation.

`db:commit(snapshot_id, fn)` — one staged commit (`moraine_txn_begin` ...
`moraine_txn_commit`) for DuckLake snapshot `snapshot_id` (an integer above
every snapshot committed before, else ESNAPSHOT; nil means
`MORAINE_NO_SNAPSHOT`: a commit that only defines relations and puts/deletes
non-temporal rows). Calls `fn(tx)` inside one LMDB write transaction. If `fn`
raises, everything is aborted and its error re-raised unchanged. If any `tx`
call failed (even one whose error `fn` caught with pcall), everything is
aborted and the first such error is re-raised. Otherwise the commit is made
durable and `commit` returns true. `fn`'s results are discarded; `fn` must
not yield. The `tx` object raises ETXN when used after `fn` returned.
Raises ESNAPSHOT, EREADONLY, ETXN (a commit already open, e.g. a nested
commit), ELMDB, EMAPFULL (the commit does not fit even at max_map_size).

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

`db:scan(name, opts)` — convenience: opens its own read, returns an array of
`{row = , children = , ord = }` entries (as `rd:scan` gives them), closes the
read. Same options and errors as `rd:scan`.

`db:import_ndjson(dir, {progress = fn})` — replays a DuckLake catalog
exported as a directory of `<table>.ndjson` files into this (empty) catalog
(`moraine_import_ndjson`, docs/import-export.md). `progress(done, total)`
(optional) is called with row counts (the engine calls it every 4096 rows
and at the end); returning `true` (exactly true) cancels the import, which
then raises the engine's EINVAL "import cancelled"; an error raised by
`progress` cancels it too and is re-raised unchanged. Nothing of a failed
import remains. Returns true. Raises EIO, EJSON (file and line), EINVAL
(file, line, column), EEXIST (catalog not empty), staged-path errors.

`db:export_ndjson(dir, {progress = fn})` — writes every relation to
`<dir>/<table>.ndjson` (`moraine_export_ndjson`): rows in original order,
columns in catalog order, DuckDB's JSON-lines form; creates `dir`.
`progress(done, total)` (optional) counts relations; `true` cancels (EINVAL
"export cancelled"). Returns true. Raises EIO, EINVAL (a string that is not valid UTF-8).
]]

--- Decodes JSON text with jansson (`json_loads` with
-- `JSON_DECODE_ANY | JSON_ALLOW_NUL`): objects become tables, arrays become
-- arrays (1-based), null becomes `moraine.null`, strings keep every byte
-- (`\u0000` included), integers are exact (see Integers), reals are floats.
-- @tparam string str JSON text (any JSON value at top level)
-- @return the decoded value
-- @raise EJSON (malformed JSON; the message gives line and column)
M.json_decode = core.json_decode

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
