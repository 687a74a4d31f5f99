/* Raw stack aggregation and the one symbolization pass (see aggregate.h). */
#include "runner/aggregate.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "runner/attribution/attribute.h"
#include "runner/sample/unwind.h"
#include "runner/symbols/symbolize.h"

#include <stdlib.h>
#include <string.h>

void aggregator_init(struct aggregator *a, struct profile *prof)
{
	memset(a, 0, sizeof(*a));
	a->prof = prof;
	hashidx_init(&a->frame_idx);
	hashidx_init(&a->node_idx);
	hashidx_init(&a->sample_idx);
	hashidx_init(&a->pend_idx);
	ALLOC_GROW(a->nodes, 1, a->nodes_alloc);
	a->nodes[0] = (struct raw_node){0, UINT32_MAX};
	a->nnodes = 1;
}

void aggregator_release(struct aggregator *a)
{
	free(a->frames);
	free(a->nodes);
	free(a->samples);
	hashidx_release(&a->frame_idx);
	hashidx_release(&a->node_idx);
	hashidx_release(&a->sample_idx);
	free(a->pend);
	hashidx_release(&a->pend_idx);
	memset(a, 0, sizeof(*a));
}

static int frame_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct aggregator *a = ctx;
	const struct raw_frame *k = key;
	const struct raw_frame *f = &a->frames[pos];
	return f->dso == k->dso && f->offset == k->offset && f->is_return == k->is_return;
}

static uint32_t raw_frame(struct aggregator *a, uint32_t dso, uint64_t offset, uint32_t is_return)
{
	struct raw_frame k = {dso, is_return, offset};
	uint64_t h = hash_mix(offset ^ hash_mix(((uint64_t)dso << 1) | is_return));
	int64_t i = hashidx_find(&a->frame_idx, h, frame_eq, a, &k);
	if (i >= 0)
		return (uint32_t)i;
	ALLOC_GROW(a->frames, a->nframes + 1, a->frames_alloc);
	a->frames[a->nframes] = k;
	hashidx_insert(&a->frame_idx, h, (uint32_t)a->nframes);
	return (uint32_t)a->nframes++;
}

static int node_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct aggregator *a = ctx;
	const struct raw_node *k = key;
	return a->nodes[pos].parent == k->parent && a->nodes[pos].frame == k->frame;
}

static uint32_t raw_node(struct aggregator *a, uint32_t parent, uint32_t frame)
{
	struct raw_node k = {parent, frame};
	uint64_t h = hash_mix(((uint64_t)parent << 32) | frame);
	int64_t i = hashidx_find(&a->node_idx, h, node_eq, a, &k);
	if (i >= 0)
		return (uint32_t)i;
	ALLOC_GROW(a->nodes, a->nnodes + 1, a->nodes_alloc);
	a->nodes[a->nnodes] = k;
	hashidx_insert(&a->node_idx, h, (uint32_t)a->nnodes);
	return (uint32_t)a->nnodes++;
}

/* ctx: the table's array of samples */
static int sample_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct raw_sample *items = ctx, *k = key;
	return items[pos].test == k->test && items[pos].node == k->node &&
	       items[pos].weak == k->weak;
}

/* Adds count to the sample (test, node, weak) of the table (items, n, idx). */
static void count_sample(struct raw_sample **items, size_t *n, size_t *alloc, struct hashidx *idx,
                         uint32_t test, uint32_t node, int weak, uint64_t count)
{
	struct raw_sample k = {test, node, weak ? 1 : 0, 0};
	uint64_t h = hash_mix(((uint64_t)test << 32) ^ node ^ ((uint64_t)k.weak << 63));
	int64_t i = hashidx_find(idx, h, sample_eq, *items, &k);
	if (i >= 0) {
		(*items)[i].count += count;
		return;
	}
	ALLOC_GROW(*items, *n + 1, *alloc);
	k.count = count;
	(*items)[*n] = k;
	hashidx_insert(idx, h, (uint32_t)*n);
	(*n)++;
}

/* Counts count samples of test at raw node; ATTRIB_PENDING ones are kept aside. */
static void add_at(struct aggregator *a, uint32_t test, int weak, uint32_t node, uint64_t count)
{
	if (test == ATTRIB_PENDING)
		count_sample(&a->pend, &a->npend, &a->pend_alloc, &a->pend_idx, 0, node, weak,
		             count);
	else
		count_sample(&a->samples, &a->nsamples, &a->samples_alloc, &a->sample_idx, test,
		             node, weak, count);
	a->total += count;
}

