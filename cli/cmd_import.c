/* ciprof import: a profile made by another profiler (folded stacks, pprof, perf script text)
 * stored as a run, with git and CI metadata from the work tree, so its history gets ciprof's
 * reports. The parsers live in common/ (folded) and export/ (pprof, perf script). */
#include "cli/cli.h"
#include "cli/store_open.h"
#include "common/error.h"
#include "common/log.h"
#include "model/profile.h"
#include "model/runmeta.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "export/perf_script.h"
#include "export/pprof.h"
#include "runner/meta/gitmeta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { OPT_DB = 256, OPT_FORMAT, OPT_BRANCH, OPT_COMMIT, OPT_TEST, OPT_TAG };
enum import_format { FMT_NONE, FMT_FOLDED, FMT_PPROF, FMT_PERF_SCRIPT };

/* Largest input read: a bound for what may be any file. */
#define IMPORT_MAX_BYTES ((size_t)1 << 30)

static const struct cli_option import_options[] = {
        {"db", OPT_DB, "FILE",
         "database file (default: $CIPROF_DB, else .ciprof/ciprof.db at "
         "the repo top)"},
        {"format", OPT_FORMAT, "FMT", "folded, pprof or perf-script (required)"},
        {"branch", OPT_BRANCH, "B", "the run's branch (default: the work tree's)"},
        {"commit", OPT_COMMIT, "SHA", "the run's commit (default: the work tree's HEAD)"},
        {"test", OPT_TEST, "NAME", "put every sample under test NAME"},
        {"tag", OPT_TAG, "K=V", "label the stored run (repeatable)"},
        {NULL, 0, NULL, NULL},
};

static const char import_usage[] =
        "[--db FILE] [--branch B] [--commit SHA] [--test NAME] [--tag K=V]...\n"
        "       --format folded|pprof|perf-script FILE";
static const char import_description[] =
        "Stores a profile made by another profiler as a run, so that runs, show, report and\n"
        "export work on it. FILE '-' reads standard input.\n"
        "folded: 'process;caller;callee COUNT' lines (flamegraph.pl's stackcollapse output,\n"
        "  ciprof export --format folded); the first frame is the process.\n"
        "pprof: gzip'd or plain profile.proto (Go's runtime/pprof, pprof-rs, gperftools via\n"
        "  pprof, ciprof export --format pprof); counts from samples/count, tests from the\n"
        "  'test' sample label, the process from the first mapping.\n"
        "perf-script: the text of 'perf script' after 'perf record -g' (default fields).\n"
        "Git metadata (commit, branch, merge-base) comes from the work tree, CI context from the\n"
        "environment, as for 'ciprof run'; --branch and --commit replace them. Bad input is an\n"
        "error naming the file and line (or byte, or pprof item); nothing is stored then.\n"
        "\n"
        "examples:\n"
        "  perf record -g -- make test && perf script | ciprof import --format perf-script -\n"
        "  go test -cpuprofile cpu.pprof ./... && ciprof import --format pprof cpu.pprof\n"
        "  ciprof import --format folded --branch main --commit $SHA --test bench out.folded";

struct import_args {
	const char *db, *branch, *commit, *test;
	enum import_format format;
	struct run_meta meta; /* tags land here */
};

static int import_opt(void *ctx, int id, const char *arg)
{
	struct import_args *a = ctx;
	switch (id) {
	case OPT_DB:
		a->db = arg;
		return 0;
	case OPT_BRANCH:
		a->branch = arg;
		return 0;
	case OPT_COMMIT:
		a->commit = arg;
		return 0;
	case OPT_TEST:
		a->test = arg;
		return 0;
	case OPT_TAG: {
		const char *eq = strchr(arg, '=');
		if (!eq || eq == arg) {
			cli_usage_error("import", "--tag takes KEY=VALUE, not '%s'", arg);
			return -1;
		}
		char *key = xstrndup(arg, (size_t)(eq - arg));
		run_meta_set_tag(&a->meta, key, eq + 1);
		free(key);
		return 0;
	}
	case OPT_FORMAT:
		if (!strcmp(arg, "folded"))
			a->format = FMT_FOLDED;
		else if (!strcmp(arg, "pprof"))
			a->format = FMT_PPROF;
		else if (!strcmp(arg, "perf-script"))
			a->format = FMT_PERF_SCRIPT;
		else {
			cli_usage_error("import",
			                "--format takes folded, pprof or perf-script, not '%s'",
			                arg);
			return -1;
		}
		return 0;
	}
	return -1;
}

