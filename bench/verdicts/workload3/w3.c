/* bench/verdicts' third workload, of a shape neither ../workload nor ../workload2 has, and never
 * tuned on: 16 CTest tests of very uneven length (test_simulate about a quarter of the suite,
 * most 4-10 %, three of about 1 %) over 30-odd functions of the kinds a real suite exercises:
 * an open-addressing hash table, a malloc/free-heavy LRU list, qsort with a comparator,
 * snprintf formatting and strtod parsing, a branchy bytecode interpreter, an edit-distance DP
 * table, SWAR bit tricks, an n-body step and a dense matrix product, a recursive tree, a
 * memory-bound walk over 64 MiB, a segmented sieve in 2 threads, a forked child, and a helper
 * started through /bin/sh -c. About 4 CPU-seconds per suite run (ctest -j2) at VB_SCALE=1.
 *
 * Knobs in the environment, the same as the other two workloads':
 *
 *   VB_SCALE=F            all work times F (default 1)
 *   VB_SLOW_FUNC=NAME     with VB_SLOW_PCT=P: function NAME does P % more of its own work,
 *                         wherever it is called
 *   VB_SLOW_TEST=NAME     with VB_SLOW_TEST_PCT=P: everything test NAME does, P % more
 *   VB_SLOW_ALL=P         everything, P % more
 *
 * VB_SCALE, VB_SLOW_TEST and VB_SLOW_ALL scale the unit count of each test's roots (the forked
 * child inherits them; the exec'd helper is told its test and reads them again). VB_SLOW_FUNC
 * scales how much a function itself does: a leaf's own loop count, or, for functions called
 * once per item (ht_insert, ht_lookup, edit_distance), the number of calls their caller makes
 * (ht_insert's extra calls update keys already there); rec_sort's is the number of sorts
 * (libc's qsort and cmp_rec come with them). mat_mul and popcount_sweep, the planted
 * functions, are slowed at every call site: mat_mul under test_simulate (sim_run, once per
 * step) and test_linalg, popcount_sweep under test_index (once per round) and in test_fork's
 * child. Without a knob of their own: the pass-through frames (sim_run, index_run,
 * align_corpus, tree_run, sieve_worker, the test_* functions, cmp_rec), tree_grow and tree_drop
 * (one tree per round: tree_fold takes the knob), vm_assemble, and mem_fill below a whole 64 MiB
 * (it always fills all of it: the walk must not read untouched pages).
 *
 * Shares of the suite's CPU time (three runs of ciprof run -- ctest --test-dir build -j2 and
 * ciprof show, self time, about 4050 samples at 1 kHz each, on the 2-core AMD EPYC VM this was
 * written on): mat_mul 17.8-18.7 %, nbody_forces 9.3, vm_run 7.5, mem_walk 6.5, sieve_segment
 * 5.1, edit_distance 4.9, popcount_sweep 4.6-5.2, fmix_chain, bit_reverse and gray_rank 3 each,
 * then libc (qsort's msort, strtod, printf, malloc/free) and smaller loops; per test (children
 * included): test_simulate 22.8 %, test_bits 9.2, test_records 9.2, test_memory 7.9, test_index
 * 7.8, test_vm 7.5, test_linalg 6.4, test_align 5.1, test_threads 5.1, test_tree 4.4, test_fork
 * 3.8, test_exec 3.6, test_alloc 3.5, test_prefix, test_hist and test_sqrt 0.9-1.0 each.
 *
 * The planted items (planted.json):
 *
 *   FUNC5    = popcount_sweep  a steady SWAR popcount loop, about 5 %, in two tests (test_index
 *                              and test_fork's forked child)
 *   FUNC20   = mat_mul         a steady dense 48x48 double product, about 18 %, in two tests
 *                              (test_simulate under sim_run, and test_linalg)
 *   TEST10   = test_bits       steady register-only integer loops (gray_rank, bit_reverse,
 *                              fmix_chain), about 10 %; neither planted function is in it
 *   TEST10S  = test_records    swinging libc-heavy code (snprintf, strtod, qsort), about 10 %
 *   MEMBOUND = mem_walk        a dependent random walk over 64 MiB
 *
 * Usage: w3 TEST (one of tests[] below), w3 list, w3 calibrate, or w3 helper (test_exec's). */
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

/* Units of fn's own loop for about ms milliseconds at rate per_ms (units per millisecond, from
 * 'w3 calibrate'), times every knob that applies to fn. */
static uint64_t units(const char *fn, double ms, double per_ms)
{
	return (uint64_t)(ms * per_ms * g_scale * func_factor(fn) + 0.5);
}

/* Units of a pass-through root (its leaves take their own knobs per call). */
static uint64_t root_units(double ms, double per_ms)
{
	return (uint64_t)(ms * per_ms * g_scale + 0.5);
}

/* Per-call counts averaging per_call x fn's factor with no drift: 1.1 gives 1, 1, ..., 2. */
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
		fprintf(stderr, "w3: out of memory\n");
		exit(3);
	}
	return p;
}

/* ---- test_index: an open-addressing hash table, then a popcount of its occupancy ---- */

enum { HT_BITS = 15, HT_SLOTS = 1 << HT_BITS, HT_KEYS = 21000, HT_LOOKUPS = 42000 };

struct ht {
	uint64_t used[HT_SLOTS / 64]; /* occupancy bitmap */
	uint64_t key[HT_SLOTS];
	uint64_t val[HT_SLOTS];
};

