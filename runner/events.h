/* The runner's events and their one time-ordered queue. Both backends turn what they read
 * (perf records, preload sample files) into these events; the runner (runner.c) applies them
 * in timestamp order, one round late, so that records read from different sources (CPUs,
 * processes) interleave as they happened. */
#ifndef CP_EVENTS_H
#define CP_EVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum run_event_kind {
	RUN_EV_SAMPLE, /* a sample: data is the backend's own record, decoded by its sample op */
	RUN_EV_MMAP,   /* an executable mapping: u.mmap, data the file name (NUL-terminated) */
	RUN_EV_COMM,   /* a task's name, u.comm.exec when it exec'd: data the name */
	RUN_EV_FORK,   /* a new task pid/tid of u.fork.ppid/ptid */
	RUN_EV_EXIT,   /* task pid/tid ended */
	RUN_EV_READ,   /* a task's own CPU-time count on one event, as it ended: u.read */
};

struct run_event {
	uint64_t time; /* CLOCK_MONOTONIC ns */
	uint64_t seq;  /* arrival order, set by the queue: equal times keep it */
	enum run_event_kind kind;
	pid_t pid, tid;
	union {
		struct {
			pid_t ppid, ptid;
		} fork;
		struct {
			int exec;
		} comm;
		struct {
			uint64_t addr, len, pgoff;
		} mmap;
		struct {
			uint64_t value;
		} read;
	} u;
	void *data; /* owned by the queue once pushed (freed after processing), or NULL */
	size_t len;
};

struct evqueue {
	struct run_event *ev;
	size_t n, alloc;
	uint64_t seq;
	uint64_t newest; /* the newest time pushed since evqueue_take_newest */
	int sorted;
};

void evqueue_init(struct evqueue *q);
/* Frees the events still queued and their data. */
void evqueue_release(struct evqueue *q);

/* Queues *ev (its data now owned by the queue); returns its sequence number. */
uint64_t evqueue_push(struct evqueue *q, const struct run_event *ev);

/* Sorts the queue by (time, seq): q->ev[0..n) is then in processing order. */
void evqueue_sort(struct evqueue *q);

/* The newest time pushed since the last call (0 if none), and starts over. */
uint64_t evqueue_take_newest(struct evqueue *q);

/*
 * Calls fn for every event stamped no later than limit, oldest first (ties in arrival order),
 * then drops them and frees their data. fn may push new events (they wait for a later call).
 * Returns how many were processed.
 */
size_t evqueue_process(struct evqueue *q, uint64_t limit,
                       void (*fn)(void *ctx, const struct run_event *ev), void *ctx);

#endif
