// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * realtarget: a process that maps NVIDIA's real libcudart.so.13 and the 218 MB libnccl.so.2,
 * for the attach/detach and probe-placement benchmarks.
 *
 *   realtarget wait                 print "ready PID", exit at a line on stdin (or EOF)
 *   realtarget register N           print "ready PID", wait for a line, then call
 *                                   ncclCommRegister(NULL, ...) N times (NCCL rejects it at
 *                                   once: ncclInvalidArgument) and print the ns per call
 *
 * ncclCommRegister starts with `movabs $imm64,%rax`, which the kernel single-steps under a
 * uprobe: its cost with the probe at the entry and with gpuleak's moved probe is the gain of
 * probe placement on a real library.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void wait_line(void)
{
	char c;

	while (read(STDIN_FILENO, &c, 1) == 1 && c != '\n')
		;
}

int main(int argc, char **argv)
{
	unsigned long long n, i, t0, t1;
	int version = 0;
	void *handle;

	if (argc < 2 || (strcmp(argv[1], "wait") && (strcmp(argv[1], "register") || argc != 3))) {
		fprintf(stderr, "usage: realtarget wait | realtarget register N\n");
		return 2;
	}
	/* Both libraries are really used, not just linked: no GPU here, the answers are errors. */
	cudaRuntimeGetVersion(&version);
	ncclGetVersion(&version);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	wait_line();
	if (!strcmp(argv[1], "wait"))
		return 0;
	n = strtoull(argv[2], NULL, 0);
	/* untimed warm-up: the first hits map the kernel's trampolines */
	for (i = 0; i < 1000; i++)
		ncclCommRegister(NULL, NULL, 0, &handle);
	t0 = now_ns();
	for (i = 0; i < n; i++)
		if (ncclCommRegister(NULL, NULL, 0, &handle) != ncclInvalidArgument)
			return 1;
	t1 = now_ns();
	printf("{\"calls\":%llu,\"ns_per_call\":%.1f}\n", n, n ? (double)(t1 - t0) / n : 0.0);
	return 0;
}
