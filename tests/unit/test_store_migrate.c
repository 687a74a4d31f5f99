/* Unit test of the schema 1 -> 2 migration: a database written the way ciprof's first store
 * wrote it (its DDL and a writer of its row and blob layout are kept here) is opened by the
 * current store, which must convert it in place - same runs, metadata, tags, profiles and
 * range queries - and refuse to when it may not write. */
#include "store/blob.h"
#include "store/store.h"
#include "common/error.h"
#include "test_store_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <sys/stat.h>

/* Schema 1, as ciprof's first store created it (store.c migrations[0] up to schema 2). */
static const char v1_ddl[] =
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
        "INSERT INTO meta(key, value) VALUES ('generation', 0);"
        "CREATE TABLE strings(id INTEGER PRIMARY KEY, s TEXT NOT NULL UNIQUE);"
        "CREATE TABLE frames(id INTEGER PRIMARY KEY, function INTEGER NOT NULL,"
        " module INTEGER NOT NULL, file INTEGER NOT NULL, line INTEGER NOT NULL,"
        " kind INTEGER NOT NULL, UNIQUE(function, module, file, line, kind));"
        "CREATE TABLE nodes(id INTEGER PRIMARY KEY, parent INTEGER NOT NULL,"
        " frame INTEGER NOT NULL, UNIQUE(parent, frame));"
        "CREATE TABLE branches(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
        " nruns INTEGER NOT NULL);"
        "CREATE TABLE runs(id INTEGER PRIMARY KEY, branch_id INTEGER NOT NULL,"
        " seq INTEGER NOT NULL, created_at INTEGER NOT NULL, commit_id TEXT NOT NULL,"
        " branch TEXT NOT NULL, base_branch TEXT NOT NULL, merge_base TEXT NOT NULL,"
        " dirty INTEGER NOT NULL, commit_time INTEGER NOT NULL, subject TEXT NOT NULL,"
        " ci_provider TEXT NOT NULL, pr_number INTEGER NOT NULL, job_url TEXT NOT NULL,"
        " cpu_model TEXT NOT NULL, cpu_count INTEGER NOT NULL, command TEXT NOT NULL,"
        " exit_code INTEGER NOT NULL, wall_seconds REAL NOT NULL, cpu_seconds REAL NOT NULL,"
        " hz INTEGER NOT NULL, samples INTEGER NOT NULL, lost INTEGER NOT NULL,"
        " processes INTEGER NOT NULL, threads INTEGER NOT NULL, period_ns INTEGER NOT NULL);"
        "CREATE INDEX runs_branch_seq ON runs(branch_id, seq);"
        "CREATE INDEX runs_branch_name ON runs(branch, id);"
        "CREATE TABLE run_tags(run INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
        " PRIMARY KEY(run, key)) WITHOUT ROWID;"
        "CREATE TABLE profiles(run INTEGER NOT NULL, test INTEGER NOT NULL,"
        " samples INTEGER NOT NULL, blob BLOB NOT NULL, UNIQUE(run, test));"
        "CREATE TABLE segtree(branch_id INTEGER NOT NULL, level INTEGER NOT NULL,"
        " idx INTEGER NOT NULL, blob BLOB NOT NULL, UNIQUE(branch_id, level, idx));"
        "PRAGMA user_version = 1;";

static char *tmp;

