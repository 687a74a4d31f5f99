/* A Check suite of four tests with known, clearly different costs (1:2:3:4, about 1.5 s of
 * CPU in all), in two test cases. Check names a test after its START_TEST name: ciprof should
 * report "test_tiny", "test_small", "test_medium" and "test_large". By default Check forks a
 * process per test; CK_FORK=no runs them in this process; CK_RUN_CASE=light|heavy runs one
 * test case, so two processes can share the suite. */
#include "fw_work.h"

#include <check.h>
#include <stdlib.h>

START_TEST(test_tiny)
{
	ck_assert_uint_ne(fw_run_test(tcase_name(), 15), 0);
}
END_TEST

START_TEST(test_small)
{
	ck_assert_uint_ne(fw_run_test(tcase_name(), 30), 0);
}
END_TEST

START_TEST(test_medium)
{
	ck_assert_uint_ne(fw_run_test(tcase_name(), 45), 0);
}
END_TEST

START_TEST(test_large)
{
	ck_assert_uint_ne(fw_run_test(tcase_name(), 60), 0);
}
END_TEST

static Suite *mix_suite(void)
{
	Suite *s = suite_create("mix");
	TCase *light = tcase_create("light");
	TCase *heavy = tcase_create("heavy");

	tcase_add_test(light, test_tiny);
	tcase_add_test(light, test_large);
	tcase_add_test(heavy, test_small);
	tcase_add_test(heavy, test_medium);
	tcase_set_timeout(light, 60);
	tcase_set_timeout(heavy, 60);
	suite_add_tcase(s, light);
	suite_add_tcase(s, heavy);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mix_suite());
	int failed;

	srunner_run_all(sr, CK_VERBOSE);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
