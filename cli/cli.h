/* cli/: the only room that prints to the user and chooses exit codes. Each command lives in
 * cmd_<name>.c as int cmd_<name>(int argc, char **argv) and is listed in main.c's table. */
#ifndef CP_CLI_H
#define CP_CLI_H

#include "report/report.h"
#include "runner/runner.h"

#include <stddef.h>
#include <stdio.h>

/* Exit codes of every command but `run` (which exits with its command's status). */
enum cli_exit {
	EXIT_OK = 0,
	EXIT_REGRESSION = 1, /* only with --fail-on-regression */
	EXIT_NO_RUN = 1,     /* report --need-run: another run would not change the verdict */
	EXIT_USAGE = 2,
	EXIT_RUNTIME = 3,
};

/*
 * One option of a command. The same table drives getopt_long and the --help text, so the two
 * cannot disagree. id is what the parser returns for it (a short option letter, or a value
 * >= 256 for long-only options).
 */
struct cli_option {
	const char *long_name;
	int id;
	const char *arg;  /* NULL: takes no argument; otherwise its placeholder, e.g. "N" */
	const char *help; /* one line, or CLI_CONFIG_HELP("run.hz") */
};

/* The help of an option that sets a .ciprof.yml key: its text, range and default come from
 * the config key table (config/config.c), the one place they are written, and cli_config_arg
 * checks its value by the key's rules. */
#define CLI_CONFIG_HELP(key_name) "=" key_name

struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/*
 * Parses argv against opts (terminated by a zeroed entry). Calls on_opt for each option; it
 * returns 0, or -1 after printing a usage error. Handles -q/--quiet and -v/--verbose itself
 * (the log level: every command takes them), and -h/--help by printing usage
 * (usage_line, description, then the option table) and returning 1. Stops at the first
 * non-option (or after "--"): *first_arg is its index. Returns 0, 1 (help shown) or -1 (usage
 * error, already printed).
 */
int cli_parse(int argc, char **argv, const char *cmd, const char *usage_line,
              const char *description, const struct cli_option *opts,
              int (*on_opt)(void *ctx, int id, const char *arg), void *ctx, int *first_arg);
void cli_print_usage(FILE *out, const char *cmd, const char *usage_line, const char *description,
                     const struct cli_option *opts);

/* Prints "ciprof: error: MSG" (used for usage errors) and returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Checks arg as a value of the config key behind option id (CLI_CONFIG_HELP) with the
 * key's own rules (type, range, choices); *num gets its number (INT, NUMBER, BOOL). 0, or -1
 * after a usage error for cmd ("--hz: 'run.hz' must be ..."). */
int cli_config_arg(const char *cmd, const struct cli_option *opts, int id, const char *arg,
                   double *num);
/* Parses a whole decimal integer in [min, max]; 0 or -1. */
int cli_parse_int(const char *s, long min, long max, long *out);
/* --format of the reports, --backend and --unwind of the sampler: 0, or -1 after printing a
 * usage error for cmd (cli_parse_backend prints nothing when cmd is NULL). */
int cli_parse_report_format(const char *cmd, const char *arg, enum report_format *out);
int cli_parse_backend(const char *cmd, const char *arg, enum runner_backend *out);
int cli_parse_unwind(const char *cmd, const char *arg, enum runner_unwind *out);
/* Flushes and closes stdout; a failure (full disk, closed pipe) is reported. 0 or EXIT_RUNTIME. */
int cli_finish_stdout(void);

struct config;
struct attrib_rules;
/* The stack rules: the project's own (.ciprof.yml, loaded into cfg) first, so they win, then
 * the built-in ones unless the project turned them off. 0, or -1 with cp_error set. */
int cli_load_rules(struct config *cfg, struct attrib_rules *rules);
/* Parses a number in [lo, hi] (lo excluded when open_lo) for option opt of cmd; 0, or -1 after
 * printing a usage error. */
int cli_parse_number(const char *cmd, const char *opt, const char *arg, double lo, double hi,
                     int open_lo, double *out);
/* Writes buf to path, or to stdout when path is NULL, and closes stdout. 0 or EXIT_RUNTIME
 * (message printed). */
struct strbuf;
int cli_write_output(const char *path, const struct strbuf *buf);

int cmd_run(int argc, char **argv);
int cmd_exec_test(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_comment(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_ab(int argc, char **argv);
int cmd_blame(int argc, char **argv);

extern const struct cli_command cli_commands[];

#endif
