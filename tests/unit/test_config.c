/* .ciprof.yml: accepted shapes, and errors that name file, line and column. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <stdlib.h>

#include "config/config.h"
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
	expect_error("attribution:\n  rules:\n    - caller: x\n",
	             "cfg.yml:3:7: a rule needs 'test'");
	expect_error("attribution:\n  rules: x\n", "cfg.yml:2:10: 'rules' must be a list");
	expect_error("attribution:\n  builtin-rules: maybe\n", "must be true or false");
	expect_error("attribution:\n  rules:\n    - test: [a]\n",
	             "cfg.yml:3:13: 'test' must be a string");
	/* a rule's regexes are compiled here, as `ciprof run` compiles them: `ciprof config`
	 * refuses what the run would, at the value */
	expect_error("attribution:\n  rules:\n    - test: 'a('\n",
	             "cfg.yml:3:13: a rule's 'test': 'a(' is not a valid regular expression");
	expect_error("attribution:\n  rules:\n    - name: x\n      caller: '[b'\n      test: a\n",
	             "cfg.yml:4:15: a rule's 'caller': '[b' is not a valid regular expression");
	expect_error(
	        "attribution:\n  rules:\n    - test: '^t++++++++++++++++++++++art$'\n",
	        "cfg.yml:3:13: a rule's 'test': '^t++++++++++++++++++++++art$' is too complex");
	expect_error("attribution:\n  rules: [\n", "cfg.yml:3:1:");
	expect_error("- 1\n- 2\n", "the file must be a mapping");
	expect_error("attribution:\n  rules: *a\n", "aliases");
	expect_error("attribution: {}\n---\nattribution: {}\n", "only one YAML document");
}

