// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/hmap.h"
#include "probe/catalog.h"
#include "engine/timeline.h"
#include "tracker/tracker.h"
#include "tracker/pools.h"
#include "lib/vec.h"

/* A site's live bytes at the end of the steps where it changed (a sparse series). */
struct sample {
	int64_t step;
	uint64_t live;
};

struct trend {
	uint32_t site;
	struct sample *v;
	size_t n, cap;
	uint64_t last;
	/* Running view for the live "suspect" column; the verdict refits from the series. */
	int64_t growth_steps;
	uint64_t floor; /* lowest value seen after the warm-up */
	bool floor_set;
	bool flagged;
	/* Live bytes at the last quiescent point (no request in flight), not yet sampled. */
	uint64_t settled;
	bool in_settled;
	/*
	 * The value this trend was to be sampled with before the first settle after the
	 * process's latest allocation (pre_epoch: that allocation's count + 1): with a request
	 * in flight then, what its steps would have shown had the process stopped there.
	 */
	uint64_t pre, pre_epoch;
};

#define MAX_DEVICES 16
#define BUSY_STEPS  8

/*
 * Steps a process keeps: when full, the older half goes, with the site samples before it.
 * Decode loops close tens of steps a second; without a bound a tracer left on a server for
 * days would grow by ~100 bytes a step. Growth is judged on the steps kept (at least half of
 * this), which is also what matters: what the process does now.
 */
#define TL_MAX_STEPS 16384

struct ptl {
	pid_t pid;
	uint32_t gen; /* the tracker's process (struct tproc's gen) */
	bool started;
	bool finished;
	/*
	 * The last step was closed by the session's end, not by a boundary of the program's
	 * (steps it marks): it is no complete step (struct cut says how it is judged).
	 */
	bool tail;
	int64_t step; /* in progress; -1: before the first boundary (init) */
	uint64_t step_start_ns;
	uint64_t next_ns; /* next interval boundary */
	uint64_t abytes0, fbytes0, allocs0, frees0;
	struct step_stat *steps;
	size_t nr_steps, cap_steps;
	size_t forgotten; /* steps dropped from the front (TL_MAX_STEPS) */
	struct trend *tr;
	size_t nr_tr, cap_tr;
	struct hmap tr_idx; /* site -> index into tr */
	uint64_t suspect;
	/* Requests (--request): in flight now, completed, completed when the step began. */
	int64_t inflight;
	uint64_t requests, requests0;
	int busy_steps;	   /* consecutive steps that ended with a request in flight */
	uint32_t *settled; /* trends (indexes into tr) with a settled value to sample */
	size_t nr_settled, cap_settled;
	/* Allocations of the process seen so far, and whether a request was in flight at the
	 * latest one (where its shutdown would begin). */
	uint64_t allocs_seen;
	bool alloc_inflight;
	/* The tracker's process of this timeline, once it has one: the same lifetime (a reused
	 * pid gets a new one of each at the same record). */
	struct tproc *tp;
	struct {
		bool known;
		bool proc_known;
		uint64_t total, used, proc_used;
	} dev[MAX_DEVICES];
	uint64_t traced_at_attach[MAX_DEVICES]; /* traced live bytes when NVML looked */
};

struct timeline {
	struct timeline_opts o;
	struct tracker *t;
	struct ptl **p;
	size_t nr_p, cap_p;
	step_fn on_step;
	void *on_step_ctx;
	struct step_site_summary sites; /* of the step being closed, for on_step */
	uint64_t boundaries;		/* records that closed a step (sync, marker, NVTX range) */
};

int timeline__new(const struct timeline_opts *o, struct tracker *t, struct timeline **out)
{
	struct timeline *tl = calloc(1, sizeof(*tl));

	if (!tl)
		return -ENOMEM;
	tl->o = *o;
	if (!tl->o.interval_ns)
		tl->o.interval_ns = 1000000000ULL;
	tl->t = t;
	*out = tl;
	return 0;
}

void timeline__free(struct timeline *tl)
{
	size_t i, j;

	if (!tl)
		return;
	for (i = 0; i < tl->nr_p; i++) {
		struct ptl *p = tl->p[i];

		for (j = 0; j < p->nr_tr; j++)
			free(p->tr[j].v);
		free(p->tr);
		free(p->steps);
		free(p->settled);
		hmap__free(&p->tr_idx);
		free(p);
	}
	free(tl->p);
	free(tl);
}

void timeline__on_step(struct timeline *tl, step_fn fn, void *ctx)
{
	tl->on_step = fn;
	tl->on_step_ctx = ctx;
}

const struct timeline_opts *timeline__opts(const struct timeline *tl)
{
	return &tl->o;
}

static struct ptl *ptl_find(const struct timeline *tl, pid_t pid)
{
	size_t i = tl->nr_p;

	/* newest first: a reused pid is a new process */
	while (i--)
		if (tl->p[i]->pid == pid)
			return tl->p[i];
	return NULL;
}

/* The timeline of one process (image) of its pid, where ptl_find knows only the newest. */
static struct ptl *ptl_of(const struct timeline *tl, const struct tproc *tp)
{
	size_t i = tl->nr_p;

