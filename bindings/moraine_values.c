/*
 * moraine_values.c — the shared ground of the binding: moraine.null, error
 * tables, exact int64 integers (LuaJIT boxing), the userdata handles' life
 * (new_handle and the close/abort of db, txn, tx and read) and the
 * conversion of engine values and rows to Lua (push_value, push_row,
 * push_children, push_relinfo). See moraine_binding.h.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "moraine_binding.h"

char null_sentinel; /* its address is moraine.null */

void push_null(lua_State *L)
{
    lua_pushlightuserdata(L, &null_sentinel);
}

/* ---- errors ----------------------------------------------------------------- */

/* Replaces the message string on top of the stack by an error table. */
void make_error(lua_State *L, const char *code)
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
int raise_top(lua_State *L, int code)
{
    make_error(L, moraine_strerror(code));
    return lua_error(L);
}

/* Raises the engine's last failure. Copies moraine_errmsg() at once: a later
 * moraine call (a finalizer run by the GC) could overwrite it. */
int raise_engine(lua_State *L, int code)
{
    lua_pushstring(L, moraine_errmsg());
    return raise_top(L, code);
}

int raise_errf(lua_State *L, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lua_pushvfstring(L, fmt, ap);
    va_end(ap);
    return raise_top(L, code);
}

int l_error_tostring(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, 1, "code");
    lua_getfield(L, 1, "message");
    lua_pushfstring(L, "moraine: %s: %s", lua_isstring(L, 2) ? lua_tostring(L, 2) : "?",
                    lua_isstring(L, 3) ? lua_tostring(L, 3) : "");
    return 1;
}

/* core.is_error(v) -> boolean */
int l_is_error(lua_State *L)
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
int l_ident_render(lua_State *L)
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

int l_ident_is_keyword(lua_State *L)
{
    lua_pushboolean(L, moraine_ident_is_keyword(luaL_checkstring(L, 1)));
    return 1;
}

/* core.raise(code_name, message): raises an error table (used by moraine.lua). */
int l_raise(lua_State *L)
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
void push_int64(lua_State *L, int64_t v)
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
int to_int64(lua_State *L, int idx, int64_t *out)
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

int64_t check_int(lua_State *L, int idx)
{
    int64_t v = 0;
    if (!to_int64(L, idx, &v)) {
        if (lua_type(L, idx) == LUA_TNUMBER)
            luaL_argerror(L, idx, "number has no exact int64 representation");
        luaL_argerror(L, idx, lua_pushfstring(L, "integer expected, got %s", luaL_typename(L, idx)));
    }
    return v;
}

void check_table_scope(lua_State *L, int64_t table_id, const char *what)
{
    if (table_id == MORAINE_ANY_SCOPE) {
        char id[32];
        snprintf(id, sizeof id, "%lld", (long long)table_id);
        raise_errf(L, MORAINE_EINVAL, "%s: table_id %s is moraine's 'every table' (MORAINE_ANY_SCOPE) and cannot name one table", what, id);
    }
}

int64_t opt_int(lua_State *L, int idx, int64_t def)
{
    return lua_isnoneornil(L, idx) ? def : check_int(L, idx);
}

/* core.clock(): seconds since an arbitrary fixed point, from CLOCK_MONOTONIC
 * (wall-clock time that never jumps back, unlike os.time; not CPU time, unlike
 * os.clock), as a number with nanosecond resolution. For progress and timing. */
int l_clock(lua_State *L)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return raise_errf(L, MORAINE_EIO, "clock_gettime(CLOCK_MONOTONIC) failed");
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

/* core.sleep(seconds) -> true, or false when a signal cut it short: the
 * calling thread sleeps (nanosleep); a signal handler's effect, such as the
 * lua command's "interrupted!" on SIGINT, then follows as soon as Lua runs
 * again. EINVAL for a negative, NaN or over-long (> 1e6 s) duration. */
int l_sleep(lua_State *L)
{
    lua_Number secs = luaL_checknumber(L, 1);
    if (!(secs >= 0 && secs <= 1e6)) return raise_errf(L, MORAINE_EINVAL, "sleep: %f seconds (0 to 1e6)", (lua_Number)secs);
    struct timespec ts = {(time_t)secs, (long)((secs - (lua_Number)(time_t)secs) * 1e9)};
    if (ts.tv_nsec >= 1000000000L) ts.tv_nsec = 999999999L;
    lua_pushboolean(L, nanosleep(&ts, NULL) == 0);
    return 1;
}

/* SIGINT as the lua and luajit commands take it (a hook that raises
 * "interrupted!" as soon as Lua runs), but armed for good: their handler
 * lets a second Ctrl-C kill the process, as it resets the signal first. */
static lua_State *interrupt_L;

static void interrupt_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lua_sethook(L, NULL, 0, 0);
    luaL_error(L, "interrupted!");
}

static void interrupt_action(int sig)
{
    (void)sig;
    if (interrupt_L) lua_sethook(interrupt_L, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

/* core.catch_interrupts() -> true: from now on every SIGINT raises
 * "interrupted!" in the calling Lua thread at its next instruction (a
 * blocking read returns early: no SA_RESTART), each Ctrl-C alike, so an
 * interactive loop (the repl) can cancel what it was doing and go on.
 * EIO naming the reason when the handler cannot be installed. */
int l_catch_interrupts(lua_State *L)
{
    interrupt_L = L;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = interrupt_action;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, &sa, NULL) != 0) return raise_errf(L, MORAINE_EIO, "cannot take SIGINT: %s", strerror(errno));
    lua_pushboolean(L, 1);
    return 1;
}

