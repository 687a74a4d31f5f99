/* Unit tests of store/blob: round trips of both formats, merging, and every kind of malformed
 * blob the decoders must refuse with a message. */
#include "store/blob.h"
#include "common/error.h"
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
		assert_int_equal(blob_decode(sb.buf, sb.len, 0, &out), 0);
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
	assert_int_equal(blob_decode(bytes, len, 0, &out), -1);
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
	assert_int_equal(blob_decode("\x01\x00", 2, 0, &out), 0);
	assert_int_equal(blob_decode("\x01\x02\x05\x01\x01\x7f", 6, 3, &out), 0);
	assert_int_equal(out.n, 2);
	assert_int_equal(out.e[1].node, 6);
	assert_int_equal(out.e[1].count, 127);
	assert_int_equal(out.e[1].test, 3);
	assert_int_equal(blob_decode("\x02\x02\x01\x01\x01\x01\x01\x01\x01\x01", 10, 0, &out), 0);
	assert_int_equal(out.n, 4);
	assert_int_equal(out.e[3].test, 2);
	blob_entries_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_round_trip),
	        cmocka_unit_test(test_compact),
	        cmocka_unit_test(test_merge),
	        cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
