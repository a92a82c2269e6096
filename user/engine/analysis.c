// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include "engine/analysis.h"
#include "engine/memtrace.h"
#include "engine/series.h"
#include "lib/vec.h"

int analysis__new(const struct analysis_opts *o, frames_fn frames, void *frames_ctx,
		  struct analysis **out)
{
	struct analysis *a = calloc(1, sizeof(*a));
	int err;

	if (!a)
		return -ENOMEM;
	err = tracker__new(&a->t);
	if (!err)
		err = timeline__new(&o->steps, a->t, &a->tl);
	/* Only the pictures over time need the series: sampling costs on every record. */
	if (!err && (o->out.perfetto_path || o->out.svg_path)) {
		err = series__new(&a->se);
		if (!err)
			tracker__on_pending_done(a->t, series__pending_done, a->se);
	}
	/* The trace costs a test per allocation and free, and its entries: only when asked. */
	if (!err && o->out.memviz_path) {
		err = memtrace__new(&a->mt);
		if (!err)
			tracker__on_mem_event(a->t, memtrace__event, a->mt);
	}
	if (err) {
		analysis__free(a);
		return err;
	}
	a->gate = o->gate;
	tracker__set_rules(a->t, o->rules, frames, frames_ctx);
	/* Before the first sync, marker call or NVTX range the program was setting up; before
	 * the first time slice it was doing whatever it does at that time. */
	tracker__set_init_retained(a->t, o->steps.source != STEP_INTERVAL);
	*out = a;
	return 0;
}

void analysis__free(struct analysis *a)
{
	if (!a)
		return;
	series__free(a->se);
	memtrace__free(a->mt);
	timeline__free(a->tl);
	tracker__free(a->t);
	free(a->ended);
	free(a);
}

bool analysis__ended(const struct analysis *a, pid_t pid)
{
	size_t i;

	for (i = 0; i < a->nr_ended; i++)
		if (a->ended[i] == pid)
			return true;
	return false;
}

/* One record into the tracker, the timeline and the series: inlined in the hot path. */
static inline __attribute__((always_inline)) int feed(struct analysis *a, const struct gl_hdr *h)
{
	int err = tracker__apply(a->t, h);

	/* A record the tracker could not decode still advances time for the timeline. */
	if (err && err != -EINVAL)
		return err;
	err = timeline__on_record(a->tl, h);
	if (!err && a->se)
		err = series__on_record(a->se, a->t, h->ts_ns);
	return err;
}

/*
 * pid called its end marker: its session ends now, as at a detach (persistent memory still
 * live is retained at session end, release=session-end is checked, its timeline closes).
 */
static int end_session(struct analysis *a, const struct gl_hdr *marker)
{
	struct tproc *p = tracker__proc(a->t, marker->pid);
	struct gl_proc_rec r = {
	    .hdr = {.size = sizeof(r),
		    .kind = GL_REC_PROC,
		    .pid = marker->pid,
		    .tid = marker->tid,
		    .ts_ns = marker->ts_ns},
	    .event = GL_PROC_END,
	    .start_ticks = p ? p->start_ticks : 0,
	};
	int err;

	/* The marker itself first: it is a call of the program, counted as one. */
	err = feed(a, marker);
	if (err)
		return err;
	err = feed(a, &r.hdr);
	if (err)
		return err;
	if (vec_grow((void **)&a->ended, &a->cap_ended, a->nr_ended, sizeof(*a->ended)))
		return -ENOMEM;
	a->ended[a->nr_ended++] = marker->pid;
	return 0;
}

int analysis__feed(struct analysis *a, const struct gl_hdr *h)
{
	if (a->nr_ended && h->pid && analysis__ended(a, (pid_t)h->pid))
		return 0;
	if (h->kind == GL_REC_NOTIFY && h->api == GL_API_MARKER_END && h->pid)
		return end_session(a, h);
	return feed(a, h);
}

int analysis__verdict(const struct analysis *a, struct verdict **out)
{
	return verdict__new(a->t, a->tl, &a->gate, out);
}

void analysis__prefetch(const struct analysis *a, const struct gl_hdr *h)
{
	tracker__prefetch(a->t, h);
}
