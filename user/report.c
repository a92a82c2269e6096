// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "probe_catalog.h"
#include "report.h"
#include "symbolize.h"
#include "tracker.h"

const char *fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
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

enum site_key { BY_LIVE, BY_PENDING, BY_FAILED };

static uint64_t key_of(const struct site *s, enum site_key k)
{
	switch (k) {
	case BY_LIVE:
		return s->live_bytes ? s->live_bytes : s->live_count;
	case BY_PENDING:
		return s->pending_bytes ? s->pending_bytes : s->pending_count;
	default:
		return s->failed;
	}
}

static const struct tracker *sort_t;
static enum site_key sort_k;

static int cmp_sites(const void *a, const void *b)
{
	const struct site *x = &sort_t->sites[*(const uint32_t *)a];
	const struct site *y = &sort_t->sites[*(const uint32_t *)b];
	uint64_t kx = key_of(x, sort_k), ky = key_of(y, sort_k);

	if (kx != ky)
		return kx > ky ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Indices of pid's sites with a nonzero key, largest first. Caller frees. */
static uint32_t *sorted_sites(const struct tracker *t, pid_t pid, enum site_key k, size_t *n)
{
	uint32_t *v = malloc((t->nr_sites ? t->nr_sites : 1) * sizeof(*v));
	size_t i;

	*n = 0;
	if (!v)
		return NULL;
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
	uint64_t bytes, count, pending;
};

/* Live bytes per (API, device) of one process. Returns the number of rows. */
static size_t sum_by_api(const struct tracker *t, pid_t pid, struct api_sum *rows, size_t max)
{
	size_t i, j, n = 0;

	for (i = 0; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];

		if (s->pid != pid || (!s->live_count && !s->pending_count))
			continue;
		for (j = 0; j < n; j++)
			if (rows[j].api == s->api && rows[j].device == s->device)
				break;
		if (j == n) {
			if (n == max)
				continue;
			rows[n++] = (struct api_sum){ s->api, s->device, 0, 0, 0 };
		}
		rows[j].bytes += s->live_bytes;
		rows[j].count += s->live_count;
		rows[j].pending += s->pending_bytes;
	}
	return n;
}

static void dev_str(int16_t device, char *buf, size_t len)
{
	if (device < 0)
		snprintf(buf, len, "host");
	else
		snprintf(buf, len, "%d", device);
}

