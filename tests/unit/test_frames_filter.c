/* report/frames_filter: frames.ignore drops frames, frames.fold collapses runs of frames into
 * their first; samples, tests, results and stats survive; the process frame is kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "report/frames_filter.h"

/* Adds one folded stack ("proc;a;b") with count samples under test. */
static void add_stack(struct profile *p, const char *test, const char *stack, uint64_t count)
{
	char *copy = strdup(stack);
	uint32_t node = 0;
	int first = 1;
	for (char *save = NULL, *tok = strtok_r(copy, ";", &save); tok;
	     tok = strtok_r(NULL, ";", &save)) {
		struct profile_frame f = {.function = profile_intern(p, tok),
		                          .module = profile_intern(p, first ? "" : "libx.so"),
		                          .kind = first ? PROFILE_FRAME_PROCESS
		                                        : PROFILE_FRAME_FUNCTION};
		node = profile_node(p, node, profile_frame(p, &f));
		first = 0;
	}
	profile_add(p, profile_intern(p, test), node, count);
	free(copy);
}

/* The folded text of p (all tests), owned. */
static char *folded(const struct profile *p, const char *test)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(profile_write_folded(p, f, test), 0);
	fclose(f);
	return buf;
}

static struct profile *sample_profile(void)
{
	struct profile *p = profile_new();
	add_stack(p, "t1",
	          "prog;_start;__libc_start_main;main;std::sort;std::__introsort;"
	          "std::__partition;cmp",
	          10);
	add_stack(p, "t1", "prog;_start;__libc_start_main;main;work", 5);
	add_stack(p, "t2", "prog;_start;__libc_start_main;main;std::vector::push;malloc", 3);
	add_stack(p, "t2", "prog;_start;__libc_start_main;main;std::sort;_start;std::swap", 2);
	add_stack(p, "", "_start;_start", 1); /* a process named like an ignored frame */
	profile_set_result(p, profile_intern(p, "t1"), 1, 0.5);
	p->stats.samples = 21;
	p->stats.hz = 99;
	return p;
}

static void test_ignore_and_fold(void **state)
{
	(void)state;
	struct profile *p = sample_profile();
	char *ignore[] = {"^_start$", "^__libc_start"};
	char *fold[] = {"^std::"};
	struct frames_filter f;
	assert_int_equal(frames_filter_init(&f, ignore, 2, fold, 1), 0);
	assert_false(frames_filter_empty(&f));
	struct profile *q = frames_filter_apply(&f, p);
	char *out = folded(q, NULL);
	/* the ignored _start between two std:: frames makes them consecutive: folded too */
	assert_string_equal(out, "_start 1\n"
	                         "prog;main;std::sort 2\n"
	                         "prog;main;std::sort;cmp 10\n"
	                         "prog;main;std::vector::push;malloc 3\n"
	                         "prog;main;work 5\n");
	free(out);
	out = folded(q, "t2");
	assert_string_equal(out, "prog;main;std::sort 2\nprog;main;std::vector::push;malloc 3\n");
	free(out);
	assert_int_equal(profile_total(q, NULL), 21);
	assert_int_equal(q->stats.samples, 21);
	assert_int_equal(q->stats.hz, 99);
	const struct profile_result *r = profile_result(q, (uint32_t)profile_find_str(q, "t1"));
	assert_non_null(r);
	assert_int_equal(r->status, 1);
	profile_free(q);
	frames_filter_release(&f);

	/* an empty filter copies */
	assert_int_equal(frames_filter_init(&f, NULL, 0, NULL, 0), 0);
	assert_true(frames_filter_empty(&f));
	q = frames_filter_apply(&f, p);
	char *a = folded(p, NULL), *b = folded(q, NULL);
	assert_string_equal(a, b);
	free(a);
	free(b);
	profile_free(q);
	frames_filter_release(&f);
	profile_free(p);
}

static void test_fold_only(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	add_stack(p, "", "prog;main;rec;rec;rec;leaf", 4);
	add_stack(p, "", "prog;main;rec;other;rec;rec", 1);
	char *fold[] = {"^rec$"};
	struct frames_filter f;
	assert_int_equal(frames_filter_init(&f, NULL, 0, fold, 1), 0);
	struct profile *q = frames_filter_apply(&f, p);
	char *out = folded(q, NULL);
	/* recursion collapses; a fold run broken by another frame starts again */
	assert_string_equal(out, "prog;main;rec;leaf 4\nprog;main;rec;other;rec 1\n");
	free(out);
	profile_free(q);
	frames_filter_release(&f);
	profile_free(p);
}

static void test_from_config(void **state)
{
	(void)state;
	struct config c;
	config_init(&c);
	const char *y = "frames:\n  ignore: ['^a$']\n  fold: ['^b']\n";
	assert_int_equal(config_parse(&c, y, strlen(y), "c.yml"), 0);
	struct frames_filter f;
	assert_int_equal(frames_filter_from_config(&f, &c), 0);
	assert_int_equal(f.nignore, 1);
	assert_int_equal(f.nfold, 1);
	frames_filter_release(&f);
	config_release(&c);
	char *bad[] = {"ok", "(("};
	assert_int_equal(frames_filter_init(&f, bad, 2, NULL, 0), -1);
	assert_non_null(strstr(cp_last_error(), "'((' is not a valid regular expression"));
	frames_filter_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_ignore_and_fold),
	        cmocka_unit_test(test_fold_only),
	        cmocka_unit_test(test_from_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
