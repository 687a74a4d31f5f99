/* ciprof ab: base and head profiled on this machine in ABBA rounds until every test and function
 * is decided (report/paired.h) or the budget is spent; both sides stored as runs tagged with one
 * comparison id; the result rendered like `ciprof report`. docs/ab.md explains the method. */
#include "cli/ab.h"
#include "cli/cli.h"
#include "config/config.h"
#include "common/error.h"
#include "common/log.h"
#include "model/profile.h"
#include "model/runmeta.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "report/paired.h"
#include "report/report.h"
#include "runner/meta/gitmeta.h"
#include "runner/runner.h"
#include "store/store.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
	OPT_BASE = 256,
	OPT_HEAD,
	OPT_MAX_ROUNDS,
	OPT_MAX_SECONDS,
	OPT_HZ,
	OPT_BACKEND,
	OPT_UNWIND,
	OPT_PTY,
	OPT_NO_PTY,
	OPT_TAG,
	OPT_DB,
	OPT_NO_STORE,
	OPT_FORMAT,
	OPT_FAIL,
	OPT_MIN_CHANGE,
	OPT_MIN_SHARE,
	OPT_ALPHA,
	OPT_BASE_DIR,
	OPT_PER_TEST,
	OPT_EVENT,
};

static const struct cli_option ab_options[] = {
        {"base", OPT_BASE, "CMD", "the base side's command, a shell command line (required)"},
        {"head", OPT_HEAD, "CMD", "the head side's command, a shell command line (required)"},
        {"max-rounds", OPT_MAX_ROUNDS, "N",
         "at most N rounds, one run of each side per round (default 10)"},
        {"max-seconds", OPT_MAX_SECONDS, "S",
         "start no round that would end after S seconds (default: no limit)"},
        {"per-test", OPT_PER_TEST, "WHEN",
         "auto (default: when both commands run ctest), yes or no: alternate test by test"},
        {"base-dir", OPT_BASE_DIR, "DIR",
         "the base side's git work tree, for the stored runs' commit (default: none)"},
        {"format", OPT_FORMAT, "FMT", "md (default), html, svg or json"},
        {"output", 'o', "FILE", "write the report to FILE instead of standard output"},
        {"fail-on-regression", OPT_FAIL, NULL, "exit 1 when the verdict is regression"},
        {"min-change", OPT_MIN_CHANGE, "PCT",
         "smallest relative change reported, in percent (default 5)"},
        {"min-share", OPT_MIN_SHARE, "PCT",
         "judge only what holds PCT % of samples on one side (default 0.5)"},
        {"alpha", OPT_ALPHA, "A", "false discovery rate over all looks (default 0.001)"},
        {"event", OPT_EVENT, "E",
         "auto (default: instructions where a PMU exists, else cpu-clock), instructions, "
         "cycles or cpu-clock"},
        {"hz", OPT_HZ, "N", CLI_CONFIG_HELP("ab.hz")},
        {"backend", OPT_BACKEND, "B", "auto (default), perf or preload"},
        {"unwind", OPT_UNWIND, "U", "fp (default), fp-only or dwarf (see ciprof run --help)"},
        {"pty", OPT_PTY, NULL, "run the commands on a pseudo-terminal (test markers)"},
        {"no-pty", OPT_NO_PTY, NULL, "never put the commands on a pseudo-terminal"},
        {"db", OPT_DB, "FILE",
         "database (default $CIPROF_DB, else .ciprof/ciprof.db at the repo top)"},
        {"no-store", OPT_NO_STORE, NULL, "do not store the runs"},
        {"tag", OPT_TAG, "K=V", "label every stored run (repeatable)"},
        {NULL, 0, NULL, NULL},
};

static const char ab_usage[] =
        "--base 'CMD' --head 'CMD' [--max-rounds N] [--max-seconds S]\n"
        "                 [--format md|html|svg|json] [-o FILE] [--fail-on-regression] "
        "[<run options>]";
