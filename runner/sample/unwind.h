/* DWARF unwinding of a copied user stack: given a thread's registers at a sample and a copy of
 * the top of its stack, recovers its callers' return addresses from the CFI (.eh_frame,
 * .debug_frame) of the objects mapped in its address space, with libdwfl. It never touches the
 * sampled process (which may have exited): memory reads are served from the copy only.
 * One libdwfl session per distinct address space is cached; the objects come from the run's
 * object cache (runner/objcache.h), opened once for every user. Used by the perf backend's
 * --unwind dwarf; any sampler that copies stacks (the preload backend) can call it too.
 * Also here: the check that frame-pointer stacks look truncated, which suggests --unwind dwarf. */
#ifndef CP_UNWIND_H
#define CP_UNWIND_H

#include "model/profile.h"

#include <stddef.h>
#include <stdint.h>

/* x86-64 registers, numbered as DWARF numbers them (what libdwfl wants). */
enum unwind_reg {
	UNWIND_RAX,
	UNWIND_RDX,
	UNWIND_RCX,
	UNWIND_RBX,
	UNWIND_RSI,
	UNWIND_RDI,
	UNWIND_RBP,
	UNWIND_RSP,
	UNWIND_R8,
	UNWIND_R9,
	UNWIND_R10,
	UNWIND_R11,
	UNWIND_R12,
	UNWIND_R13,
	UNWIND_R14,
	UNWIND_R15,
	UNWIND_RIP,
	UNWIND_NREGS
};

struct unwind_regs {
	uint64_t r[UNWIND_NREGS]; /* indexed by enum unwind_reg */
	uint32_t valid;           /* bit i set: r[i] is known; unknown ones are never guessed */
};

/*
 * The perf_event_open sample_regs_user mask naming every general-purpose x86-64 register
 * (AX..IP and R8..R15; FLAGS and the segment registers are not needed to unwind).
 */
#define UNWIND_PERF_REGS_MASK 0x0000000000ff01ffULL

/*
 * Fills out from a PERF_SAMPLE_REGS_USER array: values[] holds one value per bit set in mask,
 * in ascending bit order (nvalues of them; extra bits are ignored). Bits outside the x86-64
 * general-purpose registers are skipped.
 */
void unwind_regs_from_perf(struct unwind_regs *out, uint64_t mask, const uint64_t *values,
                           size_t nvalues);

/* One executable mapping of the address space. */
struct unwind_map {
	uint64_t start, end; /* [start, end) */
	uint64_t pgoff;      /* file offset mapped at start */
	const char *path;    /* borrowed: the file, or "[vdso]"; any other name (anonymous or JIT
	                      * memory, "... (deleted)" files) has no CFI and is skipped */
};

/* Why an unwind stopped. */
enum unwind_end {
	UNWIND_END_OUTERMOST,  /* the CFI marks the last frame outermost (_start, clone3...) */
	UNWIND_END_STACK,      /* a read fell beyond the copied stack: the stack is deeper than
	                        * the copy (--stack-size) */
	UNWIND_END_INCOMPLETE, /* a pc outside every object with CFI (JIT code, a stripped
	                        * object without .eh_frame), or CFI that needs unknown state */
	UNWIND_END_MAX,        /* max frames were written */
	UNWIND_END_NO_SPACE,   /* no usable object in the address space: only the pc */
};

/* What unwinder_fix_leaf did with a frame-pointer chain. */
enum leaf_fix {
	LEAF_FIX_KEPT,        /* the chain already holds the leaf's caller: the leaf has a frame */
	LEAF_FIX_INSERTED,    /* the caller was missing (a frameless leaf, a prologue or an
	                       * epilogue): inserted from the leaf's CFI */
	LEAF_FIX_REBUILT,     /* the leaf had put its own value in %rbp, so the chain was
	                       * garbage: rebuilt from the saved %rbp, as far as the copy goes */
	LEAF_FIX_NO_CFI,      /* no object or no CFI at the pc, or a rule not handled: kept */
	LEAF_FIX_OUT_OF_COPY, /* the return address lies beyond the stack copy: kept */
	LEAF_FIX_NREASONS
};

