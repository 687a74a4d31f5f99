/* report/diff: what changed between a baseline (one or more base runs, merged) and a head run,
 * per test and per function (self and total CPU time), judged against a suite-wide scale
 * factor with a count test, Benjamini-Hochberg and a minimum effect. Also the two profiles
 * merged into one stack tree, which the flame graphs draw. docs/report.md explains the method. */
#ifndef CP_REPORT_DIFF_H
#define CP_REPORT_DIFF_H

#include "model/profile.h"
#include "report/stats.h"

#include <stddef.h>
#include <stdint.h>

struct report_options {
	double min_change; /* minimum relative change against the scale factor (0.05) */
	double min_share;  /* minimum share of samples, on either side, to be judged (0.005) */
	double alpha;      /* false discovery rate (Benjamini-Hochberg) */
	size_t base_runs;  /* at most this many base runs (5) */
	int head_quiet;    /* the head run measured other processes' CPU under REPORT_QUIET_CPUS
	                      (report_head_quiet): the steady tails are not capped */
	int head_busy;     /* other processes kept more CPUs busy during the head run than during
	                      its history (report_head_busy): a flagged test's functions are not
	                      asked on their own (descend in diff.c) */
	double dispersion; /* the head run's sample dispersion (run_meta_dispersion; 0 or 1: one
	                      period a sample): a function new or gone is judged on its count of
	                      periods divided by it (fill_cmp in diff.c) */
	struct report_levels *levels; /* borrowed, or NULL: the history runs' levels and tails,
	                                 learned by the first diff of a report and taken by the
	                                 others */
};

/*
 * The levels of one history (stats_run_levels over its functions' self times) and the tails
 * fitted to them, kept so that the diffs of every run of the head's commit, judged against the
 * same history, learn them once: they were 85 % of a large report's CPU time (docs/benchmarks.md,
 * "A report of a suite with many functions"). Taken only for the same runs (the same array, as the
 * caller's baseline holds it) and the same weighting. Zero-initialise; report_levels_release frees.
 */
struct report_levels {
	struct profile *const *runs;
	size_t nruns;
	double min_efficiency; /* the weighting stats_run_levels was given */
	double *level;         /* nruns values, or NULL: nothing kept yet */
	/* The tails fitted to those levels (stats_tail_fit: the pooled one at each efficiency
	 * tried, the steady and the clean ones), kept likewise. */
	struct report_tail_fit {
		int group, fitted;
		double a, nu, scale;
	} fit[4];
	size_t nfit;
};
void report_levels_release(struct report_levels *l);

#define REPORT_MIN_CHANGE 0.05
#define REPORT_MIN_SHARE  0.005
#define REPORT_ALPHA      0.001
#define REPORT_BASE_RUNS  5
/* The largest detectable change reported (report_cmp.detectable): +100,000 %, "none". */
#define REPORT_DETECTABLE_MAX 1e3
/* Run-to-run spread beyond sampling noise (the variance of log time per run, about the squared
 * CV): assumed when there is no history to learn it from, a floor when learned. */
#define REPORT_MIN_EXTRA_VARIANCE    1e-4   /* 1 % */
#define REPORT_MIN_MEASURED_VARIANCE 2.5e-5 /* 0.5 % */
/* History runs the noise model needs before a verdict may fail a build. */
#define REPORT_MIN_HISTORY 3
/* A head run during which other processes kept this many more CPUs busy than during the
 * base branch's median history run (or three times the history's spread of it, if more)
 * shared its machine: its verdict cannot fail a build (report_advisory; docs/report.md, "A
 * head on a busy machine"). */
#define REPORT_BUSY_CPUS 0.25
/* A head run during which other processes kept fewer CPUs busy than this had no neighbour the
 * history never saw: its steady items are judged on the tails as the history fitted them, not
 * capped at t(STATS_STEADY_MAX_DOF) (steady_tail in diff.c; docs/report.md, "A quiet head").
 * A steady loop's own rare jump can still be one the history's runs never showed. Calm runs
 * measure 0.00-0.03. */
#define REPORT_QUIET_CPUS 0.1
/* Functions a head run needs for its own spread to be checked against its history (deflate in
 * diff.c); the sub-Poisson sampling model is used only where that check can run. */
#define REPORT_HEAD_CHECK_FUNCTIONS 10

void report_options_init(struct report_options *o);

enum report_kind { REPORT_UNCHANGED = 0, REPORT_REGRESSION = 1, REPORT_IMPROVEMENT = 2 };
enum report_verdict { REPORT_OK = 0, REPORT_REGRESSED = 1, REPORT_IMPROVED = 2 };
/* What an item measures: a test's samples, a function's self samples (it was the leaf), or
 * its total samples (anywhere on the stack, once per stack) minus the samples of functions
 * that are flagged on their own: what is left is what its flagged callees do not explain. */
