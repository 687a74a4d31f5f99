/* Which test is each sample from. Sources, strongest first (shared/DESIGN.md):
 *   1. thread marks: "begin TID NAME" / "end TID NAME" lines on the CIPROF_CONTROL_FD pipe,
 *      and process marks: "proc PID NAME" (ciprof exec-test) and CTest's process-per-test
 *      mapping; a process mark is inherited by the process's children;
 *   2. stack rules, applied after symbolization: the frame that a framework's runner frame
 *      calls is the test (cmocka, Check, Go...), or a frame names its test itself (GoogleTest's
 *      Suite_Name_Test::TestBody);
 *   3. output markers ("[ RUN      ] x", "=== RUN   TestX", ...): weak, used only when
 *      nothing above applies; overlapping windows are "(ambiguous)", never guessed.
 * Samples with none of these belong to "" ("(outside tests)"). */
#ifndef CP_ATTRIBUTE_H
#define CP_ATTRIBUTE_H

#include "common/hashidx.h"
#include "model/profile.h"

#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ATTRIB_AMBIGUOUS "(ambiguous)"
/* attrib_sample's answer for a sample inside a TAP test whose result line has not come yet:
 * not a string id. The aggregator keeps such samples aside until attrib names their test
 * (attrib.resolve), or gives them to no test at the end. */
#define ATTRIB_PENDING UINT32_MAX
/* Process marks standing for one CTest test process each, until the run's end names it
 * (ctest.h, ctest_watch_finish): ids ATTRIB_UNNAMED_FIRST, ATTRIB_UNNAMED_FIRST - 1, ... down to
 * ATTRIB_UNNAMED_LAST, never string ids. The runner relabels every one before symbolizing
 * (aggregator_relabel). */
#define ATTRIB_UNNAMED_FIRST (UINT32_MAX - 1)
#define ATTRIB_UNNAMED_LAST  (UINT32_MAX - (1U << 24))
/* The longest test name a mark carries (CIPROF_NAME_MAX of include/ciprof.h, which stays
 * dependency-free and so states it again). */
#define ATTRIB_NAME_MAX 1024

/* A stack rule. caller NULL: any frame matching test names its own test. */
struct attrib_rule {
	char *name;   /* owned; "cmocka", "googletest", or the user's name */
	char *caller; /* owned regex source (POSIX ERE) or NULL */
	char *test;   /* owned regex source */
	char *as;     /* owned replacement: "\1" style back-references; NULL = whole match */
	regex_t caller_re, test_re;
	int compiled;
};

struct attrib_rules {
	struct attrib_rule *r;
	size_t n, alloc;
};

/* The built-in rules (runner/attribution/rules.c), appended to rules. */
void attrib_rules_add_builtin(struct attrib_rules *rules);
/* Appends one rule (copies the strings); 0, or -1 with cp_error naming the bad regex. */
int attrib_rules_add(struct attrib_rules *rules, const char *name, const char *caller,
                     const char *test, const char *as);
void attrib_rules_release(struct attrib_rules *rules);

/*
 * For every node of p, the test its stack belongs to by the rules (string id in p), or 0.
 * The outermost match on the stack wins. Returns a new array of p->nnodes ids (free()).
 */
uint32_t *attrib_rules_node_tests(const struct attrib_rules *rules, struct profile *p);

/* One test name a CTest process may be: its command line and working directory. */
struct ctest_entry {
	char *name;   /* owned */
	char **argv;  /* owned, NULL-terminated */
	char *cwd;    /* owned, may be "" */
	int seen;     /* a process was matched to it by its command line (ctest.c) */
	int disabled; /* its DISABLED property: listed, never run */
};

struct attrib_window {
	uint64_t start, end; /* end = UINT64_MAX while open */
	uint32_t test;
};

struct attrib_tid {
	pid_t tid;
	uint64_t *times; /* transitions, ascending */
	uint32_t *tests; /* test from that time on; 0 = none */
	size_t n, alloc;
	uint64_t last; /* time of the thread's latest sample asked of attrib_sample_parts, or of
	                  the end of the thread that had its id before; 0: none yet */
};

struct attrib {
	struct profile *prof; /* borrowed: test names are interned here */

	struct attrib_tid *tids;
	size_t ntids, tids_alloc;
	struct hashidx tid_idx;

	pid_t *proc_pid; /* process marks: pid -> test */
	uint32_t *proc_test;
	unsigned char *proc_own; /* marked by a 'proc' control line (ciprof exec-test): kept
	                            when the fork that made the process is read later */
	size_t nprocs, procs_alloc;
	struct hashidx proc_idx;

	struct attrib_window *win; /* output-marker windows, by start */
	size_t nwin, win_alloc;
	size_t win_first; /* windows before this one ended before the processing frontier */

	struct ctest_entry *ctest;
	size_t nctest, ctest_alloc;

	uint32_t ambiguous; /* string id of ATTRIB_AMBIGUOUS */

	/* TAP: after a plan or a result line, the next test runs until its own result line. */
	int tap;           /* a TAP stream is on: samples after tap_last are ATTRIB_PENDING */
	uint64_t tap_last; /* time of the last plan or result line */
	uint64_t tap_results;
	/* Called when the pending samples turn out to be test `test` (0: no test). */
	void (*resolve)(void *ctx, uint32_t test);
	void *resolve_ctx;
	uint64_t marks, proc_marks, bad_lines;
	uint64_t names_cut; /* marks whose name was cut at CIPROF_NAME_MAX (include/ciprof.h) */
};

