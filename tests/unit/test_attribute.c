/* Per-test attribution: control lines, mark precedence, fork inheritance, output-marker
 * windows (ambiguous when they overlap), CTest matching and stack rules on a real trie. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "runner/aggregate.h"
#include "runner/attribution/attribute.h"
#include "runner/attribution/ctest.h"
#include "runner/attribution/markers.h"

static const char *test_at(struct attrib *a, pid_t pid, pid_t tid, uint64_t t, int *weak)
{
	int w;
	uint32_t id = attrib_sample(a, pid, tid, t, &w);
	if (weak)
		*weak = w;
	return profile_str(a->prof, id);
}

static void test_control_lines(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	struct attrib a;
	attrib_init(&a, p);
	assert_int_equal(attrib_control_line(&a, "begin 10 suite/one", 100), 0);
	assert_int_equal(attrib_control_line(&a, "end 10 suite/one", 200), 0);
	assert_int_equal(attrib_control_line(&a, "begin 10 name with spaces", 300), 0);
	assert_int_equal(attrib_control_line(&a, "bogus 10 x", 300), -1);
	assert_non_null(strstr(cp_last_error(), "expected 'begin TID NAME'"));
	assert_int_equal(attrib_control_line(&a, "begin x y", 300), -1);
	assert_int_equal(attrib_control_line(&a, "begin 10", 300), -1);
	assert_int_equal(attrib_control_line(&a, "begin -3 t", 300), -1);
	assert_int_equal(a.bad_lines, 4);
	assert_string_equal(test_at(&a, 1, 10, 50, NULL), "");
	assert_string_equal(test_at(&a, 1, 10, 150, NULL), "suite/one");
	assert_string_equal(test_at(&a, 1, 11, 150, NULL), ""); /* another thread */
	assert_string_equal(test_at(&a, 1, 10, 250, NULL), "");
	assert_string_equal(test_at(&a, 1, 10, 350, NULL), "name with spaces");
	attrib_release(&a);
	profile_free(p);
}

/* A test name that is not valid UTF-8 is cleaned where the runner interns it, so every output
 * shows the same name (and JUnit's case of that name still matches it). */
static void test_name_cleaned(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	struct attrib a;
	attrib_init(&a, p);
	assert_int_equal(attrib_control_line(&a, "begin 10 caf\xe9", 100), 0);
	assert_string_equal(test_at(&a, 1, 10, 150, NULL), "caf\xef\xbf\xbd");
	attrib_proc_mark(&a, 20, "t\xc3");
	assert_string_equal(test_at(&a, 20, 20, 150, NULL), "t\xef\xbf\xbd");
	attrib_release(&a);
	profile_free(p);
}

/* Marks carry the marker's own time: a line read late still switches the thread at the time
 * it was written; names are escaped, and cut at ATTRIB_NAME_MAX with a count for the warning. */
static void test_timed_marks(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	struct attrib a;
	attrib_init(&a, p);
	/* read at 900 and 950, marked at 100 and 200 */
	assert_int_equal(attrib_control_line(&a, "@100 begin 10 one", 900), 0);
	assert_int_equal(attrib_control_line(&a, "@200 end 10 one", 950), 0);
	assert_int_equal(attrib_control_line(&a, "@300 begin 10 two\\\\x\\nline\\r\\q", 960), 0);
	/* a time after the reading is not believed: the reading time is used */
	assert_int_equal(attrib_control_line(&a, "@5000 end 10 two", 1000), 0);
	assert_int_equal(attrib_control_line(&a, "@x begin 10 y", 1000), -1);
	assert_int_equal(attrib_control_line(&a, "@12begin 10 y", 1000), -1);
	assert_int_equal(a.bad_lines, 2);
	assert_string_equal(test_at(&a, 1, 10, 50, NULL), "");
	assert_string_equal(test_at(&a, 1, 10, 150, NULL), "one");
	assert_string_equal(test_at(&a, 1, 10, 250, NULL), "");
	assert_string_equal(test_at(&a, 1, 10, 350, NULL), "two\\x\nline\r\\q");
	assert_string_equal(test_at(&a, 1, 10, 999, NULL), "two\\x\nline\r\\q");
	assert_string_equal(test_at(&a, 1, 10, 1000, NULL), "");
	assert_int_equal(a.names_cut, 0);

	/* the writer cut a name ('~'); a longer name from elsewhere is cut here, on a UTF-8
	 * character boundary */
	assert_int_equal(attrib_control_line(&a, "@2000~ begin 11 cut", 2100), 0);
	assert_int_equal(a.names_cut, 1);
	char line[3000];
	size_t n = (size_t)snprintf(line, sizeof(line), "@2200 begin 12 ");
	for (size_t i = 0; i < ATTRIB_NAME_MAX - 1; i++)
		line[n++] = 'a';
	line[n++] = '\xc3'; /* a two-byte character across the limit */
	line[n++] = '\xa9';
	line[n++] = 'z';
	line[n] = '\0';
	assert_int_equal(attrib_control_line(&a, line, 2300), 0);
	assert_int_equal(a.names_cut, 2);
	const char *name = test_at(&a, 1, 12, 2400, NULL);
	assert_int_equal(strlen(name), ATTRIB_NAME_MAX - 1);
	assert_int_equal(name[0], 'a');
	attrib_release(&a);
	profile_free(p);
}

