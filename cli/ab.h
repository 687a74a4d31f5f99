/* What `ciprof ab` and `ciprof report --ab ID` share: the rounds of a comparison (both sides'
 * profiles, merged, and the paired statistics) and their rendering as a report. */
#ifndef CP_CLI_AB_H
#define CP_CLI_AB_H

#include "model/profile.h"
#include "model/runmeta.h"
#include "common/strbuf.h"
#include "report/paired.h"
#include "report/report.h"

#include <stddef.h>
#include <stdint.h>

struct ab_sides {
	struct paired *pa;         /* owned */
	struct profile *merged[2]; /* base, head: every round merged (owned) */
	int64_t *ids[2];           /* stored run ids per round (0 when not stored) */
	size_t n;                  /* complete rounds */
	double dispersion_sum;     /* the runs' sample dispersions, summed (2 a round) */
	size_t alloc[2];
};

void ab_sides_init(struct ab_sides *s);
void ab_sides_release(struct ab_sides *s);
/* Adds one complete round; the profiles are consumed (merged, then freed). */
void ab_sides_add(struct ab_sides *s, struct profile *base, struct profile *head, int64_t base_id,
                  int64_t head_id);

/* Adds src's samples and figures to dst (profile_stats_add; the period stays the first
 * run's: one comparison samples at one rate). */
void ab_profile_add(struct profile *dst, const struct profile *src);

/*
 * cmd split into words when a plain word list does it: spaces, '...' and "..." without $, `
 * or \ inside; NULL when the shell is needed (operators, expansions, globs, an assignment
 * first) or cmd is empty. Owned (ab_argv_free).
 */
char **ab_split_command(const char *cmd);
void ab_argv_free(char **argv);

/*
 * Judges the rounds (each look at alpha / the looks planned for info->max_rounds), fills
 * info->undecided and info->looks, and appends the report in format f to out; *verdict gets
 * its verdict. base and head: each side's metadata (commit, branch). 0, or -1 with cp_error
 * set.
 */
int ab_render(const struct ab_sides *s, const struct run_meta *base, const struct run_meta *head,
              struct report_ab *info, const struct report_options *o, enum report_format f,
              struct strbuf *out, enum report_verdict *verdict);

/*
 * ciprof report --ab ID: loads the runs tagged ab=ID, rebuilds the rounds (ab.round, ab.side)
 * and writes the report as ciprof ab did (to output, or stdout when NULL). Returns an exit
 * status: 0, EXIT_REGRESSION (with fail), EXIT_RUNTIME (message printed: no such comparison,
 * a round missing a side, the database failing).
 */
struct store;
int ab_report_stored(struct store *s, const char *id, const struct report_options *o,
                     enum report_format f, const char *output, int fail);

#endif
