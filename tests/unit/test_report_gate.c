/* report/gate: the rules of --fail-on-regression on real verdicts of synthetic suites. A
 * regression fails the build only with enough history (REPORT_MIN_HISTORY runs; with fewer than
 * STATS_TAIL_SCALE_MIN_RUNS, only one that stands out from a rare jump) and the head's
 * own base (not a fallback), and not on a head run that shared its machine with more work than
 * its history did; an unknown --base is an error with --fail-on-regression and a pass
 * without it; without --fail-on-regression nothing fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/strbuf.h"
#include "report/report.h"
#include "test_report_synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The report on one head run drawn from head against k runs drawn from base (the baseline
 * and the history both), seeded with seed, with options o. */
static struct report_diff *synth_verdict(const struct synth *base, const struct synth *head,
                                         size_t k, uint64_t seed, const struct report_options *o)
{
	struct rng r = {seed};
	struct profile **runs = calloc(k, sizeof(*runs)), *merged;
	synth_base(base, &r, k, runs, &merged);
	struct profile *hp = synth_run(head, &r, 1.0);
	struct report_diff *d;
	report_diff_new(&d, merged, k, runs, k, hp, o);
	for (size_t i = 0; i < k; i++)
		profile_free(runs[i]);
	free(runs);
	profile_free(merged);
	profile_free(hp);
	return d;
}

/* A verdict on k history runs (also the baseline's runs): with slow > 1 the function holding
 * about 10 % of a 10 s suite at 4999 Hz is that much slower in the head. */
static struct report_diff *verdict_on(size_t k, double slow)
{
	struct synth base, head;
	synth_init(&base, 10, 4999);
	base.jitter = 0.01;
	head = base;
	head.factor[synth_func_near(&base, 0.10)] = slow;
	struct report_options o;
	report_options_init(&o);
	return synth_verdict(&base, &head, k, (uint64_t)k * 31 + 7, &o);
}

static void test_regression_fails_with_history(void **state)
{
	(void)state;
	struct report_baseline b;
	report_baseline_init(&b);
	b.n = 5;
	b.at_merge_base = 5;
	struct report_diff *d = verdict_on(5, 1.5);
	assert_int_equal(d->verdict, REPORT_REGRESSED);
	assert_int_equal(d->history_runs, 5);
	char *adv = report_advisory(&b, d);
	assert_null(adv);
	assert_int_equal(report_gate(&b, d, adv, 1), REPORT_GATE_FAIL);
	/* Without --fail-on-regression a regression is reported, not failed. */
	assert_int_equal(report_gate(&b, d, adv, 0), REPORT_GATE_PASS);
	report_diff_free(d);
	/* Identical code: nothing to fail on. */
	d = verdict_on(5, 1.0);
	assert_int_equal(d->verdict, REPORT_OK);
	assert_int_equal(report_gate(&b, d, NULL, 1), REPORT_GATE_PASS);
	report_diff_free(d);
	report_baseline_release(&b);
}

static void test_short_history_is_advisory(void **state)
{
	(void)state;
	struct report_baseline b;
	report_baseline_init(&b);
	for (size_t k = 1; k < REPORT_MIN_HISTORY; k++) {
		b.n = k;
		b.at_merge_base = k;
		struct report_diff *d = verdict_on(k, 1.5);
		assert_int_equal(d->verdict, REPORT_REGRESSED);
		char *adv = report_advisory(&b, d);
		assert_non_null(adv);
		char want[64];
		snprintf(want, sizeof(want), "has %zu run%s to learn", k, k == 1 ? "" : "s");
		assert_non_null(strstr(adv, want));
		assert_int_equal(report_gate(&b, d, adv, 1), REPORT_GATE_PASS);
		free(adv);
		report_diff_free(d);
	}
	/* From REPORT_MIN_HISTORY runs on, a regression that stands out from a rare jump (judged
	 * on a tail of at most t(STATS_SHORT_MAX_DOF)) gates: a 10 % function twice as slow. One
	 * that needs the lighter tail a short history fits (+50 %) is shown, and advisory: the
	 * gate judges tests and functions as one family (short_history_gate in diff.c). */
	b.n = b.at_merge_base = REPORT_MIN_HISTORY;
	struct report_diff *d = verdict_on(REPORT_MIN_HISTORY, 2.0);
	char *adv = report_advisory(&b, d);
	assert_null(adv);
	assert_true(d->ngating > 0);
	assert_int_equal(report_gate(&b, d, adv, 1), REPORT_GATE_FAIL);
	report_diff_free(d);
	d = verdict_on(REPORT_MIN_HISTORY, 1.5);
	assert_int_equal(d->verdict, REPORT_REGRESSED);
	assert_int_equal(d->ngating, 0);
	adv = report_advisory(&b, d);
	assert_non_null(adv);
	assert_non_null(strstr(adv, "fewer than the 20"));
	/* It says how far the strongest one is from gating, and names nothing (a name from a
	 * fork's symbol table would reach every output). */
	double q = 0;
	const char *at = strstr(adv, "the strongest has q = ");
	assert_non_null(at);
	assert_int_equal(sscanf(at, "the strongest has q = %lf", &q), 1);
	assert_true(q > 0.001 && q < 1);
	assert_null(strstr(adv, "f_"));
	assert_int_equal(report_gate(&b, d, adv, 1), REPORT_GATE_PASS);
	free(adv);
	report_diff_free(d);
	report_baseline_release(&b);
}

static void test_fallback_is_advisory(void **state)
{
	(void)state;
	/* No base run at the merge-base: older base runs lack the base branch's latest changes,
	 * which would be blamed on the head. */
	struct report_baseline b;
	report_baseline_init(&b);
	b.n = 5;
	b.fallback = 1;
	struct report_diff *d = verdict_on(5, 1.5);
	assert_int_equal(d->verdict, REPORT_REGRESSED);
	char *adv = report_advisory(&b, d);
	assert_non_null(adv);
	assert_non_null(strstr(adv, "no base run at the merge-base"));
	assert_int_equal(report_gate(&b, d, adv, 1), REPORT_GATE_PASS);
	free(adv);
	report_diff_free(d);
	report_baseline_release(&b);
}

