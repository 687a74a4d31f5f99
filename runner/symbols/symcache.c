/* The symbol cache across runs (symcache.h). One text file per build id, DIR/BUILDID.sym:
 *
 *   ciprof-symcache 1
 *   object BUILDID SIZE SEGHASH      the object: file size and a hash of its PT_LOAD headers
 *   mode LINES DEBUGINFO_PATH        the symbolizer's settings
 *   debug WHAT                       the separate debug file found by build id: path, size,
 *                                    mtime; "-" when there is none
 *   e OFFSET RET KIND REL LINE\tFUNCTION\tFILE     one address's result (hex numbers)
 *   r START END KIND REL\tFUNCTION                  the function of an address range
 *   end COUNT
 *
 * A file whose header differs from what the object and settings give now is not used (and is
 * replaced); one that does not parse, or does not end with the right count (cut short), is
 * reported as corrupt and not used either. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common/search.h"
#include "runner/symbols/symcache.h"
#include "runner/objcache.h"

#include "common/error.h"
#include "common/hashidx.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "ciprof-symcache 1"
/* A file larger than this is not read (corrupt, or not ours). */
#define SYMCACHE_FILE_MAX ((size_t)64 << 20)

struct symcache_table {
	char *build_id;
	char *header; /* the header this object and these settings give */
	char *path;
	struct symcache_entry *e;
	size_t n, alloc;
	struct hashidx idx;
	struct symcache_entry *r; /* range entries, sorted by offset when !unsorted */
	size_t nr, ralloc;
	int unsorted;
	size_t nloaded; /* entries (both kinds) that came from the file or were written */
	struct symcache *cache;
};

struct symcache {
	char *dir;
	uint64_t max_bytes;
	int separate_lines;
	char *debuginfo_path;
	struct symcache_table **tabs;
	size_t ntabs, tabs_alloc;
	struct symcache_stats stats;
};

char *symcache_default_dir(void)
{
	const char *d = getenv("CIPROF_SYMBOL_CACHE");
	struct strbuf sb = STRBUF_INIT;
	if (d && *d)
		return xstrdup(d);
	d = getenv("XDG_CACHE_HOME");
	if (d && d[0] == '/') {
		strbuf_addf(&sb, "%s/ciprof/symbols", d);
		return strbuf_detach(&sb, NULL);
	}
	d = getenv("HOME");
	if (d && d[0] == '/') {
		strbuf_addf(&sb, "%s/.cache/ciprof/symbols", d);
		return strbuf_detach(&sb, NULL);
	}
	return NULL;
}

/* mkdir -p */
static int make_dirs(const char *dir)
{
	char *p = xstrdup(dir);
	int ret = 0;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s)
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, 0777) < 0 && errno != EEXIST) {
			ret = cp_error_errno("cannot make the symbol cache folder %s", p);
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	free(p);
	return ret;
}

struct symcache *symcache_open(const char *dir, uint64_t max_bytes)
{
	if (!dir || !*dir) {
		cp_error("no symbol cache folder");
		return NULL;
	}
	if (make_dirs(dir) < 0)
		return NULL;
	if (access(dir, R_OK | W_OK | X_OK) < 0) {
		cp_error_errno("cannot use the symbol cache folder %s", dir);
		return NULL;
	}
	struct symcache *c = xcalloc(1, sizeof(*c));
	c->dir = xstrdup(dir);
	c->max_bytes = max_bytes;
	const char *mb = getenv("CIPROF_SYMBOL_CACHE_MB");
	if (!max_bytes && mb && *mb) {
		char *end;
		unsigned long long v = strtoull(mb, &end, 10);
		if (*end || v == 0)
			log_warn("CIPROF_SYMBOL_CACHE_MB=%s is not a positive number of MiB; using "
			         "%" PRIu64,
			         mb, SYMCACHE_MAX_BYTES_DEFAULT >> 20);
		else
			c->max_bytes = (uint64_t)v << 20;
	}
	if (!c->max_bytes)
		c->max_bytes = SYMCACHE_MAX_BYTES_DEFAULT;
	c->separate_lines = 1;
	return c;
}

void symcache_set_mode(struct symcache *c, int separate_lines, const char *debuginfo_path)
{
	c->separate_lines = !!separate_lines;
	free(c->debuginfo_path);
	c->debuginfo_path = debuginfo_path ? xstrdup(debuginfo_path) : NULL;
}

const struct symcache_stats *symcache_stats(const struct symcache *c)
{
	return &c->stats;
}

