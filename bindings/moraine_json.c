/*
 * moraine_json.c — JSON through jansson: core.json_decode, core.parse_ndjson
 * (NDJSON or a JSON array of objects to rows) and core.json_encode, with the
 * jbox handle (moraine.jbox) that owns a jansson tree while it is converted.
 */
#include <stdio.h>

#include "moraine_binding.h"

/* ---- JSON (jansson) ---------------------------------------------------------------- */
int l_jbox_gc(lua_State *L)
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
int l_json_decode(lua_State *L)
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
int l_parse_ndjson(lua_State *L)
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
int l_json_encode(lua_State *L)
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
