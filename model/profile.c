/* In-memory profile: interned strings, frames, a stack trie and per-test sample counts.
 * Every table is an array plus a hashidx over it, so ids are dense and stable. */
#include "model/profile.h"
#include "common/error.h"
#include "common/escape.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct profile *profile_new(void)
{
	struct profile *p = xcalloc(1, sizeof(*p));
	hashidx_init(&p->str_idx);
	hashidx_init(&p->frame_idx);
	hashidx_init(&p->node_idx);
	hashidx_init(&p->sample_idx);
	hashidx_init(&p->result_idx);
	profile_intern(p, "");
	ALLOC_GROW(p->nodes, 1, p->nodes_alloc);
	p->nodes[0] = (struct profile_node){0, UINT32_MAX};
	p->nnodes = 1;
	return p;
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	free(p->pool);
	free(p->str_off);
	free(p->frames);
	free(p->nodes);
	free(p->samples);
	free(p->results);
	free(p->modules);
	hashidx_release(&p->str_idx);
	hashidx_release(&p->frame_idx);
	hashidx_release(&p->node_idx);
	hashidx_release(&p->sample_idx);
	hashidx_release(&p->result_idx);
	free(p);
}

struct str_key {
	const char *s;
	size_t len;
};

static int str_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct profile *p = ctx;
	const struct str_key *k = key;
	const char *s = p->pool + p->str_off[pos];
	return strncmp(s, k->s, k->len) == 0 && s[k->len] == '\0';
}

uint32_t profile_intern_len(struct profile *p, const char *s, size_t len)
{
	struct str_key k = {s, len};
	uint64_t h = hash_bytes(s, len, 1);
	int64_t found = hashidx_find(&p->str_idx, h, str_eq, p, &k);
	if (found >= 0)
		return (uint32_t)found;
	size_t off = p->pool_len;
	if (off > UINT32_MAX - len - 1) {
		fprintf(stderr, "ciprof: string pool over 4 GiB\n");
		abort();
	}
	ALLOC_GROW(p->pool, st_add(off, len + 1), p->pool_alloc);
	memcpy(p->pool + off, s, len);
	p->pool[off + len] = '\0';
	p->pool_len = off + len + 1;
	ALLOC_GROW(p->str_off, p->nstr + 1, p->str_alloc);
	p->str_off[p->nstr] = (uint32_t)off;
	hashidx_insert(&p->str_idx, h, (uint32_t)p->nstr);
	return (uint32_t)p->nstr++;
}

uint32_t profile_intern(struct profile *p, const char *s)
{
	return profile_intern_len(p, s, strlen(s));
}

uint32_t profile_intern_name_len(struct profile *p, const char *s, size_t len)
{
	if (len <= PROFILE_NAME_MAX && esc_utf8_valid(s, len))
		return profile_intern_len(p, s, len);
	struct strbuf sb = STRBUF_INIT;
	esc_name(&sb, s, len, PROFILE_NAME_MAX);
	uint32_t id = profile_intern_len(p, sb.buf, sb.len);
	strbuf_release(&sb);
	return id;
}

uint32_t profile_intern_name(struct profile *p, const char *s)
{
	return profile_intern_name_len(p, s, strlen(s));
}

int64_t profile_find_str(const struct profile *p, const char *s)
{
	struct str_key k = {s, strlen(s)};
	return hashidx_find(&p->str_idx, hash_bytes(s, k.len, 1), str_eq, p, &k);
}

const char *profile_str(const struct profile *p, uint32_t id)
{
	return id < p->nstr ? p->pool + p->str_off[id] : "";
}

static int frame_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct profile *p = ctx;
	return memcmp(&p->frames[pos], key, sizeof(struct profile_frame)) == 0;
}

uint32_t profile_frame(struct profile *p, const struct profile_frame *f)
{
	uint64_t h = hash_bytes(f, sizeof(*f), 2);
	int64_t found = hashidx_find(&p->frame_idx, h, frame_eq, p, f);
	if (found >= 0)
		return (uint32_t)found;
	ALLOC_GROW(p->frames, p->nframes + 1, p->frames_alloc);
	p->frames[p->nframes] = *f;
	hashidx_insert(&p->frame_idx, h, (uint32_t)p->nframes);
	return (uint32_t)p->nframes++;
}