static const char ab_description[] =
        "Profiles two versions of a test suite on this machine, in turn, and reports which\n"
        "tests and functions of the head got slower or faster than the base. Rounds run in\n"
        "ABBA order (base, head; head, base; ...) so that warm-up and drift hit both sides\n"
        "alike; each round gives a head/base ratio per test and per function (self time),\n"
        "and the spread of those ratios across rounds is each item's noise on this very\n"
        "machine. From round 4 on, after every second round, each item is judged: slower or\n"
        "faster (significant after Benjamini-Hochberg and at least --min-change), the same\n"
        "(its whole confidence interval within --min-change), or undecided. The comparison\n"
        "stops as soon as nothing is undecided, or when the budget is spent; what is still\n"
        "undecided then is reported as undecided, never as a regression. Each look spends\n"
        "--alpha divided by the number of looks planned, so stopping early keeps the error rate.\n"
        "\n"
        "ab has its own sampling rate, higher than ciprof run's (--hz below: ab.hz in\n"
        ".ciprof.yml, CIPROF_AB_HZ; run.hz is not used): its overhead hits both sides alike,\n"
        "and a function needs about a hundred samples a run for a 10 % change of it to show.\n"
        "\n"
        "When both commands are plain ctest command lines, a round runs each test of both\n"
        "sides in turn (ctest ... -R '^NAME$', the command's -j kept), so that a burst of\n"
        "machine noise hits the two sides of one test together (--per-test no: whole suites).\n"
        "\n"
        "The commands run from the current directory (with sh -c when they need a shell);\n"
        "their standard output goes to standard error, so that the report alone reaches\n"
        "standard output. A command that fails (exit status not 0) stops the comparison:\n"
        "ciprof says which side, in which round (and test), and exits 3. Ctrl-C stops it\n"
        "too: the rounds completed are stored and reported, and ciprof exits 130.\n"
        "\n"
        "Both sides' runs are stored (unless --no-store) on branches 'ab/ID/base' and\n"
        "'ab/ID/head', tagged ab=ID, ab.side and ab.round, so history-mode reports never take\n"
        "them for the base branch, 'ciprof report --ab ID' renders the comparison again, and\n"
        "'ciprof show RUN' shows any one run.\n"
        "\n"
        "Exit status: 0 compared (whatever the verdict); 1 regression with\n"
        "--fail-on-regression; 2 usage error; 3 a command failed or ciprof did; 130\n"
        "interrupted.\n"
        "\n"
        "examples:\n"
        "  git worktree add ../base \"$(git merge-base origin/main HEAD)\"\n"
        "  (cd ../base && cmake -B build && cmake --build build)\n"
        "  ciprof ab --base 'ctest --test-dir ../base/build' --head 'ctest --test-dir build'\n"
        "  ciprof ab --base '../base/build/tests' --head 'build/tests' --format json \\\n"
        "      --fail-on-regression -o ab.json\n"
        "  ciprof ab --base '...' --head '...' --max-seconds 600 --format html -o ab.html";

enum { SET_MIN_CHANGE = 1, SET_MIN_SHARE = 2, SET_ALPHA = 4, SET_HZ = 8, SET_BACKEND = 16 };

struct ab_args {
	const char *cmd[2]; /* base, head */
	const char *base_dir, *db, *output;
	long max_rounds;
	double max_seconds; /* 0: none */
	int no_store, fail;
	int per_test; /* -1 no, 0 auto, 1 yes */
	int event;    /* -1 auto, else enum runner_event */
	unsigned set;
	enum report_format format;
	struct report_options opts;
	struct runner_opts ropts;
	struct run_meta tags; /* only its tags are used */
};

