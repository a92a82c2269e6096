// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The two ONNX models the ONNX Runtime tests run (tests/test_ort.py), written here so that
// the suite needs no model files and no Python onnx package. ONNX is protobuf: this writes
// the few messages a model needs (field numbers from onnx/onnx.proto). Weights are
// deterministic, so a run's output is the same on every machine.
//
//   matmul.onnx  Y[N,N] = MatMul(X[N,N], W[N,N]) + B[N]           (N = 256: 256 KiB tensors)
//   kv.onnx      one decoder step of an LLM, its KV cache fed back:
//                  present[T+1,D] = Concat(past[T,D], MatMul(x[1,D], Wkv[D,D]), axis 0)
//                  logits[1,V]    = MatMul(x[1,D], Wout[D,V])
'use strict';

// ---- protobuf wire format: varints, tags, length-delimited fields ----
function varint(n) {
  let v = BigInt(n);
  const out = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Buffer.from(out);
}
const tag = (field, wire) => varint((field << 3) | wire);
const int = (field, n) => Buffer.concat([tag(field, 0), varint(n)]);
const bytes = (field, b) => Buffer.concat([tag(field, 2), varint(b.length), b]);
const str = (field, s) => bytes(field, Buffer.from(s, 'utf8'));
const msg = (field, ...parts) => bytes(field, Buffer.concat(parts));

// ---- ONNX messages ----
const FLOAT = 1; // TensorProto.DataType
// TypeProto.Tensor.shape's Dimension: dim_value (1) or a symbolic dim_param (2)
const dim = (d) => msg(1, typeof d === 'number' ? int(1, d) : str(2, d));
// ValueInfoProto {name 1, type 2 {tensor_type 1 {elem_type 1, shape 2 {dim 1...}}}};
// as GraphProto.input (11) or .output (12)
const io = (field, name, dims) =>
  msg(field, str(1, name), msg(2, msg(1, int(1, FLOAT), msg(2, ...dims.map(dim)))));
// GraphProto.initializer (5): TensorProto {dims 1, data_type 2, name 8, raw_data 9}
function weight(name, dims, seed) {
  const n = dims.reduce((a, b) => a * b, 1);
  const raw = Buffer.alloc(n * 4);
  for (let i = 0; i < n; i++) raw.writeFloatLE((((i * 2654435761 + seed) >>> 0) % 1000) / 1000 - 0.5, 4 * i);
  return msg(5, ...dims.map((d) => int(1, d)), int(2, FLOAT), str(8, name), bytes(9, raw));
}
// GraphProto.node (1): NodeProto {input 1, output 2, name 3, op_type 4, attribute 5};
// an INT attribute is AttributeProto {name 1, i 3, type 20 = INT (2)}
const node = (op, inputs, outputs, attrs = []) =>
  msg(1, ...inputs.map((s) => str(1, s)), ...outputs.map((s) => str(2, s)),
      str(3, `${op}_${outputs[0]}`), str(4, op), ...attrs);
const intAttr = (name, v) => msg(5, str(1, name), int(3, v), int(20, 2));
// ModelProto {ir_version 1, producer_name 2, graph 7 {..., name 2}, opset_import 8 {version 2}}
const model = (name, parts) => Buffer.concat([int(1, 8), str(2, 'gpuleak-tests'),
  msg(7, ...parts, str(2, name)), msg(8, str(1, ''), int(2, 17))]);

function matmul(n = 256) {
  return model('matmul', [
    node('MatMul', ['X', 'W'], ['XW']),
    node('Add', ['XW', 'B'], ['Y']),
    weight('W', [n, n], 1),
    weight('B', [n], 2),
    io(11, 'X', [n, n]),
    io(12, 'Y', [n, n]),
  ]);
}

function kv(d = 256, v = 128) {
  return model('kv', [
    node('MatMul', ['x', 'Wkv'], ['kv']),
    node('Concat', ['past', 'kv'], ['present'], [intAttr('axis', 0)]),
    node('MatMul', ['x', 'Wout'], ['logits']),
    weight('Wkv', [d, d], 3),
    weight('Wout', [d, v], 4),
    io(11, 'x', [1, d]),
    io(11, 'past', ['T', d]),
    io(12, 'present', ['T1', d]),
    io(12, 'logits', [1, v]),
  ]);
}

// The writer itself, for other models (tests/transformers/model.js).
const pb = { int, str, bytes, msg, dim, weight, node, intAttr, FLOAT };
module.exports = { matmul, kv, pb };
