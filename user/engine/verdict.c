// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "tracker/pools.h"
#include "tracker/rules.h"
#include "engine/verdict.h"
#include "lib/vec.h"
#include "probe/catalog.h"

/* What the judges read. */
struct judging {
	const struct tracker *t;
	struct timeline *tl;
	const struct gate *gate;
};

static enum cat_mem site_mem(const struct site *s)
{
	return (enum cat_mem)s->mem;
}

/* A persistent class that must be gone at session end leaks when it is not. */
static bool must_release(const struct tracker *t, const struct site *s)
{
	return s->cls == CLS_PERSISTENT && t->rules && t->rules->v[s->rule - 1].release_at_end;
}

/*
 * Memory of another process mapped here, or a handle that shares memory (ipc.h): left
 * open, a leak of its own kind; its bytes are not this process's.
 */
static bool shared_mem(const struct site *s)
{
	enum cat_mem m = site_mem(s);

	return (m == MEM_IPC || m == MEM_MULTICAST) && s->owner_kind != OWNER_LAYER;
}

/* How much of list k a site holds: 0 when it is not in the list, else what the list sorts by. */
static uint64_t amount(const struct tracker *t, const struct site *s, enum verdict_list k)
{
	uint64_t live = s->live_bytes ? s->live_bytes : s->live_count;

	switch (k) {
	case VERDICT_LEAKS:
		if (!s->judged || (s->cls != CLS_NONE && !must_release(t, s)))
			return 0;
		/* Graph memory is its graphs' while their execs live: a class of its own. */
		return s->owner_kind == OWNER_GRAPH ? 0 : live;
	case VERDICT_SHARED:
		if (!shared_mem(s) || (s->cls != CLS_NONE && !must_release(t, s)))
			return 0;
		return s->live_count ? live : 0;
	case VERDICT_GRAPH:
		return s->owner_kind == OWNER_GRAPH && s->live_count ? live : 0;
	case VERDICT_RETAINED:
		if ((!s->judged && !shared_mem(s)) || must_release(t, s))
			return 0;
		return s->cls == CLS_PERSISTENT || s->cls == CLS_INIT ? live : 0;
	case VERDICT_IGNORED:
		return s->judged && s->cls == CLS_IGNORED ? live : 0;
	case VERDICT_PENDING:
		if (s->owner_kind == OWNER_LAYER)
			return 0;
		return s->pending_bytes ? s->pending_bytes : s->pending_count;
	case VERDICT_FAILED:
		return s->failed;
	case VERDICT_VA:
		return s->owner_kind != OWNER_LAYER && site_mem(s) == MEM_VA ? s->live_count : 0;
	case VERDICT_REG:
		return site_mem(s) == MEM_REG ? s->live_count : 0;
	case VERDICT_LISTS:
		break;
	}
	return 0;
}

/* The order of one list, for qsort_r: no file-scope state between two sorts. */
struct list_order {
	const struct tracker *t;
	enum verdict_list k;
};

static int cmp_sites(const void *a, const void *b, void *ctx)
{
	const struct list_order *o = ctx;
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	const struct site *x = &o->t->sites[ia], *y = &o->t->sites[ib];
	uint64_t kx = amount(o->t, x, o->k), ky = amount(o->t, y, o->k);

	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (x->live_bytes != y->live_bytes)
		return x->live_bytes > y->live_bytes ? -1 : 1;
	return ia < ib ? -1 : 1;
}

/* The lists of p whose bit is in mask, in one pass over the sites. 0 or -ENOMEM. */
static int collect(const struct tracker *t, const struct tproc *p, unsigned int mask,
		   struct site_list *lists)
{
	size_t cap[VERDICT_LISTS] = {0}, i;
	int k;

