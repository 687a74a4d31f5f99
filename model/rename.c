/* Modules renamed between two profiles (model/rename.h): paired by the function names they
 * share, then p copied with the paired modules named as in ref. */
#include "model/rename.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* The kernel's process name: an executable's first 15 bytes. */
#define COMM_LEN 15

/* Pairs counted: new modules times gone ones. Beyond it nothing is paired (a profile with
 * thousands of modules on each side only renamed is not one this can tell apart). */
#define MAX_PAIRS (1u << 22)

struct fm {
	uint32_t function, module;
};

static int fm_cmp(const void *a, const void *b)
{
	const struct fm *x = a, *y = b;
	if (x->function != y->function)
		return x->function < y->function ? -1 : 1;
	return x->module < y->module ? -1 : x->module > y->module;
}

/* The suffix of an unsymbolized address, "+0x1f0", when function is "module+0x1f0". */
static const char *address_of(const char *function, const char *module)
{
	size_t n = strlen(module);
	if (n && !strncmp(function, module, n) && !strncmp(function + n, "+0x", 3))
		return function + n;
	return NULL;
}

/* Per string id of prof: the index of its module in the list of modules only it has (new or
 * gone), or -1. */
static int *modules_only(const struct profile *prof, const struct profile *other, uint32_t **list,
                         size_t *n)
{
	int *idx = xmalloc(st_mult(prof->nstr ? prof->nstr : 1, sizeof(*idx)));
	for (size_t i = 0; i < prof->nstr; i++)
		idx[i] = -2; /* not a module */
	for (size_t i = 0; i < prof->nframes; i++)
		if (prof->frames[i].kind == PROFILE_FRAME_FUNCTION && prof->frames[i].module)
			idx[prof->frames[i].module] = -1;
	/* Modules of other: those of its function frames. */
	uint8_t *in_other = xcalloc(other->nstr ? other->nstr : 1, 1);
	for (size_t i = 0; i < other->nframes; i++)
		if (other->frames[i].kind == PROFILE_FRAME_FUNCTION)
			in_other[other->frames[i].module] = 1;
	size_t alloc = 0;
	*list = NULL;
	*n = 0;
	for (size_t s = 1; s < prof->nstr; s++) {
		if (idx[s] != -1)
			continue;
		int64_t o = profile_find_str(other, profile_str(prof, (uint32_t)s));
		if (o >= 0 && in_other[o])
			continue;
		ALLOC_GROW(*list, *n + 1, alloc);
		(*list)[*n] = (uint32_t)s;
		idx[s] = (int)(*n)++;
	}
	for (size_t s = 0; s < prof->nstr; s++)
		if (idx[s] < 0)
			idx[s] = -1;
	free(in_other);
	return idx;
}

/* Distinct (function, module) pairs of prof's function frames in the modules idx marks. */
static struct fm *distinct_pairs(const struct profile *prof, const int *idx, size_t *n)
{
	struct fm *v = xmalloc(st_mult(prof->nframes ? prof->nframes : 1, sizeof(*v)));
	size_t k = 0;
	for (size_t i = 0; i < prof->nframes; i++) {
		const struct profile_frame *f = &prof->frames[i];
		if (f->kind == PROFILE_FRAME_FUNCTION && idx[f->module] >= 0)
			v[k++] = (struct fm){f->function, f->module};
	}
	if (k > 1)
		qsort(v, k, sizeof(*v), fm_cmp);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (!u || fm_cmp(&v[u - 1], &v[i]))
			v[u++] = v[i];
	*n = u;
	return v;
}

/* Whether ref has a function frame (function, module). */
static int has_pair(const struct fm *r, size_t nr, uint32_t function, uint32_t module)
{
	struct fm key = {function, module};
	return bsearch(&key, r, nr, sizeof(*r), fm_cmp) != NULL;
}

