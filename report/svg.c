/* The SVG diff flame graph: the head run's stacks, root at the bottom, each frame as wide as
 * its head samples, children in name order (so the layout depends only on the data). Only the
 * frames of flagged functions are coloured (red slower, blue faster, stronger with the
 * change); everything else is neutral grey, so the finding is what the eye meets. Flagged
 * frames are outlined and always labelled with their change. A <title> tooltip per frame
 * gives base, head and change. The focused variant draws only the subtrees under flagged
 * frames (and the callers leading to them), widened to fill the picture. Flagged frames'
 * labels are drawn last, on top, and never into one another: on a wide suite one function
 * called from several places has narrow frames side by side. No script: it renders
 * anywhere, safely. */
#include "report/internal.h"
#include "common/escape.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SVG_W      1200.0
#define SVG_PAD    10.0
#define FRAME_H    17.0
#define CHAR_W     7.2  /* monospace at 12 px */
#define MIN_W      0.3  /* narrower frames (and their children) are not drawn */
#define MIN_LABEL  6    /* a cut label keeps at least this many characters, else none */
#define TITLE_Y    22.0 /* the heading (15 px), the baseline under it, then the legend */
#define RULE_Y     40.0
#define LEGEND_Y   50.0
#define TOP        80.0
#define BOTTOM     10.0
#define MAX_DEPTH  512
#define FULL_SCALE 0.4 /* a change of 40 % or more gets the full colour */

/* A flagged frame whose label is placed once every frame is drawn. */
struct svg_label {
	double x, y, w;
	uint32_t node;
};

struct svg_ctx {
	const struct report_diff *d;
	struct strbuf *o;
	const double *w; /* per node: the width it is drawn with, in head samples */
	double px;       /* pixels per head sample */
	double height;
	size_t max_depth;
	struct svg_label *labels; /* flagged frames, in drawing order */
	size_t nlabels, labels_alloc;
};

static int node_flag(const struct report_diff *d, uint32_t n)
{
	const struct report_tree *t = &d->tree;
	return n ? t->frame_flag[t->names->nodes[n].frame] : 0;
}

static void depth_pass(struct svg_ctx *s, uint32_t n, size_t depth)
{
	if (depth > s->max_depth)
		s->max_depth = depth;
	if (depth >= MAX_DEPTH)
		return;
	const struct report_tree *t = &s->d->tree;
	for (size_t i = t->child_start[n]; i < t->child_start[n + 1]; i++)
		if (s->w[t->child[i]] * s->px >= MIN_W)
			depth_pass(s, t->child[i], depth + 1);
}

#define GREY 0xdd
static void colour(double change, int flagged, int *r, int *g, int *b)
{
	static const int red[3] = {222, 45, 38}, blue[3] = {49, 110, 200};
	if (!flagged) {
		*r = *g = *b = GREY;
		return;
	}
	/* at least a third of the full colour: a flagged frame never looks grey */
	double v = isinf(change) ? 1 : fmin(1, fabs(change) / FULL_SCALE);
	v = 0.35 + 0.65 * v;
	const int *to = flagged > 0 ? red : blue;
	*r = (int)lround(GREY + v * (to[0] - GREY));
	*g = (int)lround(GREY + v * (to[1] - GREY));
	*b = (int)lround(GREY + v * (to[2] - GREY));
}

static void change_text(struct strbuf *o, const struct report_diff *d, uint32_t n)
{
	double ch = report_node_raw_change(d, n);
	if (isinf(ch))
		strbuf_addstr(o, "new");
	else if (!(d->tree.head[n] > 0))
		strbuf_addstr(o, "gone");
	else
		strbuf_addf(o, "%+.1f %%", 100 * ch);
}

