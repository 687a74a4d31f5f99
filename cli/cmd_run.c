/* ciprof run: profile a command's whole process tree, print a summary, write the profile. */
#include "cli/cli.h"
#include "cli/store_open.h"
#include "config/config.h"
#include "common/error.h"
#include "common/escape.h"
#include "common/log.h"
#include "model/profile.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "model/runmeta.h"
#include "runner/meta/gitmeta.h"
#include "runner/attribution/junit.h"
#include "runner/runner.h"
#include "store/store.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
	OPT_NO_STORE = 256,
	OPT_HZ,
	OPT_BACKEND,
	OPT_UNWIND,
	OPT_FORMAT,
	OPT_DB,
	OPT_TAG,
	OPT_RING_PAGES,
	OPT_PTY,
	OPT_JUNIT,
	OPT_NO_PTY,
	OPT_NO_SYMBOL_CACHE,
	OPT_STACK_SIZE,
};

static const struct cli_option run_options[] = {
        {"hz", OPT_HZ, "N", CLI_CONFIG_HELP("run.hz")},
        {"output", 'o', "FILE", "write the profile to FILE ('-' for stdout)"},
        {"format", OPT_FORMAT, "FMT", "format of --output: folded (default)"},
        {"backend", OPT_BACKEND, "B", "auto (default), perf or preload"},
        {"unwind", OPT_UNWIND, "U",
         "fp (frame pointers; a frameless leaf's caller from its CFI; default), fp-only (the "
         "frame-pointer walk alone) or dwarf (copies of the stack unwound with their CFI; "
         "perf backend only)"},
        {"stack-size", OPT_STACK_SIZE, "N",
         "--unwind dwarf: bytes of stack copied per sample, a multiple of 8 up to 65528 "
         "(default 8192)"},
        {"no-store", OPT_NO_STORE, NULL, "do not store the run in the database"},
        {"db", OPT_DB, "FILE",
         "database (default $CIPROF_DB, else .ciprof/ciprof.db at the "
         "top of the git work tree)"},
        {"tag", OPT_TAG, "K=V", "label the stored run (repeatable)"},
        {"ring-pages", OPT_RING_PAGES, "N", "ring buffer pages per CPU, a power of two"},
        {"pty", OPT_PTY, NULL,
         "run CMD on a pseudo-terminal and read test markers from its output"},
        {"no-pty", OPT_NO_PTY, NULL, "never put CMD on a pseudo-terminal"},
        {"no-symbol-cache", OPT_NO_SYMBOL_CACHE, NULL,
         "symbolize everything anew; do not read or write the symbol cache"},
        {"junit", OPT_JUNIT, "GLOB",
         "after the run, read test outcomes from JUnit XML (repeatable)"},
        {NULL, 0, NULL, NULL},
};

