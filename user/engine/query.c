// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>
#include "engine/query.h"

const struct tproc *query__proc(const struct tracker *t, pid_t pid)
{
	return tracker__proc((struct tracker *)t, pid);
}

const struct tproc *query__site_proc(const struct tracker *t, const struct site *s)
{
	return tracker__site_proc(t, s);
}

const struct tobj *query__owner(const struct tracker *t, const struct site *s)
{
	const struct tproc *p = tracker__site_proc(t, s);

	return p && s->owner_kind == OWNER_DEVICE ? tproc__obj(p, SPACE_WGPU, s->owner) : NULL;
}

bool query__next_layer(const struct tracker *t, uint32_t idx, size_t *it, uint32_t *out)
{
	while (*it < t->nr_sites) {
		const struct site *l = &t->sites[(*it)++];

		if (l->owner_kind == OWNER_LAYER && l->owner == idx && l->live_count) {
			*out = (uint32_t)(*it - 1);
			return true;
		}
	}
	return false;
}

/* One object's references into out, by AddRef site; past the last slot they share it. */
static void add_refs(const struct tobj *o, struct addrefs *out)
{
	unsigned int i, j;

	for (i = 0; i < o->nr_addref; i++) {
		for (j = 0; j < out->n; j++)
			if (out->site[j] == o->addref_site[i])
				break;
		if (j == out->n) {
			if (out->n == TOBJ_ADDREF_SITES)
				j = TOBJ_ADDREF_SITES - 1;
			else
				out->site[out->n++] = o->addref_site[i];
		}
		out->count[j] += o->addref_count[i];
	}
}

void query__addrefs(const struct tracker *t, uint32_t site, struct addrefs *out)
{
	struct tproc *p = tracker__site_proc(t, &t->sites[site]);
	const struct hmap_slot *sl;
	size_t it = 0;

	memset(out, 0, sizeof(*out));
	if (!p || !p->objs.n)
		return;
	while (hmap__next(&p->objs, &it, &sl)) {
		const struct tobj *o = (const struct tobj *)(uintptr_t)sl->val;
		const struct alloc *a;

		if (o->refs <= 0 || !o->nr_addref || (o->flags & TOBJ_OWNER))
			continue;
		a = tracker__alloc(p, o->space, o->handle);
		if (a && tracker__alloc_site(t, a) == site)
			add_refs(o, out);
	}
}

void query__comm(const struct tracker *t, const struct tproc *p, uint64_t comm,
		 struct comm_totals *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];

		if (!site__of(s, p) || s->owner_kind != OWNER_COMM || s->owner != comm)
			continue;
		if (s->mem == MEM_REG) {
			out->regs += s->live_count;
		} else if (s->counts) {
			out->bytes += s->live_bytes;
			out->count += s->live_count;
		}
	}
}

size_t query__by_api(const struct tracker *t, const struct tproc *p, struct api_sum *rows,
		     size_t max)
{
	size_t i, j, n = 0;

	for (i = 0; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];

		if (!site__of(s, p) || !s->counts || (!s->live_count && !s->pending_count))
			continue;
		uint64_t owner = s->owner_kind == OWNER_DEVICE ? s->owner : 0;

		for (j = 0; j < n; j++)
			if (rows[j].api == s->api && rows[j].device == s->device &&
			    rows[j].owner == owner)
				break;
		if (j == n) {
			if (n == max)
				continue;
			rows[n++] =
			    (struct api_sum){s->api, s->device, owner, (uint32_t)i, 0, 0, 0};
		}
		rows[j].bytes += s->live_bytes;
		rows[j].count += s->live_count;
		rows[j].pending += s->pending_bytes;
	}
	return n;
}

void query__ipc(const struct tracker *t, uint32_t idx, struct ipc_totals *out)
{
	const struct tproc *p = tracker__site_proc(t, &t->sites[idx]);

	memset(out, 0, sizeof(*out));
	if (p)
		ipc__site_totals(p, idx, out);
}

const struct rule *query__rule(const struct tracker *t, size_t i)
{
	return t->rules && i < t->rules->n ? &t->rules->v[i] : NULL;
}

const struct rule *query__unmatched_rule(const struct tracker *t, size_t *it)
{
	const struct rules *rs = t->rules;

	while (rs && *it < rs->nr_user) {
		const struct rule *ru = &rs->v[(*it)++];

		if (!ru->preset && ru->decided && !*ru->decided)
			return ru;
	}
	return NULL;
}

const struct alloc *query__next_alloc(const struct tproc *p, size_t *it)
{
	while (*it < p->allocs.cap) {
		const struct alloc *a = &p->allocs.slots[(*it)++];

		if (a->addr)
			return a;
	}
	return NULL;
}
