/* store/gc.c: deleting old runs while keeping every segment tree exact. Deleted runs leave
 * gaps in their branches' numbering, so each affected branch is renumbered and its tree
 * rebuilt from its runs (O(runs of the branch) merges: correctness over speed, see
 * docs/store.md). Then stack nodes, frames and strings no remaining run uses are pruned, and
 * the generation is bumped so that caches of other processes forget the deleted ids. */
#include "store/internal.h"
#include "common/error.h"
#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int exec_bind(struct store *s, const char *sql, int64_t a, int64_t b, int64_t *changes)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "collecting garbage");
	int n = sqlite3_bind_parameter_count(st);
	if (n >= 1)
		sqlite3_bind_int64(st, 1, a);
	if (n >= 2)
		sqlite3_bind_int64(st, 2, b);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return store_sqlerr(s, "collecting garbage");
	if (changes)
		*changes = sqlite3_changes64(s->db);
	return 0;
}

static int select_ids(struct store *s, const char *sql, int64_t arg, int64_t **out, size_t *n)
{
	sqlite3_stmt *st;
	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "collecting garbage");
	if (sqlite3_bind_parameter_count(st) >= 1)
		sqlite3_bind_int64(st, 1, arg);
	size_t alloc = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ALLOC_GROW(*out, *n + 1, alloc);
		(*out)[(*n)++] = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return store_sqlerr(s, "collecting garbage");
	return 0;
}

/* Renumbers the branch's runs 0..m-1 in id order and rebuilds its segment tree. */
static int renumber_branch(struct store *s, int64_t branch_id)
{
	int64_t *ids;
	size_t n;
	if (select_ids(s, "SELECT id FROM runs WHERE branch_id = ?1 ORDER BY id", branch_id, &ids,
	               &n) < 0)
		return -1;
	int ret = -1;
	for (size_t i = 0; i < n; i++)
		if (exec_bind(s, "UPDATE runs SET seq = ?2 WHERE id = ?1", ids[i], (int64_t)i,
		              NULL) < 0)
			goto out;
	if (n == 0) {
		if (exec_bind(s, "DELETE FROM branches WHERE id = ?1", branch_id, 0, NULL) < 0 ||
		    exec_bind(s, "DELETE FROM segtree WHERE branch_id = ?1", branch_id, 0, NULL) <
		            0)
			goto out;
	} else {
		if (exec_bind(s, "UPDATE branches SET nruns = ?2 WHERE id = ?1", branch_id,
		              (int64_t)n, NULL) < 0 ||
		    segtree_rebuild(s, branch_id, (int64_t)n) < 0)
			goto out;
	}
	ret = 0;
out:
	free(ids);
	return ret;
}

/* Marks every node a remaining profile uses (and its ancestors), deletes the rest, then the
 * frames and strings nothing references any more. */
static int prune(struct store *s, struct store_gc_result *r)
{
	int ret = -1;
	int64_t max_node = 0;
	unsigned char *used = NULL;
	int64_t *parent = NULL;
	sqlite3_stmt *st = NULL;
	struct blob_entries e;
	blob_entries_init(&e);

	if (sqlite3_prepare_v2(s->db, "SELECT coalesce(max(id), 0) FROM nodes", -1, &st, NULL) !=
	            SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		store_sqlerr(s, "collecting garbage");
		goto out;
	}
	max_node = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	size_t nn = (size_t)max_node + 1;
	used = xcalloc(nn, 1);
	parent = xcalloc(nn, sizeof(*parent));
	if (sqlite3_prepare_v2(s->db, "SELECT id, parent FROM nodes", -1, &st, NULL) != SQLITE_OK) {
		store_sqlerr(s, "collecting garbage");
		goto out;
	}
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0), par = sqlite3_column_int64(st, 1);
		if (id > 0 && id <= max_node)
			parent[id] = par >= 0 && par < id ? par : 0;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (rc != SQLITE_DONE) {
		store_sqlerr(s, "collecting garbage");
		goto out;
	}
	if (sqlite3_prepare_v2(s->db, "SELECT blob FROM profiles", -1, &st, NULL) != SQLITE_OK) {
		store_sqlerr(s, "collecting garbage");
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		e.n = 0;
		if (blob_decode(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0), 0,
		                &e) < 0) {
			char *msg = xstrdup(cp_last_error());
			cp_error("database %s is corrupt: %s; restore a backup", s->path, msg);
			free(msg);
			goto out;
		}
		for (size_t i = 0; i < e.n; i++)
			for (uint64_t n = e.e[i].node; n && n < nn && !used[n];
			     n = (uint64_t)parent[n])
				used[n] = 1;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (rc != SQLITE_DONE) {
		store_sqlerr(s, "collecting garbage");
		goto out;
	}
	if (store_exec(s, "CREATE TEMP TABLE IF NOT EXISTS gc_dead(id INTEGER PRIMARY KEY);"
	                  "DELETE FROM gc_dead") < 0)
		goto out;
	for (int64_t id = 1; id <= max_node; id++) {
		if (used[id])
			continue;
		if (exec_bind(s, "INSERT OR IGNORE INTO gc_dead(id) VALUES (?1)", id, 0, NULL) < 0)
			goto out;
	}
	int64_t n;
	if (exec_bind(s, "DELETE FROM nodes WHERE id IN (SELECT id FROM gc_dead)", 0, 0, &n) < 0)
		goto out;
	r->nodes_pruned = (size_t)n;
	if (exec_bind(s, "DELETE FROM frames WHERE id NOT IN (SELECT frame FROM nodes)", 0, 0, &n) <
	    0)
		goto out;
	r->frames_pruned = (size_t)n;
	if (exec_bind(s,
	              "DELETE FROM strings WHERE id NOT IN (SELECT function FROM frames UNION "
	              "SELECT module FROM frames UNION SELECT file FROM frames UNION "
	              "SELECT test FROM profiles)",
	              0, 0, &n) < 0)
		goto out;
	r->strings_pruned = (size_t)n;
	if (store_exec(s, "DROP TABLE gc_dead") < 0)
		goto out;
	ret = 0;
