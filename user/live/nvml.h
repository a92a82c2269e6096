/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * NVML, when the machine has it (libnvidia-ml.so.1, opened with dlopen): device sizes and the
 * memory the target already holds, for time-to-OOM and the pre-attach baseline. Without it
 * gpuleak works the same, and asks for --device-mem to project.
 */
#ifndef GPULEAK_LIVE_NVML_H
#define GPULEAK_LIVE_NVML_H

#include <sys/types.h>
#include "gpuleak.h"

/*
 * One record per device into out (at most max): total and used bytes, and what pid uses.
 * Returns the number of devices, 0 when NVML is not there, or -errno.
 */
int nvml__snapshot(pid_t pid, struct gl_devmem_rec *out, int max);

#endif
