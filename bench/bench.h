/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared by the benchmark's BPF object and its loader (bench/glbench.c). */
#ifndef GPULEAK_BENCH_H
#define GPULEAK_BENCH_H

/*
 * Argument of the `produce` program: records first .. first + count - 1 of an endless
 * stream alternating allocation k (n = 2k, address index live + k) and a free (n = 2k + 1)
 * of the allocation made lag allocations earlier (index live + k - lag), addresses
 * base + 256 * index. Indexes 0 .. live - 1 are allocated beforehand, so live stays constant.
 * lag = live frees the oldest allocation (every free a cold slot); a small lag frees recent
 * ones, as a server's short-lived activations are. With grow set, the frees are of
 * addresses never allocated (base + 2^36 on) and live grows by one allocation a pair: every
 * allocation is a new peak of live bytes (what the analysis keeps of the peak, at its worst).
 */
struct bench_produce {
	__u64 first;
	__u64 count;
	__u64 live;
	__u64 lag; /* 1 .. live */
	__u64 base;
	__u64 caller;
	__u64 ts0_ns;
	__u32 pid;
	__u32 grow;
	__s64 produced; /* out: bpf_loop's return, records written or -errno */
};

/*
 * What bare_enter/bare_exit do besides trapping: one kind of work gpuleak does per traced
 * call per bit, at the places gpuleak does it.
 */
enum bench_cost {
	COST_STASH = 1 << 0,  /* allocation entry: arguments into task storage */
	COST_READ = 1 << 1,   /* a user-memory read: [sp] at a free, the out-pointer at return */
	COST_CLOCK = 1 << 2,  /* a clock read per record */
	COST_RECORD = 1 << 3, /* a 72-byte record per call (allocation return, free) */
	COST_SHORT = 1 << 4,  /* ... of 48 and 40 bytes instead (gl_small_rec) */
};

#endif
