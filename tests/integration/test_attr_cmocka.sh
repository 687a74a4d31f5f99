#!/bin/bash
# Per-test attribution, cmocka: profile examples/frameworks/cmocka (one binary, four tests of
# known cost) and check that `ciprof show --by test` names each test after its function, with
# shares within 5 points of the CPU time each test measured. cmocka runs tests one after
# another in one thread; ciprof recognises them by the stack (the frame that libcmocka calls).
. "$(dirname "$0")/lib.sh"
. "$CIPROF_SRC/examples/frameworks/harness.sh"

fw_require libcmocka-dev pkg-config --exists cmocka
fw_build cmocka
fw_profile serial -- "$FW_OUT/test_cmocka"
finish
