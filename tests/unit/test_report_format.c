/* report/'s renderers: the Markdown layout against golden files, escaping of hostile names in
 * every format (Markdown, HTML, SVG, JSON), the 65,536-character limit, and determinism.
 *
 * Golden files live in tests/unit/data/report/. After an intended layout change, regenerate
 * them and review the diff:
 *     CIPROF_UPDATE_GOLDEN=1 build/tests/test_report_format && git diff tests/unit/data/report
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/strbuf.h"
#include "report/internal.h"
#include "report/report.h"

#include <cmark.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- fixed inputs --- */

struct stack_count {
	const char *test;
	const char *stack; /* "proc;f;g" */
	uint64_t count;
};

static struct profile *build(const struct stack_count *sc, size_t n, int hz)
{
	struct profile *p = profile_new();
	for (size_t i = 0; i < n; i++) {
		uint32_t node = 0;
		const char *s = sc[i].stack;
		int first = 1;
		while (*s) {
			const char *e = strchr(s, ';');
			size_t len = e ? (size_t)(e - s) : strlen(s);
			struct profile_frame f = {.function = profile_intern_len(p, s, len),
			                          .module = profile_intern(p, first ? "" : "demo"),
			                          .kind = first ? PROFILE_FRAME_PROCESS
			                                        : PROFILE_FRAME_FUNCTION};
			node = profile_node(p, node, profile_frame(p, &f));
			first = 0;
			s += len + (e ? 1 : 0);
		}
		profile_add(p, profile_intern(p, sc[i].test), node, sc[i].count);
	}
	p->stats.hz = hz;
	p->stats.period_ns = (uint64_t)(1e9 / hz + 0.5);
	p->stats.samples = profile_total(p, NULL);
	p->stats.cpu_seconds = (double)p->stats.samples * (double)p->stats.period_ns / 1e9;
	return p;
}

/* A small suite: compute_hash got ~30 % slower, parse_line ~25 % faster, the rest is the
 * same give or take a sample. */
static const struct stack_count base_a[] = {
        {"test_parse", "demo;main;test_parse;parse_line", 2000},
        {"test_parse", "demo;main;test_parse;parse_line;read_token", 1500},
        {"test_hash", "demo;main;test_hash;compute_hash", 3000},
        {"test_hash", "demo;main;test_hash;compute_hash;mix64", 1000},
        {"test_sort", "demo;main;test_sort;sort_items", 2500},
        {"test_sort", "demo;main;test_sort;sort_items;compare_items", 1200},
        {"", "demo;main;setup", 400},
        {"", "demo;main;teardown", 300},
};
static const struct stack_count base_b[] = {
        {"test_parse", "demo;main;test_parse;parse_line", 2040},
        {"test_parse", "demo;main;test_parse;parse_line;read_token", 1480},
        {"test_hash", "demo;main;test_hash;compute_hash", 2960},
        {"test_hash", "demo;main;test_hash;compute_hash;mix64", 1010},
        {"test_sort", "demo;main;test_sort;sort_items", 2530},
        {"test_sort", "demo;main;test_sort;sort_items;compare_items", 1190},
        {"", "demo;main;setup", 410},
        {"", "demo;main;teardown", 290},
};
static const struct stack_count head_c[] = {
        {"test_parse", "demo;main;test_parse;parse_line", 1500},
        {"test_parse", "demo;main;test_parse;parse_line;read_token", 1510},
        {"test_hash", "demo;main;test_hash;compute_hash", 3900},
        {"test_hash", "demo;main;test_hash;compute_hash;mix64", 1005},
        {"test_sort", "demo;main;test_sort;sort_items", 2510},
        {"test_sort", "demo;main;test_sort;sort_items;compare_items", 1210},
        {"", "demo;main;setup", 405},
        {"", "demo;main;teardown", 295},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

struct fixture {
	struct profile *runs[2], *merged, *head;
	struct run_meta meta;
	struct report_baseline base;
	struct report_diff *diff;
	struct report rep;
};

static void fixture_init_bases(struct fixture *fx, const struct stack_count *ba, size_t nba,
                               const struct stack_count *bb, size_t nbb,
                               const struct stack_count *h, size_t nh, const char *branch)
{
	fx->runs[0] = build(ba, nba, 999);
	fx->runs[1] = build(bb, nbb, 999);
	fx->merged = profile_new();
	for (int i = 0; i < 2; i++) {
		profile_merge(fx->merged, fx->runs[i]);
		fx->merged->stats.samples += fx->runs[i]->stats.samples;
		fx->merged->stats.cpu_seconds += fx->runs[i]->stats.cpu_seconds;
	}
	fx->merged->stats.hz = 999;
	fx->merged->stats.period_ns = fx->runs[0]->stats.period_ns;
	fx->head = build(h, nh, 999);
	run_meta_init(&fx->meta);
	fx->meta.id = 12;
	run_meta_set(&fx->meta.commit, "0123456789abcdef0123456789abcdef01234567");
	run_meta_set(&fx->meta.branch, branch);
	report_baseline_init(&fx->base);
	fx->base.n = 2;
	fx->base.ids = malloc(2 * sizeof(int64_t));
	fx->base.ids[0] = 9;
	fx->base.ids[1] = 10;
	free(fx->base.commit);
	fx->base.commit = strdup("fedcba9876543210fedcba9876543210fedcba98");
	free(fx->base.rule);
	fx->base.rule = strdup("2 runs of main at the merge-base fedcba9876");
	free(fx->base.ref);
	fx->base.ref = strdup("main");
	struct report_options o;
	report_options_init(&o);
	report_diff_new(&fx->diff, fx->merged, 2, fx->runs, 2, fx->head, &o);
	fx->rep = (struct report){.head = &fx->meta, .base = &fx->base, .diff = fx->diff};
}

static void fixture_init(struct fixture *fx, const struct stack_count *h, size_t nh,
                         const char *branch)
{
	fixture_init_bases(fx, base_a, N(base_a), base_b, N(base_b), h, nh, branch);
}

static void fixture_release(struct fixture *fx)
{
	report_diff_free(fx->diff);
	report_baseline_release(&fx->base);
	run_meta_release(&fx->meta);
	profile_free(fx->runs[0]);
	profile_free(fx->runs[1]);
	profile_free(fx->merged);
	profile_free(fx->head);
}

/* Compares text with the golden file, or rewrites it when CIPROF_UPDATE_GOLDEN is set. */
static void check_golden(const char *name, const struct strbuf *text)
{
	/* Next to this source file: tests/unit/data/report/NAME. */
	char path[1024];
	const char *slash = strrchr(__FILE__, '/');
	int dir = slash ? (int)(slash - __FILE__) : 1;
	snprintf(path, sizeof(path), "%.*s/data/report/%s", dir, slash ? __FILE__ : ".", name);
	if (getenv("CIPROF_UPDATE_GOLDEN")) {
		FILE *f = fopen(path, "wb");
		assert_non_null(f);
		fwrite(text->buf, 1, text->len, f);
		fclose(f);
		print_message("rewrote %s\n", path);
		return;
	}
	struct strbuf want = STRBUF_INIT;
	if (strbuf_read_file(&want, path) < 0)
		fail_msg("cannot read golden file %s (regenerate: see the top of this file)", path);
	if (want.len != text->len || memcmp(want.buf, text->buf, text->len)) {
		/* Show the first differing line. */
		size_t i = 0, line = 1;
		while (i < want.len && i < text->len && want.buf[i] == text->buf[i]) {
			if (want.buf[i] == '\n')
				line++;
			i++;
		}
		print_message("golden %s differs at line %zu; got:\n%s\n", name, line, text->buf);
		fail_msg("%s does not match (regenerate: see the top of this file)", name);
	}
	strbuf_release(&want);
}

/* --- golden Markdown --- */

static void test_markdown_golden(void **state)
{
	(void)state;
	struct fixture fx;
	fixture_init(&fx, head_c, N(head_c), "feature/faster-parse");
	assert_int_equal(fx.diff->verdict, REPORT_REGRESSED);
	struct strbuf md = STRBUF_INIT;
	assert_int_equal(report_markdown(&fx.rep, &md, COMMENT_GITHUB_LIMIT), 0);
	assert_true(!strncmp(md.buf, COMMENT_MARKER "\n", strlen(COMMENT_MARKER) + 1));
	check_golden("basic.md", &md);
	/* The same input renders byte for byte the same. */
	struct strbuf again = STRBUF_INIT;
	report_markdown(&fx.rep, &again, COMMENT_GITHUB_LIMIT);
	assert_string_equal(md.buf, again.buf);
	strbuf_release(&again);
	strbuf_release(&md);
	fixture_release(&fx);
}

static void test_markdown_no_baseline(void **state)
{
	(void)state;
	struct run_meta m;
	run_meta_init(&m);
	m.id = 3;
	run_meta_set(&m.commit, "abcdef0123456789abcdef0123456789abcdef01");
	struct report_baseline b;
	report_baseline_init(&b);
	free(b.none);
	b.none = strdup("no run, branch or commit named main in the database: profile the base "
	                "branch with 'ciprof run' first, or name a baseline with --base");
	struct report r = {.head = &m, .base = &b};
	struct strbuf out = STRBUF_INIT;
	assert_int_equal(report_markdown(&r, &out, COMMENT_GITHUB_LIMIT), 0);
	check_golden("no-baseline.md", &out);
	/* Every format says so. */
	strbuf_reset(&out);
	assert_int_equal(report_json(&r, &out), 0);
	json_error_t err;
	json_t *j = json_loads(out.buf, 0, &err);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "verdict")), "ok");
	assert_true(json_is_true(json_object_get(j, "no_baseline")));
	assert_non_null(strstr(json_string_value(json_object_get(j, "message")), "no run"));
	json_decref(j);
	strbuf_reset(&out);
	assert_int_equal(report_html(&r, &out), 0);
	assert_non_null(strstr(out.buf, "no baseline"));
	strbuf_reset(&out);
	assert_int_equal(report_svg(&r, &out), 0);
	assert_non_null(strstr(out.buf, "no baseline"));
	strbuf_release(&out);
	report_baseline_release(&b);
	run_meta_release(&m);
}

