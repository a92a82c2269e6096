// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --svg: a self-contained SVG timeline, one panel per process. Lines: live bytes, persistent
 * bytes (a rule said they stay), pending bytes (async frees not complete yet), PyTorch's
 * allocated and reserved bytes (for a process with its caching allocator), and, in red,
 * the sites that leak (still live at the end and not meant to stay, or growing step after
 * step), largest first. The x axis is time since the start of the trace, or steps when the
 * steps come from the program (--step sync, sym:, nvtx:); the y axis is bytes in binary
 * units. No scripts, no external fonts or styles: any viewer, rsvg-convert, a browser.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "engine/series.h"
#include "engine/verdict.h"
#include "lib/units.h"
#include "output/describe.h"
#include "output/svg.h"
#include "output/report_sink.h"

#define WIDTH	   960
#define PLOT_H	   300
#define M_LEFT	   84
#define M_RIGHT	   24
#define M_TOP	   44
#define M_AXIS	   46 /* below the plot: tick labels and the axis title */
#define LEGEND_ROW 18
#define MAX_LEAKS  5

static const char *const leak_colors[MAX_LEAKS] = {"#d62728", "#e6550d", "#ad1457", "#8c2d04",
						   "#fb6a4a"};

struct line {
	double *x;
	double *y;
	size_t n;
	bool steps; /* draw as a step function (values hold until the next point) */
	const char *color;
	const char *dash; /* stroke-dasharray or NULL */
	double width;
	bool leak; /* a leaking site's: its legend in red */
	char label[400];
};

struct panel {
	struct line v[5 + 2 * MAX_LEAKS];
	int n;
	bool by_step;
	double x0, x1, ymax;
};

static void xml_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, f);
		}
	}
}

static struct line *line_new(struct panel *pn, size_t n, const char *color, double width)
{
	struct line *l;

	if (pn->n == (int)(sizeof(pn->v) / sizeof(pn->v[0])))
		return NULL;
	l = &pn->v[pn->n];
	memset(l, 0, sizeof(*l));
	l->x = calloc(n ? n : 1, sizeof(*l->x));
	l->y = calloc(n ? n : 1, sizeof(*l->y));
	if (!l->x || !l->y) {
		free(l->x);
		free(l->y);
		return NULL;
	}
	l->n = n;
	l->color = color;
	l->width = width;
	pn->n++;
	return l;
}

static void panel_free(struct panel *pn)
{
	int i;

	for (i = 0; i < pn->n; i++) {
		free(pn->v[i].x);
		free(pn->v[i].y);
	}
	pn->n = 0;
}

