/* libciprof-preload.so: the sampler that `ciprof run --backend preload` injects with LD_PRELOAD
 * into every process of the command's tree (docs/preload.md).
 *
 * Each sampled thread owns a CPU-time timer (timer_create on CLOCK_THREAD_CPUTIME_ID,
 * SIGEV_THREAD_ID) that sends a real-time signal every 1/hz s of the thread's CPU time. The
 * handler walks the frame pointers of the interrupted context, checking every address before
 * reading it, and appends (tid, time, weight, ips) to the thread's ring in the process's sample
 * file, a file mapping shared with the runner (runner/preload/format.h). The handler allocates
 * nothing, takes no lock and calls only clock_gettime; errno is preserved.
 *
 * Everything else runs outside the handler: the constructor (file, memory map, the main
 * thread's timer), pthread_create (each new thread starts its own timer), fork (the child gets
 * a new file and a new timer: timers are not inherited), exec (the exec'd program is checked:
 * a static or set-ID program is reported as unsampled; LD_PRELOAD is put back if the
 * environment lost it) and process exit (a last memory map when libraries were loaded since).
 * Since samples land in the page cache as they are taken, nothing needs flushing before exec
 * or _exit, and a killed process loses no sample; the CPU time since a thread's last sample
 * is written as one more sample when the thread ends, exits or execs. */
#include "config/config.h"
#include "runner/preload/elfcheck.h"
#include "runner/preload/format.h"
#include "runner/preload/fpwalk.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

#define DEFAULT_HZ      CIPROF_DEFAULT_HZ
#define DEFAULT_SLOTS   64
#define DEFAULT_RING_KB 256
#define EVENT_RING_SIZE (64 * 1024)
#define ENV_MAX         1024 /* environment entries an exec can be given with fixes */
#define ENV_BUF         8192 /* bytes for the fixed entries' strings */

/* ---- process state ---- */

struct thread_state {
	volatile sig_atomic_t active; /* the handler may write samples */
	uint32_t slot;                /* 1..nslots, or 0 */
	pid_t tid;
	pid_t pid; /* the process this state was set up in (a fork copies it) */
	uint64_t stack_lo, stack_hi;
	timer_t timer;
	uint64_t cpu_last;  /* the thread's CPU clock (ns) when its time was last counted */
	uint64_t cpu_carry; /* CPU ns counted but not yet a whole period */
	uint64_t last_pos;  /* ring position of its newest sample record */
	uint32_t last_size; /* that record's size, 0 when none */
};

static __thread struct thread_state tls __attribute__((tls_model("initial-exec")));

static struct {
	volatile sig_atomic_t on; /* sampling in this process */
	pid_t pid;
	int signo;
	uint32_t hz;
	uint64_t period_ns;
	uint32_t nslots, ring_size;
	unsigned char *map; /* the sample file, MAP_SHARED */
	size_t map_len;
	struct pl_header *hdr;
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX]; /* the sample file */
	char dir[PATH_MAX];  /* CIPROF_PRELOAD_DIR */
	char lib[PATH_MAX];  /* this library, as LD_PRELOAD names it */
	char env_dir[PATH_MAX + 32];
	char env_hz[48];
	pthread_key_t key;
	int key_ok;
	unsigned long long dl_adds; /* objects loaded when the last memory map was written */
	int events_stalled;         /* the runner stopped reading events: do not wait again */
	/* executable segments of libc and the vdso, where system calls are made */
	uint64_t sys_lo[8], sys_hi[8];
	int nsys;
	/* the action the program believes our signal has (SIG_DFL or SIG_IGN) */
	struct sigaction wished;
} g;

/* Per slot: the timer to delete when sampling stops, and whether its ring is allocated.
 * Indexed by slot; process-local (a fork child starts with none). */
static timer_t slot_timer[PL_MAX_SLOTS + 1];
static int slot_timer_set[PL_MAX_SLOTS + 1];
static unsigned char slot_ready[PL_MAX_SLOTS + 1];

/* The real functions behind the ones interposed here. */
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static int (*real_sigprocmask)(int, const sigset_t *, sigset_t *);
static int (*real_pthread_sigmask)(int, const sigset_t *, sigset_t *);
static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);
static int (*real_fexecve)(int, char *const[], char *const[]);
static int (*real_posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                               const posix_spawnattr_t *, char *const[], char *const[]);
static int (*real_posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                                const posix_spawnattr_t *, char *const[], char *const[]);
static void (*real__exit)(int); /* resolved early: dlsym is no call for a vfork child */

#define RESOLVE(name)                                                                              \
	do {                                                                                       \
		if (!real_##name)                                                                  \
			*(void **)&real_##name = dlsym(RTLD_NEXT, #name);                          \
	} while (0)

static void resolve_all(void)
{
	RESOLVE(pthread_create);
	RESOLVE(sigaction);
	RESOLVE(sigprocmask);
	RESOLVE(pthread_sigmask);
	RESOLVE(execve);
	RESOLVE(execvpe);
	RESOLVE(fexecve);
	RESOLVE(posix_spawn);
	RESOLVE(posix_spawnp);
	RESOLVE(_exit);
}

/* ---- small async-signal-safe helpers (no stdio, no allocation) ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Appends s to [*p, end), always NUL-terminating; returns -1 when it did not fit. */
static int put_str(char **p, char *end, const char *s)
{
	size_t n = strlen(s);
	if ((size_t)(end - *p) <= n)
		return -1;
	memcpy(*p, s, n + 1);
	*p += n;
	return 0;
}

static int put_u64(char **p, char *end, uint64_t v)
{
	char tmp[24];
	int i = (int)sizeof(tmp) - 1;
	tmp[i] = '\0';
	do
		tmp[--i] = (char)('0' + v % 10);
	while ((v /= 10) && i > 0);
	return put_str(p, end, tmp + i);
}

static uint64_t parse_u64(const char *s, uint64_t dflt)
{
	if (!s || !*s)
		return dflt;
	uint64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > UINT64_MAX / 10 - 10)
			return dflt;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	return v;
}

/* Reads a small file whole into buf (NUL-terminated); its length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

/* Field 22 of /proc/self/stat (start time in clock ticks since boot). */
static uint64_t proc_start_time(void)
{
	char buf[1024];
	if (read_small("/proc/self/stat", buf, sizeof(buf)) <= 0)
		return 0;
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* After ") " comes field 3; field 22 is 19 fields further. */
	p += 2;
	for (int f = 3; f < 22 && *p; p++)
		if (*p == ' ')
			f++;
	uint64_t v = 0;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (uint64_t)(*p++ - '0');
	return v;
}

