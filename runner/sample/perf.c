/* The perf backend, modelled on `perf record -- CMD`: fork the command behind a cork pipe,
 * open one cpu-clock event per online CPU on it (inherit, enable_on_exec, exclude_kernel),
 * and map one ring buffer per CPU. An event source of the runner (backend.h): each round it
 * drains the rings into the runner's event queue, which processes records from different CPUs
 * in timestamp order, as perf does; samples are unwound here when the runner processes them. */
#include "runner/sample/perf.h"
#include "common/error.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "runner/backend.h"
#include "runner/launch.h"
#include "runner/sample/perf_record.h"
#include "runner/attribution/proctree.h"
#include "runner/sample/unwind.h"

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
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* A ring with SILENT_READS fewer READs than another (and nothing lost) is one the kernel
 * stopped writing to; READs stamped within READ_GRACE_NS of the final round are not
 * counted (perf_read_rings). */
#define SILENT_READS       3
#define READ_GRACE_NS      1000000ULL
#define MAX_FRAMES         256
#define DEFAULT_RING_PAGES 128 /* 512 KiB per CPU: fits the default perf_event_mlock_kb */
/* --unwind dwarf rings hold about this many seconds of samples at --hz, up to MAX pages per
 * CPU and TOTAL bytes for all CPUs together (many-core machines). */
#define DWARF_RING_SECONDS   0.4
#define DWARF_RING_PAGES_MAX 2048
#define DWARF_RING_TOTAL     ((size_t)64 << 20)
struct ring {
	int fd;
	int cpu;
	void *base;
	size_t map_len;
	struct perf_event_mmap_page *meta;
	unsigned char *data;
	uint64_t size;
	/* records read, by kind: samples, FORKs, EXITs, COMMs, and their bytes (-vv at the end:
	 * a ring that fell silent while the others went on names its CPU) */
	uint64_t nsample, nfork, nexit, ncomm, nbytes, nrecords;
	/* READs (each task that exits sends one to every CPU's ring, inherit_stat) and samples
	 * lost (LOST records): a ring with fewer READs than another, none lost, is one the
	 * kernel stopped writing to (perf_finish). */
	uint64_t nread, nlost;
	/* The event's count (CPU time on that CPU) when a round last found records in the ring:
	 * what it counts after that, to the end, the ring sent nothing of. */
	uint64_t heard_ns;
};

