/* Comparing a head run with its baseline. Both profiles are merged into one stack tree keyed
 * by names (ids differ between profiles); per-function self and total, per-test counts and the
 * per-run spread come from it. Every comparison is in CPU time relative to a suite-wide scale
 * factor, so a uniformly slower runner, or a function whose share only falls because another
 * grew, is not reported. */
#include "report/diff.h"
#include "config/config.h"
#include "report/stats.h"
#include "model/rename.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void report_options_init(struct report_options *o)
{
	o->min_change = REPORT_MIN_CHANGE;
	o->min_share = REPORT_MIN_SHARE;
	o->alpha = REPORT_ALPHA;
	o->base_runs = REPORT_BASE_RUNS;
	o->head_quiet = 0;
	o->head_busy = 0;
	o->dispersion = 1;
	o->levels = NULL;
}

const char *report_kind_name(enum report_kind k)
{
	return k == REPORT_REGRESSION    ? "regression"
	       : k == REPORT_IMPROVEMENT ? "improvement"
	                                 : "unchanged";
}

const char *report_verdict_name(enum report_verdict v)
{
	return v == REPORT_REGRESSED ? "regression" : v == REPORT_IMPROVED ? "improvement" : "ok";
}

const char *report_measure_name(enum report_measure m)
{
	return m == REPORT_SELF ? "self" : m == REPORT_TOTAL ? "total" : "test";
}

const char *report_context_reason(enum report_context c)
{
	switch (c) {
	case REPORT_JUDGED:
		return "";
	case REPORT_TOO_SMALL:
		return "too few samples to judge";
	case REPORT_HARNESS:
		return "harness and tools, and the time between tests";
	case REPORT_ATTRIBUTION:
		return "a test new or gone is an attribution change";
	case REPORT_NOT_CODE:
		return "not a function: a frame ciprof makes";
	}
	return "";
}

int report_pseudo_frame(const char *function)
{
	if (function[0] != '[')
		return 0;
	const char *close = strchr(function + 1, ']');
	return close && close > function + 1 && (!close[1] || !strncmp(close + 1, "+0x", 3));
}

double report_period(const struct profile *p)
{
	if (p->stats.period_ns)
		return (double)p->stats.period_ns / 1e9;
	if (p->stats.hz > 0)
		return 1.0 / p->stats.hz;
	uint64_t n = profile_total(p, NULL);
	if (p->stats.cpu_seconds > 0 && n)
		return p->stats.cpu_seconds / (double)n;
	return 1.0 / CIPROF_DEFAULT_HZ; /* ciprof run's default rate */
}

/* How one source profile maps into the tree. */
struct side_map {
	uint32_t *frame; /* source frame -> tree frame */
	uint32_t *node;  /* source node -> tree node (NULL when not needed) */
	uint32_t *test;  /* source sample -> tree string id of its test (NULL when not needed) */
};

static void map_side(struct profile *names, const struct profile *src, int nodes,
                     struct side_map *m)
{
	m->frame = xmalloc(st_mult(src->nframes ? src->nframes : 1, sizeof(*m->frame)));
	for (size_t i = 0; i < src->nframes; i++) {
		const struct profile_frame *f = &src->frames[i];
		struct profile_frame nf = {
		        .function = profile_intern(names, profile_str(src, f->function)),
		        .module = profile_intern(names, profile_str(src, f->module)),
		        .kind = f->kind,
		};
		m->frame[i] = profile_frame(names, &nf);
	}
	m->node = m->test = NULL;
	if (!nodes)
		return;
	m->node = xcalloc(src->nnodes ? src->nnodes : 1, sizeof(*m->node));
	/* Parents precede children in every profile's node array. */
	for (size_t i = 1; i < src->nnodes; i++)
		m->node[i] = profile_node(names, m->node[src->nodes[i].parent],
		                          m->frame[src->nodes[i].frame]);
	m->test = xmalloc(st_mult(src->nsamples ? src->nsamples : 1, sizeof(*m->test)));
	for (size_t i = 0; i < src->nsamples; i++)
		m->test[i] = profile_intern(names, profile_str(src, src->samples[i].test));
}

static void side_map_release(struct side_map *m)
{
	free(m->frame);
	free(m->node);
	free(m->test);
}

/* Self samples of one function in one test, from one side (find_holders). */
struct frame_test {
	uint32_t frame, test;
	double n;
};

static void add_frame_tests(struct frame_test **v, size_t *n, size_t *alloc,
                            const struct profile *names, const struct profile *src,
                            const struct side_map *m, double weight)
{
	for (size_t i = 0; i < src->nsamples; i++) {
		ALLOC_GROW(*v, *n + 1, *alloc);
		(*v)[(*n)++] =
		        (struct frame_test){names->nodes[m->node[src->samples[i].node]].frame,
		                            m->test[i], weight * (double)src->samples[i].count};
	}
}

static int frame_test_cmp(const void *x, const void *y)
{
	const struct frame_test *a = x, *b = y;
	if (a->frame != b->frame)
		return a->frame < b->frame ? -1 : 1;
	return a->test < b->test ? -1 : a->test > b->test;
}

/* d->holders from v (n entries, sorted here): each test holding at least REPORT_HOLDER_SHARE
 * of a frame's self samples (both sides, the baseline per run). */
static void find_holders(struct report_diff *d, struct frame_test *v, size_t n)
{
	size_t alloc = 0;
	if (n)
		qsort(v, n, sizeof(*v), frame_test_cmp);
	for (size_t i = 0; i < n;) {
		size_t end = i;
		double all = 0;
		for (; end < n && v[end].frame == v[i].frame; end++)
			all += v[end].n;
		for (size_t j = i; j < end;) {
			size_t k = j;
			double held = 0;
			for (; k < end && v[k].test == v[j].test; k++)
				held += v[k].n;
			if (all > 0 && held >= REPORT_HOLDER_SHARE * all) {
				ALLOC_GROW(d->holders, d->nholders + 1, alloc);
				d->holders[d->nholders++] =
				        (struct report_holder){v[j].frame, v[j].test};
			}
			j = k;
		}
		i = end;
	}
}

/* Per-frame sums over the tree. */
struct func_sums {
	double *self_b, *self_h, *total_b, *total_h;
};

/* Whether a proper ancestor of node has the same frame (recursion: count it once). */
static int repeated_below(const struct profile *names, uint32_t node)
{
	uint32_t f = names->nodes[node].frame;
	for (uint32_t n = names->nodes[node].parent; n; n = names->nodes[n].parent)
		if (names->nodes[n].frame == f)
			return 1;
	return 0;
}

static int is_function(const struct profile *names, uint32_t frame)
{
	return names->frames[frame].kind != PROFILE_FRAME_PROCESS;
}

/* A frame of the program's code: neither a process nor a frame ciprof makes. */
static int is_code(const struct profile *names, uint32_t frame)
{
	return is_function(names, frame) &&
	       !report_pseudo_frame(profile_str(names, names->frames[frame].function));
}

/* The two-sided p-value of a log-ratio test's t on eff degrees of freedom, with the tails the
 * history showed (stats_tail_fit). */
static double ratio_p(const struct report_diff *d, int tail, double iscale, double t, double eff)
{
	return stats_t_sf2(t / (d->group_scale[tail] * iscale), fmin(eff, d->group_dof[tail]));
}

/* Fills cmp from counts and the item's noise; q and kind are left for judge(). Both sides
 * present: the log-ratio test on Student's t, sampling at the measured efficiency plus the
 * item's own spread (for the head run, and for the baseline's mean of base_runs runs); one side
 * empty (a function new or gone): the count test, which needs no log of zero. */
static void fill_cmp(struct report_cmp *c, const struct report_diff *d, double b, double h,
                     const struct stats_noise *nz)
{
	memset(c, 0, sizeof(*c));
	c->base_count = b;
	c->head_count = h;
	c->base_seconds = d->base_runs ? b * d->base_period / (double)d->base_runs : 0;
	c->head_seconds = h * d->head_period;
	c->base_share = d->base_samples > 0 ? b / d->base_samples : 0;
	c->head_share = d->head_samples > 0 ? h / d->head_samples : 0;
	c->expected = d->c * b;
	c->change = c->expected > 0 ? h / c->expected - 1 : (h > 0 ? INFINITY : 0);
	c->tested = (c->base_share >= d->opts.min_share || c->head_share >= d->opts.min_share) &&
	            (b > 0 || h > 0);
	c->context = c->tested ? REPORT_JUDGED : REPORT_TOO_SMALL;
	c->noise = nz->extra;
	c->dof = nz->dof;
	c->tail = stats_tail_group(nz);
	c->tail_scale = nz->scale > 0 ? nz->scale : 1;
	c->jump = nz->jump;
	double nb = (double)d->base_runs;
	/* The head run's own spread, plus the baseline's (an average of base_runs runs). */
	double extra = nz->extra * (1 + 1 / nb) + d->scale_variance + d->shift_variance;
	c->q = 1.0;
	if (!c->tested) {
		c->p = 1.0;
	} else if (b > 0 && h > 0) {
		double t;
		stats_log_ratio_stat(h, b, d->c, d->efficiency, extra, nz->dof, &t, &c->stat_dof);
		c->p = ratio_p(d, c->tail, c->tail_scale, t, c->stat_dof);
		c->ratio_test = 1;
		c->stat_y = log((h + 0.5) / (d->c * (b + 0.5)));
		c->stat_v = t != 0 ? (c->stat_y / t) * (c->stat_y / t)
		                   : d->efficiency * (1 / (h + 0.5) + 1 / (b + 0.5)) + extra;
		/* What the baseline adds to it: its sampling, its runs' spread, the factor's. */
		c->stat_vb = d->efficiency / (b + 0.5) + nz->extra / nb + d->scale_variance;
	} else {
		/* One sample event may stand for many periods (the preload backend's timers):
		 * the count test's Poisson counts are the events, not the periods. */
		double w = d->opts.dispersion > 1 ? d->opts.dispersion : 1;
		c->p = stats_rate_test(h / w, b / w, d->c, extra);
	}
}