	while (tp && i--)
		if (tl->p[i]->pid == tp->pid && tl->p[i]->gen == tp->gen)
			return tl->p[i];
	return NULL;
}

/* The tracker's process of timeline p: its image, not only its pid. */
static struct tproc *ptl_proc(const struct timeline *tl, const struct ptl *p)
{
	return p->tp ? p->tp : tracker__image(tl->t, p->pid, p->gen);
}

static struct ptl *ptl_get(struct timeline *tl, pid_t pid)
{
	const struct tproc *tp;
	struct ptl *p = ptl_find(tl, pid);

	if (p && !p->finished)
		return p;
	p = vec_push_new(&tl->p, &tl->cap_p, &tl->nr_p, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	/* The tracker saw the record first: its newest process of pid is this one. */
	tp = tracker__proc(tl->t, pid);
	p->gen = tp ? tp->gen : 0;
	p->step = -1;
	return p;
}

static struct trend *trend_get(struct ptl *p, uint32_t site)
{
	uint64_t *v = hmap__get(&p->tr_idx, site, 0);

	if (v)
		return &p->tr[*v];
	if (vec_grow((void **)&p->tr, &p->cap_tr, p->nr_tr, sizeof(*p->tr)))
		return NULL;
	if (hmap__put(&p->tr_idx, site, 0, p->nr_tr))
		return NULL;
	memset(&p->tr[p->nr_tr], 0, sizeof(p->tr[0]));
	p->tr[p->nr_tr].site = site;
	return &p->tr[p->nr_tr++];
}

/*
 * Candidates for growth leaks: memory not declared persistent or ignored by a rule (a caching
 * allocator's blocks, not its segments: judged).
 */
static bool candidate(const struct site *s)
{
	return s->judged && s->cls == CLS_NONE;
}

static void sample(struct timeline *tl, struct ptl *p, struct trend *tr, uint64_t live)
{
	int64_t step = p->step;

	if (tr->n && tr->v[tr->n - 1].live == live)
		return;
	if (vec_grow((void **)&tr->v, &tr->cap, tr->n, sizeof(*tr->v)))
		return;
	tr->v[tr->n++] = (struct sample){step, live};
	if (step >= tl->o.warmup_steps) {
		if (live > tr->last)
			tr->growth_steps++;
		if (!tr->floor_set || live < tr->floor) {
			tr->floor = live;
			tr->floor_set = true;
		}
	}
	if (tr->flagged)
		p->suspect -= tr->last;
	tr->last = live;
	tr->flagged =
	    tr->growth_steps >= tl->o.min_growth_steps && tr->floor_set && live > tr->floor;
	if (tr->flagged)
		p->suspect += live;
}

/*
 * Drop the older half of p's steps, and every site sample older than the first step kept
 * but the last one (the value the site had when the kept steps begin).
 */
static void forget_old_steps(struct ptl *p)
{
	size_t keep = TL_MAX_STEPS / 2, i, j, k;
	int64_t first;

	memmove(p->steps, p->steps + (p->nr_steps - keep), keep * sizeof(*p->steps));
	p->forgotten += p->nr_steps - keep;
	p->nr_steps = keep;
	first = p->steps[0].step;
	for (i = 0; i < p->nr_tr; i++) {
		struct trend *tr = &p->tr[i];

		for (j = 0; j + 1 < tr->n && tr->v[j + 1].step <= first; j++)
			;
		if (!j)
			continue;
		for (k = 0; j < tr->n; j++, k++)
			tr->v[k] = tr->v[j];
		tr->n = k;
	}
}

/*
 * A quiescent point: no request in flight. The sites that changed since the last one take
 * their live bytes now as the value their step will be sampled with. Without --request every
 * step end is one; with it, the sites changed by a request still in flight at a step end keep
 * the value of the last quiescent point (a request's working set is never a step's growth).
 */
static void settle(struct timeline *tl, struct ptl *p, struct tproc *tp)
{
	size_t i;

	for (i = 0; i < tp->nr_dirty; i++) {
		struct site *s = &tl->t->sites[tp->dirty[i]];
		struct trend *tr;

		s->dirty = false;
		if (!candidate(s))
			continue;
		tr = trend_get(p, tp->dirty[i]);
		if (!tr)
			continue;
		if (tr->pre_epoch != tp->c.allocs + 1) {
			tr->pre = tr->in_settled ? tr->settled : tr->last;
			tr->pre_epoch = tp->c.allocs + 1;
		}
		tr->settled = s->live_bytes;
		if (tr->in_settled)
			continue;
		if (vec_grow((void **)&p->settled, &p->cap_settled, p->nr_settled,
			     sizeof(*p->settled)))
			continue;
		tr->in_settled = true;
		p->settled[p->nr_settled++] = (uint32_t)(tr - p->tr);
	}
	tp->nr_dirty = 0;
}

/* Which of two sites' step activity a step record lists first. */
static bool step_site_before(const struct step_site_stat *a, const struct step_site_stat *b)
{
	uint64_t na = a->allocated > a->freed ? a->allocated - a->freed : a->freed - a->allocated;
	uint64_t nb = b->allocated > b->freed ? b->allocated - b->freed : b->freed - b->allocated;

	if (na != nb)
		return na > nb;
	if (a->allocated + a->freed != b->allocated + b->freed)
		return a->allocated + a->freed > b->allocated + b->freed;
	return a->site < b->site;
}

/* The sites whose memory changed in the step ending now (the tracker's step_changes). */
static void collect_step_sites(struct timeline *tl, const struct tproc *tp,
			       struct step_site_summary *out)
{
	size_t i, j;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < tp->nr_step_changes; i++) {
		const struct step_change *e = &tp->step_changes[i];
		struct step_site_stat v = {.site = e->site,
					   .live = tl->t->sites[e->site].live_bytes,
					   .allocated = e->allocated,
					   .freed = e->freed};

		/* Touched and back where it was (a label moved in and out, say): no change. */
		if (!v.allocated && !v.freed && v.live == e->live0)
			continue;
		if (out->n == STEP_TOP_SITES && !step_site_before(&v, &out->top[out->n - 1])) {
			out->rest++;
			out->rest_allocated += v.allocated;
			out->rest_freed += v.freed;
			continue;
		}
		if (out->n == STEP_TOP_SITES) {
			const struct step_site_stat *last = &out->top[--out->n];

			out->rest++;
			out->rest_allocated += last->allocated;
			out->rest_freed += last->freed;
		}
		for (j = out->n; j && step_site_before(&v, &out->top[j - 1]); j--)
			out->top[j] = out->top[j - 1];
		out->top[j] = v;
		out->n++;
	}
}

