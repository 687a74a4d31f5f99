/* The report for machines (DESIGN.md's stable shape): {"verdict", "head", "base", "tests",
 * "functions", ...}; fields may be added, never renamed. Numbers that are not finite (a new
 * function's change) are null. Names are made valid UTF-8; jansson escapes the rest. */
#include "report/internal.h"
#include "common/error.h"
#include "common/jsonout.h"
#include "common/xalloc.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>

static json_t *jnum(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *cmp_json(const struct report_item *it, const struct report_diff *d, int ab)
{
	const struct report_cmp *c = &it->cmp;
	json_t *o = json_object();
	json_object_set_new(o, "name", jsonout_str(it->name));
	if (it->measure != REPORT_TEST) {
		json_object_set_new(o, "module", jsonout_str(it->module));
		json_object_set_new(o, "measure", json_string(report_measure_name(it->measure)));
	}
	json_object_set_new(o, "base_share", jnum(c->base_share));
	json_object_set_new(o, "head_share", jnum(c->head_share));
	json_object_set_new(o, "delta", jnum(c->change));
	/* the plain head / base - 1 the Markdown shows, next to the judged delta */
	json_object_set_new(o, "change", jnum(report_raw_change(c)));
	json_object_set_new(o, "p_value", jnum(c->p));
	json_object_set_new(o, "q_value", jnum(c->q));
	json_object_set_new(o, "significant", json_boolean(c->significant));
	json_object_set_new(o, "kind", json_string(report_kind_name(c->kind)));
	json_object_set_new(o, "tested", json_boolean(c->tested));
	/* why not: "too few samples to judge", "harness and tools, ...", "not a function: ..." */
	json_object_set_new(o, "not_judged",
	                    c->tested ? json_null()
	                              : json_string(report_context_reason(c->context)));
	json_object_set_new(o, "noise_cv", jnum(sqrt(c->noise)));
	if (!ab) {
		/* which of the history's tails it is judged with, and its history's farthest
		 * deviation from its median run in robust standard deviations (null: not
		 * measured: fewer than 20 history runs or 20 samples a run) */
		static const char *const tails[STATS_TAIL_GROUPS] = {"steady", "swinging", "clean"};
		json_object_set_new(o, "tail", json_string(tails[c->tail]));
		json_object_set_new(o, "history_jump", c->jump > 0 ? jnum(c->jump) : json_null());
		/* the smallest slowdown this report could have flagged in it (null: not judged
		 * by the log-ratio test) */
		json_object_set_new(o, "detectable_change",
		                    c->detectable > 0 ? jnum(c->detectable) : json_null());
		/* flagged among the functions of this flagged test (report_cmp.within), its
		 * q_value within that family; null: among all the functions, or not flagged */
		if (it->measure != REPORT_TEST)
			json_object_set_new(o, "within_test",
			                    c->within ? jsonout_str(c->within) : json_null());
		/* a regression that may fail the build (report_cmp.gates) */
		if (c->kind == REPORT_REGRESSION)
			json_object_set_new(o, "gates", json_boolean(c->gates));
	}
	json_object_set_new(o, "base_seconds", jnum(c->base_seconds));
	json_object_set_new(o, "head_seconds", jnum(c->head_seconds));
	json_object_set_new(o, "base_samples", jnum(c->base_count));
	json_object_set_new(o, "head_samples", jnum(c->head_count));
	json_object_set_new(o, "expected_samples", jnum(c->expected));
	json_object_set_new(o, "new", json_boolean(isinf(c->change)));
	json_object_set_new(o, "gone", json_boolean(!(c->head_count > 0) && c->base_count > 0));
	if (ab) {
		json_object_set_new(o, "undecided", json_boolean(c->undecided));
		json_object_set_new(o, "rounds_spread", jnum(expm1(c->spread)));
	}
	if (it->path) {
		const struct profile *names = d->tree.names;
		json_t *path = json_array();
		size_t depth = profile_node_depth(names, it->path);
		json_t **tmp = xcalloc(depth ? depth : 1, sizeof(*tmp));
		size_t i = depth;
		for (uint32_t n = it->path; n && i > 0; n = names->nodes[n].parent)
			tmp[--i] = jsonout_str(report_node_name(d, n));
		for (i = 0; i < depth; i++)
			json_array_append_new(path, tmp[i]);
		free(tmp);
		json_object_set_new(o, "path", path);
	}
	return o;
}

int report_json(const struct report *r, struct strbuf *out)
{
	const struct report_diff *d = r->diff;
	json_t *root = json_object();
	json_object_set_new(root, "schema", json_integer(REPORT_JSON_SCHEMA));
	json_object_set_new(root, "verdict",
	                    json_string(d ? report_verdict_name(d->verdict) : "ok"));
	json_object_set_new(root, "head", json_integer((json_int_t)r->head->id));
	/* the run the document is about, under the name 'show' gives it */
	json_object_set_new(root, "run", json_integer((json_int_t)r->head->id));
	json_t *base = json_array();
	for (size_t i = 0; i < r->base->n; i++)
		json_array_append_new(base, json_integer((json_int_t)r->base->ids[i]));
	json_object_set_new(root, "base", base);
	json_object_set_new(root, "head_commit", jsonout_str(r->head->commit));
	json_object_set_new(root, "head_branch", jsonout_str(r->head->branch));
	json_object_set_new(root, "base_ref", jsonout_str(r->base->ref));
	json_object_set_new(root, "base_commit", jsonout_str(r->base->commit));
	json_object_set_new(root, "baseline", d ? jsonout_str(r->base->rule) : json_null());
	json_object_set_new(root, "no_baseline", json_boolean(!d));
	/* An advisory verdict never fails a build (too little history, a fallback baseline). */
	json_object_set_new(root, "advisory", json_boolean(r->advisory != NULL));
	if (r->advisory)
		json_object_set_new(root, "advisory_reason", jsonout_str(r->advisory));
	if (!d)
		json_object_set_new(root, "message", jsonout_str(r->base->none));
	json_t *tests = json_array(), *funcs = json_array();
	if (d) {
		json_t *scale = json_object();
		json_object_set_new(scale, "factor", jnum(d->scale));
		json_object_set_new(scale, "functions",
		                    json_integer((json_int_t)d->scale_functions));
		json_object_set_new(scale, "estimated", json_boolean(d->scale_estimated));
		/* its own standard error on the log scale, added to every test */
		json_object_set_new(scale, "factor_cv", jnum(sqrt(d->scale_variance)));
		const char *shift = "none";
		if (d->scale_estimated && fabs(d->scale - 1) >= d->opts.min_change)
			shift = d->scale > 1 ? "slower" : "faster";
		json_object_set_new(scale, "shift", json_string(shift));
		json_object_set_new(root, "scale", scale);
		/* modules of the head compared under the base's name for them */
		if (d->renamed)
			json_object_set_new(root, "renamed_modules", jsonout_str(d->renamed));
		json_t *sum = json_object();
		json_object_set_new(sum, "base_runs", json_integer((json_int_t)d->base_runs));
		/* runs of the head's commit each finding had to show in, the head included (1:
		 * the head alone), and the others' ids */
		json_object_set_new(
		        sum, "head_runs",
		        json_integer((json_int_t)(d->confirm_runs ? d->confirm_runs : 1)));
		json_t *cids = json_array();
		for (size_t i = 0; i + 1 < d->confirm_runs; i++)
			json_array_append_new(cids, json_integer((json_int_t)d->confirm_ids[i]));
		json_object_set_new(sum, "confirming_runs", cids);
		/* items this run flagged that another of them did not (taken back; with a short
		 * history only) */
		json_object_set_new(sum, "unrepeated", json_integer((json_int_t)d->unrepeated));
		json_object_set_new(sum, "base_cpu_seconds", jnum(d->base_cpu));
		json_object_set_new(sum, "head_cpu_seconds", jnum(d->head_cpu));
		json_object_set_new(sum, "base_samples", jnum(d->base_samples));
		json_object_set_new(sum, "head_samples", jnum(d->head_samples));
		json_object_set_new(sum, "comparisons", json_integer((json_int_t)d->ntested));
		json_object_set_new(sum, "regressions", json_integer((json_int_t)d->nregressed));
		/* of them, those that may fail the build */
		json_object_set_new(sum, "gating_regressions",
		                    json_integer((json_int_t)d->ngating));
		json_object_set_new(sum, "improvements", json_integer((json_int_t)d->nimproved));
		json_object_set_new(sum, "run_to_run_cv", jnum(sqrt(d->extra_variance)));
		json_object_set_new(sum, "spread_measured", json_boolean(d->extra_estimated));
		json_object_set_new(sum, "history_runs", json_integer((json_int_t)d->history_runs));
		/* the share of Poisson's variance sampling adds (learned from the history; 1:
		 * assumed), and the spread per item this head run showed beyond its history,
		 * added to every test (0: none) */
		json_object_set_new(sum, "sampling_efficiency", jnum(d->efficiency));
		json_object_set_new(sum, "head_extra_cv", jnum(sqrt(d->head_spread)));
		/* CPUs other processes kept busy during the head run, and during the median
		 * history run (null: not measured; docs/report.md, "A head on a busy machine") */
		json_object_set_new(sum, "head_other_cpus", jnum(d->head_other_cpus));
		json_object_set_new(sum, "history_other_cpus", jnum(d->history_other_cpus));
		json_object_set_new(sum, "history_other_cpus_spread",
		                    jnum(d->history_other_spread));
		/* the head measured under 0.1 CPUs of others: the steady tails as fitted,
		 * uncapped (docs/report.md, "A quiet head"; history mode only) */
		if (!d->ab)
			json_object_set_new(sum, "head_quiet", json_boolean(d->opts.head_quiet));
		/* the median |z| over the functions of the head run, and the largest of its
		 * history's runs: the head is widened (head_extra_cv) only well beyond the larger
		 * of that and chance, and back to it (0: not checked) */
		json_object_set_new(sum, "head_median_z", jnum(d->head_median_z));
		json_object_set_new(sum, "history_median_z", jnum(d->history_spread));
		/* the largest median of a history run not itself in a slow spell; with other
		 * runs of the head's code, the median |z| of the functions' mean over the runs
		 * (0: not checked), and whether they moved together beyond the history (a slow
		 * spell lasting them: each widened down to that median, combined as
		 * their least significant one; docs/report.md, step 7) */
		json_object_set_new(sum, "history_ordinary_median_z", jnum(d->history_ordinary));
		json_object_set_new(sum, "job_median_z", jnum(d->job_median_z));
		json_object_set_new(sum, "job_spell", json_boolean(d->job_spell));
		/* how far the whole suite moves run to run in the history (its log CPU level's
		 * standard deviation), and the spread per item added because this head's move
		 * went beyond it (0: none) */
		json_object_set_new(sum, "history_level_cv", jnum(sqrt(d->level_variance)));
		json_object_set_new(sum, "shift_extra_cv", jnum(sqrt(d->shift_variance)));
		/* the tails of the history's deviations: Student's t degrees of freedom (null:
		 * normal) and scale */
		json_object_set_new(sum, "tail_dof",
		                    isinf(d->tail_dof) ? json_null() : jnum(d->tail_dof));
		json_object_set_new(sum, "tail_scale", jnum(d->tail_scale));
		/* the steady functions' own tail (stats_tail_group 0), each of them on its own
		 * scale besides; the same as the above without 20 history runs */
		json_object_set_new(sum, "steady_tail_dof",
		                    isinf(d->group_dof[0]) ? json_null() : jnum(d->group_dof[0]));
		json_object_set_new(sum, "steady_tail_scale", jnum(d->group_scale[0]));
		/* the clean steady items' (stats_tail_group 2: their history never jumped) */
		json_object_set_new(sum, "clean_tail_dof",
		                    isinf(d->group_dof[2]) ? json_null() : jnum(d->group_dof[2]));
		json_object_set_new(sum, "clean_tail_scale", jnum(d->group_scale[2]));
		json_object_set_new(root, "summary", sum);
		json_t *opts = json_object();
		json_object_set_new(opts, "min_change", jnum(d->opts.min_change));
		json_object_set_new(opts, "min_share", jnum(d->opts.min_share));
		json_object_set_new(opts, "alpha", jnum(d->opts.alpha));
		json_object_set_new(root, "options", opts);
		for (size_t i = 0; i < d->nitems; i++) {
			const struct report_item *it = &d->items[i];
			/* Functions below the minimum share are left out; frames ciprof makes
			 * are listed, not judged (context for the time they hold). */
			if (!it->cmp.tested && it->measure != REPORT_TEST &&
			    it->cmp.context != REPORT_NOT_CODE)
				continue;
			json_array_append_new(it->measure == REPORT_TEST ? tests : funcs,
			                      cmp_json(it, d, d->ab != NULL));
		}
	}
	if (d && d->ab) {
		const struct report_ab *ab = d->ab;
		json_t *o = json_object();
		json_object_set_new(o, "id", jsonout_str(ab->id));
		json_object_set_new(o, "rounds", json_integer((json_int_t)ab->rounds));
		json_object_set_new(o, "max_rounds", json_integer((json_int_t)ab->max_rounds));
		json_object_set_new(o, "seconds", jnum(ab->seconds));
		json_object_set_new(o, "stopped", json_string(ab->stopped));
		json_object_set_new(o, "event", json_string(ab->event));
		json_object_set_new(o, "undecided", json_integer((json_int_t)ab->undecided));
		json_object_set_new(o, "looks", json_integer((json_int_t)ab->looks));
		json_object_set_new(o, "sample_dispersion",
		                    json_real(ab->dispersion > 1 ? ab->dispersion : 1));
		json_object_set_new(root, "ab", o);
	}
	json_object_set_new(root, "tests", tests);
	json_object_set_new(root, "functions", funcs);
	return jsonout_dump(root, out, 0);
}

int report_render(const struct report *r, enum report_format f, struct strbuf *out)
{
	switch (f) {
	case REPORT_FORMAT_MD:
		return report_markdown(r, out, COMMENT_GITHUB_LIMIT);
	case REPORT_FORMAT_HTML:
		return report_html(r, out);
	case REPORT_FORMAT_SVG:
		return report_svg(r, out);
	case REPORT_FORMAT_JSON:
		return report_json(r, out);
	}
	return cp_error("unknown report format");
}
