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
 * of freedom (stats_log_ratio_stat).
 */
struct stats_noise {
	double extra;    /* variance of log(count) per run beyond Poisson sampling */
	double dof;      /* degrees of freedom behind it */
	double raw;      /* the item's own estimate before shrinking (0 when m < 2) */
	double sampling; /* what sampling adds to it a run: a times Poisson's variance at the
	                    item's mean count (0 when m < 2 or it has no samples) */
	double scale;    /* its history's deviations' own scale against the model
	                    (stats_tail_scales; 1 until then) */
	double jump;     /* its history's farthest deviation from its median run, in robust
	                    standard deviations (stats_tail_scales; 0 until then) */
};

#define STATS_PRIOR_DOF 8.0
/*
 * Sampling on a CPU-time clock is not Poisson: the timer ticks evenly through a function that
 * runs for a steady time, so a steady loop's count varies several times less than Poisson's
 * sqrt(n) says, and a model that adds Poisson's variance buries slowdowns of 10-20 % under noise
 * that is not there. The sampling efficiency a is the share of Poisson's variance that sampling
 * really adds, measured from at least STATS_OWN_MIN_RUNS history runs: the trend
 * log V = log(a P + j) of the items' observed variances V against Poisson's P, fitted over the
 * items holding STATS_POOL_MIN_COUNT samples a run by least absolute deviations (a few
 * memory-bound items do not move it), and at most the lower quartile of the items' V / P, each
 * divided by the lower quartile of chi-squared(m - 1) / (m - 1) (a trend is the crowd's, and on
 * a loaded machine the swinging majority puts it near 1 while the steady loops vary a
 * twentieth of Poisson's). 1 for Poisson sampling (and with fewer runs); never below
 * STATS_MIN_EFFICIENCY. Every item's spread is then what a P does not explain, and every test
 * takes a times the sampling variance. ciprof report uses a < 1 only where the history's tails
 * can be fitted too (stats_tail_fit).
 */
#define STATS_OWN_MIN_RUNS   8
#define STATS_MIN_EFFICIENCY 0.05
/* Items with fewer samples per history run than this do not vote for the pooled value. */
#define STATS_POOL_MIN_COUNT 20.0
/* Items from which stats_robust_level starts at their precision-weighted mode rather than
 * their weighted median, and the rounds of stats_run_levels. */
#define STATS_MODE_MIN_ITEMS 10
/* Up to this many items every one's y is a candidate for stats_robust_level's starting mode;
 * beyond, that many spaced in rank and the best one's neighbourhood (stats.c precision_mode). */
#define STATS_MODE_CANDIDATES 512
#define STATS_LEVEL_ROUNDS    4
/* Voting items needed to learn how strongly to shrink toward the pool (else prior_dof). */
#define STATS_PRIOR_MIN_ITEMS 8

/*
 * Fills out[f] for nf items from x[f * m + i] (item f's count in history run i) and total[i]
 * (run i's total count). The pooled value p is fitted on the items holding at least
 * STATS_POOL_MIN_COUNT samples per run: the median of their var(y) / (sampling + p) is put at
 * the median of chi-squared(m - 1) / (m - 1) (default_extra when no item votes, or m < 2; at
 * least floor); it is stored in *pooled when not NULL. With m < 2 every item gets the pooled value
 * and dof = prior_dof. level[i] is run i's level (stats_run_levels) and a the sampling
 * efficiency (stats_sampling_efficiency; 1: Poisson): the Poisson share of each item's
 * variance is taken times a.
 */
void stats_item_noise(const double *x, size_t nf, size_t m, const double *total,
                      const double *level, double a, double prior_dof, double default_extra,
                      double floor, struct stats_noise *out, double *pooled);

/*
 * An item's deviations in each of its m history runs (row: its counts; level: the runs'
 * levels, all their sum), each divided by its modelled spread (noise, plus a times Poisson's
 * sampling variance, from its own mean) and by its own scale (stats_tail_scales): the
 * statistics its tail group's Student's t describes. Fills r[0..m) and returns m, or returns 0
 * for an item with fewer than STATS_POOL_MIN_COUNT samples a run (or no spread).
 */
size_t stats_run_deviations(const double *row, size_t m, const double *level, double all, double a,
                            const struct stats_noise *nz, double *r);

/*
 * How heavy the tails of the history's deviations are. Run-to-run noise is not normal: a
 * loaded machine moves a memory-bound function's time by 20-50 % in one run in twenty while its
 * other runs agree within 3 %, and a variance learned from ten runs cannot say how often. The
 * items' deviations in every history run (those holding STATS_POOL_MIN_COUNT samples a run),
 * each divided by its modelled spread (noise, plus a times Poisson's sampling variance), are
 * pooled (at least STATS_TAIL_MIN of them) and Student's t is fitted to them by maximum
 * likelihood on a grid: *nu its degrees of freedom (infinite: normal) and *scale its scale.
 * A head's t statistic is then judged as t / scale on min(nu, its own degrees of freedom):
 * a quiet machine's history keeps the normal tail (and its power), a noisy one's makes one
 * wild run in twenty no longer a ten-sigma event.
 */
