#!/bin/bash
# Per-test attribution, Go: profile the test binary of examples/frameworks/go (`go test -c`;
# four tests of known cost) and check each test is reported as "TestName" with a share within
# 5 points of its measured CPU time, run one after another (-test.v) and two at once
# (t.Parallel with -test.parallel 2). ciprof finds the tests under testing.tRunner.
. "$(dirname "$0")/lib.sh"
. "$CIPROF_SRC/examples/frameworks/harness.sh"

fw_require golang-go go version
fw_build go
fw_profile serial -- "$FW_OUT/fwgo.test" -test.v
fw_profile parallel -- env FWGO_PARALLEL=1 "$FW_OUT/fwgo.test" -test.v -test.parallel 2
finish
