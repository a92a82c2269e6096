// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The tracker itself (tracker.h): its processes, and the way in of every record. It owns the
 * process list, and routes each record by kind: calls to the call tree (which applies them by
 * their operation), labels to the WebGPU objects, threads made for a call to the call tree,
 * process events and loss counts to the process itself. A process's end runs the checks of
 * the session's end; freeing one frees what every module keeps in it.
 * Calls: call_tree.c, wgpu_objects.c, blocks.c, graphs.c, ipc.c, pools.c (freeing what they
 * keep), pending.c, violations.c, threads.c (tracker.h lists the modules).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "tracker/tracker.h"
#include "tracker/blocks.h"
#include "tracker/call_tree.h"
#include "tracker/graphs.h"
#include "tracker/ipc.h"
#include "tracker/pending.h"
#include "tracker/pools.h"
#include "tracker/rules.h"
#include "tracker/threads.h"
#include "tracker/violations.h"
#include "tracker/wgpu_objects.h"
#include "probe/catalog.h"
#include "lib/vec.h"

int tracker__new(struct tracker **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void tracker__set_rules(struct tracker *t, const struct rules *rules, frames_fn frames, void *ctx)
{
	size_t i;

	t->rules = rules;
	t->frames = frames;
	t->frames_ctx = ctx;
	memset(t->defer_known, 0, sizeof(t->defer_known));
	t->defer_per_call = false;
	for (i = 0; rules && i < rules->n; i++)
		t->defer_per_call |= rules->v[i].kind == RULE_DEFERRED &&
				     (rule__needs_frames(&rules->v[i]) || rules->v[i].pid);
}

void tracker__set_site_fn(struct tracker *t, site_fn fn, void *ctx)
{
	t->site_of = fn;
	t->site_ctx = ctx;
}

void tracker__on_pending_done(struct tracker *t, pending_done_fn fn, void *ctx)
{
	t->pend_done = fn;
	t->pend_done_ctx = ctx;
}

void tracker__on_mem_event(struct tracker *t, mem_event_fn fn, void *ctx)
{
	t->mem_ev = fn;
	t->mem_ev_ctx = ctx;
}

void tracker__set_init_retained(struct tracker *t, bool on)
{
	t->init_retained = on;
}

void tracker__set_step(struct tracker *t, pid_t pid, int64_t step, uint64_t ts_ns)
{
	struct tproc *p = tracker__proc(t, pid);
	size_t i;

	if (!p || p->exited)
		return;
	p->step = step;
	p->step_ts_ns = ts_ns;
	for (i = 0; i < p->nr_step_changes; i++)
		t->sites[p->step_changes[i].site].step_change = 0;
	p->nr_step_changes = 0;
	pending__window_checks(t, p, ts_ns);
}

void tracker__reset_counts(struct tracker *t, const pid_t *pids, size_t n)
{
	struct hmap which = {0};
	size_t i;

	for (i = 0; i < n; i++) {
		struct tproc *p = tracker__proc(t, pids[i]);

		if (!p || hmap__put(&which, (uint32_t)p->pid, 0, 1))
			continue;
		p->c.allocs = p->c.alloc_bytes = p->c.frees = p->c.freed_bytes = 0;
		p->c.calls = p->c.layers = p->c.addr_reuse = p->c.async_reuse = 0;
		p->records = 0;
	}
	/* one pass over the sites, whatever the number of processes */
	for (i = 0; which.n && i < t->nr_sites; i++) {
		struct site *s = &t->sites[i];

		if (hmap__get(&which, (uint32_t)s->pid, 0))
			s->allocs = s->alloc_bytes = s->frees = s->failed = 0;
	}
	hmap__free(&which);
}

/* ---- processes ---- */

static void proc_free(struct tproc *p)
{
	if (!p)
		return;
	threads__free(p);
	wgpu_objects__free(p);
	graphs__free(p);
	ipc__free(p);
	pools__free(p);
	blocks__free(p);
	hmap__free(&p->events);
	hmap__free(&p->regrefs);
	free(p->freed);
	alloc_table__free(&p->allocs);
	free(p->pend);
	free(p->ctxs);
	free(p->comms);
	free(p->maps);
	free(p->rule_live);
	free(p->viols);
	free(p->dirty);
	free(p->step_changes);
	free(p->shut);
	free(p);
}

void tracker__free(struct tracker *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr_procs; i++)
		proc_free(t->procs[i]);
	free(t->procs);
	free(t->sites);
	hmap__free(&t->site_idx);
	free(t->sstacks);
	hmap__free(&t->sstack_idx);
	free(t->cands);
	for (i = 0; i < t->nr_labels; i++)
		free(t->labels[i]);
	free(t->labels);
	hmap__free(&t->label_idx);
	ipc__registry_free(t);
	free(t);
}

