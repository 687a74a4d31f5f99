/* Paired statistics for ciprof ab: per item, per round, the base and head CPU seconds; judged
 * on the log ratio of the summed times with a standard error that is the larger of the
 * sampling (Poisson) error and the rounds' own scatter. Tested in test_report_paired.c. */
#include "report/paired.h"
#include "report/stats.h"
#include "common/hashidx.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct pitem {
	uint32_t measure, name, module; /* name and module: string ids in pa->strs */
};

struct paired {
	struct profile *strs; /* interns names; its samples are unused */
	struct pitem *items;
	size_t nitems, items_alloc;
	struct hashidx idx;
	/* Per round r, per item i: samples [r * cap + i], as counts, and each side's period. */
	double *base, *head;
	size_t cap; /* items per round row */
	double *base_period, *head_period;
	double *base_total, *head_total; /* all samples of each round's side */
	size_t rounds, rounds_alloc;
};

struct paired *paired_new(void)
{
	struct paired *pa = xcalloc(1, sizeof(*pa));
	pa->strs = profile_new();
	hashidx_init(&pa->idx);
	return pa;
}

void paired_free(struct paired *pa)
{
	if (!pa)
		return;
	profile_free(pa->strs);
	hashidx_release(&pa->idx);
	free(pa->items);
	free(pa->base);
	free(pa->head);
	free(pa->base_period);
	free(pa->head_period);
	free(pa->base_total);
	free(pa->head_total);
	free(pa);
}

size_t paired_rounds(const struct paired *pa)
{
	return pa->rounds;
}

static int item_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct paired *pa = ctx;
	return memcmp(&pa->items[pos], key, sizeof(struct pitem)) == 0;
}

/* Grows every round's row to hold at least need items (zeros for rounds before an item
 * appeared). */
static void grow_rows(struct paired *pa, size_t need)
{
	if (need <= pa->cap)
		return;
	size_t cap = pa->cap ? pa->cap : 64;
	while (cap < need)
		cap = st_mult(cap, 2);
	size_t rows = pa->rounds_alloc ? pa->rounds_alloc : 1;
	double *nb = xcalloc(st_mult(rows, cap), sizeof(double));
	double *nh = xcalloc(st_mult(rows, cap), sizeof(double));
	for (size_t r = 0; r < pa->rounds; r++) {
		memcpy(nb + r * cap, pa->base + r * pa->cap, pa->cap * sizeof(double));
		memcpy(nh + r * cap, pa->head + r * pa->cap, pa->cap * sizeof(double));
	}
	free(pa->base);
	free(pa->head);
	pa->base = nb;
	pa->head = nh;
	pa->cap = cap;
}

static size_t item_id(struct paired *pa, enum report_measure m, const char *name,
                      const char *module)
{
	struct pitem key = {(uint32_t)m, profile_intern(pa->strs, name),
	                    profile_intern(pa->strs, module)};
	uint64_t h = hash_bytes(&key, sizeof(key), 7);
	int64_t found = hashidx_find(&pa->idx, h, item_eq, pa, &key);
	if (found >= 0)
		return (size_t)found;
	ALLOC_GROW(pa->items, pa->nitems + 1, pa->items_alloc);
	pa->items[pa->nitems] = key;
	hashidx_insert(&pa->idx, h, (uint32_t)pa->nitems);
	grow_rows(pa, pa->nitems + 1);
	return pa->nitems++;
}

/* Adds p's tests and functions to row (whose item columns may grow meanwhile: row is
 * re-derived from the round index). Returns the profile's total samples. */
