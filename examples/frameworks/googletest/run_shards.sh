#!/bin/sh
# Runs a GoogleTest binary as two shards side by side (GTEST_TOTAL_SHARDS=2): GoogleTest's
# way of running its tests in parallel. Exits non-zero if either shard fails.
#   run_shards.sh OUTDIR/test_gtest [ARGS...]
set -u
[ $# -ge 1 ] || { echo "usage: $0 TEST_BINARY [ARGS...]" >&2; exit 2; }
GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=0 "$@" &
pid=$!
GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=1 "$@"
rc=$?
wait "$pid" || exit $?
exit $rc
