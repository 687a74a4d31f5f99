/* store_synth: writes a history of synthetic runs (bench/storage/synth.c) into a ciprof
 * database, so the CLI's integration test and benchmarks have a known history to query
 * without sampling real processes.
 * usage: store_synth --db FILE [--runs N] [--branch B] [--stacks N] [--seed S] [--tag K=V] */
#include "bench/storage/synth.h"
#include "common/error.h"
#include "model/runmeta.h"
#include "common/xalloc.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
	const char *db = NULL, *branch = "main", *tag = NULL;
	int runs = 3, stacks = 300;
	long seed = 1;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--db"))
			db = argv[i + 1];
		else if (!strcmp(argv[i], "--runs"))
			runs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--branch"))
			branch = argv[i + 1];
		else if (!strcmp(argv[i], "--stacks"))
			stacks = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--seed"))
			seed = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--tag"))
			tag = argv[i + 1];
		else {
			fprintf(stderr, "store_synth: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (!db) {
		fprintf(stderr, "usage: store_synth --db FILE [--runs N] [--branch B] [--stacks N] "
		                "[--seed S] [--tag K=V]\n");
		return 2;
	}
	struct store *s;
	if (store_open(&s, db, STORE_CREATE) < 0) {
		fprintf(stderr, "store_synth: %s\n", cp_last_error());
		return 3;
	}
	struct synth *w = synth_new((uint64_t)seed, stacks, 60, 6);
	for (int r = 0; r < runs; r++) {
		struct profile *p = synth_next(w, r ? 0.05 : 0, 5000);
		struct run_meta m;
		run_meta_init(&m);
		run_meta_set(&m.branch, branch);
		char commit[41];
		snprintf(commit, sizeof(commit), "%08lx%032x", (unsigned long)seed, r + 1);
		run_meta_set(&m.commit, commit);
		run_meta_set(&m.command, "make test");
		m.created_at = (int64_t)time(NULL) - (runs - r) * 3600;
		if (tag) {
			char *k = xstrdup(tag), *v = strchr(k, '=');
			if (v)
				*v++ = '\0';
			run_meta_set_tag(&m, k, v ? v : "");
			free(k);
		}
		if (store_add_run(s, &m, p) < 0) {
			fprintf(stderr, "store_synth: %s\n", cp_last_error());
			return 3;
		}
		printf("%lld\n", (long long)m.id);
		run_meta_release(&m);
		profile_free(p);
	}
	synth_free(w);
	store_close(s);
	return 0;
}
