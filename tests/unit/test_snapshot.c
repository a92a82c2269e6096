// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Snapshots (engine/snapshot.c): a stream cut anywhere gives, as the snapshot of what came
 * before the cut followed by the rest, the very live state of the whole stream, site by site
 * and stack by stack, with classes by rule and by init, pending frees, layers, contexts,
 * communicators and VMM mappings. Checked at every cut of a generated workload of two
 * processes, and the steps after the cut judged as the whole stream judges them.
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "gpuleak.h"
#include "engine/analysis.h"
#include "tracker/rules.h"
#include "engine/snapshot.h"
#include "engine/timeline.h"
#include "tracker/tracker.h"

#include "workload.h"

static const char *const RULES = "persistent api=cudaMalloc size>=64MiB\n"
				 "persistent api=cuMemAlloc_v2 phase=init\n";

static struct analysis *new_analysis(struct rules *rs)
{
	struct analysis_opts o = {.rules = rs};
	struct analysis *a;

	o.steps.source = STEP_MARKER;
	o.steps.warmup_steps = 1;
	o.steps.min_growth_steps = 3;
	return analysis__new(&o, NULL, NULL, &a) ? NULL : a;
}

/* Feed s's records [from, to) to a; with si, as a snapshot (snapshot__at before each). */
static void feed(struct analysis *a, const struct stream *s, size_t from, size_t to,
		 struct snapshot_info *si)
{
	size_t off = 0, i;

	for (i = 0; i < to; i++) {
		const struct gl_hdr *h = (const struct gl_hdr *)(s->p + off);

		if (i >= from) {
			if (si)
				snapshot__at(a, si, i);
			analysis__feed(a, h);
		}
		off += (h->size + 7) & ~7UL;
	}
	if (si)
		snapshot__at(a, si, to);
}

static bool same(const struct tracker *want, const struct tracker *got, const char *what,
		 size_t cut)
{
	struct snapshot_diff d;

	if (!CHECK(!snapshot__compare(want, got, &d), "compare"))
		return false;
	return CHECK(!d.bytes && !d.count && !d.sites && !d.comms,
		     "%s, cut at record %zu: %" PRIu64 " bytes, %" PRIu64 " allocations at %" PRIu64
		     " site stacks, %" PRIu64 " communicators differ",
		     what, cut, d.bytes, d.count, d.sites, d.comms);
}

static void proc_sums(const struct tracker *want, const struct tracker *got, pid_t pid, size_t cut)
{
	const struct tproc *w = tracker__proc((struct tracker *)want, pid);
	const struct tproc *g = tracker__proc((struct tracker *)got, pid);

	if (!w && !g)
		return;
	if (!CHECK(w && g, "process %d at cut %zu", pid, cut))
		return;
	CHECK(w->live_bytes == g->live_bytes && w->pending_bytes == g->pending_bytes &&
		  w->persistent_bytes == g->persistent_bytes && w->init_bytes == g->init_bytes &&
		  w->live_count == g->live_count,
	      "pid %d cut %zu: live %" PRIu64 "/%" PRIu64 " pending %" PRIu64 "/%" PRIu64
	      " persistent %" PRIu64 "/%" PRIu64 " init %" PRIu64 "/%" PRIu64,
	      pid, cut, w->live_bytes, g->live_bytes, w->pending_bytes, g->pending_bytes,
	      w->persistent_bytes, g->persistent_bytes, w->init_bytes, g->init_bytes);
}

/*
 * No free after the cut reads as a double free unless it is one in the whole stream: a VMM
 * handle's second reference (ncclCuMemFree's cuMemRetainAllocationHandle), taken before the
 * cut and released after it, needs its own release there too.
 */
static void no_double_frees(const struct tracker *whole, const struct tracker *lag,
			    const struct tracker *got, pid_t pid, size_t cut)
{
	const struct tproc *w = tracker__proc((struct tracker *)whole, pid);
	const struct tproc *l = tracker__proc((struct tracker *)lag, pid);
	const struct tproc *g = tracker__proc((struct tracker *)got, pid);
	uint64_t before = l ? l->c.double_frees : 0;

	if (!CHECK(w && g, "process %d at cut %zu", pid, cut))
		return;
	CHECK(before + g->c.double_frees == w->c.double_frees,
	      "pid %d cut %zu: double frees %" PRIu64 " before the cut + %" PRIu64
	      " after it, of %" PRIu64,
	      pid, cut, before, g->c.double_frees, w->c.double_frees);
}

