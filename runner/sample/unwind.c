/* DWARF unwinding of copied user stacks with libdwfl (see unwind.h). Each distinct set of
 * executable mappings gets one Dwfl session whose modules are reported at their load biases and
 * which is attached to thread callbacks that serve registers and memory from the sample being
 * unwound; sessions are kept in a small least-recently-used cache, and the ELF program headers
 * needed to compute a bias are read once per file. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runner/sample/unwind.h"
#include "runner/sample/vdso.h"

#include "common/hashidx.h"
#include "common/log.h"
#include "common/xalloc.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_SPACES_DEFAULT 16
#define MAX_SEGMENTS       16
#define CFI_RECHECK_NS     1000000000ULL

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

/* ---- per-file ELF facts, shared by all sessions ---- */

struct segment {
	uint64_t offset, vaddr, filesz;
};

struct fileinfo {
	int seen;    /* read at least once: the identity below is valid */
	int ok;      /* an ELF file whose program headers were read */
	int is_exec; /* ET_EXEC: its addresses are absolute */
	dev_t dev;
	ino_t ino;
	int64_t mtime_sec, mtime_nsec;
	struct segment segs[MAX_SEGMENTS];
	size_t nsegs;
	/* unwinder_fix_leaf: the file's .eh_frame, opened on first use, dropped when the file
	 * changes; checked against the file at most once a second (CFI_RECHECK_NS). */
	int cfi_fd;
	Elf *cfi_elf;
	Dwarf_CFI *cfi; /* NULL: none, or not opened yet (cfi_tried says which) */
	int cfi_tried;
	uint64_t cfi_checked_ns;
};

/* ---- address-space sessions ---- */

struct space_map { /* a reportable mapping, as remembered by its session */
	uint64_t start, end, pgoff;
	uint32_t path; /* index into unwinder.paths */
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

	char **paths; /* interned map paths, each its own allocation */
	size_t npaths, paths_alloc;
	struct hashidx path_idx;

	struct fileinfo *files; /* by path index; files[i].path set once looked at */
	size_t files_alloc;

	int vdso_fd; /* memfd holding this process's vdso image, -1 before, -2 unavailable */
	struct fileinfo vdso;

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

struct unwinder *unwinder_new(void)
{
	struct unwinder *u = xcalloc(1, sizeof(*u));
	elf_version(EV_CURRENT); /* libelf before any elf_begin (libdwfl does it for its own) */
	u->max_spaces = MAX_SPACES_DEFAULT;
	hashidx_init(&u->path_idx);
	u->vdso_fd = -1;
	u->callbacks.find_elf = dwfl_build_id_find_elf;
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

static void cfi_drop(struct fileinfo *fi);

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nspaces; i++)
		space_free(u->spaces[i]);
	free(u->spaces);
	for (size_t i = 0; i < u->npaths; i++)
		free(u->paths[i]);
	free(u->paths);
	for (size_t i = 0; i < u->files_alloc; i++)
		cfi_drop(&u->files[i]);
	cfi_drop(&u->vdso);
	free(u->files);
	hashidx_release(&u->path_idx);
	if (u->vdso_fd >= 0)
		close(u->vdso_fd);
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

/* ---- paths and ELF facts ---- */

static int path_eq(const void *ctx, uint32_t pos, const void *key)
{
	return !strcmp(((const struct unwinder *)ctx)->paths[pos], key);
}

static uint32_t path_id(struct unwinder *u, const char *path, uint64_t h)
{
	int64_t pos = hashidx_find(&u->path_idx, h, path_eq, u, path);
	if (pos >= 0)
		return (uint32_t)pos;
	ALLOC_GROW(u->paths, u->npaths + 1, u->paths_alloc);
	u->paths[u->npaths] = xstrdup(path);
	hashidx_insert(&u->path_idx, h, (uint32_t)u->npaths);
	return (uint32_t)u->npaths++;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

/* Whether a mapping's object can give CFI: a file still on disk, or the vdso. */
static int reportable(const char *path)
{
	if (!path)
		return 0;
	if (!strcmp(path, "[vdso]"))
		return 1;
	return path[0] == '/' && strncmp(path, "//anon", 6) && strncmp(path, "/memfd:", 7) &&
	       !ends_with(path, " (deleted)");
}

/* Reads e_type and the PT_LOAD segments of the ELF open on fd into fi. */
static int read_segments(struct fileinfo *fi, int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	int ret = -1;
	GElf_Ehdr eh;
	size_t phnum;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    elf_getphdrnum(elf, &phnum) < 0)
		goto out;
	fi->is_exec = eh.e_type == ET_EXEC;
	fi->nsegs = 0;
	for (size_t i = 0; i < phnum && fi->nsegs < MAX_SEGMENTS; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		fi->segs[fi->nsegs++] = (struct segment){ph.p_offset, ph.p_vaddr, ph.p_filesz};
	}
	ret = fi->nsegs ? 0 : -1;
out:
	if (elf)
		elf_end(elf);
	return ret;
}

static void cfi_drop(struct fileinfo *fi)
{
	if (fi->cfi)
		dwarf_cfi_end(fi->cfi);
	if (fi->cfi_elf)
		elf_end(fi->cfi_elf);
	if (fi->cfi_tried && fi->cfi_fd >= 0)
		close(fi->cfi_fd);
	fi->cfi = NULL;
	fi->cfi_elf = NULL;
	fi->cfi_fd = -1;
	fi->cfi_tried = 0;
}

/* The facts of file path id, re-read when the file changed since they were read. */
static const struct fileinfo *file_info(struct unwinder *u, uint32_t id)
{
	if (id >= u->files_alloc) {
		size_t old = u->files_alloc;
		ALLOC_GROW(u->files, (size_t)id + 1, u->files_alloc);
		memset(u->files + old, 0, (u->files_alloc - old) * sizeof(*u->files));
	}
	struct fileinfo *fi = &u->files[id];
	const char *path = u->paths[id];
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		fi->ok = 0;
		return fi;
	}
	if (fi->seen && st.st_dev == fi->dev && st.st_ino == fi->ino &&
	    st.st_mtim.tv_sec == fi->mtime_sec && st.st_mtim.tv_nsec == fi->mtime_nsec)
		return fi;
	cfi_drop(fi);
	fi->seen = 1;
	fi->dev = st.st_dev;
	fi->ino = st.st_ino;
	fi->mtime_sec = st.st_mtim.tv_sec;
	fi->mtime_nsec = st.st_mtim.tv_nsec;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	fi->ok = fd >= 0 && read_segments(fi, fd) == 0;
	if (fd >= 0)
		close(fd);
	return fi;
}

