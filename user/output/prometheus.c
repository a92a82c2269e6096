// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "engine/verdict.h"
#include "output/describe.h"
#include "output/prometheus.h"

/* One row of the metrics: a process's memory of one API on one device. */
struct metric_row {
	uint16_t api;
	char dev[16];
	uint64_t live, count, persistent, pending, suspect;
	double growth_per_s, growth_per_step;
};

#define METRIC_ROWS 64

struct metric_rows {
	struct metric_row v[METRIC_ROWS];
	size_t n;
};

static struct metric_row *row_of(struct metric_rows *rows, uint16_t api, const char *dev)
{
	struct metric_row *m;
	size_t i;

	for (i = 0; i < rows->n; i++)
		if (rows->v[i].api == api && !strcmp(rows->v[i].dev, dev))
			return &rows->v[i];
	if (rows->n == METRIC_ROWS)
		return NULL;
	m = &rows->v[rows->n++];
	memset(m, 0, sizeof(*m));
	m->api = api;
	snprintf(m->dev, sizeof(m->dev), "%s", dev);
	return m;
}

/* A process's rows: its memory by API and device, then its growth leaks on them. */
static void metric_rows(const struct tracker *t, const struct proc_verdict *pv,
			struct metric_rows *rows)
{
	struct metric_row *m;
	char dev[16];
	size_t i;

	for (i = 0; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];

		if (s->pid != pv->p->pid || !s->counts || (!s->live_count && !s->pending_count))
			continue;
		describe__device(t, s, dev, sizeof(dev));
		m = row_of(rows, s->api, dev);
		if (!m)
			continue;
		m->live += s->live_bytes;
		m->count += s->live_count;
		m->pending += s->pending_bytes;
		if (s->cls == CLS_PERSISTENT)
			m->persistent += s->live_bytes;
	}
	for (i = 0; i < pv->nr_growth; i++) {
		const struct site *s = &t->sites[pv->growth[i].site];

		describe__device(t, s, dev, sizeof(dev));
		m = row_of(rows, s->api, dev);
		if (!m)
			continue;
		m->suspect += s->live_bytes;
		m->growth_per_s += pv->growth[i].slope_per_s;
		m->growth_per_step += pv->growth[i].slope_per_step;
	}
}

enum mtype { M_GAUGE, M_COUNTER, M_INFO };

