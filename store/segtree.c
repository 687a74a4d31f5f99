/* store/segtree.c: a segment tree per branch over its runs, numbered 0..n-1 in storing order.
 * Node (level l, index i) holds the merged samples of runs [i*2^l, (i+1)*2^l); level 0 is the
 * runs' own per-test blobs, so only levels >= 1 are stored (table segtree, multi blobs). A node
 * is written once, when its range completes: appending run k merges the freshly completed
 * nodes bottom up, each from the node just computed and its stored left sibling - amortized one
 * merge per run. Any range [lo, hi) is the union of at most 2*log2(n) aligned nodes. */
#include "store/internal.h"
#include "common/error.h"
#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define SEGTREE_MAX_LEVEL 62

static int decode_error(struct store *s, const char *what)
{
	char *msg = xstrdup(cp_last_error());
	cp_error("database %s is corrupt: %s: %s; restore a backup, or run 'ciprof gc' to "
	         "rebuild the segment trees",
	         s->path, what, msg);
	free(msg);
	return -1;
}

int segtree_load(struct store *s, int64_t branch_id, unsigned level, int64_t idx,
                 struct blob_entries *out)
{
	sqlite3_stmt *st = store_stmt(s, level ? Q_SEG_GET : Q_PROFILES_OF_SEQ);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, branch_id);
	int rc, rows = 0;
	if (level) {
		sqlite3_bind_int(st, 2, (int)level);
		sqlite3_bind_int64(st, 3, idx);
	} else {
		sqlite3_bind_int64(st, 2, idx);
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		rows++;
		int c = level ? 0 : 1;
		uint64_t test = level ? 0 : (uint64_t)sqlite3_column_int64(st, 0);
		if (blob_decode(sqlite3_column_blob(st, c), (size_t)sqlite3_column_bytes(st, c),
		                test, out) < 0) {
			sqlite3_reset(st);
			return decode_error(s, "segment tree node");
		}
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return store_sqlerr(s, "reading the segment tree");
	if (level && !rows)
		return cp_error("database %s is inconsistent: segment tree node (%u, %lld) of "
		                "branch %lld is missing; run 'ciprof gc' to rebuild it",
		                s->path, level, (long long)idx, (long long)branch_id);
	return 0; /* level 0 appends several per-test lists: callers normalize */
}

static int segtree_put(struct store *s, int64_t branch_id, unsigned level, int64_t idx,
                       const struct blob_entries *e)
{
	struct strbuf sb = STRBUF_INIT;
	blob_encode_multi(&sb, e);
	sqlite3_stmt *st = store_stmt(s, Q_SEG_PUT);
	int ret = -1;
	if (!st)
		goto out;
	sqlite3_bind_int64(st, 1, branch_id);
	sqlite3_bind_int(st, 2, (int)level);
	sqlite3_bind_int64(st, 3, idx);
	sqlite3_bind_blob(st, 4, sb.buf, (int)sb.len, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		store_sqlerr(s, "writing the segment tree");
		goto out;
	}
	ret = 0;
out:
	strbuf_release(&sb);
	return ret;
}

int segtree_append(struct store *s, int64_t branch_id, int64_t seq, const struct blob_entries *run)
{
	struct blob_entries cur, left, merged;
	blob_entries_init(&cur);
	blob_entries_init(&left);
	blob_entries_init(&merged);
	int ret = -1;
	/* cur = node (level - 1, end/2^(level-1) - 1), the right child of the node completing. */
	ALLOC_GROW(cur.e, run->n ? run->n : 1, cur.alloc);
	if (run->n)
		memcpy(cur.e, run->e, run->n * sizeof(*run->e));
	cur.n = run->n;
	uint64_t end = (uint64_t)seq + 1;
	for (unsigned level = 1; level <= SEGTREE_MAX_LEVEL && !(end & ((1ull << level) - 1));
	     level++) {
		int64_t right_idx = (int64_t)(end >> (level - 1)) - 1;
		left.n = 0;
		if (segtree_load(s, branch_id, level - 1, right_idx - 1, &left) < 0)
			goto out;
		blob_entries_normalize(&left);
		blob_merge(&left, &cur, &merged);
		if (segtree_put(s, branch_id, level, (int64_t)(end >> level) - 1, &merged) < 0)
			goto out;
		struct blob_entries t = cur;
		cur = merged;
		merged = t;
	}
	ret = 0;
out:
	blob_entries_release(&cur);
	blob_entries_release(&left);
	blob_entries_release(&merged);
	return ret;
}

