/* bench/verdicts' fourth workload, of a shape none of ../workload, ../workload2 and ../workload3
 * has, and never tuned on: 24 CTest tests, most of them short (60-180 ms of CPU, 1.4-4 % of the
 * suite each), six longer (the FFT and word-count tests about 10 % each, the three bigint tests
 * 7-8 % each, the Bloom filter 5 %), over about 100 functions whose hot leaves sit 2-6 frames
 * under their test function, more through recursion (modular powers and linear recurrences
 * recurse once per exponent bit, about 40-48 frames; a merge sort, a glob matcher, a calculator
 * and a JSON parser by recursive descent, a sudoku solver). Kinds of code w3.c has not:
 * schoolbook bigint multiplication with a pseudo-Mersenne reduction, decimal printing by
 * division, a Q15 FIR filter and biquads, linear interpolation, an iterative radix-2 FFT on
 * doubles, a chained hash map of malloc'd nodes, a Bloom filter over 64 MiB, a UTF-8 decoder
 * and tokenizer, LZ77 with hash chains, a binary-heap event simulation, a backtracking glob
 * matcher, LU decomposition, Boyer-Moore-Horspool search, a nibble trie, calendar arithmetic,
 * LEB128 varints and Conway's life. test_workers runs 4 threads on the 2 cores (two compress,
 * two simulate); nothing forks or execs. About 4.3 CPU-seconds per suite run (ctest -j2) at
 * VB_SCALE=1.
 *
 * Knobs in the environment, the same as the other workloads':
 *
 *   VB_SCALE=F            all work times F (default 1)
 *   VB_SLOW_FUNC=NAME     with VB_SLOW_PCT=P: function NAME does P % more of its own work,
 *                         wherever it is called
 *   VB_SLOW_TEST=NAME     with VB_SLOW_TEST_PCT=P: everything test NAME does, P % more
 *   VB_SLOW_ALL=P         everything, P % more
 *
 * VB_SCALE, VB_SLOW_TEST and VB_SLOW_ALL scale the unit count of each test's root (in
 * test_workers, of each thread's). VB_SLOW_FUNC scales what a leaf itself does, through a pacer
 * at its call site: the samples, keys or queries of a call (fir_q15, biquad_cascade, lerp_q15,
 * bloom_add, bloom_probe), or its repetitions (a call's whole work done again on the same input:
 * bn_mul_school, bn_fold, fft_window, fft_bitrev, fft_radix2, fft_power, utf8_decode, tok_scan,
 * tok_hash, lz_longest_match, merge_runs, life_row, bmh_count, varint_encode, varint_decode), or
 * the calls its caller makes (glob_match, with glob_class; calc_eval, with parse_expr, parse_term
 * and parse_primary). bn_mul_school and fir_q15, the planted functions, are slowed at every call
 * site: bn_mul_school under bn_mulmod in test_bn_powmod, test_bn_fib and test_bn_poly, fir_q15
 * under audio_block (test_audio) and polyphase_block (test_resample). Every other function has no
 * knob of its own (the pass-through frames, the recursive families not named above, the
 * malloc-heavy code, heap_push, heap_pop, lu_factor and the like); bloom_init always zeroes the
 * whole 64 MiB.
 *
 * Shares of the suite's CPU time (three runs of ciprof run -- ctest --test-dir build -j2, built
 * as bench/verdicts/run.py builds it, and ciprof show, self time, about 4300 samples at 1 kHz
 * each, on the 2-core AMD EPYC VM this was written on): bn_mul_school 21.0-21.4 %, fft_radix2
 * 7.5-7.8, fir_q15 4.5-4.9, lz_longest_match 3.5-3.7, heap_pop 3.5-3.7, bloom_probe 2.7-3.7,
 * sudoku_pick 2.6-2.8, glob_match, bmh_count, life_row, merge_runs and libc's strcmp 2.0-2.6
 * each, then smaller leaves and libc (qsort's msort, malloc/free, strtod, strspn/strcspn);
 * per test (threads included): test_wordfreq 10.0-10.3 %, test_fft 9.4-9.6, test_bn_powmod
 * 7.7-8.2, test_bn_fib 7.5-7.8, test_bn_poly 7.1-7.4, test_bloom 5.2-5.4, test_lz77 4.0-4.1,
 * test_workers 3.9-4.0, test_audio 3.7-3.8, test_utf8, test_calc, test_sudoku, test_mergesort,
 * test_events and test_json 2.9-3.8 each, test_resample, test_glob, test_trie, test_solve,
 * test_search, test_life and test_bn_print 2.1-2.8, test_varint 1.7, test_dates 1.4-1.5.
 * With VB_SLOW_FUNC=fir_q15 VB_SLOW_PCT=50, fir_q15 took 304 samples against 194-210 in the
 * three runs (x1.5); with bn_mul_school at +50 %, 1378 against 901-920 (x1.5). Code the knob
 * does not touch moved up to 10 % in those two runs (lz_longest_match 171 and 173 samples
 * against 149-158, fft_radix2 317 and 359 against 327-332), more than between the three
 * identical runs: a longer test changes which tests share the two cores under ctest -j2.
 *
 * The planted items (planted.json):
 *
 *   FUNC5    = fir_q15        a steady 32-tap Q15 FIR loop on L1-resident samples, about 5 %,
 *                             in two tests (test_audio and test_resample)
 *   FUNC20   = bn_mul_school  a steady 32x32-limb schoolbook multiply (registers and L1),
 *                             about 21 %, in three tests, under bn_mulmod and recursion
 *   TEST10   = test_fft       floating-point loops (window, bit reversal, butterflies,
 *                             power spectrum), about 10 %; neither planted function is in it.
 *                             Written as the steady test, it is not: over 56 main runs of a
 *                             bench session its share had a median of 9.7 % and 10 runs at
 *                             10.7-13.5 %, and ciprof report judges it swinging (noise_cv
 *                             0.10; docs/benchmarks.md, "workload4's tests")
 *   TEST10S  = test_wordfreq  swinging malloc- and libc-heavy code (a chained hash map of
 *                             malloc'd nodes, strspn/strcspn, memcmp, qsort with strcmp),
 *                             about 10 %
 *   MEMBOUND = bloom_probe    six independent random reads a query over a 64 MiB bit array,
 *                             2.7-3.7 %
 *
 * Usage: w4 TEST (one of tests[] below), w4 list, or w4 calibrate. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline, noclone)) /* each its own frame, under its own name */

static volatile uint64_t sink;
static const char *cur_test = "";
static double g_scale = 1.0; /* VB_SCALE x VB_SLOW_TEST (when it names cur_test) x VB_SLOW_ALL */

static double pct_factor(const char *pct)
{
	double f = 1 + atof(pct) / 100;
	return f > 0 ? f : 0;
}

/* Reads the knobs that scale everything cur_test does. */
static void knobs_load(void)
{
	const char *s = getenv("VB_SCALE"), *tn = getenv("VB_SLOW_TEST");
	const char *tp = getenv("VB_SLOW_TEST_PCT"), *all = getenv("VB_SLOW_ALL");
	double f = s ? atof(s) : 1.0;
	if (!(f > 0))
		f = 1.0;
	if (tn && tp && !strcmp(tn, cur_test))
		f *= pct_factor(tp);
	if (all)
		f *= pct_factor(all);
	g_scale = f;
}

/* 1 + VB_SLOW_PCT/100 when fn is VB_SLOW_FUNC, else 1. */
static double func_factor(const char *fn)
{
	const char *name = getenv("VB_SLOW_FUNC"), *pct = getenv("VB_SLOW_PCT");
	return name && pct && !strcmp(name, fn) ? pct_factor(pct) : 1.0;
}

/* Units of a root for about ms milliseconds at rate per_ms (units per millisecond, from
 * 'w4 calibrate'), times the knobs that scale the whole test. The leaves under it take their
 * own knobs per call (pacers). */
static uint64_t root_units(double ms, double per_ms)
{
	uint64_t n = (uint64_t)(ms * per_ms * g_scale + 0.5);
	return n ? n : 1;
}

/* Per-call amounts averaging per_call x fn's factor with no drift: 1.1 gives 1, 1, ..., 2. */
struct pacer {
	double step, carry;
};

static struct pacer pacer_for(const char *fn, double per_call)
{
	return (struct pacer){per_call * func_factor(fn), 0.5};
}

static inline uint64_t pace(struct pacer *p)
{
	p->carry += p->step;
	uint64_t k = (uint64_t)p->carry;
	p->carry -= (double)k;
	return k;
}

static inline uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "w4: out of memory\n");
		exit(3);
	}
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (!p) {
		fprintf(stderr, "w4: out of memory\n");
		exit(3);
	}
	return p;
}

static void fail(const char *what)
{
	fprintf(stderr, "w4: %s: %s\n", cur_test, what);
	exit(1);
}

/* ---- shared inputs: a vocabulary of made-up words, and text made of them ---- */

enum { VOCAB = 4096, WMAX = 24 };

static char vocab[VOCAB][WMAX];
static uint8_t vocab_len[VOCAB];

static void vocab_init(void)
{
	static const char *const syl[] = {"ka", "lo",  "mi",  "ne", "ru", "sa", "to",
	                                  "vi", "zen", "qua", "th", "an", "er", "on",
	                                  "es", "ti",  "ra",  "de", "po", "li"};
	if (vocab_len[0])
		return;
	for (uint64_t id = 0; id < VOCAB; id++) {
		uint64_t s = id * 0x2545f4914f6cdd1dull + 1;
		int nsyl = 1 + (int)(splitmix(&s) % 4) + (id > 64);
		size_t len = 0;
		for (int k = 0; k < nsyl; k++) {
			const char *y = syl[splitmix(&s) % 20];
			size_t l = strlen(y);
			memcpy(vocab[id] + len, y, l);
			len += l;
		}
		vocab[id][len] = 0;
		vocab_len[id] = (uint8_t)len;
	}
}

/* A word id below n, log-uniformly distributed: a few words are very common (Zipf-like). */
static uint32_t zipf_id(uint64_t *seed, uint32_t n)
{
	double u = (double)(splitmix(seed) >> 11) * 0x1p-53;
	uint32_t id = (uint32_t)(exp(u * log((double)n + 1)) - 1);
	return id < n ? id : n - 1;
}

/* len bytes of text: words (one in four a compound of two), sentences of 6-17 words starting
 * with a capital, commas, a newline every few sentences. NUL-terminated, malloc'd. */
static char *text_gen(size_t len, uint64_t seed)
{
	char *t = xmalloc(len + 64);
	size_t n = 0;
	int inword = 0, cap = 1;
	while (n < len) {
		uint64_t r = splitmix(&seed);
		uint32_t a = zipf_id(&seed, VOCAB);
		size_t at = n;
		memcpy(t + n, vocab[a], vocab_len[a]);
		n += vocab_len[a];
		if ((r & 3) == 0) {
			uint32_t b = (uint32_t)(r >> 8) % VOCAB;
			memcpy(t + n, vocab[b], vocab_len[b]);
			n += vocab_len[b];
		}
		if (cap)
			t[at] = (char)(t[at] - 'a' + 'A');
		cap = 0;
		if (++inword >= 6 + (int)(r >> 20) % 12) {
			inword = 0;
			cap = 1;
			t[n++] = '.';
			t[n++] = (r >> 40) % 4 ? ' ' : '\n';
		} else {
			if ((r >> 32) % 9 == 0)
				t[n++] = ',';
			t[n++] = ' ';
		}
	}
	t[len] = 0;
	return t;
}

/* ---- bigint: 1024-bit numbers of 32-bit limbs, modulo p = 2^1024 - BN_C ---- */

enum { BN = 32, BN_C = 1719 };

typedef struct {
	uint32_t l[BN];
} bn;

static struct pacer p_mul, p_fold; /* repetitions per product, per reduction */

static void bn_pacers(void)
{
	p_mul = pacer_for("bn_mul_school", 1);
	p_fold = pacer_for("bn_fold", 1);
}

static void bn_rand(bn *x, uint64_t *seed)
{
	for (size_t i = 0; i < BN; i += 2) {
		uint64_t r = splitmix(seed);
		x->l[i] = (uint32_t)r;
		x->l[i + 1] = (uint32_t)(r >> 32);
	}
}

