/* report/baseline against a real store: the base branch's runs that the head contains are
 * chosen (at the merge-base first, then older ones), never later base runs that hold the base
 * branch's own changes; a missing merge-base run is a fallback; an unknown reference says so
 * and lists the branches; the history is loaded one run each and the merged baseline is their
 * sum; failed runs and runs of another command are left out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "report/baseline.h"
#include "report/history.h"
#include "store/store.h"
#include "test_store_util.h"

/* The commits each head contains (its ancestors and itself). */
struct lineage {
	const char *const *commits;
};

static int contains(void *ctx, const char *commit)
{
	const struct lineage *l = ctx;
	for (size_t i = 0; l->commits[i]; i++)
		if (!strcmp(l->commits[i], commit))
			return 1;
	return 0;
}

struct fixture {
	char *dir, db[512];
	struct store *s;
	int64_t id[8];
};

/* A run with its command's exit status and command line. */
static void add_run(struct fixture *fx, int k, const char *branch, const char *commit,
                    const char *mb, int exit_status, const char *command)
{
	struct run_meta m;
	tu_meta(&m, branch, commit);
	run_meta_set(&m.base_branch, "main");
	run_meta_set(&m.merge_base, mb);
	run_meta_set(&m.command, command);
	struct profile *p = tu_random_profile((uint64_t)k + 1, 3, 40, 12, 4);
	p->stats.exit_status = exit_status;
	assert_int_equal(store_add_run(fx->s, &m, p), 0);
	fx->id[k] = m.id;
	profile_free(p);
	run_meta_release(&m);
}

/* A passing run of an unnamed command. */
static void add(struct fixture *fx, int k, const char *branch, const char *commit, const char *mb)
{
	add_run(fx, k, branch, commit, mb, 0, "");
}

static void fixture_open(struct fixture *fx)
{
	fx->dir = tu_tmpdir();
	assert_non_null(fx->dir);
	snprintf(fx->db, sizeof(fx->db), "%s/ciprof.db", fx->dir);
	assert_int_equal(store_open(&fx->s, fx->db, STORE_CREATE), 0);
}

/* main: c1 (run 1), c2 (run 2), c3 (runs 3 and 4), later c4 (run 6); feature run 5 at f1
 * branched from c2; feature run 7 at f2 branched from c3b, a main commit never profiled. */
static void fixture_init(struct fixture *fx)
{
	fixture_open(fx);
	add(fx, 1, "main", "c1", "c1");
	add(fx, 2, "main", "c2", "c2");
	add(fx, 3, "main", "c3", "c3");
	add(fx, 4, "main", "c3", "c3");
	add(fx, 5, "feature", "f1", "c2");
	add(fx, 6, "main", "c4", "c4");
	add(fx, 7, "feature", "f2", "c3b");
}

static void fixture_release(struct fixture *fx)
{
	store_close(fx->s);
	char path[600];
	snprintf(path, sizeof(path), "%s-wal", fx->db);
	unlink(path);
	snprintf(path, sizeof(path), "%s-shm", fx->db);
	unlink(path);
	unlink(fx->db);
	rmdir(fx->dir);
	free(fx->dir);
}

static void head_of(struct fixture *fx, int k, struct run_meta *m)
{
	run_meta_init(m);
	assert_int_equal(store_get_run(fx->s, fx->id[k], m), 0);
}

static void test_at_merge_base_and_older(void **state)
{
	(void)state;
	struct fixture fx;
	fixture_init(&fx);
	static const char *const f1[] = {"f1", "c2", "c1", NULL};
	struct lineage l = {f1};
	struct run_meta head;
	head_of(&fx, 5, &head);
	/* With ancestry and without it (the recorded merge-base and store order), the same:
	 * runs 2 (at the merge-base) and 1, never 3, 4 or 6 (main's later changes). */
	for (int with = 0; with < 2; with++) {
		struct report_baseline b;
		report_baseline_init(&b);
		assert_int_equal(report_baseline_select(fx.s, &head, "main", NULL, 5,
		                                        with ? contains : NULL, &l, &b),
		                 0);
		assert_int_equal(b.n, 2);
		assert_int_equal(b.ids[0], fx.id[1]);
		assert_int_equal(b.ids[1], fx.id[2]);
		assert_int_equal(b.at_merge_base, 1);
		assert_false(b.fallback);
		assert_false(b.unknown);
		assert_int_equal(b.nruns, 2);
		assert_non_null(strstr(b.rule, "1 at the merge-base c2"));
		/* The merged baseline is the sum of the runs. */
		uint64_t sum = profile_total(b.runs[0], NULL) + profile_total(b.runs[1], NULL);
		assert_true(profile_total(b.merged, NULL) == sum);
		assert_true(b.merged->stats.samples ==
		            b.runs[0]->stats.samples + b.runs[1]->stats.samples);
		report_baseline_release(&b);
	}
	/* --base-runs 1: only the merge-base's run. */
	struct report_baseline b;
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &head, "main", NULL, 1, contains, &l, &b), 0);
	assert_int_equal(b.n, 1);
	assert_int_equal(b.ids[0], fx.id[2]);
	assert_non_null(strstr(b.rule, "1 run of main at the merge-base c2"));
	/* The history still holds both runs the head contains. */
	assert_int_equal(b.nruns, 2);
	report_baseline_release(&b);
	run_meta_release(&head);
	fixture_release(&fx);
}

