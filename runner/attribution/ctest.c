/* CTest anywhere in the process tree (see ctest.h): a ctest process seen starting is asked for
 * its tests in the background, and the processes that start meanwhile are kept until the
 * answer names them. */
#include "runner/attribution/ctest.h"
#include "runner/attribution/proctree.h"
#include "common/error.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "runner/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void ctest_watch_init(struct ctest_watch *w, struct attrib *a)
{
	memset(w, 0, sizeof(*w));
	w->attrib = a;
}

static void free_argv(char **argv)
{
	if (!argv)
		return;
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}

static void clear_execs(struct ctest_watch *w)
{
	for (size_t i = 0; i < w->nex; i++) {
		free_argv(w->ex[i].argv);
		free(w->ex[i].cwd);
		free(w->ex[i].exe);
	}
	w->nex = 0;
}

static void end_query(struct ctest_query *q, int kill_it)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
	if (q->pid > 0) {
		if (kill_it)
			kill(q->pid, SIGKILL);
		waitpid(q->pid, NULL, 0);
	}
	q->pid = 0;
	strbuf_release(&q->out);
}

void ctest_watch_release(struct ctest_watch *w)
{
	for (size_t i = 0; i < w->nq; i++)
		end_query(&w->q[i], 1);
	free(w->q);
	for (size_t i = 0; i < w->nasked; i++)
		free(w->asked[i]);
	free(w->asked);
	clear_execs(w);
	free(w->ex);
	free(w->gone);
	for (size_t i = 0; i < w->npend; i++)
		free(w->pend[i].exe);
	free(w->pend);
	for (size_t i = 0; i < w->nunnamed; i++)
		free(w->unnamed[i].exe);
	free(w->unnamed);
	memset(w, 0, sizeof(*w));
}

/* Reads a NUL-separated /proc file into a NULL-terminated argv (owned), or NULL. */
static char **read_cmdline(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	struct strbuf sb = STRBUF_INIT;
	sb.max = 1 << 20;
	if (strbuf_read_file(&sb, path) < 0 || !sb.len) {
		strbuf_release(&sb);
		return NULL;
	}
	size_t n = 0;
	for (size_t i = 0; i < sb.len; i++)
		n += sb.buf[i] == '\0';
	if (sb.buf[sb.len - 1] != '\0')
		n++;
	char **argv = xcalloc(n + 1, sizeof(char *));
	size_t k = 0;
	for (size_t i = 0; i < sb.len && k < n; i += strlen(sb.buf + i) + 1)
		argv[k++] = xstrdup(sb.buf + i);
	strbuf_release(&sb);
	return argv;
}

