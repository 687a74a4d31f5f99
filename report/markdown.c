/* The PR comment: GitHub-flavoured Markdown. A hidden marker line (carrying --id), a verdict
 * line with counts, then the findings (each significantly changed test and function with its
 * base -> head CPU, change, q-value, hottest path and a small text diff of its subtree), one
 * line on how change is measured, a Mermaid trend of the base branch plus this PR, and only
 * then what did not change (in <details>) and the text flame graph. It stays within GitHub's
 * 65,536 characters by shrinking the later sections first. Names only ever pass through
 * report_escape. */
#include "report/internal.h"
#include "common/error.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How much of each section is shown; shrunk step by step until the text fits. */
struct md_limits {
	size_t findings, tests, flame_lines, subtree_lines, trend_charts, name_chars, path_chars;
	int truncated;
};

#define FLAME_MIN_SHARE 0.01 /* text flame graph: nodes holding at least 1 % on one side */
#define FLAME_MAX_DEPTH 40
#define SUBTREE_DEPTH   4 /* a finding's subtree: this many levels under the function */
#define BAR_CELLS       20

void report_short_commit(char out[11], const char *commit)
{
	size_t i = 0;
	for (; commit[i] && i < 10; i++) {
		char c = commit[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			break;
		out[i] = c;
	}
	if (commit[i] && i < 10)
		i = 0; /* not hex: show nothing rather than something untrusted */
	out[i] = '\0';
}

int report_safe_url(const char *url)
{
	if (!url || strncmp(url, "https://", 8) || strlen(url) > 2000 || !url[8])
		return 0;
	for (const char *p = url; *p; p++) {
		char c = *p;
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      strchr(":/._~%#?&=+-", c)))
			return 0;
	}
	return 1;
}

const char *report_node_name(const struct report_diff *d, uint32_t node)
{
	const struct profile *names = d->tree.names;
	if (!node)
		return "all";
	return profile_str(names, names->frames[names->nodes[node].frame].function);
}

double report_node_change(const struct report_diff *d, uint32_t node)
{
	double e = d->c * d->tree.base[node], h = d->tree.head[node];
	if (e > 0)
		return h / e - 1;
	return h > 0 ? INFINITY : 0;
}

double report_node_raw_change(const struct report_diff *d, uint32_t node)
{
	double ch = report_node_change(d, node);
	return isfinite(ch) ? (1 + ch) * d->scale - 1 : ch;
}

double report_raw_change(const struct report_cmp *c)
{
	if (c->base_seconds > 0)
		return c->head_seconds / c->base_seconds - 1;
	return c->head_seconds > 0 ? INFINITY : 0;
}

char *report_marker(const char *id)
{
	if (!id || !*id)
		return xstrdup(COMMENT_MARKER);
	return xasprintf("<!-- ciprof-report id=%s -->", id);
}

int report_id_valid(const char *id)
{
	size_t n = strlen(id);
	if (!n || n > 64 || strstr(id, "--"))
		return 0;
	for (const char *p = id; *p; p++) {
		char c = *p;
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      strchr("._+:/@-", c)))
			return 0;
	}
	return 1;
}

static void code(struct strbuf *o, const char *name, size_t max)
{
	strbuf_addstr(o, "<code>");
	report_escape(o, name, REPORT_ESC_MD, max);
	strbuf_addstr(o, "</code>");
}

/* A test's name. "(outside tests)" is always shown with what it holds: here when it is the
 * whole suite (and judged), else its result says it is harness time, not judged. */
static void test_label(struct strbuf *o, const struct report_diff *d, const char *name, size_t max)
{
	if (*name)
		code(o, name, max);
	else if (d->tests_attributed)
		strbuf_addstr(o, "<i>(outside tests)</i>");
	else
		strbuf_addstr(o, "<i>(outside tests)</i> <sub>the whole suite: no test was told "
		                 "apart</sub>");
}

static void add_seconds(struct strbuf *o, double s)
{
	if (s < 10)
		strbuf_addf(o, "%.3f s", s);
	else if (s < 100)
		strbuf_addf(o, "%.2f s", s);
	else
		strbuf_addf(o, "%.1f s", s);
}

/* The detectable slowdowns (report_cmp.detectable) of the judged tests (tests), or of the
 * functions' self times holding at least 1 % of a side's samples, into v; returns how many. */
static size_t detectable_of(const struct report_diff *d, int tests, double *v)
{
	size_t n = 0;
	for (size_t i = 0; i < d->nitems; i++) {
		const struct report_item *it = &d->items[i];
		const struct report_cmp *c = &it->cmp;
		int kind = tests ? it->measure == REPORT_TEST
		                 : it->measure == REPORT_SELF &&
		                           fmax(c->base_share, c->head_share) >= 0.01;
		if (kind && c->detectable > 0)
			v[n++] = c->detectable;
	}
	return n;
}

static void add_detectable_kind(struct strbuf *o, double *v, size_t n, const char *what,
                                const char *among)
{
	double lo = v[0], hi = v[0];
	for (size_t i = 1; i < n; i++) {
		lo = fmin(lo, v[i]);
		hi = fmax(hi, v[i]);
	}
	double med = stats_median(v, n);
	if (med > 10)
		strbuf_addf(o, "%s slowed by more than 1000 %% (the median of %zu %s; %.0f %% to ",
		            what, n, among, 100 * lo);
	else
		strbuf_addf(o, "%s slowed by %.0f %% or more (the median of %zu %s; %.0f %% to ",
		            what, 100 * med, n, among, 100 * lo);
	if (hi > 1)
		strbuf_addstr(o, "over 100 %)");
	else
		strbuf_addf(o, "%.0f %%)", 100 * hi);
}

/* One line: the slowdowns this report could have flagged, so that "nothing flagged" reads with
 * what each item would have had to move (detectable in diff.c). */
