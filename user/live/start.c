// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "lib/log.h"
#include "live/attach.h"
#include "live/bpf_setup.h"
#include "live/feed.h"
#include "live/fpless.h"
#include "live/launch.h"
#include "live/live.h"
#include "live/markers.h"
#include "live/nvtx.h"
#include "live/session_opts.h"
#include "live/process.h"
#include "live/pyconf.h"
#include "live/recorder.h"
#include "live/scan.h"
#include "live/signals.h"
#include "live/start.h"
#include "live/targets.h"
#include "output/pictures.h"
#include "probe/catalog.h"
#include "probe/elf_obj.h"
#include "probe/modules.h"
#include "probe/proc_maps.h"
#include "symbols/symbolizer.h"

int start__interrupted(struct live *l)
{
	int sig = signals__take(l->sig);
	const char *name = sig ? sigabbrev_np(sig) : NULL;

	if (!sig)
		return 0;
	pr_note("interrupted by SIG%s while starting: nothing traced\n", name ? name : "?");
	return -EINTR;
}

static void mark_traced(struct live *l, struct target *t)
{
	/* Full (16k processes): its exit is still seen through the pidfd. */
	if (bpf_setup__trace(l->bpf, t->pid))
		pr_warn("pid %d: no room to follow it in the kernel: its children are not traced\n",
			t->pid);
}

/* Pin -p PID[@TICKS] in a new entry: 0, or -errno said on stderr. */
static int pin(struct live *l, const struct session_pid *sp, struct target **out)
{
	struct target *t = targets__add(l->tgts, sp->pid, 0);
	uint64_t ticks = 0;
	int err;

	*out = t;
	if (!t)
		return -ENOMEM;
	err = target__pin(t, sp->start_ticks);
	if (err == -ESTALE) {
		process__start_ticks(sp->pid, &ticks);
		pr_err("pid %d is not the process asked for: it started at %" PRIu64
		       " (clock ticks after boot), not %" PRIu64 "; the pid was reused\n",
		       sp->pid, ticks, sp->start_ticks);
	} else if (err) {
		pr_err("no such process: %d\n", sp->pid);
	}
	return err;
}

/* What t's first scan found: a GPU library, or a reason to wait, or an error (-ENOENT). */
static int check_gpu_lib(struct live *l, struct target *t, const struct proc_maps *m)
{
	if (attach__has_required(l->att, t->pid)) {
		t->has_lib = true;
		scan__say_tracing(l, t);
		return 0;
	}
	if (l->o->wait_for_lib) {
		pr_note("pid %d maps no GPU library yet; waiting for it to "
			"load one\n",
			t->pid);
		return 0;
	}
	pr_err("pid %d maps no GPU library (no cudaMalloc, wgpuDeviceCreateBuffer, ... in "
	       "any object); looked in:\n",
	       t->pid);
	attach__print_objects(l->att, t->pid, m, stderr);
	pr_note("if it loads one later (PyTorch loads CUDA at first use), "
		"run with --wait\n");
	return -ENOENT;
}

