/* Big-number factorial tests: exact small values, digit counts, trailing zeros and residues
 * checked against independent formulas (the medium-cost test of the suite). */
#include "calc.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* Size of the large factorial; tuned so this test costs ~0.3 s of CPU. */
#ifndef FACTORIAL_N
#define FACTORIAL_N 23000
#endif

static void test_small_values(void **state)
{
	static const char *const expect[] = {
	        "1", "1", "2", "6", "24", "120", "720", "5040", "40320", "362880", "3628800",
	};
	struct calc_big b;
	calc_big_init(&b, 0);
	for (uint32_t n = 0; n < sizeof(expect) / sizeof(expect[0]); n++) {
		calc_factorial(&b, n);
		char *s = calc_big_to_string(&b);
		assert_string_equal(s, expect[n]);
		free(s);
	}
	calc_factorial(&b, 20);
	char *s = calc_big_to_string(&b);
	assert_string_equal(s, "2432902008176640000");
	free(s);
	calc_factorial(&b, 25);
	s = calc_big_to_string(&b);
	assert_string_equal(s, "15511210043330985984000000");
	free(s);
	calc_big_release(&b);
}

static void test_limb_boundaries(void **state)
{
	struct calc_big b;
	calc_big_init(&b, 999999999);
	calc_big_mul_small(&b, 1000000000u - 1);
	char *s = calc_big_to_string(&b);
	assert_string_equal(s, "999999998000000001");
	free(s);
	calc_big_mul_small(&b, 0);
	assert_int_equal(b.n, 1);
	assert_int_equal(calc_big_digits(&b), 1);
	calc_big_release(&b);
	calc_big_init(&b, 4000000000u);
	s = calc_big_to_string(&b);
	assert_string_equal(s, "4000000000");
	free(s);
	assert_int_equal(calc_big_mod_small(&b, 7), 4000000000u % 7);
	calc_big_release(&b);
}

static size_t trailing_zeros(const char *s)
{
	size_t n = strlen(s), z = 0;
	while (z < n && s[n - 1 - z] == '0')
		z++;
	return z;
}

/* Legendre: the exponent of 5 in n!, which is the number of trailing zeros. */
static size_t legendre5(uint32_t n)
{
	size_t z = 0;
	for (uint64_t p = 5; p <= n; p *= 5)
		z += n / p;
	return z;
}

static uint32_t fact_mod(uint32_t n, uint32_t m)
{
	uint64_t r = 1 % m;
	for (uint32_t k = 2; k <= n; k++)
		r = r * k % m;
	return (uint32_t)r;
}

static void check_factorial(uint32_t n)
{
	struct calc_big b;
	calc_big_init(&b, 0);
	calc_factorial(&b, n);
	/* Digits: floor(log10 n!) + 1, with log10 n! from lgamma. */
	double lg = lgamma((double)n + 1) / log(10.0);
	assert_int_equal(calc_big_digits(&b), (size_t)floor(lg) + 1);
	char *s = calc_big_to_string(&b);
	assert_int_equal(strlen(s), calc_big_digits(&b));
	assert_int_equal(trailing_zeros(s), legendre5(n));
	free(s);
	/* Residues modulo primes larger than n, against a direct modular product. */
	static const uint32_t primes[] = {1000003, 998244353, 4294967291u};
	for (size_t i = 0; i < sizeof(primes) / sizeof(primes[0]); i++)
		assert_int_equal(calc_big_mod_small(&b, primes[i]), fact_mod(n, primes[i]));
	calc_big_release(&b);
}

static void test_wilson(void **state)
{
	/* Wilson's theorem: (p-1)! = -1 (mod p) exactly when p is prime. */
	static const uint32_t p[] = {2003, 7919, 10007};
	struct calc_big b;
	calc_big_init(&b, 0);
	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
		calc_factorial(&b, p[i] - 1);
		assert_int_equal(calc_big_mod_small(&b, p[i]), p[i] - 1);
	}
	calc_factorial(&b, 10008); /* 10009 is prime, 10008 = 2^3 * 3^2 * 139 is not */
	assert_int_equal(calc_big_mod_small(&b, 10009), 10008);
	calc_factorial(&b, 9999 - 1); /* 9999 = 3^2 * 11 * 101: (n-1)! = 0 mod n */
	assert_int_equal(calc_big_mod_small(&b, 9999), 0);
	calc_big_release(&b);
}

static void test_large(void **state)
{
	check_factorial(1000);
	check_factorial(FACTORIAL_N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_small_values),
	        cmocka_unit_test(test_limb_boundaries),
	        cmocka_unit_test(test_wilson),
	        cmocka_unit_test(test_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