static struct pl_slot *slot_at(uint32_t i)
{
	return (struct pl_slot *)(g.map + PL_SLOT_TABLE_OFFSET) + i;
}

static unsigned char *ring_at(uint32_t i)
{
	return g.map + pl_ring_offset(g.hdr, i);
}

/* ---- events (outside signal handlers) ---- */

static int ev_lock(void)
{
	for (int i = 0; i < 200000; i++) {
		if (!__atomic_exchange_n(&g.hdr->lock, 1, __ATOMIC_ACQUIRE))
			return 0;
		sched_yield();
	}
	return -1;
}

static void ev_unlock(void)
{
	__atomic_store_n(&g.hdr->lock, 0, __ATOMIC_RELEASE);
}

/*
 * Appends one event record (size a multiple of 8, at most PL_MAX_EVENT) to the event ring.
 * When the ring is full it waits for the runner, up to 2 s; after one such timeout, it no
 * longer waits (the runner is gone or stuck) and drops events, counting them.
 */
static void ev_emit(struct pl_rec *rec)
{
	if (!g.hdr || !g.on || rec->size > PL_MAX_EVENT)
		return;
	if (ev_lock() < 0) {
		__atomic_add_fetch(&g.hdr->events_lost, 1, __ATOMIC_RELAXED);
		return;
	}
	struct pl_slot *s = slot_at(0);
	uint64_t rsize = g.hdr->event_ring_size;
	uint64_t head = s->head, pad = 0;
	for (int wait = 0;; wait++) {
		uint64_t tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
		uint64_t off = head & (rsize - 1);
		pad = rsize - off < rec->size ? rsize - off : 0;
		uint64_t used = head - tail;
		if (used <= rsize && rsize - used >= pad + rec->size)
			break;
		if (g.events_stalled || wait >= 2000) {
			g.events_stalled = 1;
			__atomic_add_fetch(&g.hdr->events_lost, 1, __ATOMIC_RELAXED);
			ev_unlock();
			return;
		}
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	unsigned char *ring = ring_at(0);
	if (pad) {
		struct pl_rec *p = (struct pl_rec *)(ring + (head & (rsize - 1)));
		p->type = PL_REC_PAD;
		p->flags = 0;
		p->size = (uint32_t)pad;
		head += pad;
	}
	memcpy(ring + (head & (rsize - 1)), rec, rec->size);
	__atomic_store_n(&s->head, head + rec->size, __ATOMIC_RELEASE);
	ev_unlock();
}

static uint32_t align8(uint32_t n)
{
	return (n + 7) & ~7u;
}

/* A text event (PL_REC_MAPS or PL_REC_NOTE) of len bytes at time t. */
static void ev_text(uint16_t type, const char *text, size_t len, uint64_t t)
{
	union {
		struct pl_text h;
		unsigned char b[PL_MAX_EVENT];
	} u;
	if (len > PL_MAX_EVENT - sizeof(u.h))
		len = PL_MAX_EVENT - sizeof(u.h);
	memset(&u.h, 0, sizeof(u.h));
	u.h.h.type = type;
	u.h.h.time = t;
	u.h.len = (uint32_t)len;
	memcpy(u.b + sizeof(u.h), text, len);
	u.h.h.size = align8((uint32_t)(sizeof(u.h) + len));
	memset(u.b + sizeof(u.h) + len, 0, u.h.h.size - sizeof(u.h) - len);
	ev_emit(&u.h.h);
}

static void ev_note(const char *text)
{
	ev_text(PL_REC_NOTE, text, strlen(text), now_ns());
}

static int count_objects(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(unsigned long long *)data = info->dlpi_adds;
	return 1;
}

/* How many objects the loader has loaded so far (dlopen included). */
static unsigned long long loaded_objects(void)
{
	unsigned long long adds = 0;
	dl_iterate_phdr(count_objects, &adds);
	return adds;
}

/*
 * Writes the executable mappings of /proc/self/maps as PL_REC_MAPS events stamped t, in
 * chunks of whole lines. The buffer comes from mmap, not malloc: this also runs at exit and
 * before exec, where the program's allocator may be in any state.
 */
static void write_maps(uint64_t t)
{
	size_t cap = 256 * 1024, len = 0;
	char *buf = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto out;
	for (;;) {
		if (len + 4096 > cap) {
			char *nb = mremap(buf, cap, cap * 2, MREMAP_MAYMOVE);
			if (nb == MAP_FAILED)
				break;
			buf = nb;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	g.dl_adds = loaded_objects();
	/* Keep executable lines only, compacting in place, then send chunks. */
	size_t out = 0;
	for (size_t i = 0; i < len;) {
		size_t e = i;
		while (e < len && buf[e] != '\n')
			e++;
		/* "start-end perms ..." : perms[2] is 'x' for executable mappings. */
		const char *sp = memchr(buf + i, ' ', e - i);
		if (sp && (size_t)(sp - (buf + i)) + 4 < e - i && sp[3] == 'x') {
			memmove(buf + out, buf + i, e - i);
			out += e - i;
			buf[out++] = '\n';
		}
		i = e + 1;
	}
	size_t max = PL_MAX_EVENT - sizeof(struct pl_text) - 8;
	for (size_t i = 0; i < out;) {
		size_t n = out - i < max ? out - i : max;
		if (i + n < out)
			while (n > 0 && buf[i + n - 1] != '\n')
				n--;
		if (!n)
			break; /* a line longer than a record: not with PATH_MAX paths */
		ev_text(PL_REC_MAPS, buf + i, n, t);
		i += n;
	}
out:
	munmap(buf, cap);
}

/* Writes a new memory map if libraries were loaded since the last one. */
static void maps_if_changed(void)
{
	if (g.on && getpid() == g.pid && loaded_objects() != g.dl_adds)
		write_maps(now_ns());
}

/* ---- the signal handler ---- */

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * The whole timer periods of CPU time the thread used since its time was last counted; the
 * rest is carried. Weights come from the thread's own CPU clock rather than the timer's
 * overrun count: under CPU contention the kernel checks CPU timers late (signals were seen
 * hundreds of milliseconds of CPU apart), and the clock still says how much time passed.
 */
static uint64_t take_periods(struct thread_state *t)
{
	uint64_t now = thread_cpu_ns();
	t->cpu_carry += now - t->cpu_last;
	t->cpu_last = now;
	uint64_t n = t->cpu_carry / g.period_ns;
	if (n > PL_MAX_WEIGHT)
		n = PL_MAX_WEIGHT;
	t->cpu_carry -= n * g.period_ns;
	return n;
}

/*
 * Reserves room for a record of at most PL_MAX_RECORD bytes in the thread's ring (writing a
 * PAD to the ring's end when needed) and returns where it goes, or NULL when the runner is
 * behind and the ring is full: then weight periods are counted as lost. Never waits.
 */
static struct pl_sample *ring_reserve(struct thread_state *t, uint64_t weight, uint64_t *pos)
{
	struct pl_slot *s = slot_at(t->slot);
	unsigned char *ring = ring_at(t->slot);
	uint64_t size = g.ring_size;
	uint64_t head = s->head;
	uint64_t tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
	uint64_t used = head - tail;
	uint64_t off = head & (size - 1);
	uint64_t pad = size - off < PL_MAX_RECORD ? size - off : 0;
	if (used > size || size - used < pad + PL_MAX_RECORD) {
		s->lost += weight;
		return NULL;
	}
	if (pad) {
		struct pl_rec *p = (struct pl_rec *)(ring + off);
		p->type = PL_REC_PAD;
		p->flags = 0;
		p->size = (uint32_t)pad;
		head += pad;
		off = 0;
	}
	*pos = head;
	return (struct pl_sample *)(ring + off);
}

/* Publishes the record reserved at pos (after any PAD) and remembers it as the newest. */
static void ring_publish(struct thread_state *t, uint64_t pos, uint32_t size)
{
	t->last_pos = pos;
	t->last_size = size;
	__atomic_store_n(&slot_at(t->slot)->head, pos + size, __ATOMIC_RELEASE);
}

/*
 * Whether ip is just past a `syscall` instruction in libc or the vdso: the signal came on the
 * way out of a system call, and the time being sampled was spent in the kernel. Such a stack
 * starts in a libc wrapper without a frame pointer, whose caller the walk would miss (the
 * function that made the call); perf leaves kernel time out. The sample is skipped and its
 * time goes to the thread's next sample. Only libc's and the vdso's code is read, which is
 * surely readable (execute-only memory exists).
 */
static int after_syscall(uint64_t ip)
{
	for (int i = 0; i < g.nsys; i++) {
		if (ip >= g.sys_lo[i] + 2 && ip < g.sys_hi[i]) {
			const volatile unsigned char *c = (const unsigned char *)(uintptr_t)ip;
			return c[-2] == 0x0f && c[-1] == 0x05;
		}
	}
	return 0;
}

static int find_syscall_code(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	if (strncmp(base, "libc.so", 7) && strncmp(base, "linux-vdso", 10))
		return 0;
	for (int i = 0; i < info->dlpi_phnum && g.nsys < 8; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && (ph->p_flags & PF_R)) {
			g.sys_lo[g.nsys] = info->dlpi_addr + ph->p_vaddr;
			g.sys_hi[g.nsys++] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		}
	}
	return 0;
}

static void record_sample(struct thread_state *t, const ucontext_t *uc)
{
	if (after_syscall((uint64_t)uc->uc_mcontext.gregs[REG_RIP]))
		return;
	uint64_t weight = take_periods(t);
	if (!weight)
		return; /* early: the time is carried to the next sample */
	uint64_t pos;
	struct pl_sample *smp = ring_reserve(t, weight, &pos);
	if (!smp)
		return;
	uint64_t *ips = (uint64_t *)(smp + 1);
	smp->h.time = now_ns();
	uint32_t n = pl_fp_walk((uint64_t)uc->uc_mcontext.gregs[REG_RIP],
	                        (uint64_t)uc->uc_mcontext.gregs[REG_RBP],
	                        (uint64_t)uc->uc_mcontext.gregs[REG_RSP], t->stack_lo, t->stack_hi,
	                        ips, PL_MAX_FRAMES);
	smp->h.type = PL_REC_SAMPLE;
	smp->h.flags = 0;
	smp->h.size = (uint32_t)(sizeof(*smp) + 8 * n);
	smp->tid = t->tid;
	smp->nframes = n;
	smp->weight = weight;
	/* The top of the stack, for the leaf's caller (struct pl_stack): only on the thread's
	 * own stack, and only what lies below its top, surely mapped. */
	uint64_t sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
	if (t->stack_hi && sp >= t->stack_lo && sp < t->stack_hi && !(sp & 7)) {
		struct pl_stack *st = (struct pl_stack *)(ips + n);
		uint64_t len = t->stack_hi - sp < PL_STACK_COPY ? t->stack_hi - sp : PL_STACK_COPY;
		len &= ~(uint64_t)7;
		const volatile uint64_t *from = (const volatile uint64_t *)(uintptr_t)sp;
		uint64_t *to = (uint64_t *)(st + 1);
		for (uint64_t i = 0; i < len / 8; i++)
			to[i] = from[i];
		st->sp = sp;
		st->bp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
		st->len = (uint32_t)len;
		st->pad = 0;
		smp->h.flags = PL_SAMPLE_STACK;
		smp->h.size += (uint32_t)(sizeof(*st) + len);
	}
	ring_publish(t, pos, smp->h.size);
}

static void on_timer(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	int saved = errno;
	struct thread_state *t = &tls;
	if (si && si->si_code == SI_TIMER && si->si_value.sival_ptr == t && t->active && g.on &&
	    t->slot)
		record_sample(t, ucv);
	errno = saved;
}

/*
 * When the calling thread stops being sampled (it ends, the process exits or execs): the CPU
 * time since its last sample would be lost, as no signal comes any more; it is added as one
 * more sample with the stack of the last one (or none). Outside the handler, which is kept
 * out while this writes to the same ring.
 *
 * handover: the thread execs, and the program it runs counts on from where this one stopped
 * (*counted, its CPU clock less the part of a period not yet written; see exec_prepare).
 * Otherwise its time ends here and the rest of a period counts as a whole one from half a
 * period on, so that a process's total is off by half a period at most, not short by one.
 * Returns 1 when the thread was sampled (and *counted is set), else 0.
 */
static int flush_tail(int handover, uint64_t *counted)
{
	struct thread_state *t = &tls;
	/* A vfork child shares this thread's memory, TLS included, but not its CPU clock. */
	if (!t->active || !t->slot || !g.on || t->pid != g.pid || !g.map || getpid() != g.pid)
		return 0;
	t->active = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uint64_t weight = take_periods(t);
	if (!handover && t->cpu_carry >= g.period_ns / 2 && weight < PL_MAX_WEIGHT) {
		weight++;
		t->cpu_carry = 0;
	}
	uint64_t pos;
	struct pl_sample *smp = weight ? ring_reserve(t, weight, &pos) : NULL;
	if (smp && t->last_size) {
		/* The last record is intact: only this thread writes this ring. */
		memmove(smp, ring_at(t->slot) + (t->last_pos & (g.ring_size - 1)), t->last_size);
	} else if (smp) {
		/* No sample at all (the timer never fired): the time is counted, without a
		 * stack, rather than lost. */
		smp->h.type = PL_REC_SAMPLE;
		smp->h.flags = 0;
		smp->h.size = sizeof(*smp);
		smp->tid = t->tid;
		smp->nframes = 0;
	}
	if (smp) {
		smp->h.time = now_ns();
		smp->weight = weight;
		ring_publish(t, pos, smp->h.size);
	}
	if (counted)
		*counted = t->cpu_last - t->cpu_carry;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->active = 1;
	return 1;
}

/* ---- threads ---- */

static void stack_bounds(struct thread_state *t)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;
	t->stack_lo = t->stack_hi = 0;
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return;
	if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
		t->stack_lo = (uint64_t)(uintptr_t)addr;
		t->stack_hi = t->stack_lo + size;
	}
	pthread_attr_destroy(&attr);
}