static void table_free(struct symcache_table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free((char *)t->e[i].function);
		free((char *)t->e[i].file);
	}
	free(t->e);
	for (size_t i = 0; i < t->nr; i++)
		free((char *)t->r[i].function);
	free(t->r);
	hashidx_release(&t->idx);
	free(t->build_id);
	free(t->header);
	free(t->path);
	free(t);
}

void symcache_free(struct symcache *c)
{
	if (!c)
		return;
	if (symcache_flush(c) < 0)
		log_warn("symbol cache: %s", cp_last_error());
	for (size_t i = 0; i < c->ntabs; i++)
		table_free(c->tabs[i]);
	free(c->tabs);
	free(c->dir);
	free(c->debuginfo_path);
	free(c);
}

/* ---- entries ---- */

static uint64_t entry_hash(uint64_t offset, int is_return)
{
	return hash_mix(offset * 2 + !!is_return);
}

struct entry_key {
	uint64_t offset;
	int is_return;
};

static int entry_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct symcache_entry *e = &((const struct symcache_table *)ctx)->e[pos];
	const struct entry_key *k = key;
	return e->offset == k->offset && e->is_return == k->is_return;
}

static const struct symcache_entry *find(const struct symcache_table *t, uint64_t offset,
                                         int is_return)
{
	struct entry_key k = {offset, !!is_return};
	int64_t pos = hashidx_find(&t->idx, entry_hash(offset, k.is_return), entry_eq, t, &k);
	return pos < 0 ? NULL : &t->e[pos];
}

const struct symcache_entry *symcache_get(struct symcache_table *t, uint64_t offset, int is_return)
{
	const struct symcache_entry *e = find(t, offset, is_return);
	if (e)
		t->cache->stats.hits++;
	return e;
}

void symcache_note_miss(struct symcache_table *t)
{
	t->cache->stats.misses++;
}

static int storable(const char *s)
{
	return !s[strcspn(s, "\t\n\r\\")];
}

static void add(struct symcache_table *t, const struct symcache_entry *e)
{
	ALLOC_GROW(t->e, t->n + 1, t->alloc);
	struct symcache_entry *d = &t->e[t->n];
	*d = *e;
	d->is_return = !!e->is_return;
	d->function = e->kind == 'n' ? xstrdup(e->function) : NULL;
	d->file = xstrdup(e->file ? e->file : "");
	hashidx_insert(&t->idx, entry_hash(d->offset, d->is_return), (uint32_t)t->n++);
}

static int range_cmp(const void *a, const void *b)
{
	const struct symcache_entry *x = a, *y = b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static void sort_ranges(struct symcache_table *t)
{
	if (t->unsorted)
		qsort(t->r, t->nr, sizeof(*t->r), range_cmp);
	t->unsorted = 0;
}

/* The index of the first range starting after vaddr. */
static size_t upper_bound(struct symcache_table *t, uint64_t vaddr)
{
	sort_ranges(t);
	return cp_first_above(t->r, t->nr, sizeof(*t->r), offsetof(struct symcache_entry, offset),
	                      vaddr);
}

static const struct symcache_entry *find_range(struct symcache_table *t, uint64_t vaddr)
{
	size_t a = upper_bound(t, vaddr);
	return a > 0 && vaddr < t->r[a - 1].end ? &t->r[a - 1] : NULL;
}

const struct symcache_entry *symcache_get_range(struct symcache_table *t, uint64_t vaddr)
{
	const struct symcache_entry *e = find_range(t, vaddr);
	if (e)
		t->cache->stats.hits++;
	return e;
}

static void add_range(struct symcache_table *t, const struct symcache_entry *e)
{
	ALLOC_GROW(t->r, t->nr + 1, t->ralloc);
	struct symcache_entry *d = &t->r[t->nr++];
	*d = *e;
	d->is_return = 0;
	d->line = 0;
	d->file = NULL;
	d->function = e->kind == 'n' ? xstrdup(e->function) : NULL;
	t->unsorted = 1;
}

void symcache_put_range(struct symcache_table *t, const struct symcache_entry *e)
{
	if ((e->kind != 'n' && e->kind != 'm') || (e->kind == 'n' && !storable(e->function)) ||
	    e->offset >= e->end || find_range(t, e->offset) || find_range(t, e->end - 1)) {
		return;
	}
	size_t a = upper_bound(t, e->offset); /* a range starting inside [offset, end) */
	if (a < t->nr && t->r[a].offset < e->end)
		return;
	add_range(t, e); /* at the end, then moved to its place: the array stays sorted */
	struct symcache_entry d = t->r[t->nr - 1];
	memmove(&t->r[a + 1], &t->r[a], (t->nr - 1 - a) * sizeof(d));
	t->r[a] = d;
	t->unsorted = 0;
}

void symcache_put(struct symcache_table *t, const struct symcache_entry *e)
{
	if ((e->kind != 'n' && e->kind != 'm') || (e->kind == 'n' && !storable(e->function)) ||
	    (e->file && !storable(e->file)) || find(t, e->offset, e->is_return))
		return;
	add(t, e);
}

/* ---- reading ---- */

/* A hash of what names o's code besides its build id: GNU ld's build id covers only what is
 * loaded, so two programs differing in a function's name (.symtab, .strtab) can have one.
 * Hashes the PT_LOAD layout, every section header and the symbol and string tables. */
static uint64_t object_hash(struct objfile *o)
{
	uint64_t h = 0;
	for (size_t i = 0; i < o->nsegs; i++) {
		uint64_t f[4] = {o->segs[i].offset, o->segs[i].vaddr, o->segs[i].filesz,
		                 o->segs[i].memsz};
		h = hash_bytes(f, sizeof(f), h);
	}
	Elf *elf = o->elf;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		h = hash_bytes(&sh, sizeof(sh), h);
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_STRTAB)
			continue;
		Elf_Data *d = elf_rawdata(scn, NULL);
		if (d && d->d_buf)
			h = hash_bytes(d->d_buf, d->d_size, h);
	}
	return h;
}

