// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * capture_gen: write a realistic capture of N traced calls through gpuleak's own capture
 * writer, for measuring file size and `gpuleak report` speed without a tracer.
 *
 *   capture_gen -o FILE [-n CALLS] [-s SEED] [--store] [--block-size BYTES]
 *
 * The stream is shaped like an inference server under a caching allocator: one busy thread
 * and three quieter ones, 48 call sites in an executable and a library, each with a few
 * sizes; 60% of the sites use cudaMalloc/cudaFree, the rest cudaMallocAsync/cudaFreeAsync
 * on one of two streams, synchronized every ~16 calls. Most allocations live for a few
 * dozen calls, some for thousands, 0.5% forever (the leak). Freed blocks go back to a
 * per-size LIFO list and are handed out again first, as a caching allocator does. Calls
 * arrive ~3 us apart (exponential), with a tick every 50 ms as a live session makes them.
 * Every record is what the BPF side or the live session (user/live/) would have produced
 * for such a process.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "capture/capture.h"
#include "probe/proc_maps.h"
#include "symbols/symbolizer.h"

#define PID	 4242
#define NR_SITES 48
#define EXE_BASE 0x555555554000ULL
#define LIB_BASE 0x7f1234000000ULL
#define TICK_NS	 50000000ULL

struct gsite {
	uint64_t caller, free_caller;
	uint16_t api, free_api;
	uint64_t sizes[4];
	int nr_sizes;
	uint64_t stream;
	uint32_t tid;
	char name[32];
};

struct live {
	uint64_t due; /* call index at which it is freed */
	uint64_t addr, size;
	int site;
};

struct gen {
	struct capture *c;
	uint64_t seed;
	uint64_t ts, next_tick;
	uint64_t calls, max_calls;
	struct gsite sites[NR_SITES];
	struct live *heap; /* min-heap by due */
	size_t nr_heap, cap_heap;
	struct {
		uint64_t size;
		uint64_t *v;
		size_t n, cap;
	} * freel; /* per-size LIFO */
	size_t nr_freel;
	uint64_t bump;
	int since_sync[2];
};

static uint64_t rnd(struct gen *g)
{
	/* xorshift64*: fast and reproducible across libcs */
	g->seed ^= g->seed >> 12;
	g->seed ^= g->seed << 25;
	g->seed ^= g->seed >> 27;
	return g->seed * 0x2545f4914f6cdd1dULL;
}

static double unif(struct gen *g)
{
	return (rnd(g) >> 11) * (1.0 / 9007199254740992.0);
}

static int emit(struct gen *g, struct gl_call_rec *r)
{
	int err;

	/* The loop's tick: every poll of a live session, here every 50 ms of record time. */
	while (g->ts >= g->next_tick) {
		struct gl_hdr t = {.size = sizeof(t), .kind = GL_REC_TICK, .ts_ns = g->next_tick};

		err = capture__write_record(g->c, &t);
		if (err)
			return err;
		g->next_tick += TICK_NS;
	}
	r->hdr.size = sizeof(*r);
	r->hdr.pid = PID;
	r->hdr.ts_ns = g->ts;
	r->stack_id = -1;
	g->calls++;
	return capture__write_record(g->c, &r->hdr);
}

static void advance(struct gen *g)
{
	g->ts += 200 + (uint64_t)(-log(1.0 - unif(g)) * 2800);
}

static uint64_t *freel_get(struct gen *g, uint64_t size, size_t *n)
{
	size_t i;

	for (i = 0; i < g->nr_freel; i++)
		if (g->freel[i].size == size) {
			*n = i;
			return &g->freel[i].size;
		}
	*n = g->nr_freel;
	return NULL;
}

