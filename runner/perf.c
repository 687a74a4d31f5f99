/* The perf backend, modelled on `perf record -- CMD`: fork the command behind a cork pipe,
 * open one cpu-clock event per online CPU on it (inherit, enable_on_exec, exclude_kernel),
 * map one ring buffer per CPU, release the command, and drain the rings in one poll loop.
 *
 * Records from different CPUs arrive out of order, so they are processed in timestamp order
 * in rounds, as perf does: after draining every ring in round k, every record stamped no
 * later than the newest record of round k-1 has been read, and those are processed. */
#include "runner/perf.h"
#include "common/error.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "runner/aggregate.h"
#include "runner/launch.h"
#include "runner/markers.h"
#include "runner/perf_record.h"
#include "runner/proctree.h"
#include "runner/symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAMES         256
#define DEFAULT_RING_PAGES 128 /* 512 KiB per CPU: fits the default perf_event_mlock_kb */

struct ring {
	int fd;
	int cpu;
	void *base;
	size_t map_len;
	struct perf_event_mmap_page *meta;
	unsigned char *data;
	uint64_t size;
};

struct pending {
	uint64_t time;
	uint64_t seq;
	void *rec; /* owned copy of the record */
};

struct session {
	struct ring *rings;
	size_t nrings;
	struct pending *pend;
	size_t npend, pend_alloc;
	uint64_t seq;
	uint64_t prev_round_max; /* newest timestamp read before the current round */
	struct proctree tree;
	struct aggregator agg;
	struct profile *prof;
	struct attrib attrib;
	struct markers markers;
	const struct runner_opts *opts;
	uint64_t samples, lost, throttled, bad_records;
	uint64_t period_ns_sum;
	uint64_t scratch[65536 / 8];
};

/* ---- diagnosis ---- */

static long read_long_file(const char *path, long dflt)
{
	FILE *f = fopen(path, "r");
	long v;
	if (!f)
		return dflt;
	if (fscanf(f, "%ld", &v) != 1)
		v = dflt;
	fclose(f);
	return v;
}

/* Seccomp mode and whether CAP_PERFMON (38) or CAP_SYS_ADMIN (21) is effective. */
static void read_status(int *seccomp, int *privileged)
{
	*seccomp = -1;
	*privileged = geteuid() == 0;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof(line), f)) {
		unsigned long long caps;
		if (sscanf(line, "Seccomp: %d", seccomp) == 1)
			continue;
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			*privileged = !!(caps & ((1ULL << 38) | (1ULL << 21)));
	}
	fclose(f);
}

