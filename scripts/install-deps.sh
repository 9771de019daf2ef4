#!/bin/sh
# scripts/install-deps.sh [GROUP...] — installs the Debian packages a make
# target needs, when any is missing. Safe to run again: it does nothing when
# all are present. As root, or through sudo.
#
#   demo      build tools, LMDB, jansson, SQLite's C library (moraine_import_sqlite),
#             Lua 5.4 and LuaJIT, LPeg, argparse (the moraine command's command
#             line) (make, make demo)
#   test      demo + busted, luassert, Penlight, SQLite and LuaSQL (sqlite3 and
#             postgres), PostgreSQL (the sync tests start their own server), nginx with
#             its Lua module, curl, luacheck, LDoc, luarocks, man, chromium
#             (headless, for the SVG rendering test) (make test)
#   asan      test + clang's sanitizer runtime (make asan)
#   valgrind  test + valgrind (make valgrind)
#   fuzz      demo + clang, libFuzzer, xxd (make fuzz)
#   bench     demo (make bench; bench/setup.sh adds node)
#   rock      demo + luarocks (luarocks make moraine-scm-1.rockspec)
#   lint      luacheck (make lint)
#   docs      LDoc and lua-discount, its Markdown processor (make docs; config.ld)
#
# No GROUP: every group.
#
# LuaJIT comes as Debian's luajit2 (the OpenResty branch): nginx's Lua module
# (libnginx-mod-http-lua) links it and conflicts with the plain luajit package,
# and the Lua module must load in both the luajit command and nginx workers.
#
# nginx: Debian's package starts a server on port 80 when it is installed.
# While this script installs packages it puts a policy-rc.d in place that
# refuses every service start (exit 101, Debian's policy interface), unless
# one exists already; the nginx service is then installed but not running
# (the HTTP tests start their own nginx on a free port of 127.0.0.1).
set -e

DEMO="build-essential pkg-config liblmdb-dev lmdb-utils libjansson-dev libsqlite3-dev lua5.4 liblua5.4-dev luajit2 libluajit2-5.1-dev lua-lpeg lua-argparse"
LINT="lua-check"
DOCS="lua-ldoc lua-discount"
TEST="$DEMO $LINT $DOCS git lua-busted lua-luassert lua-penlight sqlite3 lua-sql-sqlite3 postgresql lua-sql-postgres nginx-light libnginx-mod-http-lua curl luarocks man-db groff-base chromium"
CLANG="clang libclang-rt-14-dev"

PKGS=""
[ $# -eq 0 ] && set -- demo test asan valgrind fuzz bench rock lint docs
for group in "$@"; do
  case "$group" in
  demo) PKGS="$PKGS $DEMO" ;;
  test) PKGS="$PKGS $TEST" ;;
  asan) PKGS="$PKGS $TEST $CLANG" ;;
  valgrind) PKGS="$PKGS $TEST valgrind" ;;
  fuzz) PKGS="$PKGS $DEMO $CLANG xxd" ;;
  bench) PKGS="$PKGS $DEMO" ;;
  rock) PKGS="$PKGS $DEMO luarocks" ;;
  lint) PKGS="$PKGS $LINT" ;;
  docs) PKGS="$PKGS $DOCS" ;;
  *)
    echo "install-deps.sh: unknown group '$group' (demo, test, asan, valgrind, fuzz, bench, rock, lint, docs)" >&2
    exit 2
    ;;
  esac
done

missing=""
for p in $PKGS; do
  case " $missing " in *" $p "*) continue ;; esac
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "moraine: installing Debian packages:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

# No service starts while installing (nginx would listen on port 80).
POLICY=/usr/sbin/policy-rc.d
if [ ! -e "$POLICY" ]; then
  printf '#!/bin/sh\n# moraine install-deps.sh: no service starts during the install\nexit 101\n' | $SUDO tee "$POLICY" >/dev/null
  $SUDO chmod 755 "$POLICY"
  trap '$SUDO rm -f "$POLICY"' EXIT
  trap 'exit 1' INT TERM
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
