/* store/store.c: opening (checks, WAL, the schema and its migrations), storing a run in one
 * transaction, and reading runs and profiles back. Storing maps the run's strings, frames and
 * stacks through the in-memory dictionary (store/dict.c), so a stack seen before costs nothing;
 * codes the run against the branch's previous run (store/segtree.c) and extends the branch's
 * segment tree. */
#include "store/internal.h"
#include "common/error.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void (*store_test_hook_before_commit)(void);

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
	case SQLITE_READONLY:
		return cp_error("database %s is read-only (%s); check the file's permissions",
		                s->path, what);
	case SQLITE_CANTOPEN:
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

/* Whether path's folder (or its medium) is read-only for this process. */
static int read_only_place(const char *path)
{
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	int ro = access(dir, W_OK) < 0 && (errno == EACCES || errno == EROFS || errno == EPERM);
	free(dir);
	return ro;
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
			ret = cp_error("database %s is corrupt (%s); nothing was written to it: "
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

/* ---- storing ---------------------------------------------------------------------------- */

/* Maps p into the dictionary: dict ids of its frames (frame_id) and stack nodes (node_id).
 * Strings are interned only when a frame or a test with samples uses them. */
static void map_profile(struct profile *d, struct trie *t, const struct profile *p,
                        uint32_t *frame_id, uint32_t *node_id)
{
	for (size_t i = 0; i < p->nframes; i++) {
		const struct profile_frame *f = &p->frames[i];
		struct profile_frame df = {profile_intern(d, profile_str(p, f->function)),
		                           profile_intern(d, profile_str(p, f->module)),
		                           profile_intern(d, profile_str(p, f->file)), f->line,
		                           f->kind};
		frame_id[i] = profile_frame(d, &df);
	}
	node_id[0] = 0;
	int added;
	for (size_t i = 1; i < p->nnodes; i++) /* parents precede children */
		node_id[i] = trie_node(t, node_id[p->nodes[i].parent], frame_id[p->nodes[i].frame],
		                       &added);
}

static int branch_slot(struct store *s, const char *name, int64_t *id, int64_t *nruns)
{
	sqlite3_stmt *st = store_stmt(s, Q_BRANCH_FIND);
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		*nruns = sqlite3_column_int64(st, 1);
		sqlite3_reset(st);
		return 0;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return store_sqlerr(s, "looking up a branch");
	st = store_stmt(s, Q_BRANCH_INSERT);
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (store_step_done(s, st, "storing a branch") < 0)
		return -1;
	*id = sqlite3_last_insert_rowid(s->db);
	*nruns = 0;
	return 0;
}

static int insert_run_row(struct store *s, const struct run_meta *m, const struct profile *p,
                          int64_t branch_id, int64_t seq)
{
	sqlite3_stmt *st = store_stmt(s, Q_RUN_INSERT);
	if (!st)
		return -1;
	const struct profile_stats *ps = &p->stats;
	uint64_t samples = m->samples    ? m->samples
	                   : ps->samples ? ps->samples
	                                 : profile_total(p, NULL);
	int hz = m->hz ? m->hz : ps->hz;
	uint64_t period = ps->period_ns ? ps->period_ns : hz > 0 ? 1000000000ull / (unsigned)hz : 0;
	double cpu = m->cpu_seconds != 0    ? m->cpu_seconds
	             : ps->cpu_seconds != 0 ? ps->cpu_seconds
	                                    : (double)samples * (double)period / 1e9;
	int i = 1;
	sqlite3_bind_int64(st, i++, branch_id);
	sqlite3_bind_int64(st, i++, seq);
	sqlite3_bind_int64(st, i++, m->created_at);
	sqlite3_bind_text(st, i++, m->commit, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, i++, m->branch, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, i++, m->base_branch, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, i++, m->merge_base, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, i++, m->dirty);
	sqlite3_bind_int64(st, i++, m->commit_time);
	sqlite3_bind_text(st, i++, m->subject, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, i++, m->ci_provider, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, i++, m->pr_number);
	sqlite3_bind_text(st, i++, m->job_url, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, i++, m->cpu_model, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, i++, m->cpu_count);
	sqlite3_bind_text(st, i++, m->command, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, i++, m->exit_code ? m->exit_code : ps->exit_status);
	sqlite3_bind_double(st, i++, m->wall_seconds != 0 ? m->wall_seconds : ps->wall_seconds);
	sqlite3_bind_double(st, i++, cpu);
	sqlite3_bind_int(st, i++, hz);
	sqlite3_bind_int64(st, i++, (int64_t)samples);
	sqlite3_bind_int64(st, i++, (int64_t)(m->lost ? m->lost : ps->lost));
	sqlite3_bind_int64(st, i++, (int64_t)ps->processes);
	sqlite3_bind_int64(st, i++, (int64_t)ps->threads);
	sqlite3_bind_int64(st, i++, (int64_t)period);
	return store_step_done(s, st, "storing a run");
}

struct tail_fill {
	struct run_tail *t;
	struct blob_entries tmp;
};

static int fill_tail(void *ctx, int64_t seq, const struct blob_entries *e)
{
	struct tail_fill *f = ctx;
	(void)seq;
	blob_entries_copy(&f->t->run, e);
	blob_accumulate(&f->t->block_sum, e, &f->tmp);
	return 0;
}

/* Makes s->tail describe run seq - 1 of the branch (and its block's sum so far), decoding
 * the block's runs unless this process stored that very run last. */
static int load_tail(struct store *s, int64_t branch_id, int64_t seq)
{
	struct run_tail *t = &s->tail;
	int64_t prev_id = -1;
	if (seq > 0) {
		sqlite3_stmt *st = store_stmt(s, Q_RUN_POS);
		if (!st)
			return -1;
		sqlite3_bind_int64(st, 1, branch_id);
		sqlite3_bind_int64(st, 2, seq - 1);
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			prev_id = sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return store_sqlerr(s, "looking up the previous run");
	}
	if (t->gen == s->dict_gen && t->branch_id == branch_id && t->seq == seq - 1 &&
	    t->run_id == prev_id)
		return 0;
	t->gen = s->dict_gen;
	t->branch_id = branch_id;
	t->seq = seq - 1;
	t->run_id = prev_id;
	t->run.n = t->block_sum.n = 0;
	if (seq % SEGTREE_BLOCK == 0)
		return 0; /* a block starts: nothing to code against */
	struct tail_fill f = {.t = t};
	blob_entries_init(&f.tmp);
	int ret = runs_decode(s, branch_id, seq - seq % SEGTREE_BLOCK, seq - 1, fill_tail, &f);
	blob_entries_release(&f.tmp);
	if (ret < 0)
		t->gen = -1;
	return ret;
}

/* The run's test outcomes (from JUnit reports), by test name. */
static int add_results(struct store *s, int64_t run, const struct profile *p)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db,
	                       "INSERT OR REPLACE INTO results(run, test, status, seconds) "
	                       "VALUES (?1, ?2, ?3, ?4)",
	                       -1, &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "storing test outcomes");
	int ret = 0;
	for (size_t i = 0; i < p->nresults && !ret; i++) {
		const struct profile_result *r = &p->results[i];
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, run);
		sqlite3_bind_text(st, 2, profile_str(p, r->test), -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 3, (int)r->status);
		sqlite3_bind_double(st, 4, r->seconds);
		if (sqlite3_step(st) != SQLITE_DONE)
			ret = store_sqlerr(s, "storing test outcomes");
	}
	sqlite3_finalize(st);
	return ret;
}

