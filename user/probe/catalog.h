/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The probe catalog: every traced API, its call shape for the BPF side (struct gl_api_spec)
 * and its meaning for the tracker (op, memory kind). The single source of truth for both.
 */
#ifndef GPULEAK_PROBE_CATALOG_H
#define GPULEAK_PROBE_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuleak.h"

struct wgpu_desc;

/* What a call means to the allocation tracker. */
enum cat_op {
	OP_NONE = 0,
	OP_ALLOC,	    /* addr/size become live */
	OP_FREE,	    /* addr is released now */
	OP_FREE_ASYNC,	    /* addr is released when its stream (aux) completes */
	OP_SYNC_STREAM,	    /* stream aux completes */
	OP_SYNC_DEVICE,	    /* every stream of the thread's current device completes */
	OP_SYNC_EVENT,	    /* the stream an event (aux) was recorded on completes */
	OP_EVENT_RECORD,    /* event addr is recorded on stream aux */
	OP_SET_DEVICE,	    /* the thread's current device becomes aux */
	OP_DEVICE_RESET,    /* every allocation of the current device is released */
	OP_RENDEZVOUS,	    /* the target's link map changed: rescan mappings */
	OP_REALLOC,	    /* realloc: aux (old pointer) released, addr/size live */
	OP_CTX_CREATE,	    /* context addr created on device aux, current on the thread */
	OP_CTX_RETAIN,	    /* primary context addr of device aux retained */
	OP_CTX_SET,	    /* context addr becomes the thread's current one */
	OP_CTX_DESTROY,	    /* context addr destroyed: its memory is released */
	OP_PRIMARY_RELEASE, /* primary context of device aux released (last one: freed) */
	OP_PRIMARY_RESET,   /* primary context of device aux reset: its memory released */
	OP_VMM_MAP,	    /* handle aux mapped at addr, size bytes */
	OP_VMM_UNMAP,	    /* mappings in [addr, addr + size) removed */
	OP_VMM_RETAIN,	    /* handle addr, mapped at aux, gains a reference (a release each) */
	OP_COMM_INIT,	    /* NCCL communicator addr created: inner allocations are its */
	OP_COMM_DESTROY,    /* NCCL communicator addr destroyed or aborted */
	OP_GROUP_START,	    /* NCCL group opened: inits return their communicator at once */
	OP_GROUP_END,	    /* the outermost one initialises them: inner memory is theirs */
	OP_MARKER,	    /* a step or request marker; NVTX ranges carry their name as label */
	/*
	 * Refcounted objects that hold memory (WebGPU buffers and textures) and the objects
	 * that own them (a WebGPU device). Memory is live from creation until a destroy or the
	 * last release; an owner's destruction releases everything it owns.
	 */
	OP_OBJ_CREATE,	  /* object addr owned by aux; bytes from the descriptor */
	OP_OBJ_ADDREF,	  /* addr gains a reference */
	OP_OBJ_RELEASE,	  /* addr loses one: at zero its memory is released */
	OP_OBJ_DESTROY,	  /* addr's memory is released; the handle stays valid */
	OP_OWNER_ADDREF,  /* owner addr gains a reference (first sight: it had one) */
	OP_OWNER_RELEASE, /* owner addr loses one: at zero it is destroyed */
	OP_OWNER_DESTROY, /* owner addr destroyed: everything it owns is released */
	OP_ERROR_OBJECT,  /* the creation call this is nested in returns an error object */
	OP_QUEUE_GET,	  /* queue addr belongs to owner aux */
	OP_QUEUE_SUBMIT,  /* work submitted to queue addr */
	OP_QUEUE_WATCH,	  /* a completion callback for queue addr's work so far */
	OP_QUEUE_DONE,	  /* a completion callback ran (its userdata in size..aux2) */
	/*
	 * Futures (webgpu.h since 2024): a call returns a future (addr) that completes once the
	 * work submitted so far to the queue of the device owning object aux is done (a buffer
	 * map); a wait says which futures completed (its copied WGPUFutureWaitInfo array).
	 */
	OP_FUTURE_WATCH,
	OP_FUTURE_WAIT,
	/*
	 * A block of a caching allocator (PyTorch's): an ALLOC record carves addr/size out of the
	 * segment (a CUDA allocation, or a VMM mapping) that holds addr, a FREE record gives it
	 * back to the cache. Blocks are what leaks and grows; their bytes are their segment's.
	 */
	OP_BLOCK,
	/*
	 * IPC, stream capture and graph memory, stream-ordered pools, multicast objects
	 * (tracker/ipc.c, graphs.c, pools.c). Opening an IPC handle is an OP_ALLOC in SPACE_IPC,
	 * its close an OP_FREE; the calls below are what else they need. The graph calls
	 * (OP_CAPTURE_BEGIN .. OP_GRAPH_MEM_TRIM) and the pool calls are ranges to the engine
	 * (graphs__is_op, pools__is_op): keep each group together.
	 */
	OP_IPC_EXPORT,	       /* desc: the handle made for aux (a pointer or a VMM handle) */
	OP_CAPTURE_BEGIN,      /* stream aux starts capturing into a graph (aux2: mode) */
	OP_CAPTURE_END,	       /* stream aux's capture ends: the graph in desc */
	OP_CAPTURE_STATUS,     /* stream aux's capture status in desc (1: active) */
	OP_GRAPH_ALLOC_NODE,   /* graph aux gets a memory node: desc bytesize, dptr */
	OP_GRAPH_FREE_NODE,    /* graph aux gets a free node of addr */
	OP_GRAPH_INSTANTIATE,  /* exec addr made from graph aux (aux2: flags) */
	OP_GRAPH_LAUNCH,       /* exec addr launched on stream aux */
	OP_GRAPH_UPLOAD,       /* exec addr uploaded: its memory mapped, nothing run */
	OP_GRAPH_EXEC_DESTROY, /* exec addr destroyed: its memory back to the graph pool */
	OP_GRAPH_DESTROY,      /* graph addr destroyed */
	OP_GRAPH_MEM_TRIM,     /* device aux's graph pool returns what no exec holds */
	OP_POOL_CREATE,	       /* pool addr made; desc: its props (location.id @12) */
	OP_POOL_DESTROY,       /* pool addr destroyed */
	OP_POOL_TRIM,	       /* pool addr keeps at most size bytes in reserve */
	OP_POOL_SET_ATTR,      /* pool addr attribute aux := desc (a cuuint64_t) */
	OP_POOL_SET_CURRENT,   /* pool addr becomes device aux's current pool */
	OP_POOL_GET,	       /* device aux's current pool in desc */
	OP_POOL_GET_DEFAULT,   /* device aux's default pool in desc */
	OP_MC_BIND,	       /* multicast addr binds VMM handle aux at offset aux2, size bytes */
	OP_MC_UNBIND,	       /* multicast addr unbinds [aux2, aux2 + size) */
};

