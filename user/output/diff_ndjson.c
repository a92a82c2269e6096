// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The NDJSON of `gpuleak diff` (output/diff_report.h, docs/gpuleak-diff.schema.json): a
 * diff_process record per process pair, then a diff record. Every compared number is
 * {"base","new","delta"}, or null where an input does not have it; byte counts are integers,
 * slopes numbers to a tenth of a byte.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include "lib/json.h"
#include "output/diff_report.h"

static void str_or_null(FILE *f, const char *s)
{
	if (s)
		json_str(f, s);
	else
		fputs("null", f);
}

/*
 * sep"key":{"base":..,"new":..,"delta":..} or sep"key":null; bytes: integers, else tenths.
 * sep is "," but before an object's first member.
 */
static void triple_sep(FILE *f, const char *sep, const char *key, const struct diff_val *v,
		       bool bytes)
{
	fprintf(f, "%s\"%s\":", sep, key);
	if (!v->known) {
		fputs("null", f);
		return;
	}
	if (bytes)
		fprintf(f, "{\"base\":%.0f,\"new\":%.0f,\"delta\":%.0f}", v->base, v->new,
			v->new - v->base);
	else
		fprintf(f, "{\"base\":%.1f,\"new\":%.1f,\"delta\":%.1f}", diff__tenth(v->base),
			diff__tenth(v->new),
			diff__tenth(diff__tenth(v->new) - diff__tenth(v->base)));
}

static void triple(FILE *f, const char *key, const struct diff_val *v, bool bytes)
{
	triple_sep(f, ",", key, v, bytes);
}

static void side(FILE *f, const char *key, const struct diff_proc *p, bool clean)
{
	fprintf(f, ",\"%s\":", key);
	if (!p) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"pid\":%d,\"ppid\":%d,\"comm\":", p->pid, p->ppid);
	json_str(f, p->comm);
	fprintf(f,
		",\"state\":\"%s\",\"exit_status\":%d,\"clean\":%s,\"steps\":%zu,"
		"\"step_source\":\"%s\",\"requests\":%" PRIu64
		",\"duration_s\":%.3f,\"approximate\":%s}",
		p->state, p->exit_status, clean ? "true" : "false", p->steps, p->step_source,
		p->requests, p->duration_s, p->approximate ? "true" : "false");
}

static void site_side(FILE *f, const char *key, const struct diff_site *s)
{
	fprintf(f, ",\"%s\":", key);
	if (!s) {
		fputs("null", f);
		return;
	}
	fputs("{\"site\":", f);
	json_str(f, s->name);
	fputs(",\"offset\":", f);
	if (s->has_off)
		fprintf(f, "%" PRIu64, s->off);
	else
		fputs("null", f);
	fprintf(f, ",\"growing\":%s}", s->growing ? "true" : "false");
}

static void site_pair(FILE *f, const struct diff_site_pair *sp, bool first)
{
	const struct diff_site *s = sp->n ? sp->n : sp->b;

	fprintf(f, "%s{\"match\":\"%s\",\"matched_by\":", first ? "" : ",",
		diff__match_name(sp->match));
	if (sp->match == DIFF_PAIRED)
		fprintf(f, "\"%s\"", diff__by_name(sp->by));
	else
		fputs("null", f);
	fputs(",\"api\":", f);
	json_str(f, s->api);
	fputs(",\"function\":", f);
	str_or_null(f, s->func);
	fputs(",\"module\":", f);
	str_or_null(f, s->module);
	fputs(",\"label\":", f);
	str_or_null(f, s->label);
	fprintf(f, ",\"changed\":%s,\"at_end\":%s", sp->changed ? "true" : "false",
		sp->at_end ? "true" : "false");
	site_side(f, "base", sp->b);
	site_side(f, "new", sp->n);
	triple(f, "live_bytes", &sp->live, true);
	triple(f, "leaked_bytes", &sp->leaked, true);
	triple(f, "live_count", &sp->live_count, true);
	triple(f, "init_bytes", &sp->init, true);
	triple(f, "peak_bytes", &sp->peak, true);
	triple(f, "slope_bytes_per_step", &sp->slope, false);
	triple(f, "bytes_per_request", &sp->per_request, false);
	triple(f, "allocs", &sp->allocs, true);
	fputc('}', f);
}

static void gate_violation(FILE *f, const struct diff_proc_pair *pp,
			   const struct diff_gate_violation *g, bool first)
{
	char name[512];

	fprintf(f, "%s{\"kind\":\"%s\",\"comm\":", first ? "" : ",", diff__gate_name(g->kind));
	json_str(f, pp->comm);
	fprintf(f, ",\"rank\":%d,\"base_pid\":", pp->rank);
	if (pp->b)
		fprintf(f, "%d", pp->b->pid);
	else
		fputs("null", f);
	fputs(",\"new_pid\":", f);
	if (pp->n)
		fprintf(f, "%d", pp->n->pid);
	else
		fputs("null", f);
	if (g->kind == DIFF_GATE_GROWTH)
		fprintf(f, ",\"amount\":%.1f,\"limit\":%" PRIu64, diff__tenth(g->amount), g->limit);
	else if (g->kind == DIFF_GATE_LIVE)
		fprintf(f, ",\"amount\":%.0f,\"limit\":%" PRIu64, g->amount, g->limit);
	else
		fputs(",\"amount\":null,\"limit\":null", f);
	fputs(",\"site\":", f);
	str_or_null(f, g->site ? diff_report__site(g->site, name, sizeof(name)) : NULL);
	fputc('}', f);
}