	for (i = 0; i < t->nr_sites; i++) {
		if (!site__of(&t->sites[i], p))
			continue;
		for (k = 0; k < VERDICT_LISTS; k++) {
			struct site_list *l = &lists[k];

			if (!(mask & 1u << k) || !amount(t, &t->sites[i], k))
				continue;
			if (vec_grow((void **)&l->v, &cap[k], l->n, sizeof(*l->v)))
				return -ENOMEM;
			l->v[l->n++] = (uint32_t)i;
		}
	}
	for (k = 0; k < VERDICT_LISTS; k++) {
		struct list_order o = {t, k};

		if (lists[k].n)
			qsort_r(lists[k].v, lists[k].n, sizeof(*lists[k].v), cmp_sites, &o);
	}
	return 0;
}

int verdict__rank(const struct tracker *t, const struct tproc *p, enum verdict_list k,
		  struct site_list *out)
{
	struct site_list lists[VERDICT_LISTS] = {};
	int err = collect(t, p, 1u << k, lists);

	*out = lists[k];
	if (err) {
		free(out->v);
		*out = (struct site_list){};
	}
	return err;
}

/*
 * Processes in the report: those attached, and any other that did something (a followed
 * child is announced at its first traced call; a record from one never announced still
 * counts). Shells and helpers a server forks, which call nothing traced, stay out.
 */
bool verdict__reported(const struct tproc *p)
{
	return p->attached || p->c.allocs || p->c.frees || p->c.failed_calls || p->live_count ||
	       tproc__dropped(p);
}

/* ---- the judges of one process, in the order they run: later ones read earlier ones ---- */

static int judge_sites(const struct judging *j, struct proc_verdict *pv)
{
	size_t i;
	int err;

	err = collect(j->t, pv->p, (1u << VERDICT_LISTS) - 1, pv->sites);
	for (i = 0; !err && i < pv->sites[VERDICT_LEAKS].n; i++)
		pv->leaked_bytes += j->t->sites[pv->sites[VERDICT_LEAKS].v[i]].live_bytes;
	return err;
}

/* Growth leaks and the time to OOM; a timeline out of memory says none, as it always did. */
static int judge_growth(const struct judging *j, struct proc_verdict *pv)
{
	size_t i;

	if (!j->tl)
		return 0;
	pv->nr_steps = timeline__nr_steps(j->tl, pv->p);
	if (timeline__growth(j->tl, pv->p, &pv->growth, &pv->nr_growth))
		return 0;
	timeline__project(j->tl, pv->p, pv->growth, pv->nr_growth, &pv->proj);
	for (i = 0; i < pv->nr_growth; i++) {
		pv->growth_per_s += pv->growth[i].slope_per_s;
		pv->growth_per_step += pv->growth[i].slope_per_step;
	}
	return 0;
}

/* (how, api) into a list of ways memory went, merged by both; the list holds at most max. */
static void release_add(struct shutdown_release *by, size_t *n, size_t max, uint8_t how,
			uint16_t api, uint64_t bytes, uint64_t count)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (by[i].how == how && by[i].api == api)
			break;
	if (i == *n) {
		if (*n == max)
			return;
		by[(*n)++] = (struct shutdown_release){.how = how, .api = api};
	}
	by[i].bytes += bytes;
	by[i].count += count;
	/* largest first: insertion, the lists are a handful long */
	for (; i && by[i].bytes > by[i - 1].bytes; i--) {
		struct shutdown_release x = by[i];

		by[i] = by[i - 1];
		by[i - 1] = x;
	}
}

/* What site (an index, or every site: UINT32_MAX) of p released at shutdown, by how. */
static void site_releases(const struct tracker *t, const struct tproc *p, uint32_t site,
			  struct shutdown_release *by, size_t *n, size_t max)
{
	size_t i;

	for (i = 0; i < p->nr_shut; i++) {
		const struct release *e = &p->shut[i];

		if (e->sstack < t->nr_sstacks &&
		    (site == UINT32_MAX || t->sstacks[e->sstack].site == site))
			release_add(by, n, max, e->how, e->api, e->bytes, 1);
	}
}

