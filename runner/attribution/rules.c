/* The built-in stack rules: how each in-process test framework shows its test on the stack.
 * Each is checked by an integration test profiling a real suite of that framework
 * (examples/frameworks/). POSIX extended regexes; "as" uses \1..\9 back-references. */
#include "runner/attribution/attribute.h"

#include <stddef.h>

static const struct {
	const char *name, *caller, *test, *as;
} builtin[] = {
        /* cmocka: cmocka_run_one_test_or_fixture calls each test (and each setup/teardown).
         * Debian 12's libcmocka.so.0.7.0 is stripped of that static function's name: the frame
         * is "libcmocka.so.0.7.0+0x58f8", and the chain above it is garbage (no frame pointers
         * in the library). So any frame inside libcmocka that calls user code is the runner. */
        {"cmocka",
         "^(cmocka_run_one_test_or_fixture|_cmocka_run_test|_run_test|"
         "libcmocka\\.so[.0-9]*\\+0x[0-9a-f]+)$",
         "^(.+)$", "\\1"},
        /* GoogleTest: TEST(Suite, Name) and TEST_F become Suite_Name_Test::TestBody(), often in
         * a namespace ("(anonymous namespace)::Suite_Name_Test::TestBody()"). Self-naming: the
         * runner frames above it (libgtest.a, no frame pointers) are not reliable. */
        {"googletest", NULL, "^(.*::)?([A-Za-z0-9]+)_([A-Za-z0-9_]+)_Test(<.*>)?::TestBody\\(\\)$",
         "\\2.\\3"},
        /* Check: START_TEST(name) defines name_fn. Debian 12's libcheck.a (0.15.2) inlines
         * tcase_run_tfun_fork into srunner_run_tagged, which is the caller in fork mode (the
         * default); tcase_run_tfun_nofork calls it with CK_FORK=no. */
        {"check", "^(tcase_run_tfun_fork|tcase_run_tfun_nofork|srunner_run_tagged)$", "^(.+)_fn$",
         "\\1"},
        /* Criterion: Test(suite, name) defines suite_name_impl, which the exported
         * criterion_internal_test_main calls in the test's worker process. Criterion calls the
         * test "suite::name"; a suite name containing "_" is split at its first "_". */
        {"criterion", "^criterion_internal_test_main$", "^([A-Za-z0-9]+)_(.+)_impl$", "\\1::\\2"},
        /* Go: testing.tRunner calls pkg.TestName (subtests: pkg.TestName.funcN). */
        {"go", "^testing\\.tRunner$", "^.*\\.(Test[A-Za-z0-9_]*)(\\.func[0-9]+)*$", "\\1"},
        /* Rust libtest: each #[test] fn name is wrapped in a closure crate::path::name::{{closure}}
         * (v0 mangling: {closure#0}), called through its FnOnce::call_once shim by
         * test::__rust_begin_short_backtrace. Without optimisation only: at opt-level >= 1 the
         * closure and the test are inlined into the shim and leave no frame of their own. */
        {"rust",
         "^(core::ops::function::FnOnce::call_once(\\{\\{vtable\\.shim\\}\\})?|"
         "<.+::\\{closure#0\\} as core::ops::function::FnOnce<\\(\\)>>::call_once)$",
         "^[A-Za-z0-9_]+::(.+)::(\\{\\{closure\\}\\}|\\{closure#0\\})$", "\\1"},
};

void attrib_rules_add_builtin(struct attrib_rules *rules)
{
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		attrib_rules_add(rules, builtin[i].name, builtin[i].caller, builtin[i].test,
		                 builtin[i].as);
}