static inline size_t ht_home(uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - HT_BITS));
}

static inline int ht_used(const struct ht *t, size_t i)
{
	return (int)(t->used[i >> 6] >> (i & 63) & 1);
}

/* Adds val to key's value, inserting key (linear probing) when it is not there. */
NOINLINE static void ht_insert(struct ht *t, uint64_t key, uint64_t val)
{
	size_t i = ht_home(key);
	for (; ht_used(t, i); i = (i + 1) & (HT_SLOTS - 1))
		if (t->key[i] == key) {
			t->val[i] += val;
			return;
		}
	t->used[i >> 6] |= 1ull << (i & 63);
	t->key[i] = key;
	t->val[i] = val;
}

NOINLINE static uint64_t ht_lookup(const struct ht *t, uint64_t key)
{
	for (size_t i = ht_home(key); ht_used(t, i); i = (i + 1) & (HT_SLOTS - 1))
		if (t->key[i] == key)
			return t->val[i];
	return 0;
}

/* Bits set in n words of w (nw a power of two, wrapping), counted the SWAR way. */
NOINLINE static uint64_t popcount_sweep(const uint64_t *w, size_t nw, uint64_t n)
{
	uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t x = w[i & (nw - 1)] ^ (i * 0x2545f4914f6cdd1dull);
		x = x - ((x >> 1) & 0x5555555555555555ull);
		x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
		x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
		s += (x * 0x0101010101010101ull) >> 56;
	}
	return s;
}

enum { POP_PER_ROUND = 220000 }; /* popcount_sweep's words per index round */

/* rounds x (fill a table with HT_KEYS keys, look up HT_LOOKUPS, half of them absent). */
NOINLINE static uint64_t index_run(uint64_t rounds)
{
	static struct ht t;
	struct pacer ins = pacer_for("ht_insert", 1), look = pacer_for("ht_lookup", 1);
	struct pacer pop = pacer_for("popcount_sweep", POP_PER_ROUND);
	uint64_t s = 0;
	for (uint64_t r = 0; r < rounds; r++) {
		memset(t.used, 0, sizeof(t.used));
		uint64_t seed = r * 0x632be59bd9b4e019ull;
		for (uint64_t k = 0; k < HT_KEYS; k++) {
			uint64_t key = splitmix(&seed);
			for (uint64_t n = pace(&ins); n; n--)
				ht_insert(&t, key, k);
		}
		uint64_t hit = r * 0x632be59bd9b4e019ull, miss = ~hit;
		for (uint64_t k = 0; k < HT_LOOKUPS; k++) {
			uint64_t key = k & 1 ? splitmix(&hit) : splitmix(&miss);
			for (uint64_t n = pace(&look); n; n--)
				s += ht_lookup(&t, key);
		}
		s += popcount_sweep(t.used, HT_SLOTS / 64, pace(&pop));
	}
	return s;
}

/* ---- test_records: formatting, parsing and sorting records (libc-heavy) ---- */

enum { NREC = 2000, NUMS = 4000 };

struct rec {
	double score;
	uint32_t id, tag;
	char name[16];
};

static struct rec recs[NREC];
static char *num_text;

static void records_init(void)
{
	static const char *syl[] = {"ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "zen", "qua"};
	uint64_t seed = 42;
	for (uint32_t i = 0; i < NREC; i++) {
		uint64_t r = splitmix(&seed);
		struct rec *p = &recs[i];
		p->score =
		        (double)(r % 600) / 8.0; /* ties, so that names decide some comparisons */
		p->id = i;
		p->tag = (uint32_t)(r >> 32);
		snprintf(p->name, sizeof(p->name), "%s%s%s%u", syl[(r >> 8) % 10],
		         syl[(r >> 12) % 10], syl[(r >> 16) % 10], (unsigned)((r >> 20) % 100));
	}
	size_t cap = (size_t)NUMS * 32, len = 0;
	num_text = xmalloc(cap);
	for (int i = 0; i < NUMS; i++) {
		uint64_t r = splitmix(&seed);
		double v = (double)(r % 2000000) / 997.0 - 1000.0;
		switch (r >> 60 & 3) {
		case 0:
			len += (size_t)snprintf(num_text + len, cap - len, "%.6f ", v);
			break;
		case 1:
			len += (size_t)snprintf(num_text + len, cap - len, "%.4e ", v / 1e5);
			break;
		case 2:
			len += (size_t)snprintf(num_text + len, cap - len, "%d ", (int)v);
			break;
		default:
			len += (size_t)snprintf(num_text + len, cap - len, "%.10g ", v * 1e3);
		}
	}
}

/* Formats n records as CSV lines into a 64 KiB buffer, starting over when it is full. */
NOINLINE static uint64_t fmt_records(uint64_t n)
{
	static char buf[1 << 16];
	size_t pos = 0;
	uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++) {
		const struct rec *r = &recs[i % NREC];
		if (pos > sizeof(buf) - 128) {
			s += (unsigned char)buf[pos / 2] + pos;
			pos = 0;
		}
		pos += (size_t)snprintf(buf + pos, sizeof(buf) - pos, "%s;%u;%.6f;%08x\n", r->name,
		                        r->id, r->score, r->tag);
	}
	return s + pos;
}

