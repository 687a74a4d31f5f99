/* Statistics for ciprof report: a likelihood-ratio test of two Poisson counts against an
 * expected ratio, widened by run-to-run spread; the per-item noise model and its log-ratio
 * test on Student's t; weighted median; and Benjamini-Hochberg. Pure functions of their
 * arguments, tested in test_report_stats.c. */
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

/* One step of the modified Lentz method: folds the next partial numerator into c and d and
 * returns the factor the fraction's value is multiplied by. */
static double lentz_step(double num, double *c, double *d)
{
	const double tiny = 1e-300;
	*d = 1 + num * *d;
	*c = 1 + num / *c;
	if (fabs(*d) < tiny)
		*d = tiny;
	if (fabs(*c) < tiny)
		*c = tiny;
	*d = 1 / *d;
	return *d * *c;
}

/* The continued fraction of the regularized incomplete beta function I_x(a, b), evaluated by
 * the modified Lentz method; converges quickly for x < (a + 1) / (a + b + 2). */
static double beta_cf(double a, double b, double x)
{
	double c = 1, d = 1 - (a + b) * x / (a + 1);
	if (fabs(d) < 1e-300)
		d = 1e-300;
	d = 1 / d;
	double h = d;
	for (int m = 1; m <= 300; m++) {
		double m2 = 2.0 * m;
		h *= lentz_step(m * (b - m) * x / ((a + m2 - 1) * (a + m2)), &c, &d);
		double delta = lentz_step(-(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1)), &c, &d);
		h *= delta;
		if (fabs(delta - 1) < 1e-14)
			break;
	}
	return h;
}

/* I_x(a, b) for 0 <= x <= 1. */
static double beta_inc(double a, double b, double x)
{
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	double lf = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
	if (x < (a + 1) / (a + b + 2))
		return exp(lf) * beta_cf(a, b, x) / a;
	return 1 - exp(lf) * beta_cf(b, a, 1 - x) / b;
}

