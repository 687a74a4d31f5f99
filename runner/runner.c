/* The runner: one session per run owns the launch, the poll loop, the time-ordered event
 * queue, attribution, exact CPU time and the run's statistics (backend.h); the perf or preload
 * backend only supplies events. runner_run picks the backend and falls back from perf to
 * preload when perf_event_open is refused. */
#include "runner/runner.h"
#include "config/config.h"
#include "common/error.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "runner/backend.h"
#include "runner/attribution/ctest.h"
#include "runner/launch.h"
#include "runner/meta/gitmeta.h"
#include "runner/sample/perf.h"
#include "runner/sample/preload_backend.h"
#include "runner/symbols/symbolize.h"
#include "runner/symbols/symcache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Frames per stack: the perf backend's kernel chain and unwinder stop there, the preload
 * sampler at PL_MAX_FRAMES (fewer). */
#define RUNNER_MAX_FRAMES 256

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
	o->symbol_cache = 1;
}

const char *runner_event_name(enum runner_event e)
{
	return e == RUNNER_EVENT_INSTRUCTIONS ? "instructions"
	       : e == RUNNER_EVENT_CYCLES     ? "cycles"
	                                      : "cpu-clock";
}

/* ---- the session: one place that applies events, attributes and counts ---- */

void runner_fork(struct runner_session *s, pid_t pid, pid_t ppid, pid_t tid, pid_t ptid)
{
	proctree_fork(&s->tree, pid, ppid, tid, ptid);
	if (pid != ppid)
		attrib_proc_fork(&s->attrib, pid, ppid);
	if (pid != ppid && s->ctest.tests_ctest && ppid == s->ctest.tests_ctest)
		s->ctest.started++; /* a test process, or one of its repeats */
}

void runner_comm(struct runner_session *s, pid_t pid, pid_t tid, const char *comm, int exec)
{
	proctree_comm(&s->tree, pid, tid, comm, exec);
}

void runner_exact_cpu(struct runner_session *s, unsigned reads_per_task)
{
	cputime_init(&s->cpu, &s->agg, s->period_ns, reads_per_task);
}

/* A sample of the backend's: its stack resolved in its process's address space at its time,
 * attributed to a test, counted. */
static void apply_sample(struct runner_session *s, const struct run_event *ev)
{
	uint64_t ips[RUNNER_MAX_FRAMES], offsets[RUNNER_MAX_FRAMES];
	uint32_t dsos[RUNNER_MAX_FRAMES];
	struct proc *p = NULL;
	uint64_t weight = 1, ns = 0;
	long got = s->ops->sample(s->be, s, ev, &p, ips, RUNNER_MAX_FRAMES, &weight, &ns);
	if (got < 0 || !p)
		return; /* malformed: the backend counted it */
	p->heard = 1;
	size_t n = proctree_resolve_chain(&s->tree, p, ips, (size_t)got, dsos, offsets);
	uint32_t process = profile_intern_name(s->prof, p->name);
	/* A preload sample may stand for CPU time on both sides of a mark. */
	struct attrib_part parts[ATTRIB_MAX_PARTS];
	size_t nparts = attrib_sample_parts(&s->attrib, ev->pid, ev->tid, ev->time, weight, parts);
	uint64_t ns_given = 0, w_given = 0;
	for (size_t i = 0; i < nparts; i++) {
		if (!parts[i].weight)
			continue;
		w_given += parts[i].weight;
		uint64_t part_ns =
		        w_given == weight
		                ? ns - ns_given
		                : (uint64_t)((double)ns * (double)parts[i].weight / (double)weight);
		ns_given += part_ns;
		aggregator_add(&s->agg, parts[i].test, parts[i].weak, process, dsos, offsets, n,
		               parts[i].weight);
		if (s->cpu.agg)
			cputime_sample(&s->cpu, ev->pid, ev->tid, parts[i].test, parts[i].weak,
			               process, part_ns);
	}
	s->samples += weight;
	s->weight_sq += weight * weight;
	s->stacks++;
	s->sampled_ns += ns;
}

