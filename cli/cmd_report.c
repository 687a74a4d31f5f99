/* ciprof report: compare a stored run (the head) with its baseline (runs of the base branch)
 * and print what got slower or faster, as Markdown, HTML, SVG or JSON. Exit 1 only with
 * --fail-on-regression when the verdict is regression. */
#include "cli/ab.h"
#include "cli/cli.h"
#include "cli/store_open.h"
#include "config/config.h"
#include "common/error.h"
#include "report/frames_filter.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "forge/forge.h"
#include "report/report.h"
#include "runner/meta/gitmeta.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	OPT_DB = 256,
	OPT_HEAD,
	OPT_BASE,
	OPT_BASE_RUNS,
	OPT_HEAD_RUNS,
	OPT_FORMAT,
	OPT_FAIL,
	OPT_MIN_CHANGE,
	OPT_MIN_SHARE,
	OPT_ALPHA,
	OPT_AB,
	OPT_ID,
	OPT_ARTIFACT_URL,
	OPT_TREND_RUNS,
	OPT_FOCUS,
	OPT_NEED_RUN,
};

extern char **environ;

#define TREND_RUNS 20 /* base runs in the Markdown trend charts */

static const struct cli_option report_options[] = {
        {"db", OPT_DB, "FILE",
         "database file (default: $CIPROF_DB, else .ciprof/ciprof.db at the repo top)"},
        {"head", OPT_HEAD, "RUN", "the run to judge: an id from 'ciprof runs' (default: latest)"},
        {"base", OPT_BASE, "REF",
         "compare with a branch, a run id or a commit (default: the head's base branch, else "
         "main)"},
        {"base-runs", OPT_BASE_RUNS, "N", "at most N base runs merged as the baseline (default 5)"},
        {"head-runs", OPT_HEAD_RUNS, "N",
         "a finding must show in each of the newest N runs of the head's commit (default 3; "
         "1: the head alone)"},
        {"format", OPT_FORMAT, "FMT", "md (default), html, svg or json"},
        {"output", 'o', "FILE", "write the report to FILE instead of standard output"},
        {"fail-on-regression", OPT_FAIL, NULL, "exit 1 when the verdict is regression"},
        {"min-change", OPT_MIN_CHANGE, "PCT",
         "smallest relative change reported, in percent (default 5)"},
        {"min-share", OPT_MIN_SHARE, "PCT",
         "judge only what holds PCT % of samples on one side (default 0.5)"},
        {"alpha", OPT_ALPHA, "A",
         "false discovery rate, 0 < A < 1 (default 0.001): tests and functions apart"},
        {"ab", OPT_AB, "ID", "render the stored 'ciprof ab' comparison ID again"},
        {"id", OPT_ID, "NAME",
         "which suite this is (a CI matrix job): its own sticky comment (see 'comment --id')"},
        {"artifact-url", OPT_ARTIFACT_URL, "URL",
         "link the Markdown to the HTML report there (default: $CIPROF_ARTIFACT_URL, else "
         "the CI run's artifacts)"},
        {"trend-runs", OPT_TREND_RUNS, "N",
         "base runs in the Markdown trend charts (default 20; 0: no charts)"},
        {"focus", OPT_FOCUS, NULL,
         "svg: draw only the subtrees that hold findings (and the callers leading there)"},
        {"need-run", OPT_NEED_RUN, NULL,
         "no report: exit 0 when another run of the head's commit could decide a finding "
         "(up to --head-runs), else 1; prints which"},
        {NULL, 0, NULL, NULL},
};

static const char report_usage[] =
        "[--db FILE] [--head RUN] [--base REF] [--base-runs N] [--head-runs N]\n"
        "                     [--format md|html|svg|json] [-o FILE] [--fail-on-regression]\n"
        "                     [--min-change PCT] [--min-share PCT] [--alpha A]\n"
        "                     [--id NAME] [--artifact-url URL] [--trend-runs N] [--focus]\n"
        "       ciprof report [--db FILE] [--head RUN] [--base REF] [--head-runs N] --need-run";
