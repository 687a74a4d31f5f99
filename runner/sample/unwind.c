/* DWARF unwinding of copied user stacks with libdwfl (see unwind.h). Each distinct set of
 * executable mappings gets one Dwfl session whose modules are reported at their load biases and
 * which is attached to thread callbacks that serve registers and memory from the sample being
 * unwound; sessions are kept in a small least-recently-used cache. The objects themselves
 * (program headers, Elf, .eh_frame CFI, the vdso copy) come from the run's object cache
 * (runner/objcache.h): a module's Elf is handed to libdwfl only when an unwind reaches it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runner/sample/unwind.h"
#include "runner/objcache.h"

#include "common/hashidx.h"
#include "common/log.h"
#include "common/xalloc.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <link.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SPACES_DEFAULT 16

/* perf's register numbers (PERF_REG_X86_*) of the DWARF registers, in enum unwind_reg order. */
static const unsigned char perf_reg_of[UNWIND_NREGS] = {
        0 /* AX */, 3 /* DX */, 2 /* CX */,  1 /* BX */,   4 /* SI */, 5 /* DI */,
        6 /* BP */, 7 /* SP */, 16 /* R8 */, 17,           18,         19,
        20,         21,         22,          23 /* R15 */, 8 /* IP */,
};

void unwind_regs_from_perf(struct unwind_regs *out, uint64_t mask, const uint64_t *values,
                           size_t nvalues)
{
	memset(out, 0, sizeof(*out));
	for (int d = 0; d < UNWIND_NREGS; d++) {
		unsigned bit = perf_reg_of[d];
		if (!(mask & (1ULL << bit)))
			continue;
		/* The value's position: how many mask bits lie below this one. */
		size_t pos = (size_t)__builtin_popcountll(mask & ((1ULL << bit) - 1));
		if (pos >= nvalues)
			continue;
		memcpy(&out->r[d], &values[pos], sizeof(uint64_t));
		out->valid |= 1u << d;
	}
}

/* ---- address-space sessions ---- */

struct space_map { /* a mapping of an object, as remembered by its session */
	uint64_t start, end, pgoff;
	struct objfile *obj; /* the cache's; one generation of one file */
};

/* What the thread callbacks see of the sample being unwound. */
struct sample_ctx {
	const struct unwind_regs *regs;
	const unsigned char *stack;
	uint64_t stack_addr;
	size_t stack_len;
	int beyond; /* a read fell above the copy's end */
	uint64_t *ips;
	size_t n, max;
	uint64_t last_sp;
	int have_sp;
	int stop_loop; /* a frame did not move up the stack */
};

struct space {
	uint64_t hash;
	struct space_map *maps; /* owned */
	size_t nmaps;
	Dwfl *dwfl; /* NULL: nothing usable was reported */
	uint64_t last_use;
	struct sample_ctx *ctx; /* the sample being unwound, during unwinder_unwind only */
};

struct unwinder {
	struct space **spaces; /* owned */
	size_t nspaces, spaces_alloc, max_spaces;
	uint64_t clock;
	pid_t next_pid; /* libdwfl wants a pid per session; nothing reads it */

	struct objcache *objs; /* the run's objects (borrowed, or owned when own_objs) */
	int own_objs;

	struct space_map *scratch; /* reportable maps of the sample at hand */
	size_t scratch_alloc;

	Dwfl_Callbacks callbacks; /* libdwfl keeps pointers to these: they live with u */
	Dwfl_Thread_Callbacks thread_callbacks;
	char *debuginfo_path;
	struct unwinder_stats stats;
};

/* ---- thread callbacks: the sample's registers and stack copy, nothing else ---- */

