/* export/pprof: ciprof profiles as pprof (gzip'd profile.proto, export/profile.proto) and pprof
 * files from Go, Rust or C++ profilers read back as ciprof profiles. */
#ifndef CP_EXPORT_PPROF_H
#define CP_EXPORT_PPROF_H

#include "model/profile.h"
#include "common/strbuf.h"

#include <stddef.h>
#include <stdint.h>

/* The comment marking a file whose stacks start at a process frame (ciprof's own export). */
#define PPROF_PROCESS_COMMENT "ciprof: the root frame of every stack is the process"

/* Label key carrying each sample's test; the name of samples outside any test. */
#define PPROF_TEST_LABEL    "test"
#define PPROF_OUTSIDE_TESTS "(outside tests)"

struct pprof_info {
	int64_t time_nanos;     /* when the run started (unix ns), 0 unknown */
	int64_t duration_nanos; /* its wall time, 0 unknown */
};

/*
 * Appends p, encoded as a gzip'd pprof profile, to out. Sample types samples/count and
 * cpu/nanoseconds (count times p->stats.period_ns), period cpu/nanoseconds; one location per
 * frame, one function per (name, file), one mapping per module; each sample has a "test"
 * label. test_filter (NULL: all) keeps one test's samples. Returns 0, or -1 with cp_error set.
 */
int pprof_write(const struct profile *p, const struct pprof_info *info, const char *test_filter,
                struct strbuf *out);

/*
 * Adds the samples of a pprof file (gzip'd or not) to p. name is used in errors ("NAME: byte
 * N: ..." or "NAME: sample N: ..."). Counts come from the samples/count value when present,
 * else from the first value divided by the period. Each sample's "test" label is its test,
 * unless test is non-NULL (all samples go to that test then). Stacks get a process frame:
 * ciprof's own files carry it, others get the main (first) mapping's file name, else
 * default_process. Sets p->stats.period_ns (cpu period in ns), samples and cpu_seconds; *info
 * (may be NULL) gets time and duration. Returns 0, or -1 with cp_error set.
 */
int pprof_read(struct profile *p, const void *data, size_t len, const char *name, const char *test,
               const char *default_process, struct pprof_info *info);

#endif
