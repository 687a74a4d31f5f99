/* A bound on what regcomp will build (see regex_check.h): one pass over the pattern with a
 * stack of open groups, each tracking its size so far and the size of its last item, which a
 * following repetition multiplies. */
#include "common/regex_check.h"
#include "common/error.h"

#include <string.h>

#define MAX_DEPTH 64

struct level {
	double total; /* this group's size so far */
	double last;  /* the size of its last item (what a repetition repeats); 0: none */
};

static int too_complex(const char *pattern, const char *why, size_t at)
{
	return cp_error("'%.100s%s' is too complex to compile safely: %s at offset %zu; "
	                "simplify it",
	                pattern, strlen(pattern) > 100 ? "..." : "", why, at);
}

/* Parses {m}, {m,} or {m,n} at p (just past '{'); the factor it multiplies by, or -1 when it
 * is not a valid bound (regcomp reports that). Sets *end past '}'. */
static double bound_factor(const char *p, const char **end)
{
	double m = 0, n = -1;
	int digits = 0;
	while (*p >= '0' && *p <= '9') {
		m = m * 10 + (*p++ - '0');
		digits++;
		if (m > 1e6)
			return 1e9;
	}
	if (!digits)
		return -1;
	if (*p == ',') {
		p++;
		if (*p >= '0' && *p <= '9') {
			n = 0;
			while (*p >= '0' && *p <= '9') {
				n = n * 10 + (*p++ - '0');
				if (n > 1e6)
					return 1e9;
			}
		} else {
			n = m + 1; /* {m,}: m copies and a star */
		}
	}
	if (*p != '}')
		return -1;
	*end = p + 1;
	return (n > m ? n : m) + 1;
}

int regex_check(const char *pattern)
{
	size_t len = strlen(pattern);
	if (len > REGEX_MAX_LEN)
		return too_complex(pattern, "longer than 1024 bytes", REGEX_MAX_LEN);
	struct level st[MAX_DEPTH];
	int depth = 0;
	st[0] = (struct level){0, 0};
	for (const char *p = pattern; *p;) {
		size_t at = (size_t)(p - pattern);
		struct level *l = &st[depth];
		double factor = 0;
		switch (*p) {
		case '\\':
			p += p[1] ? 2 : 1;
			l->last = 1;
			l->total += 1;
			break;
		case '[': {
			/* A bracket expression is one atom: skip to its closing ']'. */
			const char *q = p + 1;
			if (*q == '^')
				q++;
			if (*q == ']')
				q++;
			while (*q && *q != ']') {
				if (*q == '[' && (q[1] == ':' || q[1] == '.' || q[1] == '=')) {
					const char *close = strchr(q + 2, q[1]);
					while (close && close[1] != ']')
						close = strchr(close + 1, q[1]);
					q = close ? close + 2 : q + 1;
				} else {
					q++;
				}
			}
			p = *q ? q + 1 : q;
			l->last = 1;
			l->total += 1;
			break;
		}
		case '(':
			if (depth + 1 >= MAX_DEPTH)
				return too_complex(pattern, "groups nested more than 64 deep", at);
			st[++depth] = (struct level){0, 0};
			p++;
			break;
		case ')':
			if (depth == 0) { /* unmatched: an ordinary character in ERE */
				l->last = 1;
				l->total += 1;
			} else {
				double size = st[depth].total + 1;
				depth--;
				st[depth].last = size;
				st[depth].total += size;
			}
			p++;
			break;
		case '|':
			l->last = 0;
			l->total += 1;
			p++;
			break;
		case '*':
		case '+':
		case '?':
			factor = 2;
			p++;
			break;
		case '{': {
			const char *end = NULL;
			factor = bound_factor(p + 1, &end);
			if (factor < 0) { /* not a bound: regcomp decides */
				factor = 0;
				l->last = 1;
				l->total += 1;
				p++;
			} else {
				p = end;
			}
			break;
		}
		default:
			l->last = 1;
			l->total += 1;
			p++;
			break;
		}
		if (factor > 0 && l->last > 0) {
			double grown = l->last * factor;
			l->total += grown - l->last;
			l->last = grown;
		}
		if (l->total > REGEX_MAX_COST)
			return too_complex(pattern, "repetitions expand it beyond 20000 atoms", at);
	}
	/* Unclosed groups still count (regcomp rejects them anyway). */
	double total = 0;
	for (int d = depth; d >= 0; d--)
		total += st[d].total;
	if (total > REGEX_MAX_COST)
		return too_complex(pattern, "repetitions expand it beyond 20000 atoms", len);
	return 0;
}

int regex_compile(regex_t *re, const char *pattern, int cflags)
{
	if (regex_check(pattern) < 0)
		return -1;
	int rc = regcomp(re, pattern, cflags | REG_EXTENDED);
	if (rc) {
		char msg[160];
		regerror(rc, re, msg, sizeof(msg));
		return cp_error("'%.100s' is not a valid regular expression: %s", pattern, msg);
	}
	return 0;
}
