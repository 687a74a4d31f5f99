/* store/ internals: profiles back from blobs (load.c) - database ids mapped to a profile's
 * own, names read from the dictionary. */
#ifndef CP_STORE_LOAD_H
#define CP_STORE_LOAD_H

#include "common/hashidx.h"
#include "model/profile.h"
#include "store/blob.h"
#include "store/dict.h"

#include <stdint.h>

struct store;

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

#endif