/* TAP: a test's samples come before its result line; they are held back (ATTRIB_PENDING) in
 * the aggregator and given to the test its result line names, from the plan on. */
static void test_tap_pending(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	struct attrib a;
	struct aggregator agg;
	struct markers m;
	attrib_init(&a, p);
	aggregator_init(&agg, p);
	aggregator_attach(&agg, &a);
	markers_init(&m);
	uint32_t proc = profile_intern(p, "prove");
	uint32_t dso = 0;
	uint64_t off = 0x10;
	int w;
	uint32_t test;
#define SAMPLE(t)                                                                                  \
	test = attrib_sample(&a, 1, 1, (t), &w);                                                   \
	aggregator_add(&agg, test, w, proc, &dso, &off, 1, 1)
	SAMPLE(5); /* before the plan: no test */
	markers_feed(&m, &a, "1..3\n", 5, 10);
	SAMPLE(20);
	SAMPLE(30);
	assert_int_equal(agg.npend, 1); /* one stack, two samples, no test yet */
	markers_feed(&m, &a, "ok 1 - first\n", 13, 40);
	assert_int_equal(agg.npend, 0);
	SAMPLE(50);
	markers_feed(&m, &a, "not ok 2 - second # TODO\n", 25, 60);
	SAMPLE(70);
	markers_feed(&m, &a, "ok 3\n", 5, 80);
	SAMPLE(90); /* after the last result: pending, then no test's at the end */
#undef SAMPLE
	uint64_t first = 0, second = 0, third = 0, none = 0;
	for (size_t i = 0; i < agg.nsamples; i++) {
		const char *name = profile_str(p, agg.samples[i].test);
		uint64_t c = agg.samples[i].count;
		first += !strcmp(name, "first") ? c : 0;
		second += !strcmp(name, "second") ? c : 0;
		third += !strcmp(name, "test 3") ? c : 0;
		none += !*name ? c : 0;
	}
	assert_int_equal(first, 2);
	assert_int_equal(second, 1);
	assert_int_equal(third, 1);
	assert_int_equal(none, 1);
	assert_int_equal(agg.npend, 1);
	aggregator_resolve(&agg, 0);
	assert_int_equal(agg.npend, 0);
	markers_release(&m);
	aggregator_release(&agg);
	attrib_release(&a);
	profile_free(p);
}

static void test_precedence_and_fork(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	struct attrib a;
	attrib_init(&a, p);
	attrib_control_line(&a, "proc 100 procA", 0);
	attrib_proc_fork(&a, 101, 100); /* a child of a marked process belongs to its test */
	attrib_proc_fork(&a, 201, 200); /* unmarked parent: nothing */
	attrib_control_line(&a, "begin 101 threadT", 10);
	attrib_window_begin(&a, "winW", 0);
	int weak;
	assert_string_equal(test_at(&a, 100, 100, 5, &weak), "procA");
	assert_false(weak);
	assert_string_equal(test_at(&a, 101, 102, 5, &weak), "procA");
	/* a thread mark outranks its process's mark */
	assert_string_equal(test_at(&a, 101, 101, 20, &weak), "threadT");
	/* outside any mark, the output window applies, weakly */
	assert_string_equal(test_at(&a, 201, 201, 30, &weak), "winW");
	assert_true(weak);
	attrib_proc_exit(&a, 100);
	assert_string_equal(test_at(&a, 100, 100, 40, &weak), "winW");
	attrib_release(&a);
	profile_free(p);
}

/* A preload sample standing for many periods of a thread's CPU time (its timer fired late on
 * an overloaded machine) is shared between the tests its marks held since the thread's
 * previous sample, by wall time; the weights add up; a part with no thread test takes the
 * process's mark; a thread's first sample is shared from its first mark on; a sample of
 * weight 1 is never split. */