/* Reads all of path ("-": standard input) into sb (whose max bounds it). */
static int read_input(const char *path, struct strbuf *sb)
{
	if (strcmp(path, "-"))
		return strbuf_read_file(sb, path);
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
		if (strbuf_add(sb, chunk, n) < 0)
			return cp_error("standard input: more than %zu MiB", sb->max >> 20);
	if (ferror(stdin))
		return cp_error_errno("cannot read standard input");
	return 0;
}

/* Parses text into p; 0 or -1 with cp_error naming the input. */
static int parse_input(const struct import_args *a, const struct strbuf *in, const char *name,
                       struct profile *p, struct pprof_info *info)
{
	switch (a->format) {
	case FMT_FOLDED: {
		struct profile *tmp = profile_new();
		int r = profile_parse_folded(tmp, in->buf, in->len, name);
		if (r == 0)
			profile_merge_test(p, tmp, a->test);
		profile_free(tmp);
		return r;
	}
	case FMT_PPROF:
		return pprof_read(p, in->buf, in->len, name, a->test, "pprof", info);
	case FMT_PERF_SCRIPT:
		return perf_script_parse(p, in->buf, in->len, name, a->test);
	case FMT_NONE:
		break;
	}
	return cp_error("no input format");
}

/* Git, CI and host context of the work tree, then the user's overrides. */
static void collect_meta(struct import_args *a, char **argv, int argc)
{
	extern char **environ;
	struct run_meta *m = &a->meta;
	if (gitmeta_collect(m, ".", NULL, environ) < 0)
		log_warn("git metadata unavailable, the run is stored without it: %s",
		         cp_last_error());
	gitmeta_ci(m, environ);
	gitmeta_host(m);
	char **args = xcalloc((size_t)argc + 2, sizeof(*args));
	args[0] = "ciprof";
	for (int i = 0; i < argc; i++)
		args[i + 1] = argv[i];
	char *cmd = gitmeta_command_string(args);
	run_meta_set(&m->command, cmd);
	free(cmd);
	free(args);
	if (a->commit) {
		/* The work tree's HEAD facts do not describe another commit. */
		run_meta_set(&m->commit, a->commit);
		run_meta_set(&m->merge_base, "");
		run_meta_set(&m->subject, "");
		m->commit_time = 0;
		m->dirty = 0;
	}
	if (a->branch)
		run_meta_set(&m->branch, a->branch);
}

int cmd_import(int argc, char **argv)
{
	struct import_args a = {0};
	run_meta_init(&a.meta);
	int first;
	struct store *s = NULL;
	struct profile *p = NULL;
	struct strbuf in;
	strbuf_init(&in, IMPORT_MAX_BYTES);
	int r = cli_parse(argc, argv, "import", import_usage, import_description, import_options,
	                  import_opt, &a, &first);
	if (r) {
		r = r > 0 ? cli_finish_stdout() : EXIT_USAGE;
		goto out;
	}
	if (!a.format) {
		r = cli_usage_error("import", "--format is required: folded, pprof or perf-script");
		goto out;
	}
	if (first >= argc) {
		r = cli_usage_error("import", "name the file to import ('-' for standard input)");
		goto out;
	}
	if (first + 1 < argc) {
		r = cli_usage_error("import", "one file at a time; unexpected '%s'",
		                    argv[first + 1]);
		goto out;
	}
	const char *path = argv[first];
	const char *name = strcmp(path, "-") ? path : "<stdin>";
	if (a.test && !*a.test) {
		r = cli_usage_error("import", "--test needs a name");
		goto out;
	}
	p = profile_new();
	struct pprof_info info = {0};
	if (read_input(path, &in) < 0 || parse_input(&a, &in, name, p, &info) < 0) {
		r = cli_runtime_error();
		goto out;
	}
	if (profile_total(p, NULL) == 0) {
		cp_error("%s: no samples in it; nothing was stored", name);
		r = cli_runtime_error();
		goto out;
	}
	collect_meta(&a, argv, argc);
	struct run_meta *m = &a.meta;
	m->created_at = info.time_nanos > 0 ? info.time_nanos / 1000000000 : (int64_t)time(NULL);
	p->stats.samples = profile_total(p, NULL); /* whatever the format said */
	if ((r = cli_store_open(&s, a.db, STORE_CREATE)))
		goto out;
	if (store_add_run(s, m, p) < 0) {
		r = cli_runtime_error();
		goto out;
	}
	log_info("stored run %lld: %llu samples from %s", (long long)m->id,
	         (unsigned long long)m->stats.samples, name);
	r = cli_finish_stdout();
out:
	strbuf_release(&in);
	profile_free(p);
	store_close(s);
	run_meta_release(&a.meta);
	return r;
}
