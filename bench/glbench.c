// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * glbench: the parts of `make bench` that need C (bench/bench.py runs them).
 *
 *   glbench bare -p PID [--cost BITS] LIB
 *                                  empty BPF programs on LIB's cudaMalloc (entry + return)
 *                                  and cudaFree (entry) for PID, attached as gpuleak attaches
 *                                  its own (uprobe_multi, pid-filtered): the trap floor.
 *                                  --cost: do some of gpuleak's work in them (enum
 *                                  bench_cost), draining the records as gpuleak does.
 *                                  Prints "attached", holds until PID exits.
 *   glbench usdt -p PID LIB PROVIDER:NAME...
 *                                  an empty USDT program on each probe of LIB for PID,
 *                                  attached as gpuleak attaches its own (libbpf's USDT
 *                                  support, a link per probe, semaphores raised): the USDT
 *                                  floor. Prints "attached", holds until PID exits.
 *   glbench attach -p PID OBJECT:OFFSET[,OFFSET...]...
 *                                  the floor of attaching and detaching: empty BPF programs
 *                                  at the given file offsets of each OBJECT for PID, one
 *                                  entry and one return uprobe_multi link per object, as
 *                                  gpuleak links its own (a return probe on every site: at
 *                                  least the links gpuleak makes). Prints "attached N probes
 *                                  in M objects in X ms" (the links alone: the offsets are
 *                                  given, nothing is scanned), holds until SIGINT or PID
 *                                  exits, then destroys the links and exits.
 *   glbench consumer [-l LIVE] [-n EVENTS] [-b BATCH] [--cold | --grow]
 *                                  records decoded and applied per second by one thread:
 *                                  a BPF program fills a real ring buffer with BATCH
 *                                  allocate/free records, then gpuleak's ring buffer consumer
 *                                  drains it into the analysis, which holds LIVE allocations.
 *                                  Each free releases the allocation made 16 pairs earlier
 *                                  (short-lived buffers beside a big resident set); --cold:
 *                                  the oldest one, so every free misses the cache.
 *                                  events_per_s: the median over batches (default 100000
 *                                  records); mean_events_per_s: over the whole run.
 *   glbench memory [-l LIVE]       heap bytes the analysis holds per live allocation, with
 *                                  LIVE allocations live.
 *   --watch RING (consumer, memory)
 *                                  as gpuleak watch runs: every record also into a flight
 *                                  recorder of RING bytes (live/flight.h), whose lagging
 *                                  analysis takes what leaves it. memory --watch first churns
 *                                  allocate/free pairs until the LIVE allocations have all
 *                                  left the ring (the state of a recorder left on for hours:
 *                                  the live set twice, the ring full), then writes one
 *                                  capture of it and says its size, how long it took and the
 *                                  peak RSS meanwhile.
 *   glbench symbols [-n ENTRIES] [-f FRAMES] LIB
 *                                  naming stack frames from a perf map against naming them
 *                                  from an ELF symbol table of as many functions: LIB is
 *                                  bench/manysyms.S built with ENTRIES functions (this process
 *                                  maps it), the perf map /tmp/perf-PID.map names as many
 *                                  pieces of anonymous executable memory in V8's format. The
 *                                  symbolizer names FRAMES distinct addresses of each, in
 *                                  batches of 32 (a stack) taking turns, in a random order:
 *                                  ns per frame of each, the first frame of each (what reads
 *                                  the symbol table or the map), and the heap the map holds
 *                                  per entry.
 *   glbench procs [-r REPS] OBJECT SYMOBJ
 *                                  the recovery of Dawn's proc table from OBJECT (an object
 *                                  without symbols: libonnxruntime.so.1), against two things
 *                                  measured in the same run: one pass of memmem over the
 *                                  same read-only bytes for a string that is not there (what
 *                                  reading the object once costs, the floor of any scan of
 *                                  it), and gpuleak's symbol scan of SYMOBJ (a Dawn with
 *                                  symbols: dawn.node), per MB of each. Medians of REPS (9),
 *                                  the file mapped and paged in before timing.
 *
 * consumer and memory link gpuleak's own objects: what is measured is gpuleak's code.
 * Results are one JSON line on stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "capture/capture.h"
#include "live/flight.h"
#include "engine/analysis.h"
#include "symbols/symbolizer.h"
#include "bench.h"
#include "bench.skel.h"
#include "probe/dawn_procs.h"
#include "probe/elf_image.h"
#include "probe/elf_obj.h"
#include "probe/modules.h"
#include "probe/proc_maps.h"
#include "symbols/symbolizer.h"
#include "gpuleak.h"
#include "live/ringbuf.h"
#include "tracker/rules.h"

#define PID    4242
#define BASE   0x700000000000ULL
#define CALLER 0x555555556000ULL

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int usage(void)
{
	fprintf(stderr, "usage: glbench bare -p PID [--cost BITS] LIB\n"
			"       glbench usdt -p PID LIB PROVIDER:NAME...\n"
			"       glbench attach -p PID OBJECT:OFFSET[,OFFSET...]...\n"
			"       glbench consumer [-l LIVE] [-n EVENTS] [-b BATCH] [--cold | "
			"--grow] [--watch RING]\n"
			"       glbench memory [-l LIVE] [--watch RING]\n"
			"       glbench symbols [-n ENTRIES] [-f FRAMES] LIB\n"
			"       glbench procs [-r REPS] OBJECT SYMOBJ\n"
			"       glbench noprocs [-r REPS] OBJECT SYMOBJ\n");
	return 2;
}

