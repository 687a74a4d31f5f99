/* The HTML report: the Markdown report (with its tables as HTML, since cmark knows no GFM
 * tables) rendered by cmark, with the SVG diff flame graph inline: one self-contained file, no
 * script, a Content-Security-Policy that forbids any. Before rendering, every raw HTML node of
 * the document is checked against the few tags the Markdown writer emits; anything else is
 * turned into plain text, so no name can become markup even if an escape were wrong. */
#include "report/internal.h"
#include "common/error.h"
#include "common/xalloc.h"

#include <cmark.h>
#include <stdlib.h>
#include <string.h>

/* Every tag report_markdown_doc writes, exactly as it writes them. */
static const char *const allowed_tags[] = {
        "<details>",
        "<details open>",
        "</details>",
        "<summary>",
        "</summary>",
        "<code>",
        "</code>",
        "<br />",
        "<b>",
        "</b>",
        "<i>",
        "</i>",
        "<sub>",
        "</sub>",
        "<table>",
        "</table>",
        "<thead>",
        "</thead>",
        "<tbody>",
        "</tbody>",
        "<tr>",
        "</tr>",
        "<th>",
        "</th>",
        "<td>",
        "</td>",
        "<th align=\"right\">",
        "<td align=\"right\">",
        REPORT_MARKER,
        NULL,
};

/* Whether every tag in an HTML node's text is one of ours (and '>' never stands alone). */
static int html_is_ours(const char *s, const char *marker)
{
	while (*s) {
		if (*s == '>')
			return 0;
		if (*s != '<') {
			s++;
			continue;
		}
		const char *end = strchr(s, '>');
		if (!end)
			return 0;
		size_t len = (size_t)(end - s) + 1;
		int ok = strlen(marker) == len && !memcmp(marker, s, len);
		for (const char *const *t = allowed_tags; *t && !ok; t++)
			ok = strlen(*t) == len && !memcmp(*t, s, len);
		if (!ok)
			return 0;
		s = end + 1;
	}
	return 1;
}

/* Turns raw HTML that is not ours into text (inline) or a code block (block), and links or
 * images (the writer makes none) into their plain text. */
static void sanitize(cmark_node *doc, const char *marker)
{
	cmark_node **bad = NULL;
	size_t n = 0, alloc = 0;
	cmark_iter *it = cmark_iter_new(doc);
	cmark_event_type ev;
	while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
		cmark_node *node = cmark_iter_get_node(it);
		if (ev != CMARK_EVENT_ENTER)
			continue;
		cmark_node_type t = cmark_node_get_type(node);
		if (t == CMARK_NODE_HTML_BLOCK || t == CMARK_NODE_HTML_INLINE) {
			const char *lit = cmark_node_get_literal(node);
			if (lit && html_is_ours(lit, marker))
				continue;
		} else if (t == CMARK_NODE_LINK || t == CMARK_NODE_IMAGE) {
			/* the writer links only to the CI job and the report artifact */
			if (t == CMARK_NODE_IMAGE || !report_safe_url(cmark_node_get_url(node)))
				cmark_node_set_url(node, "");
			continue;
		} else {
			continue;
		}
		ALLOC_GROW(bad, n + 1, alloc);
		bad[n++] = node;
	}
	cmark_iter_free(it);
	for (size_t i = 0; i < n; i++) {
		cmark_node_type t = cmark_node_get_type(bad[i]);
		cmark_node *repl = cmark_node_new(t == CMARK_NODE_HTML_BLOCK ? CMARK_NODE_CODE_BLOCK
		                                                             : CMARK_NODE_TEXT);
		const char *lit = cmark_node_get_literal(bad[i]);
		cmark_node_set_literal(repl, lit ? lit : "");
		cmark_node_replace(bad[i], repl);
		cmark_node_free(bad[i]);
	}
	free(bad);
}

static const char style[] =
        "body{font:14px/1.5 -apple-system,BlinkMacSystemFont,\"Segoe UI\",Helvetica,Arial,"
        "sans-serif;color:#1f2328;background:#fff;margin:0}\n"
        "main{max-width:1240px;margin:0 auto;padding:16px 20px}\n"
        "code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;"
        "font-size:12px}\n"
        "code{background:#f6f8fa;padding:1px 4px;border-radius:4px;word-break:break-all}\n"
        "pre{background:#f6f8fa;padding:12px;overflow:auto;line-height:1.3}\n"
        "pre code{background:none;padding:0;word-break:normal}\n"
        "table{border-collapse:collapse;margin:8px 0}\n"
        "th,td{border:1px solid #d0d7de;padding:4px 10px}\n"
        "th{background:#f6f8fa}\n"
        "blockquote{margin:8px 0;padding:4px 12px;border-left:4px solid #d0d7de;color:#59636e}\n"
        "figure{margin:16px 0;overflow-x:auto}\n"
        "sub{color:#59636e}\n";

int report_html(const struct report *r, struct strbuf *out)
{
	struct strbuf md = STRBUF_INIT, svg = STRBUF_INIT;
	int ret = report_markdown_doc(r, &md, 0, 1);
	if (ret < 0)
		goto out;
	if (r->diff && (ret = report_svg_doc(r, &svg, 0)) < 0)
		goto out;
	cmark_node *doc = cmark_parse_document(md.buf, md.len, CMARK_OPT_VALIDATE_UTF8);
	if (!doc) {
		ret = cp_error("cannot parse the Markdown report");
		goto out;
	}
	char *marker = report_marker(r->id);
	sanitize(doc, marker);
	free(marker);
	/* Raw HTML left in the document is our own (sanitize() checked every node). */
	char *body = cmark_render_html(doc, CMARK_OPT_UNSAFE);
	cmark_node_free(doc);
	if (!body) {
		ret = cp_error("cannot render the Markdown report as HTML");
		goto out;
	}
	const char *verdict = r->diff ? report_verdict_name(r->diff->verdict) : "no baseline";
	strbuf_addstr(out,
	              "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\" />\n"
	              "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
	              "'none'; style-src 'unsafe-inline'; img-src data:\" />\n"
	              "<meta name=\"viewport\" content=\"width=device-width, "
	              "initial-scale=1\" />\n");
	strbuf_addf(out, "<title>ciprof report: %s (run %lld)</title>\n", verdict,
	            (long long)r->head->id);
	strbuf_addf(out, "<style>\n%s</style>\n</head>\n<body>\n<main>\n", style);
	strbuf_addstr(out, body);
	free(body);
	if (r->diff) {
		strbuf_addstr(out, "<h4>Diff flame graph</h4>\n<figure>\n");
		strbuf_add(out, svg.buf, svg.len);
		strbuf_addstr(out, "</figure>\n");
	}
	strbuf_addstr(out, "</main>\n</body>\n</html>\n");
	ret = 0;
out:
	strbuf_release(&md);
	strbuf_release(&svg);
	return ret;
}
