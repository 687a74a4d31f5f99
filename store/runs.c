/* store/runs.c: runs in and out. Storing a run is one transaction: its strings, frames and
 * stacks mapped through the in-memory dictionary (dict.c), so a stack seen before costs
 * nothing; its blob coded against the branch's previous run and the segment tree extended
 * (segtree.c); its metadata, tags and test outcomes. Reading: run rows and tags, listed,
 * found by filter, counted. */
#include "store/db.h"
#include "common/error.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "store/runs.h"
#include "store/segtree.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void (*store_test_hook_before_commit)(void);

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

/* The figures store_add_run stores for p: its own, with what a profile made without them
 * (a folded import, a test's) lacks taken from its samples and rate. */
static struct profile_stats stats_to_store(const struct profile *p)
{
	struct profile_stats st = p->stats;
	if (!st.samples)
		st.samples = profile_total(p, NULL);
	if (!st.period_ns && st.hz > 0)
		st.period_ns = 1000000000ull / (unsigned)st.hz;
	if (st.cpu_seconds == 0)
		st.cpu_seconds = (double)st.samples * (double)st.period_ns / 1e9;
	st.unsampled_seconds = 0; /* not a column: part of cpu_seconds */
	return st;
}

static int insert_run_row(struct store *s, const struct run_meta *m, const struct profile_stats *ps,
                          int64_t branch_id, int64_t seq)
{
	sqlite3_stmt *st = store_stmt(s, Q_RUN_INSERT);
	if (!st)
		return -1;
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
	sqlite3_bind_int(st, i++, ps->exit_status);
	sqlite3_bind_double(st, i++, ps->wall_seconds);
	sqlite3_bind_double(st, i++, ps->cpu_seconds);
	sqlite3_bind_int(st, i++, ps->hz);
	sqlite3_bind_int64(st, i++, (int64_t)ps->samples);
	sqlite3_bind_int64(st, i++, (int64_t)ps->lost);
	sqlite3_bind_int64(st, i++, (int64_t)ps->processes);
	sqlite3_bind_int64(st, i++, (int64_t)ps->threads);
	sqlite3_bind_int64(st, i++, (int64_t)ps->period_ns);
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
	if (store_prepare(s, "INSERT OR IGNORE INTO build_ids(module, build_id) VALUES (?1, ?2)",
	                  &ins, "storing build ids") < 0 ||
	    store_prepare(s, "SELECT id FROM build_ids WHERE module = ?1 AND build_id = ?2", &get,
	                  "storing build ids") < 0 ||
	    store_prepare(s, "INSERT OR REPLACE INTO run_build_ids(run, ids) VALUES (?1, ?2)", &put,
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

static int add_run_txn(struct store *s, struct run_meta *meta, const struct profile *p,
                       const struct profile_stats *stats)
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
	    insert_run_row(s, meta, stats, branch_id, seq) < 0)
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
	struct profile_stats stats = stats_to_store(p);
	if (add_run_txn(s, meta, p, &stats) < 0)
		goto fail;
	if (store_test_hook_before_commit)
		store_test_hook_before_commit();
	if (store_commit(s) < 0) {
		meta->id = 0;
		return -1;
	}
	meta->stats = stats;
	return 0;
fail:
	meta->id = 0;
	store_rollback(s);
	return -1;
}

void run_stats_read(sqlite3_stmt *st, int col, struct profile_stats *out)
{
	*out = (struct profile_stats){0}; /* unsampled_seconds is not stored */
	out->samples = (uint64_t)sqlite3_column_int64(st, col++);
	out->lost = (uint64_t)sqlite3_column_int64(st, col++);
	out->processes = (uint64_t)sqlite3_column_int64(st, col++);
	out->threads = (uint64_t)sqlite3_column_int64(st, col++);
	out->period_ns = (uint64_t)sqlite3_column_int64(st, col++);
	out->cpu_seconds = sqlite3_column_double(st, col++);
	out->wall_seconds = sqlite3_column_double(st, col++);
	out->hz = sqlite3_column_int(st, col++);
	out->exit_status = sqlite3_column_int(st, col++);
}

/* ---- reading runs ----------------------------------------------------------------------- */

#define RUN_COLS                                                                                   \
	"id, created_at, commit_id, branch, base_branch, merge_base, dirty, commit_time, "         \
	"subject, ci_provider, pr_number, job_url, cpu_model, cpu_count, command, " RUN_STATS_COLS

static void fill_meta(sqlite3_stmt *st, struct run_meta *m)
{
	int i = 0;
	m->id = sqlite3_column_int64(st, i++);
	m->created_at = sqlite3_column_int64(st, i++);
	run_meta_set(&m->commit, store_col_text(st, i++));
	run_meta_set(&m->branch, store_col_text(st, i++));
	run_meta_set(&m->base_branch, store_col_text(st, i++));
	run_meta_set(&m->merge_base, store_col_text(st, i++));
	m->dirty = sqlite3_column_int(st, i++);
	m->commit_time = sqlite3_column_int64(st, i++);
	run_meta_set(&m->subject, store_col_text(st, i++));
	run_meta_set(&m->ci_provider, store_col_text(st, i++));
	m->pr_number = sqlite3_column_int64(st, i++);
	run_meta_set(&m->job_url, store_col_text(st, i++));
	run_meta_set(&m->cpu_model, store_col_text(st, i++));
	m->cpu_count = sqlite3_column_int(st, i++);
	run_meta_set(&m->command, store_col_text(st, i++));
	run_stats_read(st, i, &m->stats);
}

static int load_tags(struct store *s, struct run_meta *m)
{
	sqlite3_stmt *st = store_stmt(s, Q_TAGS_GET);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, m->id);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		run_meta_set_tag(m, store_col_text(st, 0), store_col_text(st, 1));
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return store_sqlerr(s, "reading tags");
	return 0;
}

int store_list_runs(struct store *s, const char *branch, size_t limit, struct run_meta **out,
                    size_t *n)
{
	struct store_run_filter f = {.branch = branch, .limit = limit, .tags = 1};
	return store_find_runs(s, &f, out, n);
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
	if (sqlite3_prepare_v2(
	            s->db,
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
		strbuf_addstr(&sb, store_col_text(st, 0));
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
