/* store/gc.c: deleting old runs while keeping every segment tree exact. Ids in the dictionary
 * are dense and implicit, and run profiles are coded against each other, so gc rewrites what
 * it keeps: it decodes every branch's runs once to find the stack nodes, frames and strings
 * still used, numbers those densely (in their old order, so sorted entries stay sorted),
 * decodes again to re-code each kept run under its new number against its new predecessor,
 * rebuilds the trees as it goes, and writes the new dictionary. O(stored runs) decoding and
 * coding: correctness over speed (docs/store.md). The generation is bumped so that other
 * processes' in-memory dictionaries are dropped. */
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

/* A branch's runs in seq order: their ids and whether gc deletes them. */
struct branch_runs {
	int64_t branch_id;
	int64_t *ids;
	unsigned char *dead;
	size_t n;
};

static int load_branch(struct store *s, int64_t branch_id, struct branch_runs *b)
{
	memset(b, 0, sizeof(*b));
	b->branch_id = branch_id;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db,
	                       "SELECT seq, id, id IN (SELECT id FROM gc_runs) FROM runs "
	                       "WHERE branch_id = ?1 ORDER BY seq",
	                       -1, &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "collecting garbage");
	sqlite3_bind_int64(st, 1, branch_id);
	size_t a1 = 0, a2 = 0;
	int rc, ret = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_int64(st, 0) != (int64_t)b->n) {
			ret = cp_error("database %s: branch %lld's runs are not numbered 0..n-1; "
			               "restore a backup",
			               s->path, (long long)branch_id);
			break;
		}
		ALLOC_GROW(b->ids, b->n + 1, a1);
		ALLOC_GROW(b->dead, b->n + 1, a2);
		b->ids[b->n] = sqlite3_column_int64(st, 1);
		b->dead[b->n] = (unsigned char)sqlite3_column_int(st, 2);
		b->n++;
	}
	sqlite3_finalize(st);
	if (!ret && rc != SQLITE_DONE)
		return store_sqlerr(s, "collecting garbage");
	return ret;
}

static void branch_release(struct branch_runs *b)
{
	free(b->ids);
	free(b->dead);
}

/* ---- pass 1: what the kept runs use ------------------------------------------------------ */

struct marks {
	const struct branch_runs *b;
	const struct profile *d;
	const struct trie *t;
	unsigned char *node, *frame, *str;
};

static int mark_run(void *ctx, int64_t seq, const struct blob_entries *e)
{
	struct marks *m = ctx;
	if (m->b->dead[seq])
		return 0;
	for (size_t i = 0; i < e->n; i++) {
		if (e->e[i].test >= m->d->nstr || e->e[i].node >= m->t->n)
			return cp_error("profile of run %lld names an unknown test or stack node",
			                (long long)m->b->ids[seq]);
		m->str[e->e[i].test] = 1;
		for (uint64_t n = e->e[i].node; n && !m->node[n]; n = m->t->nodes[n].parent)
			m->node[n] = 1;
	}
	return 0;
}

/* ---- pass 2: re-code what is kept -------------------------------------------------------- */

struct recode {
	struct store *s;
	const struct branch_runs *b;
	const uint32_t *new_str, *new_node;
	int64_t next; /* the next kept run's new seq */
	struct blob_entries prev, cur, sum, tmp;
	sqlite3_stmt *renumber;
};

static int recode_run(void *ctx, int64_t seq, const struct blob_entries *e)
{
	struct recode *r = ctx;
	if (r->b->dead[seq])
		return 0;
	r->cur.n = 0;
	for (size_t i = 0; i < e->n; i++) /* the maps keep the order: still sorted */
		blob_entries_push(&r->cur, r->new_str[e->e[i].test], r->new_node[e->e[i].node],
		                  e->e[i].count);
	int64_t id = r->b->ids[seq];
	if (r->next % SEGTREE_BLOCK == 0)
		r->sum.n = 0;
	blob_accumulate(&r->sum, &r->cur, &r->tmp);
	if (runs_put(r->s, id, r->next, &r->cur, &r->prev) < 0 ||
	    segtree_append(r->s, r->b->branch_id, r->next, &r->sum) < 0)
		return -1;
	sqlite3_reset(r->renumber);
	sqlite3_bind_int64(r->renumber, 1, id);
	sqlite3_bind_int64(r->renumber, 2, r->next);
	if (store_step_done(r->s, r->renumber, "renumbering runs") < 0)
		return -1;
	struct blob_entries t = r->prev;
	r->prev = r->cur;
	r->cur = t;
	r->next++;
	return 0;
}

