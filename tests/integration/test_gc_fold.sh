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
# Only runs report would use together fold: one branch, commit and command, exit status 0.
# Commit c1 has two good runs of 'make test', one of them interrupted (143), two good runs of
# 'make bench' and two imports of different files (imports are one command, as in report);
# commit c2 one more run. A fold of all of c1 would average the interrupted run in and call
# the result exit 0 'make test'.
DB2=$TMP/gc2.db
C1=1111111111111111111111111111111111111111
C2=2222222222222222222222222222222222222222
n=0
for count in 100 10 300 200 500 7 9; do
	n=$((n + 1))
	printf 'suite;main;work %d\n' "$count" >"$TMP/f$n.folded"
	run_capture imp2 "$CIPROF" import --db "$DB2" --format folded --branch main --commit $C1 \
		"$TMP/f$n.folded"
	[ "$RC" -eq 0 ] || expect_rc "import c1 run $n" 0 imp2
done
run_capture imp2 "$CIPROF" import --db "$DB2" --format folded --branch main --commit $C2 "$TMP/f1.folded"
[ "$RC" -eq 0 ] || expect_rc "import c2" 0 imp2
python3 - "$DB2" <<'PY' || fail "cannot set the runs' commands"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for run, cmd, code in ((1, "make test", 0), (2, "make test", 143), (3, "make bench", 0),
                       (4, "make test", 0), (5, "make bench", 0), (8, "make test", 0)):
    db.execute("UPDATE runs SET command = ?, exit_code = ? WHERE id = ?", (cmd, code, run))
db.commit()
PY
run_capture gcx "$CIPROF" gc --db "$DB2" --keep-runs 1
expect_rc "gc of mixed runs" 0 gcx
expect_grep "folds per command, good runs only" "$TMP/gcx.err" "folded 6 runs into 3 per-commit aggregates"
expect_grep "keeps the interrupted run" "$TMP/gcx.err" "deleted 3 runs, kept 5"
run_capture runs2 "$CIPROF" runs --db "$DB2" --format json
expect_rc "runs after gc of mixed runs" 0 runs2
python3 - "$TMP/runs2.out" <<'PY' || check_failed "runs after gc of mixed runs"
import json, sys
runs = {r["id"]: r for r in json.load(open(sys.argv[1]))["runs"]}
assert sorted(runs) == [2, 4, 5, 7, 8], sorted(runs)
assert runs[2]["exit_code"] == 143 and "gc.runs" not in runs[2]["tags"], runs[2]
assert runs[4]["command"] == "make test" and runs[4]["tags"].get("gc.runs") == "2", runs[4]
assert runs[5]["command"] == "make bench" and runs[5]["tags"].get("gc.runs") == "2", runs[5]
assert runs[7]["tags"].get("gc.runs") == "2", runs[7]
assert all(r["exit_code"] == 0 for i, r in runs.items() if i != 2)
PY
for want in "2 10" "4 150" "5 400" "7 8"; do
	set -- $want
	run_capture exp2 "$CIPROF" export --db "$DB2" --run "$1" --format folded
	expect_rc "export run $1" 0 exp2
	grep -q "main;work $2\$" "$TMP/exp2.out" ||
		check_failed "run $1 after gc: want work $2, got: $(cat "$TMP/exp2.out")"
done
ok "gc folds runs of one command with exit status 0 only; the interrupted run stays as it was"
finish
