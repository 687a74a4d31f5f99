#!/bin/bash
# Each test's CPU seconds against its own getrusage. ciprof counts, beside the samples, each
# task's exact CPU time as the kernel reports it when the task exits (inherit_stat), so a
# test's seconds are its samples plus the time they missed (`[unsampled]`, docs/run.md).
# Twelve tests of 40-150 ms that sleep 2 ms after every burst of work, run 4 at a time on the
# machine's CPUs, switch with one another and with ctest thousands of times. The
# first exec doorbells (separate events opened on ctest) made the kernel move those exact
# counts between tasks at such switches, by up to 0.47 s a test (bench/ab/attr_ctest.sh:
# ff80c59 failed 4 of 40 runs; `CIPROF=<ff80c59's build> bash test_exact_cpu.sh` failed 3 of
# its 5 checks, +20 to +25 ms). 46d1c8a put the doorbells in the sampling events' groups, and
# test_bell_counts.sh checks that they count nothing. Checked here, in runs of ctest itself
# and of ctest behind bash -c (doorbells from the start), and of ctest behind a script
# (doorbells enabled when it is seen), that every test's seconds are
# - at most 3 ms + 2 % under its own: a test's seconds are its samples plus what they missed,
#   so it comes out short only when time of its was lost or went to another test or outside
#   tests; the [unsampled] rest is rounded to whole samples (half a millisecond). Before
#   47f1465 the test that exited holding ctest's perf context lost its unsampled part: 105 of
#   1800 results (30 runs with a CPU hog) more than 3 ms short, down to -21.6 ms, which
#   15 ms + 5 % let through in all 30 runs (one at its very edge); these bounds fail all 30.
#   After it, the lowest of 1800 was -1.2 ms;
# - at most 15 ms + 5 % over its own: a task's cpu-clock samples can add up to more than its
#   own count (125.1 ms of samples for 121.7 ms), and samples are never taken back; with a CPU
#   hog the highest of 1800 was +9.8 ms.
. "$(dirname "$0")/lib.sh"

require_sampling
ctest_project burn < <(for t in $(seq 1 12); do
	printf 'add_test(NAME t%02d COMMAND burn t%02d %d %d)\n' "$t" "$t" $((30 + 10 * t)) $((8 + 2 * t))
done)
printf '#!/bin/sh\nexec ctest --test-dir "%s" -j4\n' "$B" >"$TMP/run-tests"
chmod +x "$TMP/run-tests"

check() { # LABEL CMD...: profiles CMD, compares every test's CPU seconds with its own
	local label=$1
	shift
	rm -f "$TMP/$label.db" "$TMP/$label.truth" "$B/Testing/Temporary/CTestCostData.txt"
	run_capture "$label" env CIPROF_TRUTH="$TMP/$label.truth" "$CIPROF" run --hz 999 \
		--db "$TMP/$label.db" -- "$@"
	expect_rc "$label: ciprof run" 0 "$label"
	[ "$RC" -eq 0 ] || return
	"$CIPROF" show --db "$TMP/$label.db" --by test --format json >"$TMP/$label.json" ||
		fail "$label: ciprof show failed"
	if python3 - "$TMP/$label.json" "$TMP/$label.truth" <<'PY'; then
import json, sys
shown = {t["name"]: t["cpu_seconds"] for t in json.load(open(sys.argv[1]))["tests"]}
truth = {}
for line in open(sys.argv[2]):
    name, sec = line.split()
    truth[name] = float(sec)
bad = []
for name in sorted(truth):
    got = shown.get(name, 0.0)
    d = got - truth[name]
    flag = d < -(0.003 + 0.02 * truth[name]) or d > 0.015 + 0.05 * truth[name]
    print(f"    {name}: ciprof {got:.3f} s, own {truth[name]:.3f} s ({d * 1000:+.1f} ms){'  <-- off' if flag else ''}")
    if flag:
        bad.append(name)
if len(truth) != 12:
    bad.append(f"{len(truth)} of 12 tests wrote their CPU time")
sys.exit(1 if bad else 0)
PY
		ok "$label: every test's CPU seconds at most 3 ms + 2 % under and 15 ms + 5 % over its own getrusage"
	else
		check_failed "$label: a test's CPU seconds are off (above)"
		# What ciprof said of the run (a test left outside tests is named in a warning).
		sed 's/^/    /' "$TMP/$label.err" | grep -v '^    ciprof: top\|^     *[0-9.]*%' | head -20
	fi
}

for i in 1 2 3; do
	check "ctest-$i" ctest --test-dir "$B" -j4
done
check bash-c bash -c "cd '$B' && ctest -j4"
check script "$TMP/run-tests"
finish
