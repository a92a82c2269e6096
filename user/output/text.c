// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <inttypes.h>
#include "engine/cost.h"
#include "engine/query.h"
#include "lib/term.h"
#include "lib/units.h"
#include "output/describe.h"
#include "output/graph.h"
#include "output/report_sink.h"
#include "output/text.h"
#include "symbols/symbolizer.h"

/* Lower layers of the allocations at site idx: other sites whose owner it is. */
static void print_layers(struct report *r, uint32_t idx)
{
	const struct tracker *t = r->t;
	const struct site *s = &t->sites[idx];
	size_t it = 0;
	uint32_t i;
	char b[32];

	if (s->layer_count)
		fprintf(r->out, "  %10s %6" PRIu64 "    \\_ %s (same memory)\n", "", s->layer_count,
			cat_api_name(s->layer_api));
	while (query__next_layer(t, idx, &it, &i)) {
		const struct site *l = &t->sites[i];

		fprintf(r->out, "  %10s %6" PRIu64 "    \\_ %s%s\n",
			fmt_bytes(l->live_bytes, b, sizeof(b)), l->live_count, cat_api_name(l->api),
			describe__mem(l) == MEM_VA ? " (address space)" : "");
	}
}

/* How a site's mappings left open came to be: opens and closes, and who made the handle. */
static void print_shared_details(struct report *r, uint32_t idx)
{
	struct ipc_totals it;

	query__ipc(r->t, idx, &it);
	if (!it.mappings)
		return;
	fprintf(r->out,
		"  %17s  opened %" PRIu64 " time%s, closed %" PRIu64 " time%s: %" PRIu64
		" reference%s left",
		"", it.opens, it.opens == 1 ? "" : "s", it.closes, it.closes == 1 ? "" : "s",
		it.opens - it.closes, it.opens - it.closes == 1 ? "" : "s");
	if (it.exporter > 0)
		fprintf(r->out, "; exported by pid %d", it.exporter);
	else if (!it.exporter)
		fputs("; exporter unknown", r->out);
	fputc('\n', r->out);
}

/* What lies under a live row: its layers, and the references that keep its objects alive. */
static void print_row_details(struct report *r, uint32_t idx)
{
	struct addrefs ar;
	unsigned int i;

	print_layers(r, idx);
	query__addrefs(r->t, idx, &ar);
	for (i = 0; i < ar.n; i++) {
		const struct site *as = &r->t->sites[ar.site[i]];

		fprintf(r->out, "  %17s  %" PRIu64 " reference%s added by %s at %s, still held\n",
			"", ar.count[i], ar.count[i] == 1 ? "" : "s", cat_api_name(as->api),
			term_tmp(describe__site(r, as)));
	}
}

/* One row of a site table (live, pending or failed). */
static void print_site_row(struct report *r, uint32_t idx, enum verdict_list k, bool labels)
{
	const struct site *s = &r->t->sites[idx];
	const char *ok = describe__owner_kind(s->owner_kind);
	char b[32], dev[16];

	if (k == VERDICT_FAILED) {
		const char *en = cat_error_name(s->api, s->last_err);

		fprintf(r->out, "  %8" PRIu64 "  %-26s %5d  %s%s%s\n", s->failed,
			cat_api_name(s->api), s->last_err, term_tmp(describe__site(r, s)),
			en ? ": " : "", en ? en : "");
		return;
	}
	describe__device(r->t, s, dev, sizeof(dev));
	fprintf(r->out, "  %10s %6" PRIu64 "  %-26s ",
		fmt_bytes(k == VERDICT_PENDING ? s->pending_bytes : s->live_bytes, b, sizeof(b)),
		k == VERDICT_PENDING ? s->pending_count : s->live_count, cat_api_name(s->api));
	if (labels)
		fprintf(r->out, "%-16s %s",
			s->label ? term_tmp(tracker__label(r->t, s->label)) : "-",
			term_tmp(describe__site(r, s)));
	else
		fprintf(r->out, "%4s  %s", dev, term_tmp(describe__site(r, s)));
	if (ok && s->owner_kind != OWNER_LAYER && s->owner_kind != OWNER_DEVICE)
		fprintf(r->out, " [%s 0x%" PRIx64 "]", ok, s->owner);
	if (s->relmapped_count)
		fprintf(r->out, " (%" PRIu64 " released while mapped)", s->relmapped_count);
	if (k == VERDICT_RETAINED && s->cls == CLS_INIT)
		fputs(" (before the first step)", r->out);
	if (s->unsized)
		fprintf(r->out, " (%" PRIu64 " of unknown size%s)", s->unsized,
			GL_API_FAMILY(s->api) == GL_FAM_WEBGPU ? ": texture format" : "");
	if (s->owner_kind == OWNER_GRAPH)
		fputs(" [CUDA graph]", r->out);
	fputc('\n', r->out);
	if (k == VERDICT_LEAKS || k == VERDICT_RETAINED)
		print_row_details(r, idx);
	if (k == VERDICT_SHARED)
		print_shared_details(r, idx);
}

