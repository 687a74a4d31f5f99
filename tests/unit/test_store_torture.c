/* Torture test of the store, after curl's: storing a run (open, add, close) and gc (fold two
 * runs of one commit, drop them, rewrite every table, close) are repeated with the k-th file
 * write (xWrite, xTruncate or xSync of the database, its WAL or journal), the k-th SQLite
 * allocation, or the k-th ciprof allocation (xmalloc & co.) failing, for every k the operation
 * reaches. Each time the database must pass store_check and hold exactly what it held before
 * or exactly what the operation makes of it (every run's metadata, profile and test outcomes
 * compared), and the failure must be reported clearly: a message naming the file, or for
 * ciprof's own allocations (which abort by design) "out of memory". A failed operation is then
 * retried on the same handle with the faults off and must succeed: nothing cached in memory
 * may outlive the rolled-back transaction. The faults come from a shim VFS and SQLite's
 * allocator hook (SQLITE_CONFIG_MALLOC) set up here, and from xalloc_test_fail; each attempt
 * runs in a forked child, since an xmalloc failure aborts. */
#include "store/store.h"
#include "common/error.h"
#include "test_store_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>

/* ---- fault injection --------------------------------------------------------------------- */

enum fault_kind { FAULT_NONE, FAULT_WRITE, FAULT_SQLITE_MALLOC, FAULT_XALLOC, FAULT_NKINDS };
static const char *const fault_name[FAULT_NKINDS] = {"none", "file write", "SQLite allocation",
                                                     "ciprof allocation"};

/* The kind armed, the attempt to fail (1-based; 0 = count only), the attempts so far, and
 * whether the fault fired. */
static enum fault_kind fault_kind;
static long fault_at, fault_count;
static int fault_fired;

static int fault_now(enum fault_kind kind)
{
	if (fault_kind != kind)
		return 0;
	if (++fault_count != fault_at)
		return 0;
	fault_fired = 1;
	return 1;
}

static sqlite3_mem_methods real_mem;

static void *mem_malloc(int n)
{
	return fault_now(FAULT_SQLITE_MALLOC) ? NULL : real_mem.xMalloc(n);
}

static void *mem_realloc(void *p, int n)
{
	return fault_now(FAULT_SQLITE_MALLOC) ? NULL : real_mem.xRealloc(p, n);
}

static void mem_free(void *p)
{
	real_mem.xFree(p);
}

static int mem_size(void *p)
{
	return real_mem.xSize(p);
}

static int mem_roundup(int n)
{
	return real_mem.xRoundup(n);
}

static int mem_init(void *arg)
{
	return real_mem.xInit(arg);
}

static void mem_shutdown(void *arg)
{
	real_mem.xShutdown(arg);
}

static int xalloc_fault(size_t n)
{
	(void)n;
	return fault_now(FAULT_XALLOC);
}

/* A VFS shim over the default one whose files fail the armed write. */
struct fault_file {
	sqlite3_file base;
	sqlite3_file *real; /* follows this struct in the same allocation */
};

static sqlite3_vfs *real_vfs;
static sqlite3_vfs fault_vfs;
static sqlite3_io_methods fault_io;

#define REAL(f) (((struct fault_file *)(f))->real)

static int ff_close(sqlite3_file *f)
{
	return REAL(f)->pMethods->xClose(REAL(f));
}

static int ff_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	return REAL(f)->pMethods->xRead(REAL(f), buf, n, off);
}

static int ff_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	if (fault_now(FAULT_WRITE))
		return SQLITE_IOERR_WRITE;
	return REAL(f)->pMethods->xWrite(REAL(f), buf, n, off);
}

static int ff_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	if (fault_now(FAULT_WRITE))
		return SQLITE_IOERR_TRUNCATE;
	return REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int ff_sync(sqlite3_file *f, int flags)
{
	if (fault_now(FAULT_WRITE))
		return SQLITE_IOERR_FSYNC;
	/* Counted, not waited for: the test is about failures, not power loss, and a thousand
	 * fsyncs would take most of its time. */
	(void)flags;
	return SQLITE_OK;
}

