#!/bin/bash
# Coarse samples under the LD_PRELOAD backend (its CPU-time timers fire at the kernel's tick:
# 4 periods a sample event at 999 Hz on a 250 Hz kernel). ciprof run's summary says so, with
# the figure its stored run is tagged with (host.sample_dispersion). ciprof ab: each stored run
# carries its dispersion the same way, the report's sample_dispersion is the mean of its runs',
# and when the samples were coarse the footer says so and the undecided note, when an item is
# undecided, asks for more rounds. The kernel's tick decides which branch runs (both are
# checked); where a timer measured apart shows a coarse tick, the coarse one must.
. "$(dirname "$0")/lib.sh"

[ -f "$CIPROF_BUILD/libciprof-preload.so" ] || fail "libciprof-preload.so not built next to ciprof"
W=$TMP/work
cc -O1 -fno-omit-frame-pointer -o "$W" "$CIPROF_SRC/tests/integration/ab/work.c" ||
	fail "cannot compile the workload"
cd "$TMP" || fail "cannot enter $TMP"

# The kernel's tick, measured apart from ciprof: a 1 ms CPU-time timer (ITIMER_PROF) over
# 0.3 s of CPU. Where it fires fewer than 600 times a second (Debian's 250 Hz kernels: about
# 260), a sample must stand for more than 1.5 periods, so the coarse branch must be taken.
coarse_tick=$(python3 -c '
import signal, time
n = 0
def tick(s, f):
    global n
    n += 1
signal.signal(signal.SIGPROF, tick)
signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)
t0 = time.process_time()
while time.process_time() - t0 < 0.3:
    pass
signal.setitimer(signal.ITIMER_PROF, 0, 0)
print(1 if n / 0.3 < 600 else 0)')
run_capture run "$CIPROF" run --backend preload --hz 999 --db "$TMP/run.db" -- "$W" 60 60
expect_rc "run --backend preload" 0 run
disp=$("$CIPROF" runs --db "$TMP/run.db" --format json | python3 -c 'import json, sys
print(json.load(sys.stdin)["runs"][0]["tags"].get("host.sample_dispersion", "1"))')
if python3 -c "import sys; sys.exit(0 if $disp >= 1.5 else 1)"; then
	said=$(sed -n 's/.*sample events stood for \([0-9.]*\) periods each on average: the LD_PRELOAD.*/\1/p' "$TMP/run.err")
	if [ -n "$said" ] && python3 -c "import sys; sys.exit(0 if abs($said - $disp) <= 0.051 else 1)"; then
		ok "run: coarse samples ($disp periods each): the summary says so ($said)"
	else
		check_failed "run: the summary does not give the run's $disp periods a sample: $(cat "$TMP/run.err")"
	fi
elif [ "$coarse_tick" = 1 ]; then
	check_failed "run: the kernel's CPU-time timers fire under 600 times a second, yet the run's samples stood for $disp periods each at 999 Hz"
else
	grep -q "periods each on average" "$TMP/run.err" &&
		check_failed "run: one period a sample ($disp), yet the summary speaks of coarse samples" ||
		ok "run: one period a sample ($disp): the summary does not speak of coarse samples"
fi

run_capture ab "$CIPROF" ab --db "$TMP/ab.db" --backend preload --hz 999 --max-rounds 2 \
	--format json --base "'$W' 60 60" --head "'$W' 60 60"
expect_rc "ab --backend preload" 0 ab
"$CIPROF" runs --db "$TMP/ab.db" --format json >"$TMP/runs.json" || fail "ciprof runs failed"
if python3 - "$TMP/ab.out" "$TMP/runs.json" <<'PY'; then
import json, sys
ab = json.load(open(sys.argv[1]))["ab"]
runs = [r for r in json.load(open(sys.argv[2]))["runs"] if r["tags"].get("ab") == ab["id"]]
if len(runs) != 4:
    sys.exit(f"{len(runs)} stored runs of the comparison, not 4")
disp = [float(r["tags"].get("host.sample_dispersion", 1)) for r in runs]
mean = sum(disp) / len(disp)
if abs(ab["sample_dispersion"] - mean) > 0.002:
    sys.exit(f"the report's sample_dispersion {ab['sample_dispersion']} is not the runs' mean {mean}")
print(f"dispersions {disp}")
PY
	ok "the report's sample dispersion is the mean of its stored runs' tags"
else
	check_failed "the stored runs' tags and the report disagree (above)"
fi

id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ab"]["id"])' "$TMP/ab.out")
run_capture md "$CIPROF" report --db "$TMP/ab.db" --ab "$id" --format markdown
expect_rc "report --ab of the stored comparison" 0 md
read -r disp undecided < <(python3 -c 'import json,sys; a = json.load(open(sys.argv[1]))["ab"]
print(a["sample_dispersion"], a["undecided"])' "$TMP/ab.out")
if python3 -c "import sys; sys.exit(0 if $disp >= 1.5 else 1)"; then
	grep -q "Each sample stood for [0-9.]* periods on average" "$TMP/md.out" &&
		ok "coarse samples ($disp periods each): the footer says so" ||
		check_failed "the footer does not name the coarse samples: $(tail -3 "$TMP/md.out")"
	if [ "$undecided" != 0 ]; then
		grep -q "the samples were coarse (below): a short suite needs several times the rounds" \
			"$TMP/md.out" && ok "and the undecided note asks for more rounds" ||
			check_failed "the undecided note does not ask for more rounds: $(grep undecided "$TMP/md.out")"
	fi
else
	grep -q "periods on average\|samples were coarse" "$TMP/md.out" &&
		check_failed "one period a sample ($disp), yet the report speaks of coarse samples" ||
		ok "one period a sample ($disp): the report does not speak of coarse samples"
fi
finish
