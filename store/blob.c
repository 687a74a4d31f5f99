/* Coding of profile blobs (see blob.h): schema 1's varint formats and schema 2's
 * arithmetic-coded full and delta formats. The decoders trust nothing: every length is
 * checked against what the bytes left can hold before anything is allocated. */
#include "store/blob.h"
#include "common/error.h"
#include "common/xalloc.h"
#include "store/rc.h"

#include <zlib.h>

#include <stdlib.h>
#include <string.h>

void blob_entries_init(struct blob_entries *b)
{
	memset(b, 0, sizeof(*b));
}

void blob_entries_release(struct blob_entries *b)
{
	free(b->e);
	blob_entries_init(b);
}

void blob_entries_push(struct blob_entries *b, uint64_t test, uint64_t node, uint64_t count)
{
	ALLOC_GROW(b->e, st_add(b->n, 1), b->alloc);
	b->e[b->n++] = (struct blob_entry){test, node, count};
}

static int entry_cmp(const void *x, const void *y)
{
	const struct blob_entry *a = x, *b = y;
	if (a->test != b->test)
		return a->test < b->test ? -1 : 1;
	if (a->node != b->node)
		return a->node < b->node ? -1 : 1;
	return 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void blob_entries_normalize(struct blob_entries *b)
{
	if (b->n > 1)
		qsort(b->e, b->n, sizeof(*b->e), entry_cmp);
	size_t k = 0;
	for (size_t i = 0; i < b->n; i++) {
		if (k && b->e[k - 1].test == b->e[i].test && b->e[k - 1].node == b->e[i].node)
			b->e[k - 1].count = sat_add(b->e[k - 1].count, b->e[i].count);
		else
			b->e[k++] = b->e[i];
	}
	b->n = k;
	k = 0;
	for (size_t i = 0; i < b->n; i++)
		if (b->e[i].count)
			b->e[k++] = b->e[i];
	b->n = k;
}

void blob_entries_copy(struct blob_entries *dst, const struct blob_entries *src)
{
	dst->n = 0;
	ALLOC_GROW(dst->e, src->n ? src->n : 1, dst->alloc);
	if (src->n)
		memcpy(dst->e, src->e, src->n * sizeof(*src->e));
	dst->n = src->n;
}

void blob_put_varint(struct strbuf *sb, uint64_t v)
{
	unsigned char buf[10];
	size_t n = 0;
	do {
		unsigned char c = v & 0x7f;
		v >>= 7;
		buf[n++] = c | (v ? 0x80 : 0);
	} while (v);
	strbuf_add(sb, buf, n);
}

int blob_get_varint(const unsigned char **p, const unsigned char *end, const char *what,
                    uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0;; shift += 7) {
		if (*p >= end)
			return cp_error("%s: truncated number", what);
		unsigned char c = *(*p)++;
		if (shift == 63 && (c & 0x7e))
			return cp_error("%s: number does not fit in 64 bits", what);
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			/* The shortest form only: a trailing zero byte would make two codings. */
			if (shift && !c)
				return cp_error("%s: overlong number", what);
			*out = v;
			return 0;
		}
		if (shift == 63)
			return cp_error("%s: number longer than 10 bytes", what);
	}
}

static void put_pairs(struct strbuf *sb, const struct blob_entry *e, size_t n)
{
	blob_put_varint(sb, n);
	uint64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		blob_put_varint(sb, e[i].node - prev);
		blob_put_varint(sb, e[i].count);
		prev = e[i].node;
	}
}

void blob_encode_pairs(struct strbuf *sb, const struct blob_entry *e, size_t n)
{
	strbuf_addch(sb, BLOB_FORMAT_PAIRS);
	put_pairs(sb, e, n);
}

