/* report/blame's change point: a step is found where it is, with a small p-value; a series
 * without one is not given one; too short a series is not judged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "report/blame.h"

#include <math.h>

/* Deterministic noise in [-1, 1]. */
static double wobble(size_t i)
{
	return sin((double)i * 12.9898) * 0.5 + sin((double)i * 78.233) * 0.5;
}

static void test_step(void **state)
{
	(void)state;
	double x[30];
	for (size_t i = 0; i < 30; i++)
		x[i] = (i < 17 ? 1.0 : 1.2) * (1 + 0.02 * wobble(i));
	struct report_changepoint cp;
	report_changepoint(x, 30, &cp);
	assert_int_equal(cp.at, 17);
	assert_int_equal(cp.nbefore, 17);
	assert_int_equal(cp.nafter, 13);
	assert_true(cp.p <= 0.002);
	assert_true(fabs(cp.change - 0.2) < 0.03);
	/* a step down is found the same */
	for (size_t i = 0; i < 30; i++)
		x[i] = (i < 9 ? 2.0 : 1.5) * (1 + 0.02 * wobble(i + 100));
	report_changepoint(x, 30, &cp);
	assert_int_equal(cp.at, 9);
	assert_true(cp.change < -0.2);
	assert_true(cp.p <= 0.002);
}

static void test_no_step(void **state)
{
	(void)state;
	double x[30];
	for (size_t i = 0; i < 30; i++)
		x[i] = 1.0 + 0.05 * wobble(i);
	struct report_changepoint cp;
	report_changepoint(x, 30, &cp);
	print_message("no step: largest at %zu, %+.3f, p = %.3f\n", cp.at, cp.change, cp.p);
	assert_true(cp.p > 0.05);
	assert_true(fabs(cp.change) < 0.05);
	/* the same input, the same answer */
	struct report_changepoint again;
	report_changepoint(x, 30, &again);
	assert_true(again.p == cp.p && again.at == cp.at);
}

static void test_short(void **state)
{
	(void)state;
	double x[3] = {1, 2, 3};
	struct report_changepoint cp;
	report_changepoint(x, 3, &cp);
	assert_int_equal(cp.at, 0);
	assert_true(cp.p == 1);
	/* four values: each side has two */
	double y[4] = {1, 1.01, 2, 2.02};
	report_changepoint(y, 4, &cp);
	assert_int_equal(cp.at, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_step),
	        cmocka_unit_test(test_no_step),
	        cmocka_unit_test(test_short),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
