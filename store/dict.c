/* store/dict.c: the dictionary - interned strings, frames and the stack trie - as append-only
 * compressed chunks (table dict). Ids are dense and implicit: a chunk holds items [first,
 * first + n) of its kind, and each run that brings new items appends one chunk per kind. There
 * is no SQL index on the items: the writer deduplicates against its in-memory copy of the
 * whole dictionary (loaded once per process under the write lock, then only the chunks other
 * writers appended), and readers load just the chunks holding the ids they meet.
 *
 * Chunk formats (the first byte names it):
 *   strings 0x21: varint n, varint raw length, zlib of the n NUL-terminated strings;
 *   frames  0x22: arithmetic-coded n, then per frame its string ids as differences from the
 *                 previous frame's, its line and kind;
 *   nodes   0x23: arithmetic-coded n, then per node whether its parent is the node just
 *                 before (a stack's next frame), else how far back the parent is, and its
 *                 frame - as the index among the frames already seen below a parent with the
 *                 same frame in this chunk (call sites repeat), else explicitly. */
#include "store/db.h"
#include "common/error.h"
#include "common/xalloc.h"
#include "store/rc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static int cbad(const char *what)
{
	return cp_error("dictionary chunk: %s", what);
}

void dict_chunk_release(struct dict_chunk *c)
{
	free(c->pool);
	free(c->off);
	free(c->frames);
	free(c->parent);
	free(c->frame);
	memset(c, 0, sizeof(*c));
}

/* Entries a chunk of len bytes may claim: a bound on what hostile input can allocate. A frame
 * costs at least five decisions, a stack node two (whether its parent is the node before, then
 * its frame or the parent's distance); deep chains of one repeated frame come near it. */
static uint64_t max_items(size_t len)
{
	return rc_max_decisions(len) / 2;
}

static int get_varint(const unsigned char **p, const unsigned char *end, uint64_t *out)
{
	return blob_get_varint(p, end, "dictionary chunk", out);
}

/* ---- strings ---------------------------------------------------------------------------- */

/* The end of ref that a 0x24 chunk is deflated against. */
static void ref_window(const struct dict_ref *ref, const unsigned char **text, uInt *len)
{
	size_t n = ref->len < DICT_REF_MAX ? ref->len : DICT_REF_MAX;
	*text = (const unsigned char *)ref->text + (ref->len - n);
	*len = (uInt)n;
}

static void encode_strings(struct strbuf *sb, const struct profile *d, uint64_t first, uint64_t n,
                           const struct dict_ref *ref)
{
	struct strbuf raw = STRBUF_INIT;
	for (uint64_t i = first; i < first + n; i++) {
		strbuf_addstr(&raw, profile_str(d, (uint32_t)i));
		strbuf_addch(&raw, 0);
	}
	strbuf_addch(sb, ref ? DICT_FORMAT_STRINGS_REF : DICT_FORMAT_STRINGS);
	blob_put_varint(sb, n);
	blob_put_varint(sb, raw.len);
	if (!ref) {
		uLongf cap = compressBound(raw.len);
		unsigned char *z = xmalloc(cap);
		if (compress2(z, &cap, (const unsigned char *)raw.buf, raw.len, 9) != Z_OK)
			abort(); /* only fails on out of memory or a bad level */
		strbuf_add(sb, z, cap);
		free(z);
	} else {
		/* raw deflate: the chunk's CRC-32 already guards it */
		z_stream z;
		memset(&z, 0, sizeof(z));
		const unsigned char *text;
		uInt tlen;
		ref_window(ref, &text, &tlen);
		if (deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK ||
		    (tlen && deflateSetDictionary(&z, text, tlen) != Z_OK))
			abort(); /* only fails on out of memory */
		size_t cap = deflateBound(&z, raw.len);
		unsigned char *out = xmalloc(cap);
		z.next_in = (unsigned char *)raw.buf;
		z.avail_in = (uInt)raw.len;
		z.next_out = out;
		z.avail_out = (uInt)cap;
		if (deflate(&z, Z_FINISH) != Z_STREAM_END)
			abort();
		strbuf_add(sb, out, z.total_out);
		deflateEnd(&z);
		free(out);
	}
	strbuf_release(&raw);
}

