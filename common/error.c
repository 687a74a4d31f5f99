/* Thread-local last-error message, set by library code and printed by cli/. */
#include "common/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[1024];

/* Callers often wrap the previous message (cp_error("%s: %s", path, cp_last_error())):
 * format into a scratch buffer first, since vsnprintf must not read what it writes. */
int cp_error(const char *fmt, ...)
{
	char msg[sizeof(last_error)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(last_error, msg, sizeof(msg));
	return -1;
}

int cp_error_errno(const char *fmt, ...)
{
	int saved = errno;
	char msg[sizeof(last_error)];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s", strerror(saved));
	memcpy(last_error, msg, sizeof(msg));
	errno = saved;
	return -1;
}

const char *cp_last_error(void)
{
	return last_error;
}

void cp_clear_error(void)
{
	last_error[0] = '\0';
}