/* Prepares sql on s, or returns -1 with an error about what. */
static int prepare(struct store *s, const char *sql, sqlite3_stmt **st, const char *what)
{
	return sqlite3_prepare_v2(s->db, sql, -1, st, NULL) == SQLITE_OK ? 0
	                                                                 : store_sqlerr(s, what);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/*
 * The run's modules' build ids. Each (module, build id) pair is stored once, in build_ids
 * (the id as raw bytes); a run keeps the ids of its pairs, ascending and delta-coded as
 * varints in one row of run_build_ids, so the libraries every run maps cost a run a byte
 * each and only a rebuilt binary adds a pair.
 */
static int add_modules(struct store *s, int64_t run, const struct profile *p)
{
	sqlite3_stmt *ins = NULL, *get = NULL, *put = NULL;
	int64_t *ids = xcalloc(p->nmodules + 1, sizeof(*ids));
	struct strbuf blob = STRBUF_INIT;
	size_t n = 0;
	int ret = -1;
	if (prepare(s, "INSERT OR IGNORE INTO build_ids(module, build_id) VALUES (?1, ?2)", &ins,
	            "storing build ids") < 0 ||
	    prepare(s, "SELECT id FROM build_ids WHERE module = ?1 AND build_id = ?2", &get,
	            "storing build ids") < 0 ||
	    prepare(s, "INSERT OR REPLACE INTO run_build_ids(run, ids) VALUES (?1, ?2)", &put,
	            "storing build ids") < 0)
		goto out;
	for (size_t i = 0; i < p->nmodules; i++) {
		const char *hex = profile_build_id(p, p->modules[i].module);
		unsigned char bytes[PROFILE_BUILD_ID_MAX];
		int nb = hex ? profile_build_id_from_hex(bytes, hex) : -1;
		if (nb < 0)
			continue; /* unknown */
		const char *module = profile_str(p, p->modules[i].module);
		sqlite3_stmt *sts[2] = {ins, get};
		for (int k = 0; k < 2; k++) {
			sqlite3_reset(sts[k]);
			sqlite3_bind_text(sts[k], 1, module, -1, SQLITE_STATIC);
			sqlite3_bind_blob(sts[k], 2, bytes, nb, SQLITE_TRANSIENT);
		}
		if (sqlite3_step(ins) != SQLITE_DONE || sqlite3_step(get) != SQLITE_ROW) {
			store_sqlerr(s, "storing build ids");
			goto out;
		}
		ids[n++] = sqlite3_column_int64(get, 0);
	}
	qsort(ids, n, sizeof(*ids), cmp_i64);
	for (size_t i = 0; i < n; i++)
		blob_put_varint(&blob, (uint64_t)(ids[i] - (i ? ids[i - 1] : 0)));
	if (n) {
		sqlite3_bind_int64(put, 1, run);
		sqlite3_bind_blob(put, 2, blob.buf, (int)blob.len, SQLITE_STATIC);
		if (sqlite3_step(put) != SQLITE_DONE) {
			store_sqlerr(s, "storing build ids");
			goto out;
		}
	}
	ret = 0;
out:
	sqlite3_finalize(ins);
	sqlite3_finalize(get);
	sqlite3_finalize(put);
	strbuf_release(&blob);
	free(ids);
	return ret;
}

/* Reads run's build ids into p. */
static int load_modules(struct store *s, int64_t run, struct profile *p)
{
	sqlite3_stmt *list = NULL, *pair = NULL;
	int ret = -1;
	if (prepare(s, "SELECT ids FROM run_build_ids WHERE run = ?1", &list, "reading build ids") <
	            0 ||
	    prepare(s, "SELECT module, build_id FROM build_ids WHERE id = ?1", &pair,
	            "reading build ids") < 0)
		goto out;
	sqlite3_bind_int64(list, 1, run);
	int rc = sqlite3_step(list);
	if (rc == SQLITE_DONE) {
		ret = 0;
		goto out;
	}
	if (rc != SQLITE_ROW) {
		store_sqlerr(s, "reading build ids");
		goto out;
	}
	const unsigned char *q = sqlite3_column_blob(list, 0);
	const unsigned char *end = q + sqlite3_column_bytes(list, 0);
	uint64_t id = 0;
	while (q && q < end) {
		uint64_t delta;
		if (blob_get_varint(&q, end, "build ids", &delta) < 0)
			goto out;
		id += delta;
		sqlite3_reset(pair);
		sqlite3_bind_int64(pair, 1, (int64_t)id);
		if (sqlite3_step(pair) != SQLITE_ROW) {
			cp_error("run %lld names build id %llu, which the database lacks",
			         (long long)run, (unsigned long long)id);
			goto out;
		}
		const char *name = (const char *)sqlite3_column_text(pair, 0);
		const unsigned char *bytes = sqlite3_column_blob(pair, 1);
		int nb = sqlite3_column_bytes(pair, 1);
		if (!name || !bytes || nb <= 0 || nb > PROFILE_BUILD_ID_MAX)
			continue;
		char hex[2 * PROFILE_BUILD_ID_MAX + 1];
		profile_build_id_to_hex(hex, bytes, (size_t)nb);
		profile_set_build_id(p, profile_intern(p, name), hex);
	}
	ret = 0;
out:
	sqlite3_finalize(list);
	sqlite3_finalize(pair);
	return ret;
}

/* Reads run's test outcomes into p (only test's, when test is not NULL). */
static int load_results(struct store *s, int64_t run, const char *test, struct profile *p)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db,
	                       "SELECT test, status, seconds FROM results WHERE run = ?1 "
	                       "AND (?2 IS NULL OR test = ?2) ORDER BY test",
	                       -1, &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "reading test outcomes");
	sqlite3_bind_int64(st, 1, run);
	if (test)
		sqlite3_bind_text(st, 2, test, -1, SQLITE_STATIC);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		uint32_t id = profile_intern(p, name ? name : "");
		profile_set_result(p, id, (uint32_t)sqlite3_column_int(st, 1),
		                   sqlite3_column_double(st, 2));
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : store_sqlerr(s, "reading test outcomes");
}

