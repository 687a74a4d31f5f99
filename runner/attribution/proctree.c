/* Process tree and address spaces for the perf backend (see proctree.h).
 * Exited processes are dropped in batches, so memory follows the live processes, not the
 * thousands a long suite starts. */
#include "common/search.h"
#include "runner/attribution/proctree.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void proctree_init(struct proctree *t)
{
	memset(t, 0, sizeof(*t));
	hashidx_init(&t->proc_idx);
	hashidx_init(&t->dso_idx);
	t->procfs_fallback = 1;
}

static void proc_free(struct proc *p)
{
	free(p->name);
	addr_space_release(&p->as);
	free(p);
}

void proctree_release(struct proctree *t)
{
	for (size_t i = 0; i < t->nprocs; i++)
		proc_free(t->procs[i]);
	free(t->procs);
	for (size_t i = 0; i < t->ndsos; i++)
		free(t->dsos[i].path);
	free(t->dsos);
	hashidx_release(&t->proc_idx);
	hashidx_release(&t->dso_idx);
	memset(t, 0, sizeof(*t));
}

static int proc_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct proctree *t = ctx;
	return t->procs[pos]->pid == *(const pid_t *)key;
}

struct proc *proctree_find(struct proctree *t, pid_t pid)
{
	int64_t i = hashidx_find(&t->proc_idx, hash_mix((uint64_t)pid), proc_eq, t, &pid);
	return i < 0 ? NULL : t->procs[i];
}

/* Drops exited processes once they are half the table, rebuilding the index. */
static void compact(struct proctree *t)
{
	size_t exited = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		exited += t->procs[i]->exited;
	if (exited < 64 || exited * 2 < t->nprocs)
		return;
	size_t kept = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		if (t->procs[i]->exited)
			proc_free(t->procs[i]);
		else
			t->procs[kept++] = t->procs[i];
	}
	t->nprocs = kept;
	hashidx_release(&t->proc_idx);
	for (size_t i = 0; i < kept; i++)
		hashidx_insert(&t->proc_idx, hash_mix((uint64_t)t->procs[i]->pid), (uint32_t)i);
}

/* A process's name is the root frame of its stacks, which must not be empty (folded text could
 * not say it): a process first seen by an empty COMM or by a mapping of no file is unknown. */
static char *proc_name(const char *name)
{
	return xstrdup(name && *name ? name : "[unknown]");
}

static struct proc *proc_add(struct proctree *t, pid_t pid, const char *name)
{
	struct proc *old = proctree_find(t, pid);
	if (old) {
		/* A reused pid: the old process is gone. */
		addr_space_release(&old->as);
		free(old->name);
		old->name = proc_name(name);
		old->exited = 0;
		old->maps_from_procfs = 0;
		old->heard = 1;
		t->processes_seen++;
		return old;
	}
	compact(t);
	struct proc *p = xcalloc(1, sizeof(*p));
	p->pid = pid;
	p->name = proc_name(name);
	p->heard = 1;
	ALLOC_GROW(t->procs, t->nprocs + 1, t->procs_alloc);
	t->procs[t->nprocs] = p;
	hashidx_insert(&t->proc_idx, hash_mix((uint64_t)pid), (uint32_t)t->nprocs);
	t->nprocs++;
	t->processes_seen++;
	t->threads_seen++;
	return p;
}

struct proc *proctree_get(struct proctree *t, pid_t pid, const char *name)
{
	struct proc *p = proctree_find(t, pid);
	return p ? p : proc_add(t, pid, name);
}

void proctree_fork(struct proctree *t, pid_t pid, pid_t ppid, pid_t tid, pid_t ptid)
{
	if (pid == ppid) {
		t->threads_seen++; /* a new thread of an existing process */
		return;
	}
	struct proc *parent = proctree_find(t, ppid);
	struct proc *child = proc_add(t, pid, parent ? parent->name : "[unknown]");
	/* proc_add may have moved the table; look the parent up again. */
	parent = proctree_find(t, ppid);
	child->ppid = ppid;
	child->heard = 0; /* until a record of its own comes */
	if (parent && parent != child)
		addr_space_copy(&child->as, &parent->as);
}

