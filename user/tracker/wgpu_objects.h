/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* WebGPU's refcounted objects (wgpu_objects.c): memory objects, owners, labels, queues. */
#ifndef GPULEAK_TRACKER_WGPU_OBJECTS_H
#define GPULEAK_TRACKER_WGPU_OBJECTS_H

#include "tracker/model.h"
#include "probe/catalog.h"

/* Whether op is one of the refcounted-object and queue operations (inline: every record). */
static inline bool wgpu_objects__is_op(enum cat_op op)
{
	switch (op) {
	case OP_OBJ_CREATE:
	case OP_OBJ_ADDREF:
	case OP_OBJ_RELEASE:
	case OP_OBJ_DESTROY:
	case OP_OWNER_ADDREF:
	case OP_OWNER_RELEASE:
	case OP_OWNER_DESTROY:
	case OP_ERROR_OBJECT:
	case OP_QUEUE_GET:
	case OP_QUEUE_SUBMIT:
	case OP_QUEUE_WATCH:
	case OP_QUEUE_DONE:
	case OP_FUTURE_WATCH:
	case OP_FUTURE_WAIT:
		return true;
	default:
		return false;
	}
}

/* The refcounted-object and queue operations: records of entry-only calls and creations. */
int wgpu_objects__apply(struct tracker *t, struct tproc *p, const struct cat_api *api,
			const struct gl_call_rec *r);
/* A label arrived for an object: its memory moves to the site of its label. */
int wgpu_objects__label(struct tracker *t, struct tproc *p, const struct gl_label_rec *r);
/* A GL_REC_CLASS record: what objects of p whose first word is r->vptr are. */
int wgpu_objects__class(struct tproc *p, const struct gl_class_rec *r);
/* p's objects and queues are gone. */
void wgpu_objects__free(struct tproc *p);

#endif
