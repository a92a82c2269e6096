/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one ABI shared by the BPF programs, the user-space loader and capture files.
 *
 * Everything here is persisted in capture files: enum values are never renumbered, records
 * only grow at the end (readers check hdr.size), and every field has a fixed width.
 * Addresses are __u64, never pointers.
 */
#ifndef GPULEAK_H
#define GPULEAK_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Record kinds. 1..63 are produced by BPF, 64.. by user space (ticks, process events, ...). */
enum gl_rec_kind {
	GL_REC_ALLOC = 1,	/* an allocation call returned success: addr, size */
	GL_REC_ALLOC_FAIL = 2,	/* an allocation call returned an error: ret */
	GL_REC_FREE = 3,	/* a free-by-pointer call was entered: addr (aux: stream) */
	GL_REC_SYNC = 4,	/* a synchronisation call returned: aux = stream/event, ret */
	GL_REC_CALL = 5,	/* any other traced call returned: args in addr/size/aux, ret */
	GL_REC_NOTIFY = 6,	/* an entry-only marker (ld.so rendezvous, step symbol, refs) */
	GL_REC_LABEL = 7,	/* struct gl_label_rec: a label for a handle */
	GL_REC_CODE = 8,	/* a code pointer seen in an argument (a callback) that user
				 * space has not probed yet: addr; flags may have GL_HF_HELD */
	GL_REC_ALLOC_SMALL = 9, /* ring buffer only (struct gl_small_rec): an ALLOC */
	GL_REC_FREE_SMALL = 10, /* ring buffer only (struct gl_small_rec): a FREE */
	GL_REC_TASK = 11,	/* struct gl_task_rec: a traced process forked, exec'd or
				 * exited (scheduler tracepoints) */
	GL_REC_PY_STACK = 12,	/* struct gl_py_stack_rec: the Python frames of a new stack
				 * id (GL_STACK_PY range), before any record that uses it */
	GL_REC_PY_CODE = 13,	/* struct gl_py_code_rec: what names a Python code object,
				 * before the first stack that holds it */
	GL_REC_USTACK = 20,	/* ring buffer only (struct gl_ustack_rec): registers and the
				 * top of the user stack at an allocation's entry (--unwind
				 * dwarf), before the call's own record */

	GL_REC_TICK = 64,   /* user space: time advanced to hdr.ts_ns (no events meanwhile) */
	GL_REC_PROC = 65,   /* user space: struct gl_proc_rec, a process was attached/exited */
	GL_REC_LOSS = 66,   /* user space: struct gl_loss_rec, BPF-side loss counters of a pid */
	GL_REC_DEVMEM = 67, /* user space: struct gl_devmem_rec, a device's memory (NVML) */
	GL_REC_CLASS = 68,  /* user space: struct gl_class_rec, what an object of pid is
			     * when its first word is a given C++ vtable pointer */
	GL_REC_COST = 69,   /* user space: struct gl_cost_rec, what tracing costs a pid */
};

/* Flags in gl_hdr.flags. */
enum gl_hdr_flags {
	GL_HF_SIZE_CLAMPED = 1 << 0,   /* size came from a multiplication that overflowed */
	GL_HF_ADDR_READ_FAIL = 1 << 1, /* the out-pointer could not be read: addr unknown */
	GL_HF_STALE_FRAMES = 1 << 2,   /* frames above this call were dropped (longjmp/throw) */
	GL_HF_DESC = 1 << 3,	       /* struct gl_desc_rec: descriptor bytes follow */
	GL_HF_DESC_READ_FAIL = 1 << 4, /* the descriptor could not be read at entry (one copied
					* at return: or was not, the call failed) */
	GL_HF_HELD = 1 << 5,	       /* BPF stopped the process here: user space resumes it */
	GL_HF_LABEL = 1 << 6,	       /* a struct gl_label_rec for this call follows
					 * (the descriptor named a label) */
	GL_HF_PEEK = 1 << 7,	       /* struct gl_peek_rec: bytes at the returned address */
	GL_HF_PEEK_READ_FAIL = 1 << 8, /* those bytes could not be read */
};

/*
 * Common header of every record. 24 bytes; ts_ns is CLOCK_MONOTONIC (bpf_ktime_get_ns):
 * at return for entry+return calls, at entry for entry-only calls.
 */
struct gl_hdr {
	__u16 size;  /* bytes of the whole record, header included */
	__u8 kind;   /* enum gl_rec_kind */
	__u8 depth;  /* traced calls open on this thread at entry (0 = outermost) */
	__u16 api;   /* enum gl_api: which API fired (the attach cookie) */
	__u16 flags; /* enum gl_hdr_flags */
	__u32 pid;   /* tgid */
	__u32 tid;
	__u64 ts_ns;
};

/*
 * The fixed-size record of every traced call (kinds ALLOC..NOTIFY). What addr/size/aux/aux2
 * mean follows from the API's shape (struct gl_api_spec): for allocations addr is the result
 * and size the bytes, for frees addr is the pointer and aux the stream, for syncs aux is the
 * stream or event and aux2 the entry timestamp.
 */
struct gl_call_rec {
	struct gl_hdr hdr;
	__u64 addr;
	__u64 size;
	__u64 aux;
	__u64 aux2;
	__u64 caller;	/* return address at entry: the call site in the caller */
	__s32 ret;	/* return value (error code), 0 for entry-only records */
	__s32 stack_id; /* user stack id (GL_STACK_*), < 0: none */
};

/*
 * User stacks of allocation calls. The kernel interns them (bpf_get_stackid): a record
 * carries the id, user space reads the frames of an id once. Ids below GL_STACK_FALLBACK
 * are in the stack map `stacks`, ids at or above it (minus GL_STACK_FALLBACK) in `stacks2`,
 * which only takes a stack whose hash bucket in `stacks` holds another one. An id names the
 * same frames for the whole session (entries are never deleted or reused). The frames of
 * either map start after the probed function's own address; user space makes the call
 * site (the record's caller) the first frame when the kernel did not put it there.
 */
#define GL_STACK_FALLBACK  (1 << 30)
#define GL_STACK_DEPTH_MAX 120 /* --stack-depth limit: the kernel walks at most 127 frames */

/*
 * Ids from GL_STACK_PY up to GL_STACK_FALLBACK name a stack with Python frames: a native
 * stack id (or none) and the calling thread's Python frames, interned by BPF, which sends
 * a GL_REC_PY_STACK for each new one. Never reused within a session.
 */
#define GL_STACK_PY (1 << 29)

/* Nested traced calls remembered per thread (cudaMalloc -> cuMemAlloc -> ... ). */
#define GL_MAX_DEPTH 8

