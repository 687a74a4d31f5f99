/* The rounds of an A/B comparison and their report: shared by ciprof ab (which runs them) and
 * ciprof report --ab (which loads them from the store). */
#include "cli/ab.h"
#include "model/rename.h"
#include "cli/cli.h"
#include "common/error.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "report/baseline.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ab_sides_init(struct ab_sides *s)
{
	memset(s, 0, sizeof(*s));
	s->pa = paired_new();
	s->merged[0] = profile_new();
	s->merged[1] = profile_new();
}

void ab_sides_release(struct ab_sides *s)
{
	paired_free(s->pa);
	profile_free(s->merged[0]);
	profile_free(s->merged[1]);
	free(s->ids[0]);
	free(s->ids[1]);
	memset(s, 0, sizeof(*s));
}

void ab_profile_add(struct profile *dst, const struct profile *src)
{
	profile_merge(dst, src);
	/* The one merge rule for the figures: runs of one rate keep its period. */
	profile_stats_add(&dst->stats, &src->stats);
}

char **ab_split_command(const char *cmd)
{
	size_t n = 0, alloc = 0;
	char **argv = NULL;
	struct strbuf w = STRBUF_INIT;
	const char *s = cmd;
	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		strbuf_reset(&w);
		int first = n == 0, any = 0;
		while (*s && *s != ' ' && *s != '\t') {
			char c = *s;
			if (c == '\'') {
				const char *end = strchr(s + 1, '\'');
				if (!end)
					goto shell;
				strbuf_add(&w, s + 1, (size_t)(end - s - 1));
				s = end + 1;
			} else if (c == '"') {
				const char *end = strchr(s + 1, '"');
				if (!end || memchr(s + 1, '$', (size_t)(end - s - 1)) ||
				    memchr(s + 1, '`', (size_t)(end - s - 1)) ||
				    memchr(s + 1, '\\', (size_t)(end - s - 1)))
					goto shell;
				strbuf_add(&w, s + 1, (size_t)(end - s - 1));
				s = end + 1;
			} else if (strchr("|&;<>()$`\\*?[]{}#~!\n\r", c) || (first && c == '=')) {
				goto shell;
			} else {
				strbuf_addch(&w, c);
				s++;
			}
			any = 1;
		}
		if (!any)
			continue;
		ALLOC_GROW(argv, n + 2, alloc);
		argv[n++] = xstrdup(w.buf);
		argv[n] = NULL;
	}
	strbuf_release(&w);
	if (!n) {
		free(argv);
		return NULL;
	}
	return argv;
shell:
	strbuf_release(&w);
	ab_argv_free(argv);
	return NULL;
}

void ab_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

void ab_sides_add(struct ab_sides *s, struct profile *base, struct profile *head, int64_t base_id,
                  int64_t head_id)
{
	/* A program renamed between base and head is paired under the base's names, as
	 * report_diff_new compares the merged sides. */
	struct profile *renamed = profile_rename_modules(head, base, NULL);
	paired_add_round(s->pa, base, renamed ? renamed : head);
	profile_free(renamed);
	ALLOC_GROW(s->ids[0], s->n + 1, s->alloc[0]);
	ALLOC_GROW(s->ids[1], s->n + 1, s->alloc[1]);
	s->ids[0][s->n] = base_id;
	s->ids[1][s->n] = head_id;
	s->n++;
	struct profile *p[2] = {base, head};
	for (int k = 0; k < 2; k++) {
		s->dispersion_sum += p[k]->stats.dispersion > 1 ? p[k]->stats.dispersion : 1;
		ab_profile_add(s->merged[k], p[k]);
		profile_free(p[k]);
	}
}

int ab_render(const struct ab_sides *s, const struct run_meta *base, const struct run_meta *head,
              struct report_ab *info, const struct report_options *o, enum report_format f,
              struct strbuf *out, enum report_verdict *verdict)
{
	struct paired_judgement j;
	info->looks = paired_planned_looks(info->max_rounds);
	info->dispersion = s->n ? s->dispersion_sum / (double)(2 * s->n) : 1;
	paired_judge(s->pa, o, info->max_rounds, 1, &j);
	info->undecided = j.nundecided;
	struct report_diff *d;
	report_diff_new(&d, s->merged[0], 1, NULL, 0, s->merged[1], o);
	paired_apply(d, &j);
	d->ab = info;
	*verdict = d->verdict;

	/* The "baseline" is the base side's runs. */
	struct report_baseline b;
	report_baseline_init(&b);
	b.n = s->n;
	b.ids = xcalloc(s->n ? s->n : 1, sizeof(*b.ids));
	memcpy(b.ids, s->ids[0], s->n * sizeof(*b.ids));
	free(b.commit);
	b.commit = xstrdup(base->commit);
	free(b.rule);
	b.rule = xasprintf("A/B comparison %s: %zu base runs alternating with %zu head runs",
	                   info->id, s->n, s->n);
	struct run_meta h = *head;
	h.id = s->n ? s->ids[1][s->n - 1] : 0;
	struct report r = {.head = &h, .base = &b, .diff = d};
	int ret = report_render(&r, f, out);
	report_baseline_release(&b);
	report_diff_free(d);
	paired_judgement_release(&j);
	return ret;
}

