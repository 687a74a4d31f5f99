/* bench/verdicts' second workload, shaped unlike the first (../workload/vbench.c) so that
 * statistics tuned on that one meet a suite they have never seen: 10 CTest tests with uneven
 * shares (test_digest about a quarter of the suite, test_fork, test_exec and test_buffers 4-6 %
 * each), about 30 functions, call trees 4-5 frames deep, recursion (a recursive-descent
 * expression evaluator, a quicksort, a binary tree), code that spends its time in libc (qsort
 * with a callback, snprintf, strtod, memmove, malloc/free), memory-bound code (a random walk
 * over 128 MiB, a 16 MiB hash table), floating point (n-body, an FFT, Mandelbrot) and steady
 * integer loops; one test runs 4 threads, one forks a child, one execs itself as a helper.
 * About 3 CPU-seconds per suite run (ctest -j2) at VB_SCALE=1.
 *
 * Knobs in the environment, as in vbench.c:
 *
 *   VB_SCALE=F            all work times F (default 1)
 *   VB_SLOW_FUNC=NAME     with VB_SLOW_PCT=P: function NAME does P % more work
 *   VB_SLOW_TEST=NAME     with VB_SLOW_TEST_PCT=P: every function of test NAME does P % more
 *   VB_SLOW_ALL=P         every function does P % more work
 *
 * VB_SCALE, VB_SLOW_TEST and VB_SLOW_ALL multiply the work of a whole tree (its root's loop
 * count). VB_SLOW_FUNC multiplies the iterations of the named function's own loop, so that its
 * self time grows and its callers' and callees' do not, also deep in a call tree (sip_rounds,
 * digest_block and hex_digest under digest_corpus, mandel_tile in the threads, gcd_sum in the
 * forked child, utf8_count in the exec'd helper). Exceptions: the recursive families answer to
 * one name as a whole: eval_expr (with parse_sum, parse_product, parse_atom and their strtod
 * calls), quick_sort (the batch's refill, about 5 % of its time, comes with it) and tree_run
 * (with tree_insert and tree_sum); record_qsort's name makes more sorts (libc's qsort and
 * cmp_records with them); the pass-through frames digest_corpus and digest_file, and the
 * callbacks tile_worker and cmp_records, have no loop of their own to lengthen; walk_init
 * fills at least the whole 128 MiB at any VB_SCALE (below 1 its work stays whole).
 *
 * Shares of the suite's CPU time (perf record -F 999 -g -- ctest -j2, self time, on the 2-core
 * AMD EPYC VM it was written on): sip_rounds 18 %, mandel_tile 7.5, random_walk 7, nbody_step
 * 6.7, collatz_len 5, fft_radix2, xorshift_mix and bitrev_permute 4 each, libc's memmove 3.4,
 * gcd_sum 3, ...; per test (CPU time, children included): test_digest 24 %, test_memory 12.5,
 * test_physics 10.6, test_expr 10.4, test_prng 9.8, test_tree 9.3, test_threads 8.1,
 * test_buffers 5.4, test_fork 5.2, test_exec 4.5.
 *
 * The planted items bench/verdicts/run.py uses with this workload:
 *
 *   FUNC5    = collatz_len   a steady integer loop holding about 5 % of the suite (self time),
 *                            in test_tree
 *   FUNC20   = sip_rounds    a steady integer loop holding about 18 %, four frames under
 *                            test_digest (digest_corpus > digest_file > digest_block)
 *   TEST10   = test_prng     a test of steady integer loops (xorshift_mix, mul_hash_chain,
 *                            lfsr_steps) holding about 10 %; FUNC5 is not in it
 *   TEST10S  = test_expr     a test of swinging, libc-heavy code (the expression evaluator's
 *                            strtod, snprintf/strtod round trips, qsort) holding about 10 %
 *   MEMBOUND = random_walk   a dependent random walk over 128 MiB
 *
 * Usage: w2 TEST (one of the names in tests[] below), w2 list, or w2 calibrate. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone)) /* one symbol per function */

static volatile uint64_t sink;
static const char *cur_test = "";
static double g_knob = 1.0; /* VB_SCALE x the test's knob x VB_SLOW_ALL */

/* The knobs that scale everything a test does (set once the test's name is known). */
static void set_knobs(void)
{
	const char *s = getenv("VB_SCALE");
	double f = s ? atof(s) : 1.0;
	if (!(f > 0))
		f = 1.0;
	const char *tn = getenv("VB_SLOW_TEST"), *tp = getenv("VB_SLOW_TEST_PCT");
	if (tn && tp && !strcmp(tn, cur_test))
		f *= 1 + atof(tp) / 100;
	const char *all = getenv("VB_SLOW_ALL");
	if (all)
		f *= 1 + atof(all) / 100;
	g_knob = f;
}

