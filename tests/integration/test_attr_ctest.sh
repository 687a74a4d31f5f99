#!/bin/bash
# Per-test attribution, CTest: profile `ctest` on examples/frameworks/ctest, whose four tests
# are processes (one runs through sh and two children; two share one command line and differ
# only in their working directory), and check each test is reported under its CTest name
# with a share within 5 points of its measured CPU time, with ctest serial and with -j2; and
# the same when ctest is not the command but runs somewhere in its tree: behind bash -c (the
# CI templates' way), `make test`, `cmake --build --target test`. test_preload_attribution.sh
# runs all of them again with the preload backend.
. "$(dirname "$0")/lib.sh"
. "$CIPROF_SRC/examples/frameworks/harness.sh"

fw_require cmake ctest --version
fw_build ctest
fw_profile serial -- ctest --test-dir "$FW_OUT"
fw_profile parallel -- ctest --test-dir "$FW_OUT" -j2
fw_profile bash-c -- bash -c "cd '$FW_OUT' && ctest -j2"
fw_profile make-test -- make -C "$FW_OUT" test
fw_profile cmake-target-test -- cmake --build "$FW_OUT" --target test
finish
