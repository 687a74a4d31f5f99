/* runner_run: picks the backend and returns the symbolized profile of the command. */
#include "runner/runner.h"
#include "common/config.h"
#include "common/error.h"
#include "common/xalloc.h"
#include "runner/ctest.h"
#include "runner/launch.h"
#include "runner/perf.h"
#include "runner/preload_backend.h"

#include <stdlib.h>
#include <string.h>

void runner_opts_init(struct runner_opts *o)
{
	o->argv = 0;
	o->hz = (int)strtol(config_key_info(CONFIG_RUN_HZ)->def, NULL, 10);
	o->backend = RUNNER_BACKEND_AUTO;
	o->unwind = RUNNER_UNWIND_FP;
	o->stack_size = RUNNER_STACK_SIZE_DEFAULT;
	o->ring_pages = 0;
	o->rules = 0;
	o->pty = 0;
	o->event = RUNNER_EVENT_CPU_CLOCK;
}

const char *runner_event_name(enum runner_event e)
{
	return e == RUNNER_EVENT_INSTRUCTIONS ? "instructions"
	       : e == RUNNER_EVENT_CYCLES     ? "cycles"
	                                      : "cpu-clock";
}

int runner_run(struct profile **out, const struct runner_opts *opts)
{
	*out = 0;
	if (!opts->argv || !opts->argv[0])
		return cp_error("no command to run");
	const struct config_key_info *hz = config_key_info(CONFIG_RUN_HZ);
	if (opts->hz < hz->min || opts->hz > hz->max)
		return cp_error("sampling rate %d Hz is outside %g..%g", opts->hz, hz->min, hz->max);
	if (opts->unwind == RUNNER_UNWIND_DWARF &&
	    (opts->stack_size < 8 || opts->stack_size > RUNNER_STACK_SIZE_MAX ||
	     opts->stack_size % 8))
		return cp_error("stack size %zu is not a multiple of 8 from 8 to %d",
		                opts->stack_size, RUNNER_STACK_SIZE_MAX);
	if (opts->event != RUNNER_EVENT_CPU_CLOCK && opts->backend == RUNNER_BACKEND_PRELOAD)
		return cp_error("the preload backend samples CPU time only: --event %s needs the "
		                "perf backend",
		                runner_event_name(opts->event));
	if (opts->backend == RUNNER_BACKEND_PRELOAD)
		return preload_backend_run(out, opts);
	int r = perf_backend_run(out, opts);
	/* A hardware event has no stand-in in the preload backend: no fallback. */
	if (r != RUNNER_ERR_REFUSED || opts->backend != RUNNER_BACKEND_AUTO ||
	    opts->event != RUNNER_EVENT_CPU_CLOCK)
		return r;
	/* auto: perf_event_open refused (containers, paranoid kernels): the LD_PRELOAD
	 * sampler instead, which walks frame pointers only. */
	struct runner_opts fallback = *opts;
	fallback.unwind = RUNNER_UNWIND_FP;
	preload_announce_fallback(opts->unwind == RUNNER_UNWIND_DWARF);
	return preload_backend_run(out, &fallback);
}

size_t runner_ctest_tests(char **argv, char ***names)
{
	*names = NULL;
	if (!argv || !argv[0] || strcmp(launch_basename(argv[0]), "ctest"))
		return 0;
	struct profile *p = profile_new();
	struct attrib a;
	struct ctest_watch w;
	attrib_init(&a, p);
	ctest_watch_init(&w, &a);
	ctest_watch_command(&w, argv);
	ctest_watch_release(&w);
	size_t n = a.nctest;
	if (n) {
		*names = xcalloc(n, sizeof(char *));
		for (size_t i = 0; i < n; i++)
			(*names)[i] = xstrdup(a.ctest[i].name);
	}
	attrib_release(&a);
	profile_free(p);
	return n;
}