/* --- frames ciprof makes, and numbers that agree --- */

/* The suite of base_a / base_b / head_c plus frames ciprof makes: "[unsampled]" (CPU time no
 * sample saw) and an address in no known object, both tripled in the head. */
static const struct stack_count pseudo_base_a[] = {
        {"test_parse", "demo;main;test_parse;parse_line", 2000},
        {"test_hash", "demo;main;test_hash;compute_hash", 3000},
        {"test_sort", "demo;main;test_sort;sort_items", 2500},
        {"test_sort", "demo;main;test_sort;sort_items;compare_items", 1200},
        {"", "demo;main;setup", 400},
        {"", "demo;[unsampled]", 300},
        {"", "demo;[unknown]+0x1234", 500},
};
static const struct stack_count pseudo_base_b[] = {
        {"test_parse", "demo;main;test_parse;parse_line", 2030},
        {"test_hash", "demo;main;test_hash;compute_hash", 2970},
        {"test_sort", "demo;main;test_sort;sort_items", 2520},
        {"test_sort", "demo;main;test_sort;sort_items;compare_items", 1190},
        {"", "demo;main;setup", 405},
        {"", "demo;[unsampled]", 310},
        {"", "demo;[unknown]+0x1234", 490},
};
static const struct stack_count pseudo_head[] = {
        {"test_parse", "demo;main;test_parse;parse_line", 2010},
        {"test_hash", "demo;main;test_hash;compute_hash", 2990},
        {"test_sort", "demo;main;test_sort;sort_items", 2505},
        {"test_sort", "demo;main;test_sort;sort_items;compare_items", 1195},
        {"", "demo;main;setup", 402},
        {"", "demo;[unsampled]", 930},
        {"", "demo;[unknown]+0x1234", 1500},
};

static void test_pseudo_frames_not_judged(void **state)
{
	(void)state;
	assert_true(report_pseudo_frame("[unsampled]"));
	assert_true(report_pseudo_frame("[unknown]"));
	assert_true(report_pseudo_frame("[unknown]+0x1234"));
	assert_true(report_pseudo_frame("[anon]+0x7f00"));
	assert_false(report_pseudo_frame("compute_hash"));
	assert_false(report_pseudo_frame("[]"));
	assert_false(report_pseudo_frame("[x]y"));
	assert_false(report_pseudo_frame("libc.so.6+0x1234"));
	struct fixture fx;
	fixture_init_bases(&fx, pseudo_base_a, N(pseudo_base_a), pseudo_base_b, N(pseudo_base_b),
	                   pseudo_head, N(pseudo_head), "feature/x");
	/* Tripled, but not functions: shown, never judged, never the verdict. */
	size_t seen = 0;
	for (size_t i = 0; i < fx.diff->nitems; i++) {
		const struct report_item *it = &fx.diff->items[i];
		if (it->measure == REPORT_TEST || !report_pseudo_frame(it->name))
			continue;
		seen++;
		assert_false(it->cmp.tested);
		assert_false(it->cmp.significant);
		assert_int_equal(it->cmp.kind, REPORT_UNCHANGED);
		assert_int_equal(it->cmp.context, REPORT_NOT_CODE);
		assert_true(it->cmp.change > 1.5);
	}
	assert_int_equal(seen, 2);
	assert_int_equal(fx.diff->verdict, REPORT_OK);
	/* Not part of the suite-wide factor either: the program's code did not move. */
	assert_true(fabs(fx.diff->scale - 1) < 0.02);
	/* JSON lists them with the reason; the flame graph shows them unflagged. */
	struct strbuf js = STRBUF_INIT, md = STRBUF_INIT;
	assert_int_equal(report_json(&fx.rep, &js), 0);
	json_error_t err;
	json_t *j = json_loads(js.buf, 0, &err);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "verdict")), "ok");
	json_t *funcs = json_object_get(j, "functions");
	int listed = 0;
	for (size_t i = 0; i < json_array_size(funcs); i++) {
		json_t *f = json_array_get(funcs, i);
		if (strcmp(json_string_value(json_object_get(f, "name")), "[unsampled]"))
			continue;
		listed = 1;
		assert_true(json_is_false(json_object_get(f, "tested")));
		assert_string_equal(json_string_value(json_object_get(f, "not_judged")),
		                    "not a function: a frame ciprof makes");
	}
	assert_true(listed);
	assert_int_equal(report_markdown(&fx.rep, &md, COMMENT_GITHUB_LIMIT), 0);
	assert_non_null(strstr(md.buf, "**ciprof: ✓ no significant change**"));
	const char *line = strstr(md.buf, "  [unsampled]");
	assert_non_null(line);
	assert_true(strncmp(line, "  [unsampled]\n", strlen("  [unsampled]\n")) == 0);
	assert_null(strstr(md.buf, "▲ slower"));
	assert_null(strstr(md.buf, "### ▲ Slower"));
	json_decref(j);
	strbuf_release(&js);
	strbuf_release(&md);
	fixture_release(&fx);
}

/* The number after needle in text, parsed from where needle ends. */
static double number_after(const char *text, const char *needle)
{
	const char *p = strstr(text, needle);
	if (!p)
		fail_msg("'%s' not in the report", needle);
	return strtod(p + strlen(needle), NULL);
}

static void test_numbers_agree(void **state)
{
	(void)state;
	/* The headline (the whole suite's CPU), the tests' CPU and the flame graph's root are one
	 * quantity, on the same definition: head seconds / base seconds per run - 1. */
	struct fixture fx;
	fixture_init_bases(&fx, pseudo_base_a, N(pseudo_base_a), pseudo_base_b, N(pseudo_base_b),
	                   pseudo_head, N(pseudo_head), "feature/x");
	const struct report_diff *d = fx.diff;
	double tb = 0, th = 0;
	for (size_t i = 0; i < d->nitems; i++)
		if (d->items[i].measure == REPORT_TEST) {
			tb += d->items[i].cmp.base_seconds;
			th += d->items[i].cmp.head_seconds;
		}
	assert_true(fabs(tb - d->base_cpu) < 1e-9 * d->base_cpu);
	assert_true(fabs(th - d->head_cpu) < 1e-9 * d->head_cpu);
	double headline = d->head_cpu / d->base_cpu - 1;
	assert_true(fabs(report_node_raw_change(d, 0) - headline) < 1e-12);
	struct strbuf md = STRBUF_INIT;
	assert_int_equal(report_markdown(&fx.rep, &md, COMMENT_GITHUB_LIMIT), 0);
	/* As printed: "the whole suite went A → B (+x %)" and the flame graph's first line. */
	const char *went = strstr(md.buf, "the whole suite went ");
	assert_non_null(went);
	double printed = number_after(strstr(went, " ("), " (");
	assert_true(fabs(printed - 100 * headline) < 0.051);
	/* The root line: "100.0% ████…  +x.x%  all" */
	const char *root = strstr(md.buf, "100.0% ");
	assert_non_null(root);
	char want[32];
	snprintf(want, sizeof(want), "%+7.1f%%  all\n", 100 * headline);
	assert_non_null(strstr(root, want));
	strbuf_release(&md);
	fixture_release(&fx);
}