/* The process's shutdown: where it began, and what went in it. */
static int judge_shutdown(const struct judging *j, struct proc_verdict *pv)
{
	const struct tproc *p = pv->p;
	struct shutdown *sd = &pv->shutdown;
	size_t i;

	if (!tproc__shut_down(p))
		return 0;
	if (tproc__released(j->t, p, &sd->rel))
		return -ENOMEM;
	sd->on = true;
	sd->step = p->last_alloc_step;
	sd->ts_ns = p->last_alloc_ts_ns;
	for (i = 0; i < j->t->nr_sites; i++) {
		const struct site *s = &j->t->sites[i];

		if (!site__of(s, p) || !s->counts)
			continue;
		sd->live_bytes += s->live_bytes + sd->rel.site_bytes[i];
		sd->live_count += s->live_count + sd->rel.site_count[i];
		sd->released_bytes += sd->rel.site_bytes[i];
		sd->released_count += sd->rel.site_count[i];
	}
	site_releases(j->t, p, UINT32_MAX, sd->by, &sd->nr_by, SHUTDOWN_RELEASES);
	return 0;
}

/* Whether s is memory of an allocator a cache rule names (rules.h). */
static bool cache_site(const struct tracker *t, const struct tproc *p, const struct site *s,
		       uint16_t *rule)
{
	int i;

	if (!site__of(s, p) || !s->counts || !s->judged)
		return false;
	i = rules__cache(t->rules, cat_api_name(s->api), s->pid);
	if (i < 0)
		return false;
	*rule = (uint16_t)(i + 1);
	return true;
}

static void cache_size_add(struct cache_verdict *c, uint64_t size)
{
	size_t i;

	for (i = 0; i < c->nr_sizes && c->sizes[i].size != size; i++)
		;
	if (i == c->nr_sizes) {
		if (c->nr_sizes == CACHE_SIZES) {
			c->other_sizes++;
			return;
		}
		c->sizes[c->nr_sizes++] = (struct cache_size){.size = size};
	}
	c->sizes[i].count++;
}

static int cmp_cache_sizes(const void *a, const void *b)
{
	const struct cache_size *x = a, *y = b;
	uint64_t bx = x->size * x->count, by = y->size * y->count;

	if (bx != by)
		return bx > by ? -1 : 1;
	return x->size > y->size ? -1 : x->size < y->size;
}

/*
 * A caching allocator's memory, split where its owner gave it back. ONNX Runtime's WebGPU
 * buffer manager keeps every buffer it made (its bucket cache, a generation's KV cache as it
 * grows) until its session is released, and then releases them itself; a tensor the program
 * still holds is not its to release, and goes only with the device at exit. Measured on
 * transformers.js (docs/webgpu.md): every correct program's buffers went back through the
 * session's own releases, every leak's held tensors (exactly their bytes) with the device.
 * So growth at a cache's site whose memory the program's releases all gave back is the
 * cache warming up or a unit of work's memory, no leak; what the program never released is
 * the leak, whether or not its steps grew (a session never released included).
 */
