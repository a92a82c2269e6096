// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <inttypes.h>
#include "engine/cost.h"
#include "engine/query.h"
#include "lib/json.h"
#include "output/describe.h"
#include "output/interval.h"
#include "output/ndjson.h"
#include "output/report_sink.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"

/* A JSON string, or null for NULL. */
static void json_str_or_null(FILE *f, const char *s)
{
	if (s)
		json_str(f, s);
	else
		fputs("null", f);
}

/* ---- interval and step records ---- */

void ndjson__interval(struct report *r, const struct interval_view *iv, uint64_t now_ns)
{
	const struct tproc *p = iv->p;
	size_t j;

	fprintf(r->json,
		"{\"type\":\"interval\",\"t_s\":%.3f,\"pid\":%d,\"live_bytes\":%" PRIu64
		",\"live_count\":%" PRIu64 ",\"pending_bytes\":%" PRIu64 ",\"allocs\":%" PRIu64
		",\"frees\":%" PRIu64 ",\"failed_calls\":%" PRIu64 ",\"by_api\":[",
		report__secs(r, now_ns), p->pid, p->live_bytes, p->live_count, p->pending_bytes,
		p->c.allocs, p->c.frees, p->c.failed_calls);
	for (j = 0; j < iv->nr_rows; j++)
		fprintf(r->json,
			"%s{\"api\":\"%s\",\"device\":%d,\"bytes\":%" PRIu64 ",\"count\":%" PRIu64
			"}",
			j ? "," : "", cat_api_name(iv->rows[j].api), iv->rows[j].device,
			iv->rows[j].bytes, iv->rows[j].count);
	fputs("],\"top_sites\":[", r->json);
	for (j = 0; j < iv->leaks.n && (int)j < r->top; j++) {
		const struct site *s = &r->t->sites[iv->leaks.v[j]];

		fprintf(r->json, "%s{\"api\":\"%s\",\"site\":", j ? "," : "", cat_api_name(s->api));
		json_str(r->json, describe__site(r, s));
		fprintf(r->json, ",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 "}", s->live_bytes,
			s->live_count);
	}
	fputs("]}\n", r->json);
}

/* A signed difference of two byte counts. */
static void json_net(FILE *f, uint64_t allocated, uint64_t freed)
{
	if (allocated >= freed)
		fprintf(f, ",\"net_bytes\":%" PRIu64, allocated - freed);
	else
		fprintf(f, ",\"net_bytes\":-%" PRIu64, freed - allocated);
}

/* A step's memory sites: those that changed most by name, the others summed. */
static void json_step_sites(struct report *r, const struct step_site_summary *ss)
{
	size_t i;

	fputs(",\"sites\":[", r->json);
	for (i = 0; i < ss->n; i++) {
		const struct step_site_stat *v = &ss->top[i];
		const struct site *s = &r->t->sites[v->site];

		fprintf(r->json, "%s{\"api\":\"%s\",\"site\":", i ? "," : "", cat_api_name(s->api));
		json_str(r->json, describe__site(r, s));
		fputs(",\"label\":", r->json);
		json_str_or_null(r->json, s->label ? tracker__label(r->t, s->label) : NULL);
		fprintf(r->json,
			",\"class\":\"%s\",\"live_bytes\":%" PRIu64 ",\"allocated_bytes\":%" PRIu64
			",\"freed_bytes\":%" PRIu64,
			describe__site_class(s), v->live, v->allocated, v->freed);
		/* A caching allocator's segments: memory, judged by their blocks instead. */
		if (!s->judged)
			fputs(",\"pool\":true", r->json);
		json_net(r->json, v->allocated, v->freed);
		fputc('}', r->json);
	}
	fprintf(r->json,
		"],\"other_sites\":{\"count\":%" PRIu64 ",\"allocated_bytes\":%" PRIu64
		",\"freed_bytes\":%" PRIu64,
		ss->rest, ss->rest_allocated, ss->rest_freed);
	json_net(r->json, ss->rest_allocated, ss->rest_freed);
	fputc('}', r->json);
}

void ndjson__step(struct report *r, pid_t pid, const struct step_stat *st)
{
	fprintf(r->json,
		"{\"type\":\"step\",\"pid\":%d,\"step\":%" PRId64 ",\"t_s\":%.3f,\"dt_s\":%.3f"
		",\"live_bytes\":%" PRIu64 ",\"persistent_bytes\":%" PRIu64
		",\"pending_bytes\":%" PRIu64 ",\"suspect_bytes\":%" PRIu64
		",\"allocated_bytes\":%" PRIu64 ",\"freed_bytes\":%" PRIu64 ",\"allocs\":%" PRIu64
		",\"frees\":%" PRIu64 ",\"requests\":%" PRIu64 ",\"requests_in_flight\":%" PRIu64,
		pid, st->step, report__secs(r, st->t_end_ns),
		(double)(st->t_end_ns - st->t_start_ns) / 1e9, st->live, st->persistent,
		st->pending, st->suspect, st->allocated, st->freed, st->allocs, st->frees,
		st->requests, st->inflight);
	if (st->torch)
		fprintf(r->json,
			",\"torch_allocated_bytes\":%" PRIu64 ",\"torch_reserved_bytes\":%" PRIu64,
			st->torch_allocated, st->torch_reserved);
	if (st->sites)
		json_step_sites(r, st->sites);
	fputs("}\n", r->json);
}

/* ---- the verdict record: its sites ---- */

static void json_owner(struct report *r, const struct site *s)
{
	const char *ok = describe__owner_kind(s->owner_kind);
	const struct tobj *o;

	if (!ok || s->owner_kind == OWNER_LAYER) {
		fputs(",\"owner\":null", r->json);
		return;
	}
	fprintf(r->json, ",\"owner\":{\"kind\":\"%s\",\"handle\":\"0x%" PRIx64 "\"", ok, s->owner);
	if (s->owner_kind == OWNER_DEVICE) {
		o = query__owner(r->t, s);
		fprintf(r->json, ",\"name\":\"wgpu#%u\",\"label\":", o ? o->ordinal : 0);
		json_str_or_null(r->json, o && o->label ? tracker__label(r->t, o->label) : NULL);
	}
	fputc('}', r->json);
}