/* Parses n numbers out of num_text with strtod, starting over at its end. */
NOINLINE static uint64_t parse_numbers(uint64_t n)
{
	const char *p = num_text;
	double acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		char *end;
		double v = strtod(p, &end);
		if (end == p) {
			p = num_text;
			v = strtod(p, &end);
		}
		acc += v;
		p = end;
	}
	return (uint64_t)(int64_t)acc;
}

NOINLINE static int cmp_rec(const void *pa, const void *pb)
{
	const struct rec *a = pa, *b = pb;
	if (a->score != b->score)
		return a->score < b->score ? -1 : 1;
	int c = strcmp(a->name, b->name);
	return c ? c : (a->id > b->id) - (a->id < b->id);
}

/* n sorts of a fresh copy of the NREC records by score, then name. */
NOINLINE static uint64_t rec_sort(uint64_t n)
{
	struct rec *w = xmalloc(sizeof(recs));
	uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++) {
		memcpy(w, recs, sizeof(recs));
		qsort(w, NREC, sizeof(*w), cmp_rec);
		s += w[i % NREC].id;
	}
	free(w);
	return s;
}

/* ---- test_alloc: an LRU cache as a doubly linked list of malloc'd nodes ---- */

enum { LRU_KEYS = 8192, LRU_CAP = 3000 };

struct lnode {
	struct lnode *prev, *next;
	uint32_t key, len;
	unsigned char data[];
};

static void lru_unlink(struct lnode *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
}

static void lru_push(struct lnode *head, struct lnode *n)
{
	n->next = head->next;
	n->prev = head;
	head->next->prev = n;
	head->next = n;
}

/* n touches of an LRU cache of LRU_CAP entries over LRU_KEYS keys, some hot: a hit moves the
 * node to the front, a miss mallocs one (16-500 bytes) and frees the least recently used. */
NOINLINE static uint64_t lru_churn(uint64_t n)
{
	struct lnode **idx = calloc(LRU_KEYS, sizeof(*idx));
	struct lnode head = {&head, &head, 0, 0};
	uint64_t seed = 7, s = 0;
	size_t count = 0;
	if (!idx)
		exit(3);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t r = splitmix(&seed);
		uint32_t key = (uint32_t)(r % LRU_KEYS) & (r >> 40 & 1 ? 1023 : LRU_KEYS - 1);
		struct lnode *x = idx[key];
		if (x) {
			lru_unlink(x);
			lru_push(&head, x);
			s += x->data[0] + x->data[x->len - 1];
			continue;
		}
		uint32_t len = 16 + (uint32_t)(r >> 48) % 485;
		x = xmalloc(sizeof(*x) + len);
		x->key = key;
		x->len = len;
		x->data[0] = (unsigned char)i;
		x->data[len - 1] = (unsigned char)key;
		lru_push(&head, x);
		idx[key] = x;
		if (++count > LRU_CAP) {
			struct lnode *old = head.prev;
			lru_unlink(old);
			idx[old->key] = NULL;
			free(old);
			count--;
		}
	}
	while (head.next != &head) {
		struct lnode *x = head.next;
		lru_unlink(x);
		free(x);
	}
	free(idx);
	return s;
}

/* ---- test_vm: a small register-machine bytecode interpreter ---- */

enum vop {
	V_LI,
	V_MOV,
	V_ADDI,
	V_MUL3,
	V_SHR1,
	V_ANDI,
	V_XOR,
	V_EQI,
	V_JZ,
	V_JNZ,
	V_JMP,
	V_DEC,
	V_HALT
};

struct vinsn {
	uint8_t op, a, b;
	int32_t imm;
};

/* Assembles the interpreted program from its text: Collatz sequences from 27 on, each value
 * xor'ed into r3; r1 counts loop iterations down (vm_run sets it). */
NOINLINE static size_t vm_assemble(struct vinsn *out, size_t cap)
{
	static const char *src = "li 0 0 27\n"
	                         "li 4 0 28\n"
	                         "andi 2 0 1\n" /* 2: loop */
	                         "jz 2 0 7\n"
	                         "mul3 0 0 0\n"
	                         "addi 0 0 1\n"
	                         "jmp 0 0 8\n"
	                         "shr1 0 0 0\n" /* 7: even */
	                         "xor 3 0 0\n"  /* 8: r3 ^= r0 */
	                         "eqi 2 0 1\n"
	                         "jz 2 0 13\n"
	                         "mov 0 4 0\n"
	                         "addi 4 4 1\n"
	                         "dec 1 0 0\n" /* 13 */
	                         "jnz 1 0 2\n"
	                         "halt 0 0 0\n";
	static const char *names[] = {"li",  "mov", "addi", "mul3", "shr1", "andi", "xor",
	                              "eqi", "jz",  "jnz",  "jmp",  "dec",  "halt"};
	size_t n = 0;
	for (const char *p = src; *p && n < cap; p = strchr(p, '\n') + 1) {
		char op[8];
		int a, b, imm;
		if (sscanf(p, "%7s %d %d %d", op, &a, &b, &imm) != 4)
			exit(3);
		size_t k = 0;
		while (k < sizeof(names) / sizeof(names[0]) && strcmp(names[k], op))
			k++;
		out[n++] = (struct vinsn){(uint8_t)k, (uint8_t)a, (uint8_t)b, imm};
	}
	return n;
}

