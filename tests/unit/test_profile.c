/* The profile model: interning, the stack trie, per-function self/total (recursion counted
 * once), folded output (sorted, names with ';' made safe) and the folded parser's errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "model/profile.h"
#include "model/rename.h"
#include "common/strbuf.h"

static uint32_t fn(struct profile *p, const char *name, int process)
{
	struct profile_frame f = {.function = profile_intern(p, name),
	                          .kind = process ? PROFILE_FRAME_PROCESS : 0};
	return profile_frame(p, &f);
}

/* Adds stack "a;b;c" (first = process) with count under test. */
static uint32_t add_stack(struct profile *p, const char *test, const char *stack, uint64_t count)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", stack);
	uint32_t node = 0;
	int first = 1;
	for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
		node = profile_node(p, node, fn(p, tok, first));
		first = 0;
	}
	profile_add(p, profile_intern(p, test), node, count);
	return node;
}

static char *folded(const struct profile *p, const char *test)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(profile_write_folded(p, f, test), 0);
	fclose(f);
	return buf;
}

static void test_intern_and_trie(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	assert_int_equal(profile_intern(p, ""), 0);
	uint32_t a = profile_intern(p, "alpha");
	assert_int_equal(profile_intern(p, "alpha"), a);
	assert_int_not_equal(profile_intern(p, "alph"), a);
	assert_string_equal(profile_str(p, a), "alpha");
	uint32_t n1 = add_stack(p, "", "prog;main;work", 3);
	uint32_t n2 = add_stack(p, "", "prog;main;work", 4);
	assert_int_equal(n1, n2); /* the same stack is one node */
	add_stack(p, "", "prog;main;other", 1);
	assert_int_equal(p->nnodes, 5); /* root, prog, main, work, other */
	assert_int_equal(profile_node_depth(p, n1), 3);
	uint32_t frames[8];
	assert_int_equal(profile_node_frames(p, n1, frames, 8), 3);
	assert_string_equal(profile_str(p, p->frames[frames[0]].function), "prog");
	assert_string_equal(profile_str(p, p->frames[frames[2]].function), "work");
	assert_int_equal(profile_total(p, NULL), 8);
	profile_free(p);
}

static void test_functions_self_total(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	add_stack(p, "t1", "prog;main;rec;rec;leaf", 10); /* recursion: rec counted once */
	add_stack(p, "t1", "prog;main;rec", 5);
	add_stack(p, "t2", "prog;main", 5);
	struct profile_func *f;
	size_t n = profile_functions(p, NULL, &f);
	assert_int_equal(n, 3); /* the process frame is not a function */
	assert_string_equal(profile_str(p, f[0].function), "leaf");
	assert_int_equal(f[0].self, 10);
	assert_int_equal(f[0].total, 10);
	/* equal self: the larger total first */
	assert_string_equal(profile_str(p, f[1].function), "main");
	assert_int_equal(f[1].self, 5);
	assert_int_equal(f[1].total, 20);
	assert_string_equal(profile_str(p, f[2].function), "rec");
	assert_int_equal(f[2].self, 5);
	assert_int_equal(f[2].total, 15);
	free(f);
	n = profile_functions(p, "t2", &f);
	assert_int_equal(n, 1);
	assert_int_equal(f[0].total, 5);
	free(f);
	profile_free(p);
}

static void test_folded_output(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	add_stack(p, "b", "prog;zeta", 2);
	add_stack(p, "a", "prog;zeta", 3); /* same stack, other test: summed */
	add_stack(p, "a", "prog;alpha", 1);
	add_stack(p, "a", "prog", 4);
	/* a name holding ';' and a newline must not break the format */
	uint32_t root = profile_node(p, 0, fn(p, "prog", 1));
	uint32_t bad = profile_node(p, root, fn(p, "operator;\nx", 0));
	profile_add(p, 0, bad, 7);
	char *out = folded(p, NULL);
	assert_string_equal(out, "prog 4\nprog;alpha 1\nprog;operator__x 7\nprog;zeta 5\n");
	free(out);
	out = folded(p, "b");
	assert_string_equal(out, "prog;zeta 2\n");
	free(out);

	/* round trip */
	struct profile *q = profile_new();
	const char *text = "prog 4\nprog;alpha 1\nprog;zeta 5\n";
	assert_int_equal(profile_parse_folded(q, text, strlen(text), "x.folded"), 0);
	out = folded(q, NULL);
	assert_string_equal(out, text);
	free(out);
	profile_free(q);
	/* a process the runner could not name is written as an empty root frame, and read back */
	q = profile_new();
	text = ";[unsampled] 14\nprog;f 1\n";
	if (profile_parse_folded(q, text, strlen(text), "x.folded") < 0)
		fail_msg("%s", cp_last_error());
	out = folded(q, NULL);
	assert_string_equal(out, text);
	free(out);
	profile_free(q);
	profile_free(p);
}

