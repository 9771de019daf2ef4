#!/bin/sh
# examples/openresty/serve.sh [CATALOG_DIR] [PORT] [POLICY] — serve a moraine
# catalog over HTTP with nginx (2 workers, 127.0.0.1:PORT, default 8480).
# Without a catalog, imports the bundled real DuckLake catalog first. POLICY:
# a JSON access policy file (bearer tokens, docs/openresty.md). Stop it with
#   nginx -p "$PREFIX" -c nginx.conf -s quit && rm -rf "$PREFIX"   (printed; the
#   prefix holds the logs and, without CATALOG_DIR, the imported catalog)
# Then try: curl -s localhost:8480/tables/events/files?at=17
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${MORAINE_BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
PORT=${2:-8480}
CATALOG=${1:-}
POLICY=${3:-}
case "$POLICY" in ''|/*) ;; *) POLICY="$(pwd)/$POLICY" ;; esac
command -v nginx >/dev/null || { echo "serve.sh: nginx is not installed (apt-get install nginx-light libnginx-mod-http-lua)" >&2; exit 1; }
[ -f "$BUILD/luajit/moraine/core.so" ] || { echo "serve.sh: build first (make)" >&2; exit 1; }
PREFIX=$(mktemp -d "${TMPDIR:-/tmp}/moraine-nginx.XXXXXX")
mkdir -p "$PREFIX/logs" "$PREFIX/tmp"
if [ -z "$CATALOG" ]; then
  CATALOG="$PREFIX/catalog"
  sh "$ROOT/scripts/run-lua.sh" luajit "$BUILD" /dev/stdin <<LUA
local moraine = require "moraine"
local db = moraine.open("$CATALOG")
db:import_ndjson("$ROOT/examples/catalogs/s1_evolution/catalog")
db:close()
LUA
fi
MODULES=""
if [ -d /etc/nginx/modules-enabled ]; then
  MODULES="include /etc/nginx/modules-enabled/*.conf;"
  # Debian's module snippets name modules/...so relative to the prefix
  [ -d /usr/lib/nginx/modules ] && ln -s /usr/lib/nginx/modules "$PREFIX/modules"
fi
USER_LINE=""
[ "$(id -u)" = 0 ] && USER_LINE="user root;"
sed -e "s|@ROOT@|$ROOT|g" -e "s|@LUA_CPATH@|$BUILD/luajit|g" -e "s|@CATALOG@|$CATALOG|g" -e "s|@PORT@|$PORT|g" \
    -e "s|@USER@|$USER_LINE|g" -e "s|@MODULES@|$MODULES|g" "$ROOT/examples/openresty/nginx.conf.in" > "$PREFIX/nginx.conf"
PRELOAD=""
# an ASan build of the module needs the sanitizer runtime in nginx (make asan)
[ "${MORAINE_ASAN:-0}" = 1 ] && PRELOAD=$(gcc -print-file-name=libasan.so)
MORAINE_CATALOG="$CATALOG" MORAINE_POLICY="$POLICY" LD_PRELOAD="$PRELOAD" ASAN_OPTIONS=detect_leaks=0 nginx -p "$PREFIX" -c nginx.conf -e logs/error.log
echo "serving $CATALOG on http://127.0.0.1:$PORT/ (prefix $PREFIX)"
echo "stop with: nginx -p $PREFIX -c nginx.conf -s quit && rm -rf $PREFIX"
