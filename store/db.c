/* store/db.c: the database plumbing - opening (checks, pragmas, WAL, the schema and its
 * migrations), the prepared statements, errors that name the file, transactions under one
 * lock-wait budget (CIPROF_DB_TIMEOUT_MS), the in-memory caches' reset, checkpoints. */
#include "store/db.h"
#include "common/error.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "store/migrate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
/* Fresh files: small pages (most tables of a history hold a few rows, and each table costs at
 * least a page), and incremental vacuum so that gc can give freed pages back. */
#define NEW_PAGE_SIZE 512

static const char *const stmt_sql[Q_NSTMTS] = {
        [Q_DICT_SINCE] = "SELECT id - (?1 << 40), n, blob FROM dict WHERE id >= (?1 << 40) + ?2 "
                         "AND id < (?1 + 1) << 40 ORDER BY id",
        [Q_DICT_AT] = "SELECT id - (?1 << 40), n, blob FROM dict WHERE id >= ?1 << 40 AND "
                      "id <= (?1 << 40) + ?2 ORDER BY id DESC LIMIT 1",
        [Q_DICT_PUT] = "INSERT INTO dict(id, n, blob) VALUES ((?1 << 40) + ?2, ?3, ?4)",
        [Q_BRANCH_FIND] = "SELECT id, nruns FROM branches WHERE name = ?1",
        [Q_BRANCH_INSERT] = "INSERT INTO branches(name, nruns) VALUES (?1, 0)",
        [Q_BRANCH_BUMP] = "UPDATE branches SET nruns = nruns + 1 WHERE id = ?1",
        [Q_RUN_INSERT] = "INSERT INTO runs(branch_id, seq, created_at, commit_id, branch, "
                         "base_branch, merge_base, dirty, commit_time, subject, ci_provider, "
                         "pr_number, job_url, cpu_model, cpu_count, command, exit_code, "
                         "wall_seconds, cpu_seconds, hz, samples, lost, processes, threads, "
                         "period_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                         "?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)",
        [Q_RUN_POS] = "SELECT id FROM runs WHERE branch_id = ?1 AND seq = ?2",
        [Q_TAG_INSERT] = "INSERT OR REPLACE INTO run_tags(run, key, value) VALUES (?1, ?2, ?3)",
        [Q_TAGS_GET] = "SELECT key, value FROM run_tags WHERE run = ?1 ORDER BY key",
        [Q_PROFILE_PUT] = "INSERT OR REPLACE INTO profiles(run, blob) VALUES (?1, ?2)",
        [Q_PROFILES_OF_SEQS] = "SELECT r.seq, p.blob FROM runs r JOIN profiles p ON p.run = r.id "
                               "WHERE r.branch_id = ?1 AND r.seq >= ?2 AND r.seq <= ?3 "
                               "ORDER BY r.seq",
        [Q_SEG_GET] = "SELECT blob FROM segtree WHERE id = ?1",
        [Q_SEG_PUT] = "INSERT OR REPLACE INTO segtree(id, blob) VALUES (?1, ?2)",
        [Q_GENERATION] = "SELECT value FROM meta WHERE key = 'generation'",
};

/* Whether path's folder (or its medium) is read-only for this process. */
static int read_only_place(const char *path)
{
	char *dir = xdirname(path);
	int ro = access(dir, W_OK) < 0 && (errno == EACCES || errno == EROFS || errno == EPERM);
	free(dir);
	return ro;
}