/* --- the escaping function --- */

static char *esc(const char *s, enum report_esc how, size_t max)
{
	struct strbuf sb = STRBUF_INIT;
	report_escape(&sb, s, how, max);
	return strbuf_detach(&sb, NULL);
}

#define CHECK_ESC(in, how, max, want)                                                              \
	do {                                                                                       \
		char *got_ = esc(in, how, max);                                                    \
		assert_string_equal(got_, want);                                                   \
		free(got_);                                                                        \
	} while (0)

static void test_escape(void **state)
{
	(void)state;
	CHECK_ESC("<script>alert(1)</script>", REPORT_ESC_MD, 0,
	          "&#60;script&#62;alert(1)&#60;/script&#62;");
	CHECK_ESC("<script>alert(1)</script>", REPORT_ESC_XML, 0,
	          "&lt;script&gt;alert(1)&lt;/script&gt;");
	CHECK_ESC("a|b", REPORT_ESC_MD, 0, "a&#124;b");
	CHECK_ESC("``x``", REPORT_ESC_MD, 0, "&#96;&#96;x&#96;&#96;");
	CHECK_ESC("[x](javascript:alert(1))", REPORT_ESC_MD, 0, "&#91;x&#93;(javascript:alert(1))");
	CHECK_ESC("*a*_b_~c~\\", REPORT_ESC_MD, 0, "&#42;a&#42;&#95;b&#95;&#126;c&#126;&#92;");
	CHECK_ESC("&amp; \"q\" 'a'", REPORT_ESC_MD, 0, "&#38;amp; &#34;q&#34; &#39;a&#39;");
	CHECK_ESC("&amp; \"q\" 'a'", REPORT_ESC_XML, 0, "&amp;amp; &quot;q&quot; &#39;a&#39;");
	CHECK_ESC("#1 @user $x$ !", REPORT_ESC_MD, 0, "&#35;1 &#64;user &#36;x&#36; &#33;");
	/* Newlines and other controls become visible pictures, in every mode but UTF8. */
	CHECK_ESC("line1\nline2\r\t", REPORT_ESC_TEXT, 0,
	          "line1\xe2\x90\x8aline2\xe2\x90\x8d\xe2\x90\x89");
	CHECK_ESC("line1\nline2", REPORT_ESC_MD, 0, "line1\xe2\x90\x8aline2");
	CHECK_ESC("line1\nline2", REPORT_ESC_UTF8, 0, "line1\nline2");
	/* Invalid UTF-8 becomes U+FFFD; valid multibyte text passes. */
	CHECK_ESC("a\xff"
	          "b\xc3(",
	          REPORT_ESC_UTF8, 0,
	          "a\xef\xbf\xbd"
	          "b\xef\xbf\xbd(");
	CHECK_ESC("caf\xc3\xa9 \xe2\x86\x92", REPORT_ESC_MD, 0, "caf\xc3\xa9 \xe2\x86\x92");
	/* Overlong and surrogate encodings are invalid. */
	CHECK_ESC("\xc0\xaf\xed\xa0\x80", REPORT_ESC_UTF8, 0,
	          "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	/* Bidi overrides (Trojan Source) are neutralised. */
	CHECK_ESC("ab\xe2\x80\xae"
	          "cd",
	          REPORT_ESC_TEXT, 0,
	          "ab\xef\xbf\xbd"
	          "cd");
	/* Cutting counts characters and ends with an ellipsis. */
	CHECK_ESC("abcdefgh", REPORT_ESC_TEXT, 5, "abcd\xe2\x80\xa6");
	CHECK_ESC("abcde", REPORT_ESC_TEXT, 5, "abcde");
	CHECK_ESC("\xc3\xa9\xc3\xa9\xc3\xa9", REPORT_ESC_TEXT, 2, "\xc3\xa9\xe2\x80\xa6");
	CHECK_ESC("a<b", REPORT_ESC_XML, 2, "a\xe2\x80\xa6");
	/* C++ names stay readable. */
	CHECK_ESC("ns::f(int, char const*)", REPORT_ESC_MD, 0, "ns::f(int, char const&#42;)");
}

/* --- hostile names in every format --- */

static const char *const hostile[] = {
        "<script>alert(1)</script>",
        "a|b",
        "``x``",
        "[x](javascript:alert(1))",
        "line1\nline2",
        "<img src=x onerror=alert(1)>",
        "**bold** _it_ ~~s~~",
        "bad\xff\xfeutf8",
        "</code></td></tr></table><script>x</script>",
        "-->\n<!-- ciprof-report -->",
        "fence````````break",
};

/* Base: each hostile name as a function and a test with 1000 samples; head: 2000 (grew), so
 * each is flagged and shows up in tables, lists, paths and flame graphs. Most of the suite
 * (STEADY functions) does not change. */
#define STEADY 30
static void hostile_fixture(struct fixture *fx)
{
	size_t n = N(hostile), all = n + STEADY;
	struct stack_count *b = calloc(all, sizeof(*b)), *h = calloc(all, sizeof(*h));
	char **stacks = calloc(all, sizeof(*stacks));
	for (size_t i = 0; i < all; i++) {
		/* ';' separates frames in the builder: the names hold none. */
		stacks[i] = malloc(i < n ? strlen(hostile[i]) + 64 : 64);
		if (i < n) {
			sprintf(stacks[i], "demo;main;%s", hostile[i]);
			b[i] = (struct stack_count){hostile[i], stacks[i], 1000};
			h[i] = (struct stack_count){hostile[i], stacks[i], 2000};
		} else {
			sprintf(stacks[i], "demo;main;steady_%02zu", i - n);
			b[i] = h[i] = (struct stack_count){"", stacks[i], 2000};
		}
	}
	fx->runs[0] = build(b, all, 999);
	fx->runs[1] = build(b, all, 999);
	fx->merged = profile_new();
	for (int i = 0; i < 2; i++) {
		profile_merge(fx->merged, fx->runs[i]);
		fx->merged->stats.samples += fx->runs[i]->stats.samples;
		fx->merged->stats.cpu_seconds += fx->runs[i]->stats.cpu_seconds;
	}
	fx->merged->stats.hz = 999;
	fx->merged->stats.period_ns = fx->runs[0]->stats.period_ns;
	fx->head = build(h, all, 999);
	run_meta_init(&fx->meta);
	fx->meta.id = 7;
	run_meta_set(&fx->meta.commit, "<b>not-hex</b>");
	run_meta_set(&fx->meta.branch, "<img src=x onerror=alert(2)>|`");
	report_baseline_init(&fx->base);
	fx->base.n = 2;
	fx->base.ids = malloc(2 * sizeof(int64_t));
	fx->base.ids[0] = 1;
	fx->base.ids[1] = 2;
	free(fx->base.rule);
	fx->base.rule = strdup("2 runs of <script>alert(3)</script> at the merge-base");
	struct report_options o;
	report_options_init(&o);
	report_diff_new(&fx->diff, fx->merged, 2, fx->runs, 2, fx->head, &o);
	/* Each flagged function as if flagged among its test's functions (descend in diff.c):
	 * the test's hostile name is shown with it. */
	for (size_t i = 0; i < fx->diff->nitems; i++) {
		struct report_item *it = &fx->diff->items[i];
		for (size_t t = 0; it->measure == REPORT_SELF && t < fx->diff->nitems; t++)
			if (fx->diff->items[t].measure == REPORT_TEST &&
			    !strcmp(fx->diff->items[t].name, it->name) && it->cmp.significant)
				it->cmp.within = fx->diff->items[t].name;
	}
	fx->rep = (struct report){.head = &fx->meta, .base = &fx->base, .diff = fx->diff};
	for (size_t i = 0; i < all; i++)
		free(stacks[i]);
	free(stacks);
	free(b);
	free(h);
}

/* Whether s holds any of the raw markup the hostile names carry. */
static void assert_no_markup(const char *what, const char *s)
{
	static const char *const bad[] = {
	        "<script", "<img", "onerror=alert(1)>", "href=", "</table><script", NULL};
	for (const char *const *b = bad; *b; b++)
		if (strstr(s, *b))
			fail_msg("%s holds raw '%s'", what, *b);
}

static int valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		size_t len = *p < 0x80             ? 1
		             : (*p & 0xe0) == 0xc0 ? 2
		             : (*p & 0xf0) == 0xe0 ? 3
		             : (*p & 0xf8) == 0xf0 ? 4
		                                   : 0;
		if (!len)
			return 0;
		for (size_t i = 1; i < len; i++)
			if ((p[i] & 0xc0) != 0x80)
				return 0;
		p += len;
	}
	return 1;
}

