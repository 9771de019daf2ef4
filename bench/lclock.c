/*
 * lclock.c — a monotonic clock and the process's peak RSS for the Lua bench
 * (Lua 5.4 has no wall clock finer than a second; os.clock is CPU time, which
 * misses the time a commit waits for fsync). Built once per runtime:
 * benchclock.now() -> seconds (CLOCK_MONOTONIC), benchclock.maxrss() -> KiB.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <lauxlib.h>
#include <lua.h>
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

int luaopen_benchclock(lua_State *L);
int luaopen_benchclock(lua_State *L)
{
    lua_newtable(L);
    lua_pushcfunction(L, l_now);
    lua_setfield(L, -2, "now");
    lua_pushcfunction(L, l_maxrss);
    lua_setfield(L, -2, "maxrss");
    return 1;
}
