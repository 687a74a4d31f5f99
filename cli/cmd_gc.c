/* ciprof gc: fold old runs into per-commit aggregates (or delete them), keep the segment trees
 * exact, give the space back to SQLite. */
#include "cli/cli.h"
#include "common/log.h"
#include "cli/store_open.h"

#include <stdio.h>
#include <string.h>

enum { OPT_DB = 256, OPT_KEEP_RUNS, OPT_OLDER_THAN, OPT_NO_FOLD };

static const struct cli_option gc_options[] = {
        {"db", OPT_DB, "FILE",
         "database file (default: $CIPROF_DB, else .ciprof/ciprof.db at "
         "the repo top)"},
        {"keep-runs", OPT_KEEP_RUNS, "N",
         "keep the newest N runs (of all branches), fold the rest"},
        {"older-than", OPT_OLDER_THAN, "DAYS", "fold runs started more than DAYS days ago"},
        {"no-fold", OPT_NO_FOLD, NULL, "delete those runs instead of folding them"},
        {NULL, 0, NULL, NULL},
};

static const char gc_usage[] = "[--db FILE] (--keep-runs N | --older-than DAYS) [--no-fold]";
static const char gc_description[] =
        "Folds old runs into per-commit aggregates. With both options, a run is old when\n"
        "either says so. The old runs of one branch and commit become one run: the newest of\n"
        "them, holding their mean profile (each stack's samples averaged, rounded) and mean\n"
        "CPU and wall time, tagged gc.runs=N (how many runs it holds). It reads like one run\n"
        "of that commit, so report trends, the noise history and blame keep working. An old\n"
        "run alone at its commit stays as it is. --no-fold deletes the old runs instead.\n"
        "Branches that lost runs are renumbered and every segment tree is rebuilt, so baseline\n"
        "queries stay exact; stack nodes, frames and strings no remaining run uses are deleted\n"
        "too. Files created by this ciprof shrink; older ones reuse the freed pages.\n"
        "Prints what it did to standard error.\n"
        "\n"
        "examples:\n"
        "  ciprof gc --keep-runs 500\n"
        "  ciprof gc --older-than 90\n"
        "  ciprof gc --older-than 365 --no-fold\n"
        "  ciprof gc --db cache/ciprof.db --keep-runs 200 --older-than 30";

struct gc_args {
	const char *db;
	long keep, days;
	int no_fold;
};

static int gc_opt(void *ctx, int id, const char *arg)
{
	struct gc_args *a = ctx;
	switch (id) {
	case OPT_DB:
		a->db = arg;
		return 0;
	case OPT_NO_FOLD:
		a->no_fold = 1;
		return 0;
	case OPT_KEEP_RUNS:
		if (cli_parse_int(arg, 1, 0x7fffffffL, &a->keep) < 0) {
			cli_usage_error("gc", "--keep-runs takes a whole number >= 1, not '%s'",
			                arg);
			return -1;
		}
		return 0;
	case OPT_OLDER_THAN:
		if (cli_parse_int(arg, 1, 1000000, &a->days) < 0) {
			cli_usage_error("gc",
			                "--older-than takes a whole number of days >= 1, not "
			                "'%s'",
			                arg);
			return -1;
		}
		return 0;
	}
	return -1;
}

int cmd_gc(int argc, char **argv)
{
	struct gc_args a = {0};
	int first;
	int r = cli_parse(argc, argv, "gc", gc_usage, gc_description, gc_options, gc_opt, &a,
	                  &first);
	if (r)
		return r > 0 ? cli_finish_stdout() : EXIT_USAGE;
	if (first < argc)
		return cli_usage_error("gc", "unexpected argument '%s'; see 'ciprof gc --help'",
		                       argv[first]);
	if (!a.keep && !a.days)
		return cli_usage_error("gc", "say what to delete: --keep-runs N and/or "
		                             "--older-than DAYS");
	struct store *s;
	if ((r = cli_store_open(&s, a.db, 0)))
		return r;
	struct store_gc_opts o = {
	        .keep_runs = (size_t)a.keep, .older_than_days = a.days, .fold = !a.no_fold};
	struct store_gc_result res;
	if (store_gc(s, &o, &res) < 0) {
		store_close(s);
		return cli_runtime_error();
	}
	store_close(s);
	if (res.aggregates)
		log_info("gc: folded %zu runs into %zu per-commit aggregates", res.runs_folded,
		         res.aggregates);
	log_info("gc: deleted %zu runs, kept %zu; rebuilt %zu segment trees; pruned %zu "
	         "stack nodes, %zu frames, %zu strings",
	         res.runs_deleted, res.runs_kept, res.branches_rebuilt, res.nodes_pruned,
	         res.frames_pruned, res.strings_pruned);
	return cli_finish_stdout();
}
