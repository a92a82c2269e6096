// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "output/graph.h"
#include "probe/catalog.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"
#include "engine/query.h"
#include "lib/term.h"
#include "lib/units.h"
#include "lib/vec.h"

#define NONE UINT32_MAX

struct node {
	char *label;
	uint64_t bytes, count;
	uint32_t first_child, next;
};

/* A tree of labels; node 0 is the root (no label). */
struct graph {
	struct node *v;
	size_t n, cap;
	bool unreliable; /* a "? " frame is in it */
	bool truncated;
};

/* One path from the outermost label to the leaf; labels owned. */
struct path {
	char *v[STACK_MAX_FRAMES + 4];
	int n;
	bool unreliable, truncated;
};

enum label_style {
	LABEL_TREE,   /* "func (module)", the call site as "func+0xoff (module)" */
	LABEL_FOLDED, /* "func": frames of one function merge, as flame graphs want */
};

static void path_free(struct path *p)
{
	while (p->n)
		free(p->v[--p->n]);
}

/* Append a label (NULL: out of memory, remembered as a failed path). */
static int path_add(struct path *p, char *label)
{
	if (!label)
		return -ENOMEM;
	if (p->n == (int)(sizeof(p->v) / sizeof(p->v[0]))) {
		free(label);
		return 0;
	}
	p->v[p->n++] = label;
	return 0;
}

static char *frame_label(struct symbolizer *sym, pid_t pid, uint64_t addr, bool site,
			 bool unreliable, enum label_style style)
{
	const struct sym_info *si = symbolizer__info(sym, pid, addr);
	const char *q = unreliable ? "? " : "";
	char *out = NULL;
	int n;

	/* A Python frame keeps its line, as py-spy's stacks do: "decode (model.py:30)". */
	if (si && si->python)
		n = asprintf(&out, "%s%s", q, symbolizer__name(sym, pid, addr));
	else if (si && si->func && style == LABEL_FOLDED)
		n = asprintf(&out, "%s%s", q, si->func);
	else if (si && si->func && !site)
		n = asprintf(&out, "%s%s (%s)", q, si->func, si->module ? si->module : "?");
	else
		n = asprintf(&out, "%s%s", q, symbolizer__name(sym, pid, addr));
	return n < 0 ? NULL : out;
}

/* The allocating API, with the layers its calls went through: "cudaMalloc → cuMemAlloc_v2". */
static char *leaf_label(const struct tracker *t, uint32_t idx)
{
	const struct site *s = &t->sites[idx];
	char buf[256];
	size_t o, i;

	o = (size_t)snprintf(buf, sizeof(buf), "%s", cat_api_name(s->api));
	if (s->layer_count && o < sizeof(buf))
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, " \u2192 %s",
				      cat_api_name(s->layer_api));
	for (i = 0; i < t->nr_sites && o < sizeof(buf); i++) {
		const struct site *l = &t->sites[i];

		if (l->owner_kind == OWNER_LAYER && l->owner == idx && l->live_count &&
		    !strstr(buf, cat_api_name(l->api)))
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, " \u2192 %s",
					      cat_api_name(l->api));
	}
	return strdup(buf);
}

/* Memory layer of a site: the first level of the tree. */
static char *group_label(const struct tracker *t, const struct site *s)
{
	const char *layer;
	char dev[16], *out = NULL;
	int n;

	if (s->owner_kind == OWNER_DEVICE) {
		const struct tobj *o = query__owner(t, s);

		if (o && o->label)
			n = asprintf(&out, "WebGPU device wgpu#%u \"%s\"", o->ordinal,
				     tracker__label(t, o->label));
		else
			n = asprintf(&out, "WebGPU device wgpu#%u", o ? o->ordinal : 0);
		return n < 0 ? NULL : out;
	}
	switch (GL_API_FAMILY(s->api)) {
	case GL_FAM_CUDART:
		layer = "CUDA runtime";
		break;
	case GL_FAM_CUDA:
		layer = "CUDA driver";
		break;
	case GL_FAM_VMM:
		layer = "CUDA VMM";
		break;
	case GL_FAM_NCCL:
		layer = "NCCL";
		break;
	case GL_FAM_LIBC:
		layer = "C library";
		break;
	case GL_FAM_PYTORCH:
		layer = "PyTorch caching allocator";
		break;
	default:
		layer = cat_family_name(GL_API_FAMILY(s->api));
		break;
	}
	if (s->device < 0)
		snprintf(dev, sizeof(dev), "host");
	else
		snprintf(dev, sizeof(dev), "device %d", s->device);
	if (s->owner_kind == OWNER_COMM)
		n = asprintf(&out, "%s: NCCL communicator 0x%" PRIx64 " (%s)", dev, s->owner,
			     layer);
	else if (s->owner_kind == OWNER_CTX)
		n = asprintf(&out, "%s: %s, context 0x%" PRIx64, dev, layer, s->owner);
	else if (s->owner_kind == OWNER_GRAPH)
		n = asprintf(&out, "%s: CUDA graph memory (%s)", dev, layer);
	else
		n = asprintf(&out, "%s: %s", dev, layer);
	return n < 0 ? NULL : out;
}