/* Takes an item out of judgement for the reason given; a frame ciprof makes that is too
 * small to judge anyway stays "too small" (left out like any small function). */
static void not_judged(struct report_cmp *c, enum report_context why)
{
	if (c->tested || why != REPORT_NOT_CODE)
		c->context = why;
	c->tested = 0;
	c->p = 1.0;
}

/* The median over the log-ratio tests of the normal quantile of their p-values, with an
 * extra variance k in every one of them; y, v and eff hold their log ratios, variances and
 * degrees of freedom, z is scratch. */
static double median_z(const struct report_diff *d, const double *y, const double *v,
                       const double *eff, const int *tail, const double *is, double *z, size_t n,
                       double k)
{
	for (size_t i = 0; i < n; i++)
		z[i] = stats_normal_quantile2(
		        ratio_p(d, tail[i], is[i], y[i] / sqrt(v[i] + k), eff[i]));
	return stats_median(z, n);
}

/*
 * A head run noisier than its history (a neighbour on the other core, a slower memory bus)
 * spreads every function's log ratio by about the same amount, whatever its size. The bar is
 * the larger of what chance gives independent items (0.6745) and the largest median |z| any
 * history run showed (history_spread: a run in which the memory-bound half swung together is
 * one the noise model was learned from, not a noisier one). When the functions' (self
 * times') median |z| is beyond the bar by more than twice the 0.787 / sqrt(n) a median of n
 * wanders by, the variance k that brings it back to the bar is added to every log-ratio test
 * (tests and totals, which average several functions' spread, are then judged
 * conservatively): a real change of a few functions does not move a median; a noisy head
 * moves all of them. Back to the bar, not to chance: a head as noisy as the history's
 * noisiest run is one the model knows (down to chance, vs28a's heads at 1.6 against a bar of
 * 1.4 were widened by 17-33 % and +30 % of a steady loop was missed; docs/benchmarks.md,
 * "Widening a noisy head down to its history's bar"). Needs REPORT_HEAD_CHECK_FUNCTIONS such
 * functions.
 * d->head_spread is k, d->head_median_z the head's median.
 */
static double deflate_k(const struct report_diff *d, double target, double margin, double *median)
{
	size_t cap = d->nitems ? d->nitems : 1, n = 0;
	double *y = xmalloc(st_mult(cap, sizeof(*y))), *v = xmalloc(st_mult(cap, sizeof(*v)));
	double *eff = xmalloc(st_mult(cap, sizeof(*eff))), *z = xmalloc(st_mult(cap, sizeof(*z)));
	int *tail = xmalloc(st_mult(cap, sizeof(*tail)));
	double *is = xmalloc(st_mult(cap, sizeof(*is)));
	for (size_t i = 0; i < d->nitems; i++) {
		const struct report_cmp *c = &d->items[i].cmp;
		if (!c->tested || !c->ratio_test || d->items[i].measure != REPORT_SELF)
			continue;
		y[n] = c->stat_y;
		v[n] = c->stat_v;
		eff[n] = c->stat_dof;
		tail[n] = c->tail;
		is[n] = c->tail_scale;
		n++;
	}
	double k = 0;
	if (n >= REPORT_HEAD_CHECK_FUNCTIONS) {
		*median = median_z(d, y, v, eff, tail, is, z, n, 0);
		if (*median > target + margin * 0.787 / sqrt((double)n)) {
			double lo = 1e-9, hi = 10;
			for (int it = 0; it < 60; it++) {
				double mid = sqrt(lo * hi);
				if (median_z(d, y, v, eff, tail, is, z, n, mid) > target)
					lo = mid;
				else
					hi = mid;
			}
			k = hi;
		}
	}
	free(is);
	free(tail);
	free(y);
	free(v);
	free(eff);
	free(z);
	return k;
}

/* An item's p in one run (of diff r) with the variance k added to its log ratio's. */
static double widened_p(const struct report_diff *r, const struct report_cmp *c, double k)
{
	return ratio_p(r, c->tail, c->tail_scale, c->stat_y / sqrt(c->stat_v + k), c->stat_dof);
}

static void deflate(struct report_diff *d)
{
	double k = deflate_k(d, fmax(0.6745, d->history_spread), 2, &d->head_median_z);
	d->head_spread = k;
	for (size_t i = 0; i < d->nitems; i++) {
		struct report_cmp *c = &d->items[i].cmp;
		if (c->tested && c->ratio_test)
			c->p = widened_p(d, c, k);
	}
}

/*
 * Benjamini-Hochberg over the tested items, the tests and the functions apart: two families,
 * each at the false discovery rate alpha. "Which tests got slower" and "which functions" are
 * two questions; in one family a suite's few tests compete with its many self and total times
 * for the same rate (apart = 0: one family, as the short-history gate keeps). p per item
 * (ignored for untested items); q per item (1 when untested). Returns how many items were
 * tested.
 */
static size_t bh_families(const struct report_diff *d, const double *p, double *q, int apart)
{
	double *buf = xmalloc(st_mult(d->nitems ? d->nitems : 1, sizeof(*buf)));
	size_t tested = 0;
	for (int fam = 0; fam < (apart ? 2 : 1); fam++) {
		size_t n = 0;
		for (size_t i = 0; i < d->nitems; i++)
			if (d->items[i].cmp.tested &&
			    (!apart || (d->items[i].measure == REPORT_TEST) == fam))
				buf[n++] = p[i];
		stats_bh(buf, n, buf);
		n = 0;
		for (size_t i = 0; i < d->nitems; i++)
			if (d->items[i].cmp.tested &&
			    (!apart || (d->items[i].measure == REPORT_TEST) == fam))
				q[i] = buf[n++];
		tested += n;
	}
	for (size_t i = 0; i < d->nitems; i++)
		if (!d->items[i].cmp.tested)
			q[i] = 1.0;
	free(buf);
	return tested;
}

/* BH over the tested items' p (bh_families); marks significance and kind. */
static void mark(struct report_diff *d)
{
	double *p = xmalloc(st_mult(d->nitems ? d->nitems : 1, sizeof(*p)));
	for (size_t i = 0; i < d->nitems; i++)
		p[i] = d->items[i].cmp.p;
	d->ntested = bh_families(d, p, p, 1);
	for (size_t i = 0; i < d->nitems; i++) {
		struct report_cmp *c = &d->items[i].cmp;
		c->q = p[i];
		c->within = NULL;
		c->significant =
		        c->tested && c->q <= d->opts.alpha && fabs(c->change) >= d->opts.min_change;
		c->kind = !c->significant ? REPORT_UNCHANGED
		          : c->change > 0 ? REPORT_REGRESSION
		                          : REPORT_IMPROVEMENT;
	}
	free(p);
}

/* The item of peer with it's measure, name and module, or NULL. */
static const struct report_item *same_item(const struct report_diff *peer,
                                           const struct report_item *it)
{
	for (size_t i = 0; i < peer->nitems; i++) {
		const struct report_item *o = &peer->items[i];
		if (o->measure == it->measure && !strcmp(o->name, it->name) &&
		    !strcmp(o->module, it->module))
			return o;
	}
	return NULL;
}

/*
 * The power that k runs' largest p is raised to: k normal statistics correlated by rho (the
 * baseline's share of the item's variance, which the runs share) are all beyond t with a tail
 * of exp(-t^2 / 2) to the power k / (1 + (k - 1) rho), not k.
 */
static double confirm_power(const struct report_cmp *c, double k, int spell)
{
	if (spell)
		return 1;
	double rho = c->stat_v > 0 ? fmin(1, fmax(0, c->stat_vb / c->stat_v)) : 1;
	return k / (1 + (k - 1) * rho);
}

/* The run of peer j's (j = npeers: d's own) item i for job_spell: its log ratio, its
 * variance with that run's own widening, and the part of it the baseline adds (shared by
 * every run of the commit); 0 when the run did not judge it. */
struct job_run {
	double y, v, vb;
};

static int job_runs(const struct report_diff *d, struct report_diff *const *peers, size_t npeers,
                    const struct report_item *it, struct job_run *r)
{
	for (size_t j = 0; j <= npeers; j++) {
		const struct report_diff *p = j < npeers ? peers[j] : d;
		const struct report_item *o = j < npeers ? same_item(p, it) : it;
		if (!o || !o->cmp.tested || !o->cmp.ratio_test)
			return 0;
		r[j].y = o->cmp.stat_y;
		r[j].v = o->cmp.stat_v + p->head_spread;
		r[j].vb = fmin(o->cmp.stat_vb, o->cmp.stat_v);
	}
	return 1;
}

