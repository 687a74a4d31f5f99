/* Exact CPU per task (runner/attribution/cputime.c): the time a task's samples did not cover is
 * counted as [unsampled] samples of its process, in its tests in proportion, or in its exit test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "runner/aggregate.h"
#include "runner/attribution/cputime.h"

#define P 1000 /* the period, ns */

/* Samples of test (a name) counted under an [unsampled] frame so far. */
static uint64_t unsampled(struct aggregator *agg, const char *test)
{
	uint64_t n = 0;
	for (size_t i = 0; i < agg->nsamples; i++) {
		const struct raw_sample *s = &agg->samples[i];
		const struct raw_node *node = &agg->nodes[s->node];
		if (agg->frames[node->frame].dso == RAW_UNSAMPLED &&
		    !strcmp(profile_str(agg->prof, s->test), test))
			n += s->count;
	}
	return n;
}

static void test_cputime(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	struct aggregator agg;
	struct cputime c;
	aggregator_init(&agg, p);
	cputime_init(&c, &agg, P, 2); /* two CPUs: two READs per task */
	uint32_t a = profile_intern(p, "A"), b = profile_intern(p, "B"),
	         proc = profile_intern(p, "x");

	/* task 11: 2 samples in A, 6 in B, 16 periods of CPU: 8 unsampled, split 2:6 */
	for (int i = 0; i < 2; i++)
		cputime_sample(&c, 10, 11, a, 0, proc, P);
	for (int i = 0; i < 6; i++)
		cputime_sample(&c, 10, 11, b, 0, proc, P);
	cputime_exit(&c, 10, 11, b, 0, proc);
	cputime_read(&c, 10, 11, 10 * P);
	assert_int_equal(unsampled(&agg, "B"), 0); /* one of two READs: not yet */
	cputime_read(&c, 10, 11, 6 * P);
	assert_int_equal(unsampled(&agg, "A"), 2);
	assert_int_equal(unsampled(&agg, "B"), 6);

	/* 3 short tasks of 0.4 periods, never sampled, in test A when they exit: 1.2 periods,
	 * one whole sample as soon as it adds up, the rest rounded at the end */
	for (pid_t t = 20; t < 23; t++) {
		cputime_exit(&c, t, t, a, 0, proc);
		cputime_read(&c, t, t, 0);
		cputime_read(&c, t, t, 4 * P / 10);
	}
	assert_int_equal(unsampled(&agg, "A"), 3);

	/* the command itself has no READ: the events' total minus every READ is its own */
	cputime_sample(&c, 5, 5, b, 0, proc, P);
	cputime_exit(&c, 5, 5, b, 0, proc);
	uint64_t reads = c.read_ns;
	cputime_finish(&c, 5, reads + 4 * P);
	assert_int_equal(unsampled(&agg, "B"), 6 + 3);
	assert_int_equal(unsampled(&agg, "A"), 3); /* 0.2 periods left: rounds to none */
	assert_int_equal(c.unsampled_ns, 8 * P + 12 * P / 10 + 3 * P);
	cputime_release(&c);
	aggregator_release(&agg);
	profile_free(p);
}

/* The kernel swapped the command's own perf context into a child, which exited holding it: the
 * child has no READ, the command has READs (of the clone it got). The rest of the events'
 * total is the child's, in its test; with two such children it is neither's (nor the
 * command's, whose count came in its READs). */
static void test_context_holder(void **state)
{
	(void)state;
	for (int two = 0; two < 2; two++) {
		struct profile *p = profile_new();
		struct aggregator agg;
		struct cputime c;
		aggregator_init(&agg, p);
		cputime_init(&c, &agg, P, 2);
		uint32_t none = profile_intern(p, ""), t1 = profile_intern(p, "t1"),
		         t2 = profile_intern(p, "t2"), proc = profile_intern(p, "x");
		/* test t1's process 30: 90 samples, 100 periods of CPU, no READ */
		for (int i = 0; i < 90; i++)
			cputime_sample(&c, 30, 30, t1, 0, proc, P);
		cputime_exit(&c, 30, 30, t1, 0, proc);
		/* test t2's process 31: its READs, or none as well */
		for (int i = 0; i < 9; i++)
			cputime_sample(&c, 31, 31, t2, 0, proc, P);
		cputime_exit(&c, 31, 31, t2, 0, proc);
		if (!two) {
			cputime_read(&c, 31, 31, 6 * P);
			cputime_read(&c, 31, 31, 4 * P);
		}
		/* the command, 5: 2 samples, 3 periods, its READs after its children's */
		for (int i = 0; i < 2; i++)
			cputime_sample(&c, 5, 5, none, 0, proc, P);
		cputime_exit(&c, 5, 5, none, 0, proc);
		cputime_read(&c, 5, 5, 3 * P);
		cputime_read(&c, 5, 5, 0);
		assert_int_equal(unsampled(&agg, ""), 1);
		cputime_finish(&c, 5, 3 * P + 100 * P + 10 * P);
		if (!two) {
			assert_int_equal(unsampled(&agg, "t1"), 10);
			assert_int_equal(unsampled(&agg, "t2"), 1);
			assert_int_equal(unsampled(&agg, ""), 1);
		} else { /* which of the two held it is unknown: not guessed */
			assert_int_equal(unsampled(&agg, "t1"), 0);
			assert_int_equal(unsampled(&agg, "t2"), 0);
			assert_int_equal(unsampled(&agg, ""), 1);
		}
		cputime_release(&c);
		aggregator_release(&agg);
		profile_free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_cputime),
	                                   cmocka_unit_test(test_context_holder)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
