/* The gate behind --fail-on-regression, one rule for ciprof report: a regression fails a build
 * only when the noise model had history to learn from (and, with fewer than 20 runs, the change
 * stands out from a function's rare jump: report_cmp.gates), the head run did not share its
 * machine with more work than its history did, and the baseline is the head's own base; a
 * --base that names nothing is an error, never a pass. */
#include "report/report.h"
#include "common/xalloc.h"
#include "report/stats.h"

#include <math.h>
#include <stdlib.h>

/* The CPUs other processes kept busy during b's median history run that measured them (NAN:
 * none did), and their robust spread over those runs. */
static void history_load(const struct report_baseline *b, double *median, double *spread)
{
	double *v = xmalloc(st_mult(b->nruns ? b->nruns : 1, sizeof(*v)));
	size_t n = 0;
	for (size_t i = 0; b->other_cpus && i < b->nruns; i++)
		if (isfinite(b->other_cpus[i]))
			v[n++] = b->other_cpus[i];
	*median = n ? stats_median(v, n) : NAN;
	/* Their robust spread: a machine whose neighbours come and go (a container on a shared
	 * host sees the host's every job) moves the bar up by three of it. */
	for (size_t i = 0; i < n; i++)
		v[i] = fabs(v[i] - *median);
	*spread = n >= 2 ? 1.4826 * stats_median(v, n) : 0;
	free(v);
}

void report_note_load(struct report_diff *d, const struct run_meta *head,
                      const struct report_baseline *b)
{
	d->head_other_cpus = run_meta_other_cpus(head);
	d->head_exit = head->stats.exit_status;
	free(d->head_incomplete);
	d->head_incomplete = run_meta_incomplete(head);
	history_load(b, &d->history_other_cpus, &d->history_other_spread);
}

/* Whether the head's other CPUs are beyond the history's median (none measured: none) by
 * REPORT_BUSY_CPUS, or by three times the history's own spread if more. */
static int over_history(double head, double history, double spread)
{
	return isfinite(head) &&
	       head > (isfinite(history) ? history : 0) + fmax(REPORT_BUSY_CPUS, 3 * spread);
}

static int busy_head(const struct report_diff *d)
{
	return over_history(d->head_other_cpus, d->history_other_cpus, d->history_other_spread);
}

int report_head_busy(const struct run_meta *head, const struct report_baseline *b)
{
	double median, spread;
	history_load(b, &median, &spread);
	return over_history(run_meta_other_cpus(head), median, spread);
}

int report_head_quiet(const struct run_meta *head)
{
	double o = run_meta_other_cpus(head);
	return isfinite(o) && o < REPORT_QUIET_CPUS;
}

char *report_advisory(const struct report_baseline *b, const struct report_diff *d)
{
	if (!d)
		return NULL;
	/* Numbers only, as below: the command's text would reach every output. */
	if (d->head_exit)
		return xasprintf(
		        "the head run's command exited with status %d: a failed, crashed or "
		        "interrupted suite measures only a part of itself",
		        d->head_exit);
	if (d->head_incomplete)
		return xasprintf("the head run is incomplete (%s), so it lacks the tests and "
		                 "functions that ran unseen; run the job again",
		                 d->head_incomplete);
	if (b->command_differs)
		return xstrdup("no base run ran the head run's command: another suite, or the same "
		               "one with other options, is not the same measure");
	if (d->history_runs < REPORT_MIN_HISTORY)
		return xasprintf("the base branch has %zu run%s to learn run-to-run noise from; "
		                 "verdicts gate the build from %d on",
		                 d->history_runs, d->history_runs == 1 ? "" : "s",
		                 REPORT_MIN_HISTORY);
	if (d->verdict == REPORT_REGRESSED && busy_head(d))
		/* Numbers only, as below. */
		return xasprintf(
		        "other processes kept %.2f CPUs busy while the head run ran, "
		        "against %.2f during the median run of the base branch: a neighbour slows "
		        "functions unevenly, so rerun the job, or compare both commits on one "
		        "machine with ciprof ab",
		        d->head_other_cpus,
		        isfinite(d->history_other_cpus) ? d->history_other_cpus : 0.0);
	if (d->verdict == REPORT_REGRESSED && !d->ngating) {
		/* Numbers only: a name here would reach every output unescaped. */
		double best = 1;
		for (size_t i = 0; i < d->nitems; i++)
			if (d->items[i].cmp.kind == REPORT_REGRESSION)
				best = fmin(best, d->items[i].cmp.gate_q);
		if (best <= d->opts.alpha && d->confirm_runs > 1)
			return xasprintf(
			        "the base branch has %zu runs, fewer than the %d that show "
			        "how often a function jumps by chance: a regression fails "
			        "the build then only if each of the %zu runs of this commit "
			        "fails it, and none here does",
			        d->history_runs, STATS_TAIL_SCALE_MIN_RUNS, d->confirm_runs);
		return xasprintf("the base branch has %zu runs, fewer than the %d that show how "
		                 "often a function jumps by chance, and no regression here stands "
		                 "out from such a jump (the strongest has q = %.2g on a t(%.0f) "
		                 "tail; the gate needs %g; the q shown with each finding is on the "
		                 "tail these runs fitted)",
		                 d->history_runs, STATS_TAIL_SCALE_MIN_RUNS, best,
		                 STATS_SHORT_MAX_DOF, d->opts.alpha);
	}
	if (b->fallback)
		return xstrdup("no base run at the merge-base: the baseline is older runs of the "
		               "base branch, which lack its latest changes");
	return NULL;
}

enum report_gate report_gate(const struct report_baseline *b, const struct report_diff *d,
                             const char *advisory, int fail_on_regression)
{
	if (!fail_on_regression)
		return REPORT_GATE_PASS;
	if (b->unknown)
		return REPORT_GATE_UNKNOWN_BASE;
	if (d && d->verdict == REPORT_REGRESSED && !advisory)
		return REPORT_GATE_FAIL;
	return REPORT_GATE_PASS;
}
