/* Tests of runner/symbolize: offset translation, perf maps, demangling, and resolving real code
 * of this very process (its own functions, libc, the vdso) and of a freshly built library whose
 * symbols and lines live only in separate debug info. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runner/objcache.h"
#include "runner/symbols/symbolize.h"

#include "common/error.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cmocka.h>

/* ---- helpers ---- */

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

/* Finds the file-backed mapping holding addr in /proc/self/maps: its path and the file offset
 * of addr (addr - start + pgoff), as the runner computes it from MMAP2 records. */
static int find_mapping(uintptr_t addr, char *path, size_t pathsz, uint64_t *offset)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = -1;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff;
		char perms[8];
		int n = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &pgoff, &n) <
		    4)
			continue;
		if (addr < start || addr >= end)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(path, pathsz, "%s", line + n);
		*offset = addr - start + pgoff;
		found = 0;
		break;
	}
	if (f)
		fclose(f);
	return found;
}

/* ---- obj_offset_to_vaddr ---- */

static void test_offset_to_vaddr(void **state)
{
	uint64_t v;
	/* PIE / shared library: first segment at 0, offsets equal addresses in the text. */
	const struct obj_segment pie[] = {
	        {0x0, 0x0, 0x1000, 0x1000},
	        {0x1000, 0x1000, 0x3000, 0x3000},
	        {0x4000, 0x4000, 0x800, 0x800},
	        {0x4df0, 0x5df0, 0x300, 0x300}, /* data: vaddr - offset = 0x1000 */
	};
	assert_int_equal(obj_offset_to_vaddr(pie, 4, 0x1234, &v), 0);
	assert_int_equal(v, 0x1234);
	assert_int_equal(obj_offset_to_vaddr(pie, 4, 0x0, &v), 0);
	assert_int_equal(v, 0x0);
	assert_int_equal(obj_offset_to_vaddr(pie, 4, 0x4df0, &v), 0);
	assert_int_equal(v, 0x5df0);
	assert_int_equal(obj_offset_to_vaddr(pie, 4, 0x50ef, &v), 0);
	assert_int_equal(v, 0x60ef);
	/* past the end of every segment */
	assert_int_equal(obj_offset_to_vaddr(pie, 4, 0x50f0, &v), -1);
	assert_int_equal(obj_offset_to_vaddr(pie, 4, 0x4800, &v), -1); /* gap between segments */

	/* non-PIE executable linked at 0x400000 */
	const struct obj_segment exec[] = {
	        {0x0, 0x400000, 0x600, 0x600},
	        {0x1000, 0x401000, 0x2345, 0x2345},
	        {0x4000, 0x404000, 0x100, 0x100},
	};
	assert_int_equal(obj_offset_to_vaddr(exec, 3, 0x1136, &v), 0);
	assert_int_equal(v, 0x401136);
	assert_int_equal(obj_offset_to_vaddr(exec, 3, 0x3344, &v), 0);
	assert_int_equal(v, 0x403344);
	assert_int_equal(obj_offset_to_vaddr(exec, 3, 0x3345, &v), -1);

	/* text segment whose vaddr differs from its offset (prelinked / odd linker scripts) */
	const struct obj_segment odd[] = {{0x2000, 0x7000, 0x1000, 0x1000}};
	assert_int_equal(obj_offset_to_vaddr(odd, 1, 0x2abc, &v), 0);
	assert_int_equal(v, 0x7abc);
	assert_int_equal(obj_offset_to_vaddr(odd, 1, 0x1fff, &v), -1);
	assert_int_equal(obj_offset_to_vaddr(odd, 1, 0x3000, &v), -1);
	assert_int_equal(obj_offset_to_vaddr(NULL, 0, 0, &v), -1);
}

/* ---- perf maps ---- */

