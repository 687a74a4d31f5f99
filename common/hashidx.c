/* Open addressing with linear probing; the full hash is kept so growth never calls back. */
#include "common/hashidx.h"
#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>

void hashidx_init(struct hashidx *h)
{
	memset(h, 0, sizeof(*h));
}

void hashidx_release(struct hashidx *h)
{
	free(h->slots);
	hashidx_init(h);
}

int64_t hashidx_find(const struct hashidx *h, uint64_t hash, hashidx_eq_fn eq, const void *ctx,
                     const void *key)
{
	if (!h->cap)
		return -1;
	size_t mask = h->cap - 1;
	for (size_t i = hash & mask;; i = (i + 1) & mask) {
		const struct hashidx_slot *s = &h->slots[i];
		if (!s->pos1)
			return -1;
		if (s->hash == hash && eq(ctx, s->pos1 - 1, key))
			return s->pos1 - 1;
	}
}

static void place(struct hashidx_slot *slots, size_t cap, uint64_t hash, uint32_t pos1)
{
	size_t mask = cap - 1;
	size_t i = hash & mask;
	while (slots[i].pos1)
		i = (i + 1) & mask;
	slots[i].hash = hash;
	slots[i].pos1 = pos1;
}

void hashidx_insert(struct hashidx *h, uint64_t hash, uint32_t pos)
{
	if (st_mult(h->count + 1, 4) > st_mult(h->cap, 3)) {
		size_t cap = h->cap ? st_mult(h->cap, 2) : 64;
		struct hashidx_slot *slots = xcalloc(cap, sizeof(*slots));
		for (size_t i = 0; i < h->cap; i++)
			if (h->slots[i].pos1)
				place(slots, cap, h->slots[i].hash, h->slots[i].pos1);
		free(h->slots);
		h->slots = slots;
		h->cap = cap;
	}
	place(h->slots, h->cap, hash, pos + 1);
	h->count++;
}

uint64_t hash_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

uint64_t hash_bytes(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = seed ^ (len * 0x9e3779b97f4a7c15ULL);
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = (h ^ hash_mix(w)) * 0x9e3779b97f4a7c15ULL;
		p += 8;
		len -= 8;
	}
	uint64_t w = 0;
	memcpy(&w, p, len);
	h = (h ^ hash_mix(w ^ len)) * 0x9e3779b97f4a7c15ULL;
	return hash_mix(h);
}
