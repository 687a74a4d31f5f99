/* store/blob: the compact profile blobs the database keeps. A blob lists (stack node, samples)
 * pairs sorted by node id, each number a LEB128 varint and each node id a delta from the one
 * before, so a run of a few thousand stacks costs a few bytes per stack. Two formats:
 *   pairs (0x01): one test's samples, kept per (run, test);
 *   multi (0x02): several tests' samples, kept per segment-tree node.
 * The decoders accept any bytes and reject malformed input with a message (fuzzed). */
#ifndef CP_STORE_BLOB_H
#define CP_STORE_BLOB_H

#include "common/strbuf.h"

#include <stddef.h>
#include <stdint.h>

#define BLOB_FORMAT_PAIRS 0x01
#define BLOB_FORMAT_MULTI 0x02

/* One sample count: test is a database string id (0 in pairs blobs), node a stack node id. */
struct blob_entry {
	uint64_t test;
	uint64_t node;
	uint64_t count;
};

/* A growable array of entries, sorted by (test, node) with no duplicates and no zero counts
 * whenever it comes out of a decoder or blob_merge. Embedded object: init / release. */
struct blob_entries {
	struct blob_entry *e; /* owned */
	size_t n, alloc;
};

void blob_entries_init(struct blob_entries *b);
void blob_entries_release(struct blob_entries *b);
void blob_entries_push(struct blob_entries *b, uint64_t test, uint64_t node, uint64_t count);
/* Sorts by (test, node), sums duplicates and drops zero counts. */
void blob_entries_normalize(struct blob_entries *b);

/* Appends an unsigned LEB128 varint (1..10 bytes) to sb. */
void blob_put_varint(struct strbuf *sb, uint64_t v);

/*
 * Encoders: append to sb. Input must be normalized (blob_entries_normalize). The pairs encoder
 * ignores the test field (all entries must belong to one test).
 */
void blob_encode_pairs(struct strbuf *sb, const struct blob_entry *e, size_t n);
void blob_encode_multi(struct strbuf *sb, const struct blob_entries *b);

/*
 * Decoders: append the blob's entries to out (pairs blobs get test = `test`). Return 0, or -1
 * with cp_error set ("profile blob: ...") when the blob is malformed: unknown format, truncated
 * or overlong varint, counts of zero, node ids not strictly increasing, a count or id overflow,
 * trailing bytes. On error out keeps what was appended before the bad part.
 */
int blob_decode_pairs(const void *data, size_t len, uint64_t test, struct blob_entries *out);
int blob_decode_multi(const void *data, size_t len, struct blob_entries *out);
/* Either format, chosen by the first byte. */
int blob_decode(const void *data, size_t len, uint64_t test, struct blob_entries *out);

/* out = a + b (both normalized); out must be distinct from both. Counts saturate at
 * UINT64_MAX rather than wrap. */
void blob_merge(const struct blob_entries *a, const struct blob_entries *b,
                struct blob_entries *out);

#endif
