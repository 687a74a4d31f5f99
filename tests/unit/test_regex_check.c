/* Unit tests of common/regex_check: what regcomp would build is bounded before it runs. */
#include "common/regex_check.h"
#include "common/error.h"
#include "runner/attribution/attribute.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

static void accept(const char *pat)
{
	if (regex_check(pat) < 0)
		fail_msg("'%s' refused: %s", pat, cp_last_error());
	regex_t re;
	assert_int_equal(regex_compile(&re, pat, REG_NOSUB), 0);
	regfree(&re);
}

static void refuse(const char *pat, const char *want)
{
	assert_int_equal(regex_check(pat), -1);
	if (!strstr(cp_last_error(), want))
		fail_msg("'%s': error '%s' lacks '%s'", pat, cp_last_error(), want);
	regex_t re;
	assert_int_equal(regex_compile(&re, pat, 0), -1);
}

static void test_ordinary_patterns(void **state)
{
	(void)state;
	accept("^test_[a-z0-9_]+$");
	accept("^(TEST|test)_(.*)$");
	accept("TestBody");
	accept("^std::|^__gnu_cxx::");
	accept("[[:alpha:]]+[]x]*[^]]?");
	accept("^a{1,200}$");
	accept("(a+)(b+)(c+)(d+)(e+)(f+)(g+)(h+)");
	accept("a{,3}"); /* not a bound in ERE: ordinary characters */
	accept("((ab)+c)*x?");
	accept("^(a|b)+(c|d)*$");
	accept("");
}

static void test_explosive_patterns(void **state)
{
	(void)state;
	refuse("^t++++++++++++++++++++++art$", "too complex");
	refuse("^t++++++++++++++++++++++art$", "offset");
	refuse("((a{255}){255}){255}", "too complex");
	refuse("(((((((((((((((((a*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)", "too complex");
	refuse("a{1000000000}", "too complex");
	/* Few atoms, but glibc's closure computation is exponential in nested repetitions of
	 * what can match nothing (2.6 s and 14 s). */
	refuse("()++++++++++", "nested more than 3 deep");
	refuse("((((((((((()+)+)+)+)+)+)+)+)+)+)+", "nested more than 3 deep");
	refuse("a++++", "nested more than 3 deep");
	char *deep = malloc(200);
	memset(deep, '(', 100);
	memset(deep + 100, ')', 99);
	deep[199] = '\0';
	refuse(deep, "nested more than 64 deep");
	free(deep);
	char *longp = malloc(2000);
	memset(longp, 'a', 1999);
	longp[1999] = '\0';
	refuse(longp, "longer than 1024 bytes");
	free(longp);
}

static void test_invalid_patterns(void **state)
{
	(void)state;
	regex_t re;
	assert_int_equal(regex_compile(&re, "a(", 0), -1);
	assert_non_null(strstr(cp_last_error(), "'a(' is not a valid regular expression"));
	/* A trailing backslash or an unclosed bracket is measured without reading past the end. */
	assert_int_equal(regex_check("abc\\"), 0);
	assert_int_equal(regex_check("[abc"), 0);
	assert_int_equal(regex_check("[[:alpha:"), 0);
}

/* Stack rules from .ciprof.yml go through the same check. */
static void test_rules_checked(void **state)
{
	(void)state;
	struct attrib_rules rules = {0};
	assert_int_equal(
	        attrib_rules_add(&rules, "evil", NULL, "^t++++++++++++++++++++++art$", NULL), -1);
	assert_non_null(strstr(cp_last_error(), "rule 'evil': test:"));
	assert_non_null(strstr(cp_last_error(), "too complex"));
	attrib_rules_release(&rules);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_ordinary_patterns),
	        cmocka_unit_test(test_explosive_patterns),
	        cmocka_unit_test(test_invalid_patterns),
	        cmocka_unit_test(test_rules_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
