// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "lib/log.h"
#include "live/signals.h"

struct signals {
	int fd;
	int sigints; /* Ctrl-Cs so far */
	int usr1;    /* SIGUSR1s not taken yet */
};

int signals__new(struct signals **out)
{
	struct signals *sg;
	sigset_t set;
	int err;

	*out = NULL;
	sg = calloc(1, sizeof(*sg));
	if (!sg)
		return -ENOMEM;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL)) {
		err = -errno;
		goto cleanup;
	}
	sg->fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sg->fd < 0) {
		err = -errno;
		goto cleanup;
	}
	*out = sg;
	return 0;
cleanup:
	free(sg);
	return err;
}

void signals__free(struct signals *sg)
{
	if (!sg)
		return;
	close(sg->fd);
	free(sg);
}

int signals__fd(const struct signals *sg)
{
	return sg->fd;
}

bool signals__stop(struct signals *sg, pid_t child)
{
	struct signalfd_siginfo si;

	if (read(sg->fd, &si, sizeof(si)) != sizeof(si))
		return false;
	if (si.ssi_signo == SIGUSR1) {
		sg->usr1++;
		return false;
	}
	/*
	 * A terminal's Ctrl-C comes from the kernel (SI_KERNEL) to the whole foreground process
	 * group: run mode's child got it too and is shutting down; trace its shutdown (its
	 * frees) unless asked twice. A SIGINT some process sent (kill, SI_USER) is meant for
	 * gpuleak alone, which would otherwise wait for a child that never got it: it stops
	 * tracing at once, as SIGTERM does, and the child runs on.
	 */
	if (child && si.ssi_signo == SIGINT && si.ssi_code == SI_KERNEL && ++sg->sigints == 1) {
		pr_note("waiting for pid %d to exit (Ctrl-C again to stop now)\n", child);
		return false;
	}
	return true;
}

int signals__catch_usr1(struct signals *sg)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	/* the same signalfd, with SIGUSR1 added to what it reads */
	return signalfd(sg->fd, &set, SFD_CLOEXEC | SFD_NONBLOCK) < 0 ? -errno : 0;
}

bool signals__usr1(struct signals *sg)
{
	bool got = sg->usr1 > 0;

	sg->usr1 = 0;
	return got;
}

int signals__take(struct signals *sg)
{
	struct signalfd_siginfo si;

	while (read(sg->fd, &si, sizeof(si)) == sizeof(si)) {
		/* a capture asked for (watch) interrupts nothing: it is taken once tracing */
		if (si.ssi_signo != SIGUSR1)
			return (int)si.ssi_signo;
		sg->usr1++;
	}
	return 0;
}