static void add_detectable(struct strbuf *o, const struct report_diff *d)
{
	double *vt = xmalloc(st_mult(d->nitems ? d->nitems : 1, sizeof(*vt)));
	double *vf = xmalloc(st_mult(d->nitems ? d->nitems : 1, sizeof(*vf)));
	size_t nt = detectable_of(d, 1, vt), nf = detectable_of(d, 0, vf);
	if (nt || nf) {
		strbuf_addstr(o, "<sub>**What this report could see:** ");
		if (d->confirm_runs > 1 && d->history_runs >= STATS_TAIL_SCALE_MIN_RUNS)
			strbuf_addf(o, "with the %zu runs of this commit, ", d->confirm_runs);
		if (nt)
			add_detectable_kind(o, vt, nt, "a test", "judged tests");
		if (nt && nf)
			strbuf_addstr(o, "; ");
		if (nf)
			add_detectable_kind(o, vf, nf, "a function's self time",
			                    "functions holding 1 % or more");
		strbuf_addstr(o,
		              ", each as the only change. Smaller changes pass as noise here; "
		              "more runs of the commit, or ciprof ab, see smaller ones.</sub>\n\n");
	}
	free(vt);
	free(vf);
}

static int is_gone(const struct report_cmp *c)
{
	return !(c->head_count > 0) && c->base_count > 0;
}

/* The plain change head / base - 1: the one the CPU seconds next to it show. */
static void add_change(struct strbuf *o, const struct report_cmp *c)
{
	double ch = report_raw_change(c);
	if (isinf(ch))
		strbuf_addstr(o, "new");
	else if (is_gone(c))
		strbuf_addstr(o, "gone");
	else
		strbuf_addf(o, "%+.1f %%", 100 * ch);
}

static void add_pct(struct strbuf *o, double share)
{
	strbuf_addf(o, "%.1f %%", 100 * share);
}

static const char *measure_words(enum report_measure m)
{
	return m == REPORT_TEST   ? "test"
	       : m == REPORT_SELF ? "self time"
	                          : "time in callees not listed here";
}

/* A call path root first: the process, callers, the function. Long paths keep their ends. */
static void add_path(struct strbuf *o, const struct report_diff *d, uint32_t node,
                     const struct md_limits *lim)
{
	const struct profile *names = d->tree.names;
	size_t depth = profile_node_depth(names, node);
	uint32_t *nodes = xmalloc(st_mult(depth ? depth : 1, sizeof(*nodes)));
	size_t i = depth;
	for (uint32_t n = node; n && i > 0; n = names->nodes[n].parent)
		nodes[--i] = n;
	for (size_t k = 0; k < depth; k++) {
		if (depth > 12 && k == 2) {
			strbuf_addstr(o, " → …");
			k = depth - 9;
		}
		if (k)
			strbuf_addstr(o, " → ");
		code(o, report_node_name(d, nodes[k]), lim->path_chars);
	}
	free(nodes);
}

/* One table, as GFM pipes or as a raw HTML block (no blank line inside). */
struct table {
	struct strbuf *o;
	int html;
	size_t ncols;
	const int *right; /* per column: right-aligned */
};

static void table_row(struct table *t, struct strbuf *cells, int header)
{
	if (t->html) {
		strbuf_addstr(t->o, header ? "<thead><tr>" : "<tr>");
		for (size_t i = 0; i < t->ncols; i++)
			strbuf_addf(t->o, "<%s%s>%s</%s>", header ? "th" : "td",
			            t->right[i] ? " align=\"right\"" : "", cells[i].buf,
			            header ? "th" : "td");
		strbuf_addstr(t->o, header ? "</tr></thead><tbody>\n" : "</tr>\n");
	} else {
		strbuf_addstr(t->o, "|");
		for (size_t i = 0; i < t->ncols; i++)
			strbuf_addf(t->o, " %s |", cells[i].buf);
		strbuf_addch(t->o, '\n');
		if (header) {
			strbuf_addstr(t->o, "|");
			for (size_t i = 0; i < t->ncols; i++)
				strbuf_addstr(t->o, t->right[i] ? "---:|" : "---|");
			strbuf_addch(t->o, '\n');
		}
	}
	for (size_t i = 0; i < t->ncols; i++)
		strbuf_reset(&cells[i]);
}

static void table_begin(struct table *t)
{
	if (t->html)
		strbuf_addstr(t->o, "<table>\n");
}

static void table_end(struct table *t)
{
	if (t->html)
		strbuf_addstr(t->o, "</tbody></table>\n");
	strbuf_addch(t->o, '\n');
}

/* ciprof ab: the rounds' spread of an item's head/base ratio, as a percentage. */
static void add_spread(struct strbuf *o, const struct report_cmp *c)
{
	strbuf_addf(o, "rounds' spread ±%.1f %%", 100 * expm1(c->spread));
}

static void result_cell(struct strbuf *o, const struct report_item *it, double min_share)
{
	const struct report_cmp *c = &it->cmp;
	if (c->undecided) {
		strbuf_addstr(o, "undecided (");
		add_spread(o, c);
		strbuf_addch(o, ')');
	} else if (!c->tested && c->context != REPORT_JUDGED && c->context != REPORT_TOO_SMALL)
		strbuf_addf(o, "not judged (%s)", report_context_reason(c->context));
	else if (c->kind == REPORT_REGRESSION)
		strbuf_addf(o, "▲ <b>slower</b> (q = %.2g)", c->q);
	else if (c->kind == REPORT_IMPROVEMENT)
		strbuf_addf(o, "▼ <b>faster</b> (q = %.2g)", c->q);
	else if (isinf(c->change))
		strbuf_addstr(o, "new");
	else if (is_gone(c))
		strbuf_addstr(o, "gone");
	else if (!c->tested)
		strbuf_addf(o, "not judged (&lt; %.2g %% of samples)", 100 * min_share);
	else
		strbuf_addstr(o, "no significant change");
}

