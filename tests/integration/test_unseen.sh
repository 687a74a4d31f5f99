#!/usr/bin/env bash
# Processes the kernel did not follow (docs/run.md, "Limits"): now and then the processes a
# run's command starts after some moment send ciprof nothing, no exec, sample or exit, though
# their parent's FORK record names them and the kernel counts their CPU time; the run then
# lacks their tests and functions, and their CPU time lands as [unsampled] on one test.
# 1. The runner: a run with such processes (simulated by the test hook CIPROF_TEST_UNFOLLOW=K:
#    from the K-th process seen to fork on, every record but the FORK is dropped) is warned
#    about and tagged host.unseen_processes; a fork-heavy run without the hook, and one whose
#    background child outlives the command, never are. Processes whose FORK never came either
#    (CIPROF_TEST_UNFOLLOW=K,fork) are counted from ctest's list of tests: a passing ctest
#    with a disabled test is not tagged, one whose last two tests were dropped is. ciprof ab
#    profiles such a side again (at most twice).
#    A ring buffer the kernel stopped writing to (simulated by CIPROF_TEST_SILENT_RING=K: the
#    first CPU's ring delivers its first K records only): with processes exiting afterwards
#    (their READs reach the other CPU's ring, not that one) the run is warned about and
#    tagged host.silent_ring_seconds; one process alone going quiet on a CPU, with no exit to
#    tell, is not.
# 2. The report, on made-up profiles (tests/tools/wide_suite.py, seeded: one helper 40 %
#    slower in each of three head runs, a regression that gates on a history of 20 runs): a base run so tagged is left
#    out of the baseline and the history, and the baseline's rule says so; a head so tagged is
#    judged but advisory (exit 0 under --fail-on-regression, the reason in the JSON), asks
#    for another run under --need-run, and is no peer of the next run of its commit.
source "$(dirname "$0")/lib.sh"

# --- 1. the runner ---
require_sampling
DB1=$TMP/run.db
# Eight children, each a shell busy for a while: processes forked, exec'd and sampled.
FORKS='for i in 1 2 3 4 5 6 7 8; do sh -c "i=0; while [ \$i -lt 30000 ]; do i=\$((i+1)); done"; done'
run_capture plain "$CIPROF" run --db "$DB1" --tag case=plain -- sh -c "$FORKS"
expect_rc "ciprof run (fork-heavy)" 0 plain
expect_no_grep "a fork-heavy run: no unseen processes" "$TMP/plain.err" "sent no sample"
# A background child still running when the command ends is not followed past the end, and is
# never taken for one the kernel did not follow.
run_capture bg "$CIPROF" run --db "$DB1" --tag case=bg -- sh -c '(sleep 0.5; true) & exit 0'
expect_rc "ciprof run (a child outlives the command)" 0 bg
expect_no_grep "an outliving child: no unseen processes" "$TMP/bg.err" "sent no sample"
CIPROF_TEST_UNFOLLOW=4 run_capture unf "$CIPROF" run --db "$DB1" --tag case=unf -- sh -c "$FORKS"
expect_rc "ciprof run (processes not followed)" 0 unf
expect_grep "the run warns about the processes the kernel did not follow" "$TMP/unf.err" \
	"warning: 5 processes of this run sent no sample nor any other record"
# A ring the kernel stopped writing to: the fork-heavy command pinned to the first online CPU
# (the first ring's), its ring silent after 40 records (the shell's exec and first samples):
# the eight children then run there unseen, and their READs reach the other CPU's ring only.
CPU0=$(cut -d, -f1 /sys/devices/system/cpu/online | cut -d- -f1)
NCPU=$(getconf _NPROCESSORS_ONLN)
CASES='{"plain": None, "bg": None, "unf": "5"}'
if [ "$NCPU" -ge 2 ] && command -v taskset >/dev/null; then
	CIPROF_TEST_SILENT_RING=40 run_capture sil "$CIPROF" -v run --db "$DB1" --tag case=sil -- \
		taskset -c "$CPU0" sh -c "$FORKS"
	expect_rc "ciprof run (a ring fell silent)" 0 sil
	expect_grep "the run warns about the silent ring" "$TMP/sil.err" \
		"warning: the kernel stopped writing to a CPU's ring buffer during this run"
	# Its 40 records may hold an early child's exit under load (its READ then came: 1 READ,
	# seen once in a loaded CI run); the other ring has every child's, and the command's own
	# when it exited more than the 1 ms grace before ciprof's last round.
	silent_line="CPU $CPU0: its ring buffer fell silent: [0-5] READs where another ring has [89],"
	if grep -qE -- "$silent_line" "$TMP/sil.err"; then
		ok "-v names the CPU and the READs it lacks: $(grep -oE -- "$silent_line" "$TMP/sil.err")"
	else
		check_failed "-v names the CPU and the READs it lacks: '$silent_line' not found in sil.err; it holds:"
		sed 's/^/    /' "$TMP/sil.err" | head -20 >&2
	fi
	# One process alone, going quiet on its CPU: nothing exits afterwards to tell a ring the
	# kernel stopped writing to from a task busy in the kernel (docs/run.md, "Limits").
	CIPROF_TEST_SILENT_RING=40 run_capture alone "$CIPROF" run --db "$DB1" --tag case=alone -- \
		taskset -c "$CPU0" sh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done'
	expect_rc "ciprof run (one process quiet on its CPU)" 0 alone
	expect_no_grep "one process quiet on its CPU: no silent ring" "$TMP/alone.err" "ring buffer"
	CASES='{"plain": None, "bg": None, "unf": "5", "sil": None, "alone": None}'
