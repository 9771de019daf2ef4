#!/bin/sh
# run.sh BUILD — one benchmark run: generate (or reuse) the catalog, load it
# into every store, time every workload, print the table. `make bench` runs
# it. Sizes come from the environment (defaults: a small catalog):
#   BENCH_TABLES (4) BENCH_FILES (40000) BENCH_PKEYS (3) BENCH_ERAS (4)
#   BENCH_STATS (8) BENCH_SNAPSHOTS (0: files per table / 50) BENCH_COMPACT (0.3)
#   BENCH_DELETES (0.02) BENCH_SEED (42) BENCH_RUNS (5) BENCH_IMPORT_RUNS (BENCH_RUNS)
#   BENCH_WORK (bench/work/<sizes>) BENCH_INTERLEAVE_ROUNDS (21)
# Any peer that cannot run stops the run with its reason.
set -e
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
T=${BENCH_TABLES:-4}; F=${BENCH_FILES:-40000}; PK=${BENCH_PKEYS:-3}; E=${BENCH_ERAS:-4}
K=${BENCH_STATS:-8}; N=${BENCH_SNAPSHOTS:-0}; C=${BENCH_COMPACT:-0.3}; D=${BENCH_DELETES:-0.02}; SEED=${BENCH_SEED:-42}
key="t$T-f$F-p$PK-e$E-k$K-n$N-c$C-d$D-s$SEED"
work=${BENCH_WORK:-$root/bench/work/$key}
bin=$build/bench
fail() { echo "bench: FAILED: $*" >&2; exit 1; }
step() { echo "== $*" >&2; }

mkdir -p "$work"
if [ ! -f "$work/meta.json" ]; then
  step "generating the catalog ($key) in $work"
  "$bin/gen" "$work" --tables "$T" --files "$F" --pkeys "$PK" --eras "$E" --stats "$K" \
    --snapshots "$N" --compact "$C" --deletes "$D" --seed "$SEED" || fail "the generator failed"
fi
node bench/sql.mjs "$work/meta.json" "$work/sql" || fail "cannot write the SQL"
rm -rf "$work/results"

step "moraine through C"
"$bin/bench" moraine "$work" || fail "the moraine C peer failed"
step "raw LMDB floor"
"$bin/bench" floor "$work" || fail "the floor failed"
for rt in luajit lua5.4; do
  step "moraine through Lua ($rt)"
  sub=lua54; [ "$rt" = luajit ] && sub=luajit
  LUA_CPATH="$root/$bin/$sub/?.so;;" sh scripts/run-lua.sh "$rt" "$build" bench/lua_bench.lua "$work" || fail "the Lua peer ($rt) failed"
done
step "SQLite, DuckLake's schema as created"
"$bin/bench" sqlite "$work" plain || fail "the SQLite peer failed"
step "SQLite with table_id-first indexes"
"$bin/bench" sqlite "$work" indexed || fail "the indexed SQLite peer failed"
step "interleaved (a) and (d): raw LMDB floor, moraine C (projected, row at a time), indexed SQLite"
"$bin/bench" interleave "$work" || fail "the interleaved C run failed"
for rt in luajit lua5.4; do
  step "interleaved (a) and (d) through Lua ($rt): rd:files_batch, rd:files, rd:snapshot + rd:scan_columns, indexed SQLite"
  sub=lua54; [ "$rt" = luajit ] && sub=luajit
  LUA_CPATH="$root/$bin/$sub/?.so;;" sh scripts/run-lua.sh "$rt" "$build" bench/lua_interleave.lua "$work" || fail "the interleaved Lua run ($rt) failed"
done
step "one-file commits interleaved: moraine C, SQLite as DuckLake creates it, indexed SQLite"
"$bin/bench" commit1 "$work" 11 200 || fail "the interleaved one-file commits failed"
step "DuckDB (@duckdb/node-api)"
for ph in load serve commits; do
  node bench/duckdb_bench.mjs "$work" "$ph" || fail "the DuckDB peer failed ($ph)"
done
command -v eatmydata >/dev/null 2>&1 || fail "eatmydata is missing (bench/setup.sh installs it): DuckDB's no-fsync commits cannot run"
eatmydata node bench/duckdb_bench.mjs "$work" commits-nosync || fail "the DuckDB peer failed (commits-nosync)"
rm -rf "$work/stores"
step "results ($work/results/table.md)"
node bench/report.mjs "$work"