/* One -p process: in the analysis at once, then its probes. */
static int attach_one(struct live *l, const struct session_pid *sp)
{
	struct proc_maps *m = NULL;
	pid_t pid = sp->pid;
	struct target *t;
	size_t spared, scanned;
	uint64_t t0;
	int err, nr_new;

	err = pin(l, sp, &t);
	if (err)
		return err;
	t0 = live_now_ns();
	err = proc_maps__load(pid, &m);
	if (err) {
		pr_err("cannot read /proc/%d/maps: %s\n", pid, strerror(-err));
		return err;
	}
	mark_traced(l, t);
	t->state = TARGET_TRACED;
	feed__proc(l, t, GL_PROC_ATTACH, 0);
	recorder__process(l->rec, t);
	symbolizer__add_maps(l->sym, m);
	fpless__scan(l, m);
	recorder__maps(l->rec, m, l->mods);
	/* Before the probes: its first allocations already have the Python walk to go to. */
	pyconf__scan(l, t, m);
	err = attach__scan(l->att, m, &nr_new);
	if (err)
		goto cleanup;
	/* What `make bench` reports as attach time: maps, ELF scans, links. */
	modules__facts_counts(l->mods, &spared, &scanned);
	pr_info("pid %d: attach took %.1f ms (%zu probes in %zu objects; objects scanned %zu, "
		"spared by earlier runs %zu)\n",
		pid, (live_now_ns() - t0) / 1e6, attach__nr_probes(l->att, pid),
		attach__nr_objects(l->att, pid), scanned, spared);
	/* Now, not at exit: a session killed later has still taught the next one. */
	modules__save_facts(l->mods);
	t->has_rendezvous = scan__has_rendezvous(l, m);
	t->last_rescan_ns = live_now_ns();
	if (markers__attach(l->mk, l->att, t, m))
		pr_note("a step/request marker's object is not mapped yet; "
			"it is attached when it is\n");
	if (l->o->a.steps.source == STEP_NVTX && !scan__has_site(l, m, CAT_NVTX, -1))
		pr_note("pid %d has no NVTX entry points to probe: NVTX v3 is "
			"header-only and reaches a tool only through NVTX_INJECTION64_PATH, which "
			"gpuleak sets in run mode; steps will not advance\n",
			pid);
	feed__devmem(l, t);
	err = check_gpu_lib(l, t, m);
	if (err)
		goto cleanup;
	/* Gone meanwhile: reported as exited, by the loop, from its pidfd. */
	if (target__exited_meanwhile(t))
		attach__forget(l->att, t->pid);
cleanup:
	proc_maps__free(m);
	return err;
}

/* Every marker can be placed in pid's mappings (or --wait waits for its object). */
static int check_markers(struct live *l, pid_t pid)
{
	struct proc_maps *m = NULL;
	int err = proc_maps__load(pid, &m);

	if (err) {
		pr_err("cannot read /proc/%d/maps: %s\n", pid, strerror(-err));
		return err;
	}
	err = markers__check_maps(l->mk, l->mods, pid, m, l->o->wait_for_lib);
	l->usage_err = err == -EINVAL;
	proc_maps__free(m);
	return err;
}

int start__check_pids(const struct session_opts *o)
{
	char why[512];
	size_t i;
	int err;

	for (i = 0; i < o->nr_pids; i++) {
		err = process__check_target(o->pids[i].pid, why, sizeof(why));
		if (err) {
			pr_err("%s\n", why);
			return err;
		}
	}
	return 0;
}

static bool python_name(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "python", 6) || !strncmp(b, "libpython", 9);
}

/* The command as execvp would find it, and whether it or its #! interpreter is Python. */
static bool python_command(const char *cmd)
{
	const char *path = getenv("PATH"), *p, *end;
	char file[PATH_MAX], head[256];
	ssize_t n = -1;
	int fd = -1;

	if (python_name(cmd))
		return true;
	if (strchr(cmd, '/')) {
		fd = open(cmd, O_RDONLY | O_CLOEXEC);
	} else {
		for (p = path ? path : "/usr/bin:/bin"; fd < 0 && *p; p = *end ? end + 1 : end) {
			end = strchrnul(p, ':');
			if (snprintf(file, sizeof(file), "%.*s/%s", (int)(end - p), p, cmd) <
			    (int)sizeof(file))
				fd = open(file, O_RDONLY | O_CLOEXEC);
		}
	}
	if (fd >= 0) {
		n = read(fd, head, sizeof(head) - 1);
		close(fd);
	}
	if (n < 2 || head[0] != '#' || head[1] != '!')
		return false;
	head[n] = 0;
	head[strcspn(head, "\n")] = 0;
	return strstr(head, "python") != NULL;
}

bool start__python_expected(const struct session_opts *o)
{
	struct proc_maps *m;
	bool found = false;
	size_t i, j;

	if (o->argv)
		return python_command(o->argv[0]);
	for (i = 0; i < o->nr_pids && !found; i++) {
		if (proc_maps__load(o->pids[i].pid, &m))
			continue;
		for (j = 0; j < m->n && !found; j++)
			found = m->v[j].exec && m->v[j].path && python_name(m->v[j].path);
		proc_maps__free(m);
	}
	return found;
}

