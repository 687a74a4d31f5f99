#!/bin/bash
# ciprof ab end to end on a small workload (tests/integration/ab/work.c: steady_part and
# slow_part spin for the millions of iterations given): rounds alternate in ABBA order; both
# sides are stored as runs tagged with one comparison id, side and round; a planted 3x slowdown
# of slow_part is a regression (exit 1 with --fail-on-regression) and nothing else is; a clear
# answer stops the rounds at the first look; --max-seconds bounds a comparison that cannot
# decide; too few samples leave items undecided, never regressions; a failing side stops the
# comparison (exit 3, which side and round named); Ctrl-C keeps and reports the complete
# rounds (exit 130).
. "$(dirname "$0")/lib.sh"

W=$TMP/work
cc -O1 -fno-omit-frame-pointer -o "$W" "$CIPROF_SRC/tests/integration/ab/work.c" ||
	fail "cannot compile the workload"
DB=$TMP/ab.db
cd "$TMP" || fail "cannot enter $TMP"

# --- alternation: ABBA order, every round complete ---
LOG=$TMP/order.log
run_capture order "$CIPROF" ab --no-store --max-rounds 4 --hz 99 \
	--base "echo B >>'$LOG'; '$W' 5 5" --head "echo H >>'$LOG'; '$W' 5 5"
expect_rc "4 rounds of identical sides" 0 order
[ "$(tr -d '\n' <"$LOG")" = BHHBBHHB ] && ok "rounds run in ABBA order" ||
	check_failed "run order $(tr -d '\n' <"$LOG"), expected BHHBBHHB"
grep -q '^### A/B on one machine: 4 rounds' "$TMP/order.out" && ok "the report is headed A/B on one machine" ||
	check_failed "no 'A/B on one machine: 4 rounds' heading in the report"
[ "$(head -1 "$TMP/order.out")" = '<!-- ciprof-report -->' ] && ok "stdout holds the report alone" ||
	check_failed "stdout does not start with the report's marker"

# --- a planted 3x slowdown: a regression, found; storage ---
run_capture slow "$CIPROF" ab --db "$DB" --max-rounds 6 --hz 999 --format json \
	--fail-on-regression --base "'$W' 40 40" --head "'$W' 40 120"
expect_rc "planted 3x slowdown with --fail-on-regression" 1 slow
python3 - "$TMP/slow.out" <<'PY' || check_failed "the planted slowdown is not reported as expected (above)"
import json, sys
r = json.load(open(sys.argv[1]))
errors = []
if r["verdict"] != "regression":
    errors.append(f"verdict {r['verdict']!r}")
ab = r.get("ab") or {}
if not 4 <= ab.get("rounds", 0) <= 6 or ab.get("event") != "cpu-clock":
    errors.append(f"ab block {ab}")
fl = {f["name"]: f for f in r["functions"]}
s = fl.get("slow_part")
if not s or s["kind"] != "regression" or not 1.5 <= s["delta"] <= 2.5:
    errors.append(f"slow_part: {s}")
flagged = [f["name"] for f in r["functions"] if f["significant"] and f["name"] != "slow_part"]
if flagged:
    errors.append(f"also flagged: {flagged}")
