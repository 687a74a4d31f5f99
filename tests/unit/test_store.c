/* Unit tests of store/: round trips, trie dedup, concurrent writers, a kill while storing,
 * and the files the store must refuse (corrupt, newer, locked, foreign, missing) untouched.
 * The lock test opens a second SQLite connection directly: only a raw connection can hold the
 * exclusive lock ciprof must wait for and then report. */
#include "store/store.h"
#include "common/error.h"
#include "test_store_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char *tmp;

static char *path_in(const char *name)
{
	return xasprintf("%s/%s", tmp, name);
}

static int setup(void **state)
{
	tmp = tu_tmpdir();
	unsetenv("CIPROF_DB_TIMEOUT_MS");
	return tmp ? 0 : -1;
}

static int teardown(void **state)
{
	char *cmd = xasprintf("rm -rf '%s'", tmp);
	if (system(cmd)) {
	}
	free(cmd);
	free(tmp);
	return 0;
}

static struct store *open_ok(const char *path, int flags)
{
	struct store *s = NULL;
	int r = store_open(&s, path, flags);
	if (r < 0)
		fail_msg("store_open(%s): %s", path, cp_last_error());
	return s;
}

static void test_round_trip(void **state)
{
	char *db = path_in("sub/dir/rt.db");
	struct store *s = open_ok(db, STORE_CREATE);
	struct profile *p = tu_random_profile(1, 4, 300, 40, 12);
	struct run_meta m;
	tu_meta(&m, "main", "0123456789abcdef0123456789abcdef01234567");
	run_meta_set(&m.merge_base, "feedface");
	run_meta_set(&m.subject, "Add a parser");
	run_meta_set(&m.ci_provider, "github");
	run_meta_set(&m.job_url, "https://example.com/job/1");
	run_meta_set(&m.cpu_model, "Test CPU");
	run_meta_set(&m.command, "make test");
	run_meta_set(&m.base_branch, "main");
	m.dirty = 1;
	m.pr_number = 42;
	m.cpu_count = 2;
	p->stats.exit_status = 3;
	m.commit_time = 1700000000;
	m.created_at = 1700000100;
	run_meta_set_tag(&m, "os", "linux");
	run_meta_set_tag(&m, "cc", "gcc");
	assert_int_equal(store_add_run(s, &m, p), 0);
	assert_true(m.id > 0);
	store_close(s);

	s = open_ok(db, 0);
	struct run_meta g;
	run_meta_init(&g);
	assert_int_equal(store_get_run(s, m.id, &g), 0);
	assert_string_equal(g.commit, m.commit);
	assert_string_equal(g.branch, "main");
	assert_string_equal(g.merge_base, "feedface");
	assert_string_equal(g.subject, "Add a parser");
	assert_string_equal(g.ci_provider, "github");
	assert_string_equal(g.job_url, m.job_url);
	assert_string_equal(g.cpu_model, "Test CPU");
	assert_string_equal(g.command, "make test");
	assert_int_equal(g.dirty, 1);
	assert_int_equal(g.pr_number, 42);
	assert_int_equal(g.cpu_count, 2);
	assert_int_equal(g.stats.exit_status, 3);
	assert_int_equal(g.commit_time, 1700000000);
	assert_int_equal(g.created_at, 1700000100);
	assert_int_equal(g.stats.samples, profile_total(p, NULL));
	assert_int_equal(g.stats.hz, 99);
	/* The figures are the profile's, and what store_add_run said it stored. */
	assert_int_equal(g.stats.period_ns, p->stats.period_ns);
	assert_int_equal(g.stats.threads, 4);
	assert_true(g.stats.wall_seconds == p->stats.wall_seconds);
	assert_true(g.stats.cpu_seconds == p->stats.cpu_seconds);
	assert_int_equal(m.stats.samples, g.stats.samples);
	assert_int_equal(m.stats.exit_status, 3);
	assert_true(m.stats.wall_seconds == g.stats.wall_seconds);
	assert_int_equal(g.ntags, 2);
	assert_string_equal(g.tags[0].key, "cc"); /* sorted by key */
	assert_string_equal(g.tags[1].value, "linux");
	run_meta_release(&g);

	struct profile *q;
	assert_int_equal(store_load_profile(s, m.id, NULL, &q), 0);
	char *a = tu_folded(p, NULL), *b = tu_folded(q, NULL);
	assert_string_equal(a, b);
	free(a);
	free(b);
	/* Per-test samples survive, and frames keep module, file and line. */
	const char *tests[] = {"", "test_1", "test_2", "test_3"};
	for (int i = 0; i < 4; i++) {
		a = tu_folded(p, tests[i]);
		b = tu_folded(q, tests[i]);
		assert_string_equal(a, b);
		free(a);
		free(b);
		assert_int_equal(profile_total(p, tests[i]), profile_total(q, tests[i]));
	}
	assert_int_equal(p->nframes, q->nframes);
	for (size_t i = 0; i < q->nframes; i++) {
		struct profile_frame f = q->frames[i];
		struct profile_frame k = {profile_intern(p, profile_str(q, f.function)),
		                          profile_intern(p, profile_str(q, f.module)),
		                          profile_intern(p, profile_str(q, f.file)), f.line,
		                          f.kind};
		size_t before = p->nframes;
		profile_frame(p, &k);
		assert_int_equal(p->nframes, before); /* q's frame existed in p */
	}
	assert_int_equal(q->stats.samples, p->stats.samples);
	assert_int_equal(q->stats.period_ns, p->stats.period_ns);
	assert_int_equal(q->stats.processes, 3);
	profile_free(q);

	/* One test only. */
	assert_int_equal(store_load_profile(s, m.id, "test_2", &q), 0);
	assert_int_equal(profile_total(q, NULL), profile_total(p, "test_2"));
	profile_free(q);
	assert_int_equal(store_load_profile(s, m.id, "no_such_test", &q), -1);
	assert_non_null(strstr(cp_last_error(), "no samples of test 'no_such_test'"));
	assert_int_equal(store_load_profile(s, 999, NULL, &q), -1);
	assert_non_null(strstr(cp_last_error(), "no run 999"));
	assert_int_equal(store_check(s), 0);
	store_close(s);
	profile_free(p);
	run_meta_release(&m);
	free(db);
}

