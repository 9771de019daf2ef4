/*
 * moraine_db.c — the catalog handle (moraine.db): core.open, db:close and
 * the catalog's own questions (last_snapshot, reader_check, relations), the
 * NDJSON import/export, db:import_rows, db:verify / core.verify_path,
 * db:stats, db:store_access, db:compact, db:open_elsewhere, db:last_txnid and
 * core.create_temp_file, core.sync_path, core.rename_exchange.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "moraine_binding.h"

/* ---- db --------------------------------------------------------------------- */
ldb *db_still_open(lua_State *L, ldb *d)
{
    if (d->db == NULL)
        raise_errf(L, MORAINE_EINVAL, "catalog is closed");
    return d;
}

ldb *check_db(lua_State *L, int idx) { return db_still_open(L, (ldb *)luaL_checkudata(L, idx, MT_DB)); }

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
int l_open(lua_State *L)
{
    const char *path = check_cstr(L, 1);
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

int l_db_close(lua_State *L)
{
    ldb *d = (ldb *)luaL_checkudata(L, 1, MT_DB);
    if (d->busy)
        return raise_errf(L, MORAINE_ETXN, "cannot close the catalog during import/export");
    if (d->calls)
        return raise_errf(L, MORAINE_ETXN, "cannot close the catalog inside a call on one of its reads or transactions (from an "
                                           "option's metamethod or a finalizer run during it); close it after the call returns");
    db_close(d);
    return 0;
}

int l_db_gc(lua_State *L)
{
    ldb *d = (ldb *)lua_touserdata(L, 1);
    if (d && !d->busy)
        db_close(d);
    return 0;
}

int l_db_tostring(lua_State *L)
{
    ldb *d = (ldb *)luaL_checkudata(L, 1, MT_DB);
    if (d->db)
        lua_pushfstring(L, "moraine.db (%p)", (void *)d);
    else
        lua_pushliteral(L, "moraine.db (closed)");
    return 1;
}

int l_db_last_snapshot(lua_State *L)
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
int l_db_reader_check(lua_State *L)
{
    ldb *d = check_db(L, 1);
    int dead = 0;
    int rc = moraine_reader_check(d->db, &dead);
    if (rc < 0)
        return raise_engine(L, rc);
    lua_pushinteger(L, dead);
    return 1;
}

/* db:release_pages() -> true (moraine_release_pages) */
int l_db_release_pages(lua_State *L)
{
    ldb *d = check_db(L, 1);
    int rc = moraine_release_pages(d->db);
    if (rc < 0)
        return raise_engine(L, rc);
    lua_pushboolean(L, 1);
    return 1;
}

int l_db_relations(lua_State *L)
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

int l_db_relation(lua_State *L)
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
    const char *dir = check_cstr(L, 2);
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

int l_db_import(lua_State *L)
{
    return import_export(L, 1);
}

int l_db_export(lua_State *L)
{
    return import_export(L, 0);
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
int l_db_import_rows(lua_State *L)
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

/* db:import_sqlite(path, tmpdir, tables, opts) -> commits, or false when
 * moraine_import_sqlite cannot take the file (it returned 1: nothing
 * written). @tables: an array of {name =, columns = {...}, kinds = {column
 * -> "bool" | ...}} (moraine.sync_source's tables: a column of kind "bool"
 * has its 0 and 1 read as false and true); opts: progress, int_reals
 * (MORAINE_SQLITE_INT_REALS). */
int l_db_import_sqlite(lua_State *L)
{
    ldb *d = check_db(L, 1);
    const char *path = check_cstr(L, 2);
    const char *tmpdir = check_cstr(L, 3);
    luaL_checktype(L, 4, LUA_TTABLE);
    lua_settop(L, 5);
    unsigned flags = 0;
    if (!lua_isnil(L, 5)) {
        luaL_checktype(L, 5, LUA_TTABLE);
        lua_getfield(L, 5, "int_reals");
        if (lua_toboolean(L, -1)) flags |= MORAINE_SQLITE_INT_REALS;
        lua_pop(L, 1);
    }
    push_progress_opt(L, 5); /* 6 */
    lua_pushnil(L);          /* 7: error slot */
    size_t n = (size_t)mr_rawlen(L, 4);
    moraine_sqlite_table *tabs = (moraine_sqlite_table *)scratch(L, n, sizeof *tabs); /* 8 */
    lua_newtable(L);                                                                  /* 9: anchors */
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, 4, (int)i + 1);
        int tidx = lua_gettop(L);
        if (lua_type(L, tidx) != LUA_TTABLE) return luaL_error(L, "import_sqlite: tables[%d] is not a table", (int)i + 1);
        lua_getfield(L, tidx, "name");
        if (lua_type(L, -1) != LUA_TSTRING) return luaL_error(L, "import_sqlite: tables[%d].name is not a string", (int)i + 1);
        tabs[i].name = nul_free(L, -1, "a table name");
        lua_rawseti(L, 9, (int)mr_rawlen(L, 9) + 1);
        lua_getfield(L, tidx, "columns");
        int cidx = lua_gettop(L);
        if (lua_type(L, cidx) != LUA_TTABLE) return luaL_error(L, "import_sqlite: %s: columns is not a table", tabs[i].name);
        lua_getfield(L, tidx, "kinds");
        int kidx = lua_gettop(L);
        size_t nc = (size_t)mr_rawlen(L, cidx);
        const char **cols = (const char **)scratch(L, nc, sizeof *cols);
        lua_rawseti(L, 9, (int)mr_rawlen(L, 9) + 1);
        unsigned char *bools = (unsigned char *)scratch(L, nc, 1);
        lua_rawseti(L, 9, (int)mr_rawlen(L, 9) + 1);
        for (size_t c = 0; c < nc; c++) {
            lua_rawgeti(L, cidx, (int)c + 1);
            size_t len;
            if (lua_type(L, -1) != LUA_TSTRING) return luaL_error(L, "import_sqlite: %s: column %d is not a string", tabs[i].name, (int)c + 1);
            cols[c] = lua_tolstring(L, -1, &len);
            if (strlen(cols[c]) != len) return luaL_error(L, "import_sqlite: %s: column %d holds a NUL byte", tabs[i].name, (int)c + 1);
            lua_rawseti(L, 9, (int)mr_rawlen(L, 9) + 1);
            bools[c] = 0;
            if (lua_type(L, kidx) == LUA_TTABLE) {
                lua_getfield(L, kidx, cols[c]);
                bools[c] = lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "bool") == 0;
                lua_pop(L, 1);
            }
        }
        tabs[i].ncols = nc;
        tabs[i].cols = cols;
        tabs[i].bools = bools;
        lua_settop(L, 9);
    }
    progress_ctx p = {L, 6, 7, 0, 0};
    uint64_t commits = 0;
    d->busy++;
    int rc = moraine_import_sqlite(d->db, path, tmpdir, tabs, n, flags, lua_isnil(L, 6) ? NULL : progress_cb, &p, &commits);
    d->busy--;
    if (rc < 0)
        lua_pushstring(L, moraine_errmsg());
    if (p.failed) {
        lua_pushvalue(L, 7);
        return lua_error(L);
    }
    if (rc < 0)
        return raise_top(L, rc);
    if (rc == 1) {
        lua_pushboolean(L, 0);
        return 1;
    }
    push_int64(L, (int64_t)commits);
    return 1;
}