/* The vdso's image (runner/sample/vdso.c), read once; -2 when unavailable. */
static int vdso_fd(struct unwinder *u)
{
	if (u->vdso_fd != -1)
		return u->vdso_fd;
	u->vdso_fd = -2;
	int fd = vdso_image_fd();
	if (fd < 0)
		return -2;
	if (read_segments(&u->vdso, fd) < 0) {
		close(fd);
		return -2;
	}
	u->vdso.ok = 1;
	u->vdso_fd = fd;
	return fd;
}

/* The load bias of an object mapped at start from file offset pgoff: where its link-time
 * addresses landed. -1 when no PT_LOAD segment holds pgoff. */
static int bias_of(const struct fileinfo *fi, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	if (fi->is_exec) {
		*bias = 0;
		return 0;
	}
	for (size_t i = 0; i < fi->nsegs; i++) {
		const struct segment *g = &fi->segs[i];
		/* Mappings start on page boundaries, segments need not. */
		uint64_t seg_page = g->offset & ~(uint64_t)4095;
		if (pgoff >= seg_page && pgoff < g->offset + (g->filesz ? g->filesz : 1)) {
			*bias = start - pgoff + g->offset - g->vaddr;
			return 0;
		}
	}
	return -1;
}

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
			seen = sp->maps[k].path == m->path;
		if (seen)
			continue;
		const char *path = u->paths[m->path];
		int vdso = !strcmp(path, "[vdso]");
		const struct fileinfo *fi;
		int fd = -1;
		if (vdso) {
			int vfd = vdso_fd(u);
			fi = &u->vdso;
			if (vfd < 0 || (fd = dup(vfd)) < 0) {
				u->stats.modules_failed++;
				continue;
			}
		} else {
			fi = file_info(u, m->path);
		}
		uint64_t bias;
		if (!fi->ok || bias_of(fi, m->start, m->pgoff, &bias) < 0) {
			if (fd >= 0)
				close(fd);
			u->stats.modules_failed++;
			continue;
		}
		Dwfl_Module *mod =
		        dwfl_report_elf(sp->dwfl, basename_of(path), path, fd, bias, true);
		if (!mod) {
			if (fd >= 0)
				close(fd); /* consumed only on success */
			log_debug("unwind: cannot report %s: %s", path, dwfl_errmsg(-1));
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
		    a[i].path != b[i].path)
			return 0;
	return 1;
}