static void close_step(struct timeline *tl, struct ptl *p, uint64_t ts_ns)
{
	struct tproc *tp = ptl_proc(tl, p);
	struct step_stat st = {.step = p->step, .t_start_ns = p->step_start_ns, .t_end_ns = ts_ns};
	size_t i;

	if (!tp)
		return;
	/* Requests that overlap without a pause are never quiescent: after BUSY_STEPS such
	 * steps, sample anyway (the floor test still tells a sawtooth from a leak). */
	p->busy_steps = p->inflight > 0 ? p->busy_steps + 1 : 0;
	if (p->inflight <= 0 || p->busy_steps >= BUSY_STEPS)
		settle(tl, p, tp);
	for (i = 0; i < p->nr_settled; i++) {
		struct trend *tr = &p->tr[p->settled[i]];

		tr->in_settled = false;
		sample(tl, p, tr, tr->settled);
	}
	p->nr_settled = 0;
	st.requests = p->requests - p->requests0;
	st.inflight = p->inflight > 0 ? (uint64_t)p->inflight : 0;
	p->requests0 = p->requests;
	st.live = tp->live_bytes;
	st.persistent = tp->persistent_bytes;
	st.pending = tp->pending_bytes;
	st.suspect = p->suspect;
	st.allocated = tp->c.alloc_bytes - p->abytes0;
	st.freed = tp->c.freed_bytes - p->fbytes0;
	st.allocs = tp->c.allocs - p->allocs0;
	st.frees = tp->c.frees - p->frees0;
	st.torch = tp->blocks != NULL;
	for (i = 0; tp->blocks && i < TBLOCKS_DEVICES; i++) {
		st.torch_allocated += tp->blocks->allocated[i];
		st.torch_reserved += tp->blocks->reserved[i] + tp->blocks->orphan[i];
	}
	if (p->nr_steps == TL_MAX_STEPS)
		forget_old_steps(p);
	if (!vec_grow((void **)&p->steps, &p->cap_steps, p->nr_steps, sizeof(*p->steps)))
		p->steps[p->nr_steps++] = st;
	if (tl->on_step) {
		collect_step_sites(tl, tp, &tl->sites);
		st.sites = &tl->sites;
		tl->on_step(tl->on_step_ctx, p->pid, &st);
	}
	p->step++;
	p->step_start_ns = ts_ns;
	p->abytes0 = tp->c.alloc_bytes;
	p->fbytes0 = tp->c.freed_bytes;
	p->allocs0 = tp->c.allocs;
	p->frees0 = tp->c.frees;
	tracker__set_step(tl->t, p->pid, p->step, ts_ns);
}

static void start(struct timeline *tl, struct ptl *p, uint64_t ts_ns)
{
	struct tproc *tp = ptl_proc(tl, p);

	p->started = true;
	p->step_start_ns = ts_ns;
	p->next_ns = ts_ns + tl->o.interval_ns;
	if (tp) {
		p->abytes0 = tp->c.alloc_bytes;
		p->fbytes0 = tp->c.freed_bytes;
		p->allocs0 = tp->c.allocs;
		p->frees0 = tp->c.frees;
	}
}

/* Interval steps: every boundary up to ts closes a step (idle slices included). */
static void advance_interval(struct timeline *tl, struct ptl *p, uint64_t ts_ns)
{
	uint64_t skip;

	if (tl->o.source != STEP_INTERVAL || !p->started || p->finished)
		return;
	/* After a long silence (a stopped target, a gap in a capture) jump instead of
	 * emitting millions of empty steps. */
	if (ts_ns > p->next_ns && (ts_ns - p->next_ns) / tl->o.interval_ns > 10000) {
		skip = (ts_ns - p->next_ns) / tl->o.interval_ns;
		p->next_ns += skip * tl->o.interval_ns;
	}
	while (ts_ns >= p->next_ns) {
		close_step(tl, p, p->next_ns);
		p->next_ns += tl->o.interval_ns;
	}
}