int segtree_query(struct store *s, int64_t branch_id, int64_t lo, int64_t hi,
                  struct blob_entries *out)
{
	struct blob_entries node, merged;
	blob_entries_init(&node);
	blob_entries_init(&merged);
	out->n = 0;
	int ret = -1;
	uint64_t a = (uint64_t)(lo < 0 ? 0 : lo), b = (uint64_t)(hi < 0 ? 0 : hi);
	while (a < b) {
		/* The largest aligned block starting at a that fits in [a, b). */
		unsigned level = 0;
		while (level < SEGTREE_MAX_LEVEL && !(a & ((1ull << (level + 1)) - 1)) &&
		       a + (1ull << (level + 1)) <= b)
			level++;
		node.n = 0;
		if (segtree_load(s, branch_id, level, (int64_t)(a >> level), &node) < 0)
			goto out;
		blob_entries_normalize(&node);
		blob_merge(out, &node, &merged);
		struct blob_entries t = *out;
		*out = merged;
		merged = t;
		a += 1ull << level;
	}
	ret = 0;
out:
	blob_entries_release(&node);
	blob_entries_release(&merged);
	return ret;
}

int segtree_rebuild(struct store *s, int64_t branch_id, int64_t nruns)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, "DELETE FROM segtree WHERE branch_id = ?1", -1, &st, NULL) !=
	    SQLITE_OK)
		return store_sqlerr(s, "clearing a segment tree");
	sqlite3_bind_int64(st, 1, branch_id);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return store_sqlerr(s, "clearing a segment tree");
	struct blob_entries run;
	blob_entries_init(&run);
	int ret = 0;
	for (int64_t seq = 0; seq < nruns && !ret; seq++) {
		run.n = 0;
		ret = segtree_load(s, branch_id, 0, seq, &run);
		if (!ret) {
			blob_entries_normalize(&run);
			ret = segtree_append(s, branch_id, seq, &run);
		}
	}
	blob_entries_release(&run);
	return ret;
}

/* ---- queries over ranges of runs -------------------------------------------------------- */

static int one_int(struct store *s, const char *sql, int64_t branch_id, int64_t arg,
                   const char *text, int64_t *out, int *found)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "resolving a range of runs");
	sqlite3_bind_int64(st, 1, branch_id);
	if (text)
		sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
	else
		sqlite3_bind_int64(st, 2, arg);
	int rc = sqlite3_step(st);
	*found = rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL;
	if (*found)
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store_sqlerr(s, "resolving a range of runs");
	return 0;
}

