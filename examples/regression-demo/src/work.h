/* The demo's "library": six small, CPU-bound functions of similar cost, each in its own file so
 * each is its own symbol. Each is a chain of dependent operations on a few registers (latency-
 * bound), so its cost stays stable when the machine is busy: on a shared VM, loops that lean on
 * memory loads, branch prediction or the 64-bit divider were seen to slow down by 10-40 % in
 * some runs (a neighbour on the same core), which an A/A comparison would rightly flag. */
#ifndef DEMO_WORK_H
#define DEMO_WORK_H

#include <stdint.h>

/* How many times each test calls its function; sets the suite's length (~0.2 s each). */
#define DEMO_REPEAT 1

uint32_t checksum_block(const uint8_t *data, int len, int rounds);
uint64_t hash_keys(uint64_t seed, int n);
int sort_records(int *v, int n, int rounds);
uint32_t crc32_bits(uint32_t seed, int n);
uint64_t random_walk(uint64_t seed, int n);
int count_primes(int limit);

#endif
