/* The one "did you mean" rule: the name nearest to a typo, for commands and branches alike. */
#ifndef CP_NEAREST_H
#define CP_NEAREST_H

#include <stddef.h>

/* The edit distance of a and b (insertions, deletions, substitutions, and swaps of two
 * neighbours), or more than limit when it would be (names over 64 bytes always are). */
size_t nearest_distance(const char *a, const char *b, size_t limit);
/* Whether name is near enough to typo to be its likely meaning: within two edits, and fewer
 * edits than typo has bytes. *dist (when not NULL) gets the distance. */
int nearest_is_near(const char *typo, const char *name, size_t *dist);

#endif
