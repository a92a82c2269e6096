#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The built-in examples behind `make demo`, each run by gpuleak from its first instruction:
#  1. a CUDA decode loop (tests/scenarios/loop.c) on the stand-in CUDA runtime: a 64 MiB KV
#     cache allocated once, activations allocated and async-freed every step, and a sampler
#     that leaks 1 MiB per step;
#  2. the same shape on real Dawn (WebGPU, Null backend; tests/scenarios/wgpu_decode.c): four
#     8 MiB buffers labelled "kv_cache", activations destroyed while their copy may still
#     run (freed when the queue's work-done callback comes), and 1 MiB "logits" leaked per
#     step.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: gpuleak loads BPF programs: run as root (sudo make demo)" >&2
	exit 1
fi
bin=.output/tests/bin
# Steps are the calls of decode_step; the KV caches are declared persistent (retained at the
# end, never a growth leak); the device is given a size so the time to OOM can be projected.
run() {
	# quoted as a shell would need it: the line can be pasted
	echo "\$ sudo ./gpuleak run ${*@Q}" | sed "s/'\([^' ]*\)'/\1/g" >&2
	./gpuleak run "$@"
}
run --step sym:loop:decode_step --interval 250ms --device-mem 2GiB \
	--rule 'persistent site=kv_cache_init' -- $bin/loop 40 1048576
if [ ! -x $bin/wgpu_decode ]; then
	echo "demo: $bin/wgpu_decode not built (scripts/install-deps.sh fetches Dawn)" >&2
	exit 1
fi
echo >&2
run --step sym:wgpu_decode:decode_step --interval 250ms --device-mem 1GiB \
	--rule 'persistent label=kv_cache*' -- $bin/wgpu_decode 40