/* Writes zeros over [off, off + len) of fd: the blocks are allocated now (a full disk is an
 * error here, not a SIGBUS in the signal handler later), and the pages sit in the page cache,
 * so that first touching them through the mapping costs little (unlike the unwritten extents
 * of fallocate, which ext4 converts on the first write fault, at a millisecond each). */
static int write_zeros(int fd, off_t off, off_t len)
{
	static const char zeros[16384];
	while (len > 0) {
		size_t n = len < (off_t)sizeof(zeros) ? (size_t)len : sizeof(zeros);
		ssize_t w = pwrite(fd, zeros, n, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += w;
		len -= w;
	}
	return 0;
}

/* Makes sure slot i's ring has its blocks, so that writing it from the handler cannot fault
 * with SIGBUS on a full disk. The file is reopened by name and checked to be ours: the
 * program may have closed or reused any descriptor we kept. */
static int ring_allocate(uint32_t i)
{
	if (slot_ready[i])
		return 0;
	int fd = open(g.path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	int r = -1;
	if (fstat(fd, &st) == 0 && st.st_dev == g.dev && st.st_ino == g.ino) {
		off_t off = (off_t)pl_ring_offset(g.hdr, i);
		off_t len = (off_t)(i == 0 ? g.hdr->event_ring_size : g.ring_size);
		r = write_zeros(fd, off, len);
	}
	int err = errno;
	close(fd);
	if (r == 0)
		slot_ready[i] = 1;
	errno = err;
	return r;
}

static void unblock_signal(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, g.signo);
	if (real_pthread_sigmask)
		real_pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

/*
 * Starts sampling the calling thread: a free sample ring, its stack bounds (unless known:
 * a fork child keeps its thread's), a CPU-time timer. emit: write a thread-begin event.
 * Its CPU time counts from cpu_from on its own clock: 0 (its whole life, which began at
 * pthread_create, fork, vfork or posix_spawn) unless an exec handed over where the previous
 * program stopped counting.
 */
static void thread_begin(int emit, int keep_stack, uint64_t cpu_from)
{
	struct thread_state *t = &tls;
	t->active = 0;
	t->slot = 0;
	if (!g.on)
		return;
	t->tid = gettid();
	t->pid = g.pid;
	if (!keep_stack || !t->stack_hi)
		stack_bounds(t);
	uint32_t slot = 0;
	for (uint32_t i = 1; i <= g.nslots; i++) {
		int32_t free_tid = 0;
		if (__atomic_compare_exchange_n(&slot_at(i)->tid, &free_tid, t->tid, 0,
		                                __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			slot = i;
			break;
		}
	}
	if (!slot) {
		__atomic_add_fetch(&g.hdr->threads_unsampled, 1, __ATOMIC_RELAXED);
		return;
	}
	if (ring_allocate(slot) < 0) {
		/* A full disk, not the ring count: said apart. */
		g.hdr->write_errno = errno;
		__atomic_store_n(&slot_at(slot)->tid, 0, __ATOMIC_RELEASE);
		__atomic_add_fetch(&g.hdr->write_errors, 1, __ATOMIC_RELAXED);
		return;
	}
	if (emit) {
		struct pl_thread ev = {
		        {PL_REC_THREAD, PL_THREAD_BEGIN, sizeof(ev), now_ns()}, t->tid, 0};
		ev_emit(&ev.h);
	}
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = g.signo;
	sev.sigev_value.sival_ptr = t;
	sev._sigev_un._tid = t->tid;
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t->timer) != 0) {
		__atomic_store_n(&slot_at(slot)->tid, 0, __ATOMIC_RELEASE);
		__atomic_add_fetch(&g.hdr->threads_unsampled, 1, __ATOMIC_RELAXED);
		return;
	}
	t->slot = slot;
	slot_timer[slot] = t->timer;
	__atomic_store_n(&slot_timer_set[slot], 1, __ATOMIC_RELEASE);
	unblock_signal();
	t->cpu_last = cpu_from;
	t->cpu_carry = 0;
	t->last_size = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->active = 1;
	struct itimerspec its;
	its.it_interval.tv_sec = (time_t)(g.period_ns / 1000000000ULL);
	its.it_interval.tv_nsec = (long)(g.period_ns % 1000000000ULL);
	its.it_value = its.it_interval;
	timer_settime(t->timer, 0, &its, NULL);
}

/* Stops sampling the calling thread and frees its ring for the next thread (unread samples
 * stay in it; the next owner appends after them). */
static void thread_end(void *unused)
{
	(void)unused;
	struct thread_state *t = &tls;
	if (!t->slot || t->pid != g.pid || !g.hdr)
		return;
	flush_tail(0, NULL);
	t->active = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__atomic_exchange_n(&slot_timer_set[t->slot], 0, __ATOMIC_ACQ_REL))
		timer_delete(t->timer);
	struct pl_thread ev = {{PL_REC_THREAD, PL_THREAD_END, sizeof(ev), now_ns()}, t->tid, 0};
	ev_emit(&ev.h);
	__atomic_store_n(&slot_at(t->slot)->tid, 0, __ATOMIC_RELEASE);
	t->slot = 0;
}

