// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * static_cudart [CODE]
 *
 * Built by nvcc with its default, static cudart: the executable carries its own LOCAL
 * cudaMalloc in .symtab and never loads libcudart.so, so gpuleak must find the runtime
 * inside the executable. static_malloc: 2 x cudaMalloc (4096, 8192 bytes); static_free:
 * cudaFree of the first result (NULL when it failed). Codes go to stderr as
 * "<api> <size> -> <code>".
 * Without CODE every cudaMalloc must fail (any non-zero code; 35 without a driver) and the
 * cudaFree result is only reported. With CODE every call must return CODE (0 on a GPU
 * machine: then 8192 bytes stay live at static_malloc).
 */
#include <cuda_runtime_api.h>
#include "scenario.h"

static long want_rc = -1; /* -1: any error */

static void check(const char *api, size_t size, cudaError_t rc, bool must_match)
{
	fprintf(stderr, "%s %zu -> %d\n", api, size, (int)rc);
	if (!must_match)
		return;
	if (want_rc < 0 ? rc == cudaSuccess : (long)rc != want_rc) {
		fprintf(stderr, "static_cudart: %s returned %d, expected %s%ld\n", api, (int)rc,
			want_rc < 0 ? "an error, not " : "", want_rc < 0 ? 0L : want_rc);
		exit(1);
	}
}

/* C linkage: site names stay "static_malloc", not "_ZL13static_mallocPPv". */
extern "C" {

static SCENARIO_SITE void static_malloc(void **bufs)
{
	for (int i = 0; i < 2; i++) {
		size_t size;

		SCENARIO_OPAQUE(i);
		size = 4096 * (i + 1);
		check("cudaMalloc", size, cudaMalloc(&bufs[i], size), true);
	}
}

static SCENARIO_SITE void static_free(void *p)
{
	check("cudaFree", 0, cudaFree(p), want_rc >= 0);
}

} /* extern "C" */

int main(int argc, char **argv)
{
	void *bufs[2] = {NULL, NULL};

	if (argc > 2) {
		fprintf(stderr, "usage: static_cudart [CODE]\n");
		return 2;
	}
	if (argc == 2)
		want_rc = (long)scenario_bytes(argv[1], "CODE");
	scenario_ready();
	static_malloc(bufs);
	static_free(bufs[0]);
	scenario_done();
	return 0;
}
