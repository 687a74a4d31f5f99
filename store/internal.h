/* store/ internals shared by its files: the connection, prepared statements, the id cache that
 * makes storing a stack seen before cost no query, and the blob -> profile builder. */
#ifndef CP_STORE_INTERNAL_H
#define CP_STORE_INTERNAL_H

#include "common/hashidx.h"
#include "common/profile.h"
#include "store/blob.h"
#include "store/store.h"

#include <sqlite3.h>
#include <stdint.h>

enum store_stmt_id {
	Q_STR_FIND,
	Q_STR_INSERT,
	Q_FRAME_FIND,
	Q_FRAME_INSERT,
	Q_NODE_FIND,
	Q_NODE_INSERT,
	Q_STR_GET,
	Q_FRAME_GET,
	Q_NODE_GET,
	Q_BRANCH_FIND,
	Q_BRANCH_INSERT,
	Q_BRANCH_BUMP,
	Q_RUN_INSERT,
	Q_TAG_INSERT,
	Q_TAGS_GET,
	Q_PROFILE_INSERT,
	Q_PROFILES_OF_RUN,
	Q_PROFILES_OF_SEQ,
	Q_SEG_GET,
	Q_SEG_PUT,
	Q_GENERATION,
	Q_NSTMTS
};

struct store {
	sqlite3 *db;
	char *path;
	int readonly;
	sqlite3_stmt *stmt[Q_NSTMTS];
	/* Ids already in the database, by a local profile's ids: valid while the database's
	 * generation (bumped by gc, which may delete ids) stays cache_gen. 0 = unknown. */
	struct profile *cache;
	int64_t *cache_str, *cache_frame, *cache_node;
	size_t cache_str_alloc, cache_frame_alloc, cache_node_alloc;
	int64_t cache_gen;
};

/* Records the connection's last error as a message naming the file (see store.h); -1. */
int store_sqlerr(struct store *s, const char *what);
/* Runs SQL without results; 0 or -1. */
int store_exec(struct store *s, const char *sql);
/* The prepared statement id, reset and unbound (borrowed); NULL with cp_error set. */
sqlite3_stmt *store_stmt(struct store *s, enum store_stmt_id id);
/* BEGIN IMMEDIATE, retried while another writer holds the lock; COMMIT; ROLLBACK. */
int store_begin(struct store *s);
int store_commit(struct store *s);
void store_rollback(struct store *s);
/* Forgets the id cache (after a rollback or when gc changed the generation). */
void store_cache_reset(struct store *s);

/* A map from 64-bit database ids to 32-bit local ids. */
struct idmap {
	uint64_t *keys;
	uint32_t *vals;
	size_t n, alloc, valloc;
	struct hashidx idx;
};
void idmap_init(struct idmap *m);
void idmap_release(struct idmap *m);
int idmap_get(const struct idmap *m, uint64_t key, uint32_t *val);
void idmap_put(struct idmap *m, uint64_t key, uint32_t val);

/* Turns entries (database test string ids, node ids) into a new profile's samples. */
struct profile_builder {
	struct store *s;
	struct profile *p;
	struct idmap strs, frames, nodes;
};
void builder_init(struct profile_builder *b, struct store *s, struct profile *p);
void builder_release(struct profile_builder *b);
int builder_add(struct profile_builder *b, const struct blob_entries *e);

/* Segment tree (segtree.c). seq numbers a branch's runs 0..n-1. */
/* The profile of node (level, idx): level 0 is run seq idx's per-test blobs. Appends to out. */
int segtree_load(struct store *s, int64_t branch_id, unsigned level, int64_t idx,
                 struct blob_entries *out);
/* Called in add_run's transaction after run seq (whose entries are run) was written. */
int segtree_append(struct store *s, int64_t branch_id, int64_t seq, const struct blob_entries *run);
/* out = merge of runs [lo, hi) of the branch. */
int segtree_query(struct store *s, int64_t branch_id, int64_t lo, int64_t hi,
                  struct blob_entries *out);
/* Drops and recomputes every node of the branch (runs 0..nruns-1). */
int segtree_rebuild(struct store *s, int64_t branch_id, int64_t nruns);

#endif