static void test_perfmap_good(void **state)
{
	static const char text[] = "7f0000001000 20 py::foo:/app/x.py\n"
	                           "0x7f0000001020 0x10 Interpreted  bar baz \n"
	                           "\n"
	                           "   \n"
	                           "7F0000002000 100 LazyCompile:*main /x.js:1\r\n"
	                           "7f0000000800 8 last line without newline";
	struct perfmap m = {0};
	assert_int_equal(perfmap_parse(&m, text, strlen(text), "perf-1.map"), 0);
	assert_int_equal(m.n, 4);
	/* sorted by start */
	assert_int_equal(m.entries[0].start, 0x7f0000000800);
	assert_string_equal(m.entries[0].name, "last line without newline");
	for (size_t i = 1; i < m.n; i++)
		assert_true(m.entries[i - 1].start < m.entries[i].start);

	const struct perfmap_entry *e;
	assert_null(perfmap_lookup(&m, 0x7f0000000fff));
	e = perfmap_lookup(&m, 0x7f0000001000);
	assert_non_null(e);
	assert_string_equal(e->name, "py::foo:/app/x.py");
	e = perfmap_lookup(&m, 0x7f000000101f);
	assert_non_null(e);
	assert_string_equal(e->name, "py::foo:/app/x.py");
	e = perfmap_lookup(&m, 0x7f0000001020);
	assert_non_null(e);
	assert_string_equal(e->name, "Interpreted  bar baz");
	assert_int_equal(e->size, 0x10);
	e = perfmap_lookup(&m, 0x7f000000102f);
	assert_non_null(e);
	assert_string_equal(e->name, "Interpreted  bar baz");
	assert_null(perfmap_lookup(&m, 0x7f0000001030));
	e = perfmap_lookup(&m, 0x7f00000020ff);
	assert_non_null(e);
	assert_string_equal(e->name, "LazyCompile:*main /x.js:1");
	assert_null(perfmap_lookup(&m, 0x7f0000002100));
	assert_null(perfmap_lookup(&m, 0));
	assert_null(perfmap_lookup(&m, UINT64_MAX));
	perfmap_release(&m);
	assert_int_equal(m.n, 0);

	/* overlaps: the same start again means reused memory (the later line wins); a nested
	 * entry wins over the one enclosing it */
	static const char over[] = "1000 100 outer\n1010 10 inner\n1000 80 newer\n";
	assert_int_equal(perfmap_parse(&m, over, strlen(over), "o.map"), 0);
	assert_int_equal(m.n, 2);
	assert_string_equal(perfmap_lookup(&m, 0x1000)->name, "newer");
	assert_string_equal(perfmap_lookup(&m, 0x1015)->name, "inner");
	assert_string_equal(perfmap_lookup(&m, 0x1020)->name, "newer");
	assert_null(perfmap_lookup(&m, 0x1080));
	perfmap_release(&m);

	/* an empty map finds nothing */
	assert_int_equal(perfmap_parse(&m, "", 0, "e.map"), 0);
	assert_null(perfmap_lookup(&m, 0x1000));
	perfmap_release(&m);
}

struct bad_case {
	const char *text;
	const char *where; /* "NAME:LINE:" expected in the message */
	const char *what;  /* expected in the message */
	size_t kept;       /* entries parsed before the bad line */
};

/* A perf map line with a huge name keeps PERFMAP_NAME_MAX bytes of it, cut between
 * characters and marked with an ellipsis. */
static void test_perfmap_long_name(void **state)
{
	(void)state;
	size_t n = 1 << 20;
	char *text = malloc(n + 64);
	int off = snprintf(text, 64, "7f0000001000 20 ");
	/* "é" (2 bytes) repeated: a cut at an odd byte would split one. */
	for (size_t i = 0; i < n; i += 2)
		memcpy(text + off + i, "\xc3\xa9", 2);
	strcpy(text + off + n, "\n7f0000002000 10 short\n");
	struct perfmap m = {0};
	assert_int_equal(perfmap_parse(&m, text, strlen(text), "perf-2.map"), 0);
	assert_int_equal(m.n, 2);
	const char *name = m.entries[0].name;
	size_t len = strlen(name);
	assert_true(len <= PERFMAP_NAME_MAX);
	assert_true(len > PERFMAP_NAME_MAX - 8);
	assert_string_equal(name + len - 3, "\xe2\x80\xa6");
	assert_true(((len - 3) % 2) == 0); /* whole characters only */
	assert_string_equal(m.entries[1].name, "short");
	perfmap_release(&m);
	free(text);
}

