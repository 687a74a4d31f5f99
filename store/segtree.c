/* store/segtree.c: runs' profile blobs in chains, and a segment tree per branch over its runs,
 * numbered 0..n-1 in storing order.
 *
 * A branch's runs form blocks of SEGTREE_BLOCK consecutive runs: the first run of a block is
 * coded standalone, each other against the run before it, so decoding any run reads at most a
 * block's blobs. Node (level l, index i) of the tree holds the merged samples of runs
 * [i*2^l, (i+1)*2^l); only levels >= SEGTREE_MIN_LEVEL are stored (table segtree), the block's
 * node being the lowest. A node is written once, when its range completes: the block's node
 * from the runs the writer just coded, each node above from its stored left child and the
 * right child just computed - amortized one merge per run. A range [lo, hi) is the runs of its
 * partial blocks at both ends (decoded) plus at most 2*log2(n) aligned nodes in between. */
#include "store/db.h"
#include "store/load.h"
#include "store/runs.h"
#include "store/segtree.h"
#include "common/error.h"
#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>

int64_t segtree_expected_nodes(int64_t nruns)
{
	int64_t want = 0;
	for (int l = SEGTREE_MIN_LEVEL; l < 63 && (nruns >> l); l++)
		want += nruns >> l;
	return want;
}

/* ---- chains of run blobs ---------------------------------------------------------------- */

struct raw_blob {
	int64_t seq;
	unsigned char *data;
	size_t len;
};

/* The blobs of runs [a, b] of the branch (owned copies), checked to be all there. */
static int read_blobs(struct store *s, int64_t branch_id, int64_t a, int64_t b,
                      struct raw_blob **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *st = store_stmt(s, Q_PROFILES_OF_SEQS);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, branch_id);
	sqlite3_bind_int64(st, 2, a);
	sqlite3_bind_int64(st, 3, b);
	size_t alloc = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ALLOC_GROW(*out, *n + 1, alloc);
		struct raw_blob *r = &(*out)[(*n)++];
		r->seq = sqlite3_column_int64(st, 0);
		r->len = (size_t)sqlite3_column_bytes(st, 1);
		r->data = xmalloc(r->len ? r->len : 1);
		if (r->len)
			memcpy(r->data, sqlite3_column_blob(st, 1), r->len);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return store_sqlerr(s, "reading profiles");
	for (size_t i = 0; i < *n; i++)
		if ((*out)[i].seq != a + (int64_t)i)
			goto missing;
	if ((int64_t)*n != b - a + 1)
		goto missing;
	return 0;
missing:
	return cp_error("database %s is inconsistent: branch %lld lacks the profile of run "
	                "number %lld; restore a backup",
	                s->path, (long long)branch_id, (long long)(a + (int64_t)*n));
}

static void free_blobs(struct raw_blob *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(r[i].data);
	free(r);
}

int runs_decode(struct store *s, int64_t branch_id, int64_t from, int64_t to, run_fn fn, void *ctx)
{
	struct blob_entries prev, cur;
	blob_entries_init(&prev);
	blob_entries_init(&cur);
	int ret = 0;
	for (int64_t blk = from - from % SEGTREE_BLOCK; blk <= to && !ret; blk += SEGTREE_BLOCK) {
		int64_t end = blk + SEGTREE_BLOCK - 1 < to ? blk + SEGTREE_BLOCK - 1 : to;
		struct raw_blob *raw;
		size_t n;
		if (read_blobs(s, branch_id, blk, end, &raw, &n) < 0) {
			ret = -1;
			break;
		}
		for (size_t i = 0; i < n && !ret; i++) {
			cur.n = 0;
			/* a block's first run is standalone: a delta there is malformed */
			if (blob_decode(raw[i].data, raw[i].len, 0, i ? &prev : NULL, &cur) < 0) {
				char what[96];
				snprintf(what, sizeof(what),
				         "profile of run number %lld of branch %lld",
				         (long long)raw[i].seq, (long long)branch_id);
				ret = store_corrupt(s, what);
				break;
			}
			if (raw[i].seq >= from)
				ret = fn(ctx, raw[i].seq, &cur);
			struct blob_entries t = prev;
			prev = cur;
			cur = t;
		}
		free_blobs(raw, n);
	}
	blob_entries_release(&prev);
	blob_entries_release(&cur);
	return ret;
}

int runs_put(struct store *s, int64_t run_id, int64_t seq, const struct blob_entries *e,
             const struct blob_entries *prev)
{
	struct strbuf sb = STRBUF_INIT;
	if (seq % SEGTREE_BLOCK == 0 || !prev)
		blob_encode_full(&sb, e);
	else
		blob_encode_delta(&sb, e, prev);
	int ret = -1;
	sqlite3_stmt *st = store_stmt(s, Q_PROFILE_PUT);
	if (st) {
		sqlite3_bind_int64(st, 1, run_id);
		sqlite3_bind_blob(st, 2, sb.buf, (int)sb.len, SQLITE_STATIC);
		ret = store_step_done(s, st, "storing a profile");
	}
	strbuf_release(&sb);
	return ret;
}

/* ---- tree nodes ------------------------------------------------------------------------- */

