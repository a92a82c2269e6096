// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "engine/analysis.h"
#include "live/attach.h"
#include "capture/capture.h"
#include "probe/elf_obj.h"
#include "gpuleak.h"
#include "gpuleak.skel.h"
#include "lib/log.h"
#include "live/http.h"
#include "probe/modules.h"
#include "live/nvml.h"
#include "probe/catalog.h"
#include "probe/proc_maps.h"
#include "live/process.h"
#include "output/pictures.h"
#include "output/report.h"
#include "live/ringbuf.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"
#include "live/session.h"
#include "engine/tracker.h"

/* Drain this often: BPF only wakes us once 256 KiB are waiting. */
#define POLL_MS 50
/* Without an ld.so rendezvous probe, look for newly mapped libraries this often. */
#define RESCAN_NS 1000000000ULL
/* poll() slots besides the targets' pidfds: ring buffer, signals, the metrics endpoint. */
#define FIXED_FDS (2 + METRICS_MAX_FDS)

/*
 * A traced process. The pidfd, opened before its identity (start time) is checked, pins the
 * process: whatever happens to the pid afterwards, signals and exit notices through it are
 * about this process.
 */
struct target {
	pid_t pid;
	pid_t ppid;	 /* the traced process it was followed from, 0: named by the user */
	uint32_t ns_pid; /* its pid in its own pid namespace (a container), 0: the same */
	int pidfd;
	uint64_t start_ticks;
	bool held; /* stopped at each ld.so rendezvous until we attached (run mode,
				 * followed processes) */
	bool gone;
	bool end_seen;		   /* it called its end marker (--end): let it go */
	bool ended;		   /* gone because of that: it still runs */
	bool has_lib;		   /* a GPU library (CUDA, WebGPU) is attached */
	bool announced;		   /* GL_PROC_ATTACH sent: the analysis reports it */
	bool rescan_pending;	   /* its ld.so rendezvous fired: mappings changed */
	bool has_rendezvous;	   /* a rendezvous probe covers it: no periodic rescans */
	bool launch_exec;	   /* run mode with --follow: its first exec is the launch's own */
	bool code_wait;		   /* stopped until a callback's probe is in place */
	unsigned int execs;	   /* programs it exec'd since it was first traced */
	unsigned int markers_done; /* bit i: marker i attached (or failed, said once) */
	int status;
	uint64_t loss[GL_STAT_MAX];
	uint64_t last_rescan_ns;
};

/* A callback the target passed that still needs its probe (GL_REC_CODE). */
struct code_req {
	pid_t pid;
	uint64_t addr;
	unsigned int api; /* the probe's API: the catalog's code_api of the passing call */
	bool held;	  /* the target is stopped until this is done */
};

struct trace {
	const struct trace_opts *o;
	struct gpuleak_bpf *skel;
	struct modules *mods;
	struct attach *att;
	struct symbolizer *sym;
	struct analysis *an;
	struct ringbuf *rb;
	struct report rep;
	struct pictures *pics; /* --folded, --perfetto, --svg */
	bool gate_failed;
	FILE *json;
	struct target **tgts; /* live targets; an exited one is dropped once reported */
	size_t nr_tgts, cap_tgts;
	struct bpf_link *task_links[3]; /* fork, exec, exit tracepoints */
	struct metrics *metrics;
	bool finishing; /* detached: stopped processes are resumed, not attached to */
	bool warned_unstopped;
	struct marker {
		const char *file, *sym;
		unsigned int api;
	} markers[4];
	int nr_markers;
	unsigned int markers_said; /* bit i: "marker on ..." printed */
	uint64_t last_step_line_ns;
	struct launch child;
	bool run_mode;
	int sigfd;
	int sigints;
	struct code_req *code;
	size_t nr_code, cap_code;
	struct capture *cap; /* gpuleak record */
	int cap_err;	     /* the capture failed: tracing goes on, the exit status is 1 */
	size_t cap_named;    /* tracker sites before this one have their name in the capture */
	size_t cap_stacks;   /* stacks before this one are in the capture, frames named */
	bool out_err;	     /* --folded, --perfetto or --svg could not be written */
	/* Where each traced process's probes sat ("slow_probe_sites", ...), kept at detach for
	 * its verdict: JSON members by pid. */
	struct placement {
		pid_t pid;
		char *json;
	} * placements;
	size_t nr_placements, cap_placements;
	uint64_t stack_buf[GL_STACK_DEPTH_MAX + 2];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	/* The clock of bpf_ktime_get_ns(): record and user-space times compare directly. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && gl_verbosity < 2)
		return 0;
	if (level == LIBBPF_INFO && gl_verbosity < 1)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void code_request(struct trace *tr, const struct gl_call_rec *r)
{
	const struct cat_api *a = cat_by_api(r->hdr.api);

	if (!a || !a->code_api)
		return;
	if (tr->nr_code == tr->cap_code) {
		size_t cap = tr->cap_code ? 2 * tr->cap_code : 8;
		struct code_req *v = realloc(tr->code, cap * sizeof(*v));

		if (!v) {
			/* Never leave a target stopped because we ran out of memory. */
			if (r->hdr.flags & GL_HF_HELD)
				kill(r->hdr.pid, SIGCONT);
			return;
		}
		tr->code = v;
		tr->cap_code = cap;
	}
	tr->code[tr->nr_code++] =
	    (struct code_req){r->hdr.pid, r->addr, a->code_api, r->hdr.flags & GL_HF_HELD};
}

static struct target *target_find(const struct trace *tr, pid_t pid);

/* Probe the callbacks reported since the last drain; mark the targets waiting on it. */
static void attach_code(struct trace *tr)
{
	size_t i;

	for (i = 0; i < tr->nr_code; i++) {
		struct code_req *c = &tr->code[i];
		struct target *t = target_find(tr, c->pid);
		char why[160];

		if (attach__code(tr->att, c->pid, c->addr, c->api, why, sizeof(why)))
			pr_warn("pid %d: cannot probe %s: %s; its completions go unseen\n", c->pid,
				cat_api_name(c->api), why);
		if (c->held && t)
			t->code_wait = true;
		else if (c->held)
			kill(c->pid, SIGCONT);
	}
	tr->nr_code = 0;
}

static void capture_failed(struct trace *tr, int err)
{
	struct capture_stats st;

	if (tr->cap_err)
		return;
	tr->cap_err = err;
	capture__stats(tr->cap, &st);
	pr_err("writing %s: %s; the capture stops at offset %" PRIu64 " (its %" PRIu64 " records "
	       "stay readable), tracing goes on\n",
	       capture__path(tr->cap), strerror(-err), st.bytes, st.records);
}

/* ---- the traced processes ---- */

/* The live target with this pid (an exited one kept for reaping may share it). */
static struct target *target_find(const struct trace *tr, pid_t pid)
{
	size_t i;

	for (i = 0; i < tr->nr_tgts; i++)
		if (tr->tgts[i]->pid == pid && !tr->tgts[i]->gone)
			return tr->tgts[i];
	return NULL;
}

static struct target *target_add(struct trace *tr, pid_t pid, pid_t ppid)
{
	struct target *t;

