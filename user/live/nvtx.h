/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * NVTX steps in run mode (--step nvtx:NAME): NVTX v3 is header-only and reaches a tool only
 * through NVTX_INJECTION64_PATH, so the child is started with it pointing at gpuleak's
 * injection library (inject/nvtx_inject.c), whose empty entry points gpuleak probes.
 */
#ifndef GPULEAK_LIVE_NVTX_H
#define GPULEAK_LIVE_NVTX_H

#include <stddef.h>

/* "NVTX_INJECTION64_PATH=..." for the child's environment, in buf. 0, or -ENOENT when the
 * library is nowhere to be found (said on stderr). */
int nvtx__inject_env(char *buf, size_t len);

#endif