/* A head whose command failed (crashed, interrupted) measured a part of its suite; a head no
 * base run shares a command with measured another suite: either verdict is advisory, said with
 * numbers only (the command's text would reach every output), and cannot fail the build. */
static void test_failed_or_other_head_is_advisory(void **state)
{
	(void)state;
	struct report_baseline b;
	report_baseline_init(&b);
	b.n = 5;
	b.at_merge_base = 5;
	struct report_diff *d = verdict_on(5, 1.5);
	assert_int_equal(d->verdict, REPORT_REGRESSED);
	struct run_meta m;
	run_meta_init(&m);
	run_meta_set(&m.command, "sh -c 'kill -SEGV $$'");
	m.stats.exit_status = 139;
	report_note_load(d, &m, &b);
	char *adv = report_advisory(&b, d);
	assert_non_null(adv);
	assert_non_null(strstr(adv, "exited with status 139"));
	assert_null(strstr(adv, "SEGV"));
	assert_int_equal(report_gate(&b, d, adv, 1), REPORT_GATE_PASS);
	free(adv);
	/* it passed, but no base run ran its command */
	m.stats.exit_status = 0;
	report_note_load(d, &m, &b);
	assert_null(report_advisory(&b, d));
	b.command_differs = 1;
	adv = report_advisory(&b, d);
	assert_non_null(adv);
	assert_non_null(strstr(adv, "no base run ran the head run's command"));
	assert_int_equal(report_gate(&b, d, adv, 1), REPORT_GATE_PASS);
	free(adv);
	run_meta_release(&m);
	report_diff_free(d);
	report_baseline_release(&b);
}

/* A history of n runs whose other processes kept cpus[i] CPUs busy (NAN: not measured), and a
 * head that kept head busy, noted on d as cmd_report does. */
static void note_load(struct report_diff *d, struct report_baseline *b, const double *cpus,
                      size_t n, const char *head)
{
	struct run_meta m;
	run_meta_init(&m);
	if (head)
		run_meta_set_tag(&m, RUN_TAG_OTHER_CPUS, head);
	free(b->other_cpus);
	b->other_cpus = malloc(n * sizeof(*b->other_cpus));
	memcpy(b->other_cpus, cpus, n * sizeof(*cpus));
	b->nruns = n;
	report_note_load(d, &m, b);
	b->nruns = 0; /* its runs are not loaded here */
	run_meta_release(&m);
}

static int quiet_with(const char *tag)
{
	struct run_meta m;
	run_meta_init(&m);
	if (tag)
		run_meta_set_tag(&m, RUN_TAG_OTHER_CPUS, tag);
	int q = report_head_quiet(&m);
	run_meta_release(&m);
	return q;
}

static void test_quiet_head(void **state)
{
	(void)state;
	/* A head run alone on its machine (calm runs measure 0.00-0.03) is quiet; one that shared
	 * it, or that did not measure (imported, or recorded before ciprof measured it), is not. */
	assert_true(quiet_with("0.000"));
	assert_true(quiet_with("0.030"));
	assert_false(quiet_with("0.100"));
	assert_false(quiet_with("0.640"));
	assert_false(quiet_with(NULL));
	assert_false(quiet_with("0.01x"));
	assert_false(quiet_with("nan"));
}

static void test_busy_head_is_advisory(void **state)
{
	(void)state;
	/* Other processes kept a CPU busy during the head run (a neighbour: a CPU hog, another
	 * job), while the history's median run had 0.05: a regression is shown, and advisory. */
	struct report_baseline b;
	report_baseline_init(&b);
	b.n = b.at_merge_base = 5;
	struct report_diff *d = verdict_on(5, 1.5);
	assert_int_equal(d->verdict, REPORT_REGRESSED);
	const double calm[] = {0.05, 0.02, 1.1, NAN, 0.07};
	note_load(d, &b, calm, 5, "1.000");
	assert_float_equal(d->head_other_cpus, 1.0, 1e-9);
	assert_float_equal(d->history_other_cpus, 0.06, 1e-9); /* the median of the four measured */
	char *adv = report_advisory(&b, d);
	assert_non_null(adv);
	assert_non_null(strstr(adv, "other processes kept 1.00 CPUs busy"));
	assert_non_null(strstr(adv, "against 0.06"));
	assert_int_equal(report_gate(&b, d, adv, 1), REPORT_GATE_PASS);
	free(adv);
	/* Within REPORT_BUSY_CPUS of the history's median: the regression gates. */
	note_load(d, &b, calm, 5, "0.300");
	assert_null(report_advisory(&b, d));
	/* A history that always shared its machine (a runner taking two jobs): the head is as
	 * busy as it, and gates. */
	const double busy[] = {0.9, 1.2, 1.0, 0.8, 1.1};
	note_load(d, &b, busy, 5, "1.300");
	assert_float_equal(d->history_other_cpus, 1.0, 1e-9);
	assert_null(report_advisory(&b, d));
	/* Neighbours that come and go (a container on a shared host sees the host's every job):
	 * the bar is three of the history's spread above its median. Spread here 1.4826 x 1. */
	const double shared[] = {3, 5, 4, 6, 2};
	note_load(d, &b, shared, 5, "8.000");
	assert_float_equal(d->history_other_spread, 1.4826, 1e-9);
	assert_null(report_advisory(&b, d)); /* 8 < 4 + 4.45 */
	note_load(d, &b, shared, 5, "8.500");
	adv = report_advisory(&b, d);
	assert_non_null(adv);
	free(adv);
	/* No history run measured it (stored before ciprof measured it): compared with none. */
	const double none[] = {NAN, NAN};
	note_load(d, &b, none, 2, "0.700");
	assert_true(isnan(d->history_other_cpus));
	adv = report_advisory(&b, d);
	assert_non_null(adv);
	assert_non_null(strstr(adv, "against 0.00"));
	free(adv);
	/* A head without the measure, or with a tag that is not a number, is judged as ever. */
	note_load(d, &b, calm, 5, NULL);
	assert_true(isnan(d->head_other_cpus));
	assert_null(report_advisory(&b, d));
	note_load(d, &b, calm, 5, "2.0x");
	assert_true(isnan(d->head_other_cpus));
	assert_null(report_advisory(&b, d));
	report_diff_free(d);
	/* Identical code on a busy head: nothing regressed, nothing to say. */
	d = verdict_on(5, 1.0);
	note_load(d, &b, calm, 5, "1.500");
	assert_null(report_advisory(&b, d));
	report_diff_free(d);
	report_baseline_release(&b);
}

