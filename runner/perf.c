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
#include "runner/cputime.h"
#include "runner/ctest.h"
#include "runner/launch.h"
#include "runner/markers.h"
#include "runner/perf_record.h"
#include "runner/proctree.h"
#include "runner/symbolize.h"
#include "runner/unwind.h"

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
/* --unwind dwarf rings hold about this many seconds of samples at --hz, up to MAX pages per
 * CPU and TOTAL bytes for all CPUs together (many-core machines). */
#define DWARF_RING_SECONDS   0.4
#define DWARF_RING_PAGES_MAX 2048
#define DWARF_RING_TOTAL     ((size_t)64 << 20)
/* Frame-pointer stacks: warn when at least this share of samples looks truncated. */
#define TRUNCATED_WARN_SHARE   0.30
#define TRUNCATED_WARN_SAMPLES 20

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
	struct ctest_watch ctest;
	struct pending *pend;
	size_t npend, pend_alloc;
	uint64_t seq;
	uint64_t prev_round_max; /* newest timestamp read before the current round */
	struct proctree tree;
	struct aggregator agg;
	struct cputime cpu;
	struct profile *prof;
	struct attrib attrib;
	struct markers markers;
	const struct runner_opts *opts;
	uint64_t samples, lost, throttled, bad_records;
	/* --unwind dwarf */
	struct unwinder *unw;
	struct unwind_map *umaps; /* the sampled process's maps, rebuilt per sample */
	size_t umaps_alloc;
	uint64_t dwarf_unwound, dwarf_fp_used, dwarf_no_regs, dwarf_stack_short;
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

/* The event to sample: type and config. cpu-clock counts nanoseconds; the hardware events
 * count instructions or cycles, 10^9/hz of them per sample too. Under CIPROF_TEST_PMU=standin
 * (tests on machines without a PMU) the software task-clock stands in for them. */
static void event_attr(struct perf_event_attr *attr, enum runner_event e)
{
	const char *sim = getenv("CIPROF_TEST_PMU");
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	if (e == RUNNER_EVENT_CPU_CLOCK)
		return;
	if (sim && !strcmp(sim, "standin")) {
		attr->config = PERF_COUNT_SW_TASK_CLOCK;
		return;
	}
	attr->type = PERF_TYPE_HARDWARE;
	attr->config =
	        e == RUNNER_EVENT_CYCLES ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_HW_INSTRUCTIONS;
}

int runner_event_probe(enum runner_event e)
{
	const char *sim = getenv("CIPROF_TEST_PMU");
	if (e != RUNNER_EVENT_CPU_CLOCK && sim && !strcmp(sim, "absent"))
		return cp_error("no hardware PMU (simulated by CIPROF_TEST_PMU=absent)");
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	event_attr(&attr, e);
	attr.disabled = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		if (e != RUNNER_EVENT_CPU_CLOCK &&
		    (err == ENOENT || err == EOPNOTSUPP || err == ENODEV || err == EINVAL))
			return cp_error("no hardware PMU: the kernel has no %s event here (%s)",
			                runner_event_name(e), strerror(err));
		return cp_error("perf_event_open(%s) failed: %s", runner_event_name(e),
		                strerror(err));
	}
	close(fd);
	return 0;
}

static void init_attr(struct perf_event_attr *attr, const struct runner_opts *opts,
                      size_t ring_bytes)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	event_attr(attr, opts->event);
	attr->sample_period = 1000000000ULL / (uint64_t)opts->hz;
	attr->sample_type = PERF_REC_SAMPLE_TYPE;
	if (opts->unwind == RUNNER_UNWIND_DWARF) {
		/* The registers and the top of the user stack, unwound with their CFI later;
		 * the kernel's frame-pointer chain stays as the fallback. */
		attr->sample_type = PERF_REC_SAMPLE_TYPE_DWARF;
		attr->sample_regs_user = UNWIND_PERF_REGS_MASK;
		attr->sample_stack_user = (uint32_t)opts->stack_size;
	} else if (opts->unwind == RUNNER_UNWIND_FP) {
		/* The same with a small copy: enough for the leaf's return address, which a
		 * frameless leaf's frame-pointer chain lacks (unwinder_fix_leaf). */
		attr->sample_type = PERF_REC_SAMPLE_TYPE_DWARF;
		attr->sample_regs_user = UNWIND_PERF_REGS_MASK;
		attr->sample_stack_user = RUNNER_LEAF_STACK_SIZE;
	}
	attr->disabled = 1;
	attr->inherit = 1;
	attr->inherit_stat = 1; /* each task's own count, reported as it exits (cputime.h) */
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