/*
 * Ids from GL_STACK_UNWOUND up to GL_STACK_PY name a stack user space unwound with the
 * modules' call frame information from a struct gl_ustack_rec (--unwind dwarf): one id per
 * distinct (process, frames), given by user space to the records it stands in; records in
 * captures carry it. Kernel stack ids stay below it (--stack-entries is at most 1 << 20).
 */
#define GL_STACK_UNWOUND (1 << 28)

/*
 * --unwind dwarf: what BPF copies at an allocation's entry for user space to unwind from.
 * The registers a frame-pointer walk does not need are unknown to the unwinder: call frame
 * information that computes a caller's frame from another register stops it.
 */
#define GL_USTACK_MAX (32 << 10) /* --unwind-bytes limit */

struct gl_ustack_rec {
	struct gl_hdr hdr; /* api, depth, pid, tid: those of the call's record; size: up to
			    * the last byte of data copied */
	__s32 stack_id;	   /* the frame-pointer walk's id the call's record carries, < 0: none */
	__u32 len;	   /* bytes of data: from sp up, cut where the stack's mapping ends */
	__u64 ip, sp, bp;  /* at the call's entry: the probed function's first instruction */
	/*
	 * The traced calls open below this one on the thread (hdr.depth of them, outermost
	 * first): where each one's return address is on the stack and what it was before its
	 * return probe put the kernel's trampoline there. Unwinding reads those instead.
	 */
	__u64 ret_at[GL_MAX_DEPTH - 1];
	__u64 ret[GL_MAX_DEPTH - 1];
	__u8 data[];
};

/* gl_ustack_rec.hdr.flags */
enum gl_ustack_flags {
	/* ip is inside a function (a USDT probe), not at its first instruction: it is the
	 * stack's first frame, and [sp] holds no return address */
	GL_USTACK_AT_IP = 1 << 0,
};

/*
 * Adaptive unwinding (--unwind auto): per traced process, the code of the objects mapped
 * there that keep no frame pointers and have call frame information, filled by user space.
 * BPF copies the stack (struct gl_ustack_rec) only for an allocation whose frame-pointer
 * walk has a caller's frame inside one of them, judged once per (process, stack id) and
 * again when gen changes; a process with no entry pays one hash lookup per allocation.
 */
#define GL_FPLESS_MAX 16

struct gl_fpless {
	__u32 gen;    /* bumped by user space at every change: judgements made before are stale */
	__u32 nr;     /* ranges used */
	__u64 lo, hi; /* the hull of the ranges: most frames are outside it */
	struct {
		__u64 start, end;
	} r[GL_FPLESS_MAX];
};

/* Frames of a frame-pointer walk adaptive unwinding looks at (--stack-depth + 2 at most). */
#define GL_WALK_MAX 128

static inline int gl_stack_is_py(__s32 id)
{
	return id >= GL_STACK_PY && id < GL_STACK_FALLBACK;
}

/*
 * The short form of the commonest records, in the ring buffer only: an ALLOC or FREE whose
 * aux and aux2 are 0, ret 0 and stack_id < 0 (cudaMalloc, cudaFree, ...). The consumer
 * expands it into the struct gl_call_rec it stands for before anything else sees it, so the
 * analysis and captures never meet it. Why: every ring buffer line a traced thread writes
 * is a cache miss it pays for, ~1.5 ns a byte on the pair benchmark; 48 and 40 bytes
 * instead of 72 save ~25% of gpuleak's cost per allocate/free pair.
 */
struct gl_small_rec {
	struct gl_hdr hdr; /* size: GL_SMALL_ALLOC_SIZE or GL_SMALL_FREE_SIZE */
	__u64 addr;
	__u64 caller;
	__u64 size; /* GL_REC_ALLOC_SMALL only: a FREE_SMALL ends before it */
};

#define GL_SMALL_FREE_SIZE  40 /* offsetof(struct gl_small_rec, size) */
#define GL_SMALL_ALLOC_SIZE 48 /* sizeof(struct gl_small_rec) */

/*
 * A call record plus the bytes of a struct argument copied at entry (a WebGPU descriptor,
 * cuMemCreate's allocation properties): user space decodes them per API, BPF never does.
 */
#define GL_DESC_MAX 64

struct gl_desc_rec {
	struct gl_call_rec call; /* call.hdr.flags has GL_HF_DESC */
	__u8 desc[GL_DESC_MAX];	 /* the first spec.desc_len bytes are valid */
};

/*
 * A descriptor record plus the first bytes of the object a creation returned, read at its
 * return (GL_SPEC2_PEEK_RET): what the object is made of tells an error object from a real
 * one where no symbol does (a C++ vtable pointer, a reference count). Its own size, so that
 * descriptor records keep theirs: readers take GL_HF_PEEK records of this size only.
 */
#define GL_PEEK_MAX 16

struct gl_peek_rec {
	struct gl_desc_rec desc; /* call.hdr.flags has GL_HF_DESC and GL_HF_PEEK */
	__u8 peek[GL_PEEK_MAX];	 /* the first spec.peek_len bytes are valid */
};

/*
 * What objects of a process are, by their first word: a C++ object's vtable pointer (the
 * address point of its class's vtable, in the process) names its class. Made by user space
 * from the mapped file's run-time type information when it attaches to an object that has
 * such classes (WebGPU error objects: Dawn's ErrorBuffer, an error texture's bare
 * TextureBase), before any of its probes can fire.
 */
enum gl_class_kind {
	GL_CLASS_ERROR_OBJECT = 1, /* a WebGPU creation that returns it returned an error object */
	/*
	 * [vptr, vptr + len) is a Dawn library's image in the process, found without symbols:
	 * objects whose vtable is there are Dawn's RefCounted objects, whose second word
	 * (count << payload bits | payload, payload 0 for an error object) tells an error
	 * object where its class cannot (a build without RTTI).
	 */
	GL_CLASS_DAWN_IMAGE = 2,
};

struct gl_class_rec {
	struct gl_hdr hdr; /* pid: the process */
	__u64 vptr;
	__u64 len;  /* GL_CLASS_DAWN_IMAGE: bytes from vptr; 0 otherwise */
	__u32 kind; /* enum gl_class_kind */
	__u32 pad;
};

#define GL_LABEL_MAX 64

struct gl_label_rec {
	struct gl_hdr hdr;
	__u64 addr;	 /* the handle the label belongs to */
	__u32 len;	 /* bytes of label used (label is not NUL-terminated when full) */
	__u32 truncated; /* 1 when the source label was longer than GL_LABEL_MAX */
	char label[GL_LABEL_MAX];
};

