/* Tests of the symbol cache across runs (runner/symbols/symcache.h): a second symbolizer over
 * the same objects answers from the cache, with no libdwfl session but for objects with their
 * own source lines (not cached), and exactly as an uncached one does; a rebuilt program (new build
 * id) and another program with the same build id are not served the old names; a corrupt file is
 * reported by name and line and falls back; the folder stays under its bound, least recently used
 * files first. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runner/objcache.h"
#include "runner/symbols/symbolize.h"
#include "runner/symbols/symcache.h"

#include "common/error.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd) == 0 ? 0 : -1;
}

/* One address to resolve. */
struct addr {
	char path[512];
	uint64_t offset;
	int is_return;
};

/* Addresses spread over every executable file mapping of this process (the test program with
 * its DWARF lines, libc, ld.so, cmocka...): n per mapping, both kinds, plus the same offsets
 * shifted by shift (addresses a first symbolizer never saw). */
static size_t own_addresses(struct addr **out, size_t per_map, uint64_t shift)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	size_t n = 0, alloc = 0;
	struct addr *a = NULL;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &pgoff,
		           &pos) < 4 ||
		    perms[2] != 'x')
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (line[pos] != '/')
			continue;
		uint64_t step = (end - start) / per_map;
		for (size_t i = 0; i < per_map; i++) {
			if (n + 2 > alloc) {
				alloc = alloc ? alloc * 2 : 256;
				a = realloc(a, alloc * sizeof(*a));
			}
			for (int r = 0; r < 2; r++) {
				snprintf(a[n].path, sizeof(a[n].path), "%s", line + pos);
				a[n].offset = pgoff + i * step + shift + (uint64_t)r * 3;
				a[n].is_return = r;
				n++;
			}
		}
	}
	if (f)
		fclose(f);
	*out = a;
	return n;
}

static struct symbolizer *new_symbolizer(struct symcache *c)
{
	struct symbolizer *s = symbolizer_new(NULL);
	symbolizer_set_separate_lines(s, 0); /* as the runner does */
	symbolizer_set_cache(s, c);
	return s;
}

static void expect_same(const struct sym_info *want, const struct sym_info *got,
                        const struct addr *a, const char *what)
{
	if (strcmp(want->function, got->function) || strcmp(want->module, got->module) ||
	    strcmp(want->file, got->file) || strcmp(want->build_id, got->build_id) ||
	    want->line != got->line || want->resolved != got->resolved)
		fail_msg("%s: %s+0x%" PRIx64
		         " (return %d): uncached %s (%s, %s:%u, %d), got %s (%s, "
		         "%s:%u, %d)",
		         what, a->path, a->offset, a->is_return, want->function, want->module,
		         want->file, want->line, want->resolved, got->function, got->module,
		         got->file, got->line, got->resolved);
}

/* Resolves every address with s and compares with ref's answers. */
static void compare(struct symbolizer *ref, struct symbolizer *s, const struct addr *a, size_t n,
                    const char *what)
{
	for (size_t i = 0; i < n; i++) {
		struct sym_info want, got;
		symbolizer_resolve_file(ref, a[i].path, a[i].offset, a[i].is_return, &want);
		symbolizer_resolve_file(s, a[i].path, a[i].offset, a[i].is_return, &got);
		expect_same(&want, &got, &a[i], what);
	}
}

static void rm_rf(const char *dir)
{
	run("rm -rf '%s'", dir);
}