/* What each item counts as in the verdict line; the classes do not overlap. */
enum md_class {
	MD_SLOWER,
	MD_FASTER,
	MD_UNCHANGED,
	MD_NEW,
	MD_GONE,
	MD_UNDECIDED, /* ciprof ab: neither a change nor the same, yet */
	MD_NOT_JUDGED,
};

static enum md_class classify(const struct report_item *it)
{
	const struct report_cmp *c = &it->cmp;
	if (c->kind == REPORT_REGRESSION)
		return MD_SLOWER;
	if (c->kind == REPORT_IMPROVEMENT)
		return MD_FASTER;
	/* a function too small to judge is noise whether it came or went */
	if (!c->tested)
		return MD_NOT_JUDGED;
	if (c->undecided)
		return MD_UNDECIDED;
	if (isinf(c->change))
		return MD_NEW;
	if (is_gone(c))
		return MD_GONE;
	return MD_UNCHANGED;
}

struct md_counts {
	size_t n[MD_NOT_JUDGED + 1];
	size_t tests[MD_NOT_JUDGED + 1];
};

static void count_items(const struct report_diff *d, struct md_counts *k)
{
	memset(k, 0, sizeof(*k));
	for (size_t i = 0; i < d->nitems; i++) {
		enum md_class c = classify(&d->items[i]);
		k->n[c]++;
		k->tests[c] += d->items[i].measure == REPORT_TEST;
	}
}

/* ---- the text flame graph (whole tree, or one finding's subtree) ---- */

