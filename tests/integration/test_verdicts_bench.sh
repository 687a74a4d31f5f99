#!/bin/bash
# bench/verdicts --quick as an integration test: a fresh repository whose main branch has 10
# profiled commits (the history CI accumulates), then on a PR branch three heads of identical
# code and one with a 20 % function made twice as slow. Identical code must not fail the build
# with --fail-on-regression in more than one of the three (one false alarm is within the rate
# the full bench measures under load, docs/benchmarks.md; two are a model crying wolf); the
# planted slowdown must be seen (flagged, or the most slowed
# function at p < 0.01 when a noisy history keeps the gate from calling it). About a minute;
# the effect is large enough that a CPU hog on the other core does not change the outcome
# (+50 % was missed under load: the quick runs give that function ~150 samples).
. "$(dirname "$0")/lib.sh"
command -v cmake >/dev/null && command -v ctest >/dev/null || fail "cmake and ctest are needed"
RC=0
python3 "$CIPROF_SRC/bench/verdicts/run.py" --quick --ciprof "$CIPROF" --keep "$TMP/vb" \
	>"$TMP/vb.out" 2>"$TMP/vb.err" </dev/null || RC=$?
sed 's/^/     /' "$TMP/vb.out"
expect_rc "bench/verdicts --quick: at most 1 of 3 A/A builds failed, the planted slowdown seen" 0 vb
expect_grep "the table is printed" "$TMP/vb.out" "| A/A | 3 | "
finish
