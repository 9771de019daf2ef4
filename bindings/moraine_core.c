/*
 * moraine_core.c — the Lua module `moraine.core`: a thin layer over
 * engine/moraine.h. Users require `moraine` (bindings/moraine.lua), which
 * wraps this module and documents the API.
 *
 * One source for Lua 5.4 and LuaJIT 2.1 (Lua 5.1 API); see the compat block.
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
 * luaL_check* raise standard Lua string errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

static void mr_setfuncs(lua_State *L, const luaL_Reg *l)
{
    for (; l->name; l++) {
        lua_pushcfunction(L, l->func);
        lua_setfield(L, -2, l->name);
    }
}

/* ---- names ------------------------------------------------------------------ */
#define MT_DB "moraine.db"
#define MT_TXN "moraine.txn"
#define MT_VTX "moraine.tx"
#define MT_READ "moraine.read"
#define MT_CURSOR "moraine.cursor"
#define MT_ERROR "moraine.error"
#define MT_JBOX "moraine.jbox"
#define REG_INT64CTOR "moraine.int64ctor"
#define REG_CDATACONV "moraine.cdataconv"
#define REG_PARSE_PARTITION "moraine.parse_partition_key"
#define REG_PARSE_SORT "moraine.parse_sort_key"

static char null_sentinel; /* its address is moraine.null */

static void push_null(lua_State *L)
{
    lua_pushlightuserdata(L, &null_sentinel);
}

/* __tostring of light userdata: "NULL" for moraine.null; any other light
 * userdata as the metatable's earlier __tostring gives it (upvalue 1), else
 * as Lua does by default ("userdata: 0x..."). */
static int l_null_tostring(lua_State *L)
{
    if (lua_touserdata(L, 1) == &null_sentinel) {
        lua_pushliteral(L, "NULL");
        return 1;
    }
    if (!lua_isnil(L, lua_upvalueindex(1))) {
        lua_pushvalue(L, lua_upvalueindex(1));
        lua_pushvalue(L, 1);
        lua_call(L, 1, 1);
        return 1;
    }
    lua_pushfstring(L, "userdata: %p", lua_touserdata(L, 1));
    return 1;
}

/* Makes tostring(moraine.null) "NULL". Light userdata share one metatable per
 * Lua state, so the __tostring set here sees every light userdata: it answers
 * "NULL" for moraine.null only and keeps what any other gets (an earlier
 * __tostring of that metatable is chained, not replaced). Loading the module
 * twice does not chain it twice. */
static void set_null_tostring(lua_State *L)
{
    push_null(L);
    if (!lua_getmetatable(L, -1)) lua_newtable(L);
    lua_getfield(L, -1, "__tostring");
    if (lua_tocfunction(L, -1) == l_null_tostring) {
        lua_pop(L, 3);
        return;
    }
    lua_pushcclosure(L, l_null_tostring, 1);
    lua_setfield(L, -2, "__tostring");
    lua_setmetatable(L, -2);
    lua_pop(L, 1);
}

/* ---- errors ----------------------------------------------------------------- */

/* Replaces the message string on top of the stack by an error table. */
static void make_error(lua_State *L, const char *code)
{
    lua_createtable(L, 0, 2);
    lua_pushstring(L, code);
    lua_setfield(L, -2, "code");
    lua_insert(L, -2);
    lua_setfield(L, -2, "message");
    luaL_getmetatable(L, MT_ERROR);
    lua_setmetatable(L, -2);
}

/* Raises an error table from the message string on top of the stack. */
static int raise_top(lua_State *L, int code)
{
    make_error(L, moraine_strerror(code));
    return lua_error(L);
}

/* Raises the engine's last failure. Copies moraine_errmsg() at once: a later
 * moraine call (a finalizer run by the GC) could overwrite it. */
static int raise_engine(lua_State *L, int code)
{
    lua_pushstring(L, moraine_errmsg());
    return raise_top(L, code);
}

static int raise_errf(lua_State *L, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lua_pushvfstring(L, fmt, ap);
    va_end(ap);
    return raise_top(L, code);
}

static int l_error_tostring(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, 1, "code");
    lua_getfield(L, 1, "message");
    lua_pushfstring(L, "moraine: %s: %s", lua_isstring(L, 2) ? lua_tostring(L, 2) : "?",
                    lua_isstring(L, 3) ? lua_tostring(L, 3) : "");
    return 1;
}

/* core.is_error(v) -> boolean */
static int l_is_error(lua_State *L)
{
    int yes = 0;
    if (lua_type(L, 1) == LUA_TTABLE && lua_getmetatable(L, 1)) {
        luaL_getmetatable(L, MT_ERROR);
        yes = lua_rawequal(L, -1, -2);
        lua_pop(L, 2);
    }
    lua_pushboolean(L, yes);
    return 1;
}

/* core.ident_render(name) -> DuckDB's rendering of a name (engine/ident.c);
 * core.ident_is_keyword(name) -> boolean. Used by moraine.ident. */
static int l_ident_render(lua_State *L)
{
    size_t len;
    const char *name = luaL_checklstring(L, 1, &len);
    if (strlen(name) != len) return raise_errf(L, MORAINE_EINVAL, "ident_render: the name contains a NUL byte");
    size_t need = moraine_ident_render(name, NULL, 0);
    char *out = lua_newuserdata(L, need + 1); /* freed by the GC */
    moraine_ident_render(name, out, need + 1);
    lua_pushlstring(L, out, need);
    return 1;
}

static int l_ident_is_keyword(lua_State *L)
{
    lua_pushboolean(L, moraine_ident_is_keyword(luaL_checkstring(L, 1)));
    return 1;
}

/* core.raise(code_name, message): raises an error table (used by moraine.lua). */
static int l_raise(lua_State *L)
{
    const char *code = luaL_checkstring(L, 1);
    luaL_checkstring(L, 2);
    lua_settop(L, 2);
    make_error(L, code);
    return lua_error(L);
}

/* ---- integers ---------------------------------------------------------------- */
#define MR_2_53 INT64_C(9007199254740992)

/* Pushes an exact int64. LuaJIT: a number within +-2^53, else an int64_t cdata
 * made by the constructor moraine.lua registered (ctor(hi, lo) = hi*2^32 + lo). */
static void push_int64(lua_State *L, int64_t v)
{
#if MR_LUAJIT
    if (v >= -MR_2_53 && v <= MR_2_53) {
        lua_pushnumber(L, (lua_Number)v);
        return;
    }
    lua_getfield(L, LUA_REGISTRYINDEX, REG_INT64CTOR);
    if (lua_type(L, -1) != LUA_TFUNCTION) {
        lua_pop(L, 1);
        lua_pushnumber(L, (lua_Number)v); /* no constructor: best effort */
        return;
    }
    uint64_t u = (uint64_t)v;
    uint32_t hi = (uint32_t)(u >> 32), lo = (uint32_t)u;
    lua_pushnumber(L, hi >= UINT32_C(0x80000000) ? (lua_Number)hi - 4294967296.0 : (lua_Number)hi);
    lua_pushnumber(L, (lua_Number)lo);
    lua_call(L, 2, 1);
#else
    lua_pushinteger(L, (lua_Integer)v);
#endif
}

/* 1 and *out if the double is integral and inside int64's range. */
static int double_to_int64(lua_Number d, int64_t *out)
{
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        return 0; /* out of range, or NaN */
    int64_t i = (int64_t)d;
    if ((lua_Number)i != d)
        return 0;
    *out = i;
    return 1;
}

#if MR_LUAJIT
/* An int64_t/uint64_t cdata, through the converter moraine.lua registered
 * (returns its decimal text, or nil for any other cdata). */
static int cdata_to_int64(lua_State *L, int idx, int64_t *out)
{
    idx = mr_absindex(L, idx);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_CDATACONV);
    if (lua_type(L, -1) != LUA_TFUNCTION) {
        lua_pop(L, 1);
        return 0;
    }
    lua_pushvalue(L, idx);
    lua_call(L, 1, 1);
    int ok = 0;
    if (lua_type(L, -1) == LUA_TSTRING) {
        const char *s = lua_tostring(L, -1);
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno == 0 && end != s && *end == '\0') {
            *out = (int64_t)v;
            ok = 1;
        }
    }
    lua_pop(L, 1);
    return ok;
}
#endif

/* 1 and *out if the value at idx is an exact integer (a Lua integer, an
 * integral float in range, or under LuaJIT an int64/uint64 cdata in range). */
static int to_int64(lua_State *L, int idx, int64_t *out)
{
    int t = lua_type(L, idx);
    if (t == LUA_TNUMBER) {
#if !MR_LUAJIT
        if (lua_isinteger(L, idx)) {
            *out = (int64_t)lua_tointeger(L, idx);
            return 1;
        }
#endif
        return double_to_int64(lua_tonumber(L, idx), out);
    }
#if MR_LUAJIT
    if (t == MR_TCDATA)
        return cdata_to_int64(L, idx, out);
#endif
    return 0;
}

static int64_t check_int(lua_State *L, int idx)
{
    int64_t v = 0;
    if (!to_int64(L, idx, &v)) {
        if (lua_type(L, idx) == LUA_TNUMBER)
            luaL_argerror(L, idx, "number has no exact int64 representation");
        luaL_argerror(L, idx, lua_pushfstring(L, "integer expected, got %s", luaL_typename(L, idx)));
    }
    return v;
}

static int64_t opt_int(lua_State *L, int idx, int64_t def)
{
    return lua_isnoneornil(L, idx) ? def : check_int(L, idx);
}

/* core.clock(): seconds since an arbitrary fixed point, from CLOCK_MONOTONIC
 * (wall-clock time that never jumps back, unlike os.time; not CPU time, unlike
 * os.clock), as a number with nanosecond resolution. For progress and timing. */
static int l_clock(lua_State *L)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return raise_errf(L, MORAINE_EIO, "clock_gettime(CLOCK_MONOTONIC) failed");
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

/* core.int64(v): normalises an integer (LuaJIT: number within +-2^53, else int64 cdata). */
static int l_int64(lua_State *L)
{
    luaL_checkany(L, 1);
    push_int64(L, check_int(L, 1));
    return 1;
}

/* core.set_int64_ctor(fn), core.set_cdata_conv(fn): LuaJIT hooks from moraine.lua. */
static int l_set_int64_ctor(lua_State *L)
{
    if (!lua_isnil(L, 1))
        luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_INT64CTOR);
    return 0;
}

static int l_set_cdata_conv(lua_State *L)
{
    if (!lua_isnil(L, 1))
        luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_CDATACONV);
    return 0;
}

/* core.all_versions() -> MORAINE_ALL_VERSIONS as a Lua value (moraine.ALL) */
static int l_all_versions(lua_State *L)
{
    push_int64(L, MORAINE_ALL_VERSIONS);
    return 1;
}

/* A name argument: a string without NUL bytes. */
static const char *check_name(lua_State *L, int idx)
{
    size_t len;
    const char *s = luaL_checklstring(L, idx, &len);
    if (strlen(s) != len)
        luaL_argerror(L, idx, "name contains a NUL byte");
    return s;
}

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

typedef struct {
    moraine_cursor *cur;
    lread *owner;
    moraine_children ch; /* children walk of the current row */
    int ch_active;
} lcursor;

typedef struct {
    json_t *j;
} jbox;

/* New userdata of size sz with metatable tname; with owner_idx != 0 its
 * uservalue becomes {owner} (keeps the owner alive as long as it). */
static void *new_handle(lua_State *L, size_t sz, const char *tname, int owner_idx)
{
    if (owner_idx)
        owner_idx = mr_absindex(L, owner_idx);
    void *p = lua_newuserdata(L, sz);
    memset(p, 0, sz);
    luaL_getmetatable(L, tname);
    lua_setmetatable(L, -2);
    lua_createtable(L, 2, 0);
    if (owner_idx) {
        lua_pushvalue(L, owner_idx);
        lua_rawseti(L, -2, 1);
    }
    mr_setuv(L, -2);
    return p;
}

static void children_release(moraine_children *ch, int *active)
{
    if (*active) {
        moraine_children_free(ch);
        *active = 0;
    }
}

static void read_close(lread *r)
{
    children_release(&r->ch, &r->ch_active);
    if (r->rd) {
        moraine_read_end(r->rd);
        r->rd = NULL;
    }
    if (r->linked) {
        if (r->prev)
            r->prev->next = r->next;
        else
            r->owner->reads = r->next;
        if (r->next)
            r->next->prev = r->prev;
        r->prev = r->next = NULL;
        r->linked = 0;
    }
}

static void txn_abort(ltxn *t)
{
    if (t->txn) {
        moraine_txn_abort(t->txn);
        t->txn = NULL;
    }
    if (t->owner && t->owner->txn == t)
        t->owner->txn = NULL;
}

static void vtx_unlink(lvtx *t)
{
    if (!t->linked)
        return;
    if (t->prev)
        t->prev->next = t->next;
    else
        t->owner->vtxs = t->next;
    if (t->next)
        t->next->prev = t->prev;
    t->prev = t->next = NULL;
    t->linked = 0;
}

static void vtx_abort(lvtx *t)
{
    if (t->tx) {
        moraine_tx_abort(t->tx);
        t->tx = NULL;
    }
    vtx_unlink(t);
}

static void db_close(ldb *d)
{
    if (d->txn)
        txn_abort(d->txn);
    while (d->vtxs)
        vtx_abort(d->vtxs);
    while (d->reads)
        read_close(d->reads);
    if (d->db) {
        moraine_close(d->db);
        d->db = NULL;
    }
}

/* ---- value conversion: C -> Lua --------------------------------------------- */
static void push_value(lua_State *L, const moraine_value *v)
{
    switch (v->type) {
    case MORAINE_NULL:
        push_null(L);
        break;
    case MORAINE_INT:
        push_int64(L, v->i);
        break;
    case MORAINE_STR:
        lua_pushlstring(L, v->len ? v->s : "", v->len);
        break;
    case MORAINE_BOOL:
        lua_pushboolean(L, v->i != 0);
        break;
    case MORAINE_REAL:
        lua_pushnumber(L, (lua_Number)v->d);
        break;
    case MORAINE_JSON:
        lua_createtable(L, 0, 1);
        lua_pushlstring(L, v->len ? v->s : "", v->len);
        lua_setfield(L, -2, "json");
        break;
    default:
        raise_errf(L, MORAINE_ECORRUPT, "value of unknown type %d", (int)v->type);
    }
}

/* Pushes a row as a table column name -> value (values copied). */
static void push_row(lua_State *L, const moraine_row *row)
{
    const moraine_relation_info *rel = row->rel;
    luaL_checkstack(L, 6, NULL);
    lua_createtable(L, 0, (int)rel->ncols);
    for (size_t i = 0; i < rel->ncols; i++) {
        if (i < row->ncols)
            push_value(L, &row->vals[i]);
        else
            push_null(L);
        lua_setfield(L, -2, rel->colnames[i]);
    }
}

/* Pushes the embedded children of @row: with only == NULL a table child
 * relation name -> array of child rows, else the array of the child rows of
 * relation @only. The walk state lives in a userdata (ch, active) so that a
 * Lua error in between cannot leak it. */
