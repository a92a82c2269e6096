// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Rule violations of a process (tproc.viols), as they happen: a second allocation of a
 * `once` class while one is live, a class over its max=, a release=session-end class still
 * live at the session's end. Deferred frees never completed within their window are found by
 * pending.c and recorded here too.
 * Calls nothing of the tracker.
 */
#include "tracker/violations.h"
#include "tracker/rules.h"
#include "lib/vec.h"

int violations__add(struct tproc *p, enum violation_kind kind, uint16_t rule, uint32_t site,
		    uint64_t bytes, uint64_t count, uint64_t ts_ns)
{
	if (vec_grow((void **)&p->viols, &p->cap_viols, p->nr_viols, sizeof(*p->viols)))
		return -ENOMEM;
	p->viols[p->nr_viols++] = (struct violation){.kind = kind,
						     .rule = rule,
						     .site = site,
						     .bytes = bytes,
						     .count = count,
						     .ts_ns = ts_ns,
						     .step = p->step};
	return 0;
}

/*
 * Allocation a has just joined the class of its site's rule (and is counted in it): a `once`
 * class now holding two, or a class whose live bytes just went over its max=, is a violation.
 * Every path that puts memory into a class ends here: a CUDA, NCCL or host allocation, a
 * WebGPU creation, a WebGPU object moved by its label. 0 or -ENOMEM.
 */
int violations__check_class(struct tracker *t, struct tproc *p, const struct alloc *a,
			    uint64_t ts_ns)
{
	uint32_t site = tracker__alloc_site(t, a);
	uint16_t rule = t->sites[site].rule;
	const struct rule *ru;
	struct rule_live *rl;

	/* A pending free's memory is not in its class any more (account leaves it out). */
	if (!rule || !p->rule_live || (a->flags & AF_PENDING))
		return 0;
	ru = &t->rules->v[rule - 1];
	rl = &p->rule_live[rule - 1];
	if (ru->once && rl->count > 1 &&
	    violations__add(p, VIOL_ONCE, rule - 1, site, a->size, 1, ts_ns))
		return -ENOMEM;
	if (ru->max_bytes && !rl->over_max && rl->bytes > ru->max_bytes) {
		/* Reported once per excursion: allocs.c's account() closes it when the class is back. */
		rl->over_max = true;
		return violations__add(p, VIOL_MAX, rule - 1, site, rl->bytes, rl->count, ts_ns);
	}
	return 0;
}

void violations__not_released(struct tracker *t, struct tproc *p, uint64_t ts_ns)
{
	size_t i;

	if (!t->rules)
		return;
	for (i = 0; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];

		if (!site__of(s, p) || !s->rule || !s->live_count ||
		    !t->rules->v[s->rule - 1].release_at_end)
			continue;
		violations__add(p, VIOL_NOT_RELEASED, s->rule - 1, (uint32_t)i, s->live_bytes,
				s->live_count, ts_ns);
	}
}