/*
 * Data pages per ring when --ring-pages is not given. A --unwind dwarf sample carries the
 * stack copy (8 KiB by default), 40 times a frame-pointer one: its rings hold about 0.4 s of
 * samples of one CPU at --hz (999 Hz: 4 MiB), at most 64 MiB over all ncpus rings, never
 * less than the frame-pointer default; open_rings halves that back down when the
 * locked-memory budget refuses.
 */
static size_t default_ring_pages(const struct runner_opts *opts, size_t page, int ncpus)
{
	if (opts->unwind == RUNNER_UNWIND_FP_ONLY)
		return DEFAULT_RING_PAGES;
	size_t copy =
	        opts->unwind == RUNNER_UNWIND_DWARF ? opts->stack_size : RUNNER_LEAF_STACK_SIZE;
	double bytes = DWARF_RING_SECONDS * opts->hz * (double)(copy + 256);
	size_t cap = DWARF_RING_TOTAL / (size_t)(ncpus > 0 ? ncpus : 1) / page;
	size_t pages = DEFAULT_RING_PAGES;
	while (pages < DWARF_RING_PAGES_MAX && pages * 2 <= cap && (double)(pages * page) < bytes)
		pages *= 2;
	return pages;
}

/*
 * Opens one event per CPU and maps its ring of `pages` data pages. Returns 0; or 1 when a
 * mapping exceeded the locked-memory budget and the caller may retry smaller (everything
 * opened is left in s for close_rings); or a negative runner error, diagnosed.
 */
static int try_open_rings(struct session *s, pid_t child, const struct runner_opts *opts,
                          const int *cpus, int ncpus, size_t pages, size_t page)
{
	struct perf_event_attr attr;
	init_attr(&attr, opts, pages * page);
	s->rings = xcalloc((size_t)ncpus, sizeof(*s->rings));
	const char *deny = getenv("CIPROF_TEST_PERF_ERRNO"); /* test hook, see docs/run.md */
	for (int i = 0; i < ncpus; i++) {
		struct ring *r = &s->rings[s->nrings];
		r->fd = -1;
		r->cpu = cpus[i];
		if (deny && *deny) {
			errno = atoi(deny);
			return refused(errno, 0, pages * page);
		}
		r->fd = (int)syscall(SYS_perf_event_open, &attr, child, cpus[i], -1,
		                     PERF_FLAG_FD_CLOEXEC);
		if (r->fd < 0)
			return refused(errno, 0, pages * page);
		s->nrings++;
		r->map_len = (pages + 1) * page;
		r->base = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
		if (r->base == MAP_FAILED) {
			r->base = NULL;
			if ((errno == EPERM || errno == ENOMEM) && pages > 8 && !opts->ring_pages)
				return 1;
			return refused(errno, 1, pages * page);
		}
		r->meta = r->base;
		r->data = (unsigned char *)r->base + page;
		r->size = pages * page;
	}
	return 0;
}