static int setup(void **state)
{
	tmp = tu_tmpdir();
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

/* ---- a schema 1 writer ------------------------------------------------------------------ */

static void exec_ok(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		fail_msg("%s: %s", sql, err);
}

/* INSERT OR IGNORE, then the row's id: how schema 1 interned strings, frames and nodes. */
static int64_t intern(sqlite3 *db, const char *insert, const char *select, int n,
                      const int64_t *vals, const char *text)
{
	const char *sqls[2] = {insert, select};
	int64_t id = 0;
	for (int k = 0; k < 2; k++) {
		sqlite3_stmt *st;
		assert_int_equal(sqlite3_prepare_v2(db, sqls[k], -1, &st, NULL), SQLITE_OK);
		if (text)
			sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
		for (int i = 0; i < n; i++)
			sqlite3_bind_int64(st, i + 1, vals[i]);
		int rc = sqlite3_step(st);
		if (k)
			id = sqlite3_column_int64(st, 0);
		assert_true(rc == SQLITE_ROW || rc == SQLITE_DONE);
		sqlite3_finalize(st);
	}
	return id;
}

static int64_t v1_string(sqlite3 *db, const char *s)
{
	return intern(db, "INSERT OR IGNORE INTO strings(s) VALUES (?1)",
	              "SELECT id FROM strings WHERE s = ?1", 0, NULL, s);
}

/* Stores p as run of branch the way schema 1 did; returns the run id. */
static int64_t v1_add_run(sqlite3 *db, const char *branch, const char *commit, int64_t created,
                          const struct profile *p, const char *tag)
{
	int64_t *frame = xcalloc(p->nframes + 1, sizeof(*frame));
	int64_t *node = xcalloc(p->nnodes, sizeof(*node));
	for (size_t i = 0; i < p->nframes; i++) {
		const struct profile_frame *f = &p->frames[i];
		int64_t v[5] = {v1_string(db, profile_str(p, f->function)),
		                v1_string(db, profile_str(p, f->module)),
		                v1_string(db, profile_str(p, f->file)), f->line, f->kind};
		frame[i] =
		        intern(db,
		               "INSERT OR IGNORE INTO frames(function, module, file, line, kind) "
		               "VALUES (?1, ?2, ?3, ?4, ?5)",
		               "SELECT id FROM frames WHERE function = ?1 AND module = ?2 AND "
		               "file = ?3 AND line = ?4 AND kind = ?5",
		               5, v, NULL);
	}
	for (size_t i = 1; i < p->nnodes; i++) {
		int64_t v[2] = {node[p->nodes[i].parent], frame[p->nodes[i].frame]};
		node[i] =
		        intern(db, "INSERT OR IGNORE INTO nodes(parent, frame) VALUES (?1, ?2)",
		               "SELECT id FROM nodes WHERE parent = ?1 AND frame = ?2", 2, v, NULL);
	}
	int64_t branch_id = intern(db, "INSERT OR IGNORE INTO branches(name, nruns) VALUES (?1, 0)",
	                           "SELECT id FROM branches WHERE name = ?1", 0, NULL, branch);
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "INSERT INTO runs(branch_id, seq, created_at, "
	                                    "commit_id, branch, base_branch, merge_base, dirty, "
	                                    "commit_time, subject, ci_provider, pr_number, "
	                                    "job_url, cpu_model, cpu_count, command, exit_code, "
	                                    "wall_seconds, cpu_seconds, hz, samples, lost, "
	                                    "processes, threads, period_ns) SELECT ?1, nruns, ?2, "
	                                    "?3, ?4, 'main', 'abc', 1, 1700000000, 'subject', "
	                                    "'github', 7, 'https://ci/job', 'cpu', 4, 'make test', "
	                                    "0, 2.5, ?5, 99, ?6, 0, 3, 4, 10101010 FROM branches "
	                                    "WHERE id = ?1",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	uint64_t total = profile_total(p, NULL);
	sqlite3_bind_int64(st, 1, branch_id);
	sqlite3_bind_int64(st, 2, created);
	sqlite3_bind_text(st, 3, commit, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, branch, -1, SQLITE_TRANSIENT);
	sqlite3_bind_double(st, 5, (double)total / 99.0);
	sqlite3_bind_int64(st, 6, (int64_t)total);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	int64_t run = sqlite3_last_insert_rowid(db);
	exec_ok(db, "UPDATE branches SET nruns = nruns + 1 WHERE id = "
	            "(SELECT branch_id FROM runs ORDER BY id DESC LIMIT 1)");
	if (tag) {
		char *sql = xasprintf("INSERT INTO run_tags VALUES (%lld, 'os', '%s')",
		                      (long long)run, tag);
		exec_ok(db, sql);
		free(sql);
	}
	/* One pairs blob per test with samples. */
	for (size_t t = 0; t < p->nstr; t++) {
		struct blob_entries e;
		blob_entries_init(&e);
		for (size_t i = 0; i < p->nsamples; i++)
			if (p->samples[i].test == t && p->samples[i].count)
				blob_entries_push(&e, 0, (uint64_t)node[p->samples[i].node],
				                  p->samples[i].count);
		blob_entries_normalize(&e);
		if (e.n) {
			struct strbuf sb = STRBUF_INIT;
			blob_encode_pairs(&sb, e.e, e.n);
			assert_int_equal(
			        sqlite3_prepare_v2(db,
			                           "INSERT INTO profiles(run, test, samples, "
			                           "blob) VALUES (?1, ?2, ?3, ?4)",
			                           -1, &st, NULL),
			        SQLITE_OK);
			uint64_t sum = 0;
			for (size_t i = 0; i < e.n; i++)
				sum += e.e[i].count;
			sqlite3_bind_int64(st, 1, run);
			sqlite3_bind_int64(st, 2, v1_string(db, profile_str(p, (uint32_t)t)));
			sqlite3_bind_int64(st, 3, (int64_t)sum);
			sqlite3_bind_blob(st, 4, sb.buf, (int)sb.len, SQLITE_TRANSIENT);
			assert_int_equal(sqlite3_step(st), SQLITE_DONE);
			sqlite3_finalize(st);
			strbuf_release(&sb);
		}
		blob_entries_release(&e);
	}
	free(frame);
	free(node);
	return run;
}

/* Schema 1's segment tree: levels >= 1 as multi blobs, read back from its profile rows. */
static void v1_segtree(sqlite3 *db)
{
	sqlite3_stmt *b, *st;
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, nruns FROM branches", -1, &b, NULL),
	                 SQLITE_OK);
	while (sqlite3_step(b) == SQLITE_ROW) {
		int64_t branch = sqlite3_column_int64(b, 0), n = sqlite3_column_int64(b, 1);
		for (int l = 1; (n >> l) > 0; l++) {
			for (int64_t i = 0; i < (n >> l); i++) {
				struct blob_entries e;
				blob_entries_init(&e);
				assert_int_equal(
				        sqlite3_prepare_v2(db,
				                           "SELECT p.test, p.blob FROM runs r "
				                           "JOIN profiles p ON p.run = r.id "
				                           "WHERE r.branch_id = ?1 AND r.seq >= "
				                           "?2 AND r.seq < ?3",
				                           -1, &st, NULL),
				        SQLITE_OK);
				sqlite3_bind_int64(st, 1, branch);
				sqlite3_bind_int64(st, 2, i << l);
				sqlite3_bind_int64(st, 3, (i + 1) << l);
				while (sqlite3_step(st) == SQLITE_ROW)
					assert_int_equal(
					        blob_decode_pairs(
					                sqlite3_column_blob(st, 1),
					                (size_t)sqlite3_column_bytes(st, 1),
					                (uint64_t)sqlite3_column_int64(st, 0), &e),
					        0);
				sqlite3_finalize(st);
				blob_entries_normalize(&e);
				struct strbuf sb = STRBUF_INIT;
				blob_encode_multi(&sb, &e);
				assert_int_equal(
				        sqlite3_prepare_v2(db,
				                           "INSERT INTO segtree VALUES (?1, ?2, "
				                           "?3, ?4)",
				                           -1, &st, NULL),
				        SQLITE_OK);
				sqlite3_bind_int64(st, 1, branch);
				sqlite3_bind_int(st, 2, l);
				sqlite3_bind_int64(st, 3, i);
				sqlite3_bind_blob(st, 4, sb.buf, (int)sb.len, SQLITE_TRANSIENT);
				assert_int_equal(sqlite3_step(st), SQLITE_DONE);
				sqlite3_finalize(st);
				strbuf_release(&sb);
				blob_entries_release(&e);
			}
		}
	}
	sqlite3_finalize(b);
}

