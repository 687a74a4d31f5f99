/* store/ internals shared by its files: the connection and prepared statements; the
 * dictionary (strings, frames and the stack trie, kept as append-only compressed chunks) with
 * the writer's in-memory copy that deduplicates new runs against it; chains of run blobs;
 * the segment tree; the blob -> profile builder. docs/store.md describes the layout. */
#ifndef CP_STORE_INTERNAL_H
#define CP_STORE_INTERNAL_H

#include "common/hashidx.h"
#include "common/profile.h"
#include "store/blob.h"
#include "store/store.h"

#include <sqlite3.h>
#include <stdint.h>

/* Runs are grouped in blocks of SEGTREE_BLOCK = 2^SEGTREE_MIN_LEVEL consecutive runs of a
 * branch: the first run of a block is coded standalone, the others against the run before, and
 * the segment tree stores levels >= SEGTREE_MIN_LEVEL only (a block and above). */
#define SEGTREE_MIN_LEVEL 4
#define SEGTREE_BLOCK     (1 << SEGTREE_MIN_LEVEL)
#define SEGTREE_MAX_LEVEL 33
/* segtree.id = branch id * 2^40 + level * 2^34 + index: branch ids below 2^23, ranges of up to
 * 2^34 runs. */
#define SEG_KEY(branch, level, idx)                                                                \
	(((int64_t)(branch) << 40) | ((int64_t)(level) << 34) | (int64_t)(idx))

/* Dictionary kinds (column dict.kind) and the first id of each: string 0 is "" and node 0 the
 * trie's root, both implicit; frames start at 0. */
enum dict_kind { DICT_STRINGS = 0, DICT_FRAMES = 1, DICT_NODES = 2, DICT_NKINDS };
/* dict.id = kind * 2^40 + the chunk's first item id. */
#define DICT_KEY_SHIFT      40
#define DICT_FORMAT_STRINGS 0x21
#define DICT_FORMAT_FRAMES  0x22
#define DICT_FORMAT_NODES   0x23
/* Strings deflated against the first strings chunk's text (see dict_encode_chunk). */
#define DICT_FORMAT_STRINGS_REF 0x24
/* Stack nodes whose explicit frames may be "the next new frame" (dict.c): what the store
 * writes now; 0x23 chunks stay readable. */
#define DICT_FORMAT_NODES_NEXT 0x25
/* The most of the first strings chunk's text (its end) a 0x24 chunk is deflated against:
 * deflate's window. */
#define DICT_REF_MAX 32768

enum store_stmt_id {
	Q_DICT_SINCE,
	Q_DICT_AT,
	Q_DICT_PUT,
	Q_BRANCH_FIND,
	Q_BRANCH_INSERT,
	Q_BRANCH_BUMP,
	Q_RUN_INSERT,
	Q_RUN_POS,
	Q_TAG_INSERT,
	Q_TAGS_GET,
	Q_PROFILE_PUT,
	Q_PROFILES_OF_SEQS,
	Q_SEG_GET,
	Q_SEG_PUT,
	Q_GENERATION,
	Q_NSTMTS
};

/* What this process knows of a branch's newest run, so that storing the next one needs no
 * decoding: valid while the generation, the branch and its run count match. */
struct run_tail {
	int64_t gen, branch_id, seq, run_id;
	struct blob_entries run;       /* entries of run seq */
	struct blob_entries block_sum; /* sum of runs [seq - seq % SEGTREE_BLOCK, seq] */
};

/* The stack trie of a dictionary in memory: nodes by id (node 0 the root) and an index from
 * (parent, frame) to id, sized ahead so that loading a whole trie probes once per node. */
struct trie {
	struct profile_node *nodes; /* owned; nodes[0] is the root */
	size_t n, alloc;
	uint32_t *slots; /* id + 1, 0 = empty; open addressing */
	size_t cap;      /* a power of two */
};
void trie_init(struct trie *t);
void trie_release(struct trie *t);
void trie_reserve(struct trie *t, size_t n);
/* The id of node (parent, frame), added when absent (*added = 1). */
uint32_t trie_node(struct trie *t, uint32_t parent, uint32_t frame, int *added);

