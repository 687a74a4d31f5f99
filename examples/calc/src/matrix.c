/* calc matrices: dense row-major doubles with a cache-friendly (i, k, j) multiply. */
#include "calc.h"

#include <stdlib.h>
#include <string.h>

int calc_matrix_init(struct calc_matrix *m, size_t rows, size_t cols)
{
	m->rows = rows;
	m->cols = cols;
	size_t count = rows * cols;
	m->v = calloc(count ? count : 1, sizeof(double));
	return m->v ? 0 : -1;
}

void calc_matrix_release(struct calc_matrix *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}

int calc_matmul(struct calc_matrix *out, const struct calc_matrix *a, const struct calc_matrix *b)
{
	if (a->cols != b->rows || out->rows != a->rows || out->cols != b->cols)
		return -1;
	memset(out->v, 0, out->rows * out->cols * sizeof(double));
	for (size_t i = 0; i < a->rows; i++) {
		double *orow = &out->v[i * out->cols];
		for (size_t k = 0; k < a->cols; k++) {
			double aik = CALC_AT(a, i, k);
			const double *brow = &b->v[k * b->cols];
			for (size_t j = 0; j < b->cols; j++)
				orow[j] += aik * brow[j];
		}
	}
	return 0;
}

void calc_matrix_transpose(struct calc_matrix *out, const struct calc_matrix *a)
{
	for (size_t i = 0; i < a->rows; i++)
		for (size_t j = 0; j < a->cols; j++)
			CALC_AT(out, j, i) = CALC_AT(a, i, j);
}
