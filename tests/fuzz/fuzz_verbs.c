/*
 * fuzz_verbs.c — libFuzzer target for the verb path (engine/verbs_*.c and the
 * staged commits behind it), driven from Lua 5.4 through the binding.
 *
 * For every input: a fresh lua_State with the standard libraries;
 * package.preload["moraine.core"] = luaopen_moraine_core (bindings/
 * moraine_*.c are compiled into this target), package.preload["moraine"]
 * = bindings/moraine.lua, preload entries for moraine.ident, moraine.expr
 * and moraine.sql (the key readers moraine.lua loads; moraine.sql's LPeg is
 * Debian's lua-lpeg, from the system's C module path), and the driver
 * tests/fuzz/verbs_driver.lua is run
 * with the input (a Lua string) and a fresh, empty work directory (under
 * /dev/shm when it exists), removed with everything in it after the run. Both Lua sources are embedded at build time
 * (xxd -i, see the Makefile's fuzz target): verbs_lua.h defines
 * moraine_lua, ident_lua, expr_lua, sql_lua, verbs_driver_lua and their lengths.
 *
 * The driver interprets the input as verb transactions and raises a plain
 * error when an invariant fails (db:verify() not empty, two specs in force
 * at one snapshot, ...); any error escaping the driver is printed with a
 * traceback and abort()s here.
 */
#include "fuzz_tmp.h"
#include "verbs_lua.h"
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int luaopen_moraine_core(lua_State *L);
/* Wider heap redzones than ASan's default 16 bytes, so that a small negative
 * index (v[-1] of a short array) lands in one and is caught every time. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "redzone=64"; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* message handler: the error (tostring'd, moraine error tables included) with a traceback */
static int msgh(lua_State *L)
{
    const char *msg = luaL_tolstring(L, 1, NULL);
    luaL_traceback(L, L, msg, 1);
    return 1;
}

static void load_chunk(lua_State *L, const unsigned char *src, size_t len, const char *name)
{
    if (luaL_loadbufferx(L, (const char *)src, len, name, "t") != LUA_OK) {
        fprintf(stderr, "fuzz_verbs: cannot load %s: %s\n", name, lua_tostring(L, -1));
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/run", fuzz_root("verbs"));
    if (mkdir(dir, 0700) != 0) {
        fprintf(stderr, "fuzz_verbs: mkdir %s: %s\n", dir, strerror(errno));
        abort();
    }

    lua_State *L = luaL_newstate();
    if (!L) abort();
    luaL_openlibs(L);
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "preload");
    lua_pushcfunction(L, luaopen_moraine_core);
    lua_setfield(L, -2, "moraine.core");
    load_chunk(L, moraine_lua, moraine_lua_len, "@bindings/moraine.lua");
    lua_setfield(L, -2, "moraine");
    load_chunk(L, ident_lua, ident_lua_len, "@bindings/moraine/ident.lua");
    lua_setfield(L, -2, "moraine.ident");
    load_chunk(L, expr_lua, expr_lua_len, "@bindings/moraine/expr.lua");
    lua_setfield(L, -2, "moraine.expr");
    load_chunk(L, sql_lua, sql_lua_len, "@bindings/moraine/sql.lua");
    lua_setfield(L, -2, "moraine.sql");
    load_chunk(L, sql_types_lua, sql_types_lua_len, "@bindings/moraine/sql_types.lua");
    lua_setfield(L, -2, "moraine.sql_types");
    lua_pop(L, 2);

    lua_pushcfunction(L, msgh);
    load_chunk(L, verbs_driver_lua, verbs_driver_lua_len, "@tests/fuzz/verbs_driver.lua");
    lua_pushlstring(L, (const char *)data, size);
    lua_pushstring(L, dir);
    if (lua_pcall(L, 2, 0, 1) != LUA_OK) {
        fprintf(stderr, "fuzz_verbs: %s\n", lua_tostring(L, -1));
        abort();
    }
    lua_close(L); /* collects the catalog handle (closes it) */
    fuzz_rm_tree(dir);
    return 0;
}
