/* report/paired: the looks' schedule, and the judgement of synthetic rounds: a planted 3x
 * slowdown is slower, identical sides with many samples are the same, too few samples stay
 * undecided (never a change). The t tail is stats_t_sf2's (test_report_stats). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "report/paired.h"

#include <math.h>
#include <string.h>

static void test_looks(void **state)
{
	(void)state;
	/* After rounds 4, 6, 8 and 10 of 10; after every round a budget below 4 ends on. */
	assert_int_equal(paired_planned_looks(10), 4);
	assert_false(paired_is_look(3, 10));
	assert_true(paired_is_look(4, 10));
	assert_false(paired_is_look(5, 10));
	assert_true(paired_is_look(10, 10));
	assert_int_equal(paired_planned_looks(2), 1);
	assert_true(paired_is_look(2, 2));
	assert_int_equal(paired_planned_looks(7), 3); /* 4, 6, 7 */
}

static void test_look_alpha(void **state)
{
	(void)state;
	/* 10 rounds: interim looks after 4, 6 and 8 share a fifth of alpha; the final look after
	 * 10 gets the rest. The looks actually taken never spend more than alpha in all. */
	double a = 0.001, interim = a * PAIRED_INTERIM_SHARE / 3;
	assert_true(fabs(paired_look_alpha(a, 4, 10, 0) - interim) < 1e-15);
	assert_true(fabs(paired_look_alpha(a, 10, 10, 1) - (a - 3 * interim)) < 1e-15);
	assert_true(fabs(3 * interim + paired_look_alpha(a, 10, 10, 1) - a) < 1e-15);
	/* The time budget ends it after round 7: looks at 4 and 6 were taken, 7 is final. */
	assert_true(fabs(paired_look_alpha(a, 7, 10, 1) - (a - 2 * interim)) < 1e-15);
	/* Stopped before any look (2 rounds): the final look has all of it. */
	assert_true(fabs(paired_look_alpha(a, 2, 10, 1) - a) < 1e-15);
	/* Decided at look 6 and rendered again as final: 4 was the only interim look before. */
	assert_true(fabs(paired_look_alpha(a, 6, 10, 1) - (a - interim)) < 1e-15);
	/* One look planned: all of it. */
	assert_true(fabs(paired_look_alpha(a, 2, 2, 1) - a) < 1e-15);
	/* The final look at the budget's end is sharper than the even split it replaces. */
	assert_true(paired_look_alpha(a, 10, 10, 1) > 3 * (a / 4));
}

/* A profile of one process whose functions f and g have the given self samples. */
static struct profile *two_funcs(uint64_t f, uint64_t g)
{
	struct profile *p = profile_new();
	p->stats.hz = 1000;
	p->stats.period_ns = 1000000;
	struct profile_frame root = {profile_intern(p, "prog"), 0, 0, 0, PROFILE_FRAME_PROCESS};
	uint32_t r = profile_node(p, 0, profile_frame(p, &root));
	struct profile_frame ff = {profile_intern(p, "f"), profile_intern(p, "prog"), 0, 0, 0};
	struct profile_frame fg = {profile_intern(p, "g"), profile_intern(p, "prog"), 0, 0, 0};
	profile_add(p, 0, profile_node(p, r, profile_frame(p, &ff)), f);
	profile_add(p, 0, profile_node(p, r, profile_frame(p, &fg)), g);
	return p;
}

static const struct paired_item *item(const struct paired_judgement *j, const char *name)
{
	for (size_t i = 0; i < j->n; i++)
		if (j->items[i].measure == REPORT_SELF && !strcmp(j->items[i].name, name))
			return &j->items[i];
	fail_msg("no item %s", name);
	return NULL;
}

/* Rounds with a deterministic wobble of f's counts (-pct, 0, +pct %, in turn) around the given
 * counts. */
/* ... judged as a look of a 10-round budget: interim, unless final. */
static struct paired *judge_wf(uint64_t bf, uint64_t bg, uint64_t hf, uint64_t hg, size_t rounds,
                               int pct, int final, struct paired_judgement *j)
{
	struct paired *pa = paired_new();
	for (size_t r = 0; r < rounds; r++) {
		int w = ((int)(r % 3) - 1) * pct;
		struct profile *b = two_funcs(bf + (uint64_t)(w * (int64_t)bf / 100), bg);
		struct profile *h = two_funcs(hf - (uint64_t)(w * (int64_t)hf / 100), hg);
		paired_add_round(pa, b, h);
		profile_free(b);
		profile_free(h);
	}
	assert_int_equal(paired_rounds(pa), rounds);
	struct report_options o;
	report_options_init(&o);
	paired_judge(pa, &o, 10, final, j);
	return pa; /* j's names are borrowed from it */
}