static const char report_description[] =
        "Compares a stored run (the head, default the newest) with its baseline and reports\n"
        "which tests and functions got slower or faster, in CPU time.\n"
        "\n"
        "The baseline, for a branch REF: the runs of REF that the head contains, those at\n"
        "the head's merge-base commit first, then the newest of older commits; never a base\n"
        "run of a later commit, nor one whose command failed (exit status not 0), nor an\n"
        "incomplete one (some of its processes the kernel did not follow, or a CPU's\n"
        "ring buffer fell silent: the run's host.unseen_processes or\n"
        "host.silent_ring_seconds tag, which 'ciprof run' warns about), nor one of\n"
        "another command while REF has runs of the head's. At most --base-runs of them,\n"
        "merged. REF may also be a run id or a commit (hex prefix). Without a baseline the\n"
        "report says so and ciprof exits 0; a REF that names nothing is a warning, and with\n"
        "--fail-on-regression an error.\n"
        "\n"
        "A change is reported when it is significant (a t test on the log of the counts,\n"
        "widened by each item's own run-to-run spread learned from the base branch's last\n"
        "30 runs, on the tails those runs show; Benjamini-Hochberg at --alpha over the\n"
        "tests, and as a separate family over the functions; with 20 or more history runs\n"
        "and a calm machine, once more over a flagged test's own functions, which then\n"
        "fail the build only with it), at least --min-change against\n"
        "the suite-wide factor (so a uniformly slower machine is not a regression),\n"
        "and the test or function holds at least --min-share of samples. Frames ciprof\n"
        "makes ([unsampled], [unknown]+0x...) are shown, never judged. The verdict is\n"
        "advisory and --fail-on-regression does not fail when the head's command failed\n"
        "or the kernel did not follow some of its processes;\n"
        "when no base run ran the head's command; with fewer than 3 base-branch\n"
        "runs; with fewer than 20 when no regression stands out from a function's rare\n"
        "jump; with no base run at the merge-base; and when other processes kept the\n"
        "machine busier during the head run than during the base branch's (the run's\n"
        "host.other_cpus tag). A head run that measured itself alone on the machine (under\n"
        "0.1 CPUs of others) is judged on the steady items' tails as the history fitted\n"
        "them; every other head on those tails capped at t(12), in case a neighbour the\n"
        "history never saw moved a steady function.\n"
        "A run on a shared machine now and then moves a steady function 30-70 %: when the\n"
        "head's commit has more runs ('ciprof run' twice in the job), a finding must show\n"
        "in each of the newest --head-runs. --need-run\n"
        "says when one more run is worth its time: it exits 0 while the runs so far flag\n"
        "something (which another run confirms or takes back) or show a slowdown that\n"
        "--head-runs runs could make significant, and 1 when another run cannot change\n"
        "the verdict (--head-runs reached, no baseline, a failed or dirty head run); a\n"
        "head run that lacks processes asks for another. With\n"
        "fewer than 20 base-branch runs the runs' p are not combined: a finding is one\n"
        "each run flags, and a regression fails the build only if each of them fails it.\n"
        "Runs that all moved many functions together beyond anything the history shows\n"
        "(a slow spell of the machine lasting the job) are each judged against the\n"
        "history's ordinary runs, and a finding must show in the least certain of them.\n"
        "A CI job runs the suite again while it says so.\n"
        "Small changes need many samples: sample at --hz 999 or more ('ciprof run --hz').\n"
        "\n"
        "Formats: md, GitHub Markdown for a PR comment (at most 65,536 characters): the\n"
        "verdict with counts, then the findings (each changed test and function: base -> head\n"
        "CPU, change, q-value, hottest path and what changed under it), what the report\n"
        "could see (the smallest slowdown each test and function could have shown: JSON's\n"
        "detectable_change), a Mermaid trend of\n"
        "the base branch's last --trend-runs runs plus this one, and only then the unchanged\n"
        "tests and the text flame graph. In CI it names the PR's own head commit (from the\n"
        "event, not the merge commit) and links the job and --artifact-url. html, one\n"
        "self-contained page with the flame graph; svg, the diff flame graph (width = head\n"
        "samples; only flagged functions in colour, red slower, blue faster, outlined and\n"
        "labelled; the rest grey; --focus draws only the subtrees with findings); json, "
        "{\"verdict\", \"head\", \"base\", \"tests\",\n"
        "\"functions\": [{\"name\", \"base_share\", \"head_share\", \"delta\", \"p_value\",\n"
        "\"significant\", \"kind\", ...}]} (see docs/report.md).\n"
        "\n"
        ".ciprof.yml's report.base-branch, report.base-runs, report.min-change,\n"
        "report.min-share, report.alpha and frames.ignore / frames.fold apply; flags win.\n"
        "\n"
        "Exit status: 0 reported (whatever the verdict); 1 regression with\n"
        "--fail-on-regression; 2 usage error; 3 runtime error (no database, no such run).\n"
        "With --need-run: 0 another run could decide something, 1 it could not.\n"
        "\n"
        "examples:\n"
        "  ciprof report --base main\n"
        "  ciprof report --base main --format html -o report.html\n"
        "  ciprof report --base main --format svg -o diff.svg\n"
        "  ciprof report --format json --fail-on-regression > report.json\n"
        "  ciprof report --head 42 --base 37           # run 42 against run 37\n"
        "  ciprof report --base 1a2b3c4 --min-change 10\n"
        "  ciprof report --ab 1767225600-4242          # a 'ciprof ab' comparison, again\n"
        "  while ciprof report --base main --need-run; do ciprof run -- make test; done";

