#include "work.h"

/* Mixing rounds per key. The pull request of the demo raises this number: the function gets
 * slower by the same factor, nothing else changes. */
#define HASH_ROUNDS 20

/* A strong 64-bit mix of n keys. */
uint64_t hash_keys(uint64_t seed, int n)
{
	uint64_t acc = seed;
	for (int k = 0; k < n; k++) {
		uint64_t x = acc ^ (uint64_t)k;
		for (int r = 0; r < HASH_ROUNDS; r++) {
			x ^= x >> 33;
			x *= 0xff51afd7ed558ccdULL;
			x ^= x >> 29;
		}
		acc += x;
	}
	return acc;
}