/* |z| quantile of the mean of k runs' log ratios, the runs independent but for the baseline. */
static double job_z(const struct report_diff *d, const struct report_cmp *c,
                    const struct job_run *r, size_t k)
{
	double y = 0, own = 0, shared = 0;
	for (size_t j = 0; j < k; j++) {
		y += r[j].y;
		own += r[j].v - r[j].vb;
		shared += r[j].vb;
	}
	y /= (double)k;
	double v = own / ((double)k * (double)k) + shared / (double)k;
	return stats_normal_quantile2(ratio_p(d, c->tail, c->tail_scale, y / sqrt(v), c->stat_dof));
}

static double job_median(const struct report_diff *d, const size_t *idx, const struct job_run *r,
                         size_t n, size_t k, double *z)
{
	for (size_t i = 0; i < n; i++)
		z[i] = job_z(d, &d->items[idx[i]].cmp, r + i * k, k);
	return stats_median(z, n);
}

/*
 * The runs of one commit in one CI job share the machine's state while they run: a slow spell
 * of the host (another tenant, a slower memory bus) that lasts the job moves many functions in
 * every run. Each run alone can look no noisier than the history's noisiest run (deflate passes
 * it), yet combining them (confirm_p) takes the runs' agreement as evidence of a change. au2d's
 * head 149 (runs 147-149 at median |z| 1.93, 2.04, 1.93 against a history bar of 1.75 that one
 * main run of the same spell had set; the other 29 history runs at 0.40-1.05) failed its build
 * on 15 unplanted items, none of which any of its runs flagged alone (docs/benchmarks.md, "A
 * slow spell that lasts the job").
 *
 * So the runs are checked together, as deflate checks one. Each function's mean log ratio over
 * the k runs, on the variance it has if the runs are independent (their own parts over k, what
 * the baseline adds once), gives a z; their median |z| over the functions lies where one run's
 * does when the runs are independent (a change touches a few functions), and grows toward
 * sqrt(k) times that when every function moved in every run together. The job met a spell when
 * that median is beyond deflate's bar by deflate's margin and every one of its runs is noisier
 * than the history's ordinary runs (d->history_ordinary, by the same margin): calm runs of one
 * job agree more closely than history runs do (docs/benchmarks.md, "A likeness of one job's
 * runs learned from earlier jobs"), which alone must not count as a spell. Each run is then
 * widened (as deflate widens one) down to the ordinary runs' bar, not the noisiest run's (a base
 * run in the same spell may have set that one), and they are combined as their least
 * significant one (confirm_power 1): their agreement is the spell's. Over the 16 kept bench
 * sessions (1,397 heads judged with other runs) this fired on three jobs: au2d's 149 and au1's
 * 273 (17 unplanted items), both in such spells and flagging nothing after, and an A/A job with
 * a CPU hog that flagged nothing either way; no other verdict changed.
 * k_run[j] is the variance added to run j's (peers[j], then d's own at npeers) log ratios;
 * d->job_spell says whether it met a spell, d->job_median_z is the median.
 */
static void job_spell(struct report_diff *d, struct report_diff *const *peers, size_t npeers,
                      double *k_run)
{
	size_t k = npeers + 1, n = 0, cap = d->nitems ? d->nitems : 1;
	size_t *idx = xmalloc(st_mult(cap, sizeof(*idx)));
	struct job_run *r = xmalloc(st_mult(st_mult(cap, k), sizeof(*r)));
	double *z = xmalloc(st_mult(cap, sizeof(*z)));
	d->job_spell = 0;
	d->job_median_z = 0;
	for (size_t i = 0; i < d->nitems; i++) {
		const struct report_item *it = &d->items[i];
		if (it->measure != REPORT_SELF || !job_runs(d, peers, npeers, it, r + n * k))
			continue;
		idx[n++] = i;
	}
	if (n >= REPORT_HEAD_CHECK_FUNCTIONS) {
		double margin = 2 * 0.787 / sqrt((double)n);
		int noisy =
		        d->history_ordinary > 0 && d->head_median_z > d->history_ordinary + margin;
		for (size_t j = 0; j < npeers && noisy; j++)
			noisy = peers[j]->head_median_z > d->history_ordinary + margin;
		d->job_median_z = job_median(d, idx, r, n, k, z);
		d->job_spell = noisy && d->job_median_z > fmax(0.6745, d->history_spread) + margin;
	}
	for (size_t j = 0; j <= npeers; j++) {
		const struct report_diff *p = j < npeers ? peers[j] : d;
		double m;
		k_run[j] = p->head_spread;
		if (d->job_spell)
			k_run[j] = fmax(k_run[j],
			                deflate_k(p, fmax(0.6745, d->history_ordinary), 0, &m));
	}
	d->head_spread = k_run[npeers];
	free(z);
	free(r);
	free(idx);
}

/*
 * Every run of the head's code (report_diff_new_confirmed): each judged item's p becomes
 * max(p over the k runs)^confirm_power when every run judged it and moved it the same way,
 * else 1 (a job in a slow spell: job_spell, the power is 1). A function new or gone (the count
 * test) takes the largest p of the runs, each of which must have judged it the same way: a
 * function new in one run of three is no finding (a preload head flagged `ctest`'s zlib code,
 * one sample of 22 periods in one of its three runs, as new).
 */
static void confirm_p(struct report_diff *d, struct report_diff *const *peers, size_t n,
                      const double *k_run)
{
	double k = (double)(n + 1);
	for (size_t i = 0; i < d->nitems; i++) {
		struct report_cmp *c = &d->items[i].cmp;
		if (!c->tested)
			continue;
		if (!c->ratio_test) {
			double worst = c->p;
			for (size_t j = 0; j < n && worst < 1; j++) {
				const struct report_item *o = same_item(peers[j], &d->items[i]);
				worst = o && o->cmp.tested && !o->cmp.ratio_test &&
				                        (o->cmp.change > 0) == (c->change > 0)
				                ? fmax(worst, o->cmp.p)
				                : 1;
			}
			c->p = worst;
			continue;
		}
		double worst = widened_p(d, c, k_run[n]);
		for (size_t j = 0; j < n; j++) {
			const struct report_item *o = same_item(peers[j], &d->items[i]);
			if (!o || !o->cmp.tested || !o->cmp.ratio_test ||
			    (o->cmp.change > 0) != (c->change > 0)) {
				worst = 1;
				break;
			}
			worst = fmax(worst, widened_p(peers[j], &o->cmp, k_run[j]));
		}
		c->p = pow(worst, confirm_power(c, k, d->job_spell));
	}
}

/*
 * What the report could have seen (report_cmp.detectable): for each item judged by the
 * log-ratio test, the smallest slowdown that would have been significant as its family's only
 * finding: the change whose p, on the item's variance (the head's widening included) and its
 * tail, is alpha / m (m: the tested items of its family, Benjamini-Hochberg's first bar), every
 * run of the head's commit showing it as far when they are combined (npeers > 0: the p each
 * run needs is that bar to the power 1 / confirm_power), and at least --min-change. "Nothing
 * flagged" then reads with what each item would have had to move. Several changes at once
 * lower the bar for all of them (BH's higher ranks).
 */
static void detectable(struct report_diff *d, size_t npeers)
{
	size_t m[2] = {0, 0};
	for (size_t i = 0; i < d->nitems; i++)
		m[d->items[i].measure == REPORT_TEST] += (size_t)d->items[i].cmp.tested;
	double k = (double)(npeers + 1);
	for (size_t i = 0; i < d->nitems; i++) {
		struct report_cmp *c = &d->items[i].cmp;
		c->detectable = 0;
		if (!c->tested || !c->ratio_test || !(c->stat_v > 0))
			continue;
		double bar = d->opts.alpha / (double)m[d->items[i].measure == REPORT_TEST];
		double p = npeers ? pow(bar, 1 / confirm_power(c, k, d->job_spell)) : bar;
		/* ratio_p undone; at most REPORT_DETECTABLE_MAX: an item that few degrees of
		 * freedom leave unable to show any plausible slowdown */
		double t = stats_t_quantile2(p, fmin(c->stat_dof, d->group_dof[c->tail]));
		double y = t * d->group_scale[c->tail] * c->tail_scale *
		           sqrt(c->stat_v + d->head_spread);
		c->detectable = fmax(d->opts.min_change, fmin(REPORT_DETECTABLE_MAX, expm1(y)));
	}
}

/* Whether test (a tree string) holds at least REPORT_HOLDER_SHARE of frame's self samples. */
static int holds(const struct report_diff *d, uint32_t frame, const char *test)
{
	size_t lo = 0, hi = d->nholders;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->holders[mid].frame < frame)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < d->nholders && d->holders[lo].frame == frame; lo++)
		if (!strcmp(profile_str(d->tree.names, d->holders[lo].test), test))
			return 1;
	return 0;
}