/* The multiplier of function name's own loop: 1 + VB_SLOW_PCT/100 if it is VB_SLOW_FUNC. */
static double fslow(const char *name)
{
	const char *fn = getenv("VB_SLOW_FUNC"), *fp = getenv("VB_SLOW_PCT");
	if (fn && fp && !strcmp(fn, name)) {
		double f = 1 + atof(fp) / 100;
		return f > 0 ? f : 0;
	}
	return 1.0;
}

/* Iterations of a leaf's loop for about ms milliseconds of its work (per_ms: iterations per
 * millisecond, from 'w2 calibrate' on the machine this was written on), times every knob. */
static uint64_t iters(const char *name, double ms, double per_ms)
{
	return (uint64_t)(ms * per_ms * g_knob * fslow(name) + 0.5);
}

/* Iterations of a tree root's loop: the knobs that scale a whole tree, not VB_SLOW_FUNC. */
static uint64_t rounds(double ms, double per_ms)
{
	return (uint64_t)(ms * per_ms * g_knob + 0.5);
}

/* A per-call count of c x fslow(name) spread over many calls without rounding drift: the
 * counts of successive calls add up to calls x c x fslow(name). */
struct spread {
	double step, acc;
};

static struct spread spread_of(const char *name, double c)
{
	return (struct spread){c * fslow(name), 0.5};
}

static inline uint64_t take(struct spread *s)
{
	s->acc += s->step;
	uint64_t k = (uint64_t)s->acc;
	s->acc -= (double)k;
	return k;
}

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static inline uint64_t xs64(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* ---- test_digest: a SipHash-like digest of a corpus, four frames deep ---- */

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

/* n SipHash rounds over the block's 64 words: a steady, latency-bound integer chain. */
NOINLINE static void sip_rounds(uint64_t v[4], const uint64_t *m, uint64_t n)
{
	uint64_t v0 = v[0], v1 = v[1], v2 = v[2], v3 = v[3];
	for (uint64_t i = 0; i < n; i++) {
		uint64_t w = m[i & 63];
		v3 ^= w;
		v0 += v1;
		v1 = ROTL(v1, 13);
		v1 ^= v0;
		v0 = ROTL(v0, 32);
		v2 += v3;
		v3 = ROTL(v3, 16);
		v3 ^= v2;
		v0 += v3;
		v3 = ROTL(v3, 21);
		v3 ^= v0;
		v2 += v1;
		v1 = ROTL(v1, 17);
		v1 ^= v2;
		v2 = ROTL(v2, 32);
		v0 ^= w;
	}
	v[0] = v0, v[1] = v1, v[2] = v2, v[3] = v3;
}

struct digest_knobs {
	struct spread prep, sip, hex;
};

enum { BLOCK = 512, CORPUS = 64 << 10, FILE_BLOCKS = 16 };

/* Loads a 512-byte block as 64 chained words (its own loop), then runs the rounds over it. */
NOINLINE static void digest_block(uint64_t v[4], const unsigned char *p, struct digest_knobs *k)
{
	uint64_t w[64] = {0}, prev = v[1];
	uint64_t n = take(&k->prep);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t x;
		memcpy(&x, p + 8 * (i & 63), 8);
		prev = (x ^ (prev >> 29)) * 0x9e3779b97f4a7c15ull;
		prev ^= prev >> 31;
		w[i & 63] ^= prev;
	}
	sip_rounds(v, w, take(&k->sip));
}

NOINLINE static void digest_file(uint64_t v[4], const unsigned char *data, uint64_t file,
                                 struct digest_knobs *k)
{
	for (uint64_t b = 0; b < FILE_BLOCKS; b++)
		digest_block(v, data + BLOCK * ((file * 7 + b) % (CORPUS / BLOCK)), k);
}

/* Formats the digest as hex, n times (time spent in libc's vfprintf). */
NOINLINE static uint64_t hex_digest(const uint64_t v[4], uint64_t n)
{
	char buf[80];
	uint64_t s = 0;
	for (uint64_t r = 0; r < n; r++) {
		snprintf(buf, sizeof(buf), "%016llx%016llx%016llx%016llx",
		         (unsigned long long)(v[0] ^ r), (unsigned long long)v[1],
		         (unsigned long long)v[2], (unsigned long long)(v[3] + r));
		s += (unsigned char)buf[r & 63];
	}
	return s;
}

/* Per-file constants of the tree: words loaded per block, rounds per block, hex formats per
 * file (they set the shares of digest_block, sip_rounds and hex_digest). */