static int freel_push(struct gen *g, uint64_t size, uint64_t addr)
{
	size_t i;

	if (!freel_get(g, size, &i)) {
		void *v = realloc(g->freel, (g->nr_freel + 1) * sizeof(*g->freel));

		if (!v)
			return -ENOMEM;
		g->freel = v;
		memset(&g->freel[i], 0, sizeof(g->freel[i]));
		g->freel[i].size = size;
		g->nr_freel++;
	}
	if (g->freel[i].n == g->freel[i].cap) {
		size_t cap = g->freel[i].cap ? 2 * g->freel[i].cap : 64;
		uint64_t *v = realloc(g->freel[i].v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		g->freel[i].v = v;
		g->freel[i].cap = cap;
	}
	g->freel[i].v[g->freel[i].n++] = addr;
	return 0;
}

static uint64_t addr_for(struct gen *g, uint64_t size)
{
	size_t i;
	uint64_t a;

	if (freel_get(g, size, &i) && g->freel[i].n)
		return g->freel[i].v[--g->freel[i].n];
	a = g->bump;
	g->bump += (size + 511) & ~511ULL;
	return a;
}

static int heap_push(struct gen *g, struct live l)
{
	size_t i;

	if (g->nr_heap == g->cap_heap) {
		size_t cap = g->cap_heap ? 2 * g->cap_heap : 4096;
		struct live *v = realloc(g->heap, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		g->heap = v;
		g->cap_heap = cap;
	}
	for (i = g->nr_heap++; i && g->heap[(i - 1) / 2].due > l.due; i = (i - 1) / 2)
		g->heap[i] = g->heap[(i - 1) / 2];
	g->heap[i] = l;
	return 0;
}

static struct live heap_pop(struct gen *g)
{
	struct live top = g->heap[0], last = g->heap[--g->nr_heap];
	size_t i = 0, c;

	for (; (c = 2 * i + 1) < g->nr_heap; i = c) {
		if (c + 1 < g->nr_heap && g->heap[c + 1].due < g->heap[c].due)
			c++;
		if (last.due <= g->heap[c].due)
			break;
		g->heap[i] = g->heap[c];
	}
	g->heap[i] = last;
	return top;
}

static int do_free(struct gen *g, struct live l)
{
	struct gsite *s = &g->sites[l.site];
	struct gl_call_rec r = {.hdr = {.kind = GL_REC_FREE, .api = s->free_api, .tid = s->tid},
				.addr = l.addr,
				.aux = s->stream,
				.caller = s->free_caller};
	int err;

	advance(g);
	err = emit(g, &r);
	if (!err)
		err = freel_push(g, l.size, l.addr);
	if (err || s->free_api != GL_API_CUDA_FREE_ASYNC)
		return err;
	/* the stream is synchronized every ~16 async frees */
	if (++g->since_sync[s->stream == 0x1000] >= 16) {
		struct gl_call_rec y = {.hdr = {.kind = GL_REC_SYNC,
						.api = GL_API_CUDA_STREAM_SYNCHRONIZE,
						.tid = s->tid},
					.aux = s->stream,
					.caller = EXE_BASE + 0x9000};

		g->since_sync[s->stream == 0x1000] = 0;
		advance(g);
		y.aux2 = g->ts;
		g->ts += 5000 + rnd(g) % 20000;
		err = emit(g, &y);
	}
	return err;
}

static int do_alloc(struct gen *g)
{
	/* busy sites first: a few sites make most calls */
	int i = (int)(NR_SITES * pow(unif(g), 2.5));
	struct gsite *s = &g->sites[i];
	uint64_t size = s->sizes[rnd(g) % s->nr_sizes];
	struct gl_call_rec r = {.hdr = {.kind = GL_REC_ALLOC, .api = s->api, .tid = s->tid},
				.size = size,
				.aux = s->stream,
				.caller = s->caller};
	double u = unif(g);
	struct live l = {.site = i, .size = size};
	int err;

	advance(g);
	if (rnd(g) % 10000 == 0) {
		/* out of memory now and then: cudaErrorMemoryAllocation */
		r.hdr.kind = GL_REC_ALLOC_FAIL;
		r.ret = 2;
		return emit(g, &r);
	}
	r.addr = addr_for(g, size);
	err = emit(g, &r);
	if (err)
		return err;
	if (u < 0.005)
		return 0; /* leaked */
	l.addr = r.addr;
	l.due = g->calls + (u < 0.14 ? 1000 + rnd(g) % 20000 : 2 + rnd(g) % 60);
	return heap_push(g, l);
}

static void sites_init(struct gen *g)
{
	int i, j;

	for (i = 0; i < NR_SITES; i++) {
		struct gsite *s = &g->sites[i];
		bool async = i % 5 >= 3;
		uint64_t base = i < NR_SITES / 2 ? EXE_BASE + 0x1000 : LIB_BASE + 0x20000;

		s->caller = base + 0x40 * i + 0x16;
		s->free_caller = base + 0x4000 + 0x40 * i + 0x1b;
		s->api = async ? GL_API_CUDA_MALLOC_ASYNC : GL_API_CUDA_MALLOC;
		s->free_api = async ? GL_API_CUDA_FREE_ASYNC : GL_API_CUDA_FREE;
		s->stream = async ? (i % 2 ? 0x1000 : 0x2000) : 0;
		s->tid = i % 7 == 0 ? PID + 1 + i % 3 : PID;
		s->nr_sizes = 1 + rnd(g) % 4;
		for (j = 0; j < s->nr_sizes; j++)
			s->sizes[j] =
			    rnd(g) % 3 ? 512ULL << (rnd(g) % 14) : 512 * (1 + rnd(g) % 4096);
		snprintf(s->name, sizeof(s->name), "site_%02d", i);
	}
}

/* What a recorder writes at attach and finish, besides the records. */
static int write_context(struct gen *g)
{
	char *argv[] = {"python3", "serve.py", "--model", "m.gguf", NULL};
	struct capture_proc p = {.pid = PID,
				 .start_ticks = 12345,
				 .comm = "python3",
				 .exe = "/usr/bin/python3.11",
				 .argv = argv,
				 .argc = 4};
	struct pmap_ent ents[] = {
	    {.start = EXE_BASE,
	     .end = EXE_BASE + 0x10000,
	     .exec = true,
	     .path = "/opt/serve/serve"},
	    {.start = LIB_BASE,
	     .end = LIB_BASE + 0x100000,
	     .pgoff = 0x1000,
	     .exec = true,
	     .path = "/opt/serve/lib/libtorch_cuda.so"},
	};
	struct proc_maps m = {.pid = PID, .v = ents, .n = 2};
	int err = capture__add_process(g->c, &p);

	return err ? err : capture__add_maps(g->c, &m, NULL);
}

static int write_names(struct gen *g)
{
	int i, err = 0;

	for (i = 0; i < NR_SITES && !err; i++) {
		struct gsite *s = &g->sites[i];
		const char *mod = s->caller >= LIB_BASE ? "libtorch_cuda.so" : "serve";
		struct sym_info a = {.module = mod, .func = s->name, .func_off = 0x16};
		struct sym_info f = {.module = mod, .func = s->name, .func_off = 0x401b};

		err = capture__add_symbol(g->c, PID, s->caller, &a);
		if (!err)
			err = capture__add_symbol(g->c, PID, s->free_caller, &f);
	}
	return err;
}

static int proc_rec(struct gen *g, uint32_t event)
{
	struct gl_proc_rec r = {
	    .hdr = {.size = sizeof(r), .kind = GL_REC_PROC, .pid = PID, .tid = PID, .ts_ns = g->ts},
	    .event = event,
	    .start_ticks = 12345,
	    .comm = "python3"};

	return capture__write_record(g->c, &r.hdr);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"store", no_argument, NULL, 'S'},
	    {"block-size", required_argument, NULL, 'b'},
	    {},
	};
	struct capture_opts o = {.force = true};
	struct gen g = {.seed = 1, .max_calls = 10000000, .bump = 0x7f0000000000ULL};
	struct gl_loss_rec loss = {
	    .hdr = {.size = sizeof(loss), .kind = GL_REC_LOSS, .pid = PID, .tid = PID}};
	struct capture_stats st;
	const char *path = NULL;
	char why[256];
	int opt, err;

	while ((opt = getopt_long(argc, argv, "o:n:s:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			path = optarg;
			break;
		case 'n':
			g.max_calls = strtoull(optarg, NULL, 0);
			break;
		case 's':
			g.seed = strtoull(optarg, NULL, 0) | 1;
			break;
		case 'S':
			o.store = true;
			break;
		case 'b':
			o.block_bytes = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: capture_gen -o FILE [-n CALLS] [-s SEED] [--store] "
					"[--block-size BYTES]\n");
			return 2;
		}
	}
	if (!path) {
		fprintf(stderr, "capture_gen: -o FILE is required\n");
		return 2;
	}
	err = capture__create(path, &o, &g.c, why, sizeof(why));
	if (err) {
		fprintf(stderr, "capture_gen: %s: %s\n", path, why);
		return 1;
	}
	sites_init(&g);
	g.ts = 1000000000000ULL;
	g.next_tick = g.ts;
	err = write_context(&g);
	if (!err)
		err = proc_rec(&g, GL_PROC_ATTACH);
	while (!err && g.calls < g.max_calls) {
		if (g.nr_heap && g.heap[0].due <= g.calls)
			err = do_free(&g, heap_pop(&g));
		else
			err = do_alloc(&g);
	}
	if (!err) {
		loss.hdr.ts_ns = g.ts;
		err = capture__write_record(g.c, &loss.hdr);
	}
	if (!err)
		err = proc_rec(&g, GL_PROC_EXIT);
	if (!err)
		err = write_names(&g);
	if (!err)
		err = capture__finish(g.c);
	if (err) {
		fprintf(stderr, "capture_gen: writing %s: %s\n", path, strerror(-err));
		return 1;
	}
	capture__stats(g.c, &st);
	printf("%s: %" PRIu64 " calls, %" PRIu64 " records, %" PRIu64 " bytes: %.2f bytes/call "
	       "(%.2f in RECORDS blocks)\n",
	       path, g.calls, st.records, st.bytes, (double)st.bytes / g.calls,
	       (double)st.record_bytes / g.calls);
	capture__free(g.c);
	while (g.nr_freel--)
		free(g.freel[g.nr_freel].v);
	free(g.freel);
	free(g.heap);
	return 0;
}
