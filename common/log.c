/* stderr diagnostics with levels; honours NO_COLOR (https://no-color.org). */
#include "common/log.h"
#include "common/escape.h"
#include "common/xalloc.h"

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

/* A message often holds names (a test's, a module's, a --junit pattern, a file's): the whole
 * message is escaped for the terminal, so none can colour the screen or start a "::" workflow
 * command in a CI log. Only the tag's colour, ours, reaches stderr raw. */
static void emit(const char *tag, const char *color, const char *fmt, va_list ap)
{
	int c = color && log_use_color();
	struct strbuf out = STRBUF_INIT;
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n >= 0) {
		char *raw = xmalloc((size_t)n + 1);
		vsnprintf(raw, (size_t)n + 1, fmt, ap);
		esc_append(&out, raw, ESC_TERM);
		free(raw);
	}
	fputs("ciprof: ", stderr);
	if (tag)
		fprintf(stderr, "%s%s%s", c ? color : "", tag, c ? "\033[0m" : "");
	fputs(out.buf, stderr);
	fputc('\n', stderr);
	strbuf_release(&out);
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
