/* store/gc.c: deleting old runs while keeping every segment tree exact. Ids in the dictionary
 * are dense and implicit, and run profiles are coded against each other, so gc rewrites what
 * it keeps: it decodes every branch's runs once to find the stack nodes, frames and strings
 * still used, numbers those densely (in their old order, so sorted entries stay sorted),
 * decodes again to re-code each kept run under its new number against its new predecessor,
 * rebuilds the trees as it goes, and writes the new dictionary. O(stored runs) decoding and
 * coding: correctness over speed (docs/store.md). The generation is bumped so that other
 * processes' in-memory dictionaries are dropped. */
#include "store/db.h"
#include "store/migrate.h"
#include "store/segtree.h"
#include "model/runmeta.h"
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

/* SQL ciprof_imported(command): run_meta_command_imported, so that gc groups imported runs
 * the way report uses them (one fact, in model/runmeta.c). */
static void sql_imported(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	const unsigned char *c = sqlite3_value_text(argv[0]);
	sqlite3_result_int(ctx, c && run_meta_command_imported((const char *)c));
}

/* A group of runs of one branch, commit and command that gc folds into one aggregate: its surviving
 * run id, how many runs it holds, the weighted sum of its runs' entries as pass 1 meets them, then
 * their mean (what pass 2 stores). */
struct fold_group {
	int64_t survivor;
	uint64_t k;
	struct blob_entries sum, mean;
};

/* A branch's runs in seq order: their ids, whether gc deletes them, and the fold group each
 * belongs to (-1: none), with its weight (the runs it holds) and whether it is the group's
 * last run in the branch (where the aggregate goes). */
struct branch_runs {
	int64_t branch_id;
	int64_t *ids;
	unsigned char *dead, *last;
	int64_t *group;
	uint64_t *weight;
	size_t n;
};

static int load_branch(struct store *s, int64_t branch_id, struct branch_runs *b,
                       struct fold_group **groups, size_t *ngroups, size_t *galloc)
{
	memset(b, 0, sizeof(*b));
	b->branch_id = branch_id;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db,
	                       "SELECT r.seq, r.id, r.id IN (SELECT id FROM gc_runs),"
	                       " coalesce(f.survivor, 0), coalesce(f.k, 1) FROM runs r"
	                       " LEFT JOIN gc_fold f ON f.id = r.id"
	                       " WHERE r.branch_id = ?1 ORDER BY r.seq",
	                       -1, &st, NULL) != SQLITE_OK)
		return store_sqlerr(s, "collecting garbage");
	sqlite3_bind_int64(st, 1, branch_id);
	size_t a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, first_group = *ngroups;
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
		ALLOC_GROW(b->last, b->n + 1, a3);
		ALLOC_GROW(b->group, b->n + 1, a4);
		ALLOC_GROW(b->weight, b->n + 1, a5);
		b->ids[b->n] = sqlite3_column_int64(st, 1);
		b->dead[b->n] = (unsigned char)sqlite3_column_int(st, 2);
		b->last[b->n] = 0;
		b->group[b->n] = -1;
		int64_t k = sqlite3_column_int64(st, 4);
		b->weight[b->n] = k > 0 ? (uint64_t)k : 1;
		int64_t survivor = sqlite3_column_int64(st, 3);
		if (survivor) { /* a branch has few groups: a linear search is fine */
			size_t g = first_group;
			while (g < *ngroups && (*groups)[g].survivor != survivor)
				g++;
			if (g == *ngroups) {
				ALLOC_GROW(*groups, *ngroups + 1, *galloc);
				memset(&(*groups)[g], 0, sizeof((*groups)[g]));
				(*groups)[g].survivor = survivor;
				(*ngroups)++;
			}
			(*groups)[g].k += b->weight[b->n];
			b->group[b->n] = (int64_t)g;
		}
		b->n++;
	}
	sqlite3_finalize(st);
	if (!ret && rc != SQLITE_DONE)
		return store_sqlerr(s, "collecting garbage");
	/* each group's last run in seq order takes the aggregate */
	for (size_t i = b->n; i-- > 0;) {
		if (b->group[i] < 0)
			continue;
		size_t j = i + 1;
		while (j < b->n && b->group[j] != b->group[i])
			j++;
		b->last[i] = j == b->n;
	}
	return ret;
}

static void branch_release(struct branch_runs *b)
{
	free(b->ids);
	free(b->dead);
	free(b->last);
	free(b->group);
	free(b->weight);
}

