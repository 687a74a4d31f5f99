/* The runner: launches a command, samples its whole process tree, and returns the
 * symbolized profile. This is the only header cli/ needs from runner/. */
#ifndef CP_RUNNER_H
#define CP_RUNNER_H

#include "config/config.h"
#include "model/profile.h"
#include "runner/attribution/attribute.h"

#include <stddef.h>

enum runner_backend { RUNNER_BACKEND_AUTO, RUNNER_BACKEND_PERF, RUNNER_BACKEND_PRELOAD };
/* fp: the kernel's frame-pointer walk, with the leaf's caller recovered from a small stack
 * copy and the leaf's CFI; fp-only: the kernel's walk alone; dwarf: the whole stack from a
 * copy and the objects' CFI. */
enum runner_unwind { RUNNER_UNWIND_FP, RUNNER_UNWIND_DWARF, RUNNER_UNWIND_FP_ONLY };
/* What a sample counts. cpu-clock: CPU time (the software event every kernel has; a sample
 * every 1/hz s). instructions, cycles: the hardware PMU's retired instructions or CPU cycles
 * (a sample every 10^9/hz of them), which neighbours and frequency do not move; only where a
 * PMU is exposed (bare metal, some VMs), and only with the perf backend. */
enum runner_event { RUNNER_EVENT_CPU_CLOCK, RUNNER_EVENT_INSTRUCTIONS, RUNNER_EVENT_CYCLES };

/* The sampling rate's range and default are run.hz's, in the config key table (config.c). */

/* --unwind dwarf: bytes of user stack copied per sample (perf's sample_stack_user). */
#define RUNNER_STACK_SIZE_DEFAULT 8192
#define RUNNER_STACK_SIZE_MAX     65528
/* --unwind fp: bytes of user stack copied per sample to find a frameless leaf's caller. */
#define RUNNER_LEAF_STACK_SIZE 512

struct runner_opts {
	char **argv; /* borrowed; the command, NULL-terminated */
	int hz;      /* samples per second of CPU time, per thread */
	enum runner_backend backend;
	enum runner_unwind unwind;
	size_t stack_size; /* --unwind dwarf: stack bytes copied per sample, a multiple of 8 */
	size_t ring_pages; /* data pages per CPU ring buffer (power of two); 0: auto */
	const struct attrib_rules *rules; /* borrowed; stack rules for test attribution, or NULL */
	enum runner_event event;
	int pty; /* child's stdout/stderr on a pseudo-terminal: -1 never, 0 when stdout is a
	          * terminal (default), 1 always; the runner's output markers need it */
	int symbol_cache; /* symbols of objects with a build id kept across runs in
	                   * symcache_default_dir() (default 1; docs/symbolization.md) */
};

void runner_opts_init(struct runner_opts *o);

/* "cpu-clock", "instructions", "cycles". */
const char *runner_event_name(enum runner_event e);

/*
 * Whether perf_event_open accepts event e for this process (a PMU for instructions and cycles):
 * 0, or -1 with cp_error saying why. Tests simulate a PMU with the environment variable
 * CIPROF_TEST_PMU: "absent" refuses the hardware events, "standin" accepts them and has the
 * perf backend sample the software task-clock in their place (docs/ab.md).
 */
int runner_event_probe(enum runner_event e);

/* Outcomes of runner_run besides 0 (cp_error holds the message in each case). */
enum runner_error {
	RUNNER_ERR_FAILED = -1,  /* ciprof itself failed (out of fds, ...) */
	RUNNER_ERR_EXEC = -2,    /* the command could not be executed: exit 127 or 126 */
	RUNNER_ERR_REFUSED = -3, /* perf_event_open refused; the message holds the diagnosis */
};

/* Whether opts puts the command on a pseudo-terminal (its pty setting, and for 0 whether
 * ciprof's own standard output is a terminal). */
int runner_uses_pty(const struct runner_opts *opts);

/*
 * Runs opts->argv under the sampler. On 0 the command ran, *out is a new profile (owned by
 * the caller) and (*out)->stats.exit_status is the status to exit with (128+N for signal N).
 * On RUNNER_ERR_EXEC, *out is still a (nearly empty) profile with exit_status 127 (not
 * found) or 126 (found but not executable: a folder, no permission, not a program).
 * On other errors *out is NULL. SIGINT/SIGTERM received meanwhile are forwarded to the command,
 * and the profile gathered so far is still returned.
 */
int runner_run(struct profile **out, const struct runner_opts *opts);

/*
 * When argv runs ctest: the names of the tests it would run, as `ctest --show-only=json-v1`
 * (argv's own options included) lists them, in its order. *names is an owned array of owned
 * strings (free each, then the array). Returns their number; 0 (and a warning) when argv is not
 * ctest or the listing fails.
 */
size_t runner_ctest_tests(char **argv, char ***names);

#endif