static void expect_parse_error(const char *text, const char *want)
{
	struct profile *p = profile_new();
	assert_int_equal(profile_parse_folded(p, text, strlen(text), "in.folded"), -1);
	if (!strstr(cp_last_error(), want))
		fail_msg("error '%s' does not contain '%s'", cp_last_error(), want);
	profile_free(p);
}

static void test_folded_errors(void **state)
{
	(void)state;
	expect_parse_error("a;b 1\nnocount\n", "in.folded:2:");
	expect_parse_error("a;b 1x\n", "in.folded:1:6: sample count is not a whole number");
	expect_parse_error("a;;b 1\n", "in.folded:1:3: empty frame name");
	expect_parse_error(";a; 1\n", "in.folded:1:4: empty frame name");
	expect_parse_error("a;b \n", "missing sample count");
	expect_parse_error(" 5\n", "in.folded:1:1: empty stack");
	expect_parse_error("a 99999999999999999999999\n", "too large");
	/* sums past 2^64 - 1 are refused where they happen, not wrapped */
	expect_parse_error("a;b 9223372036854775807\na;b 9223372036854775807\na;b 3\n",
	                   "in.folded:3: this stack's sample counts add up to more than "
	                   "18446744073709551615");
	expect_parse_error("a;b 18446744073709551615\na;b 1\n", "in.folded:2: this stack's");
	expect_parse_error("a;b 18446744073709551615\na;c 1\n",
	                   "in.folded:2: the file's sample counts add up to more than");
	/* blank lines and CRLF are fine */
	struct profile *p = profile_new();
	const char *ok = "\r\na;b 2\r\n\na 1";
	assert_int_equal(profile_parse_folded(p, ok, strlen(ok), "crlf"), 0);
	assert_int_equal(profile_total(p, NULL), 3);
	profile_free(p);
	/* the largest count there is, alone, is fine */
	p = profile_new();
	ok = "a;b 18446744073709551615\n";
	assert_int_equal(profile_parse_folded(p, ok, strlen(ok), "max"), 0);
	assert_true(profile_total(p, NULL) == UINT64_MAX);
	profile_free(p);
	/* a UTF-8 byte order mark is skipped, not part of the process's name */
	p = profile_new();
	ok = "\xef\xbb\xbfprog;f 2\nprog 1\n";
	assert_int_equal(profile_parse_folded(p, ok, strlen(ok), "bom"), 0);
	char *out = folded(p, NULL);
	assert_string_equal(out, "prog 1\nprog;f 2\n");
	free(out);
	profile_free(p);
}

static void test_merge(void **state)
{
	(void)state;
	struct profile *a = profile_new(), *b = profile_new();
	add_stack(a, "t", "prog;f;g", 2);
	add_stack(b, "u", "other;h", 1);
	add_stack(b, "t", "prog;f;g", 3);
	profile_merge(a, b);
	assert_int_equal(profile_total(a, "t"), 5);
	assert_int_equal(profile_total(a, "u"), 1);
	char *out = folded(a, NULL);
	assert_string_equal(out, "other;h 1\nprog;f;g 5\n");
	free(out);
	profile_free(a);
	profile_free(b);
}