static void test_fallback_only_ancestors(void **state)
{
	(void)state;
	struct fixture fx;
	fixture_init(&fx);
	/* f2 branched from c3b (after c3, never profiled); c4 came later and is not in it. */
	static const char *const f2[] = {"f2", "c3b", "c3", "c2", "c1", NULL};
	struct lineage l = {f2};
	struct run_meta head;
	head_of(&fx, 7, &head);
	struct report_baseline b;
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &head, NULL, NULL, 10, contains, &l, &b), 0);
	assert_int_equal(b.n, 4);
	for (size_t i = 0; i < b.n; i++)
		assert_true(b.ids[i] != fx.id[6]);
	assert_int_equal(b.at_merge_base, 0);
	assert_true(b.fallback);
	assert_non_null(strstr(b.rule, "none at the merge-base c3b"));
	report_baseline_release(&b);
	/* A merge-base computed now (the repository knows better) wins over the recorded one. */
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &head, "main", "c3", 10, contains, &l, &b),
	                 0);
	assert_int_equal(b.at_merge_base, 2);
	assert_false(b.fallback);
	report_baseline_release(&b);
	run_meta_release(&head);
	fixture_release(&fx);
}

static void test_unknown_ref(void **state)
{
	(void)state;
	struct fixture fx;
	fixture_init(&fx);
	struct run_meta head;
	head_of(&fx, 5, &head);
	struct report_baseline b;
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &head, "mian", NULL, 5, NULL, NULL, &b), 0);
	assert_int_equal(b.n, 0);
	assert_true(b.unknown);
	assert_non_null(strstr(b.none, "mian"));
	assert_non_null(strstr(b.none, "branches: feature, main; did you mean main?)"));
	report_baseline_release(&b);
	/* Nothing near: no guess. */
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &head, "release", NULL, 5, NULL, NULL, &b),
	                 0);
	assert_true(b.unknown);
	assert_non_null(strstr(b.none, "branches: feature, main)"));
	report_baseline_release(&b);
	/* A branch that exists but holds only later runs is not "unknown". */
	static const char *const none[] = {"f1", NULL};
	struct lineage l = {none};
	report_baseline_init(&b);
	run_meta_set(&head.merge_base, "");
	assert_int_equal(report_baseline_select(fx.s, &head, "feature", NULL, 5, contains, &l, &b),
	                 0);
	assert_int_equal(b.n, 0);
	assert_false(b.unknown);
	report_baseline_release(&b);
	run_meta_release(&head);
	fixture_release(&fx);
}

static void test_merge_base_first(void **state)
{
	(void)state;
	/* main: c1 (run 1), c2 (run 2), then c1 profiled again (run 3, e.g. a re-run of an old
	 * job); feature run 4 branched from c2. The merge-base's run comes first even though a
	 * run of an older commit was stored after it. */
	struct fixture fx;
	fixture_open(&fx);
	add(&fx, 1, "main", "c1", "c1");
	add(&fx, 2, "main", "c2", "c2");
	add(&fx, 3, "main", "c1", "c1");
	add(&fx, 4, "feature", "f", "c2");
	static const char *const f[] = {"f", "c2", "c1", NULL};
	struct lineage l = {f};
	struct run_meta head;
	head_of(&fx, 4, &head);
	struct report_baseline b;
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &head, "main", NULL, 1, contains, &l, &b), 0);
	assert_int_equal(b.n, 1);
	assert_int_equal(b.ids[0], fx.id[2]);
	assert_int_equal(b.at_merge_base, 1);
	assert_false(b.fallback);
	assert_string_equal(b.commit, "c2");
	report_baseline_release(&b);
	/* Two: the merge-base's, then the newest older one; ids oldest first. */
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &head, "main", NULL, 2, contains, &l, &b), 0);
	assert_int_equal(b.n, 2);
	assert_int_equal(b.ids[0], fx.id[2]);
	assert_int_equal(b.ids[1], fx.id[3]);
	assert_string_equal(b.commit, "c2");
	assert_non_null(strstr(b.rule, "1 at the merge-base c2, 1 of older commits"));
	report_baseline_release(&b);
	/* --base-runs 3 takes all three; the history holds them too, newest first. */
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &head, "main", NULL, 3, contains, &l, &b), 0);
	assert_int_equal(b.n, 3);
	assert_int_equal(b.nruns, 3);
	report_baseline_release(&b);
	run_meta_release(&head);
	fixture_release(&fx);
}

