/* ciprof version: the version and what it was built with. */
#include "cli/cli.h"

#include <elfutils/version.h>
#include <stdio.h>

#include "ciprof_version.h"

static const struct cli_option version_options[] = {{NULL, 0, NULL, NULL}};

static int version_opt(void *ctx, int id, const char *arg)
{
	(void)ctx, (void)id, (void)arg;
	return -1;
}

int cmd_version(int argc, char **argv)
{
	int first;
	int r = cli_parse(argc, argv, "version", "",
	                  "Prints ciprof's version and the elfutils it was built with.",
	                  version_options, version_opt, NULL, &first);
	if (r)
		return r > 0 ? cli_finish_stdout() : EXIT_USAGE;
	if (first < argc)
		return cli_usage_error("version", "unexpected argument '%s'", argv[first]);
	printf("ciprof %s (elfutils %d.%d)\n", CIPROF_VERSION, _ELFUTILS_VERSION / 1000,
	       _ELFUTILS_VERSION % 1000);
	return cli_finish_stdout();
}
