/* A small workload for the ciprof ab tests: steady_part and slow_part spin for the numbers of
 * millions of iterations given as arguments, so a test can plant a slowdown in one of them. */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void steady_part(long n)
{
	unsigned long x = 1;
	for (long i = 0; i < n * 1000000L; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

__attribute__((noinline)) static void slow_part(long n)
{
	unsigned long x = 7;
	for (long i = 0; i < n * 1000000L; i++)
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	sink = x;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: work STEADY_MILLIONS SLOW_MILLIONS\n");
		return 2;
	}
	steady_part(atol(argv[1]));
	slow_part(atol(argv[2]));
	return 0;
}