static void test_unknown_base(void **state)
{
	(void)state;
	/* --base names nothing: an error under --fail-on-regression (a typo must not pass every
	 * build), a pass (with a warning, the caller's) without it. */
	struct report_baseline b;
	report_baseline_init(&b);
	b.unknown = 1;
	assert_null(report_advisory(&b, NULL));
	assert_int_equal(report_gate(&b, NULL, NULL, 1), REPORT_GATE_UNKNOWN_BASE);
	assert_int_equal(report_gate(&b, NULL, NULL, 0), REPORT_GATE_PASS);
	/* A known base without runs the head contains is no baseline, and no error. */
	b.unknown = 0;
	assert_int_equal(report_gate(&b, NULL, NULL, 1), REPORT_GATE_PASS);
	report_baseline_release(&b);
}

/* The head's program renamed (suite -> suite_v2), its code unchanged: no function is new or
 * gone, nothing is flagged, and the report says it compared them as renamed; a real +50 %
 * of a renamed program is still found. */
static void test_renamed_program(void **state)
{
	(void)state;
	for (int slow = 0; slow < 2; slow++) {
		struct synth base, head;
		synth_init(&base, 10, 4999);
		base.jitter = 0.01;
		head = base;
		if (slow)
			head.factor[synth_func_near(&base, 0.10)] = 1.5;
		struct rng r = {12345};
		struct profile *runs[8], *merged;
		synth_base(&base, &r, 8, runs, &merged);
		struct profile *hp = synth_run(&head, &r, 1.0);
		char **renamed = calloc(hp->nstr, sizeof(*renamed));
		renamed[profile_find_str(hp, "suite")] = strdup("suite_v2");
		struct profile *moved = profile_new();
		profile_merge_renamed(moved, hp, renamed);
		moved->stats = hp->stats;
		struct report_options o;
		report_options_init(&o);
		struct report_diff *d;
		report_diff_new(&d, merged, 8, runs, 8, moved, &o);
		assert_non_null(d->renamed);
		assert_non_null(strstr(d->renamed, "suite_v2 as suite"));
		assert_int_equal(d->verdict, slow ? REPORT_REGRESSED : REPORT_OK);
		for (size_t i = 0; i < d->nitems; i++)
			if (d->items[i].cmp.significant)
				assert_true(slow);
		report_diff_free(d);
		for (size_t i = 0; i < hp->nstr; i++)
			free(renamed[i]);
		free(renamed);
		for (size_t i = 0; i < 8; i++)
			profile_free(runs[i]);
		profile_free(merged);
		profile_free(hp);
		profile_free(moved);
	}
}

/* The comparison of measure m of the function or test name in d, or NULL. */
static const struct report_cmp *cmp_of(const struct report_diff *d, enum report_measure m,
                                       const char *name)
{
	for (size_t i = 0; i < d->nitems; i++)
		if (d->items[i].measure == m && !strcmp(d->items[i].name, name))
			return &d->items[i].cmp;
	return NULL;
}

/* A history of n runs of base (at most 20) and the baseline of its newest five, merged as
 * report's baseline is. */
struct hist {
	struct profile *runs[20], *all, *merged;
	size_t n;
};

static void hist_init(struct hist *h, const struct synth *base, struct rng *r, size_t n)
{
	h->n = n;
	synth_base(base, r, n, h->runs, &h->all);
	h->merged = profile_new();
	for (size_t i = 0; i < 5; i++) {
		profile_merge(h->merged, h->runs[i]);
		h->merged->stats.samples += h->runs[i]->stats.samples;
		h->merged->stats.cpu_seconds += h->runs[i]->stats.cpu_seconds;
	}
	h->merged->stats.hz = h->runs[0]->stats.hz;
	h->merged->stats.period_ns = h->runs[0]->stats.period_ns;
}

static void hist_free(struct hist *h)
{
	for (size_t i = 0; i < h->n; i++)
		profile_free(h->runs[i]);
	profile_free(h->all);
	profile_free(h->merged);
}

/* A head run of base with fresh periods of function name, which no base run has. */
static struct profile *with_new(const struct synth *base, struct rng *r, const char *name,
                                uint64_t fresh)
{
	struct profile *hp = synth_run(base, r, 1.0);
	if (fresh) {
		uint32_t root = profile_node(hp, 0, syn_frame(hp, "suite", 1));
		uint32_t n = profile_node(hp, root, syn_frame(hp, name, 0));
		profile_add(hp, 0, n, fresh);
		hp->stats.samples += fresh;
	}
	return hp;
}

/*
 * A function new in the head, judged by the count test (nothing to take a log ratio of): 18
 * periods in a 3 CPU-second suite at 999 Hz (0.6 %), none in the five base runs. Sampled one
 * period an event (perf), that is 18 samples of new code, a regression; from the preload
 * backend's coarse timers under load, an event stood for about six periods (the run's
 * host.sample_dispersion tag), three events, which chance gives code that ran as often in the
 * base runs without being caught there.
 */
static void test_new_function_dispersion(void **state)
{
	(void)state;
	for (int coarse = 0; coarse < 2; coarse++) {
		struct synth base;
		synth_init(&base, 3, 999);
		base.jitter = 0.01;
		struct rng r = {777};
		struct hist h;
		hist_init(&h, &base, &r, 10);
		struct profile *hp = with_new(&base, &r, "libuv.so.1+0x1acd6", 18);
		struct report_options o;
		report_options_init(&o);
		o.dispersion = coarse ? 6 : 1;
		struct report_diff *d;
		report_diff_new(&d, h.merged, 5, h.runs, h.n, hp, &o);
		const struct report_cmp *c = cmp_of(d, REPORT_SELF, "libuv.so.1+0x1acd6");
		assert_non_null(c);
		assert_true(isinf(c->change)); /* new */
		assert_int_equal(c->significant, !coarse);
		assert_int_equal(d->verdict, coarse ? REPORT_OK : REPORT_REGRESSED);
		report_diff_free(d);
		hist_free(&h);
		profile_free(hp);
	}
}

