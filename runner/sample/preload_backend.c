/* The LD_PRELOAD backend, runner side (see preload_backend.h and docs/preload.md).
 *
 * The command runs with libciprof-preload.so in LD_PRELOAD and a fresh directory in
 * CIPROF_PRELOAD_DIR. Each process image creates one sample file there. Every 50 ms the
 * runner reads what each file's rings hold between tail and head (pread: a truncated or
 * scribbled file gives an error, never a crash), advances the tails, and queues the samples
 * in the runner's event queue (backend.h); the runner processes them in timestamp order one
 * round later, as the perf backend's, so that marks and output markers apply at the right
 * time. Memory follows the live processes and the distinct stacks, not the run's length.
 *
 * Start, memory-map and thread records are applied as soon as they are read, so that the
 * samples that follow resolve; a new image of a pid that had one (an exec, or a reused pid)
 * first has every queued sample older than itself processed. An image is done when its
 * process is gone (/proc/PID/stat missing, a zombie, or another start time) or when a newer
 * image of its pid appeared; its file is then read a last time and removed.
 *
 * Programs LD_PRELOAD cannot reach (static, set-ID) are found by the exec records of their
 * parent (which checks the program it execs) and by the runner for the command itself; an
 * exec after which no image of that pid appeared is reported by name as unsampled. */
#include "runner/sample/preload_backend.h"
#include "common/error.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "runner/backend.h"
#include "runner/launch.h"
#include "runner/sample/perf.h"
#include "runner/sample/unwind.h"
#include "runner/preload/elfcheck.h"
#include "runner/attribution/proctree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROUND_MS        50
#define EXPECT_GRACE_NS 200000000ULL   /* before asking whether an exec'd pid is gone */
#define RECENT_KEEP_NS  10000000000ULL /* how long image starts are remembered */

/* ---- parsing ---- */

static int bad(const char *name, uint64_t off, const char *what)
{
	return cp_error("%s: offset %llu: %s", name, (unsigned long long)off, what);
}

int pl_parse_record(const unsigned char *rec, size_t len, struct pl_view *out, const char *name,
                    uint64_t off)
{
	struct pl_rec h;
	memset(out, 0, sizeof(*out));
	if (len < sizeof(h))
		return bad(name, off, "record shorter than its header");
	memcpy(&h, rec, sizeof(h));
	if (h.size != len)
		return bad(name, off, "record size disagrees with its header");
	out->type = h.type;
	out->flags = h.flags;
	out->time = h.time;
	switch (h.type) {
	case PL_REC_SAMPLE: {
		struct pl_sample s;
		if (len < sizeof(s))
			return bad(name, off, "sample record too short");
		memcpy(&s, rec, sizeof(s));
		if (s.nframes > PL_MAX_FRAMES)
			return bad(name, off, "sample with more frames than the sampler takes");
		size_t at = sizeof(s) + 8 * (size_t)s.nframes;
		if (h.flags & PL_SAMPLE_STACK) {
			struct pl_stack st;
			if (len < at + sizeof(st))
				return bad(name, off, "sample too short for its stack copy");
			memcpy(&st, rec + at, sizeof(st));
			if (st.len > PL_STACK_COPY || (st.len & 7))
				return bad(name, off,
				           "sample's stack copy of a size the sampler never takes");
			if (len != at + sizeof(st) + st.len)
				return bad(name, off,
				           "sample size disagrees with its frame count and stack "
				           "copy");
			out->u.sample.sp = st.sp;
			out->u.sample.bp = st.bp;
			out->u.sample.stack = rec + at + sizeof(st);
			out->u.sample.stack_len = st.len;
		} else if (len != at) {
			return bad(name, off, "sample size disagrees with its frame count");
		}
		if (s.weight < 1 || s.weight > PL_MAX_WEIGHT)
			return bad(name, off, "sample weight out of range");
		if (s.tid <= 0)
			return bad(name, off, "sample with an invalid thread id");
		out->u.sample.tid = s.tid;
		out->u.sample.nframes = s.nframes;
		out->u.sample.weight = s.weight;
		out->u.sample.ips = rec + sizeof(s);
		return 0;
	}
	case PL_REC_START: {
		struct pl_start s;
		if (len < sizeof(s))
			return bad(name, off, "start record too short");
		memcpy(&s, rec, sizeof(s));
		uint64_t total = (uint64_t)s.comm_len + s.exe_len + s.cwd_len + s.argv_len;
		if (total > len - sizeof(s))
			return bad(name, off, "start record strings overrun the record");
		if (s.pid <= 0 || s.ppid < 0)
			return bad(name, off, "start record with an invalid pid");
		if (!(h.flags & (PL_START_FORK | PL_START_EXEC)))
			return bad(name, off, "start record neither fork nor exec");
		const char *p = (const char *)rec + sizeof(s);
		out->u.start.pid = s.pid;
		out->u.start.ppid = s.ppid;
		out->u.start.comm = p;
		out->u.start.comm_len = s.comm_len;
		out->u.start.exe = p += s.comm_len;
		out->u.start.exe_len = s.exe_len;
		out->u.start.cwd = p += s.exe_len;
		out->u.start.cwd_len = s.cwd_len;
		out->u.start.argv = p + s.cwd_len;
		out->u.start.argv_len = s.argv_len;
		return 0;
	}
	case PL_REC_MAPS:
	case PL_REC_NOTE: {
		struct pl_text t;
		if (len < sizeof(t))
			return bad(name, off, "text record too short");
		memcpy(&t, rec, sizeof(t));
		if (t.len > len - sizeof(t))
			return bad(name, off, "text overruns its record");
		out->u.text.text = (const char *)rec + sizeof(t);
		out->u.text.len = t.len;
		return 0;
	}
	case PL_REC_THREAD: {
		struct pl_thread t;
		if (len < sizeof(t))
			return bad(name, off, "thread record too short");
		memcpy(&t, rec, sizeof(t));
		if (t.tid <= 0)
			return bad(name, off, "thread record with an invalid thread id");
		out->u.thread.tid = t.tid;
		return 0;
	}
	case PL_REC_EXEC: {
		struct pl_exec e;
		if (len < sizeof(e))
			return bad(name, off, "exec record too short");
		memcpy(&e, rec, sizeof(e));
		if (e.path_len > len - sizeof(e))
			return bad(name, off, "exec path overruns its record");
		if (e.pid <= 0)
			return bad(name, off, "exec record with an invalid pid");
		out->u.exec.pid = e.pid;
		out->u.exec.path = (const char *)rec + sizeof(e);
		out->u.exec.len = e.path_len;
		return 0;
	}
	default:
		return 0; /* a later version's record: skipped */
	}
}

