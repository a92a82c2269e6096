// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * threads N
 *
 * Thread A (producer) cudaMallocs N buffers of 8192 bytes and hands each through a queue to
 * thread B (consumer), which cudaFrees every one but the last. Both call cudaSetDevice(0)
 * first. Allocation and free happen on different threads, so a tracer must not key
 * allocations by thread.
 * Expected at "done": 1 live allocation (N >= 1), 8192 bytes at site producer (device 0),
 * allocated by thread A; N - 1 frees from consumer on thread B.
 */
#include <pthread.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

struct queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void **items;
	unsigned long head, tail; /* items[head..tail) are queued */
	unsigned long n;	  /* how many the producer will make */
};

static void queue_put(struct queue *q, void *p)
{
	pthread_mutex_lock(&q->lock);
	q->items[q->tail++] = p;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

static void *queue_get(struct queue *q)
{
	void *p;

	pthread_mutex_lock(&q->lock);
	while (q->head == q->tail)
		pthread_cond_wait(&q->cond, &q->lock);
	p = q->items[q->head++];
	pthread_mutex_unlock(&q->lock);
	return p;
}

static SCENARIO_SITE void *producer(void *arg)
{
	struct queue *q = arg;
	unsigned long i;
	void *p;

	SCENARIO_OK(cudaSetDevice(0));
	for (i = 0; i < q->n; i++) {
		SCENARIO_OK(cudaMalloc(&p, 8192));
		queue_put(q, p);
	}
	return NULL;
}

static SCENARIO_SITE void *consumer(void *arg)
{
	struct queue *q = arg;
	unsigned long i;

	SCENARIO_OK(cudaSetDevice(0));
	for (i = 0; i < q->n; i++) {
		void *p = queue_get(q);

		if (i + 1 < q->n)
			SCENARIO_OK(cudaFree(p));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct queue q = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	pthread_t a, b;

	scenario_usage(argc, 2, "threads N");
	q.n = scenario_bytes(argv[1], "N");
	q.items = calloc(q.n ? q.n : 1, sizeof(*q.items));
	if (!q.items)
		return 1;
	scenario_ready();
	if (pthread_create(&b, NULL, consumer, &q) || pthread_create(&a, NULL, producer, &q)) {
		fprintf(stderr, "threads: pthread_create failed\n");
		return 1;
	}
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	scenario_done();
	return 0;
}