static void push_children(lua_State *L, lread *r, moraine_children *ch, int *active, const moraine_row *row,
                          const char *only)
{
    lua_newtable(L);
    if (row->children == NULL || row->children_len == 0)
        return;
    children_release(ch, active);
    memset(ch, 0, sizeof *ch);
    moraine_row_children(r->rd, row, ch);
    *active = 1;
    for (;;) {
        moraine_row c;
        int rc = moraine_children_next(ch, &c);
        if (rc == 0)
            break;
        if (rc < 0) {
            lua_pushstring(L, moraine_errmsg());
            children_release(ch, active);
            raise_top(L, rc);
        }
        if (only) {
            if (strcmp(c.rel->name, only) != 0)
                continue;
            push_row(L, &c);
            lua_rawseti(L, -2, (int)mr_rawlen(L, -2) + 1);
        } else {
            lua_getfield(L, -1, c.rel->name);
            if (lua_isnil(L, -1)) {
                lua_pop(L, 1);
                lua_newtable(L);
                lua_pushvalue(L, -1);
                lua_setfield(L, -3, c.rel->name);
            }
            push_row(L, &c);
            lua_rawseti(L, -2, (int)mr_rawlen(L, -2) + 1);
            lua_pop(L, 1);
        }
    }
    children_release(ch, active);
}

static const char *placement_name(moraine_placement p)
{
    switch (p) {
    case MORAINE_PLACE_TEMPORAL:
        return "temporal";
    case MORAINE_PLACE_CHILD:
        return "child";
    case MORAINE_PLACE_SNAPSHOT:
        return "snapshot";
    case MORAINE_PLACE_ROWS:
        return "rows";
    }
    return "unknown";
}

static void push_relinfo(lua_State *L, const moraine_relation_info *in)
{
    lua_createtable(L, 0, 5);
    lua_pushstring(L, in->name);
    lua_setfield(L, -2, "name");
    push_int64(L, (int64_t)in->id);
    lua_setfield(L, -2, "id");
    lua_pushstring(L, placement_name(in->placement));
    lua_setfield(L, -2, "placement");
    lua_createtable(L, (int)in->ncols, 0);
    for (size_t i = 0; i < in->ncols; i++) {
        lua_pushstring(L, in->colnames[i]);
        lua_rawseti(L, -2, (int)i + 1);
    }
    lua_setfield(L, -2, "columns");
    /* secret_columns: the MORAINE_COL_SECRET columns, in column order (empty: none) */
    lua_newtable(L);
    for (size_t i = 0, n = 0; i < in->ncols; i++) {
        if (!in->colflags || !(in->colflags[i] & MORAINE_COL_SECRET))
            continue;
        lua_pushstring(L, in->colnames[i]);
        lua_rawseti(L, -2, (int)++n);
    }
    lua_setfield(L, -2, "secret_columns");
    if (in->parent) {
        lua_pushstring(L, in->parent);
        lua_setfield(L, -2, "parent");
    }
}

/* ---- db --------------------------------------------------------------------- */
static ldb *check_db(lua_State *L, int idx)
{
    ldb *d = (ldb *)luaL_checkudata(L, idx, MT_DB);
    if (d->db == NULL)
        raise_errf(L, MORAINE_EINVAL, "catalog is closed");
    return d;
}

static int opt_bool_field(lua_State *L, int idx, const char *key, int def)
{
    lua_getfield(L, idx, key);
    int t = lua_type(L, -1), v = def;
    if (t == LUA_TBOOLEAN)
        v = lua_toboolean(L, -1);
    else if (t != LUA_TNIL)
        raise_errf(L, MORAINE_EINVAL, "open: option '%s' must be a boolean, got %s", key, luaL_typename(L, -1));
    lua_pop(L, 1);
    return v;
}

static size_t opt_size_field(lua_State *L, int idx, const char *key)
{
    lua_getfield(L, idx, key);
    int64_t v = 0;
    if (!lua_isnil(L, -1) && (!to_int64(L, -1, &v) || v < 0))
        raise_errf(L, MORAINE_EINVAL, "open: option '%s' must be a non-negative integer (bytes)", key);
    lua_pop(L, 1);
    return (size_t)v;
}

/* core.open(path, opts) -> db */
static int l_open(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    moraine_options o;
    memset(&o, 0, sizeof o);
    o.create = 1;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        lua_pushnil(L);
        while (lua_next(L, 2)) {
            lua_pop(L, 1);
            const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
            if (!k || !(strcmp(k, "map_size") == 0 || strcmp(k, "max_map_size") == 0 || strcmp(k, "read_only") == 0 ||
                        strcmp(k, "no_sync") == 0 || strcmp(k, "create") == 0))
                raise_errf(L, MORAINE_EINVAL, "open: unknown option '%s'", k ? k : luaL_typename(L, -1));
        }
        o.map_size = opt_size_field(L, 2, "map_size");
        o.max_map_size = opt_size_field(L, 2, "max_map_size");
        o.read_only = opt_bool_field(L, 2, "read_only", 0);
        o.no_sync = opt_bool_field(L, 2, "no_sync", 0);
        o.create = opt_bool_field(L, 2, "create", 1);
    }
    ldb *d = (ldb *)new_handle(L, sizeof *d, MT_DB, 0);
    int rc = moraine_open(path, &o, &d->db);
    if (rc != 0) {
        d->db = NULL;
        return raise_engine(L, rc);
    }
    return 1;
}

static int l_db_close(lua_State *L)
{
    ldb *d = (ldb *)luaL_checkudata(L, 1, MT_DB);
    if (d->busy)
        return raise_errf(L, MORAINE_ETXN, "cannot close the catalog during import/export");
    db_close(d);
    return 0;
}

static int l_db_gc(lua_State *L)
{
    ldb *d = (ldb *)lua_touserdata(L, 1);
    if (d && !d->busy)
        db_close(d);
    return 0;
}

static int l_db_tostring(lua_State *L)
{
    ldb *d = (ldb *)luaL_checkudata(L, 1, MT_DB);
    if (d->db)
        lua_pushfstring(L, "moraine.db (%p)", (void *)d);
    else
        lua_pushliteral(L, "moraine.db (closed)");
    return 1;
}

static int l_db_last_snapshot(lua_State *L)
{
    ldb *d = check_db(L, 1);
    int64_t s;
    int rc = moraine_last_snapshot(d->db, &s);
    if (rc < 0)
        return raise_engine(L, rc);
    if (rc == 0)
        lua_pushnil(L);
    else
        push_int64(L, s);
    return 1;
}

/* db:reader_check() -> number of dead readers' slots cleared */
static int l_db_reader_check(lua_State *L)
{
    ldb *d = check_db(L, 1);
    int dead = 0;
    int rc = moraine_reader_check(d->db, &dead);
    if (rc < 0)
        return raise_engine(L, rc);
    lua_pushinteger(L, dead);
    return 1;
}

static int l_db_relations(lua_State *L)
{
    ldb *d = check_db(L, 1);
    lua_newtable(L);
    for (size_t i = 0;; i++) {
        moraine_relation_info in;
        int rc = moraine_relation_at(d->db, i, &in);
        if (rc < 0)
            return raise_engine(L, rc);
        if (rc == 0)
            break;
        push_relinfo(L, &in);
        lua_rawseti(L, -2, (int)i + 1);
    }
    return 1;
}

static int l_db_relation(lua_State *L)
{
    ldb *d = check_db(L, 1);
    const char *name = check_name(L, 2);
    moraine_relation_info in;
    int rc = moraine_relation(d->db, name, &in);
    if (rc == MORAINE_ENOTFOUND) {
        lua_pushnil(L);
        return 1;
    }
    if (rc != 0)
        return raise_engine(L, rc);
    push_relinfo(L, &in);
    return 1;
}

/* ---- write transactions ------------------------------------------------------ */

/* Enters a txn method: the txn must be open. Marks the call in flight; a call
 * that raises (with any error, argument errors too) leaves the mark, and the
 * commit then refuses. */
static ltxn *tx_enter(lua_State *L)
{
    ltxn *t = (ltxn *)luaL_checkudata(L, 1, MT_TXN);
    if (t->txn == NULL)
        raise_errf(L, MORAINE_ETXN, "transaction is finished (use it only inside the commit function)");
    if (t->inflight)
        t->failed = 1;
    t->inflight = 1;
    return t;
}

/* Records the error value on top as the txn's first failure, then raises it. */
static int tx_raise(lua_State *L, ltxn *t)
{
    if (!t->failed) {
        t->failed = 1;
        mr_getuv(L, 1);
        lua_pushvalue(L, -2);
        lua_rawseti(L, -2, 2);
        lua_pop(L, 1);
    }
    t->inflight = 0;
    return lua_error(L);
}

static int tx_fail_engine(lua_State *L, ltxn *t, int code)
{
    lua_pushstring(L, moraine_errmsg());
    make_error(L, moraine_strerror(code));
    return tx_raise(L, t);
}

static int tx_failf(lua_State *L, ltxn *t, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lua_pushvfstring(L, fmt, ap);
    va_end(ap);
    make_error(L, moraine_strerror(code));
    return tx_raise(L, t);
}

static void tx_leave(ltxn *t)
{
    t->inflight = 0;
}

/* Converts the Lua value at idx to *v for column @col of relation @rel. */
static void to_value(lua_State *L, ltxn *t, int idx, moraine_value *v, moraine_coltype ct, const char *rel,
                     const char *col, int allow_missing)
{
    memset(v, 0, sizeof *v);
    int ty = lua_type(L, idx);
    switch (ty) {
    case LUA_TNIL:
        if (!allow_missing)
            tx_failf(L, t, MORAINE_EINVAL, "%s: missing column '%s'", rel, col);
        v->type = MORAINE_NULL;
        return;
    case LUA_TBOOLEAN:
        v->type = MORAINE_BOOL;
        v->i = lua_toboolean(L, idx);
        return;
    case LUA_TSTRING:
        v->type = MORAINE_STR;
        v->s = lua_tolstring(L, idx, &v->len);
        return;
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == &null_sentinel) {
            v->type = MORAINE_NULL;
            return;
        }
        break;
    case LUA_TNUMBER: {
        int64_t i;
        int want_int = 1; /* LuaJIT: every integral number is an integer */
#if !MR_LUAJIT
        want_int = lua_isinteger(L, idx) || ct == MORAINE_COL_BIGINT;
#endif
        if (want_int) {
            if (to_int64(L, idx, &i)) {
                v->type = MORAINE_INT;
                v->i = i;
                return;
            }
            if (ct == MORAINE_COL_BIGINT) {
                char buf[64];
                snprintf(buf, sizeof buf, "%.17g", (double)lua_tonumber(L, idx));
                tx_failf(L, t, MORAINE_EINVAL, "%s: column '%s': %s is not an exact int64 integer", rel, col, buf);
            }
        }
        v->type = MORAINE_REAL;
        v->d = (double)lua_tonumber(L, idx);
        return;
    }
    case LUA_TTABLE:
        lua_pushliteral(L, "json");
        lua_rawget(L, idx);
        if (lua_type(L, -1) == LUA_TSTRING) {
            v->type = MORAINE_JSON;
            v->s = lua_tolstring(L, -1, &v->len); /* stays on the stack for the call */
            return;
        }
        lua_pop(L, 1);
        tx_failf(L, t, MORAINE_EINVAL, "%s: column '%s': a table value must be {json = \"<text>\"}", rel, col);
        return;
#if MR_LUAJIT
    case MR_TCDATA: {
        int64_t i;
        if (to_int64(L, idx, &i)) {
            v->type = MORAINE_INT;
            v->i = i;
            return;
        }
        tx_failf(L, t, MORAINE_EINVAL, "%s: column '%s': cdata value is not an int64_t/uint64_t in int64 range", rel,
                 col);
        return;
    }
#endif
    default:
        break;
    }
    tx_failf(L, t, MORAINE_EINVAL, "%s: column '%s': unsupported value of type %s", rel, col, luaL_typename(L, idx));
}

/* Builds the value array of the name-keyed row table at row_idx in @info's
 * column order. The array is a userdata and the values are left on the stack
 * (strings point into them) until the caller resets the stack. */
static moraine_value *row_values(lua_State *L, ltxn *t, int row_idx, const moraine_relation_info *info,
                                 int allow_missing)
{
    luaL_checktype(L, row_idx, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, row_idx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING) {
            const char *tn = luaL_typename(L, -1);
            tx_failf(L, t, MORAINE_EINVAL, "%s: unknown column (a %s key)", info->name, tn);
        }
        const char *k = lua_tostring(L, -1);
        if (moraine_column_index(info, k) < 0)
            tx_failf(L, t, MORAINE_EINVAL, "%s: unknown column '%s'", info->name, k);
    }
    luaL_checkstack(L, 2 * (int)info->ncols + 8, "too many columns"); /* a value (+ a JSON text) per column */
    moraine_value *vals = (moraine_value *)lua_newuserdata(L, (info->ncols ? info->ncols : 1) * sizeof *vals);
    for (size_t i = 0; i < info->ncols; i++) {
        lua_pushstring(L, info->colnames[i]);
        lua_rawget(L, row_idx);
        to_value(L, t, lua_gettop(L), &vals[i], info->coltypes ? info->coltypes[i] : MORAINE_COL_ANY, info->name,
                 info->colnames[i], allow_missing);
    }
    return vals;
}

static void tx_relation(lua_State *L, ltxn *t, const char *name, moraine_relation_info *info)
{
    int rc = moraine_relation(t->owner->db, name, info);
    if (rc != 0)
        tx_fail_engine(L, t, rc);
}

static int l_tx_define(lua_State *L)
{
    ltxn *t = tx_enter(L);
    const char *name = check_name(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    size_t n = mr_rawlen(L, 3);
    luaL_checkstack(L, (int)n + 8, "too many columns");
    const char **names = (const char **)lua_newuserdata(L, (n ? n : 1) * sizeof *names);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, 3, (int)i + 1);
        size_t len;
        if (lua_type(L, -1) != LUA_TSTRING)
            tx_failf(L, t, MORAINE_EINVAL, "%s: column name %d is not a string", name, (int)i + 1);
        names[i] = lua_tolstring(L, -1, &len);
        if (strlen(names[i]) != len)
            tx_failf(L, t, MORAINE_EINVAL, "%s: column name %d contains a NUL byte", name, (int)i + 1);
    }
    int rc = moraine_txn_define(t->txn, name, n, names);
    if (rc != 0)
        return tx_fail_engine(L, t, rc);
    tx_leave(t);
    return 0;
}

