/* run_meta lifecycle helpers (see runmeta.h). */
#include "model/runmeta.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void run_meta_set(char **field, const char *value)
{
	free(*field);
	*field = xstrdup(value ? value : "");
}

void run_meta_init(struct run_meta *m)
{
	memset(m, 0, sizeof(*m));
	char **fields[] = {&m->commit,     &m->branch,    &m->base_branch,
	                   &m->merge_base, &m->subject,   &m->ci_provider,
	                   &m->job_url,    &m->cpu_model, &m->command};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		*fields[i] = xstrdup("");
}

void run_meta_release(struct run_meta *m)
{
	char *fields[] = {m->commit,      m->branch,  m->base_branch, m->merge_base, m->subject,
	                  m->ci_provider, m->job_url, m->cpu_model,   m->command};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		free(fields[i]);
	for (size_t i = 0; i < m->ntags; i++) {
		free(m->tags[i].key);
		free(m->tags[i].value);
	}
	free(m->tags);
	memset(m, 0, sizeof(*m));
}

const char *run_meta_tag(const struct run_meta *m, const char *key)
{
	for (size_t i = 0; i < m->ntags; i++)
		if (!strcmp(m->tags[i].key, key))
			return m->tags[i].value;
	return NULL;
}

/* Removes tag key from m, if it has it. */
static void drop_tag(struct run_meta *m, const char *key)
{
	for (size_t i = 0; i < m->ntags; i++) {
		if (!strcmp(m->tags[i].key, key)) {
			free(m->tags[i].key);
			free(m->tags[i].value);
			memmove(&m->tags[i], &m->tags[i + 1],
			        (m->ntags - i - 1) * sizeof(*m->tags));
			m->ntags--;
			return;
		}
	}
}

void run_meta_tag_stats(struct run_meta *m, const struct profile_stats *st)
{
	/* A run_meta reused for the next run (ciprof ab's sides) keeps none of the last one's. */
	static const char *const keys[] = {RUN_TAG_OTHER_CPUS, RUN_TAG_UNSEEN, RUN_TAG_DISPERSION,
	                                   RUN_TAG_SILENT};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		drop_tag(m, keys[i]);
	char v[32];
	if (st->others_seconds >= 0 && st->wall_seconds > 0) {
		snprintf(v, sizeof(v), "%.3f", st->others_seconds / st->wall_seconds);
		run_meta_set_tag(m, RUN_TAG_OTHER_CPUS, v);
	}
	if (st->unseen_processes) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)st->unseen_processes);
		run_meta_set_tag(m, RUN_TAG_UNSEEN, v);
	}
	if (st->dispersion > 1.0005) {
		snprintf(v, sizeof(v), "%.3f", st->dispersion);
		run_meta_set_tag(m, RUN_TAG_DISPERSION, v);
	}
	if (st->silent_seconds > 0) {
		snprintf(v, sizeof(v), "%.3f", st->silent_seconds);
		run_meta_set_tag(m, RUN_TAG_SILENT, v);
	}
}

double run_meta_other_cpus(const struct run_meta *m)
{
	const char *v = run_meta_tag(m, RUN_TAG_OTHER_CPUS);
	char *end;
	double x = v && *v ? strtod(v, &end) : NAN;
	return v && *v && !*end && isfinite(x) && x >= 0 ? x : NAN;
}

unsigned long run_meta_unseen(const struct run_meta *m)
{
	const char *v = run_meta_tag(m, RUN_TAG_UNSEEN);
	char *end;
	unsigned long n = v && *v >= '0' && *v <= '9' ? strtoul(v, &end, 10) : 0;
	return n && !*end ? n : 0;
}

double run_meta_dispersion(const struct run_meta *m)
{
	const char *v = run_meta_tag(m, RUN_TAG_DISPERSION);
	char *end;
	double x = v && *v ? strtod(v, &end) : 1;
	return v && *v && !*end && isfinite(x) && x >= 1 ? x : 1;
}

double run_meta_silent(const struct run_meta *m)
{
	const char *v = run_meta_tag(m, RUN_TAG_SILENT);
	char *end;
	double x = v && *v ? strtod(v, &end) : 0;
	return v && *v && !*end && isfinite(x) && x > 0 ? x : 0;
}

int run_meta_is_incomplete(const struct run_meta *m)
{
	return run_meta_unseen(m) || run_meta_silent(m) > 0;
}

char *run_meta_incomplete(const struct run_meta *m)
{
	return run_incomplete_why(run_meta_unseen(m), run_meta_silent(m));
}

char *run_incomplete_why(unsigned long long unseen, double silent)
{
	if (!unseen && !(silent > 0))
		return NULL;
	struct strbuf sb = STRBUF_INIT;
	if (unseen)
		strbuf_addf(&sb, "%llu process%s the kernel did not follow", unseen,
		            unseen == 1 ? "" : "es");
	if (silent > 0)
		strbuf_addf(&sb, "%s%.3f CPU-s counted after a CPU's ring buffer fell silent",
		            unseen ? "; " : "", silent);
	return strbuf_detach(&sb, NULL);
}

void run_meta_set_tag(struct run_meta *m, const char *key, const char *value)
{
	for (size_t i = 0; i < m->ntags; i++) {
		if (!strcmp(m->tags[i].key, key)) {
			run_meta_set(&m->tags[i].value, value);
			return;
		}
	}
	ALLOC_GROW(m->tags, m->ntags + 1, m->tags_alloc);
	m->tags[m->ntags].key = xstrdup(key);
	m->tags[m->ntags].value = xstrdup(value);
	m->ntags++;
}

int run_meta_command_imported(const char *command)
{
	const char *sp = strchr(command, ' ');
	if (!sp)
		return 0;
	const char *base = sp;
	while (base > command && base[-1] != '/')
		base--;
	return (size_t)(sp - base) == 6 && !strncmp(base, "ciprof", 6) &&
	       !strncmp(sp, " import", 7) && (sp[7] == ' ' || !sp[7]);
}