	if (tr->nr_tgts == tr->cap_tgts) {
		size_t cap = tr->cap_tgts ? 2 * tr->cap_tgts : 8;
		struct target **v = realloc(tr->tgts, cap * sizeof(*v));

		if (!v)
			return NULL;
		tr->tgts = v;
		tr->cap_tgts = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pid = pid;
	t->ppid = ppid;
	t->pidfd = -1;
	t->status = -1;
	tr->tgts[tr->nr_tgts++] = t;
	return t;
}

/* Keep where t's probes sat for its verdict, before they are detached (--json only). */
static void target_placement(struct trace *tr, struct target *t)
{
	struct placement *pl;
	size_t len;
	FILE *f;

	if (!tr->json || !t->announced)
		return;
	if (tr->nr_placements == tr->cap_placements) {
		size_t cap = tr->cap_placements ? 2 * tr->cap_placements : 8;

		pl = realloc(tr->placements, cap * sizeof(*pl));
		if (!pl)
			return;
		tr->placements = pl;
		tr->cap_placements = cap;
	}
	pl = &tr->placements[tr->nr_placements];
	pl->pid = t->pid;
	pl->json = NULL;
	f = open_memstream(&pl->json, &len);
	if (!f)
		return;
	attach__placement_json(tr->att, t->pid, f);
	if (fclose(f)) {
		free(pl->json);
		return;
	}
	tr->nr_placements++;
}

/* report's verdict_more: the placement kept for pid, the latest (a reused pid is newer). */
static void verdict_placement(void *ctx, pid_t pid, FILE *json)
{
	struct trace *tr = ctx;
	size_t i = tr->nr_placements;

	while (i--)
		if (tr->placements[i].pid == pid) {
			fprintf(json, ",%s", tr->placements[i].json);
			return;
		}
}

/* Forget a target whose end was reported: a server forking workers all day stays small. */
static void target_drop(struct trace *tr, struct target *t)
{
	size_t i;

	for (i = 0; i < tr->nr_tgts && tr->tgts[i] != t; i++)
		;
	if (i == tr->nr_tgts)
		return;
	memmove(&tr->tgts[i], &tr->tgts[i + 1], (tr->nr_tgts - i - 1) * sizeof(*tr->tgts));
	tr->nr_tgts--;
	if (t->pidfd >= 0)
		close(t->pidfd);
	free(t);
}

static size_t targets_alive(const struct trace *tr)
{
	size_t i, n = 0;

	for (i = 0; i < tr->nr_tgts; i++)
		n += !tr->tgts[i]->gone;
	return n;
}

/* Let a stopped target go on; through its pidfd, so a reused pid is never signalled. */
static void target_resume(struct target *t)
{
	if (t->pidfd >= 0)
		process__pidfd_signal(t->pidfd, SIGCONT);
	else
		kill(t->pid, SIGCONT);
}

static void task_event(struct trace *tr, const struct gl_task_rec *r);
static void announce(struct trace *tr, struct target *t, uint64_t ts_ns);

/* A call (or callback, label) made by the process: what a followed child is reported for. */
static bool is_activity(const struct gl_hdr *h)
{
	return h->kind >= GL_REC_ALLOC && h->kind <= GL_REC_CODE &&
	       !(h->kind == GL_REC_NOTIFY && h->api == GL_API_LD_DEBUG_STATE);
}

/*
 * The frames of a record's stack, read from the kernel's stack map the first time its
 * (pid, id, call site) is seen: user space interns what the kernel interned, so each stack is
 * read once however many allocations share it. A read that fails leaves the record named by
 * its call site, as without stacks.
 */
static void intern_stack(struct trace *tr, const struct gl_call_rec *r)
{
	unsigned int depth = tr->o->stack_depth;
	bool fallback = r->stack_id >= GL_STACK_FALLBACK;
	__u32 key = fallback ? r->stack_id - GL_STACK_FALLBACK : r->stack_id;
	const struct ustack *st;
	const uint64_t *raw;
	size_t n = 0, max;
	int err;

	if (symbolizer__stack(tr->sym, r->hdr.pid, r->stack_id, r->caller))
		return;
	if (bpf_map_lookup_elem(
		bpf_map__fd(fallback ? tr->skel->maps.stacks2 : tr->skel->maps.stacks), &key,
		tr->stack_buf))
		return;
	/* stacks2 starts with the probed function's address, stacks after it */
	raw = tr->stack_buf + fallback;
	max = depth + 1;
	while (n < max && raw[n])
		n++;
	err =
	    symbolizer__add_stack(tr->sym, r->hdr.pid, r->stack_id, r->caller, raw, n, depth, &st);
	if (err == -ENOMEM)
		pr_warn("out of memory for the stack of a call at 0x%llx\n",
			(unsigned long long)r->caller);
}

/*
 * Every record, from BPF or made here, enters the analysis through this one function; a
 * capture gets exactly the same stream, in the same order, so `gpuleak report` replays
 * what the tracker saw.
 */
static int on_record(void *ctx, const struct gl_hdr *h)
{
	struct trace *tr = ctx;
	struct target *t;
	int err;

	if (h->kind == GL_REC_NOTIFY && h->api == GL_API_LD_DEBUG_STATE &&
	    (t = target_find(tr, h->pid)))
		t->rescan_pending = true;
	if (h->kind == GL_REC_NOTIFY && h->api == GL_API_MARKER_END &&
	    (t = target_find(tr, h->pid)))
		t->end_seen = true;
	/* A followed process enters the analysis with its first traced call, just before it. */
	if (is_activity(h) && (t = target_find(tr, h->pid)) && !t->announced)
		announce(tr, t, h->ts_ns);
	if (h->kind == GL_REC_CODE && h->size >= sizeof(struct gl_call_rec))
		code_request(tr, (const struct gl_call_rec *)h);
	if ((h->kind == GL_REC_ALLOC || h->kind == GL_REC_ALLOC_FAIL) &&
	    h->size >= sizeof(struct gl_call_rec) && ((const struct gl_call_rec *)h)->stack_id >= 0)
		intern_stack(tr, (const struct gl_call_rec *)h);
	if (tr->cap && !tr->cap_err) {
		err = capture__write_record(tr->cap, h);
		if (err && err != -EINVAL)
			capture_failed(tr, err);
	}
	err = analysis__feed(tr->an, h);
	/* After the record itself: what it starts (attaching to a child) follows it. */
	if (h->kind == GL_REC_TASK && h->size >= sizeof(struct gl_task_rec))
		task_event(tr, (const struct gl_task_rec *)h);
	return err;
}

static void on_prefetch(void *ctx, const struct gl_hdr *h)
{
	struct trace *tr = ctx;

	analysis__prefetch(tr->an, h);
}

/* The target's executable mappings, for naming addresses the capture has no symbol for. */
static void capture_maps(struct trace *tr, const struct proc_maps *m)
{
	int err;

	if (!tr->cap || tr->cap_err)
		return;
	err = capture__add_maps(tr->cap, m, tr->mods);
	if (err)
		capture_failed(tr, err);
}

static void capture_process(struct trace *tr, const struct target *t)
{
	struct capture_proc p = {.pid = t->pid, .start_ticks = t->start_ticks};
	char comm[16], exe[4096];
	char **argv = NULL;
	int err;

	if (!tr->cap || tr->cap_err)
		return;
	p.start_realtime_ns = process__start_realtime_ns(p.start_ticks);
	process__comm(p.pid, comm, sizeof(comm));
	p.comm = comm;
	if (tr->run_mode && t->pid == tr->child.pid && !t->ppid) {
		/* The child's own view is the one it was started with. */
		p.exe = tr->child.exe;
		p.argv = tr->o->argv;
		while (p.argv[p.argc])
			p.argc++;
	} else {
		process__exe(p.pid, exe, sizeof(exe));
		p.exe = exe;
		process__cmdline(p.pid, &argv, &p.argc);
		p.argv = argv;
	}
	err = capture__add_process(tr->cap, &p);
	free(argv);
	if (err)
		capture_failed(tr, err);
}

/*
 * The name of one address into the capture: 1 when it is there (or needs none), 0 when its
 * mapping is not known yet and this is not the final pass, -errno.
 */
static int capture_name(struct trace *tr, pid_t pid, uint64_t addr, bool final)
{
	const struct sym_info *si;
	int err;

	if (!addr || capture__has_symbol(tr->cap, pid, addr))
		return 1;
	si = symbolizer__info(tr->sym, pid, addr);
	if (!si)
		return -ENOMEM;
	if (!si->module && !final)
		return 0;
	err = capture__add_symbol(tr->cap, pid, addr, si);
	return err ? err : 1;
}

/*
 * Names of the tracker's call sites and of the frames of every stack, for a report without
 * the binaries. An address is named once, when it lies in a known mapping (a library mapped
 * a moment ago may not be scanned yet); at the end every one is named as the live report
 * names it. Reading names from the symbolizer's cache makes them the very strings the live
 * report prints. A stack is written as soon as it is seen, with the verdicts it was given
 * then (truncated, frame pointers), which the live report prints too.
 */
static void capture_names(struct trace *tr, bool final)
{
	const struct tracker *t = tr->an->t;
	const struct stacks *sts = symbolizer__stacks(tr->sym);
	bool all_named = true;
	size_t i;
	int ret = 1;

	if (!tr->cap || tr->cap_err)
		return;
	for (i = tr->cap_named; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];

		ret = capture_name(tr, s->pid, s->caller, final);
		if (ret < 0)
			goto fail;
		all_named &= ret;
		if (all_named)
			tr->cap_named = i + 1;
	}
	all_named = true;
	for (i = tr->cap_stacks; i < stacks__count(sts); i++) {
		const struct ustack *st = stacks__at(sts, i);
		uint16_t j;

		ret = capture__add_stack(tr->cap, st);
		for (j = 0; !ret && j < st->nr; j++) {
			int r = capture_name(tr, st->pid, st->frames[j], final);

			if (r < 0)
				ret = r;
			all_named &= r > 0;
		}
		if (ret < 0)
			goto fail;
		if (all_named)
			tr->cap_stacks = i + 1;
	}
	return;
fail:
	capture_failed(tr, ret);
}

