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
	int ctl_fd;            /* read end of the CIPROF_CONTROL_FD pipe, or -1 */
	int pty_fd;            /* pty master carrying the command's output, or -1 */
	struct strbuf ctl_buf; /* an incomplete control line */
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
	strbuf_addstr(&sb, ". The LD_PRELOAD fallback backend is not built yet.");
	return strbuf_detach(&sb, NULL);
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

/* Reads a NUL-separated /proc file into a NULL-terminated argv (owned), or NULL. */
static char **read_cmdline(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	struct strbuf sb = STRBUF_INIT;
	sb.max = 1 << 20;
	if (strbuf_read_file(&sb, path) < 0 || !sb.len) {
		strbuf_release(&sb);
		return NULL;
	}
	size_t n = 0;
	for (size_t i = 0; i < sb.len; i++)
		n += sb.buf[i] == '\0';
	if (sb.buf[sb.len - 1] != '\0')
		n++;
	char **argv = xcalloc(n + 1, sizeof(char *));
	size_t k = 0;
	for (size_t i = 0; i < sb.len && k < n; i += strlen(sb.buf + i) + 1)
		argv[k++] = xstrdup(sb.buf + i);
	strbuf_release(&sb);
	return argv;
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
	char **argv = read_cmdline((pid_t)c.pid);
	if (!argv)
		return;
	char link[64], cwd[4096];
	snprintf(link, sizeof(link), "/proc/%d/cwd", (int)c.pid);
	ssize_t n = readlink(link, cwd, sizeof(cwd) - 1);
	cwd[n > 0 ? n : 0] = '\0';
	const char *test = attrib_ctest_match(&s->attrib, argv, cwd);
	if (test) {
		log_debug("process %d is CTest test '%s'", (int)c.pid, test);
		attrib_proc_mark(&s->attrib, (pid_t)c.pid, test);
	}
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
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

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int exit_status_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Writes all of buf to fd, waiting when it is full; gives up on a real error (EPIPE). */
static void write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = {fd, POLLOUT, 0};
			poll(&p, 1, 100);
			continue;
		}
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

/* Reads what the control pipe holds; each complete line is a mark. */
static void read_control(struct session *s)
{
	char buf[4096];
	ssize_t n;
	while ((n = read(s->ctl_fd, buf, sizeof(buf))) > 0) {
		uint64_t t = now_ns();
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (strbuf_addch(&s->ctl_buf, buf[i]) < 0)
					strbuf_reset(&s->ctl_buf); /* an absurd line: drop it */
				continue;
			}
			if (attrib_control_line(&s->attrib, s->ctl_buf.buf, t) < 0)
				log_verbose("%s", cp_last_error());
			strbuf_reset(&s->ctl_buf);
		}
	}
}

/* Copies the command's output from the pty to ciprof's stdout, feeding the markers. */
static int read_pty(struct session *s)
{
	char buf[16384];
	ssize_t n;
	while ((n = read(s->pty_fd, buf, sizeof(buf))) > 0) {
		uint64_t t = now_ns();
		write_all(STDOUT_FILENO, buf, (size_t)n);
		markers_feed(&s->markers, &s->attrib, buf, (size_t)n, t);
	}
	/* EIO: every holder of the slave side closed it. */
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) ? -1 : 0;
}

/*
 * When the command is ctest, asks the same ctest for its tests (--show-only=json-v1), so
 * that each test process can be recognised by its command line. Failure only costs the
 * attribution: a warning.
 */