static void test_build_ids(void **state)
{
	(void)state;
	struct profile *a = profile_new(), *b = profile_new();
	uint32_t w = profile_intern(a, "w"), lib = profile_intern(a, "libx.so");
	profile_set_build_id(a, w, "aa01");
	profile_set_build_id(a, w, "aa01"); /* the same again: kept */
	profile_set_build_id(a, lib, "");   /* none: nothing recorded */
	assert_string_equal(profile_build_id(a, w), "aa01");
	assert_null(profile_build_id(a, lib));
	profile_set_build_id(a, lib, "bb0");     /* odd: not a build id */
	profile_set_build_id(a, lib, "go-id/x"); /* Go's own ids are not hex */
	assert_null(profile_build_id(a, lib));
	profile_set_build_id(a, lib, "BB02"); /* kept in lower case */
	assert_string_equal(profile_build_id(a, lib), "bb02");
	/* Merged with a profile whose w is another build: w's id is unknown for good. */
	profile_set_build_id(b, profile_intern(b, "w"), "cc03");
	profile_set_build_id(b, profile_intern(b, "libx.so"), "bb02");
	profile_merge(a, b);
	assert_null(profile_build_id(a, w));
	assert_string_equal(profile_build_id(a, lib), "bb02");
	profile_set_build_id(a, w, "aa01");
	assert_null(profile_build_id(a, w));
	/* ... and a merge carries that conflict on. */
	struct profile *c = profile_new();
	profile_set_build_id(c, profile_intern(c, "w"), "aa01");
	profile_merge(c, a);
	assert_null(profile_build_id(c, profile_intern(c, "w")));
	profile_free(a);
	profile_free(b);
	profile_free(c);
}

/* Names from outside are cleaned once, where they are interned: valid UTF-8 (each bad byte
 * U+FFFD), at most PROFILE_NAME_MAX bytes cut on a character boundary with an ellipsis;
 * clean names and profile_intern's bytes are left as they are. */
static void test_intern_name(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	uint32_t ok = profile_intern_name(p, "ns::f(int)\x1b[31m");
	assert_string_equal(profile_str(p, ok), "ns::f(int)\x1b[31m"); /* outputs escape it */
	uint32_t bad = profile_intern_name(p, "a\xff\xc3(b\xed\xa0\x80");
	assert_string_equal(profile_str(p, bad),
	                    "a\xef\xbf\xbd\xef\xbf\xbd(b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	assert_int_equal(profile_intern_name(p, "a\xfe\xc3(b\xed\xa0\x80"), bad); /* same clean */
	assert_int_not_equal(profile_intern(p, "a\xff\xc3(b\xed\xa0\x80"), bad);  /* raw kept */

	/* 3000 two-byte characters (6000 bytes): cut on a boundary, within the maximum. */
	size_t n = 6000;
	char *big = malloc(n + 1);
	for (size_t i = 0; i < n; i += 2) {
		big[i] = (char)0xc3;
		big[i + 1] = (char)0xa9;
	}
	big[n] = '\0';
	const char *cut = profile_str(p, profile_intern_name(p, big));
	size_t len = strlen(cut);
	assert_true(len <= PROFILE_NAME_MAX && len >= PROFILE_NAME_MAX - 4);
	assert_memory_equal(cut + len - 3, "\xe2\x80\xa6", 3);
	assert_int_equal((len - 3) % 2, 0); /* whole characters before the ellipsis */
	assert_memory_equal(cut, big, len - 3);
	/* One byte over the maximum is cut too; exactly the maximum is kept. */
	memset(big, 'x', PROFILE_NAME_MAX + 1);
	big[PROFILE_NAME_MAX + 1] = '\0';
	assert_int_equal(strlen(profile_str(p, profile_intern_name(p, big))), PROFILE_NAME_MAX);
	assert_memory_equal(profile_str(p, profile_intern_name(p, big)) + PROFILE_NAME_MAX - 3,
	                    "\xe2\x80\xa6", 3);
	big[PROFILE_NAME_MAX] = '\0';
	assert_string_equal(profile_str(p, profile_intern_name(p, big)), big);
	free(big);
	profile_free(p);
}

/* Runs merged at one rate keep that rate's period: the computed CPU per sample would be off by
 * the unsampled time (a 3 % error in every base's seconds and expected counts). */
static void test_stats_period(void **state)
{
	(void)state;
	struct profile_stats a = {.samples = 2700,
	                          .cpu_seconds = 2.8,
	                          .unsampled_seconds = 0.097,
	                          .hz = 999},
	                     b = a, m = {0};
	profile_stats_add(&m, &a);
	profile_stats_add(&m, &b);
	profile_stats_finish(&m);
	assert_int_equal(m.period_ns, 1001001);
	/* Unsampled time not carried (a store's summed rows): still the rate's period. */
	m = (struct profile_stats){0};
	a.unsampled_seconds = 0;
	profile_stats_add(&m, &a);
	profile_stats_finish(&m);
	assert_int_equal(m.period_ns, 1001001);
	/* Most of the time unsampled (a suite in system calls: 99 samples at 999 Hz of 0.373
	 * CPU-s), as a store's rows carry it: still the rate's period, not 3.77 ms. */
	m = (struct profile_stats){0};
	struct profile_stats sys = {
	        .samples = 99, .cpu_seconds = 0.3728, .hz = 999, .period_ns = 1001001};
	profile_stats_add(&m, &sys);
	profile_stats_add(&m, &sys);
	profile_stats_finish(&m);
	assert_int_equal(m.period_ns, 1001001);
	/* Rates mixed (99 and 999 Hz): the CPU per sample, computed. */
	m = (struct profile_stats){0};
	struct profile_stats slow = {.samples = 99, .cpu_seconds = 1.0, .hz = 99};
	struct profile_stats fast = {.samples = 999, .cpu_seconds = 1.0, .hz = 999};
	profile_stats_add(&m, &slow);
	profile_stats_add(&m, &fast);
	profile_stats_finish(&m);
	assert_int_equal(m.period_ns, (uint64_t)(2e9 / 1098 + 0.5));
}

/* Adds stack "proc;a;b" (first = process) with every function frame in module mod. */
static void add_mod_stack(struct profile *p, const char *mod, const char *stack, uint64_t count)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", stack);
	uint32_t node = 0;
	int first = 1;
	for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
		struct profile_frame f = {.function = profile_intern(p, tok),
		                          .module = first ? 0 : profile_intern(p, mod),
		                          .kind = first ? PROFILE_FRAME_PROCESS : 0};
		node = profile_node(p, node, profile_frame(p, &f));
		first = 0;
	}
	profile_add(p, profile_intern(p, "t"), node, count);
}

