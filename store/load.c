/* store/load.c: a stored run's profile back in memory - its blob decoded (segtree.c's
 * chain), database ids mapped to the profile's own through the dictionary reader, its
 * statistics and test outcomes. */
#include "store/load.h"
#include "common/error.h"
#include "common/xalloc.h"
#include "store/db.h"
#include "store/runs.h"
#include "store/segtree.h"

#include <stdlib.h>
#include <string.h>

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
		if (n >= PROFILE_MAX_DEPTH) { /* no importer or runner stores one */
			cp_error(
			        "database %s is corrupt: stack node %llu is deeper than %d frames; "
			        "restore a backup",
			        b->s->path, (unsigned long long)id, PROFILE_MAX_DEPTH);
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

/* Reads run's build ids into p. */
static int load_modules(struct store *s, int64_t run, struct profile *p)
{
	sqlite3_stmt *list = NULL, *pair = NULL;
	int ret = -1;
	if (store_prepare(s, "SELECT ids FROM run_build_ids WHERE run = ?1", &list,
	                  "reading build ids") < 0 ||
	    store_prepare(s, "SELECT module, build_id FROM build_ids WHERE id = ?1", &pair,
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
	if (sqlite3_prepare_v2(s->db,
	                       "SELECT branch_id, seq, " RUN_STATS_COLS " FROM runs WHERE id = ?1",
	                       -1, &q, NULL) != SQLITE_OK) {
		store_sqlerr(s, "reading run stats");
		goto out;
	}
	sqlite3_bind_int64(q, 1, id);
	int64_t branch_id = -1, seq = -1;
	if (sqlite3_step(q) == SQLITE_ROW) {
		branch_id = sqlite3_column_int64(q, 0);
		seq = sqlite3_column_int64(q, 1);
		run_stats_read(q, 2, &p->stats);
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
