// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "probe_catalog.h"
#include "tracker.h"
#include "wgpu.h"

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
	/* An error object was made at this depth: the creation one level up returns it. */
	uint8_t error_depth;
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
	for (i = 0; hmap__next(&p->objs, &i, &s);)
		free((void *)(uintptr_t)s->val);
	for (i = 0; hmap__next(&p->queues, &i, &s);)
		free((void *)(uintptr_t)s->val);
	hmap__free(&p->threads);
	hmap__free(&p->events);
	hmap__free(&p->objs);
	hmap__free(&p->queues);
	free(p->allocs.slots);
	free(p->pend);
	free(p->watch);
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
	for (i = 0; i < t->nr_labels; i++)
		free(t->labels[i]);
	free(t->labels);
	hmap__free(&t->label_idx);
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

/*
 * The site of (pid, api, device, caller or stack, owner). The index is keyed without the
 * owner; sites that differ only in owner (one call site creating buffers on two WebGPU
 * devices) are chained from the first.
 */
static uint32_t site_get(struct tracker *t, pid_t pid, uint16_t api, int16_t device,
			 uint64_t caller, int32_t stack_id, uint64_t owner)
{
	uint64_t k0 = (uint64_t)(uint32_t)pid << 32 | (uint64_t)api << 16 | (uint16_t)device;
	uint64_t k1 = stack_id >= 0 ? 1ULL << 63 | (uint32_t)stack_id : caller;
	uint64_t *v = hmap__get(&t->site_idx, k0, k1);
	uint32_t i = UINT32_MAX, last = UINT32_MAX;
	struct site *s;

	if (v) {
		for (i = *v; i != UINT32_MAX; i = t->sites[i].next_owner) {
			if (t->sites[i].owner == owner)
				return i;
			last = i;
		}
	}
	if (t->nr_sites == t->cap_sites) {
		size_t cap = t->cap_sites ? 2 * t->cap_sites : 256;
		struct site *nv = realloc(t->sites, cap * sizeof(*nv));

		if (!nv)
			return UINT32_MAX;
		t->sites = nv;
		t->cap_sites = cap;
	}
	if (last == UINT32_MAX && hmap__put(&t->site_idx, k0, k1, t->nr_sites))
		return UINT32_MAX;
	s = &t->sites[t->nr_sites];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->api = api;
	s->device = device;
	s->caller = caller;
	s->stack_id = stack_id;
	s->owner = owner;
	s->next_owner = UINT32_MAX;
	if (last != UINT32_MAX)
		t->sites[last].next_owner = t->nr_sites;
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
	if (a->flags & ALLOC_UNSIZED)
		s->unsized--;
	s->frees++;
	p->c.frees++;
	p->c.freed_bytes += a->size;
	at_remove(&p->allocs, a);
}

static void pending_drop(struct tproc *p, size_t i)
{
	p->pend[i] = p->pend[--p->nr_pend];
}

