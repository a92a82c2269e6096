/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Python processes: which object of a target is its CPython interpreter (the static
 * executable, or a libpython mapped at start or dlopen()ed later, in a container too), and
 * BPF told where its _PyRuntime is and how its version lays out the frames it walks. Each
 * object is read once (probe/py_abi); a process is configured at each scan that finds an
 * interpreter it is not configured for (attach, a rendezvous, a fork, an exec).
 */
#ifndef GPULEAK_LIVE_PYCONF_H
#define GPULEAK_LIVE_PYCONF_H

struct live;
struct proc_maps;
struct pyconf;
struct target;

int pyconf__new(struct pyconf **out);
/* Accepts NULL. */
void pyconf__free(struct pyconf *pc);
/*
 * t's mappings m: when they hold an interpreter t is not configured for, configure it (said
 * on stderr, once per process and interpreter; an interpreter gpuleak cannot walk is said
 * once, with why). Nothing when Python frames are off.
 */
void pyconf__scan(struct live *l, struct target *t, const struct proc_maps *m);

#endif
