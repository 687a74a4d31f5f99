/* Unit tests of store/blob, store/rc and the dictionary chunk codecs: round trips of every
 * format, canonical coding, compactness, merging, and every kind of malformed input the
 * decoders must refuse with a message. */
#include "store/blob.h"
#include "common/error.h"
#include "store/dict.h"
#include "store/rc.h"
#include "test_store_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static void random_entries(struct blob_entries *b, uint64_t seed, int tests, size_t n)
{
	uint64_t st = seed;
	for (size_t i = 0; i < n; i++) {
		uint64_t shift = tu_rand(&st) % 60;
		blob_entries_push(b, tests ? tu_rand(&st) % (uint64_t)tests : 0,
		                  tu_rand(&st) >> shift, 1 + (tu_rand(&st) >> (shift + 4)));
	}
	blob_entries_normalize(b);
}

static void test_round_trip(void **state)
{
	for (uint64_t seed = 1; seed < 40; seed++) {
		struct blob_entries in, out;
		blob_entries_init(&in);
		blob_entries_init(&out);
		random_entries(&in, seed, 0, (size_t)(seed * 37 % 500));
		struct strbuf sb = STRBUF_INIT;
		blob_encode_pairs(&sb, in.e, in.n);
		assert_int_equal(blob_decode(sb.buf, sb.len, 0, NULL, &out), 0);
		assert_int_equal(out.n, in.n);
		if (in.n)
			assert_memory_equal(in.e, out.e, in.n * sizeof(*in.e));
		blob_entries_release(&in);
		blob_entries_release(&out);

		random_entries(&in, seed, 9, (size_t)(seed * 53 % 700));
		strbuf_reset(&sb);
		blob_encode_multi(&sb, &in);
		assert_int_equal(blob_decode_multi(sb.buf, sb.len, &out), 0);
		assert_int_equal(out.n, in.n);
		if (in.n)
			assert_memory_equal(in.e, out.e, in.n * sizeof(*in.e));
		blob_entries_release(&in);
		blob_entries_release(&out);
		strbuf_release(&sb);
	}
}

static void test_compact(void **state)
{
	/* Dense node ids and small counts: two bytes per stack. */
	struct blob_entries in;
	blob_entries_init(&in);
	for (uint64_t i = 0; i < 1000; i++)
		blob_entries_push(&in, 0, 5000 + i * 3, 1 + i % 100);
	struct strbuf sb = STRBUF_INIT;
	blob_encode_pairs(&sb, in.e, in.n);
	assert_true(sb.len <= 2 * 1000 + 4);
	strbuf_release(&sb);
	blob_entries_release(&in);
}

static void test_merge(void **state)
{
	struct blob_entries a, b, m, naive;
	blob_entries_init(&a);
	blob_entries_init(&b);
	blob_entries_init(&m);
	blob_entries_init(&naive);
	random_entries(&a, 5, 4, 300);
	random_entries(&b, 6, 4, 300);
	/* Force overlaps. */
	for (size_t i = 0; i < a.n; i += 3)
		blob_entries_push(&b, a.e[i].test, a.e[i].node, 7);
	blob_entries_normalize(&b);
	blob_merge(&a, &b, &m);
	for (size_t i = 0; i < a.n; i++)
		blob_entries_push(&naive, a.e[i].test, a.e[i].node, a.e[i].count);
	for (size_t i = 0; i < b.n; i++)
		blob_entries_push(&naive, b.e[i].test, b.e[i].node, b.e[i].count);
	blob_entries_normalize(&naive);
	assert_int_equal(m.n, naive.n);
	assert_memory_equal(m.e, naive.e, m.n * sizeof(*m.e));
	/* Saturation instead of wrap-around. */
	struct blob_entries x, y, z;
	blob_entries_init(&x);
	blob_entries_init(&y);
	blob_entries_init(&z);
	blob_entries_push(&x, 0, 1, UINT64_MAX - 1);
	blob_entries_push(&y, 0, 1, 5);
	blob_merge(&x, &y, &z);
	assert_int_equal(z.e[0].count, UINT64_MAX);
	blob_entries_release(&x);
	blob_entries_release(&y);
	blob_entries_release(&z);
	blob_entries_release(&a);
	blob_entries_release(&b);
	blob_entries_release(&m);
	blob_entries_release(&naive);
}

