/* runner_run: picks the backend and returns the symbolized profile of the command. */
#include "runner/runner.h"
#include "common/error.h"
#include "runner/perf.h"

void runner_opts_init(struct runner_opts *o)
{
	o->argv = 0;
	o->hz = RUNNER_HZ_DEFAULT;
	o->backend = RUNNER_BACKEND_AUTO;
	o->unwind = RUNNER_UNWIND_FP;
	o->ring_pages = 0;
	o->rules = 0;
	o->pty = 0;
}

int runner_run(struct profile **out, const struct runner_opts *opts)
{
	*out = 0;
	if (!opts->argv || !opts->argv[0])
		return cp_error("no command to run");
	if (opts->hz < RUNNER_HZ_MIN || opts->hz > RUNNER_HZ_MAX)
		return cp_error("sampling rate %d Hz is outside %d..%d", opts->hz, RUNNER_HZ_MIN,
		                RUNNER_HZ_MAX);
	if (opts->backend == RUNNER_BACKEND_PRELOAD)
		return cp_error("the preload backend is not built yet");
	if (opts->unwind == RUNNER_UNWIND_DWARF)
		return cp_error("--unwind dwarf is not built yet");
	/* auto: perf is the only backend so far; its refusal is diagnosed, not worked around. */
	return perf_backend_run(out, opts);
}