/* Runs prog for n iterations of its loop; returns r3. */
NOINLINE static uint64_t vm_run(const struct vinsn *prog, uint64_t n)
{
	uint64_t r[8] = {0};
	r[1] = n;
	for (size_t pc = 0;;) {
		const struct vinsn *in = &prog[pc++];
		switch (in->op) {
		case V_LI:
			r[in->a] = (uint64_t)in->imm;
			break;
		case V_MOV:
			r[in->a] = r[in->b];
			break;
		case V_ADDI:
			r[in->a] = r[in->b] + (uint64_t)in->imm;
			break;
		case V_MUL3:
			r[in->a] = r[in->b] * 3;
			break;
		case V_SHR1:
			r[in->a] = r[in->b] >> 1;
			break;
		case V_ANDI:
			r[in->a] = r[in->b] & (uint64_t)in->imm;
			break;
		case V_XOR:
			r[in->a] ^= r[in->b];
			break;
		case V_EQI:
			r[in->a] = r[in->b] == (uint64_t)in->imm;
			break;
		case V_JZ:
			if (!r[in->a])
				pc = (size_t)in->imm;
			break;
		case V_JNZ:
			if (r[in->a])
				pc = (size_t)in->imm;
			break;
		case V_JMP:
			pc = (size_t)in->imm;
			break;
		case V_DEC:
			r[in->a]--;
			break;
		default:
			return r[3];
		}
	}
}

/* ---- test_align: edit distance over a corpus of related strings ---- */

enum { WORDS = 256, WLEN = 48 };

static char words[WORDS][WLEN + 1];
static size_t word_len[WORDS];

static void words_init(void)
{
	uint64_t seed = 99;
	for (int i = 0; i < WORDS; i++) {
		size_t len = 28 + splitmix(&seed) % (WLEN - 27);
		for (size_t j = 0; j < len; j++)
			/* seven words in eight: a mutation of the one before */
			words[i][j] = i % 8 && j < word_len[i - 1] && splitmix(&seed) % 5
			                      ? words[i - 1][j]
			                      : "acgt"[splitmix(&seed) & 3];
		words[i][len] = 0;
		word_len[i] = len;
	}
}

/* Levenshtein distance, one row of the DP table at a time. */
NOINLINE static unsigned edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
	uint16_t row[WLEN + 1];
	for (size_t j = 0; j <= lb; j++)
		row[j] = (uint16_t)j;
	for (size_t i = 1; i <= la; i++) {
		uint16_t diag = row[0];
		row[0] = (uint16_t)i;
		for (size_t j = 1; j <= lb; j++) {
			uint16_t up = row[j];
			uint16_t v = (uint16_t)(diag + (a[i - 1] != b[j - 1]));
			if (up + 1 < v)
				v = (uint16_t)(up + 1);
			if (row[j - 1] + 1 < v)
				v = (uint16_t)(row[j - 1] + 1);
			row[j] = v;
			diag = up;
		}
	}
	return row[lb];
}

/* n pairs of the corpus, each one edit_distance call. */
NOINLINE static uint64_t align_corpus(uint64_t n)
{
	uint64_t s = 0;
	for (uint64_t p = 0; p < n; p++) {
		size_t i = p % WORDS, j = (p * 131 + 7) % WORDS;
		s += edit_distance(words[i], word_len[i], words[j], word_len[j]);
	}
	return s;
}

/* ---- test_bits: steady register-only integer loops ---- */

/* Gray codes of a sequence, offset by the checksum so far and decoded again (prefix xor): a
 * chain of shifts and xors. */
NOINLINE static uint64_t gray_rank(uint64_t n)
{
	uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = i * 0xd1342543de82ef95ull;
		uint64_t x = (v ^ (v >> 1)) + (s >> 3); /* s: so that no compiler undoes the code */
		x ^= x >> 1;
		x ^= x >> 2;
		x ^= x >> 4;
		x ^= x >> 8;
		x ^= x >> 16;
		x ^= x >> 32;
		s = ((s << 7) | (s >> 57)) ^ x;
	}
	return s;
}

/* A chain of 64-bit bit reversals by mask-and-shift. */
NOINLINE static uint64_t bit_reverse(uint64_t n)
{
	uint64_t x = 0x0123456789abcdefull;
	for (uint64_t i = 0; i < n; i++) {
		x ^= i;
		x = ((x >> 1) & 0x5555555555555555ull) | ((x & 0x5555555555555555ull) << 1);
		x = ((x >> 2) & 0x3333333333333333ull) | ((x & 0x3333333333333333ull) << 2);
		x = ((x >> 4) & 0x0f0f0f0f0f0f0f0full) | ((x & 0x0f0f0f0f0f0f0f0full) << 4);
		x = ((x >> 8) & 0x00ff00ff00ff00ffull) | ((x & 0x00ff00ff00ff00ffull) << 8);
		x = ((x >> 16) & 0x0000ffff0000ffffull) | ((x & 0x0000ffff0000ffffull) << 16);
		x = (x >> 32) | (x << 32);
		x += 0x9e3779b97f4a7c15ull;
	}
	return x;
}

/* A chain of MurmurHash3 finalizers: multiply latency. */
NOINLINE static uint64_t fmix_chain(uint64_t n)
{
	uint64_t h = 1;
	for (uint64_t i = 0; i < n; i++) {
		h ^= i;
		h ^= h >> 33;
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 33;
		h *= 0xc4ceb9fe1a85ec53ull;
		h ^= h >> 33;
	}
	return h;
}

/* ---- test_simulate, test_linalg: floating point ---- */