static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)arg;
	(void)thread_argp;
	return 0; /* threads are asked for by id only */
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	(void)dwfl;
	struct sample_ctx *c = ((struct space *)arg)->ctx;
	if (!c)
		return false;
	if (addr >= c->stack_addr && c->stack_len >= sizeof(*result) &&
	    addr - c->stack_addr <= c->stack_len - sizeof(*result)) {
		memcpy(result, c->stack + (addr - c->stack_addr), sizeof(*result));
		return true;
	}
	/* Callers' frames lie above: a read past the copy means the stack was deeper. */
	if (addr >= c->stack_addr + c->stack_len)
		c->beyond = 1;
	return false;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct sample_ctx *c = ((struct space *)arg)->ctx;
	if (!c)
		return false;
	for (int i = 0; i < UNWIND_RIP; i++) {
		if (!(c->regs->valid & (1u << i)))
			continue;
		Dwarf_Word v = c->regs->r[i];
		if (!dwfl_thread_state_registers(thread, i, 1, &v))
			return false;
	}
	dwfl_thread_state_register_pc(thread, c->regs->r[UNWIND_RIP]);
	return true;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct sample_ctx *c = arg;
	Dwarf_Addr pc;
	if (!dwfl_frame_pc(state, &pc, NULL) || (c->n && pc == 0))
		return DWARF_CB_ABORT;
	/* Each caller's frame lies above its callee's: anything else is a loop. */
	Dwarf_Word sp;
	if (dwfl_frame_reg(state, UNWIND_RSP, &sp) == 0) {
		if (c->have_sp && sp <= c->last_sp && c->n) {
			c->stop_loop = 1;
			return DWARF_CB_ABORT;
		}
		c->last_sp = sp;
		c->have_sp = 1;
	}
	c->ips[c->n++] = pc;
	return c->n < c->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* No separate debug files: .eh_frame (in every x86-64 object) or the object's own
 * .debug_frame is what unwinding uses, and searching debug directories per object would cost
 * more than it brings. */
static int cb_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                             Dwarf_Addr base, const char *file_name, const char *debuglink_file,
                             GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

/* ---- lifecycle ---- */

struct unwinder *unwinder_new(struct objcache *objs)
{
	struct unwinder *u = xcalloc(1, sizeof(*u));
	u->max_spaces = MAX_SPACES_DEFAULT;
	u->objs = objs;
	if (!objs) {
		u->objs = objcache_new();
		u->own_objs = 1;
	}
	u->callbacks.find_elf = objcache_find_elf;
	u->callbacks.find_debuginfo = cb_find_debuginfo;
	u->callbacks.section_address = dwfl_offline_section_address;
	u->callbacks.debuginfo_path = &u->debuginfo_path;
	u->thread_callbacks.next_thread = cb_next_thread;
	u->thread_callbacks.get_thread = cb_get_thread;
	u->thread_callbacks.memory_read = cb_memory_read;
	u->thread_callbacks.set_initial_registers = cb_set_initial_registers;
	return u;
}

static void space_free(struct space *sp)
{
	if (!sp)
		return;
	if (sp->dwfl)
		dwfl_end(sp->dwfl);
	free(sp->maps);
	free(sp);
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nspaces; i++)
		space_free(u->spaces[i]);
	free(u->spaces);
	if (u->own_objs)
		objcache_free(u->objs);
	free(u->scratch);
	free(u);
}

static void evict_lru(struct unwinder *u);

void unwinder_set_max_spaces(struct unwinder *u, size_t n)
{
	u->max_spaces = n ? n : 1;
	while (u->nspaces > u->max_spaces)
		evict_lru(u);
}

const struct unwinder_stats *unwinder_stats(const struct unwinder *u)
{
	return &u->stats;
}

/* ---- objects ---- */

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

/* Reports each object of the space once, at the bias of its first mapping. */
static void report_modules(struct unwinder *u, struct space *sp)
{
	dwfl_report_begin(sp->dwfl);
	for (size_t i = 0; i < sp->nmaps; i++) {
		const struct space_map *m = &sp->maps[i];
		int seen = 0;
		for (size_t k = 0; k < i && !seen; k++)
			seen = sp->maps[k].obj == m->obj;
		if (seen)
			continue;
		struct objfile *o = m->obj;
		uint64_t bias;
		if (objfile_bias(o, m->start, m->pgoff, &bias) < 0) {
			u->stats.modules_failed++;
			continue;
		}
		if (!objfile_report(u->objs, sp->dwfl, o, basename_of(o->path), bias)) {
			log_debug("unwind: cannot report %s: %s", o->path, dwfl_errmsg(-1));
			u->stats.modules_failed++;
			continue;
		}
		u->stats.modules_reported++;
	}
	dwfl_report_end(sp->dwfl, NULL, NULL);
}

