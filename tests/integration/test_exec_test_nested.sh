#!/bin/bash
# `ciprof exec-test NAME` run by a CTest test keeps NAME: the inner command's samples go to
# NAME, the rest of the test's to the test. The mark comes through a pipe and is applied as
# read; the fork that made the exec-test process comes through the sampling ring, read in
# rounds, and used to give the child its parent's test when it was read after the mark (3 of 6
# runs of this project lost "inner" entirely before the fix). Made certain here, without
# timing: no doorbells (CIPROF_TEST_NO_BELL=1) and 60 s rounds (CIPROF_TEST_ROUND_MS) leave the
# rings unread until ctest ends, so every fork is read after every mark.
. "$(dirname "$0")/lib.sh"

require_sampling
ctest_project burn < <(
	printf 'add_test(NAME outer COMMAND sh -c "%s exec-test inner -- %s inner 150 15; %s outer 150 15")\n' \
		"$CIPROF" '$<TARGET_FILE:burn>' '$<TARGET_FILE:burn>'
)

run_capture run env CIPROF_TEST_NO_BELL=1 CIPROF_TEST_ROUND_MS=60000 CIPROF_TRUTH="$TMP/truth" \
	"$CIPROF" run --db "$TMP/n.db" -- ctest --test-dir "$B" --output-on-failure
expect_rc "ciprof run -- ctest" 0 run
[ "$(wc -l <"$TMP/truth" 2>/dev/null)" = 2 ] || fail "burn did not run twice: $(cat "$TMP/truth" 2>/dev/null)"

"$CIPROF" show --db "$TMP/n.db" --by test --format json >"$TMP/tests.json" ||
	fail "ciprof show --by test failed"
# Each test's CPU seconds against what its burn used (getrusage): the inner one's samples
# must be its own, not the outer test's.
python3 - "$TMP/tests.json" "$TMP/truth" <<'PY' || fail "exec-test's samples went to the outer test"
import json, sys
got = {t["name"]: t["cpu_seconds"] for t in json.load(open(sys.argv[1]))["tests"]}
truth = dict(l.split() for l in open(sys.argv[2]))
print("ciprof:", got, "burn's own:", truth)
inner, outer = float(truth["inner"]), float(truth["outer"])
ok = abs(got.get("inner", 0) - inner) <= 0.015 + 0.05 * inner and got.get("outer", 0) >= outer * 0.9
sys.exit(0 if ok else 1)
PY
finish