#define DIGEST_PREP 32.0
#define DIGEST_SIP  600.0
#define DIGEST_HEX  3.0

NOINLINE static uint64_t digest_corpus(uint64_t nfiles)
{
	static unsigned char data[CORPUS];
	uint64_t x = 0x243f6a8885a308d3ull;
	for (size_t i = 0; i < CORPUS; i += 8) {
		uint64_t r = xs64(&x);
		memcpy(data + i, &r, 8);
	}
	struct digest_knobs k = {spread_of("digest_block", DIGEST_PREP),
	                         spread_of("sip_rounds", DIGEST_SIP),
	                         spread_of("hex_digest", DIGEST_HEX)};
	uint64_t s = 0;
	for (uint64_t f = 0; f < nfiles; f++) {
		uint64_t v[4] = {0x736f6d6570736575ull ^ f, 0x646f72616e646f6dull,
		                 0x6c7967656e657261ull, 0x7465646279746573ull ^ (f << 7)};
		digest_file(v, data, f, &k);
		s += hex_digest(v, take(&k.hex)) + (v[0] ^ v[1] ^ v[2] ^ v[3]);
	}
	return s;
}

/* A bit-reversal permutation of a 64K-entry table, one index a step (reversed bit by bit). */
NOINLINE static uint64_t bitrev_permute(uint64_t n)
{
	enum { B = 16, N = 1 << B };
	static uint32_t a[N];
	for (uint32_t i = 0; i < N; i++)
		a[i] = i * 2654435761u;
	uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t j = (uint32_t)i & (N - 1), x = j, r = 0;
		for (int b = 0; b < B; b++) {
			r = (r << 1) | (x & 1);
			x >>= 1;
		}
		if (j < r) {
			uint32_t t = a[j];
			a[j] = a[r];
			a[r] = t;
		}
		s += a[j] ^ r;
	}
	return s;
}

/* ---- test_prng: steady integer loops ---- */

NOINLINE static uint64_t xorshift_mix(uint64_t n)
{
	uint64_t x = 0x0123456789abcdefull, acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		acc += x * 0x2545f4914f6cdd1dull;
	}
	return acc ^ x;
}

NOINLINE static uint64_t mul_hash_chain(uint64_t n)
{
	uint64_t x = 42;
	for (uint64_t i = 0; i < n; i++) {
		x = (x ^ (x >> 31)) * 0x7fb5d329728ea185ull;
		x = (x ^ (x >> 27)) * 0x81dadef4bc2dd44dull;
		x ^= (x >> 33) + i;
	}
	return x;
}

/* A 64-bit Galois LFSR stepped a bit at a time. */
NOINLINE static uint64_t lfsr_steps(uint64_t n)
{
	uint64_t x = 0xace1ace1ace1ace1ull, ones = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t lsb = x & 1;
		x = (x >> 1) ^ ((0 - lsb) & 0xd800000000000000ull);
		ones += lsb;
	}
	return ones ^ x;
}

/* ---- test_expr: a recursive-descent expression evaluator, number round trips, qsort ---- */

static const char *const exprs[] = {
        "(3.5 + 2.25 * (7 - 1.5)) / (1.125 + 4) - -2.5 * (8 / (3 + 0.5))",
        "((1.5e2 - 37.25) * 0.001 + (2 * (3 * (4 * (5 + 6.0625))))) / 7.75",
        "-(12.5 / (0.25 + 0.75 * (1 - 0.3333))) + 3.14159 * 2.71828 - 1e-3 * 42",
        "(((9.81 * 0.5) * 3.2) * 3.2 + 100 / (17 - 4.5)) * (0.125 - -0.875)",
        "2.5 * 2.5 * 2.5 - (6.02e23 / 6.02e22) + (1 + 2) * (3 + 4) * (5 + 6) / 77",
        "(0.1 + 0.2 + 0.3 + 0.4) * (1000 - 999.5) / (-(1.5 - 3) + 0.5) + 7 * 6",
};
#define NEXPR (sizeof(exprs) / sizeof(exprs[0]))

NOINLINE static double parse_sum(const char **s);

NOINLINE static double parse_atom(const char **s)
{
	while (**s == ' ')
		(*s)++;
	if (**s == '(') {
		(*s)++;
		double v = parse_sum(s);
		while (**s == ' ')
			(*s)++;
		if (**s == ')')
			(*s)++;
		return v;
	}
	if (**s == '-') {
		(*s)++;
		return -parse_atom(s);
	}
	char *end;
	double v = strtod(*s, &end);
	if (end == *s)
		exit(1);
	*s = end;
	return v;
}

