/*
 * moraine_batch.c — rd:files_batch, the batch read of a table's data files
 * as column arrays, and rd:scan_columns (helpers: moraine_binding.h).
 *
 * One call walks the table's files at S through moraine_scan_project (only
 * the columns and child rows asked for are decoded) and fills one Lua array
 * per column: no table per file, no field names per cell. Delete files are
 * read through a second projected cursor, merged by data_file_id.
 */

#include "moraine_binding.h"

#define MB_MAX_PV 64     /* partition key indexes 0..63 */
#define MB_MAX_STATS 256 /* columns with stats in one answer */
#define MB_MAX_COLS 64   /* columns asked of a data file, a stats row or a delete file */

/* One value of a batch, as bindings/moraine.lua's FFI cdef reads it (keep
 * the two the same): the value's type (moraine_type, or MB_ABSENT when the
 * file has no such row), its integer/boolean/double, or its bytes by pointer
 * into the read transaction's pages (zero-copy: valid while the read is open). */
typedef struct {
    union {
        int64_t i;
        double d;
        const char *s;
    } v;
    uint32_t len;
    int32_t type;
} mb_cell;
#define MB_ABSENT (-1)

/* The arrays of one batch: narr arrays of cap cells each, cells not written
 * MB_ABSENT. A userdata (MT_BATCH) owns it, so an error raised mid-scan frees
 * it by the collector; raw batches keep it while their columns live. */
typedef struct {
    mb_cell **arr;
    int narr, arrcap;
    size_t cap;
} mb_buf;

static void mb_absent(mb_cell *c, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        c[i].v.i = 0;
        c[i].len = 0;
        c[i].type = MB_ABSENT;
    }
}

static void mb_free(mb_buf *b)
{
    for (int i = 0; i < b->narr; i++)
        free(b->arr[i]);
    free(b->arr);
    b->arr = NULL;
    b->narr = b->arrcap = 0;
}

/* __gc of MT_BATCH */
int l_batch_gc(lua_State *L)
{
    mb_buf *b = (mb_buf *)lua_touserdata(L, 1);
    if (b)
        mb_free(b);
    return 0;
}

/* Adds an array of cap absent cells to @b; returns its index. ENOMEM raised. */
static int mb_add(lua_State *L, mb_buf *b)
{
    if (b->narr == b->arrcap) {
        int nc = b->arrcap ? 2 * b->arrcap : 32;
        mb_cell **a = (mb_cell **)realloc(b->arr, (size_t)nc * sizeof *a);
        if (!a)
            return raise_errf(L, MORAINE_ENOMEM, "files_batch: out of memory");
        b->arr = a;
        b->arrcap = nc;
    }
    mb_cell *c = (mb_cell *)malloc(b->cap * sizeof *c);
    if (!c)
        return raise_errf(L, MORAINE_ENOMEM, "files_batch: out of memory");
    mb_absent(c, 0, b->cap);
    b->arr[b->narr] = c;
    return b->narr++;
}

/* Makes every array of @b hold at least @need cells. ENOMEM raised. */
static void mb_reserve(lua_State *L, mb_buf *b, size_t need)
{
    if (need <= b->cap)
        return;
    size_t nc = b->cap * 2 > need ? b->cap * 2 : need;
    for (int i = 0; i < b->narr; i++) {
        mb_cell *c = (mb_cell *)realloc(b->arr[i], nc * sizeof *c);
        if (!c)
            raise_errf(L, MORAINE_ENOMEM, "files_batch: out of memory");
        mb_absent(c, b->cap, nc);
        b->arr[i] = c;
    }
    b->cap = nc;
}

/* Writes @v into cell @c (strings by pointer). */
static void mb_put(lua_State *L, mb_cell *c, const moraine_value *v)
{
    c->type = (int32_t)v->type;
    c->len = 0;
    switch (v->type) {
    case MORAINE_STR:
    case MORAINE_JSON:
        if (v->len > UINT32_MAX)
            raise_errf(L, MORAINE_EINVAL, "files_batch: a value of more than 4 GiB");
        c->v.s = v->len ? v->s : "";
        c->len = (uint32_t)v->len;
        break;
    case MORAINE_REAL:
        c->v.d = v->d;
        break;
    default:
        c->v.i = v->i;
    }
}

