/* Regular expressions from .ciprof.yml are attacker-controlled (a pull request edits its own
 * config): glibc's regcomp expands repetitions, so '^t+++++++++++++++++++++art$' alone takes
 * gigabytes. Every pattern ciprof compiles goes through regex_compile, which refuses a pattern
 * whose expanded size would be large before regcomp sees it. */
#ifndef CP_REGEX_CHECK_H
#define CP_REGEX_CHECK_H

#include <regex.h>
#include <stddef.h>

/* Longest pattern accepted, in bytes, and the largest estimated expansion (in atoms, after
 * repetitions are multiplied out as regcomp does). */
#define REGEX_MAX_LEN  1024
#define REGEX_MAX_COST 20000
/* The most repetitions nested in one another ("((a+)*)?" is 3; "a++" stacks 2). */
#define REGEX_MAX_NESTED_REPEATS 3

/*
 * Estimates the size regcomp would build for POSIX extended pattern (each repetition
 * multiplies what it repeats: x+ and x* and x? by 2, x{m,n} by n + 1) and how deeply
 * repetitions nest (glibc's closure computation is exponential in that when the repeated part
 * can match nothing: '()++++++++++' takes 2.6 s). 0 when within the limits, else -1 with cp_error
 * saying what is too big and where ("'PAT' is too complex to compile safely: ... at offset N").
 * Never looks past the terminating NUL.
 */
int regex_check(const char *pattern);

/* regex_check, then regcomp(re, pattern, cflags | REG_EXTENDED). 0, or -1 with cp_error
 * ("'PAT' is not a valid regular expression: ..." or regex_check's message); on -1, re needs
 * no regfree. */
int regex_compile(regex_t *re, const char *pattern, int cflags);

#endif
