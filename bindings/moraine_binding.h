/*
 * moraine_binding.h — what the source files of the Lua module `moraine.core`
 * share (internal: not installed, not an API). The module is one shared
 * object built from bindings/moraine_*.c (moraine_core.c registers it):
 *   moraine_values.c  moraine.null, error tables, int64, handle life, C -> Lua values
 *   moraine_db.c      the db handle, NDJSON import/export, import_rows, verify, stats
 *   moraine_staged.c  staged write transactions (db:commit, moraine.txn)
 *   moraine_verbs.c   verb transactions (db:transaction, moraine.tx)
 *   moraine_read.c    reads and cursors (db:read, db:scan, moraine.read)
 *   moraine_batch.c   rd:files_batch and rd:scan_columns
 *   moraine_json.c    json_decode, parse_ndjson, json_encode (jansson)
 *   moraine_core.c    the module table and the metatables (luaopen_moraine_core)
 * Functions used by one file only are static there.
 *
 * Ownership: every C resource lives in a userdata with __gc (and __close for
 * Lua 5.4), so a Lua error (a longjmp) never leaks it:
 *   db      (moraine.db)     owns moraine_db; tracks its open reads and its txn
 *   txn     (moraine.txn)    owns moraine_txn; uservalue keeps its db alive
 *   tx      (moraine.tx)     owns a verb transaction moraine_tx; uservalue keeps its db alive
 *   read    (moraine.read)   owns moraine_read; uservalue keeps its db alive
 *   cursor  (moraine.cursor) owns moraine_cursor; uservalue keeps its read alive
 *   jbox    (moraine.jbox)   owns a jansson json_t while it is converted
 * Closing a db ends its reads and aborts its txn and verb transactions first
 * (moraine_close needs no transaction open); a cursor is valid only while its
 * read is open.
 *
 * Errors: every failure raises a table {code = "EINVAL", message = "..."} with
 * the metatable registered as "moraine.error". Wrong argument types caught by
 * luaL_check* raise standard Lua string errors. Every function below that
 * takes a lua_State may raise (a longjmp) instead of returning.
 */
#ifndef MORAINE_BINDING_H
#define MORAINE_BINDING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>
#include <lauxlib.h>
#include <lua.h>

#include "moraine.h"

/* ---- compat: Lua 5.4 and LuaJIT (5.1 API) ----------------------------------- */
#if LUA_VERSION_NUM == 501
#define MR_LUAJIT 1
#define mr_rawlen(L, i) lua_objlen((L), (i))
#define mr_getuv(L, i) lua_getfenv((L), (i))
#define mr_setuv(L, i) lua_setfenv((L), (i))
#define mr_absindex(L, i) ((i) > 0 || (i) <= LUA_REGISTRYINDEX ? (i) : lua_gettop(L) + (i) + 1)
#define MR_TCDATA 10 /* LuaJIT's type tag for FFI cdata */
#else
#define MR_LUAJIT 0
#define mr_rawlen(L, i) lua_rawlen((L), (i))
#define mr_getuv(L, i) lua_getuservalue((L), (i))
#define mr_setuv(L, i) lua_setuservalue((L), (i))
#define mr_absindex(L, i) lua_absindex((L), (i))
#endif
#ifndef LUA_OK
#define LUA_OK 0
#endif

/* ---- names ------------------------------------------------------------------ */
#define MT_DB "moraine.db"
#define MT_TXN "moraine.txn"
#define MT_VTX "moraine.tx"
#define MT_READ "moraine.read"
#define MT_CURSOR "moraine.cursor"
#define MT_ERROR "moraine.error"
#define MT_JBOX "moraine.jbox"
#define MT_ICHECK "moraine.import_check"
#define MT_BATCH "moraine.batch" /* the cells of rd:files_batch (moraine_batch.c) */
#define MT_DIRLOCK "moraine.dirlock" /* a directory's flock (moraine.core.lock_dir, moraine_db.c) */
#define REG_BATCHWRAP "moraine.batchwrap" /* moraine.lua's FFI wrapper of raw batches (l_set_batch_wrap) */
#define REG_INT64CTOR "moraine.int64ctor"
#define REG_CDATACONV "moraine.cdataconv"
#define REG_PARSE_PARTITION "moraine.parse_partition_key" /* moraine.lua's partition key reader (l_set_key_parsers) */
#define REG_PARSE_SORT "moraine.parse_sort_key"           /* moraine.lua's sort key reader (l_set_key_parsers) */