void blob_encode_multi(struct strbuf *sb, const struct blob_entries *b)
{
	size_t ntests = 0;
	for (size_t i = 0; i < b->n; i++)
		if (!i || b->e[i].test != b->e[i - 1].test)
			ntests++;
	strbuf_addch(sb, BLOB_FORMAT_MULTI);
	blob_put_varint(sb, ntests);
	uint64_t prev_test = 0;
	for (size_t i = 0; i < b->n;) {
		size_t j = i;
		while (j < b->n && b->e[j].test == b->e[i].test)
			j++;
		blob_put_varint(sb, b->e[i].test - prev_test);
		prev_test = b->e[i].test;
		put_pairs(sb, b->e + i, j - i);
		i = j;
	}
}

struct reader {
	const unsigned char *p, *end;
};

static int get_varint(struct reader *r, uint64_t *out)
{
	return blob_get_varint(&r->p, r->end, "profile blob", out);
}

static int get_pairs(struct reader *r, uint64_t test, struct blob_entries *out, int nonempty)
{
	uint64_t n;
	if (get_varint(r, &n) < 0)
		return -1;
	if (!n && nonempty)
		return cp_error("profile blob: a test with no samples");
	/* Each pair takes at least two bytes: refuse a count the rest cannot hold. */
	if (n > (uint64_t)(r->end - r->p) / 2)
		return cp_error("profile blob: claims %llu pairs in %zu bytes",
		                (unsigned long long)n, (size_t)(r->end - r->p));
	uint64_t node = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t delta, count;
		if (get_varint(r, &delta) < 0 || get_varint(r, &count) < 0)
			return -1;
		if (i && !delta)
			return cp_error("profile blob: stack nodes not strictly increasing");
		if (delta > UINT64_MAX - node)
			return cp_error("profile blob: stack node id overflows");
		node += delta;
		if (!count)
			return cp_error("profile blob: zero sample count");
		blob_entries_push(out, test, node, count);
	}
	return 0;
}

int blob_decode_pairs(const void *data, size_t len, uint64_t test, struct blob_entries *out)
{
	struct reader r = {data, (const unsigned char *)data + len};
	if (!len)
		return cp_error("profile blob: empty");
	if (*r.p++ != BLOB_FORMAT_PAIRS)
		return cp_error("profile blob: unknown format 0x%02x",
		                ((const unsigned char *)data)[0]);
	if (get_pairs(&r, test, out, 0) < 0)
		return -1;
	if (r.p != r.end)
		return cp_error("profile blob: %zu bytes after the end", (size_t)(r.end - r.p));
	return 0;
}

int blob_decode_multi(const void *data, size_t len, struct blob_entries *out)
{
	struct reader r = {data, (const unsigned char *)data + len};
	if (!len)
		return cp_error("profile blob: empty");
	if (*r.p++ != BLOB_FORMAT_MULTI)
		return cp_error("profile blob: unknown format 0x%02x",
		                ((const unsigned char *)data)[0]);
	uint64_t ntests;
	if (get_varint(&r, &ntests) < 0)
		return -1;
	if (ntests > (uint64_t)(r.end - r.p) / 2)
		return cp_error("profile blob: claims %llu tests in %zu bytes",
		                (unsigned long long)ntests, (size_t)(r.end - r.p));
	uint64_t test = 0;
	for (uint64_t i = 0; i < ntests; i++) {
		uint64_t delta;
		if (get_varint(&r, &delta) < 0)
			return -1;
		if (i && !delta)
			return cp_error("profile blob: tests not strictly increasing");
		if (delta > UINT64_MAX - test)
			return cp_error("profile blob: test id overflows");
		test += delta;
		if (get_pairs(&r, test, out, 1) < 0)
			return -1;
	}
	if (r.p != r.end)
		return cp_error("profile blob: %zu bytes after the end", (size_t)(r.end - r.p));
	return 0;
}