/* A bar of BAR_CELLS cells for a share in [0, 1], in eighths. */
static void add_bar(struct strbuf *o, double share)
{
	static const char *const part[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
	if (share < 0)
		share = 0;
	if (share > 1)
		share = 1;
	long eighths = lround(share * BAR_CELLS * 8);
	long full = eighths / 8, rest = eighths % 8, cells = 0;
	for (long i = 0; i < full; i++, cells++)
		strbuf_addstr(o, "█");
	if (rest) {
		strbuf_addstr(o, part[rest]);
		cells++;
	}
	for (; cells < BAR_CELLS; cells++)
		strbuf_addch(o, ' ');
}

struct flame_ctx {
	const struct report_diff *d;
	struct strbuf *o;
	size_t lines, max_lines, name_chars, max_depth;
	double head_total, base_total; /* base in head samples (expected) */
	double min_share;
};

static int flame_visible(const struct flame_ctx *f, uint32_t n)
{
	const struct report_tree *t = &f->d->tree;
	double hs = f->head_total > 0 ? t->head[n] / f->head_total : 0;
	double bs = f->base_total > 0 ? f->d->c * t->base[n] / f->base_total : 0;
	return hs >= f->min_share || bs >= f->min_share;
}

static void flame_node(struct flame_ctx *f, uint32_t n, size_t depth)
{
	if (f->lines >= f->max_lines)
		return;
	const struct report_tree *t = &f->d->tree;
	double hs = f->head_total > 0 ? t->head[n] / f->head_total : 0;
	strbuf_addf(f->o, "%5.1f%% ", 100 * hs);
	add_bar(f->o, hs);
	double ch = report_node_raw_change(f->d, n);
	if (isinf(ch))
		strbuf_addstr(f->o, "      new");
	else if (!(t->head[n] > 0))
		strbuf_addstr(f->o, "     gone");
	else
		strbuf_addf(f->o, " %+7.1f%%", 100 * ch);
	strbuf_addstr(f->o, "  ");
	for (size_t i = 0; i < depth; i++)
		strbuf_addstr(f->o, "  ");
	report_escape(f->o, report_node_name(f->d, n), REPORT_ESC_TEXT, f->name_chars);
	if (n) {
		int flag = t->frame_flag[t->names->nodes[n].frame];
		strbuf_addstr(f->o, flag > 0 ? "  ▲ slower" : flag < 0 ? "  ▼ faster" : "");
	}
	strbuf_addch(f->o, '\n');
	f->lines++;
	if (depth >= f->max_depth)
		return;
	size_t nc;
	uint32_t *kids = report_tree_children(t, n, 0, &nc);
	for (size_t i = 0; i < nc && f->lines < f->max_lines; i++)
		if (flame_visible(f, kids[i]))
			flame_node(f, kids[i], depth + 1);
	free(kids);
}

/* The longest run of backticks in s. */
static size_t longest_backticks(const char *s)
{
	size_t best = 0, run = 0;
	for (; *s; s++) {
		run = *s == '`' ? run + 1 : 0;
		if (run > best)
			best = run;
	}
	return best;
}

/* body as a fenced code block whose fence no name inside can close. */
static void fenced(struct strbuf *o, const char *lang, const struct strbuf *body)
{
	size_t fence = longest_backticks(body->buf) + 1;
	if (fence < 3)
		fence = 3;
	for (size_t i = 0; i < fence; i++)
		strbuf_addch(o, '`');
	strbuf_addf(o, "%s\n", lang);
	strbuf_add(o, body->buf, body->len);
	for (size_t i = 0; i < fence; i++)
		strbuf_addch(o, '`');
	strbuf_addch(o, '\n');
}

static const char flame_header[] = "  head share of head          change  ";

static void flame_section(struct strbuf *o, const struct report_diff *d,
                          const struct md_limits *lim)
{
	if (!lim->flame_lines || !(d->head_samples > 0 || d->base_samples > 0))
		return;
	struct strbuf body = STRBUF_INIT;
	struct flame_ctx f = {d,
	                      &body,
	                      0,
	                      lim->flame_lines,
	                      lim->name_chars,
	                      FLAME_MAX_DEPTH,
	                      d->head_samples,
	                      d->c * d->base_samples,
	                      FLAME_MIN_SHARE};
	strbuf_addf(&body, "%sstack (callers above callees)\n", flame_header);
	flame_node(&f, 0, 0);
	strbuf_addstr(o, "<details><summary>Diff flame graph (text): each frame's share of the "
	                 "head run and its change against the base</summary>\n\n");
	fenced(o, "text", &body);
	if (f.lines >= f.max_lines)
		strbuf_addf(o,
		            "\nShowing the first %zu frames; the HTML and SVG reports draw all.\n",
		            f.lines);
	strbuf_addstr(o, "\n</details>\n\n");
	strbuf_release(&body);
}

/* ---- the findings ---- */

static void finding(struct strbuf *o, const struct report *r, const struct report_item *it,
                    size_t num, const struct md_limits *lim)
{
	const struct report_diff *d = r->diff;
	const struct report_cmp *c = &it->cmp;
	strbuf_addf(o, "%zu. ", num);
	if (it->measure == REPORT_TEST) {
		strbuf_addstr(o, "test ");
		test_label(o, d, it->name, lim->name_chars);
	} else {
		code(o, it->name, lim->name_chars);
		if (*it->module) {
			strbuf_addstr(o, " <sub>");
			report_escape(o, it->module, REPORT_ESC_MD, 60);
			strbuf_addstr(o, "</sub>");
		}
		strbuf_addf(o, " %s", measure_words(it->measure));
	}
	strbuf_addstr(o, ": ");
	add_seconds(o, c->base_seconds);
	strbuf_addstr(o, " → ");
	add_seconds(o, c->head_seconds);
	strbuf_addstr(o, " per run, **");
	add_change(o, c);
	strbuf_addstr(o, "**");
	/* The judged change differs from the plain one when the whole suite moved. */
	if (isfinite(c->change) && fabs(d->scale - 1) >= 0.01)
		strbuf_addf(o, " (%+.1f %% beyond the suite's ×%.3f)", 100 * c->change, d->scale);
	strbuf_addf(o, ", q = %.2g", c->q);
	/* Flagged among the few functions of a flagged test (descend in diff.c). */
	if (c->within) {
		strbuf_addstr(o, " among the functions of test ");
		test_label(o, d, c->within, lim->name_chars);
	}
	/* With fewer than 20 history runs only the regressions that stand out from a rare jump
	 * fail the build (report_cmp.gates): say which do not, when others do (when none does,
	 * the advisory line says why). */
	if (c->kind == REPORT_REGRESSION && !c->gates && d->ngating && !r->advisory) {
		/* Significant on the short history's tail too, then another run did not fail it. */
		if (c->gate_q <= d->opts.alpha && d->confirm_runs > 1)
			strbuf_addf(o,
			            " (not enough to fail the build: with %zu history runs each of "
			            "the %zu runs of this commit must fail it, and one did not)",
			            d->history_runs, d->confirm_runs);
		else
			strbuf_addf(
			        o,
			        " (not enough alone to fail the build: with %zu history runs it "
			        "does not stand out from a rare jump)",
			        d->history_runs);
	}
	if (c->spread > 0) {
		strbuf_addstr(o, ", ");
		add_spread(o, c);
	}
	if (it->measure != REPORT_TEST) {
		strbuf_addstr(o, "; ");
		add_pct(o, c->base_share);
		strbuf_addstr(o, " → ");
		add_pct(o, c->head_share);
		strbuf_addstr(o, " of samples");
	}
	if (it->path) {
		strbuf_addstr(o, "<br />\n   hottest path: ");
		add_path(o, d, it->path, lim);
	}
	strbuf_addch(o, '\n');
	if (it->path && lim->subtree_lines) {
		struct strbuf body = STRBUF_INIT;
		struct flame_ctx f = {d,
		                      &body,
		                      0,
		                      lim->subtree_lines,
		                      lim->name_chars,
		                      SUBTREE_DEPTH,
		                      d->head_samples,
		                      d->c * d->base_samples,
		                      FLAME_MIN_SHARE / 4};
		strbuf_addf(&body, "%sunder the hottest path\n", flame_header);
		flame_node(&f, it->path, 0);
		strbuf_addstr(o, "\n   <details><summary>what changed under it</summary>\n\n");
		/* indented by three spaces: the block belongs to the list item */
		struct strbuf ind = STRBUF_INIT;
		fenced(&ind, "text", &body);
		for (const char *p = ind.buf; *p;) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
			strbuf_addstr(o, "   ");
			strbuf_add(o, p, len);
			p += len;
		}
		strbuf_addstr(o, "\n   </details>\n");
		strbuf_release(&ind);
		strbuf_release(&body);
	}
}

static void findings_section(struct strbuf *o, const struct report *r, const struct md_limits *lim,
                             enum report_kind kind, size_t *shown)
{
	const struct report_diff *d = r->diff;
	size_t n = 0;
	for (size_t i = 0; i < d->nitems; i++)
		n += d->items[i].cmp.kind == kind;
	if (!n)
		return;
	strbuf_addf(o, "### %s\n\n", kind == REPORT_REGRESSION ? "▲ Slower" : "▼ Faster");
	size_t num = 0;
	/* Tests first, then functions, each biggest change first (the diff's order). */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < d->nitems; i++) {
			const struct report_item *it = &d->items[i];
			if (it->cmp.kind != kind || (it->measure == REPORT_TEST) != (pass == 0))
				continue;
			if (*shown >= lim->findings)
				continue;
			finding(o, r, it, ++num, lim);
			(*shown)++;
		}
	if (num < n)
		strbuf_addf(o, "\n…and %zu more (the JSON report lists all).\n", n - num);
	strbuf_addch(o, '\n');
}

/* ---- the head, the verdict, the method ---- */

