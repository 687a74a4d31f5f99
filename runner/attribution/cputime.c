/* Exact CPU per task from the kernel's own counts (see cputime.h). */
#include "runner/attribution/cputime.h"
#include "common/xalloc.h"
#include "runner/aggregate.h"

#include <stdlib.h>
#include <string.h>

void cputime_init(struct cputime *c, struct aggregator *agg, uint64_t period_ns,
                  unsigned reads_per_task)
{
	memset(c, 0, sizeof(*c));
	c->agg = agg;
	c->period_ns = period_ns ? period_ns : 1;
	c->reads_per_task = reads_per_task ? reads_per_task : 1;
	hashidx_init(&c->task_idx);
}

void cputime_release(struct cputime *c)
{
	for (size_t i = 0; i < c->ntasks; i++)
		free(c->tasks[i].shares);
	free(c->tasks);
	hashidx_release(&c->task_idx);
	free(c->rest);
	memset(c, 0, sizeof(*c));
}

static int task_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct cpu_task *tasks = ctx;
	return tasks[pos].tid == *(const pid_t *)key;
}

static uint64_t tid_hash(pid_t tid)
{
	return hash_mix((uint64_t)tid ^ 0xc0ffee);
}

/* Drops finished tasks (tid 0) when they are half the table, and reindexes. */
static void compact(struct cputime *c)
{
	if (c->nfinished < 64 || c->nfinished * 2 < c->ntasks)
		return;
	size_t n = 0;
	for (size_t i = 0; i < c->ntasks; i++)
		if (c->tasks[i].tid)
			c->tasks[n++] = c->tasks[i];
	c->ntasks = n;
	c->nfinished = 0;
	hashidx_release(&c->task_idx);
	hashidx_init(&c->task_idx);
	for (size_t i = 0; i < n; i++)
		hashidx_insert(&c->task_idx, tid_hash(c->tasks[i].tid), (uint32_t)i);
}

static struct cpu_task *task_get(struct cputime *c, pid_t pid, pid_t tid)
{
	int64_t i = hashidx_find(&c->task_idx, tid_hash(tid), task_eq, c->tasks, &tid);
	if (i >= 0)
		return &c->tasks[i];
	compact(c);
	ALLOC_GROW(c->tasks, c->ntasks + 1, c->tasks_alloc);
	struct cpu_task *t = &c->tasks[c->ntasks];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	hashidx_insert(&c->task_idx, tid_hash(tid), (uint32_t)c->ntasks);
	c->ntasks++;
	return t;
}

/* Adds ns of unsampled time to (test, weak, process); whole samples go to the aggregator. */
static void add_rest(struct cputime *c, uint32_t test, uint32_t weak, uint32_t process, uint64_t ns)
{
	struct cpu_rest *r = NULL;
	for (size_t i = c->nrest; i > 0 && !r; i--)
		if (c->rest[i - 1].test == test && c->rest[i - 1].weak == weak &&
		    c->rest[i - 1].process == process)
			r = &c->rest[i - 1];
	if (!r) {
		ALLOC_GROW(c->rest, c->nrest + 1, c->rest_alloc);
		r = &c->rest[c->nrest++];
		*r = (struct cpu_rest){test, weak, process, 0};
	}
	r->ns += ns;
	uint64_t whole = r->ns / c->period_ns;
	if (whole) {
		aggregator_add_unsampled(c->agg, test, (int)weak, process, whole);
		r->ns -= whole * c->period_ns;
	}
}

/* The task's count is complete: what its samples did not cover is counted as unsampled. */
static void finalize(struct cputime *c, struct cpu_task *t)
{
	uint64_t sampled = 0;
	for (size_t i = 0; i < t->nshares; i++)
		sampled += t->shares[i].ns;
	uint64_t rem = t->exact_ns > sampled ? t->exact_ns - sampled : 0;
	c->unsampled_ns += rem;
	if (rem && t->nshares) {
		for (size_t i = 0; i < t->nshares; i++)
			add_rest(c, t->shares[i].test, t->shares[i].weak, t->process,
			         (uint64_t)((double)rem * (double)t->shares[i].ns /
			                    (double)sampled));
	} else if (rem) {
		add_rest(c, t->exit_test, t->exit_weak, t->process, rem);
	}
	free(t->shares);
	t->shares = NULL;
	t->nshares = t->shares_alloc = 0;
	t->tid = 0; /* finished; its slot is dropped at the next compaction */
	c->nfinished++;
}

void cputime_sample(struct cputime *c, pid_t pid, pid_t tid, uint32_t test, int weak,
                    uint32_t process, uint64_t period)
{
	struct cpu_task *t = task_get(c, pid, tid);
	t->pid = pid;
	t->process = process;
	c->sampled_ns += period;
	for (size_t i = t->nshares; i > 0; i--) {
		struct cpu_share *s = &t->shares[i - 1];
		if (s->test == test && s->weak == (uint32_t) !!weak) {
			s->ns += period;
			return;
		}
	}
	ALLOC_GROW(t->shares, t->nshares + 1, t->shares_alloc);
	t->shares[t->nshares++] = (struct cpu_share){test, (uint32_t) !!weak, period};
}

void cputime_exit(struct cputime *c, pid_t pid, pid_t tid, uint32_t test, int weak,
                  uint32_t process)
{
	struct cpu_task *t = task_get(c, pid, tid);
	t->exit_test = test;
	t->exit_weak = (uint32_t) !!weak;
	t->exited = 1;
	t->process = process;
}

void cputime_read(struct cputime *c, pid_t pid, pid_t tid, uint64_t value)
{
	struct cpu_task *t = task_get(c, pid, tid);
	t->exact_ns += value;
	c->read_ns += value;
	if (++t->reads >= c->reads_per_task)
		finalize(c, t);
}

/*
 * The task whose count is total_ns minus every READ (see cputime_finish), or NULL when that
 * is not known. At a context switch between two processes of the run the kernel may swap
 * their perf contexts instead of switching their events (equivalent contexts: a context and
 * its clone, or two clones of one); the command's own context can so pass to a child, and the
 * task that exits holding it gets no READ, while the command, holding a clone, gets READs.
 * Under ctest -j4 that happened to one test in most runs; its unsampled part went uncounted
 * (with a CPU hog, a tenth of its time: test_exact_cpu's tests up to 22 ms short).
 */
static struct cpu_task *context_holder(struct cputime *c, pid_t root)
{
	struct cpu_task *cmd = NULL, *holder = NULL;
	size_t nexited = 0;
	for (size_t i = 0; i < c->ntasks; i++) {
		struct cpu_task *t = &c->tasks[i];
		if (!t->tid)
			continue;
		if (t->tid == root)
			cmd = t;
		else if (t->exited && !t->reads && nexited++ == 0)
			holder = t;
	}
	if (cmd && !cmd->reads)
		return cmd;
	return nexited == 1 ? holder : NULL;
}

void cputime_finish(struct cputime *c, pid_t root, uint64_t total_ns)
{
	struct cpu_task *holder = context_holder(c, root);
	if (holder)
		holder->exact_ns += total_ns > c->read_ns ? total_ns - c->read_ns : 0;
	for (size_t i = 0; i < c->ntasks; i++) {
		struct cpu_task *t = &c->tasks[i];
		if (t->tid)
			finalize(c, t);
	}
	for (size_t i = 0; i < c->nrest; i++) {
		struct cpu_rest *r = &c->rest[i];
		uint64_t n = (r->ns + c->period_ns / 2) / c->period_ns;
		if (n)
			aggregator_add_unsampled(c->agg, r->test, (int)r->weak, r->process, n);
		r->ns = 0;
	}
}