/*
 * Python frames (CPython 3.10 to 3.13, x86-64). BPF walks the calling thread's frame chain at
 * each traced allocation of a process configured as Python (struct gl_py_cfg) and interns the
 * result: a record carries its stack id, and each new stack is sent once, with a descriptor
 * of each code object the first time a process shows it. User space names frames from
 * those alone, so they are named after the code object, or the process, is gone.
 */
#define GL_PY_DEPTH_MAX 64 /* --python-depth limit */

enum gl_py_stack_flags {
	GL_PYS_TRUNCATED = 1 << 0, /* more Python frames beyond the last one sent */
	GL_PYS_WALK_FAIL = 1 << 1, /* the walk stopped at a frame it could not read */
};

struct gl_py_frame {
	__u64 code;  /* the code object (PyCodeObject *) */
	__u32 instr; /* 3.10: f_lasti (code units); 3.11+: instruction pointer - code (bytes) */
	__u32 fp;    /* fingerprint of the code object (its name and table pointers): tells it
		      * apart from a later object at the same address */
};

struct gl_py_stack_rec {
	struct gl_hdr hdr; /* size: up to the last of nr frames */
	__s32 id;	   /* the stack id records carry (GL_STACK_PY range) */
	__s32 native_id;   /* the native stack's id (gl_call_rec.stack_id), < 0: none */
	__u16 nr;	   /* frames, innermost first */
	__u16 flags;	   /* enum gl_py_stack_flags */
	__u16 version;	   /* the interpreter's major << 8 | minor (0x030b) */
	__u16 pad;
	/*
	 * Bit i: frame i is the outermost of the Python frames one call of the interpreter's
	 * evaluation loop runs (_PyEval_EvalFrameDefault), so the next one, if any, is under
	 * another: where native frames go between them.
	 */
	__u64 entry_mask;
	struct gl_py_frame frames[GL_PY_DEPTH_MAX];
};

#define GL_PY_FILE_MAX	256  /* bytes of co_filename kept: its end */
#define GL_PY_NAME_MAX	160  /* bytes of co_qualname (3.11+), co_name (3.10) kept */
#define GL_PY_TABLE_MAX 3072 /* bytes of the line table kept */

enum gl_py_code_flags {
	GL_PYC_FILE_CUT = 1 << 0,     /* file holds the end of a longer co_filename */
	GL_PYC_NAME_CUT = 1 << 1,     /* name holds the start of a longer name */
	GL_PYC_FILE_UNREAD = 1 << 2,  /* co_filename could not be read */
	GL_PYC_NAME_UNREAD = 1 << 3,  /* the name could not be read */
	GL_PYC_TABLE_UNREAD = 1 << 4, /* the line table could not be read or is too long */
};

/*
 * A code object of a process, first seen on a stack. Strings are the str's code units as
 * it stores them: 1, 2 or 4 bytes each (file_kind, name_kind: PEP 393's kind), ASCII and
 * Latin-1 being 1. data holds file_len bytes of file, name_len of name, table_len of the
 * line table (co_linetable, as the version lays it out), back to back.
 */
struct gl_py_code_rec {
	struct gl_hdr hdr; /* size: up to the end of the data used */
	__u64 code;	   /* as gl_py_frame.code */
	__u32 fp;	   /* as gl_py_frame.fp */
	__s32 firstlineno;
	__u16 version; /* as gl_py_stack_rec.version */
	__u16 flags;   /* enum gl_py_code_flags */
	__u16 file_len, name_len, table_len;
	__u8 file_kind, name_kind;
	__u8 data[GL_PY_FILE_MAX + GL_PY_NAME_MAX + GL_PY_TABLE_MAX];
};

#define GL_PY_OFF_NONE 0xffff

/* How a thread state leads to its innermost frame. */
enum gl_py_chain {
	GL_PY_CHAIN_FRAMEOBJ = 1, /* 3.10: tstate->frame, PyFrameObject; f_lasti an int */
	GL_PY_CHAIN_CFRAME = 2,	  /* 3.11, 3.12: tstate->cframe->current_frame,
				   * _PyInterpreterFrame; prev_instr a pointer */
	GL_PY_CHAIN_DIRECT = 3,	  /* 3.13: tstate->current_frame; instr_ptr a pointer */
};

/*
 * What BPF needs to walk one process's Python frames: where _PyRuntime is and the offsets of
 * the interpreter's structures it reads (user space picks them per version). Offsets are in
 * bytes; GL_PY_OFF_NONE marks a field the version lacks. Not persisted.
 */
struct gl_py_cfg {
	__u64 runtime;	 /* address of _PyRuntime in the target */
	__u16 version;	 /* major << 8 | minor */
	__u8 chain;	 /* enum gl_py_chain */
	__u8 owner_shim; /* _PyInterpreterFrame.owner of the C-stack frames 3.12+ pushes at each
			  * entry of the evaluation loop (skipped), 0xff: none */
	__u16 rt_interp_head;	/* _PyRuntimeState.interpreters.head */
	__u16 is_next;		/* PyInterpreterState.next */
	__u16 is_threads_head;	/* PyInterpreterState.tstate_head / threads.head */
	__u16 ts_next;		/* PyThreadState.next */
	__u16 ts_thread_id;	/* PyThreadState.thread_id: pthread_self() of its thread */
	__u16 ts_frame;		/* PyThreadState.frame / cframe / current_frame */
	__u16 ts_read;		/* bytes of PyThreadState read at once */
	__u16 ts_chunk;		/* PyThreadState.datastack_chunk (3.11+) */
	__u16 ts_top;		/* PyThreadState.datastack_top */
	__u16 chunk_data;	/* _PyStackChunk.data */
	__u16 cf_current_frame; /* _PyCFrame.current_frame (3.11, 3.12) */
	__u16 fr_back;		/* f_back / previous */
	__u16 fr_code;		/* f_code / f_executable */
	__u16 fr_instr;		/* f_lasti (int) / prev_instr / instr_ptr (pointers) */
	__u16 fr_owner;		/* _PyInterpreterFrame.owner (char) */
	__u16 fr_entry;		/* _PyInterpreterFrame.is_entry (char, 3.11) */
	__u16 fr_read;		/* bytes of a frame read at once */
	__u16 co_ptrs;		/* the code object's 32 bytes of pointers from co_filename */
	__u16 co_ptrs_len;	/* of which fingerprinted (3.10: 24) */
	__u16 co_filename, co_name, co_linetable; /* co_name: co_qualname where it exists */
	__u16 co_firstlineno;			  /* int */
	__u16 str_state, str_length;		  /* PyASCIIObject */
	__u16 str_ascii_data, str_compact_data;	  /* sizeof(PyASCIIObject), Compact... */
	__u16 bytes_size, bytes_data;		  /* PyBytesObject ob_size, ob_sval */
	__u16 pad;
};

