/* store/: ciprof's memory, one SQLite file. Runs with their metadata, interned strings, frames
 * and a stack trie shared by all runs (append-only compressed chunks), one compressed profile
 * blob per run (coded against the branch's previous run), and a segment tree per branch over
 * its runs so that merging any range of runs reads O(log n) blobs. docs/store.md explains the
 * schema and the coding. Every function returns 0 (or a count) on success and -1 with cp_error set
 * (naming the database file and what to do) on failure. */
#ifndef CP_STORE_H
#define CP_STORE_H

#include "model/profile.h"
#include "model/runmeta.h"

#include <stddef.h>
#include <stdint.h>

/* The schema version this ciprof writes, kept in PRAGMA user_version. */
#define STORE_SCHEMA_VERSION 5

enum store_flags {
	STORE_CREATE = 1 << 0,   /* create the file (and its parent folders) when missing */
	STORE_READONLY = 1 << 1, /* never write; an out-of-date schema is an error, not migrated */
};

struct store;

/*
 * Opens the database at path. Without STORE_CREATE a missing file is an error. A file that is
 * not a database, is corrupt, has a newer schema than STORE_SCHEMA_VERSION, or stays locked by
 * another process longer than the busy timeout (10 s; env CIPROF_DB_TIMEOUT_MS overrides) is an
 * error too, and is left byte for byte as it was. The timeout is one budget per wait for a
 * lock, however many attempts the wait takes. A writer (no STORE_READONLY) first runs SQLite's
 * quick_check and refuses a damaged file. An older schema is migrated in one transaction
 * (unless STORE_READONLY, which refuses it and never writes: on a read-only folder or medium
 * the file is opened as immutable). When STORE_CREATE creates a folder named ".ciprof", it
 * also writes ".ciprof/.gitignore" ("*") so the database never dirties a work tree.
 * On success *out is owned by the caller: store_close it.
 */
int store_open(struct store **out, const char *path, int flags);
void store_close(struct store *s);
/* The path given to store_open (borrowed). */
const char *store_path(const struct store *s);

/*
 * Stores one run: meta (every field but stats, tags included) and p (strings, frames, stack
 * trie nodes, per-test samples, and the run's figures: p->stats, with the samples counted
 * and the period and CPU time taken from the rate where p lacks them) in one transaction,
 * so a process killed meanwhile leaves no trace. Waits for other writers (BEGIN IMMEDIATE,
 * retried while busy). Appends the run to meta->branch's segment tree. Sets meta->id, and
 * meta->stats to the figures stored. If meta->created_at is 0 it becomes the current time.
 */
int store_add_run(struct store *s, struct run_meta *meta, const struct profile *p);

/*
 * Lists runs newest first (by id), of one branch when branch is non-NULL, at most limit
 * (0 = all). *out is an array of *n initialized run_meta (owned: store_runs_free).
 */
int store_list_runs(struct store *s, const char *branch, size_t limit, struct run_meta **out,
                    size_t *n);
void store_runs_free(struct run_meta *runs, size_t n);

/* Which runs store_find_runs lists; every condition is optional (0 / NULL: any). */
struct store_run_filter {
	int64_t id;                /* this run */
	const char *branch;        /* of this branch */
	const char *commit;        /* at this commit (the full id as stored) */
	const char *commit_prefix; /* at a commit beginning with this (hex digits only) */
	int64_t before;            /* stored before this run (id < before) */
	int64_t exclude;           /* not this run */
	size_t limit;              /* at most this many, the newest (0 = all) */
	int tags;                  /* also read each run's tags (one more query per run) */
};

/*
 * Lists the runs f selects, newest first (by id), in one SQL query (using the index on branch
 * and id when a branch is given). *out is an array of *n initialized run_meta (owned:
 * store_runs_free).
 */
int store_find_runs(struct store *s, const struct store_run_filter *f, struct run_meta **out,
                    size_t *n);

/* The branches that have runs, ", "-separated, the one with the newest run first (cut after
 * about 400 characters with "..."); "" when none. *out is owned (free()). *nbranches (may be
 * NULL) gets their number. */
int store_branch_names(struct store *s, char **out, int64_t *nbranches);

/* *out = how many runs branch has. */
int store_count_runs(struct store *s, const char *branch, int64_t *out);

/* Fills *out (run_meta_init'ed by the caller) with run id's metadata; an unknown id is an
 * error ("no run ID in FILE; 'ciprof runs' lists them"). */
int store_get_run(struct store *s, int64_t id, struct run_meta *out);

/* *out = the newest run's id, of branch when non-NULL. No runs is an error. */
int store_latest_run(struct store *s, const char *branch, int64_t *out);

/*
 * Loads run id's profile: symbolized frames, stack nodes, samples per test (only test `test`
 * when non-NULL) and stats. *out is owned by the caller (profile_free).
 */
int store_load_profile(struct store *s, int64_t id, const char *test, struct profile **out);