#define STATS_TAIL_MIN 40
/* Returns 1 when fitted, 0 (normal: *nu infinite, *scale 1) with fewer runs or deviations.
 * group < 0 pools every item; else only the items of that stats_tail_group (group 0 takes
 * group 2's too). Each item's deviations are divided by its nz[f].scale (stats_tail_scales;
 * 1 before). */
int stats_tail_fit(const double *x, size_t nf, size_t m, const double *total, const double *level,
                   const struct stats_noise *nz, double a, int group, double *nu, double *scale);

/*
 * Which tail an item is judged with: 1 for an item whose own run-to-run spread is larger than
 * what sampling adds and than STATS_STEADY_CV (memory-bound and branchy code: it swings, and
 * the pooled tail of every item's deviations stays its tail), 0 for one whose counts vary
 * about as sampling says or by at most STATS_STEADY_CV (steady loops). Steady loops do not all tick
 * equally evenly through the timer: one sampling efficiency for all overstates the spread of some
 * of them two- or threefold, and a pool of deviations mixing such narrow items with the swinging
 * ones fits as a heavy tail (t(4), scale 0.58 on a bench history) that takes the steady loops'
 * power. So with at least STATS_TAIL_SCALE_MIN_RUNS history runs each steady item's deviations get
 * their own scale (stats_tail_scales) and the steady items' tail is fitted to their deviations on
 * those scales (stats_tail_fit with group 0); a swinging item keeps the pooled tail (a calm history
 * of 10-30 runs does not show a memory-bound function's next slow mode). 2 for a steady item whose
 * history never jumped (STATS_CLEAN_JUMP, known once stats_tail_scales has looked): judged on the
 * clean items' own tail (stats_tail_fit with group 2; group 0 takes them too).
 */
#define STATS_TAIL_GROUPS         3
#define STATS_TAIL_SCALE_MIN_RUNS 20
/*
 * An item whose own spread is at most this coefficient of variation is steady too, whatever
 * sampling adds. At 4999 Hz, or wherever the timer ticks evenly (a sampling efficiency of
 * 0.05), sampling adds less than 1 % to a 5 % function, so almost no item counted as steady:
 * every one was judged on the pooled tail (t(5), scale 0.68, on bench/verdicts), and +30 % of a
 * function whose history agreed within 2.1 % came out q = 0.0012, not flagged, in 9 of 10
 * heads. Judged again with 0.03, the same heads of nine kept bench runs (1,530; 720 of them
 * A/A) failed the same A/A builds, and found +30 % of that function in 10 of 10
 * (docs/benchmarks.md, "Steady in absolute terms").
 */
#define STATS_STEADY_CV 0.03
/*
 * A steady item whose history never went farther than this many robust standard deviations
 * (1.4826 times the median absolute deviation from its median run, at least half its
 * sampling's) is clean: tail group 2, steady items (group 0 too) with a tail of their own.
 * The steady functions' heavy tail is not everyone's: on a bench history (t(4), scale 0.63) it
 * came from a few loops (sort_ints, rle_compress, popcount) that jumped 6-13 robust standard
 * deviations in a run or two of 30, while crc32, adler32 and fnv1a never went beyond 4; a
 * test of those three, +10 % (q = 0.0015 on that tail), was found in 0 of 16 heads. Judged
 * again on the clean items' own tail, 17 kept bench sessions (2,720 heads) failed the same 21
 * of 1,360 A/A builds and found that test in 34 of 80 heads (before: 18; 13 of 16 on the calm
 * session), +20 % of a steady 5 % function in 111 of 170 (98). docs/benchmarks.md, "Clean
 * steady items".
 */
#define STATS_CLEAN_JUMP 6.0
int stats_tail_group(const struct stats_noise *nz);
/*
 * The steady items' fitted tail has at most this many degrees of freedom. Their spread is
 * learned from runs on the machine as it was; a neighbour arriving during the head moves one
 * steady function by 7-25 % now and then, which a near-normal tail fitted to a calm history
 * (t(20) on one loaded bench session) calls a regression: without a cap three more of that
 * session's A/A heads with a CPU hog failed (fnv1a_loop +7 %, rle_compress +17 %, test_sort's
 * total +14 %). Judged again with caps of 8, 10, 12 and 16, eight kept bench sessions failed
 * the same A/A builds (16 of 640; 19 without a cap); most histories fit 8 or fewer anyway
 * (docs/benchmarks.md, "Levels from the steady functions"). Since 2026-11-27 a head run
 * measures its neighbours (host.other_cpus): one that measured itself quiet
 * (REPORT_QUIET_CPUS) is judged on the fitted tail, uncapped (steady_tail in diff.c).
 */
