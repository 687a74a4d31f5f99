/* The symbolizer: one cached libdwfl session per object file (the least recently used closed
 * beyond a bound), each holding that single module at bias 0, so a sample's file offset becomes
 * an ELF virtual address through the object's PT_LOAD headers and is looked up directly. The
 * objects (Elf, segments, build id, the vdso copy) are the run's object cache's
 * (runner/objcache.h): what the unwinder opened during the run is not opened again. Results
 * are cached per (object, offset, is_return) and every string handed out is interned here until
 * symbolizer_free. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common/search.h"
#include "runner/symbols/symbolize.h"
#include "runner/objcache.h"
#include "runner/symbols/symcache.h"

#include "common/error.h"
#include "common/hashidx.h"
#include "common/log.h"
#include "model/profile.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A perf map larger than this is not read (node can write hundreds of MB; this is plenty). */
#define PERFMAP_MAX_BYTES ((size_t)1 << 30)

/* Open dwfl sessions kept at once: each holds parsed DWARF, a reference to the object's
 * mapping and the fd of a separate debug file, and a suite can map thousands of test
 * executables. */
#define SYM_MAX_OPEN_DEFAULT 128

enum cache_kind { KIND_FILE = 1, KIND_JIT = 2, KIND_VDSO = 3 };

/* One object file: its dwfl session (NULL when closed or unusable). */
struct symobj {
	uint32_t path;       /* string id */
	uint32_t module;     /* string id of the basename */
	uint32_t build_id;   /* string id of its GNU build id in hex, 0 ("") when it has none */
	struct objfile *obj; /* the cache's, as first seen: a later file at the path is not it */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	uint64_t last_use; /* symbolizer clock at the last lookup, for eviction */
	int failed;        /* could not be opened: not tried again */
	int own_lines;     /* the object itself has .debug_line: source files are looked up */
	struct symcache_table *tab; /* its results from earlier runs (NULL: not cached) */
	int tab_tried;
	uint64_t *bounds; /* every symbol's and allocated section's start and end (ELF virtual
	                   * addresses), sorted: between two of them a symbol lookup cannot
	                   * change its answer (only made for the cache across runs) */
	size_t nbounds;
	int bounds_tried;
};

/* What one lookup's answer holds for: the ELF virtual addresses [lo, hi), when known. */
struct answer_range {
	int ok;
	uint64_t lo, hi;
};

struct cache_key {
	uint32_t kind;
	int is_return;
	uint64_t id; /* string id of the path, or the pid */
	uint64_t offset;
};

struct cache_entry {
	struct cache_key key;
	struct sym_info info;
};

struct jitmap {
	pid_t pid;
	struct perfmap map;
};

struct symbolizer {
	char **strs; /* interned strings, each its own allocation so pointers stay put */
	size_t nstrs, strs_alloc;
	struct hashidx str_idx;

	struct symobj *objs;
	size_t nobjs, objs_alloc;
	struct hashidx obj_idx; /* by path string id */

	struct cache_entry *cache;
	size_t ncache, cache_alloc;
	struct hashidx cache_idx;

	struct jitmap *jits;
	size_t njits, jits_alloc;
	struct hashidx jit_idx;

	struct symobj vdso;
	int vdso_tried;

	struct objcache *files; /* the run's objects (borrowed, or owned when own_files) */
	int own_files;

	size_t nopen, max_open; /* object files with an open dwfl session, and the bound */
	uint64_t clock;

	struct symcache *persist; /* results across runs (borrowed), or NULL */
	struct sym_counts counts;

	char *debuginfo_path;     /* NULL: elfutils' default */
	int separate_lines;       /* source lines from separate debug files too (default) */
	Dwfl_Callbacks callbacks; /* dwfl keeps a pointer to it: lives as long as s */
};

/* ---- interned strings ---- */

static int str_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct symbolizer *s = ctx;
	return !strcmp(s->strs[pos], key);
}

static uint32_t intern_id(struct symbolizer *s, const char *str)
{
	uint64_t h = hash_bytes(str, strlen(str), 0);
	int64_t pos = hashidx_find(&s->str_idx, h, str_eq, s, str);
	if (pos >= 0)
		return (uint32_t)pos;
	ALLOC_GROW(s->strs, s->nstrs + 1, s->strs_alloc);
	s->strs[s->nstrs] = xstrdup(str);
	hashidx_insert(&s->str_idx, h, (uint32_t)s->nstrs);
	return (uint32_t)s->nstrs++;
}

