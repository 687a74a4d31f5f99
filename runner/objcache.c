/* The run's ELF object cache (see objcache.h). Paths are interned once, each naming its current
 * objfile; an objfile is one generation of one file, so a replaced file never mixes with what
 * was read from its predecessor. The open objects form a small list for LRU eviction; an
 * evicted object keeps its facts (segments, build id, identity) and only gives back its fd,
 * mapping and CFI. libdwfl sessions get reference-counted Elf handles (elf_begin with a
 * reference), so a session and the cache share one mapping and one parse of the headers. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runner/objcache.h"
#include "runner/sample/vdso.h"

#include "common/error.h"
#include "common/hashidx.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "model/profile.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_OPEN_DEFAULT   128
#define RECHECK_NS_DEFAULT 1000000000ULL

struct pathent {
	char *path;
	struct objfile *cur; /* the newest generation (maybe unusable), NULL before the first */
};

struct objcache {
	struct pathent *paths;
	size_t npaths, paths_alloc;
	struct hashidx path_idx;

	struct objfile **all; /* every objfile made, for objcache_free */
	size_t nall, all_alloc;

	struct objfile **open; /* the open ones (the vdso excluded) */
	size_t nopen, open_alloc, max_open;

	struct objfile *vdso; /* NULL before the first ask */
	int vdso_tried;

	uint64_t clock, recheck_ns;
	struct objcache_stats stats;
};

/* Private to this file: an objfile that could not be read. */
#define OBJ_UNUSABLE(o) ((o)->nsegs == 0)

int obj_offset_to_vaddr(const struct obj_segment *segs, size_t nsegs, uint64_t offset,
                        uint64_t *out)
{
	for (size_t i = 0; i < nsegs; i++) {
		const struct obj_segment *g = &segs[i];
		if (offset >= g->offset && offset - g->offset < g->filesz) {
			*out = offset - g->offset + g->vaddr;
			return 0;
		}
	}
	return -1;
}

struct objcache *objcache_new(void)
{
	struct objcache *c = xcalloc(1, sizeof(*c));
	elf_version(EV_CURRENT); /* libelf before any elf_begin */
	hashidx_init(&c->path_idx);
	c->max_open = MAX_OPEN_DEFAULT;
	c->recheck_ns = RECHECK_NS_DEFAULT;
	return c;
}

/* Gives back o's fd, mapping and CFI; its facts stay. */
static void obj_close(struct objcache *c, struct objfile *o)
{
	if (o->cfi)
		dwarf_cfi_end(o->cfi);
	o->cfi = NULL;
	o->cfi_tried = 0;
	if (o->elf) {
		/* libdwfl sessions may hold references: they keep the mapping, never the fd. */
		elf_cntl(o->elf, ELF_C_FDREAD);
		elf_end(o->elf);
		o->elf = NULL;
	}
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (!o->vdso && o->open_slot < c->nopen && c->open[o->open_slot] == o) {
		c->open[o->open_slot] = c->open[--c->nopen];
		c->open[o->open_slot]->open_slot = o->open_slot;
		c->stats.open_now = c->nopen;
	}
	o->open_slot = SIZE_MAX;
}

void objcache_free(struct objcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nall; i++) {
		struct objfile *o = c->all[i];
		obj_close(c, o);
		free((char *)o->build_id);
		free(o->segs);
		free(o);
	}
	free(c->all);
	free(c->open);
	for (size_t i = 0; i < c->npaths; i++)
		free(c->paths[i].path);
	free(c->paths);
	hashidx_release(&c->path_idx);
	free(c);
}

static void evict_lru(struct objcache *c)
{
	if (!c->nopen)
		return;
	size_t lru = 0;
	for (size_t i = 1; i < c->nopen; i++)
		if (c->open[i]->last_use < c->open[lru]->last_use)
			lru = i;
	obj_close(c, c->open[lru]);
	c->stats.evictions++;
}

void objcache_set_max_open(struct objcache *c, size_t n)
{
	c->max_open = n ? n : 1;
	while (c->nopen > c->max_open)
		evict_lru(c);
}

