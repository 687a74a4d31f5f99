/* One hash table for all of ciprof: an open-addressing index from a 64-bit hash to a
 * uint32 position in the caller's own array. The caller keeps the items and says how to
 * compare them, so interning strings, frames or stacks needs no second copy of any key. */
#ifndef CP_HASHIDX_H
#define CP_HASHIDX_H

#include <stddef.h>
#include <stdint.h>

struct hashidx_slot {
	uint64_t hash;
	uint32_t pos1; /* position + 1; 0 marks an empty slot */
};

struct hashidx {
	struct hashidx_slot *slots; /* owned */
	size_t cap;                 /* a power of two, or 0 */
	size_t count;
};

/* Returns nonzero when the item at pos equals key. */
typedef int (*hashidx_eq_fn)(const void *ctx, uint32_t pos, const void *key);

void hashidx_init(struct hashidx *h);
void hashidx_release(struct hashidx *h);
/* The position of the item equal to key, or -1. */
int64_t hashidx_find(const struct hashidx *h, uint64_t hash, hashidx_eq_fn eq, const void *ctx,
                     const void *key);
/* Records that the item at pos has this hash (the caller checked it is absent). */
void hashidx_insert(struct hashidx *h, uint64_t hash, uint32_t pos);

/* A fast 64-bit hash of bytes (not cryptographic), and a mixer for integers. */
uint64_t hash_bytes(const void *data, size_t len, uint64_t seed);
uint64_t hash_mix(uint64_t x);

#endif
