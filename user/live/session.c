// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The live session: its lifecycle and its event loop. session__run makes the parts (the BPF
 * object, the target table, attach, the symbolizer, the analysis and the report, the ring
 * buffer, the capture, the endpoint), takes on the targets (start.c), then loops until every
 * target is gone, a signal, or --duration: drain the ring buffer into the analysis (feed.c,
 * with forks, execs and exits to follow.c), serve the endpoint, retire exited and ended
 * targets, probe callbacks, rescan mappings, print intervals. At the end it detaches, drains
 * what was in flight, and writes the report, the pictures and the capture's end.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include "engine/analysis.h"
#include "engine/timeline.h"
#include "tracker/tracker.h"
#include "lib/exit.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "lib/vec.h"
#include "live/attach.h"
#include "live/bpf_setup.h"
#include "live/callbacks.h"
#include "live/feed.h"
#include "live/follow.h"
#include "live/http.h"
#include "live/live.h"
#include "live/markers.h"
#include "live/probe_sites.h"
#include "live/pyconf.h"
#include "live/process.h"
#include "live/recorder.h"
#include "live/ringbuf.h"
#include "live/scan.h"
#include "live/session.h"
#include "live/overhead.h"
#include "live/signals.h"
#include "live/start.h"
#include "live/targets.h"
#include "live/watch.h"
#include "output/pictures.h"
#include "output/report.h"
#include "probe/modules.h"
#include "symbols/symbolizer.h"
#include "symbols/unwind.h"

/* Drain this often: BPF only wakes us once 256 KiB are waiting. */
#define POLL_MS 50
/* Without an ld.so rendezvous probe, look for newly mapped libraries this often. */
#define RESCAN_NS 1000000000ULL
/* poll() slots besides the targets' pidfds: ring buffer, signals, the metrics endpoint. */
#define FIXED_FDS (2 + HTTP_MAX_FDS)

struct session {
	struct live l; /* the parts the modules share */
	struct ringbuf *rb;
	/* rb is mapped on rb_thread while the probes attach (ring_ready joins it): rb_err */
	pthread_t rb_thread;
	bool rb_pending;
	int rb_err;
	struct report rep;
	struct outfile *json_file; /* --json */
	FILE *json;		   /* its stream, NULL without --json */
	struct http *http;	   /* --metrics: the fleet endpoint */
	struct signals *sig;
	uint64_t last_step_line_ns;
	struct pictures *pics; /* --folded, --perfetto, --svg */
	bool gate_failed;
	bool out_err;	 /* --folded, --perfetto or --svg could not be written */
	int cmd_wstatus; /* run mode's command, as waitpid says it ended; -1: it did not */
};

/* The ring buffer's sink: the record into the analysis and what it starts (feed.c). */
static int on_record(void *ctx, const struct gl_hdr *h)
{
	struct session *s = ctx;

	return feed__record(&s->l, h);
}

static void on_prefetch(void *ctx, const struct gl_hdr *h)
{
	struct session *s = ctx;

	analysis__prefetch(s->l.an, h);
}

/* A line per step (at most one per --interval when steps are faster). */
static void on_step(void *ctx, pid_t pid, const struct step_stat *st)
{
	struct session *s = ctx;
	const struct session_opts *o = s->l.o;

	report__step(&s->rep, pid, st);
	/* A recorder left on a node prints no step lines unless asked for (--interval). */
	if (!o->a.steps_given || (o->watch && !o->interval_ns))
		return;
	if (o->interval_ns && st->t_end_ns - s->last_step_line_ns < o->interval_ns &&
	    s->last_step_line_ns)
		return;
	s->last_step_line_ns = st->t_end_ns;
	report__step_line(&s->rep, pid, st);
}

/* A scrape of --metrics: the analysis as it stands, between two drains. */
static void render_metrics(void *ctx, FILE *out, bool om)
{
	struct session *s = ctx;

	report__metrics(&s->rep, out, om);
}

