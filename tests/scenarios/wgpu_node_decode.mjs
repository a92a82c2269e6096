// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * node wgpu_node_decode.mjs STEPS KEEP: a decode loop in JavaScript against plain WebGPU, on
 * dawn.node (npm webgpu@0.6.2; WEBGPU_INDEX is the package's index.js), Null backend, for
 * the shutdown tests. On one device labelled "js-device":
 *   kvCacheInit  2 x 1 MiB buffers "kv_cache", kept
 * then STEPS times:
 *   decodeStep   a 256 KiB "scratch" buffer written, a copy from it submitted (one submit
 *                with work: --step sync makes one step of it), the queue's work awaited,
 *                the buffer destroyed
 *   keepLogits   KEEP 1: a 1 MiB buffer "logits" kept in an array, the per-step leak;
 *                KEEP 0: the same buffer destroyed at once
 * Then the script ends: nothing destroyed, nothing released by the script; Node exits when
 * its event loop is empty and lets dawn.node release every handle still held.
 * Expected: with KEEP 1, STEPS x 1 MiB "logits" and 2 MiB "kv_cache" live after the last
 * step; all of it released at exit by dawn.node, never by the script.
 */
const { create, globals } = await import(process.env.WEBGPU_INDEX);
Object.assign(globalThis, globals);

const steps = Number(process.argv[2] ?? 10);
const keepLogits = Number(process.argv[3] ?? 1) === 1;

const gpu = create(['backend=null']);
const adapter = await gpu.requestAdapter();
const device = await adapter.requestDevice({ label: 'js-device' });
const kept = [];

function kvCacheInit() {
	for (let i = 0; i < 2; i++)
		kept.push(device.createBuffer({ label: 'kv_cache', size: 1 << 20,
						usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST }));
}

const dst = device.createBuffer({ label: 'dst', size: 256 << 10, usage: GPUBufferUsage.COPY_DST });

async function decodeStep() {
	const scratch = device.createBuffer({ label: 'scratch', size: 256 << 10,
					      usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
	device.queue.writeBuffer(scratch, 0, new Uint8Array(256 << 10));
	const enc = device.createCommandEncoder();
	enc.copyBufferToBuffer(scratch, 0, dst, 0, 256 << 10);
	device.queue.submit([enc.finish()]);
	await device.queue.onSubmittedWorkDone();
	scratch.destroy();
}

function keepOrDrop() {
	const logits = device.createBuffer({ label: 'logits', size: 1 << 20,
					     usage: GPUBufferUsage.COPY_DST });
	if (keepLogits)
		kept.push(logits);
	else
		logits.destroy();
}

kvCacheInit();
for (let step = 0; step < steps; step++) {
	await decodeStep();
	keepOrDrop();
}
console.log('done');