/* What the header of o's file must be now (o open). */
static char *make_header(const struct symcache *c, struct objfile *o)
{
	struct strbuf sb = STRBUF_INIT;
	uint64_t h = object_hash(o);
	strbuf_addf(&sb, MAGIC "\nobject %s %" PRId64 " %016" PRIx64 "\nmode %d %s\ndebug ",
	            o->build_id, o->size, h, c->separate_lines,
	            c->debuginfo_path ? c->debuginfo_path : "-");
	/* The separate debug file libdwfl would find by build id, if any: installing or
	 * upgrading a -dbg package changes the names (its .symtab) and lines. */
	const char *dirs = c->debuginfo_path ? c->debuginfo_path : ":.debug:/usr/lib/debug";
	int found = 0;
	while (*dirs && !found) {
		size_t len = strcspn(dirs, ":");
		if (len && dirs[0] == '/') {
			char path[4096];
			struct stat st;
			snprintf(path, sizeof(path), "%.*s/.build-id/%.2s/%s.debug", (int)len, dirs,
			         o->build_id, o->build_id + 2);
			if (stat(path, &st) == 0) {
				strbuf_addf(&sb, "%s %lld %lld.%09ld", path, (long long)st.st_size,
				            (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
				found = 1;
			}
		}
		dirs += len;
		if (*dirs == ':')
			dirs++;
	}
	if (!found)
		strbuf_addstr(&sb, "-");
	strbuf_addch(&sb, '\n');
	return strbuf_detach(&sb, NULL);
}

static int parse_hex(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int n = 0;
	for (; n < 17; s++, n++) {
		int d = hex_digit_value(*s);
		if (d < 0)
			break;
		x = x * 16 + (uint64_t)d;
	}
	if (n == 0 || n > 16)
		return -1;
	*p = s;
	*v = x;
	return 0;
}

/* Parses the entries after the header (text at body, the file's line lineno). Returns 0, or
 * -1 with cp_error naming path and line. */
static int parse_body(struct symcache_table *t, char *body, int lineno)
{
	size_t count = 0;
	for (char *line = body; *line; lineno++) {
		char *nl = strchr(line, '\n');
		if (!nl)
			return cp_error("%s:%d: the last line has no end (the file was cut short)",
			                t->path, lineno);
		*nl = '\0';
		if (!strncmp(line, "end ", 4)) {
			char *end;
			unsigned long long n = strtoull(line + 4, &end, 10);
			if (*end || n != count)
				return cp_error(
				        "%s:%d: the file ends with 'end %s' after %zu entries",
				        t->path, lineno, line + 4, count);
			if (nl[1])
				return cp_error("%s:%d: text after the end", t->path, lineno + 1);
			sort_ranges(t);
			for (size_t i = 1; i < t->nr; i++)
				if (t->r[i].offset < t->r[i - 1].end)
					return cp_error("%s: the ranges at 0x%" PRIx64
					                " and 0x%" PRIx64 " overlap",
					                t->path, t->r[i - 1].offset,
					                t->r[i].offset);
			return 0;
		}
		struct symcache_entry e = {0};
		uint64_t ret, rel, lno;
		const char *p = line;
		char *tab1, *tab2;
		if (!strncmp(p, "r ", 2)) {
			p += 2;
			if (parse_hex(&p, &e.offset) < 0 || *p++ != ' ' ||
			    parse_hex(&p, &e.end) < 0 || e.end <= e.offset || *p++ != ' ' ||
			    (*p != 'n' && *p != 'm'))
				goto bad;
			e.kind = *p++;
			if (*p++ != ' ' || parse_hex(&p, &e.rel) < 0 || *p != '\t' ||
			    strchr(p + 1, '\t') || (e.kind == 'n') != (p[1] != '\0'))
				goto bad;
			e.function = p + 1;
			add_range(t, &e);
			count++;
			line = nl + 1;
			continue;
		}
		if (strncmp(p, "e ", 2))
			goto bad;
		p += 2;
		if (parse_hex(&p, &e.offset) < 0 || *p++ != ' ' || parse_hex(&p, &ret) < 0 ||
		    ret > 1 || *p++ != ' ' || (*p != 'n' && *p != 'm'))
			goto bad;
		e.is_return = (int)ret;
		e.kind = *p++;
		if (*p++ != ' ' || parse_hex(&p, &rel) < 0 || *p++ != ' ' ||
		    parse_hex(&p, &lno) < 0 || lno > 0xffffffffu || *p != '\t')
			goto bad;
		e.rel = rel;
		e.line = (unsigned)lno;
		tab1 = (char *)p + 1;
		tab2 = strchr(tab1, '\t');
		if (!tab2 || strchr(tab2 + 1, '\t'))
			goto bad;
		*tab2 = '\0';
		e.function = tab1;
		e.file = tab2 + 1;
		if ((e.kind == 'n') != (*e.function != '\0') || find(t, e.offset, e.is_return))
			goto bad;
		add(t, &e);
		count++;
		line = nl + 1;
		continue;
	bad:
		return cp_error("%s:%d: not a symbol cache entry", t->path, lineno);
	}
	return cp_error("%s:%d: no 'end' line (the file was cut short)", t->path, lineno);
}

static int valid_build_id(const char *id)
{
	size_t n = strlen(id);
	return n >= 2 && n <= 128 && id[strspn(id, "0123456789abcdef")] == '\0';
}

struct symcache_table *symcache_table(struct symcache *c, struct objfile *o)
{
	if (!o || o->vdso || !valid_build_id(o->build_id) || objfile_open(o->cache, o) < 0)
		return NULL;
	for (size_t i = 0; i < c->ntabs; i++) {
		if (strcmp(c->tabs[i]->build_id, o->build_id))
			continue;
		/* Two objects of one build id in a run: only the first one's is cached. */
		char *h = make_header(c, o);
		int same = !strcmp(h, c->tabs[i]->header);
		free(h);
		return same ? c->tabs[i] : NULL;
	}
	struct symcache_table *t = xcalloc(1, sizeof(*t));
	t->cache = c;
	t->build_id = xstrdup(o->build_id);
	t->header = make_header(c, o);
	hashidx_init(&t->idx);
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s/%s.sym", c->dir, o->build_id);
	t->path = strbuf_detach(&sb, NULL);
	ALLOC_GROW(c->tabs, c->ntabs + 1, c->tabs_alloc);
	c->tabs[c->ntabs++] = t;

	strbuf_init(&sb, SYMCACHE_FILE_MAX);
	if (strbuf_read_file(&sb, t->path) < 0) {
		if (errno != ENOENT) {
			c->stats.files_corrupt++;
			log_warn("symbol cache: %s; symbolizing without it", cp_last_error());
		}
		strbuf_release(&sb);
		return t;
	}
	size_t hlen = strlen(t->header);
	char *text = sb.buf ? sb.buf : (char *)"";
	/* The first two lines say whose file it is: a file of another build id, or not starting
	 * with the magic line, is corrupt; the same build id with another size, layout, debug file
	 * or settings is another object (or another way to symbolize it). */
	char want[300];
	snprintf(want, sizeof(want), MAGIC "\nobject %s ", o->build_id);
	if (strlen(text) != sb.len || strncmp(text, want, strlen(want))) {
		c->stats.files_corrupt++;
		log_warn("symbol cache: %s:1: not a symbol cache file of build id %s; symbolizing "
		         "without it",
		         t->path, o->build_id);
	} else if (strncmp(text, t->header, hlen)) {
		c->stats.files_rejected++;
		log_debug("symbol cache: %s was made from another object with this build id or "
		          "with other settings; not using it",
		          t->path);
	} else if (parse_body(t, text + hlen, 5) < 0) {
		c->stats.files_corrupt++;
		log_warn("symbol cache: %s; symbolizing without it", cp_last_error());
		for (size_t i = 0; i < t->n; i++) {
			free((char *)t->e[i].function);
			free((char *)t->e[i].file);
		}
		for (size_t i = 0; i < t->nr; i++)
			free((char *)t->r[i].function);
		t->n = t->nr = 0;
		hashidx_release(&t->idx);
		hashidx_init(&t->idx);
	} else {
		c->stats.files_read++;
		t->nloaded = t->n + t->nr;
		utimensat(AT_FDCWD, t->path, NULL, 0); /* used: the last to be evicted */
	}
	strbuf_release(&sb);
	return t;
}

/* ---- writing ---- */

static int write_table(struct symcache *c, struct symcache_table *t)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, t->header);
	for (size_t i = 0; i < t->n; i++) {
		const struct symcache_entry *e = &t->e[i];
		strbuf_addf(&sb, "e %" PRIx64 " %d %c %" PRIx64 " %x\t%s\t%s\n", e->offset,
		            e->is_return, e->kind, e->rel, e->line,
		            e->kind == 'n' ? e->function : "", e->file);
	}
	sort_ranges(t);
	for (size_t i = 0; i < t->nr; i++) {
		const struct symcache_entry *e = &t->r[i];
		strbuf_addf(&sb, "r %" PRIx64 " %" PRIx64 " %c %" PRIx64 "\t%s\n", e->offset,
		            e->end, e->kind, e->rel, e->kind == 'n' ? e->function : "");
	}
	strbuf_addf(&sb, "end %zu\n", t->n + t->nr);
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s/.tmp-%s-XXXXXX", c->dir, t->build_id);
	int fd = mkstemp(tmp);
	int ret = 0;
	if (fd < 0) {
		ret = cp_error_errno("cannot write in %s", c->dir);
		goto out;
	}
	fchmod(fd, 0644);
	size_t done = 0;
	while (done < sb.len) {
		ssize_t n = write(fd, sb.buf + done, sb.len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = cp_error_errno("cannot write %s", tmp);
			break;
		}
		done += (size_t)n;
	}
	if (close(fd) < 0 && !ret)
		ret = cp_error_errno("cannot write %s", tmp);
	/* rename is atomic: a concurrent run reads the old file or this one, never a mix; the
	 * last writer wins, and both wrote complete files. */
	if (!ret && rename(tmp, t->path) < 0)
		ret = cp_error_errno("cannot rename %s to %s", tmp, t->path);
	if (ret)
		unlink(tmp);
	else
		c->stats.files_written++;
out:
	strbuf_release(&sb);
	return ret;
}