static void json_layers(struct report *r, uint32_t idx)
{
	const struct tracker *t = r->t;
	const struct site *s = &t->sites[idx];
	bool first = true;
	size_t it = 0;
	uint32_t i;

	fputs(",\"layers\":[", r->json);
	if (s->layer_count) {
		fprintf(r->json, "{\"api\":\"%s\",\"same_memory\":true,\"count\":%" PRIu64 "}",
			cat_api_name(s->layer_api), s->layer_count);
		first = false;
	}
	while (query__next_layer(t, idx, &it, &i)) {
		const struct site *l = &t->sites[i];

		fprintf(
		    r->json,
		    "%s{\"api\":\"%s\",\"same_memory\":false,\"memory\":\"%s\",\"bytes\":%" PRIu64
		    ",\"count\":%" PRIu64 "}",
		    first ? "" : ",", cat_api_name(l->api), cat_mem_name(describe__mem(l)),
		    l->live_bytes, l->live_count);
		first = false;
	}
	fputc(']', r->json);
}

static void json_growth_fields(FILE *f, const struct growth *g)
{
	if (!g) {
		fputs(",\"slope_bytes_per_step\":null,\"slope_bytes_per_s\":null,\"r2\":null,"
		      "\"first_step\":null",
		      f);
		return;
	}
	fprintf(f,
		",\"slope_bytes_per_step\":%.1f,\"slope_bytes_per_s\":%.1f,\"r2\":%.4f,"
		"\"first_step\":%" PRId64 ",\"growth_steps\":%" PRId64,
		g->slope_per_step, g->slope_per_s, g->r2, g->first_step, g->growth_steps);
	if (g->per_request > 0)
		fprintf(f, ",\"bytes_per_request\":%.1f", g->per_request);
}

/* One frame of a stack: its name, and function and object when known. */
static void json_frame(struct report *r, pid_t pid, uint64_t addr)
{
	const struct sym_info *si = symbolizer__info(r->sym, pid, addr);

	fputs("{\"name\":", r->json);
	json_str(r->json, symbolizer__name(r->sym, pid, addr));
	fputs(",\"function\":", r->json);
	json_str_or_null(r->json, si ? si->func : NULL);
	fputs(",\"module\":", r->json);
	json_str_or_null(r->json, si ? si->module : NULL);
	if (si && si->python) {
		fputs(",\"file\":", r->json);
		json_str_or_null(r->json, si->file);
		fprintf(r->json, ",\"line\":%d,\"python\":true", si->line);
	}
	fputc('}', r->json);
}

static uint64_t sstack_bytes(const struct site_stack *ss, enum verdict_list k)
{
	return k == VERDICT_PENDING ? ss->pending_bytes : ss->live_bytes;
}

static uint64_t sstack_count(const struct site_stack *ss, enum verdict_list k)
{
	return k == VERDICT_PENDING ? ss->pending_count : ss->live_count;
}

/*
 * One stack with the bytes and allocations it holds at the moment its list is of, and for a
 * growth leak its share of the slope (per_step; negative: none).
 */
static void json_stack(struct report *r, const struct site *s, const struct site_stack *ss,
		       uint64_t bytes, uint64_t count, double per_step, bool first)
{
	const struct ustack *st = symbolizer__stack(r->sym, s->pid, ss->stack_id, s->caller);
	uint32_t j;

	fprintf(r->json, "%s{\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 ",\"frames\":[",
		first ? "" : ",", bytes, count);
	for (j = 0; j < st->nr; j++) {
		if (j)
			fputc(',', r->json);
		json_frame(r, s->pid, st->frames[j]);
	}
	fprintf(r->json, "],\"truncated\":%s,\"without_frame_pointers\":",
		st->flags & STACK_TRUNCATED ? "true" : "false");
	if (st->flags & STACK_NO_FP)
		fprintf(r->json, "{\"from_frame\":%u}", st->nofp_from);
	else
		fputs("null", r->json);
	if (symbolizer__js_flags(r->sym, s->pid, ss->stack_id, s->caller) & STACK_JS_ASYNC)
		fputs(",\"called_from_callback\":true", r->json);
	if (per_step >= 0)
		fprintf(r->json, ",\"bytes_per_step\":%.1f", per_step);
	fputc('}', r->json);
}

/*
 * The user stacks the site's allocations (live, or pending for the pending list) came from,
 * largest first, each innermost frame (the call site) first: how the program got to the
 * site. Empty without stacks and for failed calls.
 */
static void json_stacks(struct report *r, uint32_t idx, enum verdict_list k)
{
	const struct tracker *t = r->t;
	const struct site *s = &t->sites[idx];
	uint32_t v[64], i, n = 0, j;

	fputs(",\"stacks\":[", r->json);
	for (i = s->sstacks; k != VERDICT_FAILED && i != UINT32_MAX && n < 64;
	     i = t->sstacks[i].next) {
		const struct site_stack *ss = &t->sstacks[i];

		if (!sstack_count(ss, k) ||
		    !symbolizer__stack(r->sym, s->pid, ss->stack_id, s->caller))
			continue;
		/* insertion sort: a site has a handful of stacks */
		for (j = n; j && sstack_bytes(&t->sstacks[v[j - 1]], k) < sstack_bytes(ss, k); j--)
			v[j] = v[j - 1];
		v[j] = i;
		n++;
	}
	for (i = 0; i < n; i++)
		json_stack(r, s, &t->sstacks[v[i]], sstack_bytes(&t->sstacks[v[i]], k),
			   sstack_count(&t->sstacks[v[i]], k), -1, !i);
	fputc(']', r->json);
}

/* Stacks of a verdict's list (a growth leak's, a peak's), in its order; those without one
 * (--stack-depth 0) left out, as for the site lists. */