struct tproc *tracker__proc(struct tracker *t, pid_t pid)
{
	size_t i;

	/* A reused pid after an exit gets a fresh entry: search newest first. */
	for (i = t->nr_procs; i--;)
		if (t->procs[i]->pid == pid)
			return t->procs[i];
	return NULL;
}

struct tproc *tracker__image(const struct tracker *t, pid_t pid, uint32_t gen)
{
	size_t i;

	for (i = t->nr_procs; i--;)
		if (t->procs[i]->pid == pid && t->procs[i]->gen == gen)
			return t->procs[i];
	return NULL;
}

struct tproc *tracker__site_proc(const struct tracker *t, const struct site *s)
{
	return tracker__image(t, s->pid, s->gen);
}

static struct tproc *proc_get(struct tracker *t, pid_t pid)
{
	struct tproc *p = tracker__proc(t, pid), *prev = p;

	if (p && !p->exited)
		return p;
	p = vec_push_new(&t->procs, &t->cap_procs, &t->nr_procs, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->gen = prev ? prev->gen + 1 : 0;
	p->step = -1;
	p->last_alloc_step = -1;
	if (t->rules && t->rules->n) {
		p->rule_live = calloc(t->rules->n, sizeof(*p->rule_live));
		if (!p->rule_live) {
			free(t->procs[--t->nr_procs]);
			return NULL;
		}
	}
	return p;
}

/* ---- the error bounds of a process's live bytes ---- */

uint64_t tproc__dropped(const struct tproc *p)
{
	return p->loss[GL_STAT_RB_FULL] + p->loss[GL_STAT_STASH_FAIL] +
	       p->loss[GL_STAT_DEPTH_OVERFLOW] + p->loss[GL_STAT_RET_NO_ENTRY];
}

static int cmp_desc_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x == y ? 0 : x > y ? -1 : 1;
}

int tproc__uncertainty(const struct tracker *t, const struct tproc *p, struct uncertainty *u)
{
	uint64_t lost_frees = p->loss[GL_STAT_LOST_FREES], *sizes;
	size_t i, n = 0;

	memset(u, 0, sizeof(*u));
	u->approximate =
	    tproc__dropped(p) || p->loss[GL_STAT_READ_FAIL] || p->loss[GL_STAT_MAP_FULL];
	/* Lost in the ring, or arrived without the address its out-pointer should have held. */
	u->allocs_missed = p->loss[GL_STAT_LOST_ALLOCS] + p->c.unaddressed_allocs;
	u->alloc_bytes_missed = p->loss[GL_STAT_LOST_ALLOC_BYTES] + p->c.unaddressed_bytes;
	u->allocs_missed_unsized = p->loss[GL_STAT_LOST_ALLOCS_UNSIZED];
	u->frees_missed = lost_frees;
	/* Also a call whose return never came (stale frames), or an unreadable address. */
	u->approximate |= u->allocs_missed || u->allocs_missed_unsized || lost_frees;
	/* Allocations missed can only have made live bytes look smaller, by at most their
	 * bytes; one of unknown size leaves that side open. */
	u->under_known = !u->allocs_missed_unsized;
	u->live_understated_max = u->alloc_bytes_missed;
	/* Each free missed left one allocation looking live: at worst the largest ones. */
	if (!lost_frees)
		return 0;
	if (lost_frees >= p->live_count) {
		u->live_overstated_max = p->live_bytes;
		return 0;
	}
	sizes = malloc(p->live_count * sizeof(*sizes));
	if (!sizes)
		return -ENOMEM;
	for (i = 0; i < p->allocs.cap && n < p->live_count; i++) {
		const struct alloc *a = &p->allocs.slots[i];

		if (a->addr && !(a->flags & AF_PENDING) &&
		    t->sites[tracker__alloc_site(t, a)].counts)
			sizes[n++] = a->size;
	}
	qsort(sizes, n, sizeof(*sizes), cmp_desc_u64);
	for (i = 0; i < n && i < lost_frees; i++)
		u->live_overstated_max += sizes[i];
	free(sizes);
	return 0;
}

