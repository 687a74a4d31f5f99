/* store/ internals: a run row's figures, read one way (runs.c) wherever a run's profile is
 * loaded (load.c) or runs are merged (segtree.c). */
#ifndef CP_STORE_RUNS_H
#define CP_STORE_RUNS_H

#include "model/profile.h"

#include <sqlite3.h>

/* The runs table's columns run_stats_read reads, in its order. */
#define RUN_STATS_COLS                                                                             \
	"samples, lost, processes, threads, period_ns, cpu_seconds, wall_seconds, hz, exit_code"
/* Fills out from the RUN_STATS_COLS that start at column col of st's current row. */
void run_stats_read(sqlite3_stmt *st, int col, struct profile_stats *out);

#endif