/* The target of /proc/PID/NAME (cwd, exe) into buf, "" when unreadable. */
static void read_proc_link(pid_t pid, const char *name, char *buf, size_t len)
{
	char link[64];
	snprintf(link, sizeof(link), "/proc/%d/%s", (int)pid, name);
	ssize_t n = readlink(link, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
}

/* PWD from the environment pid was exec'd with, into buf ("" when none): the directory a
 * shell launching it was in. */
static void read_environ_pwd(pid_t pid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	struct strbuf sb = STRBUF_INIT;
	sb.max = 1 << 20;
	buf[0] = '\0';
	if (strbuf_read_file(&sb, path) == 0)
		for (size_t i = 0; i < sb.len; i += strlen(sb.buf + i) + 1)
			if (!strncmp(sb.buf + i, "PWD=/", 5) && strlen(sb.buf + i + 4) < len) {
				strcpy(buf, sb.buf + i + 4);
				break;
			}
	strbuf_release(&sb);
}

/* Whether ctest started in dir would find its tests there: the --test-dir it names, or
 * CTestTestfile.cmake in dir itself. */
static int ctest_dir_fits(char *const *argv, const char *dir)
{
	char path[8192];
	for (size_t i = 1; argv[i]; i++) {
		const char *d = NULL;
		if (!strcmp(argv[i], "--test-dir") && argv[i + 1])
			d = argv[i + 1];
		else if (!strncmp(argv[i], "--test-dir=", 11))
			d = argv[i] + 11;
		if (!d)
			continue;
		if (d[0] == '/')
			return 1;
		snprintf(path, sizeof(path), "%s/%s", dir, d);
		return access(path, X_OK) == 0;
	}
	snprintf(path, sizeof(path), "%s/CTestTestfile.cmake", dir);
	return access(path, R_OK) == 0;
}

/* Whether pid is in a test already: a test's child (marked at its fork) stays in its test
 * whatever it runs, even a command line that is another test's (a pipeline of the program
 * another test runs alone). Whichever of the fork and the exec is processed first. */
static int in_test(const struct ctest_watch *w, pid_t pid)
{
	uint32_t t = attrib_proc_test(w->attrib, pid);
	if (t)
		log_debug("process %d is in a test already (its parent's)", (int)pid);
	return t != 0;
}

static void match(struct ctest_watch *w, pid_t pid, char *const *argv, const char *cwd)
{
	if (in_test(w, pid))
		return;
	int64_t i = attrib_ctest_find(w->attrib, argv, cwd);
	if (i >= 0) {
		struct ctest_entry *e = &w->attrib->ctest[i];
		log_debug("process %d is CTest test '%s'", (int)pid, e->name);
		attrib_proc_mark(w->attrib, pid, e->name);
		e->seen = 1;
	}
}

/*
 * A process that ended before /proc showed its command line, running the executable at exe:
 * the test that runs exe when only one does; else, when several do, a stand-in mark that the
 * run's end resolves by elimination (ctest_watch_finish). Under load ciprof may read a short
 * test's exec only after the test has ended: naming nothing sent its CPU time outside tests
 * in some runs and not others.
 */
static void name_by_exe(struct ctest_watch *w, pid_t pid, const char *exe)
{
	if (in_test(w, pid))
		return;
	const char *test = attrib_ctest_match_exe(w->attrib, exe);
	if (test) {
		log_debug("process %d (ended early) is CTest test '%s'", (int)pid, test);
		attrib_proc_mark(w->attrib, pid, test);
		return;
	}
	size_t runs = 0;
	for (size_t i = 0; i < w->attrib->nctest && !runs; i++)
		runs = !strcmp(w->attrib->ctest[i].argv[0], exe);
	if (!runs || w->nunnamed > ATTRIB_UNNAMED_FIRST - ATTRIB_UNNAMED_LAST)
		return;
	for (size_t i = 0; i < w->nunnamed; i++) {
		if (w->unnamed[i].pid == pid && !strcmp(w->unnamed[i].exe, exe)) {
			attrib_proc_mark_id(w->attrib, pid, w->unnamed[i].id); /* asked again */
			return;
		}
	}
	uint32_t id = ATTRIB_UNNAMED_FIRST - (uint32_t)w->nunnamed;
	log_debug("process %d (ended early) runs %s, as several CTest tests do: named at the end",
	          (int)pid, exe);
	ALLOC_GROW(w->unnamed, w->nunnamed + 1, w->unnamed_alloc);
	w->unnamed[w->nunnamed++] = (struct ctest_unnamed){pid, xstrdup(exe), id, 0};
	attrib_proc_mark_id(w->attrib, pid, id);
}

static int is_ctest(const char *path)
{
	return path && !strcmp(launch_basename(path), "ctest");
}

/* A ctest run that executes tests (not one that only lists them or prints its version). */
static int runs_tests(char *const *argv)
{
	for (size_t i = 1; argv[i]; i++)
		if (!strncmp(argv[i], "--show-only", 11) || !strcmp(argv[i], "-N") ||
		    !strcmp(argv[i], "--version") || !strcmp(argv[i], "--help") ||
		    !strcmp(argv[i], "--build-and-test"))
			return 0;
	return 1;
}

/*
 * Starts `ARGV --show-only=json-v1` in cwd (the program at exe when known: argv[0] may have
 * been found on another PATH), its output on a non-blocking pipe. Each distinct invocation
 * (cwd and argv) is asked once. Returns 0, or -1 when it could not start.
 */
static int start_query(struct ctest_watch *w, char *const *argv, const char *cwd, const char *exe)
{
	struct strbuf key = STRBUF_INIT;
	strbuf_addstr(&key, cwd ? cwd : "");
	for (size_t i = 0; argv[i]; i++) {
		strbuf_addch(&key, '\n');
		strbuf_addstr(&key, argv[i]);
	}
	for (size_t i = 0; i < w->nasked; i++) {
		if (!strcmp(w->asked[i], key.buf)) {
			strbuf_release(&key);
			return 0;
		}
	}
	ALLOC_GROW(w->asked, w->nasked + 1, w->asked_alloc);
	w->asked[w->nasked++] = strbuf_detach(&key, NULL);

	size_t argc = 0;
	while (argv[argc])
		argc++;
	char **args = xcalloc(argc + 2, sizeof(char *));
	for (size_t i = 0; i < argc; i++)
		args[i] = argv[i];
	args[argc] = "--show-only=json-v1";
	const char *prog = exe && *exe ? exe : argv[0];
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		free(args);
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL); /* the runner blocks SIGCHLD, SIGINT... */
		dup2(pfd[1], STDOUT_FILENO);
		int devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			dup2(devnull, STDERR_FILENO);
		}
		if (cwd && *cwd && chdir(cwd) < 0)
			_exit(126);
		if (strchr(prog, '/'))
			execv(prog, args);
		else
			execvp(prog, args);
		_exit(127);
	}
	free(args);
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		return -1;
	}
	fcntl(pfd[0], F_SETFL, fcntl(pfd[0], F_GETFL) | O_NONBLOCK);
	ALLOC_GROW(w->q, w->nq + 1, w->q_alloc);
	struct ctest_query *q = &w->q[w->nq++];
	q->pid = pid;
	q->fd = pfd[0];
	strbuf_init(&q->out, 64 << 20);
	q->started = launch_now_ns();
	w->queries++;
	log_verbose("ctest runs in %s: asking it for its tests", cwd && *cwd ? cwd : ".");
	return 0;
}