/*
 * Which functions made a flagged test slower (or faster). Among all the functions a change
 * must clear Benjamini-Hochberg's bar over every judged function (alpha / m for the first);
 * once a test is flagged, the question "which of its functions?" is asked of its own few
 * (those it holds REPORT_HOLDER_SHARE or more of: d->holders) at alpha, a hierarchical
 * test (Yekutieli's: a family is tested only when its parent was rejected). A function flagged
 * there gets the test's kind, moved the same way by at least --min-change, and carries the
 * test (report_cmp.within); its q is within that family. Asked only with
 * STATS_TAIL_SCALE_MIN_RUNS history runs or more, where every flagged regression gates
 * (short_history_gate), so such a function fails the build exactly when its test does, and no
 * build fails here that did not already. Not asked with fewer, nor on a head that shared its
 * machine with more work than its history did (report_options.head_busy): a test flagged
 * there is often a neighbour's or a slow mode's, and the function carrying it moved with it
 * (kept bench sessions' A/A heads: a memory-bound walk +17 % beside a CPU hog, 10 history
 * runs).
 */
static void descend(struct report_diff *d)
{
	if (d->opts.head_busy || d->history_runs < STATS_TAIL_SCALE_MIN_RUNS)
		return;
	size_t cap = d->nitems ? d->nitems : 1;
	size_t *idx = xmalloc(st_mult(cap, sizeof(*idx)));
	double *q = xmalloc(st_mult(cap, sizeof(*q)));
	for (size_t t = 0; t < d->nitems; t++) {
		const struct report_item *test = &d->items[t];
		/* "(outside tests)" judged is the whole suite: its functions are all of them */
		if (test->measure != REPORT_TEST || !test->cmp.significant || !*test->name)
			continue;
		size_t n = 0;
		for (size_t i = 0; i < d->nitems; i++) {
			const struct report_item *it = &d->items[i];
			if (it->measure == REPORT_SELF && it->cmp.tested &&
			    holds(d, it->frame, test->name)) {
				idx[n] = i;
				q[n++] = it->cmp.p;
			}
		}
		stats_bh(q, n, q);
		for (size_t j = 0; j < n; j++) {
			struct report_cmp *c = &d->items[idx[j]].cmp;
			if (c->significant || q[j] > d->opts.alpha ||
			    fabs(c->change) < d->opts.min_change ||
			    (c->change > 0) != (test->cmp.kind == REPORT_REGRESSION))
				continue;
			c->significant = 1;
			c->kind = test->cmp.kind;
			c->q = q[j];
			c->within = test->name;
		}
	}
	free(q);
	free(idx);
}

/* The head's spread checked (deflate), every run of its code asked (confirm_p, npeers > 0),
 * then BH (mark); at the last judgement (totals judged too), the flagged tests' functions
 * (descend). Not at the first, whose flags take functions out of their callers' totals: a
 * test flagged there may not be at the last (the totals change the head's spread), and a
 * function flagged through it would leave its callers' totals without its samples and itself
 * unflagged. */
static void judge(struct report_diff *d, struct report_diff *const *peers, size_t npeers, int last)
{
	deflate(d);
	if (npeers) {
		double *k_run = xmalloc(st_mult(npeers + 1, sizeof(*k_run)));
		job_spell(d, peers, npeers, k_run);
		confirm_p(d, peers, npeers, k_run);
		free(k_run);
	}
	mark(d);
	if (last)
		descend(d);
}

/*
 * Which regressions may fail the build (report_cmp.gates, d->ngating). With
 * STATS_TAIL_SCALE_MIN_RUNS history runs or more, every one. With fewer, the history cannot show
 * how often a function jumps by chance, and its fitted tail is too light: a regression gates
 * only if it is significant with every log-ratio test judged on at most
 * t(STATS_SHORT_MAX_DOF) as well (Benjamini-Hochberg again, over all the items as one family:
 * as two, the tests apart, the gate let a swinging test_sort +55 % and a matmul +76 % fail two
 * A/A builds after 12 and 15 runs, docs/benchmarks.md "Two families; a quiet head"), and the
 * other runs of the head's code (peers, npeers) fail it too; the report still shows the others,
 * and report_advisory says why they do not fail the build.
 */
static void short_history_gate(struct report_diff *d, struct report_diff *const *peers,
                               size_t npeers)
{
	d->ngating = 0;
	int all = d->history_runs >= STATS_TAIL_SCALE_MIN_RUNS;
	double *p = all ? NULL : xmalloc(st_mult(d->nitems ? d->nitems : 1, sizeof(*p)));
	for (size_t i = 0; i < d->nitems && !all; i++) {
		const struct report_cmp *c = &d->items[i].cmp;
		p[i] = c->tested && c->ratio_test
		               ? ratio_p(d, c->tail, c->tail_scale,
		                         c->stat_y / sqrt(c->stat_v + d->head_spread),
		                         fmin(c->stat_dof, STATS_SHORT_MAX_DOF))
		               : c->p;
	}
	if (!all)
		bh_families(d, p, p, 0);
	for (size_t i = 0; i < d->nitems; i++) {
		struct report_cmp *c = &d->items[i].cmp;
		double q = all ? c->q : p[i];
		c->gate_q = q;
		c->gates = c->kind == REPORT_REGRESSION && q <= d->opts.alpha;
		/* The other runs of the head's code, below STATS_TAIL_SCALE_MIN_RUNS: too few
		 * history runs to combine their p, but a regression fails the build only if each
		 * of them fails it too (one run's jump does not repeat). */
		for (size_t j = 0; j < npeers && c->gates && !all; j++) {
			const struct report_item *o = same_item(peers[j], &d->items[i]);
			c->gates = o && o->cmp.gates;
		}
		d->ngating += (size_t)c->gates;
	}
	free(p);
}

/*
 * Below STATS_TAIL_SCALE_MIN_RUNS history runs, where the other runs of the head's code are
 * not combined (their tails are not learned), a finding is one that each of them flags too,
 * the same way: a steady function's rare slow mode, which ten to twenty history runs seldom
 * show, lands in one run and not the next, while a change of the code is in every run. The
 * others are taken back (d->unrepeated counts them).
 */
static void unrepeated(struct report_diff *d, struct report_diff *const *peers, size_t npeers)
{
	for (size_t i = 0; i < d->nitems; i++) {
		struct report_cmp *c = &d->items[i].cmp;
		int repeated = 1;
		for (size_t j = 0; j < npeers && c->significant && repeated; j++) {
			const struct report_item *o = same_item(peers[j], &d->items[i]);
			repeated = o && o->cmp.kind == c->kind;
		}
		if (!repeated) {
			c->significant = 0;
			c->kind = REPORT_UNCHANGED;
			d->unrepeated++;
		}
	}
}

static int group_of(const struct report_item *it)
{
	return it->cmp.kind == REPORT_REGRESSION ? 0 : it->cmp.kind == REPORT_IMPROVEMENT ? 1 : 2;
}

static int item_cmp(const void *x, const void *y)
{
	const struct report_item *a = x, *b = y;
	int ga = group_of(a), gb = group_of(b);
	if (ga != gb)
		return ga - gb;
	/* Flagged: by the change in samples (head side), biggest first; others: by weight. */
	double ka, kb;
	if (ga < 2) {
		ka = fabs(a->cmp.head_count - a->cmp.expected);
		kb = fabs(b->cmp.head_count - b->cmp.expected);
	} else {
		ka = fmax(a->cmp.head_share, a->cmp.base_share);
		kb = fmax(b->cmp.head_share, b->cmp.base_share);
	}
	if (ka != kb)
		return ka > kb ? -1 : 1;
	if (a->measure != b->measure)
		return (int)a->measure - (int)b->measure;
	int c = strcmp(a->name, b->name);
	return c ? c : strcmp(a->module, b->module);
}

static void add_item(struct report_diff *d, size_t *alloc, enum report_measure m, const char *name,
                     const char *module, uint32_t frame, double b, double h,
                     const struct stats_noise *nz)
{
	ALLOC_GROW(d->items, d->nitems + 1, *alloc);
	struct report_item *it = &d->items[d->nitems++];
	it->measure = m;
	it->name = name;
	it->module = module;
	it->frame = frame;
	it->path = 0;
	fill_cmp(&it->cmp, d, b, h, nz);
}

static int same_as_test(const struct report_diff *d, const char *name, double b, double h)
{
	for (size_t i = 0; i < d->nitems && d->items[i].measure == REPORT_TEST; i++)
		if (d->items[i].cmp.base_count == b && d->items[i].cmp.head_count == h &&
		    !strcmp(d->items[i].name, name))
			return 1;
	return 0;
}

static void build_children(struct report_tree *t)
{
	size_t nn = t->names->nnodes;
	t->child_start = xcalloc(nn + 1, sizeof(*t->child_start));
	t->child = xmalloc(st_mult(nn ? nn : 1, sizeof(*t->child)));
	for (size_t n = 1; n < nn; n++)
		t->child_start[t->names->nodes[n].parent + 1]++;
	for (size_t n = 0; n < nn; n++)
		t->child_start[n + 1] += t->child_start[n];
	uint32_t *fill = xmalloc(st_mult(nn ? nn : 1, sizeof(*fill)));
	memcpy(fill, t->child_start, nn * sizeof(*fill));
	for (size_t n = 1; n < nn; n++)
		t->child[fill[t->names->nodes[n].parent]++] = (uint32_t)n;
	free(fill);
}

