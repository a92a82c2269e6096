// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include "lib/log.h"
#include "live/attach.h"
#include "live/bpf_setup.h"
#include "live/feed.h"
#include "live/follow.h"
#include "live/fpless.h"
#include "live/live.h"
#include "live/overhead.h"
#include "live/probe_sites.h"
#include "live/process.h"
#include "live/scan.h"
#include "live/targets.h"

/*
 * Resume a child BPF stopped at its fork (t NULL: one we could not take on). Before Linux 6.13
 * the child stops itself at its first schedule, which may come after its fork record is read:
 * a SIGCONT sent first would be undone by its own SIGSTOP and leave it stopped for good, so it
 * goes once the child is seen stopped. One that does not stop in time (its signal refused) is
 * released from its hold and resumed anyway: a SIGCONT to a running process does nothing.
 */
static void resume_forked(struct live *l, pid_t pid, pid_t ppid, const struct target *t)
{
	int err;

	if (bpf_setup__fork_hold_late(l->bpf)) {
		err = process__wait_stopped(pid, 5000);
		if (err == -ETIMEDOUT) {
			bpf_setup__fork_unhold(l->bpf, pid);
			pr_warn("pid %d (child of %d) did not stop itself within 5 s of its fork: "
				"resumed, its first calls may be missed\n",
				pid, ppid);
		}
	}
	if (t)
		target__resume(t);
	else
		kill(pid, SIGCONT);
}

/* A child of a traced process (--follow): stopped by BPF before its first instruction. */
static void on_fork(struct live *l, const struct gl_task_rec *r)
{
	bool stopped = r->flags & GL_TF_STOPPED;
	struct target *t;
	int err;

	if (r->flags & GL_TF_UNFOLLOWED) {
		/* Once: a server forking helpers all day needs telling only once. */
		if (!l->said_unfollowed)
			pr_note("pid %u (%.16s) started pid %d, which is not traced: --follow "
				"traces the processes a target starts\n",
				r->ppid, r->comm, r->hdr.pid);
		l->said_unfollowed = true;
		return;
	}
	t = targets__add(l->tgts, r->hdr.pid, r->ppid);
	if (!t) {
		pr_err("out of memory: pid %d (child of %u) is not traced\n", r->hdr.pid, r->ppid);
		/* Unchecked pid: only when BPF just stopped it, a moment ago. */
		if (stopped)
			resume_forked(l, r->hdr.pid, r->ppid, NULL);
		return;
	}
	memcpy(t->comm, r->comm, sizeof(t->comm) - 1);
	err = target__pin(t, process__boot_ns_to_ticks(r->start_ns));
	if (err) {
		/* Gone already, or its pid reused: nothing of ours to attach to or resume. */
		if (err == -ESTALE)
			pr_warn("pid %d (child of %u) exited and its pid was reused before gpuleak "
				"got to it: not traced\n",
				r->hdr.pid, r->ppid);
		targets__drop(l->tgts, t);
		return;
	}
	if (l->finishing) {
		if (stopped)
			resume_forked(l, t->pid, r->ppid, t);
		else
			target__resume(t);
		targets__drop(l->tgts, t);
		return;
	}
	if (!stopped && !l->warned_unstopped) {
		l->warned_unstopped = true;
		pr_warn("this kernel cannot stop a forked process before it runs (bpf_send_signal_"
			"task, Linux 6.13): the first calls of followed children may be missed\n");
	}
	/* Later dlopen()s stop it at the rendezvous until we attached, as in run mode. */
	t->held = bpf_setup__hold(l->bpf, t->pid);
	err = scan__target(l, t);
	if (err)
		pr_warn("attaching to pid %d (child of %u): %s\n", t->pid, t->ppid, strerror(-err));
	if (target__exited_meanwhile(t))
		attach__forget(l->att, t->pid);
	if (stopped)
		resume_forked(l, t->pid, r->ppid, t);
}

/*
 * A traced process exec'd: its memory went with its old program. What it becomes is a new
 * process to the analysis (announced again when it has a GPU library); its probes stay, they
 * follow the task, and the rendezvous of its new ld.so holds it until we attached. Run
 * mode's child is launching: its first exec is its command's start, not a new program. One
 * that called its end marker is let go after this drain, whatever it runs now.
 */
