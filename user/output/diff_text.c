// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The text of `gpuleak diff` (output/diff_report.h): per process pair, how each run ended and
 * where they are compared, the process's numbers in both runs and their change, then its
 * sites, largest difference first, within 100 columns; GATE lines last.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "lib/term.h"
#include "lib/units.h"
#include "output/diff_report.h"

#define WRAP 100
#define ROW  65 /* where a site row's name begins */

const char *diff_report__ended(const struct diff_proc *p, char *buf, size_t len)
{
	const char *sig = NULL;

	if (!strcmp(p->state, "exited")) {
		if (p->exit_status > 128 && p->exit_status < 128 + 65)
			sig = sigabbrev_np(p->exit_status - 128);
		if (p->exit_status < 0)
			snprintf(buf, len, "exited (status unknown)");
		else
			snprintf(buf, len, "exited with status %d%s%s%s", p->exit_status,
				 sig ? " (SIG" : "", sig ? sig : "", sig ? ")" : "");
	} else if (!strcmp(p->state, "running")) {
		snprintf(buf, len, "still running when the capture ended");
	} else if (!strcmp(p->state, "ended")) {
		snprintf(buf, len, "ended at its end marker");
	} else if (!strcmp(p->state, "exec")) {
		snprintf(buf, len, "exec'd another program");
	} else {
		snprintf(buf, len, "detached");
	}
	return buf;
}

/* "label" func (module), or the name where no function is known. */
static const char *site_title(const struct diff_site_pair *sp, char *buf, size_t len)
{
	const struct diff_site *s = sp->n ? sp->n : sp->b;
	size_t n = 0;

	if (s->label)
		n += (size_t)snprintf(buf, len, "\"%s\" ", s->label);
	if (n < len) {
		if (s->func)
			snprintf(buf + n, len - n, "%s (%s)", s->func, s->module ? s->module : "?");
		else
			snprintf(buf + n, len - n, "%s", s->name);
	}
	return buf;
}

const char *diff_report__site(const struct diff_site_pair *sp, char *buf, size_t len)
{
	const struct diff_site *s = sp->n ? sp->n : sp->b;
	size_t n = 0;

	if (s->label)
		n += (size_t)snprintf(buf, len, "\"%s\" ", s->label);
	if (n < len) {
		if (s->func)
			snprintf(buf + n, len - n, "%s (%s) %s", s->func,
				 s->module ? s->module : "?", s->api);
		else
			snprintf(buf + n, len - n, "%s %s", s->name, s->api);
	}
	return buf;
}

/* A number of bytes, "-" when unknown. */
static const char *num(const struct diff_val *v, bool new, char *b, size_t n)
{
	double x = new ? v->new : v->base;

	if (!v->known)
		return "-";
	return fmt_bytes(x > 0 ? (uint64_t)llround(x) : 0, b, n);
}

/* A change in bytes: "+1.00 MiB", "-832 KiB", "0"; "-" when unknown. */
static const char *chg(const struct diff_val *v, char *b, size_t n)
{
	double d = v->new - v->base;
	char t[32];

	if (!v->known)
		return "-";
	if (fabs(d) < 0.05)
		return "0";
	snprintf(b, n, "%c%s", d > 0 ? '+' : '-',
		 fmt_bytes((uint64_t)llround(fabs(d)), t, sizeof(t)));
	return b;
}

static void row(FILE *out, const char *what, const struct diff_val *v, const char *note)
{
	char b1[32], b2[32], b3[32];

	fprintf(out, "  %-24s %10s %10s %10s%s%s\n", what, num(v, false, b1, sizeof(b1)),
		num(v, true, b2, sizeof(b2)), chg(v, b3, sizeof(b3)), note ? "  " : "",
		note ? note : "");
}

