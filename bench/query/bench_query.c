/* bench/query: how long does "merge the last 100 runs of a branch" take as the history grows?
 * Stores one branch's synthetic history (bench/storage/synth.c) and, when it reaches each
 * checkpoint size (default 1k, 10k, 100k runs), times store_merge_runs over the last 100 runs
 * (the segment tree: O(log n) blobs) against loading and merging the same 100 runs one by one.
 * Goal: < 50 ms at 100k runs, growing logarithmically. Also times choosing a head's baseline
 * (report_baseline_select: a feature run whose merge-base is a main commit 3 runs back, 5 base
 * runs and 10 history runs loaded), the whole of what 'ciprof report' reads before comparing.
 * usage: bench_query [--sizes 1000,10000,100000] [--stacks N] [--reps R] [--db FILE] */
#include "bench/storage/synth.h"
#include "common/error.h"
#include "model/runmeta.h"
#include "common/xalloc.h"
#include "report/baseline.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_query: %s: %s\n", what, cp_last_error());
	exit(3);
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
	long sizes[8] = {1000, 10000, 100000};
	int nsizes = 3, stacks = 300, reps = 20;
	const char *db = NULL;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--sizes")) {
			nsizes = 0;
			for (char *t = strtok(argv[i + 1], ","); t && nsizes < 8;
			     t = strtok(NULL, ","))
				sizes[nsizes++] = atol(t);
		} else if (!strcmp(argv[i], "--stacks")) {
			stacks = atoi(argv[i + 1]);
		} else if (!strcmp(argv[i], "--reps")) {
			reps = atoi(argv[i + 1]);
		} else if (!strcmp(argv[i], "--db")) {
			db = argv[i + 1];
		} else {
			fprintf(stderr, "bench_query: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	char *path = db ? xstrdup(db) : xasprintf("/tmp/ciprof-bench-query-%d.db", (int)getpid());
	unlink(path);
	struct store *s;
	if (store_open(&s, path, STORE_CREATE) < 0)
		die("open");
	struct synth *w = synth_new(7, stacks, 200, 10);
	printf("one branch, %d stacks per run over 10 tests, 5%% churn per run; merge the last 100 "
	       "runs, median of %d\n",
	       stacks, reps);
	printf("%9s %12s %14s %14s %10s %12s %14s %14s\n", "runs", "store (s)", "segtree (ms)",
	       "one-by-one", "speedup", "db (MB)", "baseline (ms)", "of it load 10");
	long stored = 0;
	double first_ms = 0;
	for (int k = 0; k < nsizes; k++) {
		double t0 = now_ms();
		for (; stored < sizes[k]; stored++) {
			struct profile *p = synth_next(w, stored ? 0.05 : 0, 3000);
			struct run_meta m;
			run_meta_init(&m);
			run_meta_set(&m.branch, "main");
			char commit[41];
			snprintf(commit, sizeof(commit), "%040lx", (unsigned long)stored + 1);
			run_meta_set(&m.commit, commit);
			if (store_add_run(s, &m, p) < 0)
				die("store");
			run_meta_release(&m);
			profile_free(p);
		}
		double store_s = (now_ms() - t0) / 1e3;
		int64_t latest;
		if (store_latest_run(s, "main", &latest) < 0)
			die("latest");
		/* Ranges ending at different runs near the top, so alignment varies. */
		double *seg = xcalloc((size_t)reps, sizeof(double));
		uint64_t check = 0;
		for (int r = 0; r < reps; r++) {
			struct store_query q = {
			        .branch = "main", .to_run = latest - r * 7, .last_n = 100};
			struct profile *p;
			double a = now_ms();
			if (store_merge_runs(s, &q, &p, NULL, NULL) < 0)
				die("merge");
			seg[r] = now_ms() - a;
			check = profile_total(p, NULL);
			profile_free(p);
		}
		/* The same merge without the tree: 100 loads, merged one by one (fewer reps). */
		int breps = reps < 3 ? reps : 3;
		double *brute = xcalloc((size_t)breps, sizeof(double));
		for (int r = 0; r < breps; r++) {
			double a = now_ms();
			struct profile *sum = profile_new();
			for (int64_t id = latest - r * 7 - 99; id <= latest - r * 7; id++) {
				struct profile *p;
				if (store_load_profile(s, id, NULL, &p) < 0)
					die("load");
				profile_merge(sum, p);
				profile_free(p);
			}
			brute[r] = now_ms() - a;
			if (r == 0 && profile_total(sum, NULL) != check && reps == 1)
				fprintf(stderr, "bench_query: totals differ\n");
			profile_free(sum);
		}
		/* A head on another branch, its merge-base main's commit 3 runs back. */
		struct run_meta head;
		run_meta_init(&head);
		run_meta_set(&head.branch, "feature");
		run_meta_set(&head.base_branch, "main");
		char mb[41];
		snprintf(mb, sizeof(mb), "%040lx", (unsigned long)stored - 3);
		run_meta_set(&head.merge_base, mb);
		struct profile *hp = synth_next(w, 0.05, 3000);
		if (store_add_run(s, &head, hp) < 0)
			die("store head");
		profile_free(hp);
		double *sel = xcalloc((size_t)reps, sizeof(double));
		for (int r = 0; r < reps; r++) {
			struct report_baseline b;
			report_baseline_init(&b);
			double a = now_ms();
			if (report_baseline_select(s, &head, "main", NULL, 5, NULL, NULL, &b) < 0)
				die("baseline");
			sel[r] = now_ms() - a;
			if (b.n != 5 || b.nruns != 10 || b.fallback)
				fprintf(stderr,
				        "bench_query: unexpected baseline (%zu runs, %zu "
				        "history)\n",
				        b.n, b.nruns);
			report_baseline_release(&b);
		}
		run_meta_release(&head);
		/* What of that is loading the 10 history runs (main's newest up to the merge-base):
		 * the rest is choosing them and merging the 5. */
		double *load = xcalloc((size_t)reps, sizeof(double));
		for (int r = 0; r < reps; r++) {
			double a = now_ms();
			for (int64_t id = latest - 12; id <= latest - 3; id++) {
				struct profile *p;
				if (store_load_profile(s, id, NULL, &p) < 0)
					die("load");
				profile_free(p);
			}
			load[r] = now_ms() - a;
		}
		qsort(load, (size_t)reps, sizeof(double), cmp);
		qsort(sel, (size_t)reps, sizeof(double), cmp);
		qsort(seg, (size_t)reps, sizeof(double), cmp);
		qsort(brute, (size_t)breps, sizeof(double), cmp);
		struct store_counts c;
		if (store_counts(s, &c) < 0)
			die("counts");
		double med = seg[reps / 2];
		if (!k)
			first_ms = med;
		printf("%9ld %12.1f %14.2f %14.2f %9.1fx %12.1f %14.2f %14.2f", stored, store_s,
		       med, brute[breps / 2], brute[breps / 2] / med,
		       (double)(c.page_count * c.page_size) / 1e6, sel[reps / 2], load[reps / 2]);
		free(sel);
		free(load);
		if (k)
			printf("   (x%.2f of the first size)", med / first_ms);
		printf("\n");
		fflush(stdout);
		free(seg);
		free(brute);
	}
	store_close(s);
	synth_free(w);
	if (!db) {
		unlink(path);
		char *x = xasprintf("%s-wal", path);
		unlink(x);
		free(x);
		x = xasprintf("%s-shm", path);
		unlink(x);
		free(x);
	}
	free(path);
	return 0;
}