int store_sqlerr(struct store *s, const char *what)
{
	int code = sqlite3_extended_errcode(s->db);
	const char *msg = sqlite3_errmsg(s->db);
	switch (code & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return cp_error("database %s is locked by another process (%s); retry when it "
		                "finishes, or raise CIPROF_DB_TIMEOUT_MS (milliseconds to wait)",
		                s->path, what);
	case SQLITE_NOTADB:
		return cp_error("%s is not a ciprof database (%s: %s); move it away and ciprof "
		                "starts a new one, or pass another --db",
		                s->path, what, msg);
	case SQLITE_CORRUPT:
		return cp_error(
		        "database %s is corrupt (%s: %s); restore it from a backup, or move "
		        "it away and ciprof starts a new history",
		        s->path, what, msg);
	case SQLITE_FULL:
		return cp_error("database %s: disk full (%s); free some space or run 'ciprof gc'",
		                s->path, what);
	case SQLITE_IOERR:
		/* A full disk often shows as an I/O error: SQLite could not grow a file. */
		return cp_error("database %s: %s (%s); the disk may be full (check 'df %s') or "
		                "failing",
		                s->path, msg, what, s->path);
	case SQLITE_READONLY:
		return cp_error("database %s is read-only (%s): %s; pass a writable --db", s->path,
		                what,
		                read_only_place(s->path)
		                        ? "its folder is on a read-only mount or not writable"
		                        : "check the file's permissions");
	case SQLITE_CANTOPEN:
		if (read_only_place(s->path))
			return cp_error(
			        "cannot open database %s (%s: %s): its folder is read-only "
			        "(a read-only mount, or no write permission); pass a writable "
			        "--db",
			        s->path, what, msg);
		return cp_error("cannot open database %s (%s: %s); check the path and permissions",
		                s->path, what, msg);
	default:
		return cp_error("database %s: %s: %s", s->path, what, msg);
	}
}

int store_exec(struct store *s, const char *sql)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return store_sqlerr(s, "query failed");
	return 0;
}

sqlite3_stmt *store_stmt(struct store *s, enum store_stmt_id id)
{
	sqlite3_stmt *st = s->stmt[id];
	if (!st) {
		if (sqlite3_prepare_v3(s->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &st,
		                       NULL) != SQLITE_OK) {
			store_sqlerr(s, "preparing a query");
			return NULL;
		}
		s->stmt[id] = st;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return st;
}

/* The clock and the sleep of the busy handler (tests replace them). */
int64_t (*store_test_clock_ms)(void);
void (*store_test_sleep_ms)(int64_t ms);

static int64_t now_ms(void)
{
	if (store_test_clock_ms)
		return store_test_clock_ms();
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
	if (store_test_sleep_ms) {
		store_test_sleep_ms(ms);
		return;
	}
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Starts one budget of s->timeout_ms for a whole operation (all its attempts). */
static void budget_start(struct store *s)
{
	s->deadline_ms = now_ms() + s->timeout_ms;
	s->budget_active = 1;
}

static void budget_end(struct store *s)
{
	s->budget_active = 0;
}

/* SQLite's busy handler: waits in growing steps until the budget's deadline. A statement
 * outside an operation's budget gets a budget of its own when it starts waiting. */
static int busy_handler(void *arg, int count)
{
	static const int64_t steps[] = {1, 2, 5, 10, 15, 20, 25, 25, 25, 50};
	struct store *s = arg;
	int64_t now = now_ms();
	if (count == 0 && !s->budget_active)
		s->deadline_ms = now + s->timeout_ms;
	if (now >= s->deadline_ms)
		return 0;
	int64_t step = steps[count < 10 ? count : 9];
	sleep_ms(step < s->deadline_ms - now ? step : s->deadline_ms - now);
	return 1;
}

/* Runs sql, retrying while the database is busy, within one budget: SQLite returns BUSY
 * without calling the busy handler in some cases (a deadlock-avoiding upgrade, changing the
 * journal mode). 0 or -1 (what names the step in the message). */
static int exec_retrying(struct store *s, const char *sql, const char *what)
{
	budget_start(s);
	int ret = 0;
	for (;;) {
		int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			break;
		int64_t left = s->deadline_ms - now_ms();
		if ((rc & 0xff) != SQLITE_BUSY || left <= 0) {
			ret = store_sqlerr(s, what);
			break;
		}
		sleep_ms(left < 50 ? left : 50);
	}
	budget_end(s);
	return ret;
}

int store_begin(struct store *s)
{
	return exec_retrying(s, "BEGIN IMMEDIATE", "starting a write transaction");
}

int store_commit(struct store *s)
{
	if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		store_sqlerr(s, "committing");
		store_rollback(s);
		return -1;
	}
	return 0;
}

void store_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	store_cache_reset(s);
}

