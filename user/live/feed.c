// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <string.h>
#include "engine/analysis.h"
#include "lib/log.h"
#include "probe/catalog.h"
#include "live/bpf_setup.h"
#include "live/callbacks.h"
#include "live/feed.h"
#include "live/follow.h"
#include "live/live.h"
#include "live/nvml.h"
#include "live/process.h"
#include "live/recorder.h"
#include "live/session_opts.h"
#include "live/overhead.h"
#include "live/targets.h"
#include "live/watch.h"
#include "symbols/symbolizer.h"
#include "symbols/unwind.h"

/*
 * The frames of a record's stack, read from the kernel's stack map the first time its
 * (pid, id, call site) is seen: user space interns what the kernel interned, so each stack is
 * read once however many allocations share it. A read that fails leaves the record named by
 * its call site, as without stacks.
 */
static void intern_stack(struct live *l, const struct gl_call_rec *r)
{
	unsigned int depth = l->o->stack_depth;
	int32_t id = r->stack_id;
	const struct ustack *st;
	const uint64_t *raw;
	size_t n = 0, max;
	int err = 0;

	/* A stack with Python frames holds a native one: that first, then the two merged. */
	if (gl_stack_is_py(id))
		id = symbolizer__py_native_id(l->sym, r->hdr.pid, id);
	if (id >= 0 && depth && !symbolizer__stack(l->sym, r->hdr.pid, id, r->caller)) {
		raw = bpf_setup__stack(l->bpf, id);
		max = depth + 1;
		while (raw && n < max && raw[n])
			n++;
		if (raw)
			err = symbolizer__add_stack(l->sym, r->hdr.pid, id, r->caller, raw, n,
						    depth, &st);
	}
	if (!err && gl_stack_is_py(r->stack_id))
		err = symbolizer__py_record(l->sym, &r->hdr);
	if (err == -ENOMEM)
		pr_warn("out of memory for the stack of a call at 0x%llx\n",
			(unsigned long long)r->caller);
}

/*
 * --unwind dwarf: the record with the id of the stack unwound from the copy taken at its
 * entry, in buf, when that stack replaces its frame-pointer walk; else the record itself.
 */
static const struct gl_hdr *unwound(struct live *l, const struct gl_hdr *h, struct gl_peek_rec *buf)
{
	int32_t id;

	if (unwind__call(l->unw, (const struct gl_call_rec *)h, &id) == -ENOMEM)
		pr_warn("out of memory for an unwound stack of pid %u\n", h->pid);
	if (id == ((const struct gl_call_rec *)h)->stack_id || h->size > sizeof(*buf))
		return h;
	memcpy(buf, h, h->size);
	buf->desc.call.stack_id = id;
	return &buf->desc.call.hdr;
}

/*
 * A caching allocator's block is reported from inside the allocator: its site is the first
 * frame of its stack outside the allocator's libraries (the catalog's site_skip), made the
 * record's call site here, before the analysis and the capture see it, so both name the same
 * site. Without a stack it stays where the probe fired. A stack with Python frames has its
 * site chosen already, where the Python frames are merged in (the innermost user frame:
 * PyTorch's libraries and its Python package are framework there too), so it stays as is.
 */
static const struct gl_hdr *site_outside(struct live *l, const struct gl_call_rec *r,
					 struct gl_call_rec *copy)
{
	const struct cat_api *api = cat_by_api(r->hdr.api);
	uint64_t site;

	if (!api || !(api->flags & CAT_SITE_OUTSIDE) || !api->site_skip ||
	    r->hdr.size != sizeof(*r) ||
	    (gl_stack_is_py(r->stack_id) &&
	     symbolizer__site_frame(l->sym, r->hdr.pid, r->stack_id, r->caller)) ||
	    symbolizer__site_outside(l->sym, r->hdr.pid, r->stack_id, r->caller, api->site_skip,
				     &site) ||
	    site == r->caller)
		return &r->hdr;
	*copy = *r;
	copy->caller = site;
	return &copy->hdr;
}

/*
 * A followed process enters the analysis with its first traced call, just before it (every
 * call record, but a rendezvous's: handle_notify).
 */
static void first_call(struct live *l, const struct gl_hdr *h)
{
	struct target *t = targets__find(l->tgts, h->pid);

	if (t && !target__in_analysis(t))
		feed__announce(l, t, h->ts_ns);
}

/* The record into the capture and the analysis: the same stream, in the same order. */
static int analyse(struct live *l, const struct gl_hdr *h)
{
	recorder__record(l->rec, h);
	return analysis__feed(l->an, h);
}

