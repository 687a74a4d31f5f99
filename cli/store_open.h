/* Helpers the database commands (runs, show, export, gc) share: opening the database named by
 * --db / CIPROF_DB / the default path, and reporting runtime errors. */
#ifndef CP_CLI_STORE_OPEN_H
#define CP_CLI_STORE_OPEN_H

#include "store/store.h"

#include <stdint.h>

/* Opens db_opt, or store_default_path() when NULL, with store flags. Returns 0, or prints
 * "ciprof: error: ..." and returns EXIT_RUNTIME. *out is owned (store_close). */
int cli_store_open(struct store **out, const char *db_opt, int flags);
/* Whether a run could be stored at path, asked before a long command runs: the database opens
 * for writing (created, or upgraded, when needed; a foreign, corrupt or newer file is refused)
 * and its folder is writable. 0, or -1 with cp_error set; nothing is printed. */
int cli_store_check(const char *path);
/* Prints "ciprof: error: <cp_last_error()>" and returns EXIT_RUNTIME. */
int cli_runtime_error(void);
/* Parses a run argument: a run id, or "latest" (the newest run). 0, or -1 (usage error
 * printed for cmd). */
int cli_parse_run(const char *cmd, const char *arg, int64_t *out);

struct cli_option;
/*
 * cli_parse for the commands that name a run as `CMD [RUN]` or `--run ID` (the same meaning,
 * DESIGN's CLI contract): options may come before and after RUN. on_opt must store --run's
 * value in *run with cli_parse_run; *run ends as the run named (0: latest, or none named).
 * RUN and --run naming different runs ('latest' and an id count as different), a second RUN,
 * or any other argument is a usage error. Returns as cli_parse: 0, 1 (help shown), -1.
 */
int cli_parse_with_run(int argc, char **argv, const char *cmd, const char *usage_line,
                       const char *description, const struct cli_option *opts,
                       int (*on_opt)(void *ctx, int id, const char *arg), void *ctx, int64_t *run);
/* Formats unix seconds as ISO-8601 UTC ("2024-05-01T12:00:00Z") into buf (>= 21 bytes). */
void cli_iso_time(int64_t t, char *buf, size_t size);

#endif
