/* Statistics for ciprof report: a likelihood-ratio test of two Poisson counts against an
 * expected ratio, widened by run-to-run spread; the spread's estimate; weighted median; and
 * Benjamini-Hochberg. Pure functions of their arguments, tested in test_report_stats.c. */
#include "report/stats.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdlib.h>

double stats_chi2_sf1(double x)
{
	if (!(x > 0))
		return 1.0;
	return erfc(sqrt(x / 2));
}

/* x * log(x / mu), 0 when x is 0. */
static double xlog(double x, double mu)
{
	return x > 0 ? x * log(x / mu) : 0.0;
}

double stats_rate_test(double h, double b, double c, double extra)
{
	double n = h + b;
	if (!(n > 0) || !(c > 0))
		return 1.0;
	/* Maximum likelihood under the null, given n = h + b. */
	double mu_h = n * c / (1 + c), mu_b = n / (1 + c);
	double g = 2 * (xlog(h, mu_h) + xlog(b, mu_b));
	if (!(g > 0))
		return 1.0;
	double vp = 1 / mu_h + 1 / mu_b;
	double inflate = 1 + (extra > 0 ? extra / vp : 0);
	return stats_chi2_sf1(g / inflate);
}

double stats_extra_variance(const double *x, size_t nf, size_t m, const double *total, double *se)
{
	if (se)
		*se = 0;
	if (m < 2)
		return 0;
	double all = 0;
	for (size_t i = 0; i < m; i++)
		all += total[i];
	if (!(all > 0))
		return 0;
	/*
	 * Per item, E[ss] ~ (m-1)/m * sum_i(mu_i + alpha mu_i^2) for ss, the squared deviations
	 * from the counts expected from each run's total; that gives an unbiased estimate a_f of
	 * alpha whose variance is about 2/(m-1) * (alpha + 1/mu)^2 (mu: the item's mean count per
	 * run). Pool the a_f with inverse-variance weights, which needs alpha: iterate from a
	 * start that weighs items by mu^2 (plain pooled moments, the biggest items dominate).
	 */
	double *a = xmalloc(st_mult(nf ? nf : 1, sizeof(*a)));
	double *mu = xmalloc(st_mult(nf ? nf : 1, sizeof(*mu)));
	double *w0 = xmalloc(st_mult(nf ? nf : 1, sizeof(*w0)));
	size_t k = 0;
	for (size_t f = 0; f < nf; f++) {
		const double *row = x + f * m;
		double n = 0;
		for (size_t i = 0; i < m; i++)
			n += row[i];
		if (!(n > 0))
			continue;
		double ss = 0, s1 = 0, s2 = 0;
		for (size_t i = 0; i < m; i++) {
			double e = n * total[i] / all;
			ss += (row[i] - e) * (row[i] - e);
			s1 += e;
			s2 += e * e;
		}
		a[k] = (ss * (double)m / (double)(m - 1) - s1) / s2;
		mu[k] = n / (double)m;
		w0[k] = s2;
		k++;
	}
	double alpha = 0, var = 0;
	for (int iter = 0; iter < 4 && k; iter++) {
		double num = 0, den = 0;
		for (size_t f = 0; f < k; f++) {
			double w =
			        iter == 0 ? w0[f] : 1 / ((alpha + 1 / mu[f]) * (alpha + 1 / mu[f]));
			num += w * a[f];
			den += w;
		}
		double mean = num / den;
		/* Its standard error, from the items' own scatter around it. */
		var = 0;
		for (size_t f = 0; f < k; f++) {
			double w =
			        iter == 0 ? w0[f] : 1 / ((alpha + 1 / mu[f]) * (alpha + 1 / mu[f]));
			var += w * w * (a[f] - mean) * (a[f] - mean);
		}
		var /= den * den;
		alpha = mean > 0 ? mean : 0;
	}
	free(a);
	free(mu);
	free(w0);
	if (se)
		*se = sqrt(var);
	return alpha;
}

struct wm_item {
	double x, w;
};

static int wm_cmp(const void *a, const void *b)
{
	double x = ((const struct wm_item *)a)->x, y = ((const struct wm_item *)b)->x;
	return x < y ? -1 : x > y;
}

double stats_weighted_median(const double *x, const double *w, size_t n)
{
	struct wm_item *it = xmalloc(st_mult(n ? n : 1, sizeof(*it)));
	size_t k = 0;
	double sum = 0;
	for (size_t i = 0; i < n; i++) {
		if (!(w[i] > 0) || isnan(x[i]))
			continue;
		it[k++] = (struct wm_item){x[i], w[i]};
		sum += w[i];
	}
	double med = NAN;
	if (k) {
		qsort(it, k, sizeof(*it), wm_cmp);
		double acc = 0;
		for (size_t i = 0; i < k; i++) {
			acc += it[i].w;
			if (acc >= sum / 2) {
				med = it[i].x;
				break;
			}
		}
	}
	free(it);
	return med;
}

struct bh_item {
	double p;
	size_t i;
};

static int bh_cmp(const void *a, const void *b)
{
	const struct bh_item *x = a, *y = b;
	if (x->p != y->p)
		return x->p < y->p ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

void stats_bh(const double *p, size_t n, double *q)
{
	if (!n)
		return;
	struct bh_item *it = xmalloc(st_mult(n, sizeof(*it)));
	for (size_t i = 0; i < n; i++)
		it[i] = (struct bh_item){isnan(p[i]) ? 1.0 : p[i], i};
	qsort(it, n, sizeof(*it), bh_cmp);
	double run = 1.0;
	for (size_t r = n; r > 0; r--) {
		double v = it[r - 1].p * (double)n / (double)r;
		if (v < run)
			run = v;
		q[it[r - 1].i] = run;
	}
	free(it);
}