static bool script_at(struct symbolizer *sym, const struct ustack *st, int i)
{
	return symbolizer__script_frame(symbolizer__info(sym, st->pid, st->frames[i]));
}

/*
 * The innermost and outermost script frames (JavaScript, Python) of st, -1 without: the
 * native frames between them are the runtime's glue, folded in the tree.
 */
static void script_bounds(struct symbolizer *sym, const struct ustack *st, int *first, int *last)
{
	int i;

	*first = *last = -1;
	for (i = 0; st && i < st->nr; i++)
		if (script_at(sym, st, i)) {
			*first = *first < 0 ? i : *first;
			*last = i;
		}
}

/*
 * The path of the allocations of sstack ss, outermost first: its stack's frames (the call
 * site alone without a stack), then the API. "[truncated]" stands for the frames cut at the
 * depth; "? " marks frames a walk without frame pointers found. In the tree (LABEL_TREE) a
 * run of two or more native frames between script frames is one "[native: N frames]" (the
 * folded and NDJSON stacks keep them), as are, in a JavaScript stack, Node's and V8's frames
 * above its outermost script frame; a JavaScript callback of the event loop says so above
 * that frame.
 */
static int sstack_path(const struct tracker *t, struct symbolizer *sym, const struct site_stack *ss,
		       enum label_style style, struct path *p)
{
	const struct site *s = &t->sites[ss->site];
	const struct ustack *st = symbolizer__stack(sym, s->pid, ss->stack_id, s->caller);
	int i, err = 0, first = -1, last = -1, limit = -1;
	unsigned int js = 0;

	if (!st)
		err = path_add(p, frame_label(sym, s->pid, s->caller, true, false, style));
	if (st && (st->flags & STACK_TRUNCATED)) {
		p->truncated = true;
		err = path_add(p, strdup("[truncated]"));
	} else if (st && (st->flags & STACK_NO_FP) && st->nofp_from >= st->nr) {
		/* the walk stopped at a function without a frame pointer: who called it is lost */
		p->unreliable = true;
		err = path_add(p, strdup("[callers unknown: no frame pointer]"));
	}
	if (st && style == LABEL_TREE) {
		script_bounds(sym, st, &first, &last);
		js = symbolizer__js_flags(sym, s->pid, ss->stack_id, s->caller);
		/* Node's event loop and V8's entry above a script's outermost frame fold too. */
		limit = js & STACK_JS ? st->nr : last;
	}
	for (i = st ? st->nr - 1 : -1; !err && i >= 0; i--) {
		bool q = (st->flags & STACK_NO_FP) && i >= st->nofp_from;
		int j = i;

		while (j > first && j < limit && !script_at(sym, st, j))
			j--;
		/* frames i down to j + 1 are glue */
		if (i - j >= 2) {
			char *label = NULL;
			int k;

			for (k = i; k > j; k--)
				p->unreliable |= (st->flags & STACK_NO_FP) && k >= st->nofp_from;
			err = path_add(
			    p, asprintf(&label, "[native: %d frames]", i - j) < 0 ? NULL : label);
			i = j + 1; /* the loop's step makes it the script frame */
			continue;
		}
		if ((js & STACK_JS_ASYNC) && i == last)
			err = path_add(p, strdup("[called from a callback: the caller's frames are "
						 "not on this stack]"));
		p->unreliable |= q;
		if (!err)
			err =
			    path_add(p, frame_label(sym, s->pid, st->frames[i], i == 0, q, style));
	}
	if (!err)
		err = path_add(p, leaf_label(t, ss->site));
	return err;
}

/* Whether sstack ss holds live memory of p (of any process when p is NULL). */
static bool live_memory(const struct tracker *t, const struct site_stack *ss, const struct tproc *p)
{
	const struct site *s = &t->sites[ss->site];

	/* What is judged: a caching allocator's blocks, not the segments they are in. */
	return ss->live_count && s->judged && (!p || site__of(s, p));
}