/* A "nice" step (1, 2 or 5 times a power of ten) giving about `ticks` ticks over span. */
static double nice_step(double span, int ticks)
{
	double raw = span / ticks, p = pow(10, floor(log10(raw))), m = raw / p;

	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* The binary unit bytes up to ymax read best in, and its name. */
static double byte_unit(double ymax, const char **name)
{
	static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double u = 1;
	int k = 0;

	while (ymax >= 1024 * u && k < 4) {
		u *= 1024;
		k++;
	}
	*name = names[k];
	return u;
}

static double sx(const struct panel *pn, double x)
{
	double span = pn->x1 > pn->x0 ? pn->x1 - pn->x0 : 1;

	return M_LEFT + (x - pn->x0) / span * (WIDTH - M_LEFT - M_RIGHT);
}

static double sy(const struct panel *pn, double top, double y)
{
	return top + M_TOP + PLOT_H - y / pn->ymax * PLOT_H;
}

static void draw_line(FILE *f, const struct panel *pn, double top, const struct line *l)
{
	size_t i;

	if (!l->n)
		return;
	/* a step function holds its last value to the end of the panel */
	fprintf(f,
		"<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\"%s%s%s "
		"stroke-linejoin=\"round\" points=\"",
		l->color, l->width, l->dash ? " stroke-dasharray=\"" : "", l->dash ? l->dash : "",
		l->dash ? "\"" : "");
	for (i = 0; i < l->n; i++) {
		if (l->steps && i)
			fprintf(f, "%.1f,%.1f ", sx(pn, l->x[i]), sy(pn, top, l->y[i - 1]));
		fprintf(f, "%.1f,%.1f ", sx(pn, l->x[i]), sy(pn, top, l->y[i]));
	}
	if (l->steps && l->x[l->n - 1] < pn->x1)
		fprintf(f, "%.1f,%.1f ", sx(pn, pn->x1), sy(pn, top, l->y[l->n - 1]));
	fputs("\"/>\n", f);
}

static void draw_axes(FILE *f, const struct panel *pn, double top)
{
	const char *uname;
	double u = byte_unit(pn->ymax, &uname), ys = nice_step(pn->ymax / u, 5) * u;
	double xs = nice_step(pn->x1 - pn->x0 > 0 ? pn->x1 - pn->x0 : 1, 8), v;
	double bottom = top + M_TOP + PLOT_H;

	fprintf(f, "<g font-size=\"11\" fill=\"#333\">\n");
	for (v = 0; v <= pn->ymax * 1.0001; v += ys) {
		double y = sy(pn, top, v);

		fprintf(f,
			"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
			"stroke=\"#e5e5e5\"/>\n",
			M_LEFT, y, WIDTH - M_RIGHT, y);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g %s</text>\n",
			M_LEFT - 6, y + 4, v / u, uname);
	}
	for (v = ceil(pn->x0 / xs) * xs; v <= pn->x1 + xs * 1e-6; v += xs) {
		double x = sx(pn, v);

		if (fabs(v) < xs * 1e-6)
			v = 0; /* not "-0" */

		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#999\"/>\n",
			x, bottom, x, bottom + 4);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g%s</text>\n", x,
			bottom + 16, v, pn->by_step ? "" : " s");
	}
	fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\"/>\n", M_LEFT,
		bottom, WIDTH - M_RIGHT, bottom);
	fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\"/>\n", M_LEFT,
		top + M_TOP, M_LEFT, bottom);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
		(double)(M_LEFT + WIDTH - M_RIGHT) / 2, bottom + 34,
		pn->by_step ? "step" : "time since the trace began (s)");
	fprintf(f,
		"<text transform=\"translate(14,%.1f) rotate(-90)\" text-anchor=\"middle\">"
		"bytes</text>\n</g>\n",
		top + M_TOP + PLOT_H / 2.0);
}

/* The leaking sites to highlight, largest first: growth leaks, then live leaks. */
static size_t leaking_sites(const struct tracker *t, const struct proc_verdict *pv, uint32_t *out)
{
	const struct site_list *l = &pv->sites[VERDICT_LEAKS];
	size_t n = 0, i, j;

	for (i = 0; i < pv->nr_growth && n < MAX_LEAKS; i++)
		out[n++] = pv->growth[i].site;
	for (i = 0; i < l->n && n < MAX_LEAKS; i++) {
		bool taken = false;

		for (j = 0; j < n; j++)
			taken |= out[j] == l->v[i];
		if (!taken && t->sites[l->v[i]].live_bytes)
			out[n++] = l->v[i];
	}
	return n;
}

static void leak_label(struct report *r, struct line *l, uint32_t site,
		       const struct proc_verdict *pv)
{
	const struct site *s = &r->t->sites[site];
	const struct growth *g = verdict__growth_at(pv, site);
	char b[32];

	l->leak = true;
	if (g)
		snprintf(l->label, sizeof(l->label), "grows %s/step: %s (%s)",
			 fmt_bytes((uint64_t)(g->slope_per_step + 0.5), b, sizeof(b)),
			 describe__site(r, s), cat_api_name(s->api));
	else
		snprintf(l->label, sizeof(l->label), "leaks %s: %s (%s)",
			 fmt_bytes(s->live_bytes, b, sizeof(b)), describe__site(r, s),
			 cat_api_name(s->api));
}

/* PyTorch's two lines (allocated: its live blocks; reserved: its segments), n points. */
static int torch_lines(struct panel *pn, const struct proc_verdict *pv, size_t n,
		       struct line **alloc, struct line **res)
{
	*alloc = *res = NULL;
	if (!pv->torch.on)
		return 0;
	*alloc = line_new(pn, n, "#2ca02c", 2.0);
	*res = line_new(pn, n, "#9467bd", 1.5);
	if (!*alloc || !*res)
		return -ENOMEM;
	(*res)->dash = "8,3";
	snprintf((*alloc)->label, sizeof((*alloc)->label), "PyTorch allocated (live blocks)");
	snprintf((*res)->label, sizeof((*res)->label), "PyTorch reserved (segments)");
	return 0;
}