static int node_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct profile *p = ctx;
	const struct profile_node *k = key;
	return p->nodes[pos].parent == k->parent && p->nodes[pos].frame == k->frame;
}

uint32_t profile_node(struct profile *p, uint32_t parent, uint32_t frame)
{
	struct profile_node k = {parent, frame};
	uint64_t h = hash_mix(((uint64_t)parent << 32) | frame);
	int64_t found = hashidx_find(&p->node_idx, h, node_eq, p, &k);
	if (found >= 0)
		return (uint32_t)found;
	ALLOC_GROW(p->nodes, p->nnodes + 1, p->nodes_alloc);
	p->nodes[p->nnodes] = k;
	hashidx_insert(&p->node_idx, h, (uint32_t)p->nnodes);
	return (uint32_t)p->nnodes++;
}

static int sample_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct profile *p = ctx;
	const struct profile_sample *k = key;
	return p->samples[pos].test == k->test && p->samples[pos].node == k->node;
}

uint64_t profile_count(const struct profile *p, uint32_t test, uint32_t node)
{
	struct profile_sample k = {test, node, 0};
	uint64_t h = hash_mix(((uint64_t)test << 32) ^ node ^ 0x5a5a5a5aULL);
	int64_t found = hashidx_find(&p->sample_idx, h, sample_eq, p, &k);
	return found >= 0 ? p->samples[found].count : 0;
}

void profile_add(struct profile *p, uint32_t test, uint32_t node, uint64_t count)
{
	struct profile_sample k = {test, node, 0};
	uint64_t h = hash_mix(((uint64_t)test << 32) ^ node ^ 0x5a5a5a5aULL);
	int64_t found = hashidx_find(&p->sample_idx, h, sample_eq, p, &k);
	if (found >= 0) {
		p->samples[found].count += count;
		return;
	}
	ALLOC_GROW(p->samples, p->nsamples + 1, p->samples_alloc);
	k.count = count;
	p->samples[p->nsamples] = k;
	hashidx_insert(&p->sample_idx, h, (uint32_t)p->nsamples);
	p->nsamples++;
}

static int result_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct profile *p = ctx;
	return p->results[pos].test == *(const uint32_t *)key;
}

/* Results are looked up by test id through result_idx: a suite of 300,000 JUnit cases
 * must not cost 300,000 scans of the list. */
void profile_set_result(struct profile *p, uint32_t test, uint32_t status, double seconds)
{
	uint64_t h = hash_bytes(&test, sizeof(test), 5);
	int64_t found = hashidx_find(&p->result_idx, h, result_eq, p, &test);
	if (found >= 0) {
		p->results[found].status = status;
		p->results[found].seconds = seconds;
		return;
	}
	ALLOC_GROW(p->results, p->nresults + 1, p->results_alloc);
	p->results[p->nresults] = (struct profile_result){test, status, seconds};
	hashidx_insert(&p->result_idx, h, (uint32_t)p->nresults);
	p->nresults++;
}

const struct profile_result *profile_result(const struct profile *p, uint32_t test)
{
	int64_t found = hashidx_find(&p->result_idx, hash_bytes(&test, sizeof(test), 5), result_eq,
	                             p, &test);
	return found >= 0 ? &p->results[found] : NULL;
}

/* module's build id is hex, or (hex NULL) conflicting: see profile_set_build_id. */
static void set_module(struct profile *p, uint32_t module, const char *hex)
{
	for (size_t i = 0; i < p->nmodules; i++) {
		struct profile_module *m = &p->modules[i];
		if (m->module != module)
			continue;
		if (m->build_id && (!hex || strcmp(profile_str(p, m->build_id), hex)))
			m->build_id = 0;
		return;
	}
	uint32_t id = hex ? profile_intern(p, hex) : 0;
	ALLOC_GROW(p->modules, p->nmodules + 1, p->modules_alloc);
	p->modules[p->nmodules++] = (struct profile_module){module, id};
}