static void json_stack_list(struct report *r, const struct site *s, const struct stack_bytes *v,
			    size_t n, bool per_step)
{
	bool first = true;
	size_t i;

	fputs(",\"stacks\":[", r->json);
	for (i = 0; i < n; i++) {
		const struct site_stack *ss = &r->t->sstacks[v[i].sstack];

		if (!symbolizer__stack(r->sym, s->pid, ss->stack_id, s->caller))
			continue;
		json_stack(r, s, ss, v[i].bytes, v[i].count, per_step ? v[i].per_step : -1, first);
		first = false;
	}
	fputc(']', r->json);
}

static void json_addrefs(struct report *r, uint32_t idx)
{
	struct addrefs ar;
	unsigned int i;

	query__addrefs(r->t, idx, &ar);
	fputs(",\"addref_sites\":[", r->json);
	for (i = 0; i < ar.n; i++) {
		const struct site *as = &r->t->sites[ar.site[i]];

		fprintf(r->json, "%s{\"api\":\"%s\",\"site\":", i ? "," : "",
			cat_api_name(as->api));
		json_str(r->json, describe__site(r, as));
		fprintf(r->json, ",\"count\":%" PRIu64 "}", ar.count[i]);
	}
	fputc(']', r->json);
}

static void json_failure(struct report *r, const struct site *s)
{
	fprintf(r->json, ",\"error\":%d,\"error_name\":", s->last_err);
	json_str_or_null(r->json, cat_error_name(s->api, s->last_err));
	fprintf(r->json, ",\"count\":%" PRIu64 "}", s->failed);
}

/* A shared entry's opens and closes (ipc.h), and the process that made its handles. */
static void json_shared_fields(struct report *r, uint32_t idx)
{
	struct ipc_totals it;

	query__ipc(r->t, idx, &it);
	fprintf(r->json,
		",\"opens\":%" PRIu64 ",\"closes\":%" PRIu64 ",\"references\":%" PRIu64
		",\"exporter_pid\":",
		it.opens, it.closes, it.opens - it.closes);
	if (it.exporter > 0)
		fprintf(r->json, "%d", it.exporter);
	else
		fputs("null", r->json);
}

/* One entry of a site list: kind is what of the site's memory it is ("live", ...), or NULL. */
static void json_site(struct report *r, const struct proc_verdict *pv, uint32_t idx,
		      enum verdict_list k, const char *kind, uint64_t bytes, uint64_t count,
		      bool first)
{
	const struct site *s = &r->t->sites[idx];

	fprintf(r->json, "%s{\"api\":\"%s\",\"site\":", first ? "" : ",", cat_api_name(s->api));
	json_str(r->json, describe__site(r, s));
	fprintf(r->json, ",\"module\":");
	json_str_or_null(r->json, s->frame    ? symbolizer__module(r->sym, s->pid, s->frame)
				  : s->caller ? symbolizer__module(r->sym, s->pid, s->caller)
					      : NULL);
	if (k == VERDICT_FAILED) {
		json_failure(r, s);
		return;
	}
	fprintf(r->json, ",\"device\":%d,\"memory\":\"%s\"", s->device,
		cat_mem_name(describe__mem(s)));
	if (kind)
		fprintf(r->json, ",\"kind\":\"%s\"", kind);
	if (s->rule && query__rule(r->t, s->rule - 1)) {
		fputs(",\"rule\":", r->json);
		json_str(r->json, query__rule(r->t, s->rule - 1)->text);
	}
	if (k == VERDICT_RETAINED)
		fprintf(r->json, ",\"retained_by\":\"%s\"", s->cls == CLS_INIT ? "init" : "rule");
	json_owner(r, s);
	fputs(",\"label\":", r->json);
	json_str_or_null(r->json, s->label ? tracker__label(r->t, s->label) : NULL);
	fprintf(r->json, ",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 ",\"unsized\":%" PRIu64, bytes,
		count, s->unsized);
	if (k == VERDICT_LEAKS) {
		json_growth_fields(r->json, verdict__growth_at(pv, idx));
		json_addrefs(r, idx);
	}
	if (k == VERDICT_LEAKS || k == VERDICT_RETAINED || k == VERDICT_IGNORED)
		json_layers(r, idx);
	if (k == VERDICT_SHARED)
		json_shared_fields(r, idx);
	json_stacks(r, idx, k);
	fputc('}', r->json);
}

/*
 * A live site's entries: its memory, and apart from it VMM handles released while still
 * mapped, a leak of their own kind. Whether it wrote one after first.
 */
static bool json_live_site(struct report *r, const struct proc_verdict *pv, uint32_t idx,
			   enum verdict_list k, bool first)
{
	const struct site *s = &r->t->sites[idx];

	if (s->live_count > s->relmapped_count) {
		json_site(r, pv, idx, k, describe__live_kind(s), s->live_bytes - s->relmapped_bytes,
			  s->live_count - s->relmapped_count, first);
		first = false;
	}
	if (s->relmapped_count) {
		json_site(r, pv, idx, k, "released_while_mapped", s->relmapped_bytes,
			  s->relmapped_count, first);
		first = false;
	}
	return first;
}

static void json_site_array(struct report *r, const struct proc_verdict *pv, enum verdict_list k,
			    const char *name)
{
	const struct site_list *l = &pv->sites[k];
	bool first = true;
	size_t j;

	fprintf(r->json, ",\"%s\":[", name);
	for (j = 0; j < l->n; j++) {
		const struct site *s = &r->t->sites[l->v[j]];

		switch (k) {
		case VERDICT_LEAKS:
		case VERDICT_RETAINED:
		case VERDICT_IGNORED:
		case VERDICT_SHARED:
		case VERDICT_GRAPH:
			first = json_live_site(r, pv, l->v[j], k, first);
			break;
		case VERDICT_PENDING:
			json_site(r, pv, l->v[j], k, NULL, s->pending_bytes, s->pending_count,
				  first);
			first = false;
			break;
		default:
			json_site(r, pv, l->v[j], k, NULL, s->live_bytes, s->live_count, first);
			first = false;
			break;
		}
	}
	fputc(']', r->json);
}

