/* report/trend: the base branch's recent history behind the Markdown trend charts: the suite's
 * CPU seconds and each flagged function's, over the baseline branch's last runs up to the
 * newest run of the baseline, plus the head run itself as the last point. */
#include "report/report.h"
#include "common/error.h"
#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define TREND_FUNCTIONS 3 /* flagged functions charted besides the suite */

void report_trend_release(struct report_trend *t)
{
	report_history_release(&t->hist);
	free(t->items);
	memset(t, 0, sizeof(*t));
}

int report_trend_load(struct store *s, const struct report *r, size_t n, struct report_trend *out)
{
	memset(out, 0, sizeof(*out));
	report_history_init(&out->hist);
	const struct report_diff *d = r->diff;
	if (!d || !r->base->n || !*r->base->branch || !n)
		return 0;
	out->items = xcalloc(TREND_FUNCTIONS, sizeof(*out->items));
	struct report_quantity q[1 + TREND_FUNCTIONS] = {{.suite = 1}};
	size_t nq = 1;
	for (size_t i = 0; i < d->nitems && out->nitems < TREND_FUNCTIONS; i++) {
		const struct report_item *it = &d->items[i];
		if (it->measure == REPORT_TEST || it->cmp.kind == REPORT_UNCHANGED)
			continue;
		q[nq++] = (struct report_quantity){it->measure, it->name, it->module, 0};
		out->items[out->nitems++] = it;
	}
	int64_t upto = r->base->ids[r->base->n - 1];
	if (report_history_load(s, r->base->branch, upto, n, q, nq, &out->hist) < 0)
		goto fail;
	/* The head run as the last point, measured the same way. */
	struct profile *p = NULL;
	if (store_load_profile(s, r->head->id, NULL, &p) < 0)
		goto fail;
	struct report_history *h = &out->hist;
	h->points = xrealloc(h->points, (h->n + 1) * sizeof(*h->points));
	struct report_point *pt = &h->points[h->n++];
	pt->run = r->head->id;
	pt->commit = xstrdup(r->head->commit);
	pt->subject = xstrdup(r->head->subject);
	pt->value = xcalloc(nq, sizeof(double));
	report_quantities(p, q, nq, pt->value);
	profile_free(p);
	return 0;
fail:
	report_trend_release(out);
	return -1;
}