out:
	sqlite3_finalize(st);
	free(used);
	free(parent);
	blob_entries_release(&e);
	return ret;
}

int store_gc(struct store *s, const struct store_gc_opts *o, struct store_gc_result *r)
{
	memset(r, 0, sizeof(*r));
	if (s->readonly)
		return cp_error("database %s was opened read-only; gc needs to write", s->path);
	int64_t now = o->now ? o->now : (int64_t)time(NULL);
	int64_t cutoff =
	        o->older_than_days > 0 ? now - (int64_t)o->older_than_days * 86400 : INT64_MIN;
	int64_t keep = o->keep_runs ? (int64_t)o->keep_runs : -1;
	int64_t *branches = NULL;
	size_t nbranches = 0;
	if (store_begin(s) < 0)
		return -1;
	if (store_exec(s, "CREATE TEMP TABLE IF NOT EXISTS gc_runs(id INTEGER PRIMARY KEY);"
	                  "DELETE FROM gc_runs") < 0 ||
	    exec_bind(s,
	              "INSERT INTO gc_runs(id) SELECT id FROM runs WHERE created_at < ?1 OR "
	              "(?2 >= 0 AND id NOT IN (SELECT id FROM runs ORDER BY id DESC LIMIT ?2))",
	              cutoff, keep, NULL) < 0)
		goto fail;
	if (select_ids(s,
	               "SELECT DISTINCT branch_id FROM runs WHERE id IN (SELECT id FROM gc_runs)",
	               0, &branches, &nbranches) < 0)
		goto fail;
	int64_t n;
	if (exec_bind(s, "DELETE FROM run_tags WHERE run IN (SELECT id FROM gc_runs)", 0, 0, NULL) <
	            0 ||
	    exec_bind(s, "DELETE FROM profiles WHERE run IN (SELECT id FROM gc_runs)", 0, 0, NULL) <
	            0 ||
	    exec_bind(s, "DELETE FROM runs WHERE id IN (SELECT id FROM gc_runs)", 0, 0, &n) < 0)
		goto fail;
	r->runs_deleted = (size_t)n;
	for (size_t i = 0; i < nbranches; i++)
		if (renumber_branch(s, branches[i]) < 0)
			goto fail;
	r->branches_rebuilt = nbranches;
	if (r->runs_deleted) {
		if (prune(s, r) < 0 ||
		    store_exec(s, "UPDATE meta SET value = value + 1 WHERE key = 'generation'") < 0)
			goto fail;
	}
	if (store_exec(s, "DROP TABLE gc_runs") < 0)
		goto fail;
	int64_t kept = 0;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM runs", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		kept = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	r->runs_kept = (size_t)kept;
	if (store_commit(s) < 0)
		goto fail_committed;
	free(branches);
	store_cache_reset(s);
	/* Give the freed pages back to the main file's free list; readers may keep it busy,
	 * which only delays the truncation. */
	sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	return 0;
fail:
	store_rollback(s);
fail_committed:
	free(branches);
	memset(r, 0, sizeof(*r));
	return -1;
}