static const char *intern(struct symbolizer *s, const char *str)
{
	uint32_t id = intern_id(s, str); /* may move s->strs: read it only afterwards */
	return s->strs[id];
}

static const char *internf(struct symbolizer *s, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static const char *internf(struct symbolizer *s, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	const char *ret = intern(s, sb.buf);
	strbuf_release(&sb);
	return ret;
}

/* ---- result cache ---- */

static uint64_t key_hash(const struct cache_key *k)
{
	return hash_mix(hash_mix(k->id * 4 + k->kind) ^ hash_mix(k->offset * 2 + !!k->is_return));
}

static int cache_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct cache_key *a = &((const struct symbolizer *)ctx)->cache[pos].key;
	const struct cache_key *b = key;
	return a->kind == b->kind && a->id == b->id && a->offset == b->offset &&
	       a->is_return == b->is_return;
}

static int cache_get(struct symbolizer *s, const struct cache_key *k, struct sym_info *out)
{
	int64_t pos = hashidx_find(&s->cache_idx, key_hash(k), cache_eq, s, k);
	if (pos < 0)
		return 0;
	*out = s->cache[pos].info;
	return 1;
}

static void cache_put(struct symbolizer *s, const struct cache_key *k, const struct sym_info *info)
{
	ALLOC_GROW(s->cache, s->ncache + 1, s->cache_alloc);
	s->cache[s->ncache].key = *k;
	s->cache[s->ncache].info = *info;
	hashidx_insert(&s->cache_idx, key_hash(k), (uint32_t)s->ncache);
	s->ncache++;
}

/* ---- lifecycle ---- */

struct symbolizer *symbolizer_new(struct objcache *objs)
{
	/* elfutils would fetch missing debug info over the network when DEBUGINFOD_URLS is set;
	 * ciprof never downloads at run time (and symbolizes after the command has ended, so
	 * the command's own environment is untouched). */
	unsetenv("DEBUGINFOD_URLS");
	struct symbolizer *s = xcalloc(1, sizeof(*s));
	hashidx_init(&s->str_idx);
	hashidx_init(&s->obj_idx);
	hashidx_init(&s->cache_idx);
	hashidx_init(&s->jit_idx);
	s->files = objs;
	if (!objs) {
		s->files = objcache_new();
		s->own_files = 1;
	}
	s->callbacks.find_elf = objcache_find_elf;
	s->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
	s->callbacks.section_address = dwfl_offline_section_address;
	s->callbacks.debuginfo_path = &s->debuginfo_path;
	s->max_open = SYM_MAX_OPEN_DEFAULT;
	intern_id(s, ""); /* id 0 */
	s->separate_lines = 1;
	return s;
}

void symbolizer_set_separate_lines(struct symbolizer *s, int on)
{
	s->separate_lines = on;
	if (s->persist)
		symcache_set_mode(s->persist, s->separate_lines, s->debuginfo_path);
}

void symbolizer_set_cache(struct symbolizer *s, struct symcache *c)
{
	s->persist = c;
	if (c)
		symcache_set_mode(c, s->separate_lines, s->debuginfo_path);
}

const struct sym_counts *symbolizer_counts(const struct symbolizer *s)
{
	return &s->counts;
}

void symbolizer_set_debuginfo_path(struct symbolizer *s, const char *path)
{
	free(s->debuginfo_path);
	s->debuginfo_path = path ? xstrdup(path) : NULL;
	if (s->persist)
		symcache_set_mode(s->persist, s->separate_lines, s->debuginfo_path);
}

static void evict_lru(struct symbolizer *s);

void symbolizer_set_max_open(struct symbolizer *s, size_t n)
{
	s->max_open = n ? n : 1;
	while (s->nopen > s->max_open)
		evict_lru(s);
}