/* Run mode's child while it is traced (Ctrl-C reached it too), else 0. */
static pid_t child_pid(const struct session *s)
{
	const struct target *t =
	    s->l.child.pid > 0 ? targets__find(s->l.tgts, s->l.child.pid) : NULL;

	return t ? t->pid : 0;
}

/* Room in *fds for the fixed slots and one per target. 0 or -ENOMEM. */
static int pollfds_room(struct pollfd **fds, size_t *cap, size_t need)
{
	int err = 0;

	while (*cap < need && !err)
		err = vec_grow((void **)fds, cap, *cap, sizeof(**fds));
	return err;
}

/* What the loop waits on: the ring buffer, signals, the endpoint, then each target's pidfd
 * (-1 for one gone: poll skips it). Returns how many slots the endpoint took. */
static size_t fill_pollfds(struct session *s, struct pollfd *fds, size_t *nfds)
{
	size_t i, n, nr_http;

	fds[0] = (struct pollfd){.fd = ringbuf__fd(s->rb), .events = POLLIN};
	fds[1] = (struct pollfd){.fd = signals__fd(s->sig), .events = POLLIN};
	nr_http = s->http ? http__pollfds(s->http, fds + 2, HTTP_MAX_FDS) : 0;
	n = 2 + nr_http;
	for (i = 0; i < targets__count(s->l.tgts); i++) {
		struct target *t = targets__at(s->l.tgts, i);

		fds[n++] = (struct pollfd){.fd = target__gone(t) ? -1 : t->pidfd, .events = POLLIN};
	}
	*nfds = n;
	return nr_http;
}

/*
 * After a drain: targets whose pidfd says they exited (everything they did is in the ring
 * buffer, drained before: their exit record, with the status, usually came with it), then
 * those that called their end marker. Dropping a target shifts the table.
 */
static void retire_targets(struct session *s, const struct pollfd *fds, size_t nfds)
{
	struct target *t;
	size_t i;

	for (i = 0; i < nfds; i++) {
		if (!(fds[i].revents & (POLLIN | POLLHUP)))
			continue;
		t = targets__by_pidfd(s->l.tgts, fds[i].fd);
		if (t)
			follow__exited(&s->l, t, -1, live_now_ns());
	}
	for (i = 0; i < targets__count(s->l.tgts);) {
		t = targets__at(s->l.tgts, i);
		if (t->state == TARGET_ENDING) {
			follow__ended(&s->l, t);
			i = 0;
		} else {
			i++;
		}
	}
}

/*
 * New mappings: at a target's rendezvous, or every RESCAN_NS without one. A rendezvous stop
 * (held) or a callback waits on us: never leave it stopped, whatever happened.
 */
static void rescan_targets(struct session *s, uint64_t now)
{
	size_t i;
	int err;

	for (i = 0; i < targets__count(s->l.tgts); i++) {
		struct target *t = targets__at(s->l.tgts, i);
		bool pending = t->rescan_pending;

		if (target__gone(t))
			continue;
		if (pending || (!t->has_rendezvous && now - t->last_rescan_ns >= RESCAN_NS)) {
			err = scan__target(&s->l, t);
			if (err)
				pr_warn("attaching to newly mapped objects of pid %d: %s\n", t->pid,
					strerror(-err));
		}
		if ((pending && t->held) || t->code_wait)
			target__resume(t);
		t->code_wait = false;
	}
}

/* An --interval's table (with --step, only the loss records: steps print their own lines). */
static void interval_due(struct session *s, uint64_t now, uint64_t *next_interval)
{
	const struct session_opts *o = s->l.o;
	size_t i;

	if (now < *next_interval)
		return;
	for (i = 0; i < targets__count(s->l.tgts); i++)
		feed__loss(&s->l, targets__at(s->l.tgts, i));
	overhead__sample(s->l.ovh, &s->l, now, 0, OVH_NOW);
	if (!o->a.steps_given)
		report__interval(&s->rep, now);
	*next_interval += o->interval_ns;
	if (*next_interval <= now)
		*next_interval = now + o->interval_ns;
}

