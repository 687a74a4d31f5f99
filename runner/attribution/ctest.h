/* CTest's process-per-test mapping, wherever ctest runs in the profiled tree: behind
 * `bash -c "ctest -j2"`, `make test`, `cmake --build --target test` or a script. When a ctest
 * process is seen to start, the same ctest (its command line, in its working directory) is
 * asked for its tests with `--show-only=json-v1`, in the background; meanwhile every exec'd
 * process's command line is kept, and the backend holds back processing its records, so that
 * the test processes started before the answer are still named. Both backends use it. */
#ifndef CP_CTEST_H
#define CP_CTEST_H

#include "common/strbuf.h"
#include "runner/attribution/attribute.h"

#include <stdint.h>
#include <sys/types.h>

/* A ctest that never answers is given up after this long (the held-back records are then
 * processed without its test names, with a warning). */
#define CTEST_QUERY_TIMEOUT_NS (10ULL * 1000000000ULL)

struct ctest_query {
	pid_t pid;
	int fd;
	struct strbuf out;
	uint64_t started; /* CLOCK_MONOTONIC ns */
};

/* A process exec'd while a query was outstanding: argv NULL when it ended before /proc showed
 * its command line (then exe, its executable from its first mapping, may still name it). */
struct ctest_exec {
	pid_t pid;
	pid_t ppid;  /* its parent when the backend gave it (preload), else 0 */
	char **argv; /* owned, NULL-terminated */
	char *cwd;   /* owned */
	char *exe;   /* owned, or NULL */
};

/* An exec read before the new program's command line was in place (execve sets it up after
 * the COMM record): asked again each round until /proc shows it or the process is gone. */
struct ctest_pending {
	pid_t pid;
	char comm[16];
	char *exe;      /* owned: its first file mapping since the exec, or NULL */
	uint64_t since; /* CLOCK_MONOTONIC ns, when it was first read */
	uint64_t time;  /* the exec record's time stamp: the records from it on wait */
};

/* How long an exec may wait for its command line: then it is named by its executable. */
#define CTEST_PENDING_NS (200ULL * 1000000ULL)

/* How long ctest_watch_exec re-reads, every 20 us, a command line not in place yet: execve
 * puts it there tens to hundreds of microseconds after the exec record (the doorbell), and a
 * 1 ms test has ended before the next round's re-read. */
#define CTEST_SETTLE_NS (3ULL * 1000000ULL)

/* A test process that ended before /proc showed its command line, whose executable several
 * tests run: marked with a stand-in id until the run's end names it (ctest_watch_finish). */
struct ctest_unnamed {
	pid_t pid;
	char *exe;     /* owned */
	uint32_t id;   /* its stand-in: ATTRIB_UNNAMED_FIRST - its index */
	uint32_t test; /* set by ctest_watch_finish: its test's string id, or 0 */
};

struct ctest_watch {
	struct attrib *attrib; /* borrowed: test lists load and process marks go here */
	struct ctest_query *q;
	size_t nq, q_alloc;
	char **asked; /* owned: "cwd\n argv..." of every ctest asked already */
	size_t nasked, asked_alloc;
	struct ctest_exec *ex;
	size_t nex, ex_alloc;
	pid_t *gone; /* exec'd processes gone before /proc showed them; matched by executable */
	size_t ngone, gone_alloc;
	struct ctest_pending *pend; /* execs whose command line is not shown yet */
	size_t npend, pend_alloc;
	pid_t tests_ctest; /* the first ctest process seen that runs tests (perf arms its exec
	                      doorbells then), 0 before */
	size_t listed;     /* the tests ctest's answers list that can run (not DISABLED) */
	uint64_t started;  /* processes tests_ctest was seen to fork (runner.c runner_fork) */
	uint64_t queries;  /* ctest invocations asked for their tests */
	uint64_t settled;  /* execs read before their command line was in place, then read */
	struct ctest_unnamed *unnamed;
	size_t nunnamed, unnamed_alloc;
	pid_t root;     /* the command's process, once started (set by the backend) */
	int root_asked; /* the command is ctest and was asked before it started */
};

void ctest_watch_init(struct ctest_watch *w, struct attrib *a);
void ctest_watch_release(struct ctest_watch *w);

/*
 * The command itself: when argv runs ctest, asks it for its tests before it starts (so even
 * the first test process is named without holding anything back).
 */
void ctest_watch_command(struct ctest_watch *w, char **argv);

/*
 * perf: process pid exec'd a program named comm (its COMM record, at the time it is read, so
 * that /proc still shows the process). A ctest starts a query; any process is matched with
 * the tests known, or kept for the queries outstanding. A command line not in place yet is
 * re-read for up to CTEST_SETTLE_NS before the exec is left pending (ctest_watch_retry).
 */
void ctest_watch_exec(struct ctest_watch *w, pid_t pid, const char *comm, uint64_t time);
/* perf: a file mapping of pid; the first one after an exec that ctest_watch_exec could not
 * read names its executable. */
void ctest_watch_mmap(struct ctest_watch *w, pid_t pid, const char *filename);
/*
 * perf: reads again the command lines of the execs that were pending (ctest_watch_exec read
 * them before execve had put them in place); names by executable those gone or still
 * unreadable after CTEST_PENDING_NS, or all of them when final. Returns nonzero while some
 * are pending: the runner then polls every millisecond and holds back the records from the
 * oldest pending exec on (ctest_watch_pending_time), so that their samples are counted under
 * their test.
 */
int ctest_watch_retry(struct ctest_watch *w, int final);
/* The time stamp of the oldest pending exec's record (UINT64_MAX: none): the records before it
 * can be processed meanwhile, so what waits is bounded by CTEST_PENDING_NS however many execs
 * follow one another. */
uint64_t ctest_watch_pending_time(const struct ctest_watch *w);
/*
 * preload: process pid, child of ppid, exec'd argv in cwd (its start record carries them).
 * The backend links it to its parent itself (attrib_proc_fork) as it reads the record; a
 * process kept for an outstanding query is linked again once the answer has named it, since
 * its parent, kept too, had no test when it was read (a test's child stays in its test even
 * when its command line is another test's). ppid 0: the backend's fork records link it
 * later, in time order (perf).
 */
void ctest_watch_exec_argv(struct ctest_watch *w, pid_t pid, pid_t ppid, char *const *argv,
                           const char *cwd, const char *exe);

/*
 * Collects the answers of outstanding queries (waiting for them all when wait is set) and
 * names the processes kept meanwhile. Returns nonzero while a query is still outstanding:
 * the backend must not process records yet.
 */
int ctest_watch_poll(struct ctest_watch *w, int wait);

/*
 * The run has ended and every event is read: names each process in w->unnamed (its .test) by
 * elimination, when exactly one test running its executable had no process matched by its
 * command line (attrib_ctest_unseen_exe), else gives it to no test (0). The caller relabels
 * the samples counted under the stand-in ids (aggregator_relabel).
 */
void ctest_watch_finish(struct ctest_watch *w);

#endif