/*
 * The suite-wide factor: a robust mean of the functions' log head/base ratios (self time).
 * Start from their weighted median (each weight capped at a tenth, so no single function
 * decides), keep the functions whose ratio is within 3 standard errors of it, and average
 * those weighted by precision (again capped). Its own variance is added to every comparison.
 */
static void estimate_scale(struct report_diff *d, const struct func_sums *fs,
                           const struct stats_noise *noise)
{
	const struct profile *names = d->tree.names;
	size_t nf = names->nframes, n = 0;
	double *y = xmalloc(st_mult(nf ? nf : 1, sizeof(*y)));
	double *v = xmalloc(st_mult(nf ? nf : 1, sizeof(*v)));
	double *w = xmalloc(st_mult(nf ? nf : 1, sizeof(*w)));
	double c0 = d->c;
	for (size_t f = 0; f < nf; f++) {
		if (!is_code(names, (uint32_t)f) || !(fs->self_h[f] > 0) || !(fs->self_b[f] > 0))
			continue;
		y[n] = log(fs->self_h[f] / (c0 * fs->self_b[f]));
		v[n] = d->efficiency * (1 / fs->self_h[f] + 1 / fs->self_b[f]) +
		       noise[f].extra * (1 + 1 / (double)d->base_runs);
		w[n] = fs->self_h[f] + c0 * fs->self_b[f];
		n++;
	}
	double var;
	size_t used;
	double ls = stats_robust_level(y, v, w, n, &var, &used);
	d->scale = isfinite(ls) ? exp(ls) : 1;
	d->scale_variance = var;
	d->scale_functions = used;
	d->scale_estimated = isfinite(ls);
	free(y);
	free(v);
	free(w);
}

/* Each item's own run-to-run spread: per test (by names string id), per function's self and
 * total time (by names frame). */
struct noise_model {
	struct stats_noise *test, *self, *total;
};

/* Interns a history run's frames and test names into names (before its arrays are sized). */
static void intern_history(struct profile *names, const struct profile *run)
{
	struct side_map sm;
	map_side(names, run, 0, &sm);
	side_map_release(&sm);
	for (size_t k = 0; k < run->nsamples; k++)
		profile_intern(names, profile_str(run, run->samples[k].test));
}

/* Adds history run i's counts (of m) per test, per frame self and per frame total (a frame
 * counted once per stack under recursion) to column i of xt, xs and xT. */
static void history_counts(struct profile *names, const struct profile *run, size_t i, size_t m,
                           double *xt, double *xs, double *xT, double *tot)
{
	size_t ns = names->nstr, nf = names->nframes, nn = run->nnodes;
	struct side_map sm;
	map_side(names, run, 0, &sm);
	double *total = xcalloc(nn ? nn : 1, sizeof(*total));
	for (size_t k = 0; k < run->nsamples; k++) {
		const struct profile_sample *smp = &run->samples[k];
		double c = (double)smp->count;
		uint32_t t = profile_intern(names, profile_str(run, smp->test));
		if (t < ns)
			xt[(size_t)t * m + i] += c;
		tot[i] += c;
		if (!smp->node)
			continue;
		uint32_t fr = sm.frame[run->nodes[smp->node].frame];
		if (fr < nf)
			xs[(size_t)fr * m + i] += c;
		total[smp->node] += c;
	}
	for (size_t n = nn; n-- > 1;)
		total[run->nodes[n].parent] += total[n];
	for (size_t n = 1; n < nn; n++) {
		uint32_t fr = sm.frame[run->nodes[n].frame];
		int rep = 0;
		for (uint32_t up = run->nodes[n].parent; up && !rep; up = run->nodes[up].parent)
			rep = sm.frame[run->nodes[up].frame] == fr;
		if (!rep && fr < nf)
			xT[(size_t)fr * m + i] += total[n];
	}
	free(total);
	side_map_release(&sm);
}

/* The sample variance of the history runs' log CPU level (level[i] samples of runs[i]'s
 * period): how far the whole suite moves from run to run on the base branch. 0 with fewer
 * than two runs. */
static double history_level_variance(struct profile *const *runs, size_t m, const double *level)
{
	double s = 0, ss = 0;
	size_t n = 0;
	for (size_t i = 0; i < m; i++) {
		double sec = level[i] * report_period(runs[i]);
		if (!(sec > 0) || !isfinite(sec))
			continue;
		double y = log(sec);
		s += y;
		ss += y * y;
		n++;
	}
	if (n < 2)
		return 0;
	double mu = s / (double)n;
	return fmax((ss - (double)n * mu * mu) / (double)(n - 1), 0);
}

/*
 * A head run whose whole suite moved further than the history's runs ever did (a slower
 * machine, a neighbour sharing the caches) says nothing reliable about a function's time
 * relative to the suite's: functions answer such a move unequally (a CRC loop not at all, a
 * pointer chase twice over), and the history, which never made such a move, cannot say how
 * unequally. The part of the move beyond twice the history's level spread (and the factor's
 * own error) is added, squared, to every test's variance: a function is then flagged only
 * for a change well beyond the move itself. Measured on CI: a head 14.8 % slower overall,
 * history spread 0.7 %, two compute-bound functions -14 % and -9 % against the factor.
 */
static void shift_spread(struct report_diff *d)
{
	double ls = d->scale_estimated && d->scale > 0 ? fabs(log(d->scale)) : 0;
	double excess = ls - 2 * sqrt(d->level_variance + d->scale_variance);
	d->shift_variance = excess > 0 ? excess * excess : 0;
}

/* Whether head, base and every history run were sampled at one rate: the sampling efficiency
 * learned from the history holds for the head only then. */
static int same_rate(const struct report_diff *d, struct profile *const *runs, size_t m)
{
	if (!(d->base_period > 0) || fabs(d->head_period / d->base_period - 1) > 0.01)
		return 0;
	for (size_t i = 0; i < m; i++)
		if (fabs(report_period(runs[i]) / d->base_period - 1) > 0.01)
			return 0;
	return 1;
}

static int history_tail_fit(struct report_levels *cache, const double *xs, size_t nf, size_t m,
                            const double *tot, const double *level, const struct stats_noise *nz,
                            double a, int group, double *nu, double *scale);

/*
 * The steady items' own tail (stats_tail_group): with STATS_TAIL_SCALE_MIN_RUNS history runs
 * and a suite whose head can be checked (deflate), each steady function's deviations get
 * their own scale (stats_tail_scales) and the steady functions' tail is fitted to them, and
 * the clean ones' (group 2: never beyond STATS_CLEAN_JUMP) to theirs alone (the steady tail
 * when too few); otherwise, and for the swinging items always, the pooled tail d->tail_dof,
 * d->tail_scale. Both fitted tails are capped at t(STATS_STEADY_MAX_DOF), for a neighbour the
 * history never saw, unless the head measured itself quiet (report_options.head_quiet).
 * Returns the prior of the functions' scales for the tests' and totals' (0: no own scales).
 */
static double steady_tail(struct report_diff *d, const double *xs, size_t nf, size_t m,
                          const double *tot, const double *level, struct stats_noise *nz, double a,
                          size_t checkable)
{
	double prior = 0;
	for (int g = 0; g < STATS_TAIL_GROUPS; g++) {
		d->group_dof[g] = d->tail_dof;
		d->group_scale[g] = d->tail_scale;
	}
	if (checkable < REPORT_HEAD_CHECK_FUNCTIONS || m < STATS_TAIL_SCALE_MIN_RUNS)
		return 0;
	prior = stats_tail_scales(xs, nf, m, tot, level, a, -1, nz);
	double nu, scale, cap = d->opts.head_quiet ? INFINITY : STATS_STEADY_MAX_DOF;
	if (history_tail_fit(d->opts.levels, xs, nf, m, tot, level, nz, a, 0, &nu, &scale)) {
		d->group_dof[0] = fmin(nu, cap);
		d->group_scale[0] = scale;
	}
	d->group_dof[2] = d->group_dof[0];
	d->group_scale[2] = d->group_scale[0];
	if (history_tail_fit(d->opts.levels, xs, nf, m, tot, level, nz, a, 2, &nu, &scale)) {
		d->group_dof[2] = fmin(nu, cap);
		d->group_scale[2] = scale;
	}
	return prior;
}