int pl_parse_ring(const unsigned char *buf, size_t len, uint64_t pos, uint32_t ring_size,
                  uint64_t ring_offset, const char *name, pl_record_fn fn, void *ctx)
{
	size_t i = 0;
	while (i < len) {
		uint64_t at = (pos + i) & (ring_size - 1);
		uint64_t off = ring_offset + at;
		struct pl_rec h;
		if ((at & 7) || len - i < 8)
			return bad(name, off, "incomplete record header");
		memcpy(&h, buf + i, 8); /* type, flags, size: a PAD may be just these */
		if (h.size < 8 || (h.size & 7))
			return bad(name, off, "record size not a positive multiple of 8");
		if (h.size > ring_size - at)
			return bad(name, off, "record runs past the end of its ring");
		if (h.size > len - i)
			return bad(name, off, "record runs past the ring's head");
		if (h.type == PL_REC_PAD) {
			if (h.size != ring_size - at)
				return bad(name, off, "padding that does not reach the ring's end");
			i += h.size;
			continue;
		}
		struct pl_view v;
		if (pl_parse_record(buf + i, h.size, &v, name, off) < 0)
			return -1;
		if (fn && fn(ctx, &v, buf + i, h.size))
			return -1;
		i += h.size;
	}
	return 0;
}

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int pl_check_header(const unsigned char *buf, size_t len, uint64_t file_size, const char *name,
                    struct pl_header *out)
{
	struct pl_header h;
	if (len < sizeof(h))
		return bad(name, 0, "file shorter than a sample-file header");
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, PL_MAGIC, 8))
		return bad(name, 0, "not a ciprof preload sample file (bad magic)");
	if (h.version != PL_VERSION)
		return cp_error("%s: offset 8: sample-file version %u, this ciprof reads %u", name,
		                h.version, PL_VERSION);
	if (h.nslots < 1 || h.nslots > PL_MAX_SLOTS)
		return bad(name, 16, "ring count out of range");
	if (h.header_size != pl_header_size(h.nslots))
		return bad(name, 12, "header size disagrees with the ring count");
	if (!is_pow2(h.ring_size) || h.ring_size < PL_MIN_RING_SIZE ||
	    h.ring_size > PL_MAX_RING_SIZE || h.ring_size < 2 * PL_MAX_RECORD)
		return bad(name, 20, "sample ring size out of range or not a power of two");
	if (!is_pow2(h.event_ring_size) || h.event_ring_size < 2 * PL_MAX_EVENT ||
	    h.event_ring_size > PL_MAX_RING_SIZE)
		return bad(name, 24, "event ring size out of range or not a power of two");
	if (h.pid <= 0)
		return bad(name, 28, "invalid pid");
	if (file_size < pl_file_size(&h))
		return cp_error("%s: the file holds %llu bytes, its header describes %llu", name,
		                (unsigned long long)file_size,
		                (unsigned long long)pl_file_size(&h));
	*out = h;
	return 0;
}

static uint32_t ring_bytes(const struct pl_header *h, uint32_t i)
{
	return i == 0 ? h->event_ring_size : h->ring_size;
}

/* The slot table entry i of a header held in memory. */
static struct pl_slot slot_copy(const unsigned char *hdr, uint32_t i)
{
	struct pl_slot s;
	memcpy(&s, hdr + PL_SLOT_TABLE_OFFSET + (size_t)i * sizeof(s), sizeof(s));
	return s;
}

/* Checks that [tail, head) is a possible span of ring i. */
static int check_span(const struct pl_header *h, uint32_t i, uint64_t tail, uint64_t head,
                      const char *name)
{
	if (head < tail || head - tail > ring_bytes(h, i))
		return cp_error(
		        "%s: offset %llu: ring %u's head %llu and tail %llu are more than "
		        "the ring apart",
		        name,
		        (unsigned long long)(PL_SLOT_TABLE_OFFSET + i * sizeof(struct pl_slot)), i,
		        (unsigned long long)head, (unsigned long long)tail);
	return 0;
}

int pl_parse_file(const unsigned char *buf, size_t len, const char *name, pl_record_fn fn,
                  void *ctx)
{
	struct pl_header h;
	if (pl_check_header(buf, len, len, name, &h) < 0)
		return -1;
	unsigned char *lin = NULL;
	int ret = 0;
	for (uint32_t i = 0; i <= h.nslots && ret == 0; i++) {
		struct pl_slot s = slot_copy(buf, i);
		if (check_span(&h, i, s.tail, s.head, name) < 0) {
			ret = -1;
			break;
		}
		uint32_t size = ring_bytes(&h, i);
		uint64_t used = s.head - s.tail, at = s.tail & (size - 1);
		const unsigned char *ring = buf + pl_ring_offset(&h, i);
		lin = xrealloc(lin, used ? used : 1);
		uint64_t first = size - at < used ? size - at : used;
		memcpy(lin, ring + at, first);
		memcpy(lin + first, ring, used - first);
		ret = pl_parse_ring(lin, used, s.tail, size, pl_ring_offset(&h, i), name, fn, ctx);
	}
	free(lin);
	return ret;
}

/* ---- finding the library ---- */

