/* report/: ciprof report's library. A struct report ties a head run, its baseline
 * (baseline.h) and what changed (diff.h) together; the renderers turn it into GitHub-
 * flavoured Markdown (the PR comment), a self-contained HTML page, an SVG diff flame graph, or
 * JSON for machines. Every name (function, test, branch) may be hostile: report_escape is the
 * one function through which each reaches an output. */
#ifndef CP_REPORT_H
#define CP_REPORT_H

#include "common/runmeta.h"
#include "common/strbuf.h"
#include "report/baseline.h"
#include "report/diff.h"

#include <stddef.h>

/* GitHub's limit on a comment's body, in characters; the Markdown is kept within it. */
#define REPORT_MD_LIMIT 65536
/* The first line of every Markdown report: the comment bot finds its comment by it. */
#define REPORT_MARKER "<!-- ciprof-report -->"

struct report {
	const struct run_meta *head;        /* borrowed */
	const struct report_baseline *base; /* borrowed */
	const struct report_diff *diff;     /* borrowed; NULL when there is no baseline */
};

enum report_format { REPORT_FORMAT_MD, REPORT_FORMAT_HTML, REPORT_FORMAT_SVG, REPORT_FORMAT_JSON };

/* Each appends one rendering of r to out and returns 0, or -1 with cp_error set. */
int report_markdown(const struct report *r, struct strbuf *out, size_t limit);
int report_html(const struct report *r, struct strbuf *out);
int report_svg(const struct report *r, struct strbuf *out);
int report_json(const struct report *r, struct strbuf *out);
int report_render(const struct report *r, enum report_format f, struct strbuf *out);

/* How report_escape prepares a name for its destination. Every mode first makes the name
 * valid UTF-8 (an invalid byte becomes U+FFFD). */
enum report_esc {
	REPORT_ESC_UTF8, /* only that: for JSON, whose encoder escapes the rest */
	/* Also replaces control characters with their visible pictures (U+2400...) and bidi
	 * overrides and C1 controls with U+FFFD: for code blocks and plain text. */
	REPORT_ESC_TEXT,
	REPORT_ESC_XML, /* also & < > " ' as entities: HTML and SVG text and attributes */
	/* Also every ASCII punctuation Markdown or GitHub could act on (| ` * _ [ ] ~ # @ $ !
	 * \ and the XML ones) as a numeric entity: safe in GFM paragraphs, table cells and
	 * inside <code>, and in raw HTML blocks. */
	REPORT_ESC_MD,
};

/* Appends s escaped for how; with max_chars > 0, at most that many characters, the last
 * being "…" when s was cut. Returns the number of characters appended (before entities). */
size_t report_escape(struct strbuf *out, const char *s, enum report_esc how, size_t max_chars);

#endif
