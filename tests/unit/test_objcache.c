/* The run's ELF object cache: every user (the unwinder's leaf fix-up and libdwfl sessions, the
 * symbolizer, the vdso reader) gets one open per object; the bound on open objects holds for
 * all users together and evicted objects come back; a file replaced under the same path is a
 * new object (and the old one is never reopened), unless it has the same build id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner/objcache.h"
#include "runner/sample/unwind.h"
#include "runner/symbols/symbolize.h"

/* ---- helpers ---- */

__attribute__((noinline)) int objcache_test_target(int x);
__attribute__((noinline)) int objcache_test_target(int x)
{
	return x * 3 + 1;
}

static uintptr_t getauxval_vdso(void)
{
	return (uintptr_t)getauxval(AT_SYSINFO_EHDR);
}

struct mapping {
	uint64_t start, end, pgoff;
	char path[4096];
};

/* The mapping of this process holding addr: 0, or -1. */
static int find_mapping(uintptr_t addr, struct mapping *m)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4352];
	int found = -1;
	while (f && fgets(line, sizeof(line), f)) {
		int n = 0;
		char perms[8];
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &m->start,
		           &m->end, perms, &m->pgoff, &n) < 4)
			continue;
		if (addr < m->start || addr >= m->end)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(m->path, sizeof(m->path), "%s", line + n);
		found = 0;
		break;
	}
	if (f)
		fclose(f);
	return found;
}

/* The executable mappings of this process (paths owned by the array; free with free_maps). */
static size_t load_maps(struct unwind_map **out)
{
	FILE *f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	char line[4352];
	struct unwind_map *maps = NULL;
	size_t n = 0;
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end, pgoff;
		char perms[8];
		int at = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &start, &end,
		           perms, &pgoff, &at) < 4 ||
		    perms[2] != 'x')
			continue;
		line[strcspn(line, "\n")] = '\0';
		maps = realloc(maps, (n + 1) * sizeof(*maps));
		assert_non_null(maps);
		maps[n++] = (struct unwind_map){start, end, pgoff, strdup(line + at)};
	}
	fclose(f);
	*out = maps;
	return n;
}

static void free_maps(struct unwind_map *maps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)maps[i].path);
	free(maps);
}

static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	assert_non_null(in);
	assert_non_null(out);
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
}

static size_t count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	size_t n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static char tmpdir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ciprof-objcache-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void in_tmp(char *out, size_t size, const char *name)
{
	snprintf(out, size, "%s/%s", tmpdir, name);
}

/* ---- one open per object, whoever asks ---- */

