// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "output/graph.h"
#include "lib/hmap.h"
#include "lib/json.h"
#include "probe/catalog.h"
#include "output/report.h"
#include "engine/rules.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"
#include "engine/timeline.h"
#include "engine/tracker.h"

const char *fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)bytes;
	unsigned int u = 0;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return buf;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, units[u]);
	return buf;
}

static double secs(const struct report *r, uint64_t ts_ns)
{
	return ts_ns > r->t0_ns ? (double)(ts_ns - r->t0_ns) / 1e9 : 0.0;
}

static const char *site_name(struct report *r, const struct site *s)
{
	return s->caller ? symbolizer__name(r->sym, s->pid, s->caller) : "?";
}

static enum cat_mem site_mem(const struct site *s)
{
	const struct cat_api *a = cat_by_api(s->api);

	return a ? a->mem : MEM_NONE;
}

/* Which sites a listing shows and by what it sorts them. */
enum site_sel {
	SEL_MEMORY,   /* live memory not under another allocation: what leaks */
	SEL_RETAINED, /* live memory a persistent rule says is meant to stay, or init's */
	SEL_IGNORED,  /* live memory an ignore rule keeps out of verdicts */
	SEL_PENDING,  /* async frees waiting for their stream */
	SEL_FAILED,   /* calls that returned an error */
	SEL_VA,	      /* reserved virtual ranges: address space, no bytes */
	SEL_REG,      /* registrations of memory allocated elsewhere */
};

static const struct tracker *sel_t;

/* A persistent class that must be gone at session end leaks when it is not. */
static bool must_release(const struct site *s)
{
	return s->cls == CLS_PERSISTENT && sel_t->rules &&
	       sel_t->rules->v[s->rule - 1].release_at_end;
}

static uint64_t key_of(const struct site *s, enum site_sel k);

bool report__site_leaks(const struct tracker *t, const struct site *s)
{
	sel_t = t;
	return key_of(s, SEL_MEMORY) != 0;
}

const char *report__site_name(struct report *r, const struct site *s)
{
	return site_name(r, s);
}

static uint64_t key_of(const struct site *s, enum site_sel k)
{
	uint64_t live = s->live_bytes ? s->live_bytes : s->live_count;

	switch (k) {
	case SEL_MEMORY:
		if (!s->counts || (s->cls != CLS_NONE && !must_release(s)))
			return 0;
		return live;
	case SEL_RETAINED:
		if (!s->counts || must_release(s))
			return 0;
		return s->cls == CLS_PERSISTENT || s->cls == CLS_INIT ? live : 0;
	case SEL_IGNORED:
		return s->counts && s->cls == CLS_IGNORED ? live : 0;
	case SEL_PENDING:
		if (s->owner_kind == OWNER_LAYER)
			return 0;
		return s->pending_bytes ? s->pending_bytes : s->pending_count;
	case SEL_FAILED:
		return s->failed;
	case SEL_VA:
		return s->owner_kind != OWNER_LAYER && site_mem(s) == MEM_VA ? s->live_count : 0;
	case SEL_REG:
		return site_mem(s) == MEM_REG ? s->live_count : 0;
	}
	return 0;
}

static const struct tracker *sort_t;
static enum site_sel sort_k;

static int cmp_sites(const void *a, const void *b)
{
	const struct site *x = &sort_t->sites[*(const uint32_t *)a];
	const struct site *y = &sort_t->sites[*(const uint32_t *)b];
	uint64_t kx = key_of(x, sort_k), ky = key_of(y, sort_k);

	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (x->live_bytes != y->live_bytes)
		return x->live_bytes > y->live_bytes ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Indices of pid's sites selected by k, largest first. Caller frees. */
static uint32_t *sorted_sites(const struct tracker *t, pid_t pid, enum site_sel k, size_t *n)
{
	uint32_t *v = malloc((t->nr_sites ? t->nr_sites : 1) * sizeof(*v));
	size_t i;

	*n = 0;
	if (!v)
		return NULL;
	sel_t = t;
	for (i = 0; i < t->nr_sites; i++)
		if (t->sites[i].pid == pid && key_of(&t->sites[i], k))
			v[(*n)++] = i;
	sort_t = t;
	sort_k = k;
	qsort(v, *n, sizeof(*v), cmp_sites);
	return v;
}

struct api_sum {
	uint16_t api;
	int16_t device;
	uint64_t owner; /* a WebGPU device's handle, 0 otherwise */
	uint32_t site;	/* one site of the row, to name its owner */
	uint64_t bytes, count, pending;
};

/* Live memory per (API, device) of one process. Returns the number of rows. */
static size_t sum_by_api(const struct tracker *t, pid_t pid, struct api_sum *rows, size_t max)
{
	size_t i, j, n = 0;

	for (i = 0; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];

		if (s->pid != pid || !s->counts || (!s->live_count && !s->pending_count))
			continue;
		uint64_t owner = s->owner_kind == OWNER_DEVICE ? s->owner : 0;

		for (j = 0; j < n; j++)
			if (rows[j].api == s->api && rows[j].device == s->device &&
			    rows[j].owner == owner)
				break;
		if (j == n) {
			if (n == max)
				continue;
			rows[n++] =
			    (struct api_sum){s->api, s->device, owner, (uint32_t)i, 0, 0, 0};
		}
		rows[j].bytes += s->live_bytes;
		rows[j].count += s->live_count;
		rows[j].pending += s->pending_bytes;
	}
	return n;
}

/* An owner object (a WebGPU device) of pid, or NULL. */
static const struct tobj *owner_obj(const struct tracker *t, pid_t pid, const struct site *s)
{
	struct tproc *p = tracker__proc((struct tracker *)t, pid);

	return p && s->owner_kind == OWNER_DEVICE ? tproc__obj(p, SPACE_WGPU, s->owner) : NULL;
}

static void dev_str(int16_t device, char *buf, size_t len)
{
	if (device < 0)
		snprintf(buf, len, "host");
	else
		snprintf(buf, len, "%d", device);
}

/* The DEV column: a CUDA ordinal, host, or a WebGPU device as wgpu#N (order of first sight). */
static void site_dev_str(const struct tracker *t, const struct site *s, char *buf, size_t len)
{
	const struct tobj *o = owner_obj(t, s->pid, s);

	if (s->owner_kind == OWNER_DEVICE)
		snprintf(buf, len, "wgpu#%u", o ? o->ordinal : 0);
	else
		dev_str(s->device, buf, len);
}

/*
 * References still held on a site's live objects, by the AddRef site that took them: what
 * keeps an unbalanced WebGPU object alive.
 */
struct addrefs {
	unsigned int n;
	uint32_t site[TOBJ_ADDREF_SITES];
	uint64_t count[TOBJ_ADDREF_SITES];
};

static void site_addrefs(const struct tracker *t, const struct site *s, uint32_t idx,
			 struct addrefs *out)
{
	struct tproc *p = tracker__proc((struct tracker *)t, s->pid);
	const struct hmap_slot *sl;
	size_t it = 0;
	unsigned int i, j;

	memset(out, 0, sizeof(*out));
	if (!p || !p->objs.n)
		return;
	while (hmap__next(&p->objs, &it, &sl)) {
		const struct tobj *o = (const struct tobj *)(uintptr_t)sl->val;
		const struct alloc *a;

		if (o->refs <= 0 || !o->nr_addref || (o->flags & TOBJ_OWNER))
			continue;
		a = tracker__alloc(p, o->space, o->handle);
		if (!a || tracker__alloc_site(t, a) != idx)
			continue;
		for (i = 0; i < o->nr_addref; i++) {
			for (j = 0; j < out->n; j++)
				if (out->site[j] == o->addref_site[i])
					break;
			if (j == out->n) {
				if (out->n == TOBJ_ADDREF_SITES)
					j = TOBJ_ADDREF_SITES - 1;
				else
					out->site[out->n++] = o->addref_site[i];
			}
			out->count[j] += o->addref_count[i];
		}
	}
}

static const char *owner_kind_name(uint8_t k)
{
	switch (k) {
	case OWNER_CTX:
		return "context";
	case OWNER_COMM:
		return "communicator";
	case OWNER_DEVICE:
		return "device";
	case OWNER_LAYER:
		return "layer";
	default:
		return NULL;
	}
}

static bool reported(const struct tproc *p);

