/* ciprof runs: the stored history, newest first, as a table or as JSON for machines. */
#include "cli/cli.h"
#include "common/jsonout.h"
#include "cli/store_open.h"
#include "common/escape.h"
#include "common/xalloc.h"

#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_DB = 256, OPT_BRANCH, OPT_LIMIT, OPT_FORMAT };

static const struct cli_option runs_options[] = {
        {"db", OPT_DB, "FILE",
         "database file (default: $CIPROF_DB, else .ciprof/ciprof.db at "
         "the repo top)"},
        {"branch", OPT_BRANCH, "B", "only runs of branch B"},
        {"limit", OPT_LIMIT, "N", "at most N runs, newest first (default 20; 0 = all)"},
        {"format", OPT_FORMAT, "FMT", "text (default) or json"},
        {NULL, 0, NULL, NULL},
};

static const char runs_usage[] = "[--db FILE] [--branch B] [--limit N] [--format text|json]";
static const char runs_description[] =
        "Lists the runs stored in the database, newest first: id, start time (UTC), branch,\n"
        "short commit ('+' when the work tree was dirty), exit status, samples and command.\n"
        "The id is what 'ciprof show', 'ciprof export' and 'ciprof report --head' take.\n"
        "JSON (stable, for scripts): {\"runs\": [{\"id\", \"commit\", \"branch\", \"created_at\"\n"
        "(ISO-8601 UTC), \"exit_code\", \"samples\", \"tags\" (an object), ...}]}.\n"
        "\n"
        "examples:\n"
        "  ciprof runs\n"
        "  ciprof runs --branch main --limit 5\n"
        "  ciprof runs --format json | jq '.runs[0].id'";

struct runs_args {
	const char *db, *branch;
	long limit;
	int json;
};

static int runs_opt(void *ctx, int id, const char *arg)
{
	struct runs_args *a = ctx;
	switch (id) {
	case OPT_DB:
		a->db = arg;
		return 0;
	case OPT_BRANCH:
		a->branch = arg;
		return 0;
	case OPT_LIMIT:
		if (cli_parse_int(arg, 0, 0x7fffffffL, &a->limit) < 0) {
			cli_usage_error("runs", "--limit takes a whole number >= 0, not '%s'", arg);
			return -1;
		}
		return 0;
	case OPT_FORMAT:
		if (!strcmp(arg, "text") || !strcmp(arg, "json")) {
			a->json = !strcmp(arg, "json");
			return 0;
		}
		cli_usage_error("runs", "--format takes text or json, not '%s'", arg);
		return -1;
	}
	return -1;
}

static json_t *run_json(const struct run_meta *m)
{
	char when[32];
	cli_iso_time(m->created_at, when, sizeof(when));
	json_t *tags = json_object();
	for (size_t i = 0; i < m->ntags; i++)
		jsonout_set(tags, m->tags[i].key, jsonout_str(m->tags[i].value));
	return json_pack("{s:I, s:o, s:o, s:s, s:i, s:I, s:o, s:b, s:o, s:o, s:o, s:I, s:o, "
	                 "s:o, s:f, s:f, s:i, s:I}",
	                 "id", (json_int_t)m->id, "commit", jsonout_str(m->commit), "branch",
	                 jsonout_str(m->branch), "created_at", when, "exit_code",
	                 m->stats.exit_status, "samples", (json_int_t)m->stats.samples, "tags",
	                 tags, "dirty", m->dirty, "merge_base", jsonout_str(m->merge_base),
	                 "subject", jsonout_str(m->subject), "ci_provider",
	                 jsonout_str(m->ci_provider), "pr_number", (json_int_t)m->pr_number,
	                 "job_url", jsonout_str(m->job_url), "command", jsonout_str(m->command),
	                 "cpu_seconds", m->stats.cpu_seconds, "wall_seconds", m->stats.wall_seconds,
	                 "hz", m->stats.hz, "lost", (json_int_t)m->stats.lost);
}

/* Where the table's COMMAND column starts. */
#define RUNS_COMMAND_COLUMN 70

/* Cuts sb to at most cols characters (UTF-8 sequences counted as one), the last one "…". */
static void cut_to_columns(struct strbuf *sb, size_t cols)
{
	size_t chars = 0, at = 0, keep = 0;
	for (; at < sb->len; at++) {
		if (((unsigned char)sb->buf[at] & 0xc0) == 0x80)
			continue;
		if (chars == cols - 1)
			keep = at;
		chars++;
	}
	if (chars > cols) {
		sb->len = keep;
		sb->buf[keep] = '\0';
		strbuf_addstr(sb, "\u2026");
	}
}

static void print_text(const struct run_meta *runs, size_t n)
{
	if (!n) {
		fputs("no runs stored yet; record one with 'ciprof run -- CMD'\n", stderr);
		return;
	}
	struct strbuf e1 = STRBUF_INIT, e2 = STRBUF_INIT, e3 = STRBUF_INIT;
	/* On a terminal a long command (a CI job's whole script) is cut to the line, so that
	 * each run stays one line; piped, it is whole. */
	size_t width = 0;
	struct winsize ws;
	if (isatty(STDOUT_FILENO) && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col > 0)
		width = ws.ws_col > RUNS_COMMAND_COLUMN + 20 ? ws.ws_col - RUNS_COMMAND_COLUMN : 20;
	printf("%6s  %-16s  %-16s  %-9s %4s %9s  %s\n", "ID", "TIME (UTC)", "BRANCH", "COMMIT",
	       "EXIT", "SAMPLES", "COMMAND");
	for (size_t i = 0; i < n; i++) {
		const struct run_meta *m = &runs[i];
		char when[32];
		cli_iso_time(m->created_at, when, sizeof(when));
		when[10] = ' ';
		when[16] = '\0';
		char commit[10];
		snprintf(commit, sizeof(commit), "%.8s%s", *m->commit ? m->commit : "-",
		         m->dirty ? "+" : "");
		esc_str(&e3, m->command, ESC_TERM);
		if (width)
			cut_to_columns(&e3, width);
		printf("%6lld  %-16s  %-16.16s  %-9s %4d %9llu  %s\n", (long long)m->id, when,
		       *m->branch ? esc_str(&e1, m->branch, ESC_TERM) : "-",
		       esc_str(&e2, commit, ESC_TERM), m->stats.exit_status,
		       (unsigned long long)m->stats.samples, e3.buf);
	}
	strbuf_release(&e1);
	strbuf_release(&e2);
	strbuf_release(&e3);
}

int cmd_runs(int argc, char **argv)
{
	struct runs_args a = {.limit = 20};
	int first;
	int r = cli_parse(argc, argv, "runs", runs_usage, runs_description, runs_options, runs_opt,
	                  &a, &first);
	if (r)
		return r > 0 ? cli_finish_stdout() : EXIT_USAGE;
	if (first < argc)
		return cli_usage_error("runs", "unexpected argument '%s'; see 'ciprof runs --help'",
		                       argv[first]);
	struct store *s;
	if ((r = cli_store_open(&s, a.db, STORE_READONLY)))
		return r;
	struct run_meta *runs;
	size_t n;
	if (store_list_runs(s, a.branch, (size_t)a.limit, &runs, &n) < 0) {
		store_close(s);
		return cli_runtime_error();
	}
	store_close(s);
	if (a.json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, run_json(&runs[i]));
		if (jsonout_write(json_pack("{s:o}", "runs", arr), stdout, 0) < 0) {
			store_runs_free(runs, n);
			return cli_runtime_error();
		}
	} else {
		print_text(runs, n);
	}
	store_runs_free(runs, n);
	return cli_finish_stdout();
}
