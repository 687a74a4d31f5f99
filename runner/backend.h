/* What a sampling backend supplies to the runner, and the runner session it supplies it to.
 *
 * runner.c owns the run: the launch (launch.c), the poll loop, the time-ordered event queue
 * (events.h), the process tree, attribution (attribute.c, ctest.c, markers.c), exact CPU time
 * (cputime.c), aggregation, the ELF object cache (objcache.h), symbolization and the run's
 * statistics. A backend (perf.c,
 * preload_backend.c) is an event source: it starts sampling on the corked command, names the
 * fds worth polling, reads what arrived into the queue each round, decodes its own sample
 * records into stacks when the runner processes them, and adds its own warnings. */
#ifndef CP_BACKEND_H
#define CP_BACKEND_H

#include "runner/aggregate.h"
#include "runner/attribution/attribute.h"
#include "runner/attribution/cputime.h"
#include "runner/attribution/ctest.h"
#include "runner/events.h"
#include "runner/objcache.h"
#include "runner/attribution/markers.h"
#include "runner/attribution/proctree.h"
#include "runner/runner.h"
#include "runner/sample/unwind.h"

#include <poll.h>
#include <stdint.h>

/* One run's shared state: the backend reads and adds to it through the functions below. */
struct runner_backend_ops;

struct runner_session {
	const struct runner_opts *opts;
	struct profile *prof;
	struct proctree tree;
	struct aggregator agg;
	struct attrib attrib;
	struct markers markers;
	struct ctest_watch ctest;
	struct cputime cpu; /* exact CPU time, when the backend calls runner_exact_cpu */
	struct evqueue queue;
	struct objcache *objs;   /* the run's ELF objects: the unwinder's, then the symbolizer's */
	uint64_t prev_round_max; /* the newest time read before the current round */
	uint64_t period_ns;      /* 1e9 / hz */
	/* run statistics */
	uint64_t samples;    /* periods sampled (a preload stack may stand for several) */
	uint64_t stacks;     /* sample events */
	uint64_t weight_sq;  /* the sum of each sample event's periods squared */
	uint64_t sampled_ns; /* CPU time the samples stand for */
	uint64_t lost;       /* samples lost (rings full) */
	/* CPU time counted on CPUs whose ring the kernel stopped writing to, from its last
	 * record on (the perf backend's finish): the tasks that ran there sent nothing. */
	uint64_t silent_ns;
	pid_t child; /* the command, once started */
	/* CIPROF_TEST_UNFOLLOW=K (a test hook, docs/run.md): from the K-th process seen to
	 * fork on, processes send nothing but their FORK, as ones the kernel did not follow. */
	uint64_t unfollow_from, forks;
	int unfollow_forks; /* ",fork": their FORKs are dropped too */
	pid_t *unfollowed;
	size_t nunfollowed, unfollowed_alloc;
	const struct runner_backend_ops *ops;
	void *be;
};

struct runner_backend_ops {
	const char *name;
	int round_ms; /* the poll loop's period */
	/* Every task the command starts sends records of its own (an exec, samples, its exit):
	 * one that is seen to start and sends none was not followed (runner.c). */
	int follows_tasks;
	/* Before the launch: *env gets extra "NAME=VALUE" strings for the command (owned by
	 * the backend until release) or stays NULL. 0, or a negative runner error. */
	int (*prepare)(void *be, struct runner_session *s, char ***env);
	/* The command is forked and corked (s->child): start sampling it. 0, or a negative
	 * runner error (the command is then killed). */
	int (*start)(void *be, struct runner_session *s);
	/* The command could not be executed (nothing will be sampled). May be NULL. */
	void (*exec_failed)(void *be, struct runner_session *s);
	/* The fds to poll besides the launch's (POLLIN), at most max; how many. An fd that
	 * hangs up is polled no more, but the backend still reads it each round. */
	size_t (*pollfds)(void *be, struct pollfd *pfds, size_t max);
	/* One round: read what arrived into s->queue (and apply what cannot wait, through
	 * the runner_* functions below). final: the command has ended, read everything. */
	void (*read)(void *be, struct runner_session *s, int final);
	/* Called before each batch of events is processed. May be NULL. */
	void (*before_process)(void *be, struct runner_session *s);
	/*
	 * Decodes a RUN_EV_SAMPLE event: its process (*p, found or made in s->tree), its user
	 * stack into ips (at most max, leaf first), the periods it stands for (*weight) and
	 * the CPU ns (*ns). Returns the number of frames, or -1 for a malformed record.
	 */
	long (*sample)(void *be, struct runner_session *s, const struct run_event *ev,
	               struct proc **p, uint64_t *ips, size_t max, uint64_t *weight, uint64_t *ns);
	/* Whether an EXIT of pid is stale (a newer process has that pid). May be NULL. */
	int (*exit_stale)(void *be, struct runner_session *s, pid_t pid);
	/* After the last events were processed, before symbolization: with exact CPU time on,
	 * returns the whole tree's own CPU-time count in ns (else 0). May be NULL. */
	uint64_t (*finish)(void *be, struct runner_session *s);
	/* After symbolization: the backend's warnings. May be NULL. */
	void (*report)(void *be, struct runner_session *s);
	/* Frees be (s is still whole). */
	void (*release)(void *be, struct runner_session *s);
};

/* Runs opts->argv with backend ops and its state be, which it releases (see runner_run). */
int runner_session_run(struct profile **out, const struct runner_opts *opts,
                       const struct runner_backend_ops *ops, void *be);

/* Events that a backend applies as it reads them rather than through the queue (the same
 * code the queue's events go through). */
void runner_fork(struct runner_session *s, pid_t pid, pid_t ppid, pid_t tid, pid_t ptid);
void runner_comm(struct runner_session *s, pid_t pid, pid_t tid, const char *comm, int exec);

/* The unwinder's view of mapping m of a process in s->tree: its object's path only when it
 * has CFI to read (a file or the vdso). */
struct unwind_map runner_unwind_map(const struct runner_session *s, const struct map *m);

/* Processes the queued events stamped no later than limit (held back while a ctest is being
 * asked for its tests, unless limit is UINT64_MAX). */
void runner_process(struct runner_session *s, uint64_t limit);

/* The backend reports each task's own CPU time (RUN_EV_READ, reads_per_task per task): the
 * time sampling missed is counted as [unsampled] (cputime.h). */
void runner_exact_cpu(struct runner_session *s, unsigned reads_per_task);

#endif