static int l_tx_insert(lua_State *L)
{
    ltxn *t = tx_enter(L);
    const char *name = check_name(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    int64_t ord = opt_int(L, 4, -1);
    lua_settop(L, 4);
    moraine_relation_info info;
    tx_relation(L, t, name, &info);
    moraine_value *vals = row_values(L, t, 3, &info, 0);
    int rc = moraine_txn_insert(t->txn, name, vals, info.ncols, ord);
    if (rc != 0)
        return tx_fail_engine(L, t, rc);
    tx_leave(t);
    return 0;
}

static int l_tx_end_row(lua_State *L)
{
    ltxn *t = tx_enter(L);
    const char *name = check_name(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    moraine_relation_info info;
    tx_relation(L, t, name, &info);
    moraine_value *vals = row_values(L, t, 3, &info, 1);
    int rc = moraine_txn_end(t->txn, name, vals, info.ncols);
    if (rc != 0)
        return tx_fail_engine(L, t, rc);
    tx_leave(t);
    return 0;
}

static int l_tx_put_row(lua_State *L)
{
    ltxn *t = tx_enter(L);
    const char *name = check_name(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    int64_t ord = check_int(L, 4);
    lua_settop(L, 4);
    moraine_relation_info info;
    tx_relation(L, t, name, &info);
    moraine_value *vals = row_values(L, t, 3, &info, 0);
    int rc = moraine_txn_put_row(t->txn, name, vals, info.ncols, ord);
    if (rc != 0)
        return tx_fail_engine(L, t, rc);
    tx_leave(t);
    return 0;
}

static int l_tx_delete_row(lua_State *L)
{
    ltxn *t = tx_enter(L);
    const char *name = check_name(L, 2);
    int64_t ord = check_int(L, 3);
    int rc = moraine_txn_delete_row(t->txn, name, ord);
    if (rc != 0)
        return tx_fail_engine(L, t, rc);
    tx_leave(t);
    return 0;
}

static int l_txn_gc(lua_State *L)
{
    ltxn *t = (ltxn *)lua_touserdata(L, 1);
    if (t)
        txn_abort(t);
    return 0;
}

static int l_txn_tostring(lua_State *L)
{
    ltxn *t = (ltxn *)luaL_checkudata(L, 1, MT_TXN);
    lua_pushstring(L, t->txn ? "moraine.txn (open)" : "moraine.txn (finished)");
    return 1;
}

/* db:commit(snapshot_id or nil, fn) -> true */
static int l_db_commit(lua_State *L)
{
    ldb *d = check_db(L, 1);
    int64_t snap = opt_int(L, 2, MORAINE_NO_SNAPSHOT);
    luaL_checktype(L, 3, LUA_TFUNCTION);
    /* opts: {partial = true}: an intermediate commit of a replay (moraine_txn_partial) */
    int partial = 0;
    if (!lua_isnoneornil(L, 4)) {
        luaL_checktype(L, 4, LUA_TTABLE);
        lua_pushnil(L);
        while (lua_next(L, 4)) {
            if (lua_type(L, -2) != LUA_TSTRING || strcmp(lua_tostring(L, -2), "partial") != 0 || !lua_isboolean(L, -1))
                return raise_errf(L, MORAINE_EINVAL, "db:commit: the only option is partial (a boolean)");
            partial = lua_toboolean(L, -1);
            lua_pop(L, 1);
        }
    }
    lua_settop(L, 3);
    ltxn *t = (ltxn *)new_handle(L, sizeof *t, MT_TXN, 1); /* 4 */
    t->owner = d;
    int rc = moraine_txn_begin(d->db, snap, &t->txn);
    if (rc != 0) {
        t->txn = NULL;
        return raise_engine(L, rc);
    }
    d->txn = t;
    if (partial) moraine_txn_partial(t->txn, 1);
    lua_pushvalue(L, 3);
    lua_pushvalue(L, 4);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
        txn_abort(t);
        return lua_error(L); /* fn's error, as raised */
    }
    if (t->txn == NULL)
        return raise_errf(L, MORAINE_ETXN, "the transaction was closed before it could commit (catalog closed?)");
    if (t->failed || t->inflight) {
        txn_abort(t);
        mr_getuv(L, 4);
        lua_rawgeti(L, -1, 2);
        if (!lua_isnil(L, -1))
            return lua_error(L);
        return raise_errf(L, MORAINE_ETXN, "a call on the transaction failed; nothing was committed");
    }
    moraine_txn *mt = t->txn;
    t->txn = NULL;
    d->txn = NULL;
    rc = moraine_txn_commit(mt);
    if (rc != 0)
        return raise_engine(L, rc);
    lua_pushboolean(L, 1);
    return 1;
}

/* ---- verb transactions (db:transaction, db:init) -------------------------------
 * Verbs copy everything they need (moraine.h), so the strings handed to them
 * only have to live during the call: they are read with raw access from the
 * argument tables (still referenced by the stack, and no Lua code that could
 * change them runs during the call), and the C arrays are userdata on the
 * stack, so an error raised half way (a longjmp) leaks nothing. */

/* db:init(data_path) -> true */
static int l_db_init(lua_State *L)
{
    ldb *d = check_db(L, 1);
    const char *path = lua_isnoneornil(L, 2) ? "data/" : check_name(L, 2); /* the moraine command's default too */
    int rc = moraine_init(d->db, path);
    if (rc != 0)
        return raise_engine(L, rc);
    lua_pushboolean(L, 1);
    return 1;
}

static lvtx *check_vtx(lua_State *L)
{
    lvtx *t = (lvtx *)luaL_checkudata(L, 1, MT_VTX);
    if (t->tx == NULL)
        raise_errf(L, MORAINE_ETXN, "transaction is finished (use it only inside the transaction function)");
    return t;
}

static int is_null_at(lua_State *L, int idx)
{
    return lua_type(L, idx) == LUA_TLIGHTUSERDATA && lua_touserdata(L, idx) == &null_sentinel;
}

/* The table argument at idx: "t" (schema main), "s.t" (split at the first
 * dot) or {schema = s, table = t}. Always pushes one value (the schema string
 * of a dotted name, else nil) that must stay on the stack during the call. */
static void check_tbl(lua_State *L, int idx, const char *verb, const char **schema, const char **table)
{
    idx = mr_absindex(L, idx);
    *schema = NULL;
    if (lua_type(L, idx) == LUA_TSTRING) {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        if (strlen(s) != len)
            luaL_argerror(L, idx, "table name contains a NUL byte");
        const char *dot = strchr(s, '.');
        if (dot) {
            lua_pushlstring(L, s, (size_t)(dot - s));
            *schema = lua_tostring(L, -1);
            *table = dot + 1;
        } else {
            lua_pushnil(L);
            *table = s;
        }
        return;
    }
    if (lua_type(L, idx) != LUA_TTABLE)
        luaL_argerror(L, idx, lua_pushfstring(L, "table name (string or {schema =, table =}) expected, got %s",
                                              luaL_typename(L, idx)));
    const char *keys[2] = {"schema", "table"};
    const char *vals[2] = {NULL, NULL};
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        if (!k || (strcmp(k, "schema") != 0 && strcmp(k, "table") != 0))
            raise_errf(L, MORAINE_EINVAL, "%s: table name: unknown field '%s' (expected 'schema' and 'table')", verb,
                       k ? k : luaL_typename(L, -1));
    }
    for (int i = 0; i < 2; i++) {
        lua_pushstring(L, keys[i]);
        lua_rawget(L, idx);
        if (lua_type(L, -1) == LUA_TSTRING) {
            size_t len;
            vals[i] = lua_tolstring(L, -1, &len);
            if (strlen(vals[i]) != len)
                raise_errf(L, MORAINE_EINVAL, "%s: table name: '%s' contains a NUL byte", verb, keys[i]);
        } else if (i == 1 || !lua_isnil(L, -1)) {
            raise_errf(L, MORAINE_EINVAL, "%s: table name: '%s' must be a string%s, got %s", verb, keys[i],
                       i == 0 ? " or nil (main)" : "", luaL_typename(L, -1));
        }
        lua_pop(L, 1); /* the string stays referenced by the argument table */
    }
    lua_pushnil(L);
    *schema = vals[0];
    *table = vals[1];
}

/* Raises EINVAL unless every key of the table at tidx is one of @allowed. */
static void check_fields(lua_State *L, int tidx, const char *const *allowed, const char *ctx)
{
    lua_pushnil(L);
    while (lua_next(L, tidx)) {
        lua_pop(L, 1);
        const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        int ok = 0;
        for (size_t i = 0; k && allowed[i]; i++)
            if (strcmp(k, allowed[i]) == 0)
                ok = 1;
        if (!ok) {
            if (k)
                raise_errf(L, MORAINE_EINVAL, "%s: unknown field '%s'", ctx, k);
            raise_errf(L, MORAINE_EINVAL, "%s: unknown field (a %s key)", ctx, luaL_typename(L, -1));
        }
    }
}

/* Field @key of the table at tidx (raw access) as a C string; NULL when nil or
 * moraine.null (EINVAL if @required). */
static const char *field_str(lua_State *L, int tidx, const char *key, const char *ctx, int required)
{
    lua_pushstring(L, key);
    lua_rawget(L, tidx);
    const char *s = NULL;
    if (lua_type(L, -1) == LUA_TSTRING) {
        size_t len;
        s = lua_tolstring(L, -1, &len);
        if (strlen(s) != len)
            raise_errf(L, MORAINE_EINVAL, "%s: '%s' contains a NUL byte", ctx, key);
    } else if (lua_isnil(L, -1) || is_null_at(L, -1)) {
        if (required)
            raise_errf(L, MORAINE_EINVAL, "%s: '%s' (a string) is required", ctx, key);
    } else {
        raise_errf(L, MORAINE_EINVAL, "%s: '%s' must be a string, got %s", ctx, key, luaL_typename(L, -1));
    }
    lua_pop(L, 1); /* the string stays referenced by the table */
    return s;
}

/* Field @key as an int64; @def when nil or moraine.null (EINVAL if @required). */
static int64_t field_int(lua_State *L, int tidx, const char *key, const char *ctx, int required, int64_t def)
{
    lua_pushstring(L, key);
    lua_rawget(L, tidx);
    int64_t v = def;
    if (lua_isnil(L, -1) || is_null_at(L, -1)) {
        if (required)
            raise_errf(L, MORAINE_EINVAL, "%s: '%s' (an integer) is required", ctx, key);
    } else if (!to_int64(L, -1, &v)) {
        raise_errf(L, MORAINE_EINVAL, "%s: '%s' must be an exact int64 integer, got %s", ctx, key,
                   luaL_typename(L, -1));
    }
    lua_pop(L, 1);
    return v;
}

/* Field @key as a boolean 0/1; @def when nil or moraine.null. */
static int field_bool(lua_State *L, int tidx, const char *key, const char *ctx, int def)
{
    lua_pushstring(L, key);
    lua_rawget(L, tidx);
    int v = def;
    if (lua_type(L, -1) == LUA_TBOOLEAN)
        v = lua_toboolean(L, -1);
    else if (!lua_isnil(L, -1) && !is_null_at(L, -1))
        raise_errf(L, MORAINE_EINVAL, "%s: '%s' must be a boolean, got %s", ctx, key, luaL_typename(L, -1));
    lua_pop(L, 1);
    return v;
}

/* Pushes element i (1-based) of the array at aidx and checks it is a table. */
static void array_table_at(lua_State *L, int aidx, int i, const char *ctx)
{
    lua_rawgeti(L, aidx, i);
    if (lua_type(L, -1) != LUA_TTABLE)
        raise_errf(L, MORAINE_EINVAL, "%s must be a table, got %s", ctx, luaL_typename(L, -1));
}

static size_t array_len(lua_State *L, int aidx)
{
    return (size_t)mr_rawlen(L, aidx);
}

/* A scratch array of n elements of size sz, owned by Lua (pushed). */
static void *scratch(lua_State *L, size_t n, size_t sz)
{
    void *p = lua_newuserdata(L, (n ? n : 1) * sz);
    memset(p, 0, (n ? n : 1) * sz);
    return p;
}

static const char *const column_fields[] = {"name", "type", "not_null", "default", NULL};

/* The column definition table at tidx. */
static void read_column(lua_State *L, int tidx, const char *ctx, moraine_column_def *c)
{
    check_fields(L, tidx, column_fields, ctx);
    c->name = field_str(L, tidx, "name", ctx, 1);
    c->type = field_str(L, tidx, "type", ctx, 1);
    c->not_null = field_bool(L, tidx, "not_null", ctx, 0);
    c->default_value = field_str(L, tidx, "default", ctx, 0);
}

/* Calls the key parser moraine.lua registered under @reg for the string at
 * the top; replaces it by the parsed table or raises EINVAL. */
static void parse_key(lua_State *L, const char *reg, const char *ctx)
{
    lua_getfield(L, LUA_REGISTRYINDEX, reg);
    if (lua_type(L, -1) != LUA_TFUNCTION)
        raise_errf(L, MORAINE_EINVAL, "%s: keys in SQL form need moraine.lua's parser (require \"moraine\")", ctx);
    lua_pushvalue(L, -2);
    lua_call(L, 1, 2);
    if (lua_type(L, -2) != LUA_TTABLE) {
        const char *why = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "cannot parse it";
        raise_errf(L, MORAINE_EINVAL, "%s ('%s'): %s", ctx, lua_tostring(L, -3), why);
    }
    lua_pop(L, 1);
    lua_replace(L, -2);
}

static const char *const partition_fields[] = {"column", "transform", NULL};
static const char *const sort_fields[] = {"expression", "dialect", "sort_direction", "null_order", NULL};

/* The array of keys at aidx, strings parsed by moraine.lua. Pushes the key
 * array (a userdata) and an anchor table keeping parsed keys alive. */
static void *read_keys(lua_State *L, int aidx, const char *verb, int sort, size_t *n_out)
{
    aidx = mr_absindex(L, aidx);
    size_t n = array_len(L, aidx);
    void *arr = scratch(L, n, sort ? sizeof(moraine_sort_key) : sizeof(moraine_partition_key));
    lua_createtable(L, (int)n, 0);
    int anchor = lua_gettop(L);
    char ctx[128];
    for (size_t i = 0; i < n; i++) {
        snprintf(ctx, sizeof ctx, "%s: key %d", verb, (int)i + 1);
        lua_rawgeti(L, aidx, (int)i + 1);
        if (lua_type(L, -1) == LUA_TSTRING)
            parse_key(L, sort ? REG_PARSE_SORT : REG_PARSE_PARTITION, ctx);
        else if (lua_type(L, -1) != LUA_TTABLE)
            raise_errf(L, MORAINE_EINVAL, "%s must be a string or a table, got %s", ctx, luaL_typename(L, -1));
        int k = lua_gettop(L);
        if (sort) {
            moraine_sort_key *sk = (moraine_sort_key *)arr + i;
            check_fields(L, k, sort_fields, ctx);
            sk->expression = field_str(L, k, "expression", ctx, 1);
            sk->dialect = field_str(L, k, "dialect", ctx, 0);
            sk->sort_direction = field_str(L, k, "sort_direction", ctx, 0);
            sk->null_order = field_str(L, k, "null_order", ctx, 0);
        } else {
            moraine_partition_key *pk = (moraine_partition_key *)arr + i;
            check_fields(L, k, partition_fields, ctx);
            pk->column = field_str(L, k, "column", ctx, 1);
            pk->transform = field_str(L, k, "transform", ctx, 1);
        }
        lua_rawseti(L, anchor, (int)i + 1);
    }
    *n_out = n;
    return arr;
}

static const char *const file_fields[] = {"path",        "path_is_absolute", "file_format", "record_count",
                                          "file_size_bytes", "footer_size",  "partition_values", "stats",
                                          "row_group_count", NULL};
static const char *const stats_fields[] = {"column",    "column_size_bytes", "value_count", "null_count",
                                           "min_value", "max_value",         "contains_nan", NULL};

/* Field @key of the table at tidx: nil (pushes nil, returns 0 elements) or an
 * array table (pushed; returns its length). */
static size_t opt_array_field(lua_State *L, int tidx, const char *key, const char *ctx)
{
    lua_pushstring(L, key);
    lua_rawget(L, tidx);
    if (lua_isnil(L, -1))
        return 0;
    if (lua_type(L, -1) != LUA_TTABLE)
        raise_errf(L, MORAINE_EINVAL, "%s: '%s' must be an array table, got %s", ctx, key, luaL_typename(L, -1));
    return array_len(L, -1);
}

/* The array of data files at aidx (add_data_files, rewrite_files outputs).
 * Pushes three userdata: the files, their partition values, their stats. */
static moraine_data_file *read_files(lua_State *L, int aidx, const char *what, size_t *n_out)
{
    aidx = mr_absindex(L, aidx);
    size_t n = array_len(L, aidx), npv = 0, nst = 0;
    char ctx[160];
    /* first pass: shapes and sizes */
    for (size_t i = 0; i < n; i++) {
        snprintf(ctx, sizeof ctx, "%s[%d]", what, (int)i + 1);
        array_table_at(L, aidx, (int)i + 1, ctx);
        int f = lua_gettop(L);
        check_fields(L, f, file_fields, ctx);
        npv += opt_array_field(L, f, "partition_values", ctx);
        nst += opt_array_field(L, f, "stats", ctx);
        lua_settop(L, f - 1);
    }
    moraine_data_file *files = (moraine_data_file *)scratch(L, n, sizeof *files);
    const char **pvs = (const char **)scratch(L, npv, sizeof *pvs);
    moraine_column_stats *sts = (moraine_column_stats *)scratch(L, nst, sizeof *sts);
    size_t ipv = 0, ist = 0;
    for (size_t i = 0; i < n; i++) {
        snprintf(ctx, sizeof ctx, "%s[%d]", what, (int)i + 1);
        array_table_at(L, aidx, (int)i + 1, ctx);
        int f = lua_gettop(L);
        moraine_data_file *df = &files[i];
        df->path = field_str(L, f, "path", ctx, 1);
        df->path_is_absolute = field_bool(L, f, "path_is_absolute", ctx, 0);
        df->file_format = field_str(L, f, "file_format", ctx, 0);
        df->record_count = field_int(L, f, "record_count", ctx, 1, 0);
        df->file_size_bytes = field_int(L, f, "file_size_bytes", ctx, 1, 0);
        df->footer_size = field_int(L, f, "footer_size", ctx, 0, INT64_MIN);
        df->row_group_count = field_int(L, f, "row_group_count", ctx, 0, 0);
        size_t m = opt_array_field(L, f, "partition_values", ctx); /* f+1 */
        if (ipv + m > npv)
            raise_errf(L, MORAINE_EINVAL, "%s: 'partition_values' changed during the call", ctx);
        df->partition_values = m ? pvs + ipv : NULL;
        df->npartition_values = m;
        for (size_t j = 0; j < m; j++) {
            lua_rawgeti(L, f + 1, (int)j + 1);
            if (lua_type(L, -1) == LUA_TSTRING) {
                size_t len;
                pvs[ipv + j] = lua_tolstring(L, -1, &len);
                if (strlen(pvs[ipv + j]) != len)
                    raise_errf(L, MORAINE_EINVAL, "%s: partition_values[%d] contains a NUL byte", ctx, (int)j + 1);
            } else if (is_null_at(L, -1)) {
                pvs[ipv + j] = NULL;
            } else {
                raise_errf(L, MORAINE_EINVAL, "%s: partition_values[%d] must be a string or moraine.null, got %s", ctx,
                           (int)j + 1, luaL_typename(L, -1));
            }
            lua_pop(L, 1);
        }
        ipv += m;
        size_t ns = opt_array_field(L, f, "stats", ctx); /* f+2 */
        if (ist + ns > nst)
            raise_errf(L, MORAINE_EINVAL, "%s: 'stats' changed during the call", ctx);
        df->stats = ns ? sts + ist : NULL;
        df->nstats = ns;
        for (size_t j = 0; j < ns; j++) {
            char sctx[200];
            snprintf(sctx, sizeof sctx, "%s.stats[%d]", ctx, (int)j + 1);
            array_table_at(L, f + 2, (int)j + 1, sctx);
            int s = lua_gettop(L);
            moraine_column_stats *cs = &sts[ist + j];
            check_fields(L, s, stats_fields, sctx);
            cs->column = field_str(L, s, "column", sctx, 1);
            cs->column_size_bytes = field_int(L, s, "column_size_bytes", sctx, 0, INT64_MIN);
            cs->value_count = field_int(L, s, "value_count", sctx, 0, INT64_MIN);
            cs->null_count = field_int(L, s, "null_count", sctx, 0, INT64_MIN);
            cs->min_value = field_str(L, s, "min_value", sctx, 0);
            cs->max_value = field_str(L, s, "max_value", sctx, 0);
            cs->contains_nan = field_bool(L, s, "contains_nan", sctx, -1);
            lua_pop(L, 1);
        }
        ist += ns;
        lua_settop(L, f - 1);
    }
    *n_out = n;
    return files;
}

static const char *const delete_fields[] = {"data_file_id",    "path",        "format", "delete_count",
                                            "file_size_bytes", "footer_size", "row_group_count", NULL};

/* The array of delete files at aidx (pushes a userdata). */
static moraine_delete_file *read_deletes(lua_State *L, int aidx, size_t *n_out)
{
    aidx = mr_absindex(L, aidx);
    size_t n = array_len(L, aidx);
    moraine_delete_file *dels = (moraine_delete_file *)scratch(L, n, sizeof *dels);
    char ctx[96];
    for (size_t i = 0; i < n; i++) {
        snprintf(ctx, sizeof ctx, "add_delete_files: deletes[%d]", (int)i + 1);
        array_table_at(L, aidx, (int)i + 1, ctx);
        int d = lua_gettop(L);
        check_fields(L, d, delete_fields, ctx);
        dels[i].data_file_id = field_int(L, d, "data_file_id", ctx, 1, 0);
        dels[i].path = field_str(L, d, "path", ctx, 1);
        dels[i].format = field_str(L, d, "format", ctx, 0);
        dels[i].delete_count = field_int(L, d, "delete_count", ctx, 1, 0);
        dels[i].file_size_bytes = field_int(L, d, "file_size_bytes", ctx, 1, 0);
        dels[i].footer_size = field_int(L, d, "footer_size", ctx, 1, 0);
        dels[i].row_group_count = field_int(L, d, "row_group_count", ctx, 0, 0);
        lua_pop(L, 1);
    }
    *n_out = n;
    return dels;
}

/* The array of data_file_ids at aidx (pushes a userdata). */
static int64_t *read_ids(lua_State *L, int aidx, const char *what, size_t *n_out)
{
    aidx = mr_absindex(L, aidx);
    size_t n = array_len(L, aidx);
    int64_t *ids = (int64_t *)scratch(L, n, sizeof *ids);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, aidx, (int)i + 1);
        if (!to_int64(L, -1, &ids[i]))
            raise_errf(L, MORAINE_EINVAL, "%s[%d] must be an exact int64 data_file_id, got %s", what, (int)i + 1,
                       luaL_typename(L, -1));
        lua_pop(L, 1);
    }
    *n_out = n;
    return ids;
}

