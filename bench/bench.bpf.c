// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The benchmark's BPF side (not gpuleak's):
 *   - bare_enter/bare_exit: programs on the probes gpuleak uses, attached the way gpuleak
 *     attaches them. With cost == 0 they are empty: what the uprobe traps alone cost, the
 *     floor. The bits of cost (enum bench_cost) add one kind of work gpuleak does per call
 *     at a time, for the cost breakdown of `make bench`;
 *   - bare_usdt: an empty USDT program, attached as gpuleak attaches its USDT probes: what
 *     the USDT traps alone cost (PyTorch's block pairs), their floor;
 *   - produce: a syscall program that fills a ring buffer with gpuleak records, so the
 *     consumer benchmark drains real ring buffer samples through gpuleak's own decode path.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "gpuleak.h"
#include "bench.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 cost = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 20);
} events SEC(".maps");

/* What the entry of an allocation keeps for its return, as gpuleak's frame does. */
struct stash {
	__u64 sp, out, size;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct stash);
} stashes SEC(".maps");

/* A record of one of gpuleak's sizes, with its wakeup rule (once per 256 KiB written). */
#define WAKEUP (256 << 10)

static __always_inline void record(__u32 size, __u64 addr, __u64 caller, __u64 ts_ns)
{
	struct gl_small_rec *r;
	__u64 unread;

	if (size == GL_SMALL_FREE_SIZE)
		r = bpf_ringbuf_reserve(&events, GL_SMALL_FREE_SIZE, 0);
	else if (size == GL_SMALL_ALLOC_SIZE)
		r = bpf_ringbuf_reserve(&events, GL_SMALL_ALLOC_SIZE, 0);
	else
		r = bpf_ringbuf_reserve(&events, sizeof(struct gl_call_rec), 0);
	if (!r)
		return;
	r->hdr.size = size;
	r->hdr.ts_ns = ts_ns;
	r->addr = addr;
	r->caller = caller; /* within the 40 bytes of the shortest record */
	unread = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	bpf_ringbuf_submit(r, unread >= size && (unread - size) / WAKEUP != unread / WAKEUP
				  ? BPF_RB_FORCE_WAKEUP
				  : BPF_RB_NO_WAKEUP);
}

/* The attach cookie: 0 on cudaMalloc, 1 on cudaFree. */
SEC("uprobe.multi")
int bare_enter(struct pt_regs *ctx)
{
	__u64 caller = 0, ts = 0;
	struct stash *st;

	if (!cost)
		return 0;
	if (bpf_get_attach_cookie(ctx)) {
		/* a free: complete at entry */
		if (cost & COST_CLOCK)
			ts = bpf_ktime_get_ns();
		if (cost & COST_READ)
			bpf_probe_read_user(&caller, sizeof(caller), (void *)PT_REGS_SP(ctx));
		if (cost & COST_RECORD)
			record(cost & COST_SHORT ? GL_SMALL_FREE_SIZE : sizeof(struct gl_call_rec),
			       PT_REGS_PARM1(ctx), caller, ts);
		return 0;
	}
	if (cost & COST_STASH) {
		st = bpf_task_storage_get(&stashes, bpf_get_current_task_btf(), 0,
					  BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (st) {
			st->sp = PT_REGS_SP(ctx);
			st->out = PT_REGS_PARM1(ctx);
			st->size = PT_REGS_PARM2(ctx);
		}
	}
	return 0;
}

SEC("uretprobe.multi")
int bare_exit(struct pt_regs *ctx)
{
	__u64 out = PT_REGS_SP(ctx), addr = 0, ts = 0;
	struct stash *st;

	if (!cost)
		return 0;
	if (cost & COST_STASH) {
		st = bpf_task_storage_get(&stashes, bpf_get_current_task_btf(), 0, 0);
		if (st && st->sp == PT_REGS_SP(ctx) - 8)
			out = st->out;
	}
	if (cost & COST_CLOCK)
		ts = bpf_ktime_get_ns();
	if (cost & COST_READ)
		bpf_probe_read_user(&addr, sizeof(addr), (void *)out);
	if (cost & COST_RECORD)
		record(cost & COST_SHORT ? GL_SMALL_ALLOC_SIZE : sizeof(struct gl_call_rec), addr,
		       PT_REGS_IP(ctx), ts);
	return 0;
}

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
	if (is_free && a->grow)
		r->addr = a->base + (1ULL << 36) + k * 256;
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

SEC("usdt")
int bare_usdt(struct pt_regs *ctx)
{
	(void)ctx;
	return 0;
}