void aggregator_add(struct aggregator *a, uint32_t test, int weak, uint32_t process,
                    const uint32_t *dsos, const uint64_t *offsets, size_t n, uint64_t count)
{
	uint32_t node = raw_node(a, 0, raw_frame(a, RAW_PROCESS, process, 0));
	for (size_t i = n; i > 0; i--)
		node = raw_node(a, node, raw_frame(a, dsos[i - 1], offsets[i - 1], i - 1 > 0));
	add_at(a, test, weak, node, count);
}

void aggregator_add_unsampled(struct aggregator *a, uint32_t test, int weak, uint32_t process,
                              uint64_t count)
{
	uint32_t node = raw_node(a, 0, raw_frame(a, RAW_PROCESS, process, 0));
	node = raw_node(a, node, raw_frame(a, RAW_UNSAMPLED, 0, 0));
	add_at(a, test, weak, node, count);
}

void aggregator_resolve(struct aggregator *a, uint32_t test)
{
	for (size_t i = 0; i < a->npend; i++)
		count_sample(&a->samples, &a->nsamples, &a->samples_alloc, &a->sample_idx, test,
		             a->pend[i].node, (int)a->pend[i].weak, a->pend[i].count);
	a->npend = 0;
	hashidx_release(&a->pend_idx);
	hashidx_init(&a->pend_idx);
}

void aggregator_relabel(struct aggregator *a, uint32_t first, const uint32_t *to, size_t n)
{
	if (!n)
		return;
	struct raw_sample *old = a->samples;
	size_t nold = a->nsamples;
	a->samples = NULL;
	a->nsamples = a->samples_alloc = 0;
	hashidx_release(&a->sample_idx);
	hashidx_init(&a->sample_idx);
	for (size_t i = 0; i < nold; i++) {
		uint32_t test = old[i].test;
		if (test <= first && first - test < n)
			test = to[first - test];
		/* counted again: a relabelled sample may meet one of its new test's */
		count_sample(&a->samples, &a->nsamples, &a->samples_alloc, &a->sample_idx, test,
		             old[i].node, (int)old[i].weak, old[i].count);
	}
	free(old);
}

static void resolve_cb(void *ctx, uint32_t test)
{
	aggregator_resolve(ctx, test);
}

void aggregator_attach(struct aggregator *agg, struct attrib *attrib)
{
	attrib->resolve = resolve_cb;
	attrib->resolve_ctx = agg;
}

/* The modules whose every sampled frame lacked a symbol: stripped objects. */
struct stripped {
	struct {
		uint32_t module;
		int named;
	} * m;
	size_t n, alloc;
};

static void stripped_note(struct stripped *st, uint32_t module, int named)
{
	size_t k = 0;
	while (k < st->n && st->m[k].module != module)
		k++;
	if (k == st->n) {
		ALLOC_GROW(st->m, st->n + 1, st->alloc);
		st->m[st->n].module = module;
		st->m[st->n++].named = 0;
	}
	st->m[k].named |= named;
}

/* Whether path is a system object (the distribution's: most of Debian's are stripped, and
 * the suite cannot rebuild them), which the stripped warning leaves out. */
static int system_path(const char *path)
{
	static const char *const dirs[] = {"/usr/", "/lib", "/bin/", "/sbin/", "/opt/", "/nix/"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!strncmp(path, dirs[i], strlen(dirs[i])))
			return 1;
	return 0;
}

/* One warning naming the stripped objects (at most three), then frees st's list. */
static void warn_stripped(struct stripped *st, const struct profile *p)
{
	struct strbuf names = STRBUF_INIT;
	size_t count = 0;
	const char *first = NULL;
	for (size_t k = 0; k < st->n; k++) {
		if (st->m[k].named)
			continue;
		if (!first)
			first = profile_str(p, st->m[k].module);
		if (count++ < 3)
			strbuf_addf(&names, "%s%s", names.len ? ", " : "",
			            profile_str(p, st->m[k].module));
	}
	if (count)
		log_warn("%s%s %s stripped: %s functions are named by their offsets (%s+0x...); "
		         "build without -s or 'strip', or install its debug symbols "
		         "(docs/unwinding.md)",
		         names.buf, count > 3 ? " and others" : "", count > 1 ? "are" : "is",
		         count > 1 ? "their" : "its", first);
	strbuf_release(&names);
	free(st->m);
}

