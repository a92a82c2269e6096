// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * graphs MODE [STEPS]
 *
 * CUDA graphs with memory nodes, the way decode loops capture them. Set-up, before "ready":
 * cudaStreamCreate (S). Every capture is of S: a stream-ordered allocation there allocates
 * nothing, it becomes a memory node of the graph. STEPS defaults to 5; each step ends with
 * step_boundary (for --step sym:graphs:step_boundary) after a cudaStreamSynchronize(S).
 *
 * decode     capture_decode: cudaStreamBeginCapture(S), capture_act: cudaMallocAsync 2 MiB
 *            ("activations"), capture_out: cudaMallocAsync 1 MiB ("logits"),
 *            capture_free_act: cudaFreeAsync(activations), cudaStreamEndCapture;
 *            instantiate_decode: cudaGraphInstantiate(AutoFreeOnLaunch). Then STEPS x
 *            launch_decode: cudaGraphLaunch(S). The exec holds the 2 MiB its graph frees
 *            itself from the first launch on; each launch gives the program a new 1 MiB
 *            logits block at capture_out's address (the next launch frees the last one).
 *            At the end free_logits: cudaFree(logits), into the graph pool. At "done":
 *            2 MiB held by the exec (class graph), nothing leaked, 1 MiB in the device's
 *            graph pool reserve; STEPS + 0 allocations of logits... exactly: allocations
 *            1 (activations, at the first launch) + STEPS (logits), frees STEPS.
 * destroy    decode, then exec_destroy: cudaGraphExecDestroy, graph_destroy:
 *            cudaGraphDestroy, trim_graph_pool: cudaDeviceGraphMemTrim(0). At "done":
 *            nothing held, nothing leaked, no reserve.
 * recapture  STEPS x (capture_step: capture of one 2 MiB node the graph frees,
 *            instantiate_step, launch_step): an exec per step, never destroyed. At "done":
 *            STEPS x 2 MiB held by graphs, growing 2 MiB per step at capture_step_alloc.
 * nodes      cudaGraphCreate (untraced), add_alloc_node: cudaGraphAddMemAllocNode 4 MiB,
 *            add_free_node: cudaGraphAddMemFreeNode of it, add_alloc_kept:
 *            cudaGraphAddMemAllocNode 1 MiB (not freed by the graph), instantiate_nodes,
 *            upload_nodes: cudaGraphUpload (maps the 4 MiB, runs nothing), launch_nodes:
 *            cudaGraphLaunch (the 1 MiB becomes the program's), then never freed. At "done":
 *            4 MiB held by the exec, 1 MiB leaked at add_alloc_kept (cudaGraphAddMemAllocNode).
 * driver     decode through the driver API (cuStreamBeginCapture_v2, cuMemAllocAsync,
 *            cuMemFreeAsync, cuStreamEndCapture, cuGraphInstantiateWithFlags, cuGraphLaunch,
 *            cuMemFree_v2): the same numbers as decode.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

#define MIB (1UL << 20)

static cudaStream_t s;

static SCENARIO_SITE void step_boundary(int i)
{
	SCENARIO_OPAQUE(i);
}

static SCENARIO_SITE void sync_step(void)
{
	SCENARIO_OK(cudaStreamSynchronize(s));
}

/* --- decode, through the runtime --- */

static SCENARIO_SITE void capture_decode(void)
{
	SCENARIO_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
}

static SCENARIO_SITE void *capture_act(void)
{
	void *p;

	SCENARIO_OK(cudaMallocAsync(&p, 2 * MIB, s));
	return p;
}

static SCENARIO_SITE void *capture_out(void)
{
	void *p;

	SCENARIO_OK(cudaMallocAsync(&p, MIB, s));
	return p;
}

static SCENARIO_SITE void capture_free_act(void *p)
{
	SCENARIO_OK(cudaFreeAsync(p, s));
}

static SCENARIO_SITE cudaGraph_t end_capture(void)
{
	enum cudaStreamCaptureStatus st;
	cudaGraph_t g;

	SCENARIO_OK(cudaStreamIsCapturing(s, &st));
	SCENARIO_EXPECT(st, cudaStreamCaptureStatusActive);
	SCENARIO_OK(cudaStreamEndCapture(s, &g));
	return g;
}

static SCENARIO_SITE cudaGraphExec_t instantiate_decode(cudaGraph_t g)
{
	cudaGraphExec_t x;

	SCENARIO_OK(cudaGraphInstantiate(&x, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
	return x;
}

static SCENARIO_SITE void launch_decode(cudaGraphExec_t x)
{
	SCENARIO_OK(cudaGraphLaunch(x, s));
}

static SCENARIO_SITE void free_logits(void *p)
{
	SCENARIO_OK(cudaFree(p));
}

static SCENARIO_SITE void exec_destroy(cudaGraphExec_t x)
{
	SCENARIO_OK(cudaGraphExecDestroy(x));
}

static SCENARIO_SITE void graph_destroy(cudaGraph_t g)
{
	SCENARIO_OK(cudaGraphDestroy(g));
}

static SCENARIO_SITE void trim_graph_pool(void)
{
	SCENARIO_OK(cudaDeviceGraphMemTrim(0));
}

static void decode(int steps, bool destroy)
{
	cudaGraphExec_t x;
	cudaGraph_t g;
	void *act, *out;
	int i;

	capture_decode();
	act = capture_act();
	out = capture_out();
	capture_free_act(act);
	g = end_capture();
	x = instantiate_decode(g);
	for (i = 0; i < steps; i++) {
		SCENARIO_OPAQUE(i);
		launch_decode(x);
		sync_step();
		step_boundary(i);
	}
	free_logits(out);
	if (destroy) {
		exec_destroy(x);
		graph_destroy(g);
		trim_graph_pool();
	}
}

/* --- recapture: a new exec per step --- */

static SCENARIO_SITE void *capture_step_alloc(void)
{
	void *p;

	SCENARIO_OK(cudaMallocAsync(&p, 2 * MIB, s));
	return p;
}

static SCENARIO_SITE cudaGraph_t capture_step(void)
{
	cudaGraph_t g;
	void *p;

	SCENARIO_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
	p = capture_step_alloc();
	SCENARIO_OK(cudaFreeAsync(p, s));
	SCENARIO_OK(cudaStreamEndCapture(s, &g));
	return g;
}

static SCENARIO_SITE cudaGraphExec_t instantiate_step(cudaGraph_t g)
{
	cudaGraphExec_t x;

	SCENARIO_OK(cudaGraphInstantiateWithFlags(&x, g, 0));
	return x;
}

static SCENARIO_SITE void launch_step(cudaGraphExec_t x)
{
	SCENARIO_OK(cudaGraphLaunch(x, s));
}

static void recapture(int steps)
{
	int i;

	for (i = 0; i < steps; i++) {
		SCENARIO_OPAQUE(i);
		launch_step(instantiate_step(capture_step()));
		sync_step();
		step_boundary(i);
	}
}

/* --- nodes: a graph built by hand --- */

static SCENARIO_SITE void *add_alloc_node(cudaGraph_t g, size_t bytes)
{
	struct cudaMemAllocNodeParams np = {0};
	cudaGraphNode_t n;

	np.poolProps.allocType = cudaMemAllocationTypePinned;
	np.poolProps.location.type = cudaMemLocationTypeDevice;
	np.poolProps.location.id = 0;
	np.bytesize = bytes;
	SCENARIO_OK(cudaGraphAddMemAllocNode(&n, g, NULL, 0, &np));
	return np.dptr;
}

static SCENARIO_SITE void *add_alloc_kept(cudaGraph_t g, size_t bytes)
{
	struct cudaMemAllocNodeParams np = {0};
	cudaGraphNode_t n;

	np.poolProps.allocType = cudaMemAllocationTypePinned;
	np.poolProps.location.type = cudaMemLocationTypeDevice;
	np.poolProps.location.id = 0;
	np.bytesize = bytes;
	SCENARIO_OK(cudaGraphAddMemAllocNode(&n, g, NULL, 0, &np));
	return np.dptr;
}

static SCENARIO_SITE void add_free_node(cudaGraph_t g, void *p)
{
	cudaGraphNode_t n;

	SCENARIO_OK(cudaGraphAddMemFreeNode(&n, g, NULL, 0, p));
}

static SCENARIO_SITE cudaGraphExec_t instantiate_nodes(cudaGraph_t g)
{
	cudaGraphExec_t x;

	SCENARIO_OK(cudaGraphInstantiate(&x, g, 0));
	return x;
}

static SCENARIO_SITE void upload_nodes(cudaGraphExec_t x)
{
	SCENARIO_OK(cudaGraphUpload(x, s));
}

static SCENARIO_SITE void launch_nodes(cudaGraphExec_t x)
{
	SCENARIO_OK(cudaGraphLaunch(x, s));
}

static void nodes(void)
{
	cudaGraphExec_t x;
	cudaGraph_t g;

	SCENARIO_OK(cudaGraphCreate(&g, 0));
	add_free_node(g, add_alloc_node(g, 4 * MIB));
	add_alloc_kept(g, MIB);
	x = instantiate_nodes(g);
	upload_nodes(x);
	launch_nodes(x);
	sync_step();
}

/* --- decode through the driver --- */

static SCENARIO_SITE void drv_capture(CUstream cs)
{
	SCENARIO_OK(cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_GLOBAL));
}

static SCENARIO_SITE CUdeviceptr drv_capture_act(CUstream cs)
{
	CUdeviceptr p;

	SCENARIO_OK(cuMemAllocAsync(&p, 2 * MIB, cs));
	return p;
}

static SCENARIO_SITE CUdeviceptr drv_capture_out(CUstream cs)
{
	CUdeviceptr p;

	SCENARIO_OK(cuMemAllocAsync(&p, MIB, cs));
	return p;
}

static SCENARIO_SITE void drv_capture_free_act(CUstream cs, CUdeviceptr p)
{
	SCENARIO_OK(cuMemFreeAsync(p, cs));
}

static SCENARIO_SITE CUgraph drv_end_capture(CUstream cs)
{
	CUgraph g;

	SCENARIO_OK(cuStreamEndCapture(cs, &g));
	return g;
}

static SCENARIO_SITE CUgraphExec drv_instantiate(CUgraph g)
{
	CUgraphExec x;

	SCENARIO_OK(cuGraphInstantiate(&x, g, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
	return x;
}

static SCENARIO_SITE void drv_launch(CUgraphExec x, CUstream cs)
{
	SCENARIO_OK(cuGraphLaunch(x, cs));
}

static SCENARIO_SITE void drv_free_logits(CUdeviceptr p)
{
	SCENARIO_OK(cuMemFree(p));
}

static void driver(int steps)
{
	CUstream cs = (CUstream)s;
	CUdeviceptr act, out;
	CUgraphExec x;
	int i;

	drv_capture(cs);
	act = drv_capture_act(cs);
	out = drv_capture_out(cs);
	drv_capture_free_act(cs, act);
	x = drv_instantiate(drv_end_capture(cs));
	for (i = 0; i < steps; i++) {
		SCENARIO_OPAQUE(i);
		drv_launch(x, cs);
		sync_step();
		step_boundary(i);
	}
	drv_free_logits(out);
}

int main(int argc, char **argv)
{
	int steps = 5;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: graphs decode|destroy|recapture|nodes|driver [STEPS]\n");
		return 2;
	}
	if (argc == 3)
		steps = (int)scenario_bytes(argv[2], "STEPS");
	SCENARIO_OK(cudaStreamCreate(&s));
	scenario_ready();
	if (!strcmp(argv[1], "decode"))
		decode(steps, false);
	else if (!strcmp(argv[1], "destroy"))
		decode(steps, true);
	else if (!strcmp(argv[1], "recapture"))
		recapture(steps);
	else if (!strcmp(argv[1], "nodes"))
		nodes();
	else if (!strcmp(argv[1], "driver"))
		driver(steps);
	else {
		fprintf(stderr, "graphs: unknown mode %s\n", argv[1]);
		return 2;
	}
	scenario_done();
	return 0;
}