static void test_empty_run(void **state)
{
	/* A command that ran too briefly to be sampled still stores a run. */
	char *db = path_in("empty.db");
	struct store *s = open_ok(db, STORE_CREATE);
	struct profile *p = profile_new();
	struct run_meta m;
	for (int i = 0; i < 3; i++) {
		tu_meta(&m, "main", "c");
		assert_int_equal(store_add_run(s, &m, p), 0);
		run_meta_release(&m);
	}
	struct profile *q;
	assert_int_equal(store_latest_run(s, NULL, &m.id), 0);
	assert_int_equal(store_load_profile(s, m.id, NULL, &q), 0);
	assert_int_equal(profile_total(q, NULL), 0);
	profile_free(q);
	struct store_query sq = {.branch = "main"};
	size_t n;
	assert_int_equal(store_merge_runs(s, &sq, &q, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_int_equal(profile_total(q, NULL), 0);
	profile_free(q);
	assert_int_equal(store_check(s), 0);
	store_close(s);
	profile_free(p);
	free(db);
}

/* A profile made without figures (a folded import, a test's) is stored with its sample count,
 * and the period and CPU time of its rate. */
static void test_figures_filled(void **state)
{
	(void)state;
	char *db = path_in("figures.db");
	struct store *s = open_ok(db, STORE_CREATE);
	struct profile *p = tu_random_profile(7, 2, 40, 10, 3);
	uint64_t total = profile_total(p, NULL);
	p->stats = (struct profile_stats){.hz = 100, .exit_status = 2};
	struct run_meta m;
	tu_meta(&m, "main", "c");
	assert_int_equal(store_add_run(s, &m, p), 0);
	struct run_meta g;
	run_meta_init(&g);
	assert_int_equal(store_get_run(s, m.id, &g), 0);
	assert_int_equal(g.stats.samples, total);
	assert_int_equal(g.stats.period_ns, 10000000);
	assert_true(fabs(g.stats.cpu_seconds - (double)total / 100) < 1e-9);
	assert_int_equal(g.stats.exit_status, 2);
	assert_int_equal(m.stats.samples, total);
	assert_int_equal(m.stats.period_ns, 10000000);
	struct profile *q;
	assert_int_equal(store_load_profile(s, m.id, NULL, &q), 0);
	assert_int_equal(q->stats.samples, total);
	assert_int_equal(q->stats.period_ns, 10000000);
	profile_free(q);
	run_meta_release(&g);
	run_meta_release(&m);
	store_close(s);
	profile_free(p);
	free(db);
}

static void test_list_and_latest(void **state)
{
	char *db = path_in("list.db");
	struct store *s = open_ok(db, STORE_CREATE);
	int64_t id;
	assert_int_equal(store_latest_run(s, NULL, &id), -1);
	assert_non_null(strstr(cp_last_error(), "no runs stored"));
	const char *branches[] = {"main", "feature", "main", "main", "feature"};
	int64_t ids[5];
	for (int i = 0; i < 5; i++) {
		struct profile *p = tu_random_profile((uint64_t)i, 2, 20, 10, 5);
		struct run_meta m;
		tu_meta(&m, branches[i], "abc");
		assert_int_equal(store_add_run(s, &m, p), 0);
		ids[i] = m.id;
		run_meta_release(&m);
		profile_free(p);
	}
	struct run_meta *runs;
	size_t n;
	assert_int_equal(store_list_runs(s, NULL, 0, &runs, &n), 0);
	assert_int_equal(n, 5);
	assert_int_equal(runs[0].id, ids[4]); /* newest first */
	store_runs_free(runs, n);
	assert_int_equal(store_list_runs(s, "main", 2, &runs, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(runs[0].id, ids[3]);
	assert_int_equal(runs[1].id, ids[2]);
	store_runs_free(runs, n);
	assert_int_equal(store_latest_run(s, "feature", &id), 0);
	assert_int_equal(id, ids[4]);
	assert_int_equal(store_latest_run(s, "nope", &id), -1);
	store_close(s);
	free(db);
}

static void test_trie_dedup(void **state)
{
	char *db = path_in("dedup.db");
	struct store *s = open_ok(db, STORE_CREATE);
	struct profile *p = tu_random_profile(7, 3, 200, 30, 15);
	struct run_meta m;
	tu_meta(&m, "main", "c1");
	assert_int_equal(store_add_run(s, &m, p), 0);
	struct store_counts c1, c2, c3;
	assert_int_equal(store_counts(s, &c1), 0);
	assert_true(c1.nodes > 0);
	assert_int_equal(store_add_run(s, &m, p), 0);
	assert_int_equal(store_counts(s, &c2), 0);
	assert_int_equal(c2.nodes, c1.nodes);
	assert_int_equal(c2.frames, c1.frames);
	assert_int_equal(c2.strings, c1.strings);
	assert_int_equal(c2.runs, 2);
	store_close(s);
	/* A fresh connection (empty cache) dedups through the database too. */
	s = open_ok(db, 0);
	assert_int_equal(store_add_run(s, &m, p), 0);
	assert_int_equal(store_counts(s, &c3), 0);
	assert_int_equal(c3.nodes, c1.nodes);
	assert_int_equal(c3.runs, 3);
	store_close(s);
	run_meta_release(&m);
	profile_free(p);
	free(db);
}

static void writer(const char *db, int who)
{
	struct store *s;
	if (store_open(&s, db, STORE_CREATE) < 0) {
		fprintf(stderr, "writer %d: %s\n", who, cp_last_error());
		_exit(1);
	}
	for (int i = 0; i < 20; i++) {
		struct profile *p = tu_random_profile((uint64_t)(who * 100 + i), 3, 50, 20, 8);
		struct run_meta m;
		tu_meta(&m, who ? "b" : "a", "c");
		if (store_add_run(s, &m, p) < 0) {
			fprintf(stderr, "writer %d run %d: %s\n", who, i, cp_last_error());
			_exit(1);
		}
		run_meta_release(&m);
		profile_free(p);
	}
	store_close(s);
	_exit(0);
}

static void test_concurrent_writers(void **state)
{
	char *db = path_in("conc/c.db");
	pid_t pids[2];
	for (int w = 0; w < 2; w++) {
		pids[w] = fork();
		assert_true(pids[w] >= 0);
		if (!pids[w])
			writer(db, w);
	}
	for (int w = 0; w < 2; w++) {
		int status;
		assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	struct store *s = open_ok(db, 0);
	struct store_counts c;
	assert_int_equal(store_counts(s, &c), 0);
	assert_int_equal(c.runs, 40);
	assert_int_equal(c.branches, 2);
	assert_int_equal(store_check(s), 0);
	/* Each writer's branch merges to the sum of its 20 profiles. */
	for (int w = 0; w < 2; w++) {
		struct profile *sum = profile_new();
		for (int i = 0; i < 20; i++) {
			struct profile *p =
			        tu_random_profile((uint64_t)(w * 100 + i), 3, 50, 20, 8);
			profile_merge(sum, p);
			profile_free(p);
		}
		struct store_query q = {.branch = w ? "b" : "a"};
		struct profile *got;
		size_t n;
		assert_int_equal(store_merge_runs(s, &q, &got, &n, NULL), 0);
		assert_int_equal(n, 20);
		char *x = tu_folded(sum, NULL), *y = tu_folded(got, NULL);
		assert_string_equal(x, y);
		free(x);
		free(y);
		profile_free(sum);
		profile_free(got);
	}
	store_close(s);
	free(db);
}

/* Brute-force merge of the profiles of seeds [lo, hi). */
static struct profile *merged(const uint64_t *seeds, int lo, int hi)
{
	struct profile *sum = profile_new();
	for (int i = lo; i < hi; i++) {
		struct profile *p = tu_random_profile(seeds[i], 3, 60, 25, 8);
		profile_merge(sum, p);
		profile_free(p);
	}
	return sum;
}

static void assert_branch_is(struct store *s, const char *branch, const uint64_t *seeds, int n)
{
	struct store_query q = {.branch = branch};
	struct profile *got, *want = merged(seeds, 0, n);
	size_t cnt;
	assert_int_equal(store_merge_runs(s, &q, &got, &cnt, NULL), 0);
	assert_int_equal(cnt, (size_t)n);
	char *x = tu_folded(want, NULL), *y = tu_folded(got, NULL);
	assert_string_equal(x, y);
	free(x);
	free(y);
	profile_free(want);
	profile_free(got);
	/* and the newest run alone */
	int64_t id;
	assert_int_equal(store_latest_run(s, branch, &id), 0);
	assert_int_equal(store_load_profile(s, id, NULL, &got), 0);
	want = merged(seeds, n - 1, n);
	x = tu_folded(want, NULL);
	y = tu_folded(got, NULL);
	assert_string_equal(x, y);
	free(x);
	free(y);
	profile_free(want);
	profile_free(got);
}

static void add_seed(struct store *s, const char *branch, uint64_t seed)
{
	struct profile *p = tu_random_profile(seed, 3, 60, 25, 8);
	struct run_meta m;
	tu_meta(&m, branch, "c");
	assert_int_equal(store_add_run(s, &m, p), 0);
	run_meta_release(&m);
	profile_free(p);
}

/* Two connections writing one branch in turns: each codes its run against a previous run the
 * other wrote, and sees the dictionary items the other appended. */
static void test_writers_take_turns(void **state)
{
	char *db = path_in("turns.db");
	struct store *a = open_ok(db, STORE_CREATE), *b = open_ok(db, 0);
	uint64_t seeds[45];
	for (int i = 0; i < 45; i++) {
		seeds[i] = 500 + (uint64_t)i;
		add_seed(i % 3 ? a : b, "main", seeds[i]);
	}
	assert_int_equal(store_check(a), 0);
	assert_branch_is(a, "main", seeds, 45);
	assert_branch_is(b, "main", seeds, 45);
	store_close(a);
	store_close(b);
	free(db);
}

/* gc in another connection renumbers the dictionary and the runs: a writer holding them in
 * memory must notice, and the file gives the freed pages back. */
static void test_gc_under_a_writer(void **state)
{
	char *db = path_in("gcw.db");
	struct store *w = open_ok(db, STORE_CREATE), *g = open_ok(db, 0);
	uint64_t seeds[80];
	for (int i = 0; i < 60; i++) {
		seeds[i] = 900 + (uint64_t)i * 7;
		add_seed(w, "main", seeds[i]);
	}
	assert_int_equal(store_checkpoint(w), 0);
	struct store_counts before, after;
	assert_int_equal(store_counts(w, &before), 0);
	struct store_gc_opts o = {.keep_runs = 10};
	struct store_gc_result r;
	assert_int_equal(store_gc(g, &o, &r), 0);
	assert_int_equal(r.runs_deleted, 50);
	assert_true(r.nodes_pruned > 0);
	assert_int_equal(store_counts(w, &after), 0);
	assert_true(after.nodes < before.nodes);
	assert_int_equal(after.freelist_pages, 0);
	assert_true(after.page_count < before.page_count);
	for (int i = 60; i < 80; i++) {
		seeds[i] = 900 + (uint64_t)i * 7;
		add_seed(w, "main", seeds[i]);
	}
	assert_int_equal(store_check(g), 0);
	assert_branch_is(g, "main", seeds + 50, 30);
	store_close(w);
	store_close(g);
	free(db);
}

static int hook_fd = -1;

static void hook_stall(void)
{
	if (write(hook_fd, "x", 1) != 1)
		_exit(2);
	sleep(30);
}

static void test_kill_during_store(void **state)
{
	char *db = path_in("kill.db");
	struct store *s = open_ok(db, STORE_CREATE);
	struct profile *small = tu_random_profile(3, 2, 30, 10, 5);
	struct run_meta m;
	tu_meta(&m, "main", "c");
	assert_int_equal(store_add_run(s, &m, small), 0);
	struct store_counts before;
	assert_int_equal(store_counts(s, &before), 0);
	store_close(s);

	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(fds[0]);
		hook_fd = fds[1];
		store_test_hook_before_commit = hook_stall;
		struct store *cs;
		if (store_open(&cs, db, 0) < 0)
			_exit(1);
		struct profile *big = tu_random_profile(4, 20, 5000, 300, 30);
		struct run_meta cm;
		tu_meta(&cm, "main", "big");
		store_add_run(cs, &cm, big);
		_exit(3); /* never reached: killed inside the transaction */
	}
	close(fds[1]);
	char c;
	assert_int_equal(read(fds[0], &c, 1), 1); /* the child is inside the transaction */
	kill(pid, SIGKILL);
	int status;
	waitpid(pid, &status, 0);
	assert_true(WIFSIGNALED(status));
	close(fds[0]);

	s = open_ok(db, 0);
	struct store_counts after;
	assert_int_equal(store_counts(s, &after), 0);
	assert_int_equal(after.runs, before.runs);
	assert_int_equal(after.nodes, before.nodes);
	assert_int_equal(after.profiles, before.profiles);
	assert_int_equal(after.segtree_nodes, before.segtree_nodes);
	assert_int_equal(store_check(s), 0);
	/* And the database takes the next run. */
	assert_int_equal(store_add_run(s, &m, small), 0);
	assert_int_equal(store_check(s), 0);
	store_close(s);
	run_meta_release(&m);
	profile_free(small);
	free(db);
}

/* Asserts that opening path fails with a message containing want, and leaves it untouched. */
static void assert_refused(const char *path, int flags, const char *want)
{
	size_t len1, len2;
	char *before = tu_read(path, &len1);
	assert_non_null(before);
	struct store *s = (struct store *)1;
	assert_int_equal(store_open(&s, path, flags), -1);
	assert_null(s);
	const char *msg = cp_last_error();
	if (!strstr(msg, want))
		fail_msg("message '%s' lacks '%s'", msg, want);
	assert_non_null(strstr(msg, path)); /* names the file */
	char *after = tu_read(path, &len2);
	assert_non_null(after);
	assert_int_equal(len1, len2);
	assert_memory_equal(before, after, len1);
	free(before);
	free(after);
	/* No -wal / -journal file was left either. */
	char *wal = xasprintf("%s-wal", path);
	struct stat st;
	assert_true(stat(wal, &st) < 0 || st.st_size == 0);
	free(wal);
}

static void test_corrupt_file(void **state)
{
	char *db = path_in("random.db");
	FILE *f = fopen(db, "wb");
	uint64_t r = 99;
	for (int i = 0; i < 8192; i++)
		fputc((int)(tu_rand(&r) & 0xff), f);
	fclose(f);
	assert_refused(db, 0, "not a ciprof database");
	assert_refused(db, STORE_CREATE, "not a ciprof database");

	/* A real database whose pages were damaged: opening may pass, reading must fail
	 * clearly, and still nothing is written. */
	char *db2 = path_in("damaged.db");
	struct store *s = open_ok(db2, STORE_CREATE);
	for (int i = 0; i < 30; i++) {
		struct profile *p = tu_random_profile((uint64_t)i, 3, 200, 50, 20);
		struct run_meta m;
		tu_meta(&m, "main", "c");
		assert_int_equal(store_add_run(s, &m, p), 0);
		run_meta_release(&m);
		profile_free(p);
	}
	store_close(s); /* checkpoints the WAL into the file */
	struct stat st;
	assert_int_equal(stat(db2, &st), 0);
	assert_true(st.st_size > 4 * 4096);
	int fd = open(db2, O_WRONLY);
	for (off_t off = 4096; off < st.st_size; off += 4096 * 2) {
		char junk[4096];
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (char)(tu_rand(&r) & 0xff);
		assert_int_equal(pwrite(fd, junk, sizeof(junk), off), (ssize_t)sizeof(junk));
	}
	close(fd);
	size_t len1, len2;
	char *before = tu_read(db2, &len1);
	s = NULL;
	int opened = store_open(&s, db2, 0);
	if (opened == 0) {
		struct run_meta *runs;
		size_t n;
		int r1 = store_list_runs(s, NULL, 0, &runs, &n);
		int r2 = r1 == 0 ? store_check(s) : -1;
		if (r1 == 0)
			store_runs_free(runs, n);
		assert_int_equal(r2, -1);
		store_close(s);
	}
	assert_non_null(strstr(cp_last_error(), db2));
	assert_true(strstr(cp_last_error(), "corrupt") || strstr(cp_last_error(), "not a ciprof"));
	char *after = tu_read(db2, &len2);
	assert_int_equal(len1, len2);
	assert_memory_equal(before, after, len1);
	free(before);
	free(after);
	free(db);
	free(db2);
}

static void raw_exec(const char *path, const char *sql)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* A blob damaged inside sound SQLite pages (a flipped bit, say): the checksum catches it, the
 * read says which and what to do, and nothing is written. */
static void test_damaged_blobs(void **state)
{
	static const char *const damage[] = {
	        /* the newest run's profile, a delta */
	        "UPDATE profiles SET blob = substr(blob, 1, 5) || x'00' || substr(blob, 7) "
	        "WHERE run = (SELECT max(run) FROM profiles)",
	        /* the first chunk of stack nodes */
	        "UPDATE dict SET blob = substr(blob, 1, 9) || x'ff' || substr(blob, 11) "
	        "WHERE id = (SELECT min(id) FROM dict WHERE id >= 2 << 40)",
	};
	static const char *const want[] = {"profile blob: damaged", "dictionary chunk: damaged"};
	for (int k = 0; k < 2; k++) {
		char *db = xasprintf("%s/damaged-%d.db", tmp, k);
		struct store *s = open_ok(db, STORE_CREATE);
		for (int i = 0; i < 5; i++)
			add_seed(s, "main", 70 + (uint64_t)i);
		store_close(s);
		raw_exec(db, damage[k]);
		size_t len1, len2;
		char *before = tu_read(db, &len1);
		s = open_ok(db, STORE_READONLY);
		int64_t id;
		struct profile *p;
		assert_int_equal(store_latest_run(s, NULL, &id), 0);
		assert_int_equal(store_load_profile(s, id, NULL, &p), -1);
		const char *msg = cp_last_error();
		if (!strstr(msg, want[k]) || !strstr(msg, "is corrupt") || !strstr(msg, db))
			fail_msg("unexpected message: %s", msg);
		struct store_query q = {.branch = "main"};
		assert_int_equal(store_merge_runs(s, &q, &p, NULL, NULL), -1);
		assert_non_null(strstr(cp_last_error(), want[k]));
		store_close(s);
		char *after = tu_read(db, &len2);
		assert_int_equal(len1, len2);
		assert_memory_equal(before, after, len1);
		free(before);
		free(after);
		free(db);
	}
}

static void test_newer_version(void **state)
{
	char *db = path_in("newer.db");
	struct store *s = open_ok(db, STORE_CREATE);
	store_close(s);
	raw_exec(db, "PRAGMA user_version = 99");
	assert_refused(db, 0, "newer than this ciprof");
	assert_refused(db, STORE_CREATE, "schema version 99");
	free(db);
}

static void test_foreign_and_missing(void **state)
{
	char *db = path_in("foreign.db");
	raw_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (1)");
	assert_refused(db, STORE_CREATE, "not a ciprof one");
	free(db);

	char *missing = path_in("nothing/here.db");
	struct store *s;
	assert_int_equal(store_open(&s, missing, 0), -1);
	assert_non_null(strstr(cp_last_error(), "no database at"));
	assert_non_null(strstr(cp_last_error(), missing));
	struct stat st;
	assert_true(stat(missing, &st) < 0); /* not created */
	char *dir = path_in("nothing");
	assert_true(stat(dir, &st) < 0);
	free(dir);
	free(missing);
}

/* A database at db holding one small run; *m and *p are that run (release them). */
static void seed_one_run(const char *db, struct run_meta *m, struct profile **p)
{
	struct store *s = open_ok(db, STORE_CREATE);
	*p = tu_random_profile(5, 2, 20, 10, 5);
	tu_meta(m, "main", "c");
	assert_int_equal(store_add_run(s, m, *p), 0);
	store_close(s);
}

static void test_locked(void **state)
{
	char *db = path_in("locked.db");
	struct store *s;
	struct profile *p;
	struct run_meta m;
	seed_one_run(db, &m, &p);
	setenv("CIPROF_DB_TIMEOUT_MS", "200", 1);

	/* Another connection holds an exclusive lock on the whole file. */
	sqlite3 *other;
	assert_int_equal(sqlite3_open(db, &other), SQLITE_OK);
	assert_int_equal(sqlite3_exec(other,
	                              "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; "
	                              "SELECT count(*) FROM runs;",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	assert_refused(db, 0, "locked by another process");
	sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(other);

	/* Another writer holds the write lock: reading works, storing waits, then says why. */
	assert_int_equal(sqlite3_open(db, &other), SQLITE_OK);
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	s = open_ok(db, 0);
	assert_int_equal(store_add_run(s, &m, p), -1);
	assert_non_null(strstr(cp_last_error(), "locked by another process"));
	assert_non_null(strstr(cp_last_error(), db));
	sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(other);
	/* Once free, the same store writes again. */
	assert_int_equal(store_add_run(s, &m, p), 0);
	struct store_counts c;
	assert_int_equal(store_counts(s, &c), 0);
	assert_int_equal(c.runs, 2);
	store_close(s);
	unsetenv("CIPROF_DB_TIMEOUT_MS");
	run_meta_release(&m);
	profile_free(p);
	free(db);
}

static int64_t fake_now_ms;
static int64_t fake_clock(void)
{
	return fake_now_ms;
}
static void fake_sleep(int64_t ms)
{
	fake_now_ms += ms;
}

/* CIPROF_DB_TIMEOUT_MS is one budget for a wait, not one per retry. */
static void test_one_busy_budget(void **state)
{
	char *db = path_in("budget.db");
	struct store *s;
	struct profile *p;
	struct run_meta m;
	seed_one_run(db, &m, &p);
	setenv("CIPROF_DB_TIMEOUT_MS", "1000", 1);
	store_test_clock_ms = fake_clock;
	store_test_sleep_ms = fake_sleep;

	sqlite3 *other;
	assert_int_equal(sqlite3_open(db, &other), SQLITE_OK);
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	s = open_ok(db, 0);
	int64_t t0 = fake_now_ms;
	assert_int_equal(store_add_run(s, &m, p), -1);
	assert_non_null(strstr(cp_last_error(), "locked by another process"));
	/* It waited the budget, once. */
	assert_true(fake_now_ms - t0 >= 1000);
	assert_true(fake_now_ms - t0 <= 1000 + 50);
	store_close(s);

	/* The whole file locked: opening waits one budget too. */
	sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
	assert_int_equal(sqlite3_exec(other,
	                              "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; "
	                              "SELECT count(*) FROM runs;",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	t0 = fake_now_ms;
	assert_int_equal(store_open(&s, db, 0), -1);
	assert_true(fake_now_ms - t0 >= 1000);
	assert_true(fake_now_ms - t0 <= 1000 + 50);
	sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(other);

	store_test_clock_ms = NULL;
	store_test_sleep_ms = NULL;
	unsetenv("CIPROF_DB_TIMEOUT_MS");
	run_meta_release(&m);
	profile_free(p);
	free(db);
}

static void test_gitignore_and_default_path(void **state)
{
	char *db = path_in("repo/.ciprof/ciprof.db");
	struct store *s = open_ok(db, STORE_CREATE);
	store_close(s);
	char *gi = path_in("repo/.ciprof/.gitignore");
	size_t len;
	char *text = tu_read(gi, &len);
	assert_non_null(text);
	assert_string_equal(text, "*\n");
	free(text);
	free(gi);
	free(db);

	char cwd[4096];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	/* A folder merely named .git is no repository (git and libgit2 agree): the search goes
	 * on up to the real one. */
	char *git = path_in("repo/a/.git");
	char *deep = path_in("repo/a/b");
	char *cmd = xasprintf("git init -q '%s/repo' && mkdir -p '%s' '%s'", tmp, git, deep);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(chdir(deep), 0);
	unsetenv("CIPROF_DB");
	char *got = store_default_path();
	char *want = xasprintf("%s/repo/.ciprof/ciprof.db", tmp);
	char *real_tmp = realpath(tmp, NULL);
	assert_non_null(real_tmp);
	char *real_want = xasprintf("%s/repo/.ciprof/ciprof.db", real_tmp);
	assert_true(!strcmp(got, want) || !strcmp(got, real_want));
	free(real_want);
	free(real_tmp);
	free(got);
	setenv("CIPROF_DB", "/x/y.db", 1);
	got = store_default_path();
	assert_string_equal(got, "/x/y.db");
	free(got);
	unsetenv("CIPROF_DB");
	/* Outside a repository: the current folder. */
	assert_int_equal(chdir(tmp), 0);
	got = store_default_path();
	assert_string_equal(got, ".ciprof/ciprof.db");
	free(got);
	assert_int_equal(chdir(cwd), 0);
	free(want);
	free(cmd);
	free(deep);
	free(git);
}

/* gc with fold: the old runs of one branch and commit (also not next to each other) become
 * one run, the newest of them, holding their mean profile and tagged with how many runs it
 * holds; an old run alone at its commit stays; ranges and the file stay sound; an aggregate
 * folded again weighs the runs it holds. */
static void fold_put(struct store *s, const char *branch, const char *commit,
                     const struct profile *p, int64_t *id)
{
	struct run_meta m;
	tu_meta(&m, branch, commit);
	if (store_add_run(s, &m, p) < 0)
		fail_msg("%s", cp_last_error());
	*id = m.id;
	run_meta_release(&m);
}

static void expect_profile(struct store *s, int64_t id, const struct profile *want)
{
	struct profile *got = NULL;
	if (store_load_profile(s, id, NULL, &got) < 0)
		fail_msg("%s", cp_last_error());
	char *x = tu_folded(want, NULL), *y = tu_folded(got, NULL);
	assert_string_equal(x, y);
	free(x);
	free(y);
	profile_free(got);
}

static const char *tag_of(const struct run_meta *m, const char *key)
{
	for (size_t i = 0; i < m->ntags; i++)
		if (!strcmp(m->tags[i].key, key))
			return m->tags[i].value;
	return NULL;
}

static void test_gc_fold(void **state)
{
	char *db = path_in("fold.db");
	struct store *s = open_ok(db, STORE_CREATE);
	struct profile *p[5];
	for (int i = 0; i < 5; i++)
		p[i] = tu_random_profile((uint64_t)(40 + i), 3, 80, 25, 8);
	/* ids 1..10: main c1 c1, feat f1, main c2 c1 c3 c3, feat f1, main c4, feat f2 */
	int64_t id[11];
	fold_put(s, "main", "c1", p[0], &id[1]);
	fold_put(s, "main", "c1", p[0], &id[2]);
	fold_put(s, "feat", "f1", p[4], &id[3]);
	fold_put(s, "main", "c2", p[1], &id[4]);
	fold_put(s, "main", "c1", p[0], &id[5]);
	fold_put(s, "main", "c3", p[2], &id[6]);
	fold_put(s, "main", "c3", p[2], &id[7]);
	fold_put(s, "feat", "f1", p[4], &id[8]);
	fold_put(s, "main", "c4", p[3], &id[9]);
	fold_put(s, "feat", "f2", p[4], &id[10]);
	struct store_gc_opts o = {.keep_runs = 3, .fold = 1};
	struct store_gc_result r;
	if (store_gc(s, &o, &r) < 0)
		fail_msg("%s", cp_last_error());
	/* c1 {1, 2, 5} -> 5, c3 {6, 7} -> 7; f1's run 3 and c2's run 4 are alone among the old */
	assert_int_equal(r.runs_folded, 5);
	assert_int_equal(r.aggregates, 2);
	assert_int_equal(r.runs_deleted, 3);
	assert_int_equal(r.runs_kept, 7);
	assert_int_equal(store_check(s), 0);
	struct run_meta *runs;
	size_t n;
	assert_int_equal(store_list_runs(s, "main", 0, &runs, &n), 0);
	assert_int_equal(n, 4); /* newest first: 9, 7, 5, 4 */
	assert_int_equal(runs[0].id, id[9]);
	assert_int_equal(runs[1].id, id[7]);
	assert_int_equal(runs[2].id, id[5]);
	assert_int_equal(runs[3].id, id[4]);
	assert_string_equal(tag_of(&runs[1], STORE_TAG_AGGREGATE), "2");
	assert_string_equal(tag_of(&runs[2], STORE_TAG_AGGREGATE), "3");
	assert_null(tag_of(&runs[3], STORE_TAG_AGGREGATE));
	store_runs_free(runs, n);
	/* the mean of equal runs is that run */
	expect_profile(s, id[5], p[0]);
	expect_profile(s, id[7], p[2]);
	expect_profile(s, id[4], p[1]);
	/* the branch's range is its four runs, in their new order */
	struct profile *want = profile_new();
	for (int i = 0; i < 4; i++)
		profile_merge(want, p[i]);
	struct store_query q = {.branch = "main"};
	struct profile *got = NULL;
	size_t nruns;
	if (store_merge_runs(s, &q, &got, &nruns, NULL) < 0)
		fail_msg("%s", cp_last_error());
	assert_int_equal(nruns, 4);
	char *x = tu_folded(want, NULL), *y = tu_folded(got, NULL);
	assert_string_equal(x, y);
	free(x);
	free(y);
	profile_free(got);
	profile_free(want);

	/* c1 again: the aggregate of 3 and one more run make an aggregate of 4 */
	int64_t id11, id12;
	fold_put(s, "main", "c1", p[0], &id11);
	fold_put(s, "main", "c5", p[1], &id12);
	struct store_gc_opts o2 = {.keep_runs = 1, .fold = 1};
	if (store_gc(s, &o2, &r) < 0)
		fail_msg("%s", cp_last_error());
	assert_int_equal(store_check(s), 0);
	struct run_meta m;
	run_meta_init(&m);
	assert_int_equal(store_get_run(s, id11, &m), 0);
	assert_string_equal(tag_of(&m, STORE_TAG_AGGREGATE), "4");
	run_meta_release(&m);
	expect_profile(s, id11, p[0]);
	assert_int_not_equal(store_get_run(s, id[5], &m), 0);
	/* feat's f1 {3, 8} folded too */
	run_meta_init(&m);
	assert_int_equal(store_get_run(s, id[8], &m), 0);
	assert_string_equal(tag_of(&m, STORE_TAG_AGGREGATE), "2");
	run_meta_release(&m);
	expect_profile(s, id[8], p[4]);
	for (int i = 0; i < 5; i++)
		profile_free(p[i]);
	store_close(s);
	free(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_round_trip),
	        cmocka_unit_test(test_empty_run),
	        cmocka_unit_test(test_figures_filled),
	        cmocka_unit_test(test_list_and_latest),
	        cmocka_unit_test(test_trie_dedup),
	        cmocka_unit_test(test_concurrent_writers),
	        cmocka_unit_test(test_writers_take_turns),
	        cmocka_unit_test(test_gc_under_a_writer),
	        cmocka_unit_test(test_kill_during_store),
	        cmocka_unit_test(test_corrupt_file),
	        cmocka_unit_test(test_damaged_blobs),
	        cmocka_unit_test(test_newer_version),
	        cmocka_unit_test(test_foreign_and_missing),
	        cmocka_unit_test(test_locked),
	        cmocka_unit_test(test_one_busy_budget),
	        cmocka_unit_test(test_gitignore_and_default_path),
	        cmocka_unit_test(test_gc_fold),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