/* tx:base() -> the base snapshot id */
static int l_vtx_base(lua_State *L)
{
    lvtx *t = check_vtx(L);
    push_int64(L, moraine_tx_base(t->tx));
    return 1;
}

/* tx:create_schema(name) */
static int l_vtx_create_schema(lua_State *L)
{
    lvtx *t = check_vtx(L);
    const char *name = check_name(L, 2);
    int rc = moraine_tx_create_schema(t->tx, name);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

/* tx:create_table(tbl, columns) -> table_id */
static int l_vtx_create_table(lua_State *L)
{
    lvtx *t = check_vtx(L);
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    const char *schema, *table;
    check_tbl(L, 2, "create_table", &schema, &table);
    size_t n = array_len(L, 3);
    moraine_column_def *cols = (moraine_column_def *)scratch(L, n, sizeof *cols);
    char ctx[96];
    for (size_t i = 0; i < n; i++) {
        snprintf(ctx, sizeof ctx, "create_table: columns[%d]", (int)i + 1);
        array_table_at(L, 3, (int)i + 1, ctx);
        read_column(L, lua_gettop(L), ctx, &cols[i]);
        lua_pop(L, 1);
    }
    int64_t id = -1;
    int rc = moraine_tx_create_table(t->tx, schema, table, cols, n, &id);
    if (rc != 0)
        return raise_engine(L, rc);
    push_int64(L, id);
    return 1;
}

/* tx:add_column(tbl, column) */
static int l_vtx_add_column(lua_State *L)
{
    lvtx *t = check_vtx(L);
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    const char *schema, *table;
    check_tbl(L, 2, "add_column", &schema, &table);
    moraine_column_def col;
    memset(&col, 0, sizeof col);
    read_column(L, 3, "add_column: column", &col);
    int rc = moraine_tx_add_column(t->tx, schema, table, &col);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

/* tx:rename_column(tbl, old, new, sort_keys?) */
static int l_vtx_rename_column(lua_State *L)
{
    lvtx *t = check_vtx(L);
    const char *old_name = check_name(L, 3);
    const char *new_name = check_name(L, 4);
    if (!lua_isnoneornil(L, 5))
        luaL_checktype(L, 5, LUA_TTABLE);
    lua_settop(L, 5);
    const char *schema, *table;
    check_tbl(L, 2, "rename_column", &schema, &table);
    const moraine_sort_key *keys = NULL;
    size_t n = 0;
    if (!lua_isnil(L, 5))
        keys = (const moraine_sort_key *)read_keys(L, 5, "rename_column: sort_keys", 1, &n);
    int rc = moraine_tx_rename_column(t->tx, schema, table, old_name, new_name, keys, n);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

/* tx:drop_column(tbl, name) */
static int l_vtx_drop_column(lua_State *L)
{
    lvtx *t = check_vtx(L);
    const char *name = check_name(L, 3);
    lua_settop(L, 3);
    const char *schema, *table;
    check_tbl(L, 2, "drop_column", &schema, &table);
    int rc = moraine_tx_drop_column(t->tx, schema, table, name);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

/* tx:rename_table(tbl, new_name) */
static int l_vtx_rename_table(lua_State *L)
{
    lvtx *t = check_vtx(L);
    const char *new_name = check_name(L, 3);
    lua_settop(L, 3);
    const char *schema, *table;
    check_tbl(L, 2, "rename_table", &schema, &table);
    int rc = moraine_tx_rename_table(t->tx, schema, table, new_name);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

/* tx:alter_column(tbl, column, {type = s?, default = s?, default_type = s?,
 * drop_default = bool?, not_null = bool?}) -- ALTER COLUMN (issue 16) */
static int l_vtx_alter_column(lua_State *L)
{
    static const char *const fields[] = {"type", "default", "default_type", "drop_default", "not_null", NULL};
    lvtx *t = check_vtx(L);
    const char *column = check_name(L, 3);
    luaL_checktype(L, 4, LUA_TTABLE);
    lua_settop(L, 4);
    const char *schema, *table;
    check_tbl(L, 2, "alter_column", &schema, &table);
    check_fields(L, 4, fields, "alter_column: change");
    moraine_column_alter a = {.nulls_allowed = -1};
    a.type = field_str(L, 4, "type", "alter_column: change", 0);
    a.default_value = field_str(L, 4, "default", "alter_column: change", 0);
    a.default_value_type = field_str(L, 4, "default_type", "alter_column: change", 0);
    int drop = field_bool(L, 4, "drop_default", "alter_column: change", 0);
    if (drop && a.default_value)
        return raise_errf(L, MORAINE_EINVAL, "alter_column: change: 'default' and 'drop_default' together");
    a.set_default = drop || a.default_value != NULL;
    lua_getfield(L, 4, "not_null");
    int has_nn = lua_type(L, -1) == LUA_TBOOLEAN;
    lua_pop(L, 1);
    if (has_nn) a.nulls_allowed = !field_bool(L, 4, "not_null", "alter_column: change", 0);
    int rc = moraine_tx_alter_column(t->tx, schema, table, column, &a);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

/* tx:set_comment(tbl, column or nil, comment or nil) -- COMMENT ON */
static int l_vtx_set_comment(lua_State *L)
{
    lvtx *t = check_vtx(L);
    const char *column = lua_isnoneornil(L, 3) || is_null_at(L, 3) ? NULL : check_name(L, 3);
    const char *comment = lua_isnoneornil(L, 4) || is_null_at(L, 4) ? NULL : check_name(L, 4);
    lua_settop(L, 4);
    const char *schema, *table;
    check_tbl(L, 2, "set_comment", &schema, &table);
    int rc = moraine_tx_set_comment(t->tx, schema, table, column, comment);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

/* tx:create_view(view, sql) / tx:drop_view(view) */
static int l_vtx_create_view(lua_State *L)
{
    lvtx *t = check_vtx(L);
    const char *sql = check_name(L, 3);
    lua_settop(L, 3);
    const char *schema, *view;
    check_tbl(L, 2, "create_view", &schema, &view);
    int rc = moraine_tx_create_view(t->tx, schema, view, sql);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

static int l_vtx_drop_view(lua_State *L)
{
    lvtx *t = check_vtx(L);
    lua_settop(L, 2);
    const char *schema, *view;
    check_tbl(L, 2, "drop_view", &schema, &view);
    int rc = moraine_tx_drop_view(t->tx, schema, view);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

enum { VT_DROP_TABLE, VT_CLEAR_PARTITIONING, VT_CLEAR_SORTING };

/* The verbs that take only a table. */
static int vtx_table_only(lua_State *L, int which)
{
    static const char *const names[] = {"drop_table", "clear_partitioning", "clear_sorting"};
    lvtx *t = check_vtx(L);
    lua_settop(L, 2);
    const char *schema, *table;
    check_tbl(L, 2, names[which], &schema, &table);
    int rc = which == VT_DROP_TABLE           ? moraine_tx_drop_table(t->tx, schema, table)
             : which == VT_CLEAR_PARTITIONING ? moraine_tx_clear_partitioning(t->tx, schema, table)
                                              : moraine_tx_clear_sorting(t->tx, schema, table);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

static int l_vtx_drop_table(lua_State *L)
{
    return vtx_table_only(L, VT_DROP_TABLE);
}

static int l_vtx_clear_partitioning(lua_State *L)
{
    return vtx_table_only(L, VT_CLEAR_PARTITIONING);
}

static int l_vtx_clear_sorting(lua_State *L)
{
    return vtx_table_only(L, VT_CLEAR_SORTING);
}

/* tx:set_partitioning(tbl, keys) */
static int l_vtx_set_partitioning(lua_State *L)
{
    lvtx *t = check_vtx(L);
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    const char *schema, *table;
    check_tbl(L, 2, "set_partitioning", &schema, &table);
    size_t n;
    const moraine_partition_key *keys = (const moraine_partition_key *)read_keys(L, 3, "set_partitioning", 0, &n);
    int rc = moraine_tx_set_partitioning(t->tx, schema, table, keys, n);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

/* tx:set_sorting(tbl, keys) */
static int l_vtx_set_sorting(lua_State *L)
{
    lvtx *t = check_vtx(L);
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    const char *schema, *table;
    check_tbl(L, 2, "set_sorting", &schema, &table);
    size_t n;
    const moraine_sort_key *keys = (const moraine_sort_key *)read_keys(L, 3, "set_sorting", 1, &n);
    int rc = moraine_tx_set_sorting(t->tx, schema, table, keys, n);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

/* tx:add_data_files(tbl, files) -> first data_file_id */
static int l_vtx_add_data_files(lua_State *L)
{
    lvtx *t = check_vtx(L);
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    const char *schema, *table;
    check_tbl(L, 2, "add_data_files", &schema, &table);
    size_t n;
    const moraine_data_file *files = read_files(L, 3, "add_data_files: files", &n);
    int64_t first = -1;
    int rc = moraine_tx_add_data_files(t->tx, schema, table, files, n, &first);
    if (rc != 0)
        return raise_engine(L, rc);
    if (n == 0)
        lua_pushnil(L);
    else
        push_int64(L, first);
    return 1;
}

/* tx:add_delete_files(tbl, deletes) */
static int l_vtx_add_delete_files(lua_State *L)
{
    lvtx *t = check_vtx(L);
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    const char *schema, *table;
    check_tbl(L, 2, "add_delete_files", &schema, &table);
    size_t n;
    const moraine_delete_file *dels = read_deletes(L, 3, &n);
    int rc = moraine_tx_add_delete_files(t->tx, schema, table, dels, n);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

/* tx:delete_files(tbl, ids) */
static int l_vtx_delete_files(lua_State *L)
{
    lvtx *t = check_vtx(L);
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    const char *schema, *table;
    check_tbl(L, 2, "delete_files", &schema, &table);
    size_t n;
    const int64_t *ids = read_ids(L, 3, "delete_files: ids", &n);
    int rc = moraine_tx_delete_files(t->tx, schema, table, ids, n);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

/* tx:rewrite_files(tbl, input_ids, outputs) */
static int l_vtx_rewrite_files(lua_State *L)
{
    lvtx *t = check_vtx(L);
    luaL_checktype(L, 3, LUA_TTABLE);
    luaL_checktype(L, 4, LUA_TTABLE);
    lua_settop(L, 4);
    const char *schema, *table;
    check_tbl(L, 2, "rewrite_files", &schema, &table);
    size_t nin, nout;
    const int64_t *ids = read_ids(L, 3, "rewrite_files: input_ids", &nin);
    const moraine_data_file *outs = read_files(L, 4, "rewrite_files: outputs", &nout);
    int rc = moraine_tx_rewrite_files(t->tx, schema, table, ids, nin, outs, nout);
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
}

static int l_vtx_gc(lua_State *L)
{
    lvtx *t = (lvtx *)lua_touserdata(L, 1);
    if (t)
        vtx_abort(t);
    return 0;
}

static int l_vtx_tostring(lua_State *L)
{
    lvtx *t = (lvtx *)luaL_checkudata(L, 1, MT_VTX);
    lua_pushstring(L, t->tx ? "moraine.tx (open)" : "moraine.tx (finished)");
    return 1;
}

/* The commit options table at idx: author, message, extra_info (strings or nil). */
static void transaction_opts(lua_State *L, int idx, const char *out[3])
{
    static const char *const keys[] = {"author", "message", "extra_info"};
    out[0] = out[1] = out[2] = NULL;
    if (lua_isnil(L, idx))
        return;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        if (!k || (strcmp(k, keys[0]) != 0 && strcmp(k, keys[1]) != 0 && strcmp(k, keys[2]) != 0))
            raise_errf(L, MORAINE_EINVAL, "transaction: unknown option '%s' (expected author, message, extra_info)",
                       k ? k : luaL_typename(L, -1));
    }
    for (int i = 0; i < 3; i++) {
        lua_getfield(L, idx, keys[i]);
        if (lua_type(L, -1) == LUA_TSTRING) {
            size_t len;
            out[i] = lua_tolstring(L, -1, &len);
            if (strlen(out[i]) != len)
                raise_errf(L, MORAINE_EINVAL, "transaction: option '%s' contains a NUL byte", keys[i]);
        } else if (!lua_isnil(L, -1)) {
            raise_errf(L, MORAINE_EINVAL, "transaction: option '%s' must be a string, got %s", keys[i],
                       luaL_typename(L, -1));
        }
        /* left on the stack: it must live until moraine_tx_set_info copied it */
    }
}

/* db:transaction(fn, opts) -> new snapshot id, or nil when nothing changed */
static int l_db_transaction(lua_State *L)
{
    ldb *d = check_db(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    if (!lua_isnoneornil(L, 3))
        luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    const char *info[3];
    transaction_opts(L, 3, info);
    lua_settop(L, 3 + (lua_isnil(L, 3) ? 0 : 3)); /* keep the option strings */
    lvtx *t = (lvtx *)new_handle(L, sizeof *t, MT_VTX, 1);
    int tx_idx = lua_gettop(L);
    t->owner = d;
    int rc = moraine_tx_begin(d->db, &t->tx);
    if (rc != 0) {
        t->tx = NULL;
        return raise_engine(L, rc);
    }
    t->next = d->vtxs;
    if (d->vtxs)
        d->vtxs->prev = t;
    d->vtxs = t;
    t->linked = 1;
    if (!lua_isnil(L, 3)) {
        rc = moraine_tx_set_info(t->tx, info[0], info[1], info[2]);
        if (rc != 0) {
            lua_pushstring(L, moraine_errmsg());
            vtx_abort(t);
            return raise_top(L, rc);
        }
    }
    lua_pushvalue(L, 2);
    lua_pushvalue(L, tx_idx);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
        vtx_abort(t);
        return lua_error(L); /* fn's error, as raised */
    }
    if (t->tx == NULL)
        return raise_errf(L, MORAINE_ETXN, "the transaction was closed before it could commit (catalog closed?)");
    moraine_tx *mt = t->tx;
    t->tx = NULL; /* moraine_tx_commit frees it, whatever it returns */
    vtx_unlink(t);
    int64_t snap = -1;
    rc = moraine_tx_commit(mt, &snap);
    if (rc != 0)
        return raise_engine(L, rc);
    if (snap < 0)
        lua_pushnil(L);
    else
        push_int64(L, snap);
    return 1;
}

/* core.set_key_parsers(partition_fn, sort_fn): the SQL-form key parsers of moraine.lua. */
static int l_set_key_parsers(lua_State *L)
{
    if (!lua_isnil(L, 1))
        luaL_checktype(L, 1, LUA_TFUNCTION);
    if (!lua_isnil(L, 2))
        luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_settop(L, 2);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_PARSE_SORT);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_PARSE_PARTITION);
    return 0;
}

/* ---- reads -------------------------------------------------------------------- */
static lread *new_read(lua_State *L, ldb *d, int db_idx)
{
    lread *r = (lread *)new_handle(L, sizeof *r, MT_READ, db_idx);
    r->owner = d;
    int rc = moraine_read_begin(d->db, &r->rd);
    if (rc != 0) {
        r->rd = NULL;
        raise_engine(L, rc);
    }
    r->next = d->reads;
    if (d->reads)
        d->reads->prev = r;
    d->reads = r;
    r->linked = 1;
    return r;
}

static lread *check_read(lua_State *L, int idx)
{
    lread *r = (lread *)luaL_checkudata(L, idx, MT_READ);
    if (r->rd == NULL)
        raise_errf(L, MORAINE_ETXN, "read transaction is closed (use it only inside the read function)");
    return r;
}

static int l_read_gc(lua_State *L)
{
    lread *r = (lread *)lua_touserdata(L, 1);
    if (r)
        read_close(r);
    return 0;
}

static int l_read_tostring(lua_State *L)
{
    lread *r = (lread *)luaL_checkudata(L, 1, MT_READ);
    lua_pushstring(L, r->rd ? "moraine.read (open)" : "moraine.read (closed)");
    return 1;
}

/* The snapshot a read uses when none is given: its newest; INT64_MAX (live
 * rows) when the catalog has none yet. */
static int64_t default_snapshot(lua_State *L, lread *r)
{
    int64_t s;
    int rc = moraine_read_last_snapshot(r->rd, &s);
    if (rc < 0)
        raise_engine(L, rc);
    return rc == 1 ? s : INT64_MAX;
}

static int l_read_last_snapshot(lua_State *L)
{
    lread *r = check_read(L, 1);
    int64_t s;
    int rc = moraine_read_last_snapshot(r->rd, &s);
    if (rc < 0)
        return raise_engine(L, rc);
    if (rc == 0)
        lua_pushnil(L);
    else
        push_int64(L, s);
    return 1;
}

/* rd:secret_count() -> the non-NULL secret values in the read's view (moraine_secret_count) */
static int l_read_secret_count(lua_State *L)
{
    lread *r = check_read(L, 1);
    uint64_t n = 0;
    int rc = moraine_secret_count(r->rd, &n);
    if (rc < 0)
        return raise_engine(L, rc);
    push_int64(L, (int64_t)n);
    return 1;
}

/* One step of a cursor: pushes row, children, ord and returns 3, or returns 0
 * (nothing pushed) when done. */
static int cursor_step(lua_State *L, lcursor *c)
{
    if (c->owner == NULL || c->owner->rd == NULL)
        return raise_errf(L, MORAINE_ETXN, "scan used after its read transaction was closed");
    if (c->cur == NULL)
        return 0;
    moraine_row row;
    int rc = moraine_cursor_next(c->cur, &row);
    if (rc < 0)
        return raise_engine(L, rc);
    if (rc == 0) {
        moraine_cursor_close(c->cur);
        c->cur = NULL;
        return 0;
    }
    luaL_checkstack(L, 8, NULL);
    push_row(L, &row);
    push_children(L, c->owner, &c->ch, &c->ch_active, &row, NULL);
    push_int64(L, row.ord);
    return 3;
}

static int l_scan_iter(lua_State *L)
{
    lcursor *c = (lcursor *)lua_touserdata(L, lua_upvalueindex(1));
    int n = cursor_step(L, c);
    if (n == 0) {
        lua_pushnil(L);
        return 1;
    }
    return n;
}

static int l_cursor_gc(lua_State *L)
{
    lcursor *c = (lcursor *)lua_touserdata(L, 1);
    if (c == NULL)
        return 0;
    children_release(&c->ch, &c->ch_active);
    if (c->cur && c->owner && c->owner->rd)
        moraine_cursor_close(c->cur);
    c->cur = NULL;
    return 0;
}

/* Opens a cursor on the read at read_idx; pushes the cursor userdata. */
static lcursor *open_cursor(lua_State *L, lread *r, int read_idx, const char *name, int64_t scope, int64_t at)
{
    lcursor *c = (lcursor *)new_handle(L, sizeof *c, MT_CURSOR, read_idx);
    c->owner = r;
    int rc = moraine_scan_open(r->rd, name, scope, at, &c->cur);
    if (rc != 0) {
        c->cur = NULL;
        raise_engine(L, rc);
    }
    return c;
}

/* Reads the scan options table at idx: {at = S, table_id = T}. */
static void scan_opts(lua_State *L, lread *r, int idx, int64_t *scope, int64_t *at)
{
    *scope = MORAINE_ANY_SCOPE;
    int have_at = 0;
    if (!lua_isnoneornil(L, idx)) {
        luaL_checktype(L, idx, LUA_TTABLE);
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            lua_pop(L, 1);
            const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
            if (!k || (strcmp(k, "at") != 0 && strcmp(k, "table_id") != 0))
                raise_errf(L, MORAINE_EINVAL, "scan: unknown option '%s' (expected 'at' or 'table_id')",
                           k ? k : luaL_typename(L, -1));
        }
        lua_getfield(L, idx, "at");
        if (!lua_isnil(L, -1)) {
            if (!to_int64(L, -1, at))
                raise_errf(L, MORAINE_EINVAL, "scan: option 'at' must be an integer snapshot id or moraine.ALL");
            have_at = 1;
        }
        lua_pop(L, 1);
        lua_getfield(L, idx, "table_id");
        if (!lua_isnil(L, -1) && !to_int64(L, -1, scope))
            raise_errf(L, MORAINE_EINVAL, "scan: option 'table_id' must be an integer");
        lua_pop(L, 1);
    }
    if (!have_at)
        *at = default_snapshot(L, r);
}

static int push_scan(lua_State *L, lread *r, const char *name, int64_t scope, int64_t at)
{
    lcursor *c = open_cursor(L, r, 1, name, scope, at);
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, l_scan_iter, 1);
    lua_pushnil(L);
    lua_pushnil(L);
    lua_pushvalue(L, -4); /* to-be-closed value for Lua 5.4's generic for */
    (void)c;
    return 4;
}

/* rd:scan(name, opts) -> iterator (row, children, ord) */
static int l_read_scan(lua_State *L)
{
    lread *r = check_read(L, 1);
    const char *name = check_name(L, 2);
    int64_t scope, at;
    scan_opts(L, r, 3, &scope, &at);
    lua_settop(L, 3);
    return push_scan(L, r, name, scope, at);
}

/* rd:files(T, S): rd:scan("ducklake_data_file", {at = S, table_id = T}) */
static int l_read_files(lua_State *L)
{
    lread *r = check_read(L, 1);
    int64_t scope = opt_int(L, 2, MORAINE_ANY_SCOPE);
    int64_t at = lua_isnoneornil(L, 3) ? default_snapshot(L, r) : check_int(L, 3);
    lua_settop(L, 3);
    return push_scan(L, r, "ducklake_data_file", scope, at);
}

/* Iterator of rd:scan_json: upvalues are the cursor, the flags and the rows per chunk. */
static int l_scan_json_iter(lua_State *L)
{
    lcursor *c = (lcursor *)lua_touserdata(L, lua_upvalueindex(1));
    unsigned flags = (unsigned)lua_tointeger(L, lua_upvalueindex(2));
    lua_Integer per = lua_tointeger(L, lua_upvalueindex(3));
    if (c->owner == NULL || c->owner->rd == NULL)
        return raise_errf(L, MORAINE_ETXN, "scan_json used after its read transaction was closed");
    if (c->cur == NULL) {
        lua_pushnil(L);
        return 1;
    }
    moraine_json j = {0};
    lua_Integer n = 0;
    int rc = 0;
    while (n < per) {
        moraine_row row;
        rc = moraine_cursor_next(c->cur, &row);
        if (rc <= 0)
            break;
        if (n > 0) {
            if (j.len == j.cap) {
                size_t cap = j.cap ? j.cap * 2 : 4096;
                char *p = realloc(j.p, cap);
                if (!p) {
                    rc = MORAINE_ENOMEM;
                    break;
                }
                j.p = p;
                j.cap = cap;
            }
            j.p[j.len++] = ',';
        }
        rc = moraine_row_json(c->owner->rd, &row, flags, &j);
        if (rc)
            break;
        n++;
    }
    if (rc < 0) {
        moraine_json_free(&j);
        return raise_engine(L, rc);
    }
    if (rc == 0 && n < per) {
        moraine_cursor_close(c->cur);
        c->cur = NULL;
    }
    if (n == 0) {
        moraine_json_free(&j);
        lua_pushnil(L);
        return 1;
    }
    lua_pushlstring(L, j.p, j.len);
    moraine_json_free(&j);
    lua_pushinteger(L, n);
    return 2;
}

/* rd:scan_json(name, opts) -> iterator of (chunk, count): each chunk is up to
 * opts.rows (default 256) rows as JSON objects joined by commas, written in C
 * (no Lua table per row). opts: at, table_id as rd:scan; partition_values =
 * true adds a data file's "partition_values" array; children = true adds every
 * child table's rows under the child table's name; secrets = true writes secret
 * columns as stored (else "<redacted>", MORAINE_JSON_SECRETS). */
static int l_read_scan_json(lua_State *L)
{
    lread *r = check_read(L, 1);
    const char *name = check_name(L, 2);
    int64_t scope = MORAINE_ANY_SCOPE, at = 0;
    unsigned flags = 0;
    lua_Integer per = 256;
    int have_at = 0;
    if (!lua_isnoneornil(L, 3)) {
        luaL_checktype(L, 3, LUA_TTABLE);
        lua_pushnil(L);
        while (lua_next(L, 3)) {
            lua_pop(L, 1);
            const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
            if (!k || (strcmp(k, "at") != 0 && strcmp(k, "table_id") != 0 && strcmp(k, "rows") != 0 && strcmp(k, "partition_values") != 0 &&
                       strcmp(k, "children") != 0 && strcmp(k, "secrets") != 0))
                raise_errf(L, MORAINE_EINVAL,
                           "scan_json: unknown option '%s' (expected at, table_id, rows, partition_values, children, secrets)",
                           k ? k : luaL_typename(L, -1));
        }
        lua_getfield(L, 3, "at");
        if (!lua_isnil(L, -1)) {
            if (!to_int64(L, -1, &at))
                raise_errf(L, MORAINE_EINVAL, "scan_json: option 'at' must be an integer snapshot id or moraine.ALL");
            have_at = 1;
        }
        lua_getfield(L, 3, "table_id");
        if (!lua_isnil(L, -1) && !to_int64(L, -1, &scope))
            raise_errf(L, MORAINE_EINVAL, "scan_json: option 'table_id' must be an integer");
        lua_getfield(L, 3, "rows");
        if (!lua_isnil(L, -1)) {
            int64_t v;
            if (!to_int64(L, -1, &v) || v < 1 || v > 1000000)
                raise_errf(L, MORAINE_EINVAL, "scan_json: option 'rows' must be an integer from 1 to 1000000");
            per = (lua_Integer)v;
        }
        lua_getfield(L, 3, "partition_values");
        if (lua_toboolean(L, -1))
            flags |= MORAINE_JSON_PARTITION_VALUES;
        lua_getfield(L, 3, "children");
        if (lua_toboolean(L, -1))
            flags |= MORAINE_JSON_CHILDREN;
        lua_getfield(L, 3, "secrets");
        if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
            raise_errf(L, MORAINE_EINVAL, "scan_json: option 'secrets' must be a boolean");
        if (lua_toboolean(L, -1))
            flags |= MORAINE_JSON_SECRETS;
        lua_pop(L, 6);
    }
    if (!have_at)
        at = default_snapshot(L, r);
    lua_settop(L, 3);
    open_cursor(L, r, 1, name, scope, at);
    lua_pushvalue(L, -1);
    lua_pushinteger(L, (lua_Integer)flags);
    lua_pushinteger(L, per);
    lua_pushcclosure(L, l_scan_json_iter, 3);
    lua_pushnil(L);
    lua_pushnil(L);
    lua_pushvalue(L, -4); /* to-be-closed value for Lua 5.4's generic for */
    return 4;
}

enum { SPEC_PARTITION, SPEC_SORT, SPEC_PARTITION_BY_ID };

static int read_spec(lua_State *L, int kind)
{
    lread *r = check_read(L, 1);
    int64_t table_id = check_int(L, 2);
    moraine_row row;
    int rc;
    if (kind == SPEC_PARTITION_BY_ID) {
        int64_t pid = check_int(L, 3);
        rc = moraine_partition_spec_by_id(r->rd, table_id, pid, &row);
    } else {
        int64_t at = lua_isnoneornil(L, 3) ? default_snapshot(L, r) : check_int(L, 3);
        rc = kind == SPEC_SORT ? moraine_sort_spec_at(r->rd, table_id, at, &row)
                               : moraine_partition_spec_at(r->rd, table_id, at, &row);
    }
    if (rc < 0)
        return raise_engine(L, rc);
    if (rc == 0) {
        lua_pushnil(L);
        return 1;
    }
    push_row(L, &row);
    push_children(L, r, &r->ch, &r->ch_active, &row,
                  kind == SPEC_SORT ? "ducklake_sort_expression" : "ducklake_partition_column");
    lua_setfield(L, -2, kind == SPEC_SORT ? "expressions" : "columns");
    return 1;
}

static int l_read_partition_spec(lua_State *L)
{
    return read_spec(L, SPEC_PARTITION);
}

static int l_read_sort_spec(lua_State *L)
{
    return read_spec(L, SPEC_SORT);
}

static int l_read_partition_spec_by_id(lua_State *L)
{
    return read_spec(L, SPEC_PARTITION_BY_ID);
}

/* rd:table_id(schema, name, S) -> table_id, or nil and the message when no
 * such table at S (moraine_table_id_at; schema nil is "main", S nil the newest) */
static int l_read_table_id(lua_State *L)
{
    lread *r = check_read(L, 1);
    const char *schema = NULL;
    if (!lua_isnoneornil(L, 2)) {
        if (lua_type(L, 2) != LUA_TSTRING) return raise_errf(L, MORAINE_EINVAL, "table_id: schema must be a string or nil, got %s", luaL_typename(L, 2));
        schema = lua_tostring(L, 2);
    }
    if (lua_type(L, 3) != LUA_TSTRING) return raise_errf(L, MORAINE_EINVAL, "table_id: the table name must be a string, got %s", luaL_typename(L, 3));
    const char *name = lua_tostring(L, 3);
    int64_t at = lua_isnoneornil(L, 4) ? default_snapshot(L, r) : check_int(L, 4);
    int64_t id;
    int rc = moraine_table_id_at(r->rd, schema, name, at, &id);
    if (rc == MORAINE_ENOTFOUND) {
        lua_pushnil(L);
        lua_pushstring(L, moraine_errmsg());
        return 2;
    }
    if (rc < 0) return raise_engine(L, rc);
    push_int64(L, id);
    return 1;
}

/* db:read(fn) -> fn's results; the read is closed whatever happens */
static int l_db_read(lua_State *L)
{
    ldb *d = check_db(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_settop(L, 2);
    lread *r = new_read(L, d, 1); /* 3 */
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    int rc = lua_pcall(L, 1, LUA_MULTRET, 0);
    read_close(r);
    if (rc != LUA_OK)
        return lua_error(L);
    return lua_gettop(L) - 3;
}

/* protected body of db:scan: (read, name, opts) -> array of entries */
static int scan_collect(lua_State *L)
{
    lread *r = check_read(L, 1);
    const char *name = check_name(L, 2);
    int64_t scope, at;
    scan_opts(L, r, 3, &scope, &at);
    lua_settop(L, 3);
    lcursor *c = open_cursor(L, r, 1, name, scope, at); /* 4 */
    lua_newtable(L);                                    /* 5 */
    for (int n = 1;; n++) {
        if (cursor_step(L, c) == 0)
            break;
        lua_createtable(L, 0, 3);
        lua_insert(L, -4);
        lua_setfield(L, -4, "ord");
        lua_setfield(L, -3, "children");
        lua_setfield(L, -2, "row");
        lua_rawseti(L, 5, n);
    }
    return 1; /* cursor_step closed the cursor at the end */
}

/* db:scan(name, opts) -> array of {row =, children =, ord =} */
static int l_db_scan(lua_State *L)
{
    ldb *d = check_db(L, 1);
    check_name(L, 2);
    if (!lua_isnoneornil(L, 3))
        luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    lread *r = new_read(L, d, 1); /* 4 */
    lua_pushcfunction(L, scan_collect);
    lua_pushvalue(L, 4);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    int rc = lua_pcall(L, 3, 1, 0);
    read_close(r);
    if (rc != LUA_OK)
        return lua_error(L);
    return 1;
}

/* ---- import / export ------------------------------------------------------------ */
typedef struct {
    lua_State *L;
    int fn_idx;  /* progress function */
    int err_idx; /* slot for the callback's error */
    int failed;
    int cancelled; /* the callback returned true */
} progress_ctx;

static int progress_cb(void *ud, uint64_t done, uint64_t total)
{
    progress_ctx *p = (progress_ctx *)ud;
    lua_State *L = p->L;
    if (p->failed)
        return 1;
    if (!lua_checkstack(L, 4)) {
        p->failed = 1;
        lua_pushliteral(L, "progress: Lua stack overflow");
        lua_replace(L, p->err_idx);
        return 1;
    }
    lua_pushvalue(L, p->fn_idx);
#if MR_LUAJIT
    lua_pushnumber(L, (lua_Number)done);
    lua_pushnumber(L, (lua_Number)total);
#else
    lua_pushinteger(L, (lua_Integer)done);
    lua_pushinteger(L, (lua_Integer)total);
#endif
    if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
        p->failed = 1;
        lua_replace(L, p->err_idx);
        return 1;
    }
    int cancel = lua_type(L, -1) == LUA_TBOOLEAN && lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (cancel)
        p->cancelled = 1;
    return cancel;
}

static int import_export(lua_State *L, int import)
{
    ldb *d = check_db(L, 1);
    const char *dir = luaL_checkstring(L, 2);
    lua_settop(L, 3);
    if (!lua_isnil(L, 3)) {
        luaL_checktype(L, 3, LUA_TTABLE);
        lua_getfield(L, 3, "progress");
        if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TFUNCTION)
            luaL_argerror(L, 3, "'progress' must be a function");
    } else {
        lua_pushnil(L);
    }
    lua_pushnil(L); /* 5: error slot */
    progress_ctx p = {L, 4, 5, 0, 0};
    moraine_progress_fn fn = lua_isnil(L, 4) ? NULL : progress_cb;
    d->busy++;
    int rc = import ? moraine_import_ndjson(d->db, dir, fn, &p) : moraine_export_ndjson(d->db, dir, fn, &p);
    d->busy--;
    if (rc != 0)
        lua_pushstring(L, moraine_errmsg());
    if (p.failed) {
        lua_pushvalue(L, 5);
        return lua_error(L);
    }
    if (rc != 0)
        return raise_top(L, rc);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_db_import(lua_State *L)
{
    return import_export(L, 1);
}

static int l_db_export(lua_State *L)
{
    return import_export(L, 0);
}

/* ---- JSON (jansson) ---------------------------------------------------------------- */
static int l_jbox_gc(lua_State *L)
{
    jbox *b = (jbox *)lua_touserdata(L, 1);
    if (b && b->j) {
        json_decref(b->j);
        b->j = NULL;
    }
    return 0;
}

static jbox *new_jbox(lua_State *L)
{
    jbox *b = (jbox *)lua_newuserdata(L, sizeof *b);
    b->j = NULL;
    luaL_getmetatable(L, MT_JBOX);
    lua_setmetatable(L, -2);
    return b;
}

/* Pushes the compact JSON text of @j (the buffer is a Lua userdata: no leak). */
static void push_json_text(lua_State *L, const json_t *j)
{
    size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
    size_t n = json_dumpb(j, NULL, 0, flags);
    char *buf = (char *)lua_newuserdata(L, n ? n : 1);
    size_t m = json_dumpb(j, buf, n, flags);
    lua_pushlstring(L, buf, m <= n ? m : n);
    lua_remove(L, -2);
}

/* Pushes @j as a Lua value. nested_text: objects and arrays become
 * {json = "<compact text>"} (a row's field) instead of tables. */
static void push_json(lua_State *L, json_t *j, int nested_text)
{
    luaL_checkstack(L, 4, "JSON nested too deeply");
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        if (nested_text) {
            lua_createtable(L, 0, 1);
            push_json_text(L, j);
            lua_setfield(L, -2, "json");
            return;
        }
        lua_createtable(L, 0, (int)json_object_size(j));
        for (void *it = json_object_iter(j); it; it = json_object_iter_next(j, it)) {
            lua_pushlstring(L, json_object_iter_key(it), json_object_iter_key_len(it));
            push_json(L, json_object_iter_value(it), 0);
            lua_rawset(L, -3);
        }
        return;
    }
    case JSON_ARRAY: {
        if (nested_text) {
            lua_createtable(L, 0, 1);
            push_json_text(L, j);
            lua_setfield(L, -2, "json");
            return;
        }
        size_t n = json_array_size(j);
        lua_createtable(L, (int)n, 0);
        for (size_t i = 0; i < n; i++) {
            push_json(L, json_array_get(j, i), 0);
            lua_rawseti(L, -2, (int)i + 1);
        }
        return;
    }
    case JSON_STRING:
        lua_pushlstring(L, json_string_value(j), json_string_length(j));
        return;
    case JSON_INTEGER:
        push_int64(L, (int64_t)json_integer_value(j));
        return;
    case JSON_REAL:
        lua_pushnumber(L, (lua_Number)json_real_value(j));
        return;
    case JSON_TRUE:
        lua_pushboolean(L, 1);
        return;
    case JSON_FALSE:
        lua_pushboolean(L, 0);
        return;
    case JSON_NULL:
        push_null(L);
        return;
    }
    push_null(L);
}

/* core.json_decode(str) -> value */
static int l_json_decode(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    lua_settop(L, 1);
    jbox *b = new_jbox(L);
    json_error_t e;
    b->j = json_loadb(s, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (b->j == NULL)
        return raise_errf(L, MORAINE_EJSON, "%s (line %d, column %d)", e.text, e.line, e.column);
    push_json(L, b->j, 0);
    json_decref(b->j);
    b->j = NULL;
    return 1;
}

/* Converts object @o to a row table appended to rows (idx rows_idx); the
 * first row's keys become colnames (idx cols_idx). */
static void push_ndjson_row(lua_State *L, json_t *o, int rows_idx, int cols_idx)
{
    int first = mr_rawlen(L, rows_idx) == 0;
    lua_createtable(L, 0, (int)json_object_size(o));
    int n = 0;
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
        lua_pushlstring(L, json_object_iter_key(it), json_object_iter_key_len(it));
        if (first) {
            lua_pushvalue(L, -1);
            lua_rawseti(L, cols_idx, ++n);
        }
        push_json(L, json_object_iter_value(it), 1);
        lua_rawset(L, -3);
    }
    lua_rawseti(L, rows_idx, (int)mr_rawlen(L, rows_idx) + 1);
}

static int is_blank(const char *p, const char *end)
{
    for (; p < end; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
            return 0;
    return 1;
}

/* core.parse_ndjson(text, filename) -> rows, colnames */
static int l_parse_ndjson(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    const char *fname = luaL_optstring(L, 2, "?");
    lua_settop(L, 2);
    jbox *b = new_jbox(L); /* 3 */
    lua_newtable(L);       /* 4: rows */
    lua_newtable(L);       /* 5: colnames */
    const char *p = s, *end = s + len;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    json_error_t e;
    if (p < end && *p == '[') {
        b->j = json_loadb(s, len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &e);
        if (b->j == NULL)
            return raise_errf(L, MORAINE_EJSON, "%s:%d: %s", fname, e.line, e.text);
        if (!json_is_array(b->j))
            return raise_errf(L, MORAINE_EJSON, "%s:1: expected a JSON array of objects", fname);
        size_t n = json_array_size(b->j);
        for (size_t i = 0; i < n; i++) {
            json_t *o = json_array_get(b->j, i);
            if (!json_is_object(o))
                return raise_errf(L, MORAINE_EJSON, "%s: array element %d is not a JSON object", fname, (int)i + 1);
            push_ndjson_row(L, o, 4, 5);
        }
        json_decref(b->j);
        b->j = NULL;
        lua_pushvalue(L, 4);
        lua_pushvalue(L, 5);
        return 2;
    }
    int line = 0;
    for (p = s; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            eol = end;
        line++;
        if (!is_blank(p, eol)) {
            b->j = json_loadb(p, (size_t)(eol - p), JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &e);
            if (b->j == NULL)
                return raise_errf(L, MORAINE_EJSON, "%s:%d: %s (column %d)", fname, line, e.text, e.column);
            if (!json_is_object(b->j))
                return raise_errf(L, MORAINE_EJSON, "%s:%d: expected a JSON object", fname, line);
            push_ndjson_row(L, b->j, 4, 5);
            json_decref(b->j);
            b->j = NULL;
        }
        p = eol + 1;
    }
    lua_pushvalue(L, 4);
    lua_pushvalue(L, 5);
    return 2;
}

/* ---- import from rows, verify, stats ------------------------------------------------ */

/* Pushes opts.progress of the optional options table at idx (a function or
 * nil); anything else is an argument error. */
static void push_progress_opt(lua_State *L, int idx)
{
    if (lua_isnoneornil(L, idx)) {
        lua_pushnil(L);
        return;
    }
    luaL_checktype(L, idx, LUA_TTABLE);
    lua_getfield(L, idx, "progress");
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TFUNCTION)
        luaL_argerror(L, idx, "'progress' must be a function");
}

/* Converts the Lua value at idx to the import value *v (no column type is
 * known here: the engine checks types). Strings point into Lua strings that
 * the argument tables keep alive. */
static void import_value(lua_State *L, int idx, moraine_value *v, const char *tname, size_t row, const char *col)
{
    idx = mr_absindex(L, idx);
    memset(v, 0, sizeof *v);
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        raise_errf(L, MORAINE_EINVAL, "import_rows: %s row %d: column '%s': missing value (use moraine.null for NULL)",
                   tname, (int)row, col);
        return;
    case LUA_TBOOLEAN:
        v->type = MORAINE_BOOL;
        v->i = lua_toboolean(L, idx);
        return;
    case LUA_TSTRING:
        v->type = MORAINE_STR;
        v->s = lua_tolstring(L, idx, &v->len);
        return;
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == &null_sentinel) {
            v->type = MORAINE_NULL;
            return;
        }
        break;
    case LUA_TNUMBER:
        if (to_int64(L, idx, &v->i)) {
            v->type = MORAINE_INT;
            return;
        }
        v->type = MORAINE_REAL;
        v->d = (double)lua_tonumber(L, idx);
        return;
    case LUA_TTABLE:
        lua_pushliteral(L, "json");
        lua_rawget(L, idx);
        if (lua_type(L, -1) == LUA_TSTRING) {
            v->type = MORAINE_JSON;
            v->s = lua_tolstring(L, -1, &v->len); /* referenced by the {json =} table */
            lua_pop(L, 1);
            return;
        }
        lua_pop(L, 1);
        raise_errf(L, MORAINE_EINVAL, "import_rows: %s row %d: column '%s': a table value must be {json = \"<text>\"}",
                   tname, (int)row, col);
        return;
#if MR_LUAJIT
    case MR_TCDATA:
        if (to_int64(L, idx, &v->i)) {
            v->type = MORAINE_INT;
            return;
        }
        raise_errf(L, MORAINE_EINVAL,
                   "import_rows: %s row %d: column '%s': cdata value is not an int64_t/uint64_t in int64 range", tname,
                   (int)row, col);
        return;
#endif
    default:
        break;
    }
    raise_errf(L, MORAINE_EINVAL, "import_rows: %s row %d: column '%s': unsupported value of type %s", tname, (int)row,
               col, luaL_typename(L, idx));
}

static const char *const import_table_fields[] = {"name", "columns", "rows", NULL};

/* Reads tables[i] (the table at tidx) into *out. Its C arrays are userdata
 * stored in the anchor table at aidx; strings stay referenced by the argument. */
static void read_import_table(lua_State *L, int tidx, int i, int aidx, moraine_import_table *out)
{
    char ctx[64];
    snprintf(ctx, sizeof ctx, "import_rows: tables[%d]", i);
    check_fields(L, tidx, import_table_fields, ctx);
    out->name = field_str(L, tidx, "name", ctx, 1);

    lua_pushliteral(L, "columns");
    lua_rawget(L, tidx);
    if (lua_type(L, -1) != LUA_TTABLE)
        raise_errf(L, MORAINE_EINVAL, "import_rows: %s: 'columns' must be an array of column names, got %s", out->name,
                   luaL_typename(L, -1));
    int cidx = lua_gettop(L);
    size_t ncols = (size_t)mr_rawlen(L, cidx);
    const char **names = (const char **)scratch(L, ncols, sizeof *names);
    lua_rawseti(L, aidx, (int)mr_rawlen(L, aidx) + 1);
    for (size_t c = 0; c < ncols; c++) {
        lua_rawgeti(L, cidx, (int)c + 1);
        size_t len;
        if (lua_type(L, -1) != LUA_TSTRING)
            raise_errf(L, MORAINE_EINVAL, "import_rows: %s: column name %d is not a string", out->name, (int)c + 1);
        names[c] = lua_tolstring(L, -1, &len);
        if (strlen(names[c]) != len)
            raise_errf(L, MORAINE_EINVAL, "import_rows: %s: column name %d contains a NUL byte", out->name, (int)c + 1);
        lua_pop(L, 1);
    }
    out->ncols = ncols;
    out->colnames = names;

    lua_pushliteral(L, "rows");
    lua_rawget(L, tidx);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
    }
    if (lua_type(L, -1) != LUA_TTABLE)
        raise_errf(L, MORAINE_EINVAL, "import_rows: %s: 'rows' must be an array of rows, got %s", out->name,
                   luaL_typename(L, -1));
    int ridx = lua_gettop(L);
    size_t nrows = (size_t)mr_rawlen(L, ridx);
    if (ncols && nrows > SIZE_MAX / sizeof(moraine_value) / ncols)
        raise_errf(L, MORAINE_ENOMEM, "import_rows: %s: too many rows", out->name);
    if (ncols == 0 && nrows > 0)
        raise_errf(L, MORAINE_EINVAL, "import_rows: %s: rows given but no columns", out->name);
    moraine_value *vals = (moraine_value *)scratch(L, nrows * ncols, sizeof *vals);
    lua_rawseti(L, aidx, (int)mr_rawlen(L, aidx) + 1);
    for (size_t r = 0; r < nrows; r++) {
        lua_rawgeti(L, ridx, (int)r + 1);
        int rowidx = lua_gettop(L);
        if (lua_type(L, rowidx) != LUA_TTABLE)
            raise_errf(L, MORAINE_EINVAL, "import_rows: %s row %d: a row must be an array of values, got %s", out->name,
                       (int)r + 1, luaL_typename(L, rowidx));
        for (size_t c = 0; c < ncols; c++) {
            lua_rawgeti(L, rowidx, (int)c + 1);
            import_value(L, -1, &vals[r * ncols + c], out->name, r + 1, names[c]);
            lua_pop(L, 1); /* the value stays referenced by the row */
        }
        lua_rawgeti(L, rowidx, (int)ncols + 1);
        if (!lua_isnil(L, -1))
            raise_errf(L, MORAINE_EINVAL, "import_rows: %s row %d: more values than the %d columns", out->name,
                       (int)r + 1, (int)ncols);
        lua_pop(L, 2);
    }
    lua_pop(L, 2); /* rows, columns */
    out->nrows = nrows;
    out->rows = vals;
}

/* db:import_rows(tables, opts) -> true */
static int l_db_import_rows(lua_State *L)
{
    ldb *d = check_db(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 3);
    push_progress_opt(L, 3); /* 4 */
    lua_pushnil(L);          /* 5: error slot */
    size_t n = (size_t)mr_rawlen(L, 2);
    moraine_import_table *tabs = (moraine_import_table *)scratch(L, n, sizeof *tabs); /* 6 */
    lua_newtable(L);                                                                  /* 7: anchors */
    for (size_t i = 0; i < n; i++) {
        char ctx[48];
        snprintf(ctx, sizeof ctx, "import_rows: tables[%d]", (int)i + 1);
        array_table_at(L, 2, (int)i + 1, ctx);
        read_import_table(L, lua_gettop(L), (int)i + 1, 7, &tabs[i]);
        lua_pop(L, 1); /* the table stays referenced by the argument */
    }
    /* The engine copies every value before it calls progress (the only Lua
     * code that runs during the call), so the pointers above cannot dangle. */
    progress_ctx p = {L, 4, 5, 0, 0};
    d->busy++;
    int rc = moraine_import_rows(d->db, tabs, n, lua_isnil(L, 4) ? NULL : progress_cb, &p);
    d->busy--;
    if (rc != 0)
        lua_pushstring(L, moraine_errmsg());
    if (p.failed) {
        lua_pushvalue(L, 5);
        return lua_error(L);
    }
    if (rc != 0)
        return raise_top(L, rc);
    lua_pushboolean(L, 1);
    return 1;
}

/* verify/stats callbacks run inside the engine: the Lua work they do is
 * protected (lua_pcall), so no error can longjmp through engine frames. */
typedef struct {
    progress_ctx p;  /* p.err_idx: error slot shared with the callbacks below */
    int out_idx;     /* result array */
    int append_idx;  /* the C function doing the Lua work */
} collect_ctx;

/* (out, key, problem) as lightuserdata C strings -> appends {key =, problem =} */
static int verify_append(lua_State *L)
{
    lua_createtable(L, 0, 2);
    lua_pushstring(L, (const char *)lua_touserdata(L, 2));
    lua_setfield(L, -2, "key");
    lua_pushstring(L, (const char *)lua_touserdata(L, 3));
    lua_setfield(L, -2, "problem");
    lua_rawseti(L, 1, (int)mr_rawlen(L, 1) + 1);
    return 0;
}

static void verify_report(void *ud, const char *key, const char *problem)
{
    collect_ctx *c = (collect_ctx *)ud;
    lua_State *L = c->p.L;
    if (c->p.failed)
        return;
    lua_pushvalue(L, c->append_idx);
    lua_pushvalue(L, c->out_idx);
    lua_pushlightuserdata(L, (void *)(key ? key : ""));
    lua_pushlightuserdata(L, (void *)(problem ? problem : ""));
    if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
        c->p.failed = 1;
        lua_replace(L, c->p.err_idx);
    }
}

/* db:verify(opts) -> array of {key =, problem =} */
static int l_db_verify(lua_State *L)
{
    ldb *d = check_db(L, 1);
    lua_settop(L, 2);
    push_progress_opt(L, 2);                   /* 3 */
    lua_pushnil(L);                            /* 4: error slot */
    lua_newtable(L);                           /* 5: result */
    lua_pushcfunction(L, verify_append);       /* 6 */
    luaL_checkstack(L, 8, NULL);
    collect_ctx c = {{L, 3, 4, 0, 0}, 5, 6};
    d->busy++;
    int rc = moraine_verify(d->db, verify_report, &c, lua_isnil(L, 3) ? NULL : progress_cb, &c.p);
    d->busy--;
    if (rc < 0)
        lua_pushstring(L, moraine_errmsg());
    if (c.p.failed) {
        lua_pushvalue(L, 4);
        return lua_error(L);
    }
    if (rc < 0)
        return raise_top(L, rc);
    if (c.p.cancelled)
        return raise_errf(L, MORAINE_EINVAL, "verify cancelled");
    lua_settop(L, 5);
    return 1;
}

/* moraine.verify_path(path, opts) -> array of {key =, problem =}: verify
 * run in a child process (moraine_verify_path). */
static int l_verify_path(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_settop(L, 2);
    push_progress_opt(L, 2);                   /* 3 */
    lua_pushnil(L);                            /* 4: error slot */
    lua_newtable(L);                           /* 5: result */
    lua_pushcfunction(L, verify_append);       /* 6 */
    luaL_checkstack(L, 8, NULL);
    collect_ctx c = {{L, 3, 4, 0, 0}, 5, 6};
    int rc = moraine_verify_path(path, verify_report, &c, lua_isnil(L, 3) ? NULL : progress_cb, &c.p);
    if (rc < 0)
        lua_pushstring(L, moraine_errmsg());
    if (c.p.failed) {
        lua_pushvalue(L, 4);
        return lua_error(L);
    }
    if (rc < 0)
        return raise_top(L, rc);
    if (c.p.cancelled)
        return raise_errf(L, MORAINE_EINVAL, "verify cancelled");
    lua_settop(L, 5);
    return 1;
}

/* (out, moraine_stat *) as lightuserdata -> appends one stats entry */
static int stats_append(lua_State *L)
{
    const moraine_stat *st = (const moraine_stat *)lua_touserdata(L, 2);
    char sub[2] = {st->subspace, '\0'};
    lua_createtable(L, 0, 5);
    lua_pushstring(L, sub);
    lua_setfield(L, -2, "subspace");
    if (st->relation) {
        lua_pushstring(L, st->relation);
        lua_setfield(L, -2, "relation");
    }
    push_int64(L, (int64_t)st->entries);
    lua_setfield(L, -2, "entries");
    push_int64(L, (int64_t)st->key_bytes);
    lua_setfield(L, -2, "key_bytes");
    push_int64(L, (int64_t)st->value_bytes);
    lua_setfield(L, -2, "value_bytes");
    lua_rawseti(L, 1, (int)mr_rawlen(L, 1) + 1);
    return 0;
}

static void stats_report(void *ud, const moraine_stat *st)
{
    collect_ctx *c = (collect_ctx *)ud;
    lua_State *L = c->p.L;
    if (c->p.failed)
        return;
    lua_pushvalue(L, c->append_idx);
    lua_pushvalue(L, c->out_idx);
    lua_pushlightuserdata(L, (void *)st);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
        c->p.failed = 1;
        lua_replace(L, c->p.err_idx);
    }
}

/* db:stats() -> array of {subspace =, relation =, entries =, key_bytes =, value_bytes =} */
static int l_db_stats(lua_State *L)
{
    ldb *d = check_db(L, 1);
    lua_settop(L, 1);
    lua_pushnil(L);                     /* 2: error slot */
    lua_newtable(L);                    /* 3: result */
    lua_pushcfunction(L, stats_append); /* 4 */
    luaL_checkstack(L, 8, NULL);
    collect_ctx c = {{L, 0, 2, 0, 0}, 3, 4};
    int rc = moraine_stats(d->db, stats_report, &c);
    if (rc < 0)
        lua_pushstring(L, moraine_errmsg());
    if (c.p.failed) {
        lua_pushvalue(L, 2);
        return lua_error(L);
    }
    if (rc < 0)
        return raise_top(L, rc);
    lua_settop(L, 3);
    return 1;
}

/* db:store_access() -> {dir_mode =, data_mode =, lock_mode =, exposed =} (moraine_store_access_get) */
static int l_db_store_access(lua_State *L)
{
    ldb *d = check_db(L, 1);
    moraine_store_access a;
    int rc = moraine_store_access_get(d->db, &a);
    if (rc < 0)
        return raise_engine(L, rc);
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, (lua_Integer)a.dir_mode);
    lua_setfield(L, -2, "dir_mode");
    lua_pushinteger(L, (lua_Integer)a.data_mode);
    lua_setfield(L, -2, "data_mode");
    lua_pushinteger(L, (lua_Integer)a.lock_mode);
    lua_setfield(L, -2, "lock_mode");
    lua_pushboolean(L, a.exposed);
    lua_setfield(L, -2, "exposed");
    return 1;
}

/* core.create_private_file(path) -> true: creates (or truncates) @path with
 * mode 0600, so that whatever is written into it next is never readable by
 * others (an export holding keys). Raises EIO naming the path. */
static int l_create_private_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || fchmod(fd, 0600) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return raise_errf(L, MORAINE_EIO, "%s: cannot create: %s", path, strerror(e));
    }
    close(fd);
    lua_pushboolean(L, 1);
    return 1;
}