struct trampoline {
	void *(*fn)(void *);
	void *arg;
};

static void *thread_main(void *p)
{
	struct trampoline tr = *(struct trampoline *)p;
	free(p);
	if (g.on && getpid() == g.pid) {
		thread_begin(1, 0, 0);
		if (tls.slot && g.key_ok)
			pthread_setspecific(g.key, &tls); /* its destructor ends the sampling */
	}
	return tr.fn(tr.arg);
}

EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg)
{
	RESOLVE(pthread_create);
	if (!g.on || getpid() != g.pid)
		return real_pthread_create(thread, attr, fn, arg);
	maps_if_changed();
	struct trampoline *tr = malloc(sizeof(*tr));
	if (!tr)
		return real_pthread_create(thread, attr, fn, arg);
	tr->fn = fn;
	tr->arg = arg;
	int r = real_pthread_create(thread, attr, thread_main, tr);
	if (r)
		free(tr);
	return r;
}

/* ---- the sample file ---- */

/* The process's start record: its name, and for a new program its executable, working
 * directory and arguments (CTest's mapping of test processes needs them). */
static void write_start(uint16_t flags, pid_t ppid, uint64_t t)
{
	union {
		struct pl_start h;
		unsigned char b[PL_MAX_EVENT];
	} u;
	memset(&u.h, 0, sizeof(u.h));
	char *p = (char *)u.b + sizeof(u.h), *end = (char *)u.b + sizeof(u.b) - 8;
	char comm[17] = "";
	prctl(PR_GET_NAME, comm, 0, 0, 0);
	comm[16] = '\0';
	u.h.comm_len = (uint32_t)strlen(comm);
	memcpy(p, comm, u.h.comm_len);
	p += u.h.comm_len;
	if (flags & PL_START_EXEC) {
		ssize_t n = readlink("/proc/self/exe", p, (size_t)(end - p) / 4);
		u.h.exe_len = n > 0 ? (uint32_t)n : 0;
		p += u.h.exe_len;
		if (getcwd(p, (size_t)(end - p) / 3))
			u.h.cwd_len = (uint32_t)strlen(p);
		p += u.h.cwd_len;
		ssize_t a = read_small("/proc/self/cmdline", p, (size_t)(end - p));
		u.h.argv_len = a > 0 ? (uint32_t)a : 0;
		p += u.h.argv_len;
	}
	u.h.h.type = PL_REC_START;
	u.h.h.flags = flags;
	u.h.h.time = t;
	u.h.pid = g.pid;
	u.h.ppid = ppid;
	uint32_t used = (uint32_t)(p - (char *)u.b);
	u.h.h.size = align8(used);
	memset(u.b + used, 0, u.h.h.size - used);
	ev_emit(&u.h.h);
}