/* Which of the options .ciprof.yml also sets were given on the command line (they win). */
enum {
	SET_BASE_RUNS = 1,
	SET_MIN_CHANGE = 2,
	SET_MIN_SHARE = 4,
	SET_ALPHA = 8,
	SET_HEAD_RUNS = 16
};

struct report_args {
	const char *db, *base, *output, *ab;
	int64_t head;
	int fail;
	unsigned set;
	enum report_format format;
	struct report_options opts;
	const char *id, *artifact_url;
	long trend_runs;
	int focus;
	size_t head_runs;
	int need_run;
	int writes_report; /* an option only a written report uses (--need-run refuses it) */
};

int cli_parse_number(const char *cmd, const char *opt, const char *arg, double lo, double hi,
                     int open_lo, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(v) || v > hi || v < lo ||
	    (open_lo && v == lo)) {
		cli_usage_error(cmd, "%s takes a number %s %g and <= %g, not '%s'", opt,
		                open_lo ? ">" : ">=", lo, hi, arg);
		return -1;
	}
	*out = v;
	return 0;
}

static int report_opt(void *ctx, int id, const char *arg)
{
	struct report_args *a = ctx;
	double v;
	long n;
	switch (id) {
	case OPT_DB:
		a->db = arg;
		return 0;
	case OPT_HEAD:
		return cli_parse_run("report", arg, &a->head);
	case OPT_BASE:
		if (!*arg) {
			cli_usage_error("report", "--base needs a branch, a run id or a commit");
			return -1;
		}
		a->base = arg;
		return 0;
	case OPT_BASE_RUNS:
		if (cli_parse_int(arg, 1, 1000, &n) < 0) {
			cli_usage_error("report",
			                "--base-runs takes a whole number from 1 to 1000, "
			                "not '%s'",
			                arg);
			return -1;
		}
		a->opts.base_runs = (size_t)n;
		a->set |= SET_BASE_RUNS;
		return 0;
	case OPT_HEAD_RUNS:
		if (cli_parse_int(arg, 1, 20, &n) < 0) {
			cli_usage_error("report",
			                "--head-runs takes a whole number from 1 to 20, not '%s'",
			                arg);
			return -1;
		}
		a->head_runs = (size_t)n;
		a->set |= SET_HEAD_RUNS;
		return 0;
	case OPT_FORMAT:
		a->writes_report = 1;
		return cli_parse_report_format("report", arg, &a->format);
	case 'o':
		a->output = arg;
		a->writes_report = 1;
		return 0;
	case OPT_FOCUS:
		a->focus = 1;
		a->writes_report = 1;
		return 0;
	case OPT_NEED_RUN:
		a->need_run = 1;
		return 0;
	case OPT_ID:
		if (!report_id_valid(arg)) {
			cli_usage_error("report",
			                "--id takes 1 to 64 letters, digits and . _ + : / @ - (no "
			                "'--'), not '%s'",
			                arg);
			return -1;
		}
		a->id = arg;
		return 0;
	case OPT_ARTIFACT_URL:
		a->artifact_url = arg;
		return 0;
	case OPT_TREND_RUNS:
		if (cli_parse_int(arg, 0, 1000, &a->trend_runs) < 0) {
			cli_usage_error(
			        "report",
			        "--trend-runs takes a whole number from 0 to 1000, not '%s'", arg);
			return -1;
		}
		return 0;
	case OPT_FAIL:
		a->fail = 1;
		a->writes_report = 1;
		return 0;
	case OPT_MIN_CHANGE:
		if (cli_parse_number("report", "--min-change", arg, 0, 1000, 0, &v) < 0)
			return -1;
		a->opts.min_change = v / 100;
		a->set |= SET_MIN_CHANGE;
		return 0;
	case OPT_MIN_SHARE:
		if (cli_parse_number("report", "--min-share", arg, 0, 100, 0, &v) < 0)
			return -1;
		a->opts.min_share = v / 100;
		a->set |= SET_MIN_SHARE;
		return 0;
	case OPT_AB:
		a->writes_report = 1;
		if (!*arg) {
			cli_usage_error("report", "--ab needs a comparison id (the runs' ab tag)");
			return -1;
		}
		a->ab = arg;
		return 0;
	case OPT_ALPHA:
		if (cli_parse_number("report", "--alpha", arg, 0, 0.999999, 1, &v) < 0)
			return -1;
		a->opts.alpha = v;
		a->set |= SET_ALPHA;
		return 0;
	}
	return -1;
}

