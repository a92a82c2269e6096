// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <inttypes.h>
#include "engine/verdict.h"
#include "lib/term.h"
#include "lib/units.h"
#include "output/describe.h"
#include "output/report_sink.h"
#include "output/summary.h"

static void print_rows(struct report *r, const struct verdict *v)
{
	char b1[32], b2[32], b3[32];
	size_t i;

	fprintf(r->out, "\nacross %zu processes:\n", v->nr_reported);
	fprintf(r->out, "  %7s  %-15s %-8s %10s %10s %12s %7s\n", "PID", "COMM", "STATE", "LIVE",
		"LEAKED", "GROWTH/S", "GROWING");
	for (i = 0; i < v->nr_procs; i++) {
		const struct proc_verdict *pv = &v->procs[i];
		const struct tproc *p = pv->p;

		if (!pv->reported)
			continue;
		fprintf(r->out, "  %7d  %-15s %-8s %10s %10s %10s/s %7zu%s\n", p->pid,
			p->comm[0] ? term_tmp(p->comm) : "?", describe__proc_state(p),
			fmt_bytes(p->live_bytes, b1, sizeof(b1)),
			fmt_bytes(pv->leaked_bytes, b2, sizeof(b2)),
			fmt_bytes((uint64_t)(pv->growth_per_s + 0.5), b3, sizeof(b3)),
			pv->nr_growth, pv->dropped ? "  (approximate)" : "");
	}
	fprintf(r->out, "  %7s  %-15s %-8s %10s %10s\n", "", "total", "",
		fmt_bytes(v->live_bytes, b1, sizeof(b1)),
		fmt_bytes(v->leaked_bytes, b2, sizeof(b2)));
}

static void print_skew(struct report *r, const struct verdict *v)
{
	char b1[32], b2[32];
	size_t i, n = 0;

	for (i = 0; i < v->nr_procs; i++) {
		const struct proc_verdict *pv = &v->procs[i];

		if (!pv->reported || !pv->skewed)
			continue;
		n++;
		fprintf(r->out,
			"rank skew: pid %d (%s) grows %s/s while its %zu peers %s (median %s/s)\n",
			pv->p->pid, term_tmp(pv->p->comm),
			fmt_bytes((uint64_t)(pv->growth_per_s + 0.5), b1, sizeof(b1)), pv->nr_peers,
			pv->peer_median_per_s > 0 ? "grow far less" : "stay flat",
			fmt_bytes((uint64_t)(pv->peer_median_per_s + 0.5), b2, sizeof(b2)));
	}
	if (!n)
		fprintf(r->out, "rank skew: none (no process grows while its peers stay flat)\n");
}

void summary__print(struct report *r, const struct verdict *v)
{
	print_rows(r, v);
	print_skew(r, v);
}