/* group->sum += weight x e; at the group's last run, group->mean = the rounded mean. */
static void fold_add(struct fold_group *g, const struct blob_entries *e, uint64_t weight, int last)
{
	struct blob_entries w, tmp;
	blob_entries_init(&w);
	blob_entries_init(&tmp);
	for (size_t i = 0; i < e->n; i++)
		blob_entries_push(&w, e->e[i].test, e->e[i].node,
		                  e->e[i].count > UINT64_MAX / weight ? UINT64_MAX
		                                                      : e->e[i].count * weight);
	blob_accumulate(&g->sum, &w, &tmp);
	blob_entries_release(&w);
	blob_entries_release(&tmp);
	if (!last)
		return;
	g->mean.n = 0;
	for (size_t i = 0; i < g->sum.n; i++) {
		uint64_t c =
		        g->sum.e[i].count / g->k + (g->sum.e[i].count % g->k >= (g->k + 1) / 2);
		if (c) /* a stack seen in fewer than half of the runs, once each, goes */
			blob_entries_push(&g->mean, g->sum.e[i].test, g->sum.e[i].node, c);
	}
	blob_entries_release(&g->sum);
}

/* ---- pass 1: what the kept runs use ------------------------------------------------------ */

struct marks {
	const struct branch_runs *b;
	struct fold_group *groups;
	const struct profile *d;
	const struct trie *t;
	unsigned char *node, *frame, *str;
};

static int mark_run(void *ctx, int64_t seq, const struct blob_entries *e)
{
	struct marks *m = ctx;
	if (m->b->group[seq] >= 0) {
		struct fold_group *g = &m->groups[m->b->group[seq]];
		fold_add(g, e, m->b->weight[seq], m->b->last[seq]);
		if (!m->b->last[seq])
			return 0;
		e = &g->mean; /* what stays of the group */
	} else if (m->b->dead[seq]) {
		return 0;
	}
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
	const struct fold_group *groups;
	const uint32_t *new_str, *new_node;
	int64_t next; /* the next kept run's new seq */
	struct blob_entries prev, cur, sum, tmp;
	sqlite3_stmt *renumber;
};

