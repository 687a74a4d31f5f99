/* store/migrate.c: the schema, and the step from each earlier schema to the next. A fresh file
 * gets the newest schema directly; an older file is converted in one transaction (db.c's
 * migrate). Schema 1 (ciprof's first store) kept strings, frames and stack nodes as indexed
 * rows, one varint blob per (run, test) and every segment-tree level; schema 2 keeps the
 * dictionary as compressed chunks, one arithmetic-coded blob per run and tree levels from a
 * block of runs up (docs/store.md). */
#include "store/db.h"
#include "store/load.h"
#include "store/migrate.h"
#include "store/segtree.h"
#include "common/error.h"
#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* The schema 2 tables holding blobs (the rest is unchanged since schema 1). */
/* Blobs live in rowid tables, whose rows keep up to ~1 KB (a 1 KB page) next to each other and
 * spill only whole pages: a WITHOUT ROWID table would spill anything over 231 bytes to a page
 * of its own. Composite keys are packed into the rowid instead (dict.h: DICT_KEY_SHIFT;
 * segtree.h: SEG_KEY). */
#define SCHEMA_V2_BLOBS                                                                            \
	"CREATE TABLE dict(id INTEGER PRIMARY KEY, n INTEGER NOT NULL, blob BLOB NOT NULL);"       \
	"CREATE TABLE profiles(run INTEGER PRIMARY KEY, blob BLOB NOT NULL);"                      \
	"CREATE TABLE segtree(id INTEGER PRIMARY KEY, blob BLOB NOT NULL);"

const char store_step_2_to_3[] =
        "CREATE TABLE results(run INTEGER NOT NULL, test TEXT NOT NULL, status INTEGER NOT NULL,"
        " seconds REAL NOT NULL, PRIMARY KEY(run, test)) WITHOUT ROWID;";

/* 4 -> 5: the modules' GNU build ids (raw bytes), for pprof's mappings: each (module, id)
 * pair once, and per run the list of its pairs (varints, store.c add_modules). */
const char store_step_4_to_5[] =
        "CREATE TABLE build_ids(id INTEGER PRIMARY KEY, module TEXT NOT NULL,"
        " build_id BLOB NOT NULL, UNIQUE(module, build_id));"
        "CREATE TABLE run_build_ids(run INTEGER PRIMARY KEY, ids BLOB NOT NULL);";

const char store_schema_v2[] =
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
        "INSERT INTO meta(key, value) VALUES ('generation', 0);"
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
        " PRIMARY KEY(run, key)) WITHOUT ROWID;" SCHEMA_V2_BLOBS;

/* Chunk sizes when a whole dictionary is written at once (migration, gc): small enough that a
 * reader needing one node decodes little, large enough to code well. */
#define REWRITE_CHUNK_NODES  1024
#define REWRITE_CHUNK_OTHERS 4096

int store_write_dict(struct store *s, const struct profile *names, const struct trie *t)
{
	if (names->nstr > 1 && dict_write_range(s, names, t->nodes, DICT_STRINGS, 1,
	                                        names->nstr - 1, REWRITE_CHUNK_OTHERS) < 0)
		return -1;
	if (names->nframes && dict_write_range(s, names, t->nodes, DICT_FRAMES, 0, names->nframes,
	                                       REWRITE_CHUNK_OTHERS) < 0)
		return -1;
	if (t->n > 1 &&
	    dict_write_range(s, names, t->nodes, DICT_NODES, 1, t->n - 1, REWRITE_CHUNK_NODES) < 0)
		return -1;
	return 0;
}

/* ---- schema 1 -> 2 ---------------------------------------------------------------------- */

struct v1 {
	struct store *s;
	struct profile *d; /* the new dictionary: strings and frames, and stack nodes */
	struct trie trie;
	struct idmap strs; /* schema 1 string id -> index into text */
	char **text;
	size_t ntext, text_alloc;
	struct idmap new_str, frames, nodes; /* schema 1 id -> new id */
};

static int v1_rows(struct store *s, const char *sql, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "migrating from schema 1");
	return 0;
}

static int v1_string(struct v1 *m, uint64_t id, uint32_t *out)
{
	if (idmap_get(&m->new_str, id, out))
		return 0;
	uint32_t idx;
	if (!idmap_get(&m->strs, id, &idx))
		return cp_error("database %s is corrupt: string %llu is missing; restore a backup",
		                m->s->path, (unsigned long long)id);
	*out = profile_intern(m->d, m->text[idx]);
	idmap_put(&m->new_str, id, *out);
	return 0;
}

