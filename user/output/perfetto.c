// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --perfetto: the Chrome trace-event JSON format (the "JSON Object Format" of the Trace
 * Event Format document), which ui.perfetto.dev and chrome://tracing open. Per process:
 *
 *   counters (ph C)   "live bytes" (total), "persistent bytes", "pending bytes",
 *                     "live bytes by API" (one series per API family: they stack to the
 *                     total), and "site: NAME" for the sites that held the most
 *   instants (ph i)   "step N" at each step boundary, "leak: SITE" at the end for each
 *                     site whose memory leaked, "growth: SITE" where a growth leak began
 *   slices (ph X)     "pending free: SITE" from each async free (or WebGPU destroy while
 *                     work was queued) to its completion, on "pending frees" tracks, a
 *                     track per overlapping free
 *
 * Perfetto names a counter track "<name> <argument>", so each counter event carries one
 * argument per series. Times are microseconds from the start of the trace (or capture).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "engine/series.h"
#include "engine/verdict.h"
#include "lib/json.h"
#include "output/describe.h"
#include "output/perfetto.h"
#include "output/report_sink.h"

/* Site counter tracks per process: the sites that held the most at their peak. */
#define TOP_SITES 8
/* Lanes (thread tracks) for overlapping pending frees; more overlap shares the last. */
#define MAX_LANES 64
#define LANE_TID0 1000000

static const char *const fam_names[GL_FAM_MAX] = {
    [GL_FAM_CUDART] = "CUDA runtime", [GL_FAM_CUDA] = "CUDA driver", [GL_FAM_VMM] = "CUDA VMM",
    [GL_FAM_NCCL] = "NCCL",	      [GL_FAM_WEBGPU] = "WebGPU",    [GL_FAM_LIBC] = "C library",
};

static double us(const struct report *r, uint64_t ts_ns)
{
	return ts_ns > r->t0_ns ? (double)(ts_ns - r->t0_ns) / 1e3 : 0.0;
}

/* Events are written one per line, each after a comma but the first. */
struct pw {
	FILE *f;
	bool first;
};

static void ev_begin(struct pw *w)
{
	fputs(w->first ? "\n" : ",\n", w->f);
	w->first = false;
}

static void meta(struct pw *w, pid_t pid, int tid, const char *what, const char *name)
{
	ev_begin(w);
	fprintf(w->f,
		"{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"args\":{\"name\":", pid, tid,
		what);
	json_str(w->f, name);
	fputs("}}", w->f);
}

static void counters(struct pw *w, struct report *r, const struct series_proc *sp)
{
	bool used[GL_FAM_MAX] = {false}, any = false, torch = false;
	size_t i;
	int k;

	for (i = 0; i < sp->n; i++) {
		for (k = 0; k < GL_FAM_MAX; k++) {
			used[k] |= fam_names[k] && sp->v[i].fam[k];
			any |= used[k];
		}
		torch |= sp->v[i].torch_reserved || sp->v[i].torch_allocated;
	}
	for (i = 0; i < sp->n; i++) {
		const struct series_point *pt = &sp->v[i];
		bool first = true;
		double ts = us(r, pt->ts_ns);

		ev_begin(w);
		fprintf(w->f,
			"{\"ph\":\"C\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
			"\"name\":\"live bytes\",\"args\":{\"total\":%" PRIu64 "}}",
			sp->pid, sp->pid, ts, pt->live);
		ev_begin(w);
		fprintf(w->f,
			"{\"ph\":\"C\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
			"\"name\":\"persistent bytes\",\"args\":{\"total\":%" PRIu64 "}}",
			sp->pid, sp->pid, ts, pt->persistent);
		ev_begin(w);
		fprintf(w->f,
			"{\"ph\":\"C\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
			"\"name\":\"pending bytes\",\"args\":{\"total\":%" PRIu64 "}}",
			sp->pid, sp->pid, ts, pt->pending);
		/* PyTorch's caching allocator: its live blocks and its segments, one track. */
		if (torch) {
			ev_begin(w);
			fprintf(w->f,
				"{\"ph\":\"C\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
				"\"name\":\"PyTorch caching "
				"allocator\",\"args\":{\"allocated\":%" PRIu64
				",\"reserved\":%" PRIu64 "}}",
				sp->pid, sp->pid, ts, pt->torch_allocated, pt->torch_reserved);
		}
		if (!any)
			continue;
		ev_begin(w);
		fprintf(w->f,
			"{\"ph\":\"C\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
			"\"name\":\"live bytes by API\",\"args\":{",
			sp->pid, sp->pid, ts);
		for (k = 0; k < GL_FAM_MAX; k++) {
			if (!used[k])
				continue;
			fprintf(w->f, "%s\"%s\":%" PRIu64, first ? "" : ",", fam_names[k],
				pt->fam[k]);
			first = false;
		}
		fputs("}}", w->f);
	}
}

