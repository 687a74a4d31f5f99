/* ciprof's entry point: one table of commands, each in its own cmd_<name>.c. */
#include "cli/cli.h"
#include "common/log.h"

#include <stdio.h>
#include <string.h>

const struct cli_command cli_commands[] = {
        {"run", cmd_run, "profile a command and its whole process tree"},
        {"exec-test", cmd_exec_test, "run a command as one named test (a CTest launcher)"},
        {"runs", cmd_runs, "list stored runs"},
        {"show", cmd_show, "show a stored run by function or by test"},
        {"report", cmd_report, "compare a run with the base branch: what got slower"},
        {"blame", cmd_blame, "find the commit that changed a function's or a test's CPU time"},
        {"ab", cmd_ab, "profile base and head in turn on this machine and compare them"},
        {"export", cmd_export, "export a stored run (folded, speedscope, pprof)"},
        {"import", cmd_import, "store a profile from perf script, pprof or folded stacks"},
        {"push", cmd_push, "send a stored run to Grafana Pyroscope"},
        {"gc", cmd_gc, "delete old runs from the database"},
        {"merge", cmd_merge, "copy the runs of other databases into this one, each once"},
        {"comment", cmd_comment, "post or update the report as the PR/MR comment"},
        {"config", cmd_config, "print the effective configuration and its sources"},
        {"version", cmd_version, "print ciprof's version"},
        {"help", cmd_help, "show help for ciprof or one command"},
        {NULL, NULL, NULL},
};

static void print_main_usage(FILE *out)
{
	fputs("usage: ciprof [-v|-q] <command> [<options>] [-- CMD...]\n\n"
	      "ciprof profiles a test suite and tells which tests and functions got slower.\n\n"
	      "commands:\n",
	      out);
	for (const struct cli_command *c = cli_commands; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
	fputs("\nglobal options:\n"
	      "  -v, --verbose  say more (twice: debug)\n"
	      "  -q, --quiet    print only warnings and errors\n"
	      "  -h, --help     show this help\n"
	      "(-q, -v and -h also work after the command's name)\n\n"
	      "'ciprof help <command>' or 'ciprof <command> --help' explains one command.\n"
	      "Documentation: docs/ in the source tree, one page per command.\n",
	      out);
}

int cmd_help(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		print_main_usage(stdout);
		return cli_finish_stdout();
	}
	for (const struct cli_command *c = cli_commands; c->name; c++) {
		if (!strcmp(c->name, argv[1]) && c->fn != cmd_help) {
			char *args[] = {argv[1], "--help", NULL};
			return c->fn(2, args);
		}
	}
	return cli_usage_error("help", "unknown command '%s'; 'ciprof help' lists them", argv[1]);
}

int main(int argc, char **argv)
{
	int i = 1;
	int verbosity = LOG_NORMAL;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose"))
			verbosity++;
		else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet"))
			verbosity = LOG_QUIET;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return cmd_help(1, argv);
		else if (!strcmp(argv[i], "--version"))
			return cmd_version(1, argv);
		else
			return cli_usage_error(NULL, "unknown option '%s'; see 'ciprof --help'",
			                       argv[i]);
	}
	log_set_level(verbosity);
	if (i >= argc) {
		print_main_usage(stderr);
		return EXIT_USAGE;
	}
	for (const struct cli_command *c = cli_commands; c->name; c++)
		if (!strcmp(c->name, argv[i]))
			return c->fn(argc - i, argv + i);
	return cli_usage_error(NULL, "'%s' is not a ciprof command; see 'ciprof --help'", argv[i]);
}
