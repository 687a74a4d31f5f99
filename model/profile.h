/* The in-memory profile: what a run measured, symbolized. Strings are interned, frames are
 * (function, module, file, line), stacks are nodes of a trie (parent, frame), and samples are
 * counted per (test, stack node). runner/ builds one, store/ persists it, report/ reads it.
 *
 * Conventions: string id 0 is "", node id 0 is the trie's root (no frame), test id 0 is ""
 * (outside any test). The first frame of every stack is the process's executable name
 * (module "", file "", line 0 and kind PROFILE_FRAME_PROCESS). */
#ifndef CP_PROFILE_H
#define CP_PROFILE_H

#include "common/hashidx.h"

#include <stdint.h>
#include <stdio.h>

/* The deepest stack, in frames with the process's, that a profile may hold: the importers refuse
 * deeper ones (naming where), and the store calls a deeper chain in its file corrupt. ciprof's
 * own runner stops at 256 frames; perf at kernel.perf_event_max_stack (127 by default). */
#define PROFILE_MAX_DEPTH 1000000

enum profile_frame_kind {
	PROFILE_FRAME_FUNCTION = 0, /* a symbol, or "module+0xOFFSET" when unresolved */
	PROFILE_FRAME_PROCESS = 1,  /* the root frame: the executable's name */
};

struct profile_frame {
	uint32_t function; /* string ids */
	uint32_t module;   /* basename of the ELF object, "" when unknown */
	uint32_t file;     /* source file, "" without DWARF */
	uint32_t line;     /* 0 without DWARF */
	uint32_t kind;     /* enum profile_frame_kind */
};

struct profile_node {
	uint32_t parent; /* node id; 0 for a root-level frame */
	uint32_t frame;  /* frame index */
};

struct profile_sample {
	uint32_t test;  /* string id of the test name; 0 = outside tests */
	uint32_t node;  /* leaf node of the stack */
	uint64_t count; /* samples */
};

/* The frame under a process that holds the CPU time no sample saw (runner/attribution/cputime.h).
 */
#define PROFILE_UNSAMPLED "[unsampled]"

/* A run's figures, in one struct wherever they go: a profile's own (set where they are
 * measured, merged by profile_stats_add), a stored run's (run_meta.stats, the runs table's
 * columns). */
struct profile_stats {
	uint64_t samples;          /* samples taken (stored) */
	uint64_t lost;             /* samples the kernel dropped (PERF_RECORD_LOST) */
	uint64_t processes;        /* processes seen */
	uint64_t threads;          /* threads seen */
	uint64_t unseen_processes; /* processes seen to start that sent no record of their own:
	                              set by the runner only (perf backend), stored as the run's
	                              tag RUN_TAG_UNSEEN, not as a column */
	uint64_t period_ns;        /* nanoseconds of CPU per sample (1e9 / hz) */
	double dispersion;         /* the sample events' periods squared over their periods (1: each
	                              stands for one period, as under perf; the preload backend's
	                              stand for all the CPU time since the last): a count of n
	                              periods varies as n * dispersion would under Poisson; set by
	                              the runner only, stored as the run's tag RUN_TAG_DISPERSION */
	double silent_seconds;     /* CPU time counted on a CPU after its ring buffer fell silent
	                              (runner_session.silent_ns): set by the runner only (perf
	                              backend), stored as the run's tag RUN_TAG_SILENT */
	double cpu_seconds;       /* the profile's CPU time: samples * period, unsampled included */
	double unsampled_seconds; /* of it, CPU time no sample saw (the "[unsampled]" frames) */
	double wall_seconds;      /* command's wall time */
	double others_seconds;    /* CPU seconds other processes on the machine used meanwhile:
	                             set by the runner only (host_busy_cpus times wall_seconds;
	                             negative: unknown, /proc/stat unreadable or the command
	                             too short for its ticks), 0 in
	                             any other profile, where nothing reads it; stored as the run's
	                             tag RUN_TAG_OTHER_CPUS, not as a column */
	int hz;
	int exit_status; /* the command's exit status as ciprof exits with it */
};

/* A test's outcome from the test runner's report (JUnit XML); not every test has one. */
struct profile_result {
	uint32_t test;   /* string id of the test's name */
	uint32_t status; /* 0 passed, 1 failed, 2 error, 3 skipped (enum junit_status) */
	double seconds;  /* the runner's own duration for the test */
};

/* An ELF object's GNU build id, by module (the frames' basename): what pprof's mappings
 * carry so that tools can find the exact binary. */
struct profile_module {
	uint32_t module;   /* string id of the basename */
	uint32_t build_id; /* string id of the lower-case hex build id; 0 ("") when two objects
	                    * of this name had different ids (then none is given) */
};

struct profile {
	/* strings: offsets into one pool, each NUL-terminated */
	char *pool;
	size_t pool_len, pool_alloc;
	uint32_t *str_off;
	size_t nstr, str_alloc;
	struct hashidx str_idx;

	struct profile_frame *frames;
	size_t nframes, frames_alloc;
	struct hashidx frame_idx;

	struct profile_node *nodes; /* nodes[0] is the root */
	size_t nnodes, nodes_alloc;
	struct hashidx node_idx;

	struct profile_sample *samples;
	size_t nsamples, samples_alloc;
	struct hashidx sample_idx;

	struct profile_result *results; /* at most one per test, in insertion order */
	size_t nresults, results_alloc;
	struct hashidx result_idx; /* test id -> position in results */

	struct profile_module *modules; /* at most one per module name, few: searched linearly */
	size_t nmodules, modules_alloc;

	struct profile_stats stats;
};

/* Heap object: owned by the caller, freed with profile_free. */
struct profile *profile_new(void);
void profile_free(struct profile *p);