static double add_side(struct paired *pa, const struct profile *p, size_t round, int head)
{
	double total = 0;
	/* Tests: samples summed per test name. */
	double *per_test = xcalloc(p->nstr ? p->nstr : 1, sizeof(double));
	for (size_t i = 0; i < p->nsamples; i++) {
		per_test[p->samples[i].test] += (double)p->samples[i].count;
		total += (double)p->samples[i].count;
	}
	for (size_t s = 0; s < p->nstr; s++) {
		if (!(per_test[s] > 0))
			continue;
		size_t id = item_id(pa, REPORT_TEST, profile_str(p, (uint32_t)s), "");
		(head ? pa->head : pa->base)[round * pa->cap + id] += per_test[s];
	}
	free(per_test);
	struct profile_func *f;
	size_t n = profile_functions(p, NULL, &f);
	for (size_t i = 0; i < n; i++) {
		if (!f[i].self)
			continue;
		/* Interning in pa->strs cannot move p's strings. */
		size_t id = item_id(pa, REPORT_SELF, profile_str(p, f[i].function),
		                    profile_str(p, f[i].module));
		(head ? pa->head : pa->base)[round * pa->cap + id] += (double)f[i].self;
	}
	free(f);
	return total;
}

void paired_add_round(struct paired *pa, const struct profile *base, const struct profile *head)
{
	size_t r = pa->rounds;
	if (r + 1 > pa->rounds_alloc) {
		size_t old = pa->rounds_alloc;
		size_t na = old ? old * 2 : 16;
		size_t cap = pa->cap ? pa->cap : 64;
		double *nb = xcalloc(st_mult(na, cap), sizeof(double));
		double *nh = xcalloc(st_mult(na, cap), sizeof(double));
		if (pa->cap) {
			memcpy(nb, pa->base, st_mult(r, pa->cap) * sizeof(double));
			memcpy(nh, pa->head, st_mult(r, pa->cap) * sizeof(double));
		}
		free(pa->base);
		free(pa->head);
		pa->base = nb;
		pa->head = nh;
		pa->cap = cap;
		pa->rounds_alloc = na;
		pa->base_period = xrealloc(pa->base_period, na * sizeof(double));
		pa->head_period = xrealloc(pa->head_period, na * sizeof(double));
		pa->base_total = xrealloc(pa->base_total, na * sizeof(double));
		pa->head_total = xrealloc(pa->head_total, na * sizeof(double));
	}
	pa->rounds = r + 1; /* rows are copied by grow_rows from here on */
	pa->base_total[r] = add_side(pa, base, r, 0);
	pa->head_total[r] = add_side(pa, head, r, 1);
	pa->base_period[r] = report_period(base);
	pa->head_period[r] = report_period(head);
}

size_t paired_planned_looks(size_t max_rounds)
{
	size_t n = 0;
	for (size_t r = 1; r <= max_rounds; r++)
		n += (size_t)paired_is_look(r, max_rounds);
	return n;
}

int paired_is_look(size_t rounds, size_t max_rounds)
{
	if (rounds >= max_rounds)
		return 1;
	return rounds >= PAIRED_MIN_ROUNDS && rounds % 2 == 0;
}

double paired_look_alpha(double total, size_t rounds, size_t max_rounds, int final)
{
	size_t planned = paired_planned_looks(max_rounds);
	if (planned < 2)
		return total;
	double interim = total * PAIRED_INTERIM_SHARE / (double)(planned - 1);
	if (!final)
		return interim;
	size_t before = 0; /* interim looks taken before this one */
	for (size_t r = 1; r < rounds && r < max_rounds; r++)
		before += (size_t)paired_is_look(r, max_rounds);
	return total - (double)before * interim;
}

/* One-sided upper tail P(T > t). */
static double t_sf(double t, double df)
{
	double p2 = stats_t_sf2(t, df) / 2;
	return t >= 0 ? p2 : 1 - p2;
}