/* ---- json_encode (jansson) ------------------------------------------------------------
 * The document is built as a jansson tree rooted in a jbox (freed by its __gc
 * if an error longjmps out half way): each container is attached to its
 * parent before it is filled, so the root always owns everything made so far.
 * The path of the value being converted is kept for error messages. */
#define JE_MAXDEPTH 200

typedef struct {
    const char *key; /* NULL: array element idx */
    size_t klen, idx;
} je_seg;

typedef struct {
    jbox *box;
    int seen_idx; /* tables on the current path (cycle check) */
    int depth;
    je_seg path[JE_MAXDEPTH];
} je_state;

/* Pushes the path of the value being converted: $, $.key, $[2] (1-based, as in Lua). */
static const char *je_path(lua_State *L, const je_state *st)
{
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addchar(&b, '$');
    for (int i = 0; i < st->depth; i++) {
        if (st->path[i].key) {
            luaL_addchar(&b, '.');
            luaL_addlstring(&b, st->path[i].key, st->path[i].klen);
        } else {
            char num[32];
            snprintf(num, sizeof num, "[%zu]", st->path[i].idx);
            luaL_addstring(&b, num);
        }
    }
    luaL_pushresult(&b);
    return lua_tostring(L, -1);
}

static int je_fail(lua_State *L, const je_state *st, int code, const char *what)
{
    lua_pushstring(L, what); /* copy: @what may be a jansson buffer */
    const char *w = lua_tostring(L, -1);
    const char *path = je_path(L, st);
    return raise_errf(L, code, "json_encode: %s at %s", w, path);
}

