/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Adaptive unwinding (--unwind auto, the default): which code of a traced process keeps no
 * frame pointers and can be unwound with call frame information, for BPF to copy the stack
 * of an allocation only when its frame-pointer walk went through such code (struct
 * gl_fpless). Written at every scan of the process's mappings, so a library loaded later
 * (dawn.node, a wheel's libc10_cuda.so) is covered from the rendezvous that mapped it on.
 */
#ifndef GPULEAK_LIVE_FPLESS_H
#define GPULEAK_LIVE_FPLESS_H

#include <sys/types.h>

struct live;
struct proc_maps;

/* m's objects into the process's entry (removed when none): 0 or -errno (said once). */
int fpless__scan(struct live *l, const struct proc_maps *m);
/* The process exited: its entry goes (a pid reused starts with none). */
void fpless__forget(struct live *l, pid_t pid);

#endif
