/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What owns CUDA memory besides the program (gpu_objects.c): contexts, communicators, VMM maps. */
#ifndef GPULEAK_TRACKER_GPU_OBJECTS_H
#define GPULEAK_TRACKER_GPU_OBJECTS_H

#include "tracker/model.h"
#include "probe/catalog.h"

/* Device, context, VMM mapping and communicator teardown calls. */
int gpu_objects__apply(struct tracker *t, struct tproc *p, const struct cat_api *api,
		       const struct gl_call_rec *r);
/* A communicator made by the call at site. 0 or -ENOMEM. */
int gpu_objects__comm_add(struct tproc *p, uint64_t comm, uint32_t site, uint64_t ts_ns);
/* Whether a VMM handle is mapped somewhere. */
bool gpu_objects__handle_mapped(const struct tproc *p, uint64_t handle);
/*
 * The communicator a communicator call names: its handle, or for a device communicator
 * (ncclDevCommCreate, ncclDevCommDestroy: a struct) the windowTable pointer @24 of the
 * struct copied. 0: none.
 */
uint64_t gpu_objects__comm_handle(const struct gl_call_rec *r);

#endif
