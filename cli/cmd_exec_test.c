/* ciprof exec-test NAME -- CMD: runs CMD (in place, same process) and tells the ciprof run
 * around it that CMD and every process it starts belong to test NAME. Outside ciprof it just
 * runs CMD, so it can stay in a build's test definitions (for example as a CTest launcher). */
#include "cli/cli.h"

#include "include/ciprof.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct cli_option exec_test_options[] = {
        {NULL, 0, NULL, NULL},
};

static int exec_test_opt(void *ctx, int id, const char *arg)
{
	return -1;
}

int cmd_exec_test(int argc, char **argv)
{
	int first;
	int r = cli_parse(
	        argc, argv, "exec-test", "NAME -- CMD [ARGS...]",
	        "Runs CMD as test NAME: under 'ciprof run', every CPU sample of CMD and of\n"
	        "the processes it starts is attributed to NAME. Without ciprof around it,\n"
	        "it simply runs CMD. CMD replaces ciprof exec-test (same process), so its\n"
	        "exit status and signals are CMD's own.\n"
	        "\n"
	        "examples:\n"
	        "  add_test(NAME parse COMMAND ciprof exec-test parse -- $<TARGET_FILE:t>)\n"
	        "  ciprof exec-test integration/db -- ./run-db-tests.sh",
	        exec_test_options, exec_test_opt, NULL, &first);
	if (r)
		return r > 0 ? cli_finish_stdout() : EXIT_USAGE;
	/* `ciprof exec-test $(EMPTY) -- ./cmd`: the option parser took `--` as its terminator,
	 * and CMD's first word would pass for NAME. `-- NAME -- CMD` (a NAME starting with '-')
	 * stays possible. */
	int no_name = first >= argc || (!strcmp(argv[first - 1], "--") &&
	                                (first + 1 >= argc || strcmp(argv[first + 1], "--")));
	if (no_name)
		return cli_usage_error("exec-test",
		                       "no test name given; usage: ciprof exec-test NAME -- CMD");
	const char *name = argv[first++];
	if (first < argc && !strcmp(argv[first], "--"))
		first++;
	if (first >= argc)
		return cli_usage_error("exec-test",
		                       "no command; usage: ciprof exec-test NAME -- CMD");
	if (!*name)
		return cli_usage_error("exec-test", "the test name must not be empty");
	const char *env = getenv("CIPROF_CONTROL_FD");
	if (env && *env) {
		if (strlen(name) > CIPROF_NAME_MAX)
			fprintf(stderr,
			        "ciprof: exec-test: warning: the test name is longer than %d "
			        "bytes; "
			        "it is cut there\n",
			        CIPROF_NAME_MAX);
		/* "proc PID NAME": this process is single-threaded, so its TID is its PID. */
		ciprof__mark("proc", name);
	}
	execvp(argv[first], argv + first);
	int e = errno;
	fprintf(stderr, "ciprof: cannot run '%s': %s\n", argv[first], strerror(e));
	return e == ENOENT || e == ENOTDIR ? 127 : 126;
}
