#!/bin/bash
# run --junit: the test runner's JUnit XML outcomes (pass/fail/skip, durations) are stored with
# the run and shown next to each test's cost, matched to the names ciprof gives the tests.
. "$(dirname "$0")/lib.sh"

cat >"$TMP/suite.c" <<'C'
#include "ciprof.h"
#include <stdio.h>
volatile double sink;
__attribute__((noinline)) static void work(long n)
{
	double x = 0;
	for (long i = 0; i < n; i++)
		x += i * 0.5;
	sink = x;
}
int main(int argc, char **argv)
{
	work(30000000); /* setup, outside any test */
	ciprof_test_begin("Parser.Small");
	work(50000000);
	ciprof_test_end("Parser.Small");
	ciprof_test_begin("Parser.Large");
	work(200000000);
	ciprof_test_end("Parser.Large");
	FILE *f = fopen(argv[1], "w");
	fputs("<?xml version=\"1.0\"?>\n<testsuites><testsuite name=\"Parser\">\n"
	      "<testcase classname=\"Parser\" name=\"Small\" time=\"0.05\"/>\n"
	      "<testcase classname=\"Parser\" name=\"Large\" time=\"0.2\">"
	      "<failure message=\"x != y\"/></testcase>\n"
	      "<testcase classname=\"Parser\" name=\"Disabled\" time=\"0\"><skipped/></testcase>\n"
	      "</testsuite></testsuites>\n", f);
	return fclose(f) != 0;
}
C
cc -O2 -g -fno-omit-frame-pointer -I"$CIPROF_SRC/include" -o "$TMP/suite" "$TMP/suite.c" ||
	fail "cannot compile the suite"
run_capture run "$CIPROF" run --db "$TMP/db" --junit "$TMP/*.xml" -- "$TMP/suite" "$TMP/report.xml"
expect_rc "run with --junit" 0 run
run_capture show "$CIPROF" show --db "$TMP/db" --by test --format json
expect_rc "show --by test" 0 show
python3 - "$TMP/show.out" <<'PY' || check_failed "outcomes not shown as expected (see above)"
import json, sys
tests = {t["name"]: t for t in json.load(open(sys.argv[1]))["tests"]}
print(json.dumps(tests, indent=1))
assert tests["Parser.Large"]["status"] == "failed", "Large failed"
assert abs(tests["Parser.Large"]["duration_seconds"] - 0.2) < 1e-9
assert tests["Parser.Small"]["status"] == "passed"
assert tests["Parser.Large"]["samples"] > tests["Parser.Small"]["samples"] > 0
# a test that never ran is listed by its plain name, without samples
assert tests["Disabled"]["status"] == "skipped" and tests["Disabled"]["samples"] == 0
PY
run_capture text "$CIPROF" show --db "$TMP/db" --by test
expect_grep "text view shows the outcome" "$TMP/text.out" "failed"
# Small, Large and Disabled (named by JUnit only); the setup's samples are outside tests, which
# the header does not count as a test
expect_grep "the header counts the named tests" "$TMP/text.out" "samples in 3 tests and outside them"
# a pattern that matches nothing is a warning, not a failure
run_capture nomatch "$CIPROF" run --no-store --junit "$TMP/none-*.xml" -- true
expect_rc "--junit matching nothing" 0 nomatch
expect_grep "warning about it" "$TMP/nomatch.err" "matches no file"
finish
