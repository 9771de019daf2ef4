/*
 * fuzz_sql.c — libFuzzer target for DuckLake's DDL as moraine reads it: the
 * LPeg lexer and statement parser (bindings/moraine/sql.lua), DuckDB's
 * expression rules (bindings/moraine/expr.lua: parse, render as DuckDB's
 * ToString) and identifier quoting (bindings/moraine/ident.lua over
 * engine/ident.c), driven from Lua 5.4.
 *
 * For every input: a fresh lua_State with the standard libraries (LPeg is
 * Debian's lua-lpeg, loaded by require from the system's C module path);
 * package.preload["moraine.core"] = luaopen_moraine_core (the binding and the
 * engine are compiled into this target) and preload entries for moraine.ident,
 * moraine.expr and moraine.sql; then tests/fuzz/sql_driver.lua runs with the
 * input. The Lua sources are embedded at build time (xxd -i, see the
 * Makefile's fuzz section: sql_lua.h). The driver raises a plain error when a
 * property fails (a parse error that is not a clean refusal naming a
 * position, a rendering that does not parse back to itself); any error
 * escaping it is printed with a traceback and abort()s here.
 */
#include "sql_lua.h"
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>

int luaopen_moraine_core(lua_State *L);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int msgh(lua_State *L)
{
    const char *msg = luaL_tolstring(L, 1, NULL);
    luaL_traceback(L, L, msg, 1);
    return 1;
}

static void load_chunk(lua_State *L, const unsigned char *src, size_t len, const char *name)
{
    if (luaL_loadbufferx(L, (const char *)src, len, name, "t") != LUA_OK) {
        fprintf(stderr, "fuzz_sql: cannot load %s: %s\n", name, lua_tostring(L, -1));
        abort();
    }
}

/* preload[modname] = the embedded chunk (the table preload is at the top) */
static void preload(lua_State *L, const char *modname, const unsigned char *src, size_t len, const char *name)
{
    load_chunk(L, src, len, name);
    lua_setfield(L, -2, modname);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lua_State *L = luaL_newstate();
    if (!L) abort();
    luaL_openlibs(L);
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "preload");
    lua_pushcfunction(L, luaopen_moraine_core);
    lua_setfield(L, -2, "moraine.core");
    preload(L, "moraine.ident", ident_lua, ident_lua_len, "@bindings/moraine/ident.lua");
    preload(L, "moraine.expr", expr_lua, expr_lua_len, "@bindings/moraine/expr.lua");
    preload(L, "moraine.sql", sql_lua, sql_lua_len, "@bindings/moraine/sql.lua");
    preload(L, "moraine.sql_types", sql_types_lua, sql_types_lua_len, "@bindings/moraine/sql_types.lua");
    lua_pop(L, 2);

    lua_pushcfunction(L, msgh);
    load_chunk(L, sql_driver_lua, sql_driver_lua_len, "@tests/fuzz/sql_driver.lua");
    lua_pushlstring(L, (const char *)data, size);
    if (lua_pcall(L, 1, 0, 1) != LUA_OK) {
        fprintf(stderr, "fuzz_sql: %s\n", lua_tostring(L, -1));
        abort();
    }
    lua_close(L);
    return 0;
}
