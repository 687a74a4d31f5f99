/* calc segmented sieve kernel: crosses out the multiples of the base primes in one window. */
#include "calc.h"

#include <string.h>

void calc_sieve_segment(uint8_t *out, uint64_t lo, size_t len, const uint32_t *primes,
                        size_t nprimes)
{
	uint64_t hi = lo + len; /* exclusive */
	memset(out, 1, len);
	for (uint64_t n = lo; n < 2 && n < hi; n++)
		out[n - lo] = 0;
	for (size_t k = 0; k < nprimes; k++) {
		uint64_t p = primes[k];
		if (p * p >= hi)
			break;
		uint64_t m = (lo + p - 1) / p * p;
		if (m < p * p)
			m = p * p;
		for (; m < hi; m += p)
			out[m - lo] = 0;
	}
}
