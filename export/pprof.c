/* pprof in and out. Writing builds the message tree of profile.proto (protobuf-c) from the
 * profile's own tables: a scratch profile interns the string table and the functions, so ids
 * stay dense; the encoded bytes are gzip'd with zlib. Reading checks every id it follows, so
 * a malformed file is an error naming the sample or location, never a crash. */
#include "export/pprof.h"
#include "common/error.h"
#include "common/xalloc.h"

#include "profile.pb-c.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;

/* Largest profile we inflate: a bound for untrusted input. */
#define PPROF_MAX_BYTES ((size_t)1 << 30)

static int gzip(const uint8_t *data, size_t len, struct strbuf *out)
{
	z_stream z = {0};
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return cp_error("cannot start gzip compression");
	uLong bound = deflateBound(&z, (uLong)len);
	uint8_t *buf = xmalloc(bound);
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	z.next_out = buf;
	z.avail_out = (uInt)bound;
	int zr = deflate(&z, Z_FINISH);
	size_t n = z.total_out;
	deflateEnd(&z);
	int r = 0;
	if (zr != Z_STREAM_END)
		r = cp_error("gzip compression failed");
	else if (strbuf_add(out, buf, n) < 0)
		r = cp_error("pprof output larger than its buffer allows");
	free(buf);
	return r;
}

static pb_value_type *value_type(pb_value_type *vt, struct profile *st, const char *type,
                                 const char *unit)
{
	perftools__profiles__value_type__init(vt);
	vt->type = profile_intern(st, type);
	vt->unit = profile_intern(st, unit);
	return vt;
}

int pprof_write(const struct profile *p, const struct pprof_info *info, const char *test_filter,
                struct strbuf *out)
{
	/* st: the string table (ids from 0 = "") and, in its frame table, the functions. */
	struct profile *st = profile_new();
	pb_profile pr;
	perftools__profiles__profile__init(&pr);
	pb_value_type types[2], period_type;
	pb_value_type *type_ptrs[2] = {value_type(&types[0], st, "samples", "count"),
	                               value_type(&types[1], st, "cpu", "nanoseconds")};
	/* Without a sampling period (a folded import) the CPU time is unknown: counts only, or
	 * readers would show a total of zero nanoseconds. */
	size_t nvalues = p->stats.period_ns ? 2 : 1;
	pr.n_sample_type = nvalues;
	pr.sample_type = type_ptrs;
	if (p->stats.period_ns) {
		pr.period_type = value_type(&period_type, st, "cpu", "nanoseconds");
		pr.period = (int64_t)p->stats.period_ns;
	}
	pr.time_nanos = info ? info->time_nanos : 0;
	pr.duration_nanos = info ? info->duration_nanos : 0;
	int64_t comment = profile_intern(st, PPROF_PROCESS_COMMENT);
	pr.n_comment = 1;
	pr.comment = &comment;

