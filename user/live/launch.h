/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Run mode's child: forked and held before exec, so the probes are in place before its
 * first instruction (as libbpf-tools' -c CMD), then let go. Its exec's success or errno
 * comes back through a close-on-exec pipe.
 */
#ifndef GPULEAK_LIVE_LAUNCH_H
#define GPULEAK_LIVE_LAUNCH_H

#include <sys/types.h>

/* A child forked and held before exec until launch__release. */
struct launch {
	pid_t pid;
	int go_fd;	/* write end: one byte lets the child exec */
	int err_fd;	/* read end: EOF on successful exec, else the child's errno */
	char exe[4096]; /* resolved executable path */
	char **argv;	/* the command line it execs */
};

/*
 * Fork the child for argv (argv[0] searched in PATH), with env (NULL-terminated "K=V", may
 * be NULL) added to its environment, and stdout_fd as its standard output (-1: gpuleak's).
 * 0 or -errno (-ENOENT: not found).
 */
int launch__fork(char **argv, char *const env[], int stdout_fd, struct launch *l);
/* Let the child exec; 0, or -errno of a failed exec. stop_fd readable while it execs (a
 * signal): the child is killed and reaped, -EINTR. */
int launch__release(struct launch *l, int stop_fd);
/* Kill and reap a child that never got released. */
void launch__abort(struct launch *l);

#endif