/* GL_REC_PROC events. */
enum gl_proc_event {
	GL_PROC_ATTACH = 1, /* tracing of pid began (start_ns: its start time) */
	GL_PROC_EXIT = 2,   /* pid exited; status is the wait status or -1 if unknown */
	GL_PROC_DETACH = 3, /* tracing stopped while pid was alive (Ctrl-C, --duration) */
	GL_PROC_EXEC = 4,   /* pid replaced its program: what follows is another process */
	/*
	 * pid called its end marker (--end): its session is over, as at a detach, and the
	 * analysis takes nothing more of it. Made by the analysis from the marker's record,
	 * live and offline alike; never in the ring buffer or a capture.
	 */
	GL_PROC_END = 5,
};

struct gl_proc_rec {
	struct gl_hdr hdr;
	__u32 event; /* enum gl_proc_event */
	__s32 status;
	__u64 start_ticks; /* /proc/PID/stat starttime: tells a reused PID apart */
	char comm[16];
	/* Not in records of gpuleak 0.1 (GL_PROC_REC_V1_SIZE): zero when absent. */
	__u32 ppid;   /* ATTACH: the traced process it was followed from, 0: none */
	__u32 ns_pid; /* ATTACH: its pid in its own pid namespace, 0: the same */
};

#define GL_PROC_REC_V1_SIZE 56

/* GL_REC_TASK events: what the scheduler tracepoints saw of a traced process. */
enum gl_task_event {
	GL_TASK_FORK = 1, /* pid was forked by ppid (followed with --follow, else said) */
	GL_TASK_EXEC = 2, /* pid exec'd a new program (followed, with or without --follow) */
	GL_TASK_EXIT = 3, /* pid's last thread exited: exit_code is its wait status */
	/*
	 * Thread hdr.tid of pid was made by thread ppid while ppid was inside the traced call
	 * hdr.api at depth hdr.depth, an API that hands its work to threads it joins before
	 * returning (GL_SPEC2_ADOPT_THREADS: NCCL's group launch). Not a process event.
	 */
	GL_TASK_THREAD = 4,
	/*
	 * The kernel's OOM killer chose pid (its mark_victim tracepoint, system-wide or in a
	 * memory cgroup): it is about to die of SIGKILL, its exit follows. Only with gpuleak
	 * watch; a reader that does not know it skips it.
	 */
	GL_TASK_OOM_KILL = 5,
};

enum gl_task_flags {
	GL_TF_STOPPED = 1 << 0,	   /* BPF sent pid SIGSTOP: user space attaches, then resumes it */
	GL_TF_UNFOLLOWED = 1 << 1, /* FORK without --follow: not traced, told for the user's
				    * sake (a command that forks its work, sh -c) */
};

struct gl_task_rec {
	struct gl_hdr hdr; /* pid: the process the event is about (a fork's child) */
	__u32 event;	   /* enum gl_task_event */
	__u32 flags;	   /* enum gl_task_flags */
	__u32 ppid;	   /* FORK: the parent */
	__s32 exit_code;   /* EXIT: wait status (exit code << 8, or the signal) */
	__u64 start_ns;	   /* when the process started, ns after boot (its start time) */
	char comm[16];
};

/*
 * What NVML said about a device when tracing began: its size, and what this process already
 * held on it (memory the trace cannot attribute). Recorded so offline analysis projects the
 * same time-to-OOM as the live one.
 */
struct gl_devmem_rec {
	struct gl_hdr hdr; /* pid: the traced process */
	__s32 device;
	__u32 flags; /* 1: proc_used_bytes is known */
	__u64 total_bytes;
	__u64 used_bytes;      /* by every process on the device */
	__u64 proc_used_bytes; /* by this process, at attach */
};

/* Where BPF lost or could not complete something; GL_REC_LOSS carries one pid's counts. */
enum gl_stat {
	GL_STAT_RB_FULL = 0,	     /* ring buffer reserve failed: a record was lost */
	GL_STAT_STASH_FAIL = 1,	     /* per-thread state could not be created: call untracked */
	GL_STAT_DEPTH_OVERFLOW = 2,  /* more nested traced calls than GL_MAX_DEPTH */
	GL_STAT_READ_FAIL = 3,	     /* reading target memory (out-pointer, stack) failed */
	GL_STAT_RET_NO_ENTRY = 4,    /* a return probe found no matching entry */
	GL_STAT_STALE_FRAMES = 5,    /* entries whose return never came (longjmp, throw) */
	GL_STAT_STACK_FAIL = 6,	     /* stack capture failed: map full, unwalkable */
	GL_STAT_STACK_COLLISION = 7, /* a stack's bucket held another stack in both maps:
					 * the call is recorded without its stack */
	GL_STAT_MAP_FULL = 8,	     /* a BPF map had no room (a followed child, a process) */
	/*
	 * What the losses above cost, for the verdict's error bounds (each is also counted
	 * above): allocations that succeeded but never reached user space, the bytes of those
	 * made at depth 0 (a lost lower layer is the same memory as its outer call), those of
	 * unknown size (return without entry), and frees lost.
	 */
	GL_STAT_LOST_ALLOCS = 9,
	GL_STAT_LOST_ALLOC_BYTES = 10,
	GL_STAT_LOST_ALLOCS_UNSIZED = 11,
	GL_STAT_LOST_FREES = 12,
	GL_STAT_LOST_TASKS = 13,   /* fork/exec/exit records lost: a child not followed, an
					 * exit status unknown (charged to the parent on fork) */
	GL_STAT_PY_LOST = 14,	   /* an allocation's Python frames were not sent (no room in
					 * the ring buffer for its new stack or a code descriptor):
					 * it is recorded with its native stack alone */
	GL_STAT_PY_WALK_FAIL = 15, /* a read of a Python process's state failed: a frame
					 * walk stopped early (the frames before it kept, the stack
					 * marked truncated), the thread-state search gave up, or a
					 * code object's file, name or line table is unread */
	GL_STAT_MAX = 16,
};

struct gl_loss_rec {
	struct gl_hdr hdr;
	__u64 counts[GL_STAT_MAX]; /* cumulative per pid, indexed by enum gl_stat */
};

/*
 * What tracing costs a process (GL_REC_COST, live only): its traps are counted from its call
 * records (an entry probe each, a return probe each for calls that have one, a USDT probe
 * each), priced at trap_ns; beside them the BPF programs' own run time charged to it and
 * its CPU time, both since it was attached (since_ns); and the budget's steps (enum
 * gl_cost_level): the latest record of a pid holds all there is to know.
 */
enum gl_cost_trap {
	GL_TRAP_ENTRY = 0,  /* an entry uprobe */
	GL_TRAP_RETURN = 1, /* a return probe (its entry's trap counted apart) */
	GL_TRAP_USDT = 2,   /* a uprobe on a USDT's nop */
	GL_TRAP_MAX = 3,
};

