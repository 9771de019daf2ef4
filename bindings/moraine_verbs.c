/*
 * moraine_verbs.c — verb transactions (moraine.tx): db:init, db:transaction,
 * the tx methods (create_table, add_data_files, ...) and the readers of
 * their argument tables (table names, column definitions, partition and
 * sort keys, data and delete files), core.set_key_parsers.
 */
#include <stdio.h>

#include "moraine_binding.h"

/* ---- verb transactions (db:transaction, db:init) -------------------------------
 * Verbs copy everything they need (moraine.h), so the strings handed to them
 * only have to live during the call: they are read with raw access from the
 * argument tables (still referenced by the stack, and no Lua code that could
 * change them runs during the call), and the C arrays are userdata on the
 * stack, so an error raised half way (a longjmp) leaks nothing. */

/* db:init(data_path) -> true */
/* A name or text argument of a verb: a string (else a Lua argument error),
 * without NUL bytes (else MORAINE_EINVAL "VERB: WHAT contains a NUL byte",
 * as the table specs' names: bad input, not a misuse of the API). */
static const char *verb_text(lua_State *L, int idx, const char *verb, const char *what)
{
    size_t len;
    const char *s = luaL_checklstring(L, idx, &len);
    if (strlen(s) != len)
        raise_errf(L, MORAINE_EINVAL, "%s: %s contains a NUL byte", verb, what);
    return s;
}

int l_db_init(lua_State *L)
{
    ldb *d = check_db(L, 1);
    const char *path = lua_isnoneornil(L, 2) ? "data/" : verb_text(L, 2, "init", "data path"); /* the moraine command's default too */
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
void check_fields(lua_State *L, int tidx, const char *const *allowed, const char *ctx)
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
const char *field_str(lua_State *L, int tidx, const char *key, const char *ctx, int required)
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
void array_table_at(lua_State *L, int aidx, int i, const char *ctx)
{
    lua_rawgeti(L, aidx, i);
    if (lua_type(L, -1) != LUA_TTABLE)
        raise_errf(L, MORAINE_EINVAL, "%s must be a table, got %s", ctx, luaL_typename(L, -1));
}

/* The length of the array at aidx; EINVAL when the table also has keys
 * outside 1..n (a single file given where a list of files is expected:
 * {path = ...} would otherwise read as an empty list and do nothing). */
static size_t array_len(lua_State *L, int aidx)
{
    size_t n = (size_t)mr_rawlen(L, aidx), keys = 0;
    aidx = mr_absindex(L, aidx);
    lua_pushnil(L);
    while (lua_next(L, aidx)) {
        lua_pop(L, 1);
        if (++keys > n) {
            const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1);
            return (size_t)raise_errf(L, MORAINE_EINVAL, "expected a list (an array of %d), got a table with key '%s' too: "
                                                         "put a single item in a list, {item}", (int)n, k);
        }
    }
    return n;
}

/* A scratch array of n elements of size sz, owned by Lua (pushed). */
void *scratch(lua_State *L, size_t n, size_t sz)
{
    void *p = lua_newuserdata(L, (n ? n : 1) * sz);
    memset(p, 0, (n ? n : 1) * sz);
    return p;
}

static const char *const column_fields[] = {"name", "type", "not_null", "default", "default_type", NULL};

/* The column definition table at tidx: {name, type, not_null?, default?, default_type?}
 * into *c (strings owned by the table). `type` is passed as given, a nested
 * type in the text moraine_column_def reads ("struct(a int32)",
 * "list(int64)", "map(varchar, int32)"); the engine checks it. Raises EINVAL
 * for an unknown field or a field of the wrong Lua type. */
static void read_column(lua_State *L, int tidx, const char *ctx, moraine_column_def *c)
{
    check_fields(L, tidx, column_fields, ctx);
    c->name = field_str(L, tidx, "name", ctx, 1);
    c->type = field_str(L, tidx, "type", ctx, 1);
    c->not_null = field_bool(L, tidx, "not_null", ctx, 0);
    c->default_value = field_str(L, tidx, "default", ctx, 0);
    c->default_value_type = field_str(L, tidx, "default_type", ctx, 0);
}

/* Calls the key reader moraine.lua registered under @reg for the key at the
 * top (a string; for sort keys also a table whose fields were checked);
 * replaces it by the key table it gives back or raises EINVAL. */