/* Kind of memory an allocation holds; report columns and device projections use it. */
enum cat_mem {
	MEM_NONE = 0,
	MEM_DEVICE,
	MEM_MANAGED,
	MEM_HOST_PINNED,
	MEM_HOST, /* libc heap and anonymous mmap */
	MEM_VA,	  /* reserved address space: tracked, not memory */
	MEM_REG,  /* a registration of memory allocated elsewhere: not memory */
	MEM_IPC,  /* another process's memory mapped or imported here: not this one's bytes */
	MEM_HOST_REGISTERED, /* host memory pinned by cudaHostRegister: counted, host */
	MEM_MULTICAST,	     /* a multicast object: its bytes are the memory bound to it */
	MEM_MAX,
};

/* Whether allocations of this kind count as bytes of memory in totals and projections. */
static inline bool cat_mem_counts(enum cat_mem m)
{
	return m == MEM_DEVICE || m == MEM_MANAGED || m == MEM_HOST_PINNED || m == MEM_HOST ||
	       m == MEM_HOST_REGISTERED;
}

/*
 * Address spaces: the tracker keys allocations by (space, address), so a VMM handle never
 * matches a device pointer of the same value. Persisted in captures: never renumber.
 */
enum cat_space {
	SPACE_UVA = 0,	      /* CUDA device, managed and pinned host pointers */
	SPACE_VMM_HANDLE = 1, /* cuMemCreate's CUmemGenericAllocationHandle */
	SPACE_VMM_RANGE = 2,  /* cuMemAddressReserve's virtual ranges */
	SPACE_NCCL_REG = 3,   /* ncclCommRegister handles */
	SPACE_NCCL_WIN = 4,   /* ncclCommWindowRegister windows */
	SPACE_HOST = 5,	      /* libc malloc family */
	SPACE_MMAP = 6,	      /* anonymous mmap */
	SPACE_WGPU = 7,	      /* WebGPU object handles: buffers, textures, devices, queues */
	SPACE_BLOCK = 8,      /* caching-allocator blocks (PyTorch): inside device memory */
	SPACE_IPC = 9,	      /* pointers cudaIpcOpenMemHandle mapped: closed, not freed */
	SPACE_HOST_REG = 10,  /* host ranges cudaHostRegister pinned */
	SPACE_ARRAY = 11,     /* cudaArray_t / CUarray and mipmapped array handles */
	SPACE_GRAPH = 12,     /* graph memory nodes an exec holds, by their address */
	SPACE_MAX = 16,
};