static void emit_proc_at(struct trace *tr, struct target *t, enum gl_proc_event ev, int status,
			 uint64_t ts_ns)
{
	struct gl_proc_rec r = {
	    .hdr = {.size = sizeof(r),
		    .kind = GL_REC_PROC,
		    .pid = t->pid,
		    .tid = t->pid,
		    .ts_ns = ts_ns},
	    .event = ev,
	    .status = status,
	    .start_ticks = t->start_ticks,
	};

	if (ev == GL_PROC_ATTACH) {
		r.ppid = t->ppid;
		r.ns_pid = t->ns_pid;
		if (tr->run_mode && t->pid == tr->child.pid && !t->ppid) {
			const char *slash = strrchr(tr->child.exe, '/');

			/* comm is the first 15 bytes of the executable's name, as the kernel
			 * sets it at exec */
			const char *name = slash ? slash + 1 : tr->child.exe;

			memcpy(r.comm, name, strnlen(name, sizeof(r.comm) - 1));
		} else {
			process__comm(t->pid, r.comm, sizeof(r.comm));
		}
	}
	on_record(tr, &r.hdr);
}

static void emit_proc(struct trace *tr, struct target *t, enum gl_proc_event ev, int status)
{
	emit_proc_at(tr, t, ev, status, now_ns());
}

/* BPF keeps cumulative loss counters per pid; forward them when they change. */
static void emit_loss(struct trace *tr, struct target *t)
{
	struct gl_loss_rec r = {
	    .hdr = {.size = sizeof(r),
		    .kind = GL_REC_LOSS,
		    .pid = t->pid,
		    .tid = t->pid,
		    .ts_ns = now_ns()},
	};
	__u32 key = t->pid;

	if (bpf_map__lookup_elem(tr->skel->maps.pid_loss, &key, sizeof(key), r.counts,
				 sizeof(r.counts), 0))
		return;
	if (!memcmp(r.counts, t->loss, sizeof(r.counts)))
		return;
	memcpy(t->loss, r.counts, sizeof(r.counts));
	/* A process that lost records is reported, whatever else it did: never silently. */
	announce(tr, t, r.hdr.ts_ns);
	on_record(tr, &r.hdr);
}

static void emit_tick(struct trace *tr)
{
	struct gl_hdr h = {.size = sizeof(h), .kind = GL_REC_TICK, .ts_ns = now_ns()};

	on_record(tr, &h);
}

static int bpf_open_load(struct trace *tr)
{
	struct gpuleak_bpf *skel;
	uint64_t ns_dev = 0, ns_ino = 0;
	bool initial = true;
	unsigned int i;
	int err;

	skel = gpuleak_bpf__open();
	if (!skel) {
		err = -errno;
		pr_err("opening the BPF object failed: %s\n", strerror(-err));
		return err;
	}
	for (i = 0; i < cat_nr_apis; i++) {
		const struct cat_api *a = &cat_apis[i];

		skel->rodata->specs[a->api] = a->spec;
		/* allocations of memory: what they allocate underneath is their layers */
		if (a->op == OP_ALLOC && cat_mem_counts(a->mem))
			skel->rodata->specs[a->api].flags |= GL_SPEC_LAYERS;
	}
	skel->rodata->follow_children = tr->o->follow;
	/* gpuleak in a container with its own pid namespace: BPF reports pids as we see them. */
	err = process__pidns(&ns_dev, &ns_ino, &initial);
	if (err) {
		pr_err("cannot tell which pid namespace gpuleak runs in: %s\n", strerror(-err));
		goto fail_quiet;
	}
	if (!initial) {
		skel->rodata->pidns_dev = ns_dev;
		skel->rodata->pidns_ino = ns_ino;
	}
	/* A small ring buffer must wake us before it is full, not at the default threshold. */
	if (skel->rodata->wakeup_bytes > tr->o->ringbuf_bytes / 4)
		skel->rodata->wakeup_bytes = tr->o->ringbuf_bytes / 4;
	err = bpf_map__set_max_entries(skel->maps.events, tr->o->ringbuf_bytes);
	if (!err && tr->o->stack_depth) {
		/* frames after the probed function, and one more to see a cut (gpuleak.bpf.c) */
		skel->rodata->stack_depth = tr->o->stack_depth;
		err = bpf_map__set_value_size(skel->maps.stacks, (tr->o->stack_depth + 1) * 8);
		if (!err)
			err = bpf_map__set_value_size(skel->maps.stacks2,
						      (tr->o->stack_depth + 2) * 8);
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.stacks, tr->o->stack_entries);
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.stacks2, tr->o->stack_entries);
	}
	if (err)
		goto fail;
	err = gpuleak_bpf__load(skel);
	if (err) {
		pr_err("loading the BPF programs failed: %s (a kernel with BTF, uprobes and "
		       "BPF ring buffers is needed; -vv shows the verifier log)\n",
		       strerror(-err));
		goto fail_quiet;
	}
	tr->skel = skel;
	return 0;
fail:
	pr_err("configuring the BPF object failed: %s\n", strerror(-err));
fail_quiet:
	gpuleak_bpf__destroy(skel);
	return err;
}

/*
 * The scheduler tracepoints: exits of traced processes (their exit status, and the end of
 * their records in the ring buffer), the threads their calls make to do their work (NCCL's
 * group launch), and with --follow their forks and execs.
 */