static void on_exec(struct live *l, const struct gl_task_rec *r)
{
	struct target *t = targets__find(l->tgts, r->hdr.pid);
	bool stopped = r->flags & GL_TF_STOPPED;
	int err;

	if (!t) {
		/* In the kernel's table but not ours (we could not take it on): never leave
		 * it stopped, and do not follow it further. */
		bpf_setup__untrace(l->bpf, r->hdr.pid);
		if (stopped)
			kill(r->hdr.pid, SIGCONT);
		return;
	}
	/* Its new name, should it exit before /proc is read (a short command). */
	memcpy(t->comm, r->comm, sizeof(t->comm) - 1);
	if (t->state == TARGET_LAUNCHING) {
		t->state = TARGET_TRACED;
	} else if (!l->finishing && t->state != TARGET_ENDING) {
		if (target__in_analysis(t)) {
			feed__loss(l, t);
			feed__proc(l, t, GL_PROC_EXEC, 0);
		}
		t->state = TARGET_NEW;
		t->execs++;
		t->has_lib = false;
		t->has_rendezvous = false;
		t->markers_done = 0;
		t->py_runtime = 0;
		t->py_said = false;
		t->held = bpf_setup__hold(l->bpf, t->pid);
		err = scan__target(l, t);
		if (err)
			pr_warn("attaching to pid %d after its exec: %s\n", t->pid, strerror(-err));
	}
	if (stopped)
		target__resume(t);
}

void follow__exited(struct live *l, struct target *t, int status, uint64_t ts_ns)
{
	bool reported;
	int ws;

	if (target__gone(t))
		return;
	/* Its CPU time while /proc still has it (our own child is reaped below). */
	if (target__in_analysis(t))
		overhead__sample(l->ovh, l, live_now_ns(), t->pid, OVH_FINAL);
	overhead__forget(l->ovh, t->pid);
	/* Our own child: reap it; its wait status is the authority. */
	if (t->launch && waitpid(t->pid, &ws, WNOHANG) == t->pid)
		status = ws;
	if (status >= 0)
		target__set_wstatus(t, status);
	/* A loss announces a process that lost records: before it leaves the analysis. */
	feed__loss(l, t);
	reported = target__in_analysis(t);
	t->state = TARGET_EXITED;
	if (reported)
		feed__proc_at(l, t, GL_PROC_EXIT, t->status, ts_ns);
	bpf_setup__forget(l->bpf, t->pid);
	fpless__forget(l, t->pid);
	/* Its probes filter on its pid: they could only ever fire for a reused one. */
	if (!l->finishing) {
		if (reported)
			probe_sites__keep(l->sites, l->att, t->pid);
		attach__forget(l->att, t->pid);
	}
	/* A child gpuleak started stays in the table until reaped (run mode's exit status). */
	if (!t->launch)
		targets__drop(l->tgts, t);
}

void follow__ended(struct live *l, struct target *t)
{
	/* (an ending target is in the analysis: its end marker call announced it) */
	probe_sites__keep(l->sites, l->att, t->pid);
	overhead__sample(l->ovh, l, live_now_ns(), t->pid, OVH_FINAL);
	overhead__forget(l->ovh, t->pid);
	t->state = TARGET_ENDED;
	bpf_setup__forget(l->bpf, t->pid);
	attach__forget(l->att, t->pid);
	if (t->held)
		target__resume(t);
	pr_info("pid %d called its end marker: session ended, detached\n", t->pid);
	if (!t->launch)
		targets__drop(l->tgts, t);
}

void follow__task(struct live *l, const struct gl_task_rec *r)
{
	struct target *t;

	switch (r->event) {
	case GL_TASK_FORK:
		on_fork(l, r);
		break;
	case GL_TASK_EXEC:
		on_exec(l, r);
		break;
	case GL_TASK_EXIT:
		t = targets__find(l->tgts, r->hdr.pid);
		if (t)
			follow__exited(l, t, r->exit_code, r->hdr.ts_ns);
		break;
	}
}
