/* ciprof config: the effective configuration (defaults < .ciprof.yml < environment < command
 * line) printed as YAML that could be pasted back into .ciprof.yml, each value followed by
 * where it came from; or one value (--get) for scripts. */
#include "cli/cli.h"
#include "common/log.h"
#include "config/config.h"
#include "common/error.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
	OPT_GET = 256,
	OPT_SET,
	OPT_FILE,
};

static const struct cli_option config_options[] = {
        {"get", OPT_GET, "KEY", "print only KEY's value (lists: one item per line)"},
        {"set", OPT_SET, "KEY=VALUE",
         "override KEY as a command-line flag would (repeatable; lists append)"},
        {"file", OPT_FILE, "FILE", "read FILE instead of $CIPROF_CONFIG / .ciprof.yml"},
        {NULL, 0, NULL, NULL},
};

static const char config_usage[] = "[--file FILE] [--set KEY=VALUE]... [--get KEY]";
static const char config_description[] =
        "Prints the effective configuration as YAML, each value with where it came from:\n"
        "'default', FILE:LINE (.ciprof.yml at the top of the git work tree, or\n"
        "$CIPROF_CONFIG), 'environment (VARIABLE)' or 'command line'. Later sources win:\n"
        "defaults < .ciprof.yml < environment (CIPROF_RUN_HZ, CIPROF_REPORT_BASE_BRANCH, ...)\n"
        "< command-line flags. A malformed file or value is an error naming the line and\n"
        "column (exit 2). Keys and their meaning: docs/config.md.\n"
        "\n"
        "examples:\n"
        "  ciprof config\n"
        "  ciprof config --get report.base-branch\n"
        "  ciprof config --set run.hz=999";

struct config_args {
	const char *get, *file;
	const char **sets;
	size_t nsets, sets_alloc;
};

static int config_opt(void *ctx, int id, const char *arg)
{
	struct config_args *a = ctx;
	switch (id) {
	case OPT_GET:
		a->get = arg;
		return 0;
	case OPT_SET:
		if (!strchr(arg, '=') || *arg == '=') {
			cli_usage_error("config", "--set takes KEY=VALUE, not '%s'", arg);
			return -1;
		}
		ALLOC_GROW(a->sets, a->nsets + 1, a->sets_alloc);
		a->sets[a->nsets++] = arg;
		return 0;
	case OPT_FILE:
		a->file = arg;
		return 0;
	}
	return -1;
}

/* s as a YAML scalar: single-quoted, or double-quoted with escapes when it holds control
 * characters. */
