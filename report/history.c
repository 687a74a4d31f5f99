/* report/history: a quantity's CPU seconds over a branch's stored runs. Runs are listed from
 * the store's metadata, then each run's profile is loaded once and every quantity is read off
 * it with profile_functions (self and total) or profile_total (tests). */
#include "report/history.h"
#include "common/error.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void report_history_init(struct report_history *h)
{
	memset(h, 0, sizeof(*h));
}

void report_history_release(struct report_history *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->points[i].commit);
		free(h->points[i].subject);
		free(h->points[i].value);
	}
	free(h->points);
	report_history_init(h);
}

void report_quantities(const struct profile *p, const struct report_quantity *q, size_t nq,
                       double *out)
{
	double period = report_period(p);
	struct profile_func *funcs = NULL;
	size_t nfuncs = 0;
	int have_funcs = 0;
	for (size_t k = 0; k < nq; k++) {
		if (q[k].suite) {
			out[k] = (double)profile_total(p, NULL) * period;
			continue;
		}
		if (q[k].measure == REPORT_TEST) {
			/* a test absent from the run is not measured there, not 0 s */
			if (profile_find_str(p, q[k].name) < 0) {
				out[k] = NAN;
				continue;
			}
			out[k] = (double)profile_total(p, q[k].name) * period;
			continue;
		}
		if (!have_funcs) {
			nfuncs = profile_functions(p, NULL, &funcs);
			have_funcs = 1;
		}
		double sum = 0;
		int found = 0;
		for (size_t i = 0; i < nfuncs; i++) {
			if (strcmp(profile_str(p, funcs[i].function), q[k].name))
				continue;
			if (q[k].module && strcmp(profile_str(p, funcs[i].module), q[k].module))
				continue;
			found = 1;
			sum += (double)(q[k].measure == REPORT_SELF ? funcs[i].self
			                                            : funcs[i].total);
		}
		/* a function never seen in a run that has samples took no time there */
		out[k] = found || profile_total(p, NULL) ? sum * period : NAN;
	}
	free(funcs);
}

int report_history_load(struct store *s, const char *branch, int64_t upto, size_t n,
                        const struct report_quantity *q, size_t nq, struct report_history *h)
{
	struct run_meta *runs = NULL;
	size_t nruns = 0;
	report_history_release(h);
	h->nq = nq;
	if (!n)
		return 0;
	/* Newest first; enough of them to find n at or before upto. */
	if (store_list_runs(s, branch, 0, &runs, &nruns) < 0)
		return -1;
	size_t first = 0;
	while (upto && first < nruns && runs[first].id > upto)
		first++;
	/* The newest n that passed (a failed or interrupted run is a part of the suite, as
	 * report_baseline_select leaves them out), oldest first. */
	size_t *pick = xmalloc(st_mult(n, sizeof(*pick)));
	size_t take = 0;
	for (size_t i = first; i < nruns && take < n; i++)
		if (runs[i].stats.exit_status == 0)
			pick[take++] = i;
	h->points = xcalloc(take ? take : 1, sizeof(*h->points));
	int ret = 0;
	for (size_t i = 0; i < take; i++) {
		const struct run_meta *m = &runs[pick[take - 1 - i]];
		struct report_point *pt = &h->points[h->n];
		struct profile *p = NULL;
		if (store_load_profile(s, m->id, NULL, &p) < 0) {
			ret = -1;
			break;
		}
		pt->run = m->id;
		pt->commit = xstrdup(m->commit);
		pt->subject = xstrdup(m->subject);
		pt->value = xcalloc(nq ? nq : 1, sizeof(double));
		report_quantities(p, q, nq, pt->value);
		profile_free(p);
		h->n++;
	}
	free(pick);
	store_runs_free(runs, nruns);
	return ret;
}
