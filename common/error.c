/* Thread-local last-error message, set by library code and printed by cli/. */
#include "common/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[1024];

int cp_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return -1;
}

int cp_error_errno(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(last_error))
		snprintf(last_error + n, sizeof(last_error) - (size_t)n, ": %s", strerror(saved));
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
