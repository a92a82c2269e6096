// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <inttypes.h>
#include <stdlib.h>
#include "engine/query.h"
#include "lib/log.h"
#include "output/interval.h"
#include "output/ndjson.h"
#include "output/prometheus.h"
#include "output/report.h"
#include "output/summary.h"
#include "output/text.h"

void report__interval(struct report *r, uint64_t now_ns)
{
	struct tracker *t = r->t;
	size_t i;

	for (i = 0; i < t->nr_procs; i++) {
		struct interval_view iv;

		if (!interval__shows(t->procs[i], now_ns))
			continue;
		/* Out of memory for the ranking: the table without its top sites. */
		interval__view(t, t->procs[i], &iv);
		interval__table(r, &iv, now_ns);
		if (r->json)
			ndjson__interval(r, &iv, now_ns);
		free(iv.leaks.v);
	}
	fflush(r->out);
	if (r->json)
		fflush(r->json);
}

void report__step(struct report *r, pid_t pid, const struct step_stat *st)
{
	if (r->json)
		ndjson__step(r, pid, st);
}

void report__step_line(struct report *r, pid_t pid, const struct step_stat *st)
{
	interval__step_line(r, pid, st);
	fflush(r->out);
}

/*
 * The user's rules (--rule, --rules; a preset's cover cases a run need not have) that decided
 * nothing: a pattern that names nothing this run saw, a typo or another build's names. Said
 * once, at the end, when the whole run has had its chance to match them.
 */
static void say_unmatched_rules(const struct report *r)
{
	const struct rule *ru;
	size_t it = 0;

	while ((ru = query__unmatched_rule(r->t, &it)))
		pr_warn("%s: rule matched nothing: %s\n", ru->source, ru->text);
}

void report__final(struct report *r, const struct verdict *v, uint64_t now_ns)
{
	size_t i;

	for (i = 0; i < v->nr_procs; i++) {
		const struct proc_verdict *pv = &v->procs[i];

		if (!pv->reported)
			continue;
		text__proc(r, &v->gate, pv, now_ns);
		if (r->json)
			ndjson__verdict(r, v, pv, now_ns);
	}
	if (v->nr_reported >= 2) {
		summary__print(r, v);
		if (r->json)
			ndjson__summary(r, v);
	}
	if (r->t->bad_records)
		fprintf(r->out, "undecodable records skipped: %" PRIu64 "\n", r->t->bad_records);
	say_unmatched_rules(r);
	fflush(r->out);
	if (r->json)
		fflush(r->json);
}

void report__metrics(struct report *r, FILE *out, bool om)
{
	struct verdict *v;

	/* A scrape asks what the verdict would be now: judged afresh, not kept. */
	if (verdict__new(r->t, r->tl, NULL, &v) || prometheus__write(out, r->t, v, om))
		pr_warn("metrics: out of memory\n");
	verdict__free(v);
}