static int ab_opt(void *ctx, int id, const char *arg)
{
	struct ab_args *a = ctx;
	double v;
	long n;
	switch (id) {
	case OPT_BASE:
	case OPT_HEAD:
		if (!*arg) {
			cli_usage_error("ab", "--%s needs a command",
			                id == OPT_BASE ? "base" : "head");
			return -1;
		}
		a->cmd[id == OPT_HEAD] = arg;
		return 0;
	case OPT_MAX_ROUNDS:
		if (cli_parse_int(arg, 1, 1000, &n) < 0) {
			cli_usage_error(
			        "ab", "--max-rounds takes a whole number from 1 to 1000, not '%s'",
			        arg);
			return -1;
		}
		a->max_rounds = n;
		return 0;
	case OPT_MAX_SECONDS:
		if (cli_parse_number("ab", "--max-seconds", arg, 0, 1e7, 1, &v) < 0)
			return -1;
		a->max_seconds = v;
		return 0;
	case OPT_EVENT:
		if (!strcmp(arg, "auto"))
			a->event = -1;
		else if (!strcmp(arg, "instructions"))
			a->event = RUNNER_EVENT_INSTRUCTIONS;
		else if (!strcmp(arg, "cycles"))
			a->event = RUNNER_EVENT_CYCLES;
		else if (!strcmp(arg, "cpu-clock"))
			a->event = RUNNER_EVENT_CPU_CLOCK;
		else {
			cli_usage_error(
			        "ab",
			        "--event takes auto, instructions, cycles or cpu-clock, not "
			        "'%s'",
			        arg);
			return -1;
		}
		return 0;
	case OPT_PER_TEST:
		if (!strcmp(arg, "auto"))
			a->per_test = 0;
		else if (!strcmp(arg, "yes"))
			a->per_test = 1;
		else if (!strcmp(arg, "no"))
			a->per_test = -1;
		else {
			cli_usage_error("ab", "--per-test takes auto, yes or no, not '%s'", arg);
			return -1;
		}
		return 0;
	case OPT_BASE_DIR:
		a->base_dir = arg;
		return 0;
	case OPT_FORMAT:
		return cli_parse_report_format("ab", arg, &a->format);
	case 'o':
		a->output = arg;
		return 0;
	case OPT_FAIL:
		a->fail = 1;
		return 0;
	case OPT_MIN_CHANGE:
		if (cli_parse_number("ab", "--min-change", arg, 0, 1000, 0, &v) < 0)
			return -1;
		a->opts.min_change = v / 100;
		a->set |= SET_MIN_CHANGE;
		return 0;
	case OPT_MIN_SHARE:
		if (cli_parse_number("ab", "--min-share", arg, 0, 100, 0, &v) < 0)
			return -1;
		a->opts.min_share = v / 100;
		a->set |= SET_MIN_SHARE;
		return 0;
	case OPT_ALPHA:
		if (cli_parse_number("ab", "--alpha", arg, 0, 0.999999, 1, &v) < 0)
			return -1;
		a->opts.alpha = v;
		a->set |= SET_ALPHA;
		return 0;
	case OPT_HZ:
		if (cli_config_arg("ab", ab_options, OPT_HZ, arg, &v) < 0)
			return -1;
		a->ropts.hz = (int)v;
		a->set |= SET_HZ;
		return 0;
	case OPT_BACKEND:
		a->set |= SET_BACKEND;
		return cli_parse_backend("ab", arg, &a->ropts.backend);
	case OPT_UNWIND:
		return cli_parse_unwind("ab", arg, &a->ropts.unwind);
	case OPT_PTY:
		a->ropts.pty = 1;
		return 0;
	case OPT_NO_PTY:
		a->ropts.pty = -1;
		return 0;
	case OPT_DB:
		if (!*arg) {
			cli_usage_error("ab", "--db needs a file name");
			return -1;
		}
		a->db = arg;
		return 0;
	case OPT_NO_STORE:
		a->no_store = 1;
		return 0;
	case OPT_TAG: {
		const char *eq = strchr(arg, '=');
		if (!eq || eq == arg || !strncmp(arg, "ab=", 3) || !strncmp(arg, "ab.", 3)) {
			cli_usage_error("ab",
			                "--tag takes KEY=VALUE (ab and ab.* are ciprof's), not "
			                "'%s'",
			                arg);
			return -1;
		}
		char *key = xstrndup(arg, (size_t)(eq - arg));
		run_meta_set_tag(&a->tags, key, eq + 1);
		free(key);
		return 0;
	}
	}
	return -1;
}

/* Set by SIGINT/SIGTERM between runs (during a run the runner takes them). */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *const side_name[2] = {"base", "head"};

/* The state of one comparison while it runs. */
struct ab_run {
	struct ab_args *a;
	char id[64];
	struct store *store;     /* NULL with --no-store */
	struct run_meta meta[2]; /* git and CI context per side, taken once */
	struct ab_sides sides;
	char **argv[2]; /* each side's command: its words, or sh -c CMD (owned) */
	char **tests;   /* per-test mode: the tests both sides list, in the head's order */
	size_t ntests;
	double started;
	const char *event; /* what is sampled: "cpu-clock", ... */
	double longest_round;
};

