/* .ciprof.yml: the project's ciprof settings, read with libyaml. Every setting is a key of one
 * table (config.c) with its type, range, default and environment variable; each value
 * remembers where it came from (default, the file's line, the environment, a command-line
 * flag), and later sources override earlier ones: default < file < environment < flag.
 * An unknown key or a value of the wrong kind is an error naming the file, line and column,
 * so a typo never silently does nothing. docs/config.md lists the keys. */
#ifndef CP_CONFIG_H
#define CP_CONFIG_H

#include <stddef.h>

/* The sampling rate when nothing sets one (run.hz, --hz): the one place it is written. 999 Hz
 * gives a function holding 5 % of a 4-CPU-second suite about 200 samples per run, which the
 * report's tests need to see a 30 % change; it costs about 3-4 % CPU (docs/benchmarks.md). */
#define CIPROF_DEFAULT_HZ 999
/* ciprof ab's rate when nothing sets one (ab.hz, ab --hz). Its overhead hits base and head
 * alike, and at 4999 Hz a function holding 5 % of a half-CPU-second suite has about 130 samples
 * a run, enough for ab to find a 10 % change of it (docs/benchmarks.md, bench/ab). */
#define CIPROF_DEFAULT_AB_HZ 4999
#define CIPROF_STR_(x)       #x
#define CIPROF_STR(x)        CIPROF_STR_(x)

struct config_rule {
	char *name, *caller, *test, *as; /* owned; caller and as may be NULL */
	unsigned line;                   /* where the rule starts, for later error messages */
};

/* The settings, in the order `ciprof config` prints them. */
enum config_key {
	CONFIG_RUN_HZ,              /* int 1..10000 (config.c), default CIPROF_DEFAULT_HZ */
	CONFIG_RUN_BACKEND,         /* auto | perf | preload */
	CONFIG_AB_HZ,               /* int 1..10000, default CIPROF_DEFAULT_AB_HZ (ciprof ab) */
	CONFIG_REPORT_BASE_BRANCH,  /* string; "" = the head run's base branch, else main */
	CONFIG_REPORT_BASE_RUNS,    /* int 1..1000, default 5 */
	CONFIG_REPORT_HEAD_RUNS,    /* int 1..20, default 3 */
	CONFIG_REPORT_MIN_CHANGE,   /* percent, 0..1000, default 5 */
	CONFIG_REPORT_MIN_SHARE,    /* percent, 0..100, default 0.5 */
	CONFIG_REPORT_ALPHA,        /* 0 < alpha < 1, default 0.001 */
	CONFIG_FRAMES_IGNORE,       /* list of POSIX extended regexes */
	CONFIG_FRAMES_FOLD,         /* list of POSIX extended regexes */
	CONFIG_COMMENT_ENABLED,     /* bool, default true */
	CONFIG_COMMENT_PROVIDER,    /* auto | github | gitlab */
	CONFIG_PUSH_SERVER,         /* string: Pyroscope's base URL; "" = push needs --server */
	CONFIG_PUSH_APP,            /* string: application name; "" = the repository's name */
	CONFIG_PUSH_TENANT,         /* string: X-Scope-OrgID; "" = none */
	CONFIG_PUSH_USER,           /* string: basic-auth user (password: CIPROF_PUSH_PASSWORD) */
	CONFIG_ATTRIBUTION_BUILTIN, /* attribution.builtin-rules: bool, default true */
	CONFIG_NKEYS,
};

enum config_type {
	CONFIG_T_INT,
	CONFIG_T_NUMBER,
	CONFIG_T_BOOL,
	CONFIG_T_STRING,
	CONFIG_T_CHOICE,
	CONFIG_T_REGEX_LIST,
};

/* Where a value came from, weakest first. */
enum config_source { CONFIG_DEFAULT = 0, CONFIG_FILE, CONFIG_ENV, CONFIG_FLAG };

