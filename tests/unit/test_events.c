/* The runner's time-ordered event queue (runner/events.c): events pushed out of order, from
 * several sources, come out oldest first, equal times in arrival order, only up to the limit;
 * the rest wait for a later round; payloads are freed once processed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "runner/events.h"

struct seen {
	uint64_t time[64];
	int tag[64];
	size_t n;
	struct evqueue *q; /* pushes one more event while processing, when set */
};

static void record(void *ctx, const struct run_event *ev)
{
	struct seen *s = ctx;
	s->time[s->n] = ev->time;
	s->tag[s->n] = ev->pid;
	s->n++;
	if (ev->data)
		assert_string_equal(ev->data, "payload");
	if (s->q) {
		struct run_event late = {.time = 1, .kind = RUN_EV_EXIT, .pid = 99};
		evqueue_push(s->q, &late);
		s->q = NULL;
	}
}

static void push(struct evqueue *q, uint64_t time, int tag)
{
	struct run_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.time = time;
	ev.kind = RUN_EV_SAMPLE;
	ev.pid = tag;
	ev.data = xstrdup("payload"); /* owned by the queue: freed after processing */
	evqueue_push(q, &ev);
}

static void test_order(void **state)
{
	(void)state;
	struct evqueue q;
	struct seen s = {0};
	evqueue_init(&q);
	/* Two sources (CPUs), each in order, read one after the other. */
	push(&q, 10, 1);
	push(&q, 30, 2);
	push(&q, 50, 3);
	push(&q, 20, 4);
	push(&q, 30, 5); /* same time as tag 2: after it, as it arrived later */
	push(&q, 60, 6);
	assert_int_equal(evqueue_take_newest(&q), 60);
	assert_int_equal(evqueue_take_newest(&q), 0);

	/* A round processes up to the previous round's newest time only. */
	assert_int_equal(evqueue_process(&q, 30, record, &s), 4);
	int want1[] = {1, 4, 2, 5};
	uint64_t t1[] = {10, 20, 30, 30};
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(s.tag[i], want1[i]);
		assert_int_equal(s.time[i], t1[i]);
	}
	assert_int_equal(q.n, 2);

	/* A later round: an event older than those waiting goes first. */
	push(&q, 40, 7);
	s.q = &q; /* the first event processed pushes another: it waits */
	assert_int_equal(evqueue_process(&q, UINT64_MAX, record, &s), 3);
	int want2[] = {7, 3, 6};
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(s.tag[4 + i], want2[i]);
	assert_int_equal(q.n, 1);
	assert_int_equal(q.ev[0].pid, 99);
	assert_int_equal(evqueue_process(&q, 0, record, &s), 0);
	assert_int_equal(evqueue_process(&q, 1, record, &s), 1);
	assert_int_equal(s.tag[7], 99);

	/* Events left at the end are freed with the queue. */
	push(&q, 5, 8);
	evqueue_release(&q);
	assert_int_equal(q.n, 0);
}

/* Checks that events come out in (time, arrival) order; arrival is the pid. */
struct order {
	uint64_t time;
	int tag;
	size_t n;
};

static void check_order(void *ctx, const struct run_event *ev)
{
	struct order *o = ctx;
	assert_true(ev->time > o->time || (ev->time == o->time && ev->pid > o->tag));
	o->time = ev->time;
	o->tag = ev->pid;
	o->n++;
}

/* Many events from many sources, each round's in random order with times overlapping the
 * next round's: every one comes out once, in (time, arrival) order, across rounds. */
static void test_many(void **state)
{
	(void)state;
	struct evqueue q;
	struct order o = {0, -1, 0};
	evqueue_init(&q);
	srand(7);
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 100; i++) {
			struct run_event ev;
			memset(&ev, 0, sizeof(ev));
			ev.time = (uint64_t)(round * 50 + rand() % 100);
			ev.pid = round * 100 + i; /* arrival order */
			evqueue_push(&q, &ev);
		}
		/* Later rounds bring nothing older than round * 50 + 50. */
		size_t before = q.n, due = 0;
		for (size_t i = 0; i < q.n; i++)
			due += q.ev[i].time < (uint64_t)(round * 50 + 50);
		assert_int_equal(evqueue_process(&q, (uint64_t)(round * 50 + 49), check_order, &o),
		                 due);
		assert_int_equal(q.n, before - due);
	}
	evqueue_process(&q, UINT64_MAX, check_order, &o);
	assert_int_equal(o.n, 2000);
	assert_int_equal(q.n, 0);
	evqueue_release(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_order),
	                                   cmocka_unit_test(test_many)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
