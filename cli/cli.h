/* cli/: the only room that prints to the user and chooses exit codes. Each command lives in
 * cmd_<name>.c as int cmd_<name>(int argc, char **argv) and is listed in main.c's table. */
#ifndef CP_CLI_H
#define CP_CLI_H

#include <stddef.h>
#include <stdio.h>

/* Exit codes of every command but `run` (which exits with its command's status). */
enum cli_exit {
	EXIT_OK = 0,
	EXIT_REGRESSION = 1, /* only with --fail-on-regression */
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
	const char *help; /* one line */
};

struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/*
 * Parses argv against opts (terminated by a zeroed entry). Calls on_opt for each option; it
 * returns 0, or -1 after printing a usage error. Handles -h/--help itself by printing usage
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
/* Parses a whole decimal integer in [min, max]; 0 or -1. */
int cli_parse_int(const char *s, long min, long max, long *out);
/* Flushes and closes stdout; a failure (full disk, closed pipe) is reported. 0 or EXIT_RUNTIME. */
int cli_finish_stdout(void);

int cmd_run(int argc, char **argv);
int cmd_exec_test(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_comment(int argc, char **argv);
int cmd_config(int argc, char **argv);

extern const struct cli_command cli_commands[];

#endif
