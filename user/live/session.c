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
#include "engine/analysis.h"
#include "live/attach.h"
#include "live/bpf_setup.h"
#include "live/callbacks.h"
#include "capture/capture.h"
#include "probe/elf_obj.h"
#include "gpuleak.h"
#include "lib/exit.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "lib/vec.h"
#include "live/http.h"
#include "probe/modules.h"
#include "live/nvml.h"
#include "live/nvtx.h"
#include "probe/catalog.h"
#include "probe/proc_maps.h"
#include "live/launch.h"
#include "live/markers.h"
#include "live/probe_sites.h"
#include "live/recorder.h"
#include "live/process.h"
#include "output/report.h"
#include "live/ringbuf.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"
#include "live/session.h"
#include "live/signals.h"
#include "live/targets.h"
#include "engine/tracker.h"

/* Drain this often: BPF only wakes us once 256 KiB are waiting. */
#define POLL_MS 50
/* Without an ld.so rendezvous probe, look for newly mapped libraries this often. */
#define RESCAN_NS 1000000000ULL
/* poll() slots besides the targets' pidfds: ring buffer, signals, the metrics endpoint. */
#define FIXED_FDS (2 + HTTP_MAX_FDS)

struct trace {
	const struct trace_opts *o;
	struct bpf_setup *bpf;
	struct modules *mods;
	struct attach *att;
	struct symbolizer *sym;
	struct analysis *an;
	struct ringbuf *rb;
	struct report rep;
	struct outfile *json_file; /* --json */
	FILE *json;		   /* its stream, NULL without --json */
	struct targets *tgts;
	struct http *http; /* --metrics: the fleet endpoint */
	bool finishing;	   /* detached: stopped processes are resumed, not attached to */
	bool warned_unstopped;
	struct markers *mk;
	uint64_t last_step_line_ns;
	struct launch child;
	bool run_mode;
	struct signals *sig;
	struct callbacks *cbs;
	struct recorder *rec;	   /* gpuleak record, else NULL */
	bool out_err;		   /* --folded, --perfetto or --svg could not be written */
	struct probe_sites *sites; /* --json: where the probes sat, for the verdicts */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	/* The clock of bpf_ktime_get_ns(): record and user-space times compare directly. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* ---- the traced processes ---- */

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
	const struct ustack *st;
	const uint64_t *raw;
	size_t n = 0, max;
	int err;