static struct space *space_new(struct unwinder *u, uint64_t hash, const struct space_map *maps,
                               size_t n)
{
	struct space *sp = xcalloc(1, sizeof(*sp));
	sp->hash = hash;
	sp->nmaps = n;
	sp->maps = xmalloc(st_mult(n ? n : 1, sizeof(*maps)));
	memcpy(sp->maps, maps, n * sizeof(*maps));
	sp->dwfl = n ? dwfl_begin(&u->callbacks) : NULL;
	if (!sp->dwfl)
		return sp;
	report_modules(u, sp);
	/* The architecture comes from the reported modules; no module, no session. */
	if (!dwfl_attach_state(sp->dwfl, NULL, ++u->next_pid, &u->thread_callbacks, sp)) {
		log_debug("unwind: cannot attach a state: %s", dwfl_errmsg(-1));
		dwfl_end(sp->dwfl);
		sp->dwfl = NULL;
	}
	u->stats.spaces_created++;
	return sp;
}

static void evict_lru(struct unwinder *u)
{
	size_t lru = 0;
	for (size_t i = 1; i < u->nspaces; i++)
		if (u->spaces[i]->last_use < u->spaces[lru]->last_use)
			lru = i;
	space_free(u->spaces[lru]);
	u->spaces[lru] = u->spaces[--u->nspaces];
	u->stats.spaces_evicted++;
}

static int same_maps(const struct space_map *a, const struct space_map *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].start != b[i].start || a[i].end != b[i].end || a[i].pgoff != b[i].pgoff ||
		    a[i].obj != b[i].obj)
			return 0;
	return 1;
}

