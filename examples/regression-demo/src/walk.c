#include "work.h"

/* A xorshift random walk: n dependent steps, counting how often it turns left. */
uint64_t random_walk(uint64_t seed, int n)
{
	uint64_t x = seed | 1, left = 0;
	for (int i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		left += x >> 63;
	}
	return left;
}
