#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The built-in example behind `make demo`: a decode loop (tests/scenarios/loop.c) on the
# stand-in CUDA runtime that allocates a 64 MiB KV cache once, allocates and async-frees
# activations every step, and leaks 1 MiB per step in its sampler. gpuleak runs it from the
# first instruction and prints what is still live at exit, by call site.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: gpuleak loads BPF programs: run as root (sudo make demo)" >&2
	exit 1
fi
echo "\$ sudo ./gpuleak run --interval 500ms -- .output/tests/bin/loop 40 1048576" >&2
exec ./gpuleak run --interval 500ms -- .output/tests/bin/loop 40 1048576
