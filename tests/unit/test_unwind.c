/* The DWARF unwinder on real stacks: this test snapshots its own registers and stack inside a
 * chain of functions built without frame pointers, unwinds the copy against its own mappings
 * and checks every return address; then copies cut short, missing registers, missing maps,
 * garbage stacks, the session cache, perf's register layout, the merge with frame-pointer
 * chains and the truncated-stack check; and unwinder_fix_leaf on two assembly leaves with CFI
 * (frameless, and one that reuses %rbp) called from a frame-pointer function. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/profile.h"
#include "runner/sample/unwind.h"

#define MAX_COPY 32768

struct snapshot {
	struct unwind_regs regs;
	unsigned char stack[MAX_COPY];
	uint64_t sp;
	size_t len;
};

static struct snapshot snap;
/* Return addresses seen by each level: into chain_c, chain_b, chain_a and the test. */
static uint64_t ret_into_c, ret_into_b, ret_into_a, ret_into_test;
static volatile uint64_t sink;

/* The executable mappings of this process, as a sampler would know them. */
static struct unwind_map *maps;
static size_t nmaps;
static uint64_t stack_end; /* end of the mapping holding the stack */

static void load_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	char line[4352];
	uint64_t here = (uint64_t)(uintptr_t)&line;
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end, pgoff;
		char perms[8];
		int at = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s%n", &start, &end,
		           perms, &pgoff, &at) != 4)
			continue;
		if (here >= start && here < end)
			stack_end = end;
		if (perms[2] != 'x')
			continue;
		char *name = line + at;
		while (*name == ' ')
			name++;
		name[strcspn(name, "\n")] = '\0';
		maps = realloc(maps, (nmaps + 1) * sizeof(*maps));
		maps[nmaps++] = (struct unwind_map){start, end, pgoff, strdup(name)};
	}
	fclose(f);
	assert_true(nmaps > 0);
	assert_true(stack_end > 0);
}

static void free_maps(void)
{
	for (size_t i = 0; i < nmaps; i++)
		free((char *)maps[i].path);
	free(maps);
	maps = NULL;
	nmaps = 0;
}

/* Stores the registers as they are at the asm statement, with that statement's own address
 * as the pc, then copies the stack from the stored SP upward: raw memory across frames, which
 * AddressSanitizer's redzones would flag, hence the plain uninstrumented loop. */
__attribute__((noinline, noipa, no_sanitize_address)) static void take_snapshot(void)
{
	uint64_t r[9];
	__asm__ volatile("leaq 0(%%rip), %%rax\n\t"
	                 "movq %%rax, 0(%0)\n\t"
	                 "movq %%rsp, 8(%0)\n\t"
	                 "movq %%rbp, 16(%0)\n\t"
	                 "movq %%rbx, 24(%0)\n\t"
	                 "movq %%r12, 32(%0)\n\t"
	                 "movq %%r13, 40(%0)\n\t"
	                 "movq %%r14, 48(%0)\n\t"
	                 "movq %%r15, 56(%0)\n\t"
	                 :
	                 : "r"(r)
	                 : "rax", "memory");
	ret_into_c = (uint64_t)(uintptr_t)__builtin_return_address(0);
	memset(&snap.regs, 0, sizeof(snap.regs));
	snap.regs.r[UNWIND_RIP] = r[0];
	snap.regs.r[UNWIND_RSP] = r[1];
	snap.regs.r[UNWIND_RBP] = r[2];
	snap.regs.r[UNWIND_RBX] = r[3];
	snap.regs.r[UNWIND_R12] = r[4];
	snap.regs.r[UNWIND_R13] = r[5];
	snap.regs.r[UNWIND_R14] = r[6];
	snap.regs.r[UNWIND_R15] = r[7];
	snap.regs.valid = 1u << UNWIND_RIP | 1u << UNWIND_RSP | 1u << UNWIND_RBP |
	                  1u << UNWIND_RBX | 1u << UNWIND_R12 | 1u << UNWIND_R13 |
	                  1u << UNWIND_R14 | 1u << UNWIND_R15;
	snap.sp = r[1];
	snap.len = stack_end - snap.sp < MAX_COPY ? (size_t)(stack_end - snap.sp) : MAX_COPY;
	const volatile unsigned char *from = (const volatile unsigned char *)(uintptr_t)snap.sp;
	for (size_t i = 0; i < snap.len; i++)
		snap.stack[i] = from[i];
}