static void expect_bad(const char *bytes, size_t len, const char *want)
{
	struct blob_entries out;
	blob_entries_init(&out);
	cp_clear_error();
	assert_int_equal(blob_decode(bytes, len, 0, NULL, &out), -1);
	if (!strstr(cp_last_error(), want))
		fail_msg("message '%s' lacks '%s'", cp_last_error(), want);
	assert_non_null(strstr(cp_last_error(), "profile blob"));
	blob_entries_release(&out);
}

static void test_malformed(void **state)
{
	expect_bad("", 0, "empty");
	expect_bad("\x07\x00", 2, "unknown format");
	expect_bad("\x01", 1, "truncated");
	expect_bad("\x01\x01\x05", 3, "claims 1 pairs");
	expect_bad("\x01\x02\x05\x01\x05", 5, "claims 2 pairs");
	expect_bad("\x01\x01\x85", 3, "claims 1 pairs");
	expect_bad("\x01\x01\x85\x00", 4, "overlong");
	expect_bad("\x01\x01\x05\x00", 4, "zero sample count");
	expect_bad("\x01\x02\x05\x01\x00\x01", 6, "not strictly increasing");
	expect_bad("\x01\x01\x05\x01\xff", 5, "after the end");
	expect_bad("\x01\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f\x01", 13, "64 bits");
	expect_bad("\x01\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x01", 14, "64 bits");
	expect_bad("\x01\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x01\x01\x01", 15, "overflows");
	expect_bad("\x01\xff\xff\xff\xff\x0f", 6, "claims");
	expect_bad("\x02\x02\x01\x01\x01\x01\x00\x01\x01\x01", 10, "tests not strictly");
	expect_bad("\x02\x05\x01", 3, "claims 5 tests");
	expect_bad("\x02\x02\x02\x00\x01\x01\x01\x01", 8, "a test with no samples");
	expect_bad("\x02\x01\x01\x01\x01\x01\x09", 7, "after the end");
	/* And the well-formed neighbours pass. */
	struct blob_entries out;
	blob_entries_init(&out);
	assert_int_equal(blob_decode("\x01\x00", 2, 0, NULL, &out), 0);
	assert_int_equal(blob_decode("\x01\x02\x05\x01\x01\x7f", 6, 3, NULL, &out), 0);
	assert_int_equal(out.n, 2);
	assert_int_equal(out.e[1].node, 6);
	assert_int_equal(out.e[1].count, 127);
	assert_int_equal(out.e[1].test, 3);
	assert_int_equal(blob_decode("\x02\x02\x01\x01\x01\x01\x01\x01\x01\x01", 10, 0, NULL, &out),
	                 0);
	assert_int_equal(out.n, 4);
	assert_int_equal(out.e[3].test, 2);
	blob_entries_release(&out);
}

/* ---- schema 2 --------------------------------------------------------------------------- */

static void assert_same(const struct blob_entries *a, const struct blob_entries *b)
{
	assert_int_equal(a->n, b->n);
	if (a->n)
		assert_memory_equal(a->e, b->e, a->n * sizeof(*a->e));
}

/* b = a with some entries gone, some counts changed (by any amount, wrapping included) and
 * some entries new. */
static void derive(struct blob_entries *b, const struct blob_entries *a, uint64_t seed)
{
	uint64_t st = seed;
	for (size_t i = 0; i < a->n; i++) {
		uint64_t r = tu_rand(&st) % 10;
		if (r == 0)
			continue;
		uint64_t c = a->e[i].count;
		if (r == 1)
			c = 1 + (tu_rand(&st) >> (tu_rand(&st) % 64));
		else if (r < 5)
			c = c + 3 > c ? c + 3 : 1;
		blob_entries_push(b, a->e[i].test, a->e[i].node, c ? c : 1);
	}
	for (size_t i = 0; i < a->n / 10 + 2; i++)
		blob_entries_push(b, tu_rand(&st) % 12, tu_rand(&st) >> (tu_rand(&st) % 64),
		                  1 + tu_rand(&st) % 1000);
	blob_entries_normalize(b);
}