/* Pushes cell @c as rd:files_batch's arrays hold it: false when absent. */
static void mb_push(lua_State *L, const mb_cell *c)
{
    if (c->type == MB_ABSENT) {
        lua_pushboolean(L, 0);
        return;
    }
    moraine_value v;
    memset(&v, 0, sizeof v);
    v.type = (moraine_type)c->type;
    if (c->type == MORAINE_STR || c->type == MORAINE_JSON) {
        v.s = c->v.s;
        v.len = c->len;
    } else if (c->type == MORAINE_REAL) {
        v.d = c->v.d;
    } else {
        v.i = c->v.i;
    }
    push_value(L, &v);
}

/* Pushes array @k of @b's first @n cells: a Lua array, or (@raw) the
 * cells' address, which moraine.lua's FFI wrapper turns into a column. */
static void mb_push_array(lua_State *L, const mb_buf *b, int k, lua_Integer n, int raw)
{
    if (raw) {
        lua_pushlightuserdata(L, b->arr[k]);
        return;
    }
    lua_createtable(L, (int)n, 0);
    for (lua_Integer i = 0; i < n; i++) {
        mb_push(L, &b->arr[k][i]);
        lua_rawseti(L, -2, (int)(i + 1));
    }
}

/* Reads an optional array of strings at field @key of the table at @opt into
 * @out (at most MB_MAX_COLS); returns the count, or -1 when the field is nil. */
static int mb_names(lua_State *L, int opt, const char *key, const char **out)
{
    lua_getfield(L, opt, key);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return -1;
    }
    if (lua_type(L, -1) != LUA_TTABLE)
        raise_errf(L, MORAINE_EINVAL, "files_batch: option '%s' must be an array of column names", key);
    int n = (int)mr_rawlen(L, -1);
    if (n > MB_MAX_COLS)
        raise_errf(L, MORAINE_EINVAL, "files_batch: option '%s' names %d columns (at most %d)", key, n, MB_MAX_COLS);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, -1, i + 1);
        if (lua_type(L, -1) != LUA_TSTRING)
            raise_errf(L, MORAINE_EINVAL, "files_batch: option '%s'[%d] must be a column name", key, i + 1);
        out[i] = nul_free(L, -1, "a column name"); /* anchored by the options table */
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return n;
}

/* core.set_batch_wrap(fn): moraine.lua's FFI wrapper of raw batches (LuaJIT) */
int l_set_batch_wrap(lua_State *L) { return set_registry_hook(L, REG_BATCHWRAP); }

