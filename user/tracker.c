// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "probe_catalog.h"
#include "tracker.h"

/* ---- the live allocation table: open addressing, linear probing, backward-shift delete ---- */

static inline size_t at_home(const struct alloc_table *t, uint8_t ns, uint64_t addr)
{
	return hmap_mix(addr ^ ((uint64_t)ns << 57)) & (t->cap - 1);
}

static struct alloc *at_find(const struct alloc_table *t, uint8_t ns, uint64_t addr)
{
	size_t mask = t->cap - 1, i;

	if (!t->n)
		return NULL;
	for (i = at_home(t, ns, addr); t->slots[i].addr; i = (i + 1) & mask)
		if (t->slots[i].addr == addr && t->slots[i].ns == ns)
			return &t->slots[i];
	return NULL;
}

static int at_grow(struct alloc_table *t)
{
	size_t cap = t->cap ? 2 * t->cap : 1024, i;
	struct alloc *old = t->slots;
	size_t old_cap = t->cap;

	t->slots = calloc(cap, sizeof(*t->slots));
	if (!t->slots) {
		t->slots = old;
		return -ENOMEM;
	}
	t->cap = cap;
	for (i = 0; i < old_cap; i++) {
		size_t j;

		if (!old[i].addr)
			continue;
		for (j = at_home(t, old[i].ns, old[i].addr); t->slots[j].addr; j = (j + 1) & (cap - 1))
			;
		t->slots[j] = old[i];
	}
	free(old);
	return 0;
}

/* Insert a (ns, addr) known to be absent. */
static struct alloc *at_insert(struct alloc_table *t, const struct alloc *a)
{
	size_t i;

	/* 0.8 load keeps 10 M live allocations under 64 bytes each (16 M slots x 32 B). */
	if ((t->n + 1) * 5 > t->cap * 4 && at_grow(t))
		return NULL;
	for (i = at_home(t, a->ns, a->addr); t->slots[i].addr; i = (i + 1) & (t->cap - 1))
		;
	t->slots[i] = *a;
	t->n++;
	return &t->slots[i];
}

static void at_remove(struct alloc_table *t, struct alloc *slot)
{
	size_t mask = t->cap - 1, i = slot - t->slots, j;

	for (j = (i + 1) & mask; t->slots[j].addr; j = (j + 1) & mask) {
		size_t home = at_home(t, t->slots[j].ns, t->slots[j].addr);

		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i].addr = 0;
	t->n--;
}

/* ---- processes, threads, sites ---- */

/* Inner allocation records of a thread, waiting for the outermost call to return. */
struct tthread {
	uint32_t tid;
	int16_t device;
	uint16_t nr_inner;
	struct gl_call_rec inner[8];
};