NOINLINE static double parse_product(const char **s)
{
	double v = parse_atom(s);
	for (;;) {
		while (**s == ' ')
			(*s)++;
		if (**s == '*')
			(*s)++, v *= parse_atom(s);
		else if (**s == '/')
			(*s)++, v /= parse_atom(s);
		else
			return v;
	}
}

NOINLINE static double parse_sum(const char **s)
{
	double v = parse_product(s);
	for (;;) {
		while (**s == ' ')
			(*s)++;
		if (**s == '+')
			(*s)++, v += parse_product(s);
		else if (**s == '-')
			(*s)++, v -= parse_product(s);
		else
			return v;
	}
}

NOINLINE static double eval_expr(uint64_t n)
{
	double acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		const char *s = exprs[i % NEXPR];
		acc += parse_sum(&s);
		if (*s)
			exit(1);
	}
	return acc;
}

/* snprintf %.17g and strtod back: a double survives the round trip. */
NOINLINE static uint64_t num_roundtrip(uint64_t n)
{
	char buf[40];
	uint64_t ok = 0;
	for (uint64_t i = 0; i < n; i++) {
		double x = (double)i * 1.000123 + 0.5 / (double)(i + 1);
		snprintf(buf, sizeof(buf), "%.17g", x);
		ok += strtod(buf, NULL) == x;
	}
	if (ok != n)
		exit(1);
	return ok;
}

struct record {
	double key;
	uint32_t id;
	char tag[4];
};

NOINLINE static int cmp_records(const void *a, const void *b)
{
	const struct record *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* Fills 2048 records with random keys and sorts them with libc's qsort, n times. */
NOINLINE static uint64_t record_qsort(uint64_t n)
{
	enum { N = 2048 };
	static struct record r[N];
	uint64_t x = 0x9e3779b97f4a7c15ull, s = 0;
	for (uint64_t k = 0; k < n; k++) {
		for (uint32_t i = 0; i < N; i++) {
			r[i].key = (double)(xs64(&x) >> 40);
			r[i].id = i;
		}
		qsort(r, N, sizeof(r[0]), cmp_records);
		s += r[N / 2].id;
	}
	return s;
}

/* ---- test_memory: a random walk over 128 MiB and a 16 MiB hash table ---- */

enum { WALK_N = 16 << 20 };      /* 128 MiB of uint64 */
enum { HASH_N = 2 << 20 };       /* 16 MiB of slots */
enum { HASH_KEYS = HASH_N / 2 }; /* distinct keys inserted: load 0.5 */
static uint64_t *walk_buf, *hash_tab;

/* Fills the walk's buffer with random words: n words, wrapping, and never fewer than the
 * whole buffer (at VB_SCALE < 1 too: the walk must not read untouched pages, which all map
 * the one zero page and would hit the caches). */
NOINLINE static uint64_t walk_init(uint64_t n)
{
	if (!walk_buf && !(walk_buf = malloc(WALK_N * sizeof(*walk_buf))))
		exit(3);
	uint64_t x = 0x853c49e6748fea9bull;
	if (n < WALK_N)
		n = WALK_N;
	for (uint64_t i = 0; i < n; i++)
		walk_buf[i & (WALK_N - 1)] = xs64(&x);
	return walk_buf[n & (WALK_N - 1)];
}

/* A dependent random walk: each step's address comes from the word the last step loaded
 * (and the step number, so that the walk never falls into a short cycle). */
NOINLINE static uint64_t random_walk(uint64_t n)
{
	uint64_t p = 0, s = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = walk_buf[p];
		s += v;
		p = (v + i * 0x9e3779b97f4a7c15ull) & (WALK_N - 1);
	}
	return s;
}

static inline uint64_t hash_key(uint64_t i)
{
	return mix64(i + 0x1234567ull) | 1; /* 0 marks an empty slot */
}

/* Inserts keys 0.. (n of them, wrapping over HASH_KEYS: later ones find themselves). */
NOINLINE static uint64_t hash_init(uint64_t n)
{
	if (!hash_tab && !(hash_tab = calloc(HASH_N, sizeof(*hash_tab))))
		exit(3);
	uint64_t probes = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t k = hash_key(i % HASH_KEYS), h = (k >> 17) & (HASH_N - 1);
		while (hash_tab[h] && hash_tab[h] != k)
			h = (h + 1) & (HASH_N - 1), probes++;
		hash_tab[h] = k;
	}
	return probes;
}

/* Random lookups, half of them of keys that are there. */
NOINLINE static uint64_t hash_probe(uint64_t n)
{
	uint64_t found = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t k = hash_key(mix64(i) % (2 * (uint64_t)HASH_KEYS)),
		         h = (k >> 17) & (HASH_N - 1);
		while (hash_tab[h] && hash_tab[h] != k)
			h = (h + 1) & (HASH_N - 1);
		found += hash_tab[h] == k;
	}
	return found;
}

