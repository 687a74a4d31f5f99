/* A cmocka suite of four tests with known, clearly different costs (1:2:3:4, about 1.5 s of
 * CPU in all). cmocka names a test after its function: ciprof should report "test_tiny",
 * "test_small", "test_medium" and "test_large". */
#include "fw_work.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* A cheap per-test fixture, as real suites have: its samples are negligible. */
static int setup_seed(void **state)
{
	uint64_t *seed = malloc(sizeof(*seed));
	if (!seed)
		return -1;
	*seed = 42;
	*state = seed;
	return 0;
}

static int teardown_seed(void **state)
{
	free(*state);
	return 0;
}

static void test_tiny(void **state)
{
	(void)state;
	assert_int_not_equal(fw_run_test("test_tiny", 15), 0);
}

static void test_small(void **state)
{
	(void)state;
	assert_int_not_equal(fw_run_test("test_small", 30), 0);
}

static void test_medium(void **state)
{
	assert_int_not_equal(fw_run_test("test_medium", 45), *(uint64_t *)*state);
}

static void test_large(void **state)
{
	assert_int_not_equal(fw_run_test("test_large", 60), *(uint64_t *)*state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_tiny),
	        cmocka_unit_test(test_small),
	        cmocka_unit_test_setup_teardown(test_medium, setup_seed, teardown_seed),
	        cmocka_unit_test_setup_teardown(test_large, setup_seed, teardown_seed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
