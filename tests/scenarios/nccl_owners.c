// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nccl_owners MODE
 *
 * The communicator makers beside ncclCommInitRank: ncclCommInitRankScalable,
 * ncclCommShrink and NCCL 2.28's device communicators, over the stand-in libnccl.so.2.
 * Set-up, before "ready": cudaSetDevice(0). A communicator's memory ("C's memory") is what
 * tests/scenarios/nccl_comm.c lists: 4 x cuMemAlloc_v2 1 MiB, cuMemHostAlloc 64 KiB, one
 * VMM handle of 2 MiB mapped once: 6291456 device bytes + 65536 host bytes, allocated
 * inside the call that makes it.
 *
 * scalable  scalable_init: ncclCommInitRankScalable(nranks 1, rank 0, 2 ids) -> C, never
 *           destroyed. Left: C's memory, allocated inside ncclCommInitRankScalable.
 * shrink    scalable_init -> P; shrink: ncclCommShrink(P, no rank excluded) -> Q;
 *           destroy P. Left: Q's memory, allocated inside ncclCommShrink at shrink.
 * devcomm   scalable_init -> C; dev_create: ncclDevCommCreate(C, one 3 MiB resource) -> D1
 *           (inside: cuMemAlloc_v2 64 KiB, the window table, and a 4 MiB VMM handle: 3 MiB
 *           rounded to the 2 MiB granularity); dev_create -> D2; dev_destroy D1: its memory
 *           goes; destroy C. Left: D2's 64 KiB + 4 MiB (device 0), D2's own (not C's), and
 *           C destroyed with nothing left of its own.
 */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <nccl_device/core.h>
#include "scenario.h"

#define MIB (1UL << 20)

/* sizeof(struct ncclDevComm) in NCCL 2.28.9 (nccl_device/impl/comm__types.h: C++ only). */
#define DEVCOMM_BYTES 200

struct devcomm_storage {
	_Alignas(16) unsigned char b[DEVCOMM_BYTES];
};

static SCENARIO_SITE ncclComm_t scalable_init(void)
{
	ncclUniqueId ids[2];
	ncclComm_t c;

	SCENARIO_OK(ncclGetUniqueId(&ids[0]));
	SCENARIO_OK(ncclGetUniqueId(&ids[1]));
	SCENARIO_OK(ncclCommInitRankScalable(&c, 1, 0, 2, ids, NULL));
	return c;
}

static SCENARIO_SITE ncclComm_t shrink(ncclComm_t parent)
{
	ncclComm_t c;

	SCENARIO_OK(ncclCommShrink(parent, NULL, 0, &c, NULL, NCCL_SHRINK_DEFAULT));
	return c;
}

static SCENARIO_SITE void destroy(ncclComm_t c)
{
	SCENARIO_OK(ncclCommDestroy(c));
}

static SCENARIO_SITE void dev_create(ncclComm_t c, struct devcomm_storage *d)
{
	ncclDevResourceRequirements_t res = {0};
	ncclDevCommRequirements_t reqs = {0};

	res.bufferSize = 3 * MIB;
	res.bufferAlign = 4096;
	reqs.resourceRequirementsList = &res;
	SCENARIO_OK(ncclDevCommCreate(c, &reqs, (ncclDevComm_t *)d));
}

static SCENARIO_SITE void dev_destroy(ncclComm_t c, const struct devcomm_storage *d)
{
	SCENARIO_OK(ncclDevCommDestroy(c, (const ncclDevComm_t *)d));
}

int main(int argc, char **argv)
{
	struct devcomm_storage d1, d2;
	ncclComm_t c;

	scenario_usage(argc, 2, "nccl_owners scalable|shrink|devcomm");
	SCENARIO_OK(cudaSetDevice(0));
	scenario_ready();
	if (!strcmp(argv[1], "scalable")) {
		scalable_init();
	} else if (!strcmp(argv[1], "shrink")) {
		c = scalable_init();
		shrink(c);
		destroy(c);
	} else if (!strcmp(argv[1], "devcomm")) {
		c = scalable_init();
		dev_create(c, &d1);
		dev_create(c, &d2);
		dev_destroy(c, &d1);
		destroy(c);
	} else {
		fprintf(stderr, "nccl_owners: unknown mode %s\n", argv[1]);
		return 2;
	}
	scenario_done();
	return 0;
}