static int open_rings(struct session *s, pid_t child, const struct runner_opts *opts)
{
	int *cpus;
	int ncpus = online_cpus(&cpus);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t want = opts->ring_pages ? opts->ring_pages : default_ring_pages(opts, page, ncpus);
	size_t pages = want;
	int ret;
	/* Over the locked-memory budget: every ring halved, down to 8 pages, all reopened so
	 * that they are the same size and their wakeup watermark fits them. */
	while ((ret = try_open_rings(s, child, opts, cpus, ncpus, pages, page)) == 1) {
		close_rings(s);
		pages /= 2;
	}
	free(cpus);
	if (ret < 0)
		return ret;
	log_debug("ring buffers: %zu pages (%zu KiB) per CPU", pages, pages * page / 1024);
	if (pages != want && opts->unwind == RUNNER_UNWIND_DWARF)
		log_warn(
		        "ring buffers reduced to %zu pages per CPU by the locked-memory budget: "
		        "they hold about %zu --unwind dwarf samples each, and at high --hz samples "
		        "may be lost; raise 'ulimit -l' or lower --stack-size",
		        pages, pages * page / (opts->stack_size + 256));
	else if (pages != want)
		log_warn("ring buffers reduced to %zu pages per CPU by the locked-memory budget; "
		         "at high --hz samples may be lost",
		         pages);
	return 0;
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

/*
 * The sample's user registers into regs, when it has them and a stack copy (a 32-bit
 * process's are not used); then p's mappings are known for its pc (a process whose mappings
 * predate sampling: resolving its pc reads /proc once). Returns 0, or -1 when there is
 * nothing to unwind with.
 */
static int sample_regs(struct session *s, struct proc *p, const struct perf_sample *smp,
                       struct unwind_regs *regs)
{
	if (smp->abi != PERF_SAMPLE_REGS_ABI_64 || !smp->stack_dyn)
		return -1;
	unwind_regs_from_perf(regs, UNWIND_PERF_REGS_MASK, smp->regs, smp->nregs);
	uint32_t dso;
	uint64_t off;
	proctree_resolve(&s->tree, p, regs->r[UNWIND_RIP], &dso, &off);
	return 0;
}

/* The unwinder's view of mapping m: its object's path only when it has CFI to read. */
static struct unwind_map unwind_map_of(const struct session *s, const struct map *m)
{
	const struct dso *d = &s->tree.dsos[m->dso];
	return (struct unwind_map){m->start, m->end, m->pgoff,
	                           d->kind == DSO_FILE || d->kind == DSO_VDSO ? d->path : NULL};
}

/*
 * --unwind dwarf: unwinds the sample's stack copy with the CFI of process p's objects into ips
 * (leaf first), falling back on (or continuing with) the kernel's frame-pointer chain fp[0..nfp)
 * where that gives more. The copy lives in the record and is not kept.
 */
static size_t dwarf_stack(struct session *s, struct proc *p, const struct perf_sample *smp,
                          const uint64_t *fp, size_t nfp, uint64_t *ips)
{
	struct unwind_regs regs;
	if (sample_regs(s, p, smp, &regs) < 0) {
		s->dwarf_no_regs++;
		memcpy(ips, fp, nfp * sizeof(*ips));
		return nfp;
	}
	if (p->as.n > s->umaps_alloc)
		ALLOC_GROW(s->umaps, p->as.n, s->umaps_alloc);
	for (size_t i = 0; i < p->as.n; i++)
		s->umaps[i] = unwind_map_of(s, &p->as.maps[i]);
	uint64_t dw[MAX_FRAMES];
	enum unwind_end end;
	size_t ndw =
	        unwinder_unwind(s->unw, s->umaps, p->as.n, &regs, smp->stack, regs.r[UNWIND_RSP],
	                        (size_t)smp->stack_dyn, dw, MAX_FRAMES, &end);
	s->dwarf_unwound++;
	int used_fp;
	size_t n = unwind_merge_fp(dw, ndw, fp, nfp, ips, MAX_FRAMES, &used_fp);
	s->dwarf_fp_used += used_fp;
	s->dwarf_stack_short += end == UNWIND_END_STACK && !used_fp;
	return n;
}

/*
 * --unwind fp: the kernel's chain fp[0..nfp) with the caller of a frameless leaf (or of a
 * prologue or epilogue) put back from the leaf's CFI and the sample's small stack copy.
 */
static size_t fp_stack(struct session *s, struct proc *p, const struct perf_sample *smp,
                       const uint64_t *fp, size_t nfp, uint64_t *ips)
{
	struct unwind_regs regs;
	if (!nfp || sample_regs(s, p, smp, &regs) < 0) {
		memcpy(ips, fp, nfp * sizeof(*ips));
		return nfp;
	}
	const struct map *m = addr_space_find(&p->as, regs.r[UNWIND_RIP]);
	struct unwind_map leaf = m ? unwind_map_of(s, m) : (struct unwind_map){0, 0, 0, NULL};
	return unwinder_fix_leaf(s->unw, leaf.path ? &leaf : NULL, &regs, smp->stack,
	                         regs.r[UNWIND_RSP], (size_t)smp->stack_dyn, fp, nfp, ips,
	                         MAX_FRAMES, NULL);
}

static void handle_sample(struct session *s, const void *rec, size_t len)
{
	struct perf_sample smp;
	int dwarf = s->opts->unwind == RUNNER_UNWIND_DWARF;
	int leaf = s->opts->unwind == RUNNER_UNWIND_FP;
	if ((dwarf || leaf ? perf_parse_sample_user(rec, len, UNWIND_PERF_REGS_MASK, &smp)
	                   : perf_parse_sample(rec, len, &smp)) < 0) {
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
	if (dwarf) {
		uint64_t fp[MAX_FRAMES];
		memcpy(fp, ips, n * sizeof(*ips));
		n = dwarf_stack(s, p, &smp, fp, n, ips);
	} else if (leaf) {
		uint64_t fp[MAX_FRAMES];
		memcpy(fp, ips, n * sizeof(*ips));
		n = fp_stack(s, p, &smp, fp, n, ips);
	}
	n = proctree_resolve_chain(&s->tree, p, ips, n, dsos, offsets);
	uint32_t process = profile_intern(s->prof, p->name);
	int weak;
	uint32_t test = attrib_sample(&s->attrib, (pid_t)smp.pid, (pid_t)smp.tid, smp.time, &weak);
	aggregator_add(&s->agg, test, weak, process, dsos, offsets, n, 1);
	cputime_sample(&s->cpu, (pid_t)smp.pid, (pid_t)smp.tid, test, weak, process, smp.period);
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
			/* Its test as it ends: its unsampled time goes there if it had no sample. */
			int weak;
			uint32_t test = attrib_sample(&s->attrib, (pid_t)t.pid, (pid_t)t.tid, t.time,
			                              &weak);
			struct proc *p = proctree_find(&s->tree, (pid_t)t.pid);
			cputime_exit(&s->cpu, (pid_t)t.pid, (pid_t)t.tid, test, weak,
			             profile_intern(s->prof, p ? p->name : "[unknown]"));
			proctree_exit(&s->tree, (pid_t)t.pid, (pid_t)t.tid);
			if (t.pid == t.tid)
				attrib_proc_exit(&s->attrib, (pid_t)t.pid);
		}
		break;
	}
	case PERF_RECORD_READ: {
		struct perf_read r;
		if (perf_parse_read(rec, len, &r) == 0)
			cputime_read(&s->cpu, (pid_t)r.pid, (pid_t)r.tid, r.value);
		else
			s->bad_records++;
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

/* CTest runs each test as its own process: its command line and working directory name it
 * (runner/ctest.h). Seen when the exec record is read, not when it is processed, so that /proc
 * still shows the process (short tests end quickly). */
static void ctest_record_seen(struct session *s, const void *rec, size_t len)
{
	const struct perf_event_header *h = rec;
	if (h->type == PERF_RECORD_COMM) {
		struct perf_comm c;
		if (perf_parse_comm(rec, len, &c) == 0 && c.exec && c.pid == c.tid)
			ctest_watch_exec(&s->ctest, (pid_t)c.pid, c.comm);
	} else if (h->type == PERF_RECORD_MMAP2 && s->ctest.ngone) {
		struct perf_mmap2 m;
		if (perf_parse_mmap2(rec, len, &m) == 0)
			ctest_watch_mmap(&s->ctest, (pid_t)m.pid, m.filename);
	}
}

/* Reads every complete record of every ring into the pending queue. */
static uint64_t drain_rings(struct session *s)
{
	uint64_t round_max = 0;
	size_t first_new = s->npend;
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
			uint64_t t = perf_record_time(copy, h->size);
			ALLOC_GROW(s->pend, s->npend + 1, s->pend_alloc);
			s->pend[s->npend++] = (struct pending){t, s->seq++, copy};
			if (t > round_max)
				round_max = t;
			tail += h->size;
		}
		__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
	}
	/* The new records in time order: a ctest's exec before its tests' on another CPU. */
	qsort(s->pend + first_new, s->npend - first_new, sizeof(*s->pend), pending_cmp);
	for (size_t i = first_new; i < s->npend; i++) {
		const struct perf_event_header *h = s->pend[i].rec;
		if (h->type == PERF_RECORD_COMM || h->type == PERF_RECORD_MMAP2)
			ctest_record_seen(s, h, h->size);
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
	/* While a ctest is asked for its tests, the records wait: its test processes started
	 * meanwhile are named when the answer comes. */
	if (!ctest_watch_poll(&s->ctest, 0))
		process_pending(s, s->prev_round_max);
	if (round_max > s->prev_round_max)
		s->prev_round_max = round_max;
}

/* ---- unwinding summaries ---- */

/* --unwind dwarf: what the unwinder did (-v), a warning when stack copies were too short; then
 * closes its sessions, so their files are not open while the symbolizer opens its own. */
static void finish_unwinding(struct session *s)
{
	if (!s->unw)
		return;
	const struct unwinder_stats *u = unwinder_stats(s->unw);
	if (s->opts->unwind == RUNNER_UNWIND_FP) {
		uint64_t all = 0;
		for (int i = 0; i < LEAF_FIX_NREASONS; i++)
			all += u->leaf[i];
		log_verbose("unwind: %llu frame-pointer stacks checked against the leaf's CFI in "
		            "%.3f s: caller already there %llu, inserted %llu, rebuilt from the "
		            "saved %%rbp %llu; no CFI at the pc %llu, return address beyond the "
		            "%d-byte copy %llu",
		            (unsigned long long)all, u->leaf_seconds,
		            (unsigned long long)u->leaf[LEAF_FIX_KEPT],
		            (unsigned long long)u->leaf[LEAF_FIX_INSERTED],
		            (unsigned long long)u->leaf[LEAF_FIX_REBUILT],
		            (unsigned long long)u->leaf[LEAF_FIX_NO_CFI], RUNNER_LEAF_STACK_SIZE,
		            (unsigned long long)u->leaf[LEAF_FIX_OUT_OF_COPY]);
		unwinder_free(s->unw);
		s->unw = NULL;
		return;
	}
	log_verbose("unwind: %llu samples unwound with DWARF in %.3f s (%.0f samples/s), %.1f "
	            "frames each, %llu address spaces (%llu objects, %llu unusable); stopped at "
	            "the outermost frame %llu, the end of the stack copy %llu, missing CFI %llu "
	            "times; frame-pointer chain used %llu times; %llu samples without registers",
	            (unsigned long long)u->unwinds, u->seconds,
	            u->seconds > 0 ? (double)u->unwinds / u->seconds : 0.0,
	            u->unwinds ? (double)u->frames / (double)u->unwinds : 0.0,
	            (unsigned long long)u->spaces_created, (unsigned long long)u->modules_reported,
	            (unsigned long long)u->modules_failed,
	            (unsigned long long)u->end[UNWIND_END_OUTERMOST],
	            (unsigned long long)u->end[UNWIND_END_STACK],
	            (unsigned long long)u->end[UNWIND_END_INCOMPLETE],
	            (unsigned long long)s->dwarf_fp_used, (unsigned long long)s->dwarf_no_regs);
	if (s->dwarf_unwound >= TRUNCATED_WARN_SAMPLES &&
	    (double)s->dwarf_stack_short >= 0.1 * (double)s->dwarf_unwound)
		log_warn("%.0f%% of stacks are deeper than the %zu-byte stack copy, so their outer "
		         "callers are missing: raise --stack-size (at most %d)",
		         100.0 * (double)s->dwarf_stack_short / (double)s->dwarf_unwound,
		         s->opts->stack_size, RUNNER_STACK_SIZE_MAX);
	unwinder_free(s->unw);
	s->unw = NULL;
}

/* --unwind fp: one warning when many stacks stop short of any entry point, the sign of code
 * built without frame pointers. */
static void warn_truncated(const struct session *s)
{
	if (s->opts->unwind == RUNNER_UNWIND_DWARF)
		return;
	struct unwind_truncation t;
	unwind_truncation(s->prof, &t);
	if (t.samples < TRUNCATED_WARN_SAMPLES ||
	    (double)t.truncated < TRUNCATED_WARN_SHARE * (double)t.samples)
		return;
	log_warn("%.0f%% of samples have call stacks that stop short of the program's entry point "
	         "(most end in %s): code built without frame pointers hides its callers; try "
	         "--unwind dwarf",
	         100.0 * (double)t.truncated / (double)t.samples, t.where);
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
	if (opts->unwind != RUNNER_UNWIND_FP_ONLY)
		s.unw = unwinder_new();
	attrib_init(&s.attrib, s.prof);
	aggregator_attach(&s.agg, &s.attrib);
	markers_init(&s.markers);
	launch_init(&l, &s.attrib, &s.markers);
	ctest_watch_init(&s.ctest, &s.attrib);
	ctest_watch_command(&s.ctest, opts->argv);

	ret = launch_start(&l, opts, NULL);
	if (ret < 0)
		goto out;
	s.ctest.root = l.child;
	proctree_get(&s.tree, l.child, launch_basename(opts->argv[0]));

	ret = open_rings(&s, l.child, opts);
	if (ret < 0) {
		launch_abort(&l);
		goto out;
	}
	cputime_init(&s.cpu, &s.agg, 1000000000ULL / (uint64_t)opts->hz, (unsigned)s.nrings);

	ret = launch_go(&l, opts->argv[0]);
	if (ret == RUNNER_ERR_EXEC) {
		s.prof->stats.exit_status = l.exec_status;
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
		/* 25 ms: execs are seen (and CTest processes named) while /proc still shows them. */
		int pr = poll(pfds, nfds, 25);
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
	ctest_watch_poll(&s.ctest, 1);
	process_pending(&s, UINT64_MAX);
	uint64_t total_ns = 0;
	for (size_t i = 0; i < s.nrings; i++) {
		uint64_t v;
		if (read(s.rings[i].fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
			total_ns += v; /* the whole tree's CPU time on that CPU */
	}
	if (s.cpu.agg)
		cputime_finish(&s.cpu, l.child, total_ns);
	finish_unwinding(&s);
	{
		struct symbolizer *sym = symbolizer_new();
		symbolizer_set_separate_lines(sym, 0); /* file names of libc & co: unused */
		aggregator_symbolize(&s.agg, &s.tree, sym, opts->rules);
		symbolizer_free(sym);
	}
	warn_truncated(&s);
	struct profile_stats *st = &s.prof->stats;
	st->samples = s.samples;
	st->lost = s.lost;
	st->processes = s.tree.processes_seen;
	st->threads = s.tree.threads_seen;
	st->hz = opts->hz;
	st->period_ns = 1000000000ULL / (uint64_t)opts->hz;
	st->cpu_seconds = (double)(s.period_ns_sum + s.cpu.unsampled_ns) / 1e9;
	st->unsampled_seconds = (double)s.cpu.unsampled_ns / 1e9;
	if (s.throttled)
		log_warn("the kernel throttled sampling %llu times: lower --hz",
		         (unsigned long long)s.throttled);
	if (s.bad_records)
		log_warn("%llu malformed perf records were skipped",
		         (unsigned long long)s.bad_records);
	attrib_warn(&s.attrib);
	*out = s.prof;
	s.prof = NULL;
out:
	close_rings(&s);
	for (size_t i = 0; i < s.npend; i++)
		free(s.pend[i].rec);
	free(s.pend);
	ctest_watch_release(&s.ctest);
	cputime_release(&s.cpu);
	aggregator_release(&s.agg);
	unwinder_free(s.unw);
	free(s.umaps);
	proctree_release(&s.tree);
	attrib_release(&s.attrib);
	markers_release(&s.markers);
	profile_free(s.prof);
	launch_release(&l);
	return ret;
}
