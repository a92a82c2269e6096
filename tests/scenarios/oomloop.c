// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * oomloop loop SIZE [GAP_US]
 * oomloop ranks N FAILING SIZE [GAP_US]
 *
 * A decode loop that runs its device out of memory, as a leaking server does at step 471
 * twelve hours in. The stand-in devices have a capacity (GPULEAK_STANDIN_DEVICE_MEM): the
 * real runtime's cudaErrorMemoryAllocation comes when the leak has filled it.
 *
 * loop: kv_cache_init cudaMalloc(16 MiB) once, kept. Then, step after step, GAP_US (default
 * 1000) apart:
 *   decode_step    2 x cudaMalloc(16 KiB), 2 x cudaFree: nothing left after the step
 *   leaky_sampler  cudaMalloc(SIZE), never freed: the leak
 * until leaky_sampler's cudaMalloc fails. It prints "oom at step K: N" (K: the step whose
 * leak failed, N: the runtime's error code) and exits 1, as a framework raising its
 * out-of-memory error does. With a capacity of 16 MiB + K x SIZE + 32 KiB (SIZE > 32 KiB) the
 * leak of step K is the first call that fails: K x SIZE are live at leaky_sampler then.
 * SCENARIO_OOM=abort: abort() instead of exit (SIGABRT, a fault); SCENARIO_OOM=wait: print,
 * then wait for a line before exiting. SCENARIO_TOUCH=1: leaky_sampler writes every page it
 * leaks (the stand-in's device memory is host memory: the process's RSS grows, so a memory
 * cgroup's limit can bring the kernel's OOM killer).
 *
 * ranks: the parent (no traced calls) starts N rank processes by fork + exec, each "oomloop
 * rank I FAILING SIZE GAP_US FD": rank I makes the KV cache and decode steps as above; only
 * rank FAILING leaks, until it fails as above; the others step until the parent, once rank
 * FAILING has exited, closes the pipe FD reaches, and then exit 0 having printed "rank I
 * steps S". The parent exits 0 when all did (rank FAILING's 1 is expected).
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

#define ACTIVATION_BYTES (16UL << 10)

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
		SCENARIO_OK(cudaMalloc(&act[i], ACTIVATION_BYTES));
	}
	for (i = 0; i < 2; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaFree(act[i]));
	}
}

static SCENARIO_SITE cudaError_t leaky_sampler(size_t size)
{
	const char *touch = getenv("SCENARIO_TOUCH");
	cudaError_t err;
	void *p;

	err = cudaMalloc(&p, size);
	if (!err && touch && !strcmp(touch, "1"))
		memset(p, 0x5a, size);
	return err;
}

static void gap(unsigned long long us)
{
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};

	nanosleep(&ts, NULL);
}

/* The leak ran the device out at step k: said, then out as a framework goes. */
static int out_of_memory(unsigned long long k, cudaError_t err)
{
	const char *how = getenv("SCENARIO_OOM");

	printf("oom at step %llu: %d\n", k, (int)err);
	fflush(stdout);
	if (how && !strcmp(how, "abort"))
		abort();
	if (how && !strcmp(how, "wait"))
		scenario_wait_line();
	return 1;
}

static int run_loop(unsigned long long size, unsigned long long gap_us)
{
	unsigned long long k;
	cudaError_t err;

	kv_cache_init();
	for (k = 0;; k++) {
		decode_step();
		err = leaky_sampler(size);
		if (err)
			return out_of_memory(k, err);
		gap(gap_us);
	}
}

/* Whether the parent closed the pipe: time for a flat rank to stop. */
static int told_to_stop(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c;

	return poll(&p, 1, 0) > 0 && read(fd, &c, 1) == 0;
}

static int run_rank(unsigned long long rank, unsigned long long failing, unsigned long long size,
		    unsigned long long gap_us, int fd)
{
	unsigned long long k;

	if (rank == failing)
		return run_loop(size, gap_us);
	kv_cache_init();
	for (k = 0; !told_to_stop(fd); k++) {
		decode_step();
		gap(gap_us);
	}
	printf("rank %llu steps %llu\n", rank, k);
	return 0;
}

static int run_ranks(char **argv, unsigned long long n, unsigned long long failing)
{
	char exe[4096], rank[24], fdarg[24];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	pid_t fail_pid = -1, pid;
	unsigned long long i;
	int p[2], status, ret = 0;

	if (len <= 0 || pipe(p)) {
		perror("oomloop");
		return 1;
	}
	exe[len] = 0;
	snprintf(fdarg, sizeof(fdarg), "%d", p[0]);
	scenario_ready();
	for (i = 0; i < n; i++) {
		pid = fork();
		if (pid < 0) {
			perror("oomloop: fork");
			return 1;
		}
		if (pid) {
			if (i == failing)
				fail_pid = pid;
			continue;
		}
		close(p[1]);
		snprintf(rank, sizeof(rank), "%llu", i);
		execl(exe, argv[0], "rank", rank, argv[3], argv[4], argv[5], fdarg, (char *)NULL);
		perror("oomloop: exec");
		_exit(127);
	}
	close(p[0]);
	while ((pid = wait(&status)) > 0) {
		if (pid == fail_pid) {
			close(p[1]); /* the others stop */
			continue;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			ret = 1;
	}
	scenario_done();
	return ret;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "loop")) {
		unsigned long long size = scenario_bytes(argv[2], "SIZE");

		scenario_ready();
		return run_loop(size, argc > 3 ? scenario_bytes(argv[3], "GAP_US") : 1000);
	}
	if (argc == 7 && !strcmp(argv[1], "rank"))
		return run_rank(scenario_bytes(argv[2], "I"), scenario_bytes(argv[3], "FAILING"),
				scenario_bytes(argv[4], "SIZE"), scenario_bytes(argv[5], "GAP_US"),
				atoi(argv[6]));
	if (argc == 6 && !strcmp(argv[1], "ranks"))
		return run_ranks(argv, scenario_bytes(argv[2], "N"),
				 scenario_bytes(argv[3], "FAILING"));
	fprintf(stderr,
		"usage: oomloop loop SIZE [GAP_US] | oomloop ranks N FAILING SIZE GAP_US\n");
	return 2;
}
