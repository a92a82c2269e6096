// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared memory between processes (ipc.h): the registry of IPC handles made by any traced
 * process (tracker.ipc_exports: one handle's bytes -> who made it, of what, how big), the
 * mappings each process opened from such handles with their opens and closes (tproc.ipc),
 * and multicast objects' bindings. Records of all processes come in one order, the one the
 * ring buffer gave them: a handle is made before anyone can be sent it and open it.
 * Calls: allocs.c (an imported handle's size, a bound handle that goes).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "tracker/ipc.h"
#include "tracker/allocs.h"
#include "lib/vec.h"

struct ipc_export {
	uint8_t key[GL_DESC_MAX];
	uint8_t len;
	pid_t pid;
	uint64_t bytes; /* of the allocation it names, 0: not known */
};

struct ipc_registry {
	struct ipc_export *v;
	size_t n, cap;
	struct hmap idx; /* hash of (len, key) -> index */
};

struct tmc_bind {
	uint64_t mc, mc_off, size, mem;
};

struct tipc {
	struct tipc_map *maps;
	size_t nr_maps, cap_maps;
	struct hmap idx; /* (space, addr) -> index into maps */
	struct tmc_bind *binds;
	size_t nr_binds, cap_binds;
};

/* The bytes that name a handle: what an open passes in, what a make wrote. */
struct ipc_key {
	uint8_t b[GL_DESC_MAX];
	uint8_t len;
};

static bool key_of(const struct gl_call_rec *r, struct ipc_key *k)
{
	const struct gl_desc_rec *d = (const struct gl_desc_rec *)r;

	if (!(r->hdr.flags & GL_HF_DESC) || (r->hdr.flags & GL_HF_DESC_READ_FAIL) ||
	    r->hdr.size < sizeof(*d))
		return false;
	memset(k, 0, sizeof(*k));
	memcpy(k->b, d->desc, GL_DESC_MAX);
	k->len = GL_DESC_MAX;
	return true;
}

static void key_hash(const struct ipc_key *k, uint64_t *h0, uint64_t *h1)
{
	uint64_t a = 0x243f6a8885a308d3ULL ^ k->len, b = 0x13198a2e03707344ULL, w;
	size_t i;

	for (i = 0; i < k->len; i += 8) {
		w = 0;
		memcpy(&w, k->b + i, k->len - i < 8 ? k->len - i : 8);
		a = hmap_mix(a ^ w);
		b = hmap_mix(b + w);
	}
	/* hmap's k0 must never be HMAP_EMPTY */
	*h0 = a == HMAP_EMPTY ? 0 : a;
	*h1 = b;
}

static struct ipc_export *registry_find(const struct ipc_registry *reg, const struct ipc_key *k)
{
	uint64_t h0, h1, *v;

	if (!reg)
		return NULL;
	key_hash(k, &h0, &h1);
	for (;; h1++) {
		v = hmap__get(&reg->idx, h0, h1);
		if (!v)
			return NULL;
		if (reg->v[*v].len == k->len && !memcmp(reg->v[*v].key, k->b, k->len))
			return &reg->v[*v];
	}
}

int ipc__export(struct tracker *t, struct tproc *p, const struct gl_call_rec *r)
{
	struct ipc_registry *reg;
	struct ipc_export *e;
	const struct alloc *a;
	struct ipc_key k;
	uint64_t h0, h1;

	if (!key_of(r, &k))
		return 0;
	if (!t->ipc_exports && !(t->ipc_exports = calloc(1, sizeof(*t->ipc_exports))))
		return -ENOMEM;
	reg = t->ipc_exports;
	e = registry_find(reg, &k);
	if (!e) {
		if (vec_grow((void **)&reg->v, &reg->cap, reg->n, sizeof(*reg->v)))
			return -ENOMEM;
		key_hash(&k, &h0, &h1);
		while (hmap__get(&reg->idx, h0, h1))
			h1++;
		if (hmap__put(&reg->idx, h0, h1, reg->n))
			return -ENOMEM;
		e = &reg->v[reg->n++];
		memset(e, 0, sizeof(*e));
		memcpy(e->key, k.b, k.len);
		e->len = k.len;
	}
	/* The same handle made again (the runtime's call, then the driver's): the latest. */
	a = tracker__alloc(p, SPACE_UVA, r->aux);
	e->pid = p->pid;
	e->bytes = a && !(a->flags & AF_UNSIZED) ? a->size : 0;
	return 0;
}

bool ipc__exported(const struct tracker *t, const struct gl_call_rec *r, uint64_t *bytes,
		   pid_t *exporter)
{
	const struct ipc_export *e;
	struct ipc_key k;

	*bytes = 0;
	*exporter = 0;
	if (!key_of(r, &k) || !(e = registry_find(t->ipc_exports, &k)))
		return false;
	*exporter = e->pid;
	*bytes = e->bytes;
	return e->bytes != 0;
}

static struct tipc *get(struct tproc *p)
{
	if (!p->ipc)
		p->ipc = calloc(1, sizeof(*p->ipc));
	return p->ipc;
}

static struct tipc_map *map_find(const struct tproc *p, uint8_t space, uint64_t addr)
{
	uint64_t *v = p->ipc ? hmap__get(&p->ipc->idx, space, addr) : NULL;

	return v ? &p->ipc->maps[*v] : NULL;
}

int ipc__opened(struct tproc *p, uint8_t space, uint64_t addr, uint32_t site, pid_t exporter,
		uint64_t ts_ns)
{
	struct tipc *ip = get(p);

	if (!ip || vec_grow((void **)&ip->maps, &ip->cap_maps, ip->nr_maps, sizeof(*ip->maps)))
		return -ENOMEM;
	if (hmap__put(&ip->idx, space, addr, ip->nr_maps))
		return -ENOMEM;
	ip->maps[ip->nr_maps++] = (struct tipc_map){.addr = addr,
						    .space = space,
						    .site = site,
						    .exporter = exporter,
						    .opens = 1,
						    .ts_ns = ts_ns};
	return 0;
}

bool ipc__reopened(struct tproc *p, uint8_t space, uint64_t addr)
{
	struct tipc_map *m = map_find(p, space, addr);

	if (m)
		m->opens++;
	return m != NULL;
}

bool ipc__closing(struct tproc *p, uint8_t space, uint64_t addr)
{
	struct tipc_map *m = map_find(p, space, addr);
	struct tipc *ip = p->ipc;
	size_t i;

	if (!m)
		return false;
	m->closes++;
	if (m->closes < m->opens)
		return true;
	/* The last reference: the mapping goes; the last entry takes its slot. */
	i = (size_t)(m - ip->maps);
	hmap__del(&ip->idx, space, addr);
	if (i != --ip->nr_maps) {
		ip->maps[i] = ip->maps[ip->nr_maps];
		hmap__put(&ip->idx, ip->maps[i].space, ip->maps[i].addr, i);
	}
	return false;
}

const struct tipc_map *ipc__mapping(const struct tproc *p, uint8_t space, uint64_t addr)
{
	return map_find(p, space, addr);
}

void ipc__site_totals(const struct tproc *p, uint32_t site, struct ipc_totals *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	for (i = 0; p->ipc && i < p->ipc->nr_maps; i++) {
		const struct tipc_map *m = &p->ipc->maps[i];

		if (m->site != site)
			continue;
		if (!out->mappings)
			out->exporter = m->exporter;
		else if (out->exporter != m->exporter)
			out->exporter = -1;
		out->mappings++;
		out->opens += m->opens;
		out->closes += m->closes;
	}
}

/* ---- multicast objects ---- */

bool ipc__bound(const struct tproc *p, uint64_t handle)
{
	size_t i;

	for (i = 0; p->ipc && i < p->ipc->nr_binds; i++)
		if (p->ipc->binds[i].mem == handle)
			return true;
	return false;
}

/* Bindings of mc in [off, off + size) end (size UINT64_MAX: all of them). */
static void unbind(struct tracker *t, struct tproc *p, uint64_t mc, uint64_t off, uint64_t size)
{
	struct tipc *ip = p->ipc;
	size_t i = 0;

	while (ip && i < ip->nr_binds) {
		struct tmc_bind b = ip->binds[i];
		struct alloc *a;

		if (b.mc != mc || b.mc_off < off || b.mc_off - off >= size) {
			i++;
			continue;
		}
		ip->binds[i] = ip->binds[--ip->nr_binds];
		/* A handle released while bound goes with its last binding and mapping. */
		a = alloc_table__find(&p->allocs, SPACE_VMM_HANDLE, b.mem);
		if (a && (a->flags & AF_RELEASED_MAPPED) && !ipc__bound(p, b.mem) &&
		    !tproc__vmm_mapped(p, b.mem))
			allocs__release(t, p, a);
	}
}

int ipc__mc_apply(struct tracker *t, struct tproc *p, const struct cat_api *api,
		  const struct gl_call_rec *r)
{
	struct tipc *ip;

	if (api->op == OP_MC_UNBIND) {
		unbind(t, p, r->addr, r->aux2, r->size);
		return 0;
	}
	ip = get(p);
	if (!ip || vec_grow((void **)&ip->binds, &ip->cap_binds, ip->nr_binds, sizeof(*ip->binds)))
		return -ENOMEM;
	ip->binds[ip->nr_binds++] =
	    (struct tmc_bind){.mc = r->addr, .mc_off = r->aux2, .size = r->size, .mem = r->aux};
	return 0;
}

void ipc__handle_gone(struct tracker *t, struct tproc *p, uint64_t handle)
{
	if (p->ipc && p->ipc->nr_binds)
		unbind(t, p, handle, 0, UINT64_MAX);
}

void ipc__mapped_size(struct tracker *t, struct tproc *p, uint64_t handle, uint64_t size)
{
	struct alloc *a = alloc_table__find(&p->allocs, SPACE_VMM_HANDLE, handle);

	if (a && (a->flags & AF_UNSIZED) && size && map_find(p, SPACE_VMM_HANDLE, handle))
		allocs__resize(t, p, a, size);
}

void ipc__free(struct tproc *p)
{
	if (!p->ipc)
		return;
	hmap__free(&p->ipc->idx);
	free(p->ipc->maps);
	free(p->ipc->binds);
	free(p->ipc);
	p->ipc = NULL;
}

void ipc__registry_free(struct tracker *t)
{
	if (!t->ipc_exports)
		return;
	hmap__free(&t->ipc_exports->idx);
	free(t->ipc_exports->v);
	free(t->ipc_exports);
	t->ipc_exports = NULL;
}
