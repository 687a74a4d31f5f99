/* The PR comment: GitHub-flavoured Markdown with a hidden marker line, a one-line verdict, a
 * per-test table, the top regressed and improved functions with their hottest call paths, and
 * a text diff flame graph in <details>. It stays within GitHub's 65,536 characters by showing
 * fewer rows (and says so). Names only ever pass through report_escape. */
#include "report/internal.h"
#include "common/error.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How much of each section is shown; shrunk step by step until the text fits. */
struct md_limits {
	size_t tests, funcs, flame_lines, name_chars, path_chars;
	int truncated;
};

#define FLAME_MIN_SHARE 0.01 /* text flame graph: nodes holding at least 1 % on one side */
#define FLAME_MAX_DEPTH 40
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

static void code(struct strbuf *o, const char *name, size_t max)
{
	strbuf_addstr(o, "<code>");
	report_escape(o, name, REPORT_ESC_MD, max);
	strbuf_addstr(o, "</code>");
}

static void test_label(struct strbuf *o, const char *name, size_t max)
{
	if (*name)
		code(o, name, max);
	else
		strbuf_addstr(o, "<i>(outside tests)</i>");
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

static void add_change(struct strbuf *o, const struct report_cmp *c)
{
	if (isinf(c->change))
		strbuf_addstr(o, "new");
	else if (!(c->head_count > 0) && c->base_count > 0)
		strbuf_addstr(o, "gone");
	else
		strbuf_addf(o, "%+.1f %%", 100 * c->change);
}

static void add_pct(struct strbuf *o, double share)
{
	strbuf_addf(o, "%.1f %%", 100 * share);
}

static const char *measure_words(enum report_measure m)
{
	return m == REPORT_SELF ? "self time" : "time in callees not listed here";
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
	} else if (!c->tested && !*it->name)
		strbuf_addstr(o, "not judged (harness and tools)");
	else if (c->kind == REPORT_REGRESSION)
		strbuf_addf(o, "▲ <b>slower</b> (q = %.2g)", c->q);
	else if (c->kind == REPORT_IMPROVEMENT)
		strbuf_addf(o, "▼ <b>faster</b> (q = %.2g)", c->q);
	else if (!c->tested)
		strbuf_addf(o, "not judged (&lt; %.2g %% of samples)", 100 * min_share);
	else
		strbuf_addstr(o, "no significant change");
}

static void tests_section(struct strbuf *o, const struct report_diff *d,
                          const struct md_limits *lim, int html)
{
	size_t ntests = 0;
	for (size_t i = 0; i < d->nitems; i++)
		ntests += d->items[i].measure == REPORT_TEST;
	if (!ntests)
		return;
	strbuf_addstr(o, "#### Tests\n\n");
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
		test_label(&cells[0], it->name, lim->name_chars);
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

static void functions_section(struct strbuf *o, const struct report_diff *d,
                              const struct md_limits *lim, enum report_kind kind)
{
	size_t n = 0;
	for (size_t i = 0; i < d->nitems; i++)
		n += d->items[i].measure != REPORT_TEST && d->items[i].cmp.kind == kind;
	if (!n)
		return;
	strbuf_addf(o, "#### %s functions\n\n", kind == REPORT_REGRESSION ? "Slower" : "Faster");
	size_t shown = 0;
	for (size_t i = 0; i < d->nitems && shown < lim->funcs; i++) {
		const struct report_item *it = &d->items[i];
		const struct report_cmp *c = &it->cmp;
		if (it->measure == REPORT_TEST || c->kind != kind)
			continue;
		shown++;
		strbuf_addf(o, "%zu. ", shown);
		code(o, it->name, lim->name_chars);
		if (*it->module) {
			strbuf_addstr(o, " <sub>");
			report_escape(o, it->module, REPORT_ESC_MD, 60);
			strbuf_addstr(o, "</sub>");
		}
		strbuf_addf(o, " — %s **", measure_words(it->measure));
		add_change(o, c);
		strbuf_addstr(o, "**: ");
		add_seconds(o, c->base_seconds);
		strbuf_addstr(o, " → ");
		add_seconds(o, c->head_seconds);
		strbuf_addstr(o, " per run, ");
		add_pct(o, c->base_share);
		strbuf_addstr(o, " → ");
		add_pct(o, c->head_share);
		strbuf_addf(o, " of samples (q = %.2g", c->q);
		if (c->spread > 0) {
			strbuf_addstr(o, ", ");
			add_spread(o, c);
		}
		strbuf_addch(o, ')');
		if (it->path) {
			strbuf_addstr(o, "<br />\n   hottest path: ");
			add_path(o, d, it->path, lim);
		}
		strbuf_addch(o, '\n');
	}
	if (shown < n)
		strbuf_addf(o, "\n…and %zu more (the JSON report lists all).\n", n - shown);
	strbuf_addch(o, '\n');
}

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
	size_t lines, max_lines, name_chars;
	double head_total, base_total; /* base in head samples (expected) */
};

