// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * realnccl [ID_RC INIT_RC MEMALLOC_RC MEMFREE_RC]
 *
 * Linked against NVIDIA's real libnccl.so.2 (NCCL 2.28.9, through DT_RPATH; not the
 * stand-in): gpuleak must attach to code nobody here wrote, where every ncclX is a WEAK
 * alias of the GLOBAL pncclX at the same address. Each call sits at its own site:
 *   real_get_unique_id   ncclGetUniqueId
 *   real_comm_init_rank  ncclCommInitRank(nranks 1, rank 0) on the current device (0)
 *   real_mem_alloc       ncclMemAlloc(1 MiB)
 *   real_mem_free_bad    ncclMemFree of a host address, refused (on a machine with a GPU
 *                        by ncclCuMemFree's cuMemRetainAllocationHandle; without a driver
 *                        earlier, by NCCL's cudaGetDevice)
 * and, only where those succeeded (a machine with a GPU), real_comm_destroy
 * (ncclCommDestroy) and real_mem_free (ncclMemFree). Each code is printed to stderr as
 * "<api> -> <code>"; any code other than the expected one ends the program with status 1.
 * Defaults, what NCCL answers on a machine without an NVIDIA driver: 0 1 1 1 (ncclSuccess;
 * ncclUnhandledCudaError thrice). There, nothing is allocated: a tracer sees 4 calls, 2
 * allocations failed, one free of an address it never saw allocated, nothing live at "done"
 * (NCCL's own static cudart inside libnccl.so.2 finds no driver). On a machine with a GPU
 * pass 0 0 0 1: nothing is left either.
 */
#include <nccl.h>
#include "scenario.h"

static long want[4] = {ncclSuccess, ncclUnhandledCudaError, ncclUnhandledCudaError,
		       ncclUnhandledCudaError};

static ncclResult_t check(const char *api, ncclResult_t rc, long expect)
{
	fprintf(stderr, "%s -> %d\n", api, (int)rc);
	if ((long)rc != expect) {
		fprintf(stderr, "realnccl: %s returned %d, expected %ld\n", api, (int)rc, expect);
		exit(1);
	}
	return rc;
}

static SCENARIO_SITE ncclResult_t real_get_unique_id(ncclUniqueId *id)
{
	return check("ncclGetUniqueId", ncclGetUniqueId(id), want[0]);
}

static SCENARIO_SITE ncclResult_t real_comm_init_rank(ncclComm_t *c, ncclUniqueId id)
{
	return check("ncclCommInitRank", ncclCommInitRank(c, 1, id, 0), want[1]);
}

static SCENARIO_SITE ncclResult_t real_mem_alloc(void **p)
{
	return check("ncclMemAlloc", ncclMemAlloc(p, 1UL << 20), want[2]);
}

static SCENARIO_SITE void real_mem_free_bad(void)
{
	static char host[64];

	check("ncclMemFree", ncclMemFree(host), want[3]);
}

static SCENARIO_SITE void real_comm_destroy(ncclComm_t c)
{
	check("ncclCommDestroy", ncclCommDestroy(c), ncclSuccess);
}

static SCENARIO_SITE void real_mem_free(void *p)
{
	check("ncclMemFree", ncclMemFree(p), ncclSuccess);
}

int main(int argc, char **argv)
{
	ncclComm_t comm = NULL;
	ncclUniqueId id;
	void *p = NULL;
	int i;

	if (argc != 1 && argc != 5) {
		fprintf(stderr, "usage: realnccl [ID_RC INIT_RC MEMALLOC_RC MEMFREE_RC]\n");
		return 2;
	}
	for (i = 1; i < argc; i++)
		want[i - 1] = (long)scenario_bytes(argv[i], "RC");
	memset(&id, 0, sizeof(id));
	scenario_ready();
	real_get_unique_id(&id);
	if (real_comm_init_rank(&comm, id) == ncclSuccess)
		real_comm_destroy(comm);
	if (real_mem_alloc(&p) == ncclSuccess)
		real_mem_free(p);
	real_mem_free_bad();
	scenario_done();
	return 0;
}
