// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <bpf/libbpf.h>
#include "live/links.h"

/* Up to this many links are destroyed at once (one thread each). */
#define DETACH_THREADS 16

struct detach_job {
	struct bpf_link **links;
	size_t n, first, step;
};

static void *detach_thread(void *arg)
{
	struct detach_job *j = arg;
	size_t i;

	for (i = j->first; i < j->n; i += j->step)
		bpf_link__destroy(j->links[i]);
	return NULL;
}

void links__destroy(struct bpf_link **links, size_t n)
{
	struct detach_job jobs[DETACH_THREADS];
	pthread_t tids[DETACH_THREADS];
	bool own[DETACH_THREADS];
	size_t i, nr_threads = n < DETACH_THREADS ? n : DETACH_THREADS, started = 0;

	for (i = 0; i < nr_threads; i++) {
		jobs[i] = (struct detach_job){links, n, i, nr_threads};
		/* The first share is this thread's; a thread that cannot start leaves its
		 * share to this one too. */
		own[i] = !i || pthread_create(&tids[started], NULL, detach_thread, &jobs[i]);
		if (!own[i])
			started++;
	}
	for (i = 0; i < nr_threads; i++)
		if (own[i])
			detach_thread(&jobs[i]);
	for (i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
}

struct attach_job {
	struct bpf_program *prog;
	struct bpf_link **link;
	int *err;
};

static void *attach_thread(void *arg)
{
	struct attach_job *j = arg;

	*j->link = bpf_program__attach(j->prog);
	*j->err = *j->link ? 0 : -errno;
	return NULL;
}

void links__attach(struct bpf_program **progs, size_t n, struct bpf_link **links, int *errs)
{
	struct attach_job jobs[DETACH_THREADS];
	pthread_t tids[DETACH_THREADS];
	bool started[DETACH_THREADS] = {0};
	size_t i;

	for (i = 0; i < n; i++) {
		links[i] = NULL;
		errs[i] = 0;
	}
	for (i = 0; i < n && i < DETACH_THREADS; i++) {
		jobs[i] = (struct attach_job){progs[i], &links[i], &errs[i]};
		/* The first here; one that cannot start is attached here too. */
		if (progs[i] && i)
			started[i] = !pthread_create(&tids[i], NULL, attach_thread, &jobs[i]);
	}
	for (i = 0; i < n; i++) {
		if (started[i] || !progs[i])
			continue;
		attach_thread(&(struct attach_job){progs[i], &links[i], &errs[i]});
	}
	for (i = 0; i < n && i < DETACH_THREADS; i++)
		if (started[i])
			pthread_join(tids[i], NULL);
}