/* Git, CI and host context of one side. */
static void side_meta(struct ab_run *st, int side)
{
	extern char **environ;
	struct run_meta *m = &st->meta[side];
	run_meta_init(m);
	const char *dir = side ? "." : st->a->base_dir;
	if (dir && gitmeta_collect(m, dir, NULL, environ) < 0)
		log_warn("git metadata of the %s side unavailable: %s", side_name[side],
		         cp_last_error());
	gitmeta_ci(m, environ);
	gitmeta_host(m);
	/* Its own branch: a history-mode baseline must never pick an A/B run. */
	char *branch = xasprintf("ab/%s/%s", st->id, side_name[side]);
	if (*m->branch)
		run_meta_set_tag(m, "git.branch", m->branch);
	run_meta_set(&m->branch, branch);
	free(branch);
	run_meta_set(&m->command, st->a->cmd[side]);
	for (size_t i = 0; i < st->a->tags.ntags; i++)
		run_meta_set_tag(m, st->a->tags.tags[i].key, st->a->tags.tags[i].value);
	run_meta_set_tag(m, "ab", st->id);
	run_meta_set_tag(m, "ab.side", side_name[side]);
}

/* Stores one run of a completed round; its id lands in *id. 0 or -1 (message printed). */
static int store_side(struct ab_run *st, int side, size_t round, const struct profile *p,
                      int64_t *id)
{
	*id = 0;
	if (!st->store)
		return 0;
	struct run_meta *m = &st->meta[side];
	char num[32];
	snprintf(num, sizeof(num), "%zu", round + 1);
	run_meta_set_tag(m, "ab.round", num);
	snprintf(num, sizeof(num), "%ld", st->a->max_rounds);
	run_meta_set_tag(m, "ab.max_rounds", num);
	snprintf(num, sizeof(num), "%.3f", now_seconds() - st->started);
	run_meta_set_tag(m, "ab.seconds", num);
	run_meta_set_tag(m, "ab.event", st->event);
	run_meta_tag_stats(m, &p->stats);
	m->id = 0;
	m->created_at = (int64_t)time(NULL);
	if (store_add_run(st->store, m, p) < 0) {
		fprintf(stderr, "ciprof: error: the %s run of round %zu was not stored: %s\n",
		        side_name[side], round + 1, cp_last_error());
		return -1;
	}
	*id = m->id;
	return 0;
}

enum run_outcome { RUN_OK, RUN_FAILED, RUN_INTERRUPTED, RUN_ERROR };

/* How often one side of a round is profiled again when the kernel did not follow some of its
 * processes (runner.c unseen_processes) or stopped writing to a CPU's ring (silent_ns). */
#define AB_UNSEEN_RETRIES 2

