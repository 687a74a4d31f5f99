/* The sample file of the LD_PRELOAD backend, shared by the injected library (the writer,
 * runner/preload/preload.c) and the runner (the reader, runner/sample/preload_backend.c).
 *
 * One file per process image (a fork child or an exec starts a new one), created in
 * $CIPROF_PRELOAD_DIR and mapped MAP_SHARED by its process. It holds single-producer ring
 * buffers, like perf's: ring 0 carries events (start, memory map, threads, exec) written
 * outside signal handlers under a lock; rings 1..nslots carry samples, each owned by one
 * thread at a time and written only by that thread's signal handler, so no lock is needed.
 * The runner reads records between tail and head while the process runs and advances tail,
 * so the file's size stays fixed however long the run. Since the data is in the page cache as
 * soon as it is written, nothing is lost when a process is killed, calls _exit, or execs.
 *
 * A process that cannot create its file at all leaves an empty file named err-PID-ERRNO
 * instead (an inode, no data: it fits where the file did not), so that the runner can say why.
 *
 * Integers are native (the runner and the library run on one machine); positions are
 * ever-growing byte counters, the byte at position p of a ring of size S being p & (S - 1).
 * Records are 8-byte aligned and never wrap the ring's end: a PAD record fills the rest. */
#ifndef CP_PRELOAD_FORMAT_H
#define CP_PRELOAD_FORMAT_H

#include <stdint.h>

#define PL_MAGIC         "CIPRPL01" /* 8 bytes, no NUL needed */
#define PL_VERSION       1
#define PL_MAX_SLOTS     255 /* sample rings (threads sampled at once per process) */
#define PL_MAX_FRAMES    128 /* frames per sample, leaf first */
#define PL_STACK_COPY    512 /* bytes of the stack a sample copies from its stack pointer */
#define PL_MAX_RECORD    (16 + 16 + 8 * PL_MAX_FRAMES + 24 + PL_STACK_COPY)
#define PL_MAX_WEIGHT    (1u << 20)  /* periods one sample may stand for */
#define PL_MAX_EVENT     (16 * 1024) /* largest event record; maps come in chunks */
#define PL_MIN_RING_SIZE 4096
#define PL_MAX_RING_SIZE (64u << 20)

/* File header, at offset 0. */
struct pl_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;     /* pl_header_size(nslots): header and slot table; rings follow */
	uint32_t nslots;          /* sample rings, 1..PL_MAX_SLOTS */
	uint32_t ring_size;       /* bytes of each sample ring, a power of two */
	uint32_t event_ring_size; /* bytes of the event ring, a power of two */
	int32_t pid;
	uint64_t start_ns;          /* CLOCK_MONOTONIC when the image started sampling */
	uint64_t proc_start;        /* field 22 of /proc/self/stat: tells a reused pid apart */
	uint64_t hold_ns;           /* nonzero while the process is inside dlopen: the memory map
	                             * record stamped with this time is still to come */
	uint32_t lock;              /* the event ring's writer lock (used by the process only) */
	uint32_t threads_unsampled; /* threads that found no free sample ring */
	uint32_t signo;             /* the timer signal this image uses */
	uint32_t hz;
	uint64_t events_lost;  /* event records dropped (ring full for seconds) */
	uint32_t write_errors; /* threads not sampled: their ring could not be written */
	int32_t write_errno;   /* the errno of the last such failure (ENOSPC: a full disk) */
	char reserved[160];
};

/* One ring's bookkeeping; slot[0] is the event ring, slot[1..nslots] the sample rings. */
struct pl_slot {
	uint64_t head; /* written by the producer (release), after the record */
	uint64_t lost; /* sample rings: periods dropped because the ring was full */
	int32_t tid;   /* sample rings: the owning thread, 0 when free */
	uint32_t pad0;
	uint64_t pad1[5];
	uint64_t tail; /* written by the runner (release) once it has read a record */
	uint64_t pad2[7];
};

#define PL_SLOT_TABLE_OFFSET 256

/* The header and slot table's size for nslots sample rings: whole pages. */
static inline uint32_t pl_header_size(uint32_t nslots)
{
	uint32_t n = PL_SLOT_TABLE_OFFSET + (nslots + 1) * (uint32_t)sizeof(struct pl_slot);
	return (n + 4095) & ~4095u;
}