static void test_sample_parts(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	struct attrib a;
	attrib_init(&a, p);
	attrib_control_line(&a, "proc 100 procA", 0);
	attrib_control_line(&a, "@1000 begin 100 one", 5000);
	attrib_control_line(&a, "@2000 end 100 one", 5000);
	attrib_control_line(&a, "@2500 begin 100 two", 5000);
	struct attrib_part parts[ATTRIB_MAX_PARTS];
	/* the thread's first sample: from its first mark, all of it "one" */
	assert_int_equal(attrib_sample_parts(&a, 100, 100, 1500, 7, parts), 1);
	assert_string_equal(profile_str(p, parts[0].test), "one");
	assert_int_equal(parts[0].weight, 7);
	/* a thread whose first sample comes after two tests: shared from its first mark */
	attrib_control_line(&a, "@1000 begin 101 first", 5000);
	attrib_control_line(&a, "@1200 end 101 first", 5000);
	attrib_control_line(&a, "@1200 begin 101 second", 5000);
	size_t n = attrib_sample_parts(&a, 100, 101, 1600, 6, parts);
	assert_int_equal(n, 2);
	assert_string_equal(profile_str(p, parts[0].test), "first");
	assert_int_equal(parts[0].weight, 2);
	assert_string_equal(profile_str(p, parts[1].test), "second");
	assert_int_equal(parts[1].weight, 4);
	/* (1500, 3500]: one 500, no thread test 500 (procA), two 1000 */
	n = attrib_sample_parts(&a, 100, 100, 3500, 20, parts);
	assert_int_equal(n, 3);
	assert_string_equal(profile_str(p, parts[0].test), "one");
	assert_int_equal(parts[0].weight, 5);
	assert_string_equal(profile_str(p, parts[1].test), "procA");
	assert_int_equal(parts[1].weight, 5);
	assert_string_equal(profile_str(p, parts[2].test), "two");
	assert_int_equal(parts[2].weight, 10);
	/* no change since: one part */
	assert_int_equal(attrib_sample_parts(&a, 100, 100, 4000, 9, parts), 1);
	assert_string_equal(profile_str(p, parts[0].test), "two");
	/* weight 1 is never split, but still moves the thread's last sample on */
	attrib_control_line(&a, "@4100 end 100 two", 5000);
	assert_int_equal(attrib_sample_parts(&a, 100, 100, 4200, 1, parts), 1);
	assert_string_equal(profile_str(p, parts[0].test), "procA");
	/* weights that do not divide evenly still add up */
	attrib_control_line(&a, "@4300 begin 100 three", 5000);
	n = attrib_sample_parts(&a, 100, 100, 4500, 3, parts);
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += parts[i].weight;
	assert_int_equal(sum, 3);
	assert_string_equal(profile_str(p, parts[n - 1].test), "three");
	/* a thread that ended at 4600: the next one on its id ran after that, in "three" */
	attrib_thread_exit(&a, 100, 4600);
	assert_int_equal(attrib_sample_parts(&a, 100, 100, 4700, 8, parts), 1);
	assert_string_equal(profile_str(p, parts[0].test), "three");
	/* twenty tests of 100 ns with 50 ns between them inside one sample (a thread's CPU-time
	 * timer late by hundreds of ms under load): each test its share, none folded away */
	for (int i = 0; i < 20; i++) {
		char line[64];
		snprintf(line, sizeof line, "@%d begin 100 many%02d", 10000 + 150 * i, i);
		attrib_control_line(&a, line, 20000);
		snprintf(line, sizeof line, "@%d end 100 many%02d", 10100 + 150 * i, i);
		attrib_control_line(&a, line, 20000);
	}
	attrib_sample_parts(&a, 100, 100, 10000, 1, parts); /* the thread's previous sample */
	n = attrib_sample_parts(&a, 100, 100, 13000, 300, parts);
	assert_int_equal(n, 40);
	for (size_t i = 0; i < n; i += 2) {
		char want[16];
		snprintf(want, sizeof want, "many%02zu", i / 2);
		assert_string_equal(profile_str(p, parts[i].test), want);
		assert_int_equal(parts[i].weight, 10);
		assert_string_equal(profile_str(p, parts[i + 1].test), "procA");
		assert_int_equal(parts[i + 1].weight, 5);
	}
	/* a thread never marked is never split */
	assert_int_equal(attrib_sample_parts(&a, 100, 103, 4600, 50, parts), 1);
	assert_string_equal(profile_str(p, parts[0].test), "procA");
	assert_int_equal(parts[0].weight, 50);
	attrib_release(&a);
	profile_free(p);
}

/* A test's child running `ciprof exec-test NAME` keeps NAME when the runner reads the fork
 * that made it after the mark (the mark comes through a pipe, the fork through the sampling
 * ring): before, the fork gave it its parent's test, and a CTest test's inner exec-test lost
 * all its samples to the outer test in 3 of 6 runs (test_exec_test_nested.sh's header). A later
 * process on the pid, after the exit, inherits at fork again. */
