/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A fragment of gpuleak.bpf.c, not a header: included by it once, mid-file, after its ring
 * buffer, loss counters (count_loss), record headers (hdr_fill) and thread state (struct
 * tstate), which it uses, and before the handlers that call py_stack. It is kept apart for
 * reading only. It is no compilation unit of its own because py_stack would then be a global
 * subprogram called across objects (bpftool gen object): that verifies on this kernel, but
 * everything above would have to move out of gpuleak.bpf.c into a header both units share.
 *
 * The Python frames of a traced allocation (CPython 3.10 to 3.13, x86-64).
 *
 * The calling thread's PyThreadState is the one whose thread_id (pthread_self() of the
 * thread it belongs to) equals the task's FS base, which is what pthread_self() returns on
 * x86-64 with glibc and musl. That holds whether or not the thread holds the GIL (ctypes and
 * C extensions release it around their calls: the GIL holder, or 3.12's thread-local
 * "current" state, would be another thread's or NULL then), in any pid namespace, after a
 * fork. It is searched for once per thread (every interpreter's thread list) and kept in the
 * thread's task storage; a hit costs the read of the state that the walk needs anyway.
 *
 * What costs is the number of reads of the target (~80 ns each, nearly whatever their size
 * up to a few KiB), not bytes: 3.11+ keeps a thread's frames back to back on its data
 * stack, so the used top of the current chunk is copied in one read and walked in BPF
 * memory; frames elsewhere (generators' on the heap, 3.12+'s entry shims on the C stack, an
 * older chunk) cost one read each. 3.10's frames are heap objects: one read each.
 *
 * A stack is sent once: (process, native stack id, hash of the frames) -> stack id in an LRU
 * map, a new one as a GL_REC_PY_STACK record, after a GL_REC_PY_CODE for each of its code
 * objects the process has not shown before. The record is reserved before its id is
 * published, so any record that carries the id follows it in the ring buffer.
 */
#ifndef GPULEAK_PYTHON_FRAG_H
#define GPULEAK_PYTHON_FRAG_H

/* --python-depth: Python frames kept per stack, 0: no Python walk. */
const volatile __u32 python_depth = 0;
/*
 * The object loaded at start without the walk (python_depth 0: a fifth of the verifier's
 * work) while Python may still appear: an allocation of a process configured as Python goes
 * to the same program built with the walk, a second load of this object that user space puts
 * in py_enter_prog and py_usdt_prog when the first Python process appears (bpf_setup.c). Until
 * it is there the tail call fails and the call is traced here, without Python frames. One
 * array per program: the kernel takes a tail call only between programs of the same expected
 * attach type, and with classic uprobe links gl_enter has none while libbpf gives gl_usdt the
 * uprobe_multi type wherever the kernel has it.
 */
const volatile bool py_later = false;

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} py_enter_prog SEC(".maps"), py_usdt_prog SEC(".maps");
/*
 * Bumped by user space whenever it configures a process as Python: a thread that found no
 * configuration for its process skips the lookup until it changes.
 */
__u32 py_generation = 0;
/* Stack ids handed out (GL_STACK_PY + this). */
__u32 py_next_id = 0;

#define PY_TS_BUF  512	 /* bytes of a PyThreadState read at once, at most */
#define PY_FR_BUF  128	 /* bytes of a frame read at once, at most */
#define PY_WIN_MAX 16384 /* bytes of the data stack copied at once, at most */
#define PY_WINDOW  8192	 /* bytes of it copied */
/* Thread states visited, over every interpreter, before the search gives up. */
#define PY_SEARCH_MAX 256
/* Re-read _PyRuntime.interpreters.head (a new subinterpreter) every this many walks. */
#define PY_HEAD_EVERY 16
/* Per-CPU fingerprint cache: code object -> fingerprint, kept this long. */
#define PY_FP_SLOTS  512
#define PY_FP_TTL_NS 10000000ULL

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid as gpuleak sees it */
	__type(value, struct gl_py_cfg);
} pyprocs SEC(".maps");

