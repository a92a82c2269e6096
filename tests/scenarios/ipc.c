// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ipc MODE
 *
 * Memory shared between two processes, the way RL weight-sync code and PyTorch's
 * expandable segments share it. The exporter (this process) makes memory and a handle for
 * it, then runs a second process, the importer (itself again, by fork + exec of
 * its own file, so CUDA starts afresh there), hands it the handle on its command line,
 * and waits for it. Trace both: gpuleak run --follow.
 *
 * Exporter (every mode but vmm): alloc_weights: cudaMalloc 4 MiB, filled with 0x5a;
 * export_weights: cudaIpcGetMemHandle; after the importer exits, free_weights: cudaFree.
 * Nothing is left in the exporter.
 *
 * weights  importer: open_weights: cudaIpcOpenMemHandle, twice (the same pointer back, one
 *          more reference: CUDA's documented behaviour), reads 0x5a through it,
 *          close_weights: cudaIpcCloseMemHandle once. Left at the importer's exit: one
 *          mapping, opened 2 times, closed 1 time, 1 reference: the exporter's 4 MiB,
 *          none of it the importer's own memory.
 * clean    importer: open_weights twice, close_weights twice. Nothing left.
 * driver   importer: the same as weights through the driver: drv_open_weights:
 *          cuIpcOpenMemHandle_v2 twice, drv_close_weights: cuIpcCloseMemHandle once.
 * self     the exporter opens its own handle (open_own): cudaIpcOpenMemHandle fails with
 *          cudaErrorDeviceUninitialized (201, invalid device context), as CUDA refuses
 *          it; no importer.
 * vmm      exporter: make_segment: cuMemCreate 2 MiB (requestedHandleTypes POSIX file
 *          descriptor), export_segment: cuMemExportToShareableHandle (a file descriptor the
 *          importer inherits), release_segment: cuMemRelease after the importer exits.
 *          Importer: import_segment: cuMemImportFromShareableHandle, map_segment:
 *          cuMemAddressReserve + cuMemMap (2 MiB) + cuMemSetAccess, reads the exporter's
 *          0x5a, unmap_segment: cuMemUnmap + cuMemAddressFree; never cuMemRelease. Left at
 *          the importer's exit: one imported handle, 2 MiB (its size from the mapping), none
 *          of it the importer's own memory.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/wait.h>
#include "scenario.h"

#define MIB (1UL << 20)

static void hex_of(const void *p, size_t n, char *out)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void hex_to(const char *s, void *p, size_t n)
{
	unsigned char *b = p;
	size_t i;

	if (strlen(s) != 2 * n) {
		fprintf(stderr, "ipc: bad handle '%s'\n", s);
		exit(2);
	}
	for (i = 0; i < n; i++) {
		unsigned int v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			exit(2);
		b[i] = (unsigned char)v;
	}
}

/* Runs the importer with its mode and the handle, and waits: it must exit 0. */
static void run_importer(const char *mode, const char *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		perror("ipc: fork");
		exit(1);
	}
	if (!pid) {
		char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (n <= 0)
			_exit(127);
		self[n] = 0;
		execl(self, "ipc", mode, arg, (char *)NULL);
		perror("ipc: exec");
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "ipc: importer %s failed (status %d)\n", mode, status);
		exit(1);
	}
}

/* --- the exporter --- */

static SCENARIO_SITE void *alloc_weights(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 4 * MIB));
	SCENARIO_OK(cudaMemset(p, 0x5a, 4 * MIB));
	return p;
}

static SCENARIO_SITE void export_weights(void *p, cudaIpcMemHandle_t *h)
{
	SCENARIO_OK(cudaIpcGetMemHandle(h, p));
}

static SCENARIO_SITE void free_weights(void *p)
{
	SCENARIO_OK(cudaFree(p));
}

static SCENARIO_SITE void open_own(cudaIpcMemHandle_t h)
{
	void *p;

	SCENARIO_EXPECT(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess),
			cudaErrorDeviceUninitialized);
}

static SCENARIO_SITE CUmemGenericAllocationHandle make_segment(void)
{
	CUmemAllocationProp prop = {0};
	CUmemGenericAllocationHandle h;

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	SCENARIO_OK(cuMemCreate(&h, 2 * MIB, &prop, 0));
	return h;
}

