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
	int last_q;   /* how many repetitions nest in its last item ("a+" 1, "(a+)*" 2) */
	int max_q;    /* the most of any item of the group */
};

/* One more atom (a character, a bracket expression, an escape) in l. */
static void atom(struct level *l)
{
	l->last = 1;
	l->last_q = 0;
	l->total += 1;
}

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
		if (m > 1e6) {
			*end = p; /* far over any limit: the rest need not be read */
			return 1e9;
		}
	}
	if (!digits)
		return -1;
	if (*p == ',') {
		p++;
		if (*p >= '0' && *p <= '9') {
			n = 0;
			while (*p >= '0' && *p <= '9') {
				n = n * 10 + (*p++ - '0');
				if (n > 1e6) {
					*end = p;
					return 1e9;
				}
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
	st[0] = (struct level){0, 0, 0, 0};
	for (const char *p = pattern; *p;) {
		size_t at = (size_t)(p - pattern);
		struct level *l = &st[depth];
		double factor = 0;
		switch (*p) {
		case '\\':
			p += p[1] ? 2 : 1;
			atom(l);
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
			atom(l);
			break;
		}
		case '(':
			if (depth + 1 >= MAX_DEPTH)
				return too_complex(pattern, "groups nested more than 64 deep", at);
			st[++depth] = (struct level){0, 0, 0, 0};
			p++;
			break;
		case ')':
			if (depth == 0) { /* unmatched: an ordinary character in ERE */
				atom(l);
			} else {
				double size = st[depth].total + 1;
				int q = st[depth].max_q;
				depth--;
				st[depth].last = size;
				st[depth].last_q = q;
				if (q > st[depth].max_q)
					st[depth].max_q = q;
				st[depth].total += size;
			}
			p++;
			break;
		case '|':
			l->last = 0;
			l->last_q = 0;
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
				atom(l);
				p++;
			} else {
				p = end;
			}
			break;
		}
		default:
			atom(l);
			p++;
			break;
		}
		if (factor > 0 && l->last > 0) {
			double grown = l->last * factor;
			l->total += grown - l->last;
			l->last = grown;
			/* Nested (or stacked: "a++") repetitions of something that can match
			 * nothing make glibc's closure computation exponential: '()++++++++++'
			 * takes 2.6 s and 80 MB, eleven nested '(...)+' 14 s, with few atoms.
			 * No real pattern nests more than a few. */
			if (++l->last_q > REGEX_MAX_NESTED_REPEATS)
				return too_complex(pattern, "repetitions nested more than 3 deep",
				                   at);
			if (l->last_q > l->max_q)
				l->max_q = l->last_q;
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