struct py_stack_key {
	__u32 pid;
	__s32 native_id;
	__u64 hash;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct py_stack_key);
	__type(value, __s32);
} pystacks SEC(".maps");

struct py_code_key {
	__u64 code;
	__u32 pid;
	__u32 fp;
};

/* Code objects a process has shown user space (a GL_REC_PY_CODE went out). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct py_code_key);
	__type(value, __u8);
} pycode_seen SEC(".maps");

struct py_fp_slot {
	__u64 code;
	__u64 ts_ns;
	__u32 pid;
	__u32 fp;
};

/*
 * Code address -> fingerprint, per CPU, direct-mapped: hot frames cost no read. A code
 * object freed and another made at its address within PY_FP_TTL_NS keeps the old one's
 * fingerprint, and name: that is the window of a wrong name.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PY_FP_SLOTS);
	__type(key, __u32);
	__type(value, struct py_fp_slot);
} pyfp SEC(".maps");

/*
 * The state of a walk and of the bpf_loop callbacks that step it. Kept in the per-CPU scratch,
 * never on the BPF stack: kernels without BPF private stacks (all before 6.13, and later
 * builds that give none to uprobe programs) allow 512 bytes for a program and its callbacks
 * together, and a copy of the process's configuration alone is 80. BPF programs run with
 * migration disabled, so the callbacks find the same CPU's copy by a lookup of their own and
 * bpf_loop passes them no context at all.
 */
struct py_search {
	struct gl_py_cfg c;
	__u64 fsbase, interp, ts, busy, idle;
	int err;
};

struct py_walk {
	struct gl_py_cfg c;
	__u64 cur;
	__u64 win_lo, win_len; /* s->win holds the target's [win_lo, win_lo + win_len) */
	__u64 now;
	__u64 hash;
	__u64 entry_mask;
	__u32 n, limit, pid;
	__u16 flags;
};

struct py_describe {
	struct gl_py_cfg c;
	__u32 pid, n;
	__u32 tid;
	int failed;
};

/* Copies of target memory and the stack being built: far beyond the 512-byte BPF stack. */
struct py_scratch {
	struct gl_py_frame frames[GL_PY_DEPTH_MAX];
	struct py_search search;
	struct py_walk walk;
	struct py_describe describe;
	__u8 ts[PY_TS_BUF + 8];
	__u8 fr[PY_FR_BUF + 8];
	__u8 win[PY_WIN_MAX + PY_FR_BUF + 8];
	__u8 str[64]; /* the head of a str object */
	/* py_describe_code's: a map key and a copy of the code object's pointers */
	struct py_code_key code_key;
	__u64 code_ptrs[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_scratch);
} pyscratch SEC(".maps");

static __always_inline struct py_scratch *py_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&pyscratch, &zero);
}

/*
 * What PyThreadState.thread_id holds for the current thread: pthread_self(), the FS base on
 * x86-64. Elsewhere 0, which no state matches (user space configures no process there).
 */
static __always_inline __u64 py_thread_self(void)
{
#if defined(__TARGET_ARCH_x86)
	return bpf_get_current_task_btf()->thread.fsbase;
#else
	return 0;
#endif
}

static __always_inline __u64 py_read_u64(__u64 addr, int *err)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		*err = 1;
	return v;
}

/* A field of a copy at a configured offset: masked, so the verifier sees it in bounds. */
static __always_inline __u64 ts_u64(const struct py_scratch *s, __u16 off)
{
	return *(const __u64 *)(s->ts + (off & (PY_TS_BUF - 1)));
}

static __always_inline __u64 fr_u64(const __u8 *fr, __u16 off)
{
	return *(const __u64 *)(fr + (off & (PY_FR_BUF - 1)));
}

/* ---- the thread state ---- */

static __always_inline int read_ts(const struct gl_py_cfg *c, __u64 ts, struct py_scratch *s)
{
	return bpf_probe_read_user(s->ts, c->ts_read & (PY_TS_BUF - 1), (const void *)ts);
}