/* Inflates the raw deflate stream [p, end) against ref's window into exactly len bytes. */
static int inflate_ref(const unsigned char *p, const unsigned char *end, const struct dict_ref *ref,
                       char *out, size_t len)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, -15) != Z_OK)
		abort(); /* only fails on out of memory */
	const unsigned char *text;
	uInt tlen;
	ref_window(ref, &text, &tlen);
	int ok = !tlen || inflateSetDictionary(&z, text, tlen) == Z_OK;
	unsigned char spare;
	z.next_in = (unsigned char *)p;
	z.avail_in = (uInt)(end - p);
	z.next_out = len ? (unsigned char *)out : &spare;
	z.avail_out = len ? (uInt)len : 0;
	int rc = ok ? inflate(&z, Z_FINISH) : Z_DATA_ERROR;
	/* the stream must end exactly at the text's end and the chunk's last byte */
	ok = rc == Z_STREAM_END && z.total_out == len && z.avail_in == 0;
	inflateEnd(&z);
	return ok ? 0 : -1;
}

static int decode_strings(const unsigned char *p, const unsigned char *end,
                          const struct dict_ref *ref, struct dict_chunk *out)
{
	uint64_t n, rawlen;
	if (get_varint(&p, end, &n) < 0 || get_varint(&p, end, &rawlen) < 0)
		return -1;
	size_t zlen = (size_t)(end - p);
	/* deflate expands at most ~1032:1 */
	if (rawlen > (uint64_t)zlen * 1032 + 64 || rawlen > (1u << 30) || n > rawlen)
		return cbad("claims more text than its bytes can hold");
	char *pool = xmalloc(rawlen ? (size_t)rawlen : 1);
	uLongf got = (uLongf)rawlen;
	if (ref) {
		if (inflate_ref(p, end, ref, pool, (size_t)rawlen) < 0) {
			free(pool);
			return cbad("malformed compressed strings");
		}
	} else if (rawlen &&
	           (uncompress((unsigned char *)pool, &got, p, zlen) != Z_OK || got != rawlen)) {
		free(pool);
		return cbad("malformed compressed strings");
	}
	if (!ref && !rawlen && zlen) {
		/* an empty chunk still has a zlib stream; check it is one */
		unsigned char one;
		uLongf z1 = 1;
		if (uncompress(&one, &z1, p, zlen) != Z_OK || z1 != 0) {
			free(pool);
			return cbad("malformed compressed strings");
		}
	}
	size_t *off = xmalloc(st_mult(n ? (size_t)n : 1, sizeof(*off)));
	size_t k = 0, start = 0;
	for (size_t i = 0; i < rawlen; i++) {
		if (pool[i])
			continue;
		if (k == n) {
			k++;
			break;
		}
		off[k++] = start;
		start = i + 1;
	}
	if (k != n || start != rawlen) {
		free(pool);
		free(off);
		return cbad("string count does not match its text");
	}
	out->pool = pool;
	out->pool_len = (size_t)rawlen;
	out->off = off;
	out->n = n;
	return 0;
}

/* ---- frames ----------------------------------------------------------------------------- */

struct frame_models {
	struct rc_uint n, function, module, file, line, kind;
};

static void frame_models_init(struct frame_models *m)
{
	rc_uint_init(&m->n);
	rc_uint_init(&m->function);
	rc_uint_init(&m->module);
	rc_uint_init(&m->file);
	rc_uint_init(&m->line);
	rc_uint_init(&m->kind);
}

static void encode_frames(struct strbuf *sb, const struct profile *d, uint64_t first, uint64_t n)
{
	struct frame_models m;
	frame_models_init(&m);
	struct rc_enc e;
	strbuf_addch(sb, DICT_FORMAT_FRAMES);
	rc_enc_init(&e, sb);
	rc_enc_uint(&e, &m.n, n);
	struct profile_frame prev = {0};
	for (uint64_t i = first; i < first + n; i++) {
		const struct profile_frame *f = &d->frames[i];
		rc_enc_uint(&e, &m.function, rc_zigzag((int64_t)f->function - prev.function));
		rc_enc_uint(&e, &m.module, rc_zigzag((int64_t)f->module - prev.module));
		rc_enc_uint(&e, &m.file, rc_zigzag((int64_t)f->file - prev.file));
		rc_enc_uint(&e, &m.line, f->line);
		rc_enc_uint(&e, &m.kind, f->kind);
		prev = *f;
	}
	rc_enc_finish(&e);
}

/* prev + the zigzag-coded difference, when that fits 32 bits. */
static int add_u32(uint32_t prev, uint64_t zz, uint32_t *out)
{
	int64_t d = rc_unzigzag(zz);
	if (d < -(int64_t)prev || d > (int64_t)UINT32_MAX - (int64_t)prev)
		return -1;
	*out = (uint32_t)((int64_t)prev + d);
	return 0;
}

