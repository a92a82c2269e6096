// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// A tiny random decoder-only language model in the layout transformers.js loads offline
// (env.localModelPath): written at test time, no hub, no Python.
//
//   node model.js DIR      writes DIR/tiny-gpt2/{config,generation_config,tokenizer,
//                          tokenizer_config}.json and DIR/tiny-gpt2/onnx/model.onnx
//
// model_type "gpt2", vocabulary 512, n_layer 2, n_head 1, n_embd 64 (320 KiB of weights): each token adds one row of 256 B to each
// of the 4 cache tensors (past_key_values.N.key/value, [batch, 1, seq, 64] float32), 1 KiB a
// token. The graph has the real input and output names of an exported decoder with its cache:
//   emb                = Gather(wte[V, D], input_ids[B, S])                    [B, S, D]
//   present.N.key      = Concat(past_key_values.N.key,   Unsqueeze(emb Wk_N, 1), axis 2)
//   present.N.value    = Concat(past_key_values.N.value, Unsqueeze(emb Wv_N, 1), axis 2)
//   logits             = emb Wout + mean over the cache's rows of present.1.value Wout
// so the cache is read each step (a token depends on the whole sequence) and grows by one
// position per token. attention_mask is an input (transformers.js feeds it) used as a scale.
'use strict';
const fs = require('fs');
const path = require('path');
const { pb } = require('../ort/models');
const { int, str, bytes, msg, dim, weight, node, intAttr, FLOAT } = pb;

const INT64 = 7;
const V = 512, D = 64, LAYERS = 2;

// ValueInfoProto of a given element type (models.js's io is float only).
const io = (field, name, type, dims) =>
  msg(field, str(1, name), msg(2, msg(1, int(1, type), msg(2, ...dims.map(dim)))));
// An int64 initializer (Unsqueeze's axes, an input since opset 13).
function ints(name, vals) {
  const raw = Buffer.alloc(vals.length * 8);
  vals.forEach((v, i) => raw.writeBigInt64LE(BigInt(v), 8 * i));
  return msg(5, int(1, vals.length), int(2, INT64), str(8, name), bytes(9, raw));
}
const model = (name, parts) => Buffer.concat([int(1, 8), str(2, 'gpuleak-tests'),
  msg(7, ...parts, str(2, name)), msg(8, str(1, ''), int(2, 17))]);

function decoder() {
  const parts = [
    node('Gather', ['wte', 'input_ids'], ['emb'], [intAttr('axis', 0)]),
    weight('wte', [V, D], 11),
    weight('Wout', [D, V], 12),
    ints('axis1', [1]),
    io(11, 'input_ids', INT64, ['batch', 'seq']),
    io(11, 'attention_mask', INT64, ['batch', 'total']),
  ];
  for (let l = 0; l < LAYERS; l++) {
    for (const kv of ['key', 'value']) {
      const w = `W${kv[0]}${l}`, past = `past_key_values.${l}.${kv}`, pres = `present.${l}.${kv}`;
      parts.push(node('MatMul', ['emb', w], [`${w}_x`]),
        node('Unsqueeze', [`${w}_x`, 'axis1'], [`${w}_u`]),
        node('Concat', [past, `${w}_u`], [pres], [intAttr('axis', 2)]),
        weight(w, [D, D], 20 + 2 * l + (kv === 'value')),
        io(11, past, FLOAT, ['batch', 1, 'past', D]),
        io(12, pres, FLOAT, ['batch', 1, 'total', D]));
    }
  }
  // logits = emb Wout + mean_rows(present.1.value) Wout * mean(attention_mask)
  // ReduceMean's axes are an attribute up to opset 17: AttributeProto {ints 8, type 7 (INTS)}
  const axes = msg(5, str(1, 'axes'), int(8, 2), int(20, 7));
  parts.push(node('ReduceMean', [`present.${LAYERS - 1}.value`], ['ctx'], [axes]),
    node('Squeeze', ['ctx', 'axis1'], ['ctx2']),
    node('Cast', ['attention_mask'], ['maskf'], [msg(5, str(1, 'to'), int(3, FLOAT), int(20, 2))]),
    node('ReduceMean', ['maskf'], ['maskm'], [intAttr('keepdims', 0)]),
    node('Mul', ['ctx2', 'maskm'], ['ctx3']),
    node('Add', ['emb', 'ctx3'], ['h']),
    node('MatMul', ['h', 'Wout'], ['logits']),
    io(12, 'logits', FLOAT, ['batch', 'seq', V]));
  return model('tiny-gpt2', parts);
}

// Words of the vocabulary: specials, then short words (WordLevel on whitespace).
function vocab() {
  const words = ['<unk>', '<|endoftext|>'];
  const syll = ['ka', 'lo', 'mi', 'nu', 're', 'so', 'ti', 've'];
  for (const a of syll) for (const b of syll) for (const c of syll) words.push(a + b + c);
  return Object.fromEntries(words.slice(0, V).map((w, i) => [w, i]));
}

function write(dir) {
  const d = path.join(dir, 'tiny-gpt2');
  fs.mkdirSync(path.join(d, 'onnx'), { recursive: true });
  fs.writeFileSync(path.join(d, 'onnx', 'model.onnx'), decoder());
  const j = (f, o) => fs.writeFileSync(path.join(d, f), JSON.stringify(o, null, 1));
  j('config.json', {
    model_type: 'gpt2', architectures: ['GPT2LMHeadModel'], vocab_size: V, n_embd: D,
    n_layer: LAYERS, n_head: 1, n_positions: 4096, bos_token_id: 1, eos_token_id: 1,
  });
  // No end of sequence a greedy search would meet: every generation runs its max_new_tokens.
  j('generation_config.json', { bos_token_id: 1, eos_token_id: 1, pad_token_id: 0 });
  j('tokenizer_config.json', {
    tokenizer_class: 'PreTrainedTokenizer', bos_token: '<|endoftext|>',
    eos_token: '<|endoftext|>', unk_token: '<unk>', pad_token: '<unk>',
    model_max_length: 4096, clean_up_tokenization_spaces: false,
  });
  j('tokenizer.json', {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [
      { id: 0, content: '<unk>', single_word: false, lstrip: false, rstrip: false,
        normalized: false, special: true },
      { id: 1, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false,
        normalized: false, special: true },
    ],
    normalizer: null, pre_tokenizer: { type: 'Whitespace' }, post_processor: null,
    decoder: null,
    model: { type: 'WordLevel', vocab: vocab(), unk_token: '<unk>' },
  });
  return d;
}

module.exports = { write, vocab, V, D, LAYERS, ROW: LAYERS * 2 * D * 4 };

if (require.main === module) console.log(write(process.argv[2] || '.'));