/* The innermost frame of thread state ts, its copy in s->ts; 0: none. */
static __always_inline __u64 top_frame(const struct gl_py_cfg *c, const struct py_scratch *s,
				       int *err)
{
	__u64 cur = ts_u64(s, c->ts_frame);

	if (cur && c->cf_current_frame != GL_PY_OFF_NONE)
		cur = py_read_u64(cur + c->cf_current_frame, err);
	return *err ? 0 : cur;
}

/*
 * One step of the search: the next thread state of the interpreter, or the next interpreter.
 * A thread has a state in each interpreter it entered; the one with frames is where it runs
 * (a subinterpreter it left keeps an idle state), else the first found.
 */
static long py_search_step(__u32 i, void *data)
{
	struct py_scratch *s = py_scratch();
	struct py_search *x;
	__u64 cur;

	(void)i;
	(void)data;
	if (!s)
		return 1;
	x = &s->search;
	if (!x->ts) {
		x->interp = py_read_u64(x->interp + x->c.is_next, &x->err);
		if (!x->interp || x->err)
			return 1;
		x->ts = py_read_u64(x->interp + x->c.is_threads_head, &x->err);
		return x->err ? 1 : 0;
	}
	if (py_read_u64(x->ts + x->c.ts_thread_id, &x->err) == x->fsbase && !x->err) {
		cur = py_read_u64(x->ts + x->c.ts_frame, &x->err);
		if (cur && !x->err && x->c.cf_current_frame != GL_PY_OFF_NONE)
			cur = py_read_u64(cur + x->c.cf_current_frame, &x->err);
		if (x->err)
			return 1;
		if (cur) {
			x->busy = x->ts;
			return 1;
		}
		if (!x->idle)
			x->idle = x->ts;
	}
	x->ts = py_read_u64(x->ts + x->c.ts_next, &x->err);
	return x->err ? 1 : 0;
}

/*
 * The calling thread's PyThreadState, copied into s->ts; 0 when it has none (a thread that
 * never ran Python). *fail: the search could not finish.
 */
static __always_inline __u64 py_find_ts(const struct gl_py_cfg *c, struct tstate *st,
					struct py_scratch *s, bool *fail)
{
	struct py_search *x = &s->search;
	__u64 head = 0;
	bool single;
	long n;

	x->c = *c;
	x->fsbase = py_thread_self();
	x->busy = x->idle = 0;
	x->err = 0;
	if (st->py_ts && st->py_runtime == c->runtime) {
		/* Now and then: a new interpreter makes every cached state suspect. */
		if (++st->py_walks % PY_HEAD_EVERY == 0) {
			head = py_read_u64(c->runtime + c->rt_interp_head, &x->err);
			if (x->err || head != st->py_head)
				goto search;
		}
		if (!read_ts(c, st->py_ts, s) && ts_u64(s, c->ts_thread_id) == x->fsbase)
			return st->py_ts;
	}
search:
	st->py_ts = 0;
	x->err = 0;
	if (!head)
		head = py_read_u64(c->runtime + c->rt_interp_head, &x->err);
	if (x->err || !head) {
		/* Not initialised yet (the interpreter is starting): no frames, no failure. */
		return 0;
	}
	single = !py_read_u64(head + c->is_next, &x->err);
	x->interp = head;
	x->ts = py_read_u64(head + c->is_threads_head, &x->err);
	if (x->err) {
		*fail = true;
		return 0;
	}
	n = bpf_loop(PY_SEARCH_MAX, py_search_step, NULL, 0);
	if (x->err || (n == PY_SEARCH_MAX && !x->busy))
		*fail = true;
	x->ts = x->busy ? x->busy : x->idle;
	if (!x->ts || read_ts(c, x->ts, s)) {
		*fail |= x->ts != 0;
		return 0;
	}
	/* With several interpreters a thread may move between its states: search each time. */
	if (single) {
		st->py_ts = x->ts;
		st->py_head = head;
		st->py_runtime = c->runtime;
	}
	return x->ts;
}

/* ---- frames ---- */