/* A chain without frame pointers, each level with a frame of its own and work after its call
 * (no tail calls). */
#define NOFP __attribute__((noinline, noipa, optimize("omit-frame-pointer")))

NOFP static void chain_c(int k)
{
	volatile char pad[160];
	pad[k] = (char)k;
	ret_into_b = (uint64_t)(uintptr_t)__builtin_return_address(0);
	take_snapshot();
	sink += (uint64_t)pad[k];
}

NOFP static void chain_b(int k)
{
	volatile char pad[96];
	pad[k] = (char)k;
	ret_into_a = (uint64_t)(uintptr_t)__builtin_return_address(0);
	chain_c(k + 1);
	sink += (uint64_t)pad[k];
}

NOFP static void chain_a(int k)
{
	volatile char pad[32];
	pad[k] = (char)k;
	ret_into_test = (uint64_t)(uintptr_t)__builtin_return_address(0);
	chain_b(k + 1);
	sink += (uint64_t)pad[k];
}

static int setup(void **state)
{
	(void)state;
	load_maps();
	chain_a(1);
	sink += 1; /* keeps the call above from being a tail call */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free_maps();
	return 0;
}

static void test_own_stack(void **state)
{
	(void)state;
	struct unwinder *u = unwinder_new(NULL);
	uint64_t ips[64];
	enum unwind_end end;
	size_t n = unwinder_unwind(u, maps, nmaps, &snap.regs, snap.stack, snap.sp, snap.len, ips,
	                           64, &end);
	assert_true(n >= 6);
	assert_int_equal(ips[0], snap.regs.r[UNWIND_RIP]);
	assert_int_equal(ips[1], ret_into_c);
	assert_int_equal(ips[2], ret_into_b);
	assert_int_equal(ips[3], ret_into_a);
	assert_int_equal(ips[4], ret_into_test);
	/* The copy reached the top of the stack, so the unwind ends at _start's outermost CFI. */
	if (snap.len < MAX_COPY)
		assert_int_equal(end, UNWIND_END_OUTERMOST);
	else
		assert_true(end == UNWIND_END_OUTERMOST || end == UNWIND_END_STACK);
	const struct unwinder_stats *st = unwinder_stats(u);
	assert_int_equal(st->unwinds, 1);
	assert_int_equal(st->spaces_created, 1);
	assert_true(st->modules_reported >= 2); /* this test and libc at least */
	unwinder_free(u);
}

static void test_short_copy(void **state)
{
	(void)state;
	struct unwinder *u = unwinder_new(NULL);
	uint64_t full[64], ips[64];
	size_t nfull = unwinder_unwind(u, maps, nmaps, &snap.regs, snap.stack, snap.sp, snap.len,
	                               full, 64, NULL);
	/* 16 bytes hold no caller's frame here: the first read past them ends the unwind. */
	enum unwind_end end;
	size_t n =
	        unwinder_unwind(u, maps, nmaps, &snap.regs, snap.stack, snap.sp, 16, ips, 64, &end);
	assert_true(n >= 1 && n < nfull);
	assert_int_equal(end, UNWIND_END_STACK);
	assert_memory_equal(ips, full, n * sizeof(*ips));
	/* No stack at all: the pc alone, and still "beyond the copy". */
	n = unwinder_unwind(u, maps, nmaps, &snap.regs, NULL, snap.sp, 0, ips, 64, &end);
	assert_int_equal(n, 1);
	assert_int_equal(ips[0], snap.regs.r[UNWIND_RIP]);
	assert_int_equal(end, UNWIND_END_STACK);
	/* max frames */
	n = unwinder_unwind(u, maps, nmaps, &snap.regs, snap.stack, snap.sp, snap.len, ips, 3,
	                    &end);
	assert_int_equal(n, 3);
	assert_int_equal(end, UNWIND_END_MAX);
	assert_memory_equal(ips, full, 3 * sizeof(*ips));
	assert_int_equal(unwinder_unwind(u, maps, nmaps, &snap.regs, snap.stack, snap.sp, snap.len,
	                                 ips, 0, &end),
	                 0);
	unwinder_free(u);
}