static void apply_exit(struct runner_session *s, const struct run_event *ev)
{
	if (s->ops->exit_stale && s->ops->exit_stale(s->be, s, ev->pid))
		return;
	if (s->cpu.agg) {
		/* Its test as it ends: its unsampled time goes there if it had no sample. */
		int weak;
		uint32_t test = attrib_sample(&s->attrib, ev->pid, ev->tid, ev->time, &weak);
		struct proc *p = proctree_find(&s->tree, ev->pid);
		cputime_exit(&s->cpu, ev->pid, ev->tid, test, weak,
		             profile_intern_name(s->prof, p ? p->name : "[unknown]"));
	}
	proctree_exit(&s->tree, ev->pid, ev->tid);
	attrib_thread_exit(&s->attrib, ev->tid, ev->time);
	if (ev->pid == ev->tid)
		attrib_proc_exit(&s->attrib, ev->pid);
}

static void unfollow(struct runner_session *s, pid_t pid)
{
	ALLOC_GROW(s->unfollowed, s->nunfollowed + 1, s->unfollowed_alloc);
	s->unfollowed[s->nunfollowed++] = pid;
}

/* Whether the test hook CIPROF_TEST_UNFOLLOW drops ev: every record of a process it chose but
 * its FORK (with ",fork": that too), and its children's FORKs; it chooses the K-th process
 * seen to fork and every later one. */
static int unfollowed(struct runner_session *s, const struct run_event *ev)
{
	if (!s->unfollow_from)
		return 0;
	int fork = ev->kind == RUN_EV_FORK && ev->pid != ev->u.fork.ppid;
	for (size_t i = 0; i < s->nunfollowed; i++) {
		if (fork && s->unfollowed[i] == ev->u.fork.ppid) {
			unfollow(s, ev->pid); /* a child of one: not even its FORK is seen */
			return 1;
		}
		if (!fork && s->unfollowed[i] == ev->pid)
			return 1;
	}
	if (fork && ++s->forks >= s->unfollow_from) {
		unfollow(s, ev->pid);
		return s->unfollow_forks;
	}
	return 0;
}

static void apply_event(void *ctx, const struct run_event *ev)
{
	struct runner_session *s = ctx;
	if (unfollowed(s, ev))
		return;
	if (ev->kind != RUN_EV_FORK && ev->kind != RUN_EV_SAMPLE) {
		struct proc *p = proctree_find(&s->tree, ev->pid);
		if (p)
			p->heard = 1;
	}
	switch (ev->kind) {
	case RUN_EV_SAMPLE:
		apply_sample(s, ev);
		break;
	case RUN_EV_MMAP:
		proctree_mmap(&s->tree, ev->pid, ev->u.mmap.addr, ev->u.mmap.len, ev->u.mmap.pgoff,
		              ev->data ? ev->data : "");
		break;
	case RUN_EV_COMM:
		runner_comm(s, ev->pid, ev->tid, ev->data ? ev->data : "", ev->u.comm.exec);
		break;
	case RUN_EV_FORK:
		runner_fork(s, ev->pid, ev->u.fork.ppid, ev->tid, ev->u.fork.ptid);
		break;
	case RUN_EV_EXIT:
		apply_exit(s, ev);
		break;
	case RUN_EV_READ:
		if (s->cpu.agg)
			cputime_read(&s->cpu, ev->pid, ev->tid, ev->u.read.value);
		break;
	}
}

void runner_process(struct runner_session *s, uint64_t limit)
{
	/* While a ctest is asked for its tests, the events wait: its test processes started
	 * meanwhile are named when the answer comes (runner/attribution/ctest.h). So do those
	 * from an exec whose command line is not shown yet (ctest_watch_retry) on. */
	if (limit != UINT64_MAX && ctest_watch_poll(&s->ctest, 0))
		return;
	uint64_t pending = ctest_watch_pending_time(&s->ctest);
	if (limit != UINT64_MAX && pending <= limit)
		limit = pending ? pending - 1 : 0;
	if (!s->queue.n)
		return;
	if (s->ops->before_process)
		s->ops->before_process(s->be, s);
	evqueue_process(&s->queue, limit, apply_event, s);
}

/* One round: the backend reads what arrived; the events stamped no later than the newest of
 * the previous round are processed (every source has delivered those by now), all of them
 * at the end. */