static int recode_branch(struct store *s, const struct branch_runs *b, const uint32_t *new_str,
                         const uint32_t *new_node)
{
	struct recode r = {.s = s, .b = b, .new_str = new_str, .new_node = new_node};
	blob_entries_init(&r.prev);
	blob_entries_init(&r.cur);
	blob_entries_init(&r.sum);
	blob_entries_init(&r.tmp);
	int ret = -1;
	if (sqlite3_prepare_v2(s->db, "UPDATE runs SET seq = ?2 WHERE id = ?1", -1, &r.renumber,
	                       NULL) != SQLITE_OK) {
		store_sqlerr(s, "renumbering runs");
		goto out;
	}
	if (exec_bind(s, "DELETE FROM segtree WHERE id >= ?1 AND id < ?2",
	              SEG_KEY(b->branch_id, 0, 0), SEG_KEY(b->branch_id + 1, 0, 0), NULL) < 0 ||
	    (b->n && runs_decode(s, b->branch_id, 0, (int64_t)b->n - 1, recode_run, &r) < 0))
		goto out;
	if (r.next)
		ret = exec_bind(s, "UPDATE branches SET nruns = ?2 WHERE id = ?1", b->branch_id,
		                r.next, NULL);
	else
		ret = exec_bind(s, "DELETE FROM branches WHERE id = ?1", b->branch_id, 0, NULL);
out:
	sqlite3_finalize(r.renumber);
	blob_entries_release(&r.prev);
	blob_entries_release(&r.cur);
	blob_entries_release(&r.sum);
	blob_entries_release(&r.tmp);
	return ret;
}

/* Decodes everything kept, renumbers the dictionary densely and re-codes every branch. */
static int rewrite(struct store *s, struct store_gc_result *res)
{
	const struct profile *d = s->dict;
	const struct trie *t = &s->trie;
	struct marks m = {.d = d, .t = t};
	m.node = xcalloc(t->n, 1);
	m.frame = xcalloc(d->nframes ? d->nframes : 1, 1);
	m.str = xcalloc(d->nstr, 1);
	uint32_t *new_node = xcalloc(t->n, sizeof(*new_node));
	uint32_t *new_frame = xcalloc(d->nframes ? d->nframes : 1, sizeof(*new_frame));
	uint32_t *new_str = xcalloc(d->nstr, sizeof(*new_str));
	struct profile *nd = profile_new();
	struct trie nt;
	trie_init(&nt);
	struct branch_runs *br = NULL;
	size_t nbr = 0, alloc = 0;
	int ret = -1, rc;

	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, "SELECT id FROM branches ORDER BY id", -1, &st, NULL) !=
	    SQLITE_OK) {
		store_sqlerr(s, "collecting garbage");
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ALLOC_GROW(br, nbr + 1, alloc);
		int64_t id = sqlite3_column_int64(st, 0);
		if (load_branch(s, id, &br[nbr]) < 0) {
			sqlite3_finalize(st);
			goto out;
		}
		nbr++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		store_sqlerr(s, "collecting garbage");
		goto out;
	}
	for (size_t i = 0; i < nbr; i++) {
		m.b = &br[i];
		if (br[i].n &&
		    runs_decode(s, br[i].branch_id, 0, (int64_t)br[i].n - 1, mark_run, &m) < 0)
			goto out;
	}
	/* Live frames and strings, then the new dense numbering in the old order. */
	for (size_t i = 1; i < t->n; i++)
		if (m.node[i])
			m.frame[t->nodes[i].frame] = 1;
	for (size_t i = 0; i < d->nframes; i++)
		if (m.frame[i]) {
			m.str[d->frames[i].function] = 1;
			m.str[d->frames[i].module] = 1;
			m.str[d->frames[i].file] = 1;
		}
	for (size_t i = 1; i < d->nstr; i++)
		if (m.str[i])
			new_str[i] = profile_intern(nd, profile_str(d, (uint32_t)i));
	for (size_t i = 0; i < d->nframes; i++)
		if (m.frame[i]) {
			struct profile_frame f = d->frames[i];
			f.function = new_str[f.function];
			f.module = new_str[f.module];
			f.file = new_str[f.file];
			new_frame[i] = profile_frame(nd, &f);
		}
	int added;
	for (size_t i = 1; i < t->n; i++)
		if (m.node[i])
			new_node[i] = trie_node(&nt, new_node[t->nodes[i].parent],
			                        new_frame[t->nodes[i].frame], &added);
	res->nodes_pruned = t->n - nt.n;
	res->frames_pruned = d->nframes - nd->nframes;
	res->strings_pruned = d->nstr - nd->nstr;

	for (size_t i = 0; i < nbr; i++)
		if (recode_branch(s, &br[i], new_str, new_node) < 0)
			goto out;
	if (store_exec(s, "DELETE FROM dict") < 0 || store_write_dict(s, nd, &nt) < 0)
		goto out;
	ret = 0;