int tproc__released(const struct tracker *t, const struct tproc *p, struct released *out)
{
	size_t i;

	out->site_bytes = calloc(t->nr_sites ? t->nr_sites : 1, sizeof(uint64_t));
	out->site_count = calloc(t->nr_sites ? t->nr_sites : 1, sizeof(uint64_t));
	out->ss_bytes = calloc(t->nr_sstacks ? t->nr_sstacks : 1, sizeof(uint64_t));
	out->ss_count = calloc(t->nr_sstacks ? t->nr_sstacks : 1, sizeof(uint64_t));
	if (!out->site_bytes || !out->site_count || !out->ss_bytes || !out->ss_count) {
		released__free(out);
		return -ENOMEM;
	}
	for (i = 0; i < p->nr_shut; i++) {
		const struct release *e = &p->shut[i];
		uint32_t site;

		if (e->sstack >= t->nr_sstacks)
			continue;
		site = t->sstacks[e->sstack].site;
		out->site_bytes[site] += e->bytes;
		out->site_count[site]++;
		out->ss_bytes[e->sstack] += e->bytes;
		out->ss_count[e->sstack]++;
	}
	return 0;
}

void released__free(struct released *r)
{
	free(r->site_bytes);
	free(r->site_count);
	free(r->ss_bytes);
	free(r->ss_count);
	memset(r, 0, sizeof(*r));
}

/* Session end for p: deferred frees past their window, classes that must be released. */
static void end_checks(struct tracker *t, struct tproc *p, uint64_t ts_ns)
{
	pending__window_checks(t, p, ts_ns);
	violations__not_released(t, p, ts_ns);
}

static void apply_proc(struct tracker *t, const struct gl_proc_rec *r)
{
	struct tproc *p =
	    r->event == GL_PROC_ATTACH ? proc_get(t, r->hdr.pid) : tracker__proc(t, r->hdr.pid);

	if (!p)
		return;
	switch (r->event) {
	case GL_PROC_ATTACH:
		p->attached = true;
		p->start_ticks = r->start_ticks;
		memcpy(p->comm, r->comm, sizeof(p->comm));
		p->comm[sizeof(p->comm) - 1] = 0;
		if (r->hdr.size >= sizeof(*r)) {
			p->ppid = r->ppid;
			p->ns_pid = r->ns_pid;
		}
		if (!p->first_ts_ns)
			p->first_ts_ns = r->hdr.ts_ns;
		break;
	case GL_PROC_EXEC:
		/* Its memory went with its old program: the same end as an exit. */
		call_tree__flush(t, p);
		end_checks(t, p, r->hdr.ts_ns);
		p->exited = true;
		p->execed = true;
		p->exit_status = -1;
		break;
	case GL_PROC_EXIT:
		call_tree__flush(t, p);
		end_checks(t, p, r->hdr.ts_ns);
		p->exited = true;
		p->exit_status = r->status;
		break;
	case GL_PROC_DETACH:
	case GL_PROC_END:
		call_tree__flush(t, p);
		end_checks(t, p, r->hdr.ts_ns);
		p->detached = true;
		p->ended = r->event == GL_PROC_END;
		break;
	}
	p->last_ts_ns = r->hdr.ts_ns;
}

void tracker__prefetch(const struct tracker *t, const struct gl_hdr *h)
{
	const struct gl_call_rec *r = (const struct gl_call_rec *)h;
	const struct cat_api *api;
	const struct tproc *p = NULL;
	size_t i;

	if ((h->kind != GL_REC_ALLOC && h->kind != GL_REC_FREE) || h->size < sizeof(*r))
		return;
	for (i = t->nr_procs; i-- && !p;)
		if (t->procs[i]->pid == (pid_t)h->pid)
			p = t->procs[i];
	api = cat_by_api(h->api);
	if (p && api)
		alloc_table__prefetch(&p->allocs, (uint8_t)api->space, r->addr);
}