/*
 * Every run of the head's commit (report_diff_new_confirmed, a history of 20 runs): a function
 * new in the head run is a finding only when the other run of the commit has it too. 40 periods
 * of it (1.3 % of a 3 CPU-second suite) in the head run alone: not flagged; in both runs:
 * flagged, in each run's own figures.
 */
static void test_new_function_confirmed(void **state)
{
	(void)state;
	for (int in_peer = 0; in_peer < 2; in_peer++) {
		struct synth base;
		synth_init(&base, 3, 999);
		base.jitter = 0.01;
		struct rng r = {4242};
		struct hist h;
		hist_init(&h, &base, &r, 20);
		struct profile *hp = with_new(&base, &r, "deflateReset", 40);
		struct profile *peer = with_new(&base, &r, "deflateReset", in_peer ? 40 : 0);
		struct report_options o;
		report_options_init(&o);
		struct report_diff *dp, *d;
		report_diff_new(&dp, h.merged, 5, h.runs, h.n, peer, &o);
		int64_t id = 7;
		report_diff_new_confirmed(&d, h.merged, 5, h.runs, h.n, hp, &dp, &id, 1, &o);
		const struct report_cmp *c = cmp_of(d, REPORT_SELF, "deflateReset");
		assert_non_null(c);
		assert_true(isinf(c->change));
		assert_int_equal(c->significant, in_peer);
		report_diff_free(dp);
		report_diff_free(d);
		hist_free(&h);
		profile_free(hp);
		profile_free(peer);
	}
}

/* Whether two diffs of the same head judged every item alike, to the bit. */
static void assert_same_judgement(const struct report_diff *a, const struct report_diff *b)
{
	assert_int_equal(a->nitems, b->nitems);
	assert_true(a->scale == b->scale);
	for (size_t i = 0; i < a->nitems; i++) {
		assert_string_equal(a->items[i].name, b->items[i].name);
		assert_true(a->items[i].cmp.p == b->items[i].cmp.p);
		assert_true(a->items[i].cmp.noise == b->items[i].cmp.noise);
	}
}

/* head compared with base (HIST runs merged; hist history runs), peer (another run of its
 * commit, id 7) asked too (report_diff_new_confirmed). */
enum { HIST = 30 };
static struct report_diff *confirmed(const struct profile *base, struct profile *const *runs,
                                     size_t hist, const struct profile *head,
                                     const struct profile *peer)
{
	struct report_options o;
	report_options_init(&o);
	struct report_diff *dp, *d;
	report_diff_new(&dp, base, HIST, runs, hist, peer, &o);
	int64_t id = 7;
	report_diff_new_confirmed(&d, base, HIST, runs, hist, head, &dp, &id, 1, &o);
	report_diff_free(dp);
	return d;
}

/* A history of HIST runs in which every function slows by 40 % in one run in 33 (a
 * neighbour's burst on a shared runner), from seed; f5 (named name) the function nearest 5 %
 * of the suite; head runs (jumpy_head) have no jumps. */
struct jumpy {
	struct synth base, head;
	int f5;
	char name[32];
	struct rng r;
	struct profile *runs[HIST], *merged;
};

static void jumpy_init(struct jumpy *j, uint64_t seed)
{
	synth_init(&j->base, 10, 999);
	j->base.jitter = 0.01;
	j->base.efficiency = 0.3;
	for (int i = 0; i < SYN_NFUNCS; i++)
		j->base.fjump[i] = 0.03;
	j->base.jump = 1.4;
	j->f5 = synth_func_near(&j->base, 0.05);
	snprintf(j->name, sizeof(j->name), "f_%02d", j->f5);
	j->r = (struct rng){seed};
	synth_base(&j->base, &j->r, HIST, j->runs, &j->merged);
	j->head = j->base;
	for (int i = 0; i < SYN_NFUNCS; i++)
		j->head.fjump[i] = 0;
}

/* A head run with f5 taking factor times its time. */
static struct profile *jumpy_head(struct jumpy *j, double factor)
{
	struct synth h = j->head;
	h.factor[j->f5] = factor;
	return synth_run(&h, &j->r, 1.0);
}

static void jumpy_release(struct jumpy *j)
{
	for (size_t i = 0; i < HIST; i++)
		profile_free(j->runs[i]);
	profile_free(j->merged);
}

/*
 * The history's levels and tails learned once for every diff of a report
 * (report_options.levels): a diff that takes them from the cache judges exactly as one that
 * learns them, and a cache holding another history's is not taken, neither its levels nor its
 * tails (each checked to fail when taken). The two histories: 30 runs in which every function
 * slows by 40 % in one run in 33 (heavy tails), and 30 without.
 */
