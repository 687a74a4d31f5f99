/* JUnit XML with expat: only <testcase> and its <failure>/<error>/<skipped> children matter;
 * everything else (suites, properties, system-out) is read past. */
#include "runner/attribution/junit.h"
#include "common/error.h"
#include "common/escape.h"
#include "model/profile.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <expat.h>
#include <stdlib.h>
#include <string.h>

void junit_init(struct junit *j)
{
	memset(j, 0, sizeof(*j));
}

void junit_release(struct junit *j)
{
	for (size_t i = 0; i < j->n; i++) {
		free(j->cases[i].classname);
		free(j->cases[i].name);
	}
	free(j->cases);
	junit_init(j);
}

const char *junit_status_name(enum junit_status s)
{
	switch (s) {
	case JUNIT_FAILED:
		return "failed";
	case JUNIT_ERROR:
		return "error";
	case JUNIT_SKIPPED:
		return "skipped";
	default:
		return "passed";
	}
}

struct parse_state {
	struct junit *j;
	XML_Parser parser;
	int in_case; /* depth of the open <testcase>, 0 when none */
	int depth;
	char err[256];
};

static const char *attr(const XML_Char **atts, const char *key)
{
	for (size_t i = 0; atts[i]; i += 2)
		if (!strcmp(atts[i], key))
			return atts[i + 1];
	return NULL;
}

static void on_start(void *ud, const XML_Char *el, const XML_Char **atts)
{
	struct parse_state *st = ud;
	st->depth++;
	if (!strcmp(el, "testcase")) {
		if (st->in_case) {
			snprintf(st->err, sizeof(st->err), "<testcase> inside <testcase>");
			XML_StopParser(st->parser, XML_FALSE);
			return;
		}
		const char *name = attr(atts, "name");
		if (!name || !*name) {
			snprintf(st->err, sizeof(st->err), "<testcase> without a name attribute");
			XML_StopParser(st->parser, XML_FALSE);
			return;
		}
		const char *cls = attr(atts, "classname");
		const char *time = attr(atts, "time");
		struct junit *j = st->j;
		ALLOC_GROW(j->cases, j->n + 1, j->alloc);
		struct junit_case *c = &j->cases[j->n++];
		c->classname = xstrdup(cls ? cls : "");
		c->name = xstrdup(name);
		c->seconds = time ? strtod(time, NULL) : 0;
		if (!(c->seconds >= 0 && c->seconds < 1e9))
			c->seconds = 0;
		c->status = JUNIT_PASSED;
		/* GoogleTest marks skipped and disabled tests with attributes. */
		const char *result = attr(atts, "result");
		const char *status = attr(atts, "status");
		if ((result && !strcmp(result, "skipped")) || (status && !strcmp(status, "notrun")))
			c->status = JUNIT_SKIPPED;
		st->in_case = st->depth;
		return;
	}
	if (st->in_case && st->depth == st->in_case + 1) {
		struct junit_case *c = &st->j->cases[st->j->n - 1];
		if (!strcmp(el, "failure"))
			c->status = JUNIT_FAILED;
		else if (!strcmp(el, "error") && c->status != JUNIT_FAILED)
			c->status = JUNIT_ERROR;
		else if (!strcmp(el, "skipped") && c->status == JUNIT_PASSED)
			c->status = JUNIT_SKIPPED;
	}
}

static void on_end(void *ud, const XML_Char *el)
{
	struct parse_state *st = ud;
	if (st->in_case == st->depth && !strcmp(el, "testcase"))
		st->in_case = 0;
	st->depth--;
}