static void proc_pair(FILE *f, const struct diff_proc_pair *pp)
{
	size_t i;

	fprintf(f, "{\"type\":\"diff_process\",\"match\":\"%s\",\"comm\":",
		diff__match_name(pp->match));
	json_str(f, pp->comm);
	fprintf(f, ",\"rank\":%d", pp->rank);
	side(f, "base", pp->b, pp->clean_b);
	side(f, "new", pp->n, pp->clean_n);
	fprintf(f, ",\"compared_at\":{\"by\":\"%s\",\"base_step\":", diff__align_name(pp->align));
	if (pp->align != DIFF_AT_END)
		fprintf(f, "%" PRId64 ",\"new_step\":%" PRId64, pp->step_b, pp->step_n);
	else
		fputs("null,\"new_step\":null", f);
	fputs(",\"requests\":", f);
	if (pp->align == DIFF_AT_REQUEST)
		fprintf(f, "%" PRIu64, pp->requests_at);
	else
		fputs("null", f);
	fputs(",\"caveat\":", f);
	str_or_null(f, diff__caveat_name(pp->caveat));
	fprintf(f, "},\"steps_differ\":%s,\"step_sources_differ\":%s",
		pp->steps_differ ? "true" : "false", pp->sources_differ ? "true" : "false");
	triple(f, "steps", &pp->steps, true);
	triple(f, "requests", &pp->requests, true);
	triple(f, "growth_bytes_per_step", &pp->growth, false);
	triple(f, "growth_sites", &pp->growth_sites, true);
	triple(f, "leaked_bytes", &pp->leaked, true);
	triple(f, "live_bytes", &pp->live, true);
	triple(f, "peak_bytes", &pp->peak, true);
	triple(f, "init_bytes", &pp->init, true);
	triple(f, "persistent_bytes", &pp->persistent, true);
	triple(f, "pending_bytes", &pp->pending, true);
	triple(f, "alloc_bytes_per_step", &pp->alloc_bytes_per_step, false);
	triple(f, "allocs_per_step", &pp->allocs_per_step, false);
	if (pp->torch) {
		fputs(",\"pytorch\":{", f);
		triple_sep(f, "", "allocated_bytes", &pp->torch_allocated, true);
		triple(f, "reserved_bytes", &pp->torch_reserved, true);
		triple(f, "cached_bytes", &pp->torch_cached, true);
		triple(f, "outside_bytes", &pp->torch_outside, true);
		fputc('}', f);
	} else {
		fputs(",\"pytorch\":null", f);
	}
	fprintf(f,
		",\"sites_paired\":%zu,\"sites_only_base\":%zu,\"sites_only_new\":%zu,"
		"\"sites_unchanged\":%zu,\"sites\":[",
		pp->nr_paired, pp->nr_only_b, pp->nr_only_n, pp->nr_unchanged);
	for (i = 0; i < pp->nr_sites; i++)
		site_pair(f, &pp->sites[i], !i);
	fprintf(f, "],\"gate\":{\"failed\":%s,\"violations\":[", pp->nr_gate ? "true" : "false");
	for (i = 0; i < pp->nr_gate; i++)
		gate_violation(f, pp, &pp->gate[i], !i);
	fputs("]}}\n", f);
}

static void input(FILE *f, const char *key, const struct diff_run *r)
{
	fprintf(f, "\"%s\":{\"file\":", key);
	json_str(f, r->path);
	fprintf(f,
		",\"kind\":\"%s\",\"gpuleak\":", r->source == DIFF_CAPTURE ? "capture" : "ndjson");
	str_or_null(f, r->gpuleak);
	fprintf(f, ",\"truncated\":%s,\"processes\":%zu}", r->truncated ? "true" : "false",
		r->nr_procs);
}

void diff_ndjson__write(FILE *f, const struct diff_result *r)
{
	const struct diff_gate_opts *g = &r->o.gate;
	bool first = true, failed = false;
	size_t i, j;

	for (i = 0; i < r->nr_procs; i++) {
		proc_pair(f, &r->procs[i]);
		failed |= r->procs[i].nr_gate > 0;
	}
	fputs("{\"type\":\"diff\",", f);
	input(f, "base", r->base);
	fputc(',', f);
	input(f, "new", r->new);
	fprintf(f,
		",\"mixed\":%s,\"processes\":{\"paired\":%zu,\"only_base\":%zu,\"only_new\":%zu},"
		"\"gate\":{\"enabled\":%s,\"failed\":%s,\"max_growth_increase\":%" PRIu64
		",\"max_live_increase\":",
		r->mixed ? "true" : "false", r->nr_paired, r->nr_only_b, r->nr_only_n,
		g->on ? "true" : "false", failed ? "true" : "false", g->max_growth_increase);
	if (g->has_max_live)
		fprintf(f, "%" PRIu64, g->max_live_increase);
	else
		fputs("null", f);
	fputs(",\"violations\":[", f);
	for (i = 0; i < r->nr_procs; i++)
		for (j = 0; j < r->procs[i].nr_gate; j++) {
			gate_violation(f, &r->procs[i], &r->procs[i].gate[j], first);
			first = false;
		}
	fprintf(f, "]},\"regression\":%s}\n", r->regression ? "true" : "false");
}
