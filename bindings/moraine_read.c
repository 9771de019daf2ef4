/*
 * moraine_read.c — read transactions (moraine.read) and cursors
 * (moraine.cursor): db:read, db:scan and the read methods scan, files,
 * scan_json, secret_count, partition_spec, sort_spec, partition_spec_by_id,
 * table_id, snapshot (files_batch and scan_columns: moraine_batch.c).
 */
#include <stdlib.h>

#include "moraine_binding.h"

/* ---- reads -------------------------------------------------------------------- */
static lread *new_read(lua_State *L, ldb *d, int db_idx)
{
    lread *r = (lread *)new_handle(L, sizeof *r, MT_READ, db_idx);
    r->owner = d;
    db_still_open(L, d); /* the allocation may have run a finalizer that closed it */
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

lread *check_read(lua_State *L, int idx)
{
    lread *r = (lread *)luaL_checkudata(L, idx, MT_READ);
    if (r->rd == NULL)
        raise_errf(L, MORAINE_ETXN, "read transaction is closed (use it only inside the read function)");
    return r;
}

int l_read_gc(lua_State *L)
{
    lread *r = (lread *)lua_touserdata(L, 1);
    if (r)
        read_close(r);
    return 0;
}

int l_read_tostring(lua_State *L)
{
    lread *r = (lread *)luaL_checkudata(L, 1, MT_READ);
    lua_pushstring(L, r->rd ? "moraine.read (open)" : "moraine.read (closed)");
    return 1;
}

/* The snapshot a read uses when none is given: its newest; INT64_MAX (live
 * rows) when the catalog has none yet. */
int64_t default_snapshot(lua_State *L, lread *r)
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

/* Whether integer cell @v lies in (lo, hi]. */
static int in_range(const moraine_value *v, int64_t lo, int64_t hi) { return v->type == MORAINE_INT && v->i > lo && v->i <= hi; }

/* rd:scan's `changed` filter @f: whether @row began or ended in (lo, hi]
 * (a version visible at one end of the range and not at the other must have;
 * one that began and ended inside it was visible at neither). A relation
 * without begin_snapshot (nor snapshot_id) has no versions to tell apart:
 * every row passes. */
static int changed(const lfilter *f, const moraine_row *row)
{
    const moraine_relation_info *ri = row->rel;
    int b = ri->begin_col, e = ri->end_col;
    if (b < 0 && ri->placement == MORAINE_PLACE_SNAPSHOT)
        b = moraine_column_index(ri, "snapshot_id");
    if (b < 0 || (size_t)b >= row->ncols)
        return 1;
    if (in_range(&row->vals[b], f->lo, f->hi))
        return 1;
    return e >= 0 && (size_t)e < row->ncols && in_range(&row->vals[e], f->lo, f->hi);
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
    int rc;
    while ((rc = moraine_cursor_next(c->cur, &row)) == 1 && c->changed.on && !changed(&c->changed, &row)) {
    }
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

/* The catalog a cursor's step counts its call in (moraine_core.c,
 * counted_call): its read's, while the read is open; else NULL. */
static ldb *step_owner(const lcursor *c) { return c->owner && c->owner->rd ? c->owner->owner : NULL; }

static int l_scan_iter(lua_State *L)
{
    lcursor *c = (lcursor *)lua_touserdata(L, lua_upvalueindex(1));
    ldb *d = step_owner(c);
    const int saved = d ? d->calls++ : 0;
    int n = cursor_step(L, c);
    if (d)
        d->calls = saved;
    if (n == 0) {
        lua_pushnil(L);
        return 1;
    }
    return n;
}

int l_cursor_gc(lua_State *L)
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

/* Reads the scan options table at idx: {at = S, table_id = T, changed = {S1, S2}}
 * (@chg NULL: no `changed` option is taken). */
static void scan_opts(lua_State *L, lread *r, int idx, int64_t *scope, int64_t *at, lfilter *chg)
{
    *scope = MORAINE_ANY_SCOPE;
    int have_at = 0;
    if (!lua_isnoneornil(L, idx)) {
        luaL_checktype(L, idx, LUA_TTABLE);
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            lua_pop(L, 1);
            const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
            if (!k || (strcmp(k, "at") != 0 && strcmp(k, "table_id") != 0 && (!chg || strcmp(k, "changed") != 0)))
                raise_errf(L, MORAINE_EINVAL, chg ? "scan: unknown option '%s' (expected 'at', 'table_id' or 'changed')"
                                                  : "scan: unknown option '%s' (expected 'at' or 'table_id')",
                           k ? k : luaL_typename(L, -1));
        }
        if (chg) {
            lua_getfield(L, idx, "changed");
            if (!lua_isnil(L, -1)) {
                int64_t s1, s2;
                int ok = lua_type(L, -1) == LUA_TTABLE;
                if (ok) {
                    lua_rawgeti(L, -1, 1);
                    lua_rawgeti(L, -2, 2);
                    lua_rawgeti(L, -3, 3);
                    ok = to_int64(L, -3, &s1) && to_int64(L, -2, &s2) && lua_isnil(L, -1);
                    lua_pop(L, 3);
                }
                if (!ok)
                    raise_errf(L, MORAINE_EINVAL, "scan: option 'changed' must be {S1, S2}, two integer snapshot ids");
                chg->on = 1;
                chg->lo = s1 < s2 ? s1 : s2;
                chg->hi = s1 < s2 ? s2 : s1;
            }
            lua_pop(L, 1);
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
        if (!lua_isnil(L, -1)) check_table_scope(L, *scope, "scan");
        lua_pop(L, 1);
    }
    if (!have_at)
        *at = default_snapshot(L, r);
}

static int push_scan(lua_State *L, lread *r, const char *name, int64_t scope, int64_t at, lfilter changed)
{
    lcursor *c = open_cursor(L, r, 1, name, scope, at);
    c->changed = changed;
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
    lfilter changed = {0};
    scan_opts(L, r, 3, &scope, &at, &changed);
    lua_settop(L, 3);
    return push_scan(L, r, name, scope, at, changed);
}

/* rd:files(T, S): rd:scan("ducklake_data_file", {at = S, table_id = T}) */
static int l_read_files(lua_State *L)
{
    lread *r = check_read(L, 1);
    int64_t scope = opt_int(L, 2, MORAINE_ANY_SCOPE);
    if (!lua_isnoneornil(L, 2)) check_table_scope(L, scope, "files");
    int64_t at = lua_isnoneornil(L, 3) ? default_snapshot(L, r) : check_int(L, 3);
    lua_settop(L, 3);
    return push_scan(L, r, "ducklake_data_file", scope, at, (lfilter){0});
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
        if (!lua_isnil(L, -1)) check_table_scope(L, scope, "scan_json");
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

/* rd:snapshot(id) -> the ducklake_snapshot row of snapshot id and its
 * children ({ducklake_snapshot_changes = {...}}), or nil when there is no
 * such row (moraine_read_snapshot: one key lookup; id nil is the read's
 * newest snapshot, as DuckLake's ATTACH reads MAX(snapshot_id)) */
static int l_read_snapshot(lua_State *L)
{
    lread *r = check_read(L, 1);
    int64_t id;
    if (lua_isnoneornil(L, 2)) {
        int rc = moraine_read_last_snapshot(r->rd, &id);
        if (rc < 0) return raise_engine(L, rc);
        if (rc == 0) {
            lua_pushnil(L);
            return 1;
        }
    } else if (!to_int64(L, 2, &id)) {
        return raise_errf(L, MORAINE_EINVAL, "snapshot: the snapshot id must be an integer or nil, got %s",
                          lua_type(L, 2) == LUA_TNUMBER ? "a number with no exact int64 value" : luaL_typename(L, 2));
    }
    moraine_row row;
    int rc = moraine_read_snapshot(r->rd, id, &row);
    if (rc < 0) return raise_engine(L, rc);
    if (rc == 0) {
        lua_pushnil(L);
        return 1;
    }
    luaL_checkstack(L, 8, NULL);
    push_row(L, &row);
    push_children(L, r, &r->ch, &r->ch_active, &row, NULL);
    return 2;
}

/* rd:table_id(schema, name, S) -> table_id, or nil and the message when no
 * such table at S (moraine_table_id_at; schema nil is "main", S nil the newest) */
static int l_read_table_id(lua_State *L)
{
    lread *r = check_read(L, 1);
    const char *schema = NULL;
    if (!lua_isnoneornil(L, 2)) {
        if (lua_type(L, 2) != LUA_TSTRING) return raise_errf(L, MORAINE_EINVAL, "table_id: schema must be a string or nil, got %s", luaL_typename(L, 2));
        schema = nul_free(L, 2, "table_id: the schema name");
    }
    if (lua_type(L, 3) != LUA_TSTRING) return raise_errf(L, MORAINE_EINVAL, "table_id: the table name must be a string, got %s", luaL_typename(L, 3));
    const char *name = nul_free(L, 3, "table_id: the table name");
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
int l_db_read(lua_State *L)
{
    ldb *d = check_db(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_settop(L, 2);
    lread *r = new_read(L, d, 1); /* 3 */
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    const int calls = d->calls;
    int rc = lua_pcall(L, 1, LUA_MULTRET, 0);
    d->calls = calls; /* a call on the read that raised left itself counted */
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
    lfilter changed = {0};
    scan_opts(L, r, 3, &scope, &at, &changed);
    lua_settop(L, 3);
    lcursor *c = open_cursor(L, r, 1, name, scope, at); /* 4 */
    c->changed = changed;
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
int l_db_scan(lua_State *L)
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
    const int calls = d->calls++; /* scan_collect is a call on the read (moraine_core.c, counted_call) */
    int rc = lua_pcall(L, 3, 1, 0);
    d->calls = calls;
    read_close(r);
    if (rc != LUA_OK)
        return lua_error(L);
    return 1;
}

/* files_batch and scan_columns: moraine_batch.c */
const luaL_Reg read_methods[] = {{"last_snapshot", l_read_last_snapshot},
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
                                        {"snapshot", l_read_snapshot},
                                        {NULL, NULL}};
