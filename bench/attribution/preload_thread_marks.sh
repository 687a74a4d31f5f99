#!/bin/bash
# bench/attribution/preload_thread_marks.sh: how much of a thread's marked CPU time its mark
# holds under the LD_PRELOAD backend on an overloaded machine (docs/preload.md, Timers).
# python3 runs two threads, each marked with @TIME `begin`/`end` on CIPROF_CONTROL_FD around a
# burn of its own CPU time (threaded 0.4 s, then ends and exits; main_thread 0.2 s, then
# ends and joins: tests/tools/thread_marks.py, as test_preload_attribution.sh runs it), with
# LOOPS busy loops beside it (default 4: more runnable threads than this machine's 2 CPUs,
# where CPU-time timers fire late). Each CIPROF given runs RUNS times (default 4), in turn, so the
# binaries see the same load.
#
#   bench/attribution/preload_thread_marks.sh [-l LOOPS] [-n RUNS] CIPROF...
#
# Prints, per binary and run, the CPU seconds of threaded, main_thread and (outside tests).
set -eu
. "$(dirname "$0")/busy_loops.sh"
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n 2,14p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
SRC=$(cd "$(dirname "$0")/../.." && pwd)
cat >"$D/show.py" <<'PY'
import json, sys
t = {x["name"] or "(outside tests)": x["cpu_seconds"] for x in json.load(sys.stdin)["tests"]}
run, binary = sys.argv[1:3]
print(f"run {run} {binary}: " + ", ".join(
    f"{name} {t.get(name, 0):.3f} s" for name in ("threaded", "main_thread", "(outside tests)")))
PY
busy_start
echo "marked: threaded 0.4 s, main_thread 0.2 s of own CPU"
for r in $(seq "$RUNS"); do
	for c in "$@"; do
		rm -f "$D/run.db"
		"$c" run -q --backend preload --hz 999 --db "$D/run.db" -- python3 "$SRC/tests/tools/thread_marks.py" \
			>/dev/null 2>&1
		"$c" show --db "$D/run.db" --by test --format json | python3 "$D/show.py" "$r" "$c"
	done
done
