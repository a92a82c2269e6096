// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The snapshot's shape is PyTorch's (torch/csrc/cuda/memory_snapshot.cpp, and what
 * torch/cuda/_memory_viz.py reads): {"segments": [segment...], "device_traces": [[entry...]
 * per device]}. A segment tiles its range with blocks: PyTorch's blocks as they are, the gaps
 * between them "inactive" (free in the cache); _memory_viz.py's stats check that the blocks
 * add up to the segment. gpuleak sees the size a tensor asked for, not the rounded block
 * PyTorch carved for it: a block's size is its requested size, the rounding part of the gap.
 *
 * What is not PyTorch's: a device allocation or mapped VMM range holding no block is a
 * segment of its own whose one block is the allocation, segment_type the API that made it
 * ("cudaMalloc", "ncclMemAlloc", "cuMemCreate"), gpuleak_kind "outside"; a block in no
 * segment seen (its segment was made before the attach) is a segment of its own too,
 * gpuleak_kind "pre-attach", PyTorch's idea of a block it did not see being made. A free
 * issued and not yet complete (a deferred-free window) is a block "active_pending_free".
 *
 * Frames as PyTorch gives them, innermost first: the Python frames, then the native ones
 * ({filename, line, name}; a native frame's filename is its object, line 0). Each stack's
 * list is written once and referred to after (pickle memo).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "engine/memtrace.h"
#include "engine/query.h"
#include "lib/pickle.h"
#include "lib/vec.h"
#include "output/memviz.h"
#include "output/report_sink.h"
#include "probe/catalog.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"

#define MIB (1ULL << 20)

enum seg_kind { SEG_PYTORCH, SEG_OUTSIDE, SEG_PREATTACH };

static const char *const kind_names[] = {"pytorch", "outside", "pre-attach"};

struct seg {
	uint64_t addr, size;
	uint32_t sstack; /* outside and pre-attach: the allocation's; UINT32_MAX: none */
	int16_t device;
	uint8_t kind;  /* enum seg_kind */
	uint8_t flags; /* outside and pre-attach: the allocation's */
	bool expandable;
	bool unmapped; /* a VMM handle mapped nowhere: its address is the handle */
	uint32_t first_block, nr_blocks; /* PyTorch's: into blocks, sorted by address */
};

struct blk {
	uint64_t addr, size;
	uint32_t sstack;
	uint8_t flags;
};

struct mv {
	struct pickle *pk;
	const struct tracker *t;
	struct symbolizer *sym;
	const struct tproc *p;
	struct seg *segs;
	size_t nr_segs, cap_segs;
	struct blk *blks;
	size_t nr_blks, cap_blks;
	uint32_t *frames_memo; /* per sstack: memo index + 1 of its frame list, 0: not written */
};

static int cmp_seg(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_blk(const void *a, const void *b)
{
	const struct blk *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int add_seg(struct mv *m, const struct seg *s)
{
	if (vec_grow((void **)&m->segs, &m->cap_segs, m->nr_segs, sizeof(*m->segs)))
		return -ENOMEM;
	m->segs[m->nr_segs++] = *s;
	return 0;
}

static const struct site *site_of(const struct mv *m, uint32_t sstack)
{
	if (sstack >= m->t->nr_sstacks)
		return NULL;
	return &m->t->sites[m->t->sstacks[sstack].site];
}

/* The process the snapshot is of: PyTorch's first, then the most device memory. */
static const struct tproc *pick(const struct tracker *t)
{
	const struct tproc *best = NULL;
	size_t i;

	for (i = 0; i < t->nr_procs; i++) {
		const struct tproc *p = t->procs[i];

		if (!best || (!!p->blocks > !!best->blocks) ||
		    (!!p->blocks == !!best->blocks && p->live_bytes > best->live_bytes))
			best = p;
	}
	return best;
}

/* The ranges VMM handle a is mapped at: a segment each (PyTorch's pages, or outside). */
static int add_mappings(struct mv *m, const struct alloc *a, int16_t device)
{
	const struct tproc *p = m->p;
	bool any = false;
	size_t i;
	int err;

	for (i = 0; i < p->nr_maps; i++) {
		struct seg s = {.addr = p->maps[i].va,
				.size = p->maps[i].size,
				.sstack = a->sstack,
				.device = device,
				.kind = (a->flags & AF_SEGMENT) ? SEG_PYTORCH : SEG_OUTSIDE,
				.flags = a->flags,
				.expandable = !!(a->flags & AF_SEGMENT)};

		if (p->maps[i].handle != a->addr)
			continue;
		any = true;
		err = add_seg(m, &s);
		if (err)
			return err;
	}
	if (any)
		return 0;
	return add_seg(m, &(struct seg){.addr = a->addr,
					.size = a->size,
					.sstack = a->sstack,
					.device = device,
					.kind = SEG_OUTSIDE,
					.flags = a->flags,
					.unmapped = true});
}

/* An expandable segment's pages, mapped one after the other: one segment, as PyTorch's. */
static void merge_pages(struct mv *m)
{
	size_t i, o = 0;

	for (i = 0; i < m->nr_segs; i++) {
		struct seg *prev = o ? &m->segs[o - 1] : NULL, *s = &m->segs[i];

		if (prev && prev->expandable && s->expandable && prev->device == s->device &&
		    prev->addr + prev->size == s->addr) {
			prev->size += s->size;
			continue;
		}
		m->segs[o++] = *s;
	}
	m->nr_segs = o;
}

/* The PyTorch segment holding addr among the first n (sorted), or NULL. */
static struct seg *seg_at(struct mv *m, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->segs[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	if (m->segs[lo - 1].kind != SEG_PYTORCH ||
	    addr >= m->segs[lo - 1].addr + m->segs[lo - 1].size)
		return NULL;
	return &m->segs[lo - 1];
}

static int collect(struct mv *m)
{
	const struct alloc *a;
	size_t i, n, it = 0;
	int err;

	while ((a = query__next_alloc(m->p, &it))) {
		const struct site *s = site_of(m, a->sstack);

		if (!s)
			continue;
		if (a->space == SPACE_BLOCK) {
			if (vec_grow((void **)&m->blks, &m->cap_blks, m->nr_blks, sizeof(*m->blks)))
				return -ENOMEM;
			m->blks[m->nr_blks++] =
			    (struct blk){a->addr, a->size, a->sstack, (uint8_t)a->flags};
			continue;
		}
		if (!s->counts || s->device < 0 || (a->flags & AF_LAYER) ||
		    s->owner_kind == OWNER_LAYER)
			continue;
		if (a->space == SPACE_UVA)
			err =
			    add_seg(m, &(struct seg){.addr = a->addr,
						     .size = a->size,
						     .sstack = a->sstack,
						     .device = s->device,
						     .kind = (a->flags & AF_SEGMENT) ? SEG_PYTORCH
										     : SEG_OUTSIDE,
						     .flags = a->flags});
		else if (a->space == SPACE_VMM_HANDLE)
			err = add_mappings(m, a, s->device);
		else
			err = 0;
		if (err)
			return err;
	}
	if (m->nr_segs)
		qsort(m->segs, m->nr_segs, sizeof(*m->segs), cmp_seg);
	merge_pages(m);
	if (m->nr_blks)
		qsort(m->blks, m->nr_blks, sizeof(*m->blks), cmp_blk);
	/* Blocks into their segments, in address order; those in none make their own, after
	 * the n sorted ones seg_at searches. */
	n = m->nr_segs;
	for (i = 0; i < m->nr_blks; i++) {
		struct seg *g = seg_at(m, n, m->blks[i].addr);

		if (g) {
			if (!g->nr_blocks)
				g->first_block = (uint32_t)i;
			g->nr_blocks = (uint32_t)i - g->first_block + 1;
			continue;
		}
		err = add_seg(m, &(struct seg){.addr = m->blks[i].addr,
					       .size = m->blks[i].size,
					       .sstack = m->blks[i].sstack,
					       .device = site_of(m, m->blks[i].sstack)->device,
					       .kind = SEG_PREATTACH,
					       .flags = m->blks[i].flags});
		if (err)
			return err;
	}
	if (m->nr_segs)
		qsort(m->segs, m->nr_segs, sizeof(*m->segs), cmp_seg);
	return 0;
}

static void frame(struct mv *m, const char *file, int64_t line, const char *name)
{
	struct pickle *pk = m->pk;

	pickle__dict(pk);
	pickle__str_memo(pk, "filename");
	pickle__str_memo(pk, file);
	pickle__str_memo(pk, "line");
	pickle__int(pk, line);
	pickle__str_memo(pk, "name");
	pickle__str_memo(pk, name);
	pickle__dict_end(pk);
}

static void native_frame(struct mv *m, pid_t pid, uint64_t addr)
{
	const struct sym_info *si = symbolizer__info(m->sym, pid, addr);

	if (si && si->func)
		frame(m, si->module ? si->module : "??", 0, si->func);
	else
		frame(m, si && si->module ? si->module : "??", 0,
		      symbolizer__name(m->sym, pid, addr));
}

/* The frames of site stack ss: Python ones first, then native, each innermost first. */
static void frames(struct mv *m, uint32_t ss)
{
	const struct site *s = site_of(m, ss);
	const struct ustack *st;
	int pass, i;

	if (!s) {
		pickle__list(m->pk);
		pickle__list_end(m->pk);
		return;
	}
	if (m->frames_memo[ss]) {
		pickle__get(m->pk, m->frames_memo[ss] - 1);
		return;
	}
	st = symbolizer__stack(m->sym, s->pid, m->t->sstacks[ss].stack_id, s->caller);
	pickle__list(m->pk);
	if (!st)
		native_frame(m, s->pid, s->caller);
	for (pass = 0; st && pass < 2; pass++) {
		for (i = 0; i < st->nr; i++) {
			const struct sym_info *si = symbolizer__info(m->sym, s->pid, st->frames[i]);
			bool py = si && si->python;

			if (py != (pass == 0))
				continue;
			if (py)
				frame(m, si->file ? si->file : si->module, si->line, si->func);
			else
				native_frame(m, s->pid, st->frames[i]);
		}
	}
	pickle__list_end(m->pk);
	m->frames_memo[ss] = pickle__memo(m->pk) + 1;
}

static void key_uint(struct mv *m, const char *k, uint64_t v)
{
	pickle__str_memo(m->pk, k);
	pickle__uint(m->pk, v);
}

static void key_str(struct mv *m, const char *k, const char *v)
{
	pickle__str_memo(m->pk, k);
	pickle__str_memo(m->pk, v);
}

static void block(struct mv *m, uint64_t addr, uint64_t size, const char *state, uint32_t ss)
{
	pickle__dict(m->pk);
	key_uint(m, "address", addr);
	key_uint(m, "size", size);
	key_uint(m, "requested_size", ss == UINT32_MAX ? 0 : size);
	key_str(m, "state", state);
	pickle__str_memo(m->pk, "frames");
	frames(m, ss);
	pickle__dict_end(m->pk);
}

static const char *alloc_state(uint8_t flags)
{
	return (flags & AF_PENDING) ? "active_pending_free" : "active_allocated";
}

/* PyTorch's blocks of g, the gaps between them inactive; its allocated and active bytes. */
static void pytorch_blocks(struct mv *m, const struct seg *g, uint64_t *allocated, uint64_t *active)
{
	uint64_t at = g->addr, end = g->addr + g->size;
	uint32_t i;

	*allocated = *active = 0;
	for (i = g->first_block; i < g->first_block + g->nr_blocks; i++) {
		const struct blk *b = &m->blks[i];
		uint64_t from = b->addr > at ? b->addr : at;
		uint64_t to = b->addr + b->size < end ? b->addr + b->size : end;

		/* an overlap (a free not seen) is drawn once, by the earlier block */
		if (to <= from)
			continue;
		if (from > at)
			block(m, at, from - at, "inactive", UINT32_MAX);
		block(m, from, to - from, alloc_state(b->flags), b->sstack);
		if (!(b->flags & AF_PENDING))
			*allocated += to - from;
		*active += to - from;
		at = to;
	}
	if (at < end)
		block(m, at, end - at, "inactive", UINT32_MAX);
}

static const char *seg_type(const struct mv *m, const struct seg *g)
{
	const struct site *s = site_of(m, g->sstack);

	switch (g->kind) {
	case SEG_PYTORCH:
		/* PyTorch's small pool is of 2 MiB segments (blocks up to 1 MiB) */
		return g->size <= 2 * MIB && !g->expandable ? "small" : "large";
	case SEG_PREATTACH:
		return "pre-attach";
	default:
		return s ? cat_api_name(s->api) : "?";
	}
}

static void segment(struct mv *m, const struct seg *g)
{
	struct pickle *pk = m->pk;
	const struct site *s = site_of(m, g->sstack);
	uint64_t allocated, active;

	pickle__dict(pk);
	key_uint(m, "device", g->device < 0 ? 0 : (uint64_t)g->device);
	key_uint(m, "address", g->addr);
	key_uint(m, "total_size", g->size);
	key_uint(m, "stream", 0);
	key_str(m, "segment_type", seg_type(m, g));
	pickle__str_memo(pk, "segment_pool_id");
	pickle__int(pk, 0);
	pickle__int(pk, 0);
	pickle__tuple2(pk);
	pickle__str_memo(pk, "is_expandable");
	pickle__bool(pk, g->expandable);
	key_str(m, "gpuleak_kind", kind_names[g->kind]);
	if (g->kind != SEG_PYTORCH && s) {
		key_str(m, "gpuleak_api", cat_api_name(s->api));
		key_str(m, "gpuleak_site",
			symbolizer__site_name(m->sym, s->pid, m->t->sstacks[g->sstack].stack_id,
					      s->caller));
	}
	if (g->unmapped) {
		pickle__str_memo(pk, "gpuleak_unmapped");
		pickle__bool(pk, true);
	}
	pickle__str_memo(pk, "frames");
	if (g->kind == SEG_PYTORCH) {
		pickle__list(pk);
		pickle__list_end(pk);
	} else {
		frames(m, g->sstack);
	}
	pickle__str_memo(pk, "blocks");
	pickle__list(pk);
	if (g->kind == SEG_PYTORCH) {
		pytorch_blocks(m, g, &allocated, &active);
	} else {
		block(m, g->addr, g->size, alloc_state(g->flags), g->sstack);
		allocated = (g->flags & AF_PENDING) ? 0 : g->size;
		active = g->size;
	}
	pickle__list_end(pk);
	key_uint(m, "allocated_size", allocated);
	key_uint(m, "active_size", active);
	key_uint(m, "requested_size", allocated);
	pickle__dict_end(pk);
}

/* The device of a trace entry: its site's; -1 when it has none. */
static int entry_device(const struct mv *m, const struct mem_event *e)
{
	const struct site *s = site_of(m, e->sstack);

	return s ? s->device : -1;
}

/* Whether a refused allocation ran out of memory (what watch's OOM trigger says too). */
static bool is_oom(const struct mv *m, const struct mem_event *e)
{
	const struct site *s = site_of(m, e->sstack);

	if (!s || e->err != 2)
		return false;
	switch (GL_API_FAMILY(s->api)) {
	case GL_FAM_CUDART: /* cudaErrorMemoryAllocation */
	case GL_FAM_CUDA:   /* CUDA_ERROR_OUT_OF_MEMORY */
	case GL_FAM_VMM:
		return true;
	default:
		return false;
	}
}

static void trace_entry(struct mv *m, const char *action, const struct mem_event *e)
{
	pickle__dict(m->pk);
	key_str(m, "action", action);
	key_uint(m, "addr", e->addr);
	key_uint(m, "size", e->size);
	key_uint(m, "stream", 0);
	key_uint(m, "time_us", e->ts_ns / 1000);
	if (e->kind == MEM_EV_FAIL)
		key_uint(m, "device_free", 0);
	pickle__str_memo(m->pk, "frames");
	frames(m, e->sstack);
	pickle__dict_end(m->pk);
}

/* PyTorch's actions for one change; how many entries (0: not one it has). */
static int actions(const struct mv *m, const struct mem_event *e, const char **a)
{
	bool blk = e->space == SPACE_BLOCK;

	switch (e->kind) {
	case MEM_EV_ADD:
		a[0] = blk ? "alloc" : "segment_alloc";
		return 1;
	case MEM_EV_RELEASE:
		if (!blk) {
			a[0] = "segment_free";
			return 1;
		}
		a[0] = "free_requested";
		a[1] = "free_completed";
		return 2;
	case MEM_EV_MAP:
		a[0] = "segment_map";
		return 1;
	case MEM_EV_UNMAP:
		a[0] = "segment_unmap";
		return 1;
	case MEM_EV_FAIL:
		if (!is_oom(m, e))
			return 0;
		a[0] = "oom";
		return 1;
	default:
		return 0;
	}
}

static void device_traces(struct mv *m, const struct memtrace *mt, int nr_dev)
{
	size_t n = memtrace__count(mt), i;
	int d, k, j;

	pickle__str_memo(m->pk, "device_traces");
	pickle__list(m->pk);
	for (d = 0; d < nr_dev; d++) {
		pickle__list(m->pk);
		for (i = 0; i < n; i++) {
			const struct memtrace_entry *te = memtrace__get(mt, i);
			const char *a[2];

			if (te->pid != m->p->pid || te->gen != m->p->gen ||
			    entry_device(m, &te->e) != d)
				continue;
			k = actions(m, &te->e, a);
			for (j = 0; j < k; j++)
				trace_entry(m, a[j], &te->e);
		}
		pickle__list_end(m->pk);
	}
	pickle__list_end(m->pk);
}

/* Devices 0 .. n - 1 have segments or trace entries. */
static int nr_devices(const struct mv *m, const struct memtrace *mt)
{
	size_t n = memtrace__count(mt), i;
	int nr = 1, d;

	for (i = 0; i < m->nr_segs; i++)
		if (m->segs[i].device + 1 > nr)
			nr = m->segs[i].device + 1;
	for (i = 0; i < n; i++) {
		const struct memtrace_entry *te = memtrace__get(mt, i);

		if (te->pid != m->p->pid || te->gen != m->p->gen)
			continue;
		d = entry_device(m, &te->e);
		if (d + 1 > nr)
			nr = d + 1;
	}
	return nr;
}

int memviz__write(FILE *f, struct report *r, const struct memtrace *mt)
{
	struct mv m = {.t = r->t, .sym = r->sym};
	char comm[sizeof(m.p->comm) + 1];
	size_t i;
	int err;

	err = pickle__new(f, &m.pk);
	if (err)
		return err;
	m.p = pick(r->t);
	m.frames_memo = calloc(r->t->nr_sstacks + 1, sizeof(*m.frames_memo));
	if (!m.frames_memo) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (m.p) {
		err = collect(&m);
		if (err)
			goto cleanup;
	}
	pickle__dict(m.pk);
	pickle__str_memo(m.pk, "segments");
	pickle__list(m.pk);
	for (i = 0; i < m.nr_segs; i++)
		segment(&m, &m.segs[i]);
	pickle__list_end(m.pk);
	if (m.p) {
		device_traces(&m, mt, nr_devices(&m, mt));
	} else {
		pickle__str_memo(m.pk, "device_traces");
		pickle__list(m.pk);
		pickle__list_end(m.pk);
	}
	/* Ours: whose snapshot it is, and what the trace lost (PyTorch ignores other keys). */
	pickle__str_memo(m.pk, "gpuleak");
	pickle__dict(m.pk);
	key_uint(&m, "pid", m.p ? (uint64_t)m.p->pid : 0);
	snprintf(comm, sizeof(comm), "%.*s", (int)sizeof(m.p->comm), m.p ? m.p->comm : "");
	key_str(&m, "comm", comm);
	key_uint(&m, "trace_entries_dropped", memtrace__dropped(mt));
	pickle__dict_end(m.pk);
	pickle__dict_end(m.pk);
	err = pickle__end(m.pk);
	if (!err && (fflush(f) || ferror(f)))
		err = -EIO;
cleanup:
	pickle__free(m.pk);
	free(m.frames_memo);
	free(m.segs);
	free(m.blks);
	return err;
}