enum { NB = 48, MD = 48, GRID = 96 };

struct body {
	double x, y, z, vx, vy, vz, m;
};

static double mat_a[MD * MD], mat_b[MD * MD], mat_c[MD * MD];

static void mats_init(void)
{
	uint64_t seed = 5;
	for (int i = 0; i < MD * MD; i++) {
		mat_a[i] = (double)(splitmix(&seed) % 2001) / 1000.0 - 1.0;
		mat_b[i] = (double)(splitmix(&seed) % 2001) / 1000.0 - 1.0;
	}
}

/* rows rows of c = a b (row r % MD each time), four columns of c at a time in registers: a
 * steady multiply-add loop on cache-resident data. (Accumulating in c itself made each row's
 * loads of b wait on its stores to c at some layouts of the three matrices: half the speed,
 * by build.) */
NOINLINE static void mat_mul(double *restrict c, const double *restrict a, const double *restrict b,
                             uint64_t rows)
{
	for (uint64_t r = 0; r < rows; r++) {
		size_t i = r % MD;
		const double *ai = a + i * MD;
		for (size_t j = 0; j < MD; j += 4) {
			double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
			for (size_t k = 0; k < MD; k++) {
				const double *bk = b + k * MD + j;
				s0 += ai[k] * bk[0];
				s1 += ai[k] * bk[1];
				s2 += ai[k] * bk[2];
				s3 += ai[k] * bk[3];
			}
			double *ci = c + i * MD + j;
			ci[0] = s0;
			ci[1] = s1;
			ci[2] = s2;
			ci[3] = s3;
		}
	}
}

/* passes x (all-pairs gravity with softening, then a leapfrog step). */
NOINLINE static void nbody_forces(struct body *b, uint64_t passes)
{
	const double dt = 1e-3, eps = 1e-2;
	for (uint64_t p = 0; p < passes; p++) {
		for (int i = 0; i < NB; i++) {
			double ax = 0, ay = 0, az = 0;
			for (int j = 0; j < NB; j++) {
				double dx = b[j].x - b[i].x, dy = b[j].y - b[i].y,
				       dz = b[j].z - b[i].z;
				double d2 = dx * dx + dy * dy + dz * dz + eps;
				double inv = b[j].m / (d2 * sqrt(d2));
				ax += dx * inv;
				ay += dy * inv;
				az += dz * inv;
			}
			b[i].vx += ax * dt;
			b[i].vy += ay * dt;
			b[i].vz += az * dt;
		}
		for (int i = 0; i < NB; i++) {
			b[i].x += b[i].vx * dt;
			b[i].y += b[i].vy * dt;
			b[i].z += b[i].vz * dt;
		}
	}
}

enum { SIM_ROWS = 34 }; /* mat_mul's rows per simulation step */

/* steps x (one n-body pass, then SIM_ROWS rows of the transform product). */
NOINLINE static uint64_t sim_run(uint64_t steps)
{
	struct body b[NB];
	uint64_t seed = 11;
	for (int i = 0; i < NB; i++)
		b[i] = (struct body){(double)(splitmix(&seed) % 1000) / 100.0,
		                     (double)(splitmix(&seed) % 1000) / 100.0,
		                     (double)(splitmix(&seed) % 1000) / 100.0,
		                     0,
		                     0,
		                     0,
		                     1.0 + (double)(i % 5)};
	struct pacer nb = pacer_for("nbody_forces", 1), mm = pacer_for("mat_mul", SIM_ROWS);
	double s = 0;
	for (uint64_t t = 0; t < steps; t++) {
		nbody_forces(b, pace(&nb));
		mat_mul(mat_c, mat_a, mat_b, pace(&mm));
		s += mat_c[t % (MD * MD)] + b[t % NB].x;
	}
	return (uint64_t)(int64_t)s;
}

/* n Jacobi sweeps of Laplace's equation on a GRID x GRID plate, hot along one edge. */
NOINLINE static uint64_t jacobi_sweep(uint64_t n)
{
	static double g[2][GRID][GRID];
	for (int i = 0; i < GRID; i++)
		for (int j = 0; j < GRID; j++)
			g[0][i][j] = g[1][i][j] = i == 0 ? 1.0 : 0.5;
	for (uint64_t k = 0; k < n; k++) {
		double(*src)[GRID] = g[k & 1], (*dst)[GRID] = g[!(k & 1)];
		for (int i = 1; i < GRID - 1; i++)
			for (int j = 1; j < GRID - 1; j++)
				dst[i][j] = 0.25 * (src[i - 1][j] + src[i + 1][j] + src[i][j - 1] +
				                    src[i][j + 1]);
	}
	return (uint64_t)(g[n & 1][GRID / 2][GRID / 2] * 1e9);
}

/* ---- test_tree: a recursive tree of malloc'd nodes ---- */

enum { TREE_DEPTH = 13, FOLDS_PER_TREE = 6 };

struct tnode {
	struct tnode *kid[2];
	uint64_t v;
};

NOINLINE static struct tnode *tree_grow(int depth, uint64_t *seed)
{
	struct tnode *t = xmalloc(sizeof(*t));
	t->v = splitmix(seed);
	t->kid[0] = depth ? tree_grow(depth - 1, seed) : NULL;
	t->kid[1] = depth ? tree_grow(depth - 1, seed) : NULL;
	return t;
}

