/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Sites and site stacks (sites.c): where allocations come from, and the class they go in. */
#ifndef GPULEAK_TRACKER_SITES_H
#define GPULEAK_TRACKER_SITES_H

#include "tracker/model.h"

struct rule_subject;

/* Frames of a stack rules look at: all of them at the deepest --stack-depth. */
#define MAX_FRAMES 128

/* What makes a site; stack_id names the sstack of the allocation in it. */
struct site_key {
	pid_t pid;
	uint16_t api;
	int16_t device;
	uint64_t caller;
	int32_t stack_id; /* not part of the site: the sstack of its allocation */
	uint8_t owner_kind;
	uint64_t owner;
	uint16_t rule;	/* persistent/ignore rule + 1, 0: none */
	uint32_t label; /* WebGPU label + 1, 0: none */
	bool init;	/* retained by init (CLS_INIT): never with a rule */
	uint64_t frame; /* struct site's frame; sites__python sets it */
	uint32_t gen;	/* the process's image (struct tproc's gen): exec makes another */
};

/*
 * A key made from a call record: a stack with Python or JavaScript frames names its site by
 * the frame the tracker's site_fn says, and its sstack by the id that stands for the stack.
 * Nothing without a stack; the symbolizer answers at once while it has seen no script.
 */
static inline void sites__python(const struct tracker *t, struct site_key *k)
{
	if (k->stack_id >= 0 && t->site_of)
		k->frame = t->site_of(t->site_ctx, k->pid, k->caller, &k->stack_id);
}

/* The site of k (index into t->sites), made on first sight; UINT32_MAX without memory. */
uint32_t sites__get(struct tracker *t, const struct site_key *k);
/* The sstack of (site, stack_id), made on first sight; UINT32_MAX without memory. */
uint32_t sites__stack(struct tracker *t, uint32_t site, int32_t stack_id);
/*
 * The sstack a new allocation of size bytes goes to: its call site and stack (key k), then
 * the class a rule (unless a lower layer's) or init puts it in, which k->rule and k->init
 * say. label: its WebGPU label or NULL; step: the step it was made in; init_phase: made
 * before the process's first step. UINT32_MAX without memory.
 */
uint32_t sites__assign(struct tracker *t, struct site_key *k, int32_t stack_id, uint64_t size,
		       const char *label, int64_t step, bool init_phase);
/* The rule subject of a call site, frames named only when a rule needs them. */
void sites__subject(struct tracker *t, pid_t pid, uint16_t api, uint64_t caller, int32_t stack_id,
		    bool frames, struct rule_subject *s, const char **syms, const char **mods,
		    const char **where);

#endif