static void test_missing_registers_and_maps(void **state)
{
	(void)state;
	struct unwinder *u = unwinder_new(NULL);
	uint64_t ips[64];
	enum unwind_end end;
	struct unwind_regs r = snap.regs;
	r.valid &= ~(1u << UNWIND_RSP);
	size_t n =
	        unwinder_unwind(u, maps, nmaps, &r, snap.stack, snap.sp, snap.len, ips, 64, &end);
	assert_true(n >= 1);
	assert_int_equal(ips[0], snap.regs.r[UNWIND_RIP]);
	r.valid = 0; /* no pc: nothing to say */
	assert_int_equal(
	        unwinder_unwind(u, maps, nmaps, &r, snap.stack, snap.sp, snap.len, ips, 64, &end),
	        0);
	/* No mapping known: the pc alone. */
	n = unwinder_unwind(u, NULL, 0, &snap.regs, snap.stack, snap.sp, snap.len, ips, 64, &end);
	assert_int_equal(n, 1);
	assert_int_equal(end, UNWIND_END_NO_SPACE);
	/* Mappings of files that are gone or not ELF are skipped, not fatal. */
	struct unwind_map bogus[] = {
	        {0x1000, 0x2000, 0, "/nonexistent/lib.so"},
	        {0x3000, 0x4000, 0, "/etc/hostname"},
	        {0x5000, 0x6000, 0, "//anon"},
	};
	n = unwinder_unwind(u, bogus, 3, &snap.regs, snap.stack, snap.sp, snap.len, ips, 64, &end);
	assert_int_equal(n, 1);
	assert_int_equal(end, UNWIND_END_NO_SPACE);
	unwinder_free(u);
}

static void test_garbage_stack(void **state)
{
	(void)state;
	struct unwinder *u = unwinder_new(NULL);
	static unsigned char junk[4096];
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	for (size_t i = 0; i < sizeof(junk); i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		junk[i] = (unsigned char)x;
	}
	/* Plant return addresses into this very test among the junk: plausible, wrong frames. */
	for (size_t i = 64; i + 8 <= sizeof(junk); i += 256)
		memcpy(junk + i, &ret_into_c, 8);
	uint64_t ips[256];
	for (int round = 0; round < 50; round++) {
		struct unwind_regs r = snap.regs;
		r.r[UNWIND_RBP] = snap.sp + (uint64_t)round * 40;
		r.r[UNWIND_RSP] = snap.sp + (uint64_t)round * 8;
		size_t n = unwinder_unwind(u, maps, nmaps, &r, junk, snap.sp, sizeof(junk), ips,
		                           256, NULL);
		assert_true(n >= 1 && n <= 256);
	}
	unwinder_free(u);
}

static void test_space_cache(void **state)
{
	(void)state;
	struct unwinder *u = unwinder_new(NULL);
	uint64_t ips[64];
	unwinder_unwind(u, maps, nmaps, &snap.regs, snap.stack, snap.sp, snap.len, ips, 64, NULL);
	unwinder_unwind(u, maps, nmaps, &snap.regs, snap.stack, snap.sp, snap.len, ips, 64, NULL);
	assert_int_equal(unwinder_stats(u)->spaces_created, 1);
	/* Anonymous memory has no CFI: adding it is the same space. */
	struct unwind_map *more = calloc(nmaps + 1, sizeof(*more));
	memcpy(more, maps, nmaps * sizeof(*maps));
	more[nmaps] = (struct unwind_map){0x10000, 0x20000, 0, "//anon"};
	unwinder_unwind(u, more, nmaps + 1, &snap.regs, snap.stack, snap.sp, snap.len, ips, 64,
	                NULL);
	assert_int_equal(unwinder_stats(u)->spaces_created, 1);
	/* A new file mapping (dlopen, exec) is a new space; the old one stays cached. */
	more[nmaps] = (struct unwind_map){0x10000, 0x20000, 0, maps[0].path};
	unwinder_unwind(u, more, nmaps + 1, &snap.regs, snap.stack, snap.sp, snap.len, ips, 64,
	                NULL);
	assert_int_equal(unwinder_stats(u)->spaces_created, 2);
	unwinder_unwind(u, maps, nmaps, &snap.regs, snap.stack, snap.sp, snap.len, ips, 64, NULL);
	assert_int_equal(unwinder_stats(u)->spaces_created, 2);
	/* Beyond the bound the least recently used space is closed and made again on demand. */
	unwinder_set_max_spaces(u, 1);
	unwinder_unwind(u, more, nmaps + 1, &snap.regs, snap.stack, snap.sp, snap.len, ips, 64,
	                NULL);
	size_t n = unwinder_unwind(u, maps, nmaps, &snap.regs, snap.stack, snap.sp, snap.len, ips,
	                           64, NULL);
	assert_true(n >= 6);
	assert_int_equal(ips[3], ret_into_a);
	/* Lowering the bound closed one; each call then replaced the other. */
	assert_int_equal(unwinder_stats(u)->spaces_created, 4);
	assert_int_equal(unwinder_stats(u)->spaces_evicted, 3);
	free(more);
	unwinder_free(u);
}