/* The fingerprint of a code object: its name and line table pointers, mixed; 0: unread. */
static __always_inline __u32 py_fingerprint(const struct gl_py_cfg *c, __u32 pid, __u64 code,
					    __u64 now)
{
	__u32 slot = (__u32)((code >> 4) ^ (code >> 13)) & (PY_FP_SLOTS - 1);
	struct py_fp_slot *e = bpf_map_lookup_elem(&pyfp, &slot);
	__u64 p[4] = {}, x = 0;
	__u32 fp;

	if (!e)
		return 0;
	if (e->code == code && e->pid == pid && now - e->ts_ns < PY_FP_TTL_NS)
		return e->fp;
	if (bpf_probe_read_user(p, c->co_ptrs_len == 24 ? 24 : 32,
				(const void *)(code + c->co_ptrs)))
		return 0;
	/* Order-sensitive: two objects that swapped names must not collide, as XOR would. */
	for (int k = 0; k < 4; k++) {
		x = (x ^ p[k]) * 0x9e3779b97f4a7c15ULL;
		x ^= x >> 31;
	}
	fp = (__u32)(x ^ (x >> 32)) | 1;
	e->code = code;
	e->pid = pid;
	e->ts_ns = now;
	e->fp = fp;
	return fp;
}

static __always_inline void py_mix(__u64 *h, __u64 v)
{
	*h = (*h ^ v) * 0xff51afd7ed558ccdULL;
	*h ^= *h >> 33;
}

/* One frame: from the window or one read; shims skipped; (code, instruction) kept. */
static long py_walk_step(__u32 i, void *data)
{
	struct py_scratch *s = py_scratch();
	struct py_walk *w;
	const __u8 *fr;
	__u64 code, instr;
	__u32 n;

	(void)i;
	(void)data;
	if (!s)
		return 1;
	w = &s->walk;
	n = w->n;
	if (!w->cur)
		return 1;
	if (w->cur >= w->win_lo && w->cur + w->c.fr_read <= w->win_lo + w->win_len) {
		fr = s->win + ((w->cur - w->win_lo) & (PY_WIN_MAX - 1));
	} else {
		if (bpf_probe_read_user(s->fr, w->c.fr_read & (PY_FR_BUF - 1),
					(const void *)w->cur)) {
			w->flags |= GL_PYS_WALK_FAIL | GL_PYS_TRUNCATED;
			return 1;
		}
		fr = s->fr;
	}
	if (w->c.fr_owner != GL_PY_OFF_NONE &&
	    fr[w->c.fr_owner & (PY_FR_BUF - 1)] == w->c.owner_shim) {
		/* The frame before it began a call of the evaluation loop. */
		if (n)
			w->entry_mask |= 1ULL << ((n - 1) & 63);
		w->cur = fr_u64(fr, w->c.fr_back);
		return 0;
	}
	if (n >= w->limit || n >= GL_PY_DEPTH_MAX) {
		w->flags |= GL_PYS_TRUNCATED; /* a real frame past the depth: cut here */
		return 1;
	}
	code = fr_u64(fr, w->c.fr_code);
	if (w->c.chain == GL_PY_CHAIN_FRAMEOBJ)
		instr = *(const __u32 *)(fr + (w->c.fr_instr & (PY_FR_BUF - 1)));
	else
		instr = fr_u64(fr, w->c.fr_instr) - code;
	/* 3.10 runs each frame in a call of its own; 3.11 marks the first of a call. */
	if (w->c.chain == GL_PY_CHAIN_FRAMEOBJ ||
	    (w->c.fr_entry != GL_PY_OFF_NONE && fr[w->c.fr_entry & (PY_FR_BUF - 1)]))
		w->entry_mask |= 1ULL << (n & 63);
	s->frames[n & (GL_PY_DEPTH_MAX - 1)].code = code;
	s->frames[n & (GL_PY_DEPTH_MAX - 1)].instr = (__u32)instr;
	s->frames[n & (GL_PY_DEPTH_MAX - 1)].fp = py_fingerprint(&w->c, w->pid, code, w->now);
	py_mix(&w->hash, code);
	py_mix(&w->hash, (__u64)s->frames[n & (GL_PY_DEPTH_MAX - 1)].fp << 32 | (__u32)instr);
	w->n = n + 1;
	w->cur = fr_u64(fr, w->c.fr_back);
	return 0;
}

