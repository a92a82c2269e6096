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
#include "engine/rules.h"
#include "engine/snapshot.h"
#include "engine/timeline.h"
#include "engine/tracker.h"

#define P1   1000
#define P2   2000
#define MiB  (1ULL << 20)
#define COMM 0xc0330000ULL
#define CTX  0xc7000000ULL

/* Records, back to back (each padded to 8 bytes). */
struct stream {
	uint8_t *p;
	size_t len, cap;
	size_t n;
};

static uint64_t clock_ns = 1000000;

static void push(struct stream *s, const struct gl_hdr *h)
{
	size_t sz = (h->size + 7) & ~7UL;

	if (s->len + sz > s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1 << 16;
		s->p = realloc(s->p, s->cap);
	}
	memcpy(s->p + s->len, h, h->size);
	s->len += sz;
	s->n++;
}

static int push_cb(void *ctx, const struct gl_hdr *h)
{
	push(ctx, h);
	return 0;
}

static struct gl_desc_rec mk(uint8_t kind, uint16_t api, uint32_t pid, uint32_t tid, uint8_t depth)
{
	struct gl_desc_rec r;

	memset(&r, 0, sizeof(r));
	r.call.hdr.size = sizeof(r.call);
	r.call.hdr.kind = kind;
	r.call.hdr.api = api;
	r.call.hdr.pid = pid;
	r.call.hdr.tid = tid;
	r.call.hdr.depth = depth;
	r.call.hdr.ts_ns = clock_ns += 1000;
	r.call.stack_id = -1;
	return r;
}

static void call(struct stream *s, uint8_t kind, uint16_t api, uint32_t pid, uint32_t tid,
		 uint8_t depth, uint64_t addr, uint64_t size, uint64_t aux, uint64_t caller,
		 int32_t stack)
{
	struct gl_desc_rec r = mk(kind, api, pid, tid, depth);

	r.call.addr = addr;
	r.call.size = size;
	r.call.aux = aux;
	r.call.caller = caller;
	r.call.stack_id = stack;
	if (kind == GL_REC_SYNC)
		r.call.aux2 = r.call.hdr.ts_ns - 500;
	push(s, &r.call.hdr);
}

/* cudaMalloc with its driver layer (at the same address), as the runtime makes it. */
static void cuda_malloc(struct stream *s, uint32_t pid, uint32_t tid, uint64_t addr, uint64_t size,
			uint64_t caller, int32_t stack)
{
	call(s, GL_REC_ALLOC, GL_API_CU_MEM_ALLOC, pid, tid, 1, addr, size, 0, 0x7000, -1);
	call(s, GL_REC_ALLOC, GL_API_CUDA_MALLOC, pid, tid, 0, addr, size, 0, caller, stack);
}

static void cuda_free(struct stream *s, uint32_t pid, uint32_t tid, uint64_t addr)
{
	call(s, GL_REC_FREE, GL_API_CUDA_FREE, pid, tid, 0, addr, 0, 0, 0x401900, -1);
	call(s, GL_REC_FREE, GL_API_CU_MEM_FREE, pid, tid, 1, addr, 0, 0, 0x7100, -1);
}

static void attach(struct stream *s, uint32_t pid)
{
	struct gl_proc_rec r;

	memset(&r, 0, sizeof(r));
	r.hdr = (struct gl_hdr){.size = sizeof(r),
				.kind = GL_REC_PROC,
				.pid = pid,
				.tid = pid,
				.ts_ns = clock_ns += 1000};
	r.event = GL_PROC_ATTACH;
	r.start_ticks = pid * 3;
	memcpy(r.comm, "decode", 7);
	push(s, &r.hdr);
}

static void step(struct stream *s, uint32_t pid)
{
	call(s, GL_REC_NOTIFY, GL_API_MARKER_STEP, pid, pid, 0, 0, 0, 0, 0x401000, -1);
}

