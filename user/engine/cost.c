// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tracing's cost per process, as figures (cost.h). The CPU time is sampled by gpuleak from
 * /proc, so a process that used less CPU than its traps are priced at (a short run between
 * two ticks of utime) is said to have spent it all on tracing: the fraction is capped at 1.
 */
#include <string.h>
#include "engine/cost.h"

void cost__figures(const struct tproc *p, struct cost_figures *out)
{
	const struct gl_cost_rec *c = &p->cost;
	unsigned int k;

	memset(out, 0, sizeof(*out));
	for (k = 0; k < GL_TRAP_MAX; k++) {
		out->traps[k] = p->traps[k];
		out->traps_total += p->traps[k];
	}
	out->measured = c->hdr.size != 0;
	if (!out->measured) {
		if (p->last_ts_ns > p->first_ts_ns)
			out->traced_s = (double)(p->last_ts_ns - p->first_ts_ns) / 1e9;
		if (out->traced_s > 0)
			out->traps_per_s = (double)out->traps_total / out->traced_s;
		return;
	}
	for (k = 0; k < GL_TRAP_MAX; k++) {
		out->per_trap_ns[k] = c->trap_ns[k];
		out->trap_ns += p->traps[k] * c->trap_ns[k];
	}
	out->bpf_ns = c->bpf_ns;
	out->cost_ns = out->trap_ns + out->bpf_ns;
	out->cpu_ns = c->cpu_ns;
	if (c->hdr.ts_ns > c->since_ns)
		out->traced_s = (double)(c->hdr.ts_ns - c->since_ns) / 1e9;
	if (out->traced_s > 0)
		out->traps_per_s = (double)out->traps_total / out->traced_s;
	if (out->cpu_ns)
		out->cpu_fraction = (double)out->cost_ns / (double)out->cpu_ns;
	else if (out->cost_ns)
		out->cpu_fraction = 1;
	if (out->cpu_fraction > 1)
		out->cpu_fraction = 1;
	out->budget = (double)c->budget_ppm / 1e6;
	out->level = c->level < GL_LEVEL_MAX ? c->level : GL_LEVEL_SITES_ONLY;
	for (k = 0; k < GL_LEVEL_MAX; k++)
		if (c->level_first_ns[k] || c->level_ns[k])
			out->worst = k;
	if (out->level > out->worst)
		out->worst = out->level;
}

const char *cost__level_gives_up(unsigned int level)
{
	static const char *const what[GL_LEVEL_MAX] = {
	    [GL_LEVEL_FULL] = "nothing",
	    [GL_LEVEL_NO_PYTHON] = "Python frames",
	    [GL_LEVEL_NO_DWARF] = "DWARF stack copies",
	    [GL_LEVEL_SITES_ONLY] = "native stacks",
	};

	return level < GL_LEVEL_MAX ? what[level] : "?";
}

const char *cost__level_name(unsigned int level)
{
	static const char *const name[GL_LEVEL_MAX] = {
	    [GL_LEVEL_FULL] = "full",
	    [GL_LEVEL_NO_PYTHON] = "no_python",
	    [GL_LEVEL_NO_DWARF] = "no_dwarf",
	    [GL_LEVEL_SITES_ONLY] = "sites_only",
	};

	return level < GL_LEVEL_MAX ? name[level] : "?";
}