/* The process over its steps: the step records and the timeline's per-site series. */
static int by_step(struct report *r, struct panel *pn, const struct proc_verdict *pv,
		   const uint32_t *leaks, size_t nl)
{
	pid_t pid = pv->p->pid;
	static const char *const colors[3] = {"#1f77b4", "#7f7f7f", "#ff7f0e"};
	const struct step_stat *st;
	struct line *l[3], *ta, *tr;
	size_t n, i, k;

	st = timeline__steps(r->tl, pid, &n);
	for (k = 0; k < 3; k++) {
		l[k] = line_new(pn, n, colors[k], k ? 1.5 : 2.0);
		if (!l[k])
			return -ENOMEM;
		for (i = 0; i < n; i++) {
			l[k]->x[i] = (double)st[i].step;
			l[k]->y[i] = (double)(k == 0   ? st[i].live
					      : k == 1 ? st[i].persistent
						       : st[i].pending);
		}
	}
	l[2]->dash = "5,3";
	snprintf(l[0]->label, sizeof(l[0]->label), "live");
	snprintf(l[1]->label, sizeof(l[1]->label), "persistent (by rule)");
	snprintf(l[2]->label, sizeof(l[2]->label), "pending frees");
	if (torch_lines(pn, pv, n, &ta, &tr))
		return -ENOMEM;
	for (i = 0; ta && i < n; i++) {
		ta->x[i] = tr->x[i] = (double)st[i].step;
		ta->y[i] = (double)st[i].torch_allocated;
		tr->y[i] = (double)st[i].torch_reserved;
	}
	pn->by_step = true;
	pn->x0 = n ? (double)st[0].step : 0;
	pn->x1 = n ? (double)st[n - 1].step : 1;
	for (k = 0; k < nl; k++) {
		uint64_t *v;
		size_t m;
		struct line *ll;

		if (!n || timeline__site_series(r->tl, pid, leaks[k], st[0].step, &v, &m))
			continue;
		ll = line_new(pn, m, leak_colors[k], 2.5);
		if (!ll) {
			free(v);
			return -ENOMEM;
		}
		for (i = 0; i < m; i++) {
			ll->x[i] = (double)(st[0].step + (int64_t)i);
			ll->y[i] = (double)v[i];
		}
		free(v);
		leak_label(r, ll, leaks[k], pv);
	}
	return 0;
}

/* The process over time: the series sampled from the records. */
static int by_time(struct report *r, struct panel *pn, const struct series *se,
		   const struct proc_verdict *pv, uint64_t end_ns, const uint32_t *leaks, size_t nl)
{
	pid_t pid = pv->p->pid;
	static const char *const colors[3] = {"#1f77b4", "#7f7f7f", "#ff7f0e"};
	const struct series_proc *sp = series__proc(se, pid);
	size_t n = sp ? sp->n : 0, i, k;
	struct line *l[3], *ta, *tr;

	for (k = 0; k < 3; k++) {
		l[k] = line_new(pn, n, colors[k], k ? 1.5 : 2.0);
		if (!l[k])
			return -ENOMEM;
		l[k]->steps = true;
		for (i = 0; i < n; i++) {
			const struct series_point *pt = &sp->v[i];

			l[k]->x[i] =
			    pt->ts_ns > r->t0_ns ? (double)(pt->ts_ns - r->t0_ns) / 1e9 : 0;
			l[k]->y[i] = (double)(k == 0   ? pt->live
					      : k == 1 ? pt->persistent
						       : pt->pending);
		}
	}
	l[2]->dash = "5,3";
	snprintf(l[0]->label, sizeof(l[0]->label), "live");
	snprintf(l[1]->label, sizeof(l[1]->label), "persistent (by rule)");
	snprintf(l[2]->label, sizeof(l[2]->label), "pending frees");
	if (torch_lines(pn, pv, n, &ta, &tr))
		return -ENOMEM;
	for (i = 0; ta && i < n; i++) {
		ta->steps = tr->steps = true;
		ta->x[i] = tr->x[i] = l[0]->x[i];
		ta->y[i] = (double)sp->v[i].torch_allocated;
		tr->y[i] = (double)sp->v[i].torch_reserved;
	}
	pn->x0 = 0;
	pn->x1 = end_ns > r->t0_ns ? (double)(end_ns - r->t0_ns) / 1e9 : 1;
	for (k = 0; k < nl; k++) {
		const struct site_series *ss =
		    leaks[k] < se->nr_sites ? &se->sites[leaks[k]] : NULL;
		struct line *ll = line_new(pn, ss ? ss->n : 0, leak_colors[k], 2.5);

		if (!ll)
			return -ENOMEM;
		ll->steps = true;
		for (i = 0; i < ll->n; i++) {
			ll->x[i] = ss->v[i].ts_ns > r->t0_ns
				       ? (double)(ss->v[i].ts_ns - r->t0_ns) / 1e9
				       : 0;
			ll->y[i] = (double)ss->v[i].bytes;
		}
		leak_label(r, ll, leaks[k], pv);
	}
	return 0;
}

