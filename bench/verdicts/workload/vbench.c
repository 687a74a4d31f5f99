/* bench/verdicts' workload: a little test suite of 20 functions of different character
 * (latency-bound loops, a memory-bound pointer chase, branchy parsing, floating point), run
 * as 8 CTest tests, with threads, a forked child and an exec'd helper. Knobs in the
 * environment make exactly one function, one test, or everything slower:
 *
 *   VB_SCALE=F            all work times F (default 1: about 3 CPU-seconds per suite run)
 *   VB_SLOW_FUNC=NAME     with VB_SLOW_PCT=P: function NAME does P % more work
 *   VB_SLOW_TEST=NAME     with VB_SLOW_TEST_PCT=P: every function of test NAME does P % more
 *   VB_SLOW_ALL=P         every function does P % more work
 *
 * Usage: vbench TEST (one of the names in tests[] below), or vbench list. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;
static const char *cur_test = "";

/* Work multiplier for function name: scale, the function's and the test's knobs. */
static double factor(const char *name)
{
	const char *s = getenv("VB_SCALE");
	double f = s ? atof(s) : 1.0;
	if (!(f > 0))
		f = 1.0;
	const char *fn = getenv("VB_SLOW_FUNC"), *fp = getenv("VB_SLOW_PCT");
	if (fn && fp && !strcmp(fn, name))
		f *= 1 + atof(fp) / 100;
	const char *tn = getenv("VB_SLOW_TEST"), *tp = getenv("VB_SLOW_TEST_PCT");
	if (tn && tp && !strcmp(tn, cur_test))
		f *= 1 + atof(tp) / 100;
	const char *all = getenv("VB_SLOW_ALL");
	if (all)
		f *= 1 + atof(all) / 100;
	return f;
}

/* Iterations for about ms milliseconds of fn's work (per_ms: iterations per millisecond,
 * calibrated on the reference machine), times the knobs. */
static uint64_t iters(const char *name, double ms, double per_ms)
{
	return (uint64_t)(ms * per_ms * factor(name) + 0.5);
}

/* --- latency-bound loops --- */

NOINLINE static uint32_t crc32_loop(uint64_t n)
{
	uint32_t crc = 0xffffffffu;
	for (uint64_t i = 0; i < n; i++) {
		crc ^= (uint32_t)i;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

NOINLINE static uint32_t adler32_loop(uint64_t n)
{
	uint32_t a = 1, b = 0;
	for (uint64_t i = 0; i < n; i++) {
		a = (a + (uint32_t)(i & 0xff)) % 65521u;
		b = (b + a) % 65521u;
	}
	return (b << 16) | a;
}

NOINLINE static uint64_t fnv1a_loop(uint64_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (uint64_t i = 0; i < n; i++) {
		h ^= i & 0xff;
		h *= 1099511628211ull;
	}
	return h;
}

NOINLINE static double horner_poly(uint64_t n)
{
	double x = 0.999, acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		double p = 1.0;
		p = p * x + 0.5;
		p = p * x + 0.25;
		p = p * x + 0.125;
		p = p * x + 0.0625;
		acc += p;
		x = x * 0.9999999 + 1e-9;
	}
	return acc;
}

NOINLINE static double fsqrt_loop(uint64_t n)
{
	double x = 2.0, acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		/* Newton steps: a divide-bound chain */
		double g = x;
		g = 0.5 * (g + x / g);
		g = 0.5 * (g + x / g);
		acc += g;
		x += 1e-7;
	}
	return acc;
}

NOINLINE static uint64_t lcg_mix(uint64_t n)
{
	uint64_t x = 88172645463325252ull;
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull, x ^= x >> 29;
	return x;
}

NOINLINE static uint64_t popcount_loop(uint64_t n)
{
	uint64_t c = 0, x = 0x9e3779b97f4a7c15ull;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = x ^ i;
		while (v) {
			v &= v - 1;
			c++;
		}
		x = x * 31 + 7;
	}
	return c;
}

NOINLINE static uint64_t fib(int k)
{
	return k < 2 ? (uint64_t)k : fib(k - 1) + fib(k - 2);
}

NOINLINE static uint64_t fib_loop(uint64_t n)
{
	uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++)
		s += fib(18);
	return s;
}

