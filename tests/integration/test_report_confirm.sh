#!/usr/bin/env bash
# ciprof report --head-runs: a finding must show in each run of the head's commit. A history
# of 24 runs of main in which every function jumps by 40 % in one run in 33 (a neighbour's
# burst; tests/tools/wide_suite.py --jumps) fits heavy tails, on which one run's +30 % of a
# 4 % function is not significant: the report of two runs of the pull request's commit finds
# it, and fails the build; a threefold jump in one of two runs is no finding, though one run
# alone fails on it. Runs of a dirty work tree, of another command, or a copy of the head's
# profile do not count. --need-run asks for another run while one could decide a finding, and
# not when --head-runs are judged or the head run is dirty or failed. Under 20 history runs a
# finding must be flagged in each run. The profiles are made up and seeded, imported as pprof:
# nothing is timed.
source "$(dirname "$0")/lib.sh"

GEN=$TMP/gen
DB=$TMP/db.sqlite
python3 "$CIPROF_SRC/tests/tools/wide_suite.py" "$GEN" --base-runs 24 --seed 5 --jumps 0.03 \
	--slowdown 1.3 --head-runs 2 >"$TMP/gen.out" || fail "the generator failed"
mkdir -p "$TMP/repo" && cd "$TMP/repo" || fail "no repo dir"
wide_history "$DB" "$GEN" 24

# import_head FILE BRANCH: FILE imported as a run of the current commit, always under one
# name (h.pb), so that every head run has the same command line
import_head() {
	cp "$1" "$TMP/h.pb" || fail "copy $1"
	run_capture imp "$CIPROF" import --db "$DB" --format pprof --branch "$2" \
		--commit "$(git rev-parse HEAD)" "$TMP/h.pb"
	[ "$RC" -eq 0 ] || { expect_rc "import $1" 0 imp; finish; }
}

# crc NAME: "verdict head_runs confirming significant kind" of report NAME's JSON
crc() {
	python3 -c 'import json,sys
r = json.load(open(sys.argv[1])); s = r["summary"]
c = [x for x in r["functions"] if x["name"] == "crc32_update" and x["measure"] == "self"][0]
print(r["verdict"], s["head_runs"], ",".join(map(str, s["confirming_runs"])) or "-",
      c["significant"], c["kind"])' "$TMP/$1.out"
}

# newest_id: the id of the newest run in the database
newest_id() {
	"$CIPROF" runs --db "$DB" --limit 1 --format json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])'
}

# pr_branch NAME: a new branch NAME off main with one commit of its own (the head's commit)
pr_branch() {
	git checkout -q main && git checkout -qb "$1" && echo "$1" >file &&
		git commit -qam "$1" || fail "the branch $1"
}

pr_branch pr/crc
import_head "$GEN/head2.pb" pr/crc
FIRST=$(newest_id)

# report --need-run after the first run: its +30 % is not significant, but a second run could
# make it so, and the CI loop should run the suite again.
run_capture need1 "$CIPROF" report --db "$DB" --base main --need-run --head-runs 2
expect_rc "--need-run, one run of two: another run could decide" 0 need1
grep -Eq '^could-flag function crc32_update \+[0-9.]+ % \(p [0-9.e-]+\)$' "$TMP/need1.out" &&
	ok "--need-run names crc32_update as one a second run could flag" ||
	check_failed "--need-run after one run: $(cat "$TMP/need1.out" "$TMP/need1.err")"
run_capture needfmt "$CIPROF" report --db "$DB" --base main --need-run --format json
expect_rc "--need-run --format json: a usage error" 2 needfmt
run_capture needfocus "$CIPROF" report --db "$DB" --base main --need-run --focus
expect_rc "--need-run --focus: a usage error (as its message says)" 2 needfocus
# A run whose command failed is never confirmed: the loop must end (a copy of the database in
# which the run's command failed).
cp "$DB" "$TMP/failed.sqlite" || fail "copy the database"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1])
c.execute("UPDATE runs SET exit_code=2 WHERE id=?", (int(sys.argv[2]),)); c.commit()' \
	"$TMP/failed.sqlite" "$FIRST" || fail "mark run $FIRST failed"
run_capture needfail "$CIPROF" report --db "$TMP/failed.sqlite" --base main --need-run
expect_rc "--need-run on a failed command's run: no" 1 needfail
expect_grep "--need-run says why: the command failed" "$TMP/needfail.err" \
	"the head run's command failed (exit status 2)"
[ -s "$TMP/needfail.out" ] && check_failed "--need-run printed items on a failed run"

import_head "$GEN/head.pb" pr/crc
# Two runs judged: --head-runs 2 (the default) is reached, and --head-runs 1 was before; with
# --head-runs 3 a third run confirms the regression or takes it back.
run_capture need2 "$CIPROF" report --db "$DB" --base main --need-run --head-runs 2
expect_rc "--need-run, two runs of two: no" 1 need2
expect_grep "--need-run says the most runs are judged" "$TMP/need2.err" \
	"2 runs of this commit judged, the most --head-runs asks"