static bool is_boundary(const struct timeline *tl, const struct gl_hdr *h)
{
	const struct cat_api *api = cat_by_api(h->api);

	switch (tl->o.source) {
	case STEP_SYNC:
		/* Outermost calls only: a sync made inside another traced call is part of it. */
		if (h->depth)
			return false;
		if (h->kind == GL_REC_SYNC)
			return !((const struct gl_call_rec *)h)->ret;
		/*
		 * A WebGPU queue submit (entry-only, size = commandCount). Every queue counts, as
		 * every CUDA stream does: a WebGPU device has exactly one queue, so a queue is a
		 * device, and steps are per process. An empty submit carries no work: engines
		 * issue them to flush or poll (Dawn's device tick), not once per step.
		 */
		return h->kind == GL_REC_NOTIFY && h->size >= sizeof(struct gl_call_rec) && api &&
		       api->op == OP_QUEUE_SUBMIT && ((const struct gl_call_rec *)h)->size;
	case STEP_MARKER:
		return h->kind == GL_REC_NOTIFY && h->api == GL_API_MARKER_STEP;
	case STEP_NVTX: {
		const struct gl_label_rec *l = (const struct gl_label_rec *)h;
		size_t n;

		if (h->kind != GL_REC_LABEL || h->size < sizeof(*l) || !api ||
		    !(api->flags & CAT_NVTX) || h->api == GL_API_NVTX_MARK_A)
			return false;
		n = strnlen(tl->o.nvtx_name, sizeof(tl->o.nvtx_name));
		return l->len == n && !memcmp(l->label, tl->o.nvtx_name, n);
	}
	default:
		return false;
	}
}

void timeline__finish(struct timeline *tl, pid_t pid, uint64_t ts_ns)
{
	struct ptl *p = ptl_find(tl, pid);

	if (!p || p->finished)
		return;
	advance_interval(tl, p, ts_ns);
	/* The step in progress counts if anything happened in it. */
	if (p->started && ts_ns > p->step_start_ns) {
		close_step(tl, p, ts_ns);
		p->tail = tl->o.source != STEP_INTERVAL;
	}
	p->finished = true;
}

int timeline__on_record(struct timeline *tl, const struct gl_hdr *h)
{
	struct tproc *tp;
	struct ptl *p;
	size_t i;

	if (h->kind == GL_REC_TICK) {
		for (i = 0; i < tl->nr_p; i++)
			advance_interval(tl, tl->p[i], h->ts_ns);
		return 0;
	}
	if (h->kind == GL_REC_PROC) {
		const struct gl_proc_rec *r = (const struct gl_proc_rec *)h;

		if (h->size < GL_PROC_REC_V1_SIZE)
			return 0;
		if (r->event == GL_PROC_ATTACH) {
			p = ptl_get(tl, h->pid);
			if (!p)
				return -ENOMEM;
			if (!p->started)
				start(tl, p, h->ts_ns);
			return 0;
		}
		/* The tracker already applied the exit: end the process's timeline. */
		timeline__finish(tl, h->pid, h->ts_ns);
		return 0;
	}
	if (h->kind == GL_REC_DEVMEM) {
		const struct gl_devmem_rec *d = (const struct gl_devmem_rec *)h;

		tp = tracker__proc(tl->t, h->pid);
		p = ptl_get(tl, h->pid);
		if (!p)
			return -ENOMEM;
		if (h->size < sizeof(*d) || d->device < 0 || d->device >= MAX_DEVICES)
			return 0;
		p->dev[d->device].known = true;
		p->dev[d->device].proc_known = d->flags & 1;
		p->dev[d->device].total = d->total_bytes;
		p->dev[d->device].used = d->used_bytes;
		p->dev[d->device].proc_used = d->proc_used_bytes;
		p->traced_at_attach[d->device] = tp ? tp->live_bytes : 0;
		return 0;
	}
	if (!h->pid)
		return 0;
	p = ptl_get(tl, h->pid);
	if (!p)
		return -ENOMEM;
	if (!p->started)
		start(tl, p, h->ts_ns);
	advance_interval(tl, p, h->ts_ns);
	if (!p->tp)
		p->tp = tracker__image(tl->t, p->pid, p->gen);
	tp = p->tp;
	if (tp && tp->c.allocs != p->allocs_seen) {
		p->allocs_seen = tp->c.allocs;
		p->alloc_inflight = p->inflight > 0;
	}
	if (h->kind == GL_REC_NOTIFY && h->api == GL_API_MARKER_REQ_BEGIN) {
		/* Before the first request of a burst: what the last one left is settled. The
		 * end marker fires at the entry of END, before the request's frees. */
		if (p->inflight <= 0 && tp)
			settle(tl, p, tp);
		p->inflight++;
	} else if (h->kind == GL_REC_NOTIFY && h->api == GL_API_MARKER_REQ_END) {
		/* An END without its BEGIN: a request in flight at attach. */
		if (p->inflight > 0)
			p->inflight--;
		p->requests++;
	}
	if (is_boundary(tl, h)) {
		tl->boundaries++;
		close_step(tl, p, h->ts_ns);
	}
	return 0;
}