/* The cached session for maps (reportable ones only), made when new. */
static struct space *get_space(struct unwinder *u, const struct unwind_map *maps, size_t nmaps)
{
	size_t n = 0;
	uint64_t h = 0x9e3779b97f4a7c15ULL;
	for (size_t i = 0; i < nmaps; i++) {
		struct objfile *o = objcache_get(u->objs, maps[i].path);
		if (!o) /* anonymous or JIT memory, a deleted or unreadable file: no CFI */
			continue;
		ALLOC_GROW(u->scratch, n + 1, u->scratch_alloc);
		u->scratch[n++] = (struct space_map){maps[i].start, maps[i].end, maps[i].pgoff, o};
		h = hash_mix(h ^ hash_mix(maps[i].start ^ (maps[i].end << 7) ^ maps[i].pgoff) ^
		             (uint64_t)(uintptr_t)o);
	}
	for (size_t i = 0; i < u->nspaces; i++) {
		struct space *sp = u->spaces[i];
		if (sp->hash == h && sp->nmaps == n && same_maps(sp->maps, u->scratch, n))
			return sp;
	}
	if (u->nspaces >= u->max_spaces)
		evict_lru(u);
	struct space *sp = space_new(u, h, u->scratch, n);
	ALLOC_GROW(u->spaces, u->nspaces + 1, u->spaces_alloc);
	u->spaces[u->nspaces++] = sp;
	return sp;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

size_t unwinder_unwind(struct unwinder *u, const struct unwind_map *maps, size_t nmaps,
                       const struct unwind_regs *regs, const void *stack, uint64_t stack_addr,
                       size_t stack_len, uint64_t *ips, size_t max, enum unwind_end *end)
{
	enum unwind_end why = UNWIND_END_NO_SPACE;
	if (!max || !(regs->valid & (1u << UNWIND_RIP))) {
		if (end)
			*end = why;
		return 0;
	}
	double t0 = now();
	struct space *sp = get_space(u, maps, nmaps);
	sp->last_use = ++u->clock;
	struct sample_ctx c = {
	        .regs = regs,
	        .stack = stack,
	        .stack_addr = stack_addr,
	        .stack_len = stack ? stack_len : 0,
	        .ips = ips,
	        .max = max,
	};
	if (sp->dwfl) {
		sp->ctx = &c;
		int r = dwfl_getthread_frames(sp->dwfl, 1, frame_cb, &c);
		sp->ctx = NULL;
		if (c.n >= max)
			why = UNWIND_END_MAX;
		else if (c.beyond)
			why = UNWIND_END_STACK;
		else if (r == 0)
			why = UNWIND_END_OUTERMOST;
		else
			why = UNWIND_END_INCOMPLETE;
		if (r != 0 && !c.stop_loop && c.n < max)
			log_debug("unwind: stopped after %zu frames: %s", c.n, dwfl_errmsg(-1));
	}
	if (!c.n) /* no session, or libdwfl could not even start: the pc alone */
		ips[c.n++] = regs->r[UNWIND_RIP];
	u->stats.unwinds++;
	u->stats.frames += c.n;
	u->stats.end[why]++;
	u->stats.seconds += now() - t0;
	if (end)
		*end = why;
	return c.n;
}

size_t unwind_merge_fp(const uint64_t *dwarf, size_t ndwarf, const uint64_t *fp, size_t nfp,
                       uint64_t *out, size_t max, int *used_fp)
{
	*used_fp = 0;
	size_t n = 0;
	if (ndwarf && nfp > 1) {
		/* Where the chain holds the DWARF stack's outermost pc, it can carry on from there
		 * (frame pointers resume in callers that keep them). Frame 0 is the sampled pc in
		 * both and proves nothing. */
		for (size_t j = 1; j < nfp; j++) {
			if (fp[j] != dwarf[ndwarf - 1] || ndwarf < 2 || j + 1 >= nfp)
				continue;
			n = ndwarf < max ? ndwarf : max;
			memcpy(out, dwarf, n * sizeof(*out));
			for (size_t k = j + 1; k < nfp && n < max; k++)
				out[n++] = fp[k];
			*used_fp = 1;
			return n;
		}
	}
	/* A longer chain replaces the DWARF stack only when DWARF could not unwind the first frame
	 * (no CFI there: JIT code) or the chain agrees on the first caller: through code without
	 * frame pointers the chain follows whatever %rbp holds, and garbage is worse than a
	 * shorter true stack. */
	int take_fp = nfp > ndwarf && (ndwarf <= 1 || fp[1] == dwarf[1]);
	const uint64_t *src = take_fp ? fp : dwarf;
	size_t len = take_fp ? nfp : ndwarf;
	*used_fp = take_fp;
	n = len < max ? len : max;
	if (n) /* src may be NULL when both stacks are empty */
		memcpy(out, src, n * sizeof(*out));
	return n;
}

/* ---- frame-pointer stacks: the leaf's caller from its CFI ---- */

static int copy_read(const unsigned char *stack, uint64_t stack_addr, size_t stack_len,
                     uint64_t addr, uint64_t *v)
{
	if (!stack || addr < stack_addr || stack_len < 8 || addr - stack_addr > stack_len - 8)
		return -1;
	memcpy(v, stack + (addr - stack_addr), 8);
	return 0;
}

/* A register's rule as libdw spells the common ones: CFA + N, as a location (saved there) or
 * with DW_OP_stack_value as the value itself. */
static int cfa_rule(const Dwarf_Op *ops, size_t nops, uint64_t cfa, uint64_t *where, int *is_value)
{
	size_t i = 0;
	if (nops < 1 || ops[i].atom != DW_OP_call_frame_cfa)
		return -1;
	*where = cfa;
	i++;
	if (i < nops && ops[i].atom == DW_OP_plus_uconst)
		*where += ops[i++].number;
	*is_value = 0;
	if (i < nops && ops[i].atom == DW_OP_stack_value) {
		*is_value = 1;
		i++;
	}
	return i == nops ? 0 : -1;
}

/* The caller's value of DWARF register reg (leaf's CFI frame): 1 known, 0 unknown. */
static int caller_reg(Dwarf_Frame *frame, int reg, uint64_t cfa, const struct unwind_regs *regs,
                      const unsigned char *stack, uint64_t stack_addr, size_t stack_len,
                      uint64_t *out)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	if (dwarf_frame_register(frame, reg, mem, &ops, &nops) != 0)
		return 0;
	if (nops == 0) { /* same value (ops NULL), or undefined */
		if (ops || !(regs->valid & (1u << reg)))
			return 0;
		*out = regs->r[reg];
		return 1;
	}
	uint64_t where;
	int is_value;
	if (cfa_rule(ops, nops, cfa, &where, &is_value) < 0)
		return 0;
	if (is_value) {
		*out = where;
		return 1;
	}
	return copy_read(stack, stack_addr, stack_len, where, out) == 0;
}