int store_corrupt(struct store *s, const char *what)
{
	char *msg = xstrdup(cp_last_error());
	cp_error("database %s is corrupt: %s: %s; restore a backup, or delete the damaged runs "
	         "with 'ciprof gc'",
	         s->path, what, msg);
	free(msg);
	return -1;
}

int store_step_done(struct store *s, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return store_sqlerr(s, what);
	return 0;
}

int store_begin_read(struct store *s)
{
	if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return store_sqlerr(s, "starting a read transaction");
	return 0;
}

void store_end_read(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
}

void store_cache_reset(struct store *s)
{
	profile_free(s->dict);
	s->dict = NULL;
	trie_release(&s->trie);
	s->dict_gen = -1;
	blob_entries_release(&s->tail.run);
	blob_entries_release(&s->tail.block_sum);
	s->tail.gen = -1;
	s->tail.branch_id = s->tail.seq = s->tail.run_id = -1;
}

const char *store_col_text(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	return t ? t : "";
}

int store_generation(struct store *s, int64_t *out)
{
	sqlite3_stmt *st = store_stmt(s, Q_GENERATION);
	if (!st)
		return -1;
	int rc = sqlite3_step(st);
	*out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store_sqlerr(s, "reading the database generation");
	return 0;
}

/* mkdir -p of path's folder; writes .ciprof/.gitignore when it creates a ".ciprof" folder. */
static int make_parent_dirs(const char *path)
{
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	int ret = 0;
	if (!slash || slash == dir)
		goto out;
	*slash = '\0';
	for (char *p = dir + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(dir, 0777) == 0) {
			const char *base = strrchr(dir, '/');
			base = base ? base + 1 : dir;
			if (!strcmp(base, ".ciprof")) {
				char *gi = xasprintf("%s/.gitignore", dir);
				FILE *f = fopen(gi, "w");
				if (!f || fputs("*\n", f) < 0 || fclose(f) != 0) {
					ret = cp_error_errno("cannot write %s", gi);
					free(gi);
					goto out;
				}
				free(gi);
			}
		} else if (errno != EEXIST) {
			ret = cp_error_errno("cannot create folder %s for the database", dir);
			goto out;
		}
		*p = c;
		if (!c)
			break;
	}
out:
	free(dir);
	return ret;
}

static int busy_timeout_ms(void)
{
	const char *e = getenv("CIPROF_DB_TIMEOUT_MS");
	if (e && *e) {
		char *end;
		long v = strtol(e, &end, 10);
		if (!*end && v >= 0 && v <= 3600000)
			return (int)v;
	}
	return 10000;
}

int store_prepare(struct store *s, const char *sql, sqlite3_stmt **st, const char *what)
{
	return sqlite3_prepare_v2(s->db, sql, -1, st, NULL) == SQLITE_OK ? 0
	                                                                 : store_sqlerr(s, what);
}

int store_query_int(struct store *s, const char *sql, int64_t *out, const char *what)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, what);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	else if (rc == SQLITE_DONE)
		*out = 0;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store_sqlerr(s, what);
	return 0;
}

static int set_wal(struct store *s)
{
	return exec_retrying(s, "PRAGMA journal_mode = WAL", "switching to WAL mode");
}

/* Creates the schema in a fresh file, or upgrades an older one, in one transaction. Every
 * released schema version has its step here; a fresh file gets the newest schema directly. */