static struct bench_bpf *load_bpf(void)
{
	struct bench_bpf *skel = bench_bpf__open_and_load();

	if (!skel) {
		int err = errno;

		fprintf(stderr, "glbench: loading BPF: %s\n", strerror(err));
		errno = err;
	}
	return skel;
}

/* ---- bare: the trap floor ---- */

struct find_fn {
	const char *name;
	uint64_t vaddr;
};

static int find_fn_cb(const struct elf_func *f, void *ctx)
{
	struct find_fn *ff = ctx;
	size_t n = strlen(ff->name);

	/* cudaMalloc, or cudaMalloc@@libcudart.so.13 in .symtab */
	if (strncmp(f->name, ff->name, n) || (f->name[n] && f->name[n] != '@'))
		return 0;
	ff->vaddr = f->vaddr;
	return 1;
}

static int func_offset(struct elf_obj *o, const char *name, unsigned long *off)
{
	struct find_fn ff = {.name = name};
	uint64_t foff;

	elf_obj__for_each_func(o, find_fn_cb, &ff);
	if (!ff.vaddr || elf_obj__vaddr_to_off(o, ff.vaddr, &foff))
		return -ENOENT;
	*off = foff;
	return 0;
}

static int no_sink(void *ctx, const struct gl_hdr *h)
{
	(void)ctx, (void)h;
	return 0;
}

static int cmd_bare(int argc, char **argv)
{
	static const struct option longopts[] = {{"cost", required_argument, NULL, 'c'}, {}};
	struct bench_bpf *skel = NULL;
	struct bpf_link *enter = NULL, *exit_link = NULL;
	struct elf_obj *o = NULL;
	struct ringbuf *rb = NULL;
	unsigned long offs[2];
	__u64 cookies[2] = {0, 1};
	struct pollfd pfd[2] = {{.fd = -1, .events = POLLIN}, {.fd = -1, .events = POLLIN}};
	unsigned int cost = 0;
	pid_t pid = 0;
	const char *lib;
	int opt, err;

	while ((opt = getopt_long(argc, argv, "p:", longopts, NULL)) != -1) {
		if (opt == 'p')
			pid = atoi(optarg);
		else if (opt == 'c')
			cost = strtoul(optarg, NULL, 0);
		else
			return usage();
	}
	if (pid <= 0 || optind != argc - 1)
		return usage();
	lib = argv[optind];
	err = elf_obj__open(lib, &o);
	if (!err)
		err = func_offset(o, "cudaMalloc", &offs[0]);
	if (!err)
		err = func_offset(o, "cudaFree", &offs[1]);
	if (err) {
		fprintf(stderr, "glbench: %s: no cudaMalloc/cudaFree: %s\n", lib, strerror(-err));
		goto cleanup;
	}
	skel = bench_bpf__open();
	if (!skel) {
		err = -errno;
		fprintf(stderr, "glbench: opening BPF: %s\n", strerror(-err));
		goto cleanup;
	}
	skel->rodata->cost = cost;
	err = bench_bpf__load(skel);
	if (err) {
		fprintf(stderr, "glbench: loading BPF: %s\n", strerror(-err));
		goto cleanup;
	}
	/* gpuleak's own consumer, reading the records into nothing */
	err = ringbuf__new(bpf_map__fd(skel->maps.events), no_sink, NULL, &rb);
	if (err)
		goto cleanup;
	/* As gpuleak does: one entry link for both functions, one return link. */
	LIBBPF_OPTS(bpf_uprobe_multi_opts, eo, .offsets = offs, .cookies = cookies, .cnt = 2);
	LIBBPF_OPTS(bpf_uprobe_multi_opts, xo, .offsets = offs, .cookies = cookies, .cnt = 1,
		    .retprobe = true);
	enter = bpf_program__attach_uprobe_multi(skel->progs.bare_enter, pid, lib, NULL, &eo);
	exit_link =
	    enter ? bpf_program__attach_uprobe_multi(skel->progs.bare_exit, pid, lib, NULL, &xo)
		  : NULL;
	if (!exit_link) {
		err = -errno;
		fprintf(stderr, "glbench: attaching to %s for pid %d: %s\n", lib, pid,
			strerror(-err));
		goto cleanup;
	}
	pfd[0].fd = syscall(SYS_pidfd_open, pid, 0);
	if (pfd[0].fd < 0) {
		err = -errno;
		fprintf(stderr, "glbench: pid %d: %s\n", pid, strerror(-err));
		goto cleanup;
	}
	pfd[1].fd = ringbuf__fd(rb);
	printf("attached\n");
	fflush(stdout);
	/* gpuleak's loop: drain when woken, and every 50 ms */
	while (!(pfd[0].revents & POLLIN)) {
		if (poll(pfd, 2, 50) < 0 && errno != EINTR)
			break;
		ringbuf__drain(rb);
	}
cleanup:
	if (pfd[0].fd >= 0)
		close(pfd[0].fd);
	ringbuf__free(rb);
	bpf_link__destroy(exit_link);
	bpf_link__destroy(enter);
	bench_bpf__destroy(skel);
	elf_obj__free(o);
	return err ? 1 : 0;
}