/* The sample file could not be made (err is why): an empty file err-PID-ERRNO tells the
 * runner, which otherwise could only guess why no image of this process appeared. */
static void note_write_error(int err)
{
	char path[PATH_MAX], *p = path, *end = path + sizeof(path);
	if (put_str(&p, end, g.dir) || put_str(&p, end, "/err-") ||
	    put_u64(&p, end, (uint64_t)g.pid) || put_str(&p, end, "-") ||
	    put_u64(&p, end, (uint64_t)err))
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
}

/*
 * Creates this image's sample file in the run's directory (under a temporary name, renamed
 * once complete so the runner never sees half a header) and writes its start record.
 * 0, or -1 (sampling stays off in this process).
 */
static int open_image(uint16_t flags, pid_t ppid)
{
	uint64_t t = now_ns();
	char tmp[PATH_MAX], *p = tmp, *end = tmp + sizeof(tmp);
	if (put_str(&p, end, g.dir) || put_str(&p, end, "/.") ||
	    put_u64(&p, end, (uint64_t)g.pid) || put_str(&p, end, "-") || put_u64(&p, end, t) ||
	    put_str(&p, end, ".tmp"))
		return -1;
	p = g.path;
	end = g.path + sizeof(g.path);
	if (put_str(&p, end, g.dir) || put_str(&p, end, "/") || put_u64(&p, end, (uint64_t)g.pid) ||
	    put_str(&p, end, "-") || put_u64(&p, end, t) || put_str(&p, end, ".pl"))
		return -1;
	struct pl_header h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, PL_MAGIC, 8);
	h.version = PL_VERSION;
	h.nslots = g.nslots;
	h.header_size = pl_header_size(g.nslots);
	h.ring_size = g.ring_size;
	h.event_ring_size = EVENT_RING_SIZE;
	h.pid = g.pid;
	h.start_ns = t;
	h.proc_start = proc_start_time();
	h.signo = (uint32_t)g.signo;
	h.hz = g.hz;
	size_t len = (size_t)pl_file_size(&h);
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		note_write_error(errno);
		return -1;
	}
	struct stat st;
	void *map = MAP_FAILED;
	if (ftruncate(fd, (off_t)len) != 0 || fstat(fd, &st) != 0 ||
	    write_zeros(fd, 0, (off_t)(h.header_size + h.event_ring_size)) != 0)
		goto fail;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto fail;
	memcpy(map, &h, sizeof(h));
	g.map = map;
	g.map_len = len;
	g.hdr = map;
	g.dev = st.st_dev;
	g.ino = st.st_ino;
	memset(slot_ready, 0, sizeof(slot_ready));
	slot_ready[0] = 1;
	write_start(flags, ppid, t);
	if (rename(tmp, g.path) != 0)
		goto fail;
	close(fd);
	return 0;
fail:;
	int err = errno;
	if (map != MAP_FAILED)
		munmap(map, len);
	g.map = NULL;
	g.hdr = NULL;
	close(fd);
	unlink(tmp);
	note_write_error(err);
	return -1;
}

/* Stops sampling in this process for good: every thread's timer is deleted. */
static void stop_sampling(const char *why)
{
	if (!g.on)
		return;
	if (why)
		ev_note(why);
	g.on = 0;
	for (uint32_t i = 1; i <= PL_MAX_SLOTS; i++)
		if (__atomic_exchange_n(&slot_timer_set[i], 0, __ATOMIC_ACQ_REL))
			timer_delete(slot_timer[i]);
}

/* ---- fork ---- */

/* In the child of fork: only this thread exists and no timer was inherited. A new file,
 * the fork's start record (the runner copies the parent's memory map), a new timer. */