/* Attaches @v to @parent (key != NULL: object member, else array element), or
 * makes it the root. Returns @v (still usable: the parent holds it). */
static json_t *je_attach(lua_State *L, je_state *st, json_t *parent, const char *key, size_t klen, json_t *v)
{
    if (v == NULL)
        je_fail(L, st, MORAINE_ENOMEM, "out of memory");
    if (parent == NULL) {
        st->box->j = v;
        return v;
    }
    if (key == NULL) {
        if (json_array_append_new(parent, v) != 0)
            je_fail(L, st, MORAINE_ENOMEM, "out of memory");
        return v;
    }
    if (json_object_setn_new_nocheck(parent, key, klen, v) != 0)
        je_fail(L, st, MORAINE_ENOMEM, "out of memory");
    return v;
}

static void je_put(lua_State *L, je_state *st, int idx, json_t *parent, const char *key, size_t klen, int order_idx);

typedef struct {
    const char *s;
    size_t len;
} je_key;

static int je_key_cmp(const void *a, const void *b)
{
    const je_key *x = (const je_key *)a, *y = (const je_key *)b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c != 0)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

/* Converts member @k (pointer into a string anchored by the caller) of the
 * table at tidx into object @obj. */
static void je_member(lua_State *L, je_state *st, int tidx, json_t *obj, const char *k, size_t klen)
{
    st->path[st->depth].key = k;
    st->path[st->depth].klen = klen;
    st->depth++;
    json_t *probe = json_stringn(k, klen);
    if (probe == NULL)
        je_fail(L, st, MORAINE_EINVAL, "object key is not valid UTF-8");
    json_decref(probe);
    lua_pushlstring(L, k, klen);
    lua_rawget(L, tidx);
    je_put(L, st, lua_gettop(L), obj, k, klen, 0);
    lua_pop(L, 1);
    st->depth--;
}

