/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Target processes: facts from /proc, and launching a held child for run mode. */
#ifndef GPULEAK_PROCESS_H
#define GPULEAK_PROCESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* starttime (field 22 of /proc/PID/stat): with the pid, identifies a process. -errno. */
int process__start_ticks(pid_t pid, uint64_t *ticks);
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
/* Whether this process may load BPF and attach uprobes (root, or CAP_BPF + CAP_PERFMON). */
int process__check_privileges(void);

/* A child forked and held before exec until launch__release. */
struct launch {
	pid_t pid;
	int go_fd;		/* write end: one byte lets the child exec */
	int err_fd;		/* read end: EOF on successful exec, else the child's errno */
	char exe[4096];		/* resolved executable path */
};

/*
 * Fork the child for argv (argv[0] searched in PATH), with env (NULL-terminated "K=V", may
 * be NULL) added to its environment. 0 or -errno (-ENOENT: not found).
 */
int launch__fork(char *const argv[], char *const env[], struct launch *l);
/* Let the child exec; 0, or -errno of a failed exec. */
int launch__release(struct launch *l);
/* Kill and reap a child that never got released. */
void launch__abort(struct launch *l);

#endif
