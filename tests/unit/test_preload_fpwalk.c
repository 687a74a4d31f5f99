/* The LD_PRELOAD sampler's frame-pointer walk (runner/preload/fpwalk.h), run in-process on
 * crafted stacks: it must follow good chains, stop at every kind of bad frame, and never
 * read outside [sp, stack top) (the crafted stacks sit between inaccessible guard pages). */
#include "runner/preload/fpwalk.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

/* A crafted stack: words[0..n) readable, surrounded by PROT_NONE pages. */
struct stack {
	unsigned char *map;
	size_t map_len;
	uint64_t *words;
	size_t n;
	uint64_t lo, hi;
};

static void stack_new(struct stack *s, size_t nwords)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = (nwords * 8 + page - 1) / page * page;
	s->map_len = bytes + 2 * page;
	s->map = mmap(NULL, s->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(s->map != MAP_FAILED);
	assert_int_equal(mprotect(s->map + page, bytes, PROT_READ | PROT_WRITE), 0);
	/* Words end exactly at the upper guard page, so an off-by-one read would fault. */
	s->n = bytes / 8;
	s->words = (uint64_t *)(s->map + page);
	s->lo = (uint64_t)(uintptr_t)s->words;
	s->hi = s->lo + bytes;
}

static void stack_free(struct stack *s)
{
	munmap(s->map, s->map_len);
}

static uint64_t addr(const struct stack *s, size_t word)
{
	return s->lo + 8 * word;
}

/* Lays out frames at the given word indexes (ascending): each holds the next frame's address
 * (0 for the last) and a return address 0x1000 * (i + 1). */
static void chain(struct stack *s, const size_t *at, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		s->words[at[i]] = i + 1 < n ? addr(s, at[i + 1]) : 0;
		s->words[at[i] + 1] = 0x1000 * (i + 1);
	}
}

static void test_good_chain(void **state)
{
	(void)state;
	struct stack s;
	stack_new(&s, 512);
	size_t at[] = {10, 40, 100, 300};
	chain(&s, at, 4);
	uint64_t ips[16] = {0};
	uint32_t n = pl_fp_walk(0xabc, addr(&s, 10), addr(&s, 4), s.lo, s.hi, ips, 16);
	assert_int_equal(n, 5);
	assert_int_equal(ips[0], 0xabc);
	for (int i = 1; i < 5; i++)
		assert_int_equal(ips[i], 0x1000 * i);
	stack_free(&s);
}

static void test_leaf_only_off_stack(void **state)
{
	(void)state;
	struct stack s;
	stack_new(&s, 512);
	size_t at[] = {10, 40};
	chain(&s, at, 2);
	uint64_t ips[16] = {0};
	/* sp below or above the thread's stack: another stack (sigaltstack, coroutine). */
	assert_int_equal(pl_fp_walk(0xabc, addr(&s, 10), s.lo - 64, s.lo, s.hi, ips, 16), 1);
	assert_int_equal(pl_fp_walk(0xabc, addr(&s, 10), s.hi, s.lo, s.hi, ips, 16), 1);
	/* empty or absurd bounds */
	assert_int_equal(pl_fp_walk(0xabc, addr(&s, 10), addr(&s, 4), 0, 0, ips, 16), 1);
	assert_int_equal(pl_fp_walk(0xabc, addr(&s, 10), addr(&s, 4), s.hi, s.lo, ips, 16), 1);
	assert_int_equal(ips[0], 0xabc);
	assert_int_equal(pl_fp_walk(0xabc, addr(&s, 10), addr(&s, 4), s.lo, s.hi, ips, 0), 0);
	stack_free(&s);
}

static void test_fp_below_sp(void **state)
{
	(void)state;
	struct stack s;
	stack_new(&s, 512);
	size_t at[] = {10, 40};
	chain(&s, at, 2);
	uint64_t ips[16] = {0};
	/* The frame pointer lies below the stack pointer: stale, not followed. */
	assert_int_equal(pl_fp_walk(0xabc, addr(&s, 10), addr(&s, 20), s.lo, s.hi, ips, 16), 1);
	stack_free(&s);
}

static void test_misaligned(void **state)
{
	(void)state;
	struct stack s;
	stack_new(&s, 512);
	size_t at[] = {10, 40, 80};
	chain(&s, at, 3);
	s.words[40] = addr(&s, 80) + 4; /* second frame points to a misaligned third */
	uint64_t ips[16] = {0};
	uint32_t n = pl_fp_walk(0xabc, addr(&s, 10), addr(&s, 4), s.lo, s.hi, ips, 16);
	assert_int_equal(n, 3);
	assert_int_equal(pl_fp_walk(0xabc, addr(&s, 10) + 1, addr(&s, 4), s.lo, s.hi, ips, 16), 1);
	stack_free(&s);
}