static int add_run_txn(struct store *s, struct run_meta *meta, const struct profile *p)
{
	int ret = -1;
	uint32_t *frame_id = xmalloc(st_mult(p->nframes ? p->nframes : 1, sizeof(*frame_id)));
	uint32_t *node_id = xmalloc(st_mult(p->nnodes, sizeof(*node_id)));
	uint32_t *test_id = xmalloc(st_mult(p->nstr ? p->nstr : 1, sizeof(*test_id)));
	struct blob_entries run, tmp;
	blob_entries_init(&run);
	blob_entries_init(&tmp);

	if (dict_sync(s) < 0)
		goto out;
	size_t before[DICT_NKINDS];
	dict_counts(s, before);
	map_profile(s->dict, &s->trie, p, frame_id, node_id);
	memset(test_id, 0xff, (p->nstr ? p->nstr : 1) * sizeof(*test_id));
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *smp = &p->samples[i];
		if (!smp->count)
			continue;
		if (test_id[smp->test] == UINT32_MAX)
			test_id[smp->test] = profile_intern(s->dict, profile_str(p, smp->test));
		blob_entries_push(&run, test_id[smp->test], node_id[smp->node], smp->count);
	}
	blob_entries_normalize(&run);
	if (dict_write_new(s, before) < 0)
		goto out;

	int64_t branch_id = 0, seq = 0;
	if (branch_slot(s, meta->branch, &branch_id, &seq) < 0 ||
	    insert_run_row(s, meta, p, branch_id, seq) < 0)
		goto out;
	int64_t run_id = sqlite3_last_insert_rowid(s->db);
	if (p->nresults && add_results(s, run_id, p) < 0)
		goto out;
	if (p->nmodules && add_modules(s, run_id, p) < 0)
		goto out;
	for (size_t i = 0; i < meta->ntags; i++) {
		sqlite3_stmt *st = store_stmt(s, Q_TAG_INSERT);
		if (!st)
			goto out;
		sqlite3_bind_int64(st, 1, run_id);
		sqlite3_bind_text(st, 2, meta->tags[i].key, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, meta->tags[i].value, -1, SQLITE_STATIC);
		if (store_step_done(s, st, "storing a tag") < 0)
			goto out;
	}
	if (load_tail(s, branch_id, seq) < 0 ||
	    runs_put(s, run_id, seq, &run, seq % SEGTREE_BLOCK ? &s->tail.run : NULL) < 0)
		goto out;
	struct run_tail *t = &s->tail;
	blob_accumulate(&t->block_sum, &run, &tmp);
	sqlite3_stmt *st = store_stmt(s, Q_BRANCH_BUMP);
	if (!st)
		goto out;
	sqlite3_bind_int64(st, 1, branch_id);
	if (store_step_done(s, st, "counting the branch's runs") < 0 ||
	    segtree_append(s, branch_id, seq, &t->block_sum) < 0)
		goto out;
	/* The tail now describes this run (rolled back with the rest on failure). */
	t->seq = seq;
	t->run_id = run_id;
	struct blob_entries sw = t->run;
	t->run = run;
	run = sw;
	if ((seq + 1) % SEGTREE_BLOCK == 0)
		t->block_sum.n = 0;
	meta->id = run_id;
	ret = 0;
