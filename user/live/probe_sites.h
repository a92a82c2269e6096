/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Where each traced process's probes sat ("slow_probe_sites", "moved_probe_sites"): known
 * only while its probes are attached, kept here as JSON when it is detached (exit, end
 * marker, the session's end), and added to its verdict when the report writes it (--json).
 */
#ifndef GPULEAK_LIVE_PROBE_SITES_H
#define GPULEAK_LIVE_PROBE_SITES_H

#include <stdio.h>
#include <sys/types.h>

struct attach;
struct probe_sites;

int probe_sites__new(struct probe_sites **out);
/* Accepts NULL. */
void probe_sites__free(struct probe_sites *ps);
/* Keep where pid's probes sit now, before they are detached. ps NULL (no --json): nothing. */
void probe_sites__keep(struct probe_sites *ps, const struct attach *att, pid_t pid);
/* report's verdict_more (ctx: the probe_sites): the members kept for pid, the latest (a
 * reused pid is newer). */
void probe_sites__verdict_more(void *ctx, pid_t pid, FILE *json);

#endif
