/* calc primes: a byte sieve of Eratosthenes and trial division to cross-check it. */
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

uint32_t calc_prime_count(uint32_t limit)
{
	uint8_t *is = calc_sieve(limit);
	if (!is)
		abort();
	uint32_t n = 0;
	for (uint64_t i = 0; i <= limit; i++)
		n += is[i];
	free(is);
	return n;
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