/* r (2n limbs) = a b, schoolbook, reps times (the knob's extra products are the same one):
 * a carry chain of 32x32->64 multiply-adds on L1-resident limbs. */
NOINLINE static void bn_mul_school(uint32_t *restrict r, const uint32_t *a, const uint32_t *b,
                                   size_t n, uint64_t reps)
{
	uint64_t k = 0;
	do {
		uint64_t carry = 0;
		for (size_t j = 0; j < n; j++) {
			uint64_t t = (uint64_t)a[0] * b[j] + carry;
			r[j] = (uint32_t)t;
			carry = t >> 32;
		}
		r[n] = (uint32_t)carry;
		for (size_t i = 1; i < n; i++) {
			carry = 0;
			for (size_t j = 0; j < n; j++) {
				uint64_t t = (uint64_t)a[i] * b[j] + r[i + j] + carry;
				r[i + j] = (uint32_t)t;
				carry = t >> 32;
			}
			r[i + n] = (uint32_t)carry;
		}
	} while (++k < reps);
}

/* r = t (2 BN limbs) reduced below 2^1024 using 2^1024 = BN_C (mod p), reps times. */
NOINLINE static void bn_fold(uint32_t *restrict r, const uint32_t *restrict t, uint64_t reps)
{
	uint64_t k = 0;
	do {
		uint64_t carry = 0;
		for (size_t i = 0; i < BN; i++) {
			uint64_t v = (uint64_t)t[BN + i] * BN_C + t[i] + carry;
			r[i] = (uint32_t)v;
			carry = v >> 32;
		}
		while (carry) {
			uint64_t v = carry * BN_C;
			size_t i = 0;
			for (; i < BN && v; i++) {
				v += r[i];
				r[i] = (uint32_t)v;
				v >>= 32;
			}
			carry = v;
		}
	} while (++k < reps);
}

NOINLINE static void bn_mulmod(bn *r, const bn *a, const bn *b)
{
	uint32_t t[2 * BN];
	bn_mul_school(t, a->l, b->l, BN, pace(&p_mul));
	bn_fold(r->l, t, pace(&p_fold));
}

NOINLINE static void bn_addmod(bn *r, const bn *a, const bn *b)
{
	uint64_t c = 0;
	for (size_t i = 0; i < BN; i++) {
		c += (uint64_t)a->l[i] + b->l[i];
		r->l[i] = (uint32_t)c;
		c >>= 32;
	}
	while (c) {
		uint64_t v = c * BN_C;
		size_t i = 0;
		for (; i < BN && v; i++) {
			v += r->l[i];
			r->l[i] = (uint32_t)v;
			v >>= 32;
		}
		c = v;
	}
}

/* r = base^e mod p, the top bit of e first: one frame per bit of e. */
NOINLINE static void bn_pow_rec(bn *r, const bn *base, uint64_t e)
{
	if (!e) {
		memset(r, 0, sizeof(*r));
		r->l[0] = 1;
		return;
	}
	bn_pow_rec(r, base, e >> 1);
	bn_mulmod(r, r, r);
	if (e & 1)
		bn_mulmod(r, r, base);
}

/* n modular powers of random bases to random 48-bit exponents. */
NOINLINE static uint64_t powmod_batch(uint64_t n)
{
	uint64_t seed = 101, s = 0;
	bn b, r;
	for (uint64_t k = 0; k < n; k++) {
		bn_rand(&b, &seed);
		uint64_t e = splitmix(&seed) >> 16 | 1ull << 47;
		bn_pow_rec(&r, &b, e);
		s += r.l[k % BN];
	}
	return s;
}

struct bm2 {
	bn a, b, c, d;
};

/* r = x y, 2x2 matrices of residues. */
NOINLINE static void bn_mat2_mul(struct bm2 *r, const struct bm2 *x, const struct bm2 *y)
{
	struct bm2 o;
	bn t1, t2;
	bn_mulmod(&t1, &x->a, &y->a);
	bn_mulmod(&t2, &x->b, &y->c);
	bn_addmod(&o.a, &t1, &t2);
	bn_mulmod(&t1, &x->a, &y->b);
	bn_mulmod(&t2, &x->b, &y->d);
	bn_addmod(&o.b, &t1, &t2);
	bn_mulmod(&t1, &x->c, &y->a);
	bn_mulmod(&t2, &x->d, &y->c);
	bn_addmod(&o.c, &t1, &t2);
	bn_mulmod(&t1, &x->c, &y->b);
	bn_mulmod(&t2, &x->d, &y->d);
	bn_addmod(&o.d, &t1, &t2);
	*r = o;
}

/* m = q^n: the n-th term of a linear recurrence (Fibonacci's, for q = [1 1; 1 0]). */
NOINLINE static void bn_linrec(struct bm2 *m, const struct bm2 *q, uint64_t n)
{
	if (!n) {
		memset(m, 0, sizeof(*m));
		m->a.l[0] = m->d.l[0] = 1;
		return;
	}
	bn_linrec(m, q, n >> 1);
	bn_mat2_mul(m, m, m);
	if (n & 1)
		bn_mat2_mul(m, m, q);
}

/* n terms of random recurrences at random 40-bit indices; every 4th is Fibonacci's. */
NOINLINE static uint64_t fib_batch(uint64_t n)
{
	uint64_t seed = 202, s = 0;
	struct bm2 q, m;
	for (uint64_t k = 0; k < n; k++) {
		if (k % 4) {
			bn_rand(&q.a, &seed);
			bn_rand(&q.b, &seed);
			bn_rand(&q.c, &seed);
			bn_rand(&q.d, &seed);
		} else {
			memset(&q, 0, sizeof(q));
			q.a.l[0] = q.b.l[0] = q.c.l[0] = 1;
		}
		bn_linrec(&m, &q, splitmix(&seed) >> 24);
		s += m.b.l[k % BN];
	}
	return s;
}

enum { POLY_DEG = 40 };

static bn poly_coef[POLY_DEG + 1];

/* r = the polynomial at x, by Horner's rule. */
NOINLINE static void bn_poly_eval(bn *r, const bn *coef, int deg, const bn *x)
{
	*r = coef[deg];
	for (int i = deg - 1; i >= 0; i--) {
		bn_mulmod(r, r, x);
		bn_addmod(r, r, &coef[i]);
	}
}

/* n evaluations of a degree-40 polynomial at random points. */
NOINLINE static uint64_t poly_batch(uint64_t n)
{
	uint64_t seed = 303, s = 0;
	for (int i = 0; i <= POLY_DEG; i++)
		bn_rand(&poly_coef[i], &seed);
	bn x, r;
	for (uint64_t k = 0; k < n; k++) {
		bn_rand(&x, &seed);
		bn_poly_eval(&r, poly_coef, POLY_DEG, &x);
		s += r.l[k % BN];
	}
	return s;
}

/* q (n limbs) /= d in place; returns the remainder. */
NOINLINE static uint32_t bn_divmod_small(uint32_t *q, size_t n, uint32_t d)
{
	uint64_t rem = 0;
	for (size_t i = n; i--;) {
		uint64_t cur = rem << 32 | q[i];
		q[i] = (uint32_t)(cur / d);
		rem = cur % d;
	}
	return (uint32_t)rem;
}

/* x in decimal into out (at least 320 bytes); returns its length. */
NOINLINE static size_t bn_to_dec(char *out, const bn *x)
{
	uint32_t t[BN];
	char rev[BN * 10 + 16];
	size_t n = BN, len = 0;
	memcpy(t, x->l, sizeof(t));
	while (n && !t[n - 1])
		n--;
	while (n) {
		uint32_t r = bn_divmod_small(t, n, 1000000000u);
		while (n && !t[n - 1])
			n--;
		for (int k = 0; k < 9; k++) {
			rev[len++] = (char)('0' + r % 10);
			r /= 10;
		}
	}
	while (len > 1 && rev[len - 1] == '0')
		len--;
	if (!len)
		rev[len++] = '0';
	for (size_t i = 0; i < len; i++)
		out[i] = rev[len - 1 - i];
	out[len] = 0;
	return len;
}

/* n random numbers printed in decimal. */
NOINLINE static uint64_t print_batch(uint64_t n)
{
	uint64_t seed = 404, s = 0;
	char buf[BN * 10 + 16];
	bn x;
	for (uint64_t k = 0; k < n; k++) {
		bn_rand(&x, &seed);
		if (k & 1)
			memset(x.l + BN / 2, 0, sizeof(x.l) / 2); /* some half as long */
		size_t len = bn_to_dec(buf, &x);
		s += len + (unsigned char)buf[len / 2];
	}
	return s;
}

/* ---- fixed-point and floating-point signal processing ---- */

enum { SIG = 1 << 13, FIR_TAPS = 32, BLOCK = 256, OUT_N = 1 << 12 };

static int16_t sig16[SIG + FIR_TAPS]; /* a ring, its first FIR_TAPS samples again at its end */
static int16_t fir_h[FIR_TAPS];
static double sigd[SIG];

static void dsp_init(void)
{
	uint64_t seed = 31;
	double ph = 0, h[FIR_TAPS], sum = 0;
	for (int i = 0; i < SIG; i++) {
		ph += 0.01 + 0.2 * i / SIG;
		double v = 0.6 * sin(ph) + 0.2 * ((double)(splitmix(&seed) % 2001) / 1000.0 - 1.0);
		sigd[i] = v;
		sig16[i] = (int16_t)lrint(v * 32000);
	}
	memcpy(sig16 + SIG, sig16, FIR_TAPS * sizeof(sig16[0]));
	for (int k = 0; k < FIR_TAPS; k++) { /* a windowed-sinc lowpass */
		double x = k - (FIR_TAPS - 1) / 2.0;
		h[k] = sin(0.5 * M_PI * x) / (0.5 * M_PI * x) *
		       (0.54 - 0.46 * cos(2 * M_PI * k / (FIR_TAPS - 1)));
		sum += h[k];
	}
	for (int k = 0; k < FIR_TAPS; k++)
		fir_h[k] = (int16_t)lrint(h[k] / sum * 30000);
}

/* n output samples of the Q15 FIR filter over sig16 from at (wrapping), into the ring out:
 * 32 multiply-adds a sample, saturated. */
NOINLINE static uint64_t fir_q15(int16_t *out, const int16_t *x, size_t at, const int16_t *h,
                                 uint64_t n)
{
	uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++) {
		const int16_t *xi = x + ((at + i) & (SIG - 1));
		int32_t acc = 1 << 14;
		for (int k = 0; k < FIR_TAPS; k++)
			acc += xi[k] * h[k];
		acc >>= 15;
		if (acc > 32767)
			acc = 32767;
		if (acc < -32768)
			acc = -32768;
		out[i & (OUT_N - 1)] = (int16_t)acc;
		s += (uint16_t)acc;
	}
	return s;
}

enum { BQ_SECTIONS = 4 };

struct biquad {
	double b0, b1, b2, a1, a2, z1, z2;
};

/* n samples of sigd from at (wrapping) through four biquad sections (transposed direct form
 * II), into the ring out. */
NOINLINE static double biquad_cascade(double *out, struct biquad *bq, size_t at, uint64_t n)
{
	double s = 0;
	for (uint64_t i = 0; i < n; i++) {
		double v = sigd[(at + i) & (SIG - 1)];
		for (int k = 0; k < BQ_SECTIONS; k++) {
			struct biquad *q = &bq[k];
			double y = q->b0 * v + q->z1;
			q->z1 = q->b1 * v - q->a1 * y + q->z2;
			q->z2 = q->b2 * v - q->a2 * y;
			v = y;
		}
		out[i & (OUT_N - 1)] = v;
		s += v;
	}
	return s;
}

struct audio {
	int16_t out16[OUT_N];
	double outd[OUT_N];
	struct biquad bq[BQ_SECTIONS];
	struct pacer pfir, pbq;
};

/* One block: the FIR lowpass and the IIR cascade over it. */
NOINLINE static uint64_t audio_block(struct audio *a, uint64_t blk)
{
	size_t at = (size_t)(blk * BLOCK) & (SIG - 1);
	uint64_t s = fir_q15(a->out16, sig16, at, fir_h, pace(&a->pfir));
	s += (uint64_t)(int64_t)(biquad_cascade(a->outd, a->bq, at, pace(&a->pbq)) * 1e3);
	return s;
}

