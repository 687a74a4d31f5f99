/* ciprof merge: copies the runs of other databases into this one, each run once. CI keeps its
 * history by merging: two jobs that started from the same database and each added a run lose
 * neither when the second merges its database into what the first saved (docs/merge.md). */
#include "cli/cli.h"
#include "cli/store_open.h"
#include "common/error.h"
#include "common/log.h"
#include "model/profile.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_DB = 256, OPT_DRY_RUN };

static const struct cli_option merge_options[] = {
        {"db", OPT_DB, "FILE",
         "the database runs are merged into, created when missing (default: $CIPROF_DB, else "
         ".ciprof/ciprof.db at the repo top)"},
        {"dry-run", OPT_DRY_RUN, NULL, "say what would be merged, change nothing"},
        {NULL, 0, NULL, NULL},
};

static const char merge_usage[] = "[--db FILE] [--dry-run] SOURCE.db...";
static const char merge_description[] =
        "Copies every run of each SOURCE database that this database does not hold yet, with its\n"
        "metadata, tags, profiles and test outcomes, oldest first. A run is the same run when its\n"
        "start time, commit, branch, command, CI job URL, sample count, measured wall and CPU\n"
        "time and tags agree, so merging twice, or merging a database that was copied from this\n"
        "one, adds nothing again. Runs are appended to their branch in the order merged. Each run\n"
        "is stored in its own transaction: an interrupted merge keeps what it copied, and running\n"
        "it again finishes it. Sources are opened read-only and never changed.\n"
        "\n"
        "CI keeps history that two racing jobs cannot lose by merging: fetch the saved\n"
        "database, merge this job's database into it, save it only if nobody saved in the\n"
        "meantime, else start over (docs/merge.md, docs/ci.md).\n"
        "\n"
        "Prints what it merged to standard error. Exit status: 0 merged (or nothing to\n"
        "merge), 2 usage error, 3 a database could not be read or written.\n"
        "\n"
        "examples:\n"
        "  ciprof merge --db history/ciprof.db .ciprof/ciprof.db\n"
        "  ciprof merge --dry-run --db main.db job1.db job2.db";

struct merge_args {
	const char *db;
	int dry_run;
};

static int merge_opt(void *ctx, int id, const char *arg)
{
	struct merge_args *a = ctx;
	switch (id) {
	case OPT_DB:
		a->db = arg;
		return 0;
	case OPT_DRY_RUN:
		a->dry_run = 1;
		return 0;
	}
	return -1;
}

/* The identity of a run across databases (ids differ between files). Owned string. */
static char *run_key(const struct run_meta *m)
{
	struct strbuf sb = STRBUF_INIT;
	/* Lengths first, so that no choice of field contents can make two keys collide. */
	strbuf_addf(&sb, "%" PRId64 "|%" PRIu64 "|%zu:%s|%zu:%s|%zu:%s|%zu:%s", m->created_at,
	            m->stats.samples, strlen(m->commit), m->commit, strlen(m->branch), m->branch,
	            strlen(m->command), m->command, strlen(m->job_url), m->job_url);
	/* Two runs of one command in one second may count the same samples (a fixed-period sampler
	 * counts a steady loop almost exactly): their measured times, stored as binary doubles and
	 * printed to round-trip, and their tags (in key order, as the store loads them) tell them
	 * apart. */
	strbuf_addf(&sb, "|%.17g|%.17g", m->stats.wall_seconds, m->stats.cpu_seconds);
	for (size_t i = 0; i < m->ntags; i++)
		strbuf_addf(&sb, "|%zu:%s=%zu:%s", strlen(m->tags[i].key), m->tags[i].key,
		            strlen(m->tags[i].value), m->tags[i].value);
	return strbuf_detach(&sb, NULL);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct keyset {
	char **keys;
	size_t n, alloc;
	int sorted;
};

static void keyset_add(struct keyset *k, char *key)
{
	ALLOC_GROW(k->keys, k->n + 1, k->alloc);
	k->keys[k->n++] = key;
	k->sorted = 0;
}

static int keyset_has(struct keyset *k, const char *key)
{
	if (!k->sorted) {
		qsort(k->keys, k->n, sizeof(*k->keys), cmp_str);
		k->sorted = 1;
	}
	return k->n && bsearch(&key, k->keys, k->n, sizeof(*k->keys), cmp_str) != NULL;
}

static void keyset_release(struct keyset *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->keys[i]);
	free(k->keys);
}

