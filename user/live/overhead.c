// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tracing's cost per process, live (overhead.h).
 *
 * Calibration: a trap's cost depends on the kernel and its virtualization far more than on
 * gpuleak (a uprobe pair costs ~1 us on bare metal, ~12 us on some VMs), so it is measured
 * here, before any target, the way `make bench` measures its floor: empty programs linked
 * to gl_calib_fn below, a bounded number of calls timed without them, with an entry probe,
 * with entry and return probes, and with a probe on the nop inside it (a USDT's trap). Each
 * figure is the fastest of a few rounds (a shared CPU only ever adds), less the empty
 * program's own run time, which the run-time statistics count apart.
 *
 * Attribution: the statistics give each program's total run time, not per process: their
 * average per run, times a process's traps (each trap runs one program), is its BPF time.
 * The scheduler tracepoints run for every process of the machine and are left out.
 *
 * The statistics are on only for the first eighth of each sample's interval (and from the
 * start until an average is known): while on, the kernel reads its clock twice around every
 * BPF program run of the machine (~40 ns a run on the project's VM, 3 runs a traced
 * allocate/free pair), which is tracing's cost too. The average of that window, at the level
 * the interval runs at, prices the interval's traps.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "engine/analysis.h"
#include "engine/cost.h"
#include "tracker/tracker.h"
#include "lib/log.h"
#include "live/bpf_setup.h"
#include "live/links.h"
#include "live/feed.h"
#include "live/live.h"
#include "live/overhead.h"
#include "live/targets.h"

/*
 * The calibration's targets, alike: a frame and a nop. base is never probed, entry has an
 * entry probe, pair an entry and a return probe, nop a probe on its nop (as a USDT).
 */
void gl_calib_base(void);
void gl_calib_entry(void);
void gl_calib_pair(void);
void gl_calib_usdt(void);
extern const char gl_calib_nop[];
#if defined(__x86_64__)
#define CALIB_FN(name, inner)                                                                      \
	".globl " name "\n.hidden " name "\n.type " name ", @function\n" name ":\n"                \
	"	push %rbp\n	mov %rsp, %rbp\n" inner "	nop\n	pop %rbp\n	ret\n"                  \
	".size " name ", .-" name "\n"
#elif defined(__aarch64__)
#define CALIB_FN(name, inner)                                                                      \
	".globl " name "\n.hidden " name "\n.type " name ", %function\n" name ":\n"                \
	"	stp x29, x30, [sp, #-16]!\n	mov x29, sp\n" inner "	nop\n"                      \
	"	ldp x29, x30, [sp], #16\n	ret\n"                                                         \
	".size " name ", .-" name "\n"
#else
#error "overhead.c: no calibration targets for this architecture"
#endif
__asm__(".text\n" CALIB_FN("gl_calib_base", "") CALIB_FN("gl_calib_entry", "")
	    CALIB_FN("gl_calib_pair", "")
		CALIB_FN("gl_calib_usdt",
			 ".globl gl_calib_nop\n.hidden gl_calib_nop\ngl_calib_nop:\n"));

/* Calls per round, rounds per figure: 4 x 6 x 32 calls, ~770 traps (~5 ms at 6 us). */
#define CAL_CALLS  32
#define CAL_ROUNDS 6
/* Sample about this often (and at each --interval table); with a budget, 4 times as often:
 * each of its steps waits for a sample. */
#define SAMPLE_NS	 1000000000ULL
#define BUDGET_SAMPLE_NS 250000000ULL
/* BPF statistics on for this part of each sample's interval (STATS_SHARE = 8: an eighth). */
#define STATS_SHARE 8
/* A window with less CPU than this says nothing of a rate. */
#define MIN_WINDOW_CPU_NS 10000000ULL
#define MAX_PROGS	  8
/* entry, pair's entry, nop, pair's return */
#define CAL_LINKS 4