/* ---- the history ------------------------------------------------------------------------ */

#define NRUNS 45
static const char *const branch_of[] = {"main", "feature/x"};

struct hist {
	int64_t id[NRUNS];
	int branch[NRUNS];
	uint64_t seed[NRUNS];
};

static struct profile *hist_profile(const struct hist *h, int i)
{
	if (h->seed[i] % 11 == 0)
		return profile_new(); /* a run too short to be sampled */
	return tu_random_profile(h->seed[i], 1 + (int)(h->seed[i] % 4), 20 + (int)(h->seed[i] % 60),
	                         30, 8);
}

static char *make_v1(struct hist *h)
{
	char *path = xasprintf("%s/v1-%d.db", tmp, (int)getpid());
	unlink(path);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	exec_ok(db, "PRAGMA journal_mode = WAL");
	exec_ok(db, v1_ddl);
	exec_ok(db, "BEGIN");
	uint64_t rng = 4242;
	for (int i = 0; i < NRUNS; i++) {
		h->branch[i] = tu_rand(&rng) % 3 == 0;
		h->seed[i] = tu_rand(&rng);
		struct profile *p = hist_profile(h, i);
		char commit[41];
		snprintf(commit, sizeof(commit), "%040x", i + 1);
		h->id[i] = v1_add_run(db, branch_of[h->branch[i]], commit, 1700000000 + i * 60, p,
		                      i % 5 ? NULL : "linux");
		profile_free(p);
	}
	v1_segtree(db);
	exec_ok(db, "COMMIT");
	sqlite3_close(db);
	return path;
}