/*
 * How far from their models the functions' self times land in the history's own runs: per run,
 * the median |z| over the functions with STATS_POOL_MIN_COUNT samples a run (about those
 * deflate() checks in a head: its judged self times), each run's deviations judged as a head's
 * are, on its tail group's t. Identical runs on one machine do not all land at the
 * 0.6745 of independent items: the memory-bound half of a suite swings together, and a run in
 * which it swung is as noisy as the model was learned to be. d->history_spread is the largest
 * such median over the runs (0: fewer than STATS_TAIL_SCALE_MIN_RUNS runs, or too few
 * functions to check). d->history_ordinary is the largest over the ordinary runs: those whose
 * median is not beyond HISTORY_SPELL_FENCE robust standard deviations (1.4826 times the
 * medians' median absolute deviation, at least the 0.787 / sqrt(n) a median of n wanders by)
 * above the runs' median. A run beyond met a slow spell of the machine the rest of the
 * history never saw (au2d: one run at 1.75, the other 29 at 0.40-1.05); job_spell asks it.
 * Taken as deflate's bar instead of the largest, it widened heads noisier than the ordinary
 * runs after such a spell and missed planted changes (+20 % of a 5 % function in 3 of 10 more
 * heads of au2d; docs/benchmarks.md, "A slow spell that lasts the job").
 */
#define HISTORY_SPELL_FENCE 4.0

static void history_spread(struct report_diff *d, const double *xs, size_t nf, size_t m,
                           const double *tot, const double *level, const unsigned char *code,
                           const struct stats_noise *nz)
{
	d->history_spread = d->history_ordinary = 0;
	if (m < STATS_TAIL_SCALE_MIN_RUNS)
		return;
	double all = 0;
	for (size_t i = 0; i < m; i++)
		all += tot[i];
	double *z = xmalloc(st_mult(st_mult(nf ? nf : 1, m), sizeof(*z)));
	int *grp = xmalloc(st_mult(nf ? nf : 1, sizeof(*grp)));
	size_t n = 0;
	for (size_t f = 0; f < nf; f++) {
		if (!code[f] || !stats_run_deviations(xs + f * m, m, level, all, d->efficiency,
		                                      &nz[f], z + n * m))
			continue;
		grp[n++] = stats_tail_group(&nz[f]);
	}
	if (n >= REPORT_HEAD_CHECK_FUNCTIONS) {
		double *col = xmalloc(st_mult(n, sizeof(*col)));
		double *run = xmalloc(st_mult(m, sizeof(*run))),
		       *dev = xmalloc(st_mult(m, sizeof(*dev)));
		for (size_t i = 0; i < m; i++) {
			for (size_t j = 0; j < n; j++)
				col[j] = stats_normal_quantile2(
				        ratio_p(d, grp[j], 1, z[j * m + i], INFINITY));
			run[i] = stats_median(col, n);
			d->history_spread = fmax(d->history_spread, run[i]);
		}
		memcpy(dev, run, m * sizeof(*dev));
		double mid = stats_median(dev, m);
		for (size_t i = 0; i < m; i++)
			dev[i] = fabs(run[i] - mid);
		double sd = fmax(1.4826 * stats_median(dev, m), 0.787 / sqrt((double)n));
		for (size_t i = 0; i < m; i++)
			if (run[i] <= mid + HISTORY_SPELL_FENCE * sd)
				d->history_ordinary = fmax(d->history_ordinary, run[i]);
		free(dev);
		free(run);
		free(col);
	}
	free(z);
	free(grp);
}

void report_levels_release(struct report_levels *l)
{
	free(l->level);
	memset(l, 0, sizeof(*l));
}

/* The history runs' levels (stats_run_levels), from cache when it holds those of the same runs
 * and weighting, else learned and kept there (cache may be NULL). */
static void history_levels(struct report_levels *cache, struct profile *const *runs, size_t m,
                           const double *xs, size_t nf, const double *tot,
                           const unsigned char *code, double min_eff, double *level)
{
	if (cache && cache->level && cache->runs == runs && cache->nruns == m &&
	    cache->min_efficiency == min_eff) {
		memcpy(level, cache->level, m * sizeof(*level));
		return;
	}
	stats_run_levels(xs, nf, m, tot, code, min_eff, level);
	if (!cache || !m)
		return;
	cache->nfit = 0;
	free(cache->level);
	cache->level = xmalloc(st_mult(m, sizeof(*level)));
	memcpy(cache->level, level, m * sizeof(*level));
	cache->runs = runs;
	cache->nruns = m;
	cache->min_efficiency = min_eff;
}

/* stats_tail_fit of group at efficiency a, from cache when it holds that fit of this history
 * (history_levels made cache this history's), else fitted and kept there. */
static int history_tail_fit(struct report_levels *cache, const double *xs, size_t nf, size_t m,
                            const double *tot, const double *level, const struct stats_noise *nz,
                            double a, int group, double *nu, double *scale)
{
	size_t cap = cache && cache->level ? sizeof(cache->fit) / sizeof(cache->fit[0]) : 0;
	for (size_t i = 0; cap && i < cache->nfit; i++) {
		const struct report_tail_fit *f = &cache->fit[i];
		if (f->group == group && f->a == a) {
			*nu = f->nu;
			*scale = f->scale;
			return f->fitted;
		}
	}
	int fitted = stats_tail_fit(xs, nf, m, tot, level, nz, a, group, nu, scale);
	if (cap && cache->nfit < cap)
		cache->fit[cache->nfit++] = (struct report_tail_fit){group, fitted, a, *nu, *scale};
	return fitted;
}

/*
 * Learns the noise model from the history runs (stats_item_noise: each item's own spread,
 * shrunk toward the median of its kind). Without two history runs every item gets the assumed
 * REPORT_MIN_EXTRA_VARIANCE. d->extra_variance is the functions' pooled value.
 */
static void estimate_noise(struct report_diff *d, struct profile *const *runs, size_t nruns,
                           struct noise_model *nm)
{
	struct profile *names = d->tree.names;
	size_t ns = names->nstr, nf = names->nframes, m = runs ? nruns : 0;
	nm->test = xcalloc(ns ? ns : 1, sizeof(*nm->test));
	nm->self = xcalloc(nf ? nf : 1, sizeof(*nm->self));
	nm->total = xcalloc(nf ? nf : 1, sizeof(*nm->total));
	d->history_runs = m;
	d->extra_estimated = m >= 2;
	size_t mm = m ? m : 1;
	double *xt = xcalloc(st_mult(ns ? ns : 1, mm), sizeof(double));
	double *xs = xcalloc(st_mult(nf ? nf : 1, mm), sizeof(double));
	double *xT = xcalloc(st_mult(nf ? nf : 1, mm), sizeof(double));
	double *tot = xcalloc(mm, sizeof(double));
	for (size_t i = 0; i < m; i++)
		history_counts(names, runs[i], i, m, xt, xs, xT, tot);
	double floor = m >= 2 ? REPORT_MIN_MEASURED_VARIANCE : REPORT_MIN_EXTRA_VARIANCE;
	/* Each history run's level by the estimator the head's scale factor uses, from the
	 * functions' self times: every item's spread is then measured in the terms it is judged
	 * in (a function's total, or a test, moves with the memory-bound callee it holds). */
	unsigned char *code = xcalloc(nf ? nf : 1, 1);
	for (size_t f = 0; f < nf; f++)
		code[f] = (unsigned char)is_code(names, (uint32_t)f);
	/* How much of Poisson's variance sampling really adds, from the functions' self times
	 * (the most items); only when the head is sampled at the history's rate, only when
	 * the history has enough functions to see how heavy its tails are, and only for a suite
	 * with enough functions for deflate() to check the head's own spread: the sharper model
	 * without those checks is the one that cries wolf (a six-function suite's A/A under
	 * load: a memory-bound walk +5.3 % on a 0.5 % history, judged sub-Poisson, failed). */
	size_t checkable = 0;
	for (size_t f = 0; f < nf; f++) {
		double sum = 0;
		for (size_t i = 0; i < m; i++)
			sum += xs[f * m + i];
		checkable += code[f] && m && sum / (double)m >= STATS_POOL_MIN_COUNT;
	}
	int sub = same_rate(d, runs, m) && checkable >= REPORT_HEAD_CHECK_FUNCTIONS;
	/* Under the same conditions the levels weight each function by the spread it shows, down
	 * to STATS_MIN_EFFICIENCY times Poisson's. On a loaded machine the memory-bound and
	 * branchy half of a suite swings together; with Poisson-floored weights the steady loops
	 * (counts agreeing within 1-2 %) looked no more precise than the swinging ones, the
	 * levels followed the swinging half, and 4 % of level error went into every steady
	 * loop's spread (bench/verdicts' /tmp/vh1: +30 % of a 5 % loop found in 0 of 10 heads). */
	double *level = xcalloc(mm, sizeof(double));
	history_levels(d->opts.levels, runs, m, xs, nf, tot, code, sub ? STATS_MIN_EFFICIENCY : 1,
	               level);
	double a = sub ? stats_sampling_efficiency(xs, nf, m, tot, level) : 1;
	d->level_variance = history_level_variance(runs, m, level);
	for (;;) {
		stats_item_noise(xs, nf, m, tot, level, a, STATS_PRIOR_DOF,
		                 REPORT_MIN_EXTRA_VARIANCE, floor, nm->self, &d->extra_variance);
		if (history_tail_fit(d->opts.levels, xs, nf, m, tot, level, nm->self, a, -1,
		                     &d->tail_dof, &d->tail_scale) ||
		    a == 1)
			break;
		a = 1;
	}
	/* A fitted tail narrower than the model (scale below 1: sampling ticking more evenly than
	 * Poisson's) sharpens every test as the efficiency does: not where the head's own spread
	 * cannot be checked. A heavier tail (a wider one) is always kept. */
	if (checkable < REPORT_HEAD_CHECK_FUNCTIONS && d->tail_scale < 1)
		d->tail_scale = 1;
	double prior = steady_tail(d, xs, nf, m, tot, level, nm->self, a, checkable);
	d->efficiency = a;
	history_spread(d, xs, nf, m, tot, level, code, nm->self);
	stats_item_noise(xt, ns, m, tot, level, a, STATS_PRIOR_DOF, REPORT_MIN_EXTRA_VARIANCE,
	                 floor, nm->test, NULL);
	stats_item_noise(xT, nf, m, tot, level, a, STATS_PRIOR_DOF, REPORT_MIN_EXTRA_VARIANCE,
	                 floor, nm->total, NULL);
	if (prior > 0) {
		stats_tail_scales(xt, ns, m, tot, level, a, prior, nm->test);
		stats_tail_scales(xT, nf, m, tot, level, a, prior, nm->total);
	}
	free(code);
	free(level);
	free(xt);
	free(xs);
	free(xT);
	free(tot);
}