static void test_second_run_from_cache(void **state)
{
	char dir[] = "/tmp/ciprof-symcache-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct addr *a, *b;
	size_t n = own_addresses(&a, 400, 0);
	size_t nb = own_addresses(&b, 400, 5); /* other addresses in mostly the same functions */
	assert_true(n > 0);
	struct symbolizer *ref = new_symbolizer(NULL);

	/* first run: everything symbolized, identical to uncached, files written */
	struct symcache *c = symcache_open(dir, 0);
	assert_non_null(c);
	struct symbolizer *s = new_symbolizer(c);
	compare(ref, s, a, n, "first run");
	assert_true(symbolizer_counts(s)->sessions > 0);
	symbolizer_free(s);
	assert_int_equal(symcache_flush(c), 0);
	assert_true(symcache_stats(c)->files_written > 0);
	symcache_free(c);

	/* second run, same addresses: the same answers, and no libdwfl session but the test
	 * program's own (it has its own source lines: not cached) */
	c = symcache_open(dir, 0);
	s = new_symbolizer(c);
	compare(ref, s, a, n, "second run");
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(len > 0);
	self[len] = '\0';
	int own_lines = run("readelf -S '%s' | grep -q '\\.debug_line'", self) == 0;
	assert_int_equal(symbolizer_counts(s)->sessions, own_lines ? 1 : 0);
	assert_int_equal(symcache_stats(c)->misses, 0);
	assert_true(symcache_stats(c)->files_read > 0);
	symbolizer_free(s);
	symcache_free(c);

	/* third run, other addresses: still the uncached answers; functions known from the
	 * ranges of objects without source lines answer many of them */
	c = symcache_open(dir, 0);
	s = new_symbolizer(c);
	compare(ref, s, b, nb, "third run, other addresses");
	assert_true(symcache_stats(c)->hits > 0);
	symbolizer_free(s);
	symcache_free(c);

	/* switched off (no cache): the same again, with sessions */
	s = new_symbolizer(NULL);
	compare(ref, s, b, nb, "no cache");
	assert_true(symbolizer_counts(s)->sessions > 0);
	symbolizer_free(s);

	symbolizer_free(ref);
	free(a);
	free(b);
	rm_rf(dir);
}

/* Writes DIR/prog.c with one hot function named fname, and builds DIR/out with build id bid
 * ("" for the linker's own). */
static int build_prog(const char *dir, const char *fname, const char *bid, const char *out)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/prog.c", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f,
	        "__attribute__((noinline)) int %s(int x) { int s = 0; for (int i = 0; i < x; i++) "
	        "s += i * x; return s; }\n"
	        "int main(int argc, char **argv) { return %s(argc) == 12345; }\n",
	        fname, fname);
	fclose(f);
	char opt[200] = "-Wl,--build-id";
	if (*bid)
		snprintf(opt, sizeof(opt), "-Wl,--build-id=0x%s", bid);
	/* no -g: such objects are cached by address ranges */
	return run("cd '%s' && cc -O1 %s -o %s.tmp prog.c && mv -f %s.tmp %s", dir, opt, out, out,
	           out);
}

/* The file offset of fname's entry in the program at path (from its symbol table, through
 * its PT_LOAD headers), or 0. */
static uint64_t function_offset(const char *path, const char *fname)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "nm '%s' | awk '$3 == \"%s\" { print $1 }'", path, fname);
	FILE *p = popen(cmd, "r");
	unsigned long long v = 0;
	if (!p || fscanf(p, "%llx", &v) != 1)
		v = 0;
	if (p)
		pclose(p);
	struct objcache *oc = objcache_new();
	struct objfile *o = objcache_get(oc, path);
	uint64_t off = 0;
	for (size_t i = 0; o && i < o->nsegs; i++)
		if (v >= o->segs[i].vaddr && v < o->segs[i].vaddr + o->segs[i].filesz)
			off = v - o->segs[i].vaddr + o->segs[i].offset;
	objcache_free(oc);
	return off;
}

static const char *resolve_with(const char *cache_dir, const char *path, uint64_t off, char *buf,
                                size_t bufsz, uint64_t *sessions)
{
	struct symcache *c = cache_dir ? symcache_open(cache_dir, 0) : NULL;
	struct symbolizer *s = new_symbolizer(c);
	struct sym_info si;
	symbolizer_resolve_file(s, path, off + 4, 0, &si);
	snprintf(buf, bufsz, "%s", si.function);
	if (sessions)
		*sessions = symbolizer_counts(s)->sessions;
	symbolizer_free(s);
	symcache_free(c);
	return buf;
}

