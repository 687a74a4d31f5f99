/* Synthetic workload generator (see synth.h). Deterministic for a seed. */
#include "bench/storage/synth.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 40
#define NCALLEES  4

struct synth_stack {
	uint16_t f[MAX_DEPTH];
	int depth;
	int test; /* -1: outside tests */
	double weight;
};

struct synth {
	uint64_t rng;
	int nfuncs, ntests, nstacks;
	char **names, **files, **modules;
	int *module_of, *line_of;
	int *callees; /* nfuncs * NCALLEES */
	struct synth_stack *stacks;
	int hot;        /* function id of SYNTH_HOT_FUNCTION */
	int first_test; /* function ids of test bodies start here */
};

static uint64_t rnd(struct synth *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double unif(struct synth *s)
{
	return (double)(rnd(s) >> 11) / 9007199254740992.0;
}

static const char *const ns[] = {"json", "net", "db", "util", "render", "codec"};
static const char *const cls[] = {"Parser",    "Tokenizer", "Buffer", "Connection", "Cache",
                                  "Scheduler", "Matrix",    "Codec",  "Table",      "Index"};
static const char *const meth[] = {"parse",  "next_token", "append",  "flush",   "lookup",
                                   "insert", "resize",     "encode",  "decode",  "compute",
                                   "visit",  "hash",       "compare", "reserve", "step"};
static const char *const args[] = {"()", "(int)", "(std::string_view)",
                                   "(Buffer const&, unsigned long)", "(Node*, Node*)"};
static const char *const mods[] = {"unit_tests",     "libdemo.so.1", "libc.so.6",
                                   "libstdc++.so.6", "libz.so.1",    "libm.so.6"};

/* A new stack. Real call trees share long prefixes: most new stacks branch off an existing
 * one deep down (a different callee, a few frames more) or stop inside it (self time of an
 * inner function); only a few start a fresh path below a test. */
static void make_stack(struct synth *s, struct synth_stack *st, int idx, int have)
{
	uint64_t kind = rnd(s) % 100;
	if (have < 8 || kind < 3) {
		int depth = 10 + (int)(rnd(s) % (MAX_DEPTH - 10 + 1));
		st->test = (rnd(s) % 10) ? (int)(rnd(s) % (uint64_t)s->ntests) : -1;
		int d = 0;
		st->f[d++] = 0; /* main */
		st->f[d++] = 1; /* run_tests */
		st->f[d++] = (uint16_t)(st->test >= 0 ? s->first_test + st->test : 2);
		int cur = (int)(rnd(s) % (uint64_t)(s->first_test - 4)) + 4;
		while (d < depth) {
			st->f[d++] = (uint16_t)cur;
			cur = s->callees[cur * NCALLEES + (int)(rnd(s) % NCALLEES)];
		}
		st->depth = d;
	} else {
		const struct synth_stack *from = &s->stacks[rnd(s) % (uint64_t)have];
		*st = *from;
		int lo = from->depth * 6 / 10;
		int cut = lo + (int)(rnd(s) % (uint64_t)(from->depth - lo)); /* keep f[0..cut) */
		if (cut < 4)
			cut = 4;
		if (kind < 25 && cut < from->depth) {
			st->depth = cut; /* self time in an inner frame */
		} else {
			int d = cut;
			int extra = 1 + (int)(rnd(s) % 6);
			int cur = s->callees[st->f[d - 1] * NCALLEES + (int)(rnd(s) % NCALLEES)];
			while (d < MAX_DEPTH && extra--) {
				st->f[d++] = (uint16_t)cur;
				cur = s->callees[cur * NCALLEES + (int)(rnd(s) % NCALLEES)];
			}
			st->depth = d;
		}
	}
	/* Every ninth stack burns its time in the hot function. */
	if (idx % 9 == 0 && st->depth < MAX_DEPTH)
		st->f[st->depth++] = (uint16_t)s->hot;
	st->weight = 1.0 / pow(1.0 + (double)(rnd(s) % (uint64_t)s->nstacks), 0.8);
	if (idx % 9 == 0)
		st->weight *= 3;
}

struct synth *synth_new(uint64_t seed, int nstacks, int nfuncs, int ntests)
{
	struct synth *s = xcalloc(1, sizeof(*s));
	s->rng = seed * 0x2545f4914f6cdd1dull + 1;
	s->ntests = ntests < 1 ? 1 : ntests;
	s->first_test = nfuncs;
	s->nfuncs = nfuncs + s->ntests;
	s->nstacks = nstacks;
	s->names = xcalloc((size_t)s->nfuncs, sizeof(char *));
	s->files = xcalloc((size_t)s->nfuncs, sizeof(char *));
	s->module_of = xcalloc((size_t)s->nfuncs, sizeof(int));
	s->line_of = xcalloc((size_t)s->nfuncs, sizeof(int));
	s->callees = xcalloc((size_t)s->nfuncs * NCALLEES, sizeof(int));
	for (int i = 0; i < s->nfuncs; i++) {
		char name[160];
		if (i == 0)
			snprintf(name, sizeof(name), "main");
		else if (i == 1)
			snprintf(name, sizeof(name), "run_tests");
		else if (i == 2)
			snprintf(name, sizeof(name), "setup_fixture");
		else if (i == 3)
			snprintf(name, sizeof(name), SYNTH_HOT_FUNCTION);
		else if (i >= s->first_test)
			snprintf(name, sizeof(name), "test_%s_%d", meth[i % 15], i - s->first_test);
		else if (i % 5 < 2)
			snprintf(name, sizeof(name), "%s_%s_%d", ns[i % 6], meth[(i / 6) % 15], i);
		else
			snprintf(name, sizeof(name), "%s::%s::%s%d%s", ns[i % 6], cls[(i / 3) % 10],
			         meth[(i / 7) % 15], i, args[i % 5]);
		s->names[i] = xstrdup(name);
		s->module_of[i] = i < 4 || i >= s->first_test ? 0 : (int)(rnd(s) % 6);
		char file[80];
		snprintf(file, sizeof(file), "src/%s/%s.cc", ns[i % 6], cls[i % 10]);
		s->files[i] = xstrdup(s->module_of[i] >= 2 ? "" : file);
		s->line_of[i] = s->module_of[i] >= 2 ? 0 : 10 + (int)(rnd(s) % 900);
		for (int k = 0; k < NCALLEES; k++)
			s->callees[i * NCALLEES + k] = 4 + (int)(rnd(s) % (uint64_t)(nfuncs - 4));
	}
	s->hot = 3;
	s->stacks = xcalloc((size_t)nstacks, sizeof(*s->stacks));
	for (int i = 0; i < nstacks; i++)
		make_stack(s, &s->stacks[i], i, i);
	return s;
}

void synth_free(struct synth *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nfuncs; i++) {
		free(s->names[i]);
		free(s->files[i]);
	}
	free(s->names);
	free(s->files);
	free(s->module_of);
	free(s->line_of);
	free(s->callees);
	free(s->stacks);
	free(s);
}

