#include "report/baseline.h"
#include "common/error.h"
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

/*
 * Merges the chosen runs (pointers into all[], newest first) into one profile: for each
 * branch, each maximal stretch of consecutive runs of that branch is one store_merge_runs.
 */
static int merge_chosen(struct store *s, const struct run_meta *all, size_t nall,
                        const struct run_meta **chosen, size_t n, struct profile **out)
{
	struct profile *merged = profile_new();
	uint8_t *want = xcalloc(nall ? nall : 1, 1);
	uint8_t *done = xcalloc(nall ? nall : 1, 1);
	int ret = 0;
	for (size_t i = 0; i < n; i++)
		want[chosen[i] - all] = 1;
	/* all[] is newest first: walk it oldest first per branch. */
	for (size_t i = nall; i-- > 0;) {
		if (!want[i] || done[i])
			continue;
		const char *branch = all[i].branch;
		int64_t from = all[i].id, to = all[i].id;
		size_t expect = 0;
		/* Extend over the following runs of the same branch while they are chosen. */
		for (size_t j = i + 1; j-- > 0;) {
			if (strcmp(all[j].branch, branch))
				continue;
			if (!want[j])
				break;
			done[j] = 1;
			to = all[j].id;
			expect++;
		}
		struct store_query q = {.branch = branch, .from_run = from, .to_run = to};
		struct profile *part = NULL;
		size_t got = 0;
		if (store_merge_runs(s, &q, &part, &got, NULL) < 0) {
			ret = -1;
			goto out;
		}
		if (got != expect) {
			profile_free(part);
			ret = cp_error(
			        "the database's run ranges of branch '%s' disagree with its "
			        "run list (%zu runs merged, %zu expected): run 'ciprof gc' to "
			        "rebuild them",
			        branch, got, expect);
			goto out;
		}
		profile_merge(merged, part);
		profile_stats_add(&merged->stats, &part->stats);
		profile_free(part);
	}
	profile_stats_finish(&merged->stats);
out:
	free(want);
	free(done);
	if (ret < 0) {
		profile_free(merged);
		return ret;
	}
	*out = merged;
	return 0;
}

/* The branches of the database, ", "-separated, for messages. Owned. */
static char *branch_list(const struct run_meta *all, size_t nall)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < nall; i++) {
		int seen = !*all[i].branch;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(all[j].branch, all[i].branch);
		if (seen)
			continue;
		if (sb.len)
			strbuf_addstr(&sb, ", ");
		if (sb.len > 400) {
			strbuf_addstr(&sb, "...");
			break;
		}
		strbuf_addstr(&sb, all[i].branch);
	}
	char *out = xstrdup(sb.len ? sb.buf : "(none)");
	strbuf_release(&sb);
	return out;
}

/*
 * The runs of branch whose commits the head contains, newest first, into anc[] (*na of them).
 * Without an ancestry answer: runs stored no later than the newest run at the merge-base,
 * else (no run there) stored before the head.
 */
static void branch_ancestors(const struct run_meta *all, size_t nall, const char *branch,
                             const struct run_meta *head, const char *mb,
                             report_ancestry_fn ancestry, void *ctx,
                             const struct run_meta **anc, size_t *na, size_t *nbranch)
{
	int64_t mb_newest = 0;
	*na = *nbranch = 0;
	for (size_t i = 0; i < nall; i++)
		if (*mb && !strcmp(all[i].branch, branch) && !strcmp(all[i].commit, mb) &&
		    all[i].id != head->id && all[i].id > mb_newest)
			mb_newest = all[i].id;
	for (size_t i = 0; i < nall; i++) {
		if (strcmp(all[i].branch, branch))
			continue;
		(*nbranch)++;
		/* Never the head, nor a run stored after it: a report stays what it was. */
		if (all[i].id >= head->id)
			continue;
		int ok = -1;
		if (*mb && !strcmp(all[i].commit, mb))
			ok = 1;
		else if (ancestry && *all[i].commit)
			ok = ancestry(ctx, all[i].commit);
		if (ok < 0)
			ok = mb_newest ? all[i].id <= mb_newest : all[i].id < head->id;
		if (ok)
			anc[(*na)++] = &all[i];
	}
}

