/* The SVG diff flame graph: the head run's stacks, root at the bottom, each frame as wide as
 * its head samples, children in name order (so the layout depends only on the data); red when
 * the frame grew against the base, blue when it shrank, stronger with the change; a <title>
 * tooltip per frame with base, head and change. No script: it renders anywhere, safely. */
#include "report/internal.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdlib.h>

#define SVG_W      1200.0
#define SVG_PAD    10.0
#define FRAME_H    17.0
#define CHAR_W     7.2 /* monospace at 12 px */
#define MIN_W      0.3 /* narrower frames (and their children) are not drawn */
#define TOP        64.0
#define BOTTOM     10.0
#define MAX_DEPTH  512
#define FULL_SCALE 0.4 /* a change of 40 % or more gets the full colour */

struct svg_ctx {
	const struct report_diff *d;
	struct strbuf *o;
	double px; /* pixels per head sample */
	double height;
	size_t max_depth;
};

static void depth_pass(struct svg_ctx *s, uint32_t n, size_t depth)
{
	if (depth > s->max_depth)
		s->max_depth = depth;
	if (depth >= MAX_DEPTH)
		return;
	const struct report_tree *t = &s->d->tree;
	for (size_t i = t->child_start[n]; i < t->child_start[n + 1]; i++)
		if (t->head[t->child[i]] * s->px >= MIN_W)
			depth_pass(s, t->child[i], depth + 1);
}

static void colour(double change, int *r, int *g, int *b)
{
	static const int grey[3] = {236, 236, 236}, red[3] = {222, 45, 38},
	                 blue[3] = {49, 110, 200};
	double v = isinf(change) ? 1 : fmin(1, fabs(change) / FULL_SCALE);
	const int *to = change > 0 ? red : blue;
	*r = (int)lround(grey[0] + v * (to[0] - grey[0]));
	*g = (int)lround(grey[1] + v * (to[1] - grey[1]));
	*b = (int)lround(grey[2] + v * (to[2] - grey[2]));
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
	double ch = report_node_change(d, n);
	if (isinf(ch))
		strbuf_addstr(o, "\nchange: new in the head run");
	else
		strbuf_addf(o, "\nchange: %+.1f %% (against the suite-wide factor %.2fx)", 100 * ch,
		            d->scale);
	if (n) {
		int flag = t->frame_flag[names->nodes[n].frame];
		if (flag)
			strbuf_addstr(o, flag > 0 ? "\nflagged: slower" : "\nflagged: faster");
	}
	strbuf_addstr(o, "</title>");
}

static void draw(struct svg_ctx *s, uint32_t n, double x, size_t depth)
{
	const struct report_diff *d = s->d;
	const struct report_tree *t = &d->tree;
	double w = t->head[n] * s->px;
	double y = s->height - BOTTOM - (double)(depth + 1) * FRAME_H;
	int r, g, b;
	colour(report_node_change(d, n), &r, &g, &b);
	int flag = n ? t->frame_flag[t->names->nodes[n].frame] : 0;
	strbuf_addstr(s->o, "<g>");
	tooltip(s, n);
	strbuf_addf(s->o,
	            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"2\" "
	            "fill=\"#%02x%02x%02x\"%s/>",
	            x, y, w, FRAME_H - 1, r, g, b,
	            flag ? " stroke=\"#1f2328\" stroke-width=\"1.5\"" : "");
	long fits = lround(floor((w - 6) / CHAR_W));
	if (fits >= 3) {
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
		double cw = t->head[kids[i]] * s->px;
		if (cw >= MIN_W)
			draw(s, kids[i], x, depth + 1);
		x += cw;
	}
	free(kids);
}

static void legend(struct strbuf *o, double y)
{
	static const double steps[] = {-0.4, -0.2, -0.1, 0, 0.1, 0.2, 0.4};
	double x = SVG_PAD;
	strbuf_addf(o, "<text x=\"%.1f\" y=\"%.1f\">change:</text>\n", x, y + 12);
	x += 64;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		int r, g, b;
		colour(steps[i], &r, &g, &b);
		strbuf_addf(o,
		            "<rect x=\"%.1f\" y=\"%.1f\" width=\"52\" height=\"16\" "
		            "fill=\"#%02x%02x%02x\"/><text x=\"%.1f\" y=\"%.1f\">%+.0f%%</text>\n",
		            x, y, r, g, b, x + 8, y + 12, 100 * steps[i]);
		x += 56;
	}
	strbuf_addf(o,
	            "<text x=\"%.1f\" y=\"%.1f\">width = head samples; outlined = flagged; "
	            "hover a frame for base, head and change</text>\n",
	            x + 10, y + 12);
}

int report_svg_doc(const struct report *r, struct strbuf *out, int standalone)
{
	const struct report_diff *d = r->diff;
	struct svg_ctx s = {d, out, 0, 0, 0};
	if (d && d->head_samples > 0) {
		s.px = (SVG_W - 2 * SVG_PAD) / d->tree.head[0];
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
	report_short_commit(hc, r->head->commit);
	report_short_commit(bc, r->base->commit);
	strbuf_addf(out,
	            "<text x=\"%.1f\" y=\"22\" font-size=\"15\" font-weight=\"bold\">ciprof "
	            "diff flame graph: head run %lld%s%s vs base%s%s (",
	            SVG_PAD, (long long)r->head->id, *hc ? " " : "", hc, *bc ? " " : "", bc);
	report_escape(out, d ? r->base->rule : r->base->none, REPORT_ESC_XML, 120);
	strbuf_addstr(out, ")</text>\n");
	if (!d) {
		strbuf_addf(out,
		            "<text x=\"%.1f\" y=\"%.1f\">no baseline: nothing to compare</text>\n",
		            SVG_PAD, TOP);
	} else if (!(d->head_samples > 0)) {
		strbuf_addf(out, "<text x=\"%.1f\" y=\"%.1f\">the head run has no samples</text>\n",
		            SVG_PAD, TOP);
	} else {
		legend(out, 34);
		draw(&s, 0, SVG_PAD, 0);
	}
	strbuf_addstr(out, "</svg>\n");
	return 0;
}

int report_svg(const struct report *r, struct strbuf *out)
{
	return report_svg_doc(r, out, 1);
}
