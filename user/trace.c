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
#include "analysis.h"
#include "attach.h"
#include "capture.h"
#include "elf_syms.h"
#include "gpuleak.h"
#include "gpuleak.skel.h"
#include "log.h"
#include "modules.h"
#include "nvml.h"
#include "probe_catalog.h"
#include "proc_maps.h"
#include "process.h"
#include "report.h"
#include "ringbuf.h"
#include "symbolize.h"
#include "trace.h"
#include "tracker.h"

/* Drain this often: BPF only wakes us once 256 KiB are waiting. */
#define POLL_MS 50
/* Without an ld.so rendezvous probe, look for newly mapped libraries this often. */
#define RESCAN_NS 1000000000ULL

struct target {
	pid_t pid;
	int pidfd;
	uint64_t start_ticks;
	bool held;		/* stopped at each ld.so rendezvous until we attached (run mode) */
	bool gone;
	bool has_lib;		/* a GPU library (CUDA, WebGPU) is attached */
	int status;
	uint64_t loss[GL_STAT_MAX];
	uint64_t last_rescan_ns;
};

/* A callback the target passed that still needs its probe (GL_REC_CODE). */
struct code_req {
	pid_t pid;
	uint64_t addr;
	unsigned int api;	/* the probe's API: the catalog's code_api of the passing call */
	bool held;		/* the target is stopped until this is done */
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
	FILE *json;
	struct target tgt;
	struct marker {
		const char *file, *sym;
		unsigned int api;
		bool attached;
	} markers[3];
	int nr_markers;
	uint64_t last_step_line_ns;
	struct launch child;
	bool run_mode;
	int sigfd;
	int sigints;
	bool rescan_pending;
	bool has_rendezvous;
	struct code_req *code;
	size_t nr_code, cap_code;
	struct capture *cap;	/* gpuleak record */
	int cap_err;		/* the capture failed: tracing goes on, the exit status is 1 */
	size_t cap_named;	/* tracker sites before this one have their name in the capture */
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
	tr->code[tr->nr_code++] = (struct code_req){ r->hdr.pid, r->addr, a->code_api,
						     r->hdr.flags & GL_HF_HELD };
}

/* Probe the callbacks reported since the last drain. Returns whether a target waits on it. */
static bool attach_code(struct trace *tr)
{
	bool resume = false;
	size_t i;

	for (i = 0; i < tr->nr_code; i++) {
		struct code_req *c = &tr->code[i];
		char why[160];

		if (attach__code(tr->att, c->pid, c->addr, c->api, why, sizeof(why)))
			pr_warn("pid %d: cannot probe %s: %s; its completions go unseen\n", c->pid,
				cat_api_name(c->api), why);
		resume |= c->held;
	}
	tr->nr_code = 0;
	return resume;
}

static void capture_failed(struct trace *tr, int err)
{
	struct capture_stats st;

	if (tr->cap_err)
		return;
	tr->cap_err = err;
	capture__stats(tr->cap, &st);
	pr_err("writing %s: %s; the capture stops at offset %" PRIu64 " (its %" PRIu64 " records "
	       "stay readable), tracing goes on\n", capture__path(tr->cap), strerror(-err),
	       st.bytes, st.records);
}

/*
 * Every record, from BPF or made here, enters the analysis through this one function; a
 * capture gets exactly the same stream, in the same order, so `gpuleak report` replays
 * what the tracker saw.
 */