/* ---- usdt: the trap floor of USDT probes (empty programs, gpuleak's way of attaching) ---- */

#define USDT_MAX 8

static int cmd_usdt(int argc, char **argv)
{
	struct bench_bpf *skel = NULL;
	struct bpf_link *links[USDT_MAX] = {NULL};
	struct pollfd pfd = {.fd = -1, .events = POLLIN};
	int i, n = 0, opt, err = 0;
	const char *lib;
	pid_t pid = 0;

	while ((opt = getopt(argc, argv, "p:")) != -1) {
		if (opt != 'p')
			return usage();
		pid = atoi(optarg);
	}
	if (pid <= 0 || argc - optind < 2 || argc - optind - 1 > USDT_MAX)
		return usage();
	lib = argv[optind];
	skel = bench_bpf__open();
	if (!skel) {
		err = -errno;
		fprintf(stderr, "glbench: opening BPF: %s\n", strerror(-err));
		goto cleanup;
	}
	err = bench_bpf__load(skel);
	if (err) {
		fprintf(stderr, "glbench: loading BPF: %s\n", strerror(-err));
		goto cleanup;
	}
	for (i = optind + 1; i < argc; i++) {
		char prov[64], name[64];
		const char *colon = strchr(argv[i], ':');

		if (!colon || colon - argv[i] >= (long)sizeof(prov) ||
		    strlen(colon + 1) >= sizeof(name))
			return usage();
		snprintf(prov, sizeof(prov), "%.*s", (int)(colon - argv[i]), argv[i]);
		snprintf(name, sizeof(name), "%s", colon + 1);
		links[n] =
		    bpf_program__attach_usdt(skel->progs.bare_usdt, pid, lib, prov, name, NULL);
		if (!links[n]) {
			err = -errno;
			fprintf(stderr, "glbench: USDT %s in %s for pid %d: %s\n", argv[i], lib,
				pid, strerror(-err));
			goto cleanup;
		}
		n++;
	}
	pfd.fd = syscall(SYS_pidfd_open, pid, 0);
	if (pfd.fd < 0) {
		err = -errno;
		fprintf(stderr, "glbench: pid %d: %s\n", pid, strerror(-err));
		goto cleanup;
	}
	printf("attached\n");
	fflush(stdout);
	while (!(pfd.revents & POLLIN))
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			break;
cleanup:
	if (pfd.fd >= 0)
		close(pfd.fd);
	for (i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	bench_bpf__destroy(skel);
	return err ? 1 : 0;
}

/* ---- attach: the floor of attaching to a process, and of detaching ---- */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

#define ATTACH_MAX_OBJECTS 64
#define ATTACH_MAX_OFFSETS 1024

static int cmd_attach(int argc, char **argv)
{
	struct bpf_link *links[2 * ATTACH_MAX_OBJECTS] = {};
	unsigned long offs[ATTACH_MAX_OFFSETS];
	struct sigaction sa = {.sa_handler = on_sigint};
	sigset_t block, unblocked;
	struct bench_bpf *skel = NULL;
	struct pollfd pfd = {.fd = -1, .events = POLLIN};
	size_t nr_links = 0, nr_probes = 0, i;
	int nr_objects, opt, err = 0;
	uint64_t t0;
	pid_t pid = 0;

	while ((opt = getopt(argc, argv, "p:")) != -1) {
		if (opt == 'p')
			pid = atoi(optarg);
		else
			return usage();
	}
	nr_objects = argc - optind;
	if (pid <= 0 || nr_objects < 1 || nr_objects > ATTACH_MAX_OBJECTS)
		return usage();
	/* SIGINT ends the wait below: the links go before the exit, as gpuleak's do. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &unblocked);
	sigdelset(&unblocked, SIGINT);
	sigaction(SIGINT, &sa, NULL);
	skel = load_bpf();
	if (!skel)
		return 1;
	t0 = now_ns();
	for (i = optind; i < (size_t)argc && !err; i++) {
		char *path = argv[i], *list = strrchr(path, ':'), *tok, *save = NULL;
		struct bpf_link *enter, *ret = NULL;
		size_t n = 0;

		if (!list) {
			err = usage();
			break;
		}
		*list++ = 0;
		for (tok = strtok_r(list, ",", &save); tok && n < ATTACH_MAX_OFFSETS;
		     tok = strtok_r(NULL, ",", &save))
			offs[n++] = strtoul(tok, NULL, 0);
		LIBBPF_OPTS(bpf_uprobe_multi_opts, eo, .offsets = offs, .cnt = n);
		LIBBPF_OPTS(bpf_uprobe_multi_opts, xo, .offsets = offs, .cnt = n, .retprobe = true);
		enter =
		    bpf_program__attach_uprobe_multi(skel->progs.bare_enter, pid, path, NULL, &eo);
		if (enter) {
			links[nr_links++] = enter;
			ret = bpf_program__attach_uprobe_multi(skel->progs.bare_exit, pid, path,
							       NULL, &xo);
		}
		if (!ret) {
			err = -errno;
			fprintf(stderr, "glbench: attaching to %s for pid %d: %s\n", path, pid,
				strerror(-err));
			break;
		}
		links[nr_links++] = ret;
		nr_probes += n;
	}
	if (!err) {
		printf("attached %zu probes in %d objects in %.3f ms\n", nr_probes, nr_objects,
		       (now_ns() - t0) / 1e6);
		pfd.fd = syscall(SYS_pidfd_open, pid, 0);
		/* SIGINT blocked but while ppoll waits: none is missed between the check and
		 * the wait. */
		while (pfd.fd >= 0 && !interrupted && !(pfd.revents & POLLIN))
			if (ppoll(&pfd, 1, NULL, &unblocked) < 0 && errno != EINTR)
				break;
	}
	if (pfd.fd >= 0)
		close(pfd.fd);
	for (i = 0; i < nr_links; i++)
		bpf_link__destroy(links[i]);
	bench_bpf__destroy(skel);
	return err ? 1 : 0;
}

