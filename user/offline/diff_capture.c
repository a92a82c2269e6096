// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A capture into a diff_run (offline/diff_capture.h). While the records are analysed, each
 * closed step samples the memory sites it changed (the tracker's step_changes: all of them)
 * into the run's series; at the end the verdict gives each process and site what the NDJSON
 * verdict would say of it. A tracker site (one call site, owner, class, label) is a part of
 * one diff site (call site and label).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "capture/capture.h"
#include "offline/diff_capture.h"
#include "offline/replay.h"
#include "engine/verdict.h"
#include "lib/infile.h"
#include "lib/vec.h"
#include "output/describe.h"
#include "probe/catalog.h"
#include "symbols/symbolizer.h"

/* What the diff knows of a tracker site: its diff site, and its bytes at the last sample. */
struct part {
	bool known;
	uint32_t proc; /* index into the run's procs */
	uint32_t site; /* index into that proc's sites */
	uint64_t live;
};

struct loader {
	struct diff_run *run;
	const struct tproc **tprocs; /* per diff proc: the tracker's process */
	size_t cap_tprocs;
	struct part *parts; /* per tracker site */
	size_t cap_parts;
	int err; /* of a step hook, which cannot return one */
	bool damaged;
};

/* The diff proc of a tracker process: its index, or -ENOMEM. */
static int proc_of(struct loader *l, const struct tproc *tp)
{
	struct diff_proc *p;
	size_t i;

	for (i = l->run->nr_procs; i--;)
		if (l->tprocs[i] == tp)
			return (int)i;
	if (vec_grow((void **)&l->tprocs, &l->cap_tprocs, l->run->nr_procs, sizeof(*l->tprocs)))
		return -ENOMEM;
	p = diff_run__add_proc(l->run);
	if (!p)
		return -ENOMEM;
	p->pid = tp->pid;
	l->tprocs[l->run->nr_procs - 1] = tp;
	return (int)l->run->nr_procs - 1;
}

/* The diff site of tracker site idx in diff proc pi: its index, or -ENOMEM. */
static int site_of(struct loader *l, const struct tracker *t, struct symbolizer *sym, int pi,
		   uint32_t idx)
{
	const struct site *s = &t->sites[idx];
	const char *name;
	struct part *pt;
	size_t cap = l->cap_parts;
	int si;

	if (idx >= l->cap_parts) {
		while (cap <= idx)
			cap = cap ? 2 * cap : 1024;
		pt = realloc(l->parts, cap * sizeof(*pt));
		if (!pt)
			return -ENOMEM;
		memset(pt + l->cap_parts, 0, (cap - l->cap_parts) * sizeof(*pt));
		l->parts = pt;
		l->cap_parts = cap;
	}
	pt = &l->parts[idx];
	/* A pid reused by a new process shares the old one's sites: a part of each. */
	if (pt->known && pt->proc == (uint32_t)pi)
		return (int)pt->site;
	name = s->caller ? symbolizer__name(sym, s->pid, s->caller) : "?";
	si = diff_proc__site(&l->run->procs[pi], cat_api_name(s->api), name ? name : "?",
			     s->label ? tracker__label(t, s->label) : NULL);
	if (si < 0)
		return si;
	*pt = (struct part){.known = true, .proc = (uint32_t)pi, .site = (uint32_t)si};
	return si;
}

static void on_step(void *ctx, const struct analysis *an, struct symbolizer *sym, pid_t pid,
		    const struct step_stat *st)
{
	struct loader *l = ctx;
	const struct tracker *t = an->t;
	const struct tproc *tp = tracker__proc(an->t, pid);
	struct diff_proc *p;
	int pi, si, err = 0;
	size_t i;

	if (!tp || l->err)
		return;
	pi = proc_of(l, tp);
	if (pi < 0) {
		l->err = pi;
		return;
	}
	for (i = 0; !err && i < tp->nr_step_changes; i++) {
		uint32_t idx = tp->step_changes[i].site;
		const struct site *s = &t->sites[idx];
		int64_t d;

		/* Touched and back (a WebGPU object's memory moved on to its label's site): a site
		 * only when it holds something, or the verdict or its allocations name it. A
		 * caching allocator's segments are none: their blocks are judged, as in the verdict
		 * (the process's live bytes have them). */
		if (((idx >= l->cap_parts || !l->parts[idx].known) && !s->live_bytes) || !s->judged)
			continue;
		si = site_of(l, t, sym, pi, idx);
		if (si < 0) {
			err = si;
			break;
		}
		d = (int64_t)(s->live_bytes - l->parts[idx].live);
		l->parts[idx].live = s->live_bytes;
		if (!d)
			continue;
		p = &l->run->procs[pi];
		err = diff_site__change(l->run, p, &p->sites[si], st->step, d,
					s->cls == CLS_NONE ? d : 0, s->cls == CLS_INIT ? d : 0);
	}
	p = &l->run->procs[pi];
	if (!err)
		err = diff_proc__step(l->run, p, st->step, st->live, st->requests, st->allocs,
				      st->allocated);
	if (!err && st->torch)
		diff_proc__torch_step(p, st->step, st->torch_allocated, st->torch_reserved);
	l->err = err;
}

/* The sites of list k of pv into the diff proc pi, with what NDJSON would say of them. */
static int add_list(struct loader *l, const struct tracker *t, struct symbolizer *sym, int pi,
		    const struct proc_verdict *pv, enum verdict_list k)
{
	const struct site_list *sl = &pv->sites[k];
	size_t i;

	for (i = 0; i < sl->n; i++) {
		const struct site *s = &t->sites[sl->v[i]];
		int si = site_of(l, t, sym, pi, sl->v[i]);
		struct diff_site *d;

		if (si < 0)
			return si;
		d = &l->run->procs[pi].sites[si];
		if (k == VERDICT_PENDING) {
			if (describe__mem(s) == MEM_VA || describe__mem(s) == MEM_REG)
				continue;
			d->pending_bytes += s->pending_bytes;
			d->visible = true;
			continue;
		}
		d->visible = true;
		d->live_bytes += s->live_bytes;
		d->live_count += s->live_count;
		if (k == VERDICT_LEAKS) {
			d->leaked_bytes += s->live_bytes;
			d->leaked_count += s->live_count;
		} else if (k == VERDICT_IGNORED) {
			d->ignored_bytes += s->live_bytes;
		} else if (s->cls == CLS_INIT) {
			d->init_bytes += s->live_bytes;
			d->init_count += s->live_count;
		} else {
			d->persistent_bytes += s->live_bytes;
		}
	}
	return 0;
}

/* A reported process: its numbers as its NDJSON verdict has them, and its sites'. */
static int add_proc(struct loader *l, const struct replay_result *res,
		    const struct proc_verdict *pv)
{
	const struct tracker *t = res->an->t;
	const struct tproc *tp = pv->p;
	uint64_t end = tp->exited || tp->detached ? tp->last_ts_ns : t->last_ts_ns;
	struct diff_proc *p;
	size_t i;
	int pi = proc_of(l, tp), si, err = 0;

	if (pi < 0) {
		err = pi;
		goto cleanup;
	}
	err = add_list(l, t, res->sym, pi, pv, VERDICT_LEAKS);
	if (err)
		goto cleanup;
	err = add_list(l, t, res->sym, pi, pv, VERDICT_RETAINED);
	if (err)
		goto cleanup;
	err = add_list(l, t, res->sym, pi, pv, VERDICT_IGNORED);
	if (err)
		goto cleanup;
	err = add_list(l, t, res->sym, pi, pv, VERDICT_PENDING);
	if (err)
		goto cleanup;
	for (i = 0; i < pv->nr_growth; i++) {
		const struct growth *g = &pv->growth[i];
		struct diff_site *d;

		si = site_of(l, t, res->sym, pi, g->site);
		if (si < 0) {
			err = si;
			goto cleanup;
		}
		d = &l->run->procs[pi].sites[si];
		d->visible = d->growing = true;
		d->slope += diff__tenth(g->slope_per_step);
		d->per_request += diff__tenth(g->per_request);
		l->run->procs[pi].growth_per_step += diff__tenth(g->slope_per_step);
		l->run->procs[pi].growth_sites++;
	}
	/* What only a capture has: how many allocations each of its sites made. */
	for (i = 0; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];
		struct diff_site *d;

		if (!site__of(s, tp) || !s->counts || !s->allocs)
			continue;
		si = site_of(l, t, res->sym, pi, (uint32_t)i);
		if (si < 0) {
			err = si;
			goto cleanup;
		}
		d = &l->run->procs[pi].sites[si];
		d->has_allocs = true;
		d->allocs += s->allocs;
		d->alloc_bytes += s->alloc_bytes;
	}
	p = &l->run->procs[pi];
	for (i = 0; i < p->nr_sites; i++) {
		p->sites[i].has_allocs = true;
		p->leaked_bytes += p->sites[i].leaked_bytes;
	}
	p->ppid = tp->ppid;
	snprintf(p->comm, sizeof(p->comm), "%s", tp->comm);
	snprintf(p->state, sizeof(p->state), "%s", describe__proc_state(tp));
	p->exit_status = tp->exited ? tp->exit_status : -1;
	p->duration_s =
	    end > tp->first_ts_ns && tp->first_ts_ns ? (double)(end - tp->first_ts_ns) / 1e9 : 0.0;
	p->steps = pv->nr_steps;
	snprintf(p->step_source, sizeof(p->step_source), "%s", describe__step_source(res->an->tl));
	p->requests = timeline__nr_requests(res->an->tl, tp);
	p->live_bytes = tp->live_bytes;
	p->live_count = tp->live_count;
	p->init_bytes = tp->init_bytes;
	p->persistent_bytes = tp->persistent_bytes;
	p->ignored_bytes = tp->ignored_bytes;
	p->pending_bytes = tp->pending_bytes;
	p->allocs = tp->c.allocs;
	p->alloc_bytes = tp->c.alloc_bytes;
	p->frees = tp->c.frees;
	p->failed_calls = tp->c.failed_calls;
	p->approximate = !pv->uncertainty_known || pv->uncertainty.approximate;
	p->torch_known = true;
	p->torch = pv->torch.on;
	if (p->torch) {
		p->torch_allocated = pv->torch.allocated;
		p->torch_reserved = pv->torch.reserved;
		p->torch_cached = pv->torch.cached;
		p->torch_outside = pv->torch.outside;
	}
	/* The timeline keeps its latest steps; the series here has every step but can be cut
	 * by DIFF_MAX_SAMPLES. */
	if (p->nr_series != p->steps)
		p->series_cut = true;
	return 0;
cleanup:
	return err;
}