enum report_measure { REPORT_TEST = 0, REPORT_SELF = 1, REPORT_TOTAL = 2 };

/* Why an item is not judged (cmp.tested == 0); the renderers show it next to the item. */
enum report_context {
	REPORT_JUDGED = 0,
	REPORT_TOO_SMALL,   /* under --min-share on both sides (or too few samples for ab) */
	REPORT_HARNESS,     /* "(outside tests)" while tests were told apart: harness, tools and
	                       the time between tests */
	REPORT_ATTRIBUTION, /* a test new or gone: an attribution change, never a regression */
	REPORT_NOT_CODE,    /* a frame ciprof makes (report_pseudo_frame), not a function */
};

/* The reason for a context, a few words ("harness and tools, ..."); "" for REPORT_JUDGED. */
const char *report_context_reason(enum report_context c);

/*
 * Whether a function name is a frame ciprof itself makes rather than code of the program:
 * "[unsampled]" (CPU time no sample saw), "[unknown]+0x..." and "[anon]+0x..." (addresses in
 * no known object), "[vdso]+0x..." (an unresolved vDSO address), "[unknown]" from imports.
 * These names begin with '[', which no symbol of C, C++, Rust or Go does. Such frames are
 * shown (their time is real) but never judged as functions, nor part of the suite-wide factor.
 */
int report_pseudo_frame(const char *function);

/* One quantity compared between base and head. */
struct report_cmp {
	double base_count;   /* samples, summed over the base runs */
	double head_count;   /* samples of the head run */
	double base_seconds; /* CPU seconds per base run */
	double head_seconds;
	double base_share; /* fraction of the side's samples */
	double head_share;
	double expected; /* head samples if nothing changed: base per run, times the scale */
	double change;   /* head_count / expected - 1 (INFINITY when new) */
	double p, q;     /* p-value and BH-adjusted p-value; 1 when not tested */
	double noise;    /* the item's run-to-run spread used (variance of log time per run) */
	double dof;      /* degrees of freedom behind it */
	int ratio_test;  /* judged by the log-ratio test (both sides have samples) */
	double stat_y;   /* its log ratio, that ratio's variance in the model, and the degrees of */
	double stat_v;   /* freedom of its t (Welch-Satterthwaite) */
	double stat_dof;
	double stat_vb;    /* the part of stat_v the baseline adds (shared by runs of one head) */
	int tail;          /* the history's tail it is judged with (stats_tail_group) */
	double tail_scale; /* and its own scale within it (stats_tail_scales; 1: none) */
	double jump;       /* its history's farthest deviation in robust standard deviations
	                      (stats_noise.jump; 0: not measured) */
	double detectable; /* the smallest slowdown this report could have flagged in it as its
	                      family's only finding (detectable in diff.c; 0: not judged by the
	                      log-ratio test, or an A/B comparison) */
	int tested;        /* judged: share >= min_share on one side, and not an attribution change
	                      (a test new, gone, or "(outside tests)" when tests were attributed)
	                      nor a frame ciprof makes */
	enum report_context context; /* why not, when !tested */
	int significant;             /* q <= alpha and |change| >= min_change */
	enum report_kind kind;
	int gates;     /* a regression that may fail the build: with fewer than
	                  STATS_TAIL_SCALE_MIN_RUNS history runs, only one significant on a tail
	                  of at most t(STATS_SHORT_MAX_DOF) too (see short_history_gate in diff.c) */
	double gate_q; /* the q that decides it (q itself with enough history) */
	/* A function flagged among the functions of this test (borrowed), itself flagged: q is
	 * then within that family (descend in diff.c); NULL: flagged among all the functions,
	 * or not flagged. */
	const char *within;
	/* ciprof ab only (0 otherwise): the standard deviation of the rounds' log head/base
	 * ratios, and whether the item is still undecided (never a change) */
	double spread;
	int undecided;
};

/* A test holding at least REPORT_HOLDER_SHARE of a function's self samples. */
#define REPORT_HOLDER_SHARE 0.25
struct report_holder {
	uint32_t frame; /* tree frame of the function */
	uint32_t test;  /* tree string id of the test's name */
};

struct report_item {
	enum report_measure measure;
	const char *name;   /* borrowed from diff->tree.names */
	const char *module; /* "" for tests */
	struct report_cmp cmp;
	uint32_t frame; /* tree frame of the function; UINT32_MAX for tests */
	uint32_t path;  /* tree node ending its hottest call path; 0 for tests */
};

/*
 * The merged stack tree: names->nodes are the union of both sides' stacks (node 0 = all),
 * frames keyed by (function, module, kind) only. Per node, samples in the subtree (total)
 * and at the node (self): base summed over the base runs, head of the head run.
 */