void report__interval(struct report *r, uint64_t now_ns)
{
	struct tracker *t = r->t;
	size_t i, j;

	for (i = 0; i < t->nr_procs; i++) {
		struct tproc *p = t->procs[i];
		struct api_sum rows[32];
		char b1[32], b2[32], dev[8];
		size_t nrows, nsites;
		uint32_t *top;

		if (p->exited && p->last_ts_ns < now_ns - (uint64_t)1e9)
			continue;
		nrows = sum_by_api(t, p->pid, rows, 32);
		fprintf(r->out, "[%7.2fs] pid %d: live %s in %" PRIu64 ", pending %s; %" PRIu64
			" allocs, %" PRIu64 " frees, %" PRIu64 " failed\n",
			secs(r, now_ns), p->pid, fmt_bytes(p->live_bytes, b1, sizeof(b1)),
			p->live_count, fmt_bytes(p->pending_bytes, b2, sizeof(b2)), p->c.allocs,
			p->c.frees, p->c.failed_calls);
		for (j = 0; j < nrows; j++) {
			dev_str(rows[j].device, dev, sizeof(dev));
			fprintf(r->out, "    %-28s dev %-4s %10s %7" PRIu64 "\n",
				cat_api_name(rows[j].api), dev,
				fmt_bytes(rows[j].bytes, b1, sizeof(b1)), rows[j].count);
		}
		top = sorted_sites(t, p->pid, BY_LIVE, &nsites);
		for (j = 0; top && j < nsites && (int)j < r->top; j++) {
			const struct site *s = &t->sites[top[j]];

			fprintf(r->out, "    top %10s %5" PRIu64 "  %s\n",
				fmt_bytes(s->live_bytes, b1, sizeof(b1)), s->live_count,
				site_name(r, s));
		}
		if (r->json) {
			fprintf(r->json,
				"{\"type\":\"interval\",\"t_s\":%.3f,\"pid\":%d,\"live_bytes\":%" PRIu64
				",\"live_count\":%" PRIu64 ",\"pending_bytes\":%" PRIu64
				",\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"failed_calls\":%" PRIu64
				",\"by_api\":[",
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
	return p->exited ? "exited" : p->detached ? "detached" : "running";
}

static void print_sites(struct report *r, const struct tproc *p, enum site_key k,
			const char *title)
{
	const struct tracker *t = r->t;
	uint32_t *v;
	size_t n, j;
	char b[32], dev[8];

	v = sorted_sites(t, p->pid, k, &n);
	if (!v || !n) {
		free(v);
		return;
	}
	fprintf(r->out, "%s\n", title);
	if (k == BY_FAILED)
		fprintf(r->out, "  %8s  %-26s %5s  %s\n", "CALLS", "API", "ERROR", "SITE");
	else
		fprintf(r->out, "  %10s %6s  %-26s %4s  %s\n", "BYTES", "COUNT", "API", "DEV",
			"SITE");
	for (j = 0; j < n; j++) {
		const struct site *s = &t->sites[v[j]];

		if (k == BY_FAILED) {
			const char *en = cat_error_name(s->api, s->last_err);

			fprintf(r->out, "  %8" PRIu64 "  %-26s %5d  %s%s%s\n", s->failed,
				cat_api_name(s->api), s->last_err, site_name(r, s), en ? ": " : "",
				en ? en : "");
			continue;
		}
		dev_str(s->device, dev, sizeof(dev));
		fprintf(r->out, "  %10s %6" PRIu64 "  %-26s %4s  %s\n",
			fmt_bytes(k == BY_LIVE ? s->live_bytes : s->pending_bytes, b, sizeof(b)),
			k == BY_LIVE ? s->live_count : s->pending_count, cat_api_name(s->api), dev,
			site_name(r, s));
	}
	free(v);
}

static void json_site_array(struct report *r, const struct tproc *p, enum site_key k,
			    const char *name)
{
	const struct tracker *t = r->t;
	size_t n = 0, j;
	uint32_t *v = sorted_sites(t, p->pid, k, &n);

	fprintf(r->json, ",\"%s\":[", name);
	for (j = 0; v && j < n; j++) {
		const struct site *s = &t->sites[v[j]];
		const char *mod = s->caller ? symbolizer__module(r->sym, s->pid, s->caller) : NULL;

		fprintf(r->json, "%s{\"api\":\"%s\",\"site\":", j ? "," : "", cat_api_name(s->api));
		json_str(r->json, site_name(r, s));
		fprintf(r->json, ",\"module\":");
		if (mod)
			json_str(r->json, mod);
		else
			fputs("null", r->json);
		if (k == BY_FAILED) {
			const char *en = cat_error_name(s->api, s->last_err);

			fprintf(r->json, ",\"error\":%d,\"error_name\":", s->last_err);
			if (en)
				json_str(r->json, en);
			else
				fputs("null", r->json);
			fprintf(r->json, ",\"count\":%" PRIu64 "}", s->failed);
		}
		else
			fprintf(r->json,
				",\"device\":%d,\"memory\":\"%s\",\"bytes\":%" PRIu64
				",\"count\":%" PRIu64 "}",
				s->device,
				cat_by_api(s->api) ? cat_mem_name(cat_by_api(s->api)->mem) : "-",
				k == BY_LIVE ? s->live_bytes : s->pending_bytes,
				k == BY_LIVE ? s->live_count : s->pending_count);
	}
	fputc(']', r->json);
	free(v);
}

static const char *const loss_names[GL_STAT_MAX] = {
	[GL_STAT_RB_FULL] = "ringbuf_full",
	[GL_STAT_STASH_FAIL] = "stash_fail",
	[GL_STAT_DEPTH_OVERFLOW] = "depth_overflow",
	[GL_STAT_READ_FAIL] = "read_fail",
	[GL_STAT_RET_NO_ENTRY] = "return_without_entry",
	[GL_STAT_STALE_FRAMES] = "stale_frames",
	[GL_STAT_STACK_FAIL] = "stack_fail",
};

static void json_verdict(struct report *r, const struct tproc *p, uint64_t now_ns)
{
	uint64_t end = p->exited || p->detached ? p->last_ts_ns : now_ns;
	int k;

	fprintf(r->json, "{\"type\":\"verdict\",\"pid\":%d,\"comm\":", p->pid);
	json_str(r->json, p->comm);
	fprintf(r->json,
		",\"state\":\"%s\",\"exit_status\":%d,\"duration_s\":%.3f,\"live_bytes\":%" PRIu64
		",\"live_count\":%" PRIu64 ",\"pending_bytes\":%" PRIu64 ",\"pending_count\":%" PRIu64
		",\"allocs\":%" PRIu64 ",\"alloc_bytes\":%" PRIu64 ",\"frees\":%" PRIu64
		",\"failed_calls\":%" PRIu64 ",\"unknown_frees\":%" PRIu64 ",\"null_frees\":%" PRIu64
		",\"double_frees\":%" PRIu64 ",\"addr_reuse\":%" PRIu64 ",\"async_reuse\":%" PRIu64
		",\"calls\":%" PRIu64 ",\"dropped_events\":%" PRIu64 ",\"losses\":{",
		proc_state(p), p->exited ? p->exit_status : -1,
		end > p->first_ts_ns && p->first_ts_ns ? (double)(end - p->first_ts_ns) / 1e9 : 0.0,
		p->live_bytes, p->live_count, p->pending_bytes, p->pending_count, p->c.allocs,
		p->c.alloc_bytes, p->c.frees, p->c.failed_calls, p->c.unknown_frees, p->c.null_frees,
		p->c.double_frees, p->c.addr_reuse, p->c.async_reuse, p->c.calls, tproc__dropped(p));
	for (k = 0; k < GL_STAT_MAX; k++)
		if (loss_names[k])
			fprintf(r->json, "%s\"%s\":%" PRIu64, k ? "," : "", loss_names[k], p->loss[k]);
	fputc('}', r->json);
	json_site_array(r, p, BY_LIVE, "leaks");
	json_site_array(r, p, BY_PENDING, "pending");
	json_site_array(r, p, BY_FAILED, "failures");
	if (r->verdict_extra)
		fprintf(r->json, ",%s", r->verdict_extra);
	fputs("}\n", r->json);
}

void report__final(struct report *r, uint64_t now_ns)
{
	struct tracker *t = r->t;
	size_t i;
	int k;

	for (i = 0; i < t->nr_procs; i++) {
		const struct tproc *p = t->procs[i];
		char b1[32], b2[32];
		uint64_t end = p->exited || p->detached ? p->last_ts_ns : now_ns;

		fprintf(r->out, "\npid %d (%s): %s", p->pid, p->comm[0] ? p->comm : "?",
			proc_state(p));
		if (p->exited && p->exit_status >= 0)
			fprintf(r->out, " with status %d", p->exit_status);
		fprintf(r->out, " after %.2f s traced; %" PRIu64 " allocations (%s), %" PRIu64
			" frees, %" PRIu64 " failed calls\n",
			end > p->first_ts_ns && p->first_ts_ns ? (double)(end - p->first_ts_ns) / 1e9 : 0,
			p->c.allocs, fmt_bytes(p->c.alloc_bytes, b1, sizeof(b1)), p->c.frees,
			p->c.failed_calls);
		fprintf(r->out, "still live: %s in %" PRIu64 " allocations", fmt_bytes(p->live_bytes,
			b1, sizeof(b1)), p->live_count);
		if (p->pending_count)
			fprintf(r->out, "; pending async free: %s in %" PRIu64,
				fmt_bytes(p->pending_bytes, b2, sizeof(b2)), p->pending_count);
		fputc('\n', r->out);
		print_sites(r, p, BY_LIVE, "live allocations by site, largest first:");
		print_sites(r, p, BY_PENDING, "async frees still pending (stream not synchronized):");
		print_sites(r, p, BY_FAILED, "failed calls:");
		if (p->c.unknown_frees || p->c.double_frees || p->c.addr_reuse)
			fprintf(r->out, "frees of untracked pointers (allocated before attach): %" PRIu64
				"; double frees: %" PRIu64 "; live address returned again: %" PRIu64 "\n",
				p->c.unknown_frees, p->c.double_frees, p->c.addr_reuse);
		if (tproc__dropped(p) || p->loss[GL_STAT_READ_FAIL]) {
			fprintf(r->out, "LOST (results approximate):");
			for (k = 0; k < GL_STAT_MAX; k++)
				if (loss_names[k] && p->loss[k])
					fprintf(r->out, " %s=%" PRIu64, loss_names[k], p->loss[k]);
			fputc('\n', r->out);
		}
		if (r->json)
			json_verdict(r, p, now_ns);
	}
	if (t->bad_records)
		fprintf(r->out, "undecodable records skipped: %" PRIu64 "\n", t->bad_records);
	fflush(r->out);
	if (r->json)
		fflush(r->json);
}
