/* preload_probe MODE [ARGS]: small behaviours the LD_PRELOAD sampler must live with, for
 * tests/integration/test_preload*.sh. Built three ways: plain, static (LD_PRELOAD cannot reach
 * it) and with AddressSanitizer. Every mode burns its CPU in a function named after it, so
 * the tests can find it in the profile.
 *
 *   burn SECONDS            burn SECONDS of thread CPU time in probe_burn (up to 20 ms more)
 *   threads N SECONDS       N threads each burning SECONDS in probe_thread_burn
 *   sleepy ROUNDS           ROUNDS x (burn ~2 ms, nanosleep 1 ms, poll 1 ms, select 1 ms),
 *                           retrying EINTR; prints "sleeps N eintr M" and fails if a sleep
 *                           failed otherwise or ended early
 *   reset-signals SECONDS   set every signal to SIG_DFL and block all, then burn
 *   own-handler SECONDS     take over every unused real-time signal with a handler, check it
 *                           receives one, then burn (the sampler must step aside)
 *   exit CODE               burn 0.2 s, then exit(CODE)
 *   kill SIGNAL             burn 0.2 s, then die of SIGNAL
 *   overflow                read past a heap block (AddressSanitizer must report it)
 *   exec PROG ARGS...       execv PROG (a static program, say)
 *   clearenv-exec PROG ...  execve PROG with only PATH in its environment
 *   vfork-exec PROG ARGS... vfork, execv PROG in the child, wait
 *   spawn PROG ARGS...      posix_spawn PROG, wait */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Not a leaf (it calls fold), so that it keeps a frame pointer and its caller shows in
 * frame-pointer stacks: GCC drops the frame of a leaf that needs no stack. */
__attribute__((noipa)) static uint64_t fold(uint64_t x)
{
	return x ^ (x >> 29);
}

__attribute__((noipa)) static uint64_t mix(uint64_t x)
{
	for (int i = 0; i < 20000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return fold(x) + 1;
}

/*
 * Calls mix until the thread has used seconds of CPU time, reading its CPU clock only about
 * every 10 ms of it (the first reads size the batch of calls). Reading it every few
 * microseconds would hide the thread from its CPU-time timer on a CPU shared with another busy
 * task: the kernel checks those timers at the tick, on the thread then running, and a read of
 * the thread's CPU clock is a system call that updates the scheduler's account of it, which
 * ends a used-up time slice right there, between ticks. Such a thread was seen to get no
 * signal at all in 0.3 s of CPU (docs/preload.md); this one is the running thread at a tick
 * whenever it runs for 10 ms. Inlined, so that mix's caller on the stack is the probe_*
 * function that burns.
 */
static inline __attribute__((always_inline)) uint64_t burn_cpu(double seconds, uint64_t x)
{
	double t0 = cpu_now(), t = t0;
	long batch = 1;
	while (t - t0 < seconds) {
		double b0 = t;
		for (long i = 0; i < batch; i++)
			x = mix(x);
		t = cpu_now();
		if (t - b0 < 0.01 && batch < (1L << 30))
			batch *= 2;
	}
	return x;
}

__attribute__((noipa)) static void probe_burn(double seconds)
{
	sink = burn_cpu(seconds, sink | 1);
}

__attribute__((noipa)) static void *probe_thread_burn(void *arg)
{
	sink = burn_cpu(*(double *)arg, sink | 3);
	return NULL;
}

static int threads(int n, double seconds)
{
	pthread_t t[64];
	if (n < 1 || n > 64)
		return 2;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, probe_thread_burn, &seconds)) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}

/* Each sleep must last its full time: EINTR is retried with the time left, as careful
 * programs do; anything else fails. */