out:
	blob_entries_release(&run);
	blob_entries_release(&tmp);
	free(frame_id);
	free(node_id);
	free(test_id);
	return ret;
}

int store_add_run(struct store *s, struct run_meta *meta, const struct profile *p)
{
	if (s->readonly)
		return cp_error("database %s was opened read-only; cannot store a run", s->path);
	if (!meta->created_at)
		meta->created_at = (int64_t)time(NULL);
	if (store_begin(s) < 0)
		return -1;
	if (add_run_txn(s, meta, p) < 0)
		goto fail;
	if (store_test_hook_before_commit)
		store_test_hook_before_commit();
	if (store_commit(s) < 0) {
		meta->id = 0;
		return -1;
	}
	return 0;
fail:
	meta->id = 0;
	store_rollback(s);
	return -1;
}

/* ---- reading runs ----------------------------------------------------------------------- */

#define RUN_COLS                                                                                   \
	"id, created_at, commit_id, branch, base_branch, merge_base, dirty, commit_time, "         \
	"subject, ci_provider, pr_number, job_url, cpu_model, cpu_count, command, exit_code, "     \
	"wall_seconds, cpu_seconds, hz, samples, lost"

static const char *col_text(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	return t ? t : "";
}

static void fill_meta(sqlite3_stmt *st, struct run_meta *m)
{
	int i = 0;
	m->id = sqlite3_column_int64(st, i++);
	m->created_at = sqlite3_column_int64(st, i++);
	run_meta_set(&m->commit, col_text(st, i++));
	run_meta_set(&m->branch, col_text(st, i++));
	run_meta_set(&m->base_branch, col_text(st, i++));
	run_meta_set(&m->merge_base, col_text(st, i++));
	m->dirty = sqlite3_column_int(st, i++);
	m->commit_time = sqlite3_column_int64(st, i++);
	run_meta_set(&m->subject, col_text(st, i++));
	run_meta_set(&m->ci_provider, col_text(st, i++));
	m->pr_number = sqlite3_column_int64(st, i++);
	run_meta_set(&m->job_url, col_text(st, i++));
	run_meta_set(&m->cpu_model, col_text(st, i++));
	m->cpu_count = sqlite3_column_int(st, i++);
	run_meta_set(&m->command, col_text(st, i++));
	m->exit_code = sqlite3_column_int(st, i++);
	m->wall_seconds = sqlite3_column_double(st, i++);
	m->cpu_seconds = sqlite3_column_double(st, i++);
	m->hz = sqlite3_column_int(st, i++);
	m->samples = (uint64_t)sqlite3_column_int64(st, i++);
	m->lost = (uint64_t)sqlite3_column_int64(st, i++);
}

static int load_tags(struct store *s, struct run_meta *m)
{
	sqlite3_stmt *st = store_stmt(s, Q_TAGS_GET);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, m->id);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		run_meta_set_tag(m, col_text(st, 0), col_text(st, 1));
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return store_sqlerr(s, "reading tags");
	return 0;
}