static int loop(struct session *s)
{
	const struct session_opts *o = s->l.o;
	uint64_t start = live_now_ns(), next_interval, deadline;
	struct pollfd *fds = NULL;
	size_t cap_fds = 0;
	int err = 0;

	next_interval = o->interval_ns ? start + o->interval_ns : UINT64_MAX;
	deadline = o->duration_ns ? start + o->duration_ns : UINT64_MAX;
	while (targets__alive(s->l.tgts)) {
		uint64_t now = live_now_ns(), wait_ns = POLL_MS * 1000000ULL;
		size_t nfds, nr_http;
		bool stop = false;
		int64_t n;

		err = pollfds_room(&fds, &cap_fds, FIXED_FDS + targets__count(s->l.tgts));
		if (err)
			break;
		nr_http = fill_pollfds(s, fds, &nfds);
		if (next_interval - now < wait_ns && next_interval > now)
			wait_ns = next_interval - now;
		if (deadline > now && deadline - now < wait_ns)
			wait_ns = deadline - now;
		if (poll(fds, nfds, (int)(wait_ns / 1000000)) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		n = ringbuf__drain(s->rb);
		if (n < 0) {
			err = (int)n;
			break;
		}
		if (fds[1].revents & POLLIN)
			stop = signals__stop(s->sig, child_pid(s));
		if (s->http)
			http__handle(s->http, fds + 2, nr_http, live_now_ns());
		retire_targets(s, fds + 2 + nr_http, nfds - 2 - nr_http);
		now = live_now_ns();
		/* New callbacks first: a target may be stopped for both. */
		callbacks__attach(s->l.cbs, s->l.att, s->l.tgts);
		rescan_targets(s, now);
		feed__tick(&s->l);
		overhead__sample(s->l.ovh, &s->l, now, 0, OVH_DUE);
		if (s->l.watch)
			watch__poll(s->l.watch, &s->l, signals__usr1(s->sig), now);
		recorder__names(s->l.rec, s->l.sym, s->l.an->t, false);
		interval_due(s, now, &next_interval);
		if (stop || now >= deadline)
			break;
	}
	free(fds);
	return err;
}

/* The links that are not the targets' probes: the scheduler's tracepoints, calibration's. */
static void *other_links_go(void *live)
{
	struct live *l = live;

	if (l->bpf)
		bpf_setup__detach_tracepoints(l->bpf);
	overhead__unlink(l->ovh);
	return NULL;
}

/*
 * Detach, then drain what was submitted before the links went away. The tracepoints go
 * with the probes: no child is stopped after that, those stopped already are resumed as
 * their records come in (finishing), and a target exiting from now on was detached from.
 */
static void detach(struct session *s)
{
	struct live *l = &s->l;
	uint64_t t0 = live_now_ns();
	bool tp_thread;
	pthread_t tp;
	size_t i;

	l->finishing = true;
	/* Every link's destruction waits for grace periods: the tracepoints' and calibration's
	 * go from a thread of their own while the probes' go, and the waits overlap. */
	tp_thread = !pthread_create(&tp, NULL, other_links_go, l);
	attach__free(l->att);
	l->att = NULL;
	if (tp_thread)
		pthread_join(tp, NULL);
	else
		other_links_go(l);
	pr_info("detach took %.1f ms\n", (live_now_ns() - t0) / 1e6);
	callbacks__clear(l->cbs);
	for (i = 0; i < targets__count(l->tgts); i++) {
		struct target *t = targets__at(l->tgts, i);

		if (t->held && !target__gone(t))
			target__resume(t);
	}
	ringbuf__drain(s->rb);
}

static void finish(struct session *s)
{
	struct live *l = &s->l;
	struct verdict *v = NULL;
	size_t i;

	/* Exits the loop did not get to (a signal, --duration): whoever exited while traced
	 * exited. Exiting drops a target from the table: look again from the start after each. */
	for (i = 0; i < targets__count(l->tgts);) {
		struct target *t = targets__at(l->tgts, i);

		if (!target__gone(t) && process__pidfd_exited(t->pidfd)) {
			ringbuf__drain(s->rb);
			follow__exited(l, t, -1, live_now_ns());
			i = 0;
		} else {
			i++;
		}
	}
	/* Where the probes sat, for the verdicts: known only while attached. */
	for (i = 0; i < targets__count(l->tgts); i++)
		if (target__in_analysis(targets__at(l->tgts, i)))
			probe_sites__keep(l->sites, l->att, targets__at(l->tgts, i)->pid);
	detach(s);
	if (l->unw) {
		struct unwind_stats us;

		unwind__stats(l->unw, &us);
		pr_info("--unwind %s: %" PRIu64 " stack copies, %" PRIu64
			" unwound stacks in place of frame-pointer walks (%" PRIu64
			" reached the copy's end), %" PRIu64 " calls without a copy; %.1f ms "
			"unwinding, opening objects included\n",
			l->o->unwind_dwarf ? "dwarf" : "auto", us.copies, us.used, us.copy_ended,
			us.missing, (double)us.unwind_ns / 1e6);
	}
	/* Its calls are all in: what tracing cost each process still here, as of now. */
	overhead__sample(l->ovh, l, live_now_ns(), 0, OVH_FINAL);
	for (i = 0; i < targets__count(l->tgts); i++) {
		struct target *t = targets__at(l->tgts, i);

		if (target__gone(t))
			continue;
		feed__loss(l, t);
		if (target__in_analysis(t))
			feed__proc(l, t, GL_PROC_DETACH, 0);
	}
	recorder__names(l->rec, l->sym, l->an->t, true);
	if (analysis__verdict(l->an, &v)) {
		pr_err("out of memory for the verdict\n");
		s->out_err = true;
	} else {
		report__final(&s->rep, v, live_now_ns());
		s->gate_failed = v->gate_failed;
		/* As of the last record, as a report of the capture draws them: the same files. */
		s->out_err = pictures__write(s->pics, &s->rep, v, l->an, l->an->t->last_ts_ns) != 0;
	}
	verdict__free(v);
	if (ringbuf__bad(s->rb))
		pr_warn("%" PRIu64 " ring buffer records had an unexpected size (mismatched BPF "
			"object?)\n",
			ringbuf__bad(s->rb));
	recorder__finish(l->rec);
}

/* What was lost where no process could be charged with it (its table was full). */
static void warn_unattributed_loss(struct session *s)
{
	uint64_t sum = bpf_setup__map_full(s->l.bpf);

	if (sum)
		pr_warn("BPF maps ran full %" PRIu64 " times (processes not followed, or "
			"losses not charged to a process): results are approximate\n",
			sum);
}

/* Whether this machine and this process can trace at all: said in one line when not. */
static int check_host(void)
{
	char why[512];

	if (process__check_privileges()) {
		pr_err("loading BPF programs and attaching uprobes needs root, or CAP_BPF, "
		       "CAP_PERFMON and CAP_SYS_ADMIN: run it with sudo\n");
		return -EPERM;
	}
	if (process__check_kernel("/sys", why, sizeof(why))) {
		pr_err("%s\n", why);
		return -ENOENT;
	}
	return 0;
}

/* The session's own files and tables, before any BPF: a wrong path fails fast. */
static int open_outputs(struct session *s)
{
	const struct session_opts *o = s->l.o;
	char why[256];
	int err;

	if (o->json_path) {
		/* Streamed (a new file or - can be followed), an existing one replaced at the end. */
		err = outfile__open(o->json_path, OUTFILE_REPLACE, &s->json_file, why, sizeof(why));
		if (err) {
			pr_err("cannot write %s: %s\n", o->json_path, why);
			return err;
		}
		s->json = outfile__stream(s->json_file);
	}
	if (o->capture_path) {
		err = recorder__new(o->capture_path, &o->capture, &s->l.rec);
		if (err)
			return err;
	}
	err = targets__new(&s->l.tgts);
	if (err)
		goto cleanup;
	err = callbacks__new(&s->l.cbs);
	if (err)
		goto cleanup;
	err = markers__new(&o->a, &s->l.mk);
	if (err)
		goto cleanup;
	err = pyconf__new(&s->l.py);
	if (err)
		goto cleanup;
	if (o->json_path) {
		err = probe_sites__new(&s->l.sites);
		if (err)
			goto cleanup;
	}
	err = signals__new(&s->sig);
	if (err)
		goto cleanup;
	/* gpuleak watch: SIGUSR1 asks for a capture */
	if (o->watch)
		err = signals__catch_usr1(s->sig);
cleanup:
	s->l.sig = s->sig;
	return err;
}

/*
 * The consumer's mapping of the ring: two views of its 64 MiB whose pages the kernel maps
 * one by one at mmap (~6 ms on a VM), on a thread while the probes attach. Nothing is lost
 * meanwhile: records wait in the kernel's ring, which exists since the load.
 */
static void *ring_open(void *arg)
{
	struct session *s = arg;

	s->rb_err = ringbuf__new(bpf_setup__events_fd(s->l.bpf), on_record, s, &s->rb);
	if (!s->rb_err)
		ringbuf__set_prefetch(s->rb, on_prefetch);
	return NULL;
}

/* Before the first drain, and before the ring goes: s->rb is this thread's from here. */
static int ring_ready(struct session *s)
{
	if (s->rb_pending) {
		pthread_join(s->rb_thread, NULL);
		s->rb_pending = false;
		if (s->rb_err)
			pr_err("mapping the ring buffer: %s\n", strerror(-s->rb_err));
	}
	return s->rb_err;
}

/* BPF, the probes' modules and attach, the symbolizer, the analysis, the ring buffer. */
static int open_tracing(struct session *s)
{
	const struct session_opts *o = s->l.o;
	struct live *l = &s->l;
	uint64_t t0 = live_now_ns(), feat_ns, maps_ns;
	size_t threads;
	bool cached;
	int err;

	err = bpf_setup__new(
	    &(struct bpf_setup_opts){.follow = o->follow,
				     .ringbuf_bytes = o->ringbuf_bytes,
				     .stack_depth = o->stack_depth,
				     .stack_entries = o->stack_entries,
				     .python_depth = o->python_depth,
				     .python_lazy = !start__python_expected(o),
				     .oom_kill = o->watch && watch__wants_oom_kill(o->watch),
				     .unwind_bytes =
					 o->unwind_dwarf || o->unwind_auto ? o->unwind_bytes : 0,
				     .unwind_adaptive = !o->unwind_dwarf && o->unwind_auto,
				     .links = o->uprobe_links,
				     .budget = o->max_overhead > 0},
	    &l->bpf);
	if (err)
		return err;
	/* Where starting goes (make bench: command start to tracing): the verifier's share. */
	feat_ns = bpf_setup__features_ns(l->bpf, &cached);
	maps_ns = bpf_setup__maps_ns(l->bpf, &threads);
	pr_info("BPF programs loaded in %.1f ms (kernel features %.1f ms%s, open and load %.1f "
		"ms; its maps made in %.1f ms on %zu thread%s)\n",
		(live_now_ns() - t0) / 1e6, feat_ns / 1e6, cached ? ", cached" : "",
		(live_now_ns() - t0 - feat_ns) / 1e6, maps_ns / 1e6, threads,
		threads == 1 ? "" : "s");
	err = overhead__new(l->bpf,
			    &(struct overhead_opts){.budget = o->max_overhead,
						    .python = o->python_depth > 0,
						    .dwarf = o->unwind_dwarf && o->stack_depth,
						    .stacks = o->stack_depth > 0},
			    &l->ovh);
	if (err)
		return err;
	err = modules__new(&l->mods);
	if (err)
		goto cleanup;
	modules__trace_libc(l->mods, o->libc);
	modules__set_wgpu_abi(l->mods, &o->webgpu_abi);
	modules__move_probes(l->mods, !o->probe_at_entry);
	modules__dawn_procs_only(l->mods, o->dawn_procs);
	err = modules__use_facts(l->mods);
	if (err)
		goto cleanup;
	err = attach__new(bpf_setup__enter_prog(l->bpf), bpf_setup__exit_prog(l->bpf),
			  bpf_setup__usdt_prog(l->bpf), bpf_setup__uprobe_multi(l->bpf), l->mods,
			  &l->att);
	if (err)
		goto cleanup;
	err = symbolizer__new(l->mods, &l->sym);
	if (err)
		goto cleanup;
	symbolizer__set_debug_dirs(l->sym, o->debug_dirs, o->nr_debug_dirs);
	symbolizer__set_site_skip(l->sym, o->a.site_skip, o->a.nr_site_skip);
	err = analysis__new(&o->a, symbolizer__site_frames, l->sym, &l->an);
	if (err)
		goto cleanup;
	tracker__set_site_fn(l->an->t, symbolizer__py_site, l->sym);
	if (o->watch) {
		err = watch__new(o->watch, l, s->json, &l->watch, &l->rec);
		if (err)
			goto cleanup;
	}
	if ((o->unwind_dwarf || o->unwind_auto) && o->stack_depth) {
		err = unwind__new(l->sym, o->stack_depth, &l->unw);
		if (err)
			goto cleanup;
	}
	err = pictures__open(&o->a.out, &s->pics);
	if (err)
		goto cleanup;
	/* No thread (out of resources): mapped here. */
	s->rb_pending = !pthread_create(&s->rb_thread, NULL, ring_open, s);
	if (!s->rb_pending) {
		ring_open(s);
		err = s->rb_err;
		if (err)
			goto cleanup;
	}
	return 0;
cleanup:
	pr_err("setting up: %s\n", strerror(-err));
	return err;
}

/* The report, the endpoint, the tracepoints and the step lines: ready for the targets. */
static int open_report(struct session *s)
{
	const struct session_opts *o = s->l.o;
	struct live *l = &s->l;
	char why[256];
	int err;

	s->rep = (struct report){.t = l->an->t,
				 .tl = l->an->tl,
				 .sym = l->sym,
				 .out = pictures__text_stream(o->json_path, &o->a.out),
				 .json = s->json,
				 .top = o->top,
				 .t0_ns = live_now_ns(),
				 .verdict_more = probe_sites__verdict_more,
				 .verdict_more_ctx = l->sites};
	if (l->rec)
		s->rep.t0_ns = recorder__t0_ns(l->rec);
	if (o->metrics_addr) {
		err = http__new(o->metrics_addr, render_metrics, s, &s->http, why, sizeof(why));
		if (err) {
			pr_err("--metrics %s: %s\n", o->metrics_addr, why);
			return err;
		}
		pr_note("serving metrics on %s\n", http__url(s->http));
	}
	err = bpf_setup__attach_tracepoints(l->bpf);
	if (err)
		return err;
	timeline__on_step(l->an->tl, on_step, s);
	modules__trace_nvtx(l->mods, o->a.steps.source == STEP_NVTX);
	return 0;
}

/* Everything goes, in the order that never leaves a process stopped. traced: whether the
 * session got to its targets (else its capture holds nothing worth keeping). */
static int close_session(struct session *s, bool traced, int err)
{
	const struct session_opts *o = s->l.o;
	struct live *l = &s->l;
	size_t i;

	if (l->child.pid > 0 && l->child.go_fd > 0)
		launch__abort(&l->child);
	attach__free(l->att);
	/* Before anything else goes: a traced process forking now would stay stopped. */
	other_links_go(l);
	ring_ready(s);
	ringbuf__free(s->rb);
	http__free(s->http);
	pictures__free(s->pics);
	analysis__free(l->an);
	callbacks__free(l->cbs);
	markers__free(l->mk);
	pyconf__free(l->py);
	probe_sites__free(l->sites);
	unwind__free(l->unw);
	symbolizer__free(l->sym);
	/* What this run learnt of the objects it scanned, for the next (objfacts.h). */
	if (l->mods)
		modules__save_facts(l->mods);
	modules__free(l->mods);
	overhead__free(l->ovh);
	bpf_setup__free(l->bpf);
	for (i = 0; l->tgts && i < targets__count(l->tgts); i++) {
		struct target *t = targets__at(l->tgts, i);
		int ws;

		/* Our child, exited: reap it (it may not have been a zombie yet at its exit). */
		if (!t->launch || t->state != TARGET_EXITED)
			continue;
		if (waitpid(t->pid, &ws, 0) == t->pid && t->wstatus < 0)
			target__set_wstatus(t, ws);
		s->cmd_wstatus = t->wstatus;
	}
	targets__free(l->tgts);
	signals__free(s->sig);
	/* Before the recorder it writes from. */
	if (l->watch && traced && watch__finish(l->watch) && !err)
		err = -EIO;
	watch__free(l->watch);
	/* A session that never reached its targets wrote nothing worth replacing a file with. */
	if (s->json_file && traced) {
		int e = outfile__commit(s->json_file);

		if (e) {
			pr_err("writing %s: %s\n", o->json_path, strerror(-e));
			err = err ? err : e;
		}
	} else {
		outfile__abort(s->json_file);
	}
	if (recorder__failed(l->rec) && !err)
		err = -EIO;
	if (traced)
		recorder__free(l->rec);
	else
		recorder__discard(l->rec);
	return err;
}

/* Whether run mode's command ended badly while traced: said, for the exit status (4). */
static bool command_failed(const struct session *s)
{
	int ws = s->cmd_wstatus;
	const char *sig;

	if (ws < 0 || (WIFEXITED(ws) && !WEXITSTATUS(ws)))
		return false;
	if (WIFEXITED(ws)) {
		pr_note("the command %s exited with status %d\n", s->l.o->argv[0], WEXITSTATUS(ws));
	} else {
		sig = sigabbrev_np(WTERMSIG(ws));
		pr_note("the command %s was killed by SIG%s (signal %d)%s\n", s->l.o->argv[0],
			sig ? sig : "?", WTERMSIG(ws), WCOREDUMP(ws) ? ", core dumped" : "");
	}
	return true;
}

int session__run(const struct session_opts *o)
{
	struct session s = {.l = {.o = o, .child = {.pid = -1}}, .cmd_wstatus = -1};
	bool traced = false;
	int err;

	if (check_host() || start__check_pids(o))
		return GL_EXIT_ERROR;
	err = open_outputs(&s);
	if (err)
		goto cleanup;
	err = open_tracing(&s);
	if (err)
		goto cleanup;
	err = start__interrupted(&s.l);
	if (err)
		goto cleanup;
	err = open_report(&s);
	if (err)
		goto cleanup;
	err = o->argv ? start__run_mode(&s.l) : start__attach_mode(&s.l);
	if (!err)
		err = ring_ready(&s);
	if (err)
		goto cleanup;
	traced = true;
	if (s.l.watch)
		watch__started(s.l.watch, &s.l);
	err = loop(&s);
	if (err)
		pr_err("tracing stopped: %s\n", strerror(-err));
	finish(&s);
	warn_unattributed_loss(&s);
cleanup:
	err = close_session(&s, traced, err);
	/* The precedence of lib/exit.h: gpuleak's failure, its finding, then the command's. */
	if (s.l.usage_err)
		return GL_EXIT_USAGE;
	if (err || s.out_err)
		return GL_EXIT_ERROR;
	if (s.gate_failed)
		return GL_EXIT_GATE;
	return command_failed(&s) ? GL_EXIT_TARGET : GL_EXIT_OK;
}
