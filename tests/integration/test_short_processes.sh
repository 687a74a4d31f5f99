#!/bin/bash
# Exact CPU: 300 processes of 3 ms each, shorter than the sampling period (10 ms at
# --hz 99), are hardly ever sampled, yet their CPU time comes out within 10 % of their own
# accounting: the kernel's per-task counts (inherit_stat) put what samples missed under each
# process as "[unsampled]", in the test the process belongs to (exec-test), and the run's
# summary says how much was unsampled.
# Then the LD_PRELOAD backend at 999 Hz, 200 processes of 3 ms one after another and all at
# once: its samples' weights come from each thread's own CPU clock, so the processes' own
# accounting lies between what burn_ms got and what the whole run got, within 5 to 10 % (a
# process's time counts from its start, an exec hands the count over, the last part of a
# period is rounded, not dropped), however loaded the machine; and none is reported as never
# loading the sampler.
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

for mode in sequential concurrent; do
	rm -f "$TMP/ptruth"
	if [ "$mode" = sequential ]; then
		loop="for i in \$(seq 200); do '$TOOL' 3 '$TMP/ptruth'; done"
	else
		loop="for i in \$(seq 200); do '$TOOL' 3 '$TMP/ptruth' & done; wait"
	fi
	run_capture "p$mode" "$CIPROF" run --backend preload --hz 999 --no-store \
		-o "$TMP/p$mode.folded" -- sh -c "$loop"
	expect_rc "ciprof run --backend preload -- 200 processes of 3 ms, $mode" 0 "p$mode"
	if grep -q "not sampled" "$TMP/p$mode.err"; then
		check_failed "preload, $mode: $(grep 'not sampled' "$TMP/p$mode.err")"
	fi
	if python3 - "$TMP/ptruth" "$TMP/p$mode.folded" "$mode" <<'PY'; then
import sys
truth = sum(float(l) for l in open(sys.argv[1]))
n = sum(1 for _ in open(sys.argv[1]))
stacks = [l.rsplit(" ", 1) for l in open(sys.argv[2])]
burn = sum(int(c) for s, c in stacks if s.split(";")[0] == "burn_ms") / 999  # periods at 999 Hz
total = sum(int(c) for s, c in stacks) / 999
print(f"  preload, {sys.argv[3]}: {n} processes, {truth:.3f} CPU-s by their own accounting; "
      f"ciprof: {burn:.3f} s under burn_ms, {total:.3f} s in all")
# Each process's own clock runs from its fork; the time before its exec is its shell's (sh):
# burn_ms gets at most the truth, the whole run (shells included) at least the truth.
sys.exit(0 if n == 200 and burn <= 1.1 * truth and total >= 0.95 * truth else 1)
PY
		ok "preload, $mode: short processes' CPU matches their own accounting"
	else
		check_failed "preload, $mode: short processes' CPU does not match their own accounting"
	fi
done
finish
