/* Baseline selection. The rules are in baseline.h and docs/report.md; the runs chosen are
 * merged with store_merge_runs, one call per contiguous range of a branch's runs. */
#include "report/baseline.h"
#include "common/error.h"
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
		merged->stats.samples += part->stats.samples;
		merged->stats.lost += part->stats.lost;
		merged->stats.cpu_seconds += part->stats.cpu_seconds;
		merged->stats.wall_seconds += part->stats.wall_seconds;
		if (!merged->stats.hz)
			merged->stats.hz = part->stats.hz;
		profile_free(part);
	}
	uint64_t total = profile_total(merged, NULL);
	if (total && merged->stats.cpu_seconds > 0)
		merged->stats.period_ns =
		        (uint64_t)(merged->stats.cpu_seconds * 1e9 / (double)total + 0.5);
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

int report_baseline_select(struct store *s, const struct run_meta *head, const char *ref,
                           size_t max_runs, struct report_baseline *out)
{
	struct run_meta *all = NULL;
	size_t nall = 0, n = 0;
	const struct run_meta **chosen = NULL;
	int ret = 0;

	if (!ref || !*ref)
		ref = *head->base_branch ? head->base_branch : "main";
	set_str(&out->ref, xstrdup(ref));
	if (!max_runs)
		max_runs = 1;
	if (store_list_runs(s, NULL, 0, &all, &nall) < 0)
		return -1;
	chosen = xcalloc(nall ? nall : 1, sizeof(*chosen));

	/* 1. A run id. */
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
	/* 2. A branch: runs at the merge-base, else the newest runs before the head. */
	if (!n) {
		size_t nbranch = 0, nbefore = 0;
		for (size_t i = 0; i < nall; i++) {
			if (strcmp(all[i].branch, ref))
				continue;
			nbranch++;
			if (all[i].id >= head->id)
				continue;
			nbefore++;
			if (*head->merge_base && !strcmp(all[i].commit, head->merge_base) &&
			    n < max_runs)
				chosen[n++] = &all[i];
		}
		if (n) {
			set_str(&out->rule, xasprintf("%zu run%s of %s at the merge-base %.10s", n,
			                              plural(n), ref, head->merge_base));
		} else if (nbefore) {
			for (size_t i = 0; i < nall && n < max_runs; i++)
				if (!strcmp(all[i].branch, ref) && all[i].id < head->id)
					chosen[n++] = &all[i];
			set_str(&out->rule,
			        *head->merge_base
			                ? xasprintf("the newest %zu run%s of %s before the head "
			                            "(none "
			                            "at the merge-base %.10s)",
			                            n, plural(n), ref, head->merge_base)
			                : xasprintf(
			                          "the newest %zu run%s of %s before the head (the "
			                          "head has no merge-base with it)",
			                          n, plural(n), ref));
		} else if (nbranch) {
			set_str(&out->none,
			        xasprintf("branch %s has no run stored before the head run %lld",
			                  ref, (long long)head->id));
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
		set_str(&out->none,
		        xasprintf("no run, branch or commit named %s in the database: profile the "
		                  "base branch with 'ciprof run' first, or name a baseline with "
		                  "--base",
		                  ref));
		goto out;
	}

	/* chosen[] is newest first; ids are kept oldest first. */
	out->ids = xmalloc(st_mult(n, sizeof(*out->ids)));
	for (size_t i = 0; i < n; i++)
		out->ids[i] = chosen[n - 1 - i]->id;
	out->n = n;
	set_str(&out->commit, xstrdup(chosen[0]->commit));
	set_str(&out->branch, xstrdup(chosen[0]->branch));
	if (merge_chosen(s, all, nall, chosen, n, &out->merged) < 0) {
		ret = -1;
		goto out;
	}
	size_t nload = n < REPORT_SPREAD_RUNS ? n : REPORT_SPREAD_RUNS;
	if (nload >= 2) {
		out->runs = xcalloc(nload, sizeof(*out->runs));
		for (size_t i = 0; i < nload; i++) {
			if (store_load_profile(s, chosen[i]->id, NULL, &out->runs[i]) < 0) {
				ret = -1;
				goto out;
			}
			out->nruns++;
		}
	}
out:
	free(chosen);
	store_runs_free(all, nall);
	return ret;
}