static int decode_frames(const unsigned char *p, const unsigned char *end, struct dict_chunk *out)
{
	struct frame_models m;
	frame_models_init(&m);
	struct rc_dec d;
	rc_dec_init(&d, p, (size_t)(end - p));
	uint64_t n = rc_dec_uint(&d, &m.n);
	if (rc_dec_failed(&d) || n > max_items((size_t)(end - p)))
		return cbad("truncated, or claims more frames than its bytes can code");
	struct profile_frame *f = xmalloc(st_mult(n ? (size_t)n : 1, sizeof(*f)));
	struct profile_frame prev = {0};
	for (uint64_t i = 0; i < n; i++) {
		struct profile_frame cur;
		uint64_t line, kind;
		if (add_u32(prev.function, rc_dec_uint(&d, &m.function), &cur.function) < 0 ||
		    add_u32(prev.module, rc_dec_uint(&d, &m.module), &cur.module) < 0 ||
		    add_u32(prev.file, rc_dec_uint(&d, &m.file), &cur.file) < 0 ||
		    (line = rc_dec_uint(&d, &m.line)) > UINT32_MAX ||
		    (kind = rc_dec_uint(&d, &m.kind)) > UINT32_MAX) {
			free(f);
			return cbad("frame field out of range");
		}
		if (rc_dec_failed(&d)) {
			free(f);
			return cbad("truncated or malformed arithmetic code");
		}
		cur.line = (uint32_t)line;
		cur.kind = (uint32_t)kind;
		f[i] = prev = cur;
	}
	if (rc_dec_finish(&d) < 0) {
		free(f);
		return cbad("bytes after the end, or a malformed last byte");
	}
	out->frames = f;
	out->n = n;
	return 0;
}

/* ---- stack nodes ------------------------------------------------------------------------ */

/* Per context (the frame of a parent in this chunk, or the root), the frames seen below it in
 * order of first appearance. */
struct succ_lists {
	struct hashidx idx;
	uint64_t *keys;
	uint64_t **items;
	size_t *len, *cap;
	size_t n, alloc, a1, a2, a3;
};

static int succ_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct succ_lists *l = ctx;
	return l->keys[pos] == *(const uint64_t *)key;
}

static void succ_init(struct succ_lists *l)
{
	memset(l, 0, sizeof(*l));
	hashidx_init(&l->idx);
}

static void succ_release(struct succ_lists *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->items[i]);
	free(l->items);
	free(l->keys);
	free(l->len);
	free(l->cap);
	hashidx_release(&l->idx);
}

static size_t succ_list(struct succ_lists *l, uint64_t key)
{
	int64_t pos = hashidx_find(&l->idx, hash_mix(key), succ_eq, l, &key);
	if (pos >= 0)
		return (size_t)pos;
	ALLOC_GROW(l->keys, l->n + 1, l->alloc);
	ALLOC_GROW(l->items, l->n + 1, l->a1);
	ALLOC_GROW(l->len, l->n + 1, l->a2);
	ALLOC_GROW(l->cap, l->n + 1, l->a3);
	l->keys[l->n] = key;
	l->items[l->n] = NULL;
	l->len[l->n] = l->cap[l->n] = 0;
	hashidx_insert(&l->idx, hash_mix(key), (uint32_t)l->n);
	return l->n++;
}

static void succ_add(struct succ_lists *l, size_t list, uint64_t frame)
{
	ALLOC_GROW(l->items[list], l->len[list] + 1, l->cap[list]);
	l->items[list][l->len[list]++] = frame;
}

struct node_models {
	struct rc_uint n, back, index, miss, outside;
	rc_prob chain[2], hit, fresh[2];
};

static void node_models_init(struct node_models *m)
{
	rc_uint_init(&m->n);
	rc_uint_init(&m->back);
	rc_uint_init(&m->index);
	rc_uint_init(&m->miss);
	rc_uint_init(&m->outside);
	m->chain[0] = m->chain[1] = m->hit = m->fresh[0] = m->fresh[1] = RC_PROB_INIT;
}

/* Format 0x25 codes an explicit frame first as one bit: is it the frame after the largest one
 * this chunk has named so far? A run's new stacks mostly end in its new frames, which the
 * store numbers in the order the stacks meet them, so most explicit frames are. */
static void enc_frame(struct rc_enc *e, struct node_models *m, struct rc_uint *model, int ctx,
                      uint64_t frame, uint64_t next)
{
	rc_enc_bit(e, &m->fresh[ctx], frame == next);
	if (frame != next)
		rc_enc_uint(e, model, frame);
}