/* A copy of the stack is for its call's record only: never analysed nor recorded. */
static int handle_ustack(struct live *l, const struct gl_hdr *h)
{
	if (l->unw && unwind__copy(l->unw, h, h->size) == -ENOMEM)
		pr_warn("out of memory for the stack copy of pid %u\n", h->pid);
	return 0;
}

/*
 * An allocation's record as the analysis and the capture take it: its stack read, unwound
 * (--unwind dwarf) and its site moved out of the allocator, in buf or copy when it changed.
 */
static const struct gl_call_rec *alloc_rec(struct live *l, const struct gl_call_rec *r,
					   struct gl_peek_rec *buf, struct gl_call_rec *copy)
{
	if (r->stack_id >= 0)
		intern_stack(l, r);
	if (l->unw)
		r = (const struct gl_call_rec *)unwound(l, &r->hdr, buf);
	if (r->stack_id >= 0)
		r = (const struct gl_call_rec *)site_outside(l, r, copy);
	return r;
}

static int handle_alloc(struct live *l, const struct gl_hdr *h)
{
	const struct gl_call_rec *r = (const struct gl_call_rec *)h;
	struct gl_peek_rec buf;
	struct gl_call_rec copy;
	int err;

	first_call(l, h);
	if (h->size < sizeof(*r))
		return analyse(l, h);
	r = alloc_rec(l, r, &buf, &copy);
	err = analyse(l, &r->hdr);
	/* A trigger sees the record as the analysis took it. */
	if (l->watch)
		watch__alloc(l->watch, l, r);
	return err;
}

static int handle_alloc_fail(struct live *l, const struct gl_hdr *h)
{
	const struct gl_call_rec *r = (const struct gl_call_rec *)h;
	struct gl_peek_rec buf;
	struct gl_call_rec copy;
	int err;

	first_call(l, h);
	if (h->size < sizeof(*r))
		return analyse(l, h);
	r = alloc_rec(l, r, &buf, &copy);
	err = analyse(l, &r->hdr);
	if (l->watch)
		watch__call(l->watch, l, r);
	return err;
}

/* A free, a synchronisation or another call. */
static int handle_call(struct live *l, const struct gl_hdr *h)
{
	int err;

	first_call(l, h);
	err = analyse(l, h);
	if (l->watch && h->size >= sizeof(struct gl_call_rec))
		watch__call(l->watch, l, (const struct gl_call_rec *)h);
	return err;
}

/*
 * An entry-only marker: the ld.so rendezvous asks for a rescan (it is no call of the
 * program's), the end marker ends the process's session.
 */
static int handle_notify(struct live *l, const struct gl_hdr *h)
{
	struct target *t = targets__find(l->tgts, h->pid);
	int err;

	if (h->api == GL_API_LD_DEBUG_STATE) {
		if (t)
			t->rescan_pending = true;
	} else if (t && !target__in_analysis(t)) {
		feed__announce(l, t, h->ts_ns);
	}
	if (h->api == GL_API_MARKER_END && t)
		t->state = TARGET_ENDING;
	err = analyse(l, h);
	if (l->watch && h->size >= sizeof(struct gl_call_rec))
		watch__call(l->watch, l, (const struct gl_call_rec *)h);
	return err;
}

static int handle_label(struct live *l, const struct gl_hdr *h)
{
	first_call(l, h);
	return analyse(l, h);
}

/* A code pointer the program passed: its callback waits for a probe. */
static int handle_code(struct live *l, const struct gl_hdr *h)
{
	first_call(l, h);
	if (h->size >= sizeof(struct gl_call_rec))
		callbacks__request(l->cbs, (const struct gl_call_rec *)h);
	return analyse(l, h);
}

/* What names Python frames: kept by the symbolizer for the stacks that follow. */
static int handle_py(struct live *l, const struct gl_hdr *h)
{
	if (symbolizer__py_record(l->sym, h) == -ENOMEM)
		pr_warn("out of memory for the Python frames of pid %u\n", h->pid);
	return analyse(l, h);
}

/* A traced process forked, exec'd or exited: after the analysis had it, what it starts. */
static int handle_task(struct live *l, const struct gl_hdr *h)
{
	const struct gl_task_rec *r = (const struct gl_task_rec *)h;
	int err = analyse(l, h);

	if (h->size < sizeof(*r))
		return err;
	if (l->watch)
		watch__task(l->watch, l, r);
	follow__task(l, r);
	return err;
}