static int attach_tracepoints(struct trace *tr)
{
	struct bpf_program *progs[3] = {tr->skel->progs.gl_task_exit, tr->skel->progs.gl_fork,
					tr->skel->progs.gl_exec};
	int i, n = tr->o->follow ? 3 : 2;

	for (i = 0; i < n; i++) {
		tr->task_links[i] = bpf_program__attach(progs[i]);
		if (!tr->task_links[i]) {
			int err = -errno;

			/* Without them gpuleak still sees exits through pidfds. */
			if (!tr->o->follow) {
				pr_info("no %s tracepoint (%s): %s\n", i ? "fork" : "exit",
					strerror(-err),
					i ? "memory NCCL's init threads make is "
					    "not its communicators'"
					  : "exit status of attached "
					    "processes unknown");
				return 0;
			}
			pr_err("cannot attach to the scheduler's fork/exec/exit tracepoints: %s "
			       "(--follow needs BTF tracepoints, Linux 5.5+)\n",
			       strerror(-err));
			return err;
		}
	}
	return 0;
}

static void detach_tracepoints(struct trace *tr)
{
	size_t i;

	for (i = 0; i < sizeof(tr->task_links) / sizeof(tr->task_links[0]); i++) {
		bpf_link__destroy(tr->task_links[i]);
		tr->task_links[i] = NULL;
	}
}

/* Whether any object of m has a probe site with these catalog flags or this op. */
static bool has_site(struct trace *tr, const struct proc_maps *m, unsigned int flags, int op)
{
	size_t i, j;

	for (i = 0; i < m->n; i++) {
		struct module *mod;

		if (!m->v[i].exec || !m->v[i].path)
			continue;
		mod = modules__get(tr->mods, m->pid, &m->v[i]);
		if (!mod || module__scan(mod))
			continue;
		for (j = 0; j < mod->nr_sites; j++)
			if ((flags && (mod->sites[j].api->flags & flags)) ||
			    (op >= 0 && mod->sites[j].api->op == (enum cat_op)op))
				return true;
	}
	return false;
}

static bool has_rendezvous_probe(struct trace *tr, const struct proc_maps *m)
{
	return has_site(tr, m, 0, OP_RENDEZVOUS);
}

static void add_markers(struct trace *tr)
{
	const struct trace_opts *o = tr->o;

	if (o->a.step_file)
		tr->markers[tr->nr_markers++] =
		    (struct marker){o->a.step_file, o->a.step_sym, GL_API_MARKER_STEP};
	if (o->a.req_file) {
		tr->markers[tr->nr_markers++] =
		    (struct marker){o->a.req_file, o->a.req_begin, GL_API_MARKER_REQ_BEGIN};
		tr->markers[tr->nr_markers++] =
		    (struct marker){o->a.req_file, o->a.req_end, GL_API_MARKER_REQ_END};
	}
	if (o->a.end_file)
		tr->markers[tr->nr_markers++] =
		    (struct marker){o->a.end_file, o->a.end_sym, GL_API_MARKER_END};
}

/*
 * Put the step/request markers on their functions in t: FILE is a path (in t's own root
 * when it is in a container), or the basename of an object t maps (found once it is
 * mapped). Returns the markers still unattached.
 */
static int attach_markers(struct trace *tr, struct target *t, const struct proc_maps *m)
{
	int i, left = 0;

	for (i = 0; i < tr->nr_markers; i++) {
		struct marker *mk = &tr->markers[i];
		char rooted[4200];
		const char *file = mk->file;
		int err;

		if (t->markers_done & (1U << i))
			continue;
		if (file[0] == '/' && m && process__in_other_root(t->pid)) {
			snprintf(rooted, sizeof(rooted), "/proc/%d/root%s", t->pid, file);
			file = rooted;
		}
		err = attach__marker(tr->att, t->pid, m, file, mk->sym, mk->api);
		if (!err) {
			t->markers_done |= 1U << i;
			/* Once, not once per process: a server's ranks all get it. */
			if (tr->markers_said & (1U << i))
				continue;
			tr->markers_said |= 1U << i;
			fprintf(stderr, "gpuleak: %s marker on %s in %s\n",
				mk->api == GL_API_MARKER_STEP	     ? "step"
				: mk->api == GL_API_MARKER_REQ_BEGIN ? "request-begin"
				: mk->api == GL_API_MARKER_REQ_END   ? "request-end"
								     : "session-end",
				mk->sym, mk->file);
		} else if (err != -ENOENT) {
			pr_err("cannot put a marker on %s in %s: %s\n", mk->sym, mk->file,
			       strerror(-err));
			t->markers_done |= 1U << i; /* said once; do not retry */
		} else {
			left++;
		}
	}
	return left;
}

static void emit_devmem(struct trace *tr, const struct target *t)
{
	struct gl_devmem_rec d[16];
	int i, n = nvml__snapshot(t->pid, d, 16);

	for (i = 0; i < n; i++) {
		d[i].hdr.ts_ns = now_ns();
		on_record(tr, &d[i].hdr);
	}
}

/* A line per step (at most one per --interval when steps are faster). */
static void on_step(void *ctx, pid_t pid, const struct step_stat *st)
{
	struct trace *tr = ctx;

	report__step(&tr->rep, pid, st);
	if (!tr->o->a.steps_given)
		return;
	if (tr->o->interval_ns && st->t_end_ns - tr->last_step_line_ns < tr->o->interval_ns &&
	    tr->last_step_line_ns)
		return;
	tr->last_step_line_ns = st->t_end_ns;
	report__step_line(&tr->rep, pid, st);
}

/*
 * From now on t is in the analysis and the report: the tracker learns its name, the capture
 * its command line, the projection its devices. Processes named by the user are announced
 * at once; a followed one at its first traced call, so the shells and helpers a server
 * forks, which call nothing traced, never show up.
 */
static void announce(struct trace *tr, struct target *t, uint64_t ts_ns)
{
	if (t->announced)
		return;
	t->announced = true;
	emit_proc_at(tr, t, GL_PROC_ATTACH, 0, ts_ns);
	capture_process(tr, t);
	emit_devmem(tr, t);
}

static void say_tracing(struct trace *tr, const struct target *t)
{
	char about[96] = "";
	int n = 0;

	if (t->ppid)
		n += snprintf(about + n, sizeof(about) - n, "%schild of %d", n ? ", " : " (",
			      t->ppid);
	if (t->execs)
		n += snprintf(about + n, sizeof(about) - n, "%safter exec", n ? ", " : " (");
	if (t->ns_pid)
		n += snprintf(about + n, sizeof(about) - n, "%spid %u in its namespace",
			      n ? ", " : " (", t->ns_pid);
	fprintf(stderr, "gpuleak: tracing pid %d%s%s: %zu probes in %zu objects\n", t->pid, about,
		n ? ")" : "", attach__nr_probes(tr->att, t->pid),
		attach__nr_objects(tr->att, t->pid));
}

/* Look at t's mappings and attach to anything new. */
static int scan_target(struct trace *tr, struct target *t)
{
	struct proc_maps *m = NULL;
	int err, nr_new = 0;

	t->rescan_pending = false;
	t->last_rescan_ns = now_ns();
	err = proc_maps__load(t->pid, &m);
	if (err)
		goto out;
	symbolizer__add_maps(tr->sym, m);
	capture_maps(tr, m);
	err = attach__scan(tr->att, m, &nr_new);
	attach_markers(tr, t, m);
	if (!t->has_rendezvous)
		t->has_rendezvous = has_rendezvous_probe(tr, m);
	if (!t->has_lib && attach__has_required(tr->att, t->pid)) {
		t->has_lib = true;
		say_tracing(tr, t);
	}
out:
	proc_maps__free(m);
	return err == -ESRCH ? 0 : err;
}