struct unwinder_stats {
	uint64_t unwinds, frames;
	uint64_t spaces_created, spaces_evicted;
	uint64_t modules_reported, modules_failed;
	uint64_t end[UNWIND_END_NO_SPACE + 1]; /* unwinds by how they ended */
	double seconds; /* CPU time spent in unwinder_unwind (session creation included) */
	uint64_t leaf[LEAF_FIX_NREASONS]; /* unwinder_fix_leaf calls by outcome */
	double leaf_seconds;              /* time spent in unwinder_fix_leaf */
};

/* Heap object; not thread-safe (one per sampling thread). */
struct unwinder;
struct objcache;

/* objs: the run's object cache (borrowed: it must outlive the unwinder), or NULL for one of
 * its own. */
struct unwinder *unwinder_new(struct objcache *objs);
void unwinder_free(struct unwinder *u);

/* How many address-space sessions stay cached (default 16); each holds the open files of its
 * objects. The least recently used is closed beyond that. */
void unwinder_set_max_spaces(struct unwinder *u, size_t n);

/* Counters since unwinder_new. Borrowed. */
const struct unwinder_stats *unwinder_stats(const struct unwinder *u);

/*
 * Unwinds one sample. maps[0..nmaps) are the executable mappings of its address space at the
 * moment of the sample (any order); the cached session for exactly this set is reused, a new
 * one is made when the set changed (exec, dlopen). regs are the registers at the sample (IP and
 * SP needed; the more the better). stack[0..stack_len) is a copy of the memory at stack_addr
 * (normally the sampled SP upward). Writes at most max pcs to ips, leaf first; ips[0] is the
 * sampled pc, the others return addresses. *end (may be NULL) says why it stopped.
 * Returns the number of pcs written: 0 only when regs has no IP or max is 0.
 */
size_t unwinder_unwind(struct unwinder *u, const struct unwind_map *maps, size_t nmaps,
                       const struct unwind_regs *regs, const void *stack, uint64_t stack_addr,
                       size_t stack_len, uint64_t *ips, size_t max, enum unwind_end *end);

/*
 * Merges a DWARF-unwound stack with the kernel's frame-pointer chain of the same sample (both
 * leaf first) into out (at most max pcs): the DWARF stack, continued by the frame-pointer chain
 * past the DWARF stack's last pc when the chain holds that pc; else the chain when it is longer
 * and either agrees on the first caller or DWARF has only the pc; else the DWARF stack.
 * Returns the number written and sets *used_fp when frame-pointer frames were used.
 */
size_t unwind_merge_fp(const uint64_t *dwarf, size_t ndwarf, const uint64_t *fp, size_t nfp,
                       uint64_t *out, size_t max, int *used_fp);

/*
 * Frame-pointer stacks: the kernel's walk (fp[0..nfp), leaf first) follows %rbp, which misses
 * the caller of a leaf that has no frame of its own (GCC 12 ignores
 * -mno-omit-leaf-frame-pointer) and of any function sampled in its prologue or epilogue.
 * This reads the CFI (.eh_frame) of the leaf's object at the sampled pc, finds the CFA from
 * regs and the return address (and the caller's %rbp) in the stack copy
 * stack[0..stack_len) taken at stack_addr, and writes to out (at most max pcs) the chain with
 * the missing caller inserted, or rebuilt from the saved %rbp when the leaf had changed it;
 * else the chain unchanged. leaf is the executable mapping holding the pc (NULL: none). Each
 * object's CFI is the object cache's, read once (again when the file changes); no
 * address-space session is made. *how (may be NULL) says what was done.
 */
size_t unwinder_fix_leaf(struct unwinder *u, const struct unwind_map *leaf,
                         const struct unwind_regs *regs, const void *stack, uint64_t stack_addr,
                         size_t stack_len, const uint64_t *fp, size_t nfp, uint64_t *out,
                         size_t max, enum leaf_fix *how);

/* Says at -v what unwinder_fix_leaf did (copy: the stack copy's size, for the words). */
void unwinder_log_leaf(const struct unwinder *u, size_t copy);

/* ---- truncated frame-pointer stacks ---- */

