/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Facts about target processes, from /proc and pidfds: identity, names, namespaces, and
 * whether this machine and this process can trace at all. */
#ifndef GPULEAK_LIVE_PROCESS_H
#define GPULEAK_LIVE_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* starttime (field 22 of /proc/PID/stat): with the pid, identifies a process. -errno. */
int process__start_ticks(pid_t pid, uint64_t *ticks);
/*
 * Wait until pid is stopped (state T), polling /proc every millisecond for at most max_ms:
 * -ESRCH when it is gone, -ETIMEDOUT when it did not stop.
 */
int process__wait_stopped(pid_t pid, unsigned int max_ms);

/* The process's arguments from /proc/PID/cmdline: *argv NULL-terminated, one allocation
 * (free(*argv)). 0 or -errno. */
int process__cmdline(pid_t pid, char ***argv, uint32_t *argc);
/* The executable's path (/proc/PID/exe), "" when unknown. */
void process__exe(pid_t pid, char *buf, size_t len);
/* A start time in clock ticks after boot as wall-clock ns, 0 when unknown. */
uint64_t process__start_realtime_ns(uint64_t start_ticks);
/* The process's comm, "" when unknown. */
void process__comm(pid_t pid, char *buf, size_t len);
/* A pidfd that polls readable when pid exits; -errno. */
int process__pidfd(pid_t pid);
/* Whether the process of a pidfd has exited (the pidfd polls readable). */
bool process__pidfd_exited(int pidfd);
/* Send sig to the process of a pidfd: never to another process that reused its pid. -errno. */
int process__pidfd_signal(int pidfd, int sig);
/* Whether pid sees another root directory than we do (a container): its files are then
 * reached through /proc/PID/root. */
bool process__in_other_root(pid_t pid);
/* pid's pid in its own (innermost) pid namespace (NSpid), 0 when unknown. */
uint32_t process__ns_pid(pid_t pid);
/* A start time in ns after boot (BPF's task start_boottime) as /proc starttime ticks. */
uint64_t process__boot_ns_to_ticks(uint64_t ns);
/*
 * This process's pid namespace: the nsfs device and the namespace's number, and whether it
 * is the initial namespace (where BPF's pids need no translation). 0 or -errno.
 */
int process__pidns(uint64_t *dev, uint64_t *ino, bool *initial);
/*
 * Whether pid is a process gpuleak can trace, checked before anything is loaded: -ESRCH (no
 * such process, or one that has exited), -EINVAL (a kernel thread, or a thread of another
 * process), -EPERM (its memory maps cannot be read: another user's without
 * CAP_SYS_PTRACE), each with a sentence that says what is wrong and what to do in why.
 */
int process__check_target(pid_t pid, char *why, size_t why_len);
/* Whether this process may load BPF and attach uprobes (root, or CAP_BPF + CAP_PERFMON +
 * CAP_SYS_ADMIN: uprobe_multi links need the last). */
int process__check_privileges(void);
/*
 * Whether the kernel has what gpuleak needs, read from sysfs under sysfs_root ("/sys"):
 * BTF (kernel/btf/vmlinux) and uprobes (the uprobe PMU, bus/event_source/devices/uprobe).
 * 0, or -ENOENT with an actionable sentence in why.
 */
int process__check_kernel(const char *sysfs_root, char *why, size_t why_len);

#endif