static void test_v2_round_trip(void **state)
{
	for (uint64_t seed = 1; seed < 60; seed++) {
		struct blob_entries a, b, out;
		blob_entries_init(&a);
		blob_entries_init(&b);
		blob_entries_init(&out);
		random_entries(&a, seed, seed % 3 ? 9 : 0, (size_t)(seed * 53 % 700));
		struct strbuf sb = STRBUF_INIT;
		blob_encode_full(&sb, &a);
		assert_int_equal(blob_decode(sb.buf, sb.len, 0, NULL, &out), 0);
		assert_same(&a, &out);
		/* canonical: the decoded entries code to the same bytes */
		struct strbuf again = STRBUF_INIT;
		blob_encode_full(&again, &out);
		assert_int_equal(again.len, sb.len);
		assert_memory_equal(again.buf, sb.buf, sb.len);

		derive(&b, &a, seed);
		strbuf_reset(&sb);
		blob_encode_delta(&sb, &b, &a);
		out.n = 0;
		if (blob_decode(sb.buf, sb.len, 0, &a, &out) < 0)
			fail_msg("seed %llu: %s", (unsigned long long)seed, cp_last_error());
		assert_same(&b, &out);
		strbuf_reset(&again);
		blob_encode_delta(&again, &out, &a);
		assert_int_equal(again.len, sb.len);
		assert_memory_equal(again.buf, sb.buf, sb.len);
		/* a damaged, cut or extended blob is refused */
		out.n = 0;
		sb.buf[sb.len - 1] ^= 1;
		assert_int_equal(blob_decode(sb.buf, sb.len, 0, &a, &out), -1);
		sb.buf[sb.len - 1] ^= 1;
		out.n = 0;
		assert_int_equal(blob_decode(sb.buf, sb.len - 1, 0, &a, &out), -1);
		strbuf_addch(&sb, 0);
		out.n = 0;
		assert_int_equal(blob_decode(sb.buf, sb.len, 0, &a, &out), -1);
		strbuf_release(&sb);
		strbuf_release(&again);
		blob_entries_release(&a);
		blob_entries_release(&b);
		blob_entries_release(&out);
	}
}

static void test_v2_compact(void **state)
{
	/* A run like the previous one but for its sampling noise costs well under a byte per
	 * stack; standalone, a few thousand stacks cost under two bytes each. */
	struct blob_entries a, b;
	blob_entries_init(&a);
	blob_entries_init(&b);
	uint64_t st = 5;
	for (uint64_t i = 0; i < 3000; i++) {
		uint64_t c = 1 + tu_rand(&st) % 40;
		blob_entries_push(&a, i % 20, 100 + i * 3, c);
		blob_entries_push(&b, i % 20, 100 + i * 3, c + tu_rand(&st) % 5);
	}
	blob_entries_normalize(&a);
	blob_entries_normalize(&b);
	struct strbuf sb = STRBUF_INIT;
	blob_encode_full(&sb, &a);
	assert_true(sb.len < 2 * 3000);
	strbuf_reset(&sb);
	blob_encode_delta(&sb, &b, &a);
	assert_true(sb.len < 3000 * 3 / 8); /* 3 bits of noise each */
	strbuf_reset(&sb);
	blob_encode_delta(&sb, &a, &a);
	assert_true(sb.len < 100); /* nothing changed */
	strbuf_release(&sb);
	blob_entries_release(&a);
	blob_entries_release(&b);
}

static void expect_bad2(const struct strbuf *sb, const struct blob_entries *ref, const char *want)
{
	struct blob_entries out;
	blob_entries_init(&out);
	cp_clear_error();
	assert_int_equal(blob_decode(sb->buf, sb->len, 0, ref, &out), -1);
	if (!strstr(cp_last_error(), want))
		fail_msg("message '%s' lacks '%s'", cp_last_error(), want);
	assert_non_null(strstr(cp_last_error(), "profile blob"));
	blob_entries_release(&out);
}