void objcache_set_recheck_ns(struct objcache *c, uint64_t ns)
{
	c->recheck_ns = ns;
}

const struct objcache_stats *objcache_stats(const struct objcache *c)
{
	return &c->stats;
}

static uint64_t coarse_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

/* Whether path can name an object on disk: anonymous and JIT memory, memfds and files deleted
 * while mapped (whatever has that name now is likely a rebuilt file) cannot. */
static int file_path(const char *path)
{
	return path[0] == '/' && strncmp(path, "//anon", 6) && strncmp(path, "/memfd:", 7) &&
	       !ends_with(path, " (deleted)");
}

static int same_file(const struct objfile *o, const struct stat *st)
{
	return st->st_dev == o->dev && st->st_ino == o->ino && st->st_size == o->size &&
	       st->st_mtim.tv_sec == o->mtime_sec && st->st_mtim.tv_nsec == o->mtime_nsec;
}

static void set_identity(struct objfile *o, const struct stat *st)
{
	o->dev = st->st_dev;
	o->ino = st->st_ino;
	o->size = st->st_size;
	o->mtime_sec = st->st_mtim.tv_sec;
	o->mtime_nsec = st->st_mtim.tv_nsec;
}

/* The GNU build id of elf in hex (owned), or NULL. */
static char *build_id_of(Elf *elf)
{
	const void *bits;
	ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
	if (n <= 0 || n > PROFILE_BUILD_ID_MAX)
		return NULL;
	char *hex = xmalloc(2 * PROFILE_BUILD_ID_MAX + 1);
	profile_build_id_to_hex(hex, bits, (size_t)n);
	return hex;
}

/* Reads e_type, the PT_LOAD segments and the build id of o->elf into o (first open only). */
static int read_facts(struct objfile *o)
{
	GElf_Ehdr eh;
	size_t phnum;
	if (elf_kind(o->elf) != ELF_K_ELF || !gelf_getehdr(o->elf, &eh) ||
	    elf_getphdrnum(o->elf, &phnum) < 0)
		return cp_error("%s is not an ELF object: %s", o->path, elf_errmsg(-1));
	o->is_exec = eh.e_type == ET_EXEC;
	size_t alloc = 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(o->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (!o->nsegs)
			o->load_start = ph.p_vaddr & -(ph.p_align ? ph.p_align : 1);
		if (ph.p_vaddr + ph.p_memsz > o->load_end)
			o->load_end = ph.p_vaddr + ph.p_memsz;
		ALLOC_GROW(o->segs, o->nsegs + 1, alloc);
		o->segs[o->nsegs++] =
		        (struct obj_segment){ph.p_offset, ph.p_vaddr, ph.p_filesz, ph.p_memsz};
	}
	if (!o->nsegs)
		return cp_error("%s has no loadable segment", o->path);
	char *id = build_id_of(o->elf);
	o->build_id = id ? id : xstrdup("");
	return 0;
}

/* Makes room under the bound and puts o (now open) on the open list. */
static void add_open(struct objcache *c, struct objfile *o)
{
	while (c->nopen >= c->max_open)
		evict_lru(c);
	ALLOC_GROW(c->open, c->nopen + 1, c->open_alloc);
	o->open_slot = c->nopen;
	c->open[c->nopen++] = o;
	c->stats.open_now = c->nopen;
	if (c->nopen > c->stats.open_max)
		c->stats.open_max = c->nopen;
}

static struct objfile *obj_new(struct objcache *c, const char *path)
{
	struct objfile *o = xcalloc(1, sizeof(*o));
	o->path = path;
	o->cache = c;
	o->fd = -1;
	o->open_slot = SIZE_MAX;
	ALLOC_GROW(c->all, c->nall + 1, c->all_alloc);
	c->all[c->nall++] = o;
	c->stats.objects++;
	return o;
}

/* Opens path (O_NONBLOCK and the S_ISREG check: a FIFO or device that took the name must not
 * hang or confuse us) and begins libelf on it: the fd, or -1 with cp_error set. */