static void test_regs_from_perf(void **state)
{
	(void)state;
	/* perf order: AX BX CX DX SI DI BP SP IP, then R8..R15 (bits 16..23). */
	uint64_t v[17];
	for (int i = 0; i < 17; i++)
		v[i] = 100 + (uint64_t)i;
	struct unwind_regs r;
	unwind_regs_from_perf(&r, UNWIND_PERF_REGS_MASK, v, 17);
	assert_int_equal(r.valid, (1u << UNWIND_NREGS) - 1);
	assert_int_equal(r.r[UNWIND_RAX], 100);
	assert_int_equal(r.r[UNWIND_RBX], 101);
	assert_int_equal(r.r[UNWIND_RCX], 102);
	assert_int_equal(r.r[UNWIND_RDX], 103);
	assert_int_equal(r.r[UNWIND_RBP], 106);
	assert_int_equal(r.r[UNWIND_RSP], 107);
	assert_int_equal(r.r[UNWIND_RIP], 108);
	assert_int_equal(r.r[UNWIND_R8], 109);
	assert_int_equal(r.r[UNWIND_R15], 116);
	/* A smaller mask: IP and SP only, in bit order SP (7) then IP (8). */
	uint64_t two[2] = {0x7ffd0000, 0x401000};
	unwind_regs_from_perf(&r, 1ULL << 7 | 1ULL << 8, two, 2);
	assert_int_equal(r.valid, 1u << UNWIND_RSP | 1u << UNWIND_RIP);
	assert_int_equal(r.r[UNWIND_RSP], 0x7ffd0000);
	assert_int_equal(r.r[UNWIND_RIP], 0x401000);
	/* Fewer values than bits: the missing ones stay unknown. */
	unwind_regs_from_perf(&r, UNWIND_PERF_REGS_MASK, v, 8);
	assert_true(r.valid & (1u << UNWIND_RSP));
	assert_false(r.valid & (1u << UNWIND_RIP));
	assert_false(r.valid & (1u << UNWIND_R8));
	/* FLAGS and segment registers are not DWARF-unwinding registers. */
	unwind_regs_from_perf(&r, 1ULL << 9 | 1ULL << 10, v, 2);
	assert_int_equal(r.valid, 0);
}

static void test_merge_fp(void **state)
{
	(void)state;
	uint64_t out[16];
	int used;
	/* DWARF complete, fp chain short: DWARF. */
	uint64_t d1[] = {1, 2, 3, 4, 5}, f1[] = {1, 9};
	assert_int_equal(unwind_merge_fp(d1, 5, f1, 2, out, 16, &used), 5);
	assert_false(used);
	assert_memory_equal(out, d1, sizeof(d1));
	/* DWARF stopped at 3, which the fp chain holds: continue with the chain past it. */
	uint64_t d2[] = {1, 2, 3}, f2[] = {1, 3, 7, 8};
	assert_int_equal(unwind_merge_fp(d2, 3, f2, 4, out, 16, &used), 5);
	assert_true(used);
	uint64_t want2[] = {1, 2, 3, 7, 8};
	assert_memory_equal(out, want2, sizeof(want2));
	/* DWARF got only the pc (JIT code), the chain is longer: the chain. */
	uint64_t d3[] = {1}, f3[] = {1, 5, 6};
	assert_int_equal(unwind_merge_fp(d3, 1, f3, 3, out, 16, &used), 3);
	assert_true(used);
	assert_memory_equal(out, f3, sizeof(f3));
	/* A longer chain that disagrees on the first caller is garbage (code without frame
	 * pointers): DWARF. */
	uint64_t f5[] = {1, 9, 8, 7, 6, 5};
	assert_int_equal(unwind_merge_fp(d2, 3, f5, 6, out, 16, &used), 3);
	assert_false(used);
	assert_memory_equal(out, d2, sizeof(d2));
	/* A longer chain agreeing on the first caller: the chain. */
	uint64_t f6[] = {1, 2, 8, 7, 6};
	assert_int_equal(unwind_merge_fp(d2, 3, f6, 5, out, 16, &used), 5);
	assert_true(used);
	assert_memory_equal(out, f6, sizeof(f6));
	/* Equal lengths: DWARF. */
	uint64_t f4[] = {1, 8, 9, 10, 11};
	assert_int_equal(unwind_merge_fp(d1, 5, f4, 5, out, 16, &used), 5);
	assert_false(used);
	assert_memory_equal(out, d1, sizeof(d1));
	/* max bounds the splice. */
	assert_int_equal(unwind_merge_fp(d2, 3, f2, 4, out, 4, &used), 4);
	assert_int_equal(out[3], 7);
	/* Nothing at all. */
	assert_int_equal(unwind_merge_fp(NULL, 0, NULL, 0, out, 16, &used), 0);
}

