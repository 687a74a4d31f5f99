/* A synthetic but realistic test-suite workload for the store's benchmarks and the CLI's
 * integration test: a few hundred functions with C and C++-style names over a handful of
 * modules, a call graph, and a few thousand stacks of depth 10-40 spread over tests, with
 * heavy-tailed weights. Each run re-samples counts with noise and replaces a fraction of the
 * stacks (code changes), like consecutive CI runs of one project. */
#ifndef CP_BENCH_SYNTH_H
#define CP_BENCH_SYNTH_H

#include "model/profile.h"

#include <stdint.h>

struct synth;

/* nstacks distinct stacks over nfuncs functions and ntests tests (plus "" outside tests). */
struct synth *synth_new(uint64_t seed, int nstacks, int nfuncs, int ntests);
void synth_free(struct synth *s);
/* The next run: replaces about churn * nstacks stacks, then draws about total_samples
 * samples. The profile is owned by the caller (profile_free). */
struct profile *synth_next(struct synth *s, double churn, uint64_t total_samples);
/* The function every workload spends most self time in (for tests). */
#define SYNTH_HOT_FUNCTION "checksum_block"

#endif