/* Checks every fenced code block of md (a fence of three or more backticks, indented by at
 * most three spaces): the first line inside that starts with backticks is its closing fence,
 * exactly as long as the opening one, so no name inside closed it early. Then blanks the
 * blocks (newlines kept) and returns how many there were. */
static size_t blank_code_blocks(char *md)
{
	size_t blocks = 0;
	for (char *line = md; line && *line;) {
		char *p = line;
		while (*p == ' ' && p - line < 3)
			p++;
		size_t flen = strspn(p, "`");
		if (flen < 3) {
			char *nl = strchr(line, '\n');
			line = nl ? nl + 1 : NULL;
			continue;
		}
		blocks++;
		char *q = strchr(line, '\n');
		for (;;) {
			if (!q)
				fail_msg("a code block is never closed");
			q++;
			char *r = q;
			while (*r == ' ')
				r++;
			size_t run = strspn(r, "`");
			if (run) {
				assert_int_equal(run, flen);
				q = r + run;
				break;
			}
			q = strchr(q, '\n');
		}
		for (char *b = line; b < q; b++)
			if (*b != '\n')
				*b = ' ';
		line = q;
	}
	return blocks;
}

static void test_hostile_markdown(void **state)
{
	(void)state;
	struct fixture fx;
	hostile_fixture(&fx);
	size_t flagged = 0;
	for (size_t i = 0; i < fx.diff->nitems; i++)
		flagged += fx.diff->items[i].measure == REPORT_SELF &&
		           fx.diff->items[i].cmp.significant;
	assert_int_equal(flagged, N(hostile));
	/* Links only to safe https addresses: these are not. */
	run_meta_set(&fx.meta.job_url, "javascript:alert(1)");
	fx.rep.artifact_url = "https://example.com/a)<script>";
	struct strbuf md = STRBUF_INIT;
	assert_int_equal(report_markdown(&fx.rep, &md, COMMENT_GITHUB_LIMIT), 0);
	assert_true(valid_utf8(md.buf));
	/* every function's finding names the test it was flagged within */
	size_t within = 0, selfs = 0;
	for (const char *p = md.buf; (p = strstr(p, "among the functions of test <code>")); p++)
		within++;
	for (const char *p = md.buf; (p = strstr(p, "</sub> self time: ")); p++)
		selfs++;
	assert_true(within > 0);
	assert_int_equal(within, selfs);
	/* Names are literal text inside fenced code blocks (the findings' subtrees, the flame
	 * graph), which is safe as long as nothing inside can close a fence early; outside
	 * them, nothing may be markup. */
	char *outside = strdup(md.buf);
	size_t blocks = blank_code_blocks(outside);
	assert_true(blocks >= 2);
	assert_no_markup("markdown outside code blocks", outside);
	/* The marker is the first line, and (outside the code blocks, where a name may spell
	 * it as plain text) the only one. */
	assert_true(!strncmp(md.buf, COMMENT_MARKER "\n", strlen(COMMENT_MARKER) + 1));
	assert_null(strstr(outside + 1, COMMENT_MARKER));
	assert_null(strstr(outside, "[CI job]"));
	assert_null(strstr(outside, "example.com"));
	/* Every table row has exactly its 5 columns (6 pipes): no name split a row. */
	size_t rows = 0;
	for (char *line = outside; line && *line;) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		if (len && line[0] == '|') {
			size_t pipes = 0;
			for (size_t i = 0; i < len; i++)
				pipes += line[i] == '|';
			assert_int_equal(pipes, 6);
			rows++;
		}
		/* No line starts with a name's text: newlines in names were escaped. */
		assert_false(!strncmp(line, "line2", 5));
		assert_false(!strncmp(line, "<!--", 4) && line != outside);
		line = nl ? nl + 1 : NULL;
	}
	assert_true(rows >= N(hostile) + 2);
	/* Outside the code blocks, names use entities: no backtick, no bracket. */
	assert_null(strchr(outside, '`'));
	assert_null(strchr(outside, '['));
	free(outside);
	/* Rendered as CommonMark, nothing becomes a tag, a link or an image. */
	char *html = cmark_markdown_to_html(md.buf, md.len, CMARK_OPT_DEFAULT);
	assert_no_markup("markdown rendered by cmark", html);
	assert_null(strstr(html, "<a "));
	free(html);
	strbuf_release(&md);
	fixture_release(&fx);
}

static void test_hostile_html(void **state)
{
	(void)state;
	struct fixture fx;
	hostile_fixture(&fx);
	struct strbuf html = STRBUF_INIT;
	assert_int_equal(report_html(&fx.rep, &html), 0);
	assert_true(valid_utf8(html.buf));
	/* Two scripts: the data block and ours. The names in the data block are JSON with
	 * < > & escaped, so nothing there can end the element; the page before it holds no
	 * markup from a name. */
	char *data = strstr(html.buf, "<script type=\"application/json\" id=\"ciprof-data\">");
	assert_non_null(data);
	char *data_end = strstr(data, "</script>\n<script>");
	assert_non_null(data_end);
	char *gt = strchr(data, '>') + 1;
	for (char *p = gt; p < data_end; p++)
		assert_true(*p != '<' && *p != '>' && *p != '&');
	assert_non_null(strstr(gt, "\\u003cscript\\u003ealert(1)"));
	/* the test a function was flagged within (report.js shows it as text) */
	assert_non_null(strstr(gt, "\"within\":\"\\u003cscript\\u003ealert(1)"));
	char *js = data_end + strlen("</script>\n<script>");
	char *js_end = strstr(js, "</script>");
	assert_non_null(js_end);
	assert_null(strstr(js_end + 1, "<script"));
	*data = '\0';
	assert_no_markup("html", html.buf);
	/* The CSP admits exactly our script by its SHA-256, and no inline script else. */
	unsigned char digest[32];
	report_sha256(js, (size_t)(js_end - js), digest);
	struct strbuf want = STRBUF_INIT;
	strbuf_addstr(&want, "script-src 'sha256-");
	report_base64(&want, digest, 32);
	strbuf_addstr(&want, "';");
	assert_non_null(strstr(html.buf, want.buf));
	assert_null(strstr(html.buf, "unsafe-inline"));
	strbuf_release(&want);
	assert_non_null(strstr(html.buf, "&lt;script&gt;alert(1)&lt;/script&gt;"));
	assert_non_null(strstr(html.buf, "Content-Security-Policy"));
	/* Tables came through as tables, the flame graph inline. */
	assert_non_null(strstr(html.buf, "<table>"));
	assert_non_null(strstr(html.buf, "<svg xmlns="));
	assert_null(strstr(html.buf, "raw HTML omitted"));
	strbuf_release(&html);
	fixture_release(&fx);
}

static void test_hostile_svg(void **state)
{
	(void)state;
	struct fixture fx;
	hostile_fixture(&fx);
	struct strbuf svg = STRBUF_INIT;
	assert_int_equal(report_svg(&fx.rep, &svg), 0);
	assert_no_markup("svg", svg.buf);
	assert_true(valid_utf8(svg.buf));
	assert_non_null(strstr(svg.buf, "<title>&lt;script&gt;alert(1)&lt;/script&gt;"));
	/* No raw control characters but newlines (XML forbids most of them). */
	for (const char *p = svg.buf; *p; p++)
		assert_true((unsigned char)*p >= 0x20 || *p == '\n');
	/* Tags balance: every <g> closed. */
	size_t open = 0, close = 0;
	for (const char *p = svg.buf; (p = strstr(p, "<g")); p++)
		open += p[2] == '>' || p[2] == ' ';
	for (const char *p = svg.buf; (p = strstr(p, "</g>")); p++)
		close++;
	assert_int_equal(open, close);
	assert_true(open >= N(hostile) + 3);
	strbuf_release(&svg);
	fixture_release(&fx);
}

