-- luacheck configuration (Debian's lua-check). `make lint` checks every Lua
-- file of the repository with it; `make test` runs the same check and counts
-- it in its closing line.
std = "max"                 -- the code runs on Lua 5.4 and on LuaJIT (5.1 + extensions)
max_line_length = false     -- long literal rows (fixture scenarios, SQL, expected answers) stay whole
codes = true

-- moraine.http runs inside nginx's Lua module, which provides the global `ngx`.
-- sha256_bin: OpenResty builds that have it (moraine.http probes for it);
-- luacheck's ngx_lua definition lacks it.
files["bindings/moraine/http.lua"] = { std = "+ngx_lua", read_globals = { ngx = { fields = { "sha256_bin" } } } }
files["bindings/moraine/layout_http.lua"] = { std = "+ngx_lua" }
-- busted's globals (describe, it, assert, pending, ...)
files["spec/"] = { std = "+busted" }

exclude_files = { "build/", "build-asan/", "build-fuzz/", "bench/node_modules/", "bench/work/", "lua_modules/", ".luarocks/" }
