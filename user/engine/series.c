// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "engine/series.h"
#include "tracker/tracker.h"
#include "lib/vec.h"

/* Finest resolution: a 1 ms step in a decode loop is still a step in the picture. */
#define RES0_NS 1000000ULL
/* Points per process and per site before every other one goes (and, per process, the
 * resolution doubles): a picture has a few thousand pixels across. */
#define MAX_POINTS	8192
#define MAX_SITE_POINTS 4096
#define MAX_SLICES	100000

int series__new(struct series **out)
{
	struct series *se = calloc(1, sizeof(*se));

	if (!se)
		return -ENOMEM;
	se->res_ns = RES0_NS;
	*out = se;
	return 0;
}

void series__free(struct series *se)
{
	size_t i;

	if (!se)
		return;
	for (i = 0; i < se->nr_procs; i++)
		free(se->procs[i].v);
	for (i = 0; i < se->nr_sites; i++)
		free(se->sites[i].v);
	free(se->procs);
	free(se->sites);
	free(se->slices);
	free(se);
}

const struct series_proc *series__proc(const struct series *se, const struct tproc *p)
{
	size_t i;

	for (i = 0; i < se->nr_procs; i++)
		if (se->procs[i].pid == p->pid && se->procs[i].gen == p->gen)
			return &se->procs[i];
	return NULL;
}

static struct series_proc *proc_get(struct series *se, const struct tproc *p)
{
	struct series_proc *sp = (struct series_proc *)series__proc(se, p);

	if (sp)
		return sp;
	if (vec_grow((void **)&se->procs, &se->cap_procs, se->nr_procs, sizeof(*se->procs)))
		return NULL;
	sp = &se->procs[se->nr_procs++];
	memset(sp, 0, sizeof(*sp));
	sp->pid = p->pid;
	sp->gen = p->gen;
	return sp;
}

/* Keep the first point, every other one after it, and the last. */
static size_t thin(void *v, size_t n, size_t size)
{
	size_t i, k = 1;
	char *b = v;

	for (i = 2; i < n - 1; i += 2)
		memcpy(b + k++ * size, b + i * size, size);
	memcpy(b + k++ * size, b + (n - 1) * size, size);
	return k;
}

static int sample_sites(struct series *se, const struct tracker *t, uint64_t ts_ns)
{
	size_t i;

	if (se->nr_sites < t->nr_sites) {
		struct site_series *v = realloc(se->sites, t->nr_sites * sizeof(*v));

		if (!v)
			return -ENOMEM;
		memset(v + se->nr_sites, 0, (t->nr_sites - se->nr_sites) * sizeof(*v));
		se->sites = v;
		se->nr_sites = t->nr_sites;
	}
	for (i = 0; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];
		struct site_series *ss = &se->sites[i];

		if (!(s->counts || s->judged) ||
		    (ss->n ? ss->v[ss->n - 1].bytes == s->live_bytes : !s->live_bytes))
			continue;
		if (vec_grow((void **)&ss->v, &ss->cap, ss->n, sizeof(*ss->v)))
			return -ENOMEM;
		ss->v[ss->n++] = (struct site_point){ts_ns, s->live_bytes};
		if (s->live_bytes > ss->peak)
			ss->peak = s->live_bytes;
		if (ss->n > MAX_SITE_POINTS)
			ss->n = thin(ss->v, ss->n, sizeof(*ss->v));
	}
	return 0;
}

static int sample(struct series *se, const struct tracker *t, uint64_t ts_ns, bool always)
{
	bool thinned = false;
	size_t i, j;

	for (i = 0; i < t->nr_procs; i++) {
		const struct tproc *p = t->procs[i];
		struct series_proc *sp = proc_get(se, p);
		struct series_point pt = {.ts_ns = ts_ns,
					  .live = p->live_bytes,
					  .persistent = p->persistent_bytes,
					  .pending = p->pending_bytes};
		const struct series_point *last;

		if (!sp)
			return -ENOMEM;
		for (j = 0; p->blocks && j < TBLOCKS_DEVICES; j++) {
			pt.torch_allocated += p->blocks->allocated[j];
			pt.torch_reserved += p->blocks->reserved[j] + p->blocks->orphan[j];
		}
		last = sp->n ? &sp->v[sp->n - 1] : NULL;
		if (!always && last && last->live == pt.live && last->pending == pt.pending &&
		    last->persistent == pt.persistent &&
		    last->torch_allocated == pt.torch_allocated &&
		    last->torch_reserved == pt.torch_reserved)
			continue;
		for (j = 0; j < t->nr_sites; j++) {
			const struct site *s = &t->sites[j];

			if (site__of(s, p) && s->counts && GL_API_FAMILY(s->api) < GL_FAM_MAX)
				pt.fam[GL_API_FAMILY(s->api)] += s->live_bytes;
		}
		if (vec_grow((void **)&sp->v, &sp->cap, sp->n, sizeof(*sp->v)))
			return -ENOMEM;
		sp->v[sp->n++] = pt;
		if (sp->n > MAX_POINTS) {
			sp->n = thin(sp->v, sp->n, sizeof(*sp->v));
			thinned = true;
		}
	}
	if (thinned)
		se->res_ns *= 2;
	se->next_ns = ts_ns + se->res_ns;
	return sample_sites(se, t, ts_ns);
}

int series__on_record(struct series *se, const struct tracker *t, uint64_t ts_ns)
{
	if (ts_ns < se->next_ns)
		return 0;
	return sample(se, t, ts_ns, false);
}

int series__finish(struct series *se, const struct tracker *t, uint64_t end_ns)
{
	size_t i, j;
	int err = sample(se, t, end_ns, true);

	for (i = 0; !err && i < t->nr_procs; i++) {
		const struct tproc *p = t->procs[i];

		for (j = 0; j < p->nr_pend; j++) {
			const struct alloc *a =
			    tracker__alloc(p, p->pend[j].space, p->pend[j].addr);

			if (a)
				series__pending_done(se, p, tracker__alloc_site(t, a), a->size,
						     p->pend[j].ts_ns, 0);
		}
	}
	return err;
}

void series__pending_done(void *ctx, const struct tproc *p, uint32_t site, uint64_t bytes,
			  uint64_t begin_ns, uint64_t end_ns)
{
	struct series *se = ctx;

	if (se->nr_slices >= MAX_SLICES ||
	    vec_grow((void **)&se->slices, &se->cap_slices, se->nr_slices, sizeof(*se->slices))) {
		se->slices_dropped++;
		return;
	}
	se->slices[se->nr_slices++] =
	    (struct pending_slice){p->pid, p->gen, site, bytes, begin_ns, end_ns};
}
