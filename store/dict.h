/* store/ internals: the dictionary (dict.c) - strings, frames and the stack trie, kept as
 * append-only compressed chunks - with the writer's in-memory copy that deduplicates new runs
 * against it, and a reader that loads chunks on demand. docs/store.md describes the layout. */
#ifndef CP_STORE_DICT_H
#define CP_STORE_DICT_H

#include "model/profile.h"
#include "common/strbuf.h"

#include <stddef.h>
#include <stdint.h>

struct store;

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

#endif