static void tooltip(struct svg_ctx *s, uint32_t n)
{
	const struct report_diff *d = s->d;
	const struct report_tree *t = &d->tree;
	struct strbuf *o = s->o;
	const struct profile *names = t->names;
	strbuf_addstr(o, "<title>");
	report_escape(o, report_node_name(d, n), REPORT_ESC_XML, 0);
	if (n) {
		const struct profile_frame *f = &names->frames[names->nodes[n].frame];
		const char *mod = profile_str(names, f->module);
		if (f->kind == PROFILE_FRAME_PROCESS)
			strbuf_addstr(o, " (process)");
		else if (*mod) {
			strbuf_addstr(o, " [");
			report_escape(o, mod, REPORT_ESC_XML, 0);
			strbuf_addstr(o, "]");
		}
	}
	double k = (double)d->base_runs;
	strbuf_addf(o, "\nhead: %.0f samples, %.3f s, %.2f %%", t->head[n],
	            t->head[n] * d->head_period,
	            d->head_samples > 0 ? 100 * t->head[n] / d->head_samples : 0.0);
	strbuf_addf(o, "\nbase: %.1f samples per run, %.3f s, %.2f %%", t->base[n] / k,
	            t->base[n] * d->base_period / k,
	            d->base_samples > 0 ? 100 * t->base[n] / d->base_samples : 0.0);
	strbuf_addstr(o, "\nchange: ");
	change_text(o, d, n);
	double ch = report_node_change(d, n);
	if (isfinite(ch) && fabs(d->scale - 1) >= 0.01)
		strbuf_addf(o, " (%+.1f %% beyond the suite's ×%.3f)", 100 * ch, d->scale);
	int flag = node_flag(d, n);
	if (flag)
		strbuf_addstr(o, flag > 0 ? "\nflagged: slower" : "\nflagged: faster");
	strbuf_addstr(o, "</title>");
}

static void draw(struct svg_ctx *s, uint32_t n, double x, size_t depth)
{
	const struct report_diff *d = s->d;
	const struct report_tree *t = &d->tree;
	double w = s->w[n] * s->px;
	double y = s->height - BOTTOM - (double)(depth + 1) * FRAME_H;
	int r, g, b;
	int flag = node_flag(d, n);
	colour(report_node_change(d, n), flag, &r, &g, &b);
	strbuf_addstr(s->o, flag ? "<g class=\"flagged\">" : "<g>");
	tooltip(s, n);
	strbuf_addf(s->o,
	            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"2\" "
	            "fill=\"#%02x%02x%02x\"%s/>",
	            x, y, w, FRAME_H - 1, r, g, b,
	            flag ? " stroke=\"#1f2328\" stroke-width=\"1.5\"" : "");
	long fits = lround(floor((w - 6) / CHAR_W));
	if (flag) {
		/* labelled after every frame is drawn (flagged_labels), so no frame covers it */
		ALLOC_GROW(s->labels, s->nlabels + 1, s->labels_alloc);
		s->labels[s->nlabels++] = (struct svg_label){x, y, w, n};
	} else if (fits >= MIN_LABEL) {
		strbuf_addf(s->o, "<text x=\"%.1f\" y=\"%.1f\">", x + 3, y + 12);
		report_escape(s->o, report_node_name(d, n), REPORT_ESC_XML, (size_t)fits);
		strbuf_addstr(s->o, "</text>");
	}
	strbuf_addstr(s->o, "</g>\n");
	if (depth >= MAX_DEPTH)
		return;
	size_t nc;
	uint32_t *kids = report_tree_children(t, n, 1, &nc);
	for (size_t i = 0; i < nc; i++) {
		double cw = s->w[kids[i]] * s->px;
		if (cw >= MIN_W)
			draw(s, kids[i], x, depth + 1);
		x += cw;
	}
	free(kids);
}

static int label_cmp(const void *pa, const void *pb)
{
	const struct svg_label *a = pa, *b = pb;
	if (a->y != b->y)
		return a->y < b->y ? -1 : 1;
	return a->x < b->x ? -1 : a->x > b->x;
}

/* The flagged frames' labels: the name and the change, bold, with a white halo, on top of
 * every frame. A label starts inside its own frame (after the row's previous label) and
 * never left of it: one that starts beyond its frame is left out. It runs on over its
 * neighbours up to the next flagged frame of its row (or the picture's edge); what does
 * not fit is cut: the name (never to fewer than MIN_LABEL characters), then the name
 * altogether; the change alone may run on over the next flagged frames (whose labels then
 * start after it, or are left out) up to the picture's edge, or else the label is left
 * out. A label left out keeps the outline and the tooltip. */