/*
 * Open t's pidfd and check that t->pid is still the process that started at
 * t->start_ticks (when known): from here on the pidfd pins that process. -ESRCH when it is
 * gone, -ESTALE when another process has its pid.
 */
static int target_pin(struct target *t, uint64_t want_ticks)
{
	uint64_t ticks;
	int err;

	t->pidfd = process__pidfd(t->pid);
	if (t->pidfd < 0)
		return t->pidfd;
	err = process__start_ticks(t->pid, &ticks);
	if (err)
		return err;
	if (want_ticks && ticks != want_ticks)
		return -ESTALE;
	t->start_ticks = ticks;
	t->ns_pid = process__ns_pid(t->pid);
	return 0;
}

/*
 * After attaching by pid number: if t's pidfd says it exited meanwhile, the probes may sit
 * on whichever process took the pid since. Tell which, and take them off. Returns whether t
 * is still the process that was checked.
 */
static bool target_still_same(struct trace *tr, struct target *t)
{
	uint64_t ticks;

	if (!process__pidfd_exited(t->pidfd))
		return true;
	if (!process__start_ticks(t->pid, &ticks) && ticks != t->start_ticks)
		pr_warn("pid %d exited while gpuleak attached to it, and the pid now belongs to "
			"another process (started at %" PRIu64 ", not %" PRIu64 "): not traced\n",
			t->pid, ticks, t->start_ticks);
	attach__forget(tr->att, t->pid);
	return false;
}

static void mark_traced(struct trace *tr, struct target *t)
{
	__u32 key = t->pid;
	__u8 one = 1;

	/* Full (16k processes): its exit is still seen through the pidfd. */
	if (bpf_map__update_elem(tr->skel->maps.traced, &key, sizeof(key), &one, sizeof(one), 0))
		pr_warn("pid %d: no room to follow it in the kernel: its children are not traced\n",
			t->pid);
}

static void hold(struct trace *tr, struct target *t)
{
	__u32 key = t->pid;
	__u8 one = 1;

	t->held =
	    !bpf_map__update_elem(tr->skel->maps.held, &key, sizeof(key), &one, sizeof(one), 0);
}

static int start_attach_one(struct trace *tr, const struct trace_pid *tp)
{
	struct proc_maps *m = NULL;
	pid_t pid = tp->pid;
	struct target *t;
	uint64_t t0;
	int err, nr_new;

	t = target_add(tr, pid, 0);
	if (!t)
		return -ENOMEM;
	err = target_pin(t, tp->start_ticks);
	if (err == -ESTALE) {
		uint64_t ticks = 0;

		process__start_ticks(pid, &ticks);
		pr_err("pid %d is not the process asked for: it started at %" PRIu64
		       " (clock ticks after boot), not %" PRIu64 "; the pid was reused\n",
		       pid, ticks, tp->start_ticks);
		return err;
	}
	if (err) {
		pr_err("no such process: %d\n", pid);
		return err;
	}
	t0 = now_ns();
	err = proc_maps__load(pid, &m);
	if (err) {
		pr_err("cannot read /proc/%d/maps: %s\n", pid, strerror(-err));
		return err;
	}
	mark_traced(tr, t);
	t->announced = true;
	emit_proc(tr, t, GL_PROC_ATTACH, 0);
	capture_process(tr, t);
	symbolizer__add_maps(tr->sym, m);
	capture_maps(tr, m);
	err = attach__scan(tr->att, m, &nr_new);
	if (err)
		goto cleanup;
	/* What `make bench` reports as attach time: maps, ELF scans, links. */
	pr_info("pid %d: attach took %.1f ms (%zu probes in %zu objects)\n", pid,
		(now_ns() - t0) / 1e6, attach__nr_probes(tr->att, pid),
		attach__nr_objects(tr->att, pid));
	t->has_rendezvous = has_rendezvous_probe(tr, m);
	t->last_rescan_ns = now_ns();
	if (attach_markers(tr, t, m))
		fprintf(stderr, "gpuleak: a step/request marker's object is not mapped yet; "
				"it is attached when it is\n");
	if (tr->o->a.steps.source == STEP_NVTX && !has_site(tr, m, CAT_NVTX, -1))
		fprintf(stderr,
			"gpuleak: pid %d has no NVTX entry points to probe: NVTX v3 is "
			"header-only and reaches a tool only through NVTX_INJECTION64_PATH, which "
			"gpuleak sets in run mode; steps will not advance\n",
			pid);
	emit_devmem(tr, t);
	if (attach__has_required(tr->att, pid)) {
		t->has_lib = true;
		say_tracing(tr, t);
	} else if (tr->o->wait_for_lib) {
		fprintf(stderr,
			"gpuleak: pid %d maps no GPU library yet; waiting for it to "
			"load one\n",
			pid);
	} else {
		pr_err("pid %d maps no GPU library (no cudaMalloc, wgpuDeviceCreateBuffer, ... in "
		       "any object); looked in:\n",
		       pid);
		attach__print_objects(tr->att, pid, m, stderr);
		fprintf(stderr, "gpuleak: if it loads one later (PyTorch loads CUDA at first use), "
				"run with --wait\n");
		err = -ENOENT;
		goto cleanup;
	}
	/* Gone meanwhile: reported as exited, by the loop, from its pidfd. */
	target_still_same(tr, t);
cleanup:
	proc_maps__free(m);
	return err;
}

/* Every -p process, checked first: a typo in a list attaches nothing. */
static int start_attach_mode(struct trace *tr)
{
	size_t i;
	int err;

	for (i = 0; i < tr->o->nr_pids; i++) {
		err = process__start_ticks(tr->o->pids[i].pid, &(uint64_t){0});
		if (err) {
			pr_err("no such process: %d\n", tr->o->pids[i].pid);
			return err;
		}
	}
	for (i = 0; i < tr->o->nr_pids; i++) {
		err = start_attach_one(tr, &tr->o->pids[i]);
		if (err)
			return err;
	}
	return 0;
}

/* libgpuleak_nvtx.so: next to gpuleak, in its build tree, or installed beside it. */
static int nvtx_inject_path(char *buf, size_t len)
{
	static const char *const rel[] = {"libgpuleak_nvtx.so", ".output/libgpuleak_nvtx.so",
					  "../lib/gpuleak/libgpuleak_nvtx.so"};
	const char *env = getenv("GPULEAK_NVTX_LIB");
	char exe[4096], *slash;
	ssize_t n;
	size_t i;

	if (env) {
		snprintf(buf, len, "%s", env);
		return access(buf, R_OK) ? -errno : 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		if (snprintf(buf, len, "%.*s/%s", (int)(len / 2), exe, rel[i]) >= (int)len)
			continue;
		if (!access(buf, R_OK))
			return 0;
	}
	return -ENOENT;
}