/* One program's frames under name (process and module). */
static struct profile *program(const char *name, const char *const *funcs)
{
	struct profile *p = profile_new();
	char stack[200];
	for (int i = 0; funcs[i]; i++) {
		snprintf(stack, sizeof(stack), "%s;main;%s", name, funcs[i]);
		add_mod_stack(p, name, stack, 10 + (uint64_t)i);
	}
	p->stats.hz = 999;
	return p;
}

/* A program or library renamed with its code unchanged is paired with its old name; programs
 * that only share main are not. */
static void test_rename_modules(void **state)
{
	(void)state;
	static const char *const fns[] = {"f1", "f2", "work+0x10", NULL};
	static const char *const fns2[] = {"f1", "f2", "work_v2+0x10", NULL};
	struct profile *base = program("work", fns), *head = program("work_v2", fns2);
	struct strbuf note = STRBUF_INIT;
	struct profile *r = profile_rename_modules(head, base, &note);
	assert_non_null(r);
	assert_string_equal(note.buf, "work_v2 as work (4 of 4 functions in common)");
	/* The same stacks as the base's, the unsymbolized address included. */
	char *fb = folded(base, NULL), *fr = folded(r, NULL);
	assert_string_equal(fr, fb);
	assert_int_equal(r->stats.hz, 999);
	struct profile_func *f;
	size_t n = profile_functions(r, NULL, &f);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(profile_str(r, f[i].module), "work");
	free(f);
	free(fb);
	free(fr);
	profile_free(r);
	/* Nothing renamed: NULL. */
	assert_null(profile_rename_modules(base, base, NULL));
	profile_free(head);
	/* A test program removed and another added: main alone in common is no rename. */
	static const char *const a[] = {"test_bar", "bar_helper", NULL};
	static const char *const b[] = {"test_foo", "foo_helper", "foo_more", NULL};
	struct profile *old = program("test_old", a), *new = program("test_new", b);
	assert_null(profile_rename_modules(new, old, NULL));
	profile_free(old);
	profile_free(new);
	/* Two new programs as like the one gone: neither takes it. */
	struct profile *two = program("work_a", fns);
	add_mod_stack(two, "work_b", "work_b;main;f1", 5);
	add_mod_stack(two, "work_b", "work_b;main;f2", 5);
	add_mod_stack(two, "work_b", "work_b;main;work_b+0x10", 5);
	assert_null(profile_rename_modules(two, base, NULL));
	profile_free(two);
	profile_free(base);
	strbuf_release(&note);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_intern_and_trie), cmocka_unit_test(test_functions_self_total),
	        cmocka_unit_test(test_folded_output),   cmocka_unit_test(test_folded_errors),
	        cmocka_unit_test(test_merge),           cmocka_unit_test(test_build_ids),
	        cmocka_unit_test(test_intern_name),     cmocka_unit_test(test_stats_period),
	        cmocka_unit_test(test_rename_modules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