static void session_round(struct runner_session *s, int final)
{
	s->ops->read(s->be, s, final);
	uint64_t newest = evqueue_take_newest(&s->queue);
	if (final)
		ctest_watch_poll(&s->ctest, 1);
	runner_process(s, final ? UINT64_MAX : s->prev_round_max);
	if (newest > s->prev_round_max)
		s->prev_round_max = newest;
}

/* Polls the launch's fds and the backend's until the command ends, a round each period. */
static void session_loop(struct runner_session *s, struct launch *l, int *status)
{
	size_t nbe = s->ops->pollfds ? s->ops->pollfds(s->be, NULL, 0) : 0;
	size_t nfds = nbe + LAUNCH_NFDS;
	struct pollfd *pfds = xcalloc(nfds, sizeof(*pfds));
	if (nbe)
		s->ops->pollfds(s->be, pfds, nbe);
	launch_pollfds(l, pfds + nbe);
	int round_ms = s->ops->round_ms;
	const char *t = getenv("CIPROF_TEST_ROUND_MS"); /* test hook, docs/run.md */
	if (t && atoi(t) > 0)
		round_ms = atoi(t);
	int done = 0;
	while (!done) {
		int pr = poll(pfds, nfds, s->ctest.npend ? 1 : round_ms);
		if (pr < 0 && errno != EINTR) {
			log_warn("poll failed: %s", strerror(errno));
			usleep(10000);
		}
		done = launch_service(l, pfds + nbe, status);
		for (size_t i = 0; i < nbe; i++)
			if (pfds[i].revents & (POLLHUP | POLLERR))
				pfds[i].fd = -1; /* its source is gone; still read each round */
		session_round(s, 0);
	}
	free(pfds);
}

/*
 * The processes seen to start (a FORK record from their parent) that sent nothing of their
 * own since, no exec, sample or exit, and are gone: the kernel's events did not follow them,
 * though it counted their CPU time ([unsampled]). A run that has them lacks those processes'
 * tests and functions (docs/run.md, "Limits"); ciprof run warns, tags the run, and reports
 * set it aside. Only for a backend whose every task sends records of its own; a process alive
 * when the command ended is not counted (mark_outliving), nor one alive now. Those whose FORK
 * did not come either are counted where ctest tells how many there should be.
 */
static uint64_t unseen_processes(struct runner_session *s)
{
	if (!s->ops->follows_tasks)
		return 0;
	uint64_t n = 0;
	for (size_t i = 0; i < s->tree.nprocs; i++) {
		const struct proc *p = s->tree.procs[i];
		if (p->heard || p->exited || proctree_pid_alive(p->pid))
			continue;
		n++;
		const struct proc *parent = proctree_find(&s->tree, p->ppid);
		log_debug("process %d (forked by %d, %s) sent no record of its own", (int)p->pid,
		          (int)p->ppid, parent ? parent->name : "not seen");
	}
	/* Processes whose FORK never came either: a ctest that passed (every test it lists ran)
	 * forks a process per test, so fewer forks seen than tests listed are tests ciprof never
	 * saw. Only with one ctest asked for its tests (a nested or second ctest's tests are not
	 * its children). */
	const struct ctest_watch *w = &s->ctest;
	if (s->prof->stats.exit_status == 0 && w->queries == 1 && w->tests_ctest &&
	    w->started < w->listed) {
		log_verbose(
		        "ctest (process %d) lists %zu tests it runs, but ciprof saw it start %llu "
		        "processes",
		        (int)w->tests_ctest, w->listed, (unsigned long long)w->started);
		n += w->listed - w->started;
	}
	return n;
}

/* As the command ends: the processes not heard from yet that are still alive outlive it (not
 * sampled past its end: docs/run.md, "Limits"), and are never counted as unseen. */
static void mark_outliving(struct runner_session *s)
{
	if (!s->ops->follows_tasks)
		return;
	for (size_t i = 0; i < s->tree.nprocs; i++) {
		struct proc *p = s->tree.procs[i];
		if (!p->heard && !p->exited && proctree_pid_alive(p->pid))
			p->heard = 1;
	}
}