static void compare(const struct profile *want, const struct profile *got)
{
	char *a = tu_folded(want, NULL), *b = tu_folded(got, NULL);
	assert_string_equal(a, b);
	free(a);
	free(b);
	for (size_t t = 0; t < want->nstr; t++) {
		const char *name = profile_str(want, (uint32_t)t);
		assert_int_equal(profile_total(want, name), profile_total(got, name));
	}
}

static void check_history(struct store *s, const struct hist *h)
{
	assert_int_equal(store_check(s), 0);
	struct store_counts c;
	assert_int_equal(store_counts(s, &c), 0);
	assert_int_equal(c.runs, NRUNS);
	assert_int_equal(c.branches, 2);
	assert_int_equal(c.profiles, NRUNS);
	for (int i = 0; i < NRUNS; i++) {
		struct run_meta m;
		run_meta_init(&m);
		assert_int_equal(store_get_run(s, h->id[i], &m), 0);
		char commit[41];
		snprintf(commit, sizeof(commit), "%040x", i + 1);
		assert_string_equal(m.commit, commit);
		assert_string_equal(m.branch, branch_of[h->branch[i]]);
		assert_string_equal(m.subject, "subject");
		assert_int_equal(m.created_at, 1700000000 + i * 60);
		assert_int_equal(m.pr_number, 7);
		assert_int_equal(m.ntags, i % 5 ? 0 : 1);
		run_meta_release(&m);
		struct profile *want = hist_profile(h, i), *got;
		assert_int_equal(store_load_profile(s, h->id[i], NULL, &got), 0);
		compare(want, got);
		assert_int_equal(got->stats.samples, profile_total(want, NULL));
		assert_int_equal(got->stats.period_ns, 10101010);
		profile_free(got);
		profile_free(want);
	}
	/* Range queries against brute-force merges of the same runs. */
	uint64_t rng = 77;
	for (int k = 0; k < 40; k++) {
		int b = (int)(tu_rand(&rng) % 2), idx[NRUNS], n = 0;
		for (int i = 0; i < NRUNS; i++)
			if (h->branch[i] == b)
				idx[n++] = i;
		int lo = (int)(tu_rand(&rng) % (uint64_t)n);
		int hi = lo + 1 + (int)(tu_rand(&rng) % (uint64_t)(n - lo));
		if (k == 0) {
			lo = 0;
			hi = n;
		}
		struct store_query q = {.branch = branch_of[b],
		                        .from_run = h->id[idx[lo]],
		                        .to_run = h->id[idx[hi - 1]]};
		struct profile *want = profile_new(), *got;
		for (int i = lo; i < hi; i++) {
			struct profile *p = hist_profile(h, idx[i]);
			profile_merge(want, p);
			profile_free(p);
		}
		size_t nr;
		assert_int_equal(store_merge_runs(s, &q, &got, &nr, NULL), 0);
		assert_int_equal(nr, (size_t)(hi - lo));
		compare(want, got);
		profile_free(want);
		profile_free(got);
	}
}