static int judge_cache(const struct judging *j, struct proc_verdict *pv)
{
	const struct tracker *t = j->t;
	const struct tproc *p = pv->p;
	struct cache_verdict *c = &pv->cache;
	uint64_t *held = NULL;
	uint16_t rule;
	size_t i, k;

	if (!t->rules)
		return 0;
	for (i = 0; i < t->nr_sites && !c->on; i++)
		c->on = cache_site(t, p, &t->sites[i], &c->rule);
	if (!c->on || !pv->shutdown.on)
		return 0;
	c->judged = true;
	held = calloc(t->nr_sites, sizeof(*held));
	if (!held)
		return -ENOMEM;
	for (i = 0; i < p->nr_shut; i++) {
		const struct release *e = &p->shut[i];
		uint32_t site;

		if (e->sstack >= t->nr_sstacks)
			continue;
		site = t->sstacks[e->sstack].site;
		if (!cache_site(t, p, &t->sites[site], &rule))
			continue;
		if (e->how == RELEASE_FREED) {
			c->freed_bytes += e->bytes;
			c->freed_count++;
			continue;
		}
		held[site] += e->bytes;
		c->held_bytes += e->bytes;
		c->held_count++;
		cache_size_add(c, e->bytes);
	}
	for (i = 0; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];

		if (!s->live_count || !cache_site(t, p, s, &rule))
			continue;
		held[i] += s->live_bytes;
		c->held_bytes += s->live_bytes;
		c->held_count += s->live_count;
	}
	if (c->nr_sizes)
		qsort(c->sizes, c->nr_sizes, sizeof(*c->sizes), cmp_cache_sizes);
	/* Growth whose memory the allocator gave back: its cache, taken out of the leaks. */
	for (i = 0, k = 0; i < pv->nr_growth; i++) {
		const struct growth *g = &pv->growth[i];
		struct cache_warm *w;

		if (held[g->site] || !cache_site(t, p, &t->sites[g->site], &rule)) {
			pv->growth[k++] = *g;
			continue;
		}
		w = realloc(c->warm, (c->nr_warm + 1) * sizeof(*c->warm));
		if (!w) {
			free(held);
			return -ENOMEM;
		}
		c->warm = w;
		c->warm[c->nr_warm++] = (struct cache_warm){.site = g->site,
							    .slope_per_step = g->slope_per_step,
							    .end_bytes = g->end_bytes};
		pv->growth_per_s -= g->slope_per_s;
		pv->growth_per_step -= g->slope_per_step;
	}
	free(held);
	if (k == pv->nr_growth)
		return 0;
	pv->nr_growth = k;
	if (!k)
		pv->growth_per_s = pv->growth_per_step = 0;
	memset(&pv->proj, 0, sizeof(pv->proj));
	if (j->tl)
		timeline__project(j->tl, p, pv->growth, pv->nr_growth, &pv->proj);
	return 0;
}

/* What one site stack (index ss) holds at the moment a list is of. */
typedef void (*stack_value_fn)(const struct tracker *t, const struct proc_verdict *pv, uint32_t ss,
			       uint64_t *bytes, uint64_t *count);

/* A site's stacks into a list of at most VERDICT_STACKS, largest first; *total their bytes. */
static int stacks_of(const struct tracker *t, const struct proc_verdict *pv, const struct site *s,
		     stack_value_fn value, struct stack_bytes **out, size_t *n, uint64_t *total)
{
	struct stack_bytes *v = NULL;
	size_t cap = 0, k;
	uint32_t i;

	*n = 0;
	*total = 0;
	for (i = s->sstacks; i != UINT32_MAX; i = t->sstacks[i].next) {
		uint64_t bytes, count;

		value(t, pv, i, &bytes, &count);
		if (!count)
			continue;
		*total += bytes;
		if (*n == VERDICT_STACKS && bytes <= v[*n - 1].bytes)
			continue;
		if (*n < VERDICT_STACKS) {
			if (vec_grow((void **)&v, &cap, *n, sizeof(*v))) {
				free(v);
				return -ENOMEM;
			}
			(*n)++;
		}
		for (k = *n - 1; k && v[k - 1].bytes < bytes; k--)
			v[k] = v[k - 1];
		v[k] = (struct stack_bytes){.sstack = i, .bytes = bytes, .count = count};
	}
	*out = v;
	return 0;
}

/* A site stack's memory at the end of the judged steps: before a shutdown released it. */
static void at_judged_end(const struct tracker *t, const struct proc_verdict *pv, uint32_t ss,
			  uint64_t *bytes, uint64_t *count)
{
	const struct released *r = &pv->shutdown.rel;

	*bytes = t->sstacks[ss].live_bytes + (pv->shutdown.on ? r->ss_bytes[ss] : 0);
	*count = t->sstacks[ss].live_count + (pv->shutdown.on ? r->ss_count[ss] : 0);
}

static void at_peak(const struct tracker *t, const struct proc_verdict *pv, uint32_t ss,
		    uint64_t *bytes, uint64_t *count)
{
	const struct site_stack *x = &t->sstacks[ss];

	*bytes = sstack__peak_bytes(pv->p, &t->sites[x->site], x);
	*count = sstack__peak_count(pv->p, &t->sites[x->site], x);
}

