/* Tokenizer, parser and evaluator tests: small and quick (the cheap test of the suite). */
#include "calc.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

static double eval_ok(const char *src, const struct calc_env *env)
{
	double v = NAN;
	int r = calc_eval_str(src, env, &v);
	if (r != CALC_OK)
		fail_msg("'%s' failed with %d", src, r);
	return v;
}

static void test_tokens(void **state)
{
	struct calc_lexer lx;
	struct calc_token t;
	calc_lexer_init(&lx, "  12.5*foo_1 ( ,) $");
	calc_lexer_next(&lx, &t);
	assert_int_equal(t.kind, CALC_TOK_NUM);
	assert_true(t.num == 12.5);
	assert_int_equal(t.pos, 2);
	assert_int_equal(t.len, 4);
	calc_lexer_next(&lx, &t);
	assert_int_equal(t.kind, CALC_TOK_OP);
	assert_int_equal(t.op, '*');
	calc_lexer_next(&lx, &t);
	assert_int_equal(t.kind, CALC_TOK_IDENT);
	assert_int_equal(t.len, 5);
	calc_lexer_next(&lx, &t);
	assert_int_equal(t.op, '(');
	calc_lexer_next(&lx, &t);
	assert_int_equal(t.op, ',');
	calc_lexer_next(&lx, &t);
	assert_int_equal(t.op, ')');
	calc_lexer_next(&lx, &t);
	assert_int_equal(t.kind, CALC_TOK_ERROR);
	assert_int_equal(t.pos, 18);
	calc_lexer_next(&lx, &t);
	assert_int_equal(t.kind, CALC_TOK_END);
	calc_lexer_next(&lx, &t);
	assert_int_equal(t.kind, CALC_TOK_END);
}

static void test_precedence(void **state)
{
	assert_true(eval_ok("1 + 2 * 3", NULL) == 7);
	assert_true(eval_ok("(1 + 2) * 3", NULL) == 9);
	assert_true(eval_ok("10 - 4 - 3", NULL) == 3);
	assert_true(eval_ok("2 ^ 3 ^ 2", NULL) == 512);
	assert_true(eval_ok("-2 ^ 2", NULL) == -4);
	assert_true(eval_ok("7 % 4 * 2", NULL) == 6);
	assert_true(eval_ok("--3", NULL) == 3);
	assert_true(eval_ok("1e3 / 8", NULL) == 125);
	assert_true(eval_ok(".5 + .25", NULL) == 0.75);
}

static void test_functions_and_variables(void **state)
{
	struct calc_env env;
	calc_env_init(&env);
	assert_int_equal(calc_env_set(&env, "x", 3), 0);
	assert_int_equal(calc_env_set(&env, "y", 4), 0);
	assert_true(eval_ok("sqrt(x*x + y*y)", &env) == 5);
	assert_true(eval_ok("max(x, y) - min(x, y)", &env) == 1);
	assert_true(eval_ok("abs(-x) + pow(2, 10)", &env) == 1027);
	assert_true(fabs(eval_ok("pi", &env) - M_PI) < 1e-15);
	assert_int_equal(calc_env_set(&env, "x", -1), 0);
	double v;
	assert_int_equal(calc_eval_str("sqrt(x)", &env, &v), CALC_EDOMAIN);
	assert_int_equal(calc_eval_str("z + 1", &env, &v), CALC_EUNKNOWN);
	assert_int_equal(calc_eval_str("nosuch(1)", &env, &v), CALC_EUNKNOWN);
	assert_int_equal(calc_eval_str("sqrt(1, 2)", &env, &v), CALC_EUNKNOWN);
	assert_int_equal(calc_eval_str("1 / (2 - 2)", &env, &v), CALC_EDOMAIN);
	assert_int_equal(calc_env_set(&env, "a_name_far_too_long", 1), -1);
}

static void test_syntax_errors(void **state)
{
	static const struct {
		const char *src;
		const char *msg;
	} cases[] = {
	        {"", "unexpected end of input at offset 0"},
	        {"1 +", "unexpected end of input at offset 3"},
	        {"(1 + 2", "expected ')' at offset 6"},
	        {"1 2", "unexpected trailing input at offset 2"},
	        {"2 * $", "unexpected token at offset 4"},
	        {"max(1, 2", "expected ')' at offset 8"},
	};
	char err[128];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct calc_node *n = calc_parse(cases[i].src, err, sizeof(err));
		assert_null(n);
		assert_string_equal(err, cases[i].msg);
	}
}

static void test_deep_nesting(void **state)
{
	/* Deep nesting is rejected cleanly, not with a stack overflow. */
	char src[4096];
	size_t n = 0;
	for (int i = 0; i < 1000; i++)
		src[n++] = '(';
	src[n++] = '1';
	for (int i = 0; i < 1000; i++)
		src[n++] = ')';
	src[n] = '\0';
	char err[128];
	assert_null(calc_parse(src, err, sizeof(err)));
	assert_non_null(strstr(err, "nested too deeply"));
	/* 50 levels are fine. */
	assert_true(eval_ok("((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))"
	                    "))))))))))))))))))))))))))))))))))))",
	                    NULL) == 1);
}

static void test_many_expressions(void **state)
{
	/* A polynomial evaluated at many points through the parser: sum_{x=1..N} of
	 * (x^2 + 3x + 2) / (x + 1) = sum (x + 2) = N(N+1)/2 + 2N. */
	struct calc_node *n = calc_parse("(x ^ 2 + 3 * x + 2) / (x + 1)", NULL, 0);
	assert_non_null(n);
	struct calc_env env;
	calc_env_init(&env);
	const int N = 200000;
	double sum = 0;
	for (int x = 1; x <= N; x++) {
		double v;
		calc_env_set(&env, "x", x);
		assert_int_equal(calc_eval(n, &env, &v), CALC_OK);
		sum += v;
	}
	calc_node_free(n);
	assert_true(fabs(sum - ((double)N * (N + 1) / 2 + 2.0 * N)) < 1e-6);

	/* Reparse a sizeable expression many times. */
	char src[2048];
	size_t len = 0;
	for (int i = 1; i <= 100; i++)
		len += (size_t)snprintf(src + len, sizeof(src) - len, "%s%d", i > 1 ? "+" : "", i);
	for (int rep = 0; rep < 3000; rep++)
		assert_true(eval_ok(src, NULL) == 5050);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_tokens),
	        cmocka_unit_test(test_precedence),
	        cmocka_unit_test(test_functions_and_variables),
	        cmocka_unit_test(test_syntax_errors),
	        cmocka_unit_test(test_deep_nesting),
	        cmocka_unit_test(test_many_expressions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
