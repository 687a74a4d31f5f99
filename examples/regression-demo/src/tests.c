/* The demo's test suite: one test per function, each marked with ciprof.h so that ciprof
 * attributes its samples to the test (a no-op when not run under ciprof). */
#include "ciprof.h"
#include "work.h"

#include <stdio.h>
#include <string.h>

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

static void test_parse(void)
{
	static char text[4096];
	for (int i = 0; i + 8 < (int)sizeof(text); i += 8)
		memcpy(text + i, "1234 56,", 8);
	sink += (uint64_t)parse_numbers(text, 83000);
}

static void test_matrix(void)
{
	sink += (uint64_t)matrix_product(24, 32000);
}

static void test_primes(void)
{
	sink += (uint64_t)count_primes(1450000);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
        {"test_checksum", test_checksum}, {"test_hash", test_hash},
        {"test_sort", test_sort},         {"test_parse", test_parse},
        {"test_matrix", test_matrix},     {"test_primes", test_primes},
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
