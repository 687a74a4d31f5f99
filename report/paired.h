/* report/paired: the statistics of `ciprof ab`. Base and head run in rounds on one machine;
 * each round gives, per test and per function (self time), a head/base ratio. The spread of
 * those ratios across rounds is the item's noise, measured here and now: a paired t test. After
 * each planned look an item is decided slower/faster (a test on the mean log ratio,
 * Benjamini-Hochberg across items, the report's minimum change), decided the same (equivalence: the
 * whole confidence interval within the minimum change), or undecided. The error budget is spent
 * over the looks (Bonferroni): a fifth of it split over the interim looks, the rest, and whatever
 * interim looks were not taken, at the final one, so stopping at the first look where everything is
 * decided keeps the error rates while the comparison that runs to its end keeps most of its power.
 * docs/ab.md explains the method. */
#ifndef CP_REPORT_PAIRED_H
#define CP_REPORT_PAIRED_H

#include "model/profile.h"
#include "report/diff.h"

#include <stddef.h>

/* The first look at the rounds is after this many (two ABBA blocks). */
#define PAIRED_MIN_ROUNDS 4
/* An item is judged only with at least this many samples a round on one side. */
#define PAIRED_MIN_SAMPLES 10
/* Deciding "the same" wrongly misses a change (it ends the comparison early) but never raises
 * a false alarm: it is held to this error rate per item, divided over the looks. */
#define PAIRED_SAME_ALPHA 0.05
/* The share of the error budget (alpha, and PAIRED_SAME_ALPHA) the interim looks spend
 * together; the final look gets the rest. */
#define PAIRED_INTERIM_SHARE 0.2
/* Default --max-rounds: 20 runs of the suite, the default budget. */
#define PAIRED_MAX_ROUNDS 10

enum paired_state {
	PAIRED_NOT_JUDGED = 0, /* under the minimum share, or PAIRED_MIN_SAMPLES a round */
	PAIRED_UNDECIDED,      /* neither a change nor the same, yet */
	PAIRED_SAME,           /* within the minimum change, decided */
	PAIRED_SLOWER,
	PAIRED_FASTER,
};

struct paired_item {
	enum report_measure measure;       /* REPORT_TEST or REPORT_SELF */
	const char *name, *module;         /* borrowed from the struct paired */
	double base_seconds, head_seconds; /* summed over the rounds */
	double change;                     /* head / base - 1 over the summed time */
	double lo, hi;                     /* confidence interval of change at the look's level */
	double spread;                     /* standard deviation of the rounds' log ratios */
	double p, q;                       /* test of "no change", and BH-adjusted */
	enum paired_state state;
};

struct paired_judgement {
	struct paired_item *items; /* owned; in the order items were first seen */
	size_t n;
	size_t rounds, looks; /* looks: planned */
	double alpha_look;    /* the error this look spends (paired_look_alpha of alpha) */
	size_t ntested, nundecided, nslower, nfaster;
};

struct paired;

/* Heap object (paired_free). */
struct paired *paired_new(void);
void paired_free(struct paired *pa);

/* Adds one round: base's and head's tests and functions (self). Profiles are borrowed. */
void paired_add_round(struct paired *pa, const struct profile *base, const struct profile *head);
size_t paired_rounds(const struct paired *pa);

/* The number of looks planned when at most max_rounds rounds are run: after every second
 * round from PAIRED_MIN_ROUNDS on, and after the last. */
size_t paired_planned_looks(size_t max_rounds);
/* Whether the comparison looks at the data after `rounds` rounds of at most max_rounds. */
int paired_is_look(size_t rounds, size_t max_rounds);

/*
 * The error a look after `rounds` rounds (of at most max_rounds) spends of a budget `total`:
 * an interim look total * PAIRED_INTERIM_SHARE / (planned looks - 1); the final look (final:
 * no round follows, whether the round budget, the time budget or an interrupt ended it)
 * total less what the interim looks before it spent. The looks' errors sum to at most total.
 */
double paired_look_alpha(double total, size_t rounds, size_t max_rounds, int final);

/*
 * Judges every item on the rounds added so far at the error this look spends
 * (paired_look_alpha; final says whether it is the last look), with o's alpha, min_change and
 * min_share. max_rounds is the comparison's round budget. out is filled
 * (paired_judgement_release); its names are borrowed from pa and valid until pa changes or is
 * freed.
 */
void paired_judge(const struct paired *pa, const struct report_options *o, size_t max_rounds,
                  int final, struct paired_judgement *out);
void paired_judgement_release(struct paired_judgement *j);

/*
 * Makes d (a report_diff of the rounds' merged base against the merged head, built with
 * report_diff_new with base_nruns = 1: both sides are sums over j->rounds runs; times are
 * divided back to one run) tell j's story: plain head/base (no suite-wide factor: both sides ran on
 * this machine in the same minutes), tests and self times judged as j decided (undecided ones
 * flagged as such, never as changes), totals left out (not measured per round).
 */
void paired_apply(struct report_diff *d, const struct paired_judgement *j);

#endif
