/* store/blob: the compact profile blobs the database keeps. A blob holds (test, stack node,
 * samples) entries. Schema 2 codes them with store/rc's adaptive arithmetic coder:
 *   full  (0x03): standalone - per test, the node ids as deltas and the counts;
 *   delta (0x04): against a reference (the previous run of the same branch): which reference
 *                 entries are gone, the new entries, and each kept count as its difference
 *                 from the reference count - a run whose stacks barely changed costs well
 *                 under a byte per stack.
 * Schema 1's varint formats stay readable for the migration (and are still written by tests):
 *   pairs (0x01): one test's samples, kept per (run, test);
 *   multi (0x02): several tests' samples, kept per segment-tree node.
 * Every decoder accepts any bytes and rejects malformed input with a message (fuzzed), and
 * every coding is canonical: what decodes re-encodes to the very same bytes. Schema 2 blobs
 * end with a checksum (blob_seal), since a damaged arithmetic code decodes to other numbers. */
#ifndef CP_STORE_BLOB_H
#define CP_STORE_BLOB_H

#include "common/strbuf.h"

#include <stddef.h>
#include <stdint.h>

#define BLOB_FORMAT_PAIRS 0x01
#define BLOB_FORMAT_MULTI 0x02
#define BLOB_FORMAT_FULL  0x03
#define BLOB_FORMAT_DELTA 0x04

/* One sample count: test is a database string id (0 in pairs blobs), node a stack node id. */
struct blob_entry {
	uint64_t test;
	uint64_t node;
	uint64_t count;
};

/* A growable array of entries, sorted by (test, node) with no duplicates and no zero counts
 * whenever it comes out of a decoder (into an empty array) or blob_merge. Embedded object:
 * init / release. */
struct blob_entries {
	struct blob_entry *e; /* owned */
	size_t n, alloc;
};

void blob_entries_init(struct blob_entries *b);
void blob_entries_release(struct blob_entries *b);
void blob_entries_push(struct blob_entries *b, uint64_t test, uint64_t node, uint64_t count);
/* Sorts by (test, node), sums duplicates and drops zero counts. */
void blob_entries_normalize(struct blob_entries *b);
/* dst = a copy of src. */
void blob_entries_copy(struct blob_entries *dst, const struct blob_entries *src);

/* Appends an unsigned LEB128 varint (1..10 bytes) to sb. */
void blob_put_varint(struct strbuf *sb, uint64_t v);
/* The one varint reader of store/: reads one from *p (advancing it, never past end) into
 * *out. Only the shortest form of a number up to 2^64 - 1 is accepted; else -1 with cp_error
 * "WHAT: truncated number" (or: does not fit in 64 bits, overlong, longer than 10 bytes). */
int blob_get_varint(const unsigned char **p, const unsigned char *end, const char *what,
                    uint64_t *out);

/*
 * Schema 2 blobs and dictionary chunks end with a CRC-32 (little-endian) of the bytes before
 * it: arithmetic codes have no redundancy, so without it damage would decode to other valid
 * numbers. blob_seal appends it over sb->buf[start..]; blob_unseal checks it and returns the
 * length without it, or -1 with cp_error set ("WHAT: damaged (checksum mismatch)").
 */
void blob_seal(struct strbuf *sb, size_t start);
int blob_unseal(const void *data, size_t len, const char *what, size_t *body);

/*
 * Encoders: append to sb. Input (and ref) must be normalized (blob_entries_normalize). The
 * pairs encoder ignores the test field (all entries must belong to one test).
 */
void blob_encode_pairs(struct strbuf *sb, const struct blob_entry *e, size_t n);
void blob_encode_multi(struct strbuf *sb, const struct blob_entries *b);
void blob_encode_full(struct strbuf *sb, const struct blob_entries *b);
void blob_encode_delta(struct strbuf *sb, const struct blob_entries *b,
                       const struct blob_entries *ref);

/*
 * Decoders: append the blob's entries to out (pairs blobs get test = `test`; delta blobs need
 * ref, the normalized entries they were coded against, and fail without it). Return 0, or -1
 * with cp_error set ("profile blob: ...") when the blob is malformed: unknown format, truncated
 * or overlong numbers, counts of zero, ids not strictly increasing, overflows, a removed entry
 * outside the reference or a new one already in it, more entries than the bytes can code,
 * trailing or missing bytes. On error out keeps what was appended before the bad part.
 */
int blob_decode_pairs(const void *data, size_t len, uint64_t test, struct blob_entries *out);
int blob_decode_multi(const void *data, size_t len, struct blob_entries *out);
int blob_decode_full(const void *data, size_t len, struct blob_entries *out);
int blob_decode_delta(const void *data, size_t len, const struct blob_entries *ref,
                      struct blob_entries *out);
/* Any format, chosen by the first byte (ref may be NULL except for delta blobs). */
int blob_decode(const void *data, size_t len, uint64_t test, const struct blob_entries *ref,
                struct blob_entries *out);

/* out = a + b (both normalized); out must be distinct from both. Counts saturate at
 * UINT64_MAX rather than wrap. */
void blob_merge(const struct blob_entries *a, const struct blob_entries *b,
                struct blob_entries *out);
/* acc += b (both normalized), using tmp as scratch. */
void blob_accumulate(struct blob_entries *acc, const struct blob_entries *b,
                     struct blob_entries *tmp);

#endif