/* Execs of graphs with memory nodes, when there are any (graphs.h). */
static void json_graphs(struct report *r, const struct tproc *p)
{
	const struct tgraphs *gs = p->graphs;
	size_t i;

	if (!gs || (!gs->nr_x && !gs->execs_destroyed))
		return;
	fputs(",\"graphs\":[", r->json);
	for (i = 0; i < gs->nr_x; i++) {
		const struct texec *x = &gs->x[i];
		const struct site *s = x->site < r->t->nr_sites ? &r->t->sites[x->site] : NULL;

		fprintf(r->json,
			"%s{\"exec\":\"0x%" PRIx64 "\",\"graph\":\"0x%" PRIx64
			"\",\"state\":\"%s\",\"held_bytes\":%" PRIu64 ",\"held_count\":%" PRIu64
			",\"nodes\":%zu,\"launches\":%" PRIu64 ",\"flags\":%" PRIu64 ",\"api\":",
			i ? "," : "", x->handle, x->graph, x->mapped ? "launched" : "instantiated",
			x->held_bytes, x->held_count, x->nr_nodes, x->launches, x->flags);
		json_str_or_null(r->json, s ? cat_api_name(s->api) : NULL);
		fputs(",\"site\":", r->json);
		json_str_or_null(r->json, s ? describe__site(r, s) : NULL);
		fputc('}', r->json);
	}
	fprintf(r->json, "],\"graph_execs_destroyed\":%" PRIu64, gs->execs_destroyed);
}

/* Pools that hold something, or that the program made or configured (pools.h). */
static void json_pools(struct report *r, const struct proc_verdict *pv)
{
	bool first = true;
	size_t i;

	for (i = 0; i < pv->nr_pools; i++) {
		const struct tpool *pl = pv->pools[i];
		const struct site *s = pl->site < r->t->nr_sites ? &r->t->sites[pl->site] : NULL;

		fputs(first ? ",\"pools\":[{\"handle\":" : ",{\"handle\":", r->json);
		first = false;
		if (pl->handle)
			fprintf(r->json, "\"0x%" PRIx64 "\"", pl->handle);
		else
			fputs("null", r->json);
		fprintf(r->json,
			",\"kind\":\"%s\",\"device\":%d,\"state\":\"%s\",\"in_use_bytes\":%" PRIu64
			",\"in_use_count\":%" PRIu64 ",\"reserve_bytes\":%" PRIu64
			",\"reserve_peak_bytes\":%" PRIu64 ",\"release_threshold\":",
			describe__pool_kind(pl->kind), pl->device,
			pl->destroyed ? "destroyed" : "live", pl->in_use, pl->in_use_count,
			pl->reserve, pl->reserve_peak);
		if (pl->kind == POOL_GRAPH)
			fputs("null", r->json);
		else
			fprintf(r->json, "%" PRIu64, pl->threshold);
		fputs(",\"site\":", r->json);
		json_str_or_null(r->json, s ? describe__site(r, s) : NULL);
		fputc('}', r->json);
	}
	if (!first)
		fputc(']', r->json);
	if (pv->pool_reserve)
		fprintf(r->json, ",\"pool_reserve_bytes\":%" PRIu64, pv->pool_reserve);
}

/* Lists of the kinds of memory a process may not have at all: present when not empty. */
static void json_optional_lists(struct report *r, const struct proc_verdict *pv)
{
	if (pv->sites[VERDICT_SHARED].n)
		json_site_array(r, pv, VERDICT_SHARED, "shared");
	if (pv->sites[VERDICT_GRAPH].n)
		json_site_array(r, pv, VERDICT_GRAPH, "graph_memory");
	json_graphs(r, pv->p);
	json_pools(r, pv);
}

static void json_comms(struct report *r, const struct tproc *p)
{
	size_t i;

	fputs(",\"communicators\":[", r->json);
	for (i = 0; i < p->nr_comms; i++) {
		const struct tcomm *c = &p->comms[i];
		struct comm_totals ct;

		query__comm(r->t, p, c->comm, &ct);
		fprintf(r->json,
			"%s{\"handle\":\"0x%" PRIx64 "\",\"state\":\"%s\",\"api\":\"%s\","
			"\"site\":",
			i ? "," : "", c->comm, c->destroyed ? "destroyed" : "live",
			cat_api_name(r->t->sites[c->init_site].api));
		json_str(r->json, describe__site(r, &r->t->sites[c->init_site]));
		fprintf(r->json,
			",\"live_bytes\":%" PRIu64 ",\"live_count\":%" PRIu64
			",\"registrations\":%" PRIu64,
			ct.bytes, ct.count, ct.regs);
		/* A device communicator (ncclDevCommCreate): the communicator it was made on. */
		if (c->parent)
			fprintf(r->json, ",\"parent\":\"0x%" PRIx64 "\"", c->parent);
		fputc('}', r->json);
	}
	fputc(']', r->json);
}

/* ---- the verdict record: rules, growth, the gate, losses ---- */