static void test_top_of_stack(void **state)
{
	(void)state;
	struct stack s;
	stack_new(&s, 512);
	uint64_t ips[16] = {0};
	/* A frame in the last word: reading its return address would cross into the guard. */
	s.words[s.n - 1] = 0;
	assert_int_equal(pl_fp_walk(0xabc, s.hi - 8, addr(&s, 4), s.lo, s.hi, ips, 16), 1);
	/* The last two words are a valid frame. */
	s.words[s.n - 2] = 0;
	s.words[s.n - 1] = 0x5000;
	assert_int_equal(pl_fp_walk(0xabc, s.hi - 16, addr(&s, 4), s.lo, s.hi, ips, 16), 2);
	assert_int_equal(ips[1], 0x5000);
	/* A saved frame pointer beyond the top ends the walk without reading it. */
	s.words[10] = s.hi + 4096;
	s.words[11] = 0x6000;
	assert_int_equal(pl_fp_walk(0xabc, addr(&s, 10), addr(&s, 4), s.lo, s.hi, ips, 16), 2);
	stack_free(&s);
}

static void test_cycles_and_descent(void **state)
{
	(void)state;
	struct stack s;
	stack_new(&s, 512);
	uint64_t ips[16] = {0};
	/* A frame pointing to itself. */
	s.words[10] = addr(&s, 10);
	s.words[11] = 0x7000;
	assert_int_equal(pl_fp_walk(0xabc, addr(&s, 10), addr(&s, 4), s.lo, s.hi, ips, 16), 2);
	/* Two frames pointing to each other. */
	s.words[10] = addr(&s, 40);
	s.words[40] = addr(&s, 10);
	s.words[41] = 0x8000;
	assert_int_equal(pl_fp_walk(0xabc, addr(&s, 10), addr(&s, 4), s.lo, s.hi, ips, 16), 3);
	/* A frame overlapping the previous one (less than 16 bytes above it). */
	s.words[10] = addr(&s, 11);
	assert_int_equal(pl_fp_walk(0xabc, addr(&s, 10), addr(&s, 4), s.lo, s.hi, ips, 16), 2);
	stack_free(&s);
}

static void test_small_return_address(void **state)
{
	(void)state;
	struct stack s;
	stack_new(&s, 512);
	size_t at[] = {10, 40, 80};
	chain(&s, at, 3);
	s.words[41] = 0; /* the outermost frame's return address */
	uint64_t ips[16] = {0};
	assert_int_equal(pl_fp_walk(0xabc, addr(&s, 10), addr(&s, 4), s.lo, s.hi, ips, 16), 2);
	s.words[41] = 4095;
	assert_int_equal(pl_fp_walk(0xabc, addr(&s, 10), addr(&s, 4), s.lo, s.hi, ips, 16), 2);
	stack_free(&s);
}

static void test_max_depth(void **state)
{
	(void)state;
	struct stack s;
	stack_new(&s, 4096);
	size_t at[1000];
	for (size_t i = 0; i < 1000; i++)
		at[i] = 8 + 4 * i;
	chain(&s, at, 1000);
	uint64_t ips[128] = {0};
	assert_int_equal(pl_fp_walk(0xabc, addr(&s, 8), addr(&s, 2), s.lo, s.hi, ips, 128), 128);
	assert_int_equal(ips[127], 0x1000 * 127);
	stack_free(&s);
}

/* ---- on the real stack of this thread ---- */

static uint64_t expect_ra[3];
static uint64_t walked[8];
static uint32_t nwalked;

__attribute__((noinline, noipa)) static void level3(void)
{
	expect_ra[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	pthread_attr_t attr;
	void *stack_addr;
	size_t size;
	assert_int_equal(pthread_getattr_np(pthread_self(), &attr), 0);
	assert_int_equal(pthread_attr_getstack(&attr, &stack_addr, &size), 0);
	pthread_attr_destroy(&attr);
	volatile int here = 0;
	uint64_t sp = (uint64_t)(uintptr_t)&here;
	uint64_t lo = (uint64_t)(uintptr_t)stack_addr;
	nwalked = pl_fp_walk(0x1234, (uint64_t)(uintptr_t)__builtin_frame_address(0), sp, lo,
	                     lo + size, walked, 8);
}

__attribute__((noinline, noipa)) static void level2(void)
{
	expect_ra[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	level3();
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline, noipa)) static void level1(void)
{
	expect_ra[0] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	level2();
	__asm__ volatile("" ::: "memory");
}

static void test_real_stack(void **state)
{
	(void)state;
	level1();
	assert_true(nwalked >= 4);
	assert_int_equal(walked[0], 0x1234);
	assert_int_equal(walked[1], expect_ra[2]); /* into level2 */
	assert_int_equal(walked[2], expect_ra[1]); /* into level1 */
	assert_int_equal(walked[3], expect_ra[0]); /* into this test */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_good_chain),
	        cmocka_unit_test(test_leaf_only_off_stack),
	        cmocka_unit_test(test_fp_below_sp),
	        cmocka_unit_test(test_misaligned),
	        cmocka_unit_test(test_top_of_stack),
	        cmocka_unit_test(test_cycles_and_descent),
	        cmocka_unit_test(test_small_return_address),
	        cmocka_unit_test(test_max_depth),
	        cmocka_unit_test(test_real_stack),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