int store_list_runs(struct store *s, const char *branch, size_t limit, struct run_meta **out,
                    size_t *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *st;
	const char *sql = branch ? "SELECT " RUN_COLS " FROM runs WHERE branch = ?1 "
	                           "ORDER BY id DESC LIMIT ?2"
	                         : "SELECT " RUN_COLS " FROM runs ORDER BY id DESC LIMIT ?2";
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "listing runs");
	if (branch)
		sqlite3_bind_text(st, 1, branch, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, limit ? (int64_t)limit : -1);
	struct run_meta *runs = NULL;
	size_t nruns = 0, alloc = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ALLOC_GROW(runs, nruns + 1, alloc);
		run_meta_init(&runs[nruns]);
		fill_meta(st, &runs[nruns]);
		nruns++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		store_sqlerr(s, "listing runs");
		goto fail;
	}
	for (size_t i = 0; i < nruns; i++)
		if (load_tags(s, &runs[i]) < 0)
			goto fail;
	*out = runs;
	*n = nruns;
	return 0;
fail:
	store_runs_free(runs, nruns);
	return -1;
}

int store_find_runs(struct store *s, const struct store_run_filter *f, struct run_meta **out,
                    size_t *n)
{
	*out = NULL;
	*n = 0;
	/* Each condition only when asked for, so SQLite can use runs(branch, id). */
	struct strbuf sql = STRBUF_INIT;
	strbuf_addstr(&sql, "SELECT " RUN_COLS " FROM runs WHERE 1");
	if (f->id)
		strbuf_addstr(&sql, " AND id = ?1");
	if (f->branch)
		strbuf_addstr(&sql, " AND branch = ?2");
	if (f->commit)
		strbuf_addstr(&sql, " AND commit_id = ?3");
	if (f->commit_prefix)
		strbuf_addstr(&sql, " AND commit_id LIKE ?4 || '%'");
	if (f->before)
		strbuf_addstr(&sql, " AND id < ?5");
	if (f->exclude)
		strbuf_addstr(&sql, " AND id <> ?6");
	strbuf_addstr(&sql, " ORDER BY id DESC LIMIT ?7");
	sqlite3_stmt *st;
	int prc = sqlite3_prepare_v2(s->db, sql.buf, -1, &st, NULL);
	strbuf_release(&sql);
	if (prc != SQLITE_OK)
		return store_sqlerr(s, "finding runs");
	if (f->id)
		sqlite3_bind_int64(st, 1, f->id);
	if (f->branch)
		sqlite3_bind_text(st, 2, f->branch, -1, SQLITE_STATIC);
	if (f->commit)
		sqlite3_bind_text(st, 3, f->commit, -1, SQLITE_STATIC);
	if (f->commit_prefix)
		sqlite3_bind_text(st, 4, f->commit_prefix, -1, SQLITE_STATIC);
	if (f->before)
		sqlite3_bind_int64(st, 5, f->before);
	if (f->exclude)
		sqlite3_bind_int64(st, 6, f->exclude);
	sqlite3_bind_int64(st, 7, f->limit ? (int64_t)f->limit : -1);
	struct run_meta *runs = NULL;
	size_t nruns = 0, alloc = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ALLOC_GROW(runs, nruns + 1, alloc);
		run_meta_init(&runs[nruns]);
		fill_meta(st, &runs[nruns]);
		nruns++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		store_sqlerr(s, "finding runs");
		goto fail;
	}
	for (size_t i = 0; f->tags && i < nruns; i++)
		if (load_tags(s, &runs[i]) < 0)
			goto fail;
	*out = runs;
	*n = nruns;
	return 0;
fail:
	store_runs_free(runs, nruns);
	return -1;
}

int store_branch_names(struct store *s, char **out, int64_t *nbranches)
{
	*out = NULL;
	sqlite3_stmt *st;
	/* Newest first: the order a reader looks for. runs(branch, id) covers it. */
	if (sqlite3_prepare_v2(s->db,
	                       "SELECT branch, COUNT(*) FROM runs WHERE branch <> '' GROUP BY branch "
	                       "ORDER BY MAX(id) DESC",
	                       -1, &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "listing branches");
	struct strbuf sb = STRBUF_INIT;
	int64_t nb = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		nb++;
		if (sb.len > 400) {
			if (!strstr(sb.buf, "..."))
				strbuf_addstr(&sb, ", ...");
			continue;
		}
		if (sb.len)
			strbuf_addstr(&sb, ", ");
		strbuf_addstr(&sb, col_text(st, 0));
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		strbuf_release(&sb);
		return store_sqlerr(s, "listing branches");
	}
	*out = strbuf_detach(&sb, NULL);
	if (nbranches)
		*nbranches = nb;
	return 0;
}