int report_baseline_select(struct store *s, const struct run_meta *head, const char *ref,
                           const char *merge_base, size_t max_runs, report_ancestry_fn ancestry,
                           void *ctx, struct report_baseline *out)
{
	struct run_meta *all = NULL;
	size_t nall = 0, n = 0, na = 0;
	const struct run_meta **chosen = NULL, **hist = NULL;
	int ret = 0;

	if (!ref || !*ref)
		ref = *head->base_branch ? head->base_branch : "main";
	set_str(&out->ref, xstrdup(ref));
	const char *mb = merge_base && *merge_base ? merge_base : head->merge_base;
	set_str(&out->merge_base, xstrdup(mb));
	if (!max_runs)
		max_runs = 1;
	if (store_list_runs(s, NULL, 0, &all, &nall) < 0)
		return -1;
	set_str(&out->branches, branch_list(all, nall));
	chosen = xcalloc(nall ? nall : 1, sizeof(*chosen));
	hist = xcalloc(nall ? nall : 1, sizeof(*hist));

	/* 1. A run id: that run; history from its branch up to it. */
	if (all_digits(ref)) {
		int64_t id = strtoll(ref, NULL, 10);
		for (size_t i = 0; i < nall; i++) {
			if (all[i].id != id)
				continue;
			if (id == head->id) {
				set_str(&out->none,
				        xasprintf(
				                "the base run %lld is the head run itself; name an "
				                "earlier run, a branch or a commit with --base",
				                (long long)id));
				goto out;
			}
			chosen[n++] = &all[i];
			set_str(&out->rule, xasprintf("run %lld", (long long)id));
			break;
		}
	}
	/* 2. A branch: its runs the head contains, those at the merge-base first. */
	if (!n) {
		size_t nbranch = 0;
		branch_ancestors(all, nall, ref, head, mb, ancestry, ctx, hist, &na, &nbranch);
		/* The runs at the merge-base first (the head's own base), then the newest of
		 * older commits: a run of an older commit stored later does not push them out. */
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < na && n < max_runs; i++)
				if ((*mb && !strcmp(hist[i]->commit, mb)) == !pass)
					chosen[n++] = hist[i];
		for (size_t i = 0; i < n; i++)
			out->at_merge_base += *mb && !strcmp(chosen[i]->commit, mb);
		size_t older = n - out->at_merge_base;
		if (n && out->at_merge_base && !older) {
			set_str(&out->rule, xasprintf("%zu run%s of %s at the merge-base %.10s", n,
			                              plural(n), ref, mb));
		} else if (n && out->at_merge_base) {
			set_str(&out->rule,
			        xasprintf("%zu run%s of %s: %zu at the merge-base %.10s, %zu of older "
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
		} else if (nbranch) {
			set_str(&out->none,
			        xasprintf("branch %s has no run of a commit that the head run %lld "
			                  "contains (its %zu runs are of later commits)",
			                  ref, (long long)head->id, nbranch));
			goto out;
		}
	}
	/* 3. A commit (hex prefix): its runs, on any branch. */
	if (!n && is_hex_prefix(ref)) {
		size_t len = strlen(ref);
		for (size_t i = 0; i < nall && n < max_runs; i++)
			if (all[i].id != head->id && !strncasecmp(all[i].commit, ref, len))
				chosen[n++] = &all[i];
		if (n)
			set_str(&out->rule, xasprintf("%zu run%s at commit %.10s", n, plural(n),
			                              chosen[0]->commit));
	}
	if (!n) {
		out->unknown = 1;
		set_str(&out->none,
		        xasprintf("no run, branch or commit named %s in the database (branches: "
		                  "%s): profile the base branch with 'ciprof run' first, or name "
		                  "a baseline with --base",
		                  ref, out->branches));
		goto out;
	}
	/* A run or a commit: history from the newest chosen run's branch, up to that run. */
	if (!na) {
		for (size_t i = 0; i < nall; i++)
			if (!strcmp(all[i].branch, chosen[0]->branch) && all[i].id != head->id &&
			    all[i].id <= chosen[0]->id)
				hist[na++] = &all[i];
	}

	/* chosen[] is the merge-base's runs first, each part newest first; ids are kept oldest
	 * first. */
	out->ids = xmalloc(st_mult(n, sizeof(*out->ids)));
	for (size_t i = 0; i < n; i++)
		out->ids[i] = chosen[i]->id;
	qsort(out->ids, n, sizeof(*out->ids), id_cmp);
	out->n = n;
	set_str(&out->commit, xstrdup(chosen[0]->commit));
	set_str(&out->branch, xstrdup(chosen[0]->branch));

	size_t nload = na < REPORT_HISTORY_RUNS ? na : REPORT_HISTORY_RUNS;
	out->runs = xcalloc(nload ? nload : 1, sizeof(*out->runs));
	for (size_t i = 0; i < nload; i++) {
		if (store_load_profile(s, hist[i]->id, NULL, &out->runs[i]) < 0) {
			ret = -1;
			goto out;
		}
		out->nruns++;
	}
	/* The chosen runs from the loaded ones when all are there, else the segment tree. */
	size_t found = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < nload; j++)
			found += hist[j] == chosen[i];
	if (found == n) {
		out->merged = profile_new();
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < nload; j++)
				if (hist[j] == chosen[i]) {
					profile_merge(out->merged, out->runs[j]);
					profile_stats_add(&out->merged->stats, &out->runs[j]->stats);
				}
		profile_stats_finish(&out->merged->stats);
	} else if (merge_chosen(s, all, nall, chosen, n, &out->merged) < 0) {
		ret = -1;
		goto out;
	}
out:
	free(chosen);
	free(hist);
	store_runs_free(all, nall);
	return ret;
}
