/* .ciprof.yml reader (see config.h): libyaml's event parser, walked by a small recursive
 * reader that knows the expected shape at each point. */
#include "common/config.h"
#include "common/error.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

struct reader {
	yaml_parser_t parser;
	yaml_event_t ev;
	int have;
	const char *name;
	int failed;
};

static int fail_at(struct reader *r, const yaml_mark_t *m, const char *what)
{
	r->failed = 1;
	return cp_error("%s:%zu:%zu: %s", r->name, m->line + 1, m->column + 1, what);
}

static int next(struct reader *r)
{
	if (r->have)
		yaml_event_delete(&r->ev);
	r->have = 0;
	if (!yaml_parser_parse(&r->parser, &r->ev)) {
		r->failed = 1;
		return cp_error("%s:%zu:%zu: %s", r->name, r->parser.problem_mark.line + 1,
				r->parser.problem_mark.column + 1,
				r->parser.problem ? r->parser.problem : "invalid YAML");
	}
	r->have = 1;
	if (r->ev.type == YAML_ALIAS_EVENT)
		return fail_at(r, &r->ev.start_mark, "aliases (*name) are not supported here");
	return 0;
}

static int scalar(struct reader *r, const char *key, char **out)
{
	if (r->ev.type != YAML_SCALAR_EVENT) {
		char msg[128];
		snprintf(msg, sizeof(msg), "'%s' must be a string", key);
		return fail_at(r, &r->ev.start_mark, msg);
	}
	free(*out);
	*out = xstrndup((const char *)r->ev.data.scalar.value, r->ev.data.scalar.length);
	return 0;
}

static int boolean(struct reader *r, const char *key, int *out)
{
	char *v = NULL;
	if (scalar(r, key, &v) < 0)
		return -1;
	int ok = 1;
	if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on"))
		*out = 1;
	else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off"))
		*out = 0;
	else
		ok = 0;
	free(v);
	if (!ok) {
		char msg[128];
		snprintf(msg, sizeof(msg), "'%s' must be true or false", key);
		return fail_at(r, &r->ev.start_mark, msg);
	}
	return 0;
}

