#!/bin/bash
# bench/attribution/preload_many_marks.sh: per-test CPU seconds of many short marked tests
# under the LD_PRELOAD backend on an overloaded machine (docs/preload.md, Timers). A C program
# runs two threads, each 25 tests marked with include/ciprof.h (ciprof_test_begin/end) around
# 20 ms of its own CPU time, with 4 ms of unmarked work after each (0.2 s outside tests in
# all), beside LOOPS busy loops (default 4: more runnable threads than this machine's 2 CPUs,
# where one preload sample may stand for hundreds of ms of CPU and many tests). Each CIPROF
# given (its libciprof-preload.so beside it) runs RUNS times (default 4), in turn.
#
#   bench/attribution/preload_many_marks.sh [-l LOOPS] [-n RUNS] CIPROF...
#
# Prints per binary and run: how many of the 50 tests got time, their total (1.000 s
# marked), the median and worst error of a test against its 20 ms, and "(outside tests)".
set -eu
. "$(dirname "$0")/busy_loops.sh"
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n 2,13p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
SRC=$(cd "$(dirname "$0")/../.." && pwd)
cat >"$D/mt.c" <<'C'
#include "include/ciprof.h"
#include <pthread.h>
#include <stdio.h>
#include <time.h>
static double tcpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
static volatile unsigned long sink;
__attribute__((noinline)) static void spin(double s)
{
	double e = tcpu() + s;
	while (tcpu() < e)
		for (int i = 0; i < 20000; i++)
			sink += (unsigned long)i * 2654435761u;
}
static void *worker(void *arg)
{
	char name[64];
	for (int i = 0; i < 25; i++) {
		snprintf(name, sizeof name, "%s_%02d", (const char *)arg, i);
		ciprof_test_begin(name);
		spin(0.02);
		ciprof_test_end(name);
		spin(0.004);
	}
	return NULL;
}
int main(void)
{
	pthread_t a, b;
	pthread_create(&a, NULL, worker, "A");
	pthread_create(&b, NULL, worker, "B");
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
C
cc -O2 -fno-omit-frame-pointer -I"$SRC" "$D/mt.c" -o "$D/mt" -lpthread
cat >"$D/check.py" <<'PY'
import json, statistics, sys
t = {x["name"]: x["cpu_seconds"] for x in json.load(sys.stdin)["tests"]}
tests = [v for k, v in t.items() if k[:2] in ("A_", "B_")]
errs = [abs(v - 0.02) / 0.02 for v in tests] or [1]
print(f"run {sys.argv[1]} {sys.argv[2]}: {len(tests)} of 50 tests, {sum(tests):.3f} s of 1.000 marked; "
      f"error median {100 * statistics.median(errs):.0f} %, worst {100 * max(errs):.0f} %; "
      f"outside tests {t.get('', 0):.3f} s of 0.200")
PY
busy_start
for r in $(seq "$RUNS"); do
	for c in "$@"; do
		rm -f "$D/run.db"
		"$c" run -q --backend preload --hz 999 --db "$D/run.db" -- "$D/mt" >/dev/null 2>&1
		"$c" show --db "$D/run.db" --by test --format json | python3 "$D/check.py" "$r" "$c"
	done
done
