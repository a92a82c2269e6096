// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "lib/log.h"
#include "lib/vec.h"
#include "live/process.h"
#include "live/targets.h"

struct targets {
	struct target **v; /* pointers: a target stays put while the table grows */
	size_t n, cap;
};

int targets__new(struct targets **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

static void target_free(struct target *t)
{
	if (t->pidfd >= 0)
		close(t->pidfd);
	free(t);
}

void targets__free(struct targets *ts)
{
	size_t i;

	if (!ts)
		return;
	for (i = 0; i < ts->n; i++)
		target_free(ts->v[i]);
	free(ts->v);
	free(ts);
}

struct target *targets__add(struct targets *ts, pid_t pid, pid_t ppid)
{
	struct target *t;

	if (vec_grow((void **)&ts->v, &ts->cap, ts->n, sizeof(*ts->v)))
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pid = pid;
	t->ppid = ppid;
	t->pidfd = -1;
	t->state = TARGET_NEW;
	t->status = -1;
	t->wstatus = -1;
	ts->v[ts->n++] = t;
	return t;
}

void targets__drop(struct targets *ts, struct target *t)
{
	size_t i;

	for (i = 0; i < ts->n && ts->v[i] != t; i++)
		;
	if (i == ts->n)
		return;
	memmove(&ts->v[i], &ts->v[i + 1], (ts->n - i - 1) * sizeof(*ts->v));
	ts->n--;
	target_free(t);
}

struct target *targets__find(const struct targets *ts, pid_t pid)
{
	size_t i;

	for (i = 0; i < ts->n; i++)
		if (ts->v[i]->pid == pid && !target__gone(ts->v[i]))
			return ts->v[i];
	return NULL;
}

struct target *targets__by_pidfd(const struct targets *ts, int pidfd)
{
	size_t i;

	for (i = 0; i < ts->n; i++)
		if (ts->v[i]->pidfd == pidfd && !target__gone(ts->v[i]))
			return ts->v[i];
	return NULL;
}

size_t targets__count(const struct targets *ts)
{
	return ts->n;
}

struct target *targets__at(const struct targets *ts, size_t i)
{
	return ts->v[i];
}

size_t targets__alive(const struct targets *ts)
{
	size_t i, n = 0;

	for (i = 0; i < ts->n; i++)
		n += !target__gone(ts->v[i]);
	return n;
}

bool target__in_analysis(const struct target *t)
{
	return t->state == TARGET_LAUNCHING || t->state == TARGET_TRACED ||
	       t->state == TARGET_ENDING;
}

bool target__gone(const struct target *t)
{
	return t->state == TARGET_ENDED || t->state == TARGET_EXITED;
}

int target__pin(struct target *t, uint64_t want_ticks)
{
	uint64_t ticks;
	int err;

	t->pidfd = process__pidfd(t->pid);
	if (t->pidfd < 0)
		return t->pidfd;
	err = process__start_ticks(t->pid, &ticks);
	if (err)
		return err;
	if (want_ticks && ticks != want_ticks)
		return -ESTALE;
	t->start_ticks = ticks;
	t->ns_pid = process__ns_pid(t->pid);
	return 0;
}

bool target__exited_meanwhile(const struct target *t)
{
	uint64_t ticks;

	if (!process__pidfd_exited(t->pidfd))
		return false;
	if (!process__start_ticks(t->pid, &ticks) && ticks != t->start_ticks)
		pr_warn("pid %d exited while gpuleak attached to it, and the pid now belongs to "
			"another process (started at %" PRIu64 ", not %" PRIu64 "): not traced\n",
			t->pid, ticks, t->start_ticks);
	return true;
}

void target__set_wstatus(struct target *t, int ws)
{
	t->wstatus = ws;
	t->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

void target__resume(const struct target *t)
{
	if (t->pidfd >= 0)
		process__pidfd_signal(t->pidfd, SIGCONT);
	else
		kill(t->pid, SIGCONT);
}
