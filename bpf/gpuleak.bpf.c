// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * gpuleak's BPF side: two programs, one for every traced function's entry and one for its
 * return, attached as uprobe_multi links whose cookie is the API id. What to read where comes
 * from the per-API spec table in rodata, filled from the probe catalog before load; the
 * handlers below are generic per call shape and know no API by name.
 *
 * Two links per traced object (entry, return) instead of one per shape: each link costs a
 * grace period (~20 ms here) to detach, and users notice a slow Ctrl-C.
 *
 * USDT probes (SystemTap SDT notes: PyTorch's allocator, an interpreter's markers) run a third
 * program, gl_usdt, attached by libbpf's USDT support (one link per process, object and probe
 * name; the probe's semaphore raised through the uprobe's reference counter). Its API id is the
 * USDT cookie, its arguments come from the note's specs, which libbpf decodes (usdt_args_of
 * reads them); the records it makes are the entry-only ones the function probes make.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#if defined(__TARGET_ARCH_x86)
/*
 * The registers as x86-64 lays them out for every kernel (the ptrace ABI, a kprobe or uprobe
 * program's context), read without CO-RE: vmlinux.h's struct pt_regs is relocated, and each
 * type relocated costs libbpf a search through the kernel's 126 000 BTF types at every start
 * (~2-3 ms here). bpf_tracing.h's PT_REGS_* macros, usdt.bpf.h's included, read through it.
 */
struct gl_pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax, ip,
	    cs, flags, sp, ss;
};
#define __PT_REGS_CAST(x) ((const struct gl_pt_regs *)(x))
#endif
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "gpuleak.h"
#include "gpuleak.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define SIGCONT 18
#define SIGSTOP 19
#define EEXIST	17
#define EFAULT	14

/*
 * The spec table has a power-of-two number of slots (only the first GL_API_MAX are filled), so
 * that an index is bounded by a mask the verifier cannot lose: verifiers before 6.2 refuse
 * `specs[api]` after a range check that the compiler made on a copy of the register
 * ("math between map_value pointer and register with unbounded min value").
 */
#define GL_SPEC_SLOTS 4096
#ifdef GL_TEST_RODATA_PAD
/* Only in the test build of tests/build.mk: rodata laid out unlike the built-in object's. */
const volatile __u64 gl_test_rodata_pad = 0;
#endif
_Static_assert(GL_API_MAX <= GL_SPEC_SLOTS, "the spec table holds every API id");
const volatile struct gl_api_spec specs[GL_SPEC_SLOTS] = {};
/* The mask after a barrier: the compiler, knowing api < GL_API_MAX, would drop it otherwise. */
static __always_inline __u64 spec_slot(__u64 api)
{
	barrier_var(api);
	return api & (GL_SPEC_SLOTS - 1);
}
#define SPEC(api) (specs[spec_slot(api)])
/* Wake the consumer only once this much is unread: per-record wakeups cost 3-6x per call. */
const volatile __u64 wakeup_bytes = 256 * 1024;
/* Frames of a user stack kept (--stack-depth); 0: no stacks. */
const volatile __u32 stack_depth = 0;
/*
 * --unwind dwarf: bytes of user stack copied at each allocation that takes a stack, for user
 * space to unwind with call frame information (struct gl_ustack_rec); 0: frame pointers only.
 */
const volatile __u32 unwind_bytes = 0;
/*
 * No copy once this much of the ring buffer is unread: a consumer slower to unwind than the
 * process allocates must lose copies (the allocation keeps its frame-pointer walk), never
 * the records of the calls themselves.
 */
const volatile __u64 unwind_ring_max = 0;
/*
 * --unwind auto (the default): the copy only for allocations whose frame-pointer walk went
 * through code without frame pointers (struct gl_fpless); else every allocation's.
 */
const volatile bool unwind_adaptive = false;
/* --follow: processes forked by a traced process are traced too (else only said). */
const volatile bool follow_children = false;
/*
 * gpuleak's own pid namespace when it is not the initial one (gpuleak in a container): pids
 * in records are then the ones gpuleak sees in /proc. 0: the initial namespace, no
 * translation (the common, cheaper case).
 */
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;

/*
 * Since Linux 6.13: a forked child stopped from the fork tracepoint (weak). Without it the
 * child stops itself: gl_fork_hold runs in its context as it first leaves schedule_tail().
 */
extern int bpf_send_signal_task(struct task_struct *task, int sig, enum pid_type type,
				__u64 value) __weak __ksym;
/* gl_fork_hold is attached (set by user space after the attach, so never a stop promised
 * that nothing would make). */
volatile bool fork_hold_armed = false;
/* Kernel thread ids of forked children that are to stop themselves. Entries outlive only a
 * child that never ran (one killed before its first schedule). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} fork_holds SEC(".maps");
/* Since Linux 6.2: what lets gpuleak's death resume the processes it held (weak). */
extern struct task_struct *bpf_task_from_pid(s32 pid) __weak __ksym;
extern void bpf_task_release(struct task_struct *p) __weak __ksym;
/* gpuleak's own process id (in its namespace, as task_tgid gives it). */
const volatile __u32 self_tgid = 0;
/* gpuleak is exiting with these programs still attached: no process is stopped any more. */
volatile bool tracer_gone = false;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* resized by user space before load */
} events SEC(".maps");

/*
 * User stacks, interned in the kernel rather than sent with each record: a record keeps its
 * fixed 72 bytes (stack_id), a million allocations from one stack cost one map entry and one
 * read by user space, and the kernel's hash-and-compare costs far less than the walk itself.
 * The price is hash collisions: a stack whose bucket holds another stack gets -EEXIST (never
 * BPF_F_REUSE_STACKID, which would rename an id user space has already read). Such a stack
 * goes to `stacks2`, hashed over different frames (the probed function's address included),
 * so both maps must collide before a stack is lost, and that is counted.
 *
 * Sizes are set by user space before load: `stacks` holds depth + 1 frames after the probed
 * function's address (skip 1), `stacks2` depth + 2 with it, so either tells user space
 * whether the walk went on past the depth it keeps (truncated).
 */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 32 * sizeof(__u64));
	__uint(max_entries, 1);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 32 * sizeof(__u64));
	__uint(max_entries, 1);
} stacks2 SEC(".maps");

/* One traced call in flight on a thread: what was read at entry, for the return probe. */
struct frame {
	__u64 sp; /* stack pointer at entry; the return sees it again (per arch) */
	__u64 addr;
	__u64 size;
	__u64 aux;
	__u64 aux2;
	__u64 mul;
	__u64 ts_ns; /* entry time, syncs only */
	__u64 ra;    /* --unwind dwarf: the return address at entry, before the return probe's
		   * trampoline took its place on the stack */
	__s32 stack_id;
	__u32 api;
	__u32 hflags;	  /* enum gl_hdr_flags found at entry */
	__u32 layer_seen; /* the record of an allocation nested in this one (its layer) went out */
};

struct tstate {
	__u32 depth;
	__u32 pad;
	/* Entry sp of the last allocation counted as returning without its entry: the call
	 * around it returns so too, and is that same allocation (count_orphan_alloc). */
	__u64 orphan_sp;
	struct frame f[GL_MAX_DEPTH];
	/* Per frame, only for APIs whose spec asks: kept apart so frames stay small. */
	__u8 desc[GL_MAX_DEPTH][GL_DESC_MAX];
	char label[GL_MAX_DEPTH][GL_LABEL_MAX];
	__u32 label_len[GL_MAX_DEPTH]; /* bytes in label[], ~0: no label */
	__u8 label_trunc[GL_MAX_DEPTH];
	/* Python (gpuleak_python.frag.h): this thread's PyThreadState, found once */
	__u64 py_ts;
	__u64 py_head;	  /* _PyRuntime.interpreters.head when it was found */
	__u64 py_runtime; /* the _PyRuntime it belongs to: an exec makes another */
	__u32 py_walks;
	__u32 py_gen; /* py_generation + 1 when the process's configuration was last looked up */
	__u32 py_on;  /* it had one */
	__u32 py_pad;
};

/*
 * Entry state lives in task-local storage rather than a hash keyed by pid_tgid: it is per
 * thread by construction (no pid/tid mix-ups, no collision across pid namespaces), costs no
 * hash lookup on the hot path, and is freed with the thread, so a thread that dies inside a
 * traced call leaves nothing behind.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tstate);
} tstates SEC(".maps");

/* Global loss counters (per CPU) and the same per process, both touched on failure only. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GL_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, char[GL_LABEL_MAX]);
} scratch SEC(".maps");

struct pid_loss {
	__u64 counts[GL_STAT_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct pid_loss);
} pid_loss SEC(".maps");

/*
 * --max-overhead: how far each process is stepped down (enum gl_cost_level), set by user
 * space (user/live/overhead.c); no entry: everything. Looked up only with a budget.
 */
const volatile bool budget_on = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} pid_level SEC(".maps");

static __always_inline __u32 level_of(__u32 pid)
{
	__u32 *l;

	if (!budget_on)
		return GL_LEVEL_FULL;
	l = bpf_map_lookup_elem(&pid_level, &pid);
	return l ? *l : GL_LEVEL_FULL;
}

/*
 * Code pointers (callbacks) user space has seen, per process. A pointer not in here makes
 * a GL_REC_CODE record, once: user space then puts a probe on the code it points to.
 */
struct code_key {
	__u32 pid;
	__u32 pad;
	__u64 addr;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct code_key);
	__type(value, __u8);
} code_seen SEC(".maps");

/*
 * Traced processes (tgid as gpuleak sees it) -> 1: the scheduler tracepoints report their
 * exits, and with follow_children their forks and execs. Children are added here by BPF,
 * at fork, so none is missed while user space catches up.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} traced SEC(".maps");

/* Processes to stop at the ld.so rendezvous until user space has attached (run mode). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} held SEC(".maps");

/*
 * A new process's zeroed loss counters: 128 bytes, which on the BPF stack would take a quarter
 * of the 512 that kernels without private stacks allow a program and its callbacks together.
 */
static const struct pid_loss pid_loss_zero = {};

/*
 * Global subprograms (non-static, __noinline): the verifier checks each once, on its own, for
 * any values of its arguments, where a static inline function is checked again on every path
 * that reaches it, and the paths multiply with each unknown flag of the spec. Their arguments
 * are scalars, the context (struct bpf_user_pt_regs_t, below) or pointers to memory of a sized
 * type (checked for NULL inside), their result a scalar: what kernels from 5.15 on accept.
 */
#define GL_GLOBAL __noinline

/* A loss, counted globally and for its process: on every failure path, so checked once. */
GL_GLOBAL int count_loss(__u32 pid, enum gl_stat s, __u64 n)
{
	__u32 k = s;
	__u64 *v = bpf_map_lookup_elem(&stats, &k);
	struct pid_loss *l;

	if (v)
		*v += n;
	l = bpf_map_lookup_elem(&pid_loss, &pid);
	if (!l) {
		bpf_map_update_elem(&pid_loss, &pid, &pid_loss_zero, BPF_NOEXIST);
		l = bpf_map_lookup_elem(&pid_loss, &pid);
		if (!l) {
			/* Counted globally only: say why, or the loss has no process. */
			k = GL_STAT_MAP_FULL;
			v = bpf_map_lookup_elem(&stats, &k);
			if (v)
				*v += 1;
			return 0;
		}
	}
	__sync_fetch_and_add(&l->counts[k & (GL_STAT_MAX - 1)], n);
	return 0;
}