static void test_own_mark_outlives_fork(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	struct attrib a;
	attrib_init(&a, p);
	uint32_t outer = profile_intern_name(p, "outer"), inner = profile_intern_name(p, "inner");
	attrib_proc_mark(&a, 100, "outer");                                /* CTest naming's mark */
	assert_int_equal(attrib_control_line(&a, "proc 101 inner", 0), 0); /* mark read first */
	attrib_proc_fork(&a, 101, 100);                                    /* then the fork */
	assert_int_equal(attrib_proc_test(&a, 101), inner);
	attrib_proc_fork(&a, 102, 101); /* its own children are in its test */
	assert_int_equal(attrib_proc_test(&a, 102), inner);
	attrib_proc_exit(&a, 101);
	attrib_proc_fork(&a, 101, 100); /* the pid reused: the parent's test again */
	assert_int_equal(attrib_proc_test(&a, 101), outer);
	attrib_proc_mark(&a, 103, "inner"); /* a weaker mark still gives way at fork */
	attrib_proc_fork(&a, 103, 100);
	assert_int_equal(attrib_proc_test(&a, 103), outer);
	attrib_release(&a);
	profile_free(p);
}

static void test_windows(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	struct attrib a;
	attrib_init(&a, p);
	attrib_window_begin(&a, "one", 10);
	attrib_window_end(&a, "one", 20);
	attrib_window_begin(&a, "two", 30);
	attrib_window_begin(&a, "three", 40); /* overlaps two: parallel in-process tests */
	attrib_window_end(&a, "two", 50);
	attrib_window_end(&a, "three", 60);
	attrib_window_end(&a, "never-begun", 65); /* a summary line: nothing */
	attrib_tap_result(&a, "tap", 80);         /* TAP: from the last end (60) */
	int w;
	assert_string_equal(test_at(&a, 1, 1, 5, &w), "");
	assert_string_equal(test_at(&a, 1, 1, 15, &w), "one");
	assert_string_equal(test_at(&a, 1, 1, 25, &w), "");
	assert_string_equal(test_at(&a, 1, 1, 35, &w), "two");
	assert_string_equal(test_at(&a, 1, 1, 45, &w), ATTRIB_AMBIGUOUS);
	assert_string_equal(test_at(&a, 1, 1, 55, &w), "three");
	assert_string_equal(test_at(&a, 1, 1, 70, &w), "tap");
	assert_string_equal(test_at(&a, 1, 1, 90, &w), "");
	attrib_release(&a);
	profile_free(p);
}

static void test_markers(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	struct attrib a;
	attrib_init(&a, p);
	struct markers m;
	markers_init(&m);
	/* GoogleTest with colours, cmocka, go test -v, pytest -v (name before the result,
	 * split across reads), cargo, TAP */
	const char *chunks[][2] = {
	        {"\033[0;32m[ RUN      ] \033[mSuite.Alpha\n", "10"},
	        {"[       OK ] Suite.Alpha (3 ms)\n", "20"},
	        {"=== RUN   TestGo\n", "30"},
	        {"    --- PASS: TestGo (0.01s)\n", "40"},
	        {"tests/test_p.py::test_q ", "50"},
	        {"PASSED   [ 50%]\n", "60"},
	        {"test tests::rusty ... ", "70"},
	        {"ok\n", "80"},
	        {"ok 7 - tap seven # SKIP slow\n", "90"},
	        {"[  FAILED  ] Suite.Alpha, where TypeParam = int\n", "95"},
	        /* names with '(' and ',' end on their own result line */
	        {"[ RUN      ] Suite.Beta(x, y)\n", "110"},
	        {"[       OK ] Suite.Beta(x, y) (12 ms)\n", "120"},
	        {"[ RUN      ] P/Suite.Gamma/0\n", "130"},
	        {"[  FAILED  ] P/Suite.Gamma/0, where GetParam() = (1, 2) (3 ms)\n", "140"},
	        {"=== RUN   TestSub/case_(a)\n", "150"},
	        {"    --- PASS: TestSub/case_(a) (0.01s)\n", "160"},
	        {"[ RUN      ] Suite.Delta\n", "170"},
	        {"[       OK ] Suite.Delta (0 ms)\n", "180"},
	};
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++)
		markers_feed(&m, &a, chunks[i][0], strlen(chunks[i][0]),
		             (uint64_t)atoi(chunks[i][1]));
	markers_flush(&m, &a, 100);
	int w;
	assert_string_equal(test_at(&a, 1, 1, 15, &w), "Suite.Alpha");
	assert_string_equal(test_at(&a, 1, 1, 35, &w), "TestGo");
	assert_string_equal(test_at(&a, 1, 1, 55, &w), "tests/test_p.py::test_q");
	assert_string_equal(test_at(&a, 1, 1, 75, &w), "tests::rusty");
	assert_string_equal(test_at(&a, 1, 1, 85, &w), "tap seven");
	assert_string_equal(test_at(&a, 1, 1, 96, &w), ""); /* the summary began nothing */
	assert_string_equal(test_at(&a, 1, 1, 115, &w), "Suite.Beta(x, y)");
	assert_string_equal(test_at(&a, 1, 1, 125, &w), "");
	assert_string_equal(test_at(&a, 1, 1, 135, &w), "P/Suite.Gamma/0");
	assert_string_equal(test_at(&a, 1, 1, 145, &w), "");
	assert_string_equal(test_at(&a, 1, 1, 155, &w), "TestSub/case_(a)");
	assert_string_equal(test_at(&a, 1, 1, 165, &w), "");
	assert_string_equal(test_at(&a, 1, 1, 175, &w), "Suite.Delta"); /* not "(ambiguous)" */
	/* C++ output with "::" is not a pytest node */
	markers_feed(&m, &a, "std::vector<int> x\n", 19, 200);
	assert_string_equal(test_at(&a, 1, 1, 200, &w), "");
	markers_release(&m);
	attrib_release(&a);
	profile_free(p);
}

