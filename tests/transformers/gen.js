// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// transformers.js (npm @huggingface/transformers) generating text with device 'webgpu' on
// ONNX Runtime's WebGPU EP, offline, on the tiny model of model.js: the target of
// tests/test_transformers.py. Each workload counts in JavaScript, not from gpuleak, the bytes
// of device tensors it still holds: its ground truth.
//
//   node gen.js WORKLOAD MODELDIR
//
// Correct programs (0 bytes held at the end):
//   short     3 prompts, generate() of 8 new tokens each
//   prompts   6 prompts, 40 new tokens each: ORT's bucket cache warms up as sequences cross
//             its bucket sizes
//   long      one generate() of 200 new tokens: the KV cache grows with the sequence and is
//             released when the generation ends
//   chat      4 turns of a chat that feeds the previous turn's cache (return_dict_in_generate,
//             past_key_values) into the next, disposed at the end
// Leaks:
//   keep-caches  6 prompts, each generate()'s cache (32 positions) returned, never disposed
//   keep-outputs a scoring loop of its own (model forward on 16 chunks of 16 tokens) that keeps
//                each run's outputs: its present.* stay on the device
//   sessions     a model loaded per request, 4 requests, never disposed
//
// Prints one JSON line at the end: the workload, held_bytes (device tensors still held,
// weights of models never disposed included), held_tensors, runs (session runs: one per token
// in generate(), one per chunk in keep-outputs).
'use strict';
const TJS = process.env.TJS_DIR ||
  '/var/cache/gpuleak/npm/@huggingface/transformers@4.3.2/node_modules/@huggingface/transformers';
const tjs = require(TJS);
const { AutoTokenizer, AutoModelForCausalLM, env } = tjs;

const [workload, dir] = process.argv.slice(2);
env.allowRemoteModels = false;
env.localModelPath = dir;
env.useBrowserCache = false;
env.useFSCache = false;
const NAME = 'tiny-gpt2';
const WEIGHTS = (512 * 64 * 2 + 4 * 64 * 64) * 4; // model.js: wte, Wout, Wk/Wv of 2 layers

const PROMPTS = ['kakaka lololo mimimi', 'nununu rerere', 'sososo tititi vevev kalomi',
  'kalomi nureso', 'tivevk kakalo lolomi mimunu', 'resoti'];

const bytesOf = (t) => t.dims.reduce((a, b) => a * b, 1) * 4;
const held = [];
let runs = 0, extra = 0;

async function load() {
  const model = await AutoModelForCausalLM.from_pretrained(NAME, { device: 'webgpu', dtype: 'fp32' });
  // Count the session's runs: one per token.
  for (const s of Object.values(model.sessions)) {
    const run = s.run.bind(s);
    s.run = (...a) => { runs++; return run(...a); };
  }
  return model;
}

async function generate(model, tok, prompt, n, more = {}) {
  const inputs = tok(prompt);
  return model.generate({ ...inputs, max_new_tokens: n, min_new_tokens: n, do_sample: false,
    ...more });
}

async function main() {
  const tok = await AutoTokenizer.from_pretrained(NAME);
  let model = workload === 'sessions' ? null : await load();
  switch (workload) {
  case 'short':
    for (const p of PROMPTS.slice(0, 3)) await generate(model, tok, p, 8);
    break;
  case 'prompts':
    for (const p of PROMPTS) await generate(model, tok, p, 40);
    break;
  case 'long':
    await generate(model, tok, PROMPTS[0], 200);
    break;
  case 'chat': {
    let cache = null, text = '';
    for (const p of PROMPTS.slice(0, 4)) {
      text += (text ? ' ' : '') + p;
      const out = await generate(model, tok, text, 12,
        { return_dict_in_generate: true, ...(cache ? { past_key_values: cache } : {}) });
      cache = out.past_key_values;
      text = tok.decode(out.sequences[0], { skip_special_tokens: true });
    }
    await cache.dispose();
    break;
  }
  case 'keep-caches':
    for (const p of PROMPTS) {
      // 32 positions in all (prompt + new tokens - 1): 8 KiB a cache tensor.
      const n = 33 - tok(p).input_ids.dims[1];
      const out = await generate(model, tok, p, n, { return_dict_in_generate: true });
      for (const t of Object.values(out.past_key_values)) held.push(t);
    }
    break;
  case 'keep-outputs': {
    // A scoring loop of its own: model forward on 16-token chunks, each run's outputs kept
    // (its present.* stay on the device) where only the logits were wanted.
    const words = Object.keys(require('./model').vocab()).filter((w) => !w.startsWith('<'));
    for (let c = 0; c < 16; c++) {
      const chunk = Array.from({ length: 16 }, (_, i) => words[(c * 16 + i * 7) % words.length]);
      const inputs = tok(chunk.join(' '));
      if (inputs.input_ids.dims[1] !== 16) throw new Error(`chunk of ${inputs.input_ids.dims}`);
      const out = await model({ ...inputs, past_key_values: null });
      for (const k of Object.keys(out)) if (k.startsWith('present')) held.push(out[k]);
    }
    break;
  }
  case 'sessions':
    for (const p of PROMPTS.slice(0, 4)) {
      model = await load(); // the bug: the last request's model is never disposed
      await generate(model, tok, p, 8);
      extra += WEIGHTS;
    }
    model = null;
    break;
  default:
    throw new Error(`workload ${workload}`);
  }
  if (model) await model.dispose();
  const bytes = held.reduce((a, t) => a + bytesOf(t), 0) + extra;
  console.log(JSON.stringify({ workload, held_bytes: bytes, held_tensors: held.length, runs }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