	/* Mappings: one per module, ids 1.. (below). */
	uint32_t *module_map = xcalloc(p->nstr ? p->nstr : 1, sizeof(*module_map));
	pb_mapping *maps = xcalloc(p->nframes ? p->nframes : 1, sizeof(*maps));
	pb_mapping **map_ptrs = xcalloc(p->nframes ? p->nframes : 1, sizeof(*map_ptrs));
	size_t nmaps = 0;
	/* Functions: one per (name, file, kind). Locations: one per frame, id = index + 1. */
	pb_function *funcs = xcalloc(p->nframes ? p->nframes : 1, sizeof(*funcs));
	pb_function **func_ptrs = xcalloc(p->nframes ? p->nframes : 1, sizeof(*func_ptrs));
	pb_location *locs = xcalloc(p->nframes ? p->nframes : 1, sizeof(*locs));
	pb_location **loc_ptrs = xcalloc(p->nframes ? p->nframes : 1, sizeof(*loc_ptrs));
	pb_line *lines = xcalloc(p->nframes ? p->nframes : 1, sizeof(*lines));
	pb_line **line_ptrs = xcalloc(p->nframes ? p->nframes : 1, sizeof(*line_ptrs));
	/* pprof's first mapping is the main binary (`go tool pprof` prints it as the profile's
	 * "File:"): the executable (a module named as a process frame) with the most samples,
	 * then the other executables, then the libraries, each in order of first use. */
	double *exe_samples = xcalloc(p->nstr ? p->nstr : 1, sizeof(*exe_samples));
	unsigned char *is_exe = xcalloc(p->nstr ? p->nstr : 1, 1);
	for (size_t i = 0; i < p->nframes; i++)
		if (p->frames[i].kind == PROFILE_FRAME_PROCESS)
			is_exe[p->frames[i].function] = 1;
	for (size_t i = 0; i < p->nsamples; i++) {
		uint32_t n = p->samples[i].node;
		while (n && p->nodes[n].parent)
			n = p->nodes[n].parent;
		const struct profile_frame *root = &p->frames[p->nodes[n].frame];
		if (n && root->kind == PROFILE_FRAME_PROCESS)
			exe_samples[root->function] += (double)p->samples[i].count;
	}
	uint32_t main_exe = 0;
	for (uint32_t i = 1; i < p->nstr; i++)
		if (is_exe[i] && exe_samples[i] > exe_samples[main_exe])
			main_exe = i;
	for (int pass = 0; pass < 3; pass++) {
		for (size_t i = 0; i < p->nframes; i++) {
			const struct profile_frame *f = &p->frames[i];
			int want = pass == 0   ? f->module == main_exe
			           : pass == 1 ? is_exe[f->module]
			                       : 1;
			if (!f->module || f->kind == PROFILE_FRAME_PROCESS ||
			    module_map[f->module] || !want)
				continue;
			pb_mapping *m = &maps[nmaps];
			perftools__profiles__mapping__init(m);
			m->id = nmaps + 1;
			m->filename = profile_intern(st, profile_str(p, f->module));
			/* The object's GNU build id, hex as `go tool pprof` shows it. */
			const char *bid = profile_build_id(p, f->module);
			m->build_id = bid ? profile_intern(st, bid) : 0;
			/* Symbolized already: readers must not look for the binary. */
			m->has_functions = 1;
			m->has_filenames = 1;
			m->has_line_numbers = 1;
			map_ptrs[nmaps++] = m;
			module_map[f->module] = (uint32_t)nmaps;
		}
	}
	free(is_exe);
	free(exe_samples);
	for (size_t i = 0; i < p->nframes; i++) {
		const struct profile_frame *f = &p->frames[i];
		uint64_t mapping_id = 0;
		if (f->module && f->kind != PROFILE_FRAME_PROCESS)
			mapping_id = module_map[f->module];
		struct profile_frame key = {
		        .function = profile_intern(st, profile_str(p, f->function)),
		        .file = profile_intern(st, profile_str(p, f->file)),
		        .kind = f->kind,
		};
		size_t before = st->nframes;
		uint32_t fi = profile_frame(st, &key);
		if (st->nframes > before) {
			pb_function *fn = &funcs[fi];
			perftools__profiles__function__init(fn);
			fn->id = fi + 1;
			fn->name = key.function;
			fn->system_name = key.function;
			fn->filename = key.file;
			func_ptrs[fi] = fn;
		}
		pb_line *ln = &lines[i];
		perftools__profiles__line__init(ln);
		ln->function_id = fi + 1;
		ln->line = f->line;
		line_ptrs[i] = ln;
		pb_location *loc = &locs[i];
		perftools__profiles__location__init(loc);
		loc->id = i + 1;
		loc->mapping_id = mapping_id;
		loc->n_line = 1;
		loc->line = &line_ptrs[i];
		loc_ptrs[i] = loc;
	}
	pr.n_mapping = nmaps;
	pr.mapping = map_ptrs;
	pr.n_location = p->nframes;
	pr.location = loc_ptrs;
	pr.n_function = st->nframes;
	pr.function = func_ptrs;