void report__interval(struct report *r, uint64_t now_ns)
{
	struct tracker *t = r->t;
	size_t i, j;

	for (i = 0; i < t->nr_procs; i++) {
		struct tproc *p = t->procs[i];
		struct api_sum rows[32];
		char b1[32], b2[32], dev[16];
		size_t nrows, nsites;
		uint32_t *top;

		if ((p->exited && p->last_ts_ns < now_ns - (uint64_t)1e9) || !reported(p))
			continue;
		nrows = sum_by_api(t, p->pid, rows, 32);
		fprintf(r->out,
			"[%7.2fs] pid %d: live %s in %" PRIu64 ", pending %s; %" PRIu64
			" allocs, %" PRIu64 " frees, %" PRIu64 " failed\n",
			secs(r, now_ns), p->pid, fmt_bytes(p->live_bytes, b1, sizeof(b1)),
			p->live_count, fmt_bytes(p->pending_bytes, b2, sizeof(b2)), p->c.allocs,
			p->c.frees, p->c.failed_calls);
		for (j = 0; j < nrows; j++) {
			site_dev_str(t, &t->sites[rows[j].site], dev, sizeof(dev));
			fprintf(r->out, "    %-28s dev %-4s %10s %7" PRIu64 "\n",
				cat_api_name(rows[j].api), dev,
				fmt_bytes(rows[j].bytes, b1, sizeof(b1)), rows[j].count);
		}
		top = sorted_sites(t, p->pid, SEL_MEMORY, &nsites);
		for (j = 0; top && j < nsites && (int)j < r->top; j++) {
			const struct site *s = &t->sites[top[j]];

			fprintf(r->out, "    top %10s %5" PRIu64 "  %s\n",
				fmt_bytes(s->live_bytes, b1, sizeof(b1)), s->live_count,
				site_name(r, s));
		}
		if (r->json) {
			fprintf(
			    r->json,
			    "{\"type\":\"interval\",\"t_s\":%.3f,\"pid\":%d,\"live_bytes\":%" PRIu64
			    ",\"live_count\":%" PRIu64 ",\"pending_bytes\":%" PRIu64
			    ",\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64
			    ",\"failed_calls\":%" PRIu64 ",\"by_api\":[",
			    secs(r, now_ns), p->pid, p->live_bytes, p->live_count, p->pending_bytes,
			    p->c.allocs, p->c.frees, p->c.failed_calls);
			for (j = 0; j < nrows; j++)
				fprintf(r->json,
					"%s{\"api\":\"%s\",\"device\":%d,\"bytes\":%" PRIu64
					",\"count\":%" PRIu64 "}",
					j ? "," : "", cat_api_name(rows[j].api), rows[j].device,
					rows[j].bytes, rows[j].count);
			fputs("],\"top_sites\":[", r->json);
			for (j = 0; top && j < nsites && (int)j < r->top; j++) {
				const struct site *s = &t->sites[top[j]];

				fprintf(r->json, "%s{\"api\":\"%s\",\"site\":", j ? "," : "",
					cat_api_name(s->api));
				json_str(r->json, site_name(r, s));
				fprintf(r->json, ",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 "}",
					s->live_bytes, s->live_count);
			}
			fputs("]}\n", r->json);
		}
		free(top);
	}
	fflush(r->out);
	if (r->json)
		fflush(r->json);
}

static const char *proc_state(const struct tproc *p)
{
	return p->execed     ? "exec"
	       : p->exited   ? "exited"
	       : p->ended    ? "ended"
	       : p->detached ? "detached"
			     : "running";
}

/*
 * Processes in the report: those attached, and any other that did something (a followed
 * child is announced at its first traced call; a record from one never announced still
 * counts). Shells and helpers a server forks, which call nothing traced, stay out.
 */
static bool reported(const struct tproc *p)
{
	return p->attached || p->c.allocs || p->c.frees || p->c.failed_calls || p->live_count ||
	       tproc__dropped(p);
}

/* Lower layers of the allocations at site idx: other sites whose owner it is. */
static void print_layers(struct report *r, uint32_t idx)
{
	const struct tracker *t = r->t;
	const struct site *s = &t->sites[idx];
	char b[32];
	size_t i;

	if (s->layer_count)
		fprintf(r->out, "  %10s %6" PRIu64 "    \\_ %s (same memory)\n", "", s->layer_count,
			cat_api_name(s->layer_api));
	for (i = 0; i < t->nr_sites; i++) {
		const struct site *l = &t->sites[i];

		if (l->owner_kind != OWNER_LAYER || l->owner != idx || !l->live_count)
			continue;
		fprintf(r->out, "  %10s %6" PRIu64 "    \\_ %s%s\n",
			fmt_bytes(l->live_bytes, b, sizeof(b)), l->live_count, cat_api_name(l->api),
			site_mem(l) == MEM_VA ? " (address space)" : "");
	}
}

/* One row of a site table (live, pending or failed). */
static void print_site_row(struct report *r, uint32_t idx, enum site_sel k, bool labels)
{
	const struct site *s = &r->t->sites[idx];
	const char *ok = owner_kind_name(s->owner_kind);
	char b[32], dev[16];

	if (k == SEL_FAILED) {
		const char *en = cat_error_name(s->api, s->last_err);

		fprintf(r->out, "  %8" PRIu64 "  %-26s %5d  %s%s%s\n", s->failed,
			cat_api_name(s->api), s->last_err, site_name(r, s), en ? ": " : "",
			en ? en : "");
		return;
	}
	site_dev_str(r->t, s, dev, sizeof(dev));
	fprintf(r->out, "  %10s %6" PRIu64 "  %-26s ",
		fmt_bytes(k == SEL_PENDING ? s->pending_bytes : s->live_bytes, b, sizeof(b)),
		k == SEL_PENDING ? s->pending_count : s->live_count, cat_api_name(s->api));
	if (labels)
		fprintf(r->out, "%-16s %s", s->label ? tracker__label(r->t, s->label) : "-",
			site_name(r, s));
	else
		fprintf(r->out, "%4s  %s", dev, site_name(r, s));
	if (ok && s->owner_kind != OWNER_LAYER && s->owner_kind != OWNER_DEVICE)
		fprintf(r->out, " [%s 0x%" PRIx64 "]", ok, s->owner);
	if (s->relmapped_count)
		fprintf(r->out, " (%" PRIu64 " released while mapped)", s->relmapped_count);
	if (k == SEL_RETAINED && s->cls == CLS_INIT)
		fputs(" (before the first step)", r->out);
	if (s->unsized)
		fprintf(r->out, " (%" PRIu64 " of unknown size: texture format)", s->unsized);
	fputc('\n', r->out);
	if (k == SEL_MEMORY || k == SEL_RETAINED) {
		struct addrefs ar;
		unsigned int i;

		print_layers(r, idx);
		site_addrefs(r->t, s, idx, &ar);
		for (i = 0; i < ar.n; i++) {
			const struct site *as = &r->t->sites[ar.site[i]];

			fprintf(r->out,
				"  %17s  %" PRIu64 " reference%s added by %s at %s, still held\n",
				"", ar.count[i], ar.count[i] == 1 ? "" : "s", cat_api_name(as->api),
				site_name(r, as));
		}
	}
}

/*
 * A site table. Objects a WebGPU device owns come after the rest, one block per device
 * (in the order of its largest site), with their labels: the allocation graph device ->
 * resources.
 */
static void print_sites(struct report *r, const struct tproc *p, enum site_sel k, const char *title)
{
	const struct tracker *t = r->t;
	uint32_t *v;
	size_t n, j, i;
	char b[32];

	v = sorted_sites(t, p->pid, k, &n);
	if (!v || !n) {
		free(v);
		return;
	}
	fprintf(r->out, "%s\n", title);
	if (k == SEL_FAILED)
		fprintf(r->out, "  %8s  %-26s %5s  %s\n", "CALLS", "API", "ERROR", "SITE");
	else
		fprintf(r->out, "  %10s %6s  %-26s %4s  %s\n", "BYTES", "COUNT", "API", "DEV",
			"SITE");
	for (j = 0; j < n; j++)
		if (k == SEL_FAILED || t->sites[v[j]].owner_kind != OWNER_DEVICE)
			print_site_row(r, v[j], k, false);
	for (j = 0; k != SEL_FAILED && j < n; j++) {
		const struct site *s = &t->sites[v[j]];
		const struct tobj *o;
		uint64_t bytes = 0, count = 0;
		bool seen = false;

		if (s->owner_kind != OWNER_DEVICE)
			continue;
		for (i = 0; i < j && !seen; i++)
			seen = t->sites[v[i]].owner_kind == OWNER_DEVICE &&
			       t->sites[v[i]].owner == s->owner;
		if (seen)
			continue;
		for (i = j; i < n; i++)
			if (t->sites[v[i]].owner_kind == OWNER_DEVICE &&
			    t->sites[v[i]].owner == s->owner) {
				bytes += k == SEL_PENDING ? t->sites[v[i]].pending_bytes
							  : t->sites[v[i]].live_bytes;
				count += k == SEL_PENDING ? t->sites[v[i]].pending_count
							  : t->sites[v[i]].live_count;
			}
		o = owner_obj(t, p->pid, s);
		fprintf(r->out, "  WebGPU device wgpu#%u", o ? o->ordinal : 0);
		if (o && o->label)
			fprintf(r->out, " \"%s\"", tracker__label(t, o->label));
		fprintf(r->out, " (0x%" PRIx64 "%s): %s in %" PRIu64 " objects\n", s->owner,
			o && (o->flags & TOBJ_DESTROYED) ? ", destroyed" : "",
			fmt_bytes(bytes, b, sizeof(b)), count);
		fprintf(r->out, "  %10s %6s  %-26s %-16s %s\n", "BYTES", "COUNT", "API", "LABEL",
			"SITE");
		for (i = j; i < n; i++)
			if (t->sites[v[i]].owner_kind == OWNER_DEVICE &&
			    t->sites[v[i]].owner == s->owner)
				print_site_row(r, v[i], k, true);
	}
	free(v);
}