static bool same_device(const struct site *a, const struct site *b)
{
	return a->owner_kind == OWNER_DEVICE && b->owner_kind == OWNER_DEVICE &&
	       a->owner == b->owner;
}

/* The block of the WebGPU device owning l->v[j]'s objects: from j on, where it begins. */
static void print_device_block(struct report *r, const struct site_list *l, size_t j,
			       enum verdict_list k)
{
	const struct tracker *t = r->t;
	const struct site *s = &t->sites[l->v[j]];
	const struct tobj *o = query__owner(t, s);
	uint64_t bytes = 0, count = 0;
	char b[32];
	size_t i;

	for (i = j; i < l->n; i++) {
		const struct site *x = &t->sites[l->v[i]];

		if (!same_device(x, s))
			continue;
		bytes += k == VERDICT_PENDING ? x->pending_bytes : x->live_bytes;
		count += k == VERDICT_PENDING ? x->pending_count : x->live_count;
	}
	fprintf(r->out, "  WebGPU device wgpu#%u", o ? o->ordinal : 0);
	if (o && o->label)
		fprintf(r->out, " \"%s\"", term_tmp(tracker__label(t, o->label)));
	fprintf(r->out, " (0x%" PRIx64 "%s): %s in %" PRIu64 " objects\n", s->owner,
		o && (o->flags & TOBJ_DESTROYED) ? ", destroyed" : "",
		fmt_bytes(bytes, b, sizeof(b)), count);
	fprintf(r->out, "  %10s %6s  %-26s %-16s %s\n", "BYTES", "COUNT", "API", "LABEL", "SITE");
	for (i = j; i < l->n; i++)
		if (same_device(&t->sites[l->v[i]], s))
			print_site_row(r, l->v[i], k, true);
}

/*
 * A site table. Objects a WebGPU device owns come after the rest, one block per device
 * (in the order of its largest site), with their labels: the allocation graph device ->
 * resources.
 */
static void print_sites(struct report *r, const struct proc_verdict *pv, enum verdict_list k,
			const char *title)
{
	const struct site_list *l = &pv->sites[k];
	const struct tracker *t = r->t;
	size_t j, i;

	if (!l->n)
		return;
	fprintf(r->out, "%s\n", title);
	if (k == VERDICT_FAILED)
		fprintf(r->out, "  %8s  %-26s %5s  %s\n", "CALLS", "API", "ERROR", "SITE");
	else
		fprintf(r->out, "  %10s %6s  %-26s %4s  %s\n", "BYTES", "COUNT", "API", "DEV",
			"SITE");
	for (j = 0; j < l->n; j++)
		if (k == VERDICT_FAILED || t->sites[l->v[j]].owner_kind != OWNER_DEVICE)
			print_site_row(r, l->v[j], k, false);
	for (j = 0; k != VERDICT_FAILED && j < l->n; j++) {
		const struct site *s = &t->sites[l->v[j]];
		bool seen = false;

		if (s->owner_kind != OWNER_DEVICE)
			continue;
		for (i = 0; i < j && !seen; i++)
			seen = same_device(&t->sites[l->v[i]], s);
		if (!seen)
			print_device_block(r, l, j, k);
	}
}

static void print_comms(struct report *r, const struct tproc *p)
{
	size_t i;
	char b[32];

	if (!p->nr_comms)
		return;
	fprintf(r->out, "NCCL communicators (memory made while creating them is theirs):\n");
	fprintf(r->out, "  %-18s %-9s %10s %6s %5s  %s\n", "COMM", "STATE", "LIVE", "COUNT", "REGS",
		"CREATED AT");
	for (i = 0; i < p->nr_comms; i++) {
		const struct tcomm *c = &p->comms[i];
		struct comm_totals ct;

		query__comm(r->t, p, c->comm, &ct);
		fprintf(
		    r->out, "  0x%-16" PRIx64 " %-9s %10s %6" PRIu64 " %5" PRIu64 "  %s%s\n",
		    c->comm, c->destroyed ? "destroyed" : "live", fmt_bytes(ct.bytes, b, sizeof(b)),
		    ct.count, ct.regs, term_tmp(describe__site(r, &r->t->sites[c->init_site])),
		    c->destroyed && (ct.count || ct.regs) ? "  <- not returned by destroy" : "");
		if (c->parent)
			fprintf(r->out, "  %18s device communicator of 0x%" PRIx64 "\n", "",
				c->parent);
	}
}