struct store {
	sqlite3 *db;
	char *path;
	int readonly;
	int immutable; /* opened with immutable=1: the file's folder or medium is read-only */
	/* One busy-timeout budget (CIPROF_DB_TIMEOUT_MS) per wait for a lock: the busy
	 * handler gives up at deadline_ms; an operation retrying a statement (store_begin,
	 * WAL mode) sets it once for all of its attempts. */
	int64_t timeout_ms, deadline_ms;
	int budget_active;
	sqlite3_stmt *stmt[Q_NSTMTS];
	/* The whole dictionary as of this process's last write transaction, ids = database
	 * ids: strings and frames in dict, stack nodes in trie; valid while the database's
	 * generation (bumped when gc renumbers) is dict_gen. */
	struct profile *dict;
	struct trie trie;
	int64_t dict_gen;
	struct run_tail tail;
};

/* Records the connection's last error as a message naming the file (see store.h); -1. */
int store_sqlerr(struct store *s, const char *what);
/* Records "database F is corrupt: WHAT: <cp_last_error()>; restore a backup ..."; -1. */
int store_corrupt(struct store *s, const char *what);
/* Runs SQL without results; 0 or -1. */
int store_exec(struct store *s, const char *sql);
/* The prepared statement id, reset and unbound (borrowed); NULL with cp_error set. */
sqlite3_stmt *store_stmt(struct store *s, enum store_stmt_id id);
/* Steps a statement expected to finish without rows; 0 or -1. */
int store_step_done(struct store *s, sqlite3_stmt *st, const char *what);
/* A one-number query; *out = 0 when it returns no row. */
int store_query_int(struct store *s, const char *sql, int64_t *out, const char *what);
/* BEGIN IMMEDIATE, retried while another writer holds the lock; COMMIT; ROLLBACK. */
int store_begin(struct store *s);
int store_commit(struct store *s);
void store_rollback(struct store *s);
/* A read transaction (one snapshot for several statements), and its end. */
int store_begin_read(struct store *s);
void store_end_read(struct store *s);
/* Forgets the in-memory dictionary and run tail (after a rollback, or when gc renumbered). */
void store_cache_reset(struct store *s);
/* The database's generation (meta). */
int store_generation(struct store *s, int64_t *out);

/* ---- dictionary (dict.c) ---------------------------------------------------------------- */

/* Chunk codecs. Encoders append a chunk of items [first, first + n) of one kind: strings and
 * frames from names, stack nodes from nodes (indexed by id). The decoder fills a dict_chunk
 * and returns 0, or -1 with cp_error set ("dictionary chunk: ..."); references to other items
 * are checked by whoever uses them.
 * ref (may be NULL) is the text of the first strings chunk (its pool, pool_len bytes): a
 * strings chunk encoded with one is deflated against its last DICT_REF_MAX bytes (format
 * 0x24; a run's few new names share most of their substrings with the names the first run
 * brought), and decoding such a chunk needs the same text (an error without it). The first
 * chunk itself is always standalone (0x21), so a reference is one chunk, never a chain. */
struct dict_chunk {
	int kind;
	uint64_t first, n;
	/* strings: pool of n NUL-terminated strings (pool_len bytes) and their offsets */
	char *pool;
	size_t pool_len;
	size_t *off;
	/* frames */
	struct profile_frame *frames;
	/* nodes: parent and frame ids */
	uint64_t *parent, *frame;
};
void dict_chunk_release(struct dict_chunk *c);
struct dict_ref {
	const char *text;
	size_t len;
};
void dict_encode_chunk(struct strbuf *sb, const struct profile *names,
                       const struct profile_node *nodes, int kind, uint64_t first, uint64_t n,
                       const struct dict_ref *ref);