static void test_perfmap_malformed(void **state)
{
	static const struct bad_case cases[] = {
	        {"1000 10 ok\nzz 10 bad\n", "bad1.map:2:", "bad hex start", 1},
	        {"1000\n", "bad2.map:1:", "missing size", 0},
	        {"1000 10 a\n2000 10 b\n3000   \t\n", "bad3.map:3:", "missing size", 2},
	        {"1000 10\n", "bad4.map:1:", "missing name", 0},
	        {"1000 10   \t \n", "bad5.map:1:", "missing name", 0},
	        {"1000 1g name\n", "bad6.map:1:", "bad hex size", 0},
	        {"\n\n0x 10 name\n", "bad7.map:3:", "bad hex start", 0},
	        {"11112222333344445 1 x\n", "bad8.map:1:", "bad hex start", 0},
	        {"ffffffffffffffff 10 x\n", "bad9.map:1:", "overflows", 0},
	        {"1000 0x name\n", "bad10.map:1:", "bad hex size", 0},
	        {"-1000 10 name\n", "bad11.map:1:", "bad hex start", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char name[32];
		snprintf(name, sizeof(name), "bad%zu.map", i + 1);
		struct perfmap m = {0};
		cp_clear_error();
		int ret = perfmap_parse(&m, cases[i].text, strlen(cases[i].text), name);
		if (ret != -1 || !strstr(cp_last_error(), cases[i].where) ||
		    !strstr(cp_last_error(), cases[i].what))
			fail_msg("case %zu: ret %d, message '%s', want '%s' and '%s'", i + 1, ret,
			         cp_last_error(), cases[i].where, cases[i].what);
		assert_int_equal(m.n, cases[i].kept);
		perfmap_release(&m);
	}

	/* a NUL byte inside a line */
	static const char nul[] = "1000 10 a\0b\n";
	struct perfmap m = {0};
	assert_int_equal(perfmap_parse(&m, nul, sizeof(nul) - 1, "nul.map"), -1);
	assert_non_null(strstr(cp_last_error(), "nul.map:1:"));
	perfmap_release(&m);

	/* lenient parsing keeps every good line and reports the first bad one */
	static const char mixed[] = "zz\n1000 10 a\n2000 q b\n3000 10 c\n4000\n";
	assert_int_equal(perfmap_parse_lenient(&m, mixed, strlen(mixed), "mixed.map"), -1);
	assert_non_null(strstr(cp_last_error(), "mixed.map:1:"));
	assert_int_equal(m.n, 2);
	assert_string_equal(perfmap_lookup(&m, 0x1005)->name, "a");
	assert_string_equal(perfmap_lookup(&m, 0x3005)->name, "c");
	assert_null(perfmap_lookup(&m, 0x2005));
	perfmap_release(&m);
}

/* ---- demangling ---- */

static void expect_demangled(const char *mangled, const char *want)
{
	char *got = sym_demangle(mangled);
	if (!want) {
		if (got)
			fail_msg("%s demangled to '%s', want NULL", mangled ? mangled : "(null)",
			         got);
		return;
	}
	if (!got || strcmp(got, want))
		fail_msg("%s demangled to '%s', want '%s'", mangled, got ? got : "(null)", want);
	free(got);
}

static void test_demangle(void **state)
{
	expect_demangled("_ZN3foo3barEi", "foo::bar(int)");
	expect_demangled("_ZNK3Foo3getEv", "Foo::get() const");
	expect_demangled("_ZNSt6vectorIiSaIiEE9push_backERKi",
	                 "std::vector<int, std::allocator<int> >::push_back(int const&)");
	expect_demangled("_Z3foov.cold", "foo() [clone .cold]");
	/* Rust legacy: the ::h<16 hex> hash is dropped */
	expect_demangled("_ZN3std2io5stdio6_print17h3c0a6f1b2d4e5f60E", "std::io::stdio::_print");
	expect_demangled("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write");
	/* Rust v0 */
	expect_demangled("_RNvCs6KtT2fMGqXk_8rust_out4main", "rust_out::main");
	expect_demangled("_RNvNtCs1234_7mycrate3foo3bar", "mycrate::foo::bar");
	expect_demangled("_RINvNtC4core3mem4swapmEB4_", "core::mem::swap::<u32>");
	/* not mangled */
	expect_demangled("main", NULL);
	expect_demangled("getpid", NULL);
	expect_demangled("_start", NULL);
	expect_demangled("_Zgarbage", NULL);
	expect_demangled("", NULL);
	expect_demangled(NULL, NULL);
}

/* ---- resolving this process's own code ---- */

static const unsigned target_decl_line = __LINE__ + 1;
__attribute__((noinline, noclone)) static int ciprof_test_target(volatile int *x)
{
	int sum = 0;
	for (int i = 0; i < *x; i++)
		sum += i * *x;
	return sum;
}

static void test_resolve_own_function(void **state)
{
	volatile int n = 3;
	assert_int_equal(ciprof_test_target(&n), 9);

	char path[4096];
	uint64_t off;
	assert_int_equal(find_mapping((uintptr_t)&ciprof_test_target, path, sizeof(path), &off), 0);
	assert_true(path[0] == '/');

	struct symbolizer *s = symbolizer_new(NULL);
	struct sym_info si;
	symbolizer_resolve_file(s, path, off, 0, &si);
	assert_string_equal(si.function, "ciprof_test_target");
	assert_int_equal(si.resolved, 1);
	assert_string_equal(si.module, "test_symbolize");
	if (!ends_with(si.file, "test_symbolize.c"))
		fail_msg("file '%s' is not test_symbolize.c", si.file);
	if (si.line < target_decl_line || si.line > target_decl_line + 6)
		fail_msg("line %u, want about %u", si.line, target_decl_line);

	/* a return address just past the first instruction still belongs to the function */
	struct sym_info ret;
	symbolizer_resolve_file(s, path, off + 1, 1, &ret);
	assert_string_equal(ret.function, "ciprof_test_target");
	assert_int_equal(ret.resolved, 1);

	/* a return address at the very start is the previous function's call: not ours */
	symbolizer_resolve_file(s, path, off, 1, &ret);
	assert_string_not_equal(ret.function, "ciprof_test_target");

	/* cached: the same strings come back */
	struct sym_info again;
	symbolizer_resolve_file(s, path, off, 0, &again);
	assert_ptr_equal(again.function, si.function);
	assert_ptr_equal(again.file, si.file);

	/* this test function too, at an address in its middle */
	uint64_t off2;
	assert_int_equal(
	        find_mapping((uintptr_t)&test_resolve_own_function + 8, path, sizeof(path), &off2),
	        0);
	symbolizer_resolve_file(s, path, off2, 0, &si);
	assert_string_equal(si.function, "test_resolve_own_function");
	assert_true(si.line > target_decl_line);
	symbolizer_free(s);
}

static void test_resolve_libc(void **state)
{
	void *fn = dlsym(RTLD_DEFAULT, "getppid");
	assert_non_null(fn);
	char path[4096];
	uint64_t off;
	assert_int_equal(find_mapping((uintptr_t)fn, path, sizeof(path), &off), 0);
	assert_non_null(strstr(path, "libc.so.6"));

	struct symbolizer *s = symbolizer_new(NULL);
	struct sym_info si;
	symbolizer_resolve_file(s, path, off, 0, &si);
	if (!strstr(si.function, "getppid"))
		fail_msg("libc offset 0x%" PRIx64 " resolved to '%s'", off, si.function);
	assert_int_equal(si.resolved, 1);
	assert_string_equal(si.module, "libc.so.6");
	symbolizer_resolve_file(s, path, off + 1, 1, &si);
	assert_non_null(strstr(si.function, "getppid"));

	fn = dlsym(RTLD_DEFAULT, "qsort");
	assert_non_null(fn);
	assert_int_equal(find_mapping((uintptr_t)fn, path, sizeof(path), &off), 0);
	symbolizer_resolve_file(s, path, off + 4, 0, &si);
	if (!strstr(si.function, "qsort"))
		fail_msg("qsort resolved to '%s'", si.function);
	symbolizer_free(s);
}

/* With one object open at a time, switching between files closes and reopens them. */
static void test_reopen_after_eviction(void **state)
{
	char own[4096], libc[4096];
	uint64_t own_off, libc_off;
	assert_int_equal(find_mapping((uintptr_t)&ciprof_test_target, own, sizeof(own), &own_off),
	                 0);
	assert_int_equal(find_mapping((uintptr_t)dlsym(RTLD_DEFAULT, "getppid"), libc, sizeof(libc),
	                              &libc_off),
	                 0);
	struct symbolizer *s = symbolizer_new(NULL);
	symbolizer_set_max_open(s, 1);
	struct sym_info si;
	for (uint64_t i = 0; i < 3; i++) {
		symbolizer_resolve_file(s, own, own_off + i, 0, &si);
		assert_string_equal(si.function, "ciprof_test_target");
		symbolizer_resolve_file(s, libc, libc_off + i, 0, &si);
		assert_non_null(strstr(si.function, "getppid"));
	}
	symbolizer_free(s);
}

static void test_resolve_unknown(void **state)
{
	struct symbolizer *s = symbolizer_new(NULL);
	struct sym_info si;
	symbolizer_resolve_file(s, "/nonexistent/dir/libfoo.so.1", 0x1234, 0, &si);
	assert_string_equal(si.function, "libfoo.so.1+0x1234");
	assert_string_equal(si.module, "libfoo.so.1");
	assert_string_equal(si.file, "");
	assert_int_equal(si.line, 0);
	assert_int_equal(si.resolved, 0);
	/* a return address that stays unresolved shows the offset it was given */
	symbolizer_resolve_file(s, "/nonexistent/dir/libfoo.so.1", 0x1000, 1, &si);
	assert_string_equal(si.function, "libfoo.so.1+0x1000");

	/* not ELF, a directory, a device, a deleted file, no path at all */
	symbolizer_resolve_file(s, "/dev/null", 0x10, 0, &si);
	assert_string_equal(si.function, "null+0x10");
	assert_int_equal(si.resolved, 0);
	symbolizer_resolve_file(s, "/tmp", 0x10, 0, &si);
	assert_string_equal(si.function, "tmp+0x10");
	symbolizer_resolve_file(s, "/proc/self/exe", 0xffffffffff, 0, &si);
	assert_string_equal(si.function, "exe+0xffffffffff");
	assert_int_equal(si.resolved, 0);
	symbolizer_resolve_file(s, "/usr/lib/x86_64-linux-gnu/libc.so.6 (deleted)", 0x20, 0, &si);
	assert_string_equal(si.module, "libc.so.6");
	assert_string_equal(si.function, "libc.so.6+0x20");
	assert_int_equal(si.resolved, 0);
	symbolizer_resolve_file(s, "", 0x30, 0, &si);
	assert_string_equal(si.module, "[unknown]");
	assert_string_equal(si.function, "[unknown]+0x30");
	symbolizer_resolve_file(s, NULL, 0x30, 0, &si);
	assert_string_equal(si.function, "[unknown]+0x30");

	/* a text file with an ELF-looking name */
	char dir[] = "/tmp/ciprof-symtest-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char file[256];
	snprintf(file, sizeof(file), "%s/libfake.so", dir);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fputs("\177ELF not really\n", f);
	fclose(f);
	symbolizer_resolve_file(s, file, 0x4, 0, &si);
	assert_string_equal(si.function, "libfake.so+0x4");
	unlink(file);
	rmdir(dir);
	symbolizer_free(s);
}

static void test_resolve_jit(void **state)
{
	pid_t pid = getpid();
	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("7f1234560000 40 py::outer:/srv/app.py\n"
	      "this line is broken\n"
	      "7f1234560040 20 _ZN3foo3barEi\n",
	      f);
	fclose(f);

	struct symbolizer *s = symbolizer_new(NULL);
	struct sym_info si;
	symbolizer_resolve_jit(s, pid, 0x7f1234560010, 0, &si);
	assert_string_equal(si.function, "py::outer:/srv/app.py");
	assert_string_equal(si.module, "[jit]");
	assert_int_equal(si.resolved, 1);
	symbolizer_resolve_jit(s, pid, 0x7f1234560045, 0, &si);
	assert_string_equal(si.function, "foo::bar(int)"); /* demangled; the bad line skipped */
	/* return address right after the first entry: the call was inside it */
	symbolizer_resolve_jit(s, pid, 0x7f1234560040, 1, &si);
	assert_string_equal(si.function, "py::outer:/srv/app.py");
	symbolizer_resolve_jit(s, pid, 0x7f1234560060, 0, &si);
	assert_string_equal(si.function, "[anon]+0x7f1234560060");
	assert_string_equal(si.module, "[anon]");
	assert_int_equal(si.resolved, 0);

	/* read once per pid: a changed file is not reread */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("7f1234560000 40 changed\n", f);
	fclose(f);
	symbolizer_resolve_jit(s, pid, 0x7f1234560020, 0, &si);
	assert_string_equal(si.function, "py::outer:/srv/app.py");
	unlink(path);

	/* no map at all */
	symbolizer_resolve_jit(s, 999999999, 0x1000, 1, &si);
	assert_string_equal(si.function, "[anon]+0x1000");
	assert_string_equal(si.module, "[anon]");
	symbolizer_free(s);
}

/* The offset of a named symbol in this process's vdso image, through libelf. */
static int vdso_symbol_offset(const char *name, uint64_t *out)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return -1;
	char path[4096];
	uint64_t dummy;
	if (find_mapping(base, path, sizeof(path), &dummy) < 0 || strcmp(path, "[vdso]"))
		return -1;
	/* Size: the mapping's extent as /proc/self/maps gives it. */
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	size_t size = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long start, end;
		if (sscanf(line, "%llx-%llx", &start, &end) == 2 && start == base)
			size = (size_t)(end - start);
	}
	if (f)
		fclose(f);
	elf_version(EV_CURRENT);
	Elf *elf = elf_memory((char *)base, size);
	int ret = -1;
	Elf_Scn *scn = NULL;
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;
			if (gelf_getsym(d, (int)i, &sym) &&
			    (n = elf_strptr(elf, sh.sh_link, sym.st_name)) && !strcmp(n, name)) {
				*out = sym.st_value; /* x86-64 vdso: vaddr == offset */
				ret = 0;
			}
		}
	}
	if (elf)
		elf_end(elf);
	return ret;
}

