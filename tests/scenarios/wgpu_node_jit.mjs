// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A JavaScript decode loop on dawn.node (npm webgpu@0.6.2), for naming JavaScript frames from
 * V8's perf map (node --perf-basic-prof --interpreted-frames-native-stack). Each of STEPS
 * (argv[2], default 8) steps calls makeLogits, which creates a 64 KiB "logits" GPU buffer and
 * a 256 KiB host copy (a Float32Array of 65536: one calloc of 262144 bytes through Node's
 * ArrayBuffer allocator) and keeps both. Expected after "done": STEPS "logits" buffers and
 * STEPS host copies live, both made in makeLogits, which V8 says is at line 32, column 20 of
 * this file (where the function's parameters start). WEBGPU_INDEX is the package's index.js.
 * Null backend. With SCENARIO_SYNC=1 it prints "ready PID" once the device exists and waits
 * for a line before the loop; after "done" it waits for a line (or end of file) and exits.
 */
const { create, globals } = await import(process.env.WEBGPU_INDEX);
Object.assign(globalThis, globals);

const steps = Number(process.argv[2] ?? 8);
const gpu = create(['backend=null']);
const adapter = await gpu.requestAdapter();
const device = await adapter.requestDevice({ label: 'js-device' });
const keep = [];

function nextLine() {
	return new Promise(resolve => {
		const done = () => {
			process.stdin.off('data', done).off('end', done).pause();
			resolve();
		};
		process.stdin.on('data', done).on('end', done).resume();
	});
}

function makeLogits(step) {
	const logits = device.createBuffer({ label: 'logits', size: 64 << 10,
					     usage: GPUBufferUsage.COPY_DST });
	const host = new Float32Array(65536);
	host[0] = step;
	keep.push(logits, host);
	return logits;
}

if (process.env.SCENARIO_SYNC === '1') {
	console.log(`ready ${process.pid}`);
	await nextLine();
}
for (let step = 0; step < steps; step++) {
	makeLogits(step);
	const enc = device.createCommandEncoder();
	device.queue.submit([enc.finish()]);
	await device.queue.onSubmittedWorkDone();
}
console.log('done');
await nextLine();
process.exit(0);