static void test_settings(void **state)
{
	(void)state;
	struct config c;
	config_init(&c);
	/* defaults */
	assert_int_equal(config_int(&c, CONFIG_RUN_HZ), CIPROF_DEFAULT_HZ);
	assert_string_equal(config_str(&c, CONFIG_RUN_BACKEND), "auto");
	assert_int_equal(config_int(&c, CONFIG_AB_HZ), CIPROF_DEFAULT_AB_HZ);
	assert_string_equal(config_str(&c, CONFIG_REPORT_BASE_BRANCH), "");
	assert_int_equal(config_int(&c, CONFIG_REPORT_BASE_RUNS), 5);
	assert_true(config_number(&c, CONFIG_REPORT_MIN_CHANGE) == 5.0);
	assert_true(config_number(&c, CONFIG_REPORT_MIN_SHARE) == 0.5);
	assert_true(config_number(&c, CONFIG_REPORT_ALPHA) == 0.001);
	assert_true(config_bool(&c, CONFIG_COMMENT_ENABLED));
	assert_string_equal(config_str(&c, CONFIG_COMMENT_PROVIDER), "auto");
	size_t n;
	config_list(&c, CONFIG_FRAMES_IGNORE, &n);
	assert_int_equal(n, 0);
	assert_int_equal(config_source_of(&c, CONFIG_RUN_HZ), CONFIG_DEFAULT);
	char *o = config_origin(&c, CONFIG_RUN_HZ);
	assert_string_equal(o, "default");
	free(o);

	const char *y = "run:\n"
	                "  hz: 999\n"
	                "  backend: perf\n"
	                "ab:\n"
	                "  hz: 2999\n"
	                "report:\n"
	                "  base-branch: develop\n"
	                "  base-runs: 3\n"
	                "  min-change: 2.5\n"
	                "  min-share: '1'\n"
	                "  alpha: 0.01\n"
	                "frames:\n"
	                "  ignore: ['^__libc_start', '^_start$']\n"
	                "  fold:\n"
	                "    - '^std::'\n"
	                "comment: {enabled: no, provider: gitlab}\n"
	                "attribution:\n"
	                "  builtin-rules: off\n";
	assert_int_equal(config_parse(&c, y, strlen(y), ".ciprof.yml"), 0);
	assert_int_equal(config_int(&c, CONFIG_RUN_HZ), 999);
	assert_string_equal(config_str(&c, CONFIG_RUN_BACKEND), "perf");
	assert_int_equal(config_int(&c, CONFIG_AB_HZ), 2999);
	assert_string_equal(config_str(&c, CONFIG_REPORT_BASE_BRANCH), "develop");
	assert_int_equal(config_int(&c, CONFIG_REPORT_BASE_RUNS), 3);
	assert_true(config_number(&c, CONFIG_REPORT_MIN_CHANGE) == 2.5);
	assert_true(config_number(&c, CONFIG_REPORT_MIN_SHARE) == 1.0);
	assert_true(config_number(&c, CONFIG_REPORT_ALPHA) == 0.01);
	assert_false(config_bool(&c, CONFIG_COMMENT_ENABLED));
	assert_string_equal(config_str(&c, CONFIG_COMMENT_PROVIDER), "gitlab");
	assert_int_equal(c.builtin_rules, 0); /* kept in step for cmd_run */
	char *const *ig = config_list(&c, CONFIG_FRAMES_IGNORE, &n);
	assert_int_equal(n, 2);
	assert_string_equal(ig[1], "^_start$");
	char *const *fo = config_list(&c, CONFIG_FRAMES_FOLD, &n);
	assert_int_equal(n, 1);
	assert_string_equal(fo[0], "^std::");
	/* where each value came from */
	assert_int_equal(config_source_of(&c, CONFIG_RUN_HZ), CONFIG_FILE);
	assert_int_equal(c.values[CONFIG_AB_HZ].line, 5);
	assert_int_equal(c.values[CONFIG_RUN_HZ].line, 2);
	assert_int_equal(c.values[CONFIG_RUN_HZ].column, 7);
	assert_int_equal(c.values[CONFIG_FRAMES_FOLD].line, 15);
	o = config_origin(&c, CONFIG_REPORT_ALPHA);
	assert_string_equal(o, ".ciprof.yml:11");
	free(o);
	assert_int_equal(config_source_of(&c, CONFIG_REPORT_BASE_RUNS), CONFIG_FILE);
	assert_true(config_is_set(&c, CONFIG_RUN_HZ));

	/* the environment overrides the file, a flag overrides both */
	char *env[] = {"CIPROF_RUN_HZ=49", "CIPROF_REPORT_BASE_BRANCH=main",
	               "CIPROF_RUN_BACKEND=", "OTHER=1", NULL};
	assert_int_equal(config_apply_env(&c, env), 0);
	assert_int_equal(config_int(&c, CONFIG_RUN_HZ), 49);
	assert_string_equal(config_str(&c, CONFIG_RUN_BACKEND), "perf"); /* empty: ignored */
	o = config_origin(&c, CONFIG_RUN_HZ);
	assert_string_equal(o, "environment (CIPROF_RUN_HZ)");
	free(o);
	assert_int_equal(config_set(&c, CONFIG_RUN_HZ, "1999", CONFIG_FLAG), 0);
	assert_int_equal(config_int(&c, CONFIG_RUN_HZ), 1999);
	o = config_origin(&c, CONFIG_RUN_HZ);
	assert_string_equal(o, "command line");
	free(o);
	/* a flag's list replaces the file's, then appends */
	assert_int_equal(config_set(&c, CONFIG_FRAMES_IGNORE, "^a", CONFIG_FLAG), 0);
	assert_int_equal(config_set(&c, CONFIG_FRAMES_IGNORE, "^b", CONFIG_FLAG), 0);
	ig = config_list(&c, CONFIG_FRAMES_IGNORE, &n);
	assert_int_equal(n, 2);
	assert_string_equal(ig[0], "^a");
	/* bad values are refused and change nothing */
	assert_int_equal(config_set(&c, CONFIG_RUN_HZ, "0", CONFIG_FLAG), -1);
	assert_non_null(strstr(cp_last_error(), "'run.hz' must be a whole number from 1 to 10000"));
	assert_int_equal(config_int(&c, CONFIG_RUN_HZ), 1999);
	assert_int_equal(config_set(&c, CONFIG_REPORT_ALPHA, "0", CONFIG_FLAG), -1);
	assert_int_equal(config_set(&c, CONFIG_REPORT_ALPHA, "1", CONFIG_FLAG), -1);
	assert_int_equal(config_set(&c, CONFIG_REPORT_MIN_SHARE, "nan", CONFIG_FLAG), -1);
	assert_int_equal(config_set(&c, CONFIG_REPORT_MIN_SHARE, "0x10", CONFIG_FLAG), -1);
	assert_int_equal(config_set(&c, CONFIG_RUN_BACKEND, "ebpf", CONFIG_FLAG), -1);
	assert_non_null(strstr(cp_last_error(), "one of auto/perf/preload"));
	assert_int_equal(config_set(&c, CONFIG_REPORT_BASE_BRANCH, "a\nb", CONFIG_FLAG), -1);
	assert_int_equal(config_set(&c, CONFIG_FRAMES_FOLD, "(", CONFIG_FLAG), -1);
	char *bad_env[] = {"CIPROF_REPORT_BASE_RUNS=many", NULL};
	assert_int_equal(config_apply_env(&c, bad_env), -1);
	assert_non_null(strstr(cp_last_error(), "environment variable CIPROF_REPORT_BASE_RUNS"));

	enum config_key k;
	assert_int_equal(config_key_find("report.min-share", &k), 0);
	assert_int_equal(k, CONFIG_REPORT_MIN_SHARE);
	assert_int_equal(config_key_find("report.nope", &k), -1);
	assert_null(config_key_info(CONFIG_NKEYS));
	config_release(&c);
	/* released: back to defaults, and safe to release again */
	assert_int_equal(config_int(&c, CONFIG_RUN_HZ), CIPROF_DEFAULT_HZ);
	config_release(&c);
}