/* bpf_get_current_pid_tgid() in gpuleak's pid namespace. */
static __always_inline __u64 cur_pid_tgid(void)
{
	/* uapi's struct bpf_pidns_info, unrelocated (see gl_pt_regs) */
	struct {
		__u32 pid, tgid;
	} ns;

	if (!pidns_ino)
		return bpf_get_current_pid_tgid();
	/* Fails only for a task gpuleak cannot see: never one of its targets. */
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, (struct bpf_pidns_info *)&ns,
					sizeof(ns)))
		return 0;
	return (__u64)ns.tgid << 32 | ns.pid;
}

/*
 * Wake the consumer when this record (already reserved: counted in the ring's unread bytes)
 * takes the unread bytes past a multiple of wakeup_bytes: once per wakeup_bytes written, not
 * on every record while that much is unread. A wakeup is an irq_work, a self-IPI: microseconds
 * on a VM, and a consumer that is slow to run would otherwise make every record pay one.
 */
static __always_inline __u64 rb_flags(__u8 spec_flags, __u32 size)
{
	__u64 unread;

	if (spec_flags & GL_SPEC_WAKEUP)
		return BPF_RB_FORCE_WAKEUP;
	unread = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	if (unread >= size && (unread - size) / wakeup_bytes != unread / wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

static __always_inline struct gl_call_rec *rec_reserve(__u32 pid)
{
	struct gl_call_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

	if (!r)
		count_loss(pid, GL_STAT_RB_FULL, 1);
	return r;
}

static __always_inline void hdr_fill(struct gl_hdr *h, __u16 size, __u8 kind, __u8 depth, __u16 api,
				     __u64 pid_tgid, __u64 ts_ns)
{
	h->size = size;
	h->kind = kind;
	h->depth = depth;
	h->api = api;
	h->flags = 0;
	h->pid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
	h->ts_ns = ts_ns;
}

static __always_inline void rec_header(struct gl_call_rec *r, __u8 kind, __u8 depth, __u16 api,
				       __u64 pid_tgid, __u64 ts_ns)
{
	hdr_fill(&r->hdr, sizeof(*r), kind, depth, api, pid_tgid, ts_ns);
}

static __always_inline struct tstate *tstate_get(bool create)
{
	return bpf_task_storage_get(&tstates, bpf_get_current_task_btf(), 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/*
 * Read a label into buf at entry: a (data, len) string view or a NUL-terminated string.
 * Returns the bytes read, or ~0 when the call has no label (NULL data).
 */
static __always_inline __u32 read_label(__u64 data, __u64 len, bool cstr, char *buf, __u8 *trunc)
{
	long n;

	*trunc = 0;
	if (!data)
		return ~0U;
	if (cstr || len == ~0ULL) {
		n = bpf_probe_read_user_str(buf, GL_LABEL_MAX, (void *)data);
		if (n < 0)
			count_loss(cur_pid_tgid() >> 32, GL_STAT_READ_FAIL, 1);
		if (n <= 0)
			return ~0U;
		/* _str counts the NUL it wrote; a full buffer may mean a longer label. */
		*trunc = n == GL_LABEL_MAX;
		return n - 1;
	}
	if (len > GL_LABEL_MAX) {
		len = GL_LABEL_MAX;
		*trunc = 1;
	}
	if (bpf_probe_read_user(buf, len & (2 * GL_LABEL_MAX - 1), (void *)data)) {
		/* The object is still traced, without its label: a read failure, counted. */
		count_loss(cur_pid_tgid() >> 32, GL_STAT_READ_FAIL, 1);
		return ~0U;
	}
	return len;
}

static __always_inline void label_from_desc(struct gl_api_spec s, const __u8 *desc, char *buf,
					    __u32 *len, __u8 *trunc)
{
	/* 8-byte aligned and inside the copy, the length word included. */
	__u32 off = s.label_off & (GL_DESC_MAX - 8);
	__u64 data, n;

	if (off > GL_DESC_MAX - 16) {
		*len = ~0U;
		return;
	}
	data = *(const __u64 *)(desc + off);
	n = *(const __u64 *)(desc + off + 8);
	*len = read_label(data, n, s.label_kind == GL_LABEL_CSTR, buf, trunc);
}

/* Where the bytes a spec copies start: a struct pointer argument, or a by-value struct. */
static __always_inline __u64 desc_addr(struct pt_regs *ctx, struct gl_api_spec s)
{
	__u64 p = (s.flags & GL_SPEC_DESC_BYVAL) ? gl_byval_addr(ctx, s.arg_desc)
						 : gl_arg(ctx, s.arg_desc);

	return p ? p + s.desc_off : 0;
}

static __always_inline __u32 desc_copy_len(struct gl_api_spec s)
{
	__u32 len = s.desc_len;

	return len > GL_DESC_MAX ? GL_DESC_MAX : len;
}

/*
 * A code pointer in the copied bytes (a callback the program passed) that this process has
 * not shown us yet: tell user space, which probes the code it points to. In run mode the
 * process stops here first, so the callback cannot run before its probe is in place.
 */
static __always_inline void code_ptr_check(__u16 api, struct gl_api_spec s, const __u8 *desc,
					   __u64 pid_tgid, __u8 depth)
{
	struct code_key k = {.pid = pid_tgid >> 32};
	struct gl_call_rec *r;
	__u8 one = 1;
	bool stop;

	k.addr = *(const __u64 *)(desc + (s.code_off & (GL_DESC_MAX - 8)));
	if (!k.addr || bpf_map_lookup_elem(&code_seen, &k))
		return;
	/* First thread to see it reports it; others carry on (the process stops soon). */
	if (bpf_map_update_elem(&code_seen, &k, &one, BPF_NOEXIST))
		return;
	stop = bpf_map_lookup_elem(&held, &k.pid) && !tracer_gone;
	r = rec_reserve(k.pid);
	if (!r)
		return;
	rec_header(r, GL_REC_CODE, depth, api, pid_tgid, bpf_ktime_get_ns());
	r->addr = k.addr;
	r->size = 0;
	r->aux = 0;
	r->aux2 = 0;
	r->caller = 0;
	r->ret = 0;
	r->stack_id = -1;
	if (stop) {
		r->hdr.flags |= GL_HF_HELD;
		bpf_send_signal(SIGSTOP);
	}
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
}

static __always_inline bool is_alloc(struct gl_api_spec s)
{
	return s.shape == GL_SHAPE_ALLOC_OUTPTR || s.shape == GL_SHAPE_ALLOC_RET;
}

/*
 * Whether the GPU allocation api at depth d runs inside a traced allocation of memory on
 * this thread (GL_SPEC_LAYERS): the runtime's cuMemAlloc under cudaMalloc, a VMM handle
 * under ncclMemAlloc. The tracker folds those into the allocation above as its layers, so
 * walking the same stack again would only double the cost of the call. What a
 * communicator's or context's creation allocates is memory of its own, and so is host
 * memory a GPU call allocates (--libc): those keep their stacks.
 */
static __always_inline bool under_alloc(const struct tstate *st, __u32 d, __u16 api)
{
	__u32 outer;

	if (!d || GL_API_FAMILY(api) == GL_FAM_LIBC)
		return false;
	outer = st->f[(d - 1) & (GL_MAX_DEPTH - 1)].api;
	return outer < GL_API_MAX && (SPEC(outer).flags & GL_SPEC_LAYERS);
}

#include "gpuleak_python.frag.h" /* the Python frame walk: a fragment, included once */

/*
 * py_later: a Python process's allocation to the program with the walk (the fragment). Until
 * user space configures a first Python process (py_generation 0) no process has an entry in
 * pyprocs (a child inherits its parent's): the lookup, ~45 ns an allocation, is skipped.
 */
static __always_inline void py_handoff(void *ctx, struct gl_api_spec s, void *prog)
{
	__u32 pid;

	if (!py_later || !py_generation || (s.shape != GL_SHAPE_ALLOC_DONE && !is_alloc(s)))
		return;
	pid = cur_pid_tgid() >> 32;
	if (bpf_map_lookup_elem(&pyprocs, &pid))
		bpf_tail_call(ctx, prog, 0);
}

/*
 * Frames above the one a return matched are calls whose return never came: entered while
 * gpuleak attached its entry link but not yet its return link, or left by a longjmp or an
 * exception. An allocation among them may have succeeded unseen: a missed allocation of the
 * size its arguments said (unsized when that was a pointer, or a descriptor's), counted once:
 * at the outermost call, not again at its layers (cudaMalloc's cuMemAlloc). A global
 * subprogram: its loop over the frames, a spec read in each, is checked once.
 */
GL_GLOBAL int count_stale(struct tstate *st, __u32 i, __u32 stale, __u32 pid)
{
	if (!st)
		return 0;
	count_loss(pid, GL_STAT_STALE_FRAMES, stale);
	for (__u32 k = 1; k < GL_MAX_DEPTH; k++) {
		struct frame *sf;
		struct gl_api_spec s;

		if (k > stale)
			break;
		sf = &st->f[(i + k) & (GL_MAX_DEPTH - 1)];
		if (sf->api >= GL_API_MAX)
			continue;
		s = SPEC(sf->api);
		/* A layer of the allocation around it is that allocation: counted there. */
		if (!is_alloc(s) || under_alloc(st, i + k, sf->api))
			continue;
		count_loss(pid, GL_STAT_LOST_ALLOCS, 1);
		if (!s.arg_size || (s.flags & GL_SPEC_SIZE_BY_PTR))
			count_loss(pid, GL_STAT_LOST_ALLOCS_UNSIZED, 1);
		else
			count_loss(pid, GL_STAT_LOST_ALLOC_BYTES, sf->size * sf->mul);
	}
	return 0;
}

/*
 * The user stack of an allocation call, at entry: the return probe replaces the return
 * address on the stack with its trampoline, and frees and syncs never take a stack (they
 * are named by their call site and cost a bare probe). A collision in `stacks` retries in
 * `stacks2`; in both it is a counted loss and the call is recorded without a stack, named
 * by its call site alone, never by another stack's frames.
 *
 * A walk that found nothing past the probed function's own address also retries there. The
 * kernel walks from %rbp; when the probe is not on a `push %rbp` or `endbr64` (glibc's
 * malloc, a probe moved past its first instruction) it does not add the return address at
 * the stack pointer, and when the caller keeps no frame pointer (-O2 code uses %rbp as one
 * more register) the walk stops at once. One frame is then no more than the skip of 1, and
 * bpf_get_stackid fails with -EFAULT rather than return an empty stack: `stacks2`, which
 * skips nothing, keeps that frame, and user space puts the call site after it.
 */
static __always_inline __s32 stack_get(struct pt_regs *ctx, __u32 pid)
{
	long id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK | 1);

	if (id == -EEXIST || id == -EFAULT) {
		id = bpf_get_stackid(ctx, &stacks2, BPF_F_USER_STACK);
		if (id >= 0)
			return (__s32)id + GL_STACK_FALLBACK;
		if (id == -EEXIST) {
			count_loss(pid, GL_STAT_STACK_COLLISION, 1);
			return -1;
		}
	}
	if (id < 0) {
		count_loss(pid, GL_STAT_STACK_FAIL, 1);
		return -1;
	}
	return (__s32)id;
}

/*
 * The second struct argument (spec.arg_desc2, by pointer) into desc after the first one's
 * bytes. A failed read leaves zeroes there, flagged like a failed first copy.
 */
static __always_inline void desc2_copy(struct pt_regs *ctx, struct gl_api_spec s, __u8 *desc,
				       __u32 pid, struct frame *f)
{
	__u32 off = s.desc_len, len = s.desc2_len;

	if (off >= GL_DESC_MAX || !len || len > GL_DESC_MAX - off)
		return;
	off &= GL_DESC_MAX - 1;
	len &= 2 * GL_DESC_MAX - 1;
	if (off + len > GL_DESC_MAX)
		return;
	if (bpf_probe_read_user(desc + off, len, (void *)gl_spec_arg(ctx, &s, s.arg_desc2))) {
		count_loss(pid, GL_STAT_READ_FAIL, 1);
		f->hflags |= GL_HF_DESC_READ_FAIL;
	}
}

/* Adaptive unwinding: per process, the code without frame pointers (user space fills it). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct gl_fpless);
} fpless SEC(".maps");

struct walk_key {
	__u32 pid;
	__s32 stack_id;
};

/* Per (process, stack id): (gl_fpless.gen << 1) | whether its allocations need a copy. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct walk_key);
	__type(value, __u32);
} walk_seen SEC(".maps");

/*
 * A walk being judged: its frames (1 KiB) and the process's ranges, never on the BPF stack.
 * BPF programs run with migration disabled: walk_step finds the same CPU's copy.
 */
struct walk_scratch {
	__u64 frames[GL_WALK_MAX];
	struct gl_fpless fl;
	__u32 first, n, need;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk_scratch);
} walk_buf SEC(".maps");

/* bpf_loop's callback: whether frame first + i of the walk lies in one of the ranges. */
static long walk_step(__u32 i, void *data __attribute__((unused)))
{
	__u32 zero = 0, nr;
	struct walk_scratch *w = bpf_map_lookup_elem(&walk_buf, &zero);
	__u64 a;

	if (!w || w->first + i >= w->n)
		return 1;
	a = w->frames[(w->first + i) & (GL_WALK_MAX - 1)];
	if (a < w->fl.lo || a >= w->fl.hi)
		return 0;
	nr = w->fl.nr;
	for (__u32 j = 0; j < GL_FPLESS_MAX && j < nr; j++)
		if (a >= w->fl.r[j].start && a < w->fl.r[j].end) {
			w->need = 1;
			return 1;
		}
	return 0;
}

/*
 * Whether an allocation's stack (its kernel stack id) is to be copied for user space to
 * unwind: its first frame (at: the return address at a function's entry, the probe's own
 * address for a USDT inside a function) or some caller's frame of its frame-pointer walk lies
 * in code without frame pointers, where the walk from it is guesswork (--unwind auto). The
 * first frame is looked at every time: the kernel's walk leaves the return address out where
 * the probe is not on a push %rbp, so one garbage walk may stand for callers of both kinds.
 * A walk that filled the frames kept needs nothing.
 * Judged once per stack id (the walk is made again into the scratch buffer then, and looked
 * at by bpf_loop: one verified callback, however many frames), remembered until user space
 * changes the process's ranges.
 */
static __always_inline bool walk_needs_copy(struct pt_regs *ctx, __u32 pid, __s32 stack_id,
					    __u64 at)
{
	struct walk_key k = {.pid = pid, .stack_id = stack_id};
	struct gl_fpless *fl = bpf_map_lookup_elem(&fpless, &pid);
	struct walk_scratch *w;
	__u32 *seen, zero = 0, v;
	long len;

	if (!fl || stack_id < 0)
		return false;
	if (at >= fl->lo && at < fl->hi) {
		__u32 nr = fl->nr;

		for (__u32 j = 0; j < GL_FPLESS_MAX && j < nr; j++)
			if (at >= fl->r[j].start && at < fl->r[j].end)
				return true;
	}
	seen = bpf_map_lookup_elem(&walk_seen, &k);
	if (seen && (*seen >> 1) == fl->gen)
		return *seen & 1;
	w = bpf_map_lookup_elem(&walk_buf, &zero);
	if (!w)
		return false;
	w->fl = *fl;
	len = bpf_get_stack(ctx, w->frames, sizeof(w->frames), BPF_F_USER_STACK);
	w->n = len > 0 ? (__u32)len / sizeof(__u64) : 0;
	if (w->n > stack_depth + 1)
		w->n = 0; /* the frames kept are all there */
	w->first = 1;	  /* frame 0 is the probe's address: `at` stands for it */
	w->need = 0;
	if (w->n > w->first)
		bpf_loop(GL_WALK_MAX, walk_step, NULL, 0);
	v = w->fl.gen << 1 | (w->need & 1);
	bpf_map_update_elem(&walk_seen, &k, &v, BPF_ANY);
	return w->need;
}

/* bpf_find_vma's callback: where the stack's mapping ends. */
static long vma_end(struct task_struct *task __attribute__((unused)), struct vm_area_struct *vma,
		    void *ctx)
{
	*(__u64 *)ctx = vma->vm_end;
	return 0;
}

/*
 * --unwind dwarf: the registers and the top of the user stack of an allocation call at its
 * entry, sent ahead of the call's record (same tid and depth). The stack is not interned:
 * its bytes differ from call to call, so every such allocation pays a copy of unwind_bytes
 * (once into the ring buffer, no scratch buffer). The stack's mapping may end before
 * unwind_bytes (a main thread near its top): the copy stops where it ends (a failed read
 * would clear the whole buffer first), and where that is unknown or a read still fails, at
 * the last page that reads, trying at most a page less each time.
 */
static __always_inline void ustack_emit(struct pt_regs *ctx, const struct tstate *st,
					__u64 pid_tgid, __u32 d, __u16 api, __s32 stack_id,
					__u8 flags)
{
	__u64 sp = PT_REGS_SP(ctx), end = 0;
	struct gl_ustack_rec *r;
	__u32 n = unwind_bytes, len = 0;

	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > unwind_ring_max)
		return;
	r = bpf_ringbuf_reserve(&events, sizeof(*r) + unwind_bytes, 0);
	if (!r) {
		count_loss(pid_tgid >> 32, GL_STAT_RB_FULL, 1);
		return;
	}
	if (!bpf_find_vma(bpf_get_current_task_btf(), sp, vma_end, &end, 0) && end > sp &&
	    end - sp < n)
		n = (__u32)(end - sp);
	for (int i = 0; i <= GL_USTACK_MAX / 4096; i++) {
		if (n > unwind_bytes)
			n = unwind_bytes;
		if (!n)
			break;
		if (!bpf_probe_read_user(r->data, n, (void *)sp)) {
			len = n;
			break;
		}
		end = (sp + n - 1) & ~4095ULL; /* where the last page read starts */
		if (end <= sp)
			break;
		n = (__u32)(end - sp);
	}
	if (!len)
		count_loss(pid_tgid >> 32, GL_STAT_READ_FAIL, 1);
	r->hdr.size = sizeof(*r) + len;
	r->hdr.kind = GL_REC_USTACK;
	r->hdr.depth = d;
	r->hdr.api = api;
	r->hdr.flags = flags;
	r->hdr.pid = pid_tgid >> 32;
	r->hdr.tid = (__u32)pid_tgid;
	r->hdr.ts_ns = 0;
	r->stack_id = stack_id;
	r->len = len;
	r->ip = PT_REGS_IP(ctx);
	r->sp = sp;
	r->bp = PT_REGS_FP(ctx);
	for (__u32 k = 0; k < GL_MAX_DEPTH - 1; k++) {
		const struct frame *of = &st->f[k & (GL_MAX_DEPTH - 1)];

		r->ret_at[k] = k < d ? of->sp : 0;
		r->ret[k] = k < d ? of->ra : 0;
	}
	bpf_ringbuf_submit(r, rb_flags(0, sizeof(*r) + unwind_bytes));
}

/*
 * The context as a global subprogram's argument. The verifier takes an argument for the context
 * by the name of its type: the program type's, bpf_user_pt_regs_t for uprobes, a typedef of
 * struct pt_regs. Older kernels (5.15) compare that name with the struct's only, so `struct
 * pt_regs *` is no context there, and a struct of this name, which the kernel never defines, is
 * one on every kernel (libbpf's __arg_ctx fallback uses the same name). Cast back inside.
 */
struct bpf_user_pt_regs_t {
};

/* How alloc_stack was reached (its `how`, above the API id in the low 16 bits). */
#define GL_AS_FPLESS (1U << 16) /* --unwind auto: the process has code without frame pointers */
#define GL_AS_DONE   (1U << 17) /* emit_done: the first frame is the call site, read if needed */
#define GL_AS_USDT   (1U << 18) /* a USDT probe: the call site is the probe's own address */

/*
 * The stack of an allocation, at the probe: the native stack id, its Python frames, and the
 * copy of the user stack for user space to unwind, as the options and the process's level say.
 * Returns the stack id (-1: none). at: the first frame for walk_needs_copy (the return address
 * read at entry) unless GL_AS_DONE. One global subprogram for entries and complete allocations
 * alike, and for any spec: checked once. The thread's state is looked up here rather than
 * passed: a pointer argument and a map value would be two kinds of pointer to it, and the
 * Python walk would be checked for each.
 */
GL_GLOBAL int alloc_stack(struct bpf_user_pt_regs_t *uctx, __u64 pid_tgid, __u64 at, __u32 how)
{
	struct pt_regs *ctx = (struct pt_regs *)uctx;
	struct tstate *st = tstate_get(false);
	__u32 pid = pid_tgid >> 32, lvl = level_of(pid);
	__u16 api = how & 0xffff;
	__s32 stack_id = -1;

	if (stack_depth && lvl < GL_LEVEL_SITES_ONLY)
		stack_id = stack_get(ctx, pid);
	/* A tensor made from Python is named by its Python frames, as any allocation: the walk
	 * caches the thread's interpreter state in its tstate. */
	if (python_depth && lvl < GL_LEVEL_NO_PYTHON && !st)
		st = tstate_get(true);
	if (python_depth && lvl < GL_LEVEL_NO_PYTHON && st)
		py_stack(st, pid_tgid, &stack_id);
	/* A stack with Python frames is named by the interpreter's own chain. */
	if (!unwind_bytes || !stack_depth || lvl >= GL_LEVEL_NO_DWARF || gl_stack_is_py(stack_id))
		return stack_id;
	if (unwind_adaptive) {
		if (!(how & GL_AS_FPLESS))
			return stack_id;
		if (how & GL_AS_DONE)
			at = (how & GL_AS_USDT) ? PT_REGS_IP(ctx) : gl_entry_caller(ctx);
		if (!walk_needs_copy(ctx, pid, stack_id, at))
			return stack_id;
	}
	if (!st)
		st = tstate_get(true);
	if (st)
		ustack_emit(ctx, st, pid_tgid, st->depth, api, stack_id,
			    (how & GL_AS_USDT) ? GL_USTACK_AT_IP : 0);
	return stack_id;
}

/*
 * Entry of a call whose result matters: remember its arguments until the return probe. A
 * global subprogram: gl_enter reaches it from each of four shapes, and each would check it
 * again with that shape known.
 */
GL_GLOBAL int frame_push(struct bpf_user_pt_regs_t *uctx, __u64 api)
{
	struct pt_regs *ctx = (struct pt_regs *)uctx;
	struct gl_api_spec s;
	struct tstate *st;
	struct frame *f;
	__u64 pid_tgid;
	bool fpl;
	__u32 d;

	if (api >= GL_API_MAX)
		return 0;
	s = SPEC(api);
	pid_tgid = cur_pid_tgid();
	st = tstate_get(true);
	if (!st) {
		count_loss(pid_tgid >> 32, GL_STAT_STASH_FAIL, 1);
		return 0;
	}
	d = st->depth;
	if (d >= GL_MAX_DEPTH) {
		count_loss(pid_tgid >> 32, GL_STAT_DEPTH_OVERFLOW, 1);
		return 0;
	}
	f = &st->f[d & (GL_MAX_DEPTH - 1)];
	f->sp = PT_REGS_SP(ctx);
	f->addr = gl_spec_arg(ctx, &s, s.arg_addr);
	f->size = gl_spec_arg(ctx, &s, s.arg_size);
	f->aux = gl_spec_arg(ctx, &s, s.arg_aux);
	f->aux2 = gl_spec_arg(ctx, &s, s.arg_aux2);
	f->mul = s.arg_mul ? gl_spec_arg(ctx, &s, s.arg_mul) : 1;
	/* No caller here: the return probe has it for free (gl_return_caller). Only a sync
	 * needs its entry time; a clock read costs ~25 ns on a VM. */
	f->ts_ns = s.shape == GL_SHAPE_SYNC ? bpf_ktime_get_ns() : 0;
	f->api = api;
	f->stack_id = -1;
	f->ra = 0;
	/* Read before the return probe runs: it replaces the return address after this. With
	 * --unwind auto, only in a process that has code a copy is ever made for: elsewhere
	 * the one hash lookup is all the unwinding costs. */
	fpl = unwind_bytes && unwind_adaptive &&
	      bpf_map_lookup_elem(&fpless, &(__u32){pid_tgid >> 32}) != NULL;
	if (unwind_bytes && (!unwind_adaptive || fpl) &&
	    bpf_probe_read_user(&f->ra, sizeof(f->ra), (void *)f->sp))
		f->ra = 0;
	f->hflags = 0;
	f->layer_seen = 0;
	/* No label unless this call's descriptor names one (AT_RETURN copies none at entry). */
	st->label_len[d & (GL_MAX_DEPTH - 1)] = ~0U;
	if (s.arg_desc && !(s.flags & GL_SPEC_DESC_AT_RETURN)) {
		__u32 k = d & (GL_MAX_DEPTH - 1);

		__builtin_memset(st->desc[k], 0, sizeof(st->desc[k]));
		st->label_len[k] = ~0U;
		/* A failed read leaves zeroes: nothing stale from an earlier call at this depth. */
		if (bpf_probe_read_user(st->desc[k], desc_copy_len(s), (void *)desc_addr(ctx, s))) {
			count_loss(pid_tgid >> 32, GL_STAT_READ_FAIL, 1);
			f->hflags |= GL_HF_DESC_READ_FAIL;
		} else {
			if (s.label_kind == GL_LABEL_STRINGVIEW || s.label_kind == GL_LABEL_CSTR)
				label_from_desc(s, st->desc[k], st->label[k], &st->label_len[k],
						&st->label_trunc[k]);
			if (s.flags & GL_SPEC_CODE_PTR)
				code_ptr_check(api, s, st->desc[k], pid_tgid, d);
		}
		if (s.arg_desc2)
			desc2_copy(ctx, s, st->desc[k], pid_tgid >> 32, f);
	}
	/* st->depth is still d: the copy's frames are those of the calls around this one. */
	if ((stack_depth || python_depth) && is_alloc(s) && !under_alloc(st, d, api))
		f->stack_id = alloc_stack((struct bpf_user_pt_regs_t *)ctx, pid_tgid, f->ra,
					  api | (fpl ? GL_AS_FPLESS : 0));
	st->depth = d + 1;
	return 0;
}

static __always_inline void emit_label(__u16 api, __u64 pid_tgid, __u8 depth, __u64 handle,
				       const char *label, __u32 len, __u8 trunc, __u8 spec_flags)
{
	struct gl_label_rec *r;

	if (len > GL_LABEL_MAX)
		return;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count_loss(pid_tgid >> 32, GL_STAT_RB_FULL, 1);
		return;
	}
	r->hdr.size = sizeof(*r);
	r->hdr.kind = GL_REC_LABEL;
	r->hdr.depth = depth;
	r->hdr.api = api;
	r->hdr.flags = 0;
	r->hdr.pid = pid_tgid >> 32;
	r->hdr.tid = (__u32)pid_tgid;
	r->hdr.ts_ns = bpf_ktime_get_ns();
	r->addr = handle;
	r->len = len;
	r->truncated = trunc;
	__builtin_memcpy(r->label, label, GL_LABEL_MAX);
	bpf_ringbuf_submit(r, rb_flags(spec_flags, sizeof(*r)));
}

