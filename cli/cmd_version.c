/* ciprof version: the version and what it was built with. */
#include "cli/cli.h"

#include <elfutils/version.h>
#include <stdio.h>

#ifndef CIPROF_VERSION
#define CIPROF_VERSION "0.1.0"
#endif

int cmd_version(int argc, char **argv)
{
	printf("ciprof %s (elfutils %d.%d)\n", CIPROF_VERSION, _ELFUTILS_VERSION / 1000,
	       _ELFUTILS_VERSION % 1000);
	return cli_finish_stdout();
}