/* What a violation is of: its rule, where, how much. In the verdict's list and the gate's. */
static void json_violation_fields(struct report *r, const struct violation *v)
{
	const struct tracker *t = r->t;
	const struct rule *ru = query__rule(t, v->rule);
	const struct site *s = v->site < t->nr_sites ? &t->sites[v->site] : NULL;

	fputs("\"rule\":", r->json);
	json_str(r->json, ru->text);
	fputs(",\"source\":", r->json);
	json_str(r->json, ru->source);
	fprintf(r->json, ",\"api\":\"%s\",\"site\":", s ? cat_api_name(s->api) : "?");
	json_str(r->json, describe__violation_site(r, v));
	fprintf(r->json, ",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64, v->bytes, v->count);
}

static void json_violations(struct report *r, const struct tproc *p)
{
	size_t i;

	fputs(",\"violations\":[", r->json);
	for (i = 0; query__rule(r->t, 0) && i < p->nr_viols; i++) {
		const struct violation *v = &p->viols[i];

		fprintf(r->json, "%s{\"kind\":\"%s\",", i ? "," : "", describe__violation(v->kind));
		json_violation_fields(r, v);
		fprintf(r->json, ",\"step\":%" PRId64 ",\"t_s\":%.3f}", v->step,
			report__secs(r, v->ts_ns));
	}
	fputc(']', r->json);
}

/* Ways memory went at shutdown: [{"how":"owner","api":"cudaDeviceReset",...}]. */
static void json_releases(struct report *r, const struct shutdown_release *by, size_t n)
{
	size_t i;

	fputs("[", r->json);
	for (i = 0; i < n; i++)
		fprintf(r->json,
			"%s{\"how\":\"%s\",\"api\":\"%s\",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64
			"}",
			i ? "," : "", describe__release_how(by[i].how), cat_api_name(by[i].api),
			by[i].bytes, by[i].count);
	fputc(']', r->json);
}

/* How a growth leak's memory ended (live at the end, what its shutdown released) and who
 * holds it: its stacks where its steps end. */
static void json_growth_end(struct report *r, const struct proc_verdict *pv, size_t i)
{
	const struct growth_end *ge = &pv->growth_end[i];
	char buf[512];
	const char *ended = describe__growth_end(r, pv, i, buf, sizeof(buf));

	fprintf(r->json,
		",\"live_bytes\":%" PRIu64 ",\"live_count\":%" PRIu64 ",\"ended\":", ge->live_bytes,
		ge->live_count);
	json_str_or_null(r->json, ended);
	if (pv->shutdown.on) {
		fprintf(r->json,
			",\"shutdown\":{\"released_bytes\":%" PRIu64 ",\"released_count\":%" PRIu64
			",\"by\":",
			ge->released_bytes, ge->released_count);
		json_releases(r, ge->by, ge->nr_by);
		fputc('}', r->json);
	} else {
		fputs(",\"shutdown\":null", r->json);
	}
	json_stack_list(r, &r->t->sites[pv->growth[i].site], ge->stacks, ge->nr_stacks, true);
}

/* The process's shutdown: where it began and what went in it, or null. */
static void json_shutdown(struct report *r, const struct proc_verdict *pv)
{
	const struct shutdown *sd = &pv->shutdown;

	if (!sd->on) {
		fputs(",\"shutdown\":null", r->json);
		return;
	}
	fprintf(r->json,
		",\"shutdown\":{\"step\":%" PRId64 ",\"t_s\":%.3f,\"live_bytes\":%" PRIu64
		",\"live_count\":%" PRIu64 ",\"released_bytes\":%" PRIu64
		",\"released_count\":%" PRIu64 ",\"by\":",
		sd->step, report__secs(r, sd->ts_ns), sd->live_bytes, sd->live_count,
		sd->released_bytes, sd->released_count);
	json_releases(r, sd->by, sd->nr_by);
	fputc('}', r->json);
}

/* The live set at each device's peak, by site and stack. */
static void json_peaks(struct report *r, const struct proc_verdict *pv)
{
	size_t i, j;

	fputs(",\"peak\":[", r->json);
	for (i = 0; i < pv->nr_peaks; i++) {
		const struct peak_view *pw = &pv->peaks[i];

		fprintf(r->json, "%s{\"device\":%d,\"webgpu\":", i ? "," : "", pw->device);
		if (pw->webgpu)
			fprintf(r->json, "\"wgpu#%u\"", pw->webgpu);
		else
			fputs("null", r->json);
		fprintf(r->json,
			",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64
			",\"t_s\":%.3f,\"step\":%" PRId64 ",\"live_bytes\":%" PRIu64 ",\"sites\":[",
			pw->bytes, pw->count, report__secs(r, pw->ts_ns), pw->step, pw->live_bytes);
		for (j = 0; j < pw->nr_sites; j++) {
			const struct peak_site *ps = &pw->sites[j];
			const struct site *s = &r->t->sites[ps->site];

			fprintf(r->json, "%s{\"api\":\"%s\",\"site\":", j ? "," : "",
				cat_api_name(s->api));
			json_str(r->json, describe__site(r, s));
			fputs(",\"module\":", r->json);
			json_str_or_null(r->json,
					 s->caller ? symbolizer__module(r->sym, s->pid, s->caller)
						   : NULL);
			fprintf(r->json, ",\"memory\":\"%s\",\"class\":\"%s\"",
				cat_mem_name(describe__mem(s)), describe__site_class(s));
			json_owner(r, s);
			fputs(",\"label\":", r->json);
			json_str_or_null(r->json, s->label ? tracker__label(r->t, s->label) : NULL);
			fprintf(r->json, ",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64, ps->bytes,
				ps->count);
			json_stack_list(r, s, ps->stacks, ps->nr_stacks, false);
			fputc('}', r->json);
		}
		fputs("]}", r->json);
	}
	fputc(']', r->json);
}

static void json_growth(struct report *r, const struct proc_verdict *pv)
{
	const struct projection *pr = &pv->proj;
	size_t i;

	fprintf(r->json,
		",\"steps\":%zu,\"step_source\":\"%s\",\"requests\":%" PRIu64 ",\"growth\":[",
		pv->nr_steps, describe__step_source(r->tl), timeline__nr_requests(r->tl, pv->p));
	for (i = 0; i < pv->nr_growth; i++) {
		const struct growth *g = &pv->growth[i];
		const struct site *s = &r->t->sites[g->site];

		fprintf(r->json, "%s{\"api\":\"%s\",\"site\":", i ? "," : "", cat_api_name(s->api));
		json_str(r->json, describe__site(r, s));
		fprintf(r->json, ",\"device\":%d,\"bytes\":%" PRIu64, s->device, g->end_bytes);
		json_growth_fields(r->json, g);
		json_growth_end(r, pv, i);
		fputc('}', r->json);
	}
	fputc(']', r->json);
	json_shutdown(r, pv);
	json_peaks(r, pv);
	if (!pr->known) {
		fputs(",\"projected_oom_steps\":null,\"projection\":null", r->json);
		return;
	}
	fprintf(r->json,
		",\"projected_oom_steps\":%.0f,\"projection\":{\"device\":%d,"
		"\"capacity_bytes\":%" PRIu64 ",\"used_bytes\":%" PRIu64
		",\"baseline_bytes\":%" PRIu64 ",\"growth_bytes_per_step\":%.1f"
		",\"steps_to_oom\":%.1f,\"seconds_to_oom\":%.1f",
		pr->steps_to_oom, pr->device, pr->capacity, pr->used, pr->baseline,
		pr->rate_per_step, pr->steps_to_oom, pr->seconds_to_oom);
	if (pr->reserve)
		fprintf(r->json, ",\"reserve_bytes\":%" PRIu64, pr->reserve);
	fputc('}', r->json);
}

static void json_gate_violation(struct report *r, const struct proc_verdict *pv,
				const struct gate_violation *gv)
{
	switch (gv->kind) {
	case GATE_GROWTH:
		fputs("{\"kind\":\"growth\",\"site\":", r->json);
		json_str(r->json, describe__site(r, &r->t->sites[gv->growth->site]));
		fprintf(r->json, ",\"bytes_per_step\":%.1f,\"limit\":%" PRIu64 "}",
			gv->growth->slope_per_step, gv->limit);
		break;
	case GATE_LIVE_AT_EXIT:
		fprintf(r->json,
			"{\"kind\":\"live_at_exit\",\"bytes\":%" PRIu64 ",\"limit\":%" PRIu64 "}",
			pv->leaked_bytes, gv->limit);
		break;
	case GATE_HELD:
		fprintf(r->json,
			"{\"kind\":\"held\",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64
			",\"limit\":%" PRIu64 "}",
			pv->cache.held_bytes, pv->cache.held_count, gv->limit);
		break;
	case GATE_SHARED: {
		const struct site *s = &r->t->sites[gv->site];

		fprintf(r->json, "{\"kind\":\"shared\",\"what\":\"%s\",\"api\":\"%s\",\"site\":",
			describe__live_kind(s), cat_api_name(s->api));
		json_str(r->json, describe__site(r, s));
		fprintf(r->json, ",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 "}", s->live_bytes,
			s->live_count);
		break;
	}
	case GATE_RULE:
		fprintf(r->json, "{\"kind\":\"rule\",\"violation\":\"%s\",",
			describe__violation(gv->rule->kind));
		json_violation_fields(r, gv->rule);
		fputc('}', r->json);
		break;
	}
}