static void test_ctest(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	struct attrib a;
	attrib_init(&a, p);
	const char *json =
	        "{\"kind\":\"ctestInfo\",\"version\":{\"major\":1,\"minor\":0},\"tests\":["
	        "{\"name\":\"small\",\"command\":[\"/b/t\",\"--case\",\"small\"],"
	        " \"properties\":[{\"name\":\"WORKING_DIRECTORY\",\"value\":\"/b\"}]},"
	        "{\"name\":\"large\",\"command\":[\"/b/t\",\"--case\",\"large\"]},"
	        "{\"name\":\"missing\"}]}";
	assert_int_equal(attrib_ctest_load(&a, json, strlen(json), "x.json"), 0);
	assert_int_equal(a.nctest, 2);
	char *argv1[] = {"/b/t", "--case", "small", NULL};
	char *argv2[] = {"t", "--case", "large", NULL}; /* found through PATH */
	char *argv3[] = {"/b/t", "--case", NULL};
	int64_t i1 = attrib_ctest_find(&a, argv1, "/b"),
	        i2 = attrib_ctest_find(&a, argv2, "/elsewhere");
	assert_true(i1 >= 0 && i2 >= 0);
	assert_string_equal(a.ctest[i1].name, "small");
	assert_string_equal(a.ctest[i2].name, "large");
	assert_int_equal(attrib_ctest_find(&a, argv3, "/b"), -1);
	/* by executable alone only when one test runs it */
	assert_null(attrib_ctest_match_exe(&a, "/b/t"));
	const char *json2 = "{\"tests\":[{\"name\":\"solo\",\"command\":[\"/b/solo\"]}]}";
	assert_int_equal(attrib_ctest_load(&a, json2, strlen(json2), "s.json"), 0);
	assert_string_equal(attrib_ctest_match_exe(&a, "/b/solo"), "solo");
	assert_null(attrib_ctest_match_exe(&a, "/b/other"));
	assert_int_equal(attrib_ctest_load(&a, "{\"tests\": 3}", 12, "y.json"), -1);
	assert_non_null(strstr(cp_last_error(), "y.json"));
	assert_int_equal(attrib_ctest_load(&a, "{oops", 5, "z.json"), -1);
	assert_non_null(strstr(cp_last_error(), "z.json:1:"));
	attrib_release(&a);
	profile_free(p);
}

/* Pids that /proc never shows (above any pid_max): a test process that ended before ciprof
 * read its exec, as under load. */
#define GONE1 ((pid_t)2147483001)
#define GONE2 ((pid_t)2147483002)
#define GONE3 ((pid_t)2147483003)

/* Samples of test name in agg (by name: "" is no test). */
static uint64_t agg_count(const struct aggregator *agg, const char *name)
{
	uint64_t n = 0;
	for (size_t i = 0; i < agg->nsamples; i++)
		if (!strcmp(profile_str(agg->prof, agg->samples[i].test), name))
			n += agg->samples[i].count;
	return n;
}

/* Ends the run as the runner does: names the processes left unnamed, relabels their samples. */
static void finish_run(struct ctest_watch *w, struct aggregator *agg)
{
	ctest_watch_finish(w);
	uint32_t to[8] = {0};
	assert_true(w->nunnamed <= 8);
	for (size_t i = 0; i < w->nunnamed; i++)
		to[i] = w->unnamed[i].test;
	aggregator_relabel(agg, ATTRIB_UNNAMED_FIRST, to, w->nunnamed);
}

/* CTest, two tests running one program (the CI templates' A/B test: `spin 20`, `spin 90`):
 * the short one ends before ciprof reads its exec, so /proc has no command line left and its
 * executable fits both tests. Its samples wait under a stand-in mark and go, at the run's end,
 * to the one test of that program no process was matched to; before, they went to no test
 * in the runs where ciprof was late and to the test otherwise. */
