// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pairloop: the benchmark's target. Calls cudaMalloc + cudaFree (the benchmark's own
 * libcudart.so.13, see libcudart_bench.c) in a tight loop and times the pairs with its own
 * clock: what a traced process pays per allocate/free pair.
 *
 *   pairloop [--sync] [-n PAIRS] [-w WARMUP] [-s SIZE]        as fast as it can
 *   pairloop [--sync] -r CALLS_PER_S -d SECONDS [-s SIZE]     paced (2 calls per pair)
 *   torchloop --torch LIB [--sync] [-n PAIRS] [-w WARMUP]      PyTorch block pairs instead:
 *            c10_cuda_alloc + c10_cuda_free of the stand-in libc10_cuda.so at LIB (dlopen),
 *            the block served from the allocator's cache after the first: each pair is its
 *            two USDT probes (pytorch:malloc, pytorch:free) and the allocator's own work.
 *            The same source built with -DPAIRLOOP_TORCH: no runtime of its own, so the
 *            allocator loads the stand-in runtime it needs for its segments.
 *
 * -W US: spin US microseconds of the process's own CPU time after each pair (a loop whose calls
 * are a small part of its CPU, for --max-overhead). cpu_s in the JSON line: the process's
 * CPU time (user + system, its traps included) from start to end.
 *
 * --sync: print "ready PID" and wait for a line on stdin before the warm-up, so a tracer can
 * attach first. The warm-up pairs (default 20000) are not timed: the first hits of a probe
 * map the kernel's trampolines and fault pages in. Prints one JSON line at the end.
 *
 * ns_per_pair is the median over chunks of CHUNK pairs: on a shared machine a chunk in which
 * the thread lost its CPU (to another tenant, or to the tracer's consumer when cores are
 * few) is an outlier, not the cost of a call; mean_ns_per_pair keeps everything. On a machine
 * so loaded that nearly every chunk loses its CPU, the thread's CPU time per pair says more:
 * cpu_ns_per_pair is its median chunk, cpu_p10_ns_per_pair its fastest tenth (a shared CPU
 * only ever adds: caches and TLBs refilled after another tenant ran). p10_ns_per_pair is the
 * wall-clock chunk at the 10th percentile: the cost with the least interference, for comparing
 * two tracers' small difference on a loaded machine.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dlfcn.h>
#include <sys/resource.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static unsigned long long work_ns;

static unsigned long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* -W: the process's own work between pairs, in CPU time (a shared CPU stretches wall time). */
static void work(void)
{
	unsigned long long end;

	if (!work_ns)
		return;
	end = cpu_ns() + work_ns;
	while (cpu_ns() < end)
		;
}

/* One call site for every pair, as a hot loop in an inference server has. */
static __attribute__((noinline)) int pair(size_t size)
{
#ifdef PAIRLOOP_TORCH
	(void)size;
	return -1;
#else
	void *p;

	if (cudaMalloc(&p, size) || cudaFree(p))
		return -1;
	return 0;
#endif
}

/* --torch: PyTorch's allocator (NativeCachingAllocator::allocate, local_raw_delete). */
static void *(*torch_alloc)(size_t size, int device, int64_t stream);
static void (*torch_free)(void *ptr);

static __attribute__((noinline)) int torch_pair(size_t size)
{
	void *p = torch_alloc(size, 0, 0);

	if (!p)
		return -1;
	torch_free(p);
	return 0;
}

static int pairs(unsigned long long n, size_t size)
{
	if (torch_alloc) {
		for (unsigned long long i = 0; i < n; i++) {
			if (torch_pair(size))
				return -1;
			work();
		}
		return 0;
	}
	for (unsigned long long i = 0; i < n; i++) {
		if (pair(size))
			return -1;
		work();
	}
	return 0;
}

static int load_torch(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	if (h) {
		torch_alloc = (void *(*)(size_t, int, int64_t))dlsym(h, "c10_cuda_alloc");
		torch_free = (void (*)(void *))dlsym(h, "c10_cuda_free");
	}
	if (!torch_alloc || !torch_free) {
		fprintf(stderr, "pairloop: %s: %s\n", lib, dlerror());
		return -1;
	}
	return 0;
}

#define CHUNK 1000