/* How each growth leak's memory ended, and the stacks it grew at. */
static int judge_growth_ends(const struct judging *j, struct proc_verdict *pv)
{
	const struct tproc *p = pv->p;
	size_t i, k;

	if (!pv->nr_growth)
		return 0;
	pv->growth_end = calloc(pv->nr_growth, sizeof(*pv->growth_end));
	if (!pv->growth_end)
		return -ENOMEM;
	for (i = 0; i < pv->nr_growth; i++) {
		const struct growth *g = &pv->growth[i];
		const struct site *s = &j->t->sites[g->site];
		struct growth_end *ge = &pv->growth_end[i];
		uint64_t total;

		ge->live_bytes = s->live_bytes;
		ge->live_count = s->live_count;
		if (pv->shutdown.on) {
			ge->released_bytes = pv->shutdown.rel.site_bytes[g->site];
			ge->released_count = pv->shutdown.rel.site_count[g->site];
			site_releases(j->t, p, g->site, ge->by, &ge->nr_by, SHUTDOWN_RELEASES);
		}
		if (stacks_of(j->t, pv, s, at_judged_end, &ge->stacks, &ge->nr_stacks, &total))
			return -ENOMEM;
		/* The slope shared by bytes: what each stack holds of the memory that grew. */
		for (k = 0; total && k < ge->nr_stacks; k++)
			ge->stacks[k].per_step =
			    g->slope_per_step * (double)ge->stacks[k].bytes / (double)total;
	}
	return 0;
}

static int cmp_peak_sites(const void *a, const void *b)
{
	const struct peak_site *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->site < y->site ? -1 : x->site > y->site;
}

/* One device's peak: its sites then, largest first. */
static int peak_view(const struct judging *j, const struct proc_verdict *pv, uint8_t slot,
		     struct peak_view *pw)
{
	const struct tproc *p = pv->p;
	const struct peak *pk = &p->peak[slot];
	size_t cap = 0, i;
	uint64_t total;

	*pw = (struct peak_view){.slot = slot,
				 .device = slot < PEAK_CUDA_SLOTS ? (int16_t)slot : -1,
				 .webgpu = slot >= PEAK_CUDA_SLOTS && slot < PEAK_HOST_SLOT
					       ? (uint32_t)(slot - PEAK_CUDA_SLOTS + 1)
					       : 0,
				 .bytes = pk->bytes,
				 .count = pk->count,
				 .ts_ns = pk->ts_ns,
				 .step = pk->step,
				 .live_bytes = pk->live_bytes,
				 .mostly_gone = pk->live_bytes < pk->bytes / 2 + pk->bytes % 2};
	for (i = 0; i < j->t->nr_sites; i++) {
		const struct site *s = &j->t->sites[i];
		struct peak_site ps = {.site = (uint32_t)i};
		uint32_t k;

		if (!site__of(s, p) || s->peak_slot != slot)
			continue;
		for (k = s->sstacks; k != UINT32_MAX; k = j->t->sstacks[k].next) {
			ps.bytes += sstack__peak_bytes(p, s, &j->t->sstacks[k]);
			ps.count += sstack__peak_count(p, s, &j->t->sstacks[k]);
		}
		if (!ps.count)
			continue;
		if (stacks_of(j->t, pv, s, at_peak, &ps.stacks, &ps.nr_stacks, &total) ||
		    vec_grow((void **)&pw->sites, &cap, pw->nr_sites, sizeof(*pw->sites))) {
			free(ps.stacks);
			while (pw->nr_sites)
				free(pw->sites[--pw->nr_sites].stacks);
			free(pw->sites);
			pw->sites = NULL;
			return -ENOMEM;
		}
		pw->sites[pw->nr_sites++] = ps;
	}
	if (pw->nr_sites)
		qsort(pw->sites, pw->nr_sites, sizeof(*pw->sites), cmp_peak_sites);
	return 0;
}