static const char run_usage[] = "[<options>] -- CMD [ARGS...]";
static const char run_description[] =
        "Runs CMD and samples every process and thread it starts (forks, threads, exec chains\n"
        "such as sh -> make -> test binaries) at --hz samples per CPU-second, with the kernel's\n"
        "perf_event_open cpu-clock event; where the kernel refuses that (perf_event_paranoid\n"
        "above 2, a container's seccomp filter), --backend auto says why in one line and\n"
        "samples with the LD_PRELOAD backend instead. Each sample is given a test (marks,\n"
        "CTest, the framework's frames, --pty output markers). CMD's input and output pass\n"
        "through untouched.\n"
        "When it ends, ciprof prints a summary to stderr (samples taken and lost, processes,\n"
        "CPU seconds, the top 10 functions by self share) and exits with CMD's own status\n"
        "(128+N when CMD died of signal N; 127 when it was not found, 126 when it could not\n"
        "be executed). A second ^C or SIGTERM after CMD has ended is ignored, so the run\n"
        "is still written and stored; when ciprof itself is killed, CMD is killed too.\n"
        "The run is stored, with its git commit, branch and CI context, in the database\n"
        "(see 'ciprof runs' and 'ciprof show') unless --no-store is given, tagged with the\n"
        "CPUs other processes kept busy meanwhile (host.other_cpus: a report does not fail\n"
        "the build on a head run much busier than its history's, and judges a head run\n"
        "under 0.1 CPUs on the steady tails its history fitted, uncapped). Processes seen\n"
        "to start that sent nothing of their own (the kernel did not follow them: their\n"
        "tests and functions are missing) are warned about and the run is tagged\n"
        "host.unseen_processes, and one whose CPU counted on after its ring buffer fell\n"
        "silent, host.silent_ring_seconds: a report leaves such a run out or makes its\n"
        "verdict advisory (docs/run.md, \"Limits\").\n"
        "\n"
        "examples:\n"
        "  ciprof run -- make test\n"
        "  ciprof run --tag suite=unit -- ctest -j2\n"
        "  ciprof run --hz 999 --no-store -o prof.folded -- ./mytests\n"
        "  ciprof run --unwind dwarf --junit 'out/*.xml' -- ./unit_tests --gtest_output=xml:out/";

struct run_args {
	struct runner_opts ropts;
	int hz_given, backend_given; /* flags win over .ciprof.yml and CIPROF_RUN_* */
	const char *output;
	const char *format;
	const char *db;
	int no_store;
	int stack_size_given;
	const char **junit; /* borrowed patterns */
	size_t njunit, junit_alloc;
	struct run_meta meta; /* tags from --tag land here */
};

static int run_opt(void *ctx, int id, const char *arg)
{
	struct run_args *a = ctx;
	long v;
	double num;
	switch (id) {
	case OPT_HZ:
		if (cli_config_arg("run", run_options, OPT_HZ, arg, &num) < 0)
			return -1;
		a->ropts.hz = (int)num;
		a->hz_given = 1;
		return 0;
	case 'o':
		a->output = arg;
		return 0;
	case OPT_FORMAT:
		if (strcmp(arg, "folded")) {
			cli_usage_error("run", "--format '%s' is not known; use folded", arg);
			return -1;
		}
		a->format = arg;
		return 0;
	case OPT_BACKEND:
		a->backend_given = 1;
		return cli_parse_backend("run", arg, &a->ropts.backend);
	case OPT_UNWIND:
		return cli_parse_unwind("run", arg, &a->ropts.unwind);
	case OPT_STACK_SIZE:
		if (cli_parse_int(arg, 8, RUNNER_STACK_SIZE_MAX, &v) < 0 || v % 8) {
			cli_usage_error("run",
			                "--stack-size takes a multiple of 8 from 8 to %d, not '%s'",
			                RUNNER_STACK_SIZE_MAX, arg);
			return -1;
		}
		a->ropts.stack_size = (size_t)v;
		a->stack_size_given = 1;
		return 0;
	case OPT_RING_PAGES:
		if (cli_parse_int(arg, 1, 1 << 16, &v) < 0 || (v & (v - 1))) {
			cli_usage_error("run",
			                "--ring-pages takes a power of two up to 65536, "
			                "not '%s'",
			                arg);
			return -1;
		}
		a->ropts.ring_pages = (size_t)v;
		return 0;
	case OPT_JUNIT:
		ALLOC_GROW(a->junit, a->njunit + 1, a->junit_alloc);
		a->junit[a->njunit++] = arg;
		return 0;
	case OPT_PTY:
		a->ropts.pty = 1;
		return 0;
	case OPT_NO_PTY:
		a->ropts.pty = -1;
		return 0;
	case OPT_NO_SYMBOL_CACHE:
		a->ropts.symbol_cache = 0;
		return 0;
	case OPT_NO_STORE:
		a->no_store = 1;
		return 0;
	case OPT_DB:
		if (!*arg) {
			cli_usage_error("run", "--db needs a file name");
			return -1;
		}
		a->db = arg;
		return 0;
	case OPT_TAG: {
		const char *eq = strchr(arg, '=');
		if (!eq || eq == arg) {
			cli_usage_error("run", "--tag takes KEY=VALUE, not '%s'", arg);
			return -1;
		}
		char *key = xstrndup(arg, (size_t)(eq - arg));
		run_meta_set_tag(&a->meta, key, eq + 1);
		free(key);
		return 0;
	}
	}
	return -1;
}