void attrib_init(struct attrib *a, struct profile *prof);
void attrib_release(struct attrib *a);

/*
 * One line of the control protocol (without its newline), received at time t (CLOCK_MONOTONIC
 * ns): "begin TID NAME", "end TID NAME" or "proc PID NAME", optionally prefixed with
 * "@TIME " (the marker's own CLOCK_MONOTONIC ns when it marked, used instead of t unless later
 * than t) or "@TIME~ " (the same, and the name was cut at CIPROF_NAME_MAX: counted in
 * names_cut). With the prefix, NAME is escaped: \n, \r and \\ stand for newline, carriage
 * return and backslash (include/ciprof.h). Returns 0, or -1 for a malformed line (counted in
 * bad_lines; the message is left in cp_error).
 */
int attrib_control_line(struct attrib *a, const char *line, uint64_t t);

/* The summary's warnings about marks: malformed lines, names cut. */
void attrib_warn(const struct attrib *a);

/* Process marks: set, inherit at fork, clear at exit. A process's own mark from a 'proc'
 * control line (ciprof exec-test) outlives the fork record that made it, which the runner can
 * read after the mark (the mark comes through a pipe, the fork through the sampling ring): a
 * test's child running ciprof exec-test keeps its own test. Other marks (CTest naming's,
 * attrib_proc_mark) give way to the parent's test at fork. */
void attrib_proc_mark(struct attrib *a, pid_t pid, const char *test);
/* The same with a test id: a string id of a->prof, or an ATTRIB_UNNAMED_FIRST.. id. */
void attrib_proc_mark_id(struct attrib *a, pid_t pid, uint32_t test);
/* The test process pid is marked with (its own mark or its parent's at fork), 0 when none. */
uint32_t attrib_proc_test(const struct attrib *a, pid_t pid);
void attrib_proc_fork(struct attrib *a, pid_t pid, pid_t ppid);
void attrib_proc_exit(struct attrib *a, pid_t pid);

/* An output-marker event: a test began or ended at time t. attrib_window_end closes the
 * test's newest open window; a test with none (a summary line naming it again) ends nothing. */
void attrib_window_begin(struct attrib *a, const char *test, uint64_t t);
void attrib_window_end(struct attrib *a, const char *test, uint64_t t);

/*
 * TAP: a plan line ("1..N") at time t: before any result, the first test starts here; after
 * results (a plan at the end), the tests are over. A result line ("ok 3 - name") at time t:
 * the test ran from the previous plan or result line (or the previous window's end) to t, and
 * the samples held back as ATTRIB_PENDING meanwhile are its own (a->resolve).
 */
void attrib_tap_plan(struct attrib *a, uint64_t t);
void attrib_tap_result(struct attrib *a, const char *test, uint64_t t);

/*
 * The test of a sample of (pid, tid) at time t: the thread mark, else the process mark
 * (*weak = 0), else the output-marker window (*weak = 1, ATTRIB_AMBIGUOUS when several
 * overlap), else ATTRIB_PENDING inside a TAP test not finished yet (*weak = 1), else 0.
 * Samples must be asked in nondecreasing time order.
 */
uint32_t attrib_sample(struct attrib *a, pid_t pid, pid_t tid, uint64_t t, int *weak);

/* One test's part of a sample (attrib_sample_parts). */
struct attrib_part {
	uint32_t test;
	int weak;
	uint64_t weight;
};
#define ATTRIB_MAX_PARTS 256

/*
 * attrib_sample for a sample of thread tid taken at t that stands for weight periods of its
 * CPU time: all the time since the thread's previous sample. The LD_PRELOAD backend's CPU-time
 * timers fire late on an overloaded machine (signals hundreds of milliseconds of CPU apart,
 * docs/preload.md), and one sample then carries all of it. When the thread's marks changed its
 * test since its previous sample, the weight is shared between the tests in proportion to the
 * wall time each held, as if the thread ran evenly since that sample (the stack is the one
 * taken at t); for the thread's first sample, since its first mark. A part whose thread had no
 * test gets what attrib_sample's other sources give at t. Fills parts (at most ATTRIB_MAX_PARTS;
 * more changes fold into the last part), weights summing to weight, and returns how many. Same
 * order rule as attrib_sample.
 */
size_t attrib_sample_parts(struct attrib *a, pid_t pid, pid_t tid, uint64_t t, uint64_t weight,
                           struct attrib_part *parts);
/* Thread tid ended at t: a later thread on its id starts after it. */
void attrib_thread_exit(struct attrib *a, pid_t tid, uint64_t t);

/*
 * CTest: loads `ctest --show-only=json-v1` output (the tests' commands and working
 * directories). 0, or -1 with cp_error naming what is wrong (source names the input).
 */
int attrib_ctest_load(struct attrib *a, const char *json, size_t len, const char *source);
/* The CTest test whose command is argv (in cwd), as an index into a->ctest, or -1. */
int64_t attrib_ctest_find(const struct attrib *a, char *const *argv, const char *cwd);
/* The CTest test whose command runs the executable at path, when exactly one does (a process
 * that ended before its command line could be read), or NULL. */
const char *attrib_ctest_match_exe(const struct attrib *a, const char *path);
/*
 * The one test running the executable at path that no process was matched to by its command
 * line (entry.seen, under any of the test's entries), or NULL when none or several are left:
 * after the run, a test process that ended before its command line could be read is the test
 * of its program that was never seen otherwise.
 */
const char *attrib_ctest_unseen_exe(const struct attrib *a, const char *path);

#endif