/* The frame enc_frame coded; -1 for a frame coded explicitly that the bit should have named. */
static int dec_frame(struct rc_dec *d, struct node_models *m, struct rc_uint *model, int ctx,
                     uint64_t next, uint64_t *frame)
{
	if (rc_dec_bit(d, &m->fresh[ctx])) {
		*frame = next;
		return 0;
	}
	*frame = rc_dec_uint(d, model);
	return *frame == next && !rc_dec_failed(d) ? cbad("frame coded the long way") : 0;
}

#define ROOT_CONTEXT UINT64_MAX

static void encode_nodes(struct strbuf *sb, const struct profile_node *nodes, uint64_t first,
                         uint64_t n)
{
	struct node_models *m = xmalloc(sizeof(*m));
	node_models_init(m);
	struct succ_lists l;
	succ_init(&l);
	struct rc_enc e;
	strbuf_addch(sb, DICT_FORMAT_NODES_NEXT);
	rc_enc_init(&e, sb);
	rc_enc_uint(&e, &m->n, n);
	int prev_chain = 0;
	uint64_t next = 0; /* the largest frame named so far, plus one */
	for (uint64_t i = first; i < first + n; i++) {
		uint64_t parent = nodes[i].parent, frame = nodes[i].frame;
		int chain = parent == i - 1;
		rc_enc_bit(&e, &m->chain[prev_chain], chain);
		prev_chain = chain;
		if (!chain)
			rc_enc_uint(&e, &m->back, i - 2 - parent);
		uint64_t cur_next = next;
		if (frame >= next)
			next = frame + 1;
		if (parent && parent < first) {
			enc_frame(&e, m, &m->outside, 0, frame, cur_next);
			continue;
		}
		size_t list = succ_list(&l, parent ? nodes[parent].frame : ROOT_CONTEXT);
		size_t k = 0;
		while (k < l.len[list] && l.items[list][k] != frame)
			k++;
		rc_enc_bit(&e, &m->hit, k < l.len[list]);
		if (k < l.len[list]) {
			rc_enc_uint(&e, &m->index, k);
		} else {
			enc_frame(&e, m, &m->miss, 1, frame, cur_next);
			succ_add(&l, list, frame);
		}
	}
	rc_enc_finish(&e);
	succ_release(&l);
	free(m);
}

static int decode_nodes(const unsigned char *p, const unsigned char *end, uint64_t first,
                        int next_bit, struct dict_chunk *out)
{
	struct node_models *m = xmalloc(sizeof(*m));
	node_models_init(m);
	struct succ_lists l;
	succ_init(&l);
	struct rc_dec d;
	rc_dec_init(&d, p, (size_t)(end - p));
	uint64_t *parents = NULL, *frames = NULL;
	int ret = -1;
	uint64_t n = rc_dec_uint(&d, &m->n);
	if (rc_dec_failed(&d) || n > max_items((size_t)(end - p))) {
		cbad("truncated, or claims more nodes than its bytes can code");
		goto out;
	}
	if (!first || first > UINT32_MAX || n > UINT32_MAX - first) {
		cbad("item count or first id out of range");
		goto out;
	}
	parents = xmalloc(st_mult(n ? (size_t)n : 1, sizeof(*parents)));
	frames = xmalloc(st_mult(n ? (size_t)n : 1, sizeof(*frames)));
	int prev_chain = 0;
	uint64_t next = 0;
	for (uint64_t k = 0; k < n; k++) {
		uint64_t i = first + k, parent, frame;
		int chain = rc_dec_bit(&d, &m->chain[prev_chain]);
		prev_chain = chain;
		if (chain) {
			parent = i - 1;
		} else {
			uint64_t back = rc_dec_uint(&d, &m->back);
			if (i < 2 || back > i - 2) {
				cbad("a stack node's parent after it");
				goto out;
			}
			parent = i - 2 - back;
		}
		if (parent && parent < first) {
			if (!next_bit)
				frame = rc_dec_uint(&d, &m->outside);
			else if (dec_frame(&d, m, &m->outside, 0, next, &frame) < 0)
				goto out;
		} else {
			size_t list = succ_list(&l, parent ? frames[parent - first] : ROOT_CONTEXT);
			if (rc_dec_bit(&d, &m->hit)) {
				uint64_t idx = rc_dec_uint(&d, &m->index);
				if (idx >= l.len[list]) {
					cbad("frame index out of range");
					goto out;
				}
				frame = l.items[list][idx];
			} else {
				if (!next_bit)
					frame = rc_dec_uint(&d, &m->miss);
				else if (dec_frame(&d, m, &m->miss, 1, next, &frame) < 0)
					goto out;
				/* the encoder codes a frame seen here as its index */
				for (size_t j = 0; j < l.len[list]; j++)
					if (l.items[list][j] == frame) {
						cbad("frame coded twice in one context");
						goto out;
					}
				succ_add(&l, list, frame);
			}
		}
		if (rc_dec_failed(&d)) {
			cbad("truncated or malformed arithmetic code");
			goto out;
		}
		if (frame > UINT32_MAX) {
			cbad("frame id out of range");
			goto out;
		}
		parents[k] = parent;
		frames[k] = frame;
		if (frame >= next)
			next = frame + 1;
	}
	if (rc_dec_finish(&d) < 0) {
		cbad("bytes after the end, or a malformed last byte");
		goto out;
	}
	out->parent = parents;
	out->frame = frames;
	out->n = n;
	parents = frames = NULL;
	ret = 0;
out:
	free(parents);
	free(frames);
	succ_release(&l);
	free(m);
	return ret;
}