/* --max-overhead steps down in this order; each level gives up what the one before kept. */
enum gl_cost_level {
	GL_LEVEL_FULL = 0,	 /* everything asked for */
	GL_LEVEL_NO_PYTHON = 1,	 /* no Python frames (native stacks only) */
	GL_LEVEL_NO_DWARF = 2,	 /* no stack copies for --unwind dwarf (frame pointers only) */
	GL_LEVEL_SITES_ONLY = 3, /* no stacks at all: call sites only */
	GL_LEVEL_MAX = 4,
};

struct gl_cost_rec {
	struct gl_hdr hdr;
	__u32 trap_ns[GL_TRAP_MAX];	    /* calibrated cost of one trap of each kind, ns */
	__u32 level;			    /* enum gl_cost_level now */
	__u64 since_ns;			    /* when it was attached (the records' clock) */
	__u64 bpf_ns;			    /* BPF run time charged to it since */
	__u64 cpu_ns;			    /* its CPU time since (user + system) */
	__u64 budget_ppm;		    /* --max-overhead in millionths of its CPU, 0: none */
	__u64 level_ns[GL_LEVEL_MAX];	    /* time spent at each level */
	__u64 level_first_ns[GL_LEVEL_MAX]; /* when each was first reached, 0: never */
	__u64 steps;			    /* level changes */
	__u64 level_cost_ns[GL_LEVEL_MAX];  /* tracing's cost while at each level */
	__u64 level_cpu_ns[GL_LEVEL_MAX];   /* its CPU time while at each level */
};

/* gpuleak 0.1 wrote 8 counters: readers take what a record has. */
#define GL_LOSS_REC_V1_SIZE 88

/*
 * Call shapes: one generic BPF handler each. The shape and argument positions of every API
 * come from the probe catalog (user/probe/catalog.c) through rodata; the BPF side knows
 * nothing about individual APIs.
 */
enum gl_shape {
	GL_SHAPE_NONE = 0,
	GL_SHAPE_ALLOC_OUTPTR = 1, /* int f(void **out, size_t size, ...): result via out */
	GL_SHAPE_ALLOC_RET = 2,	   /* void *f(size...): result is the return value */
	GL_SHAPE_FREE = 3,	   /* f(void *p): entry only */
	GL_SHAPE_FREE_ASYNC = 4,   /* f(void *p, stream): entry only, completes at a sync */
	GL_SHAPE_SYNC = 5,	   /* int f(stream|event|void): completion point, at return */
	GL_SHAPE_CALL = 6,	   /* int f(args...): args at entry, return value at return */
	GL_SHAPE_NOTIFY = 7,	   /* f(args...): entry-only marker */
	/*
	 * An allocation reported where it is complete: a USDT after the allocator chose the
	 * block (pytorch:malloc), or a function called with the finished allocation (PyTorch's
	 * profiler hook). One record, GL_REC_ALLOC at entry, with a stack; no return probe.
	 */
	GL_SHAPE_ALLOC_DONE = 8,
};

/* Flags of struct gl_api_spec. */
enum gl_spec_flags {
	GL_SPEC_SIZE_BY_PTR = 1 << 0,	 /* arg_size points to the size, read at return (pitch) */
	GL_SPEC_FAIL_IS_NEG1 = 1 << 1,	 /* ALLOC_RET: (void *)-1 is failure (mmap), not NULL */
	GL_SPEC_WAKEUP = 1 << 2,	 /* wake user space at once (ld.so rendezvous) */
	GL_SPEC_HOLD = 1 << 3,		 /* stop a held process here until user space attaches */
	GL_SPEC_DESC_BYVAL = 1 << 4,	 /* arg_desc is a struct passed by value, not a pointer */
	GL_SPEC_CODE_PTR = 1 << 5,	 /* the copied desc holds a code pointer at code_off that
					 * user space probes (GL_REC_CODE on first sight) */
	GL_SPEC_DESC_AT_RETURN = 1 << 6, /* copy the descriptor at return, from arg_addr +
						 * desc_off: an out-array the call filled
						 * (ncclCommInitAll), an in/out struct */
	GL_SPEC_LAYERS = 1 << 7,	 /* it allocates memory, and GPU allocations nested in it
					 * are its layers (cudaMalloc -> cuMemAlloc): no stack */
};

/* More flags of struct gl_api_spec. */
enum gl_spec_flags2 {
	/*
	 * Threads made while it runs do its work (NCCL runs each communicator's init on a
	 * thread of its own when a call makes several): a GL_TASK_THREAD record says so.
	 */
	GL_SPEC2_ADOPT_THREADS = 1 << 0,
	/* ALLOC_RET with a descriptor: copy peek_len bytes at the returned address at return
	 * (struct gl_peek_rec), for objects a symbol-less library returns. */
	GL_SPEC2_PEEK_RET = 1 << 1,
	/*
	 * ALLOC_OUTPTR: arg_addr is the address itself, not where the call writes one: a
	 * registration of memory the caller passes in (cudaHostRegister). 0 return: success.
	 */
	GL_SPEC2_ADDR_ARG = 1 << 3,
	/*
	 * ALLOC_DONE: arg_size is signed; a negative size is a release of arg_addr (the profiler
	 * hook reports +bytes at an allocation and -bytes at a free): a GL_REC_FREE, no stack.
	 */
	GL_SPEC2_SIGNED_SIZE = 1 << 4,
};

/* Where a call's label string is (struct gl_label_rec is emitted for it). */
enum gl_label_kind {
	GL_LABEL_NONE = 0,
	GL_LABEL_STRINGVIEW = 1, /* descriptor: char *data @label_off, size_t len @+8;
					 * len SIZE_MAX means NUL-terminated (webgpu.h 2024+) */
	GL_LABEL_CSTR = 2,	 /* descriptor: const char * @label_off (older webgpu.h) */
	GL_LABEL_ARGS_SV = 3,	 /* arguments: data = arg_aux, len = arg_aux2 (SetLabel) */
	GL_LABEL_ARGS_CSTR = 4,	 /* argument arg_aux is a const char * */
};