void paired_judge(const struct paired *pa, const struct report_options *o, size_t max_rounds,
                  int final, struct paired_judgement *out)
{
	memset(out, 0, sizeof(*out));
	size_t R = pa->rounds, n = pa->nitems;
	out->rounds = R;
	out->looks = paired_planned_looks(max_rounds > R ? max_rounds : R);
	out->alpha_look = paired_look_alpha(o->alpha, R, max_rounds > R ? max_rounds : R, final);
	double same_alpha =
	        paired_look_alpha(PAIRED_SAME_ALPHA, R, max_rounds > R ? max_rounds : R, final);
	out->items = xcalloc(n ? n : 1, sizeof(*out->items));
	out->n = n;
	double bt = 0, ht = 0;
	for (size_t r = 0; r < R; r++) {
		bt += pa->base_total[r];
		ht += pa->head_total[r];
	}
	double margin = log1p(o->min_change);
	double *p = xmalloc(st_mult(n ? n : 1, sizeof(*p)));
	size_t *tested = xmalloc(st_mult(n ? n : 1, sizeof(*tested)));
	size_t nt = 0;
	for (size_t i = 0; i < n; i++) {
		struct paired_item *it = &out->items[i];
		it->measure = (enum report_measure)pa->items[i].measure;
		it->name = profile_str(pa->strs, pa->items[i].name);
		it->module = profile_str(pa->strs, pa->items[i].module);
		it->p = it->q = 1;
		double b = 0, h = 0, bs = 0, hs = 0;
		for (size_t r = 0; r < R; r++) {
			double cb = pa->base[r * pa->cap + i], ch = pa->head[r * pa->cap + i];
			b += cb;
			h += ch;
			bs += cb * pa->base_period[r];
			hs += ch * pa->head_period[r];
		}
		it->base_seconds = bs;
		it->head_seconds = hs;
		it->change = bs > 0 ? hs / bs - 1 : (hs > 0 ? INFINITY : 0);
		it->lo = it->hi = it->change;
		/* Enough samples: the minimum share on one side, and PAIRED_MIN_SAMPLES a round
		 * (fewer make a round's ratio mostly the sampler's phase). */
		int judged = R >= 2 &&
		             ((bt > 0 && b / bt >= o->min_share) ||
		              (ht > 0 && h / ht >= o->min_share)) &&
		             fmax(b, h) >= PAIRED_MIN_SAMPLES * (double)R;
		/* Frames ciprof makes ("[unsampled]", "[unknown]+0x...") are not functions. */
		if (it->measure != REPORT_TEST && report_pseudo_frame(it->name))
			judged = 0;
		/* "(outside tests)" is harness time and the jitter of where tests begin: judged
		 * only when nothing else is a test, as in ciprof report. */
		if (it->measure == REPORT_TEST && !*it->name && n > 0) {
			for (size_t k = 0; k < n; k++)
				if (pa->items[k].measure == REPORT_TEST && k != i)
					judged = 0;
		}
		/* Per-round log ratios, with half a sample added so that empty rounds stay
		 * finite; their scatter is the item's noise on this machine. */
		double sum = 0, ss = 0;
		for (size_t r = 0; r < R; r++) {
			double cb = pa->base[r * pa->cap + i], ch = pa->head[r * pa->cap + i];
			double y = log((ch + 0.5) * pa->head_period[r] /
			               ((cb + 0.5) * pa->base_period[r]));
			sum += y;
			ss += y * y;
		}
		double mean = R ? sum / (double)R : 0;
		double var_emp =
		        R > 1 ? fmax(0, (ss - (double)R * mean * mean) / (double)(R - 1)) : 0;
		it->spread = sqrt(var_emp);
		if (!judged) {
			it->state = PAIRED_NOT_JUDGED;
			continue;
		}
		double est = log((hs > 0 ? hs : 0.5 * pa->head_period[0]) /
		                 (bs > 0 ? bs : 0.5 * pa->base_period[0]));
		/* A fixed-period sampler counts a steady loop's time almost exactly, far below
		 * Poisson's error; many short calls come near Poisson. The rounds' own scatter
		 * tells which, per item: a paired t test on the log ratios (rounds - 1 degrees of
		 * freedom), its variance at least the counts' quantization (a count is off by up to
		 * one sample, uniformly: 1/12 per count), so identical rounds cannot make it 0. */
		double hm = h / (double)R + 0.5, bm = b / (double)R + 0.5;
		double var_quant = (1 / (hm * hm) + 1 / (bm * bm)) / 12;
		double df = (double)(R - 1);
		double se = sqrt(fmax(var_emp, var_quant) / (double)R);
		it->p = stats_t_sf2(est / se, df);
		double crit = stats_t_quantile2(out->alpha_look, df);
		it->lo = expm1(est - crit * se);
		it->hi = expm1(est + crit * se);
		/* Equivalence (two one-sided tests): the change is within the margin. */
		double p_eq = fmax(t_sf((est + margin) / se, df), t_sf((margin - est) / se, df));
		it->state = p_eq <= same_alpha ? PAIRED_SAME : PAIRED_UNDECIDED;
		p[nt] = it->p;
		tested[nt++] = i;
	}
	stats_bh(p, nt, p);
	for (size_t k = 0; k < nt; k++) {
		struct paired_item *it = &out->items[tested[k]];
		it->q = p[k];
		if (it->q <= out->alpha_look && fabs(it->change) >= o->min_change)
			it->state = it->change > 0 ? PAIRED_SLOWER : PAIRED_FASTER;
		out->nslower += it->state == PAIRED_SLOWER;
		out->nfaster += it->state == PAIRED_FASTER;
		out->nundecided += it->state == PAIRED_UNDECIDED;
	}
	out->ntested = nt;
	free(p);
	free(tested);
}