/* A count, for the process lines: "13", its change "+2" or "0"; "-" when unknown. */
static void count_row(FILE *out, const char *what, const struct diff_val *v)
{
	char d[32];

	if (!v->known) {
		fprintf(out, "  %-24s %10s %10s %10s\n", what, "-", "-", "-");
		return;
	}
	if (v->new == v->base)
		snprintf(d, sizeof(d), "0");
	else
		snprintf(d, sizeof(d), "%+.0f", v->new - v->base);
	fprintf(out, "  %-24s %10.0f %10.0f %10s\n", what, v->base, v->new, d);
}

static bool nonzero(const struct diff_val *v)
{
	return v->known && (v->base || v->new);
}

static void where(FILE *out, const struct diff_proc_pair *pp)
{
	char b1[64], b2[64];

	if (pp->b)
		fprintf(out, "  BASE: pid %d %s after %zu step%s (%s)\n", pp->b->pid,
			diff_report__ended(pp->b, b1, sizeof(b1)), pp->b->steps,
			pp->b->steps == 1 ? "" : "s", pp->b->step_source);
	if (pp->n)
		fprintf(out, "  NEW:  pid %d %s after %zu step%s (%s)\n", pp->n->pid,
			diff_report__ended(pp->n, b2, sizeof(b2)), pp->n->steps,
			pp->n->steps == 1 ? "" : "s", pp->n->step_source);
	if (pp->match != DIFF_PAIRED)
		return;
	if (pp->sources_differ)
		fprintf(out,
			"  NOT COMPARABLE per step: BASE's steps are %s, NEW's %s (give both the "
			"same --step)\n",
			pp->b->step_source, pp->n->step_source);
	if (pp->clean_b && !pp->clean_n)
		fprintf(out,
			"  NEW ended early: what it would have done after is unknown, not less "
			"memory\n");
	else if (!pp->clean_b && pp->clean_n)
		fprintf(out, "  BASE ended early: what it would have done after is unknown, not "
			     "less memory\n");
	switch (pp->align) {
	case DIFF_AT_END:
		fprintf(out, "  compared at the end%s\n",
			pp->caveat == DIFF_NO_SERIES
			    ? ", not step for step: an input has no step records for it (NOT "
			      "ALIGNED)"
			: pp->caveat == DIFF_TOO_SHORT
			    ? ", not step for step: a run has no completed step (NOT ALIGNED)"
			    : "");
		break;
	case DIFF_AT_STEP:
		fprintf(out, "  compared at step %" PRId64 ", the last both completed%s\n",
			pp->step_b,
			pp->steps_differ ? " (different numbers of steps: compared per step)" : "");
		break;
	case DIFF_AT_REQUEST:
		fprintf(out,
			"  compared where both had completed %" PRIu64
			" request%s: BASE at step %" PRId64 ", NEW at step %" PRId64 "\n",
			pp->requests_at, pp->requests_at == 1 ? "" : "s", pp->step_b, pp->step_n);
		break;
	}
	if (pp->slopes_fitted && pp->fit_from_b == pp->fit_from_n && pp->step_b == pp->step_n)
		fprintf(out,
			"  growth per step: fitted over steps %" PRId64 "..%" PRId64
			" of both (the verdicts judged runs of other lengths)\n",
			pp->fit_from_b, pp->step_b);
	else if (pp->slopes_fitted)
		fprintf(out,
			"  growth per step: fitted over steps %" PRId64 "..%" PRId64
			" of BASE, %" PRId64 "..%" PRId64 " of NEW\n",
			pp->fit_from_b, pp->step_b, pp->fit_from_n, pp->step_n);
	if (pp->caveat == DIFF_INEXACT_SITES)
		fprintf(out,
			"  sites compared at the end: the step records list 8 sites a step and "
			"some steps changed more\n");
}