/* The ancestors of a head branched at main's 40th commit (of 80). */
/* A failed, crashed or interrupted run of the base branch is never a base run, nor one of
 * another command while runs of the head's exist; the rule says what was left out. When no
 * base run ran the head's command, runs of any command are taken and command_differs says so
 * (the report is then advisory). */
static void test_failed_and_other_commands_left_out(void **state)
{
	(void)state;
	struct fixture fx;
	fixture_open(&fx);
	add_run(&fx, 0, "main", "c1", "c1", 0, "make test");
	add_run(&fx, 1, "main", "c2", "c2", 0, "make test");
	add_run(&fx, 2, "main", "c2", "c2", 1, "make test");
	add_run(&fx, 3, "main", "c2", "c2", 130, "make test");
	add_run(&fx, 4, "main", "c2", "c2", 0, "make check");
	add_run(&fx, 5, "feature", "f1", "c2", 0, "make test");
	add_run(&fx, 6, "feature", "f1", "c2", 0, "ctest");
	static const char *const f1[] = {"f1", "c2", "c1", NULL};
	struct lineage l = {f1};
	struct run_meta head;
	head_of(&fx, 5, &head);
	struct report_baseline b;
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &head, "main", NULL, 5, contains, &l, &b), 0);
	assert_int_equal(b.n, 2);
	assert_int_equal(b.ids[0], fx.id[0]);
	assert_int_equal(b.ids[1], fx.id[1]);
	assert_int_equal(b.nruns, 2);
	assert_int_equal(b.failed, 2);
	assert_int_equal(b.other_command, 1);
	assert_false(b.command_differs);
	assert_non_null(strstr(b.rule, "2 failed runs left out (exit status not 0)"));
	assert_non_null(strstr(b.rule, "1 run of another command left out"));
	report_baseline_release(&b);
	run_meta_release(&head);
	/* The head runs ctest, which no base run did: the passing runs of any command. */
	head_of(&fx, 6, &head);
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &head, "main", NULL, 5, contains, &l, &b), 0);
	assert_int_equal(b.n, 3);
	assert_int_equal(b.failed, 2);
	assert_true(b.command_differs);
	assert_non_null(strstr(b.rule, "none of the head's command"));
	report_baseline_release(&b);
	run_meta_release(&head);
	/* An imported head (its command is the import's) is compared with runs of any command. */
	add_run(&fx, 7, "feature", "f1", "c2", 0, "/usr/bin/ciprof import --format pprof x.pb");
	head_of(&fx, 7, &head);
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &head, "main", NULL, 5, contains, &l, &b), 0);
	assert_int_equal(b.n, 3);
	assert_int_equal(b.other_command, 0);
	assert_false(b.command_differs);
	report_baseline_release(&b);
	run_meta_release(&head);
	/* The trend charts and blame read the branch's past without its failed runs either. */
	struct report_quantity q = {.measure = REPORT_TEST, .name = "", .suite = 1};
	struct report_history h;
	report_history_init(&h);
	assert_int_equal(report_history_load(fx.s, "main", 0, 3, &q, 1, &h), 0);
	assert_int_equal(h.n, 3);
	assert_int_equal(h.points[0].run, fx.id[0]);
	assert_int_equal(h.points[1].run, fx.id[1]);
	assert_int_equal(h.points[2].run, fx.id[4]);
	report_history_release(&h);
	/* Every run the head contains failed: no baseline, and why. */
	fixture_release(&fx);
	fixture_open(&fx);
	add_run(&fx, 0, "main", "c1", "c1", 2, "make test");
	add_run(&fx, 1, "feature", "f1", "c1", 0, "make test");
	head_of(&fx, 1, &head);
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &head, "main", NULL, 5, NULL, NULL, &b), 0);
	assert_int_equal(b.n, 0);
	assert_non_null(strstr(b.none, "non-zero exit status"));
	report_baseline_release(&b);
	run_meta_release(&head);
	fixture_release(&fx);
}

