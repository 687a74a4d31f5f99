#include "work.h"

/* Adler-32 style sums over a small buffer, many times. */
uint32_t checksum_block(const uint8_t *data, int len, int rounds)
{
	uint32_t a = 1, b = 0;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < len; i++) {
			a = (a + data[i] + (uint32_t)r) % 65521;
			b = (b + a) % 65521;
		}
	}
	return (b << 16) | a;
}