static void test_ctest_gone_by_elimination(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	struct attrib a;
	struct aggregator agg;
	struct ctest_watch w;
	attrib_init(&a, p);
	aggregator_init(&agg, p);
	ctest_watch_init(&w, &a);
	const char *json = "{\"tests\":["
	                   "{\"name\":\"spin_small\",\"command\":[\"/b/spin\",\"20\"]},"
	                   "{\"name\":\"spin_large\",\"command\":[\"/b/spin\",\"90\"]},"
	                   "{\"name\":\"other\",\"command\":[\"/b/other\"]}]}";
	assert_int_equal(attrib_ctest_load(&a, json, strlen(json), "x.json"), 0);
	/* the same ctest asked again (a second invocation): its entries come twice */
	assert_int_equal(attrib_ctest_load(&a, json, strlen(json), "x.json"), 0);
	uint32_t proc = profile_intern(p, "spin");
	uint32_t dso = 0;
	uint64_t off = 0x10;
	int weak;
	ctest_watch_exec(&w, GONE1, "spin", 0); /* /proc shows nothing: kept for its mapping */
	ctest_watch_mmap(&w, GONE1, "/b/spin");
	assert_int_equal(w.nunnamed, 1);
	uint32_t t = attrib_sample(&a, GONE1, GONE1, 10, &weak);
	assert_int_equal(t, ATTRIB_UNNAMED_FIRST);
	aggregator_add(&agg, t, weak, proc, &dso, &off, 1, 5);
	/* spin_large starts later and is read in time */
	char *large[] = {"/b/spin", "90", NULL};
	ctest_watch_exec_argv(&w, 4242, 0, large, "/b", "/b/spin");
	t = attrib_sample(&a, 4242, 4242, 20, &weak);
	assert_string_equal(profile_str(p, t), "spin_large");
	aggregator_add(&agg, t, weak, proc, &dso, &off, 1, 7);
	/* a program only one test runs is named at once, as before */
	ctest_watch_exec(&w, GONE2, "other", 0);
	ctest_watch_mmap(&w, GONE2, "/b/other");
	assert_string_equal(profile_str(p, attrib_sample(&a, GONE2, GONE2, 30, &weak)), "other");
	/* a program no test runs is no test's */
	ctest_watch_exec(&w, GONE3, "cc", 0);
	ctest_watch_mmap(&w, GONE3, "/usr/bin/cc");
	assert_int_equal(attrib_sample(&a, GONE3, GONE3, 40, &weak), 0);
	assert_int_equal(w.nunnamed, 1);
	/* a sample of spin_small's own id at the same stack merges with the relabelled ones */
	aggregator_add(&agg, profile_intern(p, "spin_small"), 0, proc, &dso, &off, 1, 1);
	finish_run(&w, &agg);
	assert_string_equal(profile_str(p, w.unnamed[0].test), "spin_small");
	assert_int_equal(agg_count(&agg, "spin_small"), 6);
	assert_int_equal(agg_count(&agg, "spin_large"), 7);
	assert_int_equal(agg_count(&agg, ""), 0);
	assert_int_equal(agg.nsamples, 2);
	ctest_watch_release(&w);
	aggregator_release(&agg);
	attrib_release(&a);
	profile_free(p);
}

/* Elimination names a process only when one test of its program is left unseen: two tests of
 * one program both missed are no test's (either may be either), and a test missed twice
 * (ctest --repeat) while its sibling was seen is named both times. */
static void test_ctest_gone_ambiguous(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	struct attrib a;
	struct aggregator agg;
	struct ctest_watch w;
	attrib_init(&a, p);
	aggregator_init(&agg, p);
	ctest_watch_init(&w, &a);
	const char *json = "{\"tests\":["
	                   "{\"name\":\"a\",\"command\":[\"/b/t\",\"a\"]},"
	                   "{\"name\":\"b\",\"command\":[\"/b/t\",\"b\"]},"
	                   "{\"name\":\"c\",\"command\":[\"/b/t\",\"c\"]}]}";
	assert_int_equal(attrib_ctest_load(&a, json, strlen(json), "x.json"), 0);
	uint32_t proc = profile_intern(p, "t");
	uint32_t dso = 0;
	uint64_t off = 0x10;
	int weak;
	char *ta[] = {"/b/t", "a", NULL};
	ctest_watch_exec_argv(&w, 100, 0, ta, "/b", "/b/t");
	ctest_watch_exec(&w, GONE1, "t", 0);
	ctest_watch_mmap(&w, GONE1, "/b/t");
	ctest_watch_exec(&w, GONE2, "t", 0);
	ctest_watch_mmap(&w, GONE2, "/b/t");
	aggregator_add(&agg, attrib_sample(&a, GONE1, GONE1, 1, &weak), 0, proc, &dso, &off, 1, 3);
	aggregator_add(&agg, attrib_sample(&a, GONE2, GONE2, 2, &weak), 0, proc, &dso, &off, 1, 4);
	finish_run(&w, &agg);
	assert_int_equal(w.nunnamed, 2);
	assert_int_equal(w.unnamed[0].test, 0);
	assert_int_equal(w.unnamed[1].test, 0);
	assert_int_equal(agg_count(&agg, ""), 7);
	ctest_watch_release(&w);
	aggregator_release(&agg);
	attrib_proc_exit(&a, GONE1); /* as their exits would: the pids are reused below */
	attrib_proc_exit(&a, GONE2);

	/* b seen too: the two missed processes are both c */
	aggregator_init(&agg, p);
	ctest_watch_init(&w, &a);
	char *tb[] = {"/b/t", "b", NULL};
	ctest_watch_exec_argv(&w, 101, 0, tb, "/b", "/b/t");
	ctest_watch_exec(&w, GONE1, "t", 0);
	ctest_watch_mmap(&w, GONE1, "/b/t");
	ctest_watch_exec(&w, GONE2, "t", 0);
	ctest_watch_mmap(&w, GONE2, "/b/t");
	aggregator_add(&agg, attrib_sample(&a, GONE1, GONE1, 1, &weak), 0, proc, &dso, &off, 1, 3);
	aggregator_add(&agg, attrib_sample(&a, GONE2, GONE2, 2, &weak), 0, proc, &dso, &off, 1, 4);
	finish_run(&w, &agg);
	assert_int_equal(agg_count(&agg, "c"), 7);
	assert_int_equal(agg_count(&agg, ""), 0);
	ctest_watch_release(&w);
	aggregator_release(&agg);
	attrib_release(&a);
	profile_free(p);
}