static void test_levels_shared(void **state)
{
	(void)state;
	struct jumpy j;
	jumpy_init(&j, 777);
	struct profile *calm[HIST], *calm_merged;
	synth_base(&j.head, &j.r, HIST, calm, &calm_merged);
	/* A head sampled at another rate: both histories then weight their levels alike and
	 * take sampling at Poisson's (efficiency 1), so only the runs tell the caches apart. */
	j.head.hz = 1999;
	struct profile *hp = jumpy_head(&j, 1.0);
	struct report_options o;
	report_options_init(&o);
	struct report_diff *plain, *d1, *d2, *again;
	report_diff_new(&plain, calm_merged, HIST, calm, HIST, hp, &o);
	struct report_levels levels = {0};
	o.levels = &levels;
	report_diff_new(&d1, j.merged, HIST, j.runs, HIST, hp, &o);
	assert_non_null(levels.level);
	assert_true(levels.runs == j.runs);
	assert_true(levels.nfit > 0);
	/* The two histories differ where the cache could carry one into the other. */
	assert_true(d1->efficiency == plain->efficiency);
	assert_true(d1->tail_dof != plain->tail_dof || d1->tail_scale != plain->tail_scale);
	report_diff_new(&d2, calm_merged, HIST, calm, HIST, hp, &o);
	assert_true(levels.runs == calm);
	assert_same_judgement(plain, d2);
	report_diff_new(&again, calm_merged, HIST, calm, HIST, hp, &o);
	assert_same_judgement(plain, again);
	/* And at the history's own rate, as a report's runs are: the levels weighted by each
	 * function's spread and the efficiency learned, the steady and clean tails fitted. */
	j.head.hz = j.base.hz;
	struct profile *same = jumpy_head(&j, 1.0);
	struct report_diff *own, *cached;
	o.levels = NULL;
	report_diff_new(&own, j.merged, HIST, j.runs, HIST, same, &o);
	assert_true(own->efficiency < 1);
	o.levels = &levels;
	report_diff_free(d1);
	report_diff_new(&d1, j.merged, HIST, j.runs, HIST, same, &o); /* fills the cache */
	assert_true(levels.nfit >= 3); /* the pooled tail, the steady one, the clean one */
	report_diff_new(&cached, j.merged, HIST, j.runs, HIST, same, &o);
	assert_same_judgement(own, cached);
	report_levels_release(&levels);
	report_diff_free(own);
	report_diff_free(cached);
	profile_free(same);
	report_diff_free(plain);
	report_diff_free(d1);
	report_diff_free(d2);
	report_diff_free(again);
	for (size_t i = 0; i < HIST; i++)
		profile_free(calm[i]);
	profile_free(calm_merged);
	profile_free(hp);
	jumpy_release(&j);
}

/*
 * Several runs of the head's commit (report_diff_new_confirmed). A history of 30 runs in which
 * every function slows by 40 % in one run in 33 (as a neighbour's burst does on a shared
 * runner) fits heavy tails, on which one run's +50 % of a 5 % function is not significant;
 * shown by each of two runs it is a regression. A threefold jump in one of two runs is not,
 * nor a change the two runs disagree on; a history of under 20 runs keeps the one run's
 * findings, and fails the build only on a regression each run fails it on.
 */
static void test_confirm_runs(void **state)
{
	(void)state;
	struct jumpy j;
	jumpy_init(&j, 4242);
	const char *name = j.name;
	struct profile **runs = j.runs, *merged = j.merged;
	struct report_options o;
	report_options_init(&o);
	struct profile *h1 = jumpy_head(&j, 1.5), *h2 = jumpy_head(&j, 1.5);
	struct profile *hj = jumpy_head(&j, 3.0), *hc = jumpy_head(&j, 1);
	struct profile *hf = jumpy_head(&j, 0.8);
	struct report_diff *d1, *dj;
	report_diff_new(&d1, merged, HIST, runs, HIST, h1, &o);
	report_diff_new(&dj, merged, HIST, runs, HIST, hj, &o);
	/* One run: +50 % on tails this heavy is not significant; a threefold jump is. */
	const struct report_cmp *c = cmp_of(d1, REPORT_SELF, name);
	assert_non_null(c);
	assert_true(c->change > 0.35);
	assert_false(c->significant);
	assert_int_equal(d1->confirm_runs, 0);
	double p1 = c->p, change = c->change;
	assert_true(cmp_of(dj, REPORT_SELF, name)->significant);
	assert_int_equal(dj->verdict, REPORT_REGRESSED);
	/* Two runs that both show +50 %: a regression, on this run's figures. */
	struct report_diff *d = confirmed(merged, runs, HIST, h1, h2);
	c = cmp_of(d, REPORT_SELF, name);
	assert_true(c->significant);
	assert_int_equal(c->kind, REPORT_REGRESSION);
	assert_true(c->p < p1);
	assert_float_equal(c->change, change, 1e-12);
	assert_int_equal(d->verdict, REPORT_REGRESSED);
	assert_int_equal(d->confirm_runs, 2);
	assert_int_equal(d->confirm_ids[0], 7);
	report_diff_free(d);
	/* The jump in one run, the other run calm: not a finding. */
	d = confirmed(merged, runs, HIST, hj, hc);
	assert_false(cmp_of(d, REPORT_SELF, name)->significant);
	assert_true(d->verdict != REPORT_REGRESSED);
	report_diff_free(d);
	/* Two runs that disagree (+50 % and -20 %): nothing either way. */
	d = confirmed(merged, runs, HIST, h2, hf);
	c = cmp_of(d, REPORT_SELF, name);
	assert_float_equal(c->p, 1, 0);
	assert_false(c->significant);
	report_diff_free(d);
	/* Ten history runs: the runs' p are not combined, but a finding must be one that each
	 * run flags, and a regression fails the build only if the other run fails it too: a
	 * thirtyfold jump gates alone, is taken back beside a calm run, and gates beside
	 * another such jump. */
	struct profile *hh = jumpy_head(&j, 30.0), *hh2 = jumpy_head(&j, 30.0);
	struct report_diff *s1;
	report_diff_new(&s1, merged, HIST, runs, 10, hh, &o);
	assert_true(cmp_of(s1, REPORT_SELF, name)->gates);
	assert_true(s1->ngating > 0);
	assert_int_equal(s1->unrepeated, 0);
	d = confirmed(merged, runs, 10, hh, hc);
	assert_int_equal(d->confirm_runs, 2);
	assert_float_equal(cmp_of(d, REPORT_SELF, name)->p, cmp_of(s1, REPORT_SELF, name)->p, 0);
	assert_int_equal(cmp_of(d, REPORT_SELF, name)->kind, REPORT_UNCHANGED);
	assert_false(cmp_of(d, REPORT_SELF, name)->significant);
	assert_false(cmp_of(d, REPORT_SELF, name)->gates);
	assert_true(d->unrepeated >= 1);
	assert_int_equal(d->nregressed + d->nimproved + d->unrepeated,
	                 s1->nregressed + s1->nimproved);
	assert_int_equal(d->ngating, 0);
	assert_true(d->verdict != REPORT_REGRESSED);
	report_diff_free(d);
	d = confirmed(merged, runs, 10, hh, hh2);
	assert_int_equal(cmp_of(d, REPORT_SELF, name)->kind, REPORT_REGRESSION);
	assert_true(cmp_of(d, REPORT_SELF, name)->gates);
	report_diff_free(d);
	profile_free(hh);
	profile_free(hh2);
	report_diff_free(s1);
	report_diff_free(d1);
	report_diff_free(dj);
	profile_free(h1);
	profile_free(h2);
	profile_free(hj);
	profile_free(hc);
	profile_free(hf);
	jumpy_release(&j);
}