static void count_part(struct strbuf *o, int *first, const char *sym, size_t n, const char *word)
{
	strbuf_addf(o, "%s%s%s%zu %s", *first ? "" : " · ", sym, *sym ? " " : "", n, word);
	*first = 0;
}

static void verdict_line(struct strbuf *o, const struct report *r)
{
	const struct report_diff *d = r->diff;
	struct md_counts k;
	count_items(d, &k);
	if (d->verdict == REPORT_REGRESSED)
		strbuf_addstr(o, "**ciprof: ▲ regression**");
	else if (d->verdict == REPORT_IMPROVED)
		strbuf_addstr(o, "**ciprof: ▼ improvement**");
	else
		strbuf_addstr(o, "**ciprof: ✓ no significant change**");
	if (r->id && *r->id) {
		strbuf_addstr(o, " (");
		code(o, r->id, 64);
		strbuf_addch(o, ')');
	}
	strbuf_addstr(o, " — ");
	int first = 1;
	count_part(o, &first, "▲", k.n[MD_SLOWER], "slower");
	count_part(o, &first, "▼", k.n[MD_FASTER], "faster");
	count_part(o, &first, "✓", k.n[MD_UNCHANGED], "unchanged");
	count_part(o, &first, "", k.n[MD_NEW], "new");
	count_part(o, &first, "", k.n[MD_GONE], "gone");
	if (k.n[MD_UNDECIDED])
		count_part(o, &first, "", k.n[MD_UNDECIDED], "undecided");
	strbuf_addstr(o, " <sub>(tests and functions)</sub>\n\n");
}

static void commit_code(struct strbuf *o, const char *commit)
{
	char c[11];
	report_short_commit(c, commit);
	if (*c)
		strbuf_addf(o, "<code>%s</code> ", c);
}

static void head_line(struct strbuf *o, const struct report *r, const struct md_limits *lim)
{
	const struct run_meta *h = r->head;
	char pr[11];
	report_short_commit(pr, r->pr_head ? r->pr_head : "");
	strbuf_addstr(o, "Head ");
	if (*pr) {
		/* the run's own commit is the CI's merge of the PR into its target */
		strbuf_addf(o, "<code>%s</code> (the PR's head", pr);
		char hc[11];
		report_short_commit(hc, h->commit);
		if (*hc && strncmp(hc, pr, strlen(hc)))
			strbuf_addf(o, "; measured on its merge <code>%s</code>", hc);
		strbuf_addstr(o, ") ");
	} else {
		commit_code(o, h->commit);
	}
	strbuf_addf(o, "(run %lld", (long long)h->id);
	if (*h->branch) {
		strbuf_addstr(o, ", ");
		code(o, h->branch, lim->name_chars);
	}
	strbuf_addstr(o, ") vs base ");
	commit_code(o, r->base->commit);
	strbuf_addch(o, '(');
	report_escape(o, r->base->rule, REPORT_ESC_MD, 200);
	strbuf_addch(o, ')');
	if (report_safe_url(h->job_url))
		strbuf_addf(o, " · [CI job](%s)", h->job_url);
	if (report_safe_url(r->artifact_url))
		strbuf_addf(o, " · [HTML report and flame graph](%s)", r->artifact_url);
	strbuf_addstr(o, "\n\n");
}

static void method_line(struct strbuf *o, const struct report_diff *d)
{
	double total = d->base_cpu > 0 ? d->head_cpu / d->base_cpu - 1 : 0;
	strbuf_addstr(o, "<sub>**How change is measured:** head CPU time ÷ base CPU time per run "
	                 "− 1, from samples; the whole suite went ");
	add_seconds(o, d->base_cpu);
	strbuf_addstr(o, " → ");
	add_seconds(o, d->head_cpu);
	strbuf_addf(o, " (%+.1f %%). ", 100 * total);
	if (d->ab)
		strbuf_addf(o,
		            "Base and head ran in turn on this machine (ABBA rounds), so they are "
		            "compared in plain CPU time, round by round, without a suite-wide "
		            "factor; an item is flagged when it moved at least %.2g %%.</sub>\n\n",
		            100 * d->opts.min_change);
	else if (d->scale_estimated)
		strbuf_addf(o,
		            "An item is flagged when it moved at least %.2g %% beyond the "
		            "suite-wide factor ×%.3f (a robust average over %zu functions) with "
		            "q ≤ %.2g.</sub>\n\n",
		            100 * d->opts.min_change, d->scale, d->scale_functions, d->opts.alpha);
	else
		strbuf_addf(o,
		            "An item is flagged when it moved at least %.2g %% with q ≤ %.2g (too "
		            "few functions, %zu, for a suite-wide factor).</sub>\n\n",
		            100 * d->opts.min_change, d->opts.alpha, d->scale_functions);
	if (!d->ab)
		add_detectable(o, d);
	if (d->confirm_runs > 1) {
		strbuf_addf(o, "<sub>**%zu runs of this commit:** ", d->confirm_runs);
		if (d->history_runs < STATS_TAIL_SCALE_MIN_RUNS) {
			strbuf_addf(o,
			            "with %zu base-branch runs, an item is flagged only if each of "
			            "them flags it",
			            d->history_runs);
			if (d->unrepeated)
				strbuf_addf(o, " (%zu this run flagged did not repeat)",
				            d->unrepeated);
			strbuf_addstr(o, ", and a regression fails the build only if each of them "
			                 "fails it");
		} else if (d->job_spell)
			strbuf_addstr(
			        o, "they moved together beyond anything their history shows: "
			           "many functions moved in every run, as a slow spell of the "
			           "machine that lasts them does. So each is judged against its "
			           "history's ordinary runs, and a finding is one that the least "
			           "certain of them shows alone");
		else
			strbuf_addstr(o, "a finding is one that each of them shows");
		strbuf_addstr(o, " (this run's figures; also run");
		for (size_t i = 0; i + 1 < d->confirm_runs; i++)
			strbuf_addf(o, "%s %lld", i ? "," : "", (long long)d->confirm_ids[i]);
		strbuf_addstr(o, ").</sub>\n\n");
	}
	if (d->renamed) {
		strbuf_addstr(o, "<sub>**Renamed:** the head's ");
		report_escape(o, d->renamed, REPORT_ESC_MD, 600);
		strbuf_addstr(o, ": its functions are compared with the base's under the base's "
		                 "name, not reported as new and gone.</sub>\n\n");
	}
	if (!d->ab && d->scale_estimated && fabs(d->scale - 1) >= d->opts.min_change)
		strbuf_addf(o,
		            "> **The whole suite ran %.2f× %s** than the base: a %s runner, or a "
		            "change that touches everything. It is not counted against any one "
		            "test or function.\n\n",
		            d->scale > 1 ? d->scale : 1 / d->scale,
		            d->scale > 1 ? "slower" : "faster", d->scale > 1 ? "slower" : "faster");
}