/* The gate: "failed" says whether the process exceeds it, enabled or not. */
static void json_gate(struct report *r, const struct gate *gate, const struct proc_verdict *pv)
{
	size_t i;

	fprintf(r->json, ",\"gate\":{\"enabled\":%s,\"failed\":%s,\"violations\":[",
		gate->on ? "true" : "false", pv->nr_gate ? "true" : "false");
	for (i = 0; i < pv->nr_gate; i++) {
		if (i)
			fputc(',', r->json);
		json_gate_violation(r, pv, &pv->gate[i]);
	}
	fputs("]}", r->json);
}

/* The error bounds of a verdict: how far live bytes may be from the truth. */
static void json_uncertainty(struct report *r, const struct proc_verdict *pv)
{
	const struct uncertainty *u = &pv->uncertainty;
	const struct tproc *p = pv->p;

	if (!pv->uncertainty_known) {
		fputs(",\"approximate\":true,\"uncertainty\":null", r->json);
		return;
	}
	fprintf(r->json,
		",\"approximate\":%s,\"uncertainty\":{\"records_lost\":%" PRIu64
		",\"allocs_missed\":%" PRIu64 ",\"alloc_bytes_missed\":%" PRIu64
		",\"allocs_missed_unsized\":%" PRIu64 ",\"frees_missed\":%" PRIu64
		",\"live_bytes_min\":%" PRIu64 ",\"live_bytes_max\":",
		u->approximate ? "true" : "false", p->loss[GL_STAT_RB_FULL], u->allocs_missed,
		u->alloc_bytes_missed, u->allocs_missed_unsized, u->frees_missed,
		p->live_bytes - u->live_overstated_max);
	if (u->under_known)
		fprintf(r->json, "%" PRIu64, p->live_bytes + u->live_understated_max);
	else
		fputs("null", r->json);
	fputc('}', r->json);
}