/* SetLabel-style calls: (handle, data, len) or (handle, const char *) in the arguments. */
static __always_inline int emit_arg_label(struct pt_regs *ctx, __u16 api, struct gl_api_spec s,
					  __u64 pid_tgid, __u8 depth)
{
	/* Not on the BPF stack (512 bytes): a per-CPU scratch buffer. */
	__u32 zero = 0, len;
	char *buf = bpf_map_lookup_elem(&scratch, &zero);
	__u8 trunc;

	if (!buf)
		return 0;
	len = read_label(gl_arg(ctx, s.arg_aux), gl_arg(ctx, s.arg_aux2),
			 s.label_kind == GL_LABEL_ARGS_CSTR, buf, &trunc);
	if (len == ~0U)
		len = 0; /* SetLabel(NULL) clears the label */
	emit_label(api, pid_tgid, depth, gl_arg(ctx, s.arg_addr), buf, len, trunc, s.flags);
	return 0;
}

/* An entry-only call with a struct argument: a gl_desc_rec at entry. */
static __always_inline int emit_entry_desc(struct pt_regs *ctx, __u16 api, struct gl_api_spec s,
					   __u64 pid_tgid, __u8 depth)
{
	struct gl_desc_rec *dr;

	dr = bpf_ringbuf_reserve(&events, sizeof(*dr), 0);
	if (!dr) {
		count_loss(pid_tgid >> 32, GL_STAT_RB_FULL, 1);
		return 0;
	}
	rec_header(&dr->call, GL_REC_NOTIFY, depth, api, pid_tgid, bpf_ktime_get_ns());
	dr->call.hdr.size = sizeof(*dr);
	dr->call.hdr.flags = GL_HF_DESC;
	dr->call.addr = gl_spec_arg(ctx, &s, s.arg_addr);
	dr->call.size = gl_spec_arg(ctx, &s, s.arg_size);
	dr->call.aux = gl_spec_arg(ctx, &s, s.arg_aux);
	dr->call.aux2 = gl_spec_arg(ctx, &s, s.arg_aux2);
	dr->call.caller = gl_entry_caller(ctx);
	dr->call.ret = 0;
	dr->call.stack_id = -1;
	__builtin_memset(dr->desc, 0, sizeof(dr->desc));
	if (bpf_probe_read_user(dr->desc, desc_copy_len(s), (void *)desc_addr(ctx, s))) {
		dr->call.hdr.flags |= GL_HF_DESC_READ_FAIL;
		count_loss(pid_tgid >> 32, GL_STAT_READ_FAIL, 1);
	} else if (s.flags & GL_SPEC_CODE_PTR) {
		/* Before the call record: user space learns of the callback first. */
		code_ptr_check(api, s, dr->desc, pid_tgid, depth);
	}
	bpf_ringbuf_submit(dr, rb_flags(s.flags, sizeof(*dr)));
	return 0;
}

