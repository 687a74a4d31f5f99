/* Prime sieve tests: known prime counts and a cross-check against trial division
 * (the costly-but-not-costliest test of the suite). */
#include "calc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

/* Repetitions of the largest count; tuned so this test costs ~0.6 s of CPU. */
#ifndef SIEVE_REPS
#define SIEVE_REPS 26
#endif

static void test_edges(void **state)
{
	uint8_t *s = calc_sieve(0);
	assert_non_null(s);
	assert_int_equal(s[0], 0);
	free(s);
	s = calc_sieve(2);
	assert_int_equal(s[0], 0);
	assert_int_equal(s[1], 0);
	assert_int_equal(s[2], 1);
	free(s);
	assert_int_equal(calc_prime_count(1), 0);
	assert_int_equal(calc_prime_count(2), 1);
	assert_int_equal(calc_prime_count(30), 10);
	assert_false(calc_is_prime(0));
	assert_false(calc_is_prime(1));
	assert_true(calc_is_prime(2));
	assert_false(calc_is_prime(4));
	assert_true(calc_is_prime(4294967291u));
	assert_false(calc_is_prime(4294967297u)); /* 641 * 6700417 */
}

static void test_known_counts(void **state)
{
	/* pi(10^k), k = 1..7 */
	static const uint32_t pi[] = {4, 25, 168, 1229, 9592, 78498, 664579};
	uint32_t limit = 10;
	for (size_t k = 0; k < sizeof(pi) / sizeof(pi[0]); k++, limit *= 10)
		assert_int_equal(calc_prime_count(limit), pi[k]);
}

static void test_against_trial_division(void **state)
{
	const uint32_t lo = 9990000, hi = 10000000;
	uint8_t *s = calc_sieve(hi);
	assert_non_null(s);
	for (uint32_t n = 0; n < 20000; n++)
		assert_int_equal(s[n], calc_is_prime(n));
	for (uint32_t n = lo; n <= hi; n++)
		assert_int_equal(s[n], calc_is_prime(n));
	free(s);
}

static void test_segments(void **state)
{
	/* Segments agree with trial division, wherever they start. */
	uint32_t primes[1000];
	size_t n = 0;
	for (uint32_t p = 2; p < 4000; p++)
		if (calc_is_prime(p))
			primes[n++] = p;
	static const uint64_t starts[] = {0, 1, 2, 97, 32768, 1000003, 9999000};
	uint8_t seg[1500];
	for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
		calc_sieve_segment(seg, starts[s], sizeof(seg), primes, n);
		for (size_t i = 0; i < sizeof(seg); i++)
			assert_int_equal(seg[i], calc_is_prime(starts[s] + i));
	}
	/* The segmented count agrees with the plain sieve around segment boundaries. */
	static const uint32_t limits[] = {32767, 32768, 32769, 65535, 65536, 1000003};
	for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
		uint8_t *is = calc_sieve(limits[l]);
		uint32_t count = 0;
		for (uint32_t i = 0; i <= limits[l]; i++)
			count += is[i];
		free(is);
		assert_int_equal(calc_prime_count(limits[l]), count);
	}
}

static void test_large_counts(void **state)
{
	/* pi(2*10^7) = 1270607 */
	for (int rep = 0; rep < SIEVE_REPS; rep++)
		assert_int_equal(calc_prime_count(20000000), 1270607);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_edges),
	        cmocka_unit_test(test_known_counts),
	        cmocka_unit_test(test_against_trial_division),
	        cmocka_unit_test(test_segments),
	        cmocka_unit_test(test_large_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
