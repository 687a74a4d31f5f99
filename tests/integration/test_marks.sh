#!/bin/bash
# Marks (include/ciprof.h, ciprof exec-test) carry the marker's own time and any bytes:
#  - a test marked while ciprof itself is stopped (SIGSTOP, a machine too loaded to run it)
#    gets its own CPU, and the unmarked work after it stays outside tests: marks stamped on
#    arrival would have given both to nobody;
#  - a name with a newline, a carriage return and a backslash comes back unchanged;
#  - a 3000-byte name is cut at 1024 bytes, with a warning (from ciprof.h and exec-test).
. "$(dirname "$0")/lib.sh"

TOOL=$CIPROF_BUILD/tests/late_marks
[ -x "$TOOL" ] || fail "$TOOL is not built"

run_capture late "$CIPROF" run --hz 499 --db "$TMP/m.db" -- "$TOOL" 200
expect_rc "ciprof run -- late_marks" 0 late
expect_grep "the cut names are warned about" "$TMP/late.err" "longer than 1024 bytes"
run_capture late-show "$CIPROF" show --db "$TMP/m.db" --by test --format json
expect_rc "ciprof show --by test" 0 late-show
# Each part spins 0.2 s of its thread's CPU time; at 499 Hz that is ~100 samples.
if python3 - "$TMP/late-show.out" <<'PY'; then
import json, sys
tests = {t["name"]: t["cpu_seconds"] for t in json.load(open(sys.argv[1]))["tests"]}
want = {"early": 0.2, "": 0.2, "odd\nname\r\\x": 0.2, "L" * 1024: 0.2}
bad = 0
for name, cpu in want.items():
    got = tests.get(name)
    shown = repr(name if len(name) < 40 else name[:10] + "...")
    print(f"  {shown}: {got} s (expected {cpu} s within 30 %)")
    if got is None or abs(got - cpu) > 0.3 * cpu:
        bad += 1
extra = set(tests) - set(want)
if extra:
    print(f"  unexpected tests: {sorted(repr(n[:40]) for n in extra)}")
    bad += 1
sys.exit(1 if bad else 0)
PY
	ok "marks keep their own time through a stopped ciprof; names keep every byte, cut at 1024"
else
	check_failed "per-test CPU of late_marks does not match its own accounting (above)"
fi

long=$(printf 'N%.0s' $(seq 3000))
run_capture exec "$CIPROF" run --hz 499 --db "$TMP/e.db" -- \
	"$CIPROF" exec-test "$long" -- "$CIPROF" exec-test $'two\nlines' -- "$TOOL" 100
expect_grep "exec-test warns of a cut name" "$TMP/exec.err" "longer than 1024 bytes"
run_capture exec-show "$CIPROF" show --db "$TMP/e.db" --by test --format json
if python3 -c '
import json, sys
names = [t["name"] for t in json.load(open(sys.argv[1]))["tests"]]
sys.exit(0 if "two\nlines" in names else 1)' "$TMP/exec-show.out"; then
	ok "exec-test: a name with a newline is kept (the inner mark wins)"
else
	check_failed "exec-test: no test 'two\\nlines' in: $(head -c 300 "$TMP/exec-show.out")"
fi
finish