static void proc_numbers(FILE *out, const struct diff_proc_pair *pp)
{
	char note[64];

	fprintf(out, "  %-24s %10s %10s %10s\n", "", "BASE", "NEW", "CHANGE");
	snprintf(note, sizeof(note), "%.0f growing site%s in BASE, %.0f in NEW",
		 pp->growth_sites.base, pp->growth_sites.base == 1 ? "" : "s",
		 pp->growth_sites.new);
	row(out, "growth per step", &pp->growth,
	    nonzero(&pp->growth_sites) && !pp->slopes_fitted ? note : NULL);
	row(out, "live, not retained", &pp->leaked, NULL);
	row(out, "live", &pp->live, NULL);
	row(out, "peak at a step end", &pp->peak, NULL);
	if (nonzero(&pp->init))
		row(out, "retained by init", &pp->init, NULL);
	if (nonzero(&pp->persistent))
		row(out, "retained by rule", &pp->persistent, NULL);
	if (nonzero(&pp->pending))
		row(out, "pending frees", &pp->pending, NULL);
	row(out, "allocated per step", &pp->alloc_bytes_per_step, NULL);
	if (nonzero(&pp->requests))
		count_row(out, "requests", &pp->requests);
	/* PyTorch's buckets, when either run had its blocks ("-": an input does not say). */
	if (pp->torch) {
		row(out, "PyTorch allocated", &pp->torch_allocated, NULL);
		row(out, "PyTorch reserved", &pp->torch_reserved, NULL);
		row(out, "PyTorch cached", &pp->torch_cached, NULL);
		row(out, "outside PyTorch", &pp->torch_outside,
		    pp->align != DIFF_AT_END ? "at the end only" : NULL);
	}
}

static const char *change_word(const struct diff_site_pair *sp)
{
	const struct diff_val *v[] = {&sp->live, &sp->slope,	  &sp->peak,  &sp->leaked,
				      &sp->init, &sp->live_count, &sp->allocs};
	size_t i;

	if (sp->match == DIFF_ONLY_NEW)
		return "new";
	if (sp->match == DIFF_ONLY_BASE)
		return "gone";
	if (!sp->changed)
		return "same";
	/* the sign of the first number that moved */
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (v[i]->known && fabs(v[i]->new - v[i]->base) >= 0.05)
			return v[i]->new > v[i]->base ? "more" : "less";
	return "diff";
}

/* A piece of a site's detail line: appended, wrapped at WRAP columns. */
static void piece(FILE *out, size_t *col, const char *text)
{
	size_t n = strlen(text);

	if (*col && *col + 2 + n > WRAP) {
		fputc('\n', out);
		*col = 0;
	}
	if (!*col) {
		fprintf(out, "%10s", "");
		*col = 10;
	} else {
		fputs("; ", out);
		*col += 2;
	}
	fputs(text, out);
	*col += n;
}

static void pair_piece(FILE *out, size_t *col, const char *what, const struct diff_val *v,
		       bool bytes)
{
	char b[128], b1[32], b2[32], b3[32];

	if (!v->known || fabs(v->new - v->base) < 0.05)
		return;
	if (bytes)
		snprintf(b, sizeof(b), "%s %s -> %s (%s)", what, num(v, false, b1, sizeof(b1)),
			 num(v, true, b2, sizeof(b2)), chg(v, b3, sizeof(b3)));
	else
		snprintf(b, sizeof(b), "%s %.0f -> %.0f", what, v->base, v->new);
	piece(out, col, b);
}

