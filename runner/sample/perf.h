/* The perf backend: samples a command's whole process tree with perf_event_open's cpu-clock
 * (or a hardware event), as `perf record -- CMD` does; an event source of the runner
 * (backend.h). */
#ifndef CP_PERF_H
#define CP_PERF_H

#include "model/profile.h"
#include "runner/backend.h"
#include "runner/runner.h"

/* The runner's ops for this backend, and its state for one run of opts (borrowed; owned by
 * the run, which releases it). start returns RUNNER_ERR_REFUSED, diagnosed, when
 * perf_event_open or the ring buffers' mmap is refused. */
extern const struct runner_backend_ops perf_backend_ops;
void *perf_backend_new(const struct runner_opts *opts);

/*
 * The diagnosis of a refused perf_event_open or ring-buffer mmap, as a new string (owned by
 * the caller): what refused it and how to fix it. err is the errno; paranoid is the value of
 * kernel.perf_event_paranoid (-100 when unreadable), seccomp is the Seccomp: field of
 * /proc/self/status (0 none, 1 strict, 2 filter, -1 unknown), in_mmap is nonzero when the
 * ring-buffer mmap failed (the locked-memory budget), mlock_kb is perf_event_mlock_kb, and
 * privileged is nonzero when the process has CAP_PERFMON or CAP_SYS_ADMIN (root).
 */
/* What made the last perf run return RUNNER_ERR_REFUSED (the inputs of perf_diagnose),
 * for a one-line summary when falling back to another backend. */
struct perf_refusal {
	int err, paranoid, seccomp, privileged, in_mmap;
	int killed; /* a seccomp filter kills (SIGSYS) the caller of perf_event_open */
};
void perf_last_refusal(struct perf_refusal *out);

/*
 * Whether a seccomp filter kills (SIGSYS: SECCOMP_RET_KILL_*, SECCOMP_RET_TRAP, systemd's
 * SystemCallFilter=) whoever calls perf_event_open: 1 if so, else 0. Without a filter on this
 * process it answers 0 at once; with one it asks a throwaway child, so that ciprof does not
 * die of its own probe.
 */
int perf_syscall_kills(void);

char *perf_diagnose(int err, int paranoid, int seccomp, int privileged, int in_mmap, long mlock_kb,
                    size_t ring_bytes);

#endif