static void test_entry_points(void **state)
{
	(void)state;
	assert_true(unwind_is_entry_point("_start"));
	assert_true(unwind_is_entry_point("__libc_start_call_main"));
	assert_true(unwind_is_entry_point("start_thread"));
	assert_true(unwind_is_entry_point("clone3"));
	assert_true(unwind_is_entry_point("runtime.goexit.abi0"));
	assert_true(unwind_is_entry_point("__libc_start_main@@GLIBC_2.34"));
	assert_false(unwind_is_entry_point("_start_main@@GLIBC_2.34"));
	assert_false(unwind_is_entry_point("main"));
	assert_false(unwind_is_entry_point("_start_x"));
	assert_false(unwind_is_entry_point(""));
	/* a thread's start, not a process's nor Go's runtime threads' */
	assert_true(unwind_is_thread_start("start_thread"));
	assert_true(unwind_is_thread_start("clone3@GLIBC_PRIVATE"));
	assert_false(unwind_is_thread_start("__libc_start_call_main"));
	assert_false(unwind_is_thread_start("runtime.mstart"));
	assert_false(unwind_is_thread_start("start_thread_x"));
	/* libc's start frames, where a frame-pointer walk must stop (static executables). */
	assert_true(unwind_is_libc_start("_start"));
	assert_true(unwind_is_libc_start("__libc_start_call_main"));
	assert_true(unwind_is_libc_start("__libc_start_main"));
	assert_true(unwind_is_libc_start("__libc_start_main_impl"));
	assert_true(unwind_is_libc_start("__libc_start_main@@GLIBC_2.34"));
	assert_false(unwind_is_libc_start("start_thread"));
	assert_false(unwind_is_libc_start("register_tm_clones"));
	assert_false(unwind_is_libc_start("_start_x"));
	assert_false(unwind_is_libc_start("main"));
}

/* Adds count samples of a stack given root-first as "function@module" strings. */
static void add_stack(struct profile *p, const char *process, const char *const *frames, size_t n,
                      uint64_t count)
{
	struct profile_frame pf = {0};
	pf.function = profile_intern(p, process);
	pf.kind = PROFILE_FRAME_PROCESS;
	uint32_t node = profile_node(p, 0, profile_frame(p, &pf));
	for (size_t i = 0; i < n; i++) {
		const char *at = strchr(frames[i], '@');
		struct profile_frame f = {0};
		f.function = profile_intern_len(p, frames[i], (size_t)(at - frames[i]));
		f.module = profile_intern(p, at + 1);
		node = profile_node(p, node, profile_frame(p, &f));
	}
	profile_add(p, 0, node, count);
}

