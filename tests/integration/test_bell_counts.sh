#!/bin/bash
# The exec doorbells (a dummy perf event per CPU, docs/attribution.md) must not take part in
# the per-task CPU counts. At a context switch between two processes of the run the kernel
# swaps their perf contexts instead of rescheduling the events, and swaps the inherit_stat
# counts (each task's exact CPU time, its [unsampled] part) pairwise by the order of the two
# contexts' event lists: the command's context lists its events as ciprof opened them, a
# child's as it inherited them. With the doorbells opened after all the sampling events the
# two were out of step and counts went to the doorbells and to other tasks (test_attr_ctest
# bash-c failed 4 of 40 runs with a CPU hog: a test 0.15 s high). A dummy event counts
# nothing, so what the doorbells hold at the end (`ciprof -v`: "counted N ns") is exactly what
# was moved: 0 when the orders agree. pingpong pins a parent and its child to one CPU (the
# last: the first CPU's events were in step either way) and switches between them every
# 100 us. With the old order (ff80c59) every run moved some, 11-98 ms (20 of 20 runs: this
# test 5 times), and main's build before it prints no count: the check fails with either.
# Nothing here depends on timing.
. "$(dirname "$0")/lib.sh"

require_sampling
PP=$TMP/pingpong
cc -O1 -o "$PP" "$CIPROF_SRC/tests/integration/data/pingpong.c" || fail "cannot build pingpong.c"

for i in 1 2 3; do
	# "ctest" among its arguments: the doorbells ring from the command's start.
	run_capture armed$i "$CIPROF" -v run --no-store -- "$PP" 150 ctest
	expect_rc "armed run $i: ciprof run" 0 armed$i
	grep -q "no exec doorbells (" "$TMP/armed$i.err" &&
		skip "the kernel refuses the exec doorbells here: $(grep "no exec doorbells" "$TMP/armed$i.err")"
	expect_grep "armed run $i: the doorbells were armed" "$TMP/armed$i.err" \
		"exec doorbells rang"
	if ! grep -q "exec doorbells rang [0-9]* times and counted 0 ns" "$TMP/armed$i.err"; then
		check_failed "armed run $i: CPU time was moved to the doorbells: $(grep -i "doorbells" "$TMP/armed$i.err")"
	fi
	expect_no_grep "armed run $i: no warning" "$TMP/armed$i.err" "moved"
done

# Without ctest the doorbells are opened disabled (never armed): still in step, no warning.
run_capture plain "$CIPROF" -v run --no-store -- "$PP" 150
expect_rc "plain run: ciprof run" 0 plain
expect_no_grep "plain run: not armed" "$TMP/plain.err" "exec doorbells rang"
expect_no_grep "plain run: no warning" "$TMP/plain.err" "moved"
finish