	/* Samples: one per (test, stack), locations leaf first. */
	int64_t filter = test_filter ? profile_find_str(p, test_filter) : -2;
	size_t nsamples = 0, nids = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		if (filter != -2 && (int64_t)p->samples[i].test != filter)
			continue;
		nsamples++;
		nids = st_add(nids, profile_node_depth(p, p->samples[i].node));
	}
	pb_sample *samples = xcalloc(nsamples ? nsamples : 1, sizeof(*samples));
	pb_sample **sample_ptrs = xcalloc(nsamples ? nsamples : 1, sizeof(*sample_ptrs));
	pb_label *labels = xcalloc(nsamples ? nsamples : 1, sizeof(*labels));
	pb_label **label_ptrs = xcalloc(nsamples ? nsamples : 1, sizeof(*label_ptrs));
	int64_t *values = xcalloc(st_mult(nsamples ? nsamples : 1, nvalues), sizeof(*values));
	uint64_t *ids = xcalloc(nids ? nids : 1, sizeof(*ids));
	int64_t test_key = profile_intern(st, PPROF_TEST_LABEL);
	size_t si = 0, idpos = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		if (filter != -2 && (int64_t)s->test != filter)
			continue;
		pb_sample *ps = &samples[si];
		perftools__profiles__sample__init(ps);
		ps->location_id = &ids[idpos];
		for (uint32_t n = s->node; n; n = p->nodes[n].parent)
			ids[idpos + ps->n_location_id++] = p->nodes[n].frame + 1;
		idpos += ps->n_location_id;
		ps->n_value = nvalues;
		ps->value = &values[nvalues * si];
		ps->value[0] = (int64_t)s->count;
		if (nvalues > 1)
			ps->value[1] = (int64_t)(s->count * p->stats.period_ns);
		pb_label *l = &labels[si];
		perftools__profiles__label__init(l);
		l->key = test_key;
		const char *tn = profile_str(p, s->test);
		l->str = profile_intern(st, *tn ? tn : PPROF_OUTSIDE_TESTS);
		label_ptrs[si] = l;
		ps->n_label = 1;
		ps->label = &label_ptrs[si];
		sample_ptrs[si++] = ps;
	}
	pr.n_sample = nsamples;
	pr.sample = sample_ptrs;

	char **strs = xcalloc(st->nstr, sizeof(*strs));
	for (size_t i = 0; i < st->nstr; i++)
		strs[i] = (char *)profile_str(st, (uint32_t)i);
	pr.n_string_table = st->nstr;
	pr.string_table = strs;

	size_t len = perftools__profiles__profile__get_packed_size(&pr);
	uint8_t *buf = xmalloc(len ? len : 1);
	perftools__profiles__profile__pack(&pr, buf);
	int r = gzip(buf, len, out);

	free(buf);
	free(strs);
	free(ids);
	free(values);
	free(label_ptrs);
	free(labels);
	free(sample_ptrs);
	free(samples);
	free(line_ptrs);
	free(lines);
	free(loc_ptrs);
	free(locs);
	free(func_ptrs);
	free(funcs);
	free(map_ptrs);
	free(maps);
	free(module_map);
	profile_free(st);
	return r;
}

/* Inflates gzip (or zlib) data into out; NAME: byte N (of the file) in errors. Every member of
 * a multi-member gzip file (`cat a.gz b.gz`, valid gzip) is inflated, their bytes joined, as
 * go tool pprof reads it; anything else after the end of the data is an error, as there. */
static int gunzip(const uint8_t *data, size_t len, const char *name, struct strbuf *out)
{
	z_stream z = {0};
	if (inflateInit2(&z, 15 + 32) != Z_OK)
		return cp_error("%s: cannot start gzip decompression", name);
	z.next_in = (Bytef *)data;
	uint8_t chunk[65536];
	int r = 0;
	for (;;) {
		size_t off = (size_t)(z.next_in - data);
		if (z.avail_in == 0 && off < len) /* more than one uInt of input */
			z.avail_in = len - off > UINT_MAX ? UINT_MAX : (uInt)(len - off);
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		int zr = inflate(&z, Z_NO_FLUSH);
		off = (size_t)(z.next_in - data);
		if (strbuf_add(out, chunk, sizeof(chunk) - z.avail_out) < 0) {
			r = cp_error("%s: uncompressed profile larger than %zu MiB", name,
			             PPROF_MAX_BYTES >> 20);
			break;
		}
		if (zr == Z_STREAM_END) {
			if (off == len)
				break;
			if (len - off >= 2 && data[off] == 0x1f && data[off + 1] == 0x8b) {
				inflateReset(&z); /* the next gzip member */
				continue;
			}
			r = cp_error("%s: byte %zu: %zu bytes after the end of the gzip data that "
			             "are not another gzip member (trailing garbage?)",
			             name, off, len - off);
			break;
		}
		if (zr != Z_OK) {
			r = cp_error("%s: byte %zu: corrupt gzip data (%s)", name, off,
			             z.msg ? z.msg : "inflate failed");
			break;
		}
		if (z.avail_in == 0 && off == len && z.avail_out != 0) {
			r = cp_error("%s: byte %zu: gzip data ends early (truncated file?)", name,
			             off);
			break;
		}
	}
	inflateEnd(&z);
	return r;
}

