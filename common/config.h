/* .ciprof.yml: the project's ciprof settings, read with libyaml. Only what ciprof uses today is
 * accepted; an unknown key or a value of the wrong kind is an error naming the file, line and
 * column, so a typo never silently does nothing. docs/config.md lists the keys. */
#ifndef CP_CONFIG_H
#define CP_CONFIG_H

#include <stddef.h>

struct config_rule {
	char *name, *caller, *test, *as; /* owned; caller and as may be NULL */
	unsigned line;                   /* where the rule starts, for later error messages */
};

struct config {
	char *path;                  /* owned; the file read, or NULL when none */
	int builtin_rules;           /* attribution.builtin-rules (default 1) */
	struct config_rule *rules;   /* attribution.rules */
	size_t nrules, rules_alloc;
};

void config_init(struct config *c);
void config_release(struct config *c);

/* Parses YAML text; name is used in errors ("NAME:LINE:COLUMN: what"). 0 or -1 (cp_error). */
int config_parse(struct config *c, const char *text, size_t len, const char *name);

/*
 * Loads path; when path is NULL, $CIPROF_CONFIG if set, else .ciprof.yml at the top of the
 * git work tree (or in the current folder outside git) if it exists. A missing default file
 * is not an error (c stays at defaults); a missing named file is. 0 or -1 (cp_error).
 */
int config_load(struct config *c, const char *path);

#endif