/* Execs of graphs with memory nodes: what each holds, and where it was instantiated. */
static void print_graphs(struct report *r, const struct tproc *p)
{
	const struct tgraphs *gs = p->graphs;
	char b[32];
	size_t i;

	if (!gs || (!gs->nr_x && !gs->execs_destroyed))
		return;
	fprintf(r->out, "CUDA graphs with memory nodes (a launched exec holds the nodes its graph "
			"frees, until destroyed):\n");
	if (gs->nr_x)
		fprintf(r->out, "  %-18s %-18s %-12s %10s %5s %8s  %s\n", "EXEC", "GRAPH", "STATE",
			"HELD", "NODES", "LAUNCHES", "INSTANTIATED AT");
	for (i = 0; i < gs->nr_x; i++) {
		const struct texec *x = &gs->x[i];

		fprintf(r->out,
			"  0x%-16" PRIx64 " 0x%-16" PRIx64 " %-12s %10s %5zu %8" PRIu64 "  %s\n",
			x->handle, x->graph, x->mapped ? "launched" : "instantiated",
			fmt_bytes(x->held_bytes, b, sizeof(b)), x->nr_nodes, x->launches,
			x->site < r->t->nr_sites ? describe__site(r, &r->t->sites[x->site]) : "?");
	}
	if (gs->execs_destroyed)
		fprintf(r->out, "  execs destroyed: %" PRIu64 "\n", gs->execs_destroyed);
}

/*
 * Pools the program made or configured, and others while they hold something: a default
 * pool that held freed memory only until a sync is in the NDJSON (reserve_peak_bytes), not
 * worth a table here.
 */
static void print_pools(struct report *r, const struct proc_verdict *pv)
{
	char b1[32], b2[32], b3[32], h[24];
	bool any = false;
	size_t i;

	for (i = 0; i < pv->nr_pools; i++) {
		const struct tpool *pl = pv->pools[i];

		if ((pl->kind != POOL_CREATED && !pl->threshold_set && !pl->in_use && !pl->reserve))
			continue;
		if (!any)
			fprintf(
			    r->out,
			    "memory pools (memory freed into a pool stays in its reserve, up to "
			    "its release threshold):\n  %-18s %-8s %4s %10s %6s %10s %10s  %s\n",
			    "POOL", "KIND", "DEV", "IN USE", "COUNT", "RESERVE", "THRESHOLD",
			    "CREATED AT");
		any = true;
		if (pl->handle)
			snprintf(h, sizeof(h), "0x%" PRIx64, pl->handle);
		else
			snprintf(h, sizeof(h), "%s", describe__pool_kind(pl->kind));
		if (pl->kind == POOL_GRAPH)
			snprintf(b3, sizeof(b3), "trim");
		else if (pl->threshold == UINT64_MAX)
			snprintf(b3, sizeof(b3), "max");
		else
			fmt_bytes(pl->threshold, b3, sizeof(b3));
		fprintf(r->out, "  %-18s %-8s %4d %10s %6" PRIu64 " %10s %10s  %s%s\n", h,
			describe__pool_kind(pl->kind), pl->device,
			fmt_bytes(pl->in_use, b1, sizeof(b1)), pl->in_use_count,
			fmt_bytes(pl->reserve, b2, sizeof(b2)), b3,
			pl->site < r->t->nr_sites ? describe__site(r, &r->t->sites[pl->site]) : "-",
			pl->destroyed ? "  (destroyed)" : "");
	}
}

static void print_violations(struct report *r, const struct tproc *p)
{
	char b[32];
	size_t i;

	/* Without rules there are no violations to name. */
	if (!p->nr_viols || !query__rule(r->t, 0))
		return;
	fprintf(r->out, "rule violations:\n");
	for (i = 0; i < p->nr_viols; i++) {
		const struct violation *v = &p->viols[i];
		const struct rule *ru = query__rule(r->t, v->rule);

		fprintf(r->out, "  %-28s %10s %5" PRIu64 "  %s  [%s: %s]\n",
			describe__violation(v->kind), fmt_bytes(v->bytes, b, sizeof(b)), v->count,
			term_tmp(describe__violation_site(r, v)), term_tmp(ru->source),
			term_tmp(ru->text));
	}
}

static void fmt_duration(double s, char *buf, size_t len)
{
	if (s < 120)
		snprintf(buf, len, "%.0f s", s);
	else if (s < 7200)
		snprintf(buf, len, "%.0f min", s / 60);
	else if (s < 172800)
		snprintf(buf, len, "%.1f h", s / 3600);
	else
		snprintf(buf, len, "%.1f days", s / 86400);
}

