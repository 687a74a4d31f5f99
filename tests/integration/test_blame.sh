#!/usr/bin/env bash
# ciprof blame on a main branch of 30 commits, each profiled once (imported folded stacks, so
# the truth is known): work_hot does 30 % more work from commit 18 on, under run-to-run noise
# of a few percent; blame must name commit 18 and its subject, in text and JSON, for total
# and self time; a steady function and a test show no change; errors and usage are checked.
source "$(dirname "$0")/lib.sh"

REPO=$TMP/repo
DB=$TMP/blame.db
mkdir -p "$REPO" && cd "$REPO" || fail "no repo dir"
git init -q -b main . && git config user.email t@example.com && git config user.name t ||
	fail "git init"
for i in $(seq 1 30); do
	echo "$i" >file
	subject="change $i"
	[ "$i" -eq 18 ] && subject="hash: stronger mixing in work_hot"
	git add file && git commit -qm "$subject" || fail "git commit $i"
	noise=$(((i * 37) % 61 - 30)) # -30..30 samples: about 1.5 % of work_hot
	hot=$((2000 + noise))
	[ "$i" -ge 18 ] && hot=$((2600 + noise))
	printf 'suite;main;work_hot;leaf_hot %d\nsuite;main;parse;tokenize %d\nsuite;main;steady %d\n' \
		"$hot" $((3000 - noise)) $((2000 + noise / 2)) >run.folded
	run_capture import$i "$CIPROF" import --db "$DB" --format folded --branch main --test suite_t run.folded
	[ "$RC" -eq 0 ] || expect_rc "import $i" 0 import$i
done
ok "30 runs of main imported"

blame() {
	RC=0
	"$CIPROF" blame --db "$DB" "$@" >"$TMP/b.out" 2>"$TMP/b.err" || RC=$?
}
c18=$(git rev-parse HEAD~12)
blame work_hot
expect_rc "blame work_hot" 0 b
expect_grep "names run 18 and its commit" "$TMP/b.out" "changed at run 18, commit ${c18:0:10} \"hash: stronger mixing in work_hot\""
expect_grep "before -> after" "$TMP/b.out" "-> after:"
expect_grep "the step is about +30 %" "$TMP/b.out" ", +3"
cat "$TMP/b.out"

blame work_hot --branch main --format json
expect_rc "blame --format json" 0 b
python3 - "$TMP/b.out" "$c18" <<'PY' && ok "JSON: commit 18, +30 %, confident" || check_failed "unexpected JSON (above)"
import json, sys
j = json.load(open(sys.argv[1]))
c = j["change"]
assert j["schema"] == 1 and j["found"] is True and j["runs"] == 30 and j["measure"] == "total", j
assert c["run"] == 18 and c["commit"] == sys.argv[2], c
assert 0.25 <= c["delta"] <= 0.35, c
assert c["confidence"] >= 0.99 and c["p_value"] <= 0.01, c
assert len(j["series"]) == 30 and j["series"][0]["run"] == 1, j["series"][:2]
PY

blame leaf_hot --self
expect_grep "self time of the callee: the same commit" "$TMP/b.out" "changed at run 18"
blame steady
expect_rc "a steady function" 0 b
expect_grep "a steady function has no change" "$TMP/b.out" "no change of 5 % or more"
blame suite_t --test
expect_rc "blame --test" 0 b
expect_grep "the test's time changed at run 18 too" "$TMP/b.out" "(test CPU time) on main, 30 runs: changed at run 18"
blame work_hot --runs 10
expect_grep "--runs 10: only the last 10 runs, all after the change" "$TMP/b.out" "10 runs: no change"

blame nonexistent_fn
expect_rc "a function never seen" 3 b
expect_grep "says it was not seen" "$TMP/b.err" "function 'nonexistent_fn' was not seen in the last 30 runs of main"
blame work_hot --branch nope
expect_rc "a branch without runs" 3 b
expect_grep "says there are no runs" "$TMP/b.err" "no runs of branch 'nope'"
blame
expect_rc "no NAME" 2 b
blame work_hot --runs 2
expect_rc "--runs below 4" 2 b
blame $'evil\033]0;x\007' --test
expect_rc "a hostile name" 3 b
expect_no_grep "the terminal sees no escape sequence" "$TMP/b.err" $'\033'
finish
