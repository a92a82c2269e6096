// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "engine/cost.h"
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

		/* Memory, and PyTorch's blocks (rows of their own, api="pytorch:malloc"). */
		if (!site__of(s, pv->p) || !(s->counts || s->judged) ||
		    (!s->live_count && !s->pending_count))
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

/* What the exposition is of, and where it goes. */
struct expo {
	FILE *out;
	bool om;
	const struct tracker *t;
};

struct family;

/*
 * The samples of family f: of one process (pv and its rows), or, for a family of the
 * whole session, of none (pv NULL).
 */
typedef void samples_fn(const struct expo *x, const struct family *f, const struct proc_verdict *pv,
			const struct metric_rows *rows);

struct family {
	const char *name; /* after gpuleak_, without _total or _info */
	enum mtype type;
	const char *help;
	bool per_process; /* samples for each reported process, or one set for the session */
	samples_fn *samples;
	/* What the generic samplers read: a number of a process (or of the session), or a
	 * member of struct metric_row (a double when row_real). */
	uint64_t (*value)(const struct expo *x, const struct proc_verdict *pv);
	size_t row_off;
	bool row_real;
};

static const char *suffix(enum mtype type)
{
	return type == M_COUNTER ? "_total" : type == M_INFO ? "_info" : "";
}

/* A label value, quoted: backslash, double quote and newline escaped (both formats). */
static void label(FILE *out, const char *s)
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
 * A family's HELP and TYPE. OpenMetrics names a counter family without _total and has an
 * info type; Prometheus 0.0.4 names the family as its samples and knows neither.
 */
static void header(const struct expo *x, const struct family *f)
{
	static const char *const tnames[] = {"gauge", "counter", "info"};

	if (x->om)
		fprintf(x->out, "# TYPE gpuleak_%s %s\n# HELP gpuleak_%s %s\n", f->name,
			tnames[f->type], f->name, f->help);
	else
		fprintf(x->out, "# HELP gpuleak_%s%s %s\n# TYPE gpuleak_%s%s %s\n", f->name,
			suffix(f->type), f->help, f->name, suffix(f->type),
			f->type == M_COUNTER ? "counter" : "gauge");
}

/* The start of a sample: its name, and the labels every sample of a process has. */
static void sample(const struct expo *x, const struct family *f, const struct proc_verdict *pv)
{
	fprintf(x->out, "gpuleak_%s%s", f->name, suffix(f->type));
	if (!pv)
		return;
	fprintf(x->out, "{pid=\"%d\",comm=", pv->p->pid);
	label(x->out, pv->p->comm);
}

/* ---- the samplers ---- */

/* One number: of a process (the labels closed before it), or of the session. */
static void one_value(const struct expo *x, const struct family *f, const struct proc_verdict *pv,
		      const struct metric_rows *rows)
{
	(void)rows;
	sample(x, f, pv);
	fprintf(x->out, "%s %" PRIu64 "\n", pv ? "}" : "", f->value(x, pv));
}

/* A number of each of the process's rows (API, device). */
static void row_values(const struct expo *x, const struct family *f, const struct proc_verdict *pv,
		       const struct metric_rows *rows)
{
	size_t j;

	for (j = 0; j < rows->n; j++) {
		const char *m = (const char *)&rows->v[j] + f->row_off;

		sample(x, f, pv);
		fprintf(x->out, ",api=\"%s\",device=", cat_api_name(rows->v[j].api));
		label(x->out, rows->v[j].dev);
		if (f->row_real)
			fprintf(x->out, "} %.1f\n", *(const double *)m);
		else
			fprintf(x->out, "} %" PRIu64 "\n", *(const uint64_t *)m);
	}
}

static void build_info(const struct expo *x, const struct family *f, const struct proc_verdict *pv,
		       const struct metric_rows *rows)
{
	(void)pv;
	(void)rows;
	sample(x, f, NULL);
	fprintf(x->out, "{version=\"%s\"} 1\n", GPULEAK_VERSION);
}