struct profile *synth_next(struct synth *s, double churn, uint64_t total_samples)
{
	int replace = (int)(churn * s->nstacks + 0.5);
	for (int i = 0; i < replace; i++) {
		int k = (int)(rnd(s) % (uint64_t)s->nstacks);
		make_stack(s, &s->stacks[k], k, s->nstacks);
	}
	double sum = 0;
	for (int i = 0; i < s->nstacks; i++)
		sum += s->stacks[i].weight;
	struct profile *p = profile_new();
	uint32_t *frame = xmalloc((size_t)s->nfuncs * sizeof(*frame));
	for (int i = 0; i < s->nfuncs; i++) {
		struct profile_frame f = {
		        .function = profile_intern(p, s->names[i]),
		        .module = profile_intern(p, mods[s->module_of[i]]),
		        .file = profile_intern(p, s->files[i]),
		        .line = (uint32_t)s->line_of[i],
		};
		frame[i] = profile_frame(p, &f);
	}
	struct profile_frame pf = {.function = profile_intern(p, "unit_tests"),
	                           .module = profile_intern(p, "unit_tests"),
	                           .kind = PROFILE_FRAME_PROCESS};
	uint32_t root = profile_node(p, 0, profile_frame(p, &pf));
	uint32_t *test_id = xmalloc((size_t)s->ntests * sizeof(*test_id));
	for (int t = 0; t < s->ntests; t++) {
		char name[200];
		snprintf(name, sizeof(name), "suite.%s", s->names[s->first_test + t]);
		test_id[t] = profile_intern(p, name);
	}
	for (int i = 0; i < s->nstacks; i++) {
		const struct synth_stack *st = &s->stacks[i];
		uint32_t node = root;
		for (int d = 0; d < st->depth; d++)
			node = profile_node(p, node, frame[st->f[d]]);
		/* Sampling noise: about Poisson around the expected count, never zero. */
		double expect = (double)total_samples * st->weight / sum;
		double noisy = expect + sqrt(expect) * (unif(s) + unif(s) + unif(s) - 1.5) * 2.0;
		uint64_t c = noisy < 1 ? 1 : (uint64_t)(noisy + 0.5);
		profile_add(p, st->test >= 0 ? test_id[st->test] : 0, node, c);
	}
	p->stats.samples = profile_total(p, NULL);
	p->stats.hz = 99;
	p->stats.period_ns = 1000000000ull / 99;
	p->stats.cpu_seconds = (double)p->stats.samples / 99.0;
	p->stats.wall_seconds = p->stats.cpu_seconds / 2;
	p->stats.processes = 1;
	p->stats.threads = 2;
	free(frame);
	free(test_id);
	return p;
}