static void print_summary(const struct profile *p)
{
	const struct profile_stats *st = &p->stats;
	if (log_level() < LOG_NORMAL)
		return;
	uint64_t total = profile_total(p, NULL);
	fprintf(stderr,
	        "ciprof: %llu samples at %d Hz (%llu lost), %llu process%s, %llu thread%s, "
	        "%.2f CPU-s (%.2f of them unsampled) in %.2f s\n",
	        (unsigned long long)st->samples, st->hz, (unsigned long long)st->lost,
	        (unsigned long long)st->processes, st->processes == 1 ? "" : "es",
	        (unsigned long long)st->threads, st->threads == 1 ? "" : "s", st->cpu_seconds,
	        st->unsampled_seconds, st->wall_seconds);
	/* The preload backend's CPU-time timers fire at the kernel's tick whatever --hz asks:
	 * the counts are right, but fewer sample events make them vary more. */
	if (st->dispersion >= RUN_COARSE_DISPERSION)
		log_info("sample events stood for %.1f periods each on average: the "
		         "LD_PRELOAD backend's CPU-time timers fire at the kernel's tick, "
		         "not at %d Hz, so shares vary more than %d Hz's would "
		         "(docs/preload.md)",
		         st->dispersion, st->hz, st->hz);
	if (st->lost && st->samples)
		log_warn("%.1f%% of samples were lost: raise --ring-pages or lower --hz",
		         100.0 * (double)st->lost / (double)(st->samples + st->lost));
	if (st->unseen_processes)
		log_warn(
		        "%llu process%s of this run sent no sample nor any other record: the "
		        "kernel did not follow %s, so %s tests and functions are missing and %s "
		        "CPU time is [unsampled]; reports leave this run out (a head run's verdict "
		        "is advisory): run it again (docs/run.md, \"Limits\")",
		        (unsigned long long)st->unseen_processes,
		        st->unseen_processes == 1 ? "" : "es",
		        st->unseen_processes == 1 ? "it" : "them",
		        st->unseen_processes == 1 ? "its" : "their",
		        st->unseen_processes == 1 ? "its" : "their");
	if (st->silent_seconds > 0)
		log_warn("the kernel stopped writing to a CPU's ring buffer during this run: %.3f "
		         "CPU-s counted there after its last record came with no sample nor any "
		         "other record, so the tests and functions that ran then are missing; "
		         "reports leave this run out (a head run's verdict is advisory): run it "
		         "again (docs/run.md, \"Limits\")",
		         st->silent_seconds);
	if (!total)
		return;
	struct profile_func *f;
	size_t n = profile_functions(p, NULL, &f);
	struct strbuf esc = STRBUF_INIT;
	if (n) {
		fprintf(stderr, "ciprof: top functions by self share:\n");
		fprintf(stderr, "   self   total  function\n");
	}
	for (size_t i = 0; i < n && i < 10; i++) {
		const char *mod = profile_str(p, f[i].module);
		/* Names are the profiled program's: never raw to a terminal or a CI log. */
		esc_str(&esc, profile_str(p, f[i].function), ESC_TERM);
		if (*mod) {
			strbuf_addstr(&esc, " [");
			esc_append(&esc, mod, ESC_TERM);
			strbuf_addch(&esc, ']');
		}
		fprintf(stderr, " %5.1f%%  %5.1f%%  %s\n",
		        100.0 * (double)f[i].self / (double)total,
		        100.0 * (double)f[i].total / (double)total, esc.buf);
	}
	strbuf_release(&esc);
	free(f);
}