#define STATS_STEADY_MAX_DOF 12.0
/*
 * With fewer than STATS_TAIL_SCALE_MIN_RUNS history runs a regression fails the build only if it
 * is significant on a tail of at most this many degrees of freedom too: ten to twenty runs
 * rarely hold a function's slow mode, and the tail fitted to them is too light (a memory-bound
 * walk +35-53 % in 5 of 80 A/A heads after a 10-run history that fitted the normal; fib
 * +38-57 % in 3 after 12-18 runs that fitted t(8)-t(10)). Of 26 A/A build failures in 1,520
 * heads of 19 kept bench sessions, 21 came after fewer than 20 runs; judged again with this
 * rule, 6 failed (1 of them after fewer than 20 runs: sieve +76 %), and every planted change was
 * flagged as often as before. Capping the tail itself (6 A/A failures too; with t(6), 10) also
 * costs a short history's report every change under about 15 standard deviations (the unit
 * tests' +30 % of a 5 % function: 0 of 100), so the report still shows those.
 * docs/benchmarks.md, "Short histories".
 */
#define STATS_SHORT_MAX_DOF 4.0

/*
 * Each steady item's (stats_tail_group 0 or 2, STATS_POOL_MIN_COUNT samples a run) own tail scale:
 * nz[f].scale = sqrt((k * prior + S) / (k + m)), S the sum of its m squared deviations as
 * stats_tail_fit standardises them, shrunk toward prior by k = STATS_PRIOR_DOF runs. prior < 0:
 * the mean of S / m over all items holding STATS_POOL_MIN_COUNT samples a run, swinging ones
 * too (for the functions' self times); else the value given (for tests and totals, the
 * functions'). Every other item's scale is 1, and all are 1 with fewer than
 * STATS_TAIL_SCALE_MIN_RUNS runs. Also sets each such item's nz[f].jump (STATS_CLEAN_JUMP).
 * Returns the prior used (1 then).
 */
double stats_tail_scales(const double *x, size_t nf, size_t m, const double *total,
                         const double *level, double a, double prior, struct stats_noise *nz);

/* The sampling efficiency a (above) of history x (as for stats_item_noise) at the runs'
 * levels; 1 with fewer than STATS_OWN_MIN_RUNS runs or 5 items to fit it on. */
double stats_sampling_efficiency(const double *x, size_t nf, size_t m, const double *total,
                                 const double *level);

/*
 * Two-sided p-value for "head count h and base count b come from rates in the ratio c", on the
 * log scale: z = log((h + 1/2) / (c (b + 1/2))) over sqrt(a (1/(h + 1/2) + 1/(b + 1/2)) + extra),
 * judged with Student's t. extra, estimated on dof degrees of freedom, is the uncertain part
 * (sampling variance is known), so the t has Welch-Satterthwaite's effective degrees of
 * freedom dof * (total variance / extra)^2: many where sampling dominates, few where the
 * item's own spread does. extra is everything beyond Poisson
 * sampling: the item's spread for the head run plus for the base (divided by the base runs),
 * plus the suite-wide factor's own variance. h = b = 0 gives 1; c must be > 0.
 */

/* Sampling at efficiency a takes a times that sampling variance (a = 1: Poisson). Also gives
 * the statistic *t and its degrees of freedom *eff, from which a widened p-value is computed
 * again (report/diff.c). */
double stats_log_ratio_stat(double h, double b, double c, double a, double extra, double dof,
                            double *t, double *eff);

/*
 * The suite-wide log factor of one run against an expectation, from the items' log ratios
 * y[0..n), their variances v and weights w (their counts; overwritten): start from the
 * weighted median (each weight capped at a tenth of the sum, so no item decides), keep the
 * items within 3 standard deviations of it, and average those weighted by precision (again
 * capped), three times. *var is its variance: the model's, or the inliers' actual scatter if
 * that is larger; *used the inliers. Returns nan (and *used = 0) with fewer than 3 items.
 * ciprof report's scale factor for the head and each history run's level are this one
 * estimator, so that an item's spread is learned in the terms it is judged in.
 */
double stats_robust_level(const double *y, const double *v, double *w, size_t n, double *var,
                          size_t *used);

/*
 * Each history run's level (its expected count per unit of an item's mean share): run i's
 * total times exp(stats_robust_level) over the items with use[f] set, whose log ratios are
 * taken against their mean share of the history, with variances from a first, median-based
 * pass. x[f * m + i] as for stats_item_noise. With m < 2, level = total.
 */
void stats_run_levels(const double *x, size_t nf, size_t m, const double *total,
                      const unsigned char *use, double a, double *level);

/* The median of x[0..n) (sorts x); nan when n is 0. */
double stats_median(double *x, size_t n);

/* The z with P(|Z| >= z) = p for a standard normal Z (two-sided), 0 < p <= 1. */
double stats_normal_quantile2(double p);

/* The t with P(|T| > t) = p for Student's t with dof degrees of freedom (two-sided;
 * bisection on stats_t_sf2, at most about 1e6). */
double stats_t_quantile2(double p, double dof);

#endif