/* ---- chunks ----------------------------------------------------------------------------- */

void dict_encode_chunk(struct strbuf *sb, const struct profile *names,
                       const struct profile_node *nodes, int kind, uint64_t first, uint64_t n,
                       const struct dict_ref *ref)
{
	size_t start = sb->len;
	if (kind == DICT_STRINGS)
		encode_strings(sb, names, first, n, ref);
	else if (kind == DICT_FRAMES)
		encode_frames(sb, names, first, n);
	else
		encode_nodes(sb, nodes, first, n);
	blob_seal(sb, start);
}

int dict_decode_chunk(const void *data, size_t len, int kind, uint64_t first,
                      const struct dict_ref *ref, struct dict_chunk *out)
{
	static const int formats[] = {DICT_FORMAT_STRINGS, DICT_FORMAT_FRAMES, DICT_FORMAT_NODES};
	const unsigned char *p = data, *end = p + len;
	if (kind < 0 || kind >= DICT_NKINDS)
		return cbad("unknown kind");
	int with_ref = kind == DICT_STRINGS && len && p[0] == DICT_FORMAT_STRINGS_REF;
	int next_bit = kind == DICT_NODES && len && p[0] == DICT_FORMAT_NODES_NEXT;
	if (!len || (p[0] != formats[kind] && !with_ref && !next_bit))
		return cp_error("dictionary chunk: unknown format 0x%02x for its kind",
		                len ? p[0] : 0);
	if (with_ref && !ref)
		return cbad("coded against the first strings chunk, which is missing");
	if (blob_unseal(data, len, "dictionary chunk", &len) < 0)
		return -1;
	end = p + len;
	out->kind = kind;
	out->first = first;
	p++;
	if (kind == DICT_STRINGS)
		return decode_strings(p, end, with_ref ? ref : NULL, out);
	if (kind == DICT_FRAMES)
		return decode_frames(p, end, out);
	return decode_nodes(p, end, first, next_bit, out);
}

int dict_chunk_needs_ref(const void *data, size_t len, int kind)
{
	return kind == DICT_STRINGS && len &&
	       *(const unsigned char *)data == DICT_FORMAT_STRINGS_REF;
}

void dict_counts(const struct store *s, size_t out[DICT_NKINDS])
{
	out[DICT_STRINGS] = s->dict->nstr;
	out[DICT_FRAMES] = s->dict->nframes;
	out[DICT_NODES] = s->trie.n;
}

/* ---- the writer's stack trie ------------------------------------------------------------- */

void trie_init(struct trie *t)
{
	memset(t, 0, sizeof(*t));
	ALLOC_GROW(t->nodes, 1, t->alloc);
	t->nodes[0] = (struct profile_node){0, UINT32_MAX};
	t->n = 1;
	trie_reserve(t, 1024);
}