/* A decode loop of two processes, every kind of state the snapshot rebuilds. */
static void workload(struct stream *s, int steps)
{
	uint64_t leak = 0x7f0000000000ULL, dev1 = 0x7e0000000000ULL, vmm_va = 0x7d0000000000ULL;
	struct gl_desc_rec cr;
	int32_t dev0 = 0, loc = 1;
	int i;

	attach(s, P1);
	attach(s, P2);
	/* init: a KV cache, a context and what the driver allocates in it, a communicator,
	 * a registration with two references, a VMM handle released while mapped */
	cuda_malloc(s, P1, P1, 0x10000000, 64 * MiB, 0x401100, 7);
	call(s, GL_REC_ALLOC, GL_API_CU_DEVICE_PRIMARY_CTX_RETAIN, P1, P1, 0, CTX, 0, 0, 0x401200,
	     -1);
	call(s, GL_REC_CALL, GL_API_CU_CTX_SET_CURRENT, P1, P1 + 1, 0, CTX, 0, 0, 0x401210, -1);
	call(s, GL_REC_ALLOC, GL_API_CU_MEM_ALLOC, P1, P1 + 1, 0, 0x20000000, 2 * MiB, 0, 0x401220,
	     8);
	call(s, GL_REC_ALLOC, GL_API_CUDA_MALLOC, P1, P1, 1, 0x30000000, 4 * MiB, 0, 0x7300, -1);
	call(s, GL_REC_ALLOC, GL_API_CUDA_MALLOC, P1, P1, 1, 0x30400000, 4 * MiB, 0, 0x7300, -1);
	call(s, GL_REC_ALLOC, GL_API_NCCL_COMM_INIT_RANK, P1, P1, 0, COMM, 0, 0, 0x401300, -1);
	call(s, GL_REC_ALLOC, GL_API_NCCL_COMM_REGISTER, P1, P1, 0, 0x40000000, 1 * MiB, COMM,
	     0x401310, -1);
	call(s, GL_REC_ALLOC, GL_API_NCCL_COMM_REGISTER, P1, P1, 0, 0x40000000, 1 * MiB, COMM,
	     0x401310, -1);
	cr = mk(GL_REC_ALLOC, GL_API_CU_MEM_CREATE, P1, P1, 0);
	cr.call.hdr.size = sizeof(cr);
	cr.call.hdr.flags = GL_HF_DESC;
	memcpy(cr.desc + 8, &loc, 4);
	memcpy(cr.desc + 12, &dev0, 4);
	cr.call.addr = 0x51;
	cr.call.size = 8 * MiB;
	cr.call.caller = 0x401400;
	push(s, &cr.call.hdr);
	call(s, GL_REC_ALLOC, GL_API_CU_MEM_ADDRESS_RESERVE, P1, P1, 0, vmm_va, 8 * MiB, 0,
	     0x401410, -1);
	call(s, GL_REC_CALL, GL_API_CU_MEM_MAP, P1, P1, 0, vmm_va, 8 * MiB, 0x51, 0x401420, -1);
	call(s, GL_REC_FREE, GL_API_CU_MEM_RELEASE, P1, P1, 0, 0x51, 0, 0, 0x401430, -1);
	/* a second thread on device 1 */
	call(s, GL_REC_CALL, GL_API_CUDA_SET_DEVICE, P1, P1 + 2, 0, 0, 0, 1, 0x401500, -1);
	cuda_malloc(s, P2, P2, 0x10000000, 16 * MiB, 0x402100, 9);
	for (i = 0; i < steps; i++) {
		step(s, P1);
		/* activations: async on a stream, freed, the stream synchronised; the second
		 * one's free stays pending across the next boundary every other step */
		call(s, GL_REC_ALLOC, GL_API_CUDA_MALLOC_ASYNC, P1, P1, 0, 0x60000000 + i * 0x1000,
		     2 * MiB, 0xaa, 0x401600, -1);
		call(s, GL_REC_FREE, GL_API_CUDA_FREE_ASYNC, P1, P1, 0, 0x60000000 + i * 0x1000, 0,
		     0xaa, 0x401610, -1);
		if (i % 2 == 0)
			call(s, GL_REC_SYNC, GL_API_CUDA_STREAM_SYNCHRONIZE, P1, P1, 0, 0, 0, 0xaa,
			     0x401620, -1);
		/* the leak, and now and then a free of an old one */
		cuda_malloc(s, P1, P1, leak + (uint64_t)i * MiB, 1 * MiB, 0x401700, 11 + i % 3);
		if (i % 3 == 2)
			cuda_free(s, P1, P1, leak + (uint64_t)(i - 2) * MiB);
		call(s, GL_REC_ALLOC, GL_API_CUDA_MALLOC, P1, P1 + 2, 0, dev1 + i * 0x1000, 4096, 0,
		     0x401800, -1);
		/* P2: flat, steps of its own */
		step(s, P2);
		cuda_malloc(s, P2, P2, 0x70000000 + i * 0x1000, 65536, 0x402200, -1);
		cuda_free(s, P2, P2, 0x70000000 + i * 0x1000);
	}
}

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
	return CHECK(!d.bytes && !d.count && !d.sites,
		     "%s, cut at record %zu: %" PRIu64 " bytes, %" PRIu64 " allocations at %" PRIu64
		     " site stacks differ",
		     what, cut, d.bytes, d.count, d.sites);
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

/* The steps after the cut: the window's steps, numbered as in the whole stream. */
static void window_steps(struct analysis *whole, struct analysis *r, size_t cut)
{
	const struct step_stat *ws, *rs;
	size_t nw, nr;

	ws = timeline__steps(whole->tl, P1, &nw);
	rs = timeline__steps(r->tl, P1, &nr);
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
	if (!CHECK(!timeline__growth(r->tl, P1, &g, &n), "growth"))
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