/* blocks x (one audio block). */
NOINLINE static uint64_t audio_run(uint64_t blocks)
{
	struct audio *a = xcalloc(1, sizeof(*a));
	for (int k = 0; k < BQ_SECTIONS; k++) /* stable low-pass sections, poles at radius 0.9 */
		a->bq[k] =
		        (struct biquad){0.02 + 0.01 * k, 0.04, 0.02, -1.6 + 0.05 * k, 0.81, 0, 0};
	a->pfir = pacer_for("fir_q15", 4 * BLOCK);
	a->pbq = pacer_for("biquad_cascade", BLOCK / 2);
	uint64_t s = 0;
	for (uint64_t b = 0; b < blocks; b++)
		s += audio_block(a, b);
	free(a);
	return s;
}

/* n samples at a fractional step (Q16) through the ring x from at, linearly interpolated. */
NOINLINE static uint64_t lerp_q15(int16_t *out, const int16_t *x, size_t at, uint32_t step,
                                  uint64_t n)
{
	uint64_t s = 0, pos = (uint64_t)at << 16;
	for (uint64_t i = 0; i < n; i++, pos += step) {
		size_t j = (size_t)(pos >> 16) & (SIG - 1);
		int32_t f = (int32_t)(pos & 0xffff);
		int32_t y = x[j] + (((x[j + 1] - x[j]) * f) >> 16);
		out[i & (OUT_N - 1)] = (int16_t)y;
		s += (uint16_t)y;
	}
	return s;
}

struct resampler {
	int16_t mid[OUT_N], out[OUT_N];
	struct pacer pfir, plerp;
	uint32_t step;
};

/* One block of one channel: the anti-alias FIR, then interpolation at 3/2 the rate. */
NOINLINE static uint64_t polyphase_block(struct resampler *r, size_t at)
{
	uint64_t s = fir_q15(r->mid, sig16, at, fir_h, pace(&r->pfir));
	s += lerp_q15(r->out, sig16, at, r->step, pace(&r->plerp));
	return s;
}

NOINLINE static uint64_t resample_channel(struct resampler *r, uint64_t frame, int ch)
{
	uint64_t s = 0;
	for (int half = 0; half < 2; half++)
		s += polyphase_block(
		        r, (size_t)(frame * 2 * BLOCK + (size_t)half * BLOCK + (size_t)ch * 977) &
		                   (SIG - 1));
	return s;
}

/* frames x (two channels of two blocks each). */
NOINLINE static uint64_t resample_run(uint64_t frames)
{
	struct resampler *r = xcalloc(1, sizeof(*r));
	r->pfir = pacer_for("fir_q15", 2 * BLOCK);
	r->plerp = pacer_for("lerp_q15", BLOCK);
	r->step = 43691; /* 2/3 in Q16 */
	uint64_t s = 0;
	for (uint64_t f = 0; f < frames; f++)
		for (int ch = 0; ch < 2; ch++)
			s += resample_channel(r, f, ch);
	free(r);
	return s;
}

/* ---- test_fft: an iterative radix-2 FFT of 1024 doubles ---- */

enum { FFT_LOG = 10, FFT_N = 1 << FFT_LOG };

static double tw_re[FFT_N / 2], tw_im[FFT_N / 2], hann[FFT_N];
static uint16_t bitrev[FFT_N];

static void fft_init(void)
{
	for (int k = 0; k < FFT_N / 2; k++) {
		tw_re[k] = cos(2 * M_PI * k / FFT_N);
		tw_im[k] = -sin(2 * M_PI * k / FFT_N);
	}
	for (int i = 0; i < FFT_N; i++) {
		hann[i] = 0.5 - 0.5 * cos(2 * M_PI * i / (FFT_N - 1));
		unsigned r = 0;
		for (int b = 0; b < FFT_LOG; b++)
			r |= (unsigned)(i >> b & 1) << (FFT_LOG - 1 - b);
		bitrev[i] = (uint16_t)r;
	}
}

/* The frame from at: sigd windowed into re, a shifted copy of it into im; reps times. */
NOINLINE static void fft_window(double *re, double *im, size_t at, uint64_t reps)
{
	uint64_t k = 0;
	do {
		for (size_t i = 0; i < FFT_N; i++) {
			re[i] = sigd[(at + i) & (SIG - 1)] * hann[i];
			im[i] = sigd[(at + i + 37) & (SIG - 1)] * hann[i] * 0.25;
		}
	} while (++k < reps);
}

/* The bit-reversal permutation, reps times. */
NOINLINE static void fft_bitrev(double *re, double *im, uint64_t reps)
{
	uint64_t k = 0;
	do {
		for (size_t i = 0; i < FFT_N; i++) {
			size_t j = bitrev[i];
			if (i < j) {
				double t = re[i];
				re[i] = re[j];
				re[j] = t;
				t = im[i];
				im[i] = im[j];
				im[j] = t;
			}
		}
	} while (++k < reps);
}

/* The butterflies of all ten stages, in place, reps times. */
NOINLINE static void fft_radix2(double *re, double *im, uint64_t reps)
{
	uint64_t r = 0;
	do {
		for (size_t len = 2; len <= FFT_N; len <<= 1) {
			size_t half = len / 2, step = FFT_N / len;
			for (size_t i = 0; i < FFT_N; i += len)
				for (size_t k = 0; k < half; k++) {
					double wr = tw_re[k * step], wi = tw_im[k * step];
					size_t a = i + k, b = a + half;
					double tr = re[b] * wr - im[b] * wi;
					double ti = re[b] * wi + im[b] * wr;
					re[b] = re[a] - tr;
					im[b] = im[a] - ti;
					re[a] += tr;
					im[a] += ti;
				}
		}
	} while (++r < reps);
}

/* Total power and the loudest bin of the spectrum's lower half, reps times. */
NOINLINE static double fft_power(const double *re, const double *im, uint64_t reps)
{
	double tot = 0, best = -1;
	size_t arg = 0;
	for (uint64_t r = 0; r < reps || !r; r++)
		for (size_t i = (size_t)(r & 1); i < FFT_N / 2; i++) {
			double p = re[i] * re[i] + im[i] * im[i];
			tot += p;
			if (p > best) {
				best = p;
				arg = i;
			}
		}
	return tot + (double)arg;
}

struct spectrum {
	double re[FFT_N], im[FFT_N];
	struct pacer pwin, prev, pfft, ppow;
};

NOINLINE static void fft_forward(struct spectrum *sp)
{
	fft_bitrev(sp->re, sp->im, pace(&sp->prev));
	fft_radix2(sp->re, sp->im, pace(&sp->pfft));
}

NOINLINE static double spectrum_frame(struct spectrum *sp, uint64_t frame)
{
	fft_window(sp->re, sp->im, (size_t)(frame * 300) & (SIG - 1), pace(&sp->pwin));
	fft_forward(sp);
	return fft_power(sp->re, sp->im, pace(&sp->ppow));
}

/* frames x (window, transform, power spectrum). */
NOINLINE static uint64_t spectrum_run(uint64_t frames)
{
	struct spectrum *sp = xmalloc(sizeof(*sp));
	sp->pwin = pacer_for("fft_window", 1);
	sp->prev = pacer_for("fft_bitrev", 1);
	sp->pfft = pacer_for("fft_radix2", 1);
	sp->ppow = pacer_for("fft_power", 1);
	double s = 0;
	for (uint64_t f = 0; f < frames; f++)
		s += spectrum_frame(sp, f);
	free(sp);
	return (uint64_t)(int64_t)s;
}

/* ---- test_wordfreq: word counts in a chained hash map of malloc'd nodes (libc-heavy) ---- */

struct wnode {
	struct wnode *next;
	uint64_t h;
	uint32_t count, len;
	char key[];
};

struct wmap {
	struct wnode **b;
	size_t nb, n;
};

static char *wf_text;
static size_t wf_len;

enum { WF_TEXT = 96 << 10, WF_DOC = 3000 };

/* FNV-1a, 64 bits. */
NOINLINE static uint64_t str_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* Twice the buckets: a new calloc'd table, every node relinked, the old one freed. */
NOINLINE static void wmap_grow(struct wmap *m)
{
	size_t nb = m->nb * 2;
	struct wnode **b = xcalloc(nb, sizeof(*b));
	for (size_t i = 0; i < m->nb; i++)
		for (struct wnode *x = m->b[i], *nx; x; x = nx) {
			nx = x->next;
			x->next = b[x->h & (nb - 1)];
			b[x->h & (nb - 1)] = x;
		}
	free(m->b);
	m->b = b;
	m->nb = nb;
}

/* Counts word w: a new malloc'd node when it is not in the map. */
NOINLINE static void wmap_incr(struct wmap *m, const char *w, size_t len)
{
	uint64_t h = str_hash(w, len);
	struct wnode **pp = &m->b[h & (m->nb - 1)];
	for (struct wnode *x = *pp; x; x = x->next)
		if (x->h == h && x->len == len && !memcmp(x->key, w, len)) {
			x->count++;
			return;
		}
	struct wnode *x = xmalloc(sizeof(*x) + len + 1);
	x->h = h;
	x->count = 1;
	x->len = (uint32_t)len;
	memcpy(x->key, w, len);
	x->key[len] = 0;
	x->next = *pp;
	*pp = x;
	if (++m->n > m->nb)
		wmap_grow(m);
}

/* Counts the words of one document: a lower-cased malloc'd copy, split with strspn/strcspn. */
NOINLINE static uint64_t wf_count_doc(struct wmap *m, const char *doc, size_t len)
{
	char *buf = xmalloc(len + 1);
	uint64_t words = 0;
	memcpy(buf, doc, len);
	buf[len] = 0;
	for (char *p = buf; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	for (char *p = buf; *p;) {
		p += strspn(p, " ,.\n");
		size_t n = strcspn(p, " ,.\n");
		if (n) {
			wmap_incr(m, p, n);
			words++;
		}
		p += n;
	}
	free(buf);
	return words;
}

NOINLINE static int cmp_wcount(const void *pa, const void *pb)
{
	const struct wnode *a = *(const struct wnode *const *)pa,
	                   *b = *(const struct wnode *const *)pb;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->key, b->key);
}

/* The ten most frequent words: every node into a malloc'd array, qsort'ed. */
NOINLINE static uint64_t wf_top(const struct wmap *m)
{
	struct wnode **all = xmalloc(m->n * sizeof(*all));
	size_t k = 0;
	for (size_t i = 0; i < m->nb; i++)
		for (struct wnode *x = m->b[i]; x; x = x->next)
			all[k++] = x;
	qsort(all, k, sizeof(*all), cmp_wcount);
	uint64_t s = k;
	for (size_t i = 0; i < 10 && i < k; i++)
		s = s * 31 + all[i]->count + str_hash(all[i]->key, all[i]->len);
	free(all);
	return s;
}

NOINLINE static void wmap_free(struct wmap *m)
{
	for (size_t i = 0; i < m->nb; i++)
		for (struct wnode *x = m->b[i], *nx; x; x = nx) {
			nx = x->next;
			free(x);
		}
	free(m->b);
}

/* One round: the text as documents of about WF_DOC bytes into a fresh map, its top ten. */
NOINLINE static uint64_t wf_round(uint64_t r)
{
	struct wmap m = {xcalloc(256, sizeof(struct wnode *)), 256, 0};
	uint64_t s = 0;
	size_t at = (size_t)(r * 7919) % WF_DOC; /* each round cut elsewhere */
	s += wf_count_doc(&m, wf_text, at);
	while (at < wf_len) {
		size_t end = at + WF_DOC < wf_len ? at + WF_DOC : wf_len;
		while (end < wf_len && wf_text[end] != ' ')
			end++;
		s += wf_count_doc(&m, wf_text + at, end - at);
		at = end;
	}
	s += wf_top(&m);
	wmap_free(&m);
	return s;
}

NOINLINE static uint64_t wf_run(uint64_t rounds)
{
	uint64_t s = 0;
	for (uint64_t r = 0; r < rounds; r++)
		s += wf_round(r);
	return s;
}

static void wf_init(void)
{
	vocab_init();
	wf_text = text_gen(WF_TEXT, 77);
	wf_len = WF_TEXT;
}

/* ---- test_bloom: a Bloom filter over 64 MiB (memory-bound) ---- */

enum { BLOOM_LOG = 29, BLOOM_K = 6, BLOOM_BATCH = 4096 }; /* 2^29 bits */

