#!/bin/sh
# run.sh — the body of `make fuzz` (docs/fuzzing.md).
#
#   sh tests/fuzz/run.sh <build dir> <seconds> <jobs> <target>...
#
# For every target: first replays the reproducers in
# tests/fuzz/regressions/<target>/ (the binary run on each file directly),
# then fuzzes for <seconds> on <build dir>/corpus/<target>, plus the
# regressions directory as a read-only input corpus when every reproducer
# passed; <jobs> targets at a time. Logs go to <build dir>/logs/<target>.log,
# crash artifacts to <build dir>/artifacts/<target>/. Prints executions, exec/s, cov and ft per
# target (from libFuzzer's -print_final_stats=1 and its DONE line) and exits
# 1 if any replay or fuzzing run failed.
set -u
B=$1 SECS=$2 JOBS=$3
shift 3
REG=tests/fuzz/regressions
mkdir -p "$B/logs"

run_one() {
    t=$1
    bin=$B/fuzz_$t log=$B/logs/$t.log status=$B/logs/$t.status
    mkdir -p "$B/artifacts/$t" "$B/corpus/$t"
    : > "$log"
    rm -f "$B/logs/$t.replay-failed"
    regdir= replay=ok
    if [ -d "$REG/$t" ] && [ -n "$(ls -A "$REG/$t" 2>/dev/null)" ]; then
        for f in "$REG/$t"/*; do
            echo "== replay $f" >> "$log"
            if ! "$bin" -artifact_prefix="$B/artifacts/$t/replay-" "$f" >> "$log" 2>&1; then
                replay=failed
                echo "$f" >> "$B/logs/$t.replay-failed"
            fi
        done
        [ $replay = ok ] && regdir=$REG/$t
    fi
    echo "== fuzz ${SECS}s" >> "$log"
    # shellcheck disable=SC2086
    if "$bin" -max_total_time="$SECS" -print_final_stats=1 -timeout=60 \
        -artifact_prefix="$B/artifacts/$t/" "$B/corpus/$t" $regdir >> "$log" 2>&1; then
        fuzz=ok
    else
        fuzz=crashed
    fi
    if [ $replay = ok ] && [ $fuzz = ok ]; then echo ok > "$status"
    elif [ $replay = ok ]; then echo crashed > "$status"
    elif [ $fuzz = ok ]; then echo replay-failed > "$status"
    else echo replay-failed,crashed > "$status"; fi
}

echo "fuzz: $* for ${SECS}s each, $JOBS at a time (logs in $B/logs/)"
n=0
for t in "$@"; do
    rm -f "$B/logs/$t.status"
    run_one "$t" &
    n=$((n + 1))
    if [ $((n % JOBS)) -eq 0 ]; then wait; fi
done
wait

fail=0
printf '%-8s %-22s %12s %10s %8s %8s  %s\n' target result executions exec/s cov ft corpus
for t in "$@"; do
    log=$B/logs/$t.log
    st=$(cat "$B/logs/$t.status" 2>/dev/null || echo "not-run")
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    last=$(grep -E '^#[0-9]+.*cov: [0-9]+' "$log" | tail -n 1)
    cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    corp=$(echo "$last" | sed -n 's/.*corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p')
    printf '%-8s %-22s %12s %10s %8s %8s  %s\n' "$t" "$st" "${execs:--}" "${rate:--}" "${cov:--}" "${ft:--}" "${corp:--}"
    if [ "$st" != ok ]; then
        fail=1
        if [ -f "$B/logs/$t.replay-failed" ]; then
            sed 's/^/  reproducer still fails: /' "$B/logs/$t.replay-failed" >&2
        fi
        case $st in
        *crashed*)
            echo "  $t: new crash: see $log; the input is in $B/artifacts/$t/" >&2
            sed -n '/^== fuzz/,$p' "$log" | grep -E '^fuzz_[a-z]+: |^==[0-9]+==ERROR|^SUMMARY: ' | head -n 4 | sed 's/^/    /' >&2
            ;;
        esac
    fi
done
exit $fail
