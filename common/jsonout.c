/* The one way JSON is written (see jsonout.h). */
#include "common/jsonout.h"
#include "common/error.h"
#include "common/escape.h"
#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>

json_t *jsonout_strn(const char *s, size_t n)
{
	json_t *j;
	if (esc_utf8_valid(s, n)) {
		j = json_stringn(s, n);
	} else {
		struct strbuf sb = STRBUF_INIT;
		esc_append_len(&sb, s, n, ESC_UTF8);
		j = json_stringn(sb.buf ? sb.buf : "", sb.len);
		strbuf_release(&sb);
	}
	if (!j)
		xalloc_die(n);
	return j;
}

json_t *jsonout_str(const char *s)
{
	return jsonout_strn(s, strlen(s));
}

void jsonout_set(json_t *obj, const char *key, json_t *value)
{
	struct strbuf sb = STRBUF_INIT;
	json_object_set_new(obj, esc_str(&sb, key, ESC_UTF8), value);
	strbuf_release(&sb);
}

int jsonout_dump(json_t *root, struct strbuf *out, unsigned flags)
{
	if (!root)
		return cp_error("cannot build the JSON output (out of memory?)");
	size_t jf = JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10) |
	            ((flags & JSONOUT_COMPACT) ? JSON_COMPACT : JSON_INDENT(2));
	char *text = json_dumps(root, jf);
	json_decref(root);
	if (!text)
		return cp_error("cannot encode the JSON output (out of memory?)");
	strbuf_addstr(out, text);
	if (!(flags & JSONOUT_COMPACT))
		strbuf_addch(out, '\n');
	free(text);
	return 0;
}

int jsonout_write(json_t *root, FILE *f, unsigned flags)
{
	struct strbuf sb = STRBUF_INIT;
	int ret = jsonout_dump(root, &sb, flags);
	if (!ret && (flags & JSONOUT_COMPACT))
		strbuf_addch(&sb, '\n');
	if (!ret && fwrite(sb.buf, 1, sb.len, f) != sb.len)
		ret = cp_error_errno("cannot write the JSON output");
	strbuf_release(&sb);
	return ret;
}