/* ---- the analysis, set up as a live session sets it up ---- */

static int no_frames(void *ctx, pid_t pid, uint64_t caller, int32_t stack_id, const char **syms,
		     const char **mods, const char **where, int max)
{
	(void)ctx, (void)pid, (void)caller, (void)stack_id, (void)syms, (void)mods, (void)where,
	    (void)max;
	return 0;
}

struct session {
	struct rules *rules;
	struct analysis *an;
	struct analysis_opts o;
	struct flight *flight; /* --watch, else NULL */
};

/* A record into the analysis and, watching, first into the flight recorder (as feed.c). */
static int session_feed(struct session *s, const struct gl_hdr *h)
{
	int err = s->flight ? flight__record(s->flight, h) : 0;

	return err ? err : analysis__feed(s->an, h);
}

static int session_new(struct session *s, uint64_t ring)
{
	struct analysis_opts o = {.steps = {.source = STEP_INTERVAL,
					    .interval_ns = 1000000000ULL,
					    .warmup_steps = 3,
					    .min_growth_steps = 5}};
	struct flight_opts fo = {
	    .ring_bytes = ring, .a = &s->o, .frames = no_frames, .verify = true};
	struct gl_proc_rec p = {
	    .hdr = {.size = sizeof(p), .kind = GL_REC_PROC, .pid = PID, .tid = PID, .ts_ns = 1},
	    .event = GL_PROC_ATTACH,
	    .comm = "bench"};
	int err;

	err = rules__new(&s->rules);
	if (!err)
		err = rules__add_builtins(s->rules);
	o.rules = s->rules;
	s->o = o;
	if (!err)
		err = analysis__new(&s->o, no_frames, NULL, &s->an);
	if (!err && ring)
		err = flight__new(&fo, &s->flight);
	if (!err)
		err = session_feed(s, &p.hdr);
	return err;
}

static void session_free(struct session *s)
{
	flight__free(s->flight);
	analysis__free(s->an);
	rules__free(s->rules);
}

/* Allocations 0 .. live - 1, as the produce program numbers them. */
static int prefill(struct session *s, uint64_t live)
{
	struct gl_call_rec r = {.hdr = {.size = sizeof(r),
					.kind = GL_REC_ALLOC,
					.api = GL_API_CUDA_MALLOC,
					.pid = PID,
					.tid = PID},
				.stack_id = -1};
	uint64_t i;
	int err;

	for (i = 0; i < live; i++) {
		r.hdr.ts_ns = 2 + i;
		r.addr = BASE + i * 256;
		r.size = 4096 << (i & 7);
		r.caller = CALLER + (i & 15) * 0x40;
		err = session_feed(s, &r.hdr);
		if (err)
			return err;
	}
	return 0;
}

static uint64_t opt_count(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	/* 10M, 1M, 500k */
	if (*end == 'M')
		v *= 1e6;
	else if (*end == 'k')
		v *= 1e3;
	return (uint64_t)v;
}