/* ---- the trend ---- */

/* A number for Mermaid: plain decimal, no exponent. */
static void mermaid_number(struct strbuf *o, double v)
{
	if (v >= 100)
		strbuf_addf(o, "%.1f", v);
	else if (v >= 1)
		strbuf_addf(o, "%.3f", v);
	else
		strbuf_addf(o, "%.5f", v);
}

/* One xychart-beta block: quantity q of every point that measured it. */
static void trend_chart(struct strbuf *o, const struct report *r, size_t q, const char *title)
{
	const struct report_history *h = &r->trend->hist;
	size_t n = 0;
	double max = 0;
	for (size_t i = 0; i < h->n; i++)
		if (isfinite(h->points[i].value[q])) {
			n++;
			max = fmax(max, h->points[i].value[q]);
		}
	if (n < 2 || !(max > 0))
		return;
	struct strbuf b = STRBUF_INIT;
	strbuf_addf(&b, "xychart-beta\n    title \"%s\"\n    x-axis [", title);
	size_t k = 0;
	for (size_t i = 0; i < h->n; i++) {
		const struct report_point *p = &h->points[i];
		if (!isfinite(p->value[q]))
			continue;
		char c[11];
		report_short_commit(c, p->commit);
		c[7] = '\0';
		if (p->run == r->head->id)
			strbuf_addf(&b, "%s\"%s\"", k++ ? ", " : "", r->pr_head ? "PR" : "head");
		else
			strbuf_addf(&b, "%s\"%s r%lld\"", k++ ? ", " : "", *c ? c : "run",
			            (long long)p->run);
	}
	strbuf_addstr(&b, "]\n    y-axis \"CPU seconds\" 0 --> ");
	mermaid_number(&b, max * 1.15);
	strbuf_addstr(&b, "\n    line [");
	k = 0;
	for (size_t i = 0; i < h->n; i++) {
		if (!isfinite(h->points[i].value[q]))
			continue;
		if (k++)
			strbuf_addstr(&b, ", ");
		mermaid_number(&b, h->points[i].value[q]);
	}
	strbuf_addstr(&b, "]\n");
	fenced(o, "mermaid", &b);
	strbuf_addch(o, '\n');
	strbuf_release(&b);
}

static void trend_section(struct strbuf *o, const struct report *r, const struct md_limits *lim)
{
	const struct report_trend *t = r->trend;
	if (!t || !lim->trend_charts || t->hist.n < 2 || !t->hist.nq)
		return;
	strbuf_addstr(o, "<details open><summary>Trend: the base branch's last runs and this "
	                 "one</summary>\n\n");
	struct strbuf title = STRBUF_INIT;
	strbuf_addstr(&title, "Suite CPU seconds per run");
	trend_chart(o, r, 0, title.buf);
	for (size_t i = 0; i < t->nitems && i + 1 < lim->trend_charts && i + 1 < t->hist.nq; i++) {
		strbuf_reset(&title);
		report_escape(&title, t->items[i]->name, REPORT_ESC_LABEL, 48);
		strbuf_addstr(&title, t->items[i]->measure == REPORT_SELF ? " self" : " total");
		strbuf_addstr(&title, " CPU seconds");
		trend_chart(o, r, i + 1, title.buf);
	}
	strbuf_release(&title);
	strbuf_addstr(o, "</details>\n\n");
}

/* ---- what did not change ---- */

static void tests_table(struct strbuf *o, const struct report_diff *d, const struct md_limits *lim,
                        int html)
{
	size_t ntests = 0;
	for (size_t i = 0; i < d->nitems; i++)
		ntests += d->items[i].measure == REPORT_TEST;
	if (!ntests || !lim->tests)
		return;
	static const int right[] = {0, 1, 1, 1, 0};
	struct strbuf cells[5];
	for (size_t i = 0; i < 5; i++)
		strbuf_init(&cells[i], 0);
	struct table t = {o, html, 5, right};
	table_begin(&t);
	strbuf_addstr(&cells[0], "test");
	strbuf_addstr(&cells[1], "base CPU (per run)");
	strbuf_addstr(&cells[2], "head CPU");
	strbuf_addstr(&cells[3], "change");
	strbuf_addstr(&cells[4], "result");
	table_row(&t, cells, 1);
	size_t shown = 0;
	for (size_t i = 0; i < d->nitems && shown < lim->tests; i++) {
		const struct report_item *it = &d->items[i];
		if (it->measure != REPORT_TEST)
			continue;
		test_label(&cells[0], d, it->name, lim->name_chars);
		add_seconds(&cells[1], it->cmp.base_seconds);
		add_seconds(&cells[2], it->cmp.head_seconds);
		add_change(&cells[3], &it->cmp);
		result_cell(&cells[4], it, d->opts.min_share);
		table_row(&t, cells, 0);
		shown++;
	}
	table_end(&t);
	if (shown < ntests)
		strbuf_addf(o, "…and %zu more tests (the JSON report lists all).\n\n",
		            ntests - shown);
	for (size_t i = 0; i < 5; i++)
		strbuf_release(&cells[i]);
}