/* The cached session for maps (reportable ones only), made when new. */
static struct space *get_space(struct unwinder *u, const struct unwind_map *maps, size_t nmaps)
{
	size_t n = 0;
	uint64_t h = 0x9e3779b97f4a7c15ULL;
	for (size_t i = 0; i < nmaps; i++) {
		if (!reportable(maps[i].path))
			continue;
		uint64_t ph = hash_bytes(maps[i].path, strlen(maps[i].path), 0);
		ALLOC_GROW(u->scratch, n + 1, u->scratch_alloc);
		u->scratch[n++] = (struct space_map){maps[i].start, maps[i].end, maps[i].pgoff,
		                                     path_id(u, maps[i].path, ph)};
		h = hash_mix(h ^ hash_mix(maps[i].start ^ (maps[i].end << 7) ^ maps[i].pgoff) ^
		             u->scratch[n - 1].path);
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

static uint64_t coarse_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Opens fi's .eh_frame on fd (owned from here on). */
static void cfi_open(struct fileinfo *fi, int fd)
{
	fi->cfi_tried = 1;
	fi->cfi_fd = fd;
	if (fd < 0)
		return;
	fi->cfi_elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (fi->cfi_elf)
		fi->cfi = dwarf_getcfi_elf(fi->cfi_elf);
}

/* The CFI and facts of the object at path (a file or "[vdso]"), or NULL. */
static struct fileinfo *leaf_file(struct unwinder *u, const char *path)
{
	if (!reportable(path))
		return NULL;
	if (!strcmp(path, "[vdso]")) {
		int vfd = vdso_fd(u);
		if (vfd < 0)
			return NULL;
		if (!u->vdso.cfi_tried)
			cfi_open(&u->vdso, dup(vfd));
		return &u->vdso;
	}
	uint32_t id = path_id(u, path, hash_bytes(path, strlen(path), 0));
	uint64_t t = coarse_ns();
	struct fileinfo *fi = id < u->files_alloc ? &u->files[id] : NULL;
	if (!fi || !fi->seen || t - fi->cfi_checked_ns > CFI_RECHECK_NS) {
		/* file_info stats the file and drops the CFI when the file changed. */
		fi = (struct fileinfo *)file_info(u, id);
		fi->cfi_checked_ns = t;
	}
	if (!fi->ok)
		return NULL;
	if (!fi->cfi_tried)
		cfi_open(fi, open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK));
	return fi;
}

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
static int cfa_rule(const Dwarf_Op *ops, size_t nops, uint64_t cfa, uint64_t *where,
                    int *is_value)
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
	struct fileinfo *fi = leaf ? leaf_file(u, leaf->path) : NULL;
	uint64_t bias;
	if (!fi || !fi->cfi || bias_of(fi, leaf->start, leaf->pgoff, &bias) < 0)
		return LEAF_FIX_NO_CFI;
	Dwarf_Frame *frame = NULL;
	if (dwarf_cfi_addrframe(fi->cfi, pc - bias, &frame) != 0)
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
		/* %rbp still holds the caller's frame: the kernel's walk skipped the caller only. */
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

int unwind_is_entry_point(const char *f)
{
	static const char *const names[] = {
	        "_start",
	        "__libc_start_main",
	        "__libc_start_call_main",
	        "__libc_start_main_impl",
	        "start_thread",
	        "clone",
	        "clone3",
	        "__clone",
	        "__clone3",
	        "__clone_internal",
	        "_dl_start",
	        "_dl_start_user",
	        "runtime.goexit",
	        "runtime.rt0_go",
	        "runtime.mstart",
	        "runtime.goexit.abi0",
	        "runtime.rt0_go.abi0",
	        "runtime.mstart.abi0",
	};
	/* A symbol version ("__libc_start_main@@GLIBC_2.34") is not part of the name. */
	size_t len = strcspn(f, "@");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == len && !strncmp(f, names[i], len))
			return 1;
	return 0;
}

/* Whether a module is part of the C runtime where every process and thread starts. */
static int is_c_runtime(const char *module)
{
	static const char *const prefixes[] = {
	        "libc.so", "libc-", "ld-linux", "ld-musl", "libpthread.so", "libpthread-", "ld.so"};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(module, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

void unwind_truncation(const struct profile *p, struct unwind_truncation *out)
{
	memset(out, 0, sizeof(*out));
	struct where {
		uint32_t module;
		uint64_t count;
	} *w = NULL;
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
		    is_c_runtime(profile_str(p, f->module)))
			continue;
		out->truncated += s->count;
		size_t k = 0;
		while (k < nw && w[k].module != f->module)
			k++;
		if (k == nw) {
			ALLOC_GROW(w, nw + 1, w_alloc);
			w[nw++] = (struct where){f->module, 0};
		}
		w[k].count += s->count;
	}
	/* The three modules where most truncated stacks end, most first. */
	size_t len = 0;
	for (int pick = 0; pick < 3; pick++) {
		size_t best = nw;
		for (size_t k = 0; k < nw; k++)
			if (w[k].count && (best == nw || w[k].count > w[best].count))
				best = k;
		if (best == nw)
			break;
		const char *m = profile_str(p, w[best].module);
		if (!*m)
			m = "[unknown]";
		int wrote = snprintf(out->where + len, sizeof(out->where) - len, "%s%s",
		                     pick ? ", " : "", m);
		if (wrote < 0 || (size_t)wrote >= sizeof(out->where) - len)
			break;
		len += (size_t)wrote;
		w[best].count = 0;
	}
	free(w);
}
