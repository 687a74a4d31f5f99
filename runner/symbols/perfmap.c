/* perf map files (/tmp/perf-PID.map): the text format JITs write so profilers can name their
 * code, one "START SIZE NAME" line per function, hex numbers, a name that may hold spaces.
 * Parsed into an array sorted by start; lookups binary-search it. */
#include "common/search.h"
#include "runner/symbols/symbolize.h"

#include "common/error.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Parses one hex field of [*p, end) with an optional 0x; returns 0 or -1 (not a number). */
static int parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	const char *digits = s;
	uint64_t v = 0;
	while (s < end && !is_blank(*s)) {
		int d = hex_digit_value(*s);
		if (d < 0 || v > (UINT64_MAX >> 4))
			return -1;
		v = (v << 4) | (uint64_t)d;
		s++;
	}
	if (s == digits)
		return -1;
	*out = v;
	*p = s;
	return 0;
}

/* Length of the field at p (up to a blank or end), clipped for error messages. */
static int field_len(const char *p, const char *end)
{
	const char *q = p;
	while (q < end && !is_blank(*q) && q - p < 32)
		q++;
	return (int)(q - p);
}

/* Parses one line [p, end) (no newline) into m; 0, 1 for a blank line, or -1 with cp_error. */
static int parse_line(struct perfmap *m, const char *p, const char *end, const char *name,
                      size_t lineno)
{
	uint64_t start, size;
	if (end > p && end[-1] == '\r')
		end--;
	while (p < end && is_blank(*p))
		p++;
	if (p == end)
		return 1;
	if (memchr(p, '\0', (size_t)(end - p)))
		return cp_error("%s:%zu: NUL byte in line", name, lineno);
	if (parse_hex(&p, end, &start) < 0)
		return cp_error("%s:%zu: bad hex start address '%.*s'", name, lineno,
		                field_len(p, end), p);
	while (p < end && is_blank(*p))
		p++;
	if (p == end)
		return cp_error("%s:%zu: missing size after the start address", name, lineno);
	if (parse_hex(&p, end, &size) < 0)
		return cp_error("%s:%zu: bad hex size '%.*s'", name, lineno, field_len(p, end), p);
	while (p < end && is_blank(*p))
		p++;
	while (end > p && is_blank(end[-1]))
		end--;
	if (p == end)
		return cp_error("%s:%zu: missing name after the size", name, lineno);
	if (size > UINT64_MAX - start)
		return cp_error("%s:%zu: range 0x%llx+0x%llx overflows the address space", name,
		                lineno, (unsigned long long)start, (unsigned long long)size);
	ALLOC_GROW(m->entries, m->n + 1, m->alloc);
	struct perfmap_entry *e = &m->entries[m->n++];
	e->start = start;
	e->size = size;
	size_t len = (size_t)(end - p);
	if (len <= PERFMAP_NAME_MAX) {
		e->name = xstrndup(p, len);
		return 0;
	}
	/* Cut before a UTF-8 continuation byte never splits a character. */
	size_t keep = PERFMAP_NAME_MAX - 3;
	while (keep > 0 && ((unsigned char)p[keep] & 0xc0) == 0x80)
		keep--;
	e->name = xmalloc(keep + 4);
	memcpy(e->name, p, keep);
	memcpy(e->name + keep, "\xe2\x80\xa6", 4); /* U+2026 and the NUL */
	return 0;
}

/* Stable merge sort by start, so that among equal starts the file order survives. */
static void sort_entries(struct perfmap_entry *a, struct perfmap_entry *tmp, size_t n)
{
	if (n < 2)
		return;
	size_t half = n / 2;
	sort_entries(a, tmp, half);
	sort_entries(a + half, tmp, n - half);
	if (a[half - 1].start <= a[half].start)
		return;
	size_t i = 0, j = half, k = 0;
	while (i < half && j < n)
		tmp[k++] = a[j].start < a[i].start ? a[j++] : a[i++];
	while (i < half)
		tmp[k++] = a[i++];
	while (j < n)
		tmp[k++] = a[j++];
	memcpy(a, tmp, n * sizeof(*a));
}

/* Sorts, keeps only the last of entries with equal starts, and records the largest size. */
static void finish(struct perfmap *m)
{
	if (m->n > 1) {
		struct perfmap_entry *tmp = xcalloc(m->n, sizeof(*tmp));
		sort_entries(m->entries, tmp, m->n);
		free(tmp);
	}
	size_t out = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (out && m->entries[out - 1].start == m->entries[i].start) {
			free(m->entries[out - 1].name);
			m->entries[out - 1] = m->entries[i];
			continue;
		}
		m->entries[out++] = m->entries[i];
	}
	m->n = out;
	m->max_size = 0;
	for (size_t i = 0; i < m->n; i++)
		if (m->entries[i].size > m->max_size)
			m->max_size = m->entries[i].size;
}

static int parse(struct perfmap *m, const char *text, size_t len, const char *name, int lenient)
{
	const char *p = text, *end = text + len;
	size_t lineno = 0;
	int ret = 0;
	char first_error[1024] = "";
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		lineno++;
		if (parse_line(m, p, eol, name, lineno) < 0) {
			if (!lenient) {
				ret = -1;
				break;
			}
			if (!ret)
				snprintf(first_error, sizeof(first_error), "%s", cp_last_error());
			ret = -1;
		}
		p = nl ? nl + 1 : end;
	}
	finish(m);
	if (ret < 0 && lenient)
		cp_error("%s", first_error);
	return ret;
}

int perfmap_parse(struct perfmap *m, const char *text, size_t len, const char *name)
{
	return parse(m, text, len, name, 0);
}

int perfmap_parse_lenient(struct perfmap *m, const char *text, size_t len, const char *name)
{
	return parse(m, text, len, name, 1);
}

const struct perfmap_entry *perfmap_lookup(const struct perfmap *m, uint64_t addr)
{
	/* The first entry starting after addr; candidates lie before it. */
	size_t lo = cp_first_above(m->entries, m->n, sizeof(*m->entries),
	                           offsetof(struct perfmap_entry, start), addr);
	/* Walk back over entries that could still reach addr (overlaps are rare). */
	for (size_t i = lo; i-- > 0;) {
		const struct perfmap_entry *e = &m->entries[i];
		if (addr - e->start >= m->max_size)
			break;
		if (addr - e->start < e->size)
			return e;
	}
	return NULL;
}

void perfmap_release(struct perfmap *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->entries[i].name);
	free(m->entries);
	memset(m, 0, sizeof(*m));
}