static uint64_t *bloom_bits;

/* The whole 64 MiB, zeroed page by page (whatever the knobs: probes must not read untouched
 * pages). */
NOINLINE static void bloom_init(void)
{
	size_t bytes = (size_t)1 << (BLOOM_LOG - 3);
	bloom_bits = xmalloc(bytes);
	memset(bloom_bits, 0, bytes);
}

static inline void bloom_hashes(uint64_t key, uint64_t *h1, uint64_t *h2)
{
	uint64_t s = key * 0x9e3779b97f4a7c15ull;
	*h1 = splitmix(&s);
	*h2 = splitmix(&s) | 1;
}

/* Adds keys first .. first + n - 1: six random bits each. */
NOINLINE static void bloom_add(uint64_t first, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t h1, h2;
		bloom_hashes(first + i, &h1, &h2);
		for (int k = 0; k < BLOOM_K; k++) {
			uint64_t bit = (h1 + (uint64_t)k * h2) >> (64 - BLOOM_LOG);
			bloom_bits[bit >> 6] |= 1ull << (bit & 63);
		}
	}
}

/* n queries, half of keys added so far (below added), half of keys never added: each reads
 * all six bits (independent cache misses). Returns how many said yes. */
NOINLINE static uint64_t bloom_probe(uint64_t seed, uint64_t added, uint64_t n)
{
	uint64_t yes = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t r = splitmix(&seed);
		uint64_t key = r & 1 ? (r >> 1) % added : (r >> 1) | 1ull << 62;
		uint64_t h1, h2, all = 1;
		bloom_hashes(key, &h1, &h2);
		for (int k = 0; k < BLOOM_K; k++) {
			uint64_t bit = (h1 + (uint64_t)k * h2) >> (64 - BLOOM_LOG);
			all &= bloom_bits[bit >> 6] >> (bit & 63);
		}
		yes += all & 1;
	}
	return yes;
}

/* batches x (add a batch of keys, query two batches' worth). */
NOINLINE static uint64_t bloom_run(uint64_t batches)
{
	struct pacer padd = pacer_for("bloom_add", BLOOM_BATCH);
	struct pacer pprobe = pacer_for("bloom_probe", 2 * BLOOM_BATCH);
	uint64_t added = 0, s = 0;
	for (uint64_t b = 0; b < batches; b++) {
		uint64_t n = pace(&padd);
		bloom_add(added, n);
		added += n;
		s += bloom_probe(b * 0x632be59bd9b4e019ull, added ? added : 1, pace(&pprobe));
	}
	return s;
}

/* ---- test_utf8: a UTF-8 decoder and a tokenizer over mixed-script text ---- */

enum { UT_DOCS = 12, UT_LINES = 40, UT_LINE_MAX = 512 };

static uint8_t *ut_text;
static size_t ut_doc[UT_DOCS + 1];

static size_t utf8_put(uint8_t *o, uint32_t c)
{
	if (c < 0x80) {
		o[0] = (uint8_t)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (uint8_t)(0xc0 | c >> 6);
		o[1] = (uint8_t)(0x80 | (c & 63));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (uint8_t)(0xe0 | c >> 12);
		o[1] = (uint8_t)(0x80 | (c >> 6 & 63));
		o[2] = (uint8_t)(0x80 | (c & 63));
		return 3;
	}
	o[0] = (uint8_t)(0xf0 | c >> 18);
	o[1] = (uint8_t)(0x80 | (c >> 12 & 63));
	o[2] = (uint8_t)(0x80 | (c >> 6 & 63));
	o[3] = (uint8_t)(0x80 | (c & 63));
	return 4;
}

/* One item of the text at o (its length returned): a word in one of five scripts (ASCII half
 * the time, sometimes capitalised), a number, an emoji, a punctuation mark, now and then a
 * malformed sequence (an overlong slash, a stray continuation byte, a truncated sequence), or
 * nothing. */
static size_t ut_item(uint8_t *o, uint64_t *seed)
{
	static const uint32_t base[] = {'a', 0xe0, 0x3b1, 0x430, 0x4e00};
	static const uint32_t span[] = {26, 31, 25, 32, 20000};
	static const uint8_t bad[][3] = {{0xc0, 0xaf, 0}, {0x80, 0, 0}, {0xe4, 0xb8, 0}};
	uint64_t r = splitmix(seed);
	int kind = (int)(r % 16);
	size_t n = 0;
	if (kind < 10) {
		int sc = kind < 5 ? 0 : kind - 5;
		int len = 2 + (int)(r >> 8) % 7;
		for (int k = 0; k < len; k++) {
			uint32_t c = base[sc] + (uint32_t)(splitmix(seed) % span[sc]);
			if (c == 0xf7)
				c = 0xe9;
			if (!k && (r >> 20 & 3) == 0 && sc < 4)
				c -= 0x20; /* the capital, in each of these four scripts */
			n += utf8_put(o + n, c);
		}
	} else if (kind < 12) {
		for (int k = 0; k < 1 + (int)(r >> 8) % 6; k++)
			o[n++] = (uint8_t)('0' + (r >> (12 + 4 * k)) % 10);
	} else if (kind == 12) {
		n += utf8_put(o, 0x1f600 + (uint32_t)(r >> 8) % 80);
	} else if (kind == 13) {
		o[n++] = (uint8_t) ",.;:!?()"[(r >> 8) % 8];
	} else if (kind == 14 && (r >> 8) % 16 == 0) {
		const uint8_t *b = bad[(r >> 12) % 3];
		for (int k = 0; k < 3 && b[k]; k++)
			o[n++] = b[k];
	}
	return n;
}

/* UT_DOCS documents of UT_LINES lines of items separated by spaces. */
static void ut_init(void)
{
	size_t n = 0;
	uint64_t seed = 55;
	ut_text = xmalloc((size_t)UT_DOCS * UT_LINES * UT_LINE_MAX);
	for (int d = 0; d < UT_DOCS; d++) {
		ut_doc[d] = n;
		for (int l = 0; l < UT_LINES; l++) {
			size_t start = n;
			while (n - start < UT_LINE_MAX - 40) {
				n += ut_item(ut_text + n, &seed);
				ut_text[n++] = ' ';
			}
			ut_text[n++] = '\n';
		}
	}
	ut_doc[UT_DOCS] = n;
}

/* s decoded into code points (U+FFFD for each malformed sequence), reps times. */
NOINLINE static size_t utf8_decode(uint32_t *out, const uint8_t *s, size_t len, uint64_t reps)
{
	size_t n = 0;
	uint64_t r = 0;
	do {
		n = 0;
		for (size_t i = 0; i < len;) {
			uint32_t c = s[i];
			if (c < 0x80) {
				out[n++] = c;
				i++;
				continue;
			}
			size_t need;
			uint32_t min;
			if ((c & 0xe0) == 0xc0) {
				need = 1;
				c &= 0x1f;
				min = 0x80;
			} else if ((c & 0xf0) == 0xe0) {
				need = 2;
				c &= 0x0f;
				min = 0x800;
			} else if ((c & 0xf8) == 0xf0) {
				need = 3;
				c &= 0x07;
				min = 0x10000;
			} else {
				out[n++] = 0xfffd;
				i++;
				continue;
			}
			size_t k = 1;
			for (; k <= need && i + k < len; k++) {
				uint32_t b = s[i + k];
				if ((b & 0xc0) != 0x80)
					break;
				c = c << 6 | (b & 0x3f);
			}
			if (k <= need || c < min || c > 0x10ffff || (c >= 0xd800 && c < 0xe000)) {
				out[n++] = 0xfffd;
				i += k;
				continue;
			}
			out[n++] = c;
			i += need + 1;
		}
	} while (++r < reps);
	return n;
}

enum { C_SPACE, C_LETTER, C_DIGIT, C_SINGLE };

static inline int cp_class(uint32_t c)
{
	if (c == ' ' || c == '\t' || c == '\n')
		return C_SPACE;
	if (c >= '0' && c <= '9')
		return C_DIGIT;
	if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
		return C_LETTER;
	if ((c >= 0xc0 && c <= 0x24f && c != 0xd7 && c != 0xf7) || (c >= 0x391 && c <= 0x3c9) ||
	    (c >= 0x400 && c <= 0x44f))
		return C_LETTER;
	return C_SINGLE; /* ideographs, emoji, punctuation, U+FFFD: a token each */
}

/* Token boundaries (start, length pairs into tok) of n code points, reps times: runs of
 * letters and digits are tokens, every other non-space character is one. */
NOINLINE static size_t tok_scan(uint32_t *tok, const uint32_t *cp, size_t n, uint64_t reps)
{
	size_t nt = 0;
	uint64_t r = 0;
	do {
		nt = 0;
		for (size_t i = 0; i < n;) {
			int c = cp_class(cp[i]);
			if (c == C_SPACE) {
				i++;
				continue;
			}
			size_t j = i + 1;
			if (c != C_SINGLE)
				while (j < n &&
				       (cp_class(cp[j]) == C_LETTER || cp_class(cp[j]) == C_DIGIT))
					j++;
			tok[2 * nt] = (uint32_t)i;
			tok[2 * nt + 1] = (uint32_t)(j - i);
			nt++;
			i = j;
		}
	} while (++r < reps);
	return nt;
}

static inline uint32_t cp_fold(uint32_t c)
{
	if ((c >= 'A' && c <= 'Z') || (c >= 0xc0 && c <= 0xde && c != 0xd7) ||
	    (c >= 0x391 && c <= 0x3a9) || (c >= 0x410 && c <= 0x42f))
		return c + 0x20;
	return c;
}

/* The case-folded FNV hash of each token, xor'ed together, reps times. */
NOINLINE static uint64_t tok_hash(const uint32_t *cp, const uint32_t *tok, size_t nt, uint64_t reps)
{
	uint64_t x = 0;
	for (uint64_t r = 0; r < reps || !r; r++)
		for (size_t t = 0; t < nt; t++) {
			uint64_t h = 0xcbf29ce484222325ull + r;
			for (uint32_t i = tok[2 * t], e = i + tok[2 * t + 1]; i < e; i++)
				h = (h ^ cp_fold(cp[i])) * 0x100000001b3ull;
			x ^= h;
		}
	return x;
}

struct tokenizer {
	uint32_t cp[UT_LINE_MAX], tok[2 * UT_LINE_MAX];
	struct pacer pdec, pscan, phash;
};

NOINLINE static uint64_t tok_line(struct tokenizer *t, const uint8_t *s, size_t len)
{
	size_t n = utf8_decode(t->cp, s, len, pace(&t->pdec));
	size_t nt = tok_scan(t->tok, t->cp, n, pace(&t->pscan));
	return tok_hash(t->cp, t->tok, nt, pace(&t->phash)) + nt;
}

NOINLINE static uint64_t tok_document(struct tokenizer *t, size_t d)
{
	uint64_t s = 0;
	const uint8_t *p = ut_text + ut_doc[d], *end = ut_text + ut_doc[d + 1];
	while (p < end) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		s = s * 3 + tok_line(t, p, (size_t)(nl - p));
		p = nl + 1;
	}
	return s;
}

/* docs x (one document tokenized, line by line). */
NOINLINE static uint64_t tok_run(uint64_t docs)
{
	struct tokenizer *t = xmalloc(sizeof(*t));
	t->pdec = pacer_for("utf8_decode", 1);
	t->pscan = pacer_for("tok_scan", 1);
	t->phash = pacer_for("tok_hash", 1);
	uint64_t s = 0;
	for (uint64_t d = 0; d < docs; d++)
		s += tok_document(t, d % UT_DOCS);
	free(t);
	return s;
}

/* ---- test_lz77 (and two of test_workers' threads): LZ77 with hash chains ---- */

enum {
	LZ_HBITS = 14,
	LZ_CHUNK = 1 << 14, /* each chunk compressed on its own: every match is within it */
	LZ_MINM = 4,
	LZ_MAXM = 255,
	LZ_CHAIN = 24,
	LZ_TEXT = 16 * LZ_CHUNK
};

static char *lz_text;

struct lz {
	int32_t head[1 << LZ_HBITS];
	int32_t prev[LZ_CHUNK];
	uint32_t tok[LZ_CHUNK];
	uint8_t dec[LZ_CHUNK];
	struct pacer pm;
};

