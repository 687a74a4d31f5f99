/* store/check.c: what a database holds (row counts and bytes per table) and whether it is
 * sound (SQLite's integrity check, dictionary chunks without gaps, each branch's runs,
 * profiles and segment tree nodes as many as its run count says). */
#include "store/db.h"
#include "common/error.h"
#include "store/segtree.h"

#include <string.h>

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
	if (rc == SQLITE_ROW && strcmp(store_col_text(st, 0), "ok")) {
		cp_error("database %s is corrupt: %s; restore a backup", s->path,
		         store_col_text(st, 0));
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
			        s->path, store_col_text(st, 1), (long long)runs, (long long)maxseq,
			        (long long)profiles, (long long)nodes, (long long)n,
			        (long long)want);
	}
	sqlite3_finalize(st);
	if (!ret && rc != SQLITE_DONE)
		return store_sqlerr(s, "checking segment trees");
	return ret;
}
