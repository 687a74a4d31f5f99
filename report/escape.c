/* The one escaping function: names come from symbol tables, test output and branch names of
 * fork PRs, so each is cleaned (valid UTF-8, no control or bidi characters) and escaped for
 * where it lands. Markdown gets numeric entities for every character that could start markup,
 * which are also correct inside raw HTML, tables and <code>. */
#include "report/report.h"

#include <stdint.h>
#include <string.h>

/* Decodes one UTF-8 sequence at s (n bytes left); returns its length and sets *cp, or 0 when
 * the bytes are not a valid, shortest-form sequence of a scalar value. */
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

static void utf8_put(struct strbuf *out, uint32_t c)
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

/* Characters that are never shown as themselves outside REPORT_ESC_UTF8. */
static uint32_t clean_cp(uint32_t c)
{
	if (c < 0x20)
		return 0x2400 + c; /* control pictures: U+240A for a newline */
	if (c == 0x7f)
		return 0x2421;
	if ((c >= 0x80 && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) ||
	    (c >= 0x2066 && c <= 0x2069) || c == 0x200e || c == 0x200f || c == 0x061c ||
	    c == 0xfffe || c == 0xffff)
		return 0xfffd;
	return c;
}

/* Markdown: ASCII punctuation that is left as it is; everything else becomes an entity. */
static int md_plain(uint32_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= 0x80) || strchr(" .,:;/-+=%?(){}^", (int)c) != NULL;
}

static void put_cp(struct strbuf *out, uint32_t c, enum report_esc how)
{
	if (how == REPORT_ESC_UTF8) {
		utf8_put(out, c);
		return;
	}
	c = clean_cp(c);
	if (how == REPORT_ESC_LABEL) {
		int keep = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		           (c >= 'A' && c <= 'Z') || (c && strchr(" _:.,+-()~", (int)c));
		strbuf_addch(out, keep ? (char)c : '?');
		return;
	}
	if (how == REPORT_ESC_MD && c < 0x80 && !md_plain(c)) {
		strbuf_addf(out, "&#%u;", (unsigned)c);
		return;
	}
	if (how == REPORT_ESC_XML || how == REPORT_ESC_MD) {
		switch (c) {
		case '&':
			strbuf_addstr(out, "&amp;");
			return;
		case '<':
			strbuf_addstr(out, "&lt;");
			return;
		case '>':
			strbuf_addstr(out, "&gt;");
			return;
		case '"':
			strbuf_addstr(out, "&quot;");
			return;
		case '\'':
			strbuf_addstr(out, "&#39;");
			return;
		}
	}
	utf8_put(out, c);
}

size_t report_escape(struct strbuf *out, const char *s, enum report_esc how, size_t max_chars)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), total = 0;
	/* Count characters first so a cut is known before anything is written. */
	if (max_chars) {
		for (size_t i = 0; i < n;) {
			uint32_t c;
			size_t len = utf8_decode(p + i, n - i, &c);
			i += len ? len : 1;
			total++;
		}
	}
	int cut = max_chars && total > max_chars;
	size_t keep = cut ? max_chars - 1 : SIZE_MAX, written = 0;
	for (size_t i = 0; i < n && written < keep;) {
		uint32_t c;
		size_t len = utf8_decode(p + i, n - i, &c);
		if (!len) {
			c = 0xfffd;
			len = 1;
		}
		put_cp(out, c, how);
		i += len;
		written++;
	}
	if (cut) {
		utf8_put(out, 0x2026);
		written++;
	}
	return written;
}