static double draw_panel(FILE *f, const struct tproc *p, struct panel *pn, double top)
{
	char b[32];
	double y;
	int i;

	pn->ymax = 0;
	for (i = 0; i < pn->n; i++) {
		size_t j;

		for (j = 0; j < pn->v[i].n; j++)
			pn->ymax = pn->v[i].y[j] > pn->ymax ? pn->v[i].y[j] : pn->ymax;
		/* a line that ends before the panel does holds its last value */
		if (pn->v[i].n && pn->v[i].x[pn->v[i].n - 1] > pn->x1)
			pn->x1 = pn->v[i].x[pn->v[i].n - 1];
	}
	if (pn->ymax < 1024)
		pn->ymax = 1024;
	pn->ymax *= 1.05;
	fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"15\" font-weight=\"bold\">", M_LEFT,
		top + 24);
	xml_str(f, p->comm[0] ? p->comm : "?");
	fprintf(f, " (pid %d): live %s at the end", p->pid, fmt_bytes(p->live_bytes, b, sizeof(b)));
	fprintf(f, "</text>\n");
	draw_axes(f, pn, top);
	for (i = pn->n - 1; i >= 0; i--)
		draw_line(f, pn, top, &pn->v[i]);
	y = top + M_TOP + PLOT_H + M_AXIS;
	for (i = 0; i < pn->n; i++, y += LEGEND_ROW) {
		fprintf(f,
			"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
			"stroke-width=\"%.1f\"%s%s%s/>\n",
			M_LEFT, y - 4, M_LEFT + 24, y - 4, pn->v[i].color, pn->v[i].width,
			pn->v[i].dash ? " stroke-dasharray=\"" : "",
			pn->v[i].dash ? pn->v[i].dash : "", pn->v[i].dash ? "\"" : "");
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"12\"%s>", M_LEFT + 32, y,
			pn->v[i].leak ? " fill=\"#b71c1c\"" : "");
		xml_str(f, pn->v[i].label);
		fputs("</text>\n", f);
	}
	return y + 10;
}

static bool steps_from_program(const struct report *r)
{
	return r->tl && timeline__opts(r->tl)->source != STEP_INTERVAL;
}

int svg__write(FILE *f, struct report *r, const struct verdict *v, const struct series *se,
	       uint64_t end_ns)
{
	const struct tracker *t = r->t;
	double top = 0;
	size_t i;
	char *body = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&body, &len);
	int err = 0;

	if (!mem)
		return -ENOMEM;
	/* Panels first, into memory: the document's height is known only after them. */
	for (i = 0; i < v->nr_procs && !err; i++) {
		const struct proc_verdict *pv = &v->procs[i];
		struct panel pn = {};
		uint32_t leaks[MAX_LEAKS];
		size_t nl = leaking_sites(t, pv, leaks);

		if (steps_from_program(r))
			err = by_step(r, &pn, pv, leaks, nl);
		else
			err = by_time(r, &pn, se, pv, end_ns, leaks, nl);
		if (!err)
			top = draw_panel(mem, pv->p, &pn, top);
		panel_free(&pn);
	}
	if (fclose(mem) || err) {
		free(body);
		return err ? err : -ENOMEM;
	}
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
		"viewBox=\"0 0 %d %.0f\" font-family=\"DejaVu Sans, Verdana, sans-serif\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		WIDTH, top > 0 ? top : 40, WIDTH, top > 0 ? top : 40);
	if (!t->nr_procs)
		fputs("<text x=\"20\" y=\"24\">no process traced</text>\n", f);
	fwrite(body, 1, len, f);
	fputs("</svg>\n", f);
	free(body);
	return ferror(f) ? -EIO : 0;
}
