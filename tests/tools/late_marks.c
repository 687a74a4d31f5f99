/* Test tool for marks (tests/integration/test_marks.sh), written with include/ciprof.h:
 *  - "early": marked while ciprof, its parent, is stopped (SIGSTOP, as if the machine were
 *    too loaded to run it), through the test and as much unmarked work after it: a reader
 *    that stamped marks on arrival would give early's CPU and the unmarked work to nobody;
 *  - a test whose name holds a newline, a carriage return and a backslash;
 *  - a test whose name is 3000 bytes long (cut at CIPROF_NAME_MAX, with a warning).
 * Each test spins for its CPU time by the thread's own clock, so a CPU hog does not change it. */
#include "include/ciprof.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile unsigned long sink;

static void spin(double seconds)
{
	double end = thread_cpu() + seconds;
	while (thread_cpu() < end)
		for (int i = 0; i < 10000; i++)
			sink += (unsigned long)i * 2654435761u;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 200;
	const char *env = getenv("CIPROF_CONTROL_FD");
	if (!env) {
		fprintf(stderr, "late_marks: run me under ciprof run\n");
		return 2;
	}
	/* ciprof (the parent) stopped, as on a machine so loaded that it does not run: it reads
	 * the marks only after the test and LATE unmarked work. */
	pid_t ciprof = getppid();
	if (kill(ciprof, SIGSTOP) < 0)
		return 1;
	ciprof_test_begin("early");
	spin(ms / 1000);
	ciprof_test_end("early");
	spin(ms / 1000); /* unmarked: outside tests */
	kill(ciprof, SIGCONT);

	ciprof_test_begin("odd\nname\r\\x");
	spin(ms / 1000);
	ciprof_test_end("odd\nname\r\\x");

	char *longname = malloc(3001);
	memset(longname, 'L', 3000);
	longname[3000] = '\0';
	ciprof_test_begin(longname);
	spin(ms / 1000);
	ciprof_test_end(longname);
	free(longname);
	return 0;
}