int store_count_runs(struct store *s, const char *branch, int64_t *out)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, "SELECT COUNT(*) FROM runs WHERE branch = ?1", -1, &st,
	                       NULL) != SQLITE_OK)
		return store_sqlerr(s, "counting runs");
	sqlite3_bind_text(st, 1, branch, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	*out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return store_sqlerr(s, "counting runs");
	return 0;
}

void store_runs_free(struct run_meta *runs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		run_meta_release(&runs[i]);
	free(runs);
}

int store_get_run(struct store *s, int64_t id, struct run_meta *out)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, "SELECT " RUN_COLS " FROM runs WHERE id = ?1", -1, &st,
	                       NULL) != SQLITE_OK)
		return store_sqlerr(s, "reading a run");
	sqlite3_bind_int64(st, 1, id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		fill_meta(st, out);
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE)
		return cp_error("no run %lld in %s; 'ciprof runs' lists the stored runs",
		                (long long)id, s->path);
	if (rc != SQLITE_ROW)
		return store_sqlerr(s, "reading a run");
	return load_tags(s, out);
}

int store_latest_run(struct store *s, const char *branch, int64_t *out)
{
	sqlite3_stmt *st;
	const char *sql =
	        branch ? "SELECT max(id) FROM runs WHERE branch = ?1" : "SELECT max(id) FROM runs";
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "finding the latest run");
	if (branch)
		sqlite3_bind_text(st, 1, branch, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return store_sqlerr(s, "finding the latest run");
	if (!id) {
		if (branch)
			return cp_error("no runs of branch '%s' in %s; 'ciprof runs' lists the "
			                "stored runs",
			                branch, s->path);
		return cp_error("no runs stored in %s yet; record one with 'ciprof run -- CMD'",
		                s->path);
	}
	*out = id;
	return 0;
}

/* ---- blobs back into profiles ----------------------------------------------------------- */

static int idmap_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct idmap *m = ctx;
	return m->keys[pos] == *(const uint64_t *)key;
}

void idmap_init(struct idmap *m)
{
	memset(m, 0, sizeof(*m));
	hashidx_init(&m->idx);
}

void idmap_release(struct idmap *m)
{
	free(m->keys);
	free(m->vals);
	hashidx_release(&m->idx);
	memset(m, 0, sizeof(*m));
}

int idmap_get(const struct idmap *m, uint64_t key, uint32_t *val)
{
	int64_t pos = hashidx_find(&m->idx, hash_mix(key), idmap_eq, m, &key);
	if (pos < 0)
		return 0;
	*val = m->vals[pos];
	return 1;
}

void idmap_put(struct idmap *m, uint64_t key, uint32_t val)
{
	ALLOC_GROW(m->keys, m->n + 1, m->alloc);
	ALLOC_GROW(m->vals, m->n + 1, m->valloc);
	m->keys[m->n] = key;
	m->vals[m->n] = val;
	hashidx_insert(&m->idx, hash_mix(key), (uint32_t)m->n);
	m->n++;
}

void builder_init(struct profile_builder *b, struct store *s, struct profile *p)
{
	b->s = s;
	b->p = p;
	dict_reader_init(&b->dict, s);
	idmap_init(&b->strs);
	idmap_init(&b->frames);
	idmap_init(&b->nodes);
}

void builder_release(struct profile_builder *b)
{
	dict_reader_release(&b->dict);
	idmap_release(&b->strs);
	idmap_release(&b->frames);
	idmap_release(&b->nodes);
}

static int build_str(struct profile_builder *b, uint64_t id, uint32_t *out)
{
	if (idmap_get(&b->strs, id, out))
		return 0;
	const char *str;
	if (dict_read_string(&b->dict, id, &str) < 0)
		return -1;
	*out = profile_intern(b->p, str);
	idmap_put(&b->strs, id, *out);
	return 0;
}

static int build_frame(struct profile_builder *b, uint64_t id, uint32_t *out)
{
	if (idmap_get(&b->frames, id, out))
		return 0;
	struct profile_frame f;
	if (dict_read_frame(&b->dict, id, &f) < 0 || build_str(b, f.function, &f.function) < 0 ||
	    build_str(b, f.module, &f.module) < 0 || build_str(b, f.file, &f.file) < 0)
		return -1;
	*out = profile_frame(b->p, &f);
	idmap_put(&b->frames, id, *out);
	return 0;
}

/* The local node of database node id, creating its missing ancestors root first. */
static int build_node(struct profile_builder *b, uint64_t id, uint32_t *out)
{
	uint64_t *chain = NULL, *chain_frames = NULL;
	size_t n = 0, alloc = 0, falloc = 0;
	uint32_t local = 0;
	int ret = -1;
	while (id && !idmap_get(&b->nodes, id, &local)) {
		uint64_t parent, frame;
		if (dict_read_node(&b->dict, id, &parent, &frame) < 0)
			goto out;
		if (n > 1000000) { /* parents precede children, so this means a cycle of ids */
			cp_error("database %s is corrupt: stack node %llu is deeper than a million "
			         "frames; restore a backup",
			         b->s->path, (unsigned long long)id);
			goto out;
		}
		ALLOC_GROW(chain, n + 1, alloc);
		ALLOC_GROW(chain_frames, n + 1, falloc);
		chain[n] = id;
		chain_frames[n] = frame;
		n++;
		id = parent;
	}
	if (!id)
		local = 0;
	while (n--) {
		uint32_t f = 0;
		if (build_frame(b, chain_frames[n], &f) < 0)
			goto out;
		local = profile_node(b->p, local, f);
		idmap_put(&b->nodes, chain[n], local);
	}
	*out = local;
	ret = 0;
out:
	free(chain);
	free(chain_frames);
	return ret;
}

