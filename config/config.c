/* .ciprof.yml reader (see config.h): libyaml's event parser, walked by a small recursive
 * reader that knows the expected shape at each point; one table of keys gives each setting
 * its type, range, default and environment variable, and one function (config_set) checks a
 * value whichever source it came from. */
#include "config/config.h"
#include "common/error.h"
#include "common/regex_check.h"
#include "common/strbuf.h"
#include "common/worktree.h"
#include "common/xalloc.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

extern char **environ;

static const struct config_key_info keys[CONFIG_NKEYS] = {
        [CONFIG_RUN_HZ] = {"run.hz", CONFIG_T_INT, CIPROF_STR(CIPROF_DEFAULT_HZ), 1, 10000, 0, NULL,
                           "CIPROF_RUN_HZ", "samples per CPU-second per thread (run --hz)"},
        [CONFIG_RUN_BACKEND] = {"run.backend", CONFIG_T_CHOICE, "auto", 0, 0, 0,
                                "auto|perf|preload", "CIPROF_RUN_BACKEND",
                                "sampling backend (run --backend)"},
        [CONFIG_AB_HZ] = {"ab.hz", CONFIG_T_INT, CIPROF_STR(CIPROF_DEFAULT_AB_HZ), 1, 10000, 0,
                          NULL, "CIPROF_AB_HZ",
                          "samples per CPU-second per thread for ciprof ab (run.hz is not "
                          "used), or per 10^9 events with --event (ab --hz)"},
        [CONFIG_REPORT_BASE_BRANCH] = {"report.base-branch", CONFIG_T_STRING, "", 0, 0, 0, NULL,
                                       "CIPROF_REPORT_BASE_BRANCH",
                                       "branch compared against; empty: the head run's base "
                                       "branch, else main (report --base)"},
        [CONFIG_REPORT_BASE_RUNS] = {"report.base-runs", CONFIG_T_INT, "5", 1, 1000, 0, NULL,
                                     "CIPROF_REPORT_BASE_RUNS",
                                     "base runs merged as the baseline (report --base-runs)"},
        [CONFIG_REPORT_HEAD_RUNS] = {"report.head-runs", CONFIG_T_INT, "3", 1, 20, 0, NULL,
                                     "CIPROF_REPORT_HEAD_RUNS",
                                     "runs of the head's commit a finding must show in every "
                                     "one of (report --head-runs)"},
        [CONFIG_REPORT_MIN_CHANGE] = {"report.min-change", CONFIG_T_NUMBER, "5", 0, 1000, 0, NULL,
                                      "CIPROF_REPORT_MIN_CHANGE",
                                      "smallest relative change reported, in percent "
                                      "(report --min-change)"},
        [CONFIG_REPORT_MIN_SHARE] = {"report.min-share", CONFIG_T_NUMBER, "0.5", 0, 100, 0, NULL,
                                     "CIPROF_REPORT_MIN_SHARE",
                                     "share of samples, in percent, below which nothing is "
                                     "judged (report --min-share)"},
        [CONFIG_REPORT_ALPHA] = {"report.alpha", CONFIG_T_NUMBER, "0.001", 0, 0.999999, 1, NULL,
                                 "CIPROF_REPORT_ALPHA", "false discovery rate (report --alpha)"},
        [CONFIG_FRAMES_IGNORE] = {"frames.ignore", CONFIG_T_REGEX_LIST, "", 0, 0, 0, NULL, NULL,
                                  "frames dropped from every stack (regexes on function names)"},
        [CONFIG_FRAMES_FOLD] = {"frames.fold", CONFIG_T_REGEX_LIST, "", 0, 0, 0, NULL, NULL,
                                "runs of matching frames folded into their first"},
        [CONFIG_COMMENT_ENABLED] = {"comment.enabled", CONFIG_T_BOOL, "true", 0, 1, 0, NULL,
                                    "CIPROF_COMMENT_ENABLED",
                                    "whether 'ciprof comment' posts to the PR/MR"},
        [CONFIG_COMMENT_PROVIDER] = {"comment.provider", CONFIG_T_CHOICE, "auto", 0, 0, 0,
                                     "auto|github|gitlab", "CIPROF_COMMENT_PROVIDER",
                                     "where 'ciprof comment' posts (comment --provider)"},
        [CONFIG_PUSH_SERVER] = {"push.server", CONFIG_T_STRING, "", 0, 0, 0, NULL,
                                "CIPROF_PUSH_SERVER",
                                "Grafana Pyroscope's URL for 'ciprof push' (push --server)"},
        [CONFIG_PUSH_APP] = {"push.app", CONFIG_T_STRING, "", 0, 0, 0, NULL, "CIPROF_PUSH_APP",
                             "application name in Pyroscope; empty: the repository's folder "
                             "name (push --app)"},
        [CONFIG_PUSH_TENANT] = {"push.tenant", CONFIG_T_STRING, "", 0, 0, 0, NULL,
                                "CIPROF_PUSH_TENANT",
                                "X-Scope-OrgID tenant header (push --tenant)"},
        [CONFIG_PUSH_USER] = {"push.user", CONFIG_T_STRING, "", 0, 0, 0, NULL, "CIPROF_PUSH_USER",
                              "basic-auth user; the password only from CIPROF_PUSH_PASSWORD "
                              "(push --user)"},
        [CONFIG_ATTRIBUTION_BUILTIN] = {"attribution.builtin-rules", CONFIG_T_BOOL, "true", 0, 1, 0,
                                        NULL, "CIPROF_ATTRIBUTION_BUILTIN_RULES",
                                        "use the built-in stack rules"},
};