/* A live allocation's free is issued but waits for pf's stream or queue to get there. */
static int make_pending(struct tracker *t, struct tproc *p, struct alloc *a,
			const struct pending_free *pf)
{
	if (p->nr_pend == p->cap_pend) {
		size_t cap = p->cap_pend ? 2 * p->cap_pend : 64;
		struct pending_free *v = realloc(p->pend, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->pend = v;
		p->cap_pend = cap;
	}
	p->pend[p->nr_pend++] = *pf;
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

/* Make (ns of api, r->addr) live with size bytes at site. */
static int alloc_insert(struct tracker *t, struct tproc *p, const struct cat_api *api,
			const struct gl_call_rec *r, uint32_t site, uint64_t size, uint16_t flags)
{
	uint8_t ns = ns_of(api);
	struct alloc a, *old;

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
	a = (struct alloc){ .addr = r->addr, .size = size, .ts_ns = r->hdr.ts_ns,
			    .site = site, .ns = ns, .state = AS_LIVE, .flags = flags };
	if (!at_insert(&p->allocs, &a))
		return -ENOMEM;
	t->sites[site].live_bytes += size;
	t->sites[site].live_count++;
	t->sites[site].allocs++;
	t->sites[site].alloc_bytes += size;
	if (flags & ALLOC_UNSIZED)
		t->sites[site].unsized++;
	p->live_bytes += size;
	p->live_count++;
	p->c.allocs++;
	p->c.alloc_bytes += size;
	return 0;
}

static int do_alloc(struct tracker *t, struct tproc *p, const struct cat_api *api,
		    const struct gl_call_rec *r)
{
	int16_t device = api->mem == MEM_HOST_PINNED ? -1 : thread_device(p, r->hdr.tid);
	uint32_t site;

	/* cudaMalloc(&p, 0) succeeds with a NULL pointer: a call, not memory. */
	if (!r->addr || (r->hdr.flags & GL_HF_ADDR_READ_FAIL))
		return 0;
	site = site_get(t, p->pid, r->hdr.api, device, r->caller, r->stack_id, 0);
	if (site == UINT32_MAX)
		return -ENOMEM;
	return alloc_insert(t, p, api, r, site, r->size, 0);
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
	return make_pending(t, p, a, &(struct pending_free){
		.addr = r->addr, .ns = ns, .ts_ns = r->hdr.ts_ns,
		.stream = stream_key(api, r->hdr.tid, r->aux),
	});
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

		if (pf->by_serial || pf->ts_ns > before_ns || (!all_streams && pf->stream != stream)) {
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

/* ---- refcounted objects, their owners and queues (WebGPU) ---- */

/* The longest prefix of a cut label that does not end inside a UTF-8 sequence. */
static size_t utf8_trim(const char *s, size_t len)
{
	size_t i = len, need;

	while (i && ((unsigned char)s[i - 1] & 0xc0) == 0x80 && len - i < 3)
		i--;
	if (!i || ((unsigned char)s[i - 1] & 0x80) == 0)
		return len;
	need = ((unsigned char)s[i - 1] & 0xe0) == 0xc0 ? 2
	       : ((unsigned char)s[i - 1] & 0xf0) == 0xe0 ? 3
	       : ((unsigned char)s[i - 1] & 0xf8) == 0xf0 ? 4 : 1;
	return len - (i - 1) >= need ? len : i - 1;
}

/* Intern a label: its index + 1, 0 on allocation failure. */
static uint32_t label_intern(struct tracker *t, const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;
	uint64_t *v;
	size_t i;
	char *str;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	v = hmap__get(&t->label_idx, h, len);
	if (v && !memcmp(t->labels[*v], s, len) && !t->labels[*v][len])
		return *v + 1;
	if (t->nr_labels == t->cap_labels) {
		size_t cap = t->cap_labels ? 2 * t->cap_labels : 64;
		char **nv = realloc(t->labels, cap * sizeof(*nv));

		if (!nv)
			return 0;
		t->labels = nv;
		t->cap_labels = cap;
	}
	str = strndup(s, len);
	if (!str)
		return 0;
	/* A hash collision keeps the first string indexed; the second is stored unindexed. */
	if (!v && hmap__put(&t->label_idx, h, len, t->nr_labels)) {
		free(str);
		return 0;
	}
	t->labels[t->nr_labels++] = str;
	return t->nr_labels;
}

const char *tracker__label(const struct tracker *t, const struct tobj *o)
{
	return o && o->label && o->label <= t->nr_labels ? t->labels[o->label - 1] : "";
}

struct tobj *tproc__obj(const struct tproc *p, uint8_t ns, uint64_t handle)
{
	uint64_t *v = hmap__get(&p->objs, (uint64_t)ns << 56 | 1, handle);

	return v ? (struct tobj *)(uintptr_t)*v : NULL;
}

/* A fresh object for a handle just created, replacing whatever the handle meant before. */
static struct tobj *obj_new(struct tproc *p, uint8_t ns, uint64_t handle, uint64_t owner)
{
	struct tobj *o = tproc__obj(p, ns, handle);

	if (!o) {
		o = malloc(sizeof(*o));
		if (!o)
			return NULL;
		if (hmap__put(&p->objs, (uint64_t)ns << 56 | 1, handle, (uintptr_t)o)) {
			free(o);
			return NULL;
		}
	}
	memset(o, 0, sizeof(*o));
	o->handle = handle;
	o->owner = owner;
	o->ns = ns;
	o->refs = 1;
	return o;
}

static void obj_drop(struct tproc *p, struct tobj *o)
{
	hmap__del(&p->objs, (uint64_t)o->ns << 56 | 1, o->handle);
	free(o);
}

/*
 * An owner (device) on first sight holds the one reference its creation gave the program:
 * gpuleak does not trace device creation (an asynchronous callback), only its use.
 */
static struct tobj *owner_get(struct tproc *p, uint8_t ns, uint64_t handle)
{
	struct tobj *o = tproc__obj(p, ns, handle);

	if (o)
		return o;
	o = obj_new(p, ns, handle, 0);
	if (o) {
		o->flags = TOBJ_OWNER;
		o->ordinal = ++p->nr_owners;
	}
	return o;
}

static struct tqueue *queue_get(struct tproc *p, uint64_t handle)
{
	uint64_t *v = hmap__get(&p->queues, handle, 0);
	struct tqueue *q;

	if (v)
		return (struct tqueue *)(uintptr_t)*v;
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->handle = handle;
	if (hmap__put(&p->queues, handle, 0, (uintptr_t)q)) {
		free(q);
		return NULL;
	}
	return q;
}

/* The queue whose submitted work an owner's objects may be in use by, if any is running. */
static struct tqueue *queue_busy(const struct tproc *p, uint64_t owner)
{
	struct tqueue *unknown = NULL;
	const struct hmap_slot *sl;
	size_t i;

	for (i = 0; hmap__next(&p->queues, &i, &sl);) {
		struct tqueue *q = (struct tqueue *)(uintptr_t)sl->val;

		if (q->submitted <= q->done)
			continue;
		if (q->owner == owner)
			return q;
		/* A queue got before attach: its device is unknown, assume it may be this one. */
		if (!q->owner)
			unknown = q;
	}
	return unknown;
}

/*
 * An object's memory goes (destroy or last release): now, or once the work submitted so far
 * to its device's queue is done, if some of that work is still running.
 */
static int obj_free_memory(struct tracker *t, struct tproc *p, struct tobj *o,
			   const struct gl_call_rec *r)
{
	struct alloc *a = at_find(&p->allocs, o->ns, o->handle);
	struct tqueue *q;

	if (!a || a->state == AS_PENDING)
		return 0;
	q = queue_busy(p, o->owner);
	if (!q) {
		release(t, p, a);
		return 0;
	}
	return make_pending(t, p, a, &(struct pending_free){
		.addr = o->handle, .ns = o->ns, .ts_ns = r->hdr.ts_ns, .stream = q->handle,
		.serial = q->submitted, .by_serial = true,
	});
}

/* Frees waiting on a queue whose work is now done up to q->done (or on nothing, any more). */
static void queue_complete(struct tracker *t, struct tproc *p, const struct tqueue *q)
{
	size_t i = 0;

	while (i < p->nr_pend) {
		struct pending_free *pf = &p->pend[i];
		struct alloc *a;

		if (!pf->by_serial || (q && (pf->stream != q->handle || pf->serial > q->done))) {
			i++;
			continue;
		}
		a = at_find(&p->allocs, pf->ns, pf->addr);
		if (q && a && a->state == AS_PENDING)
			release(t, p, a);
		else if (a && a->state == AS_PENDING) {
			i++;	/* q NULL: only drop entries whose allocation is gone */
			continue;
		}
		pending_drop(p, i);
	}
}

/* An owner is destroyed: everything it owns is released, pending frees included. */
static void owner_destroy(struct tracker *t, struct tproc *p, struct tobj *owner)
{
	const struct hmap_slot *sl;
	size_t i = 0;

	owner->flags |= TOBJ_DESTROYED;
	while (i < p->allocs.cap) {
		struct alloc *a = &p->allocs.slots[i];

		if (!a->addr || a->ns != owner->ns || t->sites[a->site].owner != owner->handle) {
			i++;
			continue;
		}
		p->c.owner_frees++;
		/* Backward shift may move an unvisited entry into slot i: look at i again. */
		release(t, p, a);
	}
	queue_complete(t, p, NULL);
	for (i = 0; hmap__next(&p->objs, &i, &sl);) {
		struct tobj *o = (struct tobj *)(uintptr_t)sl->val;

		if (o->owner == owner->handle)
			o->flags |= TOBJ_DESTROYED;
	}
}

static void obj_addref_site(struct tobj *o, uint32_t site)
{
	unsigned int i;

	for (i = 0; i < o->nr_addref; i++)
		if (o->addref_site[i] == site)
			break;
	if (i == o->nr_addref) {
		/* Past the slots, the last one stands for the rest. */
		if (o->nr_addref == TOBJ_ADDREF_SITES)
			i = TOBJ_ADDREF_SITES - 1;
		else
			o->addref_site[o->nr_addref++] = site;
	}
	o->addref_count[i]++;
}

static int obj_create(struct tracker *t, struct tproc *p, const struct cat_api *api,
		      const struct gl_call_rec *r)
{
	const struct gl_desc_rec *dr = (const struct gl_desc_rec *)r;
	uint8_t ns = ns_of(api);
	uint64_t owner = r->aux;
	struct wgpu_desc d = {};
	struct tthread *th;
	struct tobj *o;
	uint32_t site;
	bool error;

	if (owner && !owner_get(p, ns, owner))
		return -ENOMEM;
	site = site_get(t, p->pid, r->hdr.api, -1, r->caller, r->stack_id, owner);
	if (site == UINT32_MAX)
		return -ENOMEM;
	th = thread_get(p, r->hdr.tid);
	error = th && th->error_depth == r->hdr.depth + 1;
	if (th)
		th->error_depth = 0;
	o = obj_new(p, ns, r->addr, owner);
	if (!o)
		return -ENOMEM;
	if (error) {
		/* Dawn made an error object: a handle the program must release, no memory. */
		o->flags |= TOBJ_ERROR;
		p->c.error_objects++;
		p->c.failed_calls++;
		t->sites[site].failed++;
		t->sites[site].last_err = CAT_ERR_WGPU_ERROR_OBJECT;
		return 0;
	}
	if (!api->decode || !(r->hdr.flags & GL_HF_DESC) || r->hdr.size < sizeof(*dr) ||
	    (r->hdr.flags & GL_HF_DESC_READ_FAIL) ||
	    api->decode(dr->desc, api->spec.desc_len, &d))
		d.unknown_format = true;
	return alloc_insert(t, p, api, r, site, d.bytes, d.unknown_format ? ALLOC_UNSIZED : 0);
}

static bool is_obj_op(enum cat_op op)
{
	switch (op) {
	case OP_OBJ_CREATE:
	case OP_OBJ_ADDREF:
	case OP_OBJ_RELEASE:
	case OP_OBJ_DESTROY:
	case OP_OWNER_ADDREF:
	case OP_OWNER_RELEASE:
	case OP_OWNER_DESTROY:
	case OP_ERROR_OBJECT:
	case OP_QUEUE_GET:
	case OP_QUEUE_SUBMIT:
	case OP_QUEUE_WATCH:
	case OP_QUEUE_DONE:
		return true;
	default:
		return false;
	}
}

/* The refcounted-object and queue operations: records of entry-only calls and creations. */
static int apply_obj(struct tracker *t, struct tproc *p, const struct cat_api *api,
		     const struct gl_call_rec *r)
{
	const struct gl_desc_rec *dr = (const struct gl_desc_rec *)r;
	uint8_t ns = ns_of(api);
	struct tthread *th;
	struct tqueue *q;
	struct tobj *o;
	size_t i;

	switch (api->op) {
	case OP_OBJ_CREATE:
		return r->hdr.kind == GL_REC_ALLOC && r->addr ? obj_create(t, p, api, r) : 0;
	case OP_OBJ_ADDREF:
	case OP_OBJ_RELEASE:
	case OP_OBJ_DESTROY:
		o = tproc__obj(p, ns, r->addr);
		if (!o) {
			/* Created before attach, or not traced: nothing to account. */
			p->c.unknown_refs++;
			return 0;
		}
		if (api->op == OP_OBJ_ADDREF) {
			uint32_t site = site_get(t, p->pid, r->hdr.api, -1, r->caller, r->stack_id,
						 o->owner);

			if (site == UINT32_MAX)
				return -ENOMEM;
			o->refs++;
			obj_addref_site(o, site);
			return 0;
		}
		if (api->op == OP_OBJ_DESTROY) {
			o->flags |= TOBJ_DESTROYED;
			return obj_free_memory(t, p, o, r);
		}
		if (--o->refs > 0)
			return 0;
		/* The last reference: memory not destroyed yet goes now, the handle too. */
		if (obj_free_memory(t, p, o, r))
			return -ENOMEM;
		obj_drop(p, o);
		return 0;
	case OP_OWNER_ADDREF:
	case OP_OWNER_RELEASE:
	case OP_OWNER_DESTROY:
		o = owner_get(p, ns, r->addr);
		if (!o)
			return -ENOMEM;
		if (api->op == OP_OWNER_ADDREF)
			o->refs++;
		else if (api->op == OP_OWNER_DESTROY || --o->refs == 0)
			owner_destroy(t, p, o);
		return 0;
	case OP_ERROR_OBJECT:
		/* Only inside a traced creation (depth > 0) does it name that creation's result. */
		th = r->hdr.depth ? thread_get(p, r->hdr.tid) : NULL;
		if (th)
			th->error_depth = r->hdr.depth;
		return 0;
	case OP_QUEUE_GET:
		if (r->hdr.kind != GL_REC_ALLOC || !r->addr)
			return 0;
		q = queue_get(p, r->addr);
		if (!q || (r->aux && !owner_get(p, ns, r->aux)))
			return -ENOMEM;
		q->owner = r->aux;
		return 0;
	case OP_QUEUE_SUBMIT:
		q = queue_get(p, r->addr);
		if (!q)
			return -ENOMEM;
		q->submitted++;
		return 0;
	case OP_QUEUE_WATCH:
		if (!(r->hdr.flags & GL_HF_DESC) || r->hdr.size < sizeof(*dr) ||
		    (r->hdr.flags & GL_HF_DESC_READ_FAIL))
			return 0;
		q = queue_get(p, r->addr);
		if (!q)
			return -ENOMEM;
		if (p->nr_watch == p->cap_watch) {
			size_t cap = p->cap_watch ? 2 * p->cap_watch : 16;
			struct queue_watch *v = realloc(p->watch, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			p->watch = v;
			p->cap_watch = cap;
		}
		/* WGPUQueueWorkDoneCallbackInfo: userdata1 @24, userdata2 @32 */
		p->watch[p->nr_watch] = (struct queue_watch){ .queue = q->handle,
							      .serial = q->submitted };
		memcpy(&p->watch[p->nr_watch].userdata1, dr->desc + 24, 8);
		memcpy(&p->watch[p->nr_watch].userdata2, dr->desc + 32, 8);
		p->nr_watch++;
		return 0;
	case OP_QUEUE_DONE:
		/*
		 * The callback's userdata: arguments 4, 5 (aux, aux2) since the work-done
		 * callback got a message argument, 2, 3 (addr, size) before. The oldest
		 * registration with them completes: a queue finishes its work in order.
		 */
		for (i = 0; i < p->nr_watch; i++) {
			struct queue_watch *w = &p->watch[i];

			if ((w->userdata1 == r->aux && w->userdata2 == r->aux2) ||
			    (w->userdata1 == r->addr && w->userdata2 == r->size))
				break;
		}
		if (i == p->nr_watch) {
			p->c.unmatched_done++;
			return 0;
		}
		q = queue_get(p, p->watch[i].queue);
		if (!q)
			return -ENOMEM;
		if (p->watch[i].serial > q->done)
			q->done = p->watch[i].serial;
		memmove(&p->watch[i], &p->watch[i + 1], (p->nr_watch - i - 1) * sizeof(p->watch[0]));
		p->nr_watch--;
		queue_complete(t, p, q);
		return 0;
	default:
		return 0;
	}
}

static int apply_label(struct tracker *t, const struct gl_label_rec *r)
{
	const struct cat_api *api = cat_by_api(r->hdr.api);
	struct tproc *p = proc_get(t, r->hdr.pid);
	struct tobj *o;
	size_t len;

	if (!p)
		return -ENOMEM;
	if (!api)
		return 0;
	o = tproc__obj(p, ns_of(api), r->addr);
	if (!o && (api->flags & CAT_OWNER))
		o = owner_get(p, ns_of(api), r->addr);
	if (!o)
		return 0;
	len = r->len > GL_LABEL_MAX ? GL_LABEL_MAX : r->len;
	if (r->truncated)
		len = utf8_trim(r->label, len);
	/* SetLabel(NULL) or "" clears it. */
	o->label = len ? label_intern(t, r->label, len) : 0;
	return 0;
}

static int apply_op(struct tracker *t, struct tproc *p, const struct cat_api *api,
		    const struct gl_call_rec *r)
{
	struct tthread *th;
	uint64_t *ev;

	if (is_obj_op(api->op) && r->hdr.kind != GL_REC_ALLOC_FAIL)
		return apply_obj(t, p, api, r);
	switch (r->hdr.kind) {
	case GL_REC_ALLOC:
		return api->op == OP_ALLOC ? do_alloc(t, p, api, r) : 0;
	case GL_REC_ALLOC_FAIL:
		p->c.failed_calls++;
		if (api->op == OP_OBJ_CREATE) {
			uint32_t site = site_get(t, p->pid, r->hdr.api, -1, r->caller, r->stack_id,
						 r->aux);

			if (site == UINT32_MAX)
				return -ENOMEM;
			t->sites[site].failed++;
			t->sites[site].last_err = r->ret;
		}
		if (api->op == OP_ALLOC) {
			int16_t dev = api->mem == MEM_HOST_PINNED ? -1 : thread_device(p, r->hdr.tid);
			uint32_t site = site_get(t, p->pid, r->hdr.api, dev, r->caller, r->stack_id,
						 0);

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
		uint32_t site = site_get(t, p->pid, r->hdr.api, dev, r->caller, r->stack_id, 0);

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
	err = apply_op(t, p, api, r);
	/* An error object mark not taken by the creation it was made in is stale now. */
	if (r->hdr.kind != GL_REC_NOTIFY && r->hdr.kind != GL_REC_FREE) {
		uint64_t *v = hmap__get(&p->threads, r->hdr.tid, 0);

		th = v ? (struct tthread *)(uintptr_t)*v : NULL;
		if (th && th->error_depth > r->hdr.depth)
			th->error_depth = 0;
	}
	return err;
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
		if (h->size < sizeof(struct gl_label_rec))
			break;
		return apply_label(t, (const struct gl_label_rec *)h);
	case GL_REC_CODE:
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