/* Who the process is, how it ended, and its counters. */
static void json_process(struct report *r, const struct proc_verdict *pv, uint64_t now_ns)
{
	const struct tproc *p = pv->p;
	uint64_t end = p->exited || p->detached ? p->last_ts_ns : now_ns;
	int k;

	fprintf(r->json,
		"{\"type\":\"verdict\",\"pid\":%d,\"ppid\":%d,\"ns_pid\":%u,\"comm\":", p->pid,
		p->ppid, p->ns_pid);
	json_str(r->json, p->comm);
	fprintf(
	    r->json,
	    ",\"state\":\"%s\",\"exit_status\":%d,\"duration_s\":%.3f,\"live_bytes\":%" PRIu64
	    ",\"live_count\":%" PRIu64 ",\"pending_bytes\":%" PRIu64 ",\"pending_count\":%" PRIu64
	    ",\"allocs\":%" PRIu64 ",\"alloc_bytes\":%" PRIu64 ",\"frees\":%" PRIu64
	    ",\"failed_calls\":%" PRIu64 ",\"unknown_frees\":%" PRIu64 ",\"null_frees\":%" PRIu64
	    ",\"double_frees\":%" PRIu64 ",\"addr_reuse\":%" PRIu64 ",\"async_reuse\":%" PRIu64
	    ",\"persistent_bytes\":%" PRIu64 ",\"persistent_count\":%" PRIu64
	    ",\"ignored_bytes\":%" PRIu64 ",\"ignored_count\":%" PRIu64 ",\"init_bytes\":%" PRIu64
	    ",\"init_count\":%" PRIu64 ",\"layers\":%" PRIu64 ",\"released_by_owner\":%" PRIu64
	    ",\"error_objects\":%" PRIu64 ",\"unknown_refs\":%" PRIu64
	    ",\"unmatched_done\":%" PRIu64 ",\"calls\":%" PRIu64 ",\"dropped_events\":%" PRIu64
	    ",\"losses\":{",
	    describe__proc_state(p), p->exited ? p->exit_status : -1,
	    end > p->first_ts_ns && p->first_ts_ns ? (double)(end - p->first_ts_ns) / 1e9 : 0.0,
	    p->live_bytes, p->live_count, p->pending_bytes, p->pending_count, p->c.allocs,
	    p->c.alloc_bytes, p->c.frees, p->c.failed_calls, p->c.unknown_frees, p->c.null_frees,
	    p->c.double_frees, p->c.addr_reuse, p->c.async_reuse, p->persistent_bytes,
	    p->persistent_count, p->ignored_bytes, p->ignored_count, p->init_bytes, p->init_count,
	    p->c.layers, p->c.released_by_owner, p->c.error_objects, p->c.unknown_refs,
	    p->c.unmatched_done, p->c.calls, pv->dropped);
	for (k = 0; k < GL_STAT_MAX; k++)
		if (describe__loss(k))
			fprintf(r->json, "%s\"%s\":%" PRIu64, k ? "," : "", describe__loss(k),
				p->loss[k]);
	fputc('}', r->json);
}

/* PyTorch's caching allocator: its four buckets per device, null without one. */
static void json_torch(struct report *r, const struct proc_verdict *pv)
{
	const struct torch_verdict *tv = &pv->torch;
	const struct torch_cache_growth *c = &tv->cache;
	const struct tblocks *b = pv->p->blocks;
	size_t i;

	if (!tv->on) {
		fputs(",\"pytorch\":null", r->json);
		return;
	}
	fprintf(r->json, ",\"pytorch\":{\"source\":\"%s\",\"devices\":[",
		tv->source == TBLOCKS_HOOK ? "profiler_hook" : "usdt");
	for (i = 0; i < tv->nr_dev; i++) {
		const struct torch_device *d = &tv->dev[i];

		fprintf(r->json,
			"%s{\"device\":%d,\"allocated_bytes\":%" PRIu64
			",\"allocated_count\":%" PRIu64 ",\"reserved_bytes\":%" PRIu64
			",\"segments\":%" PRIu64 ",\"cached_bytes\":%" PRIu64
			",\"outside_bytes\":%" PRIu64 "}",
			i ? "," : "", d->device, d->allocated, d->allocated_count, d->reserved,
			d->segments, d->cached, d->outside);
	}
	fprintf(r->json,
		"],\"allocated_bytes\":%" PRIu64 ",\"reserved_bytes\":%" PRIu64
		",\"cached_bytes\":%" PRIu64 ",\"outside_bytes\":%" PRIu64
		",\"peak_allocated_bytes\":%" PRIu64 ",\"peak_reserved_bytes\":%" PRIu64
		",\"blocks_allocated\":%" PRIu64 ",\"blocks_allocated_bytes\":%" PRIu64
		",\"blocks_freed\":%" PRIu64 ",\"unknown_frees\":%" PRIu64
		",\"released_with_segment\":%" PRIu64 ",\"other_source_records\":%" PRIu64
		",\"cache_growth\":",
		tv->allocated, tv->reserved, tv->cached, tv->outside, b->peak_allocated,
		b->peak_reserved, b->allocs, b->alloc_bytes, b->frees, b->unknown_frees,
		b->released_with_segment, b->other_source);
	if (c->found)
		fprintf(r->json,
			"{\"first_step\":%" PRId64 ",\"last_step\":%" PRId64
			",\"reserved_from_bytes\":%" PRIu64 ",\"reserved_to_bytes\":%" PRIu64
			",\"allocated_from_bytes\":%" PRIu64 ",\"allocated_to_bytes\":%" PRIu64
			"}}",
			c->first_step, c->last_step, c->reserved_from, c->reserved_to,
			c->allocated_from, c->allocated_to);
	else
		fputs("null}", r->json);
}

static const char *const trap_keys[GL_TRAP_MAX] = {"entry", "return", "usdt"};

/* What tracing cost it (engine/cost.h); measured false: no live figures (a capture made
 * before gpuleak kept them), its traps still counted. */
static void json_overhead(struct report *r, const struct tproc *p)
{
	struct cost_figures c;
	unsigned int k;
	const char *sep = "";

	cost__figures(p, &c);
	fprintf(r->json,
		",\"overhead\":{\"measured\":%s,\"cpu_fraction\":%.6f,\"traps_per_s\":%.1f"
		",\"trap_ns\":%" PRIu64 ",\"bpf_ns\":%" PRIu64 ",\"cpu_ns\":%" PRIu64
		",\"traced_s\":%.3f,\"traps\":{",
		c.measured ? "true" : "false", c.cpu_fraction, c.traps_per_s, c.trap_ns, c.bpf_ns,
		c.cpu_ns, c.traced_s);
	for (k = 0; k < GL_TRAP_MAX; k++)
		fprintf(r->json, "%s\"%s\":%" PRIu64, k ? "," : "", trap_keys[k], c.traps[k]);
	fputs("},\"per_trap_ns\":{", r->json);
	for (k = 0; k < GL_TRAP_MAX; k++)
		fprintf(r->json, "%s\"%s\":%" PRIu32, k ? "," : "", trap_keys[k], c.per_trap_ns[k]);
	fputs("},\"budget\":", r->json);
	if (!c.budget) {
		fputs("null}", r->json);
		return;
	}
	fprintf(r->json,
		"{\"max_cpu_fraction\":%.6f,\"level\":\"%s\",\"steps\":%" PRIu64 ",\"levels\":[",
		c.budget, cost__level_name(c.level), (uint64_t)p->cost.steps);
	for (k = 0; k < GL_LEVEL_MAX; k++) {
		uint64_t first = p->cost.level_first_ns[k];

		if (!first)
			continue;
		fprintf(r->json, "%s{\"level\":\"%s\",\"gives_up\":", sep, cost__level_name(k));
		json_str(r->json, k ? cost__level_gives_up(k) : "");
		fprintf(r->json, ",\"first_s\":%.3f,\"s\":%.3f,\"cpu_fraction\":%.6f}",
			first > p->cost.since_ns ? (double)(first - p->cost.since_ns) / 1e9 : 0.0,
			(double)p->cost.level_ns[k] / 1e9,
			p->cost.level_cpu_ns[k]
			    ? (double)p->cost.level_cost_ns[k] / (double)p->cost.level_cpu_ns[k]
			    : 0.0);
		sep = ",";
	}
	fputs("]}}", r->json);
}

