/* tests/integration/test_rule_losses.sh's program: a cmocka suite (named by the cmocka stack
 * rule) whose test_sort spends most of its time in libc's qsort calling its comparison and
 * test_alloc in malloc and free, which Debian's libc runs without frame pointers, whose
 * test_threads runs its work on two threads of its own (spin_worker), and whose test_loop
 * stays in its own code. With "plain" as its argument it does the same work with no cmocka:
 * no stack rule names anything. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static volatile uint64_t sink;

static int by_value(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static __attribute__((noinline)) void sort_work(void)
{
	enum { N = 4096 };
	static uint32_t v[N];
	uint32_t s = 12345;
	for (int round = 0; round < 300; round++) {
		for (int i = 0; i < N; i++)
			v[i] = s = s * 1103515245u + 12345u;
		qsort(v, N, sizeof(v[0]), by_value);
		sink += v[N / 2];
	}
}

static __attribute__((noinline)) void alloc_work(void)
{
	enum { N = 512 };
	static void *p[N];
	uint32_t s = 777;
	for (int round = 0; round < 6000; round++) {
		for (int i = 0; i < N; i++) {
			s = s * 1103515245u + 12345u;
			p[i] = malloc(16 + (s >> 20) % 2048);
		}
		for (int i = 0; i < N; i++)
			free(p[(i * 7) % N]);
		sink += s;
	}
}

static __attribute__((noinline)) void loop_work(void)
{
	uint64_t h = 1469598103934665603ull;
	for (uint64_t i = 0; i < 150000000ull; i++)
		h = (h ^ i) * 1099511628211ull;
	sink += h;
}

static void *spin_worker(void *arg)
{
	uint64_t h = (uintptr_t)arg;
	for (uint64_t i = 0; i < 45000000ull; i++)
		h = (h ^ i) * 1099511628211ull;
	sink += h;
	return NULL;
}

static __attribute__((noinline)) void thread_work(void)
{
	pthread_t t[2];
	for (uintptr_t i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, spin_worker, (void *)(i + 1)))
			spin_worker((void *)(i + 1));
		else
			pthread_join(t[i], NULL);
}

static void test_threads(void **state)
{
	(void)state;
	thread_work();
	assert_true(sink != 1);
}

static void test_sort(void **state)
{
	(void)state;
	sort_work();
	assert_true(sink != 1);
}

static void test_alloc(void **state)
{
	(void)state;
	alloc_work();
	assert_true(sink != 1);
}

static void test_loop(void **state)
{
	(void)state;
	loop_work();
	assert_true(sink != 1);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "plain")) {
		sort_work();
		alloc_work();
		thread_work();
		loop_work();
		return 0;
	}
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_sort),
	        cmocka_unit_test(test_alloc),
	        cmocka_unit_test(test_threads),
	        cmocka_unit_test(test_loop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