static void test_hostile_json(void **state)
{
	(void)state;
	struct fixture fx;
	hostile_fixture(&fx);
	struct strbuf js = STRBUF_INIT;
	assert_int_equal(report_json(&fx.rep, &js), 0);
	json_error_t err;
	json_t *j = json_loads(js.buf, 0, &err);
	if (!j)
		fail_msg("JSON does not parse: %s at line %d", err.text, err.line);
	assert_string_equal(json_string_value(json_object_get(j, "verdict")), "regression");
	json_t *funcs = json_object_get(j, "functions");
	/* Valid names come back exactly; the invalid UTF-8 one with U+FFFD. */
	for (size_t k = 0; k < N(hostile); k++) {
		int found = 0;
		const char *want = hostile[k];
		char *fixed = esc(want, REPORT_ESC_UTF8, 0);
		for (size_t i = 0; i < json_array_size(funcs); i++) {
			json_t *f = json_array_get(funcs, i);
			const char *name = json_string_value(json_object_get(f, "name"));
			if (strcmp(name, fixed))
				continue;
			found = 1;
			/* the test it was flagged within, by its name too */
			const char *within = json_string_value(json_object_get(f, "within_test"));
			assert_non_null(within);
			assert_string_equal(within, fixed);
		}
		if (!found)
			fail_msg("function %zu not found by its name in the JSON", k);
		free(fixed);
	}
	json_decref(j);
	strbuf_release(&js);
	fixture_release(&fx);
}

static void test_advisory(void **state)
{
	(void)state;
	/* A regression on too little history is shown as advisory, in Markdown and JSON. */
	struct fixture fx;
	fixture_init(&fx, head_c, N(head_c), "feature/x");
	fx.rep.advisory = "the base branch has 2 runs <b>";
	struct strbuf md = STRBUF_INIT, js = STRBUF_INIT;
	assert_int_equal(report_markdown(&fx.rep, &md, COMMENT_GITHUB_LIMIT), 0);
	assert_non_null(strstr(md.buf, "> **Advisory:** this verdict does not fail the build: "
	                               "the base branch has 2 runs &#60;b&#62;."));
	assert_int_equal(report_json(&fx.rep, &js), 0);
	json_error_t err;
	json_t *j = json_loads(js.buf, 0, &err);
	assert_non_null(j);
	assert_true(json_is_true(json_object_get(j, "advisory")));
	assert_string_equal(json_string_value(json_object_get(j, "advisory_reason")),
	                    "the base branch has 2 runs <b>");
	json_decref(j);
	strbuf_release(&md);
	strbuf_release(&js);
	fixture_release(&fx);
}

static void test_markdown_marks_what_gates(void **state)
{
	(void)state;
	/* Under 20 history runs, one regression gates and another does not (report_cmp.gates):
	 * the Markdown says of the second that it would not fail the build alone; when none
	 * gates, the advisory line speaks for all and no line says it again. */
	struct fixture fx;
	fixture_init(&fx, head_c, N(head_c), "feature/x");
	struct report_item *gating = NULL, *other = NULL;
	for (size_t i = 0; i < fx.diff->nitems; i++) {
		struct report_item *it = &fx.diff->items[i];
		if (it->cmp.kind != REPORT_REGRESSION)
			continue;
		if (it->measure == REPORT_SELF && !strcmp(it->name, "compute_hash"))
			gating = it;
		else if (it->measure == REPORT_TEST && !strcmp(it->name, "test_hash"))
			other = it;
	}
	assert_non_null(gating);
	assert_non_null(other);
	for (size_t i = 0; i < fx.diff->nitems; i++)
		fx.diff->items[i].cmp.gates = &fx.diff->items[i] == gating;
	fx.diff->ngating = 1;
	fx.rep.advisory = NULL;
	struct strbuf md = STRBUF_INIT;
	assert_int_equal(report_markdown(&fx.rep, &md, COMMENT_GITHUB_LIMIT), 0);
	const char *mark = "(not enough alone to fail the build: with 2 history runs";
	const char *at_test = strstr(md.buf, "test <code>test&#95;hash</code>:"),
	           *at_fn = strstr(md.buf, "<code>compute&#95;hash</code> <sub>");
	assert_non_null(at_test);
	assert_non_null(at_fn);
	const char *test_eol = strchr(at_test, '\n'), *fn_eol = strchr(at_fn, '\n');
	const char *m = strstr(at_test, mark);
	assert_true(m && m < test_eol);
	m = strstr(at_fn, mark);
	assert_true(!m || m > fn_eol);
	strbuf_release(&md);
	/* None gates: the advisory line says why, no finding repeats it. */
	fx.diff->ngating = 0;
	gating->cmp.gates = 0;
	fx.rep.advisory = "the base branch has 2 runs";
	assert_int_equal(report_markdown(&fx.rep, &md, COMMENT_GITHUB_LIMIT), 0);
	assert_null(strstr(md.buf, "not enough alone"));
	strbuf_release(&md);
	fixture_release(&fx);
}

static void test_json_shape(void **state)
{
	(void)state;
	struct fixture fx;
	fixture_init(&fx, head_c, N(head_c), "feature/x");
	struct strbuf js = STRBUF_INIT;
	assert_int_equal(report_json(&fx.rep, &js), 0);
	json_error_t err;
	json_t *j = json_loads(js.buf, 0, &err);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "verdict")), "regression");
	assert_int_equal(json_integer_value(json_object_get(j, "schema")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "head")), 12);
	assert_int_equal(json_integer_value(json_object_get(j, "run")), 12);
	/* No floating-point noise: at most 10 significant digits in any number. */
	for (const char *p = js.buf; *p; p++) {
		if (*p == '"') { /* skip strings */
			for (p++; *p && *p != '"'; p++)
				p += *p == '\\';
			continue;
		}
		size_t digits = 0;
		int lead = 1;
		while ((*p >= '0' && *p <= '9') || *p == '.') {
			lead = lead && (*p == '0' || *p == '.');
			digits += !lead && *p != '.';
			p++;
		}
		if (digits > 10)
			fail_msg("a number with %zu significant digits near: %.40s", digits,
			         p - 20);
		if (!*p)
			break;
	}
	json_t *base = json_object_get(j, "base");
	assert_int_equal(json_array_size(base), 2);
	assert_int_equal(json_integer_value(json_array_get(base, 0)), 9);
	assert_true(json_is_array(json_object_get(j, "tests")));
	json_t *funcs = json_object_get(j, "functions");
	assert_true(json_array_size(funcs) > 3);
	/* The first function is the top regression: compute_hash, self. */
	json_t *top = json_array_get(funcs, 0);
	assert_string_equal(json_string_value(json_object_get(top, "name")), "compute_hash");
	assert_string_equal(json_string_value(json_object_get(top, "kind")), "regression");
	assert_true(json_is_true(json_object_get(top, "significant")));
	static const char *const keys[] = {"name",        "base_share", "head_share",
	                                   "delta",       "change",     "p_value",
	                                   "significant", "kind",       NULL};
	for (size_t i = 0; i < json_array_size(funcs); i++) {
		json_t *f = json_array_get(funcs, i);
		for (const char *const *k = keys; *k; k++)
			if (!json_object_get(f, *k))
				fail_msg("function %zu lacks \"%s\"", i, *k);
		const char *kind = json_string_value(json_object_get(f, "kind"));
		assert_true(!strcmp(kind, "regression") || !strcmp(kind, "improvement") ||
		            !strcmp(kind, "unchanged"));
	}
	/* parse_line got faster on its own; read_token (its callee) did not change. */
	int parse_faster = 0;
	for (size_t i = 0; i < json_array_size(funcs); i++) {
		json_t *f = json_array_get(funcs, i);
		const char *name = json_string_value(json_object_get(f, "name"));
		const char *kind = json_string_value(json_object_get(f, "kind"));
		const char *measure = json_string_value(json_object_get(f, "measure"));
		if (!strcmp(name, "parse_line") && !strcmp(measure, "self"))
			parse_faster = !strcmp(kind, "improvement");
		if (!strcmp(name, "read_token") || !strcmp(name, "sort_items") ||
		    !strcmp(name, "main"))
			assert_string_equal(kind, "unchanged");
	}
	assert_true(parse_faster);
	json_t *scale = json_object_get(j, "scale");
	assert_true(json_real_value(json_object_get(scale, "factor")) > 0.97);
	assert_true(json_real_value(json_object_get(scale, "factor")) < 1.03);
	json_decref(j);
	strbuf_release(&js);
	fixture_release(&fx);
}