void profile_build_id_to_hex(char *out, const unsigned char *id, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * n] = '\0';
}

int profile_build_id_from_hex(unsigned char *out, const char *hex)
{
	size_t n = 0;
	for (; hex[2 * n]; n++) {
		int hi = hex_digit_value(hex[2 * n]),
		    lo = hi < 0 ? -1 : hex_digit_value(hex[2 * n + 1]);
		if (lo < 0 || n == PROFILE_BUILD_ID_MAX)
			return -1;
		out[n] = (unsigned char)(hi << 4 | lo);
	}
	return n ? (int)n : -1;
}

void profile_set_build_id(struct profile *p, uint32_t module, const char *hex)
{
	unsigned char id[PROFILE_BUILD_ID_MAX];
	char canon[2 * PROFILE_BUILD_ID_MAX + 1];
	int n = hex ? profile_build_id_from_hex(id, hex) : -1;
	if (n < 0)
		return;
	profile_build_id_to_hex(canon, id, (size_t)n);
	set_module(p, module, canon);
}

const char *profile_build_id(const struct profile *p, uint32_t module)
{
	for (size_t i = 0; i < p->nmodules; i++)
		if (p->modules[i].module == module)
			return p->modules[i].build_id ? profile_str(p, p->modules[i].build_id)
			                              : NULL;
	return NULL;
}

size_t profile_node_depth(const struct profile *p, uint32_t node)
{
	size_t d = 0;
	while (node) {
		d++;
		node = p->nodes[node].parent;
	}
	return d;
}

size_t profile_node_frames(const struct profile *p, uint32_t node, uint32_t *out, size_t max)
{
	size_t d = profile_node_depth(p, node);
	size_t n = d < max ? d : max;
	/* Walk leaf to root, keeping the root-most n frames. */
	for (size_t i = d; i > 0; i--) {
		if (i - 1 < n)
			out[i - 1] = p->nodes[node].frame;
		node = p->nodes[node].parent;
	}
	return n;
}

/* A source's period: its own, else its rate's (0: neither known). */
static uint64_t stats_period(const struct profile_stats *st)
{
	if (st->period_ns)
		return st->period_ns;
	return st->hz > 0 ? 1000000000ull / (unsigned)st->hz : 0;
}

void profile_stats_add(struct profile_stats *dst, const struct profile_stats *src)
{
	/* The sources' one period, kept while they agree (the first source's, then 0 as soon as
	 * one differs: profile_stats_finish computes it). */
	int first = !dst->samples && !(dst->cpu_seconds > 0) && !dst->period_ns;
	if (first)
		dst->period_ns = stats_period(src);
	else if (dst->period_ns != stats_period(src))
		dst->period_ns = 0;
	dst->samples += src->samples;
	dst->lost += src->lost;
	dst->processes += src->processes;
	dst->threads += src->threads;
	dst->cpu_seconds += src->cpu_seconds;
	dst->unsampled_seconds += src->unsampled_seconds;
	dst->wall_seconds += src->wall_seconds;
	if (src->hz > dst->hz)
		dst->hz = src->hz;
}

void profile_stats_finish(struct profile_stats *st)
{
	/* Sources of one period keep it: CPU time per sample would count the time no sample saw
	 * (a store's rows do not carry it apart), 3.8 times the period for a suite that spends
	 * three quarters of its time in the kernel. */
	if (!st->samples || st->period_ns)
		return;
	/* Mixed rates: the sampled CPU time per sample, or 1/hz where that is within 10 % of it
	 * (the computed value is off by the unsampled time when a source does not carry it). */
	double ns = (st->cpu_seconds - st->unsampled_seconds) * 1e9 / (double)st->samples;
	if (st->hz > 0 && fabs(ns * st->hz / 1e9 - 1) < 0.1)
		ns = 1e9 / st->hz;
	st->period_ns = (uint64_t)(ns + 0.5);
}

void profile_merge(struct profile *dst, const struct profile *src)
{
	profile_merge_test(dst, src, NULL);
}