/* ---- consumer: records decoded and applied per second ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int sink(void *ctx, const struct gl_hdr *h)
{
	return session_feed(ctx, h);
}

static void prefetch(void *ctx, const struct gl_hdr *h)
{
	const struct session *s = ctx;

	analysis__prefetch(s->an, h);
}

static int cmd_consumer(int argc, char **argv)
{
	uint64_t live = 1000000, events = 10000000, batch = 100000, done = 0, drain_ns = 0;
	uint64_t *rates = NULL, ring = 0;
	size_t nr_rates = 0;
	bool cold = false, grow = false;
	struct session s = {};
	struct bench_bpf *skel = NULL;
	struct ringbuf *rb = NULL;
	struct bench_produce a;
	int opt, err, prog_fd;

	static const struct option longopts[] = {{"cold", no_argument, NULL, 'c'},
						 {"grow", no_argument, NULL, 'g'},
						 {"watch", required_argument, NULL, 'w'},
						 {}};

	while ((opt = getopt_long(argc, argv, "l:n:b:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'w':
			ring = opt_count(optarg);
			break;
		case 'l':
			live = opt_count(optarg);
			break;
		case 'n':
			events = opt_count(optarg);
			break;
		case 'b':
			batch = opt_count(optarg);
			break;
		case 'c':
			cold = true;
			break;
		case 'g':
			grow = true;
			break;
		default:
			return usage();
		}
	}
	/* 80 bytes a record in the 64 MiB ring: a batch must fit whole. */
	if (!batch || batch > 800000 || live < 16)
		return usage();
	err = session_new(&s, ring);
	if (!err)
		err = prefill(&s, live);
	if (err) {
		fprintf(stderr, "glbench: setting up the analysis: %s\n", strerror(-err));
		goto cleanup;
	}
	skel = load_bpf();
	if (!skel) {
		err = -errno;
		goto cleanup;
	}
	err = ringbuf__new(bpf_map__fd(skel->maps.events), sink, &s, &rb);
	if (err)
		goto cleanup;
	ringbuf__set_prefetch(rb, prefetch);
	rates = calloc(events / batch + 1, sizeof(*rates));
	if (!rates) {
		err = -ENOMEM;
		goto cleanup;
	}
	prog_fd = bpf_program__fd(skel->progs.produce);
	a = (struct bench_produce){.live = live,
				   .lag = cold ? live : 16,
				   .base = BASE,
				   .caller = CALLER,
				   .ts0_ns = 2 + live,
				   .pid = PID,
				   .grow = grow};
	while (done < events) {
		LIBBPF_OPTS(bpf_test_run_opts, topts, .ctx_in = &a, .ctx_size_in = sizeof(a));
		uint64_t t0;
		int64_t n;

		a.first = done;
		a.count = events - done < batch ? events - done : batch;
		err = bpf_prog_test_run_opts(prog_fd, &topts);
		if (!err && a.produced != (int64_t)a.count)
			err = a.produced < 0 ? (int)a.produced : -ENOSPC;
		if (err) {
			fprintf(stderr, "glbench: producing records: %s\n", strerror(-err));
			goto cleanup;
		}
		/* Only the drain is timed: decode, validation, the analysis. */
		t0 = now_ns();
		n = ringbuf__drain(rb);
		t0 = now_ns() - t0;
		drain_ns += t0;
		rates[nr_rates++] = a.count * 1000000000ULL / (t0 ? t0 : 1);
		if (n != (int64_t)a.count) {
			err = n < 0 ? (int)n : -EIO;
			fprintf(stderr, "glbench: drained %" PRId64 " of %" PRIu64 " records\n", n,
				(uint64_t)a.count);
			goto cleanup;
		}
		done += a.count;
	}
	if (s.an->t->procs[0]->live_count != live + (grow ? (done + 1) / 2 : 0)) {
		fprintf(stderr, "glbench: %" PRIu64 " live at the end, expected %" PRIu64 "\n",
			s.an->t->procs[0]->live_count, live + (grow ? (done + 1) / 2 : 0));
		err = -EIO;
		goto cleanup;
	}
	/* A batch during which another tenant had the CPU is an outlier, not our speed. */
	qsort(rates, nr_rates, sizeof(*rates), cmp_u64);
	printf("{\"live\":%" PRIu64 ",\"cold\":%s,\"grow\":%s,\"watch_ring\":%" PRIu64
	       ",\"events\":%" PRIu64 ",\"drain_s\":%.4f,\"events_per_s\":%" PRIu64
	       ",\"mean_events_per_s\":%.0f}\n",
	       live, cold ? "true" : "false", grow ? "true" : "false", ring, done, drain_ns / 1e9,
	       rates[nr_rates / 2], done * 1e9 / drain_ns);
cleanup:
	free(rates);
	ringbuf__free(rb);
	bench_bpf__destroy(skel);
	session_free(&s);
	return err ? 1 : 0;
}

/* ---- memory: bytes per live allocation ---- */

