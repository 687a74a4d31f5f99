/* Synthetic profiles for the report tests: a known "truth" (a suite of tests calling functions,
 * some with callees) sampled like a profiler would, with Poisson counts from a seeded RNG and
 * an optional run-to-run jitter per function, so statistics can be checked against what is
 * known to have changed. Header-only; included by test_report_*.c. */
#ifndef TEST_REPORT_SYNTH_H
#define TEST_REPORT_SYNTH_H

#include "model/profile.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
	/* splitmix64 */
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double rng_uniform(struct rng *r)
{
	return ((double)(rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
}

static double rng_normal(struct rng *r)
{
	double u = rng_uniform(r), v = rng_uniform(r);
	return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* Poisson(lambda): Knuth's product method in chunks of at most 20 (exact); a normal
 * approximation above 2000, where the difference is far below what the tests measure. */
static uint64_t rng_poisson(struct rng *r, double lambda)
{
	if (lambda <= 0)
		return 0;
	if (lambda > 2000) {
		double x = floor(lambda + sqrt(lambda) * rng_normal(r) + 0.5);
		return x < 0 ? 0 : (uint64_t)x;
	}
	uint64_t n = 0;
	while (lambda > 0) {
		double chunk = lambda > 20 ? 20 : lambda;
		lambda -= chunk;
		double limit = exp(-chunk), p = rng_uniform(r);
		while (p > limit) {
			n++;
			p *= rng_uniform(r);
		}
	}
	return n;
}

/* The suite: NTESTS tests, NFUNCS functions; function i belongs to test i % NTESTS, has
 * weight 1/(i+3) (a long tail), and every third one spends 40 % of its time in a callee
 * helper_i. Stack: suite;main;run_tests;<test>;f_i[;helper_i]. */
#define SYN_NTESTS 5
#define SYN_NFUNCS 30

struct synth {
	double weight[SYN_NFUNCS]; /* share of all samples, sums to 1 */
	double factor[SYN_NFUNCS]; /* the truth of a run: each function's time multiplier */
	double hz;
	double seconds;             /* CPU seconds of the suite with all factors 1 */
	double jitter;              /* run-to-run CV of each function's time (lognormal) */
	double fjitter[SYN_NFUNCS]; /* a function's own extra log-scale spread (0: none) */
	double efficiency; /* sampling's variance as a share of Poisson's (0 or 1: Poisson; a
	                      CPU-time clock through steady code: far less) */
	double gjitter;    /* the log-scale spread of one factor per run shared by the functions
	                      with group[i] set (memory-bound code slowed together by a
	                      neighbour sharing the caches) */
	unsigned char group[SYN_NFUNCS];
	double feff[SYN_NFUNCS];  /* a function's own sampling efficiency (0: efficiency): steady
	                             loops tick unequally evenly through the timer */
	double fjump[SYN_NFUNCS]; /* the chance a run slows function i by jump (0: never): a
	                             neighbour's burst during one steady loop */
	double jump;              /* that slowdown's factor */
};

/* A count with mean lambda sampled at efficiency e: Poisson when e is 0 or 1, else rounded
 * normal with variance e * lambda (a timer ticking evenly through steady code). */
static uint64_t rng_count(struct rng *r, double lambda, double e)
{
	if (!(e > 0) || e >= 1)
		return rng_poisson(r, lambda);
	double x = floor(lambda + sqrt(e * lambda) * rng_normal(r) + 0.5);
	return x < 0 ? 0 : (uint64_t)x;
}

static const char *const syn_tests[SYN_NTESTS] = {"test_alpha", "test_bravo", "test_charlie",
                                                  "test_delta", "test_echo"};

static void synth_init(struct synth *s, double seconds, double hz)
{
	double sum = 0;
	for (int i = 0; i < SYN_NFUNCS; i++) {
		s->weight[i] = 1.0 / (i + 3);
		sum += s->weight[i];
		s->factor[i] = 1;
		s->fjitter[i] = 0;
		s->feff[i] = 0;
		s->fjump[i] = 0;
	}
	for (int i = 0; i < SYN_NFUNCS; i++)
		s->weight[i] /= sum;
	s->hz = hz;
	s->seconds = seconds;
	s->jitter = 0;
	s->efficiency = 0;
	s->gjitter = 0;
	s->jump = 1;
	memset(s->group, 0, sizeof(s->group));
}

/* The index of the function holding closest to `share` of the samples. */
static int synth_func_near(const struct synth *s, double share)
{
	int best = 0;
	for (int i = 1; i < SYN_NFUNCS; i++)
		if (fabs(s->weight[i] - share) < fabs(s->weight[best] - share))
			best = i;
	return best;
}

static uint32_t syn_frame(struct profile *p, const char *name, int process)
{
	struct profile_frame f = {.function = profile_intern(p, name),
	                          .module = profile_intern(p, process ? "" : "suite"),
	                          .kind = process ? PROFILE_FRAME_PROCESS : PROFILE_FRAME_FUNCTION};
	return profile_frame(p, &f);
}

/* One run sampled from the truth, every function's time multiplied by factor[i] * scale. */
static struct profile *synth_run(const struct synth *s, struct rng *r, double scale)
{
	struct profile *p = profile_new();
	uint32_t root = profile_node(p, 0, syn_frame(p, "suite", 1));
	uint32_t m = profile_node(p, root, syn_frame(p, "main", 0));
	uint32_t rt = profile_node(p, m, syn_frame(p, "run_tests", 0));
	double total_samples = s->seconds * s->hz;
	uint64_t n = 0;
	double gmult = s->gjitter > 0 ? exp(s->gjitter * rng_normal(r)) : 1;
	for (int i = 0; i < SYN_NFUNCS; i++) {
		char name[32];
		const char *test = syn_tests[i % SYN_NTESTS];
		uint32_t tn = profile_node(p, rt, syn_frame(p, test, 0));
		snprintf(name, sizeof(name), "f_%02d", i);
		uint32_t fn = profile_node(p, tn, syn_frame(p, name, 0));
		double mult = s->factor[i] * scale;
		if (s->jitter > 0)
			mult *= exp(s->jitter * rng_normal(r) - s->jitter * s->jitter / 2);
		if (s->fjitter[i] > 0)
			mult *= exp(s->fjitter[i] * rng_normal(r));
		if (s->group[i])
			mult *= gmult;
		if (s->fjump[i] > 0 && rng_uniform(r) < s->fjump[i])
			mult *= s->jump;
		double lambda = total_samples * s->weight[i] * mult;
		double eff = s->feff[i] > 0 ? s->feff[i] : s->efficiency;
		uint32_t tid = profile_intern(p, test);
		if (i % 3 == 0) {
			snprintf(name, sizeof(name), "helper_%02d", i);
			uint32_t hn = profile_node(p, fn, syn_frame(p, name, 0));
			uint64_t c1 = rng_count(r, lambda * 0.6, eff),
			         c2 = rng_count(r, lambda * 0.4, eff);
			if (c1)
				profile_add(p, tid, fn, c1);
			if (c2)
				profile_add(p, tid, hn, c2);
			n += c1 + c2;
		} else {
			uint64_t c = rng_count(r, lambda, eff);
			if (c)
				profile_add(p, tid, fn, c);
			n += c;
		}
	}
	p->stats.hz = (int)s->hz;
	p->stats.period_ns = (uint64_t)(1e9 / s->hz + 0.5);
	p->stats.samples = n;
	p->stats.cpu_seconds = (double)n * (double)p->stats.period_ns / 1e9;
	return p;
}

/* k base runs merged (like the store's segment tree would) into *merged; run odd_at drawn
 * from odd instead when odd is not NULL. */
static void synth_base_with(const struct synth *s, const struct synth *odd, size_t odd_at,
                            struct rng *r, size_t k, struct profile **runs, struct profile **merged)
{
	*merged = profile_new();
	for (size_t i = 0; i < k; i++) {
		runs[i] = synth_run(odd && i == odd_at ? odd : s, r, 1.0);
		profile_merge(*merged, runs[i]);
		(*merged)->stats.samples += runs[i]->stats.samples;
		(*merged)->stats.cpu_seconds += runs[i]->stats.cpu_seconds;
	}
	(*merged)->stats.hz = runs[0]->stats.hz;
	(*merged)->stats.period_ns = runs[0]->stats.period_ns;
}

static void synth_base(const struct synth *s, struct rng *r, size_t k, struct profile **runs,
                       struct profile **merged)
{
	synth_base_with(s, NULL, 0, r, k, runs, merged);
}

#endif
