// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * TensorFlow.js on WebGPU as a user runs it: tfjs-core and tfjs-backend-webgpu 4.22.0 (TFJS is
 * the folder holding both packages) on dawn.node (npm webgpu@0.6.2, WEBGPU_INDEX its index.js;
 * its default adapter: Mesa's lavapipe), `navigator.gpu` from the package's create().
 *
 *   node --perf-basic-prof --interpreted-frames-native-stack matmul.mjs keep|dispose [STEPS]
 *
 * Two 64x64 float32 tensors, then STEPS (default 10) calls of step: one tf.matMul, its result
 * read back (data(): a submit, a mapped copy) and, with keep, kept in an array (the leak: one
 * 16 KiB GPU buffer per step, made under matMul_ by TensorFlow.js's buffer manager, never
 * given back), with dispose, disposed (its buffer goes back to the buffer manager's pool and
 * serves the next step: no growth). Prints one JSON line, the backend's own count
 * (tf.memory()), and exits at once, as a script does.
 */
const { create, globals } = await import(process.env.WEBGPU_INDEX);
Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };
const tf = await import(`${process.env.TFJS}/tfjs-core/dist/tf-core.node.js`);
await import(`${process.env.TFJS}/tfjs-backend-webgpu/dist/tf-backend-webgpu.node.js`);
if (!(await tf.setBackend('webgpu')))
	throw new Error('no WebGPU backend');

const mode = process.argv[2];
const steps = Number(process.argv[3] ?? 10);
const a = tf.ones([64, 64]), b = tf.ones([64, 64]);
const kept = [];
let sum = 0;

async function step() {
	const c = tf.matMul(a, b);
	sum += (await c.data())[0];
	if (mode === 'keep')
		kept.push(c);
	else
		c.dispose();
}

for (let i = 0; i < steps; i++)
	await step();
const m = tf.memory();
console.log(JSON.stringify({ mode, steps, backend: tf.getBackend(), first: sum / steps,
			     kept: kept.length, tensors: m.numTensors, gpu_bytes: m.numBytesInGPU }));
process.exit(0);
