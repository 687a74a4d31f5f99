#!/bin/bash
# Short CTest tests that run one program: each is named by its command line, read from /proc as
# it execs. ciprof reads its rings every 25 ms; a test shorter than that, or run while ciprof
# waits for a CPU, was gone before its exec was read, and with several such tests of one
# program elimination cannot tell them apart: their samples went outside tests (5-8 of 10 such
# runs lost one on an idle machine, bench/ab/bell.sh). The exec doorbells wake ciprof at each
# exec, and an exec read before execve put its command line in place is asked again.
# Made certain here, without timing: CIPROF_TEST_ROUND_MS=60000 leaves the doorbells (armed
# from the start: the command is ctest) as the only wake-up while ctest runs (its output goes
# to a file, not through ciprof), and each test sleeps 300 ms after its work, so only a
# doorbell makes ciprof read its exec in time. Without
# the doorbells (CIPROF_TEST_NO_BELL=1) the same run loses the tests: the check can fail.
. "$(dirname "$0")/lib.sh"

require_sampling
# (not in a pipeline: B is set, and a skip or failure ends the test)
ctest_project spin < <(for t in 1 2 3 4 5 6; do
	printf 'add_test(NAME spin_%s COMMAND spin %s 300)\n' $t $((20 + t))
done)

named() { # WHAT: prints how many of the six tests have CPU time of their own
	"$CIPROF" show --db "$TMP/$1.db" --by test --format json | python3 -c '
import json, sys
t = {x["name"]: x["samples"] for x in json.load(sys.stdin)["tests"]}
print(sum(1 for i in range(1, 7) if t.get(f"spin_{i}", 0) > 0))'
}

check_run() { # WHAT ENV...
	local what=$1
	shift
	rm -f "$TMP/$what.db" "$B/Testing/Temporary/CTestCostData.txt"
	run_capture "$what" env CIPROF_TEST_ROUND_MS=60000 "$@" "$CIPROF" run -v --db "$TMP/$what.db" \
		-- ctest --test-dir "$B" -j2
	expect_rc "$what: ciprof run" 0 "$what"
}

check_run bell
grep -q "no exec doorbells (" "$TMP/bell.err" &&
	skip "the kernel refuses the exec doorbells here: $(grep "no exec doorbells" "$TMP/bell.err")"
n=$(named bell)
[ "$n" = 6 ] && ok "every test is named at its exec (6 of 6)" ||
	check_failed "$n of 6 tests named; stderr: $(tail -5 "$TMP/bell.err")"
expect_no_grep "no test process ended unread" "$TMP/bell.err" "ended before their command line"
expect_grep "the doorbells rang" "$TMP/bell.err" "exec doorbells rang"

run_capture plain "$CIPROF" -v -v run --no-store -- sh -c 'true; true'
expect_no_grep "without a ctest there are no doorbells" "$TMP/plain.err" "exec doorbells"

# A ctest behind a shell: a command that mentions ctest has the doorbells from its start, so
# even with no rounds the ctest's exec is read at once (it is asked for its tests) and so are
# its tests'. A shell command without "ctest" in it (ctest behind a script) has them opened
# disabled, and armed when a round sees the ctest start: checked with the default rounds (it
# runs for a second here, six 300 ms tests at -j2).
rm -f "$TMP/shell.db" "$B/Testing/Temporary/CTestCostData.txt"
run_capture shell env CIPROF_TEST_ROUND_MS=60000 "$CIPROF" run -v --db "$TMP/shell.db" \
	-- sh -c "ctest --test-dir '$B' -j2 >'$TMP/shell.ctest' 2>&1"
expect_rc "shell: ciprof run" 0 shell
n=$(named shell)
[ "$n" = 6 ] && ok "behind sh -c, every test is named at its exec (6 of 6)" ||
	check_failed "behind sh -c, $n of 6 tests named; stderr: $(tail -5 "$TMP/shell.err")"
printf '#!/bin/sh\nexec ctest --test-dir "%s" -j2\n' "$B" >"$TMP/run-tests"
chmod +x "$TMP/run-tests"
rm -f "$B/Testing/Temporary/CTestCostData.txt"
export RUNDIR=$TMP # not on the command line: its path has "ctest" in it
run_capture script "$CIPROF" -v -v run --no-store -- sh -c 'cd "$RUNDIR" && ./run-tests && true'
expect_rc "script: ciprof run" 0 script
expect_grep "a ctest behind a script arms the doorbells when seen" "$TMP/script.err" \
	"exec doorbells on: ctest process"

check_run nobell CIPROF_TEST_NO_BELL=1
n=$(named nobell)
[ "$n" -le 1 ] && ok "without the doorbells the tests are lost ($n of 6 named): the check can fail" ||
	check_failed "without the doorbells $n of 6 tests were named: the run did not depend on them"

# Forty tests of one program, 0 to 2 ms of CPU each and no sleep (what gtest_discover_tests
# makes), beside a CPU hog. The exec record rings before execve has put the command line in
# place; ciprof reads it again at once, which names every such test when it has a CPU to run
# on. Beside a hog it has none: it runs when a test ends or the scheduler preempts one, and a
# test this short has ended by then. How many are lost depends on the scheduler (up to 27 of
# 40 here, docs/attribution.md), so that number is not checked. What is: every
# test is either named by its command line (its third argument tells it apart) or counted in
# the warning the run prints without -v. Before, the count was only in -v output: a run that
# lost 49 of 60 tests said nothing (this check failed 2 of 2 runs then). spin's sleep argument is
# 0: it does not call usleep(0), whose yield let ciprof in and hid the loss.
for work in 0 1; do # spin 0: the program's start alone; spin 1: about 2 ms of CPU
	S=$TMP/short$work
	mkdir -p "$S"
	for i in $(seq 40); do
		printf 'add_test([=[short_%s]=] "%s/spin" "%s" "0" "%s")\n' "$i" "$B" "$work" "$i"
	done >"$S/CTestTestfile.cmake"
	timeout 120 sh -c 'while :; do :; done' & # bounded: a test killed midway leaves no hog
	HOG=$!
	run_capture short "$CIPROF" -v -v run --no-store -- ctest --test-dir "$S" -j2
	kill "$HOG" 2>/dev/null
	wait "$HOG" 2>/dev/null
	expect_rc "spin $work tests: ciprof run" 0 short
	named=$(sed -n "s/.* is CTest test 'short_\([0-9]*\)'.*/\1/p" "$TMP/short.err" | sort -u | wc -l)
	lost=$(sed -n 's/.*warning: \([0-9]*\) CTest test processes ended before.*/\1/p' "$TMP/short.err")
	if [ $((named + ${lost:-0})) = 40 ]; then
		ok "spin $work tests: each is named or counted in the warning ($named named, ${lost:-0} lost)"
	else
		check_failed "spin $work tests: $named named and ${lost:-0} lost in the warning do not make 40:"
		grep -v "debug:" "$TMP/short.err" | sed 's/^/    /' | tail -10 >&2
	fi
done
finish
