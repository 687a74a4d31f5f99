#!/bin/bash
# Per-test attribution, Criterion: profile examples/frameworks/criterion (four tests in two
# suites, each test in a worker process of its own) and check each test is reported as
# "suite::name" with a share within 5 points of its measured CPU time, one worker at a time
# (--jobs 1) and two at once (--jobs 2).
. "$(dirname "$0")/lib.sh"
. "$CIPROF_SRC/examples/frameworks/harness.sh"

fw_require libcriterion-dev pkg-config --exists criterion
fw_build criterion
fw_profile serial -- "$FW_OUT/test_criterion" --jobs 1
fw_profile parallel -- "$FW_OUT/test_criterion" --jobs 2
finish
