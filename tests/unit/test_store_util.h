/* Helpers shared by the store's unit tests: a deterministic PRNG, random profiles with several
 * tests, temporary folders and whole-file reads for "left untouched" checks. */
#ifndef CP_TEST_STORE_UTIL_H
#define CP_TEST_STORE_UTIL_H

#include "model/profile.h"
#include "model/runmeta.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline uint64_t tu_rand(uint64_t *state)
{
	/* splitmix64 */
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A profile of up to nstacks random stacks (depth 1..max_depth over nfuncs functions) spread
 * over ntests tests ("" included), with random counts. */
static inline struct profile *tu_random_profile(uint64_t seed, int ntests, int nstacks, int nfuncs,
                                                int max_depth)
{
	uint64_t st = seed;
	struct profile *p = profile_new();
	struct profile_frame pf = {.function = profile_intern(p, "proc"),
	                           .kind = PROFILE_FRAME_PROCESS};
	uint32_t root = profile_node(p, 0, profile_frame(p, &pf));
	for (int i = 0; i < nstacks; i++) {
		uint32_t node = root;
		int depth = 1 + (int)(tu_rand(&st) % (uint64_t)max_depth);
		for (int d = 0; d < depth; d++) {
			char name[32], file[32];
			int f = (int)(tu_rand(&st) % (uint64_t)nfuncs);
			snprintf(name, sizeof(name), "fn_%d", f);
			snprintf(file, sizeof(file), "src/f%d.c", f % 7);
			struct profile_frame fr = {
			        .function = profile_intern(p, name),
			        .module = profile_intern(p, f % 3 ? "libx.so" : "app"),
			        .file = profile_intern(p, f % 5 ? file : ""),
			        .line = (uint32_t)(f % 5 ? 10 + f : 0),
			};
			node = profile_node(p, node, profile_frame(p, &fr));
		}
		char test[32];
		int t = (int)(tu_rand(&st) % (uint64_t)ntests);
		if (t)
			snprintf(test, sizeof(test), "test_%d", t);
		else
			test[0] = '\0';
		profile_add(p, profile_intern(p, test), node, 1 + tu_rand(&st) % 50);
	}
	p->stats.samples = profile_total(p, NULL);
	p->stats.hz = 99;
	p->stats.period_ns = 1000000000ull / 99;
	p->stats.cpu_seconds = (double)p->stats.samples / 99.0;
	p->stats.wall_seconds = 1.5;
	p->stats.processes = 3;
	p->stats.threads = 4;
	return p;
}

/* The profile's folded text (test_filter NULL = all), as an owned string. */
static inline char *tu_folded(const struct profile *p, const char *test_filter)
{
	char *buf = NULL;
	size_t len = 0;
	if (!profile_total(p, test_filter)) /* profile_write_folded would qsort(NULL, 0) */
		return xstrdup("");
	FILE *f = open_memstream(&buf, &len);
	profile_write_folded(p, f, test_filter);
	fclose(f);
	return buf;
}

static inline char *tu_tmpdir(void)
{
	char tmpl[] = "/tmp/ciprof-test-XXXXXX";
	char *d = mkdtemp(tmpl);
	return d ? xstrdup(d) : NULL;
}

static inline char *tu_read(const char *path, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;
	if (strbuf_read_file(&sb, path) < 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, len);
}

static inline void tu_meta(struct run_meta *m, const char *branch, const char *commit)
{
	run_meta_init(m);
	run_meta_set(&m->branch, branch);
	run_meta_set(&m->commit, commit);
}

#endif