static void symobj_release(struct symobj *o)
{
	if (o->dwfl)
		dwfl_end(o->dwfl);
	free(o->bounds);
	memset(o, 0, sizeof(*o));
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Fills o->bounds from its open session's symbol table and its sections. */
static void make_bounds(struct symobj *o)
{
	o->bounds_tried = 1;
	int n = dwfl_module_getsymtab(o->mod);
	size_t alloc = 0, nb = 0;
	uint64_t *b = NULL;
	for (int i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		if (!dwfl_module_getsym_info(o->mod, i, &sym, &addr, NULL, NULL, NULL))
			continue;
		ALLOC_GROW(b, nb + 2, alloc);
		b[nb++] = addr - o->bias;
		b[nb++] = addr - o->bias + sym.st_size;
	}
	Elf *elf = o->obj->elf;
	for (Elf_Scn *scn = elf ? elf_nextscn(elf, NULL) : NULL; scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
			continue;
		ALLOC_GROW(b, nb + 2, alloc);
		b[nb++] = sh.sh_addr;
		b[nb++] = sh.sh_addr + sh.sh_size;
	}
	if (nb)
		qsort(b, nb, sizeof(*b), u64_cmp);
	o->bounds = b;
	o->nbounds = nb;
}

/* The interval between two bounds of o that holds vaddr: 0, or -1 when it is outside them. */
static int bound_interval(const struct symobj *o, uint64_t vaddr, uint64_t *lo, uint64_t *hi)
{
	size_t a = cp_first_above(o->bounds, o->nbounds, sizeof(*o->bounds), 0, vaddr);
	if (a == 0 || a == o->nbounds)
		return -1;
	*lo = o->bounds[a - 1];
	*hi = o->bounds[a];
	return 0;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nobjs; i++)
		symobj_release(&s->objs[i]);
	free(s->objs);
	symobj_release(&s->vdso);
	for (size_t i = 0; i < s->njits; i++)
		perfmap_release(&s->jits[i].map);
	free(s->jits);
	free(s->cache);
	for (size_t i = 0; i < s->nstrs; i++)
		free(s->strs[i]);
	free(s->strs);
	hashidx_release(&s->str_idx);
	hashidx_release(&s->obj_idx);
	hashidx_release(&s->cache_idx);
	hashidx_release(&s->jit_idx);
	free(s->debuginfo_path);
	if (s->own_files)
		objcache_free(s->files);
	free(s);
}

/* ---- object files ---- */

/* Whether elf has a section of that name with contents. */
static int has_section(Elf *elf, const char *name)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return 0;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		const char *n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && !strcmp(n, name))
			return 1;
	}
	return 0;
}

/* Starts o's dwfl session: its object (open in the cache) as the only module, at bias 0.
 * Returns 0, or -1 with cp_error set. */
static int symobj_open(struct symbolizer *s, struct symobj *o)
{
	const char *path = o->obj->path;
	s->counts.sessions++;
	o->dwfl = dwfl_begin(&s->callbacks);
	if (!o->dwfl)
		return cp_error("cannot start libdwfl for %s: %s", path, dwfl_errmsg(-1));
	dwfl_report_begin(o->dwfl);
	o->mod = objfile_report(s->files, o->dwfl, o->obj, s->strs[o->module], 0);
	dwfl_report_end(o->dwfl, NULL, NULL);
	/* Asking for the Elf hands libdwfl the cache's (objcache_find_elf). */
	Elf *elf = o->mod ? dwfl_module_getelf(o->mod, &o->bias) : NULL;
	if (!elf) {
		int ret = cp_error("cannot read %s as ELF: %s", path, dwfl_errmsg(-1));
		dwfl_end(o->dwfl);
		o->dwfl = NULL;
		o->mod = NULL;
		return ret;
	}
	if (!o->build_id)
		o->build_id = intern_id(s, o->obj->build_id);
	o->own_lines = has_section(elf, ".debug_line");
	return 0;
}

