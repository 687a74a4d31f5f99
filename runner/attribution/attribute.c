/* Per-test attribution (see attribute.h): thread and process marks, output-marker windows,
 * CTest's process-per-test mapping and stack rules over the symbolized trie. */
#include "runner/attribution/attribute.h"
#include "common/error.h"
#include "common/log.h"
#include "common/regex_check.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

void attrib_init(struct attrib *a, struct profile *prof)
{
	memset(a, 0, sizeof(*a));
	a->prof = prof;
	hashidx_init(&a->tid_idx);
	hashidx_init(&a->proc_idx);
	a->ambiguous = profile_intern(prof, ATTRIB_AMBIGUOUS);
}

static void free_argv(char **argv)
{
	for (char **p = argv; p && *p; p++)
		free(*p);
	free(argv);
}

void attrib_release(struct attrib *a)
{
	for (size_t i = 0; i < a->ntids; i++) {
		free(a->tids[i].times);
		free(a->tids[i].tests);
	}
	free(a->tids);
	free(a->proc_pid);
	free(a->proc_test);
	free(a->proc_own);
	free(a->win);
	for (size_t i = 0; i < a->nctest; i++) {
		free(a->ctest[i].name);
		free_argv(a->ctest[i].argv);
		free(a->ctest[i].cwd);
	}
	free(a->ctest);
	hashidx_release(&a->tid_idx);
	hashidx_release(&a->proc_idx);
	memset(a, 0, sizeof(*a));
}

/* ---- thread marks ---- */

static int tid_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct attrib *a = ctx;
	return a->tids[pos].tid == *(const pid_t *)key;
}

static struct attrib_tid *tid_get(struct attrib *a, pid_t tid, int create)
{
	uint64_t h = hash_mix((uint64_t)tid);
	int64_t i = hashidx_find(&a->tid_idx, h, tid_eq, a, &tid);
	if (i >= 0)
		return &a->tids[i];
	if (!create)
		return NULL;
	ALLOC_GROW(a->tids, a->ntids + 1, a->tids_alloc);
	memset(&a->tids[a->ntids], 0, sizeof(a->tids[0]));
	a->tids[a->ntids].tid = tid;
	hashidx_insert(&a->tid_idx, h, (uint32_t)a->ntids);
	return &a->tids[a->ntids++];
}

static void tid_transition(struct attrib *a, pid_t tid, uint64_t t, uint32_t test)
{
	struct attrib_tid *e = tid_get(a, tid, 1);
	size_t alloc = e->alloc;
	ALLOC_GROW(e->times, e->n + 1, alloc);
	alloc = e->alloc;
	ALLOC_GROW(e->tests, e->n + 1, alloc);
	e->alloc = alloc;
	/* Marks arrive in time order per pipe; keep the array sorted regardless. */
	size_t i = e->n;
	while (i > 0 && e->times[i - 1] > t) {
		e->times[i] = e->times[i - 1];
		e->tests[i] = e->tests[i - 1];
		i--;
	}
	e->times[i] = t;
	e->tests[i] = test;
	e->n++;
}

/* Thread e's test at time t (e may be NULL); drops transitions that can no longer be asked
 * for. */
static uint32_t tid_test_at(struct attrib_tid *e, uint64_t t)
{
	if (!e || !e->n || e->times[0] > t)
		return 0;
	size_t i = 0;
	while (i + 1 < e->n && e->times[i + 1] <= t)
		i++;
	if (i > 0) {
		/* Samples come in time order: earlier transitions are done with. */
		memmove(e->times, e->times + i, (e->n - i) * sizeof(*e->times));
		memmove(e->tests, e->tests + i, (e->n - i) * sizeof(*e->tests));
		e->n -= i;
	}
	return e->tests[0];
}

static int parse_id(const char **p, long *out)
{
	char *end;
	long v = strtol(*p, &end, 10);
	if (end == *p || *end != ' ' || v <= 0)
		return -1;
	*out = v;
	*p = end + 1;
	return 0;
}

/* Undoes the writer's escapes (\n, \r, \\) in place; other backslashes stay as they are. */
static void unescape(char *s)
{
	char *o = s;
	for (const char *i = s; *i; i++) {
		if (i[0] == '\\' && (i[1] == 'n' || i[1] == 'r' || i[1] == '\\')) {
			i++;
			*o++ = *i == 'n' ? '\n' : *i == 'r' ? '\r' : '\\';
		} else {
			*o++ = *i;
		}
	}
	*o = '\0';
}