/* Reads what query q has written; 1 when it has answered (or failed), 0 while it runs. */
static int read_query(struct ctest_query *q, int wait)
{
	char buf[65536];
	for (;;) {
		ssize_t n = read(q->fd, buf, sizeof(buf));
		if (n > 0) {
			if (strbuf_add(&q->out, buf, (size_t)n) < 0)
				return 1; /* absurdly long: loaded as far as it is, and refused */
			continue;
		}
		if (n == 0)
			return 1;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return 1;
		if (!wait)
			return 0;
		struct pollfd p = {q->fd, POLLIN, 0};
		uint64_t waited = launch_now_ns() - q->started;
		if (waited >= CTEST_QUERY_TIMEOUT_NS)
			return 1;
		poll(&p, 1, (int)((CTEST_QUERY_TIMEOUT_NS - waited) / 1000000) + 1);
	}
}

/* Loads the answer of a finished query; a failure only costs the test names: a warning. */
static void finish_query(struct ctest_watch *w, struct ctest_query *q)
{
	int status = 0;
	int timed_out = launch_now_ns() - q->started >= CTEST_QUERY_TIMEOUT_NS;
	close(q->fd);
	q->fd = -1;
	if (timed_out)
		kill(q->pid, SIGKILL);
	waitpid(q->pid, &status, 0);
	q->pid = 0;
	size_t before = w->attrib->nctest;
	if (timed_out)
		log_warn("'ctest --show-only=json-v1' gave no answer in %llu s: CTest tests will "
		         "not "
		         "be named",
		         (unsigned long long)(CTEST_QUERY_TIMEOUT_NS / 1000000000ULL));
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		log_warn("'ctest --show-only=json-v1' failed: CTest tests will not be named");
	else if (attrib_ctest_load(w->attrib, q->out.buf, q->out.len, "ctest --show-only=json-v1") <
	         0)
		log_warn("%s: CTest tests will not be named", cp_last_error());
	else {
		size_t runnable = 0;
		for (size_t i = before; i < w->attrib->nctest; i++)
			runnable += !w->attrib->ctest[i].disabled;
		w->listed += runnable;
		log_verbose("ctest lists %zu tests (%zu disabled)", w->attrib->nctest - before,
		            w->attrib->nctest - before - runnable);
	}
	strbuf_release(&q->out);
}