/* Argument positions are 1-based; 0 means "not used". */
struct gl_api_spec {
	__u8 shape;    /* enum gl_shape */
	__u8 arg_addr; /* out-pointer (ALLOC_OUTPTR) or pointer/handle to free */
	__u8 arg_size;
	__u8 arg_aux; /* stream, flags, device ... */
	__u8 arg_aux2;
	__u8 arg_mul;	 /* multiplies size (pitch height, calloc nmemb) */
	__u8 flags;	 /* enum gl_spec_flags */
	__u8 arg_desc;	 /* struct pointer: its first desc_len bytes are copied at entry */
	__u8 desc_len;	 /* bytes, <= GL_DESC_MAX */
	__u8 label_kind; /* enum gl_label_kind */
	__u8 label_off;	 /* offset of the label in the copied bytes */
	__u8 desc_off;	 /* the copy starts this many bytes into the struct */
	__u8 code_off;	 /* GL_SPEC_CODE_PTR: offset of the code pointer in the copy */
	__u8 flags2;	 /* enum gl_spec_flags2 */
	__u8 peek_len;	 /* GL_SPEC2_PEEK_RET: bytes, <= GL_PEEK_MAX */
	/*
	 * A second struct argument, by pointer, copied at entry right after the first one's
	 * desc_len bytes (cudaMalloc3DArray: its extent by value, then its channel format).
	 * Only calls with a return probe (not entry-only shapes); desc_len + desc2_len <=
	 * GL_DESC_MAX.
	 */
	__u8 arg_desc2;
	__u8 desc2_len;
};

/*
 * API identities: the attach cookie and gl_hdr.api (a USDT link's USDT cookie,
 * bpf_usdt_opts.usdt_cookie: libbpf keeps the link's own BPF cookie for its spec id).
 * Persisted: never renumber; add at the end of a family's block. The family is api >> 8.
 */
enum gl_family {
	GL_FAM_CUDART = 1,
	GL_FAM_CUDA = 2,
	GL_FAM_VMM = 3,
	GL_FAM_NCCL = 4,
	GL_FAM_WEBGPU = 5,
	GL_FAM_LIBC = 6,
	GL_FAM_LDSO = 7,
	GL_FAM_MARKER = 8,
	GL_FAM_PYTORCH = 9,
	GL_FAM_MAX = 10,
};

enum gl_api {
	GL_API_NONE = 0,

	GL_API_CUDA_MALLOC = 0x100,
	GL_API_CUDA_MALLOC_MANAGED = 0x101,
	GL_API_CUDA_MALLOC_HOST = 0x102,
	GL_API_CUDA_HOST_ALLOC = 0x103,
	GL_API_CUDA_MALLOC_PITCH = 0x104,
	GL_API_CUDA_MALLOC_ASYNC = 0x105,
	GL_API_CUDA_MALLOC_ASYNC_PTSZ = 0x106,
	GL_API_CUDA_MALLOC_FROM_POOL_ASYNC = 0x107,
	GL_API_CUDA_MALLOC_FROM_POOL_ASYNC_PTSZ = 0x108,
	GL_API_CUDA_FREE = 0x109,
	GL_API_CUDA_FREE_HOST = 0x10a,
	GL_API_CUDA_FREE_ASYNC = 0x10b,
	GL_API_CUDA_FREE_ASYNC_PTSZ = 0x10c,
	GL_API_CUDA_STREAM_SYNCHRONIZE = 0x10d,
	GL_API_CUDA_STREAM_SYNCHRONIZE_PTSZ = 0x10e,
	GL_API_CUDA_DEVICE_SYNCHRONIZE = 0x10f,
	GL_API_CUDA_EVENT_SYNCHRONIZE = 0x110,
	GL_API_CUDA_EVENT_RECORD = 0x111,
	GL_API_CUDA_EVENT_RECORD_PTSZ = 0x112,
	GL_API_CUDA_EVENT_RECORD_WITH_FLAGS = 0x113,
	GL_API_CUDA_EVENT_RECORD_WITH_FLAGS_PTSZ = 0x114,
	GL_API_CUDA_SET_DEVICE = 0x115,
	GL_API_CUDA_DEVICE_RESET = 0x116,
	/* IPC, host registration, stream capture and graphs, pools, arrays (docs/cuda.md) */
	GL_API_CUDA_IPC_GET_MEM_HANDLE = 0x117,
	GL_API_CUDA_IPC_OPEN_MEM_HANDLE = 0x118,
	GL_API_CUDA_IPC_CLOSE_MEM_HANDLE = 0x119,
	GL_API_CUDA_HOST_REGISTER = 0x11a,
	GL_API_CUDA_HOST_UNREGISTER = 0x11b,
	GL_API_CUDA_STREAM_BEGIN_CAPTURE = 0x11c,
	GL_API_CUDA_STREAM_BEGIN_CAPTURE_PTSZ = 0x11d,
	GL_API_CUDA_STREAM_END_CAPTURE = 0x11e,
	GL_API_CUDA_STREAM_END_CAPTURE_PTSZ = 0x11f,
	GL_API_CUDA_STREAM_IS_CAPTURING = 0x120,
	GL_API_CUDA_STREAM_IS_CAPTURING_PTSZ = 0x121,
	GL_API_CUDA_GRAPH_ADD_MEM_ALLOC_NODE = 0x122,
	GL_API_CUDA_GRAPH_ADD_MEM_FREE_NODE = 0x123,
	GL_API_CUDA_GRAPH_INSTANTIATE = 0x124,
	GL_API_CUDA_GRAPH_INSTANTIATE_WITH_FLAGS = 0x125,
	GL_API_CUDA_GRAPH_LAUNCH = 0x126,
	GL_API_CUDA_GRAPH_LAUNCH_PTSZ = 0x127,
	GL_API_CUDA_GRAPH_UPLOAD = 0x128,
	GL_API_CUDA_GRAPH_UPLOAD_PTSZ = 0x129,
	GL_API_CUDA_GRAPH_EXEC_DESTROY = 0x12a,
	GL_API_CUDA_GRAPH_DESTROY = 0x12b,
	GL_API_CUDA_DEVICE_GRAPH_MEM_TRIM = 0x12c,
	GL_API_CUDA_MEM_POOL_CREATE = 0x12d,
	GL_API_CUDA_MEM_POOL_DESTROY = 0x12e,
	GL_API_CUDA_MEM_POOL_TRIM_TO = 0x12f,
	GL_API_CUDA_MEM_POOL_SET_ATTRIBUTE = 0x130,
	GL_API_CUDA_DEVICE_SET_MEM_POOL = 0x131,
	GL_API_CUDA_DEVICE_GET_MEM_POOL = 0x132,
	GL_API_CUDA_DEVICE_GET_DEFAULT_MEM_POOL = 0x133,
	GL_API_CUDA_MALLOC_ARRAY = 0x134,
	GL_API_CUDA_MALLOC_3D_ARRAY = 0x135,
	GL_API_CUDA_MALLOC_MIPMAPPED_ARRAY = 0x136,
	GL_API_CUDA_FREE_ARRAY = 0x137,
	GL_API_CUDA_FREE_MIPMAPPED_ARRAY = 0x138,
	GL_API_CUDA_LAST,