static void test_migrate_v1(void **state)
{
	struct hist h;
	char *path = make_v1(&h);
	struct store *s;
	if (store_open(&s, path, 0) < 0)
		fail_msg("store_open: %s", cp_last_error());
	store_close(s);
	/* The file is at the current schema now, and its schema 1 tables are gone. */
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "SELECT (SELECT user_version FROM pragma_user_version),"
	                                    " (SELECT count(*) FROM sqlite_schema WHERE name IN "
	                                    "('strings', 'frames', 'nodes', 'v1_profiles', "
	                                    "'v1_segtree'))",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), STORE_SCHEMA_VERSION);
	assert_int_equal(sqlite3_column_int(st, 1), 0);
	sqlite3_finalize(st);
	sqlite3_close(db);

	assert_int_equal(store_open(&s, path, STORE_READONLY), 0);
	check_history(s, &h);
	store_close(s);

	/* It takes new runs, and gc still keeps the trees exact. */
	assert_int_equal(store_open(&s, path, 0), 0);
	struct profile *p = tu_random_profile(999, 3, 50, 30, 8);
	struct run_meta m;
	tu_meta(&m, "main", "ffff");
	assert_int_equal(store_add_run(s, &m, p), 0);
	struct store_gc_opts o = {.keep_runs = 20};
	struct store_gc_result r;
	assert_int_equal(store_gc(s, &o, &r), 0);
	assert_int_equal(r.runs_deleted, NRUNS + 1 - 20);
	assert_int_equal(store_check(s), 0);
	struct profile *got;
	assert_int_equal(store_load_profile(s, m.id, NULL, &got), 0);
	compare(p, got);
	profile_free(got);
	profile_free(p);
	run_meta_release(&m);
	store_close(s);
	free(path);
}

static void test_migrate_refused_readonly(void **state)
{
	struct hist h;
	char *path = make_v1(&h);
	size_t len1, len2;
	char *before = tu_read(path, &len1);
	struct store *s;
	assert_int_equal(store_open(&s, path, STORE_READONLY), -1);
	char want[64];
	snprintf(want, sizeof(want), "needs an upgrade to %d", STORE_SCHEMA_VERSION);
	assert_non_null(strstr(cp_last_error(), want));
	assert_non_null(strstr(cp_last_error(), path));
	char *after = tu_read(path, &len2);
	assert_int_equal(len1, len2);
	assert_memory_equal(before, after, len1);
	free(before);
	free(after);
	free(path);
}

/* A migration that fails halfway (here: a damaged schema 1 blob) leaves schema 1 as it was. */
static void test_migrate_failure_rolls_back(void **state)
{
	struct hist h;
	char *path = make_v1(&h);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	exec_ok(db, "UPDATE profiles SET blob = x'01ff' WHERE rowid = (SELECT max(rowid) FROM "
	            "profiles)");
	sqlite3_close(db);
	struct store *s;
	assert_int_equal(store_open(&s, path, 0), -1);
	assert_non_null(strstr(cp_last_error(), "corrupt"));
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "SELECT (SELECT user_version FROM pragma_user_version),"
	                                    " (SELECT count(*) FROM profiles), (SELECT count(*) "
	                                    "FROM sqlite_schema WHERE name = 'dict')",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 1);
	assert_true(sqlite3_column_int(st, 1) > NRUNS / 2);
	assert_int_equal(sqlite3_column_int(st, 2), 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_migrate_v1),
	        cmocka_unit_test(test_migrate_refused_readonly),
	        cmocka_unit_test(test_migrate_failure_rolls_back),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