static void test_html_basic(void **state)
{
	(void)state;
	/* Every tag the Markdown writer emits survives cmark and the allow-list: no tag of ours
	 * comes out as text (nothing in this report needs escaping at all). */
	struct fixture fx;
	fixture_init(&fx, head_c, N(head_c), "feature/x");
	struct strbuf html = STRBUF_INIT;
	assert_int_equal(report_html(&fx.rep, &html), 0);
	assert_null(strstr(html.buf, "&lt;"));
	assert_non_null(strstr(html.buf, "<details><summary>"));
	assert_non_null(strstr(html.buf, "<td align=\"right\">"));
	assert_non_null(strstr(html.buf, "<br />"));
	assert_non_null(strstr(html.buf, "<code>compute_hash</code>"));
	assert_non_null(strstr(html.buf, "<pre><code class=\"language-text\">"));
	assert_true(!strncmp(html.buf, "<!DOCTYPE html>", 15));
	strbuf_release(&html);
	fixture_release(&fx);
}

/* The fill of the frame whose tooltip starts with title. */
static unsigned frame_fill(const char *svg, const char *title)
{
	const char *t = strstr(svg, title);
	if (!t)
		fail_msg("no frame titled %s", title);
	const char *fill = strstr(t, "fill=\"#");
	unsigned rgb;
	assert_int_equal(sscanf(fill, "fill=\"#%6x\"", &rgb), 1);
	return rgb;
}

static void test_svg_layout(void **state)
{
	(void)state;
	struct fixture fx;
	fixture_init(&fx, head_c, N(head_c), "feature/x");
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
	report_svg(&fx.rep, &a);
	report_svg(&fx.rep, &b);
	assert_string_equal(a.buf, b.buf); /* deterministic */
	assert_true(!strncmp(a.buf, "<?xml version=\"1.0\"", 19));
	/* The root spans the width; compute_hash was flagged slower: red; parse_line faster:
	 * blue. */
	assert_non_null(strstr(a.buf, "width=\"1180.0\""));
	unsigned ch = frame_fill(a.buf, "<title>compute_hash [demo]");
	assert_true((ch >> 16) > ((ch >> 8) & 0xff) && (ch >> 16) > (ch & 0xff));
	unsigned pl = frame_fill(a.buf, "<title>parse_line [demo]");
	assert_true((pl & 0xff) > (pl >> 16));
	/* Everything not flagged is the same grey, even test_hash, whose time grew with
	 * compute_hash, and mix64 and read_token, which moved by a sample or two. */
	unsigned grey = frame_fill(a.buf, "<title>all\n");
	assert_int_equal(grey >> 16, grey & 0xff);
	assert_int_equal(frame_fill(a.buf, "<title>test_hash [demo]"), grey);
	assert_int_equal(frame_fill(a.buf, "<title>mix64 [demo]"), grey);
	assert_int_equal(frame_fill(a.buf, "<title>read_token [demo]"), grey);
	assert_int_equal(frame_fill(a.buf, "<title>main [demo]"), grey);
	/* Flagged frames are outlined and labelled with their change; the tooltip has base,
	 * head and change. */
	const char *t = strstr(a.buf, "<title>compute_hash [demo]");
	assert_non_null(strstr(t, "stroke="));
	assert_non_null(strstr(t, "\nbase: "));
	assert_non_null(strstr(t, "\nchange: +"));
	assert_non_null(strstr(a.buf, ">compute_hash +23.1 %</text>"));
	assert_non_null(strstr(a.buf, ">parse_line -14.2 %</text>"));
	/* No label is cut to fewer than 6 characters ("te…"). */
	for (const char *p = a.buf; (p = strstr(p, "<text ")); p++) {
		const char *gt = strchr(p, '>'), *end = strstr(p, "</text>");
		const char *ell = strstr(gt, "\xe2\x80\xa6");
		if (ell && ell < end)
			assert_true(ell - gt - 1 >= 5);
	}
	/* Focused: only the flagged subtrees and their callers, widened to the full width. */
	struct strbuf f = STRBUF_INIT;
	fx.rep.focus = 1;
	report_svg(&fx.rep, &f);
	fx.rep.focus = 0;
	assert_non_null(strstr(f.buf, "findings only"));
	assert_non_null(strstr(f.buf, "<title>compute_hash [demo]"));
	assert_non_null(strstr(f.buf, "<title>mix64 [demo]")); /* under a flagged frame */
	assert_non_null(strstr(f.buf, "<title>parse_line [demo]"));
	assert_non_null(strstr(f.buf, "<title>test_parse [demo]")); /* a caller */
	assert_null(strstr(f.buf, "<title>sort_items"));
	assert_null(strstr(f.buf, "<title>test_sort"));
	assert_null(strstr(f.buf, "<title>setup"));
	assert_non_null(strstr(f.buf, "width=\"1180.0\""));
	/* compute_hash (4905 head samples) and parse_line (3010) share the width. */
	const char *w = strstr(strstr(f.buf, "<title>compute_hash [demo]"), "width=\"");
	double cw;
	assert_int_equal(sscanf(w, "width=\"%lf\"", &cw), 1);
	assert_true(fabs(cw - 1180.0 * 4905 / (4905 + 3010)) < 0.2);
	strbuf_release(&f);
	strbuf_release(&a);
	strbuf_release(&b);
	fixture_release(&fx);
}

/* Each flagged label's x lies inside a flagged frame of its row (label y = frame y + 12):
 * a label never starts off its own frame. Returns the number of labels. */
static int labels_on_own_frames(const char *svg)
{
	const char *labels = strstr(svg, "<g class=\"labels\"");
	assert_non_null(labels);
	const char *end = strstr(labels, "</g>");
	int n = 0;
	for (const char *p = labels; (p = strstr(p, "<text x=\"")) && p < end; p++, n++) {
		double x, y;
		assert_int_equal(sscanf(p, "<text x=\"%lf\" y=\"%lf\"", &x, &y), 2);
		int inside = 0;
		for (const char *g = svg; (g = strstr(g, "<g class=\"flagged\">")) && g < labels;
		     g++) {
			double rx, ry, rw;
			const char *r = strstr(g, "<rect x=\"");
			assert_int_equal(
			        sscanf(r, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\"", &rx, &ry, &rw),
			        3);
			if (fabs(ry + 12 - y) < 0.05 && x >= rx && x <= rx + rw)
				inside = 1;
		}
		if (!inside)
			fail_msg("label at x=%.1f y=%.1f is off its own frame: %.60s", x, y, p);
	}
	return n;
}

/* One flagged function called from 40 tests, each call site a narrow frame beside the next
 * (a wide suite): the labels of flagged frames never run into one another, nor out of the
 * picture, and each keeps its change when it keeps anything. */
