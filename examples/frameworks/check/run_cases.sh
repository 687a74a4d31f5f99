#!/bin/sh
# Runs the Check example's two test cases in two processes side by side (CK_RUN_CASE), as
# Check has no parallel mode of its own. Exits non-zero if either fails.
#   run_cases.sh OUTDIR/test_check
set -u
[ $# -eq 1 ] || { echo "usage: $0 TEST_BINARY" >&2; exit 2; }
CK_RUN_CASE=light "$1" &
pid=$!
CK_RUN_CASE=heavy "$1"
rc=$?
wait "$pid" || exit $?
exit $rc
