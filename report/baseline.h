/* report/baseline: which stored runs a head run is compared with. A branch names the runs of
 * that branch at the head's merge-base commit, else its newest runs before the head; a run id
 * names that run; a commit (hex prefix) names the runs at that commit. The chosen runs are
 * merged through the store's segment tree. */
#ifndef CP_REPORT_BASELINE_H
#define CP_REPORT_BASELINE_H

#include "common/profile.h"
#include "common/runmeta.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

/* At most this many base runs are loaded one by one to measure their spread. */
#define REPORT_SPREAD_RUNS 10

struct report_baseline {
	int64_t *ids; /* chosen run ids, oldest first (owned) */
	size_t n;
	struct profile *merged; /* the chosen runs merged (owned); NULL when n == 0 */
	struct profile **runs;  /* the newest chosen runs, one profile each (owned) */
	size_t nruns;
	char *commit; /* commit of the newest chosen run (owned, "" when none) */
	char *branch; /* its branch (owned) */
	char *ref;    /* the reference resolved: the --base value or its default (owned) */
	char *rule;   /* how the runs were chosen, e.g. "3 runs of main at the merge-base
	                 1a2b3c4d5e" (owned, "" when none) */
	char *none;   /* when n == 0: why there is no baseline, a sentence (owned) */
};

void report_baseline_init(struct report_baseline *b);
void report_baseline_release(struct report_baseline *b);

/*
 * Chooses head's baseline. ref: a branch, a run id or a commit prefix (>= 4 hex digits);
 * NULL means head's base_branch, else "main". Never the head run itself, and with a branch
 * never a run stored after the head. At most max_runs runs (the newest that qualify).
 * Returns 0 (also when nothing qualifies: out->n == 0 and out->none says why), or -1 with
 * cp_error set when the database fails.
 */
int report_baseline_select(struct store *s, const struct run_meta *head, const char *ref,
                           size_t max_runs, struct report_baseline *out);

#endif
