/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Markers: the functions the options name as step, request-begin/-end and session-end
 * boundaries (--step sym:, --request, --end), probed in each target as an entry-only
 * NOTIFY of their own API. FILE is a path (in the target's own root when it runs in a
 * container) or the basename of an object it maps, found once it is mapped; each target
 * remembers which of its markers are in place (target.markers_done), and "marker on ..."
 * is said once for all of them.
 */
#ifndef GPULEAK_MARKERS_H
#define GPULEAK_MARKERS_H

struct analysis_opts;
struct attach;
struct markers;
struct proc_maps;
struct target;

int markers__new(const struct analysis_opts *a, struct markers **out);
void markers__free(struct markers *mk);
/* Put t's markers not in place yet on their functions; m: t's mappings, NULL before its
 * exec. Returns how many are still waiting for their object. */
int markers__attach(struct markers *mk, struct attach *att, struct target *t,
		    const struct proc_maps *m);

#endif
