/*
 * lclock.c — a monotonic clock and the process's peak RSS for the Lua bench
 * (Lua 5.4 has no wall clock finer than a second; os.clock is CPU time, which
 * misses the time a commit waits for fsync). Built once per runtime:
 * benchclock.now() -> seconds (CLOCK_MONOTONIC), benchclock.maxrss() -> KiB.
 * For the interleaved Lua runs (bench/lua_interleave.lua), the indexed SQLite
 * peer in the same process, timed the way bench.c times it (C stepping every
 * row and reading every column): benchclock.sqlite_open(path) -> handle,
 * benchclock.sqlite_run(handle, sql_text) -> rows of the first statement
 * (statements separated by "\n-- next\n").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <lauxlib.h>
#include <lua.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static int l_now(lua_State *L)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    lua_pushnumber(L, (lua_Number)t.tv_sec + (lua_Number)t.tv_nsec * 1e-9);
    return 1;
}

static int l_maxrss(lua_State *L)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    lua_pushnumber(L, (lua_Number)ru.ru_maxrss);
    return 1;
}

static int l_sqlite_open(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    sqlite3 **h = (sqlite3 **)lua_newuserdata(L, sizeof *h);
    if (sqlite3_open_v2(path, h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) return luaL_error(L, "sqlite_open %s: %s", path, sqlite3_errmsg(*h));
    return 1; /* the bench keeps it open for the process's life */
}

static int l_sqlite_run(lua_State *L)
{
    sqlite3 **h = (sqlite3 **)lua_touserdata(L, 1);
    size_t len;
    const char *text = luaL_checklstring(L, 2, &len);
    char *all = malloc(len + 1);
    memcpy(all, text, len + 1);
    uint64_t first = 0, sink = 0;
    int nst = 0;
    for (char *cur = all;;) {
        char *sep = strstr(cur, "\n-- next\n");
        if (sep) *sep = 0;
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(*h, cur, -1, &st, NULL) != SQLITE_OK) {
            free(all);
            return luaL_error(L, "sqlite: %s", sqlite3_errmsg(*h));
        }
        int nc = sqlite3_column_count(st);
        uint64_t rows = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            rows++;
            for (int k = 0; k < nc; k++) {
                switch (sqlite3_column_type(st, k)) {
                case SQLITE_INTEGER: sink += (uint64_t)sqlite3_column_int64(st, k); break;
                case SQLITE_FLOAT: sink += (uint64_t)sqlite3_column_double(st, k); break;
                case SQLITE_TEXT: {
                    const unsigned char *t = sqlite3_column_text(st, k);
                    int n = sqlite3_column_bytes(st, k);
                    sink += (uint64_t)n + (n ? t[0] : 0);
                    break;
                }
                case SQLITE_NULL: sink++; break;
                default: sink += (uint64_t)sqlite3_column_bytes(st, k);
                }
            }
        }
        sqlite3_finalize(st);
        if (nst++ == 0) first = rows;
        if (!sep) break;
        cur = sep + 9;
    }
    free(all);
    lua_pushnumber(L, (lua_Number)first);
    lua_pushnumber(L, (lua_Number)(sink & 0xFFFF));
    return 2;
}

int luaopen_benchclock(lua_State *L);
int luaopen_benchclock(lua_State *L)
{
    lua_newtable(L);
    lua_pushcfunction(L, l_now);
    lua_setfield(L, -2, "now");
    lua_pushcfunction(L, l_maxrss);
    lua_setfield(L, -2, "maxrss");
    lua_pushcfunction(L, l_sqlite_open);
    lua_setfield(L, -2, "sqlite_open");
    lua_pushcfunction(L, l_sqlite_run);
    lua_setfield(L, -2, "sqlite_run");
    return 1;
}
