#include "work.h"

/* Primes below limit by trial division. */
int count_primes(int limit)
{
	int count = 0;
	for (int n = 2; n < limit; n++) {
		int prime = 1;
		for (int d = 2; d * d <= n; d++)
			if (n % d == 0) {
				prime = 0;
				break;
			}
		count += prime;
	}
	return count;
}