static int migrate(struct store *s)
{
	int64_t v, ntables;
	if (store_begin(s) < 0)
		return -1;
	/* Another process may have migrated while we waited for the lock. */
	if (store_query_int(s, "PRAGMA user_version", &v, "reading the schema version") < 0 ||
	    store_query_int(s, "SELECT count(*) FROM sqlite_schema", &ntables,
	                    "reading the schema") < 0)
		goto fail;
	if (v == 0 && ntables > 0) {
		cp_error(
		        "%s is an SQLite database but not a ciprof one (no ciprof schema version); "
		        "pass another --db",
		        s->path);
		goto fail;
	}
	/* Each step takes version v to v + 1; a fresh file starts from schema 2. */
	if (v == 0 && store_exec(s, store_schema_v2) < 0)
		goto fail;
	if (v == 1 && store_migrate_1_to_2(s) < 0)
		goto fail;
	if (v <= 2 && store_exec(s, store_step_2_to_3) < 0)
		goto fail;
	/* 3 -> 4: strings chunks after the first may be deflated against it (format 0x24); older
	 * chunks stay as they are, so the step converts nothing - the version only keeps an
	 * older ciprof from taking the new chunks for damage. */
	if (v <= 4 && store_exec(s, store_step_4_to_5) < 0)
		goto fail;
	char sql[64];
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", STORE_SCHEMA_VERSION);
	if (store_exec(s, sql) < 0 || store_commit(s) < 0)
		goto fail;
	return 0;
fail:
	store_rollback(s);
	return -1;
}

/* Opens s->path with SQLite flags oflags; immutable: as a URI with immutable=1 (the path
 * percent-encoded). 0 or -1. */
static int open_db(struct store *s, int oflags, int immutable)
{
	struct strbuf uri = STRBUF_INIT;
	const char *name = s->path;
	if (immutable) {
		strbuf_addstr(&uri, "file:");
		for (const unsigned char *p = (const unsigned char *)s->path; *p; p++) {
			if (*p <= ' ' || *p >= 0x7f || strchr("%?#&=", *p))
				strbuf_addf(&uri, "%%%02X", *p);
			else
				strbuf_addch(&uri, (char)*p);
		}
		strbuf_addstr(&uri, "?immutable=1");
		name = uri.buf;
	}
	int ret = 0;
	if (sqlite3_open_v2(name, &s->db, oflags, NULL) != SQLITE_OK) {
		if (!s->db)
			ret = cp_error("cannot open database %s: out of memory", s->path);
		else
			ret = store_sqlerr(s, "opening");
	} else {
		sqlite3_extended_result_codes(s->db, 1);
		sqlite3_busy_handler(s->db, busy_handler, s);
		s->immutable = immutable;
	}
	strbuf_release(&uri);
	return ret;
}

/* *out = schema version << 32 | number of schema objects, in one statement, so one snapshot:
 * another process may be creating the schema. */
static int read_version(struct store *s, int64_t *out)
{
	return store_query_int(s,
	                       "SELECT (SELECT user_version FROM pragma_user_version) * "
	                       "4294967296 + (SELECT count(*) FROM sqlite_schema)",
	                       out, "reading the schema version");
}

/* A writer first checks the file (PRAGMA quick_check: page structure, not contents), so a
 * run is never added to a database that is already corrupt. 0 or -1. */
static int quick_check(struct store *s)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, "PRAGMA quick_check(1)", -1, &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "checking the file");
	int rc = sqlite3_step(st);
	int ret = 0;
	if (rc != SQLITE_ROW) {
		ret = store_sqlerr(s, "checking the file");
	} else {
		const char *r = (const char *)sqlite3_column_text(st, 0);
		if (!r || strcmp(r, "ok"))
			ret = cp_error(
			        "database %s is corrupt (%s); nothing was written to it: "
			        "restore it from a backup, or move it away and ciprof starts "
			        "a new history",
			        s->path, r ? r : "quick_check failed");
	}
	sqlite3_finalize(st);
	return ret;
}

