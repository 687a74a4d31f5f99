/* Test tool for exact CPU (tests/integration/test_short_processes.sh): burns MS milliseconds
 * of this process's CPU time, then appends the process's own CPU time (CLOCK_PROCESS_CPUTIME_ID,
 * its whole life since fork) in seconds to the file TRUTH, in one write. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double process_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: burn_ms MS TRUTH\n");
		return 2;
	}
	double until = atof(argv[1]) / 1000;
	volatile unsigned long sink = 0;
	while (process_cpu() < until)
		for (unsigned i = 0; i < 1000; i++)
			sink += i;
	char line[64];
	int n = snprintf(line, sizeof(line), "%.6f\n", process_cpu());
	int fd = open(argv[2], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, line, (size_t)n) != n)
		return 1;
	close(fd);
	return 0;
}
