/* Statistics for ciprof report: a likelihood-ratio test of two Poisson counts against an
 * expected ratio, widened by run-to-run spread; the per-item noise model and its log-ratio
 * test on Student's t; weighted median; and Benjamini-Hochberg. Pure functions of their
 * arguments, tested in test_report_stats.c. */
#include "report/stats.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
		double delta =
		        lentz_step(-(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1)), &c, &d);
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

double stats_median(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double stats_normal_quantile2(double p)
{
	if (!(p < 1))
		return 0;
	if (!(p > 0))
		return INFINITY;
	/* erfc(z / sqrt 2) falls monotonically from 1 at z = 0: bisect (to 1e-12 of 40). */
	double lo = 0, hi = 40;
	for (int i = 0; i < 64; i++) {
		double mid = (lo + hi) / 2;
		if (erfc(mid / sqrt(2)) > p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

double stats_t_quantile2(double p, double dof)
{
	double lo = 0, hi = 1;
	while (stats_t_sf2(hi, dof) > p && hi < 1e6)
		hi *= 2;
	for (int i = 0; i < 100; i++) {
		double mid = (lo + hi) / 2;
		if (stats_t_sf2(mid, dof) > p)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/* The 99.9th percentile of chi-squared(d) / d (Wilson-Hilferty). */
static double chi2_q999_ratio(double d)
{
	double a = 2 / (9 * d), q = 1 - a + 3.09 * sqrt(a);
	return q * q * q;
}

/*
 * The sampling efficiency a (stats.h): the crowd's trend log V = log(a P + j) over the items
 * holding STATS_POOL_MIN_COUNT samples a run (var, samp and n their observed variance of y,
 * Poisson's share and mean count), fitted by least absolute deviations, so a few memory-bound
 * items do not move it, on a coarse grid of log a and log j and then a fine one around the
 * best point. The fit is of medians: it takes log V less the median of log(chi2(d) / d).
 * Clamped to [STATS_MIN_EFFICIENCY, 1]; 1 with fewer than 5 such items.
 */
static double fit_efficiency(const double *var, const double *samp, const double *n, size_t nf,
                             double d)
{
	double *lv = xmalloc(st_mult(nf ? nf : 1, sizeof(*lv)));
	double *pv = xmalloc(st_mult(nf ? nf : 1, sizeof(*pv)));
	size_t nv = 0;
	double mshift = log(chi2_median_ratio(d));
	for (size_t f = 0; f < nf; f++) {
		if (!(samp[f] > 0) || n[f] < STATS_POOL_MIN_COUNT)
			continue;
		pv[nv] = samp[f];
		lv[nv++] = log(fmax(var[f], 1e-12)) - mshift;
	}
	double ta = 1, tj = 0;
	if (nv >= 5) {
		double la = 0, lj = -4, step_a = 3.5 / 39, step_j = 6.5 / 39, best = INFINITY;
		for (int pass = 0; pass < 2; pass++) {
			double ca0 = pass ? la - step_a : -3, cj0 = pass ? lj - step_j : -7;
			double sa = pass ? step_a / 10 : step_a, sj = pass ? step_j / 10 : step_j;
			int na = pass ? 20 : 39, nj = pass ? 20 : 39, edge = 0;
			for (int ia = pass ? 0 : -1; ia <= na; ia++) {
				for (int ij = pass ? 0 : -1; ij <= nj; ij++) {
					double ca = ia < 0 ? 0 : pow(10, ca0 + sa * ia);
					double cj = ij < 0 ? 0 : pow(10, cj0 + sj * ij);
					if (ca == 0 && cj == 0)
						continue;
					double loss = 0;
					for (size_t k = 0; k < nv; k++)
						loss += fabs(lv[k] - log(ca * pv[k] + cj));
					if (loss < best) {
						best = loss;
						ta = ca;
						tj = cj;
						edge = ia < 0 || ij < 0;
					}
				}
			}
			if (edge)
				break; /* a or j is 0: no finer grid around it */
			la = log10(ta);
			lj = log10(tj);
		}
	}
	/* Sampling adds about as much to every item, and no more than the item's counts vary in
	 * all: a is at most what the steadiest quarter of the items show (their variance over
	 * Poisson's, each divided by the lower quartile of chi-squared(d) / d, so that items all
	 * sampled alike give a itself). The trend above is the crowd's: on a loaded machine the
	 * memory-bound and branchy majority swings, the trend says 0.74 to 1, and the steady
	 * loops, whose counts agree within 1-2 %, were judged with Poisson's 8-9 %. */
	if (nv >= 5) {
		double w = 2 / (9 * d), c = 1 - w - 0.6745 * sqrt(w);
		c = c > 0.05 ? c * c * c : 1.25e-4;
		for (size_t k = 0; k < nv; k++)
			lv[k] = exp(lv[k] + mshift) / pv[k] / c;
		qsort(lv, nv, sizeof(*lv), dbl_cmp);
		double q = lv[(nv - 1) / 4];
		if (q < ta)
			ta = q;
	}
	free(lv);
	free(pv);
	return fmin(1, fmax(STATS_MIN_EFFICIENCY, ta));
}

/* Item f's observed variance of y over the m runs, Poisson's share of it and its mean count
 * per run (all 0 when it has no samples). */
static void item_moments(const double *row, size_t m, const double *level, double all, double *var,
                         double *samp, double *mean_count)
{
	double n = 0;
	for (size_t i = 0; i < m; i++)
		n += row[i];
	*var = *samp = *mean_count = 0;
	if (!(n > 0) || m < 2)
		return;
	double sy = 0, syy = 0, sp = 0;
	for (size_t i = 0; i < m; i++) {
		double e = n * level[i] / all;
		double y = log((row[i] + 0.5) / (e + 0.5));
		sy += y;
		syy += y * y;
		sp += 1 / (e + 0.5);
	}
	double mean = sy / (double)m;
	*var = fmax(0, (syy - (double)m * mean * mean) / (double)(m - 1));
	*samp = sp / (double)m;
	*mean_count = n / (double)m;
}

/* The log-likelihood of r[0..n) under Student's t with nu degrees of freedom and scale s
 * (the normal distribution when nu is infinite). */
static double t_loglik(const double *r, size_t n, double nu, double s)
{
	double ll = -(double)n * log(s);
	if (isinf(nu)) {
		for (size_t i = 0; i < n; i++)
			ll -= 0.5 * (r[i] / s) * (r[i] / s);
		return ll - (double)n * 0.5 * log(2 * M_PI);
	}
	ll += (double)n * (lgamma((nu + 1) / 2) - lgamma(nu / 2) - 0.5 * log(nu * M_PI));
	for (size_t i = 0; i < n; i++)
		ll -= (nu + 1) / 2 * log1p((r[i] / s) * (r[i] / s) / nu);
	return ll;
}

/* Whether an item is judged within group: the clean items (2) are steady (0) too. */
static int in_group(const struct stats_noise *nz, int group)
{
	int g = stats_tail_group(nz);
	return g == group || (group == 0 && g == 2);
}

/* An item's log ratios y[i] over its m runs: count against its mean share of run i's level.
 * Returns their sum. */
static double log_ratios(const double *row, size_t m, const double *level, double all, double *y)
{
	double n = 0, sy = 0;
	for (size_t i = 0; i < m; i++)
		n += row[i];
	for (size_t i = 0; i < m; i++)
		sy += y[i] = log((row[i] + 0.5) / (n * level[i] / all + 0.5));
	return sy;
}

/* The farthest of row's m deviations from its median, on the log scale, in robust standard
 * deviations (at least half of sd, its sampling's). */
static double farthest(const double *row, size_t m, const double *level, double all, double sd)
{
	double *y = xmalloc(st_mult(m, sizeof(*y))), *d = xmalloc(st_mult(m, sizeof(*d)));
	log_ratios(row, m, level, all, y);
	memcpy(d, y, m * sizeof(*d));
	double med = stats_median(d, m);
	for (size_t i = 0; i < m; i++)
		d[i] = fabs(y[i] - med);
	double rs = fmax(1.4826 * stats_median(d, m), 0.5 * sd), far = 0;
	for (size_t i = 0; i < m; i++)
		far = fmax(far, fabs(y[i] - med) / rs);
	free(y);
	free(d);
	return far;
}

size_t stats_run_deviations(const double *row, size_t m, const double *level, double all, double a,
                            const struct stats_noise *nz, double *r)
{
	double var, samp, cnt;
	item_moments(row, m, level, all, &var, &samp, &cnt);
	double v = a * samp + nz->extra;
	if (cnt < STATS_POOL_MIN_COUNT || !(v > 0))
		return 0;
	double sy = log_ratios(row, m, level, all, r);
	/* Deviations from the item's own mean are narrower by (m - 1) / m. */
	double sd = sqrt(v * (double)(m - 1) / (double)m);
	double fs = nz->scale > 0 ? nz->scale : 1;
	for (size_t i = 0; i < m; i++)
		r[i] = (r[i] - sy / (double)m) / sd / fs;
	return m;
}

int stats_tail_fit(const double *x, size_t nf, size_t m, const double *total, const double *level,
                   const struct stats_noise *nz, double a, int group, double *nu, double *scale)
{
	*nu = INFINITY;
	*scale = 1;
	double all = 0;
	for (size_t i = 0; i < m; i++)
		all += total[i];
	if (m < STATS_OWN_MIN_RUNS || !(all > 0))
		return 0;
	double *r = xmalloc(st_mult(st_mult(nf ? nf : 1, m), sizeof(*r)));
	size_t n = 0;
	for (size_t f = 0; f < nf; f++)
		if (group < 0 || in_group(&nz[f], group))
			n += stats_run_deviations(x + f * m, m, level, all, a, &nz[f], r + n);
	int fitted = n >= STATS_TAIL_MIN;
	if (fitted) {
		/* Never below 3 degrees of freedom: a tail of infinite variance (t(1.5), t(2))
		 * excuses any change whatever its size (likely what a clean clone's loaded CI run
		 * hit: +95 % of a steady function at p = 0.014), and on none of 689 verdict-bench
		 * heads did allowing one change an outcome (docs/benchmarks.md). */
		static const double grid[] = {3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 100};
		double best = t_loglik(r, n, INFINITY, 1), bs = 1, bnu = INFINITY;
		for (size_t g = 0; g <= sizeof(grid) / sizeof(grid[0]); g++) {
			double cnu = g < sizeof(grid) / sizeof(grid[0]) ? grid[g] : INFINITY;
			/* The scales 10^(-1 + k / 30), k = 0..60: at a fixed nu the likelihood
			 * rises then falls in log s (its slope, (nu + 1) sum u / (1 + u) - n
			 * with u = r^2 / (nu s^2), falls as s grows), so the first k at which it
			 * stops rising is the row's best: found by bisection, 7 or so
			 * likelihoods instead of 61 (each costs n log1p: a 5,000-function suite
			 * with 30 history runs spent 9 of its report's 21 CPU-s here). */
			int lo = 0, hi = 60;
			while (lo < hi) {
				int mid = (lo + hi) / 2;
				if (t_loglik(r, n, cnu, pow(10, -1 + mid / 30.0)) <
				    t_loglik(r, n, cnu, pow(10, -1 + (mid + 1) / 30.0)))
					lo = mid + 1;
				else
					hi = mid;
			}
			double cs = pow(10, -1 + lo / 30.0);
			double ll = t_loglik(r, n, cnu, cs);
			if (ll > best) {
				best = ll;
				bs = cs;
				bnu = cnu;
			}
		}
		*nu = bnu;
		*scale = bs;
	}
	free(r);
	return fitted;
}

double stats_tail_scales(const double *x, size_t nf, size_t m, const double *total,
                         const double *level, double a, double prior, struct stats_noise *nz)
{
	double all = 0;
	for (size_t i = 0; i < m; i++)
		all += total[i];
	for (size_t f = 0; f < nf; f++)
		nz[f].scale = 1;
	if (m < STATS_TAIL_SCALE_MIN_RUNS || !(all > 0))
		return 1;
	double *ss = xcalloc(nf ? nf : 1, sizeof(*ss));
	unsigned char *has = xcalloc(nf ? nf : 1, 1);
	double pool = 0;
	size_t np = 0;
	for (size_t f = 0; f < nf; f++) {
		double var, samp, cnt;
		item_moments(x + f * m, m, level, all, &var, &samp, &cnt);
		double v = a * samp + nz[f].extra;
		if (cnt < STATS_POOL_MIN_COUNT || !(v > 0))
			continue;
		/* The sum of its squared deviations, var (m - 1), over the variance stats_tail_fit
		 * divides them by, v (m - 1) / m. */
		ss[f] = var * (double)m / v;
		has[f] = stats_tail_group(&nz[f]) != 1;
		nz[f].jump = farthest(x + f * m, m, level, all, sqrt(a * samp));
		pool += ss[f] / (double)m;
		np++;
	}
	if (prior < 0)
		prior = np ? pool / (double)np : 1;
	double k = STATS_PRIOR_DOF;
	for (size_t f = 0; f < nf; f++)
		if (has[f])
			nz[f].scale = sqrt((k * prior + ss[f]) / (k + (double)m));
	free(ss);
	free(has);
	return prior;
}

int stats_tail_group(const struct stats_noise *nz)
{
	if (nz->extra > fmax(nz->sampling, STATS_STEADY_CV * STATS_STEADY_CV))
		return 1;
	return nz->jump > 0 && nz->jump <= STATS_CLEAN_JUMP ? 2 : 0;
}

double stats_sampling_efficiency(const double *x, size_t nf, size_t m, const double *total,
                                 const double *level)
{
	double all = 0;
	for (size_t i = 0; i < m; i++)
		all += total[i];
	if (m < STATS_OWN_MIN_RUNS || !(all > 0))
		return 1;
	double *v = xcalloc(nf ? nf : 1, sizeof(*v)), *sp = xcalloc(nf ? nf : 1, sizeof(*sp));
	double *n = xcalloc(nf ? nf : 1, sizeof(*n));
	for (size_t f = 0; f < nf; f++)
		item_moments(x + f * m, m, level, all, &v[f], &sp[f], &n[f]);
	double a = fit_efficiency(v, sp, n, nf, (double)(m - 1));
	free(v);
	free(sp);
	free(n);
	return a;
}

/*
 * Each run's level by the median: its total count, corrected by the weighted median of the
 * items' log ratios in that run (by_count: weighted by their counts, each weight capped at a
 * tenth; else one vote an item), so that one item swinging
 * several-fold does not move every other item's expected count with it. Items without use
 * (when use is not NULL) or under STATS_POOL_MIN_COUNT samples a run do not vote.
 */
static void median_levels(const double *x, size_t nf, size_t m, const double *total, double all,
                          const unsigned char *use, int by_count, double *level)
{
	for (size_t i = 0; i < m; i++)
		level[i] = total[i];
	if (m < 2 || !(all > 0))
		return;
	double *ry = xmalloc(st_mult(nf ? nf : 1, sizeof(*ry)));
	double *rw = xmalloc(st_mult(nf ? nf : 1, sizeof(*rw)));
	for (size_t i = 0; i < m; i++) {
		size_t k = 0;
		double wsum = 0;
		for (size_t f = 0; f < nf; f++) {
			double n = 0;
			for (size_t j = 0; j < m; j++)
				n += x[f * m + j];
			if ((use && !use[f]) || n / (double)m < STATS_POOL_MIN_COUNT)
				continue;
			ry[k] = log((x[f * m + i] + 0.5) / (n * total[i] / all + 0.5));
			rw[k] = by_count ? n : 1;
			wsum += rw[k];
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

/* The sum of the items' capped normal densities at `at` (precision_mode). */
static double mode_score(const double *y, const double *v, const double *h, size_t n, double at)
{
	double sc = 0;
	for (size_t j = 0; j < n; j++)
		if (v[j] > 0)
			sc += h[j] * exp(-0.5 * (at - y[j]) * (at - y[j]) / v[j]);
	return sc;
}

/*
 * Where the items agree most tightly: the y[c] that maximises the sum of the items' normal
 * densities at it, each at its own variance and with its height capped at a tenth of all
 * heights (so that no one precise item decides). A start for stats_robust_level: when a third
 * of the functions (memory-bound walks, string scans) swing together by 20 % in one run, their
 * weighted median sits between them and the steady ones, and the inlier window, narrow for the
 * steady ones, then keeps the swinging ones instead.
 *
 * Every item's y is a candidate up to STATS_MODE_CANDIDATES items. Beyond, trying each costs
 * n^2 densities (20,000 functions: 4e8 a run and round, 466 CPU-s for one report of three head
 * runs against 10 history runs): the candidates are then that many y's evenly spaced in rank,
 * and every item between the best one's two neighbours, about n (K + 2n / K) densities. The
 * mode is only the iterations' start.
 */
static double precision_mode(const double *y, const double *v, size_t n)
{
	double *h = xmalloc(st_mult(n ? n : 1, sizeof(*h)));
	double hs = 0;
	for (size_t j = 0; j < n; j++)
		hs += h[j] = v[j] > 0 ? 1 / sqrt(v[j]) : 0;
	for (size_t j = 0; j < n; j++)
		h[j] = fmin(h[j], hs / 10);
	double best = -1, at = NAN;
	if (n <= STATS_MODE_CANDIDATES) {
		for (size_t c = 0; c < n; c++) {
			double sc = mode_score(y, v, h, n, y[c]);
			if (sc > best) {
				best = sc;
				at = y[c];
			}
		}
		free(h);
		return at;
	}
	double *sy = xmalloc(st_mult(n, sizeof(*sy)));
	memcpy(sy, y, n * sizeof(*sy));
	qsort(sy, n, sizeof(*sy), dbl_cmp);
	size_t k = STATS_MODE_CANDIDATES, bi = 0;
	for (size_t g = 0; g < k; g++) {
		size_t r = g * (n - 1) / (k - 1);
		double sc = mode_score(y, v, h, n, sy[r]);
		if (sc > best) {
			best = sc;
			at = sy[r];
			bi = g;
		}
	}
	size_t lo = bi ? (bi - 1) * (n - 1) / (k - 1) : 0;
	size_t hi = bi + 1 < k ? (bi + 1) * (n - 1) / (k - 1) : n - 1;
	for (size_t r = lo; r <= hi; r++) {
		double sc = mode_score(y, v, h, n, sy[r]);
		if (sc > best) {
			best = sc;
			at = sy[r];
		}
	}
	free(sy);
	free(h);
	return at;
}

double stats_robust_level(const double *y, const double *v, double *w, size_t n, double *var,
                          size_t *used)
{
	*var = 0;
	*used = 0;
	if (n < 3)
		return NAN;
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += w[i];
	for (size_t i = 0; i < n; i++)
		w[i] = fmin(w[i], sum / 10);
	double ls = n >= STATS_MODE_MIN_ITEMS ? precision_mode(y, v, n)
	                                      : stats_weighted_median(y, w, n);
	for (int iter = 0; iter < 3 && isfinite(ls); iter++) {
		double su = 0;
		size_t in = 0;
		for (size_t i = 0; i < n; i++) {
			int inlier = fabs(y[i] - ls) <= 3 * sqrt(v[i]);
			w[i] = inlier ? 1 / v[i] : 0;
			su += w[i];
			in += (size_t)inlier;
		}
		if (in < 3)
			break;
		double num = 0, den = 0, mv = 0, emp = 0;
		for (size_t i = 0; i < n; i++) {
			w[i] = fmin(w[i], su / 10);
			num += w[i] * y[i];
			den += w[i];
		}
		ls = num / den;
		/* The model's variance, or the items' actual scatter if that is larger (run-to-run
		 * noise is correlated between a function and its callees). */
		for (size_t i = 0; i < n; i++) {
			mv += w[i] * w[i] * v[i];
			emp += w[i] * w[i] * (y[i] - ls) * (y[i] - ls);
		}
		emp *= (double)in / (double)(in - 1);
		*var = fmax(mv, emp) / (den * den);
		*used = in;
	}
	if (!isfinite(ls) || *used < 3) {
		*var = 0;
		*used = 0;
		return NAN;
	}
	return ls;
}

/*
 * Rounds of: each voting item's variance around the levels, then each run's level by
 * stats_robust_level with those variances (sampling's share at efficiency a). Returns how well
 * the final levels explain the items: the sum over voting items of -log(variance), the
 * profile log-likelihood of levels under which each item has its own spread.
 */
static double refine_levels(const double *x, size_t nf, size_t m, const double *total, double all,
                            const unsigned char *use, double a, int rounds, double *level,
                            double *mean, double *ov, double *y, double *v, double *w)
{
	double fit = 0;
	for (int round = 0; round <= rounds; round++) {
		double lall = 0;
		for (size_t i = 0; i < m; i++)
			lall += level[i];
		fit = 0;
		for (size_t f = 0; f < nf; f++) {
			const double *row = x + f * m;
			double n = 0, sy = 0, syy = 0;
			for (size_t i = 0; i < m; i++)
				n += row[i];
			mean[f] = n / (double)m;
			for (size_t i = 0; i < m; i++) {
				double e = n * level[i] / lall;
				double yy = log((row[i] + 0.5) / (e + 0.5));
				sy += yy;
				syy += yy * yy;
			}
			double mu = sy / (double)m;
			ov[f] = fmax((syy - (double)m * mu * mu) / (double)(m - 1), 0);
			if (!(use && !use[f]) && mean[f] >= STATS_POOL_MIN_COUNT)
				fit -= log(fmax(ov[f], a / (mean[f] + 0.5)) + 1e-9);
		}
		if (round == rounds)
			break;
		for (size_t i = 0; i < m; i++) {
			size_t k = 0;
			for (size_t f = 0; f < nf; f++) {
				if ((use && !use[f]) || !(x[f * m + i] > 0) ||
				    mean[f] < STATS_POOL_MIN_COUNT)
					continue;
				double e = mean[f] * (double)m * total[i] / all;
				y[k] = log((x[f * m + i] + 0.5) / (e + 0.5));
				v[k] = fmax(ov[f], a / (e + 0.5)) + 1e-9;
				w[k] = mean[f];
				k++;
			}
			double var;
			size_t used;
			double ls = stats_robust_level(y, v, w, k, &var, &used);
			if (isfinite(ls))
				level[i] = total[i] * exp(ls);
		}
	}
	return fit;
}

void stats_run_levels(const double *x, size_t nf, size_t m, const double *total,
                      const unsigned char *use, double a, double *level)
{
	double all = 0;
	for (size_t i = 0; i < m; i++)
		all += total[i];
	median_levels(x, nf, m, total, all, use, 1, level);
	if (m < 2 || !(all > 0))
		return;
	/*
	 * Two starts, the better explanation kept. When part of the suite moves together from
	 * run to run (memory-bound code slowed by a neighbour), either part can be "the level"
	 * and the other then swings around it; the weighted median follows the part with more
	 * samples, the plain median the part with more items. Each is refined, and the levels
	 * under which the items' spreads are smallest (most items steady) are the run's levels.
	 */
	double *mean = xcalloc(nf ? nf : 1, sizeof(*mean)), *ov = xcalloc(nf ? nf : 1, sizeof(*ov));
	double *y = xmalloc(st_mult(nf ? nf : 1, sizeof(*y)));
	double *v = xmalloc(st_mult(nf ? nf : 1, sizeof(*v)));
	double *w = xmalloc(st_mult(nf ? nf : 1, sizeof(*w)));
	double *alt = xmalloc(st_mult(m, sizeof(*alt)));
	/* Spreads from fewer than STATS_OWN_MIN_RUNS runs cannot say which items are steady
	 * (with three runs, levels can be found that fit any one item exactly): one round from
	 * the weighted median. */
	int own = m >= STATS_OWN_MIN_RUNS;
	double fit = refine_levels(x, nf, m, total, all, use, a, own ? STATS_LEVEL_ROUNDS : 1,
	                           level, mean, ov, y, v, w);
	if (own) {
		median_levels(x, nf, m, total, all, use, 0, alt);
		double fit2 = refine_levels(x, nf, m, total, all, use, a, STATS_LEVEL_ROUNDS, alt,
		                            mean, ov, y, v, w);
		if (fit2 > fit)
			memcpy(level, alt, m * sizeof(*level));
	}
	free(alt);
	free(mean);
	free(ov);
	free(y);
	free(v);
	free(w);
}

/* The trigamma function (the variance of log of a chi-squared(2x) / 2x is psi'(x)), x > 0:
 * the recurrence up to 6, then the asymptotic series. */
static double trigamma(double x)
{
	double acc = 0;
	for (; x < 6; x += 1)
		acc += 1 / (x * x);
	double x2 = 1 / (x * x);
	return acc + 1 / x + x2 / 2 +
	       x2 / x * (1.0 / 6 - x2 * (1.0 / 30 - x2 * (1.0 / 42 - x2 / 30)));
}

/*
 * How much an item's spread is shrunk toward the pool, as degrees of freedom of the prior
 * (at most max_dof): from how far the voting items' spreads really differ. log(var / (samp +
 * pool)) scatters by trigamma(d / 2) between items of one spread measured on d degrees of
 * freedom; what the items scatter beyond that (a robust variance: the MAD's) is the spread of
 * their true spreads, trigamma(d0 / 2) for a prior on d0. Items that agree get max_dof; a suite
 * whose steady loops hold 2 % and memory-bound walks 30 % (a thousandfold in variance) gets
 * about one, and each item keeps what its own history says. tmp holds nv doubles.
 */
static double prior_strength(const double *vy, const double *vs, size_t nv, double pool, double d,
                             double max_dof, double *tmp)
{
	size_t k = 0;
	for (size_t i = 0; i < nv; i++)
		if (vy[i] > 0 && vs[i] + pool > 0)
			tmp[k++] = log(vy[i] / (vs[i] + pool));
	if (k < STATS_PRIOR_MIN_ITEMS || !(d > 0))
		return max_dof;
	double med = stats_median(tmp, k);
	for (size_t i = 0; i < k; i++)
		tmp[i] = fabs(tmp[i] - med);
	double mad = 1.4826 * stats_median(tmp, k);
	double tau2 = mad * mad - trigamma(d / 2);
	if (!(tau2 > trigamma(max_dof / 2)))
		return max_dof;
	/* trigamma falls: bisect for trigamma(d0 / 2) = tau2. */
	double lo = 0.01, hi = max_dof;
	for (int it = 0; it < 60; it++) {
		double mid = (lo + hi) / 2;
		if (trigamma(mid / 2) > tau2)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

void stats_item_noise(const double *x, size_t nf, size_t m, const double *total,
                      const double *level, double a, double prior_dof, double default_extra,
                      double floor, struct stats_noise *out, double *pooled)
{
	double all = 0;
	for (size_t i = 0; i < m; i++)
		all += total[i];
	/* Per voting item: its observed log variance and the part sampling explains. */
	double *vy = xmalloc(st_mult(nf ? nf : 1, sizeof(*vy)));
	double *vs = xmalloc(st_mult(nf ? nf : 1, sizeof(*vs)));
	double *r = xmalloc(st_mult(nf ? nf : 1, sizeof(*r)));
	double *ovar = xcalloc(nf ? nf : 1, sizeof(*ovar)),
	       *osamp = xcalloc(nf ? nf : 1, sizeof(*osamp));
	unsigned char *votes = xcalloc(nf ? nf : 1, 1);
	size_t nv = 0;
	for (size_t f = 0; f < nf; f++) {
		out[f] = (struct stats_noise){0, prior_dof, 0, 0, 1, 0};
		if (m < 2 || !(all > 0))
			continue;
		double var, samp, n;
		item_moments(x + f * m, m, level, all, &var, &samp, &n);
		if (!(n > 0))
			continue;
		/* What sampling explains, at the sampling's measured efficiency. */
		samp *= a;
		out[f].raw = var > samp ? var - samp : 0;
		out[f].sampling = samp;
		ovar[f] = var;
		osamp[f] = samp;
		if (n >= STATS_POOL_MIN_COUNT) {
			vy[nv] = var;
			vs[nv] = samp;
			nv++;
			votes[f] = 1;
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
		if (stats_median(r, nv) <= target) {
			pool = 0;
		} else {
			double lo = 1e-12, hi = 100;
			for (int it = 0; it < 80; it++) {
				double mid = sqrt(lo * hi);
				for (size_t k = 0; k < nv; k++)
					r[k] = vy[k] / (vs[k] + mid);
				if (stats_median(r, nv) > target)
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
	double own = d > 0 ? chi2_q999_ratio(d) : INFINITY;
	double d0 = prior_strength(vy, vs, nv, pool, d, prior_dof, r);
	for (size_t f = 0; f < nf; f++) {
		double pd = votes[f] ? d0 : prior_dof;
		double e = (pd * pool + d * out[f].raw) / (pd + d);
		/* Spreads differ a hundredfold between items: one whose spread the pool cannot
		 * explain keeps its own. */
		if (ovar[f] > own * (osamp[f] + pool))
			e = out[f].raw;
		out[f].extra = e > floor ? e : floor;
		out[f].dof = pd + d;
	}
	free(votes);
	free(vy);
	free(vs);
	free(r);
	free(ovar);
	free(osamp);
	if (pooled)
		*pooled = pool;
}

double stats_log_ratio_stat(double h, double b, double c, double a, double extra, double dof,
                            double *t, double *eff)
{
	*t = 0;
	*eff = INFINITY;
	if (!(h + b > 0) || !(c > 0))
		return 1.0;
	double z = log((h + 0.5) / (c * (b + 0.5)));
	if (!(extra > 0))
		extra = 0;
	double v = a * (1 / (h + 0.5) + 1 / (b + 0.5)) + extra;
	/* Sampling variance is known; only extra is estimated (on dof degrees of freedom):
	 * Welch-Satterthwaite's effective degrees of freedom of the sum. */
	*eff = extra > 0 ? dof * (v / extra) * (v / extra) : INFINITY;
	*t = z / sqrt(v);
	return stats_t_sf2(*t, *eff);
}