/* Runs one side once: its whole command, or with test (per-test mode) only that test. */
static enum run_outcome run_side(struct ab_run *st, int side, size_t round, const char *test,
                                 struct profile **out)
{
	if (interrupted) /* Ctrl-C between two runs: start no other */
		return RUN_INTERRUPTED;
	struct runner_opts o = st->a->ropts;
	char **argv = st->argv[side], **targv = NULL, *regex = NULL;
	if (test) {
		/* ctest ... -R '^NAME$', NAME's regular-expression characters escaped. */
		size_t n = 0;
		while (argv[n])
			n++;
		targv = xcalloc(n + 3, sizeof(char *));
		memcpy(targv, argv, n * sizeof(char *));
		struct strbuf re = STRBUF_INIT;
		strbuf_addch(&re, '^');
		for (const char *c = test; *c; c++) {
			if (strchr("^$.*+?()[]{}|\\", *c))
				strbuf_addch(&re, '\\');
			strbuf_addch(&re, *c);
		}
		strbuf_addch(&re, '$');
		regex = strbuf_detach(&re, NULL);
		targv[n] = "-R";
		targv[n + 1] = regex;
		argv = targv;
	}
	o.argv = argv;
	struct strbuf what = STRBUF_INIT; /* test names are not ours to trust on a terminal */
	if (test) {
		strbuf_addstr(&what, ", test ");
		report_escape(&what, test, REPORT_ESC_TEXT, 200);
	}
	log_verbose("round %zu: %s: %s%s", round + 1, side_name[side], st->a->cmd[side], what.buf);
	int r = runner_run(out, &o);
	/* A run the kernel did not wholly follow lacks some processes' tests and functions
	 * (docs/run.md, "Limits"): that side is profiled again, at most AB_UNSEEN_RETRIES times. */
	for (int retry = 0; r >= 0 && *out &&
	                    ((*out)->stats.unseen_processes || (*out)->stats.silent_seconds > 0) &&
	                    !(*out)->stats.exit_status && !interrupted && retry < AB_UNSEEN_RETRIES;
	     retry++) {
		char *why = run_incomplete_why((*out)->stats.unseen_processes,
		                               (*out)->stats.silent_seconds);
		log_warn("ab: the %s run of round %zu%s is incomplete (%s): profiling it again",
		         side_name[side], round + 1, what.buf, why);
		free(why);
		profile_free(*out);
		*out = NULL;
		r = runner_run(out, &o);
	}
	free(regex);
	free(targv);
	enum run_outcome outcome = RUN_OK;
	if (r < 0) {
		fprintf(stderr, "ciprof: ab: error: the %s command could not be profiled: %s\n",
		        side_name[side], cp_last_error());
		outcome = RUN_ERROR;
		goto out;
	}
	int status = (*out)->stats.exit_status;
	if (interrupted || status == 128 + SIGINT || status == 128 + SIGTERM) {
		interrupted = 1;
		outcome = RUN_INTERRUPTED;
		goto out;
	}
	if (status) {
		fprintf(stderr,
		        "ciprof: ab: the %s command failed (exit status %d) in round %zu%s; the "
		        "comparison stops. Make both sides pass on their own first: %s\n",
		        side_name[side], status, round + 1, what.buf, st->a->cmd[side]);
		outcome = RUN_FAILED;
	}
out:
	strbuf_release(&what);
	return outcome;
}

/* .ciprof.yml's (and the environment's) ab.hz, run.backend and report.* keys for what the
 * command line left unset. ab has its own rate: run.hz is not used (docs/ab.md). */
static int apply_config(struct ab_args *a, struct config *cfg)
{
	if (config_load(cfg, NULL) < 0)
		return -1;
	if (!(a->set & SET_MIN_CHANGE))
		a->opts.min_change = config_number(cfg, CONFIG_REPORT_MIN_CHANGE) / 100;
	if (!(a->set & SET_MIN_SHARE))
		a->opts.min_share = config_number(cfg, CONFIG_REPORT_MIN_SHARE) / 100;
	if (!(a->set & SET_ALPHA))
		a->opts.alpha = config_number(cfg, CONFIG_REPORT_ALPHA);
	if (!(a->set & SET_HZ))
		a->ropts.hz = (int)config_int(cfg, CONFIG_AB_HZ);
	if (!(a->set & SET_BACKEND)) {
		if (cli_parse_backend(NULL, config_str(cfg, CONFIG_RUN_BACKEND),
		                      &a->ropts.backend) < 0)
			a->ropts.backend = RUNNER_BACKEND_AUTO;
	}
	return 0;
}

/*
 * --event: auto takes instructions where the kernel exposes a PMU (and the backend can be
 * perf), else cpu-clock, saying so in one line; an explicit hardware event must be there.
 * 0, or -1 after printing why.
 */
