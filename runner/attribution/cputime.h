/* Exact CPU time per task, beyond what sampling saw. A task's sampling timer starts a full
 * period after it starts, so a process shorter than the period is never sampled, and every
 * task's last partial period is lost. The kernel counts each task's own cpu-clock time and
 * reports it when the task exits (perf's inherit_stat: one PERF_RECORD_READ per CPU event);
 * what the samples did not cover is counted under the task's process as an "[unsampled]"
 * frame, in the tests the task's samples were in (in proportion), or the test it was in when
 * it exited. The one task whose count comes in no READ is the one holding the command's own
 * perf context when it exits: the command itself, or a process of the run the kernel handed
 * that context to at a context switch (it swaps equivalent contexts rather than switching
 * events). Memory is bounded by the live tasks. */
#ifndef CP_CPUTIME_H
#define CP_CPUTIME_H

#include "common/hashidx.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct aggregator;

/* Sampled time of one task in one test. */
struct cpu_share {
	uint32_t test, weak;
	uint64_t ns;
};

struct cpu_task {
	pid_t pid, tid;
	uint64_t exact_ns;  /* sum of its READ values so far */
	unsigned reads;     /* READ records seen: one per CPU event */
	uint32_t exit_test; /* its test when it exited (EXIT record) */
	uint32_t exit_weak;
	int exited;       /* its EXIT record was seen */
	uint32_t process; /* string id of its process's name */
	struct cpu_share *shares;
	size_t nshares, shares_alloc;
};

/* Unsampled nanoseconds waiting to make a whole sample, per (test, weak, process). */
struct cpu_rest {
	uint32_t test, weak, process;
	uint64_t ns;
};

struct cputime {
	struct aggregator *agg; /* borrowed: the unsampled time is counted there */
	uint64_t period_ns;
	unsigned reads_per_task; /* CPU events per task: its READs come one per event */
	struct cpu_task *tasks;
	size_t ntasks, tasks_alloc;
	struct hashidx task_idx; /* rebuilt when finished tasks are dropped */
	size_t nfinished;
	struct cpu_rest *rest;
	size_t nrest, rest_alloc;
	uint64_t read_ns;      /* sum of all READ values (every task but the command's own) */
	uint64_t sampled_ns;   /* sum of all sample periods */
	uint64_t unsampled_ns; /* counted as [unsampled] */
};

void cputime_init(struct cputime *c, struct aggregator *agg, uint64_t period_ns,
                  unsigned reads_per_task);
void cputime_release(struct cputime *c);

/* A sample of period ns of task tid of process pid (name: string id), in test. */
void cputime_sample(struct cputime *c, pid_t pid, pid_t tid, uint32_t test, int weak,
                    uint32_t process, uint64_t period);
/* Task tid exited, in test (its process's name: string id). */
void cputime_exit(struct cputime *c, pid_t pid, pid_t tid, uint32_t test, int weak,
                  uint32_t process);
/* A READ record: task tid's own count on one CPU event. After the last one of the task, its
 * unsampled time is counted. */
void cputime_read(struct cputime *c, pid_t pid, pid_t tid, uint64_t value);
/*
 * The run ended; total_ns is the whole tree's count (the events' own values, children
 * included). total_ns minus every READ is the count of the task that held the command's own
 * context: the command (root) when it had no READ; else the one task that exited without
 * any (the command's READs were then those of a child's context it got in exchange). When
 * that is not one task (READs lost, tasks still running), it is not guessed: the command
 * gets it if it had no READ, else it is not counted. Tasks still missing READs count what
 * they have; the rests are rounded to samples.
 */
void cputime_finish(struct cputime *c, pid_t root, uint64_t total_ns);

#endif
