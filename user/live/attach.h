/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Attach: puts the catalog's probes on every object a target maps that defines a traced
 * function or has a traced USDT probe. One uprobe_multi link per (process, object,
 * direction), and one per (process, object, USDT probe) made by libbpf's USDT support, all
 * filtered by pid in the kernel so other processes mapping the same library are neither
 * traced nor slowed (nor have their USDT semaphores raised).
 */
#ifndef GPULEAK_LIVE_ATTACH_H
#define GPULEAK_LIVE_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct bpf_program;
struct modules;
struct module;
struct proc_maps;
struct attach;

/*
 * enter, exit: the uprobe programs (gpuleak.bpf.c); usdt: the USDT one. multi: one
 * uprobe_multi link per object and direction (Linux 6.6+), else one classic uprobe link per
 * probe, each with the same cookie (the API id) as the multi link's entry for it.
 */
int attach__new(struct bpf_program *enter, struct bpf_program *exit, struct bpf_program *usdt,
		bool multi, struct modules *mods, struct attach **out);
/* Detaches everything. */
void attach__free(struct attach *a);
/*
 * Attach to every module in pid's mappings not attached for pid yet. *nr_new counts the
 * modules newly attached. Returns 0 or the first attach error (-errno); modules that failed
 * are reported on stderr and retried on the next scan.
 */
int attach__scan(struct attach *a, const struct proc_maps *m, int *nr_new);
/*
 * Probe code at addr in pid (a callback the program passed) as API api, entry only. 0 if
 * done or already there; -errno with a reason in why (e.g. JIT code, which has no file).
 */
int attach__code(struct attach *a, pid_t pid, uint64_t addr, unsigned int api, char *why,
		 size_t why_len);
/* Detach everything attached for pid (it exited: its probes can only fire for a reused pid). */
void attach__forget(struct attach *a, pid_t pid);
/* Attach to one file by path for pid, before pid has mapped it (run mode, pre-exec). */
int attach__path(struct attach *a, pid_t pid, const char *path);
/*
 * Put a marker probe (api, an entry-only NOTIFY) on symbol in file for pid, or with a
 * provider on its USDT probe provider:symbol. file is a path, or the basename of an object
 * in m (pid's mappings; NULL before exec). -ENOENT while the object is not mapped yet;
 * -ESRCH when the symbol or probe is not in it.
 */
int attach__marker(struct attach *a, pid_t pid, const struct proc_maps *m, const char *file,
		   const char *provider, const char *symbol, unsigned int api);
/* Whether pid has a probe on a non-optional API (a CUDA library was found). */
bool attach__has_required(const struct attach *a, pid_t pid);
/* Print "looked in" diagnostics: the objects of pid scanned and what each had. */
void attach__print_objects(const struct attach *a, pid_t pid, const struct proc_maps *m, FILE *out);
/* Print the attached probes (gpuleak -v and `gpuleak probes`). */
void attach__print(const struct attach *a, FILE *out);
size_t attach__nr_links(const struct attach *a);
/* Probes attached for pid, 0: for every process. */
size_t attach__nr_probes(const struct attach *a, pid_t pid);
/* Number of objects attached for pid. */
size_t attach__nr_objects(const struct attach *a, pid_t pid);

/*
 * The verdict's "slow_probe_sites" and "moved_probe_sites" members for pid (JSON, without
 * braces): probes left on an instruction the kernel single-steps, probes moved past one.
 */
void attach__placement_json(const struct attach *a, pid_t pid, FILE *f);

#endif