static void test_resolve_vdso(void **state)
{
	uint64_t off;
	if (vdso_symbol_offset("__vdso_clock_gettime", &off) < 0)
		skip();
	struct symbolizer *s = symbolizer_new(NULL);
	struct sym_info si;
	symbolizer_resolve_vdso(s, off + 2, 0, &si);
	if (!strstr(si.function, "clock_gettime"))
		fail_msg("vdso offset 0x%" PRIx64 " resolved to '%s'", off + 2, si.function);
	assert_string_equal(si.module, "[vdso]");
	assert_int_equal(si.resolved, 1);
	symbolizer_resolve_file(s, "[vdso]", off + 2, 0, &si);
	assert_non_null(strstr(si.function, "clock_gettime"));
	symbolizer_resolve_vdso(s, 0xfffffff0, 0, &si);
	assert_string_equal(si.function, "[vdso]+0xfffffff0");
	assert_int_equal(si.resolved, 0);
	symbolizer_free(s);
}

/* ---- separate debug info ---- */

static const char lib_source[] =
        "static __attribute__((noinline)) int hidden_helper(int x)\n" /* 1 */
        "{\n"                                                         /* 2 */
        "\treturn x * 3 + 1;\n"                                       /* 3 */
        "}\n"                                                         /* 4 */
        "\n"                                                          /* 5 */
        "int ciprof_dbg_entry(int x)\n"                               /* 6 */
        "{\n"                                                         /* 7 */
        "\treturn hidden_helper(x) + 2;\n"                            /* 8 */
        "}\n";

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return st == 0 ? 0 : -1;
}

