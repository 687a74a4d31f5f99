/* report/gate: the rules of --fail-on-regression on real verdicts of synthetic suites. A
 * regression fails the build only with enough history (REPORT_MIN_HISTORY runs; with fewer than
 * STATS_TAIL_SCALE_MIN_RUNS, only one that stands out from a rare jump) and the head's
 * own base (not a fallback); an unknown --base is an error with --fail-on-regression and a pass
 * without it; without --fail-on-regression nothing fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "report/report.h"
#include "test_report_synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A verdict on k history runs (also the baseline's runs): with slow > 1 the function holding
 * about 10 % of a 10 s suite at 4999 Hz is that much slower in the head. */
static struct report_diff *verdict_on(size_t k, double slow)
{
	struct synth base, head;
	synth_init(&base, 10, 4999);
	base.jitter = 0.01;
	head = base;
	head.factor[synth_func_near(&base, 0.10)] = slow;
	struct rng r = {(uint64_t)k * 31 + 7};
	struct profile *runs[8], *merged;
	synth_base(&base, &r, k, runs, &merged);
	struct profile *hp = synth_run(&head, &r, 1.0);
	struct report_options o;
	report_options_init(&o);
	struct report_diff *d;
	report_diff_new(&d, merged, k, runs, k, hp, &o);
	for (size_t i = 0; i < k; i++)
		profile_free(runs[i]);
	profile_free(merged);
	profile_free(hp);
	return d;
}

static void test_regression_fails_with_history(void **state)
{
	(void)state;
	struct report_baseline b;
	report_baseline_init(&b);
	b.n = 5;
	b.at_merge_base = 5;
	struct report_diff *d = verdict_on(5, 1.5);
	assert_int_equal(d->verdict, REPORT_REGRESSED);
	assert_int_equal(d->history_runs, 5);
	char *adv = report_advisory(&b, d);
	assert_null(adv);
	assert_int_equal(report_gate(&b, d, adv, 1), REPORT_GATE_FAIL);
	/* Without --fail-on-regression a regression is reported, not failed. */
	assert_int_equal(report_gate(&b, d, adv, 0), REPORT_GATE_PASS);
	report_diff_free(d);
	/* Identical code: nothing to fail on. */
	d = verdict_on(5, 1.0);
	assert_int_equal(d->verdict, REPORT_OK);
	assert_int_equal(report_gate(&b, d, NULL, 1), REPORT_GATE_PASS);
	report_diff_free(d);
	report_baseline_release(&b);
}

static void test_short_history_is_advisory(void **state)
{
	(void)state;
	struct report_baseline b;
	report_baseline_init(&b);
	for (size_t k = 1; k < REPORT_MIN_HISTORY; k++) {
		b.n = k;
		b.at_merge_base = k;
		struct report_diff *d = verdict_on(k, 1.5);
		assert_int_equal(d->verdict, REPORT_REGRESSED);
		char *adv = report_advisory(&b, d);
		assert_non_null(adv);
		char want[64];
		snprintf(want, sizeof(want), "has %zu run%s to learn", k, k == 1 ? "" : "s");
		assert_non_null(strstr(adv, want));
		assert_int_equal(report_gate(&b, d, adv, 1), REPORT_GATE_PASS);
		free(adv);
		report_diff_free(d);
	}
	/* From REPORT_MIN_HISTORY runs on, a regression that stands out from a rare jump (judged
	 * on a tail of at most t(STATS_SHORT_MAX_DOF)) gates: a 10 % function twice as slow. One
	 * that needs the lighter tail a short history fits (+50 %) is shown, and advisory. */
	b.n = b.at_merge_base = REPORT_MIN_HISTORY;
	struct report_diff *d = verdict_on(REPORT_MIN_HISTORY, 2.0);
	char *adv = report_advisory(&b, d);
	assert_null(adv);
	assert_true(d->ngating > 0);
	assert_int_equal(report_gate(&b, d, adv, 1), REPORT_GATE_FAIL);
	report_diff_free(d);
	d = verdict_on(REPORT_MIN_HISTORY, 1.5);
	assert_int_equal(d->verdict, REPORT_REGRESSED);
	assert_int_equal(d->ngating, 0);
	adv = report_advisory(&b, d);
	assert_non_null(adv);
	assert_non_null(strstr(adv, "fewer than the 20"));
	/* It says how far the strongest one is from gating, and names nothing (a name from a
	 * fork's symbol table would reach every output). */
	double q = 0;
	const char *at = strstr(adv, "the strongest has q = ");
	assert_non_null(at);
	assert_int_equal(sscanf(at, "the strongest has q = %lf", &q), 1);
	assert_true(q > 0.001 && q < 1);
	assert_null(strstr(adv, "f_"));
	assert_int_equal(report_gate(&b, d, adv, 1), REPORT_GATE_PASS);
	free(adv);
	report_diff_free(d);
	report_baseline_release(&b);
}

static void test_fallback_is_advisory(void **state)
{
	(void)state;
	/* No base run at the merge-base: older base runs lack the base branch's latest changes,
	 * which would be blamed on the head. */
	struct report_baseline b;
	report_baseline_init(&b);
	b.n = 5;
	b.fallback = 1;
	struct report_diff *d = verdict_on(5, 1.5);
	assert_int_equal(d->verdict, REPORT_REGRESSED);
	char *adv = report_advisory(&b, d);
	assert_non_null(adv);
	assert_non_null(strstr(adv, "no base run at the merge-base"));
	assert_int_equal(report_gate(&b, d, adv, 1), REPORT_GATE_PASS);
	free(adv);
	report_diff_free(d);
	report_baseline_release(&b);
}

static void test_unknown_base(void **state)
{
	(void)state;
	/* --base names nothing: an error under --fail-on-regression (a typo must not pass every
	 * build), a pass (with a warning, the caller's) without it. */
	struct report_baseline b;
	report_baseline_init(&b);
	b.unknown = 1;
	assert_null(report_advisory(&b, NULL));
	assert_int_equal(report_gate(&b, NULL, NULL, 1), REPORT_GATE_UNKNOWN_BASE);
	assert_int_equal(report_gate(&b, NULL, NULL, 0), REPORT_GATE_PASS);
	/* A known base without runs the head contains is no baseline, and no error. */
	b.unknown = 0;
	assert_int_equal(report_gate(&b, NULL, NULL, 1), REPORT_GATE_PASS);
	report_baseline_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_regression_fails_with_history),
	        cmocka_unit_test(test_short_history_is_advisory),
	        cmocka_unit_test(test_fallback_is_advisory),
	        cmocka_unit_test(test_unknown_base),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