struct config_key_info {
	const char *name; /* "run.hz" */
	enum config_type type;
	const char *def;     /* the default, as text */
	double min, max;     /* INT and NUMBER */
	int min_open;        /* NUMBER: min itself is refused */
	const char *choices; /* CHOICE: "auto|perf|preload" */
	const char *env;     /* its environment variable (NULL for lists) */
	const char *help;    /* one line, for `ciprof config` and the docs */
};

struct config_value {
	char *text;  /* owned canonical text; NULL = the default's */
	double num;  /* INT, NUMBER and BOOL (0/1) */
	char **list; /* REGEX_LIST: owned patterns */
	size_t nlist, list_alloc;
	enum config_source source;
	unsigned line, column; /* CONFIG_FILE: where the value starts (1-based) */
};

struct config {
	char *path;                /* owned; the file read, or NULL when none */
	char *name;                /* owned; the name given to config_parse (for origins) */
	int builtin_rules;         /* mirrors CONFIG_ATTRIBUTION_BUILTIN (kept for cmd_run) */
	struct config_rule *rules; /* attribution.rules */
	size_t nrules, rules_alloc;
	unsigned rules_line; /* where attribution.rules starts, 0 when absent */
	struct config_value values[CONFIG_NKEYS];
};

/* Embedded object: config_init allocates nothing; config_release frees and re-inits. */
void config_init(struct config *c);
void config_release(struct config *c);

/* Parses YAML text; name is used in errors ("NAME:LINE:COLUMN: what"). 0 or -1 (cp_error). */
int config_parse(struct config *c, const char *text, size_t len, const char *name);

/*
 * Loads path; when path is NULL, $CIPROF_CONFIG if set, else .ciprof.yml at the top of the
 * git work tree (or in the current folder outside git) if it exists. A missing default file
 * is not an error (c stays at defaults); a missing named file is. Then applies the
 * environment (config_apply_env on environ). 0 or -1 (cp_error).
 */
int config_load(struct config *c, const char *path);

/* Applies each key's environment variable (CIPROF_RUN_HZ, ...) found non-empty in envp
 * (NULL-terminated "NAME=value"). A bad value is an error naming the variable. 0 or -1. */
int config_apply_env(struct config *c, char *const *envp);

/*
 * Sets key k from text, as the source src says (CONFIG_FLAG for a command-line flag), after
 * the same checks the file gets; a list key appends one pattern. 0, or -1 with cp_error set to
 * "'run.hz' must be ..." (no location: the caller knows where the text came from).
 */
int config_set(struct config *c, enum config_key k, const char *text, enum config_source src);

/* The table: NULL for an out-of-range k. */
const struct config_key_info *config_key_info(enum config_key k);
/* The --help line of a command-line option setting key k, from the table: its help (less the
 * "(run --hz)" pointer back to the option), the range or choices, the default and where
 * else it is set: "samples per CPU-second per thread, 1..10000 (default 999; run.hz,
 * CIPROF_RUN_HZ)". Owned. */
char *config_option_help(enum config_key k);
/* "run.hz" -> CONFIG_RUN_HZ; 0, or -1 when no such key. */
int config_key_find(const char *name, enum config_key *out);

/* Typed reads of the effective value. config_str returns borrowed text (choices, strings,
 * and the canonical text of any scalar); config_list a borrowed array of *n patterns. */
long config_int(const struct config *c, enum config_key k);
double config_number(const struct config *c, enum config_key k);
int config_bool(const struct config *c, enum config_key k);
const char *config_str(const struct config *c, enum config_key k);
char *const *config_list(const struct config *c, enum config_key k, size_t *n);

/* Where k's value came from; config_is_set is "not the default". */
enum config_source config_source_of(const struct config *c, enum config_key k);
int config_is_set(const struct config *c, enum config_key k);
/* "default", "FILE:LINE", "environment (CIPROF_RUN_HZ)" or "command line"; owned. */
char *config_origin(const struct config *c, enum config_key k);

#endif