/* src's string id as named in dst's merge: renamed[id] where that is set. */
static const char *merged_str(const struct profile *src, char *const *renamed, uint32_t id)
{
	return renamed && renamed[id] ? renamed[id] : profile_str(src, id);
}

static void merge_into(struct profile *dst, const struct profile *src, const char *test,
                       char *const *renamed)
{
	uint32_t forced = test ? profile_intern(dst, test) : 0;
	uint32_t *node_map = xcalloc(src->nnodes ? src->nnodes : 1, sizeof(*node_map));
	uint32_t *frame_map = xmalloc(st_mult(src->nframes ? src->nframes : 1, sizeof(*frame_map)));
	for (size_t i = 0; i < src->nframes; i++) {
		const struct profile_frame *f = &src->frames[i];
		struct profile_frame nf = {
		        .function = profile_intern(dst, merged_str(src, renamed, f->function)),
		        .module = profile_intern(dst, merged_str(src, renamed, f->module)),
		        .file = profile_intern(dst, profile_str(src, f->file)),
		        .line = f->line,
		        .kind = f->kind,
		};
		frame_map[i] = profile_frame(dst, &nf);
	}
	/* Parents always precede children in the node array. */
	for (size_t i = 1; i < src->nnodes; i++)
		node_map[i] = profile_node(dst, node_map[src->nodes[i].parent],
		                           frame_map[src->nodes[i].frame]);
	for (size_t i = 0; i < src->nsamples; i++) {
		const struct profile_sample *s = &src->samples[i];
		profile_add(dst, test ? forced : profile_intern(dst, profile_str(src, s->test)),
		            node_map[s->node], s->count);
	}
	for (size_t i = 0; i < src->nresults; i++) {
		const struct profile_result *r = &src->results[i];
		profile_set_result(dst,
		                   test ? forced : profile_intern(dst, profile_str(src, r->test)),
		                   r->status, r->seconds);
	}
	for (size_t i = 0; i < src->nmodules; i++) {
		const struct profile_module *m = &src->modules[i];
		uint32_t module = profile_intern(dst, merged_str(src, renamed, m->module));
		/* unknown in src (a conflict there) is a conflict here too */
		set_module(dst, module, m->build_id ? profile_str(src, m->build_id) : NULL);
	}
	free(node_map);
	free(frame_map);
}

void profile_merge_test(struct profile *dst, const struct profile *src, const char *test)
{
	merge_into(dst, src, test, NULL);
}

void profile_merge_renamed(struct profile *dst, const struct profile *src, char *const *renamed)
{
	merge_into(dst, src, NULL, renamed);
}

uint64_t profile_total(const struct profile *p, const char *test_filter)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < p->nsamples; i++)
		if (!test_filter || !strcmp(profile_str(p, p->samples[i].test), test_filter))
			sum += p->samples[i].count;
	return sum;
}

static void add_folded_name(struct strbuf *sb, const char *s)
{
	for (; *s; s++)
		strbuf_addch(sb, (*s == ';' || *s == '\n' || *s == '\r') ? '_' : *s);
}

struct folded_line {
	char *text;
	uint64_t count;
};

static int folded_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

