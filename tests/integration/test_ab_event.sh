#!/bin/bash
# ciprof ab --event: auto samples instructions where a PMU exists and otherwise falls back to
# cpu-clock, saying so in one line; an explicit hardware event without a PMU is an error; the
# preload backend takes cpu-clock only. The PMU is simulated (CIPROF_TEST_PMU=absent: none;
# standin: present, the software task-clock sampled in its place) so that the test means the
# same on every machine.
. "$(dirname "$0")/lib.sh"

W=$TMP/work
cc -O1 -fno-omit-frame-pointer -o "$W" "$CIPROF_SRC/tests/integration/ab/work.c" ||
	fail "cannot compile the workload"
cd "$TMP" || fail "cannot enter $TMP"
event_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ab"]["event"])' "$1"; }

CIPROF_TEST_PMU=absent run_capture none "$CIPROF" ab --no-store --max-rounds 2 --hz 199 \
	--format json --base "'$W' 5 5" --head "'$W' 5 5"
expect_rc "auto without a PMU" 0 none
[ "$(event_of "$TMP/none.out")" = cpu-clock ] && ok "auto falls back to cpu-clock" ||
	check_failed "auto without a PMU sampled $(event_of "$TMP/none.out")"
[ "$(grep -c 'sampling cpu-clock instead of instructions' "$TMP/none.err")" = 1 ] &&
	ok "the fallback is said in one line" || check_failed "no one-line fallback note: $(cat "$TMP/none.err")"

CIPROF_TEST_PMU=standin run_capture pmu "$CIPROF" ab --db "$TMP/ab.db" --max-rounds 2 --hz 199 \
	--base "'$W' 5 5" --head "'$W' 5 5"
expect_rc "auto with a (simulated) PMU" 0 pmu
grep -q "sampling retired instructions" "$TMP/pmu.err" && ok "auto picks instructions with a PMU" ||
	check_failed "auto did not pick instructions: $(cat "$TMP/pmu.err")"
grep -q "sampling instructions; stopped" "$TMP/pmu.out" &&
	grep -q "billions of instructions, not seconds" "$TMP/pmu.out" &&
	ok "the report says what was sampled and in which unit" ||
	check_failed "the report does not name the event and its unit"
"$CIPROF" runs --db "$TMP/ab.db" --format json | python3 -c '
import json, sys
runs = json.load(sys.stdin)["runs"]
sys.exit(0 if runs and all(r["tags"].get("ab.event") == "instructions" for r in runs) else 1)' &&
	ok "the stored runs carry ab.event=instructions" || check_failed "stored runs lack ab.event=instructions"

CIPROF_TEST_PMU=absent run_capture explicit "$CIPROF" ab --no-store --event instructions \
	--base true --head true
expect_rc "--event instructions without a PMU" 3 explicit
grep -q "no hardware PMU" "$TMP/explicit.err" && ok "the missing PMU is named" ||
	check_failed "no clear error for the missing PMU: $(cat "$TMP/explicit.err")"
CIPROF_TEST_PMU=standin run_capture pre "$CIPROF" ab --no-store --event cycles --backend preload \
	--base true --head true
expect_rc "--event cycles with the preload backend" 3 pre
run_capture bad "$CIPROF" ab --event bogus --base true --head true
expect_rc "--event bogus" 2 bad
finish