static void test_truncation(void **state)
{
	(void)state;
	struct profile *p = profile_new();
	const char *complete[] = {"_start@prog", "__libc_start_main@libc.so.6", "main@prog",
	                          "work@prog"};
	const char *via_libc[] = {"libc.so.6+0x271ca@libc.so.6", "main@prog", "work@prog"};
	const char *thread[] = {"clone3@libc.so.6", "start_thread@libc.so.6", "fn@prog"};
	const char *cut[] = {"work@prog"};
	const char *cut_lib[] = {"PyEval_EvalFrameDefault@libpython3.11.so.1.0",
	                         "PyObject_Call@libpython3.11.so.1.0"};
	const char *stripped[] = {"prog+0x1650@prog", "prog+0x14f9@prog"};
	add_stack(p, "prog", complete, 4, 10);
	add_stack(p, "prog", via_libc, 3, 5);
	add_stack(p, "prog", thread, 3, 5);
	add_stack(p, "prog", cut, 1, 30);
	add_stack(p, "python3", cut_lib, 2, 50);
	add_stack(p, "prog", NULL, 0, 7); /* the process frame alone: not counted */
	add_stack(p, "prog", stripped, 2, 10);
	struct unwind_truncation t;
	unwind_truncation(p, &t);
	assert_int_equal(t.samples, 110);
	assert_int_equal(t.truncated, 90);
	assert_int_equal(t.unnamed, 10); /* a stripped object's unnamed outermost frame */
	assert_string_equal(t.where, "libpython3.11.so.1.0, prog");
	profile_free(p);

	p = profile_new();
	unwind_truncation(p, &t);
	assert_int_equal(t.samples, 0);
	assert_int_equal(t.truncated, 0);
	assert_string_equal(t.where, "");
	profile_free(p);
}

/* ---- unwinder_fix_leaf: a frame-pointer chain whose leaf has no frame ---- */

/* Two leaves in assembly, with their CFI: each stores its pc, %rsp and %rbp at the store into
 * r[0..2]. leafsnap_frameless has no frame at all (CFA = %rsp + 8: a GCC 12 leaf, or any
 * function at its first instruction); leafsnap_clobber saves %rbp and puts its own value in
 * it (CFA = %rsp + 16, %rbp at CFA - 16: code without frame pointers). */
void leafsnap_frameless(uint64_t *r);
void leafsnap_clobber(uint64_t *r);
__asm__(".text\n"
        ".type leafsnap_frameless, @function\n"
        "leafsnap_frameless:\n"
        ".cfi_startproc\n"
        "	leaq 0(%rip), %rax\n"
        "	movq %rax, 0(%rdi)\n"
        "	movq %rsp, 8(%rdi)\n"
        "	movq %rbp, 16(%rdi)\n"
        "	ret\n"
        ".cfi_endproc\n"
        ".size leafsnap_frameless, .-leafsnap_frameless\n"
        ".type leafsnap_clobber, @function\n"
        "leafsnap_clobber:\n"
        ".cfi_startproc\n"
        "	pushq %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "	movq $0x5a5a5a5a, %rbp\n"
        "	leaq 0(%rip), %rax\n"
        "	movq %rax, 0(%rdi)\n"
        "	movq %rsp, 8(%rdi)\n"
        "	movq %rbp, 16(%rdi)\n"
        "	popq %rbp\n"
        ".cfi_def_cfa_offset 8\n"
        "	ret\n"
        ".cfi_endproc\n"
        ".size leafsnap_clobber, .-leafsnap_clobber\n");

#define LEAF_COPY 512
static unsigned char leaf_copy[LEAF_COPY];
static uint64_t leaf_r[3];
static uint64_t ret_from_leaf_caller; /* where leaf_caller returns to: its caller's frame */

/* Calls a leaf with a frame pointer of its own, then copies the stack from the leaf's %rsp
 * upward before any other call can overwrite it (an inline loop: no call, no red zone in a
 * function that calls). */
