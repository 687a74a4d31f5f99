/* ciprof export: a stored run as folded stacks, as a speedscope file (its "sampled"
 * profiles with shared frames: https://www.speedscope.app/file-format-schema.json), or as
 * gzip'd pprof (export/pprof.h) for go tool pprof, Pyroscope and the like. */
#include "cli/cli.h"
#include "cli/store_open.h"
#include "common/error.h"
#include "model/runmeta.h"
#include "common/strbuf.h"
#include "export/pprof.h"
#include "common/xalloc.h"

#include "common/jsonout.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_DB = 256, OPT_RUN, OPT_FORMAT, OPT_TEST };

static const struct cli_option export_options[] = {
        {"db", OPT_DB, "FILE",
         "database file (default: $CIPROF_DB, else .ciprof/ciprof.db at "
         "the repo top)"},
        {"run", OPT_RUN, "ID", "the run to export (default: the latest; also as RUN)"},
        {"format", OPT_FORMAT, "FMT", "folded, speedscope or pprof (required)"},
        {"test", OPT_TEST, "NAME", "only samples of test NAME"},
        {"output", 'o', "FILE", "write to FILE instead of standard output"},
        {NULL, 0, NULL, NULL},
};

static const char export_usage[] =
        "[--db FILE] [RUN | --run ID] [--test NAME] [-o FILE] --format folded|speedscope|pprof";
static const char export_description[] =
        "Writes a stored run (RUN or --run ID: an id from 'ciprof runs' or 'latest', the\n"
        "default) in a format other tools read.\n"
        "folded: 'root;caller;callee COUNT' per stack (flamegraph.pl, inferno, speedscope).\n"
        "speedscope: a JSON file for https://www.speedscope.app (drag it in, or\n"
        "'speedscope FILE'): one \"sampled\" profile for the whole run, then one per test when\n"
        "the run has several; weights are CPU nanoseconds (samples times the sampling period).\n"
        "pprof: gzip'd profile.proto (go tool pprof, Pyroscope, Parca): sample types\n"
        "samples/count and cpu/nanoseconds, a 'test' label on every sample, the run's time.\n"
        "\n"
        "examples:\n"
        "  ciprof export --format speedscope -o run.speedscope.json\n"
        "  ciprof export --format pprof -o run.pb.gz && go tool pprof -top run.pb.gz\n"
        "  ciprof export 12 --format folded | flamegraph.pl > run12.svg\n"
        "  ciprof export --run 12 --test test_parser --format speedscope > parser.json";

struct export_args {
	const char *db, *test, *output;
	int64_t run;
	int format; /* 0 unset, 1 folded, 2 speedscope, 3 pprof */
};

static int export_opt(void *ctx, int id, const char *arg)
{
	struct export_args *a = ctx;
	switch (id) {
	case OPT_DB:
		a->db = arg;
		return 0;
	case OPT_RUN:
		return cli_parse_run("export", arg, &a->run);
	case OPT_TEST:
		a->test = arg;
		return 0;
	case 'o':
		a->output = arg;
		return 0;
	case OPT_FORMAT:
		if (!strcmp(arg, "folded"))
			a->format = 1;
		else if (!strcmp(arg, "speedscope"))
			a->format = 2;
		else if (!strcmp(arg, "pprof"))
			a->format = 3;
		else {
			cli_usage_error("export",
			                "--format takes folded, speedscope or pprof, not '%s'",
			                arg);
			return -1;
		}
		return 0;
	}
	return -1;
}

/* One sampled profile of the samples of test (UINT32_MAX: all), stacks root first. */
static json_t *sampled_profile(const struct profile *p, const char *name, uint32_t test,
                               uint64_t period_ns)
{
	uint64_t *per_node = xcalloc(p->nnodes, sizeof(*per_node));
	for (size_t i = 0; i < p->nsamples; i++)
		if (test == UINT32_MAX || p->samples[i].test == test)
			per_node[p->samples[i].node] += p->samples[i].count;
	json_t *samples = json_array(), *weights = json_array();
	uint64_t total = 0;
	uint32_t *frames = NULL;
	size_t alloc = 0;
	for (size_t n = 1; n < p->nnodes; n++) {
		if (!per_node[n])
			continue;
		size_t depth = profile_node_depth(p, (uint32_t)n);
		ALLOC_GROW(frames, depth, alloc);
		profile_node_frames(p, (uint32_t)n, frames, depth);
		json_t *stack = json_array();
		for (size_t i = 0; i < depth; i++)
			json_array_append_new(stack, json_integer(frames[i]));
		json_array_append_new(samples, stack);
		uint64_t w = period_ns ? per_node[n] * period_ns : per_node[n];
		json_array_append_new(weights, json_integer((json_int_t)w));
		total += w;
	}
	free(frames);
	free(per_node);
	return json_pack("{s:s, s:o, s:s, s:i, s:I, s:o, s:o}", "type", "sampled", "name",
	                 jsonout_str(name), "unit", period_ns ? "nanoseconds" : "none",
	                 "startValue", 0, "endValue", (json_int_t)total, "samples", samples,
	                 "weights", weights);
}

