/* frames.ignore / frames.fold (frames_filter.h): each frame is classified once (keep, ignore,
 * fold), then each stack node once, walking the trie parents-first: a node maps to its
 * parent's image when its frame is ignored or folds into a folding parent, else to a new node
 * under that image. */
#include "report/frames_filter.h"
#include "common/error.h"
#include "common/regex_check.h"
#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>

static int compile(regex_t **out, size_t *n, char *const *pats, size_t npats)
{
	*out = npats ? xcalloc(npats, sizeof(**out)) : NULL;
	for (size_t i = 0; i < npats; i++) {
		if (regex_compile(&(*out)[i], pats[i], REG_NOSUB) < 0)
			return -1;
		(*n)++;
	}
	return 0;
}

int frames_filter_init(struct frames_filter *f, char *const *ignore, size_t nignore,
                       char *const *fold, size_t nfold)
{
	memset(f, 0, sizeof(*f));
	if (compile(&f->ignore, &f->nignore, ignore, nignore) < 0)
		return -1;
	return compile(&f->fold, &f->nfold, fold, nfold);
}

int frames_filter_from_config(struct frames_filter *f, const struct config *c)
{
	size_t ni, nf;
	char *const *ig = config_list(c, CONFIG_FRAMES_IGNORE, &ni);
	char *const *fo = config_list(c, CONFIG_FRAMES_FOLD, &nf);
	return frames_filter_init(f, ig, ni, fo, nf);
}

void frames_filter_release(struct frames_filter *f)
{
	for (size_t i = 0; i < f->nignore; i++)
		regfree(&f->ignore[i]);
	for (size_t i = 0; i < f->nfold; i++)
		regfree(&f->fold[i]);
	free(f->ignore);
	free(f->fold);
	memset(f, 0, sizeof(*f));
}

int frames_filter_empty(const struct frames_filter *f)
{
	return !f->nignore && !f->nfold;
}

static int any_match(const regex_t *res, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (regexec(&res[i], s, 0, NULL, 0) == 0)
			return 1;
	return 0;
}

enum { KEEP = 0, IGNORE = 1, FOLD = 2 };

struct profile *frames_filter_apply(const struct frames_filter *f, const struct profile *in)
{
	struct profile *out = profile_new();
	size_t nf = in->nframes ? in->nframes : 1;
	unsigned char *kind = xcalloc(nf, 1);
	uint32_t *frame_map = xcalloc(nf, sizeof(*frame_map));
	for (size_t i = 0; i < in->nframes; i++) {
		const struct profile_frame *fr = &in->frames[i];
		const char *fn = profile_str(in, fr->function);
		if (fr->kind != PROFILE_FRAME_PROCESS) {
			if (any_match(f->ignore, f->nignore, fn))
				kind[i] = IGNORE;
			else if (any_match(f->fold, f->nfold, fn))
				kind[i] = FOLD;
		}
		if (kind[i] == IGNORE)
			continue;
		struct profile_frame c = {
		        .function = profile_intern(out, fn),
		        .module = profile_intern(out, profile_str(in, fr->module)),
		        .file = profile_intern(out, profile_str(in, fr->file)),
		        .line = fr->line,
		        .kind = fr->kind,
		};
		frame_map[i] = profile_frame(out, &c);
	}
	/* node_map[i]: i's image in out; folding[i]: that image's frame is a FOLD frame. */
	uint32_t *node_map = xcalloc(in->nnodes, sizeof(*node_map));
	unsigned char *folding = xcalloc(in->nnodes, 1);
	for (size_t i = 1; i < in->nnodes; i++) {
		const struct profile_node *n = &in->nodes[i];
		uint32_t parent = n->parent;
		/* Parents precede children (profile.h); anything else is treated as a root. */
		if (parent >= i)
			parent = 0;
		unsigned char k = kind[n->frame];
		if (k == IGNORE || (k == FOLD && folding[parent])) {
			node_map[i] = node_map[parent];
			folding[i] = folding[parent];
		} else {
			node_map[i] = profile_node(out, node_map[parent], frame_map[n->frame]);
			folding[i] = k == FOLD;
		}
	}
	for (size_t i = 0; i < in->nsamples; i++) {
		const struct profile_sample *s = &in->samples[i];
		profile_add(out, profile_intern(out, profile_str(in, s->test)), node_map[s->node],
		            s->count);
	}
	for (size_t i = 0; i < in->nresults; i++) {
		const struct profile_result *r = &in->results[i];
		profile_set_result(out, profile_intern(out, profile_str(in, r->test)), r->status,
		                   r->seconds);
	}
	for (size_t i = 0; i < in->nmodules; i++) {
		const struct profile_module *m = &in->modules[i];
		if (m->build_id)
			profile_set_build_id(out, profile_intern(out, profile_str(in, m->module)),
			                     profile_str(in, m->build_id));
	}
	out->stats = in->stats;
	free(kind);
	free(frame_map);
	free(node_map);
	free(folding);
	return out;
}
