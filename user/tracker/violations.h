/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Rule violations of a process (violations.c), recorded as they happen. */
#ifndef GPULEAK_TRACKER_VIOLATIONS_H
#define GPULEAK_TRACKER_VIOLATIONS_H

#include "tracker/model.h"

/* A violation of rule (an index) at site, now (ts_ns, the process's step). 0 or -ENOMEM. */
int violations__add(struct tproc *p, enum violation_kind kind, uint16_t rule, uint32_t site,
		    uint64_t bytes, uint64_t count, uint64_t ts_ns);
/*
 * Allocation a has just joined the class of its site's rule: a `once` class now holding
 * two, or one over its max=, is a violation. 0 or -ENOMEM.
 */
int violations__check_class(struct tracker *t, struct tproc *p, const struct alloc *a,
			    uint64_t ts_ns);
/* Session end: classes of release=session-end rules still live. */
void violations__not_released(struct tracker *t, struct tproc *p, uint64_t ts_ns);

#endif