/* The live set at the peak of each device the process had memory on. */
static int judge_peaks(const struct judging *j, struct proc_verdict *pv)
{
	const struct tproc *p = pv->p;
	size_t cap = 0;
	uint8_t slot;

	for (slot = 0; slot < PEAK_SLOTS; slot++) {
		if (!p->peak[slot].bytes)
			continue;
		if (vec_grow((void **)&pv->peaks, &cap, pv->nr_peaks, sizeof(*pv->peaks)))
			return -ENOMEM;
		if (peak_view(j, pv, slot, &pv->peaks[pv->nr_peaks]))
			return -ENOMEM;
		pv->nr_peaks++;
	}
	return 0;
}

static int gate_add(struct proc_verdict *pv, size_t *cap, struct gate_violation gv)
{
	if (vec_grow((void **)&pv->gate, cap, pv->nr_gate, sizeof(*pv->gate)))
		return -ENOMEM;
	pv->gate[pv->nr_gate++] = gv;
	return 0;
}

/* Every limit the process exceeds, whether or not the gate is on (the NDJSON says both). */
static int judge_gate(const struct judging *j, struct proc_verdict *pv)
{
	const struct gate *g = j->gate;
	size_t i, cap = 0;
	int err = 0;

	for (i = 0; !err && i < pv->nr_growth; i++)
		if (pv->growth[i].slope_per_step > (double)g->max_growth)
			err = gate_add(pv, &cap,
				       (struct gate_violation){.kind = GATE_GROWTH,
							       .growth = &pv->growth[i],
							       .limit = g->max_growth});
	if (!err && g->has_max_live && pv->leaked_bytes > g->max_live_at_exit)
		err = gate_add(pv, &cap,
			       (struct gate_violation){.kind = GATE_LIVE_AT_EXIT,
						       .limit = g->max_live_at_exit});
	for (i = 0; !err && j->t->rules && i < pv->p->nr_viols; i++)
		err = gate_add(
		    pv, &cap, (struct gate_violation){.kind = GATE_RULE, .rule = &pv->p->viols[i]});
	/* An allocator cache's memory the program never released: in use by it to the end. */
	if (!err && pv->cache.judged &&
	    pv->cache.held_bytes > (g->has_max_live ? g->max_live_at_exit : 0))
		err = gate_add(
		    pv, &cap,
		    (struct gate_violation){.kind = GATE_HELD,
					    .limit = g->has_max_live ? g->max_live_at_exit : 0});
	/* A mapping left open holds another process's memory: a leak, of no bytes here. */
	for (i = 0; !err && i < pv->sites[VERDICT_SHARED].n; i++)
		err = gate_add(pv, &cap,
			       (struct gate_violation){.kind = GATE_SHARED,
						       .site = pv->sites[VERDICT_SHARED].v[i]});
	return err;
}

static int judge_uncertainty(const struct judging *j, struct proc_verdict *pv)
{
	pv->uncertainty_known = !tproc__uncertainty(j->t, pv->p, &pv->uncertainty);
	return 0;
}

/* Whether a growth leak is at a caching allocator's blocks. */
static bool blocks_grow(const struct judging *j, const struct proc_verdict *pv)
{
	size_t i;

	for (i = 0; i < pv->nr_growth; i++)
		if (GL_API_FAMILY(j->t->sites[pv->growth[i].site].api) == GL_FAM_PYTORCH)
			return true;
	return false;
}

/*
 * Reserve growth with allocated flat, over the steps after the warm-up: the reserve ended
 * above where it began, and allocated rose by less than a tenth of that (a block that leaks
 * is a growth leak, and makes the reserve grow with it: not this).
 */
