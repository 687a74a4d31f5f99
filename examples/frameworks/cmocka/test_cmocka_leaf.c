/* A cmocka suite whose tests spend most of their time in a frameless leaf: the frame-pointer
 * walk skips the caller of a leaf without a frame, so only the leaf's CFI can tell that each
 * test function called it (docs/unwinding.md). Built like test_cmocka.c, with frame pointers
 * everywhere; leaf_mix has none (GCC ignores -mno-omit-leaf-frame-pointer for a leaf that needs
 * no stack, and optimize("omit-frame-pointer") makes that so on every compiler).
 * Four tests of costs 1:2:3:4 (about 0.75 s of CPU in all); each appends its thread's CPU time to
 * $CIPROF_TRUTH. ciprof should name "test_leaf_tiny" .. "test_leaf_large" and show leaf_mix
 * called by each of them. */
#include "fw_work.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* Iterations of leaf_mix per unit of work (about 20 ms). */
#define LEAF_ITERS_PER_UNIT 240000u

/* The hot leaf: no stack, no frame, out of line. */
__attribute__((noipa, optimize("omit-frame-pointer"))) uint64_t leaf_mix(uint64_t x)
{
	for (int r = 0; r < 8; r++) {
		x ^= x >> 30;
		x *= 0xbf58476d1ce4e5b9u;
		x ^= x >> 27;
		x *= 0x94d049bb133111ebu;
		x ^= x >> 31;
	}
	return x;
}

/* The loop is written out in each test (a macro, not a shared function), so the leaf's
 * caller is the test itself. */
#define LEAF_TEST(name, units)                                                                     \
	static void name(void **state)                                                             \
	{                                                                                          \
		(void)state;                                                                       \
		double t0 = fw_thread_cpu();                                                       \
		uint64_t h = units;                                                                \
		for (uint64_t i = 0; i < (uint64_t)(units)*LEAF_ITERS_PER_UNIT; i++)               \
			h = leaf_mix(h + i);                                                       \
		fw_truth(#name, fw_thread_cpu() - t0);                                             \
		assert_int_not_equal(h | 1, 0);                                                    \
	}

LEAF_TEST(test_leaf_tiny, 10)
LEAF_TEST(test_leaf_small, 20)
LEAF_TEST(test_leaf_medium, 30)
LEAF_TEST(test_leaf_large, 40)

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_leaf_tiny),
	        cmocka_unit_test(test_leaf_small),
	        cmocka_unit_test(test_leaf_medium),
	        cmocka_unit_test(test_leaf_large),
	};
	(void)fw_run_test; /* fw_work.h's other workload: not used here */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
