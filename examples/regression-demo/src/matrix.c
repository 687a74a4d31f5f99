#include "work.h"

#define N 24

/* A small integer matrix product (mod 2^32), repeated. */
uint32_t matrix_product(int n, int rounds)
{
	static uint32_t a[N][N], b[N][N], c[N][N];
	if (n > N)
		n = N;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			a[i][j] = (uint32_t)(i * 31 + j * 7 + 1);
			b[i][j] = (uint32_t)(j * 17 + i * 3 + 5);
		}
	uint32_t trace = 0;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++) {
				uint32_t s = 0;
				for (int k = 0; k < n; k++)
					s += a[i][k] * b[k][j];
				c[i][j] = s;
			}
		trace += c[r % n][r % n];
		a[r % n][(r + 1) % n] += 1;
	}
	return trace;
}