	if (symbolizer__stack(tr->sym, r->hdr.pid, r->stack_id, r->caller))
		return;
	raw = bpf_setup__stack(tr->bpf, r->stack_id);
	if (!raw)
		return;
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
	    (t = targets__find(tr->tgts, h->pid)))
		t->rescan_pending = true;
	/* A followed process enters the analysis with its first traced call, just before it. */
	if (is_activity(h) && (t = targets__find(tr->tgts, h->pid)) && !target__in_analysis(t))
		announce(tr, t, h->ts_ns);
	if (h->kind == GL_REC_NOTIFY && h->api == GL_API_MARKER_END &&
	    (t = targets__find(tr->tgts, h->pid)))
		t->state = TARGET_ENDING;
	if (h->kind == GL_REC_CODE && h->size >= sizeof(struct gl_call_rec))
		callbacks__request(tr->cbs, (const struct gl_call_rec *)h);
	if ((h->kind == GL_REC_ALLOC || h->kind == GL_REC_ALLOC_FAIL) &&
	    h->size >= sizeof(struct gl_call_rec) && ((const struct gl_call_rec *)h)->stack_id >= 0)
		intern_stack(tr, (const struct gl_call_rec *)h);
	recorder__record(tr->rec, h);
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
		if (t->launch) {
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

	if (bpf_setup__pid_loss(tr->bpf, t->pid, r.counts))
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
	if (target__in_analysis(t))
		return;
	t->state = TARGET_TRACED;
	emit_proc_at(tr, t, GL_PROC_ATTACH, 0, ts_ns);
	recorder__process(tr->rec, t);
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
	recorder__maps(tr->rec, m, tr->mods);
	err = attach__scan(tr->att, m, &nr_new);
	markers__attach(tr->mk, tr->att, t, m);
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

static void mark_traced(struct trace *tr, struct target *t)
{
	/* Full (16k processes): its exit is still seen through the pidfd. */
	if (bpf_setup__trace(tr->bpf, t->pid))
		pr_warn("pid %d: no room to follow it in the kernel: its children are not traced\n",
			t->pid);
}

static void hold(struct trace *tr, struct target *t)
{
	t->held = bpf_setup__hold(tr->bpf, t->pid);
}

static int start_attach_one(struct trace *tr, const struct trace_pid *tp)
{
	struct proc_maps *m = NULL;
	pid_t pid = tp->pid;
	struct target *t;
	uint64_t t0;
	int err, nr_new;

	t = targets__add(tr->tgts, pid, 0);
	if (!t)
		return -ENOMEM;
	err = target__pin(t, tp->start_ticks);
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
	t->state = TARGET_TRACED;
	emit_proc(tr, t, GL_PROC_ATTACH, 0);
	recorder__process(tr->rec, t);
	symbolizer__add_maps(tr->sym, m);
	recorder__maps(tr->rec, m, tr->mods);
	err = attach__scan(tr->att, m, &nr_new);
	if (err)
		goto cleanup;
	/* What `make bench` reports as attach time: maps, ELF scans, links. */
	pr_info("pid %d: attach took %.1f ms (%zu probes in %zu objects)\n", pid,
		(now_ns() - t0) / 1e6, attach__nr_probes(tr->att, pid),
		attach__nr_objects(tr->att, pid));
	t->has_rendezvous = has_rendezvous_probe(tr, m);
	t->last_rescan_ns = now_ns();
	if (markers__attach(tr->mk, tr->att, t, m))
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
	if (target__exited_meanwhile(t))
		attach__forget(tr->att, t->pid);
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

static int start_run_mode(struct trace *tr)
{
	static char inject_env[4200];
	char *env[2] = {NULL, NULL};
	struct target *t;
	struct module *mod;
	int err;

	/* NVTX v3 reaches a tool only through its injection variable: point it at ours. */
	if (tr->o->a.steps.source == STEP_NVTX) {
		err = nvtx__inject_env(inject_env, sizeof(inject_env));
		if (err)
			return err;
		env[0] = inject_env;
	}
	err = launch__fork(tr->o->argv, env, &tr->child);
	if (err) {
		pr_err("cannot run %s: %s\n", tr->o->argv[0], strerror(-err));
		return err;
	}
	tr->run_mode = true;
	t = targets__add(tr->tgts, tr->child.pid, 0);
	if (!t)
		return -ENOMEM;
	t->launch = &tr->child;
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
	markers__attach(tr->mk, tr->att, t, NULL);
	t->pidfd = process__pidfd(t->pid);
	if (t->pidfd < 0)
		return t->pidfd;
	/* Followed from before its exec: the exec that starts it is not a new process. */
	mark_traced(tr, t);
	t->state = tr->o->follow ? TARGET_LAUNCHING : TARGET_TRACED;
	emit_proc(tr, t, GL_PROC_ATTACH, 0);
	err = launch__release(&tr->child);
	if (err) {
		pr_err("cannot run %s: %s\n", tr->o->argv[0], strerror(-err));
		t->state = TARGET_EXITED;
		return err;
	}
	process__start_ticks(t->pid, &t->start_ticks);
	emit_devmem(tr, t);
	recorder__process(tr->rec, t);
	return 0;
}

/* ---- processes that fork, exec and exit (scheduler tracepoints) ---- */

/* A child of a traced process (--follow): stopped by BPF before its first instruction. */
static void on_fork(struct trace *tr, const struct gl_task_rec *r)
{
	bool stopped = r->flags & GL_TF_STOPPED;
	struct target *t;
	int err;

	t = targets__add(tr->tgts, r->hdr.pid, r->ppid);
	if (!t) {
		pr_err("out of memory: pid %d (child of %u) is not traced\n", r->hdr.pid, r->ppid);
		goto resume;
	}
	err = target__pin(t, process__boot_ns_to_ticks(r->start_ns));
	if (err) {
		/* Gone already, or its pid reused: nothing of ours to attach to or resume. */
		if (err == -ESTALE)
			pr_warn("pid %d (child of %u) exited and its pid was reused before gpuleak "
				"got to it: not traced\n",
				r->hdr.pid, r->ppid);
		targets__drop(tr->tgts, t);
		return;
	}
	if (tr->finishing) {
		target__resume(t);
		targets__drop(tr->tgts, t);
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
	if (target__exited_meanwhile(t))
		attach__forget(tr->att, t->pid);
	if (stopped)
		target__resume(t);
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
	struct target *t = targets__find(tr->tgts, r->hdr.pid);
	bool stopped = r->flags & GL_TF_STOPPED;
	int err;

	if (!t) {
		/* In the kernel's table but not ours (we could not take it on): never leave
		 * it stopped, and do not follow it further. */
		bpf_setup__untrace(tr->bpf, r->hdr.pid);
		if (stopped)
			kill(r->hdr.pid, SIGCONT);
		return;
	}
	if (t->state == TARGET_LAUNCHING) {
		t->state = TARGET_TRACED;
	} else if (!tr->finishing && t->state != TARGET_ENDING) {
		/* (one ending is let go after this drain, whatever it runs now) */
		if (target__in_analysis(t)) {
			emit_loss(tr, t);
			emit_proc(tr, t, GL_PROC_EXEC, 0);
		}
		t->state = TARGET_NEW;
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
		target__resume(t);
}

/* t is gone (at ts_ns): its last records are in, report its end and forget it. */
static void target_exited(struct trace *tr, struct target *t, int status, uint64_t ts_ns)
{
	bool reported;
	int ws;

	if (target__gone(t))
		return;
	/* Our own child: reap it; its wait status is the authority. */
	if (t->launch && waitpid(t->pid, &ws, WNOHANG) == t->pid)
		status = ws;
	if (status >= 0)
		t->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	/* A loss announces a process that lost records: before it leaves the analysis. */
	emit_loss(tr, t);
	reported = target__in_analysis(t);
	t->state = TARGET_EXITED;
	if (reported)
		emit_proc_at(tr, t, GL_PROC_EXIT, t->status, ts_ns);
	bpf_setup__forget(tr->bpf, t->pid);
	/* Its probes filter on its pid: they could only ever fire for a reused one. */
	if (!tr->finishing) {
		if (reported)
			probe_sites__keep(tr->sites, tr->att, t->pid);
		attach__forget(tr->att, t->pid);
	}
	/* A child gpuleak started stays in the table until reaped (run mode's exit status). */
	if (!t->launch)
		targets__drop(tr->tgts, t);
}

/*
 * t called its end marker: the analysis ended its session at that call and takes nothing
 * more of it; stop tracing it (it runs on, like a target of --duration).
 */
static void target_ended(struct trace *tr, struct target *t)
{
	/* (an ending target is in the analysis: its end marker call announced it) */
	probe_sites__keep(tr->sites, tr->att, t->pid);
	t->state = TARGET_ENDED;
	bpf_setup__forget(tr->bpf, t->pid);
	attach__forget(tr->att, t->pid);
	if (t->held)
		target__resume(t);
	pr_info("pid %d called its end marker: session ended, detached\n", t->pid);
	if (!t->launch)
		targets__drop(tr->tgts, t);
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
		t = targets__find(tr->tgts, r->hdr.pid);
		if (t)
			target_exited(tr, t, r->exit_code, r->hdr.ts_ns);
		break;
	}
}

/* Run mode's child while it is traced (Ctrl-C reached it too), else 0. */
static pid_t child_pid(const struct trace *tr)
{
	const struct target *t = tr->run_mode ? targets__find(tr->tgts, tr->child.pid) : NULL;

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
static size_t fill_pollfds(struct trace *tr, struct pollfd *fds, size_t *nfds)
{
	size_t i, n, nr_http;

	fds[0] = (struct pollfd){.fd = ringbuf__fd(tr->rb), .events = POLLIN};
	fds[1] = (struct pollfd){.fd = signals__fd(tr->sig), .events = POLLIN};
	nr_http = tr->http ? http__pollfds(tr->http, fds + 2, HTTP_MAX_FDS) : 0;
	n = 2 + nr_http;
	for (i = 0; i < targets__count(tr->tgts); i++) {
		struct target *t = targets__at(tr->tgts, i);

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
static void retire_targets(struct trace *tr, const struct pollfd *fds, size_t nfds)
{
	struct target *t;
	size_t i;

	for (i = 0; i < nfds; i++) {
		if (!(fds[i].revents & (POLLIN | POLLHUP)))
			continue;
		t = targets__by_pidfd(tr->tgts, fds[i].fd);
		if (t)
			target_exited(tr, t, -1, now_ns());
	}
	for (i = 0; i < targets__count(tr->tgts);) {
		t = targets__at(tr->tgts, i);
		if (t->state == TARGET_ENDING) {
			target_ended(tr, t);
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
static void rescan_targets(struct trace *tr, uint64_t now)
{
	size_t i;
	int err;

	for (i = 0; i < targets__count(tr->tgts); i++) {
		struct target *t = targets__at(tr->tgts, i);
		bool pending = t->rescan_pending;

		if (target__gone(t))
			continue;
		if (pending || (!t->has_rendezvous && now - t->last_rescan_ns >= RESCAN_NS)) {
			err = scan_target(tr, t);
			if (err)
				pr_warn("attaching to newly mapped objects of pid %d: %s\n", t->pid,
					strerror(-err));
		}
		if ((pending && t->held) || t->code_wait)
			target__resume(t);
		t->code_wait = false;
	}
}

/* An --interval's table (or, with --step, only the loss records behind its step lines). */
static void interval_due(struct trace *tr, uint64_t now, uint64_t *next_interval)
{
	size_t i;

	if (now < *next_interval)
		return;
	for (i = 0; i < targets__count(tr->tgts); i++)
		emit_loss(tr, targets__at(tr->tgts, i));
	if (!tr->o->a.steps_given)
		report__interval(&tr->rep, now);
	*next_interval += tr->o->interval_ns;
	if (*next_interval <= now)
		*next_interval = now + tr->o->interval_ns;
}

/* Until every target is gone, a signal, or --duration: drain, serve, reap, rescan. */
static int loop(struct trace *tr)
{
	uint64_t start = now_ns(), next_interval, deadline;
	struct pollfd *fds = NULL;
	size_t cap_fds = 0;
	int err = 0;

	next_interval = tr->o->interval_ns ? start + tr->o->interval_ns : UINT64_MAX;
	deadline = tr->o->duration_ns ? start + tr->o->duration_ns : UINT64_MAX;
	while (targets__alive(tr->tgts)) {
		uint64_t now = now_ns(), wait_ns = POLL_MS * 1000000ULL;
		size_t nfds, nr_http;
		bool stop = false;
		int64_t n;

		err = pollfds_room(&fds, &cap_fds, FIXED_FDS + targets__count(tr->tgts));
		if (err)
			break;
		nr_http = fill_pollfds(tr, fds, &nfds);
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
			stop = signals__stop(tr->sig, child_pid(tr));
		if (tr->http)
			http__handle(tr->http, fds + 2, nr_http, now_ns());
		retire_targets(tr, fds + 2 + nr_http, nfds - 2 - nr_http);
		now = now_ns();
		/* New callbacks first: a target may be stopped for both. */
		callbacks__attach(tr->cbs, tr->att, tr->tgts);
		rescan_targets(tr, now);
		emit_tick(tr);
		recorder__names(tr->rec, tr->sym, tr->an->t, false);
		interval_due(tr, now, &next_interval);
		if (stop || now >= deadline)
			break;
	}
	free(fds);
	return err;
}

static void finish(struct trace *tr)
{
	uint64_t end_ns, t0;
	size_t i;

	/* Exits the loop did not get to (a signal, --duration): whoever exited while traced
	 * exited. Exiting drops a target from the table: look again from the start after each. */
	for (i = 0; i < targets__count(tr->tgts);) {
		struct target *t = targets__at(tr->tgts, i);

		if (!target__gone(t) && process__pidfd_exited(t->pidfd)) {
			ringbuf__drain(tr->rb);
			target_exited(tr, t, -1, now_ns());
			i = 0;
		} else {
			i++;
		}
	}
	/* Where the probes sat, for the verdicts: known only while attached. */
	for (i = 0; i < targets__count(tr->tgts); i++)
		if (target__in_analysis(targets__at(tr->tgts, i)))
			probe_sites__keep(tr->sites, tr->att, targets__at(tr->tgts, i)->pid);
	/*
	 * Detach, then drain what was submitted before the links went away. The tracepoints go
	 * first: no child is stopped after that, those stopped already are resumed as their
	 * records come in (finishing), and a target exiting from now on was detached from.
	 */
	t0 = now_ns();
	tr->finishing = true;
	bpf_setup__detach_tracepoints(tr->bpf);
	attach__free(tr->att);
	tr->att = NULL;
	pr_info("detach took %.1f ms\n", (now_ns() - t0) / 1e6);
	callbacks__clear(tr->cbs);
	for (i = 0; i < targets__count(tr->tgts); i++) {
		struct target *t = targets__at(tr->tgts, i);

		if (t->held && !target__gone(t))
			target__resume(t);
	}
	ringbuf__drain(tr->rb);
	for (i = 0; i < targets__count(tr->tgts); i++) {
		struct target *t = targets__at(tr->tgts, i);

		if (target__gone(t))
			continue;
		emit_loss(tr, t);
		if (target__in_analysis(t))
			emit_proc(tr, t, GL_PROC_DETACH, 0);
	}
	recorder__names(tr->rec, tr->sym, tr->an->t, true);
	end_ns = now_ns();
	report__final(&tr->rep, end_ns);
	/* As of the last record, as a report of the capture draws them: the same files. */
	tr->out_err = analysis__write_outputs(tr->an, &tr->rep, tr->an->t->last_ts_ns) != 0;
	if (ringbuf__bad(tr->rb))
		pr_warn("%" PRIu64 " ring buffer records had an unexpected size (mismatched BPF "
			"object?)\n",
			ringbuf__bad(tr->rb));
	recorder__finish(tr->rec);
}

/* What was lost where no process could be charged with it (its table was full). */
static void warn_unattributed_loss(struct trace *tr)
{
	uint64_t sum = bpf_setup__map_full(tr->bpf);

	if (sum)
		pr_warn("BPF maps ran full %" PRIu64 " times (processes not followed, or "
			"losses not charged to a process): results are approximate\n",
			sum);
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
	struct trace tr = {.o = o};
	bool traced = false;
	size_t i;
	int err;

	tr.child.pid = -1;
	err = process__check_privileges();
	if (err) {
		pr_err("loading BPF programs and attaching uprobes needs root, or CAP_BPF, "
		       "CAP_PERFMON and CAP_SYS_ADMIN: run it with sudo\n");
		return GL_EXIT_ERROR;
	}
	if (check_kernel())
		return GL_EXIT_ERROR;
	if (o->json_path) {
		err = outfile__open(o->json_path, OUTFILE_TRUNCATE, &tr.json_file);
		if (err) {
			pr_err("cannot write %s: %s\n", o->json_path, strerror(-err));
			return GL_EXIT_ERROR;
		}
		tr.json = outfile__stream(tr.json_file);
	}
	if (o->capture_path) {
		err = recorder__new(o->capture_path, &o->capture, &tr.rec);
		if (err)
			goto cleanup;
	}
	err = targets__new(&tr.tgts);
	if (!err)
		err = callbacks__new(&tr.cbs);
	if (!err)
		err = markers__new(&o->a, &tr.mk);
	if (!err && o->json_path)
		err = probe_sites__new(&tr.sites);
	if (!err)
		err = signals__new(&tr.sig);
	if (err)
		goto cleanup;
	err = bpf_setup__new(&(struct bpf_setup_opts){.follow = o->follow,
						      .ringbuf_bytes = o->ringbuf_bytes,
						      .stack_depth = o->stack_depth,
						      .stack_entries = o->stack_entries},
			     &tr.bpf);
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
		err = attach__new(bpf_setup__enter_prog(tr.bpf), bpf_setup__exit_prog(tr.bpf),
				  tr.mods, &tr.att);
	if (!err)
		err = symbolizer__new(tr.mods, &tr.sym);
	if (!err)
		symbolizer__set_debug_dirs(tr.sym, o->debug_dirs, o->nr_debug_dirs);
	if (!err)
		err = analysis__new(&o->a, symbolizer__site_frames, tr.sym, &tr.an);
	if (!err)
		err = ringbuf__new(bpf_setup__events_fd(tr.bpf), on_record, &tr, &tr.rb);
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
				 .gate = o->a.gate,
				 .verdict_more = probe_sites__verdict_more,
				 .verdict_more_ctx = tr.sites};
	if (tr.rec)
		tr.rep.t0_ns = recorder__t0_ns(tr.rec);
	if (o->metrics_addr) {
		char why[256];

		err = http__new(o->metrics_addr, render_metrics, &tr, &tr.http, why, sizeof(why));
		if (err) {
			pr_err("--metrics %s: %s\n", o->metrics_addr, why);
			goto cleanup;
		}
		fprintf(stderr, "gpuleak: serving metrics on %s\n", http__url(tr.http));
	}
	err = bpf_setup__attach_tracepoints(tr.bpf);
	if (err)
		goto cleanup;
	timeline__on_step(tr.an->tl, on_step, &tr);
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
	/* Before anything else goes: a traced process forking now would stay stopped. */
	if (tr.bpf)
		bpf_setup__detach_tracepoints(tr.bpf);
	ringbuf__free(tr.rb);
	http__free(tr.http);
	analysis__free(tr.an);
	callbacks__free(tr.cbs);
	markers__free(tr.mk);
	probe_sites__free(tr.sites);
	symbolizer__free(tr.sym);
	modules__free(tr.mods);
	bpf_setup__free(tr.bpf);
	for (i = 0; tr.tgts && i < targets__count(tr.tgts); i++) {
		const struct target *t = targets__at(tr.tgts, i);

		/* Our child, exited: reap it (it may not have been a zombie yet at its exit). */
		if (t->launch && t->state == TARGET_EXITED)
			waitpid(t->pid, NULL, 0);
	}
	targets__free(tr.tgts);
	signals__free(tr.sig);
	/* A write error here goes unsaid, as it always did (issue 15 makes it exit 1). */
	outfile__commit(tr.json_file);
	/* A capture of a session that never started holds nothing worth keeping. */
	if (recorder__failed(tr.rec))
		err = err ? err : -EIO;
	if (traced)
		recorder__free(tr.rec);
	else
		recorder__discard(tr.rec);
	if (err || tr.out_err)
		return GL_EXIT_ERROR;
	return tr.rep.gate.failed ? GL_EXIT_GATE : GL_EXIT_OK;
}
