/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Markers: the functions (or USDT probes: usdt:FILE:PROVIDER:NAME) the options name as step,
 * request-begin/-end and session-end boundaries (--step sym:, usdt:, api:, --request, --end),
 * probed in each target as an entry-only NOTIFY of their own API. FILE is a path (in the target's own root when it runs in a
 * container) or the basename of an object it maps, found once it is mapped; each target
 * remembers which of its markers are in place (target.markers_done), and "marker on ..."
 * is said once for all of them.
 */
#ifndef GPULEAK_LIVE_MARKERS_H
#define GPULEAK_LIVE_MARKERS_H

#include <stdbool.h>
#include <sys/types.h>

struct analysis_opts;
struct attach;
struct markers;
struct modules;
struct proc_maps;
struct target;

int markers__new(const struct analysis_opts *a, struct markers **out);
void markers__free(struct markers *mk);
/* Put t's markers not in place yet on their functions; m: t's mappings, NULL before its
 * exec. Returns how many are still waiting for their object. */
int markers__attach(struct markers *mk, struct attach *att, struct target *t,
		    const struct proc_maps *m);

/*
 * Whether every marker can be placed, before the targets run (a misspelt one must not make a
 * green gate of a run without steps): FILE as a path exists, is ELF and defines SYMBOL; FILE
 * as a name is among the objects the target maps (run mode: exe and the libraries it needs,
 * probe/needed.h, checked before the command is let go; attach mode: pid's mappings m) and
 * defines SYMBOL (a usdt: marker: has an SDT note of PROVIDER:NAME). With wait, a name not mapped yet is said and waited for. 0, or -EINVAL with
 * one line said naming the option, the file, the symbol and the closest names there are.
 */
int markers__check_exec(struct markers *mk, const char *exe, bool wait);
int markers__check_maps(struct markers *mk, struct modules *mods, pid_t pid,
			const struct proc_maps *m, bool wait);

#endif