/* Walk the thread state copied in s->ts: frames into s->frames, w->n of them. */
static __always_inline void py_walk_frames(struct py_walk *w, struct py_scratch *s)
{
	const struct gl_py_cfg *c = &w->c;
	__u64 chunk, top, lo;
	int err = 0;

	w->cur = top_frame(c, s, &err);
	if (err) {
		w->flags |= GL_PYS_WALK_FAIL | GL_PYS_TRUNCATED;
		return;
	}
	if (w->cur && c->ts_chunk != GL_PY_OFF_NONE) {
		chunk = ts_u64(s, c->ts_chunk);
		top = ts_u64(s, c->ts_top);
		lo = chunk + c->chunk_data;
		if (chunk && top > lo) {
			if (top - lo > PY_WINDOW)
				lo = top - PY_WINDOW;
			if (!bpf_probe_read_user(s->win, (top - lo) & (PY_WIN_MAX - 1),
						 (const void *)lo)) {
				w->win_lo = lo;
				w->win_len = top - lo;
			}
		}
	}
	/* Twice the frames: shims take a step, not a slot. */
	bpf_loop(2 * GL_PY_DEPTH_MAX, py_walk_step, NULL, 0);
	if (w->cur && !(w->flags & GL_PYS_TRUNCATED))
		w->flags |= GL_PYS_TRUNCATED; /* steps ran out */
	if (w->n && !w->cur)
		w->entry_mask |= 1ULL << ((w->n - 1) & 63); /* the outermost began one too */
}

/* ---- code descriptors ---- */

/*
 * Copy str object `obj` into dst (at most max bytes of its code units): its end when tail.
 * Returns the bytes copied; *kind its PEP 393 kind, *flags gains cut or unread.
 */
static __always_inline __u32 py_copy_str(const struct gl_py_cfg *c, struct py_scratch *s, __u64 obj,
					 __u8 *dst, __u32 max, bool tail, __u8 *kind, __u16 *flags,
					 __u16 cut, __u16 unread)
{
	__u64 len, bytes, start = 0, data;
	__u32 state, k;

	*kind = 1;
	if (!obj || bpf_probe_read_user(s->str, 40, (const void *)obj))
		goto unread;
	len = *(const __u64 *)(s->str + (c->str_length & 0x38));
	state = *(const __u32 *)(s->str + (c->str_state & 0x3c));
	/* compact (bit 5): the characters follow the header; ascii (bit 6): which header */
	k = (state >> 2) & 7;
	if (!(state & (1 << 5)) || (k != 1 && k != 2 && k != 4) || len > (1 << 24))
		goto unread;
	data = obj + ((state & (1 << 6)) ? c->str_ascii_data : c->str_compact_data);
	bytes = len * k;
	if (bytes > max) {
		/* whole code units: the start of a name, the end of a path */
		*flags |= cut;
		start = tail ? bytes - max / k * k : 0;
		bytes = max / k * k;
	}
	if (bytes > GL_PY_FILE_MAX)
		bytes = GL_PY_FILE_MAX;
	if (bpf_probe_read_user(dst, bytes, (const void *)(data + start)))
		goto unread;
	*kind = (__u8)k;
	return (__u32)bytes;
unread:
	*flags |= unread;
	return 0;
}

