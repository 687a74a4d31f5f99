#!/bin/bash
# Per-test attribution, GoogleTest: profile examples/frameworks/googletest (four tests, two
# in an anonymous namespace) and check that each test is reported as "Suite.Name" with a share
# within 5 points of its measured CPU time: once as one process, and once as two shards
# (GTEST_TOTAL_SHARDS=2) running side by side, GoogleTest's way of running tests in parallel.
. "$(dirname "$0")/lib.sh"
. "$CIPROF_SRC/examples/frameworks/harness.sh"

fw_require libgtest-dev test -e /usr/include/gtest/gtest.h
fw_build googletest
fw_profile serial -- "$FW_OUT/test_gtest"
fw_profile sharded -- "$FW_SRC/googletest/run_shards.sh" "$FW_OUT/test_gtest"
finish