static void proc_set(struct attrib *a, pid_t pid, uint32_t test, int own);

int attrib_control_line(struct attrib *a, const char *line, uint64_t t)
{
	const char *p = line;
	int kind, escaped = 0;
	if (*p == '@') {
		/* "@TIME[~] ...": the marking thread's own clock, and a name cut by the writer. */
		char *end;
		errno = 0;
		unsigned long long when = strtoull(p + 1, &end, 10);
		if (end == p + 1 || errno || (*end != ' ' && *end != '~')) {
			a->bad_lines++;
			return cp_error(
			        "control line '%.60s': expected '@TIME VERB ID NAME' with TIME "
			        "in nanoseconds of CLOCK_MONOTONIC",
			        line);
		}
		if (*end == '~') {
			a->names_cut++;
			end++;
		}
		if (*end != ' ') {
			a->bad_lines++;
			return cp_error("control line '%.60s': expected a space after the time",
			                line);
		}
		/* A mark cannot come from the future: a clock that disagrees is not trusted. */
		if (when <= t)
			t = when;
		p = end + 1;
		escaped = 1;
	}
	if (!strncmp(p, "begin ", 6)) {
		kind = 0;
		p += 6;
	} else if (!strncmp(p, "end ", 4)) {
		kind = 1;
		p += 4;
	} else if (!strncmp(p, "proc ", 5)) {
		kind = 2;
		p += 5;
	} else {
		a->bad_lines++;
		return cp_error("control line '%.60s': expected 'begin TID NAME', 'end TID NAME' "
		                "or 'proc PID NAME'",
		                line);
	}
	long id;
	if (parse_id(&p, &id) < 0 || !*p) {
		a->bad_lines++;
		return cp_error("control line '%.60s': expected a thread or process id and a "
		                "test name",
		                line);
	}
	char *name = NULL;
	if (escaped || strlen(p) > ATTRIB_NAME_MAX) {
		name = xstrdup(p);
		if (escaped)
			unescape(name);
		size_t n = strlen(name);
		if (n > ATTRIB_NAME_MAX) {
			/* Cut, on a UTF-8 character boundary, and counted for the warning. */
			n = ATTRIB_NAME_MAX;
			while (n > 0 && ((unsigned char)name[n] & 0xc0) == 0x80)
				n--;
			name[n] = '\0';
			a->names_cut++;
		}
		p = name;
	}
	switch (kind) {
	case 0:
		tid_transition(a, (pid_t)id, t, profile_intern_name(a->prof, p));
		a->marks++;
		break;
	case 1:
		tid_transition(a, (pid_t)id, t, 0);
		break;
	default:
		proc_set(a, (pid_t)id, profile_intern_name(a->prof, p), 1);
		a->proc_marks++;
		break;
	}
	free(name);
	return 0;
}

void attrib_warn(const struct attrib *a)
{
	if (a->bad_lines)
		log_warn("%llu malformed lines on CIPROF_CONTROL_FD were ignored (-v shows them)",
		         (unsigned long long)a->bad_lines);
	if (a->names_cut)
		log_warn("%llu test marks named a test longer than %d bytes: those names were cut "
		         "there (docs/attribution.md)",
		         (unsigned long long)a->names_cut, ATTRIB_NAME_MAX);
}

/* ---- process marks ---- */

static int proc_eq(const void *ctx, uint32_t pos, const void *key)
{
	const struct attrib *a = ctx;
	return a->proc_pid[pos] == *(const pid_t *)key;
}

static int64_t proc_find(const struct attrib *a, pid_t pid)
{
	return hashidx_find(&a->proc_idx, hash_mix((uint64_t)pid ^ 0x77), proc_eq, a, &pid);
}

static void proc_set(struct attrib *a, pid_t pid, uint32_t test, int own)
{
	int64_t i = proc_find(a, pid);
	if (i >= 0) {
		a->proc_test[i] = test;
		a->proc_own[i] = (unsigned char)own;
		return;
	}
	size_t alloc = a->procs_alloc;
	ALLOC_GROW(a->proc_pid, a->nprocs + 1, alloc);
	alloc = a->procs_alloc;
	ALLOC_GROW(a->proc_test, a->nprocs + 1, alloc);
	alloc = a->procs_alloc;
	ALLOC_GROW(a->proc_own, a->nprocs + 1, alloc);
	a->procs_alloc = alloc;
	a->proc_pid[a->nprocs] = pid;
	a->proc_test[a->nprocs] = test;
	a->proc_own[a->nprocs] = (unsigned char)own;
	hashidx_insert(&a->proc_idx, hash_mix((uint64_t)pid ^ 0x77), (uint32_t)a->nprocs);
	a->nprocs++;
}

