/* calc big numbers: non-negative integers in base 10^9, enough for exact factorials. */
#include "calc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BASE 1000000000u

static void reserve(struct calc_big *b, size_t n)
{
	if (n <= b->alloc)
		return;
	size_t alloc = b->alloc ? b->alloc : 16;
	while (alloc < n)
		alloc *= 2;
	b->limbs = realloc(b->limbs, alloc * sizeof(*b->limbs));
	if (!b->limbs)
		abort();
	b->alloc = alloc;
}

void calc_big_init(struct calc_big *b, uint32_t v)
{
	memset(b, 0, sizeof(*b));
	reserve(b, 2);
	b->limbs[0] = v % BASE;
	b->n = 1;
	if (v >= BASE)
		b->limbs[b->n++] = v / BASE;
}

void calc_big_release(struct calc_big *b)
{
	free(b->limbs);
	memset(b, 0, sizeof(*b));
}

void calc_big_mul_small(struct calc_big *b, uint32_t m)
{
	uint64_t carry = 0;
	for (size_t i = 0; i < b->n; i++) {
		uint64_t cur = (uint64_t)b->limbs[i] * m + carry;
		b->limbs[i] = (uint32_t)(cur % BASE);
		carry = cur / BASE;
	}
	while (carry) {
		reserve(b, b->n + 1);
		b->limbs[b->n++] = (uint32_t)(carry % BASE);
		carry /= BASE;
	}
	while (b->n > 1 && b->limbs[b->n - 1] == 0)
		b->n--;
}

uint32_t calc_big_mod_small(const struct calc_big *b, uint32_t m)
{
	uint64_t r = 0;
	for (size_t i = b->n; i-- > 0;)
		r = (r * BASE + b->limbs[i]) % m;
	return (uint32_t)r;
}

size_t calc_big_digits(const struct calc_big *b)
{
	size_t d = (b->n - 1) * 9;
	for (uint32_t top = b->limbs[b->n - 1]; top; top /= 10)
		d++;
	return d ? d : 1;
}

char *calc_big_to_string(const struct calc_big *b)
{
	char *s = malloc(b->n * 9 + 1);
	if (!s)
		abort();
	int len = sprintf(s, "%u", b->limbs[b->n - 1]);
	for (size_t i = b->n - 1; i-- > 0;)
		len += sprintf(s + len, "%09u", b->limbs[i]);
	return s;
}

void calc_factorial(struct calc_big *out, uint32_t n)
{
	calc_big_release(out);
	calc_big_init(out, 1);
	for (uint32_t k = 2; k <= n; k++)
		calc_big_mul_small(out, k);
}
