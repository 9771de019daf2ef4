#!/bin/sh
# Installs the Debian packages moraine's build, tests and demo need, when any
# is missing. Safe to run again: it does nothing when all are present.
# LuaJIT comes as Debian's luajit2 (the OpenResty branch): nginx's Lua module
# (libnginx-mod-http-lua) links it and conflicts with the plain luajit package,
# and the Lua module must load in both the luajit command and nginx workers.
set -e
PKGS="build-essential pkg-config liblmdb-dev lmdb-utils libjansson-dev lua5.4 liblua5.4-dev luajit2 libluajit2-5.1-dev lua-busted lua-luassert lua-penlight clang libclang-rt-14-dev valgrind nginx-light libnginx-mod-http-lua curl sqlite3 lua-sql-sqlite3 luarocks"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "moraine: installing Debian packages:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