#ifndef CIPROF_PRELOAD_RELATIVE
#define CIPROF_PRELOAD_RELATIVE "../lib/ciprof/libciprof-preload.so"
#endif
#ifndef CIPROF_PRELOAD_INSTALLED
#define CIPROF_PRELOAD_INSTALLED "/usr/local/lib/ciprof/libciprof-preload.so"
#endif

/* The absolute path of path when it is a readable file, else NULL. */
static char *readable_realpath(const char *path)
{
	char buf[PATH_MAX];
	if (access(path, R_OK) == 0 && realpath(path, buf))
		return xstrdup(buf);
	return NULL;
}

char *preload_find_library(void)
{
	const char *env = getenv("CIPROF_PRELOAD_LIB");
	char buf[PATH_MAX];
	if (env && *env) {
		if (!realpath(env, buf)) {
			cp_error_errno("CIPROF_PRELOAD_LIB names %s", env);
			return NULL;
		}
		return xstrdup(buf);
	}
	/* The build tree puts it next to the binary; an installed tree at bin/../lib/ciprof/. */
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *next_to = NULL, *relative = NULL, *found = NULL;
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			next_to = xasprintf("%s/libciprof-preload.so", exe);
			relative = xasprintf("%s/%s", exe, CIPROF_PRELOAD_RELATIVE);
			found = readable_realpath(next_to);
			if (!found)
				found = readable_realpath(relative);
		}
	}
	if (!found)
		found = readable_realpath(CIPROF_PRELOAD_INSTALLED);
	if (!found)
		cp_error("the LD_PRELOAD sampler libciprof-preload.so was not found (looked at %s, "
		         "%s and %s); install ciprof with its library (docs/install.md), build the "
		         "ciprof-preload target, or set CIPROF_PRELOAD_LIB to its path",
		         next_to ? next_to : "the ciprof binary's folder",
		         relative ? relative : "bin/" CIPROF_PRELOAD_RELATIVE,
		         CIPROF_PRELOAD_INSTALLED);
	free(next_to);
	free(relative);
	return found;
}

/* ---- the announcement of a fallback ---- */

void preload_announce_fallback(int dwarf)
{
	struct perf_refusal r;
	perf_last_refusal(&r);
	log_verbose("%s", cp_last_error());
	char cause[128];
	const char *ename = strerrorname_np(r.err);
	if (!ename)
		ename = "an error";
	if (r.killed)
		snprintf(cause, sizeof(cause), "seccomp filter: SIGSYS");
	else if (r.in_mmap)
		snprintf(cause, sizeof(cause), "locked-memory budget for its ring buffers");
	else if ((r.err == EPERM || r.err == EACCES || r.err == ENOSYS) && r.seccomp == 2)
		snprintf(cause, sizeof(cause), "seccomp filter: %s", ename);
	else if ((r.err == EPERM || r.err == EACCES) && r.paranoid > 2 && !r.privileged)
		snprintf(cause, sizeof(cause), "kernel.perf_event_paranoid=%d", r.paranoid);
	else if (r.err == ENOSYS)
		snprintf(cause, sizeof(cause), "ENOSYS: no perf events in this kernel");
	else
		snprintf(cause, sizeof(cause), "%s", ename);
	log_info("perf_event_open refused (%s); sampling with the LD_PRELOAD backend%s", cause,
	         dwarf ? " (frame pointers: --unwind dwarf needs perf)" : "");
}

/* ---- the session ---- */

struct image {
	char *name; /* file name in the directory */
	int fd;
	struct pl_header h;
	unsigned char *hmap; /* header and slot table, shared with the process */
	pid_t pid;
	int superseded; /* a newer image of the pid exists: an exec */
	int fresh;      /* records were read this round: the process is surely alive */
	int broken;     /* a malformed record: no more reading */
	uint64_t last_time;
};

struct expect {
	pid_t pid;
	uint64_t time, seen_at;
	uint32_t flags;
	char *path;
	int gone; /* the pid was found gone: the next scan of the directory decides */
};

struct recent {
	pid_t pid;
	uint64_t start, seen_at;
};

struct unsampled {
	char *path;
	uint32_t flags;
	uint64_t count;
};

struct note {
	char *text;
	char *proc;
	uint64_t count;
};

struct psession {
	struct runner_session *rs; /* borrowed: the run this backend feeds */
	const struct runner_opts *opts;
	char *lib;  /* libciprof-preload.so */
	char **env; /* the command's extra environment */
	char *dir;
	int dirfd;
	struct image **img;
	size_t nimg, img_alloc;
	unsigned char *scratch;
	size_t scratch_alloc;
	struct expect *exp;
	size_t nexp, exp_alloc;
	struct recent *recent;
	size_t nrecent, recent_alloc;
	struct unsampled *uns;
	size_t nuns, uns_alloc;
	struct note *notes;
	size_t nnotes, notes_alloc;
	uint64_t bad_files, threads_unsampled, events_lost;
	uint64_t procs_unwritten, threads_unwritten; /* the sampler could not write its files */
	int write_errno;                             /* why (the last such errno) */
	int reachable; /* the command can load the sampler: cmd_path */
	char cmd_path[PATH_MAX];
	uint64_t period_ns;
	struct image *cur; /* the image whose rings are being read */
	/* --unwind fp (the default): a frameless leaf's caller put back from its CFI and the
	 * sample's stack copy (unwinder_fix_leaf), as the perf backend does */
	struct unwinder *unw;
};

static struct image *image_of_pid(struct psession *s, pid_t pid)
{
	for (size_t i = s->nimg; i > 0; i--)
		if (s->img[i - 1]->pid == pid && !s->img[i - 1]->superseded)
			return s->img[i - 1];
	return NULL;
}

static void add_unsampled(struct psession *s, const char *path, uint32_t flags)
{
	flags &= PL_EXEC_STATIC | PL_EXEC_SETID;
	for (size_t i = 0; i < s->nuns; i++)
		if (s->uns[i].flags == flags && !strcmp(s->uns[i].path, path)) {
			s->uns[i].count++;
			return;
		}
	ALLOC_GROW(s->uns, s->nuns + 1, s->uns_alloc);
	s->uns[s->nuns++] = (struct unsampled){xstrdup(path), flags, 1};
}