/* A free with nothing but a pointer (cudaFree, ...): its short record (gl_small_rec). */
static __always_inline int emit_small_free(struct pt_regs *ctx, __u16 api, struct gl_api_spec s,
					   __u64 pid_tgid, __u8 depth)
{
	struct gl_small_rec *r = bpf_ringbuf_reserve(&events, GL_SMALL_FREE_SIZE, 0);

	if (!r) {
		/* A lost free leaves its allocation live: the verdict bounds what that adds. */
		count_loss(pid_tgid >> 32, GL_STAT_RB_FULL, 1);
		if (gl_arg(ctx, s.arg_addr))
			count_loss(pid_tgid >> 32, GL_STAT_LOST_FREES, 1);
		return 0;
	}
	hdr_fill(&r->hdr, GL_SMALL_FREE_SIZE, GL_REC_FREE_SMALL, depth, api, pid_tgid,
		 bpf_ktime_get_ns());
	r->addr = gl_arg(ctx, s.arg_addr);
	r->caller = gl_entry_caller(ctx);
	bpf_ringbuf_submit(r, rb_flags(s.flags, GL_SMALL_FREE_SIZE));
	return 0;
}

/*
 * Entry-only calls (frees, markers): the record is complete at entry. A global subprogram:
 * gl_enter reaches it from each of three shapes.
 */
GL_GLOBAL int emit_entry(struct bpf_user_pt_regs_t *uctx, __u64 api)
{
	struct pt_regs *ctx = (struct pt_regs *)uctx;
	struct gl_api_spec s;
	struct gl_call_rec *r;
	__u64 pid_tgid, size, aux, aux2;
	struct tstate *st;
	__u8 kind;

	if (api >= GL_API_MAX)
		return 0;
	s = SPEC(api);
	pid_tgid = cur_pid_tgid();
	st = tstate_get(false);
	kind = s.shape == GL_SHAPE_NOTIFY ? GL_REC_NOTIFY : GL_REC_FREE;
	if ((s.flags & GL_SPEC_HOLD) && bpf_map_lookup_elem(&held, &(__u32){pid_tgid >> 32}) &&
	    !tracer_gone)
		/* Queued before the record is visible, so user space's SIGCONT cannot precede it. */
		bpf_send_signal(SIGSTOP);
	if (s.label_kind == GL_LABEL_ARGS_SV || s.label_kind == GL_LABEL_ARGS_CSTR)
		return emit_arg_label(ctx, api, s, pid_tgid, st ? st->depth : 0);
	if (s.arg_desc)
		return emit_entry_desc(ctx, api, s, pid_tgid, st ? st->depth : 0);

	size = gl_spec_arg(ctx, &s, s.arg_size);
	aux = gl_spec_arg(ctx, &s, s.arg_aux);
	aux2 = gl_spec_arg(ctx, &s, s.arg_aux2);
	if (kind == GL_REC_FREE && !size && !aux && !aux2)
		return emit_small_free(ctx, api, s, pid_tgid, st ? st->depth : 0);
	r = rec_reserve(pid_tgid >> 32);
	if (!r) {
		/* A lost free leaves its allocation live: the verdict bounds what that adds. */
		if (kind == GL_REC_FREE && gl_arg(ctx, s.arg_addr))
			count_loss(pid_tgid >> 32, GL_STAT_LOST_FREES, 1);
		return 0;
	}
	rec_header(r, kind, st ? st->depth : 0, api, pid_tgid, bpf_ktime_get_ns());
	r->addr = gl_spec_arg(ctx, &s, s.arg_addr);
	r->size = size;
	r->aux = aux;
	r->aux2 = aux2;
	r->caller = gl_entry_caller(ctx);
	r->ret = 0;
	r->stack_id = -1;
	bpf_ringbuf_submit(r, rb_flags(s.flags, sizeof(*r)));
	return 0;
}

/* ---- allocations reported complete, and USDT probes ---- */

/* A spec's four argument positions (arg_addr, arg_size, arg_aux, arg_aux2), as read. */
struct gl_args {
	__u64 v[4];
};

/* The most bytes of user memory one read takes under a USDT's arguments. */
#define GL_USDT_SPAN 64