/* Fills object @obj from the table at tidx: keys of the array at order_idx
 * (if any) first, in that order, then every other key in byte order. */
static void je_object(lua_State *L, je_state *st, int tidx, json_t *obj, int order_idx)
{
    lua_newtable(L); /* keys (anchors the strings) */
    int kidx = lua_gettop(L);
    lua_newtable(L); /* keys already emitted through order_idx */
    int done_idx = lua_gettop(L);
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, tidx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING) {
            const char *tn = luaL_typename(L, -1);
            je_fail(L, st, MORAINE_EINVAL,
                    lua_pushfstring(L, "object key of type %s (keys must be strings; an array needs keys 1..n)", tn));
        }
        lua_pushvalue(L, -1);
        lua_rawseti(L, kidx, (int)++n);
    }
    if (order_idx) {
        size_t m = (size_t)mr_rawlen(L, order_idx);
        for (size_t i = 1; i <= m; i++) {
            lua_rawgeti(L, order_idx, (int)i);
            lua_pushvalue(L, -1);
            lua_rawget(L, done_idx);
            int dup = !lua_isnil(L, -1);
            lua_pop(L, 1);
            lua_pushvalue(L, -1);
            lua_rawget(L, tidx);
            int present = !lua_isnil(L, -1);
            lua_pop(L, 1);
            if (!dup && present) {
                size_t klen;
                const char *k = lua_tolstring(L, -1, &klen); /* anchored by key_order */
                lua_pushvalue(L, -1);
                lua_pushboolean(L, 1);
                lua_rawset(L, done_idx);
                je_member(L, st, tidx, obj, k, klen);
            }
            lua_pop(L, 1);
        }
    }
    je_key *keys = (je_key *)scratch(L, n, sizeof *keys);
    size_t m = 0;
    for (size_t i = 1; i <= n; i++) {
        lua_rawgeti(L, kidx, (int)i);
        lua_pushvalue(L, -1);
        lua_rawget(L, done_idx);
        if (lua_isnil(L, -1)) {
            keys[m].s = lua_tolstring(L, -2, &keys[m].len); /* anchored by kidx */
            m++;
        }
        lua_pop(L, 2);
    }
    qsort(keys, m, sizeof *keys, je_key_cmp);
    for (size_t i = 0; i < m; i++)
        je_member(L, st, tidx, obj, keys[i].s, keys[i].len);
    lua_pop(L, 3);
}