/* .ciprof.yml's report.* keys (and their environment variables) for what the command line
 * left unset, and its frames.ignore / frames.fold. 0, or -1 with cp_error set. */
static int apply_config(struct report_args *a, struct config *cfg, struct frames_filter *ff)
{
	if (config_load(cfg, NULL) < 0)
		return -1;
	const char *base = config_str(cfg, CONFIG_REPORT_BASE_BRANCH);
	if (!a->base && base && *base)
		a->base = base;
	if (!(a->set & SET_BASE_RUNS))
		a->opts.base_runs = (size_t)config_int(cfg, CONFIG_REPORT_BASE_RUNS);
	if (!(a->set & SET_HEAD_RUNS))
		a->head_runs = (size_t)config_int(cfg, CONFIG_REPORT_HEAD_RUNS);
	if (!(a->set & SET_MIN_CHANGE))
		a->opts.min_change = config_number(cfg, CONFIG_REPORT_MIN_CHANGE) / 100;
	if (!(a->set & SET_MIN_SHARE))
		a->opts.min_share = config_number(cfg, CONFIG_REPORT_MIN_SHARE) / 100;
	if (!(a->set & SET_ALPHA))
		a->opts.alpha = config_number(cfg, CONFIG_REPORT_ALPHA);
	return frames_filter_from_config(ff, cfg);
}

struct head_ancestry {
	struct gitmeta_repo *repo;
	const char *commit;
};

static int head_contains(void *ctx, const char *commit)
{
	const struct head_ancestry *h = ctx;
	return gitmeta_is_ancestor(h->repo, commit, h->commit);
}

/*
 * The base branch when neither --base nor .ciprof.yml names one: CI's target branch, else the
 * one recorded with the head run, else the repository's default branch (gitmeta_base_branch
 * is the rule; 'ciprof run' followed it too). Owned; "" when none.
 */
static char *default_base(struct gitmeta_repo *repo, const struct run_meta *head)
{
	extern char **environ;
	char *b = gitmeta_base_branch(NULL, NULL, environ);
	if (!*b && *head->base_branch) {
		free(b);
		b = xstrdup(head->base_branch);
	}
	if (!*b && repo) {
		free(b);
		b = gitmeta_base_branch(repo, NULL, environ);
	}
	return b;
}

/* Replaces *p by its filtered copy. */
static void filter_profile(const struct frames_filter *ff, struct profile **p)
{
	if (!*p)
		return;
	struct profile *f = frames_filter_apply(ff, *p);
	profile_free(*p);
	*p = f;
}

/* Whether a and b carry the same tags, the host's measurements (host.*) aside: a CI matrix's
 * jobs that tag their runs (run --tag) are not runs of one build. */
static int same_tags(const struct run_meta *a, const struct run_meta *b)
{
	for (int pass = 0; pass < 2; pass++) {
		const struct run_meta *x = pass ? b : a, *y = pass ? a : b;
		for (size_t i = 0; i < x->ntags; i++) {
			if (!strncmp(x->tags[i].key, "host.", 5))
				continue;
			const char *v = run_meta_tag(y, x->tags[i].key);
			if (!v || strcmp(v, x->tags[i].value))
				return 0;
		}
	}
	return 1;
}