static int v1_dictionary(struct v1 *m)
{
	struct store *s = m->s;
	sqlite3_stmt *st;
	int rc;
	if (v1_rows(s, "SELECT id, s FROM strings", &st) < 0)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ALLOC_GROW(m->text, m->ntext + 1, m->text_alloc);
		const char *t = (const char *)sqlite3_column_text(st, 1);
		m->text[m->ntext] = xstrdup(t ? t : "");
		idmap_put(&m->strs, (uint64_t)sqlite3_column_int64(st, 0), (uint32_t)m->ntext);
		m->ntext++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return store_sqlerr(s, "migrating strings from schema 1");

	if (v1_rows(s, "SELECT id, function, module, file, line, kind FROM frames ORDER BY id",
	            &st) < 0)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct profile_frame f = {.line = (uint32_t)sqlite3_column_int64(st, 4),
		                          .kind = (uint32_t)sqlite3_column_int64(st, 5)};
		if (v1_string(m, (uint64_t)sqlite3_column_int64(st, 1), &f.function) < 0 ||
		    v1_string(m, (uint64_t)sqlite3_column_int64(st, 2), &f.module) < 0 ||
		    v1_string(m, (uint64_t)sqlite3_column_int64(st, 3), &f.file) < 0) {
			sqlite3_finalize(st);
			return -1;
		}
		idmap_put(&m->frames, (uint64_t)sqlite3_column_int64(st, 0),
		          profile_frame(m->d, &f));
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return store_sqlerr(s, "migrating frames from schema 1");

	/* A node was always inserted after its parent, so id order has parents first. */
	if (v1_rows(s, "SELECT id, parent, frame FROM nodes ORDER BY id", &st) < 0)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
		uint64_t parent = (uint64_t)sqlite3_column_int64(st, 1);
		uint32_t np = 0, nf;
		if ((parent && !idmap_get(&m->nodes, parent, &np)) ||
		    !idmap_get(&m->frames, (uint64_t)sqlite3_column_int64(st, 2), &nf)) {
			sqlite3_finalize(st);
			return cp_error(
			        "database %s is corrupt: stack node %llu has a missing parent "
			        "or frame; restore a backup",
			        s->path, (unsigned long long)id);
		}
		int added;
		idmap_put(&m->nodes, id, trie_node(&m->trie, np, nf, &added));
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return store_sqlerr(s, "migrating stack nodes from schema 1");
	return 0;
}

/* A run's schema 1 profile rows (one pairs blob per test) in new ids. */
static int v1_run(struct v1 *m, sqlite3_stmt *st, int64_t run, struct blob_entries *out)
{
	struct store *s = m->s;
	struct blob_entries e;
	blob_entries_init(&e);
	out->n = 0;
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, run);
	int rc, ret = -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint32_t test;
		e.n = 0;
		if (v1_string(m, (uint64_t)sqlite3_column_int64(st, 0), &test) < 0)
			goto out;
		if (blob_decode_pairs(sqlite3_column_blob(st, 1),
		                      (size_t)sqlite3_column_bytes(st, 1), test, &e) < 0) {
			store_corrupt(s, "a schema 1 profile");
			goto out;
		}
		for (size_t i = 0; i < e.n; i++) {
			uint32_t node;
			if (!idmap_get(&m->nodes, e.e[i].node, &node)) {
				cp_error("database %s is corrupt: run %lld uses a missing stack "
				         "node; "
				         "restore a backup",
				         s->path, (long long)run);
				goto out;
			}
			blob_entries_push(out, test, node, e.e[i].count);
		}
	}
	if (rc != SQLITE_DONE) {
		store_sqlerr(s, "migrating profiles from schema 1");
		goto out;
	}
	blob_entries_normalize(out);
	ret = 0;
out:
	sqlite3_reset(st);
	blob_entries_release(&e);
	return ret;
}