/* A test's child stays in its test whatever it runs, even another test's command line (a
 * pipeline of the program another test runs alone), whether its fork is processed before its
 * exec is read (the runner holds back only the records after a pending exec) or after. */
static void test_ctest_child_keeps_test(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	struct attrib a;
	struct ctest_watch w;
	attrib_init(&a, p);
	ctest_watch_init(&w, &a);
	const char *json =
	        "{\"tests\":["
	        "{\"name\":\"alone\",\"command\":[\"/b/t\",\"1\"]},"
	        "{\"name\":\"pipe\",\"command\":[\"/bin/sh\",\"-c\",\"/b/t 1 | cat\"]}]}";
	assert_int_equal(attrib_ctest_load(&a, json, strlen(json), "x.json"), 0);
	uint32_t pipe = profile_intern_name(p, "pipe"), alone = profile_intern_name(p, "alone");
	char *sh[] = {"/bin/sh", "-c", "/b/t 1 | cat", NULL}, *t1[] = {"/b/t", "1", NULL};
	ctest_watch_exec_argv(&w, 200, 0, sh, "/b", "/bin/sh");
	assert_int_equal(attrib_proc_test(&a, 200), pipe);
	attrib_proc_fork(&a, 201, 200); /* fork first */
	ctest_watch_exec_argv(&w, 201, 0, t1, "/b", "/b/t");
	assert_int_equal(attrib_proc_test(&a, 201), pipe);
	ctest_watch_exec_argv(&w, 202, 0, t1, "/b", "/b/t"); /* exec read first: its own match */
	attrib_proc_fork(&a, 202, 200);
	assert_int_equal(attrib_proc_test(&a, 202), pipe);
	ctest_watch_exec_argv(&w, 300, 0, t1, "/b", "/b/t"); /* ctest's own child */
	assert_int_equal(attrib_proc_test(&a, 300), alone);
	ctest_watch_release(&w);
	attrib_release(&a);
	profile_free(p);
}

/* The same while a ctest query is outstanding (the preload backend): the test's sh and its
 * child are read, each linked to its parent at once, before the answer names any test; the
 * answer must leave the child in its parent's test, not in the test whose command line it
 * runs. Before, under load, a pipeline member's CPU time went to the other test. */
static void test_ctest_child_keeps_test_answer_late(void **state)
{
	(void)state;
	char dir[] = "/tmp/ciprof-test-ctest.XXXXXX", fake[64];
	assert_non_null(mkdtemp(dir));
	snprintf(fake, sizeof(fake), "%s/ctest", dir);
	FILE *f = fopen(fake, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\n"
	      "printf '%s' '{\"tests\":[{\"name\":\"alone\",\"command\":[\"/b/t\",\"1\"]},"
	      "{\"name\":\"pipe\",\"command\":[\"/bin/sh\",\"-c\",\"/b/t 1 && /b/t 1\"]}]}'\n",
	      f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(fake, 0755), 0);

	struct profile *p = profile_new();
	struct attrib a;
	struct ctest_watch w;
	attrib_init(&a, p);
	ctest_watch_init(&w, &a);
	uint32_t pipe = profile_intern_name(p, "pipe"), alone = profile_intern_name(p, "alone");
	char *ctest[] = {"ctest", "-j2", NULL};
	char *sh[] = {"/bin/sh", "-c", "/b/t 1 && /b/t 1", NULL}, *t1[] = {"/b/t", "1", NULL};
	/* as the preload backend reads start records: the exec, then the link to the parent */
	ctest_watch_exec_argv(&w, 100, 1, ctest, dir, fake);
	assert_int_equal(w.nq, 1);
	ctest_watch_exec_argv(&w, 200, 100, sh, "/b", "/bin/sh");
	attrib_proc_fork(&a, 200, 100);
	ctest_watch_exec_argv(&w, 201, 200, t1, "/b", "/b/t");
	attrib_proc_fork(&a, 201, 200);
	assert_int_equal(attrib_proc_test(&a, 201), 0); /* nothing named yet */
	assert_int_equal(ctest_watch_poll(&w, 1), 0);
	assert_int_equal(a.nctest, 2);
	assert_int_equal(attrib_proc_test(&a, 200), pipe);
	assert_int_equal(attrib_proc_test(&a, 201), pipe);
	ctest_watch_exec_argv(&w, 300, 100, t1, "/b", "/b/t"); /* ctest's own child */
	attrib_proc_fork(&a, 300, 100);
	assert_int_equal(attrib_proc_test(&a, 300), alone);
	ctest_watch_release(&w);
	attrib_release(&a);
	profile_free(p);
	unlink(fake);
	rmdir(dir);
}