/* Whether two runs have the same samples and CPU seconds: one profile stored twice (imported
 * again, or merged from two databases), not two runs, which never agree to the sample. */
static int same_figures(const struct run_meta *a, const struct run_meta *b)
{
	return a->stats.samples == b->stats.samples && a->stats.cpu_seconds == b->stats.cpu_seconds;
}

/*
 * Up to want more runs of the head's code, each compared with the baseline (report_diff_new),
 * for report_diff_new_confirmed: the newest stored before the head of its commit and branch,
 * from a clean work tree, of its command, rate, tags (same_tags) and exit status 0 ('ciprof
 * ab' runs carry an ab tag), none a copy of the head's profile or of another one taken
 * (same_figures). *peers (owned: peers_free) and *ids get *n of them. 0, or -1 with cp_error
 * set.
 */
static int head_peers(struct store *s, const struct run_meta *head,
                      const struct report_baseline *base, const struct frames_filter *ff,
                      const struct report_options *opts, size_t want, struct report_diff ***peers,
                      int64_t **ids, size_t *n)
{
	*peers = xcalloc(want ? want : 1, sizeof(**peers));
	*ids = xcalloc(want ? want : 1, sizeof(**ids));
	*n = 0;
	if (!want || !*head->commit || head->dirty || head->stats.exit_status)
		return 0;
	struct store_run_filter f = {.commit = head->commit,
	                             .branch = head->branch,
	                             .before = head->id,
	                             .limit = 50,
	                             .tags = 1};
	struct run_meta *runs = NULL;
	size_t nruns = 0;
	if (store_find_runs(s, &f, &runs, &nruns) < 0)
		return -1;
	unsigned char *taken = xcalloc(nruns ? nruns : 1, 1);
	int r = 0;
	for (size_t i = 0; i < nruns && *n < want; i++) {
		const struct run_meta *m = &runs[i];
		if (m->dirty || m->stats.exit_status || run_meta_is_incomplete(m) ||
		    strcmp(m->command, head->command) ||
		    m->stats.period_ns != head->stats.period_ns || !same_tags(m, head) ||
		    same_figures(m, head))
			continue;
		int dup = 0;
		for (size_t j = 0; j < i && !dup; j++)
			dup = taken[j] && same_figures(m, &runs[j]);
		if (dup)
			continue;
		struct profile *p = NULL;
		if (store_load_profile(s, m->id, NULL, &p) < 0) {
			r = -1;
			break;
		}
		if (!frames_filter_empty(ff))
			filter_profile(ff, &p);
		if (profile_total(p, NULL)) {
			struct report_options o = *opts;
			o.head_quiet = report_head_quiet(m);
			o.dispersion = run_meta_dispersion(m);
			o.head_busy = report_head_busy(m, base);
			report_diff_new(&(*peers)[*n], base->merged, base->n, base->runs,
			                base->nruns, p, &o);
			(*ids)[(*n)++] = m->id;
			taken[i] = 1;
		}
		profile_free(p);
	}
	free(taken);
	store_runs_free(runs, nruns);
	return r;
}

static void peers_free(struct report_diff **peers, int64_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		report_diff_free(peers[i]);
	free(peers);
	free(ids);
}

/*
 * --need-run: whether one more run of the head's commit could change what the report says
 * (report_diff_undecided), printed one item a line, the names escaped for a terminal. EXIT_OK
 * when it could, EXIT_NO_RUN when not (the reason logged). A run that can never be confirmed
 * (no commit, a dirty tree, a failed command: head_peers takes none of its kind) answers no,
 * so that a CI loop asking this ends. A head run the kernel did not wholly follow
 * (RUN_TAG_UNSEEN) answers yes while fewer than --head-runs runs were judged: the next run
 * is the head then, and this one no peer.
 */
