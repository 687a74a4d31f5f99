/* ciprof show: one stored run, by function (self and total share) or by test (samples, CPU
 * seconds, share), as text, JSON or folded stacks. */
#include "cli/cli.h"
#include "common/jsonout.h"
#include "cli/store_open.h"
#include "common/error.h"
#include "common/escape.h"
#include "common/log.h"
#include "common/xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_DB = 256, OPT_RUN, OPT_TEST, OPT_BY, OPT_TOP, OPT_FORMAT };
enum show_format { FMT_TEXT, FMT_JSON, FMT_FOLDED };

static const struct cli_option show_options[] = {
        {"db", OPT_DB, "FILE",
         "database file (default: $CIPROF_DB, else .ciprof/ciprof.db at "
         "the repo top)"},
        {"run", OPT_RUN, "ID", "the run to show (default: the latest; also as RUN)"},
        {"test", OPT_TEST, "NAME", "only samples of test NAME ('' = outside any test)"},
        {"by", OPT_BY, "WHAT", "function (default) or test"},
        {"top", OPT_TOP, "N", "at most N rows (text default 20, JSON default all; 0 = all)"},
        {"format", OPT_FORMAT, "FMT", "text (default), json or folded"},
        {NULL, 0, NULL, NULL},
};

static const char show_usage[] =
        "[--db FILE] [RUN | --run ID] [--test NAME] [--by function|test] [--top N] "
        "[--format text|json|folded]";
static const char show_description[] =
        "Shows a stored run (RUN or --run ID: an id from 'ciprof runs' or 'latest', the\n"
        "default).\n"
        "--by function ranks functions by self samples (the function was on top of the stack)\n"
        "and shows total samples (anywhere on the stack, counted once per stack, so recursion\n"
        "does not inflate it); shares are fractions of the run's (or the test's) samples.\n"
        "--by test lists tests by samples with their CPU seconds; '(outside tests)' holds the\n"
        "samples of build tools and harness processes.\n"
        "--format folded prints 'root;caller;callee COUNT' lines for flamegraph.pl, speedscope\n"
        "or inferno; --by and --top do not apply to it.\n"
        "JSON (stable): by function {\"run\": ID, \"functions\": [{\"name\", \"self\", \"total\",\n"
        "\"self_share\", \"total_share\", ...}]}; by test {\"run\": ID, \"tests\": [{\"name\",\n"
        "\"samples\", \"cpu_seconds\", \"share\"}]}, plus \"status\" and \"duration_seconds\" for\n"
        "tests that 'run --junit' found in JUnit reports. JSON lists every row unless --top\n"
        "is given; \"more\" says how many rows --top left out (0 when none).\n"
        "Names are printed as they are, except that control characters show as symbols\n"
        "(U+241B for ESC) and bytes that are not UTF-8 as U+FFFD.\n"
        "\n"
        "examples:\n"
        "  ciprof show\n"
        "  ciprof show 12 --by test\n"
        "  ciprof show --test test_parser --top 5\n"
        "  ciprof show 12 --format folded > run12.folded";

struct show_args {
	const char *db, *test;
	int64_t run;
	int by_test;
	long top;
	enum show_format format;
};