static __always_inline struct __bpf_usdt_arg_spec *usdt_arg_spec(struct __bpf_usdt_spec *spec,
								 __u32 n)
{
	/* n == 0 wraps: past the bound */
	__u64 i = (__u64)n - 1;

	/*
	 * Bounded on the register the index is taken from: the compiler would otherwise test n
	 * in a 32-bit copy, which verifiers before 6.x do not carry over to i.
	 */
	barrier_var(i);
	if (!spec || i >= BPF_USDT_MAX_ARG_CNT)
		return NULL;
	barrier_var(i);
	if (i >= (__u64)spec->arg_cnt)
		return NULL;
	return &spec->args[i];
}

/*
 * A USDT's arguments (usdt_args_of). libbpf decodes the note's argument specs (user/probe),
 * and its bpf_usdt_arg reads one argument a call: the spec looked up, the base register read
 * through a helper and, for an argument in memory, one read of user memory, each time. In a
 * uprobe a read of user memory is the dearest step (~70-150 ns on this project's VM), and a
 * probe's arguments in memory are most often a few bytes apart off one register (locals off
 * %rbp, spills off %rsp). So gl_usdt looks the spec up once per hit, registers are read by
 * loads (gl_ctx_word), and the arguments in memory off the first such argument's register
 * are read at once when they lie within GL_USDT_SPAN bytes; another argument in memory is a
 * read of its own, and an indexed address (SIB) goes to bpf_usdt_arg. PyTorch's block pair
 * (four arguments, all in memory) took 1.24-1.42 us of BPF run time through bpf_usdt_arg;
 * the span read alone took it to 0.95-1.15 (bpftrace's script 0.66-0.75, empty programs
 * 0.14), the one lookup and the loads a further 13-25 % (three same-run A/Bs, 2026-12-03).
 * Global subprograms, each checked once: unrolled in gl_usdt, the four arguments' paths took
 * the verifier 5x the work.
 */
struct gl_usdt_span {
	/* A word past the span: an argument in its last 8 bytes is read as two words. */
	__u64 w[GL_USDT_SPAN / 8 + 1];
	__s64 lo;  /* the span's offset from its register */
	__s32 reg; /* offset of that register in struct pt_regs; -1: no span read */
};

/*
 * The span of want's arguments in memory off the register of the first of them, read into
 * sp when it is at most GL_USDT_SPAN bytes (each argument is read as 8 bytes and narrowed,
 * as bpf_usdt_arg reads it); sp->reg -1 otherwise.
 */
GL_GLOBAL int usdt_span_read(struct bpf_user_pt_regs_t *uctx, struct __bpf_usdt_spec *spec,
			     __u32 want, struct gl_usdt_span *sp)
{
	struct __bpf_usdt_arg_spec *a;
	__s64 lo = 0, hi = 0;
	int reg = -1, i;
	unsigned long base;
	__u64 len;

	if (!sp)
		return 0;
	sp->reg = -1;
	for (i = 0; i < 4; i++) {
		a = usdt_arg_spec(spec, (want >> (8 * i)) & 0xff);
		if (!a || a->arg_type != BPF_USDT_ARG_REG_DEREF || (reg >= 0 && a->reg_off != reg))
			continue;
		if (reg < 0 || (__s64)a->val_off < lo)
			lo = a->val_off;
		if (reg < 0 || (__s64)a->val_off + 8 > hi)
			hi = a->val_off + 8;
		reg = a->reg_off;
	}
	len = hi - lo;
	if (reg < 0 || len > GL_USDT_SPAN || gl_ctx_word(uctx, reg, &base) ||
	    bpf_probe_read_user(sp->w, len, (void *)(base + lo)))
		return 0;
	sp->lo = lo;
	sp->reg = reg;
	return 0;
}

/*
 * Argument n (1-based; 0: unused, read as 0) of the USDT that fired, as bpf_usdt_arg reads
 * it: from sp when it lies in the span read there; a register or a constant from the spec at
 * hand, the register by a load (gl_ctx_word), where bpf_usdt_arg looks the spec up again and
 * reads the register through a helper: ~30 ns each on this project's VM. An indexed address
 * (SIB) goes to bpf_usdt_arg. A position the probe does not have reads 0 and is no failure
 * (bpf_usdt_arg's -ENOENT); a read that fails is counted.
 */
GL_GLOBAL __u64 usdt_arg_read(struct bpf_user_pt_regs_t *uctx, struct __bpf_usdt_spec *spec,
			      __u32 n, struct gl_usdt_span *sp, __u32 pid)
{
	struct __bpf_usdt_arg_spec *a = usdt_arg_spec(spec, n);
	unsigned long base;
	__u64 off, v, sign;
	long got = 0;

	if (!a || !sp)
		return 0;
	switch (a->arg_type) {
	case BPF_USDT_ARG_CONST:
		v = a->val_off;
		break;
	case BPF_USDT_ARG_REG:
		if (gl_ctx_word(uctx, a->reg_off, &base))
			goto fail;
		v = base;
		break;
	case BPF_USDT_ARG_REG_DEREF:
		off = a->val_off - sp->lo;
		if (sp->reg >= 0 && a->reg_off == sp->reg && off <= GL_USDT_SPAN - 8) {
			/*
			 * From the two aligned words under it (the verifier refuses a misaligned
			 * read of the stack); the second shifted in two steps, so that a shift of
			 * 64 is none.
			 */
			v = sp->w[off / 8] >> (off % 8 * 8);
			v |= (sp->w[off / 8 + 1] << 1) << (63 - off % 8 * 8);
			break;
		}
		if (gl_ctx_word(uctx, a->reg_off, &base) ||
		    bpf_probe_read_user(&v, sizeof(v), (void *)(base + a->val_off)))
			goto fail;
		break;
	default:
		if (bpf_usdt_arg((struct pt_regs *)uctx, n - 1, &got))
			goto fail;
		return got;
	}
	/* narrowed from 1, 2 or 4 bytes, sign-extended if signed */
	v <<= a->arg_bitshift;
	sign = a->arg_signed ? (__u64)((__s64)v >> 63) : 0;
	return v >> a->arg_bitshift | (~(~0ULL >> a->arg_bitshift) & sign);
fail:
	count_loss(pid, GL_STAT_READ_FAIL, 1);
	return 0;
}

/*
 * The arguments of the USDT that fired at the positions packed in want (a byte each, 1-based;
 * 0: unused), into out; 0 for a position the probe does not have (a step marker's spec reads
 * four): no failure, as bpf_usdt_arg's -ENOENT. Any other error is a read failure, counted.
 */
GL_GLOBAL int usdt_args_of(struct bpf_user_pt_regs_t *uctx, struct __bpf_usdt_spec *spec,
			   __u32 want, struct gl_args *out, __u32 pid)
{
	/* zeroed: the verifier reads a stack slot at a variable offset only if written */
	struct gl_usdt_span sp = {};
	int i;

	if (!out)
		return 0;
	usdt_span_read(uctx, spec, want, &sp);
	/* a position unused (a free's three) costs no call */
	for (i = 0; i < 4; i++)
		out->v[i] = (want >> (8 * i)) & 0xff
				? usdt_arg_read(uctx, spec, (want >> (8 * i)) & 0xff, &sp, pid)
				: 0;
	return 0;
}

/* A spec's argument positions, as usdt_args_of takes them. */
static __always_inline __u32 spec_args(struct gl_api_spec s)
{
	return s.arg_addr | s.arg_size << 8 | s.arg_aux << 16 | (__u32)s.arg_aux2 << 24;
}

/*
 * The arguments at a spec's positions: a USDT's (usdt: its libbpf spec) through usdt_args_of,
 * a function's registers.
 */
static __always_inline void args_of(struct pt_regs *ctx, struct gl_api_spec s,
				    struct __bpf_usdt_spec *usdt, __u32 pid, struct gl_args *out)
{
	if (usdt) {
		usdt_args_of((struct bpf_user_pt_regs_t *)ctx, usdt, spec_args(s), out, pid);
		return;
	}
	out->v[0] = gl_arg(ctx, s.arg_addr);
	out->v[1] = gl_arg(ctx, s.arg_size);
	out->v[2] = gl_arg(ctx, s.arg_aux);
	out->v[3] = gl_arg(ctx, s.arg_aux2);
}

/* emit_done's short record: a FREE_SMALL (size unused) or an ALLOC_SMALL. */
static __always_inline int small_done(struct pt_regs *ctx, __u16 api, struct gl_api_spec s,
				      __u64 pid_tgid, __u8 depth, __u8 kind, __u64 addr, __u64 size,
				      bool usdt)
{
	__u64 caller = usdt ? PT_REGS_IP(ctx) : gl_entry_caller(ctx);
	__u32 pid = pid_tgid >> 32;
	struct gl_small_rec *sr;

	if (kind == GL_REC_FREE_SMALL) {
		sr = bpf_ringbuf_reserve(&events, GL_SMALL_FREE_SIZE, 0);
		if (!sr)
			goto lost;
		hdr_fill(&sr->hdr, GL_SMALL_FREE_SIZE, kind, depth, api, pid_tgid,
			 bpf_ktime_get_ns());
		sr->addr = addr;
		sr->caller = caller;
		bpf_ringbuf_submit(sr, rb_flags(s.flags, GL_SMALL_FREE_SIZE));
		return 0;
	}
	sr = bpf_ringbuf_reserve(&events, GL_SMALL_ALLOC_SIZE, 0);
	if (!sr)
		goto lost;
	hdr_fill(&sr->hdr, GL_SMALL_ALLOC_SIZE, kind, depth, api, pid_tgid, bpf_ktime_get_ns());
	sr->addr = addr;
	sr->caller = caller;
	sr->size = size;
	bpf_ringbuf_submit(sr, rb_flags(s.flags, GL_SMALL_ALLOC_SIZE));
	return 0;
lost:
	count_loss(pid, GL_STAT_RB_FULL, 1);
	count_loss(pid, kind == GL_REC_FREE_SMALL ? GL_STAT_LOST_FREES : GL_STAT_LOST_ALLOCS, 1);
	return 0;
}

/*
 * An allocation complete where the probe fires (GL_SHAPE_ALLOC_DONE): one record, with the
 * stack. A USDT sits inside a function: its call site is the probe's own address (the kernel
 * puts the instruction pointer back on the probe before handlers run), and [sp] is no return
 * address; a function probe's is the return address at entry. With GL_SPEC2_SIGNED_SIZE a
 * negative size releases addr: a free record, which takes no stack. usdt: the USDT's libbpf
 * spec, NULL for a function probe.
 */
static __always_inline int emit_done(struct pt_regs *ctx, __u16 api, struct gl_api_spec s,
				     struct __bpf_usdt_spec *usdt)
{
	__u64 pid_tgid = cur_pid_tgid();
	__u32 pid = pid_tgid >> 32;
	struct tstate *st = tstate_get(false);
	__u8 depth = st ? st->depth : 0;
	struct gl_call_rec *r;
	__s32 stack_id = -1;
	struct gl_args args;
	__u64 addr, aux, aux2;
	bool release;
	__s64 size;

	args_of(ctx, s, usdt, pid, &args);
	addr = args.v[0];
	size = args.v[1];
	aux = args.v[2];
	aux2 = args.v[3];
	release = (s.flags2 & GL_SPEC2_SIGNED_SIZE) && size < 0;

