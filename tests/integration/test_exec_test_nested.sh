#!/bin/bash
# `ciprof exec-test NAME` run by a CTest test keeps NAME: the inner command's samples go to
# NAME, the rest of the test's to the test. The mark comes through a pipe and is applied as
# read; the fork that made the exec-test process comes through the sampling ring, read in
# rounds, and used to give the child its parent's test when it was read after the mark. With
# the default rounds that lost "inner" entirely in 3 of 6 runs before the fix (f2ddcb1^) and in
# 0 of 8 after it, on a project like this one built by hand (B its build directory; a plain
# CPU loop for burn):
#   for i in 1 2 3 4 5 6; do CIPROF_TRUTH=/tmp/t ciprof run --db /tmp/n$i.db -- ctest --test-dir B
#       ciprof show --db /tmp/n$i.db --by test; done
# Made certain here, without timing: no doorbells (CIPROF_TEST_NO_BELL=1) and 60 s rounds
# (CIPROF_TEST_ROUND_MS) leave the rings unread until ctest ends, so every fork is read after
# every mark; the build before the fix fails this test every time (3 of 3:
# CIPROF=OLD/ciprof bash tests/integration/test_exec_test_nested.sh).
. "$(dirname "$0")/lib.sh"

require_sampling
ctest_project burn < <(
	burn='$<TARGET_FILE:burn>'
	printf 'add_test(NAME outer COMMAND sh -c "%s exec-test inner -- %s; %s")\n' \
		"$CIPROF" "$burn inner 150 15" "$burn outer 150 15"
)

run_capture run env CIPROF_TEST_NO_BELL=1 CIPROF_TEST_ROUND_MS=60000 CIPROF_TRUTH="$TMP/truth" \
	"$CIPROF" run --db "$TMP/n.db" -- ctest --test-dir "$B" --output-on-failure
expect_rc "ciprof run -- ctest" 0 run
[ "$(wc -l <"$TMP/truth" 2>/dev/null)" = 2 ] ||
	fail "burn did not run twice: $(cat "$TMP/truth" 2>/dev/null)"

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