/* Calls field(r, key, ctx) for each key of the mapping starting at the current event. */
static int mapping(struct reader *r, const char *what,
		   int (*field)(struct reader *r, const char *key, void *ctx), void *ctx)
{
	if (r->ev.type != YAML_MAPPING_START_EVENT) {
		char msg[128];
		snprintf(msg, sizeof(msg), "%s must be a mapping (key: value)", what);
		return fail_at(r, &r->ev.start_mark, msg);
	}
	for (;;) {
		if (next(r) < 0)
			return -1;
		if (r->ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		if (r->ev.type != YAML_SCALAR_EVENT)
			return fail_at(r, &r->ev.start_mark, "a key must be a plain string");
		char *key = xstrndup((const char *)r->ev.data.scalar.value,
				     r->ev.data.scalar.length);
		yaml_mark_t at = r->ev.start_mark;
		int rc = next(r);
		if (rc == 0) {
			rc = field(r, key, ctx);
			if (rc > 0) {
				char msg[256];
				snprintf(msg, sizeof(msg), "unknown key '%.100s' in %s", key, what);
				rc = fail_at(r, &at, msg);
			}
		}
		free(key);
		if (rc < 0)
			return -1;
	}
}

static int rule_field(struct reader *r, const char *key, void *ctx)
{
	struct config_rule *rule = ctx;
	if (!strcmp(key, "name"))
		return scalar(r, key, &rule->name);
	if (!strcmp(key, "caller"))
		return scalar(r, key, &rule->caller);
	if (!strcmp(key, "test"))
		return scalar(r, key, &rule->test);
	if (!strcmp(key, "as"))
		return scalar(r, key, &rule->as);
	return 1;
}

static int rules_list(struct reader *r, struct config *c)
{
	if (r->ev.type != YAML_SEQUENCE_START_EVENT)
		return fail_at(r, &r->ev.start_mark, "'rules' must be a list of rules");
	for (;;) {
		if (next(r) < 0)
			return -1;
		if (r->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		struct config_rule rule = {0};
		rule.line = (unsigned)r->ev.start_mark.line + 1;
		yaml_mark_t at = r->ev.start_mark;
		if (mapping(r, "a rule", rule_field, &rule) < 0 ||
		    (!rule.test && fail_at(r, &at, "a rule needs 'test' (a regex on frames)") < 0)) {
			free(rule.name);
			free(rule.caller);
			free(rule.test);
			free(rule.as);
			return -1;
		}
		if (!rule.name)
			rule.name = xasprintf("%s:%u", r->name, rule.line);
		ALLOC_GROW(c->rules, c->nrules + 1, c->rules_alloc);
		c->rules[c->nrules++] = rule;
	}
}

static int attribution_field(struct reader *r, const char *key, void *ctx)
{
	struct config *c = ctx;
	if (!strcmp(key, "rules"))
		return rules_list(r, c);
	if (!strcmp(key, "builtin-rules"))
		return boolean(r, key, &c->builtin_rules);
	return 1;
}

static int top_field(struct reader *r, const char *key, void *ctx)
{
	if (!strcmp(key, "attribution"))
		return mapping(r, "'attribution'", attribution_field, ctx);
	return 1;
}

void config_init(struct config *c)
{
	memset(c, 0, sizeof(*c));
	c->builtin_rules = 1;
}

void config_release(struct config *c)
{
	for (size_t i = 0; i < c->nrules; i++) {
		free(c->rules[i].name);
		free(c->rules[i].caller);
		free(c->rules[i].test);
		free(c->rules[i].as);
	}
	free(c->rules);
	free(c->path);
	config_init(c);
}

int config_parse(struct config *c, const char *text, size_t len, const char *name)
{
	struct reader r = {.name = name};
	if (!yaml_parser_initialize(&r.parser))
		return cp_error("%s: cannot initialise the YAML parser", name);
	yaml_parser_set_input_string(&r.parser, (const unsigned char *)text, len);
	int ret = -1;
	/* stream start, then a document (or none: an empty file) */
	if (next(&r) < 0 || next(&r) < 0)
		goto out;
	if (r.ev.type == YAML_STREAM_END_EVENT) {
		ret = 0;
		goto out;
	}
	if (next(&r) < 0)
		goto out;
	if (r.ev.type == YAML_SCALAR_EVENT && r.ev.data.scalar.length == 0) {
		ret = 0; /* "---" alone */
		goto out;
	}
	if (mapping(&r, "the file", top_field, c) < 0)
		goto out;
	if (next(&r) < 0) /* document end */
		goto out;
	if (next(&r) < 0)
		goto out;
	if (r.ev.type != YAML_STREAM_END_EVENT) {
		fail_at(&r, &r.ev.start_mark, "only one YAML document is allowed");
		goto out;
	}
	ret = 0;
out:
	if (r.have)
		yaml_event_delete(&r.ev);
	yaml_parser_delete(&r.parser);
	return ret;
}

/* The folder holding .git above the current directory, or "." (owned). */
static char *work_tree_top(void)
{
	char *cwd = getcwd(NULL, 0);
	if (!cwd)
		return xstrdup(".");
	char *dir = xstrdup(cwd);
	for (;;) {
		char *probe = xasprintf("%s/.git", dir);
		struct stat st;
		int found = stat(probe, &st) == 0;
		free(probe);
		if (found) {
			free(cwd);
			return dir;
		}
		char *slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			break;
		*slash = '\0';
	}
	free(dir);
	return cwd;
}

int config_load(struct config *c, const char *path)
{
	char *owned = NULL;
	int must_exist = 1;
	if (!path) {
		const char *env = getenv("CIPROF_CONFIG");
		if (env && *env) {
			path = env;
		} else {
			char *top = work_tree_top();
			owned = xasprintf("%s/.ciprof.yml", top);
			free(top);
			path = owned;
			must_exist = 0;
		}
	}
	struct strbuf sb = STRBUF_INIT;
	sb.max = 4 << 20;
	int ret = 0;
	if (!must_exist && access(path, F_OK) != 0)
		goto out;
	if (strbuf_read_file(&sb, path) < 0) {
		ret = -1;
		goto out;
	}
	ret = config_parse(c, sb.buf, sb.len, path);
	if (ret == 0)
		c->path = xstrdup(path);
out:
	strbuf_release(&sb);
	free(owned);
	return ret;
}