static void test_rebuilt_and_colliding(void **state)
{
	if (run("command -v cc >/dev/null && command -v nm >/dev/null") < 0)
		skip();
	char dir[] = "/tmp/ciprof-symcache-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char cache[600], prog[600], buf[256];
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	uint64_t sessions;

	/* a program, symbolized twice: the second time from the cache */
	assert_int_equal(build_prog(dir, "first_version_fn", "", prog), 0);
	uint64_t off = function_offset(prog, "first_version_fn");
	assert_true(off > 0);
	assert_string_equal(resolve_with(cache, prog, off, buf, sizeof(buf), &sessions),
	                    "first_version_fn");
	assert_int_equal(sessions, 1);
	assert_string_equal(resolve_with(cache, prog, off, buf, sizeof(buf), &sessions),
	                    "first_version_fn");
	assert_int_equal(sessions, 0);

	/* rebuilt at the same path with another function: a new build id, the new name */
	assert_int_equal(build_prog(dir, "second_version_function", "", prog), 0);
	off = function_offset(prog, "second_version_function");
	assert_string_equal(resolve_with(cache, prog, off, buf, sizeof(buf), &sessions),
	                    "second_version_function");
	assert_int_equal(sessions, 1);

	/* two different programs forced to one build id: the second is not served the first's
	 * names (its size and layout differ from what the cache file records) */
	const char *bid = "0123456789abcdef0123456789abcdef01234567";
	assert_int_equal(build_prog(dir, "collision_a", bid, prog), 0);
	off = function_offset(prog, "collision_a");
	assert_string_equal(resolve_with(cache, prog, off, buf, sizeof(buf), NULL), "collision_a");
	assert_string_equal(resolve_with(cache, prog, off, buf, sizeof(buf), &sessions),
	                    "collision_a");
	assert_int_equal(sessions, 0);
	/* the same length of name: the same size and loaded bytes; GNU ld's build id does not
	 * cover .symtab, so two such programs have one build id even without forcing it */
	assert_int_equal(build_prog(dir, "collision_b", bid, prog), 0);
	assert_int_equal(function_offset(prog, "collision_b"), off);
	assert_string_equal(resolve_with(cache, prog, off, buf, sizeof(buf), &sessions),
	                    "collision_b");
	assert_int_equal(sessions, 1);
	assert_int_equal(build_prog(dir, "collision_b_with_a_much_longer_name_than_a", bid, prog),
	                 0);
	off = function_offset(prog, "collision_b_with_a_much_longer_name_than_a");
	struct symcache *c = symcache_open(cache, 0);
	struct symbolizer *s = new_symbolizer(c);
	struct sym_info si;
	symbolizer_resolve_file(s, prog, off + 4, 0, &si);
	assert_string_equal(si.function, "collision_b_with_a_much_longer_name_than_a");
	assert_int_equal(symcache_stats(c)->files_rejected, 1);
	assert_int_equal(symbolizer_counts(s)->sessions, 1);
	symbolizer_free(s);
	symcache_free(c);
	/* and the file now holds the second one's names */
	assert_string_equal(resolve_with(cache, prog, off, buf, sizeof(buf), &sessions),
	                    "collision_b_with_a_much_longer_name_than_a");
	assert_int_equal(sessions, 0);
	rm_rf(dir);
}

/* The cache file of the object at path, in cache. */
static void cache_file(const char *cache, const char *path, char *out, size_t outsz)
{
	struct objcache *oc = objcache_new();
	struct objfile *o = objcache_get(oc, path);
	assert_non_null(o);
	snprintf(out, outsz, "%s/%s.sym", cache, o->build_id);
	objcache_free(oc);
}