/*
 * A range of one branch's runs. The runs of a branch are numbered 0..n-1 in the order they were
 * stored; a query names a contiguous range of them:
 *   - from_run..to_run (run ids, inclusive; 0 = the branch's first / newest run), and
 *   - if last_n > 0, only the last_n runs of that range;
 *   - if up_to_commit is non-NULL (a full id or a prefix), to_run becomes the newest run of
 *     the branch at that commit (an error when there is none).
 */
struct store_query {
	const char *branch;
	int64_t from_run, to_run;
	size_t last_n;
	const char *up_to_commit;
};

/*
 * Merges the runs q selects into one profile (*out, owned by the caller) by reading O(log n)
 * segment-tree nodes; stats are summed (samples, lost, cpu and wall seconds; period_ns is
 * their ratio). *nruns (may be NULL) gets how many runs were merged; an empty range gives an
 * empty profile and *nruns = 0. ids (may be NULL) receives the merged run ids, oldest first
 * (owned array, free()).
 */
int store_merge_runs(struct store *s, const struct store_query *q, struct profile **out,
                     size_t *nruns, int64_t **ids);

/* What gc removes: runs beyond the newest keep_runs (0 = no limit), and runs created more than
 * older_than_days days before now (0 = no limit). With fold, the runs it removes are folded
 * into per-commit aggregates instead (see store_gc). */
struct store_gc_opts {
	size_t keep_runs;
	long older_than_days;
	int64_t now; /* unix seconds; 0 = time(NULL) */
	int fold;
};

/* The tag an aggregate run carries: how many runs it holds. */
#define STORE_TAG_AGGREGATE "gc.runs"

struct store_gc_result {
	size_t runs_deleted, runs_kept;
	size_t runs_folded, aggregates; /* removed runs folded, into how many aggregates */
	size_t branches_rebuilt;        /* segment trees rebuilt */
	size_t nodes_pruned, frames_pruned, strings_pruned;
};

/*
 * With o->fold, the selected runs of one branch and commit (two or more of them) become one
 * aggregate run instead: the newest of them stays (its id, metadata, tags and test outcomes),
 * at the position of the group's last run in its branch, with the mean profile of the group
 * (each stack's count averaged over the runs the group holds, rounded; an aggregate folded
 * again counts as the runs it holds), the mean CPU and wall time, samples and lost samples,
 * and the tag STORE_TAG_AGGREGATE = how many runs it holds. So an aggregate reads like one
 * run of its commit to every query (trends, noise, blame, baselines), and the others go.
 * A selected run alone at its commit stays as it is. Otherwise:
 *
 * Deletes the selected runs in one transaction, renumbers each affected branch's runs, prunes
 * stack nodes, frames and strings no remaining run uses (renumbering the rest densely), and
 * re-codes every remaining run's profile and segment tree: O(stored runs) decoding and coding.
 * Then checkpoints the WAL and gives freed pages back to the file system (incremental vacuum,
 * on files created with schema 2; older files reuse them for later runs).
 */
int store_gc(struct store *s, const struct store_gc_opts *o, struct store_gc_result *r);

/*
 * The default database path: $CIPROF_DB if set and non-empty, else ".ciprof/ciprof.db" at
 * the top of the git work tree holding the current directory (common/worktree.h: as libgit2
 * finds it), else ".ciprof/ciprof.db" in the current directory. Owned string (free()).
 */
char *store_default_path(void);

/* Copies the WAL into the main file and truncates it (PRAGMA wal_checkpoint(TRUNCATE)), so
 * that the file's size is the database's size. Busy readers only delay it: not an error. */
int store_checkpoint(struct store *s);

/* Counts, for tests, benchmarks and 'ciprof gc' reports: runs, branches, dictionary items
 * (strings besides "", frames, stack nodes), run profiles, segment-tree nodes; the file's
 * pages; and the bytes of the blobs of each kind. */
struct store_counts {
	int64_t runs, branches, strings, frames, nodes, profiles, segtree_nodes;
	int64_t page_count, page_size, freelist_pages;
	int64_t bytes_strings, bytes_frames, bytes_nodes, bytes_profiles, bytes_segtree;
};
int store_counts(struct store *s, struct store_counts *out);

/*
 * Checks the file (PRAGMA integrity_check), that the dictionary's chunks cover their ids
 * without gaps, and that every branch's runs each have a profile and its segment tree exactly
 * the nodes its run count implies. 0 when sound, else -1 with a message saying what is wrong.
 */
int store_check(struct store *s);

/* Tests only: when set, called inside store_add_run's transaction just before COMMIT. */
extern void (*store_test_hook_before_commit)(void);
/* Tests only: when set, the clock (milliseconds) and the sleep that waiting for a lock uses,
 * so a test can count the time the busy timeout budget allows without waiting it. */
extern int64_t (*store_test_clock_ms)(void);
extern void (*store_test_sleep_ms)(int64_t ms);

#endif