struct ovh_proc {
	pid_t pid;
	uint64_t since_ns;
	uint64_t cpu0_ns;		  /* its CPU time when tracked */
	uint64_t cpu_ns;		  /* since then, the latest read */
	uint64_t bpf_ns;		  /* charged so far */
	uint64_t traps;			  /* at the last sample */
	uint64_t win_cost_ns, win_cpu_ns; /* at the last budget decision */
	uint64_t win_traps;
	uint32_t level;
	uint64_t level_ns[GL_LEVEL_MAX];
	uint64_t level_first_ns[GL_LEVEL_MAX];
	uint64_t level_since_ns;
	uint64_t steps;
	/* cost and CPU of each level, and both at the last sample (charged to the level then) */
	uint64_t level_cost_ns[GL_LEVEL_MAX], level_cpu_ns[GL_LEVEL_MAX];
	uint64_t last_cost_ns, last_cpu_ns;
	/* ns per trap (its BPF time included) last seen at each level: what stepping back up
	 * would cost again */
	double cost_per_trap[GL_LEVEL_MAX];
	bool said_floor; /* over budget with nothing left to give up: said once */
	bool python;	 /* BPF walks its Python frames (an interpreter was found) */
};

struct overhead {
	struct overhead_opts o;
	struct bpf_setup *b;
	bool stats;   /* the statistics can be turned on (privilege, kernel) */
	int stats_fd; /* -1: off now */
	uint64_t stats_on_ns;
	int progs[MAX_PROGS];
	size_t nr_progs;
	/* the programs' run time and runs at the last sample, and their average per run then
	 * (0: none measured yet) */
	uint64_t run_last_ns, run_last_cnt;
	double ns_per_run;
	uint32_t trap_ns[GL_TRAP_MAX];
	int level_fd;
	struct bpf_link *cal_links[CAL_LINKS];
	/* Turning the statistics on and calibrating, on a thread of their own while the probes
	 * attach: what they set is read only once it is joined (settle). */
	pthread_t cal_thread;
	bool cal_running;
	struct ovh_proc *procs;
	size_t nr_procs, cap_procs;
	uint64_t last_sample_ns;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The file and offset of an address of ours, as a uprobe names it. */
static int self_offset(const void *addr, char *path, size_t len, uint64_t *off)
{
	uintptr_t a = (uintptr_t)addr;
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end, pgoff;
		int pos = 0;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &start, &end, &pgoff, &pos) < 3 ||
		    !pos)
			continue;
		if (a < start || a >= end || line[pos] != '/')
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(path, len, "%s", line + pos);
		*off = a - start + pgoff;
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

static struct bpf_link *link_one(struct bpf_program *prog, const char *path, uint64_t off, bool ret,
				 bool multi)
{
	if (multi) {
		unsigned long o = off;
		LIBBPF_OPTS(bpf_uprobe_multi_opts, mo, .offsets = &o, .cnt = 1, .retprobe = ret);

		return bpf_program__attach_uprobe_multi(prog, getpid(), path, NULL, &mo);
	}
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = ret);
	return bpf_program__attach_uprobe_opts(prog, getpid(), path, off, &uo);
}

/* The fastest round of CAL_CALLS calls of fn, ns per call. */
static double time_calls(void (*fn)(void))
{
	double best = 0;
	int r, i;

	for (r = 0; r < CAL_ROUNDS; r++) {
		uint64_t t0 = mono_ns(), dt;

		for (i = 0; i < CAL_CALLS; i++)
			fn();
		dt = mono_ns() - t0;
		if (!r || (double)dt / CAL_CALLS < best)
			best = (double)dt / CAL_CALLS;
	}
	return best;
}

/* One program's average run time per run so far (the statistics), ns. */
static double prog_avg_ns(int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (fd < 0 || bpf_prog_get_info_by_fd(fd, &info, &len) || !info.run_cnt)
		return 0;
	return (double)info.run_time_ns / (double)info.run_cnt;
}

static uint32_t clamp_ns(double ns)
{
	return ns <= 0 ? 0 : ns > 1e9 ? 1000000000U : (uint32_t)(ns + 0.5);
}

/*
 * Links stay until the session ends (overhead__free): unlinking waits for the kernel's
 * grace periods, tens of milliseconds at start for nothing; the functions are never called
 * again.
 */