int tracker__new(struct tracker **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

static void proc_free(struct tproc *p)
{
	size_t i;
	const struct hmap_slot *s;

	if (!p)
		return;
	for (i = 0; hmap__next(&p->threads, &i, &s);)
		free((void *)(uintptr_t)s->val);
	hmap__free(&p->threads);
	hmap__free(&p->events);
	free(p->allocs.slots);
	free(p->pend);
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

static struct tproc *proc_get(struct tracker *t, pid_t pid)
{
	struct tproc *p = tracker__proc(t, pid);

	if (p && !p->exited)
		return p;
	if (t->nr_procs == t->cap_procs) {
		size_t cap = t->cap_procs ? 2 * t->cap_procs : 8;
		struct tproc **v = realloc(t->procs, cap * sizeof(*v));

		if (!v)
			return NULL;
		t->procs = v;
		t->cap_procs = cap;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	t->procs[t->nr_procs++] = p;
	return p;
}

static struct tthread *thread_get(struct tproc *p, uint32_t tid)
{
	uint64_t *v = hmap__get(&p->threads, tid, 0);
	struct tthread *th;

	if (v)
		return (struct tthread *)(uintptr_t)*v;
	th = calloc(1, sizeof(*th));
	if (!th)
		return NULL;
	th->tid = tid;
	if (hmap__put(&p->threads, tid, 0, (uintptr_t)th)) {
		free(th);
		return NULL;
	}
	return th;
}

static uint32_t site_get(struct tracker *t, pid_t pid, uint16_t api, int16_t device,
			 uint64_t caller, int32_t stack_id)
{
	uint64_t k0 = (uint64_t)(uint32_t)pid << 32 | (uint64_t)api << 16 | (uint16_t)device;
	uint64_t k1 = stack_id >= 0 ? 1ULL << 63 | (uint32_t)stack_id : caller;
	uint64_t *v = hmap__get(&t->site_idx, k0, k1);
	struct site *s;

	if (v)
		return *v;
	if (t->nr_sites == t->cap_sites) {
		size_t cap = t->cap_sites ? 2 * t->cap_sites : 256;
		struct site *nv = realloc(t->sites, cap * sizeof(*nv));

		if (!nv)
			return UINT32_MAX;
		t->sites = nv;
		t->cap_sites = cap;
	}
	if (hmap__put(&t->site_idx, k0, k1, t->nr_sites))
		return UINT32_MAX;
	s = &t->sites[t->nr_sites];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->api = api;
	s->device = device;
	s->caller = caller;
	s->stack_id = stack_id;
	return t->nr_sites++;
}

uint64_t tproc__dropped(const struct tproc *p)
{
	return p->loss[GL_STAT_RB_FULL] + p->loss[GL_STAT_STASH_FAIL] +
	       p->loss[GL_STAT_DEPTH_OVERFLOW] + p->loss[GL_STAT_RET_NO_ENTRY];
}

static uint8_t ns_of(const struct cat_api *a)
{
	return (uint8_t)a->ns;
}

/*
 * Streams as the tracker names them. The per-thread default stream (cudaStreamPerThread,
 * or stream 0 in a _ptsz call) is one per thread; tid << 32 lies above every user address,
 * so it never equals a real stream handle. The legacy default stream (0 or
 * cudaStreamLegacy) is 0.
 */
#define STREAM_LEGACY 0x1
#define STREAM_PER_THREAD 0x2

static uint64_t stream_key(const struct cat_api *a, uint32_t tid, uint64_t stream)
{
	if (stream == STREAM_PER_THREAD || (stream == 0 && (a->flags & CAT_PTSZ)))
		return (uint64_t)tid << 32 | STREAM_PER_THREAD;
	if (stream == STREAM_LEGACY)
		return 0;
	return stream;
}

static int16_t thread_device(struct tproc *p, uint32_t tid)
{
	struct tthread *th = thread_get(p, tid);

	return th ? th->device : 0;
}

/* ---- allocation graph updates ---- */

static void release(struct tracker *t, struct tproc *p, struct alloc *a)
{
	struct site *s = &t->sites[a->site];

	if (a->state == AS_PENDING) {
		s->pending_bytes -= a->size;
		s->pending_count--;
		p->pending_bytes -= a->size;
		p->pending_count--;
	} else {
		s->live_bytes -= a->size;
		s->live_count--;
		p->live_bytes -= a->size;
		p->live_count--;
	}
	s->frees++;
	p->c.frees++;
	p->c.freed_bytes += a->size;
	at_remove(&p->allocs, a);
}

static void pending_drop(struct tproc *p, size_t i)
{
	p->pend[i] = p->pend[--p->nr_pend];
}

static int do_alloc(struct tracker *t, struct tproc *p, const struct cat_api *api,
		    const struct gl_call_rec *r)
{
	int16_t device = api->mem == MEM_HOST_PINNED ? -1 : thread_device(p, r->hdr.tid);
	uint8_t ns = ns_of(api);
	struct alloc a, *old;
	uint32_t site;

	/* cudaMalloc(&p, 0) succeeds with a NULL pointer: a call, not memory. */
	if (!r->addr || (r->hdr.flags & GL_HF_ADDR_READ_FAIL))
		return 0;
	site = site_get(t, p->pid, r->hdr.api, device, r->caller, r->stack_id);
	if (site == UINT32_MAX)
		return -ENOMEM;
	old = at_find(&p->allocs, ns, r->addr);
	if (old) {
		size_t i;

		if (old->state == AS_PENDING) {
			/* Stream-ordered reuse (cudaMallocAsync handing back a block whose
			 * async free is pending): legal, the pending free is complete. */
			p->c.async_reuse++;
			for (i = 0; i < p->nr_pend; i++)
				if (p->pend[i].addr == r->addr && p->pend[i].ns == ns) {
					pending_drop(p, i);
					break;
				}
		} else {
			/* Still live here: freed by something we did not see. */
			p->c.addr_reuse++;
		}
		release(t, p, old);
	}
	a = (struct alloc){ .addr = r->addr, .size = r->size, .ts_ns = r->hdr.ts_ns,
			    .site = site, .ns = ns, .state = AS_LIVE };
	if (!at_insert(&p->allocs, &a))
		return -ENOMEM;
	t->sites[site].live_bytes += r->size;
	t->sites[site].live_count++;
	t->sites[site].allocs++;
	t->sites[site].alloc_bytes += r->size;
	p->live_bytes += r->size;
	p->live_count++;
	p->c.allocs++;
	p->c.alloc_bytes += r->size;
	return 0;
}

static int do_free(struct tracker *t, struct tproc *p, const struct cat_api *api,
		   const struct gl_call_rec *r)
{
	uint8_t ns = ns_of(api);
	struct alloc *a;

	if (!r->addr) {
		p->c.null_frees++;
		return 0;
	}
	a = at_find(&p->allocs, ns, r->addr);
	if (!a) {
		p->c.unknown_frees++;
		return 0;
	}
	if (a->state == AS_PENDING) {
		p->c.double_frees++;
		return 0;
	}
	if (api->op == OP_FREE) {
		release(t, p, a);
		return 0;
	}
	/* Async free: the memory stays in use until the stream reaches this point. */
	if (p->nr_pend == p->cap_pend) {
		size_t cap = p->cap_pend ? 2 * p->cap_pend : 64;
		struct pending_free *v = realloc(p->pend, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->pend = v;
		p->cap_pend = cap;
	}
	p->pend[p->nr_pend++] = (struct pending_free){
		.addr = r->addr, .ns = ns, .ts_ns = r->hdr.ts_ns,
		.stream = stream_key(api, r->hdr.tid, r->aux),
	};
	a->state = AS_PENDING;
	t->sites[a->site].live_bytes -= a->size;
	t->sites[a->site].live_count--;
	t->sites[a->site].pending_bytes += a->size;
	t->sites[a->site].pending_count++;
	p->live_bytes -= a->size;
	p->live_count--;
	p->pending_bytes += a->size;
	p->pending_count++;
	return 0;
}

/*
 * Complete pending frees issued before `before_ns`: on one stream, or on every stream of a
 * device (device < -1: any device). A sync of the legacy stream waits for all blocking
 * streams of the process, so it completes every stream.
 */
static void complete(struct tracker *t, struct tproc *p, bool all_streams, uint64_t stream,
		     int device, uint64_t before_ns)
{
	size_t i = 0;

	while (i < p->nr_pend) {
		struct pending_free *pf = &p->pend[i];
		struct alloc *a;

		if (pf->ts_ns > before_ns || (!all_streams && pf->stream != stream)) {
			i++;
			continue;
		}
		a = at_find(&p->allocs, pf->ns, pf->addr);
		if (a && device >= -1 && t->sites[a->site].device != device) {
			i++;
			continue;
		}
		if (a && a->state == AS_PENDING)
			release(t, p, a);
		pending_drop(p, i);
	}
}

static void device_reset(struct tracker *t, struct tproc *p, int16_t device)
{
	size_t i = 0;

	/* Every allocation of the device goes, except stream-ordered pool memory, which
	 * cudaDeviceReset leaves alone (cuda_runtime_api.h). */
	while (i < p->allocs.cap) {
		struct alloc *a = &p->allocs.slots[i];
		const struct cat_api *api;

		if (!a->addr || t->sites[a->site].device != device) {
			i++;
			continue;
		}
		api = cat_by_api(t->sites[a->site].api);
		if (api && (api->flags & CAT_STREAM_POOL)) {
			i++;
			continue;
		}
		/* Backward shift may move an unvisited entry into slot i: look at i again. */
		release(t, p, a);
	}
	complete(t, p, true, 0, -2, UINT64_MAX);
}

static int apply_op(struct tracker *t, struct tproc *p, const struct cat_api *api,
		    const struct gl_call_rec *r)
{
	struct tthread *th;
	uint64_t *ev;

	switch (r->hdr.kind) {
	case GL_REC_ALLOC:
		return api->op == OP_ALLOC ? do_alloc(t, p, api, r) : 0;
	case GL_REC_ALLOC_FAIL:
		p->c.failed_calls++;
		if (api->op == OP_ALLOC) {
			int16_t dev = api->mem == MEM_HOST_PINNED ? -1 : thread_device(p, r->hdr.tid);
			uint32_t site = site_get(t, p->pid, r->hdr.api, dev, r->caller, r->stack_id);

			if (site == UINT32_MAX)
				return -ENOMEM;
			t->sites[site].failed++;
			t->sites[site].last_err = r->ret;
		}
		return 0;
	case GL_REC_FREE:
		return api->op == OP_FREE || api->op == OP_FREE_ASYNC ? do_free(t, p, api, r) : 0;
	case GL_REC_SYNC:
	case GL_REC_CALL:
		break;
	default:
		return 0;
	}
	if (r->ret) {
		int16_t dev = thread_device(p, r->hdr.tid);
		uint32_t site = site_get(t, p->pid, r->hdr.api, dev, r->caller, r->stack_id);

		p->c.failed_calls++;
		if (site == UINT32_MAX)
			return -ENOMEM;
		t->sites[site].failed++;
		t->sites[site].last_err = r->ret;
		return 0;
	}
	switch (api->op) {
	case OP_SYNC_STREAM: {
		uint64_t key = stream_key(api, r->hdr.tid, r->aux);

		complete(t, p, key == 0, key, -2, r->aux2);
		break;
	}
	case OP_SYNC_DEVICE:
		complete(t, p, true, 0, thread_device(p, r->hdr.tid), r->aux2);
		break;
	case OP_SYNC_EVENT:
		ev = hmap__get(&p->events, r->aux, 0);
		/* An event never recorded (or recorded before attach) completes nothing. */
		if (ev)
			complete(t, p, *ev == 0, *ev, -2, r->aux2);
		break;
	case OP_EVENT_RECORD:
		return hmap__put(&p->events, r->addr, 0, stream_key(api, r->hdr.tid, r->aux));
	case OP_SET_DEVICE:
		th = thread_get(p, r->hdr.tid);
		if (!th)
			return -ENOMEM;
		th->device = (int16_t)r->aux;
		break;
	case OP_DEVICE_RESET:
		device_reset(t, p, thread_device(p, r->hdr.tid));
		break;
	default:
		break;
	}
	return 0;
}

/*
 * One user allocation is counted once, at the outermost traced call: records of calls nested
 * inside another traced call on the same thread (depth > 0) wait for the outer call. An inner
 * allocation of the address the outer call returns is a lower layer of the same memory;
 * any other inner allocation is memory of its own, allocated on the caller's behalf.
 */
static int apply_call(struct tracker *t, struct tproc *p, const struct gl_call_rec *r)
{
	const struct cat_api *api = cat_by_api(r->hdr.api);
	struct tthread *th;
	unsigned int i;
	int err = 0;

	if (!api)
		return 0;
	if (api->op != OP_RENDEZVOUS)
		p->c.calls++;
	if (r->hdr.depth && r->hdr.kind == GL_REC_ALLOC && api->op == OP_ALLOC) {
		th = thread_get(p, r->hdr.tid);
		if (th && th->nr_inner < sizeof(th->inner) / sizeof(th->inner[0])) {
			th->inner[th->nr_inner++] = *r;
			return 0;
		}
		return do_alloc(t, p, api, r);
	}
	if (!r->hdr.depth && r->hdr.kind != GL_REC_FREE && r->hdr.kind != GL_REC_NOTIFY) {
		uint64_t *v = hmap__get(&p->threads, r->hdr.tid, 0);

		th = v ? (struct tthread *)(uintptr_t)*v : NULL;
		for (i = 0; th && i < th->nr_inner; i++) {
			const struct gl_call_rec *in = &th->inner[i];
			const struct cat_api *ia = cat_by_api(in->hdr.api);

			if (r->hdr.kind == GL_REC_ALLOC && in->addr == r->addr)
				continue;	/* a layer of the outer allocation */
			if (ia && !err)
				err = do_alloc(t, p, ia, in);
		}
		if (th)
			th->nr_inner = 0;
		if (err)
			return err;
	}
	return apply_op(t, p, api, r);
}

static void apply_proc(struct tracker *t, const struct gl_proc_rec *r)
{
	struct tproc *p = proc_get(t, r->hdr.pid);

	if (!p)
		return;
	switch (r->event) {
	case GL_PROC_ATTACH:
		p->attached = true;
		p->start_ticks = r->start_ticks;
		memcpy(p->comm, r->comm, sizeof(p->comm));
		p->comm[sizeof(p->comm) - 1] = 0;
		if (!p->first_ts_ns)
			p->first_ts_ns = r->hdr.ts_ns;
		break;
	case GL_PROC_EXIT:
		p->exited = true;
		p->exit_status = r->status;
		break;
	case GL_PROC_DETACH:
		p->detached = true;
		break;
	}
	p->last_ts_ns = r->hdr.ts_ns;
	(void)t;
}

int tracker__apply(struct tracker *t, const struct gl_hdr *h)
{
	struct tproc *p;

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
		if (!p->first_ts_ns)
			p->first_ts_ns = h->ts_ns;
		p->last_ts_ns = h->ts_ns;
		return apply_call(t, p, (const struct gl_call_rec *)h);
	case GL_REC_LABEL:
		return 0;
	case GL_REC_TICK:
		return 0;
	case GL_REC_PROC:
		if (h->size < sizeof(struct gl_proc_rec))
			break;
		apply_proc(t, (const struct gl_proc_rec *)h);
		return 0;
	case GL_REC_LOSS:
		if (h->size < sizeof(struct gl_loss_rec))
			break;
		p = proc_get(t, h->pid);
		if (!p)
			return -ENOMEM;
		memcpy(p->loss, ((const struct gl_loss_rec *)h)->counts, sizeof(p->loss));
		return 0;
	default:
		break;
	}
	t->bad_records++;
	return -EINVAL;
}