static void print_projection(struct report *r, const struct projection *pr)
{
	char b1[32], b2[32], b3[32], d[32];

	if (!pr->known) {
		fprintf(r->out, "time to OOM: device size unknown (no NVML reading): pass "
				"--device-mem SIZE\n");
		return;
	}
	fmt_duration(pr->seconds_to_oom, d, sizeof(d));
	if (pr->webgpu)
		fprintf(r->out, "WebGPU device wgpu#%d", pr->device + 1);
	else
		fprintf(r->out, "device %d", pr->device);
	fprintf(r->out, ": %s of %s in use", fmt_bytes(pr->used, b1, sizeof(b1)),
		fmt_bytes(pr->capacity, b2, sizeof(b2)));
	if (pr->baseline)
		fprintf(r->out, " (%s held before tracing, unattributed)",
			fmt_bytes(pr->baseline, b3, sizeof(b3)));
	if (pr->reserve)
		fprintf(r->out, " (%s in pool reserves)", fmt_bytes(pr->reserve, b3, sizeof(b3)));
	fprintf(r->out, "; OOM in ~%.0f steps (~%s)\n", pr->steps_to_oom, d);
}

/* Stacks a growth row shows: the largest, each with its share of the slope. */
#define GROWTH_STACK_LINES 3

/* Under a growth row: how its memory ended at shutdown, and the stacks that grew. */
static void print_growth_end(struct report *r, const struct proc_verdict *pv, size_t i)
{
	const struct growth_end *ge = &pv->growth_end[i];
	const struct site *s = &r->t->sites[pv->growth[i].site];
	size_t k, shown = 0;
	char buf[512], b[32];

	if (ge->released_count && describe__growth_end(r, pv, i, buf, sizeof(buf)))
		fprintf(r->out, "      %s\n", buf);
	for (k = 0; k < ge->nr_stacks; k++) {
		const struct site_stack *ss = &r->t->sstacks[ge->stacks[k].sstack];

		if (!symbolizer__stack(r->sym, s->pid, ss->stack_id, s->caller))
			continue;
		if (shown == GROWTH_STACK_LINES) {
			fprintf(r->out, "      (%zu more stacks: --json, --folded-growth)\n",
				ge->nr_stacks - k);
			break;
		}
		fputs("      from ", r->out);
		graph__print_path(r->out, r->t, r->sym, ge->stacks[k].sstack);
		/* a share of the row's slope only when the row has more than one */
		if (ge->nr_stacks > 1)
			fprintf(r->out, ": %s/st",
				fmt_bytes((uint64_t)(ge->stacks[k].per_step + 0.5), b, sizeof(b)));
		fputc('\n', r->out);
		shown++;
	}
}

static void print_growth(struct report *r, const struct proc_verdict *pv)
{
	const struct growth *g = pv->growth;
	char b1[32], b2[32], b3[32];
	size_t i;

	fprintf(r->out, "steps: %zu (%s)", pv->nr_steps, describe__step_source(r->tl));
	if (timeline__opts(r->tl)->requests)
		fprintf(r->out, ", %" PRIu64 " requests", timeline__nr_requests(r->tl, pv->p));
	if (!pv->nr_growth) {
		fprintf(r->out, "; no site grows step over step\n");
		return;
	}
	fprintf(r->out, "\ngrowing sites (live bytes rise step after step):\n");
	fprintf(r->out, "  %12s %12s %6s %6s %10s  %s\n", "PER STEP", "PER SECOND", "R2", "FROM",
		"NOW", "SITE");
	for (i = 0; i < pv->nr_growth; i++) {
		const struct site *s = &r->t->sites[g[i].site];

		fprintf(r->out, "  %10s/st %10s/s %6.3f %6" PRId64 " %10s  %s (%s)",
			fmt_bytes((uint64_t)(g[i].slope_per_step + 0.5), b1, sizeof(b1)),
			fmt_bytes((uint64_t)(g[i].slope_per_s + 0.5), b2, sizeof(b2)), g[i].r2,
			g[i].first_step, fmt_bytes(g[i].end_bytes, b3, sizeof(b3)),
			term_tmp(describe__site(r, s)), cat_api_name(s->api));
		if (g[i].per_request > 0)
			fprintf(r->out, ", %s per request",
				fmt_bytes((uint64_t)(g[i].per_request + 0.5), b1, sizeof(b1)));
		fputc('\n', r->out);
		if (pv->growth_end)
			print_growth_end(r, pv, i);
	}
	print_projection(r, &pv->proj);
}

/* The shutdown, when it released most of what was live when it began. */
static void print_shutdown(struct report *r, const struct proc_verdict *pv)
{
	const struct shutdown *sd = &pv->shutdown;
	char b1[32], b2[32];
	size_t k;

	if (!sd->on || !sd->released_count || sd->released_bytes < sd->live_bytes / 2)
		return;
	fprintf(r->out,
		"shutdown (after the last allocation, step %" PRId64 " at %.2f s): released %s of "
		"%s in %" PRIu64 " allocations:",
		sd->step, report__secs(r, sd->ts_ns), fmt_bytes(sd->released_bytes, b1, sizeof(b1)),
		fmt_bytes(sd->live_bytes, b2, sizeof(b2)), sd->released_count);
	for (k = 0; k < sd->nr_by; k++)
		fprintf(r->out,
			sd->by[k].how == RELEASE_OWNER ? "%s %s released by %s"
						       : "%s %s freed (%s)",
			k ? "," : "", fmt_bytes(sd->by[k].bytes, b1, sizeof(b1)),
			cat_api_name(sd->by[k].api));
	fputc('\n', r->out);
}

