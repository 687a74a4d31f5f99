/* Names come from symbol tables, test output, branch names and JUnit files: every one is
 * attacker-controlled. These functions make a name safe for one kind of output; every name a
 * command prints passes through the one for where it lands (report/ has Markdown, HTML and
 * SVG on top of the same cleaning, report_escape). */
#ifndef CP_ESCAPE_H
#define CP_ESCAPE_H

#include "common/strbuf.h"

#include <stddef.h>
#include <stdint.h>

enum esc_kind {
	/* Valid UTF-8 only: each byte that is not part of a valid, shortest-form sequence
	 * becomes U+FFFD. For JSON, whose encoder escapes the rest. */
	ESC_UTF8,
	/* A terminal or a CI log: valid UTF-8, and no character that acts instead of showing:
	 * C0 controls and DEL become their control pictures (ESC shows as U+241B, a newline
	 * as U+240A), C1 controls, bidi overrides and non-characters U+FFFD. No escape
	 * sequence, bell, carriage return, line break or "::" workflow command at a line's
	 * start can come out. */
	ESC_TERM,
};

/* Appends s (NUL-terminated) to out, made safe for kind. */
void esc_append(struct strbuf *out, const char *s, enum esc_kind kind);
/* The same for the n bytes at s (a NUL among them is a character like any other). */
void esc_append_len(struct strbuf *out, const char *s, size_t n, enum esc_kind kind);

/* A name as ciprof keeps it (profile_intern_name, where names enter a profile): valid UTF-8,
 * each byte that is not part of a valid, shortest-form sequence U+FFFD; at most max bytes (a
 * longer name is cut on a character boundary and ends in U+2026 "..."). Control characters
 * stay: each output escapes them its own way. Appends to out; reads at most max + 4 bytes of
 * s, so an enormous name costs no more than a short one. */
void esc_name(struct strbuf *out, const char *s, size_t len, size_t max);

/* s made safe for kind, in buf (reset first): returns buf->buf (borrowed, valid until buf
 * changes). Handy for printf("%s", esc_str(&sb, name, ESC_TERM)). */
const char *esc_str(struct strbuf *buf, const char *s, enum esc_kind kind);

/* The one UTF-8 reading step of every escaper here and in report/ (report_escape): the
 * character at s[*i] (*i < n) and *i advanced past it. A byte that does not start a valid,
 * shortest-form encoding of a Unicode scalar value is one character, U+FFFD. */
uint32_t esc_utf8_next(const char *s, size_t n, size_t *i);
/* How many characters esc_utf8_next reads in the n bytes at s. */
size_t esc_utf8_chars(const char *s, size_t n);
/* Appends code point c as UTF-8. */
void esc_utf8_put(struct strbuf *out, uint32_t c);
/* What is shown for c where characters must not act (a terminal, a code block): control
 * pictures for C0 controls and DEL, U+FFFD for C1 controls, bidi controls and
 * non-characters, c itself otherwise. report_escape uses it too. */
uint32_t esc_shown_cp(uint32_t c);
/* Whether s is valid UTF-8 throughout. */
int esc_utf8_valid(const char *s, size_t n);

#endif
