/* The statistics behind ciprof report, as pure functions on numbers: a test of two sample
 * counts against an expected rate ratio (Poisson likelihood ratio, widened for run-to-run
 * spread), the run-to-run spread itself, a weighted median, and Benjamini-Hochberg. */
#ifndef CP_REPORT_STATS_H
#define CP_REPORT_STATS_H

#include <stddef.h>

/* P(X > x) for X chi-squared with one degree of freedom. */
double stats_chi2_sf1(double x);

/*
 * Two-sided p-value for "head count h and base count b come from Poisson rates in the ratio
 * c" (mu_h = c * mu_b), by the likelihood-ratio statistic G conditional on h + b, divided by
 * a variance inflation factor: the variance of log(h / (c b)) is 1/mu_h + 1/mu_b under pure
 * Poisson sampling and 1/mu_h + 1/mu_b + extra with run-to-run spread (extra = alpha * (1 +
 * 1/k) for k base runs, see stats_extra_variance). Counts may be fractional; h = b = 0 gives
 * 1. c must be > 0.
 */
double stats_rate_test(double h, double b, double c, double extra);

/*
 * The run-to-run spread of counts beyond Poisson sampling, as alpha in var(x) = mu + alpha *
 * mu^2 (alpha = CV^2 of the true per-run count): a method-of-moments estimate pooled over
 * nf items (functions) seen in m >= 2 runs. x[f * m + i] is item f's count in run i, total[i]
 * the run's total count (expected counts follow each run's total, so a uniformly slower run
 * adds no spread). Returns alpha >= 0 (0 when m < 2 or nothing was counted) and, when se is
 * not NULL, the estimate's standard error in *se.
 */
double stats_extra_variance(const double *x, size_t nf, size_t m, const double *total, double *se);

/* The weighted median of x[0..n) with weights w >= 0 (lower median on an exact tie). Items
 * with weight 0 are ignored; returns nan when the weights sum to 0. */
double stats_weighted_median(const double *x, const double *w, size_t n);

/* Benjamini-Hochberg adjusted p-values ("q-values"): q[i] <= alpha for exactly the
 * hypotheses BH rejects at false discovery rate alpha. q may alias p. */
void stats_bh(const double *p, size_t n, double *q);

#endif
