/* Diagnostics to stderr for cli/ and the runner: a "ciprof: " prefix, verbosity levels and
 * colour only on a terminal without NO_COLOR. Library code reports errors through cp_error. */
#ifndef CP_LOG_H
#define CP_LOG_H

enum log_level { LOG_QUIET = -1, LOG_NORMAL = 0, LOG_VERBOSE = 1, LOG_DEBUG = 2 };

void log_set_level(int level);
int log_level(void);
/* Whether stderr may be coloured: a terminal, and NO_COLOR unset or empty. */
int log_use_color(void);

void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));    /* NORMAL */
void log_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* VERBOSE */
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));   /* DEBUG */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));    /* always */
void log_errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));  /* always */

#endif