static struct paired *judge_w(uint64_t bf, uint64_t bg, uint64_t hf, uint64_t hg, size_t rounds,
                              int pct, struct paired_judgement *j)
{
	return judge_wf(bf, bg, hf, hg, rounds, pct, 0, j);
}

static struct paired *judge(uint64_t bf, uint64_t bg, uint64_t hf, uint64_t hg, size_t rounds,
                            struct paired_judgement *j)
{
	return judge_w(bf, bg, hf, hg, rounds, 1, j);
}

static void test_planted_slowdown(void **state)
{
	(void)state;
	struct paired_judgement j;
	struct paired *pa = judge(2000, 2000, 6000, 2000, 4, &j);
	assert_int_equal(item(&j, "f")->state, PAIRED_SLOWER);
	assert_true(fabs(item(&j, "f")->change - 2) < 0.05);
	assert_int_equal(item(&j, "g")->state, PAIRED_SAME);
	assert_int_equal(j.nslower, 2); /* f, and "(outside tests)" as the whole suite */
	assert_int_equal(j.nundecided, 0);
	paired_judgement_release(&j);
	paired_free(pa);
}

static void test_identical_sides(void **state)
{
	(void)state;
	struct paired_judgement j;
	struct paired *pa = judge(100000, 100000, 100000, 100000, 6, &j);
	assert_int_equal(j.nslower + j.nfaster, 0);
	assert_int_equal(item(&j, "f")->state, PAIRED_SAME);
	assert_int_equal(j.nundecided, 0);
	paired_judgement_release(&j);
	paired_free(pa);
}

static void test_too_few_samples(void **state)
{
	(void)state;
	struct paired_judgement j;
	/* 60 % slower, but 5 and 8 samples a round: not judged, never slower. */
	struct paired *pa = judge(5, 2000, 8, 2000, 6, &j);
	assert_int_equal(item(&j, "f")->state, PAIRED_NOT_JUDGED);
	assert_int_equal(j.nslower + j.nfaster, 0);
	paired_judgement_release(&j);
	paired_free(pa);
}

static void test_noisy_rounds_undecided(void **state)
{
	(void)state;
	struct paired_judgement j;
	/* 10 % slower on average, but the rounds swing by 25 %: undecided after 4 rounds. */
	struct paired *pa = judge_w(2000, 2000, 2200, 2000, 4, 25, &j);
	assert_int_equal(item(&j, "f")->state, PAIRED_UNDECIDED);
	assert_int_equal(j.nslower + j.nfaster, 0);
	assert_true(j.nundecided >= 1);
	paired_judgement_release(&j);
	paired_free(pa);
}

static void test_steady_small_change(void **state)
{
	(void)state;
	struct paired_judgement j;
	/* A steady loop (rounds within 1 %) 10 % slower over 8 rounds: found, although its 200
	 * samples a round would hide it under Poisson's error. */
	struct paired *pa = judge(200, 4000, 220, 4000, 8, &j);
	assert_int_equal(item(&j, "f")->state, PAIRED_SLOWER);
	assert_int_equal(item(&j, "g")->state, PAIRED_SAME);
	paired_judgement_release(&j);
	paired_free(pa);
}

static void test_final_look_sharper(void **state)
{
	(void)state;
	/* A change an interim look leaves undecided, the final look (which spends most of the
	 * budget) decides: f 8 % slower over 6 rounds that swing by 1 %. */
	struct paired_judgement ji, jf;
	struct paired *pi = judge_wf(2000, 2000, 2160, 2000, 6, 1, 0, &ji);
	struct paired *pf = judge_wf(2000, 2000, 2160, 2000, 6, 1, 1, &jf);
	assert_true(jf.alpha_look > ji.alpha_look);
	assert_true(fabs(item(&ji, "f")->p - item(&jf, "f")->p) < 1e-12); /* same data, same p */
	print_message("f +8 %%: p %.3g; interim look at %.3g: %d, final at %.3g: %d\n",
	              item(&ji, "f")->p, ji.alpha_look, (int)item(&ji, "f")->state, jf.alpha_look,
	              (int)item(&jf, "f")->state);
	assert_int_equal(item(&ji, "f")->state, PAIRED_UNDECIDED);
	assert_int_equal(item(&jf, "f")->state, PAIRED_SLOWER);
	paired_judgement_release(&ji);
	paired_judgement_release(&jf);
	paired_free(pi);
	paired_free(pf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_looks),
	        cmocka_unit_test(test_look_alpha),
	        cmocka_unit_test(test_final_look_sharper),
	        cmocka_unit_test(test_planted_slowdown),
	        cmocka_unit_test(test_identical_sides),
	        cmocka_unit_test(test_too_few_samples),
	        cmocka_unit_test(test_noisy_rounds_undecided),
	        cmocka_unit_test(test_steady_small_change),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
