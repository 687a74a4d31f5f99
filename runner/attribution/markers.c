/* Test-runner output markers (see markers.h). Lines over 64 KiB are cut: a marker is short. */
#include "runner/attribution/markers.h"
#include "common/xalloc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE 65536

void markers_init(struct markers *m)
{
	memset(m, 0, sizeof(*m));
	strbuf_init(&m->line, MAX_LINE);
}

void markers_release(struct markers *m)
{
	strbuf_release(&m->line);
	free(m->open_partial);
	memset(m, 0, sizeof(*m));
}

static int starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* Copies the name at s, stopping at end or at the first of stops, trimming spaces. */
static char *name_of(const char *s, const char *stops)
{
	while (*s == ' ')
		s++;
	size_t n = strcspn(s, stops);
	while (n && s[n - 1] == ' ')
		n--;
	return n ? xstrndup(s, n) : NULL;
}

/* Whether s[0..n) is a duration as runners print it: "12 ms" (GoogleTest), "0.00s" (go). */
static int is_duration(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && (isdigit((unsigned char)s[i]) || s[i] == '.'))
		i++;
	if (!i)
		return 0;
	if (i < n && s[i] == ' ')
		i++;
	return (n - i == 2 && !strncmp(s + i, "ms", 2)) || (n - i == 1 && s[i] == 's');
}

/*
 * The test named by a result line's rest: "Suite.Name (12 ms)", "TestX/case_(a) (0.00s)",
 * "Suite/P.Name/0, where GetParam() = 4 (0 ms)". The duration at the end and GoogleTest's
 * parameter note are not part of the name, which may itself contain '(' or ','.
 */
static char *result_name(const char *s)
{
	while (*s == ' ')
		s++;
	size_t n = strlen(s);
	while (n && s[n - 1] == ' ')
		n--;
	if (n && s[n - 1] == ')') {
		for (size_t i = n - 1; i-- > 1;) {
			if (s[i] == '(' && s[i - 1] == ' ') {
				if (is_duration(s + i + 1, n - 1 - (i + 1)))
					n = i - 1;
				break;
			}
		}
	}
	const char *where = strstr(s, ", where ");
	if (where && (size_t)(where - s) < n)
		n = (size_t)(where - s);
	while (n && s[n - 1] == ' ')
		n--;
	return n ? xstrndup(s, n) : NULL;
}

/* "[ RUN      ] x" style brackets: returns the text after "] " when the bracket's word is tag. */
static const char *bracket(const char *s, const char *tag)
{
	if (s[0] != '[')
		return NULL;
	const char *close = strchr(s, ']');
	if (!close)
		return NULL;
	const char *w = s + 1;
	while (*w == ' ')
		w++;
	size_t n = strlen(tag);
	if (strncmp(w, tag, n))
		return NULL;
	for (const char *p = w + n; p < close; p++)
		if (*p != ' ')
			return NULL;
	return close[1] == ' ' ? close + 2 : NULL;
}

/* Called on every change of an incomplete line: runners that print the name first. */
static void partial_line(struct markers *m, struct attrib *a, uint64_t t)
{
	if (m->begun)
		return;
	const char *s = m->line.buf;
	char *name = NULL;
	if (starts(s, "test ") && strstr(s, " ... ")) {
		/* cargo test --test-threads=1: "test path::name ... " then the result */
		name = xstrndup(s + 5, (size_t)(strstr(s, " ... ") - (s + 5)));
	} else if (strchr(s, ' ') && s[0] != ' ') {
		/* pytest -v: "path/test_x.py::test_y " then PASSED/FAILED... */
		const char *sp = strchr(s, ' ');
		const char *py = strstr(s, ".py::");
		if (py && py < sp)
			name = xstrndup(s, (size_t)(sp - s));
	}
	if (!name)
		return;
	attrib_window_begin(a, name, t);
	m->begun = 1;
	free(m->open_partial);
	m->open_partial = name;
}

static void complete_line(struct markers *m, struct attrib *a, uint64_t t)
{
	const char *s = m->line.buf;
	const char *rest;
	char *name = NULL;
	m->lines++;
	if (m->open_partial) {
		attrib_window_end(a, m->open_partial, t);
		free(m->open_partial);
		m->open_partial = NULL;
	} else if ((rest = bracket(s, "RUN"))) {
		if ((name = name_of(rest, "")))
			attrib_window_begin(a, name, t);
	} else if ((rest = bracket(s, "OK")) || (rest = bracket(s, "FAILED")) ||
	           (rest = bracket(s, "SKIPPED")) || (rest = bracket(s, "ERROR"))) {
		/* "(12 ms)" follows in GoogleTest; its summary lists FAILED tests again, which
		 * end nothing (attrib_window_end ignores tests with no open window here). */
		if ((name = result_name(rest)))
			attrib_window_end(a, name, t);
	} else if (starts(s, "=== RUN ") || starts(s, "=== CONT ")) {
		if ((name = name_of(s + 8, "")))
			attrib_window_begin(a, name, t);
	} else if (starts(s, "=== PAUSE ")) {
		if ((name = name_of(s + 10, "")))
			attrib_window_end(a, name, t);
	} else {
		const char *p = s;
		while (*p == ' ')
			p++;
		if (starts(p, "--- PASS: ") || starts(p, "--- FAIL: ") || starts(p, "--- SKIP: ")) {
			if ((name = result_name(p + 10)))
				attrib_window_end(a, name, t);
		} else if (starts(s, "1..") && isdigit((unsigned char)s[3])) {
			attrib_tap_plan(a, t); /* TAP's plan: "1..N" */
		} else if (starts(s, "ok ") || starts(s, "not ok ")) {
			/* TAP: "ok 3 - name # SKIP": the test ran since the previous result. */
			const char *q = s + (s[0] == 'o' ? 3 : 7);
			char *end;
			long num = strtol(q, &end, 10);
			if (end != q) {
				while (*end == ' ' || *end == '-')
					end++;
				name = name_of(end, "#");
				if (!name)
					name = xasprintf("test %ld", num);
				attrib_tap_result(a, name, t);
			}
		}
	}
	free(name);
	strbuf_reset(&m->line);
	m->begun = 0;
}

void markers_feed(struct markers *m, struct attrib *a, const char *buf, size_t len, uint64_t t)
{
	int changed = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (m->esc == 1) {
			m->esc = c == '[' ? 2 : 0;
			continue;
		}
		if (m->esc == 2) {
			if (c >= 0x40 && c <= 0x7e)
				m->esc = 0;
			continue;
		}
		if (c == 0x1b) {
			m->esc = 1;
			continue;
		}
		if (c == '\n') {
			if (changed)
				partial_line(m, a, t);
			complete_line(m, a, t);
			changed = 0;
			continue;
		}
		if (c == '\r')
			continue;
		if (strbuf_addch(&m->line, c) == 0)
			changed = 1;
	}
	if (changed)
		partial_line(m, a, t);
}

void markers_flush(struct markers *m, struct attrib *a, uint64_t t)
{
	if (m->line.len || m->open_partial)
		complete_line(m, a, t);
}