/* report_diff_undecided into idx (room for UNDECIDED_ROOM items). */
enum { UNDECIDED_ROOM = 256 };
static size_t undecided(const struct report_diff *d, size_t max_runs, size_t *idx, size_t *flagged)
{
	assert_true(d->nitems <= UNDECIDED_ROOM);
	return report_diff_undecided(d, max_runs, idx, flagged);
}

/* The position of measure m of name in d's items idx[0..n), or -1. */
static int undecided_has(const struct report_diff *d, const size_t *idx, size_t n,
                         enum report_measure m, const char *name)
{
	for (size_t j = 0; j < n; j++)
		if (d->items[idx[j]].measure == m && !strcmp(d->items[idx[j]].name, name))
			return (int)j;
	return -1;
}

/* Every item of idx[0..n) past the first `flagged` is a judged slowdown of at least
 * min_change that is not significant yet; the first `flagged` are the flagged items, every
 * one of them, regressions before improvements. */
static void assert_undecided_items(const struct report_diff *d, const size_t *idx, size_t n,
                                   size_t flagged)
{
	assert_int_equal(flagged, d->nregressed + d->nimproved);
	for (size_t j = 0; j < n; j++) {
		const struct report_cmp *c = &d->items[idx[j]].cmp;
		if (j < flagged) {
			assert_int_not_equal(c->kind, REPORT_UNCHANGED);
			if (j > 0 && d->items[idx[j - 1]].cmp.kind == REPORT_IMPROVEMENT)
				assert_int_equal(c->kind, REPORT_IMPROVEMENT);
			continue;
		}
		assert_true(c->tested);
		assert_false(c->significant);
		assert_true(c->change >= d->opts.min_change);
	}
}

/*
 * report --need-run (report_diff_undecided) on the heavy-tailed history of test_confirm_runs.
 * One run's +40 % of a 5 % function is not significant, but two runs could make it so: asked.
 * An A/A run asks nothing, nor a history of 10 runs (runs of one commit are not combined), nor
 * a report that already judged the most runs allowed, nor a change under --min-change. A
 * flagged regression comes first, counted in *flagged: another run confirms or takes it back;
 * a flagged improvement too (one run's swing shown as a speed-up is a false alarm as well).
 */
static void test_undecided(void **state)
{
	(void)state;
	struct jumpy j;
	jumpy_init(&j, 4243);
	const char *name = j.name;
	struct profile **runs = j.runs, *merged = j.merged;
	struct report_options o;
	report_options_init(&o);
	struct profile *h1 = jumpy_head(&j, 1.4), *h2 = jumpy_head(&j, 1.4);
	struct profile *hc = jumpy_head(&j, 1), *hj = jumpy_head(&j, 3.0);
	size_t idx[UNDECIDED_ROOM], n, flagged = 99;
	struct report_diff *d;

	/* One run of +40 %: not significant, but two runs could make it so; listed first of the
	 * functions (the smallest best-case p), and not as a flagged regression. */
	report_diff_new(&d, merged, HIST, runs, HIST, h1, &o);
	const struct report_cmp *c = cmp_of(d, REPORT_SELF, name);
	assert_true(c->change > 0.3 && c->change < 0.5);
	assert_false(c->significant);
	n = undecided(d, 2, idx, &flagged);
	assert_int_equal(flagged, 0);
	assert_int_equal(undecided_has(d, idx, n, REPORT_SELF, name), 0);
	assert_undecided_items(d, idx, n, flagged);
	/* ... and nothing when one run is the most allowed (--head-runs 1). */
	assert_int_equal(undecided(d, 1, idx, &flagged), 0);
	report_diff_free(d);
	/* ... nor under a --min-change above it. */
	o.min_change = 0.6;
	report_diff_new(&d, merged, HIST, runs, HIST, h1, &o);
	n = undecided(d, 3, idx, &flagged);
	assert_int_equal(undecided_has(d, idx, n, REPORT_SELF, name), -1);
	assert_undecided_items(d, idx, n, flagged);
	report_diff_free(d);
	o.min_change = REPORT_MIN_CHANGE;
	/* Ten history runs: runs of one commit are not combined, so a slowdown that is not
	 * flagged is not asked about; a flagged regression is, whether or not it fails the
	 * build (another run must flag it too): the +40 % is flagged on the light tail ten runs
	 * fit, and does not gate. */
	report_diff_new(&d, merged, HIST, runs, 10, h1, &o);
	assert_int_equal(d->ngating, 0);
	assert_int_equal(cmp_of(d, REPORT_SELF, name)->kind, REPORT_REGRESSION);
	n = undecided(d, 3, idx, &flagged);
	assert_int_equal(n, d->nregressed + d->nimproved);
	assert_int_equal(flagged, n);
	assert_true(undecided_has(d, idx, n, REPORT_SELF, name) >= 0);
	assert_undecided_items(d, idx, n, flagged);
	report_diff_free(d);
	report_diff_new(&d, merged, HIST, runs, 10, hc, &o);
	assert_int_equal(undecided(d, 3, idx, &flagged), d->nregressed + d->nimproved);
	report_diff_free(d);
	struct profile *hh = jumpy_head(&j, 30.0);
	report_diff_new(&d, merged, HIST, runs, 10, hh, &o);
	profile_free(hh);
	assert_true(cmp_of(d, REPORT_SELF, name)->gates);
	n = undecided(d, 3, idx, &flagged);
	assert_int_equal(n, d->nregressed + d->nimproved);
	assert_int_equal(flagged, n);
	assert_true(undecided_has(d, idx, n, REPORT_SELF, name) >= 0);
	assert_undecided_items(d, idx, n, flagged);
	assert_int_equal(undecided(d, 1, idx, &flagged), 0);
	report_diff_free(d);
	/* A fivefold speed-up in one run: a flagged improvement, asked about as well, after 10
	 * history runs and after 30 (another run confirms it or takes it back). */
	struct profile *hs = jumpy_head(&j, 0.2);
	for (size_t m = 10; m <= HIST; m += HIST - 10) {
		report_diff_new(&d, merged, HIST, runs, m, hs, &o);
		assert_int_equal(cmp_of(d, REPORT_SELF, name)->kind, REPORT_IMPROVEMENT);
		n = undecided(d, 3, idx, &flagged);
		int at = undecided_has(d, idx, n, REPORT_SELF, name);
		assert_true(at >= 0 && (size_t)at < flagged);
		assert_undecided_items(d, idx, n, flagged);
		assert_int_equal(undecided(d, 1, idx, &flagged), 0);
		report_diff_free(d);
	}
	profile_free(hs);
	/* An A/A run: nothing, even with three runs allowed. */
	report_diff_new(&d, merged, HIST, runs, HIST, hc, &o);
	assert_int_equal(undecided(d, 3, idx, &flagged), 0);
	report_diff_free(d);

	/* Two runs of +40 %: a regression. With both of --head-runs 2 judged, nothing more to
	 * ask; with 3 allowed, the regression, flagged. */
	d = confirmed(merged, runs, HIST, h1, h2);
	assert_int_equal(d->confirm_runs, 2);
	assert_int_equal(cmp_of(d, REPORT_SELF, name)->kind, REPORT_REGRESSION);
	assert_int_equal(undecided(d, 2, idx, &flagged), 0);
	n = undecided(d, 3, idx, &flagged);
	assert_true(flagged >= 1 && n >= flagged);
	assert_int_equal(undecided_has(d, idx, flagged, REPORT_SELF, name) >= 0, 1);
	assert_undecided_items(d, idx, n, flagged);
	report_diff_free(d);
	/* One run's threefold jump: flagged, and listed first, ahead of anything merely slower. */
	report_diff_new(&d, merged, HIST, runs, HIST, hj, &o);
	assert_int_equal(cmp_of(d, REPORT_SELF, name)->kind, REPORT_REGRESSION);
	n = undecided(d, 2, idx, &flagged);
	size_t flags = 0;
	for (size_t i = 0; i < d->nitems; i++)
		flags += d->items[i].cmp.kind != REPORT_UNCHANGED;
	assert_int_equal(flagged, flags);
	assert_true(n >= flagged);
	assert_int_equal(undecided_has(d, idx, flagged, REPORT_SELF, name) >= 0, 1);
	assert_undecided_items(d, idx, n, flagged);
	report_diff_free(d);

	profile_free(h1);
	profile_free(h2);
	profile_free(hc);
	profile_free(hj);
	jumpy_release(&j);
}