static void add_note(struct psession *s, const char *text, size_t len, const char *proc)
{
	char *t = xstrndup(text, len);
	for (size_t i = 0; i < s->nnotes; i++)
		if (!strcmp(s->notes[i].text, t)) {
			s->notes[i].count++;
			free(t);
			return;
		}
	ALLOC_GROW(s->notes, s->nnotes + 1, s->notes_alloc);
	s->notes[s->nnotes++] = (struct note){t, xstrdup(proc), 1};
}

/* An image of pid started at start: it satisfies the exec records it followed. */
static void image_started(struct psession *s, pid_t pid, uint64_t start)
{
	uint64_t now = launch_now_ns();
	ALLOC_GROW(s->recent, s->nrecent + 1, s->recent_alloc);
	s->recent[s->nrecent++] = (struct recent){pid, start, now};
	size_t k = 0;
	for (size_t i = 0; i < s->nexp; i++) {
		if (s->exp[i].pid == pid && s->exp[i].time <= start) {
			free(s->exp[i].path);
			continue;
		}
		s->exp[k++] = s->exp[i];
	}
	s->nexp = k;
}

static void on_exec(struct psession *s, const struct pl_view *v)
{
	pid_t pid = v->u.exec.pid;
	if (v->flags & PL_EXEC_FAILED) {
		/* The newest expectation for this pid is void: the image goes on. */
		for (size_t i = s->nexp; i > 0; i--)
			if (s->exp[i - 1].pid == pid) {
				free(s->exp[i - 1].path);
				memmove(&s->exp[i - 1], &s->exp[i],
				        (s->nexp - i) * sizeof(*s->exp));
				s->nexp--;
				break;
			}
		return;
	}
	for (size_t i = 0; i < s->nrecent; i++)
		if (s->recent[i].pid == pid && s->recent[i].start >= v->time)
			return; /* its image is already here */
	ALLOC_GROW(s->exp, s->nexp + 1, s->exp_alloc);
	s->exp[s->nexp++] = (struct expect){
	        pid, v->time, launch_now_ns(), v->flags, xstrndup(v->u.exec.path, v->u.exec.len),
	        0};
}

/* Splits NUL-separated arguments into a NULL-terminated argv (owned). */
static char **split_argv(const char *p, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += p[i] == '\0';
	if (len && p[len - 1] != '\0')
		n++;
	char **argv = xcalloc(n + 1, sizeof(char *));
	size_t k = 0;
	for (size_t i = 0; i < len && k < n;) {
		size_t l = strnlen(p + i, len - i);
		argv[k++] = xstrndup(p + i, l);
		i += l + 1;
	}
	return argv;
}

static void on_start(struct psession *s, const struct pl_view *v)
{
	pid_t pid = v->u.start.pid;
	if (v->flags & PL_START_FORK) {
		runner_fork(s->rs, pid, v->u.start.ppid, pid, v->u.start.ppid);
		return;
	}
	char *comm = xstrndup(v->u.start.comm, v->u.start.comm_len);
	if (!*comm) {
		free(comm);
		char *exe = xstrndup(v->u.start.exe, v->u.start.exe_len);
		comm = xstrdup(launch_basename(exe));
		free(exe);
	}
	runner_comm(s->rs, pid, pid, comm, 1);
	free(comm);
	if (v->u.start.argv_len) {
		char **argv = split_argv(v->u.start.argv, v->u.start.argv_len);
		char *cwd = xstrndup(v->u.start.cwd, v->u.start.cwd_len);
		char *exe = xstrndup(v->u.start.exe, v->u.start.exe_len);
		ctest_watch_exec_argv(&s->rs->ctest, pid, v->u.start.ppid, argv, cwd, exe);
		free(exe);
		free(cwd);
		for (char **a = argv; *a; a++)
			free(*a);
		free(argv);
	}
	/* The parent's test, if it has one, wins over a CTest match (a test's subprocess
	 * running another test's command line is still that test's), as with perf. The
	 * parent is also the only link of a vfork or posix_spawn child, which has no fork
	 * record. */
	attrib_proc_fork(&s->rs->attrib, pid, v->u.start.ppid);
}

static int on_record(void *ctx, const struct pl_view *v, const unsigned char *raw, size_t len)
{
	struct psession *s = ctx;
	struct image *im = s->cur;
	if (v->time > im->last_time)
		im->last_time = v->time;
	switch (v->type) {
	case PL_REC_SAMPLE: {
		struct run_event ev;
		memset(&ev, 0, sizeof(ev));
		ev.kind = RUN_EV_SAMPLE;
		ev.time = v->time;
		ev.pid = im->pid;
		ev.tid = v->u.sample.tid;
		ev.data = xmalloc(len);
		memcpy(ev.data, raw, len);
		ev.len = len;
		evqueue_push(&s->rs->queue, &ev);
		break;
	}
	case PL_REC_START:
		if (v->u.start.pid != im->pid)
			return cp_error("%s: a start record for pid %d in the file of pid %d",
			                im->name, (int)v->u.start.pid, (int)im->pid);
		on_start(s, v);
		break;
	case PL_REC_MAPS: {
		struct proc *p = proctree_get(&s->rs->tree, im->pid, "[unknown]");
		char *text = xstrndup(v->u.text.text, v->u.text.len);
		proctree_load_procfs_maps(&s->rs->tree, p, text);
		free(text);
		break;
	}
	case PL_REC_THREAD:
		if (v->flags & PL_THREAD_BEGIN)
			runner_fork(s->rs, im->pid, im->pid, v->u.thread.tid, im->pid);
		break;
	case PL_REC_EXEC:
		on_exec(s, v);
		break;
	case PL_REC_NOTE: {
		struct proc *p = proctree_find(&s->rs->tree, im->pid);
		add_note(s, v->u.text.text, v->u.text.len, p ? p->name : "?");
		break;
	}
	default:
		break;
	}
	return 0;
}

