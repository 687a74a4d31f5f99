/* ciprof blame: which commit of a branch changed a function's (or a test's) CPU time. Reads
 * the quantity's value in each of the branch's last runs (report/history), finds the one most
 * likely change point (report/blame: the largest Welch t of log values, its p-value by
 * permutation) and names the first run after it: commit, subject, before -> after and the
 * confidence. */
#include "cli/cli.h"
#include "common/jsonout.h"
#include "cli/store_open.h"
#include "common/log.h"
#include "config/config.h"
#include "common/error.h"
#include "common/escape.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "report/blame.h"
#include "report/history.h"
#include "report/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	OPT_DB = 256,
	OPT_BRANCH,
	OPT_TEST,
	OPT_SELF,
	OPT_RUNS,
	OPT_MIN_CHANGE,
	OPT_ALPHA,
	OPT_FORMAT,
};

static const struct cli_option blame_options[] = {
        {"db", OPT_DB, "FILE",
         "database file (default: $CIPROF_DB, else .ciprof/ciprof.db at the repo top)"},
        {"branch", OPT_BRANCH, "B",
         "the branch whose history is searched (default: report.base-branch, else main)"},
        {"test", OPT_TEST, NULL, "NAME is a test: its CPU time, not a function's"},
        {"self", OPT_SELF, NULL, "the function's self time (default: its total time)"},
        {"runs", OPT_RUNS, "N", "search the branch's last N runs (default 100)"},
        {"min-change", OPT_MIN_CHANGE, "PCT",
         "smallest step reported as a change, in percent (default 5)"},
        {"alpha", OPT_ALPHA, "A", "largest p-value reported as a change (default 0.01)"},
        {"format", OPT_FORMAT, "FMT", "text (default) or json"},
        {NULL, 0, NULL, NULL},
};

static const char blame_usage[] =
        "NAME [--branch B] [--test] [--self] [--runs N] [--min-change PCT] [--alpha A]\n"
        "                    [--format text|json] [--db FILE]";
static const char blame_description[] =
        "Finds the commit of a branch that changed function NAME's CPU time (its total time:\n"
        "with everything it calls; --self: its own), or test NAME's with --test.\n"
        "\n"
        "NAME's CPU seconds are read from each of the branch's last --runs stored runs,\n"
        "oldest first (a run without NAME counts as 0 s). The change point is the split of\n"
        "that series with the largest Welch t statistic between the log values before and\n"
        "after it; its p-value comes from 999 shuffles of the series (how often a series\n"
        "with no order has a split at least as clear), so the search over every split is\n"
        "paid for. A change is reported when p <= --alpha and the medians before and after\n"
        "differ by at least --min-change; then the first run after the split names the\n"
        "commit. Each side needs at least 2 runs: 4 runs at the least, 20 or more to be sure.\n"
        "\n"
        "Output: the commit, its subject, before -> after (medians, CPU seconds per run), the\n"
        "change and the confidence (1 - p). --format json: {\"schema\", \"name\", \"measure\",\n"
        "\"branch\", \"runs\", \"found\", \"change\": {\"run\", \"commit\", \"subject\",\n"
        "\"before_seconds\", \"after_seconds\", \"delta\", \"p_value\", \"confidence\"},\n"
        "\"series\": [{\"run\", \"commit\", \"seconds\"}]} (see docs/blame.md).\n"
        "\n"
        "Exit status: 0 answered (a change found or not); 2 usage error; 3 runtime error (no\n"
        "database, no runs of the branch, NAME never seen in them).\n"
        "\n"
        "examples:\n"
        "  ciprof blame hash_keys\n"
        "  ciprof blame parse_line --self --branch develop\n"
        "  ciprof blame test_sort --test --format json";

struct blame_args {
	const char *db, *branch;
	int test, self, json;
	long runs;
	double min_change, alpha;
};

static int blame_opt(void *ctx, int id, const char *arg)
{
	struct blame_args *a = ctx;
	switch (id) {
	case OPT_DB:
		a->db = arg;
		return 0;
	case OPT_BRANCH:
		if (!*arg) {
			cli_usage_error("blame", "--branch needs a branch name");
			return -1;
		}
		a->branch = arg;
		return 0;
	case OPT_TEST:
		a->test = 1;
		return 0;
	case OPT_SELF:
		a->self = 1;
		return 0;
	case OPT_RUNS:
		if (cli_parse_int(arg, 4, 100000, &a->runs) < 0) {
			cli_usage_error("blame",
			                "--runs takes a whole number from 4 to 100000, not '%s'",
			                arg);
			return -1;
		}
		return 0;
	case OPT_MIN_CHANGE:
		if (cli_parse_number("blame", "--min-change", arg, 0, 1000, 0, &a->min_change) < 0)
			return -1;
		a->min_change /= 100;
		return 0;
	case OPT_ALPHA:
		return cli_parse_number("blame", "--alpha", arg, 0, 1, 1, &a->alpha);
	case OPT_FORMAT:
		if (!strcmp(arg, "text") || !strcmp(arg, "json")) {
			a->json = !strcmp(arg, "json");
			return 0;
		}
		cli_usage_error("blame", "--format takes text or json, not '%s'", arg);
		return -1;
	}
	return -1;
}

