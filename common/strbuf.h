/* A growable, always NUL-terminated byte buffer, with an optional maximum size for
 * untrusted input (appending past it fails instead of growing). */
#ifndef CP_STRBUF_H
#define CP_STRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

struct strbuf {
	char *buf; /* owned; "" (static) until the first append */
	size_t len;
	size_t alloc;
	size_t max; /* 0: unlimited */
};

#define STRBUF_INIT                                                                                \
	{                                                                                          \
		.buf = strbuf_empty, .len = 0, .alloc = 0, .max = 0                                \
	}
extern char strbuf_empty[];

void strbuf_init(struct strbuf *sb, size_t max);
void strbuf_release(struct strbuf *sb);
void strbuf_reset(struct strbuf *sb);
/* Each returns 0, or -1 (and appends nothing) when max would be exceeded. */
int strbuf_add(struct strbuf *sb, const void *data, size_t len);
int strbuf_addstr(struct strbuf *sb, const char *s);
int strbuf_addch(struct strbuf *sb, int c);
int strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
/* Takes ownership of the buffer; sb is reset. Never NULL. */
char *strbuf_detach(struct strbuf *sb, size_t *len);
/* Reads the whole file into sb; 0 or -1 with cp_error set. */
int strbuf_read_file(struct strbuf *sb, const char *path);
/* The value of the hex digit c (either case), or -1: for the parsers of hex text. */
int hex_digit_value(char c);

#endif