	/* Unwound as a function probe's allocation is, ahead of the record. */
	if (!release && (stack_depth || python_depth) && !(st && under_alloc(st, depth, api)))
		stack_id = alloc_stack((struct bpf_user_pt_regs_t *)ctx, pid_tgid, 0,
				       api | GL_AS_FPLESS | GL_AS_DONE | (usdt ? GL_AS_USDT : 0));
	/*
	 * The short record when it says all (device 0, stream 0, no stack): gl_small_rec. Two
	 * reservations of constant size: the verifier has to see which one it writes.
	 */
	if (!aux && !aux2 && stack_id < 0 && release)
		return small_done(ctx, api, s, pid_tgid, depth, GL_REC_FREE_SMALL, addr, 0,
				  usdt != NULL);
	if (!aux && !aux2 && stack_id < 0)
		return small_done(ctx, api, s, pid_tgid, depth, GL_REC_ALLOC_SMALL, addr, size,
				  usdt != NULL);
	r = rec_reserve(pid);
	if (!r)
		goto lost;
	rec_header(r, release ? GL_REC_FREE : GL_REC_ALLOC, depth, api, pid_tgid,
		   bpf_ktime_get_ns());
	r->addr = addr;
	r->size = release ? (__u64)-size : (__u64)size;
	r->aux = aux;
	r->aux2 = aux2;
	r->caller = usdt ? PT_REGS_IP(ctx) : gl_entry_caller(ctx);
	r->ret = 0;
	r->stack_id = stack_id;
	bpf_ringbuf_submit(r, rb_flags(s.flags, sizeof(*r)));
	return 0;
lost:
	/* What a lost block costs is its own record: its memory is its segment's. */
	count_loss(pid, release ? GL_STAT_LOST_FREES : GL_STAT_LOST_ALLOCS, 1);
	return 0;
}

/*
 * emit_done for a function probe, as a global subprogram: what gl_enter inlines stays on its
 * own frame, and the frames of frame_push, alloc_stack and the Python walk's callbacks, one
 * above another, must fit in the 512 bytes with it.
 */
GL_GLOBAL int enter_done(struct bpf_user_pt_regs_t *uctx, __u64 api)
{
	if (api >= GL_API_MAX)
		return 0;
	return emit_done((struct pt_regs *)uctx, api, SPEC(api), NULL);
}

/* A USDT free or marker: the record is complete at the probe, as at a function's entry. */
static __always_inline int usdt_entry(struct pt_regs *ctx, __u16 api, struct gl_api_spec s,
				      struct __bpf_usdt_spec *usdt)
{
	__u64 pid_tgid = cur_pid_tgid();
	__u32 pid = pid_tgid >> 32;
	struct tstate *st = tstate_get(false);
	__u8 kind = s.shape == GL_SHAPE_NOTIFY ? GL_REC_NOTIFY : GL_REC_FREE;
	struct gl_call_rec *r;
	struct gl_args args;
	__u64 addr, size, aux, aux2;

	args_of(ctx, s, usdt, pid, &args);
	addr = args.v[0];
	size = args.v[1];
	aux = args.v[2];
	aux2 = args.v[3];

	if (kind == GL_REC_FREE && !size && !aux && !aux2) {
		struct gl_small_rec *sr = bpf_ringbuf_reserve(&events, GL_SMALL_FREE_SIZE, 0);

		if (!sr) {
			count_loss(pid, GL_STAT_RB_FULL, 1);
			if (addr)
				count_loss(pid, GL_STAT_LOST_FREES, 1);
			return 0;
		}
		hdr_fill(&sr->hdr, GL_SMALL_FREE_SIZE, GL_REC_FREE_SMALL, st ? st->depth : 0, api,
			 pid_tgid, bpf_ktime_get_ns());
		sr->addr = addr;
		sr->caller = PT_REGS_IP(ctx);
		bpf_ringbuf_submit(sr, rb_flags(s.flags, GL_SMALL_FREE_SIZE));
		return 0;
	}
	r = rec_reserve(pid);
	if (!r) {
		if (kind == GL_REC_FREE && addr)
			count_loss(pid, GL_STAT_LOST_FREES, 1);
		return 0;
	}
	rec_header(r, kind, st ? st->depth : 0, api, pid_tgid, bpf_ktime_get_ns());
	r->addr = addr;
	r->size = size;
	r->aux = aux;
	r->aux2 = aux2;
	r->caller = PT_REGS_IP(ctx);
	r->ret = 0;
	r->stack_id = -1;
	bpf_ringbuf_submit(r, rb_flags(s.flags, sizeof(*r)));
	return 0;
}

/*
 * Every USDT link: the API id is its USDT cookie (libbpf owns the BPF cookie). The spec is
 * looked up here once, for the cookie and the arguments both, where bpf_usdt_cookie and
 * bpf_usdt_arg each look it up again.
 */
SEC("usdt")
int gl_usdt(struct pt_regs *ctx)
{
	int spec_id = __bpf_usdt_spec_id(ctx);
	struct __bpf_usdt_spec *usdt;
	struct gl_api_spec s;
	__u64 api;

	usdt = spec_id < 0 ? NULL : bpf_map_lookup_elem(&__bpf_usdt_specs, &spec_id);
	if (!usdt)
		return 0;
	api = usdt->usdt_cookie;
	if (api >= GL_API_MAX)
		return 0;
	s = SPEC(api);
	py_handoff(ctx, s, &py_usdt_prog);
	switch (s.shape) {
	case GL_SHAPE_ALLOC_DONE:
		return emit_done(ctx, api, s, usdt);
	case GL_SHAPE_FREE:
	case GL_SHAPE_FREE_ASYNC:
	case GL_SHAPE_NOTIFY:
		return usdt_entry(ctx, api, s, usdt);
	default:
		return 0;
	}
}

SEC("uprobe.multi")
int gl_enter(struct pt_regs *ctx)
{
	__u64 api = bpf_get_attach_cookie(ctx);
	struct gl_api_spec s;
#ifdef GL_TEST_STACK_PAD
	/* Only in the test build of tests/build.mk: a stack the verifier check must refuse. */
	char pad[GL_TEST_STACK_PAD];

	/* A helper writes all of it: the verifier sees the whole buffer on the stack. */
	bpf_probe_read_kernel(pad, sizeof(pad), NULL);
	if (pad[GL_TEST_STACK_PAD - 1] == 42)
		return 1;
#endif

	if (api >= GL_API_MAX)
		return 0;
	s = SPEC(api);
	py_handoff(ctx, s, &py_enter_prog);
	switch (s.shape) {
	case GL_SHAPE_ALLOC_OUTPTR:
	case GL_SHAPE_ALLOC_RET:
	case GL_SHAPE_SYNC:
	case GL_SHAPE_CALL:
		return frame_push((struct bpf_user_pt_regs_t *)ctx, api);
	case GL_SHAPE_FREE:
	case GL_SHAPE_FREE_ASYNC:
	case GL_SHAPE_NOTIFY:
		return emit_entry((struct bpf_user_pt_regs_t *)ctx, api);
	case GL_SHAPE_ALLOC_DONE:
		return enter_done((struct bpf_user_pt_regs_t *)ctx, api);
	default:
		return 0;
	}
}

/* The result of an allocation: through the out-pointer, or the return value. */
static __always_inline void alloc_result(struct pt_regs *ctx, struct gl_api_spec s, struct frame *f,
					 struct gl_call_rec *r, __u32 pid)
{
	__u64 rc = PT_REGS_RC(ctx);
	__u64 size = f->size, mul = f->mul;
	bool ok;

	if (s.shape == GL_SHAPE_ALLOC_OUTPTR) {
		r->ret = (__s32)rc;
		ok = r->ret == 0;
		r->addr = 0;
		if (s.flags2 & GL_SPEC2_ADDR_ARG)
			r->addr = ok ? f->addr : 0;
		else if (ok && bpf_probe_read_user(&r->addr, sizeof(r->addr), (void *)f->addr)) {
			r->hdr.flags |= GL_HF_ADDR_READ_FAIL;
			count_loss(pid, GL_STAT_READ_FAIL, 1);
		}
	} else {
		r->addr = rc;
		ok = (s.flags & GL_SPEC_FAIL_IS_NEG1) ? rc != (__u64)-1 : rc != 0;
		r->ret = ok ? 0 : -1;
	}
	if (ok && (s.flags & GL_SPEC_SIZE_BY_PTR)) {
		__u64 p = size;

		size = 0;
		if (bpf_probe_read_user(&size, sizeof(size), (void *)p)) {
			r->hdr.flags |= GL_HF_ADDR_READ_FAIL;
			count_loss(pid, GL_STAT_READ_FAIL, 1);
		}
	}
	if (mul != 1) {
		__u64 prod = size * mul;

		/* Overflow test by division: clang turns the usual idioms into a 128-bit
		 * multiply, which BPF lacks. The barrier keeps it from seeing through this. */
		barrier_var(prod);
		if (size && prod / size != mul) {
			r->hdr.flags |= GL_HF_SIZE_CLAMPED;
			prod = ~0ULL;
		}
		size = prod;
	}
	r->hdr.kind = ok ? GL_REC_ALLOC : GL_REC_ALLOC_FAIL;
	r->size = size;
	r->aux = f->aux;
	r->aux2 = f->aux2;
}

/*
 * The record of a return matched with frame `depth` of st, into r: the caller's stack, copied
 * into the ring buffer by the caller (a record being written goes to no subprogram). `how`
 * holds the API id in its low 16 bits, the frame above 16, the stale frames above 24. A
 * global subprogram: both kinds of return record (with a descriptor or without) are made
 * from it, and its branches on the call's shape and flags are checked once.
 */
GL_GLOBAL int fill_exit(struct bpf_user_pt_regs_t *uctx, struct tstate *st, __u64 pid_tgid,
			__u32 how, struct gl_call_rec *r)
{
	struct pt_regs *ctx = (struct pt_regs *)uctx;
	__u16 api = how & 0xffff;
	__u32 depth = (how >> 16) & (GL_MAX_DEPTH - 1), stale = (how >> 24) & (GL_MAX_DEPTH - 1);
	struct gl_api_spec s;
	struct frame *f;

	if (!st || !r || api >= GL_API_MAX)
		return 0;
	s = SPEC(api);
	f = &st->f[depth];
	rec_header(r, GL_REC_CALL, depth, api, pid_tgid, bpf_ktime_get_ns());
	r->hdr.flags = f->hflags;
	if (stale)
		r->hdr.flags |= GL_HF_STALE_FRAMES;
	r->caller = gl_return_caller(ctx);
	r->stack_id = f->stack_id;
	switch (s.shape) {
	case GL_SHAPE_ALLOC_OUTPTR:
	case GL_SHAPE_ALLOC_RET:
		alloc_result(ctx, s, f, r, pid_tgid >> 32);
		break;
	case GL_SHAPE_SYNC:
		r->hdr.kind = GL_REC_SYNC;
		/* fallthrough */
	default:
		r->ret = (__s32)PT_REGS_RC(ctx);
		r->addr = f->addr;
		r->size = f->size;
		r->aux = f->aux;
		/* A sync completes work queued before it began: keep its entry time. */
		r->aux2 = s.shape == GL_SHAPE_SYNC ? f->ts_ns : f->aux2;
		break;
	}
	return 0;
}

/* Whether an allocation call returning now succeeded (false for other shapes). */
static __always_inline bool alloc_succeeded(struct pt_regs *ctx, struct gl_api_spec s)
{
	__u64 rc = PT_REGS_RC(ctx);

	if (s.shape == GL_SHAPE_ALLOC_OUTPTR)
		return (__s32)rc == 0;
	if (s.shape == GL_SHAPE_ALLOC_RET)
		return (s.flags & GL_SPEC_FAIL_IS_NEG1) ? rc != (__u64)-1 : rc != 0;
	return false;
}

