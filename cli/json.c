/* JSON output of the commands (see json.h). */
#include "cli/json.h"
#include "common/error.h"
#include "common/escape.h"

#include <stdio.h>
#include <string.h>

json_t *cli_json_str(const char *s)
{
	size_t n = strlen(s);
	if (esc_utf8_valid(s, n))
		return json_stringn(s, n);
	struct strbuf sb = STRBUF_INIT;
	esc_append(&sb, s, ESC_UTF8);
	json_t *j = json_stringn(sb.buf, sb.len);
	strbuf_release(&sb);
	return j;
}

void cli_json_set(json_t *obj, const char *key, json_t *value)
{
	struct strbuf sb = STRBUF_INIT;
	json_object_set_new(obj, esc_str(&sb, key, ESC_UTF8), value);
	strbuf_release(&sb);
}

int cli_json_write(json_t *root, FILE *out, int compact)
{
	if (!root)
		return cp_error("cannot build the JSON output (out of memory?)");
	int r = json_dumpf(root, out,
	                   (compact ? JSON_COMPACT : JSON_INDENT(2)) | JSON_PRESERVE_ORDER);
	fputc('\n', out);
	json_decref(root);
	return r < 0 ? cp_error("cannot write the JSON output") : 0;
}

int cli_json_print(json_t *root)
{
	return cli_json_write(root, stdout, 0);
}