NOINLINE static uint64_t tree_fold(const struct tnode *t, uint64_t salt)
{
	if (!t)
		return salt;
	uint64_t l = tree_fold(t->kid[0], salt ^ t->v);
	uint64_t r = tree_fold(t->kid[1], l + t->v);
	return (l * 31) ^ (r >> 3) ^ t->v;
}

NOINLINE static void tree_drop(struct tnode *t)
{
	if (!t)
		return;
	tree_drop(t->kid[0]);
	tree_drop(t->kid[1]);
	free(t);
}

/* rounds x (grow a tree of 2^14 - 1 nodes, fold it FOLDS_PER_TREE times, drop it). */
NOINLINE static uint64_t tree_run(uint64_t rounds)
{
	struct pacer folds = pacer_for("tree_fold", FOLDS_PER_TREE);
	uint64_t seed = 3, s = 0;
	for (uint64_t r = 0; r < rounds; r++) {
		struct tnode *t = tree_grow(TREE_DEPTH, &seed);
		for (uint64_t k = pace(&folds); k; k--)
			s += tree_fold(t, k);
		tree_drop(t);
	}
	return s;
}

/* ---- test_memory: a dependent random walk over 64 MiB ---- */

enum { MEM_BITS = 24, MEM_WORDS = 1 << MEM_BITS }; /* 64 MiB of uint32 */

static uint32_t *mem;

/* Fills n words of mem in order (at least all of it, whatever the knobs). */
NOINLINE static uint64_t mem_fill(uint64_t n)
{
	if (!mem)
		mem = xmalloc((size_t)MEM_WORDS * sizeof(*mem));
	if (n < MEM_WORDS)
		n = MEM_WORDS;
	uint64_t seed = 17;
	for (uint64_t i = 0; i < n; i++)
		mem[i & (MEM_WORDS - 1)] = (uint32_t)splitmix(&seed);
	return mem[n & (MEM_WORDS - 1)];
}

/* n steps, each a load whose address is the last load's value: latency-bound on DRAM. */
NOINLINE static uint64_t mem_walk(uint64_t n)
{
	uint32_t at = 1;
	uint64_t s = 0;
	for (uint64_t k = 0; k < n; k++) {
		at = (mem[at] + (uint32_t)k * 0x9e3779b9u) & (MEM_WORDS - 1);
		s += at;
	}
	return s;
}

/* ---- test_threads: a segmented prime sieve in 2 threads ---- */

enum { SEG = 32768, SIEVE_LO = 1000000000 };

static uint32_t base_primes[4300]; /* 4203 primes below 40000 */
static size_t n_base_primes;

/* The primes up to 40000 (enough for segments below 1.6e9). */
static void base_primes_init(void)
{
	static uint8_t comp[40001];
	for (uint32_t i = 2; i <= 40000; i++) {
		if (comp[i])
			continue;
		base_primes[n_base_primes++] = i;
		for (uint32_t m = i * i; m <= 40000; m += i)
			comp[m] = 1;
	}
}

/* Primes in the nseg segments of SEG numbers from lo. */
NOINLINE static uint64_t sieve_segment(uint64_t lo, uint64_t nseg)
{
	uint8_t seg[SEG];
	uint64_t count = 0;
	for (uint64_t s = 0; s < nseg; s++) {
		uint64_t base = lo + s * SEG, end = base + SEG;
		memset(seg, 1, sizeof(seg));
		for (size_t k = 0; k < n_base_primes; k++) {
			uint64_t p = base_primes[k];
			if (p * p >= end)
				break;
			uint64_t m = (base + p - 1) / p * p;
			if (m < p * p)
				m = p * p;
			for (; m < end; m += p)
				seg[m - base] = 0;
		}
		for (size_t i = 0; i < SEG; i++)
			count += seg[i];
	}
	return count;
}

struct sieve_job {
	uint64_t lo, nseg, count;
};

NOINLINE static void *sieve_worker(void *arg)
{
	struct sieve_job *j = arg;
	j->count = sieve_segment(j->lo, j->nseg);
	return NULL;
}

/* ---- test_fork: a forked child's work ---- */

/* Collatz sequence lengths of n numbers from a window of 2^17 (wrapping). */
NOINLINE static uint64_t collatz_steps(uint64_t n)
{
	uint64_t steps = 0;
	for (uint64_t k = 0; k < n; k++) {
		uint64_t x = 1000001 + (k & ((1 << 17) - 1));
		while (x != 1) {
			x = x & 1 ? 3 * x + 1 : x >> 1;
			steps++;
		}
	}
	return steps;
}

/* ---- test_exec's helper: encoders ---- */

enum { ENC_BYTES = 3072 };

static unsigned char enc_buf[ENC_BYTES];

static void enc_init(void)
{
	uint64_t seed = 23;
	for (int i = 0; i < ENC_BYTES; i++) {
		uint64_t r = splitmix(&seed);
		enc_buf[i] = r & 3 ? enc_buf[i ? i - 1 : 0] : (unsigned char)(r >> 8); /* runs */
	}
}

