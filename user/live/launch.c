// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "live/launch.h"

static int resolve_exe(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(cmd, '/')) {
		if (access(cmd, X_OK))
			return -errno;
		if (!realpath(cmd, out))
			return -errno;
		return 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, n ? path : ".", cmd);
		if (!access(buf, X_OK) && realpath(buf, out) && strlen(out) < len)
			return 0;
		path += n + (path[n] == ':');
	}
	return -ENOENT;
}

int launch__fork(char **argv, char *const env[], int stdout_fd, struct launch *l)
{
	int go[2], err[2], ret;
	sigset_t all;

	memset(l, 0, sizeof(*l));
	l->pid = -1;
	l->argv = argv;
	ret = resolve_exe(argv[0], l->exe, sizeof(l->exe));
	if (ret)
		return ret;
	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(err, O_CLOEXEC)) {
		ret = -errno;
		close(go[0]);
		close(go[1]);
		return ret;
	}
	l->pid = fork();
	if (l->pid < 0) {
		ret = -errno;
		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		return ret;
	}
	if (!l->pid) {
		char c;
		int e;

		/*
		 * gpuleak killed while this child is held must not leave it stopped with nobody
		 * to let it go: before exec it reads EOF below and exits; after, stopped by BPF at
		 * its exec or a dlopen, it gets SIGCONT when gpuleak dies (the setting outlives
		 * exec; a running process ignores it) and runs on, untraced.
		 */
		prctl(PR_SET_PDEATHSIG, SIGCONT);
		/* The tracer blocks signals for its signalfd; the target must not inherit that. */
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		if (stdout_fd >= 0 && dup2(stdout_fd, STDOUT_FILENO) < 0)
			_exit(127);
		close(go[1]);
		close(err[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(127); /* tracer gave up before release */
		for (; env && *env; env++)
			putenv(*env);
		execv(l->exe, argv);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	l->go_fd = go[1];
	l->err_fd = err[0];
	return 0;
}

int launch__release(struct launch *l, int stop_fd)
{
	struct pollfd p[2] = {{.fd = l->err_fd, .events = POLLIN},
			      {.fd = stop_fd, .events = POLLIN}};
	ssize_t n;
	int e = 0;

	if (write(l->go_fd, "g", 1) != 1)
		return -errno;
	close(l->go_fd);
	l->go_fd = -1;
	/* An exec can take long (a file on a hung network mount): never deaf to stop_fd. */
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break; /* the read says */
		}
		if (p[0].revents)
			break;
		if (p[1].revents & POLLIN) {
			/* Its program is not ours to let run untraced: it dies before it runs. */
			kill(l->pid, SIGKILL);
			waitpid(l->pid, NULL, 0);
			close(l->err_fd);
			l->err_fd = -1;
			l->pid = -1;
			return -EINTR;
		}
	}
	/* The error pipe is close-on-exec: EOF means the exec happened. */
	n = read(l->err_fd, &e, sizeof(e));
	close(l->err_fd);
	l->err_fd = -1;
	if (n == sizeof(e)) {
		waitpid(l->pid, NULL, 0);
		return -e;
	}
	return 0;
}

void launch__abort(struct launch *l)
{
	if (l->pid <= 0)
		return;
	if (l->go_fd >= 0)
		close(l->go_fd);
	if (l->err_fd >= 0)
		close(l->err_fd);
	kill(l->pid, SIGKILL);
	waitpid(l->pid, NULL, 0);
	l->pid = -1;
}