static int need_run(const struct report_args *a, const struct run_meta *head,
                    const struct report_diff *d)
{
	size_t runs = d && d->confirm_runs ? d->confirm_runs : 1;
	char *why = NULL, *incomplete;
	if (!*head->commit)
		why = xstrdup("the head run has no commit (not made in a git repository)");
	else if (head->dirty)
		why = xstrdup("the head run's work tree had changes, so no two runs are known to "
		              "be of one code");
	else if (head->stats.exit_status)
		why = xasprintf("the head run's command failed (exit status %d)",
		                head->stats.exit_status);
	else if (!d)
		why = xstrdup("there is no baseline");
	else if (runs >= a->head_runs)
		why = xasprintf("%zu run%s of this commit judged, the most --head-runs asks", runs,
		                runs == 1 ? "" : "s");
	else if ((incomplete = run_meta_incomplete(head))) {
		log_info("report: another run is needed: the head run %lld is incomplete (%s)",
		         (long long)head->id, incomplete);
		free(incomplete);
		printf("rerun incomplete-head %lld\n", (long long)head->id);
		int r = cli_finish_stdout();
		return r ? r : EXIT_OK;
	}
	size_t *idx = NULL, n = 0, flagged = 0;
	if (!why) {
		idx = xmalloc(st_mult(d->nitems ? d->nitems : 1, sizeof(*idx)));
		n = report_diff_undecided(d, a->head_runs, idx, &flagged);
		if (!n && d->history_runs < STATS_TAIL_SCALE_MIN_RUNS)
			why = xasprintf("nothing is flagged, and with %zu base-branch runs "
			                "(fewer than %d) runs of one commit are not combined",
			                d->history_runs, STATS_TAIL_SCALE_MIN_RUNS);
		else if (!n)
			why = xasprintf(
			        "nothing the runs so far show could become significant in %zu "
			        "runs",
			        a->head_runs);
	}
	if (why) {
		log_info("report: no further run needed: %s", why);
		free(why);
		free(idx);
		return EXIT_NO_RUN;
	}
	struct strbuf out = STRBUF_INIT, name = STRBUF_INIT;
	for (size_t j = 0; j < n; j++) {
		const struct report_item *it = &d->items[idx[j]];
		strbuf_reset(&name);
		report_escape(&name, it->name, REPORT_ESC_TEXT, 200);
		strbuf_addf(&out, "%s %s %s %+.1f %% (%s %.2g)\n",
		            j < flagged ? "confirm" : "could-flag",
		            it->measure == REPORT_TEST   ? "test"
		            : it->measure == REPORT_SELF ? "function"
		                                         : "function-total",
		            name.buf, 100 * it->cmp.change, j < flagged ? "q" : "p",
		            j < flagged ? it->cmp.q : it->cmp.p);
	}
	log_info("report: another run of this commit could decide %zu finding%s (%zu of at most "
	         "%zu runs judged)",
	         n, n == 1 ? "" : "s", runs, a->head_runs);
	fwrite(out.buf, 1, out.len, stdout);
	strbuf_release(&out);
	strbuf_release(&name);
	free(idx);
	int r = cli_finish_stdout();
	return r ? r : EXIT_OK;
}

int cli_write_output(const char *path, const struct strbuf *buf)
{
	if (!path) {
		fwrite(buf->buf, 1, buf->len, stdout);
		return cli_finish_stdout();
	}
	FILE *f = fopen(path, "wb");
	if (!f) {
		fprintf(stderr, "ciprof: error: cannot create %s: %s\n", path, strerror(errno));
		return EXIT_RUNTIME;
	}
	size_t n = fwrite(buf->buf, 1, buf->len, f);
	int bad = n != buf->len || fflush(f) != 0 || ferror(f);
	if (fclose(f) != 0)
		bad = 1;
	if (bad) {
		fprintf(stderr, "ciprof: error: cannot write %s: %s\n", path, strerror(errno));
		return EXIT_RUNTIME;
	}
	return cli_finish_stdout();
}

/* The PR's own head commit when the head run was made for the PR this CI job is for: the
 * run's commit is then the CI's merge of the PR (owned, NULL when unknown). */
static char *pr_head(const struct run_meta *head)
{
	enum forge_provider p = forge_detect(environ);
	if (p == FORGE_UNKNOWN || !head->pr_number)
		return NULL;
	struct forge_target t;
	forge_target_init(&t);
	char *sha = NULL;
	if (forge_target_from_env(&t, p, environ) == 0 && t.number == head->pr_number && *t.pr_head)
		sha = xstrdup(t.pr_head);
	forge_target_release(&t);
	return sha;
}

/* Where the HTML report will be: --artifact-url, $CIPROF_ARTIFACT_URL, else the CI run's
 * artifact list (GitHub's run page, GitLab's job artifacts). Owned, NULL when unknown. */