static int calibrate(struct overhead *o)
{
	struct bpf_program *en = bpf_setup__calib_prog(o->b, false);
	struct bpf_program *ex = bpf_setup__calib_prog(o->b, true);
	bool multi = bpf_setup__uprobe_multi(o->b);
	const void *at[] = {(const void *)gl_calib_entry, (const void *)gl_calib_pair, gl_calib_nop,
			    (const void *)gl_calib_pair};
	double base, entry, pair, usdt, prog_ns;
	uint64_t off = 0, t0 = mono_ns();
	char path[4096];
	size_t i;
	int err;

	for (i = 0; i < CAL_LINKS; i++) {
		err = self_offset(at[i], path, sizeof(path), &off);
		if (err)
			return err;
		o->cal_links[i] = link_one(i == 3 ? ex : en, path, off, i == 3, multi);
		if (!o->cal_links[i])
			return -errno;
	}
	base = time_calls(gl_calib_base);
	entry = time_calls(gl_calib_entry);
	pair = time_calls(gl_calib_pair);
	usdt = time_calls(gl_calib_usdt);
	/* The empty program's own run: the statistics count it with the BPF time. */
	prog_ns = o->stats_fd >= 0 ? prog_avg_ns(bpf_program__fd(en)) : 0;
	o->trap_ns[GL_TRAP_ENTRY] = clamp_ns(entry - base - prog_ns);
	o->trap_ns[GL_TRAP_RETURN] = clamp_ns(pair - entry - prog_ns);
	o->trap_ns[GL_TRAP_USDT] = clamp_ns(usdt - base - prog_ns);
	pr_info("trap costs on this machine: entry probe %" PRIu32 " ns, return probe %" PRIu32
		" ns, USDT probe %" PRIu32 " ns (calibrated in %.1f ms on %s links, %d calls "
		"each)\n",
		o->trap_ns[GL_TRAP_ENTRY], o->trap_ns[GL_TRAP_RETURN], o->trap_ns[GL_TRAP_USDT],
		(double)(mono_ns() - t0) / 1e6, multi ? "uprobe_multi" : "classic uprobe",
		CAL_CALLS * CAL_ROUNDS);
	return 0;
}

/*
 * Both patch or trap in the kernel for milliseconds each on a VM (the statistics' static key
 * rewrites kernel text, ~4 ms here; calibration is ~800 traps, ~4 ms): off the start's path,
 * while the probes attach on the other CPU. Calibration keeps the fastest of its rounds, so
 * that work beside it does not raise the figure.
 */
static void *settle_in(void *arg)
{
	struct overhead *o = arg;
	int err;

	/* On while the fd is open: the programs' run time counts only while tracing. */
	o->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	o->stats = o->stats_fd >= 0;
	o->stats_on_ns = mono_ns();
	if (o->stats_fd < 0)
		pr_warn("no BPF run-time statistics (%s): tracing's cost is its traps alone\n",
			strerror(errno));
	err = calibrate(o);
	if (err)
		pr_warn("calibrating the trap cost failed (%s): tracing's cost is its BPF time "
			"alone\n",
			strerror(-err));
	return NULL;
}

/* What settle_in sets is this thread's from here on. */
static void settle(struct overhead *o)
{
	if (!o->cal_running)
		return;
	pthread_join(o->cal_thread, NULL);
	o->cal_running = false;
}

int overhead__new(struct bpf_setup *b, const struct overhead_opts *opts, struct overhead **out)
{
	struct overhead *o = calloc(1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	o->o = *opts;
	o->b = b;
	o->stats_fd = -1;
	o->level_fd = bpf_setup__level_fd(b);
	o->nr_progs = bpf_setup__traced_progs(b, o->progs, MAX_PROGS);
	/* No thread (out of resources): done here, as before any target. */
	o->cal_running = !pthread_create(&o->cal_thread, NULL, settle_in, o);
	if (!o->cal_running)
		settle_in(o);
	*out = o;
	return 0;
}

void overhead__unlink(struct overhead *o)
{
	size_t i;

	if (!o)
		return;
	settle(o);
	links__destroy(o->cal_links, CAL_LINKS);
	for (i = 0; i < CAL_LINKS; i++)
		o->cal_links[i] = NULL;
	/* Turning the statistics off patches the kernel's text too: a wait of its own. */
	if (o->stats_fd >= 0)
		close(o->stats_fd);
	o->stats_fd = -1;
}

void overhead__free(struct overhead *o)
{
	if (!o)
		return;
	overhead__unlink(o);
	free(o->procs);
	free(o);
}

const uint32_t *overhead__trap_ns(struct overhead *o)
{
	settle(o);
	return o->trap_ns;
}

static struct ovh_proc *find(struct overhead *o, pid_t pid)
{
	size_t i;

	for (i = 0; i < o->nr_procs; i++)
		if (o->procs[i].pid == pid)
			return &o->procs[i];
	return NULL;
}

/* pid's CPU time, ns: /proc/PID/stat's utime + stime (dead threads included, in ticks),
 * or its live threads' exact run time when that says more. 0: not readable. */
static uint64_t cpu_ns(pid_t pid)
{
	char p[64], buf[1024], *s;
	unsigned long long ut = 0, st = 0, total = 0, run;
	uint64_t ticks_ns = 0;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	f = fopen(p, "re");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = 0;
		fclose(f);
		s = strrchr(buf, ')');
		if (s &&
		    sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
			   &st) == 2 &&
		    hz > 0)
			ticks_ns = (uint64_t)(ut + st) * (1000000000ULL / (uint64_t)hz);
	}
	snprintf(p, sizeof(p), "/proc/%d/schedstat", pid);
	f = fopen(p, "re");
	if (f) {
		if (fscanf(f, "%llu", &run) == 1)
			total = run;
		fclose(f);
	}
	return total > ticks_ns ? total : ticks_ns;
}

