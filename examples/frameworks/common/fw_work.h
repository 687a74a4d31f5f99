/* Known work and measured truth for the framework examples (examples/frameworks/).
 * Each test burns fw_burn(units) of CPU (1 unit is about 10 ms here) and appends
 * "TESTNAME SECONDS" -- its thread's CPU time -- to the file named by $CIPROF_TRUTH.
 * Header-only so that each example stays a standalone project; valid C and C++.
 * Include it first: it asks for POSIX (clock_gettime, O_CLOEXEC) under -std=c17. */
#ifndef FW_WORK_H
#define FW_WORK_H

#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Iterations of fw_mix per unit of work. */
#define FW_ITERS_PER_UNIT 185000u

/* Sixteen rounds of a 64-bit mixer (splitmix64's finaliser). Out of line, and the volatile
 * stack slot gives this leaf a frame of its own: GCC 12 leaves leaf functions that need no
 * stack without one despite -mno-omit-leaf-frame-pointer, and a sample in such a leaf loses
 * its caller from the frame-pointer call chain. */
__attribute__((noinline)) static uint64_t fw_mix(uint64_t x)
{
	volatile uint64_t slot = x;

	x = slot;
	for (int r = 0; r < 16; r++) {
		x ^= x >> 30;
		x *= 0xbf58476d1ce4e5b9u;
		x ^= x >> 27;
		x *= 0x94d049bb133111ebu;
		x ^= x >> 31;
	}
	slot = x;
	return slot;
}

/* Burns units * FW_ITERS_PER_UNIT steps; not a leaf (it calls fw_mix), never inlined. */
__attribute__((noinline)) static uint64_t fw_burn(unsigned units)
{
	uint64_t h = units;
	for (uint64_t i = 0; i < (uint64_t)units * FW_ITERS_PER_UNIT; i++)
		h = fw_mix(h + i);
	return h;
}

/* The calling thread's CPU time in seconds. */
static inline double fw_thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Appends "NAME SECONDS\n" to $CIPROF_TRUTH (if set) with one write(), so that lines of
 * concurrent test processes never interleave. */
static inline void fw_truth(const char *name, double seconds)
{
	const char *path = getenv("CIPROF_TRUTH");
	char line[512];
	int fd, len;

	if (!path || !*path)
		return;
	len = snprintf(line, sizeof(line), "%s %.6f\n", name, seconds);
	if (len <= 0 || (size_t)len >= sizeof(line))
		return;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)len) != len)
		perror("fw_truth: write");
	close(fd);
}

/* Runs units of work as test NAME and records its CPU time. Returns the work's result, so
 * the caller uses it (and the call to here is not a tail call). */
__attribute__((noinline)) static uint64_t fw_run_test(const char *name, unsigned units)
{
	double t0 = fw_thread_cpu();
	uint64_t h = fw_burn(units);
	fw_truth(name, fw_thread_cpu() - t0);
	return h;
}

#endif
