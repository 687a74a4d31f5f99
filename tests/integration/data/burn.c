/* burn NAME MS BURSTS: uses MS ms of CPU in BURSTS bursts with a 2 ms sleep after each (so the
 * CPU switches between it, its siblings and ctest many times), then appends "NAME SECONDS",
 * its own CPU time (getrusage: user and system), to the file $CIPROF_TRUTH. The tests of
 * test_exact_cpu.sh: ciprof's CPU seconds per test against each test's own. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burst(double seconds)
{
	double end = cpu_now() + seconds;
	while (cpu_now() < end)
		for (unsigned long i = 0; i < 20000; i++)
			sink += i * 2654435761u;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	int bursts = atoi(argv[3]);
	double each = atof(argv[2]) / 1000.0 / (bursts > 0 ? bursts : 1);
	for (int i = 0; i < bursts; i++) {
		burst(each);
		usleep(2000);
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	             (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	const char *truth = getenv("CIPROF_TRUTH");
	FILE *f = truth ? fopen(truth, "a") : NULL;
	if (!f)
		return 3;
	fprintf(f, "%s %.6f\n", argv[1], cpu);
	return fclose(f) ? 3 : 0;
}