else
	echo "skip: the silent ring needs two CPUs and taskset"
fi
run_capture runs "$CIPROF" runs --db "$DB1" --format json
expect_rc "ciprof runs --format json" 0 runs
if python3 - "$TMP/runs.out" "$CASES" <<'PY'; then
import json, sys
tags = {r["tags"]["case"]: r["tags"] for r in json.load(open(sys.argv[1]))["runs"]}
got = {k: t.get("host.unseen_processes") for k, t in tags.items()}
silent = {k: t.get("host.silent_ring_seconds") for k, t in tags.items()}
print(f"host.unseen_processes: {got}; host.silent_ring_seconds: {silent}")
want_silent = {k: k == "sil" for k in got}
sys.exit(0 if got == eval(sys.argv[2]) and
         {k: v is not None and float(v) > 0 for k, v in silent.items()} == want_silent else 1)
PY
	ok "host.unseen_processes: 5 on the run that had them, host.silent_ring_seconds on the run whose ring fell silent, neither on any other"
else
	check_failed "host.unseen_processes or host.silent_ring_seconds wrong (above)"
fi
UNF_ID=$(python3 -c 'import json,sys
print([r["id"] for r in json.load(open(sys.argv[1]))["runs"] if r["tags"]["case"] == "unf"][0])' "$TMP/runs.out")
run_capture showunf "$CIPROF" show --db "$DB1" "$UNF_ID"
expect_rc "ciprof show of the incomplete run" 0 showunf
expect_grep "ciprof show says the run is incomplete" "$TMP/showunf.err" \
	"run $UNF_ID is incomplete (5 processes the kernel did not follow)"

# A process whose FORK never came either is counted where ctest says how many there should be:
# a passing ctest forks one process per test it lists (DISABLED ones aside). A project of four
# tests and a disabled fifth, each a shell loop (no further forks), run serially: with
# CIPROF_TEST_UNFOLLOW=3,fork the third and fourth tests' processes are dropped, FORK and all.
if command -v cmake >/dev/null && command -v ctest >/dev/null; then
	P=$TMP/proj
	mkdir -p "$P"
	{
		echo 'cmake_minimum_required(VERSION 3.16)'
		echo 'project(unseen NONE)'
		echo 'enable_testing()'
		for t in one two three four five; do
			echo "add_test(NAME $t COMMAND sh -c \"i=0; while [ \\\$i -lt 20000 ]; do i=\\\$((i+1)); done\")"
		done
		echo 'set_tests_properties(five PROPERTIES DISABLED TRUE)'
	} >"$P/CMakeLists.txt"
	cmake -S "$P" -B "$P/build" >"$TMP/cmake.out" 2>&1 || fail "cannot configure the CTest project"
	run_capture ctplain "$CIPROF" -v run --db "$DB1" --tag case=ctplain -- ctest --test-dir "$P/build"
	expect_rc "ciprof run -- ctest (a disabled test among four)" 0 ctplain
	expect_grep "ciprof reads the disabled test" "$TMP/ctplain.err" "ctest lists 5 tests (1 disabled)"
	expect_no_grep "a passing ctest: no unseen processes" "$TMP/ctplain.err" "sent no sample"
	CIPROF_TEST_UNFOLLOW=3,fork run_capture ctunf "$CIPROF" -v run --db "$DB1" --tag case=ctunf \
		-- ctest --test-dir "$P/build"
	expect_rc "ciprof run -- ctest, two tests' processes dropped FORK and all" 0 ctunf
	expect_grep "ciprof counts the tests ctest started that it never saw" "$TMP/ctunf.err" \
		"lists 4 tests it runs, but ciprof saw it start 2 processes"
	expect_grep "and warns about them" "$TMP/ctunf.err" \
		"warning: 2 processes of this run sent no sample nor any other record"
else
	check_failed "cmake and ctest are needed (scripts/setup installs them)"
fi

# ciprof ab profiles a side again when a run lacks processes (at most twice, then goes on).
ABLOG=$TMP/ab.log
SIDE="echo x >>'$ABLOG'; sh -c 'exit 0'; sh -c 'exit 0'"
CIPROF_TEST_UNFOLLOW=2 run_capture ab "$CIPROF" ab --no-store --max-rounds 2 --hz 99 \
	--base "$SIDE" --head "$SIDE"
expect_rc "ciprof ab, every run lacking a process" 0 ab
expect_grep "ab says which run lacked a process, and runs it again" "$TMP/ab.err" \
	"ab: the base run of round 1 is incomplete (1 process the kernel did not follow): profiling it again"
[ "$(wc -l <"$ABLOG")" -eq 12 ] && ok "ab ran each side of its 2 rounds 3 times" ||
	check_failed "ab ran the sides $(wc -l <"$ABLOG") times, expected 12 (2 rounds, 2 sides, 3 runs)"

# --- 2. the report ---
GEN=$TMP/gen
DB=$TMP/wide.db
python3 "$CIPROF_SRC/tests/tools/wide_suite.py" "$GEN" --base-runs 22 --head-runs 3 --seed 13 >"$TMP/gen.out" ||
	fail "the generator failed"
mkdir -p "$TMP/repo" && cd "$TMP/repo" || fail "no repo dir"
wide_history "$DB" "$GEN" 22
# tag_run RUN KEY VALUE: tags run RUN as ciprof run tags an incomplete run (the tag set in
# the database, so that an imported head's command line stays that of the others)
tag_run() {
	python3 - "$DB" "$1" "$2" "$3" <<'PY' || fail "cannot tag run $1"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("INSERT INTO run_tags(run, key, value) VALUES (?, ?, ?)",
           (int(sys.argv[2]), sys.argv[3], sys.argv[4]))
db.commit()
PY
}
tag_run 15 host.unseen_processes 3
tag_run 9 host.silent_ring_seconds 1.170
git checkout -qb pr && echo pr >file && git commit -qam "pr" || fail "the PR branch"
# head_run FILE [UNSEEN SILENT]: the next run of the PR's commit, always imported under one
# name (h.pb), so that every head run has the same command line; UNSEEN: it lacked that many
# processes, SILENT: a ring fell silent for that many CPU-s
head_run() {
	cp "$GEN/$1" "$TMP/h.pb" || fail "copy $1"
	run_capture imp "$CIPROF" -q import --db "$DB" --format pprof --branch pr \
		--commit "$(git rev-parse HEAD)" "$TMP/h.pb"
	[ "$RC" -eq 0 ] || { expect_rc "import the head run" 0 imp; finish; }
	[ -z "${2:-}" ] && return
	local id
	id=$("$CIPROF" runs --db "$DB" --format json --limit 1 |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
	tag_run "$id" host.unseen_processes "$2"
	tag_run "$id" host.silent_ring_seconds "$3"
}

head_run head.pb
run_capture whole "$CIPROF" -q report --db "$DB" --base main --format json --fail-on-regression
expect_rc "--fail-on-regression, a whole head" 1 whole
if python3 - "$TMP/whole.out" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
print(f"verdict {r['verdict']}, advisory {r['advisory']}; history {s['history_runs']} runs; "
      f"baseline: {r['baseline']}")
sys.exit(0 if r["verdict"] == "regression" and not r["advisory"] and
         s["history_runs"] == 20 and "2 incomplete runs left out" in r["baseline"] else 1)
PY
	ok "incomplete base runs (processes not followed, a silent ring) are left out of the baseline and the history, and the rule says so"
else
	check_failed "the incomplete base run (above)"
fi

head_run head2.pb 2 0.5
run_capture part "$CIPROF" -q report --db "$DB" --base main --format json --fail-on-regression
expect_rc "--fail-on-regression, an incomplete head" 0 part
if python3 - "$TMP/part.out" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
why = r.get("advisory_reason", "")
print(f"verdict {r['verdict']}; advisory: {r['advisory']}: {why}")
sys.exit(0 if r["verdict"] == "regression" and r["advisory"] and
         "the head run is incomplete (2 processes the kernel did not follow; 0.500 CPU-s "
         "counted after a CPU's ring buffer fell silent)" in why else 1)
PY
	ok "an incomplete head is judged, advisory, and the JSON says why"
else
	check_failed "an incomplete head: not an advisory verdict (above)"
fi
run_capture partm "$CIPROF" -q report --db "$DB" --base main
expect_rc "report (Markdown), an incomplete head" 0 partm
expect_grep "the Markdown says why the verdict is advisory" "$TMP/partm.out" \
	"the head run is incomplete (2 processes the kernel did not follow; 0.500 CPU-s"
run_capture need "$CIPROF" report --db "$DB" --base main --head-runs 3 --need-run
expect_rc "--need-run on an incomplete head asks for another run" 0 need
expect_grep "--need-run names the incomplete head" "$TMP/need.out" "rerun incomplete-head "

# The next run of the commit: the incomplete one is no peer, the whole one is.
head_run head3.pb
run_capture next "$CIPROF" -q report --db "$DB" --base main --format json --head-runs 3
expect_rc "report, the run after an incomplete one" 0 next
if python3 - "$TMP/next.out" <<'PY'; then
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print(f"head_runs {s['head_runs']}, confirming runs {s['confirming_runs']}")
sys.exit(0 if s["head_runs"] == 2 and len(s["confirming_runs"]) == 1 else 1)
PY
	ok "an incomplete run of the head's commit is no peer"
else
	check_failed "peers of the head (above)"
fi
finish
