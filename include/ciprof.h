/* ciprof.h: mark which test a thread is running, so `ciprof run` attributes its CPU samples to
 * that test. Header-only and dependency-free; a no-op when the program does not run under
 * ciprof (CIPROF_CONTROL_FD unset), so it can stay in production test harnesses.
 *
 *     #include "ciprof.h"
 *     ciprof_test_begin("parser/large_input");
 *     run_the_test();
 *     ciprof_test_end("parser/large_input");
 *
 * Each call writes one line, "@TIME begin TID NAME\n" or "@TIME end TID NAME\n", to the pipe
 * ciprof named in CIPROF_CONTROL_FD, with one write() (atomic: lines stay under PIPE_BUF bytes,
 * so threads and processes may mark concurrently). TIME is the calling thread's CLOCK_MONOTONIC
 * in nanoseconds when it marked, so a loaded machine that delays ciprof's reading moves no
 * sample to a neighbouring test. NAME may hold any bytes: newline, carriage return and
 * backslash are written as \n, \r and \\. Names longer than CIPROF_NAME_MAX bytes are cut
 * there (on a UTF-8 character boundary), and the line says so ("@TIME~ ..."): ciprof warns.
 * `ciprof exec-test NAME -- CMD` writes "@TIME proc PID NAME" the same way. Thread-safe;
 * async-signal-unsafe only through getenv(). */
#ifndef CIPROF_H
#define CIPROF_H

#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The longest test name ciprof keeps, in bytes; longer ones are cut, with a warning. */
#define CIPROF_NAME_MAX 1024

/* Appends v in decimal to line at *n. */
static inline void ciprof__number(char *line, size_t *n, unsigned long long v)
{
	char digits[24];
	size_t d = 0;
	do {
		digits[d++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0 && d < sizeof(digits));
	while (d)
		line[(*n)++] = digits[--d];
}

static inline void ciprof__mark(const char *verb, const char *name)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts); /* first: the moment the test begins or ends */
	const char *env = getenv("CIPROF_CONTROL_FD");
	if (!env || !*env)
		return;
	int fd = atoi(env);
	if (fd < 0)
		return;
	/* "@TIME[~] VERB TID NAME\n" without stdio: small, and safe after fork. */
	char line[2 * CIPROF_NAME_MAX + 64];
	size_t n = 0, len = strlen(name);
	line[n++] = '@';
	ciprof__number(line, &n,
	               (unsigned long long)ts.tv_sec * 1000000000ULL +
	                       (unsigned long long)ts.tv_nsec);
	if (len > CIPROF_NAME_MAX) {
		line[n++] = '~';
		len = CIPROF_NAME_MAX;
		while (len > 0 && ((unsigned char)name[len] & 0xc0) == 0x80)
			len--; /* on a UTF-8 character boundary */
	}
	line[n++] = ' ';
	for (const char *v = verb; *v; v++)
		line[n++] = *v;
	line[n++] = ' ';
	ciprof__number(line, &n, (unsigned long long)syscall(SYS_gettid));
	line[n++] = ' ';
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (c == '\n' || c == '\r' || c == '\\') {
			line[n++] = '\\';
			c = c == '\n' ? 'n' : c == '\r' ? 'r' : '\\';
		}
		line[n++] = c;
	}
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