/* Each device's peak whose memory is mostly gone at the end: what the end no longer shows. */
static void print_peaks(struct report *r, const struct proc_verdict *pv)
{
	bool title = false;
	char b1[32], b2[32];
	size_t i, j;

	for (i = 0; i < pv->nr_peaks; i++) {
		const struct peak_view *pw = &pv->peaks[i];

		if (!pw->mostly_gone)
			continue;
		if (!title)
			fprintf(r->out, "peak (the live set when most was live; less than half of "
					"it is live at the end):\n");
		title = true;
		if (pw->webgpu)
			fprintf(r->out, "  WebGPU device wgpu#%u", pw->webgpu);
		else if (pw->device >= 0)
			fprintf(r->out, "  device %d", pw->device);
		else
			fprintf(r->out, "  host");
		fprintf(r->out,
			": %s in %" PRIu64 " allocations at %.2f s, step %" PRId64 "; %s live at "
			"the end\n",
			fmt_bytes(pw->bytes, b1, sizeof(b1)), pw->count, report__secs(r, pw->ts_ns),
			pw->step, fmt_bytes(pw->live_bytes, b2, sizeof(b2)));
		fprintf(r->out, "  %10s %6s  %-26s %s\n", "BYTES", "COUNT", "API", "SITE");
		for (j = 0; j < pw->nr_sites && (int)j < r->top; j++) {
			const struct site *s = &r->t->sites[pw->sites[j].site];

			fprintf(r->out, "  %10s %6" PRIu64 "  %-26s %s",
				fmt_bytes(pw->sites[j].bytes, b1, sizeof(b1)), pw->sites[j].count,
				cat_api_name(s->api), term_tmp(describe__site(r, s)));
			if (s->label)
				fprintf(r->out, " \"%s\"",
					term_tmp(tracker__label(r->t, s->label)));
			fputc('\n', r->out);
		}
		if (pw->nr_sites > (size_t)r->top)
			fprintf(r->out, "  (%zu more sites: --json has them all)\n",
				pw->nr_sites - (size_t)r->top);
	}
}

/* Every limit the process exceeds, when the gate is on. */
static void print_gate(struct report *r, const struct gate *gate, const struct proc_verdict *pv)
{
	char b1[32], b2[32];
	size_t i;

	for (i = 0; gate->on && i < pv->nr_gate; i++) {
		const struct gate_violation *gv = &pv->gate[i];
		const struct violation *v = gv->rule;

		switch (gv->kind) {
		case GATE_GROWTH:
			fprintf(r->out, "GATE: %s grows %s per step (limit %s)\n",
				term_tmp(describe__site(r, &r->t->sites[gv->growth->site])),
				fmt_bytes((uint64_t)gv->growth->slope_per_step, b1, sizeof(b1)),
				fmt_bytes(gv->limit, b2, sizeof(b2)));
			break;
		case GATE_LIVE_AT_EXIT:
			fprintf(r->out, "GATE: %s leaked at exit (limit %s)\n",
				fmt_bytes(pv->leaked_bytes, b1, sizeof(b1)),
				fmt_bytes(gv->limit, b2, sizeof(b2)));
			break;
		case GATE_HELD:
			fprintf(r->out,
				"GATE: %s in %" PRIu64 " buffers of its allocator cache never "
				"released by the program (limit %s)\n",
				fmt_bytes(pv->cache.held_bytes, b1, sizeof(b1)),
				pv->cache.held_count, fmt_bytes(gv->limit, b2, sizeof(b2)));
			break;
		case GATE_SHARED: {
			const struct site *s = &r->t->sites[gv->site];

			fprintf(r->out, "GATE: %" PRIu64 " %s left open at %s\n", s->live_count,
				describe__live_kind(s), describe__site(r, s));
			break;
		}
		case GATE_RULE:
			/* Which rule, where: a CI log must say what to fix without the verdict. */
			fprintf(r->out, "GATE: rule violation: %s, %s at %s [%s: %s]\n",
				describe__violation(v->kind), fmt_bytes(v->bytes, b1, sizeof(b1)),
				term_tmp(describe__violation_site(r, v)),
				term_tmp(query__rule(r->t, v->rule)->source),
				term_tmp(query__rule(r->t, v->rule)->text));
			break;
		}
	}
}