/* core.dir_locked(path) -> true when another open file holds flock(LOCK_EX)
 * on @path (a running `moraine_import_sqlite` holds its temporary directory
 * so), false when nobody does (taken and let go at once), nil when @path does
 * not exist. EIO (named) for any other failure. */
int l_dir_locked(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            lua_pushnil(L);
            return 1;
        }
        return raise_errf(L, MORAINE_EIO, "cannot open %s: %s", path, strerror(errno));
    }
    int held = 0;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e != EWOULDBLOCK) {
            close(fd);
            return raise_errf(L, MORAINE_EIO, "cannot lock %s: %s", path, strerror(e));
        }
        held = 1;
    }
    close(fd); /* lets go of the lock taken */
    lua_pushboolean(L, held);
    return 1;
}

/* core.dir_entries(path) -> {name, ...}: the names in directory @path
 * (readdir; "." and ".." left out), sorted bytewise. EIO (named) when it
 * cannot be read; EINVAL for a non-string path. */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int l_dir_entries(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    DIR *d = opendir(path);
    if (!d) return raise_errf(L, MORAINE_EIO, "cannot list %s: %s", path, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int oom = 0;
    while (!oom && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 16;
            char **p = realloc(names, nc * sizeof *p);
            if (!p) { oom = 1; break; }
            names = p;
            cap = nc;
        }
        if (!(names[n] = strdup(e->d_name))) oom = 1;
        else n++;
    }
    closedir(d);
    if (!oom) {
        if (n > 1) qsort(names, n, sizeof *names, cmp_str); /* (names is NULL for an empty directory) */
        lua_createtable(L, (int)n, 0);
        for (size_t i = 0; i < n; i++) {
            lua_pushstring(L, names[i]);
            lua_rawseti(L, -2, (lua_Integer)(i + 1));
        }
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    if (oom) return raise_errf(L, MORAINE_ENOMEM, "out of memory listing %s", path);
    return 1;
}

/* core.int64(v): normalises an integer (LuaJIT: number within +-2^53, else int64 cdata). */
int l_int64(lua_State *L)
{
    luaL_checkany(L, 1);
    push_int64(L, check_int(L, 1));
    return 1;
}

int set_registry_hook(lua_State *L, const char *key)
{
    if (!lua_isnil(L, 1))
        luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, key);
    return 0;
}

/* core.set_int64_ctor(fn), core.set_cdata_conv(fn): LuaJIT hooks from moraine.lua. */
int l_set_int64_ctor(lua_State *L) { return set_registry_hook(L, REG_INT64CTOR); }

int l_set_cdata_conv(lua_State *L) { return set_registry_hook(L, REG_CDATACONV); }

/* core.all_versions() -> MORAINE_ALL_VERSIONS as a Lua value (moraine.ALL) */
int l_all_versions(lua_State *L)
{
    push_int64(L, MORAINE_ALL_VERSIONS);
    return 1;
}

/* String argument @idx, an argument error @why when it holds a NUL byte
 * (C would read it only up to there). */
static const char *check_nul_free(lua_State *L, int idx, const char *why)
{
    size_t len;
    const char *s = luaL_checklstring(L, idx, &len);
    if (strlen(s) != len)
        luaL_argerror(L, idx, why);
    return s;
}

/* A path or name argument: a string without NUL bytes. */
const char *check_cstr(lua_State *L, int idx) { return check_nul_free(L, idx, "contains a NUL byte (a path or name cannot hold one)"); }

const char *nul_free(lua_State *L, int idx, const char *what)
{
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    if (s && strlen(s) != len)
        raise_errf(L, MORAINE_EINVAL, "%s contains a NUL byte", what);
    return s;
}

const char *check_name(lua_State *L, int idx) { return check_nul_free(L, idx, "name contains a NUL byte"); }

/* New userdata of size sz with metatable tname; with owner_idx != 0 its
 * uservalue becomes {owner} (keeps the owner alive as long as it). */
void *new_handle(lua_State *L, size_t sz, const char *tname, int owner_idx)
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

void children_release(moraine_children *ch, int *active)
{
    if (*active) {
        moraine_children_free(ch);
        *active = 0;
    }
}

void read_close(lread *r)
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

void txn_abort(ltxn *t)
{
    if (t->txn) {
        moraine_txn_abort(t->txn);
        t->txn = NULL;
    }
    if (t->owner && t->owner->txn == t)
        t->owner->txn = NULL;
}

void vtx_unlink(lvtx *t)
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

void vtx_abort(lvtx *t)
{
    if (t->tx) {
        moraine_tx_abort(t->tx);
        t->tx = NULL;
    }
    vtx_unlink(t);
}

void db_close(ldb *d)
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
void push_value(lua_State *L, const moraine_value *v)
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
void push_row(lua_State *L, const moraine_row *row)
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
void push_children(lua_State *L, lread *r, moraine_children *ch, int *active, const moraine_row *row,
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

void push_relinfo(lua_State *L, const moraine_relation_info *in)
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
