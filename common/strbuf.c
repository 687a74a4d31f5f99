/* Growable string buffer (see strbuf.h). */
#include "common/strbuf.h"
#include "common/error.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

char strbuf_empty[1];

void strbuf_init(struct strbuf *sb, size_t max)
{
	sb->buf = strbuf_empty;
	sb->len = 0;
	sb->alloc = 0;
	sb->max = max;
}

void strbuf_release(struct strbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	strbuf_init(sb, sb->max);
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->alloc)
		sb->buf[0] = '\0';
}

static int strbuf_grow(struct strbuf *sb, size_t extra)
{
	size_t need = st_add(st_add(sb->len, extra), 1);
	if (sb->max && need - 1 > sb->max)
		return -1;
	if (need <= sb->alloc)
		return 0;
	char *old = sb->alloc ? sb->buf : NULL;
	size_t alloc = sb->alloc;
	sb->buf = grow_array(old, 1, need, &alloc);
	if (!sb->alloc)
		sb->buf[0] = '\0';
	sb->alloc = alloc;
	return 0;
}

int strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	if (strbuf_grow(sb, len) < 0)
		return -1;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int strbuf_addstr(struct strbuf *sb, const char *s)
{
	return strbuf_add(sb, s, strlen(s));
}

int strbuf_addch(struct strbuf *sb, int c)
{
	char ch = (char)c;
	return strbuf_add(sb, &ch, 1);
}

int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	int n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0 || strbuf_grow(sb, (size_t)n) < 0)
		return -1;
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	sb->len += (size_t)n;
	return 0;
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
	return r;
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	char *p = sb->alloc ? sb->buf : xstrdup("");
	if (len)
		*len = sb->len;
	strbuf_init(sb, sb->max);
	return p;
}

int strbuf_read_file(struct strbuf *sb, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return cp_error_errno("cannot open %s", path);
	char tmp[65536];
	size_t n;
	int ret = 0;
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0) {
		if (strbuf_add(sb, tmp, n) < 0) {
			ret = cp_error("%s: larger than the %zu bytes allowed", path, sb->max);
			goto out;
		}
	}
	if (ferror(f))
		ret = cp_error_errno("cannot read %s", path);
out:
	fclose(f);
	return ret;
}

int hex_digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
