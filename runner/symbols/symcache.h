/* The symbol cache: what the symbolizer found for an object's addresses, kept across runs in a
 * folder, one file per GNU build id (objects without one are never cached). Read before a
 * run's symbolization, written after it (a complete new file renamed into place, so concurrent
 * runs never see half a file), bounded in size (the least recently used files go first).
 * Entries are only served for the very object they were made from: the file records the
 * object's size and PT_LOAD layout, the symbolizer's settings and the separate debug file
 * found by build id; any difference, and any corrupt file, falls back to real symbolization
 * (a corrupt file is reported with its name and line). docs/symbolization.md. */
#ifndef CP_SYMCACHE_H
#define CP_SYMCACHE_H

#include <stddef.h>
#include <stdint.h>

struct objfile;
struct symcache;
struct symcache_table;

/* The default size bound, in bytes; CIPROF_SYMBOL_CACHE_MB overrides it. */
#define SYMCACHE_MAX_BYTES_DEFAULT ((uint64_t)256 << 20)

/* The cache folder: $CIPROF_SYMBOL_CACHE, else $XDG_CACHE_HOME/ciprof/symbols, else
 * $HOME/.cache/ciprof/symbols. A new string, or NULL when none can be named. */
char *symcache_default_dir(void);

/* Opens (creating it if needed) the cache in dir with a size bound in bytes (0: the default
 * or CIPROF_SYMBOL_CACHE_MB). NULL, with cp_error set, when the folder cannot be used. */
struct symcache *symcache_open(const char *dir, uint64_t max_bytes);
/* Writes what changed (symcache_flush), then frees. */
void symcache_free(struct symcache *c);

/* What decides the results besides the object: the symbolizer's settings (source lines from
 * separate debug files or not, and the debuginfo path, NULL for the default); a table made
 * under other settings is not used. Set before the first symcache_table. */
void symcache_set_mode(struct symcache *c, int separate_lines, const char *debuginfo_path);

/* The table of object o (NULL when o has no build id, or is the vdso, or cannot be reopened),
 * read from its file on first use. A file made from another object with the same build id
 * (another size, PT_LOAD layout, section headers, symbol or string tables: what GNU ld's build
 * id does not cover), or under other settings, gives an empty table that replaces it on flush;
 * a corrupt one too, after a warning naming file and line. */
struct symcache_table *symcache_table(struct symcache *c, struct objfile *o);

/* One result, as the symbolizer made it. kind 'n': function is the name; kind 'm': the
 * function is "MODULE+0xREL" (no symbol: the module's name is the caller's, rel is kept).
 * An address entry is for one (file offset, is_return) and has the source file and line; a
 * range entry is for every address in [offset, end) (ELF virtual addresses, of the address
 * looked up: a return address's minus one) and has only the function. */
struct symcache_entry {
	uint64_t offset, end;
	int is_return;
	char kind;
	uint64_t rel;
	const char *function; /* kind 'n' only; owned by the table */
	const char *file;     /* "" when unknown; owned by the table */
	unsigned line;
};

/* The entry for (offset, is_return), or NULL. Hits are counted; a lookup that found nothing
 * in either kind of entry is counted with symcache_note_miss. */
void symcache_note_miss(struct symcache_table *t);
const struct symcache_entry *symcache_get(struct symcache_table *t, uint64_t offset, int is_return);
/* Adds a result (strings copied). Names holding a tab, newline or backslash are not kept. */
void symcache_put(struct symcache_table *t, const struct symcache_entry *e);

/* The range entry holding vaddr, or NULL; adding one that overlaps another does nothing. */
const struct symcache_entry *symcache_get_range(struct symcache_table *t, uint64_t vaddr);
void symcache_put_range(struct symcache_table *t, const struct symcache_entry *e);

/* Writes every table with new entries (temporary file, then rename), then trims the folder
 * to its bound, oldest files first. Returns 0, or -1 with cp_error set (the run goes on). */
int symcache_flush(struct symcache *c);

struct symcache_stats {
	uint64_t hits, misses;   /* symcache_get calls */
	uint64_t files_read;     /* tables read from a file and used */
	uint64_t files_rejected; /* files of another object or other settings */
	uint64_t files_corrupt;  /* files that did not parse */
	uint64_t files_written, files_evicted;
};
const struct symcache_stats *symcache_stats(const struct symcache *c);

#endif