static void process_info(const struct expo *x, const struct family *f,
			 const struct proc_verdict *pv, const struct metric_rows *rows)
{
	(void)rows;
	sample(x, f, pv);
	fprintf(x->out, ",ppid=\"%d\",state=\"%s\"} 1\n", pv->p->ppid, describe__proc_state(pv->p));
}

static void time_to_oom(const struct expo *x, const struct family *f, const struct proc_verdict *pv,
			const struct metric_rows *rows)
{
	const struct projection *pr = &pv->proj;

	(void)rows;
	if (!pr->known)
		return;
	sample(x, f, pv);
	fprintf(x->out, ",device=\"%s%d\"} %.1f\n", pr->webgpu ? "wgpu#" : "",
		pr->webgpu ? pr->device + 1 : pr->device, pr->seconds_to_oom);
}

static void findings(const struct expo *x, const struct family *f, const struct proc_verdict *pv,
		     const struct metric_rows *rows)
{
	const struct {
		const char *kind;
		uint64_t n;
	} v[] = {
	    {"leak_sites", pv->sites[VERDICT_LEAKS].n},
	    {"growth_leaks", pv->nr_growth},
	    {"rule_violations", pv->p->nr_viols},
	    {"rank_skew", pv->skewed},
	};
	size_t i;

	(void)rows;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sample(x, f, pv);
		fprintf(x->out, ",kind=\"%s\"} %" PRIu64 "\n", v[i].kind, v[i].n);
	}
}

/* PyTorch's caching allocator, one bucket per family (f->row_off: which), by device. */
static void torch_bucket(const struct expo *x, const struct family *f,
			 const struct proc_verdict *pv, const struct metric_rows *rows)
{
	size_t i;

	(void)rows;
	for (i = 0; pv->torch.on && i < pv->torch.nr_dev; i++) {
		const struct torch_device *d = &pv->torch.dev[i];
		const uint64_t v[] = {d->allocated, d->reserved, d->cached, d->outside};

		sample(x, f, pv);
		fprintf(x->out, ",device=\"%d\"} %" PRIu64 "\n", d->device, v[f->row_off]);
	}
}

/* The losses by reason; the bytes of lost allocations are a family of their own. */
static void dropped(const struct expo *x, const struct family *f, const struct proc_verdict *pv,
		    const struct metric_rows *rows)
{
	int k;

	(void)rows;
	for (k = 0; k < GL_STAT_MAX; k++) {
		if (!describe__loss(k) || k == GL_STAT_LOST_ALLOC_BYTES)
			continue;
		sample(x, f, pv);
		fprintf(x->out, ",reason=\"%s\"} %" PRIu64 "\n", describe__loss(k), pv->p->loss[k]);
	}
}

/* What tracing costs the process (engine/cost.h): f->row_off says which figure. */
enum { COST_FRACTION, COST_TRAPS, COST_BPF_S, COST_LEVEL };

static void tracing_cost(const struct expo *x, const struct family *f,
			 const struct proc_verdict *pv, const struct metric_rows *rows)
{
	static const char *const kinds[GL_TRAP_MAX] = {"entry", "return", "usdt"};
	struct cost_figures c;
	unsigned int k;

	(void)rows;
	cost__figures(pv->p, &c);
	if (f->row_off == COST_TRAPS) {
		for (k = 0; k < GL_TRAP_MAX; k++) {
			sample(x, f, pv);
			fprintf(x->out, ",kind=\"%s\"} %" PRIu64 "\n", kinds[k], c.traps[k]);
		}
		return;
	}
	if (!c.measured)
		return;
	sample(x, f, pv);
	if (f->row_off == COST_FRACTION)
		fprintf(x->out, "} %.6f\n", c.cpu_fraction);
	else if (f->row_off == COST_BPF_S)
		fprintf(x->out, "} %.6f\n", (double)c.bpf_ns / 1e9);
	else
		fprintf(x->out, "} %u\n", c.level);
}