double stats_t_sf2(double t, double dof)
{
	if (isnan(t))
		return 1.0;
	t = fabs(t);
	if (!(dof > 0) || isinf(dof) || dof > 1e6)
		return erfc(t / sqrt(2));
	if (isinf(t))
		return 0.0;
	return beta_inc(dof / 2, 0.5, dof / (dof + t * t));
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of chi-squared(nu) / nu: exact for 1 and 2 degrees of freedom, else the
 * Wilson-Hilferty approximation (within 0.5 % from 3 on). */
static double chi2_median_ratio(double nu)
{
	if (nu < 1.5)
		return 0.454936;
	if (nu < 2.5)
		return 0.693147;
	double a = 1 - 2 / (9 * nu);
	return a * a * a;
}

static double median_of(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void stats_item_noise(const double *x, size_t nf, size_t m, const double *total, double prior_dof,
                      double default_extra, double floor, struct stats_noise *out, double *pooled)
{
	double all = 0;
	for (size_t i = 0; i < m; i++)
		all += total[i];
	/* Per voting item: its observed log variance and the part sampling explains. */
	double *vy = xmalloc(st_mult(nf ? nf : 1, sizeof(*vy)));
	double *vs = xmalloc(st_mult(nf ? nf : 1, sizeof(*vs)));
	double *r = xmalloc(st_mult(nf ? nf : 1, sizeof(*r)));
	double *ovar = xcalloc(nf ? nf : 1, sizeof(*ovar)), *osamp = xcalloc(nf ? nf : 1, sizeof(*osamp));
	size_t nv = 0;
	/*
	 * Each run's level: its total count, corrected by the weighted median of the items' log
	 * ratios in that run (weights capped at a tenth), so that one item swinging several-fold
	 * does not move every other item's expected count with it.
	 */
	double *level = xcalloc(m ? m : 1, sizeof(*level));
	if (m >= 2 && all > 0) {
		double *ry = xmalloc(st_mult(nf ? nf : 1, sizeof(*ry)));
		double *rw = xmalloc(st_mult(nf ? nf : 1, sizeof(*rw)));
		for (size_t i = 0; i < m; i++) {
			size_t k = 0;
			double wsum = 0;
			for (size_t f = 0; f < nf; f++) {
				double n = 0;
				for (size_t j = 0; j < m; j++)
					n += x[f * m + j];
				if (n / (double)m < STATS_POOL_MIN_COUNT)
					continue;
				ry[k] = log((x[f * m + i] + 0.5) / (n * total[i] / all + 0.5));
				rw[k] = n;
				wsum += n;
				k++;
			}
			for (size_t j = 0; j < k; j++)
				rw[j] = fmin(rw[j], wsum / 10);
			double med = k >= 3 ? stats_weighted_median(ry, rw, k) : 0;
			level[i] = isfinite(med) ? total[i] * exp(med) : total[i];
			if (!(level[i] > 0))
				level[i] = total[i];
		}
		free(ry);
		free(rw);
	}
	for (size_t f = 0; f < nf; f++) {
		out[f] = (struct stats_noise){0, prior_dof, 0};
		if (m < 2 || !(all > 0))
			continue;
		const double *row = x + f * m;
		double n = 0;
		for (size_t i = 0; i < m; i++)
			n += row[i];
		if (!(n > 0))
			continue;
		double sy = 0, syy = 0, samp = 0;
		for (size_t i = 0; i < m; i++) {
			double e = n * level[i] / all;
			double y = log((row[i] + 0.5) / (e + 0.5));
			sy += y;
			syy += y * y;
			samp += 1 / (e + 0.5);
		}
		double mean = sy / (double)m;
		double var = (syy - (double)m * mean * mean) / (double)(m - 1);
		if (var < 0)
			var = 0;
		samp /= (double)m;
		out[f].raw = var > samp ? var - samp : 0;
		ovar[f] = var;
		osamp[f] = samp;
		if (n / (double)m >= STATS_POOL_MIN_COUNT) {
			vy[nv] = var;
			vs[nv] = samp;
			nv++;
		}
	}
	/*
	 * The pooled spread p: each voting item's var / (samp + p) is chi-squared(m - 1) / (m - 1)
	 * when p is right, so choose p to put their median at that distribution's median (a
	 * median, so the few memory-bound items do not set everyone's spread; the ratio, so
	 * items dominated by sampling neither pull it to 0 nor bias it). The median falls as p
	 * grows: bisect on log p.
	 */
	double pool = default_extra;
	if (nv) {
		double target = chi2_median_ratio((double)(m - 1));
		for (size_t k = 0; k < nv; k++)
			r[k] = vy[k] / vs[k];
		if (median_of(r, nv) <= target) {
			pool = 0;
		} else {
			double lo = 1e-12, hi = 100;
			for (int it = 0; it < 80; it++) {
				double mid = sqrt(lo * hi);
				for (size_t k = 0; k < nv; k++)
					r[k] = vy[k] / (vs[k] + mid);
				if (median_of(r, nv) > target)
					lo = mid;
				else
					hi = mid;
			}
			pool = sqrt(lo * hi);
		}
	}
	if (pool < floor)
		pool = floor;
	double d = m >= 2 ? (double)(m - 1) : 0;
	/* var / (samp + pool) is chi-squared(d) / d for an item like the others: its 99.9th
	 * percentile (Wilson-Hilferty) is where an item stops being one of the crowd. */
	double own = INFINITY;
	if (d > 0) {
		double a = 2 / (9 * d), q = 1 - a + 3.09 * sqrt(a);
		own = q * q * q;
	}
	for (size_t f = 0; f < nf; f++) {
		double e = (prior_dof * pool + d * out[f].raw) / (prior_dof + d);
		/* Spreads differ a hundredfold between items: one whose spread the pool cannot
		 * explain keeps its own. */
		if (ovar[f] > own * (osamp[f] + pool))
			e = out[f].raw;
		out[f].extra = e > floor ? e : floor;
		out[f].dof = prior_dof + d;
	}
	free(vy);
	free(vs);
	free(r);
	free(ovar);
	free(osamp);
	free(level);
	if (pooled)
		*pooled = pool;
}

double stats_log_ratio_test(double h, double b, double c, double extra, double dof)
{
	if (!(h + b > 0) || !(c > 0))
		return 1.0;
	double z = log((h + 0.5) / (c * (b + 0.5)));
	if (!(extra > 0))
		extra = 0;
	double v = 1 / (h + 0.5) + 1 / (b + 0.5) + extra;
	/* Sampling variance is known; only extra is estimated (on dof degrees of freedom):
	 * Welch-Satterthwaite's effective degrees of freedom of the sum. */
	double eff = extra > 0 ? dof * (v / extra) * (v / extra) : INFINITY;
	return stats_t_sf2(z / sqrt(v), eff);
}