/* What names one code object, sent the first time a process shows it. 0, or -1: no room. */
static __always_inline int py_describe_code(const struct gl_py_cfg *c, __u32 pid, __u32 tid,
					    const struct gl_py_frame *f)
{
	struct py_scratch *s = py_scratch();
	struct py_code_key *key;
	struct gl_py_code_rec *r;
	__u64 *ptrs, table, tlen = 0;
	__u32 off;
	__u8 one = 1;
	int first = 0;

	if (!s)
		return 0;
	key = &s->code_key;
	key->code = f->code;
	key->pid = pid;
	key->fp = f->fp;
	if (bpf_map_lookup_elem(&pycode_seen, key))
		return 0;
	ptrs = s->code_ptrs;
	__builtin_memset(ptrs, 0, sizeof(s->code_ptrs));
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r)
		return -1;
	hdr_fill(&r->hdr, 0, GL_REC_PY_CODE, 0, 0, (__u64)pid << 32 | tid, bpf_ktime_get_ns());
	r->code = f->code;
	r->fp = f->fp;
	r->version = c->version;
	r->flags = 0;
	r->file_len = r->name_len = r->table_len = 0;
	r->file_kind = r->name_kind = 1;
	if (bpf_probe_read_user(ptrs, sizeof(s->code_ptrs), (const void *)(f->code + c->co_ptrs)))
		r->flags |= GL_PYC_FILE_UNREAD | GL_PYC_NAME_UNREAD | GL_PYC_TABLE_UNREAD;
	bpf_probe_read_user(&first, sizeof(first), (const void *)(f->code + c->co_firstlineno));
	r->firstlineno = first;
	r->file_len = py_copy_str(c, s, ptrs[((c->co_filename - c->co_ptrs) >> 3) & 3], r->data,
				  GL_PY_FILE_MAX, true, &r->file_kind, &r->flags, GL_PYC_FILE_CUT,
				  GL_PYC_FILE_UNREAD);
	off = r->file_len;
	if (off > GL_PY_FILE_MAX)
		off = GL_PY_FILE_MAX;
	r->name_len = py_copy_str(c, s, ptrs[((c->co_name - c->co_ptrs) >> 3) & 3], r->data + off,
				  GL_PY_NAME_MAX, false, &r->name_kind, &r->flags, GL_PYC_NAME_CUT,
				  GL_PYC_NAME_UNREAD);
	off += r->name_len;
	if (off > GL_PY_FILE_MAX + GL_PY_NAME_MAX)
		off = GL_PY_FILE_MAX + GL_PY_NAME_MAX;
	table = ptrs[((c->co_linetable - c->co_ptrs) >> 3) & 3];
	if (!table ||
	    bpf_probe_read_user(&tlen, sizeof(tlen), (const void *)(table + c->bytes_size)))
		tlen = ~0ULL;
	if (tlen <= GL_PY_TABLE_MAX &&
	    !bpf_probe_read_user(r->data + off, tlen, (const void *)(table + c->bytes_data)))
		r->table_len = (__u16)tlen;
	else
		r->flags |= GL_PYC_TABLE_UNREAD;
	/* A read that failed is counted; a table too long to send is not (its flag says). */
	if ((r->flags & (GL_PYC_FILE_UNREAD | GL_PYC_NAME_UNREAD)) || tlen == ~0ULL ||
	    (tlen <= GL_PY_TABLE_MAX && tlen && !r->table_len))
		count_loss(pid, GL_STAT_PY_WALK_FAIL, 1);
	r->hdr.size = offsetof(struct gl_py_code_rec, data) + off + r->table_len;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	/* Published after the record is in the ring: whoever skips it comes after it. */
	bpf_map_update_elem(&pycode_seen, key, &one, BPF_ANY);
	return 0;
}

static long py_describe_step(__u32 i, void *data)
{
	struct py_scratch *s = py_scratch();
	struct py_describe *d;

	(void)data;
	if (!s)
		return 1;
	d = &s->describe;
	if (i >= d->n)
		return 1;
	if (py_describe_code(&d->c, d->pid, d->tid, &s->frames[i & (GL_PY_DEPTH_MAX - 1)])) {
		d->failed = 1;
		return 1;
	}
	return 0;
}

/* ---- the stack ---- */

/*
 * A new stack: its code objects described, then its record, then its id published. The id,
 * or -1 when it could not be sent (counted: the call keeps its native stack).
 */