/* Reads whatever is between tail and head in every ring of the image and advances the
 * tails. A malformed record stops reading this file for good (warned once). */
static void read_image(struct psession *s, struct image *im)
{
	if (im->broken)
		return;
	s->cur = im;
	for (uint32_t i = 0; i <= im->h.nslots; i++) {
		struct pl_slot *slot = (struct pl_slot *)(im->hmap + PL_SLOT_TABLE_OFFSET) + i;
		uint64_t head = __atomic_load_n(&slot->head, __ATOMIC_ACQUIRE);
		uint64_t tail = __atomic_load_n(&slot->tail, __ATOMIC_RELAXED);
		if (head == tail)
			continue;
		if (check_span(&im->h, i, tail, head, im->name) < 0)
			goto broken;
		uint32_t size = ring_bytes(&im->h, i);
		uint64_t used = head - tail, at = tail & (size - 1);
		uint64_t roff = pl_ring_offset(&im->h, i);
		if (used > s->scratch_alloc) {
			s->scratch = xrealloc(s->scratch, used);
			s->scratch_alloc = used;
		}
		uint64_t first = size - at < used ? size - at : used;
		if (pread(im->fd, s->scratch, first, (off_t)(roff + at)) != (ssize_t)first ||
		    (used > first && pread(im->fd, s->scratch + first, used - first, (off_t)roff) !=
		                             (ssize_t)(used - first))) {
			cp_error("%s: offset %llu: cannot read %llu bytes of ring %u", im->name,
			         (unsigned long long)(roff + at), (unsigned long long)used, i);
			goto broken;
		}
		if (pl_parse_ring(s->scratch, used, tail, size, roff, im->name, on_record, s) < 0)
			goto broken;
		__atomic_store_n(&slot->tail, head, __ATOMIC_RELEASE);
		im->fresh = 1;
	}
	return;
broken:
	log_warn("preload sample file in %s: %s; the rest of this process's samples are "
	         "skipped",
	         s->dir, cp_last_error());
	im->broken = 1;
	s->bad_files++;
}

/* Whether pid still runs the process that started at proc_start (clock ticks). */
static int proc_alive(pid_t pid, uint64_t proc_start)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return 0;
	char state = p[2];
	if (state == 'Z' || state == 'X' || state == 'x')
		return 0;
	if (!proc_start)
		return 1;
	p += 2;
	for (int field = 3; field < 22 && *p; p++)
		if (*p == ' ')
			field++;
	return strtoull(p, NULL, 10) == proc_start;
}

static void close_image(struct psession *s, struct image *im)
{
	struct pl_header *h = (struct pl_header *)im->hmap;
	for (uint32_t i = 1; i <= im->h.nslots; i++) {
		struct pl_slot *slot = (struct pl_slot *)(im->hmap + PL_SLOT_TABLE_OFFSET) + i;
		s->rs->lost += slot->lost;
	}
	s->threads_unsampled += h->threads_unsampled;
	if (h->write_errors) {
		s->threads_unwritten += h->write_errors;
		s->write_errno = h->write_errno;
	}
	s->events_lost += h->events_lost;
	munmap(im->hmap, im->h.header_size);
	close(im->fd);
	unlinkat(s->dirfd, im->name, 0);
	free(im->name);
	free(im);
}

/* The image is done: read it a last time; unless it exec'd, its process ended, which is
 * processed after its last sample. */
static void finish_image(struct psession *s, size_t idx)
{
	struct image *im = s->img[idx];
	read_image(s, im);
	log_debug("preload: %s done (%s)", im->name, im->superseded ? "exec'd" : "process gone");
	if (!im->superseded) {
		struct run_event ev;
		memset(&ev, 0, sizeof(ev));
		ev.kind = RUN_EV_EXIT;
		ev.time = im->last_time + 1;
		ev.pid = ev.tid = im->pid;
		evqueue_push(&s->rs->queue, &ev);
	}
	close_image(s, im);
	memmove(&s->img[idx], &s->img[idx + 1], (s->nimg - idx - 1) * sizeof(*s->img));
	s->nimg--;
}

/* ---- processing, in time order (the runner's ops) ---- */

/*
 * --unwind fp: the sampler's frame-pointer chain ips[0..n) with the caller of a frameless leaf
 * (or of a prologue or epilogue) put back from the leaf's CFI and the sample's stack copy, as
 * the perf backend does (unwinder_fix_leaf). Returns the new length.
 */
static size_t fix_leaf(struct psession *s, struct runner_session *rs, struct proc *p,
                       const struct pl_view *v, uint64_t *ips, size_t n, size_t max)
{
	uint64_t fp[PL_MAX_FRAMES];
	memcpy(fp, ips, n * sizeof(*fp));
	struct unwind_regs regs = {.valid = 0};
	regs.r[UNWIND_RIP] = fp[0];
	regs.r[UNWIND_RSP] = v->u.sample.sp;
	regs.r[UNWIND_RBP] = v->u.sample.bp;
	regs.valid = 1u << UNWIND_RIP | 1u << UNWIND_RSP | 1u << UNWIND_RBP;
	const struct map *m = addr_space_find(&p->as, fp[0]);
	struct unwind_map leaf = m ? runner_unwind_map(rs, m) : (struct unwind_map){0, 0, 0, NULL};
	return unwinder_fix_leaf(s->unw, leaf.path ? &leaf : NULL, &regs, v->u.sample.stack,
	                         v->u.sample.sp, v->u.sample.stack_len, fp, n, ips, max, NULL);
}