static int open_file(struct objcache *c, const char *path, struct stat *st, Elf **elf)
{
	c->stats.opens++;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return cp_error_errno("cannot open %s", path);
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return cp_error("%s is not a regular file", path);
	}
	*elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!*elf) {
		close(fd);
		return cp_error("cannot read %s as ELF: %s", path, elf_errmsg(-1));
	}
	return fd;
}

int objfile_open(struct objcache *c, struct objfile *o)
{
	if (o->elf) {
		o->last_use = ++c->clock;
		return 0;
	}
	if (o->stale || OBJ_UNUSABLE(o))
		return cp_error("%s changed since it was first read", o->path);
	struct stat st;
	Elf *elf;
	int fd = open_file(c, o->path, &st, &elf);
	if (fd < 0) {
		o->stale = 1;
		return -1;
	}
	if (!same_file(o, &st)) {
		elf_end(elf);
		close(fd);
		o->stale = 1;
		return cp_error("%s changed since it was first read", o->path);
	}
	c->stats.reopens++;
	o->fd = fd;
	o->elf = elf;
	o->last_use = ++c->clock;
	o->checked_ns = coarse_ns();
	add_open(c, o);
	return 0;
}

/* A new generation of pe's path from fd and elf (open_file's; fd < 0: the open failed) with
 * the identity st (NULL: unknown). Unusable (no segments) when it is no ELF object, which is
 * remembered with its identity, so the path is tried again only when the file changes. */
static struct objfile *obj_make(struct objcache *c, struct pathent *pe, int fd, Elf *elf,
                                const struct stat *st)
{
	struct objfile *o = obj_new(c, pe->path);
	if (st)
		set_identity(o, st);
	o->checked_ns = coarse_ns();
	o->last_use = ++c->clock;
	if (fd >= 0) {
		o->fd = fd;
		o->elf = elf;
		if (read_facts(o) == 0) {
			add_open(c, o);
			return o;
		}
		elf_end(o->elf);
		o->elf = NULL;
		close(o->fd);
		o->fd = -1;
	}
	c->stats.failed++;
	log_debug("objcache: %s", cp_last_error());
	return o;
}

static struct objfile *obj_first_open(struct objcache *c, struct pathent *pe,
                                      const struct stat *known)
{
	struct stat st;
	Elf *elf = NULL;
	int fd = open_file(c, pe->path, &st, &elf);
	return obj_make(c, pe, fd, elf, fd >= 0 ? &st : known);
}

static int path_eq(const void *ctx, uint32_t pos, const void *key)
{
	return !strcmp(((const struct objcache *)ctx)->paths[pos].path, key);
}

static struct pathent *path_entry(struct objcache *c, const char *path)
{
	uint64_t h = hash_bytes(path, strlen(path), 0);
	int64_t pos = hashidx_find(&c->path_idx, h, path_eq, c, path);
	if (pos >= 0)
		return &c->paths[pos];
	ALLOC_GROW(c->paths, c->npaths + 1, c->paths_alloc);
	c->paths[c->npaths] = (struct pathent){xstrdup(path), NULL};
	hashidx_insert(&c->path_idx, h, (uint32_t)c->npaths);
	return &c->paths[c->npaths++];
}

/* The vdso image, copied once into a memfd (sample/vdso.c). */
static struct objfile *get_vdso(struct objcache *c)
{
	if (c->vdso_tried)
		return c->vdso;
	c->vdso_tried = 1;
	int fd = vdso_image_fd();
	if (fd < 0) {
		log_debug("objcache: %s", cp_last_error());
		return NULL;
	}
	c->stats.vdso_copies++;
	struct objfile *o = obj_new(c, "[vdso]");
	o->vdso = 1;
	o->fd = fd;
	o->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!o->elf || read_facts(o) < 0) {
		log_debug("objcache: the vdso image: %s", cp_last_error());
		return NULL; /* closed with the rest by objcache_free */
	}
	c->vdso = o;
	return o;
}

/* The file at pe's path is no longer the one o was read from. A file with o's build id is the
 * same object (a relink that produced the same bytes, a copy): o takes it over. Anything
 * else is a new generation, and o becomes stale. */