/* Finds the leaf's CFA and its caller's return address and %rbp; a LEAF_FIX_* reason when it
 * cannot. */
static int leaf_frame(struct unwinder *u, const struct unwind_map *leaf,
                      const struct unwind_regs *regs, const unsigned char *stack,
                      uint64_t stack_addr, size_t stack_len, uint64_t *ra, uint64_t *rbp,
                      int *rbp_known)
{
	uint64_t pc = regs->r[UNWIND_RIP];
	struct objfile *o = leaf ? objcache_get(u->objs, leaf->path) : NULL;
	Dwarf_CFI *cfi = o ? objfile_cfi(o) : NULL;
	uint64_t bias;
	if (!cfi || objfile_bias(o, leaf->start, leaf->pgoff, &bias) < 0)
		return LEAF_FIX_NO_CFI;
	Dwarf_Frame *frame = NULL;
	if (dwarf_cfi_addrframe(cfi, pc - bias, &frame) != 0)
		return LEAF_FIX_NO_CFI;
	int ret = LEAF_FIX_NO_CFI;
	Dwarf_Op *ops;
	size_t nops;
	uint64_t cfa, where;
	int reg, is_value;
	int64_t off;
	if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops != 1)
		goto out; /* a CFA expression (PLT entries): not evaluated here */
	if (ops[0].atom == DW_OP_bregx) {
		reg = (int)ops[0].number;
		off = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		off = (int64_t)ops[0].number;
	} else {
		goto out;
	}
	if (reg < 0 || reg >= UNWIND_RIP || !(regs->valid & (1u << reg)))
		goto out;
	cfa = regs->r[reg] + (uint64_t)off;
	/* The return address: DWARF column 16 on x86-64. */
	Dwarf_Op mem[3];
	if (dwarf_frame_register(frame, UNWIND_RIP, mem, &ops, &nops) != 0 ||
	    cfa_rule(ops, nops, cfa, &where, &is_value) < 0 || is_value)
		goto out;
	if (copy_read(stack, stack_addr, stack_len, where, ra) < 0) {
		ret = LEAF_FIX_OUT_OF_COPY;
		goto out;
	}
	*rbp_known = caller_reg(frame, UNWIND_RBP, cfa, regs, stack, stack_addr, stack_len, rbp);
	ret = -1;
out:
	free(frame);
	return ret;
}

