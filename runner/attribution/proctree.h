/* The sampled process tree: each process's name and address space (its executable mappings),
 * rebuilt from FORK, EXIT, COMM and MMAP2 records, so that every sampled address can be turned
 * into (object, file offset) at the moment of the sample. Objects ("dsos") are shared by all
 * processes, so a library mapped by a thousand processes is symbolized once. */
#ifndef CP_PROCTREE_H
#define CP_PROCTREE_H

#include "common/hashidx.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum dso_kind {
	DSO_FILE,    /* a file on disk: symbolized from its ELF/DWARF */
	DSO_ANON,    /* anonymous executable memory of one process: JIT, via /tmp/perf-PID.map */
	DSO_VDSO,    /* the kernel's [vdso] */
	DSO_UNKNOWN, /* an address in no known mapping */
};

struct dso {
	char *path; /* owned: file path, or "[vdso]", "//anon", "[unknown]" */
	enum dso_kind kind;
	pid_t pid; /* DSO_ANON: the process whose perf map names it */
};

struct map {
	uint64_t start, end; /* [start, end) */
	uint64_t pgoff;
	uint32_t dso; /* index into proctree.dsos */
};

struct addr_space {
	struct map *maps; /* sorted by start, never overlapping */
	size_t n, alloc;
};

struct proc {
	pid_t pid;
	pid_t ppid;
	char *name; /* owned: executable name, the root frame of its stacks */
	struct addr_space as;
	int exited;
	int maps_from_procfs; /* filled from /proc/PID/maps after a miss */
	int heard; /* 0: seen to fork, no record of its own since (runner.c, unseen_processes) */
};

struct proctree {
	struct proc **procs; /* owned; live and recently exited processes */
	size_t nprocs, procs_alloc;
	struct hashidx proc_idx; /* pid -> position; rebuilt when exited entries are dropped */

	struct dso *dsos;
	size_t ndsos, dsos_alloc;
	struct hashidx dso_idx;

	uint64_t processes_seen, threads_seen;
	int procfs_fallback; /* read /proc/PID/maps for processes with no known mapping */
};

void proctree_init(struct proctree *t);
void proctree_release(struct proctree *t);

/* The process, or NULL. Borrowed. */
struct proc *proctree_find(struct proctree *t, pid_t pid);
/* The process, created (counted as seen) when new, with name as given. Borrowed. */
struct proc *proctree_get(struct proctree *t, pid_t pid, const char *name);

/* Whether pid is a live process (not a zombie). */
int proctree_pid_alive(pid_t pid);
/* FORK of a process (pid != ppid: copies the parent's maps and name) or a thread. */
void proctree_fork(struct proctree *t, pid_t pid, pid_t ppid, pid_t tid, pid_t ptid);
/* EXIT: a process's main thread ended; its maps are freed. */
void proctree_exit(struct proctree *t, pid_t pid, pid_t tid);
/* COMM: with exec set, the process exec'd: its address space starts empty and its name is
 * comm until the first mapping names the executable in full. */
void proctree_comm(struct proctree *t, pid_t pid, pid_t tid, const char *comm, int exec);
/* MMAP2 of an executable mapping: replaces whatever it overlaps. */
void proctree_mmap(struct proctree *t, pid_t pid, uint64_t addr, uint64_t len, uint64_t pgoff,
                   const char *filename);

/* Index of the dso for (kind, path, pid), created when new. */
uint32_t proctree_dso(struct proctree *t, enum dso_kind kind, const char *path, pid_t pid);

/*
 * Translates addr in process p to (dso, offset): a file offset for DSO_FILE, the offset into
 * the image for DSO_VDSO, the absolute address for DSO_ANON and DSO_UNKNOWN.
 */
void proctree_resolve(struct proctree *t, struct proc *p, uint64_t addr, uint32_t *dso,
                      uint64_t *offset);

/*
 * Resolves a call chain (ips leaf first) frame by frame with proctree_resolve, and ends it at
 * the first caller frame that lies in no mapping at all: a return address outside every
 * executable mapping is not a frame but where a frame-pointer walk left the real stack
 * (code without frame pointers), and what follows it is garbage. The leaf is always kept.
 * Returns how many frames were kept.
 */
size_t proctree_resolve_chain(struct proctree *t, struct proc *p, const uint64_t *ips, size_t n,
                              uint32_t *dsos, uint64_t *offsets);

/* Maps helpers, exposed for unit tests. */
void addr_space_insert(struct addr_space *as, const struct map *m);
const struct map *addr_space_find(const struct addr_space *as, uint64_t addr);
void addr_space_copy(struct addr_space *dst, const struct addr_space *src);
void addr_space_release(struct addr_space *as);
/* Parses /proc/PID/maps text, inserting executable mappings; returns how many. */
size_t proctree_load_procfs_maps(struct proctree *t, struct proc *p, const char *text);

#endif