/* Re-codes one branch's runs in seq order, renumbering them 0..n-1, and builds its tree. */
static int v1_branch(struct v1 *m, int64_t branch_id)
{
	struct store *s = m->s;
	sqlite3_stmt *runs = NULL, *prof = NULL;
	struct blob_entries prev, cur, sum, tmp;
	blob_entries_init(&prev);
	blob_entries_init(&cur);
	blob_entries_init(&sum);
	blob_entries_init(&tmp);
	int64_t *ids = NULL;
	size_t n = 0, alloc = 0;
	int rc, ret = -1;
	if (v1_rows(s, "SELECT id FROM runs WHERE branch_id = ?1 ORDER BY seq, id", &runs) < 0 ||
	    v1_rows(s, "SELECT test, blob FROM v1_profiles WHERE run = ?1", &prof) < 0)
		goto out;
	sqlite3_bind_int64(runs, 1, branch_id);
	while ((rc = sqlite3_step(runs)) == SQLITE_ROW) {
		ALLOC_GROW(ids, n + 1, alloc);
		ids[n++] = sqlite3_column_int64(runs, 0);
	}
	if (rc != SQLITE_DONE) {
		store_sqlerr(s, "migrating runs from schema 1");
		goto out;
	}
	for (size_t seq = 0; seq < n; seq++) {
		if (v1_run(m, prof, ids[seq], &cur) < 0)
			goto out;
		sqlite3_stmt *up;
		if (v1_rows(s, "UPDATE runs SET seq = ?2 WHERE id = ?1", &up) < 0)
			goto out;
		sqlite3_bind_int64(up, 1, ids[seq]);
		sqlite3_bind_int64(up, 2, (int64_t)seq);
		rc = sqlite3_step(up);
		sqlite3_finalize(up);
		if (rc != SQLITE_DONE) {
			store_sqlerr(s, "migrating runs from schema 1");
			goto out;
		}
		if (seq % SEGTREE_BLOCK == 0)
			sum.n = 0;
		blob_accumulate(&sum, &cur, &tmp);
		if (runs_put(s, ids[seq], (int64_t)seq, &cur, &prev) < 0 ||
		    segtree_append(s, branch_id, (int64_t)seq, &sum) < 0)
			goto out;
		struct blob_entries t = prev;
		prev = cur;
		cur = t;
	}
	sqlite3_stmt *up;
	if (v1_rows(s, "UPDATE branches SET nruns = ?2 WHERE id = ?1", &up) < 0)
		goto out;
	sqlite3_bind_int64(up, 1, branch_id);
	sqlite3_bind_int64(up, 2, (int64_t)n);
	rc = sqlite3_step(up);
	sqlite3_finalize(up);
	if (rc != SQLITE_DONE) {
		store_sqlerr(s, "migrating branches from schema 1");
		goto out;
	}
	ret = 0;
out:
	sqlite3_finalize(runs);
	sqlite3_finalize(prof);
	free(ids);
	blob_entries_release(&prev);
	blob_entries_release(&cur);
	blob_entries_release(&sum);
	blob_entries_release(&tmp);
	return ret;
}

int store_migrate_1_to_2(struct store *s)
{
	struct v1 m = {.s = s, .d = profile_new()};
	trie_init(&m.trie);
	idmap_init(&m.strs);
	idmap_init(&m.new_str);
	idmap_init(&m.frames);
	idmap_init(&m.nodes);
	int64_t *branches = NULL;
	size_t nb = 0, alloc = 0;
	int ret = -1, rc;
	sqlite3_stmt *st = NULL;
	if (store_exec(s, "ALTER TABLE profiles RENAME TO v1_profiles;"
	                  "ALTER TABLE segtree RENAME TO v1_segtree;" SCHEMA_V2_BLOBS) < 0 ||
	    v1_dictionary(&m) < 0 || v1_rows(s, "SELECT id FROM branches ORDER BY id", &st) < 0)
		goto out;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ALLOC_GROW(branches, nb + 1, alloc);
		branches[nb++] = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		store_sqlerr(s, "migrating branches from schema 1");
		goto out;
	}
	for (size_t i = 0; i < nb; i++)
		if (v1_branch(&m, branches[i]) < 0)
			goto out;
	if (store_write_dict(s, m.d, &m.trie) < 0 ||
	    store_exec(s, "DROP TABLE v1_profiles; DROP TABLE v1_segtree; DROP TABLE nodes;"
	                  "DROP TABLE frames; DROP TABLE strings;"
	                  "UPDATE meta SET value = value + 1 WHERE key = 'generation'") < 0)
		goto out;
	ret = 0;
out:
	for (size_t i = 0; i < m.ntext; i++)
		free(m.text[i]);
	free(m.text);
	free(branches);
	idmap_release(&m.strs);
	idmap_release(&m.new_str);
	idmap_release(&m.frames);
	idmap_release(&m.nodes);
	profile_free(m.d);
	trie_release(&m.trie);
	store_cache_reset(s);
	return ret;
}