/* The process node above node (0 for the root), and in *first the outermost frame's node
 * under it (node itself for a process node). */
static uint32_t outermost(const struct profile *p, uint32_t node, uint32_t *first)
{
	uint32_t n = node;
	while (n && p->frames[p->nodes[n].frame].kind != PROFILE_FRAME_PROCESS) {
		if (first)
			*first = n;
		n = p->nodes[n].parent;
	}
	if (first && n == node)
		*first = node;
	return n;
}

/*
 * What the stack rules could not name, in the processes where they named others (ruled, by
 * process node): the samples of no test (tests[i], after the rules)
 * - whose stack ends inside the C runtime short of an entry point (a->libc_cut): libc without
 *   frame pointers calling on;
 * - whose stack begins at a thread's start (a->thread_lost): threads a test started, whose
 *   stacks carry no frame of the test; tallied by the function the thread runs.
 * Not counted where no rule named anything: a harness's own time (ctest, make) is outside tests
 * anyway.
 */
static void rule_losses(struct aggregator *a, const uint32_t *node_map, const uint32_t *tests,
                        const uint64_t *ruled)
{
	const struct profile *p = a->prof;
	struct unwind_tally *w = NULL, *tw = NULL;
	size_t nw = 0, w_alloc = 0, ntw = 0, tw_alloc = 0;
	a->libc_cut = a->thread_lost = 0;
	for (size_t i = 0; i < a->nsamples; i++) {
		uint32_t node = node_map[a->samples[i].node], first = 0;
		if (tests[i] || !node || !ruled[outermost(p, node, &first)])
			continue;
		const struct profile_frame *f = &p->frames[p->nodes[first].frame];
		const char *fn = profile_str(p, f->function);
		if (f->kind == PROFILE_FRAME_PROCESS || !strcmp(fn, PROFILE_UNSAMPLED))
			continue;
		uint64_t count = a->samples[i].count;
		if (unwind_is_thread_start(fn)) {
			/* the thread's function: the outermost frame below its start frames
			 * (clone3;start_thread under --unwind dwarf, start_thread under fp) */
			uint32_t body = node;
			for (uint32_t n = node; n != first; n = p->nodes[n].parent)
				if (!unwind_is_thread_start(
				            profile_str(p, p->frames[p->nodes[n].frame].function)))
					body = n;
			a->thread_lost += count;
			unwind_tally_add(&tw, &ntw, &tw_alloc,
			                 p->frames[p->nodes[body].frame].function, count);
			continue;
		}
		if (unwind_is_entry_point(fn) || !unwind_is_c_runtime(profile_str(p, f->module)))
			continue;
		a->libc_cut += count;
		unwind_tally_add(&w, &nw, &w_alloc, f->function, count);
	}
	unwind_tally_top(p, w, nw, a->libc_cut_where, sizeof(a->libc_cut_where));
	unwind_tally_top(p, tw, ntw, a->thread_lost_where, sizeof(a->thread_lost_where));
	free(w);
	free(tw);
}

void aggregator_warn_threads(const struct aggregator *a)
{
	if (a->thread_lost < TRUNCATED_WARN_SAMPLES ||
	    (double)a->thread_lost < LOST_TEST_WARN_SHARE * (double)a->total)
		return;
	log_warn("%.1f%% of samples are outside tests because they ran on threads (in %s) of a "
	         "process whose tests a stack rule names: a thread a test starts carries no frame "
	         "of the test; name them with a mark in the thread (ciprof_test_begin and "
	         "ciprof_test_end, include/ciprof.h; docs/attribution.md, Known limits)",
	         100.0 * (double)a->thread_lost / (double)a->total, a->thread_lost_where);
}

