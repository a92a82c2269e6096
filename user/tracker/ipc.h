/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared memory between processes (ipc.c): IPC handles made (cudaIpcGetMemHandle,
 * cuIpcGetMemHandle) in a registry all traced processes share, and, per process, the
 * mappings opened from them and the VMM handles imported (cuMemImportFromShareableHandle:
 * its file descriptor names nothing another process can match; its bytes come from its
 * first mapping). An opened handle maps another process's
 * allocation without owning its bytes: its allocation (MEM_IPC, not counted in the
 * process's memory) has the exporter's size when the exporter is traced, and must be closed
 * as often as it was opened: CUDA hands the same pointer back for a handle opened again,
 * with one more reference, and unmaps it at the last close. Multicast objects' bindings
 * (cuMulticastBindMem) live here too: a VMM handle bound to one lives on, like a mapped one.
 */
#ifndef GPULEAK_TRACKER_IPC_H
#define GPULEAK_TRACKER_IPC_H

#include "tracker/model.h"
#include "probe/catalog.h"

/* One mapping opened (or a handle imported) and not closed yet. */
struct tipc_map {
	uint64_t addr;
	uint8_t space;
	uint32_t site;	 /* where it was first opened */
	pid_t exporter;	 /* the traced process that made the handle, 0: not traced */
	uint64_t opens;	 /* opens that returned it (each one a reference) */
	uint64_t closes; /* closes that dropped a reference */
	uint64_t ts_ns;	 /* first opened */
};

/* What a site's open mappings add up to. */
struct ipc_totals {
	uint64_t mappings; /* open now */
	uint64_t opens, closes;
	pid_t exporter; /* the one exporter of them all, 0: none traced, -1: several */
};

/* OP_IPC_EXPORT: a handle made in p, for whoever opens it. 0 or -ENOMEM. */
int ipc__export(struct tracker *t, struct tproc *p, const struct gl_call_rec *r);
/*
 * The allocation an open returns: its bytes (the exporter's allocation) and exporter, when
 * the handle was made by a traced process; false when not known.
 */
bool ipc__exported(const struct tracker *t, const struct gl_call_rec *r, uint64_t *bytes,
		   pid_t *exporter);
/* A new mapping at (space, addr) opened at site. 0 or -ENOMEM. */
int ipc__opened(struct tproc *p, uint8_t space, uint64_t addr, uint32_t site, pid_t exporter,
		uint64_t ts_ns);
/* The same mapping returned by another open: one more reference. False: not a mapping. */
bool ipc__reopened(struct tproc *p, uint8_t space, uint64_t addr);
/*
 * A close (or release) of (space, addr): true when references are left and it stays
 * mapped; false when it was the last one, or no mapping: the allocation goes.
 */
bool ipc__closing(struct tproc *p, uint8_t space, uint64_t addr);
/* The open mapping at (space, addr), or NULL. */
const struct tipc_map *ipc__mapping(const struct tproc *p, uint8_t space, uint64_t addr);
void ipc__site_totals(const struct tproc *p, uint32_t site, struct ipc_totals *out);

/* Multicast objects: OP_MC_BIND, OP_MC_UNBIND. 0 or -ENOMEM. */
int ipc__mc_apply(struct tracker *t, struct tproc *p, const struct cat_api *api,
		  const struct gl_call_rec *r);
/* Whether VMM handle `handle` is bound to a multicast object. */
bool ipc__bound(const struct tproc *p, uint64_t handle);
/*
 * VMM handle `handle` is gone (released, or its last mapping gone): as a multicast object,
 * its bindings end, and the handles released while bound to it go with them.
 */
void ipc__handle_gone(struct tracker *t, struct tproc *p, uint64_t handle);
/* An imported handle's bytes learned from a mapping of it (cuMemMap of size bytes). */
void ipc__mapped_size(struct tracker *t, struct tproc *p, uint64_t handle, uint64_t size);

void ipc__free(struct tproc *p);
void ipc__registry_free(struct tracker *t);

#endif