/* ---- userdata handles ----------------------------------------------------------- */
typedef struct lread lread;
typedef struct ltxn ltxn;
typedef struct lvtx lvtx;

typedef struct {
    moraine_db *db;
    lread *reads; /* open read handles, to end them on close */
    ltxn *txn;    /* the open write handle, if any */
    lvtx *vtxs;   /* open verb transactions, to abort them on close */
    int busy;     /* inside import/export: close refused */
    int calls;    /* C methods of its reads, commits and verb transactions running (moraine_core.c, counted_call):
                   * close refused, since one may run Lua code part way (an option's __index, a finalizer) */
} ldb;

/* A verb transaction (db:transaction). tx is NULL once committed or aborted. */
struct lvtx {
    moraine_tx *tx;
    ldb *owner;
    lvtx *prev, *next;
    int linked;
};

struct ltxn {
    moraine_txn *txn;
    ldb *owner;
    int inflight; /* a method is running (still set after it raised) */
    int failed;   /* a method failed: the first error is uservalue[2] */
};

struct lread {
    moraine_read *rd;
    ldb *owner;
    lread *prev, *next;
    int linked;
    moraine_children ch; /* children walk of the spec functions */
    int ch_active;
};

/* rd:scan's `changed = {S1, S2}`: only versions whose begin (snapshot_id for
 * ducklake_snapshot) or end lies in (lo, hi]; decided from the row's cells
 * before any Lua value is made. on 0: every row. */
typedef struct {
    int on;
    int64_t lo, hi;
} lfilter;

typedef struct {
    moraine_cursor *cur;
    lread *owner;
    moraine_children ch; /* children walk of the current row */
    int ch_active;
    lfilter changed;
} lcursor;

typedef struct {
    json_t *j;
} jbox;

/* The shared names below stay inside the shared object (only
 * luaopen_moraine_core is exported). */
#pragma GCC visibility push(hidden)

/* ---- moraine_values.c: moraine.null and errors ---------------------------------- */

/* moraine.null is the light userdata &null_sentinel. */
extern char null_sentinel;

/* Pushes moraine.null. */
void push_null(lua_State *L);

/* Replaces the message string on top of the stack by an error table
 * {code = @code, message = <that string>} (metatable "moraine.error"). */
void make_error(lua_State *L, const char *code);

/* Raise an error table and never return (the int is for `return raise_...`):
 * raise_top with the message on top of the stack and the code name of
 * @code (a MORAINE_E* value); raise_engine with moraine_errmsg(); raise_errf
 * with a lua_pushfstring format. */
int raise_top(lua_State *L, int code);
int raise_engine(lua_State *L, int code);
int raise_errf(lua_State *L, int code, const char *fmt, ...);

/* The module functions and metamethods of this part (see their definitions):
 * error_mt.__tostring, core.is_error, core.ident_render, core.ident_is_keyword,
 * core.raise. Each is a lua_CFunction. */
int l_error_tostring(lua_State *L);
int l_is_error(lua_State *L);
int l_ident_render(lua_State *L);
int l_ident_is_keyword(lua_State *L);
int l_raise(lua_State *L);

/* ---- moraine_values.c: integers ----------------------------------------------- */

/* Pushes an exact int64 (LuaJIT: a number within +-2^53, else an int64 cdata). */
void push_int64(lua_State *L, int64_t v);

/* 1 and *out if the value at @idx is an exact int64 (a Lua integer, an
 * integral float in range, a LuaJIT int64/uint64 cdata), else 0. */
int to_int64(lua_State *L, int idx, int64_t *out);

/* The argument at @idx as an exact int64 (an argument error otherwise);
 * opt_int gives @def when it is none or nil. */
int64_t check_int(lua_State *L, int idx);
int64_t opt_int(lua_State *L, int idx, int64_t def);

/* Raises EINVAL (naming @what) when @table_id is INT64_MIN: the C API reads
 * that scope as every table (MORAINE_ANY_SCOPE), so it cannot name one table
 * and a read of it would answer for all of them. */
void check_table_scope(lua_State *L, int64_t table_id, const char *what);