int builder_add(struct profile_builder *b, const struct blob_entries *e)
{
	uint64_t last_test = UINT64_MAX;
	uint32_t test = 0;
	for (size_t i = 0; i < e->n; i++) {
		if (e->e[i].test != last_test) {
			if (build_str(b, e->e[i].test, &test) < 0)
				return -1;
			last_test = e->e[i].test;
		}
		uint32_t node;
		if (build_node(b, e->e[i].node, &node) < 0)
			return -1;
		profile_add(b->p, test, node, e->e[i].count);
	}
	return 0;
}

static int copy_entries(void *ctx, int64_t seq, const struct blob_entries *e)
{
	(void)seq;
	blob_entries_copy(ctx, e);
	return 0;
}

static int load_profile(struct store *s, int64_t id, const char *test, struct profile *p)
{
	struct run_meta m;
	run_meta_init(&m);
	struct blob_entries e;
	blob_entries_init(&e);
	struct profile_builder b;
	builder_init(&b, s, p);
	int ret = -1;
	if (store_get_run(s, id, &m) < 0)
		goto out;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(
	            s->db,
	            "SELECT branch_id, seq, samples, lost, processes, threads, period_ns, "
	            "cpu_seconds, wall_seconds, hz, exit_code FROM runs WHERE id = ?1",
	            -1, &q, NULL) != SQLITE_OK) {
		store_sqlerr(s, "reading run stats");
		goto out;
	}
	sqlite3_bind_int64(q, 1, id);
	int64_t branch_id = -1, seq = -1;
	if (sqlite3_step(q) == SQLITE_ROW) {
		branch_id = sqlite3_column_int64(q, 0);
		seq = sqlite3_column_int64(q, 1);
		p->stats.samples = (uint64_t)sqlite3_column_int64(q, 2);
		p->stats.lost = (uint64_t)sqlite3_column_int64(q, 3);
		p->stats.processes = (uint64_t)sqlite3_column_int64(q, 4);
		p->stats.threads = (uint64_t)sqlite3_column_int64(q, 5);
		p->stats.period_ns = (uint64_t)sqlite3_column_int64(q, 6);
		p->stats.cpu_seconds = sqlite3_column_double(q, 7);
		p->stats.wall_seconds = sqlite3_column_double(q, 8);
		p->stats.hz = sqlite3_column_int(q, 9);
		p->stats.exit_status = sqlite3_column_int(q, 10);
	}
	sqlite3_finalize(q);
	if (seq < 0) {
		store_sqlerr(s, "reading run stats");
		goto out;
	}
	if (runs_decode(s, branch_id, seq, seq, copy_entries, &e) < 0)
		goto out;
	if (test) {
		/* Keep the test's entries: names come from the dictionary, tests are few. */
		size_t k = 0;
		uint64_t last = UINT64_MAX;
		int keep = 0;
		for (size_t i = 0; i < e.n; i++) {
			if (e.e[i].test != last) {
				const char *name;
				if (dict_read_string(&b.dict, e.e[i].test, &name) < 0)
					goto out;
				keep = !strcmp(name, test);
				last = e.e[i].test;
			}
			if (keep)
				e.e[k++] = e.e[i];
		}
		e.n = k;
		if (!k) {
			cp_error("run %lld has no samples of test '%s'; 'ciprof show %lld --by "
			         "test' "
			         "lists its tests",
			         (long long)id, test, (long long)id);
			goto out;
		}
	}
	if (builder_add(&b, &e) < 0 || load_results(s, id, test, p) < 0 ||
	    load_modules(s, id, p) < 0)
		goto out;
	ret = 0;
out:
	builder_release(&b);
	blob_entries_release(&e);
	run_meta_release(&m);
	return ret;
}

int store_load_profile(struct store *s, int64_t id, const char *test, struct profile **out)
{
	*out = NULL;
	struct profile *p = profile_new();
	if (store_begin_read(s) < 0) {
		profile_free(p);
		return -1;
	}
	int ret = load_profile(s, id, test, p);
	store_end_read(s);
	if (ret < 0)
		profile_free(p);
	else
		*out = p;
	return ret;
}

/* ---- counts and checks ------------------------------------------------------------------ */