/* Interns s and returns its id; profile_str returns a pointer valid until the next intern. */
uint32_t profile_intern(struct profile *p, const char *s);

/* The most bytes a name from outside keeps (see profile_intern_name). */
#define PROFILE_NAME_MAX 4096
/* Interns a name from outside - a symbol, a source file or module path, a test or process
 * name, a frame of an imported profile - cleaned once, here, where it enters a profile:
 * valid UTF-8 (an invalid byte becomes U+FFFD) and at most PROFILE_NAME_MAX bytes (cut on a
 * character boundary, ending in U+2026). Every output then only escapes it for its kind
 * (common/escape.h, report_escape). profile_intern keeps bytes as they are (the store's
 * dictionary, names already clean). */
uint32_t profile_intern_name(struct profile *p, const char *s);
uint32_t profile_intern_name_len(struct profile *p, const char *s, size_t len);
uint32_t profile_intern_len(struct profile *p, const char *s, size_t len);
const char *profile_str(const struct profile *p, uint32_t id);
/* The id of s if it was interned, else -1 (interns nothing). */
int64_t profile_find_str(const struct profile *p, const char *s);

/* Interns a frame by value and returns its index. */
uint32_t profile_frame(struct profile *p, const struct profile_frame *f);
/* The node for `frame` under `parent`, created when new. */
uint32_t profile_node(struct profile *p, uint32_t parent, uint32_t frame);
/* Adds count samples of stack node to test. */
void profile_add(struct profile *p, uint32_t test, uint32_t node, uint64_t count);
/* The count of (test, node) so far, 0 when it has none. */
uint64_t profile_count(const struct profile *p, uint32_t test, uint32_t node);

/* Records (or replaces) the outcome of test. */
void profile_set_result(struct profile *p, uint32_t test, uint32_t status, double seconds);
/* The outcome of test, or NULL. Borrowed. */
const struct profile_result *profile_result(const struct profile *p, uint32_t test);

/* Build ids as text: lower-case hex of at most PROFILE_BUILD_ID_MAX bytes. to_hex writes
 * 2n+1 chars into out; from_hex returns the bytes read (hex of either case, whole bytes), or
 * -1 when hex is empty, not hex, or too long. */
#define PROFILE_BUILD_ID_MAX 64
void profile_build_id_to_hex(char *out, const unsigned char *id, size_t n);
int profile_build_id_from_hex(unsigned char *out, const char *hex);

/* Records the build id (hex, either case; anything else is ignored) of an object named module
 * (string id). A second, different id for the same name makes it unknown for good: a build id
 * must never name the wrong file. */
void profile_set_build_id(struct profile *p, uint32_t module, const char *hex);
/* module's build id (lower-case hex), or NULL when unknown. Borrowed, valid until the next
 * intern. */
const char *profile_build_id(const struct profile *p, uint32_t module);

/* Depth of a node (root = 0) and its frames root-first into out[0..depth). */
size_t profile_node_depth(const struct profile *p, uint32_t node);
size_t profile_node_frames(const struct profile *p, uint32_t node, uint32_t *out, size_t max);

/* Adds every sample of src into dst (re-interning strings, frames and nodes; outcomes and
 * build ids too). */
void profile_merge(struct profile *dst, const struct profile *src);
/* The same, but with every sample (and outcome) under test (NULL: each keeps its own). */
void profile_merge_test(struct profile *dst, const struct profile *src, const char *test);
/* The same as profile_merge, with src's string id s named renamed[s] wherever that is not NULL
 * (renamed has one entry per string of src). */
void profile_merge_renamed(struct profile *dst, const struct profile *src, char *const *renamed);

/* The one rule for the statistics of several runs merged: counts, CPU and wall time summed,
 * the highest rate kept, and the sources' period while they all have one. profile_stats_finish
 * then sets the period of sources of mixed periods: their sampled CPU time per sample (1/hz
 * when within 10 % of it). */
void profile_stats_add(struct profile_stats *dst, const struct profile_stats *src);
void profile_stats_finish(struct profile_stats *st);

/* Sum of samples, optionally of one test (test_filter = NULL for all). */
uint64_t profile_total(const struct profile *p, const char *test_filter);

/*
 * Folded text (Brendan Gregg's format): "root;caller;callee COUNT\n" per stack, root = the
 * process name, stacks sorted for deterministic output, the same stack of several tests summed
 * unless test_filter names one test. ';' and newlines inside names are written as '_'.
 * Returns 0, or -1 with cp_error set when writing fails.
 */
int profile_write_folded(const struct profile *p, FILE *out, const char *test_filter);

/*
 * Parses folded text into p (added to what it holds, all under test id 0; the first frame of
 * each line becomes the process frame). A UTF-8 byte order mark at the start is skipped. A
 * stack's summed count, or the profile's total, past UINT64_MAX is an error at the line that
 * makes it so. name is used in errors: "NAME:LINE:COLUMN: what". Returns 0, or -1 with cp_error set
 * and p possibly partly filled.
 */
int profile_parse_folded(struct profile *p, const char *text, size_t len, const char *name);

#endif

#ifndef CP_PROFILE_FUNCS
#define CP_PROFILE_FUNCS
/* Per-function totals: self = samples whose leaf is the function, total = samples with the
 * function anywhere on the stack (counted once per stack, so recursion does not inflate it). */
struct profile_func {
	uint32_t function; /* string ids */
	uint32_t module;
	uint64_t self, total;
};

/*
 * Fills *out (owned by the caller, free()) with one entry per (function, module) seen, process
 * frames excluded, sorted by self then total descending, then by name. test_filter = NULL for
 * all tests. Returns the number of entries.
 */
size_t profile_functions(const struct profile *p, const char *test_filter,
                         struct profile_func **out);
#endif