static int contains_upto40(void *ctx, const char *commit)
{
	(void)ctx;
	unsigned k;
	if (sscanf(commit, "c0de%04x", &k) != 1)
		return 0;
	return k <= 40;
}

static void test_long_history(void **state)
{
	(void)state;
	/* main has 80 runs, one per commit c0de0001..c0de0050 (hex); feature branched at the
	 * 40th. --base-runs 30: the merge-base's run and the 29 before it, found by walking
	 * main's runs in SQL pages past the 40 later ones (never used), 10 loaded as history and
	 * the other 20 merged through the segment tree: the sum is exactly the runs' sum. */
	struct fixture fx;
	fixture_open(&fx);
	int64_t ids[81];
	uint64_t totals[81];
	char commit[16];
	for (unsigned k = 1; k <= 80; k++) {
		struct run_meta m;
		snprintf(commit, sizeof(commit), "c0de%04x", k);
		tu_meta(&m, "main", commit);
		struct profile *p = tu_random_profile(100 + k, 3, 20, 10, 4);
		assert_int_equal(store_add_run(fx.s, &m, p), 0);
		ids[k] = m.id;
		totals[k] = profile_total(p, NULL);
		profile_free(p);
		run_meta_release(&m);
	}
	struct run_meta hm;
	tu_meta(&hm, "feature", "f00d0001");
	run_meta_set(&hm.base_branch, "main");
	run_meta_set(&hm.merge_base, "c0de0028"); /* the 40th */
	struct profile *hp = tu_random_profile(7, 3, 20, 10, 4);
	assert_int_equal(store_add_run(fx.s, &hm, hp), 0);
	profile_free(hp);
	struct report_baseline b;
	report_baseline_init(&b);
	assert_int_equal(
	        report_baseline_select(fx.s, &hm, NULL, NULL, 30, contains_upto40, NULL, &b), 0);
	assert_int_equal(b.n, 30);
	assert_int_equal(b.at_merge_base, 1);
	assert_false(b.fallback);
	assert_int_equal(b.nruns, REPORT_HISTORY_RUNS);
	uint64_t sum = 0;
	for (size_t i = 0; i < b.n; i++) {
		assert_int_equal(b.ids[i], ids[11 + i]); /* runs 11..40, oldest first */
		sum += totals[11 + i];
	}
	assert_true(profile_total(b.merged, NULL) == sum);
	assert_string_equal(b.commit, "c0de0028");
	report_baseline_release(&b);
	/* Without the repository: the recorded merge-base bounds the runs the same way. */
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &hm, "main", NULL, 30, NULL, NULL, &b), 0);
	assert_int_equal(b.n, 30);
	assert_int_equal(b.ids[29], ids[40]);
	assert_true(profile_total(b.merged, NULL) == sum);
	report_baseline_release(&b);
	/* A commit prefix, any case: the runs at that commit. */
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &hm, "C0DE0005", NULL, 5, NULL, NULL, &b), 0);
	assert_int_equal(b.n, 1);
	assert_int_equal(b.ids[0], ids[5]);
	assert_true(profile_total(b.merged, NULL) == totals[5]);
	assert_int_equal(b.nruns, 5); /* its branch's runs up to it */
	report_baseline_release(&b);
	/* A run id. */
	char rid[32];
	snprintf(rid, sizeof(rid), "%lld", (long long)ids[60]);
	report_baseline_init(&b);
	assert_int_equal(report_baseline_select(fx.s, &hm, rid, NULL, 5, NULL, NULL, &b), 0);
	assert_int_equal(b.n, 1);
	assert_int_equal(b.ids[0], ids[60]);
	assert_int_equal(b.nruns, REPORT_HISTORY_RUNS);
	report_baseline_release(&b);
	run_meta_release(&hm);
	fixture_release(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_at_merge_base_and_older),
	        cmocka_unit_test(test_fallback_only_ancestors),
	        cmocka_unit_test(test_unknown_ref),
	        cmocka_unit_test(test_merge_base_first),
	        cmocka_unit_test(test_long_history),
	        cmocka_unit_test(test_failed_and_other_commands_left_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