int store_counts(struct store *s, struct store_counts *out)
{
	static const char *const sql[] = {
	        "SELECT count(*) FROM runs",
	        "SELECT count(*) FROM branches",
	        "SELECT coalesce(sum(n), 0) FROM dict WHERE id >> 40 = 0",
	        "SELECT coalesce(sum(n), 0) FROM dict WHERE id >> 40 = 1",
	        "SELECT coalesce(sum(n), 0) FROM dict WHERE id >> 40 = 2",
	        "SELECT count(*) FROM profiles",
	        "SELECT count(*) FROM segtree",
	        "PRAGMA page_count",
	        "PRAGMA page_size",
	        "PRAGMA freelist_count",
	        "SELECT coalesce(sum(length(blob)), 0) FROM dict WHERE id >> 40 = 0",
	        "SELECT coalesce(sum(length(blob)), 0) FROM dict WHERE id >> 40 = 1",
	        "SELECT coalesce(sum(length(blob)), 0) FROM dict WHERE id >> 40 = 2",
	        "SELECT coalesce(sum(length(blob)), 0) FROM profiles",
	        "SELECT coalesce(sum(length(blob)), 0) FROM segtree",
	};
	int64_t *dst[] = {&out->runs,           &out->branches,       &out->strings,
	                  &out->frames,         &out->nodes,          &out->profiles,
	                  &out->segtree_nodes,  &out->page_count,     &out->page_size,
	                  &out->freelist_pages, &out->bytes_strings,  &out->bytes_frames,
	                  &out->bytes_nodes,    &out->bytes_profiles, &out->bytes_segtree};
	for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]); i++)
		if (store_query_int(s, sql[i], dst[i], "counting rows") < 0)
			return -1;
	return 0;
}

static const char *col_text0(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	return t ? t : "";
}

/* Every kind's chunks cover its ids from the first one on without gaps or overlaps. */
static int check_dict(struct store *s)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db,
	                       "SELECT id >> 40, id & ((1 << 40) - 1), n FROM dict ORDER BY id", -1,
	                       &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "checking the dictionary");
	int64_t next[DICT_NKINDS] = {1, 0, 1};
	int rc, ret = 0;
	while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t kind = sqlite3_column_int64(st, 0), first = sqlite3_column_int64(st, 1),
		        n = sqlite3_column_int64(st, 2);
		if (kind < 0 || kind >= DICT_NKINDS || first != next[kind] || n < 1)
			ret = cp_error(
			        "database %s is corrupt: dictionary chunk (%lld, %lld) out of "
			        "place; restore a backup",
			        s->path, (long long)kind, (long long)first);
		else
			next[kind] += n;
	}
	sqlite3_finalize(st);
	if (!ret && rc != SQLITE_DONE)
		return store_sqlerr(s, "checking the dictionary");
	return ret;
}

int store_check(struct store *s)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "checking integrity");
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && strcmp(col_text0(st, 0), "ok")) {
		cp_error("database %s is corrupt: %s; restore a backup", s->path, col_text0(st, 0));
		sqlite3_finalize(st);
		return -1;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return store_sqlerr(s, "checking integrity");
	if (check_dict(s) < 0)
		return -1;
	/* A branch of n runs has runs numbered 0..n-1, each with a profile, and the tree nodes
	 * of levels >= SEGTREE_MIN_LEVEL. */
	if (sqlite3_prepare_v2(s->db,
	                       "SELECT b.id, b.name, b.nruns, (SELECT count(*) FROM runs r WHERE "
	                       "r.branch_id = b.id), (SELECT coalesce(max(seq), -1) FROM runs r "
	                       "WHERE r.branch_id = b.id), (SELECT count(*) FROM segtree t WHERE "
	                       "t.id >= b.id << 40 AND t.id < (b.id + 1) << 40), (SELECT count(*) "
	                       "FROM runs r JOIN profiles p "
	                       "ON p.run = r.id WHERE r.branch_id = b.id) FROM branches b",
	                       -1, &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "checking segment trees");
	int ret = 0;
	while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t n = sqlite3_column_int64(st, 2), runs = sqlite3_column_int64(st, 3);
		int64_t maxseq = sqlite3_column_int64(st, 4), nodes = sqlite3_column_int64(st, 5);
		int64_t profiles = sqlite3_column_int64(st, 6);
		int64_t want = segtree_expected_nodes(n);
		if (runs != n || maxseq != n - 1 || nodes != want || profiles != n)
			ret = cp_error(
			        "database %s: branch '%s' has %lld runs (numbered up to %lld, %lld "
			        "with a profile) and %lld segment tree nodes, expected %lld runs "
			        "and "
			        "%lld nodes; run 'ciprof gc' to rebuild",
			        s->path, col_text0(st, 1), (long long)runs, (long long)maxseq,
			        (long long)profiles, (long long)nodes, (long long)n,
			        (long long)want);
	}
	sqlite3_finalize(st);
	if (!ret && rc != SQLITE_DONE)
		return store_sqlerr(s, "checking segment trees");
	return ret;
}

int store_checkpoint(struct store *s)
{
	int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
		return store_sqlerr(s, "checkpointing");
	return 0;
}