/* "LOST (results approximate): ..." and by how much: the line every lossy verdict ends with. */
static void print_uncertainty(struct report *r, const struct proc_verdict *pv)
{
	const struct uncertainty *u = &pv->uncertainty;
	const struct tproc *p = pv->p;
	char b1[32], b2[32], b3[32];
	int k;

	/* Memory is exact; what some allocations lack is their Python frames. */
	if (p->loss[GL_STAT_PY_LOST] || p->loss[GL_STAT_PY_WALK_FAIL])
		fprintf(r->out,
			"Python frames: %" PRIu64 " allocations named by native frames alone (no "
			"room in the ring buffer), %" PRIu64 " reads of Python state failed\n",
			p->loss[GL_STAT_PY_LOST], p->loss[GL_STAT_PY_WALK_FAIL]);
	if (!pv->uncertainty_known || !u->approximate)
		return;
	fprintf(r->out, "LOST (results approximate):");
	for (k = 0; k < GL_STAT_MAX; k++)
		if (describe__loss(k) && p->loss[k] &&
		    (k < GL_STAT_LOST_ALLOCS || k > GL_STAT_LOST_FREES) && k != GL_STAT_PY_LOST &&
		    k != GL_STAT_PY_WALK_FAIL)
			fprintf(r->out, " %s=%" PRIu64, describe__loss(k), p->loss[k]);
	fputc('\n', r->out);
	if (!u->allocs_missed && !u->frees_missed)
		return;
	fprintf(r->out,
		"  missed: %" PRIu64 " allocations (%s%s), %" PRIu64 " frees; live bytes "
		"are between %s and ",
		u->allocs_missed, fmt_bytes(u->alloc_bytes_missed, b1, sizeof(b1)),
		u->allocs_missed_unsized ? " and some of unknown size" : "", u->frees_missed,
		fmt_bytes(p->live_bytes - u->live_overstated_max, b2, sizeof(b2)));
	if (u->under_known)
		fprintf(r->out, "%s\n",
			fmt_bytes(p->live_bytes + u->live_understated_max, b3, sizeof(b3)));
	else
		fprintf(r->out, "an unknown amount above %s\n",
			fmt_bytes(p->live_bytes, b3, sizeof(b3)));
}

/* Who the process is, how it ended, and what it holds. */
static void print_header(struct report *r, const struct tproc *p, uint64_t now_ns)
{
	uint64_t end = p->exited || p->detached ? p->last_ts_ns : now_ns;
	char b1[32], b2[32];

	fprintf(r->out, "\npid %d (%s", p->pid, p->comm[0] ? term_tmp(p->comm) : "?");
	if (p->ppid)
		fprintf(r->out, ", child of %d", p->ppid);
	if (p->ns_pid)
		fprintf(r->out, ", pid %u in its namespace", p->ns_pid);
	fprintf(r->out, "): %s",
		p->ended ? "session ended at its end marker" : describe__proc_state(p));
	if (p->exited && p->exit_status >= 0)
		fprintf(r->out, " with status %d", p->exit_status);
	fprintf(r->out,
		" after %.2f s traced; %" PRIu64 " allocations (%s), %" PRIu64 " frees, %" PRIu64
		" failed calls\n",
		end > p->first_ts_ns && p->first_ts_ns ? (double)(end - p->first_ts_ns) / 1e9 : 0,
		p->c.allocs, fmt_bytes(p->c.alloc_bytes, b1, sizeof(b1)), p->c.frees,
		p->c.failed_calls);
	fprintf(r->out, "still live: %s in %" PRIu64 " allocations",
		fmt_bytes(p->live_bytes, b1, sizeof(b1)), p->live_count);
	if (p->pending_count)
		fprintf(r->out, "; pending async free: %s in %" PRIu64,
			fmt_bytes(p->pending_bytes, b2, sizeof(b2)), p->pending_count);
	fputc('\n', r->out);
	if (p->persistent_count || p->ignored_count)
		fprintf(r->out,
			"of which persistent by rule: %s in %" PRIu64
			"; ignored by rule: %s in %" PRIu64 "\n",
			fmt_bytes(p->persistent_bytes, b1, sizeof(b1)), p->persistent_count,
			fmt_bytes(p->ignored_bytes, b2, sizeof(b2)), p->ignored_count);
}

/*
 * PyTorch's caching allocator: the four buckets per device, as torch.cuda.memory_stats names
 * them, then what the reserve did over the steps.
 */
