// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ranks MODE N LEAKY STEPS SIZE
 *
 * A multi-process server in miniature: the parent (traced calls: none) starts N rank
 * processes and waits for them; it exits with status 0 when all did. MODE fork: each rank is
 * a fork() of the parent; MODE exec: each rank is fork() + exec of this program as
 * "ranks rank I LEAKY STEPS SIZE". Rank I, in both modes:
 *   kv_cache_init  cudaMalloc(16 MiB) once, kept
 *   STEPS times, 20 ms apart:
 *     decode_step    2 x cudaMalloc(1 MiB), 2 x cudaFree: nothing left after the step
 *     leaky_sampler  only rank LEAKY: cudaMalloc(SIZE), never freed
 * Expected at exit: each rank 16 MiB live at kv_cache_init; rank LEAKY also STEPS x SIZE at
 * leaky_sampler, growing by SIZE per step while the other ranks stay flat.
 * With SCENARIO_SYNC=1 the parent waits for a line before starting the ranks, and the
 * ranks each wait for nothing (stdin is the parent's).
 */
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

static SCENARIO_SITE void *kv_cache_init(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 16UL << 20));
	return p;
}

static SCENARIO_SITE void decode_step(void)
{
	void *act[2];
	int i;

	for (i = 0; i < 2; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaMalloc(&act[i], 1UL << 20));
	}
	for (i = 0; i < 2; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaFree(act[i]));
	}
}

static SCENARIO_SITE void *leaky_sampler(size_t size)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, size));
	return p;
}

static int rank_main(unsigned long long rank, unsigned long long leaky, unsigned long long steps,
		     unsigned long long size)
{
	const struct timespec gap = {.tv_nsec = 20 * 1000 * 1000};
	unsigned long long i;

	kv_cache_init();
	for (i = 0; i < steps; i++) {
		decode_step();
		if (rank == leaky)
			leaky_sampler(size);
		nanosleep(&gap, NULL);
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long long n, leaky, steps, size, i;
	int status, ret = 0;
	pid_t pid;

	scenario_usage(argc, 6, "ranks fork|exec|rank N LEAKY STEPS SIZE");
	n = scenario_bytes(argv[2], "N");
	leaky = scenario_bytes(argv[3], "LEAKY");
	steps = scenario_bytes(argv[4], "STEPS");
	size = scenario_bytes(argv[5], "SIZE");
	if (!strcmp(argv[1], "rank"))
		return rank_main(n, leaky, steps, size);
	if (strcmp(argv[1], "fork") && strcmp(argv[1], "exec")) {
		fprintf(stderr, "ranks: MODE is fork or exec\n");
		return 2;
	}
	scenario_ready();
	for (i = 0; i < n; i++) {
		pid = fork();
		if (pid < 0) {
			perror("ranks: fork");
			return 1;
		}
		if (pid)
			continue;
		if (!strcmp(argv[1], "fork"))
			_exit(rank_main(i, leaky, steps, size));
		{
			char rank[24], exe[4096];
			ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

			if (len <= 0) {
				perror("ranks: /proc/self/exe");
				_exit(127);
			}
			exe[len] = 0;
			snprintf(rank, sizeof(rank), "%llu", i);
			execl(exe, argv[0], "rank", rank, argv[3], argv[4], argv[5], (char *)NULL);
			perror("ranks: exec");
			_exit(127);
		}
	}
	while ((pid = wait(&status)) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			ret = 1;
	scenario_done();
	return ret;
}