static const char *measure_words(const struct blame_args *a)
{
	return a->test ? "test CPU time" : a->self ? "self CPU time" : "total CPU time";
}

static void add_seconds(struct strbuf *o, double s)
{
	strbuf_addf(o, s < 10 ? "%.3f s" : s < 100 ? "%.2f s" : "%.1f s", s);
}

/* "run 18, commit 1a2b3c4d5e "subject"" for the terminal. */
static void add_run(struct strbuf *o, const struct report_point *p)
{
	char c[11];
	report_short_commit(c, p->commit);
	strbuf_addf(o, "run %lld", (long long)p->run);
	if (*c)
		strbuf_addf(o, ", commit %s", c);
	if (*p->subject) {
		strbuf_addstr(o, " \"");
		esc_append(o, p->subject, ESC_TERM);
		strbuf_addch(o, '"');
	}
}

static int print_text(const struct blame_args *a, const char *name, const struct report_history *h,
                      const struct report_changepoint *cp, int found)
{
	struct strbuf o = STRBUF_INIT;
	esc_append(&o, name, ESC_TERM);
	strbuf_addf(&o, " (%s) on ", measure_words(a));
	esc_append(&o, a->branch, ESC_TERM);
	strbuf_addf(&o, ", %zu runs: ", h->n);
	if (!cp->at) {
		strbuf_addstr(&o, "too few runs to tell (4 at the least)\n");
	} else if (found) {
		strbuf_addstr(&o, "changed at ");
		add_run(&o, &h->points[cp->at]);
		strbuf_addstr(&o, "\n  before: ");
		add_seconds(&o, cp->before);
		strbuf_addf(&o, " per run (median of %zu runs) -> after: ", cp->nbefore);
		add_seconds(&o, cp->after);
		strbuf_addf(&o, " (median of %zu runs), %+.1f %%\n", cp->nafter, 100 * cp->change);
		strbuf_addf(&o,
		            "  confidence %.1f %% (p = %.2g: %d shuffles of the series, how often "
		            "one has a split as clear)\n",
		            100 * (1 - cp->p), cp->p, BLAME_SHUFFLES);
		strbuf_addstr(&o, "  the last run before it: ");
		add_run(&o, &h->points[cp->at - 1]);
		strbuf_addch(&o, '\n');
	} else {
		strbuf_addf(&o, "no change of %.2g %% or more with p <= %.2g. The largest step: ",
		            100 * a->min_change, a->alpha);
		strbuf_addf(&o, "%+.1f %% at ", 100 * cp->change);
		add_run(&o, &h->points[cp->at]);
		strbuf_addf(&o, " (p = %.2g)\n", cp->p);
	}
	fwrite(o.buf, 1, o.len, stdout);
	strbuf_release(&o);
	return cli_finish_stdout();
}