struct report_tree {
	struct profile *names; /* owned; its samples are unused */
	double *base, *head;   /* per node, subtree totals */
	double *base_self, *head_self;
	int8_t *frame_flag;    /* per frame: +1 regressed, -1 improved (self), 0 */
	uint32_t *child_start; /* children of node n: child[child_start[n] .. child_start[n+1]) */
	uint32_t *child;
};

/* How a `ciprof ab` comparison ran: the renderers head the report with it. */
struct report_ab {
	const char *id;      /* the comparison's id (runs are tagged ab=ID) */
	size_t rounds;       /* complete rounds: one base and one head run each */
	size_t max_rounds;   /* the budget in rounds */
	double seconds;      /* wall time of the rounds */
	const char *stopped; /* why it ended: "decided", "rounds", "seconds", "interrupted" */
	const char *event;   /* what was sampled: "cpu-clock", "instructions", "cycles" */
	size_t undecided;    /* judged items neither changed nor decided the same */
	size_t looks;        /* looks planned; each tested at alpha / looks */
	double dispersion;   /* the runs' mean sample dispersion (profile_stats.dispersion; 1 or
	                        0: a sample stood for one period, as under perf) */
};

struct report_diff {
	struct report_options opts;
	size_t base_runs;                  /* runs merged into the baseline */
	double base_period, head_period;   /* CPU seconds per sample */
	double base_samples, head_samples; /* base summed over runs */
	double base_cpu, head_cpu;         /* CPU seconds; base per run */
	double scale;                      /* suite-wide factor: head time / base time per run */
	double scale_variance;             /* variance of log(scale), added to every test */
	size_t scale_functions;            /* functions the scale was estimated from */
	int scale_estimated;               /* 0: too few functions, scale = 1 */
	double c;                          /* head samples per base sample if unchanged */
	double extra_variance;             /* pooled run-to-run spread of functions (the prior) */
	int extra_estimated;               /* learned from >= 2 history runs (else assumed) */
	size_t history_runs;               /* base-branch runs the noise was learned from */
	double tail_dof, tail_scale;       /* Student's t fitted to the history's deviations
	                                      (stats_tail_fit; infinite and 1: normal) */
	double group_dof[STATS_TAIL_GROUPS], group_scale[STATS_TAIL_GROUPS];
	/* the tail each stats_tail_group is judged with: 0 the steady items' own (see steady_tail
	 * in diff.c), 1 the pooled one, 2 the clean steady items' own */
	double head_spread;      /* variance of log time per item added to every
	                            log-ratio test for a head run noisier than its
	                            history (0: none; see deflate in diff.c) */
	double head_median_z;    /* the head's median |z| over the functions deflate
	                            checks (0: not checked) */
	double history_spread;   /* the largest such median of a history run
	                            (history_spread in diff.c; 0: not measured) */
	double history_ordinary; /* the largest median of a history run not itself in a slow
	                            spell (history_spread in diff.c; 0: not measured) */
	int job_spell;           /* the runs of the head's code moved together beyond the
	                            history (a slow spell lasting them): combined as
	                            their least significant one (job_spell in diff.c) */
	double job_median_z;     /* the median |z| of the functions' mean over those runs
	                            (0: not checked) */
	int head_exit;           /* the head run's exit status (report_note_load; 0: passed) */
	char *head_incomplete;   /* why the head run is incomplete (run_meta_incomplete:
	                            processes the kernel did not follow, a ring that fell
	                            silent; report_note_load; NULL: complete), owned */
	double head_other_cpus;  /* CPUs other processes kept busy during the head
	                            run, and during the median history run that
	                            measured it (NAN: not measured; report_note_load) */
	double history_other_cpus;
	double history_other_spread; /* those history runs' robust spread (1.4826 MAD) */
	double level_variance;       /* variance of the history runs' log CPU level
	                                (how far the whole suite moves run to run) */
	double shift_variance;       /* variance of log time per item added to every
	                                test for a suite-wide move beyond the history's
	                                (0: none; see shift_spread in diff.c) */
	size_t confirm_runs;         /* runs of the head's code its findings had to show in,
	                                itself included (report_diff_new_confirmed; 0: itself
	                                alone) */
	int64_t *confirm_ids;        /* the other ones' run ids (confirm_runs - 1 of them) */
	size_t unrepeated;           /* items this run flagged that another run of its code
	                                did not (short history only: unrepeated in diff.c) */
	double efficiency;           /* the share of Poisson's variance sampling adds
	                                (stats_sampling_efficiency; 1 without history) */
	int tests_attributed;        /* some sample on either side belongs to a named test:
	                                "(outside tests)" is then harness time, not judged */
	/* which tests hold which functions, by frame (descend in diff.c) */
	struct report_holder *holders;
	size_t nholders;
	struct report_item *items; /* sorted: flagged first, biggest change first */
	size_t nitems;
	size_t ntested, nregressed, nimproved;
	size_t ngating; /* regressions that gate (report_cmp.gates) */
	enum report_verdict verdict;
	struct report_tree tree;
	const struct report_ab *ab; /* borrowed; set by ciprof ab (NULL otherwise) */
	char *renamed;              /* modules of the head compared under the base's name for
	                               them (model/rename.h: "NEW as OLD (K of N functions in
	                               common)"; NULL: none), owned, not escaped */
};