void ctest_watch_command(struct ctest_watch *w, char **argv)
{
	if (!is_ctest(argv[0]) || !runs_tests(argv))
		return;
	char cwd[4096];
	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = '\0';
	w->root_asked = 1;
	if (start_query(w, argv, cwd, NULL) < 0) {
		log_warn("cannot start 'ctest --show-only=json-v1': CTest tests will not be named");
		return;
	}
	ctest_watch_poll(w, 1);
}

void ctest_watch_exec_argv(struct ctest_watch *w, pid_t pid, pid_t ppid, char *const *argv,
                           const char *cwd, const char *exe)
{
	if (!argv[0])
		return;
	if ((is_ctest(argv[0]) || is_ctest(exe)) && runs_tests(argv)) {
		if (!w->tests_ctest)
			w->tests_ctest = pid; /* for the exec doorbells (perf.c) */
		if (!(pid == w->root && w->root_asked) && start_query(w, argv, cwd, exe) < 0)
			log_warn(
			        "cannot start 'ctest --show-only=json-v1': CTest tests will not be "
			        "named");
	}
	if (w->attrib->nctest)
		match(w, pid, argv, cwd);
	if (!w->nq)
		return;
	size_t argc = 0;
	while (argv[argc])
		argc++;
	char **copy = xcalloc(argc + 1, sizeof(char *));
	for (size_t i = 0; i < argc; i++)
		copy[i] = xstrdup(argv[i]);
	ALLOC_GROW(w->ex, w->nex + 1, w->ex_alloc);
	w->ex[w->nex++] = (struct ctest_exec){pid, ppid, copy, xstrdup(cwd ? cwd : ""), NULL};
}

/*
 * The command line of pid, which has just exec'd, or NULL when it ended first. The exec record
 * that wakes ciprof (the doorbell) is written before execve has put the new command line in
 * place: read that soon, /proc shows an empty one. Re-read at once, not at the next round: a
 * 1-3 ms test (what gtest_discover_tests makes) had ended by then, and was lost to "(outside
 * tests)" in 49 of 60 such tests with a free core. Still empty after CTEST_SETTLE_NS: NULL
 * (pending).
 */
static char **read_new_cmdline(struct ctest_watch *w, pid_t pid)
{
	char **argv = read_cmdline(pid);
	if (argv)
		return argv;
	uint64_t start = launch_now_ns();
	while (!argv && launch_now_ns() - start < CTEST_SETTLE_NS && proctree_pid_alive(pid)) {
		struct timespec pause = {0, 20000};
		nanosleep(&pause, NULL);
		argv = read_cmdline(pid);
	}
	w->settled += argv != NULL;
	return argv;
}

/* An exec whose command line cannot be read: named by its executable's mapping, the first
 * file mapping after the exec (known, or read next). */