static const char *path_basename(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

static const char deleted_suffix[] = " (deleted)";

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static int obj_eq(const void *ctx, uint32_t pos, const void *key)
{
	return ((const struct symbolizer *)ctx)->objs[pos].path == *(const uint32_t *)key;
}

/* Closes the least recently used open object, keeping its entry for a later reopen. */
static void evict_lru(struct symbolizer *s)
{
	struct symobj *lru = NULL;
	for (size_t i = 0; i < s->nobjs; i++)
		if (s->objs[i].dwfl && (!lru || s->objs[i].last_use < lru->last_use))
			lru = &s->objs[i];
	if (!lru)
		return;
	dwfl_end(lru->dwfl);
	lru->dwfl = NULL;
	lru->mod = NULL;
	lru->bias = 0;
	s->nopen--;
}

/*
 * Opens o's file through the object cache. A file deleted while mapped is not reopened by
 * name: whatever is there now is most likely a rebuilt version, and its symbols would lie.
 * For the same reason a reopen after eviction must find the very file seen the first time
 * (the cache's objfile, one generation of the path).
 */
static int symobj_load(struct symbolizer *s, struct symobj *o)
{
	const char *path = s->strs[o->path];
	if (ends_with(path, deleted_suffix))
		return cp_error("%s: deleted while mapped; not symbolizing it", path);
	if (!o->obj) {
		o->obj = objcache_get(s->files, path);
		if (!o->obj)
			return cp_error("cannot read %s as an ELF object", path);
		o->build_id = intern_id(s, o->obj->build_id);
		return 0;
	}
	if (objfile_open(s->files, o->obj) < 0)
		return cp_error("%s changed since it was first read; not symbolizing it", path);
	if (s->nopen >= s->max_open)
		evict_lru(s);
	if (symobj_open(s, o) < 0)
		return -1;
	s->nopen++;
	return 0;
}

/*
 * The object for path (string id), read through the object cache on first use (its build id
 * known); session: its libdwfl session is started too, and restarted after an eviction. A
 * failure is remembered, so a missing file costs one attempt.
 */
static struct symobj *get_obj(struct symbolizer *s, uint32_t path_id, int session)
{
	uint64_t h = hash_mix(path_id);
	int64_t pos = hashidx_find(&s->obj_idx, h, obj_eq, s, &path_id);
	struct symobj *o;
	if (pos >= 0) {
		o = &s->objs[pos];
	} else {
		/* The module is the basename, without the " (deleted)" the kernel appends. */
		char *name = xstrdup(path_basename(s->strs[path_id]));
		if (ends_with(name, deleted_suffix))
			name[strlen(name) - strlen(deleted_suffix)] = '\0';
		uint32_t module = intern_id(s, name);
		free(name);
		ALLOC_GROW(s->objs, s->nobjs + 1, s->objs_alloc);
		o = &s->objs[s->nobjs];
		memset(o, 0, sizeof(*o));
		o->path = path_id;
		o->module = module;
		hashidx_insert(&s->obj_idx, h, (uint32_t)s->nobjs++);
	}
	o->last_use = ++s->clock;
	if (!o->failed && !o->obj && symobj_load(s, o) < 0) {
		o->failed = 1;
		log_debug("symbolize: %s", cp_last_error());
	}
	if (!o->failed && session && !o->dwfl && symobj_load(s, o) < 0) {
		o->failed = 1;
		log_debug("symbolize: %s", cp_last_error());
	}
	return o;
}

/* Looks up offset in o (which may have failed to open) and fills out; module is o's. */
static void symobj_lookup(struct symbolizer *s, const struct symobj *o, uint64_t offset,
                          int is_return, struct sym_info *out, uint64_t *rel,
                          struct answer_range *range)
{
	struct answer_range none = {0};
	if (!range)
		range = &none;
	range->ok = 0;
	uint64_t look = is_return && offset > 0 ? offset - 1 : offset;
	uint64_t vaddr;
	out->module = s->strs[o->module];
	out->build_id = s->strs[o->build_id];
	out->file = s->strs[0];
	out->line = 0;
	out->resolved = 0;
	out->function = NULL;
	if (o->mod && obj_offset_to_vaddr(o->obj->segs, o->obj->nsegs, look, &vaddr) == 0) {
		Dwarf_Addr addr = vaddr + o->bias;
		GElf_Off symoff;
		GElf_Sym sym;
		GElf_Word shndx;
		Elf *symelf;
		Dwarf_Addr symbias;
		const char *name = dwfl_module_addrinfo(o->mod, addr, &symoff, &sym, &shndx,
		                                        &symelf, &symbias);
		if (o->bounds && bound_interval(o, vaddr, &range->lo, &range->hi) == 0)
			range->ok = 1;
		if (name && *name) {
			char *demangled = sym_demangle(name);
			out->function = intern(s, demangled ? demangled : name);
			out->resolved = 1;
			free(demangled);
		}
		if (!out->function) {
			/* No symbol (a stripped object): name the function by its entry, the
			 * start of the .eh_frame entry covering addr, so that every sample in
			 * it gets one name, the same in every run. */
			Dwarf_Addr cfi_bias, start, end;
			Dwarf_CFI *cfi = dwfl_module_eh_cfi(o->mod, &cfi_bias);
			Dwarf_Frame *frame = NULL;
			if (cfi && dwarf_cfi_addrframe(cfi, addr - cfi_bias, &frame) == 0) {
				if (dwarf_frame_info(frame, &start, &end, NULL) >= 0 &&
				    start + cfi_bias <= addr && addr - (start + cfi_bias) <= look) {
					*rel = look - (addr - (start + cfi_bias));
					/* Entries may overlap (a small one inside a larger
					 * one): the name holds for this address only. */
					range->ok = 0;
					out->function = internf(s, "%s+0x%llx", out->module,
					                        (unsigned long long)*rel);
				}
				free(frame);
			}
		}
		Dwfl_Line *line =
		        o->own_lines || s->separate_lines ? dwfl_module_getsrc(o->mod, addr) : NULL;
		int lineno = 0;
		const char *src =
		        line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
		if (src) {
			out->file = intern(s, src);
			out->line = lineno > 0 ? (unsigned)lineno : 0;
		}
	}
	if (!out->function) {
		range->ok = 0; /* named by the offset itself */
		*rel = offset;
		out->function = internf(s, "%s+0x%llx", out->module, (unsigned long long)offset);
	}
}

/* Fills out from the cache across runs: the address's own entry, or a range holding it.
 * Returns 0 when neither is there. */
static void from_persist(struct symbolizer *s, const struct symobj *o,
                         const struct symcache_entry *e, struct sym_info *out);
static int persist_get(struct symbolizer *s, struct symobj *o, uint64_t offset, int is_return,
                       struct sym_info *out)
{
	const struct symcache_entry *e = symcache_get(o->tab, offset, is_return);
	uint64_t look = is_return && offset > 0 ? offset - 1 : offset, vaddr;
	if (!e && obj_offset_to_vaddr(o->obj->segs, o->obj->nsegs, look, &vaddr) == 0)
		e = symcache_get_range(o->tab, vaddr);
	if (!e) {
		symcache_note_miss(o->tab);
		return 0;
	}
	from_persist(s, o, e, out);
	return 1;
}

/* Fills out from an entry of the cache across runs. */
static void from_persist(struct symbolizer *s, const struct symobj *o,
                         const struct symcache_entry *e, struct sym_info *out)
{
	out->module = s->strs[o->module];
	out->build_id = s->strs[o->build_id];
	out->file = intern(s, e->file ? e->file : "");
	out->line = e->line;
	if (e->kind == 'n') {
		out->function = intern(s, e->function);
		out->resolved = 1;
	} else {
		out->function = internf(s, "%s+0x%llx", out->module, (unsigned long long)e->rel);
		out->resolved = 0;
	}
}

void symbolizer_resolve_file(struct symbolizer *s, const char *path, uint64_t file_offset,
                             int is_return, struct sym_info *out)
{
	if (path && !strcmp(path, "[vdso]")) {
		symbolizer_resolve_vdso(s, file_offset, is_return, out);
		return;
	}
	if (!path || !*path) {
		out->module = intern(s, "[unknown]");
		out->function = internf(s, "[unknown]+0x%llx", (unsigned long long)file_offset);
		out->build_id = s->strs[0];
		out->file = s->strs[0];
		out->line = 0;
		out->resolved = 0;
		return;
	}
	struct cache_key k = {KIND_FILE, !!is_return, intern_id(s, path), file_offset};
	if (cache_get(s, &k, out))
		return;
	struct symobj *o = get_obj(s, (uint32_t)k.id, !s->persist);
	if (s->persist && o->obj && !o->failed && !o->tab_tried) {
		o->tab_tried = 1;
		/* An object with its own source lines (a project's code built with -g) is not
		 * cached: its file and line are per address, and samples land on new addresses in
		 * every run, so a session is needed anyway; and it is rebuilt with a new build id
		 * by the next commit. Reading and writing its file only cost (docs/benchmarks.md).
		 */
		if (objfile_open(s->files, o->obj) == 0 && !has_section(o->obj->elf, ".debug_line"))
			o->tab = symcache_table(s->persist, o->obj);
	}
	if (o->tab && persist_get(s, o, file_offset, is_return, out)) {
		cache_put(s, &k, out);
		return;
	}
	if (s->persist)
		o = get_obj(s, (uint32_t)k.id, 1);
	/* A range of addresses is kept for objects whose frames get no source file: between
	 * two symbol bounds, every address gets the same name. */
	int ranges = o->tab && o->mod && !o->own_lines && !s->separate_lines;
	if (ranges && !o->bounds_tried)
		make_bounds(o);
	uint64_t rel = 0;
	struct answer_range range;
	symobj_lookup(s, o, file_offset, is_return, out, &rel, &range);
	cache_put(s, &k, out);
	/* Only what a working session found is kept: a failure may not last. */
	if (!o->tab || !o->mod)
		return;
	struct symcache_entry ne = {
	        .kind = out->resolved ? 'n' : 'm',
	        .rel = out->resolved ? 0 : rel,
	        .function = out->function,
	        .file = out->file,
	        .line = out->line,
	};
	if (ranges && range.ok) {
		ne.offset = range.lo;
		ne.end = range.hi;
		symcache_put_range(o->tab, &ne);
	} else {
		ne.offset = file_offset;
		ne.is_return = !!is_return;
		symcache_put(o->tab, &ne);
	}
}

/* ---- vdso ---- */

void symbolizer_resolve_vdso(struct symbolizer *s, uint64_t offset, int is_return,
                             struct sym_info *out)
{
	struct cache_key k = {KIND_VDSO, !!is_return, 0, offset};
	if (cache_get(s, &k, out))
		return;
	if (!s->vdso_tried) {
		s->vdso_tried = 1;
		s->vdso.module = intern_id(s, "[vdso]");
		s->vdso.path = s->vdso.module;
		s->vdso.obj = objcache_get(s->files, "[vdso]");
		if (!s->vdso.obj || symobj_open(s, &s->vdso) < 0)
			log_debug("symbolize: %s", cp_last_error());
	}
	uint64_t rel;
	symobj_lookup(s, &s->vdso, offset, is_return, out, &rel, NULL);
	cache_put(s, &k, out);
}

/* ---- JIT code through perf maps ---- */

static int jit_eq(const void *ctx, uint32_t pos, const void *key)
{
	return ((const struct symbolizer *)ctx)->jits[pos].pid == *(const pid_t *)key;
}

/* Reads /tmp/perf-PID.map into m when it is a regular file owned by us or root. */
static int load_perfmap(struct perfmap *m, pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return cp_error_errno("cannot open %s", path);
	}
	struct stat st;
	struct strbuf sb;
	int ret = 0;
	strbuf_init(&sb, PERFMAP_MAX_BYTES);
	if (fstat(fd, &st) < 0) {
		ret = cp_error_errno("cannot stat %s", path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = cp_error("%s is not a regular file; ignoring it", path);
		goto out;
	}
	/* As perf does: a map planted by another user must not name our code. */
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		ret = cp_error("%s is owned by uid %u, not by us or root; ignoring it", path,
		               (unsigned)st.st_uid);
		goto out;
	}
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = cp_error_errno("cannot read %s", path);
			goto out;
		}
		if (n == 0)
			break;
		if (strbuf_add(&sb, buf, (size_t)n) < 0) {
			ret = cp_error("%s is larger than %zu bytes; ignoring it", path,
			               PERFMAP_MAX_BYTES);
			goto out;
		}
	}
	ret = perfmap_parse_lenient(m, sb.buf, sb.len, path);
