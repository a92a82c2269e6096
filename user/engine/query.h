/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the outputs ask of the analysis beyond the verdict: small reads over the tracker's
 * tables (a site's process and WebGPU device, the layers under a site, the references that
 * keep its objects alive, a communicator's memory, live memory per API, a site's IPC
 * mappings, the rules, the live allocations), answered here so that no output walks the
 * tracker or calls into its modules: output/ includes engine/ headers, never tracker/ ones
 * (tests/layers.sh). What they answer with are the tracker's model (tracker/model.h) and the
 * records of its modules this header brings (pools, graphs, IPC totals, rules).
 */
#ifndef GPULEAK_ENGINE_QUERY_H
#define GPULEAK_ENGINE_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "engine/verdict.h"
#include "tracker/graphs.h"
#include "tracker/ipc.h"
#include "tracker/pools.h"
#include "tracker/rules.h"

/* The newest process of pid (the one a step of pid is of), or NULL. */
const struct tproc *query__proc(const struct tracker *t, pid_t pid);
/* The process site s is of, or NULL. */
const struct tproc *query__site_proc(const struct tracker *t, const struct site *s);
/* The WebGPU device object that owns site s's objects, or NULL. */
const struct tobj *query__owner(const struct tracker *t, const struct site *s);
/*
 * The next lower layer of the allocations at site idx with live allocations (a site whose
 * owner it is, OWNER_LAYER), from *it on (0 at first): its index in *out; false after the
 * last.
 */
bool query__next_layer(const struct tracker *t, uint32_t idx, size_t *it, uint32_t *out);

/*
 * References still held on a site's live objects, by the AddRef site that took them: what
 * keeps an unbalanced WebGPU object alive.
 */
struct addrefs {
	unsigned int n;
	uint32_t site[TOBJ_ADDREF_SITES];
	uint64_t count[TOBJ_ADDREF_SITES];
};

void query__addrefs(const struct tracker *t, uint32_t site, struct addrefs *out);

/* Live memory of a communicator: the sites it owns and everything layered under them. */
struct comm_totals {
	uint64_t bytes, count;
	uint64_t regs; /* registrations */
};

void query__comm(const struct tracker *t, const struct tproc *p, uint64_t comm,
		 struct comm_totals *out);

/* Live memory of one process on one (API, device): a row of its interval table. */
struct api_sum {
	uint16_t api;
	int16_t device;
	uint64_t owner; /* a WebGPU device's handle, 0 otherwise */
	uint32_t site;	/* one site of the row, to name its owner */
	uint64_t bytes, count, pending;
};

/* p's live and pending memory per (API, device), at most max rows (the rest left out). */
size_t query__by_api(const struct tracker *t, const struct tproc *p, struct api_sum *rows,
		     size_t max);
/* The IPC mappings site idx opened (ipc.h), all zero for none. */
void query__ipc(const struct tracker *t, uint32_t idx, struct ipc_totals *out);
/* Rule i (an index into the rules), or NULL without rules. */
const struct rule *query__rule(const struct tracker *t, size_t i);
/*
 * The next of the user's rules (--rule, --rules; not a preset's) that decided nothing this
 * run, from *it on (0 at first), or NULL after the last.
 */
const struct rule *query__unmatched_rule(const struct tracker *t, size_t *it);
/* p's next live (or pending) allocation from *it on (0 at first), or NULL after the last. */
const struct alloc *query__next_alloc(const struct tproc *p, size_t *it);

#endif
