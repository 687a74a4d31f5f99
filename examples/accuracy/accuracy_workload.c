/* accuracy_workload: burns known amounts of CPU in known functions, spread over a parent
 * process, a forked child, a thread and a program exec'd through `sh -c`, and writes what
 * each really used (measured with the thread CPU clock) to a truth file. A profiler that
 * samples the whole tree must find each burn_* function (with its spin_* helper below it)
 * in the same shares as the truth file. tests/integration/test_accuracy.sh checks that.
 *
 *   accuracy_workload --truth FILE [--scale F] [--sequential] [--fixed-work]
 *
 * Truth file: one line per role, "burn_<role> <cpu seconds>", each appended with a single
 * write() so concurrent roles never interleave. The targets are parent 0.8 s, child 0.5 s,
 * thread 0.3 s and exec 0.4 s of CPU, times --scale. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Iterations per call of a spin helper: a fraction of a millisecond, so the thread CPU clock
 * (a system call, invisible to a user-only profile) is read rarely. */
#define SPIN_CHUNK 200000
/* Chunks per CPU-second on an idle 2-core CI machine, for --fixed-work. */
#define CHUNKS_PER_SECOND 3050

static const char *truth_path;
static double scale = 1.0;
static int fixed_work;

/* Every spin result lands here so the loops cannot be optimised away. */
static volatile uint64_t sink;

/* Folds a spin result. Calling it (not as a tail call: its result is stored afterwards)
 * makes each spin helper a non-leaf function. GCC 12 omits the frame pointer of a leaf
 * function that needs no stack frame even under -mno-omit-leaf-frame-pointer, which would
 * drop the helper's caller (burn_*) from every frame-pointer call chain. */
__attribute__((noipa)) static uint64_t finish(uint64_t x)
{
	return x ^ (x >> 31);
}

/* The spin helpers differ in their constants, and noipa keeps the compiler from inlining,
 * cloning or merging them, so each appears in stacks under its own name. */
__attribute__((noipa)) static void spin_parent(uint64_t n)
{
	uint64_t x = sink | 1;
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	sink = finish(x);
}

__attribute__((noipa)) static void spin_child(uint64_t n)
{
	uint64_t x = sink | 3;
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 11;
		x ^= x >> 9;
		x ^= x << 19;
	}
	sink = finish(x);
}

__attribute__((noipa)) static void spin_thread(uint64_t n)
{
	uint64_t x = sink | 5;
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 7;
		x ^= x >> 11;
		x ^= x << 23;
	}
	sink = finish(x);
}

__attribute__((noipa)) static void spin_exec(uint64_t n)
{
	uint64_t x = sink | 7;
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 5;
		x ^= x >> 15;
		x ^= x << 27;
	}
	sink = finish(x);
}

static double thread_cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "accuracy_workload: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Appends "name seconds\n" to the truth file in one write(). */
static void record(const char *name, double seconds)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "%s %.6f\n", name, seconds);
	int fd = open(truth_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		die(truth_path);
	if (write(fd, line, (size_t)n) != n)
		die("cannot write the truth file");
	close(fd);
}

/* Whether a burn_* loop that started at thread CPU time t0 and ran `chunks` spin chunks is
 * done: once the thread has used `target` CPU seconds, or with --fixed-work once it has run
 * the number of chunks an idle machine runs in `target` seconds (fixed work, so that a
 * profiler's cost inside the task shows up as more CPU time). */
static int finished(double t0, double target, uint64_t chunks)
{
	if (fixed_work)
		return (double)chunks >= target * CHUNKS_PER_SECOND;
	return thread_cpu_seconds() - t0 >= target;
}

/* Each burn_* spins until finished() and returns the CPU time it measured, from its first
 * instruction of work to its last. */
__attribute__((noipa)) static double burn_parent(double target)
{
	double t0 = thread_cpu_seconds();
	uint64_t chunks = 0;
	do
		spin_parent(SPIN_CHUNK);
	while (!finished(t0, target, ++chunks));
	return thread_cpu_seconds() - t0;
}

__attribute__((noipa)) static double burn_child(double target)
{
	double t0 = thread_cpu_seconds();
	uint64_t chunks = 0;
	do
		spin_child(SPIN_CHUNK);
	while (!finished(t0, target, ++chunks));
	return thread_cpu_seconds() - t0;
}

__attribute__((noipa)) static double burn_thread(double target)
{
	double t0 = thread_cpu_seconds();
	uint64_t chunks = 0;
	do
		spin_thread(SPIN_CHUNK);
	while (!finished(t0, target, ++chunks));
	return thread_cpu_seconds() - t0;
}

