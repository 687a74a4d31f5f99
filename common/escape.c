/* Escaping names for the terminal and for JSON (see escape.h): one decoder, one list of the
 * characters that are never shown as themselves. */
#include "common/escape.h"

#include <string.h>

/* Decodes one UTF-8 sequence at s (n > 0 bytes left): its length with *cp set, or 0 when the
 * bytes are not a valid, shortest-form encoding of a Unicode scalar value. */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c = s[0];
	size_t len;
	uint32_t min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xe0) == 0xc0) {
		len = 2, c &= 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3, c &= 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4, c &= 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

uint32_t esc_utf8_next(const char *s, size_t n, size_t *i)
{
	uint32_t c;
	size_t len = utf8_decode((const unsigned char *)s + *i, n - *i, &c);
	if (!len) {
		c = 0xfffd;
		len = 1;
	}
	*i += len;
	return c;
}

size_t esc_utf8_chars(const char *s, size_t n)
{
	size_t count = 0;
	for (size_t i = 0; i < n; count++)
		esc_utf8_next(s, n, &i);
	return count;
}

void esc_utf8_put(struct strbuf *out, uint32_t c)
{
	char b[4];
	size_t n;
	if (c < 0x80) {
		b[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xc0 | (c >> 6));
		b[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		b[0] = (char)(0xe0 | (c >> 12));
		b[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		b[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | (c >> 18));
		b[1] = (char)(0x80 | ((c >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((c >> 6) & 0x3f));
		b[3] = (char)(0x80 | (c & 0x3f));
		n = 4;
	}
	strbuf_add(out, b, n);
}

int esc_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		uint32_t c;
		size_t len = utf8_decode(p + i, n - i, &c);
		if (!len)
			return 0;
		i += len;
	}
	return 1;
}

uint32_t esc_shown_cp(uint32_t c)
{
	if (c < 0x20)
		return 0x2400 + c;
	if (c == 0x7f)
		return 0x2421;
	if ((c >= 0x80 && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) ||
	    (c >= 0x2066 && c <= 0x2069) || c == 0x200e || c == 0x200f || c == 0x061c ||
	    c == 0xfffe || c == 0xffff)
		return 0xfffd;
	return c;
}

void esc_append(struct strbuf *out, const char *s, enum esc_kind kind)
{
	esc_append_len(out, s, strlen(s), kind);
}

void esc_append_len(struct strbuf *out, const char *s, size_t n, enum esc_kind kind)
{
	for (size_t i = 0; i < n;) {
		if (kind == ESC_UTF8 && (unsigned char)s[i] < 0x80) {
			/* the common case: runs of ASCII copied at once */
			size_t j = i + 1;
			while (j < n && (unsigned char)s[j] < 0x80)
				j++;
			strbuf_add(out, s + i, j - i);
			i = j;
			continue;
		}
		uint32_t c = esc_utf8_next(s, n, &i);
		esc_utf8_put(out, kind == ESC_TERM ? esc_shown_cp(c) : c);
	}
}

const char *esc_str(struct strbuf *buf, const char *s, enum esc_kind kind)
{
	strbuf_reset(buf);
	esc_append(buf, s, kind);
	return buf->buf ? buf->buf : "";
}

void esc_name(struct strbuf *out, const char *s, size_t len, size_t max)
{
	size_t start = out->len;
	/* Each input byte comes out as at least one byte: what lies past max + 4 is cut
	 * anyway, so it is never copied (a 50 MB name costs no 50 MB). */
	esc_append_len(out, s, len > max + 4 ? max + 4 : len, ESC_UTF8);
	if (out->len - start <= max)
		return;
	size_t cut = start + (max > 3 ? max - 3 : 0);
	while (cut > start && ((unsigned char)out->buf[cut] & 0xc0) == 0x80)
		cut--;
	out->len = cut;
	out->buf[cut] = '\0';
	esc_utf8_put(out, 0x2026);
}
