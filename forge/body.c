/* forge/body: the comment body as sent: valid UTF-8 without NULs, ciprof's marker first, and
 * within the provider's length limit (counted in characters, as the forges count). */
#include "forge/forge.h"
#include "common/escape.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *forge_prepare_body(const char *body, size_t len, size_t limit, const char *marker)
{
	struct strbuf out = STRBUF_INIT;
	/* The marker first, unless the body already carries it. */
	int has_marker = 0;
	if (len >= strlen(marker)) {
		char *copy = xstrndup(body, len); /* stops at a NUL: fine for a search */
		has_marker = strstr(copy, marker) != NULL;
		free(copy);
	}
	size_t chars = 0;
	if (!has_marker) {
		strbuf_addf(&out, "%s\n", marker);
		chars += strlen(marker) + 1;
	}
	char note[128];
	int nn = snprintf(
	        note, sizeof(note),
	        "\n\n\xe2\x80\xa6 (cut by ciprof: a comment holds at most %zu characters)\n",
	        limit);
	size_t note_chars = (size_t)nn - 2; /* "…" is 3 bytes, 1 character */
	size_t budget = limit > note_chars ? limit - note_chars : 0;
	/* Characters as common/escape reads them: an invalid byte, or a NUL, is one U+FFFD. */
	int cut = chars + esc_utf8_chars(body, len) > limit;
	for (size_t i = 0; i < len && !(cut && chars >= budget); chars++) {
		uint32_t c = esc_utf8_next(body, len, &i);
		esc_utf8_put(&out, c ? c : 0xfffd);
	}
	if (cut)
		strbuf_addstr(&out, note);
	return strbuf_detach(&out, NULL);
}