static uint32_t push(struct profile *p, uint32_t parent, const char *fn, int process)
{
	struct profile_frame f = {.function = profile_intern(p, fn),
	                          .kind = process ? PROFILE_FRAME_PROCESS : 0};
	return profile_node(p, parent, profile_frame(p, &f));
}

static void test_rules(void **state)
{
	(void)state;
	struct attrib_rules rules = {0};
	attrib_rules_add_builtin(&rules);
	assert_int_equal(attrib_rules_add(&rules, "bad", "(", "x", NULL), -1);
	assert_non_null(strstr(cp_last_error(),
	                       "rule 'bad': caller: '(' is not a valid regular expression"));
	struct profile *p = profile_new();
	uint32_t proc = push(p, 0, "suite", 1);
	uint32_t main_ = push(p, proc, "main", 0);
	uint32_t runner = push(p, main_, "libcmocka.so.0.7.0+0x58f8", 0);
	uint32_t t1 = push(p, runner, "test_parse", 0);
	uint32_t leaf = push(p, t1, "helper", 0);
	uint32_t gt = push(p, main_, "Parser_HandlesLarge_Test::TestBody()", 0);
	uint32_t gtns = push(p, main_, "(anonymous namespace)::Mixing_Medium_Test::TestBody()", 0);
	uint32_t gor =
	        push(p, push(p, proc, "testing.tRunner", 0), "example.com/m.TestSum.func1", 0);
	uint32_t chk = push(p, push(p, main_, "tcase_run_tfun_nofork", 0), "test_add_fn", 0);
	uint32_t rs = push(p, push(p, main_, "core::ops::function::FnOnce::call_once", 0),
	                   "mycrate::tests::adds::{{closure}}", 0);
	/* a closure that libtest's shim does not call is not a test */
	uint32_t notrs = push(p, main_, "mycrate::util::helper::{{closure}}", 0);
	uint32_t *tests = attrib_rules_node_tests(&rules, p);
	assert_string_equal(profile_str(p, tests[t1]), "test_parse");
	assert_string_equal(profile_str(p, tests[leaf]), "test_parse"); /* inherited down */
	assert_int_equal(tests[main_], 0);
	assert_int_equal(tests[runner], 0);
	assert_string_equal(profile_str(p, tests[gt]), "Parser.HandlesLarge");
	assert_string_equal(profile_str(p, tests[gtns]), "Mixing.Medium");
	assert_string_equal(profile_str(p, tests[gor]), "TestSum");
	assert_string_equal(profile_str(p, tests[chk]), "test_add");
	assert_string_equal(profile_str(p, tests[rs]), "tests::adds");
	assert_int_equal(tests[notrs], 0);
	free(tests);
	/* a user rule, with back-references */
	assert_int_equal(attrib_rules_add(&rules, "mine", "^my_runner$", "^case_(.*)$", "mine/\\1"),
	                 0);
	uint32_t mine = push(p, push(p, main_, "my_runner", 0), "case_big", 0);
	tests = attrib_rules_node_tests(&rules, p);
	assert_string_equal(profile_str(p, tests[mine]), "mine/big");
	free(tests);
	profile_free(p);
	attrib_rules_release(&rules);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_control_lines),
	        cmocka_unit_test(test_name_cleaned),
	        cmocka_unit_test(test_timed_marks),
	        cmocka_unit_test(test_tap_pending),
	        cmocka_unit_test(test_precedence_and_fork),
	        cmocka_unit_test(test_sample_parts),
	        cmocka_unit_test(test_windows),
	        cmocka_unit_test(test_markers),
	        cmocka_unit_test(test_ctest),
	        cmocka_unit_test(test_rules),
	        cmocka_unit_test(test_ctest_gone_by_elimination),
	        cmocka_unit_test(test_ctest_gone_ambiguous),
	        cmocka_unit_test(test_ctest_child_keeps_test),
	        cmocka_unit_test(test_ctest_child_keeps_test_answer_late),
	        cmocka_unit_test(test_own_mark_outlives_fork),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
