/* Shared between report/'s renderers; not part of the library's interface. */
#ifndef CP_REPORT_INTERNAL_H
#define CP_REPORT_INTERNAL_H

#include "report/report.h"

/* The Markdown document; with html_tables its tables are raw HTML blocks (for cmark, which
 * knows no GFM tables), otherwise GFM pipe tables. */
int report_markdown_doc(const struct report *r, struct strbuf *out, size_t limit, int html_tables);

/* The SVG flame graph; standalone adds the XML declaration (a file), else it is for inline
 * use in HTML. */
int report_svg_doc(const struct report *r, struct strbuf *out, int standalone);
/* The same, focused: only the subtrees under flagged frames, and the callers leading there. */
int report_svg_focused(const struct report *r, struct strbuf *out, int standalone);

/* A node's name in the tree, and its change against the base: head / expected - 1, INFINITY
 * when new, -1 when gone. */
const char *report_node_name(const struct report_diff *d, uint32_t node);
double report_node_change(const struct report_diff *d, uint32_t node);
/* The same without the suite-wide factor: head seconds / base seconds per run - 1, the
 * change the CPU seconds shown next to it agree with. */
double report_node_raw_change(const struct report_diff *d, uint32_t node);
double report_raw_change(const struct report_cmp *c);

/* Whether url may be written as a link: https, and only characters that need no escaping in
 * Markdown, HTML attributes or SVG (letters, digits, : / . _ ~ % # ? & = + -). */
int report_safe_url(const char *url);

/* SHA-256 of data into out; base64 of p[0..n) appended to out (for CSP hashes). */
void report_sha256(const void *data, size_t len, unsigned char out[32]);
void report_base64(struct strbuf *out, const unsigned char *p, size_t n);

#endif
