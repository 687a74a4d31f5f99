/* The rounds of an A/B comparison and their report: shared by ciprof ab (which runs them) and
 * ciprof report --ab (which loads them from the store). */
#include "cli/ab.h"
#include "common/xalloc.h"
#include "report/baseline.h"

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

/* Adds src's stats to dst's (profile_merge merges samples only). */
static void add_stats(struct profile_stats *dst, const struct profile_stats *src)
{
	dst->processes += src->processes;
	dst->threads += src->threads;
	dst->samples += src->samples;
	dst->lost += src->lost;
	dst->cpu_seconds += src->cpu_seconds;
	dst->wall_seconds += src->wall_seconds;
	if (!dst->hz)
		dst->hz = src->hz;
	if (!dst->period_ns)
		dst->period_ns = src->period_ns;
}

void ab_profile_add(struct profile *dst, const struct profile *src)
{
	profile_merge(dst, src);
	add_stats(&dst->stats, &src->stats);
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
	paired_add_round(s->pa, base, head);
	ALLOC_GROW(s->ids[0], s->n + 1, s->alloc[0]);
	ALLOC_GROW(s->ids[1], s->n + 1, s->alloc[1]);
	s->ids[0][s->n] = base_id;
	s->ids[1][s->n] = head_id;
	s->n++;
	struct profile *p[2] = {base, head};
	for (int k = 0; k < 2; k++) {
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
	paired_judge(s->pa, o, info->looks, &j);
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
	struct report r = {&h, &b, d};
	int ret = report_render(&r, f, out);
	report_baseline_release(&b);
	report_diff_free(d);
	paired_judgement_release(&j);
	return ret;
}