static void noise_model_release(struct noise_model *nm)
{
	free(nm->test);
	free(nm->self);
	free(nm->total);
}

/* Sums over the topmost node of each frame on each stack (a function's total) of v. */
static void frame_totals(const struct profile *names, const double *v, const uint8_t *rep,
                         double *out)
{
	for (size_t n = 1; n < names->nnodes; n++)
		if (!rep[n])
			out[names->nodes[n].frame] += v[n];
}

static void propagate(const struct profile *names, const double *self, double *total)
{
	memcpy(total, self, names->nnodes * sizeof(*total));
	for (size_t n = names->nnodes; n-- > 1;)
		total[names->nodes[n].parent] += total[n];
}

void report_diff_settle(struct report_diff *d)
{
	struct report_tree *t = &d->tree;
	const struct profile *names = t->names;
	size_t nn = names->nnodes, nf = names->nframes;
	d->nregressed = d->nimproved = 0;
	memset(t->frame_flag, 0, nf ? nf : 1);
	for (size_t i = 0; i < d->nitems; i++) {
		struct report_item *it = &d->items[i];
		if (it->cmp.kind == REPORT_REGRESSION)
			d->nregressed++;
		else if (it->cmp.kind == REPORT_IMPROVEMENT)
			d->nimproved++;
		if (it->measure == REPORT_SELF && it->cmp.significant)
			t->frame_flag[it->frame] = it->cmp.kind == REPORT_REGRESSION ? 1 : -1;
	}
	d->verdict = d->nregressed ? REPORT_REGRESSED : d->nimproved ? REPORT_IMPROVED : REPORT_OK;

	/* Hottest call path of each function: its heaviest node (head side, or base when it
	 * shrank). */
	uint32_t *best_h = xcalloc(nf ? nf : 1, sizeof(*best_h));
	uint32_t *best_b = xcalloc(nf ? nf : 1, sizeof(*best_b));
	for (size_t n = 1; n < nn; n++) {
		uint32_t f = names->nodes[n].frame;
		if (!best_h[f] || t->head[n] > t->head[best_h[f]])
			best_h[f] = (uint32_t)n;
		if (!best_b[f] || t->base[n] > t->base[best_b[f]])
			best_b[f] = (uint32_t)n;
	}
	for (size_t i = 0; i < d->nitems; i++) {
		struct report_item *it = &d->items[i];
		if (it->measure == REPORT_TEST)
			continue;
		int use_base = it->cmp.kind == REPORT_IMPROVEMENT || !(it->cmp.head_count > 0);
		it->path = use_base ? best_b[it->frame] : best_h[it->frame];
	}
	if (d->nitems)
		qsort(d->items, d->nitems, sizeof(*d->items), item_cmp);
	free(best_h);
	free(best_b);
}

void report_diff_new(struct report_diff **out, const struct profile *base, size_t base_nruns,
                     struct profile *const *history, size_t nhistory, const struct profile *head,
                     const struct report_options *o)
{
	report_diff_new_confirmed(out, base, base_nruns, history, nhistory, head, NULL, NULL, 0, o);
}

void report_diff_new_confirmed(struct report_diff **out, const struct profile *base,
                               size_t base_nruns, struct profile *const *history, size_t nhistory,
                               const struct profile *head, struct report_diff *const *peers,
                               const int64_t *peer_ids, size_t npeers,
                               const struct report_options *o)
{
	struct report_diff *d = xcalloc(1, sizeof(*d));
	struct report_tree *t = &d->tree;
	size_t items_alloc = 0;
	d->opts = *o;
	d->base_runs = base_nruns ? base_nruns : 1;
	d->tail_dof = INFINITY;
	d->tail_scale = 1;
	d->head_other_cpus = d->history_other_cpus = NAN;
	for (int g = 0; g < STATS_TAIL_GROUPS; g++) {
		d->group_dof[g] = INFINITY;
		d->group_scale[g] = 1;
	}
	/* A program or library renamed is not every one of its functions new and gone. */
	struct strbuf note = STRBUF_INIT;
	struct profile *renamed_head = profile_rename_modules(head, base, &note);
	if (renamed_head) {
		head = renamed_head;
		d->renamed = strbuf_detach(&note, NULL);
	}
	strbuf_release(&note);
	d->base_period = report_period(base);
	d->head_period = report_period(head);
	d->c = d->base_period / ((double)d->base_runs * d->head_period);

	t->names = profile_new();
	struct side_map hm, bm;
	map_side(t->names, head, 1, &hm);
	map_side(t->names, base, 1, &bm);
	for (size_t i = 0; history && i < nhistory; i++)
		intern_history(t->names, history[i]);
	struct profile *names = t->names;
	size_t nn = names->nnodes, nf = names->nframes, ns = names->nstr;
	t->head_self = xcalloc(nn, sizeof(double));
	t->base_self = xcalloc(nn, sizeof(double));
	t->head = xcalloc(nn, sizeof(double));
	t->base = xcalloc(nn, sizeof(double));
	t->frame_flag = xcalloc(nf ? nf : 1, sizeof(int8_t));
	double *test_h = xcalloc(ns, sizeof(double)), *test_b = xcalloc(ns, sizeof(double));
	for (size_t i = 0; i < head->nsamples; i++) {
		t->head_self[hm.node[head->samples[i].node]] += (double)head->samples[i].count;
		test_h[hm.test[i]] += (double)head->samples[i].count;
		d->head_samples += (double)head->samples[i].count;
	}
	for (size_t i = 0; i < base->nsamples; i++) {
		t->base_self[bm.node[base->samples[i].node]] += (double)base->samples[i].count;
		test_b[bm.test[i]] += (double)base->samples[i].count;
		d->base_samples += (double)base->samples[i].count;
	}
	struct frame_test *ft = NULL;
	size_t nft = 0, ft_alloc = 0;
	add_frame_tests(&ft, &nft, &ft_alloc, t->names, head, &hm, 1);
	add_frame_tests(&ft, &nft, &ft_alloc, t->names, base, &bm, 1 / (double)d->base_runs);
	find_holders(d, ft, nft);
	free(ft);
	side_map_release(&hm);
	side_map_release(&bm);
	profile_free(renamed_head);
	d->base_cpu = d->base_samples * d->base_period / (double)d->base_runs;
	d->head_cpu = d->head_samples * d->head_period;
	propagate(names, t->head_self, t->head);
	propagate(names, t->base_self, t->base);
	build_children(t);

	/* Per-function self and total. */
	uint8_t *rep = xcalloc(nn, 1);
	for (size_t n = 1; n < nn; n++)
		rep[n] = (uint8_t)repeated_below(names, (uint32_t)n);
	struct func_sums fs = {
	        xcalloc(nf ? nf : 1, sizeof(double)), xcalloc(nf ? nf : 1, sizeof(double)),
	        xcalloc(nf ? nf : 1, sizeof(double)), xcalloc(nf ? nf : 1, sizeof(double))};
	for (size_t n = 1; n < nn; n++) {
		fs.self_h[names->nodes[n].frame] += t->head_self[n];
		fs.self_b[names->nodes[n].frame] += t->base_self[n];
	}
	frame_totals(names, t->head, rep, fs.total_h);
	frame_totals(names, t->base, rep, fs.total_b);

	struct noise_model nm;
	estimate_noise(d, history, nhistory, &nm);
	/* Other runs of the head's code: their p combined where the tails are learned; below
	 * that, only the gate asks them (short_history_gate). */
	struct report_diff *const *gate_peers = peers;
	size_t ngate = npeers;
	if (npeers) {
		d->confirm_runs = npeers + 1;
		d->confirm_ids = xmalloc(st_mult(npeers, sizeof(*d->confirm_ids)));
		memcpy(d->confirm_ids, peer_ids, npeers * sizeof(*peer_ids));
	}
	if (d->history_runs < STATS_TAIL_SCALE_MIN_RUNS)
		npeers = 0;
	estimate_scale(d, &fs, nm.self);
	shift_spread(d);
	d->c *= d->scale;

	/* Tests and self times first: which functions are flagged on their own. */
	int named_tests = 0;
	for (size_t s = 1; s < ns; s++)
		named_tests |= test_h[s] > 0 || test_b[s] > 0;
	d->tests_attributed = named_tests;
	for (size_t s = 0; s < ns; s++) {
		if (!(test_h[s] > 0) && !(test_b[s] > 0))
			continue;
		add_item(d, &items_alloc, REPORT_TEST, profile_str(names, (uint32_t)s), "",
		         UINT32_MAX, test_b[s], test_h[s], &nm.test[s]);
		/* "(outside tests)" is harness and tool time, and takes the jitter of where tests
		 * begin and end: judged only when it is the whole suite (no test attributed).
		 * A test new or gone is an attribution change (a test added, removed, or whose
		 * samples went to "(outside tests)" in one run), never a regression. Functions
		 * running there are judged as functions. */
		struct report_cmp *c = &d->items[d->nitems - 1].cmp;
		if (named_tests && !*profile_str(names, (uint32_t)s))
			not_judged(c, REPORT_HARNESS);
		else if (named_tests && (!(test_b[s] > 0) || !(test_h[s] > 0)))
			not_judged(c, REPORT_ATTRIBUTION);
	}
	for (size_t f = 0; f < nf; f++) {
		if (!is_function(names, (uint32_t)f) ||
		    (!(fs.self_h[f] > 0) && !(fs.self_b[f] > 0)))
			continue;
		const struct profile_frame *fr = &names->frames[f];
		add_item(d, &items_alloc, REPORT_SELF, profile_str(names, fr->function),
		         profile_str(names, fr->module), (uint32_t)f, fs.self_b[f], fs.self_h[f],
		         &nm.self[f]);
		if (!is_code(names, (uint32_t)f))
			not_judged(&d->items[d->nitems - 1].cmp, REPORT_NOT_CODE);
	}
	judge(d, peers, npeers, 0);
	for (size_t i = 0; i < d->nitems; i++)
		if (d->items[i].measure == REPORT_SELF && d->items[i].cmp.significant)
			t->frame_flag[d->items[i].frame] = 1;

	/* Totals without the samples of flagged functions: what their callees do not explain. */
	double *rs_h = xcalloc(nn, sizeof(double)), *rs_b = xcalloc(nn, sizeof(double));
	double *rt_h = xcalloc(nn, sizeof(double)), *rt_b = xcalloc(nn, sizeof(double));
	for (size_t n = 1; n < nn; n++) {
		int flagged = t->frame_flag[names->nodes[n].frame] != 0;
		rs_h[n] = flagged ? 0 : t->head_self[n];
		rs_b[n] = flagged ? 0 : t->base_self[n];
	}
	propagate(names, rs_h, rt_h);
	propagate(names, rs_b, rt_b);
	double *res_h = xcalloc(nf ? nf : 1, sizeof(double));
	double *res_b = xcalloc(nf ? nf : 1, sizeof(double));
	frame_totals(names, rt_h, rep, res_h);
	frame_totals(names, rt_b, rep, res_b);
	for (size_t f = 0; f < nf; f++) {
		if (!is_function(names, (uint32_t)f))
			continue;
		int flagged = t->frame_flag[f] != 0;
		double callee_h = res_h[f] - (flagged ? 0 : fs.self_h[f]);
		double callee_b = res_b[f] - (flagged ? 0 : fs.self_b[f]);
		/* Only functions that call something of weight get a total of their own. */
		if (!(d->head_samples > 0 && callee_h / d->head_samples >= o->min_share) &&
		    !(d->base_samples > 0 && callee_b / d->base_samples >= o->min_share))
			continue;
		const struct profile_frame *fr = &names->frames[f];
		/* A test function's total is often exactly its test: judge that once. */
		if (same_as_test(d, profile_str(names, fr->function), res_b[f], res_h[f]))
			continue;
		add_item(d, &items_alloc, REPORT_TOTAL, profile_str(names, fr->function),
		         profile_str(names, fr->module), (uint32_t)f, res_b[f], res_h[f],
		         &nm.total[f]);
		if (!is_code(names, (uint32_t)f))
			not_judged(&d->items[d->nitems - 1].cmp, REPORT_NOT_CODE);
	}
	judge(d, peers, npeers, 1);
	detectable(d, npeers);

	if (d->history_runs < STATS_TAIL_SCALE_MIN_RUNS)
		unrepeated(d, gate_peers, ngate);
	report_diff_settle(d);
	short_history_gate(d, gate_peers, ngate);

	free(res_h);
	free(res_b);
	free(rs_h);
	free(rs_b);
	free(rt_h);
	free(rt_b);
	free(fs.self_b);
	free(fs.self_h);
	free(fs.total_b);
	free(fs.total_h);
	free(rep);
	free(test_h);
	free(test_b);
	noise_model_release(&nm);
	*out = d;
}

