#!/bin/bash
# Per-test attribution, Check: profile examples/frameworks/check (four tests in two test
# cases) and check each test is reported under its START_TEST name with a share within 5
# points of its measured CPU time, in Check's three ways of running: a process forked per
# test (the default), all in one process (CK_FORK=no), and the two test cases in two
# processes side by side (CK_RUN_CASE), as Check has no parallel mode of its own.
. "$(dirname "$0")/lib.sh"
. "$CIPROF_SRC/examples/frameworks/harness.sh"

fw_require check pkg-config --exists check
fw_build check
fw_profile fork -- "$FW_OUT/test_check"
fw_profile nofork -- env CK_FORK=no "$FW_OUT/test_check"
fw_profile parallel -- "$FW_SRC/check/run_cases.sh" "$FW_OUT/test_check"
finish
