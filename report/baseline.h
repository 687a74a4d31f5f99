/* report/baseline: which stored runs a head run is compared with. A branch names the runs of
 * that branch the head contains, those at the head's merge-base commit first; a run id names
 * that run; a commit (hex prefix) names the runs at that commit. Selected in SQL, page by page
 * (the work does not grow with the runs stored); the chosen runs are merged from the loaded
 * history or through the store's segment tree, each blob decoded once. */
#ifndef CP_REPORT_BASELINE_H
#define CP_REPORT_BASELINE_H

#include "model/profile.h"
#include "model/runmeta.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

/* At most this many recent runs of the base branch are loaded, one profile each, to learn
 * each item's run-to-run spread (report_diff_new's history). */
#define REPORT_HISTORY_RUNS 30

/*
 * Whether commit is the head's commit or one of its ancestors: 1, 0, or -1 when it cannot be
 * told (no repository, a commit missing from a shallow clone). ctx is the caller's.
 */
typedef int (*report_ancestry_fn)(void *ctx, const char *commit);

struct report_baseline {
	int64_t *ids; /* chosen run ids, oldest first (owned) */
	size_t n;
	struct profile *merged; /* the chosen runs merged (owned); NULL when n == 0 */
	struct profile **runs;  /* history: recent base-branch runs, one profile each (owned),
	                           newest first; the chosen runs are among them when n <= nruns */
	size_t nruns;
	double *other_cpus;   /* per history run, the CPUs other processes kept busy while it ran
	                         (RUN_TAG_OTHER_CPUS; NAN: not measured) (owned) */
	size_t at_merge_base; /* chosen runs at the merge-base commit */
	int fallback;         /* a branch, but no run at the merge-base: older ancestors */
	size_t failed;        /* a branch's runs the head contains left out because their
	                         command's exit status was not 0 (failed, crashed, interrupted) */
	size_t other_command; /* ... and because they ran another command than the head's */
	size_t unseen;        /* ... and because they are incomplete: the kernel did not follow
	                         some of their processes (RUN_TAG_UNSEEN) or a CPU's ring fell
	                         silent (RUN_TAG_SILENT); the run lacks their tests */
	int command_differs;  /* none of them ran the head's command: runs of any were taken */
	int unknown;          /* ref names no branch, run or commit in the database */
	char *commit;         /* commit of the first chosen run: at the merge-base when one is, else
	                         the newest (owned, "" when none) */
	char *branch;         /* its branch (owned) */
	char *ref;            /* the reference resolved: the --base value or its default (owned) */
	char *merge_base;     /* the merge-base used (owned, "" when unknown) */
	char *rule;           /* how the runs were chosen, e.g. "3 runs of main at the merge-base
	                         1a2b3c4d5e" (owned, "" when none) */
	char *none;           /* when n == 0: why there is no baseline, a sentence (owned) */
	char *branches;       /* the branches in the database, ", "-separated (owned) */
};

void report_baseline_init(struct report_baseline *b);
void report_baseline_release(struct report_baseline *b);

/*
 * Chooses head's baseline. ref: a branch, a run id or a commit prefix (>= 4 hex digits);
 * NULL means head's base_branch, else "main". merge_base: the head's merge-base with the
 * branch computed now (NULL or "": the one recorded with the head run).
 *
 * A branch: its runs stored before the head whose commits are ancestors of the head
 * (ancestry(ctx, commit) == 1;
 * without an answer, runs stored no later than the newest run at the merge-base, else before
 * the head): those at the merge-base first, then the newest older ones, at most max_runs. Never
 * a base run whose commit the head does not contain (the base branch's own later changes).
 * The newest REPORT_HISTORY_RUNS of the same runs are loaded as the history. fallback is set
 * when none is at the merge-base.
 *
 * Returns 0 (also when nothing qualifies: out->n == 0, out->none says why and out->unknown
 * whether ref names nothing at all), or -1 with cp_error set when the database fails.
 */
int report_baseline_select(struct store *s, const struct run_meta *head, const char *ref,
                           const char *merge_base, size_t max_runs, report_ancestry_fn ancestry,
                           void *ctx, struct report_baseline *out);

#endif
