#!/usr/bin/env bash
# A head run that shared its machine (docs/report.md, "A head on a busy machine"): ciprof run
# measures how many CPUs other processes kept busy while the command ran and stores it as the
# run's tag host.other_cpus; ciprof report makes a regression on a head busier than its history
# advisory (the build is not failed) and says why, in numbers.
# 1. The measure: with a CPU hog started outside ciprof, at least half a CPU (a lower bound
#    only: under ctest -j the other tests are others too, so nothing is asserted of a calm run
#    but that it is a number).
# 2. The rule, on made-up profiles (tests/tools/wide_suite.py, seeded: one helper 40 % slower
#    on a history of 20 runs, the regression test_report_wide sees gate): the same head stored
#    with host.other_cpus 1.5 over a history that had 0.1 is advisory, and exits 0 under
#    --fail-on-regression; with 0.2 it fails the build as before, and with 0.02 the head is
#    quiet (JSON summary.head_quiet) and fails it too.
source "$(dirname "$0")/lib.sh"

# --- 1. the measure ---
DB1=$TMP/measure.db
# (the sleep: a command under 20 of /proc/stat's ticks, 0.2 s, gets no figure at all)
run_capture calm "$CIPROF" run --db "$DB1" --tag case=calm -- sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 0.3'
expect_rc "ciprof run" 0 calm
# bounded, so that a test killed midway leaves no hog behind
timeout 60 sh -c 'while :; do :; done' &
HOG=$!
run_capture busy "$CIPROF" run --db "$DB1" --tag case=busy -- sh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; sleep 0.3'
kill "$HOG" 2>/dev/null
wait "$HOG" 2>/dev/null
expect_rc "ciprof run beside a CPU hog" 0 busy
# Short commands: /proc/stat's 10 ms ticks over a few ms once read as 5 CPUs and more.
for k in 1 2 3 4 5; do
	"$CIPROF" -q run --db "$DB1" --tag case=short$k -- true || fail "ciprof run -- true failed"
done
run_capture runs "$CIPROF" runs --db "$DB1" --format json
expect_rc "ciprof runs --format json" 0 runs
if python3 - "$TMP/runs.out" <<'PY'; then
import json, sys
runs = {r["tags"]["case"]: r["tags"] for r in json.load(open(sys.argv[1]))["runs"]}
calm, busy = (float(runs[k].get("host.other_cpus", "nan")) for k in ("calm", "busy"))
print(f"host.other_cpus: calm {calm}, beside a hog {busy}")
sys.exit(0 if calm >= 0 and busy >= 0.5 else 1)
PY
	ok "host.other_cpus: a number, and at least 0.5 beside a CPU hog"
else
	check_failed "host.other_cpus missing, or below 0.5 beside a CPU hog (above)"
fi
if python3 - "$TMP/runs.out" "$(nproc)" <<'PY'; then
import json, sys
cpus = int(sys.argv[2])
v = {r["tags"]["case"]: float(r["tags"].get("host.other_cpus", "nan"))
     for r in json.load(open(sys.argv[1]))["runs"]}
print(f"host.other_cpus with {cpus} CPUs: {v}")
sys.exit(0 if all(not x > cpus for x in v.values()) else 1)
PY
	ok "host.other_cpus never above the machine's CPU count (short commands included)"
else
	check_failed "host.other_cpus above the CPU count (above)"
fi

# --- 2. the rule ---
GEN=$TMP/gen
DB=$TMP/wide.db
python3 "$CIPROF_SRC/tests/tools/wide_suite.py" "$GEN" --base-runs 20 --seed 13 >"$TMP/gen.out" ||
	fail "the generator failed"
mkdir -p "$TMP/repo" && cd "$TMP/repo" || fail "no repo dir"
wide_history "$DB" "$GEN" 20 --tag host.other_cpus=0.1
git checkout -qb pr && echo pr >file && git commit -qam "pr" || fail "the PR branch"
# judged: the latest run (each import below is the head of the next report)
head_run() {
	run_capture imp "$CIPROF" import --db "$DB" --format pprof --branch pr \
		--commit "$(git rev-parse HEAD)" --tag "host.other_cpus=$1" "$GEN/head.pb"
	[ "$RC" -eq 0 ] || { expect_rc "import the head run" 0 imp; finish; }
}

head_run 1.5
run_capture busyj "$CIPROF" -q report --db "$DB" --base main --format json --fail-on-regression
expect_rc "--fail-on-regression on a busy head" 0 busyj
if python3 - "$TMP/busyj.out" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
why = r.get("advisory_reason", "")
print(f"verdict {r['verdict']}; head_other_cpus {s['head_other_cpus']}, history "
      f"{s['history_other_cpus']}; advisory: {r['advisory']}: {why}")
sys.exit(0 if r["verdict"] == "regression" and s["head_other_cpus"] == 1.5 and
         s["history_other_cpus"] == 0.1 and r["advisory"] and
         "other processes kept 1.50 CPUs busy" in why and "against 0.10" in why else 1)
PY
	ok "a busy head's regression is shown, advisory, and the JSON says why"
else
	check_failed "a busy head: not an advisory regression (above)"
fi
run_capture busym "$CIPROF" -q report --db "$DB" --base main
expect_rc "report (Markdown)" 0 busym
expect_grep "the Markdown says the verdict is advisory, and why" "$TMP/busym.out" "other processes kept 1.50 CPUs busy"

head_run 0.2
run_capture calmj "$CIPROF" -q report --db "$DB" --base main --format json --fail-on-regression
expect_rc "--fail-on-regression on a head as calm as its history" 1 calmj
expect_grep "a head with 0.2 CPUs of others is not quiet" "$TMP/calmj.out" '"head_quiet": false'

# A quiet head (under 0.1 CPUs of others, docs/report.md "A quiet head") is judged on the
# steady tails as fitted: the JSON says so, and the planted regression still fails the build.
head_run 0.02
run_capture quietj "$CIPROF" -q report --db "$DB" --base main --format json --fail-on-regression
expect_rc "--fail-on-regression on a quiet head" 1 quietj
expect_grep "a head with 0.02 CPUs of others is quiet" "$TMP/quietj.out" '"head_quiet": true'
finish
