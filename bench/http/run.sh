#!/bin/sh
# bench/http/run.sh [N_FILES] [SECONDS] — requests per second and latency of
# moraine.http's files endpoint under nginx (2 workers) for a table of N_FILES
# data files (default 50,000), measured with wrk (2 threads, 8 connections).
# Also a small-answer endpoint (/tables/t) for comparison. Prints wrk's output.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${MORAINE_BUILD:-build}
N=${1:-50000}
SECS=${2:-10}
PORT=${MORAINE_BENCH_PORT:-18480}
command -v wrk >/dev/null || { echo "bench/http: wrk is not installed (apt-get install wrk)" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/moraine-http-bench.XXXXXX")
PREFIX=""
trap '[ -n "$PREFIX" ] && nginx -p "$PREFIX" -c nginx.conf -s quit 2>/dev/null; sleep 0.3; rm -rf "$WORK" "$PREFIX"' EXIT
sh "$ROOT/scripts/run-lua.sh" luajit "$BUILD" "$ROOT/bench/http/make_table.lua" "$WORK/catalog" "$N"
OUT=$(MORAINE_BUILD=$BUILD sh "$ROOT/examples/openresty/serve.sh" "$WORK/catalog" "$PORT")
PREFIX=$(echo "$OUT" | sed -n 's/.*(prefix \(.*\))/\1/p')
sleep 0.5
BYTES=$(curl -s "http://127.0.0.1:$PORT/tables/t/files" | wc -c)
echo "files endpoint: $N files, $BYTES bytes of JSON per response"
echo "== wrk: GET /tables/t/files ($N files), 2 nginx workers, ${SECS}s"
wrk -t2 -c8 -d"${SECS}s" --latency "http://127.0.0.1:$PORT/tables/t/files"
echo "== wrk: GET /tables/t (columns and specs), 2 nginx workers, ${SECS}s"
wrk -t2 -c8 -d"${SECS}s" --latency "http://127.0.0.1:$PORT/tables/t"