int profile_write_folded(const struct profile *p, FILE *out, const char *test_filter)
{
	/* Sum per node first: the same stack may be counted under several tests. */
	uint64_t *per_node = xcalloc(p->nnodes, sizeof(*per_node));
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		if (test_filter && strcmp(profile_str(p, s->test), test_filter))
			continue;
		per_node[s->node] += s->count;
	}
	struct folded_line *lines = NULL;
	size_t nlines = 0, alloc = 0;
	struct strbuf sb = STRBUF_INIT;
	for (size_t n = 1; n < p->nnodes; n++) {
		if (!per_node[n])
			continue;
		strbuf_reset(&sb);
		uint32_t frames[256];
		size_t depth = profile_node_depth(p, (uint32_t)n);
		uint32_t *fr = depth > 256 ? xmalloc(st_mult(depth, sizeof(*fr))) : frames;
		profile_node_frames(p, (uint32_t)n, fr, depth);
		for (size_t i = 0; i < depth; i++) {
			if (i)
				strbuf_addch(&sb, ';');
			add_folded_name(&sb, profile_str(p, p->frames[fr[i]].function));
		}
		if (fr != frames)
			free(fr);
		ALLOC_GROW(lines, nlines + 1, alloc);
		lines[nlines].text = strbuf_detach(&sb, NULL);
		lines[nlines].count = per_node[n];
		nlines++;
	}
	strbuf_release(&sb);
	if (nlines)
		qsort(lines, nlines, sizeof(*lines), folded_cmp);
	/* Distinct nodes can fold to one text ("a;b" vs a name holding ';'): merge equal lines. */
	for (size_t i = 0; i < nlines; i++) {
		uint64_t c = lines[i].count;
		while (i + 1 < nlines && !strcmp(lines[i].text, lines[i + 1].text)) {
			free(lines[i].text);
			c += lines[++i].count;
		}
		fprintf(out, "%s %" PRIu64 "\n", lines[i].text, c);
		free(lines[i].text);
	}
	free(lines);
	free(per_node);
	if (ferror(out))
		return cp_error_errno("cannot write folded output");
	return 0;
}

int profile_parse_folded(struct profile *p, const char *text, size_t len, const char *name)
{
	size_t lineno = 0;
	const char *end = text + len;
	const char *line = text;
	/* Counts add up per stack and over the profile: refuse a sum past uint64 rather than
	 * store one that wrapped (the total bounds every stack's sum, so checking it once per
	 * line suffices; the stack's own is looked up only to say which overflowed). */
	uint64_t total = profile_total(p, NULL);
	/* A UTF-8 byte order mark (Windows editors write one) is not part of the first frame. */
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		line += 3;
	while (line < end) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol)
			eol = end;
		lineno++;
		const char *stop = eol;
		if (stop > line && stop[-1] == '\r')
			stop--;
		if (stop == line) {
			line = eol + 1;
			continue;
		}
		/* The count follows the last space. */
		const char *sp = stop;
		while (sp > line && sp[-1] != ' ')
			sp--;
		if (sp == line)
			return cp_error("%s:%zu:%zu: expected 'frame;frame COUNT', found no count",
			                name, lineno, (size_t)(stop - line) + 1);
		if (sp == stop)
			return cp_error("%s:%zu:%zu: missing sample count after the last space",
			                name, lineno, (size_t)(sp - line) + 1);
		uint64_t count = 0;
		for (const char *c = sp; c < stop; c++) {
			if (*c < '0' || *c > '9')
				return cp_error("%s:%zu:%zu: sample count is not a whole number",
				                name, lineno, (size_t)(c - line) + 1);
			unsigned d = (unsigned)(*c - '0');
			if (count > (UINT64_MAX - d) / 10)
				return cp_error("%s:%zu:%zu: sample count too large", name, lineno,
				                (size_t)(sp - line) + 1);
			count = count * 10 + d;
		}
		const char *stack_end = sp - 1;
		if (stack_end == line)
			return cp_error("%s:%zu:1: empty stack before the count", name, lineno);
		uint32_t node = 0;
		const char *f = line;
		int first = 1;
		size_t depth = 0;
		while (f <= stack_end) {
			const char *semi = memchr(f, ';', (size_t)(stack_end - f));
			const char *fend = semi ? semi : stack_end;
			/* An empty process name is what ciprof writes for a process it could not
			 * name (";[unsampled] 14"); an empty function never is. */
			if (fend == f && !first)
				return cp_error("%s:%zu:%zu: empty frame name", name, lineno,
				                (size_t)(f - line) + 1);
			if (++depth > PROFILE_MAX_DEPTH)
				return cp_error("%s:%zu:%zu: a stack deeper than %d frames", name,
				                lineno, (size_t)(f - line) + 1, PROFILE_MAX_DEPTH);
			struct profile_frame fr = {
			        .function = profile_intern_name_len(p, f, (size_t)(fend - f)),
			        .kind = first ? PROFILE_FRAME_PROCESS : PROFILE_FRAME_FUNCTION,
			};
			node = profile_node(p, node, profile_frame(p, &fr));
			first = 0;
			f = fend + 1;
		}
		if (count > UINT64_MAX - total) {
			if (count > UINT64_MAX - profile_count(p, 0, node))
				return cp_error(
				        "%s:%zu: this stack's sample counts add up to more than "
				        "%" PRIu64 " (it repeats on earlier lines); refusing a "
				        "sum that would wrap",
				        name, lineno, UINT64_MAX);
			return cp_error("%s:%zu: the file's sample counts add up to more than "
			                "%" PRIu64 "; refusing a total that would wrap",
			                name, lineno, UINT64_MAX);
		}
		total += count;
		profile_add(p, 0, node, count);
		line = eol + 1;
	}
	return 0;
}