static int flame_visible(const struct flame_ctx *f, uint32_t n)
{
	const struct report_tree *t = &f->d->tree;
	double hs = f->head_total > 0 ? t->head[n] / f->head_total : 0;
	double bs = f->base_total > 0 ? f->d->c * t->base[n] / f->base_total : 0;
	return hs >= FLAME_MIN_SHARE || bs >= FLAME_MIN_SHARE;
}

static void flame_node(struct flame_ctx *f, uint32_t n, size_t depth)
{
	if (f->lines >= f->max_lines)
		return;
	const struct report_tree *t = &f->d->tree;
	double hs = f->head_total > 0 ? t->head[n] / f->head_total : 0;
	strbuf_addf(f->o, "%5.1f%% ", 100 * hs);
	add_bar(f->o, hs);
	double ch = report_node_change(f->d, n);
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
	if (depth >= FLAME_MAX_DEPTH)
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
	                      d->head_samples,
	                      d->c * d->base_samples};
	strbuf_addf(&body, "%6s %-20s %8s  %s\n", "head", "share of head", "change",
	            "stack (callers above callees)");
	flame_node(&f, 0, 0);
	/* A fence longer than any backtick run inside cannot be closed by a name. */
	size_t fence = longest_backticks(body.buf) + 1;
	if (fence < 3)
		fence = 3;
	strbuf_addstr(o, "<details><summary>Diff flame graph (text): each frame's share of the "
	                 "head run and its change against the base</summary>\n\n");
	for (size_t i = 0; i < fence; i++)
		strbuf_addch(o, '`');
	strbuf_addstr(o, "text\n");
	strbuf_add(o, body.buf, body.len);
	for (size_t i = 0; i < fence; i++)
		strbuf_addch(o, '`');
	strbuf_addch(o, '\n');
	if (f.lines >= f.max_lines)
		strbuf_addf(o,
		            "\nShowing the first %zu frames; the HTML and SVG reports draw all.\n",
		            f.lines);
	strbuf_addstr(o, "\n</details>\n\n");
	strbuf_release(&body);
}

/* "2 functions and 1 test slower" for the flagged items of one kind; nothing when none. */
static int count_phrase(struct strbuf *o, const struct report_diff *d, enum report_kind kind)
{
	size_t tests = 0, funcs = 0;
	for (size_t i = 0; i < d->nitems; i++) {
		const struct report_item *it = &d->items[i];
		if (it->cmp.kind != kind)
			continue;
		if (it->measure == REPORT_TEST)
			tests++;
		else
			funcs++;
	}
	if (funcs)
		strbuf_addf(o, "%zu function%s", funcs, funcs == 1 ? "" : "s");
	if (funcs && tests)
		strbuf_addstr(o, " and ");
	if (tests)
		strbuf_addf(o, "%zu test%s", tests, tests == 1 ? "" : "s");
	if (funcs || tests)
		strbuf_addstr(o, kind == REPORT_REGRESSION ? " slower" : " faster");
	return funcs || tests;
}

static void verdict_line(struct strbuf *o, const struct report *r, const struct md_limits *lim)
{
	const struct report_diff *d = r->diff;
	if (d->verdict == REPORT_OK) {
		strbuf_addstr(o, "**ciprof: ✓ no significant change**");
	} else {
		strbuf_addf(o, "**ciprof: %s** — ",
		            d->verdict == REPORT_REGRESSED ? "▲ regression" : "▼ improvement");
		if (count_phrase(o, d, REPORT_REGRESSION))
			strbuf_addstr(o, d->nimproved ? ", " : "");
		count_phrase(o, d, REPORT_IMPROVEMENT);
	}
	char hc[11], bc[11];
	report_short_commit(hc, r->head->commit);
	report_short_commit(bc, r->base->commit);
	strbuf_addf(o, " · head %s%s%s (run %lld", *hc ? "<code>" : "", hc, *hc ? "</code>" : "",
	            (long long)r->head->id);
	if (*r->head->branch) {
		strbuf_addstr(o, ", ");
		code(o, r->head->branch, lim->name_chars);
	}
	strbuf_addf(o, ") vs base %s%s%s (", *bc ? "<code>" : "", bc, *bc ? "</code>" : "");
	report_escape(o, r->base->rule, REPORT_ESC_MD, 200);
	strbuf_addstr(o, ")\n\n");
}

