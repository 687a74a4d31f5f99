#include "work.h"

/* Insertion sort of a small array, reshuffled each round. */
int sort_records(int *v, int n, int rounds)
{
	uint32_t s = 12345;
	int check = 0;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < n; i++) {
			s = s * 1103515245u + 12345u;
			v[i] = (int)(s >> 8);
		}
		for (int i = 1; i < n; i++) {
			int x = v[i], j = i - 1;
			while (j >= 0 && v[j] > x) {
				v[j + 1] = v[j];
				j--;
			}
			v[j + 1] = x;
		}
		check += v[n / 2] & 1;
	}
	return check;
}