/* The steps after the cut: the window's steps, numbered as in the whole stream. */
static void window_steps(struct analysis *whole, struct analysis *r, size_t cut)
{
	const struct step_stat *ws, *rs;
	size_t nw, nr;

	ws = timeline__steps(whole->tl, tracker__proc(whole->t, P1), &nw);
	rs = timeline__steps(r->tl, tracker__proc(r->t, P1), &nr);
	/* The first step r closes began before the cut: only those after it are whole. */
	if (nr < 2 || !nw)
		return;
	CHECK(rs[nr - 1].step == ws[nw - 1].step && rs[nr - 1].live == ws[nw - 1].live &&
		  rs[nr - 1].allocated == ws[nw - 1].allocated,
	      "last step at cut %zu: step %lld/%lld live %" PRIu64 "/%" PRIu64, cut,
	      (long long)ws[nw - 1].step, (long long)rs[nr - 1].step, ws[nw - 1].live,
	      rs[nr - 1].live);
}

static void snapshot_at_every_cut(void)
{
	struct stream s = {0};
	struct rules *rs = NULL;
	struct analysis *whole = NULL;
	char err[256];
	size_t cut;

	workload(&s, 24);
	if (!CHECK(!rules__new(&rs), "rules") ||
	    !CHECK(!rules__parse(rs, RULES, strlen(RULES), "test", err, sizeof(err)), "%s", err) ||
	    !CHECK(!rules__add_builtins(rs), "builtins"))
		goto cleanup;
	whole = new_analysis(rs);
	if (!CHECK(whole, "analysis"))
		goto cleanup;
	feed(whole, &s, 0, s.n, NULL);
	for (cut = 0; cut <= s.n; cut++) {
		struct analysis *lag = new_analysis(rs), *r = new_analysis(rs);
		struct stream snap = {0};
		struct snapshot_info si;

		if (!CHECK(lag && r, "analyses")) {
			analysis__free(lag);
			analysis__free(r);
			break;
		}
		feed(lag, &s, 0, cut, NULL);
		if (CHECK(!snapshot__emit(lag, lag->t->last_ts_ns, push_cb, &snap, &si), "emit")) {
			CHECK_U64(si.skipped_bytes, 0, "nothing skipped");
			CHECK(si.records == snap.n, "records counted");
			feed(r, &snap, 0, snap.n, &si);
			if (same(lag->t, r->t, "the snapshot alone", cut)) {
				proc_sums(lag->t, r->t, P1, cut);
				feed(r, &s, cut, s.n, NULL);
				same(whole->t, r->t, "snapshot + the rest", cut);
				proc_sums(whole->t, r->t, P1, cut);
				no_double_frees(whole->t, lag->t, r->t, P1, cut);
				proc_sums(whole->t, r->t, P2, cut);
				window_steps(whole, r, cut);
			}
			snapshot_info__free(&si);
		}
		free(snap.p);
		analysis__free(lag);
		analysis__free(r);
		if (check_failures)
			break;
	}
cleanup:
	analysis__free(whole);
	rules__free(rs);
	free(s.p);
}

/* The growth the window shows: the leak's slope per step after a cut deep in the stream. */
static void window_growth(void)
{
	struct stream s = {0}, snap = {0};
	struct rules *rs = NULL;
	struct analysis *lag = NULL, *r = NULL;
	struct snapshot_info si = {0};
	struct growth *g = NULL;
	size_t n = 0, i, cut;
	bool found = false;

	workload(&s, 40);
	if (!CHECK(!rules__new(&rs) && !rules__add_builtins(rs), "rules"))
		goto cleanup;
	lag = new_analysis(rs);
	r = new_analysis(rs);
	if (!CHECK(lag && r, "analyses"))
		goto cleanup;
	cut = s.n * 3 / 4;
	feed(lag, &s, 0, cut, NULL);
	if (!CHECK(!snapshot__emit(lag, lag->t->last_ts_ns, push_cb, &snap, &si), "emit"))
		goto cleanup;
	feed(r, &snap, 0, snap.n, &si);
	feed(r, &s, cut, s.n, NULL);
	timeline__finish(r->tl, P1, clock_ns);
	if (!CHECK(!timeline__growth(r->tl, tracker__proc(r->t, P1), &g, &n), "growth"))
		goto cleanup;
	for (i = 0; i < n; i++) {
		const struct site *st = &r->t->sites[g[i].site];

		if (st->caller == 0x401700 && st->api == GL_API_CUDA_MALLOC) {
			found = true;
			/* 1 MiB a step, one freed every third: 2/3 MiB a step on average */
			CHECK(g[i].slope_per_step > 0.5 * MiB && g[i].slope_per_step < 0.8 * MiB,
			      "slope %.0f", g[i].slope_per_step);
			CHECK(g[i].first_step >= 29, "growth judged in the window: from step %lld",
			      (long long)g[i].first_step);
		}
	}
	CHECK(found, "the leak grows in the window (%zu growing sites)", n);
cleanup:
	free(g);
	snapshot_info__free(&si);
	analysis__free(lag);
	analysis__free(r);
	rules__free(rs);
	free(s.p);
	free(snap.p);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"snapshot_at_every_cut", snapshot_at_every_cut},
	    {"window_growth", window_growth},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
