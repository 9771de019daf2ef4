/*
 * moraine_staged.c — staged write transactions (moraine.txn): db:commit and
 * the txn methods define, insert, end_row, put_row, delete_row, with the
 * conversion of Lua row tables to engine values (to_value, row_values).
 */
#include <stdarg.h>
#include <stdio.h>

#include "moraine_binding.h"

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

/* The shape every row call shares: tx(name, row[, ord]) at stack slots 2, 3,
 * 4 (@top: the last slot kept). Fills *@info; returns the row's values
 * (owned by the stack until the call returns). @ord_required: ord must be
 * given (put_row), else it defaults to -1. Raises as check_name, tx_relation
 * and row_values do. */
typedef struct {
    ltxn *t;
    const char *name;
    int64_t ord;
    moraine_relation_info info;
    moraine_value *vals;
} row_call;

static void row_call_args(lua_State *L, row_call *c, int ord_required, int key_only, int top)
{
    c->t = tx_enter(L);
    c->name = check_name(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    c->ord = ord_required ? check_int(L, 4) : top >= 4 ? opt_int(L, 4, -1) : -1;
    lua_settop(L, top);
    tx_relation(L, c->t, c->name, &c->info);
    c->vals = row_values(L, c->t, 3, &c->info, key_only);
}

/* The end every call shares: an engine error fails the transaction (and
 * raises), else the call returns nothing. */
static int tx_done(lua_State *L, ltxn *t, int rc)
{
    if (rc != 0)
        return tx_fail_engine(L, t, rc);
    tx_leave(t);
    return 0;
}

static int l_tx_insert(lua_State *L)
{
    row_call c;
    row_call_args(L, &c, 0, 0, 4);
    return tx_done(L, c.t, moraine_txn_insert(c.t->txn, c.name, c.vals, c.info.ncols, c.ord));
}

static int l_tx_end_row(lua_State *L)
{
    row_call c;
    row_call_args(L, &c, 0, 1, 3);
    return tx_done(L, c.t, moraine_txn_end(c.t->txn, c.name, c.vals, c.info.ncols));
}

static int l_tx_put_row(lua_State *L)
{
    row_call c;
    row_call_args(L, &c, 1, 0, 4);
    return tx_done(L, c.t, moraine_txn_put_row(c.t->txn, c.name, c.vals, c.info.ncols, c.ord));
}

static int l_tx_delete_row(lua_State *L)
{
    ltxn *t = tx_enter(L);
    const char *name = check_name(L, 2);
    int64_t ord = check_int(L, 3);
    return tx_done(L, t, moraine_txn_delete_row(t->txn, name, ord));
}

/* History rewrites (moraine_txn_delete_version, _delete_snapshot,
 * _insert_version): a sync replaying what DuckLake changed in the past. */
static int l_tx_delete_version(lua_State *L)
{
    row_call c;
    row_call_args(L, &c, 0, 0, 4);
    return tx_done(L, c.t, moraine_txn_delete_version(c.t->txn, c.name, c.vals, c.info.ncols, c.ord));
}

static int l_tx_delete_snapshot(lua_State *L)
{
    ltxn *t = tx_enter(L);
    int64_t id = check_int(L, 2);
    return tx_done(L, t, moraine_txn_delete_snapshot(t->txn, id));
}

/* tx:insert_version(name, row, ord, children): children an array of
 * {name = child table, row = row, ord = position or nil} */
static int l_tx_insert_version(lua_State *L)
{
    ltxn *t = tx_enter(L);
    const char *name = check_name(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    int64_t ord = opt_int(L, 4, -1);
    if (!lua_isnoneornil(L, 5)) luaL_checktype(L, 5, LUA_TTABLE);
    lua_settop(L, 5);
    moraine_relation_info info;
    tx_relation(L, t, name, &info);
    moraine_value *vals = row_values(L, t, 3, &info, 0);
    size_t n = lua_isnil(L, 5) ? 0 : mr_rawlen(L, 5);
    moraine_child_row *kids = (moraine_child_row *)lua_newuserdata(L, (n ? n : 1) * sizeof *kids);
    for (size_t i = 0; i < n; i++) {
        luaL_checkstack(L, 8, "too many children");
        lua_rawgeti(L, 5, (int)i + 1);
        int e = lua_gettop(L);
        if (lua_type(L, e) != LUA_TTABLE)
            tx_failf(L, t, MORAINE_EINVAL, "%s: child %d is not a table {name =, row =, ord =}", name, (int)i + 1);
        lua_getfield(L, e, "name");
        if (lua_type(L, -1) != LUA_TSTRING)
            tx_failf(L, t, MORAINE_EINVAL, "%s: child %d has no table name (field 'name')", name, (int)i + 1);
        kids[i].name = lua_tostring(L, -1);
        moraine_relation_info cinfo;
        tx_relation(L, t, kids[i].name, &cinfo);
        lua_getfield(L, e, "row");
        if (lua_type(L, -1) != LUA_TTABLE)
            tx_failf(L, t, MORAINE_EINVAL, "%s: child %d has no row (field 'row')", name, (int)i + 1);
        kids[i].row = row_values(L, t, lua_gettop(L), &cinfo, 0);
        kids[i].ncols = cinfo.ncols;
        lua_getfield(L, e, "ord");
        kids[i].ord = opt_int(L, lua_gettop(L), -1);
        /* the name, row table and value array stay on the stack until the call returns */
    }
    return tx_done(L, t, moraine_txn_insert_version(t->txn, name, vals, info.ncols, ord, kids, n));
}

int l_txn_gc(lua_State *L)
{
    ltxn *t = (ltxn *)lua_touserdata(L, 1);
    if (t)
        txn_abort(t);
    return 0;
}

int l_txn_tostring(lua_State *L)
{
    ltxn *t = (ltxn *)luaL_checkudata(L, 1, MT_TXN);
    lua_pushstring(L, t->txn ? "moraine.txn (open)" : "moraine.txn (finished)");
    return 1;
}

/* db:commit(snapshot_id or nil, fn) -> true */
int l_db_commit(lua_State *L)
{
    ldb *d = check_db(L, 1);
    int64_t snap = opt_int(L, 2, MORAINE_NO_SNAPSHOT);
    luaL_checktype(L, 3, LUA_TFUNCTION);
    /* opts: {partial = true}: an intermediate commit of a replay (moraine_txn_partial);
     * {rewind = true}: its history rewrites reach below its own snapshot (moraine_txn_rewind) */
    int partial = 0, rewind = 0;
    if (!lua_isnoneornil(L, 4)) {
        luaL_checktype(L, 4, LUA_TTABLE);
        lua_pushnil(L);
        while (lua_next(L, 4)) {
            const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
            if ((strcmp(k, "partial") != 0 && strcmp(k, "rewind") != 0) || !lua_isboolean(L, -1))
                return raise_errf(L, MORAINE_EINVAL, "db:commit: the only option is partial (a boolean) or rewind (a boolean)");
            if (k[0] == 'p') partial = lua_toboolean(L, -1);
            else rewind = lua_toboolean(L, -1);
            lua_pop(L, 1);
        }
    }
    lua_settop(L, 3);
    ltxn *t = (ltxn *)new_handle(L, sizeof *t, MT_TXN, 1); /* 4 */
    t->owner = d;
    db_still_open(L, d); /* the allocation may have run a finalizer that closed it */
    int rc = moraine_txn_begin(d->db, snap, &t->txn);
    if (rc != 0) {
        t->txn = NULL;
        return raise_engine(L, rc);
    }
    d->txn = t;
    if (partial) moraine_txn_partial(t->txn, 1);
    if (rewind && (rc = moraine_txn_rewind(t->txn)) != 0) {
        txn_abort(t);
        return raise_engine(L, rc);
    }
    lua_pushvalue(L, 3);
    lua_pushvalue(L, 4);
    const int calls = d->calls;
    const int prc = lua_pcall(L, 1, 0, 0);
    d->calls = calls; /* a call on the transaction that raised left itself counted (moraine_core.c, counted_call) */
    if (prc != LUA_OK) {
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

const luaL_Reg txn_methods[] = {{"define", l_tx_define},         {"insert", l_tx_insert},
                                       {"end_row", l_tx_end_row},       {"put_row", l_tx_put_row},
                                       {"delete_row", l_tx_delete_row}, {"delete_version", l_tx_delete_version},
                                       {"delete_snapshot", l_tx_delete_snapshot}, {"insert_version", l_tx_insert_version},
                                       {NULL, NULL}};