enum cat_flags {
	CAT_PTSZ = 1 << 0,	  /* per-thread default stream: stream 0 means this thread's own */
	CAT_STREAM_POOL = 1 << 1, /* stream-ordered pool memory: survives cudaDeviceReset */
	CAT_OPTIONAL = 1 << 2,	  /* not needed to call a library "traced" (markers, helpers) */
	CAT_LIBC = 1 << 3,	  /* only in the C library, only with --libc */
	CAT_VMM_DEVICE = 1 << 4,  /* desc is a CUmemAllocationProp: location.id is the device */
	CAT_NVTX = 1 << 5,	  /* only with --step nvtx: */
	CAT_OWNER = 1 << 6,	  /* addr is an owner object (a WebGPU device), known on sight */
	CAT_DYNAMIC = 1 << 7,	  /* never looked up by symbol: probed at a code address found
				 * at run time (a callback, a --step sym: marker) */
	/*
	 * webgpu.h generations (probe/wgpu_abi.h). An entry with any of these is attached only to an
	 * object of that generation; entries with none fit every generation.
	 */
	CAT_WGPU_SV = 1 << 8,		  /* WGPUStringView labels, 64-bit usage */
	CAT_WGPU_CSTR = 1 << 9,		  /* char const * labels, 32-bit usage */
	CAT_WGPU_FMT_PRE_TIER1 = 1 << 10, /* texture formats numbered before tier1 */
	CAT_WGPU_FMT_TIER1 = 1 << 11,	  /* ... since tier1 */
	CAT_WGPU_FMT_UNKNOWN = 1 << 12,	  /* numbering not determined: no texture sizes */
	/*
	 * A USDT probe (usdt_provider:usdt_name in .note.stapsdt), not a function: attached with
	 * libbpf's USDT support, its argument positions the probe's. Never looked up by symbol.
	 */
	CAT_USDT = 1 << 13,
	/* OP_BLOCK: aux2 is a c10::Device (type in bits 0-7, CUDA = 1; index in bits 8-15),
	 * else aux is the device index */
	CAT_C10_DEVICE = 1 << 14,
	/*
	 * The site of its allocations is the innermost frame of their stack outside these
	 * objects (site_skip: the allocator's own libraries), not where the probe fires.
	 */
	CAT_SITE_OUTSIDE = 1 << 15,
	/* Bytes from the copied structs (probe/cuda_desc.c: arrays, multicast objects). */
	CAT_DESC_SIZE = 1 << 16,
};

#define CAT_WGPU_ABI_MASK                                                                          \
	(CAT_WGPU_SV | CAT_WGPU_CSTR | CAT_WGPU_FMT_PRE_TIER1 | CAT_WGPU_FMT_TIER1 |               \
	 CAT_WGPU_FMT_UNKNOWN)

struct cat_api {
	const char *name; /* exported symbol, without @version */
	enum gl_api api;
	struct gl_api_spec spec;
	enum cat_op op;
	enum cat_mem mem;
	unsigned int flags;   /* enum cat_flags */
	enum cat_space space; /* address space of addr (default SPACE_UVA) */
	/* GL_SPEC_CODE_PTR: the API a probe on the code the pointer points to reports as. */
	enum gl_api code_api;
	/* Descriptor bytes (gl_desc_rec) to memory: 0 or -EINVAL. */
	int (*decode)(const uint8_t *desc, size_t len, struct wgpu_desc *out);
	const char *display; /* name in reports when the symbol is not one (C++) */
	/* CAT_USDT: the probe's provider and name; args: what its arguments mean, in order */
	const char *usdt_provider, *usdt_name;
	const char *args;
	/* CAT_SITE_OUTSIDE: object name globs whose frames are never the site, NULL-ended */
	const char *const *site_skip;
};

/* Every catalog entry, in api order. */
extern const struct cat_api cat_apis[];
extern const unsigned int cat_nr_apis;

/* The entry for an API id; NULL for ids this build does not know (e.g. from a newer capture). */
const struct cat_api *cat_by_api(unsigned int api);
/* The entry for a symbol name (with or without @version); NULL if not traced. */
const struct cat_api *cat_by_name(const char *name, unsigned int len);
/* The entry for a USDT probe (provider, name); NULL if not in the catalog. */
const struct cat_api *cat_by_usdt(const char *provider, const char *name);
/* The next entry after prev with the same name (generation variants), or NULL. */
const struct cat_api *cat_next_same_name(const struct cat_api *prev);

const char *cat_family_name(enum gl_family fam);
const char *cat_mem_name(enum cat_mem mem);
/* An API's name, or "api#0x..." for one this build does not know. Never NULL. */
const char *cat_api_name(unsigned int api);

/* Error codes gpuleak gives WebGPU creations (the API itself returns no code). */
enum cat_wgpu_err {
	CAT_ERR_WGPU_NULL = -1,	       /* returned NULL */
	CAT_ERR_WGPU_ERROR_OBJECT = 1, /* returned an error object: validation or out of memory */
};

/* The symbolic name of an API's error code (cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY,
 * ncclUnhandledCudaError, ...) or NULL. */
const char *cat_error_name(unsigned int api, int code);

/* Whether an entry-probe-only API (no return program needed). */
static inline bool cat_entry_only(const struct cat_api *a)
{
	return a->spec.shape == GL_SHAPE_FREE || a->spec.shape == GL_SHAPE_FREE_ASYNC ||
	       a->spec.shape == GL_SHAPE_NOTIFY || a->spec.shape == GL_SHAPE_ALLOC_DONE;
}

#endif