static void judge_cache_growth(const struct judging *j, struct proc_verdict *pv)
{
	const struct timeline_opts *o = timeline__opts(j->tl);
	struct torch_cache_growth *c = &pv->torch.cache;
	const struct step_stat *st, *first = NULL, *last = NULL;
	size_t n, i;

	st = timeline__steps(j->tl, pv->p, &n);
	for (i = 0; i < n; i++) {
		if (st[i].step < 0 || st[i].step < o->warmup_steps)
			continue;
		if (!first)
			first = &st[i];
		last = &st[i];
	}
	if (!first || first == last || last->torch_reserved <= first->torch_reserved)
		return;
	if (last->torch_allocated > first->torch_allocated &&
	    last->torch_allocated - first->torch_allocated >
		(last->torch_reserved - first->torch_reserved) / 10)
		return;
	if (blocks_grow(j, pv))
		return;
	*c = (struct torch_cache_growth){.found = true,
					 .first_step = first->step,
					 .last_step = last->step,
					 .reserved_from = first->torch_reserved,
					 .reserved_to = last->torch_reserved,
					 .allocated_from = first->torch_allocated,
					 .allocated_to = last->torch_allocated};
}

/* The four buckets per device, and whether the reserve grew as a cache. */
static int judge_torch(const struct judging *j, struct proc_verdict *pv)
{
	const struct tblocks *b = pv->p->blocks;
	uint64_t mem[TBLOCKS_DEVICES] = {0};
	struct torch_verdict *tv = &pv->torch;
	size_t i;
	int d;

	if (!b)
		return 0;
	tv->on = true;
	tv->source = b->source;
	for (i = 0; i < j->t->nr_sites; i++) {
		const struct site *s = &j->t->sites[i];
		const struct cat_api *api = cat_by_api(s->api);

		if (!site__of(s, pv->p) || !s->counts || !api || s->device < 0 ||
		    s->device >= TBLOCKS_DEVICES ||
		    (api->mem != MEM_DEVICE && api->mem != MEM_MANAGED))
			continue;
		mem[s->device] += s->live_bytes;
	}
	for (d = 0; d < TBLOCKS_DEVICES; d++) {
		struct torch_device *td = &tv->dev[tv->nr_dev];
		uint64_t reserved = b->reserved[d] + b->orphan[d];

		if (!reserved && !b->nr_allocated[d] && !b->nr_segments[d] && !mem[d])
			continue;
		*td = (struct torch_device){.device = (int16_t)d,
					    .allocated = b->allocated[d],
					    .allocated_count = b->nr_allocated[d],
					    .reserved = reserved,
					    .segments = b->nr_segments[d]};
		td->cached = reserved > td->allocated ? reserved - td->allocated : 0;
		/* Memory of the device outside PyTorch's segments (orphans are PyTorch's). */
		td->outside = mem[d] > b->reserved[d] ? mem[d] - b->reserved[d] : 0;
		tv->allocated += td->allocated;
		tv->reserved += td->reserved;
		tv->cached += td->cached;
		tv->outside += td->outside;
		tv->nr_dev++;
	}
	if (j->tl)
		judge_cache_growth(j, pv);
	return 0;
}

/* What its pools hold, and which of them a report lists; what it lost. */
static int judge_pools(const struct judging *j, struct proc_verdict *pv)
{
	const struct tpools *ps = pv->p->pools;
	size_t i;

	(void)j;
	pv->dropped = tproc__dropped(pv->p);
	pv->pool_reserve = pools__reserve(pv->p);
	if (!ps || !ps->n)
		return 0;
	pv->pools = calloc(ps->n, sizeof(*pv->pools));
	if (!pv->pools)
		return -ENOMEM;
	for (i = 0; i < ps->n; i++)
		if (pools__notable(&ps->v[i]))
			pv->pools[pv->nr_pools++] = &ps->v[i];
	return 0;
}

static int (*const judges[])(const struct judging *j, struct proc_verdict *pv) = {
    judge_pools, /* reads none of the others */
    judge_sites,       judge_growth,
    judge_shutdown,    judge_cache, /* after both: growth its allocator gave back */
    judge_growth_ends,		    /* after those: how the memory that grew ended */
    judge_peaks,       judge_gate,
    judge_uncertainty, judge_torch,
};

/* ---- the judges across processes, after every process's own ---- */

