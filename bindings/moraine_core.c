/*
 * moraine_core.c — the Lua module `moraine.core`: a thin layer over
 * engine/moraine.h. Users require `moraine` (bindings/moraine.lua), which
 * wraps this module and documents the API.
 *
 * One source for Lua 5.4 and LuaJIT 2.1 (Lua 5.1 API); see the compat block.
 *
 * This file registers the module: the metatables of its handles, the module
 * table and moraine.null's __tostring. The rest of the binding lives in the
 * other bindings/moraine_*.c files, which share moraine_binding.h (it lists
 * them, and says who owns what and how errors are raised).
 */
#include "moraine_binding.h"

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
static void mr_setfuncs(lua_State *L, const luaL_Reg *l)
{
    for (; l->name; l++) {
        lua_pushcfunction(L, l->func);
        lua_setfield(L, -2, l->name);
    }
}

/* ---- calls on a catalog's reads and transactions ----
 * A C method of a read, a staged commit or a verb transaction can run Lua
 * code part way: an option table's __index, or a finalizer run by an
 * allocation. Were that code to close the catalog (db:close()), the method
 * would go on with freed engine state. So each call on an open one counts
 * itself in its catalog's `calls`, and db:close() refuses while any runs.
 * The count is restored, not decremented, when the call returns; a call that
 * raised leaves it counted, and the db:read, db:scan, db:commit or
 * db:transaction around it (the only places such an object is open)
 * restores it when its function returns or raises. */
enum { CALLS_READ, CALLS_TXN, CALLS_VTX };

static ldb *calls_owner(lua_State *L, int kind)
{
    if (kind == CALLS_READ) {
        lread *r = (lread *)luaL_testudata(L, 1, MT_READ);
        return r && r->rd ? r->owner : NULL;
    }
    if (kind == CALLS_TXN) {
        ltxn *t = (ltxn *)luaL_testudata(L, 1, MT_TXN);
        return t && t->txn ? t->owner : NULL;
    }
    lvtx *v = (lvtx *)luaL_testudata(L, 1, MT_VTX);
    return v && v->tx ? v->owner : NULL;
}

static int counted_call(lua_State *L)
{
    lua_CFunction f = lua_tocfunction(L, lua_upvalueindex(1));
    ldb *d = calls_owner(L, (int)lua_tointeger(L, lua_upvalueindex(2)));
    if (!d)
        return f(L); /* closed (it raises) or not called on one */
    const int saved = d->calls;
    d->calls = saved + 1;
    int n = f(L);
    d->calls = saved;
    return n;
}

/* mr_setfuncs with every function wrapped in counted_call for objects of @kind */
static void mr_setfuncs_counted(lua_State *L, const luaL_Reg *l, int kind)
{
    for (; l->name; l++) {
        lua_pushcfunction(L, l->func);
        lua_pushinteger(L, kind);
        lua_pushcclosure(L, counted_call, 2);
        lua_setfield(L, -2, l->name);
    }
}

/* ---- module ------------------------------------------------------------------------- */
static const luaL_Reg db_methods[] = {{"close", l_db_close},
                                      {"last_snapshot", l_db_last_snapshot},
                                      {"reader_check", l_db_reader_check},
                                      {"release_pages", l_db_release_pages},
                                      {"relations", l_db_relations},
                                      {"relation", l_db_relation},
                                      {"commit", l_db_commit},
                                      {"read", l_db_read},
                                      {"scan", l_db_scan},
                                      {"import_ndjson", l_db_import},
                                      {"export_ndjson", l_db_export},
                                      {"import_rows", l_db_import_rows},
                                      {"import_sqlite", l_db_import_sqlite},
                                      {"verify", l_db_verify},
                                      {"stats", l_db_stats},
                                      {"store_access", l_db_store_access},
                                      {"path_in_catalog", l_db_path_in_catalog},
                                      {"compact", l_db_compact},
                                      {"open_elsewhere", l_db_open_elsewhere},
                                      {"last_txnid", l_db_last_txnid},
                                      {"init", l_db_init},
                                      {"transaction", l_db_transaction},
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
                                        {"sleep", l_sleep},
                                        {"catch_interrupts", l_catch_interrupts},
                                        {"dir_entries", l_dir_entries},
                                        {"dir_locked", l_dir_locked},
                                        {"set_int64_ctor", l_set_int64_ctor},
                                        {"set_batch_wrap", l_set_batch_wrap},
                                        {"set_cdata_conv", l_set_cdata_conv},
                                        {"set_key_parsers", l_set_key_parsers},
                                        {"all_versions", l_all_versions},
                                        {"create_temp_file", l_create_temp_file},
                                        {"sync_path", l_sync_path},
                                        {"rename_exchange", l_rename_exchange},
                                        {"realpath", l_realpath},
                                        {"lock_dir", l_lock_dir},
                                        {"flush_stdout", l_flush_stdout},
                                        {"import_ndjson_check", l_import_ndjson_check},
                                        {"import_check", l_import_check_new},
                                        {"column_type", l_column_type},
                                        {"required_tables", l_required_tables},
                                        {NULL, NULL}};

static const luaL_Reg dirlock_methods[] = {{"release", l_dirlock_release}, {NULL, NULL}};

static const luaL_Reg import_check_methods[] = {{"add", l_import_check_add},
                                                {"finish", l_import_check_finish},
                                                {NULL, NULL}};

/* Creates metatable @name with __index = methods, __gc/__close = gc. */
static void new_class(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc,
                      lua_CFunction tostr)
{
    luaL_newmetatable(L, name);
    if (methods) {
        lua_newtable(L);
        if (!strcmp(name, MT_READ)) mr_setfuncs_counted(L, methods, CALLS_READ);
        else if (!strcmp(name, MT_TXN)) mr_setfuncs_counted(L, methods, CALLS_TXN);
        else if (!strcmp(name, MT_VTX)) mr_setfuncs_counted(L, methods, CALLS_VTX);
        else mr_setfuncs(L, methods);
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

int luaopen_moraine_core(lua_State *L)
{
    new_class(L, MT_DB, db_methods, l_db_gc, l_db_tostring);
    new_class(L, MT_TXN, txn_methods, l_txn_gc, l_txn_tostring);
    new_class(L, MT_VTX, vtx_methods, l_vtx_gc, l_vtx_tostring);
    new_class(L, MT_READ, read_methods, l_read_gc, l_read_tostring);
    new_class(L, MT_CURSOR, NULL, l_cursor_gc, NULL);
    new_class(L, MT_JBOX, NULL, l_jbox_gc, NULL);
    new_class(L, MT_ICHECK, import_check_methods, l_import_check_gc, NULL);
    new_class(L, MT_BATCH, NULL, l_batch_gc, NULL);
    new_class(L, MT_DIRLOCK, dirlock_methods, l_dirlock_release, NULL);
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
