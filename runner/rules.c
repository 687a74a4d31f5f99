/* The built-in stack rules: how each in-process test framework shows its test on the stack.
 * Each is checked by an integration test profiling a real suite of that framework
 * (examples/frameworks/). POSIX extended regexes; "as" uses \1..\9 back-references. */
#include "runner/attribute.h"

#include <stddef.h>

static const struct {
	const char *name, *caller, *test, *as;
} builtin[] = {
	/* cmocka: cmocka_run_one_test_or_fixture calls each test (and each setup/teardown).
	 * Debian's libcmocka is stripped of that static function's name, so a frame inside
	 * libcmocka that calls user code is recognised by its module. */
	{ "cmocka",
	  "^(cmocka_run_one_test_or_fixture|_cmocka_run_test|_run_test|libcmocka\\.so[.0-9]*\\+0x[0-9a-f]+)$",
	  "^(.+)$", "\\1" },
	/* GoogleTest: TEST(Suite, Name) becomes Suite_Name_Test::TestBody(). */
	{ "googletest", NULL, "^([A-Za-z0-9]+)_([A-Za-z0-9_]+)_Test(<.*>)?::TestBody\\(\\)$",
	  "\\1.\\2" },
	/* Check: START_TEST(name) defines name_fn, run by tcase_run_tfun_(no)fork. */
	{ "check", "^(tcase_run_tfun_fork|tcase_run_tfun_nofork|srunner_run_tcase)$", "^(.+)_fn$",
	  "\\1" },
	/* Criterion: Test(suite, name) defines suite_name_impl. */
	{ "criterion", NULL, "^(.+)_impl$", "\\1" },
	/* Go: testing.tRunner calls pkg.TestName (subtests: pkg.TestName.funcN). */
	{ "go", "^testing\\.tRunner$", "^.*\\.(Test[A-Za-z0-9_]*)(\\.func[0-9]+)*$", "\\1" },
	/* Rust libtest: each #[test] fn runs as crate::path::name::{{closure}}. */
	{ "rust", NULL, "^[A-Za-z0-9_]+::(.+)::\\{\\{closure\\}\\}$", "\\1" },
};

void attrib_rules_add_builtin(struct attrib_rules *rules)
{
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		attrib_rules_add(rules, builtin[i].name, builtin[i].caller, builtin[i].test,
				 builtin[i].as);
}