static int on_done(void *ctx, const struct replay_result *res)
{
	struct loader *l = ctx;
	const struct verdict *v = res->v;
	struct diff_run *r = l->run;
	bool *keep;
	size_t i, j;
	int err = l->err;

	for (i = 0; !err && i < v->nr_procs; i++)
		if (v->procs[i].reported)
			err = add_proc(l, res, &v->procs[i]);
	if (err)
		return err;
	/* Only reported processes, as in the report: a helper that did nothing traced is none. */
	keep = calloc(r->nr_procs + 1, sizeof(*keep));
	if (!keep)
		return -ENOMEM;
	for (i = 0; i < v->nr_procs; i++)
		for (j = 0; v->procs[i].reported && j < r->nr_procs; j++)
			if (l->tprocs[j] == v->procs[i].p)
				keep[j] = true;
	for (i = j = 0; i < r->nr_procs; i++) {
		if (keep[i])
			r->procs[j++] = r->procs[i];
		else
			diff_proc__release(&r->procs[i]);
	}
	r->nr_procs = j;
	free(keep);
	r->truncated = res->truncated;
	l->damaged = res->damaged;
	r->gpuleak = strdup(res->info->version);
	return r->gpuleak ? 0 : -ENOMEM;
}

int diff_capture__load(const char *path, const void *buf, size_t len, const struct analysis_opts *a,
		       struct diff_run **out, bool *damaged)
{
	struct loader l = {0};
	int err;

	*out = NULL;
	*damaged = false;
	err = diff_run__new(DIFF_CAPTURE, infile__name(path), &l.run);
	if (!err)
		err = replay__analyse(path, buf, len, a, on_step, on_done, &l);
	if (err == -ENOMEM)
		fprintf(stderr, "gpuleak: %s: out of memory\n", infile__name(path));
	if (!err) {
		*out = l.run;
		*damaged = l.damaged;
		l.run = NULL;
	}
	diff_run__free(l.run);
	free(l.tprocs);
	free(l.parts);
	return err;
}