int junit_parse(struct junit *j, const char *xml, size_t len, const char *name)
{
	struct parse_state st = {.j = j};
	st.parser = XML_ParserCreate(NULL);
	if (!st.parser)
		return cp_error("%s: cannot create an XML parser", name);
	XML_SetUserData(st.parser, &st);
	XML_SetElementHandler(st.parser, on_start, on_end);
	int ret = 0;
	/* expat takes an int length: feed large reports in pieces. */
	size_t off = 0;
	do {
		size_t chunk = len - off > (1u << 30) ? (1u << 30) : len - off;
		int last = off + chunk == len;
		if (XML_Parse(st.parser, xml + off, (int)chunk, last) != XML_STATUS_OK) {
			ret = cp_error("%s:%lu:%lu: %s", name,
			               (unsigned long)XML_GetCurrentLineNumber(st.parser),
			               (unsigned long)XML_GetCurrentColumnNumber(st.parser) + 1,
			               st.err[0] ? st.err
			                         : XML_ErrorString(XML_GetErrorCode(st.parser)));
			break;
		}
		off += chunk;
	} while (off < len);
	XML_ParserFree(st.parser);
	return ret;
}

/* "a.b.c" as the path "a/b/c.py" (the first len bytes of cls). */
static void add_module_path(struct strbuf *sb, const char *cls, size_t len)
{
	for (size_t i = 0; i < len; i++)
		strbuf_addch(sb, cls[i] == '.' ? '/' : cls[i]);
	strbuf_addstr(sb, ".py");
}

size_t junit_candidate_names(const struct junit_case *c, char **out)
{
	size_t n = 0;
	const char *cls = c->classname;
	if (*cls) {
		out[n++] = xasprintf("%s.%s", cls, c->name); /* GoogleTest: Suite.Name */
		/* pytest: classname "tests.test_mod" is tests/test_mod.py::name, and
		 * "tests.test_mod.TestClass" is tests/test_mod.py::TestClass::name. */
		struct strbuf sb = STRBUF_INIT;
		add_module_path(&sb, cls, strlen(cls));
		strbuf_addf(&sb, "::%s", c->name);
		out[n++] = strbuf_detach(&sb, NULL);
		const char *dot = strrchr(cls, '.');
		if (dot) {
			add_module_path(&sb, cls, (size_t)(dot - cls));
			strbuf_addf(&sb, "::%s::%s", dot + 1, c->name);
			out[n++] = strbuf_detach(&sb, NULL);
		}
	}
	out[n++] = xstrdup(c->name);
	return n;
}

size_t junit_attach(const struct junit *j, struct profile *p)
{
	/* Which string ids are tests with samples. */
	uint8_t *sampled = xcalloc(p->nstr ? p->nstr : 1, 1);
	for (size_t i = 0; i < p->nsamples; i++)
		sampled[p->samples[i].test] = 1;
	size_t nstr = p->nstr;
	size_t matched = 0;
	for (size_t i = 0; i < j->n; i++) {
		char *cand[4];
		size_t n = junit_candidate_names(&j->cases[i], cand);
		/* Test names in the profile were cleaned as they were interned: look for the
		 * same cleaned form. */
		for (size_t k = 0; k < n; k++) {
			size_t len = strlen(cand[k]);
			if (len <= PROFILE_NAME_MAX && esc_utf8_valid(cand[k], len))
				continue;
			struct strbuf sb = STRBUF_INIT;
			esc_name(&sb, cand[k], len, PROFILE_NAME_MAX);
			free(cand[k]);
			cand[k] = strbuf_detach(&sb, NULL);
		}
		int64_t id = -1;
		for (size_t k = 0; k < n && id < 0; k++) {
			int64_t s = profile_find_str(p, cand[k]);
			if (s > 0 && (size_t)s < nstr && sampled[s])
				id = s;
		}
		if (id >= 0)
			matched++;
		else
			id = profile_intern_name(p, cand[n - 1]);
		profile_set_result(p, (uint32_t)id, (uint32_t)j->cases[i].status,
		                   j->cases[i].seconds);
		for (size_t k = 0; k < n; k++)
			free(cand[k]);
	}
	free(sampled);
	return matched;
}
