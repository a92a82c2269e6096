// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A WebGPU workload in JavaScript on dawn.node (npm webgpu@0.6.2), whose wgpu* functions are
 * LOCAL symbols in .symtab only. WEBGPU_INDEX is the package's index.js. Null backend.
 * Expected after "done", with every object still referenced: 3 x 1 MiB "kv_cache" buffers,
 * 5 x 64 KiB "logits" (one per step), a 64x64 rgba16float texture "albedo" (32768 bytes) and
 * a 640x480 depth32float texture "depth" (1228800 bytes) live on one device; one buffer
 * destroyed after submitted work completed; one buffer with an invalid usage: an error object.
 * Then it waits for a line on stdin (or end of file) and exits.
 */
const { create, globals } = await import(process.env.WEBGPU_INDEX);
Object.assign(globalThis, globals);

const gpu = create(['backend=null']);
const adapter = await gpu.requestAdapter();
const device = await adapter.requestDevice({ label: 'js-device' });
const keep = [];

for (let i = 0; i < 3; i++)
	keep.push(device.createBuffer({ label: 'kv_cache', size: 1 << 20,
					usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST }));
keep.push(device.createTexture({ label: 'albedo', size: [64, 64], format: 'rgba16float',
				 usage: GPUTextureUsage.TEXTURE_BINDING }));
keep.push(device.createTexture({ label: 'depth', size: [640, 480], format: 'depth32float',
				 usage: GPUTextureUsage.RENDER_ATTACHMENT }));

const scratch = device.createBuffer({ size: 4096, usage: GPUBufferUsage.COPY_DST });
device.queue.writeBuffer(scratch, 0, new Uint8Array(4096));
scratch.destroy();
for (let step = 0; step < 5; step++) {
	keep.push(device.createBuffer({ label: 'logits', size: 64 << 10,
					usage: GPUBufferUsage.COPY_DST }));
	const enc = device.createCommandEncoder();
	device.queue.submit([enc.finish()]);
	await device.queue.onSubmittedWorkDone();
}

device.pushErrorScope('validation');
keep.push(device.createBuffer({ size: 4096, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE }));
const err = await device.popErrorScope();
if (!err)
	throw new Error('the invalid buffer passed validation');

console.log('done');
process.stdin.resume();
process.stdin.once('data', () => process.exit(0));
process.stdin.once('end', () => process.exit(0));
