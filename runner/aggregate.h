/* Samples are counted as they arrive, keyed by (test, raw stack), where a raw stack is a path
 * in a trie of raw frames (object, offset, is-return) under a root frame naming the process.
 * Memory grows with distinct stacks, not with samples, so hour-long suites stay bounded.
 * After the run, each distinct raw frame is symbolized once and the trie is rebuilt as the
 * profile's symbolic trie (distinct raw frames of one function merge there). */
#ifndef CP_AGGREGATE_H
#define CP_AGGREGATE_H

#include "common/hashidx.h"
#include "model/profile.h"
#include "runner/attribution/proctree.h"

#include <stddef.h>
#include <stdint.h>

struct symbolizer;
struct attrib;
struct attrib_rules;

struct raw_frame {
	uint32_t dso;       /* proctree dso index, or RAW_PROCESS for a root frame */
	uint32_t is_return; /* a caller frame: the address is a return address */
	uint64_t offset;    /* see proctree_resolve; for RAW_PROCESS, the name's string id */
};

#define RAW_PROCESS   UINT32_MAX
#define RAW_UNSAMPLED (UINT32_MAX - 1) /* CPU time no sample saw: the "[unsampled]" frame */

struct raw_node {
	uint32_t parent, frame;
};

struct raw_sample {
	uint32_t test, node;
	uint32_t weak; /* the test came from output markers: stack rules outrank it */
	uint64_t count;
};

struct aggregator {
	struct profile *prof; /* borrowed; strings (process and test names) are interned here */
	struct raw_frame *frames;
	size_t nframes, frames_alloc;
	struct hashidx frame_idx;
	struct raw_node *nodes; /* nodes[0] is the root */
	size_t nnodes, nodes_alloc;
	struct hashidx node_idx;
	struct raw_sample *samples;
	size_t nsamples, samples_alloc;
	struct hashidx sample_idx;
	/* Samples of test ATTRIB_PENDING, kept aside (test unused) until aggregator_resolve:
	 * bounded by the distinct stacks of one test. */
	struct raw_sample *pend;
	size_t npend, pend_alloc;
	struct hashidx pend_idx;
	uint64_t total;
	/* Set by aggregator_symbolize, in processes where a stack rule named the tests of some
	 * samples: the samples of no test whose stack ends inside the C runtime short of an
	 * entry point (unwind_warn_libc_cut), and those stacks' outermost functions, most first;
	 * the samples of no test on threads (their stacks begin at start_thread or clone:
	 * aggregator_warn_threads), and the functions those threads run. */
	uint64_t libc_cut, thread_lost;
	char libc_cut_where[256], thread_lost_where[256];
};

void aggregator_init(struct aggregator *a, struct profile *prof);
void aggregator_release(struct aggregator *a);

/*
 * Counts one sample of test (a string id of a->prof; weak when from output markers) in process
 * `process` (string id): frames[0..n) leaf first, each (dso, offset); all but frames[0] are return
 * addresses.
 */
void aggregator_add(struct aggregator *a, uint32_t test, int weak, uint32_t process,
                    const uint32_t *dsos, const uint64_t *offsets, size_t n, uint64_t count);

/* count samples of "[unsampled]" time (cputime.h) of test in process `process` (string id). */
void aggregator_add_unsampled(struct aggregator *a, uint32_t test, int weak, uint32_t process,
                              uint64_t count);

/* The samples kept aside as ATTRIB_PENDING belong to test (0: none): counted there now. */
void aggregator_resolve(struct aggregator *a, uint32_t test);
/*
 * The samples counted under test ids first, first - 1, ..., first - (n - 1) (attribution's
 * stand-ins, ATTRIB_UNNAMED_FIRST) are test to[0], to[1], ... (0: none): relabelled now,
 * before aggregator_symbolize, which takes every id for a string of a->prof.
 */
void aggregator_relabel(struct aggregator *a, uint32_t first, const uint32_t *to, size_t n);
/* After aggregator_symbolize: one warning when LOST_TEST_WARN_SHARE or more of the samples (20
 * or more) lost their test because they ran on a thread a test started (a->thread_lost). */
void aggregator_warn_threads(const struct aggregator *a);
/* Lets attribution resolve pending samples in this aggregator (attrib.resolve). */
void aggregator_attach(struct aggregator *agg, struct attrib *attrib);

/*
 * Symbolizes every distinct raw frame once and adds all samples to a->prof (pending ones as
 * no test's). A sample's test is
 * its strong test (marks, CTest) if any, else the test the stack rules find on its stack, else
 * its weak test (output markers), else "" (rules may be NULL).
 */
void aggregator_symbolize(struct aggregator *a, const struct proctree *t, struct symbolizer *s,
                          const struct attrib_rules *rules);

#endif