uint64_t timeline__boundaries(const struct timeline *tl)
{
	return tl->boundaries;
}

bool timeline__devmem(const struct timeline *tl, const struct tproc *tp, int device,
		      struct gl_devmem_rec *out, uint64_t *traced_then)
{
	const struct ptl *p = ptl_of(tl, tp);

	if (!p || device < 0 || device >= MAX_DEVICES || !p->dev[device].known)
		return false;
	memset(out, 0, sizeof(*out));
	out->device = device;
	out->flags = p->dev[device].proc_known ? 1 : 0;
	out->total_bytes = p->dev[device].total;
	out->used_bytes = p->dev[device].used;
	out->proc_used_bytes = p->dev[device].proc_used;
	*traced_then = p->traced_at_attach[device];
	return true;
}

bool timeline__step_now(const struct timeline *tl, const struct tproc *tp, int64_t *step,
			uint64_t *start_ns)
{
	const struct ptl *p = ptl_of(tl, tp);

	if (!p || !p->started || p->finished)
		return false;
	*step = p->step;
	*start_ns = p->step_start_ns;
	return true;
}

void timeline__snapshot_step(struct timeline *tl, pid_t pid, int64_t step, uint64_t start_ns)
{
	struct ptl *p = ptl_get(tl, pid);

	if (!p)
		return;
	if (!p->started)
		start(tl, p, start_ns);
	p->step = step;
	p->step_start_ns = start_ns;
	tracker__set_step(tl->t, pid, step, start_ns);
}

void timeline__snapshot_done(struct timeline *tl, pid_t pid, int64_t step, uint64_t start_ns)
{
	struct tproc *tp = tracker__proc(tl->t, pid);
	struct ptl *p = ptl_get(tl, pid);
	size_t i;

	if (!p || !tp)
		return;
	if (!p->started)
		start(tl, p, start_ns);
	/* The live bytes each site had when the window began: where its growth starts from,
	 * sampled at the end of the step before, never counted as growth. */
	settle(tl, p, tp);
	for (i = 0; i < p->nr_settled; i++) {
		struct trend *tr = &p->tr[p->settled[i]];

		tr->in_settled = false;
		if (vec_grow((void **)&tr->v, &tr->cap, tr->n, sizeof(*tr->v)))
			continue;
		tr->v[tr->n++] = (struct sample){step - 1, tr->settled};
		tr->last = tr->settled;
		if (step - 1 >= tl->o.warmup_steps) {
			tr->floor = tr->settled;
			tr->floor_set = true;
		}
	}
	p->nr_settled = 0;
	p->step = step;
	p->step_start_ns = start_ns;
	p->next_ns = start_ns + tl->o.interval_ns;
	p->abytes0 = tp->c.alloc_bytes;
	p->fbytes0 = tp->c.freed_bytes;
	p->allocs0 = tp->c.allocs;
	p->frees0 = tp->c.frees;
	/* The snapshot's allocations are no step's activity. */
	tracker__set_step(tl->t, pid, step, start_ns);
}

size_t timeline__nr_steps(const struct timeline *tl, const struct tproc *tp)
{
	struct ptl *p = ptl_of(tl, tp);

	return p ? p->forgotten + p->nr_steps : 0;
}

uint64_t timeline__nr_requests(const struct timeline *tl, const struct tproc *tp)
{
	struct ptl *p = ptl_of(tl, tp);

	/* Up to the last closed step, as the steps' own counts add up. */
	return p ? p->requests0 : 0;
}

const struct step_stat *timeline__steps(const struct timeline *tl, const struct tproc *tp,
					size_t *n)
{
	struct ptl *p = ptl_of(tl, tp);

	*n = p ? p->nr_steps : 0;
	return p ? p->steps : NULL;
}

/* Dense values of a trend at the end of steps first..last (step s at index s - first). */
static uint64_t *dense(const struct trend *tr, int64_t first, int64_t last)
{
	size_t n = (size_t)(last - first + 1), j = 0;
	uint64_t *v = calloc(n ? n : 1, sizeof(*v)), cur = 0;
	int64_t s;

	if (!v)
		return NULL;
	for (s = first; s <= last; s++) {
		while (j < tr->n && tr->v[j].step <= s)
			cur = tr->v[j++].live;
		v[s - first] = cur;
	}
	return v;
}

int timeline__site_series(struct timeline *tl, const struct tproc *tp, uint32_t site, int64_t from,
			  uint64_t **vals, size_t *n)
{
	struct ptl *p = ptl_of(tl, tp);
	uint64_t *idx;
	int64_t last;

	*vals = NULL;
	*n = 0;
	if (!p || !p->nr_steps)
		return 0;
	last = p->steps[p->nr_steps - 1].step;
	if (from > last)
		return 0;
	idx = hmap__get(&p->tr_idx, site, 0);
	if (!idx) {
		*vals = calloc((size_t)(last - from + 1), sizeof(**vals));
	} else {
		*vals = dense(&p->tr[*idx], from, last);
	}
	if (!*vals)
		return -ENOMEM;
	*n = (size_t)(last - from + 1);
	return 0;
}