char *perf_diagnose(int err, int paranoid, int seccomp, int privileged, int in_mmap, long mlock_kb,
                    size_t ring_bytes)
{
	struct strbuf sb = STRBUF_INIT;
	if (in_mmap && (err == EPERM || err == ENOMEM)) {
		strbuf_addf(&sb,
		            "cannot map the %zu KiB perf ring buffer per CPU: the locked-memory "
		            "budget is exhausted (kernel.perf_event_mlock_kb is %ld KiB per CPU, "
		            "beyond it RLIMIT_MEMLOCK counts). Use a smaller --ring-pages, raise "
		            "'ulimit -l', or 'sudo sysctl kernel.perf_event_mlock_kb=2048'",
		            ring_bytes / 1024, mlock_kb);
	} else if (err == ENOSYS) {
		strbuf_addstr(&sb, "perf_event_open is not available (ENOSYS): ");
		if (seccomp == 2)
			strbuf_addstr(&sb, "a seccomp filter makes the system call fail, as "
			                   "container runtimes do; run the container with "
			                   "'--security-opt seccomp=unconfined' or '--privileged' "
			                   "(GitLab: a privileged Docker runner)");
		else
			strbuf_addstr(&sb, "this kernel was built without CONFIG_PERF_EVENTS");
	} else if (err == EACCES || err == EPERM) {
		if (seccomp == 2 && (privileged || paranoid <= 2)) {
			strbuf_addf(
			        &sb,
			        "perf_event_open was refused (%s) by a seccomp filter: this "
			        "process runs under one, as Docker's default profile does, and "
			        "kernel.perf_event_paranoid (%d) would otherwise allow it. Run "
			        "the container with '--security-opt seccomp=unconfined', a "
			        "profile that allows perf_event_open, or '--privileged' (GitLab: "
			        "a privileged Docker runner)",
			        strerror(err), paranoid);
		} else if (paranoid > 2 && !privileged) {
			strbuf_addf(
			        &sb,
			        "perf_event_open was refused (%s): kernel.perf_event_paranoid is "
			        "%d, and profiling your own processes needs 2 or lower (or "
			        "CAP_PERFMON). Run 'sudo sysctl kernel.perf_event_paranoid=2' "
			        "first; GitHub's Ubuntu runners (level 4) allow it with their "
			        "passwordless sudo",
			        strerror(err), paranoid);
		} else {
			strbuf_addf(&sb,
			            "perf_event_open was refused (%s) although "
			            "kernel.perf_event_paranoid is %d: a security module (SELinux, "
			            "AppArmor, lockdown) or a seccomp filter%s may forbid it",
			            strerror(err), paranoid,
			            seccomp == 2 ? " (this process has one)" : "");
		}
	} else if (err == EMFILE || err == ENFILE) {
		strbuf_addf(&sb,
		            "cannot open perf events: too many open files (%s); raise "
		            "'ulimit -n'",
		            strerror(err));
	} else if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV) {
		strbuf_addf(&sb, "this kernel does not support the cpu-clock software event (%s)",
		            strerror(err));
	} else {
		strbuf_addf(&sb, "perf_event_open failed: %s", strerror(err));
	}
	strbuf_addstr(&sb, ". Without perf_event_open, --backend auto (the default) samples with "
	                   "the LD_PRELOAD backend instead (docs/preload.md).");
	return strbuf_detach(&sb, NULL);
}

static struct perf_refusal last_refusal;

void perf_last_refusal(struct perf_refusal *out)
{
	*out = last_refusal;
}

static int refused(int err, int in_mmap, size_t ring_bytes)
{
	const char *path = getenv("CIPROF_PERF_PARANOID_FILE"); /* test hook, see docs/run.md */
	int paranoid =
	        (int)read_long_file(path ? path : "/proc/sys/kernel/perf_event_paranoid", -100);
	long mlock_kb = read_long_file("/proc/sys/kernel/perf_event_mlock_kb", -1);
	int seccomp, privileged;
	read_status(&seccomp, &privileged);
	char *msg =
	        perf_diagnose(err, paranoid, seccomp, privileged, in_mmap, mlock_kb, ring_bytes);
	last_refusal = (struct perf_refusal){err, paranoid, seccomp, privileged, in_mmap};
	cp_error("%s", msg);
	free(msg);
	return RUNNER_ERR_REFUSED;
}

/* ---- events and rings ---- */

static int online_cpus(int **out)
{
	int *cpus = NULL;
	size_t n = 0, alloc = 0;
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	if (f) {
		int a, b;
		char sep;
		while (fscanf(f, "%d", &a) == 1) {
			b = a;
			if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
				if (fscanf(f, "%d", &b) != 1)
					break;
				if (fscanf(f, "%c", &sep) != 1)
					sep = '\n';
			}
			for (int c = a; c <= b && c - a < 4096; c++) {
				ALLOC_GROW(cpus, n + 1, alloc);
				cpus[n++] = c;
			}
			if (sep != ',')
				break;
		}
		fclose(f);
	}
	if (!n) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		for (long i = 0; i < (c > 0 ? c : 1); i++) {
			ALLOC_GROW(cpus, n + 1, alloc);
			cpus[n++] = (int)i;
		}
	}
	*out = cpus;
	return (int)n;
}

static void init_attr(struct perf_event_attr *attr, int hz, size_t ring_bytes)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	attr->sample_period = 1000000000ULL / (uint64_t)hz; /* cpu-clock counts nanoseconds */
	attr->sample_type = PERF_REC_SAMPLE_TYPE;
	attr->disabled = 1;
	attr->inherit = 1;
	attr->enable_on_exec = 1;
	attr->exclude_kernel = 1;
	attr->exclude_hv = 1;
	attr->mmap = 1;
	attr->mmap2 = 1;
	attr->comm = 1;
	attr->comm_exec = 1;
	attr->task = 1;
	attr->sample_id_all = 1;
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
	attr->watermark = 1;
	attr->wakeup_watermark = (uint32_t)(ring_bytes / 4);
}

