/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A process's threads (tproc.threads), made on first sight and kept as long as their
 * process, with the state the modules above keep per thread: the CUDA device and context it
 * is on (gpu_objects.c), expected lower-layer frees (mem_calls.c), held nested calls,
 * adoption and NCCL groups (call_tree.c), an error object's depth (wgpu_objects.c). Every
 * module may look a thread up.
 */
#ifndef GPULEAK_TRACKER_THREADS_H
#define GPULEAK_TRACKER_THREADS_H

#include "tracker/model.h"

/* Frees the runtime makes underneath a free we already applied: (space, addr) to ignore once. */
#define NR_EXPECT 4

/* Communicators one NCCL group initialises: NCCL's own limit is far above any node's GPUs. */
#define MAX_GROUP_COMMS 16

struct tthread {
	uint32_t tid;
	int16_t device;
	/* An error object was made at this depth: the creation one level up returns it. */
	uint8_t error_depth;
	uint64_t ctx;
	/*
	 * Records of calls nested inside another traced call on the same thread (depth > 0)
	 * wait here until the outermost call returns: only then is it known whether they are
	 * layers of one allocation, memory a communicator made, or calls of their own.
	 */
	struct gl_peek_rec *held; /* the largest call record: each is copied whole */
	size_t nr_held, cap_held;
	struct {
		uint64_t addr;
		uint8_t space;
		uint8_t family; /* of the free that expects it: only a lower layer matches */
	} expect[NR_EXPECT];
	unsigned int nr_expect;
	/*
	 * A thread a traced call made to do its work (GL_TASK_THREAD: NCCL's group launch):
	 * its finished calls, held[0, adopt_ready), wait until that call returns on thread
	 * adopter, and are then applied as made inside it.
	 */
	uint32_t adopter; /* 0: not adopted */
	uint8_t adopt_depth;
	size_t adopt_ready;
	/* The adopter's side: threads made inside its call at adoptees_depth. */
	unsigned int nr_adoptees;
	uint8_t adoptees_depth;
	/* ncclGroupStart nesting; the communicators inits returned inside it, by device */
	unsigned int group_depth;
	struct group_comm {
		uint64_t comm;
		int16_t device;
	} group_comms[MAX_GROUP_COMMS];
	unsigned int nr_group_comms;
};

/* threads__get past the thread of the last record: found in, or made into, p->threads. */
struct tthread *threads__lookup(struct tproc *p, uint32_t tid);

/*
 * The thread tid of p, made on first sight; NULL without memory. Valid while p lives.
 * Looked up several times per record: the thread of the last one first, inline.
 */
static inline struct tthread *threads__get(struct tproc *p, uint32_t tid)
{
	if (p->last_thread && p->last_thread->tid == tid)
		return p->last_thread;
	return threads__lookup(p, tid);
}

/* The CUDA device thread tid is on (0 until it sets one). */
static inline int16_t threads__device(struct tproc *p, uint32_t tid)
{
	struct tthread *th = threads__get(p, tid);

	return th ? th->device : 0;
}

/* p's threads and what they hold are gone. */
void threads__free(struct tproc *p);

/*
 * The object stored (as a pointer) under (k0, k1) in h, or a new zeroed one of size bytes
 * put there; NULL without memory. For the map of threads, and of WebGPU queues.
 */
void *threads__map_obj(struct hmap *h, uint64_t k0, uint64_t k1, size_t size);

#endif
