#!/bin/sh
# run-lua.sh RUNTIME BUILD SCRIPT [ARGS...]
# Runs SCRIPT with RUNTIME (lua5.4 or luajit, a name or a path) so that
# `require "moraine"` finds bindings/moraine.lua and `moraine.core` the module
# built for that runtime: $BUILD/lua54/moraine/core.so or
# $BUILD/luajit/moraine/core.so. Any LUA_PATH/LUA_CPATH already set (and the
# runtime's default paths, ";;") stay searched after them.
set -e
if [ $# -lt 3 ]; then
  echo "usage: $0 RUNTIME BUILD SCRIPT [ARGS...]   (RUNTIME: lua5.4 | luajit)" >&2
  exit 2
fi
runtime=$1
build=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
case "$build" in
  /*) ;;
  *) build="$(pwd)/$build" ;;
esac
case "$(basename "$runtime")" in
  lua5.4*|lua54*) sub=lua54 ;;
  luajit*) sub=luajit ;;
  *) echo "run-lua.sh: unknown runtime '$runtime' (expected lua5.4 or luajit)" >&2; exit 2 ;;
esac
if [ ! -f "$build/$sub/moraine/core.so" ]; then
  echo "run-lua.sh: $build/$sub/moraine/core.so not built (run make lua)" >&2
  exit 1
fi
if [ "$sub" = lua54 ]; then
  # Lua 5.4 prefers LUA_PATH_5_4 over LUA_PATH: fold it in and unset it.
  old_path=${LUA_PATH_5_4:-${LUA_PATH:-}}
  old_cpath=${LUA_CPATH_5_4:-${LUA_CPATH:-}}
  unset LUA_PATH_5_4 LUA_CPATH_5_4
else
  old_path=${LUA_PATH:-}
  old_cpath=${LUA_CPATH:-}
fi
LUA_PATH="$root/bindings/?.lua;${old_path:+$old_path;};"
LUA_CPATH="$build/$sub/?.so;${old_cpath:+$old_cpath;};"
export LUA_PATH LUA_CPATH
exec "$runtime" "$@"