int runner_session_run(struct profile **out, const struct runner_opts *opts,
                       const struct runner_backend_ops *ops, void *be)
{
	struct runner_session s;
	memset(&s, 0, sizeof(s));
	*out = NULL;
	struct launch l;
	char **env = NULL;

	s.opts = opts;
	s.ops = ops;
	s.be = be;
	s.child = -1;
	s.period_ns = 1000000000ULL / (uint64_t)opts->hz;
	const char *unf = getenv("CIPROF_TEST_UNFOLLOW"); /* test hook, docs/run.md */
	s.unfollow_from = unf && atoi(unf) > 0 ? (uint64_t)atoi(unf) : 0;
	s.unfollow_forks = unf && strstr(unf, ",fork") != NULL;
	s.prof = profile_new();
	s.prof->stats.others_seconds = -1;
	s.objs = objcache_new();
	proctree_init(&s.tree);
	aggregator_init(&s.agg, s.prof);
	attrib_init(&s.attrib, s.prof);
	aggregator_attach(&s.agg, &s.attrib);
	markers_init(&s.markers);
	evqueue_init(&s.queue);
	launch_init(&l, &s.attrib, &s.markers);
	ctest_watch_init(&s.ctest, &s.attrib);

	int ret = ops->prepare ? ops->prepare(be, &s, &env) : 0;
	if (ret < 0)
		goto out;
	ctest_watch_command(&s.ctest, opts->argv);
	ret = launch_start(&l, opts, env);
	if (ret < 0)
		goto out;
	s.child = l.child;
	s.ctest.root = l.child;
	ret = ops->start(be, &s);
	if (ret < 0) {
		launch_abort(&l);
		goto out;
	}
	struct host_busy busy0, busy1;
	host_busy_mark(&busy0);
	ret = launch_go(&l, opts->argv[0]);
	if (ret == RUNNER_ERR_EXEC) {
		s.prof->stats.exit_status = l.exec_status;
		if (ops->exec_failed)
			ops->exec_failed(be, &s);
		goto finish;
	}
	if (ret < 0)
		goto out;
	int status = 0;
	session_loop(&s, &l, &status);
	s.prof->stats.exit_status = launch_exit_status(status);
	s.prof->stats.wall_seconds = launch_now_seconds() - l.start;
	host_busy_mark(&busy1);
	double others = host_busy_cpus(&busy0, &busy1);
	s.prof->stats.others_seconds = others < 0 ? -1 : others * s.prof->stats.wall_seconds;

finish:
	/* Everything written so far is in the pipes and the backend's buffers: read and process
	 * it all. */
	mark_outliving(&s);
	launch_drain_io(&l);
	session_round(&s, 1);
	uint64_t total_ns = ops->finish ? ops->finish(be, &s) : 0;
	if (s.cpu.agg)
		cputime_finish(&s.cpu, s.child, total_ns);
	/* CTest processes that ended before their command line was read, named now that every
	 * test process of the run has been seen (ctest.h). */
	ctest_watch_finish(&s.ctest);
	if (s.ctest.nunnamed) {
		uint32_t *to = xcalloc(s.ctest.nunnamed, sizeof(*to));
		for (size_t i = 0; i < s.ctest.nunnamed; i++)
			to[i] = s.ctest.unnamed[i].test;
		aggregator_relabel(&s.agg, ATTRIB_UNNAMED_FIRST, to, s.ctest.nunnamed);
		free(to);
	}
	{
		struct symbolizer *sym = symbolizer_new(s.objs);
		symbolizer_set_separate_lines(sym, 0); /* file names of libc & co: unused */
		struct symcache *sc = NULL;
		if (opts->symbol_cache) {
			char *dir = symcache_default_dir();
			sc = dir ? symcache_open(dir, 0) : NULL;
			if (!sc)
				log_verbose("symbol cache: %s; symbolizing without it",
				            dir ? cp_last_error() : "no folder ($HOME is not set)");
			free(dir);
			symbolizer_set_cache(sym, sc);
		}
		aggregator_symbolize(&s.agg, &s.tree, sym, opts->rules);
		if (sc) {
			if (symcache_flush(sc) < 0)
				log_warn("symbol cache: %s", cp_last_error());
			const struct symcache_stats *cs = symcache_stats(sc);
			log_verbose(
			        "symbol cache: %llu addresses from the cache, %llu symbolized "
			        "now; %llu files read, %llu written, %llu of other objects, %llu "
			        "corrupt, %llu evicted",
			        (unsigned long long)cs->hits, (unsigned long long)cs->misses,
			        (unsigned long long)cs->files_read,
			        (unsigned long long)cs->files_written,
			        (unsigned long long)cs->files_rejected,
			        (unsigned long long)cs->files_corrupt,
			        (unsigned long long)cs->files_evicted);
		}
		log_verbose("symbols: %llu libdwfl sessions",
		            (unsigned long long)symbolizer_counts(sym)->sessions);
		symbolizer_free(sym);
		symcache_free(sc);
		const struct objcache_stats *os = objcache_stats(s.objs);
		log_verbose("objects: %llu read for unwinding and symbols (%llu opens: %llu after "
		            "an eviction; %llu replaced on disk during the run, %llu unusable), at "
		            "most %zu open at once, %llu vdso copy",
		            (unsigned long long)os->objects, (unsigned long long)os->opens,
		            (unsigned long long)os->reopens, (unsigned long long)os->replaced,
		            (unsigned long long)os->failed, os->open_max,
		            (unsigned long long)os->vdso_copies);
	}
	struct profile_stats *st = &s.prof->stats;
	st->samples = s.samples;
	st->dispersion = s.samples ? (double)s.weight_sq / (double)s.samples : 1;
	st->lost = s.lost;
	st->processes = s.tree.processes_seen;
	st->unseen_processes = unseen_processes(&s);
	st->silent_seconds = (double)s.silent_ns / 1e9;
	st->threads = s.tree.threads_seen;
	st->hz = opts->hz;
	st->period_ns = s.period_ns;
	st->cpu_seconds = (double)(s.sampled_ns + s.cpu.unsampled_ns) / 1e9;
	st->unsampled_seconds = (double)s.cpu.unsampled_ns / 1e9;
	if (ops->report)
		ops->report(be, &s);
	aggregator_warn_threads(&s.agg);
	attrib_warn(&s.attrib);
	*out = s.prof;
	s.prof = NULL;
out:
	ops->release(be, &s);
	objcache_free(s.objs); /* after the backend's unwinder, which borrowed it */
	evqueue_release(&s.queue);
	ctest_watch_release(&s.ctest);
	cputime_release(&s.cpu);
	aggregator_release(&s.agg);
	proctree_release(&s.tree);
	attrib_release(&s.attrib);
	markers_release(&s.markers);
	free(s.unfollowed);
	profile_free(s.prof);
	launch_release(&l);
	return ret;
}

