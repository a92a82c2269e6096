/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The BPF side of a session, seen from user space: the object opened, configured from the
 * catalog and the options, and loaded; the scheduler tracepoints; and the per-process tables
 * the programs consult (traced: follow its children; held: stop it at each ld.so
 * rendezvous) and fill (pid_loss, the stack maps, stats). The one file that knows the
 * skeleton: the rest of the session asks for what it needs by pid.
 */
#ifndef GPULEAK_LIVE_BPF_SETUP_H
#define GPULEAK_LIVE_BPF_SETUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "gpuleak.h"

struct bpf_program;
struct kernel_features;
struct bpf_setup;

/* --uprobe-links */
enum bpf_setup_links {
	BPF_SETUP_LINKS_AUTO,	 /* uprobe_multi where the kernel has it, else classic */
	BPF_SETUP_LINKS_MULTI,	 /* uprobe_multi, or fail */
	BPF_SETUP_LINKS_CLASSIC, /* one classic uprobe link per probe */
};

struct bpf_setup_opts {
	bool follow;		    /* --follow: forks and execs too, children inherit tracing */
	uint64_t ringbuf_bytes;	    /* a power of two */
	unsigned int stack_depth;   /* frames kept per allocation stack, 0: no stacks */
	unsigned int stack_entries; /* stacks each stack map holds */
	bool budget;		    /* --max-overhead: the programs read pid_level */
	bool oom_kill;		    /* gpuleak watch: the OOM killer's choices (mark_victim) */
	unsigned int python_depth;  /* Python frames kept per allocation, 0: none */
	/* the Python walk loaded when bpf_setup__python first configures a process, not now */
	bool python_lazy;
	unsigned int unwind_bytes; /* stack bytes copied per allocation to unwind, 0: none */
	bool unwind_adaptive;	   /* copied only where a walk met code without frame pointers */
	int links;		   /* enum bpf_setup_links */
	bool quiet;		   /* say nothing of what this kernel lacks (probes --kernel) */
	/* probes --kernel --verifier: every program's verifier statistics are kept, and a
	 * failed load still hands out the setup (to read them, then free it) */
	bool verifier_stats;
	int only_prog; /* with verifier_stats, > 0: load only program only_prog - 1 */
	/* the kernel's features when the caller has probed them already, else NULL */
	const struct kernel_features *kf;
	/* another build of bpf/gpuleak.bpf.c to load instead of the one built in, or NULL */
	const void *object;
	size_t object_size;
};

/* One program's verifier statistics (verifier_stats). */
struct bpf_setup_prog_stats {
	char name[64];
	bool loaded;	/* autoloaded in this configuration */
	bool tried;	/* the kernel was asked to load it */
	bool ok;	/* the verifier accepted it */
	bool too_large; /* refused for its combined stack size */
	int frames;	/* the main program and its subprograms (global ones, callbacks) */
	int combined;	/* bytes of stack its deepest chain of calls needs, -1: unknown */
	int insns;	/* instructions the verifier processed, -1: unknown */
};
#define BPF_SETUP_MAX_PROGS 16

/*
 * Whether data is an object `--bpf-object` can stand in for the built-in one: every variable
 * of its .rodata and .bss where the built-in skeleton writes it. 0, or -errno with why.
 */
int bpf_setup__check_object(const void *data, size_t size, char *why, size_t why_len);
/* Open, configure and load. 0 or -errno, said on stderr. */
int bpf_setup__new(const struct bpf_setup_opts *o, struct bpf_setup **out);
/* verifier_stats: the programs' statistics, in the object's order; how many. */
size_t bpf_setup__prog_stats(const struct bpf_setup *b, const struct bpf_setup_prog_stats **st);
/* What finding the kernel's features took of bpf_setup__new, and whether from the cache. */
uint64_t bpf_setup__features_ns(const struct bpf_setup *b, bool *cached);
/* What making the maps ahead of the load took of it (live/premake.h), on how many threads. */
uint64_t bpf_setup__maps_ns(const struct bpf_setup *b, size_t *threads);
/*
 * Whether the libbpf linked is older than major.minor: the build fetches 1.7, but LIBBPF_SRC
 * may name another, and what it cannot attach is said by the version it is.
 */