static int start_run_mode(struct trace *tr)
{
	static char inject_env[4200];
	char *env[2] = {NULL, NULL};
	struct target *t;
	struct module *mod;
	int err;

	/* NVTX v3 reaches a tool only through its injection variable: point it at ours. */
	if (tr->o->a.steps.source == STEP_NVTX) {
		char path[4096];

		if (nvtx_inject_path(path, sizeof(path))) {
			pr_err(
			    "--step nvtx: needs libgpuleak_nvtx.so next to gpuleak (build it with "
			    "make) or GPULEAK_NVTX_LIB\n");
			return -ENOENT;
		}
		if (getenv("NVTX_INJECTION64_PATH"))
			pr_warn("NVTX_INJECTION64_PATH was set; gpuleak's injection library "
				"replaces it for the target\n");
		snprintf(inject_env, sizeof(inject_env), "NVTX_INJECTION64_PATH=%s", path);
		env[0] = inject_env;
	}
	err = launch__fork(tr->o->argv, env, &tr->child);
	if (err) {
		pr_err("cannot run %s: %s\n", tr->o->argv[0], strerror(-err));
		return err;
	}
	tr->run_mode = true;
	t = target_add(tr, tr->child.pid, 0);
	if (!t)
		return -ENOMEM;
	hold(tr, t);
	if (!t->held) {
		pr_err("cannot register pid %d for holding\n", t->pid);
		return -ENOMEM;
	}
	/*
	 * Before exec the child maps nothing of its own. Probes go on the executable (static
	 * cudart) and on its dynamic linker, by path: uprobes are keyed by inode, so they take
	 * effect when exec maps the files. The linker's rendezvous then stops the child each
	 * time libraries are mapped, until we have attached to them.
	 */
	err = attach__path(tr->att, t->pid, tr->child.exe);
	if (err)
		return err;
	mod = modules__get_path(tr->mods, tr->child.exe);
	if (mod && mod->elf && elf_obj__interp(mod->elf)) {
		err = attach__path(tr->att, t->pid, elf_obj__interp(mod->elf));
		if (err)
			return err;
		t->has_rendezvous = true;
	}
	t->has_lib = attach__has_required(tr->att, t->pid);
	attach_markers(tr, t, NULL);
	t->pidfd = process__pidfd(t->pid);
	if (t->pidfd < 0)
		return t->pidfd;
	/* Followed from before its exec: the exec that starts it is not a new process. */
	mark_traced(tr, t);
	t->launch_exec = tr->o->follow;
	t->announced = true;
	emit_proc(tr, t, GL_PROC_ATTACH, 0);
	err = launch__release(&tr->child);
	if (err) {
		pr_err("cannot run %s: %s\n", tr->o->argv[0], strerror(-err));
		t->gone = true;
		return err;
	}
	process__start_ticks(t->pid, &t->start_ticks);
	emit_devmem(tr, t);
	capture_process(tr, t);
	return 0;
}

/* ---- processes that fork, exec and exit (scheduler tracepoints) ---- */

/* A child of a traced process (--follow): stopped by BPF before its first instruction. */
static void on_fork(struct trace *tr, const struct gl_task_rec *r)
{
	bool stopped = r->flags & GL_TF_STOPPED;
	struct target *t;
	int err;

	t = target_add(tr, r->hdr.pid, r->ppid);
	if (!t) {
		pr_err("out of memory: pid %d (child of %u) is not traced\n", r->hdr.pid, r->ppid);
		goto resume;
	}
	err = target_pin(t, process__boot_ns_to_ticks(r->start_ns));
	if (err) {
		/* Gone already, or its pid reused: nothing of ours to attach to or resume. */
		if (err == -ESTALE)
			pr_warn("pid %d (child of %u) exited and its pid was reused before gpuleak "
				"got to it: not traced\n",
				r->hdr.pid, r->ppid);
		target_drop(tr, t);
		return;
	}
	if (tr->finishing) {
		target_resume(t);
		target_drop(tr, t);
		return;
	}
	if (!stopped && !tr->warned_unstopped) {
		tr->warned_unstopped = true;
		pr_warn("this kernel cannot stop a forked process before it runs (bpf_send_signal_"
			"task, Linux 6.13): the first calls of followed children may be missed\n");
	}
	/* Later dlopen()s stop it at the rendezvous until we attached, as in run mode. */
	hold(tr, t);
	err = scan_target(tr, t);
	if (err)
		pr_warn("attaching to pid %d (child of %u): %s\n", t->pid, t->ppid, strerror(-err));
	target_still_same(tr, t);
	if (stopped)
		target_resume(t);
	return;
resume:
	/* Unchecked pid: only when BPF just stopped it, a moment ago. */
	if (stopped)
		kill(r->hdr.pid, SIGCONT);
}

/*
 * A traced process exec'd: its memory went with its old program. What it becomes is a new
 * process to the analysis (announced again when it has a GPU library); its probes stay, they
 * follow the task, and the rendezvous of its new ld.so holds it until we attached.
 */
static void on_exec(struct trace *tr, const struct gl_task_rec *r)
{
	struct target *t = target_find(tr, r->hdr.pid);
	bool stopped = r->flags & GL_TF_STOPPED;
	__u32 key = r->hdr.pid;
	int err;

	if (!t) {
		/* In the kernel's table but not ours (we could not take it on): never leave
		 * it stopped, and do not follow it further. */
		bpf_map__delete_elem(tr->skel->maps.traced, &key, sizeof(key), 0);
		if (stopped)
			kill(r->hdr.pid, SIGCONT);
		return;
	}
	if (t->launch_exec) {
		t->launch_exec = false;
	} else if (!tr->finishing) {
		if (t->announced) {
			emit_loss(tr, t);
			emit_proc(tr, t, GL_PROC_EXEC, 0);
		}
		t->announced = false;
		t->execs++;
		t->has_lib = false;
		t->has_rendezvous = false;
		t->markers_done = 0;
		hold(tr, t);
		err = scan_target(tr, t);
		if (err)
			pr_warn("attaching to pid %d after its exec: %s\n", t->pid, strerror(-err));
	}
	if (stopped)
		target_resume(t);
}

/* t is gone (at ts_ns): its last records are in, report its end and forget it. */
static void target_exited(struct trace *tr, struct target *t, int status, uint64_t ts_ns)
{
	__u32 key = t->pid;
	int ws;

	if (t->gone)
		return;
	t->gone = true;
	/* Our own child: reap it; its wait status is the authority. */
	if (tr->run_mode && t->pid == tr->child.pid && !t->ppid &&
	    waitpid(t->pid, &ws, WNOHANG) == t->pid)
		status = ws;
	if (status >= 0)
		t->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	emit_loss(tr, t);
	if (t->announced)
		emit_proc_at(tr, t, GL_PROC_EXIT, t->status, ts_ns);
	bpf_map__delete_elem(tr->skel->maps.held, &key, sizeof(key), 0);
	bpf_map__delete_elem(tr->skel->maps.pid_loss, &key, sizeof(key), 0);
	bpf_map__delete_elem(tr->skel->maps.traced, &key, sizeof(key), 0);
	/* Its probes filter on its pid: they could only ever fire for a reused one. */
	if (!tr->finishing) {
		target_placement(tr, t);
		attach__forget(tr->att, t->pid);
	}
	/* A child gpuleak started stays in the table until reaped (run mode's exit status). */
	if (!(tr->run_mode && t->pid == tr->child.pid && !t->ppid))
		target_drop(tr, t);
}

/*
 * t called its end marker: the analysis ended its session at that call and takes nothing
 * more of it; stop tracing it (it runs on, like a target of --duration).
 */
static void target_ended(struct trace *tr, struct target *t)
{
	__u32 key = t->pid;

	t->gone = true;
	t->ended = true;
	bpf_map__delete_elem(tr->skel->maps.held, &key, sizeof(key), 0);
	bpf_map__delete_elem(tr->skel->maps.pid_loss, &key, sizeof(key), 0);
	bpf_map__delete_elem(tr->skel->maps.traced, &key, sizeof(key), 0);
	target_placement(tr, t);
	attach__forget(tr->att, t->pid);
	if (t->held)
		target_resume(t);
	pr_info("pid %d called its end marker: session ended, detached\n", t->pid);
	if (!(tr->run_mode && t->pid == tr->child.pid && !t->ppid))
		target_drop(tr, t);
}