/* What else changed at a site, and how it was paired when not by its name. */
static void site_details(FILE *out, const struct diff_site_pair *sp, const char *api)
{
	char b[160];
	size_t col = 0;

	if (api)
		piece(out, &col, api);
	pair_piece(out, &col, "peak", &sp->peak, true);
	/* Not retained bytes that did not move with the live ones: memory changed class. */
	if (fabs((sp->leaked.new - sp->leaked.base) - (sp->live.new - sp->live.base)) >= 0.05)
		pair_piece(out, &col, "not retained", &sp->leaked, true);
	pair_piece(out, &col, "retained by init", &sp->init, true);
	pair_piece(out, &col, "live allocations", &sp->live_count, false);
	pair_piece(out, &col, "allocations made", &sp->allocs, false);
	if (nonzero(&sp->per_request))
		pair_piece(out, &col, "per request", &sp->per_request, true);
	if (sp->match == DIFF_PAIRED && sp->by == DIFF_BY_FUNCTION) {
		snprintf(b, sizeof(b), "call site moved: +0x%" PRIx64 " -> +0x%" PRIx64, sp->b->off,
			 sp->n->off);
		piece(out, &col, b);
	} else if (sp->match == DIFF_PAIRED && sp->by == DIFF_BY_ORDER) {
		snprintf(b, sizeof(b),
			 "paired by order in its function: +0x%" PRIx64 " -> +0x%" PRIx64,
			 sp->b->off, sp->n->off);
		piece(out, &col, b);
	} else if (sp->match == DIFF_PAIRED && sp->by == DIFF_BY_LABEL) {
		snprintf(b, sizeof(b), "paired by label: made in %s in BASE",
			 term_tmp(sp->b->name));
		piece(out, &col, b);
	}
	if (col)
		fputc('\n', out);
}

static void site_rows(FILE *out, const struct diff_proc_pair *pp, int top)
{
	char b[6][32], name[600], apart[700], raw[600];
	const struct diff_site *s;
	size_t i, shown = 0;

	fprintf(out, "  sites: %zu paired (%zu unchanged), %zu only in NEW, %zu only in BASE%s\n",
		pp->nr_paired, pp->nr_unchanged, pp->nr_only_n, pp->nr_only_b,
		pp->nr_sites ? "; largest difference first:" : "");
	if (!pp->nr_sites)
		return;
	fprintf(out, "  %-4s %-27s  %s\n", "",
		pp->align == DIFF_AT_END ? "live bytes at the end" : "live bytes where compared",
		"growth per step");
	fprintf(out, "  %-4s %8s %8s %9s  %8s %8s %9s  %s\n", "", "BASE", "NEW", "CHANGE", "BASE",
		"NEW", "CHANGE", "SITE");
	for (i = 0; i < pp->nr_sites; i++) {
		const struct diff_site_pair *sp = &pp->sites[i];

		if (top && shown == (size_t)top) {
			fprintf(out, "  ... %zu more (--top 0 lists all)\n", pp->nr_sites - shown);
			break;
		}
		shown++;
		/* The site and its API after the numbers when they fit in 100 columns, else the
		 * API, or both, on the next line. */
		s = sp->n ? sp->n : sp->b;
		/* a target's names, fit for a terminal (lib/term.h) before they are measured */
		snprintf(name, sizeof(name), "%s", term_tmp(site_title(sp, raw, sizeof(raw))));
		snprintf(apart, sizeof(apart), "%s", s->api);
		if (strlen(name) > WRAP - ROW) {
			snprintf(apart, sizeof(apart), "%s %s", name, s->api);
			name[0] = 0;
		} else if (strlen(name) + 1 + strlen(s->api) <= WRAP - ROW) {
			strcat(name, " ");
			strcat(name, s->api);
			apart[0] = 0;
		}
		fprintf(out, "  %-4s %8s %8s %9s  %8s %8s %9s%s%s\n", change_word(sp),
			num(&sp->live, false, b[0], 32), num(&sp->live, true, b[1], 32),
			chg(&sp->live, b[2], 32), num(&sp->slope, false, b[3], 32),
			num(&sp->slope, true, b[4], 32), chg(&sp->slope, b[5], 32),
			name[0] ? "  " : "", name);
		site_details(out, sp, apart[0] ? apart : NULL);
	}
}

