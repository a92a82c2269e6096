// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
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