static int on_record(void *ctx, const struct gl_hdr *h)
{
	struct trace *tr = ctx;
	int err;

	if (h->kind == GL_REC_NOTIFY && h->api == GL_API_LD_DEBUG_STATE && h->pid == (__u32)tr->tgt.pid)
		tr->rescan_pending = true;
	if (h->kind == GL_REC_CODE && h->size >= sizeof(struct gl_call_rec))
		code_request(tr, (const struct gl_call_rec *)h);
	if (tr->cap && !tr->cap_err) {
		err = capture__write_record(tr->cap, h);
		if (err && err != -EINVAL)
			capture_failed(tr, err);
	}
	return analysis__feed(tr->an, h);
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

static void capture_process(struct trace *tr)
{
	struct capture_proc p = { .pid = tr->tgt.pid, .start_ticks = tr->tgt.start_ticks };
	char comm[16], exe[4096];
	char **argv = NULL;
	int err;

	if (!tr->cap || tr->cap_err)
		return;
	p.start_realtime_ns = process__start_realtime_ns(p.start_ticks);
	process__comm(p.pid, comm, sizeof(comm));
	p.comm = comm;
	if (tr->run_mode) {
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
 * Names of the tracker's call sites, for a report without the binaries. A site is named
 * once, when its address lies in a known mapping (a library mapped a moment ago may not be
 * scanned yet); at the end every site is named as the live report names it. Reading names
 * from the symbolizer's cache makes them the very strings the live report prints.
 */
static void capture_names(struct trace *tr, bool final)
{
	const struct tracker *t = tr->an->t;
	bool all_named = true;
	size_t i;
	int err;

	if (!tr->cap || tr->cap_err)
		return;
	for (i = tr->cap_named; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];
		const struct sym_info *si;

		if (s->caller && !capture__has_symbol(tr->cap, s->pid, s->caller)) {
			si = symbolizer__info(tr->sym, s->pid, s->caller);
			if (!si) {
				capture_failed(tr, -ENOMEM);
				return;
			}
			if (!si->module && !final) {
				all_named = false;
				continue;
			}
			err = capture__add_symbol(tr->cap, s->pid, s->caller, si);
			if (err) {
				capture_failed(tr, err);
				return;
			}
		}
		if (all_named)
			tr->cap_named = i + 1;
	}
}

static void emit_proc(struct trace *tr, enum gl_proc_event ev, int status)
{
	struct gl_proc_rec r = {
		.hdr = { .size = sizeof(r), .kind = GL_REC_PROC, .pid = tr->tgt.pid,
			 .tid = tr->tgt.pid, .ts_ns = now_ns() },
		.event = ev,
		.status = status,
		.start_ticks = tr->tgt.start_ticks,
	};

	if (ev == GL_PROC_ATTACH) {
		if (tr->run_mode) {
			const char *slash = strrchr(tr->child.exe, '/');

			/* comm is the first 15 bytes of the executable's name, as the kernel
			 * sets it at exec */
			const char *name = slash ? slash + 1 : tr->child.exe;

			memcpy(r.comm, name, strnlen(name, sizeof(r.comm) - 1));
		} else {
			process__comm(tr->tgt.pid, r.comm, sizeof(r.comm));
		}
	}
	on_record(tr, &r.hdr);
}

/* BPF keeps cumulative loss counters per pid; forward them when they change. */
static void emit_loss(struct trace *tr)
{
	struct gl_loss_rec r = {
		.hdr = { .size = sizeof(r), .kind = GL_REC_LOSS, .pid = tr->tgt.pid,
			 .tid = tr->tgt.pid, .ts_ns = now_ns() },
	};
	__u32 key = tr->tgt.pid;

	if (bpf_map__lookup_elem(tr->skel->maps.pid_loss, &key, sizeof(key), r.counts,
				 sizeof(r.counts), 0))
		return;
	if (!memcmp(r.counts, tr->tgt.loss, sizeof(r.counts)))
		return;
	memcpy(tr->tgt.loss, r.counts, sizeof(r.counts));
	on_record(tr, &r.hdr);
}

static void emit_tick(struct trace *tr)
{
	struct gl_hdr h = { .size = sizeof(h), .kind = GL_REC_TICK, .ts_ns = now_ns() };

	on_record(tr, &h);
}

static int bpf_open_load(struct trace *tr)
{
	struct gpuleak_bpf *skel;
	unsigned int i;
	int err;

	skel = gpuleak_bpf__open();
	if (!skel) {
		err = -errno;
		pr_err("opening the BPF object failed: %s\n", strerror(-err));
		return err;
	}
	for (i = 0; i < cat_nr_apis; i++)
		skel->rodata->specs[cat_apis[i].api] = cat_apis[i].spec;
	err = bpf_map__set_max_entries(skel->maps.events, tr->o->ringbuf_bytes);
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
		tr->markers[tr->nr_markers++] = (struct marker){ o->a.step_file, o->a.step_sym,
								 GL_API_MARKER_STEP, false };
	if (o->a.req_file) {
		tr->markers[tr->nr_markers++] = (struct marker){ o->a.req_file, o->a.req_begin,
								 GL_API_MARKER_REQ_BEGIN, false };
		tr->markers[tr->nr_markers++] = (struct marker){ o->a.req_file, o->a.req_end,
								 GL_API_MARKER_REQ_END, false };
	}
}

/*
 * Put the step/request markers on their functions: FILE is a path, or the basename of an
 * object the target maps (found once it is mapped). Returns the markers still unattached.
 */
static int attach_markers(struct trace *tr, const struct proc_maps *m)
{
	int i, left = 0;

	for (i = 0; i < tr->nr_markers; i++) {
		struct marker *mk = &tr->markers[i];
		int err;

		if (mk->attached)
			continue;
		err = attach__marker(tr->att, tr->tgt.pid, m, mk->file, mk->sym, mk->api);
		if (!err) {
			mk->attached = true;
			fprintf(stderr, "gpuleak: %s marker on %s in %s\n",
				mk->api == GL_API_MARKER_STEP ? "step" :
				mk->api == GL_API_MARKER_REQ_BEGIN ? "request-begin" : "request-end",
				mk->sym, mk->file);
		} else if (err != -ENOENT) {
			pr_err("cannot put a marker on %s in %s: %s\n", mk->sym, mk->file,
			       strerror(-err));
			mk->attached = true;	/* said once; do not retry */
		} else {
			left++;
		}
	}
	return left;
}

static void emit_devmem(struct trace *tr)
{
	struct gl_devmem_rec d[16];
	int i, n = nvml__snapshot(tr->tgt.pid, d, 16);

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

/* Look at the target's mappings again and attach to anything new. */
static int rescan(struct trace *tr)
{
	struct proc_maps *m = NULL;
	int err, nr_new = 0;

	tr->rescan_pending = false;
	tr->tgt.last_rescan_ns = now_ns();
	err = proc_maps__load(tr->tgt.pid, &m);
	if (err)
		goto out;
	symbolizer__add_maps(tr->sym, m);
	capture_maps(tr, m);
	err = attach__scan(tr->att, m, &nr_new);
	attach_markers(tr, m);
	if (!tr->has_rendezvous)
		tr->has_rendezvous = has_rendezvous_probe(tr, m);
	if (!tr->tgt.has_lib && attach__has_required(tr->att, tr->tgt.pid)) {
		tr->tgt.has_lib = true;
		fprintf(stderr, "gpuleak: tracing pid %d: %zu probes in %zu objects\n", tr->tgt.pid,
			attach__nr_probes(tr->att), attach__nr_objects(tr->att, tr->tgt.pid));
	}
out:
	proc_maps__free(m);
	return err == -ESRCH ? 0 : err;
}

static int start_attach_mode(struct trace *tr)
{
	struct proc_maps *m = NULL;
	pid_t pid = tr->o->pid;
	uint64_t t0;
	int err, nr_new;

	tr->tgt.pid = pid;
	err = process__start_ticks(pid, &tr->tgt.start_ticks);
	if (err) {
		pr_err("no such process: %d\n", pid);
		return err;
	}
	tr->tgt.pidfd = process__pidfd(pid);
	if (tr->tgt.pidfd < 0) {
		err = tr->tgt.pidfd;
		pr_err("cannot watch pid %d: %s\n", pid, strerror(-err));
		return err;
	}
	t0 = now_ns();
	err = proc_maps__load(pid, &m);
	if (err) {
		pr_err("cannot read /proc/%d/maps: %s\n", pid, strerror(-err));
		return err;
	}
	emit_proc(tr, GL_PROC_ATTACH, 0);
	capture_process(tr);
	symbolizer__add_maps(tr->sym, m);
	capture_maps(tr, m);
	err = attach__scan(tr->att, m, &nr_new);
	if (err)
		goto cleanup;
	/* What `make bench` reports as attach time: maps, ELF scans, links. */
	pr_info("pid %d: attach took %.1f ms (%zu probes in %zu objects)\n", pid,
		(now_ns() - t0) / 1e6, attach__nr_probes(tr->att), attach__nr_objects(tr->att, pid));
	tr->has_rendezvous = has_rendezvous_probe(tr, m);
	tr->tgt.last_rescan_ns = now_ns();
	if (attach_markers(tr, m))
		fprintf(stderr, "gpuleak: a step/request marker's object is not mapped yet; "
			"it is attached when it is\n");
	if (tr->o->a.steps.source == STEP_NVTX && !has_site(tr, m, CAT_NVTX, -1))
		fprintf(stderr, "gpuleak: pid %d has no NVTX entry points to probe: NVTX v3 is "
			"header-only and reaches a tool only through NVTX_INJECTION64_PATH, which "
			"gpuleak sets in run mode; steps will not advance\n", pid);
	emit_devmem(tr);
	if (attach__has_required(tr->att, pid)) {
		tr->tgt.has_lib = true;
		fprintf(stderr, "gpuleak: tracing pid %d: %zu probes in %zu objects\n", pid,
			attach__nr_probes(tr->att), attach__nr_objects(tr->att, pid));
	} else if (tr->o->wait_for_lib) {
		fprintf(stderr, "gpuleak: pid %d maps no GPU library yet; waiting for it to "
			"load one\n", pid);
	} else {
		pr_err("pid %d maps no GPU library (no cudaMalloc, wgpuDeviceCreateBuffer, ... in "
		       "any object); looked in:\n", pid);
		attach__print_objects(tr->att, pid, m, stderr);
		fprintf(stderr, "gpuleak: if it loads one later (PyTorch loads CUDA at first use), "
			"run with --wait\n");
		err = -ENOENT;
	}
cleanup:
	proc_maps__free(m);
	return err;
}

/* libgpuleak_nvtx.so: next to gpuleak, in its build tree, or installed beside it. */
static int nvtx_inject_path(char *buf, size_t len)
{
	static const char *const rel[] = { "libgpuleak_nvtx.so", ".output/libgpuleak_nvtx.so",
					   "../lib/gpuleak/libgpuleak_nvtx.so" };
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
	char *env[2] = { NULL, NULL };
	__u8 one = 1;
	__u32 key;
	int err;
	struct module *mod;

	/* NVTX v3 reaches a tool only through its injection variable: point it at ours. */
	if (tr->o->a.steps.source == STEP_NVTX) {
		char path[4096];

		if (nvtx_inject_path(path, sizeof(path))) {
			pr_err("--step nvtx: needs libgpuleak_nvtx.so next to gpuleak (build it with "
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
	tr->tgt.pid = tr->child.pid;
	tr->tgt.held = true;
	key = tr->child.pid;
	err = bpf_map__update_elem(tr->skel->maps.held, &key, sizeof(key), &one, sizeof(one), 0);
	if (err) {
		pr_err("cannot register pid %d for holding: %s\n", key, strerror(-err));
		return err;
	}
	/*
	 * Before exec the child maps nothing of its own. Probes go on the executable (static
	 * cudart) and on its dynamic linker, by path: uprobes are keyed by inode, so they take
	 * effect when exec maps the files. The linker's rendezvous then stops the child each
	 * time libraries are mapped, until we have attached to them.
	 */
	err = attach__path(tr->att, tr->child.pid, tr->child.exe);
	if (err)
		return err;
	mod = modules__get_path(tr->mods, tr->child.exe);
	if (mod && mod->elf && elf_obj__interp(mod->elf)) {
		err = attach__path(tr->att, tr->child.pid, elf_obj__interp(mod->elf));
		if (err)
			return err;
		tr->has_rendezvous = true;
	}
	tr->tgt.has_lib = attach__has_required(tr->att, tr->child.pid);
	attach_markers(tr, NULL);
	tr->tgt.pidfd = process__pidfd(tr->child.pid);
	if (tr->tgt.pidfd < 0)
		return tr->tgt.pidfd;
	emit_proc(tr, GL_PROC_ATTACH, 0);
	err = launch__release(&tr->child);
	if (err) {
		pr_err("cannot run %s: %s\n", tr->o->argv[0], strerror(-err));
		tr->tgt.gone = true;
		return err;
	}
	process__start_ticks(tr->child.pid, &tr->tgt.start_ticks);
	emit_devmem(tr);
	capture_process(tr);
	return 0;
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

	if (read(tr->sigfd, &si, sizeof(si)) != sizeof(si))
		return false;
	/* In run mode Ctrl-C reached the child too: trace its shutdown (its frees) unless
	 * asked twice. */
	if (tr->run_mode && si.ssi_signo == SIGINT && !tr->tgt.gone && ++tr->sigints == 1) {
		fprintf(stderr, "gpuleak: waiting for pid %d to exit (Ctrl-C again to stop now)\n",
			tr->tgt.pid);
		return false;
	}
	return true;
}

static void target_exited(struct trace *tr)
{
	int status = -1, ws;

	if (tr->run_mode && waitpid(tr->tgt.pid, &ws, WNOHANG) == tr->tgt.pid)
		status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	tr->tgt.gone = true;
	tr->tgt.status = status;
}

static int loop(struct trace *tr)
{
	uint64_t start = now_ns(), next_interval, deadline;
	int err = 0;

	next_interval = tr->o->interval_ns ? start + tr->o->interval_ns : UINT64_MAX;
	deadline = tr->o->duration_ns ? start + tr->o->duration_ns : UINT64_MAX;
	while (!tr->tgt.gone) {
		struct pollfd fds[3] = {
			{ .fd = ringbuf__fd(tr->rb), .events = POLLIN },
			{ .fd = tr->tgt.pidfd, .events = POLLIN },
			{ .fd = tr->sigfd, .events = POLLIN },
		};
		uint64_t now = now_ns(), wait_ns = POLL_MS * 1000000ULL;
		bool stop = false, resume;
		int64_t n;

		if (next_interval - now < wait_ns && next_interval > now)
			wait_ns = next_interval - now;
		if (deadline > now && deadline - now < wait_ns)
			wait_ns = deadline - now;
		if (poll(fds, 3, (int)(wait_ns / 1000000)) < 0 && errno != EINTR)
			return -errno;
		n = ringbuf__drain(tr->rb);
		if (n < 0)
			return (int)n;
		if (fds[2].revents & POLLIN)
			stop = handle_signal(tr);
		if (fds[1].revents & POLLIN) {
			/* Everything the target did happened before its exit: drain it all. */
			n = ringbuf__drain(tr->rb);
			if (n < 0)
				return (int)n;
			target_exited(tr);
			break;
		}
		now = now_ns();
		/* New callbacks first: the target may be stopped for both. */
		resume = tr->nr_code && attach_code(tr);
		if (tr->rescan_pending ||
		    (!tr->has_rendezvous && now - tr->tgt.last_rescan_ns >= RESCAN_NS)) {
			/* A rendezvous stop in run mode (rescan_pending) waits on us too. */
			resume |= tr->rescan_pending && tr->tgt.held;
			err = rescan(tr);
			if (err)
				pr_warn("attaching to newly mapped objects of pid %d: %s\n", tr->tgt.pid,
					strerror(-err));
		}
		/* Resume a stopped target whatever happened: never leave it stopped. */
		if (resume)
			kill(tr->tgt.pid, SIGCONT);
		emit_tick(tr);
		capture_names(tr, false);
		if (now >= next_interval) {
			emit_loss(tr);
			if (!tr->o->a.steps_given)
				report__interval(&tr->rep, now);
			next_interval += tr->o->interval_ns;
			if (next_interval <= now)
				next_interval = now + tr->o->interval_ns;
		}
		if (stop || now >= deadline)
			break;
	}
	return 0;
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
	fprintf(stderr, "gpuleak: wrote %s: %" PRIu64 " records in %u blocks, %" PRIu64
		" bytes (%.1f bytes/record)\n", capture__path(tr->cap), st.records, st.blocks,
		st.bytes, st.records ? (double)st.bytes / st.records : 0.0);
}

static void finish(struct trace *tr)
{
	uint64_t t0 = now_ns();
	char *extra = NULL;
	size_t extra_len;
	FILE *f = tr->json ? open_memstream(&extra, &extra_len) : NULL;

	/* Where the probes sat, for the verdict: known only while attached. */
	if (f) {
		attach__placement_json(tr->att, tr->tgt.pid, f);
		if (fclose(f)) {
			free(extra);
			extra = NULL;
		}
	}
	/* Detach first, then drain what was submitted before the links went away. */
	attach__free(tr->att);
	tr->att = NULL;
	pr_info("detach took %.1f ms\n", (now_ns() - t0) / 1e6);
	tr->nr_code = 0;
	if (tr->tgt.held && !tr->tgt.gone)
		kill(tr->tgt.pid, SIGCONT);
	ringbuf__drain(tr->rb);
	emit_loss(tr);
	if (tr->tgt.gone)
		emit_proc(tr, GL_PROC_EXIT, tr->tgt.status);
	else
		emit_proc(tr, GL_PROC_DETACH, 0);
	capture_names(tr, true);
	tr->rep.verdict_extra = extra;
	report__final(&tr->rep, now_ns());
	tr->rep.verdict_extra = NULL;
	free(extra);
	if (ringbuf__bad(tr->rb))
		pr_warn("%" PRIu64 " ring buffer records had an unexpected size (mismatched BPF "
			"object?)\n", ringbuf__bad(tr->rb));
	finish_capture(tr);
}

int trace__run(const struct trace_opts *o)
{
	struct trace tr = { .o = o, .sigfd = -1, .tgt = { .pidfd = -1, .status = -1 } };
	bool traced = false;
	int err;

	tr.child.pid = -1;
	libbpf_set_print(libbpf_print);
	err = process__check_privileges();
	if (err) {
		pr_err("loading BPF programs and attaching uprobes needs root, or CAP_BPF and "
		       "CAP_PERFMON: run it with sudo\n");
		return 1;
	}
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
		err = attach__new(tr.skel->progs.gl_enter, tr.skel->progs.gl_exit, tr.mods, &tr.att);
	if (!err)
		err = symbolizer__new(tr.mods, &tr.sym);
	if (!err)
		err = analysis__new(&o->a, symbolizer__site_frames, tr.sym, &tr.an);
	if (!err)
		err = ringbuf__new(bpf_map__fd(tr.skel->maps.events), on_record, &tr, &tr.rb);
	if (!err)
		ringbuf__set_prefetch(tr.rb, on_prefetch);
	if (err) {
		pr_err("setting up: %s\n", strerror(-err));
		goto cleanup;
	}
	tr.rep = (struct report){ .t = tr.an->t, .tl = tr.an->tl, .sym = tr.sym, .out = stdout,
				  .json = tr.json, .top = o->top, .t0_ns = now_ns(),
				  .gate = o->a.gate };
	if (tr.cap)
		tr.rep.t0_ns = capture__t0_ns(tr.cap);
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
cleanup:
	if (tr.child.pid > 0 && tr.child.go_fd > 0)
		launch__abort(&tr.child);
	attach__free(tr.att);
	ringbuf__free(tr.rb);
	analysis__free(tr.an);
	free(tr.code);
	symbolizer__free(tr.sym);
	modules__free(tr.mods);
	gpuleak_bpf__destroy(tr.skel);
	if (tr.tgt.pidfd >= 0)
		close(tr.tgt.pidfd);
	if (tr.sigfd >= 0)
		close(tr.sigfd);
	if (tr.json)
		fclose(tr.json);
	/* A capture of a session that never started holds nothing worth keeping. */
	if (tr.cap && !traced)
		unlink(o->capture_path);
	capture__free(tr.cap);
	if (err || tr.cap_err)
		return TRACE_ERROR;
	return tr.rep.gate.failed ? TRACE_LEAK : TRACE_OK;
}