/*
 * The file offset of symbol name: its address from symfile's .symtab, translated through
 * loadfile's PT_LOAD headers (the inverse of what the symbolizer does, done independently).
 */
static int symbol_file_offset(const char *symfile, const char *loadfile, const char *name,
                              uint64_t *out)
{
	elf_version(EV_CURRENT);
	uint64_t vaddr = 0;
	int found = 0;
	int fd = open(symfile, O_RDONLY);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	Elf_Scn *scn = NULL;
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;
			if (gelf_getsym(d, (int)i, &sym) &&
			    (n = elf_strptr(elf, sh.sh_link, sym.st_name)) && !strcmp(n, name)) {
				vaddr = sym.st_value;
				found = 1;
			}
		}
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	if (!found)
		return -1;

	found = 0;
	fd = open(loadfile, O_RDONLY);
	elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	size_t phnum = 0;
	if (elf && elf_getphdrnum(elf, &phnum) == 0) {
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
				*out = vaddr - ph.p_vaddr + ph.p_offset;
				found = 1;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return found ? 0 : -1;
}

static void expect_helper(struct symbolizer *s, const char *lib, uint64_t off, const char *what)
{
	struct sym_info si;
	symbolizer_resolve_file(s, lib, off, 0, &si);
	if (strcmp(si.function, "hidden_helper") || !ends_with(si.file, "lib.c") || si.line < 1 ||
	    si.line > 3)
		fail_msg("%s: got %s at %s:%u, want hidden_helper at lib.c:1..3", what, si.function,
		         si.file, si.line);
	assert_int_equal(si.resolved, 1);
}