void trie_release(struct trie *t)
{
	free(t->nodes);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

static size_t trie_hash(uint32_t parent, uint32_t frame)
{
	return (size_t)hash_mix((uint64_t)parent << 32 | frame);
}

/* Keeps the index at most half full for n nodes. */
void trie_reserve(struct trie *t, size_t n)
{
	ALLOC_GROW(t->nodes, n, t->alloc);
	if (st_mult(n, 2) <= t->cap)
		return;
	size_t cap = 1024;
	while (cap < st_mult(n, 2))
		cap = st_mult(cap, 2);
	free(t->slots);
	t->slots = xcalloc(cap, sizeof(*t->slots));
	t->cap = cap;
	for (size_t id = 1; id < t->n; id++) {
		size_t i = trie_hash(t->nodes[id].parent, t->nodes[id].frame) & (cap - 1);
		while (t->slots[i])
			i = (i + 1) & (cap - 1);
		t->slots[i] = (uint32_t)id + 1;
	}
}

uint32_t trie_node(struct trie *t, uint32_t parent, uint32_t frame, int *added)
{
	if (st_mult(t->n + 1, 2) > t->cap)
		trie_reserve(t, st_mult(t->n + 1, 2));
	size_t i = trie_hash(parent, frame) & (t->cap - 1);
	for (; t->slots[i]; i = (i + 1) & (t->cap - 1)) {
		const struct profile_node *x = &t->nodes[t->slots[i] - 1];
		if (x->parent == parent && x->frame == frame) {
			*added = 0;
			return t->slots[i] - 1;
		}
	}
	if (t->n >= UINT32_MAX - 1) {
		fprintf(stderr, "ciprof: more than 4 billion stack nodes\n");
		abort();
	}
	ALLOC_GROW(t->nodes, t->n + 1, t->alloc);
	t->nodes[t->n] = (struct profile_node){parent, frame};
	t->slots[i] = (uint32_t)t->n + 1;
	*added = 1;
	return (uint32_t)t->n++;
}

/* Adds a decoded chunk's items to the writer's dictionary, which must come out with exactly
 * the chunk's ids (anything else is a duplicate or a dangling reference). */
static int apply_chunk(struct store *s, const struct dict_chunk *c)
{
	struct profile *d = s->dict;
	for (uint64_t k = 0; k < c->n; k++) {
		uint64_t id = c->first + k;
		uint32_t got;
		if (c->kind == DICT_STRINGS) {
			got = profile_intern(d, c->pool + c->off[k]);
		} else if (c->kind == DICT_FRAMES) {
			const struct profile_frame *f = &c->frames[k];
			if (f->function >= d->nstr || f->module >= d->nstr || f->file >= d->nstr)
				return cp_error(
				        "database %s is corrupt: frame %llu names a missing "
				        "string; restore a backup",
				        s->path, (unsigned long long)id);
			got = profile_frame(d, f);
		} else {
			if (c->frame[k] >= d->nframes)
				return cp_error(
				        "database %s is corrupt: stack node %llu has a missing "
				        "frame; restore a backup",
				        s->path, (unsigned long long)id);
			int added;
			got = trie_node(&s->trie, (uint32_t)c->parent[k], (uint32_t)c->frame[k],
			                &added);
			if (!added)
				got = UINT32_MAX; /* a duplicate */
		}
		if (got != id)
			return cp_error("database %s is corrupt: dictionary item %llu of kind %d "
			                "repeats item %u; restore a backup",
			                s->path, (unsigned long long)id, c->kind, got);
	}
	return 0;
}

/* The text of the first strings chunk (what later strings chunks are deflated against), from
 * names, which holds the database's strings at their ids; empty when there is no such chunk
 * yet. */
static int first_strings_text(struct store *s, const struct profile *names, struct strbuf *out)
{
	int64_t n;
	strbuf_reset(out);
	if (store_query_int(s, "SELECT n FROM dict WHERE id = 1", &n, "reading the dictionary") < 0)
		return -1;
	if (n <= 0 || (uint64_t)n >= names->nstr)
		return cp_error(
		        "database %s is corrupt: the first strings chunk holds %lld strings "
		        "of %zu; restore a backup",
		        s->path, (long long)n, names->nstr ? names->nstr - 1 : 0);
	for (int64_t i = 1; i <= n; i++) {
		strbuf_addstr(out, profile_str(names, (uint32_t)i));
		strbuf_addch(out, 0);
	}
	return 0;
}

int dict_sync(struct store *s)
{
	int64_t gen;
	if (store_generation(s, &gen) < 0)
		return -1;
	if (!s->dict || gen != s->dict_gen) {
		store_cache_reset(s);
		s->dict = profile_new();
		trie_init(&s->trie);
		s->dict_gen = gen;
		/* loading it all: size the trie's index once */
		int64_t nodes;
		if (store_query_int(s, "SELECT coalesce(sum(n), 0) FROM dict WHERE id >= 2 << 40",
		                    &nodes, "reading the dictionary") < 0)
			return -1;
		trie_reserve(&s->trie, (size_t)nodes + 1);
	}
	struct strbuf reftext = STRBUF_INIT;
	int have_ref = 0, ret = -1;
	for (int kind = 0; kind < DICT_NKINDS; kind++) {
		size_t have[DICT_NKINDS];
		dict_counts(s, have);
		sqlite3_stmt *st = store_stmt(s, Q_DICT_SINCE);
		if (!st)
			return -1;
		sqlite3_bind_int(st, 1, kind);
		sqlite3_bind_int64(st, 2, (int64_t)have[kind]);
		uint64_t next = have[kind];
		int rc;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			uint64_t first = (uint64_t)sqlite3_column_int64(st, 0);
			uint64_t n = (uint64_t)sqlite3_column_int64(st, 1);
			struct dict_chunk c = {0};
			if (first != next) {
				sqlite3_reset(st);
				cp_error("database %s is corrupt: dictionary chunk of kind %d "
				         "starts at %llu, expected %llu; restore a backup",
				         s->path, kind, (unsigned long long)first,
				         (unsigned long long)next);
				goto out;
			}
			const void *blob = sqlite3_column_blob(st, 2);
			size_t len = (size_t)sqlite3_column_bytes(st, 2);
			/* the first chunk is applied by now (chunks come in id order) */
			if (dict_chunk_needs_ref(blob, len, kind) && !have_ref) {
				if (first_strings_text(s, s->dict, &reftext) < 0) {
					sqlite3_reset(st);
					goto out;
				}
				have_ref = 1;
			}
			struct dict_ref ref = {reftext.buf, reftext.len};
			int r = dict_decode_chunk(blob, len, kind, first, have_ref ? &ref : NULL,
			                          &c);
			if (r == 0 && c.n != n)
				r = cbad("item count differs from its row");
			if (r < 0) {
				dict_chunk_release(&c);
				sqlite3_reset(st);
				store_corrupt(s, "reading the dictionary");
				goto out;
			}
			r = apply_chunk(s, &c);
			dict_chunk_release(&c);
			if (r < 0) {
				sqlite3_reset(st);
				goto out;
			}
			next += n;
		}
		sqlite3_reset(st);
		if (rc != SQLITE_DONE) {
			store_sqlerr(s, "reading the dictionary");
			goto out;
		}
	}
	ret = 0;
out:
	strbuf_release(&reftext);
	return ret;
}

