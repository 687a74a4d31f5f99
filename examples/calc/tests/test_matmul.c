/* Matrix multiply tests: identities, known products and large products checked entry by
 * entry against independent dot products (the most costly test of the suite). */
#include "calc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* Size and repetitions of the large product; tuned so this test costs ~1 s of CPU. */
#ifndef MATMUL_N
#define MATMUL_N 500
#endif
#ifndef MATMUL_REPS
#define MATMUL_REPS 24
#endif

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 16;
}

/* Small integer entries keep every sum exact in a double, so equality is exact. */
static void fill(struct calc_matrix *m, uint32_t seed)
{
	for (size_t i = 0; i < m->rows * m->cols; i++)
		m->v[i] = (double)(lcg(&seed) % 19) - 9.0;
}

static void test_small_product(void **state)
{
	struct calc_matrix a, b, c;
	calc_matrix_init(&a, 2, 3);
	calc_matrix_init(&b, 3, 2);
	calc_matrix_init(&c, 2, 2);
	const double av[] = {1, 2, 3, 4, 5, 6}, bv[] = {7, 8, 9, 10, 11, 12};
	for (int i = 0; i < 6; i++) {
		a.v[i] = av[i];
		b.v[i] = bv[i];
	}
	assert_int_equal(calc_matmul(&c, &a, &b), 0);
	assert_true(CALC_AT(&c, 0, 0) == 58 && CALC_AT(&c, 0, 1) == 64);
	assert_true(CALC_AT(&c, 1, 0) == 139 && CALC_AT(&c, 1, 1) == 154);
	/* a * a does not fit */
	assert_int_equal(calc_matmul(&c, &a, &a), -1);
	calc_matrix_release(&a);
	calc_matrix_release(&b);
	calc_matrix_release(&c);
}

static void test_identity_and_transpose(void **state)
{
	const size_t n = 37;
	struct calc_matrix a, b, id, ab, t1, t2, at, bt;
	calc_matrix_init(&a, n, n);
	calc_matrix_init(&b, n, n);
	calc_matrix_init(&id, n, n);
	calc_matrix_init(&ab, n, n);
	calc_matrix_init(&t1, n, n);
	calc_matrix_init(&t2, n, n);
	calc_matrix_init(&at, n, n);
	calc_matrix_init(&bt, n, n);
	fill(&a, 1);
	fill(&b, 2);
	for (size_t i = 0; i < n; i++)
		CALC_AT(&id, i, i) = 1;
	calc_matmul(&ab, &a, &id);
	for (size_t i = 0; i < n * n; i++)
		assert_true(ab.v[i] == a.v[i]);
	/* (ab)^T = b^T a^T */
	calc_matmul(&ab, &a, &b);
	calc_matrix_transpose(&t1, &ab);
	calc_matrix_transpose(&at, &a);
	calc_matrix_transpose(&bt, &b);
	calc_matmul(&t2, &bt, &at);
	for (size_t i = 0; i < n * n; i++)
		assert_true(t1.v[i] == t2.v[i]);
	calc_matrix_release(&a);
	calc_matrix_release(&b);
	calc_matrix_release(&id);
	calc_matrix_release(&ab);
	calc_matrix_release(&t1);
	calc_matrix_release(&t2);
	calc_matrix_release(&at);
	calc_matrix_release(&bt);
}

static void test_large_product(void **state)
{
	const size_t n = MATMUL_N;
	struct calc_matrix a, b, c;
	assert_int_equal(calc_matrix_init(&a, n, n), 0);
	assert_int_equal(calc_matrix_init(&b, n, n), 0);
	assert_int_equal(calc_matrix_init(&c, n, n), 0);
	for (int rep = 0; rep < MATMUL_REPS; rep++) {
		fill(&a, 100u + (uint32_t)rep);
		fill(&b, 200u + (uint32_t)rep);
		assert_int_equal(calc_matmul(&c, &a, &b), 0);
		/* Check a diagonal and a pseudo-random sample of entries by direct dot product. */
		uint32_t s = (uint32_t)rep;
		for (size_t t = 0; t < 2 * n; t++) {
			size_t i = t < n ? t : lcg(&s) % n, j = t < n ? t : lcg(&s) % n;
			double dot = 0;
			for (size_t k = 0; k < n; k++)
				dot += CALC_AT(&a, i, k) * CALC_AT(&b, k, j);
			assert_true(CALC_AT(&c, i, j) == dot);
		}
	}
	calc_matrix_release(&a);
	calc_matrix_release(&b);
	calc_matrix_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_small_product),
	        cmocka_unit_test(test_identity_and_transpose),
	        cmocka_unit_test(test_large_product),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