int start__attach_mode(struct live *l)
{
	size_t i;
	int err;

	/* Before any probe: a misspelt marker stops everything, as a usage error. */
	for (i = 0; i < l->o->nr_pids; i++) {
		err = check_markers(l, l->o->pids[i].pid);
		if (err)
			return err;
	}
	for (i = 0; i < l->o->nr_pids; i++) {
		err = start__interrupted(l);
		if (!err)
			err = attach_one(l, &l->o->pids[i]);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Before exec the child maps nothing of its own. Probes go on the executable (static
 * cudart) and on its dynamic linker, by path: uprobes are keyed by inode, so they take
 * effect when exec maps the files. The linker's rendezvous then stops the child each
 * time libraries are mapped, until we have attached to them.
 */
static int probe_by_path(struct live *l, struct target *t)
{
	struct module *mod;
	int err;

	err = attach__path(l->att, t->pid, l->child.exe);
	if (err)
		return err;
	mod = modules__get_path(l->mods, l->child.exe);
	if (mod && mod->elf && elf_obj__interp(mod->elf)) {
		err = attach__path(l->att, t->pid, elf_obj__interp(mod->elf));
		if (err)
			return err;
		t->has_rendezvous = true;
	}
	t->has_lib = attach__has_required(l->att, t->pid);
	markers__attach(l->mk, l->att, t, NULL);
	return 0;
}

int start__run_mode(struct live *l)
{
	static char inject_env[4200];
	char *env[2] = {NULL, NULL};
	struct target *t;
	int err;

	/* NVTX v3 reaches a tool only through its injection variable: point it at ours. */
	if (l->o->a.steps.source == STEP_NVTX) {
		err = nvtx__inject_env(inject_env, sizeof(inject_env));
		if (err)
			return err;
		env[0] = inject_env;
	}
	/* gpuleak's standard output carries an output file (--json -): the command's own
	 * output goes to standard error, not into it. */
	err = launch__fork(
	    l->o->argv, env,
	    pictures__text_stream(l->o->json_path, &l->o->a.out) == stderr ? STDERR_FILENO : -1,
	    &l->child);
	if (err) {
		pr_err("cannot run %s: %s\n", l->o->argv[0], strerror(-err));
		return err;
	}
	/* Held before exec: a marker that cannot be placed stops it from ever running. */
	err = markers__check_exec(l->mk, l->child.exe, l->o->wait_for_lib);
	if (err) {
		l->usage_err = err == -EINVAL;
		return err;
	}
	t = targets__add(l->tgts, l->child.pid, 0);
	if (!t)
		return -ENOMEM;
	t->launch = &l->child;
	t->held = bpf_setup__hold(l->bpf, t->pid);
	if (!t->held) {
		pr_err("cannot register pid %d for holding\n", t->pid);
		return -ENOMEM;
	}
	err = probe_by_path(l, t);
	if (err)
		return err;
	t->pidfd = process__pidfd(t->pid);
	if (t->pidfd < 0)
		return t->pidfd;
	/* Followed from before its exec: the exec that starts it is not a new process. */
	mark_traced(l, t);
	t->state = TARGET_LAUNCHING;
	feed__proc(l, t, GL_PROC_ATTACH, 0);
	/* The command has not run: a signal now, or while it execs, means it never does. */
	err = start__interrupted(l);
	if (err)
		return err;
	err = launch__release(&l->child, signals__fd(l->sig));
	if (err == -EINTR)
		start__interrupted(l);
	else if (err)
		pr_err("cannot run %s: %s\n", l->o->argv[0], strerror(-err));
	if (err) {
		t->state = TARGET_EXITED;
		return err;
	}
	process__start_ticks(t->pid, &t->start_ticks);
	feed__devmem(l, t);
	recorder__process(l->rec, t);
	return 0;
}
