/* The demo's test suite: one test per function, each marked with ciprof.h so that ciprof
 * attributes its samples to the test (a no-op when not run under ciprof). */
#include "ciprof.h"
#include "work.h"

#include <stdio.h>

static volatile uint64_t sink;

static void test_checksum(void)
{
	static uint8_t buf[4096];
	for (int i = 0; i < (int)sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7);
	sink += checksum_block(buf, (int)sizeof(buf), 18000);
}

static void test_hash(void)
{
	sink += hash_keys(42, 5000000);
}

static void test_sort(void)
{
	static int v[200];
	sink += (uint64_t)sort_records(v, 200, 490000);
}

static void test_crc(void)
{
	sink += crc32_bits(7, 21000000);
}

static void test_walk(void)
{
	sink += random_walk(99, 102000000);
}

static void test_primes(void)
{
	sink += (uint64_t)count_primes(1450000);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
        {"test_checksum", test_checksum}, {"test_hash", test_hash}, {"test_sort", test_sort},
        {"test_crc", test_crc},           {"test_walk", test_walk}, {"test_primes", test_primes},
};

int main(void)
{
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		ciprof_test_begin(tests[i].name);
		for (int r = 0; r < DEMO_REPEAT; r++)
			tests[i].fn();
		ciprof_test_end(tests[i].name);
		printf("ok %zu %s\n", i + 1, tests[i].name);
	}
	return 0;
}