static void print_torch(struct report *r, const struct proc_verdict *pv)
{
	const struct torch_verdict *tv = &pv->torch;
	const struct tblocks *b = pv->p->blocks;
	char b1[32], b2[32], b3[32], b4[32];
	size_t i;

	if (!tv->on)
		return;
	fprintf(r->out,
		"PyTorch caching allocator (%s): %" PRIu64 " blocks allocated, %" PRIu64
		" freed into its cache\n",
		tv->source == TBLOCKS_HOOK ? "c10::reportMemoryUsageToProfiler"
					   : "USDT pytorch:malloc/free",
		b->allocs, b->frees);
	fprintf(r->out, "  %4s  %10s %7s  %10s %8s  %10s  %15s\n", "DEV", "ALLOCATED", "BLOCKS",
		"RESERVED", "SEGMENTS", "CACHED", "OUTSIDE PYTORCH");
	for (i = 0; i < tv->nr_dev; i++) {
		const struct torch_device *d = &tv->dev[i];

		fprintf(r->out, "  %4d  %10s %7" PRIu64 "  %10s %8" PRIu64 "  %10s  %15s\n",
			d->device, fmt_bytes(d->allocated, b1, sizeof(b1)), d->allocated_count,
			fmt_bytes(d->reserved, b2, sizeof(b2)), d->segments,
			fmt_bytes(d->cached, b3, sizeof(b3)),
			fmt_bytes(d->outside, b4, sizeof(b4)));
	}
	if (b->unknown_frees || b->released_with_segment || b->other_source)
		fprintf(r->out,
			"  blocks freed that were allocated before attach: %" PRIu64
			"; released with their segment: %" PRIu64
			"; reported twice (ignored): %" PRIu64 "\n",
			b->unknown_frees, b->released_with_segment, b->other_source);
	if (tv->cache.found)
		fprintf(r->out,
			"reserved grew %s over %" PRId64 " steps (%" PRId64 " to %" PRId64
			") with allocated flat (%s to %s): cache, not a leak; "
			"torch.cuda.empty_cache() returns it\n",
			fmt_bytes(tv->cache.reserved_to - tv->cache.reserved_from, b1, sizeof(b1)),
			tv->cache.last_step - tv->cache.first_step, tv->cache.first_step,
			tv->cache.last_step, fmt_bytes(tv->cache.allocated_from, b2, sizeof(b2)),
			fmt_bytes(tv->cache.allocated_to, b3, sizeof(b3)));
}

/*
 * A caching allocator a cache rule names, split at the program's end: what its releases gave
 * back (its cache), what it never released (the leak) and in buffers of which sizes, and the
 * growth its cache explains.
 */
static void print_cache(struct report *r, const struct proc_verdict *pv)
{
	const struct cache_verdict *c = &pv->cache;
	const struct rule *ru;
	char b1[32], b2[32];
	size_t i;

	if (!c->on)
		return;
	ru = query__rule(r->t, c->rule - 1);
	if (!c->judged) {
		fprintf(r->out,
			"allocator cache (%s): the program's end was not seen; growth judged on "
			"the steps alone\n",
			term_tmp(ru->text));
		return;
	}
	fprintf(r->out,
		"allocator cache (%s): %s in %" PRIu64 " buffers given back by the program at its "
		"end (its cache and working memory); ",
		term_tmp(ru->text), fmt_bytes(c->freed_bytes, b1, sizeof(b1)), c->freed_count);
	if (!c->held_count)
		fputs("none held to the end", r->out);
	else
		fprintf(r->out,
			"%s in %" PRIu64 " never released by it (gone with its device at exit, or "
			"live at the end)",
			fmt_bytes(c->held_bytes, b2, sizeof(b2)), c->held_count);
	for (i = 0; i < c->nr_sizes; i++)
		fprintf(r->out, "%s%" PRIu64 " x %s", i ? ", " : ": ", c->sizes[i].count,
			fmt_bytes(c->sizes[i].size, b1, sizeof(b1)));
	if (c->other_sizes)
		fprintf(r->out, ", %" PRIu64 " of other sizes", c->other_sizes);
	fputc('\n', r->out);
	for (i = 0; i < c->nr_warm; i++)
		fprintf(r->out,
			"  %s grew %s per step to %s on the steps, all of it given back by the "
			"program: the cache warming up, a unit of work's memory; no leak\n",
			term_tmp(describe__site(r, &r->t->sites[c->warm[i].site])),
			fmt_bytes((uint64_t)(c->warm[i].slope_per_step + 0.5), b1, sizeof(b1)),
			fmt_bytes(c->warm[i].end_bytes, b2, sizeof(b2)));
}

/* Frees that matched nothing, or something unexpected: they explain odd numbers. */
static void print_odd_frees(struct report *r, const struct tproc *p)
{
	if (p->c.unknown_frees || p->c.double_frees || p->c.addr_reuse || p->c.async_reuse)
		fprintf(r->out,
			"frees of untracked pointers (allocated before attach): %" PRIu64
			"; double frees: %" PRIu64 "; live address returned again: %" PRIu64
			"; pending free's block reused by its stream (legal): %" PRIu64 "\n",
			p->c.unknown_frees, p->c.double_frees, p->c.addr_reuse, p->c.async_reuse);
}

/*
 * Calls recorded without their stack: the graph names them by call site alone. A walk that
 * stopped short is no loss (the stack keeps what it found, and the graph says where it
 * stopped); what is lost is a stack the maps had no room for (stack_fail: the kernel's
 * bpf_get_stackid found both full) or whose hash bucket held another stack in both maps
 * (stack_collision). Larger maps answer both.
 */
