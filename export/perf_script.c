/* Reads `perf script` text. Each sample is a header line, its call chain one frame per line
 * (leaf first, each line starting with a tab), and a blank line. The header's fields are found
 * from the timestamp outwards, since the command name may hold spaces and digits. */
#include "export/perf_script.h"
#include "common/error.h"
#include "common/xalloc.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct ps_frame {
	uint32_t function, module;
	int unknown_dso; /* the frame lies outside every mapping */
};

struct ps_state {
	struct profile *p;
	const char *name;
	size_t lineno;
	uint32_t test;
	/* the sample being read */
	int open;
	uint32_t comm;
	struct ps_frame *frames;
	size_t nframes, frames_alloc;
	/* cpu-clock periods */
	uint64_t period_sum, period_n;
};

static int is_blank(const char *s, const char *e)
{
	for (; s < e; s++)
		if (!isspace((unsigned char)*s))
			return 0;
	return 1;
}

static const char *skip_ws(const char *s, const char *e)
{
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

static const char *base_name(const char *s, const char *e)
{
	for (const char *c = e; c > s; c--)
		if (c[-1] == '/')
			return c;
	return s;
}

/* "ADDRESS SYMBOL[+0xOFF] (DSO)" from s to e, appended to the sample's frames. */
static int parse_frame(struct ps_state *st, const char *line, const char *s, const char *e)
{
	s = skip_ws(s, e);
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	const char *a = s;
	while (s < e && isxdigit((unsigned char)*s))
		s++;
	if (s == a || (s < e && *s != ' ' && *s != '\t'))
		return cp_error("%s:%zu:%zu: expected a hexadecimal address at the start of a "
		                "call-chain line",
		                st->name, st->lineno, (size_t)(a - line) + 1);
	if (st->nframes + 1 >= PROFILE_MAX_DEPTH) /* and the process's frame */
		return cp_error("%s:%zu:1: a call chain deeper than %d frames", st->name,
		                st->lineno, PROFILE_MAX_DEPTH);
	s = skip_ws(s, e);
	/* The DSO is the last " (...)" group, its parentheses balanced: perf writes a file
	 * deleted since it was mapped as "(/path (deleted))". Unbalanced, the last " (". */
	const char *sym_end = e, *dso = NULL, *dso_end = NULL;
	if (e > s && e[-1] == ')') {
		size_t depth = 0;
		for (const char *c = e - 1; c > s; c--) {
			if (*c == ')') {
				depth++;
			} else if (*c == '(' && --depth == 0) {
				if (c[-1] == ' ' || c[-1] == '\t') {
					dso = c + 1;
					dso_end = e - 1;
					sym_end = c - 1;
				}
				break;
			}
		}
		for (const char *c = e - 1; !dso && c > s; c--) {
			if (*c == '(' && (c[-1] == ' ' || c[-1] == '\t')) {
				dso = c + 1;
				dso_end = e - 1;
				sym_end = c - 1;
				break;
			}
		}
		if (!dso && *s == '(') { /* no symbol at all: "(DSO)" */
			dso = s + 1;
			dso_end = e - 1;
			sym_end = s;
		}
	}
	while (sym_end > s && isspace((unsigned char)sym_end[-1]))
		sym_end--;
	/* Drop "+0xOFFSET". */
	for (const char *c = sym_end; c > s + 2; c--) {
		if (c[-1] == 'x' && c[-2] == '0' && c - 3 > s && c[-3] == '+') {
			int hex = c < sym_end;
			for (const char *d = c; d < sym_end; d++)
				hex = hex && isxdigit((unsigned char)*d);
			if (hex)
				sym_end = c - 3;
			break;
		}
	}
	struct ps_frame f = {0};
	f.unknown_dso = !dso || (dso_end - dso == 9 && !memcmp(dso, "[unknown]", 9));
	if (sym_end > s)
		f.function = profile_intern_name_len(st->p, s, (size_t)(sym_end - s));
	else
		f.function = profile_intern(st->p, "[unknown]");
	if (!f.unknown_dso) {
		static const char deleted[] = " (deleted)";
		size_t dl = sizeof(deleted) - 1;
		if ((size_t)(dso_end - dso) > dl && !memcmp(dso_end - dl, deleted, dl))
			dso_end -= dl; /* the module is the file's name */
		const char *b = base_name(dso, dso_end);
		f.module = profile_intern_name_len(st->p, b, (size_t)(dso_end - b));
	}
	ALLOC_GROW(st->frames, st->nframes + 1, st->frames_alloc);
	st->frames[st->nframes++] = f;
	return 0;
}

/* Stores the sample read so far: COMM;root;...;leaf. The chain ends at the first caller outside
 * every mapping (a frame-pointer walk gone astray), as ciprof's own runner does. */
static void flush_sample(struct ps_state *st)
{
	if (!st->open)
		return;
	struct profile *p = st->p;
	size_t n = st->nframes;
	for (size_t i = 1; i < n; i++)
		if (st->frames[i].unknown_dso) {
			n = i;
			break;
		}
	struct profile_frame root = {.function = st->comm, .kind = PROFILE_FRAME_PROCESS};
	uint32_t node = profile_node(p, 0, profile_frame(p, &root));
	for (size_t i = n; i-- > 0;) {
		struct profile_frame f = {.function = st->frames[i].function,
		                          .module = st->frames[i].module};
		node = profile_node(p, node, profile_frame(p, &f));
	}
	profile_add(p, st->test, node, 1);
	p->stats.samples++;
	st->open = 0;
	st->nframes = 0;
}

static int all_digits(const char *s, const char *e, int allow_slash)
{
	if (s == e)
		return 0;
	for (; s < e; s++)
		if (!isdigit((unsigned char)*s) && !(allow_slash && *s == '/'))
			return 0;
	return 1;
}

/* A token: [s, e). */
struct tok {
	const char *s, *e;
};

static int parse_header(struct ps_state *st, const char *line, const char *e)
{
	struct tok t[64];
	size_t n = 0, time_at = SIZE_MAX;
	const char *c = line;
	while (n < 64) {
		c = skip_ws(c, e);
		if (c >= e)
			break;
		const char *ts = c;
		while (c < e && *c != ' ' && *c != '\t')
			c++;
		t[n] = (struct tok){ts, c};
		/* TIME: digits '.' digits ':' */
		const char *dot = memchr(ts, '.', (size_t)(c - ts));
		if (time_at == SIZE_MAX && dot && c[-1] == ':' && all_digits(ts, dot, 0) &&
		    all_digits(dot + 1, c - 1, 0)) {
			time_at = n++;
			break;
		}
		n++;
	}
	if (time_at == SIZE_MAX)
		return cp_error("%s:%zu:1: expected a sample header 'COMM PID [CPU] TIME: PERIOD "
		                "EVENT:' (perf script's default fields) or a tab-indented "
		                "call-chain line",
		                st->name, st->lineno);
	size_t k = time_at;
	if (k > 1 && t[k - 1].e - t[k - 1].s >= 3 && t[k - 1].s[0] == '[' &&
	    t[k - 1].e[-1] == ']' && all_digits(t[k - 1].s + 1, t[k - 1].e - 1, 0))
		k--; /* [CPU] */
	if (k > 1 && all_digits(t[k - 1].s, t[k - 1].e, 1))
		k--; /* PID or PID/TID */
	if (k == 0)
		st->comm = profile_intern(st->p, "[unknown]");
	else
		st->comm = profile_intern_name_len(st->p, t[0].s, (size_t)(t[k - 1].e - t[0].s));
	/* After the time: an optional period, then the event "NAME[:MODIFIERS]:". */
	c = skip_ws(t[time_at].e, e);
	const char *ps = c;
	uint64_t period = 0;
	int has_period = 0;
	while (c < e && isdigit((unsigned char)*c)) {
		unsigned d = (unsigned)(*c - '0');
		if (period > (UINT64_MAX - d) / 10)
			return cp_error("%s:%zu:%zu: period too large", st->name, st->lineno,
			                (size_t)(ps - line) + 1);
		period = period * 10 + d;
		c++;
		has_period = 1;
	}
	if (has_period && c < e && *c != ' ' && *c != '\t') {
		c = ps; /* an event name starting with digits */
		has_period = 0;
	}
	c = skip_ws(c, e);
	const char *ev = c;
	while (c < e && *c != ' ' && *c != '\t')
		c++;
	if (c == ev || c[-1] != ':')
		return cp_error("%s:%zu:%zu: expected the event name ending with ':' after the "
		                "time and period",
		                st->name, st->lineno, (size_t)(ev - line) + 1);
	size_t evlen = (size_t)(c - ev);
	int cpu = (evlen >= 9 && !memcmp(ev, "cpu-clock", 9) && (evlen == 10 || ev[9] == ':')) ||
	          (evlen >= 10 && !memcmp(ev, "task-clock", 10) && (evlen == 11 || ev[10] == ':'));
	if (cpu && has_period) {
		st->period_sum += period;
		st->period_n++;
	}
	st->open = 1;
	st->nframes = 0;
	/* Without -g, the sampled frame follows on the header line. */
	if (!is_blank(c, e))
		return parse_frame(st, line, c, e);
	return 0;
}

int perf_script_parse(struct profile *p, const char *text, size_t len, const char *name,
                      const char *test)
{
	struct ps_state st = {.p = p, .name = name};
	st.test = test ? profile_intern(p, test) : 0;
	const char *end = text + len, *line = text;
	int r = 0;
	while (line < end) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol)
			eol = end;
		st.lineno++;
		if (eol == end && !is_blank(line, eol)) {
			/* perf script ends every line: this one was cut (a stopped pipe, a full
			 * disk) */
			r = cp_error("%s:%zu:%zu: the text ends inside a line (truncated?)", name,
			             st.lineno, (size_t)(eol - line) + 1);
			break;
		}
		if (memchr(line, '\0', (size_t)(eol - line))) {
			r = cp_error(
			        "%s:%zu: a NUL byte: this is not perf script text (a perf.data "
			        "file? run 'perf script -i FILE' first)",
			        name, st.lineno);
			break;
		}
		if (is_blank(line, eol)) {
			flush_sample(&st);
		} else if (*line == '\t') {
			if (!st.open) {
				r = cp_error("%s:%zu:1: a call-chain line outside any sample (no "
				             "header line before it)",
				             name, st.lineno);
				break;
			}
			if ((r = parse_frame(&st, line, line, eol)) < 0)
				break;
		} else if (*line == '#') {
			/* perf script --header comments */
		} else {
			flush_sample(&st);
			if ((r = parse_header(&st, line, eol)) < 0)
				break;
		}
		line = eol + 1;
	}
	if (r == 0) {
		flush_sample(&st);
		if (st.period_n) {
			p->stats.period_ns = (st.period_sum + st.period_n / 2) / st.period_n;
			if (p->stats.period_ns)
				p->stats.hz = (int)(1e9 / (double)p->stats.period_ns + 0.5);
			p->stats.cpu_seconds = (double)st.period_sum / 1e9;
		}
	}
	free(st.frames);
	return r;
}