/* The argument at @idx as a name: a string without NUL bytes (argument error otherwise). */
const char *check_name(lua_State *L, int idx);
/* luaL_checkstring refusing an embedded NUL byte (argument error): for paths and names C reads up to the first NUL */
const char *check_cstr(lua_State *L, int idx);
/* The string at @idx (lua_tostring), EINVAL "@what contains a NUL byte" when it holds one; NULL when not a string/number */
const char *nul_free(lua_State *L, int idx, const char *what);

/* core.clock, core.int64, core.set_int64_ctor, core.set_cdata_conv,
 * core.all_versions (lua_CFunctions). */
int l_clock(lua_State *L);
int l_sleep(lua_State *L);
int l_dir_entries(lua_State *L);
int l_dir_locked(lua_State *L);
int l_int64(lua_State *L);
int l_set_int64_ctor(lua_State *L);
int l_set_cdata_conv(lua_State *L);

/* Stores the function (or nil) at argument 1 in the registry under @key: the
 * body of core.set_int64_ctor, set_cdata_conv and set_batch_wrap, moraine.lua's
 * hooks. Raises a Lua argument error for any other type. Returns 0. */
int set_registry_hook(lua_State *L, const char *key);
int l_all_versions(lua_State *L);

/* ---- moraine_values.c: handles ---------------------------------------------------- */

/* Pushes a new zeroed userdata of @sz bytes with metatable @tname and returns
 * it; with @owner_idx != 0 its uservalue {owner} keeps that value alive. */
void *new_handle(lua_State *L, size_t sz, const char *tname, int owner_idx);

/* Frees a children walk if *@active, and clears *@active. */
void children_release(moraine_children *ch, int *active);

/* End a handle's engine object (idempotent, never raise): read_close ends a
 * read and unlinks it from its db; txn_abort aborts a staged txn;
 * vtx_unlink takes a verb transaction off its db's list, vtx_abort aborts it
 * and unlinks it; db_close ends all of a db's reads and transactions, then
 * closes it. */
void read_close(lread *r);
void txn_abort(ltxn *t);
void vtx_unlink(lvtx *t);
void vtx_abort(lvtx *t);
void db_close(ldb *d);

/* ---- moraine_values.c: C -> Lua values ----------------------------------------------- */

/* Pushes an engine value (NULL: moraine.null; JSON: {json = text}); raises
 * ECORRUPT for an unknown type. */
void push_value(lua_State *L, const moraine_value *v);

/* Pushes a row as a table column name -> value. */
void push_row(lua_State *L, const moraine_row *row);

/* Pushes the embedded child rows of @row read through @r: with @only NULL a
 * table relation name -> array of rows, else the array of relation @only's
 * rows. The walk state is @ch / @active (in a userdata: nothing leaks on an error). */
void push_children(lua_State *L, lread *r, moraine_children *ch, int *active, const moraine_row *row,
                   const char *only);

/* Pushes a relation's description {name, id, placement, columns, secret_columns, parent}. */
void push_relinfo(lua_State *L, const moraine_relation_info *in);

/* ---- moraine_db.c --------------------------------------------------------------------- */

/* The open db handle at @idx (EINVAL "catalog is closed" when closed). */
/* @d, or EINVAL "catalog is closed" once db:close() ran: asked again after an allocation, which may run a finalizer that closes it */
ldb *db_still_open(lua_State *L, ldb *d);
ldb *check_db(lua_State *L, int idx);

/* core.open, core.verify_path, core.create_temp_file, core.sync_path and the db methods
 * close, last_snapshot, reader_check, relations, relation, import_ndjson,
 * export_ndjson, import_rows, verify, stats, store_access, with the db's
 * __gc and __tostring (lua_CFunctions). */