/* A label value, quoted: backslash, double quote and newline escaped (both formats). */
static void metrics_label(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", out);
		else if (*s == '"')
			fputs("\\\"", out);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

/*
 * A metric family's HELP and TYPE. OpenMetrics names a counter family without _total and
 * has an info type; Prometheus 0.0.4 names the family as its samples and knows neither.
 */
static void family(FILE *out, bool om, const char *name, enum mtype type, const char *help)
{
	const char *suffix = type == M_COUNTER ? "_total" : type == M_INFO ? "_info" : "";
	const char *tname = type == M_GAUGE ? "gauge" : type == M_COUNTER ? "counter" : "info";

	if (om) {
		fprintf(out, "# TYPE gpuleak_%s %s\n# HELP gpuleak_%s %s\n", name, tname, name,
			help);
	} else {
		fprintf(out, "# HELP gpuleak_%s%s %s\n# TYPE gpuleak_%s%s %s\n", name, suffix, help,
			name, suffix, type == M_COUNTER ? "counter" : "gauge");
	}
}

/* The start of a sample: its name and the labels every per-process sample has. */
static void sample(FILE *out, const char *name, enum mtype type, const struct tproc *p)
{
	fprintf(out, "gpuleak_%s%s{pid=\"%d\",comm=", name,
		type == M_COUNTER ? "_total"
		: type == M_INFO  ? "_info"
				  : "",
		p->pid);
	metrics_label(out, p->comm);
}

static void row_metric(FILE *out, bool om, const struct verdict *v, struct metric_rows *rows,
		       const char *name, const char *help, int field)
{
	size_t i, j;

	family(out, om, name, M_GAUGE, help);
	for (i = 0; i < v->nr_procs; i++)
		for (j = 0; v->procs[i].reported && j < rows[i].n; j++) {
			const struct metric_row *m = &rows[i].v[j];

			sample(out, name, M_GAUGE, v->procs[i].p);
			fprintf(out, ",api=\"%s\",device=", cat_api_name(m->api));
			metrics_label(out, m->dev);
			switch (field) {
			case 0:
				fprintf(out, "} %" PRIu64 "\n", m->live);
				break;
			case 1:
				fprintf(out, "} %" PRIu64 "\n", m->count);
				break;
			case 2:
				fprintf(out, "} %" PRIu64 "\n", m->persistent);
				break;
			case 3:
				fprintf(out, "} %" PRIu64 "\n", m->pending);
				break;
			case 4:
				fprintf(out, "} %" PRIu64 "\n", m->suspect);
				break;
			case 5:
				fprintf(out, "} %.1f\n", m->growth_per_s);
				break;
			default:
				fprintf(out, "} %.1f\n", m->growth_per_step);
				break;
			}
		}
}

/* The per-process families after the rows. */
static void proc_metrics(FILE *out, bool om, const struct verdict *v)
{
	size_t i;
	int k;

	family(out, om, "time_to_oom_seconds", M_GAUGE,
	       "Projected time until the most pressed device runs out, at the current growth.");
	for (i = 0; i < v->nr_procs; i++) {
		const struct proc_verdict *pv = &v->procs[i];

		if (!pv->reported || !pv->proj.known)
			continue;
		sample(out, "time_to_oom_seconds", M_GAUGE, pv->p);
		fprintf(out, ",device=\"%s%d\"} %.1f\n", pv->proj.webgpu ? "wgpu#" : "",
			pv->proj.webgpu ? pv->proj.device + 1 : pv->proj.device,
			pv->proj.seconds_to_oom);
	}
	family(out, om, "findings", M_GAUGE,
	       "What the verdict would say now: call sites leaking, growing, rules violated.");
	for (i = 0; i < v->nr_procs; i++) {
		const struct proc_verdict *pv = &v->procs[i];

		if (!pv->reported)
			continue;
		sample(out, "findings", M_GAUGE, pv->p);
		fprintf(out, ",kind=\"leak_sites\"} %zu\n", pv->sites[VERDICT_LEAKS].n);
		sample(out, "findings", M_GAUGE, pv->p);
		fprintf(out, ",kind=\"growth_leaks\"} %zu\n", pv->nr_growth);
		sample(out, "findings", M_GAUGE, pv->p);
		fprintf(out, ",kind=\"rule_violations\"} %zu\n", pv->p->nr_viols);
		sample(out, "findings", M_GAUGE, pv->p);
		fprintf(out, ",kind=\"rank_skew\"} %d\n", pv->skewed);
	}
	family(out, om, "allocations", M_COUNTER, "Traced allocations made.");
	for (i = 0; i < v->nr_procs; i++) {
		if (!v->procs[i].reported)
			continue;
		sample(out, "allocations", M_COUNTER, v->procs[i].p);
		fprintf(out, "} %" PRIu64 "\n", v->procs[i].p->c.allocs);
	}
	family(out, om, "frees", M_COUNTER, "Traced frees.");
	for (i = 0; i < v->nr_procs; i++) {
		if (!v->procs[i].reported)
			continue;
		sample(out, "frees", M_COUNTER, v->procs[i].p);
		fprintf(out, "} %" PRIu64 "\n", v->procs[i].p->c.frees);
	}
	family(out, om, "failed_calls", M_COUNTER, "Traced calls that returned an error.");
	for (i = 0; i < v->nr_procs; i++) {
		if (!v->procs[i].reported)
			continue;
		sample(out, "failed_calls", M_COUNTER, v->procs[i].p);
		fprintf(out, "} %" PRIu64 "\n", v->procs[i].p->c.failed_calls);
	}
	family(out, om, "dropped", M_COUNTER,
	       "Events lost or not tracked in the kernel, by reason (the verdict's losses).");
	for (i = 0; i < v->nr_procs; i++)
		for (k = 0; v->procs[i].reported && k < GL_STAT_MAX; k++) {
			if (!describe__loss(k) || k == GL_STAT_LOST_ALLOC_BYTES)
				continue;
			sample(out, "dropped", M_COUNTER, v->procs[i].p);
			fprintf(out, ",reason=\"%s\"} %" PRIu64 "\n", describe__loss(k),
				v->procs[i].p->loss[k]);
		}
	family(out, om, "dropped_alloc_bytes", M_COUNTER,
	       "Bytes of allocations whose records were lost (outermost calls of known size).");
	for (i = 0; i < v->nr_procs; i++) {
		if (!v->procs[i].reported)
			continue;
		sample(out, "dropped_alloc_bytes", M_COUNTER, v->procs[i].p);
		fprintf(out, "} %" PRIu64 "\n", v->procs[i].p->loss[GL_STAT_LOST_ALLOC_BYTES]);
	}
	family(out, om, "approximate", M_GAUGE,
	       "1 when losses make this process's numbers approximate.");
	for (i = 0; i < v->nr_procs; i++) {
		if (!v->procs[i].reported)
			continue;
		sample(out, "approximate", M_GAUGE, v->procs[i].p);
		fprintf(out, "} %d\n",
			!v->procs[i].uncertainty_known || v->procs[i].uncertainty.approximate);
	}
}

int prometheus__write(FILE *out, const struct tracker *t, const struct verdict *v, bool om)
{
	static const struct {
		const char *name, *help;
	} rowm[] = {
	    {"live_bytes", "Bytes of traced allocations still live (all classes)."},
	    {"live_allocations", "Traced allocations still live."},
	    {"persistent_bytes", "Live bytes a persistent rule says are meant to stay."},
	    {"pending_bytes", "Bytes freed asynchronously whose stream has not completed."},
	    {"suspect_bytes", "Live bytes at call sites whose memory grows step over step."},
	    {"growth_bytes_per_second", "Growth rate of the growing call sites (bytes/s)."},
	    {"growth_bytes_per_step", "Growth of the growing call sites per step (bytes)."},
	};
	struct metric_rows *rows = calloc(v->nr_procs ? v->nr_procs : 1, sizeof(*rows));
	size_t i, k;

	if (!rows)
		return -ENOMEM;
	for (i = 0; i < v->nr_procs; i++)
		if (v->procs[i].reported)
			metric_rows(t, &v->procs[i], &rows[i]);
	family(out, om, "build", M_INFO, "gpuleak's version.");
	fprintf(out, "gpuleak_build_info{version=\"%s\"} 1\n", GPULEAK_VERSION);
	family(out, om, "process", M_INFO, "A traced process: its name, parent and state.");
	for (i = 0; i < v->nr_procs; i++) {
		if (!v->procs[i].reported)
			continue;
		sample(out, "process", M_INFO, v->procs[i].p);
		fprintf(out, ",ppid=\"%d\",state=\"%s\"} 1\n", v->procs[i].p->ppid,
			describe__proc_state(v->procs[i].p));
	}
	for (k = 0; k < sizeof(rowm) / sizeof(rowm[0]); k++)
		row_metric(out, om, v, rows, rowm[k].name, rowm[k].help, (int)k);
	proc_metrics(out, om, v);
	family(out, om, "records", M_COUNTER, "Records analysed (all processes).");
	fprintf(out, "gpuleak_records_total %" PRIu64 "\n", t->records);
	family(out, om, "undecodable_records", M_COUNTER, "Records skipped as undecodable.");
	fprintf(out, "gpuleak_undecodable_records_total %" PRIu64 "\n", t->bad_records);
	if (om)
		fputs("# EOF\n", out);
	free(rows);
	return 0;
}
