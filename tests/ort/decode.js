// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// A decode loop on ONNX Runtime's WebGPU execution provider (npm onnxruntime-node), the
// target of tests/test_ort.py. One session.run() per step.
//
//   node decode.js VARIANT STEPS [--wait]
//
//   kv        an LLM's loop: the KV cache `present` stays on the device ('gpu-buffer') and is
//             fed back as the next step's `past`; the old past is disposed; logits are read
//             on the CPU (a readback: MapAsync, then WaitAny)
//   dispose   Y = MatMul(X, W) + B kept on the device and disposed each step: ORT's buffer
//             cache serves the next step
//   keep      the same, every Y kept alive on the device: 256 KiB more per step (a leak)
//   cpu       Y read on the CPU each step (a readback through a staging buffer)
//
// --wait: print "ready PID" once the session exists, then wait for a line on stdin before the
// loop (gpuleak attach goes in between). At the end: one JSON line of timings and a checksum.
// Outputs on the device are never read with getData(): that aborts the process inside ORT.
// Environment: ORT_DIR (the onnxruntime-node package), CACHE_MODE (the EP's
// storageBufferCacheMode: disabled, lazyRelease, simple, bucket; ORT's default is bucket).
'use strict';
const ORT_DIR = process.env.ORT_DIR ||
  '/var/cache/gpuleak/npm/onnxruntime-node@1.30.0/node_modules/onnxruntime-node';
const ort = require(ORT_DIR);
const models = require('./models');

const variant = process.argv[2];
const steps = Number(process.argv[3] || 10);
const wait = process.argv.includes('--wait');
const D = 256;
const ms = () => Number(process.hrtime.bigint()) / 1e6;

function input(n, seed) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = (((i * 2246822519 + seed) >>> 0) % 1000) / 1000 - 0.5;
  return a;
}

async function main() {
  if (!['kv', 'dispose', 'keep', 'cpu'].includes(variant)) throw new Error(`variant ${variant}`);
  const kv = variant === 'kv';
  const ep = process.env.CACHE_MODE
    ? { name: 'webgpu', storageBufferCacheMode: process.env.CACHE_MODE } : 'webgpu';
  const opts = { executionProviders: [ep], logSeverityLevel: 3 };
  if (kv) opts.preferredOutputLocation = { present: 'gpu-buffer', logits: 'cpu' };
  else if (variant !== 'cpu') opts.preferredOutputLocation = { Y: 'gpu-buffer' };
  let t = ms();
  const sess = await ort.InferenceSession.create(kv ? models.kv(D) : models.matmul(), opts);
  const createMs = ms() - t;
  if (wait) {
    console.log(`ready ${process.pid}`);
    await new Promise((go) => process.stdin.once('data', go));
  }
  const kept = [], times = [];
  let past = new ort.Tensor('float32', new Float32Array(0), [0, D]);
  let check = 0;
  for (let s = 0; s < steps; s++) {
    t = ms();
    if (kv) {
      const out = await sess.run({ x: new ort.Tensor('float32', input(D, s), [1, D]), past });
      if (out.present.dims[0] !== s + 1) throw new Error(`present is ${out.present.dims}`);
      check += out.logits.data[0];
      if (past.location === 'gpu-buffer') past.dispose();
      past = out.present;
    } else {
      const out = await sess.run({ X: new ort.Tensor('float32', input(256 * 256, s), [256, 256]) });
      if (variant === 'cpu') check += out.Y.data[0];
      else if (variant === 'dispose') out.Y.dispose();
      else kept.push(out.Y);
    }
    times.push(ms() - t);
  }
  // A program that leaks does not clean up: the kept outputs stay, the session too.
  if (variant !== 'keep') {
    if (past.location === 'gpu-buffer') past.dispose();
    await sess.release();
  }
  const warm = times.slice(1).sort((a, b) => a - b);
  console.log(JSON.stringify({
    variant, steps, create_ms: +createMs.toFixed(1), first_run_ms: +times[0].toFixed(1),
    warm_median_ms: warm.length ? +warm[warm.length >> 1].toFixed(2) : null,
    check: +check.toFixed(4),
  }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