/* Base64 of n 3-byte groups of enc_buf (wrapping), into a ring of output. */
NOINLINE static uint64_t b64_encode(uint64_t n)
{
	static const char tab[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char out[4096];
	uint64_t s = 0;
	for (uint64_t g = 0; g < n; g++) {
		const unsigned char *p = enc_buf + 3 * (g % (ENC_BYTES / 3));
		uint32_t v = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
		char *o = out + 4 * (g & 1023);
		o[0] = tab[v >> 18];
		o[1] = tab[v >> 12 & 63];
		o[2] = tab[v >> 6 & 63];
		o[3] = tab[v & 63];
		s += (unsigned char)out[(g * 7) & 4095];
	}
	return s;
}

/* Run-length encodes n bytes of enc_buf (wrapping); returns the runs' checksum. */
NOINLINE static uint64_t rle_pack(uint64_t n)
{
	uint64_t s = 0, run = 0;
	unsigned char last = enc_buf[0];
	for (uint64_t i = 0; i < n; i++) {
		unsigned char c = enc_buf[i % ENC_BYTES];
		if (c == last && run < 255) {
			run++;
			continue;
		}
		s = s * 131 + run * 256 + last;
		last = c;
		run = 1;
	}
	return s + run;
}

/* ---- the tiny tests ---- */

enum { PREFIX_N = 16384 };

/* n elements' worth of in-place running sums over a 64 KiB array. */
NOINLINE static uint64_t prefix_sums(uint64_t n)
{
	static uint32_t a[PREFIX_N];
	uint32_t acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		size_t j = i & (PREFIX_N - 1);
		if (!j)
			acc = (uint32_t)i;
		acc += a[j] ^ (uint32_t)j;
		a[j] = acc;
	}
	return a[n & (PREFIX_N - 1)];
}

/* Histogram of n bytes of a pseudo-random 64 KiB buffer, in four interleaved tables. */
NOINLINE static uint64_t byte_histogram(uint64_t n)
{
	static unsigned char buf[1 << 16];
	uint32_t h[4][256] = {{0}};
	uint64_t seed = 1;
	for (size_t i = 0; i < sizeof(buf); i += 8) {
		uint64_t r = splitmix(&seed);
		memcpy(buf + i, &r, 8);
	}
	for (uint64_t i = 0; i < n; i++)
		h[i & 3][buf[i & (sizeof(buf) - 1)]]++;
	uint64_t s = 0;
	for (int b = 0; b < 256; b++)
		s = s * 3 + h[0][b] + h[1][b] + h[2][b] + h[3][b];
	return s;
}

/* Integer square roots of n numbers by Newton's method. */
NOINLINE static uint64_t isqrt_newton(uint64_t n)
{
	uint64_t s = 0;
	for (uint64_t k = 0; k < n; k++) {
		uint64_t v = (k + 1) * 0x9e3779b1ull, x = v, y = (x + 1) / 2;
		while (y < x) {
			x = y;
			y = (x + v / x) / 2;
		}
		s += x;
	}
	return s;
}

/* ---- the tests ---- */

/* Units per millisecond of each root, from 'w3 calibrate' on the machine this was written on. */
#define R_INDEX    0.96
#define R_POPCOUNT 683000
#define R_FMT      4330
#define R_PARSE    18900
#define R_SORT     8.96
#define R_LRU      71600
#define R_VM       80000
#define R_ALIGN    299
#define R_GRAY     244000
#define R_BITREV   305000
#define R_FMIX     282000
#define R_SIM      47.7
#define R_MATMUL   2820
#define R_JACOBI   202
#define R_TREE     1.94
#define R_MEMWALK  6980
#define R_SIEVE    23.5
#define R_COLLATZ  5640
#define R_B64      470000
#define R_RLE      1050000
#define R_PREFIX   1820000
#define R_HIST     1810000
#define R_ISQRT    17900

/* LEAF(fn, ms, rate): fn's own loop for about ms milliseconds; ROOT(fn, ms, rate): a
 * pass-through root whose leaves take their knobs per call. */
#define LEAF(fn, ms, rate) (sink += (uint64_t)fn(units(#fn, (ms), (rate))))
#define ROOT(fn, ms, rate) (sink += (uint64_t)fn(root_units((ms), (rate))))

NOINLINE static void test_simulate(void)
{
	mats_init();
	ROOT(sim_run, 900, R_SIM);
}

NOINLINE static void test_linalg(void)
{
	mats_init();
	mat_mul(mat_c, mat_a, mat_b, units("mat_mul", 200, R_MATMUL));
	sink += (uint64_t)(mat_c[7] * 1e6);
	LEAF(jacobi_sweep, 50, R_JACOBI);
}

NOINLINE static void test_index(void)
{
	ROOT(index_run, 290, R_INDEX);
}

NOINLINE static void test_records(void)
{
	records_init();
	LEAF(fmt_records, 110, R_FMT);
	LEAF(parse_numbers, 110, R_PARSE);
	LEAF(rec_sort, 140, R_SORT);
}

NOINLINE static void test_alloc(void)
{
	LEAF(lru_churn, 140, R_LRU);
}

NOINLINE static void test_vm(void)
{
	struct vinsn prog[32];
	vm_assemble(prog, 32);
	sink += vm_run(prog, units("vm_run", 220, R_VM));
}

NOINLINE static void test_align(void)
{
	words_init();
	/* align_corpus passes its count through: edit_distance's knob is on the pairs */
	sink += align_corpus(units("edit_distance", 200, R_ALIGN));
}

NOINLINE static void test_bits(void)
{
	LEAF(gray_rank, 120, R_GRAY);
	LEAF(bit_reverse, 125, R_BITREV);
	LEAF(fmix_chain, 125, R_FMIX);
}