void attrib_proc_mark(struct attrib *a, pid_t pid, const char *test)
{
	attrib_proc_mark_id(a, pid, profile_intern_name(a->prof, test));
}

void attrib_proc_mark_id(struct attrib *a, pid_t pid, uint32_t test)
{
	proc_set(a, pid, test, 0);
	a->proc_marks++;
}

uint32_t attrib_proc_test(const struct attrib *a, pid_t pid)
{
	int64_t i = proc_find(a, pid);
	return i >= 0 ? a->proc_test[i] : 0;
}

void attrib_proc_fork(struct attrib *a, pid_t pid, pid_t ppid)
{
	int64_t c = proc_find(a, pid);
	if (c >= 0 && a->proc_own[c] && a->proc_test[c])
		return; /* its own mark, read before this fork: it stays (attribute.h) */
	int64_t i = proc_find(a, ppid);
	if (i >= 0 && a->proc_test[i])
		proc_set(a, pid, a->proc_test[i], 0);
}

void attrib_proc_exit(struct attrib *a, pid_t pid)
{
	int64_t i = proc_find(a, pid);
	if (i >= 0) {
		a->proc_test[i] = 0; /* the slot is reused if the pid comes back */
		a->proc_own[i] = 0;
	}
}

/* ---- output-marker windows ---- */

void attrib_window_begin(struct attrib *a, const char *test, uint64_t t)
{
	ALLOC_GROW(a->win, a->nwin + 1, a->win_alloc);
	a->win[a->nwin++] =
	        (struct attrib_window){t, UINT64_MAX, profile_intern_name(a->prof, test)};
}

void attrib_window_end(struct attrib *a, const char *test, uint64_t t)
{
	uint32_t id = profile_intern_name(a->prof, test);
	for (size_t i = a->nwin; i > a->win_first; i--) {
		if (a->win[i - 1].test == id && a->win[i - 1].end == UINT64_MAX) {
			a->win[i - 1].end = t;
			return;
		}
	}
}

void attrib_tap_plan(struct attrib *a, uint64_t t)
{
	if (!a->tap_results) {
		a->tap = 1;
		a->tap_last = t;
		return;
	}
	/* A plan after the results: what ran since the last result was no test. */
	if (a->tap && a->resolve)
		a->resolve(a->resolve_ctx, 0);
	a->tap = 0;
}

void attrib_tap_result(struct attrib *a, const char *test, uint64_t t)
{
	uint32_t id = profile_intern_name(a->prof, test);
	uint64_t start = a->tap ? a->tap_last : 0;
	for (size_t i = a->win_first; i < a->nwin; i++)
		if (a->win[i].end != UINT64_MAX && a->win[i].end > start && a->win[i].end <= t)
			start = a->win[i].end;
	ALLOC_GROW(a->win, a->nwin + 1, a->win_alloc);
	a->win[a->nwin++] = (struct attrib_window){start, t, id};
	/* Samples processed before this line was read, since the last one, were held back. */
	if (a->tap && a->resolve)
		a->resolve(a->resolve_ctx, id);
	a->tap = 1;
	a->tap_last = t;
	a->tap_results++;
}

static uint32_t window_test_at(struct attrib *a, uint64_t t)
{
	/* Drop leading windows that ended before t: samples come in time order. */
	while (a->win_first < a->nwin && a->win[a->win_first].end < t)
		a->win_first++;
	uint32_t found = 0;
	for (size_t i = a->win_first; i < a->nwin; i++) {
		const struct attrib_window *w = &a->win[i];
		if (w->start > t || w->end < t)
			continue;
		if (found && found != w->test)
			return a->ambiguous;
		found = w->test;
	}
	return found;
}

