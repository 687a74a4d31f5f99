/* Shared plumbing of the database commands: which file, opened how, errors printed once. */
#include "cli/store_open.h"
#include "cli/cli.h"
#include "common/log.h"
#include "common/error.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

int cli_store_check(const char *path)
{
	struct store *s = NULL;
	if (store_open(&s, path, STORE_CREATE) < 0)
		return -1;
	store_close(s);
	/* A writer makes the -wal and -shm files beside the database. */
	char *dir = xdirname(path);
	int r = 0;
	if (access(dir, W_OK) < 0)
		r = cp_error_errno(
		        "the database's folder %s is not writable%s; pass a writable --db", dir,
		        errno == EROFS ? " (a read-only mount)" : "");
	free(dir);
	return r;
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

int cli_parse_with_run(int argc, char **argv, const char *cmd, const char *usage_line,
                       const char *description, const struct cli_option *opts,
                       int (*on_opt)(void *ctx, int id, const char *arg), void *ctx, int64_t *run)
{
	int first, next;
	*run = -1; /* --run not given (cli_parse_run gives 0 for latest) */
	int r = cli_parse(argc, argv, cmd, usage_line, description, opts, on_opt, ctx, &first);
	if (r)
		return r;
	int64_t pos = -1;
	if (first < argc) {
		if (cli_parse_run(cmd, argv[first], &pos) < 0)
			return -1;
		/* Options may follow RUN: parse the rest again (argv[first] in argv[0]'s place). */
		r = cli_parse(argc - first, argv + first, cmd, usage_line, description, opts,
		              on_opt, ctx, &next);
		if (r)
			return r;
		if (first + next < argc) {
			cli_usage_error(
			        cmd, "unexpected argument '%s': give one run, as RUN or --run ID",
			        argv[first + next]);
			return -1;
		}
	}
	if (pos >= 0 && *run >= 0 && pos != *run) {
		char a[32], b[32];
		snprintf(a, sizeof(a), pos ? "%lld" : "latest", (long long)pos);
		snprintf(b, sizeof(b), *run ? "%lld" : "latest", (long long)*run);
		cli_usage_error(cmd, "RUN %s and --run %s name different runs; give one", a, b);
		return -1;
	}
	*run = pos >= 0 ? pos : *run >= 0 ? *run : 0;
	return 0;
}

void cli_iso_time(int64_t t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (!gmtime_r(&tt, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, size, "%lld", (long long)t);
}