static void test_one_open_per_object(void **state)
{
	(void)state;
	struct objcache *c = objcache_new();
	struct mapping own, libc, vdso;
	assert_int_equal(find_mapping((uintptr_t)&objcache_test_target, &own), 0);
	assert_int_equal(find_mapping((uintptr_t)&strlen, &libc), 0);
	int have_vdso = find_mapping((uintptr_t)getauxval_vdso(), &vdso) == 0;

	/* The cache alone: however often asked, one open. */
	for (int i = 0; i < 10; i++)
		assert_non_null(objcache_get(c, own.path));
	assert_int_equal(objcache_stats(c)->opens, 1);

	/* The unwinder: a DWARF unwind over every executable mapping of this process, and the
	 * leaf fix-up at a pc in this program and one in the vdso. */
	struct unwinder *u = unwinder_new(c);
	struct unwind_map *maps;
	size_t nmaps = load_maps(&maps);
	uint64_t stack[64] = {0}, ips[16], fixed[16];
	struct unwind_regs regs = {.valid = (1u << UNWIND_RIP) | (1u << UNWIND_RSP) |
	                                    (1u << UNWIND_RBP)};
	regs.r[UNWIND_RIP] = (uintptr_t)&objcache_test_target;
	regs.r[UNWIND_RSP] = (uintptr_t)stack;
	regs.r[UNWIND_RBP] = (uintptr_t)stack;
	unwinder_unwind(u, maps, nmaps, &regs, stack, (uintptr_t)stack, sizeof(stack), ips, 16,
	                NULL);
	struct unwind_map leaf = {own.start, own.end, own.pgoff, own.path};
	unwinder_fix_leaf(u, &leaf, &regs, stack, (uintptr_t)stack, sizeof(stack), ips, 1, fixed,
	                  16, NULL);
	if (have_vdso) {
		struct unwind_map vleaf = {vdso.start, vdso.end, vdso.pgoff, "[vdso]"};
		regs.r[UNWIND_RIP] = vdso.start + 16;
		unwinder_fix_leaf(u, &vleaf, &regs, stack, (uintptr_t)stack, sizeof(stack), ips, 1,
		                  fixed, 16, NULL);
	}
	uint64_t after_unwind = objcache_stats(c)->opens;
	assert_true(after_unwind >= 2); /* this program, libc, ld.so, libcmocka... */

	/* The symbolizer after it: nothing opened again. */
	struct symbolizer *s = symbolizer_new(c);
	struct sym_info si;
	symbolizer_resolve_file(s, own.path,
	                        (uintptr_t)&objcache_test_target - own.start + own.pgoff, 0, &si);
	assert_string_equal(si.function, "objcache_test_target");
	symbolizer_resolve_file(s, libc.path, (uintptr_t)&strlen - libc.start + libc.pgoff, 0, &si);
	assert_true(si.resolved);
	if (have_vdso)
		symbolizer_resolve_vdso(s, 16, 0, &si);
	const struct objcache_stats *st = objcache_stats(c);
	assert_int_equal(st->opens, after_unwind);
	/* Each object was opened exactly once. */
	assert_int_equal(st->opens, st->objects - (have_vdso ? 1 : 0));
	assert_int_equal(st->reopens, 0);
	assert_int_equal(st->vdso_copies, have_vdso ? 1 : 0);
	symbolizer_free(s);
	unwinder_free(u);
	free_maps(maps, nmaps);
	objcache_free(c);
}

/* ---- the bound on open objects ---- */

static void test_eviction(void **state)
{
	(void)state;
	struct mapping own;
	assert_int_equal(find_mapping((uintptr_t)&objcache_test_target, &own), 0);
	uint64_t off = (uintptr_t)&objcache_test_target - own.start + own.pgoff;
	char paths[3][128];
	for (int i = 0; i < 3; i++) {
		char name[16];
		snprintf(name, sizeof(name), "copy%d", i);
		in_tmp(paths[i], sizeof(paths[i]), name);
		copy_file("/proc/self/exe", paths[i]);
	}
	size_t fds0 = count_fds();
	struct objcache *c = objcache_new();
	objcache_set_max_open(c, 2);
	struct objfile *a = objcache_get(c, paths[0]);
	assert_non_null(a);
	assert_non_null(objcache_get(c, paths[1]));
	assert_int_equal(objcache_stats(c)->open_now, 2);
	assert_non_null(objcache_get(c, paths[2]));
	/* The least recently used (the first) was closed to stay at two. */
	assert_int_equal(objcache_stats(c)->open_now, 2);
	assert_int_equal(objcache_stats(c)->evictions, 1);
	assert_null(a->elf);
	assert_int_equal(count_fds(), fds0 + 2);
	/* Asked again, it is the same object, reopened with its CFI. */
	assert_ptr_equal(objcache_get(c, paths[0]), a);
	assert_non_null(a->elf);
	assert_non_null(objfile_cfi(a));
	assert_int_equal(objcache_stats(c)->reopens, 1);
	assert_int_equal(objcache_stats(c)->opens, 4);

	/* A symbolizer keeping a session per object still opens only through the cache: three
	 * objects in turn, never more than two descriptors. */
	struct symbolizer *s = symbolizer_new(c);
	struct sym_info si;
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 3; i++) {
			/* distinct offsets: each lookup reaches the object, not the result cache */
			symbolizer_resolve_file(s, paths[i], off + (uint64_t)round, 0, &si);
			assert_string_equal(si.function, "objcache_test_target");
			assert_true(count_fds() <= fds0 + 2);
		}
	assert_int_equal(objcache_stats(c)->open_max, 2);
	symbolizer_free(s);
	objcache_free(c);
	assert_int_equal(count_fds(), fds0);
}