struct func_key {
	uint32_t function, module;
};

struct func_table {
	struct profile_func *f;
	size_t n, alloc;
	struct hashidx idx;
};

static int func_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct func_table *t = ctx;
	const struct func_key *k = key;
	return t->f[pos].function == k->function && t->f[pos].module == k->module;
}

static uint32_t func_slot(struct func_table *t, uint32_t function, uint32_t module)
{
	struct func_key k = {function, module};
	uint64_t h = hash_mix(((uint64_t)function << 32) | module);
	int64_t found = hashidx_find(&t->idx, h, func_eq, t, &k);
	if (found >= 0)
		return (uint32_t)found;
	ALLOC_GROW(t->f, t->n + 1, t->alloc);
	t->f[t->n] = (struct profile_func){function, module, 0, 0};
	hashidx_insert(&t->idx, h, (uint32_t)t->n);
	return (uint32_t)t->n++;
}

static const struct profile *sort_profile;

static int func_cmp(const void *a, const void *b)
{
	const struct profile_func *x = a, *y = b;
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	int c = strcmp(profile_str(sort_profile, x->function),
	               profile_str(sort_profile, y->function));
	if (c)
		return c;
	return strcmp(profile_str(sort_profile, x->module), profile_str(sort_profile, y->module));
}

size_t profile_functions(const struct profile *p, const char *test_filter,
                         struct profile_func **out)
{
	struct func_table t = {0};
	hashidx_init(&t.idx);
	/* Function slot of each frame, computed once; UINT32_MAX for process frames. */
	uint32_t *slot_of = xmalloc(st_mult(p->nframes ? p->nframes : 1, sizeof(*slot_of)));
	for (size_t i = 0; i < p->nframes; i++)
		slot_of[i] = p->frames[i].kind == PROFILE_FRAME_PROCESS
		                     ? UINT32_MAX
		                     : func_slot(&t, p->frames[i].function, p->frames[i].module);
	uint64_t *seen = NULL; /* per slot: the sample index that last counted it */
	size_t seen_alloc = 0;
	ALLOC_GROW(seen, t.n ? t.n : 1, seen_alloc);
	for (size_t i = 0; i < t.n; i++)
		seen[i] = UINT64_MAX;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		if (test_filter && strcmp(profile_str(p, s->test), test_filter))
			continue;
		uint32_t node = s->node;
		int leaf = 1;
		while (node) {
			uint32_t slot = slot_of[p->nodes[node].frame];
			if (slot != UINT32_MAX) {
				if (leaf)
					t.f[slot].self += s->count;
				if (seen[slot] != i) {
					t.f[slot].total += s->count;
					seen[slot] = i;
				}
				leaf = 0;
			}
			node = p->nodes[node].parent;
		}
	}
	free(seen);
	free(slot_of);
	hashidx_release(&t.idx);
	/* Drop functions that no selected sample touched. */
	size_t kept = 0;
	for (size_t i = 0; i < t.n; i++)
		if (t.f[i].total)
			t.f[kept++] = t.f[i];
	sort_profile = p;
	if (kept)
		qsort(t.f, kept, sizeof(*t.f), func_cmp);
	sort_profile = NULL;
	*out = t.f;
	return kept;
}