int l_open(lua_State *L);
int l_verify_path(lua_State *L);
int l_create_temp_file(lua_State *L);
int l_sync_path(lua_State *L);
int l_realpath(lua_State *L);
int l_lock_dir(lua_State *L);
int l_dirlock_release(lua_State *L); /* lock:release(), and __gc/__close of MT_DIRLOCK */
int l_flush_stdout(lua_State *L);
int l_rename_exchange(lua_State *L);
int l_db_close(lua_State *L);
int l_db_gc(lua_State *L);
int l_db_tostring(lua_State *L);
int l_db_last_snapshot(lua_State *L);
int l_db_reader_check(lua_State *L);
int l_db_release_pages(lua_State *L);
int l_db_relations(lua_State *L);
int l_db_relation(lua_State *L);
int l_db_import(lua_State *L);
int l_db_export(lua_State *L);
int l_db_import_rows(lua_State *L);
int l_db_import_sqlite(lua_State *L);
int l_import_ndjson_check(lua_State *L);
int l_import_check_new(lua_State *L);
int l_column_type(lua_State *L);
int l_required_tables(lua_State *L);
int l_catch_interrupts(lua_State *L);
int l_import_check_add(lua_State *L);
int l_import_check_finish(lua_State *L);
int l_import_check_gc(lua_State *L);
int l_db_verify(lua_State *L);
int l_db_stats(lua_State *L);
int l_db_store_access(lua_State *L);
int l_db_path_in_catalog(lua_State *L);
int l_db_compact(lua_State *L);
int l_db_open_elsewhere(lua_State *L);
int l_db_last_txnid(lua_State *L);

/* ---- moraine_staged.c ------------------------------------------------------------------ */

/* The methods of moraine.txn; db:commit; the txn's __gc and __tostring. */
extern const luaL_Reg txn_methods[];
int l_db_commit(lua_State *L);
int l_txn_gc(lua_State *L);
int l_txn_tostring(lua_State *L);

/* ---- moraine_verbs.c ------------------------------------------------------------------- */

/* The methods of moraine.tx; db:init, db:transaction, core.set_key_parsers;
 * the tx's __gc and __tostring. */
extern const luaL_Reg vtx_methods[];
int l_db_init(lua_State *L);
int l_db_transaction(lua_State *L);
int l_set_key_parsers(lua_State *L);
int l_vtx_gc(lua_State *L);
int l_vtx_tostring(lua_State *L);

/* Readers of argument tables (raw access; EINVAL naming @ctx on a bad shape):
 * check_fields raises unless every key of the table at @tidx is in the
 * NULL-ended @allowed; field_str gives field @key as a C string (NULL when nil
 * or moraine.null; EINVAL when @required and missing), the string staying
 * referenced by the table; array_table_at pushes element @i (1-based) of the
 * array at @aidx, which must be a table. */
void check_fields(lua_State *L, int tidx, const char *const *allowed, const char *ctx);
const char *field_str(lua_State *L, int tidx, const char *key, const char *ctx, int required);
void array_table_at(lua_State *L, int aidx, int i, const char *ctx);

/* Pushes a zeroed scratch array of @n (at least 1) elements of @sz bytes, a
 * userdata owned by Lua, and returns it. */
void *scratch(lua_State *L, size_t n, size_t sz);

/* ---- moraine_read.c -------------------------------------------------------------------- */

/* The methods of moraine.read; db:read, db:scan; the __gc and __tostring of
 * a read, the __gc of a cursor. */
extern const luaL_Reg read_methods[];
int l_db_read(lua_State *L);
int l_db_scan(lua_State *L);
int l_read_gc(lua_State *L);
int l_read_tostring(lua_State *L);
int l_cursor_gc(lua_State *L);

/* The open read handle at @idx (ETXN when it is closed). */
lread *check_read(lua_State *L, int idx);

/* The snapshot a read uses when none is given: its newest; INT64_MAX (live
 * rows) when the catalog has none yet. Raises the engine's error. */
int64_t default_snapshot(lua_State *L, lread *r);

/* ---- moraine_batch.c ------------------------------------------------------------------- */

/* rd:files_batch and rd:scan_columns (lua_CFunctions). */
int l_read_files_batch(lua_State *L);
int l_read_scan_columns(lua_State *L);
int l_batch_gc(lua_State *L);       /* __gc of MT_BATCH */
int l_set_batch_wrap(lua_State *L); /* core.set_batch_wrap(fn) */

/* ---- moraine_json.c -------------------------------------------------------------------- */

/* core.json_decode, core.parse_ndjson, core.json_encode; the jbox's __gc. */
int l_json_decode(lua_State *L);
int l_parse_ndjson(lua_State *L);
int l_json_encode(lua_State *L);
int l_jbox_gc(lua_State *L);

#pragma GCC visibility pop

/* The module's entry point (moraine_core.c): require "moraine.core". */
int luaopen_moraine_core(lua_State *L);

#endif