void aggregator_symbolize(struct aggregator *a, const struct proctree *t, struct symbolizer *s,
                          const struct attrib_rules *rules)
{
	struct profile *p = a->prof;
	aggregator_resolve(a, 0); /* a TAP test whose result never came: no test's */
	size_t nf = a->nframes ? a->nframes : 1;
	uint32_t *frame_map = xmalloc(st_mult(nf, sizeof(*frame_map)));
	/* Per raw frame: 1 a libc start frame, 2 the process itself. */
	unsigned char *start = xcalloc(nf, 1);
	struct stripped stripped = {0};
	for (size_t i = 0; i < a->nframes; i++) {
		const struct raw_frame *rf = &a->frames[i];
		struct profile_frame pf = {0};
		if (rf->dso == RAW_PROCESS) {
			pf.function = (uint32_t)rf->offset;
			pf.kind = PROFILE_FRAME_PROCESS;
			frame_map[i] = profile_frame(p, &pf);
			start[i] = 2;
			continue;
		}
		if (rf->dso == RAW_UNSAMPLED) {
			pf.function = profile_intern(p, PROFILE_UNSAMPLED);
			frame_map[i] = profile_frame(p, &pf);
			continue;
		}
		const struct dso *d = &t->dsos[rf->dso];
		struct sym_info si;
		switch (d->kind) {
		case DSO_FILE:
			symbolizer_resolve_file(s, d->path, rf->offset, (int)rf->is_return, &si);
			break;
		case DSO_VDSO:
			symbolizer_resolve_vdso(s, rf->offset, (int)rf->is_return, &si);
			break;
		case DSO_ANON:
			symbolizer_resolve_jit(s, d->pid, rf->offset, (int)rf->is_return, &si);
			break;
		default:
			symbolizer_resolve_file(s, "[unknown]", rf->offset, (int)rf->is_return,
			                        &si);
			break;
		}
		pf.function = profile_intern_name(p, si.function);
		pf.module = profile_intern_name(p, si.module);
		profile_set_build_id(p, pf.module, si.build_id);
		pf.file = profile_intern_name(p, si.file);
		/* Frames are functions: keep the source file but not the line, so the samples
		 * of one function at many lines fold into one frame of the flame graph. */
		pf.line = 0;
		frame_map[i] = profile_frame(p, &pf);
		start[i] = (unsigned char)unwind_is_libc_start(si.function);
		if (d->kind == DSO_FILE && !system_path(d->path))
			stripped_note(&stripped, pf.module, si.resolved);
	}
	warn_stripped(&stripped, p);
	/* A stack is cut above a libc start frame (_start, __libc_start_main*,
	 * __libc_start_call_main) that has frames other than start frames above it: a
	 * frame-pointer walk went past the outermost frame (in a static executable, to the
	 * garbage return address register_tm_clones). proc[i] is node i's process node, chain[i]
	 * whether every frame from it to node i is a start frame. */
	uint32_t *node_map = xmalloc(st_mult(a->nnodes, sizeof(*node_map)));
	uint32_t *proc = xmalloc(st_mult(a->nnodes, sizeof(*proc)));
	unsigned char *chain = xmalloc(a->nnodes);
	node_map[0] = proc[0] = 0;
	chain[0] = 1;
	for (size_t i = 1; i < a->nnodes; i++) {
		uint32_t parent = a->nodes[i].parent, frame = a->nodes[i].frame;
		if (start[frame] == 2) {
			node_map[i] = profile_node(p, node_map[parent], frame_map[frame]);
			proc[i] = node_map[i];
			chain[i] = 1;
			continue;
		}
		proc[i] = proc[parent];
		if (start[frame] == 1 && !chain[parent]) {
			node_map[i] = profile_node(p, proc[i], frame_map[frame]);
			chain[i] = 1;
			continue;
		}
		node_map[i] = profile_node(p, node_map[parent], frame_map[frame]);
		chain[i] = start[frame] == 1 && chain[parent];
	}
	free(chain);
	free(proc);
	free(start);
	uint32_t *rule_test = rules ? attrib_rules_node_tests(rules, p) : NULL;
	/* per sample its test, and per process node the samples a rule named: rule_losses */
	uint32_t *tests =
	        rule_test ? xmalloc(st_mult(a->nsamples ? a->nsamples : 1, sizeof(*tests))) : NULL;
	uint64_t *ruled = rule_test ? xcalloc(p->nnodes, sizeof(*ruled)) : NULL;
	for (size_t i = 0; i < a->nsamples; i++) {
		const struct raw_sample *rs = &a->samples[i];
		uint32_t node = node_map[rs->node];
		uint32_t test = rs->test;
		if ((!test || rs->weak) && rule_test && rule_test[node]) {
			test = rule_test[node];
			ruled[outermost(p, node, NULL)] += rs->count;
		}
		if (tests)
			tests[i] = test;
		profile_add(p, test, node, rs->count);
	}
	if (ruled)
		rule_losses(a, node_map, tests, ruled);
	free(ruled);
	free(tests);
	free(rule_test);
	free(node_map);
	free(frame_map);
}