void overhead__track(struct overhead *o, pid_t pid, uint64_t ts_ns)
{
	struct ovh_proc *p;

	if (!o || find(o, pid))
		return;
	if (o->nr_procs == o->cap_procs) {
		size_t cap = o->cap_procs ? 2 * o->cap_procs : 8;
		struct ovh_proc *n = realloc(o->procs, cap * sizeof(*n));

		if (!n)
			return;
		o->procs = n;
		o->cap_procs = cap;
	}
	p = &o->procs[o->nr_procs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->since_ns = ts_ns;
	p->cpu0_ns = cpu_ns(pid);
	p->level_since_ns = ts_ns;
	p->level_first_ns[GL_LEVEL_FULL] = ts_ns;
}

void overhead__forget(struct overhead *o, pid_t pid)
{
	struct ovh_proc *p = o ? find(o, pid) : NULL;

	if (p)
		*p = o->procs[--o->nr_procs];
}

/* The traced programs' run time and runs, all together, while the statistics were on. */
static void bpf_totals(const struct overhead *o, uint64_t *ns, uint64_t *cnt)
{
	size_t i;

	*ns = 0;
	*cnt = 0;
	for (i = 0; i < o->nr_progs; i++) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (!bpf_prog_get_info_by_fd(o->progs[i], &info, &len)) {
			*ns += info.run_time_ns;
			*cnt += info.run_cnt;
		}
	}
}

/* The statistics off once their window is over and an average is known. */
static void stats_pause(struct overhead *o, uint64_t now)
{
	uint64_t period = o->o.budget > 0 ? BUDGET_SAMPLE_NS : SAMPLE_NS;

	if (o->stats_fd >= 0 && o->ns_per_run > 0 && now - o->stats_on_ns >= period / STATS_SHARE) {
		close(o->stats_fd);
		o->stats_fd = -1;
	}
}

/* Back on at a sample: the interval that starts measures itself at its own level. */
static void stats_resume(struct overhead *o, uint64_t now)
{
	if (!o->stats || o->stats_fd >= 0)
		return;
	o->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	o->stats_on_ns = now;
}

static uint64_t traps_of(const struct tproc *tp, uint64_t *cost_ns, const uint32_t *trap_ns)
{
	uint64_t n = 0;
	unsigned int k;

	*cost_ns = 0;
	for (k = 0; k < GL_TRAP_MAX; k++) {
		n += tp->traps[k];
		*cost_ns += tp->traps[k] * trap_ns[k];
	}
	return n;
}

/* Whether level gives up something this process has. */
static bool level_usable(const struct overhead *o, const struct ovh_proc *p, unsigned int level)
{
	switch (level) {
	case GL_LEVEL_NO_PYTHON:
		return o->o.python && p->python;
	case GL_LEVEL_NO_DWARF:
		return o->o.dwarf;
	case GL_LEVEL_SITES_ONLY:
		return o->o.stacks;
	default:
		return true;
	}
}

static void set_level(struct overhead *o, struct ovh_proc *p, uint32_t level, uint64_t now)
{
	__u32 key = p->pid, val = level;

	if (o->level_fd >= 0 && bpf_map_update_elem(o->level_fd, &key, &val, BPF_ANY)) {
		pr_warn("pid %d: cannot set its tracing level: %s\n", p->pid, strerror(errno));
		return;
	}
	p->level_ns[p->level] += now - p->level_since_ns;
	p->level_since_ns = now;
	p->level = level;
	if (!p->level_first_ns[level])
		p->level_first_ns[level] = now;
	p->steps++;
}

