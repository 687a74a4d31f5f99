#!/bin/bash
# Exact CPU: 300 processes of 3 ms each, shorter than the sampling period (10 ms at
# --hz 99), are hardly ever sampled, yet their CPU time comes out within 10 % of their own
# accounting: the kernel's per-task counts (inherit_stat) put what samples missed under each
# process as "[unsampled]", in the test the process belongs to (exec-test), and the run's
# summary says how much was unsampled.
. "$(dirname "$0")/lib.sh"

TOOL=$CIPROF_BUILD/tests/burn_ms
[ -x "$TOOL" ] || fail "$TOOL is not built"

run_capture short "$CIPROF" run --hz 99 --db "$TMP/s.db" -- "$CIPROF" exec-test short -- \
	sh -c "for i in \$(seq 300); do '$TOOL' 3 '$TMP/truth'; done"
expect_rc "ciprof run -- 300 processes of 3 ms" 0 short
expect_grep "the summary says what was unsampled" "$TMP/short.err" "unsampled) in"
run_capture folded "$CIPROF" show --db "$TMP/s.db" --format folded
run_capture tests "$CIPROF" show --db "$TMP/s.db" --by test --format json
if python3 - "$TMP/truth" "$TMP/folded.out" "$TMP/tests.out" <<'PY'; then
import json, sys
truth = sum(float(l) for l in open(sys.argv[1]))
n = sum(1 for _ in open(sys.argv[1]))
period = 1 / 99  # the --hz above: folded counts are samples
burn = unsampled = 0
for line in open(sys.argv[2]):
    stack, count = line.rsplit(" ", 1)
    frames = stack.split(";")
    if frames[0] == "burn_ms":
        burn += int(count) * period
        unsampled += int(count) * period if frames[-1] == "[unsampled]" else 0
tests = {t["name"]: t["cpu_seconds"] for t in json.load(open(sys.argv[3]))["tests"]}
print(f"  {n} processes: {truth:.3f} CPU-s by their own accounting; ciprof: {burn:.3f} s "
      f"under burn_ms ({unsampled:.3f} s unsampled), test 'short' {tests.get('short', 0):.3f} s")
ok = n == 300 and abs(burn - truth) <= 0.1 * truth and tests.get("short", 0) >= 0.9 * truth
sys.exit(0 if ok else 1)
PY
	ok "short processes: CPU within 10 % of their own accounting, in their test"
else
	check_failed "short processes' CPU does not match their own accounting (above)"
fi
finish
