/* Library error reporting: functions return 0 or a negative code and leave a message here;
 * only cli/ prints it. The message is thread-local. */
#ifndef CP_ERROR_H
#define CP_ERROR_H

/* Records a message (lower case, names the subject, says what to do) and returns -1. */
int cp_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, appending ": strerror(errno)" for the errno current at the call. */
int cp_error_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last message of this thread; "" when none. Borrowed, valid until the next cp_error. */
const char *cp_last_error(void);
void cp_clear_error(void);

#endif