size_t unwinder_fix_leaf(struct unwinder *u, const struct unwind_map *leaf,
                         const struct unwind_regs *regs, const void *stack, uint64_t stack_addr,
                         size_t stack_len, const uint64_t *fp, size_t nfp, uint64_t *out,
                         size_t max, enum leaf_fix *how)
{
	double t0 = now();
	uint64_t ra = 0, rbp = 0;
	int rbp_known = 0;
	int r = LEAF_FIX_NO_CFI;
	if ((regs->valid & (1u << UNWIND_RIP)) && max >= 2)
		r = leaf_frame(u, leaf, regs, stack, stack_addr, stack_len, &ra, &rbp, &rbp_known);
	size_t n = 0;
	if (r < 0 && nfp > 1 && fp[1] == ra) {
		r = LEAF_FIX_KEPT; /* the leaf has its frame: the kernel's walk found its caller */
	} else if (r < 0 && rbp_known && (regs->valid & (1u << UNWIND_RBP)) &&
	           rbp == regs->r[UNWIND_RBP]) {
		/* %rbp still holds the caller's frame: the kernel's walk skipped the caller only.
		 */
		r = LEAF_FIX_INSERTED;
		out[n++] = regs->r[UNWIND_RIP];
		out[n++] = ra;
		for (size_t i = 1; i < nfp && n < max; i++)
			out[n++] = fp[i];
	} else if (r < 0 && rbp_known) {
		/* The leaf used %rbp for itself: the kernel followed garbage. Follow the saved
		 * %rbp as far as the copy holds frames. */
		r = LEAF_FIX_REBUILT;
		out[n++] = regs->r[UNWIND_RIP];
		out[n++] = ra;
		uint64_t next, ret;
		while (n < max && copy_read(stack, stack_addr, stack_len, rbp + 8, &ret) == 0 &&
		       copy_read(stack, stack_addr, stack_len, rbp, &next) == 0 && ret) {
			out[n++] = ret;
			if (next <= rbp)
				break;
			rbp = next;
		}
	} else if (r < 0) {
		r = LEAF_FIX_NO_CFI; /* the caller's %rbp is unknown: keep the kernel's chain */
	}
	if (!n) {
		n = nfp < max ? nfp : max;
		if (n)
			memcpy(out, fp, n * sizeof(*out));
	}
	u->stats.leaf[r]++;
	u->stats.leaf_seconds += now() - t0;
	if (how)
		*how = (enum leaf_fix)r;
	return n;
}

/* ---- truncated frame-pointer stacks ---- */

/* Whether f (its symbol version, "@@GLIBC_2.34", not part of the name) is one of names. */
static int named(const char *f, const char *const *names, size_t n)
{
	size_t len = strcspn(f, "@");
	for (size_t i = 0; i < n; i++)
		if (strlen(names[i]) == len && !strncmp(f, names[i], len))
			return 1;
	return 0;
}

int unwind_is_thread_start(const char *f)
{
	static const char *const names[] = {"start_thread", "clone",    "clone3",
	                                    "__clone",      "__clone3", "__clone_internal"};
	return named(f, names, sizeof(names) / sizeof(names[0]));
}

int unwind_is_entry_point(const char *f)
{
	static const char *const names[] = {
	        "_start",
	        "__libc_start_main",
	        "__libc_start_call_main",
	        "__libc_start_main_impl",
	        "_dl_start",
	        "_dl_start_user",
	        "runtime.goexit",
	        "runtime.rt0_go",
	        "runtime.mstart",
	        "runtime.goexit.abi0",
	        "runtime.rt0_go.abi0",
	        "runtime.mstart.abi0",
	};
	return unwind_is_thread_start(f) || named(f, names, sizeof(names) / sizeof(names[0]));
}

int unwind_is_libc_start(const char *f)
{
	size_t len = strcspn(f, "@");
	return (len == 6 && !strncmp(f, "_start", 6)) ||
	       (len == 22 && !strncmp(f, "__libc_start_call_main", 22)) ||
	       !strncmp(f, "__libc_start_main", 17);
}