static int cmp_u64(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

/*
 * n pairs in chunks; *median_ns: the median chunk's ns per pair, *median_cpu_ns: the same in
 * the thread's CPU time, which a chunk that lost its CPU does not stretch (a loaded machine
 * preempts nearly every chunk) and which leaves out the time a hypervisor stole; *p10_ns,
 * *fast_cpu_ns: the 10th-percentile chunks.
 */
static int timed_pairs(unsigned long long n, size_t size, double *median_ns, double *p10_ns,
		       double *median_cpu_ns, double *fast_cpu_ns)
{
	unsigned long long nr = (n + CHUNK - 1) / CHUNK, i;
	unsigned long long *ns = calloc(nr ? 2 * nr : 2, sizeof(*ns)), *cpu = ns + nr;

	if (!ns)
		return -1;
	for (i = 0; i < nr; i++) {
		unsigned long long k = i + 1 < nr || !(n % CHUNK) ? CHUNK : n % CHUNK;
		unsigned long long t0 = now_ns(), c0 = cpu_ns();

		if (pairs(k, size)) {
			free(ns);
			return -1;
		}
		/* per pair, scaled to a full chunk so a short last chunk compares */
		ns[i] = (now_ns() - t0) * CHUNK / k;
		cpu[i] = (cpu_ns() - c0) * CHUNK / k;
	}
	qsort(ns, nr, sizeof(*ns), cmp_u64);
	qsort(cpu, nr, sizeof(*cpu), cmp_u64);
	*median_ns = nr ? (double)ns[nr / 2] / CHUNK : 0;
	*median_cpu_ns = nr ? (double)cpu[nr / 2] / CHUNK : 0;
	*fast_cpu_ns = nr ? (double)cpu[nr / 10] / CHUNK : 0;
	*p10_ns = nr ? (double)ns[nr / 10] / CHUNK : 0;
	free(ns);
	return 0;
}

static void wait_line(void)
{
	char c;

	while (read(STDIN_FILENO, &c, 1) == 1 && c != '\n')
		;
}

/*
 * CALLS_PER_S for SECONDS: batches of 64 pairs, each started no earlier than its due time.
 * A batch that is late starts at once: the loop catches up instead of lowering the rate.
 */
static int paced(double calls_per_s, double seconds, size_t size, unsigned long long *done)
{
	const unsigned long long batch = 64;
	double ns_per_batch = 2.0 * batch * 1e9 / calls_per_s;
	unsigned long long t0 = now_ns(), end = t0 + (unsigned long long)(seconds * 1e9), b;

	for (b = 0;; b++) {
		unsigned long long due = t0 + (unsigned long long)(b * ns_per_batch), t = now_ns();

		if (t >= end)
			break;
		if (due > t) {
			struct timespec ts = {.tv_sec = due / 1000000000ULL,
					      .tv_nsec = due % 1000000000ULL};

			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
		if (pairs(batch, size))
			return -1;
		*done += batch;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"sync", no_argument, NULL, 'S'}, {"torch", required_argument, NULL, 'T'}, {}};
	unsigned long long n = 200000, warmup = 20000, done = 0, t0, t1;
	double rate = 0, seconds = 0, median_ns = 0, p10_ns = 0, median_cpu_ns = 0, fast_cpu_ns = 0;
	size_t size = 4096;
	struct rusage ru;
	int sync = 0, opt;

	while ((opt = getopt_long(argc, argv, "n:w:s:r:d:W:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'S':
			sync = 1;
			break;
		case 'T':
			if (load_torch(optarg))
				return 1;
			break;
		case 'n':
			n = strtoull(optarg, NULL, 0);
			break;
		case 'w':
			warmup = strtoull(optarg, NULL, 0);
			break;
		case 's':
			size = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			rate = strtod(optarg, NULL);
			break;
		case 'd':
			seconds = strtod(optarg, NULL);
			break;
		case 'W':
			work_ns = strtoull(optarg, NULL, 0) * 1000;
			break;
		default:
			fprintf(stderr,
				"usage: pairloop [--sync] [--torch LIB] [-n PAIRS] [-w WARMUP] "
				"[-s SIZE] [-r CALLS_PER_S -d SECONDS] [-W US]\n");
			return 2;
		}
	}
	if (!size || (rate > 0) != (seconds > 0)) {
		fprintf(stderr, "pairloop: SIZE must be > 0; -r and -d go together\n");
		return 2;
	}
	if (sync) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		wait_line();
	}
	if (pairs(warmup, size))
		goto fail;
	t0 = now_ns();
	if (rate > 0) {
		if (paced(rate, seconds, size, &done))
			goto fail;
	} else {
		if (timed_pairs(n, size, &median_ns, &p10_ns, &median_cpu_ns, &fast_cpu_ns))
			goto fail;
		done = n;
	}
	t1 = now_ns();
	if (!median_ns)
		median_ns = p10_ns = done ? (double)(t1 - t0) / done : 0.0;
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"pairs\":%llu,\"warmup\":%llu,\"ns_per_pair\":%.1f,\"p10_ns_per_pair\":%.1f,"
	       "\"mean_ns_per_pair\":%.1f,"
	       "\"cpu_ns_per_pair\":%.1f,\"cpu_p10_ns_per_pair\":%.1f,\"elapsed_s\":%.4f,\"calls_"
	       "per_s\":%.0f,\"cpu_s\":%.6f}\n",
	       done, warmup, median_ns, p10_ns, done ? (double)(t1 - t0) / done : 0.0,
	       median_cpu_ns, fast_cpu_ns, (t1 - t0) / 1e9, 2.0 * done * 1e9 / (double)(t1 - t0),
	       ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		   (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	return 0;
fail:
	fprintf(stderr, "pairloop: a call failed\n");
	return 1;
}