static int show_opt(void *ctx, int id, const char *arg)
{
	struct show_args *a = ctx;
	switch (id) {
	case OPT_DB:
		a->db = arg;
		return 0;
	case OPT_RUN:
		return cli_parse_run("show", arg, &a->run);
	case OPT_TEST:
		a->test = arg;
		return 0;
	case OPT_BY:
		if (!strcmp(arg, "function") || !strcmp(arg, "test")) {
			a->by_test = !strcmp(arg, "test");
			return 0;
		}
		cli_usage_error("show", "--by takes function or test, not '%s'", arg);
		return -1;
	case OPT_TOP:
		if (cli_parse_int(arg, 0, 0x7fffffffL, &a->top) < 0) {
			cli_usage_error("show", "--top takes a whole number >= 0, not '%s'", arg);
			return -1;
		}
		return 0;
	case OPT_FORMAT:
		if (!strcmp(arg, "text"))
			a->format = FMT_TEXT;
		else if (!strcmp(arg, "json"))
			a->format = FMT_JSON;
		else if (!strcmp(arg, "folded"))
			a->format = FMT_FOLDED;
		else {
			cli_usage_error("show", "--format takes text, json or folded, not '%s'",
			                arg);
			return -1;
		}
		return 0;
	}
	return -1;
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

/* How many of n rows to show: --top when given (0 = all), else 20 in text and all in JSON. */
static size_t rows_shown(const struct show_args *a, size_t n)
{
	long top = a->top >= 0 ? a->top : a->format == FMT_JSON ? 0 : 20;
	return top && (size_t)top < n ? (size_t)top : n;
}

static int show_functions(const struct profile *p, int64_t run, const struct run_meta *m,
                          const struct show_args *a)
{
	uint64_t total = profile_total(p, NULL);
	struct profile_func *f;
	size_t n = profile_functions(p, NULL, &f);
	size_t shown = rows_shown(a, n);
	int ret = 0;
	if (a->format == FMT_JSON) {
		json_t *arr = json_array();
		for (size_t i = 0; i < shown; i++)
			json_array_append_new(
			        arr,
			        json_pack("{s:o, s:o, s:I, s:I, s:f, s:f}", "name",
			                  jsonout_str(profile_str(p, f[i].function)), "module",
			                  jsonout_str(profile_str(p, f[i].module)), "self",
			                  (json_int_t)f[i].self, "total", (json_int_t)f[i].total,
			                  "self_share", ratio(f[i].self, total), "total_share",
			                  ratio(f[i].total, total)));
		json_t *root = json_pack("{s:I, s:I, s:o, s:I}", "run", (json_int_t)run, "samples",
		                         (json_int_t)total, "functions", arr, "more",
		                         (json_int_t)(n - shown));
		if (root && a->test)
			json_object_set_new(root, "test", jsonout_str(a->test));
		ret = jsonout_write(root, stdout, 0);
	} else {
		struct strbuf e1 = STRBUF_INIT, e2 = STRBUF_INIT;
		printf("run %lld: %s%s%.10s, %llu samples", (long long)run,
		       *m->branch ? esc_str(&e1, m->branch, ESC_TERM) : "(no branch)",
		       *m->commit ? " " : "", esc_str(&e2, m->commit, ESC_TERM),
		       (unsigned long long)total);
		/* 'ciprof runs' counts the samples taken; here the periods no sample saw count
		 * too, as the [unsampled] frame (docs/run.md). */
		if (!a->test && m->stats.samples && total > m->stats.samples)
			printf(" (%llu taken, %llu periods unsampled)",
			       (unsigned long long)m->stats.samples,
			       (unsigned long long)(total - m->stats.samples));
		if (a->test)
			printf(", test '%s'", esc_str(&e1, a->test, ESC_TERM));
		printf("\n%7s %7s  %s\n", "SELF", "TOTAL", "FUNCTION");
		for (size_t i = 0; i < shown; i++) {
			const char *mod = profile_str(p, f[i].module);
			printf("%6.2f%% %6.2f%%  %s", 100 * ratio(f[i].self, total),
			       100 * ratio(f[i].total, total),
			       esc_str(&e1, profile_str(p, f[i].function), ESC_TERM));
			if (*mod)
				printf(" [%s]", esc_str(&e1, mod, ESC_TERM));
			putchar('\n');
		}
		if (shown < n)
			printf("(%zu more; --top 0 shows all)\n", n - shown);
		strbuf_release(&e1);
		strbuf_release(&e2);
	}
	free(f);
	return ret;
}

struct test_row {
	const char *name;
	uint64_t samples;
	const struct profile_result *result; /* from run --junit, or NULL */
};

static const char *const status_names[] = {"passed", "failed", "error", "skipped"};

static const char *status_name(const struct profile_result *r)
{
	return r && r->status < 4 ? status_names[r->status] : "";
}

static int test_row_cmp(const void *x, const void *y)
{
	const struct test_row *a = x, *b = y;
	if (a->samples != b->samples)
		return a->samples < b->samples ? 1 : -1;
	return strcmp(a->name, b->name);
}

static int show_tests(const struct profile *p, int64_t run, const struct show_args *a)
{
	uint64_t *per = xcalloc(p->nstr ? p->nstr : 1, sizeof(*per));
	uint64_t total = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		per[p->samples[i].test] += p->samples[i].count;
		total += p->samples[i].count;
	}
	struct test_row *rows = NULL;
	size_t n = 0, alloc = 0;
	/* Tests with samples, and tests the JUnit reports name without samples. */
	for (size_t i = 0; i < p->nstr; i++) {
		const struct profile_result *r = profile_result(p, (uint32_t)i);
		if (!per[i] && !r)
			continue;
		ALLOC_GROW(rows, n + 1, alloc);
		rows[n++] = (struct test_row){profile_str(p, (uint32_t)i), per[i], r};
	}
	if (n)
		qsort(rows, n, sizeof(*rows), test_row_cmp);
	size_t shown = rows_shown(a, n);
	double period = (double)p->stats.period_ns / 1e9;
	int ret = 0;
	if (a->format == FMT_JSON) {
		json_t *arr = json_array();
		for (size_t i = 0; i < shown; i++) {
			json_t *t =
			        json_pack("{s:o, s:I, s:f, s:f}", "name", jsonout_str(rows[i].name),
			                  "samples", (json_int_t)rows[i].samples, "cpu_seconds",
			                  (double)rows[i].samples * period, "share",
			                  ratio(rows[i].samples, total));
			if (rows[i].result) {
				json_object_set_new(t, "status",
				                    json_string(status_name(rows[i].result)));
				json_object_set_new(t, "duration_seconds",
				                    json_real(rows[i].result->seconds));
			}
			json_array_append_new(arr, t);
		}
		json_t *root =
		        json_pack("{s:I, s:I, s:o, s:I}", "run", (json_int_t)run, "samples",
		                  (json_int_t)total, "tests", arr, "more", (json_int_t)(n - shown));
		ret = jsonout_write(root, stdout, 0);
	} else {
		struct strbuf esc = STRBUF_INIT;
		size_t named = 0;
		for (size_t i = 0; i < n; i++)
			named += *rows[i].name != '\0';
		if (!named)
			printf("run %lld: %llu samples, all outside tests\n", (long long)run,
			       (unsigned long long)total);
		else
			printf("run %lld: %llu samples in %zu test%s%s\n", (long long)run,
			       (unsigned long long)total, named, named == 1 ? "" : "s",
			       named < n ? " and outside them" : "");
		int with_results = p->nresults > 0;
		if (with_results)
			printf("%9s %9s %7s  %-8s %8s  %s\n", "SAMPLES", "CPU-S", "SHARE", "RESULT",
			       "TIME-S", "TEST");
		else
			printf("%9s %9s %7s  %s\n", "SAMPLES", "CPU-S", "SHARE", "TEST");
		for (size_t i = 0; i < shown; i++) {
			printf("%9llu %9.3f %6.2f%%  ", (unsigned long long)rows[i].samples,
			       (double)rows[i].samples * period,
			       100 * ratio(rows[i].samples, total));
			if (with_results && rows[i].result)
				printf("%-8s %8.3f  ", status_name(rows[i].result),
				       rows[i].result->seconds);
			else if (with_results)
				printf("%-8s %8s  ", "", "");
			printf("%s\n", *rows[i].name ? esc_str(&esc, rows[i].name, ESC_TERM)
			                             : "(outside tests)");
		}
		if (shown < n)
			printf("(%zu more; --top 0 shows all)\n", n - shown);
		strbuf_release(&esc);
	}
	free(rows);
	free(per);
	return ret;
}