static int choose_event(struct ab_args *a)
{
	if (a->event == RUNNER_EVENT_CPU_CLOCK) {
		a->ropts.event = RUNNER_EVENT_CPU_CLOCK;
		return 0;
	}
	if (a->event < 0) {
		a->ropts.event = RUNNER_EVENT_CPU_CLOCK;
		if (a->ropts.backend == RUNNER_BACKEND_PRELOAD) {
			log_info("ab: sampling cpu-clock (the preload backend counts CPU time "
			         "only)");
			return 0;
		}
		if (runner_event_probe(RUNNER_EVENT_INSTRUCTIONS) < 0) {
			log_info("ab: %s: sampling cpu-clock instead of instructions",
			         cp_last_error());
			return 0;
		}
		a->ropts.event = RUNNER_EVENT_INSTRUCTIONS;
		a->ropts.backend = RUNNER_BACKEND_PERF;
		log_info("ab: sampling retired instructions (a hardware PMU is present%s)",
		         getenv("CIPROF_TEST_PMU") ? "; simulated by CIPROF_TEST_PMU" : "");
		return 0;
	}
	a->ropts.event = (enum runner_event)a->event;
	if (a->ropts.backend == RUNNER_BACKEND_PRELOAD) {
		fprintf(stderr, "ciprof: ab: error: --event %s needs the perf backend\n",
		        runner_event_name(a->ropts.event));
		return -1;
	}
	if (runner_event_probe(a->ropts.event) < 0) {
		fprintf(stderr,
		        "ciprof: ab: error: --event %s: %s; use --event cpu-clock (or auto) on "
		        "this "
		        "machine\n",
		        runner_event_name(a->ropts.event), cp_last_error());
		return -1;
	}
	a->ropts.backend = RUNNER_BACKEND_PERF;
	return 0;
}

/*
 * Each side's argv: its words when the command needs no shell (so that the runner sees ctest
 * itself and names its tests), else sh -c CMD. Per-test mode: when both run ctest (and
 * --per-test is not no), the tests both list. 0, or -1 after a usage error.
 */
static int choose_commands(struct ab_run *st)
{
	char **names[2] = {NULL, NULL};
	size_t n[2] = {0, 0};
	for (int side = 0; side < 2; side++) {
		st->argv[side] = ab_split_command(st->a->cmd[side]);
		if (!st->argv[side]) {
			st->argv[side] = xcalloc(4, sizeof(char *));
			st->argv[side][0] = xstrdup("sh");
			st->argv[side][1] = xstrdup("-c");
			st->argv[side][2] = xstrdup(st->a->cmd[side]);
		}
		if (st->a->per_test >= 0)
			n[side] = runner_ctest_tests(st->argv[side], &names[side]);
	}
	int ret = 0;
	if (st->a->per_test > 0 && (!n[0] || !n[1])) {
		cli_usage_error("ab", "--per-test yes needs two plain ctest commands whose tests "
		                      "'ctest --show-only=json-v1' lists");
		ret = -1;
	} else if (n[0] && n[1]) {
		/* The head's order; a test on one side only is an attribution change, not
		 * something to compare: said, and left out. */
		st->tests = xcalloc(n[1], sizeof(char *));
		for (size_t i = 0; i < n[1]; i++) {
			size_t k = 0;
			while (k < n[0] && (!names[0][k] || strcmp(names[0][k], names[1][i])))
				k++;
			if (k < n[0]) {
				st->tests[st->ntests++] = names[1][i];
				names[1][i] = NULL;
				free(names[0][k]);
				names[0][k] = NULL;
			}
		}
		for (int side = 0; side < 2; side++)
			for (size_t i = 0; i < n[side]; i++)
				if (names[side][i]) {
					struct strbuf e = STRBUF_INIT;
					report_escape(&e, names[side][i], REPORT_ESC_TEXT, 200);
					log_warn("ab: test %s is listed by the %s side only: not "
					         "compared",
					         e.buf, side_name[side]);
					strbuf_release(&e);
				}
		log_info("ab: per-test rounds: each of %zu CTest tests of both sides in turn",
		         st->ntests);
	}
	for (int side = 0; side < 2; side++) {
		for (size_t i = 0; i < n[side]; i++)
			free(names[side][i]);
		free(names[side]);
	}
	return ret;
}

/*
 * One round: each side once, base first in odd rounds (1, 3, ...) and head first in even ones
 * (ABBA); in per-test mode each test of both sides in turn, in that order. p[side] get the
 * side's profile. 0, -1 when interrupted, or EXIT_RUNTIME.
 */