int blob_decode(const void *data, size_t len, uint64_t test, const struct blob_entries *ref,
                struct blob_entries *out)
{
	int format = len ? ((const unsigned char *)data)[0] : 0;
	switch (format) {
	case BLOB_FORMAT_MULTI:
		return blob_decode_multi(data, len, out);
	case BLOB_FORMAT_FULL:
		return blob_decode_full(data, len, out);
	case BLOB_FORMAT_DELTA:
		return blob_decode_delta(data, len, ref, out);
	default:
		return blob_decode_pairs(data, len, test, out);
	}
}

void blob_accumulate(struct blob_entries *acc, const struct blob_entries *b,
                     struct blob_entries *tmp)
{
	blob_merge(acc, b, tmp);
	struct blob_entries t = *acc;
	*acc = *tmp;
	*tmp = t;
}

void blob_merge(const struct blob_entries *a, const struct blob_entries *b,
                struct blob_entries *out)
{
	out->n = 0;
	ALLOC_GROW(out->e, st_add(a->n, b->n) ? st_add(a->n, b->n) : 1, out->alloc);
	size_t i = 0, j = 0, k = 0;
	while (i < a->n && j < b->n) {
		int c = entry_cmp(&a->e[i], &b->e[j]);
		if (c < 0) {
			out->e[k++] = a->e[i++];
		} else if (c > 0) {
			out->e[k++] = b->e[j++];
		} else {
			struct blob_entry m = a->e[i++];
			m.count = sat_add(m.count, b->e[j++].count);
			out->e[k++] = m;
		}
	}
	while (i < a->n)
		out->e[k++] = a->e[i++];
	while (j < b->n)
		out->e[k++] = b->e[j++];
	out->n = k;
}

/* ---- schema 2: arithmetic-coded formats ------------------------------------------------- */

void blob_seal(struct strbuf *sb, size_t start)
{
	uLong crc = crc32(0, (const Bytef *)sb->buf + start, (uInt)(sb->len - start));
	unsigned char b[4] = {(unsigned char)crc, (unsigned char)(crc >> 8),
	                      (unsigned char)(crc >> 16), (unsigned char)(crc >> 24)};
	strbuf_add(sb, b, 4);
}

int blob_unseal(const void *data, size_t len, const char *what, size_t *body)
{
	const unsigned char *p = data;
	if (len < 5)
		return cp_error("%s: truncated", what);
	uLong crc = crc32(0, p, (uInt)(len - 4));
	const unsigned char *c = p + len - 4;
	if ((c[0] | (uLong)c[1] << 8 | (uLong)c[2] << 16 | (uLong)c[3] << 24) !=
	    (crc & 0xffffffffu))
		return cp_error("%s: damaged (checksum mismatch)", what);
	*body = len - 4;
	return 0;
}

/* No encoder codes more entries than this in a blob of len bytes (an entry costs at least two
 * decisions, its node and its count; rc.h): a bound on what a hostile length field can make a
 * decoder allocate. Many stacks of one sample each come near it. */
static uint64_t max_entries(size_t len)
{
	return rc_max_decisions(len) / 2;
}

static int bad(const char *what)
{
	return cp_error("profile blob: %s", what);
}

static int truncated(void)
{
	return bad("truncated or malformed arithmetic code");
}

struct full_models {
	struct rc_uint ntests, test, npairs, node_first, node_delta, count;
};

static void full_models_init(struct full_models *m)
{
	rc_uint_init(&m->ntests);
	rc_uint_init(&m->test);
	rc_uint_init(&m->npairs);
	rc_uint_init(&m->node_first);
	rc_uint_init(&m->node_delta);
	rc_uint_init(&m->count);
}