/* A call record is a call: its traps are its probes (GL_REC_COST prices them). */
static void count_traps(struct tproc *p, uint16_t api)
{
	const struct cat_api *a = cat_by_api(api);

	if (!a)
		return;
	if (a->flags & CAT_USDT) {
		p->traps[GL_TRAP_USDT]++;
		return;
	}
	p->traps[GL_TRAP_ENTRY]++;
	if (!cat_entry_only(a))
		p->traps[GL_TRAP_RETURN]++;
}

int tracker__apply(struct tracker *t, const struct gl_hdr *h)
{
	struct tproc *p;
	int err;

	t->records++;
	if (h->ts_ns > t->last_ts_ns)
		t->last_ts_ns = h->ts_ns;
	switch (h->kind) {
	case GL_REC_ALLOC:
	case GL_REC_ALLOC_FAIL:
	case GL_REC_FREE:
	case GL_REC_SYNC:
	case GL_REC_CALL:
	case GL_REC_NOTIFY:
		if (h->size < sizeof(struct gl_call_rec))
			break;
		p = proc_get(t, h->pid);
		if (!p)
			return -ENOMEM;
		p->records++;
		count_traps(p, h->api);
		if (!p->first_ts_ns)
			p->first_ts_ns = h->ts_ns;
		p->last_ts_ns = h->ts_ns;
		err = call_tree__apply(t, p, (const struct gl_call_rec *)h);
		/* A segment went with blocks in it (a reset, a missed free): they went too. */
		if (__builtin_expect(p->regions.nr_gone, 0))
			blocks__sweep(t, p);
		return err;
	case GL_REC_LABEL:
		if (h->size < sizeof(struct gl_label_rec))
			break;
		p = proc_get(t, h->pid);
		if (!p)
			return -ENOMEM;
		return wgpu_objects__label(t, p, (const struct gl_label_rec *)h);
	case GL_REC_CODE:
	case GL_REC_PY_CODE:
	case GL_REC_PY_STACK:
		/* Python frames are the symbolizer's: a site asks it (site_fn). */
		return 0;
	case GL_REC_CLASS:
		if (h->size < sizeof(struct gl_class_rec))
			break;
		p = proc_get(t, h->pid);
		if (!p)
			return -ENOMEM;
		return wgpu_objects__class(p, (const struct gl_class_rec *)h);
	case GL_REC_TICK:
		return 0;
	case GL_REC_TASK:
		/* What it means for a process (a child to trace, an exit status) reaches the
		 * analysis as GL_REC_PROC from user space, once acted on; a thread made to do a
		 * call's work is the tracker's own business. */
		if (h->size < sizeof(struct gl_task_rec) ||
		    ((const struct gl_task_rec *)h)->event != GL_TASK_THREAD)
			return 0;
		p = proc_get(t, h->pid);
		if (!p)
			return -ENOMEM;
		return call_tree__thread_made(p, (const struct gl_task_rec *)h);
	case GL_REC_PROC:
		if (h->size < GL_PROC_REC_V1_SIZE)
			break;
		apply_proc(t, (const struct gl_proc_rec *)h);
		return 0;
	case GL_REC_COST: {
		size_t n = h->size < sizeof(p->cost) ? h->size : sizeof(p->cost);

		if (h->size < offsetof(struct gl_cost_rec, level_ns))
			break;
		p = tracker__proc(t, h->pid);
		if (!p)
			p = proc_get(t, h->pid);
		if (!p)
			return -ENOMEM;
		/* A newer record's tail is left out, an older one's is zeroes. */
		memset(&p->cost, 0, sizeof(p->cost));
		memcpy(&p->cost, h, n);
		p->cost.hdr.size = n;
		return 0;
	}
	case GL_REC_LOSS: {
		size_t n = h->size - sizeof(*h);

		if (h->size < GL_LOSS_REC_V1_SIZE)
			break;
		p = tracker__proc(t, h->pid);
		if (!p)
			p = proc_get(t, h->pid);
		if (!p)
			return -ENOMEM;
		/* Older records have fewer counters, newer ones more: take those we know. */
		memcpy(p->loss, ((const struct gl_loss_rec *)h)->counts,
		       n < sizeof(p->loss) ? n : sizeof(p->loss));
		return 0;
	}
	default:
		break;
	}
	t->bad_records++;
	return -EINVAL;
}
