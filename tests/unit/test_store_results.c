/* Test outcomes (run --junit) in the store: stored with the run, loaded back with it (or with one
 * test), gone with the run at gc, and the schema step 2 -> 3 that adds them. Modules' build ids
 * likewise (step 4 -> 5). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "model/profile.h"
#include "model/runmeta.h"
#include "store/store.h"

static char dir[] = "/tmp/ciprof-results-XXXXXX";

static struct profile *make_profile(void)
{
	struct profile *p = profile_new();
	struct profile_frame proc = {.function = profile_intern(p, "suite"),
	                             .kind = PROFILE_FRAME_PROCESS};
	struct profile_frame f = {.function = profile_intern(p, "work")};
	uint32_t n =
	        profile_node(p, profile_node(p, 0, profile_frame(p, &proc)), profile_frame(p, &f));
	profile_add(p, profile_intern(p, "t_pass"), n, 10);
	profile_add(p, profile_intern(p, "t_fail"), n, 20);
	profile_set_result(p, profile_intern(p, "t_pass"), 0, 0.5);
	profile_set_result(p, profile_intern(p, "t_fail"), 1, 1.25);
	profile_set_result(p, profile_intern(p, "t_skip"), 3, 0); /* no samples */
	p->stats.period_ns = 10000000;
	return p;
}

static int64_t store_one(struct store *s, const struct profile *p)
{
	struct run_meta m;
	run_meta_init(&m);
	run_meta_set(&m.branch, "main");
	assert_int_equal(store_add_run(s, &m, p), 0);
	int64_t id = m.id;
	run_meta_release(&m);
	return id;
}

static void check_results(struct store *s, int64_t id)
{
	struct profile *q;
	assert_int_equal(store_load_profile(s, id, NULL, &q), 0);
	assert_int_equal(q->nresults, 3);
	int64_t fail = profile_find_str(q, "t_fail"), skip = profile_find_str(q, "t_skip");
	assert_true(fail > 0 && skip > 0);
	assert_int_equal(profile_result(q, (uint32_t)fail)->status, 1);
	assert_true(profile_result(q, (uint32_t)fail)->seconds == 1.25);
	assert_int_equal(profile_result(q, (uint32_t)skip)->status, 3);
	profile_free(q);
	/* one test: only its outcome */
	assert_int_equal(store_load_profile(s, id, "t_pass", &q), 0);
	assert_int_equal(q->nresults, 1);
	assert_string_equal(profile_str(q, q->results[0].test), "t_pass");
	profile_free(q);
}

static void test_round_trip_and_gc(void **state)
{
	(void)state;
	char path[256];
	snprintf(path, sizeof(path), "%s/a.db", dir);
	struct store *s;
	assert_int_equal(store_open(&s, path, STORE_CREATE), 0);
	struct profile *p = make_profile();
	int64_t first = store_one(s, p);
	int64_t second = store_one(s, p);
	check_results(s, first);
	struct store_gc_opts o = {.keep_runs = 1};
	struct store_gc_result r;
	assert_int_equal(store_gc(s, &o, &r), 0);
	check_results(s, second);
	store_close(s);
	/* the first run's outcomes went with it */
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_stmt *st;
	assert_int_equal(
	        sqlite3_prepare_v2(db, "SELECT count(*), min(run) FROM results", -1, &st, NULL),
	        SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 3);
	assert_int_equal(sqlite3_column_int64(st, 1), second);
	sqlite3_finalize(st);
	sqlite3_close(db);
	profile_free(p);
}

static void test_step_2_to_3(void **state)
{
	(void)state;
	char path[256];
	snprintf(path, sizeof(path), "%s/b.db", dir);
	struct store *s;
	assert_int_equal(store_open(&s, path, STORE_CREATE), 0);
	struct profile *p = profile_new();
	store_one(s, p); /* a run without outcomes */
	store_close(s);
	/* Make it a schema-2 file: no results table. */
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
	        sqlite3_exec(db,
	                     "DROP TABLE results; DROP TABLE build_ids; DROP TABLE run_build_ids; "
	                     "PRAGMA user_version = 2",
	                     NULL, NULL, NULL),
	        SQLITE_OK);
	sqlite3_close(db);
	/* Read-only refuses to migrate and leaves it alone; a writer migrates. */
	assert_int_equal(store_open(&s, path, STORE_READONLY), -1);
	assert_int_equal(store_open(&s, path, 0), 0);
	profile_free(p);
	p = make_profile();
	int64_t id = store_one(s, p);
	check_results(s, id);
	store_close(s);
	profile_free(p);
}

static void test_build_ids(void **state)
{
	(void)state;
	char path[256];
	snprintf(path, sizeof(path), "%s/m.db", dir);
	struct store *s;
	assert_int_equal(store_open(&s, path, STORE_CREATE), 0);
	struct profile *p = make_profile();
	profile_set_build_id(p, profile_intern(p, "suite"),
	                     "0123456789abcdef0123456789abcdef01234567");
	profile_set_build_id(p, profile_intern(p, "libx.so"), "aa");
	profile_set_build_id(p, profile_intern(p, "libx.so"), "bb"); /* two builds: none kept */
	int64_t id = store_one(s, p);
	store_close(s);
	/* Make it a schema-4 file: no build id tables; a writer migrates it. */
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
	        sqlite3_exec(
	                db,
	                "DROP TABLE build_ids; DROP TABLE run_build_ids; PRAGMA user_version = 4",
	                NULL, NULL, NULL),
	        SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(store_open(&s, path, 0), 0);
	int64_t id2 = store_one(s, p);
	struct profile *q;
	assert_int_equal(store_load_profile(s, id, NULL, &q), 0);
	assert_null(profile_build_id(q, profile_intern(q, "suite"))); /* stored before step 5 */
	profile_free(q);
	assert_int_equal(store_load_profile(s, id2, NULL, &q), 0);
	assert_string_equal(profile_build_id(q, profile_intern(q, "suite")),
	                    "0123456789abcdef0123456789abcdef01234567");
	assert_null(profile_build_id(q, profile_intern(q, "libx.so")));
	profile_free(q);
	/* Another run of the same binaries (and one more object) adds one pair, not two. */
	profile_set_build_id(p, profile_intern(p, "liby.so"), "cc");
	int64_t id3 = store_one(s, p);
	assert_int_equal(store_load_profile(s, id3, NULL, &q), 0);
	assert_string_equal(profile_build_id(q, profile_intern(q, "liby.so")), "cc");
	assert_string_equal(profile_build_id(q, profile_intern(q, "suite")),
	                    "0123456789abcdef0123456789abcdef01234567");
	profile_free(q);
	store_close(s);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM build_ids", -1, &st, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 2);
	sqlite3_finalize(st);
	sqlite3_close(db);
	profile_free(p);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_round_trip_and_gc),
	        cmocka_unit_test(test_step_2_to_3),
	        cmocka_unit_test(test_build_ids),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
