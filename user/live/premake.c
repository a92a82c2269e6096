// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/log.h"
#include "live/premake.h"

#define PREMAKE_MAX_MAPS    64
#define PREMAKE_MAX_THREADS 4

struct job {
	struct bpf_map *map;
	uint64_t cost; /* bytes the kernel allocates for the map, roughly */
	int fd;
};

struct worker {
	struct job *jobs[PREMAKE_MAX_MAPS];
	size_t n;
	uint64_t cost;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t round8(uint64_t n)
{
	return (n + 7) & ~7ULL;
}

/*
 * The types made here: those whose creation needs only the sizes and flags. Not: the task
 * storage (its value's BTF is required), libbpf's data sections (.rodata, .bss: mapped and
 * filled from the object), a map libbpf is told not to create.
 */
static bool premade(const struct bpf_map *m)
{
	if (bpf_map__is_internal(m) || !bpf_map__autocreate(m))
		return false;
	switch (bpf_map__type(m)) {
	case BPF_MAP_TYPE_RINGBUF:
	case BPF_MAP_TYPE_STACK_TRACE:
	case BPF_MAP_TYPE_HASH:
	case BPF_MAP_TYPE_LRU_HASH:
	case BPF_MAP_TYPE_ARRAY:
	case BPF_MAP_TYPE_PERCPU_ARRAY:
	case BPF_MAP_TYPE_PROG_ARRAY:
		return true;
	default:
		return false;
	}
}

/* What the kernel allocates for m, near enough to share the work out. */
static uint64_t cost_of(const struct bpf_map *m, long cpus)
{
	uint64_t n = bpf_map__max_entries(m), k = round8(bpf_map__key_size(m)),
		 v = round8(bpf_map__value_size(m));

	switch (bpf_map__type(m)) {
	case BPF_MAP_TYPE_RINGBUF:
		/* whole pages, taken in bulk: a tenth of an element's cost per byte */
		return n / 10;
	case BPF_MAP_TYPE_STACK_TRACE:
		return n * (v + 32); /* a bucket: its header and the frames */
	case BPF_MAP_TYPE_HASH:
	case BPF_MAP_TYPE_LRU_HASH:
		return n * (k + v + 64); /* an element: its node, key and value */
	case BPF_MAP_TYPE_PERCPU_ARRAY:
		return n * v * (uint64_t)cpus;
	default:
		return n * v;
	}
}

static void make(struct job *j)
{
	const struct bpf_map *m = j->map;
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = bpf_map__map_flags(m),
		    .map_extra = bpf_map__map_extra(m), .numa_node = bpf_map__numa_node(m));

	j->fd = bpf_map_create(bpf_map__type(m), bpf_map__name(m), bpf_map__key_size(m),
			       bpf_map__value_size(m), bpf_map__max_entries(m), &opts);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	size_t i;

	for (i = 0; i < w->n; i++)
		make(w->jobs[i]);
	return NULL;
}

static int by_cost(const void *a, const void *b)
{
	const struct job *x = a, *y = b;

	return x->cost < y->cost ? 1 : x->cost > y->cost ? -1 : 0;
}

struct premake {
	struct job jobs[PREMAKE_MAX_MAPS];
	struct worker workers[PREMAKE_MAX_THREADS];
	pthread_t tids[PREMAKE_MAX_THREADS];
	bool started[PREMAKE_MAX_THREADS];
	size_t n, nw;
	uint64_t t0;
};

struct premake *premake__start(struct bpf_object *obj)
{
	struct premake *pm = calloc(1, sizeof(*pm));
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct job *jobs;
	size_t n = 0, nw, i, k;
	struct bpf_map *m;

	if (!pm)
		return NULL; /* libbpf makes them all */
	pm->t0 = now_ns();
	jobs = pm->jobs;
	if (cpus < 1)
		cpus = 1;
	bpf_object__for_each_map(m, obj)
	{
		if (!premade(m) || n == PREMAKE_MAX_MAPS)
			continue;
		jobs[n++] = (struct job){.map = m, .cost = cost_of(m, cpus), .fd = -1};
	}
	nw = (size_t)cpus < PREMAKE_MAX_THREADS ? (size_t)cpus : PREMAKE_MAX_THREADS;
	if (nw > n)
		nw = n;
	pm->n = n;
	pm->nw = nw;
	/* The largest first, each to the least loaded worker. */
	qsort(jobs, n, sizeof(jobs[0]), by_cost);
	for (i = 0; i < n; i++) {
		struct worker *least = &pm->workers[0];

		for (k = 1; k < nw; k++)
			if (pm->workers[k].cost < least->cost)
				least = &pm->workers[k];
		least->jobs[least->n++] = &jobs[i];
		least->cost += jobs[i].cost;
	}
	/* Every worker a thread: the caller has its own work meanwhile (bpf_setup.c). */
	for (k = 0; k < nw; k++)
		pm->started[k] = !pthread_create(&pm->tids[k], NULL, work, &pm->workers[k]);
	return pm;
}

void premake__finish(struct premake *pm, struct premake_stats *st)
{
	struct job *jobs;
	size_t i, k;

	memset(st, 0, sizeof(*st));
	if (!pm)
		return;
	jobs = pm->jobs;
	/* One that could not start has its share done here. */
	for (k = 0; k < pm->nw; k++) {
		if (pm->started[k])
			pthread_join(pm->tids[k], NULL);
		else
			work(&pm->workers[k]);
		st->threads += pm->started[k];
	}
	for (i = 0; i < pm->n; i++) {
		if (jobs[i].fd < 0) {
			st->failed++;
			continue;
		}
		/* libbpf keeps a duplicate; a map it refuses is made by libbpf itself. */
		if (bpf_map__reuse_fd(jobs[i].map, jobs[i].fd))
			st->failed++;
		else
			st->made++;
		close(jobs[i].fd);
	}
	st->wall_ns = now_ns() - pm->t0;
	pr_debug("%zu BPF maps made ahead on %zu threads in %.1f ms (%zu left to libbpf)\n",
		 st->made, st->threads, (double)st->wall_ns / 1e6, st->failed);
	free(pm);
}