static void test_svg_labels_apart(void **state)
{
	(void)state;
	enum { SITES = 40 };
	struct stack_count ba[2 * SITES], bb[2 * SITES], h[2 * SITES];
	char names[SITES][2][48];
	for (int i = 0; i < SITES; i++) {
		snprintf(names[i][0], sizeof(names[i][0]), "demo;main;test_%02d;work_%02d", i, i);
		snprintf(names[i][1], sizeof(names[i][1]), "demo;main;test_%02d;crc32_update", i);
		const char *test = names[i][0] + 10;
		ba[2 * i] = (struct stack_count){test, names[i][0], 2000 + (uint64_t)(i % 3)};
		bb[2 * i] = (struct stack_count){test, names[i][0], 2001 - (uint64_t)(i % 2)};
		h[2 * i] = (struct stack_count){test, names[i][0], 2000};
		ba[2 * i + 1] = (struct stack_count){test, names[i][1], 60};
		bb[2 * i + 1] = (struct stack_count){test, names[i][1], 61};
		h[2 * i + 1] = (struct stack_count){test, names[i][1], 120};
	}
	struct fixture fx;
	fixture_init_bases(&fx, ba, N(ba), bb, N(bb), h, N(h), "feature/x");
	for (int focus = 0; focus < 2; focus++) {
		struct strbuf svg = STRBUF_INIT;
		fx.rep.focus = focus;
		assert_int_equal(report_svg(&fx.rep, &svg), 0);
		const char *p = strstr(svg.buf, "<g class=\"labels\"");
		assert_non_null(p);
		const char *end = strstr(p, "</g>");
		double last_end = 0, last_y = -1;
		int labels = 0;
		while ((p = strstr(p, "<text x=\"")) && p < end) {
			double x, y;
			assert_int_equal(sscanf(p, "<text x=\"%lf\" y=\"%lf\"", &x, &y), 2);
			const char *txt = strchr(p, '>') + 1, *close = strstr(txt, "</text>");
			size_t chars = 0;
			for (const char *c = txt; c < close; c++)
				chars += ((unsigned char)*c & 0xc0) != 0x80;
			double right = x + (double)chars * 7.2;
			if (y == last_y)
				assert_true(x >= last_end);
			assert_true(x >= 0 && right <= 1200.0);
			assert_memory_equal(close - 2, " %", 2); /* the change: "... +98.3 %" */
			last_end = right;
			last_y = y;
			labels++;
			p = close;
		}
		assert_true(labels >= (focus ? SITES / 4 : 4));
		assert_int_equal(labels_on_own_frames(svg.buf), labels);
		strbuf_release(&svg);
	}
	fx.rep.focus = 0;
	fixture_release(&fx);
}

/* A narrow flagged frame near the right edge, after grey frames with labels of their own:
 * its label stays on its frame, cut with an ellipsis, instead of moving left over the
 * grey labels (the tooltip keeps the full name). */
static void test_svg_label_own_frame(void **state)
{
	(void)state;
	static const char *long_name = "demo;main;test_w;widgets::detail::zz_checksum_block(long)";
	const struct stack_count ba[] = {
	        {"test_w", "demo;main;test_w;widgets::detail::aa_compress_block(long)", 5000},
	        {"test_w", "demo;main;test_w;widgets::detail::popcount(unsigned long)", 900},
	        {"test_w", long_name, 400},
	};
	const struct stack_count bb[] = {
	        {"test_w", "demo;main;test_w;widgets::detail::aa_compress_block(long)", 5001},
	        {"test_w", "demo;main;test_w;widgets::detail::popcount(unsigned long)", 899},
	        {"test_w", long_name, 401},
	};
	const struct stack_count h[] = {
	        {"test_w", "demo;main;test_w;widgets::detail::aa_compress_block(long)", 5000},
	        {"test_w", "demo;main;test_w;widgets::detail::popcount(unsigned long)", 900},
	        {"test_w", long_name, 600},
	};
	struct fixture fx;
	fixture_init_bases(&fx, ba, N(ba), bb, N(bb), h, N(h), "feature/x");
	struct strbuf svg = STRBUF_INIT;
	assert_int_equal(report_svg(&fx.rep, &svg), 0);
	assert_int_equal(labels_on_own_frames(svg.buf), 1);
	/* cut, with its change; the tooltip has the full name */
	assert_non_null(strstr(svg.buf, "<title>widgets::detail::zz_checksum_block(long) [demo]"));
	const char *label = strstr(strstr(svg.buf, "<g class=\"labels\""), "<text ");
	assert_non_null(strstr(label, "\xe2\x80\xa6 +"));
	strbuf_release(&svg);
	fixture_release(&fx);
}

static void test_markdown_limit(void **state)
{
	(void)state;
	/* 3000 functions with 300-character names in 3000 tests, every fifth doubled or
	 * halved: far over 65,536 characters in full. */
	size_t n = 3000;
	struct stack_count *b = calloc(n, sizeof(*b)), *h = calloc(n, sizeof(*h));
	char **stacks = calloc(n, sizeof(*stacks));
	for (size_t i = 0; i < n; i++) {
		stacks[i] = malloc(400);
		int len = sprintf(stacks[i], "demo;main;fn_%04zu_", i);
		memset(stacks[i] + len, '_', 300);
		stacks[i][len + 300] = '\0';
		b[i] = (struct stack_count){stacks[i] + 10, stacks[i], 1000};
		h[i] = (struct stack_count){stacks[i] + 10, stacks[i],
		                            i % 5    ? 1000
		                            : i % 10 ? 2000
		                                     : 500};
	}
	struct fixture fx;
	fx.runs[0] = build(b, n, 999);
	fx.runs[1] = build(b, n, 999);
	fx.merged = profile_new();
	for (int i = 0; i < 2; i++) {
		profile_merge(fx.merged, fx.runs[i]);
		fx.merged->stats.samples += fx.runs[i]->stats.samples;
		fx.merged->stats.cpu_seconds += fx.runs[i]->stats.cpu_seconds;
	}
	fx.merged->stats.period_ns = fx.runs[0]->stats.period_ns;
	fx.head = build(h, n, 999);
	run_meta_init(&fx.meta);
	report_baseline_init(&fx.base);
	struct report_options o;
	report_options_init(&o);
	o.min_share = 0; /* judge every function */
	report_diff_new(&fx.diff, fx.merged, 2, fx.runs, 2, fx.head, &o);
	fx.rep = (struct report){.head = &fx.meta, .base = &fx.base, .diff = fx.diff};
	struct strbuf md = STRBUF_INIT;
	assert_int_equal(report_markdown(&fx.rep, &md, COMMENT_GITHUB_LIMIT), 0);
	print_message("3000 flagged functions: %zu characters of Markdown\n", md.len);
	assert_true(md.len <= COMMENT_GITHUB_LIMIT);
	assert_non_null(strstr(md.buf, "more (the JSON report lists all)"));
	/* Code fences stay balanced. */
	size_t fences = 0;
	for (const char *p = md.buf; (p = strstr(p, "\n```")); p++)
		fences++;
	assert_int_equal(fences % 2, 0);
	/* A tiny limit still holds. */
	strbuf_reset(&md);
	assert_int_equal(report_markdown(&fx.rep, &md, 4000), 0);
	assert_true(md.len <= 4000);
	assert_true(!strncmp(md.buf, COMMENT_MARKER, strlen(COMMENT_MARKER)));
	assert_non_null(strstr(md.buf, "Shortened to fit a comment"));
	/* Shrinking keeps the findings: the first one is still there. */
	assert_non_null(strstr(md.buf, "### ▲ Slower\n\n1. "));
	strbuf_release(&md);
	for (size_t i = 0; i < n; i++)
		free(stacks[i]);
	free(stacks);
	free(b);
	free(h);
	fixture_release(&fx);
}

/* --- the layout on a real-sized suite: findings first --- */

/* 32 tests of 4 functions each (128 functions, plus the harness); base: two runs; head: one
 * function of one test does 40 % more work, everything else is the same. */