__attribute__((noipa)) static double burn_exec(double target)
{
	double t0 = thread_cpu_seconds();
	uint64_t chunks = 0;
	do
		spin_exec(SPIN_CHUNK);
	while (!finished(t0, target, ++chunks));
	return thread_cpu_seconds() - t0;
}

static void *thread_main(void *arg)
{
	record("burn_thread", burn_thread(0.3 * scale));
	return arg;
}

/* Forks a child that burns in burn_child and exits. */
static pid_t start_child(void)
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		record("burn_child", burn_child(0.5 * scale));
		_exit(0);
	}
	return pid;
}

/* Forks a child that execs `sh -c 'exec "$0" "$@"' SELF --role exec ...`: an exec chain
 * (this program, then sh, then this program again) whose last program burns in burn_exec. */
static pid_t start_exec(const char *self)
{
	char scale_arg[32];
	snprintf(scale_arg, sizeof(scale_arg), "%.17g", scale);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "exec \"$0\" \"$@\"", self, "--role", "exec",
		      "--truth", truth_path, "--scale", scale_arg,
		      fixed_work ? "--fixed-work" : (char *)NULL, (char *)NULL);
		fprintf(stderr, "accuracy_workload: cannot run /bin/sh: %s\n", strerror(errno));
		_exit(127);
	}
	return pid;
}

static int reap(pid_t pid, const char *role)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	fprintf(stderr, "accuracy_workload: the %s role failed (status 0x%x)\n", role, status);
	return -1;
}

static void usage(FILE *out)
{
	fputs("usage: accuracy_workload --truth FILE [--scale F] [--sequential] [--fixed-work]\n"
	      "Burns CPU in burn_parent (0.8 s), a forked child's burn_child (0.5 s), a thread's\n"
	      "burn_thread (0.3 s) and an exec'd program's burn_exec (0.4 s), each times F, and\n"
	      "appends 'function seconds' lines with the CPU time each really used to FILE.\n"
	      "--sequential runs the roles one after another instead of all at once.\n"
	      "--fixed-work runs a fixed number of loop iterations per role (as many as an idle\n"
	      "machine runs in its target time) instead of stopping at the target CPU time.\n",
	      out);
}

int main(int argc, char **argv)
{
	const char *role = NULL;
	int sequential = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--truth") && i + 1 < argc) {
			truth_path = argv[++i];
		} else if (!strcmp(a, "--scale") && i + 1 < argc) {
			char *end;
			scale = strtod(argv[++i], &end);
			if (*end || !(scale > 0 && scale <= 1000)) {
				fprintf(stderr,
				        "accuracy_workload: --scale takes a number in (0, 1000]\n");
				return 2;
			}
		} else if (!strcmp(a, "--role") && i + 1 < argc) {
			role = argv[++i];
		} else if (!strcmp(a, "--sequential")) {
			sequential = 1;
		} else if (!strcmp(a, "--fixed-work")) {
			fixed_work = 1;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "accuracy_workload: unknown or incomplete option '%s'\n",
			        a);
			usage(stderr);
			return 2;
		}
	}
	if (!truth_path) {
		usage(stderr);
		return 2;
	}
	if (role) {
		if (strcmp(role, "exec")) {
			fprintf(stderr, "accuracy_workload: unknown role '%s'\n", role);
			return 2;
		}
		record("burn_exec", burn_exec(0.4 * scale));
		return 0;
	}

	/* Re-exec by real path: exec'ing /proc/self/exe would rename the process "exe". */
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		die("cannot read /proc/self/exe");
	self[n] = '\0';
	int fd = open(truth_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die(truth_path);
	close(fd);

	int failed = 0;
	pthread_t thread;
	if (sequential) {
		failed |= reap(start_child(), "child");
		failed |= reap(start_exec(self), "exec");
		if ((errno = pthread_create(&thread, NULL, thread_main, NULL)))
			die("pthread_create");
		pthread_join(thread, NULL);
		record("burn_parent", burn_parent(0.8 * scale));
	} else {
		pid_t child = start_child();
		pid_t exec_child = start_exec(self);
		if ((errno = pthread_create(&thread, NULL, thread_main, NULL)))
			die("pthread_create");
		record("burn_parent", burn_parent(0.8 * scale));
		pthread_join(thread, NULL);
		failed |= reap(child, "child");
		failed |= reap(exec_child, "exec");
	}
	return failed ? 1 : 0;
}
