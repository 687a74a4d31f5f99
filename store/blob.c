/* Varint + delta coding of profile blobs (see blob.h). The decoders trust nothing: every
 * length is checked against the bytes left before anything is allocated. */
#include "store/blob.h"
#include "common/error.h"
#include "common/xalloc.h"

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
	uint64_t v = 0;
	for (unsigned shift = 0;; shift += 7) {
		if (r->p >= r->end)
			return cp_error("profile blob: truncated number");
		unsigned char c = *r->p++;
		if (shift == 63 && (c & 0x7e))
			return cp_error("profile blob: number does not fit in 64 bits");
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			/* The shortest form only: a trailing zero byte would make two codings. */
			if (shift && !c)
				return cp_error("profile blob: overlong number");
			*out = v;
			return 0;
		}
		if (shift == 63)
			return cp_error("profile blob: number longer than 10 bytes");
	}
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

int blob_decode(const void *data, size_t len, uint64_t test, struct blob_entries *out)
{
	if (len && ((const unsigned char *)data)[0] == BLOB_FORMAT_MULTI)
		return blob_decode_multi(data, len, out);
	return blob_decode_pairs(data, len, test, out);
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