__attribute__((noinline, noipa, no_sanitize_address, optimize("no-omit-frame-pointer"))) static void
leaf_caller(int clobber)
{
	if (clobber)
		leafsnap_clobber(leaf_r);
	else
		leafsnap_frameless(leaf_r);
	const volatile unsigned char *from = (const volatile unsigned char *)(uintptr_t)leaf_r[1];
	for (size_t i = 0; i < LEAF_COPY; i++)
		leaf_copy[i] = from[i];
	ret_from_leaf_caller = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

/* The kernel's walk from the leaf's %rbp, as far as the copy holds frames. */
static size_t kernel_walk(uint64_t pc, uint64_t rbp, uint64_t sp, uint64_t *fp, size_t max)
{
	size_t n = 0;
	fp[n++] = pc;
	while (n < max && rbp >= sp && rbp + 16 <= sp + LEAF_COPY) {
		uint64_t next, ret;
		memcpy(&next, leaf_copy + (rbp - sp), 8);
		memcpy(&ret, leaf_copy + (rbp - sp) + 8, 8);
		fp[n++] = ret;
		if (next <= rbp)
			break;
		rbp = next;
	}
	return n;
}

static const struct unwind_map *map_of(uint64_t pc)
{
	for (size_t i = 0; i < nmaps; i++)
		if (pc >= maps[i].start && pc < maps[i].end)
			return &maps[i];
	return NULL;
}

static void test_fix_leaf(void **state)
{
	(void)state;
	struct unwinder *u = unwinder_new(NULL);
	uint64_t caller_lo = (uint64_t)(uintptr_t)leaf_caller;
	for (int clobber = 0; clobber <= 1; clobber++) {
		leaf_caller(clobber);
		struct unwind_regs regs = {0};
		regs.r[UNWIND_RIP] = leaf_r[0];
		regs.r[UNWIND_RSP] = leaf_r[1];
		regs.r[UNWIND_RBP] = leaf_r[2];
		regs.valid = 1u << UNWIND_RIP | 1u << UNWIND_RSP | 1u << UNWIND_RBP;
		uint64_t fp[16], out[16];
		size_t nfp = clobber ? 2 : kernel_walk(leaf_r[0], leaf_r[2], leaf_r[1], fp, 16);
		if (clobber)
			fp[1] = 0x1234; /* what a walk from %rbp = 0x5a5a5a5a finds: garbage */
		/* Frameless: the kernel's chain goes straight to leaf_caller's caller. */
		if (!clobber) {
			assert_true(nfp >= 2);
			assert_int_equal(fp[1], ret_from_leaf_caller);
		}
		enum leaf_fix how;
		size_t n = unwinder_fix_leaf(u, map_of(leaf_r[0]), &regs, leaf_copy, leaf_r[1],
		                             LEAF_COPY, fp, nfp, out, 16, &how);
		assert_int_equal(how, clobber ? LEAF_FIX_REBUILT : LEAF_FIX_INSERTED);
		assert_true(n >= 3);
		assert_int_equal(out[0], leaf_r[0]);
		/* The caller is back: a return address inside leaf_caller... */
		assert_true(out[1] > caller_lo && out[1] < caller_lo + 512);
		/* ... and the chain goes on to leaf_caller's caller. */
		assert_int_equal(out[2], ret_from_leaf_caller);

		/* A copy too short for the return address: the chain as it was. */
		n = unwinder_fix_leaf(u, map_of(leaf_r[0]), &regs, leaf_copy, leaf_r[1],
		                      8 * clobber, fp, nfp, out, 16, &how);
		assert_int_equal(how, LEAF_FIX_OUT_OF_COPY);
		assert_int_equal(n, nfp);
		assert_memory_equal(out, fp, nfp * sizeof(*fp));
	}
	/* No mapping: nothing to read CFI from. */
	struct unwind_regs regs = {.valid = 1u << UNWIND_RIP | 1u << UNWIND_RSP};
	uint64_t fp[2] = {0x1000, 0x2000}, out[4];
	enum leaf_fix how;
	assert_int_equal(
	        unwinder_fix_leaf(u, NULL, &regs, leaf_copy, 0, LEAF_COPY, fp, 2, out, 4, &how), 2);
	assert_int_equal(how, LEAF_FIX_NO_CFI);
	const struct unwinder_stats *st = unwinder_stats(u);
	assert_int_equal(st->leaf[LEAF_FIX_INSERTED], 1);
	assert_int_equal(st->leaf[LEAF_FIX_REBUILT], 1);
	assert_int_equal(st->leaf[LEAF_FIX_OUT_OF_COPY], 2);
	unwinder_free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_own_stack),
	        cmocka_unit_test(test_short_copy),
	        cmocka_unit_test(test_missing_registers_and_maps),
	        cmocka_unit_test(test_garbage_stack),
	        cmocka_unit_test(test_space_cache),
	        cmocka_unit_test(test_regs_from_perf),
	        cmocka_unit_test(test_merge_fp),
	        cmocka_unit_test(test_entry_points),
	        cmocka_unit_test(test_truncation),
	        cmocka_unit_test(test_fix_leaf),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