static void after_fork_child(void)
{
	if (!g.on)
		return;
	pid_t parent = g.pid;
	g.pid = getpid();
	if (g.map)
		munmap(g.map, g.map_len);
	g.map = NULL;
	g.hdr = NULL;
	memset(slot_timer_set, 0, sizeof(slot_timer_set));
	g.events_stalled = 0;
	tls.active = 0;
	tls.slot = 0;
	if (open_image(PL_START_FORK, parent) < 0) {
		g.on = 0;
		return;
	}
	thread_begin(0, 1, 0);
}

/* ---- exec ---- */

/* Whether the entry "NAME=..." (name given with its '=') is in envp. */
static const char *env_find(char *const *envp, const char *name)
{
	size_t n = strlen(name);
	for (; envp && *envp; envp++)
		if (!strncmp(*envp, name, n))
			return *envp;
	return NULL;
}

/* Whether the LD_PRELOAD value lists this library (separated by ':' or ' '). */
static int preload_lists_us(const char *value)
{
	size_t n = strlen(g.lib);
	for (const char *p = value; *p;) {
		while (*p == ':' || *p == ' ')
			p++;
		const char *e = p;
		while (*e && *e != ':' && *e != ' ')
			e++;
		if ((size_t)(e - p) == n && !strncmp(p, g.lib, n))
			return 1;
		p = e;
	}
	return 0;
}

struct env_fix {
	char *env[ENV_MAX];
	char buf[ENV_BUF];
	char cpu[64]; /* CIPROF_PRELOAD_CPU=PID:NS, or empty */
};

#define ENV_CPU "CIPROF_PRELOAD_CPU="

/* The exec'ing thread stopped counting its CPU time at counted (its own clock, which an exec
 * keeps): the program's sampler starts from there (cpu_handed_over). */
static void env_cpu(struct env_fix *fix, uint64_t counted)
{
	char *p = fix->cpu, *end = fix->cpu + sizeof(fix->cpu);
	if (put_str(&p, end, ENV_CPU) || put_u64(&p, end, (uint64_t)getpid()) ||
	    put_str(&p, end, ":") || put_u64(&p, end, counted))
		fix->cpu[0] = '\0';
}

/*
 * The environment an exec should get: envp itself, or (when it lost LD_PRELOAD's entry for
 * this library, CIPROF_PRELOAD_DIR or ASAN_OPTIONS's verify_asan_link_order) a copy in fix
 * with them put back, so that the exec'd program is sampled too; fix->cpu, when set, is
 * added. *fixed is set when the sampler's own variables were put back. No allocation: this
 * may run in a vfork child.
 */
static char *const *env_fixed(char *const *envp, struct env_fix *fix, int *fixed)
{
	*fixed = 0;
	int need_cpu = fix->cpu[0] != '\0';
	if (!g.lib[0] || !g.dir[0])
		return envp;
	const char *pre = env_find(envp, "LD_PRELOAD=");
	const char *asan = env_find(envp, "ASAN_OPTIONS=");
	int need_pre = !pre || !preload_lists_us(pre + 11);
	int need_dir = !env_find(envp, "CIPROF_PRELOAD_DIR=");
	int need_hz = !env_find(envp, "CIPROF_PRELOAD_HZ=");
	/* An ASan program refuses to run after a preloaded library unless told (see
	 * docs/preload.md); the runner says so in ASAN_OPTIONS, which must survive too. */
	int need_asan = !asan || !strstr(asan, "verify_asan_link_order");
	if (!need_pre && !need_dir && !need_hz && !need_asan && !need_cpu)
		return envp;
	size_t n = 0;
	char *p = fix->buf, *end = fix->buf + sizeof(fix->buf);
	for (char *const *e = envp; e && *e; e++) {
		if (n + 5 >= ENV_MAX)
			return envp; /* an enormous environment: leave it alone */
		if ((need_pre && *e == pre) || (need_asan && *e == asan) ||
		    !strncmp(*e, ENV_CPU, strlen(ENV_CPU)))
			continue; /* replaced below */
		fix->env[n++] = *e;
	}
	if (need_pre) {
		fix->env[n++] = p;
		if (put_str(&p, end, "LD_PRELOAD="))
			return envp;
		if (pre && pre[11] && (put_str(&p, end, pre + 11) || put_str(&p, end, ":")))
			return envp;
		if (put_str(&p, end, g.lib))
			return envp;
		p++;
	}
	if (need_asan) {
		fix->env[n++] = p;
		if (put_str(&p, end, "ASAN_OPTIONS="))
			return envp;
		if (asan && asan[13] && (put_str(&p, end, asan + 13) || put_str(&p, end, ":")))
			return envp;
		if (put_str(&p, end, "verify_asan_link_order=0"))
			return envp;
		p++;
	}
	if (need_dir)
		fix->env[n++] = g.env_dir;
	if (need_hz)
		fix->env[n++] = g.env_hz;
	if (need_cpu)
		fix->env[n++] = fix->cpu;
	fix->env[n] = NULL;
	*fixed = need_pre || need_dir || need_hz;
	return fix->env;
}

/* The program an execvp-style call would run: file itself when it holds a '/', else the
 * first executable file of that name on PATH (out holds it). NULL when none. */
static const char *search_path(const char *file, char *out, size_t len)
{
	if (strchr(file, '/'))
		return file;
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	for (const char *d = path;;) {
		const char *e = strchr(d, ':');
		size_t dl = e ? (size_t)(e - d) : strlen(d);
		char *p = out, *end = out + len;
		if (dl < len) {
			memcpy(p, d, dl);
			p += dl;
			*p = '\0';
			if (dl == 0)
				put_str(&p, end, ".");
			if (!put_str(&p, end, "/") && !put_str(&p, end, file) &&
			    access(out, X_OK) == 0)
				return out;
		}
		if (!e)
			return NULL;
		d = e + 1;
	}
}

/* The exec record: pid will run path; flags says what keeps LD_PRELOAD from it. */
static void ev_exec(pid_t pid, const char *path, uint32_t flags, uint64_t t)
{
	union {
		struct pl_exec h;
		unsigned char b[sizeof(struct pl_exec) + PATH_MAX + 8];
	} u;
	size_t n = strlen(path);
	if (n > PATH_MAX)
		n = PATH_MAX;
	memset(&u.h, 0, sizeof(u.h));
	u.h.h.type = PL_REC_EXEC;
	u.h.h.flags = (uint16_t)flags;
	u.h.h.time = t;
	u.h.pid = pid;
	u.h.path_len = (uint32_t)n;
	memcpy(u.b + sizeof(u.h), path, n);
	u.h.h.size = align8((uint32_t)(sizeof(u.h) + n));
	memset(u.b + sizeof(u.h) + n, 0, u.h.h.size - sizeof(u.h) - n);
	ev_emit(&u.h.h);
}