static void test_v2_malformed(void **state)
{
	struct blob_entries ref, small, b;
	blob_entries_init(&ref);
	blob_entries_init(&small);
	blob_entries_init(&b);
	for (uint64_t i = 1; i <= 10; i++)
		blob_entries_push(&ref, 0, i, 2);
	for (uint64_t i = 1; i <= 3; i++)
		blob_entries_push(&small, 0, i, 2);
	struct strbuf sb = STRBUF_INIT;

	strbuf_addch(&sb, BLOB_FORMAT_FULL);
	expect_bad2(&sb, NULL, "truncated");
	strbuf_reset(&sb);
	strbuf_add(&sb, "\x05\x00", 2);
	expect_bad2(&sb, NULL, "unknown format");

	/* a delta needs its reference, and must fit it */
	strbuf_reset(&sb);
	blob_entries_push(&b, 0, 9, 2);
	blob_entries_push(&b, 0, 10, 1);
	blob_encode_delta(&sb, &b, &ref); /* removes entries 0..7 of ref */
	expect_bad2(&sb, NULL, "without its reference");
	expect_bad2(&sb, &small, "removes more entries than its reference has");

	/* removed 8 of 10: against a reference of 9 entries the gaps run past its end */
	struct blob_entries nine;
	blob_entries_init(&nine);
	for (uint64_t i = 1; i <= 9; i++)
		blob_entries_push(&nine, 0, i, 2);
	strbuf_reset(&sb);
	b.n = 0;
	blob_entries_push(&b, 0, 1, 2);
	blob_entries_push(&b, 0, 3, 2);
	blob_encode_delta(&sb, &b, &ref); /* removes 2, 4..10 */
	expect_bad2(&sb, &nine, "removed entry outside the reference");

	/* a new entry that the reference it is decoded against already has */
	strbuf_reset(&sb);
	b.n = 0;
	blob_entries_push(&b, 0, 1, 2);
	blob_entries_push(&b, 0, 2, 2);
	blob_entries_push(&b, 0, 3, 2);
	blob_entries_push(&b, 0, 4, 7);
	blob_encode_delta(&sb, &b, &small); /* adds node 4 */
	struct blob_entries four;
	blob_entries_init(&four);
	for (uint64_t i = 1; i <= 4; i++)
		blob_entries_push(&four, 0, i, 2);
	expect_bad2(&sb, &four, "already in the reference");

	/* a count that comes out zero against another reference */
	strbuf_reset(&sb);
	b.n = 0;
	blob_entries_push(&b, 0, 1, 1);
	blob_entries_push(&b, 0, 2, 2);
	blob_entries_push(&b, 0, 3, 2);
	blob_encode_delta(&sb, &b, &small); /* node 1: 2 -> 1, i.e. -1 */
	struct blob_entries ones;
	blob_entries_init(&ones);
	for (uint64_t i = 1; i <= 3; i++)
		blob_entries_push(&ones, 0, i, 1);
	expect_bad2(&sb, &ones, "zero sample count");

	/* a full blob claiming more entries than its bytes can code */
	strbuf_reset(&sb);
	strbuf_addch(&sb, BLOB_FORMAT_FULL);
	struct rc_enc e;
	struct rc_uint m;
	rc_uint_init(&m);
	rc_enc_init(&e, &sb);
	rc_enc_uint(&e, &m, 1u << 30);
	rc_enc_finish(&e);
	blob_seal(&sb, 0);
	expect_bad2(&sb, NULL, "claims more tests");
	/* and any damaged byte fails the checksum */
	for (size_t i = 1; i < sb.len; i++) {
		sb.buf[i] ^= 0x40;
		expect_bad2(&sb, NULL, "damaged (checksum mismatch)");
		sb.buf[i] ^= 0x40;
	}

	strbuf_release(&sb);
	blob_entries_release(&ref);
	blob_entries_release(&small);
	blob_entries_release(&nine);
	blob_entries_release(&four);
	blob_entries_release(&ones);
	blob_entries_release(&b);
}

