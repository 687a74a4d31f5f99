#!/bin/bash
# bench/attribution/preload_thread_marks.sh: how much of a thread's marked CPU time its mark
# holds under the LD_PRELOAD backend on an overloaded machine (docs/preload.md, Timers).
# python3 runs two threads, each marked with @TIME `begin`/`end` on CIPROF_CONTROL_FD around a
# burn of its own CPU time (threaded 0.4 s, then ends and exits; main_thread 0.2 s, then
# ends and joins), as tests/integration/test_preload_attribution.sh does, with LOOPS busy
# loops running beside it (default 4: more runnable threads than this machine's 2 CPUs, where
# CPU-time timers fire late). Each CIPROF given runs RUNS times (default 4), in turn, so the
# binaries see the same load.
#
#   bench/attribution/preload_thread_marks.sh [-l LOOPS] [-n RUNS] CIPROF...
#
# Prints, per binary and run, the CPU seconds of threaded, main_thread and (outside tests).
set -eu
LOOPS=4 RUNS=4
while getopts l:n: o; do
	case $o in l) LOOPS=$OPTARG ;; n) RUNS=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n 2,14p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
D=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-tmarks.XXXXXX")
HOGS=()
cleanup() { [ ${#HOGS[@]} -eq 0 ] || kill "${HOGS[@]}" 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
cat >"$D/marks.py" <<'PY'
import os, threading, time
fd = int(os.environ["CIPROF_CONTROL_FD"])
def mark(what, tid, name):
    os.write(fd, f"@{time.monotonic_ns()} {what} {tid} {name}\n".encode())
def burn(name, seconds):
    tid = threading.get_native_id()
    mark("begin", tid, name)
    t0 = time.thread_time()
    x = 0
    while time.thread_time() - t0 < seconds:
        x += 1
    mark("end", tid, name)
t = threading.Thread(target=burn, args=("threaded", 0.4))
t.start()
burn("main_thread", 0.2)
t.join()
PY
cat >"$D/show.py" <<'PY'
import json, sys
t = {x["name"] or "(outside tests)": x["cpu_seconds"] for x in json.load(sys.stdin)["tests"]}
run, binary = sys.argv[1:3]
print(f"run {run} {binary}: " + ", ".join(
    f"{name} {t.get(name, 0):.3f} s" for name in ("threaded", "main_thread", "(outside tests)")))
PY
for _ in $(seq "$LOOPS"); do
	bash -c 'while :; do :; done' &
	HOGS+=($!)
done
echo "$LOOPS busy loops on $(nproc) CPUs; marked: threaded 0.4 s, main_thread 0.2 s of own CPU"
for r in $(seq "$RUNS"); do
	for c in "$@"; do
		rm -f "$D/run.db"
		"$c" run -q --backend preload --hz 999 --db "$D/run.db" -- python3 "$D/marks.py" \
			>/dev/null 2>&1
		"$c" show --db "$D/run.db" --by test --format json | python3 "$D/show.py" "$r" "$c"
	done
done