static void close_rings(struct session *s)
{
	for (size_t i = 0; i < s->nrings; i++) {
		if (s->rings[i].base)
			munmap(s->rings[i].base, s->rings[i].map_len);
		if (s->rings[i].fd >= 0)
			close(s->rings[i].fd);
	}
	free(s->rings);
	s->rings = NULL;
	s->nrings = 0;
}

static int open_rings(struct session *s, pid_t child, const struct runner_opts *opts)
{
	int *cpus;
	int ncpus = online_cpus(&cpus);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t pages = opts->ring_pages ? opts->ring_pages : DEFAULT_RING_PAGES;
	struct perf_event_attr attr;
	init_attr(&attr, opts->hz, pages * page);
	s->rings = xcalloc((size_t)ncpus, sizeof(*s->rings));
	int ret = 0;
	const char *deny = getenv("CIPROF_TEST_PERF_ERRNO"); /* test hook, see docs/run.md */
	for (int i = 0; i < ncpus; i++) {
		struct ring *r = &s->rings[s->nrings];
		r->fd = -1;
		r->cpu = cpus[i];
		if (deny && *deny) {
			errno = atoi(deny);
			ret = refused(errno, 0, pages * page);
			goto out;
		}
		r->fd = (int)syscall(SYS_perf_event_open, &attr, child, cpus[i], -1,
		                     PERF_FLAG_FD_CLOEXEC);
		if (r->fd < 0) {
			ret = refused(errno, 0, pages * page);
			goto out;
		}
		s->nrings++;
		for (;;) {
			r->map_len = (pages + 1) * page;
			r->base = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
			               0);
			if (r->base != MAP_FAILED)
				break;
			r->base = NULL;
			/* Over the locked-memory budget: halve down to 8 pages, then give up. */
			if ((errno == EPERM || errno == ENOMEM) && pages > 8 && !opts->ring_pages) {
				pages /= 2;
				continue;
			}
			ret = refused(errno, 1, pages * page);
			goto out;
		}
		r->meta = r->base;
		r->data = (unsigned char *)r->base + page;
		r->size = pages * page;
	}
	if (pages != (opts->ring_pages ? opts->ring_pages : DEFAULT_RING_PAGES))
		log_warn("ring buffers reduced to %zu pages per CPU by the locked-memory budget; "
		         "at high --hz samples may be lost",
		         pages);
out:
	free(cpus);
	return ret;
}

/* ---- record processing ---- */

