// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The benchmark's BPF side (not gpuleak's):
 *   - bare_enter/bare_exit: empty programs on the probes gpuleak uses, attached the way
 *     gpuleak attaches them: what the uprobe traps alone cost, the floor;
 *   - produce: a syscall program that fills a ring buffer with gpuleak records, so the
 *     consumer benchmark drains real ring buffer samples through gpuleak's own decode path.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "gpuleak.h"
#include "bench.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("uprobe.multi")
int bare_enter(struct pt_regs *ctx __attribute__((unused)))
{
	return 0;
}

SEC("uretprobe.multi")
int bare_exit(struct pt_regs *ctx __attribute__((unused)))
{
	return 0;
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 20);
} events SEC(".maps");

static long produce_one(__u64 i, struct bench_produce *a)
{
	__u64 n = a->first + i;
	struct gl_call_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	bool is_free = n & 1;
	__u64 k = n >> 1;

	if (!r)
		return 1;
	r->hdr.size = sizeof(*r);
	r->hdr.kind = is_free ? GL_REC_FREE : GL_REC_ALLOC;
	r->hdr.depth = 0;
	r->hdr.api = is_free ? GL_API_CUDA_FREE : GL_API_CUDA_MALLOC;
	r->hdr.flags = 0;
	r->hdr.pid = a->pid;
	r->hdr.tid = a->pid;
	r->hdr.ts_ns = a->ts0_ns + n * 1000;
	r->addr = a->base + (k + a->live - (is_free ? a->lag : 0)) * 256;
	r->size = is_free ? 0 : 4096 << (k & 7);
	r->aux = 0;
	r->aux2 = 0;
	r->caller = a->caller + (k & 15) * 0x40 + (is_free ? 0x1000 : 0);
	r->ret = 0;
	r->stack_id = -1;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("syscall")
int produce(struct bench_produce *args)
{
	struct bench_produce a = *args;

	args->produced = bpf_loop(a.count, produce_one, &a, 0);
	return 0;
}
