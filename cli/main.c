/* ciprof's entry point: one table of commands, each in its own cmd_<name>.c. */
#include "cli/cli.h"
#include "common/log.h"
#include "common/nearest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where ciprof keeps the caller's LD_PRELOAD while it runs itself again without a sanitizer
 * runtime (drop_sanitizer_preload); never seen by the command. */
#define SAVED_PRELOAD_VAR "CIPROF_SAVED_LD_PRELOAD"

/* A sanitizer runtime (libasan.so, libclang_rt.asan-x86_64.so...): ciprof itself is not
 * instrumented, so such a library only belongs in the command's LD_PRELOAD. */
static int is_sanitizer_runtime(const char *entry, size_t len)
{
	static const char *const names[] = {"libasan",
	                                    "libhwasan",
	                                    "libtsan",
	                                    "liblsan",
	                                    "libmsan",
	                                    "libclang_rt.asan",
	                                    "libclang_rt.hwasan",
	                                    "libclang_rt.tsan",
	                                    "libclang_rt.lsan",
	                                    "libclang_rt.msan"};
	const char *base = entry;
	for (const char *c = entry; c < entry + len; c++)
		if (*c == '/')
			base = c + 1;
	size_t blen = (size_t)(entry + len - base);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]);
		if (blen > n && !strncmp(base, names[i], n) && (base[n] == '.' || base[n] == '-'))
			return 1;
	}
	return 0;
}

/* The user's LD_PRELOAD is for the command; a sanitizer runtime in it must not run inside
 * ciprof. With libasan.so preloaded into ciprof, ASan initializes lazily on the first malloc it
 * sees, and that can be inside glibc's newlocale() called by libp11-kit's constructor (linked
 * in through libcurl and libgit2) with glibc's locale lock held for writing: ASan's start-up
 * calls dlerror(), whose gettext takes and then releases that same lock, so newlocale's own
 * unlock finds it free and leaves its reader count at -1. From the next strerror() on (libgit2
 * calls it while opening the repository) the lock counts a reader that never leaves, and the
 * next writer, libp11-kit's destructor calling freelocale() in exit(), waits forever: ciprof
 * hung after writing the profile. The corruption happens before main(), so the only cure is a
 * process that never loads the runtime: ciprof runs itself again (/proc/self/exe) with the
 * runtime taken out of LD_PRELOAD, and puts the user's LD_PRELOAD back, unchanged, for the
 * command. Other preloaded libraries stay (an outer ciprof's sampler keeps sampling ciprof). */
static void drop_sanitizer_preload(char **argv)
{
	const char *saved = getenv(SAVED_PRELOAD_VAR);
	if (saved) { /* the second start: give the command what the user gave ciprof */
		if (setenv("LD_PRELOAD", saved, 1) == 0)
			unsetenv(SAVED_PRELOAD_VAR);
		return;
	}
	const char *pre = getenv("LD_PRELOAD");
	if (!pre || !*pre)
		return;
	/* ld.so separates entries by colons or spaces. */
	size_t plen = strlen(pre);
	char *kept = malloc(plen + 1);
	if (!kept)
		return;
	size_t k = 0;
	int dropped = 0;
	for (const char *e = pre; *e;) {
		size_t len = strcspn(e, ": ");
		if (len && is_sanitizer_runtime(e, len)) {
			dropped = 1;
		} else if (len) {
			if (k)
				kept[k++] = ':';
			memcpy(kept + k, e, len);
			k += len;
		}
		e += len;
		if (*e)
			e++;
	}
	kept[k] = '\0';
	if (dropped && setenv(SAVED_PRELOAD_VAR, pre, 1) == 0) {
		int r = k ? setenv("LD_PRELOAD", kept, 1) : unsetenv("LD_PRELOAD");
		if (r == 0)
			execv("/proc/self/exe", argv);
		/* No /proc: ciprof goes on with the runtime loaded, as before. */
		const char *again = getenv(SAVED_PRELOAD_VAR);
		if (again)
			setenv("LD_PRELOAD", again, 1);
		unsetenv(SAVED_PRELOAD_VAR);
	}
	free(kept);
}

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

/* The command nearest to a mistyped one ("reprot": report), or NULL. */
static const char *nearest_command(const char *typo)
{
	const char *best = NULL;
	size_t bestd = 3, d;
	for (const struct cli_command *c = cli_commands; c->name; c++)
		if (nearest_is_near(typo, c->name, &d) && d < bestd) {
			best = c->name;
			bestd = d;
		}
	return best;
}

/* "unknown command" for help and for main, with a suggestion when one is near. */
static int unknown_command(const char *cmd, const char *name, const char *see)
{
	const char *near = nearest_command(name);
	if (near)
		return cli_usage_error(cmd, "'%s' is not a ciprof command; did you mean %s?", name,
		                       near);
	return cli_usage_error(cmd, "'%s' is not a ciprof command; %s", name, see);
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
	return unknown_command("help", argv[1], "'ciprof help' lists them");
}

int main(int argc, char **argv)
{
	drop_sanitizer_preload(argv);
	int i = 1;
	int verbosity = LOG_NORMAL;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--verbose"))
			verbosity++;
		else if (argv[i][1] == 'v' && strspn(argv[i] + 1, "v") == strlen(argv[i] + 1))
			verbosity += (int)strlen(argv[i] + 1); /* -v, -vv (as a command's -vv) */
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
	return unknown_command(NULL, argv[i], "see 'ciprof --help'");
}
