#!/usr/bin/env bash
# ciprof gc folds old runs into per-commit aggregates: a main branch of 12 commits, each run
# three times (imported folded stacks, so the truth is known; each run also has a few stacks of
# its own, seen once, the way rare frames come and go). work_hot does 30 % more work from
# commit 8 on. 'gc --keep-runs 6' folds the 30 runs of commits 1-10 into 10 aggregates
# (tagged gc.runs=3, holding each stack's mean count) and keeps the 6 runs of commits 11-12:
# blame still names commit 8 across the folded runs, and the file shrinks.
source "$(dirname "$0")/lib.sh"

REPO=$TMP/repo
DB=$TMP/gc.db
mkdir -p "$REPO" && cd "$REPO" || fail "no repo dir"
git init -q -b main . && git config user.email t@example.com && git config user.name t ||
	fail "git init"
for i in $(seq 1 12); do
	echo "$i" >file
	subject="change $i"
	[ "$i" -eq 8 ] && subject="hash: stronger mixing in work_hot"
	git add file && git commit -qm "$subject" || fail "git commit $i"
	for rep in 1 2 3; do
		noise=$(((i * 37 + rep * 53) % 61 - 30)) # -30..30 samples
		hot=$((2000 + noise))
		[ "$i" -ge 8 ] && hot=$((2600 + noise))
		{
			printf 'suite;main;work_hot;leaf_hot %d\nsuite;main;steady %d\n' "$hot" $((3000 - noise))
			for k in $(seq 1 40); do # stacks of this run only
				printf 'suite;main;rare_%d_%d_%d;leaf_%d 1\n' "$i" "$rep" "$k" "$k"
			done
		} >run.folded
		run_capture imp "$CIPROF" import --db "$DB" --format folded --branch main --test t run.folded
		[ "$RC" -eq 0 ] || expect_rc "import $i.$rep" 0 imp
	done
done
ok "36 runs of main imported (12 commits x 3)"

python3 -c 'import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA wal_checkpoint(TRUNCATE)")' "$DB"
before=$(stat -c %s "$DB")
c5=$(git rev-parse HEAD~7)
c8=$(git rev-parse HEAD~4)

run_capture gc "$CIPROF" gc --db "$DB" --keep-runs 6
expect_rc "gc --keep-runs 6" 0 gc
expect_grep "says what it folded" "$TMP/gc.err" "folded 30 runs into 10 per-commit aggregates"
expect_grep "and deleted" "$TMP/gc.err" "deleted 20 runs, kept 16"
after=$(stat -c %s "$DB")
[ "$after" -lt "$before" ] || check_failed "the file did not shrink: $before -> $after bytes"
cat "$TMP/gc.err"
echo "database: $before -> $after bytes"
ok "gc folds 30 runs into 10 aggregates; the file shrinks ($before -> $after bytes)"

run_capture runs "$CIPROF" runs --db "$DB" --format json
expect_rc "runs" 0 runs
python3 - "$TMP/runs.out" "$c5" <<'PY' || check_failed "aggregates in 'runs'"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert len(runs) == 16, len(runs)
agg = [r for r in runs if r["tags"].get("gc.runs")]
assert len(agg) == 10 and all(r["tags"]["gc.runs"] == "3" for r in agg), agg
assert len({r["commit"] for r in agg}) == 10
# the newest run of each folded commit stands for it: commit 5's was the 15th import
r5 = [r for r in agg if r["commit"] == sys.argv[2]]
assert len(r5) == 1 and r5[0]["id"] == 15, r5
PY
ok "runs lists 10 aggregates tagged gc.runs=3 and the 6 runs kept"

# an aggregate holds each stack's mean count; stacks of one run only round away
run_capture exp "$CIPROF" export --db "$DB" --run 15 --format folded
expect_rc "export the aggregate" 0 exp
want=$(( ( (2000 + (5*37+53)%61-30) + (2000 + (5*37+106)%61-30) + (2000 + (5*37+159)%61-30) + 1 ) / 3 ))
grep -q "work_hot;leaf_hot $want\$" "$TMP/exp.out" ||
	check_failed "aggregate of commit 5: want work_hot $want, got: $(grep work_hot "$TMP/exp.out")"
! grep -q "rare_" "$TMP/exp.out" || check_failed "stacks of one run only stayed"
ok "the aggregate of commit 5 holds the mean (work_hot $want)"

RC=0
"$CIPROF" blame --db "$DB" work_hot >"$TMP/b.out" 2>"$TMP/b.err" || RC=$?
expect_rc "blame work_hot after gc" 0 b
expect_grep "names commit 8 across folded runs" "$TMP/b.out" "commit ${c8:0:10} \"hash: stronger mixing in work_hot\""
grep -Eq ', \+(29|30|31)\.[0-9] %' "$TMP/b.out" || check_failed "the step is about +30 %"
cat "$TMP/b.out"
ok "blame finds the step of commit 8 among folded runs"

# folding again: an aggregate weighs the runs it holds; a run alone at its commit stays
run_capture gc2 "$CIPROF" gc --db "$DB" --keep-runs 3
expect_rc "gc --keep-runs 3" 0 gc2
expect_grep "folds commit 11's three runs" "$TMP/gc2.err" "folded 3 runs into 1 per-commit aggregates"
expect_grep "and leaves the aggregates" "$TMP/gc2.err" "deleted 2 runs, kept 14"
run_capture nofold "$CIPROF" gc --db "$DB" --keep-runs 3 --no-fold
expect_rc "gc --no-fold" 0 nofold
expect_grep "--no-fold deletes" "$TMP/nofold.err" "deleted 11 runs, kept 3"
ok "folding again, and --no-fold"
finish