const struct config_key_info *config_key_info(enum config_key k)
{
	return (unsigned)k < CONFIG_NKEYS ? &keys[k] : NULL;
}

char *config_option_help(enum config_key k)
{
	const struct config_key_info *ki = config_key_info(k);
	struct strbuf sb = STRBUF_INIT;
	if (!ki)
		return strbuf_detach(&sb, NULL);
	const char *help = ki->help, *paren = NULL;
	for (const char *q = strstr(help, " ("); q; q = strstr(q + 1, " ("))
		paren = q;
	size_t len = strlen(help);
	if (paren && help[len - 1] == ')' && strstr(paren, "--"))
		len = (size_t)(paren - help);
	strbuf_add(&sb, help, len);
	if (ki->type == CONFIG_T_INT || ki->type == CONFIG_T_NUMBER)
		strbuf_addf(&sb, ", %g..%g", ki->min, ki->max);
	if (ki->type == CONFIG_T_CHOICE) {
		strbuf_addstr(&sb, ": ");
		for (const char *c = ki->choices; *c; c++)
			strbuf_addstr(&sb, *c == '|' ? ", " : (char[]){*c, 0});
	}
	strbuf_addstr(&sb, " (");
	if (*ki->def)
		strbuf_addf(&sb, "default %s; ", ki->def);
	strbuf_addstr(&sb, ki->name);
	if (ki->env)
		strbuf_addf(&sb, ", %s", ki->env);
	strbuf_addch(&sb, ')');
	return strbuf_detach(&sb, NULL);
}

int config_key_find(const char *name, enum config_key *out)
{
	for (int k = 0; k < CONFIG_NKEYS; k++) {
		if (!strcmp(keys[k].name, name)) {
			*out = (enum config_key)k;
			return 0;
		}
	}
	return -1;
}

/* --- values --------------------------------------------------------------------------- */

static int bool_text(const char *v, int *out)
{
	if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on"))
		*out = 1;
	else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off"))
		*out = 0;
	else
		return -1;
	return 0;
}