struct session {
	struct runner_session *rs; /* borrowed: the run this backend feeds */
	struct ring *rings;
	size_t nrings;
	/* Doorbells: one dummy event per CPU, in the group of that CPU's sampling event, whose
	 * one-page ring wakes ciprof at every exec once armed (open_bell, arm_bells), so a short
	 * test's command line is read while /proc still has it. bells[i] is rings[i]'s. */
	struct ring *bells;
	size_t nbells;
	int bells_refused, bells_armed;
	uint64_t bell_rings;
	uint64_t bell_ns; /* what the doorbells counted: CPU time moved to them (perf_finish) */
	const struct runner_opts *opts;
	uint64_t throttled, bad_records;
	/* CIPROF_TEST_SILENT_RING=K (a test hook, docs/run.md): the first ring delivers its first
	 * K records only, as a ring the kernel stopped writing to (0: off). */
	uint64_t silent_after;
	/* At the final round: READs stamped from then on are not counted in ring.nread. */
	uint64_t reads_before;
	/* --unwind dwarf */
	struct unwinder *unw;
	struct unwind_map *umaps; /* the sampled process's maps, rebuilt per sample */
	size_t umaps_alloc;
	uint64_t dwarf_unwound, dwarf_fp_used, dwarf_no_regs, dwarf_stack_short;
	/* Deep stacks: the kernel's chain stops at kernel.perf_event_max_stack (max_stack, 0
	 * when unknown), ciprof's stacks at MAX_FRAMES. Of the samples (stacks), how many had
	 * their kernel chain at that limit (at_kernel_max), how many ended at ciprof's (at_cap). */
	long max_stack;
	uint64_t stacks, at_kernel_max, at_cap;
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

static int refused_killed(void);

int perf_syscall_kills(void)
{
	int seccomp, privileged;
	read_status(&seccomp, &privileged);
	if (seccomp != 2)
		return 0;
	pid_t pid = fork();
	if (pid < 0)
		return 0; /* unknown: the real call will tell */
	if (pid == 0) {
		/* SECCOMP_RET_TRAP sends SIGSYS, which must kill, without a core file. */
		struct rlimit no_core = {0, 0};
		setrlimit(RLIMIT_CORE, &no_core);
		signal(SIGSYS, SIG_DFL);
		sigset_t all;
		sigemptyset(&all);
		sigaddset(&all, SIGSYS);
		sigprocmask(SIG_UNBLOCK, &all, NULL);
		/* A zero-sized attr: the filter acts before the kernel looks (EINVAL if none). */
		struct perf_event_attr attr;
		memset(&attr, 0, sizeof(attr));
		syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
		_exit(0);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 0;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS;
}

static struct perf_refusal last_refusal;

void perf_last_refusal(struct perf_refusal *out)
{
	*out = last_refusal;
}

/* The refusal of a filter that kills its caller: the probe's child died of SIGSYS. */
static int refused_killed(void)
{
	int seccomp, privileged;
	read_status(&seccomp, &privileged);
	last_refusal = (struct perf_refusal){ENOSYS, -100, seccomp, privileged, 0, 1};
	cp_error("perf_event_open is forbidden by a seccomp filter that kills its caller "
	         "(SIGSYS, as systemd's SystemCallFilter= and SECCOMP_RET_KILL do). Allow "
	         "perf_event_open in the filter (systemd: SystemCallFilter=perf_event_open, or "
	         "drop the filter; Docker: '--security-opt seccomp=unconfined'). Without "
	         "perf_event_open, --backend auto (the default) samples with the LD_PRELOAD "
	         "backend instead (docs/preload.md).");
	return RUNNER_ERR_REFUSED;
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
	last_refusal = (struct perf_refusal){err, paranoid, seccomp, privileged, in_mmap, 0};
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
	if (perf_syscall_kills())
		return refused_killed(); /* the same diagnosis as a run's */
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

static void unmap_rings(struct ring *rings, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (rings[i].base)
			munmap(rings[i].base, rings[i].map_len);
		if (rings[i].fd >= 0)
			close(rings[i].fd);
	}
	free(rings);
}

static void close_rings(struct session *s)
{
	unmap_rings(s->rings, s->nrings);
	s->rings = NULL;
	s->nrings = 0;
}

static void close_bells(struct session *s)
{
	unmap_rings(s->bells, s->nbells);
	s->bells = NULL;
	s->nbells = 0;
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
 * The exec doorbells. The sampling rings wake ciprof only when a quarter full, so it reads
 * them every round (25 ms); a test process that ends sooner, or while ciprof waits for a
 * CPU, is gone from /proc before its command line, which names its CTest test, is read.
 * So each CPU's sampling event has a dummy event in its group (no samples, inherited with
 * it) that writes only COMM records, at each exec, into a one-page ring that wakes ciprof at
 * every record: the round that follows reads the exec from the sampling ring at once.
 *
 * They are opened on the command with its sampling events, each right after its CPU's, and
 * never on a process later: the kernel swaps a task's perf context with a cloned one's at a
 * context switch instead of rescheduling the events (parent and child alike), and then
 * swaps the inherit_stat counts pairwise by the order of the contexts' event lists. A clone
 * lists its events as inheritance added them (group by group, by CPU); the command's context
 * lists them as they were opened. Dummy events opened after all the sampling events (or on a
 * ctest process later, added to its cloned context) put the lists out of step, and the
 * counts went to other events and tasks: a test's exact CPU time came out 0.15-0.3 s off
 * (test_attr_ctest bash-c, 4 of 40 runs with a CPU hog; test_perf_swap.sh).
 *
 * They ring from the command's start when the command is ctest or mentions it (`sh -c "cd
 * DIR && ctest -j2"`); otherwise they are opened disabled and armed (enabled with every copy
 * the command's processes inherited) when ciprof first sees a ctest that runs tests: a
 * wake-up per exec costs an exec loop about a tenth of its wall time (bench/ab/bell.sh), so
 * a command without ctest never rings. Optional: when the kernel or the locked-memory budget
 * refuses, ciprof keeps to its rounds. CIPROF_TEST_NO_BELL (a test hook, docs/run.md) goes
 * without them.
 */
static void open_bell(struct session *s, pid_t child, size_t i, size_t page)
{
	if (s->bells_refused)
		return;
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.disabled = !s->bells_armed;
	attr.inherit = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.comm = 1;
	attr.comm_exec = 1;
	attr.watermark = 1;
	attr.wakeup_watermark = 1; /* every record */
	attr.use_clockid = 1;      /* a group's events share their clock */
	attr.clockid = CLOCK_MONOTONIC;
	struct ring *r = &s->bells[i];
	memset(r, 0, sizeof(*r));
	r->cpu = s->rings[i].cpu;
	r->fd = (int)syscall(SYS_perf_event_open, &attr, child, r->cpu, s->rings[i].fd,
	                     PERF_FLAG_FD_CLOEXEC);
	if (r->fd >= 0) {
		r->map_len = 2 * page;
		r->base = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
		if (r->base != MAP_FAILED) {
			r->meta = r->base;
			r->data = (unsigned char *)r->base + page;
			r->size = page;
			s->nbells = i + 1;
			return;
		}
		r->base = NULL;
	}
	int err = errno;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	close_bells(s);
	s->bells_refused = 1;
	log_debug("no exec doorbells (%s): execs are seen at the next %d ms round", strerror(err),
	          perf_backend_ops.round_ms);
}

/* Arms the doorbells, opened disabled, for a ctest process seen running tests: the command's
 * events and every copy its processes inherited ring from now on. */
static void arm_bells(struct session *s, pid_t ctest)
{
	if (s->bells_armed || !s->nbells)
		return;
	s->bells_armed = 1;
	for (size_t i = 0; i < s->nbells; i++)
		if (ioctl(s->bells[i].fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
			log_debug("exec doorbell of CPU %d: cannot arm it (%s)", s->bells[i].cpu,
			          strerror(errno));
	log_debug("exec doorbells on: ctest process %d runs tests", (int)ctest);
}

/*
 * Opens one event per CPU and maps its ring of `pages` data pages, each followed by its
 * doorbell (open_bell). Returns 0; or 1 when a mapping exceeded the locked-memory budget and
 * the caller may retry smaller (everything opened is left in s for close_rings and
 * close_bells); or a negative runner error, diagnosed.
 */
static int try_open_rings(struct session *s, pid_t child, const struct runner_opts *opts,
                          const int *cpus, int ncpus, size_t pages, size_t page)
{
	struct perf_event_attr attr;
	init_attr(&attr, opts, pages * page);
	s->rings = xcalloc((size_t)ncpus, sizeof(*s->rings));
	if (!s->bells_refused)
		s->bells = xcalloc((size_t)ncpus, sizeof(*s->bells));
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
		/* Its doorbell now, before the next CPU's event: the command's context then lists
		 * its events in the order its children inherit them. */
		open_bell(s, child, (size_t)i, page);
	}
	return 0;
}

/* A command that mentions ctest (`sh -c "cd DIR && ctest -j2"`, as the CI templates' A/B
 * base runs) has the doorbells armed from its start, so the ctest's own exec is read at once
 * and not at the next round, by when a short ctest may have ended. */
static int mentions_ctest(char *const *argv)
{
	for (size_t i = 0; argv[i]; i++)
		if (strstr(argv[i], "ctest"))
			return 1;
	return 0;
}

/* Empties the doorbells' rings (their records are the sampling rings' COMMs again). */
static void clear_bells(struct session *s)
{
	for (size_t i = 0; i < s->nbells; i++) {
		struct ring *r = &s->bells[i];
		uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
		if (head != r->meta->data_tail)
			s->bell_rings++;
		__atomic_store_n(&r->meta->data_tail, head, __ATOMIC_RELEASE);
	}
}

static int open_rings(struct session *s, pid_t child, const struct runner_opts *opts)
{
	if (perf_syscall_kills())
		return refused_killed();
	int *cpus;
	int ncpus = online_cpus(&cpus);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t want = opts->ring_pages ? opts->ring_pages : default_ring_pages(opts, page, ncpus);
	size_t pages = want;
	int ret;
	/* Over the locked-memory budget: every ring halved, down to 8 pages, all reopened so
	 * that they are the same size and their wakeup watermark fits them. */
	while ((ret = try_open_rings(s, child, opts, cpus, ncpus, pages, page)) == 1) {
		close_bells(s);
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
	proctree_resolve(&s->rs->tree, p, regs->r[UNWIND_RIP], &dso, &off);
	return 0;
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
		s->umaps[i] = runner_unwind_map(s->rs, &p->as.maps[i]);
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
	struct unwind_map leaf =
	        m ? runner_unwind_map(s->rs, m) : (struct unwind_map){0, 0, 0, NULL};
	return unwinder_fix_leaf(s->unw, leaf.path ? &leaf : NULL, &regs, smp->stack,
	                         regs.r[UNWIND_RSP], (size_t)smp->stack_dyn, fp, nfp, ips,
	                         MAX_FRAMES, NULL);
}

/* The runner's sample op: the record's process, and its user stack (the kernel's chain, its
 * leaf's caller put back under --unwind fp, unwound with DWARF under --unwind dwarf). */
static long perf_sample(void *be, struct runner_session *rs, const struct run_event *ev,
                        struct proc **pp, uint64_t *ips, size_t max, uint64_t *weight, uint64_t *ns)
{
	struct session *s = be;
	struct perf_sample smp;
	int dwarf = s->opts->unwind == RUNNER_UNWIND_DWARF;
	int leaf = s->opts->unwind == RUNNER_UNWIND_FP;
	if ((dwarf || leaf ? perf_parse_sample_user(ev->data, ev->len, UNWIND_PERF_REGS_MASK, &smp)
	                   : perf_parse_sample(ev->data, ev->len, &smp)) < 0) {
		s->bad_records++;
		return -1;
	}
	struct proc *p = proctree_find(&rs->tree, (pid_t)smp.pid);
	if (!p) {
		char name[64];
		p = proctree_get(&rs->tree, (pid_t)smp.pid,
		                 proc_name_guess((pid_t)smp.pid, name, sizeof(name)));
	}
	if (max > MAX_FRAMES)
		max = MAX_FRAMES;
	size_t n = perf_user_callchain(&smp, ips, max);
	size_t nkernel = n;
	if (dwarf) {
		uint64_t fp[MAX_FRAMES];
		memcpy(fp, ips, n * sizeof(*ips));
		n = dwarf_stack(s, p, &smp, fp, n, ips);
	} else if (leaf) {
		uint64_t fp[MAX_FRAMES];
		memcpy(fp, ips, n * sizeof(*ips));
		n = fp_stack(s, p, &smp, fp, n, ips);
	}
	/* A stack at a depth limit: ciprof's, or the kernel's chain when the stack is that chain
	 * (its leaf's caller put back at most), not a longer DWARF unwind. */
	s->stacks++;
	if (n >= MAX_FRAMES)
		s->at_cap++;
	else if (s->max_stack > 0 && nkernel >= (size_t)s->max_stack && n <= nkernel + 1)
		s->at_kernel_max++;
	*pp = p;
	*weight = 1;
	*ns = smp.period;
	return (long)n;
}

/*
 * One record into the runner's queue as an event (samples as themselves, decoded by
 * perf_sample when processed); lost and throttled samples counted. CTest runs each test as its
 * own process: its command line and working directory name it (runner/attribution/ctest.h), so an
 * exec is looked at as it is read, while /proc still shows the process (short tests end quickly).
 */
static void queue_record(struct session *s, struct ring *ring, const struct perf_event_header *h)
{
	struct runner_session *rs = s->rs;
	size_t len = h->size;
	struct run_event ev;
	memset(&ev, 0, sizeof(ev));
	switch (h->type) {
	case PERF_RECORD_SAMPLE: {
		struct perf_sample smp;
		if (perf_parse_sample(h, len, &smp) < 0) {
			s->bad_records++;
			return;
		}
		ev.kind = RUN_EV_SAMPLE;
		ev.time = smp.time;
		ev.pid = (pid_t)smp.pid;
		ev.tid = (pid_t)smp.tid;
		ev.data = xmalloc(len);
		memcpy(ev.data, h, len);
		ev.len = len;
		break;
	}
	case PERF_RECORD_MMAP2: {
		struct perf_mmap2 m;
		if (perf_parse_mmap2(h, len, &m) < 0) {
			s->bad_records++;
			return;
		}
		ev.kind = RUN_EV_MMAP;
		ev.time = m.id.time;
		ev.pid = (pid_t)m.pid;
		ev.tid = (pid_t)m.tid;
		ev.u.mmap.addr = m.addr;
		ev.u.mmap.len = m.len;
		ev.u.mmap.pgoff = m.pgoff;
		ev.data = xstrdup(m.filename);
		break;
	}
	case PERF_RECORD_COMM: {
		struct perf_comm c;
		if (perf_parse_comm(h, len, &c) < 0) {
			s->bad_records++;
			return;
		}
		ev.kind = RUN_EV_COMM;
		ev.time = c.id.time;
		ev.pid = (pid_t)c.pid;
		ev.tid = (pid_t)c.tid;
		ev.u.comm.exec = c.exec;
		ev.data = xstrdup(c.comm);
		break;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		struct perf_task t;
		if (perf_parse_task(h, len, &t) < 0) {
			s->bad_records++;
			return;
		}
		ev.kind = h->type == PERF_RECORD_FORK ? RUN_EV_FORK : RUN_EV_EXIT;
		ev.time = t.time;
		ev.pid = (pid_t)t.pid;
		ev.tid = (pid_t)t.tid;
		ev.u.fork.ppid = (pid_t)t.ppid;
		ev.u.fork.ptid = (pid_t)t.ptid;
		break;
	}
	case PERF_RECORD_READ: {
		struct perf_read r;
		if (perf_parse_read(h, len, &r) < 0) {
			s->bad_records++;
			return;
		}
		ev.kind = RUN_EV_READ;
		ev.time = r.id.time;
		if (!s->reads_before || r.id.time < s->reads_before)
			ring->nread++;
		ev.pid = (pid_t)r.pid;
		ev.tid = (pid_t)r.tid;
		ev.u.read.value = r.value;
		break;
	}
	case PERF_RECORD_LOST: {
		struct perf_lost l;
		if (perf_parse_lost(h, len, &l) == 0) {
			rs->lost += l.lost;
			ring->nlost += l.lost;
		}
		return;
	}
	case PERF_RECORD_THROTTLE:
		s->throttled++;
		return;
	default:
		return;
	}
	evqueue_push(&rs->queue, &ev);
}

/* The runner's read op: every complete record of every ring into the queue. */
static void perf_read_rings(void *be, struct runner_session *rs, int final)
{
	struct session *s = be;
	uint64_t first_new = rs->queue.seq;
	if (final) {
		/* Every task of the run that exited did so before now: their READs are in every
		 * ring. A process outliving the command may exit while the rings are read, its
		 * READs in some rings and not yet in others; such READs are not counted. */
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		s->reads_before = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec -
		                  READ_GRACE_NS;
	}
	clear_bells(s); /* first: a later exec rings again */
	for (size_t i = 0; i < s->nrings; i++) {
		struct ring *r = &s->rings[i];
		uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
		uint64_t tail = r->meta->data_tail;
		int heard = 0;
		while (tail < head) {
			const struct perf_event_header *h = perf_ring_record(
			        r->data, r->size, tail, head, s->scratch, sizeof(s->scratch));
			if (!h) {
				s->bad_records++;
				tail = head; /* cannot resynchronise inside a corrupt ring */
				break;
			}
			tail += h->size;
			if (i == 0 && s->silent_after && r->nrecords >= s->silent_after)
				continue; /* the test hook's silent ring */
			queue_record(s, r, h);
			heard = 1;
			r->nrecords++;
			r->nbytes += h->size;
			r->nsample += h->type == PERF_RECORD_SAMPLE;
			r->nfork += h->type == PERF_RECORD_FORK;
			r->nexit += h->type == PERF_RECORD_EXIT;
			r->ncomm += h->type == PERF_RECORD_COMM;
		}
		__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
		uint64_t v;
		if (heard && read(r->fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
			r->heard_ns = v;
	}
	/* The new execs in time order: a ctest's exec before its tests' on another CPU. */
	evqueue_sort(&rs->queue);
	for (size_t i = 0; i < rs->queue.n; i++) {
		const struct run_event *ev = &rs->queue.ev[i];
		if (ev->seq < first_new)
			continue;
		if (ev->kind == RUN_EV_COMM && ev->u.comm.exec && ev->pid == ev->tid)
			ctest_watch_exec(&rs->ctest, ev->pid, ev->data, ev->time);
		else if (ev->kind == RUN_EV_MMAP && (rs->ctest.ngone || rs->ctest.npend))
			ctest_watch_mmap(&rs->ctest, ev->pid, ev->data);
	}
	ctest_watch_retry(&rs->ctest, final);
	if (rs->ctest.tests_ctest)
		arm_bells(s, rs->ctest.tests_ctest);
}

/* ---- unwinding summaries ---- */

/* Whether most stacks, or most of the short ones (of `short_ones` samples), end at a depth
 * limit: the kernel's perf_event_max_stack or ciprof's MAX_FRAMES. */
static int deep_share(const struct session *s, uint64_t short_ones)
{
	uint64_t deep = s->at_kernel_max + s->at_cap;
	return deep >= TRUNCATED_WARN_SAMPLES && deep * 2 >= short_ones;
}

/* One warning that stacks are deeper than the limit they stop at (deep recursion), naming it. */
static void warn_deep(const struct session *s)
{
	if (!deep_share(s, (uint64_t)(TRUNCATED_WARN_SHARE * (double)s->stacks)))
		return;
	int kernel = s->at_kernel_max >= s->at_cap;
	uint64_t deep = kernel ? s->at_kernel_max : s->at_cap;
	if (kernel)
		log_warn("%.0f%% of samples have call stacks deeper than the kernel's limit of %ld "
		         "frames (kernel.perf_event_max_stack), so their outer callers are "
		         "missing; raise it, e.g. 'sudo sysctl kernel.perf_event_max_stack=%d' "
		         "(ciprof keeps at most %d frames), or use --unwind dwarf",
		         100.0 * (double)deep / (double)s->stacks, s->max_stack, MAX_FRAMES,
		         MAX_FRAMES);
	else
		log_warn("%.0f%% of samples have call stacks deeper than ciprof's limit of %d "
		         "frames, so their outer callers are missing (deep recursion)",
		         100.0 * (double)deep / (double)s->stacks, MAX_FRAMES);
}

/* --unwind dwarf: what the unwinder did (-v), a warning when stack copies were too short; then
 * closes its sessions, so their files are not open while the symbolizer opens its own. */
static void finish_unwinding(struct session *s)
{
	if (!s->unw)
		return;
	const struct unwinder_stats *u = unwinder_stats(s->unw);
	if (s->opts->unwind == RUNNER_UNWIND_FP) {
		unwinder_log_leaf(s->unw, RUNNER_LEAF_STACK_SIZE);
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
	warn_deep(s);
	unwinder_free(s->unw);
	s->unw = NULL;
}

/* --unwind fp: stacks cut at a depth limit are told apart here; the rest (stripped objects'
 * unnamed frames among them) is the shared stop-short warning (unwind_warn_truncated). */
static void warn_truncated(const struct session *s)
{
	if (s->opts->unwind == RUNNER_UNWIND_DWARF)
		return;
	struct unwind_truncation t;
	unwind_truncation(s->rs->prof, &t);
	if (t.samples < TRUNCATED_WARN_SAMPLES ||
	    (double)t.truncated < TRUNCATED_WARN_SHARE * (double)t.samples)
		return;
	/* Stacks cut at a depth limit (deep recursion), not by code without frame pointers. */
	if (deep_share(s, t.truncated)) {
		warn_deep(s);
		return;
	}
	unwind_warn_truncated(s->rs->prof, UNWIND_ADVICE_PERF);
}

/* ---- the runner's ops ---- */

/* Opens the events on the corked command and maps their rings; each task's own CPU time
 * comes back as it exits (inherit_stat), one READ per CPU event. */
static int perf_start(void *be, struct runner_session *rs)
{
	struct session *s = be;
	s->rs = rs;
	if (s->opts->unwind != RUNNER_UNWIND_FP_ONLY)
		s->unw = unwinder_new(rs->objs);
	proctree_get(&rs->tree, rs->child, launch_basename(s->opts->argv[0]));
	const char *off = getenv("CIPROF_TEST_NO_BELL");
	s->bells_refused = off && *off && strcmp(off, "0");
	s->bells_armed = rs->ctest.root_asked || mentions_ctest(s->opts->argv);
	int ret = open_rings(s, rs->child, s->opts); /* and the doorbells, corked */
	if (ret < 0)
		return ret;
	if (s->nbells && s->bells_armed)
		log_debug("exec doorbells on: the command (process %d) is or mentions ctest",
		          (int)rs->child);
	runner_exact_cpu(rs, (unsigned)s->nrings);
	return 0;
}

static size_t perf_pollfds(void *be, struct pollfd *pfds, size_t max)
{
	struct session *s = be;
	size_t n = 0;
	for (size_t i = 0; i < s->nrings; i++, n++)
		if (n < max)
			pfds[n] = (struct pollfd){s->rings[i].fd, POLLIN, 0};
	for (size_t i = 0; i < s->nbells; i++, n++)
		if (n < max)
			pfds[n] = (struct pollfd){s->bells[i].fd, POLLIN, 0};
	return n;
}

/* The whole tree's CPU time (each event's own count, summed over the CPUs); the unwinder's
 * summary. */
static uint64_t perf_finish(void *be, struct runner_session *rs)
{
	struct session *s = be;
	uint64_t total_ns = 0;
	uint64_t *after = xcalloc(s->nrings ? s->nrings : 1, sizeof(*after));
	for (size_t i = 0; i < s->nrings; i++) {
		const struct ring *r = &s->rings[i];
		uint64_t v = 0;
		if (read(r->fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
			total_ns += v; /* the whole tree's CPU time on that CPU */
		after[i] = v > r->heard_ns ? v - r->heard_ns : 0;
		log_debug("CPU %d: %.3f CPU-s counted, %.3f of them after its ring's last record; "
		          "%llu samples, %llu forks, %llu exits, %llu comms, %llu reads read (%llu "
		          "records, %llu KiB; %llu samples lost)",
		          r->cpu, (double)v / 1e9, (double)after[i] / 1e9,
		          (unsigned long long)r->nsample, (unsigned long long)r->nfork,
		          (unsigned long long)r->nexit, (unsigned long long)r->ncomm,
		          (unsigned long long)r->nread, (unsigned long long)r->nrecords,
		          (unsigned long long)(r->nbytes >> 10), (unsigned long long)r->nlost);
	}
	/*
	 * A ring the kernel stopped writing to (seen once in some hundreds of runs: docs/run.md,
	 * "Limits"): the tasks that exit afterwards send their READ to every other ring but not to
	 * it, and whatever runs on its CPU sends nothing at all, while its event counts on. Its
	 * silence is the CPU time counted there after its last record (at least 1 ms, the tag's
	 * unit, so that the run is tagged). A ring that overflowed (LOST records) lacks records
	 * too: that is reported as samples lost.
	 */
	uint64_t most = 0;
	for (size_t i = 0; i < s->nrings; i++)
		if (s->rings[i].nread > most)
			most = s->rings[i].nread;
	for (size_t i = 0; i < s->nrings; i++) {
		const struct ring *r = &s->rings[i];
		if (r->nread + SILENT_READS > most || r->nlost)
			continue;
		rs->silent_ns += after[i] > 1000000 ? after[i] : 1000000;
		log_verbose(
		        "CPU %d: its ring buffer fell silent: %llu READs where another ring has "
		        "%llu, and %.3f CPU-s counted there after its last record",
		        r->cpu, (unsigned long long)r->nread, (unsigned long long)most,
		        (double)after[i] / 1e9);
	}
	free(after);
	/* A dummy event counts nothing: what the doorbells hold was swapped to them from the
	 * sampling events (their event lists out of step, open_bell). */
	for (size_t i = 0; i < s->nbells; i++) {
		uint64_t v;
		if (read(s->bells[i].fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
			s->bell_ns += v;
	}
	finish_unwinding(s);
	return total_ns;
}

static void perf_report(void *be, struct runner_session *rs)
{
	struct session *s = be;
	warn_truncated(s);
	if (s->opts->unwind != RUNNER_UNWIND_DWARF)
		unwind_warn_libc_cut(rs->agg.libc_cut, rs->agg.total, rs->agg.libc_cut_where,
		                     UNWIND_ADVICE_PERF);
	if (s->nbells && s->bells_armed)
		log_verbose(
		        "exec doorbells rang %llu times and counted %llu ns of CPU time (0: each "
		        "task's own CPU time stayed its own)",
		        (unsigned long long)s->bell_rings, (unsigned long long)s->bell_ns);
	if (s->bell_ns)
		log_warn("the kernel moved %.3f CPU-s of this run's per-task counts to the exec "
		         "doorbells: the [unsampled] time of its processes, and so of their tests, "
		         "may be off (docs/attribution.md)",
		         (double)s->bell_ns / 1e9);
	if (s->throttled)
		log_warn("the kernel throttled sampling %llu times: lower --hz",
		         (unsigned long long)s->throttled);
	if (s->bad_records)
		log_warn("%llu malformed perf records were skipped",
		         (unsigned long long)s->bad_records);
}

static void perf_release(void *be, struct runner_session *rs)
{
	struct session *s = be;
	close_rings(s);
	close_bells(s);
	unwinder_free(s->unw);
	free(s->umaps);
	free(s);
}

const struct runner_backend_ops perf_backend_ops = {
        .name = "perf",
        /* 25 ms; with a ctest in the tree the exec doorbells (arm_bells) wake a round at each
         * exec, so CTest processes are named while /proc still shows them. */
        .round_ms = 25,
        .follows_tasks = 1,
        .start = perf_start,
        .pollfds = perf_pollfds,
        .read = perf_read_rings,
        .sample = perf_sample,
        .finish = perf_finish,
        .report = perf_report,
        .release = perf_release,
};

void *perf_backend_new(const struct runner_opts *opts)
{
	struct session *s = xcalloc(1, sizeof(*s));
	s->opts = opts;
	s->max_stack = read_long_file("/proc/sys/kernel/perf_event_max_stack", 0);
	const char *silent = getenv("CIPROF_TEST_SILENT_RING");
	if (silent && *silent)
		s->silent_after = strtoull(silent, NULL, 10);
	return s;
}