static void rest_section(struct strbuf *o, const struct report_diff *d, const struct md_limits *lim,
                         int html)
{
	struct md_counts k;
	count_items(d, &k);
	size_t ntests = 0;
	for (size_t i = 0; i < d->nitems; i++)
		ntests += d->items[i].measure == REPORT_TEST;
	size_t ut = k.tests[MD_UNCHANGED], uf = k.n[MD_UNCHANGED] - ut;
	strbuf_addf(o,
	            "<details><summary>✓ %zu unchanged (%zu test%s, %zu function comparison%s), "
	            "%zu not judged; ",
	            k.n[MD_UNCHANGED], ut, ut == 1 ? "" : "s", uf, uf == 1 ? "" : "s",
	            k.n[MD_NOT_JUDGED]);
	/* The table holds at most lim->tests of them: say so where it is opened. */
	if (ntests > lim->tests && lim->tests)
		strbuf_addf(o, "CPU time of %zu of the %zu tests, the biggest changes first",
		            lim->tests, ntests);
	else
		strbuf_addstr(o, "every test's CPU time");
	strbuf_addstr(o, "</summary>\n\n");
	if (ntests && lim->tests)
		tests_table(o, d, lim, html);
	else
		strbuf_addstr(o, "No tests were told apart in this run.\n\n");
	strbuf_addstr(o, "</details>\n\n");
}

/* ciprof ab: the heading says where and how long base and head were measured. */
static void ab_heading(struct strbuf *o, const struct report_ab *ab)
{
	double min = ab->seconds / 60;
	strbuf_addf(o, "### A/B on one machine: %zu round%s, %.*f minute%s\n\n", ab->rounds,
	            ab->rounds == 1 ? "" : "s", min < 10 ? 1 : 0, min,
	            min >= 0.95 && min < 1.05 ? "" : "s");
}

static void ab_undecided(struct strbuf *o, const struct report_ab *ab)
{
	strbuf_addf(o,
	            "> **%zu test%s or function%s undecided** after %zu round%s: neither a change "
	            "of the minimum size nor the same within it could be told from the rounds' "
	            "spread. They are not counted as regressions; more rounds (`--max-rounds`, "
	            "`--max-seconds`) or a quieter machine would decide them.",
	            ab->undecided, ab->undecided == 1 ? "" : "s", ab->undecided == 1 ? "" : "s",
	            ab->rounds, ab->rounds == 1 ? "" : "s");
	if (ab->dispersion >= RUN_COARSE_DISPERSION)
		strbuf_addstr(o,
		              " Here the samples were coarse (below): a short suite needs several "
		              "times the rounds.");
	strbuf_addstr(o, "\n\n");
}

static void ab_footer(struct strbuf *o, const struct report_diff *d, const struct report_ab *ab)
{
	const char *why = !strcmp(ab->stopped, "decided")       ? "every item was decided"
	                  : !strcmp(ab->stopped, "rounds")      ? "the round budget was spent"
	                  : !strcmp(ab->stopped, "seconds")     ? "the time budget was spent"
	                  : !strcmp(ab->stopped, "interrupted") ? "it was interrupted"
	                  : !strcmp(ab->stopped, "stored")      ? "that is what was stored"
	                                                        : "it was stopped";
	strbuf_addf(o,
	            "<sub>ciprof ab: base and head alternated in ABBA rounds on one machine, "
	            "sampling %s; stopped after %zu of at most %zu rounds because %s. Per test "
	            "and per function (self time), the mean log head/base ratio over the rounds, "
	            "its error the larger of sampling error and the rounds' spread; "
	            "Benjamini–Hochberg at FDR %.2g %% at this, the final look (the interim ones "
	            "of %zu planned shared a fifth of the error budget), minimum "
	            "change %.2g %%, minimum share %.2g %% of samples.</sub>\n",
	            ab->event, ab->rounds, ab->max_rounds, why, 100 * d->opts.alpha, ab->looks,
	            100 * d->opts.min_change, 100 * d->opts.min_share);
	if (strcmp(ab->event, "cpu-clock"))
		strbuf_addf(o,
		            "\n<sub>Sampled on %s: the times shown are billions of %s, not "
		            "seconds.</sub>\n",
		            ab->event, ab->event);
	/* The preload backend's timers fire at the kernel's tick, whatever the rate asked for. */
	if (ab->dispersion >= RUN_COARSE_DISPERSION)
		strbuf_addf(o,
		            "\n<sub>Each sample stood for %.1f periods on average: the "
		            "LD_PRELOAD backend's CPU-time timers fire at the kernel's tick, "
		            "not at the rate asked for, so every function had about that many "
		            "times fewer samples.</sub>\n",
		            ab->dispersion);
}