static char *artifact_url(const struct report_args *a, const struct run_meta *head)
{
	const char *v = a->artifact_url ? a->artifact_url : getenv("CIPROF_ARTIFACT_URL");
	if (v && *v)
		return xstrdup(v);
	if (!*head->job_url)
		return NULL;
	if (!strcmp(head->ci_provider, "github"))
		return xasprintf("%s#artifacts", head->job_url);
	if (!strcmp(head->ci_provider, "gitlab"))
		return xasprintf("%s/artifacts/browse", head->job_url);
	return NULL;
}

int cmd_report(int argc, char **argv)
{
	struct report_args a = {.format = REPORT_FORMAT_MD, .trend_runs = TREND_RUNS};
	report_options_init(&a.opts);
	int first;
	int r = cli_parse(argc, argv, "report", report_usage, report_description, report_options,
	                  report_opt, &a, &first);
	if (r)
		return r > 0 ? cli_finish_stdout() : EXIT_USAGE;
	if (first < argc)
		return cli_usage_error("report",
		                       "unexpected argument '%s'; see 'ciprof report --help'",
		                       argv[first]);
	if (a.need_run && a.writes_report)
		return cli_usage_error("report",
		                       "--need-run writes no report: it takes no --format, "
		                       "-o, --fail-on-regression, --focus or --ab");
	if (a.ab && (a.head || a.base))
		return cli_usage_error("report", "--ab renders a stored A/B comparison: it takes "
		                                 "no --head or --base");

	struct config cfg;
	struct frames_filter ff = {0};
	config_init(&cfg);
	if (apply_config(&a, &cfg, &ff) < 0) {
		log_errmsg("%s", cp_last_error());
		frames_filter_release(&ff);
		config_release(&cfg);
		return EXIT_USAGE;
	}
	struct store *s;
	if ((r = cli_store_open(&s, a.db, STORE_READONLY))) {
		frames_filter_release(&ff);
		config_release(&cfg);
		return r;
	}
	if (a.ab) {
		r = ab_report_stored(s, a.ab, &a.opts, a.format, a.output, a.fail);
		store_close(s);
		frames_filter_release(&ff);
		config_release(&cfg);
		return r;
	}
	struct run_meta head;
	run_meta_init(&head);
	struct report_baseline base;
	report_baseline_init(&base);
	struct report_levels levels = {0};
	struct profile *hp = NULL;
	struct report_diff *diff = NULL;
	struct strbuf out = STRBUF_INIT;
	struct report_trend trend = {0};
	char *prh = NULL, *aurl = NULL;
	struct gitmeta_repo *repo = NULL;
	char *ref = NULL, *advisory = NULL;
	char mb[GITMETA_HEX_SIZE] = "";
	int64_t id = a.head;
	if ((!id && store_latest_run(s, NULL, &id) < 0) || store_get_run(s, id, &head) < 0 ||
	    store_load_profile(s, id, NULL, &hp) < 0) {
		r = cli_runtime_error();
		goto out;
	}
	/* The repository, when here, answers which base runs the head contains and its
	 * merge-base now; without it the store's recorded merge-base serves. */
	if (*head.commit && gitmeta_repo_open(&repo, ".") < 0)
		log_warn("report: %s; the recorded merge-base is used", cp_last_error());
	ref = a.base ? xstrdup(a.base) : default_base(repo, &head);
	if (repo)
		gitmeta_merge_base(repo, head.commit, ref, mb);
	struct head_ancestry anc = {repo, head.commit};
	if (report_baseline_select(s, &head, *ref ? ref : NULL, mb, a.opts.base_runs,
	                           repo ? head_contains : NULL, &anc, &base) < 0) {
		r = cli_runtime_error();
		goto out;
	}
	if (base.unknown) {
		struct strbuf msg = STRBUF_INIT;
		report_escape(&msg, base.none, REPORT_ESC_TEXT, 600);
		if (report_gate(&base, NULL, NULL, a.fail) == REPORT_GATE_UNKNOWN_BASE) {
			/* A typo in --base must not pass every build from now on. */
			fprintf(stderr,
			        "ciprof: error: %s (with --fail-on-regression an unknown base is "
			        "an "
			        "error, so that a typo cannot pass every build)\n",
			        msg.buf);
			strbuf_release(&msg);
			r = EXIT_RUNTIME;
			goto out;
		}
		log_warn("report: %s", msg.buf);
		strbuf_release(&msg);
	}
	if (!frames_filter_empty(&ff)) {
		filter_profile(&ff, &hp);
		filter_profile(&ff, &base.merged);
		for (size_t i = 0; i < base.nruns; i++)
			filter_profile(&ff, &base.runs[i]);
	}
	/* Nothing measured on one side is nothing to compare, not a change of everything. */
	if (base.n && (!profile_total(hp, NULL) || !profile_total(base.merged, NULL))) {
		char *why = !profile_total(hp, NULL)
		                    ? xasprintf("run %lld has no samples (did the command run?)",
		                                (long long)id)
		                    : xasprintf("the baseline (%s) has no samples", base.rule);
		char *kept = xstrdup(base.ref);
		report_baseline_release(&base);
		report_baseline_init(&base);
		free(base.none);
		base.none = why;
		free(base.ref);
		base.ref = kept;
	}
	a.opts.head_quiet = report_head_quiet(&head);
	a.opts.dispersion = run_meta_dispersion(&head);
	a.opts.head_busy = report_head_busy(&head, &base);
	/* The head's runs share one history: its levels are learned once. */
	a.opts.levels = &levels;
	if (base.n) {
		struct report_diff **peers;
		int64_t *ids;
		size_t npeers;
		if (head_peers(s, &head, &base, &ff, &a.opts, a.head_runs - 1, &peers, &ids,
		               &npeers) < 0) {
			peers_free(peers, ids, npeers);
			r = cli_runtime_error();
			goto out;
		}
		report_diff_new_confirmed(&diff, base.merged, base.n, base.runs, base.nruns, hp,
		                          peers, ids, npeers, &a.opts);
		peers_free(peers, ids, npeers);
	}
	a.opts.levels = NULL;
	if (diff)
		diff->opts.levels = NULL;
	if (diff) {
		report_note_load(diff, &head, &base);
		advisory = report_advisory(&base, diff);
	}
	if (a.need_run) {
		r = need_run(&a, &head, diff);
		goto out;
	}
	prh = pr_head(&head);
	aurl = artifact_url(&a, &head);
	struct report rep = {.head = &head,
	                     .base = &base,
	                     .diff = diff,
	                     .id = a.id,
	                     .pr_head = prh,
	                     .artifact_url = aurl,
	                     .focus = a.focus,
	                     .advisory = advisory};
	if (a.format == REPORT_FORMAT_MD && diff && a.trend_runs > 0) {
		if (report_trend_load(s, &rep, (size_t)a.trend_runs, &trend) < 0)
			log_warn("report: no trend charts: %s", cp_last_error());
		else
			rep.trend = &trend;
	}
	if (report_render(&rep, a.format, &out) < 0) {
		r = cli_runtime_error();
		goto out;
	}
	/* Branch names are not ours to trust on a terminal either. */
	struct strbuf why = STRBUF_INIT;
	report_escape(&why, diff ? base.rule : base.none, REPORT_ESC_TEXT, 300);
	if (!diff)
		log_info("report: no baseline for run %lld: %s", (long long)id, why.buf);
	else
		log_info("report: %s: run %lld vs %s; %zu slower, %zu faster of %zu judged; "
		         "suite-wide factor %.2fx",
		         report_verdict_name(diff->verdict), (long long)id, why.buf,
		         diff->nregressed, diff->nimproved, diff->ntested, diff->scale);
	strbuf_release(&why);
	if (diff && diff->renamed) {
		struct strbuf ren = STRBUF_INIT;
		report_escape(&ren, diff->renamed, REPORT_ESC_TEXT, 600);
		log_info("report: compared as renamed: %s", ren.buf);
		strbuf_release(&ren);
	}
	if (advisory)
		log_info("report: advisory only, the build is not failed: %s", advisory);
	if ((r = cli_write_output(a.output, &out)))
		goto out;
	r = report_gate(&base, diff, advisory, a.fail) == REPORT_GATE_FAIL ? EXIT_REGRESSION
	                                                                   : EXIT_OK;
out:
	free(ref);
	free(advisory);
	gitmeta_repo_free(repo);
	strbuf_release(&out);
	report_trend_release(&trend);
	free(prh);
	free(aurl);
	report_diff_free(diff);
	profile_free(hp);
	report_levels_release(&levels);
	report_baseline_release(&base);
	run_meta_release(&head);
	store_close(s);
	frames_filter_release(&ff);
	config_release(&cfg);
	return r;
}