static void parse_key(lua_State *L, const char *reg, const char *ctx)
{
    lua_getfield(L, LUA_REGISTRYINDEX, reg);
    if (lua_type(L, -1) != LUA_TFUNCTION)
        raise_errf(L, MORAINE_EINVAL, "%s: keys need moraine.lua's reader (require \"moraine\")", ctx);
    lua_pushvalue(L, -2);
    lua_call(L, 1, 2);
    if (lua_type(L, -2) != LUA_TTABLE) {
        const char *why = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "cannot parse it";
        if (lua_type(L, -3) == LUA_TSTRING) raise_errf(L, MORAINE_EINVAL, "%s ('%s'): %s", ctx, lua_tostring(L, -3), why);
        raise_errf(L, MORAINE_EINVAL, "%s: %s", ctx, why);
    }
    lua_pop(L, 1);
    lua_replace(L, -2);
}

static const char *const partition_fields[] = {"column", "transform", NULL};
static const char *const sort_fields[] = {"expression", "dialect", "sort_direction", "null_order", NULL};

/* The array of keys at aidx. Partition keys: strings parsed by moraine.lua,
 * tables verbatim. Sort keys: every key through moraine.lua's reader (a
 * string parsed, a duckdb expression rendered as DuckDB does), whose
 * `columns` become moraine_sort_key.columns for the engine to look up.
 * Pushes the key array (a userdata) and an anchor table keeping the keys
 * read and their column arrays alive. */