/* Checks text for key k; on success *num and *canon (owned) hold the value. */
static int check_value(enum config_key k, const char *text, double *num, char **canon)
{
	const struct config_key_info *ki = &keys[k];
	char *end;
	*canon = NULL;
	*num = 0;
	switch (ki->type) {
	case CONFIG_T_INT: {
		errno = 0;
		long v = strtol(text, &end, 10);
		if (errno || end == text || *end || v < ki->min || v > ki->max)
			return cp_error("'%s' must be a whole number from %g to %g, not '%.100s'",
			                ki->name, ki->min, ki->max, text);
		*num = (double)v;
		*canon = xasprintf("%ld", v);
		return 0;
	}
	case CONFIG_T_NUMBER: {
		errno = 0;
		double v = strtod(text, &end);
		int ok = !errno && end != text && !*end && isfinite(v) &&
		         strspn(text, "0123456789.eE+-") == strlen(text) && v <= ki->max &&
		         (ki->min_open ? v > ki->min : v >= ki->min);
		if (!ok)
			return cp_error("'%s' must be a number %s %g and <= %g, not '%.100s'",
			                ki->name, ki->min_open ? ">" : ">=", ki->min, ki->max,
			                text);
		*num = v;
		*canon = xstrdup(text);
		return 0;
	}
	case CONFIG_T_BOOL: {
		int b;
		if (bool_text(text, &b) < 0)
			return cp_error("'%s' must be true or false, not '%.100s'", ki->name, text);
		*num = b;
		*canon = xstrdup(b ? "true" : "false");
		return 0;
	}
	case CONFIG_T_CHOICE: {
		const char *p = ki->choices;
		size_t n = strlen(text);
		while (*p) {
			size_t w = strcspn(p, "|");
			if (w == n && !strncmp(p, text, n)) {
				*canon = xstrdup(text);
				return 0;
			}
			p += w + (p[w] == '|');
		}
		char *alts = xstrdup(ki->choices);
		for (char *q = alts; (q = strchr(q, '|'));)
			*q = '/';
		cp_error("'%s' must be one of %s, not '%.100s'", ki->name, alts, text);
		free(alts);
		return -1;
	}
	case CONFIG_T_STRING:
		if (!*text || strlen(text) > 255)
			return cp_error("'%s' must be 1 to 255 characters long", ki->name);
		for (const unsigned char *p = (const unsigned char *)text; *p; p++)
			if (*p < 0x20 || *p == 0x7f)
				return cp_error("'%s' must not hold control characters", ki->name);
		*canon = xstrdup(text);
		return 0;
	case CONFIG_T_REGEX_LIST: {
		regex_t re;
		if (regex_compile(&re, text, REG_NOSUB) < 0)
			return cp_error("'%s': %s", ki->name, cp_last_error());
		regfree(&re);
		*canon = xstrdup(text);
		return 0;
	}
	}
	return cp_error("'%s': unknown type", ki->name);
}

static void value_clear(struct config_value *v)
{
	free(v->text);
	for (size_t i = 0; i < v->nlist; i++)
		free(v->list[i]);
	free(v->list);
	memset(v, 0, sizeof(*v));
}

/* Sets the value; line/column are kept for CONFIG_FILE. A list value appends unless this is
 * the first value from a stronger source (then it replaces). */
static int set_at(struct config *c, enum config_key k, const char *text, enum config_source src,
                  unsigned line, unsigned column)
{
	if ((unsigned)k >= CONFIG_NKEYS)
		return cp_error("no such setting");
	double num;
	char *canon;
	if (check_value(k, text, &num, &canon) < 0)
		return -1;
	struct config_value *v = &c->values[k];
	if (keys[k].type == CONFIG_T_REGEX_LIST) {
		if (v->source != src) {
			value_clear(v);
			v->line = line;
			v->column = column;
		}
		ALLOC_GROW(v->list, v->nlist + 1, v->list_alloc);
		v->list[v->nlist++] = canon;
	} else {
		free(v->text);
		v->text = canon;
		v->num = num;
		v->line = line;
		v->column = column;
	}
	v->source = src;
	if (k == CONFIG_ATTRIBUTION_BUILTIN)
		c->builtin_rules = (int)num;
	return 0;
}

int config_set(struct config *c, enum config_key k, const char *text, enum config_source src)
{
	return set_at(c, k, text, src, 0, 0);
}

static double default_num(enum config_key k)
{
	const struct config_key_info *ki = &keys[k];
	if (ki->type == CONFIG_T_BOOL)
		return !strcmp(ki->def, "true");
	return strtod(ki->def, NULL);
}

long config_int(const struct config *c, enum config_key k)
{
	const struct config_value *v = &c->values[k];
	return (long)(v->text ? v->num : default_num(k));
}