/* head compared with base as confirmed() does, with two other runs of its commit. */
static struct report_diff *confirmed3(const struct profile *base, struct profile *const *runs,
                                      const struct profile *head, const struct profile *p1,
                                      const struct profile *p2)
{
	struct report_options o;
	report_options_init(&o);
	struct report_diff *dp[2], *d;
	report_diff_new(&dp[0], base, HIST, runs, HIST, p1, &o);
	report_diff_new(&dp[1], base, HIST, runs, HIST, p2, &o);
	int64_t ids[2] = {7, 8};
	report_diff_new_confirmed(&d, base, HIST, runs, HIST, head, dp, ids, 2, &o);
	report_diff_free(dp[0]);
	report_diff_free(dp[1]);
	return d;
}

/* s with a slow spell of the machine: each function slowed or sped by its own factor
 * (log-normal, spread sd, their weighted mean 1: the suite as a whole about as fast). */
static struct synth spell_of(const struct synth *s, struct rng *r, double sd)
{
	struct synth t = *s;
	double lf[SYN_NFUNCS], mean = 0;
	for (int i = 0; i < SYN_NFUNCS; i++) {
		lf[i] = sd * rng_normal(r);
		mean += s->weight[i] * lf[i];
	}
	for (int i = 0; i < SYN_NFUNCS; i++)
		t.factor[i] *= exp(lf[i] - mean);
	return t;
}

#ifndef SEED
#define SEED 9001
#endif
/*
 * A slow spell of the machine (another tenant of the host) that lasts a CI job's three runs of
 * one commit: each function slowed or sped by its own amount (10 % a function), the same in
 * every run. One run of the history met a milder spell, so the head's runs are no noisier than
 * the history's noisiest by deflate's margin; but every one of them is noisier than the
 * history's ordinary runs, and together they agree on many functions' moves. The job is taken
 * as a spell (job_spell): its runs are widened to the ordinary runs' spread and combined as
 * their least significant, and nothing is flagged. Three calm runs of a 5 % function made 30 %
 * slower are not a spell, and the function is a regression that fails the build.
 */