static void json_owner(struct report *r, const struct site *s)
{
	const char *ok = owner_kind_name(s->owner_kind);
	const struct tobj *o;

	if (!ok || s->owner_kind == OWNER_LAYER) {
		fputs(",\"owner\":null", r->json);
		return;
	}
	fprintf(r->json, ",\"owner\":{\"kind\":\"%s\",\"handle\":\"0x%" PRIx64 "\"", ok, s->owner);
	if (s->owner_kind == OWNER_DEVICE) {
		o = owner_obj(r->t, s->pid, s);
		fprintf(r->json, ",\"name\":\"wgpu#%u\",\"label\":", o ? o->ordinal : 0);
		if (o && o->label)
			json_str(r->json, tracker__label(r->t, o->label));
		else
			fputs("null", r->json);
	}
	fputc('}', r->json);
}

static void json_layers(struct report *r, uint32_t idx)
{
	const struct tracker *t = r->t;
	const struct site *s = &t->sites[idx];
	bool first = true;
	size_t i;

	fputs(",\"layers\":[", r->json);
	if (s->layer_count) {
		fprintf(r->json, "{\"api\":\"%s\",\"same_memory\":true,\"count\":%" PRIu64 "}",
			cat_api_name(s->layer_api), s->layer_count);
		first = false;
	}
	for (i = 0; i < t->nr_sites; i++) {
		const struct site *l = &t->sites[i];

		if (l->owner_kind != OWNER_LAYER || l->owner != idx || !l->live_count)
			continue;
		fprintf(
		    r->json,
		    "%s{\"api\":\"%s\",\"same_memory\":false,\"memory\":\"%s\",\"bytes\":%" PRIu64
		    ",\"count\":%" PRIu64 "}",
		    first ? "" : ",", cat_api_name(l->api), cat_mem_name(site_mem(l)),
		    l->live_bytes, l->live_count);
		first = false;
	}
	fputc(']', r->json);
}

/* Growth leaks of the process being reported, for the leak entries that have one. */
static const struct growth *cur_growth;
static size_t cur_nr_growth;

static const struct growth *growth_of(uint32_t site)
{
	size_t i;

	for (i = 0; i < cur_nr_growth; i++)
		if (cur_growth[i].site == site)
			return &cur_growth[i];
	return NULL;
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
	if (si && si->func)
		json_str(r->json, si->func);
	else
		fputs("null", r->json);
	fputs(",\"module\":", r->json);
	if (si && si->module)
		json_str(r->json, si->module);
	else
		fputs("null", r->json);
	fputc('}', r->json);
}

static uint64_t sstack_bytes(const struct site_stack *ss, enum site_sel k)
{
	return k == SEL_PENDING ? ss->pending_bytes : ss->live_bytes;
}

static uint64_t sstack_count(const struct site_stack *ss, enum site_sel k)
{
	return k == SEL_PENDING ? ss->pending_count : ss->live_count;
}

/*
 * The user stacks the site's allocations (live, or pending for SEL_PENDING) came from,
 * largest first, each innermost frame (the call site) first: how the program got to the
 * site. Empty without stacks and for failed calls.
 */
static void json_stacks(struct report *r, uint32_t idx, enum site_sel k)
{
	const struct tracker *t = r->t;
	const struct site *s = &t->sites[idx];
	uint32_t v[64], i, n = 0, j;

	fputs(",\"stacks\":[", r->json);
	for (i = s->sstacks; k != SEL_FAILED && i != UINT32_MAX && n < 64; i = t->sstacks[i].next) {
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
	for (i = 0; i < n; i++) {
		const struct site_stack *ss = &t->sstacks[v[i]];
		const struct ustack *st =
		    symbolizer__stack(r->sym, s->pid, ss->stack_id, s->caller);

		fprintf(r->json, "%s{\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 ",\"frames\":[",
			i ? "," : "", sstack_bytes(ss, k), sstack_count(ss, k));
		for (j = 0; j < st->nr; j++) {
			if (j)
				fputc(',', r->json);
			json_frame(r, s->pid, st->frames[j]);
		}
		fprintf(r->json, "],\"truncated\":%s,\"without_frame_pointers\":",
			st->flags & STACK_TRUNCATED ? "true" : "false");
		if (st->flags & STACK_NO_FP)
			fprintf(r->json, "{\"from_frame\":%u}}", st->nofp_from);
		else
			fputs("null}", r->json);
	}
	fputc(']', r->json);
}

static void json_site(struct report *r, uint32_t idx, enum site_sel k, const char *kind,
		      uint64_t bytes, uint64_t count, bool first)
{
	const struct site *s = &r->t->sites[idx];
	const char *mod = s->caller ? symbolizer__module(r->sym, s->pid, s->caller) : NULL;

	fprintf(r->json, "%s{\"api\":\"%s\",\"site\":", first ? "" : ",", cat_api_name(s->api));
	json_str(r->json, site_name(r, s));
	fprintf(r->json, ",\"module\":");
	if (mod)
		json_str(r->json, mod);
	else
		fputs("null", r->json);
	if (k == SEL_FAILED) {
		const char *en = cat_error_name(s->api, s->last_err);

		fprintf(r->json, ",\"error\":%d,\"error_name\":", s->last_err);
		if (en)
			json_str(r->json, en);
		else
			fputs("null", r->json);
		fprintf(r->json, ",\"count\":%" PRIu64 "}", s->failed);
		return;
	}
	fprintf(r->json, ",\"device\":%d,\"memory\":\"%s\"", s->device, cat_mem_name(site_mem(s)));
	if (kind)
		fprintf(r->json, ",\"kind\":\"%s\"", kind);
	if (s->rule && r->t->rules) {
		fputs(",\"rule\":", r->json);
		json_str(r->json, r->t->rules->v[s->rule - 1].text);
	}
	if (k == SEL_RETAINED)
		fprintf(r->json, ",\"retained_by\":\"%s\"", s->cls == CLS_INIT ? "init" : "rule");
	json_owner(r, s);
	fputs(",\"label\":", r->json);
	if (s->label)
		json_str(r->json, tracker__label(r->t, s->label));
	else
		fputs("null", r->json);
	fprintf(r->json, ",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 ",\"unsized\":%" PRIu64, bytes,
		count, s->unsized);
	if (k == SEL_MEMORY) {
		struct addrefs ar;
		unsigned int i;

		json_growth_fields(r->json, growth_of(idx));
		site_addrefs(r->t, s, idx, &ar);
		fputs(",\"addref_sites\":[", r->json);
		for (i = 0; i < ar.n; i++) {
			const struct site *as = &r->t->sites[ar.site[i]];

			fprintf(r->json, "%s{\"api\":\"%s\",\"site\":", i ? "," : "",
				cat_api_name(as->api));
			json_str(r->json, site_name(r, as));
			fprintf(r->json, ",\"count\":%" PRIu64 "}", ar.count[i]);
		}
		fputc(']', r->json);
	}
	if (k == SEL_MEMORY || k == SEL_RETAINED || k == SEL_IGNORED)
		json_layers(r, idx);
	json_stacks(r, idx, k);
	fputc('}', r->json);
}

static void json_site_array(struct report *r, const struct tproc *p, enum site_sel k,
			    const char *name)
{
	const struct tracker *t = r->t;
	size_t n = 0, j;
	uint32_t *v = sorted_sites(t, p->pid, k, &n);
	bool first = true;

	fprintf(r->json, ",\"%s\":[", name);
	for (j = 0; v && j < n; j++) {
		const struct site *s = &t->sites[v[j]];

		switch (k) {
		case SEL_MEMORY:
		case SEL_RETAINED:
		case SEL_IGNORED:
			/* A VMM handle released while still mapped is a leak of its own kind. */
			if (s->live_count > s->relmapped_count) {
				json_site(r, v[j], k,
					  s->api == GL_API_CU_MEM_CREATE ? "handle_not_released"
									 : "live",
					  s->live_bytes - s->relmapped_bytes,
					  s->live_count - s->relmapped_count, first);
				first = false;
			}
			if (s->relmapped_count) {
				json_site(r, v[j], k, "released_while_mapped", s->relmapped_bytes,
					  s->relmapped_count, first);
				first = false;
			}
			break;
		case SEL_PENDING:
			json_site(r, v[j], k, NULL, s->pending_bytes, s->pending_count, first);
			first = false;
			break;
		default:
			json_site(r, v[j], k, NULL, s->live_bytes, s->live_count, first);
			first = false;
			break;
		}
	}
	fputc(']', r->json);
	free(v);
}

/* Live memory of a communicator: sites it owns and everything layered under them. */
static void comm_totals(const struct tracker *t, pid_t pid, uint64_t comm, uint64_t *bytes,
			uint64_t *count, uint64_t *regs)
{
	size_t i;

	*bytes = *count = *regs = 0;
	for (i = 0; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];

		if (s->pid != pid || s->owner_kind != OWNER_COMM || s->owner != comm)
			continue;
		if (site_mem(s) == MEM_REG) {
			*regs += s->live_count;
		} else if (s->counts) {
			*bytes += s->live_bytes;
			*count += s->live_count;
		}
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
		uint64_t bytes, count, regs;

		comm_totals(r->t, p->pid, c->comm, &bytes, &count, &regs);
		fprintf(r->out, "  0x%-16" PRIx64 " %-9s %10s %6" PRIu64 " %5" PRIu64 "  %s%s\n",
			c->comm, c->destroyed ? "destroyed" : "live",
			fmt_bytes(bytes, b, sizeof(b)), count, regs,
			site_name(r, &r->t->sites[c->init_site]),
			c->destroyed && (count || regs) ? "  <- not returned by destroy" : "");
	}
}