struct cached_file {
	char *name;
	uint64_t size;
	struct timespec mtime;
};

static int older_first(const void *a, const void *b)
{
	const struct cached_file *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Deletes the least recently used files until the rest fit the bound; temporary files of a
 * run that died (older than an hour) go too. */
static int trim(struct symcache *c)
{
	DIR *d = opendir(c->dir);
	if (!d)
		return cp_error_errno("cannot read the symbol cache folder %s", c->dir);
	struct cached_file *files = NULL;
	size_t n = 0, alloc = 0;
	uint64_t total = 0;
	time_t now = time(NULL);
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		size_t len = strlen(de->d_name);
		int tmp = !strncmp(de->d_name, ".tmp-", 5);
		if (!tmp && (len < 5 || strcmp(de->d_name + len - 4, ".sym")))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (tmp) {
			if (now - st.st_mtime > 3600)
				unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		ALLOC_GROW(files, n + 1, alloc);
		files[n].name = xstrdup(de->d_name);
		files[n].size = (uint64_t)st.st_size;
		files[n].mtime = st.st_mtim;
		total += files[n].size;
		n++;
	}
	if (total > c->max_bytes) {
		qsort(files, n, sizeof(*files), older_first);
		for (size_t i = 0; i < n && total > c->max_bytes; i++) {
			if (unlinkat(dirfd(d), files[i].name, 0) == 0 || errno == ENOENT) {
				total -= files[i].size;
				c->stats.files_evicted++;
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		free(files[i].name);
	free(files);
	closedir(d);
	return 0;
}

int symcache_flush(struct symcache *c)
{
	int ret = 0, wrote = 0;
	for (size_t i = 0; i < c->ntabs; i++) {
		struct symcache_table *t = c->tabs[i];
		if (t->n + t->nr == t->nloaded)
			continue;
		if (write_table(c, t) < 0)
			ret = -1;
		else
			wrote = 1;
		t->nloaded = t->n + t->nr;
	}
	if (wrote && trim(c) < 0)
		ret = -1;
	return ret;
}