static void gate_line(FILE *out, const struct diff_proc_pair *pp,
		      const struct diff_gate_violation *g)
{
	char b1[64], b2[64], name[512], raw[512], line[1024];
	int n = snprintf(line, sizeof(line), "GATE: %s (rank %d): ", term_tmp(pp->comm), pp->rank);
	size_t len = sizeof(line) - (size_t)n;

	switch (g->kind) {
	case DIFF_GATE_GROWTH:
		snprintf(line + n, len, "growth per step rose by %s (limit %s)",
			 fmt_bytes((uint64_t)llround(g->amount), b1, sizeof(b1)),
			 fmt_bytes(g->limit, b2, sizeof(b2)));
		break;
	case DIFF_GATE_LIVE:
		snprintf(line + n, len, "live bytes not retained rose by %s (limit %s)",
			 fmt_bytes((uint64_t)llround(g->amount), b1, sizeof(b1)),
			 fmt_bytes(g->limit, b2, sizeof(b2)));
		break;
	case DIFF_GATE_ENDED_EARLY:
		snprintf(line + n, len, "NEW ended early: %s after %zu steps (BASE %zu)",
			 diff_report__ended(pp->n, b1, sizeof(b1)), pp->n->steps,
			 pp->b ? pp->b->steps : 0);
		break;
	case DIFF_GATE_MISSING:
		snprintf(line + n, len, "in BASE (pid %d), not in NEW", pp->b->pid);
		break;
	case DIFF_GATE_INCOMPARABLE:
		snprintf(line + n, len, "%s",
			 pp->sources_differ
			     ? "not comparable: different step sources"
			     : "live bytes not comparable step for step (see above)");
		break;
	}
	fputs(line, out);
	/* Where, on the line when it fits in 100 columns, else on the next. */
	if (g->site) {
		snprintf(name, sizeof(name), "%s",
			 term_tmp(diff_report__site(g->site, raw, sizeof(raw))));
		if (strlen(line) + strlen(", most at ") + strlen(name) <= WRAP)
			fprintf(out, ", most at %s", name);
		else
			fprintf(out, ",\n      most at %s", name);
	}
	fputc('\n', out);
}

static void input_line(FILE *out, const char *which, const struct diff_run *r)
{
	fprintf(out, "%s %s: %s%s, %zu process%s\n", which, term_tmp(r->path),
		r->source == DIFF_CAPTURE ? "capture" : "NDJSON verdicts",
		r->truncated ? " (cut short)" : "", r->nr_procs, r->nr_procs == 1 ? "" : "es");
}

void diff_text__print(FILE *out, const struct diff_result *r, int top)
{
	size_t i, j, nv = 0;

	input_line(out, "BASE", r->base);
	input_line(out, "NEW ", r->new);
	if (r->mixed)
		fprintf(out, "one input is NDJSON: compared is what both have (sites listed in "
			     "verdicts; no allocation counts)\n");
	for (i = 0; i < r->nr_procs; i++) {
		const struct diff_proc_pair *pp = &r->procs[i];

		fputc('\n', out);
		if (pp->match == DIFF_PAIRED)
			fprintf(out, "%s (rank %d)\n", term_tmp(pp->comm), pp->rank);
		else
			fprintf(out, "%s (rank %d): only in %s\n", term_tmp(pp->comm), pp->rank,
				pp->match == DIFF_ONLY_BASE ? "BASE" : "NEW");
		where(out, pp);
		if (!pp->nr_sites && !nonzero(&pp->live) && !nonzero(&pp->alloc_bytes_per_step)) {
			fprintf(out, "  no memory allocated in either run\n");
			continue;
		}
		proc_numbers(out, pp);
		site_rows(out, pp, top);
	}
	for (i = 0; i < r->nr_procs; i++)
		nv += r->procs[i].nr_gate;
	if (!r->o.gate.on)
		return;
	fputc('\n', out);
	for (i = 0; i < r->nr_procs; i++)
		for (j = 0; j < r->procs[i].nr_gate; j++)
			gate_line(out, &r->procs[i], &r->procs[i].gate[j]);
	if (!nv)
		fprintf(out, "GATE: no regression\n");
}