/* An allocator a cache rule names, split at the program's end: only where there is one. */
static void json_cache(struct report *r, const struct proc_verdict *pv)
{
	const struct cache_verdict *c = &pv->cache;
	size_t i;

	if (!c->on)
		return;
	fputs(",\"allocator_cache\":{\"rule\":", r->json);
	json_str(r->json, query__rule(r->t, c->rule - 1)->text);
	fprintf(r->json, ",\"judged\":%s", c->judged ? "true" : "false");
	if (!c->judged) {
		fputc('}', r->json);
		return;
	}
	fprintf(r->json,
		",\"freed_bytes\":%" PRIu64 ",\"freed_count\":%" PRIu64 ",\"held_bytes\":%" PRIu64
		",\"held_count\":%" PRIu64 ",\"held_sizes\":[",
		c->freed_bytes, c->freed_count, c->held_bytes, c->held_count);
	for (i = 0; i < c->nr_sizes; i++)
		fprintf(r->json, "%s{\"size\":%" PRIu64 ",\"count\":%" PRIu64 "}", i ? "," : "",
			c->sizes[i].size, c->sizes[i].count);
	fprintf(r->json, "],\"held_other_sizes\":%" PRIu64 ",\"warm_growth\":[", c->other_sizes);
	for (i = 0; i < c->nr_warm; i++) {
		fprintf(r->json, "%s{\"site\":", i ? "," : "");
		json_str(r->json, describe__site(r, &r->t->sites[c->warm[i].site]));
		fprintf(r->json, ",\"slope_bytes_per_step\":%.1f,\"bytes\":%" PRIu64 "}",
			c->warm[i].slope_per_step, c->warm[i].end_bytes);
	}
	fputs("]}", r->json);
}

void ndjson__verdict(struct report *r, const struct verdict *v, const struct proc_verdict *pv,
		     uint64_t now_ns)
{
	json_process(r, pv, now_ns);
	json_uncertainty(r, pv);
	json_site_array(r, pv, VERDICT_LEAKS, "leaks");
	json_site_array(r, pv, VERDICT_RETAINED, "retained");
	json_site_array(r, pv, VERDICT_IGNORED, "ignored");
	json_violations(r, pv->p);
	json_growth(r, pv);
	json_gate(r, &v->gate, pv);
	json_site_array(r, pv, VERDICT_PENDING, "pending");
	json_site_array(r, pv, VERDICT_FAILED, "failures");
	json_site_array(r, pv, VERDICT_VA, "address_space");
	json_site_array(r, pv, VERDICT_REG, "registrations");
	json_comms(r, pv->p);
	json_optional_lists(r, pv);
	json_torch(r, pv);
	json_cache(r, pv);
	json_overhead(r, pv->p);
	if (r->verdict_extra)
		fprintf(r->json, ",%s", r->verdict_extra);
	if (r->verdict_more)
		r->verdict_more(r->verdict_more_ctx, pv->p->pid, r->json);
	fputs("}\n", r->json);
}

/* ---- across processes ---- */

void ndjson__summary(struct report *r, const struct verdict *v)
{
	bool first = true;
	size_t i;

	fprintf(r->json,
		"{\"type\":\"summary\",\"processes\":%zu,\"live_bytes\":%" PRIu64
		",\"leaked_bytes\":%" PRIu64 ",\"per_process\":[",
		v->nr_reported, v->live_bytes, v->leaked_bytes);
	for (i = 0; i < v->nr_procs; i++) {
		const struct proc_verdict *pv = &v->procs[i];
		const struct tproc *p = pv->p;

		if (!pv->reported)
			continue;
		fprintf(r->json, "%s{\"pid\":%d,\"ppid\":%d,\"comm\":", first ? "" : ",", p->pid,
			p->ppid);
		json_str(r->json, p->comm);
		fprintf(r->json,
			",\"state\":\"%s\",\"live_bytes\":%" PRIu64 ",\"leaked_bytes\":%" PRIu64
			",\"growth_bytes_per_s\":%.1f,\"growth_bytes_per_step\":%.1f"
			",\"growth_sites\":%zu,\"steps\":%zu,\"approximate\":%s}",
			describe__proc_state(p), p->live_bytes, pv->leaked_bytes, pv->growth_per_s,
			pv->growth_per_step, pv->nr_growth, pv->nr_steps,
			pv->dropped ? "true" : "false");
		first = false;
	}
	fputs("],\"skew\":[", r->json);
	for (i = 0, first = true; i < v->nr_procs; i++) {
		const struct proc_verdict *pv = &v->procs[i];

		if (!pv->reported || !pv->skewed)
			continue;
		fprintf(r->json, "%s{\"pid\":%d,\"comm\":", first ? "" : ",", pv->p->pid);
		json_str(r->json, pv->p->comm);
		fprintf(r->json,
			",\"growth_bytes_per_s\":%.1f,\"peers\":%zu"
			",\"peer_median_bytes_per_s\":%.1f}",
			pv->growth_per_s, pv->nr_peers, pv->peer_median_per_s);
		first = false;
	}
	fputs("]}\n", r->json);
}
