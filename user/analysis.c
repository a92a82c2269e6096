// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include "analysis.h"
#include "outputs.h"

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
	if (!err)
		err = outputs__open(&o->out, &a->out);
	if (!err)
		err = outputs__attach(a->out, a->t);
	if (err) {
		analysis__free(a);
		return err;
	}
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
	outputs__free(a->out);
	timeline__free(a->tl);
	tracker__free(a->t);
	free(a);
}

int analysis__feed(struct analysis *a, const struct gl_hdr *h)
{
	int err = tracker__apply(a->t, h);

	/* A record the tracker could not decode still advances time for the timeline. */
	if (err && err != -EINVAL)
		return err;
	err = timeline__on_record(a->tl, h);
	if (!err)
		err = outputs__on_record(a->out, a->t, h);
	return err;
}

int analysis__write_outputs(struct analysis *a, struct report *r, uint64_t end_ns)
{
	return outputs__write(a->out, r, end_ns);
}

void analysis__prefetch(const struct analysis *a, const struct gl_hdr *h)
{
	tracker__prefetch(a->t, h);
}