void blob_encode_full(struct strbuf *sb, const struct blob_entries *b)
{
	struct full_models *m = xmalloc(sizeof(*m));
	full_models_init(m);
	struct rc_enc e;
	size_t start = sb->len;
	strbuf_addch(sb, BLOB_FORMAT_FULL);
	rc_enc_init(&e, sb);
	size_t ntests = 0;
	for (size_t i = 0; i < b->n; i++)
		if (!i || b->e[i].test != b->e[i - 1].test)
			ntests++;
	rc_enc_uint(&e, &m->ntests, ntests);
	for (size_t i = 0; i < b->n;) {
		size_t j = i;
		while (j < b->n && b->e[j].test == b->e[i].test)
			j++;
		rc_enc_uint(&e, &m->test, i ? b->e[i].test - b->e[i - 1].test - 1 : b->e[i].test);
		rc_enc_uint(&e, &m->npairs, j - i - 1);
		for (size_t k = i; k < j; k++) {
			if (k == i)
				rc_enc_uint(&e, &m->node_first, b->e[k].node);
			else
				rc_enc_uint(&e, &m->node_delta,
				            b->e[k].node - b->e[k - 1].node - 1);
			rc_enc_uint(&e, &m->count, b->e[k].count - 1);
		}
		i = j;
	}
	rc_enc_finish(&e);
	blob_seal(sb, start);
	free(m);
}

/* x + 1 + d, or -1 when it overflows. */
static int add_after(uint64_t x, uint64_t d, uint64_t *out)
{
	if (d >= UINT64_MAX - x)
		return -1;
	*out = x + 1 + d;
	return 0;
}

static int finish(struct rc_dec *d)
{
	if (rc_dec_failed(d))
		return truncated();
	if (rc_dec_finish(d) < 0)
		return bad("bytes after the end, or a malformed last byte");
	return 0;
}

int blob_decode_full(const void *data, size_t len, struct blob_entries *out)
{
	if (!len)
		return bad("empty");
	if (((const unsigned char *)data)[0] != BLOB_FORMAT_FULL)
		return cp_error("profile blob: unknown format 0x%02x",
		                ((const unsigned char *)data)[0]);
	if (blob_unseal(data, len, "profile blob", &len) < 0)
		return -1;
	struct full_models *m = xmalloc(sizeof(*m));
	full_models_init(m);
	struct rc_dec d;
	rc_dec_init(&d, (const unsigned char *)data + 1, len - 1);
	int ret = -1;
	uint64_t limit = max_entries(len), total = 0;
	uint64_t ntests = rc_dec_uint(&d, &m->ntests), test = 0;
	if (rc_dec_failed(&d)) {
		truncated();
		goto out;
	}
	if (ntests > limit) {
		bad("claims more tests than its bytes can code");
		goto out;
	}
	for (uint64_t t = 0; t < ntests; t++) {
		uint64_t v = rc_dec_uint(&d, &m->test);
		if (t && add_after(test, v, &test) < 0) {
			bad("test id overflows");
			goto out;
		}
		if (!t)
			test = v;
		uint64_t npairs = rc_dec_uint(&d, &m->npairs);
		if (rc_dec_failed(&d)) {
			truncated();
			goto out;
		}
		if (npairs >= limit - total) {
			bad("claims more entries than its bytes can code");
			goto out;
		}
		npairs++;
		total += npairs;
		uint64_t node = 0;
		for (uint64_t k = 0; k < npairs; k++) {
			uint64_t nv = rc_dec_uint(&d, k ? &m->node_delta : &m->node_first);
			if (k && add_after(node, nv, &node) < 0) {
				bad("stack node id overflows");
				goto out;
			}
			if (!k)
				node = nv;
			uint64_t c = rc_dec_uint(&d, &m->count);
			if (c == UINT64_MAX) {
				bad("sample count overflows");
				goto out;
			}
			if (rc_dec_failed(&d)) {
				truncated();
				goto out;
			}
			blob_entries_push(out, test, node, c + 1);
		}
	}
	ret = finish(&d);
out:
	free(m);
	return ret;
}

#define KEPT_CONTEXTS 24

struct delta_models {
	struct rc_uint nremoved, gap, nadded, add_test, add_node_same, add_node_jump, add_count;
	struct rc_uint kept[KEPT_CONTEXTS];
};

