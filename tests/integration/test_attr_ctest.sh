#!/bin/bash
# Per-test attribution, CTest: profile `ctest` on examples/frameworks/ctest, whose four tests
# are processes (one runs through sh and two children; two share one command line and differ
# only in their working directory), and check each test is reported under its CTest name
# with a share within 5 points of its measured CPU time, with ctest serial and with -j2; and
# the same when ctest is not the command but runs somewhere in its tree: behind bash -c (the
# CI templates' way), `make test`, `cmake --build --target test`; and behind bash -c again with
# a ctest whose list of tests comes 3 s late (tests/tools/late_ctest), after the tests' processes
# have started: a test's child running another test's command line (pipeline_small's `fwtool
# burn 15` is burn_tiny's) must still be its parent's test. test_preload_attribution.sh runs all
# of them again with the preload backend.
. "$(dirname "$0")/lib.sh"
. "$CIPROF_SRC/examples/frameworks/harness.sh"

fw_require cmake ctest --version
fw_build ctest
fw_profile serial -- ctest --test-dir "$FW_OUT"
fw_profile parallel -- ctest --test-dir "$FW_OUT" -j2
fw_profile bash-c -- bash -c "cd '$FW_OUT' && ctest -j2"
fw_profile make-test -- make -C "$FW_OUT" test
fw_profile cmake-target-test -- cmake --build "$FW_OUT" --target test
LATE=$CIPROF_BUILD/tests/late_ctest
[ -x "$LATE" ] || fail "$LATE not built"
mkdir -p "$TMP/late-bin"
ln -sf "$LATE" "$TMP/late-bin/ctest"
# ciprof's query runs the link's target too, with ciprof's environment
export LATE_CTEST_REAL=$(command -v ctest)
fw_profile late-list -- env PATH="$TMP/late-bin:$PATH" bash -c "cd '$FW_OUT' && ctest -j2"
finish
