/* report/blame: a single change point by the largest Welch t between the log values before
 * and after a split, its p-value by permutation of the series (the maximum over all splits
 * is compared with the maxima of shuffled series, so the search is accounted for). */
#include "report/blame.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The largest |t| over splits k (2 <= k <= n-2) of y[0..n), and where. */
static double max_t(const double *y, size_t n, size_t *at)
{
	double s = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		s += y[i], ss += y[i] * y[i];
	double best = 0, ls = 0, lss = 0;
	*at = 0;
	for (size_t k = 1; k < n; k++) {
		ls += y[k - 1], lss += y[k - 1] * y[k - 1];
		if (k < 2 || n - k < 2)
			continue;
		double na = (double)k, nb = (double)(n - k);
		double ma = ls / na, mb = (s - ls) / nb;
		double va = fmax(0, (lss - na * ma * ma) / (na - 1));
		double vb = fmax(0, ((ss - lss) - nb * mb * mb) / (nb - 1));
		/* a floor on the spread: identical values would give an infinite t */
		double se = sqrt(va / na + vb / nb + 1e-6 * (1 / na + 1 / nb));
		double t = fabs(mb - ma) / se;
		if (t > best) {
			best = t;
			*at = k;
		}
	}
	return best;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *x, size_t n)
{
	double *c = xmalloc(st_mult(n, sizeof(*c)));
	memcpy(c, x, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_double);
	double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
	free(c);
	return m;
}

static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void report_changepoint(const double *x, size_t n, struct report_changepoint *out)
{
	memset(out, 0, sizeof(*out));
	out->p = 1;
	if (n < 4)
		return;
	double *y = xmalloc(st_mult(n, sizeof(*y)));
	for (size_t i = 0; i < n; i++)
		y[i] = log(x[i]);
	size_t at;
	double t = max_t(y, n, &at);
	if (!at) {
		free(y);
		return;
	}
	out->at = at;
	out->t = t;
	out->nbefore = at;
	out->nafter = n - at;
	out->before = median(x, at);
	out->after = median(x + at, n - at);
	out->change = out->before > 0 ? out->after / out->before - 1 : 0;
	/* How often a shuffled series has a split at least as clear. */
	uint64_t seed = 0x636970726f66ULL; /* "ciprof" */
	size_t ge = 0;
	for (int r = 0; r < BLAME_SHUFFLES; r++) {
		for (size_t i = n - 1; i > 0; i--) {
			size_t j = (size_t)(next(&seed) % (i + 1));
			double tmp = y[i];
			y[i] = y[j];
			y[j] = tmp;
		}
		size_t unused;
		ge += max_t(y, n, &unused) >= t - 1e-12;
	}
	out->p = (double)(ge + 1) / (BLAME_SHUFFLES + 1);
	free(y);
}