static void print_stacks_lost(struct report *r, const struct tproc *p)
{
	uint64_t fail = p->loss[GL_STAT_STACK_FAIL], coll = p->loss[GL_STAT_STACK_COLLISION];

	if (!fail && !coll)
		return;
	fprintf(r->out,
		"stacks lost: %" PRIu64 " allocation calls recorded without their stack, named by "
		"call site alone (",
		fail + coll);
	if (fail)
		fprintf(r->out, "stack_fail=%" PRIu64 ": no room left in the stack maps%s", fail,
			coll ? "; " : "");
	if (coll)
		fprintf(r->out,
			"stack_collision=%" PRIu64 ": their hash buckets held other stacks in both "
			"maps",
			coll);
	fprintf(r->out, "): --stack-entries makes the maps larger\n");
}

/* What tracing cost it, when gpuleak measured it live (engine/cost.h), and the budget's
 * levels: which parts ran when. */
static void print_overhead(struct report *r, const struct tproc *p)
{
	struct cost_figures c;
	unsigned int k;

	cost__figures(p, &c);
	if (!c.measured)
		return;
	fprintf(r->out,
		"tracing cost ~ %.1f %% of pid %d's CPU: %" PRIu64 " traps (%.0f/s) x %.1f us "
		"+ BPF %.1f ms, of %.2f s CPU in %.1f s\n",
		100 * c.cpu_fraction, p->pid, c.traps_total, c.traps_per_s,
		c.traps_total ? (double)c.trap_ns / (double)c.traps_total / 1e3 : 0.0,
		(double)c.bpf_ns / 1e6, (double)c.cpu_ns / 1e9, c.traced_s);
	if (!c.budget)
		return;
	fprintf(r->out, "  --max-overhead %.1f %%: ", 100 * c.budget);
	for (k = 0; k < GL_LEVEL_MAX; k++) {
		uint64_t first = p->cost.level_first_ns[k];

		if (!first)
			continue;
		fprintf(r->out, "%s%s%s%s%s from %.1f s for %.1f s at %.1f %%", k ? "; " : "",
			cost__level_name(k), k ? " (" : "", k ? cost__level_gives_up(k) : "",
			k ? " given up)" : "",
			first > p->cost.since_ns ? (double)(first - p->cost.since_ns) / 1e9 : 0.0,
			(double)p->cost.level_ns[k] / 1e9,
			p->cost.level_cpu_ns[k] ? 100.0 * (double)p->cost.level_cost_ns[k] /
						      (double)p->cost.level_cpu_ns[k]
						: 0.0);
	}
	fprintf(r->out, "; at the end: %s\n", cost__level_name(c.level));
}

void text__proc(struct report *r, const struct gate *gate, const struct proc_verdict *pv,
		uint64_t now_ns)
{
	const struct tproc *p = pv->p;
	char b[32];

	print_header(r, p, now_ns);
	if (pv->pool_reserve)
		fprintf(r->out, "held besides: %s in pool reserves (freed, not given back)\n",
			fmt_bytes(pv->pool_reserve, b, sizeof(b)));
	print_torch(r, pv);
	print_sites(r, pv, VERDICT_LEAKS, "live allocations by site, largest first:");
	if (p->init_count)
		fprintf(r->out,
			"of which made before the first step: %s in %" PRIu64
			" (retained by init)\n",
			fmt_bytes(p->init_bytes, b, sizeof(b)), p->init_count);
	print_sites(r, pv, VERDICT_RETAINED,
		    "retained at session end (persistent by rule, or made before the first "
		    "step: not leaks):");
	graph__print(r->out, r->t, r->sym, p);
	print_violations(r, p);
	if (r->tl)
		print_growth(r, pv);
	print_cache(r, pv);
	print_shutdown(r, pv);
	print_peaks(r, pv);
	print_sites(r, pv, VERDICT_PENDING, "async frees still pending (stream not synchronized):");
	print_sites(r, pv, VERDICT_VA, "virtual address ranges reserved and never freed:");
	print_sites(r, pv, VERDICT_REG, "registrations never deregistered:");
	print_sites(r, pv, VERDICT_SHARED,
		    "IPC mappings and shared handles left open (another process's memory, not "
		    "counted here):");
	print_sites(r, pv, VERDICT_GRAPH,
		    "held by CUDA graphs (memory nodes of launched execs: the graph pool's, not "
		    "leaks):");
	print_graphs(r, p);
	print_pools(r, pv);
	print_comms(r, p);
	print_sites(r, pv, VERDICT_FAILED, "failed calls:");
	print_odd_frees(r, p);
	print_gate(r, gate, pv);
	print_stacks_lost(r, p);
	print_uncertainty(r, pv);
	print_overhead(r, p);
}