static int judge_totals(struct verdict *v)
{
	size_t i;

	for (i = 0; i < v->nr_procs; i++) {
		const struct proc_verdict *pv = &v->procs[i];

		if (!pv->reported)
			continue;
		v->nr_reported++;
		v->live_bytes += pv->p->live_bytes;
		v->leaked_bytes += pv->leaked_bytes;
		v->gate_failed |= v->gate.on && pv->nr_gate;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* "Does not grow" is a median growth of the peers under this fraction of the process's. */
#define SKEW_PEER_FRACTION 0.1

static int judge_skew(struct verdict *v)
{
	double *peers = malloc((v->nr_procs ? v->nr_procs : 1) * sizeof(*peers));
	size_t i, j, k;

	if (!peers)
		return -ENOMEM;
	for (i = 0; i < v->nr_procs; i++) {
		struct proc_verdict *pv = &v->procs[i];

		if (!pv->reported || v->nr_reported < 2 || pv->growth_per_s <= 0)
			continue;
		for (j = 0, k = 0; j < v->nr_procs; j++)
			if (j != i && v->procs[j].reported && v->procs[j].p->c.allocs)
				peers[k++] =
				    v->procs[j].growth_per_s > 0 ? v->procs[j].growth_per_s : 0;
		pv->nr_peers = k;
		if (!k)
			continue;
		qsort(peers, k, sizeof(*peers), cmp_double);
		pv->peer_median_per_s =
		    k % 2 ? peers[k / 2] : (peers[k / 2 - 1] + peers[k / 2]) / 2;
		pv->skewed = pv->peer_median_per_s <= SKEW_PEER_FRACTION * pv->growth_per_s;
	}
	free(peers);
	return 0;
}

static int (*const across[])(struct verdict *v) = {
    judge_totals, /* first: the others compare reported processes */
    judge_skew,
};

static void proc_free(struct proc_verdict *pv)
{
	size_t i, j;
	int k;

	for (k = 0; k < VERDICT_LISTS; k++)
		free(pv->sites[k].v);
	for (i = 0; pv->growth_end && i < pv->nr_growth; i++)
		free(pv->growth_end[i].stacks);
	free(pv->growth_end);
	free(pv->growth);
	free(pv->cache.warm);
	for (i = 0; i < pv->nr_peaks; i++) {
		for (j = 0; j < pv->peaks[i].nr_sites; j++)
			free(pv->peaks[i].sites[j].stacks);
		free(pv->peaks[i].sites);
	}
	free(pv->peaks);
	released__free(&pv->shutdown.rel);
	free(pv->gate);
	free(pv->pools);
}

void verdict__free(struct verdict *v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < v->nr_procs; i++)
		proc_free(&v->procs[i]);
	free(v->procs);
	free(v);
}

int verdict__new(const struct tracker *t, struct timeline *tl, const struct gate *gate,
		 struct verdict **out)
{
	struct verdict *v = calloc(1, sizeof(*v));
	struct judging j = {t, tl, NULL};
	size_t i, k;
	int err = 0;

	*out = NULL;
	if (!v)
		return -ENOMEM;
	if (gate)
		v->gate = *gate;
	j.gate = &v->gate;
	v->procs = calloc(t->nr_procs ? t->nr_procs : 1, sizeof(*v->procs));
	if (!v->procs) {
		free(v);
		return -ENOMEM;
	}
	v->nr_procs = t->nr_procs;
	for (i = 0; !err && i < t->nr_procs; i++) {
		struct proc_verdict *pv = &v->procs[i];

		pv->p = t->procs[i];
		pv->reported = verdict__reported(pv->p);
		for (k = 0; !err && k < sizeof(judges) / sizeof(judges[0]); k++)
			err = judges[k](&j, pv);
	}
	for (k = 0; !err && k < sizeof(across) / sizeof(across[0]); k++)
		err = across[k](v);
	if (err) {
		verdict__free(v);
		return err;
	}
	*out = v;
	return 0;
}

const struct growth *verdict__growth_at(const struct proc_verdict *pv, uint32_t site)
{
	size_t i;

	for (i = 0; i < pv->nr_growth; i++)
		if (pv->growth[i].site == site)
			return &pv->growth[i];
	return NULL;
}