/* Least squares of y over x; returns the slope, r2 in *r2. */
static double fit(const double *x, const double *y, size_t n, double *r2)
{
	double mx = 0, my = 0, sxx = 0, sxy = 0, syy = 0;
	size_t i;

	*r2 = 0;
	if (n < 2)
		return 0;
	for (i = 0; i < n; i++) {
		mx += x[i];
		my += y[i];
	}
	mx /= n;
	my /= n;
	for (i = 0; i < n; i++) {
		sxx += (x[i] - mx) * (x[i] - mx);
		sxy += (x[i] - mx) * (y[i] - my);
		syy += (y[i] - my) * (y[i] - my);
	}
	if (sxx == 0)
		return 0;
	*r2 = syy == 0 ? 1.0 : (sxy * sxy) / (sxx * syy);
	return sxy / sxx;
}

static int cmp_growth(const void *a, const void *b)
{
	const struct growth *x = a, *y = b;

	if (x->slope_per_step != y->slope_per_step)
		return x->slope_per_step > y->slope_per_step ? -1 : 1;
	return x->site < y->site ? -1 : 1;
}

/*
 * Where the steps of a process end for the growth judgement: the one rule for the end of a
 * run, whatever marks the steps. Growth is judged on complete steps; what comes after them
 * is shutdown, which cannot cancel the growth they showed.
 *
 * A process that shut down (tproc__shut_down: exit, exec) is judged up to its latest
 * allocation: what it released after it, on its way out (frees after the loop, a reset, a
 * device destroyed or released, handles a runtime lets go at exit), is its shutdown, not a
 * step. The steps after the one of that allocation are not judged, and that step is judged
 * as its boundary sampled it when a boundary of the program's closed it and the site did
 * not drop in it (the shutdown began after that boundary: the step is complete); otherwise
 * (the step in progress at the end, or a site the frees on the way out took before the
 * boundary, as a cudaDeviceSynchronize after them does under --step sync) as the site stood
 * at the latest allocation, with what left after it added back. A request in flight then
 * keeps its working set out, as a step end would (the value its site had at the last
 * quiescent point).
 *
 * A process that did not shut down (detached, still running when a capture ends) has no
 * shutdown, but the step its session's end closed is no complete step either: with steps
 * the program marks, a site that dropped in it is judged on the complete steps before it;
 * one that grew there still grows (a program that marks each step's start does its last
 * step's work there).
 */
struct cut {
	bool on;	/* the process shut down */
	bool tail;	/* the last step is the session's partial one, of steps the program marks */
	int64_t step;	/* on: of the latest allocation */
	uint64_t ts_ns; /* on: when it was made */
	const struct tproc *tp;
	struct released rel; /* on: what left after it, per site */
};

/* Where one site's judged steps end, and its live bytes there. */
struct judged_end {
	int64_t step;
	uint64_t bytes;
	bool at_alloc; /* the value at the latest allocation, not a boundary's sample */
};

/* The cut of p, whose last step is last: 0 or -ENOMEM; cut_free frees what it holds. */
static int cut_of(const struct timeline *tl, const struct ptl *p, int64_t last, struct cut *c)
{
	const struct tproc *tp = ptl_proc(tl, p);

	memset(c, 0, sizeof(*c));
	c->tail = p->tail;
	if (!tp || !tproc__shut_down(tp))
		return 0;
	c->on = true;
	c->tp = tp;
	c->step = tp->last_alloc_step < last ? tp->last_alloc_step : last;
	c->ts_ns = tp->last_alloc_ts_ns;
	return tproc__released(tl->t, tp, &c->rel);
}

static void cut_free(struct cut *c)
{
	released__free(&c->rel);
}

/* A trend's value at the cut: what its step would have sampled, had the process ended there. */
static uint64_t cut_value(const struct timeline *tl, const struct ptl *p, const struct cut *c,
			  const struct trend *tr)
{
	const struct site *s = &tl->t->sites[tr->site];

	if (!p->alloc_inflight)
		return s->live_bytes + c->rel.site_bytes[tr->site];
	if (tr->pre_epoch == c->tp->c.allocs + 1)
		return tr->pre;
	return tr->in_settled ? tr->settled : tr->last;
}

/* tr's sample at the end of step s (as dense() gives it). */
static uint64_t sample_at(const struct trend *tr, int64_t s)
{
	uint64_t cur = 0;
	size_t j;

	for (j = 0; j < tr->n && tr->v[j].step <= s; j++)
		cur = tr->v[j].live;
	return cur;
}