static int ff_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	return REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int ff_lock(sqlite3_file *f, int level)
{
	return REAL(f)->pMethods->xLock(REAL(f), level);
}

static int ff_unlock(sqlite3_file *f, int level)
{
	return REAL(f)->pMethods->xUnlock(REAL(f), level);
}

static int ff_check_reserved(sqlite3_file *f, int *out)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}

static int ff_file_control(sqlite3_file *f, int op, void *arg)
{
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int ff_sector_size(sqlite3_file *f)
{
	return REAL(f)->pMethods->xSectorSize(REAL(f));
}

static int ff_device_characteristics(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

static int ff_shm_map(sqlite3_file *f, int pg, int pgsz, int extend, void volatile **out)
{
	return REAL(f)->pMethods->xShmMap(REAL(f), pg, pgsz, extend, out);
}

static int ff_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
	return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}

static void ff_shm_barrier(sqlite3_file *f)
{
	REAL(f)->pMethods->xShmBarrier(REAL(f));
}

static int ff_shm_unmap(sqlite3_file *f, int delete_flag)
{
	return REAL(f)->pMethods->xShmUnmap(REAL(f), delete_flag);
}

static int ff_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags,
                   int *out_flags)
{
	(void)vfs;
	struct fault_file *ff = (struct fault_file *)f;
	ff->real = (sqlite3_file *)(ff + 1);
	int rc = real_vfs->xOpen(real_vfs, name, ff->real, flags, out_flags);
	/* Only the file methods of version 2 (no memory-mapped I/O: all writes go through
	 * xWrite, which the shim sees); SQLite checks iVersion before using the rest. */
	ff->base.pMethods = ff->real->pMethods ? &fault_io : NULL;
	return rc;
}

static void faults_install(void)
{
	assert_int_equal(sqlite3_config(SQLITE_CONFIG_GETMALLOC, &real_mem), SQLITE_OK);
	sqlite3_mem_methods m = real_mem;
	m.xMalloc = mem_malloc;
	m.xFree = mem_free;
	m.xRealloc = mem_realloc;
	m.xSize = mem_size;
	m.xRoundup = mem_roundup;
	m.xInit = mem_init;
	m.xShutdown = mem_shutdown;
	assert_int_equal(sqlite3_config(SQLITE_CONFIG_MALLOC, &m), SQLITE_OK);
	assert_int_equal(sqlite3_initialize(), SQLITE_OK);

	real_vfs = sqlite3_vfs_find(NULL);
	assert_non_null(real_vfs);
	/* The default VFS's own functions and data, with our files around its files. */
	fault_vfs = *real_vfs;
	fault_vfs.zName = "ciprof-fault";
	fault_vfs.szOsFile = (int)sizeof(struct fault_file) + real_vfs->szOsFile;
	fault_vfs.xOpen = ff_open;
	fault_vfs.pNext = NULL;
	fault_io = (sqlite3_io_methods){
	        .iVersion = 2,
	        .xClose = ff_close,
	        .xRead = ff_read,
	        .xWrite = ff_write,
	        .xTruncate = ff_truncate,
	        .xSync = ff_sync,
	        .xFileSize = ff_file_size,
	        .xLock = ff_lock,
	        .xUnlock = ff_unlock,
	        .xCheckReservedLock = ff_check_reserved,
	        .xFileControl = ff_file_control,
	        .xSectorSize = ff_sector_size,
	        .xDeviceCharacteristics = ff_device_characteristics,
	        .xShmMap = ff_shm_map,
	        .xShmLock = ff_shm_lock,
	        .xShmBarrier = ff_shm_barrier,
	        .xShmUnmap = ff_shm_unmap,
	};
	assert_int_equal(sqlite3_vfs_register(&fault_vfs, 1), SQLITE_OK);
	xalloc_test_fail = xalloc_fault;
}