[ -s "$TMP/need2.out" ] && check_failed "--need-run printed items with --head-runs reached"
run_capture need21 "$CIPROF" report --db "$DB" --base main --need-run --head-runs 1
expect_rc "--need-run --head-runs 1: no" 1 need21
expect_grep "--need-run --head-runs 1 says why" "$TMP/need21.err" \
	"1 run of this commit judged, the most --head-runs asks"
run_capture need3 "$CIPROF" report --db "$DB" --base main --need-run --head-runs 3
expect_rc "--need-run --head-runs 3 on a regression: another run" 0 need3
[ "$(head -n1 "$TMP/need3.out" | cut -d' ' -f1-3)" = "confirm function crc32_update" ] &&
	ok "--need-run lists the flagged regression first, to confirm" ||
	check_failed "--need-run --head-runs 3: $(cat "$TMP/need3.out" "$TMP/need3.err")"

run_capture one "$CIPROF" report --db "$DB" --base main --format json --head-runs 1 \
	--fail-on-regression
expect_rc "one run: passes" 0 one
[ "$(crc one)" = "ok 1 - False unchanged" ] && ok "one run: +30 % is within the heavy tails" ||
	check_failed "one run: $(crc one)"
run_capture two "$CIPROF" report --db "$DB" --base main --format json --fail-on-regression
expect_rc "two runs: the build fails" 1 two
[ "$(crc two)" = "regression 2 $FIRST True regression" ] &&
	ok "two runs (all there are of the default 3): crc32_update +30 % is a regression in each" ||
	check_failed "two runs: $(crc two)"
run_capture env1 env CIPROF_REPORT_HEAD_RUNS=1 "$CIPROF" report --db "$DB" --base main \
	--format json
[ "$(crc env1)" = "ok 1 - False unchanged" ] && ok "report.head-runs 1 (environment): one run" ||
	check_failed "CIPROF_REPORT_HEAD_RUNS=1: $(crc env1)"
run_capture md "$CIPROF" report --db "$DB" --base main
expect_grep "the Markdown says which runs" "$TMP/md.out" \
	"**2 runs of this commit:** a finding is one that each of them shows (this run's figures; also run $FIRST)"

# A threefold jump in one run, the other run of the commit calm: no finding.
pr_branch pr/docs
import_head "$GEN/head-aa.pb" pr/docs
CALM=$(newest_id)
import_head "$GEN/head-jump.pb" pr/docs
run_capture jump1 "$CIPROF" report --db "$DB" --base main --format json --head-runs 1 \
	--fail-on-regression
expect_rc "the jump, one run: fails" 1 jump1
run_capture jump2 "$CIPROF" report --db "$DB" --base main --format json --fail-on-regression
expect_rc "the jump, two runs: passes" 0 jump2
[ "$(crc jump2)" = "ok 2 $CALM False unchanged" ] &&
	ok "a jump in one of two runs is no finding" || check_failed "jump: $(crc jump2)"

# Runs that are not the head's code: a dirty work tree's, another command's. (Imported without
# --commit, as the work tree's HEAD: only then is a run's tree dirty.)
pr_branch pr/dirty
echo uncommitted >>file
cp "$GEN/head2.pb" "$TMP/h.pb" || fail "copy"
run_capture imp "$CIPROF" import --db "$DB" --format pprof --branch pr/dirty "$TMP/h.pb"
expect_rc "import from a dirty tree" 0 imp
run_capture needdirty "$CIPROF" report --db "$DB" --base main --need-run
expect_rc "--need-run on a dirty tree's run: no" 1 needdirty
expect_grep "--need-run says why: the tree was dirty" "$TMP/needdirty.err" \
	"the head run's work tree had changes"
git checkout -q file
run_capture imp "$CIPROF" import --db "$DB" --format pprof --branch pr/dirty "$GEN/head2.pb"
expect_rc "import under another name" 0 imp
cp "$GEN/head.pb" "$TMP/h.pb" || fail "copy"
run_capture imp "$CIPROF" import --db "$DB" --format pprof --branch pr/dirty "$TMP/h.pb"
expect_rc "import from the clean tree" 0 imp
run_capture dirty "$CIPROF" report --db "$DB" --base main --format json
[ "$(crc dirty)" = "ok 1 - False unchanged" ] &&
	ok "a dirty tree's run and another command's do not confirm" ||
	check_failed "dirty: $(crc dirty)"
# One profile stored twice (imported again, or merged from two databases) is one run: its
# copy confirms nothing.
pr_branch pr/copy
import_head "$GEN/head-jump.pb" pr/copy
import_head "$GEN/head-jump.pb" pr/copy
run_capture copy "$CIPROF" report --db "$DB" --base main --format json --fail-on-regression
expect_rc "a copy of the head does not confirm it: the jump still fails alone" 1 copy
[ "$(crc copy)" = "regression 1 - True regression" ] && ok "a copy of the head is not a second run" ||
	check_failed "copy: $(crc copy)"

