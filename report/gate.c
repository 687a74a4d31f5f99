/* The gate behind --fail-on-regression, one rule for ciprof report: a regression fails a build
 * only when the noise model had history to learn from (and, with fewer than 20 runs, the change
 * stands out from a function's rare jump: report_cmp.gates) and the baseline is the head's own
 * base; a --base that names nothing is an error, never a pass. */
#include "report/report.h"
#include "common/xalloc.h"

#include <math.h>

char *report_advisory(const struct report_baseline *b, const struct report_diff *d)
{
	if (!d)
		return NULL;
	if (d->history_runs < REPORT_MIN_HISTORY)
		return xasprintf("the base branch has %zu run%s to learn run-to-run noise from; "
		                 "verdicts gate the build from %d on",
		                 d->history_runs, d->history_runs == 1 ? "" : "s",
		                 REPORT_MIN_HISTORY);
	if (d->verdict == REPORT_REGRESSED && !d->ngating) {
		/* Numbers only: a name here would reach every output unescaped. */
		double best = 1;
		for (size_t i = 0; i < d->nitems; i++)
			if (d->items[i].cmp.kind == REPORT_REGRESSION)
				best = fmin(best, d->items[i].cmp.gate_q);
		return xasprintf("the base branch has %zu runs, fewer than the %d that show how "
		                 "often a function jumps by chance, and no regression here stands "
		                 "out from such a jump (the strongest has q = %.2g on a t(%.0f) "
		                 "tail; the gate needs %g)",
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