static int pending_cmp(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const char *proc_name_guess(pid_t pid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return "[unknown]";
	if (!fgets(buf, (int)len, f))
		snprintf(buf, len, "[unknown]");
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

static void handle_sample(struct session *s, const void *rec, size_t len)
{
	struct perf_sample smp;
	if (perf_parse_sample(rec, len, &smp) < 0) {
		s->bad_records++;
		return;
	}
	struct proc *p = proctree_find(&s->tree, (pid_t)smp.pid);
	if (!p) {
		char name[64];
		p = proctree_get(&s->tree, (pid_t)smp.pid,
		                 proc_name_guess((pid_t)smp.pid, name, sizeof(name)));
	}
	uint64_t ips[MAX_FRAMES];
	uint64_t offsets[MAX_FRAMES];
	uint32_t dsos[MAX_FRAMES];
	size_t n = perf_user_callchain(&smp, ips, MAX_FRAMES);
	for (size_t i = 0; i < n; i++)
		proctree_resolve(&s->tree, p, ips[i], &dsos[i], &offsets[i]);
	uint32_t process = profile_intern(s->prof, p->name);
	int weak;
	uint32_t test = attrib_sample(&s->attrib, (pid_t)smp.pid, (pid_t)smp.tid, smp.time, &weak);
	aggregator_add(&s->agg, test, weak, process, dsos, offsets, n, 1);
	s->samples++;
	s->period_ns_sum += smp.period;
}

static void handle_record(struct session *s, const void *rec)
{
	const struct perf_event_header *h = rec;
	size_t len = h->size;
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		handle_sample(s, rec, len);
		break;
	case PERF_RECORD_MMAP2: {
		struct perf_mmap2 m;
		if (perf_parse_mmap2(rec, len, &m) == 0)
			proctree_mmap(&s->tree, (pid_t)m.pid, m.addr, m.len, m.pgoff, m.filename);
		else
			s->bad_records++;
		break;
	}
	case PERF_RECORD_COMM: {
		struct perf_comm c;
		if (perf_parse_comm(rec, len, &c) == 0)
			proctree_comm(&s->tree, (pid_t)c.pid, (pid_t)c.tid, c.comm, c.exec);
		else
			s->bad_records++;
		break;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		struct perf_task t;
		if (perf_parse_task(rec, len, &t) < 0) {
			s->bad_records++;
			break;
		}
		if (h->type == PERF_RECORD_FORK) {
			proctree_fork(&s->tree, (pid_t)t.pid, (pid_t)t.ppid, (pid_t)t.tid,
			              (pid_t)t.ptid);
			if (t.pid != t.ppid)
				attrib_proc_fork(&s->attrib, (pid_t)t.pid, (pid_t)t.ppid);
		} else {
			proctree_exit(&s->tree, (pid_t)t.pid, (pid_t)t.tid);
			if (t.pid == t.tid)
				attrib_proc_exit(&s->attrib, (pid_t)t.pid);
		}
		break;
	}
	case PERF_RECORD_LOST: {
		struct perf_lost l;
		if (perf_parse_lost(rec, len, &l) == 0)
			s->lost += l.lost;
		break;
	}
	case PERF_RECORD_THROTTLE:
		s->throttled++;
		break;
	default:
		break;
	}
}

/*
 * CTest runs each test as its own process: match an exec'd process's command line and working
 * directory with `ctest --show-only=json-v1`. Done when the exec record is read, not when it is
 * processed, so that /proc still shows the process (short tests end quickly).
 */
static void ctest_exec_seen(struct session *s, const void *rec, size_t len)
{
	struct perf_comm c;
	if (perf_parse_comm(rec, len, &c) < 0 || !c.exec || c.pid != c.tid)
		return;
	launch_ctest_exec(&s->attrib, (pid_t)c.pid);
}

/* Reads every complete record of every ring into the pending queue. */
static uint64_t drain_rings(struct session *s)
{
	uint64_t round_max = 0;
	for (size_t i = 0; i < s->nrings; i++) {
		struct ring *r = &s->rings[i];
		uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
		uint64_t tail = r->meta->data_tail;
		while (tail < head) {
			const struct perf_event_header *h = perf_ring_record(
			        r->data, r->size, tail, head, s->scratch, sizeof(s->scratch));
			if (!h) {
				s->bad_records++;
				tail = head; /* cannot resynchronise inside a corrupt ring */
				break;
			}
			void *copy = xmalloc(h->size);
			memcpy(copy, h, h->size);
			if (h->type == PERF_RECORD_COMM && s->attrib.nctest)
				ctest_exec_seen(s, copy, h->size);
			uint64_t t = perf_record_time(copy, h->size);
			ALLOC_GROW(s->pend, s->npend + 1, s->pend_alloc);
			s->pend[s->npend++] = (struct pending){t, s->seq++, copy};
			if (t > round_max)
				round_max = t;
			tail += h->size;
		}
		__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
	}
	return round_max;
}

/* Processes pending records stamped no later than limit, in time order. */
static void process_pending(struct session *s, uint64_t limit)
{
	if (!s->npend)
		return;
	qsort(s->pend, s->npend, sizeof(*s->pend), pending_cmp);
	size_t done = 0;
	while (done < s->npend && s->pend[done].time <= limit) {
		handle_record(s, s->pend[done].rec);
		free(s->pend[done].rec);
		done++;
	}
	memmove(s->pend, s->pend + done, (s->npend - done) * sizeof(*s->pend));
	s->npend -= done;
}

static void round_trip(struct session *s)
{
	uint64_t round_max = drain_rings(s);
	process_pending(s, s->prev_round_max);
	if (round_max > s->prev_round_max)
		s->prev_round_max = round_max;
}

/* ---- launching ---- */

int perf_backend_run(struct profile **out, const struct runner_opts *opts)
{
	struct session s;
	memset(&s, 0, sizeof(s));
	*out = NULL;
	int ret = 0;
	struct launch l;

	s.opts = opts;
	s.prof = profile_new();
	proctree_init(&s.tree);
	aggregator_init(&s.agg, s.prof);
	attrib_init(&s.attrib, s.prof);
	markers_init(&s.markers);
	launch_init(&l, &s.attrib, &s.markers);
	launch_ctest_prepare(&s.attrib, opts->argv);

	ret = launch_start(&l, opts, NULL);
	if (ret < 0)
		goto out;
	proctree_get(&s.tree, l.child, launch_basename(opts->argv[0]));

	ret = open_rings(&s, l.child, opts);
	if (ret < 0) {
		launch_abort(&l);
		goto out;
	}

	ret = launch_go(&l, opts->argv[0]);
	if (ret == RUNNER_ERR_EXEC) {
		s.prof->stats.exit_status = 127;
		goto finish;
	}
	if (ret < 0)
		goto out;

	/* rings..., then signalfd, control pipe, pty */
	size_t nfds = s.nrings + LAUNCH_NFDS;
	struct pollfd *pfds = xcalloc(nfds, sizeof(*pfds));
	for (size_t i = 0; i < s.nrings; i++)
		pfds[i] = (struct pollfd){s.rings[i].fd, POLLIN, 0};
	launch_pollfds(&l, pfds + s.nrings);
	int done = 0, status = 0;
	while (!done) {
		int pr = poll(pfds, nfds, 100);
		if (pr < 0 && errno != EINTR) {
			log_warn("poll failed: %s", strerror(errno));
			usleep(10000);
		}
		done = launch_service(&l, pfds + s.nrings, &status);
		for (size_t i = 0; i < s.nrings; i++)
			if (pfds[i].revents & (POLLHUP | POLLERR))
				pfds[i].fd = -1; /* the task is gone; still drained below */
		round_trip(&s);
	}
	free(pfds);
	s.prof->stats.exit_status = launch_exit_status(status);
	s.prof->stats.wall_seconds = launch_now_seconds() - l.start;

finish:
	/* Everything written so far is in the rings and pipes: read and process it all. */
	launch_drain_io(&l);
	drain_rings(&s);
	process_pending(&s, UINT64_MAX);
	{
		struct symbolizer *sym = symbolizer_new();
		aggregator_symbolize(&s.agg, &s.tree, sym, opts->rules);
		symbolizer_free(sym);
	}
	struct profile_stats *st = &s.prof->stats;
	st->samples = s.samples;
	st->lost = s.lost;
	st->processes = s.tree.processes_seen;
	st->threads = s.tree.threads_seen;
	st->hz = opts->hz;
	st->period_ns = 1000000000ULL / (uint64_t)opts->hz;
	st->cpu_seconds = (double)s.period_ns_sum / 1e9;
	if (s.throttled)
		log_warn("the kernel throttled sampling %llu times: lower --hz",
		         (unsigned long long)s.throttled);
	if (s.bad_records)
		log_warn("%llu malformed perf records were skipped",
		         (unsigned long long)s.bad_records);
	if (s.attrib.bad_lines)
		log_warn("%llu malformed lines on CIPROF_CONTROL_FD were ignored (-v shows them)",
		         (unsigned long long)s.attrib.bad_lines);
	*out = s.prof;
	s.prof = NULL;
out:
	close_rings(&s);
	for (size_t i = 0; i < s.npend; i++)
		free(s.pend[i].rec);
	free(s.pend);
	aggregator_release(&s.agg);
	proctree_release(&s.tree);
	attrib_release(&s.attrib);
	markers_release(&s.markers);
	profile_free(s.prof);
	launch_release(&l);
	return ret;
}