/* rd:files_batch(table_id, at, opts) -> batch (see moraine.luadoc) */
int l_read_files_batch(lua_State *L)
{
    lread *r = check_read(L, 1);
    int64_t table_id = check_int(L, 2);
    check_table_scope(L, table_id, "files_batch");
    int64_t at = lua_isnoneornil(L, 3) ? default_snapshot(L, r) : check_int(L, 3);
    if (!lua_isnoneornil(L, 4))
        luaL_checktype(L, 4, LUA_TTABLE);
    else {
        lua_settop(L, 3);
        lua_newtable(L);
    }
    lua_settop(L, 4);
    const int opt = 4;
    /* known options only */
    lua_pushnil(L);
    while (lua_next(L, opt)) {
        lua_pop(L, 1);
        const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        static const char *const known[] = {"columns", "partition_values", "stats", "stats_columns", "delete_files", "raw", NULL};
        int ok = 0;
        for (int i = 0; k && known[i]; i++)
            if (strcmp(k, known[i]) == 0)
                ok = 1;
        if (!k)
            raise_errf(L, MORAINE_EINVAL, "files_batch: options are named (a table of name = value), got a %s key",
                       luaL_typename(L, -1));
        if (!ok)
            raise_errf(L, MORAINE_EINVAL,
                       "files_batch: unknown option '%s' (expected columns, partition_values, stats, stats_columns, delete_files, raw)", k);
    }
    /* raw: the cells themselves, for LuaJIT's FFI (moraine.lua wraps them) */
    lua_getfield(L, opt, "raw");
    int raw = lua_toboolean(L, -1);
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TBOOLEAN)
        raise_errf(L, MORAINE_EINVAL, "files_batch: option 'raw' must be a boolean");
    lua_pop(L, 1);
    if (raw) {
        lua_getfield(L, LUA_REGISTRYINDEX, REG_BATCHWRAP);
        int have = lua_type(L, -1) == LUA_TFUNCTION;
        lua_pop(L, 1);
        if (!have)
            raise_errf(L, MORAINE_EINVAL, "files_batch: option 'raw' needs LuaJIT's FFI");
    }
    const char *cols[MB_MAX_COLS + 1], *stcols[MB_MAX_COLS + 1], *delcols[MB_MAX_COLS + 1];
    int ncols = mb_names(L, opt, "columns", cols);
    moraine_relation_info df;
    if (moraine_relation(r->owner->db, "ducklake_data_file", &df) != 0)
        return raise_engine(L, MORAINE_ENOTFOUND);
    if (ncols < 0) {
        if (df.ncols > MB_MAX_COLS)
            raise_errf(L, MORAINE_EINVAL, "files_batch: ducklake_data_file has %d columns: name the ones wanted", (int)df.ncols);
        ncols = (int)df.ncols;
        for (int i = 0; i < ncols; i++)
            cols[i] = df.colnames[i];
    }
    /* data_file_id rides along (last) when not asked: the delete files are merged on it */
    int idcol = -1;
    for (int i = 0; i < ncols; i++)
        if (strcmp(cols[i], "data_file_id") == 0)
            idcol = i;
    int nproj = ncols;
    if (idcol < 0) {
        cols[nproj] = "data_file_id";
        idcol = nproj++;
    }
    lua_getfield(L, opt, "partition_values");
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TBOOLEAN)
        raise_errf(L, MORAINE_EINVAL, "files_batch: option 'partition_values' must be a boolean");
    int want_pv = lua_isnil(L, -1) ? 1 : lua_toboolean(L, -1);
    lua_pop(L, 1);
    /* stats: nil/false none, true every column, or an array of column_ids */
    int64_t ids[MB_MAX_STATS];
    int nids = 0, all_stats = 0, want_st = 0;
    lua_getfield(L, opt, "stats");
    if (lua_type(L, -1) == LUA_TBOOLEAN) {
        all_stats = want_st = lua_toboolean(L, -1);
    } else if (lua_type(L, -1) == LUA_TTABLE) {
        want_st = 1;
        nids = (int)mr_rawlen(L, -1);
        if (nids > MB_MAX_STATS)
            raise_errf(L, MORAINE_EINVAL, "files_batch: option 'stats' names %d columns (at most %d)", nids, MB_MAX_STATS);
        for (int i = 0; i < nids; i++) {
            lua_rawgeti(L, -1, i + 1);
            if (!to_int64(L, -1, &ids[i]))
                raise_errf(L, MORAINE_EINVAL, "files_batch: option 'stats'[%d] must be an integer column_id", i + 1);
            lua_pop(L, 1);
        }
    } else if (!lua_isnil(L, -1)) {
        raise_errf(L, MORAINE_EINVAL, "files_batch: option 'stats' must be true or an array of column_ids");
    }
    lua_pop(L, 1);
    /* the child projections lead with column_id / data_file_id (the batch
     * needs them); a name asked for is read from its place there */
    const char *stnames[MB_MAX_COLS], *delnames[MB_MAX_COLS];
    int stpos[MB_MAX_COLS], delpos[MB_MAX_COLS];
    int nstc = mb_names(L, opt, "stats_columns", stnames);
    if (nstc < 0) {
        stnames[0] = "min_value";
        stnames[1] = "max_value";
        nstc = 2;
    }
    int nstp = 1;
    stcols[0] = "column_id";
    for (int c = 0; c < nstc; c++) {
        if (strcmp(stnames[c], "column_id") == 0)
            stpos[c] = 0;
        else {
            stpos[c] = nstp;
            stcols[nstp++] = stnames[c];
        }
    }
    int ndel = mb_names(L, opt, "delete_files", delnames);
    int ndelp = 1;
    delcols[0] = "data_file_id";
    for (int c = 0; c < ndel; c++) {
        if (strcmp(delnames[c], "data_file_id") == 0)
            delpos[c] = 0;
        else {
            delpos[c] = ndelp;
            delcols[ndelp++] = delnames[c];
        }
    }

    moraine_child_projection kids[2];
    size_t nkids = 0;
    int pv_kid = -1, st_kid = -1;
    static const char *const pvcols[] = {"partition_key_index", "partition_value"};
    if (want_pv) {
        pv_kid = (int)nkids;
        kids[nkids++] = (moraine_child_projection){"ducklake_file_partition_value", pvcols, 2, NULL, NULL, 0};
    }
    if (want_st) {
        /* DuckLake before 0.3 named the table ducklake_file_column_statistics (moraine upgrade renames it) */
        moraine_relation_info old;
        if (moraine_relation(r->owner->db, "ducklake_file_column_stats", &old) == MORAINE_ENOTFOUND &&
            moraine_relation(r->owner->db, "ducklake_file_column_statistics", &old) == 0)
            raise_errf(L, MORAINE_ENOTFOUND,
                       "files_batch: this catalog keeps column stats in ducklake_file_column_statistics (DuckLake before 0.3): "
                       "run 'moraine upgrade' to read them here, or read them through rd:files");
        st_kid = (int)nkids;
        kids[nkids++] = (moraine_child_projection){"ducklake_file_column_stats", stcols, (size_t)nstp, all_stats ? NULL : "column_id",
                                                   ids, (size_t)nids};
    }
    moraine_projection fp = {cols, (size_t)nproj, kids, nkids};
    moraine_cursor *fc = NULL, *dc = NULL;
    int rc = moraine_scan_project(r->rd, "ducklake_data_file", table_id, at, &fp, &fc);
    if (rc)
        return raise_engine(L, rc);
    if (ndel >= 0) {
        moraine_projection dp = {delcols, (size_t)ndelp, NULL, 0};
        rc = moraine_scan_project(r->rd, "ducklake_delete_file", table_id, at, &dp, &dc);
        if (rc) {
            moraine_cursor_close(fc);
            return raise_engine(L, rc);
        }
    }
    /* the cells: data file columns (arrays 0..ncols-1), delete file columns
     * (ncols..), then partition values and stats arrays as they are met */
    mb_buf *b = (mb_buf *)new_handle(L, sizeof *b, MT_BATCH, 0);
    const int bidx = lua_gettop(L);
    b->cap = 256;
    for (int i = 0; i < ncols + (ndel > 0 ? ndel : 0); i++)
        mb_add(L, b);
    const int dbase = ncols;
    int pvarr[MB_MAX_PV], npv = 0;
    struct {
        int64_t key;
        int arr; /* first of its nstc arrays */
    } sts[MB_MAX_STATS];
    int nst = 0;
    size_t n = 0;
    moraine_row row, del;
    int hd = dc ? moraine_cursor_next(dc, &del) : 0;
    int bad = 0; /* an error to raise once the cursors are closed */
    const char *badmsg = NULL;
    while (hd >= 0 && (rc = moraine_cursor_next(fc, &row)) == 1) {
        mb_reserve(L, b, n + 1);
        for (int i = 0; i < ncols; i++)
            mb_put(L, &b->arr[i][n], &row.vals[i]);
        /* each child projection's rows in one call (moraine_cursor_child_rows) */
        int kr = 0;
        for (size_t g = 0; g < nkids && !bad && kr >= 0; g++) {
            const moraine_value *kv;
            size_t nkr;
            if ((kr = moraine_cursor_child_rows(fc, g, &kv, NULL, &nkr)) < 0)
                break;
            const size_t w = kids[g].ncolumns;
            for (size_t j = 0; j < nkr && !bad; j++) {
                const moraine_value *kid = kv + j * w;
                if ((int)g == pv_kid) {
                    if (kid[0].type != MORAINE_INT || kid[0].i < 0 || kid[0].i >= MB_MAX_PV) {
                        bad = MORAINE_EINVAL;
                        badmsg = "files_batch: partition_key_index outside 0..63";
                        break;
                    }
                    int k = (int)kid[0].i;
                    while (npv <= k) /* a new key index: its array, absent before */
                        pvarr[npv++] = mb_add(L, b);
                    mb_cell *c = &b->arr[pvarr[k]][n];
                    if (c->type == MB_ABSENT) /* a key index twice in one file: the first wins */
                        mb_put(L, c, &kid[1]);
                } else if ((int)g == st_kid) {
                    if (kid[0].type != MORAINE_INT) {
                        bad = MORAINE_EINVAL;
                        badmsg = "files_batch: a column stats row without an integer column_id";
                        break;
                    }
                    int t = 0;
                    while (t < nst && sts[t].key != kid[0].i)
                        t++;
                    if (t == nst) {
                        if (nst == MB_MAX_STATS) {
                            bad = MORAINE_EINVAL;
                            badmsg = "files_batch: stats of more than 256 columns: name the ones wanted";
                            break;
                        }
                        sts[nst].key = kid[0].i;
                        sts[nst].arr = b->narr;
                        for (int c = 0; c < nstc; c++)
                            mb_add(L, b);
                        nst++;
                    }
                    /* a second stats row of one column in one file: the first wins */
                    if (nstc > 0 && b->arr[sts[t].arr][n].type != MB_ABSENT)
                        continue;
                    for (int c = 0; c < nstc; c++)
                        mb_put(L, &b->arr[sts[t].arr + c][n], &kid[stpos[c]]);
                }
            }
        }
        if (bad)
            break;
        if (kr < 0) {
            rc = kr;
            break;
        }
        /* the delete file of this data file (merged by data_file_id); a
         * delete file whose data_file_id is not an integer (NULL) matches no
         * data file and is passed over: it sorts before every integer key
         * and must not hold the merge back from the ones after it */
        if (dc && row.vals[idcol].type == MORAINE_INT) {
            int64_t id = row.vals[idcol].i;
            while (hd == 1 && (del.vals[0].type != MORAINE_INT || del.vals[0].i < id))
                hd = moraine_cursor_next(dc, &del);
            int first = 1;
            while (hd == 1 && del.vals[0].type == MORAINE_INT && del.vals[0].i == id) {
                if (first) {
                    for (int c = 0; c < ndel; c++)
                        mb_put(L, &b->arr[dbase + c][n], &del.vals[delpos[c]]);
                    first = 0;
                }
                hd = moraine_cursor_next(dc, &del);
            }
        }
        n++;
    }
    if (hd < 0)
        rc = hd;
    moraine_cursor_close(fc);
    if (dc)
        moraine_cursor_close(dc);
    if (bad)
        return raise_errf(L, bad, "%s", badmsg);
    if (rc < 0)
        return raise_engine(L, rc);
    /* a column_id asked that no file has stats of: absent arrays */
    for (int j = 0; j < nids && nst < MB_MAX_STATS; j++) {
        int k = 0;
        while (k < nst && sts[k].key != ids[j])
            k++;
        if (k < nst)
            continue;
        sts[nst].key = ids[j];
        sts[nst].arr = b->narr;
        for (int c = 0; c < nstc; c++)
            mb_add(L, b);
        nst++;
    }
    /* the answer */
    lua_createtable(L, 0, 6);
    int res = lua_gettop(L);
    push_int64(L, (int64_t)n);
    lua_setfield(L, res, "n");
    lua_createtable(L, 0, ncols);
    for (int i = 0; i < ncols; i++) {
        mb_push_array(L, b, i, (lua_Integer)n, raw);
        lua_setfield(L, -2, cols[i]);
    }
    lua_setfield(L, res, "file");
    if (want_pv) {
        lua_createtable(L, npv, 0);
        for (int j = 0; j < npv; j++) {
            mb_push_array(L, b, pvarr[j], (lua_Integer)n, raw);
            lua_rawseti(L, -2, j + 1);
        }
        lua_setfield(L, res, "partition_values");
    }
    if (want_st) {
        lua_newtable(L);
        for (int k = 0; k < nst; k++) {
            push_int64(L, sts[k].key);
            lua_createtable(L, 0, nstc);
            for (int c = 0; c < nstc; c++) {
                mb_push_array(L, b, sts[k].arr + c, (lua_Integer)n, raw);
                lua_setfield(L, -2, stnames[c]);
            }
            lua_settable(L, -3);
        }
        lua_setfield(L, res, "stats");
    }
    if (ndel >= 0) {
        lua_createtable(L, 0, ndel);
        for (int c = 0; c < ndel; c++) {
            mb_push_array(L, b, dbase + c, (lua_Integer)n, raw);
            lua_setfield(L, -2, delnames[c]);
        }
        lua_setfield(L, res, "delete_file");
    }
    if (!raw) {
        mb_free(b);
        return 1;
    }
    /* raw: moraine.lua's wrapper makes the columns (FFI), keeping the cells
     * (the userdata) and the read (for its open flag) alive */
    lua_getfield(L, LUA_REGISTRYINDEX, REG_BATCHWRAP);
    lua_pushvalue(L, res);
    lua_pushvalue(L, 1);                /* the read */
    lua_pushlightuserdata(L, &r->rd);   /* non-NULL while the read is open */
    lua_pushvalue(L, bidx);             /* the cells */
    /* the fork counter and its value now: another value, a fork's child reads
     * (the cells lie in the parent's read, which it may end: moraine_read_begin) */
    lua_pushlightuserdata(L, (void *)moraine_fork_count());
    lua_pushinteger(L, (lua_Integer)*moraine_fork_count());
    lua_call(L, 6, 1);
    return 1;
}