static void scale_line(struct strbuf *o, const struct report_diff *d, const struct report_ab *ab)
{
	double total = d->base_cpu > 0 ? d->head_cpu / d->base_cpu - 1 : 0;
	strbuf_addstr(o, "CPU time ");
	add_seconds(o, d->base_cpu);
	strbuf_addstr(o, " per base run → ");
	add_seconds(o, d->head_cpu);
	strbuf_addf(o, " (%+.1f %%). ", 100 * total);
	if (ab)
		strbuf_addstr(o, "Base and head ran in turn on this machine (ABBA rounds), so "
		                 "they are compared in plain CPU time, round by round, without a "
		                 "suite-wide factor.");
	else if (d->scale_estimated)
		strbuf_addf(o,
		            "Suite-wide factor **%.2f×** (head/base CPU time, a robust average "
		            "over %zu functions); every test and function is judged against it.",
		            d->scale, d->scale_functions);
	else
		strbuf_addf(o,
		            "Suite-wide factor **1.00×** (too few functions, %zu, to estimate "
		            "one); tests and functions are compared in plain CPU time.",
		            d->scale_functions);
	strbuf_addstr(o, "\n\n");
	if (d->scale_estimated && fabs(d->scale - 1) >= d->opts.min_change)
		strbuf_addf(o,
		            "> **The whole suite ran %.2f× %s** than the base: a %s runner, or a "
		            "change that touches everything. It is not counted against any one "
		            "test or function.\n\n",
		            d->scale > 1 ? d->scale : 1 / d->scale,
		            d->scale > 1 ? "slower" : "faster", d->scale > 1 ? "slower" : "faster");
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
	            "`--max-seconds`) or a quieter machine would decide them.\n\n",
	            ab->undecided, ab->undecided == 1 ? "" : "s", ab->undecided == 1 ? "" : "s",
	            ab->rounds, ab->rounds == 1 ? "" : "s");
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
	            "Benjamini–Hochberg at FDR %.2g %% per look (%zu looks planned), minimum "
	            "change %.2g %%, minimum share %.2g %% of samples.</sub>\n",
	            ab->event, ab->rounds, ab->max_rounds, why, 100 * d->opts.alpha, ab->looks,
	            100 * d->opts.min_change, 100 * d->opts.min_share);
}

static void footer(struct strbuf *o, const struct report_diff *d, const struct md_limits *lim,
                   const struct report_ab *ab)
{
	if (!ab)
		strbuf_addf(o,
	            "<sub>ciprof report: CPU time per test and per function against the "
	            "suite-wide factor; a likelihood-ratio test on sample counts widened by the "
	            "run-to-run spread (CV %.1f %%%s), Benjamini–Hochberg at FDR %.2g %% over "
	            "%zu comparisons, minimum change %.2g %%, minimum share %.2g %% of "
	            "samples.</sub>\n",
	            100 * sqrt(d->extra_variance),
	            d->extra_estimated ? ", measured on the base runs" : ", assumed",
	            100 * d->opts.alpha, d->ntested, 100 * d->opts.min_change,
	            100 * d->opts.min_share);
	if (lim->truncated)
		strbuf_addstr(o, "\n<sub>Shortened to fit a comment (65,536 characters); the "
		                 "HTML and JSON reports hold everything.</sub>\n");
}

static void no_baseline(struct strbuf *o, const struct report *r)
{
	char hc[11];
	report_short_commit(hc, r->head->commit);
	strbuf_addstr(o, "**ciprof: no baseline** · head ");
	if (*hc)
		strbuf_addf(o, "<code>%s</code> ", hc);
	strbuf_addf(o, "(run %lld) was not compared: ", (long long)r->head->id);
	report_escape(o, r->base->none, REPORT_ESC_MD, 400);
	strbuf_addstr(o, "\n");
}

static void render(struct strbuf *o, const struct report *r, const struct md_limits *lim, int html)
{
	strbuf_addstr(o, REPORT_MARKER "\n");
	if (!r->diff) {
		no_baseline(o, r);
		return;
	}
	const struct report_diff *d = r->diff;
	if (d->ab)
		ab_heading(o, d->ab);
	verdict_line(o, r, lim);
	scale_line(o, d, d->ab);
	tests_section(o, d, lim, html);
	functions_section(o, d, lim, REPORT_REGRESSION);
	functions_section(o, d, lim, REPORT_IMPROVEMENT);
	if (d->verdict == REPORT_OK)
		strbuf_addf(o,
		            "No test or function changed by %.2g %% or more with significance.\n\n",
		            100 * d->opts.min_change);
	if (d->ab && d->ab->undecided)
		ab_undecided(o, d->ab);
	flame_section(o, d, lim);
	if (d->ab)
		ab_footer(o, d, d->ab);
	footer(o, d, lim, d->ab);
}

int report_markdown_doc(const struct report *r, struct strbuf *out, size_t limit, int html_tables)
{
	struct md_limits lim = {50, 10, 150, 160, 60, 0};
	struct strbuf doc = STRBUF_INIT;
	for (int step = 0;; step++) {
		strbuf_reset(&doc);
		render(&doc, r, &lim, html_tables);
		if (!limit || doc.len <= limit)
			break;
		/* Shrink the least important parts first. */
		lim.truncated = 1;
		if (lim.flame_lines > 10)
			lim.flame_lines /= 2;
		else if (lim.funcs > 3)
			lim.funcs = lim.funcs > 6 ? lim.funcs / 2 : 3;
		else if (lim.tests > 5)
			lim.tests /= 2;
		else if (lim.name_chars > 40)
			lim.name_chars /= 2, lim.path_chars = 24;
		else if (lim.flame_lines)
			lim.flame_lines = 0;
		else
			break;
		if (step > 64)
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