int dict_write_range(struct store *s, const struct profile *names, const struct profile_node *nodes,
                     int kind, size_t first, size_t n, size_t max)
{
	struct strbuf sb = STRBUF_INIT, reftext = STRBUF_INIT;
	int ret = 0, have_ref = 0;
	for (size_t at = first, cnt; at < first + n && !ret; at += cnt) {
		cnt = first + n - at < max ? first + n - at : max;
		strbuf_reset(&sb);
		/* strings after the first chunk (written by now) are coded against it */
		if (kind == DICT_STRINGS && at > 1 && !have_ref) {
			if (first_strings_text(s, names, &reftext) < 0) {
				ret = -1;
				break;
			}
			have_ref = 1;
		}
		struct dict_ref ref = {reftext.buf, reftext.len};
		dict_encode_chunk(&sb, names, nodes, kind, at, cnt, have_ref ? &ref : NULL);
		sqlite3_stmt *st = store_stmt(s, Q_DICT_PUT);
		if (!st) {
			ret = -1;
			break;
		}
		sqlite3_bind_int(st, 1, kind);
		sqlite3_bind_int64(st, 2, (int64_t)at);
		sqlite3_bind_int64(st, 3, (int64_t)cnt);
		sqlite3_bind_blob(st, 4, sb.buf, (int)sb.len, SQLITE_STATIC);
		ret = store_step_done(s, st, "storing the dictionary");
	}
	strbuf_release(&sb);
	strbuf_release(&reftext);
	return ret;
}

int dict_write_new(struct store *s, const size_t before[DICT_NKINDS])
{
	size_t now[DICT_NKINDS];
	dict_counts(s, now);
	for (int kind = 0; kind < DICT_NKINDS; kind++)
		if (now[kind] > before[kind] &&
		    dict_write_range(s, s->dict, s->trie.nodes, kind, before[kind],
		                     now[kind] - before[kind], SIZE_MAX) < 0)
			return -1;
	return 0;
}

/* ---- reading by id ---------------------------------------------------------------------- */

void dict_reader_init(struct dict_reader *r, struct store *s)
{
	memset(r, 0, sizeof(*r));
	r->s = s;
}