/* The sources after thread marks: process marks, output-marker windows, TAP. */
static uint32_t other_test_at(struct attrib *a, pid_t pid, uint64_t t, int *weak)
{
	uint32_t test = 0;
	*weak = 0;
	int64_t i = proc_find(a, pid);
	if (i >= 0 && a->proc_test[i])
		return a->proc_test[i];
	if (a->nwin) {
		test = window_test_at(a, t);
		if (test)
			*weak = 1;
	}
	if (!test && a->tap && t > a->tap_last) {
		*weak = 1;
		return ATTRIB_PENDING;
	}
	return test;
}

/* attrib_sample, with the thread's entry already looked up (NULL: never marked). */
static uint32_t sample_test(struct attrib *a, struct attrib_tid *e, pid_t pid, uint64_t t,
                            int *weak)
{
	*weak = 0;
	uint32_t test = tid_test_at(e, t);
	return test ? test : other_test_at(a, pid, t, weak);
}

uint32_t attrib_sample(struct attrib *a, pid_t pid, pid_t tid, uint64_t t, int *weak)
{
	return sample_test(a, tid_get(a, tid, 0), pid, t, weak);
}

void attrib_thread_exit(struct attrib *a, pid_t tid, uint64_t t)
{
	struct attrib_tid *e = tid_get(a, tid, 0);
	if (e)
		e->last = t;
}

size_t attrib_sample_parts(struct attrib *a, pid_t pid, pid_t tid, uint64_t t, uint64_t weight,
                           struct attrib_part *parts)
{
	struct attrib_tid *e = tid_get(a, tid, 0);
	/* Since the thread's previous sample; for its first, since its first mark (a thread
	 * usually marks its test as it starts, and on a loaded machine its first sample may
	 * come after several tests). */
	uint64_t t0 = e ? (e->last ? e->last : e->n ? e->times[0] : 0) : 0;
	if (e && t > e->last)
		e->last = t;
	/* The thread's transitions after its previous sample, up to t: bounds[k] starts
	 * segment k, whose thread test is tests[k]. */
	uint64_t bounds[ATTRIB_MAX_PARTS];
	uint32_t tests[ATTRIB_MAX_PARTS];
	size_t nseg = 0;
	if (e && weight > 1 && t0 && t0 < t) {
		uint32_t cur = 0;
		size_t i = 0;
		for (; i < e->n && e->times[i] <= t0; i++)
			cur = e->tests[i];
		bounds[0] = t0;
		tests[0] = cur;
		nseg = 1;
		for (; i < e->n && e->times[i] <= t && nseg < ATTRIB_MAX_PARTS; i++) {
			if (e->times[i] == bounds[nseg - 1] && nseg > 1) {
				/* two marks at one time (an end and the next begin): the later
				 * one holds the segment */
				tests[nseg - 1] = e->tests[i];
				if (tests[nseg - 1] == tests[nseg - 2])
					nseg--;
				continue;
			}
			if (e->tests[i] == tests[nseg - 1])
				continue;
			bounds[nseg] = e->times[i];
			tests[nseg++] = e->tests[i];
		}
	}
	int weak;
	uint32_t last = sample_test(a, e, pid, t, &weak);
	if (nseg < 2) {
		parts[0] = (struct attrib_part){last, weak, weight};
		return 1;
	}
	/* The last segment runs to t, with attrib_sample's own answer (later changes that
	 * did not fit fold into it). */
	int other_weak;
	uint32_t other = other_test_at(a, pid, t, &other_weak);
	double span = (double)(t - t0);
	uint64_t given = 0;
	for (size_t k = 0; k < nseg; k++) {
		uint64_t end = k + 1 < nseg ? bounds[k + 1] : t;
		uint64_t upto =
		        k + 1 < nseg ? (uint64_t)((double)weight * (double)(end - t0) / span + 0.5)
		                     : weight;
		if (upto > weight)
			upto = weight;
		parts[k].weight = upto > given ? upto - given : 0;
		given += parts[k].weight;
		if (k + 1 == nseg) {
			parts[k].test = last;
			parts[k].weak = weak;
		} else {
			parts[k].test = tests[k] ? tests[k] : other;
			parts[k].weak = tests[k] ? 0 : other_weak;
		}
	}
	return nseg;
}

/* ---- CTest ---- */