bool bpf_setup__libbpf_older(unsigned int major, unsigned int minor);
/* Whether uprobes attach as uprobe_multi links (else one classic link per probe). */
bool bpf_setup__uprobe_multi(const struct bpf_setup *b);
/* Detaches the tracepoints and unloads. Accepts NULL. */
void bpf_setup__free(struct bpf_setup *b);
/*
 * The scheduler tracepoints: exits of traced processes (their exit status, and the end of
 * their records in the ring buffer), the threads their calls make to do their work (NCCL's
 * group launch), and with --follow their forks and execs. 0 or -errno, said on stderr.
 */
int bpf_setup__attach_tracepoints(struct bpf_setup *b);
void bpf_setup__detach_tracepoints(struct bpf_setup *b);
/* Whether the OOM killer's choices of traced processes reach the ring buffer (oom_kill, and
 * a kernel whose mark_victim tracepoint names the task). */
bool bpf_setup__oom_kill(const struct bpf_setup *b);
/*
 * Whether a followed child stops itself at its first schedule (kernels before 6.13): stopped
 * later than its fork record says, so it is resumed only once seen stopped.
 */
bool bpf_setup__fork_hold_late(const struct bpf_setup *b);
/* Let go of pid's hold on itself, if it has not taken it yet (the initial pid namespace). */
void bpf_setup__fork_unhold(struct bpf_setup *b, pid_t pid);

/* The generic entry and return programs every uprobe runs (attach.c). */
struct bpf_program *bpf_setup__enter_prog(const struct bpf_setup *b);
struct bpf_program *bpf_setup__exit_prog(const struct bpf_setup *b);
/* The program every USDT probe runs (attach.c), and how many argument specs its links may
 * hold in all (libbpf's spec table: an attach past it fails with E2BIG). */
struct bpf_program *bpf_setup__usdt_prog(const struct bpf_setup *b);
#define BPF_SETUP_USDT_SPECS 4096
/* The ring buffer's map. */
/* --max-overhead's map: pid -> enum gl_cost_level the programs read (budget on only). */
int bpf_setup__level_fd(const struct bpf_setup *b);
/* The empty programs of the trap calibration (overhead.c): entry, or return when ret. */
struct bpf_program *bpf_setup__calib_prog(const struct bpf_setup *b, bool ret);
/* The fds of the programs the traced calls run (entry, return, USDT), at most max: their
 * run time is what tracing costs a process above its traps. The scheduler tracepoints run
 * for every process of the machine: no traced process's cost. */
size_t bpf_setup__traced_progs(const struct bpf_setup *b, int *fds, size_t max);
int bpf_setup__events_fd(const struct bpf_setup *b);
/* The per-process map of code without frame pointers (struct gl_fpless), -1 unless
 * --unwind auto copies stacks. */
int bpf_setup__fpless_fd(const struct bpf_setup *b);

/* Let BPF follow pid's forks (and stop its children before they run). 0 or -errno (the
 * table is full). */
int bpf_setup__trace(struct bpf_setup *b, pid_t pid);
/* Whether BPF now stops pid at each ld.so rendezvous, until user space resumes it. */
bool bpf_setup__hold(struct bpf_setup *b, pid_t pid);
/* pid is no longer followed into its children. */
void bpf_setup__untrace(struct bpf_setup *b, pid_t pid);
/*
 * Walk pid's Python frames at its allocations, as cfg says (its _PyRuntime and the layout of
 * its version). The first call of a python_lazy session loads the walk (a few hundred ms of
 * verifier; pid's calls meanwhile are traced without Python frames). 0 (also when Python
 * frames are off), -ENOEXEC when the walk could not be loaded (said once), or -errno (the
 * table is full).
 */
int bpf_setup__python(struct bpf_setup *b, pid_t pid, const struct gl_py_cfg *cfg);
/* Whether BPF walks Python frames at all (--python-depth). */
bool bpf_setup__python_on(const struct bpf_setup *b);
/* pid is gone or let go: out of every per-process table. */
void bpf_setup__forget(struct bpf_setup *b, pid_t pid);
/* pid's cumulative loss counters, by enum gl_stat. 0, or -errno when it has none. */
int bpf_setup__pid_loss(const struct bpf_setup *b, pid_t pid, __u64 counts[GL_STAT_MAX]);
/*
 * The frames of a record's stack_id: stack_depth + 1 of them, the first 0 ending a shorter
 * stack, in a buffer valid until the next call. NULL when the kernel no longer has it.
 */
const uint64_t *bpf_setup__stack(struct bpf_setup *b, int32_t stack_id);
/* How often the kernel's per-process tables ran full (losses not charged to a process). */
uint64_t bpf_setup__map_full(const struct bpf_setup *b);

#endif