/* ---- checking an import without a catalog ------------------------------------------ */

/* core.import_ndjson_check(dir) -> true: moraine_import_ndjson_check */
int l_import_ndjson_check(lua_State *L)
{
    const char *dir = check_cstr(L, 1);
    int rc = moraine_import_ndjson_check(dir, NULL, NULL);
    if (rc != 0) return raise_engine(L, rc);
    lua_pushboolean(L, 1);
    return 1;
}

typedef struct {
    moraine_import_check *c; /* NULL once ended */
} lcheck;

static lcheck *check_checker(lua_State *L)
{
    lcheck *k = (lcheck *)luaL_checkudata(L, 1, MT_ICHECK);
    if (!k->c) luaL_error(L, "import check already finished");
    return k;
}

/* core.import_check() -> checker: moraine_import_check_begin */
int l_import_check_new(lua_State *L)
{
    lcheck *k = (lcheck *)lua_newuserdata(L, sizeof *k);
    k->c = NULL;
    luaL_getmetatable(L, MT_ICHECK);
    lua_setmetatable(L, -2);
    int rc = moraine_import_check_begin(&k->c);
    if (rc != 0) return raise_engine(L, rc);
    return 1;
}

/* checker:add(name, columns, rows) -> true: moraine_import_check_add of
 * table @name, @columns an array of column names, @rows an array of rows
 * keyed by column name (a missing value, nil, is NULL), as moraine.sync_source
 * gives them */