static inline uint32_t lz_hash4(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return (v * 2654435761u) >> (32 - LZ_HBITS);
}

/* The longest earlier match of buf + pos (at most LZ_CHAIN candidates down its hash chain),
 * its distance into *dist; reps times. */
NOINLINE static uint32_t lz_longest_match(const struct lz *z, const uint8_t *buf, size_t pos,
                                          size_t end, uint32_t *dist, uint64_t reps)
{
	size_t best = 0, bd = 0, maxl = end - pos < LZ_MAXM ? end - pos : LZ_MAXM;
	uint64_t r = 0;
	do {
		best = 0;
		int chain = LZ_CHAIN;
		for (int32_t cand = z->head[lz_hash4(buf + pos)]; cand >= 0 && chain--;
		     cand = z->prev[cand]) {
			const uint8_t *a = buf + cand, *b = buf + pos;
			if (a[best] != b[best])
				continue;
			size_t l = 0;
			while (l < maxl && a[l] == b[l])
				l++;
			if (l > best) {
				best = l;
				bd = pos - (size_t)cand;
				if (l == maxl)
					break;
			}
		}
	} while (++r < reps);
	*dist = (uint32_t)bd;
	return (uint32_t)best;
}

static inline void lz_insert(struct lz *z, const uint8_t *buf, size_t pos)
{
	uint32_t h = lz_hash4(buf + pos);
	z->prev[pos] = z->head[h];
	z->head[h] = (int32_t)pos;
}

/* Greedy parse of len bytes into tokens: literals, and 0x80000000 | length << 16 | distance. */
NOINLINE static size_t lz_compress_block(struct lz *z, const uint8_t *buf, size_t len)
{
	size_t pos = 0, n = 0;
	while (pos < len) {
		uint32_t dist = 0, l = 0;
		if (len - pos >= LZ_MINM)
			l = lz_longest_match(z, buf, pos, len, &dist, pace(&z->pm));
		if (l >= LZ_MINM) {
			z->tok[n++] = 0x80000000u | l << 16 | dist;
			for (size_t k = 0; k < l; k++)
				if (len - (pos + k) >= 4)
					lz_insert(z, buf, pos + k);
			pos += l;
		} else {
			z->tok[n++] = buf[pos];
			if (len - pos >= 4)
				lz_insert(z, buf, pos);
			pos++;
		}
	}
	return n;
}

NOINLINE static size_t lz_decode(uint8_t *out, const uint32_t *tok, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t t = tok[i];
		if (!(t & 0x80000000u)) {
			out[o++] = (uint8_t)t;
			continue;
		}
		size_t l = t >> 16 & 0xff, d = t & 0xffff;
		for (size_t k = 0; k < l; k++, o++)
			out[o] = out[o - d];
	}
	return o;
}

/* One chunk compressed from fresh tables; returns the token count. */
NOINLINE static size_t lz_compress(struct lz *z, const uint8_t *buf, size_t len)
{
	memset(z->head, 0xff, sizeof(z->head));
	return lz_compress_block(z, buf, len);
}

/* chunks x (compress a 16 KiB chunk of the text, decode it, check it), from chunk first. */
NOINLINE static uint64_t lz_run(uint64_t chunks, uint64_t first)
{
	struct lz *z = xmalloc(sizeof(*z));
	z->pm = pacer_for("lz_longest_match", 1);
	uint64_t s = 0;
	for (uint64_t c = 0; c < chunks; c++) {
		const uint8_t *buf =
		        (const uint8_t *)lz_text + ((first + c) % (LZ_TEXT / LZ_CHUNK)) * LZ_CHUNK;
		size_t n = lz_compress(z, buf, LZ_CHUNK);
		if (lz_decode(z->dec, z->tok, n) != LZ_CHUNK || memcmp(z->dec, buf, LZ_CHUNK))
			fail("lz77 round trip");
		s += n;
	}
	free(z);
	return s;
}

static void lz_init(void)
{
	vocab_init();
	lz_text = text_gen(LZ_TEXT, 88);
}

/* ---- test_events (and two of test_workers' threads): a binary-heap event simulation ---- */

enum { EV_ENT = 8192, EV_STATIONS = 64, EV_BATCH = 1024 };

struct ev {
	double t;
	uint32_t who, kind;
};

struct evheap {
	struct ev *a;
	size_t n;
};

NOINLINE static void heap_push(struct evheap *h, struct ev e)
{
	size_t i = h->n++;
	while (i) {
		size_t p = (i - 1) / 2;
		if (h->a[p].t <= e.t)
			break;
		h->a[i] = h->a[p];
		i = p;
	}
	h->a[i] = e;
}

NOINLINE static struct ev heap_pop(struct evheap *h)
{
	struct ev top = h->a[0], e = h->a[--h->n];
	size_t i = 0, n = h->n;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && h->a[c + 1].t < h->a[c].t)
			c++;
		if (e.t <= h->a[c].t)
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	if (n)
		h->a[i] = e;
	return top;
}

struct sim {
	struct evheap q;
	uint64_t seed, served, dropped;
	double busy[EV_STATIONS];
};

/* Handles one event: an arrival is served when its station is free, then the entity's next
 * event (an exponential delay) goes back on the heap. */
NOINLINE static void sim_dispatch(struct sim *s, struct ev e)
{
	double u = (double)((splitmix(&s->seed) >> 11) + 1) * 0x1p-53;
	double d = -log(u) * (1.0 + (e.who & 7));
	uint32_t st = (e.who * 2654435761u >> 8) % EV_STATIONS;
	if (e.kind == 0) {
		if (s->busy[st] <= e.t) {
			s->busy[st] = e.t + 0.3 * d;
			s->served++;
		} else {
			s->dropped++;
		}
	}
	heap_push(&s->q, (struct ev){e.t + d, e.who, (e.kind + (uint32_t)(u * 3)) % 3});
}

NOINLINE static uint64_t sim_events(struct sim *s, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		sim_dispatch(s, heap_pop(&s->q));
	return s->served;
}

/* batches x (EV_BATCH events) of a hold model of EV_ENT entities. */
NOINLINE static uint64_t events_run(uint64_t batches, uint64_t seed)
{
	struct sim *s = xcalloc(1, sizeof(*s));
	s->q.a = xmalloc(EV_ENT * sizeof(struct ev));
	s->seed = seed;
	for (uint32_t i = 0; i < EV_ENT; i++)
		heap_push(&s->q, (struct ev){(double)(splitmix(&s->seed) % 100000) / 1000.0, i, 0});
	uint64_t r = 0;
	for (uint64_t b = 0; b < batches; b++)
		r += sim_events(s, EV_BATCH);
	r += s->dropped;
	free(s->q.a);
	free(s);
	return r;
}

/* ---- test_glob: a backtracking wildcard matcher over paths ---- */

enum { NPATHS = 1024 };

static char paths[NPATHS][64];

static const char *const globs[] = {
        "src/*/*.c",   "*test*",    "*/*_[0-9]*.h",           "lib/?o*/*",  "*a*e*i*o*u*",
        "*[!a-m]*.py", "docs/*.md", "*/*/*_1?.[ch]",          "*ka*lo*mi*", "build/*.o",
        "*zen*",       "*.[hc]",    "*/[a-d]*/*[0-9][0-9].*", "*s*r*c*",    "t*/*/*.?"};

enum { NGLOBS = sizeof(globs) / sizeof(globs[0]) };

static void paths_init(void)
{
	static const char *const top[] = {"src", "lib", "test", "docs", "tools", "build"};
	static const char *const sub[] = {"net", "core", "util",  "io",
	                                  "gfx", "db",   "alpha", "coder"};
	static const char *const ext[] = {".c", ".h", ".py", ".md", ".txt", ".o"};
	uint64_t seed = 66;
	vocab_init();
	for (int i = 0; i < NPATHS; i++) {
		uint64_t r = splitmix(&seed);
		uint32_t w = zipf_id(&seed, VOCAB);
		if (r & 1)
			snprintf(paths[i], sizeof(paths[i]), "%s/%s/%s_%u%s", top[(r >> 1) % 6],
			         sub[(r >> 8) % 8], vocab[w], (unsigned)(r >> 16) % 40,
			         ext[(r >> 24) % 6]);
		else
			snprintf(paths[i], sizeof(paths[i]), "%s/%s%s", top[(r >> 1) % 6], vocab[w],
			         ext[(r >> 24) % 6]);
	}
}

/* A bracket class at p ('['), against c: the pointer to its ']' when c is in it, else NULL. */
NOINLINE static const char *glob_class(const char *p, unsigned char c)
{
	int neg = 0, hit = 0;
	p++;
	if (*p == '!') {
		neg = 1;
		p++;
	}
	do {
		unsigned char lo = (unsigned char)*p, hi = lo;
		if (p[1] == '-' && p[2] && p[2] != ']') {
			hi = (unsigned char)p[2];
			p += 2;
		}
		if (lo <= c && c <= hi)
			hit = 1;
		p++;
	} while (*p && *p != ']');
	return hit != neg ? p : NULL;
}

/* Whether s matches pattern p (* ? [...] [!...]): each * tries every split, recursively. */
NOINLINE static int glob_match(const char *p, const char *s, uint64_t *steps)
{
	++*steps;
	for (;; p++, s++) {
		switch (*p) {
		case 0:
			return !*s;
		case '*':
			while (p[1] == '*')
				p++;
			for (;; s++) {
				if (glob_match(p + 1, s, steps))
					return 1;
				if (!*s)
					return 0;
			}
		case '?':
			if (!*s)
				return 0;
			break;
		case '[':
			if (!*s || !(p = glob_class(p, (unsigned char)*s)))
				return 0;
			break;
		default:
			if (*p != *s)
				return 0;
		}
	}
}

/* Paths matching pattern g. */
NOINLINE static uint64_t glob_filter(const char *g, struct pacer *pm, uint64_t *steps)
{
	uint64_t m = 0;
	for (int i = 0; i < NPATHS; i++)
		for (uint64_t k = pace(pm); k; k--)
			m += (uint64_t)glob_match(g, paths[i], steps);
	return m;
}

/* filters x (one pattern against every path). */
NOINLINE static uint64_t glob_suite(uint64_t filters)
{
	struct pacer pm = pacer_for("glob_match", 1);
	uint64_t s = 0, steps = 0;
	for (uint64_t f = 0; f < filters; f++)
		s = s * 7 + glob_filter(globs[f % NGLOBS], &pm, &steps);
	return s + steps;
}

/* ---- test_calc: a recursive-descent parser evaluating arithmetic ---- */

enum { NEXPR = 256, EXPR_MAX = 400 };

static char exprs[NEXPR][EXPR_MAX];

static void calc_gen(char *o, size_t *n, uint64_t *seed, int depth)
{
	uint64_t r = splitmix(seed);
	if (*n > EXPR_MAX - 60)
		depth = 0;
	if (!depth || r % 5 == 0) {
		if (r >> 8 & 1)
			*n += (size_t)snprintf(o + *n, EXPR_MAX - *n, "%c",
			                       'a' + (int)((r >> 16) % 26));
		else
			*n += (size_t)snprintf(o + *n, EXPR_MAX - *n, "%u",
			                       (unsigned)(r >> 16) % 10000);
		return;
	}
	if (r % 13 == 1) {
		*n += (size_t)snprintf(o + *n, EXPR_MAX - *n, "-(");
		calc_gen(o, n, seed, depth - 1);
		*n += (size_t)snprintf(o + *n, EXPR_MAX - *n, ")");
		return;
	}
	int paren = (r >> 40 & 3) != 0;
	if (paren)
		o[(*n)++] = '(';
	calc_gen(o, n, seed, depth - 1);
	*n += (size_t)snprintf(o + *n, EXPR_MAX - *n, " %c ", "+-*/%+*"[(r >> 30) % 7]);
	calc_gen(o, n, seed, depth - 1);
	if (paren)
		o[(*n)++] = ')';
	o[*n] = 0;
}

static void calc_init(void)
{
	uint64_t seed = 44;
	for (int i = 0; i < NEXPR; i++) {
		size_t n = 0;
		calc_gen(exprs[i], &n, &seed, 7);
	}
}

struct calc {
	const char *p;
	const uint64_t *var;
	uint64_t *steps;
};

static inline void calc_ws(struct calc *c)
{
	while (*c->p == ' ')
		c->p++;
}