struct unwind_map runner_unwind_map(const struct runner_session *s, const struct map *m)
{
	const struct dso *d = &s->tree.dsos[m->dso];
	return (struct unwind_map){m->start, m->end, m->pgoff,
	                           d->kind == DSO_FILE || d->kind == DSO_VDSO ? d->path : NULL};
}

/* ---- choosing the backend ---- */

int runner_run(struct profile **out, const struct runner_opts *opts)
{
	*out = 0;
	if (!opts->argv || !opts->argv[0])
		return cp_error("no command to run");
	const struct config_key_info *hz = config_key_info(CONFIG_RUN_HZ);
	if (opts->hz < hz->min || opts->hz > hz->max)
		return cp_error("sampling rate %d Hz is outside %g..%g", opts->hz, hz->min,
		                hz->max);
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
		return runner_session_run(out, opts, &preload_backend_ops,
		                          preload_backend_new(opts));
	int r = runner_session_run(out, opts, &perf_backend_ops, perf_backend_new(opts));
	/* A hardware event has no stand-in in the preload backend: no fallback. */
	if (r != RUNNER_ERR_REFUSED || opts->backend != RUNNER_BACKEND_AUTO ||
	    opts->event != RUNNER_EVENT_CPU_CLOCK)
		return r;
	/* auto: perf_event_open refused (containers, paranoid kernels): the LD_PRELOAD
	 * sampler instead, which walks frame pointers only. */
	struct runner_opts fallback = *opts;
	fallback.unwind = RUNNER_UNWIND_FP;
	preload_announce_fallback(opts->unwind == RUNNER_UNWIND_DWARF);
	return runner_session_run(out, &fallback, &preload_backend_ops,
	                          preload_backend_new(&fallback));
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