out:
	strbuf_release(&sb);
	close(fd);
	return ret;
}

static struct perfmap *get_perfmap(struct symbolizer *s, pid_t pid)
{
	uint64_t h = hash_mix((uint64_t)(uint32_t)pid);
	int64_t pos = hashidx_find(&s->jit_idx, h, jit_eq, s, &pid);
	if (pos >= 0)
		return &s->jits[pos].map;
	ALLOC_GROW(s->jits, s->njits + 1, s->jits_alloc);
	struct jitmap *j = &s->jits[s->njits];
	memset(j, 0, sizeof(*j));
	j->pid = pid;
	hashidx_insert(&s->jit_idx, h, (uint32_t)s->njits++);
	if (load_perfmap(&j->map, pid) < 0)
		log_debug("symbolize: %s", cp_last_error());
	return &j->map;
}

void symbolizer_resolve_jit(struct symbolizer *s, pid_t pid, uint64_t addr, int is_return,
                            struct sym_info *out)
{
	struct cache_key k = {KIND_JIT, !!is_return, (uint64_t)(uint32_t)pid, addr};
	if (cache_get(s, &k, out))
		return;
	const struct perfmap *m = get_perfmap(s, pid);
	const struct perfmap_entry *e = perfmap_lookup(m, is_return && addr > 0 ? addr - 1 : addr);
	out->file = s->strs[0];
	out->build_id = s->strs[0];
	out->line = 0;
	if (e) {
		char *demangled = sym_demangle(e->name);
		out->function = intern(s, demangled ? demangled : e->name);
		free(demangled);
		out->module = intern(s, "[jit]");
		out->resolved = 1;
	} else {
		out->function = internf(s, "[anon]+0x%llx", (unsigned long long)addr);
		out->module = intern(s, "[anon]");
		out->resolved = 0;
	}
	cache_put(s, &k, out);
}
