/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What tracing cost a process, from what the analysis holds of it: the traps counted from
 * its call records, priced at the machine's calibrated cost of each kind, plus the BPF
 * programs' own run time charged to it (GL_REC_COST), against its CPU time over the same
 * span. Every output reads these figures from here, live or replayed.
 */
#ifndef GPULEAK_ENGINE_COST_H
#define GPULEAK_ENGINE_COST_H

#include <stdbool.h>
#include <stdint.h>
#include "tracker/model.h"

struct cost_figures {
	bool measured;		     /* a GL_REC_COST came: the live figures below are known */
	uint64_t traps[GL_TRAP_MAX]; /* from its call records */
	uint64_t traps_total;
	uint32_t per_trap_ns[GL_TRAP_MAX]; /* one trap of each kind, calibrated */
	uint64_t trap_ns;		   /* traps x per_trap_ns */
	uint64_t bpf_ns;		   /* the BPF programs' run time charged to it */
	uint64_t cost_ns;		   /* both */
	uint64_t cpu_ns;		   /* its CPU time while traced */
	double traced_s;		   /* from attach to the latest cost record */
	double traps_per_s;
	double cpu_fraction; /* cost_ns / cpu_ns, at most 1; 0 when not measured */
	double budget;	     /* --max-overhead as a fraction, 0: none */
	uint32_t level;	     /* enum gl_cost_level now */
	uint32_t worst;	     /* the lowest level reached */
};

void cost__figures(const struct tproc *p, struct cost_figures *out);
/* What a level gives up, for people ("Python frames"), and its key ("no_python"). */
const char *cost__level_gives_up(unsigned int level);
const char *cost__level_name(unsigned int level);

#endif