/*
 * The record of a successful allocation was lost: count it, and its bytes. Once per
 * allocation, as the tracker folds layers into the allocation above them: a layer (the
 * driver's record under cudaMalloc's) is part of the outer call, lost or not, and a flood
 * that loses both records missed one allocation, not two; one whose layer's record went out
 * missed none (the tracker takes the layer for the allocation).
 */
static __always_inline void count_lost_alloc(struct pt_regs *ctx, struct gl_api_spec s,
					     struct frame *f, __u32 pid, bool layer)
{
	__u64 size = f->size * f->mul;

	/* A layer's record that went out shows the memory: the tracker has it, not missed. */
	if (layer || f->layer_seen || !alloc_succeeded(ctx, s))
		return;
	count_loss(pid, GL_STAT_LOST_ALLOCS, 1);
	/* Pitch sizes are read through a pointer at return: not worth it for a lost record. */
	if (s.flags & GL_SPEC_SIZE_BY_PTR)
		count_loss(pid, GL_STAT_LOST_ALLOCS_UNSIZED, 1);
	else
		count_loss(pid, GL_STAT_LOST_ALLOC_BYTES, size);
}

/*
 * A successful allocation returning without its entry: in flight when gpuleak attached, its
 * memory never seen and its size unknown. Calls in flight at attach nest: the driver's
 * cuMemAlloc returns without its entry inside cudaMalloc, which then does too, deeper on
 * the stack first. One allocation: counted at the first, and the allocation around it
 * (whose entry sp lies above) is not counted again.
 */
static __always_inline void count_orphan_alloc(struct tstate *st, __u16 api, struct gl_api_spec s,
					       __u64 entry_sp, __u32 pid)
{
	if (st && st->orphan_sp && st->orphan_sp < entry_sp && (s.flags & GL_SPEC_LAYERS)) {
		st->orphan_sp = entry_sp;
		return;
	}
	count_loss(pid, GL_STAT_LOST_ALLOCS, 1);
	count_loss(pid, GL_STAT_LOST_ALLOCS_UNSIZED, 1);
	/* Host memory a GPU call allocates is its own (under_alloc): no layer of it. */
	if (st && GL_API_FAMILY(api) != GL_FAM_LIBC)
		st->orphan_sp = entry_sp;
}

/* A return without a descriptor: the short record when it says all (gl_small_rec). */
/* outer: the frame of the allocation this one is a layer of (under_alloc), else NULL. */
static __always_inline int emit_exit(struct pt_regs *ctx, struct gl_api_spec s, struct tstate *st,
				     __u64 pid_tgid, __u32 how, struct frame *f,
				     struct frame *outer)
{
	struct gl_call_rec c, *r;
	struct gl_small_rec *sr;

	/* Initialised: the verifier lets a global subprogram read what it is passed. */
	__builtin_memset(&c, 0, sizeof(c));
	fill_exit((struct bpf_user_pt_regs_t *)ctx, st, pid_tgid, how, &c);
	if (c.hdr.kind == GL_REC_ALLOC && !c.aux && !c.aux2 && !c.ret && c.stack_id < 0) {
		sr = bpf_ringbuf_reserve(&events, GL_SMALL_ALLOC_SIZE, 0);
		if (!sr)
			goto lost;
		sr->hdr = c.hdr;
		sr->hdr.size = GL_SMALL_ALLOC_SIZE;
		sr->hdr.kind = GL_REC_ALLOC_SMALL;
		sr->addr = c.addr;
		sr->caller = c.caller;
		sr->size = c.size;
		bpf_ringbuf_submit(sr, rb_flags(s.flags, GL_SMALL_ALLOC_SIZE));
		goto sent;
	}
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r)
		goto lost;
	*r = c;
	bpf_ringbuf_submit(r, rb_flags(s.flags, sizeof(*r)));
sent:
	if (outer && c.hdr.kind == GL_REC_ALLOC)
		outer->layer_seen = 1;
	return 0;
lost:
	count_loss(pid_tgid >> 32, GL_STAT_RB_FULL, 1);
	count_lost_alloc(ctx, s, f, pid_tgid >> 32, outer != NULL);
	return 0;
}

/*
 * A return whose entry is frame i of st (the low byte of slot; frames above it, the next byte,
 * are stale): its record, and the label read at entry. A global subprogram, checked once
 * whichever of the GL_MAX_DEPTH exits of the search for the frame found it.
 */
GL_GLOBAL int exit_matched(struct bpf_user_pt_regs_t *uctx, struct tstate *st, __u64 pid_tgid,
			   __u64 api, __u32 slot)
{
	struct pt_regs *ctx = (struct pt_regs *)uctx;
	__u32 pid = pid_tgid >> 32, i = slot & (GL_MAX_DEPTH - 1);
	__u32 stale = (slot >> 8) & (GL_MAX_DEPTH - 1);
	struct gl_peek_rec *pr = NULL;
	struct gl_api_spec s;
	struct gl_desc_rec *dr;
	struct gl_call_rec c;
	struct frame *f, *outer;
	bool label;
	__u64 handle;

	if (!st || api >= GL_API_MAX)
		return 0;
	s = SPEC(api);
	/* The slot stays intact until this thread's next traced call: no copy needed. */
	f = &st->f[i];
	st->depth = i;
	if (stale)
		count_stale(st, i, stale, pid);

	outer = under_alloc(st, i, api) ? &st->f[(i - 1) & (GL_MAX_DEPTH - 1)] : NULL;
	if (!s.arg_desc)
		return emit_exit(ctx, s, st, pid_tgid, api | i << 16 | stale << 24, f, outer);
	/* Separate reservations of constant size: the verifier needs to see which it is. */
	if (s.flags2 & GL_SPEC2_PEEK_RET) {
		pr = bpf_ringbuf_reserve(&events, sizeof(*pr), 0);
		dr = pr ? &pr->desc : NULL;
	} else {
		dr = bpf_ringbuf_reserve(&events, sizeof(*dr), 0);
	}
	if (!dr) {
		count_loss(pid, GL_STAT_RB_FULL, 1);
		count_lost_alloc(ctx, s, f, pid, outer != NULL);
		return 0;
	}
	__builtin_memset(&c, 0, sizeof(c));
	fill_exit(uctx, st, pid_tgid, api | i << 16 | stale << 24, &c);
	dr->call = c;
	dr->call.hdr.size = pr ? sizeof(*pr) : sizeof(*dr);
	dr->call.hdr.flags |= GL_HF_DESC;
	if (pr) {
		/* The first bytes of the object just made, for user space to tell what it is. */
		__u32 len = s.peek_len > GL_PEEK_MAX ? GL_PEEK_MAX : s.peek_len;

		__builtin_memset(pr->peek, 0, sizeof(pr->peek));
		if (dr->call.hdr.kind == GL_REC_ALLOC && len) {
			if (bpf_probe_read_user(pr->peek, len & (2 * GL_PEEK_MAX - 1),
						(void *)dr->call.addr)) {
				dr->call.hdr.flags |= GL_HF_PEEK_READ_FAIL;
				count_loss(pid, GL_STAT_READ_FAIL, 1);
			} else {
				dr->call.hdr.flags |= GL_HF_PEEK;
			}
		}
	}
	if (s.flags & GL_SPEC_DESC_AT_RETURN) {
		/* What the call wrote through its out-pointer, e.g. every communicator made; a
		 * failed CUDA or NCCL call (nonzero return: WebGPU's wait returns 1 for success)
		 * wrote nothing worth reading, and its out-struct may sit on a page nothing
		 * touched yet, which BPF cannot fault in. */
		__u32 len = s.desc_len;

		if (len > GL_DESC_MAX)
			len = GL_DESC_MAX;
		__builtin_memset(dr->desc, 0, GL_DESC_MAX);
		if (GL_API_FAMILY(api) <= GL_FAM_NCCL && (__s32)PT_REGS_RC(ctx)) {
			dr->call.hdr.flags |= GL_HF_DESC_READ_FAIL;
		} else if (bpf_probe_read_user(dr->desc, len, (void *)(f->addr + s.desc_off))) {
			dr->call.hdr.flags |= GL_HF_DESC_READ_FAIL;
			count_loss(pid_tgid >> 32, GL_STAT_READ_FAIL, 1);
		}
	} else {
		__builtin_memcpy(dr->desc, st->desc[i], GL_DESC_MAX);
	}
	handle = dr->call.addr;
	/* A created object's label, or a call's (an NVTX range name): not a failed one's. */
	label = (dr->call.hdr.kind == GL_REC_ALLOC || dr->call.hdr.kind == GL_REC_CALL) &&
		st->label_len[i] != ~0U;
	/* User space waits for the label before judging what the handle is (its rule). */
	if (label)
		dr->call.hdr.flags |= GL_HF_LABEL;
	if (outer && dr->call.hdr.kind == GL_REC_ALLOC)
		outer->layer_seen = 1;
	bpf_ringbuf_submit(dr, rb_flags(s.flags, sizeof(*dr)));
	/* The handle exists only now: a label read at entry follows its allocation. */
	if (label)
		emit_label(api, pid_tgid, i, handle, st->label[i], st->label_len[i],
			   st->label_trunc[i], s.flags);
	return 0;
}

SEC("uretprobe.multi")
int gl_exit(struct pt_regs *ctx)
{
	__u64 api = bpf_get_attach_cookie(ctx);
	__u64 pid_tgid = cur_pid_tgid();
	__u32 pid = pid_tgid >> 32;
	__u64 entry_sp = GL_RET_SP_TO_ENTRY_SP(PT_REGS_SP(ctx));
	struct gl_api_spec s;
	struct tstate *st;
	__u32 d, i = 0;
	bool found = false;

	if (api >= GL_API_MAX)
		return 0;
	s = SPEC(api);
	st = tstate_get(false);
	if (!st) {
		count_loss(pid, GL_STAT_RET_NO_ENTRY, 1);
		/* The thread's state, made now: it remembers the allocation for its outer call. */
		if (alloc_succeeded(ctx, s))
			count_orphan_alloc(tstate_get(true), api, s, entry_sp, pid);
		return 0;
	}
	d = st->depth;
	/* Match by entry stack pointer: a frame left by a longjmp/throw must not pair up. */
	for (__u32 k = 0; k < GL_MAX_DEPTH; k++) {
		if (k >= d)
			break;
		i = (d - 1 - k) & (GL_MAX_DEPTH - 1);
		if (st->f[i].sp == entry_sp && st->f[i].api == api) {
			found = true;
			break;
		}
	}
	if (!found) {
		count_loss(pid, GL_STAT_RET_NO_ENTRY, 1);
		/* An allocation that began before attach, or whose entry was not kept: its
		 * memory is never seen, and its size was an argument. */
		if (alloc_succeeded(ctx, s))
			count_orphan_alloc(st, api, s, entry_sp, pid);
		return 0;
	}
	return exit_matched((struct bpf_user_pt_regs_t *)ctx, st, pid_tgid, api,
			    i | (d - 1 - i) << 8);
}

/* ---- process lifecycle: scheduler tracepoints, for traced processes only ---- */

/* Deepest pid namespace level looked at for gpuleak's own (containers nest a few deep). */
#define GL_MAX_PIDNS_LEVEL 8