static void test_separate_debuginfo(void **state)
{
	if (run("command -v cc >/dev/null && command -v objcopy >/dev/null && "
	        "command -v strip >/dev/null") < 0)
		skip();
	char dir[] = "/tmp/ciprof-symtest-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[512];
	snprintf(path, sizeof(path), "%s/lib.c", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(lib_source, f);
	fclose(f);

	if (run("cd %s && cc -g -O1 -fPIC -shared -Wl,--build-id -o libfull.so lib.c", dir) < 0) {
		run("rm -rf %s", dir);
		skip();
	}
	/* 1. .gnu_debuglink: everything stripped, the .debug file next to the library */
	assert_int_equal(run("cd %s && mkdir link && cp libfull.so link/libdbg.so && cd link && "
	                     "objcopy --only-keep-debug libdbg.so libdbg.so.debug && "
	                     "strip --strip-all libdbg.so && "
	                     "objcopy --add-gnu-debuglink=libdbg.so.debug libdbg.so",
	                     dir),
	                 0);
	/* 2. build-id: everything stripped, no debuglink, .debug under DIR/dbg/.build-id/xx/ */
	assert_int_equal(run("cd %s && mkdir bid && cp libfull.so bid/libbid.so && "
	                     "objcopy --only-keep-debug libfull.so bid.debug && "
	                     "strip --strip-all bid/libbid.so && "
	                     "id=$(readelf -n libfull.so | sed -n 's/.*Build ID: *//p') && "
	                     "test -n \"$id\" && mkdir -p dbg/.build-id/${id%%${id#??}} && "
	                     "mv bid.debug dbg/.build-id/${id%%${id#??}}/${id#??}.debug",
	                     dir),
	                 0);
	/* 3. strip -g only: symbols stay, lines come from the debuglinked file */
	assert_int_equal(
	        run("cd %s && mkdir g && cp libfull.so g/libg.so && cd g && "
	            "objcopy --only-keep-debug libg.so libg.so.debug && strip -g libg.so && "
	            "objcopy --add-gnu-debuglink=libg.so.debug libg.so",
	            dir),
	        0);

	char full[512], dbg[512], link[512], bid[512], g[512], dbgdir[512];
	snprintf(full, sizeof(full), "%s/libfull.so", dir);
	snprintf(link, sizeof(link), "%s/link/libdbg.so", dir);
	snprintf(dbg, sizeof(dbg), "%s/link/libdbg.so.debug", dir);
	snprintf(bid, sizeof(bid), "%s/bid/libbid.so", dir);
	snprintf(g, sizeof(g), "%s/g/libg.so", dir);
	snprintf(dbgdir, sizeof(dbgdir), "%s/dbg", dir);

	/* the stripped file alone really knows nothing about hidden_helper */
	assert_int_equal(run("nm %s 2>/dev/null | grep -q hidden_helper", link), -1);

	struct symbolizer *s = symbolizer_new(NULL);
	char *path_list = NULL;
	if (asprintf(&path_list, ":.debug:%s", dbgdir) < 0)
		fail();
	symbolizer_set_debuginfo_path(s, path_list);
	free(path_list);

	const char *libs[] = {full, link, bid, g};
	const char *what[] = {"unstripped", "debuglink", "build-id", "strip -g"};
	for (size_t i = 0; i < 4; i++) {
		uint64_t off;
		assert_int_equal(symbol_file_offset(dbg, libs[i], "hidden_helper", &off), 0);
		expect_helper(s, libs[i], off, what[i]);
		expect_helper(s, libs[i], off + 1, what[i]);
	}
	symbolizer_free(s);

	/* Without lines from separate debug files (what the runner asks for): the same names,
	 * but files and lines only where the object has its own DWARF. */
	s = symbolizer_new(NULL);
	if (asprintf(&path_list, ":.debug:%s", dbgdir) < 0)
		fail();
	symbolizer_set_debuginfo_path(s, path_list);
	free(path_list);
	symbolizer_set_separate_lines(s, 0);
	for (size_t i = 0; i < 4; i++) {
		uint64_t off;
		struct sym_info si;
		assert_int_equal(symbol_file_offset(dbg, libs[i], "hidden_helper", &off), 0);
		if (i == 0) {
			expect_helper(s, libs[i], off, what[i]);
			continue;
		}
		symbolizer_resolve_file(s, libs[i], off, 0, &si);
		if (strcmp(si.function, "hidden_helper") || strcmp(si.file, "") || si.line)
			fail_msg("%s, no separate lines: got %s at '%s':%u, want hidden_helper, no "
			         "file",
			         what[i], si.function, si.file, si.line);
		assert_int_equal(si.resolved, 1);
	}
	symbolizer_free(s);

	/* the stripped copy with its debug info out of reach: the exported function only */
	s = symbolizer_new(NULL);
	uint64_t entry;
	assert_int_equal(symbol_file_offset(dbg, bid, "ciprof_dbg_entry", &entry), 0);
	struct sym_info si;
	symbolizer_resolve_file(s, bid, entry, 0, &si);
	assert_string_equal(si.function, "ciprof_dbg_entry");
	assert_string_equal(si.file, "");
	assert_int_equal(si.line, 0);
	uint64_t helper;
	assert_int_equal(symbol_file_offset(dbg, bid, "hidden_helper", &helper), 0);
	symbolizer_resolve_file(s, bid, helper, 0, &si);
	assert_string_not_equal(si.function, "hidden_helper");
	/* ... named by its .eh_frame entry: one name for every address inside it */
	char want[128];
	snprintf(want, sizeof(want), "libbid.so+0x%llx", (unsigned long long)helper);
	assert_string_equal(si.function, want);
	symbolizer_resolve_file(s, bid, helper + 1, 0, &si);
	assert_string_equal(si.function, want);
	symbolizer_resolve_file(s, bid, helper + 2, 1, &si); /* a return address: pc-1 */
	assert_string_equal(si.function, want);
	assert_int_equal(si.resolved, 0);
	symbolizer_free(s);
	run("rm -rf %s", dir);
}

/* A non-PIE executable (ET_EXEC linked at 0x400000): file offsets are not addresses. */
static void test_non_pie_executable(void **state)
{
	if (run("command -v cc >/dev/null") < 0)
		skip();
	char dir[] = "/tmp/ciprof-symtest-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char src[512], prog[512];
	snprintf(src, sizeof(src), "%s/lib.c", dir);
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	FILE *f = fopen(src, "w");
	assert_non_null(f);
	fputs(lib_source, f);
	fputs("int main(int argc, char **argv)\n{\n\treturn ciprof_dbg_entry(argc);\n}\n", f);
	fclose(f);
	if (run("cd %s && cc -g -O1 -no-pie -fno-pie -o prog lib.c", dir) < 0) {
		run("rm -rf %s", dir);
		skip();
	}
	uint64_t off;
	assert_int_equal(symbol_file_offset(prog, prog, "hidden_helper", &off), 0);
	assert_true(off < 0x400000); /* really an offset, not the address */
	struct symbolizer *s = symbolizer_new(NULL);
	expect_helper(s, prog, off, "non-PIE");
	expect_helper(s, prog, off + 1, "non-PIE");
	struct sym_info si;
	assert_int_equal(symbol_file_offset(prog, prog, "main", &off), 0);
	symbolizer_resolve_file(s, prog, off, 0, &si);
	assert_string_equal(si.function, "main");
	assert_true(si.line >= 10 && si.line <= 12); /* main spans lines 10-13 */
	symbolizer_free(s);
	run("rm -rf %s", dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_offset_to_vaddr),
	        cmocka_unit_test(test_perfmap_good),
	        cmocka_unit_test(test_perfmap_malformed),
	        cmocka_unit_test(test_perfmap_long_name),
	        cmocka_unit_test(test_demangle),
	        cmocka_unit_test(test_resolve_own_function),
	        cmocka_unit_test(test_resolve_libc),
	        cmocka_unit_test(test_reopen_after_eviction),
	        cmocka_unit_test(test_resolve_unknown),
	        cmocka_unit_test(test_resolve_jit),
	        cmocka_unit_test(test_resolve_vdso),
	        cmocka_unit_test(test_separate_debuginfo),
	        cmocka_unit_test(test_non_pie_executable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
