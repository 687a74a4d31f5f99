/* A sorted array's binary search, written once: the address maps of a process, perf maps,
 * the symbolizer's symbol bounds and the symbol cache's ranges all ask "the first element
 * whose uint64_t key is above this address". */
#ifndef CP_COMMON_SEARCH_H
#define CP_COMMON_SEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The index of the first of n elements of `size` bytes at base (sorted by the uint64_t at
 * key_offset in each) whose key is above key; n when none is. */
static inline size_t cp_first_above(const void *base, size_t n, size_t size, size_t key_offset,
                                    uint64_t key)
{
	size_t a = 0, z = n;
	while (a < z) {
		size_t m = a + (z - a) / 2;
		uint64_t v;
		memcpy(&v, (const char *)base + m * size + key_offset, sizeof(v));
		if (v <= key)
			a = m + 1;
		else
			z = m;
	}
	return a;
}

#endif
