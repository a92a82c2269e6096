// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * WebGPU's refcounted objects (tproc.objs): memory objects (buffers, textures) from creation
 * to their last release, and the owners (devices) they belong to from first sight; the
 * labels programs give them (interned per tracker: tracker.labels), the queues their work
 * is submitted to (tproc.queues) and the completion callbacks registered on those queues
 * (tproc.watch). An object's memory is in the allocation table like any other; this file
 * decides when it goes: a destroy or the last release, once the device's queue is done with
 * the work submitted so far, or the owner's destruction.
 * Calls: pending.c, allocs.c, violations.c, sites.c, threads.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "tracker/wgpu_objects.h"
#include "tracker/allocs.h"
#include "tracker/pending.h"
#include "tracker/sites.h"
#include "tracker/threads.h"
#include "tracker/violations.h"
#include "lib/vec.h"
#include "probe/wgpu_abi.h"

/* ---- labels ---- */

/* The longest prefix of a cut label that does not end inside a UTF-8 sequence. */
static size_t utf8_trim(const char *s, size_t len)
{
	size_t i = len, need;

	while (i && ((unsigned char)s[i - 1] & 0xc0) == 0x80 && len - i < 3)
		i--;
	if (!i || ((unsigned char)s[i - 1] & 0x80) == 0)
		return len;
	need = ((unsigned char)s[i - 1] & 0xe0) == 0xc0	  ? 2
	       : ((unsigned char)s[i - 1] & 0xf0) == 0xe0 ? 3
	       : ((unsigned char)s[i - 1] & 0xf8) == 0xf0 ? 4
							  : 1;
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
	if (vec_grow((void **)&t->labels, &t->cap_labels, t->nr_labels, sizeof(*t->labels)))
		return 0;
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

/* ---- objects and owners ---- */

/* A fresh object for a handle just created, replacing whatever the handle meant before. */
static struct tobj *obj_new(struct tproc *p, uint8_t space, uint64_t handle, uint64_t owner)
{
	struct tobj *o = tproc__obj(p, space, handle);

	if (!o) {
		o = malloc(sizeof(*o));
		if (!o)
			return NULL;
		if (hmap__put(&p->objs, tobj_key(space), handle, (uintptr_t)o)) {
			free(o);
			return NULL;
		}
	}
	memset(o, 0, sizeof(*o));
	o->handle = handle;
	o->owner = owner;
	o->space = space;
	o->refs = 1;
	return o;
}

static void obj_drop(struct tproc *p, struct tobj *o)
{
	hmap__del(&p->objs, tobj_key(o->space), o->handle);
	free(o);
}

/*
 * An owner (device) on first sight holds the one reference its creation gave the program:
 * gpuleak does not trace device creation (an asynchronous callback), only its use.
 */
static struct tobj *owner_get(struct tproc *p, uint8_t space, uint64_t handle)
{
	struct tobj *o = tproc__obj(p, space, handle);

	if (o)
		return o;
	o = obj_new(p, space, handle, 0);
	if (o) {
		o->flags = TOBJ_OWNER;
		o->ordinal = ++p->nr_owners;
	}
	return o;
}

void wgpu_objects__free(struct tproc *p)
{
	const struct hmap_slot *s;
	size_t i;

	for (i = 0; hmap__next(&p->objs, &i, &s);)
		free((void *)(uintptr_t)s->val);
	for (i = 0; hmap__next(&p->queues, &i, &s);)
		free((void *)(uintptr_t)s->val);
	hmap__free(&p->objs);
	hmap__free(&p->queues);
	free(p->watch);
	free(p->classes);
}

/* ---- what objects are made of ---- */

int wgpu_objects__class(struct tproc *p, const struct gl_class_rec *r)
{
	size_t i;

	if (r->kind != GL_CLASS_ERROR_OBJECT && r->kind != GL_CLASS_DAWN_IMAGE)
		return 0; /* a kind of a newer gpuleak */
	/* Sent at every rescan of the process: each once. */
	for (i = 0; i < p->nr_classes; i++)
		if (p->classes[i].vptr == r->vptr && p->classes[i].kind == r->kind) {
			p->classes[i].len = r->len;
			return 0;
		}
	if (vec_grow((void **)&p->classes, &p->cap_classes, p->nr_classes, sizeof(*p->classes)))
		return -ENOMEM;
	p->classes[p->nr_classes++] = (struct obj_class){r->vptr, r->len, r->kind};
	return 0;
}

/*
 * Whether a creation returned an error object, by what the object is made of (its first
 * bytes, read at the return: GL_HF_PEEK): a vtable pointer of a known error class, or, for
 * an object whose vtable is in a Dawn image without one known (a build without RTTI), the
 * reference count word Dawn's RefCounted keeps after it: count << payload bits | payload,
 * where a fresh object has count 1 and an error object payload 0, so 2 with one payload bit
 * (Dawn until 2025: a real object is 3) and 4 with two (since: a real one is 6).
 */
static bool peek_error(const struct tproc *p, const struct gl_call_rec *r)
{
	const struct gl_peek_rec *pr = (const struct gl_peek_rec *)r;
	bool dawn = false, classes = false;
	uint64_t vptr, refs;
	size_t i;

	if (!(r->hdr.flags & GL_HF_PEEK) || r->hdr.size < sizeof(*pr) || !p->nr_classes)
		return false;
	memcpy(&vptr, pr->peek, 8);
	memcpy(&refs, pr->peek + 8, 8);
	for (i = 0; i < p->nr_classes; i++) {
		const struct obj_class *c = &p->classes[i];

		if (c->kind == GL_CLASS_ERROR_OBJECT && c->vptr == vptr)
			return true;
		if (c->kind == GL_CLASS_DAWN_IMAGE && vptr >= c->vptr && vptr - c->vptr < c->len)
			dawn = true;
	}
	/* With the error classes of the image known, their vtables decide alone. */
	for (i = 0; dawn && i < p->nr_classes; i++) {
		const struct obj_class *c = &p->classes[i];

		if (c->kind == GL_CLASS_ERROR_OBJECT)
			classes = true;
	}
	return dawn && !classes && (refs == 2 || refs == 4);
}

/* ---- queues ---- */

static struct tqueue *queue_get(struct tproc *p, uint64_t handle)
{
	struct tqueue *q = threads__map_obj(&p->queues, handle, 0, sizeof(*q));

	if (q)
		q->handle = handle;
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

/* A completion callback registered for queue addr's work so far: userdata from its info. */
static int queue_watch(struct tproc *p, const struct gl_call_rec *r)
{
	const struct gl_desc_rec *dr = (const struct gl_desc_rec *)r;
	struct queue_watch *w;
	struct tqueue *q;

	if (!(r->hdr.flags & GL_HF_DESC) || r->hdr.size < sizeof(*dr) ||
	    (r->hdr.flags & GL_HF_DESC_READ_FAIL))
		return 0;
	q = queue_get(p, r->addr);
	if (!q)
		return -ENOMEM;
	if (vec_grow((void **)&p->watch, &p->cap_watch, p->nr_watch, sizeof(*p->watch)))
		return -ENOMEM;
	w = &p->watch[p->nr_watch++];
	/* WGPUQueueWorkDoneCallbackInfo: userdata1 @24, userdata2 @32 */
	*w = (struct queue_watch){.queue = q->handle, .serial = q->submitted};
	memcpy(&w->userdata1, dr->desc + 24, 8);
	memcpy(&w->userdata2, dr->desc + 32, 8);
	return 0;
}

/*
 * A completion callback ran. Its userdata: arguments 4, 5 (aux, aux2) since the work-done
 * callback got a message argument, 2, 3 (addr, size) before. The oldest registration with
 * them completes: a queue finishes its work in order.
 */
static int queue_done(struct tracker *t, struct tproc *p, const struct gl_call_rec *r)
{
	struct tqueue *q;
	size_t i;

	for (i = 0; i < p->nr_watch; i++) {
		struct queue_watch *w = &p->watch[i];

		if (w->future)
			continue; /* completed by a wait, not a callback */
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
	pending__queue_done(t, p, q);
	return 0;
}

/* ---- futures ---- */

/* Future watches kept at most: a program that never waits for its maps keeps no more. */
#define MAX_FUTURE_WATCHES 1024

/*
 * A call on object r->aux returned future r->addr, done once the work submitted so far to
 * the queue of the object's device is (a buffer map: Dawn maps after the queue's work).
 */
static int future_watch(struct tproc *p, const struct cat_api *api, const struct gl_call_rec *r)
{
	const struct tobj *o = tproc__obj(p, (uint8_t)api->space, r->aux);
	struct queue_watch *w;
	struct tqueue *q;
	size_t i, n = 0;

	if (r->hdr.kind != GL_REC_ALLOC || !r->addr || !o)
		return 0;
	q = queue_busy(p, o->owner);
	if (!q)
		return 0; /* nothing running: nothing for it to complete */
	for (i = 0; i < p->nr_watch; i++)
		n += p->watch[i].future != 0;
	if (n >= MAX_FUTURE_WATCHES) {
		for (i = 0; p->watch[i].future == 0; i++)
			;
		memmove(&p->watch[i], &p->watch[i + 1], (p->nr_watch - i - 1) * sizeof(*p->watch));
		p->nr_watch--;
	}
	if (vec_grow((void **)&p->watch, &p->cap_watch, p->nr_watch, sizeof(*p->watch)))
		return -ENOMEM;
	w = &p->watch[p->nr_watch++];
	*w = (struct queue_watch){.queue = q->handle, .serial = q->submitted, .future = r->addr};
	return 0;
}

/* A wait returned: the futures it says completed complete what they watch. */
static int future_wait(struct tracker *t, struct tproc *p, const struct gl_call_rec *r)
{
	const struct gl_desc_rec *dr = (const struct gl_desc_rec *)r;
	size_t k, i, n = r->size < GL_DESC_MAX / 16 ? r->size : GL_DESC_MAX / 16;

	if (!(r->hdr.flags & GL_HF_DESC) || r->hdr.size < sizeof(*dr) ||
	    (r->hdr.flags & GL_HF_DESC_READ_FAIL))
		return 0;
	for (k = 0; k < n; k++) {
		uint64_t future;
		uint32_t completed;
		struct tqueue *q;

		/* WGPUFutureWaitInfo {WGPUFuture future @0, WGPUBool completed @8} */
		memcpy(&future, dr->desc + 16 * k, 8);
		memcpy(&completed, dr->desc + 16 * k + 8, 4);
		if (!completed || !future)
			continue;
		for (i = 0; i < p->nr_watch && p->watch[i].future != future; i++)
			;
		if (i == p->nr_watch)
			continue;
		q = queue_get(p, p->watch[i].queue);
		if (!q)
			return -ENOMEM;
		if (p->watch[i].serial > q->done)
			q->done = p->watch[i].serial;
		memmove(&p->watch[i], &p->watch[i + 1], (p->nr_watch - i - 1) * sizeof(*p->watch));
		p->nr_watch--;
		pending__queue_done(t, p, q);
	}
	return 0;
}

/* ---- memory ---- */

/*
 * An object's memory goes (destroy or last release): now, or once the work submitted so far
 * to its device's queue is done, if some of that work is still running.
 */
static int obj_free_memory(struct tracker *t, struct tproc *p, struct tobj *o,
			   const struct gl_call_rec *r)
{
	struct alloc *a = alloc_table__find(&p->allocs, o->space, o->handle);
	struct tqueue *q;

	if (!a || (a->flags & AF_PENDING))
		return 0;
	q = queue_busy(p, o->owner);
	if (!q) {
		allocs__release(t, p, a);
		return 0;
	}
	return pending__until_queue(t, p, a, q, r);
}

static bool of_owner(const struct tracker *t, const struct alloc *a, void *ctx)
{
	const struct tobj *owner = ctx;
	const struct site *s = &t->sites[tracker__alloc_site(t, a)];

	return a->space == owner->space && s->owner_kind == OWNER_DEVICE &&
	       s->owner == owner->handle;
}

/* An owner is destroyed: everything it owns is released, pending frees included. */
static void owner_destroy(struct tracker *t, struct tproc *p, struct tobj *owner)
{
	const struct hmap_slot *sl;
	size_t i;

	owner->flags |= TOBJ_DESTROYED;
	pending__release_where(t, p, of_owner, owner);
	pending__queue_done(t, p, NULL);
	for (i = 0; hmap__next(&p->objs, &i, &sl);) {
		struct tobj *o = (struct tobj *)(uintptr_t)sl->val;

		if (o->owner == owner->handle)
			o->flags |= TOBJ_DESTROYED;
	}
}

/* Dawn made an error object at r: a handle the program must release, no memory. */
static int obj_error(struct tracker *t, struct tproc *p, struct tobj *o, const struct site_key *k)
{
	uint32_t site;

	o->flags |= TOBJ_ERROR;
	p->c.error_objects++;
	p->c.failed_calls++;
	site = sites__get(t, k);
	if (site == UINT32_MAX)
		return -ENOMEM;
	t->sites[site].failed++;
	t->sites[site].last_err = CAT_ERR_WGPU_ERROR_OBJECT;
	return 0;
}

static int obj_create(struct tracker *t, struct tproc *p, const struct cat_api *api,
		      const struct gl_call_rec *r)
{
	const struct gl_desc_rec *dr = (const struct gl_desc_rec *)r;
	uint8_t space = (uint8_t)api->space;
	uint64_t owner = r->aux;
	struct site_key k = {
	    p->pid, r->hdr.api, -1, r->caller, r->stack_id, owner ? OWNER_DEVICE : OWNER_NONE,
	    owner,  0,		0,  false,     0,	    p->gen};
	struct wgpu_desc d = {};
	struct alloc a, *old;
	struct tthread *th;
	struct tobj *o;
	uint32_t ss;
	bool error;
	int err;

	if (owner && !owner_get(p, space, owner))
		return -ENOMEM;
	sites__python(t, &k);
	th = threads__get(p, r->hdr.tid);
	error = (th && th->error_depth == r->hdr.depth + 1) || peek_error(p, r);
	if (th)
		th->error_depth = 0;
	o = obj_new(p, space, r->addr, owner);
	if (!o)
		return -ENOMEM;
	if (error)
		return obj_error(t, p, o, &k);
	if (!api->decode || !(r->hdr.flags & GL_HF_DESC) || r->hdr.size < sizeof(*dr) ||
	    (r->hdr.flags & GL_HF_DESC_READ_FAIL) || api->decode(dr->desc, api->spec.desc_len, &d))
		d.unknown_format = true;
	ss = sites__assign(t, &k, k.stack_id, d.bytes, NULL, p->step, p->step < 0);
	if (ss == UINT32_MAX)
		return -ENOMEM;
	old = alloc_table__find(&p->allocs, space, r->addr);
	if (old) {
		/*
		 * A handle whose release is pending made again: the program had released it and
		 * the implementation is done with it (Dawn frees the object only then), legal.
		 * Any other live handle made again was released by something not traced.
		 */
		if (old->flags & AF_PENDING)
			p->c.async_reuse++;
		else
			p->c.addr_reuse++;
		pending__release(t, p, old);
	}
	/*
	 * A label in the descriptor comes in the next record and may put the object in another
	 * class (label= rules): checking the class it has without it would report a violation
	 * of a class it never stays in. wgpu_objects__label checks it then.
	 */
	a = (struct alloc){.addr = r->addr,
			   .size = d.bytes,
			   .ts_ns = r->hdr.ts_ns,
			   .sstack = ss,
			   .space = space,
			   .flags =
			       (d.unknown_format ? AF_UNSIZED : 0) | (p->step < 0 ? AF_INIT : 0)};
	err = allocs__add(t, p, &a, r->hdr.ts_ns, !(r->hdr.flags & GL_HF_LABEL));
	if (!err && (r->hdr.flags & GL_HF_LABEL))
		o->flags |= TOBJ_CLASS_OWED;
	return err;
}

/* ---- references ---- */

/* An AddRef: one more reference, counted at its call site (the first few sites by name). */
static int obj_addref(struct tracker *t, struct tproc *p, struct tobj *o,
		      const struct gl_call_rec *r)
{
	struct site_key k = {
	    p->pid,   r->hdr.api, -1, r->caller, r->stack_id, o->owner ? OWNER_DEVICE : OWNER_NONE,
	    o->owner, 0,	  0,  false,	 0,	      p->gen};
	uint32_t site = sites__get(t, &k);
	unsigned int i;

	if (site == UINT32_MAX)
		return -ENOMEM;
	o->refs++;
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
	return 0;
}

/* AddRef, Release and Destroy of a memory object. */
static int obj_ref(struct tracker *t, struct tproc *p, const struct cat_api *api,
		   const struct gl_call_rec *r)
{
	struct tobj *o = tproc__obj(p, (uint8_t)api->space, r->addr);

	if (!o) {
		/* Created before attach, or not traced: nothing to account. */
		p->c.unknown_refs++;
		return 0;
	}
	if (api->op == OP_OBJ_ADDREF)
		return obj_addref(t, p, o, r);
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
}

/* The refcounted-object and queue operations: records of entry-only calls and creations. */
int wgpu_objects__apply(struct tracker *t, struct tproc *p, const struct cat_api *api,
			const struct gl_call_rec *r)
{
	uint8_t space = (uint8_t)api->space;
	struct tthread *th;
	struct tqueue *q;
	struct tobj *o;

	switch (api->op) {
	case OP_OBJ_CREATE:
		return r->hdr.kind == GL_REC_ALLOC && r->addr ? obj_create(t, p, api, r) : 0;
	case OP_OBJ_ADDREF:
	case OP_OBJ_RELEASE:
	case OP_OBJ_DESTROY:
		return obj_ref(t, p, api, r);
	case OP_OWNER_ADDREF:
	case OP_OWNER_RELEASE:
	case OP_OWNER_DESTROY:
		o = owner_get(p, space, r->addr);
		if (!o)
			return -ENOMEM;
		if (api->op == OP_OWNER_ADDREF)
			o->refs++;
		else if (api->op == OP_OWNER_DESTROY || --o->refs == 0)
			owner_destroy(t, p, o);
		return 0;
	case OP_ERROR_OBJECT:
		/* Only inside a traced creation (depth > 0) does it name that creation's result. */
		th = r->hdr.depth ? threads__get(p, r->hdr.tid) : NULL;
		if (th)
			th->error_depth = r->hdr.depth;
		return 0;
	case OP_QUEUE_GET:
		if (r->hdr.kind != GL_REC_ALLOC || !r->addr)
			return 0;
		q = queue_get(p, r->addr);
		if (!q || (r->aux && !owner_get(p, space, r->aux)))
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
		return queue_watch(p, r);
	case OP_QUEUE_DONE:
		return queue_done(t, p, r);
	case OP_FUTURE_WATCH:
		return future_watch(p, api, r);
	case OP_FUTURE_WAIT:
		return future_wait(t, p, r);
	default:
		return 0;
	}
}

/*
 * A label arrived (at creation, or by SetLabel): the object's memory moves to the site of its
 * label, so reports split by label and label= rules match.
 */
int wgpu_objects__label(struct tracker *t, struct tproc *p, const struct gl_label_rec *r)
{
	const struct cat_api *api = cat_by_api(r->hdr.api);
	bool joined;
	struct tobj *o;
	struct alloc *a;
	size_t len;

	if (!api || !api->space)
		return 0;
	o = tproc__obj(p, (uint8_t)api->space, r->addr);
	if (!o && (api->flags & CAT_OWNER))
		o = owner_get(p, (uint8_t)api->space, r->addr);
	if (!o)
		return 0;
	len = r->len > GL_LABEL_MAX ? GL_LABEL_MAX : r->len;
	if (r->truncated)
		len = utf8_trim(r->label, len);
	/* SetLabel(NULL) or "" clears it. */
	o->label = len ? label_intern(t, r->label, len) : 0;
	/* Its creation left the class check to its label (obj_create). */
	joined = o->flags & TOBJ_CLASS_OWED;
	o->flags &= (uint8_t)~TOBJ_CLASS_OWED;
	a = alloc_table__find(&p->allocs, o->space, o->handle);
	if (!a || (a->flags & AF_LAYER))
		return 0;
	if (t->sites[tracker__alloc_site(t, a)].label != o->label) {
		uint32_t from = tracker__alloc_site(t, a);
		int32_t stack_id = t->sstacks[a->sstack].stack_id;
		const struct site *old = &t->sites[from];
		struct site_key k = {p->pid,   old->api,	old->device, old->caller,
				     stack_id, old->owner_kind, old->owner,  0,
				     o->label, false,		old->frame,  p->gen};
		bool init = a->flags & AF_INIT;
		uint32_t ss;

		/* Rules and init see the allocation as made, in its step, not the label's. */
		ss = sites__assign(t, &k, stack_id, a->size, tracker__label(t, o->label),
				   init ? -1 : p->step, init);
		if (ss == UINT32_MAX)
			return -ENOMEM;
		allocs__move(t, p, a, ss);
		/* Moving within its class is not a new member of it. */
		joined |= t->sites[from].rule != k.rule;
	}
	return joined ? violations__check_class(t, p, a, r->hdr.ts_ns) : 0;
}
