// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * hostreg MODE
 *
 * Host memory pinned by registration (llama.cpp's host buffers, PyTorch's pinned allocator
 * with pinned_use_cuda_host_register): memory the program has, page-locked until
 * unregistered. The buffers come from mmap (set-up, before "ready": untraced without
 * --libc).
 *
 * leak    register_staging: cudaHostRegister 1 MiB, never unregistered; register_temp +
 *         unregister_temp: cudaHostRegister / cudaHostUnregister of 64 KiB; register_twice:
 *         cudaHostRegister of the staging buffer again, which fails with
 *         cudaErrorHostMemoryAlreadyRegistered (712). At "done": 1 MiB of registered host
 *         memory at register_staging (device -1), 2 registrations made, 1 released, 1 failed.
 * clean   register_staging, then unregister_staging: nothing left.
 * driver  the same as leak through the driver: drv_register_staging: cuMemHostRegister_v2
 *         1 MiB (kept; its context's), drv_register_temp + drv_unregister_temp 64 KiB,
 *         drv_register_twice fails with CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED (712).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <sys/mman.h>
#include "scenario.h"

#define MIB (1UL << 20)

static SCENARIO_SITE void register_staging(void *p)
{
	SCENARIO_OK(cudaHostRegister(p, MIB, cudaHostRegisterDefault));
}

static SCENARIO_SITE void unregister_staging(void *p)
{
	SCENARIO_OK(cudaHostUnregister(p));
}

static SCENARIO_SITE void register_temp(void *p)
{
	SCENARIO_OK(cudaHostRegister(p, 65536, cudaHostRegisterMapped));
}

static SCENARIO_SITE void unregister_temp(void *p)
{
	SCENARIO_OK(cudaHostUnregister(p));
}

static SCENARIO_SITE void register_twice(void *p)
{
	SCENARIO_EXPECT(cudaHostRegister(p, MIB, cudaHostRegisterDefault),
			cudaErrorHostMemoryAlreadyRegistered);
}

static SCENARIO_SITE void drv_register_staging(void *p)
{
	SCENARIO_OK(cuMemHostRegister(p, MIB, 0));
}

static SCENARIO_SITE void drv_register_temp(void *p)
{
	SCENARIO_OK(cuMemHostRegister(p, 65536, CU_MEMHOSTREGISTER_DEVICEMAP));
}

static SCENARIO_SITE void drv_unregister_temp(void *p)
{
	SCENARIO_OK(cuMemHostUnregister(p));
}

static SCENARIO_SITE void drv_register_twice(void *p)
{
	SCENARIO_EXPECT(cuMemHostRegister(p, MIB, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
}

static void *host_buffer(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("hostreg: mmap");
		exit(1);
	}
	return p;
}

int main(int argc, char **argv)
{
	void *staging, *temp;

	scenario_usage(argc, 2, "hostreg leak|clean|driver");
	staging = host_buffer(MIB);
	temp = host_buffer(65536);
	SCENARIO_OK(cudaSetDevice(0));
	scenario_ready();
	if (!strcmp(argv[1], "leak")) {
		register_staging(staging);
		register_temp(temp);
		unregister_temp(temp);
		register_twice(staging);
	} else if (!strcmp(argv[1], "clean")) {
		register_staging(staging);
		unregister_staging(staging);
	} else if (!strcmp(argv[1], "driver")) {
		drv_register_staging(staging);
		drv_register_temp(temp);
		drv_unregister_temp(temp);
		drv_register_twice(staging);
	} else {
		fprintf(stderr, "hostreg: unknown mode %s\n", argv[1]);
		return 2;
	}
	scenario_done();
	return 0;
}
