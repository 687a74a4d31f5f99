/* calc: a small arithmetic library, the example project ciprof profiles in its demo.
 * An expression tokenizer, parser and evaluator, plus a few numeric routines of clearly
 * different cost (big-number factorial, prime sieve, matrix multiply). */
#ifndef CALC_H
#define CALC_H

#include <stddef.h>
#include <stdint.h>

/* ---- tokens ---------------------------------------------------------------------------- */

enum calc_tok_kind {
	CALC_TOK_END,   /* end of input */
	CALC_TOK_NUM,   /* number literal: 12, 3.5, 1e-3 */
	CALC_TOK_IDENT, /* name: a variable or a function */
	CALC_TOK_OP,    /* one of + - * / % ^ ( ) , */
	CALC_TOK_ERROR, /* a character that starts no token */
};

struct calc_token {
	enum calc_tok_kind kind;
	size_t pos; /* byte offset in the input */
	size_t len; /* bytes */
	double num; /* value for CALC_TOK_NUM */
	char op;    /* the operator for CALC_TOK_OP */
};

struct calc_lexer {
	const char *src; /* borrowed */
	size_t pos;
};

void calc_lexer_init(struct calc_lexer *lx, const char *src);
/* Reads the next token into *out; after CALC_TOK_END it keeps returning CALC_TOK_END. */
void calc_lexer_next(struct calc_lexer *lx, struct calc_token *out);

/* ---- expressions --------------------------------------------------------------------------- */

enum calc_node_kind { CALC_NUM, CALC_VAR, CALC_NEG, CALC_BINOP, CALC_CALL };

struct calc_node {
	enum calc_node_kind kind;
	double num;              /* CALC_NUM */
	char op;                 /* CALC_BINOP: + - * / % ^ */
	char name[16];           /* CALC_VAR, CALC_CALL */
	struct calc_node *a, *b; /* operands; CALC_CALL: a = first argument, b = second or NULL */
};

/*
 * Parses src (grammar: expr = term {(+|-) term}; term = unary {(*|/|%) unary};
 * unary = -unary | power; power = atom [^ unary]; atom = NUM | NAME | NAME(expr[,expr]) | (expr)).
 * Returns a new tree owned by the caller (free with calc_node_free) or NULL on a syntax error,
 * with a message in err (at most errlen bytes, may be NULL) naming the byte offset.
 */
struct calc_node *calc_parse(const char *src, char *err, size_t errlen);
void calc_node_free(struct calc_node *n);

/* Variables for evaluation: a small fixed table. */
struct calc_env {
	size_t n;
	char names[16][16];
	double values[16];
};

void calc_env_init(struct calc_env *env);
/* Sets name to value; returns 0, or -1 when the table is full or the name too long. */
int calc_env_set(struct calc_env *env, const char *name, double value);

enum calc_status {
	CALC_OK = 0,
	CALC_ESYNTAX = -1,  /* parse error */
	CALC_EUNKNOWN = -2, /* unknown variable or function */
	CALC_EDOMAIN = -3,  /* division by zero, sqrt of a negative, ... */
};

/* Evaluates n under env (may be NULL) into *out; returns CALC_OK or a negative status. */
int calc_eval(const struct calc_node *n, const struct calc_env *env, double *out);
/* Parses and evaluates src in one call. */
int calc_eval_str(const char *src, const struct calc_env *env, double *out);

/* ---- big numbers ------------------------------------------------------------------------ */

/* A non-negative integer in base 10^9, least significant limb first. */
struct calc_big {
	uint32_t *limbs;
	size_t n, alloc;
};

void calc_big_init(struct calc_big *b, uint32_t v);
void calc_big_release(struct calc_big *b);
/* b *= m */
void calc_big_mul_small(struct calc_big *b, uint32_t m);
/* b mod m, for m < 2^32 */
uint32_t calc_big_mod_small(const struct calc_big *b, uint32_t m);
size_t calc_big_digits(const struct calc_big *b);
/* Decimal string, malloc'd, owned by the caller. */
char *calc_big_to_string(const struct calc_big *b);
/* out = n! (out must be initialised). */
void calc_factorial(struct calc_big *out, uint32_t n);

/* ---- primes ------------------------------------------------------------------------------ */

/* Sieve of Eratosthenes over [0, limit]: returns a malloc'd array of limit+1 bytes, 1 = prime,
 * owned by the caller; NULL when out of memory. */
uint8_t *calc_sieve(uint32_t limit);
/* Segmented sieve step: sets out[i] to 1 when lo + i is prime, for i < len, given every
 * prime up to sqrt(lo + len - 1) in primes[0..nprimes). */
void calc_sieve_segment(uint8_t *out, uint64_t lo, size_t len, const uint32_t *primes,
                        size_t nprimes);
/* Number of primes <= limit, by a segmented sieve (cache-sized segments). */
uint32_t calc_prime_count(uint32_t limit);
/* Trial division. */
int calc_is_prime(uint64_t n);

/* ---- matrices ---------------------------------------------------------------------------- */

/* Row-major n x m matrices of doubles. */
struct calc_matrix {
	size_t rows, cols;
	double *v;
};

/* Returns 0, or -1 when out of memory; the matrix is zeroed. */
int calc_matrix_init(struct calc_matrix *m, size_t rows, size_t cols);
void calc_matrix_release(struct calc_matrix *m);
#define CALC_AT(m, i, j) ((m)->v[(i) * (m)->cols + (j)])
/* out = a * b; out must be initialised a->rows x b->cols. Returns -1 on a size mismatch. */
int calc_matmul(struct calc_matrix *out, const struct calc_matrix *a, const struct calc_matrix *b);
/* out = transpose of a (out initialised a->cols x a->rows). */
void calc_matrix_transpose(struct calc_matrix *out, const struct calc_matrix *a);

#endif
