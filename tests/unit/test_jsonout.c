/* common/jsonout: the one way JSON is written - names that are not valid UTF-8 repaired,
 * never dropped (jansson refuses them and json_pack then loses the whole object); keys in
 * insertion order; reals with 10 significant digits; compact or indented; a NULL root is an
 * error, not a crash. Also esc_name, which cleans names where they are interned. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/escape.h"
#include "common/jsonout.h"

static void test_strings(void **state)
{
	(void)state;
	json_t *s = jsonout_str("f\xff\xc3x");
	assert_non_null(s);
	assert_string_equal(json_string_value(s), "f\xef\xbf\xbd\xef\xbf\xbdx");
	json_decref(s);
	/* json_pack with a repaired string keeps the object */
	json_t *o = json_pack("{s:o}", "name", jsonout_str("\xed\xa0\x80"));
	assert_non_null(o);
	jsonout_set(o, "k\xff", json_integer(1));
	assert_non_null(json_object_get(o, "k\xef\xbf\xbd"));
	json_decref(o);
}

static void test_dump(void **state)
{
	(void)state;
	json_t *o = json_object();
	jsonout_set(o, "z", json_real(0.1 + 0.2));
	jsonout_set(o, "a", jsonout_str("x<y"));
	struct strbuf sb = STRBUF_INIT;
	assert_int_equal(jsonout_dump(o, &sb, JSONOUT_COMPACT), 0);
	assert_string_equal(sb.buf, "{\"z\":0.3,\"a\":\"x<y\"}");
	strbuf_reset(&sb);
	o = json_pack("{s:i}", "n", 1);
	assert_int_equal(jsonout_dump(o, &sb, 0), 0);
	assert_string_equal(sb.buf, "{\n  \"n\": 1\n}\n");
	strbuf_reset(&sb);
	assert_int_equal(jsonout_dump(NULL, &sb, 0), -1);
	assert_non_null(strstr(cp_last_error(), "JSON"));
	strbuf_release(&sb);
}

static void test_esc_name(void **state)
{
	(void)state;
	struct strbuf sb = STRBUF_INIT;
	esc_name(&sb, "ab\xff", 3, 100);
	assert_string_equal(sb.buf, "ab\xef\xbf\xbd");
	strbuf_reset(&sb);
	/* cut: at most max bytes, on a character boundary, ending in U+2026 */
	esc_name(&sb, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 8, 6);
	assert_string_equal(sb.buf, "\xc3\xa9\xe2\x80\xa6");
	strbuf_reset(&sb);
	esc_name(&sb, "abcdef", 6, 6);
	assert_string_equal(sb.buf, "abcdef");
	strbuf_release(&sb);
}

/* The one reading step of every escaper: an invalid or cut-short sequence is one U+FFFD per
 * byte, and the count agrees with the steps. */
static void test_utf8_next(void **state)
{
	(void)state;
	const char s[] = "a\xc3\xa9\xff\xe2\x82";
	const uint32_t want[] = {'a', 0xe9, 0xfffd, 0xfffd, 0xfffd};
	size_t n = sizeof(s) - 1, i = 0, k = 0;
	while (i < n) {
		assert_true(k < 5);
		assert_int_equal(esc_utf8_next(s, n, &i), want[k++]);
	}
	assert_int_equal(i, n);
	assert_int_equal(k, 5);
	assert_int_equal(esc_utf8_chars(s, n), 5);
	assert_int_equal(esc_utf8_chars("", 0), 0);
	struct strbuf sb = STRBUF_INIT;
	esc_append_len(&sb, s, n, ESC_TERM);
	assert_string_equal(sb.buf, "a\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	strbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_strings),
	        cmocka_unit_test(test_dump),
	        cmocka_unit_test(test_esc_name),
	        cmocka_unit_test(test_utf8_next),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