static long preload_sample(void *be, struct runner_session *rs, const struct run_event *ev,
                           struct proc **pp, uint64_t *ips, size_t max, uint64_t *weight,
                           uint64_t *ns)
{
	struct psession *s = be;
	struct pl_view v;
	if (pl_parse_record(ev->data, ev->len, &v, "queued sample", 0) < 0)
		return -1; /* parsed once already */
	struct proc *p = proctree_get(&rs->tree, ev->pid, "[unknown]");
	/* An address in no known mapping (a library loaded since the last memory-map record)
	 * may be looked up in /proc/PID/maps, but only while that pid still runs this image. */
	struct image *im = image_of_pid(s, ev->pid);
	rs->tree.procfs_fallback = im && !im->broken;
	size_t n = v.u.sample.nframes < max ? v.u.sample.nframes : max;
	memcpy(ips, v.u.sample.ips, 8 * n);
	if (s->unw && n && v.u.sample.stack)
		n = fix_leaf(s, rs, p, &v, ips, n, max);
	*pp = p;
	*weight = v.u.sample.weight;
	*ns = v.u.sample.weight * s->period_ns;
	return (long)n;
}

/* A newer image of this pid (pid reuse) must keep its maps and marks. */
static int preload_exit_stale(void *be, struct runner_session *rs, pid_t pid)
{
	return image_of_pid(be, pid) != NULL;
}

/* Each live process may look in /proc once per batch for a library it loaded. */
static void preload_before_process(void *be, struct runner_session *rs)
{
	struct psession *s = be;
	for (size_t i = 0; i < s->nimg; i++) {
		struct proc *p = proctree_find(&rs->tree, s->img[i]->pid);
		if (p && !s->img[i]->superseded)
			p->maps_from_procfs = 0;
	}
}

/* ---- discovering files ---- */

struct newfile {
	char *name;
	pid_t pid;
	uint64_t start;
};

