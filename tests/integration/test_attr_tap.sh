#!/bin/bash
# Per-test attribution, TAP: profile examples/frameworks/tap (four in-process tests of known
# cost, each followed by its "ok N - name" line) with --pty, and check each test gets its own
# CPU (shares within 5 points, total within 25 %): a test's window runs from the previous
# result line (or the plan) to its own, and its samples, processed before its result line
# arrived, are held back until then. Both backends.
. "$(dirname "$0")/lib.sh"
. "$CIPROF_SRC/examples/frameworks/harness.sh"

fw_build tap
fw_profile perf --pty -- "$FW_OUT/test_tap"
fw_profile preload --pty --backend preload -- "$FW_OUT/test_tap"
finish