static int run_round(struct ab_run *st, size_t round, struct profile *p[2])
{
	int first = round % 2 ? 1 : 0;
	size_t nparts = st->ntests ? st->ntests : 1;
	for (size_t t = 0; t < nparts; t++) {
		const char *test = st->ntests ? st->tests[t] : NULL;
		for (int k = 0; k < 2; k++) {
			int side = k ? !first : first;
			struct profile *one = NULL;
			enum run_outcome o = run_side(st, side, round, test, &one);
			if (o == RUN_OK && !p[side]) {
				p[side] = one;
			} else if (o == RUN_OK) {
				ab_profile_add(p[side], one);
				profile_free(one);
			} else {
				profile_free(one);
				return o == RUN_INTERRUPTED ? -1 : EXIT_RUNTIME;
			}
		}
	}
	return 0;
}

/*
 * The rounds: ABBA order, a look after the rounds paired_is_look names, a stop when nothing is
 * undecided or the budget is spent. Returns 0 (*stopped says why), or an exit status when a
 * command failed or ciprof did.
 */
static int run_rounds(struct ab_run *st, const char **stopped)
{
	struct ab_args *a = st->a;
	size_t max = (size_t)a->max_rounds;
	*stopped = "rounds";
	for (size_t round = 0; round < max; round++) {
		double elapsed = now_seconds() - st->started;
		if (a->max_seconds > 0 && round > 0 &&
		    elapsed + st->longest_round > a->max_seconds) {
			log_info("ab: stopping after %zu rounds: another would pass --max-seconds "
			         "%g",
			         round, a->max_seconds);
			*stopped = "seconds";
			return 0;
		}
		double t0 = now_seconds();
		struct profile *p[2] = {NULL, NULL};
		int ret = run_round(st, round, p);
		if (ret < 0)
			*stopped = "interrupted";
		if (ret) {
			profile_free(p[0]);
			profile_free(p[1]);
			if (ret < 0)
				log_info("ab: interrupted in round %zu; reporting the %zu complete "
				         "rounds",
				         round + 1, round);
			return ret < 0 ? 0 : ret;
		}
		int64_t ids[2];
		if (store_side(st, 0, round, p[0], &ids[0]) < 0 ||
		    store_side(st, 1, round, p[1], &ids[1]) < 0) {
			profile_free(p[0]);
			profile_free(p[1]);
			return EXIT_RUNTIME;
		}
		ab_sides_add(&st->sides, p[0], p[1], ids[0], ids[1]);
		double took = now_seconds() - t0;
		if (took > st->longest_round)
			st->longest_round = took;
		if (paired_is_look(round + 1, max)) {
			struct paired_judgement j;
			paired_judge(st->sides.pa, &a->opts, max, round + 1 >= max, &j);
			log_info("ab: round %zu: %zu judged, %zu slower, %zu faster, %zu undecided",
			         round + 1, j.ntested, j.nslower, j.nfaster, j.nundecided);
			size_t undecided = j.nundecided;
			paired_judgement_release(&j);
			if (!undecided && round + 1 < max) {
				*stopped = "decided";
				return 0;
			}
			if (!undecided)
				*stopped = "decided";
		}
		if (interrupted) {
			*stopped = "interrupted";
			return 0;
		}
	}
	return 0;
}

