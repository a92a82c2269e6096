// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * arrays MODE
 *
 * CUDA arrays: bytes from the channel format and the extent (texels x element size, over
 * the mip levels of a mipmapped array).
 *
 * leak    texture_2d: cudaMallocArray float4 (16 bytes) 256 x 128 = 524288 bytes, kept;
 *         volume: cudaMalloc3DArray uchar1 (1 byte) 64 x 64 x 16 = 65536 bytes, freed by
 *         free_volume: cudaFreeArray; mip_chain: cudaMallocMipmappedArray float (4 bytes)
 *         128 x 128, 4 levels = (16384 + 4096 + 1024 + 256) x 4 = 87040 bytes, kept;
 *         bad_format: cudaMallocArray with a 3-channel format, which fails with
 *         cudaErrorInvalidChannelDescriptor (20). At "done": 611328 bytes in 2 arrays on
 *         device 0, 3 allocations, 1 free, 1 failed call.
 * clean   texture_2d and mip_chain, then free_texture: cudaFreeArray, free_mips:
 *         cudaFreeMipmappedArray. Nothing left.
 * driver  drv_texture_2d: cuArrayCreate_v2 HALF x 2 (4 bytes) 100 x 50 = 20000 bytes, kept;
 *         drv_volume: cuArray3DCreate_v2 FLOAT x 1 32 x 32 x 8 = 32768 bytes, freed by
 *         drv_free_volume: cuArrayDestroy; drv_mip_chain: cuMipmappedArrayCreate INT8 x 4
 *         64 x 64, 3 levels = (4096 + 1024 + 256) x 4 = 21504 bytes, kept. At "done": 41504
 *         bytes in 2 arrays (their context's).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

static SCENARIO_SITE cudaArray_t texture_2d(void)
{
	struct cudaChannelFormatDesc d = {32, 32, 32, 32, cudaChannelFormatKindFloat};
	cudaArray_t a;

	SCENARIO_OK(cudaMallocArray(&a, &d, 256, 128, cudaArrayDefault));
	return a;
}

static SCENARIO_SITE cudaArray_t volume(void)
{
	struct cudaChannelFormatDesc d = {8, 0, 0, 0, cudaChannelFormatKindUnsigned};
	struct cudaExtent e = {64, 64, 16};
	cudaArray_t a;

	SCENARIO_OK(cudaMalloc3DArray(&a, &d, e, cudaArrayDefault));
	return a;
}

static SCENARIO_SITE void free_volume(cudaArray_t a)
{
	SCENARIO_OK(cudaFreeArray(a));
}

static SCENARIO_SITE void free_texture(cudaArray_t a)
{
	SCENARIO_OK(cudaFreeArray(a));
}

static SCENARIO_SITE cudaMipmappedArray_t mip_chain(void)
{
	struct cudaChannelFormatDesc d = {32, 0, 0, 0, cudaChannelFormatKindFloat};
	struct cudaExtent e = {128, 128, 0};
	cudaMipmappedArray_t m;

	SCENARIO_OK(cudaMallocMipmappedArray(&m, &d, e, 4, cudaArrayDefault));
	return m;
}

static SCENARIO_SITE void free_mips(cudaMipmappedArray_t m)
{
	SCENARIO_OK(cudaFreeMipmappedArray(m));
}

static SCENARIO_SITE void bad_format(void)
{
	struct cudaChannelFormatDesc d = {8, 8, 8, 0, cudaChannelFormatKindUnsigned};
	cudaArray_t a;

	SCENARIO_EXPECT(cudaMallocArray(&a, &d, 16, 16, cudaArrayDefault),
			cudaErrorInvalidChannelDescriptor);
}

static SCENARIO_SITE CUarray drv_texture_2d(void)
{
	CUDA_ARRAY_DESCRIPTOR d = {
	    .Width = 100, .Height = 50, .Format = CU_AD_FORMAT_HALF, .NumChannels = 2};
	CUarray a;

	SCENARIO_OK(cuArrayCreate(&a, &d));
	return a;
}

static SCENARIO_SITE CUarray drv_volume(void)
{
	CUDA_ARRAY3D_DESCRIPTOR d = {
	    .Width = 32, .Height = 32, .Depth = 8, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
	CUarray a;

	SCENARIO_OK(cuArray3DCreate(&a, &d));
	return a;
}

static SCENARIO_SITE void drv_free_volume(CUarray a)
{
	SCENARIO_OK(cuArrayDestroy(a));
}

static SCENARIO_SITE CUmipmappedArray drv_mip_chain(void)
{
	CUDA_ARRAY3D_DESCRIPTOR d = {
	    .Width = 64, .Height = 64, .Format = CU_AD_FORMAT_SIGNED_INT8, .NumChannels = 4};
	CUmipmappedArray m;

	SCENARIO_OK(cuMipmappedArrayCreate(&m, &d, 3));
	return m;
}

int main(int argc, char **argv)
{
	scenario_usage(argc, 2, "arrays leak|clean|driver");
	SCENARIO_OK(cudaSetDevice(0));
	scenario_ready();
	if (!strcmp(argv[1], "leak")) {
		texture_2d();
		free_volume(volume());
		mip_chain();
		bad_format();
	} else if (!strcmp(argv[1], "clean")) {
		cudaArray_t t = texture_2d();
		cudaMipmappedArray_t m = mip_chain();

		free_texture(t);
		free_mips(m);
	} else if (!strcmp(argv[1], "driver")) {
		drv_texture_2d();
		drv_free_volume(drv_volume());
		drv_mip_chain();
	} else {
		fprintf(stderr, "arrays: unknown mode %s\n", argv[1]);
		return 2;
	}
	scenario_done();
	return 0;
}
