#include "work.h"

/* Sums the decimal numbers in text, many times. */
long parse_numbers(const char *text, int rounds)
{
	long total = 0;
	for (int r = 0; r < rounds; r++) {
		long cur = 0;
		int in = 0;
		for (const char *p = text; *p; p++) {
			if (*p >= '0' && *p <= '9') {
				cur = cur * 10 + (*p - '0');
				in = 1;
			} else if (in) {
				total += cur + r;
				cur = 0;
				in = 0;
			}
		}
		total += cur;
	}
	return total;
}