/* Heap bytes in use: small chunks plus mmap()ed ones (the big tables). */
static uint64_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static uint64_t status_kib(const char *key)
{
	char line[256];
	uint64_t v = 0;
	size_t n = strlen(key);
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			v = strtoull(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

/*
 * Allocate/free pairs through the session (addresses above the live set's) until everything
 * the prefill made has left the flight recorder's ring: its lagging analysis holds the live
 * set too, its ring is full.
 */
static int churn(struct session *s, uint64_t live)
{
	struct gl_call_rec r = {.hdr = {.size = sizeof(r), .pid = PID, .tid = PID},
				.stack_id = -1,
				.caller = CALLER + 0x1000};
	struct flight_stats fs;
	uint64_t i;
	int err = 0;

	for (i = 0; !err; i++) {
		flight__stats(s->flight, &fs);
		if (fs.evicted > live + 1)
			break;
		r.hdr.kind = i & 1 ? GL_REC_FREE : GL_REC_ALLOC;
		r.hdr.api = i & 1 ? GL_API_CUDA_FREE : GL_API_CUDA_MALLOC;
		r.hdr.ts_ns = 2 + live + i;
		r.addr = BASE + (live + 16 + (i / 2) % 4096) * 256;
		r.size = i & 1 ? 0 : 4096;
		err = session_feed(s, &r.hdr);
	}
	return err;
}

/* One capture of the recorder's window: its bytes, the time it took, the peak RSS. */
static int watch_capture(struct session *s, double *secs, uint64_t *bytes, bool *exact)
{
	struct capture_trigger tr = {.cause = CAUSE_SIGNAL, .name = "signal", .detail = "bench"};
	struct flight_write w = {.tr = &tr, .live = s->an->t};
	char dir[] = "/tmp/glbench-XXXXXX", path[64], why[256];
	struct capture_stats st;
	uint64_t t0;
	int err;

	if (!mkdtemp(dir))
		return -errno;
	snprintf(path, sizeof(path), "%s/w.glc", dir);
	err = symbolizer__new(NULL, &w.sym);
	if (err)
		goto cleanup;
	t0 = now_ns();
	err = flight__write(s->flight, path, &w, &st, why, sizeof(why));
	*secs = (now_ns() - t0) / 1e9;
	*bytes = st.bytes;
	*exact = (tr.flags & CTF_EXACT) != 0;
	if (err)
		fprintf(stderr, "glbench: capture: %s\n", why);
	symbolizer__free(w.sym);
cleanup:
	unlink(path);
	rmdir(dir);
	return err;
}

static int cmd_memory(int argc, char **argv)
{
	uint64_t live = 10000000, ring = 0, heap0, rss0, hwm0, heap1, rss1, cap_bytes = 0;
	struct session s = {};
	struct flight_stats fs = {};
	double cap_s = 0;
	bool exact = false;
	int opt, err;

	static const struct option longopts[] = {{"watch", required_argument, NULL, 'w'}, {}};

	while ((opt = getopt_long(argc, argv, "l:", longopts, NULL)) != -1) {
		if (opt == 'w')
			ring = opt_count(optarg);
		else if (opt == 'l')
			live = opt_count(optarg);
		else
			return usage();
	}
	if (!live)
		return usage();
	heap0 = heap_bytes();
	rss0 = status_kib("VmRSS");
	hwm0 = status_kib("VmHWM");
	err = session_new(&s, ring);
	if (!err)
		err = prefill(&s, live);
	if (!err && ring)
		err = churn(&s, live);
	if (err) {
		fprintf(stderr, "glbench: %s\n", strerror(-err));
		goto cleanup;
	}
	heap1 = heap_bytes();
	rss1 = status_kib("VmRSS");
	if (ring) {
		flight__stats(s.flight, &fs);
		err = watch_capture(&s, &cap_s, &cap_bytes, &exact);
		if (err)
			goto cleanup;
	}
	/* The heap is what the analysis asked for; RSS also shows what the allocator adds. */
	printf("{\"live\":%" PRIu64 ",\"bytes_per_live_alloc\":%.1f,\"rss_bytes_per_live_alloc\":"
	       "%.1f,\"peak_rss_bytes_per_live_alloc\":%.1f",
	       live, (double)(heap1 - heap0) / live, (rss1 - rss0) * 1024.0 / live,
	       (status_kib("VmHWM") - hwm0) * 1024.0 / live);
	if (ring)
		printf(",\"watch_ring\":%" PRIu64 ",\"ring_held\":%" PRIu64
		       ",\"rss_bytes\":%" PRIu64 ",\"capture_bytes\":%" PRIu64
		       ",\"capture_s\":%.3f,\"capture_exact\":%s",
		       ring, fs.ring_bytes, (rss1 - rss0) * 1024, cap_bytes, cap_s,
		       exact ? "true" : "false");
	printf("}\n");
cleanup:
	session_free(&s);
	return err ? 1 : 0;
}

/* ---- symbols: a frame named from a perf map, against one named from ELF symbols ---- */

#define SYM_BATCH 32
#define SYM_GAP	  64 /* bytes of anonymous code per perf map entry */

static int write_perf_map(const char *path, uint64_t base, uint64_t n)
{
	FILE *f = fopen(path, "w");
	uint64_t i;
	int err = 0;

	if (!f)
		return -errno;
	/* V8's lines: a tier, the function, the script's URL, line and column */
	for (i = 0; i < n && !err; i++)
		err = fprintf(f,
			      "%" PRIx64 " %x JS:~step%" PRIu64 " file:///srv/app/model%" PRIu64
			      ".mjs:%" PRIu64 ":%u\n",
			      base + i * SYM_GAP, SYM_GAP, i, i % 97, 10 + i % 5000, 20) < 0;
	if (fclose(f) || err)
		return -EIO;
	return 0;
}

/* ns to name the addresses of batch, all new to the symbolizer. */
static uint64_t name_batch(struct symbolizer *s, const uint64_t *batch, size_t n, int *err)
{
	uint64_t t0 = now_ns();

	if (symbolizer__resolve(s, getpid(), batch, n))
		*err = -ENOMEM;
	return now_ns() - t0;
}

static int cmd_symbols(int argc, char **argv)
{
	uint64_t n = 100000, frames = 20000, f0, f1, anon, heap0, t_elf = 0, t_map = 0;
	uint64_t elf_first, map_first, map_heap, i, *order = NULL, batch[SYM_BATCH];
	struct modules *mods = NULL;
	struct symbolizer *s = NULL;
	struct proc_maps *m = NULL;
	struct symbolizer_stats st;
	void *h, *code = MAP_FAILED;
	char path[64];
	int opt, err;

	while ((opt = getopt(argc, argv, "n:f:")) != -1) {
		if (opt == 'n')
			n = opt_count(optarg);
		else if (opt == 'f')
			frames = opt_count(optarg);
		else
			return usage();
	}
	if (optind + 1 != argc || n < 2 || !frames || frames > n)
		return usage();
	h = dlopen(argv[optind], RTLD_NOW | RTLD_LOCAL);
	f0 = h ? (uint64_t)(uintptr_t)dlsym(h, "f0") : 0;
	f1 = h ? (uint64_t)(uintptr_t)dlsym(h, "f1") : 0;
	if (!f0 || f1 != f0 + 16 || !dlsym(h, "f1") ||
	    !dlsym(h, (snprintf(path, sizeof(path), "f%" PRIu64, n - 1), path))) {
		fprintf(stderr, "glbench: %s is not bench/manysyms.S with %" PRIu64 " functions\n",
			argv[optind], n);
		return 1;
	}
	code = mmap(NULL, n * SYM_GAP, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	order = malloc(frames * sizeof(*order));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	err = code == MAP_FAILED || !order ? -ENOMEM : 0;
	anon = (uint64_t)(uintptr_t)code;
	if (!err)
		err = write_perf_map(path, anon, n);
	if (!err)
		err = modules__new(&mods);
	if (!err)
		err = symbolizer__new(mods, &s);
	if (!err)
		err = proc_maps__load(getpid(), &m);
	if (!err)
		err = symbolizer__add_maps(s, m);
	if (err) {
		fprintf(stderr, "glbench: setting up: %s\n", strerror(-err));
		goto cleanup;
	}
	/* Distinct entries in a random order: every frame is new to the symbolizer. */
	for (i = 0; i < frames; i++)
		order[i] = 1 + i * (n - 1) / frames;
	for (i = frames - 1; i > 0; i--) {
		uint64_t j = (uint64_t)rand() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	/* The first frame of each reads its table: the ELF's symbols, the whole perf map. */
	batch[0] = f0 + 4;
	elf_first = name_batch(s, batch, 1, &err);
	heap0 = heap_bytes();
	batch[0] = anon + 8;
	map_first = name_batch(s, batch, 1, &err);
	map_heap = heap_bytes() - heap0;
	for (i = 0; i < frames && !err; i += SYM_BATCH) {
		size_t k, nb = frames - i < SYM_BATCH ? frames - i : SYM_BATCH;

		for (k = 0; k < nb; k++)
			batch[k] = f0 + 16 * order[i + k] + 4;
		t_elf += name_batch(s, batch, nb, &err);
		for (k = 0; k < nb; k++)
			batch[k] = anon + SYM_GAP * order[i + k] + 8;
		t_map += name_batch(s, batch, nb, &err);
	}
	symbolizer__stats(s, &st);
	if (!err && st.jit_frames != frames + 1) {
		fprintf(stderr,
			"glbench: %" PRIu64 " of %" PRIu64 " frames named from the perf map\n",
			st.jit_frames, frames + 1);
		err = -EINVAL;
	}
	if (err)
		goto cleanup;
	printf("{\"entries\":%" PRIu64 ",\"frames\":%" PRIu64 ",\"elf_ns_per_frame\":%.1f,"
	       "\"perf_map_ns_per_frame\":%.1f,\"elf_first_ms\":%.3f,\"perf_map_first_ms\":%.3f,"
	       "\"perf_map_heap_bytes_per_entry\":%.1f}\n",
	       n, frames, (double)t_elf / frames, (double)t_map / frames, elf_first / 1e6,
	       map_first / 1e6, (double)map_heap / n);
cleanup:
	symbolizer__free(s);
	modules__free(mods);
	proc_maps__free(m);
	free(order);
	unlink(path);
	if (code != MAP_FAILED)
		munmap(code, n * SYM_GAP);
	return err ? 1 : 0;
}

struct ro_pass {
	size_t bytes;
	unsigned long found;
};

static void ro_bytes(uint64_t vaddr, const uint8_t *p, size_t len, void *ctx)
{
	struct ro_pass *r = ctx;

	(void)vaddr;
	r->bytes += len;
	/* Not in any object: every byte is looked at, as the name scan looks at them. */
	r->found += memmem(p, len, "gpuleak\x01\x02\x03", 10) != NULL;
}

static int cmd_procs(int argc, char **argv)
{
	uint64_t rec[64], floor[64], sym[64], t;
	struct elf_obj *o = NULL;
	struct elf_image *im = NULL;
	struct ro_pass ro = {0};
	size_t size = 0, sym_size = 0;
	int opt, reps = 9, i, err;
	unsigned long n = 0;
	struct stat st;

	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt != 'r')
			return usage();
		reps = atoi(optarg);
	}
	if (argc - optind != 2 || reps < 1 || reps > 64)
		return usage();
	err = elf_obj__open(argv[optind], &o);
	if (!err)
		err = elf_image__new(o, &im, NULL, 0);
	if (err || stat(argv[optind + 1], &st)) {
		fprintf(stderr, "glbench: %s: %s\n", argv[optind], strerror(err ? -err : errno));
		goto cleanup;
	}
	sym_size = st.st_size;
	elf_obj__image(o, &size);
	for (i = 0; i < reps + 1; i++) {
		struct dawn_procs *p;
		struct modules *ms;
		struct module *m;

		/* The first round pages both files in and is not counted. */
		t = now_ns();
		ro.bytes = 0;
		elf_image__for_each_ro(im, false, ro_bytes, &ro);
		floor[i ? i - 1 : 0] = now_ns() - t;
		t = now_ns();
		err = dawn_procs__recover(o, &p, NULL, 0);
		rec[i ? i - 1 : 0] = now_ns() - t;
		if (err) {
			fprintf(stderr, "glbench: %s: no proc table: %s\n", argv[optind],
				strerror(-err));
			goto cleanup;
		}
		n = p->n;
		dawn_procs__free(p);
		if (modules__new(&ms)) {
			err = -ENOMEM;
			goto cleanup;
		}
		t = now_ns();
		m = modules__get_path(ms, argv[optind + 1]);
		err = m ? module__scan(m) : -errno;
		sym[i ? i - 1 : 0] = now_ns() - t;
		modules__free(ms);
		if (err) {
			fprintf(stderr, "glbench: %s: %s\n", argv[optind + 1], strerror(-err));
			goto cleanup;
		}
	}
	qsort(rec, reps, sizeof(*rec), cmp_u64);
	qsort(floor, reps, sizeof(*floor), cmp_u64);
	qsort(sym, reps, sizeof(*sym), cmp_u64);
	printf("{\"entries\":%lu,\"object_bytes\":%zu,\"ro_bytes\":%zu,\"recover_ms\":%.2f,"
	       "\"floor_ms\":%.2f,\"symscan_ms\":%.2f,\"symobj_bytes\":%zu,"
	       "\"recover_ms_per_mb\":%.3f,\"symscan_ms_per_mb\":%.3f}\n",
	       n, size, ro.bytes, rec[reps / 2] / 1e6, floor[reps / 2] / 1e6, sym[reps / 2] / 1e6,
	       sym_size, rec[reps / 2] / 1e6 / (size / 1e6),
	       sym[reps / 2] / 1e6 / (sym_size / 1e6));
cleanup:
	elf_image__free(im);
	elf_obj__free(o);
	return err ? 1 : 0;
}

static long rss_kb(const char *key)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key));
	if (f)
		fclose(f);
	return v;
}