/* Array length of the table at tidx if its keys are exactly 1..n; 0 if it is
 * not an array (t[1] == nil); raises for a table that mixes both. */
static size_t je_array_len(lua_State *L, je_state *st, int tidx)
{
    lua_rawgeti(L, tidx, 1);
    int is_array = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (!is_array)
        return 0;
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, tidx)) {
        lua_pop(L, 1);
        n++;
    }
    lua_pushnil(L);
    while (lua_next(L, tidx)) {
        lua_pop(L, 1);
        int64_t k;
        if (lua_type(L, -1) != LUA_TNUMBER || !to_int64(L, -1, &k) || k < 1 || (size_t)k > n)
            je_fail(L, st, MORAINE_EINVAL, "table mixes array items (t[1] ~= nil) with other keys or holes");
    }
    return n;
}

/* {json = "<text>"} and nothing else: 1 and the text pushed; else 0. */
static int je_raw_text(lua_State *L, int tidx)
{
    lua_pushliteral(L, "json");
    lua_rawget(L, tidx);
    if (lua_type(L, -1) != LUA_TSTRING) {
        lua_pop(L, 1);
        return 0;
    }
    int n = 0;
    lua_pushnil(L);
    while (lua_next(L, tidx)) {
        lua_pop(L, 1);
        if (++n > 1) {
            lua_pop(L, 1); /* the key lua_next left */
            break;
        }
    }
    if (n != 1) {
        lua_pop(L, 1);
        return 0;
    }
    return 1;
}

static void je_put(lua_State *L, je_state *st, int idx, json_t *parent, const char *key, size_t klen, int order_idx)
{
    luaL_checkstack(L, 12, "json_encode: nested too deeply");
    int64_t iv;
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        je_fail(L, st, MORAINE_EINVAL, "nil value (use moraine.null for null)");
        return;
    case LUA_TBOOLEAN:
        je_attach(L, st, parent, key, klen, json_boolean(lua_toboolean(L, idx)));
        return;
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == &null_sentinel) {
            je_attach(L, st, parent, key, klen, json_null());
            return;
        }
        break;
    case LUA_TNUMBER: {
        if (to_int64(L, idx, &iv)) {
            je_attach(L, st, parent, key, klen, json_integer((json_int_t)iv));
            return;
        }
        double d = (double)lua_tonumber(L, idx);
        if (d != d || d - d != 0)
            je_fail(L, st, MORAINE_EINVAL, "NaN or infinity has no JSON form");
        je_attach(L, st, parent, key, klen, json_real(d));
        return;
    }
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        json_t *j = json_stringn(s, len);
        if (j == NULL)
            je_fail(L, st, MORAINE_EINVAL, "string is not valid UTF-8");
        je_attach(L, st, parent, key, klen, j);
        return;
    }
#if MR_LUAJIT
    case MR_TCDATA:
        if (to_int64(L, idx, &iv)) {
            je_attach(L, st, parent, key, klen, json_integer((json_int_t)iv));
            return;
        }
        je_fail(L, st, MORAINE_EINVAL, "cdata value is not an int64_t/uint64_t in int64 range");
        return;
#endif
    case LUA_TTABLE: {
        if (je_raw_text(L, idx)) {
            size_t len;
            const char *text = lua_tolstring(L, -1, &len);
            json_error_t e;
            json_t *j = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
            if (j == NULL)
                je_fail(L, st, MORAINE_EJSON,
                        lua_pushfstring(L, "{json = ...} text is not valid JSON: %s (line %d, column %d)", e.text,
                                        e.line, e.column));
            je_attach(L, st, parent, key, klen, j);
            lua_pop(L, 1);
            return;
        }
        lua_pushvalue(L, idx);
        lua_rawget(L, st->seen_idx);
        if (!lua_isnil(L, -1))
            je_fail(L, st, MORAINE_EINVAL, "table contains itself (a cycle)");
        lua_pop(L, 1);
        if (st->depth >= JE_MAXDEPTH - 1)
            je_fail(L, st, MORAINE_EINVAL, "nested too deeply");
        lua_pushvalue(L, idx);
        lua_pushboolean(L, 1);
        lua_rawset(L, st->seen_idx);
        size_t n = je_array_len(L, st, idx);
        lua_pushnil(L);
        int empty = !lua_next(L, idx);
        if (!empty)
            lua_pop(L, 2);
        if (n > 0 || empty) {
            json_t *arr = je_attach(L, st, parent, key, klen, json_array());
            for (size_t i = 1; i <= n; i++) {
                st->path[st->depth].key = NULL;
                st->path[st->depth].idx = i;
                st->depth++;
                lua_rawgeti(L, idx, (int)i);
                je_put(L, st, lua_gettop(L), arr, NULL, 0, 0);
                lua_pop(L, 1);
                st->depth--;
            }
        } else {
            json_t *obj = je_attach(L, st, parent, key, klen, json_object());
            je_object(L, st, idx, obj, order_idx);
        }
        lua_pushvalue(L, idx);
        lua_pushnil(L);
        lua_rawset(L, st->seen_idx);
        return;
    }
    default:
        break;
    }
    je_fail(L, st, MORAINE_EINVAL, lua_pushfstring(L, "cannot encode a %s", luaL_typename(L, idx)));
}

/* core.json_encode(value, key_order) -> compact JSON text */
static int l_json_encode(lua_State *L)
{
    luaL_checkany(L, 1);
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        size_t m = (size_t)mr_rawlen(L, 2);
        for (size_t i = 1; i <= m; i++) {
            lua_rawgeti(L, 2, (int)i);
            if (lua_type(L, -1) != LUA_TSTRING)
                luaL_argerror(L, 2, "key_order must be an array of strings");
            lua_pop(L, 1);
        }
    }
    lua_settop(L, 2);
    je_state *st = (je_state *)lua_newuserdata(L, sizeof *st); /* 3 */
    memset(st, 0, sizeof *st);
    st->box = new_jbox(L); /* 4 */
    lua_newtable(L);       /* 5: tables on the path */
    st->seen_idx = 5;
    je_put(L, st, 1, NULL, NULL, 0, lua_isnil(L, 2) ? 0 : 2);
    push_json_text(L, st->box->j);
    json_decref(st->box->j);
    st->box->j = NULL;
    return 1;
}

/* ---- module ------------------------------------------------------------------------- */
static const luaL_Reg db_methods[] = {{"close", l_db_close},
                                      {"last_snapshot", l_db_last_snapshot},
                                      {"reader_check", l_db_reader_check},
                                      {"relations", l_db_relations},
                                      {"relation", l_db_relation},
                                      {"commit", l_db_commit},
                                      {"read", l_db_read},
                                      {"scan", l_db_scan},
                                      {"import_ndjson", l_db_import},
                                      {"export_ndjson", l_db_export},
                                      {"import_rows", l_db_import_rows},
                                      {"verify", l_db_verify},
                                      {"stats", l_db_stats},
                                      {"store_access", l_db_store_access},
                                      {"init", l_db_init},
                                      {"transaction", l_db_transaction},
                                      {NULL, NULL}};

static const luaL_Reg txn_methods[] = {{"define", l_tx_define},         {"insert", l_tx_insert},
                                       {"end_row", l_tx_end_row},       {"put_row", l_tx_put_row},
                                       {"delete_row", l_tx_delete_row}, {NULL, NULL}};

static const luaL_Reg vtx_methods[] = {{"base", l_vtx_base},
                                       {"create_schema", l_vtx_create_schema},
                                       {"create_table", l_vtx_create_table},
                                       {"add_column", l_vtx_add_column},
                                       {"rename_column", l_vtx_rename_column},
                                       {"drop_column", l_vtx_drop_column},
                                       {"rename_table", l_vtx_rename_table},
                                       {"drop_table", l_vtx_drop_table},
                                       {"set_partitioning", l_vtx_set_partitioning},
                                       {"clear_partitioning", l_vtx_clear_partitioning},
                                       {"set_sorting", l_vtx_set_sorting},
                                       {"clear_sorting", l_vtx_clear_sorting},
                                       {"alter_column", l_vtx_alter_column},
                                       {"set_comment", l_vtx_set_comment},
                                       {"create_view", l_vtx_create_view},
                                       {"drop_view", l_vtx_drop_view},
                                       {"add_data_files", l_vtx_add_data_files},
                                       {"add_delete_files", l_vtx_add_delete_files},
                                       {"delete_files", l_vtx_delete_files},
                                       {"rewrite_files", l_vtx_rewrite_files},
                                       {NULL, NULL}};

/* rd:files_batch: bindings/moraine_batch.c (uses the helpers above) */
#include "moraine_batch.c"

static const luaL_Reg read_methods[] = {{"last_snapshot", l_read_last_snapshot},
                                        {"scan", l_read_scan},
                                        {"files", l_read_files},
                                        {"files_batch", l_read_files_batch},
                                        {"scan_columns", l_read_scan_columns},
                                        {"scan_json", l_read_scan_json},
                                        {"secret_count", l_read_secret_count},
                                        {"partition_spec", l_read_partition_spec},
                                        {"sort_spec", l_read_sort_spec},
                                        {"partition_spec_by_id", l_read_partition_spec_by_id},
                                        {"table_id", l_read_table_id},
                                        {NULL, NULL}};

static const luaL_Reg module_funcs[] = {{"open", l_open},
                                        {"verify_path", l_verify_path},
                                        {"json_decode", l_json_decode},
                                        {"json_encode", l_json_encode},
                                        {"parse_ndjson", l_parse_ndjson},
                                        {"is_error", l_is_error},
                                        {"raise", l_raise},
                                        {"ident_render", l_ident_render},
                                        {"ident_is_keyword", l_ident_is_keyword},
                                        {"int64", l_int64},
                                        {"clock", l_clock},
                                        {"set_int64_ctor", l_set_int64_ctor},
                                        {"set_cdata_conv", l_set_cdata_conv},
                                        {"set_key_parsers", l_set_key_parsers},
                                        {"all_versions", l_all_versions},
                                        {"create_private_file", l_create_private_file},
                                        {NULL, NULL}};

/* Creates metatable @name with __index = methods, __gc/__close = gc. */
static void new_class(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc,
                      lua_CFunction tostr)
{
    luaL_newmetatable(L, name);
    if (methods) {
        lua_newtable(L);
        mr_setfuncs(L, methods);
        lua_setfield(L, -2, "__index");
    }
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__close");
    if (tostr) {
        lua_pushcfunction(L, tostr);
        lua_setfield(L, -2, "__tostring");
    }
    lua_pop(L, 1);
}

int luaopen_moraine_core(lua_State *L);

int luaopen_moraine_core(lua_State *L)
{
    new_class(L, MT_DB, db_methods, l_db_gc, l_db_tostring);
    new_class(L, MT_TXN, txn_methods, l_txn_gc, l_txn_tostring);
    new_class(L, MT_VTX, vtx_methods, l_vtx_gc, l_vtx_tostring);
    new_class(L, MT_READ, read_methods, l_read_gc, l_read_tostring);
    new_class(L, MT_CURSOR, NULL, l_cursor_gc, NULL);
    new_class(L, MT_JBOX, NULL, l_jbox_gc, NULL);
    luaL_newmetatable(L, MT_ERROR);
    lua_pushcfunction(L, l_error_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);

    lua_newtable(L);
    mr_setfuncs(L, module_funcs);
    set_null_tostring(L);
    push_null(L);
    lua_setfield(L, -2, "null");
    lua_pushliteral(L, MORAINE_VERSION_STRING);
    lua_setfield(L, -2, "version");
    luaL_getmetatable(L, MT_ERROR);
    lua_setfield(L, -2, "error_mt");
    return 1;
}
