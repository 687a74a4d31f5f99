/* The statistics behind ciprof report (and ciprof ab), as pure functions on numbers: a test of
 * two sample counts against an expected rate ratio (Poisson likelihood ratio, widened for
 * run-to-run spread), the per-item noise model learned from history, Student's t tail, a
 * weighted median, and Benjamini-Hochberg. docs/report.md explains how they fit together. */
#ifndef CP_REPORT_STATS_H
#define CP_REPORT_STATS_H

#include <stddef.h>

/* P(X > x) for X chi-squared with one degree of freedom. */
double stats_chi2_sf1(double x);

/*
 * Two-sided p-value for "head count h and base count b come from Poisson rates in the ratio
 * c" (mu_h = c * mu_b), by the likelihood-ratio statistic G conditional on h + b, divided by
 * a variance inflation factor: the variance of log(h / (c b)) is 1/mu_h + 1/mu_b under pure
 * Poisson sampling and 1/mu_h + 1/mu_b + extra with run-to-run spread (the item's noise for
 * the head plus for the base runs, see stats_item_noise). Used where one count is 0 (a
 * function new or gone), where the log-ratio test cannot go. Counts may be fractional;
 * h = b = 0 gives 1. c must be > 0.
 */
double stats_rate_test(double h, double b, double c, double extra);

/* The weighted median of x[0..n) with weights w >= 0 (lower median on an exact tie). Items
 * with weight 0 are ignored; returns nan when the weights sum to 0. */
double stats_weighted_median(const double *x, const double *w, size_t n);

/* Benjamini-Hochberg adjusted p-values ("q-values"): q[i] <= alpha for exactly the
 * hypotheses BH rejects at false discovery rate alpha. q may alias p. */
void stats_bh(const double *p, size_t n, double *q);

/* Two-sided p-value of Student's t with dof degrees of freedom: P(|T| >= |t|). dof <= 0 or
 * infinite means the normal distribution. */
double stats_t_sf2(double t, double dof);

/*
 * The per-item noise model. An item (a test, or a function's self or total time) has its own
 * run-to-run spread: steady loops a few percent, memory-bound code several-fold. It is learned
 * on the log scale from the item's counts in m history runs of the same code line, after the
 * run's own total is divided out (a uniformly slower run is no spread), minus what Poisson
 * sampling explains, and shrunk toward the pooled value of all items (prior_dof pseudo-runs):
 *
 *   y_i   = log((x_i + 1/2) / (e_i + 1/2)),  e_i = the item's mean share times run i's level
 *           (its total, corrected by the median of all items' log ratios in that run, so
 *           one item swinging several-fold does not move everyone's expected count)
 *   raw   = var(y) - mean(1 / (e_i + 1/2))            (m - 1 degrees of freedom)
 *   extra = (prior_dof * pooled + (m - 1) * raw) / (prior_dof + m - 1), at least floor;
 *           raw itself when var(y) / (sampling + pooled) is beyond the 99.9th percentile of
 *           chi-squared(m - 1) / (m - 1): spreads differ a hundredfold between items, and
 *           shrinking a memory-bound function halfway to the steady loops' spread would
 *           make its next swing a false alarm
 *   dof   = prior_dof + m - 1
 *
 * The variance is the plain one, not a robust scale (MAD): an item that swings rarely but
 * far must carry that in its spread, or its next swing is a false alarm. Heavy tails and the
 * uncertainty of a spread seen in few runs are met by judging with Student's t on dof degrees
 * of freedom (stats_log_ratio_test).
 */
struct stats_noise {
	double extra; /* variance of log(count) per run beyond Poisson sampling */
	double dof;   /* degrees of freedom behind it */
	double raw;   /* the item's own estimate before shrinking (0 when m < 2) */
};

#define STATS_PRIOR_DOF 8.0
/* Items with fewer samples per history run than this do not vote for the pooled value. */
#define STATS_POOL_MIN_COUNT 20.0

/*
 * Fills out[f] for nf items from x[f * m + i] (item f's count in history run i) and total[i]
 * (run i's total count). The pooled value p is fitted on the items holding at least
 * STATS_POOL_MIN_COUNT samples per run: the median of their var(y) / (sampling + p) is put at
 * the median of chi-squared(m - 1) / (m - 1) (default_extra when no item votes, or m < 2; at
 * least floor); it is stored in *pooled when not NULL. With m < 2 every item gets the pooled value
 * and dof = prior_dof.
 */
void stats_item_noise(const double *x, size_t nf, size_t m, const double *total, double prior_dof,
                      double default_extra, double floor, struct stats_noise *out, double *pooled);

/*
 * Two-sided p-value for "head count h and base count b come from rates in the ratio c", on the
 * log scale: z = log((h + 1/2) / (c (b + 1/2))) over sqrt(1/(h + 1/2) + 1/(b + 1/2) + extra),
 * judged with Student's t. extra, estimated on dof degrees of freedom, is the uncertain part
 * (sampling variance is known), so the t has Welch-Satterthwaite's effective degrees of
 * freedom dof * (total variance / extra)^2: many where sampling dominates, few where the
 * item's own spread does. extra is everything beyond Poisson
 * sampling: the item's spread for the head run plus for the base (divided by the base runs),
 * plus the suite-wide factor's own variance. h = b = 0 gives 1; c must be > 0.
 */
double stats_log_ratio_test(double h, double b, double c, double extra, double dof);

#endif