/* ---- test_physics: n-body steps and an FFT of our own ---- */

NOINLINE static double nbody_step(uint64_t n)
{
	enum { NB = 40 };
	static double x[NB], y[NB], z[NB], vx[NB], vy[NB], vz[NB], m[NB];
	const double dt = 1e-3, eps = 1e-2;
	double e = 0;
	for (uint64_t s = 0; s < n; s++) {
		if (s % 1000 == 0) /* a fresh, bounded system every 1000 steps */
			for (int i = 0; i < NB; i++) {
				x[i] = cos(i * 0.7) * (1 + i % 5),
				y[i] = sin(i * 0.7) * (1 + i % 3);
				z[i] = (i % 7) * 0.1 - 0.3;
				vx[i] = -y[i] * 0.1, vy[i] = x[i] * 0.1, vz[i] = 0;
				m[i] = 1.0 + (i % 4) * 0.25;
			}
		for (int i = 0; i < NB; i++)
			for (int j = i + 1; j < NB; j++) {
				double dx = x[j] - x[i], dy = y[j] - y[i], dz = z[j] - z[i];
				double d2 = dx * dx + dy * dy + dz * dz + eps;
				double inv = 1.0 / (d2 * sqrt(d2));
				double fi = m[j] * inv * dt, fj = m[i] * inv * dt;
				vx[i] += dx * fi, vy[i] += dy * fi, vz[i] += dz * fi;
				vx[j] -= dx * fj, vy[j] -= dy * fj, vz[j] -= dz * fj;
			}
		for (int i = 0; i < NB; i++)
			x[i] += vx[i] * dt, y[i] += vy[i] * dt, z[i] += vz[i] * dt;
		e += vx[s % NB];
	}
	return e;
}

/* n 1024-point complex FFTs, forward and inverse in turn: bit reversal, then butterflies. */
NOINLINE static double fft_radix2(uint64_t n)
{
	enum { N = 1024 };
	static double re[N], im[N], wr[N / 2], wi[N / 2];
	for (int i = 0; i < N / 2; i++)
		wr[i] = cos(2 * M_PI * i / N), wi[i] = -sin(2 * M_PI * i / N);
	for (int i = 0; i < N; i++)
		re[i] = sin(i * 0.05) + 0.25 * cos(i * 0.31), im[i] = 0;
	for (uint64_t t = 0; t < n; t++) {
		int inv = (int)(t & 1);
		for (int i = 1, j = 0; i < N; i++) {
			int bit = N >> 1;
			for (; j & bit; bit >>= 1)
				j ^= bit;
			j ^= bit;
			if (i < j) {
				double tr = re[i], ti = im[i];
				re[i] = re[j], im[i] = im[j], re[j] = tr, im[j] = ti;
			}
		}
		for (int len = 2; len <= N; len <<= 1) {
			int half = len / 2, step = N / len;
			for (int i = 0; i < N; i += len)
				for (int k = 0; k < half; k++) {
					double c = wr[k * step],
					       d = inv ? -wi[k * step] : wi[k * step];
					double ur = re[i + k], ui = im[i + k];
					double xr = re[i + k + half], xi = im[i + k + half];
					double vr = xr * c - xi * d, vi = xr * d + xi * c;
					re[i + k] = ur + vr, im[i + k] = ui + vi;
					re[i + k + half] = ur - vr, im[i + k + half] = ui - vi;
				}
		}
		if (inv)
			for (int i = 0; i < N; i++)
				re[i] /= N, im[i] /= N;
	}
	return re[3] + im[5];
}

/* ---- test_tree: Collatz, a quicksort of our own, a binary tree ---- */

/* n steps of the (branch-free, shortcut) Collatz map, from 27 upwards. */
NOINLINE static uint64_t collatz_len(uint64_t n)
{
	uint64_t x = 27, start = 27, runs = 0;
	for (uint64_t i = 0; i < n; i++) {
		x = (x >> 1) + ((0 - (x & 1)) & (x + 1));
		if (x <= 2)
			x = ++start, runs++;
	}
	return runs ^ x;
}