NOINLINE static uint64_t parse_expr(struct calc *c);

NOINLINE static uint64_t parse_primary(struct calc *c)
{
	++*c->steps;
	calc_ws(c);
	char ch = *c->p;
	if (ch == '(') {
		c->p++;
		uint64_t v = parse_expr(c);
		calc_ws(c);
		if (*c->p == ')')
			c->p++;
		return v;
	}
	if (ch == '-') {
		c->p++;
		return -parse_primary(c);
	}
	if (ch >= 'a' && ch <= 'z') {
		c->p++;
		return c->var[ch - 'a'];
	}
	uint64_t v = 0;
	while (*c->p >= '0' && *c->p <= '9')
		v = v * 10 + (uint64_t)(*c->p++ - '0');
	return v;
}

NOINLINE static uint64_t parse_term(struct calc *c)
{
	uint64_t v = parse_primary(c);
	for (;;) {
		calc_ws(c);
		char op = *c->p;
		if (op != '*' && op != '/' && op != '%')
			return v;
		c->p++;
		uint64_t w = parse_primary(c);
		if (op == '*') {
			v *= w;
		} else {
			w = w ? w : 1;
			v = op == '/' ? v / w : v % w;
		}
	}
}

NOINLINE static uint64_t parse_expr(struct calc *c)
{
	uint64_t v = parse_term(c);
	for (;;) {
		calc_ws(c);
		char op = *c->p;
		if (op != '+' && op != '-')
			return v;
		c->p++;
		uint64_t w = parse_term(c);
		v = op == '+' ? v + w : v - w;
	}
}

NOINLINE static uint64_t calc_eval(const char *text, const uint64_t *var, uint64_t *steps)
{
	struct calc c = {text, var, steps};
	return parse_expr(&c);
}

/* n expressions evaluated, a variable changing between them. */
NOINLINE static uint64_t calc_run(uint64_t n)
{
	struct pacer pe = pacer_for("calc_eval", 1);
	uint64_t var[26], seed = 45, s = 0, steps = 0;
	for (int i = 0; i < 26; i++)
		var[i] = splitmix(&seed) % 1000;
	for (uint64_t k = 0; k < n; k++) {
		var[k % 26] = splitmix(&seed) % 100000;
		for (uint64_t r = pace(&pe); r; r--)
			s += calc_eval(exprs[k % NEXPR], var, &steps);
	}
	return s + steps;
}

/* ---- test_mergesort: a recursive merge sort ---- */

enum { SORT_N = 1 << 14 };

NOINLINE static void insertion_sort(uint32_t *a, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint32_t v = a[i];
		size_t j = i;
		for (; j && a[j - 1] > v; j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
}

/* dst = the merge of sorted a and b, reps times. */
NOINLINE static void merge_runs(uint32_t *restrict dst, const uint32_t *a, size_t na,
                                const uint32_t *b, size_t nb, uint64_t reps)
{
	uint64_t r = 0;
	do {
		size_t i = 0, j = 0, k = 0;
		while (i < na && j < nb)
			dst[k++] = b[j] < a[i] ? b[j++] : a[i++];
		while (i < na)
			dst[k++] = a[i++];
		while (j < nb)
			dst[k++] = b[j++];
	} while (++r < reps);
}

NOINLINE static void msort_rec(uint32_t *a, uint32_t *tmp, size_t n, struct pacer *pm)
{
	if (n <= 16) {
		insertion_sort(a, n);
		return;
	}
	size_t h = n / 2;
	msort_rec(a, tmp, h, pm);
	msort_rec(a + h, tmp + h, n - h, pm);
	merge_runs(tmp, a, h, a + h, n - h, pace(pm));
	memcpy(a, tmp, n * sizeof(*a));
}

/* sorts x (fill SORT_N keys, some in ascending runs, and sort them). */
NOINLINE static uint64_t sort_run(uint64_t sorts)
{
	uint32_t *a = xmalloc(SORT_N * sizeof(*a)), *tmp = xmalloc(SORT_N * sizeof(*a));
	struct pacer pm = pacer_for("merge_runs", 1);
	uint64_t s = 0;
	for (uint64_t r = 0; r < sorts; r++) {
		uint64_t seed = r + 1;
		for (size_t i = 0; i < SORT_N; i++)
			a[i] = i % 64 < 16 ? (uint32_t)(i * 1000 + r) : (uint32_t)splitmix(&seed);
		msort_rec(a, tmp, SORT_N, &pm);
		for (size_t i = 1; i < SORT_N; i += 997)
			if (a[i - 1] > a[i])
				fail("merge sort");
		s += a[r % SORT_N];
	}
	free(a);
	free(tmp);
	return s;
}

/* ---- test_solve: LU decomposition with partial pivoting ---- */

enum { LU_N = 48 };

NOINLINE static void lu_factor(double *a, int *piv)
{
	for (int k = 0; k < LU_N; k++) {
		int p = k;
		double best = fabs(a[k * LU_N + k]);
		for (int i = k + 1; i < LU_N; i++)
			if (fabs(a[i * LU_N + k]) > best) {
				best = fabs(a[i * LU_N + k]);
				p = i;
			}
		piv[k] = p;
		if (p != k)
			for (int j = 0; j < LU_N; j++) {
				double t = a[k * LU_N + j];
				a[k * LU_N + j] = a[p * LU_N + j];
				a[p * LU_N + j] = t;
			}
		double inv = 1.0 / a[k * LU_N + k];
		for (int i = k + 1; i < LU_N; i++) {
			double f = a[i * LU_N + k] *= inv;
			for (int j = k + 1; j < LU_N; j++)
				a[i * LU_N + j] -= f * a[k * LU_N + j];
		}
	}
}

NOINLINE static void lu_solve(const double *lu, const int *piv, double *b)
{
	for (int k = 0; k < LU_N; k++) {
		double t = b[k];
		b[k] = b[piv[k]];
		b[piv[k]] = t;
	}
	for (int i = 1; i < LU_N; i++)
		for (int j = 0; j < i; j++)
			b[i] -= lu[i * LU_N + j] * b[j];
	for (int i = LU_N - 1; i >= 0; i--) {
		for (int j = i + 1; j < LU_N; j++)
			b[i] -= lu[i * LU_N + j] * b[j];
		b[i] /= lu[i * LU_N + i];
	}
}

NOINLINE static double residual_norm(const double *a, const double *x, const double *b)
{
	double worst = 0;
	for (int i = 0; i < LU_N; i++) {
		double r = -b[i];
		for (int j = 0; j < LU_N; j++)
			r += a[i * LU_N + j] * x[j];
		if (fabs(r) > worst)
			worst = fabs(r);
	}
	return worst;
}

struct lsys {
	double a[LU_N * LU_N], lu[LU_N * LU_N], b[LU_N], x[LU_N];
	int piv[LU_N];
};

/* System k: a random matrix, factored, solved for three right-hand sides and checked. */
NOINLINE static double solve_system(struct lsys *s, uint64_t k)
{
	uint64_t seed = k * 0x9e3779b97f4a7c15ull + 9;
	double res = 0;
	for (int i = 0; i < LU_N * LU_N; i++)
		s->a[i] = (double)(splitmix(&seed) % 20001) / 10000.0 - 1.0;
	memcpy(s->lu, s->a, sizeof(s->a));
	lu_factor(s->lu, s->piv);
	for (int r = 0; r < 3; r++) {
		for (int i = 0; i < LU_N; i++)
			s->b[i] = s->x[i] = (double)(splitmix(&seed) % 2001) / 1000.0;
		lu_solve(s->lu, s->piv, s->x);
		res += residual_norm(s->a, s->x, s->b);
	}
	return res;
}

NOINLINE static uint64_t solve_run(uint64_t n)
{
	struct lsys *s = xmalloc(sizeof(*s));
	double res = 0;
	for (uint64_t k = 0; k < n; k++)
		res += solve_system(s, k);
	free(s);
	if (!(res < 1e-3 * (double)n + 1))
		fail("LU residual");
	return (uint64_t)(res * 1e12);
}

/* ---- test_search: Boyer-Moore-Horspool substring search ---- */

enum { NPAT = 24 };

static char search_pat[NPAT][32];

static void search_init(void)
{
	lz_init();
	for (int k = 0; k < NPAT; k++) {
		size_t len = 3 + (size_t)k % 20, at = ((size_t)k * 7919 * 13) % (LZ_TEXT - 32);
		memcpy(search_pat[k], lz_text + at, len);
		search_pat[k][len] = 0;
	}
}

NOINLINE static void bmh_table(size_t *skip, const uint8_t *pat, size_t m)
{
	for (int c = 0; c < 256; c++)
		skip[c] = m;
	for (size_t i = 0; i + 1 < m; i++)
		skip[pat[i]] = m - 1 - i;
}

/* Occurrences of pat in t, reps times (each pass starting a byte apart). */
NOINLINE static uint64_t bmh_count(const uint8_t *t, size_t n, const uint8_t *pat, size_t m,
                                   const size_t *skip, uint64_t reps)
{
	uint64_t total = 0;
	for (uint64_t r = 0; r < reps || !r; r++) {
		uint64_t found = 0;
		for (size_t i = (size_t)(r & 1); i + m <= n;) {
			uint8_t c = t[i + m - 1];
			if (c == pat[m - 1]) {
				size_t j = 0;
				while (j + 1 < m && t[i + j] == pat[j])
					j++;
				found += j + 1 == m;
			}
			i += skip[c];
		}
		total = found;
	}
	return total;
}

NOINLINE static uint64_t search_corpus(const char *pat, struct pacer *pb)
{
	size_t skip[256], m = strlen(pat);
	bmh_table(skip, (const uint8_t *)pat, m);
	return bmh_count((const uint8_t *)lz_text, LZ_TEXT, (const uint8_t *)pat, m, skip,
	                 pace(pb));
}

/* n searches of the 256 KiB text, each for one of the patterns. */
NOINLINE static uint64_t search_run(uint64_t n)
{
	struct pacer pb = pacer_for("bmh_count", 1);
	uint64_t s = 0;
	for (uint64_t k = 0; k < n; k++)
		s = s * 3 + search_corpus(search_pat[k % NPAT], &pb);
	return s;
}

/* ---- test_json: a recursive-descent JSON parser building a tree of malloc'd nodes ---- */

enum { NJDOC = 6 };

enum { J_NUM, J_STR, J_ARR, J_OBJ, J_LIT };

struct jv {
	struct jv *kid, *next;
	char *key, *str;
	double num;
	int t;
};

struct jp {
	const char *p;
	uint64_t nodes;
};

static char *jdocs[NJDOC];

struct jbuf {
	char *s;
	size_t n, cap;
};

static void jput(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void jput(struct jbuf *b, const char *fmt, ...)
{
	va_list ap;
	if (b->cap - b->n < 256) {
		b->cap *= 2;
		b->s = realloc(b->s, b->cap);
		if (!b->s)
			exit(3);
	}
	va_start(ap, fmt);
	b->n += (size_t)vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
	va_end(ap);
}

static void json_gen(struct jbuf *b, uint64_t *seed, int depth)
{
	uint64_t r = splitmix(seed);
	int kind = depth ? (int)(r % 8) : 3 + (int)(r % 5);
	switch (kind) {
	case 0:
	case 1:
	case 2: {
		int obj = kind != 2, n = 2 + (int)(r >> 8) % 5;
		jput(b, obj ? "{" : "[");
		for (int i = 0; i < n; i++) {
			if (obj) {
				uint32_t w = zipf_id(seed, VOCAB);
				jput(b, "%s\"%s\": ", i ? ", " : "", vocab[w]);
			} else if (i) {
				jput(b, ", ");
			}
			json_gen(b, seed, depth - 1);
		}
		jput(b, obj ? "}" : "]");
		break;
	}
	case 3:
	case 4: {
		uint32_t w = zipf_id(seed, VOCAB), v = zipf_id(seed, VOCAB);
		jput(b, "\"%s%s%s\"", vocab[w], r >> 20 & 1 ? " \\\"q\\\" \\u00e9 " : "\\n",
		     vocab[v]);
		break;
	}
	case 5:
		jput(b, "%.4f", (double)(int64_t)(r >> 24) / 1e9 - 5000.0);
		break;
	case 6:
		jput(b, "%d", (int)(r >> 40) % 100000);
		break;
	default:
		jput(b, "%s", r >> 30 & 1 ? "true" : r >> 31 & 1 ? "false" : "null");
	}
}

static void json_init(void)
{
	uint64_t seed = 21;
	vocab_init();
	for (int d = 0; d < NJDOC; d++) {
		struct jbuf b = {xmalloc(4096), 0, 4096};
		jput(&b, "[");
		for (int i = 0; i < 24; i++) {
			if (i)
				jput(&b, ",\n");
			json_gen(&b, &seed, 5);
		}
		jput(&b, "]");
		jdocs[d] = b.s;
	}
}

static inline void jws(struct jp *p)
{
	while (*p->p == ' ' || *p->p == '\n' || *p->p == '\t' || *p->p == '\r')
		p->p++;
}

/* A string at p ('"'), unescaped into a malloc'd copy. */
NOINLINE static char *json_string(struct jp *p)
{
	const char *s = ++p->p;
	size_t n = 0;
	while (s[n] && s[n] != '"')
		n += s[n] == '\\' && s[n + 1] ? 2 : 1;
	char *o = xmalloc(n + 1), *w = o;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c != '\\') {
			*w++ = c;
			continue;
		}
		c = s[++i];
		if (c == 'n')
			*w++ = '\n';
		else if (c == 't')
			*w++ = '\t';
		else if (c == 'u' && i + 4 < n) {
			unsigned v = (unsigned)strtoul(
			        (char[5]){s[i + 1], s[i + 2], s[i + 3], s[i + 4], 0}, NULL, 16);
			w += utf8_put((uint8_t *)w, v ? v : '?');
			i += 4;
		} else {
			*w++ = c;
		}
	}
	*w = 0;
	p->p = s + n + (s[n] == '"');
	return o;
}