int unwind_is_c_runtime(const char *module)
{
	static const char *const prefixes[] = {
	        "libc.so", "libc-", "ld-linux", "ld-musl", "libpthread.so", "libpthread-", "ld.so"};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(module, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

void unwind_tally_add(struct unwind_tally **w, size_t *n, size_t *alloc, uint32_t str,
                      uint64_t count)
{
	size_t k = 0;
	while (k < *n && (*w)[k].str != str)
		k++;
	if (k == *n) {
		ALLOC_GROW(*w, *n + 1, *alloc);
		(*w)[(*n)++] = (struct unwind_tally){str, 0};
	}
	(*w)[k].count += count;
}

void unwind_tally_top(const struct profile *p, struct unwind_tally *w, size_t n, char *out,
                      size_t size)
{
	size_t len = 0;
	if (size)
		out[0] = '\0';
	for (int pick = 0; pick < 3; pick++) {
		size_t best = n;
		for (size_t k = 0; k < n; k++)
			if (w[k].count && (best == n || w[k].count > w[best].count))
				best = k;
		if (best == n)
			break;
		const char *m = profile_str(p, w[best].str);
		if (!*m)
			m = "[unknown]";
		int wrote = snprintf(out + len, size - len, "%s%s", pick ? ", " : "", m);
		if (wrote < 0 || (size_t)wrote >= size - len)
			break;
		len += (size_t)wrote;
		w[best].count = 0;
	}
}

void unwind_truncation(const struct profile *p, struct unwind_truncation *out)
{
	memset(out, 0, sizeof(*out));
	struct unwind_tally *w = NULL;
	size_t nw = 0, w_alloc = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint32_t node = s->node;
		if (!node || p->frames[p->nodes[node].frame].kind == PROFILE_FRAME_PROCESS)
			continue; /* no frame below the process */
		while (p->nodes[node].parent &&
		       p->frames[p->nodes[p->nodes[node].parent].frame].kind !=
		               PROFILE_FRAME_PROCESS)
			node = p->nodes[node].parent;
		const struct profile_frame *f = &p->frames[p->nodes[node].frame];
		if (!strcmp(profile_str(p, f->function), PROFILE_UNSAMPLED))
			continue; /* time no sample saw: no stack at all */
		out->samples += s->count;
		if (unwind_is_entry_point(profile_str(p, f->function)) ||
		    unwind_is_c_runtime(profile_str(p, f->module)))
			continue;
		out->truncated += s->count;
		const char *fn = profile_str(p, f->function), *mod = profile_str(p, f->module);
		size_t ml = strlen(mod);
		if (ml && !strncmp(fn, mod, ml) && !strncmp(fn + ml, "+0x", 3))
			out->unnamed += s->count;
		unwind_tally_add(&w, &nw, &w_alloc, f->module, s->count);
	}
	/* The three modules where most truncated stacks end, most first. */
	unwind_tally_top(p, w, nw, out->where, sizeof(out->where));
	free(w);
}

void unwind_warn_truncated(const struct profile *p, enum unwind_advice advice)
{
	struct unwind_truncation t;
	unwind_truncation(p, &t);
	if (t.samples < TRUNCATED_WARN_SAMPLES ||
	    (double)t.truncated < TRUNCATED_WARN_SHARE * (double)t.samples)
		return;
	/* Stacks ending in a stripped object's unnamed frames (Debian's libcmocka.so, which
	 * calls every cmocka test): whether they reach the entry point cannot be told, and the
	 * stack rules name such tests all the same (the symbolizer's warning names the object
	 * when it is the project's). */
	if ((double)t.unnamed >= 0.5 * (double)t.truncated) {
		log_verbose("%.0f%% of samples have call stacks whose outermost frame has no "
		            "symbol (most end in %s): stripped, so the entry point is not known",
		            100.0 * (double)t.unnamed / (double)t.samples, t.where);
		return;
	}
	double share = 100.0 * (double)t.truncated / (double)t.samples;
	/* An interpreter's stacks (the module most end in is python3.11, libpython3.11.so,
	 * ruby, libperl.so...): what unwinding can and cannot give differs. */
	static const char *const interp[][2] = {
	        {"python", "Python"}, {"ruby", "Ruby"}, {"perl", "Perl"}};
	const char *first = !strncmp(t.where, "lib", 3) ? t.where + 3 : t.where, *lang = NULL;
	for (size_t i = 0; i < sizeof(interp) / sizeof(interp[0]) && !lang; i++)
		if (!strncmp(first, interp[i][0], strlen(interp[i][0])))
			lang = interp[i][1];
	if (lang && advice == UNWIND_ADVICE_PERF)
		log_warn(
		        "%.0f%% of samples have call stacks that stop short of the program's "
		        "entry point (most end in %s): %s code runs inside its interpreter, whose "
		        "frames are its C functions, never the script's; --unwind dwarf "
		        "--stack-size 32768 recovers the interpreter's callers (docs/unwinding.md)",
		        share, t.where, lang);
	else if (lang)
		log_warn("%.0f%% of samples have call stacks that stop short of the program's "
		         "entry point (most end in %s): %s code runs inside its interpreter, whose "
		         "frames are its C functions, never the script's, and the LD_PRELOAD "
		         "backend walks frame pointers only; the perf backend's --unwind dwarf "
		         "--stack-size 32768 recovers the interpreter's callers where "
		         "perf_event_open is allowed (docs/preload.md, docs/unwinding.md)",
		         share, t.where, lang);
	else if (advice == UNWIND_ADVICE_PERF)
		log_warn(
		        "%.0f%% of samples have call stacks that stop short of the program's entry "
		        "point (most end in %s): code built without frame pointers hides its "
		        "callers; try --unwind dwarf",
		        share, t.where);
	else
		log_warn(
		        "%.0f%% of samples have call stacks that stop short of the program's entry "
		        "point (most end in %s): code built without frame pointers hides its "
		        "callers, and the LD_PRELOAD backend walks frame pointers only; rebuild "
		        "with -fno-omit-frame-pointer, or use the perf backend's --unwind dwarf "
		        "where perf_event_open is allowed (docs/preload.md)",
		        share, t.where);
}

void unwinder_log_leaf(const struct unwinder *u, size_t copy)
{
	const struct unwinder_stats *st = unwinder_stats(u);
	uint64_t all = 0;
	for (int i = 0; i < LEAF_FIX_NREASONS; i++)
		all += st->leaf[i];
	log_verbose("unwind: %llu frame-pointer stacks checked against the leaf's CFI in %.3f s: "
	            "caller already there %llu, inserted %llu, rebuilt from the saved %%rbp %llu; "
	            "no CFI at the pc %llu, return address beyond the %zu-byte copy %llu",
	            (unsigned long long)all, st->leaf_seconds,
	            (unsigned long long)st->leaf[LEAF_FIX_KEPT],
	            (unsigned long long)st->leaf[LEAF_FIX_INSERTED],
	            (unsigned long long)st->leaf[LEAF_FIX_REBUILT],
	            (unsigned long long)st->leaf[LEAF_FIX_NO_CFI], copy,
	            (unsigned long long)st->leaf[LEAF_FIX_OUT_OF_COPY]);
}

void unwind_warn_libc_cut(uint64_t cut, uint64_t samples, const char *where,
                          enum unwind_advice advice)
{
	if (cut < TRUNCATED_WARN_SAMPLES || (double)cut < LOST_TEST_WARN_SHARE * (double)samples)
		return;
	double share = 100.0 * (double)cut / (double)samples;
	if (advice == UNWIND_ADVICE_PERF)
		log_warn("%.1f%% of samples are outside tests because their call stacks end inside "
		         "libc (in %s), whose code has no frame pointers: a test's call into libc "
		         "that calls on (malloc's inner functions, qsort's comparisons) hides the "
		         "test's frame from the walk; --unwind dwarf keeps them "
		         "(docs/attribution.md, Known limits)",
		         share, where);
	else
		log_warn(
		        "%.1f%% of samples are outside tests because their call stacks end inside "
		        "libc (in %s), whose code has no frame pointers: a test's call into libc "
		        "that calls on (malloc's inner functions, qsort's comparisons) hides the "
		        "test's frame, and the LD_PRELOAD backend walks frame pointers only; the "
		        "perf backend's --unwind dwarf keeps them where perf_event_open is allowed "
		        "(docs/attribution.md, Known limits)",
		        share, where);
}
