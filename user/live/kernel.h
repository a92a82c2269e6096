/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the running kernel offers gpuleak, probed once at start (test loads, the kernel's BTF,
 * /proc and /sys), and what gpuleak does on it: load, degrade a part (said once, in one line
 * naming what is lost), or refuse below the floor (one line naming the missing feature and the
 * first kernel that has it). `gpuleak probes --kernel` prints the same as a table or JSON.
 */
#ifndef GPULEAK_LIVE_KERNEL_H
#define GPULEAK_LIVE_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The kernel features gpuleak looks at, in the order the table lists them. */
enum kfeat {
	KF_BTF,		    /* /sys/kernel/btf/vmlinux: CO-RE relocations */
	KF_RINGBUF,	    /* BPF_MAP_TYPE_RINGBUF (5.8) */
	KF_TASK_STORAGE,    /* BPF_MAP_TYPE_TASK_STORAGE (5.11) */
	KF_BTF_TP,	    /* tp_btf programs (5.5) */
	KF_COOKIE,	    /* bpf_get_attach_cookie in uprobe programs (5.15) */
	KF_UPROBES,	    /* the perf uprobe PMU (4.17) */
	KF_UPROBE_MULTI,    /* BPF_TRACE_UPROBE_MULTI links (6.6) */
	KF_LOOP,	    /* bpf_loop (5.17) */
	KF_FIND_VMA,	    /* bpf_find_vma (5.17) */
	KF_PRIV_STACK,	    /* uprobe programs given a private stack (6.13, some builds) */
	KF_TASK_FROM_PID,   /* the bpf_task_from_pid kfunc (6.2) */
	KF_SIGNAL_TASK,	    /* the bpf_send_signal_task kfunc (6.13) */
	KF_FORK_FEXIT,	    /* fexit programs on schedule_tail (trampolines, 5.5) */
	KF_EXIT_GROUP_DEAD, /* sched_process_exit passes group_dead (6.16) */
	KF_MARK_VICTIM,	    /* oom:mark_victim passes the task (5.19) */
	KF_BPF_STATS,	    /* BPF_ENABLE_STATS: programs' run time (5.8) */
	KF_HASH_ALLOC,	    /* hash tables filled at run time by tracing programs (6.1) */
	KF_MAX,
};

struct kernel_features {
	char release[128];
	bool have[KF_MAX];
	/* Read from /proc and /sys: -1 when unreadable. */
	int perf_event_paranoid;
	int unprivileged_bpf_disabled;
	char lockdown[32]; /* the selected mode: none, integrity, confidentiality; "" unknown */
	bool tracefs;	   /* mounted (uprobes need it not: libbpf uses the perf PMU) */
	bool probed;	   /* the BPF test loads ran (root or CAP_BPF) */
};

/* Probes the running kernel; never fails (what could not be probed reads as missing). */
void kernel__probe(struct kernel_features *k);
/*
 * The same, the test loads' and BTF's answers taken from the cache of this boot and this
 * build of gpuleak when there is one (true), else probed and kept there. path: the cache's
 * file, "" when there is none to use.
 */
bool kernel__probe_cached(struct kernel_features *k, char *path, size_t path_size);

/*
 * The first feature below gpuleak's floor (the BPF object cannot work without it), or KF_MAX
 * when the kernel is above the floor. kernel__refusal() words it: one line, no newline.
 */
enum kfeat kernel__below_floor(const struct kernel_features *k);
const char *kernel__refusal(enum kfeat f);

/* What is given up without feature f (NULL: nothing, or f is part of the floor). */
const char *kernel__degradation(enum kfeat f);

/* Whether missing feature f gives something up here (false: present, floor, or covered). */
bool kernel__degrades(const struct kernel_features *k, enum kfeat f);

/* The feature's name and the first upstream kernel that has it, for messages and tables. */
const char *kernel__name(enum kfeat f);
const char *kernel__since(enum kfeat f);

/* `gpuleak probes --kernel`: the table, or one JSON object. */
void kernel__print(const struct kernel_features *k, FILE *out, bool json);

#endif /* GPULEAK_LIVE_KERNEL_H */