static void flagged_labels(struct svg_ctx *s)
{
	const struct report_diff *d = s->d;
	if (!s->nlabels)
		return;
	qsort(s->labels, s->nlabels, sizeof(*s->labels), label_cmp);
	strbuf_addstr(s->o, "<g class=\"labels\" font-weight=\"bold\" stroke=\"#ffffff\" "
	                    "stroke-width=\"3\" paint-order=\"stroke\" pointer-events=\"none\">\n");
	struct strbuf change = STRBUF_INIT;
	double end = 0; /* where the row's previous label ends */
	for (size_t i = 0; i < s->nlabels; i++) {
		const struct svg_label *l = &s->labels[i];
		if (i == 0 || l->y != s->labels[i - 1].y)
			end = SVG_PAD;
		int last = i + 1 == s->nlabels || s->labels[i + 1].y != l->y;
		double limit = last ? SVG_W - SVG_PAD : s->labels[i + 1].x;
		const char *name = report_node_name(d, l->node);
		strbuf_reset(&change);
		change_text(&change, d, l->node);
		size_t nc = esc_utf8_chars(name, strlen(name)), cc = change.len;
		if (nc > 60)
			nc = 60; /* as report_escape cuts it below */
		/* inside its own frame, never left of it: the name it stands on is its own */
		double x = fmax(l->x + fmin(3, l->w / 2), end);
		if (x > l->x + l->w)
			continue;
		long room = lround(floor((limit - x) / CHAR_W + 1e-9));
		long edge = lround(floor((SVG_W - SVG_PAD - x) / CHAR_W + 1e-9));
		size_t name_max; /* 0: the change alone */
		if (room >= (long)(nc + 1 + cc))
			name_max = 60;
		else if (room >= (long)(MIN_LABEL + 1 + cc))
			name_max = (size_t)room - 1 - cc;
		else if (edge >= (long)cc)
			name_max = 0;
		else
			continue;
		struct strbuf label = STRBUF_INIT;
		size_t shown = 0; /* characters, before entities */
		if (name_max) {
			shown = report_escape(&label, name, REPORT_ESC_XML, name_max) + 1;
			strbuf_addch(&label, ' ');
		}
		strbuf_add(&label, change.buf, change.len);
		shown += cc;
		strbuf_addf(s->o, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x, l->y + 12,
		            label.buf);
		end = x + (double)(shown + 1) * CHAR_W; /* and a character's gap */
		strbuf_release(&label);
	}
	strbuf_release(&change);
	strbuf_addstr(s->o, "</g>\n");
}

static void legend(struct strbuf *o, double y, int focused)
{
	static const double steps[] = {-0.4, -0.1, 0.1, 0.4};
	double x = SVG_PAD;
	strbuf_addf(o, "<text x=\"%.1f\" y=\"%.1f\">flagged:</text>\n", x, y + 12);
	x += 64;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		int r, g, b;
		colour(steps[i], steps[i] > 0 ? 1 : -1, &r, &g, &b);
		strbuf_addf(o,
		            "<rect x=\"%.1f\" y=\"%.1f\" width=\"52\" height=\"16\" "
		            "fill=\"#%02x%02x%02x\"/><text x=\"%.1f\" y=\"%.1f\">%+.0f%%</text>\n",
		            x, y, r, g, b, x + 8, y + 12, 100 * steps[i]);
		x += 56;
	}
	strbuf_addf(
	        o,
	        "<rect x=\"%.1f\" y=\"%.1f\" width=\"52\" height=\"16\" fill=\"#%02x%02x%02x\"/>"
	        "<text x=\"%.1f\" y=\"%.1f\">no significant change</text>\n",
	        x + 8, y, GREY, GREY, GREY, x + 66, y + 12);
	strbuf_addf(o,
	            "<text x=\"%.1f\" y=\"%.1f\">width = head samples%s; hover for "
	            "details</text>\n",
	            x + 230, y + 12, focused ? " (findings only)" : "");
}

/* Widths: the head samples of every node, or (focused) of the nodes inside a flagged
 * subtree, their callers getting the sum of what they lead to. Returns the root's width. */