__attribute__((noipa)) static int probe_sleepy(long rounds)
{
	long sleeps = 0, eintr = 0;
	for (long r = 0; r < rounds; r++) {
		double t0 = cpu_now();
		uint64_t x = sink | 5;
		while (cpu_now() - t0 < 0.002)
			x = mix(x);
		sink = x;

		struct timespec req = {0, 1000000}, rem;
		double w0 = wall_now();
		while (nanosleep(&req, &rem) < 0) {
			if (errno != EINTR) {
				perror("nanosleep");
				return 1;
			}
			eintr++;
			req = rem;
		}
		if (wall_now() - w0 < 0.0009) {
			fprintf(stderr, "nanosleep ended early\n");
			return 1;
		}
		sleeps++;

		w0 = wall_now();
		for (;;) {
			int left = 1 - (int)((wall_now() - w0) * 1000);
			int n = poll(NULL, 0, left > 0 ? left : 0);
			if (n == 0)
				break;
			if (n < 0 && errno == EINTR) {
				eintr++;
				continue;
			}
			perror("poll");
			return 1;
		}
		sleeps++;

		struct timeval tv = {0, 1000};
		for (;;) {
			int n = select(0, NULL, NULL, NULL, &tv); /* Linux updates tv */
			if (n == 0)
				break;
			if (n < 0 && errno == EINTR) {
				eintr++;
				continue;
			}
			perror("select");
			return 1;
		}
		sleeps++;
	}
	printf("sleeps %ld eintr %ld\n", sleeps, eintr);
	return 0;
}

static volatile sig_atomic_t got;

static void on_signal(int sig)
{
	(void)sig;
	got = 1;
}

static int own_handler(double seconds)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	int mine = -1;
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++) {
		struct sigaction old;
		sigaction(sig, NULL, &old);
		if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO))
			mine = sig; /* taken by someone (the sampler): take it over */
		sigaction(sig, &sa, NULL);
	}
	if (mine < 0)
		mine = SIGRTMAX - 4;
	raise(mine);
	if (!got) {
		fprintf(stderr, "own-handler: signal %d did not reach the program's handler\n",
		        mine);
		return 1;
	}
	printf("own-handler: signal %d handled\n", mine);
	probe_burn(seconds);
	return 0;
}

static int reset_signals(double seconds)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL); /* fails harmlessly for SIGKILL, SIGSTOP, 32, 33 */
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	probe_burn(seconds);
	sigprocmask(SIG_UNBLOCK, &all, NULL);
	return 0;
}

static int wait_child(pid_t pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	extern char **environ;
	if (argc < 2) {
		fprintf(stderr, "usage: preload_probe MODE [ARGS] (see the source)\n");
		return 2;
	}
	const char *mode = argv[1];
	const char *a = argc > 2 ? argv[2] : "1";
	if (!strcmp(mode, "burn")) {
		probe_burn(atof(a));
		return 0;
	}
	if (!strcmp(mode, "threads"))
		return threads(atoi(a), argc > 3 ? atof(argv[3]) : 0.2);
	if (!strcmp(mode, "sleepy"))
		return probe_sleepy(atol(a));
	if (!strcmp(mode, "reset-signals"))
		return reset_signals(atof(a));
	if (!strcmp(mode, "own-handler"))
		return own_handler(atof(a));
	if (!strcmp(mode, "exit")) {
		probe_burn(0.2);
		exit(atoi(a));
	}
	if (!strcmp(mode, "kill")) {
		probe_burn(0.2);
		signal(atoi(a), SIG_DFL);
		raise(atoi(a));
		return 1;
	}
	if (!strcmp(mode, "overflow")) {
		char *volatile p = malloc(16);
		memset(p, 1, 16);
		volatile char v = p[16 + (argc > 5)]; /* one past the end */
		printf("read %d past the end\n", v);
		free(p);
		return 0;
	}
	if (argc < 3) {
		fprintf(stderr, "preload_probe %s: a program is needed\n", mode);
		return 2;
	}
	if (!strcmp(mode, "exec")) {
		execv(argv[2], argv + 2);
		perror(argv[2]);
		return 127;
	}
	if (!strcmp(mode, "clearenv-exec")) {
		char *env[] = {"PATH=/usr/bin:/bin", NULL};
		execve(argv[2], argv + 2, env);
		perror(argv[2]);
		return 127;
	}
	if (!strcmp(mode, "vfork-exec")) {
		pid_t pid = vfork();
		if (pid == 0) {
			execv(argv[2], argv + 2);
			_exit(127);
		}
		return pid < 0 ? 1 : wait_child(pid);
	}
	if (!strcmp(mode, "spawn")) {
		pid_t pid;
		int e = posix_spawn(&pid, argv[2], NULL, NULL, argv + 2, environ);
		if (e) {
			fprintf(stderr, "posix_spawn %s: %s\n", argv[2], strerror(e));
			return 127;
		}
		return wait_child(pid);
	}
	fprintf(stderr, "preload_probe: unknown mode '%s'\n", mode);
	return 2;
}