static void *read_keys(lua_State *L, int aidx, const char *verb, int sort, size_t *n_out)
{
    aidx = mr_absindex(L, aidx);
    size_t n = array_len(L, aidx);
    void *arr = scratch(L, n, sort ? sizeof(moraine_sort_key) : sizeof(moraine_partition_key));
    lua_createtable(L, (int)(2 * n), 0);
    int anchor = lua_gettop(L);
    char ctx[128];
    for (size_t i = 0; i < n; i++) {
        snprintf(ctx, sizeof ctx, "%s: key %d", verb, (int)i + 1);
        lua_rawgeti(L, aidx, (int)i + 1);
        int ty = lua_type(L, -1);
        if (ty != LUA_TSTRING && ty != LUA_TTABLE)
            raise_errf(L, MORAINE_EINVAL, "%s must be a string or a table, got %s", ctx, luaL_typename(L, -1));
        if (ty == LUA_TTABLE) check_fields(L, lua_gettop(L), sort ? sort_fields : partition_fields, ctx);
        if (sort || ty == LUA_TSTRING) parse_key(L, sort ? REG_PARSE_SORT : REG_PARSE_PARTITION, ctx);
        int k = lua_gettop(L);
        if (sort) {
            moraine_sort_key *sk = (moraine_sort_key *)arr + i;
            sk->expression = field_str(L, k, "expression", ctx, 1);
            sk->dialect = field_str(L, k, "dialect", ctx, 0);
            sk->sort_direction = field_str(L, k, "sort_direction", ctx, 0);
            sk->null_order = field_str(L, k, "null_order", ctx, 0);
            lua_getfield(L, k, "columns");
            if (lua_type(L, -1) == LUA_TTABLE) {
                size_t nc = array_len(L, -1);
                const char **cs = (const char **)scratch(L, nc, sizeof *cs);
                for (size_t j = 0; j < nc; j++) {
                    lua_rawgeti(L, -2, (int)j + 1);
                    if (lua_type(L, -1) != LUA_TSTRING) raise_errf(L, MORAINE_EINVAL, "%s: column reference %d is not a string", ctx, (int)j + 1);
                    cs[j] = lua_tostring(L, -1); /* kept alive by the key table, anchored below */
                    lua_pop(L, 1);
                }
                sk->columns = cs;
                sk->ncolumns = nc;
                lua_rawseti(L, anchor, (int)(n + i + 1)); /* the column array's userdata */
            } else {
                sk->columns = NULL;
                sk->ncolumns = 0;
            }
            lua_pop(L, 1); /* columns */
        } else {
            moraine_partition_key *pk = (moraine_partition_key *)arr + i;
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

/* The common part of the verbs on a table: sets the top of the stack to
 * @top (the verb's last argument) and reads the table name, argument 2, into
 * *@schema and *@table (check_tbl: pushes one value that stays on the stack). */
static void vtx_table(lua_State *L, int top, const char *verb, const char **schema, const char **table)
{
    lua_settop(L, top);
    check_tbl(L, 2, verb, schema, table);
}

/* The start of the verbs (tbl, array): checks the tx, that argument 3 is a
 * table, then reads the table name as vtx_table with top 3. Returns the tx. */
static lvtx *vtx_table_array(lua_State *L, const char *verb, const char **schema, const char **table)
{
    lvtx *t = check_vtx(L);
    luaL_checktype(L, 3, LUA_TTABLE);
    vtx_table(L, 3, verb, schema, table);
    return t;
}

/* The end of a verb that returns nothing: raises the engine's error when
 * @rc != 0, else returns 0 (no results). */
static int vtx_done(lua_State *L, int rc)
{
    if (rc != 0)
        return raise_engine(L, rc);
    return 0;
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
    const char *name = verb_text(L, 2, "create_schema", "schema name");
    return vtx_done(L, moraine_tx_create_schema(t->tx, name));
}

/* tx:drop_schema(name, cascade?) -- DROP SCHEMA [CASCADE] (moraine_tx_drop_schema) */
static int l_vtx_drop_schema(lua_State *L)
{
    lvtx *t = check_vtx(L);
    const char *name = verb_text(L, 2, "drop_schema", "schema name");
    int cascade = lua_toboolean(L, 3);
    return vtx_done(L, moraine_tx_drop_schema(t->tx, name, cascade));
}

/* tx:create_table(tbl, columns) -> table_id */
static int l_vtx_create_table(lua_State *L)
{
    const char *schema, *table;
    lvtx *t = vtx_table_array(L, "create_table", &schema, &table);
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
    const char *schema, *table;
    lvtx *t = vtx_table_array(L, "add_column", &schema, &table);
    moraine_column_def col;
    memset(&col, 0, sizeof col);
    read_column(L, 3, "add_column: column", &col);
    return vtx_done(L, moraine_tx_add_column(t->tx, schema, table, &col));
}

/* tx:rename_column(tbl, old, new, sort_keys?) */
static int l_vtx_rename_column(lua_State *L)
{
    lvtx *t = check_vtx(L);
    const char *old_name = verb_text(L, 3, "rename_column", "column name");
    const char *new_name = verb_text(L, 4, "rename_column", "new column name");
    if (!lua_isnoneornil(L, 5))
        luaL_checktype(L, 5, LUA_TTABLE);
    const char *schema, *table;
    vtx_table(L, 5, "rename_column", &schema, &table);
    const moraine_sort_key *keys = NULL;
    size_t n = 0;
    if (!lua_isnil(L, 5))
        keys = (const moraine_sort_key *)read_keys(L, 5, "rename_column: sort_keys", 1, &n);
    return vtx_done(L, moraine_tx_rename_column(t->tx, schema, table, old_name, new_name, keys, n));
}

/* The verbs (tbl, name): the engine's verb @fn with the name (argument 3). */
typedef int (*vtx_name_fn)(moraine_tx *tx, const char *schema, const char *table, const char *name);

static int vtx_table_name(lua_State *L, const char *verb, vtx_name_fn fn)
{
    lvtx *t = check_vtx(L);
    const char *name = verb_text(L, 3, verb, "name");
    const char *schema, *table;
    vtx_table(L, 3, verb, &schema, &table);
    return vtx_done(L, fn(t->tx, schema, table, name));
}

/* tx:drop_column(tbl, name) */
static int l_vtx_drop_column(lua_State *L)
{
    return vtx_table_name(L, "drop_column", moraine_tx_drop_column);
}

/* The column path at @idx for verb @verb: a name (a path of one name) or an
 * array of names, {"s", "f"} for s.f. Pushes the array of C strings (a
 * userdata; the strings stay referenced by the argument) and returns it,
 * the count in *n_out. Raises EINVAL for anything else, a NUL byte in a name. */
static const char **read_path(lua_State *L, int idx, const char *verb, size_t *n_out)
{
    idx = mr_absindex(L, idx);
    size_t len;
    if (lua_type(L, idx) == LUA_TSTRING) {
        const char **p = (const char **)scratch(L, 1, sizeof *p);
        p[0] = lua_tolstring(L, idx, &len);
        if (strlen(p[0]) != len)
            raise_errf(L, MORAINE_EINVAL, "%s: path contains a NUL byte", verb);
        *n_out = 1;
        return p;
    }
    if (lua_type(L, idx) != LUA_TTABLE)
        raise_errf(L, MORAINE_EINVAL, "%s: path must be a name or an array of names, got %s", verb, luaL_typename(L, idx));
    size_t n = array_len(L, idx);
    const char **p = (const char **)scratch(L, n, sizeof *p);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, idx, (int)i + 1);
        if (lua_type(L, -1) != LUA_TSTRING)
            raise_errf(L, MORAINE_EINVAL, "%s: path[%d] must be a string, got %s", verb, (int)i + 1, luaL_typename(L, -1));
        p[i] = lua_tolstring(L, -1, &len);
        if (strlen(p[i]) != len)
            raise_errf(L, MORAINE_EINVAL, "%s: path[%d] contains a NUL byte", verb, (int)i + 1);
        lua_pop(L, 1);
    }
    *n_out = n;
    return p;
}

/* tx:add_field(tbl, path, field) -- ADD COLUMN s.f (moraine_tx_add_field) */
static int l_vtx_add_field(lua_State *L)
{
    lvtx *t = check_vtx(L);
    luaL_checktype(L, 4, LUA_TTABLE);
    const char *schema, *table;
    vtx_table(L, 4, "add_field", &schema, &table);
    size_t n;
    const char **path = read_path(L, 3, "add_field", &n);
    moraine_column_def f;
    memset(&f, 0, sizeof f);
    read_column(L, 4, "add_field: field", &f);
    return vtx_done(L, moraine_tx_add_field(t->tx, schema, table, path, n, &f));
}

/* tx:rename_field(tbl, path, new_name) -- RENAME COLUMN s.f TO g (moraine_tx_rename_field) */
static int l_vtx_rename_field(lua_State *L)
{
    lvtx *t = check_vtx(L);
    const char *new_name = verb_text(L, 4, "rename_field", "new field name");
    const char *schema, *table;
    vtx_table(L, 4, "rename_field", &schema, &table);
    size_t n;
    const char **path = read_path(L, 3, "rename_field", &n);
    return vtx_done(L, moraine_tx_rename_field(t->tx, schema, table, path, n, new_name));
}

/* tx:drop_field(tbl, path) -- DROP COLUMN s.f (moraine_tx_drop_field) */
static int l_vtx_drop_field(lua_State *L)
{
    lvtx *t = check_vtx(L);
    const char *schema, *table;
    vtx_table(L, 3, "drop_field", &schema, &table);
    size_t n;
    const char **path = read_path(L, 3, "drop_field", &n);
    return vtx_done(L, moraine_tx_drop_field(t->tx, schema, table, path, n));
}

/* tx:rename_table(tbl, new_name) */
static int l_vtx_rename_table(lua_State *L)
{
    return vtx_table_name(L, "rename_table", moraine_tx_rename_table);
}

/* tx:alter_column(tbl, column, {type = s?, default = s?, default_type = s?,
 * drop_default = bool?, not_null = bool?}) -- ALTER COLUMN (issue 16) */
static int l_vtx_alter_column(lua_State *L)
{
    static const char *const fields[] = {"type", "default", "default_type", "drop_default", "not_null", NULL};
    lvtx *t = check_vtx(L);
    const char *column = verb_text(L, 3, "alter_column", "column name");
    luaL_checktype(L, 4, LUA_TTABLE);
    const char *schema, *table;
    vtx_table(L, 4, "alter_column", &schema, &table);
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
    return vtx_done(L, moraine_tx_alter_column(t->tx, schema, table, column, &a));
}

/* tx:set_comment(tbl, column or nil, comment or nil) -- COMMENT ON */
static int l_vtx_set_comment(lua_State *L)
{
    lvtx *t = check_vtx(L);
    const char *column = lua_isnoneornil(L, 3) || is_null_at(L, 3) ? NULL : verb_text(L, 3, "set_comment", "column name");
    const char *comment = lua_isnoneornil(L, 4) || is_null_at(L, 4) ? NULL : verb_text(L, 4, "set_comment", "comment");
    const char *schema, *table;
    vtx_table(L, 4, "set_comment", &schema, &table);
    return vtx_done(L, moraine_tx_set_comment(t->tx, schema, table, column, comment));
}

/* tx:create_view(view, sql) / tx:drop_view(view) */
static int l_vtx_create_view(lua_State *L)
{
    return vtx_table_name(L, "create_view", moraine_tx_create_view);
}

static int l_vtx_drop_view(lua_State *L)
{
    lvtx *t = check_vtx(L);
    const char *schema, *view;
    vtx_table(L, 2, "drop_view", &schema, &view);
    return vtx_done(L, moraine_tx_drop_view(t->tx, schema, view));
}

enum { VT_DROP_TABLE, VT_CLEAR_PARTITIONING, VT_CLEAR_SORTING };

/* The verbs that take only a table. */
static int vtx_table_only(lua_State *L, int which)
{
    static const char *const names[] = {"drop_table", "clear_partitioning", "clear_sorting"};
    lvtx *t = check_vtx(L);
    const char *schema, *table;
    vtx_table(L, 2, names[which], &schema, &table);
    return vtx_done(L, which == VT_DROP_TABLE           ? moraine_tx_drop_table(t->tx, schema, table)
                       : which == VT_CLEAR_PARTITIONING ? moraine_tx_clear_partitioning(t->tx, schema, table)
                                                        : moraine_tx_clear_sorting(t->tx, schema, table));
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

/* tx:set_partitioning(tbl, keys) (@sort 0) / tx:set_sorting(tbl, keys) (@sort 1) */
static int vtx_set_keys(lua_State *L, int sort)
{
    const char *verb = sort ? "set_sorting" : "set_partitioning";
    const char *schema, *table;
    lvtx *t = vtx_table_array(L, verb, &schema, &table);
    size_t n;
    const void *keys = read_keys(L, 3, verb, sort, &n);
    return vtx_done(L, sort ? moraine_tx_set_sorting(t->tx, schema, table, (const moraine_sort_key *)keys, n)
                            : moraine_tx_set_partitioning(t->tx, schema, table,
                                                          (const moraine_partition_key *)keys, n));
}

static int l_vtx_set_partitioning(lua_State *L)
{
    return vtx_set_keys(L, 0);
}

static int l_vtx_set_sorting(lua_State *L)
{
    return vtx_set_keys(L, 1);
}

/* tx:add_data_files(tbl, files) -> first data_file_id */
static int l_vtx_add_data_files(lua_State *L)
{
    const char *schema, *table;
    lvtx *t = vtx_table_array(L, "add_data_files", &schema, &table);
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
    const char *schema, *table;
    lvtx *t = vtx_table_array(L, "add_delete_files", &schema, &table);
    size_t n;
    const moraine_delete_file *dels = read_deletes(L, 3, &n);
    return vtx_done(L, moraine_tx_add_delete_files(t->tx, schema, table, dels, n));
}

/* tx:delete_files(tbl, ids) */
static int l_vtx_delete_files(lua_State *L)
{
    const char *schema, *table;
    lvtx *t = vtx_table_array(L, "delete_files", &schema, &table);
    size_t n;
    const int64_t *ids = read_ids(L, 3, "delete_files: ids", &n);
    return vtx_done(L, moraine_tx_delete_files(t->tx, schema, table, ids, n));
}

/* tx:rewrite_files(tbl, input_ids, outputs) */
static int l_vtx_rewrite_files(lua_State *L)
{
    lvtx *t = check_vtx(L);
    luaL_checktype(L, 3, LUA_TTABLE);
    luaL_checktype(L, 4, LUA_TTABLE);
    const char *schema, *table;
    vtx_table(L, 4, "rewrite_files", &schema, &table);
    size_t nin, nout;
    const int64_t *ids = read_ids(L, 3, "rewrite_files: input_ids", &nin);
    const moraine_data_file *outs = read_files(L, 4, "rewrite_files: outputs", &nout);
    return vtx_done(L, moraine_tx_rewrite_files(t->tx, schema, table, ids, nin, outs, nout));
}

int l_vtx_gc(lua_State *L)
{
    lvtx *t = (lvtx *)lua_touserdata(L, 1);
    if (t)
        vtx_abort(t);
    return 0;
}

int l_vtx_tostring(lua_State *L)
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
int l_db_transaction(lua_State *L)
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
    db_still_open(L, d); /* the allocation may have run a finalizer that closed it */
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
    const int calls = d->calls;
    const int prc = lua_pcall(L, 1, 0, 0);
    d->calls = calls; /* a call on the transaction that raised left itself counted (moraine_core.c, counted_call) */
    if (prc != LUA_OK) {
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

/* core.set_key_parsers(partition_fn, sort_fn): moraine.lua's key readers.
 * partition_fn(s) reads a partition key in SQL form; sort_fn(k) reads any
 * sort key (a string, or a table whose fields the binding checked) into
 * {expression, dialect, sort_direction, null_order, columns}. Each returns
 * the key table, or nil and a message. nil unsets a reader. */
int l_set_key_parsers(lua_State *L)
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

const luaL_Reg vtx_methods[] = {{"base", l_vtx_base},
                                       {"create_schema", l_vtx_create_schema},
                                       {"drop_schema", l_vtx_drop_schema},
                                       {"create_table", l_vtx_create_table},
                                       {"add_column", l_vtx_add_column},
                                       {"rename_column", l_vtx_rename_column},
                                       {"drop_column", l_vtx_drop_column},
                                       {"add_field", l_vtx_add_field},
                                       {"rename_field", l_vtx_rename_field},
                                       {"drop_field", l_vtx_drop_field},
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