static void exec_unread(struct ctest_watch *w, pid_t pid, const char *exe)
{
	if (!exe) {
		ALLOC_GROW(w->gone, w->ngone + 1, w->gone_alloc);
		w->gone[w->ngone++] = pid;
		return;
	}
	name_by_exe(w, pid, exe);
	if (w->nq) {
		ALLOC_GROW(w->ex, w->nex + 1, w->ex_alloc);
		w->ex[w->nex++] = (struct ctest_exec){pid, 0, NULL, NULL, xstrdup(exe)};
	}
}

static void exec_read(struct ctest_watch *w, pid_t pid, const char *comm, char **argv)
{
	char cwd[4096], exe[4096], pwd[4096];
	read_proc_link(pid, "cwd", cwd, sizeof(cwd));
	read_proc_link(pid, "exe", exe, sizeof(exe));
	/* Where ctest started: its cwd, unless it does not hold the tests (ctest changes into
	 * --test-dir, and into a test's working directory while starting it): then the
	 * directory of its parent (make), or the PWD a shell that started it left. */
	for (int i = 0; i < 10 && !strcmp(comm, "ctest") && !ctest_dir_fits(argv, cwd); i++) {
		usleep(1000); /* a test's start takes moments: then ctest changes back */
		read_proc_link(pid, "cwd", cwd, sizeof(cwd));
	}
	if (!strcmp(comm, "ctest") && !ctest_dir_fits(argv, cwd)) {
		char ppath[64], pcwd[4096] = "";
		pid_t ppid = 0;
		snprintf(ppath, sizeof(ppath), "/proc/%d/stat", (int)pid);
		FILE *f = fopen(ppath, "r");
		if (f) {
			if (fscanf(f, "%*d (%*[^)]) %*c %d", &ppid) != 1)
				ppid = 0;
			fclose(f);
		}
		if (ppid > 0 && pid != w->root) /* the command's parent is ciprof */
			read_proc_link(ppid, "cwd", pcwd, sizeof(pcwd));
		read_environ_pwd(pid, pwd, sizeof(pwd));
		if (ppid > 0 && *pcwd && ctest_dir_fits(argv, pcwd))
			strcpy(cwd, pcwd);
		else if (*pwd && ctest_dir_fits(argv, pwd))
			strcpy(cwd, pwd);
	}
	ctest_watch_exec_argv(w, pid, 0, argv, cwd, exe); /* perf: its fork record links it */
	free_argv(argv);
}

static void drop_pending(struct ctest_watch *w, size_t i)
{
	free(w->pend[i].exe);
	w->pend[i] = w->pend[--w->npend];
}

void ctest_watch_exec(struct ctest_watch *w, pid_t pid, const char *comm, uint64_t time)
{
	if (strcmp(comm, "ctest") && !w->attrib->nctest && !w->nq)
		return;
	for (size_t i = 0; i < w->npend; i++)
		if (w->pend[i].pid == pid) {
			drop_pending(w, i); /* it exec'd again */
			break;
		}
	char **argv = read_new_cmdline(w, pid);
	if (argv) {
		exec_read(w, pid, comm, argv);
		return;
	}
	if (!proctree_pid_alive(pid)) {
		/* Too short to catch in /proc. */
		exec_unread(w, pid, NULL);
		return;
	}
	/* Read as it exec'd (the exec doorbells ring at once), before the command line was in
	 * place: asked again next round. */
	ALLOC_GROW(w->pend, w->npend + 1, w->pend_alloc);
	struct ctest_pending *p = &w->pend[w->npend++];
	*p = (struct ctest_pending){pid, "", NULL, launch_now_ns(), time};
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
}

uint64_t ctest_watch_pending_time(const struct ctest_watch *w)
{
	uint64_t t = UINT64_MAX;
	for (size_t i = 0; i < w->npend; i++)
		if (w->pend[i].time < t)
			t = w->pend[i].time;
	return t;
}

