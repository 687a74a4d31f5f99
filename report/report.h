/* report/: ciprof report's library. A struct report ties a head run, its baseline
 * (baseline.h) and what changed (diff.h) together; the renderers turn it into GitHub-
 * flavoured Markdown (the PR comment), a self-contained HTML page, an SVG diff flame graph, or
 * JSON for machines. Every name (function, test, branch) may be hostile: report_escape is the
 * one function through which each reaches an output. */
#ifndef CP_REPORT_H
#define CP_REPORT_H

#include "model/runmeta.h"
#include "common/comment.h"
#include "common/strbuf.h"
#include "report/baseline.h"
#include "report/diff.h"
#include "report/history.h"

#include <stddef.h>

/* The base branch's recent history for the trend charts: the suite's CPU seconds
 * (quantity 0) and each flagged function's (quantities 1..), one point per base run. */
struct report_trend {
	struct report_history hist;
	const struct report_item **items; /* quantity k + 1 is items[k] (borrowed items) */
	size_t nitems;
};

struct report {
	const struct run_meta *head;        /* borrowed */
	const struct report_baseline *base; /* borrowed */
	const struct report_diff *diff;     /* borrowed; NULL when there is no baseline */
	/* Optional context, each NULL when unknown (all borrowed): */
	const struct report_trend *trend; /* the base branch's history */
	const char *id;                   /* --id: which of several suites (a CI matrix) this is */
	const char *pr_head;              /* the PR's own head commit (the run's may be a merge) */
	const char *artifact_url;         /* where the HTML report can be downloaded */
	int focus;                        /* SVG: only the subtrees that hold findings */
	/* Why the verdict is advisory (cannot fail a build): too little history, a fallback
	 * baseline; NULL when it is not. Borrowed. */
	const char *advisory;
};

/*
 * The gate (--fail-on-regression). report_advisory: why the verdict must not fail a build, a
 * sentence (owned), or NULL when it may: the head run's command exited with a status other
 * than 0 (report_diff.head_exit), the head run is incomplete (report_diff.head_incomplete:
 * the kernel did not follow some of its processes, or a CPU's ring fell silent), no base run ran
 * the head's command (report_baseline.command_differs), the noise model learned from fewer than
 * REPORT_MIN_HISTORY base-branch runs, the verdict is a regression of which none gates (fewer
 * than STATS_TAIL_SCALE_MIN_RUNS runs, and none stands out on a t(STATS_SHORT_MAX_DOF) tail:
 * report_cmp.gates), the verdict is a regression and other processes kept REPORT_BUSY_CPUS
 * more CPUs busy during the head run than during the median history run (or three times the
 * history's spread of it, if more), or the baseline is a fallback (no base run at the
 * merge-base).
 * report_gate: what the verdict calls for. Without fail_on_regression always PASS; with it,
 * UNKNOWN_BASE when the base names no branch, run or commit (a typo must not pass every
 * build), FAIL on a regression that is not advisory, else PASS. d may be NULL (no baseline).
 */
enum report_gate { REPORT_GATE_PASS = 0, REPORT_GATE_FAIL, REPORT_GATE_UNKNOWN_BASE };
/* Sets d's head_other_cpus (head's RUN_TAG_OTHER_CPUS), history_other_cpus (the median over
 * b's history runs that have one; NAN where none), history_other_spread, head_exit (the
 * head's exit status) and head_incomplete (from its RUN_TAG_UNSEEN and RUN_TAG_SILENT):
 * what report_advisory needs of the head run. */
void report_note_load(struct report_diff *d, const struct run_meta *head,
                      const struct report_baseline *b);
/* Whether the head run measured other processes keeping fewer than REPORT_QUIET_CPUS busy
 * (its host.other_cpus tag; 0 without one): report_options.head_quiet. */
int report_head_quiet(const struct run_meta *head);
/* Whether other processes kept more CPUs busy during the head run than during b's median
 * history run by REPORT_BUSY_CPUS (or three times the history's spread of it, if more): the
 * busy head of report_advisory, before the diff is made (report_options.head_busy). */
int report_head_busy(const struct run_meta *head, const struct report_baseline *b);
char *report_advisory(const struct report_baseline *b, const struct report_diff *d);
enum report_gate report_gate(const struct report_baseline *b, const struct report_diff *d,
                             const char *advisory, int fail_on_regression);

/* The first 10 hex digits of a commit, or "" when it is not hex (never trusted as is). */
void report_short_commit(char out[11], const char *commit);

/* The sticky comment's hidden first line: COMMENT_MARKER, or with an id
 * "<!-- ciprof-report id=NAME -->" (owned string). Several ids keep several comments. */
char *report_marker(const char *id);
/* Whether NAME may be an --id: 1 to 64 of A-Z a-z 0-9 . _ + : / @ -, never "--". */
int report_id_valid(const char *id);

/* Loads the trend for r (its head, base and diff) from the store: the last n runs of the
 * baseline's branch up to its newest chosen run. 0, or -1 with cp_error set. */
int report_trend_load(struct store *s, const struct report *r, size_t n, struct report_trend *out);
void report_trend_release(struct report_trend *t);

enum report_format { REPORT_FORMAT_MD, REPORT_FORMAT_HTML, REPORT_FORMAT_SVG, REPORT_FORMAT_JSON };

/* The version of report --format json's shape: raised when a field changes meaning or goes
 * away (fields are only ever added within one version). */
#define REPORT_JSON_SCHEMA 1

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
	/* Only ASCII letters, digits, space and _ : . , + - ( ) ~ kept, anything else
	 * (quotes, brackets, non-ASCII) becomes '?': for labels inside a Mermaid chart, whose
	 * own syntax and renderer must see nothing else. */
	REPORT_ESC_LABEL,
};

/* Appends s escaped for how; with max_chars > 0, at most that many characters, the last
 * being "…" when s was cut. Returns the number of characters appended (before entities). */
size_t report_escape(struct strbuf *out, const char *s, enum report_esc how, size_t max_chars);

#endif