/* Where tr's judged steps end (struct cut), w the first judged step. */
static void judged_end(const struct timeline *tl, const struct ptl *p, const struct cut *c,
		       const struct trend *tr, int64_t last, int64_t w, struct judged_end *e)
{
	bool complete;
	uint64_t prev;

	e->step = c->on ? c->step : last;
	e->bytes = sample_at(tr, e->step);
	e->at_alloc = false;
	prev = e->step > p->steps[0].step ? sample_at(tr, e->step - 1) : 0;
	if (c->on) {
		complete = tl->o.source != STEP_INTERVAL && (e->step < last || !c->tail) &&
			   e->step > p->steps[0].step;
		if (!complete || e->bytes < prev) {
			e->bytes = cut_value(tl, p, c, tr);
			e->at_alloc = true;
		}
	} else if (c->tail && last - 1 > w && e->bytes < prev) {
		e->step = last - 1;
		e->bytes = prev;
	}
}

/*
 * A growth leak: after the warm-up, the site's live bytes grew in at least K steps, ended
 * above where they were, and their floor rose: the lowest value of a late window is above
 * the lowest before it. The floor test is what tells a leak from a sawtooth (growth inside
 * a request that returns to its baseline when the request ends). Judged on the steps up to
 * where struct cut ends them.
 */
static bool analyse(const struct timeline *tl, const struct ptl *p, const struct trend *tr,
		    int64_t last, const struct cut *c, struct growth *g)
{
	int64_t w = tl->o.warmup_steps, s, mid, n, first, base, win, max_gap = 0, last_drop = 0;
	uint64_t floor_early = UINT64_MAX, floor_late = UINT64_MAX, *v;
	int64_t grew = 0;
	double *x, *xt, *y, r2t;
	struct judged_end e;
	size_t i, k;

	/* Steps forgotten (TL_MAX_STEPS) are no part of the judgement. */
	if (w < p->steps[0].step)
		w = p->steps[0].step;
	judged_end(tl, p, c, tr, last, w, &e);
	last = e.step;
	if (last - w < 2)
		return false;
	v = dense(tr, w, last);
	if (!v)
		return false;
	n = last - w + 1;
	v[n - 1] = e.bytes;
	/*
	 * The late window must hold a whole period of any sawtooth: twice the longest climb
	 * between two drops, at least K + 1 steps and a quarter of the run (at most half),
	 * so a leak that starts late is still seen and a request's growth never is.
	 */
	for (s = 1; s < n; s++) {
		if (v[s] > v[s - 1])
			grew++;
		if (v[s] < v[s - 1]) {
			if (s - last_drop > max_gap)
				max_gap = s - last_drop;
			last_drop = s;
		}
	}
	win = tl->o.min_growth_steps + 1;
	if (win < n / 4)
		win = n / 4;
	if (win < 2 * max_gap)
		win = 2 * max_gap;
	if (win > n / 2)
		win = n / 2;
	mid = n - win;
	/* Periods too long for that (a run of two or three requests): the late window starts
	 * at the last drop, so it holds the floor of the last period however far it got. */
	if (2 * max_gap > n / 2 && last_drop > 0 && last_drop < mid)
		mid = last_drop;
	for (s = 0; s < n; s++) {
		if (s < mid && v[s] < floor_early)
			floor_early = v[s];
		if (s >= mid && v[s] < floor_late)
			floor_late = v[s];
	}
	if (grew < tl->o.min_growth_steps || floor_late <= floor_early || v[n - 1] <= v[0]) {
		free(v);
		return false;
	}
	/* The growth began after the last step at the early floor, or earlier if it was
	 * already climbing during the warm-up: follow the climb back. */
	first = 0;
	for (s = 0; s < n; s++)
		if (v[s] <= floor_early)
			first = s;
	free(v);
	base = p->steps[0].step;
	v = dense(tr, base, last);
	if (!v)
		return false;
	v[last - base] = e.bytes;
	first += w - base;
	while (first > 0 && v[first - 1] < v[first])
		first--;
	n = last - base + 1;
	w = base;
	k = (size_t)(n - first);
	x = calloc(k, sizeof(*x));
	xt = calloc(k, sizeof(*xt));
	y = calloc(k, sizeof(*y));
	if (!x || !xt || !y) {
		free(x);
		free(xt);
		free(y);
		free(v);
		return false;
	}
	for (i = 0; i < k; i++) {
		int64_t step = w + first + (int64_t)i;
		/* steps[] holds init (-1) at index 0 when it was recorded */
		int64_t at = step - p->steps[0].step;

		x[i] = (double)step;
		xt[i] =
		    at >= 0 && (size_t)at < p->nr_steps ? (double)p->steps[at].t_end_ns / 1e9 : 0;
		/* Judged at the latest allocation: the step ends there, not where the shutdown
		 * ended it. */
		if (e.at_alloc && step == last)
			xt[i] = (double)c->ts_ns / 1e9;
		y[i] = (double)v[first + i];
	}
	g->site = tr->site;
	g->first_step = w + first + (k > 1 ? 1 : 0);
	g->growth_steps = grew;
	g->start_bytes = v[first];
	g->end_bytes = v[n - 1];
	g->slope_per_step = fit(x, y, k, &g->r2);
	g->slope_per_s = fit(xt, y, k, &r2t);
	/* Step times out of order (a damaged capture) can tilt it below zero: no rate then. */
	if (g->slope_per_s < 0)
		g->slope_per_s = 0;
	g->per_request = 0;
	if (tl->o.requests) {
		uint64_t reqs = 0;

		for (i = 0; i < p->nr_steps; i++)
			if (p->steps[i].step >= g->first_step && p->steps[i].step <= last)
				reqs += p->steps[i].requests;
		if (reqs && g->end_bytes > g->start_bytes)
			g->per_request = (double)(g->end_bytes - g->start_bytes) / reqs;
	}
	free(x);
	free(xt);
	free(y);
	free(v);
	return g->slope_per_step > 0;
}