int store_merge_runs(struct store *s, const struct store_query *q, struct profile **out,
                     size_t *nruns, int64_t **ids)
{
	*out = NULL;
	if (nruns)
		*nruns = 0;
	if (ids)
		*ids = NULL;
	if (!q->branch)
		return cp_error("a range of runs needs a branch");
	int64_t branch_id = 0, count = 0;
	sqlite3_stmt *st = store_stmt(s, Q_BRANCH_FIND);
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, q->branch, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		branch_id = sqlite3_column_int64(st, 0);
		count = sqlite3_column_int64(st, 1);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store_sqlerr(s, "looking up a branch");
	if (rc == SQLITE_DONE)
		return cp_error("no runs of branch '%s' in %s; 'ciprof runs' lists the stored runs",
		                q->branch, s->path);

	int64_t lo = 0, hi = count, v;
	int found;
	if (q->up_to_commit) {
		if (one_int(s,
		            "SELECT max(seq) FROM runs WHERE branch_id = ?1 AND "
		            "substr(commit_id, 1, length(?2)) = ?2",
		            branch_id, 0, q->up_to_commit, &v, &found) < 0)
			return -1;
		if (!found || !*q->up_to_commit)
			return cp_error("no run of branch '%s' at commit %s in %s", q->branch,
			                q->up_to_commit, s->path);
		hi = v + 1;
	} else if (q->to_run) {
		if (one_int(s, "SELECT max(seq) FROM runs WHERE branch_id = ?1 AND id <= ?2",
		            branch_id, q->to_run, NULL, &v, &found) < 0)
			return -1;
		hi = found ? v + 1 : 0;
	}
	if (q->from_run) {
		if (one_int(s, "SELECT min(seq) FROM runs WHERE branch_id = ?1 AND id >= ?2",
		            branch_id, q->from_run, NULL, &v, &found) < 0)
			return -1;
		lo = found ? v : count;
	}
	if (q->last_n && hi - lo > (int64_t)q->last_n)
		lo = hi - (int64_t)q->last_n;
	if (lo > hi)
		lo = hi;

	struct blob_entries e;
	blob_entries_init(&e);
	struct profile *p = profile_new();
	struct profile_builder b;
	builder_init(&b, s, p);
	int ret = -1;
	if (segtree_query(s, branch_id, lo, hi, &e) < 0 || builder_add(&b, &e) < 0)
		goto out;
	sqlite3_stmt *agg;
	if (sqlite3_prepare_v2(s->db,
	                       "SELECT id, samples, lost, processes, threads, cpu_seconds, "
	                       "wall_seconds, hz FROM runs WHERE branch_id = ?1 AND seq >= ?2 "
	                       "AND seq < ?3 ORDER BY seq",
	                       -1, &agg, NULL) != SQLITE_OK) {
		store_sqlerr(s, "summing run stats");
		goto out;
	}
	sqlite3_bind_int64(agg, 1, branch_id);
	sqlite3_bind_int64(agg, 2, lo);
	sqlite3_bind_int64(agg, 3, hi);
	int64_t *idv = NULL;
	size_t n = 0, alloc = 0;
	while ((rc = sqlite3_step(agg)) == SQLITE_ROW) {
		ALLOC_GROW(idv, n + 1, alloc);
		idv[n++] = sqlite3_column_int64(agg, 0);
		p->stats.samples += (uint64_t)sqlite3_column_int64(agg, 1);
		p->stats.lost += (uint64_t)sqlite3_column_int64(agg, 2);
		p->stats.processes += (uint64_t)sqlite3_column_int64(agg, 3);
		p->stats.threads += (uint64_t)sqlite3_column_int64(agg, 4);
		p->stats.cpu_seconds += sqlite3_column_double(agg, 5);
		p->stats.wall_seconds += sqlite3_column_double(agg, 6);
		if (sqlite3_column_int(agg, 7) > p->stats.hz)
			p->stats.hz = sqlite3_column_int(agg, 7);
	}
	sqlite3_finalize(agg);
	if (rc != SQLITE_DONE) {
		free(idv);
		store_sqlerr(s, "summing run stats");
		goto out;
	}
	if (p->stats.samples)
		p->stats.period_ns =
		        (uint64_t)(p->stats.cpu_seconds * 1e9 / (double)p->stats.samples);
	if (nruns)
		*nruns = n;
	if (ids)
		*ids = idv;
	else
		free(idv);
	*out = p;
	p = NULL;
	ret = 0;
out:
	builder_release(&b);
	profile_free(p);
	blob_entries_release(&e);
	return ret;
}