/*
 * Before an exec of file (searched on PATH when search is set) with envp: returns the
 * environment to use, and writes the exec record (and a memory map if libraries were loaded
 * since the last one). A vfork child (dash runs commands that way) shares our memory and has
 * no file of its own: its exec record goes to ours, with its pid. *noted tells the caller to
 * report a failed exec.
 */
static char *const *exec_prepare(const char *file, int search, char *const *envp,
                                 struct env_fix *fix, int *noted, uint64_t *t)
{
	int fixed;
	uint64_t counted;
	fix->cpu[0] = '\0';
	if (flush_tail(1, &counted))
		env_cpu(fix, counted);
	char *const *env = env_fixed(envp, fix, &fixed);
	*noted = 0;
	*t = now_ns();
	if (!g.on || !g.hdr || !file)
		return env;
	char where[PATH_MAX];
	const char *path = search ? search_path(file, where, sizeof(where)) : file;
	if (!path)
		return env;
	uint32_t flags = pl_exec_flags(path) | (fixed ? PL_EXEC_ENV_FIXED : 0);
	pid_t pid = getpid();
	if (pid == g.pid)
		maps_if_changed();
	ev_exec(pid, path, flags, *t);
	*noted = 1;
	return env;
}

static void exec_failed(int noted, const char *file, uint64_t t)
{
	if (noted && g.on && g.hdr)
		ev_exec(getpid(), file, PL_EXEC_FAILED, t);
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	RESOLVE(execve);
	struct env_fix fix;
	int noted, saved;
	uint64_t t;
	char *const *env = exec_prepare(path, 0, envp, &fix, &noted, &t);
	int r = real_execve(path, argv, env);
	saved = errno;
	exec_failed(noted, path, t);
	errno = saved;
	return r;
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	RESOLVE(execvpe);
	struct env_fix fix;
	int noted, saved;
	uint64_t t;
	char *const *env = exec_prepare(file, 1, envp, &fix, &noted, &t);
	int r = real_execvpe(file, argv, env);
	saved = errno;
	exec_failed(noted, file, t);
	errno = saved;
	return r;
}

EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	RESOLVE(fexecve);
	struct env_fix fix;
	int fixed;
	uint64_t counted;
	fix.cpu[0] = '\0';
	if (flush_tail(1, &counted))
		env_cpu(&fix, counted);
	char *const *env = env_fixed(envp, &fix, &fixed);
	return real_fexecve(fd, argv, env);
}

/* execl and friends: gather the variadic arguments into an array on the stack. */
#define MAX_LARGS 1024
#define COLLECT_ARGS(first, ap, args, n)                                                           \
	do {                                                                                       \
		args[0] = (char *)(first);                                                         \
		n = 1;                                                                             \
		while (args[n - 1] && n < MAX_LARGS)                                               \
			args[n++] = va_arg(ap, char *);                                            \
		if (args[n - 1]) {                                                                 \
			errno = E2BIG;                                                             \
			va_end(ap);                                                                \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

EXPORT int execl(const char *path, const char *arg, ...)
{
	char *args[MAX_LARGS];
	size_t n;
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, args, n);
	va_end(ap);
	return execve(path, args, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	char *args[MAX_LARGS];
	size_t n;
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, args, n);
	va_end(ap);
	return execvpe(file, args, environ);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	char *args[MAX_LARGS];
	size_t n;
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, args, n);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, args, envp);
}

static int spawn_common(int search, pid_t *pid, const char *file,
                        const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                        char *const argv[], char *const envp[])
{
	struct env_fix fix;
	int fixed;
	uint64_t t = now_ns();
	fix.cpu[0] = '\0'; /* the child is a new process: it counts its CPU time from 0 */
	char *const *env = env_fixed(envp, &fix, &fixed);
	pid_t child = 0;
	int r = search ? real_posix_spawnp(&child, file, fa, attr, argv, env)
	               : real_posix_spawn(&child, file, fa, attr, argv, env);
	if (pid)
		*pid = child;
	if (r == 0 && g.on && g.hdr && getpid() == g.pid) {
		char where[PATH_MAX];
		const char *path = search ? search_path(file, where, sizeof(where)) : file;
		if (path)
			ev_exec(child, path,
			        pl_exec_flags(path) | PL_EXEC_SPAWN |
			                (fixed ? PL_EXEC_ENV_FIXED : 0),
			        t);
	}
	return r;
}

EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	RESOLVE(posix_spawn);
	return spawn_common(0, pid, path, fa, attr, argv, envp);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	RESOLVE(posix_spawnp);
	return spawn_common(1, pid, file, fa, attr, argv, envp);
}

/* ---- keeping the timer signal ours ---- */

/*
 * The program asks about or changes the action of our signal. It is told what it last set
 * (SIG_DFL at first, as before the sampler took the signal), so that saving and restoring
 * an action never hands it our handler. Setting SIG_DFL or SIG_IGN (a program resetting
 * every signal) is remembered but not done: the program does not use the signal. A handler
 * of its own means it does: sampling stops in this process and the program gets the signal.
 * Returns 1 when the call is answered here.
 */
static int guard_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!g.on || sig != g.signo)
		return 0;
	int is_handler = act && ((act->sa_flags & SA_SIGINFO) ||
	                         (act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN));
	if (is_handler) {
		char msg[128], *p = msg, *end = msg + sizeof(msg);
		put_str(&p, end, "the program installed its own handler for signal ");
		put_u64(&p, end, (uint64_t)sig);
		put_str(&p, end, ", the sampler's timer signal: sampling stopped in this process");
		stop_sampling(msg);
		if (old) {
			real_sigaction(sig, act, NULL);
			*old = g.wished;
			return 1;
		}
		return 0;
	}
	if (old)
		*old = g.wished;
	if (act)
		g.wished = *act;
	return 1;
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	RESOLVE(sigaction);
	if (guard_sigaction(sig, act, old))
		return 0;
	return real_sigaction(sig, act, old);
}