static void yaml_quote(struct strbuf *sb, const char *s)
{
	int plain = 1;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			plain = 0;
	if (plain) {
		strbuf_addch(sb, '\'');
		for (const char *p = s; *p; p++) {
			if (*p == '\'')
				strbuf_addch(sb, '\'');
			strbuf_addch(sb, *p);
		}
		strbuf_addch(sb, '\'');
		return;
	}
	strbuf_addch(sb, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			strbuf_addf(sb, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			strbuf_addf(sb, "\\x%02x", *p);
		else
			strbuf_addch(sb, (char)*p);
	}
	strbuf_addch(sb, '"');
}

/* The file's name as printed: relative to the current folder when inside it. */
static char *display_path(const struct config *c)
{
	const char *p = c->path ? c->path : c->name ? c->name : "config";
	char *cwd = getcwd(NULL, 0);
	char *out;
	size_t n = cwd ? strlen(cwd) : 0;
	if (cwd && !strncmp(p, cwd, n) && p[n] == '/')
		out = xstrdup(p + n + 1);
	else
		out = xstrdup(p);
	free(cwd);
	return out;
}

static char *origin(const struct config *c, enum config_key k, const char *file)
{
	if (config_source_of(c, k) == CONFIG_FILE)
		return xasprintf("%s:%u", file, c->values[k].line);
	return config_origin(c, k);
}

/* Pads the line being built (since line_start) to a column, then adds "# what". */
static void comment(struct strbuf *sb, size_t line_start, const char *what)
{
	size_t col = sb->len - line_start;
	do
		strbuf_addch(sb, ' ');
	while (++col < 40);
	strbuf_addf(sb, "# %s\n", what);
}

static void print_value(struct strbuf *sb, const struct config *c, enum config_key k,
                        const char *file)
{
	const struct config_key_info *ki = config_key_info(k);
	const char *leaf = strchr(ki->name, '.') + 1;
	char *from = origin(c, k, file);
	size_t start = sb->len;
	strbuf_addf(sb, "  %s: ", leaf);
	if (ki->type == CONFIG_T_REGEX_LIST) {
		size_t n;
		char *const *list = config_list(c, k, &n);
		if (!n) {
			strbuf_addstr(sb, "[]");
			comment(sb, start, from);
		} else {
			sb->len--; /* no space after the colon */
			sb->buf[sb->len] = '\0';
			comment(sb, start, from);
			for (size_t i = 0; i < n; i++) {
				strbuf_addstr(sb, "    - ");
				yaml_quote(sb, list[i]);
				strbuf_addch(sb, '\n');
			}
		}
	} else if (ki->type == CONFIG_T_STRING && !*config_str(c, k)) {
		/* unset: shown commented out, so that the output stays valid .ciprof.yml */
		sb->len = start;
		sb->buf[sb->len] = '\0';
		strbuf_addf(sb, "  # %s:", leaf);
		char *what = xasprintf("%s: %s", from, ki->help);
		comment(sb, start, what);
		free(what);
	} else if (ki->type == CONFIG_T_STRING) {
		yaml_quote(sb, config_str(c, k));
		comment(sb, start, from);
	} else {
		strbuf_addstr(sb, config_str(c, k));
		comment(sb, start, from);
	}
	free(from);
}

static void print_rules(struct strbuf *sb, const struct config *c, const char *file)
{
	size_t start = sb->len;
	if (!c->nrules) {
		strbuf_addstr(sb, "  rules: []");
		comment(sb, start, "default: none");
		return;
	}
	strbuf_addstr(sb, "  rules:");
	char *from = xasprintf("%s:%u", file, c->rules_line);
	comment(sb, start, from);
	free(from);
	for (size_t i = 0; i < c->nrules; i++) {
		const struct config_rule *r = &c->rules[i];
		strbuf_addstr(sb, "    - name: ");
		yaml_quote(sb, r->name);
		strbuf_addch(sb, '\n');
		if (r->caller) {
			strbuf_addstr(sb, "      caller: ");
			yaml_quote(sb, r->caller);
			strbuf_addch(sb, '\n');
		}
		strbuf_addstr(sb, "      test: ");
		yaml_quote(sb, r->test);
		strbuf_addch(sb, '\n');
		if (r->as) {
			strbuf_addstr(sb, "      as: ");
			yaml_quote(sb, r->as);
			strbuf_addch(sb, '\n');
		}
	}
}

static void print_all(struct strbuf *sb, const struct config *c)
{
	char *file = display_path(c);
	strbuf_addstr(sb, "# ciprof's effective configuration: defaults < .ciprof.yml < "
	                  "environment < command line\n");
	if (c->path)
		strbuf_addf(sb, "# file: %s\n", file);
	else
		strbuf_addstr(sb, "# file: none (no .ciprof.yml at the top of the work tree)\n");
	char section[32] = "";
	for (int k = 0; k < CONFIG_NKEYS; k++) {
		const struct config_key_info *ki = config_key_info((enum config_key)k);
		int sl = (int)(strchr(ki->name, '.') - ki->name);
		if ((int)strlen(section) != sl || strncmp(section, ki->name, (size_t)sl)) {
			if (!strcmp(section, "attribution"))
				print_rules(sb, c, file);
			snprintf(section, sizeof(section), "%.*s", sl, ki->name);
			strbuf_addf(sb, "%s:\n", section);
		}
		print_value(sb, c, (enum config_key)k, file);
	}
	if (!strcmp(section, "attribution"))
		print_rules(sb, c, file);
	free(file);
}

int cmd_config(int argc, char **argv)
{
	struct config_args a = {0};
	struct config cfg;
	config_init(&cfg);
	struct strbuf out = STRBUF_INIT;
	int first, status;
	int r = cli_parse(argc, argv, "config", config_usage, config_description, config_options,
	                  config_opt, &a, &first);
	if (r) {
		status = r > 0 ? cli_finish_stdout() : EXIT_USAGE;
		goto out;
	}
	if (first < argc) {
		status = cli_usage_error("config",
		                         "unexpected argument '%s'; see 'ciprof config "
		                         "--help'",
		                         argv[first]);
		goto out;
	}
	enum config_key get_key = CONFIG_NKEYS;
	if (a.get && config_key_find(a.get, &get_key) < 0) {
		status = cli_usage_error("config", "no setting '%s'; 'ciprof config' lists them",
		                         a.get);
		goto out;
	}
	if (config_load(&cfg, a.file) < 0) {
		log_errmsg("%s", cp_last_error());
		status = EXIT_USAGE;
		goto out;
	}
	for (size_t i = 0; i < a.nsets; i++) {
		const char *eq = strchr(a.sets[i], '=');
		char *key = xstrndup(a.sets[i], (size_t)(eq - a.sets[i]));
		enum config_key k;
		if (config_key_find(key, &k) < 0)
			status = cli_usage_error("config",
			                         "no setting '%s'; 'ciprof config' lists "
			                         "them",
			                         key);
		else if (config_set(&cfg, k, eq + 1, CONFIG_FLAG) < 0)
			status = cli_usage_error("config", "--set: %s", cp_last_error());
		else
			status = 0;
		free(key);
		if (status)
			goto out;
	}
	if (a.get) {
		if (config_key_info(get_key)->type == CONFIG_T_REGEX_LIST) {
			size_t n;
			char *const *list = config_list(&cfg, get_key, &n);
			for (size_t i = 0; i < n; i++)
				strbuf_addf(&out, "%s\n", list[i]);
		} else {
			strbuf_addf(&out, "%s\n", config_str(&cfg, get_key));
		}
	} else {
		print_all(&out, &cfg);
	}
	fwrite(out.buf, 1, out.len, stdout);
	status = cli_finish_stdout();
out:
	strbuf_release(&out);
	free(a.sets);
	config_release(&cfg);
	return status;
}