static void json_comms(struct report *r, const struct tproc *p)
{
	size_t i;

	fputs(",\"communicators\":[", r->json);
	for (i = 0; i < p->nr_comms; i++) {
		const struct tcomm *c = &p->comms[i];
		uint64_t bytes, count, regs;

		comm_totals(r->t, p->pid, c->comm, &bytes, &count, &regs);
		fprintf(r->json,
			"%s{\"handle\":\"0x%" PRIx64 "\",\"state\":\"%s\",\"api\":\"%s\","
			"\"site\":",
			i ? "," : "", c->comm, c->destroyed ? "destroyed" : "live",
			cat_api_name(r->t->sites[c->init_site].api));
		json_str(r->json, site_name(r, &r->t->sites[c->init_site]));
		fprintf(r->json,
			",\"live_bytes\":%" PRIu64 ",\"live_count\":%" PRIu64
			",\"registrations\":%" PRIu64 "}",
			bytes, count, regs);
	}
	fputc(']', r->json);
}

static const char *viol_name(uint8_t kind)
{
	switch (kind) {
	case VIOL_ONCE:
		return "once";
	case VIOL_MAX:
		return "max";
	case VIOL_NOT_RELEASED:
		return "not_released_at_session_end";
	case VIOL_FREE_NEVER_COMPLETED:
		return "free_never_completed";
	}
	return "?";
}

static const char *viol_site(struct report *r, const struct violation *v)
{
	return v->site < r->t->nr_sites ? site_name(r, &r->t->sites[v->site]) : "?";
}

static void print_violations(struct report *r, const struct tproc *p)
{
	const struct tracker *t = r->t;
	char b[32];
	size_t i;

	if (!p->nr_viols || !t->rules)
		return;
	fprintf(r->out, "rule violations:\n");
	for (i = 0; i < p->nr_viols; i++) {
		const struct violation *v = &p->viols[i];
		const struct rule *ru = &t->rules->v[v->rule];

		fprintf(r->out, "  %-28s %10s %5" PRIu64 "  %s  [%s: %s]\n", viol_name(v->kind),
			fmt_bytes(v->bytes, b, sizeof(b)), v->count, viol_site(r, v), ru->source,
			ru->text);
	}
}