static void task_event(struct trace *tr, const struct gl_task_rec *r)
{
	struct target *t;

	switch (r->event) {
	case GL_TASK_FORK:
		on_fork(tr, r);
		break;
	case GL_TASK_EXEC:
		on_exec(tr, r);
		break;
	case GL_TASK_EXIT:
		t = target_find(tr, r->hdr.pid);
		if (t)
			target_exited(tr, t, r->exit_code, r->hdr.ts_ns);
		break;
	}
}

static int setup_signals(struct trace *tr)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	tr->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return tr->sigfd < 0 ? -errno : 0;
}

/* Returns true when tracing should stop. */
static bool handle_signal(struct trace *tr)
{
	struct signalfd_siginfo si;
	struct target *t = tr->run_mode ? target_find(tr, tr->child.pid) : NULL;

	if (read(tr->sigfd, &si, sizeof(si)) != sizeof(si))
		return false;
	/* In run mode Ctrl-C reached the child too: trace its shutdown (its frees) unless
	 * asked twice. */
	if (t && si.ssi_signo == SIGINT && ++tr->sigints == 1) {
		fprintf(stderr, "gpuleak: waiting for pid %d to exit (Ctrl-C again to stop now)\n",
			t->pid);
		return false;
	}
	return true;
}

static int loop(struct trace *tr)
{
	uint64_t start = now_ns(), next_interval, deadline;
	struct pollfd *fds = NULL;
	size_t cap_fds = 0;
	int err = 0;

	next_interval = tr->o->interval_ns ? start + tr->o->interval_ns : UINT64_MAX;
	deadline = tr->o->duration_ns ? start + tr->o->duration_ns : UINT64_MAX;
	while (targets_alive(tr)) {
		uint64_t now = now_ns(), wait_ns = POLL_MS * 1000000ULL;
		struct target *t;
		bool stop = false;
		size_t i, nfds, nr_metrics;
		int64_t n;

		if (cap_fds < FIXED_FDS + tr->nr_tgts) {
			struct pollfd *v = realloc(fds, (FIXED_FDS + tr->cap_tgts) * sizeof(*v));

			if (!v) {
				err = -ENOMEM;
				break;
			}
			fds = v;
			cap_fds = FIXED_FDS + tr->cap_tgts;
		}
		fds[0] = (struct pollfd){.fd = ringbuf__fd(tr->rb), .events = POLLIN};
		fds[1] = (struct pollfd){.fd = tr->sigfd, .events = POLLIN};
		nr_metrics =
		    tr->metrics ? metrics__pollfds(tr->metrics, fds + 2, METRICS_MAX_FDS) : 0;
		nfds = 2 + nr_metrics;
		for (i = 0; i < tr->nr_tgts; i++) {
			t = tr->tgts[i];
			fds[nfds++] =
			    (struct pollfd){.fd = t->gone ? -1 : t->pidfd, .events = POLLIN};
		}
		if (next_interval - now < wait_ns && next_interval > now)
			wait_ns = next_interval - now;
		if (deadline > now && deadline - now < wait_ns)
			wait_ns = deadline - now;
		if (poll(fds, nfds, (int)(wait_ns / 1000000)) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		n = ringbuf__drain(tr->rb);
		if (n < 0) {
			err = (int)n;
			break;
		}
		if (fds[1].revents & POLLIN)
			stop = handle_signal(tr);
		if (tr->metrics)
			metrics__handle(tr->metrics, fds + 2, nr_metrics, now_ns());
		/* Targets that exited: everything they did is in the ring buffer, drained above
		 * (their exit record, with the status, usually came with it). */
		for (i = 2 + nr_metrics; i < nfds; i++) {
			if (!(fds[i].revents & (POLLIN | POLLHUP)))
				continue;
			t = NULL;
			for (size_t j = 0; j < tr->nr_tgts && !t; j++)
				if (tr->tgts[j]->pidfd == fds[i].fd && !tr->tgts[j]->gone)
					t = tr->tgts[j];
			if (t)
				target_exited(tr, t, -1, now_ns());
		}
		/* Ended at their end marker: dropping a target shifts the table. */
		for (i = 0; i < tr->nr_tgts;) {
			t = tr->tgts[i];
			if (t->end_seen && !t->gone) {
				target_ended(tr, t);
				i = 0;
			} else {
				i++;
			}
		}
		now = now_ns();
		/* New callbacks first: a target may be stopped for both. */
		attach_code(tr);
		for (i = 0; i < tr->nr_tgts; i++) {
			bool pending;

			t = tr->tgts[i];
			if (t->gone)
				continue;
			pending = t->rescan_pending;
			if (pending ||
			    (!t->has_rendezvous && now - t->last_rescan_ns >= RESCAN_NS)) {
				err = scan_target(tr, t);
				if (err)
					pr_warn("attaching to newly mapped objects of pid %d: %s\n",
						t->pid, strerror(-err));
				err = 0;
			}
			/* A rendezvous stop (held) or a callback waits on us: never leave it
			 * stopped, whatever happened. */
			if ((pending && t->held) || t->code_wait)
				target_resume(t);
			t->code_wait = false;
		}
		emit_tick(tr);
		capture_names(tr, false);
		if (now >= next_interval) {
			for (i = 0; i < tr->nr_tgts; i++)
				emit_loss(tr, tr->tgts[i]);
			if (!tr->o->a.steps_given)
				report__interval(&tr->rep, now);
			next_interval += tr->o->interval_ns;
			if (next_interval <= now)
				next_interval = now + tr->o->interval_ns;
		}
		if (stop || now >= deadline)
			break;
	}
	free(fds);
	return err;
}

static void finish_capture(struct trace *tr)
{
	struct capture_stats st;
	int err;

	if (!tr->cap || tr->cap_err)
		return;
	err = capture__finish(tr->cap);
	if (err) {
		capture_failed(tr, err);
		return;
	}
	capture__stats(tr->cap, &st);
	fprintf(stderr,
		"gpuleak: wrote %s: %" PRIu64 " records in %u blocks, %" PRIu64
		" bytes (%.1f bytes/record)\n",
		capture__path(tr->cap), st.records, st.blocks, st.bytes,
		st.records ? (double)st.bytes / st.records : 0.0);
}

static void finish(struct trace *tr)
{
	struct verdict *v = NULL;
	uint64_t end_ns, t0;
	size_t i;

	/* Exits the loop did not get to (a signal, --duration): whoever exited while traced
	 * exited. Exiting drops a target from the table: look again from the start after each. */
	for (i = 0; i < tr->nr_tgts;) {
		struct target *t = tr->tgts[i];

		if (!t->gone && process__pidfd_exited(t->pidfd)) {
			ringbuf__drain(tr->rb);
			target_exited(tr, t, -1, now_ns());
			i = 0;
		} else {
			i++;
		}
	}
	/* Where the probes sat, for the verdicts: known only while attached. */
	for (i = 0; i < tr->nr_tgts; i++)
		if (!tr->tgts[i]->gone)
			target_placement(tr, tr->tgts[i]);
	/*
	 * Detach, then drain what was submitted before the links went away. The tracepoints go
	 * first: no child is stopped after that, those stopped already are resumed as their
	 * records come in (finishing), and a target exiting from now on was detached from.
	 */
	t0 = now_ns();
	tr->finishing = true;
	detach_tracepoints(tr);
	attach__free(tr->att);
	tr->att = NULL;
	pr_info("detach took %.1f ms\n", (now_ns() - t0) / 1e6);
	tr->nr_code = 0;
	for (i = 0; i < tr->nr_tgts; i++)
		if (tr->tgts[i]->held && !tr->tgts[i]->gone)
			target_resume(tr->tgts[i]);
	ringbuf__drain(tr->rb);
	for (i = 0; i < tr->nr_tgts; i++) {
		struct target *t = tr->tgts[i];

		if (t->gone)
			continue;
		emit_loss(tr, t);
		if (t->announced)
			emit_proc(tr, t, GL_PROC_DETACH, 0);
	}
	capture_names(tr, true);
	end_ns = now_ns();
	if (analysis__verdict(tr->an, &v)) {
		pr_err("out of memory for the verdict\n");
		tr->out_err = true;
	} else {
		report__final(&tr->rep, v, end_ns);
		tr->gate_failed = v->gate_failed;
		/* As of the last record, as a report of the capture draws them: the same files. */
		tr->out_err =
		    pictures__write(tr->pics, &tr->rep, v, tr->an->se, tr->an->t->last_ts_ns) != 0;
	}
	verdict__free(v);
	if (ringbuf__bad(tr->rb))
		pr_warn("%" PRIu64 " ring buffer records had an unexpected size (mismatched BPF "
			"object?)\n",
			ringbuf__bad(tr->rb));
	finish_capture(tr);
}

/* What was lost where no process could be charged with it (its table was full). */
static void warn_unattributed_loss(struct trace *tr)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v;
	__u32 k;

	if (ncpu <= 0)
		return;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return;
	k = GL_STAT_MAP_FULL;
	if (!bpf_map__lookup_elem(tr->skel->maps.stats, &k, sizeof(k), v, ncpu * sizeof(*v), 0)) {
		uint64_t sum = 0;
		int c;

		for (c = 0; c < ncpu; c++)
			sum += v[c];
		if (sum)
			pr_warn("BPF maps ran full %" PRIu64 " times (processes not followed, or "
				"losses not charged to a process): results are approximate\n",
				sum);
	}
	free(v);
}