static int handle_proc(struct live *l, const struct gl_hdr *h)
{
	int err = analyse(l, h);

	if (l->watch && h->size >= GL_PROC_REC_V1_SIZE)
		watch__proc(l->watch, l, (const struct gl_proc_rec *)h);
	return err;
}

int feed__record(struct live *l, const struct gl_hdr *h)
{
	switch (h->kind) {
	case GL_REC_USTACK:
		return handle_ustack(l, h);
	case GL_REC_ALLOC:
		return handle_alloc(l, h);
	case GL_REC_ALLOC_FAIL:
		return handle_alloc_fail(l, h);
	case GL_REC_FREE:
	case GL_REC_SYNC:
	case GL_REC_CALL:
		return handle_call(l, h);
	case GL_REC_NOTIFY:
		return handle_notify(l, h);
	case GL_REC_LABEL:
		return handle_label(l, h);
	case GL_REC_CODE:
		return handle_code(l, h);
	case GL_REC_PY_CODE:
	case GL_REC_PY_STACK:
		return handle_py(l, h);
	case GL_REC_TASK:
		return handle_task(l, h);
	case GL_REC_PROC:
		return handle_proc(l, h);
	default: /* the time, losses, devices' memory, classes, costs: the analysis's alone */
		return analyse(l, h);
	}
}

void feed__proc_at(struct live *l, struct target *t, enum gl_proc_event ev, int status,
		   uint64_t ts_ns)
{
	struct gl_proc_rec r = {
	    .hdr = {.size = sizeof(r),
		    .kind = GL_REC_PROC,
		    .pid = t->pid,
		    .tid = t->pid,
		    .ts_ns = ts_ns},
	    .event = ev,
	    .status = status,
	    .start_ticks = t->start_ticks,
	};

	if (ev == GL_PROC_ATTACH) {
		r.ppid = t->ppid;
		r.ns_pid = t->ns_pid;
		/* Before its exec, run mode's command still has gpuleak's name; after another
		 * exec, the program it became has its own. */
		if (t->launch && !t->execs) {
			const char *slash = strrchr(t->launch->exe, '/');

			/* comm is the first 15 bytes of the executable's name, as the kernel
			 * sets it at exec */
			const char *name = slash ? slash + 1 : t->launch->exe;

			memcpy(r.comm, name, strnlen(name, sizeof(r.comm) - 1));
		} else {
			process__comm(t->pid, r.comm, sizeof(r.comm));
			if (!r.comm[0])
				memcpy(r.comm, t->comm, sizeof(r.comm) - 1);
		}
	}
	feed__record(l, &r.hdr);
	/* Its CPU time counts from its attach (an exec goes on counting). */
	if (ev == GL_PROC_ATTACH)
		overhead__track(l->ovh, t->pid, ts_ns);
}

void feed__proc(struct live *l, struct target *t, enum gl_proc_event ev, int status)
{
	feed__proc_at(l, t, ev, status, live_now_ns());
}

/* BPF keeps cumulative loss counters per pid; forward them when they change. */
void feed__loss(struct live *l, struct target *t)
{
	struct gl_loss_rec r = {
	    .hdr = {.size = sizeof(r),
		    .kind = GL_REC_LOSS,
		    .pid = t->pid,
		    .tid = t->pid,
		    .ts_ns = live_now_ns()},
	};

	if (bpf_setup__pid_loss(l->bpf, t->pid, r.counts))
		return;
	if (!memcmp(r.counts, t->loss, sizeof(r.counts)))
		return;
	memcpy(t->loss, r.counts, sizeof(r.counts));
	/* A process that lost records is reported, whatever else it did: never silently. */
	feed__announce(l, t, r.hdr.ts_ns);
	feed__record(l, &r.hdr);
}

void feed__tick(struct live *l)
{
	struct gl_hdr h = {.size = sizeof(h), .kind = GL_REC_TICK, .ts_ns = live_now_ns()};

	feed__record(l, &h);
}

void feed__devmem(struct live *l, const struct target *t)
{
	struct gl_devmem_rec d[16];
	int i, n = nvml__snapshot(t->pid, d, 16);

	for (i = 0; i < n; i++) {
		d[i].hdr.ts_ns = live_now_ns();
		feed__record(l, &d[i].hdr);
	}
}

void feed__announce(struct live *l, struct target *t, uint64_t ts_ns)
{
	if (target__in_analysis(t))
		return;
	t->state = TARGET_TRACED;
	feed__proc_at(l, t, GL_PROC_ATTACH, 0, ts_ns);
	recorder__process(l->rec, t);
	feed__devmem(l, t);
}