static void test_rc(void **state)
{
	/* Bits through skewed and drifting probabilities, and integers of every length. */
	uint64_t st = 11;
	struct strbuf sb = STRBUF_INIT;
	struct rc_enc e;
	rc_enc_init(&e, &sb);
	rc_prob p[4] = {RC_PROB_INIT, RC_PROB_INIT, RC_PROB_INIT, RC_PROB_INIT};
	struct rc_uint m;
	rc_uint_init(&m);
	int bits[5000];
	uint64_t vals[600];
	for (int i = 0; i < 5000; i++) {
		bits[i] = (int)(tu_rand(&st) % 100 < (uint64_t)(i < 2500 ? 3 : 90));
		rc_enc_bit(&e, &p[i % 4], bits[i]);
	}
	for (int i = 0; i < 600; i++) {
		vals[i] = i < 4 ? (uint64_t[]){0, 1, UINT64_MAX, UINT64_MAX - 1}[i]
		                : tu_rand(&st) >> (tu_rand(&st) % 64);
		rc_enc_uint(&e, &m, vals[i]);
	}
	rc_enc_finish(&e);
	/* 2500 bits at 3 % and 2500 at 90 % carry ~1,300 bits of information */
	assert_true(sb.len < 1000 + 600 * 9);
	struct rc_dec d;
	rc_dec_init(&d, sb.buf, sb.len);
	rc_prob q[4] = {RC_PROB_INIT, RC_PROB_INIT, RC_PROB_INIT, RC_PROB_INIT};
	rc_uint_init(&m);
	for (int i = 0; i < 5000; i++)
		assert_int_equal(rc_dec_bit(&d, &q[i % 4]), bits[i]);
	for (int i = 0; i < 600; i++)
		assert_true(rc_dec_uint(&d, &m) == vals[i]);
	assert_false(rc_dec_failed(&d));
	assert_int_equal(rc_dec_finish(&d), 0);
	/* Reading on past the end is noticed. */
	for (int i = 0; i < 200 && !rc_dec_failed(&d); i++)
		rc_dec_uint(&d, &m);
	assert_true(rc_dec_failed(&d));
	strbuf_release(&sb);
}

/* ---- dictionary chunks ------------------------------------------------------------------ */

static void test_dict_chunks(void **state)
{
	struct profile *d = profile_new();
	uint64_t st = 3;
	for (int i = 0; i < 300; i++) {
		char name[64];
		snprintf(name, sizeof(name), "ns%d::Class%d::method%d(int)", i % 7, i % 13, i);
		profile_intern(d, name);
	}
	for (int i = 0; i < 200; i++) {
		struct profile_frame f = {
		        1 + (uint32_t)(tu_rand(&st) % 300), 1 + (uint32_t)(tu_rand(&st) % 5),
		        (uint32_t)(tu_rand(&st) % 3), (uint32_t)(tu_rand(&st) % 999), i == 0};
		profile_frame(d, &f);
	}
	/* stacks sharing prefixes, the way call trees do */
	uint32_t stack[40];
	for (int s = 0; s < 400; s++) {
		int depth = 1 + (int)(tu_rand(&st) % 30),
		    keep = s ? (int)(tu_rand(&st) % depth) : 0;
		uint32_t node = 0;
		for (int k = 0; k < depth; k++) {
			if (k >= keep)
				stack[k] = (uint32_t)(tu_rand(&st) % d->nframes);
			node = profile_node(d, node, stack[k]);
		}
	}
	static const int kinds[] = {DICT_STRINGS, DICT_FRAMES, DICT_NODES};
	size_t firsts[] = {1, 0, 1}, counts[] = {d->nstr - 1, d->nframes, d->nnodes - 1};
	for (int k = 0; k < 3; k++) {
		/* the whole kind, and its second half alone (parents before the chunk) */
		for (int half = 0; half < 2; half++) {
			size_t first = firsts[k] + (half ? counts[k] / 2 : 0);
			size_t n = firsts[k] + counts[k] - first;
			struct strbuf sb = STRBUF_INIT;
			dict_encode_chunk(&sb, d, d->nodes, kinds[k], first, n, NULL);
			struct dict_chunk c = {0};
			if (dict_decode_chunk(sb.buf, sb.len, kinds[k], first, NULL, &c) < 0)
				fail_msg("kind %d: %s", k, cp_last_error());
			assert_int_equal(c.n, n);
			for (size_t i = 0; i < n; i++) {
				if (kinds[k] == DICT_STRINGS)
					assert_string_equal(c.pool + c.off[i],
					                    profile_str(d, (uint32_t)(first + i)));
				else if (kinds[k] == DICT_FRAMES)
					assert_memory_equal(&c.frames[i], &d->frames[first + i],
					                    sizeof(c.frames[i]));
				else {
					assert_int_equal(c.parent[i], d->nodes[first + i].parent);
					assert_int_equal(c.frame[i], d->nodes[first + i].frame);
				}
			}
			if (kinds[k] == DICT_NODES && !half) /* call trees code compactly */
				assert_true(sb.len < 2 * n);
			dict_chunk_release(&c);
			/* truncated, or decoded as another kind: refused with a message */
			cp_clear_error();
			assert_int_equal(
			        dict_decode_chunk(sb.buf, sb.len - 1, kinds[k], first, NULL, &c),
			        -1);
			assert_non_null(strstr(cp_last_error(), "dictionary chunk"));
			dict_chunk_release(&c);
			assert_int_equal(dict_decode_chunk(sb.buf, sb.len, kinds[(k + 1) % 3],
			                                   first, NULL, &c),
			                 -1);
			assert_non_null(strstr(cp_last_error(), "unknown format"));
			dict_chunk_release(&c);
			strbuf_release(&sb);
		}
	}
	profile_free(d);
}

