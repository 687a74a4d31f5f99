/* Allocation wrappers: ciprof treats OOM as fatal, like git and tmux do. */
#include "common/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int (*xalloc_test_fail)(size_t n);

/* Whether this allocation of n bytes is to fail (a test's fault injection). */
static int fail_now(size_t n)
{
	return xalloc_test_fail && xalloc_test_fail(n);
}

void xalloc_die(size_t n)
{
	fprintf(stderr, "ciprof: out of memory allocating %zu bytes\n", n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = fail_now(n) ? NULL : malloc(n ? n : 1);
	if (!p)
		xalloc_die(n);
	return p;
}

void *xcalloc(size_t count, size_t size)
{
	void *p = fail_now(count * size) ? NULL : calloc(count ? count : 1, size ? size : 1);
	if (!p)
		xalloc_die(st_mult(count, size));
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = fail_now(n) ? NULL : realloc(p, n ? n : 1);
	if (!q)
		xalloc_die(n);
	return q;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = xmalloc(st_add(len, 1));
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		xalloc_die(0);
	char *p = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

size_t st_add(size_t a, size_t b)
{
	if (a > SIZE_MAX - b) {
		fprintf(stderr, "ciprof: size overflow: %zu + %zu\n", a, b);
		abort();
	}
	return a + b;
}

size_t st_mult(size_t a, size_t b)
{
	if (b && a > SIZE_MAX / b) {
		fprintf(stderr, "ciprof: size overflow: %zu * %zu\n", a, b);
		abort();
	}
	return a * b;
}

void *grow_array(void *arr, size_t elem, size_t need, size_t *alloc)
{
	if (need <= *alloc)
		return arr;
	size_t n = *alloc ? *alloc : 8;
	while (n < need)
		n = st_mult(n, 2);
	arr = xrealloc(arr, st_mult(n, elem));
	*alloc = n;
	return arr;
}

char *cp_xdirname(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return cp_xstrdup(".");
	return cp_xstrndup(path, slash == path ? 1 : (size_t)(slash - path));
}
