/* calc primes: a byte sieve of Eratosthenes, prime counting over cache-sized segments, and
 * trial division to cross-check them. */
#include "calc.h"

#include <stdlib.h>
#include <string.h>

uint8_t *calc_sieve(uint32_t limit)
{
	uint8_t *is = malloc((size_t)limit + 1);
	if (!is)
		return NULL;
	memset(is, 1, (size_t)limit + 1);
	is[0] = 0;
	if (limit >= 1)
		is[1] = 0;
	for (uint64_t p = 2; p * p <= limit; p++) {
		if (!is[p])
			continue;
		for (uint64_t m = p * p; m <= limit; m += p)
			is[m] = 0;
	}
	return is;
}

/* Segments of 32 KiB stay in the L1/L2 cache, so counting is bound by arithmetic, not by
 * memory bandwidth, and costs the same on a busy machine as on an idle one. */
#define SEGMENT (32 * 1024)

uint32_t calc_prime_count(uint32_t limit)
{
	if (limit < 2)
		return 0;
	uint32_t root = 1;
	while ((uint64_t)(root + 1) * (root + 1) <= limit)
		root++;
	uint8_t *small = calc_sieve(root);
	uint32_t *primes = malloc(((size_t)root + 1) * sizeof(*primes));
	uint8_t *seg = malloc(SEGMENT);
	if (!small || !primes || !seg)
		abort();
	size_t nprimes = 0;
	for (uint32_t i = 2; i <= root; i++)
		if (small[i])
			primes[nprimes++] = i;
	uint32_t count = 0;
	for (uint64_t lo = 0; lo <= limit; lo += SEGMENT) {
		size_t len = limit - lo + 1 < SEGMENT ? (size_t)(limit - lo + 1) : SEGMENT;
		calc_sieve_segment(seg, lo, len, primes, nprimes);
		for (size_t i = 0; i < len; i++)
			count += seg[i];
	}
	free(seg);
	free(primes);
	free(small);
	return count;
}

int calc_is_prime(uint64_t n)
{
	if (n < 2)
		return 0;
	if (n % 2 == 0)
		return n == 2;
	for (uint64_t d = 3; d * d <= n; d += 2)
		if (n % d == 0)
			return 0;
	return 1;
}
