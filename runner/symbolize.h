/* Symbolization after the run: turns (object file, file offset) and JIT addresses into
 * function names, source lines and module names, once per unique address. libdwfl does the
 * ELF/DWARF work, libiberty demangles C++ and Rust, perf-PID.map files name JIT code. */
#ifndef CP_SYMBOLIZE_H
#define CP_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct symbolizer;

struct sym_info {
	const char *function; /* never NULL: symbol (demangled), or "module+0xOFFSET" */
	const char *module;   /* basename of the object, "[unknown]" when none */
	const char *file;     /* source file when DWARF knows it, else "" */
	unsigned line;        /* 0 when unknown */
	int resolved;         /* 1 when function came from a symbol table or perf map */
};

/* Heap object; all strings it returns are owned by it and live until symbolizer_free. */
struct symbolizer *symbolizer_new(void);
void symbolizer_free(struct symbolizer *s);

/*
 * Resolves an address inside a file-backed mapping. path is the mapped file as the kernel
 * named it (MMAP2 filename); file_offset is the sampled address translated to a file offset
 * (ip - map_start + map_pgoff). is_return is nonzero for a caller frame (a return address):
 * the lookup uses offset - 1 so the call instruction's function and line are found.
 * Results are cached per (path, offset, is_return). Never fails: unknown gives module+0xOFF.
 */
void symbolizer_resolve_file(struct symbolizer *s, const char *path, uint64_t file_offset,
			     int is_return, struct sym_info *out);

/*
 * Resolves an absolute address in anonymous executable memory of process pid through
 * /tmp/perf-PID.map (read once per pid, when present). Unknown gives "[unknown]+0xADDR"
 * style output with module "[anon]" or "[jit]".
 */
void symbolizer_resolve_jit(struct symbolizer *s, pid_t pid, uint64_t addr, int is_return,
			    struct sym_info *out);

/* Resolves an address in the [vdso] mapping given its offset in the vdso image. */
void symbolizer_resolve_vdso(struct symbolizer *s, uint64_t offset, int is_return,
			     struct sym_info *out);

/* ---- pieces exposed for unit tests and the fuzzer ---- */

/* One PT_LOAD segment of an ELF file. */
struct sym_segment {
	uint64_t offset, vaddr, filesz;
};

/*
 * Translates a file offset to the ELF virtual address that the symbol table uses, given the
 * object's PT_LOAD segments: vaddr = offset - seg.offset + seg.vaddr for the segment holding it.
 * Returns 0 and *out, or -1 when no segment holds the offset.
 */
int sym_offset_to_vaddr(const struct sym_segment *segs, size_t nsegs, uint64_t offset,
			uint64_t *out);

/* One entry of a perf map file: "START SIZE NAME" in hex. */
struct perfmap_entry {
	uint64_t start, size;
	char *name; /* owned by the perfmap */
};

struct perfmap {
	struct perfmap_entry *entries; /* sorted by start after parsing */
	size_t n, alloc;
};

/*
 * Parses perf map text; name is used in error messages ("NAME:LINE: what").
 * Returns 0, or -1 with cp_error set (the map keeps the lines before the bad one).
 */
int perfmap_parse(struct perfmap *m, const char *text, size_t len, const char *name);
/* The entry covering addr, or NULL. */
const struct perfmap_entry *perfmap_lookup(const struct perfmap *m, uint64_t addr);
void perfmap_release(struct perfmap *m);

/* Demangles C++ (Itanium) and Rust (legacy and v0) names; returns a new string, or NULL when
 * name is not mangled. Rust legacy hashes ("::h0123456789abcdef") are dropped. */
char *sym_demangle(const char *name);

#endif