double config_number(const struct config *c, enum config_key k)
{
	const struct config_value *v = &c->values[k];
	return v->text ? v->num : default_num(k);
}

int config_bool(const struct config *c, enum config_key k)
{
	return config_number(c, k) != 0;
}

const char *config_str(const struct config *c, enum config_key k)
{
	const struct config_value *v = &c->values[k];
	return v->text ? v->text : keys[k].def;
}

char *const *config_list(const struct config *c, enum config_key k, size_t *n)
{
	*n = c->values[k].nlist;
	return c->values[k].list;
}

enum config_source config_source_of(const struct config *c, enum config_key k)
{
	return c->values[k].source;
}

int config_is_set(const struct config *c, enum config_key k)
{
	return c->values[k].source != CONFIG_DEFAULT;
}

char *config_origin(const struct config *c, enum config_key k)
{
	const struct config_value *v = &c->values[k];
	switch (v->source) {
	case CONFIG_FILE:
		return xasprintf("%s:%u",
		                 c->path   ? c->path
		                 : c->name ? c->name
		                           : "config",
		                 v->line);
	case CONFIG_ENV:
		return xasprintf("environment (%s)", keys[k].env);
	case CONFIG_FLAG:
		return xstrdup("command line");
	default:
		return xstrdup("default");
	}
}

int config_apply_env(struct config *c, char *const *envp)
{
	for (int k = 0; k < CONFIG_NKEYS; k++) {
		const char *name = keys[k].env;
		if (!name)
			continue;
		size_t n = strlen(name);
		for (size_t i = 0; envp && envp[i]; i++) {
			if (strncmp(envp[i], name, n) || envp[i][n] != '=' || !envp[i][n + 1])
				continue;
			if (config_set(c, (enum config_key)k, envp[i] + n + 1, CONFIG_ENV) < 0) {
				char *msg = xstrdup(cp_last_error());
				cp_error("environment variable %s: %s", name, msg);
				free(msg);
				return -1;
			}
		}
	}
	return 0;
}

/* --- the YAML reader ------------------------------------------------------------------ */

