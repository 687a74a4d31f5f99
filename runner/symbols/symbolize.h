/* Symbolization after the run: turns (object file, file offset) and JIT addresses into
 * function names, source lines and module names, once per unique address. libdwfl does the
 * ELF/DWARF work, libiberty demangles C++ and Rust, perf-PID.map files name JIT code. */
#ifndef CP_SYMBOLIZE_H
#define CP_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct symbolizer;
struct objcache;

struct sym_info {
	const char *function; /* never NULL: symbol (demangled), or "module+0xOFFSET" */
	const char *module;   /* basename of the object, "[unknown]" when none */
	const char *build_id; /* the object's GNU build id in lower-case hex, "" when unknown */
	const char *file;     /* source file when DWARF knows it, else "" */
	unsigned line;        /* 0 when unknown */
	int resolved;         /* 1 when function came from a symbol table or perf map */
};

/* Heap object; all strings it returns are owned by it and live until symbolizer_free. objs:
 * the run's object cache (runner/objcache.h; borrowed: it must outlive the symbolizer), or
 * NULL for one of its own. */
struct symbolizer *symbolizer_new(struct objcache *objs);
void symbolizer_free(struct symbolizer *s);

/*
 * Where separate debug info is searched, in elfutils' debuginfo_path syntax (the default is
 * ":.debug:/usr/lib/debug": the object's directory, its .debug/ subdirectory, and build-id
 * and path lookups under /usr/lib/debug). NULL restores the default. Copied; set it before
 * the first resolve call.
 */
void symbolizer_set_debuginfo_path(struct symbolizer *s, const char *path);

/*
 * Whether source files and lines are looked up for objects whose DWARF lives in a separate
 * debug file (Debian's -dbg packages of libc, ld.so, libstdc++; on by default). Off, such an
 * object's frames get their function names from its symbol tables (the debug file's .symtab
 * included) but no file or line: reading, decompressing and parsing its DWARF was most of a
 * run's own CPU on process-heavy suites, for file names only `ciprof export` shows. Objects
 * with their own .debug_line (the project's code built with -g) always get them.
 */
void symbolizer_set_separate_lines(struct symbolizer *s, int on);

/* Results across runs (runner/symbols/symcache.h; borrowed, or NULL for none): an object with
 * a build id is looked up there first, and a libdwfl session is started for it only when an
 * address is missing; what sessions find is added. Set before the first resolve call. */
struct symcache;
void symbolizer_set_cache(struct symbolizer *s, struct symcache *c);

struct sym_counts {
	uint64_t sessions; /* libdwfl sessions started (objects, the vdso, reopens after an
	                    * eviction) */
};
const struct sym_counts *symbolizer_counts(const struct symbolizer *s);

/* How many objects keep a libdwfl session at once (default 128; each holds parsed DWARF, a
 * reference to the object's mapping and maybe a separate debug file's descriptor); the least
 * recently used is closed beyond that and reopened on demand. The objects' own descriptors
 * are the object cache's, bounded there. */
void symbolizer_set_max_open(struct symbolizer *s, size_t n);

/*
 * Resolves an address inside a file-backed mapping. path is the mapped file as the kernel
 * named it (MMAP2 filename); file_offset is the sampled address translated to a file offset
 * (ip - map_start + map_pgoff). is_return is nonzero for a caller frame (a return address):
 * the lookup uses offset - 1 so the call instruction's function and line are found.
 * Results are cached per (path, offset, is_return). Never fails: unknown gives module+0xOFF.
 * A path ending in " (deleted)" is not reopened (what has that name now is likely a rebuilt
 * file whose symbols would lie): it gives module+0xOFF, the suffix dropped from the module.
 */
void symbolizer_resolve_file(struct symbolizer *s, const char *path, uint64_t file_offset,
                             int is_return, struct sym_info *out);

/*
 * Resolves an absolute address in anonymous executable memory of process pid through
 * /tmp/perf-PID.map (read once per pid, when present and owned by this user or root; bad
 * lines are skipped). A hit gives module "[jit]"; a miss gives function "[anon]+0xADDR" and
 * module "[anon]".
 */
void symbolizer_resolve_jit(struct symbolizer *s, pid_t pid, uint64_t addr, int is_return,
                            struct sym_info *out);

/* Resolves an address in the [vdso] mapping given its offset in the vdso image. The image is
 * the object cache's copy of this process's (the kernel gives every native process the same
 * one); unknown gives
 * "[vdso]+0xOFF". symbolizer_resolve_file routes the path "[vdso]" here. */
void symbolizer_resolve_vdso(struct symbolizer *s, uint64_t offset, int is_return,
                             struct sym_info *out);

/* ---- pieces exposed for unit tests and the fuzzer ---- */

/* The longest name kept from a perf map, in bytes: a longer one (a JIT may write anything) is
 * cut at a character boundary and ends in "…", so one line cannot cost memory all the way
 * through symbolization, the profile and the database. */
#define PERFMAP_NAME_MAX 4096

/* One entry of a perf map file: "START SIZE NAME" in hex. */
struct perfmap_entry {
	uint64_t start, size;
	char *name; /* owned by the perfmap */
};

/* Embedded object: zero-initialize it, fill it with perfmap_parse (which adds to what it holds),
 * free it with perfmap_release. */
struct perfmap {
	struct perfmap_entry *entries; /* sorted by start after parsing */
	size_t n, alloc;
	uint64_t max_size; /* largest entry size, bounds the backward scan of lookups */
};

/*
 * Parses perf map text; name is used in error messages ("NAME:LINE: what").
 * Returns 0, or -1 with cp_error set (the map keeps the lines before the bad one).
 */
int perfmap_parse(struct perfmap *m, const char *text, size_t len, const char *name);
/*
 * Like perfmap_parse, but skips malformed lines and keeps every good one (what a profiler
 * wants from a file a JIT may have been writing when it died). Returns 0, or -1 with cp_error
 * holding the first bad line's message; the map is usable either way.
 */
int perfmap_parse_lenient(struct perfmap *m, const char *text, size_t len, const char *name);
/* The entry covering addr, or NULL. When entries overlap, the one starting last wins; of
 * entries with the same start, the one latest in the file (a JIT reusing memory). */
const struct perfmap_entry *perfmap_lookup(const struct perfmap *m, uint64_t addr);
void perfmap_release(struct perfmap *m);

/* Demangles C++ (Itanium) and Rust (legacy and v0) names; returns a new string, or NULL when
 * name is not mangled. Rust legacy hashes ("::h0123456789abcdef") are dropped. */
char *sym_demangle(const char *name);

#endif