/* --- floating point --- */

NOINLINE static double matmul(uint64_t n)
{
	enum { D = 48 };
	static double a[D][D], b[D][D], c[D][D];
	for (int i = 0; i < D; i++)
		for (int j = 0; j < D; j++)
			a[i][j] = i + j * 0.5, b[i][j] = i - j * 0.25;
	double s = 0;
	for (uint64_t r = 0; r < n; r++) {
		for (int i = 0; i < D; i++)
			for (int j = 0; j < D; j++) {
				double t = 0;
				for (int k = 0; k < D; k++)
					t += a[i][k] * b[k][j];
				c[i][j] = t;
			}
		s += c[r % D][(r * 7) % D];
		a[r % D][0] += 1e-9;
	}
	return s;
}

/* --- memory-bound --- */

static uint32_t *chase;
static size_t chase_n;

/* One random cycle through 64 MiB, so that nearly every step misses the caches. */
NOINLINE static void chase_init(void)
{
	{
		chase_n = (size_t)16 << 20; /* 64 MiB of uint32 */
		chase = malloc(chase_n * sizeof(*chase));
		if (!chase)
			exit(3);
		for (size_t i = 0; i < chase_n; i++)
			chase[i] = (uint32_t)i;
		uint64_t x = 12345;
		for (size_t i = chase_n - 1; i > 0; i--) { /* Sattolo: one big cycle */
			x = x * 6364136223846793005ull + 1;
			size_t j = (size_t)((x >> 33) % i);
			uint32_t t = chase[i];
			chase[i] = chase[j];
			chase[j] = t;
		}
	}
}

NOINLINE static uint64_t pointer_chase(uint64_t n)
{
	if (!chase)
		chase_init();
	uint32_t p = 0;
	for (uint64_t i = 0; i < n; i++)
		p = chase[p];
	return p;
}

struct node {
	struct node *next;
	uint64_t v;
	char pad[48];
};

NOINLINE static uint64_t list_walk(uint64_t n)
{
	enum { N = 1 << 16 };
	static struct node *nodes;
	if (!nodes) {
		nodes = calloc(N, sizeof(*nodes));
		if (!nodes)
			exit(3);
		for (size_t i = 0; i < N; i++) {
			nodes[i].v = i;
			nodes[i].next = &nodes[(i * 7919 + 1) % N];
		}
	}
	uint64_t s = 0;
	struct node *p = nodes;
	for (uint64_t i = 0; i < n; i++) {
		s += p->v;
		p = p->next;
	}
	return s;
}

struct tnode {
	uint64_t key;
	struct tnode *l, *r;
};

NOINLINE static uint64_t tree_insert(uint64_t n)
{
	struct tnode *pool = calloc(n ? n : 1, sizeof(*pool)), *root = NULL;
	if (!pool)
		exit(3);
	uint64_t x = 99, depth = 0;
	for (uint64_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		struct tnode *t = &pool[i], **at = &root;
		t->key = x >> 20;
		while (*at) {
			at = t->key < (*at)->key ? &(*at)->l : &(*at)->r;
			depth++;
		}
		*at = t;
	}
	free(pool);
	return depth;
}

/* --- branchy parsing and text --- */

static const char csv_line[] = "12,abc,-3.5,\"quoted, text\",7,,x9,1e3,end\n";

NOINLINE static uint64_t parse_csv(uint64_t n)
{
	uint64_t fields = 0, digits = 0;
	for (uint64_t r = 0; r < n; r++) {
		int inq = 0;
		for (const char *c = csv_line; *c; c++) {
			if (*c == '"')
				inq = !inq;
			else if (*c == ',' && !inq)
				fields++;
			else if (*c >= '0' && *c <= '9')
				digits += (uint64_t)(*c - '0') + (r & 1);
			else if (*c == '\n')
				fields++;
		}
	}
	return fields + digits;
}

static const char src_text[] = "int main(void) { return foo(a, b) + 42 * bar[3]; } /* x */";