int attrib_ctest_load(struct attrib *a, const char *json, size_t len, const char *source)
{
	json_error_t jerr;
	json_t *root = json_loadb(json, len, 0, &jerr);
	if (!root)
		return cp_error("%s:%d:%d: %s", source, jerr.line, jerr.column, jerr.text);
	int ret = 0;
	json_t *tests = json_object_get(root, "tests");
	if (!json_is_array(tests)) {
		ret = cp_error("%s: no \"tests\" array (is this ctest --show-only=json-v1 output?)",
		               source);
		goto out;
	}
	size_t i;
	json_t *t;
	json_array_foreach(tests, i, t)
	{
		json_t *name = json_object_get(t, "name");
		json_t *cmd = json_object_get(t, "command");
		if (!json_is_string(name) || !json_is_array(cmd) || !json_array_size(cmd))
			continue; /* a test without a command (NOT_AVAILABLE) cannot run */
		struct ctest_entry e = {xstrdup(json_string_value(name)), NULL, NULL, 0, 0};
		size_t n = json_array_size(cmd);
		e.argv = xcalloc(n + 1, sizeof(char *));
		for (size_t k = 0; k < n; k++) {
			const char *s = json_string_value(json_array_get(cmd, k));
			e.argv[k] = xstrdup(s ? s : "");
		}
		const char *cwd = "";
		json_t *props = json_object_get(t, "properties");
		size_t pi;
		json_t *p;
		json_array_foreach(props, pi, p)
		{
			const char *pn = json_string_value(json_object_get(p, "name"));
			json_t *pv = json_object_get(p, "value");
			if (pn && !strcmp(pn, "WORKING_DIRECTORY") && json_is_string(pv))
				cwd = json_string_value(pv);
			if (pn && !strcmp(pn, "DISABLED") && json_is_true(pv))
				e.disabled = 1;
		}
		e.cwd = xstrdup(cwd);
		ALLOC_GROW(a->ctest, a->nctest + 1, a->ctest_alloc);
		a->ctest[a->nctest++] = e;
	}
out:
	json_decref(root);
	return ret;
}

static const char *base_of(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

int64_t attrib_ctest_find(const struct attrib *a, char *const *argv, const char *cwd)
{
	int64_t best = -1;
	int best_score = 0;
	for (size_t i = 0; i < a->nctest; i++) {
		const struct ctest_entry *e = &a->ctest[i];
		size_t k = 0;
		/* argv[0] may be spelled differently (PATH lookup): compare base names. */
		if (!argv[0] || strcmp(base_of(argv[0]), base_of(e->argv[0])))
			continue;
		for (k = 1; e->argv[k] && argv[k]; k++)
			if (strcmp(e->argv[k], argv[k]))
				break;
		if (e->argv[k] || argv[k])
			continue;
		int score = 1 + (!strcmp(argv[0], e->argv[0])) +
		            2 * (cwd && *e->cwd && !strcmp(cwd, e->cwd));
		if (score > best_score) {
			best = (int64_t)i;
			best_score = score;
		}
	}
	return best;
}

const char *attrib_ctest_match_exe(const struct attrib *a, const char *path)
{
	const char *found = NULL;
	for (size_t i = 0; i < a->nctest; i++) {
		const struct ctest_entry *e = &a->ctest[i];
		if (strcmp(e->argv[0], path))
			continue;
		if (found && strcmp(found, e->name))
			return NULL; /* several tests run this program: only argv tells them apart
			              */
		found = e->name;
	}
	return found;
}

/* Whether a process was matched to test name under any of its entries (one per ctest asked). */
static int ctest_name_seen(const struct attrib *a, const char *name)
{
	for (size_t i = 0; i < a->nctest; i++)
		if (a->ctest[i].seen && !strcmp(a->ctest[i].name, name))
			return 1;
	return 0;
}

const char *attrib_ctest_unseen_exe(const struct attrib *a, const char *path)
{
	const char *found = NULL;
	for (size_t i = 0; i < a->nctest; i++) {
		const struct ctest_entry *e = &a->ctest[i];
		if (strcmp(e->argv[0], path) || (found && !strcmp(found, e->name)) ||
		    ctest_name_seen(a, e->name))
			continue;
		if (found)
			return NULL; /* two tests of this program never seen: either may be it */
		found = e->name;
	}
	return found;
}

/* ---- stack rules ---- */

int attrib_rules_add(struct attrib_rules *rules, const char *name, const char *caller,
                     const char *test, const char *as)
{
	struct attrib_rule r = {0};
	if (caller && regex_compile(&r.caller_re, caller, 0) < 0)
		return cp_error("rule '%s': caller: %s", name, cp_last_error());
	if (regex_compile(&r.test_re, test, 0) < 0) {
		if (caller)
			regfree(&r.caller_re);
		return cp_error("rule '%s': test: %s", name, cp_last_error());
	}
	r.name = xstrdup(name);
	r.caller = caller ? xstrdup(caller) : NULL;
	r.test = xstrdup(test);
	r.as = as ? xstrdup(as) : NULL;
	r.compiled = 1;
	ALLOC_GROW(rules->r, rules->n + 1, rules->alloc);
	rules->r[rules->n++] = r;
	return 0;
}

void attrib_rules_release(struct attrib_rules *rules)
{
	for (size_t i = 0; i < rules->n; i++) {
		struct attrib_rule *r = &rules->r[i];
		if (r->caller)
			regfree(&r->caller_re);
		regfree(&r->test_re);
		free(r->name);
		free(r->caller);
		free(r->test);
		free(r->as);
	}
	free(rules->r);
	memset(rules, 0, sizeof(*rules));
}

/* Expands \1..\9 of as with the matches of s. */
static void expand(struct strbuf *out, const char *as, const char *s, const regmatch_t *m)
{
	for (const char *p = as; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '9') {
			int g = p[1] - '0';
			if (m[g].rm_so >= 0)
				strbuf_add(out, s + m[g].rm_so, (size_t)(m[g].rm_eo - m[g].rm_so));
			p++;
		} else {
			strbuf_addch(out, *p);
		}
	}
}