/* What one more run's dictionary chunks cost: its new names share substrings with the names
 * the first run brought (coded against the first chunk, 0x24), and its new stacks end in its
 * new frames (coded as "the next frame", 0x25). Both codings must survive a round trip, and a
 * 0x24 chunk read without the first chunk's text is refused, not misread. */
static void test_dict_chunks_against_history(void **state)
{
	(void)state;
	struct profile *d = profile_new();
	char name[64];
	/* the first run: 400 names made of 40 words (word i spelled from i's bits) */
	static const char *const parts[] = {"eval",   "frame", "dict",   "unicode", "alloc",
	                                    "lookup", "dl",    "expand", "parse",   "token"};
	char words[40][40];
	for (int w = 0; w < 40; w++)
		snprintf(words[w], sizeof(words[w]), "%s%s_%s", w & 1 ? "_Py" : "", parts[w % 10],
		         parts[(w * 7 + 3) % 10]);
	for (int i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "%s_%s", words[i % 40], words[(i + i / 40 + 1) % 40]);
		profile_intern(d, name);
	}
	size_t first_n = d->nstr - 1;
	struct strbuf text = STRBUF_INIT;
	for (size_t i = 1; i <= first_n; i++) {
		strbuf_addstr(&text, profile_str(d, (uint32_t)i));
		strbuf_addch(&text, 0);
	}
	/* a later run: 60 new names like them */
	for (int i = 0; i < 60; i++) {
		snprintf(name, sizeof(name), "%s_%s_%d", words[(i * 13) % 40],
		         words[(i * 17 + 5) % 40], i);
		profile_intern(d, name);
	}
	assert_int_equal(d->nstr, first_n + 61);
	struct dict_ref ref = {text.buf, text.len};
	struct strbuf plain = STRBUF_INIT, against = STRBUF_INIT;
	dict_encode_chunk(&plain, d, NULL, DICT_STRINGS, first_n + 1, 60, NULL);
	dict_encode_chunk(&against, d, NULL, DICT_STRINGS, first_n + 1, 60, &ref);
	assert_int_equal((unsigned char)against.buf[0], DICT_FORMAT_STRINGS_REF);
	print_message("60 new names: %zu bytes alone, %zu against the first chunk\n", plain.len,
	              against.len);
	assert_true(against.len * 10 < plain.len * 8); /* at least a fifth smaller */
	struct dict_chunk c = {0};
	if (dict_decode_chunk(against.buf, against.len, DICT_STRINGS, first_n + 1, &ref, &c) < 0)
		fail_msg("%s", cp_last_error());
	assert_int_equal(c.n, 60);
	for (size_t i = 0; i < 60; i++)
		assert_string_equal(c.pool + c.off[i], profile_str(d, (uint32_t)(first_n + 1 + i)));
	dict_chunk_release(&c);
	cp_clear_error();
	assert_int_equal(
	        dict_decode_chunk(against.buf, against.len, DICT_STRINGS, first_n + 1, NULL, &c),
	        -1);
	assert_non_null(strstr(cp_last_error(), "first strings chunk"));
	dict_chunk_release(&c);
	/* another reference text decodes to other text or fails: never silently the same */
	struct dict_ref other = {"unrelated\0names\0", 16};
	if (dict_decode_chunk(against.buf, against.len, DICT_STRINGS, first_n + 1, &other, &c) == 0)
		assert_string_not_equal(c.pool, profile_str(d, (uint32_t)(first_n + 1)));
	dict_chunk_release(&c);

	/* stack nodes: 1,000 nodes of old frames, then 100 new stacks of 3 new frames each
	 * below old nodes */
	struct profile_node *nodes = xcalloc(1 + 1000 + 300, sizeof(*nodes));
	uint64_t st = 11;
	for (uint32_t i = 1; i <= 1000; i++)
		nodes[i] = (struct profile_node){(uint32_t)(tu_rand(&st) % i), (uint32_t)(i % 500)};
	uint32_t id = 1001, frame = 500;
	for (int k = 0; k < 100; k++)
		for (int j = 0; j < 3; j++, id++)
			nodes[id] = (struct profile_node){
			        j ? id - 1 : (uint32_t)(tu_rand(&st) % 1000) + 1, frame++};
	struct strbuf sb = STRBUF_INIT;
	dict_encode_chunk(&sb, NULL, nodes, DICT_NODES, 1001, 300, NULL);
	assert_int_equal((unsigned char)sb.buf[0], DICT_FORMAT_NODES_NEXT);
	if (dict_decode_chunk(sb.buf, sb.len, DICT_NODES, 1001, NULL, &c) < 0)
		fail_msg("%s", cp_last_error());
	for (size_t i = 0; i < 300; i++) {
		assert_int_equal(c.parent[i], nodes[1001 + i].parent);
		assert_int_equal(c.frame[i], nodes[1001 + i].frame);
	}
	dict_chunk_release(&c);
	/* each new frame costs a bit, not its id: the 100 parents dominate (~10 bits each) */
	assert_true(sb.len < 200);
	free(nodes);
	strbuf_release(&sb);
	strbuf_release(&plain);
	strbuf_release(&against);
	strbuf_release(&text);
	profile_free(d);
}

