/* The demo's "library": six small, CPU-bound functions of similar cost, each in its own file so
 * each is its own symbol. Their working sets fit in L1, so their cost is stable under load. */
#ifndef DEMO_WORK_H
#define DEMO_WORK_H

#include <stdint.h>

/* How many times each test calls its function; sets the suite's length (~0.2 s each). */
#define DEMO_REPEAT 1

uint32_t checksum_block(const uint8_t *data, int len, int rounds);
uint64_t hash_keys(uint64_t seed, int n);
int sort_records(int *v, int n, int rounds);
long parse_numbers(const char *text, int rounds);
uint32_t matrix_product(int n, int rounds);
int count_primes(int limit);

#endif