static __always_inline __s32 py_send_stack(const struct gl_py_cfg *c, struct py_walk *w,
					   const struct py_stack_key *key, __u32 tid,
					   struct py_scratch *s)
{
	struct py_describe *d = &s->describe;
	struct gl_py_stack_rec *r;
	__u32 seq;
	__s32 id, *have;

	d->c = *c;
	d->pid = w->pid;
	d->n = w->n;
	d->tid = tid;
	d->failed = 0;
	bpf_loop(GL_PY_DEPTH_MAX, py_describe_step, NULL, 0);
	if (d->failed)
		return -1;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r)
		return -1;
	seq = __sync_fetch_and_add(&py_next_id, 1);
	if (seq >= GL_STACK_FALLBACK - GL_STACK_PY) {
		bpf_ringbuf_discard(r, 0);
		return -1;
	}
	id = GL_STACK_PY + (__s32)seq;
	hdr_fill(&r->hdr,
		 offsetof(struct gl_py_stack_rec, frames) +
		     (w->n & (2 * GL_PY_DEPTH_MAX - 1)) * sizeof(struct gl_py_frame),
		 GL_REC_PY_STACK, 0, 0, (__u64)w->pid << 32 | tid, bpf_ktime_get_ns());
	r->id = id;
	r->native_id = key->native_id;
	r->nr = (__u16)w->n;
	r->flags = w->flags;
	r->version = c->version;
	r->pad = 0;
	r->entry_mask = w->entry_mask;
	__builtin_memcpy(r->frames, s->frames, sizeof(r->frames));
	if (bpf_map_update_elem(&pystacks, key, &id, BPF_NOEXIST)) {
		/* Another thread sent it meanwhile: its id, its record. */
		bpf_ringbuf_discard(r, 0);
		have = bpf_map_lookup_elem(&pystacks, key);
		return have ? *have : -1;
	}
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return id;
}

/*
 * At the entry of a traced allocation: the calling thread's Python frames, interned with
 * the native stack *stack_id (-1: none) into a Python stack id, which replaces it.
 */
static __always_inline void py_stack(struct tstate *st, __u64 pid_tgid, __s32 *stack_id)
{
	__u32 pid = pid_tgid >> 32, gen = py_generation;
	struct py_stack_key key = {.pid = pid, .native_id = *stack_id};
	struct gl_py_cfg *c;
	struct py_scratch *s;
	struct py_walk *w;
	bool fail = false;
	__s32 *id, new_id;

	/* The common case outside Python: known to have no configuration, no lookup. */
	if (st->py_gen == gen + 1 && !st->py_on)
		return;
	c = bpf_map_lookup_elem(&pyprocs, &pid);
	st->py_gen = gen + 1;
	st->py_on = c != NULL;
	if (!c)
		return;
	s = py_scratch();
	if (!s) {
		count_loss(pid, GL_STAT_PY_LOST, 1);
		return;
	}
	if (!py_find_ts(c, st, s, &fail)) {
		if (fail)
			count_loss(pid, GL_STAT_PY_WALK_FAIL, 1);
		return;
	}
	w = &s->walk;
	__builtin_memset(w, 0, sizeof(*w));
	w->c = *c;
	w->limit = python_depth;
	w->pid = pid;
	w->now = bpf_ktime_get_ns();
	w->hash = 0xcbf29ce484222325ULL;
	py_walk_frames(w, s);
	if (w->flags & GL_PYS_WALK_FAIL)
		count_loss(pid, GL_STAT_PY_WALK_FAIL, 1);
	if (!w->n)
		return;
	/* Not the entry mask: the same frames are one stack however the calls between them
	 * went (3.13 runs a generator's first step through C, the next ones inline). */
	py_mix(&w->hash, w->flags);
	key.hash = w->hash;
	id = bpf_map_lookup_elem(&pystacks, &key);
	if (id) {
		*stack_id = *id;
		return;
	}
	new_id = py_send_stack(c, w, &key, (__u32)pid_tgid, s);
	if (new_id < 0) {
		count_loss(pid, GL_STAT_PY_LOST, 1);
		return;
	}
	*stack_id = new_id;
}

#endif /* GPULEAK_PYTHON_FRAG_H */
