/* The runner's time-ordered event queue (see events.h): a growable array sorted on demand,
 * as records arrive in batches (a round) and are processed in batches. */
#include "runner/events.h"
#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>

void evqueue_init(struct evqueue *q)
{
	memset(q, 0, sizeof(*q));
	q->sorted = 1;
}

void evqueue_release(struct evqueue *q)
{
	for (size_t i = 0; i < q->n; i++)
		free(q->ev[i].data);
	free(q->ev);
	evqueue_init(q);
}

uint64_t evqueue_push(struct evqueue *q, const struct run_event *ev)
{
	ALLOC_GROW(q->ev, q->n + 1, q->alloc);
	struct run_event *e = &q->ev[q->n++];
	*e = *ev;
	e->seq = q->seq++;
	if (e->time > q->newest)
		q->newest = e->time;
	q->sorted = q->n < 2 || (q->sorted && !(e->time < q->ev[q->n - 2].time));
	return e->seq;
}

static int event_cmp(const void *a, const void *b)
{
	const struct run_event *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void evqueue_sort(struct evqueue *q)
{
	if (!q->sorted)
		qsort(q->ev, q->n, sizeof(*q->ev), event_cmp);
	q->sorted = 1;
}

uint64_t evqueue_take_newest(struct evqueue *q)
{
	uint64_t t = q->newest;
	q->newest = 0;
	return t;
}

size_t evqueue_process(struct evqueue *q, uint64_t limit,
                       void (*fn)(void *ctx, const struct run_event *ev), void *ctx)
{
	evqueue_sort(q);
	size_t done = 0;
	while (done < q->n && q->ev[done].time <= limit)
		done++;
	if (!done)
		return 0;
	/* Taken out first: fn may push (and so move the array). */
	struct run_event *batch = xmalloc(st_mult(done, sizeof(*batch)));
	memcpy(batch, q->ev, done * sizeof(*batch));
	memmove(q->ev, q->ev + done, (q->n - done) * sizeof(*q->ev));
	q->n -= done;
	for (size_t i = 0; i < done; i++) {
		fn(ctx, &batch[i]);
		free(batch[i].data);
	}
	free(batch);
	return done;
}