static json_t *jnum(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static int print_json(const struct blame_args *a, const char *name, const struct report_history *h,
                      const double *v, const struct report_changepoint *cp, int found)
{
	json_t *root = json_object();
	jsonout_set(root, "schema", json_integer(1));
	jsonout_set(root, "name", jsonout_str(name));
	jsonout_set(root, "measure", json_string(a->test ? "test" : a->self ? "self" : "total"));
	jsonout_set(root, "branch", jsonout_str(a->branch));
	jsonout_set(root, "runs", json_integer((json_int_t)h->n));
	jsonout_set(root, "found", json_boolean(found));
	if (cp->at) {
		const struct report_point *p = &h->points[cp->at];
		json_t *c = json_object();
		jsonout_set(c, "run", json_integer((json_int_t)p->run));
		jsonout_set(c, "commit", jsonout_str(p->commit));
		jsonout_set(c, "subject", jsonout_str(p->subject));
		jsonout_set(c, "before_seconds", jnum(cp->before));
		jsonout_set(c, "after_seconds", jnum(cp->after));
		jsonout_set(c, "delta", jnum(cp->change));
		jsonout_set(c, "p_value", jnum(cp->p));
		jsonout_set(c, "confidence", jnum(1 - cp->p));
		jsonout_set(root, "change", c);
	} else {
		jsonout_set(root, "change", json_null());
	}
	json_t *series = json_array();
	for (size_t i = 0; i < h->n; i++) {
		json_t *p = json_object();
		jsonout_set(p, "run", json_integer((json_int_t)h->points[i].run));
		jsonout_set(p, "commit", jsonout_str(h->points[i].commit));
		jsonout_set(p, "seconds", jnum(v[i]));
		json_array_append_new(series, p);
	}
	jsonout_set(root, "series", series);
	if (jsonout_write(root, stdout, 0) < 0)
		return cli_runtime_error();
	return cli_finish_stdout();
}

int cmd_blame(int argc, char **argv)
{
	struct blame_args a = {.runs = 100, .min_change = 0.05, .alpha = 0.01};
	int first;
	int r = cli_parse(argc, argv, "blame", blame_usage, blame_description, blame_options,
	                  blame_opt, &a, &first);
	if (r)
		return r > 0 ? cli_finish_stdout() : EXIT_USAGE;
	if (first >= argc)
		return cli_usage_error("blame", "which function? usage: ciprof blame %s",
		                       blame_usage);
	/* Options may follow NAME too: parse what comes after it (NAME in argv[0]'s place). */
	const char *name = argv[first];
	int rest = first;
	r = cli_parse(argc - rest, argv + rest, "blame", blame_usage, blame_description,
	              blame_options, blame_opt, &a, &first);
	if (r)
		return r > 0 ? cli_finish_stdout() : EXIT_USAGE;
	first += rest;
	if (first < argc)
		return cli_usage_error("blame",
		                       "unexpected argument '%s'; see 'ciprof blame --help'",
		                       argv[first]);
	struct config cfg;
	config_init(&cfg);
	if (config_load(&cfg, NULL) < 0) {
		log_errmsg("%s", cp_last_error());
		config_release(&cfg);
		return EXIT_USAGE;
	}
	const char *cb = config_str(&cfg, CONFIG_REPORT_BASE_BRANCH);
	char *branch = xstrdup(a.branch ? a.branch : cb && *cb ? cb : "main");
	a.branch = branch;
	config_release(&cfg);

	struct store *s;
	if ((r = cli_store_open(&s, a.db, STORE_READONLY))) {
		free(branch);
		return r;
	}
	struct report_history h;
	report_history_init(&h);
	struct report_quantity q = {a.test   ? REPORT_TEST
	                            : a.self ? REPORT_SELF
	                                     : REPORT_TOTAL,
	                            name, NULL, 0};
	double *v = NULL;
	struct strbuf sb = STRBUF_INIT;
	if (report_history_load(s, branch, 0, (size_t)a.runs, &q, 1, &h) < 0) {
		r = cli_runtime_error();
		goto out;
	}
	if (!h.n) {
		cp_error("no runs of branch '%s' in the database ('ciprof runs' lists them; "
		         "--branch names another)",
		         esc_str(&sb, branch, ESC_TERM));
		r = cli_runtime_error();
		goto out;
	}
	/* A run without NAME took 0 s of it; the log needs a floor: half the smallest time
	 * measured. */
	v = xcalloc(h.n, sizeof(*v));
	double least = INFINITY;
	for (size_t i = 0; i < h.n; i++) {
		v[i] = isfinite(h.points[i].value[0]) ? h.points[i].value[0] : 0;
		if (v[i] > 0 && v[i] < least)
			least = v[i];
	}
	if (!isfinite(least)) {
		cp_error("%s '%s' was not seen in the last %zu runs of %s",
		         a.test ? "test" : "function", esc_str(&sb, name, ESC_TERM), h.n, branch);
		r = cli_runtime_error();
		goto out;
	}
	double *x = xcalloc(h.n, sizeof(*x));
	for (size_t i = 0; i < h.n; i++)
		x[i] = v[i] > 0 ? v[i] : least / 2;
	struct report_changepoint cp;
	report_changepoint(x, h.n, &cp);
	free(x);
	int found = cp.at && cp.p <= a.alpha && fabs(cp.change) >= a.min_change;
	r = a.json ? print_json(&a, name, &h, v, &cp, found) : print_text(&a, name, &h, &cp, found);
out:
	strbuf_release(&sb);
	free(v);
	report_history_release(&h);
	store_close(s);
	free(branch);
	return r;
}