static json_t *speedscope(const struct profile *p, int64_t run, const char *test)
{
	json_t *frames = json_array();
	for (size_t i = 0; i < p->nframes; i++) {
		const struct profile_frame *f = &p->frames[i];
		const char *file = profile_str(p, f->file);
		const char *mod = profile_str(p, f->module);
		json_t *fr = json_pack("{s:o}", "name", jsonout_str(profile_str(p, f->function)));
		if (*file)
			json_object_set_new(fr, "file", jsonout_str(file));
		else if (*mod)
			json_object_set_new(fr, "file", jsonout_str(mod));
		if (f->line)
			json_object_set_new(fr, "line", json_integer(f->line));
		json_array_append_new(frames, fr);
	}
	json_t *profiles = json_array();
	char *name = test ? xasprintf("run %lld, test %s", (long long)run, test)
	                  : xasprintf("run %lld (all tests)", (long long)run);
	json_array_append_new(profiles, sampled_profile(p, name, UINT32_MAX, p->stats.period_ns));
	free(name);
	/* One profile per test, when there are several. */
	uint64_t *per_test = xcalloc(p->nstr ? p->nstr : 1, sizeof(*per_test));
	size_t ntests = 0;
	for (size_t i = 0; i < p->nsamples; i++)
		if (!per_test[p->samples[i].test]++)
			ntests++;
	if (!test && ntests > 1) {
		for (uint32_t t = 0; t < p->nstr; t++) {
			if (!per_test[t])
				continue;
			const char *tn = profile_str(p, t);
			json_array_append_new(profiles,
			                      sampled_profile(p, *tn ? tn : "(outside tests)", t,
			                                      p->stats.period_ns));
		}
	}
	free(per_test);
	char *title = xasprintf("ciprof run %lld", (long long)run);
	json_t *root = json_pack("{s:s, s:o, s:o, s:s, s:i, s:s}", "$schema",
	                         "https://www.speedscope.app/file-format-schema.json", "shared",
	                         json_pack("{s:o}", "frames", frames), "profiles", profiles, "name",
	                         title, "activeProfileIndex", 0, "exporter", "ciprof");
	free(title);
	return root;
}

/* The run as gzip'd pprof, stamped with its start and wall time. */
static int write_pprof(struct store *s, const struct profile *p, int64_t run, FILE *out)
{
	struct run_meta m;
	run_meta_init(&m);
	int r = store_get_run(s, run, &m);
	struct strbuf buf = STRBUF_INIT;
	if (r == 0) {
		struct pprof_info info = {
		        .time_nanos = m.created_at * 1000000000,
		        .duration_nanos = (int64_t)(m.stats.wall_seconds * 1e9),
		};
		r = pprof_write(p, &info, NULL, &buf);
	}
	if (r == 0 && fwrite(buf.buf, 1, buf.len, out) != buf.len)
		r = cp_error_errno("cannot write the pprof profile");
	strbuf_release(&buf);
	run_meta_release(&m);
	return r;
}

int cmd_export(int argc, char **argv)
{
	struct export_args a = {0};
	int r = cli_parse_with_run(argc, argv, "export", export_usage, export_description,
	                           export_options, export_opt, &a, &a.run);
	if (r)
		return r > 0 ? cli_finish_stdout() : EXIT_USAGE;
	if (!a.format)
		return cli_usage_error("export",
		                       "--format is required: folded, speedscope or pprof");
	struct store *s;
	if ((r = cli_store_open(&s, a.db, STORE_READONLY)))
		return r;
	struct profile *p = NULL;
	FILE *out = NULL;
	if ((!a.run && store_latest_run(s, NULL, &a.run) < 0) ||
	    store_load_profile(s, a.run, a.test, &p) < 0) {
		r = cli_runtime_error();
		goto out;
	}
	out = a.output ? fopen(a.output, "w") : stdout;
	if (!out) {
		cp_error_errno("cannot open %s for writing", a.output);
		r = cli_runtime_error();
		goto out;
	}
	if (a.format == 1) {
		if (profile_write_folded(p, out, NULL) < 0) {
			r = cli_runtime_error();
			goto out;
		}
	} else if (a.format == 3) {
		if (write_pprof(s, p, a.run, out) < 0) {
			r = cli_runtime_error();
			goto out;
		}
	} else {
		if (jsonout_write(speedscope(p, a.run, a.test), out, JSONOUT_COMPACT) < 0) {
			r = cli_runtime_error();
			goto out;
		}
	}
	if (a.output) {
		int bad = ferror(out);
		if (fclose(out) != 0 || bad) {
			out = NULL;
			cp_error_errno("cannot write %s", a.output);
			r = cli_runtime_error();
			goto out;
		}
		out = NULL;
	}
	r = cli_finish_stdout();
out:
	if (out && out != stdout)
		fclose(out);
	profile_free(p);
	store_close(s);
	return r;
}