static void test_corrupt_falls_back(void **state)
{
	if (run("command -v cc >/dev/null && command -v nm >/dev/null") < 0)
		skip();
	char dir[] = "/tmp/ciprof-symcache-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char cache[600], prog[600], file[800], buf[256];
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	assert_int_equal(build_prog(dir, "corrupt_test_fn", "", prog), 0);
	uint64_t off = function_offset(prog, "corrupt_test_fn");
	resolve_with(cache, prog, off, buf, sizeof(buf), NULL);
	cache_file(cache, prog, file, sizeof(file));
	assert_int_equal(access(file, R_OK), 0);

	/* each damage: named in the error (file and line), then the real symbolization */
	static const char *const damage[] = {
	        /* each command ends with the file's name */
	        "sed -i 's/^r \\([0-9a-f]*\\) /r zz\\1 /'",             /* a bad range line */
	        "sed -i '$d'",                                          /* cut short: no end */
	        "sed -i 's/\\tcorrupt_test_fn/\\twrong_name\\tx\\ty/'", /* extra fields */
	        "printf 'garbage\\n' >",                                /* not a cache file */
	        "head -c 20 /dev/urandom >",
	};
	for (size_t i = 0; i < sizeof(damage) / sizeof(*damage); i++) {
		resolve_with(cache, prog, off, buf, sizeof(buf), NULL); /* repaired */
		assert_int_equal(run("%s '%s'", damage[i], file), 0);
		struct symcache *c = symcache_open(cache, 0);
		struct symbolizer *s = new_symbolizer(c);
		struct sym_info si;
		symbolizer_resolve_file(s, prog, off + 4, 0, &si);
		if (strcmp(si.function, "corrupt_test_fn"))
			fail_msg("damage %zu: got %s", i, si.function);
		assert_int_equal(symcache_stats(c)->files_corrupt, 1);
		assert_int_equal(symbolizer_counts(s)->sessions, 1);
		if (!strstr(cp_last_error(), file) || !strchr(cp_last_error() + strlen(file), ':'))
			fail_msg("damage %zu: message '%s' does not name %s:LINE", i,
			         cp_last_error(), file);
		symbolizer_free(s);
		symcache_free(c);
	}
	rm_rf(dir);
}

static size_t count_files(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += strstr(de->d_name, ".sym") != NULL;
	if (d)
		closedir(d);
	return n;
}

static void test_bounded(void **state)
{
	if (run("command -v cc >/dev/null && command -v nm >/dev/null") < 0)
		skip();
	char dir[] = "/tmp/ciprof-symcache-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char cache[600], prog[3][600], buf[256];
	const char *names[3] = {"bounded_zero", "bounded_one", "bounded_two"};
	uint64_t off[3];
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	for (int i = 0; i < 3; i++) {
		snprintf(prog[i], sizeof(prog[i]), "%s/prog%d", dir, i);
		char bid[41];
		memset(bid, "abc"[i], 40);
		bid[40] = '\0';
		assert_int_equal(build_prog(dir, names[i], bid, prog[i]), 0);
		off[i] = function_offset(prog[i], names[i]);
		resolve_with(cache, prog[i], off[i], buf, sizeof(buf), NULL);
	}
	assert_int_equal(count_files(cache), 3);
	/* make prog0's file the oldest, prog1's the newest */
	char f[3][800];
	for (int i = 0; i < 3; i++)
		cache_file(cache, prog[i], f[i], sizeof(f[i]));
	assert_int_equal(run("touch -d '3 hours ago' '%s' && touch -d '2 hours ago' '%s' && "
	                     "touch -d '1 hour ago' '%s'",
	                     f[0], f[2], f[1]),
	                 0);
	struct stat st;
	assert_int_equal(stat(f[0], &st), 0);
	/* a bound that holds two files: a fourth write (prog2 at a new address) evicts prog0 */
	struct symcache *c = symcache_open(cache, (uint64_t)st.st_size * 5 / 2);
	struct symbolizer *s = new_symbolizer(c);
	struct sym_info si;
	symbolizer_resolve_file(s, prog[2], 0, 0, &si); /* not in any known range: written */
	symbolizer_free(s);
	assert_int_equal(symcache_flush(c), 0);
	assert_true(symcache_stats(c)->files_evicted >= 1);
	symcache_free(c);
	assert_int_not_equal(access(f[0], F_OK), 0);
	assert_int_equal(access(f[2], F_OK), 0);
	/* an evicted object is symbolized anew */
	assert_string_equal(resolve_with(cache, prog[0], off[0], buf, sizeof(buf), NULL), names[0]);
	rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_second_run_from_cache),
	        cmocka_unit_test(test_rebuilt_and_colliding),
	        cmocka_unit_test(test_corrupt_falls_back),
	        cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