static int cmp_peak(const void *a, const void *b, void *ctx)
{
	const struct series *se = ctx;
	uint64_t x = se->sites[*(const uint32_t *)a].peak;
	uint64_t y = se->sites[*(const uint32_t *)b].peak;

	if (x != y)
		return x > y ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int site_counters(struct pw *w, struct report *r, const struct series *se, pid_t pid)
{
	const struct tracker *t = r->t;
	uint32_t *v = malloc((se->nr_sites ? se->nr_sites : 1) * sizeof(*v));
	size_t i, j, n = 0;
	char name[512];

	if (!v)
		return -ENOMEM;
	for (i = 0; i < se->nr_sites && i < t->nr_sites; i++)
		if (t->sites[i].pid == pid && se->sites[i].peak)
			v[n++] = (uint32_t)i;
	qsort_r(v, n, sizeof(*v), cmp_peak, (void *)se);
	for (i = 0; i < n && i < TOP_SITES; i++) {
		const struct site *s = &t->sites[v[i]];
		const struct site_series *ss = &se->sites[v[i]];

		snprintf(name, sizeof(name), "site: %s (%s)", describe__site(r, s),
			 cat_api_name(s->api));
		for (j = 0; j < ss->n; j++) {
			ev_begin(w);
			fprintf(w->f,
				"{\"ph\":\"C\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"name\":", pid,
				pid, us(r, ss->v[j].ts_ns));
			json_str(w->f, name);
			fprintf(w->f, ",\"args\":{\"bytes\":%" PRIu64 "}}", ss->v[j].bytes);
		}
	}
	free(v);
	return 0;
}

static void instant(struct pw *w, pid_t pid, double ts, const char *name)
{
	ev_begin(w);
	fprintf(w->f, "{\"ph\":\"i\",\"s\":\"p\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"name\":", pid,
		pid, ts);
	json_str(w->f, name);
}

static void steps(struct pw *w, struct report *r, pid_t pid)
{
	const struct step_stat *st = NULL;
	char name[64];
	size_t n = 0, i;

	if (r->tl)
		st = timeline__steps(r->tl, pid, &n);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "step %" PRId64, st[i].step);
		instant(w, pid, us(r, st[i].t_end_ns), name);
		fprintf(w->f,
			",\"args\":{\"live_bytes\":%" PRIu64 ",\"persistent_bytes\":%" PRIu64
			",\"pending_bytes\":%" PRIu64 ",\"suspect_bytes\":%" PRIu64 "}}",
			st[i].live, st[i].persistent, st[i].pending, st[i].suspect);
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* "leak: SITE" at the end for each leaking site, in the order the sites were first seen. */
static int leaks(struct pw *w, struct report *r, const struct proc_verdict *pv, uint64_t end_ns)
{
	const struct site_list *l = &pv->sites[VERDICT_LEAKS];
	uint32_t *v = malloc((l->n ? l->n : 1) * sizeof(*v));
	char name[512];
	size_t i;

	if (!v)
		return -ENOMEM;
	if (l->n) {
		memcpy(v, l->v, l->n * sizeof(*v));
		qsort(v, l->n, sizeof(*v), cmp_u32);
	}
	for (i = 0; i < l->n; i++) {
		const struct site *s = &r->t->sites[v[i]];

		snprintf(name, sizeof(name), "leak: %s", describe__site(r, s));
		instant(w, pv->p->pid, us(r, end_ns), name);
		fprintf(w->f,
			",\"args\":{\"api\":\"%s\",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 "}}",
			cat_api_name(s->api), s->live_bytes, s->live_count);
	}
	free(v);
	return 0;
}