NOINLINE static struct jv *json_value(struct jp *p)
{
	struct jv *v = xcalloc(1, sizeof(*v));
	p->nodes++;
	jws(p);
	char c = *p->p;
	if (c == '{' || c == '[') {
		struct jv **tail = &v->kid;
		char close = c == '{' ? '}' : ']';
		v->t = c == '{' ? J_OBJ : J_ARR;
		p->p++;
		jws(p);
		while (*p->p && *p->p != close) {
			char *key = NULL;
			if (v->t == J_OBJ) {
				key = json_string(p);
				jws(p);
				if (*p->p == ':')
					p->p++;
			}
			struct jv *k = json_value(p);
			k->key = key;
			*tail = k;
			tail = &k->next;
			jws(p);
			if (*p->p == ',')
				p->p++;
			jws(p);
		}
		if (*p->p)
			p->p++;
	} else if (c == '"') {
		v->t = J_STR;
		v->str = json_string(p);
	} else if (c == 't' || c == 'f' || c == 'n') {
		v->t = J_LIT;
		v->num = c == 't';
		while (*p->p >= 'a' && *p->p <= 'z')
			p->p++;
	} else {
		char *end;
		v->t = J_NUM;
		v->num = strtod(p->p, &end);
		if (end == p->p)
			fail("json syntax");
		p->p = end;
	}
	return v;
}

NOINLINE static double json_sum(const struct jv *v)
{
	double s =
	        v->num + (v->str ? (double)strlen(v->str) : 0) + (v->key ? (double)v->key[0] : 0);
	for (const struct jv *k = v->kid; k; k = k->next)
		s += json_sum(k);
	return s;
}

NOINLINE static void json_free(struct jv *v)
{
	for (struct jv *k = v->kid, *nk; k; k = nk) {
		nk = k->next;
		json_free(k);
	}
	free(v->key);
	free(v->str);
	free(v);
}

NOINLINE static double json_parse_doc(const char *text)
{
	struct jp p = {text, 0};
	struct jv *v = json_value(&p);
	double s = json_sum(v) + (double)p.nodes;
	json_free(v);
	return s;
}

/* n documents parsed into trees, summed and freed. */
NOINLINE static uint64_t json_run(uint64_t n)
{
	double s = 0;
	for (uint64_t k = 0; k < n; k++)
		s += json_parse_doc(jdocs[k % NJDOC]);
	return (uint64_t)(int64_t)s;
}

/* ---- test_life: Conway's game of life on a 256 x 128 torus ---- */

enum { LW = 256, LH = 128 };

static uint8_t life_g[2][LH][LW];

/* Row y of the next generation, reps times; returns its live cells. */
NOINLINE static uint64_t life_row(uint8_t (*dst)[LW], uint8_t (*src)[LW], int y, uint64_t reps)
{
	const uint8_t *up = src[(y + LH - 1) % LH], *me = src[y], *dn = src[(y + 1) % LH];
	uint8_t *o = dst[y];
	uint64_t alive = 0;
	for (uint64_t r = 0; r < reps || !r; r++) {
		alive = 0;
		for (int x = 0; x < LW; x++) {
			int xl = (x - 1) & (LW - 1), xr = (x + 1) & (LW - 1);
			int n = up[xl] + up[x] + up[xr] + me[xl] + me[xr] + dn[xl] + dn[x] + dn[xr];
			o[x] = (uint8_t)((n == 3) | (me[x] & (n == 2)));
			alive += o[x];
		}
	}
	return alive;
}

NOINLINE static uint64_t life_gen(int from, struct pacer *pr)
{
	uint64_t alive = 0;
	for (int y = 0; y < LH; y++)
		alive += life_row(life_g[!from], life_g[from], y, pace(pr));
	return alive;
}

/* gens x (one generation); a fresh random soup every 256. */
NOINLINE static uint64_t life_run(uint64_t gens)
{
	struct pacer pr = pacer_for("life_row", 1);
	uint64_t seed = 13, s = 0;
	for (uint64_t g = 0; g < gens; g++) {
		if (g % 256 == 0)
			for (int y = 0; y < LH; y++)
				for (int x = 0; x < LW; x++)
					life_g[g & 1][y][x] = splitmix(&seed) % 3 == 0;
		s += life_gen((int)(g & 1), &pr);
	}
	return s;
}

/* ---- test_sudoku: a backtracking solver (fewest candidates first) ---- */

enum { NPUZ = 32 };

static uint8_t puzzles[NPUZ][81];
static uint8_t pc9[512];

struct sud {
	uint16_t row[9], col[9], box[9];
	uint8_t g[81];
};

static void sudoku_init(void)
{
	uint64_t seed = 99;
	for (int m = 0; m < 512; m++)
		pc9[m] = (uint8_t)((m & 1) + pc9[m >> 1]);
	for (int p = 0; p < NPUZ; p++) {
		uint8_t perm[9], rows[9], cols[9];
		for (int i = 0; i < 9; i++)
			perm[i] = rows[i] = cols[i] = (uint8_t)i;
		for (int i = 8; i > 0; i--) { /* digits shuffled; rows and columns within bands */
			int j = (int)(splitmix(&seed) % (uint64_t)(i + 1));
			uint8_t t = perm[i];
			perm[i] = perm[j];
			perm[j] = t;
		}
		for (int b = 0; b < 9; b += 3)
			for (int i = 2; i > 0; i--) {
				int j = (int)(splitmix(&seed) % (uint64_t)(i + 1));
				uint8_t t = rows[b + i];
				rows[b + i] = rows[b + j];
				rows[b + j] = t;
				j = (int)(splitmix(&seed) % (uint64_t)(i + 1));
				t = cols[b + i];
				cols[b + i] = cols[b + j];
				cols[b + j] = t;
			}
		memset(puzzles[p], 0, 81);
		for (int i = 0; i < 81; i++) {
			int r = rows[i / 9], c = cols[i % 9];
			if (splitmix(&seed) % 81 < 23 + (uint64_t)(p % 4)) {
				puzzles[p][i] = (uint8_t)(perm[(r * 3 + r / 3 + c) % 9] + 1);
			}
		}
	}
}

/* The empty cell with the fewest candidates (-1: none left), its candidates into *cand. */
NOINLINE static int sudoku_pick(const struct sud *s, uint16_t *cand)
{
	int best = -1, bc = 10;
	for (int i = 0; i < 81; i++) {
		if (s->g[i])
			continue;
		int r = i / 9, c = i % 9, b = r / 3 * 3 + c / 3;
		uint16_t m = (uint16_t)(~(s->row[r] | s->col[c] | s->box[b]) & 0x1ff);
		if (pc9[m] < bc) {
			bc = pc9[m];
			best = i;
			*cand = m;
			if (bc <= 1)
				break;
		}
	}
	return best;
}

NOINLINE static uint64_t sudoku_search(struct sud *s, int *solutions, int limit)
{
	uint16_t m = 0;
	int i = sudoku_pick(s, &m);
	uint64_t nodes = 1;
	if (i < 0) {
		++*solutions;
		return nodes;
	}
	int r = i / 9, c = i % 9, b = r / 3 * 3 + c / 3;
	while (m && *solutions < limit) {
		uint16_t bit = (uint16_t)(m & -m);
		m ^= bit;
		s->row[r] |= bit;
		s->col[c] |= bit;
		s->box[b] |= bit;
		s->g[i] = 1;
		nodes += sudoku_search(s, solutions, limit);
		s->row[r] ^= bit;
		s->col[c] ^= bit;
		s->box[b] ^= bit;
		s->g[i] = 0;
	}
	return nodes;
}

/* Search nodes to find two solutions of the puzzle (or to show it has fewer). */
NOINLINE static uint64_t sudoku_solve(const uint8_t *puz)
{
	struct sud s;
	int solutions = 0;
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 81; i++)
		if (puz[i]) {
			uint16_t bit = (uint16_t)(1u << (puz[i] - 1));
			int r = i / 9, c = i % 9;
			s.row[r] |= bit;
			s.col[c] |= bit;
			s.box[r / 3 * 3 + c / 3] |= bit;
			s.g[i] = puz[i];
		}
	uint64_t nodes = sudoku_search(&s, &solutions, 2);
	if (!solutions)
		fail("sudoku without a solution");
	return nodes * 4 + (uint64_t)solutions;
}

NOINLINE static uint64_t sudoku_batch(uint64_t n)
{
	uint64_t s = 0;
	for (uint64_t k = 0; k < n; k++)
		s += sudoku_solve(puzzles[k % NPUZ]);
	return s;
}

/* ---- test_dates: proleptic Gregorian calendar conversions ---- */

static const uint16_t cum_days[13] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365};

static inline int is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static inline int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

/* Days from 1970-01-01 to y-m-d. */
NOINLINE static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t y1 = y - 1;
	return 365 * y1 + floor_div(y1, 4) - floor_div(y1, 100) + floor_div(y1, 400) +
	       cum_days[m - 1] + (m > 2 && is_leap(y)) + d - 1 - 719162;
}

/* The date z days after 1970-01-01. */
NOINLINE static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t n = z + 719162;
	int64_t q400 = floor_div(n, 146097), r = n - q400 * 146097;
	int64_t q100 = r / 36524 < 3 ? r / 36524 : 3;
	r -= q100 * 36524;
	int64_t q4 = r / 1461;
	r -= q4 * 1461;
	int64_t q1 = r / 365 < 3 ? r / 365 : 3;
	r -= q1 * 365;
	*y = q400 * 400 + q100 * 100 + q4 * 4 + q1 + 1;
	int leap = is_leap(*y);
	unsigned mm = 1;
	while (mm < 12 && r >= cum_days[mm] + (mm >= 2 && leap))
		mm++;
	*m = mm;
	*d = (unsigned)(r - cum_days[mm - 1] - (mm > 2 && leap)) + 1;
}

/* n random days (within 2700 years of 1970) to dates and back, with their weekdays. */
NOINLINE static uint64_t dates_run(uint64_t n)
{
	uint64_t seed = 12, s = 0;
	for (uint64_t k = 0; k < n; k++) {
		int64_t z = (int64_t)(splitmix(&seed) % 2000000) - 1000000, y;
		unsigned m, d;
		civil_from_days(z, &y, &m, &d);
		if (days_from_civil(y, m, d) != z)
			fail("date round trip");
		s += (uint64_t)(y * 372 + m * 31 + d) + (uint64_t)((z % 7 + 11) % 7);
	}
	return s;
}

/* ---- test_varint: LEB128 varints ---- */

enum { VBLOCK = 4096 };