NOINLINE static uint64_t tokenize(uint64_t n)
{
	uint64_t toks = 0;
	for (uint64_t r = 0; r < n; r++) {
		const char *c = src_text;
		while (*c) {
			if (*c == ' ') {
				c++;
			} else if ((*c >= 'a' && *c <= 'z') || *c == '_') {
				while ((*c >= 'a' && *c <= 'z') || *c == '_' ||
				       (*c >= '0' && *c <= '9'))
					c++;
				toks += 2;
			} else if (*c >= '0' && *c <= '9') {
				while (*c >= '0' && *c <= '9')
					c++;
				toks += 3;
			} else {
				c++;
				toks++;
			}
		}
	}
	return toks;
}

NOINLINE static uint64_t base64_encode(uint64_t n)
{
	static const char tbl[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned char in[48];
	char out[64];
	for (int i = 0; i < 48; i++)
		in[i] = (unsigned char)(i * 37);
	uint64_t s = 0;
	for (uint64_t r = 0; r < n; r++) {
		for (int i = 0, o = 0; i < 48; i += 3, o += 4) {
			uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
			out[o] = tbl[v >> 18];
			out[o + 1] = tbl[(v >> 12) & 63];
			out[o + 2] = tbl[(v >> 6) & 63];
			out[o + 3] = tbl[v & 63];
		}
		s += (unsigned char)out[r & 63];
		in[r % 48]++;
	}
	return s;
}

NOINLINE static uint64_t rle_compress(uint64_t n)
{
	static unsigned char buf[4096];
	for (int i = 0; i < 4096; i++)
		buf[i] = (unsigned char)((i / 7) & 3);
	uint64_t runs = 0;
	for (uint64_t r = 0; r < n; r++) {
		unsigned char prev = buf[0];
		for (int i = 1; i < 4096; i++) {
			if (buf[i] != prev) {
				runs++;
				prev = buf[i];
			}
		}
		buf[r % 4096] ^= 1;
	}
	return runs;
}

NOINLINE static uint64_t strsearch(uint64_t n)
{
	static char hay[2048];
	for (int i = 0; i < 2047; i++)
		hay[i] = (char)('a' + (i * 7) % 5);
	hay[2047] = 0;
	const char *needle = "abcde";
	uint64_t hits = 0;
	for (uint64_t r = 0; r < n; r++) {
		for (int i = 0; i < 2040; i++) {
			int k = 0;
			while (k < 5 && hay[i + k] == needle[k])
				k++;
			hits += (uint64_t)k;
		}
		hay[r % 2000] = (char)('a' + (r % 5));
	}
	return hits;
}

/* --- sorting and counting --- */

NOINLINE static uint64_t sort_ints(uint64_t n)
{
	enum { N = 4096 };
	static uint32_t a[N];
	uint64_t s = 0, x = 7;
	for (uint64_t r = 0; r < n; r++) {
		for (int i = 0; i < N; i++)
			a[i] = (uint32_t)((x = x * 6364136223846793005ull + 1) >> 40);
		/* shell sort: branchy, in cache */
		for (int gap = N / 2; gap > 0; gap /= 2)
			for (int i = gap; i < N; i++) {
				uint32_t t = a[i];
				int j = i;
				for (; j >= gap && a[j - gap] > t; j -= gap)
					a[j] = a[j - gap];
				a[j] = t;
			}
		s += a[N / 2];
	}
	return s;
}

NOINLINE static uint64_t histogram(uint64_t n)
{
	static uint32_t h[256];
	uint64_t x = 1;
	for (uint64_t i = 0; i < n; i++) {
		x = x * 2862933555777941757ull + 3037000493ull;
		h[(x >> 56) & 255]++;
	}
	return h[17];
}

NOINLINE static uint64_t sieve(uint64_t n)
{
	enum { N = 1 << 16 };
	static unsigned char comp[N];
	uint64_t primes = 0;
	for (uint64_t r = 0; r < n; r++) {
		memset(comp, 0, sizeof(comp));
		for (uint32_t i = 2; i * i < N; i++)
			if (!comp[i])
				for (uint32_t j = i * i; j < N; j += i)
					comp[j] = 1;
		primes += comp[N - 1 - r % 100];
	}
	return primes;
}

/* --- the tests --- */

/* Iterations per millisecond of each function, measured with 'vbench calibrate' on the
 * machine the benchmark was written on; the shares they give are printed by the driver. */
#define RUN(fn, ms, per_ms) (sink += (uint64_t)fn(iters(#fn, (ms), (per_ms))))

static void test_checksums(void)
{
	RUN(crc32_loop, 150, 95000);
	RUN(adler32_loop, 100, 316000);
	RUN(fnv1a_loop, 120, 788000);
}

static void test_parse(void)
{
	RUN(parse_csv, 150, 21200);
	RUN(tokenize, 100, 21700);
	RUN(base64_encode, 80, 30000);
}

static void test_math(void)
{
	RUN(horner_poly, 600, 500000);
	RUN(fsqrt_loop, 100, 352000);
	RUN(matmul, 150, 20);
}

static void test_memory(void)
{
	RUN(pointer_chase, 200, 5500);
	RUN(list_walk, 100, 48900);
	RUN(tree_insert, 100, 2370);
}

static void test_sort(void)
{
	RUN(sort_ints, 150, 2.7);
	RUN(histogram, 80, 787000);
}

static void *thread_body(void *arg)
{
	(void)arg;
	RUN(lcg_mix, 100, 528000);
	return NULL;
}

static void test_threads(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, thread_body, NULL))
			exit(3);
	RUN(popcount_loop, 80, 37700);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
}