int cmd_show(int argc, char **argv)
{
	struct show_args a = {.top = -1};
	int r = cli_parse_with_run(argc, argv, "show", show_usage, show_description, show_options,
	                           show_opt, &a, &a.run);
	if (r)
		return r > 0 ? cli_finish_stdout() : EXIT_USAGE;
	int64_t run = a.run;
	struct store *s;
	if ((r = cli_store_open(&s, a.db, STORE_READONLY)))
		return r;
	struct profile *p = NULL;
	struct run_meta m;
	run_meta_init(&m);
	if ((!run && store_latest_run(s, NULL, &run) < 0) || store_get_run(s, run, &m) < 0 ||
	    store_load_profile(s, run, a.test, &p) < 0) {
		r = cli_runtime_error();
		goto out;
	}
	char *incomplete = run_meta_incomplete(&m);
	if (incomplete)
		log_warn("run %lld is incomplete (%s): the tests and functions that ran unseen are "
		         "missing (docs/run.md, \"Limits\")",
		         (long long)run, incomplete);
	free(incomplete);
	if (a.format == FMT_FOLDED) {
		if (profile_write_folded(p, stdout, NULL) < 0) {
			r = cli_runtime_error();
			goto out;
		}
	} else if (a.by_test ? show_tests(p, run, &a) < 0 : show_functions(p, run, &m, &a) < 0) {
		r = cli_runtime_error();
		goto out;
	}
	r = cli_finish_stdout();
out:
	run_meta_release(&m);
	profile_free(p);
	store_close(s);
	return r;
}