/* ---- a file replaced under the same path ---- */

static void test_replaced_file(void **state)
{
	(void)state;
	struct mapping libc;
	assert_int_equal(find_mapping((uintptr_t)&strlen, &libc), 0);
	char path[128], next[128];
	in_tmp(path, sizeof(path), "obj");
	in_tmp(next, sizeof(next), "obj.next");
	copy_file("/proc/self/exe", path);

	struct objcache *c = objcache_new();
	objcache_set_recheck_ns(c, 0); /* check the path at every ask */
	struct objfile *first = objcache_get(c, path);
	assert_non_null(first);
	char first_id[128];
	snprintf(first_id, sizeof(first_id), "%s", first->build_id);
	assert_ptr_equal(objcache_get(c, path), first);
	assert_int_equal(objcache_stats(c)->opens, 1);

	/* Replaced by another object (a new inode, as a linker's rename gives): reopened as a
	 * new object; the old one is stale and never reopened. */
	copy_file(libc.path, next);
	assert_int_equal(rename(next, path), 0);
	struct objfile *second = objcache_get(c, path);
	assert_non_null(second);
	assert_ptr_not_equal(second, first);
	assert_true(first->stale);
	assert_null(first->elf);
	assert_int_equal(objfile_open(c, first), -1);
	assert_string_not_equal(second->build_id, first_id);
	assert_int_equal(objcache_stats(c)->opens, 2);
	assert_int_equal(objcache_stats(c)->replaced, 1);

	/* Rewritten in place (same inode, new size and time): a new object again. */
	copy_file("/proc/self/exe", path);
	struct objfile *third = objcache_get(c, path);
	assert_non_null(third);
	assert_ptr_not_equal(third, second);
	assert_string_equal(third->build_id, first_id);
	assert_int_equal(objcache_stats(c)->replaced, 2);

	/* Replaced by a copy with the same build id: the same object, opened again. */
	copy_file("/proc/self/exe", next);
	assert_int_equal(rename(next, path), 0);
	if (*third->build_id) {
		uint64_t objects = objcache_stats(c)->objects;
		assert_ptr_equal(objcache_get(c, path), third);
		assert_false(third->stale);
		assert_non_null(third->elf);
		assert_int_equal(objcache_stats(c)->objects, objects);
		assert_int_equal(objcache_stats(c)->replaced, 2);
	}

	/* Not an ELF object: NULL, and tried again only when the file changes. */
	FILE *f = fopen(next, "w");
	assert_non_null(f);
	fputs("not an object\n", f);
	fclose(f);
	assert_int_equal(rename(next, path), 0);
	uint64_t opens = objcache_stats(c)->opens;
	assert_null(objcache_get(c, path));
	assert_null(objcache_get(c, path));
	assert_int_equal(objcache_stats(c)->opens, opens + 1);
	objcache_free(c);
}

/* Paths that cannot name an object on disk are never opened. */
static void test_not_files(void **state)
{
	(void)state;
	struct objcache *c = objcache_new();
	assert_null(objcache_get(c, "//anon"));
	assert_null(objcache_get(c, "/memfd:jit (deleted)"));
	assert_null(objcache_get(c, "/usr/bin/true (deleted)"));
	assert_null(objcache_get(c, "[heap]"));
	assert_null(objcache_get(c, NULL));
	assert_null(objcache_get(c, "/nonexistent/ciprof/object"));
	assert_int_equal(objcache_stats(c)->opens, 1);
	objcache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_one_open_per_object),
	        cmocka_unit_test(test_eviction),
	        cmocka_unit_test(test_replaced_file),
	        cmocka_unit_test(test_not_files),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
