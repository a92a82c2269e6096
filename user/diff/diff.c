// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The comparison of two runs (diff/diff.h): how processes and sites are paired, where two
 * processes are compared, and what fails the gate. The model the loaders fill is
 * diff_run.c's.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "diff/diff.h"
#include "lib/vec.h"

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Compare two optional strings, absent first. */
static int cmp_str(const char *a, const char *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

/* ---- names ---- */

const char *diff__match_name(enum diff_match m)
{
	switch (m) {
	case DIFF_PAIRED:
		return "paired";
	case DIFF_ONLY_BASE:
		return "only_base";
	case DIFF_ONLY_NEW:
		return "only_new";
	}
	return "?";
}

const char *diff__by_name(enum diff_by b)
{
	switch (b) {
	case DIFF_BY_SITE:
		return "site";
	case DIFF_BY_FUNCTION:
		return "function";
	case DIFF_BY_ORDER:
		return "order";
	case DIFF_BY_LABEL:
		return "label";
	case DIFF_BY_NAME:
		return "name";
	}
	return "?";
}

const char *diff__align_name(enum diff_align a)
{
	switch (a) {
	case DIFF_AT_END:
		return "end";
	case DIFF_AT_STEP:
		return "step";
	case DIFF_AT_REQUEST:
		return "request";
	}
	return "?";
}

const char *diff__caveat_name(enum diff_caveat c)
{
	switch (c) {
	case DIFF_OK:
		return NULL;
	case DIFF_NO_SERIES:
		return "no_series";
	case DIFF_INEXACT_SITES:
		return "inexact_sites";
	case DIFF_TOO_SHORT:
		return "too_short";
	}
	return "?";
}

const char *diff__gate_name(enum diff_gate_kind k)
{
	switch (k) {
	case DIFF_GATE_GROWTH:
		return "growth";
	case DIFF_GATE_LIVE:
		return "live";
	case DIFF_GATE_ENDED_EARLY:
		return "ended_early";
	case DIFF_GATE_MISSING:
		return "missing";
	case DIFF_GATE_INCOMPARABLE:
		return "incomparable";
	}
	return "?";
}

/* ---- pairing processes ---- */

/* A process ended as a run should: its exit with status 0, or tracing stopped while it ran
 * (detached, its end marker, an exec). A crash, a failure or a capture cut short did not. */
static bool clean(const struct diff_proc *p)
{
	if (!strcmp(p->state, "exited"))
		return p->exit_status == 0;
	return strcmp(p->state, "running") != 0;
}

/* Rank of each process of r: its place by pid among the processes of its command. */
static int *ranks(const struct diff_run *r)
{
	int *rk = calloc(r->nr_procs ? r->nr_procs : 1, sizeof(*rk));
	size_t i, j;

	if (!rk)
		return NULL;
	for (i = 0; i < r->nr_procs; i++)
		for (j = 0; j < r->nr_procs; j++)
			if (j != i && !strcmp(r->procs[j].comm, r->procs[i].comm) &&
			    (r->procs[j].pid < r->procs[i].pid ||
			     (r->procs[j].pid == r->procs[i].pid && j < i)))
				rk[i]++;
	return rk;
}

static ssize_t find_pid(const struct diff_run *r, pid_t pid)
{
	size_t i;

	for (i = 0; i < r->nr_procs; i++)
		if (r->procs[i].pid == pid)
			return (ssize_t)i;
	return -1;
}

bool diff__has_pid(const struct diff_run *r, pid_t pid)
{
	return find_pid(r, pid) >= 0;
}

static bool selected(const struct diff_opts *o, const struct diff_proc *p)
{
	return !o->comm || !strcmp(o->comm, p->comm);
}

/* ---- where two processes are compared ---- */

/* The index of p's first step numbered at least step (nr_series: none). */
static size_t step_index(const struct diff_proc *p, int64_t step)
{
	return VEC_BOUND(p->series, p->nr_series, step, step, false);
}

static const struct diff_step *step_at(const struct diff_proc *p, int64_t step)
{
	size_t i = step_index(p, step);

	return i < p->nr_series && p->series[i].step == step ? &p->series[i] : NULL;
}

/* The site's bytes at the end of step: its last sample up to it (none yet: nothing). */
static struct diff_sample sample_at(const struct diff_site *s, int64_t step)
{
	size_t lo = VEC_BOUND(s->samples, s->nr_samples, step, step, true);

	return lo ? s->samples[lo - 1] : (struct diff_sample){.step = step};
}

/* The most live bytes at a step end up to step (INT64_MAX: all, and the end). */
static uint64_t proc_peak(const struct diff_proc *p, int64_t step)
{
	uint64_t m = step == INT64_MAX ? p->live_bytes : 0;
	size_t i;

	for (i = 0; i < p->nr_series && p->series[i].step <= step; i++)
		if (p->series[i].live > m)
			m = p->series[i].live;
	return m;
}

static uint64_t site_peak(const struct diff_site *s, int64_t step)
{
	uint64_t m = step == INT64_MAX ? s->live_bytes : 0;
	size_t i;

	for (i = 0; i < s->nr_samples && s->samples[i].step <= step; i++)
		if (s->samples[i].live > m)
			m = s->samples[i].live;
	return m;
}

/* Sums of the series indices k in [i, j), and of their squares: closed forms. */
static double sum_x(size_t i, size_t j)
{
	return ((double)j * ((double)j - 1) - (double)i * ((double)i - 1)) / 2;
}

static double sq_upto(size_t m) /* 0^2 + ... + (m-1)^2 */
{
	return ((double)m - 1) * (double)m * (2 * (double)m - 1) / 6;
}

static double sum_xx(size_t i, size_t j)
{
	return sq_upto(j) - sq_upto(i);
}

/*
 * Least-squares slope of the site's live bytes not retained at the end of p's steps from..to,
 * in bytes per step (to a tenth). The x of a step is its place in the series, not its number:
 * a run that numbers its steps with gaps (an iteration id) grows per step all the same. The
 * value holds from one sample to the next, so each sample adds its run of steps in closed
 * form: work in the site's samples (and a search), never in the step numbers between. false
 * with fewer than two steps.
 */
static bool fit(const struct diff_proc *p, const struct diff_site *s, int64_t from, int64_t to,
		double *slope)
{
	size_t i0 = step_index(p, from), i1 = step_index(p, to), j, k;
	double n, sx, sxx, sy = 0, sxy = 0, d;

	if (i1 < p->nr_series && p->series[i1].step == to)
		i1++; /* [i0, i1): the steps of from..to */
	if (to - from < 1 || i1 <= i0 + 1)
		return false;
	n = (double)(i1 - i0);
	sx = sum_x(i0, i1);
	sxx = sum_xx(i0, i1);
	/* The sample in force at step from: the last at or before it. */
	for (j = 0, k = s->nr_samples; j < k;) {
		size_t mid = (j + k) / 2;

		if (s->samples[mid].step <= from)
			j = mid + 1;
		else
			k = mid;
	}
	j = j ? j - 1 : 0;
	for (; j < s->nr_samples && s->samples[j].step <= to; j++) {
		size_t a = step_index(p, s->samples[j].step), e;
		double y = (double)s->samples[j].leaked;

		e = j + 1 < s->nr_samples ? step_index(p, s->samples[j + 1].step) : i1;
		if (a < i0)
			a = i0;
		if (e > i1)
			e = i1;
		if (e <= a)
			continue;
		sy += y * (double)(e - a);
		sxy += y * sum_x(a, e);
	}
	d = n * sxx - sx * sx;
	*slope = d ? diff__tenth((n * sxy - sx * sy) / d) : 0;
	return true;
}

/*
 * Where a fit of p compared at step `at` starts: after the warm-up's steps (counted, not
 * numbered: numbers may leave gaps), if that leaves two steps.
 */
static int64_t fit_from(const struct diff_proc *p, int64_t at, int64_t warmup)
{
	size_t w = warmup > 0 ? (size_t)warmup : 0;

	if (!p->nr_series)
		return 0;
	return w < p->nr_series && p->series[w].step < at ? p->series[w].step : p->series[0].step;
}

/* The first step of p where it had completed `requests` requests, or INT64_MIN. */
static int64_t request_step(const struct diff_proc *p, uint64_t requests)
{
	size_t i;

	for (i = 0; i < p->nr_series; i++)
		if (p->series[i].requests >= requests)
			return p->series[i].step;
	return INT64_MIN;
}

/* Where pp compares: at the end, or a step in each; caveat says why not where it should. */
static void align(struct diff_proc_pair *pp, const struct diff_opts *o)
{
	const struct diff_proc *b = pp->b, *n = pp->n;
	int64_t last_b, last_n, first;
	uint64_t r;

	pp->align = DIFF_AT_END;
	if (o->by_request && b->requests && n->requests &&
	    (pp->steps_differ || pp->clean_b != pp->clean_n || b->requests != n->requests)) {
		r = b->requests < n->requests ? b->requests : n->requests;
		pp->step_b = request_step(b, r);
		pp->step_n = request_step(n, r);
		if (pp->step_b == INT64_MIN || pp->step_n == INT64_MIN || b->series_cut ||
		    n->series_cut) {
			pp->caveat = DIFF_NO_SERIES;
			return;
		}
		pp->align = DIFF_AT_REQUEST;
		pp->requests_at = r;
		return;
	}
	if (!pp->steps_differ && pp->clean_b == pp->clean_n)
		return;
	if (!b->nr_series || !n->nr_series || b->series_cut || n->series_cut) {
		pp->caveat = DIFF_NO_SERIES;
		return;
	}
	/* The last step is the tail (what ran after its last boundary: a shutdown, a crash):
	 * compare at the last step both completed, the one before each tail (by place: step
	 * numbers may leave gaps). */
	if (b->nr_series < 2 || n->nr_series < 2) {
		pp->caveat = DIFF_TOO_SHORT;
		return;
	}
	last_b = b->series[b->nr_series - 2].step;
	last_n = n->series[n->nr_series - 2].step;
	first = b->series[0].step > n->series[0].step ? b->series[0].step : n->series[0].step;
	pp->step_b = pp->step_n = last_b < last_n ? last_b : last_n;
	if (pp->step_b < first || !step_at(b, pp->step_b) || !step_at(n, pp->step_n)) {
		pp->caveat = DIFF_TOO_SHORT;
		return;
	}
	pp->align = DIFF_AT_STEP;
}

static struct diff_val val(double b, double n)
{
	return (struct diff_val){.known = true, .base = b, .new = n};
}

static double delta(const struct diff_val *v)
{
	return v->known ? v->new - v->base : 0;
}

/* ---- pairing sites ---- */

/* How sites group: labelled ones by API and label, others by API, function and module;
 * without a function by module and exact offset; without either by name. */
static int group(const struct diff_site *s)
{
	if (s->label)
		return 0;
	if (s->func)
		return 1;
	if (s->module && s->has_off)
		return 2;
	return 3;
}

static int cmp_group(const struct diff_site *x, const struct diff_site *y)
{
	int gx = group(x), gy = group(y), c;

	if (gx != gy)
		return gx - gy;
	c = strcmp(x->api, y->api);
	if (c)
		return c;
	switch (gx) {
	case 0:
		return strcmp(x->label, y->label);
	case 1:
		c = strcmp(x->func, y->func);
		return c ? c : cmp_str(x->module, y->module);
	case 2:
		c = strcmp(x->module, y->module);
		return c ? c : (x->off != y->off ? (x->off < y->off ? -1 : 1) : 0);
	default:
		return strcmp(x->name, y->name);
	}
}

/* Within a group: by function, module, then offset. */
static int cmp_within(const struct diff_site *x, const struct diff_site *y)
{
	int c = cmp_group(x, y);

	if (c)
		return c;
	c = cmp_str(x->func, y->func);
	if (!c)
		c = cmp_str(x->module, y->module);
	if (!c && x->has_off != y->has_off)
		c = x->has_off ? 1 : -1;
	if (!c && x->off != y->off)
		c = x->off < y->off ? -1 : 1;
	return c ? c : strcmp(x->name, y->name);
}

static int cmp_site_ptr(const void *a, const void *b)
{
	return cmp_within(*(const struct diff_site *const *)a, *(const struct diff_site *const *)b);
}

/* The sites of p compared against the other run: all, or what NDJSON would list. */
static const struct diff_site **candidates(const struct diff_proc *p, bool visible_only, size_t *n)
{
	const struct diff_site **v = calloc(p->nr_sites ? p->nr_sites : 1, sizeof(*v));
	size_t i;

	*n = 0;
	if (!v)
		return NULL;
	for (i = 0; i < p->nr_sites; i++)
		if (!visible_only || p->sites[i].visible)
			v[(*n)++] = &p->sites[i];
	qsort(v, *n, sizeof(*v), cmp_site_ptr);
	return v;
}

static bool same_place(const struct diff_site *x, const struct diff_site *y)
{
	return same_str(x->func, y->func) && same_str(x->module, y->module);
}

/* Pair the sites of one group, b[0..nb) with n[0..nn), into out (what is paired marked). */
static void pair_group(const struct diff_site **b, size_t nb, const struct diff_site **n, size_t nn,
		       bool *used_b, bool *used_n, struct diff_site_pair *out, size_t *nout)
{
	size_t i, j, k, cb, cn;
	int g = group(b[0]);

	/* 1. the same place and offset (or name) */
	for (i = 0; i < nb; i++)
		for (j = 0; j < nn && !used_b[i]; j++)
			if (!used_n[j] && same_place(b[i], n[j]) &&
			    b[i]->has_off == n[j]->has_off && b[i]->off == n[j]->off &&
			    (g != 3 || !strcmp(b[i]->name, n[j]->name))) {
				used_b[i] = used_n[j] = true;
				out[(*nout)++] = (struct diff_site_pair){
				    .b = b[i],
				    .n = n[j],
				    .by = g == 3 ? DIFF_BY_NAME : DIFF_BY_SITE};
			}
	if (g >= 2)
		return;
	/* 2. the same place, the offset moved: in offset order (both are sorted so); "by order"
	 * when the place had several sites left on a side after 1 */
	for (i = 0; i < nb; i++) {
		if (used_b[i] || (i && !used_b[i - 1] && same_place(b[i - 1], b[i])))
			continue;
		for (cb = 0, j = i; j < nb; j++)
			cb += !used_b[j] && same_place(b[i], b[j]);
		for (cn = 0, j = 0; j < nn; j++)
			cn += !used_n[j] && same_place(b[i], n[j]);
		for (k = i, j = 0; k < nb && j < nn; k++) {
			if (used_b[k] || !same_place(b[i], b[k]))
				continue;
			while (j < nn && (used_n[j] || !same_place(b[i], n[j])))
				j++;
			if (j == nn)
				break;
			used_b[k] = used_n[j] = true;
			out[(*nout)++] = (struct diff_site_pair){
			    .b = b[k],
			    .n = n[j],
			    .by = cb == 1 && cn == 1 ? DIFF_BY_FUNCTION : DIFF_BY_ORDER};
		}
	}
	if (g != 0)
		return;
	/* 3. labelled: the same label from another function, in order */
	for (i = 0, j = 0; i < nb; i++) {
		if (used_b[i])
			continue;
		while (j < nn && used_n[j])
			j++;
		if (j == nn)
			break;
		used_b[i] = used_n[j] = true;
		out[(*nout)++] = (struct diff_site_pair){.b = b[i], .n = n[j], .by = DIFF_BY_LABEL};
	}
}

static double absd(double x)
{
	return x < 0 ? -x : x;
}

/* The numbers of one site pair, at where its processes are compared. */
static void site_values(const struct diff_proc_pair *pp, struct diff_site_pair *sp)
{
	const struct diff_site *b = sp->b, *n = sp->n;
	static const struct diff_site none;
	const struct diff_site *xb = b ? b : &none, *xn = n ? n : &none;
	bool exact = pp->b && pp->n ? pp->b->sites_exact && pp->n->sites_exact
				    : (pp->b ? pp->b : pp->n)->sites_exact;
	bool series = pp->b && pp->n ? pp->b->nr_series && pp->n->nr_series
				     : (pp->b ? pp->b : pp->n)->nr_series;
	double common;

	/* Per-site values at a step need every change of every step. */
	sp->at_end = pp->align == DIFF_AT_END || pp->caveat == DIFF_INEXACT_SITES;
	if (sp->at_end) {
		sp->live = val((double)xb->live_bytes, (double)xn->live_bytes);
		sp->leaked = val((double)xb->leaked_bytes, (double)xn->leaked_bytes);
		sp->init = val((double)xb->init_bytes, (double)xn->init_bytes);
		sp->live_count = val((double)xb->live_count, (double)xn->live_count);
		if (series && exact)
			sp->peak =
			    val((double)site_peak(xb, INT64_MAX), (double)site_peak(xn, INT64_MAX));
	} else {
		struct diff_sample sb = sample_at(xb, pp->step_b), sn = sample_at(xn, pp->step_n);

		sp->live = val((double)sb.live, (double)sn.live);
		sp->leaked = val((double)sb.leaked, (double)sn.leaked);
		sp->init = val((double)sb.init, (double)sn.init);
		sp->peak =
		    val((double)site_peak(xb, pp->step_b), (double)site_peak(xn, pp->step_n));
	}
	sp->slope = val(xb->slope, xn->slope);
	if (pp->slopes_fitted) {
		double fb = 0, fn = 0;

		sp->slope.known = fit(pp->b, xb, pp->fit_from_b, pp->step_b, &fb) &&
				  fit(pp->n, xn, pp->fit_from_n, pp->step_n, &fn);
		sp->slope.base = fb;
		sp->slope.new = fn;
	}
	/* The verdicts' bytes per request, like their slopes, hold for runs of one length. */
	if (!pp->slopes_fitted)
		sp->per_request = val(xb->per_request, xn->per_request);
	if (pp->align == DIFF_AT_END && (!b || b->has_allocs) && (!n || n->has_allocs))
		sp->allocs = val((double)xb->allocs, (double)xn->allocs);
	common =
	    pp->steps.known ? (pp->steps.base < pp->steps.new ? pp->steps.base : pp->steps.new) : 1;
	if (!pp->b || !pp->n)
		common = pp->b ? pp->steps.base : pp->steps.new;
	sp->score = absd(delta(&sp->live));
	if (absd(delta(&sp->peak)) > sp->score)
		sp->score = absd(delta(&sp->peak));
	if (absd(delta(&sp->init)) > sp->score)
		sp->score = absd(delta(&sp->init));
	if (absd(delta(&sp->slope)) * (common > 1 ? common : 1) > sp->score)
		sp->score = absd(delta(&sp->slope)) * (common > 1 ? common : 1);
	sp->changed = sp->match != DIFF_PAIRED || sp->score > 0 || delta(&sp->leaked) ||
		      delta(&sp->live_count) || delta(&sp->per_request) || delta(&sp->allocs) ||
		      (b && n && !pp->slopes_fitted && b->growing != n->growing);
}

static int cmp_site_pair(const void *a, const void *b)
{
	const struct diff_site_pair *x = a, *y = b;
	const struct diff_site *sx = x->n ? x->n : x->b, *sy = y->n ? y->n : y->b;

	if (x->changed != y->changed)
		return x->changed ? -1 : 1;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return cmp_within(sx, sy);
}

/* Pair the sites of pp's processes and give each pair its numbers. 0 or -ENOMEM. */
static int pair_sites(struct diff_proc_pair *pp, bool mixed)
{
	const struct diff_site **b = NULL, **n = NULL;
	size_t nb = 0, nn = 0, i = 0, j = 0, k, ib, jn;
	bool *used_b = NULL, *used_n = NULL;
	int err = -ENOMEM;

	if (pp->b && !(b = candidates(pp->b, mixed, &nb)))
		goto cleanup;
	if (pp->n && !(n = candidates(pp->n, mixed, &nn)))
		goto cleanup;
	used_b = calloc(nb + 1, sizeof(*used_b));
	used_n = calloc(nn + 1, sizeof(*used_n));
	pp->sites = calloc(nb + nn + 1, sizeof(*pp->sites));
	if (!used_b || !used_n || !pp->sites)
		goto cleanup;
	/* A merge of the two sorted lists, a group at a time. */
	while (i < nb && j < nn) {
		int c = cmp_group(b[i], n[j]);

		if (c < 0) {
			i++;
			continue;
		}
		if (c > 0) {
			j++;
			continue;
		}
		for (ib = i; ib < nb && !cmp_group(b[ib], b[i]); ib++)
			;
		for (jn = j; jn < nn && !cmp_group(n[jn], n[j]); jn++)
			;
		pair_group(b + i, ib - i, n + j, jn - j, used_b + i, used_n + j, pp->sites,
			   &pp->nr_sites);
		i = ib;
		j = jn;
	}
	pp->nr_paired = pp->nr_sites;
	for (k = 0; k < nb; k++)
		if (!used_b[k]) {
			pp->sites[pp->nr_sites++] =
			    (struct diff_site_pair){.match = DIFF_ONLY_BASE, .b = b[k]};
			pp->nr_only_b++;
		}
	for (k = 0; k < nn; k++)
		if (!used_n[k]) {
			pp->sites[pp->nr_sites++] =
			    (struct diff_site_pair){.match = DIFF_ONLY_NEW, .n = n[k]};
			pp->nr_only_n++;
		}
	for (k = 0; k < pp->nr_sites; k++) {
		site_values(pp, &pp->sites[k]);
		pp->nr_unchanged += !pp->sites[k].changed;
	}
	qsort(pp->sites, pp->nr_sites, sizeof(*pp->sites), cmp_site_pair);
	err = 0;
cleanup:
	free(b);
	free(n);
	free(used_b);
	free(used_n);
	return err;
}

/* ---- the numbers of a process pair, and its gate ---- */

static double per_step(uint64_t v, size_t steps)
{
	return steps ? (double)v / (double)steps : 0;
}

/*
 * What p allocated before its first step (step -1: start-up, weights), left out of its
 * per-step averages, and whether it has that step (then one fewer step to average over).
 */
static const struct diff_step *before_steps(const struct diff_proc *p)
{
	static const struct diff_step none;

	return p->nr_series && p->series[0].step < 0 ? &p->series[0] : &none;
}

/* v (cumulative at step `upto`, counted from 1) less the start-up's, over the steps after. */
static double avg_after_start(const struct diff_proc *p, uint64_t v, uint64_t start_v, size_t steps)
{
	bool has = p->nr_series && p->series[0].step < 0;

	if (has && steps)
		return per_step(v >= start_v ? v - start_v : 0, steps - 1);
	return per_step(v, steps);
}

static uint64_t step_cached(const struct diff_step *s)
{
	return s->torch_reserved > s->torch_allocated ? s->torch_reserved - s->torch_allocated : 0;
}

/* What PyTorch's cache held at step s of p (0 without PyTorch blocks). */
static double torch_cache(const struct diff_proc *p, const struct diff_step *s)
{
	return p->torch && s ? (double)step_cached(s) : 0;
}

/*
 * PyTorch's buckets where the pair is compared: the verdicts' at the end; at a step allocated
 * and reserved from the step series and cached as their difference (as the verdict's own),
 * outside unknown there. A side without PyTorch blocks has 0 of
 * each; one whose input does not say (an old NDJSON verdict) makes them unknown.
 */
static void torch_values(struct diff_proc_pair *pp, const struct diff_proc *b,
			 const struct diff_proc *n)
{
	const struct diff_step *sb, *sn;

	pp->torch = b->torch || n->torch;
	if (!pp->torch || (pp->b && !b->torch_known) || (pp->n && !n->torch_known))
		return;
	if (pp->align == DIFF_AT_END) {
		pp->torch_allocated = val((double)b->torch_allocated, (double)n->torch_allocated);
		pp->torch_reserved = val((double)b->torch_reserved, (double)n->torch_reserved);
		pp->torch_cached = val((double)b->torch_cached, (double)n->torch_cached);
		pp->torch_outside = val((double)b->torch_outside, (double)n->torch_outside);
		return;
	}
	sb = step_at(b, pp->step_b);
	sn = step_at(n, pp->step_n);
	if (!sb || !sn)
		return;
	pp->torch_allocated = val((double)sb->torch_allocated, (double)sn->torch_allocated);
	pp->torch_reserved = val((double)sb->torch_reserved, (double)sn->torch_reserved);
	pp->torch_cached = val((double)step_cached(sb), (double)step_cached(sn));
}

static void proc_values(struct diff_proc_pair *pp, const struct diff_opts *o)
{
	static const struct diff_proc none = {.sites_exact = true};
	const struct diff_proc *b = pp->b ? pp->b : &none, *n = pp->n ? pp->n : &none;
	const struct diff_step *sb, *sn;
	size_t k;

	pp->clean_b = !pp->b || clean(b);
	pp->clean_n = !pp->n || clean(n);
	pp->steps = val((double)b->steps, (double)n->steps);
	pp->requests = val((double)b->requests, (double)n->requests);
	if (pp->b && pp->n) {
		pp->steps_differ = b->steps != n->steps;
		pp->sources_differ = strcmp(b->step_source, n->step_source) != 0;
		align(pp, o);
	}
	pp->growth = val(b->growth_per_step, n->growth_per_step);
	pp->growth_sites = val((double)b->growth_sites, (double)n->growth_sites);
	pp->alloc_bytes_per_step =
	    val(avg_after_start(b, b->alloc_bytes, before_steps(b)->alloc_bytes, b->steps),
		avg_after_start(n, n->alloc_bytes, before_steps(n)->alloc_bytes, n->steps));
	pp->allocs_per_step = val(avg_after_start(b, b->allocs, before_steps(b)->allocs, b->steps),
				  avg_after_start(n, n->allocs, before_steps(n)->allocs, n->steps));
	torch_values(pp, b, n);
	if (pp->align == DIFF_AT_END) {
		pp->live = val((double)b->live_bytes, (double)n->live_bytes);
		pp->leaked = val((double)b->leaked_bytes, (double)n->leaked_bytes);
		pp->init = val((double)b->init_bytes, (double)n->init_bytes);
		pp->persistent = val((double)b->persistent_bytes, (double)n->persistent_bytes);
		pp->pending = val((double)b->pending_bytes, (double)n->pending_bytes);
		if ((!pp->b || b->nr_series) && (!pp->n || n->nr_series))
			pp->peak =
			    val((double)proc_peak(b, INT64_MAX), (double)proc_peak(n, INT64_MAX));
		return;
	}
	/* At a step: the process's live bytes from its steps, the rest summed over its sites,
	 * which holds only when the sites' series have every change. Allocation per step over
	 * the steps up to it. */
	sb = step_at(b, pp->step_b);
	sn = step_at(n, pp->step_n);
	pp->live = val((double)sb->live, (double)sn->live);
	pp->alloc_bytes_per_step =
	    val(avg_after_start(b, sb->alloc_bytes, before_steps(b)->alloc_bytes,
				(size_t)(sb - b->series) + 1),
		avg_after_start(n, sn->alloc_bytes, before_steps(n)->alloc_bytes,
				(size_t)(sn - n->series) + 1));
	pp->allocs_per_step = val(
	    avg_after_start(b, sb->allocs, before_steps(b)->allocs, (size_t)(sb - b->series) + 1),
	    avg_after_start(n, sn->allocs, before_steps(n)->allocs, (size_t)(sn - n->series) + 1));
	pp->peak = val((double)proc_peak(b, pp->step_b), (double)proc_peak(n, pp->step_n));
	if (!b->sites_exact || !n->sites_exact) {
		pp->caveat = DIFF_INEXACT_SITES;
		return;
	}
	pp->leaked = val(0, 0);
	pp->init = val(0, 0);
	for (k = 0; k < b->nr_sites; k++) {
		struct diff_sample s = sample_at(&b->sites[k], pp->step_b);

		pp->leaked.base += (double)s.leaked;
		pp->init.base += (double)s.init;
	}
	for (k = 0; k < n->nr_sites; k++) {
		struct diff_sample s = sample_at(&n->sites[k], pp->step_n);

		pp->leaked.new += (double)s.leaked;
		pp->init.new += (double)s.init;
	}
	/* PyTorch's blocks are inside its segments, which the live bytes have: what its cache
	 * holds besides them is no rule's. */
	pp->persistent = val(pp->live.base - pp->leaked.base - pp->init.base - torch_cache(b, sb),
			     pp->live.new - pp->leaked.new - pp->init.new - torch_cache(n, sn));
	/* Growth over the same steps: the fit is linear, so the process's is its sites' sum. */
	pp->fit_from_b = fit_from(b, pp->step_b, o->warmup_steps);
	pp->fit_from_n = fit_from(n, pp->step_n, o->warmup_steps);
	pp->slopes_fitted = true;
	pp->growth = val(0, 0);
	for (k = 0; k < b->nr_sites; k++) {
		double f;

		if (!fit(b, &b->sites[k], pp->fit_from_b, pp->step_b, &f)) {
			pp->growth.known = false;
			break;
		}
		pp->growth.base += f;
	}
	for (k = 0; pp->growth.known && k < n->nr_sites; k++) {
		double f;

		if (!fit(n, &n->sites[k], pp->fit_from_n, pp->step_n, &f)) {
			pp->growth.known = false;
			break;
		}
		pp->growth.new += f;
	}
	if (!b->nr_sites || !n->nr_sites)
		pp->growth.known = step_index(b, pp->step_b) > step_index(b, pp->fit_from_b) &&
				   step_index(n, pp->step_n) > step_index(n, pp->fit_from_n);
}

/* The site pair whose number f changed most upwards, or NULL. */
static const struct diff_site_pair *most(const struct diff_proc_pair *pp, bool slope)
{
	const struct diff_site_pair *best = NULL;
	double bd = 0;
	size_t i;

	for (i = 0; i < pp->nr_sites; i++) {
		const struct diff_site_pair *sp = &pp->sites[i];
		double d = slope ? delta(&sp->slope) : delta(&sp->leaked);

		if (d > bd) {
			bd = d;
			best = sp;
		}
	}
	return best;
}

static int add_gate(struct diff_proc_pair *pp, enum diff_gate_kind kind, double amount,
		    uint64_t limit, const struct diff_site_pair *site)
{
	struct diff_gate_violation *v = realloc(pp->gate, (pp->nr_gate + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	pp->gate = v;
	v[pp->nr_gate++] = (struct diff_gate_violation){
	    .kind = kind, .amount = amount, .limit = limit, .site = site};
	return 0;
}

/* What of pp fails the gate's limits. Slopes are compared to a tenth of a byte per step, the
 * precision of NDJSON verdicts. */
static int judge(struct diff_proc_pair *pp, const struct diff_gate_opts *g)
{
	double dg = delta(&pp->growth), dl = delta(&pp->leaked);
	int err = 0;

	if (pp->match == DIFF_ONLY_BASE)
		return add_gate(pp, DIFF_GATE_MISSING, 0, 0, NULL);
	if (pp->sources_differ)
		err = add_gate(pp, DIFF_GATE_INCOMPARABLE, 0, 0, NULL);
	if (!err && !pp->growth.known)
		err = add_gate(pp, DIFF_GATE_INCOMPARABLE, 0, 0, NULL);
	if (!err && dg > (double)g->max_growth_increase + 0.05)
		err = add_gate(pp, DIFF_GATE_GROWTH, dg, g->max_growth_increase, most(pp, true));
	if (!err && pp->clean_b && !pp->clean_n)
		err = add_gate(pp, DIFF_GATE_ENDED_EARLY, 0, 0, NULL);
	if (!err && g->has_max_live) {
		if (!pp->leaked.known || pp->caveat != DIFF_OK)
			err = add_gate(pp, DIFF_GATE_INCOMPARABLE, 0, 0, NULL);
		else if (dl > (double)g->max_live_increase)
			err =
			    add_gate(pp, DIFF_GATE_LIVE, dl, g->max_live_increase, most(pp, false));
	}
	return err;
}

/* ---- the comparison ---- */

static int cmp_proc_pair(const void *a, const void *b)
{
	const struct diff_proc_pair *x = a, *y = b;
	int c = strcmp(x->comm, y->comm);

	if (c)
		return c;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return (int)x->match - (int)y->match;
}

static struct diff_proc_pair *add_pair(struct diff_result *r, size_t *cap)
{
	struct diff_proc_pair *pp;

	if (vec_grow((void **)&r->procs, cap, r->nr_procs, sizeof(*r->procs)))
		return NULL;
	pp = &r->procs[r->nr_procs++];
	memset(pp, 0, sizeof(*pp));
	return pp;
}

/* The process of r of this command and rank, or NULL. */
static const struct diff_proc *find_rank(const struct diff_run *r, const int *rk, const char *comm,
					 int rank)
{
	size_t i;

	for (i = 0; i < r->nr_procs; i++)
		if (rk[i] == rank && !strcmp(r->procs[i].comm, comm))
			return &r->procs[i];
	return NULL;
}

/* The one pair --pid-base and/or --pid-new choose; the other side by command and rank. */
static int pair_chosen(struct diff_result *r, const int *rb, const int *rn, size_t *cap)
{
	const struct diff_run *base = r->base, *new = r->new;
	ssize_t fb = r->o.pid_base ? find_pid(base, r->o.pid_base) : -1;
	ssize_t fn = r->o.pid_new ? find_pid(new, r->o.pid_new) : -1;
	struct diff_proc_pair *pp;

	if ((r->o.pid_base && fb < 0) || (r->o.pid_new && fn < 0))
		return -ESRCH;
	pp = add_pair(r, cap);
	if (!pp)
		return -ENOMEM;
	pp->b = fb >= 0 ? &base->procs[fb] : find_rank(base, rb, new->procs[fn].comm, rn[fn]);
	pp->n = fn >= 0 ? &new->procs[fn] : find_rank(new, rn, base->procs[fb].comm, rb[fb]);
	pp->comm = pp->b ? pp->b->comm : pp->n->comm;
	pp->rank = pp->b ? rb[pp->b - base->procs] : rn[pp->n - new->procs];
	pp->match = pp->b && pp->n ? DIFF_PAIRED : pp->b ? DIFF_ONLY_BASE : DIFF_ONLY_NEW;
	return 0;
}

/* Which processes to compare, and with which: into r->procs. 0, -ENOMEM, or -ESRCH when a
 * chosen pid is not in its run. */
static int pair_procs(struct diff_result *r, const int *rb, const int *rn)
{
	const struct diff_run *base = r->base, *new = r->new;
	const struct diff_opts *o = &r->o;
	struct diff_proc_pair *pp;
	size_t i, j, cap = 0;
	bool *used_n;

	if (o->pid_base || o->pid_new)
		return pair_chosen(r, rb, rn, &cap);
	used_n = calloc(new->nr_procs + 1, sizeof(*used_n));
	if (!used_n)
		return -ENOMEM;
	for (i = 0; i < base->nr_procs; i++) {
		const struct diff_proc *b = &base->procs[i];

		if (!selected(o, b))
			continue;
		pp = add_pair(r, &cap);
		if (!pp)
			goto nomem;
		pp->b = b;
		pp->comm = b->comm;
		pp->rank = rb[i];
		pp->match = DIFF_ONLY_BASE;
		for (j = 0; j < new->nr_procs; j++) {
			if (used_n[j] || rn[j] != rb[i] || strcmp(new->procs[j].comm, b->comm))
				continue;
			pp->n = &new->procs[j];
			pp->match = DIFF_PAIRED;
			used_n[j] = true;
			break;
		}
	}
	for (j = 0; j < new->nr_procs; j++) {
		if (used_n[j] || !selected(o, &new->procs[j]))
			continue;
		pp = add_pair(r, &cap);
		if (!pp)
			goto nomem;
		pp->n = &new->procs[j];
		pp->comm = pp->n->comm;
		pp->rank = rn[j];
		pp->match = DIFF_ONLY_NEW;
	}
	free(used_n);
	return 0;
nomem:
	free(used_n);
	return -ENOMEM;
}

int diff__compare(const struct diff_run *base, const struct diff_run *new,
		  const struct diff_opts *o, struct diff_result **out)
{
	struct diff_result *r = calloc(1, sizeof(*r));
	int *rb = ranks(base), *rn = ranks(new);
	size_t i;
	int err = -ENOMEM;

	*out = NULL;
	if (!r || !rb || !rn)
		goto cleanup;
	r->base = base;
	r->new = new;
	r->o = *o;
	r->mixed = base->source != new->source;
	err = pair_procs(r, rb, rn);
	if (err)
		goto cleanup;
	if (r->nr_procs)
		qsort(r->procs, r->nr_procs, sizeof(*r->procs), cmp_proc_pair);
	for (i = 0; i < r->nr_procs; i++) {
		struct diff_proc_pair *pp = &r->procs[i];

		proc_values(pp, o);
		err = pair_sites(pp, r->mixed);
		if (!err)
			err = judge(pp, &o->gate);
		if (err)
			goto cleanup;
		r->nr_paired += pp->match == DIFF_PAIRED;
		r->nr_only_b += pp->match == DIFF_ONLY_BASE;
		r->nr_only_n += pp->match == DIFF_ONLY_NEW;
		r->regression |= o->gate.on && pp->nr_gate;
	}
	*out = r;
	r = NULL;
cleanup:
	diff_result__free(r);
	free(rb);
	free(rn);
	return err;
}

void diff_result__free(struct diff_result *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nr_procs; i++) {
		free(r->procs[i].sites);
		free(r->procs[i].gate);
	}
	free(r->procs);
	free(r);
}
