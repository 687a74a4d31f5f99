/* Property test of the segment tree: random histories over several branches; every random
 * range query (by run ids, by last N, up to a commit) must equal the brute-force merge of the
 * same runs' profiles, test by test - before and after gc, and after storing more runs. */
#include "store/store.h"
#include "common/error.h"
#include "test_store_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define MAX_RUNS 400

struct model_run {
	int64_t id;
	int branch;
	uint64_t seed;
	char commit[16];
	int alive;
};

struct model {
	struct model_run runs[MAX_RUNS];
	int n;
};

static const char *const branch_names[] = {"main", "feature/x", "release"};
#define NBRANCHES 3

static struct profile *run_profile(const struct model_run *r)
{
	/* Small profiles over a shared function pool, so runs overlap like real ones. */
	return tu_random_profile(r->seed, 1 + (int)(r->seed % 4), 5 + (int)(r->seed % 40), 25, 6);
}

static void add_runs(struct store *s, struct model *m, uint64_t *rng, int count, int64_t now)
{
	for (int i = 0; i < count; i++) {
		assert_true(m->n < MAX_RUNS);
		struct model_run *r = &m->runs[m->n];
		/* Skewed: main gets most runs, like a real history. */
		uint64_t x = tu_rand(rng) % 10;
		r->branch = x < 6 ? 0 : x < 9 ? 1 : 2;
		r->seed = tu_rand(rng);
		snprintf(r->commit, sizeof(r->commit), "c%04x", (unsigned)(tu_rand(rng) % 40));
		r->alive = 1;
		struct profile *p = run_profile(r);
		struct run_meta meta;
		tu_meta(&meta, branch_names[r->branch], r->commit);
		meta.created_at = now - (int64_t)(m->n < 100 ? 100 - m->n : 0) * 86400;
		assert_int_equal(store_add_run(s, &meta, p), 0);
		r->id = meta.id;
		run_meta_release(&meta);
		profile_free(p);
		m->n++;
	}
}

/* The alive runs of branch b, oldest first (their indexes into m->runs). */
static int branch_runs(const struct model *m, int b, int *out)
{
	int n = 0;
	for (int i = 0; i < m->n; i++)
		if (m->runs[i].alive && m->runs[i].branch == b)
			out[n++] = i;
	return n;
}

static void compare(const struct profile *want, const struct profile *got)
{
	char *a = tu_folded(want, NULL), *b = tu_folded(got, NULL);
	assert_string_equal(a, b);
	free(a);
	free(b);
	/* Test by test: names present in either. */
	for (size_t t = 0; t < want->nstr; t++) {
		const char *name = profile_str(want, (uint32_t)t);
		if (profile_total(want, name) != profile_total(got, name))
			fail_msg("test '%s': %llu samples expected, got %llu", name,
			         (unsigned long long)profile_total(want, name),
			         (unsigned long long)profile_total(got, name));
		a = tu_folded(want, name);
		b = tu_folded(got, name);
		assert_string_equal(a, b);
		free(a);
		free(b);
	}
	assert_int_equal(profile_total(want, NULL), profile_total(got, NULL));
}

static void check_query(struct store *s, const struct model *m, int b, const int *idx, int lo,
                        int hi, const struct store_query *q)
{
	struct profile *want = profile_new();
	for (int i = lo; i < hi; i++) {
		struct profile *p = run_profile(&m->runs[idx[i]]);
		profile_merge(want, p);
		profile_free(p);
	}
	struct profile *got;
	size_t n;
	int64_t *ids;
	if (store_merge_runs(s, q, &got, &n, &ids) < 0)
		fail_msg("store_merge_runs: %s", cp_last_error());
	assert_int_equal(n, (size_t)(hi - lo));
	for (int i = lo; i < hi; i++)
		assert_int_equal(ids[i - lo], m->runs[idx[i]].id);
	compare(want, got);
	assert_int_equal(got->stats.samples,
	                 want->stats.samples ? want->stats.samples : profile_total(want, NULL));
	free(ids);
	profile_free(want);
	profile_free(got);
	(void)b;
}

static void random_queries(struct store *s, const struct model *m, uint64_t *rng, int count)
{
	int idx[MAX_RUNS];
	for (int k = 0; k < count; k++) {
		int b = (int)(tu_rand(rng) % NBRANCHES);
		int n = branch_runs(m, b, idx);
		if (!n)
			continue;
		int lo = (int)(tu_rand(rng) % (uint64_t)n);
		int hi = lo + 1 + (int)(tu_rand(rng) % (uint64_t)(n - lo));
		struct store_query q = {.branch = branch_names[b]};
		switch (k % 4) {
		case 0: /* by run ids, inclusive */
			q.from_run = m->runs[idx[lo]].id;
			q.to_run = m->runs[idx[hi - 1]].id;
			break;
		case 1: /* the last N up to a run */
			q.to_run = m->runs[idx[hi - 1]].id;
			q.last_n = (size_t)(hi - lo);
			break;
		case 2: { /* the last N up to a commit: the newest run at that commit */
			const char *c = m->runs[idx[hi - 1]].commit;
			int top = hi - 1;
			for (int i = n - 1; i >= 0; i--)
				if (!strcmp(m->runs[idx[i]].commit, c)) {
					top = i;
					break;
				}
			hi = top + 1;
			if (lo >= hi)
				lo = hi - 1;
			q.up_to_commit = c;
			q.last_n = (size_t)(hi - lo);
			break;
		}
		default: /* everything from a run on */
			q.from_run = m->runs[idx[lo]].id;
			hi = n;
			break;
		}
		check_query(s, m, b, idx, lo, hi, &q);
	}
	/* Whole branches, and an empty range. */
	for (int b = 0; b < NBRANCHES; b++) {
		int n = branch_runs(m, b, idx);
		if (!n)
			continue;
		struct store_query q = {.branch = branch_names[b]};
		check_query(s, m, b, idx, 0, n, &q);
		q.from_run = m->runs[idx[n - 1]].id + 1000000;
		struct profile *got;
		size_t cnt;
		assert_int_equal(store_merge_runs(s, &q, &got, &cnt, NULL), 0);
		assert_int_equal(cnt, 0);
		assert_int_equal(profile_total(got, NULL), 0);
		profile_free(got);
	}
}