# Under 20 history runs (12 here) the runs' p are not combined, but a finding must be one that
# each run of the commit flags: the threefold jump is flagged in its run alone, --need-run asks
# for another run to confirm it, and beside a calm run it is taken back; twice as slow in both
# runs stays a finding.
SGEN=$TMP/gen-short
python3 "$CIPROF_SRC/tests/tools/wide_suite.py" "$SGEN" --base-runs 12 --seed 7 \
	--jumps 0.03 --slowdown 2 --head-runs 2 >"$TMP/gen-short.out" || fail "the generator failed"
mkdir -p "$TMP/repo-short" && cd "$TMP/repo-short" || fail "no repo dir"
DB=$TMP/short.sqlite
wide_history "$DB" "$SGEN" 12
pr_branch pr/jump
import_head "$SGEN/head-jump.pb" pr/jump
run_capture sj1 "$CIPROF" report --db "$DB" --base main --format json
[ "$(crc sj1)" = "regression 1 - True regression" ] &&
	ok "12 history runs, one run: the jump is flagged" || check_failed "short, jump: $(crc sj1)"
run_capture sneed "$CIPROF" report --db "$DB" --base main --need-run
expect_rc "12 history runs: --need-run asks another run for a flagged regression" 0 sneed
expect_grep "--need-run asks to confirm the jump" "$TMP/sneed.out" "confirm function crc32_update +"
# a calm run, then the jump's profile again as the newest run (a copy is not another run: the
# calm run is its only peer)
import_head "$SGEN/head-aa.pb" pr/jump
import_head "$SGEN/head-jump.pb" pr/jump
run_capture sj2 "$CIPROF" report --db "$DB" --base main --format json --fail-on-regression
expect_rc "12 history runs, the jump beside a calm run: passes" 0 sj2
[ "$(crc sj2)" = "ok 2 $(($(newest_id) - 1)) False unchanged" ] &&
	ok "12 history runs: a jump in one of two runs is taken back" || check_failed "short: $(crc sj2)"
python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["summary"]["unrepeated"] < 1)' \
	"$TMP/sj2.out" && ok "JSON counts it as unrepeated" || check_failed "summary.unrepeated"
run_capture smd "$CIPROF" report --db "$DB" --base main
expect_grep "the Markdown says findings must repeat" "$TMP/smd.out" \
	"**2 runs of this commit:** with 12 base-branch runs, an item is flagged only if each of them flags it ("
expect_grep "... and how many did not repeat" "$TMP/smd.out" " this run flagged did not repeat), and a regression"
# A calm run flags nothing: no further run, and --need-run says why.
pr_branch pr/calm
import_head "$SGEN/head-aa.pb" pr/calm
run_capture scalm "$CIPROF" report --db "$DB" --base main --need-run
expect_rc "12 history runs, a calm run: --need-run asks no further run" 1 scalm
expect_grep "--need-run says nothing is flagged and runs are not combined" "$TMP/scalm.err" \
	"nothing is flagged, and with 12 base-branch runs (fewer than 20) runs of one commit are not combined"
pr_branch pr/slow
import_head "$SGEN/head.pb" pr/slow
import_head "$SGEN/head2.pb" pr/slow
run_capture ss "$CIPROF" report --db "$DB" --base main --format json
[ "$(crc ss)" = "regression 2 $(($(newest_id) - 1)) True regression" ] &&
	ok "12 history runs: twice as slow in both runs stays a finding" ||
	check_failed "short, twice as slow: $(crc ss)"

# --need-run prints names escaped for a terminal: the same suite with crc32_update renamed
# "crc32<ESC>update" in every profile (one byte for another: the pprof stays well formed) prints
# the ESC as its picture, U+241B.
mkdir -p "$TMP/gen-esc" "$TMP/repo-esc" || fail "no dirs for the escape check"
python3 -c 'import glob,os,sys
for f in glob.glob(os.path.join(sys.argv[1], "*.pb")):
    b = open(f, "rb").read()
    assert b"crc32_update" in b, f
    open(os.path.join(sys.argv[2], os.path.basename(f)), "wb").write(
        b.replace(b"crc32_update", b"crc32\x1bupdate"))' "$GEN" "$TMP/gen-esc" ||
	fail "cannot rename crc32_update"
cd "$TMP/repo-esc" || fail "no repo dir"
DB=$TMP/esc.sqlite
wide_history "$DB" "$TMP/gen-esc" 24
pr_branch pr/esc
import_head "$TMP/gen-esc/head2.pb" pr/esc
run_capture needesc "$CIPROF" report --db "$DB" --base main --need-run --head-runs 2
expect_rc "--need-run with a control character in a name" 0 needesc
expect_grep "--need-run prints the name's ESC as its picture" "$TMP/needesc.out" \
	"function crc32$(printf '\xe2\x90\x9b')update"
grep -q "$(printf '\x1b')" "$TMP/needesc.out" "$TMP/needesc.err" &&
	check_failed "--need-run printed a raw ESC"
finish