/* ---- the numbers ---- */

static uint64_t allocations(const struct expo *x, const struct proc_verdict *pv)
{
	(void)x;
	return pv->p->c.allocs;
}

static uint64_t frees(const struct expo *x, const struct proc_verdict *pv)
{
	(void)x;
	return pv->p->c.frees;
}

static uint64_t failed_calls(const struct expo *x, const struct proc_verdict *pv)
{
	(void)x;
	return pv->p->c.failed_calls;
}

static uint64_t dropped_alloc_bytes(const struct expo *x, const struct proc_verdict *pv)
{
	(void)x;
	return pv->p->loss[GL_STAT_LOST_ALLOC_BYTES];
}

static uint64_t approximate(const struct expo *x, const struct proc_verdict *pv)
{
	(void)x;
	return !pv->uncertainty_known || pv->uncertainty.approximate;
}

static uint64_t pool_reserve_bytes(const struct expo *x, const struct proc_verdict *pv)
{
	(void)x;
	return pv->pool_reserve;
}

static uint64_t records(const struct expo *x, const struct proc_verdict *pv)
{
	(void)pv;
	return x->t->records;
}

static uint64_t undecodable_records(const struct expo *x, const struct proc_verdict *pv)
{
	(void)pv;
	return x->t->bad_records;
}

/* A family whose samples its own sampler writes: of each process, or of the session. */
#define OF_PROCESS(n, t, fn, h)                                                                    \
	{                                                                                          \
		.name = n, .type = t, .help = h, .per_process = true, .samples = fn                \
	}
#define OF_SESSION(n, t, fn, h)                                                                    \
	{                                                                                          \
		.name = n, .type = t, .help = h, .samples = fn                                     \
	}
/* One number per process, per row of a process, or for the session. */
#define PROC_VALUE(n, t, h)                                                                        \
	{                                                                                          \
		.name = #n, .type = t, .help = h, .per_process = true, .samples = one_value,       \
		.value = n                                                                         \
	}
#define ROW_VALUE(n, member, real, h)                                                              \
	{                                                                                          \
		.name = n, .type = M_GAUGE, .help = h, .per_process = true, .samples = row_values, \
		.row_off = offsetof(struct metric_row, member), .row_real = real                   \
	}
#define SESSION_VALUE(n, h)                                                                        \
	{                                                                                          \
		.name = #n, .type = M_COUNTER, .help = h, .samples = one_value, .value = n         \
	}

/* A bucket of PyTorch's caching allocator: which (0..3) of torch_bucket's values. */
#define TORCH_BUCKET(n, which, h)                                                                  \
	{                                                                                          \
		.name = n, .type = M_GAUGE, .help = h, .per_process = true,                        \
		.samples = torch_bucket, .row_off = which                                          \
	}

#define COST_VALUE(n, t, which, h)                                                                 \
	{                                                                                          \
		.name = n, .type = t, .help = h, .per_process = true, .samples = tracing_cost,     \
		.row_off = which                                                                   \
	}