int cmd_ab(int argc, char **argv)
{
	struct ab_args a = {
	        .format = REPORT_FORMAT_MD, .max_rounds = PAIRED_MAX_ROUNDS, .event = -1};
	report_options_init(&a.opts);
	runner_opts_init(&a.ropts);
	run_meta_init(&a.tags);
	struct attrib_rules rules = {0};
	struct config cfg;
	config_init(&cfg);
	struct ab_run st = {.a = &a, .event = "cpu-clock"};
	ab_sides_init(&st.sides);
	int first, status = EXIT_USAGE, saved_stdout = -1;
	struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
	int r = cli_parse(argc, argv, "ab", ab_usage, ab_description, ab_options, ab_opt, &a,
	                  &first);
	if (r) {
		status = r > 0 ? cli_finish_stdout() : EXIT_USAGE;
		goto out_early;
	}
	if (first < argc) {
		status = cli_usage_error("ab",
		                         "unexpected argument '%s'; the commands go in "
		                         "--base 'CMD' and --head 'CMD'",
		                         argv[first]);
		goto out_early;
	}
	if (!a.cmd[0] || !a.cmd[1]) {
		status = cli_usage_error("ab", "both --base 'CMD' and --head 'CMD' are needed; see "
		                               "'ciprof ab --help'");
		goto out_early;
	}
	if (a.no_store && a.db) {
		status = cli_usage_error("ab", "--db and --no-store contradict each other");
		goto out_early;
	}
	a.ropts.rules = &rules;
	if (a.ropts.pty == 0)
		a.ropts.pty = -1; /* stdout is the report's */
	if (apply_config(&a, &cfg) < 0 || cli_load_rules(&cfg, &rules) < 0) {
		log_errmsg("%s", cp_last_error());
		goto out_early;
	}
	snprintf(st.id, sizeof(st.id), "%lld-%ld", (long long)time(NULL), (long)getpid());
	if (!a.no_store) {
		char *path = a.db ? xstrdup(a.db) : store_default_path();
		r = store_open(&st.store, path, STORE_CREATE);
		free(path);
		if (r < 0) {
			log_errmsg("%s", cp_last_error());
			status = EXIT_RUNTIME;
			goto out_early;
		}
	}
	if (choose_event(&a) < 0) {
		status = EXIT_RUNTIME;
		goto out_early;
	}
	st.event = runner_event_name(a.ropts.event);
	side_meta(&st, 0);
	side_meta(&st, 1);
	if (choose_commands(&st) < 0) {
		status = EXIT_USAGE;
		goto out;
	}

	/* The commands' output goes to stderr: stdout carries the report. */
	fflush(stdout);
	saved_stdout = dup(STDOUT_FILENO);
	if (saved_stdout < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		fprintf(stderr, "ciprof: error: cannot redirect standard output: %s\n",
		        strerror(errno));
		status = EXIT_RUNTIME;
		goto out;
	}
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	log_info("ab: comparison %s: at most %ld rounds%s", st.id, a.max_rounds,
	         a.max_seconds > 0 ? " within --max-seconds" : "");
	st.started = now_seconds();
	const char *stopped;
	status = run_rounds(&st, &stopped);
	double seconds = now_seconds() - st.started;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	fflush(stdout);
	dup2(saved_stdout, STDOUT_FILENO);
	close(saved_stdout);
	saved_stdout = -1;
	if (status)
		goto out;
	if (!st.sides.n) {
		fprintf(stderr, "ciprof: ab: no round completed; nothing to compare\n");
		status = interrupted ? 130 : EXIT_RUNTIME;
		goto out;
	}

	struct report_ab info = {
	        .id = st.id,
	        .rounds = st.sides.n,
	        .max_rounds = (size_t)a.max_rounds,
	        .seconds = seconds,
	        .stopped = stopped,
	        .event = st.event,
	};
	struct strbuf doc = STRBUF_INIT;
	enum report_verdict verdict;
	if (ab_render(&st.sides, &st.meta[0], &st.meta[1], &info, &a.opts, a.format, &doc,
	              &verdict) < 0) {
		strbuf_release(&doc);
		log_errmsg("%s", cp_last_error());
		status = EXIT_RUNTIME;
		goto out;
	}
	log_info("ab: %s after %zu rounds (%.1f s, stopped: %s); %zu undecided; comparison %s",
	         report_verdict_name(verdict), info.rounds, seconds, stopped, info.undecided,
	         st.id);
	status = cli_write_output(a.output, &doc);
	strbuf_release(&doc);
	if (!status && interrupted)
		status = 130;
	else if (!status && a.fail && verdict == REPORT_REGRESSED)
		status = EXIT_REGRESSION;
out:
	if (saved_stdout >= 0) {
		dup2(saved_stdout, STDOUT_FILENO);
		close(saved_stdout);
	}
	run_meta_release(&st.meta[0]);
	run_meta_release(&st.meta[1]);
	ab_argv_free(st.argv[0]);
	ab_argv_free(st.argv[1]);
	for (size_t i = 0; i < st.ntests; i++)
		free(st.tests[i]);
	free(st.tests);
	store_close(st.store);
out_early:
	ab_sides_release(&st.sides);
	run_meta_release(&a.tags);
	attrib_rules_release(&rules);
	config_release(&cfg);
	return status;
}