/* What a violation is of: its rule, where, how much. In the verdict's list and the gate's. */
static void json_violation_fields(struct report *r, const struct violation *v)
{
	const struct tracker *t = r->t;
	const struct rule *ru = &t->rules->v[v->rule];
	const struct site *s = v->site < t->nr_sites ? &t->sites[v->site] : NULL;

	fputs("\"rule\":", r->json);
	json_str(r->json, ru->text);
	fputs(",\"source\":", r->json);
	json_str(r->json, ru->source);
	fprintf(r->json, ",\"api\":\"%s\",\"site\":", s ? cat_api_name(s->api) : "?");
	json_str(r->json, viol_site(r, v));
	fprintf(r->json, ",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64, v->bytes, v->count);
}

static void json_violations(struct report *r, const struct tproc *p)
{
	size_t i;

	fputs(",\"violations\":[", r->json);
	for (i = 0; r->t->rules && i < p->nr_viols; i++) {
		const struct violation *v = &p->viols[i];

		fprintf(r->json, "%s{\"kind\":\"%s\",", i ? "," : "", viol_name(v->kind));
		json_violation_fields(r, v);
		fprintf(r->json, ",\"step\":%" PRId64 ",\"t_s\":%.3f}", v->step, secs(r, v->ts_ns));
	}
	fputc(']', r->json);
}

static const char *step_source_name(const struct timeline *tl)
{
	switch (timeline__opts(tl)->source) {
	case STEP_SYNC:
		return "sync";
	case STEP_MARKER:
		return "sym";
	case STEP_NVTX:
		return "nvtx";
	default:
		return "interval";
	}
}

/* What a rule, or the first step, made of a site's memory. */
static const char *site_class_name(const struct site *s)
{
	switch (s->cls) {
	case CLS_PERSISTENT:
		return "persistent";
	case CLS_IGNORED:
		return "ignored";
	case CLS_INIT:
		return "init";
	default:
		return "none";
	}
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
		json_str(r->json, site_name(r, s));
		fputs(",\"label\":", r->json);
		if (s->label)
			json_str(r->json, tracker__label(r->t, s->label));
		else
			fputs("null", r->json);
		fprintf(r->json,
			",\"class\":\"%s\",\"live_bytes\":%" PRIu64 ",\"allocated_bytes\":%" PRIu64
			",\"freed_bytes\":%" PRIu64,
			site_class_name(s), v->live, v->allocated, v->freed);
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

void report__step(struct report *r, pid_t pid, const struct step_stat *st)
{
	if (!r->json)
		return;
	fprintf(r->json,
		"{\"type\":\"step\",\"pid\":%d,\"step\":%" PRId64 ",\"t_s\":%.3f,\"dt_s\":%.3f"
		",\"live_bytes\":%" PRIu64 ",\"persistent_bytes\":%" PRIu64
		",\"pending_bytes\":%" PRIu64 ",\"suspect_bytes\":%" PRIu64
		",\"allocated_bytes\":%" PRIu64 ",\"freed_bytes\":%" PRIu64 ",\"allocs\":%" PRIu64
		",\"frees\":%" PRIu64 ",\"requests\":%" PRIu64 ",\"requests_in_flight\":%" PRIu64,
		pid, st->step, secs(r, st->t_end_ns), (double)(st->t_end_ns - st->t_start_ns) / 1e9,
		st->live, st->persistent, st->pending, st->suspect, st->allocated, st->freed,
		st->allocs, st->frees, st->requests, st->inflight);
	if (st->sites)
		json_step_sites(r, st->sites);
	fputs("}\n", r->json);
}

/* ▁▂▃▄▅▆▇█ over the last steps' live bytes, scaled to their range. */
static void sparkline(const struct step_stat *v, size_t n, char *buf, size_t len)
{
	static const char *const bars[] = {"\u2581", "\u2582", "\u2583", "\u2584",
					   "\u2585", "\u2586", "\u2587", "\u2588"};
	uint64_t lo = UINT64_MAX, hi = 0;
	size_t i, from = n > 16 ? n - 16 : 0, o = 0;

	buf[0] = 0;
	for (i = from; i < n; i++) {
		lo = v[i].live < lo ? v[i].live : lo;
		hi = v[i].live > hi ? v[i].live : hi;
	}
	for (i = from; i < n && o + 4 < len; i++) {
		unsigned int b = hi > lo ? (unsigned int)((v[i].live - lo) * 7 / (hi - lo)) : 0;

		o += (size_t)snprintf(buf + o, len - o, "%s", bars[b]);
	}
}

void report__step_line(struct report *r, pid_t pid, const struct step_stat *st)
{
	char b1[32], b2[32], b3[32], b4[32], spark[64];
	const struct step_stat *all;
	size_t n;

	all = timeline__steps(r->tl, pid, &n);
	sparkline(all, n, spark, sizeof(spark));
	if (!r->step_header) {
		fprintf(r->out, "%9s %7s %6s %10s %10s %10s %10s  %s\n", "TIME", "PID", "STEP",
			"LIVE", "PERSIST", "PENDING", "SUSPECT", "TREND");
		r->step_header = true;
	}
	fprintf(r->out, "%8.2fs %7d %6" PRId64 " %10s %10s %10s %10s  %s\n", secs(r, st->t_end_ns),
		pid, st->step, fmt_bytes(st->live, b1, sizeof(b1)),
		fmt_bytes(st->persistent, b2, sizeof(b2)), fmt_bytes(st->pending, b3, sizeof(b3)),
		fmt_bytes(st->suspect, b4, sizeof(b4)), spark);
	fflush(r->out);
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

/* Requests completed by pid, over its closed steps (those no longer kept included). */
static uint64_t requests_of(const struct report *r, pid_t pid)
{
	return timeline__nr_requests(r->tl, pid);
}

static void print_growth(struct report *r, const struct tproc *p, const struct growth *g, size_t n,
			 const struct projection *pr, size_t steps)
{
	char b1[32], b2[32], b3[32], d[32];
	size_t i;

	fprintf(r->out, "steps: %zu (%s)", steps, step_source_name(r->tl));
	if (timeline__opts(r->tl)->requests)
		fprintf(r->out, ", %" PRIu64 " requests", requests_of(r, p->pid));
	if (!n) {
		fprintf(r->out, "; no site grows step over step\n");
		return;
	}
	fprintf(r->out, "\ngrowing sites (live bytes rise step after step):\n");
	fprintf(r->out, "  %12s %12s %6s %6s %10s  %s\n", "PER STEP", "PER SECOND", "R2", "FROM",
		"NOW", "SITE");
	for (i = 0; i < n; i++) {
		const struct site *s = &r->t->sites[g[i].site];

		fprintf(r->out, "  %10s/st %10s/s %6.3f %6" PRId64 " %10s  %s (%s)",
			fmt_bytes((uint64_t)(g[i].slope_per_step + 0.5), b1, sizeof(b1)),
			fmt_bytes((uint64_t)(g[i].slope_per_s + 0.5), b2, sizeof(b2)), g[i].r2,
			g[i].first_step, fmt_bytes(g[i].end_bytes, b3, sizeof(b3)), site_name(r, s),
			cat_api_name(s->api));
		if (g[i].per_request > 0)
			fprintf(r->out, ", %s per request",
				fmt_bytes((uint64_t)(g[i].per_request + 0.5), b1, sizeof(b1)));
		fputc('\n', r->out);
	}
	if (pr->known) {
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
		fprintf(r->out, "; OOM in ~%.0f steps (~%s)\n", pr->steps_to_oom, d);
	} else {
		fprintf(r->out, "time to OOM: device size unknown (no NVML reading): pass "
				"--device-mem SIZE\n");
	}
}

/* Leaked bytes at the end: live memory not meant to stay. */
static uint64_t leaked_bytes(const struct tracker *t, pid_t pid)
{
	uint64_t sum = 0;
	size_t i;

	sel_t = t;
	for (i = 0; i < t->nr_sites; i++)
		if (t->sites[i].pid == pid && key_of(&t->sites[i], SEL_MEMORY))
			sum += t->sites[i].live_bytes;
	return sum;
}

/* The CI gate for one process: every reason it fails, printed and in JSON. */
static void gate_check(struct report *r, const struct tproc *p, const struct growth *g, size_t n,
		       bool json)
{
	uint64_t leaked = leaked_bytes(r->t, p->pid);
	char b1[32], b2[32];
	bool first = true;
	size_t i;

	if (json) {
		fprintf(r->json,
			",\"gate\":{\"enabled\":%s,\"failed\":", r->gate.on ? "true" : "false");
	}
	for (i = 0; i < n; i++) {
		if (g[i].slope_per_step <= (double)r->gate.max_growth)
			continue;
		if (!json && r->gate.on)
			fprintf(r->out, "GATE: %s grows %s per step (limit %s)\n",
				site_name(r, &r->t->sites[g[i].site]),
				fmt_bytes((uint64_t)g[i].slope_per_step, b1, sizeof(b1)),
				fmt_bytes(r->gate.max_growth, b2, sizeof(b2)));
		if (json) {
			if (first)
				fputs("true,\"violations\":[", r->json);
			fprintf(r->json, "%s{\"kind\":\"growth\",\"site\":", first ? "" : ",");
			json_str(r->json, site_name(r, &r->t->sites[g[i].site]));
			fprintf(r->json, ",\"bytes_per_step\":%.1f,\"limit\":%" PRIu64 "}",
				g[i].slope_per_step, r->gate.max_growth);
			first = false;
		}
		r->gate.failed |= r->gate.on;
	}
	if (r->gate.has_max_live && leaked > r->gate.max_live_at_exit) {
		if (!json && r->gate.on)
			fprintf(r->out, "GATE: %s leaked at exit (limit %s)\n",
				fmt_bytes(leaked, b1, sizeof(b1)),
				fmt_bytes(r->gate.max_live_at_exit, b2, sizeof(b2)));
		if (json) {
			if (first)
				fputs("true,\"violations\":[", r->json);
			fprintf(r->json,
				"%s{\"kind\":\"live_at_exit\",\"bytes\":%" PRIu64
				",\"limit\":%" PRIu64 "}",
				first ? "" : ",", leaked, r->gate.max_live_at_exit);
			first = false;
		}
		r->gate.failed |= r->gate.on;
	}
	for (i = 0; r->t->rules && i < p->nr_viols; i++) {
		const struct violation *v = &p->viols[i];
		const struct rule *ru = &r->t->rules->v[v->rule];

		/* Which rule, where: a CI log must say what to fix without the verdict file. */
		if (!json && r->gate.on)
			fprintf(r->out, "GATE: rule violation: %s, %s at %s [%s: %s]\n",
				viol_name(v->kind), fmt_bytes(v->bytes, b1, sizeof(b1)),
				viol_site(r, v), ru->source, ru->text);
		if (json) {
			if (first)
				fputs("true,\"violations\":[", r->json);
			fprintf(r->json, "%s{\"kind\":\"rule\",\"violation\":\"%s\",",
				first ? "" : ",", viol_name(v->kind));
			json_violation_fields(r, v);
			fputc('}', r->json);
			first = false;
		}
		r->gate.failed |= r->gate.on;
	}
	if (json)
		fputs(first ? "false,\"violations\":[]}" : "]}", r->json);
}

static const char *const loss_names[GL_STAT_MAX] = {
    [GL_STAT_RB_FULL] = "ringbuf_full",
    [GL_STAT_STASH_FAIL] = "stash_fail",
    [GL_STAT_DEPTH_OVERFLOW] = "depth_overflow",
    [GL_STAT_READ_FAIL] = "read_fail",
    [GL_STAT_RET_NO_ENTRY] = "return_without_entry",
    [GL_STAT_STALE_FRAMES] = "stale_frames",
    [GL_STAT_STACK_FAIL] = "stack_fail",
    [GL_STAT_STACK_COLLISION] = "stack_collision",
    [GL_STAT_MAP_FULL] = "map_full",
    [GL_STAT_LOST_ALLOCS] = "lost_allocs",
    [GL_STAT_LOST_ALLOC_BYTES] = "lost_alloc_bytes",
    [GL_STAT_LOST_ALLOCS_UNSIZED] = "lost_allocs_unsized",
    [GL_STAT_LOST_FREES] = "lost_frees",
    [GL_STAT_LOST_TASKS] = "lost_process_events",
};

/* The error bounds of a verdict: how far live bytes may be from the truth. */
static void json_uncertainty(struct report *r, const struct tproc *p)
{
	struct uncertainty u;

	if (tproc__uncertainty(r->t, p, &u)) {
		fputs(",\"approximate\":true,\"uncertainty\":null", r->json);
		return;
	}
	fprintf(r->json,
		",\"approximate\":%s,\"uncertainty\":{\"records_lost\":%" PRIu64
		",\"allocs_missed\":%" PRIu64 ",\"alloc_bytes_missed\":%" PRIu64
		",\"allocs_missed_unsized\":%" PRIu64 ",\"frees_missed\":%" PRIu64
		",\"live_bytes_min\":%" PRIu64 ",\"live_bytes_max\":",
		u.approximate ? "true" : "false", p->loss[GL_STAT_RB_FULL], u.allocs_missed,
		u.alloc_bytes_missed, u.allocs_missed_unsized, u.frees_missed,
		p->live_bytes - u.live_overstated_max);
	if (u.under_known)
		fprintf(r->json, "%" PRIu64, p->live_bytes + u.live_understated_max);
	else
		fputs("null", r->json);
	fputc('}', r->json);
}

/* "LOST (results approximate): ..." and by how much: the line every lossy verdict ends with. */
static void print_uncertainty(struct report *r, const struct tproc *p)
{
	struct uncertainty u;
	char b1[32], b2[32], b3[32];
	int k;

	if (tproc__uncertainty(r->t, p, &u) || !u.approximate)
		return;
	fprintf(r->out, "LOST (results approximate):");
	for (k = 0; k < GL_STAT_MAX; k++)
		if (loss_names[k] && p->loss[k] &&
		    (k < GL_STAT_LOST_ALLOCS || k > GL_STAT_LOST_FREES))
			fprintf(r->out, " %s=%" PRIu64, loss_names[k], p->loss[k]);
	fputc('\n', r->out);
	if (!u.allocs_missed && !u.frees_missed)
		return;
	fprintf(r->out,
		"  missed: %" PRIu64 " allocations (%s%s), %" PRIu64 " frees; live bytes "
		"are between %s and ",
		u.allocs_missed, fmt_bytes(u.alloc_bytes_missed, b1, sizeof(b1)),
		u.allocs_missed_unsized ? " and some of unknown size" : "", u.frees_missed,
		fmt_bytes(p->live_bytes - u.live_overstated_max, b2, sizeof(b2)));
	if (u.under_known)
		fprintf(r->out, "%s\n",
			fmt_bytes(p->live_bytes + u.live_understated_max, b3, sizeof(b3)));
	else
		fprintf(r->out, "an unknown amount above %s\n",
			fmt_bytes(p->live_bytes, b3, sizeof(b3)));
}

static void json_growth(struct report *r, pid_t pid, const struct growth *g, size_t n,
			const struct projection *pr, size_t steps)
{
	size_t i;

	fprintf(r->json,
		",\"steps\":%zu,\"step_source\":\"%s\",\"requests\":%" PRIu64 ",\"growth\":[",
		steps, step_source_name(r->tl), requests_of(r, pid));
	for (i = 0; i < n; i++) {
		const struct site *s = &r->t->sites[g[i].site];

		fprintf(r->json, "%s{\"api\":\"%s\",\"site\":", i ? "," : "", cat_api_name(s->api));
		json_str(r->json, site_name(r, s));
		fprintf(r->json, ",\"device\":%d,\"bytes\":%" PRIu64, s->device, g[i].end_bytes);
		json_growth_fields(r->json, &g[i]);
		fputc('}', r->json);
	}
	fputc(']', r->json);
	if (pr->known)
		fprintf(r->json,
			",\"projected_oom_steps\":%.0f,\"projection\":{\"device\":%d,"
			"\"capacity_bytes\":%" PRIu64 ",\"used_bytes\":%" PRIu64
			",\"baseline_bytes\":%" PRIu64 ",\"growth_bytes_per_step\":%.1f"
			",\"steps_to_oom\":%.1f,\"seconds_to_oom\":%.1f}",
			pr->steps_to_oom, pr->device, pr->capacity, pr->used, pr->baseline,
			pr->rate_per_step, pr->steps_to_oom, pr->seconds_to_oom);
	else
		fputs(",\"projected_oom_steps\":null,\"projection\":null", r->json);
}

static void json_verdict(struct report *r, const struct tproc *p, uint64_t now_ns,
			 const struct growth *g, size_t ng, const struct projection *pr,
			 size_t steps)
{
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
	    proc_state(p), p->exited ? p->exit_status : -1,
	    end > p->first_ts_ns && p->first_ts_ns ? (double)(end - p->first_ts_ns) / 1e9 : 0.0,
	    p->live_bytes, p->live_count, p->pending_bytes, p->pending_count, p->c.allocs,
	    p->c.alloc_bytes, p->c.frees, p->c.failed_calls, p->c.unknown_frees, p->c.null_frees,
	    p->c.double_frees, p->c.addr_reuse, p->c.async_reuse, p->persistent_bytes,
	    p->persistent_count, p->ignored_bytes, p->ignored_count, p->init_bytes, p->init_count,
	    p->c.layers, p->c.released_by_owner, p->c.error_objects, p->c.unknown_refs,
	    p->c.unmatched_done, p->c.calls, tproc__dropped(p));
	for (k = 0; k < GL_STAT_MAX; k++)
		if (loss_names[k])
			fprintf(r->json, "%s\"%s\":%" PRIu64, k ? "," : "", loss_names[k],
				p->loss[k]);
	fputc('}', r->json);
	json_uncertainty(r, p);
	json_site_array(r, p, SEL_MEMORY, "leaks");
	json_site_array(r, p, SEL_RETAINED, "retained");
	json_site_array(r, p, SEL_IGNORED, "ignored");
	json_violations(r, p);
	json_growth(r, p->pid, g, ng, pr, steps);
	gate_check(r, p, g, ng, true);
	json_site_array(r, p, SEL_PENDING, "pending");
	json_site_array(r, p, SEL_FAILED, "failures");
	json_site_array(r, p, SEL_VA, "address_space");
	json_site_array(r, p, SEL_REG, "registrations");
	json_comms(r, p);
	if (r->verdict_extra)
		fprintf(r->json, ",%s", r->verdict_extra);
	if (r->verdict_more)
		r->verdict_more(r->verdict_more_ctx, p->pid, r->json);
	fputs("}\n", r->json);
}

static void print_summary(struct report *r, uint64_t now_ns);

void report__final(struct report *r, uint64_t now_ns)
{
	struct tracker *t = r->t;
	size_t i;

	for (i = 0; i < t->nr_procs; i++) {
		const struct tproc *p = t->procs[i];
		char b1[32], b2[32];
		uint64_t end = p->exited || p->detached ? p->last_ts_ns : now_ns;
		struct growth *g = NULL;
		struct projection pr = {0};
		size_t ng = 0, nsteps = 0;

		if (!reported(p))
			continue;
		if (r->tl) {
			nsteps = timeline__nr_steps(r->tl, p->pid);
			if (!timeline__growth(r->tl, p->pid, &g, &ng))
				timeline__project(r->tl, p->pid, g, ng, &pr);
		}
		cur_growth = g;
		cur_nr_growth = ng;

		fprintf(r->out, "\npid %d (%s", p->pid, p->comm[0] ? p->comm : "?");
		if (p->ppid)
			fprintf(r->out, ", child of %d", p->ppid);
		if (p->ns_pid)
			fprintf(r->out, ", pid %u in its namespace", p->ns_pid);
		fprintf(r->out, "): %s",
			p->ended ? "session ended at its end marker" : proc_state(p));
		if (p->exited && p->exit_status >= 0)
			fprintf(r->out, " with status %d", p->exit_status);
		fprintf(r->out,
			" after %.2f s traced; %" PRIu64 " allocations (%s), %" PRIu64
			" frees, %" PRIu64 " failed calls\n",
			end > p->first_ts_ns && p->first_ts_ns
			    ? (double)(end - p->first_ts_ns) / 1e9
			    : 0,
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
		print_sites(r, p, SEL_MEMORY, "live allocations by site, largest first:");
		if (p->init_count)
			fprintf(r->out,
				"of which made before the first step: %s in %" PRIu64
				" (retained by init)\n",
				fmt_bytes(p->init_bytes, b1, sizeof(b1)), p->init_count);
		print_sites(r, p, SEL_RETAINED,
			    "retained at session end (persistent by rule, or made before the first "
			    "step: not leaks):");
		graph__print(r->out, t, r->sym, p->pid);
		print_violations(r, p);
		if (r->tl)
			print_growth(r, p, g, ng, &pr, nsteps);
		print_sites(r, p, SEL_PENDING,
			    "async frees still pending (stream not synchronized):");
		print_sites(r, p, SEL_VA, "virtual address ranges reserved and never freed:");
		print_sites(r, p, SEL_REG, "registrations never deregistered:");
		print_comms(r, p);
		print_sites(r, p, SEL_FAILED, "failed calls:");
		if (p->c.unknown_frees || p->c.double_frees || p->c.addr_reuse || p->c.async_reuse)
			fprintf(r->out,
				"frees of untracked pointers (allocated before attach): %" PRIu64
				"; double frees: %" PRIu64 "; live address returned again: %" PRIu64
				"; pending free's block reused by its stream (legal): %" PRIu64
				"\n",
				p->c.unknown_frees, p->c.double_frees, p->c.addr_reuse,
				p->c.async_reuse);
		gate_check(r, p, g, ng, false);
		if (p->loss[GL_STAT_STACK_FAIL] + p->loss[GL_STAT_STACK_COLLISION])
			fprintf(r->out,
				"stacks lost: %" PRIu64 " allocation calls recorded "
				"without their stack, named by call site alone (stack_fail=%" PRIu64
				" stack_collision=%" PRIu64 "; --stack-entries holds "
				"more)\n",
				p->loss[GL_STAT_STACK_FAIL] + p->loss[GL_STAT_STACK_COLLISION],
				p->loss[GL_STAT_STACK_FAIL], p->loss[GL_STAT_STACK_COLLISION]);
		print_uncertainty(r, p);
		if (r->json)
			json_verdict(r, p, now_ns, g, ng, &pr, nsteps);
		free(g);
		cur_growth = NULL;
		cur_nr_growth = 0;
	}
	print_summary(r, now_ns);
	if (t->bad_records)
		fprintf(r->out, "undecodable records skipped: %" PRIu64 "\n", t->bad_records);
	fflush(r->out);
	if (r->json)
		fflush(r->json);
}

/* ---- across processes: the summary, and the fleet endpoint's view ---- */

/* One process as the summary and the metrics see it. */
struct proc_view {
	const struct tproc *p;
	uint64_t leaked;     /* live memory not meant to stay */
	double growth_per_s; /* summed slopes of its growth leaks */
	double growth_per_step;
	size_t growth_sites;
	size_t nsteps;
	struct projection pr;
	struct growth *g; /* its growth leaks (caller frees) */
};

static void proc_view(struct report *r, const struct tproc *p, struct proc_view *v)
{
	size_t i;

	memset(v, 0, sizeof(*v));
	v->p = p;
	v->leaked = leaked_bytes(r->t, p->pid);
	if (!r->tl)
		return;
	v->nsteps = timeline__nr_steps(r->tl, p->pid);
	if (timeline__growth(r->tl, p->pid, &v->g, &v->growth_sites))
		return;
	timeline__project(r->tl, p->pid, v->g, v->growth_sites, &v->pr);
	for (i = 0; i < v->growth_sites; i++) {
		v->growth_per_s += v->g[i].slope_per_s;
		v->growth_per_step += v->g[i].slope_per_step;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * Rank skew: a process whose memory grows while its peers' does not, the shape of one
 * misbehaving rank among identical workers. Peers are the other processes that allocated
 * anything (a launcher that only waits for its ranks is none); "does not" is a median growth
 * under a tenth of this one's. Sets *median and *npeers.
 */
#define SKEW_PEER_FRACTION 0.1

static bool skewed(const struct proc_view *v, size_t n, size_t i, double *median, size_t *npeers)
{
	double *peers;
	size_t j, k = 0;
	bool ret;

	*median = 0;
	*npeers = 0;
	if (n < 2 || v[i].growth_per_s <= 0)
		return false;
	peers = malloc((n - 1) * sizeof(*peers));
	if (!peers)
		return false;
	for (j = 0; j < n; j++)
		if (j != i && v[j].p->c.allocs)
			peers[k++] = v[j].growth_per_s > 0 ? v[j].growth_per_s : 0;
	*npeers = k;
	if (!k) {
		free(peers);
		return false;
	}
	qsort(peers, k, sizeof(*peers), cmp_double);
	*median = k % 2 ? peers[k / 2] : (peers[k / 2 - 1] + peers[k / 2]) / 2;
	ret = *median <= SKEW_PEER_FRACTION * v[i].growth_per_s;
	free(peers);
	return ret;
}

/* The reported processes' views; caller frees each g and the array. */
static struct proc_view *proc_views(struct report *r, size_t *n)
{
	struct proc_view *v = calloc(r->t->nr_procs ? r->t->nr_procs : 1, sizeof(*v));
	size_t i;

	*n = 0;
	for (i = 0; v && i < r->t->nr_procs; i++)
		if (reported(r->t->procs[i]))
			proc_view(r, r->t->procs[i], &v[(*n)++]);
	return v;
}

static void free_views(struct proc_view *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		free(v[i].g);
	free(v);
}

/* More than one process: a table comparing them, rank skew, and its NDJSON record. */
static void print_summary(struct report *r, uint64_t now_ns)
{
	char b1[32], b2[32], b3[32];
	struct proc_view *v;
	uint64_t live = 0, leaked = 0;
	size_t n, i, nskew = 0, npeers;
	double median;

	(void)now_ns;
	v = proc_views(r, &n);
	if (!v || n < 2) {
		free_views(v, n);
		return;
	}
	fprintf(r->out, "\nacross %zu processes:\n", n);
	fprintf(r->out, "  %7s  %-15s %-8s %10s %10s %12s %7s\n", "PID", "COMM", "STATE", "LIVE",
		"LEAKED", "GROWTH/S", "GROWING");
	for (i = 0; i < n; i++) {
		const struct tproc *p = v[i].p;

		live += p->live_bytes;
		leaked += v[i].leaked;
		fprintf(r->out, "  %7d  %-15s %-8s %10s %10s %10s/s %7zu%s\n", p->pid,
			p->comm[0] ? p->comm : "?", proc_state(p),
			fmt_bytes(p->live_bytes, b1, sizeof(b1)),
			fmt_bytes(v[i].leaked, b2, sizeof(b2)),
			fmt_bytes((uint64_t)(v[i].growth_per_s + 0.5), b3, sizeof(b3)),
			v[i].growth_sites, tproc__dropped(p) ? "  (approximate)" : "");
	}
	fprintf(r->out, "  %7s  %-15s %-8s %10s %10s\n", "", "total", "",
		fmt_bytes(live, b1, sizeof(b1)), fmt_bytes(leaked, b2, sizeof(b2)));
	for (i = 0; i < n; i++) {
		if (!skewed(v, n, i, &median, &npeers))
			continue;
		nskew++;
		fprintf(r->out,
			"rank skew: pid %d (%s) grows %s/s while its %zu peers %s (median "
			"%s/s)\n",
			v[i].p->pid, v[i].p->comm,
			fmt_bytes((uint64_t)(v[i].growth_per_s + 0.5), b1, sizeof(b1)), npeers,
			median > 0 ? "grow far less" : "stay flat",
			fmt_bytes((uint64_t)(median + 0.5), b2, sizeof(b2)));
	}
	if (!nskew)
		fprintf(r->out, "rank skew: none (no process grows while its peers stay flat)\n");
	if (r->json) {
		fprintf(r->json,
			"{\"type\":\"summary\",\"processes\":%zu,\"live_bytes\":%" PRIu64
			",\"leaked_bytes\":%" PRIu64 ",\"per_process\":[",
			n, live, leaked);
		for (i = 0; i < n; i++) {
			const struct tproc *p = v[i].p;

			fprintf(r->json, "%s{\"pid\":%d,\"ppid\":%d,\"comm\":", i ? "," : "",
				p->pid, p->ppid);
			json_str(r->json, p->comm);
			fprintf(r->json,
				",\"state\":\"%s\",\"live_bytes\":%" PRIu64
				",\"leaked_bytes\":%" PRIu64 ",\"growth_bytes_per_s\":%.1f"
				",\"growth_bytes_per_step\":%.1f,\"growth_sites\":%zu,\"steps\":%zu"
				",\"approximate\":%s}",
				proc_state(p), p->live_bytes, v[i].leaked, v[i].growth_per_s,
				v[i].growth_per_step, v[i].growth_sites, v[i].nsteps,
				tproc__dropped(p) ? "true" : "false");
		}
		fputs("],\"skew\":[", r->json);
		for (i = 0, nskew = 0; i < n; i++) {
			if (!skewed(v, n, i, &median, &npeers))
				continue;
			fprintf(r->json, "%s{\"pid\":%d,\"comm\":", nskew++ ? "," : "",
				v[i].p->pid);
			json_str(r->json, v[i].p->comm);
			fprintf(r->json,
				",\"growth_bytes_per_s\":%.1f,\"peers\":%zu"
				",\"peer_median_bytes_per_s\":%.1f}",
				v[i].growth_per_s, npeers, median);
		}
		fputs("]}\n", r->json);
	}
	free_views(v, n);
}

/* One row of the metrics: a process's memory of one API on one device. */
struct metric_row {
	uint16_t api;
	char dev[16];
	uint64_t live, count, persistent, pending, suspect;
	double growth_per_s, growth_per_step;
};

#define METRIC_ROWS 64

static struct metric_row *row_of(struct metric_row *rows, size_t *n, uint16_t api, const char *dev)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (rows[i].api == api && !strcmp(rows[i].dev, dev))
			return &rows[i];
	if (*n == METRIC_ROWS)
		return NULL;
	memset(&rows[*n], 0, sizeof(rows[0]));
	rows[*n].api = api;
	snprintf(rows[*n].dev, sizeof(rows[0].dev), "%s", dev);
	return &rows[(*n)++];
}

static size_t metric_rows(struct report *r, const struct proc_view *v, struct metric_row *rows)
{
	const struct tracker *t = r->t;
	size_t i, n = 0;
	char dev[16];

	for (i = 0; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];
		struct metric_row *row;

		if (s->pid != v->p->pid || !s->counts || (!s->live_count && !s->pending_count))
			continue;
		site_dev_str(t, s, dev, sizeof(dev));
		row = row_of(rows, &n, s->api, dev);
		if (!row)
			continue;
		row->live += s->live_bytes;
		row->count += s->live_count;
		row->pending += s->pending_bytes;
		if (s->cls == CLS_PERSISTENT)
			row->persistent += s->live_bytes;
	}
	for (i = 0; i < v->growth_sites; i++) {
		const struct site *s = &t->sites[v->g[i].site];
		struct metric_row *row;

		site_dev_str(t, s, dev, sizeof(dev));
		row = row_of(rows, &n, s->api, dev);
		if (!row)
			continue;
		row->suspect += s->live_bytes;
		row->growth_per_s += v->g[i].slope_per_s;
		row->growth_per_step += v->g[i].slope_per_step;
	}
	return n;
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

static void row_metric(FILE *out, bool om, const struct proc_view *v, size_t nv,
		       struct metric_row **rows, const size_t *nrows, const char *name,
		       const char *help, int field)
{
	size_t i, j;

	family(out, om, name, M_GAUGE, help);
	for (i = 0; i < nv; i++)
		for (j = 0; j < nrows[i]; j++) {
			const struct metric_row *m = &rows[i][j];

			sample(out, name, M_GAUGE, v[i].p);
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

void report__metrics(struct report *r, FILE *out, bool om)
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
	struct metric_row **rows;
	struct proc_view *v;
	size_t n, i, k, *nrows, npeers;
	double median;

	v = proc_views(r, &n);
	rows = calloc(n ? n : 1, sizeof(*rows));
	nrows = calloc(n ? n : 1, sizeof(*nrows));
	if (!v || !rows || !nrows)
		goto out;
	for (i = 0; i < n; i++) {
		rows[i] = calloc(METRIC_ROWS, sizeof(**rows));
		if (!rows[i])
			goto out;
		nrows[i] = metric_rows(r, &v[i], rows[i]);
	}
	family(out, om, "build", M_INFO, "gpuleak's version.");
	fprintf(out, "gpuleak_build_info{version=\"%s\"} 1\n", GPULEAK_VERSION);
	family(out, om, "process", M_INFO, "A traced process: its name, parent and state.");
	for (i = 0; i < n; i++) {
		sample(out, "process", M_INFO, v[i].p);
		fprintf(out, ",ppid=\"%d\",state=\"%s\"} 1\n", v[i].p->ppid, proc_state(v[i].p));
	}
	for (k = 0; k < sizeof(rowm) / sizeof(rowm[0]); k++)
		row_metric(out, om, v, n, rows, nrows, rowm[k].name, rowm[k].help, (int)k);
	family(out, om, "time_to_oom_seconds", M_GAUGE,
	       "Projected time until the most pressed device runs out, at the current growth.");
	for (i = 0; i < n; i++) {
		if (!v[i].pr.known)
			continue;
		sample(out, "time_to_oom_seconds", M_GAUGE, v[i].p);
		fprintf(out, ",device=\"%s%d\"} %.1f\n", v[i].pr.webgpu ? "wgpu#" : "",
			v[i].pr.webgpu ? v[i].pr.device + 1 : v[i].pr.device,
			v[i].pr.seconds_to_oom);
	}
	family(out, om, "findings", M_GAUGE,
	       "What the verdict would say now: call sites leaking, growing, rules violated.");
	for (i = 0; i < n; i++) {
		size_t nleak;
		uint32_t *s = sorted_sites(r->t, v[i].p->pid, SEL_MEMORY, &nleak);

		free(s);
		sample(out, "findings", M_GAUGE, v[i].p);
		fprintf(out, ",kind=\"leak_sites\"} %zu\n", nleak);
		sample(out, "findings", M_GAUGE, v[i].p);
		fprintf(out, ",kind=\"growth_leaks\"} %zu\n", v[i].growth_sites);
		sample(out, "findings", M_GAUGE, v[i].p);
		fprintf(out, ",kind=\"rule_violations\"} %zu\n", v[i].p->nr_viols);
		sample(out, "findings", M_GAUGE, v[i].p);
		fprintf(out, ",kind=\"rank_skew\"} %d\n", skewed(v, n, i, &median, &npeers));
	}
	family(out, om, "allocations", M_COUNTER, "Traced allocations made.");
	for (i = 0; i < n; i++) {
		sample(out, "allocations", M_COUNTER, v[i].p);
		fprintf(out, "} %" PRIu64 "\n", v[i].p->c.allocs);
	}
	family(out, om, "frees", M_COUNTER, "Traced frees.");
	for (i = 0; i < n; i++) {
		sample(out, "frees", M_COUNTER, v[i].p);
		fprintf(out, "} %" PRIu64 "\n", v[i].p->c.frees);
	}
	family(out, om, "failed_calls", M_COUNTER, "Traced calls that returned an error.");
	for (i = 0; i < n; i++) {
		sample(out, "failed_calls", M_COUNTER, v[i].p);
		fprintf(out, "} %" PRIu64 "\n", v[i].p->c.failed_calls);
	}
	family(out, om, "dropped", M_COUNTER,
	       "Events lost or not tracked in the kernel, by reason (the verdict's losses).");
	for (i = 0; i < n; i++)
		for (k = 0; k < GL_STAT_MAX; k++) {
			if (!loss_names[k] || k == GL_STAT_LOST_ALLOC_BYTES)
				continue;
			sample(out, "dropped", M_COUNTER, v[i].p);
			fprintf(out, ",reason=\"%s\"} %" PRIu64 "\n", loss_names[k],
				v[i].p->loss[k]);
		}
	family(out, om, "dropped_alloc_bytes", M_COUNTER,
	       "Bytes of allocations whose records were lost (outermost calls of known size).");
	for (i = 0; i < n; i++) {
		sample(out, "dropped_alloc_bytes", M_COUNTER, v[i].p);
		fprintf(out, "} %" PRIu64 "\n", v[i].p->loss[GL_STAT_LOST_ALLOC_BYTES]);
	}
	family(out, om, "approximate", M_GAUGE,
	       "1 when losses make this process's numbers approximate.");
	for (i = 0; i < n; i++) {
		struct uncertainty u = {.approximate = true};

		tproc__uncertainty(r->t, v[i].p, &u);
		sample(out, "approximate", M_GAUGE, v[i].p);
		fprintf(out, "} %d\n", u.approximate);
	}
	family(out, om, "records", M_COUNTER, "Records analysed (all processes).");
	fprintf(out, "gpuleak_records_total %" PRIu64 "\n", r->t->records);
	family(out, om, "undecodable_records", M_COUNTER, "Records skipped as undecodable.");
	fprintf(out, "gpuleak_undecodable_records_total %" PRIu64 "\n", r->t->bad_records);
	if (om)
		fputs("# EOF\n", out);
out:
	for (i = 0; rows && i < n; i++)
		free(rows[i]);
	free(rows);
	free(nrows);
	free_views(v, n);
}