static uint32_t node_new(struct graph *g, char *label)
{
	if (vec_grow((void **)&g->v, &g->cap, g->n, sizeof(*g->v)))
		return NONE;
	g->v[g->n] = (struct node){.label = label, .first_child = NONE, .next = NONE};
	return (uint32_t)g->n++;
}

/* Add bytes and count along the path; labels move into the graph when new. */
static int graph_add(struct graph *g, struct path *p, uint64_t bytes, uint64_t count)
{
	uint32_t cur = 0, c;
	int i;

	g->v[0].bytes += bytes;
	g->v[0].count += count;
	for (i = 0; i < p->n; i++) {
		for (c = g->v[cur].first_child; c != NONE; c = g->v[c].next)
			if (!strcmp(g->v[c].label, p->v[i]))
				break;
		if (c == NONE) {
			c = node_new(g, p->v[i]);
			if (c == NONE)
				return -ENOMEM;
			p->v[i] = NULL;
			g->v[c].next = g->v[cur].first_child;
			g->v[cur].first_child = c;
		}
		g->v[c].bytes += bytes;
		g->v[c].count += count;
		cur = c;
	}
	g->unreliable |= p->unreliable;
	g->truncated |= p->truncated;
	return 0;
}

static void graph_free(struct graph *g)
{
	size_t i;

	for (i = 0; i < g->n; i++)
		free(g->v[i].label);
	free(g->v);
}

static int cmp_nodes(const void *a, const void *b, void *ctx)
{
	const struct graph *g = ctx;
	const struct node *x = &g->v[*(const uint32_t *)a];
	const struct node *y = &g->v[*(const uint32_t *)b];

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->label, y->label);
}

/* Children of n, largest first (ties by name: the same order live and offline). */
static uint32_t *children(const struct graph *g, uint32_t n, size_t *nr)
{
	uint32_t *v, c;

	*nr = 0;
	for (c = g->v[n].first_child; c != NONE; c = g->v[c].next)
		(*nr)++;
	v = malloc((*nr ? *nr : 1) * sizeof(*v));
	if (!v)
		return NULL;
	*nr = 0;
	for (c = g->v[n].first_child; c != NONE; c = g->v[c].next)
		v[(*nr)++] = c;
	qsort_r(v, *nr, sizeof(*v), cmp_nodes, (void *)g);
	return v;
}

/* indent: what the lines above leave open ("│  " per level still going on). */
static void print_node(FILE *out, const struct graph *g, uint32_t n, char *indent, size_t len,
		       size_t cap, bool last, bool top)
{
	uint32_t *v;
	size_t nr, i, add;
	char b[32];

	fprintf(out, "  %10s %6" PRIu64 "  %s%s%s\n", fmt_bytes(g->v[n].bytes, b, sizeof(b)),
		g->v[n].count, indent,
		top    ? ""
		: last ? "\u2514\u2500 "
		       : "\u251c\u2500 ",
		term_tmp(g->v[n].label));
	v = children(g, n, &nr);
	if (!v)
		return;
	add = top ? 0 : strlen(last ? "   " : "\u2502  ");
	if (len + add < cap) {
		memcpy(indent + len, top ? "" : last ? "   " : "\u2502  ", add + 1);
		for (i = 0; i < nr; i++)
			print_node(out, g, v[i], indent, len + add, cap, i + 1 == nr, false);
		indent[len] = 0;
	}
	free(v);
}

void graph__print(FILE *out, const struct tracker *t, struct symbolizer *sym,
		  const struct tproc *tp)
{
	struct graph g = {};
	uint32_t *top = NULL;
	size_t i, nr;
	char indent[4 * (STACK_MAX_FRAMES + 8)];
	bool stacks = false;

	if (node_new(&g, NULL) == NONE)
		return;
	for (i = 0; i < t->nr_sstacks; i++) {
		const struct site_stack *ss = &t->sstacks[i];
		struct path p = {};

		if (!live_memory(t, ss, tp))
			continue;
		stacks |=
		    !!symbolizer__stack(sym, tp->pid, ss->stack_id, t->sites[ss->site].caller);
		if (path_add(&p, group_label(t, &t->sites[ss->site])) ||
		    sstack_path(t, sym, ss, LABEL_TREE, &p) ||
		    graph_add(&g, &p, ss->live_bytes, ss->live_count)) {
			path_free(&p);
			goto cleanup;
		}
		path_free(&p);
	}
	/* Without stacks (--stack-depth 0) the site tables say it all. */
	if (g.v[0].first_child == NONE || !stacks)
		goto cleanup;
	fprintf(out, "allocation graph (live bytes by stack, outermost caller first):\n");
	if (g.unreliable)
		fprintf(out, "  (? = found by a frame-pointer walk through code without frame "
			     "pointers: may be wrong, callers may be missing)\n");
	fprintf(out, "  %10s %6s\n", "BYTES", "COUNT");
	top = children(&g, 0, &nr);
	for (i = 0; top && i < nr; i++) {
		indent[0] = 0;
		print_node(out, &g, top[i], indent, 0, sizeof(indent), true, true);
	}
cleanup:
	free(top);
	graph_free(&g);
}

