/* stderr diagnostics with levels; honours NO_COLOR (https://no-color.org). */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int level = LOG_NORMAL;

void log_set_level(int l)
{
	level = l;
}

int log_level(void)
{
	return level;
}

int log_use_color(void)
{
	const char *nc = getenv("NO_COLOR");
	if (nc && *nc)
		return 0;
	return isatty(STDERR_FILENO);
}

static void emit(const char *tag, const char *color, const char *fmt, va_list ap)
{
	int c = color && log_use_color();
	fputs("ciprof: ", stderr);
	if (tag)
		fprintf(stderr, "%s%s%s", c ? color : "", tag, c ? "\033[0m" : "");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

#define LOG_AT(min, tag, color)                                                                    \
	do {                                                                                       \
		if (level < (min))                                                                 \
			return;                                                                    \
		va_list ap;                                                                        \
		va_start(ap, fmt);                                                                 \
		emit(tag, color, fmt, ap);                                                         \
		va_end(ap);                                                                        \
	} while (0)

void log_info(const char *fmt, ...)
{
	LOG_AT(LOG_NORMAL, NULL, NULL);
}

void log_verbose(const char *fmt, ...)
{
	LOG_AT(LOG_VERBOSE, NULL, NULL);
}

void log_debug(const char *fmt, ...)
{
	LOG_AT(LOG_DEBUG, "debug: ", NULL);
}

void log_warn(const char *fmt, ...)
{
	LOG_AT(LOG_QUIET, "warning: ", "\033[33m");
}

void log_errmsg(const char *fmt, ...)
{
	LOG_AT(LOG_QUIET, "error: ", "\033[31m");
}
