/* A TAP producer whose four tests run in this one process, with known, clearly different
 * costs (1:2:3:4, about 1.5 s of CPU in all): only its output tells which test runs, as with
 * shell or Perl TAP suites. Each result line follows its test's work, so ciprof must give a
 * test the CPU since the previous result line (or the plan), not what comes after. */
#include "fw_work.h"

#include <stdio.h>

int main(void)
{
	static const struct {
		const char *name;
		unsigned units;
	} tests[] = {{"tap_tiny", 15}, {"tap_small", 30}, {"tap_medium", 45}, {"tap_large", 60}};
	uint64_t sink = 0;
	printf("1..4\n");
	fflush(stdout);
	for (int i = 0; i < 4; i++) {
		sink += fw_run_test(tests[i].name, tests[i].units);
		printf("ok %d - %s\n", i + 1, tests[i].name);
		fflush(stdout);
	}
	printf("# done %llu\n", (unsigned long long)(sink & 1));
	return 0;
}