/*
 * The budget, over the window since the last decision: above it, give up the next part;
 * below it with room to spare for what the level above would cost again at this window's
 * rate (its BPF time per trap when it last ran), take that part back.
 */
static void budget(struct overhead *o, struct ovh_proc *p, uint64_t cost_ns, uint64_t traps,
		   uint64_t now)
{
	uint64_t wcost = cost_ns - p->win_cost_ns, wcpu = p->cpu_ns - p->win_cpu_ns;
	uint64_t wtraps = traps - p->win_traps;
	double frac, t = (double)(now - p->since_ns) / 1e9;
	unsigned int next;

	if (wcpu < MIN_WINDOW_CPU_NS)
		return;
	/* At most all of it, as the verdict says: traps priced at their calibrated cost can
	 * come to more than a short window's CPU time. */
	frac = wcost < wcpu ? (double)wcost / (double)wcpu : 1.0;
	if (wtraps)
		p->cost_per_trap[p->level] = (double)wcost / (double)wtraps;
	p->win_cost_ns = cost_ns;
	p->win_cpu_ns = p->cpu_ns;
	p->win_traps = traps;
	if (frac > o->o.budget) {
		for (next = p->level + 1; next < GL_LEVEL_MAX && !level_usable(o, p, next); next++)
			;
		if (next >= GL_LEVEL_MAX) {
			if (!p->said_floor)
				pr_note("pid %d: tracing costs %.1f %% of its CPU, above "
					"--max-overhead "
					"%.1f %% with nothing left to give up (%.1f s): its traps "
					"alone are the floor of tracing every call\n",
					p->pid, 100 * frac, 100 * o->o.budget, t);
			p->said_floor = true;
			return;
		}
		set_level(o, p, next, now);
		pr_note("pid %d: tracing costs %.1f %% of its CPU, above --max-overhead %.1f %%: "
			"%s given up at %.1f s (level %s)\n",
			p->pid, 100 * frac, 100 * o->o.budget, cost__level_gives_up(next), t,
			cost__level_name(next));
		return;
	}
	if (!p->level)
		return;
	for (next = p->level - 1; next > 0 && !level_usable(o, p, next); next--)
		;
	/* What the window would have cost at the level above: its cost per trap then. */
	if (wtraps && p->cost_per_trap[next] > 0 &&
	    p->cost_per_trap[next] * (double)wtraps / (double)wcpu < 0.8 * o->o.budget) {
		unsigned int from = p->level;

		set_level(o, p, next, now);
		p->said_floor = false;
		pr_note("pid %d: tracing costs %.1f %% of its CPU, back under --max-overhead %.1f "
			"%%: %s taken back at %.1f s (level %s)\n",
			p->pid, 100 * frac, 100 * o->o.budget, cost__level_gives_up(from), t,
			cost__level_name(next));
	}
}

static void emit(struct overhead *o, struct live *l, const struct ovh_proc *p, uint64_t now)
{
	struct gl_cost_rec r = {
	    .hdr = {.size = sizeof(r),
		    .kind = GL_REC_COST,
		    .pid = (__u32)p->pid,
		    .tid = (__u32)p->pid,
		    .ts_ns = now},
	    .level = p->level,
	    .since_ns = p->since_ns,
	    .bpf_ns = p->bpf_ns,
	    .cpu_ns = p->cpu_ns,
	    .budget_ppm = (uint64_t)(o->o.budget * 1e6 + 0.5),
	    .steps = p->steps,
	};
	unsigned int k;

	for (k = 0; k < GL_TRAP_MAX; k++)
		r.trap_ns[k] = o->trap_ns[k];
	for (k = 0; k < GL_LEVEL_MAX; k++) {
		r.level_ns[k] = p->level_ns[k];
		r.level_first_ns[k] = p->level_first_ns[k];
		r.level_cost_ns[k] = p->level_cost_ns[k];
		r.level_cpu_ns[k] = p->level_cpu_ns[k];
	}
	r.level_ns[p->level] += now - p->level_since_ns;
	feed__record(l, &r.hdr);
}

