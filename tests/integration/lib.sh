# Shared helpers for the integration tests (sourced by each test_*.sh).
# ctest sets CIPROF (the binary), CIPROF_BUILD (its build dir) and CIPROF_SRC (the source dir);
# run by hand they default to ./build and the tree this file lives in.
set -u

CIPROF_SRC=${CIPROF_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
CIPROF_BUILD=${CIPROF_BUILD:-$CIPROF_SRC/build}
CIPROF=${CIPROF:-$CIPROF_BUILD/ciprof}
TEST_NAME=$(basename "$0" .sh)
FAILURES=0

# fail MSG...: report a failed check and stop the test.
fail() {
	echo "FAIL [$TEST_NAME]: $*" >&2
	exit 1
}

# check_failed MSG...: report a failed check but keep going (the test fails at the end).
check_failed() {
	echo "FAIL [$TEST_NAME]: $*" >&2
	FAILURES=$((FAILURES + 1))
}

ok() {
	echo "ok   [$TEST_NAME]: $*"
}

# skip REASON...: this test cannot run here (not a pass): exit 77, which ctest reports as
# "Not Run" (SKIP_RETURN_CODE, tests/CMakeLists.txt).
skip() {
	echo "SKIP [$TEST_NAME]: $*"
	exit 77
}

# require_sampling: skips the test where `ciprof run` cannot sample at all (no perf_event_open
# and no preload backend), with ciprof's first line of reason.
require_sampling() {
	"$CIPROF" run --no-store -- true >/dev/null 2>"$TMP/probe.err" ||
		skip "ciprof run cannot sample here: $(head -n1 "$TMP/probe.err")"
}

# ctest_project PROGRAM: a CMake project in $TMP/proj with one executable, PROGRAM, built
# from tests/integration/data/PROGRAM.c, and the add_test lines read from stdin (give them
# with `< <(...)`, not a pipe: B must be set in the test's own shell); built into $TMP/build,
# which B names. Skips without cmake and ctest; fails when it does not build.
ctest_project() {
	command -v cmake >/dev/null && command -v ctest >/dev/null || skip "cmake and ctest are needed"
	local prog=$1 P=$TMP/proj
	mkdir -p "$P"
	{
		printf 'cmake_minimum_required(VERSION 3.18)\nproject(%s C)\nenable_testing()\n' "$prog"
		printf 'add_executable(%s %s.c)\n' "$prog" "$prog"
		cat
	} >"$P/CMakeLists.txt"
	cp "$CIPROF_SRC/tests/integration/data/$prog.c" "$P/$prog.c"
	B=$TMP/build
	cmake -S "$P" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$TMP/cmake.log" 2>&1 &&
		cmake --build "$B" >>"$TMP/cmake.log" 2>&1 ||
		fail "cannot build the project: $(tail -5 "$TMP/cmake.log")"
}

# wait_cpu PID TICKS: waits until process PID has used TICKS clock ticks (1/100 s) of CPU
# time, or has ended (at most 60 s): a command has run long enough to be sampled, whatever the
# load, without guessing a wall-clock delay.
wait_cpu() {
	local i t
	for i in $(seq 1200); do
		t=$(awk '{print $14 + $15}' /proc/"$1"/stat 2>/dev/null) || return 0
		[ "${t:-0}" -ge "$2" ] && return 0
		sleep 0.05
	done
}

# finish: exit 0 when no check failed.
finish() {
	if [ "$FAILURES" -ne 0 ]; then
		echo "FAIL [$TEST_NAME]: $FAILURES check(s) failed" >&2
		exit 1
	fi
	echo "PASS [$TEST_NAME]"
	exit 0
}

[ -x "$CIPROF" ] || fail "ciprof binary '$CIPROF' not found or not executable (set CIPROF)"
command -v python3 >/dev/null || fail "python3 is needed by the integration tests"

# A private temporary directory, removed on exit unless KEEP_TMP=1.
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-$TEST_NAME.XXXXXX") || fail "cannot create a temp dir"
cleanup() {
	if [ "${KEEP_TMP:-0}" = 1 ]; then
		echo "note [$TEST_NAME]: kept $TMP" >&2
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT
# Each test's runs share a symbol cache of their own (docs/symbolization.md), never the user's
# ~/.cache/ciprof/symbols: tests running side by side under ctest -j must not serve each other
# names, and a test suite must not fill its user's cache.
export CIPROF_SYMBOL_CACHE=$TMP/symbol-cache

# run_capture NAME CMD...: runs CMD with stdout to $TMP/NAME.out and stderr to $TMP/NAME.err,
# stdin from /dev/null; its status lands in RC. Never fails by itself.
run_capture() {
	local name=$1
	shift
	RC=0
	"$@" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null || RC=$?
}

# run_watched NAME CMD...: run_capture for a command that might hang (a deadlock is a failure
# of its own, not a ctest timeout minutes later). A watchdog waits CIPROF_TEST_HANG_LIMIT
# seconds (default 120, far above any step's need even on a loaded machine: it only tells a
# hang from a slow run, it measures nothing); then it prints the stacks of every thread of the
# command and of its children (gdb, else the kernel's view) and kills them: the check fails
# with "hung" and the stacks, and RC is 137. Pass environment changes as `env VAR=...` in
# CMD, not as a prefix to run_watched (the watchdog's gdb must not inherit them).
run_watched() {
	local name=$1 pid wd limit=${CIPROF_TEST_HANG_LIMIT:-120}
	shift
	RC=0
	rm -f "$TMP/$name.hang"
	"$@" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null &
	pid=$!
	(
		start=$SECONDS
		while kill -0 "$pid" 2>/dev/null; do
			if [ $((SECONDS - start)) -ge "$limit" ]; then
				for p in "$pid" $(ps -o pid= --ppid "$pid" 2>/dev/null); do
					echo "--- pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
					if command -v gdb >/dev/null; then
						gdb -p "$p" -batch -ex 'thread apply all bt' 2>&1 |
							grep -v '^\[New LWP\|^warning:'
					else
						for t in /proc/"$p"/task/*; do
							echo "thread ${t##*/}: $(cat "$t/wchan" 2>/dev/null)"
							cat "$t/stack" 2>/dev/null
						done
					fi
				done >"$TMP/$name.hang.tmp" 2>&1
				mv "$TMP/$name.hang.tmp" "$TMP/$name.hang"
				kill -KILL "$pid" $(ps -o pid= --ppid "$pid" 2>/dev/null) 2>/dev/null
				exit 0
			fi
			sleep 1
		done
	) &
	wd=$!
	wait "$pid" || RC=$?
	kill "$wd" 2>/dev/null
	wait "$wd" 2>/dev/null
	if [ -f "$TMP/$name.hang" ]; then
		check_failed "$name: hung: still running after ${limit} s, killed; its stacks:"
		sed 's/^/    /' "$TMP/$name.hang" >&2
	fi
}

# expect_rc WHAT EXPECTED NAME: checks RC against EXPECTED, showing NAME's stderr if not.
expect_rc() {
	if [ "$RC" -eq "$2" ]; then
		ok "$1: exit status $RC"
	else
		check_failed "$1: exit status $RC, expected $2; stderr was:"
		sed 's/^/    /' "$TMP/$3.err" >&2
	fi
}

# expect_grep WHAT FILE FIXED-STRING: checks that FILE contains the string.
expect_grep() {
	if grep -qF -- "$3" "$2"; then
		ok "$1: found '$3'"
	else
		check_failed "$1: '$3' not found in $(basename "$2"); it holds:"
		sed 's/^/    /' "$2" | head -20 >&2
	fi
}

# expect_no_grep WHAT FILE FIXED-STRING: checks that FILE does not contain the string.
expect_no_grep() {
	if grep -qF -- "$3" "$2"; then
		check_failed "$1: '$3' found in $(basename "$2")"
	else
		ok "$1: no '$3'"
	fi
}

# check_folded FILE: the file is well-formed folded output ("frame;frame;... COUNT" lines,
# positive counts, no empty frames) with at least one sample. Prints the total samples.
check_folded() {
	python3 - "$1" <<'PY'
import sys
path = sys.argv[1]
total = 0
try:
    lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
except OSError as e:
    sys.exit(f"cannot read the folded profile {path}: {e}")
for n, line in enumerate(lines, 1):
    stack, sep, count = line.rpartition(" ")
    if not sep or not count.isdigit() or int(count) <= 0:
        sys.exit(f"{path}:{n}: not 'stack COUNT': {line!r}")
    if any(f == "" for f in stack.split(";")):
        sys.exit(f"{path}:{n}: empty frame in {stack!r}")
    total += int(count)
if total == 0:
    sys.exit(f"{path}: no samples")
print(total)
PY
}

# wide_history DB GEN N [IMPORT-ARG...]: a new git repository in the current directory whose
# main has N commits with fixed dates (the same commits, so the same reports, every time),
# each with its run of tests/tools/wide_suite.py's GEN/base$i.pb imported into DB (the
# IMPORT-ARGs added to each import). GIT_AUTHOR_DATE and GIT_COMMITTER_DATE are left exported
# at the day after, for the caller's pull-request commit.
wide_history() {
	local db=$1 gen=$2 n=$3 i
	shift 3
	git init -q -b main . && git config user.email t@example.com && git config user.name t ||
		fail "git init"
	export GIT_AUTHOR_DATE GIT_COMMITTER_DATE
	for i in $(seq 1 "$n"); do
		GIT_AUTHOR_DATE=$(printf '2026-10-%02dT12:00:00Z' "$i") GIT_COMMITTER_DATE=$GIT_AUTHOR_DATE
		echo "$i" >file
		git add file && git commit -qm "main $i" || fail "git commit $i"
		run_capture imp "$CIPROF" import --db "$db" --format pprof --branch main \
			--commit "$(git rev-parse HEAD)" "$@" "$gen/base$i.pb"
		[ "$RC" -eq 0 ] || { expect_rc "import base run $i" 0 imp; finish; }
	done
	GIT_AUTHOR_DATE=$(printf '2026-10-%02dT12:00:00Z' $((n + 1))) GIT_COMMITTER_DATE=$GIT_AUTHOR_DATE
}
