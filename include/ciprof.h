/* ciprof.h: mark which test a thread is running, so `ciprof run` attributes its CPU samples to
 * that test. Header-only and dependency-free; a no-op when the program does not run under
 * ciprof (CIPROF_CONTROL_FD unset), so it can stay in production test harnesses.
 *
 *     #include "ciprof.h"
 *     ciprof_test_begin("parser/large_input");
 *     run_the_test();
 *     ciprof_test_end("parser/large_input");
 *
 * Each call writes one line, "begin TID NAME\n" or "end TID NAME\n", to the pipe ciprof named
 * in CIPROF_CONTROL_FD, with one write() (atomic for lines under PIPE_BUF bytes, so threads and
 * processes may mark concurrently). Names longer than 1000 bytes are cut; newlines in a name
 * are written as spaces. Thread-safe; async-signal-unsafe only through getenv(). */
#ifndef CIPROF_H
#define CIPROF_H

#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline void ciprof__mark(const char *verb, const char *name)
{
	const char *env = getenv("CIPROF_CONTROL_FD");
	if (!env || !*env)
		return;
	int fd = atoi(env);
	if (fd < 0)
		return;
	char line[1100];
	long tid = (long)syscall(SYS_gettid);
	/* "VERB TID NAME\n" without stdio: small, and safe after fork. */
	size_t n = 0;
	for (const char *v = verb; *v; v++)
		line[n++] = *v;
	line[n++] = ' ';
	char digits[24];
	size_t d = 0;
	do {
		digits[d++] = (char)('0' + tid % 10);
		tid /= 10;
	} while (tid > 0 && d < sizeof(digits));
	while (d)
		line[n++] = digits[--d];
	line[n++] = ' ';
	for (size_t i = 0; name[i] && i < 1000; i++)
		line[n++] = name[i] == '\n' || name[i] == '\r' ? ' ' : name[i];
	line[n++] = '\n';
	ssize_t w = write(fd, line, n);
	(void)w;
}

/* The calling thread starts running test `name`. */
static inline void ciprof_test_begin(const char *name)
{
	ciprof__mark("begin", name);
}

/* The calling thread stops running test `name`. */
static inline void ciprof_test_end(const char *name)
{
	ciprof__mark("end", name);
}

#endif