/* The number of pid p in gpuleak's pid namespace, 0 when it has none there. */
static __always_inline __u32 pid_in_ns(struct pid *p)
{
	struct upid up;
	__u32 level;

	if (!p)
		return 0;
	level = BPF_CORE_READ(p, level);
	/* numbers[] has one entry per level down to the task's own namespace. */
	for (__u32 i = 0; i < GL_MAX_PIDNS_LEVEL; i++) {
		if (i > level)
			break;
		if (bpf_probe_read_kernel(&up, sizeof(up),
					  (void *)p + bpf_core_field_offset(p->numbers) +
					      i * bpf_core_type_size(struct upid)))
			return 0;
		if (up.ns && BPF_CORE_READ(up.ns, ns.inum) == pidns_ino)
			return up.nr;
	}
	return 0;
}

/* A task's process id in gpuleak's pid namespace, 0 when it has none there. */
static __always_inline __u32 task_tgid(struct task_struct *t)
{
	if (!pidns_ino)
		return BPF_CORE_READ(t, tgid);
	return pid_in_ns(BPF_CORE_READ(t, group_leader, thread_pid));
}

/* A task's thread id, as records carry it (gl_hdr.tid). */
static __always_inline __u32 task_tid(struct task_struct *t)
{
	if (!pidns_ino)
		return BPF_CORE_READ(t, pid);
	return pid_in_ns(BPF_CORE_READ(t, thread_pid));
}

/* A record about process pid; a loss is charged to `charge` (the parent, for a fork). */
static __always_inline struct gl_task_rec *task_rec(__u32 pid, __u32 charge, __u32 event,
						    struct task_struct *t)
{
	struct gl_task_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

	if (!r) {
		count_loss(charge, GL_STAT_RB_FULL, 1);
		count_loss(charge, GL_STAT_LOST_TASKS, 1);
		return NULL;
	}
	r->hdr.size = sizeof(*r);
	r->hdr.kind = GL_REC_TASK;
	r->hdr.depth = 0;
	r->hdr.api = 0;
	r->hdr.flags = 0;
	r->hdr.pid = pid;
	r->hdr.tid = pid;
	r->hdr.ts_ns = bpf_ktime_get_ns();
	r->event = event;
	r->flags = 0;
	r->ppid = 0;
	r->exit_code = 0;
	r->start_ns = BPF_CORE_READ(t, group_leader, start_boottime);
	BPF_CORE_READ_STR_INTO(&r->comm, t, comm);
	return r;
}

/*
 * A thread of a traced process made inside a traced call that hands its work to threads
 * (GL_SPEC2_ADOPT_THREADS): NCCL initialises the communicators of one ncclCommInitAll or
 * group on one new thread each and joins them before returning. What those threads
 * allocate is the call's, and user space can only tell them apart from any other thread by
 * this record. The innermost such call open on the parent is the one that made it.
 */
static __always_inline int thread_made(struct task_struct *parent, struct task_struct *child,
				       __u32 pid)
{
	struct gl_task_rec *r;
	struct tstate *st;
	__u32 d, k, api = 0;

	if (!bpf_map_lookup_elem(&traced, &pid))
		return 0;
	st = bpf_task_storage_get(&tstates, parent, 0, 0);
	if (!st)
		return 0;
	d = st->depth;
	for (__u32 i = 0; i < GL_MAX_DEPTH; i++) {
		if (i >= d)
			return 0;
		k = (d - 1 - i) & (GL_MAX_DEPTH - 1);
		api = st->f[k].api;
		if (api < GL_API_MAX && (SPEC(api).flags2 & GL_SPEC2_ADOPT_THREADS))
			break;
		if (i == GL_MAX_DEPTH - 1)
			return 0;
	}
	r = task_rec(pid, pid, GL_TASK_THREAD, child);
	if (!r)
		return 0;
	r->hdr.tid = task_tid(child);
	r->hdr.api = api;
	r->hdr.depth = k;
	r->ppid = task_tid(parent);
	bpf_ringbuf_submit(r, rb_flags(0, sizeof(*r)));
	return 0;
}

/* tp_btf arguments come typed through ctx: the verifier knows them as task pointers. */
SEC("tp_btf/sched_process_fork")
int gl_fork(__u64 *ctx)
{
	struct task_struct *parent = (void *)ctx[0], *child = (void *)ctx[1];
	struct gl_py_cfg *py;
	__u32 ppid, pid;
	struct gl_task_rec *r;
	__u8 one = 1;

	ppid = task_tgid(parent);
	pid = task_tgid(child);
	if (!pid)
		return 0;
	/* A new thread shares its parent's tgid: only new processes are followed. */
	if (pid == ppid)
		return thread_made(parent, child, pid);
	if (!bpf_map_lookup_elem(&traced, &ppid))
		return 0;
	if (!follow_children) {
		/* Not traced: said, so that a command whose work is in its child (sh -c) does
		 * not end in a report of nothing without a word. */
		r = task_rec(pid, ppid, GL_TASK_FORK, child);
		if (!r)
			return 0;
		r->ppid = ppid;
		r->flags = GL_TF_UNFOLLOWED;
		bpf_ringbuf_submit(r, 0);
		return 0;
	}
	if (bpf_map_update_elem(&traced, &pid, &one, BPF_ANY)) {
		count_loss(ppid, GL_STAT_MAP_FULL, 1);
		return 0;
	}
	/* The same interpreter at the same addresses: its Python frames from the first call. */
	py = bpf_map_lookup_elem(&pyprocs, &ppid);
	if (py && bpf_map_update_elem(&pyprocs, &pid, py, BPF_ANY))
		count_loss(ppid, GL_STAT_MAP_FULL, 1);
	/* The record first: a child stopped without user space knowing would stay stopped. */
	r = task_rec(pid, ppid, GL_TASK_FORK, child);
	if (!r)
		return 0;
	r->ppid = ppid;
	/*
	 * Stop the child before its first instruction, so nothing it does happens before its
	 * probes are in place (it shares the parent's libraries, but the probes filter by pid).
	 */
	if (bpf_ksym_exists(bpf_send_signal_task)) {
		if (!tracer_gone && !bpf_send_signal_task(child, SIGSTOP, PIDTYPE_TGID, 0))
			r->flags |= GL_TF_STOPPED;
	} else if (fork_hold_armed && !tracer_gone) {
		/* The kernel's thread id: what gl_fork_hold reads from current. */
		__u32 tid = BPF_CORE_READ(child, pid);

		if (!bpf_map_update_elem(&fork_holds, &tid, &one, BPF_ANY))
			r->flags |= GL_TF_STOPPED;
	}
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/*
 * --follow before Linux 6.13: a new task's first code is schedule_tail(), in its own context,
 * before it returns to user space; a SIGSTOP sent to itself here is taken on that return,
 * before its first instruction. At the exit of schedule_tail, not its entry: the runqueue lock
 * is released and interrupts are on again by then. User space resumes such a child only once
 * it has seen it stopped (a SIGCONT that came first would be undone by the SIGSTOP).
 */
SEC("fexit/schedule_tail")
int gl_fork_hold(void *ctx __attribute__((unused)))
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	if (!bpf_map_lookup_elem(&fork_holds, &tid))
		return 0;
	bpf_map_delete_elem(&fork_holds, &tid);
	if (!tracer_gone)
		bpf_send_signal(SIGSTOP);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int gl_exec(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	__u32 pid = task_tgid(p);
	struct gl_task_rec *r;

	/* Another program: the interpreter, if any, is elsewhere now (user space looks). */
	if ((python_depth || py_later) && pid)
		bpf_map_delete_elem(&pyprocs, &pid);
	/* With or without --follow: the process is the one traced, its new program too. */
	if (!pid || !bpf_map_lookup_elem(&traced, &pid))
		return 0;
	r = task_rec(pid, pid, GL_TASK_EXEC, p);
	if (!r)
		return 0;
	/* The new program has not run yet: it stops before ld.so's first instruction. */
	if (!tracer_gone && !bpf_send_signal(SIGSTOP))
		r->flags |= GL_TF_STOPPED;
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	return 0;
}

static long resume_one(struct bpf_map *map __attribute__((unused)), __u32 *pid,
		       __u8 *val __attribute__((unused)), void *ctx __attribute__((unused)))
{
	struct task_struct *t = bpf_task_from_pid(*pid);

	if (t) {
		bpf_send_signal_task(t, SIGCONT, PIDTYPE_TGID, 0);
		bpf_task_release(t);
	}
	return 0;
}

/*
 * Whether sched_process_exit passes group_dead as its second argument (set by user space from
 * the kernel's BTF). Older kernels (6.12 among them) pass the task alone, and reading ctx[1]
 * is refused at load there ("doesn't have 2-th argument"): with this false the read is dead
 * code the verifier never checks, and the last thread is told by the group's live count,
 * which do_exit() has already brought to 0 when the tracepoint fires.
 */
const volatile bool exit_has_group_dead = false;

SEC("tp_btf/sched_process_exit")
int gl_task_exit(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	bool group_dead;
	__u32 pid;
	struct gl_task_rec *r;

	if (exit_has_group_dead)
		group_dead = ctx[1];
	else
		group_dead = BPF_CORE_READ(p, signal, live.counter) == 0;
	if (!group_dead)
		return 0;
	pid = task_tgid(p);
	/*
	 * gpuleak dies still attached (SIGKILL, a crash: a clean exit detaches this program
	 * first): a process BPF or gpuleak stopped (at a fork, an exec, a dlopen) would stay
	 * stopped for good. From here on none is stopped (the links outlive this tracepoint a
	 * little: a fork now would stop its child), and every traced one gets SIGCONT; one
	 * running ignores it. Only in the initial pid namespace, where the map's pids are the
	 * kernel's.
	 */
	if (pid && pid == self_tgid) {
		tracer_gone = true;
		if (!pidns_ino && bpf_ksym_exists(bpf_task_from_pid) &&
		    bpf_ksym_exists(bpf_send_signal_task))
			bpf_for_each_map_elem(&traced, resume_one, NULL, 0);
		return 0;
	}
	if ((python_depth || py_later) && pid)
		bpf_map_delete_elem(&pyprocs, &pid);
	if (!pid || !bpf_map_lookup_elem(&traced, &pid))
		return 0;
	bpf_map_delete_elem(&traced, &pid);
	r = task_rec(pid, pid, GL_TASK_EXIT, p);
	if (!r)
		return 0;
	r->exit_code = BPF_CORE_READ(p, exit_code);
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/*
 * The kernel's OOM killer chose a traced process (a memory cgroup's limit, or the whole
 * machine's): SIGKILL follows. Loaded only for gpuleak watch, where it triggers a capture of
 * the process's state before it dies; a BTF raw tracepoint, so tracefs need not be mounted.
 */
SEC("tp_btf/mark_victim")
int gl_oom_victim(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	__u32 pid = task_tgid(p);
	struct gl_task_rec *r;

	if (!pid || !bpf_map_lookup_elem(&traced, &pid))
		return 0;
	r = task_rec(pid, pid, GL_TASK_OOM_KILL, p);
	if (!r)
		return 0;
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/*
 * Calibration (user/live/overhead.c): empty programs linked for a few milliseconds to a
 * function of gpuleak's own, before any target: what a trap alone costs on this machine (an
 * entry probe, a return probe, a probe on a nop as a USDT is), the floor of each traced call.
 */
SEC("uprobe.multi")
int gl_calib_enter(struct pt_regs *ctx __attribute__((unused)))
{
	return 0;
}

SEC("uretprobe.multi")
int gl_calib_exit(struct pt_regs *ctx __attribute__((unused)))
{
	return 0;
}