/* ---- the operations under torture -------------------------------------------------------- */

enum op { OP_ADD, OP_GC };
static const char *const op_name[] = {"store a run", "gc"};

static char *tmp, *base_db, *work_db;
static struct profile *base_prof[3], *new_prof;

/* What a child reports through its pipe. */
struct outcome {
	int open_rc, add_rc, retry_rc; /* -2 = not reached */
	int64_t id;                    /* the stored run's id, 0 when none */
	long count;                    /* attempts of the armed kind */
	int fired;
	char msg[1024]; /* the first error */
};

static void meta_for(struct run_meta *m, int i)
{
	char commit[41];
	/* runs 0 and 1 are of one commit, so that gc folds them */
	snprintf(commit, sizeof(commit), "%040d", i ? i + 1 : 2);
	tu_meta(m, "main", commit);
	m->created_at = 1700000000 + i;
	run_meta_set_tag(m, "job", i == 3 ? "victim" : "base");
}

static int do_op(struct store *s, enum op op, struct run_meta *m)
{
	if (op == OP_ADD)
		return store_add_run(s, m, new_prof);
	/* The two oldest runs (of one commit) go, folded into one: gc rewrites every table. */
	struct store_gc_opts o = {.keep_runs = 1, .fold = 1};
	struct store_gc_result r;
	return store_gc(s, &o, &r);
}

/* Opens work_db, does op, closes: with kind's k-th attempt failing. */
static void run_op(struct outcome *o, enum op op, enum fault_kind kind, long k)
{
	struct store *s = NULL;
	struct run_meta m;
	meta_for(&m, 3);
	fault_at = k;
	fault_count = 0;
	fault_fired = 0;
	/* Opening is tortured with storing a run; gc's faults start after it. */
	if (op == OP_ADD)
		fault_kind = kind;
	o->open_rc = store_open(&s, work_db, STORE_CREATE);
	if (o->open_rc < 0) {
		snprintf(o->msg, sizeof(o->msg), "%s", cp_last_error());
		goto out;
	}
	fault_kind = kind;
	o->add_rc = do_op(s, op, &m);
	if (o->add_rc < 0) {
		snprintf(o->msg, sizeof(o->msg), "%s", cp_last_error());
		o->count = fault_count;
		o->fired = fault_fired;
		fault_kind = FAULT_NONE;
		o->retry_rc = do_op(s, op, &m);
		if (o->retry_rc < 0)
			snprintf(o->msg, sizeof(o->msg), "retry: %s", cp_last_error());
	}
	store_close(s);
out:
	if (fault_kind != FAULT_NONE) {
		o->count = fault_count;
		o->fired = fault_fired;
		fault_kind = FAULT_NONE;
	}
	run_meta_release(&m);
}