static sighandler_t signal_via_sigaction(int sig, sighandler_t handler, int flags)
{
	struct sigaction act, old;
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	act.sa_flags = flags;
	sigemptyset(&act.sa_mask);
	if (sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	return signal_via_sigaction(sig, handler, SA_RESTART);
}

/* Old BSD name of signal(); glibc no longer declares it but still exports it. */
sighandler_t bsd_signal(int sig, sighandler_t handler);
EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler)
{
	return signal_via_sigaction(sig, handler, SA_RESTART);
}

EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler)
{
	return signal_via_sigaction(sig, handler, (int)(SA_RESETHAND | SA_NODEFER));
}

/* Blocking our signal would hold samples back until it is unblocked (with the wrong stack),
 * so it is left out of the sets programs block; a thread pool blocking "all signals" is
 * common. */
static const sigset_t *without_ours(int how, const sigset_t *set, sigset_t *copy)
{
	if (!g.on || !set || how == SIG_UNBLOCK || !sigismember(set, g.signo))
		return set;
	*copy = *set;
	sigdelset(copy, g.signo);
	return copy;
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	RESOLVE(sigprocmask);
	sigset_t copy;
	return real_sigprocmask(how, without_ours(how, set, &copy), old);
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	RESOLVE(pthread_sigmask);
	sigset_t copy;
	return real_pthread_sigmask(how, without_ours(how, set, &copy), old);
}

/* ---- start and end ---- */

/* A real-time signal nobody uses here: CIPROF_PRELOAD_SIGNAL when set, else the first of
 * SIGRTMAX-4, SIGRTMAX-5, ... down to SIGRTMIN+2 whose action is still the default. Libraries
 * that take real-time signals (glibc keeps 32 and 33; timers and AIO users usually count up
 * from SIGRTMIN) rarely reach the top of the range. */
static int choose_signal(void)
{
	uint64_t want = parse_u64(getenv("CIPROF_PRELOAD_SIGNAL"), 0);
	if (want)
		return want >= (uint64_t)SIGRTMIN && want <= (uint64_t)SIGRTMAX ? (int)want : -1;
	for (int sig = SIGRTMAX - 4; sig >= SIGRTMIN + 2; sig--) {
		struct sigaction old;
		if (real_sigaction(sig, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
		    old.sa_handler == SIG_DFL)
			return sig;
	}
	return -1;
}

static void pl_marker(void)
{
}

/*
 * Where this thread's CPU time starts counting after an exec: the exec'ing program's sampler
 * counted it up to the value it left in CIPROF_PRELOAD_CPU (for this pid), so that the time
 * of the exec itself, the loader and this constructor is neither lost nor counted twice.
 * Without it (the command itself, a vfork or posix_spawn child, a parent that was not
 * sampled) nobody counted any of the thread's time: 0. The variable is removed, so that the
 * program and its children never see it.
 */
static uint64_t cpu_handed_over(void)
{
	const char *v = getenv("CIPROF_PRELOAD_CPU");
	uint64_t from = 0;
	if (v) {
		const char *colon = strchr(v, ':');
		char pid[24];
		if (colon && (size_t)(colon - v) < sizeof(pid)) {
			memcpy(pid, v, (size_t)(colon - v));
			pid[colon - v] = '\0';
			uint64_t ns = parse_u64(colon + 1, 0);
			if (parse_u64(pid, 0) == (uint64_t)getpid() && ns <= thread_cpu_ns())
				from = ns;
		}
		unsetenv("CIPROF_PRELOAD_CPU");
	}
	return from;
}

__attribute__((constructor)) static void preload_init(void)
{
	resolve_all();
	uint64_t cpu_from = cpu_handed_over();
	const char *dir = getenv("CIPROF_PRELOAD_DIR");
	if (!dir || !*dir || strlen(dir) >= sizeof(g.dir) - 64 || !real_sigaction ||
	    !real_pthread_create || !real_pthread_sigmask)
		return;
	strcpy(g.dir, dir);
	uint64_t hz = parse_u64(getenv("CIPROF_PRELOAD_HZ"), DEFAULT_HZ);
	if (hz < 1 || hz > 100000)
		hz = DEFAULT_HZ;
	uint64_t slots = parse_u64(getenv("CIPROF_PRELOAD_SLOTS"), DEFAULT_SLOTS);
	if (slots < 1 || slots > PL_MAX_SLOTS)
		slots = DEFAULT_SLOTS;
	uint64_t kb = parse_u64(getenv("CIPROF_PRELOAD_RING_KB"), DEFAULT_RING_KB);
	uint64_t ring = 4096;
	while (ring < kb * 1024 && ring < PL_MAX_RING_SIZE)
		ring *= 2;
	g.hz = (uint32_t)hz;
	g.period_ns = 1000000000ULL / hz;
	g.nslots = (uint32_t)slots;
	g.ring_size = (uint32_t)ring;
	char *p = g.env_dir, *end = g.env_dir + sizeof(g.env_dir);
	put_str(&p, end, "CIPROF_PRELOAD_DIR=");
	put_str(&p, end, g.dir);
	p = g.env_hz;
	end = g.env_hz + sizeof(g.env_hz);
	put_str(&p, end, "CIPROF_PRELOAD_HZ=");
	put_u64(&p, end, hz);
	Dl_info info;
	if (dladdr((void *)pl_marker, &info) && info.dli_fname && info.dli_fname[0] == '/' &&
	    strlen(info.dli_fname) < sizeof(g.lib))
		strcpy(g.lib, info.dli_fname);

	g.signo = choose_signal();
	if (g.signo < 0)
		return;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_timer;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (real_sigaction(g.signo, &sa, NULL) != 0)
		return;
	g.pid = getpid();
	g.on = 1;
	if (open_image(PL_START_EXEC, getppid()) < 0) {
		g.on = 0;
		return;
	}
	write_maps(now_ns());
	dl_iterate_phdr(find_syscall_code, NULL);
	g.key_ok = pthread_key_create(&g.key, thread_end) == 0;
	pthread_atfork(NULL, NULL, after_fork_child);
	thread_begin(0, 0, cpu_from);
}

/* At exit: a last memory map when libraries were loaded since the last one, so that samples
 * in them can still be named after the process is gone. */
__attribute__((destructor)) static void preload_fini(void)
{
	flush_tail(0, NULL);
	maps_if_changed();
}

/* _exit skips destructors: the calling thread's last CPU time is counted here. (A vfork
 * child, which shares our memory but is another process, is left alone by flush_tail.) */
EXPORT __attribute__((noreturn)) void _exit(int status)
{
	flush_tail(0, NULL);
	if (real__exit)
		real__exit(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

EXPORT void _Exit(int status)
{
	_exit(status);
}
