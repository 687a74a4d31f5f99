/* store/ internals: runs' profile blobs, chained in blocks, and the segment tree over a
 * branch's runs (segtree.c). */
#ifndef CP_STORE_SEGTREE_H
#define CP_STORE_SEGTREE_H

#include "store/blob.h"

#include <stdint.h>

struct store;

/* Runs are grouped in blocks of SEGTREE_BLOCK = 2^SEGTREE_MIN_LEVEL consecutive runs of a
 * branch: the first run of a block is coded standalone, the others against the run before, and
 * the segment tree stores levels >= SEGTREE_MIN_LEVEL only (a block and above). */
#define SEGTREE_MIN_LEVEL 4
#define SEGTREE_BLOCK     (1 << SEGTREE_MIN_LEVEL)
#define SEGTREE_MAX_LEVEL 33
/* segtree.id = branch id * 2^40 + level * 2^34 + index: branch ids below 2^23, ranges of up to
 * 2^34 runs. */
#define SEG_KEY(branch, level, idx)                                                                \
	(((int64_t)(branch) << 40) | ((int64_t)(level) << 34) | (int64_t)(idx))

/* Calls fn with the entries of each of runs [from, to] of the branch, decoding the chain from
 * the start of from's block (fn is called for from..to only). fn returns 0 or -1. */
typedef int (*run_fn)(void *ctx, int64_t seq, const struct blob_entries *e);
int runs_decode(struct store *s, int64_t branch_id, int64_t from, int64_t to, run_fn fn, void *ctx);
/* Codes run seq's entries (against prev, the entries of run seq - 1, unless seq starts a
 * block) and stores them as the profile of run_id. */
int runs_put(struct store *s, int64_t run_id, int64_t seq, const struct blob_entries *e,
             const struct blob_entries *prev);
/* After run seq of the branch was stored: when it completes a block, stores the block's node
 * (block_sum = the sum of the block's runs) and every node it completes above. */
int segtree_append(struct store *s, int64_t branch_id, int64_t seq,
                   const struct blob_entries *block_sum);
/* out = merge of runs [lo, hi) of the branch. */
int segtree_query(struct store *s, int64_t branch_id, int64_t lo, int64_t hi,
                  struct blob_entries *out);
/* Sum of tree nodes the branch of n runs must have. */
int64_t segtree_expected_nodes(int64_t nruns);

#endif