/* A folded frame may not hold ';' (the separator) or a line break; nor, as any text of the
 * target's, a control character (escaped). */
static int put_folded(FILE *out, const char *s)
{
	char *c = strdup(s), *p;

	if (!c)
		return -ENOMEM;
	for (p = c; *p; p++)
		*p = *p == ';' ? ':' : *p == '\n' ? ' ' : *p;
	term_fputs(c, out, 0);
	free(c);
	return 0;
}

/* One folded line: "comm;outer;...;inner;api value". */
static int folded_line(FILE *out, const struct tracker *t, struct symbolizer *sym,
		       const struct site_stack *ss, uint64_t value)
{
	const struct tproc *p = query__site_proc(t, &t->sites[ss->site]);
	struct path path = {};
	int j, err;

	/* the process first, as perf's stackcollapse does */
	err = path_add(&path, strdup(p && p->comm[0] ? p->comm : "?"));
	if (!err)
		err = sstack_path(t, sym, ss, LABEL_FOLDED, &path);
	for (j = 0; !err && j < path.n; j++) {
		if (j)
			fputc(';', out);
		err = put_folded(out, path.v[j]);
	}
	if (!err)
		fprintf(out, " %" PRIu64 "\n", value);
	path_free(&path);
	return err;
}

int graph__folded(FILE *out, const struct tracker *t, struct symbolizer *sym)
{
	size_t i;
	int err = 0;

	for (i = 0; i < t->nr_sstacks && !err; i++) {
		const struct site_stack *ss = &t->sstacks[i];

		if (live_memory(t, ss, NULL) && ss->live_bytes)
			err = folded_line(out, t, sym, ss, ss->live_bytes);
	}
	if (!err && ferror(out))
		err = -EIO;
	return err;
}

int graph__folded_growth(FILE *out, const struct tracker *t, struct symbolizer *sym,
			 const struct verdict *v)
{
	size_t i, g, k;
	int err = 0;

	for (i = 0; i < v->nr_procs && !err; i++) {
		const struct proc_verdict *pv = &v->procs[i];

		for (g = 0; pv->reported && pv->growth_end && g < pv->nr_growth && !err; g++)
			for (k = 0; k < pv->growth_end[g].nr_stacks && !err; k++) {
				const struct stack_bytes *sb = &pv->growth_end[g].stacks[k];
				uint64_t per_step = (uint64_t)(sb->per_step + 0.5);

				if (per_step)
					err = folded_line(out, t, sym, &t->sstacks[sb->sstack],
							  per_step);
			}
	}
	if (!err && ferror(out))
		err = -EIO;
	return err;
}

int graph__folded_peak(FILE *out, const struct tracker *t, struct symbolizer *sym,
		       const struct verdict *v)
{
	size_t i, j, k, m;
	int err = 0;

	for (i = 0; i < v->nr_procs && !err; i++) {
		const struct proc_verdict *pv = &v->procs[i];

		for (j = 0; pv->reported && j < pv->nr_peaks && !err; j++)
			for (k = 0; k < pv->peaks[j].nr_sites && !err; k++) {
				const struct peak_site *ps = &pv->peaks[j].sites[k];

				for (m = 0; m < ps->nr_stacks && !err; m++)
					if (ps->stacks[m].bytes)
						err = folded_line(out, t, sym,
								  &t->sstacks[ps->stacks[m].sstack],
								  ps->stacks[m].bytes);
			}
	}
	if (!err && ferror(out))
		err = -EIO;
	return err;
}

void graph__print_path(FILE *out, const struct tracker *t, struct symbolizer *sym, uint32_t sstack)
{
	struct path path = {};
	int j;

	/* The site's frames without the API leaf: the tree's labels, outermost first. */
	if (sstack_path(t, sym, &t->sstacks[sstack], LABEL_TREE, &path) || path.n < 1) {
		path_free(&path);
		return;
	}
	for (j = 0; j + 1 < path.n; j++) {
		if (j)
			fputs(" \u2192 ", out);
		term_fputs(path.v[j], out, 0);
	}
	path_free(&path);
}