int timeline__growth(struct timeline *tl, const struct tproc *tp, struct growth **out, size_t *n)
{
	struct ptl *p = ptl_of(tl, tp);
	struct growth *v;
	struct cut c;
	int64_t last;
	size_t i;

	*out = NULL;
	*n = 0;
	if (!p || !p->nr_steps || !p->nr_tr)
		return 0;
	last = p->steps[p->nr_steps - 1].step;
	if (cut_of(tl, p, last, &c))
		return -ENOMEM;
	v = calloc(p->nr_tr, sizeof(*v));
	if (!v) {
		cut_free(&c);
		return -ENOMEM;
	}
	for (i = 0; i < p->nr_tr; i++)
		if (analyse(tl, p, &p->tr[i], last, &c, &v[*n]))
			(*n)++;
	cut_free(&c);
	qsort(v, *n, sizeof(*v), cmp_growth);
	*out = v;
	return 0;
}

/*
 * The device a site's memory is on, as an index for the projection: a CUDA ordinal, or a
 * WebGPU device in order of first sight (wgpu#1 is 0); -1 for host memory.
 */
static int proj_device(const struct tproc *tp, const struct site *s)
{
	if (s->owner_kind == OWNER_DEVICE) {
		const struct tobj *o = tp ? tproc__obj(tp, SPACE_WGPU, s->owner) : NULL;

		return o && o->ordinal >= 1 && o->ordinal <= MAX_DEVICES ? (int)o->ordinal - 1 : -1;
	}
	return s->device >= 0 && s->device < MAX_DEVICES ? s->device : -1;
}

void timeline__project(struct timeline *tl, const struct tproc *tp, const struct growth *g,
		       size_t n, struct projection *out)
{
	struct ptl *p = ptl_of(tl, tp);
	double rate[MAX_DEVICES] = {0}, step_s;
	uint64_t live[MAX_DEVICES] = {0};
	bool webgpu[MAX_DEVICES] = {false};
	struct cut c;
	size_t i;
	int d;

	memset(out, 0, sizeof(*out));
	if (!p || p->nr_steps < 2)
		return;
	for (i = 0; i < n; i++) {
		int dev = proj_device(tp, &tl->t->sites[g[i].site]);

		if (dev >= 0)
			rate[dev] += g[i].slope_per_step;
	}
	/* Without memory for the sums: the live bytes now, as before the cut existed. */
	if (cut_of(tl, p, p->steps[p->nr_steps - 1].step, &c))
		c.on = false;
	for (i = 0; i < tl->t->nr_sites; i++) {
		const struct site *s = &tl->t->sites[i];
		int dev = site__of(s, tp) ? proj_device(tp, s) : -1;

		/* In use where the growth was judged: before the shutdown released it. */
		if (dev >= 0 && s->counts && (s->mem == MEM_DEVICE || s->mem == MEM_MANAGED))
			live[dev] += s->live_bytes + (c.on ? c.rel.site_bytes[i] : 0);
		if (dev >= 0 && s->owner_kind == OWNER_DEVICE)
			webgpu[dev] = true;
	}
	/* A caching allocator's reserve is in its segments' sites; blocks in no segment seen
	 * are memory of their own: what PyTorch has reserved and what is outside it. */
	for (d = 0; tp && tp->blocks && d < MAX_DEVICES && d < TBLOCKS_DEVICES; d++)
		live[d] += tp->blocks->orphan[d];
	cut_free(&c);
	step_s = (double)(p->steps[p->nr_steps - 1].t_end_ns - p->steps[0].t_end_ns) / 1e9 /
		 (double)(p->nr_steps - 1);
	for (d = 0; d < MAX_DEVICES; d++) {
		uint64_t cap = tl->o.device_mem ? tl->o.device_mem : p->dev[d].total;
		uint64_t base = 0, used, reserve;
		double steps;

		if (rate[d] <= 0 || !cap)
			continue;
		/* NVML's view of the process at attach, less what the trace already held. */
		if (p->dev[d].proc_known && p->dev[d].proc_used > p->traced_at_attach[d])
			base = p->dev[d].proc_used - p->traced_at_attach[d];
		/* Memory pools hold what was freed into them: still the process's, on d. */
		reserve = tp ? pools__reserve_on(tp, (int16_t)d) : 0;
		used = live[d] + base + reserve;
		steps = used >= cap ? 0 : (double)(cap - used) / rate[d];
		if (!out->known || steps < out->steps_to_oom) {
			out->known = true;
			out->webgpu = webgpu[d];
			out->device = (int16_t)d;
			out->capacity = cap;
			out->used = used;
			out->baseline = base;
			out->reserve = reserve;
			out->rate_per_step = rate[d];
			out->steps_to_oom = steps;
			out->seconds_to_oom = steps * step_s;
		}
	}
}