	/* CUDA driver (libcuda.so.1) */
	GL_API_CU_MEM_ALLOC = 0x200,
	GL_API_CU_MEM_ALLOC_MANAGED = 0x201,
	GL_API_CU_MEM_ALLOC_PITCH = 0x202,
	GL_API_CU_MEM_ALLOC_HOST = 0x203,
	GL_API_CU_MEM_HOST_ALLOC = 0x204,
	GL_API_CU_MEM_ALLOC_ASYNC = 0x205,
	GL_API_CU_MEM_ALLOC_ASYNC_PTSZ = 0x206,
	GL_API_CU_MEM_ALLOC_FROM_POOL_ASYNC = 0x207,
	GL_API_CU_MEM_ALLOC_FROM_POOL_ASYNC_PTSZ = 0x208,
	GL_API_CU_MEM_FREE = 0x209,
	GL_API_CU_MEM_FREE_HOST = 0x20a,
	GL_API_CU_MEM_FREE_ASYNC = 0x20b,
	GL_API_CU_MEM_FREE_ASYNC_PTSZ = 0x20c,
	GL_API_CU_STREAM_SYNCHRONIZE = 0x20d,
	GL_API_CU_STREAM_SYNCHRONIZE_PTSZ = 0x20e,
	GL_API_CU_CTX_SYNCHRONIZE = 0x20f,
	GL_API_CU_EVENT_SYNCHRONIZE = 0x210,
	GL_API_CU_EVENT_RECORD = 0x211,
	GL_API_CU_EVENT_RECORD_PTSZ = 0x212,
	GL_API_CU_CTX_CREATE = 0x213,
	GL_API_CU_CTX_DESTROY = 0x214,
	GL_API_CU_CTX_SET_CURRENT = 0x215,
	GL_API_CU_DEVICE_PRIMARY_CTX_RETAIN = 0x216,
	GL_API_CU_DEVICE_PRIMARY_CTX_RELEASE = 0x217,
	GL_API_CU_DEVICE_PRIMARY_CTX_RESET = 0x218,
	GL_API_CU_CTX_PUSH_CURRENT = 0x219,
	GL_API_CU_CTX_CREATE_V2 = 0x21a,
	/* IPC, host registration, stream capture and graphs, pools, arrays (docs/cuda.md) */
	GL_API_CU_MEM_HOST_REGISTER = 0x21b,
	GL_API_CU_MEM_HOST_UNREGISTER = 0x21c,
	GL_API_CU_IPC_GET_MEM_HANDLE = 0x21d,
	GL_API_CU_IPC_OPEN_MEM_HANDLE = 0x21e,
	GL_API_CU_IPC_CLOSE_MEM_HANDLE = 0x21f,
	GL_API_CU_STREAM_BEGIN_CAPTURE = 0x220,
	GL_API_CU_STREAM_BEGIN_CAPTURE_PTSZ = 0x221,
	GL_API_CU_STREAM_END_CAPTURE = 0x222,
	GL_API_CU_STREAM_END_CAPTURE_PTSZ = 0x223,
	GL_API_CU_STREAM_IS_CAPTURING = 0x224,
	GL_API_CU_STREAM_IS_CAPTURING_PTSZ = 0x225,
	GL_API_CU_GRAPH_ADD_MEM_ALLOC_NODE = 0x226,
	GL_API_CU_GRAPH_ADD_MEM_FREE_NODE = 0x227,
	GL_API_CU_GRAPH_INSTANTIATE = 0x228, /* cuGraphInstantiateWithFlags */
	GL_API_CU_GRAPH_LAUNCH = 0x229,
	GL_API_CU_GRAPH_LAUNCH_PTSZ = 0x22a,
	GL_API_CU_GRAPH_UPLOAD = 0x22b,
	GL_API_CU_GRAPH_UPLOAD_PTSZ = 0x22c,
	GL_API_CU_GRAPH_EXEC_DESTROY = 0x22d,
	GL_API_CU_GRAPH_DESTROY = 0x22e,
	GL_API_CU_DEVICE_GRAPH_MEM_TRIM = 0x22f,
	GL_API_CU_MEM_POOL_CREATE = 0x230,
	GL_API_CU_MEM_POOL_DESTROY = 0x231,
	GL_API_CU_MEM_POOL_TRIM_TO = 0x232,
	GL_API_CU_MEM_POOL_SET_ATTRIBUTE = 0x233,
	GL_API_CU_DEVICE_SET_MEM_POOL = 0x234,
	GL_API_CU_DEVICE_GET_MEM_POOL = 0x235,
	GL_API_CU_DEVICE_GET_DEFAULT_MEM_POOL = 0x236,
	GL_API_CU_ARRAY_CREATE = 0x237,
	GL_API_CU_ARRAY_3D_CREATE = 0x238,
	GL_API_CU_MIPMAPPED_ARRAY_CREATE = 0x239,
	GL_API_CU_ARRAY_DESTROY = 0x23a,
	GL_API_CU_MIPMAPPED_ARRAY_DESTROY = 0x23b,
	GL_API_CU_LAST,

	/* CUDA driver virtual memory management */
	GL_API_CU_MEM_ADDRESS_RESERVE = 0x300,
	GL_API_CU_MEM_ADDRESS_FREE = 0x301,
	GL_API_CU_MEM_CREATE = 0x302,
	GL_API_CU_MEM_RELEASE = 0x303,
	GL_API_CU_MEM_MAP = 0x304,
	GL_API_CU_MEM_UNMAP = 0x305,
	GL_API_CU_MEM_RETAIN_ALLOCATION_HANDLE = 0x306,
	/* shareable handles and multicast objects (docs/cuda.md) */
	GL_API_CU_MEM_EXPORT_TO_SHAREABLE_HANDLE = 0x307,
	GL_API_CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE = 0x308,
	GL_API_CU_MULTICAST_CREATE = 0x309,
	GL_API_CU_MULTICAST_BIND_MEM = 0x30a,
	GL_API_CU_MULTICAST_UNBIND = 0x30b,
	GL_API_VMM_LAST,

