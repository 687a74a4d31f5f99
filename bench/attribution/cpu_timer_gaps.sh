#!/bin/bash
# bench/attribution/cpu_timer_gaps.sh: how late a thread's CPU-time timer fires when more
# threads are runnable than there are CPUs (docs/preload.md, Timers: why one LD_PRELOAD sample
# may stand for hundreds of ms of CPU). A thread burns 1 s of its own CPU time with a
# timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID) timer every 1 ms of it, as the preload
# sampler's, and counts the signals and the CPU time between them; with 0, 2 and 4 busy loops
# beside it (or the counts given), RUNS times each (default 2).
#
#   bench/attribution/cpu_timer_gaps.sh [RUNS [LOOPS...]]
set -eu
RUNS=${1:-2}
shift || true
[ $# -ge 1 ] || set -- 0 2 4
D=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-timergaps.XXXXXX")
BUSY=()
trap '[ ${#BUSY[@]} -eq 0 ] || kill "${BUSY[@]}" 2>/dev/null; rm -rf "$D"' EXIT
cat >"$D/gaps.c" <<'C'
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static volatile long nsig, big;
static volatile double last, widest;
static double cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
static void on_timer(int s)
{
	(void)s;
	double now = cpu(), gap = now - last;
	last = now;
	nsig++;
	big += gap > 0.01;
	if (gap > widest)
		widest = gap;
}
int main(void)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_timer;
	sigaction(SIGRTMIN + 1, &sa, NULL);
	struct sigevent sev = {0};
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGRTMIN + 1;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t tm;
	timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &tm);
	struct itimerspec its = {{0, 1000000}, {0, 1000000}};
	last = cpu();
	timer_settime(tm, 0, &its, NULL);
	volatile unsigned long x = 0;
	while (cpu() < 1.0)
		x++;
	printf("%ld signals in 1 s of CPU (1,000 asked), %ld gaps over 10 ms, widest %.3f s\n",
	       (long)nsig, (long)big, widest);
	return 0;
}
C
cc -O2 "$D/gaps.c" -o "$D/gaps"
echo "kernel $(uname -r), CONFIG_HZ $(zcat /proc/config.gz 2>/dev/null | sed -n 's/^CONFIG_HZ=//p'), $(nproc) CPUs"
for loops in "$@"; do
	for _ in $(seq "$loops"); do
		bash -c 'while :; do :; done' &
		BUSY+=($!)
	done
	for _ in $(seq "$RUNS"); do
		printf '%d busy loops: ' "$loops"
		"$D/gaps"
	done
	[ ${#BUSY[@]} -eq 0 ] || kill "${BUSY[@]}" 2>/dev/null
	BUSY=()
done