/*
 * What of est ns of BPF run time (an interval's traps at the window's average run) to charge
 * p: no more than its CPU time leaves after its traps' cost, over the interval and since it
 * was first traced. A program runs in the process that trapped, so its run is that process's
 * CPU time; a larger average is not: the kernel's clock around a run also counts time the
 * hypervisor stole from the CPU, which a process's CPU time leaves out, and a window of few
 * runs in a calm spell (cold caches, one steal among fifty runs) would price the surge of
 * calls after it many times over. The interval's CPU time gets one tick of slack: /proc gives
 * a process with threads its CPU time in ticks.
 */
static uint64_t bpf_charge(const struct ovh_proc *p, double est, uint64_t trap_cost)
{
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t tick = hz > 0 ? 1000000000ULL / (uint64_t)hz : 10000000ULL;
	uint64_t used = trap_cost + p->bpf_ns, room, win_used, win_room;

	room = p->cpu_ns > used ? p->cpu_ns - used : 0;
	win_used = used > p->last_cost_ns ? used - p->last_cost_ns : 0;
	win_room = p->cpu_ns - p->last_cpu_ns + tick;
	win_room = win_room > win_used ? win_room - win_used : 0;
	if (room > win_room)
		room = win_room;
	return est <= 0 ? 0 : est < (double)room ? (uint64_t)est : room;
}

static void refresh_cpu(struct ovh_proc *p)
{
	uint64_t cpu = cpu_ns(p->pid);

	if (cpu > p->cpu0_ns && cpu - p->cpu0_ns > p->cpu_ns)
		p->cpu_ns = cpu - p->cpu0_ns;
}

void overhead__sample(struct overhead *o, struct live *l, uint64_t now, pid_t only,
		      enum ovh_when when)
{
	uint64_t run_ns, run_cnt;
	size_t i;

	if (!o)
		return;
	settle(o);
	/* Between samples, its CPU time: a process that exits and is reaped by its parent
	 * before gpuleak sees it go keeps the last read, at most a poll (50 ms) old. */
	if (when == OVH_DUE &&
	    now - o->last_sample_ns < (o->o.budget > 0 ? BUDGET_SAMPLE_NS : SAMPLE_NS)) {
		stats_pause(o, now);
		for (i = 0; i < o->nr_procs; i++)
			refresh_cpu(&o->procs[i]);
		return;
	}
	o->last_sample_ns = now;
	if (o->stats) {
		/* Counted only while on: the window's runs, whatever time it lasted. */
		bpf_totals(o, &run_ns, &run_cnt);
		if (run_cnt > o->run_last_cnt && run_ns >= o->run_last_ns)
			o->ns_per_run =
			    (double)(run_ns - o->run_last_ns) / (double)(run_cnt - o->run_last_cnt);
		o->run_last_ns = run_ns;
		o->run_last_cnt = run_cnt;
	}
	for (i = 0; i < o->nr_procs; i++) {
		struct ovh_proc *p = &o->procs[i];
		const struct tproc *tp = tracker__proc(l->an->t, p->pid);
		uint64_t trap_cost, n;

		if (!tp)
			continue;
		n = traps_of(tp, &trap_cost, o->trap_ns);
		refresh_cpu(p);
		/* The interval's traps, each a program run at the window's average. */
		if (n > p->traps)
			p->bpf_ns +=
			    bpf_charge(p, o->ns_per_run * (double)(n - p->traps), trap_cost);
		p->traps = n;
		/* What this sample's interval cost, at the level it ran at. */
		if (trap_cost + p->bpf_ns > p->last_cost_ns)
			p->level_cost_ns[p->level] += trap_cost + p->bpf_ns - p->last_cost_ns;
		p->level_cpu_ns[p->level] += p->cpu_ns - p->last_cpu_ns;
		p->last_cost_ns = trap_cost + p->bpf_ns;
		p->last_cpu_ns = p->cpu_ns;
		/* A step at a process's last sample would only be said, and never run. */
		if (o->o.budget > 0 && !(when == OVH_FINAL && (!only || only == p->pid))) {
			const struct target *t = targets__find(l->tgts, p->pid);

			p->python = t && t->py_runtime;
			budget(o, p, trap_cost + p->bpf_ns, n, now);
		}
		if (!only || only == p->pid)
			emit(o, l, p, now);
	}
	stats_resume(o, now);
}
