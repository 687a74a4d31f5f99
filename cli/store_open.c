/* Shared plumbing of the database commands: which file, opened how, errors printed once. */
#include "cli/store_open.h"
#include "cli/cli.h"
#include "common/log.h"
#include "common/error.h"
#include "common/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cli_runtime_error(void)
{
	log_errmsg("%s", cp_last_error());
	return EXIT_RUNTIME;
}

int cli_store_open(struct store **out, const char *db_opt, int flags)
{
	char *path = db_opt ? xstrdup(db_opt) : store_default_path();
	int r = store_open(out, path, flags);
	free(path);
	return r < 0 ? cli_runtime_error() : 0;
}

int cli_parse_run(const char *cmd, const char *arg, int64_t *out)
{
	long v;
	if (!strcmp(arg, "latest")) {
		*out = 0;
		return 0;
	}
	if (cli_parse_int(arg, 1, 0x7fffffffL, &v) < 0) {
		cli_usage_error(cmd,
		                "'%s' is not a run; give a run id from 'ciprof runs' or 'latest'",
		                arg);
		return -1;
	}
	*out = v;
	return 0;
}

void cli_iso_time(int64_t t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (!gmtime_r(&tt, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, size, "%lld", (long long)t);
}