static void apply_gc(struct model *m, size_t keep, long days, int64_t now)
{
	int alive = 0;
	for (int i = m->n - 1; i >= 0; i--) {
		struct model_run *r = &m->runs[i];
		if (!r->alive)
			continue;
		int64_t created = now - (int64_t)(i < 100 ? 100 - i : 0) * 86400;
		int old = days && created < now - days * 86400;
		if ((keep && (size_t)alive >= keep) || old)
			r->alive = 0;
		else
			alive++;
	}
}

static void test_segtree_property(void **state)
{
	for (uint64_t seed = 1; seed <= 3; seed++) {
		char *dir = tu_tmpdir();
		char *db = xasprintf("%s/seg.db", dir);
		struct store *s;
		assert_int_equal(store_open(&s, db, STORE_CREATE), 0);
		struct model *m = xcalloc(1, sizeof(*m));
		uint64_t rng = seed * 7919;
		int64_t now = 1800000000;

		add_runs(s, m, &rng, 70 + (int)(seed * 13), now);
		assert_int_equal(store_check(s), 0);
		random_queries(s, m, &rng, 60);

		/* gc by count: the newest 45 runs of all branches stay. */
		struct store_gc_opts o = {.keep_runs = 45, .now = now};
		struct store_gc_result res;
		assert_int_equal(store_gc(s, &o, &res), 0);
		int before = 0;
		for (int i = 0; i < m->n; i++)
			before += m->runs[i].alive;
		apply_gc(m, 45, 0, now);
		assert_int_equal(res.runs_deleted, (size_t)(before - 45));
		assert_int_equal(res.runs_kept, 45);
		assert_int_equal(store_check(s), 0);
		random_queries(s, m, &rng, 60);

		/* More runs after gc extend the rebuilt trees. */
		add_runs(s, m, &rng, 37, now);
		assert_int_equal(store_check(s), 0);
		random_queries(s, m, &rng, 60);

		/* gc by age (runs stored early are "older"), in a fresh connection. */
		store_close(s);
		assert_int_equal(store_open(&s, db, 0), 0);
		struct store_gc_opts o2 = {.older_than_days = 30, .now = now};
		assert_int_equal(store_gc(s, &o2, &res), 0);
		apply_gc(m, 0, 30, now);
		assert_int_equal(store_check(s), 0);
		random_queries(s, m, &rng, 40);
		add_runs(s, m, &rng, 9, now);
		random_queries(s, m, &rng, 30);
		assert_int_equal(store_check(s), 0);

		/* Pruning left every remaining run loadable and equal to what was stored. */
		for (int i = 0; i < m->n; i++) {
			if (!m->runs[i].alive)
				continue;
			struct profile *got, *want = run_profile(&m->runs[i]);
			assert_int_equal(store_load_profile(s, m->runs[i].id, NULL, &got), 0);
			compare(want, got);
			profile_free(got);
			profile_free(want);
		}
		store_close(s);
		free(m);
		char *cmd = xasprintf("rm -rf '%s'", dir);
		assert_int_equal(system(cmd), 0);
		free(cmd);
		free(db);
		free(dir);
	}
}

static void test_segtree_unknown_branch(void **state)
{
	char *dir = tu_tmpdir();
	char *db = xasprintf("%s/seg.db", dir);
	struct store *s;
	assert_int_equal(store_open(&s, db, STORE_CREATE), 0);
	struct store_query q = {.branch = "nope"};
	struct profile *p;
	assert_int_equal(store_merge_runs(s, &q, &p, NULL, NULL), -1);
	assert_non_null(strstr(cp_last_error(), "no runs of branch 'nope'"));
	struct profile *one = tu_random_profile(1, 2, 10, 5, 3);
	struct run_meta meta;
	tu_meta(&meta, "main", "abc123");
	assert_int_equal(store_add_run(s, &meta, one), 0);
	q.branch = "main";
	q.up_to_commit = "fff";
	assert_int_equal(store_merge_runs(s, &q, &p, NULL, NULL), -1);
	assert_non_null(strstr(cp_last_error(), "at commit fff"));
	q.up_to_commit = "abc";
	size_t n;
	assert_int_equal(store_merge_runs(s, &q, &p, &n, NULL), 0);
	assert_int_equal(n, 1);
	profile_free(p);
	run_meta_release(&meta);
	profile_free(one);
	store_close(s);
	char *cmd = xasprintf("rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(db);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_segtree_property),
	        cmocka_unit_test(test_segtree_unknown_branch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