/* Byte offset of ring i (0 = events) in the file. */
static inline uint64_t pl_ring_offset(const struct pl_header *h, uint32_t i)
{
	if (i == 0)
		return h->header_size;
	return (uint64_t)h->header_size + h->event_ring_size + (uint64_t)(i - 1) * h->ring_size;
}

static inline uint64_t pl_file_size(const struct pl_header *h)
{
	return pl_ring_offset(h, h->nslots + 1);
}

enum pl_rec_type {
	PL_REC_PAD = 1,    /* skip to the end of the ring */
	PL_REC_SAMPLE = 2, /* struct pl_sample + ips */
	PL_REC_START = 3,  /* struct pl_start + strings */
	PL_REC_MAPS = 4,   /* struct pl_text: executable lines of /proc/self/maps */
	PL_REC_THREAD = 5, /* struct pl_thread */
	PL_REC_EXEC = 6,   /* struct pl_exec + path */
	PL_REC_NOTE = 7,   /* struct pl_text: something the runner should tell the user */
};

/* Every record starts with this. size counts the whole record, a multiple of 8. */
struct pl_rec {
	uint16_t type;
	uint16_t flags;
	uint32_t size;
	uint64_t time; /* CLOCK_MONOTONIC ns */
};

struct pl_sample {
	struct pl_rec h;
	int32_t tid;
	uint32_t nframes; /* ips[0] is the interrupted instruction, then return addresses */
	uint64_t weight;  /* timer periods of the thread's CPU time since its previous sample,
	                   * 1..PL_MAX_WEIGHT (from the thread's CPU clock) */
	                  /* uint64_t ips[nframes]; with PL_SAMPLE_STACK, struct pl_stack */
};

/* h.flags of PL_REC_SAMPLE: a struct pl_stack follows the ips, for the runner to find the
 * caller a frameless leaf's frame-pointer chain lacks from the leaf's CFI (docs/preload.md). */
#define PL_SAMPLE_STACK 1

struct pl_stack {
	uint64_t sp, bp; /* the interrupted %rsp and %rbp */
	uint32_t len;    /* bytes copied from sp: a multiple of 8, at most PL_STACK_COPY */
	uint32_t pad;
	/* unsigned char bytes[len]; */
};

#define PL_START_FORK 1 /* h.flags: a fork child (inherits its parent's memory map) */
#define PL_START_EXEC 2 /* h.flags: a new program image */

struct pl_start {
	struct pl_rec h;
	int32_t pid, ppid;
	uint32_t comm_len; /* the thread name: the process's name, as perf would give */
	uint32_t exe_len;  /* /proc/self/exe */
	uint32_t cwd_len;
	uint32_t argv_len; /* NUL-separated arguments (CTest's process-per-test mapping) */
	/* char comm[comm_len], exe[exe_len], cwd[cwd_len], argv[argv_len]; then padding */
};

struct pl_text {
	struct pl_rec h;
	uint32_t len;
	uint32_t pad;
	/* char text[len]; then padding */
};

#define PL_THREAD_BEGIN 1 /* h.flags */
#define PL_THREAD_END   2

struct pl_thread {
	struct pl_rec h;
	int32_t tid;
	uint32_t pad;
};

/* h.flags of PL_REC_EXEC: what the exec'ing process found about the program. */
#define PL_EXEC_STATIC    0x01 /* no ELF interpreter: LD_PRELOAD cannot reach it */
#define PL_EXEC_SETID     0x02 /* set-user/group-ID: the loader ignores LD_PRELOAD */
#define PL_EXEC_ENV_FIXED 0x04 /* LD_PRELOAD or CIPROF_PRELOAD_DIR was put back into envp */
#define PL_EXEC_FAILED    0x08 /* the exec call returned: the image goes on */
#define PL_EXEC_SPAWN     0x10 /* posix_spawn: pid is the new child, not the caller */

struct pl_exec {
	struct pl_rec h;
	int32_t pid; /* the process that will run the program */
	uint32_t path_len;
	/* char path[path_len]; then padding */
};

#endif
