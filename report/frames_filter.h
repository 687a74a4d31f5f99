/* frames.ignore / frames.fold from .ciprof.yml as a transform of a profile: frames whose
 * function matches an ignore pattern are dropped from every stack; a run of consecutive
 * frames matching fold patterns (after ignoring) is collapsed into its first frame. The
 * process frame at the root of each stack is never touched. Used where profiles are read
 * (report, show), so the stored runs keep every frame. */
#ifndef CP_FRAMES_FILTER_H
#define CP_FRAMES_FILTER_H

#include "config/config.h"
#include "model/profile.h"

#include <regex.h>
#include <stddef.h>

struct frames_filter {
	regex_t *ignore, *fold; /* owned, compiled POSIX extended regexes */
	size_t nignore, nfold;
};

/* Compiles the patterns (borrowed); 0, or -1 with cp_error naming the bad pattern. An
 * initialised filter must be released even after a failure. */
int frames_filter_init(struct frames_filter *f, char *const *ignore, size_t nignore,
                       char *const *fold, size_t nfold);
/* The same from a configuration's frames.ignore and frames.fold. */
int frames_filter_from_config(struct frames_filter *f, const struct config *c);
void frames_filter_release(struct frames_filter *f);
/* 1 when the filter has no pattern at all (applying it would copy the profile). */
int frames_filter_empty(const struct frames_filter *f);

/*
 * Returns a new profile (owned: profile_free) holding in's samples, per test, with the filter
 * applied to every stack; strings, results and stats are carried over. Samples whose stacks
 * become equal are summed. O(nodes + frames + samples).
 */
struct profile *frames_filter_apply(const struct frames_filter *f, const struct profile *in);

#endif