NOINLINE static size_t varint_encode(uint8_t *out, const uint64_t *v, size_t n, uint64_t reps)
{
	size_t o = 0;
	uint64_t r = 0;
	do {
		o = 0;
		for (size_t i = 0; i < n; i++) {
			uint64_t x = v[i];
			while (x >= 0x80) {
				out[o++] = (uint8_t)(x | 0x80);
				x >>= 7;
			}
			out[o++] = (uint8_t)x;
		}
	} while (++r < reps);
	return o;
}

NOINLINE static size_t varint_decode(uint64_t *v, const uint8_t *in, size_t len, uint64_t reps)
{
	size_t n = 0;
	uint64_t r = 0;
	do {
		n = 0;
		for (size_t i = 0; i < len;) {
			uint64_t x = 0;
			int sh = 0;
			uint8_t b;
			do {
				b = in[i++];
				x |= (uint64_t)(b & 0x7f) << sh;
				sh += 7;
			} while (b & 0x80);
			v[n++] = x;
		}
	} while (++r < reps);
	return n;
}

struct vblock {
	uint64_t v[VBLOCK], back[VBLOCK];
	uint8_t buf[VBLOCK * 10];
	struct pacer penc, pdec;
};

NOINLINE static uint64_t varint_block(struct vblock *b, uint64_t k)
{
	uint64_t seed = k + 1;
	for (size_t i = 0; i < VBLOCK; i++) {
		uint64_t r = splitmix(&seed);
		int bits = (int)(r % 64) < 40 ? (int)(r % 14) + 1 : (int)(r % 64) + 1;
		b->v[i] = (r >> 6) & (bits >= 64 ? ~0ull : (1ull << bits) - 1);
	}
	size_t len = varint_encode(b->buf, b->v, VBLOCK, pace(&b->penc));
	if (varint_decode(b->back, b->buf, len, pace(&b->pdec)) != VBLOCK ||
	    memcmp(b->back, b->v, sizeof(b->v)))
		fail("varint round trip");
	return len;
}

NOINLINE static uint64_t varint_run(uint64_t blocks)
{
	struct vblock *b = xmalloc(sizeof(*b));
	b->penc = pacer_for("varint_encode", 1);
	b->pdec = pacer_for("varint_decode", 1);
	uint64_t s = 0;
	for (uint64_t k = 0; k < blocks; k++)
		s += varint_block(b, k);
	free(b);
	return s;
}

/* ---- test_trie: a 16-way nibble trie of calloc'd nodes ---- */

struct trie {
	struct trie *kid[16];
	uint32_t count;
};

NOINLINE static void trie_insert(struct trie *t, const char *w, size_t len)
{
	for (size_t i = 0; i < 2 * len; i++) {
		unsigned nib = (unsigned char)w[i / 2] >> (i & 1 ? 0 : 4) & 15;
		if (!t->kid[nib])
			t->kid[nib] = xcalloc(1, sizeof(*t));
		t = t->kid[nib];
	}
	t->count++;
}

NOINLINE static uint32_t trie_find(const struct trie *t, const char *w, size_t len)
{
	for (size_t i = 0; i < 2 * len && t; i++)
		t = t->kid[(unsigned char)w[i / 2] >> (i & 1 ? 0 : 4) & 15];
	return t ? t->count : 0;
}

NOINLINE static uint64_t trie_free(struct trie *t)
{
	uint64_t n = 1;
	for (int k = 0; k < 16; k++)
		if (t->kid[k])
			n += trie_free(t->kid[k]);
	free(t);
	return n;
}

/* rounds x (a trie of 3000 words, 6000 lookups, freed). */
NOINLINE static uint64_t trie_run(uint64_t rounds)
{
	uint64_t s = 0;
	for (uint64_t r = 0; r < rounds; r++) {
		uint64_t seed = r * 31 + 7;
		struct trie *root = xcalloc(1, sizeof(*root));
		for (int i = 0; i < 3000; i++) {
			uint32_t w = (zipf_id(&seed, VOCAB) + (uint32_t)r * 97) % VOCAB;
			trie_insert(root, vocab[w], vocab_len[w]);
		}
		for (int i = 0; i < 6000; i++) {
			uint32_t w = (uint32_t)(splitmix(&seed) % VOCAB);
			s += trie_find(root, vocab[w], vocab_len[w]);
		}
		s += trie_free(root);
	}
	return s;
}

/* ---- the tests ---- */

/* Units per millisecond of each root, from 'w4 calibrate' on the machine this was written on. */
#define R_POWMOD   22.5
#define R_FIB      3.41
#define R_POLY     39.5
#define R_PRINT    722
#define R_AUDIO    319
#define R_RESAMPLE 169
#define R_FFT      115
#define R_WF       0.757
#define R_BLOOM    1.08
#define R_TOK      8.6
#define R_LZ       5.2
#define R_EVENTS   10.4
#define R_GLOB     12.3
#define R_CALC     3250
#define R_SORT     1.69
#define R_SOLVE    28.2
#define R_SEARCH   6.06
#define R_JSON     150
#define R_LIFE     15.3
#define R_SUDOKU   140
#define R_DATES    26200
#define R_VARINT   12.4
#define R_TRIE     1.52

/* ROOT(fn, ms, rate): a root for about ms milliseconds; its leaves take their knobs per call. */
#define ROOT(fn, ms, rate) (sink += (uint64_t)fn(root_units((ms), (rate))))

NOINLINE static void test_bn_powmod(void)
{
	bn_pacers();
	ROOT(powmod_batch, 320, R_POWMOD);
}

NOINLINE static void test_bn_fib(void)
{
	bn_pacers();
	ROOT(fib_batch, 300, R_FIB);
}

NOINLINE static void test_bn_poly(void)
{
	bn_pacers();
	ROOT(poly_batch, 300, R_POLY);
}

NOINLINE static void test_bn_print(void)
{
	ROOT(print_batch, 90, R_PRINT);
}

NOINLINE static void test_audio(void)
{
	dsp_init();
	ROOT(audio_run, 155, R_AUDIO);
}

NOINLINE static void test_resample(void)
{
	dsp_init();
	ROOT(resample_run, 112, R_RESAMPLE);
}

NOINLINE static void test_fft(void)
{
	dsp_init();
	fft_init();
	ROOT(spectrum_run, 400, R_FFT);
}

NOINLINE static void test_wordfreq(void)
{
	wf_init();
	ROOT(wf_run, 420, R_WF);
}

NOINLINE static void test_bloom(void)
{
	bloom_init();
	ROOT(bloom_run, 180, R_BLOOM);
}

NOINLINE static void test_utf8(void)
{
	ut_init();
	ROOT(tok_run, 130, R_TOK);
}

NOINLINE static void test_lz77(void)
{
	lz_init();
	sink += lz_run(root_units(170, R_LZ), 0);
}

struct wjob {
	uint64_t units, out;
	int kind;
};

NOINLINE static void *worker_main(void *arg)
{
	struct wjob *j = arg;
	j->out = j->kind & 1 ? events_run(j->units, (uint64_t)j->kind * 1000003)
	                     : lz_run(j->units, (uint64_t)j->kind * 5);
	return NULL;
}

/* Four threads on the two cores: two compress, two simulate. */
NOINLINE static void test_workers(void)
{
	pthread_t th[4];
	struct wjob job[4];
	lz_init();
	for (int i = 0; i < 4; i++) {
		job[i] = (struct wjob){i & 1 ? root_units(40, R_EVENTS) : root_units(40, R_LZ), 0,
		                       i};
		if (pthread_create(&th[i], NULL, worker_main, &job[i]))
			exit(3);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		sink += job[i].out;
	}
}

NOINLINE static void test_events(void)
{
	sink += events_run(root_units(130, R_EVENTS), 1);
}

NOINLINE static void test_glob(void)
{
	paths_init();
	ROOT(glob_suite, 110, R_GLOB);
}

NOINLINE static void test_calc(void)
{
	calc_init();
	ROOT(calc_run, 120, R_CALC);
}

NOINLINE static void test_mergesort(void)
{
	ROOT(sort_run, 130, R_SORT);
}

NOINLINE static void test_solve(void)
{
	ROOT(solve_run, 100, R_SOLVE);
}

NOINLINE static void test_search(void)
{
	search_init();
	ROOT(search_run, 100, R_SEARCH);
}

NOINLINE static void test_json(void)
{
	json_init();
	ROOT(json_run, 120, R_JSON);
}

NOINLINE static void test_life(void)
{
	ROOT(life_run, 100, R_LIFE);
}

NOINLINE static void test_sudoku(void)
{
	sudoku_init();
	ROOT(sudoku_batch, 130, R_SUDOKU);
}

NOINLINE static void test_dates(void)
{
	ROOT(dates_run, 60, R_DATES);
}

NOINLINE static void test_varint(void)
{
	ROOT(varint_run, 70, R_VARINT);
}

NOINLINE static void test_trie(void)
{
	vocab_init();
	ROOT(trie_run, 100, R_TRIE);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
        {"test_bn_powmod", test_bn_powmod},
        {"test_bn_fib", test_bn_fib},
        {"test_bn_poly", test_bn_poly},
        {"test_bn_print", test_bn_print},
        {"test_audio", test_audio},
        {"test_resample", test_resample},
        {"test_fft", test_fft},
        {"test_wordfreq", test_wordfreq},
        {"test_bloom", test_bloom},
        {"test_utf8", test_utf8},
        {"test_lz77", test_lz77},
        {"test_workers", test_workers},
        {"test_events", test_events},
        {"test_glob", test_glob},
        {"test_calc", test_calc},
        {"test_mergesort", test_mergesort},
        {"test_solve", test_solve},
        {"test_search", test_search},
        {"test_json", test_json},
        {"test_life", test_life},
        {"test_sudoku", test_sudoku},
        {"test_dates", test_dates},
        {"test_varint", test_varint},
        {"test_trie", test_trie},
};

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Prints each root's units per millisecond (the R_ constants), best of three. */
static void calibrate(void)
{
	vocab_init();
	dsp_init();
	fft_init();
	wf_init();
	bloom_init();
	ut_init();
	lz_init();
	paths_init();
	calc_init();
	search_init();
	json_init();
	sudoku_init();
	bn_pacers();
	bloom_add(0, 1 << 20);
#define CAL(name, n, call)                                                                         \
	do {                                                                                       \
		double best = 1e300;                                                               \
		for (int rep = 0; rep < 3; rep++) {                                                \
			double t0 = cpu_ms();                                                      \
			sink += (uint64_t)(call);                                                  \
			double ms = cpu_ms() - t0;                                                 \
			best = ms < best ? ms : best;                                              \
		}                                                                                  \
		printf("%-12s %14.4f per ms (%.0f ms)\n", name, (double)(n) / best, best);         \
	} while (0)
	CAL("R_POWMOD", 500, powmod_batch(500));
	CAL("R_FIB", 100, fib_batch(100));
	CAL("R_POLY", 1000, poly_batch(1000));
	CAL("R_PRINT", 15000, print_batch(15000));
	CAL("R_AUDIO", 8000, audio_run(8000));
	CAL("R_RESAMPLE", 6000, resample_run(6000));
	CAL("R_FFT", 2000, spectrum_run(2000));
	CAL("R_WF", 10, wf_run(10));
	CAL("R_BLOOM", 30, bloom_run(30));
	CAL("R_TOK", 160, tok_run(160));
	CAL("R_LZ", 100, lz_run(100, 0));
	CAL("R_EVENTS", 200, events_run(200, 1));
	CAL("R_GLOB", 250, glob_suite(250));
	CAL("R_CALC", 60000, calc_run(60000));
	CAL("R_SORT", 50, sort_run(50));
	CAL("R_SOLVE", 500, solve_run(500));
	CAL("R_SEARCH", 100, search_run(100));
	CAL("R_JSON", 3000, json_run(3000));
	CAL("R_LIFE", 200, life_run(200));
	CAL("R_SUDOKU", 2500, sudoku_batch(2500));
	CAL("R_DATES", 500000, dates_run(500000));
	CAL("R_VARINT", 250, varint_run(250));
	CAL("R_TRIE", 30, trie_run(30));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: w4 TEST | list | calibrate\n");
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
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(argv[1], tests[i].name)) {
			cur_test = tests[i].name;
			knobs_load();
			tests[i].fn();
			return 0;
		}
	fprintf(stderr, "w4: no test %s\n", argv[1]);
	return 2;
}
