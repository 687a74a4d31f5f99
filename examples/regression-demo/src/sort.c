#include "work.h"

/* Compare-exchange without branches (the compiler emits conditional moves), so the cost does
 * not depend on the data or on the branch predictor's state. */
#define CX(a, b)                                                                                   \
	do {                                                                                       \
		int lo_ = v[a] < v[b] ? v[a] : v[b];                                               \
		int hi_ = v[a] < v[b] ? v[b] : v[a];                                               \
		v[a] = lo_;                                                                        \
		v[b] = hi_;                                                                        \
	} while (0)

/* Sorts n records in groups of 8 with a sorting network, reshuffled each round. */
int sort_records(int *v0, int n, int rounds)
{
	uint32_t s = 12345;
	int check = 0;
	for (int r = 0; r < rounds; r++) {
		for (int g = 0; g + 8 <= n; g += 8) {
			int *v = v0 + g;
			for (int i = 0; i < 8; i++) {
				s = s * 1103515245u + 12345u;
				v[i] = (int)(s >> 8);
			}
			/* An optimal 19-comparator network for 8 inputs. */
			CX(0, 2);
			CX(1, 3);
			CX(4, 6);
			CX(5, 7);
			CX(0, 4);
			CX(1, 5);
			CX(2, 6);
			CX(3, 7);
			CX(0, 1);
			CX(2, 3);
			CX(4, 5);
			CX(6, 7);
			CX(2, 4);
			CX(3, 5);
			CX(1, 4);
			CX(3, 6);
			CX(1, 2);
			CX(3, 4);
			CX(5, 6);
			check += v[3] & 1;
		}
	}
	return check;
}
