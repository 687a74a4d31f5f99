/* spin N [SLEEP_MS]: N million multiply-adds in work(), then SLEEP_MS ms asleep; exits 1 when
 * SPIN_FAIL is set. The one-program CTest project of the CI-template, CTest-naming and A/B
 * tests and of bench/ab/late.sh and bell.sh: several tests that run one program. */
#include <stdlib.h>
#include <unistd.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void work(long n)
{
	for (long i = 0; i < n * 1000000L; i++)
		sink += (unsigned long)i * 2654435761u;
}
int main(int argc, char **argv)
{
	work(argc > 1 ? atol(argv[1]) : 10);
	if (argc > 2 && atoi(argv[2]) > 0) /* no usleep(0): a yield gives ciprof a CPU */
		usleep(1000 * (useconds_t)atoi(argv[2]));
	return getenv("SPIN_FAIL") ? 1 : 0;
}