static struct objfile *replace(struct objcache *c, struct pathent *pe, struct objfile *o,
                               const struct stat *known)
{
	struct stat st;
	Elf *elf = NULL;
	int fd = open_file(c, pe->path, &st, &elf);
	char *id = fd >= 0 && !OBJ_UNUSABLE(o) && *o->build_id ? build_id_of(elf) : NULL;
	if (id && !strcmp(id, o->build_id)) {
		free(id);
		obj_close(c, o);
		set_identity(o, &st);
		o->fd = fd;
		o->elf = elf;
		o->last_use = ++c->clock;
		add_open(c, o);
		return o;
	}
	free(id);
	if (!OBJ_UNUSABLE(o))
		c->stats.replaced++;
	o->stale = 1;
	obj_close(c, o);
	return obj_make(c, pe, fd, elf, fd >= 0 ? &st : known);
}

struct objfile *objcache_get(struct objcache *c, const char *path)
{
	if (!path)
		return NULL;
	if (!strcmp(path, "[vdso]"))
		return get_vdso(c);
	if (!file_path(path))
		return NULL;
	struct pathent *pe = path_entry(c, path);
	struct objfile *o = pe->cur;
	if (!o) {
		o = pe->cur = obj_first_open(c, pe, NULL);
		return OBJ_UNUSABLE(o) ? NULL : o;
	}
	uint64_t now = coarse_ns();
	if (now - o->checked_ns >= c->recheck_ns) {
		struct stat st;
		o->checked_ns = now;
		if (stat(path, &st) < 0) /* removed: what was read stays usable while open */
			return !OBJ_UNUSABLE(o) && o->elf ? o : NULL;
		if (!same_file(o, &st))
			o = pe->cur = replace(c, pe, o, &st);
	}
	if (OBJ_UNUSABLE(o))
		return NULL;
	if (!o->elf && objfile_open(c, o) < 0) {
		log_debug("objcache: %s", cp_last_error());
		return NULL;
	}
	o->last_use = ++c->clock;
	return o;
}

Dwarf_CFI *objfile_cfi(struct objfile *o)
{
	if (!o->elf)
		return NULL;
	if (!o->cfi_tried) {
		o->cfi_tried = 1;
		o->cfi = dwarf_getcfi_elf(o->elf);
	}
	return o->cfi;
}

int objfile_bias(const struct objfile *o, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	if (o->is_exec) {
		*bias = 0;
		return 0;
	}
	for (size_t i = 0; i < o->nsegs; i++) {
		const struct obj_segment *g = &o->segs[i];
		/* Mappings start on page boundaries, segments need not. */
		uint64_t seg_page = g->offset & ~(uint64_t)4095;
		if (pgoff >= seg_page && pgoff < g->offset + (g->filesz ? g->filesz : 1)) {
			*bias = start - pgoff + g->offset - g->vaddr;
			return 0;
		}
	}
	return -1;
}

Dwfl_Module *objfile_report(struct objcache *c, Dwfl *dwfl, struct objfile *o, const char *name,
                            uint64_t bias)
{
	(void)c;
	Dwfl_Module *mod = dwfl_report_module(dwfl, name, bias + o->load_start, bias + o->load_end);
	if (!mod)
		return NULL;
	void **userdata;
	dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	*userdata = o;
	return mod;
}

int objcache_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                      char **file_name, Elf **elfp)
{
	(void)mod, (void)modname, (void)base;
	struct objfile *o = *userdata;
	*elfp = NULL;
	if (!o || objfile_open(o->cache, o) < 0) {
		if (o)
			log_debug("objcache: %s", cp_last_error());
		return -1; /* no file name either: libdwfl must not open the path itself */
	}
	/* A new reference to the cache's Elf: libdwfl's elf_end drops only that. */
	*elfp = elf_begin(-1, ELF_C_READ_MMAP, o->elf);
	if (!*elfp)
		return -1;
	/* The name separate debug files are looked up by (its directory, .debug/). */
	*file_name = xstrdup(o->path);
	return -1;
}
