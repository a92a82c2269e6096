/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A target's mappings into probes: read /proc/PID/maps, hand the mappings to the symbolizer
 * and the capture, attach to every object not attached for it yet, put its markers on
 * their objects, and say "tracing pid ..." once a GPU library is in place. Done when a
 * target is taken on, at each of its ld.so rendezvous (or every second without one), after
 * a fork and after an exec.
 */
#ifndef GPULEAK_LIVE_SCAN_H
#define GPULEAK_LIVE_SCAN_H

#include <stdbool.h>

struct live;
struct proc_maps;
struct target;

/* Look at t's mappings and attach to anything new. 0 (also when t is gone) or -errno. */
int scan__target(struct live *l, struct target *t);
/* Whether any object of m has a probe site with these catalog flags, or of this op (-1:
 * any). */
bool scan__has_site(struct live *l, const struct proc_maps *m, unsigned int flags, int op);
/* Whether an ld.so rendezvous probe covers m: its new mappings are then seen at once. */
bool scan__has_rendezvous(struct live *l, const struct proc_maps *m);
/* "gpuleak: tracing pid ...: N probes in M objects". */
void scan__say_tracing(struct live *l, const struct target *t);

#endif