NOINLINE static void test_memory(void)
{
	sink += mem_fill((uint64_t)((double)MEM_WORDS * g_scale * func_factor("mem_fill")));
	LEAF(mem_walk, 240, R_MEMWALK);
}

NOINLINE static void test_tree(void)
{
	ROOT(tree_run, 170, R_TREE);
}

NOINLINE static void test_threads(void)
{
	pthread_t th[2];
	struct sieve_job job[2];
	base_primes_init();
	for (int i = 0; i < 2; i++) {
		job[i] = (struct sieve_job){SIEVE_LO + (uint64_t)i * 200000000,
		                            units("sieve_segment", 100, R_SIEVE), 0};
		if (pthread_create(&th[i], NULL, sieve_worker, &job[i]))
			exit(3);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		sink += job[i].count;
	}
}

NOINLINE static void test_fork(void)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		exit(3);
	if (pid == 0) {
		static uint64_t w[512];
		uint64_t seed = 29;
		for (int i = 0; i < 512; i++)
			w[i] = splitmix(&seed) & splitmix(&seed);
		sink += popcount_sweep(w, 512, units("popcount_sweep", 90, R_POPCOUNT));
		LEAF(collatz_steps, 60, R_COLLATZ);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		exit(1);
}

static const char *self_path = "/proc/self/exe";

NOINLINE static void test_exec(void)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		exit(3);
	if (pid == 0) {
		/* not the shell's last command, so that sh stays between us and the helper */
		execl("/bin/sh", "sh", "-c", "\"$0\" helper; exit $?", self_path, (char *)NULL);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		exit(1);
}

/* test_exec's helper, started through /bin/sh: its work counts under test_exec. */
NOINLINE static void helper(void)
{
	cur_test = "test_exec";
	knobs_load();
	enc_init();
	LEAF(b64_encode, 80, R_B64);
	LEAF(rle_pack, 60, R_RLE);
}

NOINLINE static void test_prefix(void)
{
	LEAF(prefix_sums, 36, R_PREFIX);
}

NOINLINE static void test_hist(void)
{
	LEAF(byte_histogram, 36, R_HIST);
}

NOINLINE static void test_sqrt(void)
{
	LEAF(isqrt_newton, 36, R_ISQRT);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
        {"test_simulate", test_simulate}, {"test_linalg", test_linalg},
        {"test_index", test_index},       {"test_records", test_records},
        {"test_alloc", test_alloc},       {"test_vm", test_vm},
        {"test_align", test_align},       {"test_bits", test_bits},
        {"test_memory", test_memory},     {"test_tree", test_tree},
        {"test_threads", test_threads},   {"test_fork", test_fork},
        {"test_exec", test_exec},         {"test_prefix", test_prefix},
        {"test_hist", test_hist},         {"test_sqrt", test_sqrt},
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
	struct vinsn prog[32];
	static uint64_t w[512];
	records_init();
	words_init();
	mats_init();
	base_primes_init();
	enc_init();
	vm_assemble(prog, 32);
	mem_fill(MEM_WORDS);
	for (int i = 0; i < 512; i++)
		w[i] = i * 0x9e3779b97f4a7c15ull;
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
	CAL("R_INDEX", 20, index_run(20));
	CAL("R_POPCOUNT", 20000000, popcount_sweep(w, 512, 20000000));
	CAL("R_FMT", 300000, fmt_records(300000));
	CAL("R_PARSE", 300000, parse_numbers(300000));
	CAL("R_SORT", 100, rec_sort(100));
	CAL("R_LRU", 1000000, lru_churn(1000000));
	CAL("R_VM", 10000000, vm_run(prog, 10000000));
	CAL("R_ALIGN", 20000, align_corpus(20000));
	CAL("R_GRAY", 50000000, gray_rank(50000000));
	CAL("R_BITREV", 20000000, bit_reverse(20000000));
	CAL("R_FMIX", 20000000, fmix_chain(20000000));
	CAL("R_SIM", 2000, sim_run(2000));
	CAL("R_MATMUL", 50000, (mat_mul(mat_c, mat_a, mat_b, 50000), 0));
	CAL("R_JACOBI", 2000, jacobi_sweep(2000));
	CAL("R_TREE", 20, tree_run(20));
	CAL("R_MEMWALK", 1000000, mem_walk(1000000));
	CAL("R_SIEVE", 500, sieve_segment(SIEVE_LO, 500));
	CAL("R_COLLATZ", 200000, collatz_steps(200000));
	CAL("R_B64", 10000000, b64_encode(10000000));
	CAL("R_RLE", 20000000, rle_pack(20000000));
	CAL("R_PREFIX", 20000000, prefix_sums(20000000));
	CAL("R_HIST", 20000000, byte_histogram(20000000));
	CAL("R_ISQRT", 1000000, isqrt_newton(1000000));
	/* the n-body pass and mat_mul's rows of one simulation step, apart */
	struct body b[NB] = {{0}};
	for (int i = 0; i < NB; i++)
		b[i] = (struct body){i, i * 0.5, -i, 0, 0, 0, 1};
	CAL("nbody pass", 2000, (nbody_forces(b, 2000), 0));
}

int main(int argc, char **argv)
{
	static char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		self_path = exe;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: w3 TEST | list | calibrate | helper\n");
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
			knobs_load();
			tests[i].fn();
			return 0;
		}
	fprintf(stderr, "w3: no test %s\n", argv[1]);
	return 2;
}