/* Resets the process's peak RSS (VmHWM) to its current RSS: Linux's clear_refs "5". */
static void reset_peak_rss(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");

	if (f) {
		fputs("5", f);
		fclose(f);
	}
}

/*
 * noprocs: what the Dawn check costs an object that has no Dawn (libcublasLt, 540 MB, no
 * wgpu* symbols: attach and `gpuleak probes` run it): the recovery that turns it away,
 * against a plain symbol load of a real library measured in the same run (gpuleak's module
 * scan of SYMOBJ, dawn.node: 21.5 MB with its symbols), and the peak resident memory the
 * check adds, against the object's size. Medians of REPS after one round that pages both in.
 */
static int cmd_noprocs(int argc, char **argv)
{
	uint64_t chk[64], sym[64], t;
	long peak = 0, base, size = 0;
	int opt, reps = 9, i, err = 0;
	struct stat st;

	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt != 'r')
			return usage();
		reps = atoi(optarg);
	}
	if (argc - optind != 2 || reps < 1 || reps > 63)
		return usage();
	if (!stat(argv[optind], &st))
		size = st.st_size;
	for (i = 0; i < reps + 1 && !err; i++) {
		struct dawn_procs *p = NULL;
		struct elf_obj *o = NULL;
		struct modules *ms;
		struct module *m;

		err = elf_obj__open(argv[optind], &o);
		if (err)
			break;
		reset_peak_rss();
		base = rss_kb("VmRSS:");
		t = now_ns();
		err = dawn_procs__recover(o, &p, NULL, 0);
		chk[i ? i - 1 : 0] = now_ns() - t;
		if (rss_kb("VmHWM:") - base > peak)
			peak = rss_kb("VmHWM:") - base;
		dawn_procs__free(p);
		elf_obj__free(o);
		if (err != -ENOENT) {
			err = err ? err : -EEXIST; /* a table: not an object without Dawn */
			break;
		}
		if (modules__new(&ms))
			return 1;
		t = now_ns();
		m = modules__get_path(ms, argv[optind + 1]);
		err = m ? module__scan(m) : -errno;
		sym[i ? i - 1 : 0] = now_ns() - t;
		modules__free(ms);
	}
	if (err) {
		fprintf(stderr, "glbench: %s: %s\n", argv[optind], strerror(-err));
		return 1;
	}
	qsort(chk, reps, sizeof(*chk), cmp_u64);
	qsort(sym, reps, sizeof(*sym), cmp_u64);
	printf("{\"object_bytes\":%ld,\"check_ms\":%.2f,\"symscan_ms\":%.2f,"
	       "\"peak_rss_added_kb\":%ld}\n",
	       size, chk[reps / 2] / 1e6, sym[reps / 2] / 1e6, peak);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		return usage();
	if (!strcmp(argv[1], "bare"))
		return cmd_bare(argc - 1, argv + 1);
	if (!strcmp(argv[1], "usdt"))
		return cmd_usdt(argc - 1, argv + 1);
	if (!strcmp(argv[1], "attach"))
		return cmd_attach(argc - 1, argv + 1);
	if (!strcmp(argv[1], "consumer"))
		return cmd_consumer(argc - 1, argv + 1);
	if (!strcmp(argv[1], "memory"))
		return cmd_memory(argc - 1, argv + 1);
	if (!strcmp(argv[1], "symbols"))
		return cmd_symbols(argc - 1, argv + 1);
	if (!strcmp(argv[1], "procs"))
		return cmd_procs(argc - 1, argv + 1);
	if (!strcmp(argv[1], "noprocs"))
		return cmd_noprocs(argc - 1, argv + 1);
	return usage();
}