void dict_reader_release(struct dict_reader *r)
{
	for (int k = 0; k < DICT_NKINDS; k++) {
		for (size_t i = 0; i < r->n[k]; i++) {
			dict_chunk_release(r->chunks[k] + i);
		}
		free(r->chunks[k]);
	}
	memset(r, 0, sizeof(*r));
}

static const char *const kind_names[] = {"string", "frame", "stack node"};

/* The loaded chunk holding id, loading it when needed; NULL with cp_error set. */
static const struct dict_chunk *chunk_of(struct dict_reader *r, int kind, uint64_t id)
{
	struct dict_chunk *c = r->chunks[kind];
	size_t lo = 0, hi = r->n[kind];
	while (lo < hi) { /* the first chunk starting after id */
		size_t mid = lo + (hi - lo) / 2;
		if (c[mid].first <= id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && id < c[lo - 1].first + c[lo - 1].n)
		return &c[lo - 1];
	struct store *s = r->s;
	sqlite3_stmt *st = store_stmt(s, Q_DICT_AT);
	if (!st)
		return NULL;
	sqlite3_bind_int(st, 1, kind);
	sqlite3_bind_int64(st, 2, id > INT64_MAX ? INT64_MAX : (int64_t)id);
	int rc = sqlite3_step(st);
	struct dict_chunk nc = {0};
	uint64_t first = 0, n = 0;
	if (rc == SQLITE_ROW) {
		first = (uint64_t)sqlite3_column_int64(st, 0);
		n = (uint64_t)sqlite3_column_int64(st, 1);
	}
	void *copy = NULL;
	int loaded_first = 0;
	if (rc == SQLITE_ROW && id >= first && id - first < n) {
		const void *blob = sqlite3_column_blob(st, 2);
		size_t len = (size_t)sqlite3_column_bytes(st, 2);
		struct dict_ref ref = {0}, *refp = NULL;
		if (dict_chunk_needs_ref(blob, len, kind) && first > 1) {
			/* loading the first chunk reuses the statement: keep the blob */
			copy = xmalloc(len ? len : 1);
			memcpy(copy, blob, len);
			blob = copy;
			sqlite3_reset(st);
			loaded_first = 1;
			const struct dict_chunk *fc = chunk_of(r, DICT_STRINGS, 1);
			if (!fc) {
				free(copy);
				return NULL;
			}
			ref = (struct dict_ref){fc->pool, fc->pool_len};
			refp = &ref;
		}
		int dr = dict_decode_chunk(blob, len, kind, first, refp, &nc);
		if (dr == 0 && nc.n != n)
			dr = cbad("item count differs from its row");
		if (dr < 0) {
			free(copy);
			dict_chunk_release(&nc);
			sqlite3_reset(st);
			store_corrupt(s, "reading the dictionary");
			return NULL;
		}
	}
	free(copy);
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		store_sqlerr(s, "reading the dictionary");
		return NULL;
	}
	if (rc != SQLITE_ROW || id < first || id - first >= n) {
		cp_error("database %s is corrupt: %s %llu is missing; restore a backup", s->path,
		         kind_names[kind], (unsigned long long)id);
		return NULL;
	}
	if (loaded_first) { /* loading the first chunk added one before this one */
		c = r->chunks[kind];
		for (lo = 0; lo < r->n[kind] && c[lo].first <= id; lo++)
			;
	}
	ALLOC_GROW(r->chunks[kind], r->n[kind] + 1, r->alloc[kind]);
	c = r->chunks[kind];
	memmove(c + lo + 1, c + lo, (r->n[kind] - lo) * sizeof(*c));
	c[lo] = nc;
	r->n[kind]++;
	return &c[lo];
}

int dict_read_string(struct dict_reader *r, uint64_t id, const char **out)
{
	if (!id) {
		*out = "";
		return 0;
	}
	const struct dict_chunk *c = chunk_of(r, DICT_STRINGS, id);
	if (!c)
		return -1;
	*out = c->pool + c->off[id - c->first];
	return 0;
}

int dict_read_frame(struct dict_reader *r, uint64_t id, struct profile_frame *out)
{
	const struct dict_chunk *c = chunk_of(r, DICT_FRAMES, id);
	if (!c)
		return -1;
	*out = c->frames[id - c->first];
	return 0;
}

int dict_read_node(struct dict_reader *r, uint64_t id, uint64_t *parent, uint64_t *frame)
{
	const struct dict_chunk *c = chunk_of(r, DICT_NODES, id);
	if (!c)
		return -1;
	*parent = c->parent[id - c->first];
	*frame = c->frame[id - c->first];
	return 0;
}