static void delta_models_init(struct delta_models *m)
{
	rc_uint_init(&m->nremoved);
	rc_uint_init(&m->gap);
	rc_uint_init(&m->nadded);
	rc_uint_init(&m->add_test);
	rc_uint_init(&m->add_node_same);
	rc_uint_init(&m->add_node_jump);
	rc_uint_init(&m->add_count);
	for (int i = 0; i < KEPT_CONTEXTS; i++)
		rc_uint_init(&m->kept[i]);
}

/* Kept counts are coded in a context of the reference count's magnitude: the noise of a
 * count grows with its size. */
static int kept_context(uint64_t ref)
{
	int n = ref ? 64 - __builtin_clzll(ref) : 0;
	return n < KEPT_CONTEXTS ? n : KEPT_CONTEXTS - 1;
}

void blob_encode_delta(struct strbuf *sb, const struct blob_entries *b,
                       const struct blob_entries *ref)
{
	struct delta_models *m = xmalloc(sizeof(*m));
	delta_models_init(m);
	struct rc_enc e;
	size_t start = sb->len;
	strbuf_addch(sb, BLOB_FORMAT_DELTA);
	rc_enc_init(&e, sb);
	size_t nremoved = 0, nadded = 0;
	for (size_t i = 0, j = 0; i < ref->n || j < b->n;) {
		int c = i >= ref->n ? 1 : j >= b->n ? -1 : entry_cmp(&ref->e[i], &b->e[j]);
		nremoved += c < 0;
		nadded += c > 0;
		i += c <= 0;
		j += c >= 0;
	}
	rc_enc_uint(&e, &m->nremoved, nremoved);
	size_t last = 0;
	int first = 1;
	for (size_t i = 0, j = 0; i < ref->n || j < b->n;) {
		int c = i >= ref->n ? 1 : j >= b->n ? -1 : entry_cmp(&ref->e[i], &b->e[j]);
		if (c < 0) {
			rc_enc_uint(&e, &m->gap, first ? i : i - last - 1);
			last = i;
			first = 0;
		}
		i += c <= 0;
		j += c >= 0;
	}
	rc_enc_uint(&e, &m->nadded, nadded);
	const struct blob_entry *prev = NULL;
	for (size_t i = 0, j = 0; i < ref->n || j < b->n;) {
		int c = i >= ref->n ? 1 : j >= b->n ? -1 : entry_cmp(&ref->e[i], &b->e[j]);
		if (c > 0) {
			const struct blob_entry *a = &b->e[j];
			uint64_t dt = a->test - (prev ? prev->test : 0);
			rc_enc_uint(&e, &m->add_test, dt);
			if (prev && !dt)
				rc_enc_uint(&e, &m->add_node_same, a->node - prev->node - 1);
			else
				rc_enc_uint(
				        &e, &m->add_node_jump,
				        rc_zigzag((int64_t)(a->node - (prev ? prev->node : 0))));
			rc_enc_uint(&e, &m->add_count, a->count - 1);
			prev = a;
		}
		i += c <= 0;
		j += c >= 0;
	}
	for (size_t i = 0, j = 0; i < ref->n || j < b->n;) {
		int c = i >= ref->n ? 1 : j >= b->n ? -1 : entry_cmp(&ref->e[i], &b->e[j]);
		if (!c)
			rc_enc_uint(&e, &m->kept[kept_context(ref->e[i].count)],
			            rc_zigzag((int64_t)(b->e[j].count - ref->e[i].count)));
		i += c <= 0;
		j += c >= 0;
	}
	rc_enc_finish(&e);
	blob_seal(sb, start);
	free(m);
}

