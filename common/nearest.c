/* common/nearest: edit distance and the "did you mean" threshold (see nearest.h). */
#include "common/nearest.h"

#include <string.h>

size_t nearest_distance(const char *a, const char *b, size_t limit)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > lb + limit || lb > la + limit || la > 64 || lb > 64)
		return limit + 1;
	size_t d[65][65];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[la][lb];
}

int nearest_is_near(const char *typo, const char *name, size_t *dist)
{
	size_t d = nearest_distance(typo, name, 2);
	if (dist)
		*dist = d;
	return d <= 2 && d < strlen(typo);
}
