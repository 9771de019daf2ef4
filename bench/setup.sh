#!/bin/sh
# setup.sh — what the benchmark needs beyond the build and tests
# (scripts/install-deps.sh): the SQLite C library, node and npm, eatmydata
# (to run DuckDB's commits without fsync: DuckDB has no switch for it), and
# the npm package @duckdb/node-api in bench/node_modules (package-lock.json).
# Safe to run again. Fails, naming what is missing, when it cannot install.
set -e
here=$(cd "$(dirname "$0")" && pwd)
need=""
for p in libsqlite3-dev eatmydata nodejs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
done
command -v npm >/dev/null 2>&1 || need="$need npm"
if [ -n "$need" ]; then
  echo "bench: installing Debian packages:$need"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $need
fi
command -v node >/dev/null 2>&1 || { echo "bench: FAILED: node is not installed (the DuckDB peer runs on node)" >&2; exit 1; }
if [ ! -d "$here/node_modules/@duckdb/node-api" ]; then
  echo "bench: installing @duckdb/node-api into bench/node_modules"
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error) || {
    echo "bench: FAILED: npm could not install @duckdb/node-api (the DuckDB peer cannot run)" >&2; exit 1; }
fi