static SCENARIO_SITE int export_segment(CUmemGenericAllocationHandle h)
{
	int fd = -1;

	SCENARIO_OK(
	    cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
	return fd;
}

static SCENARIO_SITE void release_segment(CUmemGenericAllocationHandle h)
{
	SCENARIO_OK(cuMemRelease(h));
}

/* The segment's pages, filled through a mapping of the exporter's own. */
static void fill_segment(CUmemGenericAllocationHandle h)
{
	CUmemAccessDesc rw = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
			      .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	CUdeviceptr va;

	SCENARIO_OK(cuMemAddressReserve(&va, 2 * MIB, 0, 0, 0));
	SCENARIO_OK(cuMemMap(va, 2 * MIB, 0, h, 0));
	SCENARIO_OK(cuMemSetAccess(va, 2 * MIB, &rw, 1));
	SCENARIO_OK(cuMemsetD8(va, 0x5a, 2 * MIB));
	SCENARIO_OK(cuMemUnmap(va, 2 * MIB));
	SCENARIO_OK(cuMemAddressFree(va, 2 * MIB));
}

static void exporter(const char *mode)
{
	char hex[2 * sizeof(cudaIpcMemHandle_t) + 1];
	cudaIpcMemHandle_t h;
	void *w;

	SCENARIO_OK(cudaSetDevice(0));
	if (!strcmp(mode, "vmm")) {
		CUmemGenericAllocationHandle seg;
		char arg[16];
		int fd;

		scenario_ready();
		seg = make_segment();
		fill_segment(seg);
		fd = export_segment(seg);
		/* The importer inherits the descriptor, as it would receive it over a socket. */
		fcntl(fd, F_SETFD, 0);
		snprintf(arg, sizeof(arg), "%d", fd);
		run_importer("import-vmm", arg);
		close(fd);
		release_segment(seg);
		scenario_done();
		return;
	}
	scenario_ready();
	w = alloc_weights();
	export_weights(w, &h);
	if (!strcmp(mode, "self")) {
		open_own(h);
	} else {
		hex_of(&h, sizeof(h), hex);
		run_importer(!strcmp(mode, "weights") ? "import-weights"
			     : !strcmp(mode, "clean") ? "import-clean"
						      : "import-driver",
			     hex);
	}
	free_weights(w);
	scenario_done();
}

/* --- the importer --- */

static SCENARIO_SITE void *open_weights(cudaIpcMemHandle_t h)
{
	void *p;

	SCENARIO_OK(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
	return p;
}

static SCENARIO_SITE void close_weights(void *p)
{
	SCENARIO_OK(cudaIpcCloseMemHandle(p));
}

static SCENARIO_SITE CUdeviceptr drv_open_weights(CUipcMemHandle h)
{
	CUdeviceptr p;

	SCENARIO_OK(cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
	return p;
}

static SCENARIO_SITE void drv_close_weights(CUdeviceptr p)
{
	SCENARIO_OK(cuIpcCloseMemHandle(p));
}

static SCENARIO_SITE CUmemGenericAllocationHandle import_segment(int fd)
{
	CUmemGenericAllocationHandle h;

	SCENARIO_OK(cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fd,
						   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
	return h;
}

static SCENARIO_SITE CUdeviceptr map_segment(CUmemGenericAllocationHandle h)
{
	CUmemAccessDesc rw = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
			      .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	CUdeviceptr va;

	SCENARIO_OK(cuMemAddressReserve(&va, 2 * MIB, 0, 0, 0));
	SCENARIO_OK(cuMemMap(va, 2 * MIB, 0, h, 0));
	SCENARIO_OK(cuMemSetAccess(va, 2 * MIB, &rw, 1));
	return va;
}

static SCENARIO_SITE void unmap_segment(CUdeviceptr va)
{
	SCENARIO_OK(cuMemUnmap(va, 2 * MIB));
	SCENARIO_OK(cuMemAddressFree(va, 2 * MIB));
}

static void expect_5a(const void *p)
{
	if (((const unsigned char *)p)[4095] != 0x5a) {
		fprintf(stderr, "ipc: the importer does not see the exporter's memory\n");
		exit(1);
	}
}

static void importer(const char *mode, const char *arg)
{
	cudaIpcMemHandle_t h;
	void *a, *b;

	SCENARIO_OK(cudaSetDevice(0));
	if (!strcmp(mode, "import-vmm")) {
		CUdeviceptr va = map_segment(import_segment(atoi(arg)));

		expect_5a((const void *)va);
		unmap_segment(va);
		return;
	}
	hex_to(arg, &h, sizeof(h));
	if (!strcmp(mode, "import-driver")) {
		CUipcMemHandle dh;
		CUdeviceptr x, y;

		memcpy(&dh, &h, sizeof(dh));
		x = drv_open_weights(dh);
		y = drv_open_weights(dh);
		if (x != y)
			exit(1);
		expect_5a((const void *)x);
		drv_close_weights(x);
		return;
	}
	a = open_weights(h);
	b = open_weights(h);
	if (a != b) {
		fprintf(stderr, "ipc: the same handle opened twice gave two pointers\n");
		exit(1);
	}
	expect_5a(a);
	close_weights(a);
	if (!strcmp(mode, "import-clean"))
		close_weights(b);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strncmp(argv[1], "import-", 7)) {
		importer(argv[1], argv[2]);
		return 0;
	}
	if (argc != 2 ||
	    (strcmp(argv[1], "weights") && strcmp(argv[1], "clean") && strcmp(argv[1], "driver") &&
	     strcmp(argv[1], "self") && strcmp(argv[1], "vmm"))) {
		fprintf(stderr, "usage: ipc weights|clean|driver|self|vmm\n");
		return 2;
	}
	exporter(argv[1]);
	return 0;
}