for e in errors:
    print("  mismatch:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
"$CIPROF" runs --db "$DB" --format json >"$TMP/runs.json" 2>"$TMP/runs.err" ||
	check_failed "ciprof runs failed: $(cat "$TMP/runs.err")"
python3 - "$TMP/runs.json" "$TMP/slow.out" <<'PY' || check_failed "the stored runs are not tagged as expected (above)"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
ab = json.load(open(sys.argv[2]))["ab"]
errors = []
n = ab["rounds"]
if len(runs) != 2 * n:
    errors.append(f"{len(runs)} runs stored for {n} rounds")
for r in runs:
    t = r["tags"]
    if t.get("ab") != ab["id"] or t.get("ab.side") not in ("base", "head"):
        errors.append(f"run {r['id']} tags {t}")
    elif r["branch"] != f"ab/{ab['id']}/{t['ab.side']}":
        errors.append(f"run {r['id']} on branch {r['branch']!r}")
pairs = sorted((r["tags"].get("ab.round"), r["tags"].get("ab.side")) for r in runs)
want = sorted((str(i), s) for i in range(1, n + 1) for s in ("base", "head"))
if pairs != want:
    errors.append(f"rounds and sides {pairs}")
for e in errors:
    print("  mismatch:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY

# --- ciprof report --ab ID renders the stored comparison again, the same ---
ID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ab"]["id"])' "$TMP/slow.out")
run_capture again "$CIPROF" report --db "$DB" --ab "$ID" --format json --fail-on-regression
expect_rc "report --ab ID --fail-on-regression" 1 again
python3 - "$TMP/slow.out" "$TMP/again.out" <<'PY' || check_failed "report --ab differs from ab's own report (above)"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
key = lambda r: [(x["name"], x["kind"], round(x["delta"], 9), x["undecided"])
                 for x in r["tests"] + r["functions"]]
errors = []
if key(a) != key(b):
    errors.append(f"items {key(a)} != {key(b)}")
for k in ("verdict", "base", "head"):
    if a[k] != b[k]:
        errors.append(f"{k}: {a[k]} != {b[k]}")
if a["ab"]["rounds"] != b["ab"]["rounds"] or b["ab"]["stopped"] != "stored":
    errors.append(f"ab {a['ab']} vs {b['ab']}")
for e in errors:
    print("  mismatch:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
run_capture nosuch "$CIPROF" report --db "$DB" --ab no-such-id
expect_rc "report --ab of an unknown id" 3 nosuch
grep -q "no A/B comparison 'no-such-id'" "$TMP/nosuch.err" && ok "an unknown comparison is named" ||
	check_failed "no clear error for an unknown comparison: $(cat "$TMP/nosuch.err")"

# --- too few rounds to decide a +10 % change: undecided, not a regression, exit 0 ---
run_capture few "$CIPROF" ab --no-store --max-rounds 2 --hz 999 --format json \
	--fail-on-regression --base "'$W' 30 30" --head "'$W' 30 33"
expect_rc "2 rounds with --fail-on-regression" 0 few
python3 - "$TMP/few.out" <<'PY' || check_failed "undecided items are not reported as such (above)"
import json, sys
r = json.load(open(sys.argv[1]))
und = [f["name"] for f in r["functions"] if f.get("undecided")]
ok = r["verdict"] == "ok" and r["ab"]["undecided"] >= 1 and und and r["ab"]["stopped"] == "rounds"
if not ok:
    print(f"  mismatch: verdict {r['verdict']}, ab {r['ab']}, undecided {und}", file=sys.stderr)
sys.exit(0 if ok else 1)
PY

# --- early stopping: when every judged item is decided at a look, no more rounds ---
# (only slow_part is sampled, 3x slower: clear at the first look, after round 4 of 10)
run_capture early "$CIPROF" ab --no-store --max-rounds 10 --hz 999 --format json \
	--base "'$W' 0 40" --head "'$W' 0 120"
expect_rc "a clear answer" 0 early
python3 - "$TMP/early.out" <<'PY' && ok "the comparison stops at the first look when all is decided" ||
import json, sys
r = json.load(open(sys.argv[1]))
a = r["ab"]
fl = [f["name"] for f in r["functions"] if f["significant"]]
ok = a["stopped"] == "decided" and a["rounds"] == 4 and a["undecided"] == 0 and fl == ["slow_part"]
if not ok:
    print(f"  mismatch: {a}, flagged {fl}", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
	check_failed "no early stop (above)"

# --- the budget: --max-seconds bounds a comparison that cannot decide ---
# (a +10 % change at an alpha no 10 rounds can reach: undecided for ever). Each side sleeps 1 s,
# so every round takes at least 2 s of wall time however fast or loaded the machine is. No round
# starts when the time so far plus the longest round would pass 10 s (docs/ab.md, Budget): round
# k+1 needs 2(k+1) <= 10, so at most 5 of the 10 rounds run, whatever the speed; round 2 runs
# unless round 1 took over 5 s (3 s beyond its sleeps), so items are judged. No duration is asserted.
run_capture budget "$CIPROF" ab --no-store --max-rounds 10 --max-seconds 10 --hz 999 \
	--alpha 1e-9 --format json --fail-on-regression \
	--base "sleep 1; '$W' 20 20" --head "sleep 1; '$W' 20 22"
expect_rc "--max-seconds 10 with nothing decidable" 0 budget
python3 - "$TMP/budget.out" <<'PY' && ok "--max-seconds stops the rounds before --max-rounds; undecided items stay undecided" ||
import json, sys
r = json.load(open(sys.argv[1]))
a = r["ab"]
und = [f["name"] for f in r["functions"] if f.get("undecided")]
flagged = [f["name"] for f in r["functions"] if f["significant"]]
errors = []
if a["stopped"] != "seconds":
    errors.append(f"stopped {a['stopped']!r}, expected 'seconds'")
if a["max_rounds"] != 10 or not 2 <= a["rounds"] <= 5:
    errors.append(f"{a['rounds']} of {a['max_rounds']} rounds, expected 2 to 5 of 10")
if r["verdict"] != "ok" or flagged:
    errors.append(f"verdict {r['verdict']!r}, flagged {flagged}")
if a["undecided"] < 1 or "slow_part" not in und:
    errors.append(f"undecided {a['undecided']}: {und}")
for e in errors:
    print("  mismatch:", e, a, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
	check_failed "--max-seconds did not bound the comparison as documented (above)"
grep -q "stopping after [0-9]* rounds: another would pass --max-seconds 10" "$TMP/budget.err" &&
	grep -q "stopped: seconds" "$TMP/budget.err" && ok "the time budget is named as the reason to stop" ||
	check_failed "no 'stopped: seconds' in the log: $(tail -3 "$TMP/budget.err")"

# --- a failing side stops the comparison ---
run_capture failing "$CIPROF" ab --no-store --max-rounds 4 --base "'$W' 1 1" --head "'$W' 1 1; exit 7"
expect_rc "a failing head command" 3 failing
grep -q "the head command failed (exit status 7) in round 1" "$TMP/failing.err" &&
	ok "the failing side and round are named" ||
	check_failed "no clear message for the failing side: $(cat "$TMP/failing.err")"
[ -s "$TMP/failing.out" ] && check_failed "a report was printed for a failed comparison" ||
	ok "no report for a failed comparison"

# --- Ctrl-C keeps what was measured ---
LOG2=$TMP/int.log
: >"$LOG2"
CMD="echo x >>'$LOG2'; [ \$(wc -l <'$LOG2') -ge 5 ] && exec sleep 30; '$W' 5 5"
"$CIPROF" ab --db "$TMP/int.db" --max-rounds 8 --hz 99 --base "$CMD" --head "$CMD" \
	>"$TMP/int.out" 2>"$TMP/int.err" </dev/null &
PID=$!
for _ in $(seq 300); do
	[ "$(wc -l <"$LOG2")" -ge 5 ] && break
	sleep 0.1
done
sleep 0.3
kill -INT "$PID"
RC=0
wait "$PID" || RC=$?
expect_rc "interrupted in round 3" 130 int
grep -q '^### A/B on one machine: 2 rounds' "$TMP/int.out" && ok "the 2 complete rounds are reported" ||
	check_failed "no report of 2 rounds after Ctrl-C: $(head -3 "$TMP/int.out")"
N=$("$CIPROF" runs --db "$TMP/int.db" --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["runs"]))')
[ "$N" = 4 ] && ok "the 2 complete rounds are stored" || check_failed "$N runs stored, expected 4"

# --- usage errors ---
run_capture usage "$CIPROF" ab --base 'true'
expect_rc "--head missing" 2 usage
finish