struct reader {
	yaml_parser_t parser;
	yaml_event_t ev;
	int have;
	const char *name;
	int failed;
	struct config *c;
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

/* A plain empty, "~" or "null" scalar: YAML's null. */
static int is_null(const yaml_event_t *ev)
{
	if (ev->type != YAML_SCALAR_EVENT || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	const char *v = (const char *)ev->data.scalar.value;
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

/* Reads the current event as key k's value (a scalar, or a list of scalars for lists). */
static int table_value(struct reader *r, enum config_key k)
{
	const struct config_key_info *ki = &keys[k];
	char msg[1200];
	if (ki->type == CONFIG_T_REGEX_LIST) {
		if (r->ev.type != YAML_SEQUENCE_START_EVENT) {
			snprintf(msg, sizeof(msg), "'%s' must be a list of regular expressions",
			         ki->name);
			return fail_at(r, &r->ev.start_mark, msg);
		}
		struct config_value *v = &r->c->values[k];
		value_clear(v);
		v->source = CONFIG_FILE;
		v->line = (unsigned)r->ev.start_mark.line + 1;
		v->column = (unsigned)r->ev.start_mark.column + 1;
		for (;;) {
			if (next(r) < 0)
				return -1;
			if (r->ev.type == YAML_SEQUENCE_END_EVENT)
				return 0;
			if (r->ev.type != YAML_SCALAR_EVENT || is_null(&r->ev)) {
				snprintf(msg, sizeof(msg),
				         "each item of '%s' must be a regular expression",
				         ki->name);
				return fail_at(r, &r->ev.start_mark, msg);
			}
			if (set_at(r->c, k, (const char *)r->ev.data.scalar.value, CONFIG_FILE,
			           v->line, v->column) < 0) {
				snprintf(msg, sizeof(msg), "%s", cp_last_error());
				return fail_at(r, &r->ev.start_mark, msg);
			}
		}
	}
	if (r->ev.type != YAML_SCALAR_EVENT) {
		snprintf(msg, sizeof(msg), "'%s' must be a single value, not a %s", ki->name,
		         r->ev.type == YAML_SEQUENCE_START_EVENT ? "list" : "mapping");
		return fail_at(r, &r->ev.start_mark, msg);
	}
	if (is_null(&r->ev)) {
		snprintf(msg, sizeof(msg), "'%s' needs a value", ki->name);
		return fail_at(r, &r->ev.start_mark, msg);
	}
	if (set_at(r->c, k, (const char *)r->ev.data.scalar.value, CONFIG_FILE,
	           (unsigned)r->ev.start_mark.line + 1,
	           (unsigned)r->ev.start_mark.column + 1) < 0) {
		snprintf(msg, sizeof(msg), "%s", cp_last_error());
		return fail_at(r, &r->ev.start_mark, msg);
	}
	return 0;
}

struct seen_key {
	char *key;
	size_t line;
};

/* Calls field(r, key, ctx) for each key of the mapping starting at the current event; field
 * returns 1 for a key it does not know. known (may be NULL) lists the keys, for the error. */
static int mapping(struct reader *r, const char *what, const char *known,
                   int (*field)(struct reader *r, const char *key, void *ctx), void *ctx)
{
	if (r->ev.type != YAML_MAPPING_START_EVENT) {
		char msg[128];
		snprintf(msg, sizeof(msg), "%s must be a mapping (key: value)", what);
		return fail_at(r, &r->ev.start_mark, msg);
	}
	struct seen_key *seen = NULL;
	size_t nseen = 0, seen_alloc = 0;
	int ret = -1;
	for (;;) {
		if (next(r) < 0)
			goto out;
		if (r->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (r->ev.type != YAML_SCALAR_EVENT) {
			fail_at(r, &r->ev.start_mark, "a key must be a plain string");
			goto out;
		}
		char *key =
		        xstrndup((const char *)r->ev.data.scalar.value, r->ev.data.scalar.length);
		yaml_mark_t at = r->ev.start_mark;
		for (size_t i = 0; i < nseen; i++) {
			if (!strcmp(seen[i].key, key)) {
				char msg[256];
				snprintf(msg, sizeof(msg),
				         "'%.100s' appears twice in %s (first on line %zu)", key,
				         what, seen[i].line);
				free(key);
				fail_at(r, &at, msg);
				goto out;
			}
		}
		ALLOC_GROW(seen, nseen + 1, seen_alloc);
		seen[nseen].key = key;
		seen[nseen++].line = at.line + 1;
		int rc = next(r);
		if (rc == 0) {
			rc = field(r, key, ctx);
			if (rc > 0) {
				char msg[512];
				snprintf(msg, sizeof(msg), "unknown key '%.100s' in %s%s%s", key,
				         what, known ? "; known keys: " : "", known ? known : "");
				rc = fail_at(r, &at, msg);
			}
		}
		if (rc < 0)
			goto out;
	}
	ret = 0;
out:
	for (size_t i = 0; i < nseen; i++)
		free(seen[i].key);
	free(seen);
	return ret;
}

/* A rule's regex key: read, and compiled as attrib_rules_add will compile it, so `ciprof
 * config` refuses what `ciprof run` would, at the value's line and column. */
static int rule_regex(struct reader *r, const char *key, char **out)
{
	if (scalar(r, key, out) < 0)
		return -1;
	regex_t re;
	if (regex_compile(&re, *out, 0) < 0) {
		char msg[1200];
		snprintf(msg, sizeof(msg), "a rule's '%s': %s", key, cp_last_error());
		return fail_at(r, &r->ev.start_mark, msg);
	}
	regfree(&re);
	return 0;
}

static int rule_field(struct reader *r, const char *key, void *ctx)
{
	struct config_rule *rule = ctx;
	if (!strcmp(key, "name"))
		return scalar(r, key, &rule->name);
	if (!strcmp(key, "caller"))
		return rule_regex(r, key, &rule->caller);
	if (!strcmp(key, "test"))
		return rule_regex(r, key, &rule->test);
	if (!strcmp(key, "as"))
		return scalar(r, key, &rule->as);
	return 1;
}

static int rules_list(struct reader *r, struct config *c)
{
	if (r->ev.type != YAML_SEQUENCE_START_EVENT)
		return fail_at(r, &r->ev.start_mark, "'rules' must be a list of rules");
	c->rules_line = (unsigned)r->ev.start_mark.line + 1;
	for (;;) {
		if (next(r) < 0)
			return -1;
		if (r->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		struct config_rule rule = {0};
		rule.line = (unsigned)r->ev.start_mark.line + 1;
		yaml_mark_t at = r->ev.start_mark;
		if (mapping(r, "a rule", "name, caller, test, as", rule_field, &rule) < 0 ||
		    (!rule.test &&
		     fail_at(r, &at, "a rule needs 'test' (a regex on frames)") < 0)) {
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

/* Keys of a section found in the table ("run" + "hz" -> run.hz). */
struct section {
	const char *name;
	struct reader *r;
};

static int section_field(struct reader *r, const char *key, void *ctx)
{
	const struct section *s = ctx;
	char *full = xasprintf("%s.%s", s->name, key);
	enum config_key k;
	int found = config_key_find(full, &k) == 0;
	free(full);
	if (!found)
		return 1;
	return table_value(r, k);
}

static int attribution_field(struct reader *r, const char *key, void *ctx)
{
	struct config *c = ctx;
	if (!strcmp(key, "rules"))
		return rules_list(r, c);
	if (!strcmp(key, "builtin-rules"))
		return table_value(r, CONFIG_ATTRIBUTION_BUILTIN);
	return 1;
}

/* "hz, backend" for section "run" (owned). */
static char *section_keys(const char *section)
{
	struct strbuf sb = STRBUF_INIT;
	size_t n = strlen(section);
	for (int k = 0; k < CONFIG_NKEYS; k++) {
		if (strncmp(keys[k].name, section, n) || keys[k].name[n] != '.')
			continue;
		strbuf_addf(&sb, "%s%s", sb.len ? ", " : "", keys[k].name + n + 1);
	}
	return strbuf_detach(&sb, NULL);
}

static int top_field(struct reader *r, const char *key, void *ctx)
{
	if (!strcmp(key, "attribution"))
		return mapping(r, "'attribution'", "builtin-rules, rules", attribution_field, ctx);
	static const char *const sections[] = {"run", "ab", "report", "frames", "comment", "push"};
	for (size_t i = 0; i < sizeof(sections) / sizeof(*sections); i++) {
		if (strcmp(key, sections[i]))
			continue;
		struct section s = {sections[i], r};
		char *what = xasprintf("'%s'", sections[i]);
		char *known = section_keys(sections[i]);
		int rc = mapping(r, what, known, section_field, &s);
		free(known);
		free(what);
		return rc;
	}
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
	free(c->name);
	for (int k = 0; k < CONFIG_NKEYS; k++)
		value_clear(&c->values[k]);
	config_init(c);
}

int config_parse(struct config *c, const char *text, size_t len, const char *name)
{
	struct reader r = {.name = name, .c = c};
	free(c->name);
	c->name = xstrdup(name);
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
	if (mapping(&r, "the file", "run, ab, report, frames, comment, push, attribution",
	            top_field, c) < 0)
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

int config_load(struct config *c, const char *path)
{
	char *owned = NULL;
	int must_exist = 1;
	if (!path) {
		const char *env = getenv("CIPROF_CONFIG");
		if (env && *env) {
			path = env;
		} else {
			char *top = worktree_top(NULL);
			owned = top ? xasprintf("%s/.ciprof.yml", strcmp(top, "/") ? top : "")
			            : xstrdup(".ciprof.yml");
			free(top);
			path = owned;
			must_exist = 0;
		}
	}
	struct strbuf sb = STRBUF_INIT;
	sb.max = 4 << 20;
	int ret = 0;
	if (!must_exist && access(path, F_OK) != 0)
		goto env;
	if (strbuf_read_file(&sb, path) < 0) {
		ret = -1;
		goto out;
	}
	ret = config_parse(c, sb.buf, sb.len, path);
	if (ret < 0)
		goto out;
	c->path = xstrdup(path);
env:
	ret = config_apply_env(c, environ);
out:
	strbuf_release(&sb);
	free(owned);
	return ret;
}