out:
	for (size_t i = 0; i < nbr; i++)
		branch_release(&br[i]);
	free(br);
	free(m.node);
	free(m.frame);
	free(m.str);
	free(new_node);
	free(new_frame);
	free(new_str);
	profile_free(nd);
	trie_release(&nt);
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
	int64_t n, branches;
	if (store_begin(s) < 0)
		return -1;
	if (store_exec(s, "CREATE TEMP TABLE IF NOT EXISTS gc_runs(id INTEGER PRIMARY KEY);"
	                  "DELETE FROM gc_runs") < 0 ||
	    exec_bind(s,
	              "INSERT INTO gc_runs(id) SELECT id FROM runs WHERE created_at < ?1 OR "
	              "(?2 >= 0 AND id NOT IN (SELECT id FROM runs ORDER BY id DESC LIMIT ?2))",
	              cutoff, keep, &n) < 0)
		goto fail;
	if (n) {
		if (store_query_int(s,
		                    "SELECT count(DISTINCT branch_id) FROM runs WHERE id IN "
		                    "(SELECT id FROM gc_runs)",
		                    &branches, "collecting garbage") < 0 ||
		    dict_sync(s) < 0 || rewrite(s, r) < 0)
			goto fail;
		r->branches_rebuilt = (size_t)branches;
		if (exec_bind(s, "DELETE FROM results WHERE run IN (SELECT id FROM gc_runs)", 0, 0,
		              NULL) < 0 ||
		    exec_bind(s, "DELETE FROM run_tags WHERE run IN (SELECT id FROM gc_runs)", 0, 0,
		              NULL) < 0 ||
		    exec_bind(s, "DELETE FROM profiles WHERE run IN (SELECT id FROM gc_runs)", 0, 0,
		              NULL) < 0 ||
		    exec_bind(s, "DELETE FROM runs WHERE id IN (SELECT id FROM gc_runs)", 0, 0,
		              &n) < 0 ||
		    store_exec(s, "UPDATE meta SET value = value + 1 WHERE key = 'generation'") < 0)
			goto fail;
		r->runs_deleted = (size_t)n;
	}
	int64_t kept;
	if (store_exec(s, "DROP TABLE gc_runs") < 0 ||
	    store_query_int(s, "SELECT count(*) FROM runs", &kept, "collecting garbage") < 0)
		goto fail;
	r->runs_kept = (size_t)kept;
	if (store_commit(s) < 0)
		goto fail_committed;
	store_cache_reset(s);
	/* Give freed pages back (files made with schema 2 vacuum incrementally), then shrink
	 * the WAL; readers may keep it busy, which only delays the truncation. */
	if (r->runs_deleted)
		sqlite3_exec(s->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL);
	sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	return 0;
fail:
	store_rollback(s);
fail_committed:
	memset(r, 0, sizeof(*r));
	return -1;
}