static double widths(const struct report_diff *d, int focused, double *w)
{
	const struct report_tree *t = &d->tree;
	size_t nn = t->names->nnodes;
	if (!focused) {
		for (size_t n = 0; n < nn; n++)
			w[n] = t->head[n];
		return w[0];
	}
	/* A node is inside when it or an ancestor is flagged (parents come before children);
	 * an inside node keeps its head samples, one outside gets the sum of its children. */
	char *inside = xcalloc(nn, 1);
	for (size_t n = 1; n < nn; n++)
		inside[n] = node_flag(d, (uint32_t)n) || inside[t->names->nodes[n].parent];
	for (size_t n = 0; n < nn; n++)
		w[n] = inside[n] ? t->head[n] : 0;
	for (size_t n = nn; n-- > 1;)
		if (!inside[t->names->nodes[n].parent])
			w[t->names->nodes[n].parent] += w[n];
	free(inside);
	return w[0];
}

static int svg_doc(const struct report *r, struct strbuf *out, int standalone, int focused)
{
	const struct report_diff *d = r->diff;
	double *w = d ? xcalloc(d->tree.names->nnodes, sizeof(double)) : NULL;
	struct svg_ctx s = {.d = d, .o = out, .w = w};
	double root = d && d->head_samples > 0 ? widths(d, focused, w) : 0;
	if (root > 0) {
		s.px = (SVG_W - 2 * SVG_PAD) / root;
		depth_pass(&s, 0, 0);
	}
	s.height = TOP + (double)(s.max_depth + 1) * FRAME_H + BOTTOM;
	if (standalone)
		strbuf_addstr(out,
		              "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
	strbuf_addf(out,
	            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
	            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"ui-monospace, "
	            "Menlo, Consolas, monospace\" font-size=\"12\">\n",
	            SVG_W, s.height, SVG_W, s.height);
	strbuf_addstr(out, "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n");
	char hc[11], bc[11];
	report_short_commit(hc, r->pr_head && *r->pr_head ? r->pr_head : r->head->commit);
	report_short_commit(bc, r->base->commit);
	strbuf_addf(out,
	            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"15\" font-weight=\"bold\">ciprof "
	            "diff flame graph%s: head run %lld%s%s vs base%s%s</text>\n",
	            SVG_PAD, TITLE_Y, focused ? " (findings only)" : "", (long long)r->head->id,
	            *hc ? " " : "", hc, *bc ? " " : "", bc);
	/* the baseline on a line of its own, cut to the picture's width */
	strbuf_addf(out, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#57606a\">base: ", SVG_PAD, RULE_Y);
	report_escape(out, d ? r->base->rule : r->base->none, REPORT_ESC_XML,
	              (size_t)((SVG_W - 2 * SVG_PAD) / CHAR_W) - 6);
	strbuf_addstr(out, "</text>\n");
	if (!d) {
		strbuf_addf(out,
		            "<text x=\"%.1f\" y=\"%.1f\">no baseline: nothing to compare</text>\n",
		            SVG_PAD, TOP);
	} else if (!(d->head_samples > 0)) {
		strbuf_addf(out, "<text x=\"%.1f\" y=\"%.1f\">the head run has no samples</text>\n",
		            SVG_PAD, TOP);
	} else if (!(root > 0)) {
		strbuf_addf(out,
		            "<text x=\"%.1f\" y=\"%.1f\">no flagged function in the head run: "
		            "nothing to focus on</text>\n",
		            SVG_PAD, TOP);
	} else {
		legend(out, LEGEND_Y, focused);
		draw(&s, 0, SVG_PAD, 0);
		flagged_labels(&s);
	}
	strbuf_addstr(out, "</svg>\n");
	free(s.labels);
	free(w);
	return 0;
}

int report_svg_doc(const struct report *r, struct strbuf *out, int standalone)
{
	return svg_doc(r, out, standalone, r->focus);
}

int report_svg_focused(const struct report *r, struct strbuf *out, int standalone)
{
	return svg_doc(r, out, standalone, 1);
}

int report_svg(const struct report *r, struct strbuf *out)
{
	return report_svg_doc(r, out, 1);
}