static void test_markdown_findings_first(void **state)
{
	(void)state;
	enum { TESTS = 32, FUNCS = 4 };
	struct stack_count b[TESTS * FUNCS], h[TESTS * FUNCS];
	static char names[TESTS][16], stacks[TESTS * FUNCS][64];
	for (size_t t = 0; t < TESTS; t++) {
		snprintf(names[t], sizeof(names[t]), "test_case_%02u", (unsigned)t);
		for (size_t f = 0; f < FUNCS; f++) {
			size_t i = t * FUNCS + f;
			snprintf(stacks[i], sizeof(stacks[i]), "suite;main;%.15s;work_%02u_%u",
			         names[t], (unsigned)t, (unsigned)f);
			uint64_t n = 600 + 40 * f;
			b[i] = (struct stack_count){names[t], stacks[i], n};
			h[i] = b[i];
			if (t == 17 && f == 2)
				h[i].count = n * 14 / 10;
		}
	}
	struct fixture fx;
	fx.runs[0] = build(b, N(b), 999);
	fx.runs[1] = build(b, N(b), 999);
	fx.merged = profile_new();
	for (int i = 0; i < 2; i++) {
		profile_merge(fx.merged, fx.runs[i]);
		fx.merged->stats.samples += fx.runs[i]->stats.samples;
		fx.merged->stats.cpu_seconds += fx.runs[i]->stats.cpu_seconds;
	}
	fx.merged->stats.hz = 999;
	fx.merged->stats.period_ns = fx.runs[0]->stats.period_ns;
	fx.head = build(h, N(h), 999);
	run_meta_init(&fx.meta);
	fx.meta.id = 40;
	fx.meta.pr_number = 5;
	run_meta_set(&fx.meta.commit, "1111111111aaaaaaaaaa1111111111aaaaaaaaaa");
	run_meta_set(&fx.meta.job_url, "https://github.com/o/r/actions/runs/99");
	report_baseline_init(&fx.base);
	struct report_options o;
	report_options_init(&o);
	report_diff_new(&fx.diff, fx.merged, 2, fx.runs, 2, fx.head, &o);
	fx.rep =
	        (struct report){.head = &fx.meta,
	                        .base = &fx.base,
	                        .diff = fx.diff,
	                        .pr_head = "2222222222bbbbbbbbbb2222222222bbbbbbbbbb",
	                        .artifact_url = "https://github.com/o/r/actions/runs/99#artifacts"};
	assert_int_equal(fx.diff->verdict, REPORT_REGRESSED);
	struct strbuf md = STRBUF_INIT;
	assert_int_equal(report_markdown(&fx.rep, &md, COMMENT_GITHUB_LIMIT), 0);
	/* The planted function is named within the first 25 lines, before any table. */
	const char *hit = strstr(md.buf, "work&#95;17&#95;2");
	assert_non_null(hit);
	size_t line = 1;
	for (const char *p = md.buf; p < hit; p++)
		line += *p == '\n';
	print_message("the finding is on line %zu of %zu characters\n", line, md.len);
	assert_true(line <= 25);
	const char *table = strstr(md.buf, "| test |");
	assert_non_null(table);
	assert_true(hit < table);
	/* The verdict counts it, the unchanged are summarised, not listed ahead of it. */
	assert_non_null(strstr(md.buf, "— ▲ "));
	assert_non_null(strstr(md.buf, "<details><summary>✓ "));
	/* The PR's own head, the merge it was measured on, the job and the artifact. */
	assert_non_null(strstr(md.buf, "<code>2222222222</code> (the PR's head; measured on its "
	                               "merge <code>1111111111</code>)"));
	assert_non_null(strstr(md.buf, "[CI job](https://github.com/o/r/actions/runs/99)"));
	assert_non_null(strstr(md.buf, "(https://github.com/o/r/actions/runs/99#artifacts)"));
	/* One line says how change is measured; the headline and the flame graph's root agree. */
	assert_non_null(strstr(md.buf, "How change is measured"));
	const char *went = strstr(md.buf, "the whole suite went ");
	assert_non_null(went);
	const char *pct = strstr(went, " s (");
	assert_non_null(pct);
	double total;
	assert_int_equal(sscanf(pct + 4, "%lf", &total), 1);
	const char *root = strstr(md.buf, "%  all\n");
	assert_non_null(root);
	while (root > md.buf && root[-1] != ' ')
		root--;
	double rootch;
	assert_int_equal(sscanf(root, "%lf", &rootch), 1);
	assert_true(fabs(total - rootch) < 0.051);
	strbuf_release(&md);
	fixture_release(&fx);
}

/* The trend charts: well-formed xychart-beta blocks whatever the names. */
static void test_markdown_trend(void **state)
{
	(void)state;
	struct fixture fx;
	hostile_fixture(&fx);
	struct report_trend tr;
	memset(&tr, 0, sizeof(tr));
	const struct report_item *items[3];
	size_t ni = 0;
	for (size_t i = 0; i < fx.diff->nitems && ni < 3; i++)
		if (fx.diff->items[i].measure != REPORT_TEST && fx.diff->items[i].cmp.significant)
			items[ni++] = &fx.diff->items[i];
	assert_int_equal(ni, 3);
	tr.items = items;
	tr.nitems = ni;
	tr.hist.nq = 1 + ni;
	tr.hist.n = 5;
	struct report_point pts[5];
	double vals[5][4];
	for (size_t i = 0; i < 5; i++) {
		pts[i].run = i < 4 ? (int64_t)i + 1 : fx.meta.id;
		pts[i].commit = i == 2 ? "\"]\n```" : "abcdef0123456789";
		pts[i].subject = "";
		pts[i].value = vals[i];
		for (size_t k = 0; k < 4; k++)
			vals[i][k] = k == 2 && i == 1 ? NAN : 1.5 + 0.25 * (double)(i + k);
	}
	tr.hist.points = pts;
	fx.rep.trend = &tr;
	struct strbuf md = STRBUF_INIT;
	assert_int_equal(report_markdown(&fx.rep, &md, COMMENT_GITHUB_LIMIT), 0);
	size_t charts = 0;
	for (const char *p = md.buf; (p = strstr(p, "```mermaid\n")); p++) {
		charts++;
		const char *end = strstr(p + 11, "\n```\n");
		assert_non_null(end);
		char *block = strndup(p + 11, (size_t)(end - p - 11) + 1);
		static const char head[] = "xychart-beta\n    title \"";
		assert_true(!strncmp(block, head, strlen(head)));
		assert_null(strchr(block, '<'));
		assert_null(strchr(block, '`'));
		/* quotes pair up on every line; categories and values match in number */
		size_t cats = 0, vals_n = 0;
		for (char *l = block; *l;) {
			char *nl = strchr(l, '\n');
			*nl = '\0';
			size_t q = 0;
			for (char *c = l; *c; c++)
				q += *c == '"';
			assert_int_equal(q % 2, 0);
			if (strstr(l, "x-axis ["))
				cats = q / 2;
			if (strstr(l, "    line [")) {
				vals_n = 1;
				for (char *c = l; *c; c++)
					vals_n += *c == ',';
				assert_null(strstr(l, "nan"));
			}
			l = nl + 1;
		}
		assert_int_equal(cats, vals_n);
		assert_true(cats == 5 || cats == 4); /* the NaN point is left out */
		free(block);
	}
	assert_int_equal(charts, 4); /* the suite and three functions */
	strbuf_release(&md);
	fx.rep.trend = NULL;
	fixture_release(&fx);
}

static void test_marker_id(void **state)
{
	(void)state;
	char *m = report_marker(NULL);
	assert_string_equal(m, COMMENT_MARKER);
	free(m);
	m = report_marker("linux-gcc");
	assert_string_equal(m, "<!-- ciprof-report id=linux-gcc -->");
	free(m);
	assert_true(report_id_valid("ubuntu-22.04/gcc_12+asan:1@x"));
	assert_false(report_id_valid(""));
	assert_false(report_id_valid("a--b"));
	assert_false(report_id_valid("a b"));
	assert_false(report_id_valid("a>"));
	assert_false(report_id_valid("x\n"));
	char longid[66];
	memset(longid, 'a', 65);
	longid[65] = '\0';
	assert_false(report_id_valid(longid));
}

static void test_sha256(void **state)
{
	(void)state;
	static const struct {
		const char *in, *b64;
	} v[] = {
	        {"", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="},
	        {"abc", "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="},
	        /* two blocks of padding */
	        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	         "JI1qYdIGOLjlwCaTDD5gOaM85Flk/yFn9uzt1BnbBsE="},
	};
	for (size_t i = 0; i < N(v); i++) {
		unsigned char d[32];
		report_sha256(v[i].in, strlen(v[i].in), d);
		struct strbuf b = STRBUF_INIT;
		report_base64(&b, d, 32);
		assert_string_equal(b.buf, v[i].b64);
		strbuf_release(&b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_markdown_golden),
	        cmocka_unit_test(test_markdown_no_baseline),
	        cmocka_unit_test(test_pseudo_frames_not_judged),
	        cmocka_unit_test(test_numbers_agree),
	        cmocka_unit_test(test_escape),
	        cmocka_unit_test(test_hostile_markdown),
	        cmocka_unit_test(test_hostile_html),
	        cmocka_unit_test(test_hostile_svg),
	        cmocka_unit_test(test_hostile_json),
	        cmocka_unit_test(test_json_shape),
	        cmocka_unit_test(test_advisory),
	        cmocka_unit_test(test_markdown_marks_what_gates),
	        cmocka_unit_test(test_svg_layout),
	        cmocka_unit_test(test_svg_labels_apart),
	        cmocka_unit_test(test_svg_label_own_frame),
	        cmocka_unit_test(test_markdown_limit),
	        cmocka_unit_test(test_html_basic),
	        cmocka_unit_test(test_markdown_findings_first),
	        cmocka_unit_test(test_markdown_trend),
	        cmocka_unit_test(test_marker_id),
	        cmocka_unit_test(test_sha256),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
