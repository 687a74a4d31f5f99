/* The run's ELF objects, opened once: one cache owned by the runner session and shared by the
 * unwinder (segments and .eh_frame CFI for the leaf fix-up, the Elf of every module of its
 * libdwfl sessions), the symbolizer (the Elf and build id of each object) and the vdso reader
 * (one memfd copy of the vdso for the whole run). Keyed by path, checked against the file's
 * device, inode, size and modification time, with a bound on the objects held open. */
#ifndef CP_OBJCACHE_H
#define CP_OBJCACHE_H

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One PT_LOAD segment. */
struct obj_segment {
	uint64_t offset, vaddr, filesz, memsz;
};

/*
 * Translates a file offset to the ELF virtual address that the symbol table uses, given the
 * object's PT_LOAD segments: vaddr = offset - seg.offset + seg.vaddr for the segment holding it.
 * Returns 0 and *out, or -1 when no segment holds the offset.
 */
int obj_offset_to_vaddr(const struct obj_segment *segs, size_t nsegs, uint64_t offset,
                        uint64_t *out);

/*
 * One object: one generation of the file at a path (a file replaced under the same path is a
 * new objfile; the old one stays, marked stale, so that what was read from it is never mixed
 * with the new file). Owned by the cache; the pointer lives until objcache_free. The fields
 * are read-only for users; elf and the CFI are there only while the object is open.
 */
struct objfile {
	const char *path;         /* as asked for: a file, or "[vdso]" */
	const char *build_id;     /* GNU build id in lower-case hex, "" when none */
	int is_exec;              /* ET_EXEC: its addresses are absolute */
	struct obj_segment *segs; /* PT_LOAD segments, in program-header order */
	size_t nsegs;
	uint64_t load_start, load_end; /* the first segment's p_vaddr aligned down to its
	                                * p_align, and the highest segment end (libdwfl's module
	                                * extent at bias 0) */
	Elf *elf;                      /* ELF_C_READ_MMAP on fd; NULL while closed */

	/* the cache's own */
	struct objcache *cache; /* that owns it (libdwfl's find_elf gets only the objfile) */
	int fd;                 /* -1 while closed; the vdso's memfd otherwise */
	int stale;              /* the path now names another file: never reopened */
	int vdso;               /* the vdso image: pinned, never checked against a path */
	Dwarf_CFI *cfi;         /* from elf, on first objfile_cfi */
	int cfi_tried;
	dev_t dev;
	ino_t ino;
	int64_t size, mtime_sec, mtime_nsec;
	uint64_t last_use, checked_ns;
	size_t open_slot; /* index in the cache's open list while open */
};

struct objcache_stats {
	uint64_t objects;   /* objfiles made (each generation of each path, the vdso) */
	uint64_t opens;     /* open(2) of an object's path: first opens and reopens */
	uint64_t reopens;   /* of them, after an eviction */
	uint64_t evictions; /* objects closed to stay under the bound */
	uint64_t replaced;  /* paths found naming another file than the one read */
	uint64_t failed;    /* opens that gave no usable ELF object */
	uint64_t vdso_copies;
	size_t open_now, open_max; /* objects open now, and at most at once */
};

/* Heap object; not thread-safe. */
struct objcache;

struct objcache *objcache_new(void);
/* Closes every object. Users' libdwfl sessions may still hold references to an Elf (it is
 * reference-counted): they stay valid until those sessions end. */
void objcache_free(struct objcache *c);

/* How many objects stay open at once (default 128; each holds a file descriptor and a mapping
 * of the file); beyond it the least recently used is closed, and reopened on demand when the
 * file is still the one read. The vdso does not count. */
void objcache_set_max_open(struct objcache *c, size_t n);
/* How often an object is checked against its path (stat), at most: default once a second, so
 * a per-sample lookup costs no system call; 0 checks every time. */
void objcache_set_recheck_ns(struct objcache *c, uint64_t ns);

const struct objcache_stats *objcache_stats(const struct objcache *c);

/*
 * The current object at path, open: path is a file (absolute) or "[vdso]" (this process's
 * vdso image, copied once). NULL when path cannot name an object (anonymous or JIT memory,
 * "/memfd:...", "... (deleted)") or the file is not a readable ELF object with PT_LOAD
 * segments (tried again only when the file changes). When the file was replaced (another
 * device, inode, size or modification time, and not the same build id), a new objfile is made
 * and the old one becomes stale. The returned object may be closed by a later call (the
 * bound): reopen it with objfile_open before using elf or the CFI again.
 */
struct objfile *objcache_get(struct objcache *c, const char *path);

/* Makes o open again (after an eviction): 0, or -1 with cp_error set when it is stale, or its
 * file changed or cannot be read (o then becomes stale). */
int objfile_open(struct objcache *c, struct objfile *o);

/* o's call-frame information (.eh_frame, else .debug_frame), read on first use; NULL when it
 * has none or is closed. Owned by o, valid while o stays open. */
Dwarf_CFI *objfile_cfi(struct objfile *o);

/* The load bias of o mapped at start from file offset pgoff: where its link-time addresses
 * landed. 0 and *bias, or -1 when no PT_LOAD segment holds pgoff. */
int objfile_bias(const struct objfile *o, uint64_t start, uint64_t pgoff, uint64_t *bias);

/*
 * Reports o (at bias) as a module named name to dwfl, between dwfl_report_begin and _end,
 * whose callbacks' find_elf must be objcache_find_elf: libdwfl then takes a reference to o's
 * Elf when it first needs the module (reopening o if it was evicted), and never opens the file
 * itself. Returns the module, or NULL (dwfl_errmsg says why).
 */
Dwfl_Module *objfile_report(struct objcache *c, Dwfl *dwfl, struct objfile *o, const char *name,
                            uint64_t bias);

/* The find_elf callback for modules reported with objfile_report (Dwfl_Callbacks). */
int objcache_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                      char **file_name, Elf **elfp);

#endif