NOINLINE static void quick_sort(uint32_t *a, long lo, long hi)
{
	while (hi - lo > 16) {
		long mid = lo + (hi - lo) / 2;
		uint32_t p = a[lo], q = a[mid], r = a[hi]; /* median of three */
		uint32_t piv =
		        p < q ? (q < r ? q : (p < r ? r : p)) : (p < r ? p : (q < r ? r : q));
		long i = lo, j = hi;
		while (i <= j) {
			while (a[i] < piv)
				i++;
			while (a[j] > piv)
				j--;
			if (i <= j) {
				uint32_t t = a[i];
				a[i++] = a[j];
				a[j--] = t;
			}
		}
		if (j - lo < hi - i) { /* recurse into the smaller side */
			quick_sort(a, lo, j);
			lo = i;
		} else {
			quick_sort(a, i, hi);
			hi = j;
		}
	}
	for (long i = lo + 1; i <= hi; i++) { /* insertion sort of the rest */
		uint32_t t = a[i];
		long j = i;
		for (; j > lo && a[j - 1] > t; j--)
			a[j] = a[j - 1];
		a[j] = t;
	}
}

/* nb batches of 4096 random keys, each filled and quick-sorted. */
NOINLINE static uint64_t sort_batches(uint64_t nb)
{
	enum { N = 4096 };
	static uint32_t a[N];
	struct spread k = spread_of("quick_sort", 1.0);
	uint64_t x = 0xdeadbeefcafef00dull, s = 0;
	for (uint64_t b = 0; b < nb; b++)
		for (uint64_t r = take(&k); r > 0; r--) {
			for (int i = 0; i < N; i++)
				a[i] = (uint32_t)(xs64(&x) >> 32);
			quick_sort(a, 0, N - 1);
			s += a[N / 3];
		}
	return s;
}

struct tnode {
	uint64_t key;
	struct tnode *l, *r;
};

NOINLINE static struct tnode *tree_insert(struct tnode *t, struct tnode *n)
{
	if (!t)
		return n;
	if (n->key < t->key)
		t->l = tree_insert(t->l, n);
	else
		t->r = tree_insert(t->r, n);
	return t;
}

NOINLINE static uint64_t tree_sum(const struct tnode *t, uint64_t depth)
{
	if (!t)
		return 0;
	return (t->key >> 40) * depth + tree_sum(t->l, depth + 1) + tree_sum(t->r, depth + 1);
}

/* n rounds of building a 8192-node binary search tree by recursive insertion and summing it
 * by a recursive walk. */
NOINLINE static uint64_t tree_run(uint64_t n)
{
	enum { N = 8192 };
	static struct tnode pool[N];
	uint64_t s = 0;
	for (uint64_t r = 0; r < n; r++) {
		struct tnode *root = NULL;
		for (uint64_t i = 0; i < N; i++) {
			pool[i] = (struct tnode){mix64(i ^ (r << 20)), NULL, NULL};
			root = tree_insert(root, &pool[i]);
		}
		s += tree_sum(root, 1);
	}
	return s;
}

/* ---- test_threads: Mandelbrot tiles on 4 threads ---- */

/* n pixels of tile t (64 x 64 pixels, scanned over and over), up to 256 iterations each. */
NOINLINE static uint64_t mandel_tile(int t, uint64_t n)
{
	enum { W = 64, MAXIT = 256 };
	const double x0 = -0.80 + 0.06 * t, y0 = 0.10 + 0.03 * t, d = 0.004;
	uint64_t total = 0;
	for (uint64_t p = 0; p < n; p++) {
		double cr = x0 + d * (double)(p % W), ci = y0 + d * (double)((p / W) % W);
		double zr = 0, zi = 0;
		int it = 0;
		while (it < MAXIT && zr * zr + zi * zi <= 4.0) {
			double t2 = zr * zr - zi * zi + cr;
			zi = 2 * zr * zi + ci;
			zr = t2;
			it++;
		}
		total += (uint64_t)it;
	}
	return total;
}

/* ---- test_fork, test_exec: steady integer loops in a child and in an exec'd helper ---- */

/* Euclid's gcd of n pairs (a chain of divisions). */
NOINLINE static uint64_t gcd_sum(uint64_t n)
{
	uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t a = i * 2654435761ull + 12345, b = (i * 40503ull + 1) | 1;
		while (b) {
			uint64_t t = a % b;
			a = b;
			b = t;
		}
		s += a;
	}
	return s;
}

/* Integer square roots, digit by digit (16 steps each). */
NOINLINE static uint64_t isqrt_loop(uint64_t n)
{
	uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t v = (uint32_t)(i * 2246822519u + 374761393u), r = 0;
		for (uint32_t bit = 1u << 30; bit; bit >>= 2) {
			if (v >= r + bit) {
				v -= r + bit;
				r = (r >> 1) + bit;
			} else {
				r >>= 1;
			}
		}
		s += r;
	}
	return s;
}

