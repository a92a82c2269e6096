// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A process's threads (tproc.threads): found, made on first sight, kept as long as their
 * process and freed with it. What a thread holds is kept by the modules above (threads.h).
 * Calls nothing of the tracker.
 */
#include <stdlib.h>
#include "tracker/threads.h"

void *threads__map_obj(struct hmap *h, uint64_t k0, uint64_t k1, size_t size)
{
	uint64_t *v = hmap__get(h, k0, k1);
	void *o;

	if (v)
		return (void *)(uintptr_t)*v;
	o = calloc(1, size);
	if (!o)
		return NULL;
	if (hmap__put(h, k0, k1, (uintptr_t)o)) {
		free(o);
		return NULL;
	}
	return o;
}

struct tthread *threads__lookup(struct tproc *p, uint32_t tid)
{
	struct tthread *th = threads__map_obj(&p->threads, tid, 0, sizeof(*th));

	if (!th)
		return NULL;
	th->tid = tid;
	/* Threads live as long as their process, so the pointer stays valid. */
	return p->last_thread = th;
}

void threads__free(struct tproc *p)
{
	const struct hmap_slot *s;
	size_t i;

	for (i = 0; hmap__next(&p->threads, &i, &s);) {
		struct tthread *th = (struct tthread *)(uintptr_t)s->val;

		free(th->held);
		free(th);
	}
	hmap__free(&p->threads);
}
