/* Exact CPU per task (runner/attribution/cputime.c): the time a task's samples did not cover is counted
 * as [unsampled] samples of its process, in its tests in proportion, or in its exit test. */
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
	uint32_t a = profile_intern(p, "A"), b = profile_intern(p, "B"), proc = profile_intern(p, "x");

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

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_cputime)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