/* Decodes a 4 KiB buffer of mixed UTF-8 (1-4 byte sequences), n times. */
NOINLINE static uint64_t utf8_count(uint64_t n)
{
	enum { N = 4096 };
	static unsigned char buf[N + 4];
	size_t len = 0;
	uint32_t cp = 0x20;
	while (len < N) { /* encode code points of every length */
		cp = (cp * 1103515245u + 12345u) % 0x10ffffu;
		if (cp >= 0xd800 && cp < 0xe000)
			continue;
		uint32_t c = (len / 7) % 3 ? (cp & 0x7f) | 0x20 : cp;
		if (c < 0x80)
			buf[len++] = (unsigned char)c;
		else if (c < 0x800)
			buf[len++] = (unsigned char)(0xc0 | c >> 6),
			buf[len++] = (unsigned char)(0x80 | (c & 63));
		else if (c < 0x10000)
			buf[len++] = (unsigned char)(0xe0 | c >> 12),
			buf[len++] = (unsigned char)(0x80 | ((c >> 6) & 63)),
			buf[len++] = (unsigned char)(0x80 | (c & 63));
		else
			buf[len++] = (unsigned char)(0xf0 | c >> 18),
			buf[len++] = (unsigned char)(0x80 | ((c >> 12) & 63)),
			buf[len++] = (unsigned char)(0x80 | ((c >> 6) & 63)),
			buf[len++] = (unsigned char)(0x80 | (c & 63));
	}
	uint64_t s = 0;
	for (uint64_t r = 0; r < n; r++) {
		size_t i = 0;
		while (i < len) {
			unsigned char b = buf[i];
			uint32_t c;
			if (b < 0x80)
				c = b, i += 1;
			else if (b < 0xe0)
				c = (uint32_t)(b & 31) << 6 | (buf[i + 1] & 63), i += 2;
			else if (b < 0xf0)
				c = (uint32_t)(b & 15) << 12 | (uint32_t)(buf[i + 1] & 63) << 6 |
				    (buf[i + 2] & 63),
				i += 3;
			else
				c = (uint32_t)(b & 7) << 18 | (uint32_t)(buf[i + 1] & 63) << 12 |
				    (uint32_t)(buf[i + 2] & 63) << 6 | (buf[i + 3] & 63),
				i += 4;
			s += c ^ r;
		}
	}
	return s;
}

/* The Luhn check digit of n 16-digit numbers. */
NOINLINE static uint64_t luhn_sum(uint64_t n)
{
	uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = 4000000000000000ull + i * 7919, sum = 0;
		for (int d = 0; d < 16; d++, v /= 10) {
			uint64_t digit = v % 10;
			if (d & 1)
				digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
			sum += digit;
		}
		s += (10 - sum % 10) % 10;
	}
	return s;
}

/* ---- test_buffers: big memmoves and malloc/free churn (time in libc) ---- */

/* n memmoves of nearly 8 MiB, shifting a buffer back and forth by odd offsets. */
NOINLINE static uint64_t memmove_shift(uint64_t n)
{
	enum { N = 8 << 20, MAXOFF = 64 << 10 };
	static unsigned char *buf;
	if (!buf && !(buf = malloc(N)))
		exit(3);
	memset(buf, 0x5a, N);
	uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++) {
		size_t off = 1 + (i * 4099) % MAXOFF;
		if (i & 1)
			memmove(buf, buf + off, N - MAXOFF);
		else
			memmove(buf + off, buf, N - MAXOFF);
		s += buf[(i * 131) % N];
	}
	return s;
}

/* n frees and mallocs of random sizes over 4096 live blocks. */
NOINLINE static uint64_t malloc_churn(uint64_t n)
{
	enum { SLOTS = 4096 };
	static unsigned char *slot[SLOTS];
	uint64_t x = 0x1f123bb5ull, s = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t r = xs64(&x);
		size_t j = r % SLOTS, sz = 16 + (r >> 20) % ((r >> 40) & 1 ? 4096 : 256);
		free(slot[j]);
		if (!(slot[j] = malloc(sz)))
			exit(3);
		slot[j][0] = (unsigned char)i;
		slot[j][sz - 1] = (unsigned char)j;
		s += slot[(j * 17) % SLOTS] ? slot[(j * 17) % SLOTS][0] : 0;
	}
	for (size_t j = 0; j < SLOTS; j++)
		free(slot[j]), slot[j] = NULL;
	return s;
}

/* ---- the tests ---- */

/* Leaf roots: RUN(fn, ms, per_ms) runs fn for about ms milliseconds (per_ms: iterations per
 * millisecond from 'w2 calibrate' on the machine this was written on). Tree roots:
 * TREE(fn, ms, per_ms) runs the tree's root loop, whose inner loops take their own knobs. */