static const char *pb_str(const pb_profile *pr, int64_t i)
{
	return i >= 0 && (uint64_t)i < pr->n_string_table ? pr->string_table[i] : NULL;
}

struct id_table {
	const uint64_t *ids; /* the id of item i */
	struct hashidx idx;
};

static int id_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct id_table *t = ctx;
	return t->ids[pos] == *(const uint64_t *)key;
}

static int64_t id_find(const struct id_table *t, uint64_t id)
{
	return hashidx_find(&t->idx, hash_mix(id), id_eq, t, &id);
}

/* Indexes ids[0..n); a zero or repeated id is an error. */
static int id_index(struct id_table *t, const uint64_t *ids, size_t n, const char *name,
                    const char *what)
{
	t->ids = ids;
	hashidx_init(&t->idx);
	for (size_t i = 0; i < n; i++) {
		if (ids[i] == 0)
			return cp_error("%s: %s %zu has id 0 (ids start at 1)", name, what, i);
		if (id_find(t, ids[i]) >= 0)
			return cp_error("%s: %s %zu repeats id %" PRIu64, name, what, i, ids[i]);
		hashidx_insert(&t->idx, hash_mix(ids[i]), (uint32_t)i);
	}
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* The index of the value to count: samples/count if present, else the default or first. */
static size_t count_index(const pb_profile *pr, int *is_count)
{
	for (size_t i = 0; i < pr->n_sample_type; i++) {
		const char *t = pb_str(pr, pr->sample_type[i]->type);
		const char *u = pb_str(pr, pr->sample_type[i]->unit);
		if (t && u && (!strcmp(t, "samples") || !strcmp(t, "sample")) &&
		    !strcmp(u, "count")) {
			*is_count = 1;
			return i;
		}
	}
	*is_count = 0;
	for (size_t i = 0; i < pr->n_sample_type; i++)
		if (pr->default_sample_type && pr->sample_type[i]->type == pr->default_sample_type)
			return i;
	return 0;
}

/* Checks what the rest of the reader relies on; the error names the offending item. */
static int pprof_check(const pb_profile *pr, const char *name)
{
	if (pr->n_string_table == 0 || pr->string_table[0][0])
		return cp_error("%s: string table must start with \"\"", name);
	if (pr->n_sample_type == 0)
		return cp_error("%s: the profile declares no sample types", name);
	for (size_t i = 0; i < pr->n_sample_type; i++)
		if (!pb_str(pr, pr->sample_type[i]->type) || !pb_str(pr, pr->sample_type[i]->unit))
			return cp_error("%s: sample type %zu names a string outside the table",
			                name, i);
	for (size_t i = 0; i < pr->n_mapping; i++)
		if (!pb_str(pr, pr->mapping[i]->filename) || !pb_str(pr, pr->mapping[i]->build_id))
			return cp_error(
			        "%s: mapping %zu: file name or build id outside the string table",
			        name, i);
	for (size_t i = 0; i < pr->n_function; i++)
		if (!pb_str(pr, pr->function[i]->name) || !pb_str(pr, pr->function[i]->filename))
			return cp_error("%s: function %zu: name outside the string table", name, i);
	for (size_t i = 0; i < pr->n_sample; i++) {
		const pb_sample *s = pr->sample[i];
		if (s->n_value != pr->n_sample_type)
			return cp_error("%s: sample %zu has %zu values for %zu sample types", name,
			                i, s->n_value, pr->n_sample_type);
		for (size_t j = 0; j < s->n_label; j++)
			if (!pb_str(pr, s->label[j]->key) || !pb_str(pr, s->label[j]->str))
				return cp_error("%s: sample %zu: label outside the string table",
				                name, i);
	}
	for (size_t i = 0; i < pr->n_comment; i++)
		if (!pb_str(pr, pr->comment[i]))
			return cp_error("%s: comment %zu outside the string table", name, i);
	return 0;
}

int pprof_read(struct profile *p, const void *data, size_t len, const char *name, const char *test,
               const char *default_process, struct pprof_info *info)
{
	struct strbuf raw;
	strbuf_init(&raw, PPROF_MAX_BYTES);
	const uint8_t *bytes = data;
	size_t file_len = len;
	int r = -1;
	pb_profile *pr = NULL;
	uint64_t *ids[3] = {NULL, NULL, NULL};
	struct id_table maps = {0}, locs = {0}, funcs = {0}; /* zeroed: releasing is safe */
	uint32_t *stack = NULL;
	size_t stack_alloc = 0;
	if (len >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
		if (gunzip(bytes, len, name, &raw) < 0)
			goto out;
		bytes = (const uint8_t *)raw.buf;
		len = raw.len;
	}
	if (!len) { /* protobuf reads nothing as an empty message: say what it is */
		cp_error("%s: empty%s, not a pprof profile", name,
		         bytes == data ? " file" : " after gunzip");
		goto out;
	}
	pr = perftools__profiles__profile__unpack(NULL, len, bytes);
	if (!pr) {
		if (bytes == data)
			cp_error("%s: not a pprof profile (protobuf decoding failed in its %zu "
			         "bytes)",
			         name, len);
		else
			cp_error("%s: not a pprof profile (protobuf decoding failed in the %zu "
			         "bytes that the file's %zu gunzip to)",
			         name, len, file_len);
		goto out;
	}
	if (pprof_check(pr, name) < 0)
		goto out;
	ids[0] = xcalloc(pr->n_mapping + 1, sizeof(uint64_t));
	ids[1] = xcalloc(pr->n_location + 1, sizeof(uint64_t));
	ids[2] = xcalloc(pr->n_function + 1, sizeof(uint64_t));
	for (size_t i = 0; i < pr->n_mapping; i++)
		ids[0][i] = pr->mapping[i]->id;
	for (size_t i = 0; i < pr->n_location; i++)
		ids[1][i] = pr->location[i]->id;
	for (size_t i = 0; i < pr->n_function; i++)
		ids[2][i] = pr->function[i]->id;
	if (id_index(&maps, ids[0], pr->n_mapping, name, "mapping") < 0 ||
	    id_index(&locs, ids[1], pr->n_location, name, "location") < 0 ||
	    id_index(&funcs, ids[2], pr->n_function, name, "function") < 0)
		goto out;

	/* Mappings' build ids, when hex (Go's own are not: profile_set_build_id ignores them). */
	for (size_t i = 0; i < pr->n_mapping; i++)
		profile_set_build_id(
		        p, profile_intern_name(p, base_name(pb_str(pr, pr->mapping[i]->filename))),
		        pb_str(pr, pr->mapping[i]->build_id));

	int ours = 0;
	for (size_t i = 0; i < pr->n_comment; i++)
		if (!strcmp(pb_str(pr, pr->comment[i]), PPROF_PROCESS_COMMENT))
			ours = 1;
	const char *process = default_process;
	if (pr->n_mapping && *pb_str(pr, pr->mapping[0]->filename))
		process = base_name(pb_str(pr, pr->mapping[0]->filename));
	int is_count;
	size_t vi = count_index(pr, &is_count);
	uint64_t period = pr->period > 0 ? (uint64_t)pr->period : 0;
	const char *punit = pr->period_type ? pb_str(pr, pr->period_type->unit) : NULL;
	int period_ns = punit && !strcmp(punit, "nanoseconds");
	uint32_t forced_test = test ? profile_intern(p, test) : 0;
	uint64_t total = 0;

	for (size_t i = 0; i < pr->n_sample; i++) {
		const pb_sample *s = pr->sample[i];
		int64_t v = s->value[vi];
		if (v < 0) {
			cp_error("%s: sample %zu has a negative value %" PRId64, name, i, v);
			goto out;
		}
		uint64_t count = (uint64_t)v;
		if (!is_count && period)
			count = (count + period / 2) / period;
		if (!count)
			continue;
		/* Frames root first: locations from the last, each location's lines from the last
		 * (the caller; earlier lines were inlined into it). */
		size_t depth = 0;
		for (size_t k = s->n_location_id; k-- > 0;) {
			int64_t li = id_find(&locs, s->location_id[k]);
			if (li < 0) {
				cp_error("%s: sample %zu refers to location %" PRIu64
				         ", which the profile does not define",
				         name, i, s->location_id[k]);
				goto out;
			}
			const pb_location *loc = pr->location[li];
			const char *module = "";
			uint64_t offset = loc->address;
			if (loc->mapping_id) {
				int64_t mi = id_find(&maps, loc->mapping_id);
				if (mi < 0) {
					cp_error("%s: location %" PRIu64
					         " refers to mapping %" PRIu64
					         ", which the profile does not define",
					         name, loc->id, loc->mapping_id);
					goto out;
				}
				const pb_mapping *m = pr->mapping[mi];
				module = base_name(pb_str(pr, m->filename));
				if (offset >= m->memory_start)
					offset = offset - m->memory_start + m->file_offset;
			}
			if (loc->n_line == 0) {
				/* Unsymbolized: module+0xOFFSET, as ciprof names unknown frames. */
				char fn[64];
				snprintf(fn, sizeof(fn), "+0x%" PRIx64, offset);
				char *full = xasprintf("%s%s", *module ? module : "[unknown]", fn);
				struct profile_frame f = {.function = profile_intern_name(p, full),
				                          .module = profile_intern_name(p, module)};
				free(full);
				if (depth + 1 >= PROFILE_MAX_DEPTH) {
					cp_error("%s: sample %zu: a stack deeper than %d frames",
					         name, i, PROFILE_MAX_DEPTH);
					goto out;
				}
				ALLOC_GROW(stack, depth + 1, stack_alloc);
				stack[depth++] = profile_frame(p, &f);
				continue;
			}
			for (size_t l = loc->n_line; l-- > 0;) {
				const pb_line *ln = loc->line[l];
				int64_t fi = id_find(&funcs, ln->function_id);
				if (fi < 0) {
					cp_error("%s: location %" PRIu64
					         " refers to function %" PRIu64
					         ", which the profile does not define",
					         name, loc->id, ln->function_id);
					goto out;
				}
				const pb_function *fn = pr->function[fi];
				int root = ours && depth == 0;
				struct profile_frame f = {
				        .function = profile_intern_name(p, pb_str(pr, fn->name)),
				        .module = root ? 0 : profile_intern_name(p, module),
				        .file = root ? 0
				                     : profile_intern_name(
				                               p, pb_str(pr, fn->filename)),
				        .line = root || ln->line < 0 || ln->line > UINT32_MAX
				                        ? 0
				                        : (uint32_t)ln->line,
				        .kind = root ? PROFILE_FRAME_PROCESS
				                     : PROFILE_FRAME_FUNCTION,
				};
				if (depth + 1 >= PROFILE_MAX_DEPTH) {
					cp_error("%s: sample %zu: a stack deeper than %d frames",
					         name, i, PROFILE_MAX_DEPTH);
					goto out;
				}
				ALLOC_GROW(stack, depth + 1, stack_alloc);
				stack[depth++] = profile_frame(p, &f);
			}
		}
		uint32_t node = 0;
		if (!ours) {
			struct profile_frame f = {.function = profile_intern_name(p, process),
			                          .kind = PROFILE_FRAME_PROCESS};
			node = profile_node(p, 0, profile_frame(p, &f));
		}
		for (size_t k = 0; k < depth; k++)
			node = profile_node(p, node, stack[k]);
		uint32_t t = forced_test;
		if (!test) {
			for (size_t j = 0; j < s->n_label; j++) {
				if (strcmp(pb_str(pr, s->label[j]->key), PPROF_TEST_LABEL))
					continue;
				const char *tn = pb_str(pr, s->label[j]->str);
				t = profile_intern_name(p,
				                        strcmp(tn, PPROF_OUTSIDE_TESTS) ? tn : "");
			}
		}
		profile_add(p, t, node, count);
		total += count;
	}
	if (period_ns && period)
		p->stats.period_ns = period;
	p->stats.samples += total;
	p->stats.cpu_seconds = (double)profile_total(p, NULL) * (double)p->stats.period_ns / 1e9;
	if (p->stats.period_ns)
		p->stats.hz = (int)(1e9 / (double)p->stats.period_ns + 0.5);
	if (info) {
		info->time_nanos = pr->time_nanos;
		info->duration_nanos = pr->duration_nanos;
	}
	if (pr->duration_nanos > 0)
		p->stats.wall_seconds = (double)pr->duration_nanos / 1e9;
	r = 0;
out:
	free(stack);
	hashidx_release(&maps.idx);
	hashidx_release(&locs.idx);
	hashidx_release(&funcs.idx);
	for (int i = 0; i < 3; i++)
		free(ids[i]);
	if (pr)
		perftools__profiles__profile__free_unpacked(pr, NULL);
	strbuf_release(&raw);
	return r;
}
