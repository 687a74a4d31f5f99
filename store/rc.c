/* Binary arithmetic coding (see rc.h). The interval [lo, hi] narrows with each bit in
 * proportion to its probability; whenever lo and hi agree on their top byte, that byte is
 * final and goes out. No carries: the interval never straddles a byte boundary it has written.
 * The final byte is one more than lo's top byte, which the decoder checks, so that exactly one
 * byte string codes each sequence of bits. */
#include "store/rc.h"

#include <string.h>

void rc_enc_init(struct rc_enc *e, struct strbuf *out)
{
	e->out = out;
	e->lo = 0;
	e->hi = 0xffffffffu;
}

/* A bit at even odds, no model. */
static inline void enc_raw(struct rc_enc *e, int bit)
{
	uint32_t mid = e->lo + ((e->hi - e->lo) >> 1);
	if (bit)
		e->hi = mid;
	else
		e->lo = mid + 1;
	rc_enc_normalize(e);
}

void rc_enc_finish(struct rc_enc *e)
{
	strbuf_addch(e->out, (int)((e->lo >> 24) + 1));
}

void rc_dec_init(struct rc_dec *d, const void *data, size_t len)
{
	d->p = data;
	d->end = d->p + len;
	d->lo = 0;
	d->hi = 0xffffffffu;
	d->x = 0;
	d->over = 0;
	for (int i = 0; i < 4; i++)
		d->x = (d->x << 8) | rc_next_byte(d);
}

static inline int dec_raw(struct rc_dec *d)
{
	uint32_t mid = d->lo + ((d->hi - d->lo) >> 1);
	int bit = d->x <= mid;
	if (bit)
		d->hi = mid;
	else
		d->lo = mid + 1;
	rc_dec_normalize(d);
	return bit;
}

/* The encoder's output is one byte per normalization shift plus the final byte; the decoder
 * read four bytes ahead, so a complete stream leaves it exactly three bytes past the end. */
int rc_dec_failed(const struct rc_dec *d)
{
	return d->over > 3;
}

int rc_dec_finish(const struct rc_dec *d)
{
	if (d->over != 3 || d->p != d->end)
		return -1;
	return d->x == ((d->lo >> 24) + 1) << 24 ? 0 : -1;
}

void rc_uint_init(struct rc_uint *m)
{
	for (size_t i = 0; i < sizeof(m->len) / sizeof(m->len[0]); i++)
		m->len[i] = RC_PROB_INIT;
	for (size_t i = 0; i < 65; i++)
		for (size_t j = 0; j < 3; j++)
			m->mant[i][j] = RC_PROB_INIT;
}

/* The bit length n goes in unary - "is it more than k?" for k = 0, 1, ... with a probability
 * per k: as exact a model of n's distribution as any, and only n + 1 decisions, which keeps
 * decoding fast for the small numbers that dominate. */
void rc_enc_uint(struct rc_enc *e, struct rc_uint *m, uint64_t v)
{
	unsigned n = v ? 64u - (unsigned)__builtin_clzll(v) : 0;
	for (unsigned k = 0; k < n; k++)
		rc_enc_bit(e, &m->len[k], 1);
	if (n < 64)
		rc_enc_bit(e, &m->len[n], 0);
	if (n < 2)
		return;
	int b1 = (int)((v >> (n - 2)) & 1);
	rc_enc_bit(e, &m->mant[n][0], b1);
	if (n < 3)
		return;
	rc_enc_bit(e, &m->mant[n][1 + b1], (int)((v >> (n - 3)) & 1));
	for (int k = (int)n - 4; k >= 0; k--)
		enc_raw(e, (int)((v >> k) & 1));
}

uint64_t rc_dec_uint(struct rc_dec *d, struct rc_uint *m)
{
	unsigned n = 0;
	while (n < 64 && rc_dec_bit(d, &m->len[n]))
		n++;
	if (n < 2)
		return n;
	int b1 = rc_dec_bit(d, &m->mant[n][0]);
	uint64_t v = 2u | (uint64_t)b1;
	if (n < 3)
		return v;
	v = (v << 1) | (uint64_t)rc_dec_bit(d, &m->mant[n][1 + b1]);
	for (int k = (int)n - 4; k >= 0; k--)
		v = (v << 1) | (uint64_t)dec_raw(d);
	return v;
}
