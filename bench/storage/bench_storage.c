/* bench/storage: how big is a history in the store, against the same runs as gzip -6'd
 * folded text (what people keep otherwise)? Stores R synthetic runs (bench/storage/synth.c),
 * or real runs given as folded files (one per run, e.g. from 'ciprof run --no-store -o'; see
 * real.sh), checkpoints, and compares the file's size (segment tree included) with the summed
 * gzip -6 size of each run's folded text. Goal: at least 10x smaller. Also times storing.
 * usage: bench_storage [--runs R] [--stacks N] [--funcs F] [--tests T] [--churn C]
 *                      [--samples S] [--db FILE] [--folded FILE...] */
#include "bench/storage/synth.h"
#include "common/error.h"
#include "model/runmeta.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Size of data after gzip -6 (deflate level 6 with the gzip wrapper, as gzip writes it). */
static size_t gzip6_size(const char *data, size_t len)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		abort();
	size_t cap = deflateBound(&z, len);
	unsigned char *out = xmalloc(cap);
	z.next_in = (unsigned char *)data;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		abort();
	size_t n = z.total_out;
	deflateEnd(&z);
	free(out);
	return n;
}

static long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

int main(int argc, char **argv)
{
	int runs = 20, stacks = 3000, funcs = 300, tests = 40;
	double churn = 0.05;
	long samples = 60000;
	const char *db = NULL;
	char **folded = NULL;
	int nfolded = 0;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--folded")) {
			folded = argv + i + 1;
			nfolded = argc - i - 1;
			break;
		}
		if (!strcmp(argv[i], "--runs"))
			runs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--stacks"))
			stacks = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--funcs"))
			funcs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--tests"))
			tests = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--churn"))
			churn = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--samples"))
			samples = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--db"))
			db = argv[i + 1];
		else {
			fprintf(stderr, "bench_storage: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	char *path = db ? xstrdup(db) : xasprintf("/tmp/ciprof-bench-storage-%d.db", (int)getpid());
	unlink(path);
	struct store *s;
	if (store_open(&s, path, STORE_CREATE) < 0) {
		fprintf(stderr, "bench_storage: %s\n", cp_last_error());
		return 3;
	}
	struct synth *w = synth_new(42, stacks, funcs, tests);
	if (nfolded)
		runs = nfolded;
	size_t stacks_total = 0;
	size_t folded_total = 0, gz_total = 0;
	double store_ms = 0, store_max = 0;
	struct profile *last = NULL;
	/* The second half of the runs: what each further run adds, once a history exists. */
	int half = runs >= 4 ? runs / 2 : 0;
	struct store_counts c_half = {0};
	long size_half = 0;
	size_t gz_half = 0;
	for (int r = 0; r < runs; r++) {
		if (half && r == half) {
			if (store_checkpoint(s) < 0 || store_counts(s, &c_half) < 0) {
				fprintf(stderr, "bench_storage: %s\n", cp_last_error());
				return 3;
			}
			size_half = file_size(path);
			gz_half = gz_total;
		}
		struct profile *p;
		if (nfolded) {
			struct strbuf in = STRBUF_INIT;
			p = profile_new();
			if (strbuf_read_file(&in, folded[r]) < 0 ||
			    profile_parse_folded(p, in.buf, in.len, folded[r]) < 0) {
				fprintf(stderr, "bench_storage: %s\n", cp_last_error());
				return 3;
			}
			strbuf_release(&in);
			p->stats.samples = profile_total(p, NULL);
			p->stats.hz = 99;
		} else {
			p = synth_next(w, r ? churn : 0, (uint64_t)samples);
		}
		stacks_total += p->nsamples;
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		profile_write_folded(p, f, NULL);
		fclose(f);
		folded_total += len;
		gz_total += gzip6_size(text, len);
		free(text);
		struct run_meta m;
		run_meta_init(&m);
		run_meta_set(&m.branch, "main");
		char commit[41];
		snprintf(commit, sizeof(commit), "%040x", r + 1);
		run_meta_set(&m.commit, commit);
		run_meta_set(&m.command, "make test");
		double t0 = now_ms();
		if (store_add_run(s, &m, p) < 0) {
			fprintf(stderr, "bench_storage: %s\n", cp_last_error());
			return 3;
		}
		double dt = now_ms() - t0;
		store_ms += dt;
		if (dt > store_max)
			store_max = dt;
		run_meta_release(&m);
		profile_free(last);
		last = p;
	}
	struct store_counts c;
	if (store_checkpoint(s) < 0 || store_counts(s, &c) < 0) {
		fprintf(stderr, "bench_storage: %s\n", cp_last_error());
		return 3;
	}
	store_close(s);
	long dbsize = file_size(path);
	/* What 'ciprof run' pays: a fresh process opens the file, stores one more run (loading
	 * the dictionary and decoding the branch's last block on the way), closes it. Measured
	 * on a copy so that the sizes above stay those of R runs. */
	double fresh_ms = 0;
	if (last) {
		char *copy = xasprintf("%s.copy", path);
		char *cmd = xasprintf("cp '%s' '%s'", path, copy);
		if (system(cmd) != 0) {
			fprintf(stderr, "bench_storage: cannot copy the database\n");
			return 3;
		}
		double t0 = now_ms();
		struct store *s2;
		struct run_meta m;
		run_meta_init(&m);
		run_meta_set(&m.branch, "main");
		run_meta_set(&m.command, "make test");
		if (store_open(&s2, copy, 0) < 0 || store_add_run(s2, &m, last) < 0) {
			fprintf(stderr, "bench_storage: %s\n", cp_last_error());
			return 3;
		}
		store_close(s2);
		fresh_ms = now_ms() - t0;
		run_meta_release(&m);
		unlink(copy);
		free(cmd);
		cmd = xasprintf("rm -f '%s-wal' '%s-shm'", copy, copy);
		if (system(cmd)) {
		}
		free(cmd);
		free(copy);
		profile_free(last);
	}
	char *wal = xasprintf("%s-wal", path);
	long walsize = file_size(wal);
	if (nfolded)
		printf("runs %d from folded files, %zu stacks/run on average\n", runs,
		       stacks_total / (size_t)runs);
	else
		printf("runs %d, stacks/run %d, functions %d, tests %d, churn %.0f%%, samples/run "
		       "%ld\n",
		       runs, stacks, funcs, tests, churn * 100, samples);
	printf("database rows: %lld strings, %lld frames, %lld stack nodes, %lld profile blobs, "
	       "%lld segment-tree nodes\n",
	       (long long)c.strings, (long long)c.frames, (long long)c.nodes, (long long)c.profiles,
	       (long long)c.segtree_nodes);
	printf("folded text:        %10zu bytes (%zu per run)\n", folded_total,
	       folded_total / (size_t)runs);
	printf("gzip -6 folded:     %10zu bytes (%zu per run)\n", gz_total,
	       gz_total / (size_t)runs);
	printf("ciprof database:    %10ld bytes (%ld per run; wal %ld after checkpoint)\n", dbsize,
	       dbsize / runs, walsize);
	printf("blobs: strings %lld, frames %lld, stack nodes %lld (%.2f B/node), run profiles "
	       "%lld (%.2f B/stack/run), segment tree %lld; pages %lld x %lld B, %lld free\n",
	       (long long)c.bytes_strings, (long long)c.bytes_frames, (long long)c.bytes_nodes,
	       c.nodes ? (double)c.bytes_nodes / (double)c.nodes : 0.0, (long long)c.bytes_profiles,
	       (double)c.bytes_profiles / ((double)runs * stacks), (long long)c.bytes_segtree,
	       (long long)c.page_count, (long long)c.page_size, (long long)c.freelist_pages);
	printf("store time per run: %.1f ms mean, %.1f ms max (one process); %.1f ms for a fresh "
	       "process opening the file and storing run %d\n",
	       store_ms / runs, store_max, fresh_ms, runs + 1);
	printf("ratio gzip/db:      %10.1fx  (goal >= 10x)\n", (double)gz_total / (double)dbsize);
	if (half) {
		int n = runs - half;
		double per = (double)(dbsize - size_half) / n,
		       gz = (double)(gz_total - gz_half) / n;
		long long dict = (c.bytes_strings - c_half.bytes_strings) +
		                 (c.bytes_frames - c_half.bytes_frames);
		long long nodes = c.bytes_nodes - c_half.bytes_nodes;
		long long prof = c.bytes_profiles - c_half.bytes_profiles;
		long long tree = c.bytes_segtree - c_half.bytes_segtree;
		printf("further runs %d-%d: %.0f bytes per run, %.0f gzip'd folded per run: %.2f "
		       "of it "
		       "(goal <= 0.33)\n",
		       half + 1, runs, per, gz, per / gz);
		printf("  per further run: strings+frames %.0f B, stack nodes %.0f B (%.0f new), "
		       "run "
		       "profiles %.0f B, segment tree %.0f B, rows/pages/free %.0f B\n",
		       (double)dict / n, (double)nodes / n, (double)(c.nodes - c_half.nodes) / n,
		       (double)prof / n, (double)tree / n,
		       per - (double)(dict + nodes + prof + tree) / n);
	}
	if (!db) {
		unlink(path);
		unlink(wal);
		char *shm = xasprintf("%s-shm", path);
		unlink(shm);
		free(shm);
	}
	free(wal);
	free(path);
	synth_free(w);
	return 0;
}