void paired_judgement_release(struct paired_judgement *j)
{
	free(j->items);
	memset(j, 0, sizeof(*j));
}

static const struct paired_item *find_item(const struct paired_judgement *j,
                                           const struct report_item *it)
{
	for (size_t i = 0; i < j->n; i++)
		if (j->items[i].measure == it->measure && !strcmp(j->items[i].name, it->name) &&
		    !strcmp(j->items[i].module, it->module))
			return &j->items[i];
	return NULL;
}

void paired_apply(struct report_diff *d, const struct paired_judgement *j)
{
	/* No suite-wide factor: head against base in plain time. */
	d->c /= d->scale > 0 ? d->scale : 1;
	if (j->rounds) {
		d->base_cpu /= (double)j->rounds;
		d->head_cpu /= (double)j->rounds;
	}
	d->scale = 1;
	d->scale_estimated = 0;
	d->scale_functions = 0;
	d->scale_variance = 0;
	d->shift_variance = 0;
	size_t k = 0;
	for (size_t i = 0; i < d->nitems; i++) {
		struct report_item it = d->items[i];
		if (it.measure == REPORT_TOTAL)
			continue;
		struct report_cmp *c = &it.cmp;
		const struct paired_item *pi = find_item(j, &it);
		c->expected = d->c * c->base_count;
		c->change = c->expected > 0 ? c->head_count / c->expected - 1
		                            : (c->head_count > 0 ? INFINITY : 0);
		if (j->rounds) {
			c->base_seconds /= (double)j->rounds;
			c->head_seconds /= (double)j->rounds;
		}
		enum report_context why = c->context;
		c->tested = pi && pi->state != PAIRED_NOT_JUDGED;
		c->context = c->tested              ? REPORT_JUDGED
		             : why != REPORT_JUDGED ? why
		                                    : REPORT_TOO_SMALL;
		c->p = pi ? pi->p : 1;
		c->q = pi ? pi->q : 1;
		c->spread = pi ? pi->spread : 0;
		c->undecided = pi && pi->state == PAIRED_UNDECIDED;
		c->within = NULL;
		c->significant = pi && (pi->state == PAIRED_SLOWER || pi->state == PAIRED_FASTER);
		c->kind = !c->significant              ? REPORT_UNCHANGED
		          : pi->state == PAIRED_SLOWER ? REPORT_REGRESSION
		                                       : REPORT_IMPROVEMENT;
		d->items[k++] = it;
	}
	d->nitems = k;
	d->opts.alpha = j->alpha_look;
	report_diff_settle(d);
	d->ntested = j->ntested;
	/* Paired rounds gate on their own rule (cmd_ab): every regression. */
	for (size_t i = 0; i < d->nitems; i++) {
		d->items[i].cmp.gates = d->items[i].cmp.kind == REPORT_REGRESSION;
		d->items[i].cmp.gate_q = d->items[i].cmp.q;
	}
	d->ngating = d->nregressed;
}