/* For each new module, the gone module it pairs with (-1: none). */
static int *pair_modules(const struct profile *p, const struct profile *ref, const int *pidx,
                         const uint32_t *pnew, size_t nnew, const int *ridx, const uint32_t *rgone,
                         size_t ngone, size_t *shared_out, size_t *count_new)
{
	size_t np, nr;
	struct fm *pp = distinct_pairs(p, pidx, &np);
	struct fm *rr = distinct_pairs(ref, ridx, &nr);
	size_t *cnt = xcalloc(st_mult(nnew, ngone), sizeof(*cnt));
	size_t *count_gone = xcalloc(ngone, sizeof(*count_gone));
	for (size_t i = 0; i < nr; i++)
		count_gone[ridx[rr[i].module]]++;
	struct strbuf name = STRBUF_INIT;
	for (size_t i = 0; i < np; i++) {
		int m = pidx[pp[i].module];
		count_new[m]++;
		const char *fn = profile_str(p, pp[i].function);
		const char *addr = address_of(fn, profile_str(p, pp[i].module));
		if (addr) {
			/* "new+0x1f0" is "gone+0x1f0" in a module of the same code. */
			for (size_t g = 0; g < ngone; g++) {
				strbuf_reset(&name);
				strbuf_addstr(&name, profile_str(ref, rgone[g]));
				strbuf_addstr(&name, addr);
				int64_t id = profile_find_str(ref, name.buf);
				if (id >= 0 && has_pair(rr, nr, (uint32_t)id, rgone[g]))
					cnt[(size_t)m * ngone + g]++;
			}
			continue;
		}
		int64_t id = profile_find_str(ref, fn);
		if (id < 0)
			continue;
		/* rr is sorted by function: its run of id, each entry in a gone module. */
		struct fm key = {(uint32_t)id, 0};
		size_t lo = 0, hi = nr;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (fm_cmp(&rr[mid], &key) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t j = lo; j < nr && rr[j].function == (uint32_t)id; j++)
			cnt[(size_t)m * ngone + (size_t)ridx[rr[j].module]]++;
	}
	strbuf_release(&name);

	/* Each new module's best gone module, when unique and sharing at least half of the larger
	 * module's functions; then each gone module keeps only its strongest claimant. */
	int *to = xmalloc(st_mult(nnew ? nnew : 1, sizeof(*to)));
	for (size_t m = 0; m < nnew; m++) {
		to[m] = -1;
		shared_out[m] = 0;
		size_t best = 0, ties = 0;
		int bg = -1;
		for (size_t g = 0; g < ngone; g++) {
			size_t c = cnt[m * ngone + g];
			if (c > best) {
				best = c;
				bg = (int)g;
				ties = 0;
			} else if (c && c == best) {
				ties++;
			}
		}
		if (bg < 0 || ties)
			continue;
		size_t larger = count_new[m] > count_gone[bg] ? count_new[m] : count_gone[bg];
		if (2 * best < larger)
			continue;
		to[m] = bg;
		shared_out[m] = best;
	}
	for (size_t m = 0; m < nnew; m++) {
		if (to[m] < 0)
			continue;
		for (size_t k = 0; k < nnew; k++) {
			if (k == m || to[k] != to[m])
				continue;
			if (shared_out[k] >= shared_out[m]) {
				/* A tie leaves the gone module to neither. */
				if (shared_out[k] == shared_out[m])
					to[k] = -1;
				to[m] = -1;
				break;
			}
		}
	}
	free(count_gone);
	free(cnt);
	free(pp);
	free(rr);
	return to;
}

/* Whether a process frame's name stands for module (its whole name or the kernel's 15 bytes
 * of it). */
static int names_module(const char *process, const char *module)
{
	size_t n = strlen(process);
	return !strcmp(process, module) ||
	       (n == COMM_LEN && strlen(module) > COMM_LEN && !strncmp(process, module, COMM_LEN));
}

struct profile *profile_rename_modules(const struct profile *p, const struct profile *ref,
                                       struct strbuf *note)
{
	uint32_t *pnew, *rgone;
	size_t nnew, ngone;
	int *pidx = modules_only(p, ref, &pnew, &nnew);
	int *ridx = modules_only(ref, p, &rgone, &ngone);
	struct profile *out = NULL;
	if (!nnew || !ngone || (uint64_t)nnew * ngone > MAX_PAIRS)
		goto done;
	size_t *shared = xcalloc(nnew, sizeof(*shared));
	size_t *count_new = xcalloc(nnew, sizeof(*count_new));
	int *to = pair_modules(p, ref, pidx, pnew, nnew, ridx, rgone, ngone, shared, count_new);
	char **renamed = xcalloc(p->nstr ? p->nstr : 1, sizeof(*renamed));
	size_t any = 0;
	for (size_t m = 0; m < nnew; m++) {
		if (to[m] < 0)
			continue;
		const char *from = profile_str(p, pnew[m]), *as = profile_str(ref, rgone[to[m]]);
		renamed[pnew[m]] = xstrdup(as);
		any++;
		if (note) {
			if (note->len)
				strbuf_addstr(note, "; ");
			strbuf_addf(note, "%s as %s (%zu of %zu functions in common)", from, as,
			            shared[m], count_new[m]);
		}
	}
	if (!any)
		goto release;
	for (size_t i = 0; i < p->nframes; i++) {
		const struct profile_frame *f = &p->frames[i];
		if (f->kind == PROFILE_FRAME_FUNCTION) {
			const char *as = renamed[f->module];
			const char *addr = as ? address_of(profile_str(p, f->function),
			                                   profile_str(p, f->module))
			                      : NULL;
			if (addr && !renamed[f->function])
				renamed[f->function] = xasprintf("%s%s", as, addr);
			continue;
		}
		/* A process named after a renamed program takes the name it had in ref. */
		const char *proc = profile_str(p, f->function);
		for (size_t m = 0; m < nnew && !renamed[f->function]; m++) {
			if (to[m] < 0 || !names_module(proc, profile_str(p, pnew[m])))
				continue;
			const char *as = profile_str(ref, rgone[to[m]]);
			renamed[f->function] =
			        strlen(proc) == COMM_LEN && strcmp(proc, profile_str(p, pnew[m]))
			                ? xasprintf("%.*s", COMM_LEN, as)
			                : xstrdup(as);
		}
	}
	out = profile_new();
	profile_merge_renamed(out, p, renamed);
	out->stats = p->stats;
release:
	for (size_t s = 0; s < p->nstr; s++)
		free(renamed[s]);
	free(renamed);
	free(to);
	free(count_new);
	free(shared);
done:
	free(pidx);
	free(ridx);
	free(pnew);
	free(rgone);
	return out;
}
