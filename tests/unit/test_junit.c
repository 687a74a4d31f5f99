/* JUnit XML: outcomes and durations of GoogleTest, pytest and ctest reports, matched to the
 * names ciprof gives tests; malformed reports give file:line:column errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "model/profile.h"
#include "common/xalloc.h"
#include "runner/attribution/junit.h"

static const char gtest_xml[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<testsuites tests=\"3\" name=\"AllTests\">\n"
        "  <testsuite name=\"Parser\" tests=\"3\">\n"
        "    <testcase name=\"Small\" status=\"run\" result=\"completed\" time=\"0.01\""
        " classname=\"Parser\" />\n"
        "    <testcase name=\"Large\" status=\"run\" result=\"completed\" time=\"1.5\""
        " classname=\"Parser\">\n"
        "      <failure message=\"boom\" type=\"\"><![CDATA[x < y]]></failure>\n"
        "    </testcase>\n"
        "    <testcase name=\"Off\" status=\"notrun\" result=\"suppressed\" time=\"0\""
        " classname=\"Parser\" />\n"
        "  </testsuite>\n"
        "</testsuites>\n";

static const char pytest_xml[] =
        "<testsuites><testsuite name=\"pytest\">"
        "<testcase classname=\"tests.test_math\" name=\"test_add\" time=\"0.2\"/>"
        "<testcase classname=\"tests.test_math.TestBig\" name=\"test_mul\" time=\"0.3\">"
        "<skipped message=\"slow\"/></testcase>"
        "<testcase classname=\"tests.test_io\" name=\"test_read\" time=\"0.1\">"
        "<error message=\"x\"/></testcase>"
        "</testsuite></testsuites>";

static void test_parse(void **state)
{
	(void)state;
	struct junit j;
	junit_init(&j);
	assert_int_equal(junit_parse(&j, gtest_xml, strlen(gtest_xml), "g.xml"), 0);
	assert_int_equal(j.n, 3);
	assert_string_equal(j.cases[1].name, "Large");
	assert_int_equal(j.cases[1].status, JUNIT_FAILED);
	assert_true(j.cases[1].seconds > 1.49 && j.cases[1].seconds < 1.51);
	assert_int_equal(j.cases[0].status, JUNIT_PASSED);
	assert_int_equal(j.cases[2].status, JUNIT_SKIPPED);
	assert_int_equal(junit_parse(&j, pytest_xml, strlen(pytest_xml), "p.xml"), 0);
	assert_int_equal(j.n, 6);
	assert_int_equal(j.cases[4].status, JUNIT_SKIPPED);
	assert_int_equal(j.cases[5].status, JUNIT_ERROR);
	junit_release(&j);
}

static void expect_error(const char *xml, const char *want)
{
	struct junit j;
	junit_init(&j);
	assert_int_equal(junit_parse(&j, xml, strlen(xml), "r.xml"), -1);
	if (!strstr(cp_last_error(), want))
		fail_msg("'%s' lacks '%s'", cp_last_error(), want);
	junit_release(&j);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("<testsuite><testcase name=\"a\"></testsuite>", "r.xml:1:");
	expect_error("<testsuite>\n<testcase/></testsuite>", "r.xml:2:");
	expect_error("<testsuite>\n<testcase/></testsuite>", "<testcase> without a name");
	expect_error("<a><testcase name=\"x\"><testcase name=\"y\"/></testcase></a>",
	             "inside <testcase>");
	expect_error("", "r.xml:1:");
}

static uint32_t add_test(struct profile *p, const char *name, uint64_t n)
{
	struct profile_frame f = {.function = profile_intern(p, "f")};
	uint32_t node = profile_node(p, 0, profile_frame(p, &f));
	uint32_t id = profile_intern(p, name);
	profile_add(p, id, node, n);
	return id;
}

static void test_attach(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	uint32_t large = add_test(p, "Parser.Large", 10);
	uint32_t add = add_test(p, "tests/test_math.py::test_add", 5);
	uint32_t mul = add_test(p, "tests/test_math.py::TestBig::test_mul", 5);
	struct junit j;
	junit_init(&j);
	junit_parse(&j, gtest_xml, strlen(gtest_xml), "g.xml");
	junit_parse(&j, pytest_xml, strlen(pytest_xml), "p.xml");
	assert_int_equal(junit_attach(&j, p), 3);
	assert_int_equal(profile_result(p, large)->status, JUNIT_FAILED);
	assert_int_equal(profile_result(p, add)->status, JUNIT_PASSED);
	assert_int_equal(profile_result(p, mul)->status, JUNIT_SKIPPED);
	/* cases with no samples are kept under their plain names */
	int64_t small = profile_find_str(p, "Small");
	assert_true(small > 0);
	assert_non_null(profile_result(p, (uint32_t)small));
	junit_release(&j);
	profile_free(p);
}

/* A suite of 300,000 cases (half of them profiled): every outcome lands on its test, each
 * looked up through the profile's result index, not a scan of all results per case (which
 * took 36 s; bench/scale measures the growth). */
static void test_many_cases(void **state)
{
	(void)state;
	enum { N = 300000 };
	struct profile *p = profile_new();
	struct profile_frame f = {.function = profile_intern(p, "f")};
	uint32_t node = profile_node(p, 0, profile_frame(p, &f));
	char name[64];
	for (int i = 0; i < N; i += 2) {
		snprintf(name, sizeof(name), "Suite.t%d", i);
		profile_add(p, profile_intern(p, name), node, 1);
	}
	struct junit j;
	junit_init(&j);
	for (int i = 0; i < N; i++) {
		ALLOC_GROW(j.cases, j.n + 1, j.alloc);
		snprintf(name, sizeof(name), "t%d", i);
		j.cases[j.n++] = (struct junit_case){xstrdup("Suite"), xstrdup(name), i * 1e-3,
		                                     i % 3 ? JUNIT_PASSED : JUNIT_FAILED};
	}
	assert_int_equal(junit_attach(&j, p), N / 2);
	assert_int_equal(p->nresults, N);
	assert_int_equal(p->result_idx.count, N);
	for (int i = 0; i < N; i += 7) {
		snprintf(name, sizeof(name), i % 2 ? "t%d" : "Suite.t%d", i);
		int64_t id = profile_find_str(p, name);
		assert_true(id > 0);
		const struct profile_result *r = profile_result(p, (uint32_t)id);
		assert_non_null(r);
		assert_int_equal(r->status, i % 3 ? JUNIT_PASSED : JUNIT_FAILED);
	}
	/* A second report of the same case replaces its outcome. */
	profile_set_result(p, (uint32_t)profile_find_str(p, "Suite.t0"), JUNIT_SKIPPED, 0);
	assert_int_equal(p->nresults, N);
	assert_int_equal(profile_result(p, (uint32_t)profile_find_str(p, "Suite.t0"))->status,
	                 JUNIT_SKIPPED);
	junit_release(&j);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parse),
	        cmocka_unit_test(test_errors),
	        cmocka_unit_test(test_attach),
	        cmocka_unit_test(test_many_cases),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