static int newfile_cmp(const void *a, const void *b)
{
	const struct newfile *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int known_name(struct psession *s, const char *name)
{
	for (size_t i = 0; i < s->nimg; i++)
		if (!strcmp(s->img[i]->name, name))
			return 1;
	return 0;
}

/* Opens a new image file: the header checked, its header and slot table mapped. */
static struct image *open_image(struct psession *s, const char *name)
{
	int fd = openat(s->dirfd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	struct stat st;
	unsigned char hb[sizeof(struct pl_header)];
	struct pl_header h;
	int ok = fstat(fd, &st) == 0;
	if (ok && pread(fd, hb, sizeof(hb), 0) != (ssize_t)sizeof(hb))
		ok = cp_error("%s: shorter than a sample-file header", name) == 0;
	else if (ok)
		ok = pl_check_header(hb, sizeof(hb), (uint64_t)st.st_size, name, &h) == 0;
	if (!ok) {
		log_warn("preload sample file in %s: %s; skipped", s->dir, cp_last_error());
		s->bad_files++;
		close(fd);
		unlinkat(s->dirfd, name, 0);
		return NULL;
	}
	void *map = mmap(NULL, h.header_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	struct image *im = xcalloc(1, sizeof(*im));
	im->name = xstrdup(name);
	im->fd = fd;
	im->h = h;
	im->hmap = map;
	im->pid = h.pid;
	return im;
}

/* A process whose sampler could not create its file (err-PID-ERRNO, format.h): it is not
 * sampled, and not for a reason of LD_PRELOAD's. */
static void on_write_error(struct psession *s, const char *name, pid_t pid, int err)
{
	s->procs_unwritten++;
	s->write_errno = err;
	size_t k = 0;
	for (size_t i = 0; i < s->nexp; i++) {
		if (s->exp[i].pid == pid) {
			free(s->exp[i].path);
			continue;
		}
		s->exp[k++] = s->exp[i];
	}
	s->nexp = k;
	unlinkat(s->dirfd, name, 0);
}

static void scan_dir(struct psession *s)
{
	DIR *d = fdopendir(dup(s->dirfd));
	if (!d)
		return;
	rewinddir(d);
	struct newfile *nf = NULL;
	size_t n = 0, alloc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		long long pid;
		unsigned long long start;
		int end = 0, err;
		if (sscanf(e->d_name, "err-%lld-%d%n", &pid, &err, &end) == 2 &&
		    e->d_name[end] == '\0') {
			on_write_error(s, e->d_name, (pid_t)pid, err);
			continue;
		}
		if (e->d_name[0] == '.' ||
		    sscanf(e->d_name, "%lld-%llu.pl%n", &pid, &start, &end) != 2 ||
		    e->d_name[end] != '\0' || known_name(s, e->d_name))
			continue;
		ALLOC_GROW(nf, n + 1, alloc);
		nf[n++] = (struct newfile){xstrdup(e->d_name), (pid_t)pid, start};
	}
	closedir(d);
	/* Parents before children, old images before the exec'd ones. */
	if (n > 1)
		qsort(nf, n, sizeof(*nf), newfile_cmp);
	for (size_t i = 0; i < n; i++) {
		struct image *im = open_image(s, nf[i].name);
		free(nf[i].name);
		if (!im)
			continue;
		log_debug("preload: new image %s", im->name);
		/* An older image of this pid exec'd (same process start time): read it out. Or
		 * its process died and the pid came back: it ends here. Then everything older
		 * than the new image is processed before the new image starts. */
		for (size_t k = 0; k < s->nimg;) {
			struct image *old = s->img[k];
			if (old->pid != im->pid || old->superseded) {
				k++;
			} else if (old->h.proc_start == im->h.proc_start) {
				old->superseded = 1;
				read_image(s, old);
				k++;
			} else {
				finish_image(s, k);
			}
		}
		runner_process(s->rs, im->h.start_ns ? im->h.start_ns - 1 : 0);
		ALLOC_GROW(s->img, s->nimg + 1, s->img_alloc);
		s->img[s->nimg++] = im;
		image_started(s, im->pid, im->h.start_ns);
		read_image(s, im);
	}
	free(nf);
}

/*
 * Exec'd pids that never showed an image and are gone: their programs went unsampled. A pid
 * found gone is judged after the next round's scan of the directory, not at once: its image
 * may have been created after this round's scan began (a busy machine can take a tenth of a
 * second from the exec to the sampler's file, and the program may be done in a few
 * milliseconds more), and a scan that starts after the process ended lists its file, if it
 * made one.
 */
static void check_expectations(struct psession *s, int final)
{
	uint64_t now = launch_now_ns();
	size_t k = 0;
	for (size_t i = 0; i < s->nexp; i++) {
		struct expect *x = &s->exp[i];
		if (final || x->gone) {
			log_debug("preload: pid %d exec'd %s and showed no image", (int)x->pid,
			          x->path);
			add_unsampled(s, x->path, x->flags);
			free(x->path);
			continue;
		}
		if (now - x->seen_at > EXPECT_GRACE_NS && !proc_alive(x->pid, 0))
			x->gone = 1;
		s->exp[k++] = *x;
	}
	s->nexp = k;
	/* Forget image starts nothing can ask about any more. */
	size_t drop = 0;
	while (drop < s->nrecent && now - s->recent[drop].seen_at > RECENT_KEEP_NS)
		drop++;
	if (drop) {
		memmove(s->recent, s->recent + drop, (s->nrecent - drop) * sizeof(*s->recent));
		s->nrecent -= drop;
	}
}

/* The runner's read op: read every file, find new ones, retire finished ones (all of them
 * when final); the runner then processes what is due. */
static void preload_read(void *be, struct runner_session *rs, int final)
{
	struct psession *s = be;
	for (size_t i = 0; i < s->nimg; i++) {
		s->img[i]->fresh = 0;
		read_image(s, s->img[i]);
	}
	scan_dir(s);
	/* A process that wrote this round is alive (it is checked in a round it is quiet), which
	 * spares a /proc read per busy process per round. */
	for (size_t i = 0; i < s->nimg;) {
		struct image *im = s->img[i];
		if (im->superseded ||
		    ((final || !im->fresh) && !proc_alive(im->pid, im->h.proc_start)))
			finish_image(s, i);
		else
			i++;
	}
	check_expectations(s, 0);
}

/* ---- the run ---- */

/* The environment the command gets: the sampler first in line after what LD_PRELOAD already
 * holds (an AddressSanitizer runtime must stay first), and ASan told not to refuse to run
 * after a preloaded library (docs/preload.md). */
static char **child_env(const char *lib, const char *dir, int hz)
{
	char **env = xcalloc(6, sizeof(char *));
	size_t n = 0;
	const char *pre = getenv("LD_PRELOAD");
	env[n++] = pre && *pre ? xasprintf("LD_PRELOAD=%s:%s", pre, lib)
	                       : xasprintf("LD_PRELOAD=%s", lib);
	env[n++] = xasprintf("CIPROF_PRELOAD_DIR=%s", dir);
	env[n++] = xasprintf("CIPROF_PRELOAD_HZ=%d", hz);
	const char *asan = getenv("ASAN_OPTIONS");
	if (!asan || !*asan)
		env[n++] = xstrdup("ASAN_OPTIONS=verify_asan_link_order=0");
	else if (!strstr(asan, "verify_asan_link_order"))
		env[n++] = xasprintf("ASAN_OPTIONS=%s:verify_asan_link_order=0", asan);
	return env;
}

static void free_env(char **env)
{
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

/* The command itself: a static or set-ID program cannot be reached at all (reported now).
 * Returns 1 when it can be: its path is in found. */
static int check_command(struct psession *s, const char *argv0, char *found, size_t len)
{
	const char *path = argv0;
	if (!strchr(argv0, '/')) {
		path = NULL;
		const char *env = getenv("PATH");
		char *dirs = xstrdup(env ? env : "/usr/local/bin:/usr/bin:/bin");
		for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d;
		     d = strtok_r(NULL, ":", &save)) {
			snprintf(found, len, "%s/%s", *d ? d : ".", argv0);
			if (access(found, X_OK) == 0) {
				path = found;
				break;
			}
		}
		free(dirs);
	} else {
		snprintf(found, len, "%s", argv0);
	}
	if (!path)
		return 0;
	uint32_t flags = pl_exec_flags(found);
	if (flags & (PL_EXEC_STATIC | PL_EXEC_SETID)) {
		add_unsampled(s, found, flags);
		return 0;
	}
	return 1;
}

static void report(struct psession *s)
{
	for (size_t i = 0; i < s->nuns; i++) {
		const struct unsampled *u = &s->uns[i];
		const char *why = (u->flags & PL_EXEC_STATIC)  ? "a static (or 32-bit) program"
		                  : (u->flags & PL_EXEC_SETID) ? "a set-user/group-ID program"
		                                               : "it never loaded the sampler";
		char times[32] = "";
		if (u->count > 1)
			snprintf(times, sizeof(times), ", %llu runs", (unsigned long long)u->count);
		log_warn("not sampled: %s (%s: LD_PRELOAD cannot reach it%s)", u->path, why, times);
	}
	for (size_t i = 0; i < s->nnotes; i++)
		log_warn("%s (%s%s)", s->notes[i].text, s->notes[i].proc,
		         s->notes[i].count > 1 ? ", and others" : "");
	/* CPU-time timers fire at the scheduler's tick at best; far rarer means a loaded
	 * machine delayed them: each stack then stands for much CPU time. */
	double per_stack = s->rs->stacks ? (double)s->rs->samples / (double)s->rs->stacks : 0;
	if (per_stack > 3 && per_stack * (double)s->period_ns > 30e6)
		log_warn("stacks were taken once per %.0f ms of CPU on average, not every %.1f ms: "
		         "the CPU-time timers fired late (a loaded machine?), so shares are less "
		         "precise than %llu samples suggest",
		         per_stack * (double)s->period_ns / 1e6, (double)s->period_ns / 1e6,
		         (unsigned long long)s->rs->samples);
	if (s->procs_unwritten || s->threads_unwritten) {
		char what[96] = "";
		if (s->procs_unwritten)
			snprintf(what, sizeof(what), "%llu processes",
			         (unsigned long long)s->procs_unwritten);
		if (s->threads_unwritten)
			snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%llu threads",
			         s->procs_unwritten ? " and " : "",
			         (unsigned long long)s->threads_unwritten);
		log_warn("cannot write the sampler's files in %s: %s; %s were not sampled (set "
		         "TMPDIR to a directory with room: each sampled thread's ring is written "
		         "there while it runs, docs/preload.md)",
		         s->dir, strerror(s->write_errno), what);
	}
	if (s->threads_unsampled)
		log_warn("%llu threads were not sampled: a process ran more threads at once than "
		         "the sampler has rings for (CIPROF_PRELOAD_SLOTS, at most %d)",
		         (unsigned long long)s->threads_unsampled, PL_MAX_SLOTS);
	if (s->events_lost)
		log_warn("%llu sampler events were lost (memory maps, threads, execs): the runner "
		         "fell behind",
		         (unsigned long long)s->events_lost);
	if (s->bad_files)
		log_warn("%llu preload sample files were malformed (see above)",
		         (unsigned long long)s->bad_files);
}

/* Removes the run's directory and whatever is left in it (background processes may still
 * write to files they mapped; those go on unseen). */
static void remove_dir(struct psession *s)
{
	if (s->dirfd < 0)
		return;
	DIR *d = fdopendir(dup(s->dirfd));
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(s->dirfd, e->d_name, 0);
	if (d)
		closedir(d);
	close(s->dirfd);
	s->dirfd = -1;
	if (rmdir(s->dir) < 0)
		log_verbose("cannot remove %s: %s", s->dir, strerror(errno));
}

static int preload_prepare(void *be, struct runner_session *rs, char ***env)
{
	struct psession *s = be;
	s->rs = rs;
	if (s->opts->unwind == RUNNER_UNWIND_DWARF)
		return cp_error("--unwind dwarf needs the perf backend: the preload backend "
		                "walks frame pointers only");
	s->lib = preload_find_library();
	if (!s->lib)
		return RUNNER_ERR_FAILED;
	const char *tmpdir = getenv("TMPDIR");
	s->dir = xasprintf("%s/ciprof-preload.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (!mkdtemp(s->dir)) {
		int ret = cp_error_errno("cannot create a directory for the sample files at %s",
		                         s->dir);
		free(s->dir);
		s->dir = NULL;
		return ret;
	}
	s->dirfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	s->reachable = check_command(s, s->opts->argv[0], s->cmd_path, sizeof(s->cmd_path));
	s->env = child_env(s->lib, s->dir, s->opts->hz);
	*env = s->env;
	log_verbose("preload backend: %s, sample files in %s", s->lib, s->dir);
	return 0;
}

/* The command must show an image; if it does not (LD_PRELOAD ignored, the sample directory
 * not writable...), it is reported like any exec'd program that did not. */
static int preload_start(void *be, struct runner_session *rs)
{
	struct psession *s = be;
	if (s->opts->unwind == RUNNER_UNWIND_FP)
		s->unw = unwinder_new(rs->objs);
	if (s->reachable) {
		ALLOC_GROW(s->exp, s->nexp + 1, s->exp_alloc);
		s->exp[s->nexp++] = (struct expect){
		        rs->child, launch_now_ns(), launch_now_ns(), 0, xstrdup(s->cmd_path), 0};
	}
	return 0;
}

static void preload_exec_failed(void *be, struct runner_session *rs)
{
	struct psession *s = be;
	for (size_t i = 0; i < s->nexp; i++)
		free(s->exp[i].path);
	s->nexp = 0;
}

static uint64_t preload_finish(void *be, struct runner_session *rs)
{
	struct psession *s = be;
	check_expectations(be, 1);
	if (s->unw) {
		unwinder_log_leaf(s->unw, PL_STACK_COPY);
		unwinder_free(s->unw);
		s->unw = NULL;
	}
	return 0;
}

static void preload_report(void *be, struct runner_session *rs)
{
	unwind_warn_truncated(rs->prof, UNWIND_ADVICE_PRELOAD);
	unwind_warn_libc_cut(rs->agg.libc_cut, rs->agg.total, rs->agg.libc_cut_where,
	                     UNWIND_ADVICE_PRELOAD);
	report(be);
}

static void preload_release(void *be, struct runner_session *rs)
{
	struct psession *s = be;
	unwinder_free(s->unw);
	while (s->nimg) {
		s->img[s->nimg - 1]->superseded = 1; /* no exit record: nothing processes it now */
		close_image(s, s->img[--s->nimg]);
	}
	free(s->img);
	for (size_t i = 0; i < s->nexp; i++)
		free(s->exp[i].path);
	free(s->exp);
	free(s->recent);
	for (size_t i = 0; i < s->nuns; i++)
		free(s->uns[i].path);
	free(s->uns);
	for (size_t i = 0; i < s->nnotes; i++) {
		free(s->notes[i].text);
		free(s->notes[i].proc);
	}
	free(s->notes);
	free(s->scratch);
	remove_dir(s);
	free(s->dir);
	free(s->lib);
	if (s->env)
		free_env(s->env);
	free(s);
}

const struct runner_backend_ops preload_backend_ops = {
        .name = "preload",
        .round_ms = ROUND_MS,
        .prepare = preload_prepare,
        .start = preload_start,
        .exec_failed = preload_exec_failed,
        .read = preload_read,
        .before_process = preload_before_process,
        .sample = preload_sample,
        .exit_stale = preload_exit_stale,
        .finish = preload_finish,
        .report = preload_report,
        .release = preload_release,
};

void *preload_backend_new(const struct runner_opts *opts)
{
	struct psession *s = xcalloc(1, sizeof(*s));
	s->opts = opts;
	s->dirfd = -1;
	s->period_ns = 1000000000ULL / (uint64_t)opts->hz;
	return s;
}