int ctest_watch_retry(struct ctest_watch *w, int final)
{
	uint64_t now = launch_now_ns();
	for (size_t i = 0; i < w->npend;) {
		struct ctest_pending p = w->pend[i];
		char **argv = read_cmdline(p.pid);
		if (argv) {
			w->pend[i] = w->pend[--w->npend];
			exec_read(w, p.pid, p.comm, argv);
			free(p.exe);
			continue;
		}
		if (final || now - p.since > CTEST_PENDING_NS || !proctree_pid_alive(p.pid)) {
			log_debug("process %d: its command line was never shown", (int)p.pid);
			w->pend[i] = w->pend[--w->npend];
			exec_unread(w, p.pid, p.exe);
			free(p.exe);
			continue;
		}
		i++;
	}
	return w->npend != 0;
}

void ctest_watch_mmap(struct ctest_watch *w, pid_t pid, const char *filename)
{
	if (filename[0] != '/')
		return;
	for (size_t i = 0; i < w->npend; i++)
		if (w->pend[i].pid == pid && !w->pend[i].exe)
			w->pend[i].exe = xstrdup(filename);
	for (size_t i = 0; i < w->ngone; i++) {
		if (w->gone[i] != pid)
			continue;
		w->gone[i] = w->gone[--w->ngone];
		exec_unread(w, pid, filename);
		return;
	}
}

int ctest_watch_poll(struct ctest_watch *w, int wait)
{
	size_t before = w->attrib->nctest;
	for (size_t i = 0; i < w->nq;) {
		struct ctest_query *q = &w->q[i];
		if (!read_query(q, wait) && launch_now_ns() - q->started < CTEST_QUERY_TIMEOUT_NS) {
			i++;
			continue;
		}
		finish_query(w, q);
		w->q[i] = w->q[--w->nq];
	}
	if (w->attrib->nctest != before) {
		/* New tests known: name the processes that started while they were asked for, in
		 * the order they were read (parents first), each then given its parent's test if
		 * the parent has one now, as the backend would have had it been known then. */
		for (size_t i = 0; i < w->nex; i++) {
			const struct ctest_exec *e = &w->ex[i];
			if (e->argv)
				match(w, e->pid, e->argv, e->cwd);
			else
				name_by_exe(w, e->pid, e->exe);
			if (e->ppid > 0)
				attrib_proc_fork(w->attrib, e->pid, e->ppid);
		}
	}
	if (!w->nq)
		clear_execs(w);
	return w->nq != 0;
}

void ctest_watch_finish(struct ctest_watch *w)
{
	size_t named = 0;
	for (size_t i = 0; i < w->nunnamed; i++) {
		struct ctest_unnamed *u = &w->unnamed[i];
		const char *test = attrib_ctest_unseen_exe(w->attrib, u->exe);
		u->test = test ? profile_intern_name(w->attrib->prof, test) : 0;
		named += test != NULL;
		if (test)
			log_debug("process %d (ended early) is CTest test '%s', the one test of %s "
			          "never seen otherwise",
			          (int)u->pid, test, u->exe);
	}
	if (w->settled)
		log_verbose("ctest: %llu execs read before execve had put their command line in "
		            "place, read again at once",
		            (unsigned long long)w->settled);
	if (w->nunnamed)
		log_verbose("ctest: %zu test processes ended before their command line could be "
		            "read, their program run by several tests: %zu named by elimination, "
		            "%zu left outside tests",
		            w->nunnamed, named, w->nunnamed - named);
	/* Not only with -v: their CPU time is missing from their tests, and a test of a few
	 * milliseconds is lost this way whenever ciprof waits for a CPU as it starts. */
	if (w->nunnamed > named)
		log_warn(
		        "%zu CTest test processes ended before ciprof could read their command "
		        "line, and several tests run their program: their CPU time is outside "
		        "tests (tests of a few milliseconds are lost this way when ciprof does not "
		        "get a CPU within a millisecond of their start: docs/attribution.md, Known "
		        "limits)",
		        w->nunnamed - named);
}