static void test_setting_errors(void **state)
{
	(void)state;
	expect_error("run:\n  hz: fast\n", "cfg.yml:2:7: 'run.hz' must be a whole number");
	expect_error("run:\n  hz: 10001\n", "cfg.yml:2:7: 'run.hz'");
	expect_error("run:\n  hz: [1]\n",
	             "cfg.yml:2:7: 'run.hz' must be a single value, not a list");
	expect_error("run:\n  hz:\n", "'run.hz' needs a value");
	expect_error("run:\n  hz: ~\n", "'run.hz' needs a value");
	expect_error("run:\n  sample-rate: 9\n",
	             "cfg.yml:2:3: unknown key 'sample-rate' in 'run'; known keys: hz, backend");
	expect_error("run:\n  backend: ebpf\n", "cfg.yml:2:12: 'run.backend' must be one of");
	expect_error("run: 99\n", "cfg.yml:1:6: 'run' must be a mapping");
	expect_error("run:\n  hz: 1\n  hz: 2\n",
	             "cfg.yml:3:3: 'hz' appears twice in 'run' (first on line 2)");
	expect_error("run: {}\nrun: {}\n", "'run' appears twice in the file");
	expect_error("report:\n  alpha: 0\n", "cfg.yml:2:10: 'report.alpha' must be a number > 0");
	expect_error("report:\n  min-change: -1\n", "'report.min-change' must be a number >= 0");
	expect_error("report:\n  base-runs: 2.5\n", "'report.base-runs' must be a whole number");
	expect_error("report:\n  base-branch: ''\n", "'report.base-branch' must be 1 to 255");
	expect_error("frames:\n  ignore: '^x'\n", "cfg.yml:2:11: 'frames.ignore' must be a list");
	expect_error("frames:\n  ignore:\n    - ok\n    - 'a('\n",
	             "cfg.yml:4:7: 'frames.ignore': 'a(' is not a valid regular expression");
	expect_error("frames:\n  fold: [[x]]\n", "cfg.yml:2:10: each item of 'frames.fold'");
	/* A pull request controls its own config: a pattern regcomp would expand into
	 * gigabytes is refused before regcomp sees it. */
	expect_error("frames:\n  ignore:\n    - '^t++++++++++++++++++++++art$'\n",
	             "cfg.yml:3:7: 'frames.ignore': '^t++++++++++++++++++++++art$' is too complex");
	expect_error("frames:\n  collapse: []\n",
	             "unknown key 'collapse' in 'frames'; known keys: ignore, fold");
	expect_error("comment:\n  enabled: sometimes\n", "'comment.enabled' must be true or false");
	expect_error("comment:\n  provider: bitbucket\n",
	             "'comment.provider' must be one of auto/github/gitlab");
	expect_error("attribution:\n  builtin-rules: true\n  builtin-rules: false\n",
	             "appears twice");
}

/* Command-line options that set a key take their help, range and default from the table. */
static void test_option_help(void **state)
{
	(void)state;
	char *h = config_option_help(CONFIG_RUN_HZ);
	assert_string_equal(h, "samples per CPU-second per thread, 1..10000 (default " CIPROF_STR(
	                               CIPROF_DEFAULT_HZ) "; run.hz, CIPROF_RUN_HZ)");
	free(h);
	h = config_option_help(CONFIG_RUN_BACKEND);
	assert_string_equal(h, "sampling backend: auto, perf, preload (default auto; run.backend, "
	                       "CIPROF_RUN_BACKEND)");
	free(h);
}

static void test_load(void **state)
{
	(void)state;
	char dir[] = "/tmp/ciprof-test-config-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/c.yml", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("report:\n  base-branch: trunk\n", f);
	fclose(f);
	struct config c;
	config_init(&c);
	setenv("CIPROF_REPORT_BASE_RUNS", "9", 1);
	assert_int_equal(config_load(&c, path), 0);
	unsetenv("CIPROF_REPORT_BASE_RUNS");
	assert_string_equal(config_str(&c, CONFIG_REPORT_BASE_BRANCH), "trunk");
	assert_int_equal(config_int(&c, CONFIG_REPORT_BASE_RUNS), 9); /* environment applied */
	char *o = config_origin(&c, CONFIG_REPORT_BASE_BRANCH);
	char want[160];
	snprintf(want, sizeof(want), "%s:2", path);
	assert_string_equal(o, want);
	free(o);
	config_release(&c);
	/* a named file that is missing is an error */
	config_init(&c);
	snprintf(path, sizeof(path), "%s/none.yml", dir);
	assert_int_equal(config_load(&c, path), -1);
	config_release(&c);
	snprintf(path, sizeof(path), "%s/c.yml", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_rules),    cmocka_unit_test(test_errors),
	        cmocka_unit_test(test_settings), cmocka_unit_test(test_setting_errors),
	        cmocka_unit_test(test_load),     cmocka_unit_test(test_option_help),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