/* The most compressible input the encoders meet must decode: a stack 100,000 frames deep of
 * one repeated frame (a folded file of deep recursion) and 300,000 stacks of one sample each
 * (a flat profile) code to far more items per byte than a guess of 256 allowed, and the store
 * wrote what it then called corrupt. */
static void test_extremes_decode(void **state)
{
	struct profile *d = profile_new();
	struct profile_frame f = {profile_intern(d, "recurse"), 0, 0, 0, 0};
	uint32_t frame = profile_frame(d, &f), node = 0;
	for (int i = 0; i < 100000; i++)
		node = profile_node(d, node, frame);
	struct strbuf sb = STRBUF_INIT;
	uint64_t n = d->nnodes - 1;
	dict_encode_chunk(&sb, d, d->nodes, DICT_NODES, 1, n, NULL);
	assert_true(sb.len * 256 + 1024 < n); /* beyond the old bound */
	struct dict_chunk c = {0};
	if (dict_decode_chunk(sb.buf, sb.len, DICT_NODES, 1, NULL, &c) < 0)
		fail_msg("deep chain: %s", cp_last_error());
	assert_int_equal(c.n, n);
	assert_int_equal(c.parent[n - 1], n - 1);
	dict_chunk_release(&c);

	struct blob_entries a, b, out;
	blob_entries_init(&a);
	blob_entries_init(&b);
	blob_entries_init(&out);
	for (uint64_t i = 0; i < 300000; i++) {
		blob_entries_push(&a, 0, 1 + i, 1);
		blob_entries_push(&b, 0, 1 + i, 1);
	}
	for (uint64_t i = 0; i < 300000; i++)
		blob_entries_push(&b, 0, 300001 + i, 1);
	blob_entries_normalize(&a);
	blob_entries_normalize(&b);
	strbuf_reset(&sb);
	blob_encode_full(&sb, &a);
	assert_true(sb.len * 256 + 1024 < a.n);
	if (blob_decode(sb.buf, sb.len, 0, NULL, &out) < 0)
		fail_msg("flat profile: %s", cp_last_error());
	assert_same(&a, &out);
	strbuf_reset(&sb);
	blob_encode_delta(&sb, &b, &a);
	out.n = 0;
	if (blob_decode(sb.buf, sb.len, 0, &a, &out) < 0)
		fail_msg("flat profile against the previous run: %s", cp_last_error());
	assert_same(&b, &out);
	strbuf_release(&sb);
	blob_entries_release(&a);
	blob_entries_release(&b);
	blob_entries_release(&out);
	profile_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_round_trip),
	        cmocka_unit_test(test_compact),
	        cmocka_unit_test(test_merge),
	        cmocka_unit_test(test_malformed),
	        cmocka_unit_test(test_v2_round_trip),
	        cmocka_unit_test(test_v2_compact),
	        cmocka_unit_test(test_v2_malformed),
	        cmocka_unit_test(test_rc),
	        cmocka_unit_test(test_dict_chunks),
	        cmocka_unit_test(test_dict_chunks_against_history),
	        cmocka_unit_test(test_extremes_decode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