static void test_fork(void)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		exit(3);
	if (pid == 0) {
		RUN(sieve, 150, 12.5);
		_exit(0);
	}
	RUN(rle_compress, 60, 390);
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		exit(1);
}

static const char *self_path;

static void test_exec(void)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		exit(3);
	if (pid == 0) {
		execl(self_path, self_path, "helper", (char *)NULL);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		exit(1);
}

/* The exec'd helper: its work counts under test_exec. */
static void helper(void)
{
	cur_test = "test_exec";
	RUN(strsearch, 120, 448);
	RUN(fib_loop, 80, 114);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
        {"test_checksums", test_checksums}, {"test_parse", test_parse},
        {"test_math", test_math},           {"test_memory", test_memory},
        {"test_sort", test_sort},           {"test_threads", test_threads},
        {"test_fork", test_fork},           {"test_exec", test_exec},
};

/* Prints iterations per millisecond of each function (for the table above). */
static void calibrate(void)
{
#define CAL(fn, n)                                                                                 \
	do {                                                                                       \
		struct timespec a, b;                                                              \
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);                                       \
		sink += (uint64_t)fn(n);                                                           \
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);                                       \
		double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 +                                  \
		            (double)(b.tv_nsec - a.tv_nsec) / 1e6;                                 \
		printf("%-16s %12.1f per ms\n", #fn, (double)(n) / ms);                            \
	} while (0)
	CAL(crc32_loop, 3000000);
	CAL(adler32_loop, 10000000);
	CAL(fnv1a_loop, 30000000);
	CAL(horner_poly, 10000000);
	CAL(fsqrt_loop, 3000000);
	CAL(lcg_mix, 30000000);
	CAL(popcount_loop, 2000000);
	CAL(fib_loop, 3000);
	CAL(matmul, 300);
	chase_init();
	CAL(pointer_chase, 2000000);
	CAL(list_walk, 10000000);
	CAL(tree_insert, 200000);
	CAL(parse_csv, 500000);
	CAL(tokenize, 300000);
	CAL(base64_encode, 500000);
	CAL(rle_compress, 10000);
	CAL(strsearch, 20000);
	CAL(sort_ints, 100);
	CAL(histogram, 30000000);
	CAL(sieve, 300);
}

int main(int argc, char **argv)
{
	self_path = "/proc/self/exe";
	static char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		self_path = exe;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: vbench TEST | list | calibrate | helper\n");
		return 2;
	}
	if (!strcmp(argv[1], "list")) {
		for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
			printf("%s\n", tests[i].name);
		return 0;
	}
	if (!strcmp(argv[1], "calibrate")) {
		calibrate();
		return 0;
	}
	if (!strcmp(argv[1], "helper")) {
		helper();
		return 0;
	}
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(argv[1], tests[i].name)) {
			cur_test = tests[i].name;
			tests[i].fn();
			return 0;
		}
	fprintf(stderr, "vbench: no test %s\n", argv[1]);
	return 2;
}