static int recode_run(void *ctx, int64_t seq, const struct blob_entries *e)
{
	struct recode *r = ctx;
	int64_t id = r->b->ids[seq];
	if (r->b->group[seq] >= 0) {
		if (!r->b->last[seq])
			return 0;
		/* the aggregate, under its surviving run's id, where the group's last run was */
		e = &r->groups[r->b->group[seq]].mean;
		id = r->groups[r->b->group[seq]].survivor;
	} else if (r->b->dead[seq]) {
		return 0;
	}
	r->cur.n = 0;
	for (size_t i = 0; i < e->n; i++) /* the maps keep the order: still sorted */
		blob_entries_push(&r->cur, r->new_str[e->e[i].test], r->new_node[e->e[i].node],
		                  e->e[i].count);
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

static int recode_branch(struct store *s, const struct branch_runs *b,
                         const struct fold_group *groups, const uint32_t *new_str,
                         const uint32_t *new_node)
{
	struct recode r = {
	        .s = s, .b = b, .groups = groups, .new_str = new_str, .new_node = new_node};
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
	struct fold_group *groups = NULL;
	size_t ngroups = 0, galloc = 0;
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
		if (load_branch(s, id, &br[nbr], &groups, &ngroups, &galloc) < 0) {
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
	m.groups = groups;
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
		if (recode_branch(s, &br[i], groups, new_str, new_node) < 0)
			goto out;
	if (store_exec(s, "DELETE FROM dict") < 0 || store_write_dict(s, nd, &nt) < 0)
		goto out;
	ret = 0;
out:
	for (size_t i = 0; i < nbr; i++)
		branch_release(&br[i]);
	free(br);
	for (size_t i = 0; i < ngroups; i++) {
		blob_entries_release(&groups[i].sum);
		blob_entries_release(&groups[i].mean);
	}
	free(groups);
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
	                  "DELETE FROM gc_runs;"
	                  "CREATE TEMP TABLE IF NOT EXISTS gc_fold(id INTEGER PRIMARY KEY,"
	                  " survivor INTEGER NOT NULL, k INTEGER NOT NULL);"
	                  "DELETE FROM gc_fold") < 0 ||
	    exec_bind(s,
	              "INSERT INTO gc_runs(id) SELECT id FROM runs WHERE created_at < ?1 OR "
	              "(?2 >= 0 AND id NOT IN (SELECT id FROM runs ORDER BY id DESC LIMIT ?2))",
	              cutoff, keep, &n) < 0)
		goto fail;
	if (n && o->fold) {
		/* Groups of two or more selected runs that report would use together: of one
		 * branch, commit and command (imported runs count as one command, as report
		 * takes them with any), exit status 0. The newest of each stays as the
		 * aggregate, the rest go. A failed run is no group's: it stays as it is. An
		 * aggregate folded again weighs the runs it holds. */
		int64_t folded, groups;
		if (sqlite3_create_function_v2(s->db, "ciprof_imported", 1,
		                               SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
		                               sql_imported, NULL, NULL, NULL) != SQLITE_OK) {
			store_sqlerr(s, "collecting garbage");
			goto fail;
		}
		if (store_exec(
		            s,
		            "INSERT INTO gc_fold(id, survivor, k)"
		            " SELECT r.id, max(r.id) OVER (PARTITION BY r.branch_id, r.commit_id,"
		            " CASE WHEN ciprof_imported(r.command) THEN NULL ELSE r.command END),"
		            " coalesce((SELECT max(1, CAST(t.value AS INTEGER)) FROM run_tags t"
		            " WHERE t.run = r.id AND t.key = '" STORE_TAG_AGGREGATE "'), 1)"
		            " FROM runs r WHERE r.id IN (SELECT id FROM gc_runs) AND r.exit_code = "
		            "0;"
		            "DELETE FROM gc_fold WHERE survivor IN (SELECT survivor FROM gc_fold"
		            " GROUP BY survivor HAVING count(*) < 2);"
		            "DELETE FROM gc_runs WHERE id NOT IN (SELECT id FROM gc_fold)"
		            " OR id IN (SELECT survivor FROM gc_fold)") < 0 ||
		    store_query_int(s, "SELECT count(*) FROM gc_fold", &folded,
		                    "collecting garbage") < 0 ||
		    store_query_int(s, "SELECT count(DISTINCT survivor) FROM gc_fold", &groups,
		                    "collecting garbage") < 0 ||
		    store_query_int(s, "SELECT count(*) FROM gc_runs", &n, "collecting garbage") <
		            0)
			goto fail;
		r->runs_folded = (size_t)folded;
		r->aggregates = (size_t)groups;
	}
	if (n) {
		if (store_query_int(s,
		                    "SELECT count(DISTINCT branch_id) FROM runs WHERE id IN "
		                    "(SELECT id FROM gc_runs)",
		                    &branches, "collecting garbage") < 0 ||
		    dict_sync(s) < 0 || rewrite(s, r) < 0)
			goto fail;
		r->branches_rebuilt = (size_t)branches;
		/* The aggregates' metadata: the mean of their runs' figures, weighted by the
		 * runs each holds, and how many runs that is. */
		if (r->aggregates &&
		    store_exec(s,
		               "CREATE TEMP TABLE gc_mean AS SELECT f.survivor AS id,"
		               " sum(f.k) AS k, sum(r.cpu_seconds * f.k) / sum(f.k) AS cpu,"
		               " sum(r.wall_seconds * f.k) / sum(f.k) AS wall,"
		               " CAST(round(sum(r.samples * f.k) * 1.0 / sum(f.k)) AS INTEGER) AS "
		               "samples,"
		               " CAST(round(sum(r.lost * f.k) * 1.0 / sum(f.k)) AS INTEGER) AS lost"
		               " FROM gc_fold f JOIN runs r ON r.id = f.id GROUP BY f.survivor;"
		               "UPDATE runs SET cpu_seconds = m.cpu, wall_seconds = m.wall,"
		               " samples = m.samples, lost = m.lost FROM gc_mean m WHERE runs.id = "
		               "m.id;"
		               "INSERT OR REPLACE INTO run_tags(run, key, value) SELECT id, "
		               "'" STORE_TAG_AGGREGATE "', CAST(k AS TEXT) FROM gc_mean;"
		               "DROP TABLE gc_mean") < 0)
			goto fail;
		/* An aggregate of several runs has no one build per module: its build ids go. */
		if (exec_bind(s, "DELETE FROM results WHERE run IN (SELECT id FROM gc_runs)", 0, 0,
		              NULL) < 0 ||
		    exec_bind(s,
		              "DELETE FROM run_build_ids WHERE run IN (SELECT id FROM gc_runs) OR "
		              "run IN (SELECT survivor FROM gc_fold)",
		              0, 0, NULL) < 0 ||
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
	if (store_exec(s, "DROP TABLE gc_runs; DROP TABLE gc_fold") < 0 ||
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
