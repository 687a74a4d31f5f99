/* store/rc: the entropy coder under the store's compact formats - a binary arithmetic coder
 * with adaptive probabilities, and unsigned integers coded bit by bit through such
 * probabilities ("models"), so that each field of a blob learns its own distribution while the
 * blob is coded. On profile data it codes about a third smaller than zlib, and small blobs pay
 * no table overhead. Ours, written for ciprof; see docs/store.md for the reasoning.
 *
 * The coding is canonical: a decoder that reads exactly the symbols an encoder wrote ends with
 * rc_dec_finish == 0 only if the bytes are exactly the encoder's (no trailing, missing or
 * altered final byte). Decoders read any bytes safely: reading past the end yields zeros and
 * marks the stream as overrun, which callers check (rc_dec_failed) to stop early. An arithmetic
 * code has no redundancy - damaged bytes decode to other symbols - so the store's blobs carry a
 * checksum besides (blob_seal). */
#ifndef CP_STORE_RC_H
#define CP_STORE_RC_H

#include "common/strbuf.h"

#include <stddef.h>
#include <stdint.h>

/* Probability that a bit is 1, in 1/4096 units (low 12 bits), and how many bits it has seen
 * (top 4 bits, saturating): it moves towards each bit by 1/2^shift of the distance, fast while
 * it has seen few bits (shift = 1 + bits seen), then at 1/16 - steady, since most fields of a
 * blob are stationary. */
typedef uint16_t rc_prob;
#define RC_PROB_INIT 2048
#define RC_PROB_BITS 12
#define RC_PROB_ONE  (1u << RC_PROB_BITS)
#define RC_PROB_MASK (RC_PROB_ONE - 1)
#define RC_ADAPT_MAX 4

struct rc_enc {
	struct strbuf *out; /* borrowed */
	uint32_t lo, hi;
};

struct rc_dec {
	const unsigned char *p, *end;
	uint32_t lo, hi, x;
	size_t over; /* bytes read past the end */
};

void rc_enc_init(struct rc_enc *e, struct strbuf *out);
static inline void rc_enc_bit(struct rc_enc *e, rc_prob *p, int bit);
/* Writes the final byte; the encoder must not be used afterwards. */
void rc_enc_finish(struct rc_enc *e);

void rc_dec_init(struct rc_dec *d, const void *data, size_t len);
static inline int rc_dec_bit(struct rc_dec *d, rc_prob *p);
/* Nonzero once the decoder has read more bytes than any complete stream of this length. */
int rc_dec_failed(const struct rc_dec *d);
/* 0 when the decoder consumed the stream exactly as an encoder finishes it, else -1. */
int rc_dec_finish(const struct rc_dec *d);

/* The most modelled decisions (rc_enc_bit) a stream of len bytes can code: a decision narrows
 * the interval by at least the factor of the likeliest probability a model reaches, 4081/4096
 * (0.00529 bit), and the 32-bit interval holds at most 4 bytes not yet written - so at most
 * 8 / 0.00529 = 1511.4 decisions a byte (a stream of 20 M certain bits measures 1511.1). A
 * decoder bounds what a hostile count may make it allocate by this, divided by the fewest
 * decisions one of its items costs; a tighter guess refuses what the encoder writes. */
static inline uint64_t rc_max_decisions(size_t len)
{
	return ((uint64_t)len + 4) * 1536;
}

/* An adaptive model of unsigned 64-bit integers: the bit length (0..64) in unary through a
 * probability per length, the two bits below the leading one through probabilities per length,
 * the rest at even odds. Small values cost a few bits once learned. */
struct rc_uint {
	rc_prob len[64];
	rc_prob mant[65][3];
};

void rc_uint_init(struct rc_uint *m);
void rc_enc_uint(struct rc_enc *e, struct rc_uint *m, uint64_t v);
uint64_t rc_dec_uint(struct rc_dec *d, struct rc_uint *m);

/* Zigzag: signed <-> unsigned with small magnitudes small. */
static inline uint64_t rc_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t rc_unzigzag(uint64_t u)
{
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/* ---- the bit coders, inline: they are most of the decoding time ------------------------- */

static inline void rc_adapt(rc_prob *p, int bit)
{
	unsigned v = *p & RC_PROB_MASK, n = *p >> RC_PROB_BITS;
	unsigned shift = n + 1 < RC_ADAPT_MAX ? n + 1 : RC_ADAPT_MAX;
	if (bit)
		v += (RC_PROB_ONE - v) >> shift;
	else
		v -= v >> shift;
	if (n < 15)
		n++;
	*p = (rc_prob)(n << RC_PROB_BITS | v);
}

static inline uint32_t rc_split(uint32_t lo, uint32_t hi, rc_prob p)
{
	return lo + (uint32_t)(((uint64_t)(hi - lo) * (p & RC_PROB_MASK)) >> RC_PROB_BITS);
}

/* A byte is final (and goes out) when lo and hi share their top byte. */
static inline void rc_enc_normalize(struct rc_enc *e)
{
	while (!((e->lo ^ e->hi) & 0xff000000u)) {
		strbuf_addch(e->out, (int)(e->hi >> 24));
		e->lo <<= 8;
		e->hi = (e->hi << 8) | 0xff;
	}
}

static inline void rc_enc_bit(struct rc_enc *e, rc_prob *p, int bit)
{
	uint32_t mid = rc_split(e->lo, e->hi, *p);
	if (bit)
		e->hi = mid;
	else
		e->lo = mid + 1;
	rc_adapt(p, bit);
	rc_enc_normalize(e);
}

static inline unsigned rc_next_byte(struct rc_dec *d)
{
	if (d->p < d->end)
		return *d->p++;
	d->over++;
	return 0;
}

/* An encoder's stream always has x's top byte equal to lo's when lo and hi share it (lo <= x
 * <= hi). Any other byte could be "forgotten" by the shift and make two streams decode alike,
 * so it is malformed. */
static inline void rc_dec_normalize(struct rc_dec *d)
{
	while (!((d->lo ^ d->hi) & 0xff000000u)) {
		if ((d->x ^ d->lo) & 0xff000000u)
			d->over = SIZE_MAX / 2;
		d->lo <<= 8;
		d->hi = (d->hi << 8) | 0xff;
		d->x = (d->x << 8) | rc_next_byte(d);
	}
}

static inline int rc_dec_bit(struct rc_dec *d, rc_prob *p)
{
	uint32_t mid = rc_split(d->lo, d->hi, *p);
	int bit = d->x <= mid;
	if (bit)
		d->hi = mid;
	else
		d->lo = mid + 1;
	rc_adapt(p, bit);
	rc_dec_normalize(d);
	return bit;
}

#endif