#define RUN(fn, ms, per_ms)  (sink += (uint64_t)fn(iters(#fn, (ms), (per_ms))))
#define TREE(fn, ms, per_ms) (sink += (uint64_t)fn(rounds((ms), (per_ms))))

static void test_digest(void)
{
	TREE(digest_corpus, 630, 56.9);
	RUN(bitrev_permute, 120, 146000);
}

static void test_prng(void)
{
	RUN(xorshift_mix, 120, 516000);
	RUN(mul_hash_chain, 90, 282000);
	RUN(lfsr_steps, 90, 917000);
}

static void test_expr(void)
{
	TREE(eval_expr, 150, 2730);
	RUN(num_roundtrip, 75, 2740);
	RUN(record_qsort, 75, 5.68);
}

static void test_memory(void)
{
	sink += walk_init((uint64_t)((double)rounds(1, WALK_N) * fslow("walk_init")));
	RUN(random_walk, 200, 6200);
	sink += hash_init((uint64_t)((double)rounds(1, HASH_KEYS) * fslow("hash_init")));
	RUN(hash_probe, 75, 28000);
	sink += walk_buf[7] + hash_tab[7];
}

static void test_physics(void)
{
	RUN(nbody_step, 210, 196);
	RUN(fft_radix2, 120, 115);
}

static void test_tree(void)
{
	RUN(collatz_len, 157, 857000);
	TREE(sort_batches, 60, 6.55);
	TREE(tree_run, 60, 1.41);
}

struct tile {
	int t;
	uint64_t n;
};

static void *tile_worker(void *arg)
{
	struct tile *t = arg;
	sink += mandel_tile(t->t, t->n);
	return NULL;
}

static void test_threads(void)
{
	pthread_t th[4];
	struct tile tl[4];
	for (int i = 0; i < 4; i++) {
		tl[i] = (struct tile){i, iters("mandel_tile", 60, 1638)};
		if (pthread_create(&th[i], NULL, tile_worker, &tl[i]))
			exit(3);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
}

static void test_fork(void)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		exit(3);
	if (pid == 0) {
		RUN(gcd_sum, 90, 14700);
		_exit(0);
	}
	RUN(isqrt_loop, 60, 19700);
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
	set_knobs();
	RUN(utf8_count, 80, 589);
	RUN(luhn_sum, 50, 40500);
}

static void test_buffers(void)
{
	RUN(memmove_shift, 105, 4.8);
	RUN(malloc_churn, 75, 16000);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
        {"test_digest", test_digest},   {"test_prng", test_prng},       {"test_expr", test_expr},
        {"test_memory", test_memory},   {"test_physics", test_physics}, {"test_tree", test_tree},
        {"test_threads", test_threads}, {"test_fork", test_fork},       {"test_exec", test_exec},
        {"test_buffers", test_buffers},
};

/* The 4 threads' tiles, one after the other, n pixels each (for calibrate). */
static uint64_t mandel_tiles(uint64_t n)
{
	uint64_t s = 0;
	for (int t = 0; t < 4; t++)
		s += mandel_tile(t, n / 4);
	return s;
}

/* Prints iterations per millisecond of each root (for the tables above). */
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
		printf("%-16s %12.2f per ms (%.0f ms)\n", #fn, (double)(n) / ms, ms);              \
	} while (0)
	CAL(digest_corpus, 400);
	CAL(bitrev_permute, 5000000);
	CAL(xorshift_mix, 30000000);
	CAL(mul_hash_chain, 10000000);
	CAL(lfsr_steps, 30000000);
	CAL(eval_expr, 20000);
	CAL(num_roundtrip, 100000);
	CAL(record_qsort, 100);
	CAL(walk_init, WALK_N);
	CAL(random_walk, 2000000);
	CAL(hash_init, HASH_KEYS);
	CAL(hash_probe, 2000000);
	CAL(nbody_step, 10000);
	CAL(fft_radix2, 3000);
	CAL(collatz_len, 30000000);
	CAL(sort_batches, 200);
	CAL(tree_run, 50);
	CAL(mandel_tiles, 200000);
	CAL(gcd_sum, 300000);
	CAL(isqrt_loop, 1000000);
	CAL(utf8_count, 5000);
	CAL(luhn_sum, 1000000);
	CAL(memmove_shift, 100);
	CAL(malloc_churn, 1000000);
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
		fprintf(stderr, "usage: w2 TEST | list | calibrate | helper\n");
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
			set_knobs();
			tests[i].fn();
			return 0;
		}
	fprintf(stderr, "w2: no test %s\n", argv[1]);
	return 2;
}
