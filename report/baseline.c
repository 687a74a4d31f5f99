#include "report/baseline.h"
#include "common/error.h"
#include "common/nearest.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void report_baseline_init(struct report_baseline *b)
{
	memset(b, 0, sizeof(*b));
	b->commit = xstrdup("");
	b->branch = xstrdup("");
	b->ref = xstrdup("");
	b->rule = xstrdup("");
	b->none = xstrdup("");
	b->merge_base = xstrdup("");
	b->branches = xstrdup("");
}

void report_baseline_release(struct report_baseline *b)
{
	free(b->ids);
	profile_free(b->merged);
	for (size_t i = 0; i < b->nruns; i++)
		profile_free(b->runs[i]);
	free(b->other_cpus);
	free(b->runs);
	free(b->commit);
	free(b->branch);
	free(b->ref);
	free(b->rule);
	free(b->none);
	free(b->merge_base);
	free(b->branches);
	memset(b, 0, sizeof(*b));
}

static void set_str(char **field, char *owned)
{
	free(*field);
	*field = owned;
}

/* The branch of names (", "-separated) nearest to ref, within two edits and fewer than ref's
 * length: a typo's likely meaning (owned), or NULL. */
static char *nearest_branch(const char *names, const char *ref)
{
	char *best = NULL;
	size_t bestd = 3;
	for (const char *p = names; *p;) {
		const char *end = strstr(p, ", ");
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char *name = xstrndup(p, len);
		size_t dist;
		if (nearest_is_near(ref, name, &dist) && dist < bestd) {
			free(best);
			best = name;
			bestd = dist;
		} else {
			free(name);
		}
		p += len + (end ? 2 : 0);
	}
	return best;
}

