/* forge/body: the comment body as sent: valid UTF-8 without NULs, ciprof's marker first, and
 * within the provider's length limit (counted in characters, as the forges count). */
#include "forge/forge.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	if (c < 0x80)
		return c ? 1 : 0;
	size_t len;
	unsigned min;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	unsigned cp = c & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

char *forge_prepare_body(const char *body, size_t len, size_t limit, const char *marker)
{
	static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
	struct strbuf out = STRBUF_INIT;
	const unsigned char *s = (const unsigned char *)body;
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
	/* First pass: does everything fit? */
	size_t total = chars;
	for (size_t i = 0; i < len;) {
		size_t l = utf8_len(s + i, len - i);
		i += l ? l : 1;
		total++;
	}
	int cut = total > limit;
	for (size_t i = 0; i < len;) {
		size_t l = utf8_len(s + i, len - i);
		if (cut && chars >= budget)
			break;
		if (l)
			strbuf_add(&out, s + i, l);
		else
			strbuf_addstr(&out, replacement);
		i += l ? l : 1;
		chars++;
	}
	if (cut)
		strbuf_addstr(&out, note);
	return strbuf_detach(&out, NULL);
}
