/* JUnit XML reports (GoogleTest --gtest_output=xml, pytest --junitxml, ctest --output-junit,
 * cmocka's xml output, go-junit-report...): each <testcase>'s outcome and duration, so a run
 * records which tests passed, failed or were skipped next to what they cost. */
#ifndef CP_JUNIT_H
#define CP_JUNIT_H

#include <stddef.h>

enum junit_status { JUNIT_PASSED = 0, JUNIT_FAILED, JUNIT_ERROR, JUNIT_SKIPPED };

struct junit_case {
	char *classname; /* owned; "" when absent */
	char *name;      /* owned */
	double seconds;  /* the time attribute, 0 when absent */
	enum junit_status status;
};

struct junit {
	struct junit_case *cases;
	size_t n, alloc;
};

void junit_init(struct junit *j);
void junit_release(struct junit *j);
const char *junit_status_name(enum junit_status s); /* "passed", "failed", "error", "skipped" */

/* Parses one report, appending its cases; name is used in errors ("NAME:LINE:COLUMN: what").
 * 0, or -1 with cp_error set. */
int junit_parse(struct junit *j, const char *xml, size_t len, const char *name);

/*
 * The test names ciprof may know a case by, most specific first: "classname.name"
 * (GoogleTest), "path/mod.py::Class::name" (pytest, from a dotted classname), "name".
 * Fills out (owned strings, free each) and returns how many (at most 4).
 */
size_t junit_candidate_names(const struct junit_case *c, char **out);

struct profile;

/*
 * Records each case's outcome in p (profile_set_result), under the first of its candidate
 * names that is one of p's tests with samples, else under its plain name. Returns how many
 * cases matched a sampled test.
 */
size_t junit_attach(const struct junit *j, struct profile *p);

#endif