int proctree_pid_alive(pid_t pid)
{
	char path[64], state = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = 0;
	fclose(f);
	return state && state != 'Z' && state != 'X';
}

void proctree_exit(struct proctree *t, pid_t pid, pid_t tid)
{
	if (pid != tid)
		return;
	struct proc *p = proctree_find(t, pid);
	if (!p)
		return;
	p->exited = 1;
	addr_space_release(&p->as);
}

void proctree_comm(struct proctree *t, pid_t pid, pid_t tid, const char *comm, int exec)
{
	struct proc *p = proctree_find(t, pid);
	if (!p) {
		proc_add(t, pid, comm);
		return;
	}
	if (!exec)
		return; /* thread renames do not rename the process's stacks */
	free(p->name);
	p->name = proc_name(comm);
	addr_space_release(&p->as);
	p->maps_from_procfs = 0;
}

static int dso_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct proctree *t = ctx;
	const struct dso *k = key;
	const struct dso *d = &t->dsos[pos];
	return d->kind == k->kind && d->pid == k->pid && !strcmp(d->path, k->path);
}

uint32_t proctree_dso(struct proctree *t, enum dso_kind kind, const char *path, pid_t pid)
{
	if (kind != DSO_ANON)
		pid = 0;
	struct dso k = {(char *)path, kind, pid};
	uint64_t h = hash_bytes(path, strlen(path), (uint64_t)kind * 31 + (uint64_t)pid);
	int64_t i = hashidx_find(&t->dso_idx, h, dso_eq, t, &k);
	if (i >= 0)
		return (uint32_t)i;
	ALLOC_GROW(t->dsos, t->ndsos + 1, t->dsos_alloc);
	t->dsos[t->ndsos] = (struct dso){xstrdup(path), kind, pid};
	hashidx_insert(&t->dso_idx, h, (uint32_t)t->ndsos);
	return (uint32_t)t->ndsos++;
}