/* The method, in one line under a history-mode report. */
static void history_footer(struct strbuf *o, const struct report_diff *d)
{
	strbuf_addstr(o, "<sub>ciprof report: CPU time per test and per function against the "
	                 "suite-wide factor; each judged against its own run-to-run spread ");
	if (d->extra_estimated)
		strbuf_addf(o, "learned from %zu base-branch runs (typical CV %.1f %%)",
		            d->history_runs, 100 * sqrt(d->extra_variance));
	else
		strbuf_addf(o, "(assumed CV %.1f %%: fewer than 2 base-branch runs)",
		            100 * sqrt(d->extra_variance));
	if (d->efficiency < 1)
		strbuf_addf(o, " plus sampling error (%.2g of Poisson's, measured)", d->efficiency);
	else
		strbuf_addstr(o, " plus sampling error");
	if (d->head_spread > 0)
		strbuf_addf(o,
		            ", widened by the %.1f %% more spread this run showed than its history",
		            100 * sqrt(d->head_spread));
	if (d->shift_variance > 0)
		strbuf_addf(o,
		            ", widened by %.1f %% because the whole suite moved (×%.3f) beyond its "
		            "history's run-to-run %.1f %%: functions answer such a move unequally",
		            100 * sqrt(d->shift_variance), d->scale, 100 * sqrt(d->level_variance));
	size_t tests = 0;
	for (size_t i = 0; i < d->nitems; i++)
		tests += d->items[i].cmp.tested && d->items[i].measure == REPORT_TEST;
	size_t funcs = d->ntested - tests;
	strbuf_addf(o,
	            ", Benjamini–Hochberg at FDR %.2g %% over %zu test comparison%s and, as a "
	            "separate family, %zu function comparison%s (self and total times), minimum "
	            "change %.2g %%, minimum share %.2g %% of samples.</sub>\n",
	            100 * d->opts.alpha, tests, tests == 1 ? "" : "s", funcs, funcs == 1 ? "" : "s",
	            100 * d->opts.min_change, 100 * d->opts.min_share);
}

static void footer(struct strbuf *o, const struct report_diff *d, const struct md_limits *lim)
{
	if (d->ab)
		ab_footer(o, d, d->ab);
	else
		history_footer(o, d);
	if (lim->truncated)
		strbuf_addstr(o, "\n<sub>Shortened to fit a comment (65,536 characters); the "
		                 "HTML and JSON reports hold everything.</sub>\n");
}

static void no_baseline(struct strbuf *o, const struct report *r)
{
	char hc[11];
	report_short_commit(hc, r->pr_head && *r->pr_head ? r->pr_head : r->head->commit);
	strbuf_addstr(o, "**ciprof: no baseline**");
	if (r->id && *r->id) {
		strbuf_addstr(o, " (");
		code(o, r->id, 64);
		strbuf_addch(o, ')');
	}
	strbuf_addstr(o, " · head ");
	if (*hc)
		strbuf_addf(o, "<code>%s</code> ", hc);
	strbuf_addf(o, "(run %lld) was not compared: ", (long long)r->head->id);
	report_escape(o, r->base->none, REPORT_ESC_MD, 400);
	strbuf_addstr(o, "\n");
}

static void render(struct strbuf *o, const struct report *r, const struct md_limits *lim, int html)
{
	char *marker = report_marker(r->id);
	strbuf_addf(o, "%s\n", marker);
	free(marker);
	if (!r->diff) {
		no_baseline(o, r);
		return;
	}
	const struct report_diff *d = r->diff;
	if (d->ab)
		ab_heading(o, d->ab);
	verdict_line(o, r);
	head_line(o, r, lim);
	if (r->advisory) {
		strbuf_addstr(o, "> **Advisory:** this verdict does not fail the build: ");
		report_escape(o, r->advisory, REPORT_ESC_MD, 300);
		strbuf_addstr(o, ".\n\n");
	}
	size_t shown = 0;
	findings_section(o, r, lim, REPORT_REGRESSION, &shown);
	findings_section(o, r, lim, REPORT_IMPROVEMENT, &shown);
	if (d->verdict == REPORT_OK)
		strbuf_addf(o,
		            "No test or function changed by %.2g %% or more with significance.\n\n",
		            100 * d->opts.min_change);
	if (d->ab && d->ab->undecided)
		ab_undecided(o, d->ab);
	method_line(o, d);
	trend_section(o, r, lim);
	rest_section(o, d, lim, html);
	flame_section(o, d, lim);
	footer(o, d, lim);
}

int report_markdown_doc(const struct report *r, struct strbuf *out, size_t limit, int html_tables)
{
	struct md_limits lim = {20, 50, 150, 12, 4, 160, 60, 0};
	struct strbuf doc = STRBUF_INIT;
	for (int step = 0;; step++) {
		strbuf_reset(&doc);
		render(&doc, r, &lim, html_tables);
		if (!limit || doc.len <= limit)
			break;
		/* Shrink the least important parts first: the findings go last. */
		lim.truncated = 1;
		if (lim.flame_lines > 10)
			lim.flame_lines /= 2;
		else if (lim.tests > 5)
			lim.tests /= 2;
		else if (lim.subtree_lines > 4)
			lim.subtree_lines /= 2;
		else if (lim.findings > 5)
			lim.findings = lim.findings > 10 ? lim.findings / 2 : 5;
		else if (lim.trend_charts > 1)
			lim.trend_charts--;
		else if (lim.name_chars > 40)
			lim.name_chars /= 2, lim.path_chars = 24;
		else if (lim.flame_lines)
			lim.flame_lines = 0;
		else if (lim.subtree_lines)
			lim.subtree_lines = 0;
		else if (lim.tests)
			lim.tests = 0;
		else if (lim.findings > 1)
			lim.findings--;
		else
			break;
		if (step > 200)
			break;
	}
	if (limit && doc.len > limit) {
		/* Cannot happen with bounded rows; still never exceed the limit. */
		static const char note[] = "\n\n<sub>Report cut at the comment size limit.</sub>\n";
		size_t cut = limit - sizeof(note);
		while (cut && doc.buf[cut] != '\n')
			cut--;
		doc.len = cut;
		doc.buf[cut] = '\0';
		strbuf_addstr(&doc, note);
	}
	int ret = strbuf_add(out, doc.buf, doc.len);
	strbuf_release(&doc);
	return ret < 0 ? cp_error("the report is larger than its output buffer allows") : 0;
}

int report_markdown(const struct report *r, struct strbuf *out, size_t limit)
{
	return report_markdown_doc(r, out, limit, 0);
}