/* The families, in the order they are exposed. */
static const struct family families[] = {
    OF_SESSION("build", M_INFO, build_info, "gpuleak's version."),
    OF_PROCESS("process", M_INFO, process_info, "A traced process: its name, parent and state."),
    ROW_VALUE("live_bytes", live, false, "Bytes of traced allocations still live (all classes)."),
    ROW_VALUE("live_allocations", count, false, "Traced allocations still live."),
    ROW_VALUE("persistent_bytes", persistent, false,
	      "Live bytes a persistent rule says are meant to stay."),
    ROW_VALUE("pending_bytes", pending, false,
	      "Bytes freed asynchronously whose stream has not completed."),
    ROW_VALUE("suspect_bytes", suspect, false,
	      "Live bytes at call sites whose memory grows step over step."),
    ROW_VALUE("growth_bytes_per_second", growth_per_s, true,
	      "Growth rate of the growing call sites (bytes/s)."),
    ROW_VALUE("growth_bytes_per_step", growth_per_step, true,
	      "Growth of the growing call sites per step (bytes)."),
    PROC_VALUE(pool_reserve_bytes, M_GAUGE,
	       "Bytes freed into memory pools and kept there (stream-ordered and graph pools)."),
    OF_PROCESS("time_to_oom_seconds", M_GAUGE, time_to_oom,
	       "Projected time until the most pressed device runs out, at the current growth."),
    OF_PROCESS("findings", M_GAUGE, findings,
	       "What the verdict would say now: call sites leaking, growing, rules violated."),
    TORCH_BUCKET("pytorch_allocated_bytes", 0,
		 "PyTorch caching allocator: bytes of live blocks (tensors), per device."),
    TORCH_BUCKET(
	"pytorch_reserved_bytes", 1,
	"PyTorch caching allocator: bytes of the segments holding its blocks, per device."),
    TORCH_BUCKET("pytorch_cached_bytes", 2,
		 "PyTorch caching allocator: reserved minus allocated (its cache), per device."),
    TORCH_BUCKET("pytorch_outside_bytes", 3,
		 "Device memory of the process outside PyTorch's segments (NCCL, other "
		 "libraries, raw_alloc segments), per device."),
    PROC_VALUE(allocations, M_COUNTER, "Traced allocations made."),
    PROC_VALUE(frees, M_COUNTER, "Traced frees."),
    PROC_VALUE(failed_calls, M_COUNTER, "Traced calls that returned an error."),
    OF_PROCESS("dropped", M_COUNTER, dropped,
	       "Events lost or not tracked in the kernel, by reason (the verdict's losses)."),
    PROC_VALUE(dropped_alloc_bytes, M_COUNTER,
	       "Bytes of allocations whose records were lost (outermost calls of known size)."),
    PROC_VALUE(approximate, M_GAUGE, "1 when losses make this process's numbers approximate."),
    COST_VALUE(
	"tracing_cpu_fraction", M_GAUGE, COST_FRACTION,
	"Share of the process's CPU time since attach that went to tracing: its traps at "
	"this machine's calibrated cost plus the BPF programs' run time (docs/overhead.md)."),
    COST_VALUE("traps", M_COUNTER, COST_TRAPS,
	       "Probe traps the process took, by kind (entry, return, usdt)."),
    COST_VALUE("tracing_bpf_seconds", M_COUNTER, COST_BPF_S,
	       "BPF programs' run time charged to the process (seconds)."),
    COST_VALUE("tracing_level", M_GAUGE, COST_LEVEL,
	       "--max-overhead's level: 0 everything, 1 no Python frames, 2 no DWARF stack "
	       "copies, 3 call sites only."),
    SESSION_VALUE(records, "Records analysed (all processes)."),
    SESSION_VALUE(undecodable_records, "Records skipped as undecodable."),
};

int prometheus__write(FILE *out, const struct tracker *t, const struct verdict *v, bool om)
{
	struct metric_rows *rows = calloc(v->nr_procs ? v->nr_procs : 1, sizeof(*rows));
	const struct expo x = {out, om, t};
	size_t i, k;

	if (!rows)
		return -ENOMEM;
	for (i = 0; i < v->nr_procs; i++)
		if (v->procs[i].reported)
			metric_rows(t, &v->procs[i], &rows[i]);
	for (k = 0; k < sizeof(families) / sizeof(families[0]); k++) {
		const struct family *f = &families[k];

		header(&x, f);
		if (!f->per_process)
			f->samples(&x, f, NULL, NULL);
		for (i = 0; f->per_process && i < v->nr_procs; i++)
			if (v->procs[i].reported)
				f->samples(&x, f, &v->procs[i], &rows[i]);
	}
	if (om)
		fputs("# EOF\n", out);
	free(rows);
	return 0;
}
