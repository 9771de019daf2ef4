#!/bin/sh
# tests/run-all.sh BUILD [which] — runs moraine's tests and sums their counts.
#
#   BUILD  the build tree (build, build-asan, ...), holding tests/test_* and
#          lua54/ + luajit/ (the Lua module moraine/core.so)
#   which  empty: everything (C tests, busted under both runtimes, luacheck);
#          c: the C test binaries; lua54 / luajit: the busted specs under that
#          runtime; lint: luacheck on every Lua file (.luacheckrc); valgrind:
#          the C test binaries and the busted specs (Lua 5.4,
#          MORAINE_PROPERTY_CASES=40 unless set) under valgrind memcheck (use a
#          build without sanitizers)
#
# Every C test binary ends with one "N passed, N failed" line; busted runs with
# its TAP output (ok N / not ok N / ok N - # SKIP / 1..N); luacheck counts as
# one check, passed when it finds nothing. A runner that crashes, exits
# non-zero without a failed check, or prints no summary counts as one failure,
# with the reason printed; so does a tests/c/test_*.c whose binary is missing.
# MORAINE_ASAN=1 (make asan) preloads the sanitizer runtime into the Lua
# interpreters, which are not instrumented themselves.
#
# Skipped (pending) tests: with MORAINE_NO_SKIP=1 (make test, make asan,
# make valgrind) or CI=true each one counts as a failure, since the setup
# installs everything the tests need; otherwise they are counted apart.
#
# Temporary files: every suite runs with TMPDIR set to a private directory of
# this run; anything left in it afterwards counts as one failure naming the
# leftovers (the suites must clean up after themselves). With CI=true (a
# machine of its own) or MORAINE_CHECK_TMP=1, so does anything new in /tmp
# (programs that ignore TMPDIR: Lua's os.tmpname, LDoc's templates).
#
# The last line is "N passed, N failed" (", N skipped" follows outside
# MORAINE_NO_SKIP=1 / CI=true); the exit status is 1 when anything failed.

BUILD=${1:-build}
WHICH=${2:-}
case "$WHICH" in
"" | c | lua54 | luajit | lint | valgrind) ;;
*)
	echo "usage: sh tests/run-all.sh BUILD [c|lua54|luajit|lint|valgrind]" >&2
	echo "0 passed, 1 failed"
	exit 1
	;;
esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
case "$BUILD" in
/*) BUILD_ABS=$BUILD ;;
*) BUILD_ABS=$(pwd)/$BUILD ;;
esac
cd "$ROOT" || exit 1

TMP=$(mktemp -d "${TMPDIR:-/tmp}/moraine-run-all.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM
CHECK_SYSTMP=0
if [ "${CI:-}" = true ] || [ "${MORAINE_CHECK_TMP:-0}" = 1 ]; then
	CHECK_SYSTMP=1
	ls -A /tmp | grep -vxF "$(basename "$TMP")" | sort >"$TMP/systmp-before"
fi
# the suites' own temporary files go here, and must be gone when they end
TMPDIR=$TMP/tmp
export TMPDIR
mkdir "$TMPDIR" || exit 1

STRICT=0
if [ "${MORAINE_NO_SKIP:-0}" = 1 ] || [ "${CI:-}" = true ]; then STRICT=1; fi

PASSED=0
FAILED=0
SKIPPED=0
REASONS=""

note_failure() { # one failure that is not a failed check: a crash, a missing runner
	FAILED=$((FAILED + 1))
	note_reason "$1"
}

note_reason() { # why the failed count grew (counted by the caller)
	REASONS="$REASONS
  - $1"
	echo "!! $1"
}

describe_status() {
	if [ "$1" -gt 128 ] && [ "$1" -lt 160 ]; then
		echo "killed by signal $(($1 - 128))"
	else
		echo "exit status $1"
	fi
}

if [ "${MORAINE_ASAN:-0}" = 1 ]; then
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
	export UBSAN_OPTIONS
fi

# ---- C tests -------------------------------------------------------------------
run_c() { # $1 = "" or "valgrind"
	if [ "$1" = valgrind ]; then
		echo "== C tests under valgrind ($BUILD/tests)"
		if ! command -v valgrind >/dev/null 2>&1; then
			note_failure "valgrind is not installed (sh scripts/install-deps.sh)"
			return
		fi
	else
		echo "== C tests ($BUILD/tests)"
	fi
	found=0
	# the binaries of the sources that exist (not a stale binary of a removed test)
	for src in tests/c/test_*.c; do
		[ -f "$src" ] || continue
		found=1
		name=$(basename "$src" .c)
		bin="$BUILD_ABS/tests/$name"
		if [ ! -x "$bin" ]; then
			note_failure "$name: $BUILD/tests/$name is not built (make $BUILD/tests/$name)"
			continue
		fi
		echo "-- $name"
		out="$TMP/$name.out"
		if [ "$1" = valgrind ]; then
			{
				valgrind -q --leak-check=full --error-exitcode=99 "$bin" 2>&1
				echo $? >"$TMP/rc"
			} | tee "$out"
		else
			{
				"$bin" 2>&1
				echo $? >"$TMP/rc"
			} | tee "$out"
		fi
		rc=$(cat "$TMP/rc")
		summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
		if [ -z "$summary" ]; then
			note_failure "$name: no 'N passed, N failed' line ($(describe_status "$rc")): crashed?"
			continue
		fi
		p=${summary%% passed*}
		f=${summary#*, }
		f=${f%% failed*}
		PASSED=$((PASSED + p))
		FAILED=$((FAILED + f))
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
			if [ "$rc" -eq 99 ] && [ "$1" = valgrind ]; then
				note_failure "$name: valgrind reported errors or leaks"
			else
				note_failure "$name: $(describe_status "$rc") although no check failed (sanitizer report or leak?)"
			fi
		elif [ "$rc" -eq 0 ] && [ "$f" -ne 0 ]; then
			note_failure "$name: $f checks failed but the exit status is 0"
		fi
	done
	if [ "$found" = 0 ]; then
		note_failure "no C test sources in tests/c"
	fi
}

# ---- busted specs ----------------------------------------------------------------
run_lua() { # $1 = lua54 | luajit
	runtime=$1
	if [ "$runtime" = lua54 ]; then interp=lua5.4; else interp=luajit; fi
	echo "== busted specs under $interp ($BUILD/$runtime)"
	specs=$(find spec -name '*_spec.lua' 2>/dev/null | head -n 1)
	if [ -z "$specs" ]; then
		echo "spec/ has no *_spec.lua yet: nothing to run under $interp (counts nothing)"
		return
	fi
	if ! command -v "$interp" >/dev/null 2>&1; then
		note_failure "$interp is not installed (sh scripts/install-deps.sh)"
		return
	fi
	if [ ! -f /usr/bin/busted ]; then
		note_failure "busted is not installed at /usr/bin/busted (sh scripts/install-deps.sh)"
		return
	fi
	out="$TMP/busted-$runtime.out"
	lpath="$ROOT/bindings/?.lua;$ROOT/spec/?.lua;;"
	cpath="$BUILD_ABS/$runtime/?.so;;"
	preload=""
	asan_opts=${ASAN_OPTIONS:-}
	if [ "${MORAINE_ASAN:-0}" = 1 ]; then
		preload=$(gcc -print-file-name=libasan.so)
		asan_opts=detect_leaks=0
	fi
	wrap=""
	cases=${MORAINE_PROPERTY_CASES:-}
	if [ "${2:-}" = valgrind ]; then
		# the interpreter under memcheck: definite leaks and invalid accesses fail
		# the run; the property suites run fewer cases (valgrind is ~30x slower)
		wrap="valgrind -q --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99"
		cases=${cases:-40}
	fi
	{
		# Lua 5.4 reads LUA_PATH_5_4 before LUA_PATH: set both.
		env LUA_PATH="$lpath" LUA_CPATH="$cpath" LUA_PATH_5_4="$lpath" LUA_CPATH_5_4="$cpath" MORAINE_BUILD="$BUILD_ABS" \
			LD_PRELOAD="$preload" ASAN_OPTIONS="$asan_opts" MORAINE_PROPERTY_CASES="$cases" \
			$wrap "$interp" /usr/bin/busted --run=plain -o TAP spec 2>&3
		echo $? >"$TMP/rc"
	} 3>&2 | tee "$out" # only stdout is TAP: stderr (a program's chatter, a sanitizer) is shown, never counted
	rc=$(cat "$TMP/rc")
	ok=$(grep -cE '^ok [0-9]+' "$out")
	skip=$(grep -cE '^ok [0-9]+ - # SKIP' "$out")
	notok=$(grep -cE '^not ok [0-9]+' "$out")
	plan=$(grep -E '^1\.\.[0-9]+' "$out" | tail -n 1)
	plan=${plan#1..}
	ok=$((ok - skip))
	PASSED=$((PASSED + ok))
	FAILED=$((FAILED + notok))
	if [ "$skip" -gt 0 ]; then
		if [ "$STRICT" = 1 ]; then
			FAILED=$((FAILED + skip))
			note_reason "busted under $interp: $skip skipped (pending) tests, counted as failures (make test / CI install what they need):
$(grep -E '^ok [0-9]+ - # SKIP' "$out" | sed 's/^/      /')"
		else
			SKIPPED=$((SKIPPED + skip))
			echo "($skip pending/skipped under $interp)"
		fi
	fi
	if [ -z "$plan" ]; then
		note_failure "busted under $interp printed no TAP plan ($(describe_status "$rc")): crashed?"
	elif [ $((ok + skip + notok)) -ne "$plan" ]; then
		note_failure "busted under $interp: plan 1..$plan but $((ok + skip + notok)) results ($(describe_status "$rc"))"
	elif [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then
		note_failure "busted under $interp: $(describe_status "$rc") although every test passed (sanitizer report?)"
	fi
}

# ---- luacheck ---------------------------------------------------------------------
run_lint() {
	echo "== luacheck (.luacheckrc)"
	if ! command -v luacheck >/dev/null 2>&1; then
		note_failure "luacheck is not installed (sh scripts/install-deps.sh lint)"
		return
	fi
	# the same file list as make lint
	if luacheck -q --no-color bindings scripts/moraine scripts spec examples tests/fuzz bench; then
		echo "luacheck: clean"
		PASSED=$((PASSED + 1))
	else
		note_failure "luacheck found problems in the Lua files (above; make lint)"
	fi
}

# ---- leftovers -------------------------------------------------------------------
check_tmp() {
	left=$(cd "$TMPDIR" && ls -A)
	if [ -n "$left" ]; then
		note_failure "the suites left files in TMPDIR: $(echo "$left" | tr '\n' ' ')"
		rm -rf "$TMPDIR" && mkdir "$TMPDIR"
	fi
	if [ "$CHECK_SYSTMP" = 1 ]; then
		new=$(ls -A /tmp | grep -vxF "$(basename "$TMP")" | sort | comm -13 "$TMP/systmp-before" -)
		if [ -n "$new" ]; then
			# a file another program on the machine makes and removes at once is
			# not a leftover: keep only those still there a second later
			sleep 1
			new=$(echo "$new" | while IFS= read -r f; do [ -e "/tmp/$f" ] && echo "$f"; done)
		fi
		if [ -n "$new" ]; then
			note_failure "the suites left files in /tmp: $(echo "$new" | tr '\n' ' ')"
		fi
	fi
}

case "$WHICH" in
"")
	run_c ""
	run_lua lua54
	run_lua luajit
	run_lint
	;;
c) run_c "" ;;
lint) run_lint ;;
valgrind)
	run_c valgrind
	run_lua lua54 valgrind
	;;
lua54 | luajit) run_lua "$WHICH" ;;
esac

check_tmp

if [ -n "$REASONS" ]; then
	echo "== runner failures:$REASONS"
fi
if [ "$STRICT" = 1 ]; then
	echo "$PASSED passed, $FAILED failed"
else
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
fi
[ "$FAILED" -eq 0 ]