static void test_spell_job(void **state)
{
	(void)state;
	struct synth base;
	synth_init(&base, 10, 999);
	base.jitter = 0.02;
	base.efficiency = 0.3;
	struct rng r = {SEED};
	struct profile *runs[HIST], *merged;
	struct synth spell = spell_of(&base, &r, 0.08);
	synth_base_with(&base, &spell, 10, &r, HIST, runs, &merged);
	struct synth head = spell_of(&base, &r, 0.1);
	struct profile *h[3];
	for (int i = 0; i < 3; i++)
		h[i] = synth_run(&head, &r, 1.0);
	struct report_diff *d = confirmed3(merged, runs, h[0], h[1], h[2]);
	assert_int_equal(d->confirm_runs, 3);
	assert_true(d->head_median_z > d->history_ordinary);
	assert_true(d->job_median_z > d->history_spread);
	assert_true(d->job_spell);
	assert_true(d->head_spread > 0);
	assert_int_equal(d->nregressed, 0);
	assert_int_equal(d->ngating, 0);
	assert_true(d->verdict != REPORT_REGRESSED);
	/* The comment says why its runs were not combined as agreeing runs. */
	struct report_baseline b;
	report_baseline_init(&b);
	b.n = HIST;
	b.at_merge_base = 1;
	struct run_meta m;
	run_meta_init(&m);
	m.id = 9;
	struct report rep = {.head = &m, .base = &b, .diff = d};
	struct strbuf md = STRBUF_INIT;
	assert_int_equal(report_markdown(&rep, &md, 65536), 0);
	assert_non_null(strstr(md.buf, "**3 runs of this commit:** they moved together beyond "
	                               "anything their history shows"));
	strbuf_release(&md);
	run_meta_release(&m);
	report_baseline_release(&b);
	report_diff_free(d);
	for (int i = 0; i < 3; i++)
		profile_free(h[i]);

	head = base;
	int f5 = synth_func_near(&base, 0.05);
	char name[32];
	snprintf(name, sizeof(name), "f_%02d", f5);
	head.factor[f5] = 1.3;
	for (int i = 0; i < 3; i++)
		h[i] = synth_run(&head, &r, 1.0);
	d = confirmed3(merged, runs, h[0], h[1], h[2]);
	assert_false(d->job_spell);
	assert_int_equal(cmp_of(d, REPORT_SELF, name)->kind, REPORT_REGRESSION);
	assert_true(cmp_of(d, REPORT_SELF, name)->gates);
	report_diff_free(d);
	for (int i = 0; i < 3; i++)
		profile_free(h[i]);
	for (size_t i = 0; i < HIST; i++)
		profile_free(runs[i]);
	profile_free(merged);
}

/* The flagged test of item (report_cmp.within), or NULL. */
static const struct report_item *within_of(const struct report_diff *d,
                                           const struct report_item *it)
{
	for (size_t t = 0; it->cmp.within && t < d->nitems; t++)
		if (d->items[t].measure == REPORT_TEST && !strcmp(d->items[t].name, it->cmp.within))
			return &d->items[t];
	return NULL;
}

/* Functions flagged within their tests (descend in diff.c) in one verdict: k history runs;
 * test_echo is mostly f_04 (5 % of the suite; its other functions too small to judge), slower
 * by slow in the head; checks every such finding. */
static size_t within_findings(size_t k, double slow, uint64_t seed, int busy)
{
	struct synth base, head;
	synth_init(&base, 10, 999);
	base.jitter = 0.03;
	int f = 4;
	for (int i = f; i < SYN_NFUNCS; i += SYN_NTESTS)
		base.weight[i] = i == f ? 0.05 : 0.001;
	double sum = 0;
	for (int i = 0; i < SYN_NFUNCS; i++)
		sum += base.weight[i];
	for (int i = 0; i < SYN_NFUNCS; i++)
		base.weight[i] /= sum;
	head = base;
	head.factor[f] = slow;
	struct report_options o;
	report_options_init(&o);
	o.head_busy = busy;
	struct report_diff *d = synth_verdict(&base, &head, k, seed, &o);
	size_t n = 0;
	for (size_t i = 0; i < d->nitems; i++) {
		const struct report_item *it = &d->items[i];
		if (!it->cmp.within)
			continue;
		const struct report_item *test = within_of(d, it);
		/* only a function, only in a flagged test that holds it, moved its way */
		assert_int_equal(it->measure, REPORT_SELF);
		assert_non_null(test);
		assert_true(test->cmp.significant);
		assert_int_equal(it->cmp.kind, test->cmp.kind);
		assert_true(it->cmp.significant && it->cmp.q <= o.alpha);
		char want[32];
		snprintf(want, sizeof(want), "f_%02d", f);
		assert_string_equal(it->name, want);
		assert_string_equal(it->cmp.within, syn_tests[f % SYN_NTESTS]);
		/* it fails the build exactly when its test does */
		assert_int_equal(it->cmp.gates,
		                 it->cmp.kind == REPORT_REGRESSION && test->cmp.gates);
		n++;
	}
	report_diff_free(d);
	return n;
}

/*
 * A flagged test's own few functions are asked which made it slower (descend in diff.c): a
 * change too small to clear the bar among all 30 functions is flagged among its test's own
 * once the test is flagged (the tests are 5: their bar is lower), carries the test, and
 * fails the build only as its test does. Identical code flags nothing that way; a head on a
 * busier machine than its history, or a history under 20 runs, is not asked.
 */
static void test_within_test(void **state)
{
	(void)state;
	size_t within = 0, busy = 0, short_history = 0;
	for (int i = 0; i < 16; i++) {
		uint64_t seed = 100 + (uint64_t)i;
		within += within_findings(30, 1.10 + 0.02 * i, seed, 0);
		busy += within_findings(30, 1.10 + 0.02 * i, seed, 1);
		short_history += within_findings(12, 1.10 + 0.02 * i, seed, 0);
	}
	/* some changes between +10 % and +40 % are found only within their test */
	assert_true(within > 0);
	assert_int_equal(busy, 0);
	assert_int_equal(short_history, 0);
	for (uint64_t seed = 1; seed <= 10; seed++)
		assert_int_equal(within_findings(30, 1.0, seed, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_regression_fails_with_history),
	        cmocka_unit_test(test_short_history_is_advisory),
	        cmocka_unit_test(test_fallback_is_advisory),
	        cmocka_unit_test(test_failed_or_other_head_is_advisory),
	        cmocka_unit_test(test_busy_head_is_advisory),
	        cmocka_unit_test(test_quiet_head),
	        cmocka_unit_test(test_unknown_base),
	        cmocka_unit_test(test_renamed_program),
	        cmocka_unit_test(test_new_function_dispersion),
	        cmocka_unit_test(test_new_function_confirmed),
	        cmocka_unit_test(test_levels_shared),
	        cmocka_unit_test(test_confirm_runs),
	        cmocka_unit_test(test_undecided),
	        cmocka_unit_test(test_spell_job),
	        cmocka_unit_test(test_within_test),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
