/* bench/ab's workload: a test suite's CPU profile in one process. Four steady compute loops and
 * one memory-bound pointer chase (which swings with the machine's caches and neighbours);
 * target() holds about 5 % of the CPU (measured: docs/benchmarks.md) and runs SCALE/1000 times its
 * base work, so that `suite 1100` is the base with a +10 % slowdown of one steady function. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static volatile uint64_t sink;

#define LOOP(name, body)                                                                           \
	__attribute__((noinline)) static void name(long n)                                         \
	{                                                                                          \
		uint64_t x = 0x9e3779b97f4a7c15ULL;                                                \
		for (long i = 0; i < n; i++)                                                       \
			body;                                                                      \
		sink = x;                                                                          \
	}

LOOP(target, x = x * 6364136223846793005ULL + 1442695040888963407ULL)
LOOP(mix_a, (x ^= x << 13, x ^= x >> 7, x ^= x << 17))
LOOP(mix_b, x = (x >> 3) * 0x100000001b3ULL + (uint64_t)i)
LOOP(mix_c, x = x * x + 0x632be59bd9b4e019ULL)

/* Pointer chasing over a 16 MiB random cycle: bound by memory latency. */
__attribute__((noinline)) static void chase(uint32_t *next, long n)
{
	uint32_t p = 0;
	for (long i = 0; i < n; i++)
		p = next[p];
	sink = p;
}

int main(int argc, char **argv)
{
	long scale = argc > 1 ? atol(argv[1]) : 1000;
	if (scale <= 0) {
		fprintf(stderr, "usage: suite [SCALE_PERMILLE]\n");
		return 2;
	}
	const uint32_t n = 4u << 20; /* 16 MiB of uint32_t */
	uint32_t *next = malloc((size_t)n * sizeof(*next));
	if (!next)
		return 1;
	/* Sattolo's shuffle: one cycle through every slot. */
	for (uint32_t i = 0; i < n; i++)
		next[i] = i;
	uint64_t r = 88172645463325252ULL;
	for (uint32_t i = n - 1; i > 0; i--) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		uint32_t j = (uint32_t)(r % i);
		uint32_t t = next[i];
		next[i] = next[j];
		next[j] = t;
	}
	const long unit = 1000000;
	target(20 * unit * scale / 1000);
	mix_a(70 * unit);
	mix_b(70 * unit);
	mix_c(70 * unit);
	chase(next, unit / 2);
	free(next);
	return 0;
}