int l_import_check_add(lua_State *L)
{
    lcheck *k = check_checker(L);
    const char *name = check_cstr(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    luaL_checktype(L, 4, LUA_TTABLE);
    lua_settop(L, 4);
    size_t ncols = (size_t)mr_rawlen(L, 3), nrows = (size_t)mr_rawlen(L, 4);
    const char **names = (const char **)scratch(L, ncols, sizeof *names); /* 5 */
    for (size_t c = 0; c < ncols; c++) {
        lua_rawgeti(L, 3, (int)c + 1);
        size_t len;
        if (lua_type(L, -1) != LUA_TSTRING)
            raise_errf(L, MORAINE_EINVAL, "import check: %s: column name %d is not a string", name, (int)c + 1);
        names[c] = lua_tolstring(L, -1, &len); /* referenced by @columns */
        if (strlen(names[c]) != len)
            raise_errf(L, MORAINE_EINVAL, "import check: %s: column name %d contains a NUL byte", name, (int)c + 1);
        lua_pop(L, 1);
    }
    if (ncols && nrows > SIZE_MAX / sizeof(moraine_value) / ncols)
        raise_errf(L, MORAINE_ENOMEM, "import check: %s: too many rows", name);
    moraine_value *vals = (moraine_value *)scratch(L, nrows * ncols, sizeof *vals); /* 6 */
    for (size_t r = 0; r < nrows; r++) {
        lua_rawgeti(L, 4, (int)r + 1);
        if (lua_type(L, -1) != LUA_TTABLE)
            raise_errf(L, MORAINE_EINVAL, "import check: %s row %d: a row must be a table, got %s", name, (int)r + 1,
                       luaL_typename(L, -1));
        for (size_t c = 0; c < ncols; c++) {
            lua_getfield(L, -1, names[c]);
            if (lua_isnil(L, -1)) {
                memset(&vals[r * ncols + c], 0, sizeof vals[0]);
                vals[r * ncols + c].type = MORAINE_NULL;
            } else {
                import_value(L, -1, &vals[r * ncols + c], name, r + 1, names[c]);
            }
            lua_pop(L, 1); /* the value stays referenced by the row */
        }
        lua_pop(L, 1);
    }
    moraine_import_table t = {name, ncols, names, nrows, vals};
    int rc = moraine_import_check_add(k->c, &t);
    if (rc != 0) return raise_engine(L, rc);
    lua_pushboolean(L, 1);
    return 1;
}

/* checker:finish() -> true: moraine_import_check_end (the checker is spent) */
int l_import_check_finish(lua_State *L)
{
    lcheck *k = check_checker(L);
    moraine_import_check *c = k->c;
    k->c = NULL;
    int rc = moraine_import_check_end(c);
    if (rc != 0) return raise_engine(L, rc);
    lua_pushboolean(L, 1);
    return 1;
}

int l_import_check_gc(lua_State *L)
{
    lcheck *k = (lcheck *)luaL_checkudata(L, 1, MT_ICHECK);
    if (k->c) moraine_import_check_end(k->c);
    k->c = NULL;
    return 0;
}

/* core.column_type(table, column) -> "bigint" | "varchar" | "boolean" | "any":
 * moraine_known_column_type, the type moraine gives column @column of
 * DuckLake's table @table ("any": a table or column it does not know) */
int l_column_type(lua_State *L)
{
    const char *table = check_cstr(L, 1), *column = check_cstr(L, 2);
    switch (moraine_known_column_type(table, column)) {
    case MORAINE_COL_BIGINT: lua_pushliteral(L, "bigint"); break;
    case MORAINE_COL_VARCHAR: lua_pushliteral(L, "varchar"); break;
    case MORAINE_COL_BOOLEAN: lua_pushliteral(L, "boolean"); break;
    default: lua_pushliteral(L, "any"); break;
    }
    return 1;
}

/* core.required_tables(version) -> {name, ...}: the tables every DuckLake
 * catalog of @version (a string, or nil: 0.1's) has (moraine_required_table). */
int l_required_tables(lua_State *L)
{
    const char *version = luaL_optstring(L, 1, NULL);
    lua_newtable(L);
    const char *name;
    for (size_t i = 0; (name = moraine_required_table(version, i)); i++) {
        lua_pushstring(L, name);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
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

/* The verify calls' shared body: @d the catalog (db:verify), or NULL and
 * @path (moraine.verify_path: the check runs in a child process). The options
 * table is at slot 2; returns the array of {key =, problem =}. */
static int verify_call(lua_State *L, ldb *d, const char *path)
{
    lua_settop(L, 2);
    push_progress_opt(L, 2);                   /* 3 */
    lua_pushnil(L);                            /* 4: error slot */
    lua_newtable(L);                           /* 5: result */
    lua_pushcfunction(L, verify_append);       /* 6 */
    luaL_checkstack(L, 8, NULL);
    collect_ctx c = {{L, 3, 4, 0, 0}, 5, 6};
    moraine_progress_fn pf = lua_isnil(L, 3) ? NULL : progress_cb;
    int rc;
    if (d) {
        d->busy++;
        rc = moraine_verify(d->db, verify_report, &c, pf, &c.p);
        d->busy--;
    } else {
        rc = moraine_verify_path(path, verify_report, &c, pf, &c.p);
    }
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

/* db:verify(opts) -> array of {key =, problem =} */
int l_db_verify(lua_State *L)
{
    return verify_call(L, check_db(L, 1), NULL);
}

/* moraine.verify_path(path, opts) -> array of {key =, problem =}: verify
 * run in a child process (moraine_verify_path). */
int l_verify_path(lua_State *L)
{
    return verify_call(L, NULL, check_cstr(L, 1));
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
int l_db_stats(lua_State *L)
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
int l_db_store_access(lua_State *L)
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

/* db:path_in_catalog(path) -> boolean (moraine_path_in_catalog): whether
 * writing @path would touch the catalog's own files (see moraine.luadoc) */
int l_db_path_in_catalog(lua_State *L)
{
    ldb *d = check_db(L, 1);
    const char *path = check_cstr(L, 2);
    int inside = 0;
    int rc = moraine_path_in_catalog(d->db, path, &inside);
    if (rc < 0)
        return raise_engine(L, rc);
    lua_pushboolean(L, inside);
    return 1;
}

/* core.create_temp_file(path, private) -> name: creates a new empty file
 * named @path .. ".tmp-" and six random letters or digits, beside @path,
 * exclusively (O_EXCL: never a file another writer made or is writing, so
 * two writers of one @path never share their temporary file), mode 0600
 * when @private is true (whatever is written into it next is never readable
 * by others: an export holding keys), else 0666 less the umask. Raises EIO
 * naming @path when no such file can be created. */
int l_create_temp_file(lua_State *L)
{
    size_t n;
    const char *path = check_cstr(L, 1);
    int private = lua_toboolean(L, 2);
    lua_tolstring(L, 1, &n);
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    char *name = (char *)lua_newuserdata(L, n + 12); /* path ".tmp-" XXXXXX NUL, freed by the GC */
    memcpy(name, path, n);
    memcpy(name + n, ".tmp-", 5);
    name[n + 11] = 0;
    for (int tries = 0; tries < 100; tries++) {
        unsigned char r[6];
        if (getentropy(r, sizeof r) != 0)
            return raise_errf(L, MORAINE_EIO, "cannot write %s: cannot make a temporary name: %s", path, strerror(errno));
        for (int i = 0; i < 6; i++)
            name[n + 5 + i] = letters[r[i] % (sizeof letters - 1)];
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, private ? 0600 : 0666);
        if (fd >= 0) {
            close(fd);
            lua_pushlstring(L, name, n + 11);
            return 1;
        }
        if (errno != EEXIST)
            return raise_errf(L, MORAINE_EIO, "cannot write %s: cannot create %s: %s", path, name, strerror(errno));
    }
    return raise_errf(L, MORAINE_EIO, "cannot write %s: cannot create a temporary file beside it: 100 names taken", path);
}

/* core.sync_path(path) -> true: fsync(2) of file or directory @path: what
 * was written into the file (or the names made or renamed in the directory)
 * is on the disk when it returns. Raises EIO naming @path. */
int l_sync_path(lua_State *L)
{
    const char *path = check_cstr(L, 1);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return raise_errf(L, MORAINE_EIO, "%s: cannot sync: %s", path, strerror(e));
    }
    close(fd);
    lua_pushboolean(L, 1);
    return 1;
}

/* db:compact(dest, {progress = fn}) -> {entries =, src_bytes =, dest_bytes =, txnid =} (moraine_compact) */
int l_db_compact(lua_State *L)
{
    ldb *d = check_db(L, 1);
    const char *dest = check_cstr(L, 2);
    lua_settop(L, 3);
    push_progress_opt(L, 3); /* 4 */
    lua_pushnil(L);          /* 5: error slot */
    progress_ctx p = {L, 4, 5, 0, 0};
    moraine_compact_info info;
    d->busy++;
    int rc = moraine_compact(d->db, dest, &info, lua_isnil(L, 4) ? NULL : progress_cb, &p);
    d->busy--;
    if (rc != 0)
        lua_pushstring(L, moraine_errmsg());
    if (p.failed) {
        lua_pushvalue(L, 5);
        return lua_error(L);
    }
    if (rc != 0)
        return raise_top(L, rc);
    lua_createtable(L, 0, 3);
    push_int64(L, (int64_t)info.entries);
    lua_setfield(L, -2, "entries");
    push_int64(L, (int64_t)info.src_bytes);
    lua_setfield(L, -2, "src_bytes");
    push_int64(L, (int64_t)info.dest_bytes);
    lua_setfield(L, -2, "dest_bytes");
    push_int64(L, (int64_t)info.txnid);
    lua_setfield(L, -2, "txnid");
    return 1;
}

/* db:open_elsewhere() -> pid or false (moraine_open_elsewhere) */
int l_db_open_elsewhere(lua_State *L)
{
    ldb *d = check_db(L, 1);
    long pid = 0;
    int rc = moraine_open_elsewhere(d->db, &pid);
    if (rc < 0)
        return raise_engine(L, rc);
    if (rc == 0)
        lua_pushboolean(L, 0);
    else
        lua_pushinteger(L, (lua_Integer)pid);
    return 1;
}

/* db:last_txnid() -> integer (moraine_last_txnid) */
int l_db_last_txnid(lua_State *L)
{
    ldb *d = check_db(L, 1);
    uint64_t id = 0;
    int rc = moraine_last_txnid(d->db, &id);
    if (rc < 0)
        return raise_engine(L, rc);
    push_int64(L, (int64_t)id);
    return 1;
}

/* core.rename_exchange(a, b) -> true, or false and a reason when the system
 * or the file system cannot exchange (renameat2 RENAME_EXCHANGE: ENOSYS,
 * EINVAL); swaps the names @a and @b in one step, so a kill leaves one or
 * the other, never neither. Raises EIO naming both for any other failure. */
/* moraine.core.flush_stdout() -> true once everything written to standard
 * output reached it (fflush(3) and no write error since the start: ferror),
 * else nil and the reason: a full disk or a closed pipe must not look like
 * success (the moraine command's exit status). */
int l_flush_stdout(lua_State *L)
{
    errno = 0;
    int bad = fflush(stdout) != 0;
    int e = errno;
    if (!bad && !ferror(stdout)) {
        lua_pushboolean(L, 1);
        return 1;
    }
    lua_pushnil(L);
    lua_pushstring(L, e ? strerror(e) : "a write failed");
    return 2;
}

/* moraine.core.lock_dir(path) -> a lock, or nil and the reason ("busy" when
 * another process, or another lock of this one, holds it): an exclusive,
 * non-blocking flock(2) on directory @path, held until lock:release() or the
 * lock is collected (or the process ends). moraine.compact takes the lock of
 * a catalog's parent directory, so two compactions beside each other do not
 * finish or remove each other's copies. */
int l_lock_dir(lua_State *L)
{
    const char *p = check_cstr(L, 1);
    int *fd = (int *)lua_newuserdata(L, sizeof *fd);
    *fd = -1;
    luaL_getmetatable(L, MT_DIRLOCK);
    lua_setmetatable(L, -2);
    *fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*fd < 0) {
        lua_pushnil(L);
        lua_pushstring(L, strerror(errno));
        return 2;
    }
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(*fd);
        *fd = -1;
        lua_pushnil(L);
        lua_pushstring(L, e == EWOULDBLOCK ? "busy" : strerror(e));
        return 2;
    }
    return 1;
}

int l_dirlock_release(lua_State *L)
{
    int *fd = (int *)luaL_checkudata(L, 1, MT_DIRLOCK);
    if (*fd >= 0) {
        close(*fd); /* releases the flock */
        *fd = -1;
    }
    return 0;
}

/* moraine.core.realpath(path) -> the canonical absolute path of an existing
 * @path (symbolic links resolved: realpath(3)), or nil and the reason. */
int l_realpath(lua_State *L)
{
    const char *p = check_cstr(L, 1);
    char *r = realpath(p, NULL);
    if (!r) {
        lua_pushnil(L);
        lua_pushstring(L, strerror(errno));
        return 2;
    }
    lua_pushstring(L, r);
    free(r);
    return 1;
}

int l_rename_exchange(lua_State *L)
{
    const char *a = check_cstr(L, 1), *b = check_cstr(L, 2);
#ifdef RENAME_EXCHANGE
    if (renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0) {
        lua_pushboolean(L, 1);
        return 1;
    }
    int e = errno;
    if (e != ENOSYS && e != EINVAL)
        return raise_errf(L, MORAINE_EIO, "cannot exchange %s and %s: %s", a, b, strerror(e));
    lua_pushboolean(L, 0);
    lua_pushstring(L, strerror(e));
#else
    (void)a;
    (void)b;
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "renameat2 RENAME_EXCHANGE is not available");
#endif
    return 2;
}