struct unwind_truncation {
	uint64_t samples;   /* samples with at least one frame */
	uint64_t truncated; /* of them, stacks not starting at an entry point */
	uint64_t unnamed;   /* of those, the ones whose outermost frame has no symbol (MOD+0x...) */
	char where[256];    /* the modules most truncated stacks end in, ", "-separated */
};

/*
 * Whether function is where a process's or thread's stack begins: _start, __libc_start_main,
 * __libc_start_call_main, start_thread, clone, clone3 and their aliases, Go's runtime.goexit,
 * runtime.rt0_go and runtime.mstart.
 */
int unwind_is_entry_point(const char *function);
/* Whether function is where a C thread's stack begins: start_thread, clone, clone3 and their
 * aliases (of the entry points, not a process's main thread's, nor Go's runtime threads'). */
int unwind_is_thread_start(const char *function);

/*
 * Whether function is one of the C library's frames where the main thread's stack begins
 * (_start, __libc_start_main and its variants, __libc_start_call_main), in whatever module:
 * a static executable holds them itself. A frame-pointer walk that goes past them follows a
 * register the C library never set up: what it finds there is garbage.
 */
int unwind_is_libc_start(const char *function);

/* A string id of a profile and the samples it holds: where stacks end, for the warnings. */
struct unwind_tally {
	uint32_t str;
	uint64_t count;
};

/* Adds count to str's tally in (*w, *n, *alloc). */
void unwind_tally_add(struct unwind_tally **w, size_t *n, size_t *alloc, uint32_t str,
                      uint64_t count);
/* The three strings holding most, most first, ", "-separated into out ("[unknown]" for an
 * empty one); their counts are zeroed. */
void unwind_tally_top(const struct profile *p, struct unwind_tally *w, size_t n, char *out,
                      size_t size);

/* Whether module (a file name) is part of the C runtime where every process and thread
 * starts: libc, ld.so, libpthread. */
int unwind_is_c_runtime(const char *module);

/*
 * Counts, over p's samples, the stacks that look truncated: whose outermost frame is neither an
 * entry point (unwind_is_entry_point) nor inside the C runtime (libc, ld.so, libpthread: with
 * glibc's own frames unnamed when its debug symbols are missing, reaching it means the chain
 * reached the program's start), which is what frame-pointer chains through code built without
 * frame pointers look like.
 */
void unwind_truncation(const struct profile *p, struct unwind_truncation *out);

/* The stop-short warning's bar: at least this share of at least this many samples (also
 * the perf backend's bar for its depth-limit warnings). */
#define TRUNCATED_WARN_SHARE   0.30
#define TRUNCATED_WARN_SAMPLES 20

/* Who reads the advice of unwind_warn_truncated: the perf backend (--unwind dwarf is the
 * cure) or the LD_PRELOAD backend (frame pointers only: rebuilding is, or the perf backend). */
enum unwind_advice { UNWIND_ADVICE_PERF, UNWIND_ADVICE_PRELOAD };

/*
 * After a run with frame-pointer stacks: one warning when at least 30 % of p's samples (20
 * or more) have stacks that stop short of an entry point (unwind_truncation), the sign of
 * code built without frame pointers, with the advice that fits the backend.
 */
void unwind_warn_truncated(const struct profile *p, enum unwind_advice advice);

/* The bar of the warnings about samples a stack rule could not name (aggregator.libc_cut,
 * aggregator.thread_lost): this share of the samples, TRUNCATED_WARN_SAMPLES or more. */
#define LOST_TEST_WARN_SHARE 0.02

/*
 * After a run with frame-pointer stacks: one warning when at least LOST_TEST_WARN_SHARE of the
 * samples (20 or more) lost their test because their stacks end inside libc short of an entry
 * point, in processes whose tests a stack rule names (aggregator.libc_cut): libc without
 * frame pointers calling on (malloc's inner functions, qsort's comparisons) hides the test's
 * frame. where: those stacks' outermost functions, ", "-separated.
 */
void unwind_warn_libc_cut(uint64_t cut, uint64_t samples, const char *where,
                          enum unwind_advice advice);

#endif
