/* .ciprof.yml: accepted shapes, and errors that name file, line and column. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "common/config.h"
#include "common/error.h"

static void test_rules(void **state)
{
	(void)state;
	struct config c;
	config_init(&c);
	const char *y = "# project settings\n"
			"attribution:\n"
			"  builtin-rules: false\n"
			"  rules:\n"
			"    - name: mine\n"
			"      caller: '^my_runner$'\n"
			"      test: '^case_(.*)$'\n"
			"      as: 'mine/\\1'\n"
			"    - test: 'TestBody'\n";
	assert_int_equal(config_parse(&c, y, strlen(y), ".ciprof.yml"), 0);
	assert_int_equal(c.builtin_rules, 0);
	assert_int_equal(c.nrules, 2);
	assert_string_equal(c.rules[0].name, "mine");
	assert_string_equal(c.rules[0].caller, "^my_runner$");
	assert_string_equal(c.rules[0].as, "mine/\\1");
	assert_int_equal(c.rules[0].line, 5);
	assert_null(c.rules[1].caller);
	assert_string_equal(c.rules[1].name, ".ciprof.yml:9"); /* unnamed: where it is */
	config_release(&c);

	/* empty files are fine */
	config_init(&c);
	assert_int_equal(config_parse(&c, "", 0, "e"), 0);
	assert_int_equal(config_parse(&c, "---\n", 4, "e"), 0);
	assert_int_equal(c.builtin_rules, 1);
	config_release(&c);
}

static void expect_error(const char *yaml, const char *want)
{
	struct config c;
	config_init(&c);
	assert_int_equal(config_parse(&c, yaml, strlen(yaml), "cfg.yml"), -1);
	if (!strstr(cp_last_error(), want))
		fail_msg("error '%s' lacks '%s'", cp_last_error(), want);
	config_release(&c);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("atribution: {}\n", "cfg.yml:1:1: unknown key 'atribution' in the file");
	expect_error("attribution:\n  rulez: []\n", "cfg.yml:2:3: unknown key 'rulez'");
	expect_error("attribution:\n  rules:\n    - caller: x\n", "cfg.yml:3:7: a rule needs 'test'");
	expect_error("attribution:\n  rules: x\n", "cfg.yml:2:10: 'rules' must be a list");
	expect_error("attribution:\n  builtin-rules: maybe\n", "must be true or false");
	expect_error("attribution:\n  rules:\n    - test: [a]\n", "cfg.yml:3:13: 'test' must be a string");
	expect_error("attribution:\n  rules: [\n", "cfg.yml:3:1:");
	expect_error("- 1\n- 2\n", "the file must be a mapping");
	expect_error("attribution:\n  rules: *a\n", "aliases");
	expect_error("attribution: {}\n---\nattribution: {}\n", "only one YAML document");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