static void copy_file(const char *from, const char *to)
{
	size_t len;
	char *buf = tu_read(from, &len);
	assert_non_null(buf);
	FILE *f = fopen(to, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	free(buf);
}

static void remove_db(const char *path)
{
	char *p = xasprintf("%s-wal", path);
	unlink(p);
	free(p);
	p = xasprintf("%s-shm", path);
	unlink(p);
	free(p);
	p = xasprintf("%s-journal", path);
	unlink(p);
	free(p);
	unlink(path);
}

/* Runs run_op in a child with kind's k-th attempt failing (k = 0: none). *o gets its
 * outcome; *aborted whether it died of SIGABRT, *err_out its stderr (owned). */
static void attempt(enum op op, enum fault_kind kind, long k, struct outcome *o, int *aborted,
                    char **err_out)
{
	remove_db(work_db);
	copy_file(base_db, work_db);
	char *err_path = xasprintf("%s/stderr", tmp);
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(99);
		struct outcome r = {.open_rc = -2, .add_rc = -2, .retry_rc = -2};
		run_op(&r, op, kind, k);
		fault_kind = FAULT_NONE;
		if (write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(98);
		_exit(0);
	}
	close(fds[1]);
	memset(o, 0, sizeof(*o));
	ssize_t got = read(fds[0], o, sizeof(*o));
	close(fds[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	*aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
	if (!*aborted) {
		if (!WIFEXITED(status) || WEXITSTATUS(status) || got != (ssize_t)sizeof(*o))
			fail_msg("%s %ld: the child ended with status %#x", fault_name[kind], k,
			         status);
	}
	size_t len;
	*err_out = tu_read(err_path, &len);
	if (!*err_out)
		*err_out = xstrdup("");
	free(err_path);
}

/* What the database at work_db holds, as text: every run (commit, tags, folded profile, test
 * outcomes), oldest first; after checking it is sound. Owned. */
static char *snapshot(const char *what, long k)
{
	struct store *s;
	if (store_open(&s, work_db, 0) < 0)
		fail_msg("%s %ld: cannot reopen: %s", what, k, cp_last_error());
	if (store_check(s) < 0)
		fail_msg("%s %ld: %s", what, k, cp_last_error());
	struct run_meta *runs;
	size_t n;
	assert_int_equal(store_list_runs(s, NULL, 0, &runs, &n), 0);
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = n; i-- > 0;) {
		strbuf_addf(&sb, "run %s", runs[i].commit);
		for (size_t t = 0; t < runs[i].ntags; t++)
			strbuf_addf(&sb, " %s=%s", runs[i].tags[t].key, runs[i].tags[t].value);
		struct profile *p;
		if (store_load_profile(s, runs[i].id, NULL, &p) < 0)
			fail_msg("%s %ld: run %lld: %s", what, k, (long long)runs[i].id,
			         cp_last_error());
		char *folded = tu_folded(p, NULL);
		strbuf_addf(&sb, " results %zu\n%s", p->nresults, folded);
		free(folded);
		profile_free(p);
	}
	store_runs_free(runs, n);
	store_close(s);
	return strbuf_detach(&sb, NULL);
}

/* The database is as before the operation (done = 0), as after it (1), or either (-1). */
static void check_db(const char *what, long k, int done, const char *before, const char *after)
{
	char *now = snapshot(what, k);
	int is_before = !strcmp(now, before), is_after = !strcmp(now, after);
	if ((done == 0 && !is_before) || (done == 1 && !is_after) || (!is_before && !is_after))
		fail_msg("%s %ld: the database holds neither what it held before nor what the "
		         "operation makes of it (the operation %s)",
		         what, k,
		         done == 1   ? "succeeded"
		         : done == 0 ? "failed"
		                     : "aborted");
	free(now);
}

/* Fails each attempt of kind during op in turn. */
static void torture(enum op op, enum fault_kind kind)
{
	struct outcome o;
	int aborted;
	char *err;
	/* The database before and after a clean op, and how many attempts it makes. */
	remove_db(work_db);
	copy_file(base_db, work_db);
	char *before = snapshot("before", 0);
	attempt(op, kind, 0, &o, &aborted, &err);
	free(err);
	assert_false(aborted);
	assert_int_equal(o.open_rc, 0);
	assert_int_equal(o.add_rc, 0);
	char *after = snapshot("after", 0);
	assert_string_not_equal(before, after);
	long total = o.count;
	assert_true(total > 0);
	long nopen = 0, nadd = 0, nabort = 0, nabsorbed = 0;
	char *what = xasprintf("%s, %s", op_name[op], fault_name[kind]);
	for (long k = 1; k <= total; k++) {
		attempt(op, kind, k, &o, &aborted, &err);
		if (aborted) {
			/* Only ciprof's own allocations abort, and they say why. */
			if (kind != FAULT_XALLOC || !strstr(err, "ciprof: out of memory"))
				fail_msg("%s %ld: aborted: %s", what, k, err);
			check_db(what, k, -1, before, after);
			nabort++;
		} else if (o.open_rc < 0) {
			if (!strstr(o.msg, work_db))
				fail_msg("%s %ld: unclear error on open: %s", what, k, o.msg);
			check_db(what, k, 0, before, after);
			nopen++;
		} else if (o.add_rc < 0) {
			if (!strstr(o.msg, work_db) || o.retry_rc != 0)
				fail_msg("%s %ld: unclear error or failed retry: %s", what, k,
				         o.msg);
			check_db(what, k, 1, before, after);
			nadd++;
		} else {
			/* SQLite may absorb a failure (a cache it could not grow, a sync it
			 * retries at close): then the operation is done. */
			check_db(what, k, 1, before, after);
			nabsorbed++;
		}
		if (kind != FAULT_XALLOC && err[0])
			fail_msg("%s %ld: unexpected output: %s", what, k, err);
		free(err);
	}
	print_message("%s: failed each of %ld in turn: %ld failed the open, %ld the operation "
	              "(retried), %ld aborted, %ld absorbed by SQLite\n",
	              what, total, nopen, nadd, nabort, nabsorbed);
	free(what);
	free(before);
	free(after);
}

static void test_torture_add_writes(void **state)
{
	torture(OP_ADD, FAULT_WRITE);
}

static void test_torture_add_sqlite_malloc(void **state)
{
	torture(OP_ADD, FAULT_SQLITE_MALLOC);
}

static void test_torture_add_xalloc(void **state)
{
	torture(OP_ADD, FAULT_XALLOC);
}

static void test_torture_gc_writes(void **state)
{
	torture(OP_GC, FAULT_WRITE);
}

static void test_torture_gc_sqlite_malloc(void **state)
{
	torture(OP_GC, FAULT_SQLITE_MALLOC);
}

static void test_torture_gc_xalloc(void **state)
{
	torture(OP_GC, FAULT_XALLOC);
}

static int setup(void **state)
{
	(void)state;
	unsetenv("CIPROF_DB_TIMEOUT_MS");
	faults_install();
	/* In memory where there is a tmpfs: thousands of copies of a small file, no disk. */
	char tmpl[] = "/dev/shm/ciprof-torture-XXXXXX";
	tmp = mkdtemp(tmpl) ? xstrdup(tmpl) : tu_tmpdir();
	if (!tmp)
		return -1;
	base_db = xasprintf("%s/base.db", tmp);
	work_db = xasprintf("%s/work.db", tmp);
	struct store *s;
	if (store_open(&s, base_db, STORE_CREATE) < 0)
		return -1;
	for (int i = 0; i < 3; i++) {
		base_prof[i] = tu_random_profile(100 + (uint64_t)i, 4, 40, 16, 5);
		struct run_meta m;
		meta_for(&m, i);
		if (store_add_run(s, &m, base_prof[i]) < 0)
			return -1;
		run_meta_release(&m);
	}
	store_close(s);
	/* The new run shares some stacks with the base runs and brings its own, with test
	 * outcomes. */
	new_prof = tu_random_profile(102, 5, 60, 24, 6);
	profile_set_result(new_prof, profile_intern(new_prof, "test_1"), 1, 0.25);
	profile_set_result(new_prof, profile_intern(new_prof, "test_2"), 0, 0.5);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char *cmd = xasprintf("rm -rf '%s'", tmp);
	if (system(cmd)) {
	}
	free(cmd);
	for (int i = 0; i < 3; i++) {
		profile_free(base_prof[i]);
	}
	profile_free(new_prof);
	free(base_db);
	free(work_db);
	free(tmp);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_torture_add_writes),
	        cmocka_unit_test(test_torture_add_sqlite_malloc),
	        cmocka_unit_test(test_torture_add_xalloc),
	        cmocka_unit_test(test_torture_gc_writes),
	        cmocka_unit_test(test_torture_gc_sqlite_malloc),
	        cmocka_unit_test(test_torture_gc_xalloc),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