/* "growth: SITE" where each growth leak began: the end of its first step. */
static void growths(struct pw *w, struct report *r, const struct proc_verdict *pv, uint64_t end_ns)
{
	const struct step_stat *st = NULL;
	size_t n = 0, i, j;
	char name[512];

	if (r->tl)
		st = timeline__steps(r->tl, pv->p->pid, &n);
	for (i = 0; i < pv->nr_growth; i++) {
		const struct growth *g = &pv->growth[i];
		uint64_t at = end_ns;

		for (j = 0; j < n; j++)
			if (st[j].step == g->first_step)
				at = st[j].t_end_ns;
		snprintf(name, sizeof(name), "growth: %s",
			 describe__site(r, &r->t->sites[g->site]));
		instant(w, pv->p->pid, us(r, at), name);
		fprintf(w->f,
			",\"args\":{\"bytes_per_step\":%.1f,\"bytes_per_s\":%.1f,\"r2\":%.4f,"
			"\"first_step\":%" PRId64 "}}",
			g->slope_per_step, g->slope_per_s, g->r2, g->first_step);
	}
}

/*
 * Each pending free as a complete slice on the first lane free at its start: slices on one
 * track must nest, and these overlap at will.
 */
static void pending_slices(struct pw *w, struct report *r, const struct series *se, pid_t pid,
			   uint64_t end_ns)
{
	uint64_t lane_end[MAX_LANES] = {0};
	int lanes = 0, l;
	size_t i;
	char name[512];

	for (i = 0; i < se->nr_slices; i++) {
		const struct pending_slice *ps = &se->slices[i];
		const struct site *s = ps->site < r->t->nr_sites ? &r->t->sites[ps->site] : NULL;
		uint64_t end = ps->end_ns ? ps->end_ns : end_ns;

		if (ps->pid != pid)
			continue;
		for (l = 0; l < lanes && lane_end[l] > ps->begin_ns; l++)
			;
		if (l == MAX_LANES)
			l = MAX_LANES - 1;
		if (l == lanes) {
			snprintf(name, sizeof(name), lanes ? "pending frees (%d)" : "pending frees",
				 lanes + 1);
			meta(w, pid, LANE_TID0 + l, "thread_name", name);
			lanes++;
		}
		lane_end[l] = end > lane_end[l] ? end : lane_end[l];
		snprintf(name, sizeof(name), "pending free: %s", s ? describe__site(r, s) : "?");
		ev_begin(w);
		fprintf(w->f,
			"{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
			"\"name\":",
			pid, LANE_TID0 + l, us(r, ps->begin_ns),
			end > ps->begin_ns ? (double)(end - ps->begin_ns) / 1e3 : 0.0);
		json_str(w->f, name);
		fprintf(w->f, ",\"args\":{\"api\":\"%s\",\"bytes\":%" PRIu64 ",\"completed\":%s}}",
			s ? cat_api_name(s->api) : "?", ps->bytes, ps->end_ns ? "true" : "false");
	}
}

int perfetto__write(FILE *f, struct report *r, const struct verdict *v, const struct series *se,
		    uint64_t end_ns)
{
	struct pw w = {.f = f, .first = true};
	size_t i;
	char name[64];
	int err;

	fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", f);
	for (i = 0; i < v->nr_procs; i++) {
		const struct proc_verdict *pv = &v->procs[i];
		const struct tproc *p = pv->p;
		const struct series_proc *sp = series__proc(se, p->pid);

		snprintf(name, sizeof(name), "%s (pid %d)", p->comm[0] ? p->comm : "?", p->pid);
		meta(&w, p->pid, p->pid, "process_name", name);
		meta(&w, p->pid, p->pid, "thread_name", "gpuleak: memory");
		if (sp)
			counters(&w, r, sp);
		err = site_counters(&w, r, se, p->pid);
		if (!err) {
			steps(&w, r, p->pid);
			err = leaks(&w, r, pv, end_ns);
		}
		if (err)
			return err;
		growths(&w, r, pv, end_ns);
		pending_slices(&w, r, se, p->pid, end_ns);
	}
	fprintf(f,
		"\n],\"otherData\":{\"producer\":\"gpuleak\","
		"\"pending_frees_not_drawn\":%" PRIu64 "}}\n",
		se->slices_dropped);
	return ferror(f) ? -EIO : 0;
}
