// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <inttypes.h>
#include "engine/cost.h"
#include "engine/timeline.h"
#include "lib/term.h"
#include "lib/units.h"
#include "output/describe.h"
#include "output/interval.h"
#include "output/report_sink.h"

bool interval__shows(const struct tproc *p, uint64_t now_ns)
{
	return !(p->exited && p->last_ts_ns < now_ns - (uint64_t)1e9) && verdict__reported(p);
}

int interval__view(const struct tracker *t, const struct tproc *p, struct interval_view *iv)
{
	iv->p = p;
	iv->nr_rows = query__by_api(t, p, iv->rows, INTERVAL_ROWS);
	return verdict__rank(t, p, VERDICT_LEAKS, &iv->leaks);
}

void interval__table(struct report *r, const struct interval_view *iv, uint64_t now_ns)
{
	const struct tracker *t = r->t;
	const struct tproc *p = iv->p;
	char b1[32], b2[32], dev[16];
	struct cost_figures c;
	size_t j;

	fprintf(r->out,
		"[%7.2fs] pid %d: live %s in %" PRIu64 ", pending %s; %" PRIu64 " allocs, %" PRIu64
		" frees, %" PRIu64 " failed\n",
		report__secs(r, now_ns), p->pid, fmt_bytes(p->live_bytes, b1, sizeof(b1)),
		p->live_count, fmt_bytes(p->pending_bytes, b2, sizeof(b2)), p->c.allocs, p->c.frees,
		p->c.failed_calls);
	cost__figures(p, &c);
	if (c.measured)
		fprintf(r->out,
			"    tracing ~ %.1f %% of its CPU: %.0f traps/s, BPF %.1f ms, level %s\n",
			100 * c.cpu_fraction, c.traps_per_s, (double)c.bpf_ns / 1e6,
			cost__level_name(c.level));
	for (j = 0; j < iv->nr_rows; j++) {
		describe__device(t, &t->sites[iv->rows[j].site], dev, sizeof(dev));
		fprintf(r->out, "    %-28s dev %-4s %10s %7" PRIu64 "\n",
			cat_api_name(iv->rows[j].api), dev,
			fmt_bytes(iv->rows[j].bytes, b1, sizeof(b1)), iv->rows[j].count);
	}
	for (j = 0; j < iv->leaks.n && (int)j < r->top; j++) {
		const struct site *s = &t->sites[iv->leaks.v[j]];

		fprintf(r->out, "    top %10s %5" PRIu64 "  %s\n",
			fmt_bytes(s->live_bytes, b1, sizeof(b1)), s->live_count,
			term_tmp(describe__site(r, s)));
	}
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

void interval__step_line(struct report *r, pid_t pid, const struct step_stat *st)
{
	char b1[32], b2[32], b3[32], b4[32], spark[64];
	const struct step_stat *all;
	size_t n;

	/* (live, at pid's step boundary: its newest process is the one stepping) */
	all = timeline__steps(r->tl, query__proc(r->t, pid), &n);
	sparkline(all, n, spark, sizeof(spark));
	if (!r->step_header) {
		fprintf(r->out, "%9s %7s %6s %10s %10s %10s %10s  %s\n", "TIME", "PID", "STEP",
			"LIVE", "PERSIST", "PENDING", "SUSPECT", "TREND");
		r->step_header = true;
	}
	fprintf(r->out, "%8.2fs %7d %6" PRId64 " %10s %10s %10s %10s  %s\n",
		report__secs(r, st->t_end_ns), pid, st->step, fmt_bytes(st->live, b1, sizeof(b1)),
		fmt_bytes(st->persistent, b2, sizeof(b2)), fmt_bytes(st->pending, b3, sizeof(b3)),
		fmt_bytes(st->suspect, b4, sizeof(b4)), spark);
}