static void ctest_prepare(struct session *s, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	if (strcmp(base, "ctest"))
		return;
	size_t argc = 0;
	while (argv[argc])
		argc++;
	char **args = xcalloc(argc + 2, sizeof(char *));
	for (size_t i = 0; i < argc; i++)
		args[i] = argv[i];
	args[argc] = "--show-only=json-v1";
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		free(args);
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], STDOUT_FILENO);
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, STDERR_FILENO);
		execvp(args[0], args);
		_exit(127);
	}
	close(pfd[1]);
	struct strbuf out = STRBUF_INIT;
	out.max = 64 << 20;
	char buf[65536];
	ssize_t n;
	while (pid > 0 && ((n = read(pfd[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)))
		if (n > 0 && strbuf_add(&out, buf, (size_t)n) < 0)
			break;
	close(pfd[0]);
	int status = 0;
	if (pid > 0)
		waitpid(pid, &status, 0);
	if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		log_warn("'ctest --show-only=json-v1' failed: CTest tests will not be named");
	else if (attrib_ctest_load(&s->attrib, out.buf, out.len, "ctest --show-only=json-v1") < 0)
		log_warn("%s: CTest tests will not be named", cp_last_error());
	else
		log_verbose("ctest lists %zu tests", s->attrib.nctest);
	strbuf_release(&out);
	free(args);
}

/* Whether fds a and b are the same open file (stdout and stderr to one terminal or file). */
static int same_file(int a, int b)
{
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* Opens a pty whose slave passes bytes through unchanged (no \n -> \r\n), sized like ours. */
static int open_pty(int *master, int *slave)
{
	*master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*master < 0 || grantpt(*master) < 0 || unlockpt(*master) < 0)
		return -1;
	const char *name = ptsname(*master);
	*slave = name ? open(name, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
	if (*slave < 0)
		return -1;
	struct termios tio;
	if (tcgetattr(*slave, &tio) == 0) {
		tio.c_oflag &= ~(tcflag_t)OPOST;
		tio.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(*slave, TCSANOW, &tio);
	}
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
		ioctl(*slave, TIOCSWINSZ, &ws);
	fcntl(*master, F_SETFL, fcntl(*master, F_GETFL) | O_NONBLOCK);
	return 0;
}

int perf_backend_run(struct profile **out, const struct runner_opts *opts)
{
	struct session s;
	memset(&s, 0, sizeof(s));
	*out = NULL;
	int go[2] = {-1, -1}, err[2] = {-1, -1}, ctl[2] = {-1, -1}, sfd = -1, slave = -1;
	int ret = 0;
	pid_t child = -1;
	sigset_t mask, old_mask;
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe;
	int use_pty = opts->pty > 0 || (opts->pty == 0 && isatty(STDOUT_FILENO));

	s.opts = opts;
	s.ctl_fd = -1;
	s.pty_fd = -1;
	strbuf_init(&s.ctl_buf, 4096);
	s.prof = profile_new();
	proctree_init(&s.tree);
	aggregator_init(&s.agg, s.prof);
	attrib_init(&s.attrib, s.prof);
	markers_init(&s.markers);
	ctest_prepare(&s, opts->argv);

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &old_mask);
	/* A closed stdout must not kill ciprof while it copies the command's output. */
	sigaction(SIGPIPE, &ign, &old_pipe);
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(ctl, O_CLOEXEC) < 0) {
		ret = cp_error_errno("cannot create pipes");
		goto out_mask;
	}
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		ret = cp_error_errno("cannot create a signalfd");
		goto out_mask;
	}
	if (use_pty && open_pty(&s.pty_fd, &slave) < 0) {
		log_warn("cannot open a pseudo-terminal (%s): output markers are off",
		         strerror(errno));
		if (s.pty_fd >= 0)
			close(s.pty_fd);
		s.pty_fd = -1;
		use_pty = 0;
	}

	fflush(NULL);
	child = fork();
	if (child < 0) {
		ret = cp_error_errno("cannot fork");
		goto out_mask;
	}
	if (child == 0) {
		/* The command: wait for the sampler to be ready, then exec. */
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		sigaction(SIGPIPE, &old_pipe, NULL);
		close(go[1]);
		close(err[0]);
		close(ctl[0]);
		/* The control pipe's write end stays open across exec, for the marks. */
		fcntl(ctl[1], F_SETFD, 0);
		char fdnum[16];
		snprintf(fdnum, sizeof(fdnum), "%d", ctl[1]);
		setenv("CIPROF_CONTROL_FD", fdnum, 1);
		if (slave >= 0) {
			int both = same_file(STDOUT_FILENO, STDERR_FILENO) || isatty(STDERR_FILENO);
			dup2(slave, STDOUT_FILENO);
			if (both)
				dup2(slave, STDERR_FILENO);
		}
		char c;
		ssize_t n;
		do
			n = read(go[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			_exit(127); /* the sampler gave up */
		execvp(opts->argv[0], opts->argv);
		int e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	go[0] = -1;
	close(err[1]);
	err[1] = -1;
	close(ctl[1]);
	ctl[1] = -1;
	if (slave >= 0) {
		close(slave);
		slave = -1;
	}
	s.ctl_fd = ctl[0];
	ctl[0] = -1;
	fcntl(s.ctl_fd, F_SETFL, fcntl(s.ctl_fd, F_GETFL) | O_NONBLOCK);
	proctree_get(&s.tree, child, basename_of(opts->argv[0]));

	ret = open_rings(&s, child, opts);
	if (ret < 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		goto out;
	}

	double start = now_seconds();
	if (write(go[1], "g", 1) != 1) {
		ret = cp_error_errno("cannot release the command");
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		goto out;
	}
	close(go[1]);
	go[1] = -1;
	int exec_errno = 0;
	ssize_t n;
	do
		n = read(err[0], &exec_errno, sizeof(exec_errno));
	while (n < 0 && errno == EINTR);
	int status = 0;
	if (n == (ssize_t)sizeof(exec_errno)) {
		waitpid(child, &status, 0);
		s.prof->stats.exit_status = 127;
		cp_error("cannot run '%s': %s", opts->argv[0], strerror(exec_errno));
		ret = RUNNER_ERR_EXEC;
		goto finish;
	}

	/* rings..., signalfd, control pipe, pty */
	size_t nfds = s.nrings + 3;
	struct pollfd *pfds = xcalloc(nfds, sizeof(*pfds));
	for (size_t i = 0; i < s.nrings; i++)
		pfds[i] = (struct pollfd){s.rings[i].fd, POLLIN, 0};
	pfds[s.nrings] = (struct pollfd){sfd, POLLIN, 0};
	pfds[s.nrings + 1] = (struct pollfd){s.ctl_fd, POLLIN, 0};
	pfds[s.nrings + 2] = (struct pollfd){s.pty_fd, POLLIN, 0};
	int done = 0;
	while (!done) {
		int pr = poll(pfds, nfds, 100);
		if (pr < 0 && errno != EINTR) {
			log_warn("poll failed: %s", strerror(errno));
			usleep(10000);
		}
		struct signalfd_siginfo si;
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			/* A terminal's ^C already reached the whole foreground group, the command
			 * included; forward only signals sent to ciprof alone (kill, timeout). */
			if (si.ssi_code != SI_KERNEL) {
				log_verbose("forwarding signal %d to the command",
				            (int)si.ssi_signo);
				kill(child, (int)si.ssi_signo);
			}
		}
		/* Marks and output first: they must be known before the samples they cover. */
		if (pfds[s.nrings + 1].revents)
			read_control(&s);
		if (pfds[s.nrings + 2].revents && read_pty(&s) < 0)
			pfds[s.nrings + 2].fd = -1;
		if (pfds[s.nrings + 1].revents & POLLHUP)
			pfds[s.nrings + 1].fd = -1; /* every writer closed it */
		if (waitpid(child, &status, WNOHANG) == child)
			done = 1;
		for (size_t i = 0; i < s.nrings; i++)
			if (pfds[i].revents & (POLLHUP | POLLERR))
				pfds[i].fd = -1; /* the task is gone; still drained below */
		round_trip(&s);
	}
	free(pfds);
	s.prof->stats.exit_status = exit_status_of(status);
	s.prof->stats.wall_seconds = now_seconds() - start;

finish:
	/* Everything written so far is in the rings and pipes: read and process it all. */
	if (s.ctl_fd >= 0)
		read_control(&s);
	if (s.pty_fd >= 0) {
		read_pty(&s);
		markers_flush(&s.markers, &s.attrib, now_ns());
	}
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
out_mask:
	if (sfd >= 0) {
		/* Consume signals that raced with the command's end (a terminal's ^C reaches
		 * both): unblocking them now would kill ciprof before it writes the profile. */
		struct signalfd_siginfo si;
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			;
		close(sfd);
	}
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	for (int i = 0; i < 2; i++) {
		if (go[i] >= 0)
			close(go[i]);
		if (err[i] >= 0)
			close(err[i]);
		if (ctl[i] >= 0)
			close(ctl[i]);
	}
	if (slave >= 0)
		close(slave);
	if (s.ctl_fd >= 0)
		close(s.ctl_fd);
	if (s.pty_fd >= 0)
		close(s.pty_fd);
	strbuf_release(&s.ctl_buf);
	return ret;
}
