/* The one escaping function: names come from symbol tables, test output and branch names of
 * fork PRs, so each is cleaned (valid UTF-8, no control or bidi characters) and escaped for
 * where it lands. Markdown gets numeric entities for every character that could start markup,
 * which are also correct inside raw HTML, tables and <code>. */
#include "report/report.h"
#include "common/escape.h"

#include <stdint.h>
#include <string.h>

/* Markdown: ASCII punctuation that is left as it is; everything else becomes an entity. */
static int md_plain(uint32_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= 0x80) || strchr(" .,:;/-+=%?(){}^", (int)c) != NULL;
}

static void put_cp(struct strbuf *out, uint32_t c, enum report_esc how)
{
	if (how == REPORT_ESC_UTF8) {
		esc_utf8_put(out, c);
		return;
	}
	c = esc_shown_cp(c);
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
	esc_utf8_put(out, c);
}

size_t report_escape(struct strbuf *out, const char *s, enum report_esc how, size_t max_chars)
{
	size_t n = strlen(s);
	/* Count characters first so a cut is known before anything is written. */
	int cut = max_chars && esc_utf8_chars(s, n) > max_chars;
	size_t keep = cut ? max_chars - 1 : SIZE_MAX, written = 0;
	for (size_t i = 0; i < n && written < keep; written++)
		put_cp(out, esc_utf8_next(s, n, &i), how);
	if (cut) {
		esc_utf8_put(out, 0x2026);
		written++;
	}
	return written;
}