static int segtree_load(struct store *s, int64_t branch_id, unsigned level, int64_t idx,
                        struct blob_entries *out)
{
	sqlite3_stmt *st = store_stmt(s, Q_SEG_GET);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, SEG_KEY(branch_id, level, idx));
	int rc = sqlite3_step(st);
	int ret = 0;
	if (rc == SQLITE_ROW) {
		out->n = 0;
		if (blob_decode_full(sqlite3_column_blob(st, 0),
		                     (size_t)sqlite3_column_bytes(st, 0), out) < 0)
			ret = store_corrupt(s, "segment tree node");
	}
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return cp_error("database %s is inconsistent: segment tree node (%u, %lld) of "
		                "branch %lld is missing; run 'ciprof gc' to rebuild it",
		                s->path, level, (long long)idx, (long long)branch_id);
	if (rc != SQLITE_ROW)
		return store_sqlerr(s, "reading the segment tree");
	return ret;
}

static int segtree_put(struct store *s, int64_t branch_id, unsigned level, int64_t idx,
                       const struct blob_entries *e)
{
	struct strbuf sb = STRBUF_INIT;
	blob_encode_full(&sb, e);
	sqlite3_stmt *st = store_stmt(s, Q_SEG_PUT);
	int ret = -1;
	if (st) {
		sqlite3_bind_int64(st, 1, SEG_KEY(branch_id, level, idx));
		sqlite3_bind_blob(st, 2, sb.buf, (int)sb.len, SQLITE_STATIC);
		ret = store_step_done(s, st, "writing the segment tree");
	}
	strbuf_release(&sb);
	return ret;
}

int segtree_append(struct store *s, int64_t branch_id, int64_t seq,
                   const struct blob_entries *block_sum)
{
	uint64_t end = (uint64_t)seq + 1;
	if (end % SEGTREE_BLOCK)
		return 0;
	if (segtree_put(s, branch_id, SEGTREE_MIN_LEVEL, (int64_t)(end / SEGTREE_BLOCK) - 1,
	                block_sum) < 0)
		return -1;
	struct blob_entries cur, left, merged;
	blob_entries_init(&left);
	blob_entries_init(&merged);
	blob_entries_init(&cur);
	blob_entries_copy(&cur, block_sum);
	int ret = 0;
	/* cur = node (level - 1, end/2^(level-1) - 1), the right child of the node completing */
	for (unsigned level = SEGTREE_MIN_LEVEL + 1;
	     level <= SEGTREE_MAX_LEVEL && !(end & ((1ull << level) - 1)); level++) {
		int64_t right_idx = (int64_t)(end >> (level - 1)) - 1;
		if (segtree_load(s, branch_id, level - 1, right_idx - 1, &left) < 0) {
			ret = -1;
			break;
		}
		blob_merge(&left, &cur, &merged);
		if (segtree_put(s, branch_id, level, (int64_t)(end >> level) - 1, &merged) < 0) {
			ret = -1;
			break;
		}
		struct blob_entries t = cur;
		cur = merged;
		merged = t;
	}
	blob_entries_release(&cur);
	blob_entries_release(&left);
	blob_entries_release(&merged);
	return ret;
}

struct acc {
	struct blob_entries *out, tmp;
};

static int accumulate(void *ctx, int64_t seq, const struct blob_entries *e)
{
	struct acc *a = ctx;
	(void)seq;
	blob_accumulate(a->out, e, &a->tmp);
	return 0;
}

int segtree_query(struct store *s, int64_t branch_id, int64_t lo, int64_t hi,
                  struct blob_entries *out)
{
	struct acc a = {.out = out};
	blob_entries_init(&a.tmp);
	struct blob_entries node;
	blob_entries_init(&node);
	out->n = 0;
	int ret = 0;
	uint64_t x = (uint64_t)(lo < 0 ? 0 : lo), b = (uint64_t)(hi < 0 ? 0 : hi);
	if (x < b && x % SEGTREE_BLOCK) { /* the partial block at the start */
		uint64_t end = x - x % SEGTREE_BLOCK + SEGTREE_BLOCK;
		if (end > b)
			end = b;
		ret = runs_decode(s, branch_id, (int64_t)x, (int64_t)end - 1, accumulate, &a);
		x = end;
	}
	while (!ret && x + SEGTREE_BLOCK <= b) {
		/* The largest aligned stored node starting at x that fits in [x, b). */
		unsigned level = SEGTREE_MIN_LEVEL;
		while (level < SEGTREE_MAX_LEVEL && !(x & ((1ull << (level + 1)) - 1)) &&
		       x + (1ull << (level + 1)) <= b)
			level++;
		ret = segtree_load(s, branch_id, level, (int64_t)(x >> level), &node);
		if (!ret)
			blob_accumulate(out, &node, &a.tmp);
		x += 1ull << level;
	}
	if (!ret && x < b) /* the partial block at the end */
		ret = runs_decode(s, branch_id, (int64_t)x, (int64_t)b - 1, accumulate, &a);
	blob_entries_release(&a.tmp);
	blob_entries_release(&node);
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

static int merge_runs(struct store *s, const struct store_query *q, struct profile **out,
                      size_t *nruns, int64_t **ids)
{
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
	                       "SELECT id, " RUN_STATS_COLS " FROM runs WHERE branch_id = ?1 "
	                       "AND seq >= ?2 AND seq < ?3 ORDER BY seq",
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
		struct profile_stats row = {0};
		run_stats_read(agg, 1, &row);
		profile_stats_add(&p->stats, &row);
	}
	sqlite3_finalize(agg);
	if (rc != SQLITE_DONE) {
		free(idv);
		store_sqlerr(s, "summing run stats");
		goto out;
	}
	profile_stats_finish(&p->stats);
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
	/* One snapshot: a gc renumbering meanwhile must not mix old blobs with new ids. */
	if (store_begin_read(s) < 0)
		return -1;
	int ret = merge_runs(s, q, out, nruns, ids);
	store_end_read(s);
	return ret;
}
