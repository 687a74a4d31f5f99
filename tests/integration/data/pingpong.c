/* pingpong UNITS [WORD...]: pinned to one CPU (the last one it may use), forks a child that
 * does UNITS million multiply-adds while this process wakes every 100 us until the child ends,
 * a context switch between the two at each wake-up; the WORDs are ignored (a test names
 * "ctest" there so that ciprof arms its exec doorbells from the start). At such a switch the
 * kernel swaps the two processes' perf contexts instead of rescheduling their events, and
 * their counts pairwise by the order of the contexts' event lists (test_bell_counts.sh). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void work(long n)
{
	for (long i = 0; i < n * 1000000L; i++)
		sink += (unsigned long)i * 2654435761u;
}
int main(int argc, char **argv)
{
	long units = argc > 1 ? atol(argv[1]) : 200;
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		for (int c = CPU_SETSIZE - 1; c >= 0; c--) {
			if (CPU_ISSET(c, &set)) {
				CPU_ZERO(&set);
				CPU_SET(c, &set);
				sched_setaffinity(0, sizeof(set), &set);
				break;
			}
		}
	}
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		work(units);
		_exit(0);
	}
	int status;
	while (waitpid(pid, &status, WNOHANG) == 0)
		usleep(100);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