int store_open(struct store **out, const char *path, int flags)
{
	*out = NULL;
	struct stat st;
	int readonly = !!(flags & STORE_READONLY);
	if (stat(path, &st) < 0) {
		if (errno != ENOENT)
			return cp_error_errno("cannot access database %s", path);
		if (!(flags & STORE_CREATE) || readonly)
			return cp_error(
			        "no database at %s; record a run first with 'ciprof run -- CMD' "
			        "or point --db (or CIPROF_DB) at an existing one",
			        path);
		if (make_parent_dirs(path) < 0)
			return -1;
	} else if (S_ISDIR(st.st_mode)) {
		return cp_error("database path %s is a folder; pass a file with --db", path);
	}

	struct store *s = xcalloc(1, sizeof(*s));
	s->path = xstrdup(path);
	s->readonly = readonly;
	s->timeout_ms = busy_timeout_ms();
	store_cache_reset(s);
	int oflags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
	if ((flags & STORE_CREATE) && !readonly)
		oflags |= SQLITE_OPEN_CREATE;
	if (open_db(s, oflags, 0) < 0)
		goto fail;

	/* Look before touching anything: a foreign, corrupt or newer file is left as it is. */
	int64_t version, ntables;
	if (read_version(s, &version) < 0) {
		/* A read-only folder or medium: a WAL database's shared-memory file cannot be
		 * made there, and nobody can be writing it, so read it as immutable. */
		if (!readonly || !read_only_place(path))
			goto fail;
		sqlite3_close(s->db);
		s->db = NULL;
		if (open_db(s, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, 1) < 0 ||
		    read_version(s, &version) < 0)
			goto fail;
	}
	ntables = version & 0xffffffff;
	version >>= 32;
	if (version > STORE_SCHEMA_VERSION) {
		cp_error("database %s has schema version %lld, newer than this ciprof understands "
		         "(%d); upgrade ciprof, or pass another --db",
		         path, (long long)version, STORE_SCHEMA_VERSION);
		goto fail;
	}
	if (version == 0 && ntables > 0) {
		cp_error(
		        "%s is an SQLite database but not a ciprof one (no ciprof schema version); "
		        "pass another --db",
		        path);
		goto fail;
	}
	if (version == 0 && !(flags & STORE_CREATE)) {
		cp_error("database %s is empty; record a run first with 'ciprof run -- CMD'", path);
		goto fail;
	}
	if (version < STORE_SCHEMA_VERSION && readonly) {
		cp_error("database %s has schema version %lld and needs an upgrade to %d, which a "
		         "read-only open cannot do; run a writing command (ciprof run, ciprof gc)",
		         path, (long long)version, STORE_SCHEMA_VERSION);
		goto fail;
	}
	if (!readonly && version > 0 && quick_check(s) < 0)
		goto fail;
	if (!readonly) {
		/* Both only take effect on a file without pages yet, so every process creating
		 * the same file at once says the same. */
		if (version == 0) {
			char sql[96];
			snprintf(sql, sizeof(sql),
			         "PRAGMA page_size = %d; PRAGMA auto_vacuum = INCREMENTAL",
			         NEW_PAGE_SIZE);
			if (store_exec(s, sql) < 0)
				goto fail;
		}
		if (set_wal(s) < 0 || store_exec(s, "PRAGMA synchronous = NORMAL") < 0)
			goto fail;
		if (version < STORE_SCHEMA_VERSION && migrate(s) < 0)
			goto fail;
	}
	*out = s;
	return 0;
fail:
	store_close(s);
	return -1;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	for (int i = 0; i < Q_NSTMTS; i++)
		sqlite3_finalize(s->stmt[i]);
	sqlite3_close(s->db);
	store_cache_reset(s);
	free(s->path);
	free(s);
}

const char *store_path(const struct store *s)
{
	return s->path;
}

int store_checkpoint(struct store *s)
{
	int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
		return store_sqlerr(s, "checkpointing");
	return 0;
}