/* The runs of comparison id: per round (1-based, dense), the index into runs of each side. */
static int find_rounds(struct run_meta *runs, size_t n, const char *id, size_t **idx,
                       size_t *nrounds)
{
	size_t max = 0;
	for (size_t i = 0; i < n; i++) {
		const char *t = run_meta_tag(&runs[i], "ab"),
		           *r = run_meta_tag(&runs[i], "ab.round");
		if (t && r && !strcmp(t, id)) {
			long v = atol(r);
			if (v > 0 && (size_t)v > max && v < 100000)
				max = (size_t)v;
		}
	}
	*nrounds = max;
	*idx = xcalloc(2 * (max ? max : 1), sizeof(size_t));
	for (size_t i = 0; i < 2 * max; i++)
		(*idx)[i] = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		const char *t = run_meta_tag(&runs[i], "ab"),
		           *r = run_meta_tag(&runs[i], "ab.round"),
		           *side = run_meta_tag(&runs[i], "ab.side");
		if (!t || !r || !side || strcmp(t, id))
			continue;
		long v = atol(r);
		int k = !strcmp(side, "head") ? 1 : !strcmp(side, "base") ? 0 : -1;
		if (v < 1 || (size_t)v > max || k < 0)
			continue;
		(*idx)[2 * (size_t)(v - 1) + (size_t)k] = i;
	}
	if (!max)
		return cp_error("no A/B comparison '%s' in the database; its runs carry the tag "
		                "ab=ID ('ciprof runs' shows tags)",
		                id);
	for (size_t r = 0; r < max; r++)
		if ((*idx)[2 * r] == SIZE_MAX || (*idx)[2 * r + 1] == SIZE_MAX)
			return cp_error("A/B comparison '%s' lacks a side of round %zu", id, r + 1);
	return 0;
}

int ab_report_stored(struct store *s, const char *id, const struct report_options *o,
                     enum report_format f, const char *output, int fail)
{
	struct run_meta *runs = NULL;
	size_t n = 0, nrounds = 0, *idx = NULL;
	struct ab_sides sides;
	ab_sides_init(&sides);
	struct strbuf doc = STRBUF_INIT;
	int status = EXIT_RUNTIME;
	if (store_list_runs(s, NULL, 0, &runs, &n) < 0 ||
	    find_rounds(runs, n, id, &idx, &nrounds) < 0) {
		log_errmsg("%s", cp_last_error());
		goto out;
	}
	double seconds = 0;
	for (size_t r = 0; r < nrounds; r++) {
		struct profile *p[2] = {NULL, NULL};
		for (int k = 0; k < 2; k++) {
			const struct run_meta *m = &runs[idx[2 * r + (size_t)k]];
			seconds += m->stats.wall_seconds;
			if (store_load_profile(s, m->id, NULL, &p[k]) < 0) {
				log_errmsg("%s", cp_last_error());
				profile_free(p[0]);
				goto out;
			}
			p[k]->stats.dispersion = run_meta_dispersion(m);
		}
		ab_sides_add(&sides, p[0], p[1], runs[idx[2 * r]].id, runs[idx[2 * r + 1]].id);
	}
	const struct run_meta *last_head = &runs[idx[2 * (nrounds - 1) + 1]];
	const char *mr = run_meta_tag(last_head, "ab.max_rounds"),
	           *ev = run_meta_tag(last_head, "ab.event"),
	           *secs = run_meta_tag(last_head, "ab.seconds");
	if (secs && atof(secs) > 0)
		seconds =
		        atof(secs); /* the comparison's time until its last round, not the runs' */
	long max_rounds = mr ? atol(mr) : 0;
	struct report_ab info = {
	        .id = id,
	        .rounds = nrounds,
	        .max_rounds = max_rounds >= (long)nrounds ? (size_t)max_rounds : nrounds,
	        .seconds = seconds,
	        .stopped = "stored",
	        .event = ev ? ev : "cpu-clock",
	};
	enum report_verdict verdict;
	if (ab_render(&sides, &runs[idx[2 * (nrounds - 1)]], last_head, &info, o, f, &doc,
	              &verdict) < 0) {
		log_errmsg("%s", cp_last_error());
		goto out;
	}
	log_info("report: A/B comparison %s: %s after %zu rounds; %zu undecided", id,
	         report_verdict_name(verdict), nrounds, info.undecided);
	status = cli_write_output(output, &doc);
	if (!status && fail && verdict == REPORT_REGRESSED)
		status = EXIT_REGRESSION;
out:
	strbuf_release(&doc);
	ab_sides_release(&sides);
	free(idx);
	store_runs_free(runs, n);
	return status;
}
