/* fwtool: the program behind the CTest example's tests. Each test is one or more processes:
 *   fwtool burn UNITS   burn UNITS of work
 *   fwtool input        burn the number of units written in ./units.txt (the working
 *                       directory decides the cost: two tests share one command line)
 * The work is recorded in $CIPROF_TRUTH under the name in $FW_TEST, which CMakeLists.txt sets
 * to the CTest test's name. */
#include "fw_work.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int units_from_file(const char *path, unsigned *out)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f) {
		perror(path);
		return -1;
	}
	ok = fscanf(f, "%u", out) == 1;
	fclose(f);
	if (!ok)
		fprintf(stderr, "fwtool: %s holds no unit count\n", path);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *test = getenv("FW_TEST");
	unsigned units;

	if (argc == 3 && !strcmp(argv[1], "burn")) {
		units = (unsigned)strtoul(argv[2], NULL, 10);
	} else if (argc == 2 && !strcmp(argv[1], "input")) {
		if (units_from_file("units.txt", &units))
			return 1;
	} else {
		fprintf(stderr, "usage: fwtool burn UNITS | fwtool input\n");
		return 2;
	}
	if (fw_run_test(test ? test : "(unnamed)", units) == 0)
		return 1; /* never: keeps the work observable */
	printf("fwtool: %u units done\n", units);
	return 0;
}