/*
 * Compares head with base (base_nruns runs merged). history (may be NULL, nhistory entries)
 * are recent runs of the base branch, one profile each, used only to learn each item's
 * run-to-run spread (stats_item_noise); they need not be the runs merged into base. A module
 * of the head that base has under another file name (a program or library renamed) is compared
 * under base's name (profile_rename_modules; d->renamed says which). *out is owned
 * (report_diff_free). Never fails.
 */
void report_diff_new(struct report_diff **out, const struct profile *base, size_t base_nruns,
                     struct profile *const *history, size_t nhistory, const struct profile *head,
                     const struct report_options *o);
/*
 * The same, with every run of the head's code asked: peers[0..npeers) are the diffs of other
 * runs of the head's commit (report_diff_new against the same baseline and history; their ids
 * in peer_ids, kept in d->confirm_ids). A run of a suite on a shared machine now and then moves
 * one steady function or test by 30-70 % on identical code, so the tails one run is judged on
 * are heavy and a real +30 % of a 5 % function is judged as one such jump might be; a change
 * that every run shows is not one jump. Each judged item's p becomes max(p over the k =
 * npeers + 1 runs)^(k / (1 + (k - 1) rho)) when every run judged it and moved it the same way
 * (else 1): under no change k independent uniform p are all at most x with chance x^k, and the
 * runs share the baseline, whose share rho of the item's variance (stat_vb / stat_v)
 * correlates them. Asked at both of the report's judgements, so that a function flagged only
 * with the other runs' help is taken out of its callers' totals like any flagged function.
 * Only with STATS_TAIL_SCALE_MIN_RUNS history runs; with a shorter history an item stays a
 * finding only if each other run's report flags it the same way (d->unrepeated counts the
 * others, taken back), and a regression fails the build only if it fails each other run's too
 * (short_history_gate). The figures shown stay head's.
 */
void report_diff_new_confirmed(struct report_diff **out, const struct profile *base,
                               size_t base_nruns, struct profile *const *history, size_t nhistory,
                               const struct profile *head, struct report_diff *const *peers,
                               const int64_t *peer_ids, size_t npeers,
                               const struct report_options *o);
void report_diff_free(struct report_diff *d);
/*
 * What another run of the head's commit could decide (ciprof report --need-run): the
 * items this report flags (regressions, then improvements), which a further run confirms or
 * takes back, and the judged items that got slower by at least min_change that max_runs runs
 * could make significant though the runs so far do not. The latter: each item's worst p over
 * the runs so far (its combined p undone: report_diff_new_confirmed) raised to
 * max_runs / (1 + (max_runs - 1) rho), as if every further run moved it at least as far, then
 * Benjamini-Hochberg's step-up in its family (tests, functions) over those best cases with the
 * family's flagged items counted ahead of them. A change a few more runs cannot make significant
 * even then is not worth the CI time. With a history shorter than STATS_TAIL_SCALE_MIN_RUNS runs
 * (runs of one commit are not combined then) only the flagged items: each further run must flag
 * them too. Nothing when the report already asked max_runs runs. Fills idx (room for d->nitems)
 * with the items' indices and returns how many; *flagged of them (the first ones) are flagged.
 */
size_t report_diff_undecided(const struct report_diff *d, size_t max_runs, size_t *idx,
                             size_t *flagged);

/* After items' cmp.kind and significance were set from elsewhere (ciprof ab's paired
 * statistics): recounts regressions and improvements, the verdict, the flame graph's flags and
 * the hottest paths, and sorts the items again (flagged first). */
void report_diff_settle(struct report_diff *d);

/* Seconds per sample of a profile: its period, else 1/hz, else cpu_seconds/samples. */
double report_period(const struct profile *p);

/* Children of node in the tree (owned array, free()), *n of them, ordered by name (then
 * module) when by_name, else by head samples descending (then name). */
uint32_t *report_tree_children(const struct report_tree *t, uint32_t node, int by_name, size_t *n);

/* Short words for JSON and text. */
const char *report_kind_name(enum report_kind k);
const char *report_verdict_name(enum report_verdict v);
const char *report_measure_name(enum report_measure m);

#endif
