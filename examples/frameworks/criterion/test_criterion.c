/* A Criterion suite of four tests with known, clearly different costs (1:2:3:4, about 1.5 s
 * of CPU in all), in two suites. Criterion names a test "suite::name" and runs each in a
 * worker process of its own, several at once unless --jobs 1: ciprof should report
 * "light::tiny", "light::large", "heavy::small" and "heavy::medium_mix". The test function
 * of the last is heavy_medium_mix_impl: ciprof splits it at the first "_", so suite names
 * must not contain one. */
#include "fw_work.h"

#include <criterion/criterion.h>
#include <stdio.h>

/* Runs the work as the current test, named as Criterion names it. */
static uint64_t run_current(unsigned units)
{
	char name[256];

	snprintf(name, sizeof(name), "%s::%s", criterion_current_test->category,
	         criterion_current_test->name);
	return fw_run_test(name, units);
}

Test(light, tiny)
{
	cr_assert_neq(run_current(15), 0);
}

Test(light, large)
{
	cr_assert_neq(run_current(60), 0);
}

Test(heavy, small)
{
	cr_assert_neq(run_current(30), 0);
}

Test(heavy, medium_mix)
{
	cr_assert_neq(run_current(45), 0);
}