/*
 * pytest names its tests to ciprof only in -v's output, and that output comes as each test runs
 * only on a terminal: a pytest run whose every sample fell outside tests says how to fix it.
 */
static void hint_pytest(const struct profile *p, const struct runner_opts *o)
{
	/* pytest itself, pytest-3, or `python3 -m pytest` */
	int pytest = 0, verbose = 0;
	for (char *const *a = o->argv; *a; a++) {
		const char *base = strrchr(*a, '/');
		base = base ? base + 1 : *a;
		pytest |= !strncmp(base, "pytest", 6) && (!base[6] || !strcmp(base + 6, "-3"));
		verbose |= !strcmp(*a, "-v") || !strcmp(*a, "-vv") || !strcmp(*a, "--verbose");
	}
	if (!pytest || !profile_total(p, NULL))
		return;
	for (size_t i = 0; i < p->nsamples; i++)
		if (*profile_str(p, p->samples[i].test))
			return;
	log_warn("no sample was attributed to a test: pytest names its tests to ciprof only "
	         "with -v%s%s (ciprof run --pty -- python3 -m pytest -v; "
	         "docs/attribution-examples.md)",
	         verbose ? "" : " (not given here)",
	         runner_uses_pty(o) ? "" : ", on a terminal: --pty");
}

int cli_load_rules(struct config *cfg, struct attrib_rules *rules)
{
	if (config_load(cfg, NULL) < 0)
		return -1;
	for (size_t i = 0; i < cfg->nrules; i++) {
		const struct config_rule *r = &cfg->rules[i];
		if (attrib_rules_add(rules, r->name, r->caller, r->test, r->as) < 0) {
			/* an unnamed rule is named by its place ("FILE:LINE"): say it once */
			size_t n = cfg->path ? strlen(cfg->path) : 0;
			if (n && !strncmp(r->name, cfg->path, n) && r->name[n] == ':')
				return -1;
			return cp_error("%s:%u: %s", cfg->path, r->line, cp_last_error());
		}
	}
	if (cfg->builtin_rules)
		attrib_rules_add_builtin(rules);
	if (cfg->path)
		log_verbose("configuration from %s: %zu attribution rules", cfg->path, cfg->nrules);
	return 0;
}

/* Reads the JUnit reports named by --junit (globs, expanded after the run since the run writes
 * them) and records each test's outcome in p. A pattern matching nothing or a bad file is a
 * warning: the profile matters more than the outcomes. */
static void attach_junit(struct run_args *a, struct profile *p)
{
	struct junit j;
	junit_init(&j);
	for (size_t i = 0; i < a->njunit; i++) {
		glob_t g;
		int rc = glob(a->junit[i], GLOB_NOSORT, NULL, &g);
		if (rc == GLOB_NOMATCH) {
			log_warn("--junit %s matches no file", a->junit[i]);
			continue;
		}
		for (size_t k = 0; rc == 0 && k < g.gl_pathc; k++) {
			struct strbuf sb = STRBUF_INIT;
			sb.max = 256 << 20;
			if (strbuf_read_file(&sb, g.gl_pathv[k]) < 0 ||
			    junit_parse(&j, sb.buf, sb.len, g.gl_pathv[k]) < 0)
				log_warn("%s", cp_last_error());
			strbuf_release(&sb);
		}
		if (rc == 0)
			globfree(&g);
	}
	if (j.n) {
		size_t matched = junit_attach(&j, p);
		log_verbose("JUnit: %zu test outcomes, %zu of them matched profiled tests", j.n,
		            matched);
	}
	junit_release(&j);
}

