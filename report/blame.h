/* report/blame: where a quantity's history changed. One change point in a series of per-run
 * values (CPU seconds of a function or a test over a branch's runs, oldest first): the split
 * with the largest Welch t statistic between the log values before and after it, and how
 * sure that is by a permutation test of that very maximum (so the many candidate splits are
 * paid for). 'ciprof blame' names the commit of the first run after the split. */
#ifndef CP_REPORT_BLAME_H
#define CP_REPORT_BLAME_H

#include <stddef.h>

#define BLAME_SHUFFLES 999 /* permutations for the p-value */

struct report_changepoint {
	size_t at;            /* first index after the change (1 .. n-1); 0 when n < 4 */
	double before, after; /* medians of the values before and after (same unit as x) */
	double change;        /* after / before - 1 */
	double t;             /* |Welch t| of the log values at the split */
	double p;             /* permutation p-value of the max |t| over all splits */
	size_t nbefore, nafter;
};

/*
 * The most likely single change point of x[0..n) (values > 0; zeros and NaN are skipped by
 * the caller). Deterministic: the permutations use a fixed seed. Needs n >= 4 (each side at
 * least 2 values); otherwise out->at = 0 and p = 1.
 */
void report_changepoint(const double *x, size_t n, struct report_changepoint *out);

#endif