/* Applies rule r to frame name s; the test's string id, or 0. */
static uint32_t apply_rule(const struct attrib_rule *r, struct profile *p, const char *s)
{
	regmatch_t m[10];
	if (regexec(&r->test_re, s, 10, m, 0))
		return 0;
	struct strbuf sb = STRBUF_INIT;
	if (r->as)
		expand(&sb, r->as, s, m);
	else
		strbuf_add(&sb, s + m[0].rm_so, (size_t)(m[0].rm_eo - m[0].rm_so));
	uint32_t id = sb.len ? profile_intern_name(p, sb.buf) : 0;
	strbuf_release(&sb);
	return id;
}

uint32_t *attrib_rules_node_tests(const struct attrib_rules *rules, struct profile *p)
{
	uint32_t *tests = xcalloc(p->nnodes, sizeof(*tests));
	if (!rules->n || p->nnodes < 2)
		return tests;
	/* Per frame, once: the test a self-naming rule gives it, and which rules' caller
	 * regex it matches (bit i = rule i). Nodes far outnumber frames. */
	size_t nframes = p->nframes;
	uint32_t *self_test = xcalloc(nframes, sizeof(*self_test));
	uint64_t *caller_mask = xcalloc(nframes, sizeof(*caller_mask));
	for (size_t f = 0; f < nframes; f++) {
		if (p->frames[f].kind == PROFILE_FRAME_PROCESS)
			continue;
		/* Copy: interning a test name may move the string pool. */
		char *name = xstrdup(profile_str(p, p->frames[f].function));
		for (size_t i = 0; i < rules->n && i < 64; i++) {
			const struct attrib_rule *r = &rules->r[i];
			if (r->caller) {
				if (!regexec(&r->caller_re, name, 0, NULL, 0))
					caller_mask[f] |= 1ULL << i;
			} else if (!self_test[f]) {
				self_test[f] = apply_rule(r, p, name);
			}
		}
		free(name);
	}
	/* Parents precede children in the node array: one pass, outermost match wins. */
	for (size_t n = 1; n < p->nnodes; n++) {
		uint32_t parent = p->nodes[n].parent;
		uint32_t f = p->nodes[n].frame;
		if (parent && tests[parent]) {
			tests[n] = tests[parent];
			continue;
		}
		if (p->frames[f].kind == PROFILE_FRAME_PROCESS)
			continue;
		uint64_t mask = parent ? caller_mask[p->nodes[parent].frame] : 0;
		uint32_t t = 0;
		for (size_t i = 0; mask && i < rules->n && i < 64 && !t; i++) {
			if (!(mask & (1ULL << i)))
				continue;
			char *name = xstrdup(profile_str(p, p->frames[f].function));
			t = apply_rule(&rules->r[i], p, name);
			free(name);
		}
		/* A caller rule outranks a self-naming rule at the same depth only by order:
		 * rules earlier in the table win. */
		tests[n] = t ? t : self_test[f];
	}
	free(self_test);
	free(caller_mask);
	return tests;
}