/* rd:scan_columns(name, opts) -> {n, columns, children} (see moraine.luadoc):
 * the rows of any relation that is not a child, visible at S, as column
 * arrays; children asked for as arrays too, with the index of their parent row. */
int l_read_scan_columns(lua_State *L)
{
    lread *r = check_read(L, 1);
    const char *name = check_name(L, 2);
    if (!lua_isnoneornil(L, 3))
        luaL_checktype(L, 3, LUA_TTABLE);
    else {
        lua_settop(L, 2);
        lua_newtable(L);
    }
    lua_settop(L, 3);
    const int opt = 3;
    lua_pushnil(L);
    while (lua_next(L, opt)) {
        lua_pop(L, 1);
        const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        if (!k)
            raise_errf(L, MORAINE_EINVAL, "scan_columns: options are named (a table of name = value), got a %s key",
                       luaL_typename(L, -1));
        if (strcmp(k, "at") && strcmp(k, "table_id") && strcmp(k, "columns") && strcmp(k, "children"))
            raise_errf(L, MORAINE_EINVAL, "scan_columns: unknown option '%s' (expected at, table_id, columns, children)", k);
    }
    int64_t scope = MORAINE_ANY_SCOPE, at;
    lua_getfield(L, opt, "at");
    if (lua_isnil(L, -1))
        at = default_snapshot(L, r);
    else if (!to_int64(L, -1, &at))
        raise_errf(L, MORAINE_EINVAL, "scan_columns: option 'at' must be an integer snapshot id or moraine.ALL");
    lua_pop(L, 1);
    lua_getfield(L, opt, "table_id");
    if (!lua_isnil(L, -1) && !to_int64(L, -1, &scope))
        raise_errf(L, MORAINE_EINVAL, "scan_columns: option 'table_id' must be an integer");
    if (!lua_isnil(L, -1)) check_table_scope(L, scope, "scan_columns");
    lua_pop(L, 1);
    moraine_relation_info ri;
    int rc = moraine_relation(r->owner->db, name, &ri);
    if (rc)
        return raise_engine(L, rc);
    const char *cols[MB_MAX_COLS];
    int ncols = mb_names(L, opt, "columns", cols);
    if (ncols < 0) {
        if (ri.ncols > MB_MAX_COLS)
            raise_errf(L, MORAINE_EINVAL, "scan_columns: %s has %d columns: name the ones wanted", name, (int)ri.ncols);
        ncols = (int)ri.ncols;
        for (int i = 0; i < ncols; i++)
            cols[i] = ri.colnames[i];
    }
    /* children: name -> true (every column) or an array of column names */
    enum { MAXK = 8 };
    moraine_child_projection kids[MAXK];
    const char *kcols[MAXK][MB_MAX_COLS];
    int nkcols[MAXK];
    int nk = 0;
    lua_getfield(L, opt, "children");
    if (!lua_isnil(L, -1)) {
        if (lua_type(L, -1) != LUA_TTABLE)
            raise_errf(L, MORAINE_EINVAL, "scan_columns: option 'children' must be a table child relation -> true or column names");
        int kidx = lua_gettop(L);
        lua_pushnil(L);
        while (lua_next(L, kidx)) {
            if (lua_type(L, -2) != LUA_TSTRING)
                raise_errf(L, MORAINE_EINVAL, "scan_columns: option 'children' must be keyed by child relation names");
            if (nk == MAXK)
                raise_errf(L, MORAINE_EINVAL, "scan_columns: at most %d child relations", MAXK);
            const char *kn = nul_free(L, -2, "a child relation name");
            moraine_relation_info ki;
            if (lua_type(L, -1) == LUA_TBOOLEAN && lua_toboolean(L, -1) && moraine_relation(r->owner->db, kn, &ki) == 0) {
                if (ki.ncols > MB_MAX_COLS)
                    raise_errf(L, MORAINE_EINVAL, "scan_columns: %s has %d columns: name the ones wanted", kn, (int)ki.ncols);
                nkcols[nk] = (int)ki.ncols;
                for (int i = 0; i < nkcols[nk]; i++)
                    kcols[nk][i] = ki.colnames[i];
            } else if (lua_type(L, -1) == LUA_TTABLE) {
                int n = (int)mr_rawlen(L, -1);
                if (n > MB_MAX_COLS)
                    raise_errf(L, MORAINE_EINVAL, "scan_columns: children.%s names %d columns (at most %d)", kn, n, MB_MAX_COLS);
                for (int i = 0; i < n; i++) {
                    lua_rawgeti(L, -1, i + 1);
                    if (lua_type(L, -1) != LUA_TSTRING)
                        raise_errf(L, MORAINE_EINVAL, "scan_columns: children.%s[%d] must be a column name", kn, i + 1);
                    kcols[nk][i] = nul_free(L, -1, "a column name"); /* anchored by the options table */
                    lua_pop(L, 1);
                }
                nkcols[nk] = n;
            } else if (lua_type(L, -1) == LUA_TBOOLEAN && lua_toboolean(L, -1)) {
                nkcols[nk] = 0; /* the engine names the unknown relation */
            } else {
                raise_errf(L, MORAINE_EINVAL, "scan_columns: children.%s must be true or an array of column names", kn);
            }
            kids[nk] = (moraine_child_projection){kn, kcols[nk], (size_t)nkcols[nk], NULL, NULL, 0};
            nk++;
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    moraine_projection pj = {cols, (size_t)ncols, kids, (size_t)nk};
    moraine_cursor *c;
    if ((rc = moraine_scan_project(r->rd, name, scope, at, &pj, &c)))
        return raise_engine(L, rc);
    int total = ncols + nk;
    for (int k = 0; k < nk; k++)
        total += nkcols[k] + 1;
    luaL_checkstack(L, total + 8, "scan_columns: too many columns");
    int base = lua_gettop(L) + 1;
    for (int i = 0; i < ncols; i++)
        lua_newtable(L);
    int kbase[MAXK];
    lua_Integer kn_rows[MAXK];
    for (int k = 0; k < nk; k++) {
        kbase[k] = lua_gettop(L) + 1; /* parent index, then its columns */
        kn_rows[k] = 0;
        for (int i = 0; i <= nkcols[k]; i++)
            lua_newtable(L);
    }
    lua_Integer n = 0;
    moraine_row row, kid;
    while ((rc = moraine_cursor_next(c, &row)) == 1) {
        n++;
        for (int i = 0; i < ncols; i++) {
            push_value(L, &row.vals[i]);
            lua_rawseti(L, base + i, (int)n);
        }
        size_t which;
        int kr;
        while (nk && (kr = moraine_cursor_child(c, &which, &kid)) == 1) {
            int k = (int)which;
            lua_Integer m = ++kn_rows[k];
            push_int64(L, n);
            lua_rawseti(L, kbase[k], (int)m);
            for (int i = 0; i < nkcols[k]; i++) {
                push_value(L, &kid.vals[i]);
                lua_rawseti(L, kbase[k] + 1 + i, (int)m);
            }
        }
        if (nk && kr < 0)
            return raise_engine(L, kr);
    }
    if (rc < 0)
        return raise_engine(L, rc);
    moraine_cursor_close(c);
    lua_createtable(L, 0, 3);
    int res = lua_gettop(L);
    push_int64(L, n);
    lua_setfield(L, res, "n");
    lua_createtable(L, 0, ncols);
    for (int i = 0; i < ncols; i++) {
        lua_pushvalue(L, base + i);
        lua_setfield(L, -2, cols[i]);
    }
    lua_setfield(L, res, "columns");
    if (nk) {
        lua_createtable(L, 0, nk);
        for (int k = 0; k < nk; k++) {
            lua_createtable(L, 0, 3);
            push_int64(L, kn_rows[k]);
            lua_setfield(L, -2, "n");
            lua_pushvalue(L, kbase[k]);
            lua_setfield(L, -2, "parent");
            lua_createtable(L, 0, nkcols[k]);
            for (int i = 0; i < nkcols[k]; i++) {
                lua_pushvalue(L, kbase[k] + 1 + i);
                lua_setfield(L, -2, kcols[k][i]);
            }
            lua_setfield(L, -2, "columns");
            lua_setfield(L, -2, kids[k].relation);
        }
        lua_setfield(L, res, "children");
    }
    return 1;
}