/* Git, CI and host context, taken before the command runs (it may change the work tree).
 * base: report.base-branch (.ciprof.yml or CIPROF_REPORT_BASE_BRANCH), the branch whose
 * merge-base is recorded; "" lets gitmeta choose (CI target branch, then default branch).
 * -1 (cp_error set) for a checkout git refuses as another user's: a run stored without its
 * commit and branch would never serve as a baseline, so it is refused before CMD runs. */
static int collect_meta(struct run_meta *m, char **argv, const char *base)
{
	extern char **environ;
	m->created_at = (int64_t)time(NULL);
	int r = gitmeta_collect(m, ".", base, environ);
	if (r == GITMETA_ERR_OWNER)
		return -1;
	if (r < 0)
		log_warn("git metadata unavailable, the run is stored without it: %s",
		         cp_last_error());
	gitmeta_ci(m, environ);
	gitmeta_host(m);
	char *cmd = gitmeta_command_string(argv);
	run_meta_set(&m->command, cmd);
	free(cmd);
	return 0;
}

static int write_output(const struct profile *p, const char *path);

/* Stores the run in db; 0, or -1 after printing why. A profile that could not be stored is
 * written beside the database (else in $TMPDIR), so the suite's time is not lost with it. */
static int store_run(struct run_args *a, const struct profile *p, const char *db)
{
	struct store *s = NULL;
	int r = store_open(&s, db, STORE_CREATE);
	if (r == 0) {
		r = store_add_run(s, &a->meta, p);
	}
	store_close(s);
	if (r == 0) {
		log_info("stored run %lld in %s", (long long)a->meta.id, db);
		return 0;
	}
	fprintf(stderr, "ciprof: error: the run was not stored: %s\n", cp_last_error());
	if (a->output && strcmp(a->output, "-")) {
		fprintf(stderr, "ciprof: the profile is in %s (--output)\n", a->output);
		return r;
	}
	const char *tmp = getenv("TMPDIR");
	char *spots[2] = {
	        xasprintf("%s.run-%lld-%ld.folded", db, (long long)a->meta.created_at,
	                  (long)getpid()),
	        xasprintf("%s/ciprof-run-%lld-%ld.folded", tmp && *tmp ? tmp : "/tmp",
	                  (long long)a->meta.created_at, (long)getpid()),
	};
	const char *saved = NULL;
	for (int i = 0; i < 2 && !saved; i++)
		if (write_output(p, spots[i]) == 0)
			saved = spots[i];
	if (saved)
		fprintf(stderr,
		        "ciprof: the profile was written to %s instead; 'ciprof import' stores it "
		        "once the database is fixed\n",
		        saved);
	else
		fprintf(stderr, "ciprof: error: the profile could not be saved either: %s\n",
		        cp_last_error());
	free(spots[0]);
	free(spots[1]);
	return r;
}

static int write_output(const struct profile *p, const char *path)
{
	int to_stdout = !strcmp(path, "-");
	FILE *out = to_stdout ? stdout : fopen(path, "w");
	if (!out) {
		cp_error_errno("cannot open %s for writing", path);
		return -1;
	}
	int r = profile_write_folded(p, out, NULL);
	if (to_stdout) {
		/* A full disk or a closed pipe must not pass for a written profile. */
		if ((fflush(out) != 0 || ferror(out)) && r == 0)
			r = cp_error_errno("cannot write the profile to standard output");
	} else {
		int bad = ferror(out);
		if ((fclose(out) != 0 || bad) && r == 0)
			r = cp_error_errno("cannot write %s", path);
	}
	return r;
}