/* Keys of every run in s. */
static int collect_keys(struct store *s, struct keyset *out)
{
	struct run_meta *runs = NULL;
	size_t n = 0;
	if (store_list_runs(s, NULL, 0, &runs, &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		keyset_add(out, run_key(&runs[i]));
	store_runs_free(runs, n);
	return 0;
}

/* Copies src's runs that dst lacks into dst (oldest first); counts what it did. */
static int merge_one(struct store *dst, struct keyset *have, const char *src_path, int dry_run,
                     size_t *added, size_t *present)
{
	struct store *src = NULL;
	struct run_meta *runs = NULL;
	size_t n = 0;
	int r = -1;
	if (store_open(&src, src_path, STORE_READONLY) < 0 ||
	    store_list_runs(src, NULL, 0, &runs, &n) < 0)
		goto out;
	/* store_list_runs gives newest first: walk backwards to keep each branch's order. */
	for (size_t i = n; i-- > 0;) {
		char *key = run_key(&runs[i]);
		if (keyset_has(have, key)) {
			(*present)++;
			free(key);
			continue;
		}
		if (dry_run) {
			log_info("merge: would copy run %" PRId64 " (%s, %.12s) from %s",
			         runs[i].id, *runs[i].branch ? runs[i].branch : "no branch",
			         runs[i].commit, src_path);
			keyset_add(have, key);
			(*added)++;
			continue;
		}
		struct run_meta m;
		run_meta_init(&m);
		struct profile *p = NULL;
		int64_t src_id = runs[i].id;
		if (store_get_run(src, src_id, &m) < 0 ||
		    store_load_profile(src, src_id, NULL, &p) < 0) {
			run_meta_release(&m);
			free(key);
			char *why = xstrdup(cp_last_error());
			cp_error("run %" PRId64 " of %s: %s", src_id, src_path, why);
			free(why);
			goto out;
		}
		m.id = 0;
		int w = store_add_run(dst, &m, p);
		if (w == 0)
			log_verbose("merge: run %" PRId64 " of %s is run %" PRId64 " now", src_id,
			            src_path, m.id);
		profile_free(p);
		run_meta_release(&m);
		if (w < 0) {
			free(key);
			goto out;
		}
		keyset_add(have, key);
		(*added)++;
	}
	r = 0;
out:
	store_runs_free(runs, n);
	store_close(src);
	return r;
}

int cmd_merge(int argc, char **argv)
{
	struct merge_args a = {0};
	int first;
	int r = cli_parse(argc, argv, "merge", merge_usage, merge_description, merge_options,
	                  merge_opt, &a, &first);
	if (r)
		return r > 0 ? cli_finish_stdout() : EXIT_USAGE;
	if (first >= argc)
		return cli_usage_error("merge", "name the database(s) to merge from; see 'ciprof "
		                                "merge --help'");
	struct store *dst = NULL;
	if ((r = cli_store_open(&dst, a.db, a.dry_run ? STORE_READONLY : STORE_CREATE)))
		return r;
	struct keyset have = {0};
	if (collect_keys(dst, &have) < 0) {
		r = cli_runtime_error();
		goto out;
	}
	for (int i = first; i < argc; i++) {
		size_t added = 0, present = 0;
		if (merge_one(dst, &have, argv[i], a.dry_run, &added, &present) < 0) {
			r = cli_runtime_error();
			goto out;
		}
		log_info("merge: %s %zu run%s from %s into %s (%zu already there)",
		         a.dry_run ? "would copy" : "copied", added, added == 1 ? "" : "s", argv[i],
		         store_path(dst), present);
	}
	r = EXIT_OK;
out:
	keyset_release(&have);
	store_close(dst);
	return r;
}