static int all_digits(const char *s)
{
	if (!*s || strlen(s) > 18)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

static int is_hex_prefix(const char *s)
{
	size_t n = strlen(s);
	if (n < 4 || n > 64)
		return 0;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return 0;
	return 1;
}

static int id_cmp(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return a < b ? -1 : a > b;
}

static const char *plural(size_t n)
{
	return n == 1 ? "" : "s";
}

/* Runs fetched from the store, owned here; referred to by index (the array grows). */
struct runset {
	struct run_meta *r;
	size_t n, alloc;
};

static void runset_release(struct runset *rs)
{
	store_runs_free(rs->r, rs->n);
	memset(rs, 0, sizeof(*rs));
}

/* Appends the runs f selects (newest first); returns how many, or -1. */
static long fetch(struct store *s, const struct store_run_filter *f, struct runset *rs)
{
	struct run_meta *got;
	size_t n;
	if (store_find_runs(s, f, &got, &n) < 0)
		return -1;
	ALLOC_GROW(rs->r, rs->n + n, rs->alloc);
	if (n)
		memcpy(rs->r + rs->n, got, n * sizeof(*got));
	rs->n += n;
	free(got); /* the entries moved into rs */
	return (long)n;
}

/* A growable list of indexes into a runset. */
struct picks {
	size_t *i;
	size_t n, alloc;
};

static void picks_add(struct picks *p, size_t i)
{
	ALLOC_GROW(p->i, p->n + 1, p->alloc);
	p->i[p->n++] = i;
}

/* Branch runs walked per query, newest first. */
#define WALK_PAGE 64

/*
 * The runs of branch whose commits the head contains, newest first, into anc (indexes into
 * rs), walking the branch's runs stored before the head page by page in SQL and stopping
 * once `need` are found. Without an ancestry answer: runs stored no later than mb_newest (the
 * newest run at the merge-base), or all before the head when there is none. walk_lo/walk_hi
 * get the range of rs holding the walked runs (every run of the branch between the head and
 * the oldest walked, newest first: consecutive entries are neighbours on the branch).
 */
static int branch_ancestors(struct store *s, const char *branch, const struct run_meta *head,
                            const char *mb, int64_t mb_newest, report_ancestry_fn ancestry,
                            void *ctx, size_t need, struct runset *rs, struct picks *anc,
                            size_t *walk_lo, size_t *walk_hi, size_t *failed, const char *command,
                            size_t *other, size_t *unseen)
{
	int64_t before = head->id;
	*walk_lo = *walk_hi = rs->n;
	while (anc->n < need) {
		struct store_run_filter f = {
		        .branch = branch, .before = before, .limit = WALK_PAGE, .tags = 1};
		size_t from = rs->n;
		long got = fetch(s, &f, rs);
		if (got < 0)
			return -1;
		*walk_hi = rs->n;
		if (!got)
			break;
		for (size_t i = from; i < rs->n && anc->n < need; i++) {
			const struct run_meta *r = &rs->r[i];
			int ok = -1;
			if (*mb && !strcmp(r->commit, mb))
				ok = 1;
			else if (ancestry && *r->commit)
				ok = ancestry(ctx, r->commit);
			if (ok < 0)
				ok = mb_newest ? r->id <= mb_newest : 1;
			/* A run whose command failed, crashed or was interrupted is no measure
			 * of the branch: a part of its suite, or another one. */
			if (ok && r->stats.exit_status != 0) {
				ok = 0;
				(*failed)++;
			}
			/* Nor is a run of another command (another suite, or the same one with
			 * other options), when command is given. */
			if (ok && command && !run_meta_command_imported(r->command) &&
			    strcmp(r->command, command)) {
				ok = 0;
				(*other)++;
			}
			/* Nor is an incomplete run (processes the kernel did not follow, a ring
			 * that fell silent): it lacks their tests and functions (docs/run.md,
			 * "Limits"). */
			if (ok && run_meta_is_incomplete(r)) {
				ok = 0;
				(*unseen)++;
			}
			if (ok)
				picks_add(anc, i);
		}
		before = rs->r[rs->n - 1].id;
	}
	return 0;
}

/*
 * Merges the chosen runs that are not among the loaded history into *merged (whose stats the
 * caller finishes): each stretch of them that are neighbours on their branch (consecutive in
 * the walked range) is one store_merge_runs through the segment tree, O(log n) blobs; each
 * other run is a range of one. No blob of a loaded run is decoded again.
 */
static int merge_rest(struct store *s, const struct runset *rs, const size_t *rest, size_t nrest,
                      size_t walk_lo, size_t walk_hi, struct profile *merged)
{
	size_t k = 0;
	while (k < nrest) {
		/* rest[] is newest first; a stretch goes on while the next is the walked neighbour
		 */
		size_t end = k + 1;
		while (end < nrest && rest[end - 1] >= walk_lo && rest[end] < walk_hi &&
		       rest[end] == rest[end - 1] + 1)
			end++;
		const struct run_meta *newest = &rs->r[rest[k]], *oldest = &rs->r[rest[end - 1]];
		struct store_query q = {
		        .branch = newest->branch, .from_run = oldest->id, .to_run = newest->id};
		struct profile *part = NULL;
		size_t got = 0;
		if (store_merge_runs(s, &q, &part, &got, NULL) < 0)
			return -1;
		if (got != end - k) {
			profile_free(part);
			return cp_error(
			        "the database's run ranges of branch '%s' disagree with its "
			        "run list (%zu runs merged, %zu expected): run 'ciprof gc' to "
			        "rebuild them",
			        newest->branch, got, end - k);
		}
		profile_merge(merged, part);
		profile_stats_add(&merged->stats, &part->stats);
		profile_free(part);
		k = end;
	}
	return 0;
}

int report_baseline_select(struct store *s, const struct run_meta *head, const char *ref,
                           const char *merge_base, size_t max_runs, report_ancestry_fn ancestry,
                           void *ctx, struct report_baseline *out)
{
	struct runset rs = {0};
	struct picks chosen = {0}, hist = {0};
	size_t walk_lo = 0, walk_hi = 0;
	int64_t nbranch = 0;
	char *names = NULL;
	int ret = 0;

	if (!ref || !*ref)
		ref = *head->base_branch ? head->base_branch : "main";
	set_str(&out->ref, xstrdup(ref));
	const char *mb = merge_base && *merge_base ? merge_base : head->merge_base;
	set_str(&out->merge_base, xstrdup(mb));
	if (!max_runs)
		max_runs = 1;

	/* 1. A run id: that run; history from its branch up to it. */
	if (all_digits(ref)) {
		struct store_run_filter f = {.id = strtoll(ref, NULL, 10)};
		size_t from = rs.n;
		if (fetch(s, &f, &rs) < 0)
			goto fail;
		if (rs.n > from && rs.r[from].id == head->id) {
			set_str(&out->none,
			        xasprintf(
			                "the base run %lld is the head run itself; name an earlier "
			                "run, a branch or a commit with --base",
			                (long long)head->id));
			goto out;
		}
		if (rs.n > from) {
			picks_add(&chosen, from);
			set_str(&out->rule, xasprintf("run %lld", (long long)rs.r[from].id));
		}
	}
	/* 2. A branch: its runs the head contains, those at the merge-base first. */
	if (!chosen.n) {
		/* Without the repository, the newest run at the merge-base bounds the runs (one
		 * query, stopping at the first it finds). */
		int64_t mb_newest = 0;
		if (*mb && !ancestry) {
			struct store_run_filter f = {
			        .branch = ref, .commit = mb, .before = head->id, .limit = 1};
			size_t from = rs.n;
			if (fetch(s, &f, &rs) < 0)
				goto fail;
			if (rs.n > from)
				mb_newest = rs.r[from].id;
		}
		/* Runs of the head's own command; when the branch has none (the suite's command
		 * changed with the head), its runs of any command, and the report says so. */
		if (branch_ancestors(s, ref, head, mb, mb_newest, ancestry, ctx,
		                     max_runs + REPORT_HISTORY_RUNS, &rs, &hist, &walk_lo, &walk_hi,
		                     &out->failed,
		                     run_meta_command_imported(head->command) ? NULL
		                                                              : head->command,
		                     &out->other_command, &out->unseen) < 0)
			goto fail;
		if (!hist.n && out->other_command) {
			size_t other = 0;
			out->failed = out->unseen = 0;
			if (branch_ancestors(s, ref, head, mb, mb_newest, ancestry, ctx,
			                     max_runs + REPORT_HISTORY_RUNS, &rs, &hist, &walk_lo,
			                     &walk_hi, &out->failed, NULL, &other,
			                     &out->unseen) < 0)
				goto fail;
			out->command_differs = hist.n > 0;
			out->other_command = 0;
		}
		/* The runs at the merge-base first, then the newest of older commits: a run of an
		 * older commit stored later does not push them out. */
		for (int pass = 0; pass < 2; pass++)
			for (size_t k = 0; k < hist.n && chosen.n < max_runs; k++)
				if ((*mb && !strcmp(rs.r[hist.i[k]].commit, mb)) == !pass)
					picks_add(&chosen, hist.i[k]);
		for (size_t k = 0; k < chosen.n; k++)
			out->at_merge_base += *mb && !strcmp(rs.r[chosen.i[k]].commit, mb);
		size_t n = chosen.n, older = n - out->at_merge_base;
		if (n && out->at_merge_base && !older) {
			set_str(&out->rule, xasprintf("%zu run%s of %s at the merge-base %.10s", n,
			                              plural(n), ref, mb));
		} else if (n && out->at_merge_base) {
			set_str(&out->rule,
			        xasprintf("%zu run%s of %s: %zu at the merge-base %.10s, %zu of "
			                  "older "
			                  "commits the head contains",
			                  n, plural(n), ref, out->at_merge_base, mb, older));
		} else if (n) {
			out->fallback = 1;
			set_str(&out->rule,
			        *mb ? xasprintf("the newest %zu run%s of %s that the head contains "
			                        "(none at the merge-base %.10s)",
			                        n, plural(n), ref, mb)
			            : xasprintf("the newest %zu run%s of %s stored before the head "
			                        "(the head has no merge-base with it)",
			                        n, plural(n), ref));
		} else {
			if (store_count_runs(s, ref, &nbranch) < 0)
				goto fail;
			if (nbranch && out->failed) {
				set_str(&out->none,
				        xasprintf("every run of %s that the head run %lld "
				                  "contains (%zu) ended with a non-zero exit "
				                  "status: a failed, crashed or interrupted "
				                  "suite is no baseline",
				                  ref, (long long)head->id, out->failed));
				goto branches;
			}
			if (nbranch) {
				set_str(&out->none,
				        xasprintf("branch %s has no run of a commit that the head "
				                  "run "
				                  "%lld contains (its %lld runs are of later "
				                  "commits)",
				                  ref, (long long)head->id, (long long)nbranch));
				goto branches;
			}
		}
		if (chosen.n && out->failed)
			set_str(&out->rule,
			        xasprintf("%s; %zu failed run%s left out (exit status not 0)",
			                  out->rule, out->failed, plural(out->failed)));
		if (chosen.n && out->unseen)
			set_str(&out->rule,
			        xasprintf("%s; %zu incomplete run%s left out (processes the kernel "
			                  "did not follow, or a CPU's ring buffer fell silent)",
			                  out->rule, out->unseen, plural(out->unseen)));
		if (chosen.n && out->other_command)
			set_str(&out->rule,
			        xasprintf("%s; %zu run%s of another command left out", out->rule,
			                  out->other_command, plural(out->other_command)));
		if (chosen.n && out->command_differs)
			set_str(&out->rule, xasprintf("%s, none of the head's command", out->rule));
	}
	/* 3. A commit (hex prefix): its runs, on any branch. */
	if (!chosen.n && is_hex_prefix(ref)) {
		char *lower = xstrdup(ref);
		for (char *c = lower; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		struct store_run_filter f = {
		        .commit_prefix = lower, .exclude = head->id, .limit = max_runs};
		size_t from = rs.n;
		long got = fetch(s, &f, &rs);
		free(lower);
		if (got < 0)
			goto fail;
		for (size_t i = from; i < rs.n; i++)
			picks_add(&chosen, i);
		if (chosen.n)
			set_str(&out->rule, xasprintf("%zu run%s at commit %.10s", chosen.n,
			                              plural(chosen.n), rs.r[chosen.i[0]].commit));
	}
	if (!chosen.n) {
		out->unknown = 1;
		goto branches;
	}
	/* A run or a commit: history from the first chosen run's branch, up to that run. */
	if (!hist.n) {
		const struct run_meta *c0 = &rs.r[chosen.i[0]];
		char *branch = xstrdup(c0->branch);
		struct store_run_filter f = {.branch = branch,
		                             .before = c0->id + 1,
		                             .exclude = head->id,
		                             .limit = REPORT_HISTORY_RUNS};
		size_t from = rs.n;
		long got = fetch(s, &f, &rs);
		free(branch);
		if (got < 0)
			goto fail;
		for (size_t i = from; i < rs.n; i++)
			picks_add(&hist, i);
	}

	size_t n = chosen.n;
	out->ids = xmalloc(st_mult(n, sizeof(*out->ids)));
	for (size_t i = 0; i < n; i++)
		out->ids[i] = rs.r[chosen.i[i]].id;
	qsort(out->ids, n, sizeof(*out->ids), id_cmp);
	out->n = n;
	set_str(&out->commit, xstrdup(rs.r[chosen.i[0]].commit));
	set_str(&out->branch, xstrdup(rs.r[chosen.i[0]].branch));

	/* The history, each blob decoded once; the chosen runs among it are merged from it, the
	 * others through the segment tree. */
	size_t nload = hist.n < REPORT_HISTORY_RUNS ? hist.n : REPORT_HISTORY_RUNS;
	out->runs = xcalloc(nload ? nload : 1, sizeof(*out->runs));
	out->other_cpus = xcalloc(nload ? nload : 1, sizeof(*out->other_cpus));
	for (size_t i = 0; i < nload; i++) {
		struct run_meta m;
		run_meta_init(&m);
		int64_t rid = rs.r[hist.i[i]].id;
		int bad = store_get_run(s, rid, &m) < 0 ||
		          store_load_profile(s, rid, NULL, &out->runs[i]) < 0;
		out->other_cpus[i] = run_meta_other_cpus(&m);
		run_meta_release(&m);
		if (bad)
			goto fail;
		out->nruns++;
	}
	out->merged = profile_new();
	size_t *rest = xmalloc(st_mult(n, sizeof(*rest)));
	size_t nrest = 0;
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		while (j < nload && rs.r[hist.i[j]].id != rs.r[chosen.i[i]].id)
			j++;
		if (j < nload) {
			profile_merge(out->merged, out->runs[j]);
			profile_stats_add(&out->merged->stats, &out->runs[j]->stats);
		} else {
			rest[nrest++] = chosen.i[i];
		}
	}
	/* newest first by id, for the stretches */
	for (size_t i = 1; i < nrest; i++)
		for (size_t j = i; j > 0 && rs.r[rest[j]].id > rs.r[rest[j - 1]].id; j--) {
			size_t t = rest[j];
			rest[j] = rest[j - 1];
			rest[j - 1] = t;
		}
	int mret = merge_rest(s, &rs, rest, nrest, walk_lo, walk_hi, out->merged);
	free(rest);
	if (mret < 0)
		goto fail;
	profile_stats_finish(&out->merged->stats);
	goto out;

branches:
	/* Nothing chosen: the message names the branches there are. */
	if (store_branch_names(s, &names, NULL) < 0)
		goto fail;
	set_str(&out->branches, xstrdup(*names ? names : "(none)"));
	if (out->unknown) {
		char *near = nearest_branch(names, ref);
		char *hint = near ? xasprintf("; did you mean %s?", near) : xstrdup("");
		set_str(&out->none,
		        xasprintf("no run, branch or commit named %s in the database (branches: "
		                  "%s%s): profile the base branch with 'ciprof run' first, or name "
		                  "another with --base",
		                  ref, out->branches, hint));
		free(hint);
		free(near);
	}
	goto out;
fail:
	ret = -1;
out:
	free(names);
	free(chosen.i);
	free(hist.i);
	runset_release(&rs);
	return ret;
}