int cmd_run(int argc, char **argv)
{
	struct run_args a = {0};
	runner_opts_init(&a.ropts);
	struct attrib_rules rules = {0};
	struct config cfg;
	config_init(&cfg);
	a.ropts.rules = &rules;
	run_meta_init(&a.meta);
	int first, status;
	struct profile *p = NULL;
	char *db = NULL; /* where the run is stored (owned); NULL with --no-store */
	int r = cli_parse(argc, argv, "run", run_usage, run_description, run_options, run_opt, &a,
	                  &first);
	if (r) {
		status = r > 0 ? cli_finish_stdout() : EXIT_USAGE;
		goto out;
	}
	if (first >= argc) {
		status =
		        cli_usage_error("run", "no command given; usage: ciprof run %s", run_usage);
		goto out;
	}
	if (a.format && !a.output) {
		status = cli_usage_error("run", "--format needs --output FILE");
		goto out;
	}
	if (a.stack_size_given && a.ropts.unwind != RUNNER_UNWIND_DWARF) {
		status = cli_usage_error("run", "--stack-size needs --unwind dwarf");
		goto out;
	}
	if (a.no_store && a.db) {
		status = cli_usage_error("run", "--db and --no-store contradict each other");
		goto out;
	}
	a.ropts.argv = argv + first;
	if (cli_load_rules(&cfg, &rules) < 0) {
		log_errmsg("%s", cp_last_error());
		status = EXIT_USAGE;
		goto out;
	}
	/* run.hz and run.backend from .ciprof.yml or CIPROF_RUN_HZ/BACKEND, unless a flag said. */
	if (!a.hz_given)
		a.ropts.hz = (int)config_int(&cfg, CONFIG_RUN_HZ);
	if (!a.backend_given) {
		if (cli_parse_backend(NULL, config_str(&cfg, CONFIG_RUN_BACKEND),
		                      &a.ropts.backend) < 0)
			a.ropts.backend = RUNNER_BACKEND_AUTO;
	}
	if (!a.no_store &&
	    collect_meta(&a.meta, a.ropts.argv, config_str(&cfg, CONFIG_REPORT_BASE_BRANCH)) < 0) {
		log_errmsg("%s (or run with --no-store); CMD was not run", cp_last_error());
		status = EXIT_RUNTIME;
		goto out;
	}

	/* A database that cannot take the run is found now, not after a 30-minute suite. */
	if (!a.no_store) {
		db = a.db ? xstrdup(a.db) : store_default_path();
		if (cli_store_check(db) < 0) {
			log_errmsg("%s; CMD was not run", cp_last_error());
			status = EXIT_RUNTIME;
			goto out;
		}
	}

	r = runner_run(&p, &a.ropts);
	if (r == RUNNER_ERR_EXEC) {
		/* The command never ran: say why, exit 127 or 126 as a shell would, store
		 * nothing. */
		fprintf(stderr, "ciprof: %s\n", cp_last_error());
		status = p ? p->stats.exit_status : 127;
		goto out;
	}
	if (r < 0) {
		log_errmsg("%s", cp_last_error());
		status = EXIT_RUNTIME;
		goto out;
	}
	/* From here on the command has run: its status is ours, and what was gathered is
	 * written and stored whatever else fails (a failure turns a 0 into 3). */
	status = p->stats.exit_status;
	if (a.njunit)
		attach_junit(&a, p);
	print_summary(p);
	hint_pytest(p, &a.ropts);
	if (a.output && write_output(p, a.output) < 0) {
		log_errmsg("%s", cp_last_error());
		if (!status)
			status = EXIT_RUNTIME;
	} else if (a.output && strcmp(a.output, "-")) {
		log_info("profile written to %s", a.output);
	}
	run_meta_tag_stats(&a.meta, &p->stats);
	if (run_meta_tag(&a.meta, RUN_TAG_OTHER_CPUS))
		log_verbose("other processes kept %s CPUs busy meanwhile",
		            run_meta_tag(&a.meta, RUN_TAG_OTHER_CPUS));
	if (!a.no_store && store_run(&a, p, db) < 0 && !status)
		status = EXIT_RUNTIME;
	fflush(stdout);
out:
	free(db);
	profile_free(p);
	run_meta_release(&a.meta);
	attrib_rules_release(&rules);
	free(a.junit);
	config_release(&cfg);
	return status;
}