/* A scrape of --metrics: the analysis as it stands, between two drains. */
static void render_metrics(void *ctx, FILE *out, bool om)
{
	struct trace *tr = ctx;

	report__metrics(&tr->rep, out, om);
}

static int check_kernel(void)
{
	char why[512];

	if (!process__check_kernel("/sys", why, sizeof(why)))
		return 0;
	pr_err("%s\n", why);
	return -ENOENT;
}

int trace__run(const struct trace_opts *o)
{
	struct trace tr = {.o = o, .sigfd = -1};
	bool traced = false;
	size_t i;
	int err;

	tr.child.pid = -1;
	libbpf_set_print(libbpf_print);
	err = process__check_privileges();
	if (err) {
		pr_err("loading BPF programs and attaching uprobes needs root, or CAP_BPF, "
		       "CAP_PERFMON and CAP_SYS_ADMIN: run it with sudo\n");
		return 1;
	}
	if (check_kernel())
		return 1;
	if (o->json_path) {
		int fd = open(o->json_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		tr.json = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!tr.json) {
			pr_err("cannot write %s: %s\n", o->json_path, strerror(errno));
			return 1;
		}
	}
	if (o->capture_path) {
		err = capture__create(o->capture_path, &o->capture, &tr.cap);
		if (err) {
			pr_err("cannot create %s: %s%s\n", o->capture_path, strerror(-err),
			       err == -EEXIST ? " (--force replaces it)" : "");
			goto cleanup;
		}
	}
	err = setup_signals(&tr);
	if (err)
		goto cleanup;
	err = bpf_open_load(&tr);
	if (err)
		goto cleanup;
	err = modules__new(&tr.mods);
	if (!err)
		modules__trace_libc(tr.mods, o->libc);
	if (!err)
		modules__set_wgpu_abi(tr.mods, &o->webgpu_abi);
	if (!err)
		modules__move_probes(tr.mods, !o->probe_at_entry);
	if (!err)
		err =
		    attach__new(tr.skel->progs.gl_enter, tr.skel->progs.gl_exit, tr.mods, &tr.att);
	if (!err)
		err = symbolizer__new(tr.mods, &tr.sym);
	if (!err)
		symbolizer__set_debug_dirs(tr.sym, o->debug_dirs, o->nr_debug_dirs);
	if (!err)
		err = analysis__new(&o->a, symbolizer__site_frames, tr.sym, &tr.an);
	if (!err)
		err = pictures__open(&o->a.out, &tr.pics);
	if (!err)
		err = ringbuf__new(bpf_map__fd(tr.skel->maps.events), on_record, &tr, &tr.rb);
	if (!err)
		ringbuf__set_prefetch(tr.rb, on_prefetch);
	if (err) {
		pr_err("setting up: %s\n", strerror(-err));
		goto cleanup;
	}
	tr.rep = (struct report){.t = tr.an->t,
				 .tl = tr.an->tl,
				 .sym = tr.sym,
				 .out = stdout,
				 .json = tr.json,
				 .top = o->top,
				 .t0_ns = now_ns(),
				 .verdict_more = verdict_placement,
				 .verdict_more_ctx = &tr};
	if (tr.cap)
		tr.rep.t0_ns = capture__t0_ns(tr.cap);
	if (o->metrics_addr) {
		char why[256];

		err = metrics__new(o->metrics_addr, render_metrics, &tr, &tr.metrics, why,
				   sizeof(why));
		if (err) {
			pr_err("--metrics %s: %s\n", o->metrics_addr, why);
			goto cleanup;
		}
		fprintf(stderr, "gpuleak: serving metrics on %s\n", metrics__url(tr.metrics));
	}
	err = attach_tracepoints(&tr);
	if (err)
		goto cleanup;
	timeline__on_step(tr.an->tl, on_step, &tr);
	add_markers(&tr);
	modules__trace_nvtx(tr.mods, o->a.steps.source == STEP_NVTX);
	err = o->argv ? start_run_mode(&tr) : start_attach_mode(&tr);
	if (err)
		goto cleanup;
	traced = true;
	err = loop(&tr);
	if (err)
		pr_err("tracing stopped: %s\n", strerror(-err));
	finish(&tr);
	warn_unattributed_loss(&tr);
cleanup:
	if (tr.child.pid > 0 && tr.child.go_fd > 0)
		launch__abort(&tr.child);
	attach__free(tr.att);
	detach_tracepoints(&tr);
	ringbuf__free(tr.rb);
	metrics__free(tr.metrics);
	pictures__free(tr.pics);
	analysis__free(tr.an);
	free(tr.code);
	for (i = 0; i < tr.nr_placements; i++)
		free(tr.placements[i].json);
	free(tr.placements);
	symbolizer__free(tr.sym);
	modules__free(tr.mods);
	gpuleak_bpf__destroy(tr.skel);
	for (i = 0; i < tr.nr_tgts; i++) {
		/* Our child, exited: reap it (it may not have been a zombie yet at its exit). */
		if (tr.run_mode && tr.tgts[i]->pid == tr.child.pid && tr.tgts[i]->gone &&
		    !tr.tgts[i]->ended)
			waitpid(tr.child.pid, NULL, 0);
		if (tr.tgts[i]->pidfd >= 0)
			close(tr.tgts[i]->pidfd);
		free(tr.tgts[i]);
	}
	free(tr.tgts);
	if (tr.sigfd >= 0)
		close(tr.sigfd);
	if (tr.json)
		fclose(tr.json);
	/* A capture of a session that never started holds nothing worth keeping. */
	if (tr.cap && !traced)
		unlink(o->capture_path);
	capture__free(tr.cap);
	if (err || tr.cap_err || tr.out_err)
		return TRACE_ERROR;
	return tr.gate_failed ? TRACE_LEAK : TRACE_OK;
}