static enum dso_kind classify(const char *filename)
{
	if (!strcmp(filename, "[vdso]"))
		return DSO_VDSO;
	if (filename[0] == '/' && strncmp(filename, "//anon", 6) && strncmp(filename, "/memfd:", 7))
		return DSO_FILE;
	return DSO_ANON; /* "//anon", "[anon:...]", "", memfd JIT code, "[heap]"... */
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

void proctree_mmap(struct proctree *t, pid_t pid, uint64_t addr, uint64_t len, uint64_t pgoff,
                   const char *filename)
{
	struct proc *p = proctree_get(t, pid, basename_of(filename));
	enum dso_kind kind = classify(filename);
	/* After exec the kernel knows the name only truncated to 15 bytes; the first file
	 * mapping after exec is the executable itself, which names it in full. */
	if (kind == DSO_FILE && p->as.n == 0) {
		const char *base = basename_of(filename);
		size_t nl = strlen(p->name);
		if (nl == 15 && strlen(base) > nl && !strncmp(base, p->name, nl)) {
			free(p->name);
			p->name = xstrdup(base);
		}
	}
	struct map m = {
	        .start = addr,
	        .end = addr + len,
	        .pgoff = pgoff,
	        .dso = proctree_dso(t, kind, kind == DSO_ANON ? "//anon" : filename, pid),
	};
	if (m.end > m.start)
		addr_space_insert(&p->as, &m);
}

void proctree_resolve(struct proctree *t, struct proc *p, uint64_t addr, uint32_t *dso,
                      uint64_t *offset)
{
	const struct map *m = p ? addr_space_find(&p->as, addr) : NULL;
	if (!m && p && t->procfs_fallback && !p->maps_from_procfs && !p->exited) {
		/* Mappings made before sampling began (or records lost): ask procfs once. */
		p->maps_from_procfs = 1;
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
		struct strbuf sb = STRBUF_INIT;
		sb.max = 64 << 20;
		if (strbuf_read_file(&sb, path) == 0)
			proctree_load_procfs_maps(t, p, sb.buf);
		strbuf_release(&sb);
		m = addr_space_find(&p->as, addr);
	}
	if (!m) {
		*dso = proctree_dso(t, DSO_UNKNOWN, "[unknown]", 0);
		*offset = addr;
		return;
	}
	*dso = m->dso;
	switch (t->dsos[m->dso].kind) {
	case DSO_FILE:
	case DSO_VDSO:
		*offset = addr - m->start + m->pgoff;
		break;
	default:
		*offset = addr;
	}
}

size_t proctree_resolve_chain(struct proctree *t, struct proc *p, const uint64_t *ips, size_t n,
                              uint32_t *dsos, uint64_t *offsets)
{
	for (size_t i = 0; i < n; i++) {
		proctree_resolve(t, p, ips[i], &dsos[i], &offsets[i]);
		if (i > 0 && t->dsos[dsos[i]].kind == DSO_UNKNOWN)
			return i;
	}
	return n;
}

size_t proctree_load_procfs_maps(struct proctree *t, struct proc *p, const char *text)
{
	size_t added = 0;
	const char *line = text;
	while (*line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char buf[4352];
		if (len < sizeof(buf)) {
			memcpy(buf, line, len);
			buf[len] = '\0';
			uint64_t start, end, pgoff;
			char perms[8];
			int name_at = 0;
			if (sscanf(buf, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s%n", &start,
			           &end, perms, &pgoff, &name_at) == 4 &&
			    perms[2] == 'x') {
				const char *name = buf + name_at;
				while (*name == ' ')
					name++;
				proctree_mmap(t, p->pid, start, end - start, pgoff, name);
				added++;
			}
		}
		line += len + (eol ? 1 : 0);
	}
	return added;
}

/* ---- address spaces ---- */

void addr_space_release(struct addr_space *as)
{
	free(as->maps);
	memset(as, 0, sizeof(*as));
}

void addr_space_copy(struct addr_space *dst, const struct addr_space *src)
{
	addr_space_release(dst);
	if (!src->n)
		return;
	dst->maps = xmalloc(st_mult(src->n, sizeof(*src->maps)));
	memcpy(dst->maps, src->maps, src->n * sizeof(*src->maps));
	dst->n = dst->alloc = src->n;
}

/* First map whose end is above addr. */
static size_t lower_bound(const struct addr_space *as, uint64_t addr)
{
	return cp_first_above(as->maps, as->n, sizeof(*as->maps), offsetof(struct map, end), addr);
}

const struct map *addr_space_find(const struct addr_space *as, uint64_t addr)
{
	size_t i = lower_bound(as, addr);
	if (i < as->n && as->maps[i].start <= addr)
		return &as->maps[i];
	return NULL;
}

void addr_space_insert(struct addr_space *as, const struct map *m)
{
	/* Trim or split whatever overlaps [m->start, m->end): the kernel reports no munmap,
	 * so a new mapping is the only sign that the old one is gone there. */
	size_t i = lower_bound(as, m->start);
	struct map tail = {0};
	int have_tail = 0;
	size_t j = i;
	while (j < as->n && as->maps[j].start < m->end) {
		struct map *o = &as->maps[j];
		if (o->end > m->end) {
			tail = *o;
			tail.pgoff += m->end - o->start;
			tail.start = m->end;
			have_tail = 1;
		}
		if (o->start < m->start) {
			o->end = m->start; /* keep the head part */
			i = j + 1;
			j++;
			continue;
		}
		j++;
	}
	/* maps[i..j) are wholly covered (except a head kept above); replace them. */
	size_t removed = j - i;
	size_t add = 1 + (size_t)have_tail;
	if (add > removed)
		ALLOC_GROW(as->maps, as->n + add - removed, as->alloc);
	memmove(&as->maps[i + add], &as->maps[j], (as->n - j) * sizeof(*as->maps));
	as->maps[i] = *m;
	if (have_tail)
		as->maps[i + 1] = tail;
	as->n = as->n + add - removed;
}