int blob_decode_delta(const void *data, size_t len, const struct blob_entries *ref,
                      struct blob_entries *out)
{
	if (!len)
		return bad("empty");
	if (((const unsigned char *)data)[0] != BLOB_FORMAT_DELTA)
		return cp_error("profile blob: unknown format 0x%02x",
		                ((const unsigned char *)data)[0]);
	if (!ref)
		return bad("a delta blob decoded without its reference");
	if (blob_unseal(data, len, "profile blob", &len) < 0)
		return -1;
	struct delta_models *m = xmalloc(sizeof(*m));
	delta_models_init(m);
	struct rc_dec d;
	rc_dec_init(&d, (const unsigned char *)data + 1, len - 1);
	int ret = -1;
	unsigned char *removed = NULL;
	struct blob_entries added;
	blob_entries_init(&added);

	uint64_t nremoved = rc_dec_uint(&d, &m->nremoved);
	if (rc_dec_failed(&d)) {
		truncated();
		goto out;
	}
	if (nremoved > ref->n) {
		bad("removes more entries than its reference has");
		goto out;
	}
	removed = xcalloc(ref->n ? ref->n : 1, 1);
	uint64_t idx = 0;
	for (uint64_t k = 0; k < nremoved; k++) {
		uint64_t gap = rc_dec_uint(&d, &m->gap);
		if (k && add_after(idx, gap, &idx) < 0) {
			bad("removed entry outside the reference");
			goto out;
		}
		if (!k)
			idx = gap;
		if (rc_dec_failed(&d)) {
			truncated();
			goto out;
		}
		if (idx >= ref->n) {
			bad("removed entry outside the reference");
			goto out;
		}
		removed[idx] = 1;
	}
	uint64_t nadded = rc_dec_uint(&d, &m->nadded);
	if (rc_dec_failed(&d)) {
		truncated();
		goto out;
	}
	if (nadded > max_entries(len)) {
		bad("claims more entries than its bytes can code");
		goto out;
	}
	for (uint64_t k = 0; k < nadded; k++) {
		const struct blob_entry *prev = k ? &added.e[added.n - 1] : NULL;
		uint64_t dt = rc_dec_uint(&d, &m->add_test), test = prev ? prev->test : 0, node;
		if (dt > UINT64_MAX - test) {
			bad("test id overflows");
			goto out;
		}
		test += dt;
		if (prev && !dt) {
			if (add_after(prev->node, rc_dec_uint(&d, &m->add_node_same), &node) < 0) {
				bad("stack node id overflows");
				goto out;
			}
		} else {
			node = (prev ? prev->node : 0) +
			       (uint64_t)rc_unzigzag(rc_dec_uint(&d, &m->add_node_jump));
		}
		uint64_t c = rc_dec_uint(&d, &m->add_count);
		if (c == UINT64_MAX) {
			bad("sample count overflows");
			goto out;
		}
		if (rc_dec_failed(&d)) {
			truncated();
			goto out;
		}
		blob_entries_push(&added, test, node, c + 1);
	}
	/* The result, in order: kept reference entries with their new counts, and the added. */
	for (size_t i = 0, j = 0; i < ref->n || j < added.n;) {
		int c = i >= ref->n ? 1 : j >= added.n ? -1 : entry_cmp(&ref->e[i], &added.e[j]);
		if (!c) {
			bad("a new entry already in the reference");
			goto out;
		}
		if (c > 0) {
			blob_entries_push(out, added.e[j].test, added.e[j].node, added.e[j].count);
			j++;
			continue;
		}
		if (!removed[i]) {
			const struct blob_entry *r = &ref->e[i];
			uint64_t u = rc_dec_uint(&d, &m->kept[kept_context(r->count)]);
			uint64_t count = r->count + (uint64_t)rc_unzigzag(u);
			if (rc_dec_failed(&d)) {
				truncated();
				goto out;
			}
			if (!count) {
				bad("zero sample count");
				goto out;
			}
			blob_entries_push(out, r->test, r->node, count);
		}
		i++;
	}
	ret = finish(&d);
out:
	free(removed);
	blob_entries_release(&added);
	free(m);
	return ret;
}
