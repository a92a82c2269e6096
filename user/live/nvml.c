// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include "lib/log.h"
#include "live/nvml.h"

/* The few NVML types used, as nvml.h declares them (no header ships on this machine). */
typedef void *nvml_device;

struct nvml_memory {
	unsigned long long total, free, used;
};

struct nvml_process { /* nvmlProcessInfo_v2_t / _v3_t */
	unsigned int pid;
	unsigned long long used_gpu_memory;
	unsigned int gpu_instance_id;
	unsigned int compute_instance_id;
};

#define NVML_SUCCESS		     0
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define MAX_PROCS		     256

int nvml__snapshot(pid_t pid, struct gl_devmem_rec *out, int max)
{
	int (*init)(void), (*shutdown)(void), (*count)(unsigned int *);
	int (*handle)(unsigned int, nvml_device *);
	int (*meminfo)(nvml_device, struct nvml_memory *);
	int (*procs)(nvml_device, unsigned int *, struct nvml_process *);
	static struct nvml_process infos[MAX_PROCS];
	unsigned int n = 0, i, j;
	void *lib;
	int got = 0;

	lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		pr_info("NVML not available (%s): device size unknown unless --device-mem\n",
			dlerror());
		return 0;
	}
	*(void **)&init = dlsym(lib, "nvmlInit_v2");
	*(void **)&shutdown = dlsym(lib, "nvmlShutdown");
	*(void **)&count = dlsym(lib, "nvmlDeviceGetCount_v2");
	*(void **)&handle = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&meminfo = dlsym(lib, "nvmlDeviceGetMemoryInfo");
	*(void **)&procs = dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
	if (!procs)
		*(void **)&procs = dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2");
	if (!init || !shutdown || !count || !handle || !meminfo) {
		pr_warn("libnvidia-ml.so.1 lacks the functions gpuleak needs; ignoring it\n");
		goto cleanup;
	}
	if (init() != NVML_SUCCESS) {
		pr_info("NVML did not initialize (no GPU?)\n");
		goto cleanup;
	}
	if (count(&n) != NVML_SUCCESS)
		n = 0;
	/* NVML numbers devices by PCI order; CUDA's default order can differ (docs/timelines.md). */
	for (i = 0; i < n && got < max; i++) {
		struct gl_devmem_rec *d = &out[got];
		struct nvml_memory m;
		unsigned int np = MAX_PROCS;
		nvml_device dev;

		if (handle(i, &dev) != NVML_SUCCESS || meminfo(dev, &m) != NVML_SUCCESS)
			continue;
		memset(d, 0, sizeof(*d));
		d->hdr.size = sizeof(*d);
		d->hdr.kind = GL_REC_DEVMEM;
		d->hdr.pid = (__u32)pid;
		d->device = (int)i;
		d->total_bytes = m.total;
		d->used_bytes = m.used;
		if (procs && procs(dev, &np, infos) == NVML_SUCCESS) {
			d->flags = 1;
			for (j = 0; j < np && j < MAX_PROCS; j++)
				if (infos[j].pid == (unsigned int)pid)
					d->proc_used_bytes = infos[j].used_gpu_memory;
		}
		got++;
	}
	shutdown();
cleanup:
	dlclose(lib);
	return got;
}
