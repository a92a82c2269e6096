/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The traced processes: the table of targets and each one's place in its life, one state.
 *
 *   -p PID:                      TRACED at once
 *   run mode:                    LAUNCHING --the exec of its command--> TRACED
 *   a followed fork, after exec: NEW --its first traced call (or a loss)--> TRACED
 *   TRACED --exec--> NEW (with or without --follow: the program it became is traced)
 *   TRACED --end marker--> ENDING --the drain is done--> ENDED
 *   any not gone --exit--> EXITED
 *
 * A target in the analysis (LAUNCHING, TRACED, ENDING) has had its GL_PROC_ATTACH; one
 * ENDED or EXITED is gone: nothing more of it is taken, and it leaves the table once its end
 * is reported, unless it is gpuleak's own child, which stays until reaped. The pidfd, opened
 * before the identity (start time) is checked, pins the process: whatever happens to the pid
 * afterwards, signals and exit notices through it are about this process.
 */
#ifndef GPULEAK_LIVE_TARGETS_H
#define GPULEAK_LIVE_TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "gpuleak.h"

struct launch;

enum target_state {
	TARGET_NEW,	  /* probed, not in the analysis until it calls something traced: the
			   * shells and helpers a server forks never show up */
	TARGET_LAUNCHING, /* run mode's child before the exec of its command, which BPF
			   * reports and which is not a new program */
	TARGET_TRACED,	  /* in the analysis: GL_PROC_ATTACH went out */
	TARGET_ENDING,	  /* called its end marker (--end): let go after this drain */
	TARGET_ENDED,	  /* let go at its end marker: it runs on, untraced */
	TARGET_EXITED,	  /* exited, its end reported */
};

struct target {
	pid_t pid;
	pid_t ppid;	 /* the traced process it was followed from, 0: named by the user */
	uint32_t ns_pid; /* its pid in its own pid namespace (a container), 0: the same */
	int pidfd;
	uint64_t start_ticks;
	enum target_state state;
	struct launch *launch; /* run mode's child itself (gpuleak reaps it), else NULL */
	/* What is known of it besides its state, each independent of the others: */
	bool held;	     /* BPF stops it at each ld.so rendezvous until we attached */
	bool has_lib;	     /* a GPU library (CUDA, WebGPU) is attached: "tracing pid" said */
	bool has_rendezvous; /* a rendezvous probe covers it: no periodic rescans */
	/* Work the event loop owes it after this drain: */
	bool rescan_pending;	   /* its ld.so rendezvous fired: mappings changed */
	bool code_wait;		   /* stopped until a callback's probe is in place */
	unsigned int execs;	   /* programs it exec'd since it was first traced */
	unsigned int markers_done; /* bit i: marker i attached (or failed, said once) */
	char comm[16];		   /* its name at its fork or exec, as BPF saw it, or "" */
	int status;		   /* exit status (128 + signal), -1: not known */
	int wstatus;		   /* the same as waitpid() says it, -1: not known */
	uint64_t py_runtime;	   /* the _PyRuntime BPF walks Python frames from, 0: none */
	bool py_said;		   /* its interpreter was said on stderr */
	uint64_t loss[GL_STAT_MAX];
	uint64_t last_rescan_ns;
};

struct targets;

int targets__new(struct targets **out);
/* Closes every pidfd. Accepts NULL. */
void targets__free(struct targets *ts);
/* A new entry (state NEW, not pinned yet). NULL when out of memory. */
struct target *targets__add(struct targets *ts, pid_t pid, pid_t ppid);
/* Forget a target whose end was reported: a server forking workers all day stays small.
 * Entries after it move down one. */
void targets__drop(struct targets *ts, struct target *t);
/* The target with this pid that is not gone (an exited one kept for reaping may share it). */
struct target *targets__find(const struct targets *ts, pid_t pid);
/* The target that is not gone and polls on this pidfd. */
struct target *targets__by_pidfd(const struct targets *ts, int pidfd);
size_t targets__count(const struct targets *ts);
struct target *targets__at(const struct targets *ts, size_t i);
size_t targets__alive(const struct targets *ts);

/* Whether t is in the analysis: it had its GL_PROC_ATTACH and is not gone. */
bool target__in_analysis(const struct target *t);
/* Whether t is ENDED or EXITED: nothing more of it is traced. */
bool target__gone(const struct target *t);
/*
 * Open t's pidfd and check that t->pid is still the process that started at want_ticks
 * (when not 0): from here on the pidfd pins that process. -ESRCH when it is gone, -ESTALE
 * when another process has its pid.
 */
int target__pin(struct target *t, uint64_t want_ticks);
/*
 * After attaching by pid number: whether t's pidfd says it exited meanwhile, when the probes
 * may sit on whichever process took the pid since (said, when one did): take them off.
 */
bool target__exited_meanwhile(const struct target *t);
/* Its exit, as waitpid() or the kernel's exit code (the same encoding) says it. */
void target__set_wstatus(struct target *t, int ws);
/* Let a stopped target go on; through its pidfd, so a reused pid is never signalled. */
void target__resume(const struct target *t);

#endif
