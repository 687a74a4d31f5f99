/* Test tool (tests/integration/test_attr_ctest.sh): a ctest whose list of tests comes late, as
 * a loaded machine's may. Run through a link named ctest; asked `--show-only...` (ciprof asks
 * each ctest it sees start), it first waits LATE_CTEST_MS milliseconds (default 3000); then,
 * either way, it runs the real ctest at LATE_CTEST_REAL with the same arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *real = getenv("LATE_CTEST_REAL"), *ms = getenv("LATE_CTEST_MS");
	if (argc < 1 || !real || !*real) {
		fprintf(stderr, "late_ctest: set LATE_CTEST_REAL to the real ctest\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--show-only", 11)) {
			long wait = ms && *ms ? strtol(ms, NULL, 10) : 3000;
			struct timespec ts = {wait / 1000, (wait % 1000) * 1000000L};
			while (nanosleep(&ts, &ts) < 0)
				;
			break;
		}
	}
	execv(real, argv);
	perror("late_ctest: cannot run LATE_CTEST_REAL");
	return 127;
}