int dict_decode_chunk(const void *data, size_t len, int kind, uint64_t first,
                      const struct dict_ref *ref, struct dict_chunk *out);
/* Whether a chunk of kind is coded against the first strings chunk (format 0x24). */
int dict_chunk_needs_ref(const void *data, size_t len, int kind);

/* In a write transaction: brings s->dict and s->trie up to date with the database (loading
 * every chunk when the generation changed, else only chunks other writers appended). */
int dict_sync(struct store *s);
/* Writes chunks for the items s->dict and s->trie gained beyond before[kind] counts. */
int dict_write_new(struct store *s, const size_t before[DICT_NKINDS]);
/* Writes items of kind [first, first + n) in chunks of at most max items. */
int dict_write_range(struct store *s, const struct profile *names, const struct profile_node *nodes,
                     int kind, size_t first, size_t n, size_t max);
/* Item counts of the writer's dictionary in memory. */
void dict_counts(const struct store *s, size_t out[DICT_NKINDS]);

/* Reads dictionary items by id, loading the chunks that hold them on demand. */
struct dict_reader {
	struct store *s;
	struct dict_chunk *chunks[DICT_NKINDS]; /* loaded, sorted by first */
	size_t n[DICT_NKINDS], alloc[DICT_NKINDS];
};
void dict_reader_init(struct dict_reader *r, struct store *s);
void dict_reader_release(struct dict_reader *r);
int dict_read_string(struct dict_reader *r, uint64_t id, const char **out);
int dict_read_frame(struct dict_reader *r, uint64_t id, struct profile_frame *out);
int dict_read_node(struct dict_reader *r, uint64_t id, uint64_t *parent, uint64_t *frame);

/* ---- profiles back from blobs (store.c) ------------------------------------------------- */

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
	struct dict_reader dict;
	struct idmap strs, frames, nodes;
};
void builder_init(struct profile_builder *b, struct store *s, struct profile *p);
void builder_release(struct profile_builder *b);
int builder_add(struct profile_builder *b, const struct blob_entries *e);

/* ---- runs and the segment tree (segtree.c) ---------------------------------------------- */

/* Calls fn with the entries of each of runs [from, to] of the branch, decoding the chain from
 * the start of from's block (fn is called for from..to only). fn returns 0 or -1. */
typedef int (*run_fn)(void *ctx, int64_t seq, const struct blob_entries *e);
int runs_decode(struct store *s, int64_t branch_id, int64_t from, int64_t to, run_fn fn, void *ctx);
/* Codes run seq's entries (against prev, the entries of run seq - 1, unless seq starts a
 * block) and stores them as the profile of run_id. */
int runs_put(struct store *s, int64_t run_id, int64_t seq, const struct blob_entries *e,
             const struct blob_entries *prev);
/* After run seq of the branch was stored: when it completes a block, stores the block's node
 * (block_sum = the sum of the block's runs) and every node it completes above. */
int segtree_append(struct store *s, int64_t branch_id, int64_t seq,
                   const struct blob_entries *block_sum);
/* out = merge of runs [lo, hi) of the branch. */
int segtree_query(struct store *s, int64_t branch_id, int64_t lo, int64_t hi,
                  struct blob_entries *out);
/* Sum of tree nodes the branch of n runs must have. */
int64_t segtree_expected_nodes(int64_t nruns);

/* ---- migration (migrate.c) -------------------------------------------------------------- */

/* The schema 2 tables, for a fresh file. */
extern const char store_schema_v2[];
/* Schema 2 -> 3: the test outcomes of JUnit reports (run --junit). */
extern const char store_step_2_to_3[];
extern const char store_step_4_to_5[];
/* Writes a whole dictionary (ids = database ids) into an empty dict table. */
int store_write_dict(struct store *s, const struct profile *names, const struct trie *t);
/* In a write transaction: converts a schema 1 database to schema 2. */
int store_migrate_1_to_2(struct store *s);

#endif