static int by_key(const void *x, const void *y)
{
	const double *a = x, *b = y;
	return a[0] < b[0] ? -1 : a[0] > b[0];
}

size_t report_diff_undecided(const struct report_diff *d, size_t max_runs, size_t *idx,
                             size_t *flagged)
{
	size_t n = 0, runs = d->confirm_runs ? d->confirm_runs : 1;
	int short_history = d->history_runs < STATS_TAIL_SCALE_MIN_RUNS;
	*flagged = 0;
	if (runs >= max_runs || d->ab)
		return 0;
	/* Flagged items, the regressions first: another run confirms or takes them back (below
	 * STATS_TAIL_SCALE_MIN_RUNS history runs, each further run must flag them too:
	 * unrepeated). An improvement too: one run's swing that a comment shows as a speed-up
	 * is a false alarm all the same. */
	for (int kind = REPORT_REGRESSION; kind <= REPORT_IMPROVEMENT; kind++)
		for (size_t i = 0; i < d->nitems; i++)
			if (d->items[i].cmp.kind == (enum report_kind)kind)
				idx[n++] = i;
	*flagged = n;
	if (short_history)
		return n;
	double k = (double)runs, kmax = (double)max_runs;
	/* (best-case p, item) per candidate, a family at a time */
	double *cand = xmalloc(st_mult(d->nitems ? d->nitems : 1, 2 * sizeof(*cand)));
	for (int fam = 0; fam < 2; fam++) {
		size_t m = 0, sig = 0, nc = 0;
		for (size_t i = 0; i < d->nitems; i++) {
			const struct report_cmp *c = &d->items[i].cmp;
			if (!c->tested || (d->items[i].measure == REPORT_TEST) != fam)
				continue;
			m++;
			sig += (size_t)c->significant;
			if (c->significant || !c->ratio_test ||
			    !(c->change >= d->opts.min_change) || !(c->p < 1))
				continue;
			/* the largest p so far (confirm_p undone), as every further run's */
			double worst = pow(c->p, 1 / confirm_power(c, k, d->job_spell));
			cand[2 * nc] = pow(worst, confirm_power(c, kmax, d->job_spell));
			cand[2 * nc + 1] = (double)i;
			nc++;
		}
		qsort(cand, nc, 2 * sizeof(*cand), by_key);
		size_t take = 0;
		for (size_t j = 0; j < nc; j++)
			if (cand[2 * j] <= d->opts.alpha * (double)(sig + j + 1) / (double)m)
				take = j + 1;
		for (size_t j = 0; j < take; j++)
			idx[n++] = (size_t)cand[2 * j + 1];
	}
	free(cand);
	return n;
}

void report_diff_free(struct report_diff *d)
{
	if (!d)
		return;
	profile_free(d->tree.names);
	free(d->tree.base);
	free(d->tree.head);
	free(d->tree.base_self);
	free(d->tree.head_self);
	free(d->tree.frame_flag);
	free(d->tree.child_start);
	free(d->tree.child);
	free(d->items);
	free(d->renamed);
	free(d->confirm_ids);
	free(d->holders);
	free(d->head_incomplete);
	free(d);
}

static const struct report_tree *sort_tree;
static int sort_by_name;

static int child_cmp(const void *x, const void *y)
{
	const struct profile *names = sort_tree->names;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	if (!sort_by_name && sort_tree->head[a] != sort_tree->head[b])
		return sort_tree->head[a] > sort_tree->head[b] ? -1 : 1;
	const struct profile_frame *fa = &names->frames[names->nodes[a].frame];
	const struct profile_frame *fb = &names->frames[names->nodes[b].frame];
	int c = strcmp(profile_str(names, fa->function), profile_str(names, fb->function));
	if (!c)
		c = strcmp(profile_str(names, fa->module), profile_str(names, fb->module));
	if (!c)
		c = (int)fa->kind - (int)fb->kind;
	return c ? c : (a < b ? -1 : a > b);
}

uint32_t *report_tree_children(const struct report_tree *t, uint32_t node, int by_name, size_t *n)
{
	size_t lo = t->child_start[node], hi = t->child_start[node + 1];
	*n = hi - lo;
	uint32_t *c = xmalloc(st_mult(*n ? *n : 1, sizeof(*c)));
	memcpy(c, t->child + lo, *n * sizeof(*c));
	sort_tree = t;
	sort_by_name = by_name;
	if (*n > 1)
		qsort(c, *n, sizeof(*c), child_cmp);
	return c;
}
