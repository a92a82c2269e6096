// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libgpuleak_nvtx.so: an NVTX injection library. NVTX v3 is header-only: a program's ranges
 * reach a tool only if NVTX_INJECTION64_PATH names a library like this one, which NVTX
 * dlopen()s at the first NVTX call and asks (InitializeInjectionNvtx2) for the functions to
 * call. `gpuleak run --step nvtx:NAME` sets that variable; gpuleak's probes sit on the
 * functions below (they carry the real NVTX names), so each range of NAME is a step.
 *
 * The functions do nothing: what matters is that they are called, with the range name in
 * the first argument, where the probe reads it. Loaded into the target: no dependencies.
 */
#include <stddef.h>
#include <stdint.h>

/* From nvtx3/nvtxDetail/nvtxTypes.h (ids and the export-table ABI are stable by design). */
#define NVTX_ETID_CALLBACKS	    1
#define NVTX_CB_MODULE_CORE	    1
#define NVTX_CBID_CORE_MarkEx	    1
#define NVTX_CBID_CORE_MarkA	    2
#define NVTX_CBID_CORE_RangeStartEx 4
#define NVTX_CBID_CORE_RangeStartA  5
#define NVTX_CBID_CORE_RangeEnd	    7
#define NVTX_CBID_CORE_RangePushEx  8
#define NVTX_CBID_CORE_RangePushA   9
#define NVTX_CBID_CORE_RangePop	    11

typedef void (*nvtx_fn)(void);
typedef const void *(*get_export_table_fn)(uint32_t id);

struct export_table_callbacks {
	size_t struct_size;
	int (*get_module_function_table)(int module, nvtx_fn ***out_table, unsigned int *out_size);
};

#define EXPORT __attribute__((visibility("default"), noinline))
/* Keep each call a real call with its argument in place for the probe. */
#define USED(x) __asm__ volatile("" ::"r"(x) : "memory")

EXPORT int nvtxRangePushA(const char *message)
{
	USED(message);
	return 0;
}

EXPORT int nvtxRangePushEx(const void *attributes)
{
	USED(attributes);
	return 0;
}

EXPORT int nvtxRangePop(void)
{
	return 0;
}

EXPORT uint64_t nvtxRangeStartA(const char *message)
{
	USED(message);
	return 1;
}

EXPORT uint64_t nvtxRangeStartEx(const void *attributes)
{
	USED(attributes);
	return 1;
}

EXPORT void nvtxRangeEnd(uint64_t id)
{
	USED(id);
}

EXPORT void nvtxMarkA(const char *message)
{
	USED(message);
}

EXPORT void nvtxMarkEx(const void *attributes)
{
	USED(attributes);
}

static void set(nvtx_fn **table, unsigned int size, unsigned int id, nvtx_fn fn)
{
	if (id < size && table[id])
		*table[id] = fn;
}

EXPORT int InitializeInjectionNvtx2(get_export_table_fn get_export_table)
{
	const struct export_table_callbacks *cb = get_export_table(NVTX_ETID_CALLBACKS);
	nvtx_fn **table = NULL;
	unsigned int size = 0;

	if (!cb || cb->struct_size < sizeof(*cb) ||
	    !cb->get_module_function_table(NVTX_CB_MODULE_CORE, &table, &size) || !table)
		return 0;
	set(table, size, NVTX_CBID_CORE_MarkEx, (nvtx_fn)nvtxMarkEx);
	set(table, size, NVTX_CBID_CORE_MarkA, (nvtx_fn)nvtxMarkA);
	set(table, size, NVTX_CBID_CORE_RangeStartEx, (nvtx_fn)nvtxRangeStartEx);
	set(table, size, NVTX_CBID_CORE_RangeStartA, (nvtx_fn)nvtxRangeStartA);
	set(table, size, NVTX_CBID_CORE_RangeEnd, (nvtx_fn)nvtxRangeEnd);
	set(table, size, NVTX_CBID_CORE_RangePushEx, (nvtx_fn)nvtxRangePushEx);
	set(table, size, NVTX_CBID_CORE_RangePushA, (nvtx_fn)nvtxRangePushA);
	set(table, size, NVTX_CBID_CORE_RangePop, (nvtx_fn)nvtxRangePop);
	return 1;
}
