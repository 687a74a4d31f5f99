/* report/history: one quantity's value over a branch's stored runs, oldest first: the suite's
 * CPU seconds, a test's, or a function's (self or total). The Markdown trend charts and
 * 'ciprof blame' read the branch's past through it. */
#ifndef CP_REPORT_HISTORY_H
#define CP_REPORT_HISTORY_H

#include "report/diff.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

/* What a series measures. */
struct report_quantity {
	enum report_measure measure; /* REPORT_TEST: a test (name; "" = the whole suite when
	                                suite is set); REPORT_SELF / REPORT_TOTAL: a function */
	const char *name;            /* borrowed */
	const char *module;          /* borrowed; NULL matches any module */
	int suite;                   /* the whole run's CPU seconds (name is ignored) */
};

struct report_point {
	int64_t run;
	char *commit;  /* owned, full hex */
	char *subject; /* owned */
	double *value; /* one per quantity: CPU seconds in that run, NAN when not measurable */
};

struct report_history {
	struct report_point *points; /* oldest first (owned) */
	size_t n;
	size_t nq; /* quantities per point */
};

void report_history_init(struct report_history *h);
void report_history_release(struct report_history *h);

/*
 * The last n runs of branch with ids up to upto (0 = the newest) whose command passed (exit
 * status 0: a failed or interrupted run measured a part of the suite), oldest first, each with the
 * nq quantities q measured in it (every run's profile is loaded once). 0, or -1 with
 * cp_error set. A branch without runs gives h->n == 0.
 */
int report_history_load(struct store *s, const char *branch, int64_t upto, size_t n,
                        const struct report_quantity *q, size_t nq, struct report_history *h);

/* The nq quantities measured in one profile, into out[0..nq). */
void report_quantities(const struct profile *p, const struct report_quantity *q, size_t nq,
                       double *out);

#endif