	/* NCCL (libnccl.so.2) */
	GL_API_NCCL_MEM_ALLOC = 0x400,
	GL_API_NCCL_MEM_FREE = 0x401,
	GL_API_NCCL_COMM_REGISTER = 0x402,
	GL_API_NCCL_COMM_DEREGISTER = 0x403,
	GL_API_NCCL_COMM_WINDOW_REGISTER = 0x404,
	GL_API_NCCL_COMM_WINDOW_DEREGISTER = 0x405,
	GL_API_NCCL_COMM_INIT_RANK = 0x406,
	GL_API_NCCL_COMM_INIT_ALL = 0x407,
	GL_API_NCCL_COMM_INIT_RANK_CONFIG = 0x408,
	GL_API_NCCL_COMM_SPLIT = 0x409,
	GL_API_NCCL_COMM_DESTROY = 0x40a,
	GL_API_NCCL_COMM_ABORT = 0x40b,
	GL_API_NCCL_GROUP_START = 0x40c,
	GL_API_NCCL_GROUP_END = 0x40d,
	/* more communicator makers (docs/cuda.md) */
	GL_API_NCCL_COMM_INIT_RANK_SCALABLE = 0x40e,
	GL_API_NCCL_COMM_SHRINK = 0x40f,
	GL_API_NCCL_DEV_COMM_CREATE = 0x410,
	GL_API_NCCL_DEV_COMM_DESTROY = 0x411,
	GL_API_NCCL_LAST,

	/* libc (--libc): host memory beside the GPU */
	GL_API_MALLOC = 0x600,
	GL_API_CALLOC = 0x601,
	GL_API_REALLOC = 0x602,
	GL_API_POSIX_MEMALIGN = 0x603,
	GL_API_ALIGNED_ALLOC = 0x604,
	GL_API_MEMALIGN = 0x605,
	GL_API_FREE = 0x606,
	GL_API_MMAP = 0x607,
	GL_API_MUNMAP = 0x608,
	GL_API_LIBC_LAST,

	/*
	 * WebGPU, webgpu.h as Dawn exports it. Ids without a suffix are the WGPUStringView
	 * generation (webgpu-headers from 2024-10); _CSTR and *_REFERENCE the earlier one with
	 * char const * labels and 32-bit usage flags. Texture creation has one id per texture
	 * format numbering (the texture-formats-tier1 change of 2025-07 renumbered them).
	 */
	GL_API_WGPU_DEVICE_CREATE_BUFFER = 0x500,
	GL_API_WGPU_DEVICE_CREATE_TEXTURE = 0x501,	       /* formats numbered before tier1 */
	GL_API_WGPU_DEVICE_CREATE_TEXTURE_TIER1 = 0x502,       /* formats numbered since tier1 */
	GL_API_WGPU_DEVICE_CREATE_TEXTURE_FMT_UNKNOWN = 0x503, /* numbering not determined */
	GL_API_WGPU_BUFFER_ADD_REF = 0x504,
	GL_API_WGPU_BUFFER_RELEASE = 0x505,
	GL_API_WGPU_BUFFER_DESTROY = 0x506,
	GL_API_WGPU_BUFFER_SET_LABEL = 0x507,
	GL_API_WGPU_TEXTURE_ADD_REF = 0x508,
	GL_API_WGPU_TEXTURE_RELEASE = 0x509,
	GL_API_WGPU_TEXTURE_DESTROY = 0x50a,
	GL_API_WGPU_TEXTURE_SET_LABEL = 0x50b,
	GL_API_WGPU_DEVICE_ADD_REF = 0x50c,
	GL_API_WGPU_DEVICE_RELEASE = 0x50d,
	GL_API_WGPU_DEVICE_DESTROY = 0x50e,
	GL_API_WGPU_DEVICE_SET_LABEL = 0x50f,
	GL_API_WGPU_DEVICE_GET_QUEUE = 0x510,
	GL_API_WGPU_QUEUE_SUBMIT = 0x511,
	GL_API_WGPU_QUEUE_ON_SUBMITTED_WORK_DONE = 0x512,
	GL_API_WGPU_QUEUE_WORK_DONE_CALLBACK = 0x513, /* the program's callback, probed at
							 * the address found at run time */
	GL_API_DAWN_BUFFER_MAKE_ERROR = 0x514,	      /* Dawn-internal: an error object */
	GL_API_DAWN_TEXTURE_MAKE_ERROR = 0x515,
	GL_API_WGPU_DEVICE_CREATE_BUFFER_CSTR = 0x516,
	GL_API_WGPU_DEVICE_CREATE_TEXTURE_CSTR = 0x517,
	GL_API_WGPU_BUFFER_SET_LABEL_CSTR = 0x518,
	GL_API_WGPU_TEXTURE_SET_LABEL_CSTR = 0x519,
	GL_API_WGPU_DEVICE_SET_LABEL_CSTR = 0x51a,
	GL_API_WGPU_BUFFER_REFERENCE = 0x51b,
	GL_API_WGPU_TEXTURE_REFERENCE = 0x51c,
	GL_API_WGPU_DEVICE_REFERENCE = 0x51d,
	GL_API_WGPU_BUFFER_MAP_ASYNC = 0x51e,  /* returns a future: done after the queue's work */
	GL_API_WGPU_INSTANCE_WAIT_ANY = 0x51f, /* says which futures completed */
	GL_API_WGPU_LAST,

	GL_API_LD_DEBUG_STATE = 0x700, /* ld.so's r_brk: the link map changed */
	GL_API_LD_LAST,

	/* Step and request markers: user-named functions (--step sym:, --request sym:) and
	 * NVTX ranges (--step nvtx:), in libnvToolsExt or gpuleak's NVTX injection library. */
	GL_API_MARKER_STEP = 0x800,
	GL_API_MARKER_REQ_BEGIN = 0x801,
	GL_API_MARKER_REQ_END = 0x802,
	GL_API_NVTX_RANGE_PUSH_A = 0x803,
	GL_API_NVTX_RANGE_START_A = 0x804,
	GL_API_NVTX_MARK_A = 0x805,
	GL_API_NVTX_RANGE_PUSH_EX = 0x806,
	GL_API_NVTX_RANGE_START_EX = 0x807,
	GL_API_MARKER_END = 0x808, /* --end: the session ends at this call */
	GL_API_MARKER_LAST,

	/*
	 * PyTorch's CUDA caching allocator: blocks (tensors) carved from segments it got from
	 * cudaMalloc or cuMemCreate + cuMemMap. USDT probes of libc10_cuda.so (PyTorch >= 2.1),
	 * else the profiler hook exported by libc10.so; a process uses one of the two.
	 */
	GL_API_TORCH_MALLOC = 0x900,	   /* USDT pytorch:malloc(ptr, device, size, stream_id) */
	GL_API_TORCH_FREE = 0x901,	   /* USDT pytorch:free(ptr) */
	GL_API_TORCH_REPORT_MEM = 0x902,   /* c10::reportMemoryUsageToProfiler(ptr, +-bytes,
					    * size_t allocated, size_t reserved, c10::Device) */
	GL_API_TORCH_REPORT_MEM_1 = 0x903, /* the same with int64_t totals (PyTorch 1.x) */
	GL_API_TORCH_LAST,

	GL_API_MAX = 0xa00, /* size of the rodata spec table */
};

#define GL_API_FAMILY(api) ((api) >> 8)

#endif /* GPULEAK_H */
